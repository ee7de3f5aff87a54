"""numba kernels of the tree algorithms (the only module of the core importing numba).

Every kernel takes the model's packed ``ints, reals`` (:mod:`core.compiled.pack`), the
Data's flat ``buffer`` (:mod:`core.compiled.layout`) and the state vectors; it allocates
nothing and returns a status (0: done; 1: a joint's ``D = S^T IA S`` is singular).

The recursions run in body frames (Featherstone's form of seed 000 eqs. 11, 14-16 and
Appendix A), one body at a time in the model's order (parents first):

* joints: each body's local transform ``P G(q)`` and ``S``, ``dS/dq`` (one coordinate) or
  ``S`` rows (several) from the joint's kind (constant screw, cubic spline span tables,
  spherical joint in exponential coordinates, OpenSim CustomJoint tables in
  :mod:`core.compiled.custom`, n-DOF spline joints in :mod:`core.compiled.surface`, closed
  spline curves, welds), or as written by the Python families;
* ``V_i = X_i V_p + S q_dot``, with ``X_i = Ad_{(P G)^-1}`` (world poses ``T_i = T_p P G``
  are composed alongside into ``LSH``), and the bias acceleration
  ``c_i = ad_{V_i} S q_dot + q_dot^T (dS/dq) q_dot`` (eq. 14);
* aba (Appendix A): articulated inertias ``IA`` and bias wrenches ``pA = -ad_V^T J V -
  f_ext`` backwards, ``IA_p += X^T (IA - U D^-1 U^T) X``, then the accelerations forwards
  from the base acceleration ``[0; -g]``;
* rnea: ``A_i = X_i A_p + S q_ddot + c_i``, ``f_i = J A_i - ad_V^T J V - f_ext``,
  ``tau = S^T f`` and ``f_p += X^T f`` backwards;
* crba: composite inertias ``Ic_p += X^T Ic X`` backwards, then ``M_jl = S_j^T F`` with
  ``F = Ic S_l`` carried to each ancestor by ``X^T``.

``X^T M X`` is formed from 3x3 blocks (``R M_blk R^T``, the diagonal blocks' upper
triangles only, and products with ``[p]``), about 200 multiplications instead of the 432 of
two 6x6 products.

Compile time: numba compiles a function once per distinct tuple of argument types, and a
constant passed by one kernel to another is typed as that literal value, so the kernels
pass constants as ``bool(True)``, ``int(0)`` (run-time values of one type) and every array
with one dtype, layout and writability: each function compiles once for all its callers.
Each entry point's compile optimizes all the code it calls again, so thin levels between
them are inlined (``inline="always"``), as are the small spatial products of the
recursions' loops (LLVM calls them otherwise, returning their tuples through memory), and
code a call cannot need is not compiled for it: the large joint kinds only for read-only
``ints`` (:func:`_large_joint`), the drive only where its arguments are not None
(:func:`_stage`).
"""

import math

import numpy as np
from numba import njit
from numba.extending import overload

from .. import expcoords
from ..joints import poe
from .layout import (BODY_REALS, B_A, B_C, B_F, B_I, B_LOCAL, B_P, B_SIZE, B_V, D_DINV, D_SIZE,
                     D_U, D_USMALL, HEADER, H_BODY, H_CB, H_DDQ, H_DOF, H_IPOINT, H_LSH, H_M, H_NB,
                     H_NLE, H_NPS, H_NV, H_RPOINT, H_RSPRING, H_SM, H_SPRINGS, H_TAU, H_TMP, I_DEG,
                     I_KIND, I_N, I_NS, I_PAR, I_PARENT, I_Q, KIND_SCREW, KIND_SPHERE, KIND_SPLINE,
                     LI_C, LI_HEADER, LI_ITER, LI_MIN, LIMIT_CONE, LIMIT_LOWER, LR_HEADER, LR_PER,
                     NI, PGS_RTOL, POSITION_PASSES, POSITION_SLACK, R_BODIES, S_CHARTS, S_H, S_METHOD, S_NFEXT, S_NSUB, S_SIZE, T_BASE, T_GJ, T_ROT, T_VEC)
from .custom import custom_joint
from .layout import (KIND_CLOSED_SPLINE, KIND_CUSTOM, KIND_FIXED, KIND_FREE, KIND_SURFACE,
                     LIMIT_ELLIPSE, LIMIT_TWIST_LOWER, limit_offsets)
from .surface import span_of, surface_joint

__all__ = ["aba", "aba_free", "rnea", "crba", "energies", "step", "driven_step", "advance",
           "advance_unconstrained", "cg"]

#: every kernel: cached on disk, numpy's error model (a division by zero gives inf/NaN, which
#: the statuses and the callers' finiteness checks catch, instead of a checked branch)
_OPTIONS = {"error_model": "numpy", "fastmath": {"contract"}}
_jit = njit(cache=True, **_OPTIONS)
#: the same, inlined by numba into each caller: for the thin levels between compiled calls
_inline = njit(cache=True, inline="always", **_OPTIONS)

# -- scalar coefficient functions (the same series and switches as the numpy code) -------
#: the exp(z b) factors of the spline extrapolation: poe's own function, compiled
_exp_factors = _jit(poe.exp_factors)
#: the limit solver's offsets: the layout's own function, compiled
_limit_offsets = _jit(limit_offsets)


def _spec(name):
    s = expcoords._SPECS[name]
    return float(s.theta_c), np.array(s.coeffs)


_TH_A, _S_A = _spec("alpha")
_TH_B, _S_B = _spec("beta")
_TH_G, _S_G = _spec("gamma")
_TH_B1, _S_B1 = _spec("b1")
_TH_G1, _S_G1 = _spec("g1")
_TH_SH, _S_SH = _spec("sh")
_TH_SH1, _S_SH1 = _spec("sh1")


@_jit
def _horner(c, t):
    acc = c[c.size - 1]
    for i in range(c.size - 2, -1, -1):
        acc = acc * t + c[i]
    return acc


@_jit
def _abg(th, t):
    """alpha, beta, gamma of seed 003 at the angle th (t = th^2)."""
    a = _horner(_S_A, t) if th < _TH_A else math.sin(th) / th
    if th < _TH_B:
        b = _horner(_S_B, t)
    else:
        h = math.sin(0.5 * th) / th
        b = 2.0 * h * h
    g = _horner(_S_G, t) if th < _TH_G else (th - math.sin(th)) / (th * th * th)
    return a, b, g


@_jit
def _b1g1(th, t):
    """The rate factors b1 = (alpha - 2 beta)/t and g1 = (beta - 3 gamma)/t."""
    if th < _TH_B1:
        b1 = _horner(_S_B1, t)
    else:
        s2 = math.sin(0.5 * th)
        b1 = (th * math.sin(th) - 4.0 * s2 * s2) / (t * t)
    if th < _TH_G1:
        g1 = _horner(_S_G1, t)
    else:
        s2 = math.sin(0.5 * th)
        g1 = (2.0 * th * s2 * s2 - 3.0 * th + 3.0 * math.sin(th)) / (t * t * th)
    return b1, g1


# -- joints ------------------------------------------------------------------------------
@_jit
def _screw(reals, po, buf, o, x):
    """``P G = [1, sin x, 1 - cos x, x]`` times the (4, 12) table; S = screw, dS/dq = 0."""
    s = math.sin(x)
    c1 = 1.0 - math.cos(x)
    for k in range(12):
        buf[o + k] = (reals[po + k] + s * reals[po + 12 + k] + c1 * reals[po + 24 + k]
                      + x * reals[po + 36 + k])
    for k in range(6):
        buf[o + 16 + k] = reals[po + 48 + k]
        buf[o + 22 + k] = 0.0


@_jit
def _spline(reals, po, ns, deg, buf, o, x):
    """Cubic spline curve: the span's polynomial in ``x - midpoint`` (Horner) for the 28
    values ``[P G (16), S, dS/dq]``; beyond the knots ``P G_end exp(S_end dq)``, S = S_end
    and dS/dq = 0 (as :meth:`SplineCurveJoint.evaluate`)."""
    lo, hi = reals[po], reals[po + 1]
    st = po + 2
    if lo <= x <= hi:
        s = span_of(reals, st, ns, x)
        w = 1 + 28 * (deg + 1)
        r = st + ns + 36 + s * w
        u = x - reals[r]
        for k in range(28):
            acc = reals[r + 1 + 28 * deg + k]
            for p in range(deg - 1, -1, -1):
                acc = acc * u + reals[r + 1 + 28 * p + k]
            buf[o + k] = acc
        return
    if x < lo:
        e, b = st + ns, x - lo
    else:
        e, b = st + ns + 18, x - hi
    z = e + 12                                          # the end twist S_end
    w0, w1, w2 = reals[z], reals[z + 1], reals[z + 2]
    v0, v1, v2 = reals[z + 3], reals[z + 4], reals[z + 5]
    theta = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    f1, f2, f3 = _exp_factors(b * theta)
    ca, cc, ce = b * f1, b * b * f2, b * b * b * f3
    # R = I + a W + c W^2, p = (b I + c W + e W^2) v
    W = (0.0, -w2, w1, w2, 0.0, -w0, -w1, w0, 0.0)
    t = buf                                            # E (3x4) into dS/dq's slots first
    for i in range(3):
        for j in range(3):
            W2 = W[3 * i] * W[j] + W[3 * i + 1] * W[3 + j] + W[3 * i + 2] * W[6 + j]
            t[o + 16 + 3 * i + j] = (1.0 if i == j else 0.0) + ca * W[3 * i + j] + cc * W2
    Wv = (W[1] * v1 + W[2] * v2, W[3] * v0 + W[5] * v2, W[6] * v0 + W[7] * v1)
    WWv = (W[1] * Wv[1] + W[2] * Wv[2], W[3] * Wv[0] + W[5] * Wv[2], W[6] * Wv[0] + W[7] * Wv[1])
    pe = (b * v0 + cc * Wv[0] + ce * WWv[0], b * v1 + cc * Wv[1] + ce * WWv[1],
          b * v2 + cc * Wv[2] + ce * WWv[2])
    for i in range(3):
        P0, P1, P2, P3 = reals[e + 4 * i], reals[e + 4 * i + 1], reals[e + 4 * i + 2], \
            reals[e + 4 * i + 3]
        for j in range(3):
            buf[o + 4 * i + j] = (P0 * t[o + 16 + j] + P1 * t[o + 19 + j]
                                  + P2 * t[o + 22 + j])
        buf[o + 4 * i + 3] = P0 * pe[0] + P1 * pe[1] + P2 * pe[2] + P3
    for k in range(6):
        buf[o + 16 + k] = reals[z + k]
        buf[o + 22 + k] = 0.0


