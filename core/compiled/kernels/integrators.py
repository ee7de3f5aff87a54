"""numba twins of the model integrator's steps (:mod:`core.integrators`): one (sub)step,
driven or not, and runs of steps with the divergence test, the charts and the limit solver
in one kernel call.

Mirrors (reference -> twin; parity test):

* ``Integrator._substep`` (euler, semi-implicit, rk4, implicit) -> :func:`step`,
  :func:`_substep`, :func:`_first_order`, :func:`_implicit_terms`:
  ``tests/core/test_backend_numba.py::test_integrator_step_agrees``; with tracking, in joint
  space and in the world (``Integrator._tracked``, ``Integrator.world_rows``):
  ``::test_tracking_agrees``, ``::test_world_tracking_agrees``;
* ``Integrator._driven_acceleration`` and the driven substep -> :func:`driven_step`,
  :func:`_driven`: ``tests/core/test_compiled_realtime.py::test_driven_substep_agrees``;
* ``Integrator._step`` / ``Integrator.advance`` (substeps, divergence test, charts, limits,
  drive) -> :func:`advance`, :func:`advance_unconstrained`:
  ``tests/core/test_backend_numba.py::test_limits_agree``, ``::test_integrator_step_agrees``
  and ``tests/core/test_compiled_realtime.py::test_driven_limits_agree``;
* ``Integrator.normalize`` (``expcoords.reparametrize``) -> :func:`normalize`:
  ``tests/core/test_backend_numba.py::test_kernel_chart_change_is_reparametrize``.

The tolerances there: each substep's accelerations to the dynamics' tolerance, the
differences adding up over the substeps.
"""

import math

from .dynamics import aba_recursion, crba_recursion, rnea_recursion
from ..layout import (HEADER, H_DDQ, H_M, H_NB, H_NLE, H_NV, H_RSPRING, I_CHART, I_Q,
                     LI_C, LI_HEADER, NI, S_CHARTS, S_CLAMP, S_H, S_METHOD, S_NFEXT, S_NSUB,
                     S_SIZE)
from .limits import limit_apply
from .options import inline, jit

__all__ = ["step", "driven_step", "advance", "advance_unconstrained", "normalize"]


@jit
def step(ints, reals, buf, q, v, tau, fext, h, method, qn, vn, track, world):
    """One (sub)step ``h`` of the model integrator (``method`` 0 euler, 1 semi-implicit,
    2 rk4, 3 implicit, as :meth:`core.integrators.Integrator._substep`) from ``(q, v)`` into
    ``(qn, vn)``, the four RK4 stages (or the implicit step's armature and torques) in the
    scratch rows of ``qn``/``vn``: ``qn, vn`` are ``(5, nv)``, row 0 the result; ``track``
    None or the implicit step's tracking rows ``(3, nv)`` ``K*, C*, b`` at the substep's end
    (:meth:`core.integrators.Integrator.tracking_rows`); ``world`` None or its world
    tracking's rows ``(nb, 22)`` (:meth:`core.integrators.Integrator.world_rows`)."""
    return _substep(ints, reals, buf, q, v, tau, fext, h, method, qn, vn, None, None, None,
                    None, None, track, world)


@jit
def driven_step(ints, reals, buf, q, v, tau, fext, h, method, qn, vn, dofs, nf, drive, powers,
                chol, track):
    """:func:`step` of a model with prescribed coordinates (:class:`core.integrators.Drive`):
    ``dofs (nv,)`` the free coordinates (the first ``nf``) then the prescribed ones,
    ``drive (3, 2, k)`` their rates and accelerations ``(v_p, a_p)`` at ``t``, ``t + h/2``
    and ``t + h``; each stage's accelerations from :func:`_driven`, its drive power into
    ``powers`` (one per stage: 1, or 4 for rk4); ``chol (nf, nf + 1)`` scratch. Status 0,
    1 (a singular ``S^T IA S`` cannot occur: no aba) or 4 (``M_ff`` not positive
    definite). ``track`` as :func:`step`'s."""
    return _substep(ints, reals, buf, q, v, tau, fext, h, method, qn, vn, dofs, nf, drive,
                    powers, chol, track, None)


