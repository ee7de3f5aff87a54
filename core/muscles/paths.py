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
Coordinates are independent here (a model's constraints do not couple them, where
OpenSim's solver moves the coupled coordinates along), and ``r`` is per unit rate of each
coordinate; OpenSim's is per unit of its generalized speed ``u``, which differs for an
ellipsoid mobilizer (the scapulothoracic joint: ``r_OpenSim = N^T r``, ``q' = N u``).
The lengthening speed is ``dL/dt = -r . v`` (but see :func:`lengthening_speed`).
"""

import dataclasses
import math

import numpy as np

from ..errors import InvalidInputError
from ..lie import so3
from . import wrap

__all__ = ["PathPoint", "ConditionalPathPoint", "MovingPathPoint", "PathWrap",
           "GeometryPath", "Muscle", "PathKinematics", "PathState", "MUSCLE_KINDS",
           "WRAP_METHODS", "path_kinematics", "path_geometry", "path_length",
           "lengthening_speed", "moment_arms", "path_measures", "PathSet",
           "path_generalized_forces",
           "spanned_coordinates"]

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
_EPS = np.finfo(float).eps


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


def path_kinematics(model, q=None, coordinates=None, wrap_objects=None):
    """:class:`PathKinematics` of a model at ``q``; every path function takes this in place
    of the model to share one evaluation among many paths.

    model: an OpenSim model (:class:`core.io.osim.OsimModel`; ``q`` anything its ``q_from``
    takes, default values when None; points in its bodies' frames, its wrap objects), or a
    core tree (:class:`core.model.Model`, e.g. a rig: ``q`` (nq,), neutral when None; points
    in its bodies' frames, the world named ``"ground"``; ``coordinates`` names its q for
    conditional and moving points, default ``"q0"``, ``"q1"``, ...; ``wrap_objects``
    ``{name: WrapObject}`` on its bodies).
    """
    if isinstance(model, PathKinematics):
        return model
    if hasattr(model, "q_from"):
        return _osim_kinematics(model, q)
    from ..kinematics import body_jacobian, forward_kinematics

    model.compile()
    q = model.neutral() if q is None else model.check_state(q)
    names = tuple(f"q{i}" for i in range(model.nq)) if coordinates is None else \
        tuple(coordinates)
    if len(names) != model.nq:
        raise InvalidInputError(f"model {model.name!r}: name its {model.nq} coordinates, got "
                                f"{len(names)} names")
    data = model.create_data()
    forward_kinematics(model, data, q)
    poses = {"ground": np.eye(4)}
    jac = {"ground": np.zeros((6, model.nq))}
    for i, name in enumerate(model.names):
        poses[name] = data.oMi[i].copy()
        jac[name] = body_jacobian(model, data, name, frame="world")
    return PathKinematics(q=np.array(q, dtype=float), coordinates=names,
                          ranges=np.column_stack([model.lower, model.upper]), poses=poses,
                          jacobians=jac, wrap_objects=dict(wrap_objects or {}))


def _osim_kinematics(model, q):
    q = model.default_q() if q is None else model.q_from(q)
    nq = len(q)
    poses = {"ground": np.eye(4)}
    jac = {"ground": np.zeros((6, nq))}
    start = 0
    for j in model.joints:
        n = len(j.coordinates)
        G, S = j.joint.motion(q[start:start + n]) if n else (j.joint.transform(
            np.zeros(0)), np.zeros((6, 0)))
        T_M = poses[j.parent] @ j.parent_offset @ G
        J = jac[j.parent].copy()
        if n:
            R, o = T_M[:3, :3], T_M[:3, 3]
            w = R @ S[:3]
            J[:3, start:start + n] = w
            J[3:, start:start + n] = R @ S[3:] + so3.cross(o, w.T).T
        poses[j.child] = T_M @ _inv(j.child_offset)
        jac[j.child] = J
        start += n
    ranges = np.array([c.range for c in model.coordinates.values()], dtype=float).reshape(-1, 2)
    return PathKinematics(q=q, coordinates=tuple(model.coordinates), ranges=ranges,
                          poses=poses, jacobians=jac, wrap_objects=model.wrap_objects)


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
    p: np.ndarray                 # world position (3,): where its force acts
    g: np.ndarray = None          # world position for lengths and directions (see _freeze)
    moving: tuple = ()            # ((coordinate index, world dp/dq (3,)), ...)
    index: int = -1               # the path point's index in GeometryPath.points
    wrap: str = ""                # a tangent point: its wrap object
    owner: int = -1               # a tangent point: the index of its PathWrap
    arc: np.ndarray = None        # the second tangent point: world arc from the first
    arc_length: float = 0.0


def _point_node(kin, point, where):
    T = kin.poses.get(point.body)
    if T is None:
        raise InvalidInputError(f"{where}: path point {point.name!r} is on body {point.body!r}, "
                                "which the model does not have")
    if not isinstance(point, MovingPathPoint):
        p = T[:3, :3] @ point.location + T[:3, 3]
        return _Node(point.body, p, p)
    local = point.location.copy()
    derivative = {}
    for k, item in enumerate(point.functions):
        if item is None:
            continue
        coordinate, f = item
        i = kin.index(coordinate, f"{where}: moving path point {point.name!r}")
        lo, hi = kin.ranges[i]
        x = float(kin.q[i])
        local[k], slope, _ = f.at(min(max(x, lo), hi))
        if lo <= x <= hi:
            d = np.zeros(3)
            d[k] = slope
            derivative[i] = derivative.get(i, 0.0) + d
    R = T[:3, :3] @ point.frame[:3, :3]
    p = R @ local + T[:3, :3] @ point.frame[:3, 3] + T[:3, 3]
    return _Node(point.body, p, p, tuple((i, R @ d) for i, d in derivative.items()))


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
    nodes = []
    for i, pt in enumerate(path.points):
        if _is_active(kin, pt, where):
            nodes.append(_point_node(kin, pt, where))
            nodes[-1].index = i
    if path.wraps:
        nodes = _apply_wraps(kin, path, nodes, where)
    return _state(nodes)


def _length(nodes):
    length = 0.0
    for a, b in zip(nodes[:-1], nodes[1:]):
        if b.wrap and a.wrap == b.wrap:
            length += b.arc_length
        else:
            length += math.sqrt(float((b.g - a.g) @ (b.g - a.g)))
    return length


def _freeze(frozen, *nodes):
    """Give tangent points their ground location as OpenSim does: ``Point::
    getLocationInGround`` caches a point's location the first time it is asked in a state,
    and a tangent point moved by a later pass keeps it (its force still acts where the
    point is). With one wrap nothing moves after the first ask; with several the length
    and the force directions use the tangent points of the pass that first asked."""
    for node in nodes:
        if node.g is None:
            key = (node.owner, node.arc is not None)
            node.g = frozen.setdefault(key, node.p)


def _apply_wraps(kin, path, nodes, where):
    """Insert the wraps' tangent points as ``GeometryPath::applyWrapObjects`` does: each wrap
    in turn (its old tangent points removed) tries the segments between the first and last
    active points of its range, takes a mandatory wrap at once or else the wrap that
    lengthens the path least; over several wraps up to 8 passes until the length changes by
    less than 0.5 mm, the first two swapped after the first pass when the first did not
    wrap and the second found a point inside its surface."""
    wraps = path.wraps
    objects = []
    for w in wraps:
        obj = kin.wrap_objects.get(w.wrap_object)
        if obj is None:
            raise InvalidInputError(f"{where}: path wrap {w.name!r} wraps over "
                                    f"{w.wrap_object!r}, which the model does not have")
        if obj.body not in kin.poses:
            raise InvalidInputError(f"{where}: wrap object {obj.name!r} is on body "
                                    f"{obj.body!r}, which the model does not have")
        objects.append(obj)
    n = len(wraps)
    single = n == 1
    order = list(range(n))
    result = [wrap.NO_WRAP] * n
    frozen = {}
    last_length = math.inf
    count = len(path.points)
    for kk in range(1 if n < 2 else 8):
        for i in range(n):
            k = order[i]
            ws, obj = wraps[k], objects[k]
            result[i] = wrap.NO_WRAP
            nodes = [node for node in nodes if node.owner != k]
            if not obj.active:
                continue
            lo = 0 if ws.range[0] < 1 else ws.range[0] - 1
            hi = count - 1 if ws.range[1] < 1 else ws.range[1] - 1
            indices = [node.index for node in nodes if node.owner < 0 and lo <= node.index <= hi]
            if not indices:
                return nodes
            start = next(j for j, node in enumerate(nodes) if node.index == indices[0] and
                         node.owner < 0)
            end = next(j for j, node in enumerate(nodes) if node.index == indices[-1] and
                       node.owner < 0)
            T = kin.poses[obj.body] @ obj.pose
            Tinv = _inv(T)
            best, best_at, least = None, -1, math.inf
            for j in range(start, end):
                a, b = nodes[j], nodes[j + 1]
                if a.wrap and b.wrap and a.wrap == b.wrap:
                    continue
                pa = Tinv[:3, :3] @ a.p + Tinv[:3, 3]
                pb = Tinv[:3, :3] @ b.p + Tinv[:3, 3]
                wr = wrap.wrap_line(obj, pa, pb, ws.method, single)
                result[i] = wr if isinstance(wr, int) else wr.code
                if result[i] == wrap.MANDATORY_WRAP:
                    best, best_at = wr, j
                    break
                if result[i] == wrap.WRAPPED:
                    _freeze(frozen, a, b)
                    R, o = T[:3, :3], T[:3, 3]
                    change = (wrap.norm(a.g - R @ wr.r1 - o) + wr.length
                              + wrap.norm(b.g - R @ wr.r2 - o) - wrap.norm(a.g - b.g))
                    if change < least:
                        best, best_at, least = wr, j, change
            if best is not None:
                R, o = T[:3, :3], T[:3, 3]
                first = _Node(obj.body, R @ best.r1 + o, frozen.get((k, False)), wrap=obj.name,
                              owner=k)
                second = _Node(obj.body, R @ best.r2 + o, frozen.get((k, True)), wrap=obj.name,
                               owner=k, arc=best.arc @ R.T + o, arc_length=best.length)
                nodes[best_at + 1:best_at + 1] = [first, second]
        _freeze(frozen, *nodes)
        length = _length(nodes)
        if abs(length - last_length) < 0.0005:
            break
        last_length = length
        if kk == 0 and n > 1 and result[0] == wrap.NO_WRAP and \
                result[1] == wrap.INSIDE_RADIUS:
            order[0], order[1] = 1, 0
            nodes = [node for node in nodes if node.owner != 0]
    return nodes


def _state(nodes):
    points, bodies = [nodes[0].g], [nodes[0].body]
    for a, b in zip(nodes[:-1], nodes[1:]):
        if b.wrap and a.wrap == b.wrap:
            inner = b.arc[1:-1]
            points.extend(inner)
            bodies.extend([b.body] * len(inner))
        points.append(b.g)
        bodies.append(b.body)
    return PathState(np.array(points), tuple(bodies), _length(nodes), nodes)


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
        d = b.g - a.g
        norm = wrap.norm(d)
        u = d / norm if norm > 0.0 else np.full(3, np.nan)
        if a.body != b.body:
            for node, f in ((a, u), (b, -u)):
                w = wrench.setdefault(node.body, np.zeros(6))
                w[:3] += so3.cross(node.p, f)
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
    """``dL/dt`` (m/s) at coordinates ``q`` and coordinate rates ``v`` (nq,), as
    ``GeometryPath::getLengtheningSpeed``: over consecutive points, the rate of their distance
    (the component of their relative velocity along the segment). It is ``-r . v`` except on
    a path with several wraps, where OpenSim's segment directions come from the tangent
    points it first located (:func:`_freeze`) and its length, moment arm and speed do not
    agree; OpenSim's speed is the one given."""
    kin = path_kinematics(model, q)
    v = np.asarray(v, dtype=float)
    if v.shape != kin.q.shape or not np.all(np.isfinite(v)):
        raise InvalidInputError(f"{where}: the speeds must be {len(kin.q)} finite numbers, "
                                f"got shape {v.shape}")
    return _speed(kin, path_geometry(kin, None, path, where).nodes, v)


def path_measures(kin, path, v, where="path"):
    """``(length, lengthening speed, moment arms (nq,))`` of ``path`` from one
    :func:`path_geometry` of the pose ``kin`` (a :func:`path_kinematics`) and checked rates
    ``v`` (nq,): what :func:`path_length`, :func:`lengthening_speed` and :func:`moment_arms`
    give, with the path (its wraps included) located once instead of three times."""
    state = path_geometry(kin, None, path, where)
    return state.length, _speed(kin, state.nodes, v), _generalized(kin, state)


def _speed(kin, nodes, v):
    """``dL/dt`` over the located ``nodes`` at rates ``v`` (:func:`lengthening_speed`)."""
    twists = {}
    velocities = []
    for node in nodes:
        if node.body not in twists:
            twists[node.body] = kin.jacobians[node.body] @ v
        w, u = twists[node.body][:3], twists[node.body][3:]
        velocity = so3.cross(w, node.p) + u
        for i, dp in node.moving:
            velocity = velocity + dp * v[i]
        velocities.append(velocity)
    speed = 0.0
    for a, b, va, vb in zip(nodes[:-1], nodes[1:], velocities[:-1], velocities[1:]):
        d = b.g - a.g
        norm = math.sqrt(float(d @ d))
        rel = vb - va
        speed += wrap.norm(rel) if norm < _EPS else float(d @ rel) / norm
    return speed


def spanned_coordinates(model, path):
    """Names (in q order) of the coordinates the path's length can depend on: those of the
    joints between its bodies (its points' and wrap objects'), the coordinates moving its
    points and those switching its conditional points (``model``: an OsimModel)."""
    joint_of = {j.child: j for j in model.joints}
    bodies = {pt.body for pt in path.points}
    bodies |= {model.wrap_objects[w.wrap_object].body for w in path.wraps
               if w.wrap_object in model.wrap_objects}
    chains = []
    for body in bodies:
        chain = set()
        while body in joint_of:
            chain.add(joint_of[body].name)
            body = joint_of[body].parent
        chains.append(chain)
    between = set.union(*chains) - set.intersection(*chains) if chains else set()
    names = {c for j in model.joints if j.name in between for c in j.coordinates}
    for pt in path.points:
        if isinstance(pt, ConditionalPathPoint):
            names.add(pt.coordinate)
        if isinstance(pt, MovingPathPoint):
            names |= {item[0] for item in pt.functions if item is not None}
    return tuple(c for c in model.coordinate_names if c in names)


def path_generalized_forces(model, q, path, tension, where="path"):
    """Generalized forces ``(nq,)`` of a path pulling with ``tension`` (N): ``tension * r``
    (a path in tension pulls its points together, ``r = -dL/dq``)."""
    return float(tension) * moment_arms(model, q, path, where=where)



class PathSet:
    """Many paths of one OpenSim model measured together at a pose: ``measures(kin, v)``
    gives every path's length, lengthening speed and moment arms, what :func:`path_measures`
    gives path by path, with the paths without wraps batched: every point of every such path
    in one array, located by one transform of its body's pose (a moving point: its functions
    first), the active points' consecutive pairs inside a path its segments, and the point
    forces of a unit tension in each path summed into one wrench per path and body, then
    projected on the bodies' Jacobians at once. The same arithmetic as :func:`path_measures`
    but for the order of its sums; paths with wraps go through :func:`path_measures`.

    model: an OsimModel; paths: GeometryPaths; names: one per path, for messages. Raises
    InvalidInputError naming a point on a body or a coordinate the model does not have."""

    def __init__(self, model, paths, names):
        coordinates = tuple(model.coordinate_names)
        self.bodies = ("ground",) + tuple(j.child for j in model.joints)
        body_index = {b: i for i, b in enumerate(self.bodies)}
        self.names = tuple(names)
        self.wrapped = [(m, path) for m, path in enumerate(paths) if path.wraps]
        body, local, muscle, conditional, moving = [], [], [], [], []
        for m, (path, name) in enumerate(zip(paths, self.names)):
            where = f"muscle {name!r}"
            if len(path.points) < 2:
                raise InvalidInputError(f"{where}: a path needs at least two points, it has "
                                        f"{len(path.points)}")
            if path.wraps:
                continue
            for pt in path.points:
                if pt.body not in body_index:
                    raise InvalidInputError(f"{where}: path point {pt.name!r} is on body "
                                            f"{pt.body!r}, which the model does not have")
                k = len(body)
                body.append(body_index[pt.body])
                local.append(pt.location)
                muscle.append(m)
                if isinstance(pt, ConditionalPathPoint):
                    i = _coordinate(coordinates, pt.coordinate,
                                    f"{where}: conditional path point {pt.name!r}")
                    conditional.append((k, i, pt.range[0] - CONDITIONAL_SLACK,
                                        pt.range[1] + CONDITIONAL_SLACK))
                if isinstance(pt, MovingPathPoint):
                    functions = tuple(
                        (axis, _coordinate(coordinates, item[0],
                                           f"{where}: moving path point {pt.name!r}"), item[1])
                        for axis, item in enumerate(pt.functions) if item is not None)
                    moving.append((k, pt.location, pt.frame, functions))
        self.m = len(paths)
        self.body = np.array(body, dtype=int)
        self.local = np.array(local, dtype=float).reshape(-1, 3)
        self.muscle = np.array(muscle, dtype=int)
        self.conditional = conditional
        self.moving = moving
        self.always = np.ones(len(body), dtype=bool)

    def measures(self, kin, v):
        """``(lengths (m,), speeds (m,), arms (m, nq))`` at the pose ``kin`` (a
        :func:`path_kinematics` of the model) and checked rates ``v`` (nq,)."""
        nq, nb = len(kin.q), len(self.bodies)
        lengths, speeds, arms = np.zeros(self.m), np.zeros(self.m), np.zeros((self.m, nq))
        poses = np.stack([kin.poses[b] for b in self.bodies])
        J = np.stack([kin.jacobians[b] for b in self.bodies])          # (nb, 6, nq)
        R, o = poses[self.body, :3, :3], poses[self.body, :3, 3]
        P = np.einsum("kij,kj->ki", R, self.local) + o
        active = self.always.copy()
        q = kin.q
        for k, i, lo, hi in self.conditional:
            active[k] = lo <= q[i] <= hi
        twists = J @ v                                                  # (nb, 6)
        V = twists[self.body]
        vp = so3.cross(V[:, :3], P) + V[:, 3:]
        dP = []                                  # (point, coordinate, world dp/dq (3,))
        for k, location, frame, functions in self.moving:
            x = location.copy()
            rows = []
            for axis, i, f in functions:
                lo, hi = kin.ranges[i]
                xi = float(q[i])
                x[axis], slope, _ = f.at(min(max(xi, lo), hi))
                if lo <= xi <= hi:
                    rows.append((axis, i, slope))
            Rk = R[k] @ frame[:3, :3]
            P[k] = Rk @ x + R[k] @ frame[:3, 3] + o[k]
            vp[k] = so3.cross(V[k, :3], P[k]) + V[k, 3:]
            for axis, i, slope in rows:
                dp = Rk[:, axis] * slope
                dP.append((k, i, dp))
                vp[k] += dp * v[i]
        idx = np.flatnonzero(active)
        same = self.muscle[idx[:-1]] == self.muscle[idx[1:]]
        a, b = idx[:-1][same], idx[1:][same]
        seg_m = self.muscle[a]
        d = P[b] - P[a]
        norm = np.sqrt(np.einsum("si,si->s", d, d))
        lengths += np.bincount(seg_m, norm, minlength=self.m)
        rel = vp[b] - vp[a]
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = np.where(norm < _EPS, np.sqrt(np.einsum("si,si->s", rel, rel)),
                            np.einsum("si,si->s", d, rel) / norm)
            u = np.where(norm[:, None] > 0.0, d / norm[:, None], np.nan)
        speeds += np.bincount(seg_m, rate, minlength=self.m)
        F = np.zeros_like(P)
        across = self.body[a] != self.body[b]
        np.add.at(F, a[across], u[across])
        np.add.at(F, b[across], -u[across])
        wrench = np.concatenate([so3.cross(P, F), F], axis=1)         # (K, 6)
        slot = self.muscle * nb + self.body
        W = np.zeros((self.m * nb, 6))
        np.add.at(W, slot, wrench)
        arms += np.einsum("mbi,bij->mj", W.reshape(self.m, nb, 6), J)
        if dP:
            f = np.zeros_like(P)                 # every segment's force, bodies alike or not
            np.add.at(f, a, u)
            np.add.at(f, b, -u)
            for k, i, dp in dP:
                arms[self.muscle[k], i] += float(f[k] @ dp)
        for m, path in self.wrapped:
            lengths[m], speeds[m], arms[m] = path_measures(kin, path, v,
                                                           f"muscle {self.names[m]!r}")
        return lengths, speeds, arms


def _coordinate(coordinates, name, where):
    try:
        return coordinates.index(name)
    except ValueError:
        raise InvalidInputError(f"{where}: coordinate {name!r} is not in the model; its "
                                f"coordinates are {list(coordinates)}") from None
