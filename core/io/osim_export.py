"""OpenSim model files (.osim) written from an :class:`~core.io.osim.OsimModel`.

:func:`export_osim` builds an OpenSim 4.x document (``<OpenSimDocument Version="40000">``, the
layout of the files OpenSim 4 writes: ``Ground``, ``BodySet``, ``JointSet`` with each joint's
two ``PhysicalOffsetFrame``\\ s, ``ConstraintSet``) with :mod:`xml.etree.ElementTree`, so
every name is escaped; :func:`osim_document` returns its text and :func:`write_osim` writes it
through :func:`~core.io.files.atomic_write` after the whole document is built, so a model that
cannot be exported leaves the file system untouched. :func:`write_model_motion` writes a
motion of the model's coordinates as OpenSim does (angles in degrees, ``inDegrees=yes``).

Frames are those of :mod:`core.io.osim`: a joint moves its child frame M in its parent frame
F by the core joint ``X_FM(q)``; the parent and child offsets P and C are written as
``translation`` plus body-fixed X-Y-Z ``orientation`` (:func:`~core.io.osim.pose_to_offset`).

Joints, by the type of the core joint ``OsimJoint.joint``:

* ``Fixed`` -> ``WeldJoint``;
* ``Revolute`` about ``a`` -> ``PinJoint``, ``Prismatic`` along ``a`` -> ``SliderJoint``,
  ``Universal`` with orthonormal axes -> ``UniversalJoint``: OpenSim's joint turns about z
  (slides along x; turns about x then y), so both offsets are post-multiplied by a rotation
  ``Q`` taking those axes onto the core joint's (``Q = I`` when they already agree), which
  leaves ``P X_FM C^-1 = (P Q) (Q^T X_FM Q) (C Q)^-1`` unchanged. A Universal whose axes are
  not orthonormal becomes a CustomJoint with the same two axes;
* :class:`~core.joints.opensim.CustomJoint`, ``EllipsoidJoint``, ``ScapulothoracicJoint`` ->
  themselves, with their axes, functions and parameters;
* a 1-DOF spline joint (:class:`~core.joints.spline_curve.SplineCurveJoint`, or a
  :class:`~core.joints.spline_surface.SplineJoint` of one coordinate) -> a CustomJoint of six
  ``SimmSpline``\\ s of the coordinate sampled from the joint (:func:`_sampled_axes`,
  :func:`_fit_simm_splines`), with knots added until the CustomJoint's pose is within
  ``tolerance`` of the spline joint's over the coordinate's range;
* a 2-DOF :class:`~core.joints.spline_surface.SplineJoint` -> a CustomJoint whose six axes
  are OpenSim 4.6 ``MultivariatePolynomialFunction``\\ s of both coordinates (total order up
  to :data:`MAX_POLYNOMIAL_ORDER`), refused when no order reaches ``tolerance``. OpenSim 4.6
  reads such an axis (``<coordinates>a b</coordinates>``), and so does
  :func:`core.io.osim.read_osim` (as a :class:`~core.joints.opensim.CustomJoint` with
  :class:`~core.joints.opensim.MultivariatePolynomialFunction` axes);
* anything else raises :class:`~core.errors.InvalidInputError` naming the joint.

Sampled joints. The rotation of ``X_FM(q) = [R(q), p(q)]`` is written as
``R_ref B Rx(t1) Ry(t2) Rz(t3) B^T`` (axes ``rotation1..3`` = the columns of the orthonormal
``B``, ``R_ref`` folded into the parent offset) and its translation as ``p = p_x e_x + p_y
e_y + p_z e_z`` along F's axes (written in the rotated parent frame as the rows of
``R_ref``). ``B`` comes from the principal directions of the rotation vectors
``log(R_ref^T R(q))`` over the range (the dominant axis first), trying every ordering of them
with ``R_ref = I`` and then with ``R_ref = R(q_mid)`` until the middle angle stays within
:data:`MAX_MIDDLE_ANGLE` of 0 (away from gimbal lock at ``pi/2``); the angles are unwrapped
along the samples. The sampling covers the spline joint's domain (its knot box) within the
coordinate's range: the range beyond the domain, where the spline joint extrapolates, is
left to OpenSim's own extrapolation of the functions.

Markers are written as a 4.x MarkerSet (each on its body's frame), inside the model or alone
as a MarkerSet file (:func:`write_marker_set`). Muscles (:attr:`OsimModel.muscles`) are
written to the ForceSet under their class, with their GeometryPath (PathPoint,
ConditionalPathPoint, MovingPathPoint on body frames; PathWrap), their Hill parameters and
their other properties as read; wrap objects to their bodies' WrapObjectSet. What the file
does not hold: the reader's skipped components (other forces and constraints), which the
model no longer has; coordinates' ``motion_type`` (OpenSim 4 derives
it from the joint); a ``NaturalCubicSpline`` is written under the name OpenSim 4.6 reads it
as, ``SimmSpline``.
"""

