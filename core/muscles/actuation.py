"""Muscles in the dynamics: their generalized forces on a core model, with each muscle's
activation over time.

A muscle set acting on a :class:`core.model.Model` is a :class:`MuscleForces`: the muscles'
parameters (:class:`core.muscles.hill.MuscleArrays`), a *geometry* giving each path's length
and lengthening speed at ``(q, v)`` and turning path tensions into generalized forces, and an
:class:`ActivationTable`. Called as ``tau(t, q, v)`` it is the integrator's applied force
(:class:`core.integrators.Integrator`'s ``tau`` hook): the rigid-tendon tension of every
muscle (:func:`core.muscles.hill.rigid_tendon`) times its moment arms, ``tau = sum_m T_m
r_m`` with ``r_m = -dL_m/dq`` (OpenSim's sign: a path in tension pulls its points together).
The geometries: :class:`OsimPaths` (the muscles of an imported model, moment arms from
:func:`core.muscles.paths.moment_arms`).

Activation. Activation dynamics depend on the excitation and the activation only, not on the
motion, so each muscle's activation is integrated on its own, ahead of the motion, over the
run's time grid: classical RK4 on ``da/dt`` (:func:`core.muscles.hill.activation_rate`) with
the step ``h/2`` (h the integrator's substep), the excitation read piecewise linearly from its
samples; the table then holds the activation at every substep's start, middle and end, the
times where every method of :mod:`core.integrators` evaluates its forces, and is read between
them by linear interpolation. Activations given directly (OpenSim's
``ignore_activation_dynamics``) are tabulated on the same grid. An excitation or activation
outside ``[0, 1]``, a control naming no muscle, or sample times that do not increase are
refused naming the muscle before anything is simulated.

Numba. The compiled stepper takes constant forces only (:mod:`core.compiled.integrators`), so
with muscles every substep goes through the reference integrator's stages, the muscle forces
passed as ``tau`` to the compiled articulated-body algorithm (:data:`core.backend.twins`
``aba``). The forces of straight paths (:class:`PointPaths`) are one compiled call
(:data:`core.backend.twins` ``point_path_forces``: the joint Jacobians' kernel, then every
path's length and speed, tension and generalized force in one kernel); those of an imported
model's paths (:class:`OsimPaths`) are computed in numpy. The activations' RK4 is one kernel
call (``activation_steps``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import backend as _backend
from ..errors import InvalidInputError
from ..lie import so3
from ..dynamics import compute_joint_jacobians
from . import hill, paths

__all__ = ["CONTROL_KINDS", "ActivationTable", "activation_table", "MuscleForces", "OsimPaths",
           "PointPaths"]

#: what a muscle's control curve gives: its excitation (activation dynamics integrated) or its
#: activation itself
CONTROL_KINDS = ("excitation", "activation")


def _curve(name, control):
    """``(times (K,), values (K,))`` of one muscle's control: a number (constant) or a pair of
    sequences; raises InvalidInputError naming the muscle."""
    if np.ndim(control) == 0:
        values = np.array([float(control)])
        return np.zeros(1), values
    try:
        times, values = (np.asarray(x, dtype=float).ravel() for x in control)
    except (TypeError, ValueError):
        raise InvalidInputError(f"muscle {name!r}: give its control as a number or as "
                                "(times, values)") from None
    if times.size == 0 or times.shape != values.shape or not np.all(np.isfinite(times)) \
            or np.any(np.diff(times) <= 0.0):
        raise InvalidInputError(f"muscle {name!r}: its control's times must be finite and "
                                f"increasing, one per value ({times.size} times, "
                                f"{values.size} values)")
    return times, values


@dataclass(frozen=True)
class ActivationTable:
    """Every muscle's activation on a uniform time grid: ``start`` (s), ``step`` (s) and
    ``values (N, m)``; called at a time t (s) it gives ``(m,)`` by linear interpolation
    (clamped to the grid's ends)."""

    start: float
    step: float
    values: np.ndarray

    def __call__(self, t):
        x = (t - self.start) / self.step
        n = len(self.values) - 1
        k = min(max(int(x), 0), max(n - 1, 0))
        if n == 0:
            return self.values[0]
        w = min(max(x - k, 0.0), 1.0)
        return self.values[k] + w * (self.values[k + 1] - self.values[k])


def activation_table(muscles, controls, kind, duration, substep, t0=0.0, initial=None):
    """The :class:`ActivationTable` of the :class:`core.muscles.hill.MuscleArrays`
    ``muscles`` from ``t0`` over ``duration`` (s) for an integrator of substep ``substep``
    (s): grid step ``substep / 2`` (module docstring).

    controls: name -> a number or ``(times, values)`` (piecewise linear, held beyond its
    ends); a muscle not named has 0. kind: one of :data:`CONTROL_KINDS`. initial: name ->
    activation at t0 of an excitation-driven muscle (default: its excitation at t0, at rest).
    Raises InvalidInputError naming the muscle for an unknown name, a value outside
    ``[0, 1]`` or times that do not increase."""
    if kind not in CONTROL_KINDS:
        raise InvalidInputError(f"muscle controls are one of {CONTROL_KINDS}, got {kind!r}")
    controls = dict(controls or {})
    initial = dict(initial or {})
    for what, given in (("control", controls), ("initial activation", initial)):
        unknown = sorted(set(given) - set(muscles.names))
        if unknown:
            raise InvalidInputError(f"{what}s name muscles {unknown} that the model does not "
                                    f"have; its muscles are {list(muscles.names)}")
    curves = []
    for name in muscles.names:
        times, values = _curve(name, controls.get(name, 0.0))
        hill.check_activation(name, values, kind)
        curves.append((times, values))
    for name, a0 in initial.items():
        hill.check_activation(name, a0, "initial activation")
    step = 0.5 * float(substep)
    n = max(int(np.ceil(float(duration) / step - 1e-9)), 1)
    grid = t0 + step * np.arange(n + 1)
    m = len(muscles)
    if kind == "activation":
        values = np.empty((n + 1, m))
        for i, (times, vals) in enumerate(curves):
            values[:, i] = np.interp(grid, times, vals)
        return ActivationTable(float(t0), step, values)
    # RK4 at step h = 2 * grid step, its stage times on the grid; the excitation at the
    # stage midpoints is read at the grid's odd points
    u = np.empty((n + 1, m))
    for i, (times, vals) in enumerate(curves):
        u[:, i] = np.interp(grid, times, vals)
    a = np.array([initial.get(name, u[0, i]) for i, name in enumerate(muscles.names)],
                 dtype=float)
    twin = _backend.twins.activation_steps
    if twin is not None:
        return ActivationTable(float(t0), step, twin(muscles, u, a, step))
    values = np.empty((n + 1, m))
    values[0] = a
    rate = (lambda a, u: hill.activation_rate(a, u, muscles.activation_time_constant,
                                              muscles.deactivation_time_constant,
                                              muscles.activation_smoothing))
    for k in range(n):            # one RK4 step of one grid step, midpoint by interpolation
        u0, u1 = u[k], u[k + 1]
        um = 0.5 * (u0 + u1)
        k1 = rate(a, u0)
        k2 = rate(a + 0.5 * step * k1, um)
        k3 = rate(a + 0.5 * step * k2, um)
        k4 = rate(a + step * k3, u1)
        a = a + step / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        values[k + 1] = a
    return ActivationTable(float(t0), step, np.clip(values, 0.0, 1.0))


class MuscleForces:
    """``tau(t, q, v) -> (nv,)``: the generalized forces of muscles on a core model (module
    docstring). muscles: :class:`core.muscles.hill.MuscleArrays`; geometry: an object with
    ``lengths_and_speeds(q, v) -> ((m,), (m,))`` and ``generalized_forces(tension (m,)) ->
    (nv,)`` (at the ``(q, v)`` of the last ``lengths_and_speeds``); activation: an
    :class:`ActivationTable`. With :class:`PointPaths` on the numba backend a call is one
    compiled call (module docstring, *Numba*)."""

    def __init__(self, muscles, geometry, activation):
        self.muscles, self.geometry, self.activation = muscles, geometry, activation

    def state(self, t, q, v):
        """The :class:`core.muscles.hill.RigidTendonState` of every muscle at ``(t, q, v)``."""
        lengths, speeds = self.geometry.lengths_and_speeds(q, v)
        return hill.rigid_tendon(self.muscles, lengths, speeds, self.activation(t))

    def __call__(self, t, q, v):
        twin = _backend.twins.point_path_forces
        if twin is not None and isinstance(self.geometry, PointPaths):
            return twin(self.geometry, self.muscles, self.activation(t), q, v)
        return self.geometry.generalized_forces(self.state(t, q, v).tendon_force)

    def elastic_energy(self, q):
        """The passive fibres' elastic energy (J) at ``q``
        (:func:`core.muscles.hill.elastic_energy`, summed)."""
        lengths, _ = self.geometry.lengths_and_speeds(q, np.zeros_like(q))
        return float(hill.elastic_energy(self.muscles, lengths).sum())


class OsimPaths:
    """The geometry of an imported model's muscles for :class:`MuscleForces` on the core model
    of :meth:`core.io.osim.OsimModel.to_core_model`: ``model`` the OsimModel, ``names`` the
    core model's coordinate names (its q, in order), ``muscles`` the muscle names. Each call
    takes one :func:`core.muscles.paths.path_kinematics` of the pose (the locked coordinates
    at their defaults) and every path's length, lengthening speed (OpenSim's
    ``getLengtheningSpeed``) and moment arms about the free coordinates, the paths without
    wraps batched (:class:`core.muscles.paths.PathSet`)."""

    def __init__(self, model, names, muscles):
        self.model = model
        index = {n: i for i, n in enumerate(model.coordinate_names)}
        self.free = np.array([index[n] for n in names], dtype=int)
        self.paths = paths.PathSet(model, [model.muscles[name].path for name in muscles],
                                   muscles)
        self.q_full = model.default_q()
        self.arms = np.zeros((len(muscles), len(names)))

    def lengths_and_speeds(self, q, v):
        qf, vf = self.q_full.copy(), np.zeros_like(self.q_full)
        qf[self.free], vf[self.free] = q, v
        kin = paths.path_kinematics(self.model, qf)
        lengths, speeds, arms = self.paths.measures(kin, vf)
        self.arms = arms[:, self.free]
        return lengths, speeds

    def generalized_forces(self, tension):
        return self.arms.T @ tension


class PointPaths:
    """The geometry of straight-line muscle paths on a core model for :class:`MuscleForces`,
    every muscle at once: ``paths`` a sequence, one per muscle, of ``(body index, point (3,))``
    pairs in path order (a body of -1 is the world; points in body frames).

    Each call takes the world poses and the joints' world Jacobian columns ``S_w``
    (:func:`core.dynamics.compute_joint_jacobians`, one kernel call on the numba backend); a
    path's length is the sum of its segments' lengths and its lengthening speed the sum of ``e . (v_b - v_a)`` over its segments (``e``
    the unit vector from a segment's first point to its second, ``v = V_w x p`` the points'
    velocities from the bodies' world twists ``V_w = sum S_w v``). A tension T pulls each
    segment's ends together: ``T e`` on the first point, ``-T e`` on the second, as world
    wrenches ``[p x f; f]`` summed over each body's subtree and projected on the coordinates
    (``tau_k = S_w,k . W_subtree``), which is ``tau = sum_m T_m r_m`` with the geometric
    moment arms ``r = -dL/dq``."""

    def __init__(self, model, paths):
        self.model = model.compile()
        self.data = model.create_data()
        body, local, seg_a, seg_b, seg_m = [], [], [], [], []
        for m, points in enumerate(paths):
            if len(points) < 2:
                raise InvalidInputError(f"muscle path {m} has {len(points)} point(s); a path "
                                        "needs at least two")
            first = len(body)
            for b, p in points:
                body.append(int(b))
                local.append(np.asarray(p, dtype=float).reshape(3))
            for k in range(first, len(body) - 1):
                seg_a.append(k)
                seg_b.append(k + 1)
                seg_m.append(m)
        self.m = len(paths)
        self.body = np.array(body, dtype=int)
        self.local = np.array(local)
        self.seg_a, self.seg_b = np.array(seg_a, dtype=int), np.array(seg_b, dtype=int)
        self.seg_m = np.array(seg_m, dtype=int)
        nb = model.nbodies
        #: ``(nb, K)`` 1 where point k is on body i (world points on none)
        self.on_body = np.zeros((nb, len(body)))
        moving = self.body >= 0
        self.on_body[self.body[moving], np.nonzero(moving)[0]] = 1.0
        #: ``(K, S)`` +1 at a segment's first point, -1 at its second
        self.incidence = np.zeros((len(body), len(seg_a)))
        self.incidence[self.seg_a, np.arange(len(seg_a))] = 1.0
        self.incidence[self.seg_b, np.arange(len(seg_a))] = -1.0
        self._poses = np.zeros((nb + 1, 4, 4))         # the last row: the world
        self._poses[nb] = np.eye(4)
        self._twists = np.zeros((nb + 1, 6))
        self.points = self.unit = None

    def lengths_and_speeds(self, q, v):
        model, data = self.model, self.data
        S_world = compute_joint_jacobians(model, data, q)
        self._poses[:-1] = data.oMi
        T = self._poses[self.body]
        P = np.einsum("kij,kj->ki", T[:, :3, :3], self.local) + T[:, :3, 3]
        d = P[self.seg_b] - P[self.seg_a]
        length = np.sqrt(np.einsum("si,si->s", d, d))
        e = d / length[:, None]
        self.points, self.unit = P, e
        self._twists[:-1] = model.ancestry @ (model.dof_incidence @ (S_world * v[:, None]))
        V = self._twists[self.body]
        vp = V[:, 3:] + so3.cross(V[:, :3], P)
        rate = np.einsum("si,si->s", e, vp[self.seg_b] - vp[self.seg_a])
        return (np.bincount(self.seg_m, length, minlength=self.m),
                np.bincount(self.seg_m, rate, minlength=self.m))

    def generalized_forces(self, tension):
        f = self.incidence @ (tension[self.seg_m][:, None] * self.unit)      # (K, 3)
        wrench = np.concatenate([so3.cross(self.points, f), f], axis=1)
        subtree = self.model.ancestry_T @ (self.on_body @ wrench)
        return np.einsum("ki,ki->k", self.data.S_world, subtree[self.model.dof_body])


def osim_muscle_forces(model, names, substep, duration, controls=None, kind="activation",
                       muscles=None, initial=None):
    """The :class:`MuscleForces` of an imported model's muscles on its core model
    (:meth:`core.io.osim.OsimModel.to_core_model`, coordinates ``names``): ``muscles`` the
    names of the muscles that act (default: every muscle of the model), their parameters
    (:meth:`core.muscles.hill.HillParameters.from_muscle`), :class:`OsimPaths` geometry and
    the :func:`activation_table` of ``controls``/``kind``/``initial`` over ``duration`` (s) for
    an integrator substep ``substep`` (s). Raises InvalidInputError naming a muscle the model
    does not have, a bad parameter or a control outside ``[0, 1]``."""
    chosen = list(model.muscles) if muscles is None else list(muscles)
    missing = [n for n in chosen if n not in model.muscles]
    if missing:
        raise InvalidInputError(f"model {model.name!r} has no muscles {missing}; its muscles "
                                f"are {list(model.muscles)}")
    arrays = hill.MuscleArrays([hill.HillParameters.from_muscle(model.muscles[n])
                                for n in chosen])
    table = activation_table(arrays, controls, kind, duration, substep, initial=initial)
    return MuscleForces(arrays, OsimPaths(model, names, chosen), table)
