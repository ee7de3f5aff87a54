"""numba kernels of the contact solver's substep between its two large kernels, so that
:meth:`core.contacts.solver.ContactSolver.apply` on the numba backend is a handful of
kernel calls with arrays between them and no numpy call per contact:

1. :func:`shape_poses`: the shapes' world poses for the narrow phase and the bound on their
   point speeds;
2. :func:`core.compiled.narrow.pair_contacts`: the shape pairs' contacts;
3. :func:`gather_contacts`: the planes' contacts joined with the pairs', their materials and
   warm-start keys, the limit solver's engagement, the rows of the engaged limits and the
   warm starts of every row;
4. :func:`core.compiled.contacts.contact_solve` (or the numpy BLAS path for large problems):
   the impulses;
5. :func:`finish_contacts`: the end state, the next substep's warm starts, the limits'
   projection and the contacts' position correction.

The check that lets contact-free steps skip the solver (``ContactSolver.clear``) takes
:func:`shape_poses`, :func:`plane_separation` and the narrow phase, without building the
contacts. Each follows the numpy code of ``ContactSolver.apply``, ``find_contacts`` and
``clear`` (the reference) operation for operation, so the two differ by rounding only.
These kernels allocate their outputs (their sizes are the number of contacts found).

:func:`contact_substeps` runs a step's substeps (the integrator's substep, then the five
steps above without the numpy path, then the chart change) in one call, so that a step
with contacts is one kernel call from Python: the same functions in the same order as the
separate calls, with the same results bit for bit.

Mirrors (reference -> twin; parity test in ``tests/core/test_contacts.py``):

* ``ContactSolver.apply`` and ``find_contacts`` -> :func:`shape_poses`,
  :func:`gather_contacts`, :func:`finish_contacts`:
  ``::test_the_compiled_contact_substep_equals_the_reference_glue``;
* ``ContactSolver.clear`` -> :func:`shape_poses`, :func:`plane_separation`:
  ``::test_the_compiled_clear_check_agrees_with_the_contacts_found``;
* ``Integrator._step`` with a contact solver (the separate kernel calls above) ->
  :func:`contact_substeps`: ``::test_the_fused_contact_step_equals_the_kernel_calls``.
"""

import numpy as np

from ..contacts.rules import KEY_BITS
from .contacts import (contact_pgs, contact_solve, delassus_rows, fastest_point,
                       impulse_velocity)
from .kernels.dynamics import dense_aba, energies
from .kernels.integrators import _clamp, _finite, _first_order, normalize, step, step_layout
from .kernels.limits import limit_apply, limit_hold, limit_offsets, limit_row
from .kernels.options import jit
from .kernels.spatial import world_point
from .layout import H_DDQ, H_LSH, H_NV, LI_C, LI_MIN, LR_HEADER, LR_PER, S_NSUB
from .narrow import pair_contacts

__all__ = ["shape_poses", "plane_separation", "gather_contacts", "finish_contacts",
           "contact_substeps", "C_T", "C_MARGIN", "C_WEIGHT", "C_BOUNCE", "C_SLOP",
           "C_ITERATIONS", "C_RTOL", "C_WORK", "C_SIZE", "TOO_LARGE"]

#: the entries of :func:`contact_substeps`' ``consts``: the time of the first substep, the
#: contact margin, the share c of a velocity change the position update takes, the bounce
#: threshold, the slop, the Gauss-Seidel's sweeps and tolerance, the most work of a solve
C_T, C_MARGIN, C_WEIGHT, C_BOUNCE, C_SLOP, C_ITERATIONS, C_RTOL, C_WORK = range(8)
C_SIZE = 8
#: :func:`contact_substeps`' status for a contact problem larger than ``consts[C_WORK]``
TOO_LARGE = 6