import dataclasses
import itertools
import math
import xml.etree.ElementTree as ET

import numpy as np

from ..errors import InvalidInputError
from ..fitting.metric import pose_errors
from ..joints.opensim import MultivariatePolynomialFunction
from ..lie import se3, so3
from .files import atomic_write
from .osim import GROUND, pose_to_offset

__all__ = ["export_osim", "osim_document", "write_osim", "write_marker_set",
           "write_model_motion", "OsimExport", "JointConversion", "DEFAULT_TOLERANCE",
           "MAX_MIDDLE_ANGLE", "MAX_KNOTS",
           "MAX_POLYNOMIAL_ORDER", "VERSION"]

#: the document version written: OpenSim 4.0's layout, which every 4.x release reads
VERSION = "40000"
#: default ``tolerance`` of sampled joints: (metres, radians) of the joint pose X_FM
DEFAULT_TOLERANCE = (1e-6, 1e-5)
#: the largest |middle X-Y-Z angle| accepted for a sampled joint's rotation axes: 60 degrees
#: leaves the angles' rates (1 / cos t2) within a factor 2 of the joint's own
MAX_MIDDLE_ANGLE = math.radians(60.0)
#: knots a sampled 1-DOF joint's SimmSplines may reach before the export is refused
MAX_KNOTS = 2000
#: the largest total order of the polynomials of a 2-DOF joint (45 coefficients per axis)
MAX_POLYNOMIAL_ORDER = 8
#: knots of the first SimmSplines of a 1-DOF joint, refined by bisection from there
_INITIAL_KNOTS = 5
#: points at which a sampled 1-DOF joint is checked: this many per knot interval, plus a
#: uniform grid of _DENSE over the range
_PER_INTERVAL = 7
_DENSE = 2001
#: the grid of a 2-DOF joint: fitted at _SURFACE_FIT x _SURFACE_FIT, checked on a grid
#: twice as fine (so half the check points lie between the fitted ones)
_SURFACE_FIT = 41
#: Universal axes closer to orthonormal than this are written as an OpenSim UniversalJoint
_ORTHONORMAL_TOL = 1e-12
_CREDITS = "Written by Spline Joints (Blender extension)"


@dataclasses.dataclass(frozen=True)
class JointConversion:
    """How a joint without an exact OpenSim counterpart was written.

    joint: its name; source: the core joint's class; functions: the OpenSim function class
    of its axes (``"SimmSpline"`` or ``"MultivariatePolynomialFunction"``); size: knots per
    SimmSpline, or the polynomials' total order; max_position_error (m) and
    max_angle_error (rad): the written CustomJoint's pose error against the joint over the
    checked grid of its range (X_FM, as evaluated by :class:`core.joints.opensim.CustomJoint`
    or the polynomials); points: how many poses were checked.
    """

    joint: str
    source: str
    functions: str
    size: int
    max_position_error: float
    max_angle_error: float
    points: int


@dataclasses.dataclass(frozen=True)
class OsimExport:
    """An exported document: ``text`` (the .osim file) and ``conversions`` (a tuple of
    :class:`JointConversion`, one per sampled joint, in joint order)."""

    text: str
    conversions: tuple


