"""The closest admissible rotation under a reach cone and a twist limit (seed 003 eqs. 50-52).

A joint rotation ``R = exp([r])`` (``r: (3,)``, exponential coordinates) is split about the
unit cone axis ``p`` into a swing and a twist, ``R = R_swing exp(tau [p])`` (the twist
applied first, the swing about an axis orthogonal to ``p``; the decomposition of
:func:`core.expcoords.twist_angle`). The swing carries ``p`` to the tracked direction
``d = R p``; with the unit quaternion ``(W, V)`` of R (``W = cos(theta/2) >= 0``,
``V = sin(theta/2)/theta r``) the twist is ``tau = 2 atan2(<V, p>, W)`` and the swing's
quaternion is ``(n, v_s)`` with ``n = cos(s/2) = sqrt(W^2 + <V, p>^2)``, ``|v_s| = sin(s/2)``
and ``v_s`` orthogonal to p (s: the swing angle between p and d).

Admissible rotations: d inside the cone and ``twist_lower <= tau <= twist_upper``. The cone is
circular (``angle(p, d) <= phi``, :func:`core.expcoords.reach_cone_value` >= 0) or elliptical
(:func:`core.expcoords.elliptic_cone_value` >= 0): in the Lambert azimuthal coordinates
``m = v_s x p`` (in the plane orthogonal to p, ``|m| = sin(s/2)``, pointing where d tilts) the
elliptical cone is the planar ellipse ``<m, u>^2 / sin^2(phi1/2) + <m, w>^2 / sin^2(phi2/2) <= 1``
(``u``: the reference axis made orthogonal to p, ``w = p x u``), and d is
``(1 - 2|m|^2) p + 2 cos(s/2) m``.

"Closest": rotations are compared in swing-twist coordinates, the distance between
``(d1, tau1)`` and ``(d2, tau2)`` being ``sqrt(angle(d1, d2)^2 + dtau^2)`` (angle: the
geodesic angle on the unit sphere; dtau: the twist difference, the shorter way round the
circle). The admissible set is a product (directions in the cone) x (a twist interval), so its
closest point to ``(d, tau)`` is the closest cone direction to d together with the closest
admissible twist to tau:

* circular cone: the boundary direction on the great circle through p and d,
  ``cos(phi) p + sin(phi) e`` (e: the unit tilt direction of d);
* elliptical cone: the boundary direction ``b(t)`` (ellipse parameter t, ``m_b(t) =
  sin(phi1/2) cos(t) u + sin(phi2/2) sin(t) w``) maximizing ``<d, b(t)>``: the best of
  :data:`BOUNDARY_SAMPLES` samples of t brackets the global maximum (the function may have
  two local maxima, e.g. across the minor axis of an eccentric cone), and scipy's brentq
  finds the zero of the analytic derivative in that bracket to round-off;
* twist: the nearer end of ``[twist_lower, twist_upper]``, measured the shorter way round.

The projected rotation is ``R_swing(d*) exp(tau* [p])`` (``R_swing(d*)``: the shortest arc
from p to d*). For a circular cone with the twist inside its limits this is the rotation
closest to R in the bi-invariant metric of SO(3) among those whose direction is in the cone
(it turns R by ``angle(d, d*)`` about ``d x d*``).

Single points: with the swing exactly pi (``d = -p``) the twist is undefined and taken as 0
(the swing axis is then ``V``); with the tracked direction exactly on p the tilt is undefined
and the direction is inside every cone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from . import expcoords
from .checks import real_number
from .errors import InvalidInputError
from .lie import so3

__all__ = ["LimitProjection", "project_to_limits", "BOUNDARY_SAMPLES"]

#: samples of the ellipse parameter t that bracket the closest boundary direction
BOUNDARY_SAMPLES = 256

#: below this cos^2(s/2) the swing is pi to within 2e-12 rad and the twist undefined (the
#: threshold of :func:`core.expcoords.twist_angle`)
_ANTIPODE_COS2 = 1e-24

_TWO_PI = 2.0 * math.pi


@dataclass(frozen=True)
class LimitProjection:
    """Result of :func:`project_to_limits`; angles in radians.

    r: (3,) exponential coordinates of the admissible rotation: the input itself (the same
        values, bit for bit) when it was admissible, else the projection with ``|r| <= pi``.
    R: (3, 3) ``exp([r])``.
    inside: whether the input was admissible.
    swing_moved: geodesic angle between the tracked directions before and after.
    twist_moved: how far the twist moved (the shorter way round).
    angle: rotation angle between the input and the returned rotation (SO(3) geodesic).
    margin: signed distance to the nearest limit in the swing-twist metric (module
        docstring): for an admissible input the distance it can move before a limit stops
        it (``inf`` without limits), else ``-hypot(swing_moved, twist_moved)``.
    """

    r: np.ndarray
    R: np.ndarray
    inside: bool
    swing_moved: float
    twist_moved: float
    angle: float
    margin: float


def _quaternion(r):
    """Unit quaternion ``(W, V)`` of exp(r) with ``W >= 0``: W float, V (3,)."""
    theta = float(np.linalg.norm(r))
    W = math.cos(0.5 * theta)
    V = float(expcoords.coefficient_function("sh", theta)) * r
    return (-W, -V) if W < 0.0 else (W, V)


def _swing_twist(r, p):
    """``(n, v_s, tau)``: the swing quaternion's scalar n = cos(s/2) >= 0 and vector v_s (3,),
    orthogonal to p, and the twist tau in [-pi, pi] of exp(r) about the unit axis p."""
    W, V = _quaternion(r)
    Y = float(V @ p)
    n2 = W * W + Y * Y
    if n2 < _ANTIPODE_COS2:          # swing pi: any twist fits; take 0 (module docstring)
        v = V - Y * p
        return 0.0, v / np.linalg.norm(v), 0.0
    n = math.sqrt(n2)
    c, s = W / n, Y / n              # twist quaternion (c, s p); swing = q * conj(twist)
    v_s = c * V - s * W * p - s * so3.cross(V, p)
    return n, v_s - float(v_s @ p) * p, 2.0 * math.atan2(Y, W)


def _direction(n, m, p):
    """Unit direction ``(1 - 2|m|^2) p + 2 n m`` for Lambert coordinates m (3,) with
    ``n = sqrt(1 - |m|^2)``."""
    return (1.0 - 2.0 * float(m @ m)) * p + 2.0 * n * m


def _angle_between(a, b):
    """Geodesic angle between unit vectors a, b (3,), accurate at 0 and pi."""
    return math.atan2(float(np.linalg.norm(so3.cross(a, b))), float(a @ b))


def _boundary_dot(t, m, n, a_u, a_w):
    """``(f, df/dt)`` at ellipse parameters t (float or (K,)): ``f = <d, b(t)> = (1 - 2|m|^2)
    (1 - 2 rho^2) + 4 n c_b <m, m_b>`` for the direction d of Lambert coordinates
    ``m = (m1, m2)`` (``n = sqrt(1 - |m|^2)``) and the boundary direction b(t) of Lambert
    coordinates ``m_b = (a_u cos t, a_w sin t)``, ``rho = |m_b|``, ``c_b = sqrt(1 - rho^2)``
    (semi-axes a_u, a_w < 1)."""
    k0 = 1.0 - 2.0 * (m[0] * m[0] + m[1] * m[1])
    ct, st = np.cos(t), np.sin(t)
    mb1, mb2, d1, d2 = a_u * ct, a_w * st, -a_u * st, a_w * ct    # m_b and m_b'
    rho2 = mb1 * mb1 + mb2 * mb2
    cb = np.sqrt(1.0 - rho2)
    drho2 = 2.0 * (mb1 * d1 + mb2 * d2)
    dot = m[0] * mb1 + m[1] * mb2
    f = k0 * (1.0 - 2.0 * rho2) + 4.0 * n * cb * dot
    df = -2.0 * k0 * drho2 + 4.0 * n * (-0.5 * drho2 / cb * dot + cb * (m[0] * d1 + m[1] * d2))
    return f, df


def _ellipse_closest(m, n, a_u, a_w):
    """Lambert coordinates ``(m1, m2)`` of the boundary direction of the elliptical cone
    (semi-axes a_u, a_w < 1 in the (u, w) plane) closest to the direction of Lambert
    coordinates ``m = (m1, m2)``: the maximum of :func:`_boundary_dot` over t, bracketed by
    :data:`BOUNDARY_SAMPLES` samples and refined by brentq on its derivative."""
    ts = np.linspace(0.0, _TWO_PI, BOUNDARY_SAMPLES, endpoint=False)
    k = int(np.argmax(_boundary_dot(ts, m, n, a_u, a_w)[0]))
    t = float(ts[k])

    def rate(x):
        return float(_boundary_dot(x, m, n, a_u, a_w)[1])

    g = rate(t)
    if g != 0.0:
        other = t + math.copysign(_TWO_PI / BOUNDARY_SAMPLES, g)
        if rate(other) * g < 0.0:
            t = brentq(rate, min(t, other), max(t, other), xtol=1e-15,
                       rtol=4.0 * np.finfo(float).eps)
    return a_u * math.cos(t), a_w * math.sin(t)


def _twist_interval(lower, upper):
    lower = real_number(lower, "twist_lower", -math.pi, math.pi, advice="an angle in radians")
    upper = real_number(upper, "twist_upper", -math.pi, math.pi, advice="an angle in radians")
    if lower > upper:
        raise InvalidInputError(f"twist limits need twist_lower <= twist_upper, got "
                                f"[{lower}, {upper}]")
    return lower, upper


def _clamp_twist(tau, lower, upper):
    """The admissible twist nearest tau (the shorter way round) and its signed distance
    from the nearest limit (> 0 inside, ``inf`` for the whole circle)."""
    if lower == -math.pi and upper == math.pi:
        return tau, math.inf
    if lower <= tau <= upper:
        return tau, min(tau - lower, upper - tau)
    to_upper = (tau - upper) % _TWO_PI
    to_lower = (lower - tau) % _TWO_PI
    return (upper, -to_upper) if to_upper <= to_lower else (lower, -to_lower)


def project_to_limits(r, axis, half_angle_1, half_angle_2=None, ref_axis=(1.0, 0.0, 0.0),
                      twist_lower=-math.pi, twist_upper=math.pi):
    """The admissible rotation closest to ``exp([r])`` under a reach cone and a twist limit.

    Args:
        r: (3,) exponential coordinates of the joint rotation.
        axis: (3,) cone axis p (normalized here): the direction the rotation carries.
        half_angle_1: circular cone half-angle phi in (0, pi] (:func:`core.expcoords.
            reach_cone_value`), or with half_angle_2 the elliptical half-angle towards
            ref_axis, in (0, pi).
        half_angle_2: None (circular), or the elliptical half-angle towards ``p x u`` in
            (0, pi) (:func:`core.expcoords.elliptic_cone_value`).
        ref_axis: (3,) the direction u of half_angle_1 (projected orthogonal to p).
        twist_lower, twist_upper: the twist interval about p, in [-pi, pi] (the whole
            circle: no twist limit).
    Returns:
        :class:`LimitProjection` (definitions of "closest" and of the margin in the module
        docstring).
    """
    r = so3.check_vector(r, "r")
    if r.shape != (3,):
        raise InvalidInputError(f"r must be one rotation vector of shape (3,), got {r.shape}")
    elliptical = half_angle_2 is not None
    p, u, w = expcoords.ellipse_frame(axis, ref_axis if elliptical else _any_orthogonal(axis))
    lower, upper = _twist_interval(twist_lower, twist_upper)
    if elliptical:
        phi1, phi2 = (real_number(v, name, 0.0, math.pi, low_open=True, high_open=True,
                                  advice="an angle in radians; a half-angle of pi is a circular "
                                         "cone's")
                      for v, name in ((half_angle_1, "half_angle_1"), (half_angle_2, "half_angle_2")))
        inside_cone = float(expcoords.elliptic_cone_value(r, p, u, phi1, phi2)) >= 0.0
    else:
        phi1 = real_number(half_angle_1, "half_angle_1", 0.0, math.pi, low_open=True,
                           advice="an angle in radians")
        inside_cone = float(expcoords.reach_cone_value(r, p, phi1)) >= 0.0

    n, v_s, tau = _swing_twist(r, p)
    m = so3.cross(v_s, p)                             # Lambert coordinates, |m| = sin(s/2)
    d = _direction(n, m, p)
    if elliptical:
        a_u, a_w = math.sin(0.5 * phi1), math.sin(0.5 * phi2)
        b1, b2 = _ellipse_closest((float(m @ u), float(m @ w)), n, a_u, a_w)
        m_b = b1 * u + b2 * w
    else:
        norm_m = float(np.linalg.norm(m))
        tilt = m / norm_m if norm_m > 0.0 else u
        m_b = math.sin(0.5 * phi1) * tilt
    n_b = math.sqrt(max(0.0, 1.0 - float(m_b @ m_b)))
    swing_gap = _angle_between(d, _direction(n_b, m_b, p))
    tau_b, twist_gap = _clamp_twist(tau, lower, upper)

    if inside_cone and twist_gap >= 0.0:
        return LimitProjection(r=r.copy(), R=so3.exp(r), inside=True, swing_moved=0.0,
                               twist_moved=0.0, angle=0.0, margin=min(swing_gap, twist_gap))
    if inside_cone:
        m_b, n_b, swing_gap = m, n, 0.0
    twist_moved = 0.0 if twist_gap >= 0.0 else -twist_gap
    # q* = swing(n_b, p x ... ) * twist(tau_b): swing vector p x m_b (|.| = sin(s*/2))
    a = so3.cross(p, m_b)
    ct, st = math.cos(0.5 * tau_b), math.sin(0.5 * tau_b)
    Wq = n_b * ct
    Vq = n_b * st * p + ct * a + st * so3.cross(a, p)
    if Wq < 0.0:
        Wq, Vq = -Wq, -Vq
    nv = float(np.linalg.norm(Vq))
    r_new = (2.0 * math.atan2(nv, Wq) / nv) * Vq if nv > 0.0 else np.zeros(3)
    R_new = so3.exp(r_new)
    angle = float(np.linalg.norm(so3.log(R_new.T @ so3.exp(r))))
    return LimitProjection(r=r_new, R=R_new, inside=False, swing_moved=swing_gap,
                           twist_moved=twist_moved, angle=angle,
                           margin=-math.hypot(swing_gap, twist_moved))


def _any_orthogonal(axis):
    """A coordinate direction (3,) not parallel to ``axis`` (3,): the reference axis of a
    circular cone, whose boundary does not depend on it."""
    return np.eye(3)[int(np.argmin(np.abs(np.asarray(axis, dtype=float))))]
