"""numba twins of the spatial algebra the tree recursions use (:mod:`core.lie.se3`), on the
flat buffer of :mod:`core.compiled.layout`: motions, wrenches and inertias carried across a
joint's local transform ``L = (R, p)`` (12 floats: ``R`` row-major, then ``p``), the body
points of the point springs and contacts, and a small Gauss-Jordan inverse.

``X^T M X`` is formed from 3x3 blocks (``R M_blk R^T``, the diagonal blocks' upper
triangles only, and products with ``[p]``), about 200 multiplications instead of the 432 of
two 6x6 products.

Mirrors (reference -> twin; parity test ``tests/core/test_compiled_twins.py``, each to the
rounding of its few-term sums, derived there):

* ``se3.Ad_inv(L) @ V`` -> :func:`x_motion`, :func:`x_motion_t`;
* ``se3.Ad_inv(L).T @ f`` (added) -> :func:`xt_force_add`;
* ``X.T @ (M - U U^T dinv) @ X`` with ``X = se3.Ad_inv(L)`` (added) -> :func:`xtmx_add`;
* ``T[:3, :3] @ p + T[:3, 3]`` -> :func:`world_point`; ``R (v + w x p)`` ->
  :func:`point_velocity`; ``[p x R^T f; R^T f]`` (added) -> :func:`push`;
* ``numpy.linalg.inv`` -> :func:`invert`.
"""

from .options import inline, jit

__all__ = ["x_motion", "x_motion_t", "xt_force_add", "xtmx_add", "Z6", "row6", "m6v", "load6",
           "world_point", "point_velocity", "push", "invert"]


@jit
def x_motion(buf, ol, src, dst):
    """``dst = Ad_{L^-1} src`` for the local transform ``L = (R, p)`` at ``ol``:
    ``[R^T w; R^T (v - p x w)]`` (dst may not alias src)."""
    x = x_motion_t(buf, ol, src)
    for i in range(6):
        buf[dst + i] = x[i]


@inline
def x_motion_t(buf, ol, src):
    """``Ad_{L^-1} src`` (see :func:`x_motion`) as a 6-tuple."""
    w0, w1, w2 = buf[src], buf[src + 1], buf[src + 2]
    p0, p1, p2 = buf[ol + 9], buf[ol + 10], buf[ol + 11]
    u0 = buf[src + 3] - (p1 * w2 - p2 * w1)
    u1 = buf[src + 4] - (p2 * w0 - p0 * w2)
    u2 = buf[src + 5] - (p0 * w1 - p1 * w0)
    return (buf[ol] * w0 + buf[ol + 3] * w1 + buf[ol + 6] * w2,
            buf[ol + 1] * w0 + buf[ol + 4] * w1 + buf[ol + 7] * w2,
            buf[ol + 2] * w0 + buf[ol + 5] * w1 + buf[ol + 8] * w2,
            buf[ol] * u0 + buf[ol + 3] * u1 + buf[ol + 6] * u2,
            buf[ol + 1] * u0 + buf[ol + 4] * u1 + buf[ol + 7] * u2,
            buf[ol + 2] * u0 + buf[ol + 5] * u1 + buf[ol + 8] * u2)


@inline
def xt_force_add(buf, ol, src, dst):
    """``dst += Ad_{L^-1}^T src`` for a wrench ``[n; F]``: ``[R n + p x R F; R F]``."""
    n0, n1, n2 = buf[src], buf[src + 1], buf[src + 2]
    F0, F1, F2 = buf[src + 3], buf[src + 4], buf[src + 5]
    RF0 = buf[ol] * F0 + buf[ol + 1] * F1 + buf[ol + 2] * F2
    RF1 = buf[ol + 3] * F0 + buf[ol + 4] * F1 + buf[ol + 5] * F2
    RF2 = buf[ol + 6] * F0 + buf[ol + 7] * F1 + buf[ol + 8] * F2
    p0, p1, p2 = buf[ol + 9], buf[ol + 10], buf[ol + 11]
    buf[dst] += buf[ol] * n0 + buf[ol + 1] * n1 + buf[ol + 2] * n2 + p1 * RF2 - p2 * RF1
    buf[dst + 1] += buf[ol + 3] * n0 + buf[ol + 4] * n1 + buf[ol + 5] * n2 + p2 * RF0 - p0 * RF2
    buf[dst + 2] += buf[ol + 6] * n0 + buf[ol + 7] * n1 + buf[ol + 8] * n2 + p0 * RF1 - p1 * RF0
    buf[dst + 3] += RF0
    buf[dst + 4] += RF1
    buf[dst + 5] += RF2