# ----------------------------------------------------------------------------- entry points
def export_osim(model, *, tolerance=DEFAULT_TOLERANCE):
    """The OpenSim 4.x document of ``model`` (:class:`~core.io.osim.OsimModel`).

    tolerance: ``(metres, radians)``, both > 0: the largest pose error of a sampled joint
    (module docstring) over its range. Returns :class:`OsimExport`. InvalidInputError names
    the first joint that cannot be written (and what to do) or the tolerance that is wrong.
    """
    tol = _tolerance(tolerance)
    root = ET.Element("OpenSimDocument", Version=VERSION)
    m = _sub(root, "Model", name=model.name)
    ground = _sub(m, "Ground", name=GROUND)
    if GROUND in model.bodies:
        _geometry(ground, model.bodies[GROUND])
    _wrap_objects(ground, model, GROUND)
    _text(m, "gravity", _numbers(model.gravity))
    _text(m, "credits", f"{_CREDITS} from the model {model.name}")
    _text(m, "length_units", "meters")
    _text(m, "force_units", "N")
    bodies = _sub(_sub(m, "BodySet", name="bodyset"), "objects")
    for body in model.bodies.values():
        if body.name != GROUND:
            _wrap_objects(_body(bodies, body), model, body.name)
    joints = _sub(_sub(m, "JointSet", name="jointset"), "objects")
    conversions = []
    for j in model.joints:
        report = _joint(joints, model, j, tol)
        if report is not None:
            conversions.append(report)
    constraints = _sub(_sub(m, "ConstraintSet", name="constraintset"), "objects")
    for c in model.couplers:
        _coupler(constraints, c)
    forces = _sub(_sub(m, "ForceSet", name="forceset"), "objects")
    for muscle in model.muscles.values():
        _muscle(forces, model, muscle)
    markers = _sub(_sub(m, "MarkerSet", name="markerset"), "objects")
    for marker in model.markers.values():
        _marker(markers, marker)
    ET.indent(root, space="\t")
    text = '<?xml version="1.0" encoding="UTF-8" ?>\n' + ET.tostring(root, encoding="unicode")
    return OsimExport(text + "\n", tuple(conversions))


def osim_document(model, *, tolerance=DEFAULT_TOLERANCE):
    """The text of :func:`export_osim`."""
    return export_osim(model, tolerance=tolerance).text


def write_osim(path, model, **kw):
    """Write ``model`` to the .osim file ``path`` (keywords as :func:`export_osim`).

    The document is built completely before anything is written, then written atomically:
    on any error ``path`` is neither created nor changed. Returns the conversions
    (:attr:`OsimExport.conversions`).
    """
    export = export_osim(model, **kw)
    atomic_write(path, export.text)
    return export.conversions


def write_marker_set(path, markers, name="markerset"):
    """Write ``markers`` (``{name: Marker}``) to ``path`` as an OpenSim 4.x MarkerSet file
    (what ``Model::writeMarkerFile`` writes; :func:`core.io.markers.read_marker_set` and
    OpenSim read it back), atomically."""
    root = ET.Element("OpenSimDocument", Version=VERSION)
    objects = _sub(_sub(root, "MarkerSet", name=name), "objects")
    for marker in markers.values():
        _marker(objects, marker)
    ET.indent(root, space="\t")
    atomic_write(path, '<?xml version="1.0" encoding="UTF-8" ?>\n'
                 + ET.tostring(root, encoding="unicode") + "\n")


def write_model_motion(path, model, time, q, name=None):
    """Write a motion of ``model``'s coordinates to the .mot file ``path``, as OpenSim does:
    rotational coordinates in degrees (``inDegrees=yes``), translations in metres.

    time: (N,); q: (N, nq) in ``model.coordinate_names`` order, radians and metres.
    Written by :func:`core.io.motion.write_motion` (atomic).
    """
    from .motion import write_motion

    q = np.asarray(q, dtype=float)
    if q.ndim != 2 or q.shape[1] != model.nq:
        raise InvalidInputError(f"model {model.name!r}: q must have shape (N, {model.nq}) "
                                f"(one column per coordinate, in the model's order), got "
                                f"{q.shape}")
    rotational = np.array([model.is_rotational(n) for n in model.coordinate_names])
    values = np.where(rotational, np.degrees(q), q)
    write_motion(path, model.coordinate_names, time, values, in_degrees=True, name=name)


def _tolerance(tolerance):
    try:
        pos, ang = (float(t) for t in tolerance)
    except (TypeError, ValueError):
        pos = ang = math.nan
    if not (pos > 0 and ang > 0 and math.isfinite(pos) and math.isfinite(ang)):
        raise InvalidInputError(f"tolerance must be (metres, radians), two positive numbers, "
                                f"e.g. {DEFAULT_TOLERANCE}; got {tolerance!r}")
    return pos, ang


# ----------------------------------------------------------------------------- XML helpers
def _sub(parent, tag, **attrib):
    return ET.SubElement(parent, tag, attrib)


def _text(parent, tag, value):
    el = ET.SubElement(parent, tag)
    el.text = value
    return el


def _numbers(values):
    """Shortest exact decimals, space-separated (reading gives the same float64)."""
    return " ".join(repr(float(v)) for v in np.ravel(values))


def _flag(value):
    return "true" if value else "false"


def _offset(parent, tag, name, socket, T):
    frame = _sub(parent, tag, name=name)
    t, o = pose_to_offset(T)
    _text(frame, "socket_parent", socket)
    _text(frame, "translation", _numbers(t))
    _text(frame, "orientation", _numbers(o))
    return frame


