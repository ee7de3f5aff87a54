"""OpenSim model files (.osim) read without OpenSim: bodies, joints, coordinates, geometry.

:func:`read_osim` parses an OpenSim 4.x model file (``<OpenSimDocument Version="4xxxx">``,
bodies in a ``BodySet``, joints in a ``JointSet`` with owned ``PhysicalOffsetFrame``\\ s) or a
3.3 file (``Version="3xxxx"``: each body owns its joint, whose frames are given as
``location_in_parent``/``orientation_in_parent`` and ``location``/``orientation``) with the
standard library's XML parser into an :class:`OsimModel`. Nothing of OpenSim is needed at run
time; the tests compare every shipped model with OpenSim 4.6.

Frames, as in OpenSim: a joint connects the *parent frame* F (a frame fixed in the parent body
B_p, pose ``P`` in B_p) to the *child frame* M (fixed in the child body B_c, pose ``C`` in
B_c) and moves M relative to F by ``X_FM(q)``, so that

    T_ground_Bc = T_ground_Bp  P  X_FM(q)  C^-1.

``X_FM`` is a core joint (:mod:`core.joints`): WeldJoint -> Fixed, PinJoint -> Revolute
about z, SliderJoint -> Prismatic along x, UniversalJoint -> Universal (x then y),
PlanarJoint, BallJoint, GimbalJoint, FreeJoint and CustomJoint ->
:class:`~core.joints.opensim.CustomJoint` (their coordinates are OpenSim's: body-fixed
X-Y-Z angles, translations in F), EllipsoidJoint and ScapulothoracicJoint -> their classes in
:mod:`core.joints.opensim`. Offsets are OpenSim's ``translation`` plus ``orientation`` as
body-fixed X-Y-Z angles.

Markers (the model's MarkerSet) are read into :attr:`OsimModel.markers`
(:class:`core.io.markers.Marker`: body and location in the body frame, a marker on an offset
frame carried into its body). What is not a body, joint, coordinate, coordinate coupler,
Muscles of a 4.x file (the classes of
:data:`core.muscles.paths.MUSCLE_KINDS` in the ForceSet: their GeometryPath, Hill parameters and
other properties) are read into :attr:`OsimModel.muscles`, and the bodies' wrap objects
(WrapCylinder, WrapSphere, WrapEllipsoid, WrapTorus) into :attr:`OsimModel.wrap_objects`.
What is not a body, joint, coordinate, coordinate coupler,
marker, geometry, muscle or wrap object (other forces, contact geometry, controllers, probes,
other constraints; a 3.x file's muscles and wrap objects) is
listed by name in :attr:`OsimModel.skipped`, never silently dropped. Anything the reader
cannot represent (an unknown joint type or function, a coordinate referenced but missing, a
truncated file) raises :class:`~core.errors.InvalidInputError` naming the element, before
anything is returned.
"""

import dataclasses
import math
import os
import posixpath
import xml.etree.ElementTree as ET

import numpy as np
from scipy.spatial.transform import Rotation

from ..errors import InvalidInputError
from ..lie import se3
from .fields import parse_count, parse_float
from .files import read_input

__all__ = ["OsimModel", "OsimBody", "OsimJoint", "OsimCoordinate", "OsimGeometry",
           "OsimCoupler", "read_osim", "parse_osim", "offset_pose", "pose_to_offset",
           "find_mesh_file", "motion_coordinates", "opensim_document", "JOINT_KINDS", "FUNCTION_KINDS",
           "MAX_MAGNITUDE", "MAX_FUNCTION_NESTING", "MAX_NAME_BYTES"]

GROUND = "ground"

#: the largest magnitude of a number in a model (masses in kg, lengths in m, function values):
#: far beyond any body, and small enough that the kinematics and dynamics cannot overflow
MAX_MAGNITUDE = 1e15
#: how deep functions may nest (a MultiplierFunction of a MultiplierFunction of ...)
MAX_FUNCTION_NESTING = 32
#: the longest coordinate name, in UTF-8 bytes: a coordinate becomes a Blender custom
#: property, whose names stop at 63 bytes
MAX_NAME_BYTES = 63

#: OpenSim joint classes the reader maps to core joints
JOINT_KINDS = ("WeldJoint", "PinJoint", "SliderJoint", "UniversalJoint", "PlanarJoint",
               "BallJoint", "GimbalJoint", "FreeJoint", "EllipsoidJoint",
               "ScapulothoracicJoint", "CustomJoint")

#: OpenSim function classes the reader accepts on a TransformAxis or a coupler
FUNCTION_KINDS = ("Constant", "LinearFunction", "SimmSpline", "NaturalCubicSpline",
                  "PolynomialFunction", "MultiplierFunction", "PiecewiseLinearFunction",
                  "MultivariatePolynomialFunction")

#: analytic geometry OpenSim draws, kept as placeholders with their sizes
_PRIMITIVES = {"Sphere": ("radius",), "Cylinder": ("radius", "half_height"),
               "Brick": ("half_lengths",), "Ellipsoid": ("radii",),
               "Cone": ("origin", "direction", "base_radius", "height")}

#: model-level sets that hold nothing the reader imports; their objects are listed as skipped
_SKIPPED_SETS = ("ContactGeometrySet", "ControllerSet", "ProbeSet", "ComponentSet")


# ----------------------------------------------------------------------------- records
@dataclasses.dataclass
class OsimGeometry:
    """Something OpenSim draws on a body: a mesh file or an analytic shape.

    kind: ``"Mesh"`` or a primitive (``"Sphere"``, ``"Cylinder"``, ``"Brick"``,
    ``"Ellipsoid"``, ``"Cone"``); mesh_file: the file name as written (Mesh only);
    dimensions: the primitive's sizes by OpenSim property name (m); scale: (3,) scale
    factors; pose: (4, 4) the geometry's frame in the body; color: (3,) 0..1; opacity;
    visible; name.
    """

    name: str
    kind: str
    pose: np.ndarray
    scale: np.ndarray
    mesh_file: str = ""
    dimensions: dict = dataclasses.field(default_factory=dict)
    color: tuple = (1.0, 1.0, 1.0)
    opacity: float = 1.0
    visible: bool = True


@dataclasses.dataclass
class OsimBody:
    """A rigid body: mass (kg), com (3,) in the body frame (m), inertia (3, 3) about the
    centre of mass in body axes (kg m^2), and its geometry. ``ground`` has mass 0."""

    name: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    geometry: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class OsimCoordinate:
    """A generalized coordinate: default value and speed, range (lo, hi), the clamped
    (range enforced) and locked flags, and motion type (``"rotational"``, ``"translational"``
    or ``"coupled"``) which decides whether a motion file's degrees apply to it."""

    name: str
    joint: str
    default: float = 0.0
    default_speed: float = 0.0
    range: tuple = (-math.inf, math.inf)
    clamped: bool = False
    locked: bool = False
    motion_type: str = "rotational"


@dataclasses.dataclass
class OsimJoint:
    """A joint: OpenSim class ``kind``, parent and child body names, ``parent_offset``
    (4, 4) = P (F in the parent body), ``child_offset`` (4, 4) = C (M in the child body),
    its coordinate names in joint order, and ``joint``: the core joint giving X_FM(q).

    ``spec`` is the plain-data description the joint was built from (axes and function
    dicts for CustomJoint, radii for the ellipsoid joints), kept for writing the model back.
    """

    name: str
    kind: str
    parent: str
    child: str
    parent_offset: np.ndarray
    child_offset: np.ndarray
    coordinates: tuple
    joint: object
    spec: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class OsimCoupler:
    """A CoordinateCouplerConstraint: ``dependent = f(independent...)`` (one independent
    coordinate; ``function`` a core.joints.opensim function), enforced or not."""

    name: str
    dependent: str
    independent: tuple
    function: object
    spec: dict
    enforced: bool = True


