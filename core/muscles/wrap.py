"""OpenSim's wrap objects: surfaces fixed to a body that a geometry path wraps over.

A :class:`WrapObject` is a WrapCylinder, WrapSphere or WrapEllipsoid at ``pose``
(4, 4) in its body's frame (OpenSim's ``translation`` and ``xyz_body_rotation``, body-fixed
X-Y-Z angles), with its ``quadrant`` (``"all"``, ``"x"``, ``"-x"``, ``"y"``, ... : the side of
the surface a path may wrap on) and its sizes (m): ``radius`` and ``length`` for a cylinder
(axis z, centred), ``radius`` for a sphere, ``radii`` (3,) for an ellipsoid (OpenSim's
``dimensions``).

:func:`wrap_line` wraps one straight segment, given by its ends in the wrap object's frame,
by OpenSim 4.6's algorithm for the surface (``WrapCylinder::wrapLine``,
``WrapSphere::wrapLine``, ``WrapEllipsoid::wrapLine``), step for step, so that the tangent
points are OpenSim's to rounding: the cylinder's spiral with its tangent points slid along
the axis until the path meets the surface within 0.1 degree (only when the path has more
than one wrap, as in OpenSim), the sphere's great circle, the ellipsoid's tangent points
found by Newton iterations in a plane chosen from the segment's direction ("axial"), a fan of
closest points ("midpoint" blends in, "hybrid" chooses by the direction) and its arc sampled
every millimetre. Their results are what OpenSim computes, including its approximations
(tangency within a tolerance, the sphere's sign when it wraps the long way).
"""

import dataclasses
import math

import numpy as np

from ..errors import InvalidInputError
from ..lie import so3

__all__ = ["WrapObject", "WrapResult", "WRAP_KINDS", "QUADRANTS", "NO_WRAP", "INSIDE_RADIUS",
           "WRAPPED", "MANDATORY_WRAP", "wrap_line", "norm"]

#: the wrap objects the reader imports
WRAP_KINDS = ("WrapCylinder", "WrapSphere", "WrapEllipsoid")
#: OpenSim's quadrant names (``"all"`` or a signed axis)
QUADRANTS = ("all", "x", "-x", "y", "-y", "z", "-z")
#: OpenSim's WrapAction codes
NO_WRAP, INSIDE_RADIUS, WRAPPED, MANDATORY_WRAP = 0, 1, 2, 3


@dataclasses.dataclass
class WrapObject:
    """A wrap surface on ``body`` (see the module docstring)."""

    name: str
    kind: str
    body: str
    pose: np.ndarray
    quadrant: str = "all"
    active: bool = True
    radius: float = 0.0
    length: float = 0.0
    radii: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))

    def __post_init__(self):
        where = f"wrap object {self.name!r} ({self.kind})"
        if self.kind not in WRAP_KINDS:
            raise InvalidInputError(f"{where}: the kind must be one of {WRAP_KINDS}")
        self.quadrant = str(self.quadrant).strip().lower().lstrip("+")
        if self.quadrant not in QUADRANTS:
            raise InvalidInputError(f"{where}: quadrant {self.quadrant!r} is not one of "
                                    f"{QUADRANTS}")
        self.pose = np.asarray(self.pose, dtype=float)
        self.radii = np.atleast_1d(np.asarray(self.radii, dtype=float))
        sizes = {"WrapCylinder": {"radius": self.radius, "length": self.length},
                 "WrapSphere": {"radius": self.radius},
                 "WrapEllipsoid": {"dimensions": self.radii}}[self.kind]
        for prop, value in sizes.items():
            value = np.atleast_1d(np.asarray(value, dtype=float))
            if value.size == 0 or not np.all(np.isfinite(value)) or np.any(value <= 0.0):
                raise InvalidInputError(f"{where}: its {prop} {value.tolist()} must be positive "
                                        "(m); give the surface its size")

    @property
    def axis_sign(self):
        """``(axis index, sign)`` of the quadrant; sign 0 for ``"all"``."""
        if self.quadrant == "all":
            return 0, 0
        return "xyz".index(self.quadrant[-1]), (-1 if self.quadrant.startswith("-") else 1)


@dataclasses.dataclass
class WrapResult:
    """One wrap of a segment, in the wrap object's frame: OpenSim's code (:data:`WRAPPED`
    or :data:`MANDATORY_WRAP`), the tangent points ``r1`` (on the side of the segment's first
    end) and ``r2``, the arc's length over the surface and its points ``arc`` (K, 3)."""

    code: int
    r1: np.ndarray
    r2: np.ndarray
    length: float
    arc: np.ndarray


