"""Time integration of a :class:`core.model.Model`: explicit Euler, semi-implicit Euler, RK4.

Every joint of this project uses coordinate rates as velocities (``q_dot = v``), so each
method integrates ``(q, v)`` as plain vectors and stays on the configuration space; after
every (sub)step each joint's :meth:`~core.joints.base.Joint.normalize` hook runs, which
moves spherical and free joints to the chart with ``|r| <= pi`` (seed 003 eqs. 66-70), so a
spinning ball joint never meets the ``|r| = 2 pi`` singularity.

* ``"euler"``: ``q += h v; v += h a(q, v)`` (seed 000's choice, stable at 20-100 ms steps
  for its examples);
* ``"semi_implicit"``: ``v += h a(q, v); q += h v`` (symplectic Euler);
* ``"rk4"``: the classical fourth-order Runge-Kutta method on ``(q, v)``.

A step of ``dt`` is split into ``substeps`` equal substeps; limits (:mod:`core.limits`) are
enforced after each substep. A non-finite state or an energy blow-up raises
:class:`core.errors.SimulationError` naming the time and the body; nothing returns garbage.
Memory is constant per step: the state lives in a few arrays and only every
``record_every``-th step is stored.
"""

import math
from dataclasses import dataclass

import numpy as np

from . import dynamics
from .errors import InvalidInputError, NonFiniteError, SimulationError
from .joints.base import Joint

__all__ = ["METHODS", "Integrator", "SimulationResult", "simulate"]

METHODS = ("euler", "semi_implicit", "rk4")