@dataclasses.dataclass
class OsimModel:
    """An OpenSim model as read from a file (see the module docstring for the frames).

    Attributes: name, path (the file read, or ""), version (the document's Version number),
    gravity (3,), bodies (dict name -> OsimBody, ground first), joints (list of OsimJoint,
    parents before children), coordinates (dict name -> OsimCoordinate, in q order),
    couplers (list of OsimCoupler), skipped (list of ``"<tag> <name>"`` strings: what the
    file holds that the reader does not import), notes (list of remarks on what was
    imported as given, e.g. non-physical inertias), markers (dict name ->
    :class:`core.io.markers.Marker`), muscles (dict name -> :class:`core.muscles.paths.Muscle`)
    and wrap_objects (dict name -> :class:`core.muscles.wrap.WrapObject`).
    """

    name: str
    path: str
    version: int
    gravity: np.ndarray
    bodies: dict
    joints: list
    coordinates: dict
    couplers: list
    skipped: list
    notes: list
    markers: dict = dataclasses.field(default_factory=dict)
    muscles: dict = dataclasses.field(default_factory=dict)
    wrap_objects: dict = dataclasses.field(default_factory=dict)

    # ------------------------------------------------------------------ coordinates
    @property
    def coordinate_names(self):
        """Coordinate names in q order (joint by joint, parents first)."""
        return tuple(self.coordinates)

    @property
    def nq(self):
        return len(self.coordinates)

    def default_q(self):
        """The coordinates' default values, ``(nq,)``."""
        return np.array([c.default for c in self.coordinates.values()], dtype=float)

    def q_from(self, values):
        """``(nq,)`` q from a mapping name -> value (missing names keep their default) or
        from a sequence of nq values; unknown names raise."""
        q = self.default_q()
        if isinstance(values, dict):
            index = {n: i for i, n in enumerate(self.coordinates)}
            for name, value in values.items():
                if name not in index:
                    raise InvalidInputError(
                        f"model {self.name!r} has no coordinate {name!r}; its coordinates "
                        f"are {list(self.coordinates)}")
                q[index[name]] = float(value)
        else:
            q = np.asarray(values, dtype=float)
            if q.shape != (self.nq,):
                raise InvalidInputError(f"model {self.name!r}: q must have shape "
                                        f"({self.nq},), got {q.shape}")
        if not np.all(np.isfinite(q)):
            raise InvalidInputError(f"model {self.name!r}: coordinates must be finite")
        return q

    def is_rotational(self, name):
        """True if coordinate ``name`` is an angle (a motion file's degrees apply to it)."""
        return self.coordinates[name].motion_type == "rotational"

    def joint_slices(self):
        """``{joint name: slice of q}``."""
        out, start = {}, 0
        for j in self.joints:
            out[j.name] = slice(start, start + len(j.coordinates))
            start += len(j.coordinates)
        return out

    # ------------------------------------------------------------------ kinematics
    def body_poses(self, q=None):
        """Pose of every body frame in ground, ``{name: (4, 4)}`` (ground is the identity),
        at ``q`` (anything :meth:`q_from` takes; default values when None)."""
        q = self.default_q() if q is None else self.q_from(q)
        poses = {GROUND: np.eye(4)}
        for j, sl in zip(self.joints, self.joint_slices().values()):
            X = j.joint.transform(q[sl]) if j.joint.nq else j.joint.transform(np.zeros(0))
            poses[j.child] = poses[j.parent] @ j.parent_offset @ X @ se3.inv(j.child_offset)
        return poses

    def body_poses_along(self, qs, names=None):
        """Poses of body frames in ground at every row of ``qs (N, nq)``, ``{name: (N, 4,
        4)}``: those in ``names`` (default all), each joint evaluated once for all rows."""
        qs = np.asarray(qs, dtype=float)
        if qs.ndim != 2 or qs.shape[1] != self.nq or not np.all(np.isfinite(qs)):
            raise InvalidInputError(f"model {self.name!r}: qs must be finite with shape "
                                    f"(N, {self.nq}), got {qs.shape}")
        wanted = set(self.bodies if names is None else names)
        needed, parent = set(), {j.child: j.parent for j in self.joints}
        for name in wanted:
            while name in parent and name not in needed:
                needed.add(name)
                name = parent[name]
        poses = {GROUND: np.broadcast_to(np.eye(4), (len(qs), 4, 4))}
        for j, sl in zip(self.joints, self.joint_slices().values()):
            if j.child in needed:
                X = j.joint.transforms(qs[:, sl])
                poses[j.child] = poses[j.parent] @ j.parent_offset @ X @ se3.inv(j.child_offset)
        return {n: poses[n] for n in wanted}

    def pose_in_parent(self, joint, q=None):
        """Pose of the joint's child body in its parent body, ``(4, 4)``."""
        j = self.joint(joint)
        q = self.default_q() if q is None else self.q_from(q)
        sl = self.joint_slices()[j.name]
        return j.parent_offset @ j.joint.transform(q[sl]) @ se3.inv(j.child_offset)

    def joint(self, name):
        """The :class:`OsimJoint` called ``name``."""
        for j in self.joints:
            if j.name == name:
                return j
        raise InvalidInputError(f"model {self.name!r} has no joint {name!r}; its joints are "
                                f"{[j.name for j in self.joints]}")

    # ------------------------------------------------------------------ markers
    def marker_positions(self, q=None, names=None):
        """World positions ``(M, 3)`` (m) of the markers ``names`` (default: all, in
        :attr:`markers` order) at ``q`` (anything :meth:`q_from` takes)."""
        names = list(self.markers) if names is None else list(names)
        missing = [n for n in names if n not in self.markers]
        if missing:
            raise InvalidInputError(f"model {self.name!r} has no markers {missing}; its "
                                    f"markers are {list(self.markers)}")
        poses = self.body_poses(q)
        out = np.empty((len(names), 3))
        for k, n in enumerate(names):
            m = self.markers[n]
            T = poses[m.body]
            out[k] = T[:3, :3] @ m.location + T[:3, 3]
        return out

    def with_markers(self, markers):
        """A copy whose markers are ``markers`` (dict name -> Marker) merged into its own as
        OpenSim's ``Model::updateMarkerSet`` does: a marker of the same name is replaced, a
        new one added. Every marker must be on a body of the model."""
        unknown = sorted({m.body for m in markers.values()} - set(self.bodies))
        if unknown:
            raise InvalidInputError(
                f"model {self.name!r} has no bodies {unknown} that markers "
                f"{[m.name for m in markers.values() if m.body in unknown]} are on; its "
                f"bodies are {list(self.bodies)}: correct the marker set")
        merged = {n: dataclasses.replace(m, location=m.location.copy())
                  for n, m in self.markers.items()}
        for n, m in markers.items():
            merged[n] = dataclasses.replace(m, location=np.array(m.location, dtype=float))
        return dataclasses.replace(self, markers=merged)

    # ------------------------------------------------------------------ dynamics
    def to_core_model(self, lock=None, ignore_couplers=False):
        """A :class:`core.model.Model` with the model's bodies, joints and gravity.

        The core body frame of each body is its joint's child frame M (so the core joint is
        exactly X_FM and every core family applies); :meth:`core_to_body` gives the OpenSim
        body frame in it. Mass properties are moved into M and accepted as OpenSim accepts
        them (``physical=False``: point masses, measured tensors).

        lock: coordinate names held at their default value (default: those the file marks
            locked, as OpenSim's forward dynamics does). A joint whose coordinates are all
            locked becomes a Fixed joint at that pose; a CustomJoint with some locked keeps
            its other coordinates. Returns ``(model, coordinate_names)`` with the names of
            the model's q in order.
        ignore_couplers: the tree dynamics has no coordinate couplers, so a model with an
            enforced CoordinateCouplerConstraint whose dependent coordinate is free is
            refused (naming it) unless this is True (then the coupler is left out) or the
            dependent coordinate is locked.
        """
        from ..joints.lower_pairs import Fixed
        from ..model import Model

        locked = {n for n, c in self.coordinates.items() if c.locked} if lock is None \
            else set(lock)
        unknown = locked - set(self.coordinates)
        if unknown:
            raise InvalidInputError(f"model {self.name!r}: cannot lock {sorted(unknown)}: no "
                                    f"such coordinates; they are {list(self.coordinates)}")
        active = [c.name for c in self.couplers if c.enforced and c.dependent not in locked]
        if active and not ignore_couplers:
            raise InvalidInputError(
                f"model {self.name!r}: coordinate couplers {active} tie coordinates together, "
                "which the tree dynamics cannot; lock their dependent coordinates, or pass "
                "ignore_couplers=True to simulate without them")
        model = Model(gravity=self.gravity, name=self.name)
        index = {GROUND: -1}
        names = []
        frame_M = {GROUND: np.eye(4)}
        for j in self.joints:
            held = [n for n in j.coordinates if n in locked]
            joint, placement_tail = j.joint, np.eye(4)
            free = list(j.coordinates)
            if held and len(held) == len(j.coordinates):
                values = np.array([self.coordinates[n].default for n in j.coordinates])
                placement_tail = j.joint.transform(values)
                joint, free = Fixed(), []
            elif held:
                joint = _lock_custom(j, {n: self.coordinates[n].default for n in held})
                free = [n for n in j.coordinates if n not in locked]
            body = self.bodies[j.child]
            Cinv = se3.inv(j.child_offset)
            R = j.child_offset[:3, :3]
            com = Cinv[:3, :3] @ body.com + Cinv[:3, 3]
            inertia = R.T @ body.inertia @ R
            placement = se3.inv(frame_M[j.parent]) @ j.parent_offset @ placement_tail
            index[j.child] = model.add_body(j.child, index[j.parent], joint, placement,
                                            mass=body.mass, com=com, inertia=inertia,
                                            physical=False)
            frame_M[j.child] = j.child_offset
            names.extend(free)
        return model, tuple(names)

    def core_to_body(self, body):
        """Pose of the OpenSim body frame in the core model's body frame (the inverse of the
        joint's child offset), ``(4, 4)``."""
        for j in self.joints:
            if j.child == body:
                return se3.inv(j.child_offset)
        raise InvalidInputError(f"model {self.name!r} has no body {body!r} moved by a joint")


