"""Product-of-exponentials engine shared by the spline joints (seed 000 eqs. 26-30, Appendix B).

Both spline joints have the form ``G(q) = H prod_{k=1..m} exp(g_k phi_k(q))`` with constant
twists ``g_k: (6,)`` and scalar functions ``phi_k`` of ``q: (n,)`` (eq. 26). This module
evaluates ``G``, the body Jacobian ``S = [s_1 .. s_n]`` (eq. 27) and its derivative by the
recursion of Appendix B in ``O(n^2 m)``:

    mu_0^i = 0
    mu_k^i = g_k dphi_k/dq_i + Ad_{exp(-g_k phi_k)} mu_{k-1}^i                     (eq. 28)
    dmu_k^i/dq_j = g_k d2phi_k/dq_i dq_j + Ad_{exp(-g_k phi_k)} dmu_{k-1}^i/dq_j
                   + ad_{mu_k^i} g_k dphi_k/dq_j                                   (eq. 30)
    s_i = mu_m^i,  ds_i/dq_j = dmu_m^i/dq_j                                        (eq. 29)

The ad term uses the *updated* ``mu_k^i`` (seeds README, known traps): differentiating
``Ad_{exp(-g phi)} x`` in ``phi`` gives ``-ad_g Ad_{exp(-g phi)} x = ad_{Ad x} g``, and since
``ad_g g = 0`` this equals ``ad_{mu_k^i} g``, and ``ad_{mu_k^i} g_k = -ad_{g_k} mu_k^i``.

Speed: for a twist ``z = [w; v]`` with ``theta = |w|`` and a scalar ``b``, ``exp(z b)`` and
``Ad_{exp(-z b)}`` are linear in ten scalar functions of ``b`` (see :func:`exp_scalars`):

    exp(z b)        = I4 + sum_r s_r(b) KE_r      (only r = 0..3 are non-zero)
    Ad_{exp(-z b)}  = I6 + sum_r s_r(b) KA_r

with constant matrices ``KE_r``, ``KA_r`` built once per twist by :class:`TwistTable`. One
small batched matrix product then gives every exponential and adjoint of an evaluation.
"""

import math

import numpy as np

from ..errors import InvalidInputError, NonFiniteError
from ..lie import series, so3

__all__ = ["TwistTable", "exp_factors", "exp_scalars", "exp_scalars_batch", "evaluate", "soa_twists",
           "transforms"]

#: below this |b theta| the Taylor series of (x - sin x)/x^3 is used (core.lie.series's switch;
#: its series runs through x^14). sin(x)/x and (1 - cos x)/x^2 = (sin(x/2)/(x/2))^2 / 2 have no
#: cancellation and use their closed forms down to TINY.
SMALL = series.SMALL
TINY = 1e-100
_C3_0, _C3_1, _C3_2, _C3_3, _C3_4, _C3_5, _C3_6, _C3_7 = series.SERIES["c"]  # x^0 .. x^14

#: the 4x4 identity, flattened row-major
I4_FLAT = np.eye(4).ravel()
_I6 = np.eye(6).ravel()


def exp_factors(x):
    """``(sin(x)/x, (1 - cos x)/x^2, (x - sin x)/x^3)`` for a float ``x``: closed forms down
    to TINY for the first two (``(1 - cos x)/x^2 = (sin(x/2)/(x/2))^2 / 2``), the series of
    the third below SMALL. Plain ``math`` on floats, so the compiled kernels
    (:mod:`core.compiled.kernels`) compile this same function."""
    ax = abs(x)
    if ax < TINY:
        f1, f2 = 1.0, 0.5
    else:
        f1 = math.sin(x) / x
        h = math.sin(0.5 * x) / (0.5 * x)
        f2 = 0.5 * h * h
    if ax < SMALL:
        x2 = x * x
        f3 = ((((((_C3_7 * x2 + _C3_6) * x2 + _C3_5) * x2 + _C3_4) * x2 + _C3_3) * x2 + _C3_2)
              * x2 + _C3_1) * x2 + _C3_0
    else:
        f3 = (x - math.sin(x)) / (x * x * x)
    return f1, f2, f3


