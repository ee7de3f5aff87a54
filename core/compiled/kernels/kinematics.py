"""numba twin of the tree kinematics (:mod:`core.kinematics`): every joint evaluated into the
kernels' buffer, the world poses and, with the velocities, each body's velocity and bias
acceleration, in body frames (seed 000 eq. 14), one body at a time in the model's order
(parents first):

* each body's local transform ``P G(q)`` and ``S``, ``dS/dq`` or ``S`` rows from its joint's
  kind (:mod:`core.compiled.kernels.joints`), or as written by the Python families: the one branch
  on the kinds, which a compiled joint kind adds to (in :func:`kinematics` itself: as a
  function of its own, inlined, the five arrays it takes would be reference-counted at
  every body, a quarter more time for aba on a 32-body chain);
* ``V_i = X_i V_p + S q_dot``, with ``X_i = Ad_{(P G)^-1}`` (world poses ``T_i = T_p P G``
  are composed alongside into ``LSH``), and the bias acceleration
  ``c_i = ad_{V_i} S q_dot + q_dot^T (dS/dq) q_dot`` (eq. 14).

Mirrors (reference -> twin; parity test):

* ``kinematics.update_kinematics`` with the families' ``calc`` -> :func:`kinematics`
  (``with_v`` False; alone in ``dynamics.compute_joint_jacobians``, also compared there); ``kinematics.update_velocities`` with ``velocity_product`` ->
  :func:`kinematics` (``with_v``): the world poses and every algorithm's result in
  ``tests/core/test_backend_numba.py::test_backends_agree``;
* ``data.S_body`` / ``data.SH`` columns -> :func:`s_row`.
"""

from ...joints.lower_pairs import KIND_FIXED, KIND_SCREW
from ...joints.spherical import KIND_FREE, KIND_SPHERE
from ...joints.spline_curve import KIND_CLOSED_SPLINE, KIND_SPLINE
from .joints import free, free_bias, large_joint, screw, sphere, sphere_bias, spline, wrap
from ..layout import (B_LOCAL, B_C, B_SIZE, B_V, BODY_REALS, HEADER, H_BODY, H_CB, H_LSH, H_SM,
                     H_TMP, H_NB, I_DEG, I_KIND, I_N, I_NS, I_PAR, I_PARENT, I_Q, NI, R_BODIES,
                     T_VEC)
from .options import jit
from .spatial import Z6, load6, x_motion_t

__all__ = ["s_row", "kinematics"]


@jit
def s_row(ints, b, j):
    """Offset in the buffer of body ``b``'s ``j``-th joint column S_j (body frame)."""
    row = HEADER + NI * b
    if ints[row + I_N] == 1:
        return ints[H_LSH] + 28 * b + 16
    return ints[H_SM] + 6 * (ints[row + I_Q] + j)


@jit
def kinematics(ints, reals, buf, q, v, with_v):
    """Joints (by kind, module docstring), local transforms (scratch), world poses
    (``LSH``) and, ``with_v``, body velocities V and bias accelerations c."""
    nb = ints[H_NB]
    oL, sm, cb, ob, tmp = ints[H_LSH], ints[H_SM], ints[H_CB], ints[H_BODY], ints[H_TMP]
    for b in range(nb):
        row = HEADER + NI * b
        kind, qs, n, par = ints[row + I_KIND], ints[row + I_Q], ints[row + I_N], \
            ints[row + I_PARENT]
        o = oL + 28 * b
        pb = R_BODIES + BODY_REALS * b                  # the joint kinds (module docstring)
        if kind == KIND_SCREW:
            screw(reals, ints[row + I_PAR], buf, o, q[qs])
        elif kind == KIND_SPLINE:
            spline(reals, ints[row + I_PAR], ints[row + I_NS], ints[row + I_DEG], buf, o, q[qs])
        elif kind == KIND_SPHERE:
            sphere(reals, pb, buf, o, sm, q, qs)
            if with_v:
                sphere_bias(buf, cb + 6 * b, q, v, qs)
        elif kind == KIND_FREE:
            free(reals, pb, buf, o, sm, q, qs)
            if with_v:
                free_bias(buf, cb + 6 * b, sm, q, v, qs)
        elif kind == KIND_CLOSED_SPLINE:
            po = ints[row + I_PAR]
            spline(reals, po + 1, ints[row + I_NS], ints[row + I_DEG], buf, o,
                   wrap(q[qs], reals[po + 1], reals[po + 2], reals[po]))
        elif kind == KIND_FIXED:
            for k in range(12):
                buf[o + k] = reals[pb + k]
        else:
            large_joint(ints, kind, reals, ints[row + I_PAR], pb, buf, o, sm, cb + 6 * b, q, v,
                        qs, n, with_v)
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
        V = x_motion_t(buf, bl, ob + B_SIZE * par + B_V) if par >= 0 else Z6
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
            a0, a1, a2, b0, b1, b2 = load6(buf, u)
            c = load6(buf, cb + 6 * b) if n else Z6
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