def wrap_line(obj, p1, p2, method="hybrid", single=True):
    """Wrap the segment ``p1 -> p2`` (wrap frame, m) over ``obj`` as OpenSim does.

    ``single``: the path has only this wrap (OpenSim then leaves the cylinder's tangent
    points where the first construction puts them). Returns a :class:`WrapResult`, or the
    code :data:`NO_WRAP` / :data:`INSIDE_RADIUS` when the segment does not wrap.
    """
    p1 = np.asarray(p1, dtype=float)
    p2 = np.asarray(p2, dtype=float)
    if obj.kind == "WrapCylinder":
        return _cylinder(obj, p1, p2, single)
    if obj.kind == "WrapSphere":
        return _sphere(obj, p1, p2)
    return _ellipsoid(obj, p1, p2, method)


# ----------------------------------------------------------------------------- helpers
#: OpenSim's ROUNDOFF_ERROR (SimmMacros.h), its test for "equal"
_ROUNDOFF = 2e-13
_EPS = np.finfo(float).eps


def _sign(x):
    """OpenSim's DSIGN: 1 for x >= 0, else -1."""
    return 1 if x >= 0.0 else -1


def _acos(x):
    """acos as C's: NaN outside [-1, 1]."""
    return math.acos(x) if -1.0 <= x <= 1.0 else math.nan


def _norm2(v):
    """``|v|^2`` of a 3-vector as a float."""
    return float(v @ v)


def norm(v):
    """``|v|`` of a 3-vector as a float."""
    return math.sqrt(float(v @ v))


def _unit(v):
    """``(v / |v|, |v|)``, the zero vector below machine epsilon (WrapMath::NormalizeOrZero)."""
    n = math.sqrt(float(v @ v))
    return (v / n if n >= _EPS else np.zeros(3)), n


def _closest_on_line(pt, line_pt, line):
    """Closest point to ``pt`` on the line through ``line_pt`` along ``line``
    (WrapMath::GetClosestPointOnLineToPoint) and its parameter along the unit direction."""
    v1, mag = _unit(pt - line_pt)
    v2, mag2 = _unit(line)
    t = float(v1 @ v2) * mag
    return line_pt + t * v2, (t / mag2 if mag2 else math.nan)


def _closest_on_axis(pt):
    """:func:`_closest_on_line` of ``pt`` on the cylinder's axis (through ``_AXIS_POINT``
    along the unit ``_AXIS``), by the same arithmetic with its zero products dropped."""
    v1, mag = _unit(pt - _AXIS_POINT)
    return np.array([0.0, 0.0, _AXIS_POINT[2] + float(v1[2]) * mag])


def _intersect_lines(p1, p2, p3, p4):
    """Closest points of the lines p1-p2 and p3-p4 (WrapMath::IntersectLines):
    ``(point on the first, s, point on the second, t)`` with s, t along the segments;
    NaN parameters for parallel lines."""
    vec1, mag1 = _unit(p2 - p1)
    vec2, mag2 = _unit(p4 - p3)
    cross = so3.cross(vec1, vec2)
    denom = float(cross @ cross)
    if abs(denom) <= _ROUNDOFF:
        return np.full(3, np.nan), math.nan, np.full(3, np.nan), math.nan
    d = p3 - p1                                 # det [d; v; cross] = d . (v x cross)
    t = float(d @ so3.cross(vec1, cross)) / denom
    q2 = p3 + t * vec2
    s = float(d @ so3.cross(vec2, cross)) / denom
    q1 = p1 + s * vec1
    return q1, s / mag1, q2, t / mag2


def _intersect_segment_plane(a, b, normal, d):
    """Where the segment a-b meets the plane ``normal . x + d = 0``
    (WrapMath::IntersectLineSegPlane), or None."""
    vec = b - a
    dot = float(vec @ normal)
    if abs(dot) < 1e-5:
        return None
    t = (-d - float(normal @ a)) / dot
    if t < -1e-5 or t > 1.0 + 1e-5:
        return None
    return a + t * vec


def _rot_z(angle):
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


# ----------------------------------------------------------------------------- cylinder
_AXIS_POINT = np.array([0.0, 0.0, -1.0])
_AXIS = np.array([0.0, 0.0, 1.0])
_TANGENCY = 0.1 * math.pi / 180.0
_MAX_SPIRAL_ITERATIONS = 100


def _distance2_to_axis(p):
    return float(p[0] * p[0] + p[1] * p[1])