@_jit
def _wrap(x, lo, hi, period):
    """``x`` outside ``[lo, hi)`` moved by whole periods into ``[lo, lo + period)`` (as
    :meth:`core.joints.spline_curve.ClosedSplineCurveJoint.evaluate` does)."""
    if lo <= x < hi:
        return x
    r = (x - lo) % period
    return lo + (0.0 if r >= period else r)


@_jit
def _sphere(reals, pb, buf, o, sm, q, qs):
    """Spherical joint: ``P [exp(r), 0]`` and the rows ``S_j = [J_b e_j; 0]`` (seed 003
    eqs. 2, 20)."""
    x, y, z = q[qs], q[qs + 1], q[qs + 2]
    t = x * x + y * y + z * z
    th = math.sqrt(t)
    a, b, g = _abg(th, t)
    c = math.cos(th)
    R = (c + b * x * x, -a * z + b * x * y, a * y + b * x * z,
         a * z + b * x * y, c + b * y * y, -a * x + b * y * z,
         -a * y + b * x * z, a * x + b * y * z, c + b * z * z)
    for i in range(3):
        P0, P1, P2 = reals[pb + 4 * i], reals[pb + 4 * i + 1], reals[pb + 4 * i + 2]
        for j in range(3):
            buf[o + 4 * i + j] = P0 * R[j] + P1 * R[3 + j] + P2 * R[6 + j]
        buf[o + 4 * i + 3] = reals[pb + 4 * i + 3]
    # J_b = a I - b [r] + g r r^T; row j of S is column j of J_b
    J = (a + g * x * x, b * z + g * x * y, -b * y + g * x * z,
         -b * z + g * x * y, a + g * y * y, b * x + g * y * z,
         b * y + g * x * z, -b * x + g * y * z, a + g * z * z)
    for j in range(3):
        r = sm + 6 * (qs + j)
        for i in range(3):
            buf[r + i] = J[3 * i + j]
            buf[r + 3 + i] = 0.0
    return R


@_jit
def _free(reals, pb, buf, o, sm, q, qs):
    """Free joint ``q = [r, p]``: ``P [exp(r), p]``, the rows of r as :func:`_sphere`'s and
    ``S_{3+j} = [0; R^T e_j]`` (:meth:`core.joints.spherical.Free.evaluate`)."""
    R = _sphere(reals, pb, buf, o, sm, q, qs)
    for i in range(3):
        buf[o + 4 * i + 3] += reals[pb + 4 * i] * q[qs + 3] + \
            reals[pb + 4 * i + 1] * q[qs + 4] + reals[pb + 4 * i + 2] * q[qs + 5]
    for j in range(3):
        r = sm + 6 * (qs + 3 + j)
        for i in range(3):
            buf[r + i] = 0.0
            buf[r + 3 + i] = R[3 * j + i]


@_jit
def _rate_coefficients(q, qs):
    """``r = q[qs:qs + 3]`` and alpha, beta, gamma, b1, g1 at it: ``(x, y, z, a, b, g, b1,
    g1)``."""
    x, y, z = q[qs], q[qs + 1], q[qs + 2]
    t = x * x + y * y + z * z
    th = math.sqrt(t)
    a, b, g = _abg(th, t)
    b1, g1 = _b1g1(th, t)
    return x, y, z, a, b, g, b1, g1


@_jit
def _sphere_bias(buf, oc, q, v, qs):
    """``q_dot^T (dS/dq) q_dot = [J_b_dot r_dot; 0] = [(2 gamma - beta) s r_dot - b1 s
    (r x r_dot) + (g1 s^2 + gamma |r_dot|^2) r; 0]`` with ``s = r . r_dot`` (seed 003 eqs.
    36-38, 40)."""
    x, y, z, a, b, g, b1, g1 = _rate_coefficients(q, qs)
    u0, u1, u2 = v[qs], v[qs + 1], v[qs + 2]
    s = x * u0 + y * u1 + z * u2
    k0 = (2.0 * g - b) * s
    k1 = -b1 * s
    k2 = g1 * s * s + g * (u0 * u0 + u1 * u1 + u2 * u2)
    buf[oc] = k0 * u0 + k1 * (y * u2 - z * u1) + k2 * x
    buf[oc + 1] = k0 * u1 + k1 * (z * u0 - x * u2) + k2 * y
    buf[oc + 2] = k0 * u2 + k1 * (x * u1 - y * u0) + k2 * z
    buf[oc + 3] = 0.0
    buf[oc + 4] = 0.0
    buf[oc + 5] = 0.0


# -- spatial algebra on the buffer ---------------------------------------------------------
@_jit
def _x_motion(buf, ol, src, dst):
    """``dst = Ad_{L^-1} src`` for the local transform ``L = (R, p)`` at ``ol``:
    ``[R^T w; R^T (v - p x w)]`` (dst may not alias src)."""
    x = _x_motion_t(buf, ol, src)
    for i in range(6):
        buf[dst + i] = x[i]


@_inline
def _x_motion_t(buf, ol, src):
    """``Ad_{L^-1} src`` (see :func:`_x_motion`) as a 6-tuple."""
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


@_inline
def _xt_force_add(buf, ol, src, dst):
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


@_jit
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


@_jit
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


@_jit
def _rows_x_p(X, p0, p1, p2):
    """``X [p]``: each row of the 3x3 ``X`` crossed with p."""
    return (X[1] * p2 - X[2] * p1, X[2] * p0 - X[0] * p2, X[0] * p1 - X[1] * p0,
            X[4] * p2 - X[5] * p1, X[5] * p0 - X[3] * p2, X[3] * p1 - X[4] * p0,
            X[7] * p2 - X[8] * p1, X[8] * p0 - X[6] * p2, X[6] * p1 - X[7] * p0)


@_jit
def _p_x_cols(X, p0, p1, p2):
    """``[p] X``: p crossed with each column of the 3x3 ``X``."""
    return (p1 * X[6] - p2 * X[3], p1 * X[7] - p2 * X[4], p1 * X[8] - p2 * X[5],
            p2 * X[0] - p0 * X[6], p2 * X[1] - p0 * X[7], p2 * X[2] - p0 * X[8],
            p0 * X[3] - p1 * X[0], p0 * X[4] - p1 * X[1], p0 * X[5] - p1 * X[2])


@_jit
def _block(buf, m, r0, c0, U, dinv):
    """The 3x3 block at row ``r0``, column ``c0`` of the 6x6 ``M - U U^T dinv`` (``M`` at
    ``m``), as a 9-tuple."""
    o = m + 6 * r0 + c0
    a0, a1, a2 = U[r0] * dinv, U[r0 + 1] * dinv, U[r0 + 2] * dinv
    b0, b1, b2 = U[c0], U[c0 + 1], U[c0 + 2]
    return (buf[o] - a0 * b0, buf[o + 1] - a0 * b1, buf[o + 2] - a0 * b2,
            buf[o + 6] - a1 * b0, buf[o + 7] - a1 * b1, buf[o + 8] - a1 * b2,
            buf[o + 12] - a2 * b0, buf[o + 13] - a2 * b1, buf[o + 14] - a2 * b2)


#: no rank-one correction for :func:`_xtmx_add`
_Z6 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@_inline
def _row6(buf, o, x):
    """``buf[o:o + 6] . x`` for a 6-tuple x."""
    return (buf[o] * x[0] + buf[o + 1] * x[1] + buf[o + 2] * x[2] + buf[o + 3] * x[3]
            + buf[o + 4] * x[4] + buf[o + 5] * x[5])


@_inline
def _m6v(buf, m, x):
    """The 6x6 matrix at ``m`` (row-major) times the 6-tuple x, as a 6-tuple."""
    return (_row6(buf, m, x), _row6(buf, m + 6, x), _row6(buf, m + 12, x),
            _row6(buf, m + 18, x), _row6(buf, m + 24, x), _row6(buf, m + 30, x))


@_inline
def _load6(buf, o):
    return (buf[o], buf[o + 1], buf[o + 2], buf[o + 3], buf[o + 4], buf[o + 5])


@_jit
def _xtmx_add(buf, ol, m, dst, U, dinv):
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


def _large_joint(ints, kind, reals, po, pb, buf, o, sm, oc, q, v, qs, n, with_v):
    """A joint of one of the :data:`~core.compiled.layout.LARGE_KINDS` (arguments as
    :func:`~core.compiled.custom.custom_joint`; other kinds: nothing): compiled as that
    where ``ints`` is read-only (the packer's mark of a model with such joints), else as
    nothing at all, so that the kernels of other models do not compile those joints."""


@overload(_large_joint, jit_options=_OPTIONS)
def _large_joint_impl(ints, kind, reals, po, pb, buf, o, sm, oc, q, v, qs, n, with_v):
    if ints.mutable:
        return lambda ints, kind, reals, po, pb, buf, o, sm, oc, q, v, qs, n, with_v: None

    def impl(ints, kind, reals, po, pb, buf, o, sm, oc, q, v, qs, n, with_v):
        if kind == KIND_CUSTOM:
            custom_joint(reals, po, pb, buf, o, sm, oc, q, v, qs, n, with_v)
        elif kind == KIND_SURFACE:
            surface_joint(reals, po, pb, buf, o, sm, oc, q, v, qs, n, with_v)
    return impl


