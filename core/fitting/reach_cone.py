"""Fit reach-cone limits of a spherical joint to observed rotations (seed 003, section on limits).

The limit functions themselves are :func:`core.expcoords.reach_cone_value`,
:func:`core.expcoords.elliptic_cone_value` and :func:`core.expcoords.twist_angle`; they track one
body direction ``p`` (for a bone: its Y axis) and measure its swing from where it points in the
cone's *neutral* frame. A cone whose centre ``c`` differs from ``p`` is expressed with a fixed
neutral rotation ``N`` (the shortest-arc rotation with ``N p = c``): a joint rotation ``R`` (child
rest frame -> posed) has cone coordinates ``r = log(N^T R)``, and the bone direction ``R p`` is
inside the circular cone of half-angle phi around ``c`` exactly when
``reach_cone_value(r, p, phi) >= 0``.

Fitting:
* centre and half-angle: the smallest spherical cap holding the directions ``d_k = R_k p``. For
  directions inside an open hemisphere this is the hard-margin separator through the origin:
  ``min |v|^2`` subject to ``d_k . v >= 1`` gives ``c = v / |v|`` and ``cos(phi) = 1 / |v|``
  (a 3-unknown quadratic programme);
* elliptic half-angles about that centre: with ``(x, y, z)`` the components of ``exp(r_k) p`` on
  the ellipse frame ``(u, w, p)``, the elliptic value is ``>= 0`` iff
  ``a_k X + b_k Y <= 1`` with ``a_k = x^2 / (2 (1 + z))``, ``b_k = y^2 / (2 (1 + z))``,
  ``X = 1 / sin^2(phi1 / 2)``, ``Y = 1 / sin^2(phi2 / 2)``; the fit maximizes ``X Y`` (the
  smallest ellipse area to second order) over that convex polygon, exactly, by enumerating
  the tangent points of each edge and the polygon's vertices;
* twist limit: the largest ``|twist_angle(r_k, p)|``.
A margin (radians) is added to every angle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog, minimize

from .. import expcoords
from ..errors import InvalidInputError
from ..lie import so3
from ..checks import real_number, whole_number

__all__ = ["ReachConeFit", "neutral_rotation", "cone_coordinates", "fit_reach_cone", "cone_boundary"]


@dataclass(frozen=True)
class ReachConeFit:
    """Result of :func:`fit_reach_cone`; every angle in radians and includes the margin.

    axis: (3,) unit cone centre ``c`` in the joint's rest frame.
    neutral: (3, 3) rotation ``N`` with ``N p = c`` (use with :func:`cone_coordinates`).
    half_angle: circular cone half-angle.
    half_angle_1, half_angle_2: elliptic half-angles towards ``N u`` and ``N (p x u)``.
    twist_limit: largest twist about ``p``.
    n_samples: number of rotations used.
    heldout_angle: held-out check of the circular cone, before the margin: the largest angle
        by which a sample's direction falls outside the smallest cone fitted to the other
        samples (leave-one-out; only samples on the cone's boundary can fall outside, so it
        costs one cone fit per boundary sample). It estimates how far a direction not yet
        observed may leave the fitted cone: a margin below it is likely too small. NaN for
        one sample.
    """

    axis: np.ndarray
    neutral: np.ndarray
    half_angle: float
    half_angle_1: float
    half_angle_2: float
    twist_limit: float
    n_samples: int
    heldout_angle: float = math.nan


def _unit(v, name):
    v = np.asarray(v, dtype=float)
    if v.shape != (3,) or not np.all(np.isfinite(v)) or np.linalg.norm(v) < 1e-12:
        raise InvalidInputError(f"{name} must be a non-zero direction of 3 finite numbers, got {v!r}")
    return v / np.linalg.norm(v)


def _swing_axes(p, ref_axis):
    """Unit ``u`` (``ref_axis`` made orthogonal to the unit direction ``p: (3,)``) and
    ``w = p x u``: the axes (3,), (3,) of the elliptic cone's two half angles."""
    u = _unit(ref_axis, "ref_axis")
    u = u - np.dot(u, p) * p
    if np.linalg.norm(u) < 1e-9:
        raise InvalidInputError("ref_axis is parallel to direction; pass one orthogonal to it")
    u = u / np.linalg.norm(u)
    return u, np.cross(p, u)


def neutral_rotation(direction, axis):
    """Shortest-arc rotation ``N`` (3, 3) with ``N direction = axis`` (both (3,), normalized here).

    Opposite vectors have no unique shortest arc: a half turn about an axis orthogonal to
    ``direction`` is returned.
    """
    p, c = _unit(direction, "direction"), _unit(axis, "axis")
    k = np.cross(p, c)
    s, cos = float(np.linalg.norm(k)), float(np.dot(p, c))
    if s < 1e-12:
        if cos > 0.0:
            return np.eye(3)
        e = np.eye(3)[int(np.argmin(np.abs(p)))]
        k, s = np.cross(p, e), 1.0
        return so3.exp(math.pi * k / np.linalg.norm(k))
    return so3.exp(k / s * math.atan2(s, cos))


