"""core.lie (SO(3), SE(3), series coefficients): against scipy, series sums, central
differences and exact Taylor references; identities of Ad/ad and their duals; properties."""

from fractions import Fraction
from math import factorial

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.transform import Rotation

from core.errors import InvalidInputError
from core.lie import series, se3, so3

EPS = np.finfo(float).eps
rng = np.random.default_rng(2026)

# Round-off tolerances (absolute, for entries of size <= 1 unless scaled), from the computations:
#: a sum of two or three products, rounded with or without fused multiply-add
PRODUCT_TOL = 4 * EPS
#: rotation matrices from Rodrigues' formula and from scipy's quaternion route: a few ulps each
ROTATION_TOL = 8 * EPS
#: log of a rotation (theta from atan2, the axis from the antisymmetric or near pi the
#: symmetric part, both O(1)-conditioned), or exp after log: a dozen ulps of pi-sized values
ROUND_TRIP_TOL = 48 * EPS
#: products of 3x3 or 6x6 matrices built from the series coefficients (Jacobians, Ad, inverses)
#: against a second route (series sum, another product order): O(100) operations of O(1)
#: condition
MATRIX_TOL = 64 * EPS
#: one formula on the single-element path (Python floats) and the batched path (numpy ufuncs
#: with SIMD sin/cos/arctan2): a few ulps per transcendental through an O(1)-conditioned map
PATHS_TOL = 64 * EPS


def unit(v):
    return v / np.linalg.norm(v)


AXES = [np.array([1.0, 0, 0]), np.array([0, 0, 1.0]), unit(np.array([1.0, 2.0, -2.0]))] + \
    [unit(v) for v in rng.normal(size=(3, 3))]
ANGLES = [0.0, 1e-12, 1e-8, 1e-4, 1e-3 * (1 - 1e-9), 1e-3 * (1 + 1e-9), 0.1, 1.0, 2.5,
          np.pi - 1e-6, np.pi - 1e-9, np.pi]


def rotvecs(max_angle=np.pi):
    """(M, 3) rotation vectors along AXES at ANGLES (and their negatives) up to max_angle."""
    out = [s * t * k for k in AXES for t in ANGLES if t <= max_angle for s in (1.0, -1.0)]
    return np.array(out)


# -- SO(3) exp / log ---------------------------------------------------------------------
def test_hat_vee():
    w, x = rng.normal(size=(2, 5, 3))
    W = so3.hat(w)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", W, x), np.cross(w, x),
                               atol=PRODUCT_TOL * np.abs(w).max() * np.abs(x).max())
    np.testing.assert_array_equal(so3.vee(W), w)
    np.testing.assert_array_equal(W, -np.swapaxes(W, 1, 2))
    xi = rng.normal(size=(4, 2, 6))
    np.testing.assert_array_equal(se3.vee(se3.hat(xi)), xi)


def test_so3_exp_matches_scipy():
    w = np.concatenate([rotvecs(), rng.normal(size=(20, 3)) * 3])
    # the rounding of the angle, eps |w|, enters sin and cos
    np.testing.assert_allclose(so3.exp(w), Rotation.from_rotvec(w).as_matrix(),
                               atol=ROTATION_TOL * np.linalg.norm(w, axis=1).max())


def test_so3_log_round_trip_and_scipy():
    w = rotvecs(max_angle=np.pi - 1e-9)
    R = so3.exp(w)
    np.testing.assert_allclose(so3.log(R), w, atol=ROUND_TRIP_TOL, rtol=0)
    R_scipy = Rotation.from_rotvec(w).as_matrix()
    np.testing.assert_allclose(so3.log(R_scipy), Rotation.from_matrix(R_scipy).as_rotvec(),
                               atol=1e-8)


def test_so3_log_near_and_at_pi():
    """At pi - 1e-9 the axis comes from the symmetric part; at pi either sign is valid."""
    for k in AXES:
        for t in (np.pi - 1e-9, np.pi - 1e-12, np.pi):
            R = Rotation.from_rotvec(t * k).as_matrix()
            w = so3.log(R)
            assert np.isfinite(w).all()
            np.testing.assert_allclose(np.linalg.norm(w), t, atol=1e-12)
            np.testing.assert_allclose(so3.exp(w), R, atol=ROUND_TRIP_TOL)
            if t < np.pi:
                # the sign is right even though sin(theta) ~ 1e-9
                assert w @ k > 0
    # exact half turns (the rotation matrix has no antisymmetric part at all)
    for R in (np.diag([1.0, -1, -1]), np.diag([-1.0, 1, -1]), np.diag([-1.0, -1, 1])):
        w = so3.log(R)
        np.testing.assert_allclose(np.linalg.norm(w), np.pi, atol=ROTATION_TOL)
        np.testing.assert_allclose(so3.exp(w), R, atol=ROTATION_TOL)


