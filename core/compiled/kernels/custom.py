"""The OpenSim CustomJoint (:class:`core.joints.opensim.CustomJoint`) in the compiled
kernels: its joint row from the axis and function tables that
:meth:`core.joints.opensim.CustomJointFamily.kernel_params` packs (layout ``CJ_*`` and
``FN_*`` in :mod:`core.compiled.layout`), following the sums of
:meth:`~core.joints.opensim.CustomJoint.evaluate`.

Each axis value ``v_k = scale_k f_k(q[arg_k])`` with ``f, f', f''`` evaluated as the
functions' scalar ``at`` does (Horner for the polynomial, OpenSim's bisection and end rules
for the splines); ``R = R_1 R_2 R_3``, ``R_k = I + sin v_k [a_k] + (1 - cos v_k) [a_k]^2``,
``p = sum_{k >= 4} v_k a_k``, the unit-rate angular columns ``w_1 = (R_2 R_3)^T a_1``,
``w_2 = R_3^T a_2``, ``w_3 = a_3`` and the translation axes in the body frame ``t_k = R^T
a_k``. With the axis rates ``r_k = f_k' q_dot[arg_k]`` and ``s_k = f_k'' q_dot[arg_k]^2``:

* ``S[:, j] = [sum_{k <= 3, arg_k = j} f_k' w_k; sum_{k >= 4, arg_k = j} f_k' t_k]``;
* ``q_dot^T (dS/dq) q_dot = [sum_{k <= 3} s_k w_k + sum_{k < m <= 3} r_k r_m (w_k x w_m);
  sum_{k >= 4} s_k t_k - omega x u]`` with ``omega = sum_{k <= 3} r_k w_k``, ``u =
  sum_{k >= 4} r_k t_k`` (the module docstring of :mod:`core.joints.opensim` contracted with
  ``q_dot``); for a joint of one coordinate ``q_dot = 1`` gives ``dS/dq``.

Mirrors (reference -> twin; parity test
``tests/core/test_backend_numba.py::test_custom_joints_agree``, at states inside, beyond and
at the spline knots and on gait2392):

* ``opensim.CustomJoint.evaluate`` (with ``opensim.CustomJointFamily``) -> :func:`custom_joint`,
  the joint kind ``KIND_CUSTOM`` of :func:`core.compiled.kernels.joints.large_joint`;
* the functions' ``at`` (``Constant``, ``LinearFunction``, ``PolynomialFunction``,
  ``SimmSpline``, ``PiecewiseLinearFunction``, ``MultiplierFunction``) -> the function
  evaluation of :func:`custom_joint`.
"""

import math

from ...joints.opensim import ROUNDOFF_ERROR
from ..layout import CJ_AXES, CJ_HEAD, CJ_PER, FN_CONSTANT, FN_LINEAR, FN_POLYNOMIAL
from .options import inline, jit

__all__ = ["custom_joint"]


@jit
def _spline(reals, d, m, x):
    """``(f, f', f'')`` of the spline with ``m`` knots whose ``x, y, b, c, d`` start at
    ``reals[d]``: linear beyond the end knots, the end values within ROUNDOFF_ERROR of
    them, else the cubic of the segment found by OpenSim's bisection (as ``_Knotted.at``)."""
    y, b, c, e = d + m, d + 2 * m, d + 3 * m, d + 4 * m
    x0, xn = reals[d], reals[d + m - 1]
    if x < x0:
        return reals[y] + (x - x0) * reals[b], reals[b], 0.0
    if abs(x - x0) <= ROUNDOFF_ERROR:
        return reals[y], reals[b], 2.0 * reals[c]
    n = m - 1
    if x > xn:
        return reals[y + n] + (x - xn) * reals[b + n], reals[b + n], 0.0
    if abs(x - xn) <= ROUNDOFF_ERROR:
        return reals[y + n], reals[b + n], 2.0 * reals[c + n]
    i, j = 0, m
    while True:
        k = (i + j) // 2
        if x < reals[d + k]:
            j = k
        elif x > reals[d + min(k + 1, n)]:
            i = k
        else:
            k = min(k, m - 2)
            break
    dx = x - reals[d + k]
    yk, bk, ck, dk = reals[y + k], reals[b + k], reals[c + k], reals[e + k]
    return (yk + dx * (bk + dx * (ck + dx * dk)), bk + dx * (2.0 * ck + 3.0 * dx * dk),
            2.0 * ck + 6.0 * dx * dk)