@jit
def _rmrt(R, M):
    """``R M R^T`` for 3x3 row-major 9-tuples."""
    t = (M[0] * R[0] + M[1] * R[1] + M[2] * R[2], M[0] * R[3] + M[1] * R[4] + M[2] * R[5],
         M[0] * R[6] + M[1] * R[7] + M[2] * R[8], M[3] * R[0] + M[4] * R[1] + M[5] * R[2],
         M[3] * R[3] + M[4] * R[4] + M[5] * R[5], M[3] * R[6] + M[4] * R[7] + M[5] * R[8],
         M[6] * R[0] + M[7] * R[1] + M[8] * R[2], M[6] * R[3] + M[7] * R[4] + M[8] * R[5],
         M[6] * R[6] + M[7] * R[7] + M[8] * R[8])
    return (R[0] * t[0] + R[1] * t[3] + R[2] * t[6], R[0] * t[1] + R[1] * t[4] + R[2] * t[7],
            R[0] * t[2] + R[1] * t[5] + R[2] * t[8], R[3] * t[0] + R[4] * t[3] + R[5] * t[6],
            R[3] * t[1] + R[4] * t[4] + R[5] * t[7], R[3] * t[2] + R[4] * t[5] + R[5] * t[8],
            R[6] * t[0] + R[7] * t[3] + R[8] * t[6], R[6] * t[1] + R[7] * t[4] + R[8] * t[7],
            R[6] * t[2] + R[7] * t[5] + R[8] * t[8])


@jit
def _rmrt_sym(R, M):
    """``R M R^T`` for a symmetric 3x3 ``M`` (row-major 9-tuples): the six entries on and
    above the diagonal, mirrored."""
    t = (M[0] * R[0] + M[1] * R[1] + M[2] * R[2], M[0] * R[3] + M[1] * R[4] + M[2] * R[5],
         M[0] * R[6] + M[1] * R[7] + M[2] * R[8], M[3] * R[0] + M[4] * R[1] + M[5] * R[2],
         M[3] * R[3] + M[4] * R[4] + M[5] * R[5], M[3] * R[6] + M[4] * R[7] + M[5] * R[8],
         M[6] * R[0] + M[7] * R[1] + M[8] * R[2], M[6] * R[3] + M[7] * R[4] + M[8] * R[5],
         M[6] * R[6] + M[7] * R[7] + M[8] * R[8])
    x00 = R[0] * t[0] + R[1] * t[3] + R[2] * t[6]
    x01 = R[0] * t[1] + R[1] * t[4] + R[2] * t[7]
    x02 = R[0] * t[2] + R[1] * t[5] + R[2] * t[8]
    x11 = R[3] * t[1] + R[4] * t[4] + R[5] * t[7]
    x12 = R[3] * t[2] + R[4] * t[5] + R[5] * t[8]
    x22 = R[6] * t[2] + R[7] * t[5] + R[8] * t[8]
    return (x00, x01, x02, x01, x11, x12, x02, x12, x22)


@jit
def _rows_x_p(X, p0, p1, p2):
    """``X [p]``: each row of the 3x3 ``X`` crossed with p."""
    return (X[1] * p2 - X[2] * p1, X[2] * p0 - X[0] * p2, X[0] * p1 - X[1] * p0,
            X[4] * p2 - X[5] * p1, X[5] * p0 - X[3] * p2, X[3] * p1 - X[4] * p0,
            X[7] * p2 - X[8] * p1, X[8] * p0 - X[6] * p2, X[6] * p1 - X[7] * p0)