@jit
def _driven(ints, reals, buf, q, v, tau, fext, dofs, nf, vp, ap, powers, s, chol, arm):
    """Accelerations into the buffer's ddq of a model whose coordinates ``dofs[nf:]`` are
    prescribed (rates ``vp``, accelerations ``ap``): ``(M_ff + diag(arm_f)) a_f = tau_f - h_f
    - M_fp a_p`` (``arm`` the armature ``(nv,)``, or ``(0,)`` for none) solved with the
    Cholesky factor in ``chol (nf, nf + 1)`` (its last column the right-hand side), M from
    crba and h from the nonlinear effects (as
    :meth:`core.integrators.Integrator._driven_acceleration`); the drive's power ``(M_p a +
    h_p - tau_p) . v_p`` into ``powers[s]``. Status 0, or 4 if ``M_ff`` is not positive
    definite (or not finite)."""
    nv = ints[H_NV]
    oM, on, ddq = ints[H_M], ints[H_NLE], ints[H_DDQ]
    crba_recursion(ints, reals, buf, q)
    a = buf[ddq:ddq + nv]
    for j in range(nv):
        a[j] = 0.0
    rnea_recursion(ints, reals, buf, q, v, a, fext, on)
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
            if j == i and arm.size:
                x += arm[r]
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


@inline
def _stage(ints, reals, buf, q, v, tau, fext, dofs, nf, drive, s, chol, powers, arm, world):
    """The accelerations of stage ``s`` into the buffer's ddq with the armature ``arm``
    (``(0,)`` for none): :func:`aba_recursion` without a drive (``dofs`` empty, or it and the
    other drive arguments None: numba then compiles this branch only), else :func:`_driven`
    with the drive at the stage's time (rk4 stages 0, 1, 2, 3 at ``t``, ``t + h/2``, ``t +
    h/2``, ``t + h``); ``world`` world tracking's rows (None: none; the drive takes none:
    :mod:`core.compiled.integrators` steps such models in Python)."""
    if dofs is None or dofs.size == 0:
        if world is None:
            return aba_recursion(ints, reals, buf, q, v, tau, fext, arm,
                                 buf[:0].reshape((0, 22)))
        return aba_recursion(ints, reals, buf, q, v, tau, fext, arm, world)
    t = (s + 1) // 2
    return _driven(ints, reals, buf, q, v, tau, fext, dofs, nf, drive[t, 0], drive[t, 1],
                   powers, s, chol, arm)


@inline
def _implicit_terms(ints, reals, h, q, v, tau, dofs, nf, arm, te, track):
    """The implicit method's armature ``h C + h^2 K`` into ``arm (nv,)`` and its torques
    ``tau - h K v`` into ``te (nv,)`` (``tau`` on the prescribed coordinates ``dofs[nf:]``,
    whose springs the drive's power takes as they are), from the model's joint springs and
    dampers, with the tracking rows ``track (3, nv)`` (``K*, C*, b``; None: none) adding
    ``h C* + h^2 K*`` and ``b - K* q - (C* + h K*) v`` (as
    :meth:`core.integrators.Integrator._substep` and ``Integrator._tracked``)."""
    nv = ints[H_NV]
    rs = ints[H_RSPRING]
    for j in range(nv):
        k, c = reals[rs + j], reals[rs + nv + j]
        arm[j] = h * c + h * h * k
        te[j] = tau[j] - h * k * v[j]
    if track is not None:
        for j in range(nv):
            k, c = track[0, j], track[1, j]
            arm[j] += h * c + h * h * k
            te[j] += track[2, j] - k * q[j] - (c + h * k) * v[j]
    if dofs is not None:
        for i in range(nf, dofs.size):
            te[dofs[i]] = tau[dofs[i]]


@inline
def _substep(ints, reals, buf, q, v, tau, fext, h, method, qn, vn, dofs, nf, drive, powers,
             chol, track, world):
    nv = ints[H_NV]
    ddq = ints[H_DDQ]
    none = buf[:0]                                     # no armature
    if method == 3:                                    # implicit: the scratch rows 1, 2 of vn
        _implicit_terms(ints, reals, h, q, v, tau, dofs, nf, vn[1], vn[2], track)
        st = _stage(ints, reals, buf, q, v, vn[2], fext, dofs, nf, drive, int(0), chol,
                    powers, vn[1], world)
        if st:
            return st
        _first_order(buf, ddq, h, int(1), q, v, qn[0], vn[0])
        return 0
    if method != 2:
        st = _stage(ints, reals, buf, q, v, tau, fext, dofs, nf, drive, int(0), chol, powers,
                    none, None)
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
                    chol, powers, none, None)
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