def test_so3_log_of_random_rotations_is_batched():
    R = Rotation.random(60, random_state=3).as_matrix().reshape(3, 4, 5, 3, 3)
    w = so3.log(R)
    assert w.shape == (3, 4, 5, 3)
    assert np.all(np.linalg.norm(w, axis=-1) <= np.pi * (1 + PRODUCT_TOL))
    np.testing.assert_allclose(so3.exp(w), R, atol=ROUND_TRIP_TOL)


# -- Jacobians: series sums and central differences --------------------------------------
def series_sum(A, terms=40):
    """sum_k A^k / (k+1)! for square matrices A: (..., n, n)."""
    out = np.zeros_like(A)
    P = np.broadcast_to(np.eye(A.shape[-1]), A.shape).copy()
    for k in range(terms):
        out = out + P / float(factorial(k + 1))
        P = P @ A
    return out


def so3_fd_right(w, h=1e-6):
    """Jr by central differences of log(exp(w)^T exp(w + h e_i)) / h."""
    R0t = so3.exp(w).T
    cols = [(so3.log(R0t @ so3.exp(w + h * e)) - so3.log(R0t @ so3.exp(w - h * e))) / (2 * h)
            for e in np.eye(3)]
    return np.stack(cols, axis=1)


def so3_fd_left(w, h=1e-6):
    R0t = so3.exp(w).T
    cols = [(so3.log(so3.exp(w + h * e) @ R0t) - so3.log(so3.exp(w - h * e) @ R0t)) / (2 * h)
            for e in np.eye(3)]
    return np.stack(cols, axis=1)


def test_so3_jacobians_match_series_and_inverses():
    w = np.concatenate([rotvecs(), rng.normal(size=(10, 3))])
    W = so3.hat(w)
    np.testing.assert_allclose(so3.left_jacobian(w), series_sum(W), atol=MATRIX_TOL)
    np.testing.assert_allclose(so3.right_jacobian(w), series_sum(-W), atol=MATRIX_TOL)
    eye = np.broadcast_to(np.eye(3), W.shape)
    np.testing.assert_allclose(so3.left_jacobian(w) @ so3.left_jacobian_inv(w), eye, atol=1e-13)
    np.testing.assert_allclose(so3.right_jacobian(w) @ so3.right_jacobian_inv(w), eye,
                               atol=1e-13)
    # Jl = R Jr
    np.testing.assert_allclose(so3.left_jacobian(w), so3.exp(w) @ so3.right_jacobian(w),
                               atol=MATRIX_TOL)


def test_so3_jacobians_match_central_differences():
    pts = [np.zeros(3), np.full(3, 1e-8), AXES[2] * 1e-3, rng.normal(size=3),
           AXES[3] * (np.pi - 1e-3), AXES[4] * 2.0]
    for w in pts:
        np.testing.assert_allclose(so3.right_jacobian(w), so3_fd_right(w), atol=1e-8)
        np.testing.assert_allclose(so3.left_jacobian(w), so3_fd_left(w), atol=1e-8)
    # near 2 pi exp is still smooth though log is not: the first-order definition holds
    w = AXES[5] * (2 * np.pi - 0.1)
    dw, R = 1e-6 * unit(rng.normal(size=3)), so3.exp(w)
    np.testing.assert_allclose(so3.exp(w + dw), R @ so3.exp(so3.right_jacobian(w) @ dw),
                               atol=1e-11)
    np.testing.assert_allclose(so3.exp(w + dw), so3.exp(so3.left_jacobian(w) @ dw) @ R,
                               atol=1e-11)
    np.testing.assert_allclose(so3.left_jacobian_inv(w) @ so3.left_jacobian(w), np.eye(3),
                               atol=1e-11)


def se3_fd_right(xi, h=1e-6):
    T0i = se3.inv(se3.exp(xi))
    cols = [(se3.log(T0i @ se3.exp(xi + h * e)) - se3.log(T0i @ se3.exp(xi - h * e))) / (2 * h)
            for e in np.eye(6)]
    return np.stack(cols, axis=1)