@jit
def shape_poses(ints, buf, bodies, at, first, extent, poses):
    """The world poses of the bodies ``bodies (ns,)`` of the model's shapes (from the
    compiled kinematics in ``buf``) into ``poses[:ns] (N, 4, 4)`` (the colliders' poses after
    them are the caller's); returns :func:`core.compiled.contacts.fastest_point`'s bound on
    the shapes' point speeds (``at``, ``first``, ``extent`` as it takes them)."""
    oL = ints[H_LSH]
    for k in range(bodies.shape[0]):
        o = oL + 28 * bodies[k]
        for i in range(4):
            for j in range(4):
                poses[k, i, j] = buf[o + 4 * i + j]
    return fastest_point(buf, at, first, extent)


@jit
def plane_separation(ints, buf, planes, vertices, vertex_body, vertex_radius):
    """The least separation from the planes ``(P, 4)`` (normal, height) of the core vertices
    ``vertices (3 V,)`` (flat) swept by their radii, on the bodies ``vertex_body`` posed in
    ``buf`` (:func:`core.contacts.narrow.plane_contacts`' separations; inf without planes
    or vertices)."""
    oL = ints[H_LSH]
    least = np.inf
    for k in range(vertex_body.shape[0] if planes.shape[0] else 0):
        w0, w1, w2 = world_point(buf, oL + 28 * vertex_body[k], vertices, 3 * k)
        for pi in range(planes.shape[0]):
            least = min(least, w0 * planes[pi, 0] + w1 * planes[pi, 1] + w2 * planes[pi, 2]
                        - planes[pi, 3] - vertex_radius[k])
    return least


@jit
def _key(kind, x, y, z):
    """:func:`core.contacts.rules.contact_keys` of one contact."""
    return (((kind << KEY_BITS | x) << KEY_BITS | y) << KEY_BITS) | z