@inline
def _function(reals, po, h, x):
    """``(f, f', f'')`` of the axis function whose header is at ``reals[h]`` (not a
    Constant), scaled."""
    kind, m, d = int(reals[h + 2]), int(reals[h + 3]), po + int(reals[h + 4])
    if kind == FN_LINEAR:
        f, g, hh = reals[d] * x + reals[d + 1], reals[d], 0.0
    elif kind == FN_POLYNOMIAL:
        f = g = hh = 0.0
        for i in range(m):
            f = f * x + reals[d + i]
        d1 = d + m
        for i in range(m - 1):
            g = g * x + reals[d1 + i]
        d2 = d1 + max(m - 1, 0)
        for i in range(m - 2):
            hh = hh * x + reals[d2 + i]
    else:
        f, g, hh = _spline(reals, d, m, x)
    s = reals[h + 1]
    return f * s, g * s, hh * s


@inline
def _axis(reals, po, k, q, v, qs, one):
    """Axis ``k``: ``(value, f', rate r_k, s_k, coordinate)`` (module docstring; unit rates
    when ``one``); a Constant's value without reading its coordinate."""
    h = po + CJ_HEAD + CJ_PER * k
    arg = int(reals[h])
    if int(reals[h + 2]) == FN_CONSTANT:
        return reals[po + int(reals[h + 4])] * reals[h + 1], 0.0, 0.0, 0.0, arg
    f, g, hh = _function(reals, po, h, q[qs + arg])
    qd = 1.0 if one else v[qs + arg]
    return f, g, g * qd, hh * qd * qd, arg


@jit
def _rotation(reals, o, angle):
    """``I + sin [a] + (1 - cos) [a]^2`` about the unit axis at ``reals[o]`` (9-tuple)."""
    a0, a1, a2 = reals[o], reals[o + 1], reals[o + 2]
    s = math.sin(angle)
    c = 1.0 - math.cos(angle)
    return (1.0 - c * (a1 * a1 + a2 * a2), -s * a2 + c * a0 * a1, s * a1 + c * a0 * a2,
            s * a2 + c * a0 * a1, 1.0 - c * (a0 * a0 + a2 * a2), -s * a0 + c * a1 * a2,
            -s * a1 + c * a0 * a2, s * a0 + c * a1 * a2, 1.0 - c * (a0 * a0 + a1 * a1))


@jit
def _mm(A, B):
    """``A B`` for 3x3 row-major 9-tuples."""
    return (A[0] * B[0] + A[1] * B[3] + A[2] * B[6], A[0] * B[1] + A[1] * B[4] + A[2] * B[7],
            A[0] * B[2] + A[1] * B[5] + A[2] * B[8], A[3] * B[0] + A[4] * B[3] + A[5] * B[6],
            A[3] * B[1] + A[4] * B[4] + A[5] * B[7], A[3] * B[2] + A[4] * B[5] + A[5] * B[8],
            A[6] * B[0] + A[7] * B[3] + A[8] * B[6], A[6] * B[1] + A[7] * B[4] + A[8] * B[7],
            A[6] * B[2] + A[7] * B[5] + A[8] * B[8])


@jit
def _mtv(A, reals, o):
    """``A^T x`` for the 3-vector ``x`` at ``reals[o]``."""
    x0, x1, x2 = reals[o], reals[o + 1], reals[o + 2]
    return (A[0] * x0 + A[3] * x1 + A[6] * x2, A[1] * x0 + A[4] * x1 + A[7] * x2,
            A[2] * x0 + A[5] * x1 + A[8] * x2)


@jit
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@inline
def _add_row(buf, rows, j, i, c, x):
    """``buf[r + i : r + i + 3] += c x`` in the row ``r = rows + 6 j`` of coordinate ``j``
    (nothing for ``j = -1``, an axis without a coordinate)."""
    if j >= 0:
        r = rows + 6 * j + i
        buf[r] += c * x[0]
        buf[r + 1] += c * x[1]
        buf[r + 2] += c * x[2]