@_jit
def _s_row(ints, b, j):
    """Offset in the buffer of body ``b``'s ``j``-th joint column S_j (body frame)."""
    row = HEADER + NI * b
    if ints[row + I_N] == 1:
        return ints[H_LSH] + 28 * b + 16
    return ints[H_SM] + 6 * (ints[row + I_Q] + j)


@_jit
def _kinematics(ints, reals, buf, q, v, with_v):
    """Joints, local transforms (scratch), world poses (``LSH``) and, ``with_v``, body
    velocities V and bias accelerations c."""
    nb = ints[H_NB]
    oL, sm, cb, ob, tmp = ints[H_LSH], ints[H_SM], ints[H_CB], ints[H_BODY], ints[H_TMP]
    for b in range(nb):
        row = HEADER + NI * b
        kind, qs, n, par = ints[row + I_KIND], ints[row + I_Q], ints[row + I_N], \
            ints[row + I_PARENT]
        o = oL + 28 * b
        if kind == KIND_SCREW:
            _screw(reals, ints[row + I_PAR], buf, o, q[qs])
        elif kind == KIND_SPLINE:
            _spline(reals, ints[row + I_PAR], ints[row + I_NS], ints[row + I_DEG], buf, o,
                    q[qs])
        elif kind == KIND_SPHERE:
            _sphere(reals, R_BODIES + BODY_REALS * b, buf, o, sm, q, qs)
        elif kind == KIND_FREE:
            _free(reals, R_BODIES + BODY_REALS * b, buf, o, sm, q, qs)
        elif kind == KIND_CLOSED_SPLINE:
            po = ints[row + I_PAR]
            _spline(reals, po + 1, ints[row + I_NS], ints[row + I_DEG], buf, o,
                    _wrap(q[qs], reals[po + 1], reals[po + 2], reals[po]))
        elif kind == KIND_FIXED:
            pp = R_BODIES + BODY_REALS * b
            for k in range(12):
                buf[o + k] = reals[pp + k]
        else:
            _large_joint(ints, kind, reals, ints[row + I_PAR], R_BODIES + BODY_REALS * b, buf,
                         o, sm, cb + 6 * b, q, v, qs, n, with_v)
        bo = ob + B_SIZE * b
        bl = bo + B_LOCAL
        for i in range(3):
            for j in range(3):
                buf[bl + 3 * i + j] = buf[o + 4 * i + j]
            buf[bl + 9 + i] = buf[o + 4 * i + 3]
        if par >= 0:
            op = oL + 28 * par
            for i in range(3):
                r0, r1, r2 = buf[op + 4 * i], buf[op + 4 * i + 1], buf[op + 4 * i + 2]
                for j in range(3):
                    buf[o + 4 * i + j] = r0 * buf[bl + j] + r1 * buf[bl + 3 + j] \
                        + r2 * buf[bl + 6 + j]
                buf[o + 4 * i + 3] = r0 * buf[bl + 9] + r1 * buf[bl + 10] \
                    + r2 * buf[bl + 11] + buf[op + 4 * i + 3]
        if not with_v:
            continue
        oV, oc, u = bo + B_V, bo + B_C, tmp + T_VEC
        V = _x_motion_t(buf, bl, ob + B_SIZE * par + B_V) if par >= 0 else _Z6
        if n == 1:                                      # S q_dot, q_dot^2 dS/dq
            qd = v[qs]
            a0, a1, a2 = buf[o + 16] * qd, buf[o + 17] * qd, buf[o + 18] * qd
            b0, b1, b2 = buf[o + 19] * qd, buf[o + 20] * qd, buf[o + 21] * qd
            qd2 = qd * qd
            c = (buf[o + 22] * qd2, buf[o + 23] * qd2, buf[o + 24] * qd2, buf[o + 25] * qd2,
                 buf[o + 26] * qd2, buf[o + 27] * qd2)
        else:
            for k in range(6):
                buf[u + k] = 0.0
            for j in range(n):
                r = sm + 6 * (qs + j)
                qd = v[qs + j]
                for k in range(6):
                    buf[u + k] += buf[r + k] * qd
            if kind == KIND_SPHERE or kind == KIND_FREE:
                _sphere_bias(buf, cb + 6 * b, q, v, qs)
            if kind == KIND_FREE:            # d(R^T)/dt p_dot = -w x R^T p_dot, w = J_b r_dot
                x0, x1, x2, y0, y1, y2 = _load6(buf, u)
                buf[cb + 6 * b + 3] = x2 * y1 - x1 * y2
                buf[cb + 6 * b + 4] = x0 * y2 - x2 * y0
                buf[cb + 6 * b + 5] = x1 * y0 - x0 * y1
            a0, a1, a2, b0, b1, b2 = _load6(buf, u)
            c = _load6(buf, cb + 6 * b) if n else _Z6
        w0, w1, w2 = V[0] + a0, V[1] + a1, V[2] + a2
        l0, l1, l2 = V[3] + b0, V[4] + b1, V[5] + b2
        buf[oV], buf[oV + 1], buf[oV + 2] = w0, w1, w2
        buf[oV + 3], buf[oV + 4], buf[oV + 5] = l0, l1, l2
        buf[oc] = c[0] + w1 * a2 - w2 * a1              # ad_V u = [w x a; w x b + l x a]
        buf[oc + 1] = c[1] + w2 * a0 - w0 * a2
        buf[oc + 2] = c[2] + w0 * a1 - w1 * a0
        buf[oc + 3] = c[3] + w1 * b2 - w2 * b1 + l1 * a2 - l2 * a1
        buf[oc + 4] = c[4] + w2 * b0 - w0 * b2 + l2 * a0 - l0 * a2
        buf[oc + 5] = c[5] + w0 * b1 - w1 * b0 + l0 * a1 - l1 * a0


@_jit
def _external(ints, reals, buf, fext):
    """Body-frame external wrenches: ``fext`` (``(nb, 6)``, or ``(0, 6)`` for none) plus the
    point springs (needs the world poses and body velocities); False (and nothing written)
    when there are neither."""
    nb = ints[H_NB]
    oL, ob = ints[H_LSH], ints[H_BODY]
    has = fext.shape[0] > 0
    if not has and ints[H_NPS] == 0:
        return False
    for b in range(nb):
        of = ob + B_SIZE * b + B_F
        for k in range(6):
            buf[of + k] = fext[b, k] if has else 0.0
    rp, ip = ints[H_RPOINT], ints[H_IPOINT]
    for s in range(ints[H_NPS]):
        ia, ib = ints[ip + 2 * s], ints[ip + 2 * s + 1]
        r = rp + 9 * s
        k, c, rest = reals[r + 6], reals[r + 7], reals[r + 8]
        xa = _world_point(buf, oL + 28 * ia, reals, r)
        xb = (reals[r + 3], reals[r + 4], reals[r + 5]) if ib < 0 else \
            _world_point(buf, oL + 28 * ib, reals, r + 3)
        d0, d1, d2 = xb[0] - xa[0], xb[1] - xa[1], xb[2] - xa[2]
        length = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        if length < 1e-12:
            continue
        e0, e1, e2 = d0 / length, d1 / length, d2 / length
        mag = k * (length - rest)
        if c != 0.0:
            va = _point_velocity(buf, oL + 28 * ia, ob + B_SIZE * ia + B_V, reals, r)
            vb = (0.0, 0.0, 0.0) if ib < 0 else \
                _point_velocity(buf, oL + 28 * ib, ob + B_SIZE * ib + B_V, reals, r + 3)
            mag += c * (e0 * (vb[0] - va[0]) + e1 * (vb[1] - va[1]) + e2 * (vb[2] - va[2]))
        f0, f1, f2 = mag * e0, mag * e1, mag * e2
        _push(buf, oL + 28 * ia, ob + B_SIZE * ia + B_F, reals, r, f0, f1, f2)
        if ib >= 0:
            _push(buf, oL + 28 * ib, ob + B_SIZE * ib + B_F, reals, r + 3, -f0, -f1, -f2)
    return True


@_jit
def _world_point(buf, oo, reals, pp):
    """``R p + t`` for the body point ``p`` at ``reals[pp]`` and the world pose at ``oo``."""
    p0, p1, p2 = reals[pp], reals[pp + 1], reals[pp + 2]
    return (buf[oo] * p0 + buf[oo + 1] * p1 + buf[oo + 2] * p2 + buf[oo + 3],
            buf[oo + 4] * p0 + buf[oo + 5] * p1 + buf[oo + 6] * p2 + buf[oo + 7],
            buf[oo + 8] * p0 + buf[oo + 9] * p1 + buf[oo + 10] * p2 + buf[oo + 11])


@_jit
def _point_velocity(buf, oo, oV, reals, pp):
    """World velocity ``R (v + w x p)`` of the body point ``p`` (body velocity at ``oV``)."""
    p0, p1, p2 = reals[pp], reals[pp + 1], reals[pp + 2]
    w0, w1, w2 = buf[oV], buf[oV + 1], buf[oV + 2]
    u0 = buf[oV + 3] + w1 * p2 - w2 * p1
    u1 = buf[oV + 4] + w2 * p0 - w0 * p2
    u2 = buf[oV + 5] + w0 * p1 - w1 * p0
    return (buf[oo] * u0 + buf[oo + 1] * u1 + buf[oo + 2] * u2,
            buf[oo + 4] * u0 + buf[oo + 5] * u1 + buf[oo + 6] * u2,
            buf[oo + 8] * u0 + buf[oo + 9] * u1 + buf[oo + 10] * u2)


@_jit
def _push(buf, oo, of, reals, pp, f0, f1, f2):
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