def _cylinder(obj, P1, P2, single):
    R = obj.radius
    r2 = R * R
    axis, sign = obj.axis_sign
    constrained = sign != 0
    if _distance2_to_axis(P1) < r2 or _distance2_to_axis(P2) < r2:
        return INSIDE_RADIUS
    half = 0.5 * obj.length
    near12, t12, near00, _ = _intersect_lines(P1, P2, np.array([0.0, 0.0, -half]),
                                              np.array([0.0, 0.0, half]))
    crosses = float((near12 - near00) @ (near12 - near00)) < r2 and 0.0 < t12 < 1.0
    code = WRAPPED
    if not constrained:
        if not crosses:
            return NO_WRAP
        code = MANDATORY_WRAP
    p11 = _closest_on_axis(P1)
    p22 = _closest_on_axis(P2)
    candidates = []
    for P, pa in ((P1, p11), (P2, p22)):
        vv, p_dist = _unit(P - pa)
        dist = R * (R / p_dist)
        pp = pa + dist * vv
        dist = math.sqrt(r2 - dist * dist)
        uu = so3.cross(_AXIS, vv)
        candidates.append((pp + dist * uu, pp - dist * uu, p_dist))
    (r1a, r1b, p11_dist), (r2a, r2b, p22_dist) = candidates
    far_side = long_wrap = False
    if constrained:
        if _sign(P1[axis]) == sign or _sign(P2[axis]) == sign:
            if crosses:
                code = MANDATORY_WRAP
            elif _sign(P1[axis]) != _sign(P2[axis]) and _sign(near12[axis]) != sign:
                code = WRAPPED
            else:
                return NO_WRAP
        r1am, r1bm, r2am, r2bm = r1a - p11, r1b - p11, r2a - p22, r2b - p22
        alpha = _acos(float(r1am @ r2bm) / (norm(r1am) * norm(r2bm)))
        beta = _acos(float(r1bm @ r2am) / (norm(r1bm) * norm(r2am)))
        on = [_sign(v[axis]) == sign for v in (r1a, r1b, r2a, r2b)]
        if on[0] and on[1]:
            pick_b = on[2]
        elif on[0] != on[1]:
            pick_b = on[1]
        elif on[2]:
            pick_b = True
        elif on[3]:
            pick_b = False
        else:
            pick_b = not alpha > beta
        if pick_b:                                      # r1b with r2a
            r1, r2 = r1b, r2a
            far_side = not alpha > beta
        else:                                           # r1a with r2b
            r1, r2 = r1a, r2b
            far_side = alpha > beta
        if not (on[0] or on[1] or on[2] or on[3]):
            far_side = True
        sum_musc = (r1 - P1) + (r2 - P2)
        sum_r = (r1 - p11) + (r2 - p22)
        long_wrap = float(sum_r @ sum_musc) < 0.0
    else:
        units = [_unit(v)[0] for v in (r1a - p11, r1b - p11, r2a - p22, r2b - p22)]
        d1, d2, d3, d4 = (float(units[i] @ units[j]) for i, j in ((0, 2), (0, 3), (1, 2),
                                                                  (1, 3)))
        if d1 > d2 and d1 > d3 and d1 > d4:
            r1, r2 = r1a, r2a
        elif d2 > d3 and d2 > d4:
            r1, r2 = r1a, r2b
        elif d3 > d4:
            r1, r2 = r1b, r2a
        else:
            r1, r2 = r1b, r2b
    # the apex: where the plane of the two ends meets the cylinder between them
    t = p11_dist / (p11_dist + p22_dist)
    mpt = P1 + t * (P2 - P1)
    axispt = _closest_on_axis(mpt)
    l1, _ = _unit(P1 - axispt)
    l2, _ = _unit(P2 - axispt)
    normal, _ = _unit(_unit(so3.cross(l1, l2))[0])
    vert1, _ = _unit(so3.cross(_AXIS, normal))
    vert2, _ = _unit(so3.cross(normal, _AXIS))
    apex1, apex2 = axispt + R * vert1, axispt + R * vert2
    dist1 = float((mpt - apex1) @ (mpt - apex1))
    dist2 = float((mpt - apex2) @ (mpt - apex2))
    if far_side:
        apex = apex2 if dist1 < dist2 else apex1
    else:
        apex = apex1 if dist1 < dist2 else apex2
    uu, _ = _unit(P1 - apex)
    vv, _ = _unit(P2 - apex)
    normal = _unit(so3.cross(uu, vv))[0]
    d = -float(P1 @ normal)
    r1p = _intersect_segment_plane(r1 - 10.0 * _AXIS, r1 + 10.0 * _AXIS, normal, d)
    r2p = _intersect_segment_plane(r2 - 10.0 * _AXIS, r2 + 10.0 * _AXIS, normal, d)
    span = float((p11 - p22) @ (p11 - p22))
    if r1p is not None:
        c, _ = _closest_on_line(r1p, p11, p22)
        if float((c - p22) @ (c - p22)) < span:
            r1 = r1p
    if r2p is not None:
        c, _ = _closest_on_line(r2p, p11, p22)
        if float((c - p11) @ (c - p11)) < span:
            r2 = r2p
    if (r1[2] < -half or r1[2] > half) and (r2[2] < -half or r2[2] > half):
        return NO_WRAP
    r1, r2, length, arc = _spiral(R, P1, P2, r1.copy(), r2.copy(), long_wrap, single)
    return WrapResult(code, r1, r2, length, arc)