@jit
def custom_joint(reals, po, pb, buf, o, sm, oc, q, v, qs, n, with_v):
    """A CustomJoint of ``n`` coordinates from ``q[qs]`` with parameters at ``reals[po]``
    and placement at ``reals[pb]`` (top 3x4, row-major): ``P G`` into ``buf[o:o + 12]``;
    for one coordinate ``S`` and ``dS/dq`` into ``buf[o + 16:o + 28]``, else the rows
    ``S_j`` at ``sm + 6 (qs + j)`` and, ``with_v``, ``q_dot^T (dS/dq) q_dot`` at ``oc``."""
    one = n == 1
    v0, g0, r0, s0, j0 = _axis(reals, po, 0, q, v, qs, one)
    v1, g1, r1, s1, j1 = _axis(reals, po, 1, q, v, qs, one)
    v2, g2, r2, s2, j2 = _axis(reals, po, 2, q, v, qs, one)
    v3, g3, r3, s3, j3 = _axis(reals, po, 3, q, v, qs, one)
    v4, g4, r4, s4, j4 = _axis(reals, po, 4, q, v, qs, one)
    v5, g5, r5, s5, j5 = _axis(reals, po, 5, q, v, qs, one)
    a = po + CJ_AXES
    R3 = _rotation(reals, a + 6, v2)
    R23 = _mm(_rotation(reals, a + 3, v1), R3)
    R = _mm(_rotation(reals, a, v0), R23)
    p = (v3 * reals[a + 9] + v4 * reals[a + 12] + v5 * reals[a + 15],
         v3 * reals[a + 10] + v4 * reals[a + 13] + v5 * reals[a + 16],
         v3 * reals[a + 11] + v4 * reals[a + 14] + v5 * reals[a + 17])
    for i in range(3):
        P0, P1, P2 = reals[pb + 4 * i], reals[pb + 4 * i + 1], reals[pb + 4 * i + 2]
        for j in range(3):
            buf[o + 4 * i + j] = P0 * R[j] + P1 * R[3 + j] + P2 * R[6 + j]
        buf[o + 4 * i + 3] = P0 * p[0] + P1 * p[1] + P2 * p[2] + reals[pb + 4 * i + 3]
    w0 = _mtv(R23, reals, a)
    w1 = _mtv(R3, reals, a + 3)
    w2 = (reals[a + 6], reals[a + 7], reals[a + 8])
    t3, t4, t5 = _mtv(R, reals, a + 9), _mtv(R, reals, a + 12), _mtv(R, reals, a + 15)
    if one:
        rows = o + 16
        for k in range(6):
            buf[rows + k] = 0.0
    else:
        rows = sm + 6 * qs
        for k in range(6 * n):
            buf[rows + k] = 0.0
    _add_row(buf, rows, j0, 0, g0, w0)
    _add_row(buf, rows, j1, 0, g1, w1)
    _add_row(buf, rows, j2, 0, g2, w2)
    _add_row(buf, rows, j3, 3, g3, t3)
    _add_row(buf, rows, j4, 3, g4, t4)
    _add_row(buf, rows, j5, 3, g5, t5)
    if not (one or with_v):
        return
    c01, c02, c12 = _cross(w0, w1), _cross(w0, w2), _cross(w1, w2)
    k01, k02, k12 = r0 * r1, r0 * r2, r1 * r2
    om = (r0 * w0[0] + r1 * w1[0] + r2 * w2[0], r0 * w0[1] + r1 * w1[1] + r2 * w2[1],
          r0 * w0[2] + r1 * w1[2] + r2 * w2[2])
    u = (r3 * t3[0] + r4 * t4[0] + r5 * t5[0], r3 * t3[1] + r4 * t4[1] + r5 * t5[1],
         r3 * t3[2] + r4 * t4[2] + r5 * t5[2])
    ou = _cross(om, u)
    out = o + 22 if one else oc
    for i in range(3):
        buf[out + i] = (s0 * w0[i] + s1 * w1[i] + s2 * w2[i] + k01 * c01[i] + k02 * c02[i]
                        + k12 * c12[i])
        buf[out + 3 + i] = s3 * t3[i] + s4 * t4[i] + s5 * t5[i] - ou[i]
