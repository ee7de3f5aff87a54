"""OpenSim external loads (``<ExternalLoads>`` files) and their force data (.mot / .sto).

An ExternalLoads file lists ``ExternalForce``\\ s and names, in ``<datafile>``, the motion file
that holds their data (found, as OpenSim finds it, as given or else beside the ExternalLoads
file). Each force says

* ``applied_to_body``: the body the load acts on;
* ``force_expressed_in_body`` / ``point_expressed_in_body``: the frames its force (and
  torque) and its point are written in (``ground`` by default; OpenSim assumes ground, with
  a warning, for a name the model lacks, and so does :func:`check_external_loads`);
* ``force_identifier``, ``point_identifier``, ``torque_identifier``: the prefixes of its data
  columns. As OpenSim's ``Storage::getColumnIndicesForIdentifier`` does, every column whose
  label starts with the prefix belongs to it, in file order, and there must be exactly three
  (x, y, z). An empty identifier leaves that part out: no point means the body's origin, a
  force or a torque must be given, and a point needs a force.

A force with ``<isDisabled>true`` (3.x) or ``<appliesForce>false`` (4.x) is left out.
Problems raise :class:`~core.errors.InvalidInputError` naming the file and the force.
"""

import os
from dataclasses import dataclass, field, replace

from ..errors import InvalidInputError
from .files import read_input
from .motion import read_motion
from .osim import opensim_document

__all__ = ["ExternalForce", "ExternalLoads", "read_external_loads", "parse_external_loads",
           "check_external_loads"]

GROUND = "ground"


@dataclass(frozen=True)
class ExternalForce:
    """One ``ExternalForce``: its name, the body it acts on, the frames its force and point
    are expressed in, and the column indices (into :attr:`ExternalLoads.data`'s ``names``,
    three each, x y z) of its force, point and torque: None for a part it does not give."""

    name: str
    body: str
    force_frame: str = GROUND
    point_frame: str = GROUND
    force_columns: tuple = None
    point_columns: tuple = None
    torque_columns: tuple = None


@dataclass(frozen=True, eq=False)
class ExternalLoads:
    """The content of an ExternalLoads file: its name, its forces (enabled ones, in file
    order), ``data``: the :class:`~core.io.motion.Motion` of its datafile (forces in N,
    torques in N m, points in m, as OpenSim reads them: never converted), ``datafile``: the
    path read, ``source``: the ExternalLoads file."""

    name: str
    forces: tuple
    data: object
    datafile: str = ""
    source: str = ""
    notes: tuple = field(default=())


def _text(el, tag, default=""):
    child = el.find(tag)
    return default if child is None or child.text is None else child.text.strip()


def _columns(source, force, part, identifier, names):
    if not identifier:
        return None
    found = tuple(j for j, n in enumerate(names) if n.startswith(identifier))
    if len(found) != 3:
        shown = ", ".join(names[j] for j in found) or "none"
        raise InvalidInputError(
            f"{source}: ExternalForce {force!r}: its {part}_identifier {identifier!r} must "
            f"start the labels of exactly 3 columns (x, y, z) of the data file, found "
            f"{len(found)} ({shown}): correct the identifier or the data file's column labels")
    return found


def _datafile(path, datafile):
    if os.path.isabs(datafile) or os.path.isfile(datafile):
        return datafile
    return os.path.join(os.path.dirname(os.path.abspath(path)), datafile)


def parse_external_loads(data, source, datafile=None):
    """Parse the bytes or text of an ExternalLoads file (``source``: its path, beside which a
    relative ``<datafile>`` is found). ``datafile``: a motion file to read instead of the
    one the file names. Returns :class:`ExternalLoads`."""
    root = opensim_document(data, source, "an OpenSim ExternalLoads")
    el = root.find("ExternalLoads")
    if el is None:
        raise InvalidInputError(f"{source}: no <ExternalLoads> element: choose the external "
                                "loads file (the .xml that lists the ExternalForces)")
    if datafile is None:
        named = _text(el, "datafile")
        if not named or named == "Unassigned":
            raise InvalidInputError(f"{source}: <datafile> is empty: name the .mot file that "
                                    "holds the forces")
        datafile = _datafile(source, named)
    motion = read_motion(datafile)
    objects = el.find("objects")
    forces, notes = [], []
    for f in (objects if objects is not None else []):
        name = f.get("name", "")
        if f.tag != "ExternalForce":
            notes.append(f"{f.tag} {name!r} is not an ExternalForce and is not applied")
            continue
        if _text(f, "isDisabled").lower() == "true" or \
                _text(f, "appliesForce", "true").lower() == "false":
            notes.append(f"ExternalForce {name!r} is disabled in the file and is not applied")
            continue
        body = _text(f, "applied_to_body")
        if not body:
            raise InvalidInputError(f"{source}: ExternalForce {name!r} has no applied_to_body: "
                                    "name the body the force acts on")
        ids = {part: _text(f, f"{part}_identifier") for part in ("force", "point", "torque")}
        if not ids["force"] and not ids["torque"]:
            raise InvalidInputError(f"{source}: ExternalForce {name!r} identifies neither a "
                                    "force nor a torque: give force_identifier or "
                                    "torque_identifier")
        if ids["point"] and not ids["force"]:
            raise InvalidInputError(f"{source}: ExternalForce {name!r} gives a point but no "
                                    "force: give force_identifier or remove point_identifier")
        columns = {part: _columns(source, name, part, ident, motion.names)
                   for part, ident in ids.items()}
        forces.append(ExternalForce(
            name=name, body=body.split("/")[-1],
            force_frame=(_text(f, "force_expressed_in_body") or GROUND).split("/")[-1],
            point_frame=(_text(f, "point_expressed_in_body") or GROUND).split("/")[-1],
            force_columns=columns["force"], point_columns=columns["point"],
            torque_columns=columns["torque"]))
    if not forces:
        raise InvalidInputError(f"{source}: no enabled ExternalForce: add one or leave the "
                                "external loads out")
    return ExternalLoads(name=el.get("name", ""), forces=tuple(forces), data=motion,
                         datafile=os.fspath(datafile), source=source, notes=tuple(notes))


def read_external_loads(path, datafile=None):
    """The :class:`ExternalLoads` of the file ``path`` (see :func:`parse_external_loads`)."""
    path = os.fspath(path)
    return parse_external_loads(read_input(path, "external loads"), path, datafile)


def check_external_loads(loads, model):
    """Check ``loads`` against ``model`` (an :class:`~core.io.osim.OsimModel`): every force
    acts on one of its bodies (InvalidInputError naming the force and the body otherwise).
    Returns ``(loads, warnings)``: the loads with a frame the model lacks replaced by ground,
    as OpenSim does, and one warning for each."""
    bodies = set(model.bodies)
    warnings, forces = [], []
    for f in loads.forces:
        if f.body not in bodies or f.body == GROUND:
            raise InvalidInputError(
                f"{loads.source}: ExternalForce {f.name!r} acts on body {f.body!r}, which model "
                f"{model.name!r} does not have (its bodies: "
                f"{', '.join(b for b in model.bodies if b != GROUND)}): correct "
                "applied_to_body or load the model the forces were recorded for")
        frames = {}
        for part in ("force", "point"):
            frame = getattr(f, f"{part}_frame")
            if frame not in bodies:
                warnings.append(f"ExternalForce {f.name!r}: the {part} is expressed in "
                                f"{frame!r}, which the model does not have; ground is assumed")
                frames[f"{part}_frame"] = GROUND
        forces.append(replace(f, **frames))
    if not warnings:
        return loads, []
    return replace(loads, forces=tuple(forces)), warnings