def _spiral(R, P1, P2, r1, r2, far_side, single):
    """The spiral over the cylinder from r1 to r2 (WrapCylinder::_make_spiral_path), its
    tangent points slid until the path is tangent within 0.1 degree (several wraps only)."""
    sense = -1.0 if far_side else 1.0
    for iteration in range(_MAX_SPIRAL_ITERATIONS + 1):
        r1a = _closest_on_axis(r1)
        r2a = _closest_on_axis(r2)
        axial = float((r2a - r1a) @ _AXIS)
        uu, vv = r1 - r1a, r2 - r2a
        theta = math.atan2(float(so3.cross(uu, vv) @ _AXIS), float(uu @ vv))
        if far_side:
            theta = 2.0 * math.pi - theta
        length = math.sqrt((R * theta) ** 2 + axial * axial)

        def point(t):
            return _rot_z(sense * t * theta) @ r1 + _AXIS * (t * axial)

        n = max(int(length / 0.002), 1)
        if n > 1 and not single and iteration < _MAX_SPIRAL_ITERATIONS:
            moved1 = _adjust_tangent(P1, r1, point(1.0 / n))
            moved2 = _adjust_tangent(P2, r2, point(1.0 - 1.0 / n))
            if moved1 or moved2:
                continue
        arc = np.array([point(i / n) for i in range(n)] + [r2])
        return r1, r2, length, arc


def _adjust_tangent(P, r, w):
    """Slide the tangent point ``r`` (in place) along the axis when the line from P meets
    the spiral's first step ``w`` at more than 0.1 degree (WrapCylinder::_adjust_tangent_point)."""
    pr, _ = _unit(r - P)
    rw, _ = _unit(w - r)
    if not abs(_acos(float(pr @ _AXIS)) - _acos(float(rw @ _AXIS))) > _TANGENCY:
        return False
    pa, _ = _closest_on_line(P, r, _AXIS)
    wa, _ = _closest_on_line(w, r, _AXIS)
    _, _, q, _ = _intersect_lines(P, w, pa, wa)
    r += 1.5 * (q - r)
    return True


# ----------------------------------------------------------------------------- sphere
def _rx_column(angle, ra):
    """``(ra Rx(angle)^T)[:, 1]``: the second column of the frame ``ra`` turned about its
    first axis."""
    return math.cos(angle) * ra[:, 1] - math.sin(angle) * ra[:, 2]


