"""The compiled twin of :class:`core.integrators.Integrator`'s stepping: the stepper that
:func:`stepper` makes for an integrator on the numba backend takes its substeps
(:meth:`IntegratorSteps.substep`, one kernel call each: :func:`core.compiled.kernels.step`
or :func:`~core.compiled.kernels.driven_step`), its steps and runs of steps
(:meth:`~IntegratorSteps.steps`, :meth:`~IntegratorSteps.advance_steps`: one call of
:func:`core.compiled.kernels.advance` with the substeps, the divergence test, the chart
changes, the limits and the drive's motion) and its chart changes. Compared with the
reference in ``tests/core/test_backend_numba.py`` and ``tests/core/test_compiled_realtime.py``.
"""

import numpy as np

from . import dynamics, kernels
from .layout import S_NSUB
from .pack import step_arrays
from ..joints.spherical import Free, Spherical

__all__ = ["stepper", "IntegratorSteps", "KERNEL_SUBSTEPS"]

#: the most substeps :meth:`IntegratorSteps.advance_steps` hands to one kernel call (the
#: drive's motion and the stage powers of a call are tables of this many rows)
KERNEL_SUBSTEPS = 1024


def stepper(integ, method_code, weights, compiled_aba):
    """The :class:`IntegratorSteps` of the :class:`core.integrators.Integrator` ``integ``
    (``method_code`` its method's code for the kernels, ``weights`` the method's drive
    quadrature weights, ``compiled_aba`` whether its aba method runs compiled), or None
    when none of its substeps compiles: that needs every joint in a family with a kernel
    and a constant (or no) tau and fext, and no drive with world tracking."""
    steps = IntegratorSteps(integ, method_code, weights, compiled_aba)
    return None if (steps.step_args is None and steps.drive_args is None and
                    steps.contact_args is None) else steps


