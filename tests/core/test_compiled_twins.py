"""The compiled twins that no algorithm-level test isolates, each against its reference:
the spatial algebra of the recursions (:mod:`core.compiled.kernels.spatial` against
:mod:`core.lie.se3` products and ``numpy.linalg.inv``) and the coefficient functions
(:mod:`core.compiled.kernels.expcoords` against :mod:`core.expcoords`).

Tolerances are derived, not tuned: an entry computed as a sum of products rounds at most
``k`` times on each side (``k`` counted per formula below), and each rounding is at most
``eps`` times the size of the partial results, which the same formula evaluated on the
absolute values of its inputs bounds (Higham, Accuracy and Stability, sec. 3.1); so the
two sides differ by at most ``(k_twin + k_reference) eps`` times that absolute evaluation.
"""

import math

import numpy as np
import pytest

pytest.importorskip("numba")

from core import expcoords  # noqa: E402
from core.compiled.kernels import expcoords as cexp  # noqa: E402
from core.compiled.kernels import spatial  # noqa: E402
from core.lie import se3, so3  # noqa: E402

EPS = np.finfo(float).eps


def _abs_ad_inv(L):
    """``Ad_inv`` of the transform with the absolute values of its R and p: the size of
    every partial result of a product with ``Ad_inv(L)``."""
    A = np.zeros((6, 6))
    Rt = np.abs(L[:3, :3]).T
    A[:3, :3] = A[3:, 3:] = Rt
    A[3:, :3] = Rt @ np.abs(so3.hat(L[:3, 3]))
    return A


def _local(rng):
    """A local transform and the buffer holding it as the kernels do (``R`` row-major, p)."""
    L = se3.from_rp(so3.exp(rng.normal(size=3)), rng.normal(size=3))
    return L, np.concatenate([L[:3, :3].ravel(), L[:3, 3]])


def _close(a, b, k, scale):
    assert np.all(np.abs(a - b) <= k * EPS * scale), np.max(np.abs(a - b) / scale) / EPS


@pytest.mark.parametrize("seed", range(5))
def test_motion_and_force_transforms_are_ad_inv_products(seed):
    """``x_motion_t`` is ``Ad_inv(L) V``: twin ``R^T (v - p x w)`` rounds 6 times (cross 2,
    difference 1, 3-term dot 3), reference 8 (the entries of ``-R^T [p]`` 2, the 6-term
    row 6). ``xt_force_add`` adds ``Ad_inv(L)^T f``: twin ``R n + p x R F`` plus the
    destination 9 times (``R F`` 3, cross 2, ``R n`` 3, sum 1, destination 1 is inside),
    reference 9 (entries 2, the 6-term row 6, the addition 1)."""
    rng = np.random.default_rng(seed)
    L, Lbuf = _local(rng)
    V, f, dst0 = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
    buf = np.concatenate([Lbuf, V, f, dst0])
    X, Xa = se3.Ad_inv(L), _abs_ad_inv(L)
    _close(np.array(spatial.x_motion_t(buf, 0, 12)), X @ V, 6 + 8, Xa @ np.abs(V))
    out = buf.copy()
    spatial.x_motion(out, 0, 12, 18)
    _close(out[18:24], X @ V, 6 + 8, Xa @ np.abs(V))
    out = buf.copy()
    spatial.xt_force_add(out, 0, 18, 24)
    _close(out[24:30], dst0 + X.T @ f, 9 + 9, np.abs(dst0) + Xa.T @ np.abs(f))


@pytest.mark.parametrize("seed", range(5))
def test_xtmx_add_is_the_congruence(seed):
    """``xtmx_add`` adds ``X^T (M - U U^T dinv) X``, ``X = Ad_inv(L)``: twin rounds 17 times
    per entry (the rank-one correction 3, ``R M R^T`` two 3-term products 6, the ``[p]``
    products 2 + 2, their combination 3, the destination 1), reference 18 (correction 3,
    ``Ad_inv`` entries 2, two 6-term products 12, the addition 1)."""
    rng = np.random.default_rng(seed)
    L, Lbuf = _local(rng)
    A = rng.normal(size=(6, 6))
    M = A @ A.T
    U = rng.normal(size=6)
    dinv = 1.0 / (U @ np.linalg.solve(M, U) + 1.0)
    dst0 = rng.normal(size=(6, 6))
    dst0 = dst0 + dst0.T
    buf = np.concatenate([Lbuf, M.ravel(), dst0.ravel()])
    spatial.xtmx_add(buf, 0, 12, 48, tuple(U), dinv)
    X, Xa = se3.Ad_inv(L), _abs_ad_inv(L)
    ref = dst0 + X.T @ (M - np.outer(U, U) * dinv) @ X
    scale = np.abs(dst0) + Xa.T @ (np.abs(M) + np.outer(np.abs(U), np.abs(U)) * dinv) @ Xa
    _close(buf[48:84].reshape(6, 6), ref, 17 + 18, scale)


