"""numba twins of the tree algorithms (:mod:`core.dynamics`, Pinocchio's names).

Every kernel takes the model's packed ``ints, reals`` (:mod:`core.compiled.pack`), the
Data's flat ``buffer`` (:mod:`core.compiled.layout`) and the state vectors; it allocates
nothing and returns a status (0: done; 1: a joint's ``D = S^T IA S`` is singular).

The recursions run in body frames (Featherstone's form of seed 000 eqs. 11, 14-16 and
Appendix A) after :func:`core.compiled.kernels.kinematics.kinematics`, one body at a time in the
model's order (parents first):

* aba (Appendix A): articulated inertias ``IA`` and bias wrenches ``pA = -ad_V^T J V -
  f_ext`` backwards, ``IA_p += X^T (IA - U D^-1 U^T) X`` (``D = S^T U`` plus the armature,
  if any), then the accelerations forwards from the base acceleration ``[0; -g]``; with
  world tracking, each tracked body starts from ``IA = (1 + a) J`` and ``pA`` takes the pull
  ``J u - [n; F]`` (:func:`_pull`, :mod:`core.dynamics` *World tracking*);
* rnea: ``A_i = X_i A_p + S q_ddot + c_i``, ``f_i = J A_i - ad_V^T J V - f_ext``,
  ``tau = S^T f`` and ``f_p += X^T f`` backwards;
* crba: composite inertias ``Ic_p += X^T Ic X`` backwards, then ``M_jl = S_j^T F`` with
  ``F = Ic S_l`` carried to each ancestor by ``X^T``.

Compile time: numba compiles a function once per distinct tuple of argument types, and a
constant passed by one kernel to another is typed as that literal value, so the kernels
pass constants as ``bool(True)``, ``int(0)`` (run-time values of one type) and every array
with one dtype, layout and writability: each function compiles once for all its callers.
Each entry point's compile optimizes all the code it calls again, so thin levels between
them are inlined (:data:`core.compiled.kernels.options.inline`), and code a call cannot need is not
compiled for it: the large joint kinds only for read-only ``ints``
(:func:`core.compiled.kernels.joints.large_joint`), the drive only where its arguments are not
None (:mod:`core.compiled.integrators`).

Mirrors (reference -> twin; parity test):

* ``dynamics.aba`` (with its armature) -> :func:`aba`, :func:`aba_free` (entries),
  :func:`aba_recursion`; ``dynamics._track_pull`` and ``dynamics.body_spring`` ->
  :func:`_pull` (with the integrator's world tracking:
  ``tests/core/test_backend_numba.py::test_world_tracking_agrees``);
* ``dynamics.rnea``, ``dynamics.nonlinear_effects`` -> :func:`rnea` (entry),
  :func:`rnea_recursion`;
* ``dynamics.crba`` -> :func:`crba` (entry), :func:`crba_recursion`;
* ``dynamics.aba``'s "dense" method without an armature -> :func:`dense_aba`,
  :func:`cholesky` (the contact steps' dynamics, :mod:`core.compiled.contact_step`);
* ``dynamics._external_wrenches`` (fext and the point springs) -> :func:`_external`;
  ``dynamics.passive_forces`` -> :func:`_passive`;

each in ``tests/core/test_backend_numba.py::test_backends_agree`` (with
``::test_custom_joints_agree``; the tolerance there: rounding steps per body and pass times
the bodies times the condition of M), and against Pinocchio in
``::test_aba_matches_pinocchio_on_the_numba_backend``;

* ``dynamics.kinetic_energy``, ``dynamics.potential_energy`` -> :func:`energies`:
  ``tests/core/test_compiled_realtime.py::test_energies_agree_and_leave_the_world_poses``.
"""

import math

