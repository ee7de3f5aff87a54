"""numba twin of the straight muscle paths' forces of :mod:`core.muscles.actuation`, every
muscle of a :class:`~core.muscles.actuation.PointPaths` at once in one call.

Mirrors (reference -> twin; parity test
``tests/core/test_muscles_numba.py::test_point_path_forces_agree``):

* ``PointPaths.lengths_and_speeds`` (the points from the world poses, the segments' lengths
  and unit vectors, the lengthening speeds from the bodies' world twists) and
  ``PointPaths.generalized_forces`` (the segments' pulls as world wrenches, summed over each
  body's subtree and projected on the joints' world Jacobian columns) -> the geometry of
  :func:`point_path_forces`;
* the RK4 loop of :func:`core.muscles.actuation.activation_table` (with
  :func:`core.muscles.hill.activation_rate`) -> :func:`activation_steps` (with
  :func:`activation_rate`): ``tests/core/test_muscles_numba.py::test_activation_table_agrees``;
* :func:`core.muscles.hill.rigid_tendon` (its ``tendon_force``, with
  :func:`~core.muscles.hill.active_force_length`, :func:`~core.muscles.hill.force_velocity`
  and :func:`~core.muscles.hill.passive_force_length`) -> :func:`tendon_force`.
"""

import math

import numpy as np

from ...muscles.hill import ACTIVE_FL, FORCE_VELOCITY, KPE, MIN_NORM_FIBER_LENGTH
from .options import jit

__all__ = ["PARAMETERS", "activation_rate", "activation_steps", "tendon_force",
           "point_path_forces"]

#: the columns of :func:`point_path_forces`' ``params (m, 8)``, one row per muscle
PARAMETERS = ("tendon_slack_length", "width", "optimal_fiber_length", "speed_scale",
              "active_force_width_scale", "passive_fiber_strain", "max_isometric_force",
              "fiber_damping")

_B = ACTIVE_FL.copy()
_D1, _D2, _D3, _D4 = FORCE_VELOCITY


@jit
def activation_rate(a, u, tau_a, tau_d, smoothing):
    """``da/dt`` of one muscle (:func:`core.muscles.hill.activation_rate`)."""
    f = 0.5 * math.tanh(smoothing * (u - a))
    z = 0.5 + 1.5 * a
    return ((f + 0.5) / (tau_a * z) + (0.5 - f) * z / tau_d) * (u - a)


@jit
def activation_steps(u, a, step, tau_a, tau_d, smoothing, values):
    """Classical RK4 of every muscle's activation over the grid of excitations ``u (n + 1,
    m)`` (step ``step``, the stages' midpoint excitation the mean of a step's ends) from
    ``a (m,)``: ``values (n + 1, m)`` written in place, clipped to ``[0, 1]``."""
    n, m = u.shape[0] - 1, u.shape[1]
    for i in range(m):
        ta, td, b = tau_a[i], tau_d[i], smoothing[i]
        x = a[i]
        values[0, i] = min(max(x, 0.0), 1.0)
        for k in range(n):
            u0, u1 = u[k, i], u[k + 1, i]
            um = 0.5 * (u0 + u1)
            k1 = activation_rate(x, u0, ta, td, b)
            k2 = activation_rate(x + 0.5 * step * k1, um, ta, td, b)
            k3 = activation_rate(x + 0.5 * step * k2, um, ta, td, b)
            k4 = activation_rate(x + step * k3, u1, ta, td, b)
            x = x + step / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            values[k + 1, i] = min(max(x, 0.0), 1.0)


@jit
def tendon_force(row, length, speed, activation):
    """The rigid-tendon tension (N) of one muscle (``row`` its :data:`PARAMETERS`) at path
    length ``length``, lengthening speed ``speed`` and ``activation``."""
    along = length - row[0]
    if not along > 0.0:                                  # a slack tendon
        return 0.0
    width = row[1]
    fiber = math.sqrt(along * along + width * width)
    lf = fiber / row[2]
    cos_a = along / fiber
    vn = speed * cos_a / row[3]
    x = (lf - 1.0) / row[4] + 1.0
    fl = 0.0
    for i in range(3):
        b1, b2, b3, b4 = _B[i, 0], _B[i, 1], _B[i, 2], _B[i, 3]
        w = b3 + b4 * x
        fl += b1 * math.exp(-0.5 * (x - b2) ** 2 / (w * w))
    fv = _D1 * math.asinh(_D2 * vn + _D3) + _D4
    e0 = row[5]
    o = math.exp(KPE * (MIN_NORM_FIBER_LENGTH - 1.0) / e0)
    fpe = (math.exp(KPE * (lf - 1.0) / e0) - o) / (math.exp(KPE) - o)
    fmax = row[6]
    total = fmax * (activation * fl * fv) + fmax * fpe + fmax * row[7] * vn
    return total * cos_a