@jit
def _p_x_cols(X, p0, p1, p2):
    """``[p] X``: p crossed with each column of the 3x3 ``X``."""
    return (p1 * X[6] - p2 * X[3], p1 * X[7] - p2 * X[4], p1 * X[8] - p2 * X[5],
            p2 * X[0] - p0 * X[6], p2 * X[1] - p0 * X[7], p2 * X[2] - p0 * X[8],
            p0 * X[3] - p1 * X[0], p0 * X[4] - p1 * X[1], p0 * X[5] - p1 * X[2])


@jit
def _block(buf, m, r0, c0, U, dinv):
    """The 3x3 block at row ``r0``, column ``c0`` of the 6x6 ``M - U U^T dinv`` (``M`` at
    ``m``), as a 9-tuple."""
    o = m + 6 * r0 + c0
    a0, a1, a2 = U[r0] * dinv, U[r0 + 1] * dinv, U[r0 + 2] * dinv
    b0, b1, b2 = U[c0], U[c0 + 1], U[c0 + 2]
    return (buf[o] - a0 * b0, buf[o + 1] - a0 * b1, buf[o + 2] - a0 * b2,
            buf[o + 6] - a1 * b0, buf[o + 7] - a1 * b1, buf[o + 8] - a1 * b2,
            buf[o + 12] - a2 * b0, buf[o + 13] - a2 * b1, buf[o + 14] - a2 * b2)


#: no rank-one correction for :func:`xtmx_add`
Z6 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@inline
def row6(buf, o, x):
    """``buf[o:o + 6] . x`` for a 6-tuple x."""
    return (buf[o] * x[0] + buf[o + 1] * x[1] + buf[o + 2] * x[2] + buf[o + 3] * x[3]
            + buf[o + 4] * x[4] + buf[o + 5] * x[5])


@inline
def m6v(buf, m, x):
    """The 6x6 matrix at ``m`` (row-major) times the 6-tuple x, as a 6-tuple."""
    return (row6(buf, m, x), row6(buf, m + 6, x), row6(buf, m + 12, x),
            row6(buf, m + 18, x), row6(buf, m + 24, x), row6(buf, m + 30, x))


@inline
def load6(buf, o):
    return (buf[o], buf[o + 1], buf[o + 2], buf[o + 3], buf[o + 4], buf[o + 5])


@jit
def xtmx_add(buf, ol, m, dst, U, dinv):
    """``dst += X^T M' X`` for ``X = Ad_{L^-1}``, ``L = (R, p)`` at ``ol``, and the
    symmetric ``M' = M - U U^T dinv`` (6x6 ``M`` at ``m``, row-major; ``dinv = 0`` for
    ``M`` itself): with the blocks ``M' = [[A, B], [B^T, D]]`` rotated to ``A' = R A R^T``
    (symmetric: :func:`_rmrt_sym`) etc., ``G = B' [p]`` and ``H = D' [p]``, ``X^T M' X =
    [[A' - G - G^T - [p] H, B' - H^T], [B'^T - H, D']]`` (in registers: the buffer is read
    once and written once)."""
    R = (buf[ol], buf[ol + 1], buf[ol + 2], buf[ol + 3], buf[ol + 4], buf[ol + 5],
         buf[ol + 6], buf[ol + 7], buf[ol + 8])
    p0, p1, p2 = buf[ol + 9], buf[ol + 10], buf[ol + 11]
    A = _rmrt_sym(R, _block(buf, m, int(0), int(0), U, dinv))
    B = _rmrt(R, _block(buf, m, int(0), int(3), U, dinv))
    D = _rmrt_sym(R, _block(buf, m, int(3), int(3), U, dinv))
    G = _rows_x_p(B, p0, p1, p2)
    H = _rows_x_p(D, p0, p1, p2)
    pH = _p_x_cols(H, p0, p1, p2)
    for i in range(3):
        for j in range(3):
            k, kt = 3 * i + j, 3 * j + i
            buf[dst + 6 * i + j] += A[k] - G[k] - G[kt] - pH[k]
            buf[dst + 6 * i + 3 + j] += B[k] - H[kt]
            buf[dst + 6 * (3 + i) + j] += B[kt] - H[k]
            buf[dst + 6 * (3 + i) + 3 + j] += D[k]