from .kinematics import kinematics, s_row
from ..layout import (B_A, B_C, B_F, B_I, B_LOCAL, B_P, B_SIZE, B_V, BODY_REALS, D_DINV,
                     D_SIZE, D_U, D_USMALL, HEADER, H_BODY, H_DDQ, H_DOF, H_IPOINT, H_LSH, H_M,
                     H_NB, H_NLE, H_NPS, H_NV, H_RPOINT, H_RSPRING, H_SPRINGS, H_TAU, H_TMP,
                     I_N, I_PARENT, I_Q, NI, R_BODIES, T_BASE, T_GJ, T_ROT, T_VEC)
from .options import inline, jit
from .spatial import (Z6, invert, load6, m6v, point_velocity, push, row6, world_point,
                      x_motion, x_motion_t, xt_force_add, xtmx_add)

__all__ = ["aba", "aba_free", "rnea", "crba", "energies", "aba_recursion", "rnea_recursion",
           "crba_recursion"]


@jit
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
        xa = world_point(buf, oL + 28 * ia, reals, r)
        xb = (reals[r + 3], reals[r + 4], reals[r + 5]) if ib < 0 else \
            world_point(buf, oL + 28 * ib, reals, r + 3)
        d0, d1, d2 = xb[0] - xa[0], xb[1] - xa[1], xb[2] - xa[2]
        length = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        if length < 1e-12:
            continue
        e0, e1, e2 = d0 / length, d1 / length, d2 / length
        mag = k * (length - rest)
        if c != 0.0:
            va = point_velocity(buf, oL + 28 * ia, ob + B_SIZE * ia + B_V, reals, r)
            vb = (0.0, 0.0, 0.0) if ib < 0 else \
                point_velocity(buf, oL + 28 * ib, ob + B_SIZE * ib + B_V, reals, r + 3)
            mag += c * (e0 * (vb[0] - va[0]) + e1 * (vb[1] - va[1]) + e2 * (vb[2] - va[2]))
        f0, f1, f2 = mag * e0, mag * e1, mag * e2
        push(buf, oL + 28 * ia, ob + B_SIZE * ia + B_F, reals, r, f0, f1, f2)
        if ib >= 0:
            push(buf, oL + 28 * ib, ob + B_SIZE * ib + B_F, reals, r + 3, -f0, -f1, -f2)
    return True


@inline
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


