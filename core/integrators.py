"""Time stepping: the one stepping loop of the project (:func:`integrate`) and the fixed-step
integrator of a :class:`core.model.Model` (explicit Euler, semi-implicit Euler, RK4, and
semi-implicit Euler with implicit joint springs and dampers).

The loop. A *stepper* is any object with two methods:

* ``advance(t, state) -> state``: the state one step ``dt`` after the state at time ``t``;
* ``record(t, state) -> dict``: what to keep of the state at time ``t``, name -> array (or
  float), with the same shapes at every record;
* optionally ``advance_steps(t, state, count) -> state``: the state ``count`` steps after
  the one at ``t``, the same as ``count`` calls of ``advance`` (one compiled call, say);
  :func:`integrate` takes the steps between two records with it.

:func:`integrate` takes ``n_steps`` steps of ``dt``, records the initial state, every
``record_every``-th step and the last one into preallocated arrays (memory is constant per
step), calls ``progress(fraction) -> bool`` after every record (False cancels: the
:class:`Recording` then has status "cancelled" and no records) and measures the wall time.
A run of output frames with substeps is ``record_every = substeps``. :class:`Integrator` is
the stepper of reduced-coordinate models (:meth:`Integrator.run` and :func:`simulate` return
a :class:`Trajectory`); :mod:`core.mechanisms` builds its bakes on it and on a stepper of
seed-001 skeletons.

The model integrator. Every joint of this project uses coordinate rates as velocities
(``q_dot = v``), so each method integrates ``(q, v)`` as plain vectors and stays on the
configuration space; after every (sub)step each joint's :meth:`~core.joints.base.Joint.normalize`
hook runs, which moves spherical and free joints to the chart with ``|r| <= pi`` (seed 003
eqs. 66-70), so a spinning ball joint never meets the ``|r| = 2 pi`` singularity.

* ``"euler"``: ``q += h v; v += h a(q, v)`` (seed 000's choice, stable at 20-100 ms steps
  for its examples);
* ``"semi_implicit"``: ``v += h a(q, v); q += h v`` (symplectic Euler);
* ``"rk4"``: the classical fourth-order Runge-Kutta method on ``(q, v)``;
* ``"implicit"``: symplectic Euler with the joint springs and dampers
  (:meth:`core.model.Model.add_joint_spring`, ``tau_s = -K (q - rest) - C v`` with K, C
  diagonal) taken by backward Euler, linearized (MuJoCo's implicit damping, here with the
  stiffness too):

      (M + h C + h^2 K) a = tau - nle(q0, v0) - h K v0,   v1 = v0 + h a,   q1 = q0 + h v1

  with ``nle(q0, v0)`` the nonlinear effects, springs included at ``(q0, v0)``. This is
  ``v1 = v0 + h M^-1 [f(q0, v0) - K (q1 - rest) - C v1]`` with ``q1 = q0 + h v1``, every
  other force f explicit (``-K (q0 + h v1 - rest) - C v1 = tau_s(q0, v0) - h K v0 - (h C +
  h^2 K) a``). The diagonal ``h C + h^2 K`` is a joint-space armature: the articulated-body
  recursion adds it to each joint's ``D = S^T IA S`` (:func:`core.dynamics.aba`), so a step
  costs one O(n) forward dynamics, as "semi_implicit". Point springs
  (:meth:`~core.model.Model.add_point_spring`), gravity, fext and tau stay explicit; with a
  drive the springs of the prescribed coordinates are in the drive's force as they are
  (their motion is given). Without joint springs and dampers it is "semi_implicit".

  Accuracy: first order. On a linear oscillator ``I x'' + c x' + k x = 0`` (``w^2 = k/I``,
  ``zeta = c / (2 I w)``) the step is exactly backward Euler, so the amplification matrix
  of ``(x, v)`` has the eigenvalues ``lambda = 1 / (1 - h mu)`` of the continuous ones
  ``mu = -zeta w +- i w sqrt(1 - zeta^2)``:

      |lambda|^2 = 1 / (1 + h c/I + h^2 k/I),   arg lambda = atan(w_d h / (1 + zeta w h))

  (``w_d = w sqrt(1 - zeta^2)``; for ``zeta >= 1`` both are real, in (0, 1]: an overdamped
  joint never overshoots). Per unit time ``ln(lambda) / h = mu + h mu^2 / 2 + ...``, so the
  decay rate and the frequency each differ from the continuous ones by at most ``w (w h /
  2) / (1 - w h)`` for ``w h < 1``: the numerical damping ratio of an undamped joint is
  ``ln(1 + (w h)^2) / (2 w_num h) ~ w h / 2``; its period is long by ``(w h)^2 / 3``, a
  damped joint's by about ``zeta w h``. ``|lambda| <= 1`` for every ``K, C >= 0`` and h:
  the linear part is unconditionally stable, and a stiff or strongly damped joint on a light
  bone relaxes to its rest (or follows its parent) within a few substeps instead of
  diverging. On the same oscillator "semi_implicit" needs ``h c / I < 2`` and ``h^2 k / I
  < 4``, "rk4" ``h c / I < 2.785`` and ``h^2 k / I < 8``, and "euler" amplifies every
  undamped oscillation. What stays explicit still bounds the step: the velocity products
  (centrifugal, Coriolis, gyroscopic terms) of light bones spinning fast, e.g. an undamped
  chain of 3 cm bones whipping its tip, diverge as under "semi_implicit"; and a stiff
  spring released far from its rest relaxes within a substep, at a rate of about its
  deflection per substep, which those terms then see.

A step of ``dt`` is split into ``substeps`` equal substeps; limits (:mod:`core.limits`) are
enforced after each substep. A :class:`core.contacts.ContactSolver` instead solves contacts
and limits together within each substep: the method's step gives ``(q1, v1)`` from ``(q0,
v0)``, the solver finds the contacts at ``q0`` and the impulses ``dv`` on ``v1``, and the
substep ends at ``(q1 + c h dv + dq, v1 + dv)`` with dq its position correction and c the
share of a velocity change within the substep that the method's position update takes
(:data:`IMPULSE_POSITION`): for "semi_implicit" and "implicit" this is the usual
velocity-level contact step, ``q1 = q0 + h (v1 + dv)`` (the impulses are solved with M, the
joint springs and dampers taking the changed velocity from the next substep on); for
"rk4" the impulse acts as a constant force over the
substep (RK4's position weights ``b_i`` on its stage times ``c_i`` give ``sum b_i c_i =
1/2``). Under either a resting contact neither sinks nor creeps (gravity's ``h a`` is taken
back with the position change the method gave it). "euler" moves positions with the
substep's start velocities only, so impulses cannot keep a contact from sinking, and it is
refused with contacts. With contacts, a step in which no shape can come within the contact
margin of another (:meth:`core.contacts.ContactSolver.clear`, checked again at the step's
end) is one kernel call on the numba backend, as without contacts; the other steps go
substep by substep. Divergence is always a :class:`core.errors.SimulationError`
naming the time, the body and a smaller step: a non-finite state, an energy blow-up, and any
numerical failure inside a step or a record that only a diverged or ill-conditioned state
causes (:func:`diverged`: a :class:`core.errors.NonFiniteError` of a joint, an overflow, a
mass matrix that is no longer positive definite, a math domain error); nothing returns
garbage.

Compiled steps. An :class:`Integrator` made on the numba backend asks
:data:`core.backend.twins` once for its compiled stepper
(:class:`core.compiled.integrators.IntegratorSteps`, :attr:`Integrator.compiled`): a model
whose joints all have kernels, with constant (or no) tau and fext, takes each step in one
kernel call
(:func:`core.compiled.kernels.advance`: the substeps, the divergence test, the spherical and
free joints' chart changes, and the limits when the limit solver is ``compiled``), and
:meth:`Integrator.advance_steps` takes a run of steps (:func:`integrate`'s steps between two
records: a bake's frame) in one call of it. With a drive, each stage solves for the free
accelerations (every stage's mass matrix, nonlinear effects, the solve and the drive's
power, as :func:`core.compiled.kernels.driven_step`), the drive's rates and accelerations at
every substep's start, middle and end evaluated in Python for the whole run
(:meth:`Drive.evaluate_many`) and passed in. A step with contacts, constant forces and
neither a drive nor a tracking takes its substeps, each with its contact step, in one
kernel call (:func:`core.compiled.contact_step.contact_substeps`; with the "dense" aba
method and the euler or semi-implicit method the kernels' twin of that method); others
take one kernel call per substep (:func:`~core.compiled.kernels.step` or
:func:`~core.compiled.kernels.driven_step`) and the contact step in a few more
(:meth:`core.compiled.contact_solver.ContactSteps.apply`). A step the kernel reports as
failed is taken again on the Python path, which raises the error above.

Rate limit. An integrator given ``rate_limit`` (``(nv,)``, inf where none) clips each
coordinate's rate to it after every substep's method step, before contacts and limits act
(the compiled steps likewise, :func:`core.compiled.kernels.advance`). A rig bounds its
rotation coordinates to :data:`core.rig.TURN_PER_SUBSTEP` radians per substep: a chain that
ends in ever lighter bones whips its tip faster and faster (as a whip cracks), and its
explicit velocity-product terms would then outrun any fixed step; the clip caps that motion
where the step can no longer follow it, taking energy out, and the rig's report names the
bodies it held back.

Tracking (:class:`Tracking`). An "implicit" integrator given ``tracking`` pulls coordinates
toward a moving target ``q*(t)`` with rates ``v*(t)`` by springs and dampers whose gains
``K*(t), C*(t)`` (diagonal, ``(nv,)``) may change in time too, ``tau_t = -K* (q - q*) - C*
(v - v*)``, taken by the same linearized backward Euler as the joint springs at the
substep's end ``t1 = t + h``:

    (M + h (C + C*) + h^2 (K + K*)) a = tau - nle(q0, v0) - h K v0
                                         + b - K* q0 - (C* + h K*) v0,   b = K* q* + C* v*

with ``K*, C*, b`` at ``t1``: a joint spring whose rest moves, with the stability of the
section above for any gains (the amplification of the error ``q - q*`` is the linear
oscillator's ``lambda``, so a target followed at ``w* h >> 1`` is reached within a few
substeps, never overshot for ``zeta* >= 1``). Following a target that moves with constant
rate, the error decays to 0 (``v*`` feeds the damper); under a constant load f it settles at
``f / K*``. Gains on driven coordinates are ignored (the drive sets them). The compiled steps
take the gains and ``b`` of every substep as a table (:meth:`Tracking.evaluate_many`, one call
per kernel call).

World tracking (:attr:`Tracking.world`) pulls whole bodies toward moving target poses in the
world instead: body i toward ``T*_i(t)`` moving with the body twist ``V*_i(t)``, by a spring
and damper on each of its particles with gains per unit mass ``k_i(t), c_i(t)`` (1/s^2,
1/s): the wrench ``-k J e - c J (V - V*)`` to first order in the pose error ``e``, J the
body's spatial inertia, so every rigid mode of a free body follows at the natural frequency
``sqrt(k)`` (:mod:`core.dynamics`, *World tracking*, has the exact spring). It is taken by
the same linearized backward Euler at ``t1 = t + h``: with ``V1 = V0 + h A``,

    f(t1) ~ f0 - (h c + h^2 k) J A,   f0 = f_spring(T0, T*(t1)) - J ((c + h k) V0 - c W*)

(``W*`` the target's twist at the body): each body's inertia becomes ``(1 + h c + h^2 k) J``
for its acceleration, an added mass that the articulated-body recursion takes as it is, so a
step stays one O(n) recursion (:func:`core.dynamics.aba`'s ``track``). The error of a body
tracked alone is the oscillator of the section above (``lambda = 1 / (1 - h mu)``, stable
for every gain); a chain's bodies pull on each other through their joints, which the
recursion solves exactly at the linearization. A body whose joint is driven is not pulled
(the drive sets it). The compiled steps take a table of every substep's rows
(:meth:`Integrator.world_rows`); a model with a drive and world tracking steps in Python.

Size. :func:`integrate` preallocates its records; :func:`check_record_size` refuses a run
whose records would exceed :data:`MAX_RECORD_BYTES` before any work, with the figure.

Prescribed coordinates (rheonomic drives, :class:`Drive`). Some models move part of the tree
kinematically, e.g. a spinning wire frame (a revolute coordinate ``q_p = w t``) or the time
axis of a deforming spline surface joint (a coordinate ``q_p = t``). With the free
coordinates ``f`` and the prescribed ones ``p`` the equations of motion ``M a + h = tau``
split into

    M_ff a_f = tau_f - h_f - M_fp a_p            (solved for a_f; seed 000 eq. 7 summed by crba)
    f_p      = M_pf a_f + M_pp a_p + h_p - tau_p (the drive's generalized force, on top
                                                  of the applied tau_p)

with ``M`` and ``h`` (gravity, velocity products, springs, external wrenches) from
:func:`core.dynamics.crba_and_nle`. The drive's power is ``f_p . v_p``; its work over a
substep is the power at the method's dynamics evaluations summed with the method's own
quadrature weights (:data:`DRIVE_WEIGHTS`), so the mechanical energy changes by the recorded
drive work up to the method's error. After every substep's method step, before the contacts
and limits act, and again at its end, the driven coordinates are set to the drive's motion
exactly; the limit solver locks them (:meth:`core.limits.LimitSolver.lock`: its impulses
and projections move the free coordinates only, the driven ones infinitely heavy).
"""

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from . import backend as _backend
from . import dynamics
from .checks import real_number, whole_number
from .errors import InvalidInputError, NonFiniteError, SimulationError, SplineJointsError
from .joints.base import Joint

