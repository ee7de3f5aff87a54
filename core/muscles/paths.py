"""Geometry paths as OpenSim defines them (``GeometryPath``): points fixed in bodies, points
active inside a coordinate range, points moving with a coordinate, and wrap surfaces; their
world points, length, lengthening speed and moment arms at any pose.

Path points
-----------
* :class:`PathPoint`: ``location`` (3,) fixed in ``body``'s frame;
* :class:`ConditionalPathPoint`: a PathPoint that is part of the path while its
  ``coordinate`` lies in ``range`` (OpenSim's test, ``lo - 1e-5 <= q <= hi + 1e-5``,
  ``ConditionalPathPoint::isActive``);
* :class:`MovingPathPoint`: its x, y, z in the frame ``frame`` (pose in the body, identity for
  the body frame) are functions of coordinates (``functions[k] = (coordinate, function)``, or
  None to keep ``location[k]``), each coordinate clamped to its range first
  (``MovingPathPoint::getLocation``).

The path at a pose (``GeometryPath::computePath``): the active points in order, then each
:class:`PathWrap` in turn inserts the two tangent points of its wrap object on the segment of
its range that the wrap lengthens least (``GeometryPath::applyWrapObjects``, up to 8 passes
over several wraps until the length changes by less than 0.5 mm). Its length is the sum of
the straight segments plus the arcs over wrap surfaces
(``calcLengthAfterPathComputation``).

Moment arms
-----------
OpenSim's ``MomentArmSolver``: a unit tension in the path pulls each point towards its
neighbours on other bodies (``GeometryPath::produceForces``); the moment arm about a
coordinate is the generalized force of those point forces,

    r_k = sum_i f_i . dp_i/dq_k  =  -dL/dq_k,

with ``dp/dq_k = w_k x p + v_k`` from the world twists of the joints' body Jacobians ``S``
(:func:`path_kinematics`), plus, for a moving point, its own motion in its body
(``f . R df/dq``). Tangent points on a wrap surface are held fixed on it: the length is
stationary in them, so the derivative is exact. A conditional point switching makes the
length kink; the moment arm is the one of the path active at the pose, as in OpenSim.
Coordinates are independent here (a model's constraints do not couple them).
The lengthening speed is ``dL/dt = -r . v``.
"""

import dataclasses
import math

import numpy as np

from ..errors import InvalidInputError

__all__ = ["PathPoint", "ConditionalPathPoint", "MovingPathPoint", "PathWrap",
           "GeometryPath", "Muscle", "PathKinematics", "PathState", "MUSCLE_KINDS",
           "WRAP_METHODS", "path_kinematics", "path_geometry", "path_length",
           "lengthening_speed", "moment_arms", "path_generalized_forces"]

#: OpenSim muscle classes whose paths and parameters are read (older ones by name)
MUSCLE_KINDS = ("Thelen2003Muscle", "Millard2012EquilibriumMuscle",
                "Millard2012AccelerationMuscle", "DeGrooteFregly2016Muscle",
                "RigidTendonMuscle", "Schutte1993Muscle_Deprecated",
                "Delp1990Muscle_Deprecated", "Thelen2003Muscle_Deprecated",
                "ContDerivMuscle_Deprecated")
#: OpenSim's PathWrap methods (the ellipsoid's algorithms; the others ignore it)
WRAP_METHODS = ("hybrid", "midpoint", "axial")
#: a conditional point is active this far outside its range (ConditionalPathPoint::isActive)
CONDITIONAL_SLACK = 1e-5


# ----------------------------------------------------------------------------- data model
@dataclasses.dataclass
class PathPoint:
    """A point fixed in ``body``: ``location`` (3,) in the body frame (m)."""

    body: str
    location: np.ndarray
    name: str = ""

    def __post_init__(self):
        self.location = np.asarray(self.location, dtype=float).reshape(3)
        if not np.all(np.isfinite(self.location)):
            raise InvalidInputError(f"path point {self.name!r}: its location "
                                    f"{self.location.tolist()} must be finite")