def _unique(name, used):
    out, k = name, 1
    while out in used:
        k += 1
        out = f"{name}_{k}"
    used.add(out)
    return out


# ----------------------------------------------------------------------------- bodies
def _marker(parent, marker):
    el = _sub(parent, "Marker", name=marker.name)
    frame = "/ground" if marker.body == GROUND else f"/bodyset/{marker.body}"
    _text(el, "socket_parent_frame", frame)
    _text(el, "location", _numbers(marker.location))
    _text(el, "fixed", _flag(marker.fixed))


def _body(parent, body):
    el = _sub(parent, "Body", name=body.name)
    _geometry(el, body)
    _text(el, "mass", repr(float(body.mass)))
    _text(el, "mass_center", _numbers(body.com))
    I = body.inertia
    _text(el, "inertia", _numbers([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]))
    return el


# ----------------------------------------------------------------------------- muscles
def _frame_path(body):
    return "/ground" if body == GROUND else f"/bodyset/{body}"


def _wrap_objects(el, model, body):
    objects = [w for w in model.wrap_objects.values() if w.body == body]
    if not objects:
        return
    parent = _sub(_sub(el, "WrapObjectSet", name="wrapobjectset"), "objects")
    for w in objects:
        wel = _sub(parent, w.kind, name=w.name)
        translation, rotation = pose_to_offset(w.pose)
        _text(wel, "active", _flag(w.active))
        _text(wel, "xyz_body_rotation", _numbers(rotation))
        _text(wel, "translation", _numbers(translation))
        _text(wel, "quadrant", w.quadrant)
        if w.kind == "WrapEllipsoid":
            _text(wel, "dimensions", _numbers(w.radii))
        else:
            _text(wel, "radius", repr(float(w.radius)))
        if w.kind == "WrapCylinder":
            _text(wel, "length", repr(float(w.length)))


def _coordinate_path(model, name):
    return f"/jointset/{model.coordinates[name].joint}/{name}"


def _muscle(parent, model, muscle):
    from ..muscles.paths import ConditionalPathPoint, MovingPathPoint

    el = _sub(parent, muscle.kind, name=muscle.name)
    gp = _sub(el, "GeometryPath", name="geometrypath")
    points = _sub(_sub(gp, "PathPointSet"), "objects")
    for k, point in enumerate(muscle.path.points):
        name = point.name or f"{muscle.name}-P{k + 1}"
        pel = _sub(points, type(point).__name__, name=name)
        _text(pel, "socket_parent_frame", _frame_path(point.body))
        if isinstance(point, MovingPathPoint):
            if not np.array_equal(point.frame, np.eye(4)):
                raise InvalidInputError(
                    f"muscle {muscle.name!r}: moving path point {name!r} is placed in a frame "
                    "offset from its body, which the export does not write; express its "
                    "functions in the body frame")
            for axis, item, value in zip("xyz", point.functions, point.location):
                if item is not None:
                    _text(pel, f"socket_{axis}_coordinate", _coordinate_path(model, item[0]))
            for axis, item, value in zip("xyz", point.functions, point.location):
                spec = {"type": "Constant", "value": float(value)} if item is None else \
                    item[1].to_dict()
                _function(_sub(pel, f"{axis}_location"), spec, name=None)
            continue
        _text(pel, "location", _numbers(point.location))
        if isinstance(point, ConditionalPathPoint):
            _text(pel, "socket_coordinate", _coordinate_path(model, point.coordinate))
            _text(pel, "range", _numbers(point.range))
    wraps = _sub(_sub(gp, "PathWrapSet"), "objects")
    for k, w in enumerate(muscle.path.wraps):
        wel = _sub(wraps, "PathWrap", name=w.name or f"{muscle.name}-wrap{k + 1}")
        _text(wel, "wrap_object", w.wrap_object)
        _text(wel, "method", w.method)
        _text(wel, "range", " ".join(str(int(v)) for v in w.range))
    for key in ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length",
                "pennation_angle_at_optimal", "max_contraction_velocity"):
        _text(el, key, repr(float(getattr(muscle, key))))
    for key, value in muscle.extra.items():
        if value.startswith("<"):
            el.append(ET.fromstring(value))
        else:
            _text(el, key, value)


def _geometry(el, body):
    """The body's geometry: on the body itself, or on a PhysicalOffsetFrame component of it
    where the geometry's pose is not the identity."""
    on_body = [g for g in body.geometry if np.array_equal(g.pose, np.eye(4))]
    framed = [g for g in body.geometry if not np.array_equal(g.pose, np.eye(4))]
    names = set()
    if framed:
        comps = _sub(el, "components")
        for g in framed:
            frame = _offset(comps, "PhysicalOffsetFrame", _unique(f"{g.name}_frame", names),
                            "..", g.pose)
            _shapes(_sub(frame, "attached_geometry"), [g], set())
    if on_body:
        _shapes(_sub(el, "attached_geometry"), on_body, set())