@_inline
def _momentum_bias(reals, buf, b, bo, ext):
    """``J V`` into ``h`` and ``-ad_V^T J V = [w x h_n + v x h_f; w x h_f]`` into pA
    (body ``b``'s scratch at ``bo``), minus the external wrench when ``ext``."""
    oJ = R_BODIES + BODY_REALS * b + 12
    oV, oP, oF = bo + B_V, bo + B_P, bo + B_F
    h0 = h1 = h2 = h3 = h4 = h5 = 0.0
    for k in range(6):
        x = buf[oV + k]
        h0 += reals[oJ + k] * x
        h1 += reals[oJ + 6 + k] * x
        h2 += reals[oJ + 12 + k] * x
        h3 += reals[oJ + 18 + k] * x
        h4 += reals[oJ + 24 + k] * x
        h5 += reals[oJ + 30 + k] * x
    w0, w1, w2 = buf[oV], buf[oV + 1], buf[oV + 2]
    l0, l1, l2 = buf[oV + 3], buf[oV + 4], buf[oV + 5]
    buf[oP] = w1 * h2 - w2 * h1 + l1 * h5 - l2 * h4
    buf[oP + 1] = w2 * h0 - w0 * h2 + l2 * h3 - l0 * h5
    buf[oP + 2] = w0 * h1 - w1 * h0 + l0 * h4 - l1 * h3
    buf[oP + 3] = w1 * h5 - w2 * h4
    buf[oP + 4] = w2 * h3 - w0 * h5
    buf[oP + 5] = w0 * h4 - w1 * h3
    if ext:
        for k in range(6):
            buf[oP + k] -= buf[oF + k]


@_jit
def _passive(ints, reals, q, v, j):
    """The spring and damper torque ``-k (q - rest) - c q_dot`` on coordinate j."""
    if ints[H_SPRINGS] == 0:
        return 0.0
    rs, nv = ints[H_RSPRING], ints[H_NV]
    return -reals[rs + j] * (q[j] - reals[rs + 2 * nv + j]) - reals[rs + nv + j] * v[j]


@_jit
def _base(reals, buf, tmp):
    """The base acceleration ``[0; -g]`` that stands in for gravity, at ``tmp + T_BASE``."""
    for k in range(3):
        buf[tmp + T_BASE + k] = 0.0
        buf[tmp + T_BASE + 3 + k] = -reals[k]


@_jit
def _invert(buf, src, n, stride, dst, dstride, gj):
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


@_jit
def _aba(ints, reals, buf, q, v, tau, fext):
    nb = ints[H_NB]
    ob, od, tmp, ddq = ints[H_BODY], ints[H_DOF], ints[H_TMP], ints[H_DDQ]
    _kinematics(ints, reals, buf, q, v, bool(True))
    ext = _external(ints, reals, buf, fext)
    for b in range(nb):
        bo = ob + B_SIZE * b
        oJ = R_BODIES + BODY_REALS * b + 12
        for k in range(36):
            buf[bo + B_I + k] = reals[oJ + k]
        _momentum_bias(reals, buf, b, bo, ext)
    for b in range(nb - 1, -1, -1):
        row = HEADER + NI * b
        qs, n, par = ints[row + I_Q], ints[row + I_N], ints[row + I_PARENT]
        bo = ob + B_SIZE * b
        oI, oP, oc = bo + B_I, bo + B_P, bo + B_C
        U, dinv = _Z6, 0.0
        if n == 1:                       # in registers; IA - U U^T / D is not written back
            dq = od + D_SIZE * qs
            S = _load6(buf, _s_row(ints, b, int(0)))
            U = _m6v(buf, oI, S)
            D = U[0] * S[0] + U[1] * S[1] + U[2] * S[2] + U[3] * S[3] + U[4] * S[4] + \
                U[5] * S[5]
            if not D != 0.0:
                return 1
            dinv = 1.0 / D
            u = tau[qs] + _passive(ints, reals, q, v, qs) - _row6(buf, oP, S)
            c = _load6(buf, oc)
            Ic = _m6v(buf, oI, c)
            f = (u - (U[0] * c[0] + U[1] * c[1] + U[2] * c[2] + U[3] * c[3] + U[4] * c[4]
                      + U[5] * c[5])) * dinv
            for i in range(6):           # pA + (IA - U U^T / D) c + U u / D
                buf[dq + D_U + i] = U[i]
                buf[oP + i] += Ic[i] + U[i] * f
            buf[dq + D_DINV] = dinv
            buf[dq + D_USMALL] = u
        else:
            for j in range(n):                           # U = IA S, u = tau - S^T pA
                s = _s_row(ints, b, j)
                dq = od + D_SIZE * (qs + j)
                su = 0.0
                for i in range(6):
                    x = 0.0
                    for k in range(6):
                        x += buf[oI + 6 * i + k] * buf[s + k]
                    buf[dq + D_U + i] = x
                    su += buf[s + i] * buf[oP + i]
                buf[dq + D_USMALL] = tau[qs + j] + _passive(ints, reals, q, v, qs + j) - su
            if n:
                for i in range(n):                       # D = S^T U into the tableau area
                    s = _s_row(ints, b, i)
                    for j in range(n):
                        dq = od + D_SIZE * (qs + j)
                        x = 0.0
                        for k in range(6):
                            x += buf[s + k] * buf[dq + D_U + k]
                        buf[tmp + T_ROT + n * i + j] = x
                if not _invert(buf, tmp + T_ROT, n, n, od + D_SIZE * qs + D_DINV, int(D_SIZE),
                               tmp + T_GJ):
                    return 1
                # W_i = sum_j Dinv_ij U_j (rows of Dinv U^T) into T_ROT; then IA -= U W
                for i in range(n):
                    di = od + D_SIZE * (qs + i)
                    for k in range(6):
                        x = 0.0
                        for j in range(n):
                            x += buf[di + D_DINV + j] * buf[od + D_SIZE * (qs + j) + D_U + k]
                        buf[tmp + T_ROT + 6 * i + k] = x
                for i in range(6):
                    for k in range(6):
                        x = 0.0
                        for j in range(n):
                            x += buf[od + D_SIZE * (qs + j) + D_U + i] * \
                                buf[tmp + T_ROT + 6 * j + k]
                        buf[oI + 6 * i + k] -= x
                for i in range(6):                       # symmetric: rounding grows otherwise
                    for k in range(i + 1, 6):
                        x = 0.5 * (buf[oI + 6 * i + k] + buf[oI + 6 * k + i])
                        buf[oI + 6 * i + k] = x
                        buf[oI + 6 * k + i] = x
            for i in range(6):
                x = 0.0
                for k in range(6):
                    x += buf[oI + 6 * i + k] * buf[oc + k]
                buf[oP + i] += x
            for i in range(n):                           # + U Dinv u
                di = od + D_SIZE * (qs + i)
                x = 0.0
                for j in range(n):
                    x += buf[di + D_DINV + j] * buf[od + D_SIZE * (qs + j) + D_USMALL]
                for k in range(6):
                    buf[oP + k] += buf[di + D_U + k] * x
        if par >= 0:
            pb = ob + B_SIZE * par
            _xtmx_add(buf, bo + B_LOCAL, oI, pb + B_I, U, dinv)
            _xt_force_add(buf, bo + B_LOCAL, oP, pb + B_P)
    _base(reals, buf, tmp)
    for b in range(nb):
        row = HEADER + NI * b
        qs, n, par = ints[row + I_Q], ints[row + I_N], ints[row + I_PARENT]
        bo = ob + B_SIZE * b
        oA, oc = bo + B_A, bo + B_C
        X = _x_motion_t(buf, bo + B_LOCAL, ob + B_SIZE * par + B_A if par >= 0 else
                        tmp + T_BASE)
        if n == 1:                                       # in registers
            dq = od + D_SIZE * qs
            A = (X[0] + buf[oc], X[1] + buf[oc + 1], X[2] + buf[oc + 2], X[3] + buf[oc + 3],
                 X[4] + buf[oc + 4], X[5] + buf[oc + 5])
            x = (buf[dq + D_USMALL] - _row6(buf, dq + D_U, A)) * buf[dq + D_DINV]
            buf[ddq + qs] = x
            s = _s_row(ints, b, int(0))
            for k in range(6):
                buf[oA + k] = A[k] + buf[s + k] * x
            continue
        for k in range(6):
            buf[oA + k] = X[k] + buf[oc + k]
        for i in range(n):
            di = od + D_SIZE * (qs + i)
            x = buf[di + D_USMALL]
            for k in range(6):
                x -= buf[di + D_U + k] * buf[oA + k]
            buf[tmp + T_VEC + i] = x
        for i in range(n):
            di = od + D_SIZE * (qs + i)
            x = 0.0
            for j in range(n):
                x += buf[di + D_DINV + j] * buf[tmp + T_VEC + j]
            buf[ddq + qs + i] = x
        for i in range(n):
            s = _s_row(ints, b, i)
            x = buf[ddq + qs + i]
            for k in range(6):
                buf[oA + k] += buf[s + k] * x
    return 0


@_jit
def _rnea(ints, reals, buf, q, v, a, fext, out):
    nb = ints[H_NB]
    ob, tmp = ints[H_BODY], ints[H_TMP]
    _kinematics(ints, reals, buf, q, v, bool(True))
    ext = _external(ints, reals, buf, fext)
    _base(reals, buf, tmp)
    for b in range(nb):
        row = HEADER + NI * b
        qs, n, par = ints[row + I_Q], ints[row + I_N], ints[row + I_PARENT]
        bo = ob + B_SIZE * b
        oA, oc, oP = bo + B_A, bo + B_C, bo + B_P
        _x_motion(buf, bo + B_LOCAL, ob + B_SIZE * par + B_A if par >= 0 else tmp + T_BASE,
                  oA)
        for k in range(6):
            buf[oA + k] += buf[oc + k]
        for i in range(n):
            s = _s_row(ints, b, i)
            x = a[qs + i]
            for k in range(6):
                buf[oA + k] += buf[s + k] * x
        _momentum_bias(reals, buf, b, bo, ext)
        oJ = R_BODIES + BODY_REALS * b + 12
        for i in range(6):
            x = 0.0
            for k in range(6):
                x += reals[oJ + 6 * i + k] * buf[oA + k]
            buf[oP + i] += x                     # f = J A - ad_V^T J V - f_ext (eq. 15)
    for b in range(nb - 1, -1, -1):
        row = HEADER + NI * b
        qs, n, par = ints[row + I_Q], ints[row + I_N], ints[row + I_PARENT]
        bo = ob + B_SIZE * b
        oP = bo + B_P
        for i in range(n):
            s = _s_row(ints, b, i)
            x = 0.0
            for k in range(6):
                x += buf[s + k] * buf[oP + k]
            buf[out + qs + i] = x - _passive(ints, reals, q, v, qs + i)
        if par >= 0:
            _xt_force_add(buf, bo + B_LOCAL, oP, ob + B_SIZE * par + B_P)
    return 0