__all__ = ["METHODS", "ORDERS", "DRIVE_WEIGHTS", "MAX_RECORD_BYTES", "Drive", "Tracking", "Recording",
           "integrate", "Trajectory", "Integrator", "simulate", "check_record_size",
           "diverged"]

METHODS = ("euler", "semi_implicit", "rk4", "implicit")
#: order of accuracy of each method (global error O(h^order))
ORDERS = {"euler": 1, "semi_implicit": 1, "rk4": 4, "implicit": 1}
#: the largest recording :func:`integrate` (and a mechanism's bake) preallocates: 2 GiB
MAX_RECORD_BYTES = 2 ** 31
#: the share of a velocity change within a substep that each method's position update takes
#: (the contact step's ``c``, module docstring)
IMPULSE_POSITION = {"semi_implicit": 1.0, "rk4": 0.5, "implicit": 1.0}
#: quadrature weights of each method's dynamics evaluations within one substep
DRIVE_WEIGHTS = {"euler": (1.0,), "semi_implicit": (1.0,), "rk4": (1 / 6, 2 / 6, 2 / 6, 1 / 6),
                 "implicit": (1.0,)}


@dataclass(frozen=True)
class Recording:
    """What :func:`integrate` recorded (K records).

    status: "completed" or "cancelled" (then K = 0); t: ``(K,)`` times of the records (s);
    values: name -> ``(K, ...)`` array of what the stepper's ``record`` returned; steps:
    steps taken (int); wall_time: seconds spent in the loop.
    """

    status: str
    t: np.ndarray
    values: dict
    steps: int
    wall_time: float