def cone_coordinates(R, neutral):
    """Exponential coordinates of ``neutral^T R``: R (..., 3, 3), neutral (3, 3) -> (..., 3)."""
    R = so3.check_rotation(np.asarray(R, dtype=float), "R")
    return so3.log(np.einsum("ji,...jk->...ik", np.asarray(neutral, dtype=float), R))


def _smallest_cap(d):
    """Centre (3,) and half-angle of the smallest cap holding unit directions d (N, 3).

    Solves the separator problem ``min |v|^2 subject to d_k . v >= 1`` (3 unknowns, SLSQP,
    started from the feasible point of a linear programme); then ``c = v / |v|`` and ``phi = acos(min_k d_k . c)``.
    """
    # Feasible start from a linear programme: maximize t with d_k . v >= t, -1 <= v <= 1.
    n = len(d)
    lp = linprog(c=[0.0, 0.0, 0.0, -1.0], A_ub=np.hstack([-d, np.ones((n, 1))]), b_ub=np.zeros(n),
                 bounds=[(-1.0, 1.0)] * 3 + [(None, 1.0)], method="highs")
    lo = -lp.fun if lp.status == 0 else 0.0
    if lo <= 1e-6:  # round-off margin: float32 poses from Blender land within ~1e-7 of a plane
        raise InvalidInputError(
            "the observed directions are not inside one open hemisphere, so the smallest cone "
            "would be wider than 90 degrees; set the cone axis and half-angle by hand")
    start = lp.x[:3]
    res = minimize(lambda v: v @ v, start / lo, jac=lambda v: 2.0 * v, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda v: d @ v - 1.0, "jac": lambda v: d}],
                   options={"ftol": 1e-15, "maxiter": 200})
    v = res.x if np.all(d @ res.x >= 1.0 - 1e-9) else start / lo
    c = v / np.linalg.norm(v)
    return c, math.acos(float(np.clip(np.min(d @ c), -1.0, 1.0)))


#: a direction within this much of the cap's boundary (in cos of the angle) is on it; the
#: separator is solved to about 1e-9 in ``d . v >= 1``
_ON_BOUNDARY = 1e-7


def _leave_one_out(d, c, phi):
    """Largest angle (radians) by which a direction of ``d: (N, 3)`` falls outside the smallest
    cap of the others, given the cap ``c: (3,)``, ``phi`` of all of them (see ReachConeFit)."""
    if len(d) < 2:
        return math.nan
    worst = 0.0
    for i in np.flatnonzero(d @ c <= math.cos(phi) + _ON_BOUNDARY):
        ci, phi_i = _smallest_cap(np.delete(d, i, axis=0))
        worst = max(worst, math.acos(float(np.clip(d[i] @ ci, -1.0, 1.0))) - phi_i)
    return worst


def _binding(a, b):
    """Indices of the constraints ``a_k X + b_k Y <= 1`` (``a, b: (N,) >= 0``) that can bind
    for ``X, Y > 0``: the points ``(a_k, b_k)`` on the upper-right convex hull of the points
    and the origin (every other constraint is a convex combination of those, so implied).
    O(N log N), so that large captures do not reach the quadratic vertex enumeration."""
    order = np.lexsort((-b, -a))  # a descending, then b descending
    running = np.maximum.accumulate(b[order])
    front = order[np.concatenate([[True], b[order][1:] > running[:-1]])][::-1]  # a ascending
    hull = []
    for k in front:  # keep clockwise turns from the top-left to the bottom-right
        while len(hull) >= 2:
            i, j = hull[-2], hull[-1]
            if (a[j] - a[i]) * (b[k] - b[i]) - (b[j] - b[i]) * (a[k] - a[i]) >= 0.0:
                hull.pop()
            else:
                break
        hull.append(k)
    return np.array(hull, dtype=int)


def _max_product(a, b, lo=1.0, hi=1e8):
    """Maximize X*Y subject to a_k X + b_k Y <= 1 and lo <= X, Y <= hi. Returns (X, Y)."""
    keep = _binding(a, b)
    a, b = a[keep], b[keep]
    # Box constraints as extra half-planes: X <= hi, Y <= hi (X, Y >= lo checked at the end).
    a = np.concatenate([a, [1.0 / hi, 0.0]])
    b = np.concatenate([b, [0.0, 1.0 / hi]])
    cand = []
    for ak, bk in zip(a, b):  # tangent point of the hyperbola X Y = const on each edge
        if ak > 0 and bk > 0:
            cand.append((0.5 / ak, 0.5 / bk))
    i, j = np.triu_indices(len(a), k=1)  # vertices: pairs of edges
    det = a[i] * b[j] - a[j] * b[i]
    ok = det != 0.0
    X = (b[j][ok] - b[i][ok]) / det[ok]
    Y = (a[i][ok] - a[j][ok]) / det[ok]
    cand += list(zip(X, Y))
    cand = np.array(cand, dtype=float).reshape(-1, 2)
    feas = (cand > 0).all(axis=1) & (cand @ np.vstack([a, b]) <= 1.0 + 1e-9).all(axis=1)
    cand = cand[feas]
    best = cand[np.argmax(cand[:, 0] * cand[:, 1])]
    if best[0] < lo - 1e-9 or best[1] < lo - 1e-9:
        raise InvalidInputError(
            "a swing of the elliptic fit reaches 180 degrees; the elliptic cone cannot hold it")
    return float(best[0]), float(best[1])