@_jit
def _crba(ints, reals, buf, q):
    nb, nv = ints[H_NB], ints[H_NV]
    ob, od, tmp, oM = ints[H_BODY], ints[H_DOF], ints[H_TMP], ints[H_M]
    _kinematics(ints, reals, buf, q, q, bool(False))
    for b in range(nb):
        bo = ob + B_SIZE * b
        oJ = R_BODIES + BODY_REALS * b + 12
        for k in range(36):
            buf[bo + B_I + k] = reals[oJ + k]
    for b in range(nb - 1, -1, -1):
        par = ints[HEADER + NI * b + I_PARENT]
        if par >= 0:
            bo = ob + B_SIZE * b
            _xtmx_add(buf, bo + B_LOCAL, bo + B_I, ob + B_SIZE * par + B_I, _Z6, 0.0)
    for k in range(nv * nv):
        buf[oM + k] = 0.0
    for b in range(nb):
        row = HEADER + NI * b
        qs, n = ints[row + I_Q], ints[row + I_N]
        oI = ob + B_SIZE * b + B_I
        for j in range(n):
            sj = _s_row(ints, b, j)
            F = od + D_SIZE * (qs + j) + D_U
            for i in range(6):
                x = 0.0
                for k in range(6):
                    x += buf[oI + 6 * i + k] * buf[sj + k]
                buf[F + i] = x
            a = b
            while True:
                ra = HEADER + NI * a
                qa, na = ints[ra + I_Q], ints[ra + I_N]
                for l in range(na):
                    sl = _s_row(ints, a, l)
                    x = 0.0
                    for k in range(6):
                        x += buf[sl + k] * buf[F + k]
                    buf[oM + nv * (qs + j) + qa + l] = x
                    buf[oM + nv * (qa + l) + qs + j] = x
                pa = ints[ra + I_PARENT]
                if pa < 0:
                    break
                t = tmp + T_VEC
                for k in range(6):
                    buf[t + k] = buf[F + k]
                    buf[F + k] = 0.0
                _xt_force_add(buf, ob + B_SIZE * a + B_LOCAL, t, F)
                a = pa
    return 0


# -- entry points --------------------------------------------------------------------------
@_inline
def aba(ints, reals, buf, q, v, tau, fext, check):
    """Forward dynamics into the buffer's ddq; ``fext (nb, 6)`` or ``(0, 6)``. With
    ``check``, status 2 (and nothing computed) if ``q, v, tau`` are not all of length nv
    and finite (or so large that their squares overflow)."""
    if check:
        nv = ints[H_NV]
        if q.size != nv or v.size != nv or tau.size != nv:
            return 2
        x = 0.0
        for j in range(q.size):
            x += q[j] * q[j] + v[j] * v[j] + tau[j] * tau[j]
        if not x < math.inf:
            return 2
    return _aba(ints, reals, buf, q, v, tau, fext)


@_jit
def aba_free(ints, reals, buf, q, v, tau):
    """:func:`aba` without external wrenches, with the finiteness test (status 2): two
    arguments fewer to pass. Its "no external wrenches" is an empty view of the buffer, a
    writable array like the ``fext`` of the other callers, so that :func:`_aba` compiles
    once for all of them. Compiled on request only (:func:`core.compiled.dispatch.aba`):
    called with argument types it has no version for, it raises TypeError."""
    return aba(ints, reals, buf, q, v, tau, buf[:0].reshape((0, 6)), True)


@_jit
def rnea(ints, reals, buf, q, v, a, fext, nle):
    """Inverse dynamics into the buffer's tau (or its nle when ``nle``; then ``a`` is
    zeros)."""
    return _rnea(ints, reals, buf, q, v, a, fext, ints[H_NLE] if nle else ints[H_TAU])


@_jit
def crba(ints, reals, buf, q):
    """The joint-space mass matrix (full, symmetric) into the buffer's M."""
    return _crba(ints, reals, buf, q)


@_jit
def energies(ints, reals, buf, q, v, mass_com, kinetic):
    """``(kinetic, potential)`` energies at ``(q, v)`` (:func:`core.dynamics.kinetic_energy`,
    :func:`core.dynamics.potential_energy`), the world poses left in the buffer's LSH:
    ``sum_i 1/2 V_i^T J_i V_i`` (body frames; 0 unless ``kinetic``, and then ``v`` is not
    read), and ``-sum_i g . (R_i m_i c_i + m_i p_i)`` plus the joint springs' ``1/2 k (q -
    rest)^2`` and the point springs' ``1/2 k (l - rest)^2``; ``mass_com (nb, 4)`` holds
    ``[m_i, m_i c_i]``."""
    _kinematics(ints, reals, buf, q, v, kinetic)
    nb, nv = ints[H_NB], ints[H_NV]
    oL, ob = ints[H_LSH], ints[H_BODY]
    K, U = 0.0, 0.0
    for b in range(nb):
        o = oL + 28 * b
        m = mass_com[b, 0]
        for i in range(3):
            U -= reals[i] * (buf[o + 4 * i] * mass_com[b, 1] + buf[o + 4 * i + 1] * mass_com[b, 2]
                             + buf[o + 4 * i + 2] * mass_com[b, 3] + m * buf[o + 4 * i + 3])
        if kinetic:
            oV, oJ = ob + B_SIZE * b + B_V, R_BODIES + BODY_REALS * b + 12
            for i in range(6):
                x = 0.0
                for k in range(6):
                    x += reals[oJ + 6 * i + k] * buf[oV + k]
                K += 0.5 * buf[oV + i] * x
    if ints[H_SPRINGS]:
        rs = ints[H_RSPRING]
        for j in range(nv):
            d = q[j] - reals[rs + 2 * nv + j]
            U += 0.5 * reals[rs + j] * d * d
    rp, ip = ints[H_RPOINT], ints[H_IPOINT]
    for s in range(ints[H_NPS]):
        ia, ib = ints[ip + 2 * s], ints[ip + 2 * s + 1]
        r = rp + 9 * s
        xa = _world_point(buf, oL + 28 * ia, reals, r)
        xb = (reals[r + 3], reals[r + 4], reals[r + 5]) if ib < 0 else \
            _world_point(buf, oL + 28 * ib, reals, r + 3)
        d0, d1, d2 = xb[0] - xa[0], xb[1] - xa[1], xb[2] - xa[2]
        d = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2) - reals[r + 8]
        U += 0.5 * reals[r + 6] * d * d
    return K, U


@_jit
def step(ints, reals, buf, q, v, tau, fext, h, method, qn, vn):
    """One (sub)step ``h`` of the model integrator (``method`` 0 euler, 1 semi-implicit,
    2 rk4, as :meth:`core.integrators.Integrator._substep`) from ``(q, v)`` into ``(qn,
    vn)``, the four RK4 stages in the scratch rows of ``qn``/``vn``: ``qn, vn`` are
    ``(5, nv)``, row 0 the result."""
    return _substep(ints, reals, buf, q, v, tau, fext, h, method, qn, vn, None, None, None,
                    None, None)


@_jit
def driven_step(ints, reals, buf, q, v, tau, fext, h, method, qn, vn, dofs, nf, drive, powers,
                chol):
    """:func:`step` of a model with prescribed coordinates (:class:`core.integrators.Drive`):
    ``dofs (nv,)`` the free coordinates (the first ``nf``) then the prescribed ones,
    ``drive (3, 2, k)`` their rates and accelerations ``(v_p, a_p)`` at ``t``, ``t + h/2``
    and ``t + h``; each stage's accelerations from :func:`_driven`, its drive power into
    ``powers`` (one per stage: 1, or 4 for rk4); ``chol (nf, nf + 1)`` scratch. Status 0,
    1 (a singular ``S^T IA S`` cannot occur: no aba) or 4 (``M_ff`` not positive
    definite)."""
    return _substep(ints, reals, buf, q, v, tau, fext, h, method, qn, vn, dofs, nf, drive,
                    powers, chol)


@_jit
def _driven(ints, reals, buf, q, v, tau, fext, dofs, nf, vp, ap, powers, s, chol):
    """Accelerations into the buffer's ddq of a model whose coordinates ``dofs[nf:]`` are
    prescribed (rates ``vp``, accelerations ``ap``): ``M_ff a_f = tau_f - h_f - M_fp a_p``
    solved with the Cholesky factor of ``M_ff`` in ``chol (nf, nf + 1)`` (its last column
    the right-hand side), M from crba and h from the nonlinear effects (as
    :meth:`core.integrators.Integrator._driven_acceleration`); the drive's power ``(M_p a +
    h_p - tau_p) . v_p`` into ``powers[s]``. Status 0, or 4 if ``M_ff`` is not positive
    definite (or not finite)."""
    nv = ints[H_NV]
    oM, on, ddq = ints[H_M], ints[H_NLE], ints[H_DDQ]
    _crba(ints, reals, buf, q)
    a = buf[ddq:ddq + nv]
    for j in range(nv):
        a[j] = 0.0
    _rnea(ints, reals, buf, q, v, a, fext, on)
    k = nv - nf
    for i in range(k):
        a[dofs[nf + i]] = ap[i]
    for i in range(nf):
        r = dofs[i]
        x = tau[r] - buf[on + r]
        for j in range(k):
            x -= buf[oM + nv * r + dofs[nf + j]] * ap[j]
        chol[i, nf] = x
        for j in range(i + 1):
            x = buf[oM + nv * r + dofs[j]]
            for l in range(j):
                x -= chol[i, l] * chol[j, l]
            if i > j:
                chol[i, j] = x / chol[j, j]
            elif x > 0.0 and x < math.inf:
                chol[i, i] = math.sqrt(x)
            else:
                return 4
    for i in range(nf):                                  # L y = rhs
        x = chol[i, nf]
        for l in range(i):
            x -= chol[i, l] * chol[l, nf]
        chol[i, nf] = x / chol[i, i]
    for i in range(nf - 1, -1, -1):                      # L^T a_f = y
        x = chol[i, nf]
        for l in range(i + 1, nf):
            x -= chol[l, i] * chol[l, nf]
        chol[i, nf] = x / chol[i, i]
        a[dofs[i]] = chol[i, nf]
    power = 0.0
    for i in range(k):
        r = dofs[nf + i]
        x = buf[on + r] - tau[r]
        for j in range(nv):
            x += buf[oM + nv * r + j] * a[j]
        power += x * vp[i]
    powers[s] = power
    return 0


