"""project_to_limits: the closest admissible rotation under a reach cone and a twist limit."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from core import expcoords
from core.errors import InvalidInputError
from core.lie import so3
from core.limit_projection import _boundary_dot, project_to_limits

EPS = np.finfo(float).eps
#: a projection is a few dozen operations on unit-sized numbers (quaternion products, exp,
#: the boundary point), each rounding by eps: angles it returns are good to this
ANGLE_TOL = 64 * EPS
#: samples of the boundary for the brute-force closest direction
DENSE = 200_000
P = np.array([0.0, 1.0, 0.0])
U = np.array([1.0, 0.0, 0.0])
W = np.cross(P, U)


def _angle(a, b):
    return math.atan2(float(np.linalg.norm(np.cross(a, b))), float(a @ b))


def _direction(r):
    return so3.exp(r) @ P


def _dense_boundary(phi1, phi2, n=DENSE):
    """Boundary directions of the (elliptical) cone about P: the zero set of
    elliptic_cone_value, written independently (swing s(psi) towards cos psi U + sin psi W)."""
    psi = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    A, B = math.sin(phi1 / 2) ** 2, math.sin(phi2 / 2) ** 2
    s = 2 * np.arcsin(np.sqrt(1.0 / (np.cos(psi) ** 2 / A + np.sin(psi) ** 2 / B)))
    tilt = np.cos(psi)[:, None] * U + np.sin(psi)[:, None] * W
    return np.cos(s)[:, None] * P + np.sin(s)[:, None] * tilt


def _dense_boundary_at(psi, phi1, phi2):
    """One boundary direction of :func:`_dense_boundary` at tilt angle psi."""
    x = 1.0 / math.sqrt(math.cos(psi) ** 2 / math.sin(phi1 / 2) ** 2
                        + math.sin(psi) ** 2 / math.sin(phi2 / 2) ** 2)
    s = 2 * math.asin(x)
    return math.cos(s) * P + math.sin(s) * (math.cos(psi) * U + math.sin(psi) * W)


def _boundary_swing(d, phi1, phi2):
    """The boundary's swing angle in the tilt direction of d, and 1/cos of its half (the
    conditioning of the asin that gives it)."""
    psi = math.atan2(d @ W, d @ U)
    x = 1.0 / math.sqrt(math.cos(psi) ** 2 / math.sin(phi1 / 2) ** 2
                        + math.sin(psi) ** 2 / math.sin(phi2 / 2) ** 2)
    return 2 * math.asin(x), 1.0 / math.sqrt(1.0 - x * x)


def _twist_gap(a, b):
    return abs((a - b + np.pi) % (2 * np.pi) - np.pi)


def _random_rotations(rng, n):
    axes = rng.normal(size=(n, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    return axes * rng.uniform(0.0, np.pi, size=(n, 1))


CONES = [(0.6, None), (1.2, None), (2.5, None), (0.6, 0.25), (1.3, 0.4), (0.3, 1.1),
         (2.6, 0.9), (0.05, 1.4)]


@pytest.mark.parametrize("phi1,phi2", CONES)
def test_inside_unchanged_bit_for_bit_outside_projected_onto_boundary(phi1, phi2):
    rng = np.random.default_rng(3)
    lo, hi = -0.7, 0.4
    for r in _random_rotations(rng, 300):
        res = project_to_limits(r, P, phi1, phi2, U, lo, hi)
        value = (expcoords.reach_cone_value(r, P, phi1) if phi2 is None
                 else expcoords.elliptic_cone_value(r, P, U, phi1, phi2))
        tau = expcoords.twist_angle(r, P)
        assert res.inside == bool(value >= 0 and lo <= tau <= hi)
        if res.inside:
            assert res.r.tobytes() == r.tobytes() and res.angle == 0.0 and res.margin >= 0
            continue
        d_new = _direction(res.r)
        swing = _angle(P, d_new)
        if value < 0:  # the direction was outside: now on the boundary
            s_b, cond = (phi1, 1.0) if phi2 is None else _boundary_swing(d_new, phi1, phi2)
            assert abs(swing - s_b) <= ANGLE_TOL * cond
        else:          # only the twist moved: the direction stays
            assert _angle(d_new, _direction(r)) <= ANGLE_TOL
        tw = expcoords.twist_angle(res.r, P)
        assert lo - ANGLE_TOL <= tw <= hi + ANGLE_TOL
        if not lo <= tau <= hi:
            assert min(abs(tw - lo), abs(tw - hi)) <= ANGLE_TOL
        np.testing.assert_allclose(res.R, so3.exp(res.r), atol=ANGLE_TOL)
        assert np.linalg.norm(res.r) <= np.pi + ANGLE_TOL
        assert res.margin == pytest.approx(-math.hypot(res.swing_moved, res.twist_moved))
        # idempotent: the projection of a projection moves by round-off only
        again = project_to_limits(res.r, P, phi1, phi2, U, lo, hi)
        assert again.angle <= 4 * ANGLE_TOL * (1.0 if phi2 is None else
                                               _boundary_swing(d_new, phi1, phi2)[1])


@pytest.mark.parametrize("phi1,phi2", CONES)
def test_no_boundary_direction_is_closer(phi1, phi2):
    """The swing moved by the least geodesic angle: a dense sample of the boundary (in the
    tilt angle psi, independent of the ellipse parameter the projection uses) gets no closer,
    and its best sample refined by scipy's bounded Brent gives the same distance, so a wrong
    local maximum fails."""
    rng = np.random.default_rng(7)
    phi2_ = phi1 if phi2 is None else phi2
    ring = _dense_boundary(phi1, phi2_)
    dpsi = 2 * np.pi / DENSE
    for r in _random_rotations(rng, 60):
        res = project_to_limits(r, P, phi1, phi2, U)
        d = _direction(r)
        if res.inside:
            continue
        dist = np.arctan2(np.linalg.norm(np.cross(d, ring), axis=1), ring @ d)
        k = int(np.argmin(dist))
        assert res.swing_moved <= dist[k] + ANGLE_TOL
        best = minimize_scalar(lambda x: _angle(d, _dense_boundary_at(x, phi1, phi2_)),
                               bounds=((k - 1) * dpsi, (k + 1) * dpsi), method="bounded",
                               options={"xatol": 1e-13})
        # the distance is quadratic at its minimum: Brent's xatol costs ~xatol^2
        assert res.swing_moved == pytest.approx(best.fun, abs=ANGLE_TOL)
        assert res.swing_moved == pytest.approx(_angle(d, _direction(res.r)), abs=ANGLE_TOL)


@settings(max_examples=200, deadline=None)
@given(r=st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=3),
       cand=st.tuples(st.floats(0.0, 0.999), st.floats(0.0, 2 * np.pi), st.floats(-0.3, 0.5)),
       elliptical=st.booleans())
def test_no_admissible_pose_is_closer(r, cand, elliptical):
    """Random admissible poses (direction inside the cone, twist inside its limits) are never
    closer in the swing-twist metric than the distance the projection reports."""
    phi1, phi2, lo, hi = 0.9, (0.35 if elliptical else None), -0.3, 0.5
    r = np.array(r)
    res = project_to_limits(r, P, phi1, phi2, U, lo, hi)
    scale, psi, tau_c = cand
    a_u, a_w = math.sin(phi1 / 2), math.sin((phi2 or phi1) / 2)
    m = scale * (a_u * math.cos(psi) * U + a_w * math.sin(psi) * W)  # Lambert coordinates
    d_c = (1 - 2 * m @ m) * P + 2 * math.sqrt(1 - m @ m) * m
    tau = expcoords.twist_angle(r, P)
    dist = math.hypot(_angle(_direction(r), d_c), _twist_gap(tau, tau_c))
    assert dist >= -res.margin - ANGLE_TOL if not res.inside else res.margin >= 0


def test_circular_and_elliptical_agree_for_equal_half_angles():
    rng = np.random.default_rng(11)
    for phi in (0.2, 0.8, 1.5, 2.4):
        for r in _random_rotations(rng, 80):
            a = project_to_limits(r, P, phi, None, U, -0.5, 0.5)
            b = project_to_limits(r, P, phi, phi, U, -0.5, 0.5)
            assert a.inside == b.inside
            s = _angle(P, _direction(r))
            # brentq's root is good to eps / f'' in t, f'' = sin(s) sin(phi): the point moves
            # along the boundary at sin(phi) per unit t
            tol = ANGLE_TOL / max(math.sin(s), 1e-3)
            assert _angle(_direction(a.r), _direction(b.r)) <= tol
            np.testing.assert_allclose(a.R, b.R, atol=tol)
            assert a.swing_moved == pytest.approx(b.swing_moved, abs=ANGLE_TOL)


def test_twist_limit_clamps_the_shorter_way_round():
    for tau, (lo, hi), expected in [(0.9, (-0.5, 0.5), 0.5), (-2.0, (-0.5, 0.5), -0.5),
                                    (3.0, (-0.5, 1.0), 1.0),
                                    (3.0, (-2.5, 1.0), -2.5), (-3.0, (-1.0, 2.5), 2.5),
                                    (0.3, (0.0, 0.0), 0.0)]:
        r = tau * P
        res = project_to_limits(r, P, 0.5, None, U, lo, hi)
        assert not res.inside and res.swing_moved == 0.0
        assert expcoords.twist_angle(res.r, P) == pytest.approx(expected, abs=ANGLE_TOL)
        assert res.twist_moved == pytest.approx(_twist_gap(tau, expected), abs=ANGLE_TOL)
        assert res.angle == pytest.approx(res.twist_moved, abs=ANGLE_TOL)  # a turn about P
    # the twist is kept while the swing is projected, with a swing on top of it
    r = so3.log(so3.exp(np.array([0.0, 0.0, 1.4])) @ so3.exp(0.3 * P))
    res = project_to_limits(r, P, 0.5, None, U, -0.5, 0.5)
    assert expcoords.twist_angle(res.r, P) == pytest.approx(0.3, abs=ANGLE_TOL)
    assert res.twist_moved == 0.0 and res.swing_moved == pytest.approx(0.9, abs=ANGLE_TOL)


def test_circular_projection_is_the_closest_rotation_with_free_twist():
    """Circular cone, twist inside: the result turns R by the swing gap about d x d*, the
    least rotation that brings the direction into the cone."""
    rng = np.random.default_rng(5)
    for r in _random_rotations(rng, 50):
        res = project_to_limits(r, P, 0.7)
        if res.inside:
            continue
        assert res.angle == pytest.approx(res.swing_moved, abs=ANGLE_TOL)


def test_near_singular_poses():
    # identity and tiny rotations: inside, unchanged bit for bit
    for r in (np.zeros(3), np.array([1e-8, -2e-8, 3e-9]), np.full(3, 1e-300)):
        res = project_to_limits(r, P, 0.3, 0.1, U, -0.2, 0.2)
        assert res.inside and res.r.tobytes() == r.tobytes()
        assert res.margin == pytest.approx(0.1, abs=1e-7)
    # a tiny twist past a zero twist limit: only the twist goes, the tiny swing stays
    r = np.array([2e-8, 1e-8, -1e-8])
    res = project_to_limits(r, P, 0.3, None, U, 0.0, 0.0)
    assert not res.inside and res.twist_moved == pytest.approx(1e-8, rel=1e-12)
    assert abs(expcoords.twist_angle(res.r, P)) <= ANGLE_TOL * 1e-8
    assert _angle(_direction(res.r), _direction(r)) <= ANGLE_TOL * 1e-8
    # a tiny swing past a tiny cone
    r = np.array([3e-8, 0.0, 0.0])
    res = project_to_limits(r, P, 1e-8)
    assert _angle(P, _direction(res.r)) == pytest.approx(1e-8, rel=1e-12)
    # swing pi exactly (twist undefined: taken as 0) and just below pi
    for r in (np.array([np.pi, 0.0, 0.0]), np.array([0.0, 0.0, np.pi]),
              np.array([np.pi - 1e-9, 0.0, 1e-7]), np.array([1.0, 1e-9, 1.0]) / math.sqrt(2) * np.pi):
        for phi2 in (None, 0.4):
            res = project_to_limits(r, P, 0.9, phi2, U, -0.1, 0.1)
            d_new = _direction(res.r)
            s_b, cond = (0.9, 1.0) if phi2 is None else _boundary_swing(d_new, 0.9, phi2)
            assert abs(_angle(P, d_new) - s_b) <= ANGLE_TOL * cond
            assert abs(expcoords.twist_angle(res.r, P)) <= 0.1 + ANGLE_TOL
    # swing pi about X: the closest elliptical boundary directions are the ends of the long
    # axis; the swing moved pi - 0.9
    res = project_to_limits(np.array([0.0, 0.0, np.pi]), P, 0.9, 0.4, U)
    assert res.swing_moved == pytest.approx(np.pi - 0.9, abs=ANGLE_TOL)
    # rotation vectors past pi are the same rotations
    r = np.array([0.0, 0.0, 1.5])
    long = r * (1 - 2 * np.pi / 1.5)
    np.testing.assert_allclose(project_to_limits(long, P, 0.5).R, project_to_limits(r, P, 0.5).R,
                               atol=16 * ANGLE_TOL)


def test_boundary_rate_matches_central_differences():
    rng = np.random.default_rng(2)
    h = 1e-6
    for _ in range(30):
        a_u, a_w = rng.uniform(0.05, 0.95, size=2)
        m = rng.uniform(-0.7, 0.7, size=2)
        n = math.sqrt(1 - m @ m)
        for t in (0.0, 1e-8, rng.uniform(0, 2 * np.pi), np.pi / 2):
            f, df = _boundary_dot(t, m, n, a_u, a_w)
            fd = (_boundary_dot(t + h, m, n, a_u, a_w)[0] - _boundary_dot(t - h, m, n, a_u, a_w)[0]) / (2 * h)
            # central differences: truncation h^2 |f'''| / 6 (|f'''| <= 16 here) + eps |f| / h
            assert abs(df - fd) <= 16 * h * h / 6 * 4 + 4 * EPS / h
            # the value is <d, b(t)> of the directions in 3D
            d = (1 - 2 * m @ m) * P + 2 * n * (m[0] * U + m[1] * W)
            mb = np.array([a_u * math.cos(t), a_w * math.sin(t)])
            b = (1 - 2 * mb @ mb) * P + 2 * math.sqrt(1 - mb @ mb) * (mb[0] * U + mb[1] * W)
            assert f == pytest.approx(d @ b, abs=ANGLE_TOL)


@pytest.mark.parametrize("kwargs,match", [
    (dict(r=[0, 0], axis=P, half_angle_1=0.5), "shape"),
    (dict(r=[np.nan, 0, 0], axis=P, half_angle_1=0.5), "NaN"),
    (dict(r=np.zeros((2, 3)), axis=P, half_angle_1=0.5), "one rotation vector"),
    (dict(r=np.zeros(3), axis=P, half_angle_1=0.0), "half_angle_1"),
    (dict(r=np.zeros(3), axis=P, half_angle_1=0.5, half_angle_2=np.pi), "half_angle_2"),
    (dict(r=np.zeros(3), axis=(0, 0, 0), half_angle_1=0.5), "zero length"),
    (dict(r=np.zeros(3), axis=P, half_angle_1=0.5, half_angle_2=0.3, ref_axis=P), "parallel"),
    (dict(r=np.zeros(3), axis=P, half_angle_1=0.5, twist_lower=0.3, twist_upper=0.2), "twist"),
    (dict(r=np.zeros(3), axis=P, half_angle_1=0.5, twist_upper=4.0), "twist_upper"),
])
def test_bad_input_is_refused(kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        project_to_limits(**kwargs)