@inline
def _undriven_or_driven(ints, reals, buf, q, v, tau, fext, h, method, qn, vn, dofs, nf, drive,
                        powers, chol, s, track, world):
    """Substep ``s`` of :func:`_advance`: without a drive (``dofs`` None), or with the
    drive's tables' row ``s`` (row 0 when the model has no prescribed coordinates)."""
    if dofs is None:
        return _substep(ints, reals, buf, q, v, tau, fext, h, method, qn, vn, None, None,
                        None, None, None, track, world)
    r = s if dofs.size else 0
    return _substep(ints, reals, buf, q, v, tau, fext, h, method, qn, vn, dofs, nf,
                    drive[r], powers[r], chol, track, None)


@inline
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


@jit
def _finite(q, v):
    """True if ``q . q + v . v`` is finite (the integrator's divergence test)."""
    x = 0.0
    for j in range(q.size):
        x += q[j] * q[j] + v[j] * v[j]
    return x < math.inf


@jit
def _settle(ints, q, v, charts):
    """After a substep or the limits: status 3 if the state is not finite (the
    integrator's divergence test), else 0 with the charts changed when ``charts``."""
    if not _finite(q, v):
        return 3
    if charts:
        normalize(ints, q, v)
    return 0


@jit
def normalize(ints, q, v):
    """The chart change in place of the joints whose family has ``kernel_charts`` (the
    packer's ``I_CHART``: the spherical and free joints): ``(r, r_dot)`` (their first three
    coordinates, exponential coordinates of a rotation) with ``|r| > pi`` to ``eta r`` and
    ``eta r_dot - c <r, r_dot> / theta^3 r`` (seed 003 eqs. 66-69, as
    :func:`core.expcoords.reparametrize`)."""
    for b in range(ints[H_NB]):
        row = HEADER + NI * b
        if ints[row + I_CHART] == 0:
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


@jit
def advance(ints, reals, buf, q, v, sd, li, lr, dofs, nf, drive, qend, powers, chol, track,
            world):
    """Steps of the model integrator, in place on ``(q, v)``: ``sd[S_NSUB]`` substeps of
    ``h = sd[S_H]`` with the tau and fext of ``sd`` (:func:`core.compiled.pack.step_arrays`),
    each followed by the rate limit (when ``sd[S_CLAMP]``), the divergence test, the
    spherical and free joints' chart change
    (``sd[S_CHARTS]``) and, when ``li`` has constraints, the prescribed coordinates set to
    the drive's at the substep's end, the limit solver (:func:`core.compiled.pack` layout of
    :meth:`core.limits.LimitSolver`, the prescribed coordinates locked) and again the test
    and the chart change.

    ``li, lr`` None for a model without limits, and ``dofs, drive, qend, powers, chol`` None
    for one without a drive: numba then compiles this call without the limit solver or the
    drive (a model's first simulation compiles only what it runs). With prescribed
    coordinates (``dofs`` not empty: :func:`driven_step`'s ``dofs``, ``nf`` and ``chol``):
    ``drive (n, 3, 2, k)`` each substep's ``(v_p, a_p)`` at its start, middle and end,
    ``qend (n, k)`` the prescribed coordinates at its end, each substep's stage powers into
    the rows of ``powers (n, 4)``, and after the limits of each substep the prescribed
    coordinates and rates are set to the drive's at its end (as
    :meth:`core.integrators.Integrator._step`); without, those tables have one row, unused.
    ``track`` None, or ``(n, 3, nv)`` each substep's tracking rows, and ``world`` None, or
    ``(n, nb, 22)`` each substep's world tracking rows (:func:`step`; not with a drive).

    Status 0, or nonzero with the limit solver's engagement state as before the call
    (``(q, v)`` then hold a partial step): 1 a singular ``S^T IA S``, 3 a non-finite state,
    4 a mass matrix (or ``M_ff``) not positive definite, 5 an undefined twist limit."""
    return _advance(ints, reals, buf, q, v, sd, li, lr, dofs, nf, drive, qend, powers, chol,
                    track, world)


@jit
def advance_unconstrained(ints, reals, buf, q, v, sd):
    """:func:`advance` of a model without limits or a drive: six arguments instead of
    fourteen (numba's dispatcher takes about 45 ns per array argument), and the explicit
    Euler methods step ``(q, v)`` in place, without the work rows of ``sd``."""
    method = int(sd[S_METHOD])
    if method >= 2:
        return _advance(ints, reals, buf, q, v, sd, None, None, None, int(0), None, None,
                        None, None, None, None)
    h, charts, nv = sd[S_H], sd[S_CHARTS] != 0.0, ints[H_NV]
    tau, fext = _step_forces(ints, sd)
    for _ in range(int(sd[S_NSUB])):
        st = aba_recursion(ints, reals, buf, q, v, tau, fext, buf[:0],
                           buf[:0].reshape((0, 22)))
        if st:
            return st
        _first_order(buf, ints[H_DDQ], h, method, q, v, q, v)
        _clamp(sd, nv, v)
        st = _settle(ints, q, v, charts)
        if st:
            return st
    return 0