@dataclasses.dataclass
class ConditionalPathPoint(PathPoint):
    """A path point active while ``coordinate`` is inside ``range = (lo, hi)``."""

    coordinate: str = ""
    range: tuple = (-math.inf, math.inf)

    def __post_init__(self):
        super().__post_init__()
        lo, hi = (float(v) for v in self.range)
        if not lo <= hi:
            raise InvalidInputError(
                f"conditional path point {self.name!r}: its range [{lo:g}, {hi:g}] of "
                f"{self.coordinate!r} has its minimum above its maximum; swap them")
        self.range = (lo, hi)


@dataclasses.dataclass
class MovingPathPoint(PathPoint):
    """A path point whose x, y, z (in ``frame``, a pose in the body) are functions of
    coordinates: ``functions[k] = (coordinate name, core.joints.opensim function)`` or None
    (then ``location[k]`` is used)."""

    functions: tuple = (None, None, None)
    frame: np.ndarray = dataclasses.field(default_factory=lambda: np.eye(4))

    def __post_init__(self):
        super().__post_init__()
        self.functions = tuple(self.functions)
        self.frame = np.asarray(self.frame, dtype=float)
        if len(self.functions) != 3:
            raise InvalidInputError(f"moving path point {self.name!r}: give three functions "
                                    "(x, y, z), None for a fixed component")


@dataclasses.dataclass
class PathWrap:
    """The path wraps over ``wrap_object`` between its points ``range = (start, end)``
    (OpenSim's 1-based indices into the path's points; -1 for the first / last point)
    with ``method`` (one of :data:`WRAP_METHODS`)."""

    wrap_object: str
    method: str = "hybrid"
    range: tuple = (-1, -1)
    name: str = ""

    def __post_init__(self):
        if self.method not in WRAP_METHODS:
            raise InvalidInputError(f"path wrap {self.name!r}: method {self.method!r} is not "
                                    f"one of {WRAP_METHODS}")
        self.range = tuple(int(v) for v in self.range)


@dataclasses.dataclass
class GeometryPath:
    """Points (PathPoint and subclasses, in order) and wraps (PathWrap, in order)."""

    points: list
    wraps: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Muscle:
    """A muscle as read: OpenSim class ``kind``, its path, the Hill parameters every muscle
    class names the same way (N, m, rad, optimal fibre lengths per second), and ``extra``:
    its other scalar properties as written (tag -> text)."""

    name: str
    kind: str
    path: GeometryPath
    max_isometric_force: float = 1000.0
    optimal_fiber_length: float = 0.1
    tendon_slack_length: float = 0.2
    pennation_angle_at_optimal: float = 0.0
    max_contraction_velocity: float = 10.0
    extra: dict = dataclasses.field(default_factory=dict)


# ----------------------------------------------------------------------------- kinematics
@dataclasses.dataclass
class PathKinematics:
    """What paths need of a pose: ``q`` (nq,), ``coordinates`` (names in q order),
    ``ranges`` (nq, 2), ``poses`` {body: (4, 4) in ground}, ``jacobians`` {body: (6, nq)}:
    the world twist ``[w; v]`` (v at the world origin) of the body per unit speed of each
    coordinate, so that a point p fixed in the body moves by ``dp/dq_k = w_k x p + v_k``,
    and ``wrap_objects`` {name: WrapObject}."""

    q: np.ndarray
    coordinates: tuple
    ranges: np.ndarray
    poses: dict
    jacobians: dict
    wrap_objects: dict

    def index(self, coordinate, where):
        try:
            return self.coordinates.index(coordinate)
        except ValueError:
            raise InvalidInputError(f"{where}: coordinate {coordinate!r} is not in the model; "
                                    f"its coordinates are {list(self.coordinates)}") from None