@jit
def gather_contacts(ints, buf, q, v1, q1, c_h, margin, planes, plane_material, vertices,
                    vertex_shape, vertex_body, vertex_local, vertex_radius, pairs, pair_P,
                    pair_N, pair_S, pair_F, pair_a, pair_b, pair_material, li, lr, warm_keys,
                    warm_lam, warm_limits):
    """Steps 1 and 2 of ``ContactSolver.apply`` after the narrow phase, for a model posed
    at q in ``buf`` and a world of planes ``(P, 4)`` (normal, height) and static colliders.

    The contacts: each plane's (:func:`core.contacts.narrow.plane_contacts` of every core
    vertex closer than ``margin``: ``vertices (3 V,)`` flat, and the vertices' body, shape,
    index in the shape and radius given per vertex; materials ``plane_material (P, shapes,
    2)``), then the pairs' from :func:`core.compiled.narrow.pair_contacts` (its five
    arrays; bodies, materials by the pair tables ``(items, items)``); their warm-start
    keys. Without contacts, returns
    ``nc = 0`` and nothing else is done (the caller takes the limit solver's own step).

    Then the limit solver ``(li, lr)`` (no constraints: ``li[LI_C] = 0``): its engagement
    at ``(q, v1)`` (:meth:`core.limits.LimitSolver.engage`, the state in ``li`` and the
    distances in ``lr``), and the rows of the limits engaged or reaching their bound within
    the substep (``step = q1 - q``) with their speculative or restitution right-hand sides
    and warm starts from ``warm_limits (c,)``; the contacts' warm starts from the sorted
    ``warm_keys`` and their impulses ``warm_lam (k, 3)``.

    Returns ``(status, nc, nl, lim_rows (nl,), a, b (nc,), P, n (nc, 3), s, mu, rest, key
    (nc,), J (nl + 3 nc, nv) (the limit rows filled), rhs, lam (nl + 3 nc,))``; status 0,
    or 5 when a twist limit is undefined (nothing then changed but the limits' distances)."""
    nv = q.shape[0]
    oL = ints[H_LSH]
    nvert, npl, npair = vertex_body.shape[0], planes.shape[0], pairs.shape[0]
    cap = npl * nvert + npair
    a, b = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64)
    P, n = np.empty((cap, 3)), np.empty((cap, 3))
    s, mu, rest = np.empty(cap), np.empty(cap), np.empty(cap)
    key = np.empty(cap, dtype=np.int64)
    wv = np.empty((nvert, 3))
    for k in range(nvert if npl else 0):                # the core vertices in the world
        wv[k, 0], wv[k, 1], wv[k, 2] = world_point(buf, oL + 28 * vertex_body[k], vertices,
                                                    3 * k)
    nc = 0
    for pi in range(npl):
        n0, n1, n2, height = planes[pi, 0], planes[pi, 1], planes[pi, 2], planes[pi, 3]
        for k in range(nvert):
            r = vertex_radius[k]
            sep = wv[k, 0] * n0 + wv[k, 1] * n1 + wv[k, 2] * n2 - height - r
            if not sep < margin:
                continue
            f = r + 0.5 * sep
            P[nc, 0], P[nc, 1], P[nc, 2] = wv[k, 0] - f * n0, wv[k, 1] - f * n1, \
                wv[k, 2] - f * n2
            n[nc, 0], n[nc, 1], n[nc, 2] = n0, n1, n2
            si = vertex_shape[k]
            a[nc], b[nc], s[nc] = -1, vertex_body[k], sep
            mu[nc], rest[nc] = plane_material[pi, si, 0], plane_material[pi, si, 1]
            key[nc] = _key(0, pi, si, vertex_local[k])
            nc += 1
    for k in range(npair):
        i, j = pairs[k, 0], pairs[k, 1]
        for d in range(3):
            P[nc, d], n[nc, d] = pair_P[k, d], pair_N[k, d]
        a[nc], b[nc], s[nc] = pair_a[i, j], pair_b[i, j], pair_S[k]
        mu[nc], rest[nc] = pair_material[i, j, 0], pair_material[i, j, 1]
        key[nc] = _key(1, i, j, pair_F[k])
        nc += 1
    c = li[LI_C]
    rows = np.empty(c, dtype=np.int64)
    if nc == 0:
        return 0, 0, 0, rows, a, b, P, n, s, mu, rest, key, np.empty((0, nv)), \
            np.empty(0), np.empty(0)
    (E, ST, _, _, _, _, _, _), (D, DD, N, _, _, _, _, _, _) = limit_offsets(c, nv)
    for k in range(c):
        d = limit_row(li, lr, q, k, nv, N, D, lr)
        if d != d:                                       # a twist at a swing of pi
            return 5, 0, 0, rows, a, b, P, n, s, mu, rest, key, np.empty((0, nv)), \
                np.empty(0), np.empty(0)
    nl = 0
    moved = np.empty(c)
    for k in range(c):                                   # engage (LimitSolver.engage)
        d, dd, mk = lr[D + k], 0.0, 0.0
        for i in range(nv):
            dd += lr[N + nv * k + i] * v1[i]
            mk += lr[N + nv * k + i] * (q1[i] - q[i])
        lr[DD + k], moved[k] = dd, mk
        was = li[E + k] != 0
        leave = was and d > 0.0 and dd > 0.0 and li[ST + k] >= li[LI_MIN]
        on = (was and not leave) or d < 0.0
        li[E + k] = 1 if on else 0
        li[ST + k] = li[ST + k] + 1 if on else 0
        if on or d + mk < 0.0:                           # or reaching it within the substep
            rows[nl] = k
            nl += 1
    m = nl + 3 * nc
    J, rhs, lam = np.empty((m, nv)), np.empty(m), np.zeros(m)
    rest_lim = lr[0]
    for e in range(nl):
        k = rows[e]
        for i in range(nv):
            J[e, i] = lr[N + nv * k + i]
        dl, ul = lr[D + k], lr[DD + k]
        if dl > 0.0:
            target = min(ul - (dl + moved[k]) / c_h, 0.0)
        else:
            target = -rest_lim * min(ul, 0.0)
        rhs[e] = ul - target
        lam[e] = warm_limits[k]
    nw = warm_keys.shape[0]
    for k in range(nc if nw else 0):                     # the same contacts' last impulses
        at = min(np.searchsorted(warm_keys, key[k]), nw - 1)
        if warm_keys[at] == key[k]:
            for d in range(3):
                lam[nl + 3 * k + d] = warm_lam[at, d]
    return 0, nc, nl, rows[:nl], a[:nc], b[:nc], P[:nc], n[:nc], s[:nc], mu[:nc], \
        rest[:nc], key[:nc], J, rhs, lam