@dataclass(frozen=True)
class SimulationResult:
    """Recorded trajectory: ``t (K,)``, ``q (K, nq)``, ``v (K, nv)``, ``energy (K,)``
    (mechanical energy, see :func:`core.dynamics.mechanical_energy`), and ``steps``, the
    number of (full) steps taken."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    energy: np.ndarray
    steps: int


class Integrator:
    """Fixed-step integrator for one model (reuses one :class:`core.data.Data`).

    Args:
        model: the :class:`core.model.Model`.
        dt: step in seconds (> 0); substeps: integer >= 1, each substep is ``dt / substeps``.
        method: one of :data:`METHODS`.
        tau: None (passive), a constant ``(nv,)`` array, or a callable ``tau(t, q, v)``.
        fext: None, a constant ``(nb, 6)`` array of body-frame wrenches, or a callable
            ``fext(t, q, v)``.
        limits: an optional :class:`core.limits.LimitSolver` applied after every substep.
        energy_limit: the run stops with SimulationError when the mechanical energy exceeds
            ``E0 + energy_limit``; default ``1e6 * max(|E0|, m_total |g| * 1 m, 1 J)``.
        aba_method: passed to :func:`core.dynamics.aba`.
    """

    def __init__(self, model, dt, substeps=1, method="rk4", tau=None, fext=None, limits=None,
                 energy_limit=None, aba_method="auto"):
        if method not in METHODS:
            raise InvalidInputError(f"method must be one of {METHODS}, got {method!r}")
        dt = float(dt)
        if not np.isfinite(dt) or dt <= 0:
            raise InvalidInputError(f"dt must be a positive number of seconds, got {dt}")
        if int(substeps) != substeps or substeps < 1:
            raise InvalidInputError(f"substeps must be an integer >= 1, got {substeps}")
        self.model = model.compile()
        self.data = model.create_data()
        self.dt, self.substeps, self.method = dt, int(substeps), method
        self.h = dt / self.substeps
        self.tau, self.fext, self.limits = tau, fext, limits
        self.energy_limit = energy_limit
        self.aba_method = aba_method
        self._zero = np.zeros(model.nv)
        self._charts = [(j, slice(model.q_start[i], model.q_start[i] + model.q_count[i]))
                        for i, j in enumerate(model.joints)
                        if type(j).normalize is not Joint.normalize]
        self._E0 = None
        self._Emax = np.inf

    # -- forces --------------------------------------------------------------------
    def _tau(self, t, q, v):
        if self.tau is None:
            return self._zero
        return self.tau(t, q, v) if callable(self.tau) else self.tau

    def _fext(self, t, q, v):
        if self.fext is None:
            return None
        return self.fext(t, q, v) if callable(self.fext) else self.fext

    def acceleration(self, t, q, v):
        """``q_ddot (nv,)`` at time t (a fresh array)."""
        fext = self._fext(t, q, v)
        if fext is not None:
            fext = self.model.check_fext(fext)
        tau = self._tau(t, q, v)
        if tau is not self._zero:
            tau = np.asarray(tau, dtype=float)
            if tau.shape != (self.model.nv,):
                raise InvalidInputError(f"tau must have shape ({self.model.nv},), got "
                                        f"{tau.shape}")
        return dynamics.aba(self.model, self.data, q, v, tau, fext, check=False,
                            method=self.aba_method).copy()

    # -- stepping ------------------------------------------------------------------
    def _substep(self, t, q, v):
        h = self.h
        if self.method == "rk4":
            a1 = self.acceleration(t, q, v)
            q2, v2 = q + 0.5 * h * v, v + 0.5 * h * a1
            a2 = self.acceleration(t + 0.5 * h, q2, v2)
            q3, v3 = q + 0.5 * h * v2, v + 0.5 * h * a2
            a3 = self.acceleration(t + 0.5 * h, q3, v3)
            q4, v4 = q + h * v3, v + h * a3
            a4 = self.acceleration(t + h, q4, v4)
            qn = q + (h / 6.0) * (v + 2.0 * v2 + 2.0 * v3 + v4)
            vn = v + (h / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        elif self.method == "euler":
            a = self.acceleration(t, q, v)
            qn, vn = q + h * v, v + h * a
        else:
            vn = v + h * self.acceleration(t, q, v)
            qn = q + h * vn
        return qn, vn

    def normalize(self, q, v):
        """Apply every joint's chart change in place (seed 003 eqs. 66-70)."""
        for j, s in self._charts:
            q[s], v[s] = j.normalize(q[s], v[s])
        return q, v

    def _check(self, t, q, v, cause=None):
        """Raise SimulationError naming the time and the body if the state is not finite (or
        ``cause``, a NonFiniteError from a joint or force, says it diverged)."""
        if cause is None and math.isfinite(float(q @ q + v @ v)):  # > 1e154 counts as blow-up
            return
        size = np.where(np.isfinite(q) & np.isfinite(v), np.abs(q) + np.abs(v), np.inf)
        name = self.model.names[int(self.model.dof_body[int(np.argmax(size))])]
        detail = f" ({cause})" if cause is not None else ""
        raise SimulationError(f"the state became NaN/inf (diverged) at t = {t:.6g} s on body "
                              f"{name!r}{detail}; reduce the step (dt = {self.dt:g} s, "
                              f"{self.substeps} substeps) or check that body's joint") from cause

    def _check_energy(self, t, q, v):
        E = dynamics.mechanical_energy(self.model, self.data, q, v)
        if self._E0 is None:
            self._E0 = E
            m = self.model
            scale = max(abs(E), float(m.masses.sum()) * float(np.linalg.norm(m.gravity)), 1.0)
            self._Emax = E + (1e6 * scale if self.energy_limit is None else self.energy_limit)
        elif not E <= self._Emax:
            d = self.data
            ke = 0.5 * np.einsum("na,nab,nb->n", d.V, d.I_world, d.V)
            name = self.model.names[int(np.argmax(ke))]
            raise SimulationError(f"energy blow-up at t = {t:.6g} s: {E:.6g} J against "
                                  f"{self._E0:.6g} J at the start, most kinetic energy in "
                                  f"body {name!r}; reduce the step (dt = {self.dt:g} s) or "
                                  f"use rk4")
        return E

    def step(self, t, q, v):
        """Advance ``(q, v)`` from time t by one step dt (``substeps`` substeps).

        Returns new arrays ``(q, v)``; raises SimulationError on NaN/inf."""
        with np.errstate(over="ignore", invalid="ignore"):
            return self._step(t, q, v)

    def _step(self, t, q, v):
        for k in range(self.substeps):
            ts = t + k * self.h
            try:
                q, v = self._substep(ts, q, v)
                self._check(ts + self.h, q, v)
                self.normalize(q, v)
                if self.limits is not None:
                    q, v = self.limits.apply(self.data, q, v)
                    self.normalize(q, v)
            except NonFiniteError as err:   # a stage state or force left the finite range
                self._check(ts + self.h, q, v, cause=err)   # names the largest coordinate
        return q, v

    def run(self, q0, v0, n_steps, t0=0.0, record_every=1, check_energy=True, progress=None):
        """Integrate ``n_steps`` steps from ``(q0, v0)``; returns :class:`SimulationResult`
        with every ``record_every``-th state (and the first and the last).
        ``progress(fraction) -> bool`` may return False to stop early (the result then holds
        what was computed)."""
        m = self.model
        q = m.check_state(q0, name="q0").copy()
        v = m.check_state(v0, name="v0").copy()
        n_steps, record_every = int(n_steps), int(record_every)
        if n_steps < 0 or record_every < 1:
            raise InvalidInputError("n_steps must be >= 0 and record_every >= 1")
        K = n_steps // record_every + 1 + (1 if n_steps % record_every else 0)
        T, Q, V, E = np.empty(K), np.empty((K, m.nq)), np.empty((K, m.nv)), np.empty(K)
        self._E0 = None
        if self.limits is not None:
            self.limits.reset()
        self.normalize(q, v)
        T[0], Q[0], V[0] = t0, q, v
        E[0] = self._check_energy(t0, q, v) if check_energy else np.nan
        k = 0
        step = 0
        with np.errstate(over="ignore", invalid="ignore"):
            for step in range(1, n_steps + 1):
                t = t0 + (step - 1) * self.dt
                q, v = self._step(t, q, v)
                if step % record_every == 0 or step == n_steps:
                    k += 1
                    T[k], Q[k], V[k] = t + self.dt, q, v
                    E[k] = self._check_energy(t + self.dt, q, v) if check_energy else np.nan
                    if progress is not None and progress(step / n_steps) is False:
                        break
        return SimulationResult(T[:k + 1], Q[:k + 1], V[:k + 1], E[:k + 1], step)


def simulate(model, q0, v0, dt, n_steps, method="rk4", substeps=1, tau=None, fext=None,
             limits=None, record_every=1, check_energy=True, progress=None):
    """Integrate a model with fixed steps; see :class:`Integrator` for the arguments.

    ``q0, v0: (nq,)``; returns :class:`SimulationResult`."""
    integ = Integrator(model, dt, substeps, method, tau, fext, limits)
    return integ.run(q0, v0, n_steps, record_every=record_every, check_energy=check_energy,
                     progress=progress)