def _sphere(obj, P1, P2):
    R = obj.radius
    axis, sign = obj.axis_sign
    n1, n2 = norm(P1), norm(P2)
    if n1 < R or n2 < R:
        return INSIDE_RADIUS
    ri = P1 - P2
    mp = -P2
    a = float(ri @ ri)
    b = -2.0 * float(mp @ ri)
    c = float(mp @ mp) - R * R
    disc = b * b - 4.0 * a * c
    if disc < 0.0:
        return NO_WRAP
    l1 = (-b + math.sqrt(disc)) / (2.0 * a)
    l2 = (-b - math.sqrt(disc)) / (2.0 * a)
    if not (0.0 < l1 < 1.0) or not (0.0 < l2 < 1.0) or l1 < l2:
        return NO_WRAP
    p1p2, _ = _unit(P1 - P2)
    np2, _ = _unit(P2)
    hp2 = so3.cross(p1p2, np2)
    far_side = False
    if norm(hp2) < 1e-5:
        # the segment passes through the centre: OpenSim keeps its previous tangent points,
        # which a path evaluated at one pose does not have
        return NO_WRAP
    n, _ = _unit(hp2)
    tangents = []
    for P, dist in ((P1, n1), (P2, n2)):
        y, _ = _unit(-P)
        ra = np.column_stack([n, y, so3.cross(n, y)])
        angle = math.asin(R / dist)
        reach = dist * math.cos(angle)
        tangents.append((P + _rx_column(angle, ra) * reach, P + _rx_column(-angle, ra) * reach))
    (r1a, r1b), (r2a, r2b) = tangents
    r1am, r1bm, r2am, r2bm = (_unit(v)[0] for v in (r1a, r1b, r2a, r2b))
    j1, j2, j3, j4 = (float(r1am @ r2am), float(r1am @ r2bm), float(r1bm @ r2am),
                      float(r1bm @ r2bm))
    if j1 > j2 and j1 > j3 and j1 > j4:
        r1, r2, r11, r22 = r1a, r2a, r1b, r2b
    elif j2 > j3 and j2 > j4:
        r1, r2, r11, r22 = r1a, r2b, r1b, r2a
    elif j3 > j4:
        r1, r2, r11, r22 = r1b, r2a, r1a, r2b
    else:
        r1, r2, r11, r22 = r1b, r2b, r1a, r2a
    code = WRAPPED
    if sign != 0:
        if _sign(P1[axis]) == sign or _sign(P2[axis]) == sign:
            mm, tt = _closest_on_line(np.zeros(3), P1, p1p2)
            tt = -tt
            if float(mm @ mm) < R * R and 0.0 < tt < 1.0:
                code = MANDATORY_WRAP
            elif _sign(P1[axis]) != _sign(P2[axis]) and _sign(mm[axis]) != sign:
                code = WRAPPED
            else:
                return NO_WRAP
        if _sign(P1[axis]) != sign or _sign(P2[axis]) != sign:
            wrapaxis = np.zeros(3)
            wrapaxis[axis] = sign
            sum_musc, _ = _unit(-P1 - P2)
            r1, r11 = (r1a, r1b) if float(r1am @ sum_musc) > float(r1bm @ sum_musc) else \
                (r1b, r1a)
            r2, r22 = (r2a, r2b) if float(r2am @ sum_musc) > float(r2bm @ sum_musc) else \
                (r2b, r2a)
            sum_musc, _ = _unit((r1 - P1) + (r2 - P2))
            if float(sum_musc @ wrapaxis) < 0.0:
                r1, r2 = r11, r22
            sum_musc = (r1 - P1) + (r2 - P2)
            far_side = float((r1 + r2) @ sum_musc) < 0.0
    r1n, _ = _unit(r1)
    r2n, _ = _unit(r2)
    angle = _acos(float(r1n @ r2n))
    if far_side:
        angle = -(2.0 * math.pi - angle)
    length = R * angle
    # the arc drawn: the great circle from r1 to r2, the long way when far_side
    axis3, _ = _unit(so3.cross(r1n, r2n))
    k = max(int(abs(length) / 0.002), 1)
    phis = np.linspace(0.0, angle, k + 1)
    arc = np.array([R * (math.cos(f) * r1n + math.sin(f) * so3.cross(axis3, r1n))
                    for f in phis])
    return WrapResult(code, r1.copy(), r2.copy(), length, arc)


# ----------------------------------------------------------------------------- ellipsoid
_MU_BLEND_MIN = 0.7073
_MU_BLEND_MAX = 0.9
_FAN_SAMPLES = 300
_SV_BOUNDARY_BLEND = 0.3
_ELLIPSOID_TINY = 1e-8