def check_record_size(n_records, floats_per_record, what="the run"):
    """Raise InvalidInputError, before any work, if ``n_records`` records of
    ``floats_per_record`` float64 values exceed :data:`MAX_RECORD_BYTES`; the message gives
    the figure and what to do."""
    size = 8.0 * float(n_records) * float(floats_per_record)
    if size > MAX_RECORD_BYTES:
        raise InvalidInputError(
            f"{what} would record {n_records:.4g} frames of at least {floats_per_record:.4g} "
            f"numbers ({size / 2 ** 30:.3g} GiB), more than the "
            f"{MAX_RECORD_BYTES / 2 ** 30:g} GiB limit; shorten the duration or record fewer "
            "frames per second")


def diverged(err):
    """True if ``err``, raised inside a step or a record, says that the state diverged or
    became too ill-conditioned to go on: a :class:`core.errors.NonFiniteError` (a joint or a
    force saw NaN/inf or absurd coordinates), an ArithmeticError (overflow, division by
    zero, floating-point error) or a ValueError that is not one of the core's own input
    errors (numpy/scipy ``LinAlgError``: a singular or not positive definite mass matrix;
    ``math domain error``)."""
    if isinstance(err, SplineJointsError):
        return isinstance(err, NonFiniteError)
    return isinstance(err, (ArithmeticError, ValueError))