@pytest.mark.parametrize("seed", range(5))
def test_body_points(seed):
    """``world_point`` is ``R p + t`` (3-term dot and the offset: 4 roundings each side);
    ``point_velocity`` ``R (v + w x p)`` (cross 2, sum 1, dot 3: 6 each side); ``push`` adds
    ``[p x R^T f; R^T f]`` (dot 3, cross 2, destination 1: 6 each side)."""
    rng = np.random.default_rng(seed)
    R, t = so3.exp(rng.normal(size=3)), rng.normal(size=3)
    T = se3.from_rp(R, t)
    p, V, f, dst0 = (rng.normal(size=k) for k in (3, 6, 3, 6))
    buf = np.concatenate([T[:3].ravel(), V, dst0])
    Ra = np.abs(R)
    _close(np.array(spatial.world_point(buf, 0, p, 0)), R @ p + t, 4 + 4,
           Ra @ np.abs(p) + np.abs(t))
    w, v = V[:3], V[3:]
    _close(np.array(spatial.point_velocity(buf, 0, 12, p, 0)), R @ (v + np.cross(w, p)),
           6 + 6, Ra @ (np.abs(v) + np.abs(so3.hat(w)) @ np.abs(p)))
    out = buf.copy()
    spatial.push(out, 0, 18, p, 0, *f)
    g = R.T @ f
    ga = Ra.T @ np.abs(f)
    _close(out[18:24], dst0 + np.concatenate([np.cross(p, g), g]), 6 + 6,
           np.abs(dst0) + np.concatenate([np.abs(so3.hat(p)) @ ga, ga]))


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_invert_is_the_inverse(n):
    """Gauss-Jordan with partial pivoting against ``numpy.linalg.inv`` (LU with partial
    pivoting): each has a forward error of at most about ``3 n eps kappa(A) |A^-1|`` (n
    elimination steps, each updating an entry with a product and a difference, and the
    scaling; the condition number turns the backward error into the forward one)."""
    rng = np.random.default_rng(n)
    A = rng.normal(size=(n, n)) + n * np.eye(n)
    buf = np.concatenate([A.ravel(), np.zeros(n * n), np.zeros(2 * n * n)])
    assert spatial.invert(buf, 0, n, n, n * n, n, 2 * n * n)
    ref = np.linalg.inv(A)
    scale = np.linalg.cond(A) * np.abs(ref).max()
    _close(buf[n * n:2 * n * n].reshape(n, n), ref, 2 * 3 * n, scale)
    singular = np.zeros(n * n + n * n + 2 * n * n)
    assert not spatial.invert(singular, 0, n, n, n * n, n, 2 * n * n)


#: the closed forms' rounding steps (a sine or cosine of one ulp each, then a few products,
#: differences and one division): at most 8 on each side
CLOSED_OPS = 8


def _scale(name, th):
    """The size of the partial results of ``name`` at ``th``: the series on the absolute
    values of its coefficients below the switch angle, else the closed form's terms in
    absolute value over its denominator."""
    spec = expcoords.SPECS[name]
    t = th * th
    if th < spec.theta_c:
        return sum(abs(c) * t ** m for m, c in enumerate(spec.coeffs))
    s, s2 = abs(math.sin(th)), math.sin(0.5 * th) ** 2
    return {"alpha": s / th, "beta": 2 * s2 / t, "gamma": (th + s) / th ** 3,
            "b1": (th * s + 4 * s2) / t ** 2,
            "g1": (2 * th * s2 + 3 * th + 3 * s) / t ** 2 / th}[name]


def _ops(name, th):
    """Rounding steps of one side: a Horner step (a product and a sum) per series term, or
    :data:`CLOSED_OPS`."""
    spec = expcoords.SPECS[name]
    return 2 * len(spec.coeffs) if th < spec.theta_c else CLOSED_OPS


def test_coefficients_agree():
    """``abg`` and ``rate_coefficients`` against :func:`core.expcoords.coefficients` and
    :func:`core.expcoords.coefficient_rates` on both sides of every switch angle (the
    reference's series and closed forms are the twin's, summed by numpy)."""
    angles = sorted({0.0, 1e-8, 0.05, 0.3, 1.0, 2.0, 3.0, 3.1, math.pi - 1e-6}
                    | {expcoords.SPECS[k].theta_c * f for k in ("alpha", "gamma", "b1", "g1")
                       for f in (1 - 1e-12, 1.0, 1 + 1e-12)})
    for th in angles:
        r = np.array([th, 0.0, 0.0])
        ref = expcoords.coefficients(th)
        rates = expcoords.coefficient_rates(th)
        twin = cexp.abg(th, th * th)
        x, y, z, a, b, g, b1, g1 = cexp.rate_coefficients(r, 0)
        assert (x, y, z) == (th, 0.0, 0.0)
        for name, got, want in (("alpha", twin[0], ref.alpha), ("beta", twin[1], ref.beta),
                                ("gamma", twin[2], ref.gamma), ("alpha", a, ref.alpha),
                                ("beta", b, ref.beta), ("gamma", g, ref.gamma),
                                ("b1", b1, rates.beta), ("g1", g1, rates.gamma)):
            tol = 2 * _ops(name, th) * EPS * _scale(name, th)
            assert abs(got - float(want)) <= tol, (name, th, got, float(want))
