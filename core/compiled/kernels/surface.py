"""The n-DOF spline joint (:class:`core.joints.spline_surface.SplineJoint`, seed 000 eqs.
25-30) in the compiled kernels: its joint row from the tables that
:meth:`core.joints.spline_surface.SplineJointFamily.kernel_params` packs, following
:meth:`~core.joints.spline_surface.SplineJoint.evaluate`.

Parameters at ``reals[po]``: a header of :data:`~core.compiled.layout.SJ_HEAD` floats,
``n, m``, then per axis ``a < 3`` the six numbers ``(k_a, c_a, lo_a, hi_a, S_a, offset_a)``
(order, coefficient count, knot domain, span count, offset of the axis tables from ``po``;
axes ``a >= n`` are unused);
the offset ``H`` (top 3x4, row-major, 12); the basis twists ``g (m, 6)``; the coefficients
``C (m, c_1, c_2, c_3)`` (``c_a = 1`` for ``a >= n``). An axis table holds its span starts
``(S_a,)``, the first basis index of each span ``(S_a,)`` and the span polynomials ``(S_a,
3, k_a, k_a)`` (value, first and second derivative of the ``k_a`` local basis functions in
the powers of ``x - start``, :class:`core.joints.spline_surface._Axis`).

Evaluation: each axis' local basis at the clamped coordinate (bisection on the span starts),
continued linearly beyond the domain (value plus slope times distance, no second
derivative); ``phi_j``, ``dphi_j/dq_a`` and ``d2phi_j/dq_a dq_b`` as tensor-product sums
(eq. 25); ``G = H prod_j exp(g_j phi_j)`` and the recursion of Appendix B (eqs. 28-30) for
``S`` and ``dS/dq`` as in :func:`core.joints.poe.evaluate`.

Mirrors (reference -> twin; parity test
``tests/core/test_backend_numba.py::test_surface_joints_agree``, inside and beyond the knot
domain):

* ``spline_surface.SplineJoint.evaluate`` -> :func:`surface_joint`, the joint kind
  ``KIND_SURFACE`` of :func:`core.compiled.kernels.joints.large_joint`;
* ``bisect.bisect_right`` on the span starts -> :func:`span_of` (also the cubic spline
  curve's span lookup).
"""

import math

import numpy as np

from .expcoords import exp_factors
from ..layout import SJ_HEAD as HEAD
from ..layout import SJ_PER_AXIS as PER_AXIS
from .options import jit

__all__ = ["surface_joint", "span_of"]


@jit
def span_of(reals, st, ns, x):
    """``max(bisect_right(starts, x) - 1, 0)`` for the ``ns`` increasing span starts at
    ``reals[st]``: the knot span holding ``x``."""
    i, j = 0, ns
    while i < j:
        mid = (i + j) // 2
        if x < reals[st + mid]:
            j = mid
        else:
            i = mid + 1
    return max(i - 1, 0)


@jit
def _basis(reals, po, a, x, B):
    """Axis ``a``'s local basis at ``x`` into ``B[a] (3, k)`` (values, first and second
    derivatives; linear continuation outside the domain). Returns the first basis index."""
    h = po + 2 + PER_AXIS * a
    k, lo, hi, ns = int(reals[h]), reals[h + 2], reals[h + 3], int(reals[h + 4])
    off = po + int(reals[h + 5])
    c = min(max(x, lo), hi)
    s = span_of(reals, off, ns, c)
    u = c - reals[off + s]
    P = off + 2 * ns + 3 * k * k * s
    for d in range(3):
        for i in range(k):
            r = P + (d * k + i) * k
            acc = reals[r + k - 1]
            for p in range(k - 2, -1, -1):
                acc = acc * u + reals[r + p]
            B[a, d, i] = acc
    if c != x:
        for i in range(k):
            B[a, 0, i] += B[a, 1, i] * (x - c)
            B[a, 2, i] = 0.0
    return int(reals[off + ns + s])