def exp_scalars(b, theta):
    """The ten scalars ``[a, c, b, e, ab, ac, ae, bc, cc, ce]`` of ``exp(z b)`` (pure Python).

    With ``x = b theta``: ``a = sin(x)/theta = b sin(x)/x``,
    ``c = (1 - cos x)/theta^2 = b^2 (1 - cos x)/x^2``, ``e = (x - sin x)/theta^3 =
    b^3 (x - sin x)/x^3``, so that ``R = I + a W + c W^2`` and ``p = (b I + c W + e W^2) v``
    (Rodrigues; W = [w]). The products are the coefficients of ``Ad_{exp(-z b)}``. Exact
    for every angle, including ``x`` near 0, pi and 2 pi (the series of :mod:`core.lie.series`
    below SMALL). Scalar twin of :func:`exp_scalars_batch`.
    """
    f1, f2, f3 = exp_factors(b * theta)
    a = b * f1
    c = b * b * f2
    e = b * b * b * f3
    return [a, c, b, e, a * b, a * c, a * e, b * c, c * c, c * e]


def exp_scalars_batch(b, theta):
    """Vectorised :func:`exp_scalars`: ``b, theta`` broadcastable arrays -> (..., 10).

    Same branches as the scalar twin (closed forms for ``sin(x)/x`` and ``(1 - cos x)/x^2``
    down to TINY, the series of ``(x - sin x)/x^3`` only on the elements below SMALL), so the
    two agree to round-off.
    """
    b, theta = np.broadcast_arrays(np.asarray(b, dtype=float), np.asarray(theta, dtype=float))
    f1, f2, f3 = _exp_factors(np.abs(b * theta))
    out = np.empty(f1.shape + (10,))
    out[..., 0] = b * f1                                               # a
    out[..., 1] = b * b * f2                                           # c
    out[..., 2] = b
    out[..., 3] = b * b * b * f3                                       # e
    out[..., 4:] = out[..., [0, 0, 0, 2, 1, 1]] * out[..., [2, 1, 3, 1, 1, 3]]  # ab ac ae bc cc ce
    return out


class TwistTable:
    """Per-twist constants for fast ``exp(g b)`` and ``Ad_{exp(-g b)}``.

    g: (m, 6) twists ``[w; v]``. Attributes: ``g`` (m, 6), ``theta`` (m,) = |w|,
    ``adg`` (m, 6, 6) = ad_g (seed 000 eq. 4), ``K`` (m, 10, 52) with ``K[k, r, :16]`` = KE_r and
    ``K[k, r, 16:]`` = KA_r flattened (see the module docstring).
    """

    def __init__(self, g):
        g = np.array(g, dtype=float, copy=True)
        if g.ndim != 2 or g.shape[1] != 6:
            raise InvalidInputError(f"twists must have shape (m, 6); got {g.shape}.")
        if not np.all(np.isfinite(g)):
            raise NonFiniteError("twists contain NaN or inf; pass finite twists.")
        m = g.shape[0]
        w, v = g[:, :3], g[:, 3:]
        W = so3.hat(w)
        W2 = W @ W
        Wv = np.einsum("kij,kj->ki", W, v)
        WWv = np.einsum("kij,kj->ki", W, Wv)
        V0, V1, V2 = so3.hat(v), so3.hat(Wv), so3.hat(WWv)
        KE = np.zeros((m, 10, 4, 4))
        KA = np.zeros((m, 10, 6, 6))
        # exp(+g b): R = I + a W + c W^2, p = b v + c W v + e W^2 v
        KE[:, 0, :3, :3] = W
        KE[:, 1, :3, :3] = W2
        KE[:, 1, :3, 3] = Wv
        KE[:, 2, :3, 3] = v
        KE[:, 3, :3, 3] = WWv
        # Ad_{exp(-g b)} = [[R-, 0], [[p-] R-, R-]] with R- = I - a W + c W^2,
        # [p-] = -b V0 + c V1 - e V2 (V_i = [W^i v]); expand [p-] R- in the ten scalars.
        for blk in (slice(0, 3), slice(3, 6)):
            KA[:, 0, blk, blk] = -W
            KA[:, 1, blk, blk] = W2
        ll = (slice(3, 6), slice(0, 3))
        KA[:, 2][:, ll[0], ll[1]] = -V0
        KA[:, 1][:, ll[0], ll[1]] = V1
        KA[:, 3][:, ll[0], ll[1]] = -V2
        KA[:, 4][:, ll[0], ll[1]] = V0 @ W
        KA[:, 5][:, ll[0], ll[1]] = -(V1 @ W)
        KA[:, 6][:, ll[0], ll[1]] = V2 @ W
        KA[:, 7][:, ll[0], ll[1]] = -(V0 @ W2)
        KA[:, 8][:, ll[0], ll[1]] = V1 @ W2
        KA[:, 9][:, ll[0], ll[1]] = -(V2 @ W2)
        self.g = g
        self.theta = np.linalg.norm(w, axis=1)
        self.adg = np.zeros((m, 6, 6))
        self.adg[:, :3, :3] = W
        self.adg[:, 3:, 3:] = W
        self.adg[:, 3:, :3] = V0
        self.K = np.ascontiguousarray(
            np.concatenate([KE.reshape(m, 10, 16), KA.reshape(m, 10, 36)], axis=2))
        self.KE = np.ascontiguousarray(self.K[:, :4, :16])

    def __len__(self):
        return self.g.shape[0]

    def take(self, idx):
        """A new table with the twists ``idx`` (no recomputation)."""
        out = TwistTable.__new__(TwistTable)
        out.g = self.g[idx]
        out.theta = self.theta[idx]
        out.adg = self.adg[idx]
        out.K = np.ascontiguousarray(self.K[idx])
        out.KE = np.ascontiguousarray(self.KE[idx])
        return out