def _reason(cause):
    """What a divergence's ``cause`` (None: a non-finite state) says, in words: the core's
    own message, or what a numerical failure means, without the library's text."""
    if cause is None:
        return "the state became NaN or infinite"
    if isinstance(cause, SplineJointsError):
        return str(cause)
    if isinstance(cause, np.linalg.LinAlgError):
        return "the mass matrix stopped being positive definite"
    if isinstance(cause, ArithmeticError):
        return "a number overflowed"
    return "a function was evaluated outside its domain"


def integrate(stepper, state, dt, n_steps, t0=0.0, record_every=1, progress=None):
    """Step ``stepper`` (see the module docstring) ``n_steps`` times by ``dt`` from ``state``
    at time ``t0`` and return a :class:`Recording` of the initial state, of every
    ``record_every``-th step and of the last step.

    progress: None or ``fraction -> bool`` called after every record but the first with the
    fraction of steps done; returning False cancels (status "cancelled", no records).
    Floating-point warnings are silenced in the loop: the steppers check their states.
    Raises InvalidInputError before any step for a non-finite ``dt`` or ``t0``, counts that
    are not integers, or records larger than :data:`MAX_RECORD_BYTES` (checked against the
    first record's size).
    """
    dt, t0 = real_number(dt, "dt"), real_number(t0, "t0")
    n_steps = whole_number(n_steps, "n_steps", 0)
    record_every = whole_number(record_every, "record_every")
    if progress is not None and not callable(progress):
        raise InvalidInputError("progress must be a callable fraction -> bool, or None")
    n_records = n_steps // record_every + 1 + (1 if n_steps % record_every else 0)
    times = None
    values = {}
    start = time.perf_counter()

    def keep(k, t, state):
        nonlocal times
        out = stepper.record(t, state)
        if times is None:
            check_record_size(n_records, sum(np.size(x) for x in out.values()) + 1)
            times = np.empty(n_records)
            values.update((name, np.empty((n_records,) + np.shape(x)))
                          for name, x in out.items())
        for name, x in out.items():
            values[name][k] = x
        times[k] = t

    many = getattr(stepper, "advance_steps", None)
    step = 0
    with np.errstate(over="ignore", invalid="ignore"):
        keep(0, t0, state)
        k = 0
        while step < n_steps:
            count = min(record_every, n_steps - step)        # the steps to the next record
            if many is not None and count > 1:
                state = many(t0 + step * dt, state, count)
                step += count
            else:
                for step in range(step + 1, step + count + 1):
                    state = stepper.advance(t0 + (step - 1) * dt, state)
            k += 1
            keep(k, t0 + (step - 1) * dt + dt, state)
            if progress is not None and progress(step / n_steps) is False:
                return Recording("cancelled", times[:0],
                                 {name: x[:0] for name, x in values.items()}, step,
                                 time.perf_counter() - start)
    return Recording("completed", times, values, step, time.perf_counter() - start)


@dataclass(frozen=True)
class Drive:
    """Prescribed (kinematically driven) coordinates.

    dofs: indices of the driven coordinates ``(k,)``; motion: ``t -> (q (k,), v (k,),
    a (k,))`` their position, rate and acceleration at time t (seconds); description: text;
    vectorized: True if ``motion`` also takes an array of times ``(K,)`` and returns
    ``(K, k)`` arrays (:meth:`evaluate_many` then calls it once).
    """

    dofs: tuple
    motion: object
    description: str = ""
    vectorized: bool = False

    def evaluate(self, t):
        q, v, a = (np.asarray(x, dtype=float).reshape(len(self.dofs))
                   for x in self.motion(float(t)))
        return q, v, a

    def evaluate_many(self, times):
        """``(q, v, a)``, each ``(K, k)``, at the times ``(K,)``."""
        times = np.asarray(times, dtype=float).ravel()
        shape = (times.size, len(self.dofs))
        if self.vectorized:
            return tuple(np.asarray(x, dtype=float).reshape(shape) for x in self.motion(times))
        rows = [self.evaluate(t) for t in times.tolist()]
        return tuple(np.array([r[i] for r in rows]).reshape(shape) for i in range(3))