def fit_reach_cone(R, direction=(0.0, 1.0, 0.0), ref_axis=(1.0, 0.0, 0.0), margin=0.0):
    """Fit a reach cone, elliptic half-angles and a twist limit to joint rotations.

    Args:
        R: (N, 3, 3) joint rotations (child rest frame -> posed), N >= 1.
        direction: (3,) the tracked body direction p (a bone's Y axis by default).
        ref_axis: (3,) ellipse direction u for half_angle_1, in the neutral frame (projected
            orthogonal to p).
        margin: radians added to every fitted angle (>= 0).
    Returns:
        :class:`ReachConeFit`. Raises InvalidInputError when the directions do not fit in a
        hemisphere or the input is malformed.
    """
    R = np.asarray(R, dtype=float)
    if R.ndim != 3 or R.shape[1:] != (3, 3) or len(R) == 0:
        raise InvalidInputError(f"R must be (N, 3, 3) rotations with N >= 1, got shape {R.shape}")
    R = so3.check_rotation(R, "R")
    margin = real_number(margin, "margin", 0.0, advice="an angle in radians added to the fit")
    p = _unit(direction, "direction")
    d = R @ p
    c, phi = _smallest_cap(d)
    N = neutral_rotation(p, c)
    r = cone_coordinates(R, N)
    u, w = _swing_axes(p, ref_axis)
    pp = so3.exp(r) @ p
    x, y, z = pp @ u, pp @ w, pp @ p
    X, Y = _max_product(x * x / (2.0 * (1.0 + z)), y * y / (2.0 * (1.0 + z)))
    phi1 = 2.0 * math.asin(min(1.0, 1.0 / math.sqrt(X)))  # X, Y >= 1 (_max_product)
    phi2 = 2.0 * math.asin(min(1.0, 1.0 / math.sqrt(Y)))
    twist = float(np.max(np.abs(expcoords.twist_angle(r, p))))

    def grow(angle, top):
        return min(top, angle + margin)

    return ReachConeFit(axis=c, neutral=N, half_angle=grow(phi, math.pi),
                        half_angle_1=grow(phi1, math.pi), half_angle_2=grow(phi2, math.pi),
                        twist_limit=grow(twist, math.pi), n_samples=len(R),
                        heldout_angle=_leave_one_out(d, c, phi))


def cone_boundary(neutral, half_angle_1, half_angle_2=None, n=48, direction=(0.0, 1.0, 0.0),
                  ref_axis=(1.0, 0.0, 0.0)):
    """Unit directions on the cone's boundary, for drawing: (n, 3) in the joint's rest frame.

    The tracked direction ``p`` swings by ``s(psi)`` towards ``cos(psi) u + sin(psi) w`` with
    ``sin^2(s/2) (cos^2 psi / sin^2(phi1/2) + sin^2 psi / sin^2(phi2/2)) = 1`` (the zero set of
    :func:`core.expcoords.elliptic_cone_value`; ``half_angle_2=None`` gives the circular cone
    of :func:`core.expcoords.reach_cone_value`), then ``neutral`` maps it to the rest frame.
    neutral: (3, 3); half angles in (0, pi]; n >= 3.
    """
    n = whole_number(n, "n", 3, "the number of boundary points")
    p = _unit(direction, "direction")
    u, w = _swing_axes(p, ref_axis)
    half_angle_2 = half_angle_1 if half_angle_2 is None else half_angle_2
    half_angle_1, half_angle_2 = (
        real_number(phi, name, 0.0, math.pi, low_open=True, advice="an angle in radians")
        for name, phi in (("half_angle_1", half_angle_1), ("half_angle_2", half_angle_2)))
    A, B = math.sin(0.5 * half_angle_1) ** 2, math.sin(0.5 * half_angle_2) ** 2
    psi = np.linspace(0.0, 2.0 * math.pi, n, endpoint=False)
    c, s_ = np.cos(psi), np.sin(psi)
    s = 2.0 * np.arcsin(np.sqrt(np.minimum(1.0, 1.0 / (c * c / A + s_ * s_ / B))))
    tilt = c[:, None] * u + s_[:, None] * w
    d = np.cos(s)[:, None] * p + np.sin(s)[:, None] * tilt
    return d @ np.asarray(neutral, dtype=float).T