def se3_fd_left(xi, h=1e-6):
    T0i = se3.inv(se3.exp(xi))
    cols = [(se3.log(se3.exp(xi + h * e) @ T0i) - se3.log(se3.exp(xi - h * e) @ T0i)) / (2 * h)
            for e in np.eye(6)]
    return np.stack(cols, axis=1)


def twists(max_angle=np.pi):
    w = rotvecs(max_angle)
    v = rng.normal(size=w.shape)
    return np.concatenate([np.concatenate([w, v], axis=1),
                           np.concatenate([rng.normal(size=(10, 3)), rng.normal(size=(10, 3))],
                                          axis=1),
                           [[0, 0, 0, 1.0, -2.0, 0.5]]])


def test_se3_exp_matches_expm_and_log_round_trip():
    xi = twists()
    expected = np.stack([scipy.linalg.expm(X) for X in se3.hat(xi)])
    np.testing.assert_allclose(se3.exp(xi), expected, atol=1e-13)
    xi = twists(max_angle=np.pi - 1e-9)
    np.testing.assert_allclose(se3.log(se3.exp(xi)), xi, atol=5e-8)
    small = twists(max_angle=3.0)
    np.testing.assert_allclose(se3.log(se3.exp(small)), small, atol=1e-13)
    # at exactly pi: exp(log(T)) == T
    xi_pi = np.r_[np.pi * AXES[2], 1.0, 2.0, 3.0]
    T = se3.exp(xi_pi)
    np.testing.assert_allclose(se3.exp(se3.log(T)), T, atol=1e-13)


def test_se3_jacobians_match_series_sum_and_inverses():
    xi = twists()
    A = se3.ad(xi)
    np.testing.assert_allclose(se3.left_jacobian(xi), series_sum(A), atol=1e-13)
    np.testing.assert_allclose(se3.right_jacobian(xi), series_sum(-A), atol=1e-13)
    eye = np.broadcast_to(np.eye(6), A.shape)
    np.testing.assert_allclose(se3.left_jacobian(xi) @ se3.left_jacobian_inv(xi), eye,
                               atol=1e-12)
    np.testing.assert_allclose(se3.right_jacobian(xi) @ se3.right_jacobian_inv(xi), eye,
                               atol=1e-12)
    np.testing.assert_allclose(se3.left_jacobian(xi),
                               se3.Ad(se3.exp(xi)) @ se3.right_jacobian(xi), atol=1e-13)


def test_se3_jacobians_match_central_differences():
    pts = [np.zeros(6), np.full(6, 1e-8), np.r_[AXES[2] * 0.1 * (1 - 1e-9), 1.0, 0.0, -1.0],
           np.r_[AXES[2] * 0.1 * (1 + 1e-9), 1.0, 0.0, -1.0], rng.normal(size=6),
           np.r_[AXES[3] * (np.pi - 1e-3), 0.3, 0.2, 0.1]]
    for xi in pts:
        np.testing.assert_allclose(se3.right_jacobian(xi), se3_fd_right(xi), atol=1e-8)
        np.testing.assert_allclose(se3.left_jacobian(xi), se3_fd_left(xi), atol=1e-8)


# -- series coefficients: exact Taylor references and continuity at the switches ----------
_N_TERMS = 30


def _sin():
    return {2 * n + 1: Fraction((-1) ** n, factorial(2 * n + 1)) for n in range(_N_TERMS)}


def _cos():
    return {2 * n: Fraction((-1) ** n, factorial(2 * n)) for n in range(_N_TERMS)}


def _comb(*terms):
    """sum c * t^m * p(t) over (c, m, p) as {power: Fraction}."""
    out = {}
    for c, m, p in terms:
        for k, v in p.items():
            out[k + m] = out.get(k + m, 0) + c * v
    return out


_ONE = {0: Fraction(1)}
# name -> (numerator power series, power of t in the denominator, constant denominator,
#          (K, m): the closed form cancels, its largest term is K / t^m times the result)
_REFERENCES = {
    "a": (_sin(), 1, 1, (1, 0)),
    "b": (_comb((1, 0, _ONE), (-1, 0, _cos())), 2, 1, (2, 2)),
    "c": (_comb((1, 1, _ONE), (-1, 0, _sin())), 3, 1, (6, 2)),
    "c1": (_comb((4, 0, _ONE), (-1, 1, _sin()), (-4, 0, _cos())), 2, 2, (4, 2)),
    "c2": (_comb((4, 1, _ONE), (-5, 0, _sin()), (1, 1, _cos())), 3, 2, (15, 2)),
    "c3": (_comb((2, 0, _ONE), (-1, 1, _sin()), (-2, 0, _cos())), 4, 2, (24, 4)),
    "c4": (_comb((2, 1, _ONE), (-3, 0, _sin()), (1, 1, _cos())), 5, 2, (180, 4)),
}
_CANCELLATION_D = (12, 2)  # 1 - (t/2) cot(t/2) ~ t^2 / 12