@dataclass(frozen=True)
class Tracking:
    """Coordinates pulled toward a moving target (module docstring, *Tracking*), and bodies
    toward moving world poses (*World tracking*).

    motion: None or ``t -> (K* (nv,), C* (nv,), q* (nv,), v* (nv,))`` the gains (N m/rad or
    N/m, N m s/rad or N s/m; 0 where a coordinate is not tracked), target coordinates and
    rates at time t (s); vectorized: True if ``motion`` also takes times ``(K,)`` and returns
    ``(K, nv)`` arrays; description: text. world: None or ``times (K,) -> (k (K, nb), c (K,
    nb), T* (K, nb, 4, 4), V* (K, nb, 6))`` each body's gains per unit mass (1/s^2, 1/s; 0:
    not tracked), target world pose and target body twist ``[w; v]``, always vectorized.
    """

    motion: object
    description: str = ""
    vectorized: bool = False
    world: object = None

    def world_rows(self, times, nb, h):
        """``(K, nb,`` :data:`core.dynamics.TRACK_COLUMNS` ``)`` the world tracking's rows at
        the times ``(K,)`` for substeps of h (:mod:`core.dynamics`, *World tracking*).
        Raises InvalidInputError for a gain that is negative or not finite."""
        times = np.asarray(times, dtype=float).ravel()
        k, c, T, V = self.world(times)
        k, c = (np.asarray(x, dtype=float).reshape(times.size, nb) for x in (k, c))
        if not (np.all(np.isfinite(k)) and np.all(np.isfinite(c)) and np.all(k >= 0.0)
                and np.all(c >= 0.0)):
            raise InvalidInputError(f"{self.description or 'tracking'}: the gains must be "
                                    "finite and not negative")
        T = np.asarray(T, dtype=float).reshape(times.size, nb, 4, 4)
        rows = np.empty((times.size, nb, dynamics.TRACK_COLUMNS))
        rows[:, :, 0] = h * c + h * h * k
        rows[:, :, 1] = k
        rows[:, :, 2] = c + h * k
        rows[:, :, 3] = c
        rows[:, :, 4:13] = T[:, :, :3, :3].reshape(times.size, nb, 9)
        rows[:, :, 13:16] = T[:, :, :3, 3]
        rows[:, :, 16:] = np.asarray(V, dtype=float).reshape(times.size, nb, 6)
        return rows

    def evaluate_many(self, times, nv):
        """``(K, 3, nv)``: the rows ``K*, C*, b = K* q* + C* v*`` at the times ``(K,)``.
        Raises SimulationError for a gain that is negative or not finite."""
        times = np.asarray(times, dtype=float).ravel()
        if self.vectorized:
            k, c, q, v = (np.asarray(x, dtype=float).reshape(times.size, nv)
                          for x in self.motion(times))
        else:
            rows = [[np.asarray(x, dtype=float).reshape(nv) for x in self.motion(t)]
                    for t in times.tolist()]
            k, c, q, v = (np.array([r[i] for r in rows]).reshape(times.size, nv)
                          for i in range(4))
        if not (np.all(k >= 0.0) and np.all(c >= 0.0) and np.all(np.isfinite(k))
                and np.all(np.isfinite(c))):
            raise InvalidInputError(f"{self.description or 'tracking'}: the gains must be "
                                    "finite and not negative")
        with np.errstate(invalid="ignore"):
            b = np.where(k > 0.0, k * q, 0.0) + np.where(c > 0.0, c * v, 0.0)
        return np.ascontiguousarray(np.stack([k, c, b], axis=1))


@dataclass(frozen=True)
class Trajectory:
    """Recorded states of a model (K records): status ("completed" or "cancelled", then
    K = 0), ``t (K,)``, ``q (K, nq)``, ``v (K, nv)``, ``energy (K,)`` (mechanical energy, see
    :func:`core.dynamics.mechanical_energy`; NaN when not checked), ``drive_work (K,)`` work
    done by the drive since the start (J; zeros without a drive), ``steps`` (full steps
    taken) and ``wall_time`` (s)."""

    status: str
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    energy: np.ndarray
    drive_work: np.ndarray
    steps: int
    wall_time: float