def _lock_custom(osim_joint, held):
    """A CustomJoint whose axes on the ``held`` coordinates are replaced by Constants."""
    from ..joints.opensim import Constant, CustomJoint

    j = osim_joint.joint
    if not isinstance(j, CustomJoint):
        raise InvalidInputError(
            f"joint {osim_joint.name!r} ({osim_joint.kind}): cannot lock only "
            f"{sorted(held)} of its coordinates {list(osim_joint.coordinates)}; lock all of "
            "them or none")
    free = [n for n in osim_joint.coordinates if n not in held]
    functions, arguments = [], []
    for f, arg in zip(j.functions, j.arguments):
        if isinstance(arg, tuple):
            names = [osim_joint.coordinates[i] for i in arg]
            if any(n in held for n in names):
                raise InvalidInputError(
                    f"joint {osim_joint.name!r}: cannot lock {sorted(held)}: an axis depends on "
                    f"{names} together; lock all of the joint's coordinates or none of these")
            functions.append(f)
            arguments.append([free.index(n) for n in names])
            continue
        name = None if arg is None else osim_joint.coordinates[arg]
        if name in held:
            functions.append(Constant(float(f.value(held[name]))))
            arguments.append(None)
        else:
            functions.append(f)
            arguments.append(None if name is None else free.index(name))
    idx = [osim_joint.coordinates.index(n) for n in free]
    return CustomJoint(j.axes, functions, arguments, len(free), lower=j.lower[idx],
                       upper=j.upper[idx], neutral=j.neutral()[idx])


# ----------------------------------------------------------------------------- helpers
def offset_pose(translation, orientation):
    """OpenSim offset ``(translation (3,), orientation (3,) body-fixed X-Y-Z angles)`` as a
    ``(4, 4)`` pose."""
    return se3.from_rp(Rotation.from_euler("XYZ", orientation).as_matrix(),
                       np.asarray(translation, dtype=float))


def pose_to_offset(T):
    """Inverse of :func:`offset_pose`: ``(translation (3,), orientation (3,))``."""
    T = np.asarray(T, dtype=float)
    return T[:3, 3].copy(), Rotation.from_matrix(T[:3, :3]).as_euler("XYZ")


def find_mesh_file(mesh_file, model_path, search=()):
    """Path of a mesh an OpenSim model names, or None.

    Looked up as OpenSim does: as given if absolute, beside the model file, in a
    ``Geometry`` folder beside it, then in the folders of ``search``.
    """
    if not mesh_file:
        return None
    if os.path.isabs(mesh_file):
        return mesh_file if os.path.isfile(mesh_file) else None
    base = os.path.dirname(os.path.abspath(model_path)) if model_path else os.getcwd()
    for folder in (base, os.path.join(base, "Geometry"), *search):
        candidate = os.path.join(folder, mesh_file)
        if os.path.isfile(candidate):
            return candidate
    return None


class _Reader:
    """Parsing state: the file name for messages and the accumulated skipped/notes lists."""

    def __init__(self, source):
        self.source = source
        self.skipped = []
        self.notes = []

    def fail(self, where, what):
        raise InvalidInputError(f"{self.source}: {where}: {what}")

    # -- scalar fields ---------------------------------------------------------------
    def text(self, el, tag, where, default=None):
        child = el.find(tag)
        if child is None or child.text is None or not child.text.strip():
            if default is not None:
                return default
            self.fail(where, f"missing <{tag}>; every {el.tag} needs one")
        return child.text.strip()

    def numbers(self, el, tag, where, n=None, default=None):
        child = el.find(tag)
        if child is None or child.text is None or not child.text.strip():
            if default is not None:
                return np.array(default, dtype=float)
            self.fail(where, f"missing <{tag}>")
        try:
            values = np.array([parse_float(v, f"<{tag}>") for v in child.text.split()],
                              dtype=float)
        except InvalidInputError as exc:
            self.fail(where, str(exc))
        if n is not None and values.size != n:
            self.fail(where, f"<{tag}> must hold {n} numbers, found {values.size}")
        if not np.all(np.isfinite(values)):
            self.fail(where, f"<{tag}> holds a non-finite number")
        if values.size and np.abs(values).max() > MAX_MAGNITUDE:
            self.fail(where, f"<{tag}> holds {values[np.abs(values).argmax()]:g}, beyond the "
                             f"{MAX_MAGNITUDE:g} a model's numbers may reach (SI units: kg, m, "
                             "rad): correct the value")
        return values

    def number(self, el, tag, where, default=None):
        return float(self.numbers(el, tag, where, 1,
                                  None if default is None else [default])[0])

    def flag(self, el, tag, default=False):
        child = el.find(tag)
        if child is None or child.text is None:
            return default
        return child.text.strip().lower() in ("true", "1", "yes")

    # -- functions -------------------------------------------------------------------
    def function(self, el, where, depth=1):
        """A function element as the dict :func:`core.joints.opensim.function_from_dict`
        takes; ``depth`` counts the functions it is nested in (at most
        :data:`MAX_FUNCTION_NESTING`)."""
        kind = el.tag
        where = f"{where} {kind}"
        if depth > MAX_FUNCTION_NESTING:
            self.fail(where, f"functions are nested more than {MAX_FUNCTION_NESTING} deep; "
                             "simplify the function (e.g. one MultiplierFunction whose scale "
                             "is the product of the scales)")
        if kind == "Constant":
            return {"type": kind, "value": self.number(el, "value", where)}
        if kind == "LinearFunction":
            c = self.numbers(el, "coefficients", where, 2)
            return {"type": kind, "coefficients": c.tolist()}
        if kind in ("SimmSpline", "NaturalCubicSpline", "PiecewiseLinearFunction"):
            x = self.numbers(el, "x", where)
            y = self.numbers(el, "y", where)
            if x.size != y.size:
                self.fail(where, f"<x> has {x.size} values but <y> has {y.size}")
            return {"type": kind, "x": x.tolist(), "y": y.tolist()}
        if kind == "PolynomialFunction":
            return {"type": kind, "coefficients": self.numbers(el, "coefficients", where).tolist()}
        if kind == "MultivariatePolynomialFunction":
            return {"type": kind, "coefficients": self.numbers(el, "coefficients", where).tolist(),
                    "dimension": self.number(el, "dimension", where),
                    "order": self.number(el, "order", where)}
        if kind == "MultiplierFunction":
            inner = el.find("function")
            if inner is None or len(inner) == 0:
                self.fail(where, "missing the <function> it multiplies")
            return {"type": kind, "scale": self.number(el, "scale", where, 1.0),
                    "function": self.function(inner[0], where, depth + 1)}
        self.fail(where, f"function type {kind} is not supported; supported are "
                         f"{', '.join(FUNCTION_KINDS)}. Re-express it with one of them "
                         "(e.g. a SimmSpline sampled from it)")

    def axis_function(self, axis_el, where):
        """The function element of a TransformAxis (4.x: a child named "function"; 3.3: a
        ``<function>`` wrapper)."""
        for child in axis_el:
            if child.tag == "function":
                if len(child) == 0:
                    self.fail(where, "empty <function>")
                return self.function(child[0], where)
            if child.tag not in ("coordinates", "axis"):
                return self.function(child, where)
        return None