def _bernoulli(n):
    """Exact Bernoulli numbers B_0..B_n (B_1 = -1/2) by the Akiyama-Tanigawa algorithm."""
    out, row = [], []
    for m in range(n + 1):
        row.append(Fraction(1, m + 1))
        for j in range(m, 0, -1):
            row[j - 1] = j * (row[j - 1] - row[j])
        out.append(row[0])
    out[1] = -out[1]
    return out


def _reference(name, t):
    """Exact-coefficient Taylor series evaluated in float (no cancellation for t <= 1)."""
    if name == "d":  # (1 - (t/2) cot(t/2)) / t^2 = -sum_{n>=1} (-1)^n B_2n t^(2n-2) / (2n)!
        B = _bernoulli(2 * _N_TERMS)
        tf = Fraction(float(t))
        return float(-sum((-1) ** n * B[2 * n] * tf ** (2 * n - 2) / factorial(2 * n)
                          for n in range(_N_TERMS, 0, -1)))
    num, shift, den = _REFERENCES[name][:3]
    coeffs = {k - shift: v / den for k, v in num.items() if v != 0}
    assert min(coeffs) >= 0
    return sum(float(v) * t ** k for k, v in sorted(coeffs.items(), reverse=True))


def _coefficient(name, t2):
    if name in ("a", "b", "c", "d"):
        return getattr(series, name)(t2)
    return series.se3_coefficients(t2)[int(name[1]) - 1]


def _tolerance(name, t):
    """Relative round-off bound of the closed form: a few ulps of its largest term, which is
    K / t^m times the result (from _REFERENCES), plus a few ulps of sin and cos and of the
    float-evaluated reference; the Taylor branch has no cancellation."""
    thr = series.SMALL
    if t < thr:
        return 4 * EPS
    K, m = _CANCELLATION_D if name == "d" else _REFERENCES[name][3]
    return 8 * EPS + 4 * K * EPS / t ** m


@pytest.mark.parametrize("name", ["a", "b", "c", "d", "c1", "c2", "c3", "c4"])
def test_series_coefficients_match_exact_taylor(name):
    ts = np.concatenate([[0.0, 1e-12, 1e-8], np.geomspace(1e-5, 1.0, 41),
                         series.SMALL * (1 + np.array([-1e-9, 1e-9]))])
    for t in ts:
        ref = _reference(name, t)
        got = float(_coefficient(name, t * t))
        assert abs(got - ref) <= _tolerance(name, t) * abs(ref), (name, t, got, ref)
    # batched over any shape
    assert _coefficient(name, np.zeros((2, 3))).shape == (2, 3)


@pytest.mark.parametrize("name", ["a", "b", "c", "d", "c1", "c2", "c3", "c4"])
def test_series_coefficients_continuous_at_switch(name):
    """The jump between the Taylor and the closed-form branch at the switch is at the level
    of the closed form's cancellation error (documented in _tolerance)."""
    thr2 = series.SMALL ** 2
    below = float(_coefficient(name, np.nextafter(thr2, 0.0)))   # last Taylor value
    above = float(_coefficient(name, thr2))                      # first closed-form value
    thr = series.SMALL
    assert abs(above - below) <= 2 * _tolerance(name, thr) * abs(below)


def test_d_is_singular_only_at_two_pi():
    assert np.isfinite(series.d((2 * np.pi - 1e-3) ** 2))
    assert abs(series.d((2 * np.pi - 1e-6) ** 2)) > 1e4


# -- Ad, ad and duals ---------------------------------------------------------------------
def random_transforms(n):
    return se3.exp(np.concatenate([rng.normal(size=(n, 3)) * 2, rng.normal(size=(n, 3))],
                                  axis=1))