def _ellipsoid(obj, P1, P2, method):
    axis, sign = obj.axis_sign
    dims = obj.radii
    factor = 3.0 / float(dims.sum())
    p1, p2, a = P1 * factor, P2 * factor, dims * factor
    m = np.zeros(3)
    p1e = -1.0 + _norm2(p1 / a)
    p2e = -1.0 + _norm2(p2 / a)
    if p1e < -0.0001 or p2e < -0.0001:
        return INSIDE_RADIUS
    p1p2 = p1 - p2
    ppm = float(_unit(p1)[0] @ _unit(p2)[0]) - 1.0
    if abs(ppm) < 0.0001:
        return NO_WRAP
    f1, f2 = p1p2 / a, p2 / a
    aa, bb, cc = float(f1 @ f1), 2.0 * float(f1 @ f2), float(f2 @ f2) - 1.0
    disc = bb * bb - 4.0 * aa * cc
    if disc < 0.0:
        return NO_WRAP
    l1 = (-bb + math.sqrt(disc)) / (2.0 * aa)
    l2 = (-bb - math.sqrt(disc)) / (2.0 * aa)
    if not (0.0 < l1 < 1.0) or not (0.0 < l2 < 1.0):
        return NO_WRAP
    r1 = p2 + l1 * p1p2
    r2 = p2 + l2 * p1p2
    r1r2 = r2 - r1
    mu = np.abs(_unit(p1p2)[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (m - r1) / r1r2
    t_sv = [r1 + t[i] * r1r2 for i in range(3)]
    t_c1 = [_closest_point(a, dims, t_sv[i], np.zeros(3), i) for i in range(3)]
    best = 0
    for i in (1, 2):
        if mu[i] > mu[best]:
            best = i
    fan_weight = -math.inf
    c1 = sv = np.zeros(3)
    if method in ("hybrid", "axial"):
        if method == "hybrid" and mu[best] > _MU_BLEND_MIN:
            s = 1.0
            if t[best] < 0.0 or t[best] > 1.0:
                s = 0.0
            elif t[best] < _SV_BOUNDARY_BLEND:
                s = t[best] / _SV_BOUNDARY_BLEND
            elif t[best] > 1.0 - _SV_BOUNDARY_BLEND:
                s = (1.0 - t[best]) / _SV_BOUNDARY_BLEND
            if s < 1.0:
                mu[best] = _MU_BLEND_MIN + s * (mu[best] - _MU_BLEND_MIN)
        if method == "axial" or mu[best] > _MU_BLEND_MIN:
            c1, sv = t_c1[best], t_sv[best]
        if method == "hybrid" and mu[best] < _MU_BLEND_MAX:
            middle = r1 + 0.5 * r1r2
            fan = _fan_direction(a, dims, r1, r1r2, t_c1[0])
            fan_point = middle + fan
            if mu[best] <= _MU_BLEND_MIN:
                c1 = _closest_point(a, dims, fan_point, c1)
                sv = middle
                fan_weight = 1.0
            else:
                tt = (mu[best] - _MU_BLEND_MIN) / (_MU_BLEND_MAX - _MU_BLEND_MIN)
                fan_c1 = _closest_point(a, dims, fan_point, t_c1[1])
                blend = tt * c1 + (1.0 - tt) * fan_c1
                sv = tt * sv + (1.0 - tt) * middle
                c1 = _closest_point(a, dims, blend, c1)
                fan_weight = 1.0 - tt
    else:
        sv = r1 + 0.5 * (r2 - r1)
        c1 = _closest_point(a, dims, sv, c1)
    if method != "axial" or 0.0 < t[best] < 1.0:
        r1 = r2 = c1.copy()
    if sign != 0 and _sign(c1[axis] - m[axis]) != sign:
        original = c1.copy()
        c1 = c1.copy()
        c1[axis] = -c1[axis]
        r1 = r2 = c1.copy()
        fan_weight = min(fan_weight, 1.0)
        if fan_weight > 0.0:
            bisection = (original[axis] + c1[axis]) / 2.0
            c1[axis] = c1[axis] + fan_weight * (bisection - c1[axis])
            c1 = _closest_point(a, dims, c1.copy(), c1)
    vs, _ = _unit(so3.cross(p1p2, p1 - c1))
    vs4 = -float(vs @ c1)
    r1 = _tangent_point(p1e, r1.copy(), p1, m, a, vs, vs4)
    r2 = _tangent_point(p2e, r2.copy(), p2, m, a, vs, vs4)
    far_side = False
    arc, length = _ellipsoid_arc(r1, r2, m, a, vs, vs4, far_side, factor)
    if sign != 0 and len(arc) > 2:
        r1p1, r1w1 = _unit(p1 - r1)[0], _unit(arc[1] - r1)[0]
        r2p2, r2w2 = _unit(p2 - r2)[0], _unit(arc[-2] - r2)[0]
        if float(r1p1 @ r1w1) > 0.0 or float(r2p2 @ r2w2) > 0.0:
            arc, length = _ellipsoid_arc(r1, r2, m, a, vs, vs4, True, factor)
    return WrapResult(MANDATORY_WRAP, r1 / factor, r2 / factor, length / factor, arc / factor)


def _fan_direction(a, dims, r1, r1r2, previous):
    """The mean direction from the segment's interior samples to their closest points on
    the ellipsoid (the "fan" of WrapEllipsoid::wrapLine), unit length."""
    tt = np.arange(1, _FAN_SAMPLES - 1) / _FAN_SAMPLES
    samples = r1[None, :] + tt[:, None] * r1r2[None, :]
    closest, found = _closest_points(a, samples)
    for i in np.flatnonzero(~found):          # no closest point: from the one before it
        closest[i] = _closest_point(a, dims, samples[i], closest[i - 1] if i else previous)
    d = closest - samples
    n = np.sqrt(np.einsum("ij,ij->i", d, d))
    units = np.where(n[:, None] >= _EPS, d / np.where(n >= _EPS, n, 1.0)[:, None], 0.0)
    return _unit(np.cumsum(units, axis=0)[-1])[0]        # summed in order, as one by one


def _closest_points(a, points):
    """Closest points on the ellipsoid ``a`` to many points by the general case of
    WrapEllipsoid::findClosestPoint, vectorised: ``(points (N, 3), found (N,))``, not found
    for a point that needs a special case or does not converge (its row NaN)."""
    u, v, w = points.T
    a2, b2, c2 = a * a
    a2u2, b2v2, c2w2 = a2 * u * u, b2 * v * v, c2 * w * w
    inside = (u / a[0]) ** 2 + (v / a[1]) ** 2 + (w / a[2]) ** 2 < 1.0
    t = np.where(inside, 0.0, a.max() * np.sqrt(u * u + v * v + w * w))
    out = np.full(points.shape, np.nan)
    done = np.zeros(len(points), dtype=bool)
    for _ in range(64):
        P, Q, R = t + a2, t + b2, t + c2
        P2, Q2, R2 = P * P, Q * Q, R * R
        f = P2 * Q2 * R2 - a2u2 * Q2 * R2 - b2v2 * P2 * R2 - c2w2 * P2 * Q2
        hit = ~done & (np.abs(f) < 1e-9)
        out[hit] = np.column_stack([a2 * u / P, b2 * v / Q, c2 * w / R])[hit]
        done |= hit
        if done.all():
            break
        PQ, PR, QR = P * Q, P * R, Q * R
        fp = 2.0 * (P * Q * R * (QR + PR + PQ) - a2u2 * QR * (Q + R) - b2v2 * PR * (P + R)
                    - c2w2 * PQ * (P + Q))
        t = t - f / fp
    special = (np.abs(points) <= _ROUNDOFF).any(axis=1)
    found = done & ~special
    out[~found] = np.nan
    return out, found


def _closest_point(a, dims, p, previous, special=-1):
    """Closest point on the ellipsoid of radii ``a`` to ``p`` (WrapEllipsoid::
    findClosestPoint): in the plane of a coordinate axis when ``p`` lies on it (the smallest
    such ellipse), else Newton's iterations on the Lagrange multiplier; ``previous`` is
    returned where they do not converge, as OpenSim leaves its output unchanged."""
    u, v, w = (float(x) for x in p)
    if special < 0:
        smallest = math.inf
        for i in range(3):
            if abs(p[i]) <= _ROUNDOFF:
                total = float(dims.sum() - dims[i])
                if smallest > total:
                    special, smallest = i, total
    if special == 0:
        y, z = _closest_on_ellipse(a[1], a[2], v, w)
        return np.array([u, y, z])
    if special == 1:
        z, x = _closest_on_ellipse(a[2], a[0], w, u)
        return np.array([x, v, z])
    if special == 2:
        x, y = _closest_on_ellipse(a[0], a[1], u, v)
        return np.array([x, y, w])
    ax, by, cz = (float(x) for x in a)
    a2, b2, c2 = ax * ax, by * by, cz * cz
    a2u2, b2v2, c2w2 = a2 * u * u, b2 * v * v, c2 * w * w
    if (u / ax) ** 2 + (v / by) ** 2 + (w / cz) ** 2 < 1.0:
        t = 0.0
    else:
        t = max(ax, by, cz) * math.sqrt(u * u + v * v + w * w)
    for _ in range(64):
        P, Q, R = t + a2, t + b2, t + c2
        P2, Q2, R2 = P * P, Q * Q, R * R
        f = P2 * Q2 * R2 - a2u2 * Q2 * R2 - b2v2 * P2 * R2 - c2w2 * P2 * Q2
        if abs(f) < 1e-9:
            return np.array([a2 * u / P, b2 * v / Q, c2 * w / R])
        PQ, PR, QR = P * Q, P * R, Q * R
        fp = 2.0 * (P * Q * R * (QR + PR + PQ) - a2u2 * QR * (Q + R) - b2v2 * PR * (P + R)
                    - c2w2 * PQ * (P + Q))
        t -= f / fp
    return np.array(previous, dtype=float)


def _closest_on_ellipse(a, b, u, v):
    """Closest point ``(x, y)`` on the ellipse ``(x/a)^2 + (y/b)^2 = 1`` to ``(u, v)``
    (WrapEllipsoid::closestPointToEllipse, after Eberly)."""
    a, b = float(a), float(b)
    a2, b2 = a * a, b * b
    near_x, near_y = abs(u) <= _ROUNDOFF, abs(v) <= _ROUNDOFF
    if near_x and near_y:
        return ((-a if u < 0.0 else a), v) if a < b else (u, (-b if v < 0.0 else b))
    if near_x:
        if a >= b or abs(v) >= b - a2 / b:
            return u, (b if v >= 0 else -b)
        y = b2 * v / (b2 - a2)
        return a * math.sqrt(abs(1.0 - (y / b) ** 2)), y
    if near_y:
        if b >= a or abs(u) >= a - b2 / a:
            return (a if u >= 0 else -a), v
        x = a2 * u / (a2 - b2)
        return x, b * math.sqrt(abs(1.0 - (x / a) ** 2))
    a2u2, b2v2 = a2 * u * u, b2 * v * v
    t = 0.0 if (u / a) ** 2 + (v / b) ** 2 < 1.0 else max(a, b) * math.sqrt(u * u + v * v)
    for _ in range(64):
        P, Q = t + a2, t + b2
        f = P * P * Q * Q - a2u2 * Q * Q - b2v2 * P * P
        if abs(f) < 1e-9:
            break
        t -= f / (2.0 * (P * Q * (P + Q) - a2u2 * Q - b2v2 * P))
    return a2 * u / P, b2 * v / Q


def _tangent_residual(r1, d1, p1, m, a, vs, vs4):
    nr1 = 2.0 * (r1 - m) / (a * a)
    ee = np.array([float(vs @ r1) + vs4, -1.0 + _norm2((r1 - m) / a),
                   float(nr1 @ r1) + d1, float(nr1 @ p1) + d1])
    return ee, float(ee @ ee)


def _tangent_point(p1e, r1, p1, m, a, vs, vs4):
    """The tangent point from ``p1`` in the plane ``vs . x + vs4 = 0``, from ``r1``, by
    WrapEllipsoid::calcTangentPoint's damped Gauss-Newton iterations."""
    if abs(p1e) < 0.0001:
        return p1.copy()
    a2 = a * a
    nr1 = 2.0 * (r1 - m) / a2
    d1 = -float(nr1 @ r1)
    ee, ssq = _tangent_residual(r1, d1, p1, m, a, vs, vs4)
    ssqo = ssq
    alpha = 0.01
    nit = 0
    while ssq > _ELLIPSOID_TINY and nit < 50:
        nit += 1
        dedth = np.zeros((4, 4))
        dedth[:3, 0] = vs
        dedth[:3, 1] = 2.0 * (r1 - m) / a2
        dedth[:3, 2] = 2.0 * (2.0 * r1 - m) / a2
        dedth[:3, 3] = 2.0 * p1 / a2
        dedth[3] = [0.0, 0.0, 1.0, 1.0]
        p1r1, _ = _unit(p1 - r1)
        p1m, _ = _unit(p1 - m)
        pcos = float(p1r1 @ p1m)
        dd = 1.0 - pcos ** 100 if pcos > 0.1 else 1.0
        v = -(dedth @ ee)
        dedth2 = dedth @ dedth.T
        diag = np.diag(dedth2).copy()
        vt = np.zeros(4)
        nit2 = 0
        while ssq >= ssqo and nit2 < 1000:
            dedth2[np.diag_indices(4)] = diag * (1.0 + alpha)
            vt = dd * np.linalg.solve(dedth2, v) / 16.0
            r1 = r1 + vt[:3]
            d1 += vt[3]
            ee, ssq_new = _tangent_residual(r1, d1, p1, m, a, vs, vs4)
            ssqo, ssq = ssq, ssq_new
            alpha *= 4.0
            nit2 += 1
        alpha /= 8.0
        fakt = 0.5
        nit2 = 0
        while ssq <= ssqo and nit2 < 1000:
            fakt *= 2.0
            r1 = r1 + vt[:3] * fakt
            d1 += vt[3] * fakt
            ee, ssq_new = _tangent_residual(r1, d1, p1, m, a, vs, vs4)
            ssqo, ssq = ssq, ssq_new
            nit2 += 1
        r1 = r1 - vt[:3] * fakt
        d1 -= vt[3] * fakt
        ee, ssq = _tangent_residual(r1, d1, p1, m, a, vs, vs4)
        ssqo = ssq
    return r1


def _ellipsoid_arc(r1, r2, m, a, vs, vs4, far_side, factor):
    """The arc from r1 to r2 over the ellipsoid in the plane ``vs . x + vs4 = 0``, points
    about every millimetre (at most 499 segments), and its polygonal length
    (WrapEllipsoid::CalcDistanceOnEllipsoid)."""
    length = norm(r1 - r2) / factor
    if length < 0.001:
        return np.array([r1, r2]), length * factor
    n = min(int(length / 0.001), 499)
    imax = 0
    for i in (1, 2):
        if abs(vs[i]) > abs(vs[imax]):
            imax = i
    u = np.zeros(3)
    u[imax] = 1.0
    mu = (-float(vs @ m) - vs4) / float(vs @ u)
    a0 = m + mu * u
    ar1, _ = _unit(r1 - a0)
    ar2, _ = _unit(r2 - a0)
    phi0 = _acos(float(ar1 @ ar2))
    dphi = -(2.0 * math.pi - phi0) / n if far_side else phi0 / n
    vsz, _ = _unit(so3.cross(ar1, ar2))
    vsy = so3.cross(vsz, ar1)
    phi = np.arange(1, n) * dphi
    r = np.cos(phi)[:, None] * ar1[None, :] + np.sin(phi)[:, None] * vsy[None, :]
    f1 = r / a
    f2 = (a0 - m) / a
    aa = np.sum(f1 * f1, axis=1)
    bb = 2.0 * (f1 @ f2)
    cc = float(f2 @ f2) - 1.0
    mu3 = (-bb + np.sqrt(bb * bb - 4.0 * aa * cc)) / (2.0 * aa)
    arc = np.vstack([r1, a0[None, :] + mu3[:, None] * r, r2])
    steps = np.diff(arc, axis=0)
    return arc, float(sum(math.sqrt(float(s @ s)) for s in steps))