def _shapes(parent, geometry, names):
    for g in geometry:
        el = _sub(parent, g.kind, name=_unique(g.name or g.kind, names))
        _text(el, "socket_frame", "..")
        _text(el, "scale_factors", _numbers(g.scale))
        look = _sub(el, "Appearance")
        _text(look, "visible", _flag(g.visible))
        _text(look, "opacity", repr(float(g.opacity)))
        _text(look, "color", _numbers(g.color))
        if g.kind == "Mesh":
            _text(el, "mesh_file", g.mesh_file)
        for prop, values in g.dimensions.items():
            _text(el, prop, _numbers(values))


# ----------------------------------------------------------------------------- functions
def _function(parent, spec, name="function"):
    """A function dict (``to_dict()`` of :mod:`core.joints.opensim`, or a
    ``MultivariatePolynomialFunction`` dict) as the element the reader's ``_Reader.function``
    parses."""
    kind = "SimmSpline" if spec["type"] == "NaturalCubicSpline" else spec["type"]
    el = _sub(parent, kind, **({"name": name} if name else {}))
    if kind == "Constant":
        _text(el, "value", repr(float(spec["value"])))
    elif kind in ("LinearFunction", "PolynomialFunction"):
        _text(el, "coefficients", _numbers(spec["coefficients"]))
    elif kind in ("SimmSpline", "PiecewiseLinearFunction"):
        _text(el, "x", _numbers(spec["x"]))
        _text(el, "y", _numbers(spec["y"]))
    elif kind == "MultiplierFunction":
        _function(_sub(el, "function"), spec["function"], name=None)
        _text(el, "scale", repr(float(spec["scale"])))
    elif kind == "MultivariatePolynomialFunction":
        _text(el, "coefficients", _numbers(spec["coefficients"]))
        _text(el, "dimension", str(int(spec["dimension"])))
        _text(el, "order", str(int(spec["order"])))
    else:
        raise AssertionError(kind)
    return el


def _coupler(parent, c):
    el = _sub(parent, "CoordinateCouplerConstraint", name=c.name)
    _text(el, "isEnforced", _flag(c.enforced))
    _function(_sub(el, "coupled_coordinates_function"), c.function.to_dict(), name=None)
    _text(el, "independent_coordinate_names", " ".join(c.independent))
    _text(el, "dependent_coordinate_name", c.dependent)
    _text(el, "scale_factor", "1")


# ----------------------------------------------------------------------------- joints
def _coordinates(el, model, names):
    coords = _sub(el, "coordinates")
    for n in names:
        c = model.coordinates[n]
        ce = _sub(coords, "Coordinate", name=n)
        _text(ce, "default_value", repr(float(c.default)))
        _text(ce, "default_speed_value", repr(float(c.default_speed)))
        if all(math.isfinite(v) for v in c.range):
            _text(ce, "range", _numbers(c.range))
        _text(ce, "clamped", _flag(c.clamped))
        _text(ce, "locked", _flag(c.locked))


def _joint(parent, model, j, tol):
    """Append joint ``j``; returns its :class:`JointConversion` or None when exact."""
    kind, Q_parent, Q_child, fill, report = _plan(model, j, tol)
    el = _sub(parent, kind, name=j.name)
    pname = f"{j.parent}_offset"
    cname = _unique(f"{j.child}_offset", {pname})
    _text(el, "socket_parent_frame", pname)
    _text(el, "socket_child_frame", cname)
    _coordinates(el, model, j.coordinates)
    frames = _sub(el, "frames")
    body_path = {n: ("/ground" if n == GROUND else f"/bodyset/{n}") for n in (j.parent, j.child)}
    _offset(frames, "PhysicalOffsetFrame", pname, body_path[j.parent], j.parent_offset @ Q_parent)
    _offset(frames, "PhysicalOffsetFrame", cname, body_path[j.child], j.child_offset @ Q_child)
    fill(el)
    return report


def _rotation(R):
    return se3.from_rp(R, np.zeros(3))


def _turn_onto(axis, k):
    """The shortest rotation taking ``e_k`` onto the unit ``axis`` (the identity when they
    agree; a half turn about another basis axis when opposite), ``(3, 3)``."""
    e = np.eye(3)[k]
    c = float(np.dot(e, axis))
    w = np.cross(e, axis)
    s = float(np.linalg.norm(w))
    if s == 0.0:
        return np.eye(3) if c > 0 else so3.exp(np.pi * np.eye(3)[(k + 1) % 3])
    return so3.exp(w / s * math.atan2(s, c))