_AD_INDEX = {}


def _ad_index(n):
    """Index arrays placing dphi_k[j] at F[i, n + j n + i] (cached per n)."""
    if n not in _AD_INDEX:
        j, i = np.divmod(np.arange(n * n), n)
        _AD_INDEX[n] = (i, n + np.arange(n * n), j)
    return _AD_INDEX[n]


def evaluate(H, g, theta, adg, K, phi, dphi, d2phi):
    """``(G, S, dS)`` of ``G(q) = H prod_k exp(g_k phi_k)`` (eqs. 26-30, Appendix B).

    H: (4, 4); g: (m, 6), theta: (m,), adg: (m, 6, 6), K: (m, 10, 52) from :class:`TwistTable`;
    phi: (m,) values, dphi: (m, n) = dphi_k/dq_i, d2phi: (m, n, n) second derivatives.
    Returns G (4, 4), S (6, n) and Hs (n, 6, n) with ``Hs[j] = dS/dq_j``. O(n^2 m).
    """
    m, n = dphi.shape
    coef = np.array([exp_scalars(phi[k], theta[k]) for k in range(m)])
    r = np.matmul(coef[:, None, :], K)[:, 0, :]
    E = (r[:, :16] + I4_FLAT).reshape(m, 4, 4)
    A = (r[:, 16:] + _I6).reshape(m, 6, 6)
    G = H @ E[0]
    for k in range(1, m):
        G = G @ E[k]
    # X = [mu^1..mu^n | dmu^i/dq_j at column n + j n + i], (6, n + n^2)
    c = n + n * n
    cc = np.concatenate([dphi, d2phi.reshape(m, n * n)], axis=1)
    gcc = g[:, :, None] * cc[:, None, :]  # (m, 6, c): the g_k dphi_k, g_k d2phi_k terms
    # the ad term as a right factor: (X @ F_k)[:, n + j n + i] = X[:, i] dphi_k[j]
    rows, cols, rep = _ad_index(n)
    F = np.zeros((m, c, c))
    F[:, rows, cols] = dphi[:, rep]
    X = gcc[0]
    for k in range(1, m):
        X = A[k] @ X + gcc[k]
        X -= adg[k] @ (X @ F[k])  # ad_{mu_k^i} g_k dphi_k/dq_j = -ad_{g_k} mu_k^i dphi_k/dq_j
    S = X[:, :n].copy()
    Hs = X[:, n:].reshape(6, n, n).transpose(1, 0, 2).copy()
    return G, S, Hs