def test_adjoint_identities():
    T1, T2 = random_transforms(8), random_transforms(8)
    x, y, F = rng.normal(size=(3, 8, 6))
    np.testing.assert_allclose(se3.Ad(T1 @ T2), se3.Ad(T1) @ se3.Ad(T2), atol=1e-13)
    # Ad(T) x is the twist of T hat(x) T^-1
    np.testing.assert_allclose(se3.hat(np.einsum("nij,nj->ni", se3.Ad(T1), x)),
                               T1 @ se3.hat(x) @ se3.inv(T1), atol=1e-13)
    np.testing.assert_allclose(se3.Ad_inv(T1), np.linalg.inv(se3.Ad(T1)), atol=1e-12)
    np.testing.assert_allclose(se3.Ad_inv(T1), se3.Ad(se3.inv(T1)), atol=MATRIX_TOL)
    np.testing.assert_allclose(T1 @ se3.inv(T1), np.broadcast_to(np.eye(4), T1.shape),
                               atol=MATRIX_TOL)
    # ad is the bracket: ad(x) y = vee(hat x hat y - hat y hat x), and ad(x) x = 0
    X, Y = se3.hat(x), se3.hat(y)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", se3.ad(x), y), se3.vee(X @ Y - Y @ X),
                               atol=1e-13)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", se3.ad(x), x), 0.0,
                               atol=2 * PRODUCT_TOL * np.abs(x).max() ** 2)  # w x v + v x w
    # Ad of exp is exp of ad; Ad(T) ad(x) Ad(T)^-1 = ad(Ad(T) x)
    np.testing.assert_allclose(se3.Ad(se3.exp(x)),
                               np.stack([scipy.linalg.expm(A) for A in se3.ad(x)]), atol=1e-12)
    Ax = np.einsum("nij,nj->ni", se3.Ad(T1), x)
    np.testing.assert_allclose(se3.Ad(T1) @ se3.ad(x) @ se3.Ad_inv(T1), se3.ad(Ax), atol=1e-12)
    # duals: transposes, and the pairing <F, x> is invariant
    np.testing.assert_array_equal(se3.Ad_star(T1), np.swapaxes(se3.Ad(T1), 1, 2))
    np.testing.assert_array_equal(se3.ad_star(x), np.swapaxes(se3.ad(x), 1, 2))
    lhs = np.einsum("ni,ni->n", np.einsum("nij,nj->ni", se3.Ad_star(T1), F), x)
    rhs = np.einsum("ni,ni->n", F, np.einsum("nij,nj->ni", se3.Ad(T1), x))
    np.testing.assert_allclose(lhs, rhs, atol=1e-12)
    lhs = np.einsum("ni,ni->n", np.einsum("nij,nj->ni", se3.ad_star(x), F), y)
    rhs = np.einsum("ni,ni->n", F, np.einsum("nij,nj->ni", se3.ad(x), y))
    np.testing.assert_allclose(lhs, rhs, atol=1e-12)


def test_adjoint_block_form_eq2():
    T = random_transforms(1)[0]
    R, p = T[:3, :3], T[:3, 3]
    A = se3.Ad(T)
    np.testing.assert_array_equal(A[:3, :3], R)
    np.testing.assert_array_equal(A[:3, 3:], 0.0)
    np.testing.assert_allclose(A[3:, :3], so3.hat(p) @ R, atol=PRODUCT_TOL * np.abs(p).max())
    np.testing.assert_array_equal(A[3:, 3:], R)
    np.testing.assert_array_equal(se3.from_rp(R, p), T)


# -- validation ---------------------------------------------------------------------------
def test_check_rotation_errors():
    good = Rotation.random(4, random_state=1).as_matrix()
    assert so3.check_rotation(good) is not None
    with pytest.raises(InvalidInputError, match="not a rotation"):
        so3.check_rotation(good * 1.01)
    with pytest.raises(InvalidInputError, match="not a rotation"):
        so3.check_rotation(np.diag([1.0, 1.0, -1.0]))  # a reflection
    with pytest.raises(InvalidInputError, match="NaN"):
        so3.check_rotation(np.full((3, 3), np.nan))
    with pytest.raises(InvalidInputError, match="shape"):
        so3.check_rotation(np.eye(4))
    with pytest.raises(InvalidInputError, match="shape"):
        so3.check_vector(np.zeros(4), "w", 3)
    with pytest.raises(ValueError):  # callers may catch ValueError
        so3.check_vector([np.inf, 0, 0])


