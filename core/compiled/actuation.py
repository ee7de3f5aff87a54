"""The compiled twin of :class:`core.muscles.actuation.MuscleForces` on straight paths
(:class:`~core.muscles.actuation.PointPaths`), reached through :data:`core.backend.twins`
``point_path_forces``: the world poses and Jacobian columns at q
(:func:`core.compiled.dynamics.compute_joint_jacobians`), then every muscle's path, tension
and generalized force in one kernel call (:func:`core.compiled.kernels.point_path_forces`);
and the activation dynamics' RK4 of :func:`core.muscles.actuation.activation_table`
(``activation_steps``: one kernel call, :func:`core.compiled.kernels.activation_steps`);
compared with the reference in ``tests/core/test_muscles_numba.py``."""

import numpy as np

from . import kernels
from ..errors import InvalidInputError
from .dynamics import compute_joint_jacobians
from .kernels.actuation import PARAMETERS

__all__ = ["point_path_forces", "activation_steps"]


def _rows(muscles):
    """The ``(m, 8)`` parameter rows of :class:`core.muscles.hill.MuscleArrays` ``muscles``
    (:data:`~core.compiled.kernels.actuation.PARAMETERS`), built on first use."""
    rows = muscles.packed
    if rows is None:
        rows = muscles.packed = np.ascontiguousarray(np.stack(
            [getattr(muscles, name) for name in PARAMETERS], axis=1))
    return rows


def point_path_forces(paths, muscles, activation, q, v):
    """``tau (nv,)`` of the :class:`~core.muscles.hill.MuscleArrays` ``muscles`` on the
    :class:`~core.muscles.actuation.PointPaths` ``paths`` at ``(q, v)`` with activations
    ``activation (m,)``: ``tendon_force`` of :func:`core.muscles.hill.rigid_tendon` times
    the moment arms, summed."""
    model, data = paths.model, paths.data
    q = model.check_state(q)
    v = np.ascontiguousarray(v, dtype=float)
    if v.shape != (model.nv,):
        raise InvalidInputError(f"v must have shape ({model.nv},), got {v.shape}; the model "
                                f"has {model.nv} velocity coordinates")
    S_world = compute_joint_jacobians(model, data, q)
    m = len(muscles)
    out = np.empty(3 * m + model.nv)
    kernels.point_path_forces(data.oMi, S_world, model.dof_body, model.ancestry, paths.body,
                              paths.local, paths.seg_a, paths.seg_b, paths.seg_m,
                              _rows(muscles), np.ascontiguousarray(activation, dtype=float), v,
                              out[:m], out[m:2 * m], out[2 * m:3 * m], out[3 * m:])
    return out[3 * m:]


def activation_steps(muscles, u, a, step):
    """``(n + 1, m)`` the activations of :func:`core.muscles.actuation.activation_table` from
    ``a (m,)`` under the excitations ``u (n + 1, m)`` on its grid of step ``step`` (s),
    clipped to ``[0, 1]``."""
    values = np.empty(u.shape)
    kernels.activation_steps(np.ascontiguousarray(u, dtype=float),
                             np.ascontiguousarray(a, dtype=float), float(step),
                             muscles.activation_time_constant, muscles.deactivation_time_constant,
                             muscles.activation_smoothing, values)
    return values