@jit
def _functions(reals, po, n, m, q, qs, phi, dphi, d2):
    """``phi (m,)``, ``dphi (m, 3)``, ``d2 (m, 3, 3)`` (entries of axes ``>= n`` zero) at
    ``q[qs:qs + n]`` (eq. 25)."""
    ks, cs, first = np.ones(3, np.int64), np.ones(3, np.int64), np.zeros(3, np.int64)
    kmax = 1
    for a in range(n):
        kmax = max(kmax, int(reals[po + 2 + PER_AXIS * a]))
    B = np.zeros((3, 3, kmax))
    for a in range(3):
        if a < n:
            h = po + 2 + PER_AXIS * a
            ks[a], cs[a] = int(reals[h]), int(reals[h + 1])
            first[a] = _basis(reals, po, a, q[qs + a], B)
        else:
            B[a, 0, 0] = 1.0
    C = po + HEAD + 12 + 6 * m
    for j in range(m):
        f, f0, f1, f2, s00, s11, s22, s01, s02, s12 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, \
            0.0, 0.0
        for i0 in range(ks[0]):
            a0, b0, e0 = B[0, 0, i0], B[0, 1, i0], B[0, 2, i0]
            for i1 in range(ks[1]):
                a1, b1, e1 = B[1, 0, i1], B[1, 1, i1], B[1, 2, i1]
                row = C + ((j * cs[0] + first[0] + i0) * cs[1] + first[1] + i1) * cs[2] \
                    + first[2]
                for i2 in range(ks[2]):
                    a2, b2, e2 = B[2, 0, i2], B[2, 1, i2], B[2, 2, i2]
                    cv = reals[row + i2]
                    f += cv * a0 * a1 * a2
                    f0 += cv * b0 * a1 * a2
                    f1 += cv * a0 * b1 * a2
                    f2 += cv * a0 * a1 * b2
                    s00 += cv * e0 * a1 * a2
                    s11 += cv * a0 * e1 * a2
                    s22 += cv * a0 * a1 * e2
                    s01 += cv * b0 * b1 * a2
                    s02 += cv * b0 * a1 * b2
                    s12 += cv * a0 * b1 * b2
        phi[j] = f
        dphi[j, 0], dphi[j, 1], dphi[j, 2] = f0, f1, f2
        d2[j, 0, 0], d2[j, 1, 1], d2[j, 2, 2] = s00, s11, s22
        d2[j, 0, 1] = d2[j, 1, 0] = s01
        d2[j, 0, 2] = d2[j, 2, 0] = s02
        d2[j, 1, 2] = d2[j, 2, 1] = s12


@jit
def _exp(reals, z, b, R, p):
    """``exp(g b)`` of the twist ``g = [w; v]`` at ``reals[z]`` into ``R (3, 3)``, ``p (3,)``:
    ``R = I + a W + c W^2``, ``p = (b I + c W + e W^2) v`` (:func:`core.joints.poe.exp_scalars`)."""
    w0, w1, w2 = reals[z], reals[z + 1], reals[z + 2]
    v0, v1, v2 = reals[z + 3], reals[z + 4], reals[z + 5]
    f1, f2, f3 = exp_factors(b * math.sqrt(w0 * w0 + w1 * w1 + w2 * w2))
    ca, cc, ce = b * f1, b * b * f2, b * b * b * f3
    W = ((0.0, -w2, w1), (w2, 0.0, -w0), (-w1, w0, 0.0))
    for i in range(3):
        for j in range(3):
            W2 = W[i][0] * W[0][j] + W[i][1] * W[1][j] + W[i][2] * W[2][j]
            R[i, j] = (1.0 if i == j else 0.0) + ca * W[i][j] + cc * W2
    Wv = (-w2 * v1 + w1 * v2, w2 * v0 - w0 * v2, -w1 * v0 + w0 * v1)
    WWv = (-w2 * Wv[1] + w1 * Wv[2], w2 * Wv[0] - w0 * Wv[2], -w1 * Wv[0] + w0 * Wv[1])
    p[0] = b * v0 + cc * Wv[0] + ce * WWv[0]
    p[1] = b * v1 + cc * Wv[1] + ce * WWv[1]
    p[2] = b * v2 + cc * Wv[2] + ce * WWv[2]