def test_check_transform_errors():
    T = random_transforms(3)
    np.testing.assert_array_equal(se3.check_transform(T), T)
    bad_row = T.copy()
    bad_row[:, 3, 0] = 0.5
    with pytest.raises(InvalidInputError, match="last row"):
        se3.check_transform(bad_row)
    scaled = T.copy()
    scaled[:, :3, :3] *= 2.0
    with pytest.raises(InvalidInputError, match="rotation part"):
        se3.check_transform(scaled)
    nan = T.copy()
    nan[0, 0, 3] = np.nan
    with pytest.raises(InvalidInputError, match="NaN"):
        se3.check_transform(nan)
    with pytest.raises(InvalidInputError, match="4, 4"):
        se3.check_transform(np.eye(3))
    with pytest.raises(InvalidInputError, match="shape"):
        se3.check_twist(np.zeros(5))


# -- properties ---------------------------------------------------------------------------
finite = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)
vec3 = arrays(np.float64, 3, elements=finite)
vec6 = arrays(np.float64, 6, elements=finite)


def _inside_pi(w):
    """Scale w into the ball of radius pi - 1e-3 where log inverts exp uniquely."""
    n = np.linalg.norm(w)
    return w if n < np.pi - 1e-3 else w * (np.pi - 1e-3) / n


@settings(max_examples=60, deadline=None)
@given(vec3)
def test_property_so3(w):
    R = so3.exp(w)
    so3.check_rotation(R)
    # the rounding of the angle, eps |w|, enters sin and cos
    np.testing.assert_allclose(R, Rotation.from_rotvec(w).as_matrix(),
                               atol=ROTATION_TOL * max(1.0, np.linalg.norm(w)))
    wi = _inside_pi(w)
    np.testing.assert_allclose(so3.log(so3.exp(wi)), wi, atol=1e-11)
    np.testing.assert_allclose(so3.left_jacobian(w), R @ so3.right_jacobian(w), atol=1e-13)
    np.testing.assert_allclose(so3.exp(-w), R.T, atol=ROTATION_TOL)


@settings(max_examples=60, deadline=None)
@given(vec6, vec6)
def test_property_se3(xi, eta):
    T = se3.exp(xi)
    se3.check_transform(T)
    np.testing.assert_allclose(se3.exp(-xi), se3.inv(T), atol=1e-12)
    np.testing.assert_allclose(se3.Ad(T) @ eta, se3.vee(T @ se3.hat(eta) @ se3.inv(T)),
                               atol=1e-10 * (1 + np.abs(eta).max() * (1 + np.abs(xi).max())))
    xs = np.r_[_inside_pi(xi[:3]), xi[3:]]
    np.testing.assert_allclose(se3.log(se3.exp(xs)), xs, atol=1e-9)
    J = se3.left_jacobian(xs)
    np.testing.assert_allclose(J @ se3.left_jacobian_inv(xs), np.eye(6), atol=1e-9)
    np.testing.assert_allclose(se3.ad(xi) @ xi, 0.0, atol=1e-13)
    # Jacobi identity of the bracket
    zeta = xi[::-1].copy()
    jac = (se3.ad(xi) @ se3.ad(eta) @ zeta + se3.ad(eta) @ se3.ad(zeta) @ xi
           + se3.ad(zeta) @ se3.ad(xi) @ eta)
    np.testing.assert_allclose(jac, 0.0, atol=1e-10)


# -- single-element fast paths agree with the batched paths --------------------------------
@pytest.mark.parametrize("angle", [0.0, 1e-12, 1e-8, 0.3, 0.5, 1.0, 2.0, 2.0944, 2.1,
                                   np.pi - 1e-9, np.pi])
def test_single_and_batched_paths_agree(angle):
    rng = np.random.default_rng(7)
    axis = rng.normal(size=3)
    w = angle * axis / np.linalg.norm(axis)
    xi = np.concatenate([w, rng.normal(size=3)])
    R = Rotation.from_rotvec(w).as_matrix()
    for fn, arg in [(so3.exp, w), (so3.log, R), (so3.left_jacobian, w),
                    (so3.right_jacobian, w), (so3.left_jacobian_inv, w), (se3.exp, xi),
                    (se3.log, se3.exp(xi))]:
        one = fn(arg)
        batch = fn(np.stack([arg, arg]))[1]
        np.testing.assert_allclose(one, batch, rtol=0, atol=PATHS_TOL, err_msg=fn.__name__)
    assert np.allclose(so3.exp(so3.log(R)), R, atol=ROUND_TRIP_TOL)