def path_kinematics(model, q=None):
    """:class:`PathKinematics` of an OpenSim model (:class:`core.io.osim.OsimModel`) at ``q``
    (anything ``model.q_from`` takes; default values when None). Every path function takes
    this in place of the model to share one evaluation among many paths."""
    if isinstance(model, PathKinematics):
        return model
    q = model.default_q() if q is None else model.q_from(q)
    nq = len(q)
    poses = {"ground": np.eye(4)}
    jac = {"ground": np.zeros((6, nq))}
    start = 0
    for j in model.joints:
        n = len(j.coordinates)
        G, S = j.joint.evaluate(q[start:start + n])[:2] if n else (j.joint.transform(
            np.zeros(0)), np.zeros((6, 0)))
        T_M = poses[j.parent] @ j.parent_offset @ G
        J = jac[j.parent].copy()
        if n:
            R, o = T_M[:3, :3], T_M[:3, 3]
            w = R @ S[:3]
            J[:3, start:start + n] = w
            J[3:, start:start + n] = R @ S[3:] + np.cross(o, w.T).T
        poses[j.child] = T_M @ _inv(j.child_offset)
        jac[j.child] = J
        start += n
    ranges = np.array([c.range for c in model.coordinates.values()], dtype=float).reshape(-1, 2)
    return PathKinematics(q=q, coordinates=tuple(model.coordinates), ranges=ranges,
                          poses=poses, jacobians=jac,
                          wrap_objects=getattr(model, "wrap_objects", {}))


def _inv(T):
    out = np.eye(4)
    out[:3, :3] = T[:3, :3].T
    out[:3, 3] = -T[:3, :3].T @ T[:3, 3]
    return out


# ----------------------------------------------------------------------------- the path
@dataclasses.dataclass
class PathState:
    """A path at one pose.

    points (K, 3): the world points in order, wrap tangent points and arc samples included;
    bodies: the body each of ``points`` moves with (a wrap point: its wrap object's body);
    length (m); nodes: the path's points as OpenSim's current path holds them (active points
    and tangent points, no arc samples): ``_Node`` records used for the forces.
    """

    points: np.ndarray
    bodies: tuple
    length: float
    nodes: list


@dataclasses.dataclass
class _Node:
    body: str
    p: np.ndarray                 # world position (3,)
    moving: tuple = ()            # ((coordinate index, world dp/dq (3,)), ...)
    wrap: str = ""                # wrap object of a tangent point
    arc: np.ndarray = None        # world arc samples ending at this tangent point
    arc_length: float = 0.0


def _point_node(kin, point, where):
    T = kin.poses.get(point.body)
    if T is None:
        raise InvalidInputError(f"{where}: path point {point.name!r} is on body {point.body!r}, "
                                "which the model does not have")
    if not isinstance(point, MovingPathPoint):
        return _Node(point.body, T[:3, :3] @ point.location + T[:3, 3])
    local = point.location.copy()
    derivative = {}
    for k, item in enumerate(point.functions):
        if item is None:
            continue
        coordinate, f = item
        i = kin.index(coordinate, f"{where}: moving path point {point.name!r}")
        lo, hi = kin.ranges[i]
        x = kin.q[i]
        local[k] = float(f.value(min(max(x, lo), hi)))
        if lo <= x <= hi:
            d = np.zeros(3)
            d[k] = float(f.derivative(x))
            derivative[i] = derivative.get(i, 0.0) + d
    R = T[:3, :3] @ point.frame[:3, :3]
    p = R @ local + T[:3, :3] @ point.frame[:3, 3] + T[:3, 3]
    return _Node(point.body, p, tuple((i, R @ d) for i, d in derivative.items()))


def _is_active(kin, point, where):
    if not isinstance(point, ConditionalPathPoint):
        return True
    x = kin.q[kin.index(point.coordinate, f"{where}: conditional path point {point.name!r}")]
    lo, hi = point.range
    return lo - CONDITIONAL_SLACK <= x <= hi + CONDITIONAL_SLACK