def soa_twists(g):
    """Per-twist constants for :func:`transforms`: g (..., 6) -> (..., 11) holding
    ``[w (3), v (3), w x v (3), w . v, |w|^2]``."""
    g = np.asarray(g, dtype=float)
    w, v = g[..., :3], g[..., 3:]
    return np.concatenate([w, v, np.cross(w, v), np.sum(w * v, axis=-1, keepdims=True),
                           np.sum(w * w, axis=-1, keepdims=True)], axis=-1)


def _exp_factors(x):
    """``sin(x)/x, (1 - cos x)/x^2, (x - sin x)/x^3`` for an array of angles ``x >= 0``
    (the branches of :func:`exp_scalars`: one sine pair per element, the Taylor series of
    the third only on the elements below SMALL, the limits 1 and 1/2 below TINY)."""
    x = np.asarray(x, dtype=float)
    shape = x.shape
    x = x.reshape(-1)
    xmin = x.min() if x.size else 1.0
    tiny = x < TINY if xmin < TINY else None
    xs = x
    if tiny is not None:
        xs = x.copy()
        xs[tiny] = 1.0
    sx = np.sin(xs)
    f1 = sx / xs
    h = np.sin(0.5 * xs) / (0.5 * xs)
    f2 = 0.5 * h * h
    f3 = (xs - sx) / (xs * xs * xs)
    if tiny is not None:
        f1[tiny] = 1.0
        f2[tiny] = 0.5
    if xmin < SMALL:
        small = x < SMALL
        # the series through x^14 as one product with the powers [1, x^2, .., x^14]
        f3[small] = np.power(x[small][:, None], _EVEN_POWERS) @ _C3
    return f1.reshape(shape), f2.reshape(shape), f3.reshape(shape)


_EVEN_POWERS = 2.0 * np.arange(len(series.SERIES["c"]))
_C3 = np.array(series.SERIES["c"])


def _exp_coefficients(x2):
    """:func:`_exp_factors` of ``x = sqrt(x2)`` for an array of squared angles."""
    return _exp_factors(np.sqrt(x2))


def transforms(H, P, phi):
    """Batched ``G = H prod_k exp(g_k phi_k)`` for N samples, vectorised over the samples.

    Works on "structure of arrays" (samples along the last axis): H (3, 4, N) or (3, 4, 1)
    (the top rows of the 4x4 transforms); P (m, 11, N) or (m, 11, 1) from :func:`soa_twists`;
    phi (m, N). Returns (N, 4, 4). Rodrigues' formula and the affine products are written as
    broadcast products: numpy's stacked 4x4 matmul is several times slower for large N.
    """
    m, N = phi.shape
    G = np.array(np.broadcast_to(H, (3, 4, N)))
    T2 = P[:, 10]
    f1, f2, f3 = _exp_coefficients(phi * phi * T2)
    A_ = phi * f1
    C_ = phi * phi * f2
    E_ = phi * phi * phi * f3
    E = np.empty((3, 4, N))
    out = np.empty((3, 4, N))
    for k in range(m):
        w, v, wxv, wv = P[k, 0:3], P[k, 3:6], P[k, 6:9], P[k, 9]
        b, t2, a, c, e = phi[k], T2[k], A_[k], C_[k], E_[k]
        # R = I + a [w] + c (w w^T - t2 I)
        cw = c * w
        np.multiply(cw[:, None, :], w[None, :, :], out=E[:, :3, :])
        diag = 1.0 - c * t2
        for i in range(3):
            E[i, i] += diag
        aw = a * w
        E[0, 1] -= aw[2]
        E[1, 0] += aw[2]
        E[0, 2] += aw[1]
        E[2, 0] -= aw[1]
        E[1, 2] -= aw[0]
        E[2, 1] += aw[0]
        # p = b v + c (w x v) + e (w (w . v) - t2 v)
        np.multiply(v, b - e * t2, out=E[:, 3])
        E[:, 3] += c * wxv
        E[:, 3] += (e * wv) * w
        # G <- G E (affine 3x4 blocks)
        np.multiply(G[:, 0:1], E[0:1], out=out)
        out += G[:, 1:2] * E[1:2]
        out += G[:, 2:3] * E[2:3]
        out[:, 3] += G[:, 3]
        G, out = out, G
    res = np.empty((N, 4, 4))
    res[:, :3, :] = G.transpose(2, 0, 1)
    res[:, 3, :] = (0.0, 0.0, 0.0, 1.0)
    return res