@inline
def _step_forces(ints, sd):
    """``(tau (nv,), fext (nfext, 6))``: views of the step kernels' ``sd``."""
    nv = ints[H_NV]
    nfext = int(sd[S_NFEXT])
    return sd[S_SIZE:S_SIZE + nv], sd[S_SIZE + nv:S_SIZE + nv + 6 * nfext].reshape((nfext, 6))


@inline
def _clamp(sd, nv, v):
    """Clip each rate to the rate limit at the end of ``sd`` when its flag is set (after the
    method's step, as :meth:`core.integrators.Integrator._step`)."""
    if sd[S_CLAMP] != 0.0:
        limit = sd[sd.size - nv:]
        for j in range(nv):
            v[j] = min(max(v[j], -limit[j]), limit[j])


@inline
def _impose(q, v, dofs, nf, qend, drive, s):
    """The prescribed coordinates and rates ``dofs[nf:]`` set to the drive's at the end of
    substep ``s`` (nothing when ``dofs`` is None)."""
    if dofs is not None:
        for i in range(dofs.size - nf):
            q[dofs[nf + i]] = qend[s, i]
            v[dofs[nf + i]] = drive[s, 2, 0, i]


@inline
def step_layout(ints, sd):
    """``(method, h, charts, tau, fext, qn (5, nv), vn (5, nv))``: the step kernels' ``sd``
    read (:func:`_step_forces`; the work rows views of it)."""
    nv = ints[H_NV]
    tau, fext = _step_forces(ints, sd)
    rows = S_SIZE + nv + 6 * int(sd[S_NFEXT])
    return (int(sd[S_METHOD]), sd[S_H], sd[S_CHARTS] != 0.0, tau, fext,
            sd[rows:rows + 5 * nv].reshape((5, nv)),
            sd[rows + 5 * nv:rows + 10 * nv].reshape((5, nv)))


@jit
def _advance(ints, reals, buf, q, v, sd, li, lr, dofs, nf, drive, qend, powers, chol, track,
             world):
    nv = ints[H_NV]
    method, h, charts, tau, fext, qn, vn = step_layout(ints, sd)
    c = 0
    if li is not None:
        c = li[LI_C] if li.size else 0
        E = LI_HEADER + 2 * c
        for k in range(2 * c):                           # engaged, steps -> the copies
            li[E + 2 * c + k] = li[E + k]
    st = 0
    for s in range(int(sd[S_NSUB])):
        if world is None:                   # single None tests: numba prunes the others
            if track is None:
                st = _undriven_or_driven(ints, reals, buf, q, v, tau, fext, h, method, qn, vn,
                                         dofs, nf, drive, powers, chol, s, None, None)
            else:
                st = _undriven_or_driven(ints, reals, buf, q, v, tau, fext, h, method, qn, vn,
                                         dofs, nf, drive, powers, chol, s, track[s], None)
        elif track is None:
            st = _undriven_or_driven(ints, reals, buf, q, v, tau, fext, h, method, qn, vn,
                                     dofs, nf, drive, powers, chol, s, None, world[s])
        else:
            st = _undriven_or_driven(ints, reals, buf, q, v, tau, fext, h, method, qn, vn,
                                     dofs, nf, drive, powers, chol, s, track[s], world[s])
        if st:
            break
        for j in range(nv):
            q[j] = qn[0, j]
            v[j] = vn[0, j]
        _clamp(sd, nv, v)
        st = _settle(ints, q, v, charts)
        if li is not None:
            if st == 0 and c:
                _impose(q, v, dofs, nf, qend, drive, s)
                st = limit_apply(ints, reals, buf, q, v, li, lr, dofs, nf)
                if st == 0:
                    st = _settle(ints, q, v, charts)
        if st:
            break
        _impose(q, v, dofs, nf, qend, drive, s)
    if li is not None:
        if st:
            E = LI_HEADER + 2 * c
            for k in range(2 * c):
                li[E + k] = li[E + 2 * c + k]
    return st