@jit
def world_point(buf, oo, reals, pp):
    """``R p + t`` for the body point ``p`` at ``reals[pp]`` and the world pose at ``oo``."""
    p0, p1, p2 = reals[pp], reals[pp + 1], reals[pp + 2]
    return (buf[oo] * p0 + buf[oo + 1] * p1 + buf[oo + 2] * p2 + buf[oo + 3],
            buf[oo + 4] * p0 + buf[oo + 5] * p1 + buf[oo + 6] * p2 + buf[oo + 7],
            buf[oo + 8] * p0 + buf[oo + 9] * p1 + buf[oo + 10] * p2 + buf[oo + 11])


@jit
def point_velocity(buf, oo, oV, reals, pp):
    """World velocity ``R (v + w x p)`` of the body point ``p`` (body velocity at ``oV``)."""
    p0, p1, p2 = reals[pp], reals[pp + 1], reals[pp + 2]
    w0, w1, w2 = buf[oV], buf[oV + 1], buf[oV + 2]
    u0 = buf[oV + 3] + w1 * p2 - w2 * p1
    u1 = buf[oV + 4] + w2 * p0 - w0 * p2
    u2 = buf[oV + 5] + w0 * p1 - w1 * p0
    return (buf[oo] * u0 + buf[oo + 1] * u1 + buf[oo + 2] * u2,
            buf[oo + 4] * u0 + buf[oo + 5] * u1 + buf[oo + 6] * u2,
            buf[oo + 8] * u0 + buf[oo + 9] * u1 + buf[oo + 10] * u2)


@jit
def push(buf, oo, of, reals, pp, f0, f1, f2):
    """Add the world force ``f`` at the body point ``p`` as the body-frame wrench
    ``[p x R^T f; R^T f]`` to the external wrench at ``of``."""
    g0 = buf[oo] * f0 + buf[oo + 4] * f1 + buf[oo + 8] * f2
    g1 = buf[oo + 1] * f0 + buf[oo + 5] * f1 + buf[oo + 9] * f2
    g2 = buf[oo + 2] * f0 + buf[oo + 6] * f1 + buf[oo + 10] * f2
    buf[of] += reals[pp + 1] * g2 - reals[pp + 2] * g1
    buf[of + 1] += reals[pp + 2] * g0 - reals[pp] * g2
    buf[of + 2] += reals[pp] * g1 - reals[pp + 1] * g0
    buf[of + 3] += g0
    buf[of + 4] += g1
    buf[of + 5] += g2


@jit
def invert(buf, src, n, stride, dst, dstride, gj):
    """Gauss-Jordan inverse (partial pivoting) of the ``n x n`` matrix at ``src`` (row
    stride ``stride``) into ``dst`` (row stride ``dstride``); False if singular."""
    w = 2 * n
    for i in range(n):
        for j in range(n):
            buf[gj + w * i + j] = buf[src + stride * i + j]
            buf[gj + w * i + n + j] = 1.0 if i == j else 0.0
    for c in range(n):
        piv, best = c, abs(buf[gj + w * c + c])
        for r in range(c + 1, n):
            x = abs(buf[gj + w * r + c])
            if x > best:
                piv, best = r, x
        if not best > 0.0:
            return False
        if piv != c:
            for k in range(w):
                x = buf[gj + w * c + k]
                buf[gj + w * c + k] = buf[gj + w * piv + k]
                buf[gj + w * piv + k] = x
        inv = 1.0 / buf[gj + w * c + c]
        for k in range(w):
            buf[gj + w * c + k] *= inv
        for r in range(n):
            if r != c:
                f = buf[gj + w * r + c]
                if f != 0.0:
                    for k in range(w):
                        buf[gj + w * r + k] -= f * buf[gj + w * c + k]
    for i in range(n):
        for j in range(n):
            buf[dst + dstride * i + j] = buf[gj + w * i + n + j]
    return True