@jit
def _pull(reals, buf, b, bo, o, row, t):
    """World tracking of body ``b`` (scratch at ``bo``, world pose at ``o``) by its ``row``
    ``[a, k, k_v, c, R*, p*, w*, v*]`` (:mod:`core.dynamics`, *World tracking*): its
    articulated inertia scaled by ``1 + a`` and ``J u - [n; F]`` added to its bias wrench,
    ``u = k_v V - c W* + a [0; R^T g]`` (as ``dynamics._track_pull``); ``t`` 36 floats of
    scratch (Q, Q Sigma, d, R^T g, W*, u)."""
    a, k, kv, c = row[0], row[1], row[2], row[3]
    oI, oP, oV = bo + B_I, bo + B_P, bo + B_V
    for i in range(36):
        buf[oI + i] *= 1.0 + a
    oJ = R_BODIES + BODY_REALS * b + 12
    tQ, tN, td, tg, tw, tu = t, t + 9, t + 18, t + 21, t + 24, t + 30
    for i in range(3):                               # Q = R^T R*, d = R^T (p - p*), R^T g
        for j in range(3):
            x = 0.0
            for l in range(3):
                x += buf[o + 4 * l + i] * row[4 + 3 * l + j]
            buf[tQ + 3 * i + j] = x
        x = y = 0.0
        for l in range(3):
            x += buf[o + 4 * l + i] * (buf[o + 4 * l + 3] - row[13 + l])
            y += buf[o + 4 * l + i] * reals[l]
        buf[td + i] = x
        buf[tg + i] = y
    half = 0.5 * (reals[oJ] + reals[oJ + 7] + reals[oJ + 14])
    for i in range(3):                               # Q Sigma, Sigma = tr(I_o)/2 - I_o; Q w*
        for j in range(3):
            x = buf[tQ + 3 * i + j] * half
            for l in range(3):
                x -= buf[tQ + 3 * i + l] * reals[oJ + 6 * l + j]
            buf[tN + 3 * i + j] = x
        x = y = 0.0
        for l in range(3):
            x += buf[tQ + 3 * i + l] * row[16 + l]
            y += buf[tQ + 3 * i + l] * row[19 + l]
        buf[tw + i] = x
        buf[tw + 3 + i] = y
    d0, d1, d2 = buf[td], buf[td + 1], buf[td + 2]
    w0, w1, w2 = buf[tw], buf[tw + 1], buf[tw + 2]
    buf[tw + 3] -= d1 * w2 - d2 * w1                 # W*_v = Q v* - d x Q w*
    buf[tw + 4] -= d2 * w0 - d0 * w2
    buf[tw + 5] -= d0 * w1 - d1 * w0
    for i in range(6):
        buf[tu + i] = kv * buf[oV + i] - c * buf[tw + i]
    for i in range(3):
        buf[tu + 3 + i] += a * buf[tg + i]
    m = reals[oJ + 21]
    c0, c1, c2 = reals[oJ + 16], reals[oJ + 5], reals[oJ + 9]      # m c
    N = tN
    n0 = k * (buf[N + 7] - buf[N + 5] - (c1 * d2 - c2 * d1))
    n1 = k * (buf[N + 2] - buf[N + 6] - (c2 * d0 - c0 * d2))
    n2 = k * (buf[N + 3] - buf[N + 1] - (c0 * d1 - c1 * d0))
    Q = tQ
    F0 = -k * (c0 - buf[Q] * c0 - buf[Q + 1] * c1 - buf[Q + 2] * c2 + m * d0)
    F1 = -k * (c1 - buf[Q + 3] * c0 - buf[Q + 4] * c1 - buf[Q + 5] * c2 + m * d1)
    F2 = -k * (c2 - buf[Q + 6] * c0 - buf[Q + 7] * c1 - buf[Q + 8] * c2 + m * d2)
    spring = (n0, n1, n2, F0, F1, F2)
    for i in range(6):
        x = -spring[i]
        for l in range(6):
            x += reals[oJ + 6 * i + l] * buf[tu + l]
        buf[oP + i] += x


@jit
def _passive(ints, reals, q, v, j):
    """The spring and damper torque ``-k (q - rest) - c q_dot`` on coordinate j."""
    if ints[H_SPRINGS] == 0:
        return 0.0
    rs, nv = ints[H_RSPRING], ints[H_NV]
    return -reals[rs + j] * (q[j] - reals[rs + 2 * nv + j]) - reals[rs + nv + j] * v[j]


@jit
def _base(reals, buf, tmp):
    """The base acceleration ``[0; -g]`` that stands in for gravity, at ``tmp + T_BASE``."""
    for k in range(3):
        buf[tmp + T_BASE + k] = 0.0
        buf[tmp + T_BASE + 3 + k] = -reals[k]