@jit
def point_path_forces(oMi, S_world, dof_body, ancestry, body, local, seg_a, seg_b, seg_m,
                      params, activation, v, lengths, speeds, tension, tau):
    """The generalized forces ``tau (nv,)`` of m muscles on straight paths, with their
    ``lengths``, lengthening ``speeds`` and ``tension`` (each ``(m,)``), all written in
    place: ``oMi (nb, 4, 4)`` and ``S_world (nv, 6)`` the world poses and Jacobian columns
    at q, ``dof_body (nv,)`` and ``ancestry (nb, nb)`` the model's, ``body (K,)``/``local
    (K, 3)`` the path points (body -1 the world), ``seg_a``/``seg_b``/``seg_m (S,)`` each
    segment's points and muscle, ``params (m, 8)`` the muscles' :data:`PARAMETERS`,
    ``activation (m,)`` and ``v (nv,)``."""
    nb, nv, K, S, m = oMi.shape[0], v.shape[0], body.shape[0], seg_a.shape[0], params.shape[0]
    own = np.zeros((nb, 6))                      # each body's joint twist sum_j S_w,j v_j
    for j in range(nv):
        for c in range(6):
            own[dof_body[j], c] += S_world[j, c] * v[j]
    twist = np.zeros((nb, 6))                    # world twists: over ancestors and self
    for i in range(nb):
        for k in range(nb):
            if ancestry[i, k] != 0.0:
                for c in range(6):
                    twist[i, c] += own[k, c]
    P = np.empty((K, 3))
    vp = np.zeros((K, 3))
    for k in range(K):
        b = body[k]
        if b < 0:
            for r in range(3):
                P[k, r] = local[k, r]
            continue
        for r in range(3):
            P[k, r] = oMi[b, r, 0] * local[k, 0] + oMi[b, r, 1] * local[k, 1] \
                + oMi[b, r, 2] * local[k, 2] + oMi[b, r, 3]
        w = twist[b]
        vp[k, 0] = w[3] + (w[1] * P[k, 2] - w[2] * P[k, 1])
        vp[k, 1] = w[4] + (w[2] * P[k, 0] - w[0] * P[k, 2])
        vp[k, 2] = w[5] + (w[0] * P[k, 1] - w[1] * P[k, 0])
    unit = np.empty((S, 3))
    lengths[:] = 0.0
    speeds[:] = 0.0
    for s in range(S):
        a, b = seg_a[s], seg_b[s]
        d0, d1, d2 = P[b, 0] - P[a, 0], P[b, 1] - P[a, 1], P[b, 2] - P[a, 2]
        L = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        e0, e1, e2 = d0 / L, d1 / L, d2 / L
        unit[s, 0], unit[s, 1], unit[s, 2] = e0, e1, e2
        lengths[seg_m[s]] += L
        speeds[seg_m[s]] += e0 * (vp[b, 0] - vp[a, 0]) + e1 * (vp[b, 1] - vp[a, 1]) \
            + e2 * (vp[b, 2] - vp[a, 2])
    for i in range(m):
        tension[i] = tendon_force(params[i], lengths[i], speeds[i], activation[i])
    wrench = np.zeros((nb, 6))                   # [p x f; f] of the pulls, per body
    for s in range(S):
        T = tension[seg_m[s]]
        for end in range(2):
            k = seg_a[s] if end == 0 else seg_b[s]
            b = body[k]
            if b < 0:
                continue
            sign = T if end == 0 else -T
            f0, f1, f2 = sign * unit[s, 0], sign * unit[s, 1], sign * unit[s, 2]
            wrench[b, 0] += P[k, 1] * f2 - P[k, 2] * f1
            wrench[b, 1] += P[k, 2] * f0 - P[k, 0] * f2
            wrench[b, 2] += P[k, 0] * f1 - P[k, 1] * f0
            wrench[b, 3] += f0
            wrench[b, 4] += f1
            wrench[b, 5] += f2
    for j in range(nv):                          # tau_j = S_w,j . (subtree's wrench)
        b = dof_body[j]
        acc = 0.0
        for k in range(nb):
            if ancestry[k, b] != 0.0:
                for c in range(6):
                    acc += S_world[j, c] * wrench[k, c]
        tau[j] = acc