def _plan(model, j, tol):
    """``(OpenSim class, Q_parent (4, 4), Q_child (4, 4), fill(element), conversion)``:
    the offsets are written as ``P Q_parent`` and ``C Q_child``."""
    from ..joints import opensim as osj
    from ..joints.lower_pairs import Fixed, Prismatic, Revolute, Universal
    from ..joints.spline_curve import SplineCurveJoint
    from ..joints.spline_surface import SplineJoint

    J, I4 = j.joint, np.eye(4)
    names = j.coordinates

    def nothing(el):
        pass

    if type(J) is Fixed:
        return "WeldJoint", I4, I4, nothing, None
    if type(J) in (Revolute, Prismatic):
        k = 2 if type(J) is Revolute else 0
        Q = _rotation(_turn_onto(J.axis, k))
        return ("PinJoint" if k == 2 else "SliderJoint"), Q, Q, nothing, None
    if type(J) is Universal:
        a0, a1 = J.axis0, J.axis1
        if abs(float(np.dot(a0, a1))) <= _ORTHONORMAL_TOL:
            Q = _rotation(np.column_stack([a0, a1, np.cross(a0, a1)]))
            return "UniversalJoint", Q, Q, nothing, None
        axes = np.array([a0, a1, np.cross(a0, a1), *np.eye(3)])
        funcs = [osj.LinearFunction(), osj.LinearFunction()] + [osj.Constant(0.0)] * 4
        return "CustomJoint", I4, I4, _spatial(axes, funcs, [0, 1] + [None] * 4, names), None
    if type(J) is osj.CustomJoint:
        return "CustomJoint", I4, I4, _spatial(J.raw_axes, J.functions, J.arguments, names), \
            None
    if type(J) is osj.EllipsoidJoint:
        return "EllipsoidJoint", I4, I4, \
            lambda el: _text(el, "radii_x_y_z", _numbers(J.radii)), None
    if type(J) is osj.ScapulothoracicJoint:
        def scapulothoracic(el):
            _text(el, "thoracic_ellipsoid_radii_x_y_z", _numbers(J.radii))
            _text(el, "scapula_winging_axis_origin", _numbers(J.winging_origin))
            _text(el, "scapula_winging_axis_direction", repr(float(J.winging_direction)))
        return "ScapulothoracicJoint", I4, I4, scapulothoracic, None
    if isinstance(J, (SplineCurveJoint, SplineJoint)) and J.nq in (1, 2) \
            and len(names) == J.nq:
        lo, hi = _sampling_box(model, j)
        if J.nq == 1:
            R_ref, axes, fits, report = _fit_simm_splines(j, lo[0], hi[0], tol)
        else:
            R_ref, axes, fits, report = _fit_polynomials(j, lo, hi, tol)
        return "CustomJoint", _rotation(R_ref), I4, _spatial(
            axes, fits, [0] * 6 if J.nq == 1 else [(0, 1)] * 6, names), report
    raise InvalidInputError(
        f"joint {j.name!r} ({type(J).__name__}, {J.nq} coordinates) has no OpenSim "
        "counterpart the exporter writes: OpenSim takes Fixed, Revolute, Prismatic, Universal, "
        "OpenSim CustomJoint/EllipsoidJoint/ScapulothoracicJoint and 1- or 2-coordinate spline "
        "joints; replace it with one of those (e.g. fit a spline joint to its motion) and "
        "export again")


def _spatial(axes, functions, arguments, names):
    """fill(el) writing a SpatialTransform: six axes, function objects or dicts, each
    argument None, a coordinate index, or a tuple of indices."""
    def fill(el):
        st = _sub(el, "SpatialTransform")
        labels = ("rotation1", "rotation2", "rotation3",
                  "translation1", "translation2", "translation3")
        for label, a, f, arg in zip(labels, axes, functions, arguments):
            ax = _sub(st, "TransformAxis", name=label)
            idx = () if arg is None else arg if isinstance(arg, tuple) else (arg,)
            _text(ax, "coordinates", " ".join(names[i] for i in idx))
            _text(ax, "axis", _numbers(a))
            _function(ax, f if isinstance(f, dict) else f.to_dict())
    return fill