@jit
def aba_recursion(ints, reals, buf, q, v, tau, fext, arm, track):
    """Forward dynamics into the buffer's ddq; ``arm`` the armature ``(nv,)`` added to each
    joint's ``D = S^T IA S`` (``(M + diag(arm))^-1``, :func:`core.dynamics.aba`), or
    ``(0,)`` for none; ``track`` world tracking's rows ``(nb, 22)`` (:func:`_pull`), or
    ``(0, 22)`` for none."""
    nb = ints[H_NB]
    armed = arm.size > 0
    ob, od, tmp, ddq = ints[H_BODY], ints[H_DOF], ints[H_TMP], ints[H_DDQ]
    kinematics(ints, reals, buf, q, v, bool(True))
    ext = _external(ints, reals, buf, fext)
    for b in range(nb):
        bo = ob + B_SIZE * b
        oJ = R_BODIES + BODY_REALS * b + 12
        for k in range(36):
            buf[bo + B_I + k] = reals[oJ + k]
        _momentum_bias(reals, buf, b, bo, ext)
        if track.shape[0] and (track[b, 0] != 0.0 or track[b, 1] != 0.0
                               or track[b, 3] != 0.0):
            _pull(reals, buf, b, bo, ints[H_LSH] + 28 * b, track[b], tmp + T_ROT)
    for b in range(nb - 1, -1, -1):
        row = HEADER + NI * b
        qs, n, par = ints[row + I_Q], ints[row + I_N], ints[row + I_PARENT]
        bo = ob + B_SIZE * b
        oI, oP, oc = bo + B_I, bo + B_P, bo + B_C
        U, dinv = Z6, 0.0
        if n == 1:                       # in registers; IA - U U^T / D is not written back
            dq = od + D_SIZE * qs
            S = load6(buf, s_row(ints, b, int(0)))
            U = m6v(buf, oI, S)
            D = U[0] * S[0] + U[1] * S[1] + U[2] * S[2] + U[3] * S[3] + U[4] * S[4] + \
                U[5] * S[5]
            if armed:
                D += arm[qs]
            if not D != 0.0:
                return 1
            dinv = 1.0 / D
            u = tau[qs] + _passive(ints, reals, q, v, qs) - row6(buf, oP, S)
            c = load6(buf, oc)
            Ic = m6v(buf, oI, c)
            f = (u - (U[0] * c[0] + U[1] * c[1] + U[2] * c[2] + U[3] * c[3] + U[4] * c[4]
                      + U[5] * c[5])) * dinv
            for i in range(6):           # pA + (IA - U U^T / D) c + U u / D
                buf[dq + D_U + i] = U[i]
                buf[oP + i] += Ic[i] + U[i] * f
            buf[dq + D_DINV] = dinv
            buf[dq + D_USMALL] = u
        else:
            for j in range(n):                           # U = IA S, u = tau - S^T pA
                s = s_row(ints, b, j)
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
                    s = s_row(ints, b, i)
                    for j in range(n):
                        dq = od + D_SIZE * (qs + j)
                        x = 0.0
                        for k in range(6):
                            x += buf[s + k] * buf[dq + D_U + k]
                        buf[tmp + T_ROT + n * i + j] = x
                    if armed:
                        buf[tmp + T_ROT + (n + 1) * i] += arm[qs + i]
                if not invert(buf, tmp + T_ROT, n, n, od + D_SIZE * qs + D_DINV, int(D_SIZE),
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
            xtmx_add(buf, bo + B_LOCAL, oI, pb + B_I, U, dinv)
            xt_force_add(buf, bo + B_LOCAL, oP, pb + B_P)
    _base(reals, buf, tmp)
    for b in range(nb):
        row = HEADER + NI * b
        qs, n, par = ints[row + I_Q], ints[row + I_N], ints[row + I_PARENT]
        bo = ob + B_SIZE * b
        oA, oc = bo + B_A, bo + B_C
        X = x_motion_t(buf, bo + B_LOCAL, ob + B_SIZE * par + B_A if par >= 0 else
                        tmp + T_BASE)
        if n == 1:                                       # in registers
            dq = od + D_SIZE * qs
            A = (X[0] + buf[oc], X[1] + buf[oc + 1], X[2] + buf[oc + 2], X[3] + buf[oc + 3],
                 X[4] + buf[oc + 4], X[5] + buf[oc + 5])
            x = (buf[dq + D_USMALL] - row6(buf, dq + D_U, A)) * buf[dq + D_DINV]
            buf[ddq + qs] = x
            s = s_row(ints, b, int(0))
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
            s = s_row(ints, b, i)
            x = buf[ddq + qs + i]
            for k in range(6):
                buf[oA + k] += buf[s + k] * x
    return 0


@jit
def rnea_recursion(ints, reals, buf, q, v, a, fext, out):
    nb = ints[H_NB]
    ob, tmp = ints[H_BODY], ints[H_TMP]
    kinematics(ints, reals, buf, q, v, bool(True))
    ext = _external(ints, reals, buf, fext)
    _base(reals, buf, tmp)
    for b in range(nb):
        row = HEADER + NI * b
        qs, n, par = ints[row + I_Q], ints[row + I_N], ints[row + I_PARENT]
        bo = ob + B_SIZE * b
        oA, oc, oP = bo + B_A, bo + B_C, bo + B_P
        x_motion(buf, bo + B_LOCAL, ob + B_SIZE * par + B_A if par >= 0 else tmp + T_BASE,
                  oA)
        for k in range(6):
            buf[oA + k] += buf[oc + k]
        for i in range(n):
            s = s_row(ints, b, i)
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
            s = s_row(ints, b, i)
            x = 0.0
            for k in range(6):
                x += buf[s + k] * buf[oP + k]
            buf[out + qs + i] = x - _passive(ints, reals, q, v, qs + i)
        if par >= 0:
            xt_force_add(buf, bo + B_LOCAL, oP, ob + B_SIZE * par + B_P)
    return 0


@jit
def crba_recursion(ints, reals, buf, q):
    nb, nv = ints[H_NB], ints[H_NV]
    ob, od, tmp, oM = ints[H_BODY], ints[H_DOF], ints[H_TMP], ints[H_M]
    kinematics(ints, reals, buf, q, q, bool(False))
    for b in range(nb):
        bo = ob + B_SIZE * b
        oJ = R_BODIES + BODY_REALS * b + 12
        for k in range(36):
            buf[bo + B_I + k] = reals[oJ + k]
    for b in range(nb - 1, -1, -1):
        par = ints[HEADER + NI * b + I_PARENT]
        if par >= 0:
            bo = ob + B_SIZE * b
            xtmx_add(buf, bo + B_LOCAL, bo + B_I, ob + B_SIZE * par + B_I, Z6, 0.0)
    for k in range(nv * nv):
        buf[oM + k] = 0.0
    for b in range(nb):
        row = HEADER + NI * b
        qs, n = ints[row + I_Q], ints[row + I_N]
        oI = ob + B_SIZE * b + B_I
        for j in range(n):
            sj = s_row(ints, b, j)
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
                    sl = s_row(ints, a, l)
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
                xt_force_add(buf, ob + B_SIZE * a + B_LOCAL, t, F)
                a = pa
    return 0


@inline
def aba(ints, reals, buf, q, v, tau, fext, arm, check):
    """Forward dynamics into the buffer's ddq; ``fext (nb, 6)`` or ``(0, 6)``, ``arm`` the
    armature ``(nv,)`` or ``(0,)`` (:func:`aba_recursion`). With ``check``, status 2 (and
    nothing computed) if ``q, v, tau`` are not all of length nv and finite (or so large
    that their squares overflow)."""
    if check:
        nv = ints[H_NV]
        if q.size != nv or v.size != nv or tau.size != nv:
            return 2
        x = 0.0
        for j in range(q.size):
            x += q[j] * q[j] + v[j] * v[j] + tau[j] * tau[j]
        if not x < math.inf:
            return 2
    return aba_recursion(ints, reals, buf, q, v, tau, fext, arm, buf[:0].reshape((0, 22)))


@jit
def aba_free(ints, reals, buf, q, v, tau):
    """:func:`aba` without external wrenches or armature, with the finiteness test (status
    2): three arguments fewer to pass. Its "no external wrenches" and "no armature" are
    empty views of the buffer, writable arrays like the ``fext`` and ``arm`` of the other
    callers, so that :func:`aba_recursion` compiles once for all of them. Compiled on
    request only (:func:`core.compiled.dynamics.aba`): called with argument types it has no
    version for, it raises TypeError."""
    return aba(ints, reals, buf, q, v, tau, buf[:0].reshape((0, 6)), buf[:0], True)


@jit
def rnea(ints, reals, buf, q, v, a, fext, nle):
    """Inverse dynamics into the buffer's tau (or its nle when ``nle``; then ``a`` is
    zeros)."""
    return rnea_recursion(ints, reals, buf, q, v, a, fext, ints[H_NLE] if nle else ints[H_TAU])


@jit
def crba(ints, reals, buf, q):
    """The joint-space mass matrix (full, symmetric) into the buffer's M."""
    return crba_recursion(ints, reals, buf, q)


@jit
def cholesky(M):
    """``M = L L^T`` in place for a symmetric ``M (nv, nv)``: ``U = L^T`` in its upper half
    and L in its lower half (the diagonal shared); False (M partly overwritten) if M is not
    positive definite. The inner loops run along contiguous rows without a reduction (loops
    LLVM vectorizes), each element's terms added in the order of the textbook loops: ``U``
    by rows (row j, once divided by ``U_jj``, subtracted ``U_jk`` times from each row k
    below it)."""
    nv = M.shape[0]
    for j in range(nv):
        x = M[j, j]
        if not x > 0.0:
            return False
        x = math.sqrt(x)
        M[j, j] = x
        u = M[j, j + 1:]
        for i in range(nv - j - 1):
            u[i] /= x
        for k in range(nv - j - 1):
            y, t = u[k], M[j + 1 + k, j + 1 + k:]
            for i in range(nv - j - 1 - k):
                t[i] -= y * u[k + i]
    for i in range(nv):
        for j in range(i):
            M[i, j] = M[j, i]
    return True


@jit
def dense_aba(ints, reals, buf, q, v, tau, fext, M):
    """Forward dynamics into the buffer's ddq by the mass matrix (``dynamics.aba``'s "dense"
    method without an armature): ``M q_ddot = tau - h`` with M from :func:`crba_recursion`
    (left in the buffer's M) and ``h`` from :func:`rnea_recursion` (the springs' and
    dampers' torques and ``fext (nfext, 6)`` in it, left in the buffer's nle), solved with
    :func:`cholesky`'s factor, which it leaves in ``M (nv, nv)``. Status 0, or 4 if M is not
    positive definite (nothing solved)."""
    nv = ints[H_NV]
    crba_recursion(ints, reals, buf, q)
    oM, on, ddq = ints[H_M], ints[H_NLE], ints[H_DDQ]
    for i in range(nv):
        for j in range(nv):
            M[i, j] = buf[oM + nv * i + j]
    a = buf[ddq:ddq + nv]
    for j in range(nv):
        a[j] = 0.0
    rnea_recursion(ints, reals, buf, q, v, a, fext, on)
    if not cholesky(M):
        return 4
    for i in range(nv):                                  # L y = tau - h
        x = tau[i] - buf[on + i]
        for k in range(i):
            x -= M[i, k] * a[k]
        a[i] = x / M[i, i]
    for i in range(nv - 1, -1, -1):                      # L^T q_ddot = y
        x = a[i]
        for k in range(i + 1, nv):
            x -= M[i, k] * a[k]
        a[i] = x / M[i, i]
    return 0


@jit
def energies(ints, reals, buf, q, v, mass_com, kinetic):
    """``(kinetic, potential)`` energies at ``(q, v)`` (:func:`core.dynamics.kinetic_energy`,
    :func:`core.dynamics.potential_energy`), the world poses left in the buffer's LSH:
    ``sum_i 1/2 V_i^T J_i V_i`` (body frames; 0 unless ``kinetic``, and then ``v`` is not
    read), and ``-sum_i g . (R_i m_i c_i + m_i p_i)`` plus the joint springs' ``1/2 k (q -
    rest)^2`` and the point springs' ``1/2 k (l - rest)^2``; ``mass_com (nb, 4)`` holds
    ``[m_i, m_i c_i]``."""
    kinematics(ints, reals, buf, q, v, kinetic)
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
        xa = world_point(buf, oL + 28 * ia, reals, r)
        xb = (reals[r + 3], reals[r + 4], reals[r + 5]) if ib < 0 else \
            world_point(buf, oL + 28 * ib, reals, r + 3)
        d0, d1, d2 = xb[0] - xa[0], xb[1] - xa[1], xb[2] - xa[2]
        d = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2) - reals[r + 8]
        U += 0.5 * reals[r + 6] * d * d
    return K, U