@_inline
def _stage(ints, reals, buf, q, v, tau, fext, dofs, nf, drive, s, chol, powers):
    """The accelerations of stage ``s`` into the buffer's ddq: :func:`_aba` without a drive
    (``dofs`` empty, or it and the other drive arguments None: numba then compiles this
    branch only), else :func:`_driven` with the drive at the stage's time (rk4 stages 0, 1,
    2, 3 at ``t``, ``t + h/2``, ``t + h/2``, ``t + h``)."""
    if dofs is None or dofs.size == 0:
        return _aba(ints, reals, buf, q, v, tau, fext)
    t = (s + 1) // 2
    return _driven(ints, reals, buf, q, v, tau, fext, dofs, nf, drive[t, 0], drive[t, 1],
                   powers, s, chol)


@_inline
def _substep(ints, reals, buf, q, v, tau, fext, h, method, qn, vn, dofs, nf, drive, powers,
             chol):
    nv = ints[H_NV]
    ddq = ints[H_DDQ]
    if method != 2:
        st = _stage(ints, reals, buf, q, v, tau, fext, dofs, nf, drive, int(0), chol, powers)
        if st:
            return st
        _first_order(buf, ddq, h, method, q, v, qn[0], vn[0])
        return 0
    # rk4: rows 1..4 of qn/vn hold the stage states, row 0 accumulates
    for j in range(nv):
        qn[1, j] = q[j]
        vn[1, j] = v[j]
    weights = (1.0, 2.0, 2.0, 1.0)
    for k in range(4):
        st = _stage(ints, reals, buf, qn[k + 1], vn[k + 1], tau, fext, dofs, nf, drive, k,
                    chol, powers)
        if st:
            return st
        c = 0.5 * h if k < 2 else h
        for j in range(nv):
            a = buf[ddq + j]
            vk = vn[k + 1, j]
            if k == 0:
                qn[0, j] = vk
                vn[0, j] = a
            else:
                qn[0, j] += weights[k] * vk
                vn[0, j] += weights[k] * a
            if k < 3:
                qn[k + 2, j] = q[j] + c * vk
                vn[k + 2, j] = v[j] + c * a
    for j in range(nv):
        qn[0, j] = q[j] + (h / 6.0) * qn[0, j]
        vn[0, j] = v[j] + (h / 6.0) * vn[0, j]
    return 0


@_inline
def _first_order(buf, ddq, h, method, q, v, qo, vo):
    """Euler (``method`` 0: ``q + h v``, ``v + h a``) or semi-implicit Euler (1: ``v + h a``,
    then ``q + h`` times that) from ``(q, v)`` and the accelerations ``a = buf[ddq:]`` into
    ``(qo, vo)``, which may be ``(q, v)`` themselves."""
    for j in range(q.size):
        a = buf[ddq + j]
        if method == 0:
            qo[j] = q[j] + h * v[j]
            vo[j] = v[j] + h * a
        else:
            vo[j] = v[j] + h * a
            qo[j] = q[j] + h * vo[j]


@_jit
def _finite(q, v):
    """True if ``q . q + v . v`` is finite (the integrator's divergence test)."""
    x = 0.0
    for j in range(q.size):
        x += q[j] * q[j] + v[j] * v[j]
    return x < math.inf


@_jit
def _settle(ints, q, v, charts):
    """After a substep or the limits: status 3 if the state is not finite (the
    integrator's divergence test), else 0 with the charts changed when ``charts``."""
    if not _finite(q, v):
        return 3
    if charts:
        _normalize(ints, q, v)
    return 0


@_jit
def _normalize(ints, q, v):
    """The spherical and free joints' chart change in place: ``(r, r_dot)`` (the rotation
    coordinates) with ``|r| > pi`` to
    ``eta r`` and ``eta r_dot - c <r, r_dot> / theta^3 r`` (seed 003 eqs. 66-69, as
    :func:`core.expcoords.reparametrize`)."""
    for b in range(ints[H_NB]):
        row = HEADER + NI * b
        if ints[row + I_KIND] != KIND_SPHERE and ints[row + I_KIND] != KIND_FREE:
            continue
        qs = ints[row + I_Q]
        x, y, z = q[qs], q[qs + 1], q[qs + 2]
        th = math.sqrt(x * x + y * y + z * z)
        if th <= math.pi:
            continue
        c = 2.0 * math.pi * -math.ceil((th / math.pi - 1.0) / 2.0)
        eta = (th + c) / th
        k3s = c / th ** 3 * (x * v[qs] + y * v[qs + 1] + z * v[qs + 2])
        for i in range(3):
            r = q[qs + i]
            q[qs + i] = eta * r
            v[qs + i] = eta * v[qs + i] - k3s * r


# -- the limit solver (core.limits.LimitSolver.apply) ---------------------------------------
@_jit
def _cone(q, qs, p0, p1, p2, cphi):
    """Reach cone ``g(r) = cos theta + beta <r, p>^2 - cos phi`` and its gradient ``2 beta
    <r, p> p + (beta1 <r, p>^2 - alpha) r`` (seed 003 eqs. 52, 60)."""
    x, y, z, a, b, _, b1, _ = _rate_coefficients(q, qs)
    th = math.sqrt(x * x + y * y + z * z)
    rp = x * p0 + y * p1 + z * p2
    k = b1 * rp * rp - a
    return (math.cos(th) + b * rp * rp - cphi, 2.0 * b * rp * p0 + k * x,
            2.0 * b * rp * p1 + k * y, 2.0 * b * rp * p2 + k * z)


@_jit
def _twist(q, qs, p0, p1, p2):
    """Twist angle about p of the rotation coordinates ``r = q[qs:qs + 3]`` and its gradient,
    as :func:`core.expcoords.twist_angle` and :func:`core.expcoords.twist_gradient`; NaN
    where they raise (a swing of pi, ``W^2 + Y^2 < 1e-24``)."""
    x, y, z = q[qs], q[qs + 1], q[qs + 2]
    t = x * x + y * y + z * z
    th = math.sqrt(t)
    sh = _horner(_S_SH, t) if th < _TH_SH else math.sin(0.5 * th) / th
    sh1 = _horner(_S_SH1, t) if th < _TH_SH1 else \
        (0.5 * th * math.cos(0.5 * th) - math.sin(0.5 * th)) / th ** 3
    W = math.cos(0.5 * th)
    rp = x * p0 + y * p1 + z * p2
    Y = sh * rp
    den = W * W + Y * Y
    if den < 1e-24:
        return math.nan, 0.0, 0.0, 0.0
    sgn = -1.0 if W < 0.0 else 1.0
    k, a, c = 2.0 / den, sh1 * rp, -0.5 * sh
    return (2.0 * math.atan2(sgn * Y, sgn * W),
            k * (W * (a * x + sh * p0) - Y * (c * x)), k * (W * (a * y + sh * p1) - Y * (c * y)),
            k * (W * (a * z + sh * p2) - Y * (c * z)))


@_jit
def _ellipse(q, qs, lr, o):
    """Elliptic cone value and gradient on ``r = q[qs:qs + 3]`` (as
    :func:`core.expcoords.elliptic_cone_value` and :func:`core.expcoords.
    elliptic_cone_gradient`), constants at ``lr[o:]`` (:data:`core.compiled.layout.LR_PER`):
    ``p' = exp(r) p`` on ``(u, w = p x u, p)``, the value's derivative ``c`` in ``p'`` and the
    gradient ``J_b^T (p x R^T c)``."""
    x, y, z, a, b, g, _, _ = _rate_coefficients(q, qs)
    cth = math.cos(math.sqrt(x * x + y * y + z * z))
    R = (cth + b * x * x, -a * z + b * x * y, a * y + b * x * z,
         a * z + b * x * y, cth + b * y * y, -a * x + b * y * z,
         -a * y + b * x * z, a * x + b * y * z, cth + b * z * z)
    A, B = lr[o], lr[o + 5]
    p0, p1, p2, u0, u1, u2 = lr[o + 2], lr[o + 3], lr[o + 4], lr[o + 6], lr[o + 7], lr[o + 8]
    w0, w1, w2 = p1 * u2 - p2 * u1, p2 * u0 - p0 * u2, p0 * u1 - p1 * u0
    e0 = R[0] * p0 + R[1] * p1 + R[2] * p2
    e1 = R[3] * p0 + R[4] * p1 + R[5] * p2
    e2 = R[6] * p0 + R[7] * p1 + R[8] * p2
    X, Y, Z = e0 * u0 + e1 * u1 + e2 * u2, e0 * w0 + e1 * w1 + e2 * w2, e0 * p0 + e1 * p1 + e2 * p2
    n = X * X / A + Y * Y / B
    rho2 = X * X + Y * Y
    if Z >= 0.0:
        D = 2.0 * (1.0 + Z)
        val = 1.0 - n / D
        gx, gy, gz = -2.0 * X / (A * D), -2.0 * Y / (B * D), 2.0 * n / (D * D)
    elif rho2 > 1e-28:                                 # expcoords._ANTIPODE_RHO2
        val = 1.0 - (1.0 - Z) * n / (2.0 * rho2)
        k = (1.0 - Z) / rho2
        gx, gy, gz = -k * X * (1.0 / A - n / rho2), -k * Y * (1.0 / B - n / rho2), \
            n / (2.0 * rho2)
    else:
        val, gx, gy, gz = 1.0 - 1.0 / min(A, B), 0.0, 0.0, 0.0
    c0, c1, c2 = gx * u0 + gy * w0 + gz * p0, gx * u1 + gy * w1 + gz * p1, \
        gx * u2 + gy * w2 + gz * p2
    t0 = R[0] * c0 + R[3] * c1 + R[6] * c2              # R^T c
    t1 = R[1] * c0 + R[4] * c1 + R[7] * c2
    t2 = R[2] * c0 + R[5] * c1 + R[8] * c2
    v0, v1, v2 = p1 * t2 - p2 * t1, p2 * t0 - p0 * t2, p0 * t1 - p1 * t0
    # J_b = a I - b [r] + g r r^T; J_b^T v
    rv = g * (x * v0 + y * v1 + z * v2)
    return (val, a * v0 - b * (z * v1 - y * v2) + rv * x, a * v1 - b * (x * v2 - z * v0) + rv * y,
            a * v2 - b * (y * v0 - x * v1) + rv * z)