@jit
def surface_joint(reals, po, pb, buf, o, sm, oc, q, v, qs, n, with_v):
    """A SplineJoint of ``n`` coordinates from ``q[qs]`` with parameters at ``reals[po]``
    (module docstring) and placement at ``reals[pb]`` (top 3x4): ``P G`` into ``buf[o:o +
    12]``; for one coordinate ``S`` and ``dS/dq`` into ``buf[o + 16:o + 28]``, else the rows
    ``S_j`` at ``sm + 6 (qs + j)`` and, ``with_v``, ``q_dot^T (dS/dq) q_dot`` at ``oc``."""
    m = int(reals[po + 1])
    phi, dphi, d2 = np.zeros(m), np.zeros((m, 3)), np.zeros((m, 3, 3))
    _functions(reals, po, n, m, q, qs, phi, dphi, d2)
    R, p = np.empty((3, 3)), np.empty(3)                # the running P H E_1 .. E_k
    Hh = po + HEAD
    for i in range(3):
        for j in range(4):
            x = reals[pb + 4 * i + 3] if j == 3 else 0.0
            for l in range(3):
                x += reals[pb + 4 * i + l] * reals[Hh + 4 * l + j]
            if j == 3:
                p[i] = x
            else:
                R[i, j] = x
    nc = n + n * n
    X = np.zeros((6, nc))        # [mu^1..mu^n | dmu^i/dq_j at column n + j n + i] (eq. 28-30)
    Rk, pk, y = np.empty((3, 3)), np.empty(3), np.empty(6)
    for k in range(m):
        z = Hh + 12 + 6 * k
        _exp(reals, z, phi[k], Rk, pk)
        for i in range(3):                               # G <- G E_k
            p[i] += R[i, 0] * pk[0] + R[i, 1] * pk[1] + R[i, 2] * pk[2]
        for i in range(3):
            r0, r1, r2 = R[i, 0], R[i, 1], R[i, 2]
            for j in range(3):
                R[i, j] = r0 * Rk[0, j] + r1 * Rk[1, j] + r2 * Rk[2, j]
        if k > 0:                                        # X <- Ad_{exp(-g_k phi_k)} X
            for col in range(nc):
                xw0, xw1, xw2 = X[0, col], X[1, col], X[2, col]
                u0 = X[3, col] - (pk[1] * xw2 - pk[2] * xw1)
                u1 = X[4, col] - (pk[2] * xw0 - pk[0] * xw2)
                u2 = X[5, col] - (pk[0] * xw1 - pk[1] * xw0)
                for r in range(3):
                    X[r, col] = Rk[0, r] * xw0 + Rk[1, r] * xw1 + Rk[2, r] * xw2
                    X[3 + r, col] = Rk[0, r] * u0 + Rk[1, r] * u1 + Rk[2, r] * u2
        for r in range(6):
            g = reals[z + r]
            for i in range(n):
                X[r, i] += g * dphi[k, i]
                for j in range(n):
                    X[r, n + j * n + i] += g * d2[k, i, j]
        if k == 0:
            continue
        w0, w1, w2 = reals[z], reals[z + 1], reals[z + 2]
        v0, v1, v2 = reals[z + 3], reals[z + 4], reals[z + 5]
        for i in range(n):                               # - ad_{g_k} mu_k^i dphi_k/dq_j
            a0, a1, a2, b0, b1, b2 = X[0, i], X[1, i], X[2, i], X[3, i], X[4, i], X[5, i]
            y[0] = w1 * a2 - w2 * a1
            y[1] = w2 * a0 - w0 * a2
            y[2] = w0 * a1 - w1 * a0
            y[3] = w1 * b2 - w2 * b1 + v1 * a2 - v2 * a1
            y[4] = w2 * b0 - w0 * b2 + v2 * a0 - v0 * a2
            y[5] = w0 * b1 - w1 * b0 + v0 * a1 - v1 * a0
            for j in range(n):
                d = dphi[k, j]
                for r in range(6):
                    X[r, n + j * n + i] -= y[r] * d
    for i in range(3):
        for j in range(3):
            buf[o + 4 * i + j] = R[i, j]
        buf[o + 4 * i + 3] = p[i]
    if n == 1:
        for r in range(6):
            buf[o + 16 + r] = X[r, 0]
            buf[o + 22 + r] = X[r, 1]
        return
    for i in range(n):
        for r in range(6):
            buf[sm + 6 * (qs + i) + r] = X[r, i]
    if with_v:
        for r in range(6):
            x = 0.0
            for j in range(n):
                for i in range(n):
                    x += X[r, n + j * n + i] * v[qs + i] * v[qs + j]
            buf[oc + r] = x