def _function_object(spec):
    from ..joints.opensim import function_from_dict
    return function_from_dict(spec)


def _is_constant(spec):
    if spec["type"] == "Constant":
        return True
    return spec["type"] == "MultiplierFunction" and _is_constant(spec["function"])


# ----------------------------------------------------------------------------- reading
def read_osim(path):
    """Read an OpenSim model file; returns an :class:`OsimModel` (see the module docstring)."""
    path = os.fspath(path)
    return parse_osim(read_input(path, "OpenSim model"), source=path)


def opensim_document(data, source, what):
    """The root ``<OpenSimDocument>`` element of the bytes or text of an OpenSim XML file
    (a model, a tool's setup, external loads...); ``source`` names the file and ``what``
    says what it should be (``"an OpenSim model"``) in the InvalidInputError raised when it
    is not XML or not an OpenSim document."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise InvalidInputError(f"{source}: not a complete XML file ({exc}); the file is "
                                f"truncated or not {what}") from None
    except (LookupError, ValueError) as exc:  # an encoding Python lacks or expat cannot use
        raise InvalidInputError(f"{source}: the XML declaration names an encoding the reader "
                                f"cannot use ({exc}); save the file as UTF-8 (OpenSim writes "
                                "UTF-8)") from None
    if root.tag != "OpenSimDocument":
        raise InvalidInputError(f"{source}: root: the root element is <{root.tag}>, not "
                                f"<OpenSimDocument>: not {what} file")
    return root


def parse_osim(data, source="<string>"):
    """Parse the bytes or text of an .osim file (``source`` names it in messages)."""
    root = opensim_document(data, source, "an OpenSim model")
    r = _Reader(source)
    try:
        version = parse_count(root.get("Version", "40000"), "Version")
    except InvalidInputError as exc:
        r.fail("OpenSimDocument", str(exc))
    model_el = root.find("Model")
    if model_el is None:
        r.fail("OpenSimDocument", "no <Model> element")
    name = model_el.get("name", "model")
    gravity = r.numbers(model_el, "gravity", "Model", 3, default=[0.0, -9.80665, 0.0])
    if version >= 40000:
        bodies, joints, coords, frames, wrap_objects = _read_v4(r, model_el)

        def body_of(frame, name):
            return frames.locate(frames.resolve(frame, f"/markerset/{name}"),
                                 f"marker {name!r}")
    else:
        bodies, joints, coords = _read_v3(r, model_el)
        wrap_objects = {}

        def body_of(frame, name):
            r.fail(f"marker {name!r}", "a marker of an OpenSim 3.x model names its <body>, "
                                       "not a socket_parent_frame")
    markers = _read_markers(r, model_el, bodies, body_of)
    joints = _tree_order(r, bodies, joints)
    ordered = {}
    for j in joints:
        for c in j.coordinates:
            ordered[c] = coords[c]
    couplers = _read_constraints(r, model_el, ordered)
    muscles = {}
    if version >= 40000:
        muscles = _read_muscles(r, model_el, frames, ordered, wrap_objects)
    else:
        _skip_set(r, model_el, "ForceSet")
    for set_tag in _SKIPPED_SETS:
        _skip_set(r, model_el, set_tag)
    for b in bodies.values():
        if b.name != GROUND:
            _note_inertia(r, b)
    return OsimModel(name=name, path=os.path.abspath(source) if os.path.isfile(source) else "",
                     version=version, gravity=gravity, bodies=bodies, joints=joints,
                     coordinates=ordered, couplers=couplers, skipped=r.skipped, notes=r.notes,
                     markers=markers, muscles=muscles, wrap_objects=wrap_objects)


def _skip_set(r, model_el, set_tag, keep=()):
    """List the objects of a model-level set as skipped, except those of the classes
    ``keep``; returns the kept elements."""
    kept = []
    s = model_el.find(set_tag)
    if s is not None:
        objects = s.find("objects")
        for obj in (objects if objects is not None else s):
            if obj.tag in keep:
                kept.append(obj)
            elif obj.tag not in ("objects", "groups"):
                r.skipped.append(f"{obj.tag} {obj.get('name', '')}".strip())
    return kept


def _read_markers(r, model_el, bodies, body_of):
    from .markers import marker_elements

    marker_set = model_el.find("MarkerSet")
    if marker_set is None:
        return {}
    try:
        markers = marker_elements(marker_set, r.source, body_of)
    except InvalidInputError as exc:
        r.fail("MarkerSet", str(exc).removeprefix(f"{r.source}: "))
    for m in markers.values():
        if m.body not in bodies:
            r.fail(f"marker {m.name!r}", f"it is on body {m.body!r}, which the model does not "
                                         "have; correct its body")
    return markers


def _note_inertia(r, body):
    eig = np.linalg.eigvalsh(body.inertia)
    if body.mass == 0.0:
        r.notes.append(f"body {body.name!r} has no mass (imported as given)")
    elif eig[0] < 0.0 or eig[2] > eig[0] + eig[1] + 1e-12 * max(eig[2], 1e-300):
        r.notes.append(f"body {body.name!r}: the inertia's principal moments {eig.round(8)} "
                       "are not physical (imported as given, as OpenSim does)")


def _inertia_matrix(v):
    xx, yy, zz, xy, xz, yz = v
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]], dtype=float)


def _read_coordinate(r, el, joint_name):
    name = el.get("name")
    where = f"joint {joint_name!r} coordinate {name!r}"
    if not name:
        r.fail(f"joint {joint_name!r}", "a <Coordinate> without a name")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        r.fail(where, f"the name is {len(name.encode('utf-8'))} bytes long, more than the "
                      f"{MAX_NAME_BYTES} a Blender property name may have: rename the "
                      "coordinate in the model (and in its motions)")
    rng = r.numbers(el, "range", where, 2, default=[-math.inf, math.inf])
    if rng[0] > rng[1]:
        r.fail(where, f"range {rng.tolist()} has its lower end above its upper end")
    motion = el.findtext("motion_type", "").strip()
    return OsimCoordinate(name=name, joint=joint_name,
                          default=r.number(el, "default_value", where, 0.0),
                          default_speed=r.number(el, "default_speed_value", where, 0.0),
                          range=(float(rng[0]), float(rng[1])),
                          clamped=r.flag(el, "clamped"), locked=r.flag(el, "locked"),
                          motion_type=motion or "")


def _geometry(r, el, body, pose, where):
    """OsimGeometry for a Mesh or primitive element ``el`` drawn in a frame at ``pose``."""
    kind = el.tag
    scale = r.numbers(el, "scale_factors", where, 3, default=[1.0, 1.0, 1.0])
    appearance = el.find("Appearance")
    color, opacity, visible = (1.0, 1.0, 1.0), 1.0, True
    if appearance is not None:
        color = tuple(r.numbers(appearance, "color", where, 3, default=[1.0, 1.0, 1.0]))
        opacity = r.number(appearance, "opacity", where, 1.0)
        visible = r.flag(appearance, "visible", True)
    g = OsimGeometry(name=el.get("name", kind), kind=kind, pose=pose, scale=scale,
                     color=color, opacity=opacity, visible=visible)
    if kind == "Mesh":
        g.mesh_file = r.text(el, "mesh_file", where)
    else:
        for prop in _PRIMITIVES[kind]:
            child = el.find(prop)
            if child is not None and child.text and child.text.strip():
                size = r.numbers(el, prop, where)
                if prop not in ("origin", "direction") and np.any(size < 0.0):
                    r.fail(where, f"<{prop}> {size.tolist()} is negative; a size is >= 0 m")
                g.dimensions[prop] = size.tolist()
    return g


# -- OpenSim 4.x -----------------------------------------------------------------------
class _Frames:
    """Every frame of a 4.x model by absolute component path, resolved to (body, pose)."""

    def __init__(self, r):
        self.r = r
        self.frames = {}       # path -> (parent path or None for a body, pose in parent)
        self.bodies = {}       # path -> body name
        self.located = {}      # path -> (body name, pose in body), as located so far

    def add_body(self, path, name):
        self.bodies[path] = name
        self.frames[path] = (None, np.eye(4))

    def add_offset(self, path, el, where):
        parent = self.r.text(el, "socket_parent", where)
        T = offset_pose(self.r.numbers(el, "translation", where, 3, default=[0, 0, 0]),
                        self.r.numbers(el, "orientation", where, 3, default=[0, 0, 0]))
        self.frames[path] = (self.resolve(parent, path), T)

    def resolve(self, ref, owner):
        """Absolute path of the frame ``ref`` seen from component ``owner`` (a connectee
        path is relative to the component that owns the socket)."""
        if ref.startswith("/"):
            return posixpath.normpath(ref)
        return posixpath.normpath(posixpath.join(owner, ref))

    def locate(self, path, where):
        """``(body name, pose in body)`` of the frame at ``path``: the poses of the frames
        between it and its body multiplied from the body down, each frame's result kept for
        the frames offset from it (no recursion: a chain of any length is located)."""
        chain, seen = [], set()
        while True:
            if path in self.bodies:
                found = self.bodies[path], np.eye(4)
                break
            if path not in self.frames:
                name = posixpath.basename(path)
                matches = [p for p in self.frames if posixpath.basename(p) == name]
                if len(matches) != 1:
                    self.r.fail(where, f"frame {path!r} is not in the model (no body or offset "
                                       "frame has that path); check the socket's name")
                path = matches[0]
                if path in self.bodies:
                    found = self.bodies[path], np.eye(4)
                    break
            if path in self.located:
                found = self.located[path]
                break
            if path in seen:
                self.r.fail(where, f"offset frames form a cycle through {path!r}")
            seen.add(path)
            chain.append(path)
            path = self.frames[path][0]
        body, T = found
        for frame in reversed(chain):
            T = T @ self.frames[frame][1]
            self.located[frame] = body, T
        return body, T


def _read_v4(r, model_el):
    frames = _Frames(r)
    bodies = {GROUND: OsimBody(GROUND, 0.0, np.zeros(3), np.zeros((3, 3)))}
    ground_el = model_el.find("Ground")
    frames.add_body("/ground", GROUND)
    body_els = []
    if ground_el is not None:
        body_els.append(("/ground", GROUND, ground_el))
    bodyset = model_el.find("BodySet")
    for el in (bodyset.find("objects") if bodyset is not None and
               bodyset.find("objects") is not None else []):
        name = el.get("name")
        if el.tag != "Body":
            r.fail("BodySet", f"<{el.tag} name={name!r}> is not a Body; the reader imports "
                              "Body elements only")
        if not name or name in bodies:
            r.fail("BodySet", f"a Body has a missing or repeated name {name!r}")
        where = f"body {name!r}"
        mass = r.number(el, "mass", where, 0.0)
        if mass < 0.0:
            r.fail(where, f"mass {mass} is negative")
        bodies[name] = OsimBody(name, mass,
                                r.numbers(el, "mass_center", where, 3, default=[0, 0, 0]),
                                _inertia_matrix(r.numbers(el, "inertia", where, 6,
                                                          default=[0] * 6)))
        frames.add_body(f"/bodyset/{name}", name)
        body_els.append((f"/bodyset/{name}", name, el))
    # offset frames owned by bodies (components) and by joints (frames)
    for path, name, el in body_els:
        comps = el.find("components")
        for f in (comps if comps is not None else []):
            if f.tag == "PhysicalOffsetFrame":
                frames.add_offset(f"{path}/{f.get('name')}", f, f"body {name!r} frame")
    jointset = model_el.find("JointSet")
    joint_els = list(jointset.find("objects")) if jointset is not None and \
        jointset.find("objects") is not None else []
    for el in joint_els:
        jpath = f"/jointset/{el.get('name')}"
        fr = el.find("frames")
        for f in (fr if fr is not None else []):
            if f.tag == "PhysicalOffsetFrame":
                frames.add_offset(f"{jpath}/{f.get('name')}", f,
                                  f"joint {el.get('name')!r} frame {f.get('name')!r}")
    # geometry and wrap objects on bodies and on their offset frames
    wrap_objects = {}
    for path, name, el in body_els:
        comps = el.find("components")
        for owner_path, owner in [(path, el)] + [
                (f"{path}/{f.get('name')}", f) for f in (comps if comps is not None else [])
                if f.tag == "PhysicalOffsetFrame"]:
            att = owner.find("attached_geometry")
            for g in (att if att is not None else []):
                where = f"body {name!r} geometry {g.get('name')!r}"
                if g.tag != "Mesh" and g.tag not in _PRIMITIVES:
                    r.skipped.append(f"{g.tag} {g.get('name', '')} (geometry on {name})")
                    continue
                sock = g.findtext("socket_frame", "..").strip() or ".."
                gpath = frames.resolve(sock, f"{owner_path}/{g.get('name')}")
                body, T = frames.locate(gpath, where)
                if body != name:
                    r.fail(where, f"drawn in frame {gpath!r} of another body {body!r}")
                bodies[name].geometry.append(_geometry(r, g, name, T, where))
        wraps = el.find("WrapObjectSet")
        objs = wraps.find("objects") if wraps is not None else None
        for w in (objs if objs is not None else []):
            _read_wrap_object(r, w, name, wrap_objects)
    coords, joints = {}, []
    for el in joint_els:
        jname = el.get("name")
        where = f"joint {jname!r} ({el.tag})"
        if el.tag not in JOINT_KINDS:
            r.fail(where, f"joint type {el.tag} is not supported; supported are "
                          f"{', '.join(JOINT_KINDS)}")
        jpath = f"/jointset/{jname}"
        pbody, P = frames.locate(frames.resolve(r.text(el, "socket_parent_frame", where),
                                                jpath), where)
        cbody, C = frames.locate(frames.resolve(r.text(el, "socket_child_frame", where),
                                                jpath), where)
        cel = el.find("coordinates")
        clist = [_read_coordinate(r, c, jname) for c in (cel if cel is not None else [])
                 if c.tag == "Coordinate"]
        joints.append(_make_joint(r, el, jname, el.tag, pbody, cbody, P, C, clist, coords))
    return bodies, joints, coords, frames, wrap_objects


# -- muscles and wrap objects (4.x) ----------------------------------------------------
#: the Hill parameters every muscle class names the same way, with OpenSim's defaults
_MUSCLE_PARAMETERS = {"max_isometric_force": 1000.0, "optimal_fiber_length": 0.1,
                      "tendon_slack_length": 0.2, "pennation_angle_at_optimal": 0.0,
                      "max_contraction_velocity": 10.0}


def _read_wrap_object(r, el, body, wrap_objects):
    from ..muscles.wrap import WRAP_KINDS, WrapObject

    name = el.get("name", "")
    where = f"wrap object {name!r} ({el.tag} on body {body!r})"
    if el.tag not in WRAP_KINDS:
        r.skipped.append(f"{el.tag} {name} (wrap object on {body})")
        return
    if not name or name in wrap_objects:
        r.fail(where, "a wrap object needs a name no other wrap object of the model has")
    pose = offset_pose(r.numbers(el, "translation", where, 3, default=[0, 0, 0]),
                       r.numbers(el, "xyz_body_rotation", where, 3, default=[0, 0, 0]))
    sizes = {}
    if el.tag in ("WrapCylinder", "WrapSphere"):
        sizes["radius"] = r.number(el, "radius", where)
    if el.tag == "WrapCylinder":
        sizes["length"] = r.number(el, "length", where, 1.0)
    if el.tag == "WrapEllipsoid":
        sizes["radii"] = r.numbers(el, "dimensions", where, 3)
    if el.tag == "WrapTorus":
        sizes["radii"] = np.array([r.number(el, "inner_radius", where),
                                   r.number(el, "outer_radius", where)])
    try:
        wrap_objects[name] = WrapObject(
            name=name, kind=el.tag, body=body, pose=pose,
            quadrant=(el.findtext("quadrant") or "all").strip(),
            active=r.flag(el, "active", True), **sizes)
    except InvalidInputError as exc:
        r.fail(where, str(exc))


def _read_muscles(r, model_el, frames, coords, wrap_objects):
    from ..muscles.paths import MUSCLE_KINDS, GeometryPath, Muscle

    muscles = {}
    for el in _skip_set(r, model_el, "ForceSet", keep=MUSCLE_KINDS):
        name = el.get("name", "")
        where = f"muscle {name!r} ({el.tag})"
        if not name or name in muscles:
            r.fail(where, "a muscle needs a name no other muscle of the model has")
        path_el = el.find("GeometryPath")
        if path_el is None:
            r.fail(where, "has no <GeometryPath>")
        values, extra = {}, {}
        for child in el:
            if child.tag in _MUSCLE_PARAMETERS:
                values[child.tag] = r.number(el, child.tag, where)
            elif child.tag != "GeometryPath":
                extra[child.tag] = (ET.tostring(child, encoding="unicode").strip()
                                    if len(child) else (child.text or "").strip())
        for key, value in values.items():
            if value < 0.0:
                r.fail(where, f"<{key}> is {value:g}; it must be >= 0")
        path = GeometryPath(_read_path_points(r, path_el, where, frames, coords),
                            _read_path_wraps(r, path_el, where, wrap_objects))
        muscles[name] = Muscle(name=name, kind=el.tag, path=path,
                               **{k: values.get(k, d) for k, d in _MUSCLE_PARAMETERS.items()},
                               extra=extra)
    return muscles


def _socket_coordinate(r, el, tag, where, coords):
    ref = (el.findtext(tag) or "").strip()
    if not ref:
        return None
    name = posixpath.basename(ref)
    if name not in coords:
        r.fail(where, f"<{tag}> names coordinate {ref!r}, which the model does not have")
    return name


def _read_path_points(r, path_el, muscle_where, frames, coords):
    from ..muscles import paths as mp

    point_set = path_el.find("PathPointSet")
    objects = point_set.find("objects") if point_set is not None else None
    points = []
    for el in (objects if objects is not None else []):
        pname = el.get("name", "")
        where = f"{muscle_where} path point {pname!r} ({el.tag})"
        if el.tag not in ("PathPoint", "ConditionalPathPoint", "MovingPathPoint"):
            r.fail(where, "is not a PathPoint, ConditionalPathPoint or MovingPathPoint")
        ref = r.text(el, "socket_parent_frame", where)
        body, T = frames.locate(frames.resolve(ref, "/forceset"), where)
        location = r.numbers(el, "location", where, 3, default=[0, 0, 0])
        try:
            if el.tag == "MovingPathPoint":
                functions, fixed = [], np.zeros(3)
                for k, axis in enumerate("xyz"):
                    coordinate = _socket_coordinate(r, el, f"socket_{axis}_coordinate", where,
                                                    coords)
                    fel = el.find(f"{axis}_location")
                    spec = r.function(fel[0], where) if fel is not None and len(fel) else \
                        {"type": "Constant", "value": 0.0}
                    f = _function_object(spec)
                    if coordinate is None:
                        fixed[k] = float(f.value(0.0))
                        functions.append(None)
                    else:
                        functions.append((coordinate, f))
                points.append(mp.MovingPathPoint(body, fixed, pname, functions=functions,
                                                 frame=T))
                continue
            location = T[:3, :3] @ location + T[:3, 3]
            if el.tag == "ConditionalPathPoint":
                coordinate = _socket_coordinate(r, el, "socket_coordinate", where, coords)
                if coordinate is None:
                    r.fail(where, "names no <socket_coordinate>")
                rng = r.numbers(el, "range", where, 2)
                points.append(mp.ConditionalPathPoint(body, location, pname,
                                                      coordinate=coordinate, range=tuple(rng)))
            else:
                points.append(mp.PathPoint(body, location, pname))
        except InvalidInputError as exc:
            r.fail(where, str(exc))
    if len(points) < 2:
        r.fail(muscle_where, f"its path has {len(points)} points; a path needs at least two")
    return points


def _read_path_wraps(r, path_el, muscle_where, wrap_objects):
    from ..muscles.paths import PathWrap

    wrap_set = path_el.find("PathWrapSet")
    objects = wrap_set.find("objects") if wrap_set is not None else None
    wraps = []
    for el in (objects if objects is not None else []):
        where = f"{muscle_where} path wrap {el.get('name', '')!r}"
        obj = r.text(el, "wrap_object", where)
        if obj not in wrap_objects:
            r.fail(where, f"wraps over {obj!r}, which no body of the model has")
        rng = r.numbers(el, "range", where, 2, default=[-1, -1])
        try:
            wraps.append(PathWrap(obj, (el.findtext("method") or "hybrid").strip(),
                                  (int(rng[0]), int(rng[1])), el.get("name", "")))
        except InvalidInputError as exc:
            r.fail(where, str(exc))
    return wraps


# -- OpenSim 3.3 -----------------------------------------------------------------------
def _read_v3(r, model_el):
    bodies = {}
    coords, joints = {}, []
    bodyset = model_el.find("BodySet")
    objects = bodyset.find("objects") if bodyset is not None else None
    if objects is None:
        r.fail("Model", "no <BodySet><objects>")
    pending = []
    for el in objects:
        name = el.get("name")
        where = f"body {name!r}"
        if el.tag != "Body" or not name or name in bodies:
            r.fail("BodySet", f"<{el.tag} name={name!r}>: expected uniquely named Body "
                              "elements")
        inertia = np.array([r.number(el, f"inertia_{k}", where, 0.0)
                            for k in ("xx", "yy", "zz", "xy", "xz", "yz")])
        bodies[name] = OsimBody(name, r.number(el, "mass", where, 0.0),
                                r.numbers(el, "mass_center", where, 3, default=[0, 0, 0]),
                                _inertia_matrix(inertia))
        vis = el.find("VisibleObject")
        if vis is not None:
            files = (vis.findtext("geometry_files") or "").split()
            gs = vis.find("GeometrySet")
            if gs is not None:
                for dg in gs.iter("DisplayGeometry"):
                    files.append((dg.findtext("geometry_file") or "").strip())
            scale = r.numbers(vis, "scale_factors", where, 3, default=[1, 1, 1])
            for f in files:
                if f:
                    bodies[name].geometry.append(OsimGeometry(
                        name=os.path.splitext(f)[0], kind="Mesh", pose=np.eye(4),
                        scale=scale, mesh_file=f))
        jel = el.find("Joint")
        if jel is not None and len(jel):
            pending.append((name, jel[0]))
    if GROUND not in bodies:
        r.fail("BodySet", "no body named 'ground'")
    for child, el in pending:
        jname = el.get("name")
        where = f"joint {jname!r} ({el.tag})"
        if el.tag not in JOINT_KINDS:
            r.fail(where, f"joint type {el.tag} is not supported; supported are "
                          f"{', '.join(JOINT_KINDS)}")
        if r.flag(el, "reverse"):
            r.fail(where, "reversed joints (<reverse>true</reverse>) are not supported; "
                          "re-save the model in OpenSim 4")
        parent = r.text(el, "parent_body", where)
        P = offset_pose(r.numbers(el, "location_in_parent", where, 3, default=[0, 0, 0]),
                        r.numbers(el, "orientation_in_parent", where, 3, default=[0, 0, 0]))
        C = offset_pose(r.numbers(el, "location", where, 3, default=[0, 0, 0]),
                        r.numbers(el, "orientation", where, 3, default=[0, 0, 0]))
        cs = el.find("CoordinateSet")
        cobj = cs.find("objects") if cs is not None else None
        clist = [_read_coordinate(r, c, jname) for c in (cobj if cobj is not None else [])
                 if c.tag == "Coordinate"]
        joints.append(_make_joint(r, el, jname, el.tag, parent, child, P, C, clist, coords))
    return bodies, joints, coords


# -- joints ----------------------------------------------------------------------------
_EULER_XYZ = [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]


def _identity(index):
    return {"type": "LinearFunction", "coefficients": [1.0, 0.0]}, index


def _zero():
    return {"type": "Constant", "value": 0.0}, None


def _axes_spec(kind, n):
    """(axes, [(function dict, argument)] x 6) of the joints that are CustomJoints in
    disguise: Ball/Gimbal (body-fixed X-Y-Z), Free (X-Y-Z then x, y, z in F), Planar
    (rotation about z, translation along x and y)."""
    if kind in ("BallJoint", "GimbalJoint"):
        return _EULER_XYZ * 2, [_identity(0), _identity(1), _identity(2)] + [_zero()] * 3
    if kind == "FreeJoint":
        return _EULER_XYZ * 2, [_identity(i) for i in range(6)]
    if kind == "PlanarJoint":
        return [(0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)] + _EULER_XYZ, \
            [_identity(0), _zero(), _zero(), _identity(1), _identity(2), _zero()]
    raise AssertionError(kind)


_COORDINATE_COUNT = {"WeldJoint": 0, "PinJoint": 1, "SliderJoint": 1, "UniversalJoint": 2,
                     "PlanarJoint": 3, "BallJoint": 3, "GimbalJoint": 3, "FreeJoint": 6,
                     "EllipsoidJoint": 3, "ScapulothoracicJoint": 4}


def _make_joint(r, el, name, kind, parent, child, P, C, clist, coords):
    from ..joints import opensim as osj
    from ..joints.lower_pairs import Fixed, Prismatic, Revolute, Universal

    where = f"joint {name!r} ({kind})"
    names = [c.name for c in clist]
    for c in clist:
        if c.name in coords:
            r.fail(where, f"coordinate {c.name!r} is already defined by joint "
                          f"{coords[c.name].joint!r}; coordinate names must be unique")
        coords[c.name] = c
    n = len(clist)
    lower = np.array([c.range[0] if c.clamped else -np.inf for c in clist])
    upper = np.array([c.range[1] if c.clamped else np.inf for c in clist])
    neutral = np.array([c.default for c in clist])
    if kind != "CustomJoint" and n != _COORDINATE_COUNT[kind]:
        r.fail(where, f"has {n} coordinates; a {kind} has {_COORDINATE_COUNT[kind]}")
    rotational = [True] * n
    spec = {}
    if kind == "WeldJoint":
        joint = Fixed()
    elif kind == "PinJoint":
        joint = Revolute(axis=(0.0, 0.0, 1.0), lower=lower, upper=upper)
    elif kind == "SliderJoint":
        joint = Prismatic(axis=(1.0, 0.0, 0.0), lower=lower, upper=upper)
        rotational = [False]
    elif kind == "UniversalJoint":
        joint = Universal(axis0=(1.0, 0.0, 0.0), axis1=(0.0, 1.0, 0.0), lower=lower,
                          upper=upper)
    elif kind == "EllipsoidJoint":
        radii = r.numbers(el, "radii_x_y_z", where, 3)
        spec = {"radii": radii.tolist()}
        joint = osj.EllipsoidJoint(radii, lower=lower, upper=upper, neutral=neutral)
    elif kind == "ScapulothoracicJoint":
        radii = r.numbers(el, "thoracic_ellipsoid_radii_x_y_z", where, 3)
        origin = r.numbers(el, "scapula_winging_axis_origin", where, 2)
        direction = r.number(el, "scapula_winging_axis_direction", where)
        spec = {"radii": radii.tolist(), "winging_origin": origin.tolist(),
                "winging_direction": direction}
        joint = osj.ScapulothoracicJoint(radii, origin, direction, lower=lower, upper=upper,
                                         neutral=neutral)
    else:
        if kind == "CustomJoint":
            axes, pairs, rotational = _custom_axes(r, el, where, names)
        else:
            axes, pairs = _axes_spec(kind, n)
            rotational = [not (kind == "FreeJoint" and i >= 3) and
                          not (kind == "PlanarJoint" and i >= 1) for i in range(n)]
        spec = {"axes": [list(map(float, a)) for a in axes],
                "functions": [f for f, _ in pairs], "arguments": [a for _, a in pairs]}
        try:
            joint = osj.CustomJoint(np.array(axes, dtype=float),
                                    [_function_object(f) for f, _ in pairs],
                                    [a for _, a in pairs], n, lower=lower, upper=upper,
                                    neutral=neutral)
        except InvalidInputError as exc:
            r.fail(where, str(exc))
    for c, rot in zip(clist, rotational):
        if not c.motion_type:
            c.motion_type = "rotational" if rot else "translational"
    return OsimJoint(name=name, kind=kind, parent=parent, child=child, parent_offset=P,
                     child_offset=C, coordinates=tuple(names), joint=joint, spec=spec)


_AXIS_NAMES = ("rotation1", "rotation2", "rotation3",
               "translation1", "translation2", "translation3")


def _custom_axes(r, el, where, names):
    st = el.find("SpatialTransform")
    if st is None:
        r.fail(where, "a CustomJoint without a <SpatialTransform>")
    found = {a.get("name"): a for a in st.findall("TransformAxis")}
    axes, pairs = [], []
    rotational = [False] * len(names)
    used = set()
    for k, axis_name in enumerate(_AXIS_NAMES):
        a = found.get(axis_name)
        aw = f"{where} {axis_name}"
        if a is None:
            axes.append(_EULER_XYZ[k % 3])
            pairs.append(_zero())
            continue
        axes.append(tuple(r.numbers(a, "axis", aw, 3)))
        cnames = (a.findtext("coordinates") or "").split()
        spec = r.axis_function(a, aw)
        several = spec is not None and spec["type"] == "MultivariatePolynomialFunction"
        if len(cnames) > 1 and not several:
            r.fail(aw, f"depends on {len(cnames)} coordinates {cnames}; a function of several "
                       "coordinates must be a MultivariatePolynomialFunction")
        if not cnames:
            if spec is None:
                spec = {"type": "Constant", "value": 0.0}
            if not _is_constant(spec):
                r.fail(aw, f"a {spec['type']} needs a coordinate, and the axis names none")
            value = float(_function_object(spec).value(0.0))
            pairs.append(({"type": "Constant", "value": value}, None))
            continue
        for c in cnames:
            if c not in names:
                r.fail(aw, f"coordinate {c!r} is referenced but not defined by this joint "
                           f"(its coordinates are {names})")
            used.add(c)
            if k < 3:
                rotational[names.index(c)] = True
        if spec is None:
            spec = {"type": "LinearFunction", "coefficients": [1.0, 0.0]}
        index = [names.index(c) for c in cnames]
        pairs.append((spec, index if len(index) > 1 else index[0]))
    unused = [c for c in names if c not in used]
    if unused:
        r.notes.append(f"{where}: coordinates {unused} move no axis")
    return axes, pairs, rotational


def _tree_order(r, bodies, joints):
    """The joints ordered parents first; every body but ground moved by exactly one."""
    by_child = {}
    for j in joints:
        for end, role in ((j.parent, "parent"), (j.child, "child")):
            if end not in bodies:
                r.fail(f"joint {j.name!r}", f"its {role} body {end!r} is not in the BodySet")
        if j.child == GROUND:
            r.fail(f"joint {j.name!r}", "moves ground; ground must be a parent")
        if j.child in by_child:
            r.fail(f"joint {j.name!r}", f"body {j.child!r} is already the child of joint "
                                        f"{by_child[j.child].name!r} (closed loops are "
                                        "constraints in OpenSim, not joints)")
        by_child[j.child] = j
    loose = [b for b in bodies if b != GROUND and b not in by_child]
    if loose:
        r.fail("JointSet", f"bodies {loose} have no joint; connect each body to its parent "
                           "(a FreeJoint to ground for a floating body)")
    # a joint's round is the depth of its child body below ground: the joints parents first,
    # in file order within a round
    children = {}
    for j in joints:
        children.setdefault(j.parent, []).append(j)
    depth, frontier = {}, [GROUND]
    level = 0
    while frontier:
        level += 1
        frontier = [j.child for b in frontier for j in children.get(b, ())]
        depth.update((b, level) for b in frontier)
    remaining = [j for j in joints if j.child not in depth]
    if remaining:
        r.fail("JointSet", f"joints {[j.name for j in remaining]} form a loop not "
                           "attached to ground")
    return sorted(joints, key=lambda j: depth[j.child])


def _read_constraints(r, model_el, coords):
    couplers = []
    cs = model_el.find("ConstraintSet")
    objects = cs.find("objects") if cs is not None else None
    for el in (objects if objects is not None else []):
        name = el.get("name", "")
        if el.tag != "CoordinateCouplerConstraint":
            r.skipped.append(f"{el.tag} {name}".strip())
            continue
        where = f"constraint {name!r}"
        indep = (el.findtext("independent_coordinate_names") or "").split()
        dep = (el.findtext("dependent_coordinate_name") or "").strip()
        for c in [*indep, dep]:
            if c not in coords:
                r.fail(where, f"coordinate {c!r} is referenced but not in the model")
        if len(indep) != 1:
            r.fail(where, f"couples {len(indep)} independent coordinates; one is supported")
        if dep in indep:
            r.fail(where, f"coordinate {dep!r} is both its dependent and its independent "
                          "coordinate, which no value satisfies in general; couple it to "
                          "another coordinate or remove the constraint")
        fel = el.find("coupled_coordinates_function")
        if fel is None or len(fel) == 0:
            r.fail(where, "missing <coupled_coordinates_function>")
        spec = r.function(fel[0], where)
        enforced = r.flag(el, "isEnforced", True) if el.find("isEnforced") is not None \
            else not r.flag(el, "isDisabled", False)
        couplers.append(OsimCoupler(name, dep, tuple(indep), _function_object(spec), spec,
                                    enforced))
    _check_coupler_cycles(r, couplers)
    return couplers


def _check_coupler_cycles(r, couplers):
    """Refuse couplers whose dependencies return to where they start (``a = f(b)``,
    ``b = g(a)``): the coordinates of such a cycle cannot be posed one after the other."""
    driven_by = {}
    for c in couplers:
        if c.dependent in driven_by:
            r.fail(f"constraint {c.name!r}", f"coordinate {c.dependent!r} is already the "
                                             f"dependent of constraint "
                                             f"{driven_by[c.dependent].name!r}; a coordinate "
                                             "follows one coupler: remove one of them")
        driven_by[c.dependent] = c
    done = set()
    for start in driven_by:
        path, names = [], set()
        coordinate = start
        while coordinate in driven_by and coordinate not in done:
            if coordinate in names:
                cycle = path[path.index(coordinate):]
                r.fail(f"constraint {driven_by[coordinate].name!r}",
                       "coordinate couplers form a cycle "
                       + " <- ".join([*cycle, coordinate])
                       + " (each follows the next); remove one of the constraints")
            names.add(coordinate)
            path.append(coordinate)
            coordinate = driven_by[coordinate].independent[0]
        done.update(names)


def _column_coordinate(label):
    """The coordinate a motion column holds: its name, or the ``value`` of a 4.x state path
    ``/jointset/<joint>/<coordinate>/value``; None for speeds and other state variables."""
    if label.startswith("/"):
        parts = label.strip("/").split("/")
        return parts[-2] if len(parts) >= 2 and parts[-1] == "value" else None
    return label


def motion_coordinates(model, motion):
    """A motion (:class:`core.io.motion.Motion`) as coordinates of ``model``.

    Columns are matched to coordinates by name (or by 4.x state path); rotational
    coordinates are converted to radians when the file is in degrees, translations stay in
    metres, as OpenSim reads motions. Coordinates the motion does not hold keep their
    default value. Returns ``(time (N,), q (N, nq) in model.coordinate_names order, report)``
    with ``report = {"missing": [...], "ignored": [...]}``: the coordinates at their default
    and the columns that are not coordinates. InvalidInputError when no column matches.
    """
    index = {n: i for i, n in enumerate(model.coordinate_names)}
    columns, ignored = {}, []
    for j, label in enumerate(motion.names):
        c = _column_coordinate(label)
        if c in index and c not in columns:
            columns[c] = j
        else:
            ignored.append(label)
    if not columns:
        raise InvalidInputError(
            f"motion {motion.name!r}: none of its columns {list(motion.names)[:8]} is a "
            f"coordinate of model {model.name!r} ({list(model.coordinate_names)[:8]}...); "
            "load the motion that belongs to this model")
    rotational = {label: bool(_column_coordinate(label) in index and
                              model.is_rotational(_column_coordinate(label)))
                  for label in motion.names}
    values = motion.values_in_radians(rotational)
    q = np.tile(model.default_q(), (len(motion.time), 1))
    for c, j in columns.items():
        q[:, index[c]] = values[:, j]
    missing = [c for c in model.coordinate_names if c not in columns]
    return np.array(motion.time, dtype=float), q, {"missing": missing, "ignored": ignored}