@_jit
def pgs(W, b, lam, sweeps, rtol):
    """Projected Gauss-Seidel into ``lam (n,)``: ``lam >= 0`` with ``W lam + b >= 0``
    complementary (``W (n, n)`` symmetric positive definite, ``b (n,)``), from zero, for at
    most ``sweeps`` sweeps, stopping after the first sweep whose largest change is at most
    ``rtol`` times the largest ``lam`` (:meth:`core.limits.LimitSolver._pgs`). Returns the
    sweeps taken."""
    n = b.shape[0]
    for i in range(n):
        lam[i] = 0.0
    for it in range(sweeps):
        change, size = 0.0, 0.0
        for i in range(n):
            r = b[i]
            for k in range(n):
                r += W[i, k] * lam[k]
            new = max(0.0, lam[i] - r / W[i, i])
            change = max(change, abs(new - lam[i]))
            size = max(size, new)
            lam[i] = new
        if change <= rtol * size:
            return it + 1
    return sweeps


@_jit
def _pgs(lr, W, b, lam, ne, sweeps):
    """:func:`pgs` on the blocks ``W (ne, ne)``, ``b``, ``lam`` at offsets of ``lr``."""
    pgs(lr[W:W + ne * ne].reshape((ne, ne)), lr[b:b + ne], lr[lam:lam + ne], sweeps, PGS_RTOL)


@_jit
def _coupled_pgs(li, lr, CP, CI, W, b, lam, n, sweeps):
    """:func:`pgs` on the blocks of ``lr`` at ``W (n, n)``, ``b`` and ``lam``, each row
    summed over its coupled constraints only (``li`` at ``CP`` and ``CI``,
    :func:`limit_offsets`): W's other entries are zeros, whose products leave the sums as
    they are, so the iterates are :func:`pgs`'s."""
    for i in range(n):
        lr[lam + i] = 0.0
    for it in range(sweeps):
        change, size = 0.0, 0.0
        for i in range(n):
            r = lr[b + i]
            for t in range(li[CP + i], li[CP + i + 1]):
                k = li[CI + t]
                r += lr[W + n * i + k] * lr[lam + k]
            old = lr[lam + i]
            new = max(0.0, old - r / lr[W + n * i + i])
            change = max(change, abs(new - old))
            size = max(size, new)
            lr[lam + i] = new
        if change <= PGS_RTOL * size:
            return it + 1
    return sweeps


@_jit
def _limits(ints, reals, buf, q, v, li, lr):
    """One application of the limit solver after a substep (as
    :meth:`core.limits.LimitSolver.apply`): engagement, the velocity impulse through
    ``M^-1 N_e^T`` (Cholesky of the CRBA mass matrix), then the joint-space position
    projection over every constraint; projected Gauss-Seidel for both. Status 4 if M is not
    positive definite, 5 if a twist limit is undefined (a swing of pi)."""
    nv = ints[H_NV]
    c = li[LI_C]
    (E, ST, _, _, IX, _, _, _), (D, DD, N, L, Y, W, lam, bb, _) = _limit_offsets(c, nv)
    ne = 0
    for k in range(c):
        d = _limit_row(li, lr, q, k, nv, N, D, lr)
        dof = li[LI_HEADER + 2 * k + 1]
        n = N + nv * k
        if d != d:                                       # a twist at a swing of pi
            return 5
        dd = lr[n + dof] * v[dof]
        if li[LI_HEADER + 2 * k] >= LIMIT_CONE:
            dd += lr[n + dof + 1] * v[dof + 1] + lr[n + dof + 2] * v[dof + 2]
        lr[DD + k] = dd
        was = li[E + k] != 0
        leave = was and d > 0.0 and dd > 0.0 and li[ST + k] >= li[LI_MIN]
        on = (was and not leave) or d < 0.0
        li[E + k] = 1 if on else 0
        li[ST + k] = li[ST + k] + 1 if on else 0
        if on:
            li[IX + ne] = k
            ne += 1
    if ne == 0:
        return 0
    _crba(ints, reals, buf, q)
    oM = ints[H_M]
    for i in range(nv):                                  # M = L L^T
        for j in range(i + 1):
            x = buf[oM + nv * i + j]
            for k in range(j):
                x -= lr[L + nv * i + k] * lr[L + nv * j + k]
            if i == j:
                if not x > 0.0:
                    return 4
                lr[L + nv * i + i] = math.sqrt(x)
            else:
                lr[L + nv * i + j] = x / lr[L + nv * j + j]
    _delassus(lr, li, nv, ne, IX, N, L, Y, W)
    rest = lr[0]
    for e in range(ne):                                  # n.v_new >= -e min(n.v, 0)
        dd = lr[DD + li[IX + e]]
        lr[bb + e] = dd + rest * min(dd, 0.0)
    _pgs(lr, W, bb, lam, ne, li[LI_ITER])
    for e in range(ne):
        y, x = Y + nv * e, lr[lam + e]
        for i in range(nv):
            v[i] += lr[y + i] * x
    need = False                                         # N dq >= -d - p_tol
    for e in range(ne):
        k = li[IX + e]
        need = need or lr[D + k] + lr[LR_HEADER + LR_PER * k + 1] < 0.0
    if not need:
        return 0
    for k in range(c):                                   # bb: the distances, then b
        lr[bb + k] = lr[D + k]
    return _project(li, lr, q, nv)


@_jit
def _project(li, lr, q, nv):
    """The joint-space projection in place on ``q`` (:meth:`core.limits.LimitSolver.project`)
    from the constraints' gradients at ``N`` and values at ``b`` (:func:`limit_offsets`) at
    q: ``q + N^T mu`` with ``mu >= 0`` and ``N dq >= -d - p_tol``, re-linearized up to
    POSITION_PASSES times until every constraint is within its deadband; the values and
    gradients at the projected q are left at ``b`` and ``N``. Status 5 if a twist limit is
    undefined (a swing of pi), else 0."""
    c = li[LI_C]
    (_, _, _, _, _, CP, CI, _), (_, _, N, _, _, W, lam, bb, _) = _limit_offsets(c, nv)
    for _ in range(POSITION_PASSES):
        for k in range(c):              # W = N N^T over the rows' dofs, the coupled entries
            lr[bb + k] += lr[LR_HEADER + LR_PER * k + 1]
            a, e = _row_dofs(li, k)
            for t in range(li[CP + k], li[CP + k + 1]):
                m = li[CI + t]
                a2, e2 = _row_dofs(li, m)
                x = 0.0
                for i in range(max(a, a2), min(e, e2)):
                    x += lr[N + nv * k + i] * lr[N + nv * m + i]
                lr[W + c * k + m] = x
        _coupled_pgs(li, lr, CP, CI, W, bb, lam, c, li[LI_ITER])
        for k in range(c):
            x = lr[lam + k]
            a, e = _row_dofs(li, k)
            for i in range(a, e):
                q[i] += lr[N + nv * k + i] * x
        inside = True
        for k in range(c):
            d = _limit_row(li, lr, q, k, nv, N, bb, lr)
            if d != d:
                return 5
            inside = inside and d + lr[LR_HEADER + LR_PER * k + 1] >= -POSITION_SLACK
        if inside:
            break
    return 0


@_jit
def _row_dofs(li, k):
    """The coordinates ``a:e`` where constraint ``k``'s gradient can be nonzero (the rotation
    coordinates of a cone or twist limit, the one coordinate of a range); the products over
    the others are zeros, which leave the sums as they are."""
    dof = li[LI_HEADER + 2 * k + 1]
    return dof, dof + (3 if li[LI_HEADER + 2 * k] >= LIMIT_CONE else 1)


@_jit
def _limit_row(li, lr, q, k, nv, N, D, out):
    """Constraint ``k`` at ``q`` (constants in ``lr``): its value ``d`` into ``out[D + k]``
    (returned; ``D`` the offset of a (c,) block) and its gradient into row k of the (c, nv)
    block at ``out[N:]`` (zero outside its dofs); ``out`` is ``lr`` in the step's solver."""
    kind, dof = li[LI_HEADER + 2 * k], li[LI_HEADER + 2 * k + 1]
    o = LR_HEADER + LR_PER * k
    n = N + nv * k
    for i in range(nv):
        out[n + i] = 0.0
    if kind == LIMIT_CONE:
        d, g0, g1, g2 = _cone(q, dof, lr[o + 2], lr[o + 3], lr[o + 4], lr[o + 5])
        out[n + dof], out[n + dof + 1], out[n + dof + 2] = g0, g1, g2
    elif kind == LIMIT_ELLIPSE:
        d, g0, g1, g2 = _ellipse(q, dof, lr, o)
        out[n + dof], out[n + dof + 1], out[n + dof + 2] = g0, g1, g2
    elif kind >= LIMIT_TWIST_LOWER:
        tw, g0, g1, g2 = _twist(q, dof, lr[o + 2], lr[o + 3], lr[o + 4])
        sign = 1.0 if kind == LIMIT_TWIST_LOWER else -1.0
        d = sign * (tw - lr[o])
        out[n + dof], out[n + dof + 1], out[n + dof + 2] = sign * g0, sign * g1, sign * g2
    elif kind == LIMIT_LOWER:
        d = q[dof] - lr[o]
        out[n + dof] = 1.0
    else:
        d = lr[o] - q[dof]
        out[n + dof] = -1.0
    out[D + k] = d
    return d