# ----------------------------------------------------------------------------- sampled joints
def _sampling_box(model, j):
    """Per coordinate (lo, hi): the spline joint's domain within the coordinate's range
    (the whole domain where they do not overlap)."""
    lo = np.array(j.joint.lower, dtype=float)
    hi = np.array(j.joint.upper, dtype=float)
    for i, n in enumerate(j.coordinates):
        a, b = model.coordinates[n].range
        if max(a, lo[i]) < min(b, hi[i]):
            lo[i], hi[i] = max(a, lo[i]), min(b, hi[i])
    return lo, hi


def _euler(R):
    """Body-fixed X-Y-Z angles of ``R: (..., 3, 3) -> (..., 3)``, each in (-pi, pi]."""
    from scipy.spatial.transform import Rotation

    shape = R.shape[:-2]
    return Rotation.from_matrix(R.reshape(-1, 3, 3)).as_euler("XYZ").reshape(shape + (3,))


def _rotation_axes(R, name):
    """``(R_ref, B, angles)`` for rotations ``R: (n1, [n2,] 3, 3)`` on a grid (module
    docstring): angles ``(n1, [n2,] 3)`` of ``B^T R_ref^T R B``, unwrapped along the grid.
    InvalidInputError when no choice keeps the middle angle within MAX_MIDDLE_ANGLE."""
    flat = R.reshape(-1, 3, 3)
    best = math.inf
    for R_ref in (np.eye(3), flat[len(flat) // 2]):
        rel = R_ref.T @ R
        w = so3.log(rel.reshape(-1, 3, 3))
        V = np.linalg.svd(w, full_matrices=True)[2].T
        for perm in itertools.permutations(range(3)):
            B = V[:, perm].copy()
            if np.linalg.det(B) < 0:
                B[:, 2] = -B[:, 2]
            angles = _euler(np.swapaxes(B, 0, 1) @ rel @ B)
            middle = float(np.abs(angles[..., 1]).max())
            best = min(best, middle)
            if middle <= MAX_MIDDLE_ANGLE:
                angles = np.unwrap(angles, axis=0)
                if angles.ndim == 3:
                    angles = np.unwrap(angles, axis=1)
                return R_ref, B, angles
    raise InvalidInputError(
        f"joint {name!r}: its rotation over the range cannot be written as three angles away "
        f"from gimbal lock (the best axes reach a middle angle of {math.degrees(best):.1f} "
        f"degrees, more than {math.degrees(MAX_MIDDLE_ANGLE):.0f}); narrow the coordinates' "
        "ranges")


def _axis_values(G, R_ref, B, reference):
    """The six axis values ``(N, 6)`` of poses ``G: (N, 4, 4)``: the angles (each the
    2 pi turn nearest ``reference (N, 3)``) then the translation in F."""
    a = _euler(B.T @ R_ref.T @ G[:, :3, :3] @ B)
    a += 2 * np.pi * np.round((reference - a) / (2 * np.pi))
    return np.concatenate([a, G[:, :3, 3]], axis=1)


def _sampled_axes(R_ref, B):
    """The six CustomJoint axes of a sampled joint in the parent frame rotated by R_ref:
    ``B``'s columns, then F's x, y, z (the rows of R_ref)."""
    return np.concatenate([B.T, R_ref], axis=0)


def _identity_axes_joint(axes):
    """A CustomJoint of six coordinates, one per axis with the identity function: its pose at
    ``q = v`` is that of any CustomJoint on ``axes`` whose axis values are v."""
    from ..joints.opensim import CustomJoint, LinearFunction

    return CustomJoint(axes, [LinearFunction()] * 6, list(range(6)), 6)


def _errors(G, target):
    pos, rot = pose_errors(G, target)
    return pos * 1e-3, np.radians(rot)


def _fit_simm_splines(j, lo, hi, tol):
    """SimmSplines of a 1-DOF joint over [lo, hi]: from _INITIAL_KNOTS uniform knots, bisect
    the knot interval of largest error (relative to ``tol``) until every check point is
    within tolerance. Returns (R_ref, axes (6, 3), functions, JointConversion)."""
    from ..joints.opensim import CustomJoint, SimmSpline

    J = j.joint
    dense = np.linspace(lo, hi, _DENSE)
    G_dense = J.transforms(dense[:, None])
    R_ref, B, angles = _rotation_axes(G_dense[:, :3, :3], j.name)
    axes = _sampled_axes(R_ref, B)
    rotate = _rotation(R_ref).T

    def target(q):
        return rotate @ J.transforms(q[:, None])

    def values(q):
        ref = np.stack([np.interp(q, dense, angles[:, k]) for k in range(3)], axis=1)
        return _axis_values(J.transforms(q[:, None]), R_ref, B, ref)

    frac = np.arange(1, _PER_INTERVAL + 1) / (_PER_INTERVAL + 1)
    knots = np.linspace(lo, hi, _INITIAL_KNOTS)
    v = values(knots)
    while True:
        joint = CustomJoint(axes, [SimmSpline(knots, v[:, k]) for k in range(6)], [0] * 6, 1)
        h = np.diff(knots)
        check = (knots[:-1, None] + h[:, None] * frac).ravel()
        pos, ang = _errors(joint.transforms(check[:, None]), target(check))
        worst = np.maximum(pos / tol[0], ang / tol[1]).reshape(-1, _PER_INTERVAL).max(axis=1)
        if worst.max() <= 1.0 or knots.size >= MAX_KNOTS:
            pos_d, ang_d = _errors(joint.transforms(dense[:, None]), rotate @ G_dense)
            pos_m, ang_m = max(pos.max(), pos_d.max()), max(ang.max(), ang_d.max())
            if pos_m > tol[0] or ang_m > tol[1]:
                raise InvalidInputError(
                    f"joint {j.name!r}: {knots.size} SimmSpline knots reach a pose error of "
                    f"{pos_m:.3g} m and {ang_m:.3g} rad, above the tolerance {tol}; loosen "
                    "the tolerance or export a smoother joint")
            report = JointConversion(j.name, type(J).__name__, "SimmSpline", knots.size,
                                     float(pos_m), float(ang_m), check.size + dense.size)
            return R_ref, axes, joint.functions, report
        i = int(np.argmax(worst))
        mid = 0.5 * (knots[i] + knots[i + 1])
        knots = np.insert(knots, i + 1, mid)
        v = np.insert(v, i + 1, values(np.array([mid]))[0], axis=0)


def _fit_polynomials(j, lo, hi, tol):
    """MultivariatePolynomialFunctions of a 2-DOF joint on the box [lo, hi]: least squares
    per axis value on a _SURFACE_FIT^2 grid, orders 1.. MAX_POLYNOMIAL_ORDER until the pose
    error on the twice finer grid is within ``tol``. Returns (R_ref, axes, function dicts,
    JointConversion)."""
    J = j.joint
    fine = [np.linspace(lo[a], hi[a], 2 * _SURFACE_FIT - 1) for a in range(2)]
    X, Y = np.meshgrid(*fine, indexing="ij")
    G = J.transforms(np.stack([X.ravel(), Y.ravel()], axis=1)).reshape(X.shape + (4, 4))
    R_ref, B, angles = _rotation_axes(G[..., :3, :3], j.name)
    axes = _sampled_axes(R_ref, B)
    values = np.concatenate([angles, G[..., :3, 3]], axis=-1).reshape(-1, 6)
    on_fit = np.zeros(X.shape, dtype=bool)
    on_fit[::2, ::2] = True
    on_fit = on_fit.ravel()
    x, y = X.ravel(), Y.ravel()
    target = _rotation(R_ref).T @ G.reshape(-1, 4, 4)
    evaluator = _identity_axes_joint(axes)
    best = (math.inf, math.inf, 0)
    for order in range(1, MAX_POLYNOMIAL_ORDER + 1):
        A = MultivariatePolynomialFunction.terms_of(np.stack([x, y], axis=-1), order)
        scale = np.abs(A[on_fit]).max(axis=0)
        coef = np.linalg.lstsq(A[on_fit] / scale, values[on_fit], rcond=None)[0] / scale[:, None]
        pos, ang = _errors(evaluator.transforms(A @ coef), target)
        if max(pos.max() / tol[0], ang.max() / tol[1]) < max(best[0] / tol[0],
                                                              best[1] / tol[1]):
            best = (float(pos.max()), float(ang.max()), order)
        if pos.max() <= tol[0] and ang.max() <= tol[1]:
            fits = [{"type": "MultivariatePolynomialFunction", "coefficients": coef[:, k],
                     "dimension": 2, "order": order} for k in range(6)]
            report = JointConversion(j.name, type(J).__name__,
                                     "MultivariatePolynomialFunction", order,
                                     float(pos.max()), float(ang.max()), x.size)
            return R_ref, axes, fits, report
    raise InvalidInputError(
        f"joint {j.name!r}: polynomials of total order up to {MAX_POLYNOMIAL_ORDER} in its two "
        f"coordinates reach at best a pose error of {best[0]:.3g} m and {best[1]:.3g} rad "
        f"(order {best[2]}), above the tolerance {tuple(tol)}; OpenSim has no spline of two "
        "coordinates: loosen the tolerance or narrow the coordinates' ranges")