class Integrator:
    """Fixed-step integrator for one model (reuses one :class:`core.data.Data`); a stepper of
    :func:`integrate` whose state is ``(q (nq,), v (nv,), drive work (J))``.

    Args:
        model: the :class:`core.model.Model`.
        dt: step in seconds (> 0); substeps: integer >= 1, each substep is ``dt / substeps``.
        method: one of :data:`METHODS`.
        tau: None (passive), a constant ``(nv,)`` array, or a callable ``tau(t, q, v)``.
        fext: None, a constant ``(nb, 6)`` array of body-frame wrenches, or a callable
            ``fext(t, q, v)``.
        limits: an optional :class:`core.limits.LimitSolver` applied after every substep.
        contacts: an optional :class:`core.contacts.ContactSolver` applied in every substep
            (module docstring) instead of ``limits``; it solves its own limit solver's
            impulses with the contacts' (pass that LimitSolver to it, and here as ``limits``
            or not at all).
        energy_limit: a run stops with SimulationError when the mechanical energy less the
            drive's work exceeds ``E0 + energy_limit``; default
            ``1e6 * max(|E0|, m_total |g| * 1 m, 1 J)``.
        aba_method: passed to :func:`core.dynamics.aba` (with a drive the accelerations come
            from :func:`core.dynamics.crba_and_nle` instead).
        drive: None or a :class:`Drive` prescribing some coordinates (module docstring).
        rate_limit: None or ``(nv,)`` the largest rate of each coordinate (inf: none),
            clipped after every substep's method step (module docstring, *Rate limit*).
        tracking: None or a :class:`Tracking` (method "implicit" only; module docstring,
            *Tracking*).
    """

    def __init__(self, model, dt, substeps=1, method="rk4", tau=None, fext=None, limits=None,
                 energy_limit=None, aba_method="auto", drive=None, contacts=None,
                 rate_limit=None, tracking=None):
        if method not in METHODS:
            raise InvalidInputError(f"method must be one of {METHODS}, got {method!r}")
        dt = real_number(dt, "dt", 0.0, low_open=True, advice="give the step in seconds")
        substeps = whole_number(substeps, "substeps")
        self.model = model.compile()
        self.data = model.create_data()
        self.dt, self.substeps, self.method = dt, substeps, method
        self.h = dt / self.substeps
        #: the implicit method's armature ``h C + h^2 K`` and rate gain ``h K`` (module
        #: docstring; zero on driven coordinates), None for the other methods and for models
        #: without joint springs and dampers (where "implicit" is "semi_implicit")
        self._armature = self._rate_gain = None
        if contacts is not None and limits is not None and contacts.limits is not limits:
            raise InvalidInputError("limits and contacts are solved together: pass the "
                                    "LimitSolver to the ContactSolver (limits=...) and give "
                                    "the integrator the ContactSolver only")
        if contacts is not None and method not in IMPULSE_POSITION:
            raise InvalidInputError(f"contacts step with {' or '.join(IMPULSE_POSITION)}, not "
                                    f"{method!r}: its positions move with the substep's start "
                                    "velocities only, so no impulse keeps a contact from sinking")
        if contacts is not None and limits is None:
            limits = contacts.limits
        self.tau, self.fext, self.limits = tau, fext, limits
        self.contacts = contacts
        #: ``(nv,)`` the largest rate of each coordinate (inf: none), or None (module
        #: docstring, *Rate limit*)
        self.rate_limit = None
        if rate_limit is not None:
            limit = np.asarray(rate_limit, dtype=float)
            if limit.shape != (model.nv,) or np.any(np.isnan(limit)) or np.any(limit <= 0.0):
                raise InvalidInputError(f"rate_limit must be ({model.nv},) rates above 0 (inf: "
                                        f"no limit), got shape {limit.shape}")
            self.rate_limit = limit
        if tracking is not None and method != "implicit":
            raise InvalidInputError(f"tracking springs step with the implicit method, not "
                                    f"{method!r}: a stiff explicit spring would diverge")
        #: the :class:`Tracking` of this integrator, or None
        self.tracking = tracking
        self.energy_limit = energy_limit
        self.aba_method = aba_method
        self.record_energy = True
        self._zero = np.zeros(model.nv)
        #: ``(joint, coordinate slice)`` of the joints that change chart (their
        #: :meth:`~core.joints.base.Joint.normalize` hook)
        self.charts = [(j, slice(model.q_start[i], model.q_start[i] + model.q_count[i]))
                       for i, j in enumerate(model.joints)
                       if type(j).normalize is not Joint.normalize]
        self._E0 = None
        self._Emax = np.inf
        self.drive = drive
        if drive is not None:
            nv = model.nv
            p = np.asarray(drive.dofs, dtype=int)
            if p.size == 0 or len(set(p.tolist())) != p.size or p.min() < 0 or p.max() >= nv:
                raise InvalidInputError(f"drive dofs {p.tolist()} must be distinct indices in "
                                        f"[0, {nv})")
            f = np.setdiff1d(np.arange(nv), p)
            #: the free and the driven coordinates (with a drive)
            self.free_dofs, self.driven_dofs = f, p
            self._ff, self._fp = np.ix_(f, f), np.ix_(f, p)
            self._powers = []
            if limits is not None:
                limits.lock(p)
        if method == "implicit" and model.has_joint_springs:
            h, k = self.h, model.spring_k.copy()
            c = model.spring_c.copy()
            if drive is not None:
                k[self.driven_dofs] = c[self.driven_dofs] = 0.0
            self._armature, self._rate_gain = h * c + h * h * k, h * k
        twin = _backend.twins.integrator
        #: the compiled stepper of this integrator
        #: (:class:`core.compiled.integrators.IntegratorSteps`) when it was made on the numba
        #: backend and its substeps compile, else None
        self.compiled = None if twin is None else twin(
            self, METHODS.index(method), DRIVE_WEIGHTS[method],
            aba_method in dynamics.COMPILED_METHODS)

    # -- forces --------------------------------------------------------------------
    def _tau(self, t, q, v):
        if self.tau is None:
            return self._zero
        return self.tau(t, q, v) if callable(self.tau) else self.tau

    def _fext(self, t, q, v):
        if self.fext is None:
            return None
        return self.fext(t, q, v) if callable(self.fext) else self.fext

    def acceleration(self, t, q, v, implicit=False):
        """``q_ddot (nv,)`` at time t (a fresh array); with a drive, the prescribed entries
        are the drive's accelerations and the drive's power is kept for the step's work.
        ``implicit``: the implicit method's accelerations ``(M + h C + h^2 K)^-1 (tau - nle -
        h K v)`` (h the substep; on the free coordinates; module docstring)."""
        fext = self._fext(t, q, v)
        if fext is not None:
            fext = self.model.check_fext(fext)
        tau = self._tau(t, q, v)
        if tau is not self._zero:
            tau = np.asarray(tau, dtype=float)
            if tau.shape != (self.model.nv,):
                raise InvalidInputError(f"tau must have shape ({self.model.nv},), got "
                                        f"{tau.shape}")
        armature = self._armature if implicit else None
        if armature is not None:
            tau = tau - self._rate_gain * v
        track = None
        if implicit and self.tracking is not None:
            armature, tau = self._tracked(t, q, v, armature, tau)
            track = self.world_rows([t + self.h])
            track = None if track is None else track[0]
        if self.drive is not None:
            return self._driven_acceleration(t, q, v, tau, fext, armature, track)
        return dynamics.aba(self.model, self.data, q, v, tau, fext, check=False,
                            method=self.aba_method, armature=armature, track=track).copy()

    def tracking_rows(self, times):
        """``(K, 3, nv)`` the tracking's ``K*, C*, b`` at the times ``(K,)`` (the substeps'
        ends), zero on driven coordinates (:meth:`Tracking.evaluate_many`); None without
        joint-space tracking."""
        if self.tracking.motion is None:
            return None
        rows = self.tracking.evaluate_many(times, self.model.nv)
        if self.drive is not None:
            rows[:, :, self.driven_dofs] = 0.0
        return rows

    def world_rows(self, times):
        """``(K, nb, 22)`` the world tracking's rows at the times ``(K,)`` (the substeps'
        ends; :meth:`Tracking.world_rows`), zero on bodies whose joint is driven; None
        without world tracking."""
        if self.tracking.world is None:
            return None
        rows = self.tracking.world_rows(times, self.model.nbodies, self.h)
        if self.drive is not None:
            rows[:, np.unique(self.model.dof_body[self.driven_dofs]), :4] = 0.0
        return rows

    def _tracked(self, t, q, v, armature, tau):
        """The implicit step's armature and torques with the tracking springs of the substep
        from t: ``+ h C* + h^2 K*`` and ``+ b - K* q - (C* + h K*) v`` at ``t + h`` (module
        docstring, *Tracking*)."""
        h = self.h
        rows = self.tracking_rows([t + h])
        if rows is None:
            return armature, tau
        k, c, b = rows[0]
        extra = h * c + h * h * k
        armature = extra if armature is None else armature + extra
        return armature, tau + b - k * q - (c + h * k) * v

    def _driven_acceleration(self, t, q, v, tau, fext, armature, track=None):
        """Free accelerations from ``(M_ff + A_f) a_f = tau_f - h_f - M_fp a_p`` (``A``
        the diagonal ``armature``, or 0 when None; M and h with world tracking's ``track``),
        prescribed ones from the drive (module docstring); appends the drive's power ``f_p .
        v_p``."""
        _, vp, ap = self.drive.evaluate(t)
        M, h = dynamics.crba_and_nle(self.model, self.data, q, v, fext, track)
        if tau is not self._zero:
            h = h - tau
        f, p = self.free_dofs, self.driven_dofs
        a = np.empty(self.model.nv)
        a[p] = ap
        if f.size:
            rhs = -h[f] - M[self._fp] @ ap
            Mff = M[self._ff]
            if armature is not None:
                Mff[np.diag_indices(f.size)] += armature[f]
            a[f] = cho_solve(cho_factor(Mff, check_finite=False), rhs, check_finite=False)
        self._powers.append(float((M[p] @ a + h[p]) @ vp))
        return a

    # -- stepping ------------------------------------------------------------------
    def _substep(self, t, q, v):
        if self.compiled is not None:
            out = self.compiled.substep(t, q, v, self._powers if self.drive is not None else None)
            if out is not None:
                return out
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
        else:                                              # semi_implicit, implicit
            vn = v + h * self.acceleration(t, q, v, self.method == "implicit")
            qn = q + h * vn
        return qn, vn

    def normalize(self, q, v):
        """Apply every joint's chart change in place (seed 003 eqs. 66-70); in one kernel
        call where the compiled stepper takes the steps
        (:meth:`core.compiled.integrators.IntegratorSteps.normalize`)."""
        if self.compiled is not None and self.compiled.normalize(q, v):
            return q, v
        for j, s in self.charts:
            q[s], v[s] = j.normalize(q[s], v[s])
        return q, v

    def _impose(self, t, q, v):
        """Overwrite the driven coordinates with the drive's motion at t (in place)."""
        if self.drive is not None:
            qp, vp, _ = self.drive.evaluate(t)
            q[self.driven_dofs] = qp
            v[self.driven_dofs] = vp

    def _check(self, t, q, v, cause=None):
        """Raise SimulationError naming the time, the body with the largest coordinate or
        rate and a smaller step if the state is not finite, or if ``cause`` (an error for
        which :func:`diverged` holds, raised by a joint, a force, a solve or a limit) says
        the state diverged."""
        if cause is None and math.isfinite(float(q @ q + v @ v)):  # > 1e154 counts as blow-up
            return
        with np.errstate(over="ignore", invalid="ignore"):
            size = np.where(np.isfinite(q) & np.isfinite(v), np.abs(q) + np.abs(v), np.inf)
        name = self.model.names[int(self.model.dof_body[int(np.argmax(size))])]
        reason = _reason(cause)
        raise SimulationError(f"the simulation diverged ({reason}) at t = {t:.6g} s on body "
                              f"{name!r}; reduce the step: dt = {self.h:g} s per substep is "
                              f"too large for this motion, try {self.h / 4:g} s or less (more "
                              "substeps or a higher frame rate), or check that body's joint "
                              "and forces", t, name, reason) from cause

    def _check_energy(self, t, q, v, work):
        """Mechanical energy at ``(q, v)``; raises SimulationError if it less ``work`` (the
        drive's) exceeds the run's limit, naming the body with the most kinetic energy."""
        E = dynamics.mechanical_energy(self.model, self.data, q, v)
        if self._E0 is None:
            self._E0 = E
            m = self.model
            scale = max(abs(E), float(m.masses.sum()) * float(np.linalg.norm(m.gravity)), 1.0)
            self._Emax = E + (1e6 * scale if self.energy_limit is None else self.energy_limit)
        elif not E - work <= self._Emax:
            d = self.data
            ke = 0.5 * np.einsum("na,nab,nb->n", d.V, d.I_world, d.V)
            name = self.model.names[int(np.argmax(ke))]
            raise SimulationError(f"energy blow-up at t = {t:.6g} s: {E:.6g} J against "
                                  f"{self._E0:.6g} J at the start, most kinetic energy in "
                                  f"body {name!r}; reduce the step: dt = {self.h:g} s per "
                                  f"substep is too large, try {self.h / 4:g} s or less, or "
                                  "use rk4", t, name, "its energy blew up")
        return E

    def step(self, t, q, v):
        """Advance ``(q, v)`` from time t by one step dt (``substeps`` substeps).

        Returns new arrays ``(q, v)`` (a drive's work over the step is in :meth:`advance`);
        raises SimulationError on NaN/inf."""
        with np.errstate(over="ignore", invalid="ignore"):
            q, v, _ = self._step(t, q, v)
        return q, v

    def _step(self, t, q, v):
        """One step of dt; returns ``(q, v, drive work over the step)``. With a compiled
        stepper, where it takes steps (:meth:`core.compiled.integrators.IntegratorSteps.
        steps`), one kernel call; a step it reports as failed is taken again here, substep
        by substep, which raises the SimulationError that names the cause. With contacts,
        the substeps that one kernel call takes (:meth:`core.compiled.integrators.
        IntegratorSteps.contact_substeps`), then the others here."""
        first = 0
        if self.compiled is not None:
            out = self.compiled.steps(t, q, v, 1)
            if out is not None:
                return out[0], out[1], float(out[2][0])
            if self.contacts is not None:
                q, v, first = self.compiled.contact_substeps(t, q, v,
                                                             IMPULSE_POSITION[self.method])
        work = 0.0
        for k in range(first, self.substeps):
            ts = t + k * self.h
            if self.drive is not None:
                self._powers.clear()
            try:
                qn, vn = self._substep(ts, q, v)
                self._check(ts + self.h, qn, vn)
                if self.rate_limit is not None:
                    vn = np.clip(vn, -self.rate_limit, self.rate_limit)
                self._impose(ts + self.h, qn, vn)
                if self.contacts is not None:      # impulses at the substep's start pose
                    qn, vn = self.contacts.apply(self.data, q, v, qn, vn, ts, self.h,
                                                      IMPULSE_POSITION[self.method])
                    self._check(ts + self.h, qn, vn)
                q, v = self.normalize(qn, vn)
                if self.contacts is None and self.limits is not None:
                    q, v = self.limits.apply(self.data, q, v)
                    self._check(ts + self.h, q, v)
                    self.normalize(q, v)
            except (ArithmeticError, ValueError) as err:   # a stage state, force or solve
                if not diverged(err):                      # failed on a diverged state
                    raise
                self._check(ts + self.h, q, v, cause=err)  # names the largest coordinate
            if self.drive is not None:
                w = DRIVE_WEIGHTS[self.method]
                if len(self._powers) != len(w):
                    raise SimulationError(f"the integrator evaluated the dynamics "
                                          f"{len(self._powers)} times in one {self.method} "
                                          f"substep, expected {len(w)}")
                work += self.h * float(np.dot(w, self._powers))
                self._impose(ts + self.h, q, v)
        return q, v, work

    # -- the stepper of integrate() ------------------------------------------------
    def start(self, q0, v0, t0=0.0):
        """The state ``(q, v, 0.0)`` that starts a run at ``t0`` from ``q0: (nq,)``,
        ``v0: (nv,)``: validated copies with the charts normalized and the driven
        coordinates on the drive's motion; resets the limit and contact solvers and the energy
        check."""
        m = self.model
        q = m.check_state(q0, name="q0").copy()
        v = m.check_state(v0, name="v0").copy()
        self._E0 = None
        if self.limits is not None:
            self.limits.reset()
        if self.contacts is not None:
            self.contacts.reset()
        self.normalize(q, v)
        self._impose(t0, q, v)
        return q, v, 0.0

    def advance(self, t, state):
        """:func:`integrate`'s step: ``(q, v, work)`` at t -> at ``t + dt``; a step without
        limits, drive or contacts is one kernel call of the compiled stepper from here
        (:meth:`core.compiled.integrators.IntegratorSteps.advance`), the others go through
        :meth:`_step`."""
        q, v, work = state
        if self.compiled is not None:
            out = self.compiled.advance(q, v)
            if out is not None:
                return out[0], out[1], work
        q, v, dw = self._step(t, q, v)
        return q, v, work + dw

    def advance_steps(self, t, state, count):
        """:func:`integrate`'s run of ``count`` steps from time ``t``: with a compiled
        stepper, kernel calls of many steps each where it takes steps (with a contact
        solver: while the calls' steps are clear of contacts;
        :meth:`core.compiled.integrators.IntegratorSteps.advance_steps`), else (and from a
        call the kernel or the contact check declines on) calls of :meth:`advance`."""
        if self.compiled is not None:
            state, done = self.compiled.advance_steps(t, state, count)
            count -= done
            t += done * self.dt
        for k in range(count):
            state = self.advance(t + k * self.dt, state)
        return state

    def record(self, t, state):
        """:func:`integrate`'s record: ``q``, ``v``, ``energy`` (checked against blow-up, or
        NaN when :attr:`record_energy` is False) and ``drive_work``."""
        q, v, work = state
        try:
            E = self._check_energy(t, q, v, work) if self.record_energy else np.nan
        except (ArithmeticError, ValueError) as err:
            if not diverged(err):
                raise
            self._check(t, q, v, cause=err)
        return {"q": q, "v": v, "energy": E, "drive_work": work}

    def run(self, q0, v0, n_steps, t0=0.0, record_every=1, check_energy=True, progress=None):
        """Integrate ``n_steps`` steps from ``(q0, v0)`` with :func:`integrate`; returns a
        :class:`Trajectory` with every ``record_every``-th state (and the first and the
        last). ``progress(fraction) -> bool`` may return False to cancel (the trajectory
        then has status "cancelled" and no records)."""
        self.record_energy = bool(check_energy)
        rec = integrate(self, self.start(q0, v0, t0), self.dt, n_steps, t0, record_every,
                        progress)
        r = rec.values
        return Trajectory(rec.status, rec.t, r["q"], r["v"], r["energy"], r["drive_work"],
                          rec.steps, rec.wall_time)


def simulate(model, q0, v0, dt, n_steps, method="rk4", substeps=1, tau=None, fext=None,
             limits=None, record_every=1, check_energy=True, progress=None, contacts=None):
    """Integrate a model with fixed steps; see :class:`Integrator` for the arguments.

    ``q0, v0: (nq,)``; returns :class:`Trajectory`."""
    integ = Integrator(model, dt, substeps, method, tau, fext, limits, contacts=contacts)
    return integ.run(q0, v0, n_steps, record_every=record_every, check_energy=check_energy,
                     progress=progress)
