"""B-spline bases (core.bspline): against scipy.interpolate.BSpline, partition of unity,
derivatives vs central differences, the cumulative basis (seed 000 eqs. 22-23), tensor
products and input validation."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.interpolate import BSpline

from core import bspline as bs
from core.errors import InvalidInputError


@st.composite
def knot_vectors(draw, min_order=1, max_order=6):
    """A random valid knot vector (with occasional repeated knots) and its order."""
    k = draw(st.integers(min_order, max_order))
    n = draw(st.integers(k, k + 6))
    gaps = draw(st.lists(st.floats(0.05, 2.0), min_size=n + k - 1, max_size=n + k - 1))
    gaps = np.array(gaps)
    # a few zero gaps make repeated knots (multiplicity <= k - 1 keeps every span usable)
    if k >= 3 and draw(st.booleans()):
        i = draw(st.integers(k, n - 1)) if n - 1 >= k else None
        if i is not None:
            gaps[i - 1] = 0.0
    start = draw(st.floats(-5.0, 5.0))
    t = start + np.concatenate([[0.0], np.cumsum(gaps)])
    return t, k


def _grid(t, k, num=41):
    lo, hi = bs.domain(t, k)
    return np.linspace(lo, hi, num)


@settings(max_examples=40, deadline=None)
@given(knot_vectors())
def test_matches_scipy_bspline(tk):
    t, k = tk
    n = t.size - k
    x = _grid(t, k)[:-1]  # scipy's right end differs by convention (extrapolate=False)
    dense = bs.basis_matrix(t, k, x, nderiv=min(k - 1, 3))
    for d in range(dense.shape[0]):
        ref = BSpline(t, np.eye(n), k - 1)(x, nu=d)
        scale = max(1.0, np.abs(ref).max())
        np.testing.assert_allclose(dense[d], ref, atol=1e-9 * scale)


@settings(max_examples=40, deadline=None)
@given(knot_vectors())
def test_partition_of_unity_and_nonnegative(tk):
    t, k = tk
    x = _grid(t, k)
    dense = bs.basis_matrix(t, k, x, nderiv=2)
    np.testing.assert_allclose(dense[0].sum(axis=1), 1.0, atol=1e-13)
    assert dense[0].min() >= 0.0   # Cox-de Boor on the domain: sums of non-negative products
    # derivatives of a partition of unity sum to zero
    np.testing.assert_allclose(dense[1:].sum(axis=2), 0.0, atol=1e-9 * max(1, abs(dense).max()))


@settings(max_examples=30, deadline=None)
@given(knot_vectors(min_order=2), st.floats(0.01, 0.99))
def test_derivatives_vs_central_differences(tk, frac):
    t, k = tk
    lo, hi = bs.domain(t, k)
    x = lo + frac * (hi - lo)
    # stay away from knots where the higher derivatives jump
    if np.min(np.abs(t - x)) < 1e-3:
        x += 2e-3
    h = 1e-6
    d = bs.basis_matrix(t, k, [x - h, x, x + h], nderiv=2)
    fd1 = (d[0, 2] - d[0, 0]) / (2 * h)
    np.testing.assert_allclose(d[1, 1], fd1, atol=1e-6 * max(1, np.abs(d[1]).max()))
    if k >= 3:
        fd2 = (d[1, 2] - d[1, 0]) / (2 * h)
        np.testing.assert_allclose(d[2, 1], fd2, atol=1e-5 * max(1, np.abs(d[2]).max()))


@settings(max_examples=30, deadline=None)
@given(knot_vectors(min_order=2))
def test_cumulative_basis_monotone_0_to_1_and_eq23(tk):
    t, k = tk
    n = t.size - k
    x = _grid(t, k, 201)
    cb = bs.cumulative_basis(t, k, x, nderiv=2)
    np.testing.assert_allclose(cb[0, :, 0], 1.0, atol=1e-13)  # Bc_0 = 1 on the domain
    assert cb[0].min() >= -1e-13 and cb[0].max() <= 1 + 1e-13
    assert np.all(np.diff(cb[0], axis=0) >= -1e-13)  # monotone in x
    assert cb[1].min() >= -1e-12
    # eq. 22: 0 left of t_j, 1 right of t_{j+k-1}
    for j in range(1, n):
        left = x <= t[j]
        right = x >= t[j + k - 1]
        np.testing.assert_allclose(cb[0, left, j], 0.0, atol=1e-13)
        np.testing.assert_allclose(cb[0, right, j], 1.0, atol=1e-13)
    # eq. 23: dBc_j/dx = (k - 1) / (t_{j+k-1} - t_j) B_{j,k-1}(x), where B_{j,k-1} is the
    # order-(k-1) element on t_j .. t_{j+k-1} (from scipy, independently)
    # for k = 2 the order-1 elements are steps, so the derivative jumps at knots and the two
    # implementations may legitimately pick different sides there: compare off the knots
    keep = np.ones(x.size, bool)
    keep[-1] = False
    if k == 2:
        keep &= np.min(np.abs(x[:, None] - t[None, :]), axis=1) > 1e-12
    inner = x[keep]
    for j in range(1, n):
        width = t[j + k - 1] - t[j]
        if width <= 0:
            continue
        elem = BSpline.basis_element(t[j:j + k], extrapolate=False)
        ref = np.nan_to_num(elem(inner)) * (k - 1) / width
        np.testing.assert_allclose(cb[1, keep, j], ref, atol=1e-9 * max(1.0, np.abs(ref).max()))


@settings(max_examples=30, deadline=None)
@given(knot_vectors(min_order=2))
def test_span_polynomials_reproduce_basis(tk):
    t, k = tk
    mus, coeffs = bs.span_polynomials(t, k)
    x = _grid(t, k, 57)
    span, ders = bs.basis_funs(t, k, x)
    for s, mu in enumerate(mus):
        sel = span == mu
        u = x[sel] - t[mu]
        val = np.polynomial.polynomial.polyval(u, coeffs[s].T).T  # (N, k)
        np.testing.assert_allclose(val, ders[0, sel], atol=1e-10)


def test_find_span_repeated_and_end_knots():
    t = bs.clamped_knots(6, 4, 0.0, 3.0)  # [0,0,0,0,1,2,3,3,3,3]
    np.testing.assert_array_equal(bs.find_span(t, 4, [-1.0, 0.0, 0.5, 1.0, 2.999, 3.0, 9.0]),
                                  [3, 3, 3, 4, 5, 5, 5])
    x = np.array([0.0, 3.0])
    # at the clamped ends, k - 1 = 3 levels of right * (N / right): a few ulps of 1
    np.testing.assert_allclose(bs.basis_matrix(t, 4, x)[0],
                               [[1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1]],
                               atol=8 * np.finfo(float).eps)


def test_uniform_and_clamped_constructors():
    t = bs.uniform_knots(5, 4, start=2.0, spacing=0.5)
    assert t.size == 9
    assert bs.domain(t, 4) == (2.0, 3.0)
    tc = bs.clamped_knots(7, 3, -1.0, 1.0)
    assert tc.size == 10 and bs.domain(tc, 3) == (-1.0, 1.0)
    bs.check_knots(tc, 3)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_tensor_basis_partition_and_derivatives(n):
    rng = np.random.default_rng(n)
    knots = [bs.uniform_knots(4 + a, 4, start=-1.0, spacing=0.4 + 0.1 * a) for a in range(n)]
    orders = [4, 3, 4][:n]
    knots[1:2] = [bs.clamped_knots(5, 3, -1.0, 1.0)][: n - 1]
    x = np.array([[bs.domain(knots[a], orders[a])[0] + 0.37 * (a + 1) for a in range(n)]])
    W, dW, d2W = bs.tensor_basis(knots, orders, x, nderiv=2)
    np.testing.assert_allclose(W.sum(), 1.0, atol=1e-13)
    coef = rng.normal(size=W.shape[1])
    h = 1e-6
    for a in range(n):
        e = np.zeros(n)
        e[a] = h
        Wp, dWp = bs.tensor_basis(knots, orders, x + e, nderiv=1)
        Wm, dWm = bs.tensor_basis(knots, orders, x - e, nderiv=1)
        np.testing.assert_allclose(coef @ dW[0, a], coef @ (Wp[0] - Wm[0]) / (2 * h), atol=1e-7)
        np.testing.assert_allclose(d2W[0, :, a] @ coef, (dWp[0] - dWm[0]) @ coef / (2 * h),
                                   atol=1e-6)
    np.testing.assert_allclose(d2W[0], np.swapaxes(d2W[0], 0, 1))


@pytest.mark.parametrize(
    "knots, order, fragment",
    [
        ([0, 1, 2, 1.5, 3, 4, 5, 6], 4, "non-decreasing"),
        ([0, 1, 2, 3, 4, 5], 4, "at least 8"),
        ([0, 1, 2, np.nan, 4, 5, 6, 7], 4, "NaN or inf"),
        ([0, 1, 2, np.inf, 4, 5, 6, 7], 4, "NaN or inf"),
        ([[0, 1, 2, 3, 4, 5, 6, 7]], 4, "1-D"),
        ([0, 1, 1, 1, 1, 1, 2, 3, 4], 4, "at most 4"),
        ([0, 1, 2, 3, 4, 5, 6, 7], 0, "order"),
        ([0, 1, 2, 3, 4, 5, 6, 7], 2.5, "order"),
        ([0, 0, 0, 0, 0, 1, 1, 1], 4, "at most 4"),
    ],
)
def test_bad_knots_raise_with_fix_it_message(knots, order, fragment):
    with pytest.raises(InvalidInputError, match=fragment):
        bs.check_knots(knots, order)


def test_bad_parameter_values_raise():
    t = bs.uniform_knots(5, 4)
    with pytest.raises(InvalidInputError, match="NaN or inf"):
        bs.basis_funs(t, 4, [0.1, np.nan])
    with pytest.raises(InvalidInputError, match="shape"):
        bs.tensor_basis([t, t], 4, np.zeros((3, 3)))