def path_geometry(model, q, path, where="path"):
    """The path at ``q`` as a :class:`PathState` (``model``: an OsimModel or the
    :class:`PathKinematics` of one at a pose, then ``q`` is ignored)."""
    kin = path_kinematics(model, q)
    if len(path.points) < 2:
        raise InvalidInputError(f"{where}: a path needs at least two points, it has "
                                f"{len(path.points)}")
    active = [i for i, pt in enumerate(path.points) if _is_active(kin, pt, where)]
    nodes = [_point_node(kin, path.points[i], where) for i in active]
    if path.wraps:
        nodes = _apply_wraps(kin, path, active, nodes, where)
    return _state(nodes)


def _apply_wraps(kin, path, active, nodes, where):
    raise InvalidInputError(f"{where}: wrapping is not computed yet")


def _state(nodes):
    points, bodies, length = [nodes[0].p], [nodes[0].body], 0.0
    for a, b in zip(nodes[:-1], nodes[1:]):
        if b.wrap and a.wrap == b.wrap:
            length += b.arc_length
            if b.arc is not None and len(b.arc):
                points.extend(b.arc)
                bodies.extend([b.body] * len(b.arc))
        else:
            length += float(np.linalg.norm(b.p - a.p))
        points.append(b.p)
        bodies.append(b.body)
    return PathState(np.array(points), tuple(bodies), length, nodes)


def path_length(model, q, path, where="path"):
    """Length of the path at ``q`` (m)."""
    return path_geometry(model, q, path, where).length


def _generalized(kin, state):
    """Generalized forces ``(nq,)`` of a unit tension in the path: ``-dL/dq``."""
    nq = len(kin.q)
    wrench = {}
    Q = np.zeros(nq)
    nodes = state.nodes
    for a, b in zip(nodes[:-1], nodes[1:]):
        if b.wrap and a.wrap == b.wrap:
            continue
        d = b.p - a.p
        norm = float(np.linalg.norm(d))
        u = d / norm if norm > 0.0 else np.full(3, np.nan)
        if a.body != b.body:
            for node, f in ((a, u), (b, -u)):
                w = wrench.setdefault(node.body, np.zeros(6))
                w[:3] += np.cross(node.p, f)
                w[3:] += f
        for node, f in ((a, u), (b, -u)):
            for i, dp in node.moving:
                Q[i] += float(f @ dp)
    for body, w in wrench.items():
        Q += w @ kin.jacobians[body]
    return Q


def moment_arms(model, q, path, coordinates=None, where="path"):
    """Moment arms (m, or dimensionless about a translation) about ``coordinates`` (names;
    default: all of the model's, in q order): ``-dL/dq`` by OpenSim's sign convention
    (``GeometryPath::computeMomentArm``), from the path's geometry and the joints' S."""
    kin = path_kinematics(model, q)
    Q = _generalized(kin, path_geometry(kin, None, path, where))
    if coordinates is None:
        return Q
    return np.array([Q[kin.index(c, where)] for c in coordinates])


def lengthening_speed(model, q, v, path, where="path"):
    """``dL/dt`` (m/s) at coordinates ``q`` and speeds ``v`` (nq,)."""
    kin = path_kinematics(model, q)
    v = np.asarray(v, dtype=float)
    if v.shape != kin.q.shape or not np.all(np.isfinite(v)):
        raise InvalidInputError(f"{where}: the speeds must be {len(kin.q)} finite numbers, "
                                f"got shape {v.shape}")
    return -float(_generalized(kin, path_geometry(kin, None, path, where)) @ v)


def path_generalized_forces(model, q, path, tension, where="path"):
    """Generalized forces ``(nq,)`` of a path pulling with ``tension`` (N): ``tension * r``
    (a path in tension pulls its points together, ``r = -dL/dq``)."""
    return float(tension) * moment_arms(model, q, path, where=where)

