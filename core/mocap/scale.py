"""OpenSim's ScaleTool without OpenSim: a generic model scaled to a subject.

:func:`read_scale_setup` reads a ScaleTool setup file (OpenSim 2.x to 4.x, e.g. the gait2392
example's ``subject01_Setup_Scale.xml``) into a :class:`ScaleSetup`; :func:`scale_tool` runs
it as ``ScaleTool::run`` does:

1. GenericModelMaker: the generic model (``model_file``) with the markers of
   ``marker_set_file`` put on it (:meth:`~core.io.osim.OsimModel.with_markers`, as
   ``Model::updateMarkerSet``); the model takes the tool's name.
2. ModelScaler (``ModelScaler::processModel``): every body starts at factors ``(1, 1, 1)``;
   the steps of ``scaling_order`` then set them, in order. ``measurements``: each applied
   measurement's factor is the mean over its marker pairs of (the pair's distance in the
   marker trial, averaged over the frames of ``time_range`` that
   :meth:`~core.io.markers.MarkerTrial.frame_range` picks) / (the pair's distance on the
   model in its default pose) (:func:`take_measurement`,
   ``ModelScaler::computeMeasurementScaleFactor``), and is written on the listed axes of
   the listed bodies (``Measurement::applyScaleFactor``). ``manualScale``: each applied
   ``Scale`` of the ScaleSet replaces its body's three factors. :func:`scale_model` then
   scales the model (``Model::scale``) and the scaled model and the factors
   (:func:`write_scale_set`) are written where the setup says.
3. MarkerPlacer: :func:`core.mocap.ik.place_markers` poses the scaled model in the static
   trial and moves its markers onto the trial's; the placed model, its static pose
   (``output_motion_file``) and its markers (``output_marker_file``) are written.

What :func:`scale_model` changes, body by body with the body's factors ``s`` (OpenSim's
``extendScale`` of each component, all with the factors of the body the thing is fixed to):
the centre of mass (``s * com``); the translation of every offset frame (the joints' parent
and child frames, the frames geometry is drawn in) and the location of every marker,
elementwise by ``s``; the scale factors of the body's geometry; a CustomJoint's translation
functions, each multiplied by ``|axis| . s`` of its parent body unless it is the identity
``LinearFunction(1, 0)`` of a translational coordinate (``SpatialTransform::scale``: a
function becomes a ``MultiplierFunction``, a ``MultiplierFunction`` has its scale
multiplied, a constant is multiplied); the radii of ellipsoid joints (parent body) and the
winging-axis origin of a scapulothoracic joint (child body); the function of a coordinate
coupler whose dependent coordinate is a translation (uniform factors only, as OpenSim).
Masses and inertias follow ``Body::scaleInertialProperties``: with
``preserve_mass_distribution`` the masses are kept and the inertias scaled by ``s^2``
(equal factors) or as a cylinder about the axis of the smallest moment (unequal factors);
without it the masses are also multiplied by ``|s_x s_y s_z|``. A subject mass > 0 then
multiplies every mass and inertia by (subject mass / model mass) (``Body::scaleMass``).

Muscles and wrap objects, with the factors ``s`` of the body each is on: a path point's
location (a conditional point's too; its range stays) elementwise by ``s``
(``PathPoint::extendScale``); a moving point's function of each axis k that has a
coordinate multiplied by ``s[k]`` (``MovingPathPoint::extendScale``: a
``MultiplierFunction`` has its scale multiplied, any other function is wrapped in one),
its components without a coordinate left as they are, and the translation of the frame
it is given in by ``s``. A wrap object's translation by ``s`` (``WrapObject::extendScale``);
its sizes along its own axes, with ``a_i`` the wrap frame's axis i in the body (a column of
its rotation) and ``|a_i * s|`` the factor along it: a cylinder's radius by the mean of
those of x and y and its length by that of z (``WrapCylinder``), an ellipsoid's dimension
i by that of axis i (``WrapEllipsoid``), a sphere's radius by the mean of ``s``
(``WrapSphere``; refused if that mean is not positive). Each muscle's optimal fibre length
and tendon slack length are multiplied by (its path's length on the scaled model) / (its
length on the unscaled one), both at the coordinates' default values (``Model::scale``
stores the lengths in the default pose before scaling, ``GeometryPath::extendPreScale``, and
each muscle's ``extendPostScale`` rescales after); a RigidTendonMuscle, which has no such
step, keeps its two lengths. OpenSim assembles the default pose first: a model whose
default values break one of its constraints gets other lengths there.

The model holds each frame as its pose in its body (:mod:`core.io.osim`), so a chain of
offset frames is scaled as one frame, and so is a path point or wrap object given in an
offset frame together with that frame: OpenSim scales each link of the chain in its own
parent frame, which agrees unless a link is rotated and the factors are unequal.

Where OpenSim goes on silently or with a line in its log, this module refuses, naming the
item: a measurement marker missing from the model or from the trial, a time range with no
frame of the trial in it, a step of ``scaling_order`` other than the two. It warns (in the
result's ``warnings``) where OpenSim goes on and the example relies on it: a measurement or
manual scale naming a body the model lacks (gait2392's setup scales the patellas its model
no longer has) is ignored, and a measurement whose markers have a gap (NaN) in the time
range is skipped, as OpenSim skips it.
"""