@jit
def finish_contacts(q1, v1, dv, c_h, gap, s, J, nl, lim_rows, lam, key, F, li, lr, slop,
                    iterations, rtol):
    """Step 4 of ``ContactSolver.apply`` after the impulses ``lam`` (``nl`` limit rows, then
    three per contact) and ``dv = M^-1 J^T lam`` (``F`` the Cholesky factor of M, L in its
    lower half and L^T in its upper, as :func:`core.compiled.contacts.contact_solve` leaves
    it):
    the end state ``(q1 + c h dv + dq, v1 + dv)`` with the limits' projection
    (:func:`core.compiled.kernels.limit_hold`) and, where the contacts' end separations
    predicted from their gaps ``gap`` leave one more than ``slop`` deep, the mass-weighted
    correction along the contact normals and the limits (Gauss-Seidel
    :func:`core.compiled.contacts.contact_pgs` of ``iterations`` sweeps and ``rtol``), then
    the projection again.

    Returns ``(status, q_new, q_mid, v_new, moved, warm_keys (nc,) sorted, warm_lam (nc, 3),
    warm_limits (c,), active, depth)``: ``q_mid = q1 + c h dv``, ``moved`` whether q_new
    differs from it (the caller then adds the change of potential energy), ``active`` the
    contacts carrying a normal impulse or overlapping and ``depth`` the deepest overlap;
    status 0, or 5 when a twist limit is undefined (a swing of pi)."""
    nv, nc, c = q1.shape[0], s.shape[0], li[LI_C]
    v_new = v1 + dv
    warm_limits = np.zeros(c)
    for e in range(nl):
        warm_limits[lim_rows[e]] = lam[e]
    order = np.argsort(key)
    warm_keys, warm_lam = key[order], np.empty((nc, 3))
    for k in range(nc):
        for d in range(3):
            warm_lam[k, d] = lam[nl + 3 * order[k] + d]
    q_mid = q1 + c_h * dv
    q_new = q_mid.copy()
    moved = False
    out = np.empty(c * (1 + nv))
    if c:
        status = limit_hold(li, lr, q_new, out)
        if status < 0:
            return 5, q_new, q_mid, v_new, moved, warm_keys, warm_lam, warm_limits, 0, 0.0
        moved = status == 1
    ends = np.empty(nc)
    deep = False
    for k in range(nc):
        r, x = nl + 3 * k, gap[k]
        for i in range(nv):
            x += J[r, i] * (c_h * dv[i] + q_new[i] - q_mid[i])
        ends[k] = x
        deep = deep or x < -slop
    if deep:
        na = nc + c
        A = np.empty((na, nv))                   # rows: the contact normals, the limits
        for k in range(nc):
            A[k] = J[nl + 3 * k]
        for k in range(c):
            A[nc + k] = out[c + nv * k:c + nv * (k + 1)]
        Zt, W, low = np.empty((nv, na)), np.empty((na, na)), np.empty(na)
        delassus_rows(F, A, Zt, W)                      # W = A M^-1 A^T
        for k in range(nc):
            low[k] = ends[k] + slop
        for k in range(c):
            low[nc + k] = out[k] + lr[LR_HEADER + LR_PER * k + 1]
        corr = np.zeros(na)
        contact_pgs(W, low, corr, na, np.empty(0), np.empty((0, 6)), np.empty((0, 5)),
                    iterations, rtol)
        dq = np.empty(nv)                                # dq = M^-1 A^T corr
        impulse_velocity(F, Zt, corr, dq)
        for i in range(nv):
            q_new[i] += dq[i]
        moved = True
        if c and limit_hold(li, lr, q_new, out) < 0:
            return 5, q_new, q_mid, v_new, moved, warm_keys, warm_lam, warm_limits, 0, 0.0
    active, depth = 0, 0.0
    for k in range(nc):
        if lam[nl + 3 * k] > 0.0 or s[k] < 0.0:
            active += 1
        depth = max(depth, -s[k])
    return 0, q_new, q_mid, v_new, moved, warm_keys, warm_lam, warm_limits, active, depth