@_jit
def limit_hold(li, lr, q, out):
    """:meth:`core.limits.LimitSolver.hold` in place on ``q (nv,)``: the constraints at q,
    the projection (:func:`_project`) where one is outside its deadband, and the values
    ``d (c,)`` and gradients ``N (c, nv)`` at the final q into ``out`` as
    :func:`limit_constraints` leaves them. Returns 1 if q was projected, 0 if not, -1 when
    a twist limit is undefined (a swing of pi; q may then be partly projected)."""
    c, nv = li[LI_C], q.shape[0]
    _, (_, _, N, _, _, _, _, bb, _) = _limit_offsets(c, nv)
    need = False
    for k in range(c):
        d = _limit_row(li, lr, q, k, nv, N, bb, lr)
        if d != d:
            return -1
        need = need or d + lr[LR_HEADER + LR_PER * k + 1] < 0.0
    if need and _project(li, lr, q, nv):
        return -1
    for k in range(c):
        out[k] = lr[bb + k]
    for i in range(c * nv):
        out[c + i] = lr[N + i]
    return 1 if need else 0


@_jit
def limit_constraints(li, lr, q, out):
    """Every constraint of the packed limit solver ``(li, lr)`` at ``q (nv,)``, as
    :meth:`core.limits.LimitSolver.evaluate`: the values ``d (c,)`` into ``out[:c]`` and the
    gradients ``N (c, nv)`` row by row after them (``out (c (1 + nv),)``). Returns False
    when a twist limit is undefined at q (a swing of pi)."""
    c, nv = li[LI_C], q.shape[0]
    for k in range(c):
        d = _limit_row(li, lr, q, k, nv, c, 0, out)
        if d != d:
            return False
    return True


@_jit
def _delassus(lr, li, nv, ne, IX, N, L, Y, W):
    """For the constraints ``li[IX:IX + ne]``: the columns ``M^-1 N_e^T`` into ``Y`` (from the
    Cholesky factor at ``L``) and ``W = N_e M^-1 N_e^T`` (ne, ne) into ``W``."""
    for e in range(ne):                                  # column e of M^-1 N_e^T
        n, y = N + nv * li[IX + e], Y + nv * e
        for i in range(nv):
            x = lr[n + i]
            for k in range(i):
                x -= lr[L + nv * i + k] * lr[y + k]
            lr[y + i] = x / lr[L + nv * i + i]
        for i in range(nv - 1, -1, -1):
            x = lr[y + i]
            for k in range(i + 1, nv):
                x -= lr[L + nv * k + i] * lr[y + k]
            lr[y + i] = x / lr[L + nv * i + i]
    for e in range(ne):
        n = N + nv * li[IX + e]
        a, b = _row_dofs(li, li[IX + e])
        for f in range(ne):
            x = 0.0
            y = Y + nv * f
            for i in range(a, b):
                x += lr[n + i] * lr[y + i]
            lr[W + ne * e + f] = x


@_jit
def advance(ints, reals, buf, q, v, sd, li, lr, dofs, nf, drive, qend, powers, chol):
    """Steps of the model integrator, in place on ``(q, v)``: ``sd[S_NSUB]`` substeps of
    ``h = sd[S_H]`` with the tau and fext of ``sd`` (:func:`core.compiled.pack.step_arrays`),
    each followed by the divergence test, the spherical and free joints' chart change
    (``sd[S_CHARTS]``) and, when ``li`` has constraints, the limit solver
    (:func:`core.compiled.pack` layout of :meth:`core.limits.LimitSolver`) and again the test
    and the chart change.

    ``li, lr`` None for a model without limits, and ``dofs, drive, qend, powers, chol`` None
    for one without a drive: numba then compiles this call without the limit solver or the
    drive (a model's first simulation compiles only what it runs). With prescribed
    coordinates (``dofs`` not empty: :func:`driven_step`'s ``dofs``, ``nf`` and ``chol``): ``drive (n, 3, 2, k)`` each substep's ``(v_p, a_p)`` at its start, middle
    and end, ``qend (n, k)`` the prescribed coordinates at its end, each substep's stage
    powers into the rows of ``powers (n, 4)``, and after the limits of each substep the
    prescribed coordinates and rates are set to the drive's at its end (as
    :meth:`core.integrators.Integrator._step`); without, those tables have one row, unused.

    Status 0, or nonzero with the limit solver's engagement state as before the call
    (``(q, v)`` then hold a partial step): 1 a singular ``S^T IA S``, 3 a non-finite state,
    4 a mass matrix (or ``M_ff``) not positive definite, 5 an undefined twist limit."""
    return _advance(ints, reals, buf, q, v, sd, li, lr, dofs, nf, drive, qend, powers, chol)


@_jit
def advance_unconstrained(ints, reals, buf, q, v, sd):
    """:func:`advance` of a model without limits or a drive: six arguments instead of
    fourteen (numba's dispatcher takes about 45 ns per array argument), and the Euler
    methods step ``(q, v)`` in place, without the work rows of ``sd``."""
    method = int(sd[S_METHOD])
    if method == 2:
        return _advance(ints, reals, buf, q, v, sd, None, None, None, int(0), None, None,
                        None, None)
    h, charts = sd[S_H], sd[S_CHARTS] != 0.0
    tau, fext = _step_forces(ints, sd)
    for _ in range(int(sd[S_NSUB])):
        st = _aba(ints, reals, buf, q, v, tau, fext)
        if st:
            return st
        _first_order(buf, ints[H_DDQ], h, method, q, v, q, v)
        st = _settle(ints, q, v, charts)
        if st:
            return st
    return 0


@_inline
def _step_forces(ints, sd):
    """``(tau (nv,), fext (nfext, 6))``: views of the step kernels' ``sd``."""
    nv = ints[H_NV]
    nfext = int(sd[S_NFEXT])
    return sd[S_SIZE:S_SIZE + nv], sd[S_SIZE + nv:S_SIZE + nv + 6 * nfext].reshape((nfext, 6))


@_jit
def _advance(ints, reals, buf, q, v, sd, li, lr, dofs, nf, drive, qend, powers, chol):
    nv = ints[H_NV]
    method, h, charts = int(sd[S_METHOD]), sd[S_H], sd[S_CHARTS] != 0.0
    tau, fext = _step_forces(ints, sd)
    rows = S_SIZE + nv + 6 * int(sd[S_NFEXT])
    qn = sd[rows:rows + 5 * nv].reshape((5, nv))
    vn = sd[rows + 5 * nv:rows + 10 * nv].reshape((5, nv))
    c = 0
    if li is not None:
        c = li[LI_C] if li.size else 0
        E = LI_HEADER + 2 * c
        for k in range(2 * c):                           # engaged, steps -> the copies
            li[E + 2 * c + k] = li[E + k]
    st = 0
    for s in range(int(sd[S_NSUB])):
        if dofs is None:
            st = _substep(ints, reals, buf, q, v, tau, fext, h, method, qn, vn, None, None,
                          None, None, None)
        else:
            r = s if dofs.size else 0
            st = _substep(ints, reals, buf, q, v, tau, fext, h, method, qn, vn, dofs, nf,
                          drive[r], powers[r], chol)
        if st:
            break
        for j in range(nv):
            q[j] = qn[0, j]
            v[j] = vn[0, j]
        st = _settle(ints, q, v, charts)
        if li is not None:
            if st == 0 and c:
                st = _limits(ints, reals, buf, q, v, li, lr)
                if st == 0:
                    st = _settle(ints, q, v, charts)
        if st:
            break
        if dofs is not None:
            for i in range(dofs.size - nf):              # the drive's motion at the end
                q[dofs[nf + i]] = qend[s, i]
                v[dofs[nf + i]] = drive[s, 2, 0, i]
    if li is not None:
        if st:
            E = LI_HEADER + 2 * c
            for k in range(2 * c):
                li[E + k] = li[E + 2 * c + k]
    return st


# -- conjugate gradients of the maximal-coordinate projection (core.maximal.solver.project) --
@_jit
def _csr_matvec(data, indices, indptr, x, out):
    for i in range(indptr.size - 1):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * x[indices[k]]
        out[i] = acc


@_jit
def cg(data, indices, indptr, dinv, b, x, maxiter, atol, work):
    """Jacobi-preconditioned conjugate gradients on the CSR matrix ``(data, indices,
    indptr)`` from ``x`` (in place; zeros or an initial guess), the steps of
    ``scipy.sparse.linalg.cg`` (stop when ``|r| < atol`` before an iteration, ``z = dinv
    r``); ``work (4, m)`` scratch. Returns the iterations completed; ``maxiter`` means not
    converged."""
    m = b.size
    r, z, p, q = work[0], work[1], work[2], work[3]
    nonzero = False
    for i in range(m):
        nonzero = nonzero or x[i] != 0.0
    if nonzero:
        _csr_matvec(data, indices, indptr, x, q)
        for i in range(m):
            r[i] = b[i] - q[i]
    else:
        for i in range(m):
            r[i] = b[i]
    rho_prev = 1.0
    for it in range(maxiter):
        rr = 0.0
        for i in range(m):
            rr += r[i] * r[i]
        if math.sqrt(rr) < atol:
            return it
        rho = 0.0
        for i in range(m):
            z[i] = dinv[i] * r[i]
            rho += r[i] * z[i]
        if it > 0:
            beta = rho / rho_prev
            for i in range(m):
                p[i] = p[i] * beta + z[i]
        else:
            for i in range(m):
                p[i] = z[i]
        _csr_matvec(data, indices, indptr, p, q)
        pq = 0.0
        for i in range(m):
            pq += p[i] * q[i]
        alpha = rho / pq
        for i in range(m):
            x[i] += alpha * p[i]
            r[i] -= alpha * q[i]
        rho_prev = rho
    return maxiter