import dataclasses
import math
import os
import xml.etree.ElementTree as ET

import numpy as np

from ..errors import InvalidInputError
from ..io.fields import parse_float
from ..io.files import atomic_write, check_writable_path, read_input
from ..io.markers import read_marker_set, read_trc
from ..io.motion import read_motion, write_motion
from ..io.osim import GROUND, OsimModel, read_osim
from ..io.osim_export import write_marker_set, write_osim
from ..joints import opensim as osj
from ..muscles import paths as mp
from .ik import IKTaskSet, parse_task_set, place_markers

__all__ = ["Measurement", "ManualScale", "ModelScalerSetup", "MarkerPlacerSetup",
           "ScaleSetup", "MeasurementResult", "ScaleResult", "read_scale_setup",
           "parse_scale_setup", "take_measurement", "scale_factors",
           "scale_model", "scale_set_document", "write_scale_set", "scale_tool",
           "SCALING_STEPS"]

#: the steps ``scaling_order`` may list
SCALING_STEPS = ("measurements", "manualScale")
#: SimTK's default tolerance of ``isNumericallyEqual`` (``SignificantReal``, eps^(7/8)):
#: unequal factors closer than this are equal for the inertia rule
_SIGNIFICANT = np.finfo(float).eps ** 0.875
#: a body lighter than this (kg) has its inertia set to zero (``SimTK::Eps``)
_EPS = np.finfo(float).eps
_UNSET = ("", "Unassigned")
#: muscle classes whose ``extendPostScale`` leaves the fibre and tendon lengths as they are
_UNSCALED_MUSCLES = ("RigidTendonMuscle",)


# ----------------------------------------------------------------------------- setup
@dataclasses.dataclass(frozen=True)
class Measurement:
    """A measurement: marker ``pairs`` ((name, name), ...) and the ``bodies`` it scales,
    ``{body: axes}`` with axes a tuple of 0 (x), 1 (y), 2 (z)."""

    name: str
    pairs: tuple
    bodies: dict
    apply: bool = True


@dataclasses.dataclass(frozen=True)
class ManualScale:
    """A ``Scale`` of the manual ScaleSet: three factors for ``segment`` (a body)."""

    segment: str
    factors: tuple
    apply: bool = True


@dataclasses.dataclass(frozen=True)
class ModelScalerSetup:
    """The ``ModelScaler`` of a setup. File names are absolute (resolved against the setup's
    folder) or "" when unset; ``time_range`` is ``(start, end)`` in s or None."""

    apply: bool = True
    scaling_order: tuple = ()
    measurements: tuple = ()
    manual_scales: tuple = ()
    marker_file: str = ""
    time_range: tuple = None
    preserve_mass_distribution: bool = False
    output_model_file: str = ""
    output_scale_file: str = ""


@dataclasses.dataclass(frozen=True)
class MarkerPlacerSetup:
    """The ``MarkerPlacer`` of a setup: ``tasks`` the :class:`~core.mocap.ik.IKTaskSet`;
    file names as in :class:`ModelScalerSetup`; a negative
    ``max_marker_movement`` (m) sets no limit."""

    apply: bool = True
    tasks: object = None
    marker_file: str = ""
    coordinate_file: str = ""
    time_range: tuple = None
    output_motion_file: str = ""
    output_model_file: str = ""
    output_marker_file: str = ""
    max_marker_movement: float = -1.0


@dataclasses.dataclass(frozen=True)
class ScaleSetup:
    """A ScaleTool setup. ``mass`` (kg; <= 0: the masses are not adjusted to a total);
    ``model_file`` and ``marker_set_file`` of the GenericModelMaker; ``scaler`` and
    ``placer`` are None when the setup has no such section (OpenSim then skips the step);
    ``folder`` is the folder of the setup file, where outputs go."""

    name: str
    mass: float
    model_file: str
    marker_set_file: str = ""
    scaler: ModelScalerSetup = None
    placer: MarkerPlacerSetup = None
    folder: str = ""
    source: str = ""