@jit
def contact_substeps(ints, reals, buf, mass_com, q, v, sd, dense, M, li, lr, sh_ints, sh_rows,
                     sh_reals, poses, ns, allowed, bodies, at, first, extent, planes,
                     plane_material, vertices, vertex_shape, vertex_body, vertex_local,
                     vertex_radius, pair_a, pair_b, pair_material, consts, warm_keys,
                     warm_lam, warm_limits, log):
    """The substeps of :meth:`core.integrators.Integrator._step` with a contact solver, in
    place on ``(q, v)``: ``sd[S_NSUB]`` substeps of ``sd[S_H]`` (the step kernels' ``sd``,
    :func:`core.compiled.pack.step_arrays`), each

    1. the integrator's substep (:func:`core.compiled.kernels.step`'s, or with ``dense``
       :func:`core.compiled.kernels.dynamics.dense_aba` and the first-order update of
       methods 0 and 1, leaving M's factor in ``M (nv, nv)`` for the contacts), the rate
       limit and the divergence test;
    2. ``ContactSolver.apply`` as :meth:`core.compiled.contact_solver.ContactSteps.apply`
       runs it: the pose and speed bound (:func:`energies`, :func:`shape_poses`), the narrow
       phase (:func:`core.compiled.narrow.pair_contacts` of the packed shapes ``sh_ints,
       sh_rows, sh_reals``), :func:`gather_contacts`, the impulses
       (:func:`core.compiled.contacts.contact_solve`), :func:`finish_contacts` and the
       position correction's change of potential energy; without contacts the limit
       solver's own step (:func:`core.compiled.kernels.limits.limit_apply`);
    3. the divergence test again and the spherical and free joints' chart change
       (``sd[S_CHARTS]``).

    The solver's arrays are :class:`core.compiled.contact_solver.ContactSteps`'; ``consts``
    (:data:`C_SIZE`,) its numbers (:data:`C_T` ...), the warm starts ``warm_keys,
    warm_lam, warm_limits`` its last ones. Each substep's report row ``(t + h, active,
    depth, energy)`` goes into ``log (substeps, 4)``.

    Returns ``(status, substeps taken, warm_keys, warm_lam, warm_limits, touching)``: the
    warm starts after them and whether the last one found contacts. Status 0; or, with
    ``(q, v)``, the limit solver's state ``(li, lr)`` and the warm starts as at the start of
    the substep it stopped in: 1 a singular ``S^T IA S``, 3 a non-finite state, 4 a mass
    matrix not positive definite, 5 an undefined twist limit, :data:`TOO_LARGE` a contact
    problem whose solve would take more than ``consts[C_WORK]`` multiply-adds ``m nv (nv +
    m) / 2`` (m rows)."""
    nv = ints[H_NV]
    method, h, charts, tau, fext, qn, vn = step_layout(ints, sd)
    margin, c_h = consts[C_MARGIN], consts[C_WEIGHT] * h
    iterations, rtol = int(consts[C_ITERATIONS]), consts[C_RTOL]
    c = li[LI_C]
    li0, lr0 = li.copy(), lr.copy()
    touching = False
    for s in range(int(sd[S_NSUB])):
        ts = consts[C_T] + s * h
        li0[:] = li
        lr0[:] = lr
        if dense:
            st = dense_aba(ints, reals, buf, q, v, tau, fext, M)
            if st == 0:
                _first_order(buf, ints[H_DDQ], h, method, q, v, qn[0], vn[0])
        else:
            st = step(ints, reals, buf, q, v, tau, fext, h, method, qn, vn, None, None)
        if st:
            return st, s, warm_keys, warm_lam, warm_limits, touching
        q1, v1 = qn[0].copy(), vn[0].copy()
        if not _finite(q1, v1):
            return 3, s, warm_keys, warm_lam, warm_limits, touching
        _clamp(sd, nv, v1)
        energies(ints, reals, buf, q, v1, mass_com, True)
        reach = margin + h * shape_poses(ints, buf, bodies, at, first, extent, poses)
        pairs, pP, pN, pS, pF = pair_contacts(sh_ints, sh_rows, sh_reals, poses, ns,
                                              allowed, reach)
        st, nc, nl, lim_rows, a, b, P, n, sep, mu, rest, key, J, rhs, lam = \
            gather_contacts(ints, buf, q, v1, q1, c_h, reach, planes, plane_material,
                            vertices, vertex_shape, vertex_body, vertex_local, vertex_radius,
                            pairs, pP, pN, pS, pF, pair_a, pair_b, pair_material, li, lr,
                            warm_keys, warm_lam, warm_limits)
        q_new, v_new, row = q1, v1, (ts + h, 0.0, 0.0, 0.0)
        if st == 0 and nc == 0:                # the limit solver's own step
            if c:
                st = limit_apply(ints, reals, buf, q1, v1, li, lr, None, int(0))
        elif st == 0:
            m = nl + 3 * nc
            if m * nv * (nv + m) > 2.0 * consts[C_WORK]:
                st = TOO_LARGE
            else:
                dv, gap = np.empty(nv), np.empty(nc)
                kinetic = contact_solve(ints, reals, buf, q, v, v1, q1 - q, a, b, P, n, sep,
                                        mu, rest, np.zeros((nc, 3)), h, c_h, consts[C_BOUNCE],
                                        nl, J, rhs, lam, np.empty((nc, 3, 3)), M, dense,
                                        np.empty((nv, m)), np.empty((m, m)),
                                        np.empty((nc, 6)), np.empty((nc, 5)), dv, gap,
                                        iterations, rtol)
                if kinetic != kinetic:
                    st = 4
                else:
                    st, q_new, q_mid, v_new, moved, keys, wl, wlim, active, depth = \
                        finish_contacts(q1, v1, dv, c_h, gap, sep, J, nl, lim_rows, lam, key,
                                        M, li, lr, consts[C_SLOP], iterations, rtol)
                    if st == 0:
                        warm_keys, warm_lam, warm_limits = keys, wl, wlim
                        potential = 0.0
                        if moved:
                            potential = energies(ints, reals, buf, q_new, q_new, mass_com,
                                                 False)[1] - \
                                energies(ints, reals, buf, q_mid, q_mid, mass_com, False)[1]
                        row = (ts + h, float(active), depth, kinetic + potential)
        if st == 0 and not _finite(q_new, v_new):
            st = 3
        if st:
            li[:] = li0
            lr[:] = lr0
            return st, s, warm_keys, warm_lam, warm_limits, touching
        touching = nc > 0
        for k in range(4):
            log[s, k] = row[k]
        for j in range(nv):
            q[j] = q_new[j]
            v[j] = v_new[j]
        if charts:
            normalize(ints, q, v)
    return 0, int(sd[S_NSUB]), warm_keys, warm_lam, warm_limits, touching