class IntegratorSteps:
    """An integrator's compiled substeps, steps and chart changes (module docstring).

    ``step_args``: ``(tau, fext, method code, work rows)`` of one kernel call per substep
    without a drive (:func:`core.compiled.dynamics.substep`), or None (a drive, an aba
    method the kernels do not run, forces the kernels do not take); ``drive_args``: ``(tau,
    fext, method code, work rows, dofs (nv,) free then prescribed, free count, drive (3, 2,
    k), powers (4,), Cholesky scratch (nf, nf + 1))`` of one per substep with a drive
    (:func:`core.compiled.dynamics.driven_substep`), or None (also with world tracking:
    :class:`core.integrators.Integrator` steps that in Python); ``advance_args``: the arrays
    ``(sd, li, lr)`` of one call of :func:`core.compiled.kernels.advance` per step or run of
    steps (:func:`core.compiled.pack.step_arrays` and the limit solver's ``kernel_arrays``,
    or None without limits), then the drive's ``(dofs, nf, chol)`` (None, 0, None without
    one) and ``(drive, qend, powers)``, None (a driven call's tables are made per call); or
    None: that needs a substep kernel, the spherical and free joints as the only joints that
    change chart, and no limits or a limit solver that is ``compiled`` (with a contact
    solver: its limit solver; such a call takes only steps that
    :meth:`core.contacts.ContactSolver.clear` finds free of contacts); ``unconstrained``:
    the ``sd`` of :func:`core.compiled.kernels.advance_unconstrained` when a step is one
    kernel call with neither limits nor a drive (nor contacts), else None;
    ``contact_args``: ``(sd, dense)`` of one call of
    :func:`core.compiled.contact_step.contact_substeps` per step with a contact solver
    (:meth:`contact_substeps`), or None: that needs the solver's
    :attr:`~core.compiled.contact_solver.ContactSteps.fuses`, constant forces, neither a
    drive nor a tracking, the spherical and free joints as the only joints that change
    chart, and the compiled recursion (``dense`` False) or the "dense" aba method with the
    euler or semi-implicit method (``dense`` True: the kernels' twin of that method)."""

    def __init__(self, integ, method_code, weights, compiled_aba):
        self.integ, self.weights = integ, weights
        m = integ.model
        forces = self._forces()
        nv = m.nv
        rows = (np.zeros((5, nv)), np.zeros((5, nv)))
        self.step_args = None if (forces is None or integ.drive is not None
                                  or not compiled_aba) else forces + (method_code, rows)
        self.drive_args = None
        world = integ.tracking is not None and integ.tracking.world is not None
        if forces is not None and integ.drive is not None and not world:
            free, driven = integ.free_dofs, integ.driven_dofs
            nf = free.size
            self.drive_args = forces + (method_code, rows,
                                        np.concatenate([free, driven]).astype(np.int64), nf,
                                        np.zeros((3, 2, driven.size)), np.zeros(4),
                                        np.zeros((nf, nf + 1)))
        self.advance_args = self._advance_arguments()
        self.contact_args = self._contact_arguments(forces, method_code, compiled_aba)
        self.unconstrained = None if (self.advance_args is None or integ.drive is not None
                                      or self.advance_args[1] is not None
                                      or integ.contacts is not None
                                      or integ.tracking is not None) else self.advance_args[0]

    def _forces(self):
        """``(tau, fext)`` as a kernel takes them, or None (module docstring)."""
        integ = self.integ
        m = integ.model
        if callable(integ.tau) or callable(integ.fext) or any(f.kernel_kind is None
                                                              for f in m.families):
            return None
        try:
            fext = m.check_fext(integ.fext)
            tau = np.zeros(m.nv) if integ.tau is None else m.check_state(integ.tau, "tau")
        except ValueError:          # the reference raises it at the first step
            return None
        return tau, fext

    def _advance_arguments(self):
        integ = self.integ
        kernel = self.step_args or self.drive_args
        if kernel is None or (
                integ.limits is not None and not getattr(integ.limits, "compiled", False)):
            return None
        if any(not isinstance(j, (Spherical, Free)) for j, _ in integ.charts):
            return None
        m = integ.model
        tau, fext, code = kernel[:3]
        sd = step_arrays(m.nv, m.nbodies, code, integ.substeps, integ.h, tau, fext,
                         bool(integ.charts), integ.rate_limit)
        li, lr = (None, None) if integ.limits is None else integ.limits.kernel_arrays
        # without a drive the kernel compiles without the drive's code
        driven = (None, 0, None) if self.drive_args is None else \
            self.drive_args[4:6] + self.drive_args[8:]
        return (sd, li, lr) + driven + (None, None, None)

    def _contact_arguments(self, forces, method_code, compiled_aba):
        integ = self.integ
        contacts = integ.contacts
        dense = integ.aba_method == "dense" and method_code in (0, 1)
        if (forces is None or contacts is None or contacts.compiled is None or
                not contacts.compiled.fuses or integ.drive is not None or
                integ.tracking is not None or not (compiled_aba or dense) or
                any(not isinstance(j, (Spherical, Free)) for j, _ in integ.charts)):
            return None
        m = integ.model
        tau, fext = forces
        return step_arrays(m.nv, m.nbodies, method_code, integ.substeps, integ.h, tau, fext,
                           bool(integ.charts), integ.rate_limit), dense

    def contact_substeps(self, t, q, v, weight):
        """The substeps of a step from time t with the contact solver (``weight`` the c of
        :meth:`core.contacts.ContactSolver.apply`), in one kernel call where
        ``contact_args`` allows it and the solver's last problem was not too large for its
        kernels (:meth:`core.compiled.contact_solver.ContactSteps.substeps`): ``(q, v,
        substeps taken)``; the others (all of them elsewhere) are the caller's."""
        integ = self.integ
        if self.contact_args is None or integ.contacts.compiled.large:
            return q, v, 0
        sd, dense = self.contact_args
        return integ.contacts.compiled.substeps(integ.data, t, q, v, sd, dense, weight)

    def substep(self, t, q, v, powers):
        """One substep from ``(q, v)`` at time t in one kernel call: ``(qn, vn)``, with a
        drive its stages' powers appended to ``powers`` (a list); None when the driven
        kernel reports a failure (the reference substep then names the cause); with a
        tracking, its rows at the substep's end."""
        integ = self.integ
        if self.step_args is None and self.drive_args is None:
            return None
        track = world = None
        if integ.tracking is not None:
            track, world = (None if x is None else x[0] for x in (
                integ.tracking_rows([t + integ.h]), integ.world_rows([t + integ.h])))
        if self.step_args is not None:
            tau, fext, code, rows = self.step_args
            return dynamics.substep(integ.model, integ.data, q, v, tau, fext, integ.h, code,
                                    rows, track, world)
        tau, fext, code, rows, dofs, nf, drive, stage_powers, chol = self.drive_args
        h = integ.h
        for i, ts in enumerate((t, t + 0.5 * h, t + h) if code == 2 else (t,)):
            _, drive[i, 0], drive[i, 1] = integ.drive.evaluate(ts)
        out = dynamics.driven_substep(integ.model, integ.data, q, v, tau, fext, h, code, rows,
                                      dofs, nf, drive, stage_powers, chol, track)
        if out is not None:
            powers.extend(stage_powers[:len(self.weights)].tolist())
        return out

    def normalize(self, q, v):
        """Every joint's chart change on ``(q, v)`` in place in one kernel call where the
        kernels take the steps; False (nothing done) elsewhere."""
        if self.advance_args is None or not self.integ.charts:
            return False
        kernels.normalize(dynamics.packed(self.integ.model).ints, q, v)
        return True

    def advance(self, q, v):
        """One step without limits, drive or contacts in one kernel call
        (:func:`core.compiled.kernels.advance_unconstrained`): ``(q, v)`` new arrays, or
        None where that does not apply or the kernel reports a failure."""
        if self.unconstrained is None:
            return None
        integ = self.integ
        p = dynamics.packed(integ.model)
        qn, vn = q.copy(), v.copy()
        if kernels.advance_unconstrained(p.ints, p.reals, integ.data.buffer, qn, vn,
                                         self.unconstrained):
            return None
        return qn, vn

    def steps(self, t, q, v, count):
        """``count`` steps from time t in one kernel call (with a contact solver only steps
        clear of contacts, :meth:`_steps_clear`): ``(q, v, drive work of each step
        (count,))``, or None where that does not apply or the kernel (or the contact check)
        declines."""
        if self.advance_args is None:
            return None
        if self.integ.contacts is None:
            return self._steps(t, q, v, count)
        return self._steps_clear(t, q, v, count)

    def advance_steps(self, t, state, count):
        """:meth:`steps` for a run of ``count`` steps from time t and state ``(q, v, drive
        work)``, :data:`KERNEL_SUBSTEPS` substeps per kernel call, up to the first call
        that declines: ``(state after the steps taken, steps taken)``."""
        if self.advance_args is None:
            return state, 0
        integ = self.integ
        per_call = max(1, KERNEL_SUBSTEPS // integ.substeps)
        done = 0
        while done < count:
            n = min(per_call, count - done)
            q, v, work = state
            out = self.steps(t + done * integ.dt, q, v, n)
            if out is None:
                break
            for dw in out[2].tolist():
                work += dw
            state = out[0], out[1], work
            done += n
        return state, done

    def _steps(self, t, q, v, count):
        """``count`` steps from time t in one call of :func:`core.compiled.kernels.advance`
        (with a drive, its motion at every substep's start, middle and end from one
        :meth:`core.integrators.Drive.evaluate_many`; with a tracking, its rows at every
        substep's end from one :meth:`core.integrators.Integrator.tracking_rows`): ``(q, v,
        drive work of each step
        (count,))``, or None when the kernel reports a failure (the limit solver's
        engagement then as before the call)."""
        integ = self.integ
        p = dynamics.packed(integ.model)
        qn, vn = q.copy(), v.copy()
        sd, li, lr, dofs, nf, chol, drive, qend, powers = self.advance_args
        h, n = integ.h, count * integ.substeps
        if count > 1:
            sd = sd.copy()
            sd[S_NSUB] = n
        if integ.drive is not None:
            ts = ((t + integ.dt * np.arange(count))[:, None] +
                  h * np.arange(integ.substeps)[None, :]).ravel()
            qp, vp, ap = integ.drive.evaluate_many(ts[:, None] + np.array([0.0, 0.5 * h, h]))
            drive = np.stack([vp, ap], axis=1).reshape(n, 3, 2, -1)
            qend = np.ascontiguousarray(qp.reshape(n, 3, -1)[:, 2])
            powers = np.zeros((n, 4))
        track = world = None
        if integ.tracking is not None:
            ends = ((t + integ.dt * np.arange(count))[:, None] +
                    h * np.arange(1, integ.substeps + 1)[None, :]).ravel()
            track, world = integ.tracking_rows(ends), integ.world_rows(ends)
        if li is None and integ.drive is None and integ.tracking is None:
            failed = kernels.advance_unconstrained(p.ints, p.reals, integ.data.buffer, qn, vn,
                                                   sd)
        else:
            failed = kernels.advance(p.ints, p.reals, integ.data.buffer, qn, vn, sd, li, lr,
                                     dofs, nf, drive, qend, powers, chol, track, world)
        if failed:
            return None
        work = np.zeros(count)
        if integ.drive is not None:
            w = self.weights
            sub = h * (powers[:, :len(w)] @ np.array(w))
            for j in range(count):
                for x in sub[j * integ.substeps:(j + 1) * integ.substeps].tolist():
                    work[j] += x
        return qn, vn, work

    def _steps_clear(self, t, q, v, count):
        """:meth:`_steps` for steps that no shape can finish in contact
        (:meth:`core.contacts.ContactSolver.clear` over the ``count`` steps, and again at
        their end), logged as such; None (the limit solver's engagement as before) where the
        check or the kernel declines, and without a check while the last contact step found
        contacts (``ContactSolver.touching``: the next one almost always does)."""
        integ = self.integ
        contacts, t_end = integ.contacts, t + count * integ.dt
        if contacts.touching or not contacts.clear(integ.data, q, v, t, count * integ.dt):
            return None
        li, lr = self.advance_args[1:3]
        saved = None if li is None else (li.copy(), lr.copy())
        out = self._steps(t, q, v, count)
        if out is None or not contacts.clear(integ.data, out[0], None, t_end):
            if saved is not None:
                li[:], lr[:] = saved
            return None
        contacts.skip(t, integ.h, integ.substeps * count)
        return out