class _Setup:
    """Parsing state: the file name for messages and the folder names are resolved in."""

    def __init__(self, source, folder):
        self.source, self.folder = source, folder

    def fail(self, where, what):
        raise InvalidInputError(f"{self.source}: {where}: {what}")

    def text(self, el, tag, default=""):
        child = el.find(tag)
        return default if child is None or child.text is None else child.text.strip()

    def numbers(self, el, tag, where, n=None):
        text = self.text(el, tag)
        if not text:
            return None
        try:
            values = tuple(parse_float(v, f"<{tag}>") for v in text.split())
        except InvalidInputError as exc:
            self.fail(where, str(exc))
        if n is not None and len(values) != n:
            self.fail(where, f"<{tag}> must hold {n} numbers, found {len(values)}")
        if not all(math.isfinite(v) for v in values):
            self.fail(where, f"<{tag}> holds a non-finite number; write finite numbers")
        return values

    def number(self, el, tag, where, default):
        values = self.numbers(el, tag, where, 1)
        return default if values is None else values[0]

    def flag(self, el, tag, default):
        text = self.text(el, tag).lower()
        return default if not text else text in ("true", "1", "yes")

    def file(self, el, tag):
        name = self.text(el, tag)
        if name in _UNSET:
            return ""
        return name if os.path.isabs(name) else os.path.join(self.folder, name)

    def time_range(self, el, where):
        t = self.numbers(el, "time_range", where, 2)
        if t is None or t == (-1.0, -1.0):
            return None
        if t[0] > t[1]:
            self.fail(where, f"<time_range> {list(t)} starts after it ends; write the start "
                             "time first")
        return t

    def set_element(self, el, tag, where):
        """The set ``tag`` in ``el`` (inline, or the one in the file its ``file`` attribute
        names, as OpenSim reads a set kept in a file of its own), or None."""
        s = el.find(tag)
        name = "" if s is None else s.get("file", "").strip()
        if name and name not in _UNSET:
            path = name if os.path.isabs(name) else os.path.join(self.folder, name)
            root = _document(path, f"{tag} file")
            s = root if root.tag == tag else root.find(tag)
            if s is None:
                self.fail(where, f"{path} holds no <{tag}>")
        return s

    def objects(self, el, tag, where):
        """The objects of the set ``tag`` in ``el`` (:meth:`set_element`)."""
        s = self.set_element(el, tag, where)
        objects = None if s is None else s.find("objects")
        return list(objects) if objects is not None else []


def _document(path, what):
    data = read_input(path, what)
    try:
        return ET.fromstring(data)
    except ET.ParseError as exc:
        raise InvalidInputError(f"{path}: not a complete XML file ({exc}); the file is "
                                f"truncated or not an OpenSim {what}") from None


def read_scale_setup(path):
    """Read a ScaleTool setup file; returns a :class:`ScaleSetup` (file names resolved
    against the setup's folder, as OpenSim resolves them)."""
    path = os.fspath(path)
    return parse_scale_setup(read_input(path, "ScaleTool setup"), source=path,
                             folder=os.path.dirname(os.path.abspath(path)))


