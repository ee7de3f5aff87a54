"""core.expcoords (seed 003) against exact series, finite differences, scipy and Pinocchio."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from core import expcoords as ec
from core.errors import InvalidInputError
from core.lie import so3

RNG = np.random.default_rng(20140608)
PI = math.pi
EPS = np.finfo(float).eps

# Tolerances (relative to max(1, |reference|) unless said otherwise), from the computations:
#: a Horner series of <= 13 terms, or a closed form whose cancellation costs < 4x at and above
#: its threshold (core.expcoords' table), rounds to a few ulps of the function's size
SERIES_TOL = 8 * EPS
#: one formula on two code paths (numpy ufuncs batched, Python floats single): sin, cos and
#: sqrt round to within a few ulps on either (SIMD kernels included), amplified < 8x by the
#: closed forms' cancellation, plus O(30) operations of O(1) condition for |r| <= 3 pi
PATHS_TOL = 64 * EPS
#: two formulas of the same O(1) quantity (a matrix identity, scipy's Rotation, a rewritten
#: closed form): O(30) roundings each at |r| <= 7, no cancellation beyond a factor 2
IDENTITY_TOL = 64 * EPS


def _unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def _at(theta, seed=0):
    """A rotation vector of length theta in a fixed random direction."""
    return theta * _unit(np.random.default_rng(seed).normal(size=3))


# angles: identity, tiny, near 0, both sides of every series threshold, near pi, past pi,
# near 2 pi (maps that stay invertible there are tested at a safe distance)
THRESHOLDS = sorted({tc for tc, _ in ec.SERIES_THRESHOLDS.values()})
ANGLES = ([0.0, 1e-8, 1e-4, 1e-2, 0.7, PI - 1e-7, PI, PI + 1e-7, 4.0, 5.5]
          + [tc * (1 + s) for tc in THRESHOLDS for s in (-1e-9, 1e-9)])
ANGLES_J = ANGLES + [2 * PI - 1e-3, 2 * PI, 2 * PI + 1e-3, 7.0]    # J_b is defined everywhere
ANGLES_G = ANGLES + [2 * PI - 0.05, 2 * PI + 0.05, 9.0]             # G_b needs theta != 2 pi k
POINTS_J = [_at(th, i) for i, th in enumerate(ANGLES_J)]
POINTS_G = [_at(th, i) for i, th in enumerate(ANGLES_G)]


def _ids(points):
    return [f"|r|={np.linalg.norm(p):.10g}" for p in points]


def _rot(r):
    return Rotation.from_rotvec(r).as_matrix()


def _fd(f, x, h=1e-6):
    """Central differences of f at x along each coordinate: list of df/dx_i."""
    out = []
    for i in range(len(x)):
        e = np.zeros(len(x))
        e[i] = h
        out.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return out


def _close(a, b, tol):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    err = np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))
    assert err < tol, f"relative error {err:.3g} >= {tol:g}"


# --------------------------------------------------------------------------------------
# coefficient functions against exact rational series (platform independent reference)
# --------------------------------------------------------------------------------------
_FAC = math.factorial
_EXACT_TERMS = {
    "alpha": lambda m: Fraction((-1) ** m, _FAC(2 * m + 1)),
    "beta": lambda m: Fraction((-1) ** m, _FAC(2 * m + 2)),
    "gamma": lambda m: Fraction((-1) ** m, _FAC(2 * m + 3)),
    "b1": lambda m: Fraction((-1) ** (m + 1) * 2 * (m + 1), _FAC(2 * m + 4)),
    "g1": lambda m: Fraction((-1) ** (m + 1) * 2 * (m + 1), _FAC(2 * m + 5)),
    "q": lambda m: Fraction((-1) ** m * (2 * m + 2), _FAC(2 * m + 6)),
    "sh": lambda m: Fraction((-1) ** m, 2 ** (2 * m + 1) * _FAC(2 * m + 1)),
    "sh1": lambda m: Fraction((-1) ** (m + 1) * 2 * (m + 1), 2 ** (2 * m + 3) * _FAC(2 * m + 3)),
}


def _exact(name, theta, terms=48):
    """Exact rational partial sum (error < 1e-40 for theta <= 6.5) of an entire series."""
    t = Fraction(theta) ** 2
    acc = Fraction(0)
    for m in reversed(range(terms)):
        acc = acc * t + _EXACT_TERMS[name](m)
    return acc


COEF_ANGLES = sorted(set([0.0, 1e-8, 1e-3, 0.05, 0.3, 1.0, 2.2, 2.8, 3.1, 4.5, 6.0]
                         + [tc * (1 + s) for tc in THRESHOLDS for s in (-1e-12, 0.0, 1e-12)]))


def test_coefficients_match_exact_series_to_round_off():
    for th in COEF_ANGLES:
        exact = {k: _exact(k, th) for k in _EXACT_TERMS}
        two_b = 2 * exact["beta"]
        ref = {
            "alpha": exact["alpha"], "beta": exact["beta"], "gamma": exact["gamma"],
            "delta": exact["alpha"] / two_b, "zeta": -exact["b1"] / two_b,
            "alpha1": exact["gamma"] - exact["beta"], "beta1": exact["b1"],
            "gamma1": exact["g1"], "delta1": -exact["gamma"] / two_b,
            "zeta1": exact["q"] / two_b,
        }
        c, cr = ec.coefficients(th), ec.coefficient_rates(th)
        got = dict(zip(["alpha", "beta", "gamma", "delta", "zeta"], c))
        got.update(zip(["alpha1", "beta1", "gamma1", "delta1", "zeta1"], cr))
        # and every series function on its own (sh and sh1 enter only the twist limit)
        for name in ec.SERIES_THRESHOLDS:
            ref[name] = exact[name]
            got[name] = ec.coefficient_function(name, th)
        for k, v in got.items():
            # scale: the function's magnitude near 0 (some cross zero further out)
            scale = max(abs(float(ref[k])), 0.1 * abs(float(_ref_at_zero(k))))
            err = abs(Fraction(v) - ref[k]) / Fraction(scale)
            assert err < SERIES_TOL, f"{k} at theta={th}: {float(err):.3g} relative"


def _ref_at_zero(k):
    if k in _EXACT_TERMS:
        return _EXACT_TERMS[k](0)
    return {"alpha": 1, "beta": Fraction(1, 2), "gamma": Fraction(1, 6), "delta": 1,
            "zeta": Fraction(1, 12), "alpha1": Fraction(-1, 3), "beta1": Fraction(-1, 12),
            "gamma1": Fraction(-1, 60), "delta1": Fraction(-1, 6), "zeta1": Fraction(1, 360)}[k]


def test_series_switch_is_continuous_at_every_threshold():
    for name, (tc, _) in ec.SERIES_THRESHOLDS.items():
        below = ec.coefficient_function(name, math.nextafter(tc, 0.0))
        at = ec.coefficient_function(name, tc)
        scale = max(abs(at), 1e-3)
        assert abs(below - at) <= SERIES_TOL * scale, name
        # the array path takes the same branches as the scalar path
        arr = ec.coefficient_function(name, np.array([math.nextafter(tc, 0.0), tc]))
        np.testing.assert_allclose(arr, [below, at], rtol=0, atol=PATHS_TOL * scale,
                                   err_msg=name)


def test_seed_two_term_taylor_expansions_agree_near_zero():
    th = 1e-3
    a, b, g, d, z = ec.coefficients(th)
    a1, b1, g1, d1, z1 = ec.coefficient_rates(th)
    t = th * th
    # eqs. 30-34 and 45-49 (the O(theta^4) remainder is < 1e-12 here)
    for got, want in [(a, 1 - t / 6), (b, 0.5 - t / 24), (g, 1 / 6 - t / 120), (d, 1 - t / 12),
                      (z, 1 / 12 + t / 720), (a1, -1 / 3 + t / 30), (b1, -1 / 12 + t / 180),
                      (g1, -1 / 60 + t / 1260), (d1, -1 / 6 - t / 180),
                      (z1, 1 / 360 + t / 7560)]:
        assert abs(got - want) < 1e-12


def test_coefficients_batched_equal_scalar():
    ths = np.array(COEF_ANGLES)
    for fn in (ec.coefficients, ec.coefficient_rates):
        batch, at_zero = fn(ths), fn(0.0)
        for i, th in enumerate(ths):
            single = fn(float(th))
            for b_, s_, s0 in zip(batch, single, at_zero):
                # scale: as in the exact-series test (some functions cross zero)
                assert b_[i] == pytest.approx(s_, rel=PATHS_TOL, abs=PATHS_TOL * 0.1 * abs(s0))


def test_seed_closed_forms_of_delta_zeta_and_rates():
    th = 1.3
    a, b, g, d, z = ec.coefficients(th)
    a1, b1, g1, d1, z1 = ec.coefficient_rates(th)
    # eq. 17 and the derivative factors printed below eq. 39 (where <r, w_b> = <r, r_dot>)
    assert d == pytest.approx(th * math.sin(th) / (2 * (1 - math.cos(th))), rel=IDENTITY_TOL)
    assert z == pytest.approx((1 - d) / th ** 2, rel=1e-13)
    assert d1 == pytest.approx((a - 1) / (2 * b) / th ** 2, rel=1e-13)
    assert z1 == pytest.approx(((a + 1) / (2 * b) - 2) / th ** 4, rel=1e-11)
    assert b1 == pytest.approx((a - 2 * b) / th ** 2, rel=1e-13)
    assert g1 == pytest.approx((b - 3 * g) / th ** 2, rel=1e-12)
    # eq. 60's coefficient: beta^2 - alpha gamma = -beta1
    assert b * b - a * g == pytest.approx(-b1, rel=1e-13)


# --------------------------------------------------------------------------------------
# first order
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("r", POINTS_J, ids=_ids(POINTS_J))
def test_J_b_and_J_s_are_rotation_derivatives(r):
    R = _rot(r)
    dR = _fd(_rot, r)
    Jb_fd = np.stack([so3.vee(R.T @ d) for d in dR], axis=1)   # J_b = R^T dR/dr (eq. 20)
    Js_fd = np.stack([so3.vee(d @ R.T) for d in dR], axis=1)   # J_s = dR/dr R^T (eq. 23)
    _close(ec.J_b(r), Jb_fd, 1e-9)
    _close(ec.J_s(r), Js_fd, 1e-9)
    _close(ec.J_s(r), R @ ec.J_b(r), IDENTITY_TOL)
    # eq. 21 ([r]^2 form, closed-form coefficients away from 0) and the SO(3) Jacobians
    th, W = np.linalg.norm(r), so3.hat(r)
    if th > 0.5:
        b, g = (1 - math.cos(th)) / th ** 2, (th - math.sin(th)) / th ** 3
        _close(ec.J_b(r), np.eye(3) - b * W + g * W @ W, 1e-13)
    _close(ec.J_b(r), so3.right_jacobian(r), 1e-9)
    _close(ec.J_s(r), so3.left_jacobian(r), 1e-9)


def test_J_b_matches_pinocchio():
    pin = pytest.importorskip("pinocchio")
    for r in POINTS_J:
        _close(ec.J_b(r), pin.Jexp3(r), 1e-12)   # Pinocchio loses ~6e-14 near 1e-4 rad
    for r in POINTS_G:
        if np.linalg.norm(r) < PI - 1e-3:      # Jlog3 works on the principal log
            _close(ec.G_b(r), pin.Jlog3(pin.exp3(r)), 1e-12)


@pytest.mark.parametrize("r", POINTS_G, ids=_ids(POINTS_G))
def test_G_is_inverse_of_J(r):
    _close(ec.G_b(r) @ ec.J_b(r), np.eye(3), 1e-12)
    _close(ec.G_s(r) @ ec.J_s(r), np.eye(3), 1e-12)
    # eq. 22's [r]^2 form
    d, z = ec.coefficients(np.linalg.norm(r))[3:]
    W = so3.hat(r)
    _close(ec.G_b(r), np.eye(3) + 0.5 * W + z * W @ W, 1e-12)


def test_det_J_b_eq_64_65_and_its_zeros():
    for r in POINTS_J:
        assert ec.det_J_b(r) == pytest.approx(np.linalg.det(ec.J_b(r)), abs=1e-13)
    r = _at(1.7)
    a, b, g = ec.coefficients(1.7)[:3]
    assert ec.det_J_b(r) == pytest.approx((a * a + b * b * 1.7 ** 2) * (a + g * 1.7 ** 2))
    for k in (1, 2, 3):
        # |r| lands within a few ulps of 2 pi k, where det J_b = (2 sin(|r|/2) / |r|)^2
        # is the square of a few eps
        assert ec.det_J_b(_at(2 * PI * k)) < 16 * EPS ** 2
    assert ec.det_J_b(np.zeros(3)) == 1.0
    assert ec.det_J_b(np.zeros((4, 3))).shape == (4,)


@pytest.mark.parametrize("r", POINTS_G, ids=_ids(POINTS_G))
def test_velocities_against_scipy_rotation_differences(r):
    rd = np.array([0.3, -0.7, 0.45])
    h = 1e-6
    Rp, Rm, R = _rot(r + h * rd), _rot(r - h * rd), _rot(r)
    Rdot = (Rp - Rm) / (2 * h)
    w_b = ec.body_velocity(r, rd)
    w_s = ec.spatial_velocity(r, rd)
    _close(w_b, so3.vee(R.T @ Rdot), 1e-9)          # eq. 6
    _close(w_s, so3.vee(Rdot @ R.T), 1e-9)          # eq. 14
    _close(w_s, R @ w_b, IDENTITY_TOL)
    _close(w_b, ec.J_b(r) @ rd, IDENTITY_TOL)
    # inverse maps (eqs. 15, 16): round trips
    _close(ec.rdot_from_body(r, w_b), rd, 1e-10)
    _close(ec.rdot_from_spatial(r, w_s), rd, 1e-10)
    _close(ec.rdot_from_body(r, w_b), ec.G_b(r) @ w_b, 1e-12)


def test_velocity_maps_batched_and_broadcast():
    rs = np.stack(POINTS_G[:8])
    rds = RNG.normal(size=(8, 3))
    for fn in (ec.body_velocity, ec.spatial_velocity, ec.rdot_from_body, ec.rdot_from_spatial):
        batch = fn(rs, rds)
        assert batch.shape == (8, 3)
        for i in range(8):
            _close(batch[i], fn(rs[i], rds[i]), PATHS_TOL)
    # one r, many rates
    assert ec.body_velocity(rs[3], rds).shape == (8, 3)
    _close(ec.body_velocity(rs[3], rds)[5], ec.body_velocity(rs[3], rds[5]), PATHS_TOL)
    for fn in (ec.J_b, ec.J_s, ec.G_b, ec.G_s, ec.dJ_b_dr, ec.dJ_s_dr):
        batch = fn(rs.reshape(2, 4, 3))
        for i in range(8):
            _close(batch.reshape((8,) + batch.shape[2:])[i], fn(rs[i]), PATHS_TOL)


@given(st.lists(st.floats(-1, 1), min_size=3, max_size=3),
       st.floats(0, 2 * PI - 0.05), st.lists(st.floats(-5, 5), min_size=3, max_size=3))
@settings(max_examples=60, deadline=None)
def test_round_trip_rdot_w_rdot(direction, theta, rd):
    n = np.linalg.norm(direction)
    r = theta * np.asarray(direction) / n if n > 1e-3 else np.zeros(3)
    rd = np.asarray(rd)
    tol = 1e-11 / max(ec.det_J_b(r), 1e-3)
    _close(ec.rdot_from_body(r, ec.body_velocity(r, rd)), rd, tol)
    _close(ec.rdot_from_spatial(r, ec.spatial_velocity(r, rd)), rd, tol)
    # <r, w_b> = <r, r_dot> (eq. 18)
    assert np.dot(r, ec.body_velocity(r, rd)) == pytest.approx(np.dot(r, rd), abs=1e-11)


# --------------------------------------------------------------------------------------
# derivatives of the Jacobians and second order
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("r", POINTS_J, ids=_ids(POINTS_J))
def test_dJ_dr_against_finite_differences(r):
    for fn, dfn in ((ec.J_b, ec.dJ_b_dr), (ec.J_s, ec.dJ_s_dr)):
        _close(dfn(r), np.stack(_fd(fn, r)), 1e-8)
    rd = np.array([-0.4, 0.9, 0.25])
    _close(ec.J_b_dot(r, rd), np.einsum("jab,j->ab", ec.dJ_b_dr(r), rd), IDENTITY_TOL)
    _close(ec.J_s_dot(r, rd), np.einsum("jab,j->ab", ec.dJ_s_dr(r), rd), IDENTITY_TOL)
    R, Jb, dJ = ec.exp_and_derivatives(r)
    _close(R, so3.exp(r), IDENTITY_TOL)
    _close(R, _rot(r), IDENTITY_TOL)
    # the same formulas on the same coefficients: identical
    np.testing.assert_array_equal(Jb, ec.J_b(r))
    np.testing.assert_array_equal(dJ, ec.dJ_b_dr(r))


@pytest.mark.parametrize("r", POINTS_G, ids=_ids(POINTS_G))
def test_G_dot_against_finite_differences(r):
    rd = np.array([0.6, -0.2, 0.35])
    h = 1e-6
    for fn, dfn in ((ec.G_b, ec.G_b_dot), (ec.G_s, ec.G_s_dot)):
        fd = (fn(r + h * rd) - fn(r - h * rd)) / (2 * h)
        scale = 1.0 / ec.det_J_b(r) ** 2    # G grows like 1/det near 2 pi
        _close(dfn(r, rd), fd, 1e-8 * scale)


@pytest.mark.parametrize("r", POINTS_G, ids=_ids(POINTS_G))
def test_accelerations_against_finite_differences_and_round_trips(r):
    rd = np.array([0.6, -0.2, 0.35])
    rdd = np.array([-1.1, 0.4, 0.8])
    h = 1e-5

    def path(s):
        return r + s * rd + 0.5 * s * s * rdd, rd + s * rdd

    for vel, acc in ((ec.body_velocity, ec.body_acceleration),
                     (ec.spatial_velocity, ec.spatial_acceleration)):
        fd = (vel(*path(h)) - vel(*path(-h))) / (2 * h)
        _close(acc(r, rd, rdd), fd, 1e-8)
    # eq. 35 = J_b r_ddot + J_b_dot r_dot (eq. 40), and the spatial analogue (eq. 43)
    _close(ec.body_acceleration(r, rd, rdd), ec.J_b(r) @ rdd + ec.J_b_dot(r, rd) @ rd, 1e-13)
    _close(ec.spatial_acceleration(r, rd, rdd), ec.J_s(r) @ rdd + ec.J_s_dot(r, rd) @ rd, 1e-13)
    # inverse relations (eqs. 39, 41, 42, 44): round trips and the matrix forms
    tol = 1e-10 / ec.det_J_b(r) ** 2
    w_b, w_s = ec.body_velocity(r, rd), ec.spatial_velocity(r, rd)
    wd_b = ec.body_acceleration(r, rd, rdd)
    wd_s = ec.spatial_acceleration(r, rd, rdd)
    _close(ec.rddot_from_body(r, w_b, wd_b), rdd, tol)
    _close(ec.rddot_from_spatial(r, w_s, wd_s), rdd, tol)
    _close(ec.rddot_from_body(r, w_b, wd_b), ec.G_b(r) @ wd_b + ec.G_b_dot(r, rd) @ w_b, tol)
    _close(ec.rddot_from_spatial(r, w_s, wd_s), ec.G_s(r) @ wd_s + ec.G_s_dot(r, rd) @ w_s, tol)
    # w_dot_s = R w_dot_b (since w_s = R w_b and R_dot w_b = R [w_b] w_b = 0)
    _close(wd_s, _rot(r) @ wd_b, 1e-12)


def test_accelerations_batched():
    rs = np.stack(POINTS_G[:6])
    rd, rdd = RNG.normal(size=(6, 3)), RNG.normal(size=(6, 3))
    for fn in (ec.body_acceleration, ec.spatial_acceleration):
        out = fn(rs, rd, rdd)
        for i in range(6):
            _close(out[i], fn(rs[i], rd[i], rdd[i]), PATHS_TOL)
    for fn in (ec.rddot_from_body, ec.rddot_from_spatial):
        out = fn(rs, rd, rdd)
        for i in range(6):
            _close(out[i], fn(rs[i], rd[i], rdd[i]), PATHS_TOL)
    for fn in (ec.J_b_dot, ec.J_s_dot, ec.G_b_dot, ec.G_s_dot):
        out = fn(rs, rd)
        for i in range(6):
            _close(out[i], fn(rs[i], rd[i]), PATHS_TOL)


# --------------------------------------------------------------------------------------
# reparametrization (eqs. 66-78)
# --------------------------------------------------------------------------------------
REPARAM_ANGLES = [PI + 1e-6, 3.5, 2 * PI - 0.2, 2 * PI + 0.3, 3 * PI - 1e-3, 3 * PI + 0.4, 11.0,
                  20.0]


@pytest.mark.parametrize("theta", REPARAM_ANGLES)
def test_reparametrize_keeps_rotation_velocity_acceleration_and_power(theta):
    r = _at(theta, 3)
    rd, rdd, tau = np.array([0.3, -1.2, 0.7]), np.array([2.0, 0.5, -0.4]), np.array([1, 2, -3.])
    out = ec.reparametrize(r, rd, rdd, tau)
    assert np.linalg.norm(out.r) <= PI + 1e-12
    assert out.n == -round(theta / (2 * PI))
    _close(_rot(out.r), _rot(r), 1e-13)
    _close(ec.body_velocity(out.r, out.r_dot), ec.body_velocity(r, rd), 1e-12)
    _close(ec.body_acceleration(out.r, out.r_dot, out.r_ddot),
           ec.body_acceleration(r, rd, rdd), 1e-11)
    # the torque is the dual of r_dot: the same power, and a body moment m maps as
    # J_b^T m -> J_b'^T m (eq. 76)
    assert np.dot(out.torque, out.r_dot) == pytest.approx(np.dot(tau, rd), rel=1e-12)
    m = np.array([0.2, -0.5, 1.5])
    _close(ec.reparametrize(r, torque=ec.J_b(r).T @ m).torque, ec.J_b(out.r).T @ m, 1e-11)
    # eq. 66-67 for pi < theta < 3 pi, eq. 78 for the torque
    if theta < 3 * PI:
        eta = 1 - 2 * PI / theta
        _close(out.r, eta * r, IDENTITY_TOL)
        _close(out.torque, tau - 2 * PI / (eta * theta ** 3) * np.cross(r, np.cross(r, tau)),
               1e-12)
    # idempotent: a second application changes nothing (eta = 1 and the corrections are
    # 0 * r: exact)
    again = ec.reparametrize(out.r, out.r_dot, out.r_ddot, out.torque)
    assert again.n == 0
    for a, b in zip(again[:4], out[:4]):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("theta", REPARAM_ANGLES[:5])
def test_reparametrized_rates_are_time_derivatives(theta):
    r = _at(theta, 5)
    rd, rdd = np.array([0.3, -1.2, 0.7]), np.array([2.0, 0.5, -0.4])
    h = 1e-5
    n = ec.reparametrize(r).n

    def chart(s):   # the new coordinates along the path, same chart shift n
        x = r + s * rd + 0.5 * s * s * rdd
        th = np.linalg.norm(x)
        return (th + 2 * PI * n) / th * x

    out = ec.reparametrize(r, rd, rdd)
    _close(out.r_dot, (chart(h) - chart(-h)) / (2 * h), 1e-8)          # eq. 69
    _close(out.r_ddot, (chart(h) - 2 * chart(0) + chart(-h)) / h ** 2, 1e-5)  # eq. 70


@given(st.lists(st.floats(-1, 1), min_size=3, max_size=3), st.floats(0.0, 30.0),
       st.lists(st.floats(-4, 4), min_size=9, max_size=9))
@settings(max_examples=60, deadline=None)
def test_reparametrize_invariants_hold_for_any_angle(direction, theta, rates):
    n = np.linalg.norm(direction)
    if n < 1e-3 or abs(math.remainder(theta, 2 * PI)) < 1e-3 < theta:
        return          # no direction, or too close to the singular 2 pi k for the torque
    r = theta * np.asarray(direction) / n
    rd, rdd, tau = np.reshape(rates, (3, 3))
    out = ec.reparametrize(r, rd, rdd, tau)
    assert np.linalg.norm(out.r) <= PI * (1 + SERIES_TOL)    # eta r and its norm: a few ulps
    _close(_rot(out.r), _rot(r), 1e-12)
    _close(ec.body_velocity(out.r, out.r_dot), ec.body_velocity(r, rd), 1e-10)
    _close(ec.body_acceleration(out.r, out.r_dot, out.r_ddot),
           ec.body_acceleration(r, rd, rdd), 1e-9)
    assert np.dot(out.torque, out.r_dot) == pytest.approx(np.dot(tau, rd), rel=1e-9, abs=1e-9)


def test_reparametrize_is_identity_up_to_pi_and_batched():
    for th in (0.0, 1e-8, 1.0, PI):
        r = _at(th)
        out = ec.reparametrize(r, np.ones(3), np.ones(3), np.ones(3))    # exact: eta = 1
        assert out.n == 0 and np.array_equal(out.r, r) and np.array_equal(out.r_dot, np.ones(3))
        assert np.array_equal(out.torque, np.ones(3))
    rs = np.stack([_at(th, i) for i, th in enumerate([0.5, 4.0, 7.0, 12.0])])
    rd = RNG.normal(size=(4, 3))
    out = ec.reparametrize(rs, rd, rd, rd)
    assert out.n.tolist() == [0, -1, -1, -2]
    for i in range(4):
        single = ec.reparametrize(rs[i], rd[i], rd[i], rd[i])
        for a, b in zip(out[:4], single[:4]):
            _close(a[i], b, PATHS_TOL)
    assert ec.reparametrize(rs).r_dot is None


def test_crossing_pi_keeps_rotation_and_angular_velocity_continuous():
    # spin about a fixed axis through pi: before/after the chart change everything matches
    axis = _unit([1.0, 2.0, -0.5])
    w = 2.0 * axis + np.array([0.1, -0.2, 0.05])
    for th in (PI - 1e-9, PI + 1e-9):
        r = th * axis
        rd = ec.rdot_from_body(r, w)
        out = ec.reparametrize(r, rd)
        _close(_rot(out.r), _rot(r), IDENTITY_TOL)
        _close(ec.body_velocity(out.r, out.r_dot), w, 1e-12)


# --------------------------------------------------------------------------------------
# joint limits
# --------------------------------------------------------------------------------------
P = _unit([0.2, -0.3, 1.0])
CONE_POINTS = [np.zeros(3), np.full(3, 1e-8), _at(1e-4, 1), _at(0.1, 2), _at(0.9, 3),
               _at(2.2, 4), _at(PI - 1e-6, 5), _at(4.0, 6), 0.7 * P, P * 1e-8]


@pytest.mark.parametrize("r", CONE_POINTS, ids=_ids(CONE_POINTS))
def test_reach_cone_value_and_gradient(r):
    phi = 0.8
    g = ec.reach_cone_value(r, P, phi)
    assert g == pytest.approx(P @ _rot(r) @ P - math.cos(phi), abs=IDENTITY_TOL)  # eq. 50-52
    grad = ec.reach_cone_gradient(r, P, phi)
    fd = np.array(_fd(lambda x: ec.reach_cone_value(x, P, phi), r))
    _close(grad, fd, 1e-9)
    # eq. 58 form
    _close(grad, ec.J_b(r).T @ np.cross(P, _rot(r).T @ P), 1e-13)


def test_reach_cone_impulse_direction_on_the_boundary():
    phi = 1.1
    u = _unit(np.cross(P, [1.0, 0, 0]))
    for twist in (0.0, 0.7, -2.0):
        # tilt p by phi towards some direction, plus a twist about p: g = 0
        R = (Rotation.from_rotvec(phi * u) * Rotation.from_rotvec(twist * P)).as_matrix()
        r = so3.log(R)
        assert ec.reach_cone_value(r, P, phi) == pytest.approx(0.0, abs=IDENTITY_TOL)
        d = ec.reach_cone_impulse_direction(r, P, phi)
        _close(d, ec.reach_cone_gradient(r, P, phi), 1e-12)
        # into the cone: a small step along it makes g positive
        assert ec.reach_cone_value(r + 1e-4 * d / np.linalg.norm(d), P, phi) > 0


def test_reach_cone_batched_and_inside_outside():
    rs = np.stack(CONE_POINTS)
    g = ec.reach_cone_value(rs, P, 0.5)
    grad = ec.reach_cone_gradient(rs, P, 0.5)
    for i, r in enumerate(CONE_POINTS):
        assert g[i] == pytest.approx(ec.reach_cone_value(r, P, 0.5), abs=PATHS_TOL)
        _close(grad[i], ec.reach_cone_gradient(r, P, 0.5), PATHS_TOL)
    assert ec.reach_cone_value(np.zeros(3), P, 0.5) > 0
    u = _unit(np.cross(P, [0.0, 1.0, 0.0]))
    assert ec.reach_cone_value(0.6 * u, P, 0.5) < 0 < ec.reach_cone_value(0.4 * u, P, 0.5)
    # a pure twist about the axis never leaves the cone
    assert ec.reach_cone_value(2.5 * P, P, 0.01) == pytest.approx(1 - math.cos(0.01))


U = _unit([1.0, 0.3, 0.0])
ELL_POINTS = CONE_POINTS + [_at(2.9, 7), _at(2.5, 8), _at(3.0, 9)]   # some with swing > 90 deg


def _swing_twist(swing_dir, swing, twist):
    """exp(r) = R_swing R_twist with the swing tilting P towards swing_dir."""
    axis = _unit(np.cross(P, swing_dir))
    return so3.log((Rotation.from_rotvec(swing * axis) * Rotation.from_rotvec(twist * P))
                   .as_matrix())


@pytest.mark.parametrize("r", ELL_POINTS, ids=_ids(ELL_POINTS))
def test_elliptic_cone_gradient_against_finite_differences(r):
    args = (P, U, 0.9, 0.4)
    grad = ec.elliptic_cone_gradient(r, *args)
    fd = np.array(_fd(lambda x: ec.elliptic_cone_value(x, *args), r))
    _close(grad, fd, 1e-8)


def test_elliptic_cone_shape():
    phi1, phi2 = 0.9, 0.4
    u = _unit(U - (U @ P) * P)
    w = np.cross(P, u)
    args = (P, U, phi1, phi2)
    for twist in (0.0, 1.3):
        for sgn in (1, -1):
            assert ec.elliptic_cone_value(_swing_twist(sgn * u, phi1, twist), *args) == \
                pytest.approx(0.0, abs=1e-13)
            assert ec.elliptic_cone_value(_swing_twist(sgn * w, phi2, twist), *args) == \
                pytest.approx(0.0, abs=1e-13)
            assert ec.elliptic_cone_value(_swing_twist(sgn * u, phi1 - 0.01, twist), *args) > 0
            assert ec.elliptic_cone_value(_swing_twist(sgn * w, phi2 + 0.01, twist), *args) < 0
    assert ec.elliptic_cone_value(np.zeros(3), *args) == 1.0
    # equal half-angles: the circular cone of eq. 52, rescaled
    for r in ELL_POINTS:
        assert ec.elliptic_cone_value(r, P, U, 0.7, 0.7) == pytest.approx(
            ec.reach_cone_value(r, P, 0.7) / (1 - math.cos(0.7)), abs=1e-12)
    # the two branches (front z >= 0, back z < 0) meet continuously at 90 degrees of swing
    d = _unit(u + 0.4 * w)
    a = ec.elliptic_cone_value(_swing_twist(d, PI / 2 - 1e-9, 0.2), *args)
    b = ec.elliptic_cone_value(_swing_twist(d, PI / 2 + 1e-9, 0.2), *args)
    assert abs(a - b) < 1e-8
    # batched equals single; the antipode p' = -p is finite with zero gradient
    rs = np.stack(ELL_POINTS)
    vals, grads = ec.elliptic_cone_value(rs, *args), ec.elliptic_cone_gradient(rs, *args)
    for i, r in enumerate(ELL_POINTS):
        assert vals[i] == pytest.approx(ec.elliptic_cone_value(r, *args), rel=PATHS_TOL,
                                        abs=PATHS_TOL)
        _close(grads[i], ec.elliptic_cone_gradient(r, *args), 1e-13)
    r_flip = PI * u
    assert ec.elliptic_cone_value(r_flip, *args) == pytest.approx(
        1 - 1 / math.sin(phi2 / 2) ** 2)
    assert np.all(ec.elliptic_cone_gradient(r_flip, *args) == 0)


TWIST_POINTS = CONE_POINTS + [_at(5.0, 11), _at(2 * PI - 0.1, 12), 2.0 * P + _at(0.3, 13)]


@pytest.mark.parametrize("r", TWIST_POINTS, ids=_ids(TWIST_POINTS))
def test_twist_gradient_against_finite_differences(r):
    grad = ec.twist_gradient(r, P)
    fd = np.array(_fd(lambda x: ec.twist_angle(x, P), r))
    _close(grad, fd, 1e-8)


def test_twist_angle_recovers_swing_twist_decomposition():
    u = _unit(np.cross(P, [0.0, 1.0, 0.0]))
    for swing in (0.0, 0.5, 2.0):
        for twist in (0.0, 1e-9, 0.8, -2.5, 3.0):
            r = _swing_twist(u, swing, twist)
            assert ec.twist_angle(r, P) == pytest.approx(twist, abs=1e-12)
    assert ec.twist_angle(1.2 * P, P) == pytest.approx(1.2)
    # the equivalent r past pi gives the same (wrapped) twist
    r = 2.0 * P + _at(0.3, 13)
    r_far = r * (1 + 2 * PI / np.linalg.norm(r))
    assert ec.twist_angle(r_far, P) == pytest.approx(ec.twist_angle(r, P), abs=1e-12)
    rs = np.stack(TWIST_POINTS)
    tw, gr = ec.twist_angle(rs, P), ec.twist_gradient(rs, P)
    for i, r in enumerate(TWIST_POINTS):
        assert tw[i] == pytest.approx(ec.twist_angle(r, P), abs=PATHS_TOL)
        _close(gr[i], ec.twist_gradient(r, P), PATHS_TOL)


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, match", [
    (lambda: ec.J_b([1.0, 2.0]), "shape"),
    (lambda: ec.J_b([np.nan, 0, 0]), "NaN"),
    (lambda: ec.body_velocity([0, 0, 1.0], [np.inf, 0, 0]), "r_dot"),
    (lambda: ec.G_b(_at(2 * PI)), "reparametrize"),
    (lambda: ec.G_s(_at(4 * PI + 1e-7)), "2 pi k"),
    (lambda: ec.rdot_from_body(_at(2 * PI), [1.0, 0, 0]), "reparametrize"),
    (lambda: ec.rddot_from_body(_at(2 * PI), [1.0, 0, 0], [0, 0, 0]), "reparametrize"),
    (lambda: ec.coefficients(2 * PI), "reparametrize"),
    (lambda: ec.coefficients(float("nan")), "NaN"),
    (lambda: ec.coefficient_function("eta", 1.0), "unknown coefficient function"),
    (lambda: ec.coefficient_function("gamma", [0.1, np.inf]), "NaN"),
    (lambda: ec.reparametrize(_at(4.0), r_ddot=[1.0, 0, 0]), "r_dot"),
    (lambda: ec.reparametrize(_at(2 * PI), torque=[1.0, 0, 0]), "torque"),
    (lambda: ec.reach_cone_value(np.zeros(3), [0, 0, 0], 0.5), "zero length"),
    (lambda: ec.reach_cone_value(np.zeros(3), [0, 0, 1], 4.0), r"\[0, pi\]"),
    (lambda: ec.reach_cone_gradient(np.zeros(3), [0, 1], 0.4), "axis"),
    (lambda: ec.elliptic_cone_value(np.zeros(3), P, P, 0.4, 0.5), "parallel"),
    (lambda: ec.elliptic_cone_value(np.zeros(3), P, U, 0.0, 0.5), "half_angle_1"),
    (lambda: ec.twist_angle(PI * _unit(U - (U @ P) * P), P), "swing is exactly pi"),
    (lambda: ec.exp_and_derivatives(np.zeros(3), order=3), "order"),
])
def test_bad_input_raises_helpful_error(call, match):
    with pytest.raises(InvalidInputError, match=match):
        call()