def parse_scale_setup(data, source="<string>", folder=""):
    """Parse the bytes or text of a ScaleTool setup (``source`` names it in messages; file
    names are resolved against ``folder``)."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise InvalidInputError(f"{source}: not a complete XML file ({exc}); the file is "
                                "truncated or not a ScaleTool setup") from None
    r = _Setup(source, folder)
    tool = root if root.tag == "ScaleTool" else root.find("ScaleTool")
    if tool is None:
        r.fail("root", "no <ScaleTool> element: not a ScaleTool setup file")
    gmm = tool.find("GenericModelMaker")
    if gmm is None or not r.file(gmm, "model_file"):
        r.fail("ScaleTool", "no <GenericModelMaker> with a <model_file>: name the generic "
                            "model to scale")
    scaler_el, placer_el = tool.find("ModelScaler"), tool.find("MarkerPlacer")
    return ScaleSetup(name=tool.get("name", "") or "scaled",
                      mass=r.number(tool, "mass", "ScaleTool", -1.0),
                      model_file=r.file(gmm, "model_file"),
                      marker_set_file=r.file(gmm, "marker_set_file"),
                      scaler=None if scaler_el is None else _scaler(r, scaler_el),
                      placer=None if placer_el is None else _placer(r, placer_el),
                      folder=folder, source=source)


def _scaler(r, el):
    where = "ModelScaler"
    order = tuple(r.text(el, "scaling_order").split())
    for step in order:
        if step not in SCALING_STEPS:
            r.fail(where, f"<scaling_order> names {step!r}; its steps are "
                          f"{' and '.join(SCALING_STEPS)}, in the order to apply them")
    measurements = []
    for m in r.objects(el, "MeasurementSet", where):
        if m.tag != "Measurement":
            continue
        mname = m.get("name", "")
        mwhere = f"measurement {mname!r}"
        pairs = []
        for p in r.objects(m, "MarkerPairSet", mwhere):
            names = tuple(r.text(p, "markers").split())
            if len(names) != 2:
                r.fail(mwhere, f"a <MarkerPair> names {list(names)}; it names two markers")
            pairs.append(names)
        bodies = {}
        for b in r.objects(m, "BodyScaleSet", mwhere):
            axes = []
            for a in r.text(b, "axes").split():
                if a.upper() not in "XYZ" or len(a) != 1:
                    r.fail(mwhere, f"body {b.get('name')!r}: axis {a!r} is not X, Y or Z")
                axes.append("XYZ".index(a.upper()))
            bodies[b.get("name", "")] = tuple(axes)
        measurements.append(Measurement(mname, tuple(pairs), bodies,
                                        r.flag(m, "apply", True)))
    manual = []
    for s in r.objects(el, "ScaleSet", where):
        if s.tag != "Scale":
            continue
        segment = r.text(s, "segment")
        factors = r.numbers(s, "scales", f"manual scale of {segment!r}", 3)
        if factors is None:
            r.fail(where, f"the manual scale of {segment!r} has no <scales>")
        manual.append(ManualScale(segment, factors, r.flag(s, "apply", True)))
    return ModelScalerSetup(apply=r.flag(el, "apply", True), scaling_order=order,
                            measurements=tuple(measurements), manual_scales=tuple(manual),
                            marker_file=r.file(el, "marker_file"),
                            time_range=r.time_range(el, where),
                            preserve_mass_distribution=r.flag(
                                el, "preserve_mass_distribution", False),
                            output_model_file=r.file(el, "output_model_file"),
                            output_scale_file=r.file(el, "output_scale_file"))


def _placer(r, el):
    where = "MarkerPlacer"
    tasks = r.set_element(el, "IKTaskSet", where)
    return MarkerPlacerSetup(apply=r.flag(el, "apply", True),
                             tasks=IKTaskSet() if tasks is None else
                             parse_task_set(tasks, f"{r.source}: {where}"),
                             marker_file=r.file(el, "marker_file"),
                             coordinate_file=r.file(el, "coordinate_file"),
                             time_range=r.time_range(el, where),
                             output_motion_file=r.file(el, "output_motion_file"),
                             output_model_file=r.file(el, "output_model_file"),
                             output_marker_file=r.file(el, "output_marker_file"),
                             max_marker_movement=r.number(el, "max_marker_movement", where,
                                                          -1.0))


# ----------------------------------------------------------------------------- measurements
@dataclasses.dataclass(frozen=True)
class MeasurementResult:
    """One measurement taken: per pair ``(name1, name2, model distance, trial distance)``
    (m), and ``factor`` (their mean ratio; NaN when skipped)."""

    name: str
    pairs: tuple
    factor: float


def take_measurement(model, trial, measurement, time_range, q=None):
    """A :class:`MeasurementResult`: each pair's distance on ``model`` at ``q`` (default
    pose when None) and averaged over the frames of ``time_range`` in ``trial`` (a
    :class:`~core.io.markers.MarkerTrial`), their ratios' mean the factor
    (``ModelScaler::computeMeasurementScaleFactor``). A marker missing from the model or the
    trial raises InvalidInputError naming it; a gap (NaN) in the range makes the factor NaN
    (the caller skips the measurement)."""
    if not measurement.pairs:
        return MeasurementResult(measurement.name, (), math.nan)
    first, last = trial.frame_range(*time_range)
    markers = model.markers
    names = sorted({n for pair in measurement.pairs for n in pair})
    for n in names:
        if n not in markers:
            raise InvalidInputError(
                f"measurement {measurement.name!r}: marker {n!r} is not on model "
                f"{model.name!r}; add it to the marker set or correct the measurement")
        if n not in trial.names:
            raise InvalidInputError(
                f"measurement {measurement.name!r}: marker {n!r} is not in the marker trial "
                f"{trial.source!r}; correct the measurement or use a trial that has it")
    world = dict(zip(names, model.marker_positions(q, names=names)))
    pairs, total = [], 0.0
    for a, b in measurement.pairs:
        on_model = float(np.linalg.norm(world[a] - world[b]))
        d = trial.positions[first:last + 1, trial.index(b)] - \
            trial.positions[first:last + 1, trial.index(a)]
        in_trial = float(np.sum(np.linalg.norm(d, axis=1))) / (last - first + 1)
        pairs.append((a, b, on_model, in_trial))
        total += in_trial / on_model
    return MeasurementResult(measurement.name, tuple(pairs), total / len(pairs))


def _missing_bodies(model, bodies, where):
    """Warnings for the ``bodies`` ``where`` names that ``model`` lacks (OpenSim passes
    over them: gait2392's own setup scales the patellas the model no longer has)."""
    return [f"{where} scales body {b!r}, which model {model.name!r} does not have: ignored"
            for b in bodies if b not in model.bodies]


def scale_factors(model, scaler, trial=None):
    """``(factors, measurements, warnings)``: the factors ``{body: (3,)}`` of every body of
    ``model`` (ground included) after the steps of ``scaler.scaling_order``, the
    :class:`MeasurementResult` of each applied measurement, and warnings (measurements
    skipped for gaps in the trial). ``trial``: the marker trial the measurements use."""
    factors = {b: np.ones(3) for b in model.bodies}
    results, warnings = [], []
    for step in scaler.scaling_order:
        if step == "measurements":
            for m in scaler.measurements:
                if not m.apply:
                    continue
                if trial is None:
                    raise InvalidInputError(
                        f"measurement {m.name!r} needs a marker trial, and the setup's "
                        "ModelScaler names no <marker_file>: name the static trial")
                if scaler.time_range is None:
                    raise InvalidInputError("the ModelScaler has no <time_range>: give the "
                                            "times of the trial to average")
                result = take_measurement(model, trial, m, scaler.time_range)
                results.append(result)
                if math.isnan(result.factor):
                    warnings.append(f"measurement {m.name!r} was not used: its markers "
                                    f"{list(m.pairs)} have gaps in the time range "
                                    f"{list(scaler.time_range)} s (or it has no marker pairs)")
                    continue
                warnings += _missing_bodies(model, m.bodies, f"measurement {m.name!r}")
                for body, axes in m.bodies.items():
                    if body in model.bodies:
                        factors[body][list(axes)] = result.factor
        else:
            for s in scaler.manual_scales:
                if s.apply:
                    warnings += _missing_bodies(model, [s.segment], "a manual scale")
                    if s.segment in model.bodies:
                        factors[s.segment] = np.array(s.factors, dtype=float)
    return factors, tuple(results), warnings


# ----------------------------------------------------------------------------- model
def _scaled_translation(T, s):
    T = T.copy()
    T[:3, 3] = T[:3, 3] * s
    return T


def _is_identity(f):
    return type(f) is osj.LinearFunction and f.slope == 1.0 and f.intercept == 0.0


def _multiplied(f, k):
    """``f`` multiplied by ``k`` as ``SpatialTransform::scale`` does it (and
    ``MovingPathPoint::extendScale``, but for a constant, which it wraps in a
    ``MultiplierFunction``: the same values)."""
    if type(f) is osj.Constant:
        return osj.Constant(f.c * k)
    if type(f) is osj.MultiplierFunction:
        return osj.MultiplierFunction(f.function, f.scale * k)
    return osj.MultiplierFunction(f, k)


def _scaled_joint(j, s_parent, s_child):
    """The core joint of OsimJoint ``j`` and its spec, scaled as OpenSim's joint of that
    kind scales itself."""
    J, spec = j.joint, j.spec
    if j.kind == "CustomJoint":
        functions = list(J.functions)
        for k in range(3, 6):
            if not _is_identity(functions[k]):
                functions[k] = _multiplied(functions[k],
                                           float(np.abs(J.raw_axes[k]) @ s_parent))
        J = osj.CustomJoint(J.raw_axes, functions, J.arguments, J.nq, lower=J.lower,
                            upper=J.upper, neutral=J.neutral())
        spec = dict(spec, functions=[f.to_dict() for f in functions])
    elif j.kind == "EllipsoidJoint":
        J = osj.EllipsoidJoint(J.radii * s_parent, lower=J.lower, upper=J.upper,
                               neutral=J.neutral())
        spec = dict(spec, radii=J.radii.tolist())
    elif j.kind == "ScapulothoracicJoint":
        J = osj.ScapulothoracicJoint(J.radii * s_parent, J.winging_origin * s_child[:2],
                                     J.winging_direction, lower=J.lower, upper=J.upper,
                                     neutral=J.neutral())
        spec = dict(spec, radii=J.radii.tolist(), winging_origin=J.winging_origin.tolist())
    return J, spec


def _scaled_inertia(inertia, mass, s, scale_mass):
    """``Body::scaleInertialProperties``: ``(mass, inertia (3, 3))`` of a body of ``mass``
    and ``inertia`` scaled by factors ``s`` (3,); ``scale_mass``: the mass is multiplied by
    ``|s_x s_y s_z|``, else kept."""
    I = np.array(inertia, dtype=float)
    k = abs(s[0] * s[1] * s[2])
    new_mass = mass * k if scale_mass else mass
    if new_mass <= _EPS:
        return new_mass, np.zeros((3, 3))
    if _numerically_equal(s[0], s[1]) and _numerically_equal(s[1], s[2]):
        if scale_mass:
            I = I * k
        return new_mass, I * (s[0] * s[0])
    # unequal factors: the body as a cylinder about the axis of its smallest moment
    d = np.diag(I)
    axis = (0 if d[0] <= d[2] else 2) if d[0] <= d[1] else (1 if d[1] <= d[2] else 2)
    term = 2.0 * I[axis, axis] / mass
    radius = math.sqrt(term) if term >= 0.0 else 0.0
    other = 1 if axis == 0 else 0
    term = 12.0 * (I[other, other] - 0.25 * mass * radius * radius) / mass
    length = (math.sqrt(term) if term >= 0.0 else 0.0) * s[axis]
    a, b = [i for i in range(3) if i != axis]
    rad_sqr = radius * s[a] * radius * s[b]
    out = I.copy()
    for i in range(3):
        out[i, i] = 0.5 * new_mass * rad_sqr if i == axis else \
            new_mass * ((length * length / 12.0) + 0.25 * rad_sqr)
    for i in range(3):
        for j in range(3):
            if i != j:
                out[i, j] = I[i, j] * (s[i] * s[j])
                if scale_mass:
                    out[i, j] *= k
    return new_mass, out


def _numerically_equal(a, b):
    """SimTK's ``isNumericallyEqual`` at its default tolerance."""
    return abs(a - b) <= max(abs(a), abs(b), 1.0) * _SIGNIFICANT


def scale_model(model, factors, *, preserve_mass_distribution=False, mass=-1.0, name=None):
    """``model`` scaled by ``factors`` ``{body: (3,)}`` as ``Model::scale`` does (module
    docstring), its muscles and wrap objects included; bodies not named keep their size.
    ``mass`` > 0: the total mass the scaled model has. Returns a new
    :class:`~core.io.osim.OsimModel` (named ``name`` if given)."""
    s = {b: np.ones(3) for b in model.bodies}
    for body, f in factors.items():
        if body not in model.bodies:
            raise InvalidInputError(f"scale factors name body {body!r}, which model "
                                    f"{model.name!r} does not have; its bodies are "
                                    f"{list(model.bodies)}: correct the name")
        f = np.asarray(f, dtype=float)
        if f.shape != (3,) or not np.all(np.isfinite(f)) or np.any(f == 0.0):
            raise InvalidInputError(f"the scale factors of body {body!r} must be 3 finite "
                                    f"non-zero numbers, got {f.tolist()!r}")
        s[body] = f
    bodies = {}
    for b in model.bodies.values():
        geometry = [dataclasses.replace(g, pose=_scaled_translation(g.pose, s[b.name]),
                                        scale=g.scale * s[b.name]) for g in b.geometry]
        body_mass, inertia = (b.mass, b.inertia) if b.name == GROUND else _scaled_inertia(
            b.inertia, b.mass, s[b.name], not preserve_mass_distribution)
        bodies[b.name] = dataclasses.replace(b, com=b.com * s[b.name], inertia=inertia,
                                             mass=body_mass, geometry=geometry)
    if mass > 0.0:
        total = sum(b.mass for n, b in bodies.items() if n != GROUND)
        if total > 0.0:
            k = mass / total
            for n, b in bodies.items():
                if n != GROUND:
                    bodies[n] = dataclasses.replace(b, mass=b.mass * k, inertia=k * b.inertia)
    joints = []
    for j in model.joints:
        J, spec = _scaled_joint(j, s[j.parent], s[j.child])
        joints.append(dataclasses.replace(
            j, parent_offset=_scaled_translation(j.parent_offset, s[j.parent]),
            child_offset=_scaled_translation(j.child_offset, s[j.child]), joint=J, spec=spec))
    couplers = [_scaled_coupler(model, c, s) for c in model.couplers]
    markers = {n: dataclasses.replace(m, location=m.location * s[m.body])
               for n, m in model.markers.items()}
    wrap_objects = {n: _scaled_wrap_object(w, s[w.body]) for n, w in model.wrap_objects.items()}
    muscles = {n: dataclasses.replace(m, path=mp.GeometryPath(
        [_scaled_point(p, s[p.body]) for p in m.path.points], list(m.path.wraps)))
        for n, m in model.muscles.items()}
    scaled = dataclasses.replace(model, name=model.name if name is None else name, path="",
                                 bodies=bodies, joints=joints, couplers=couplers,
                                 markers=markers, muscles=muscles, wrap_objects=wrap_objects,
                                 skipped=list(model.skipped), notes=list(model.notes))
    rescaled = [n for n, m in model.muscles.items() if m.kind not in _UNSCALED_MUSCLES]
    if rescaled:
        before, after = mp.path_kinematics(model), mp.path_kinematics(scaled)
        for n in rescaled:
            length = mp.path_length(before, None, model.muscles[n].path, f"muscle {n!r}")
            if length > 0.0:
                k = mp.path_length(after, None, scaled.muscles[n].path, f"muscle {n!r}") \
                    / length
                m = scaled.muscles[n]
                scaled.muscles[n] = dataclasses.replace(
                    m, optimal_fiber_length=m.optimal_fiber_length * k,
                    tendon_slack_length=m.tendon_slack_length * k)
    return scaled


def _scaled_point(point, s):
    """``PathPoint::extendScale`` (a conditional point's too) and
    ``MovingPathPoint::extendScale``."""
    if not isinstance(point, mp.MovingPathPoint):
        return dataclasses.replace(point, location=point.location * s)
    functions = tuple(None if item is None else (item[0], _multiplied(item[1], float(s[k])))
                      for k, item in enumerate(point.functions))
    return dataclasses.replace(point, functions=functions,
                               frame=_scaled_translation(point.frame, s))


def _scaled_wrap_object(w, s):
    """``WrapObject::extendScale`` and its subclasses' (module docstring)."""
    along = np.linalg.norm(w.pose[:3, :3] * s[:, None], axis=0)
    pose = _scaled_translation(w.pose, s)
    if w.kind == "WrapCylinder":
        return dataclasses.replace(w, pose=pose, radius=w.radius * ((along[0] + along[1]) * 0.5),
                                   length=w.length * along[2])
    if w.kind == "WrapEllipsoid":
        return dataclasses.replace(w, pose=pose, radii=w.radii * along)
    mean = s.sum() / 3.0
    if not mean > 0.0:
        raise InvalidInputError(
            f"wrap sphere {w.name!r} on body {w.body!r} would get a radius of {mean:g} times "
            f"its own: the body's scale factors {s.tolist()} must have a positive mean")
    return dataclasses.replace(w, pose=pose, radius=w.radius * mean)


def _scaled_coupler(model, c, s):
    """``CoordinateCouplerConstraint::extendScale``: a coupler moving a translation scales
    its function by the (uniform) factor of the parent body of the dependent's joint."""
    if model.is_rotational(c.dependent) or model.coordinates[c.dependent].motion_type \
            == "coupled":
        return c
    f = s[model.joint(model.coordinates[c.dependent].joint).parent]
    if f[0] == 1.0 and f[1] == 1.0 and f[2] == 1.0:
        return c
    if not (f[0] == f[1] == f[2]):
        raise InvalidInputError(
            f"coordinate coupler {c.name!r} moves translation {c.dependent!r} of a body scaled "
            f"unequally ({f.tolist()}), which OpenSim does not scale either: scale that body "
            "by equal factors")
    function = osj.MultiplierFunction(c.function, float(f[0]))
    return dataclasses.replace(c, function=function, spec=function.to_dict())


# ----------------------------------------------------------------------------- scale set
def scale_set_document(model, factors):
    """The text of the ScaleSet file OpenSim's ModelScaler writes (``output_scale_file``):
    a ``Scale`` for ground and each body of ``model`` in order with its factors (1 for a
    body ``factors`` does not name), applied. OpenSim also lists each offset frame (with
    the factors of a manual scale naming it, which no scaling reads) and writes 6
    significant digits; the numbers here are exact (shortest round-trip decimals), so the
    file given back as manual scales reproduces the model."""
    root = ET.Element("OpenSimDocument", Version="40000")
    scale_set = ET.SubElement(root, "ScaleSet", name="ScaleSet")
    objects = ET.SubElement(scale_set, "objects")
    for body in model.bodies:
        f = np.asarray(factors.get(body, np.ones(3)), dtype=float)
        el = ET.SubElement(objects, "Scale")
        ET.SubElement(el, "scales").text = "".join(f" {float(v)!r}" for v in f)
        ET.SubElement(el, "segment").text = body
        ET.SubElement(el, "apply").text = "true"
    ET.SubElement(scale_set, "groups")
    ET.indent(root, space="\t")
    return '<?xml version="1.0" encoding="UTF-8" ?>\n' + ET.tostring(root, encoding="unicode") \
        + "\n"


def write_scale_set(path, model, factors):
    """Write :func:`scale_set_document` to ``path`` (atomically)."""
    atomic_write(path, scale_set_document(model, factors))


# ----------------------------------------------------------------------------- the tool
@dataclasses.dataclass(frozen=True, eq=False)
class ScaleResult:
    """What :func:`scale_tool` did. ``status``: ``"done"`` or ``"cancelled"`` (then nothing
    was written and the models are None). ``factors``: ``{body: (3,)}``; ``scaled_model``:
    the model after the ModelScaler; ``model``: the final model (markers placed when the
    MarkerPlacer ran, else the scaled model); ``measurements``: the
    :class:`MeasurementResult`\\ s; ``placement``: the
    :class:`~core.mocap.ik.MarkerPlacement` or None; ``warnings``: what was skipped, in
    words; ``written``: the files written."""

    status: str
    factors: dict
    scaled_model: OsimModel = None
    model: OsimModel = None
    measurements: tuple = ()
    placement: object = None
    warnings: tuple = ()
    written: tuple = ()


def _cancelled(factors=None, measurements=(), warnings=()):
    return ScaleResult("cancelled", factors or {}, measurements=measurements,
                       warnings=tuple(warnings))


def scale_tool(setup, *, write=True, progress=None):
    """Run a ScaleTool setup (a :class:`ScaleSetup` or the path of its file) as OpenSim's
    ``ScaleTool::run`` does (module docstring); returns a :class:`ScaleResult`.

    write: write the files the setup names (scaled model, scale set, placed model, static
        pose motion, marker set), each atomically, only after every step has succeeded and
        every file's folder is found.
    progress: ``progress(fraction) -> bool`` called between the steps; False cancels.
    """
    if not isinstance(setup, ScaleSetup):
        setup = read_scale_setup(setup)
    warnings = []
    model = read_osim(setup.model_file)
    if setup.marker_set_file:
        model = model.with_markers(read_marker_set(setup.marker_set_file))
    model = dataclasses.replace(model, name=setup.name)
    scaler, placer = setup.scaler, setup.placer
    factors, measurements = {b: np.ones(3) for b in model.bodies}, ()
    writes = []
    if scaler is not None and scaler.apply:
        trial = read_trc(scaler.marker_file) if scaler.marker_file else None
        factors, measurements, more = scale_factors(model, scaler, trial)
        warnings += more
        model = scale_model(model, factors,
                            preserve_mass_distribution=scaler.preserve_mass_distribution,
                            mass=setup.mass)
        if scaler.output_model_file:
            writes.append((write_osim, scaler.output_model_file, model))
        if scaler.output_scale_file:
            writes.append((write_scale_set, scaler.output_scale_file, model, factors))
    else:
        warnings.append("the setup's ModelScaler is off or missing: the model is not scaled")
    scaled = model
    if progress is not None and progress(0.5) is False:
        return _cancelled(factors, measurements, warnings)
    placement = None
    if placer is not None and placer.apply:
        placement = _place(model, placer, writes)
        warnings += list(placement.warnings)
        model = placement.model
    else:
        warnings.append("the setup's MarkerPlacer is off or missing: no markers were moved")
    if progress is not None and progress(1.0) is False:
        return _cancelled(factors, measurements, warnings)
    written = []
    if write:
        for _, path, *_ in writes:        # every folder checked before the first file
            check_writable_path(path)
        for writer, path, *args in writes:
            writer(path, *args)
            written.append(path)
    return ScaleResult("done", factors, scaled, model, measurements, placement,
                       tuple(warnings), tuple(written))


def _place(model, placer, writes):
    """``MarkerPlacer::processModel``: the placement, with its files added to ``writes``."""
    if not placer.marker_file:
        raise InvalidInputError("the setup's MarkerPlacer names no <marker_file>: name the "
                                "static trial to place the markers in")
    placement = place_markers(
        model, read_trc(placer.marker_file), placer.tasks, time_range=placer.time_range,
        coordinate_values=read_motion(placer.coordinate_file) if placer.coordinate_file
        else None, max_marker_movement=placer.max_marker_movement)
    placed = placement.model
    if placer.output_model_file:
        writes.append((write_osim, placer.output_model_file, placed))
    if placer.output_marker_file:
        writes.append((write_marker_set, placer.output_marker_file, placed.markers))
    if placer.output_motion_file:
        # the static pose as OpenSim's StatesReporter writes it: each coordinate's value
        # and speed by state path (a model without muscles has no other states)
        labels, row = [], []
        for (name, c), value in zip(placed.coordinates.items(), placement.q):
            labels += [f"/jointset/{c.joint}/{name}/value", f"/jointset/{c.joint}/{name}/speed"]
            row += [float(value), 0.0]
        writes.append((write_motion, placer.output_motion_file, labels,
                       [placement.time_range[0]], [row], False, "static pose"))
    return placement
