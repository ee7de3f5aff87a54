"""numba twin of the limit solver (:class:`core.limits.LimitSolver`) on its packed arrays
``li`` (int64) and ``lr`` (float64) (:func:`core.compiled.layout.limit_offsets`).

Mirrors (reference -> twin; parity test):

* ``LimitSolver.apply`` (``engage``, the impulse through ``M^-1 N_e^T``, the driven
  coordinates locked, ``project``) -> :func:`limit_apply` (with :func:`_delassus`,
  :func:`_project`): ``tests/core/test_backend_numba.py::test_limits_agree`` (and, locked,
  the driven runs of ``tests/core/test_compiled_realtime.py::test_driven_limits_agree``);
  a solver with pins (:class:`core.limits.PointPin`) has no kernel (``compiled`` False);
* ``LimitSolver.evaluate`` (each limit's ``constraints``) -> :func:`limit_constraints`,
  :func:`limit_row`: ``tests/core/test_backend_numba.py::test_limit_evaluation_agrees``;
* ``LimitSolver.hold`` -> :func:`limit_hold`:
  ``tests/core/test_backend_numba.py::test_limit_hold_agrees``;
* ``LimitSolver._pgs`` -> :func:`pgs` (and :func:`_coupled_pgs`, the same iterates over the
  coupled entries only): through the three tests above.
"""

import math

from .. import layout
from .dynamics import crba_recursion
from .expcoords import cone, ellipse, twist
from ..layout import (H_M, H_NV, LI_C, LI_HEADER, LI_ITER, LI_MIN, LIMIT_CONE, LIMIT_ELLIPSE,
                     LIMIT_LOWER, LIMIT_TWIST_LOWER, LR_HEADER, LR_PER, PGS_RTOL,
                     POSITION_PASSES, POSITION_SLACK)
from .options import jit

__all__ = ["limit_offsets", "limit_apply", "limit_row", "limit_hold", "limit_constraints",
           "pgs"]

#: the limit solver's offsets: :func:`core.compiled.layout.limit_offsets`, compiled
limit_offsets = jit(layout.limit_offsets)


@jit
def pgs(W, b, lam, sweeps, rtol):
    """Projected Gauss-Seidel into ``lam (n,)``: ``lam >= 0`` with ``W lam + b >= 0``
    complementary (``W (n, n)`` symmetric positive semi-definite, ``b (n,)``; a row with
    ``W_ii = 0`` keeps ``lam_i = 0``), from zero, for at most ``sweeps`` sweeps, stopping
    after the first sweep whose largest change is at most ``rtol`` times the largest ``lam``
    (:meth:`core.limits.LimitSolver._pgs`). Returns the sweeps taken."""
    n = b.shape[0]
    for i in range(n):
        lam[i] = 0.0
    for it in range(sweeps):
        change, size = 0.0, 0.0
        for i in range(n):
            r = b[i]
            for k in range(n):
                r += W[i, k] * lam[k]
            new = max(0.0, lam[i] - r / W[i, i]) if W[i, i] > 0.0 else 0.0
            change = max(change, abs(new - lam[i]))
            size = max(size, new)
            lam[i] = new
        if change <= rtol * size:
            return it + 1
    return sweeps


@jit
def _pgs(lr, W, b, lam, ne, sweeps):
    """:func:`pgs` on the blocks ``W (ne, ne)``, ``b``, ``lam`` at offsets of ``lr``."""
    pgs(lr[W:W + ne * ne].reshape((ne, ne)), lr[b:b + ne], lr[lam:lam + ne], sweeps, PGS_RTOL)


@jit
def _coupled_pgs(li, lr, CP, CI, W, b, lam, n, sweeps):
    """:func:`pgs` on the blocks of ``lr`` at ``W (n, n)``, ``b`` and ``lam``, each row
    summed over its coupled constraints only (``li`` at ``CP`` and ``CI``,
    :func:`limit_offsets`): W's other entries are zeros, whose products leave the sums as
    they are, so the iterates are :func:`pgs`'s."""
    for i in range(n):
        lr[lam + i] = 0.0
    for it in range(sweeps):
        change, size = 0.0, 0.0
        for i in range(n):
            r = lr[b + i]
            for t in range(li[CP + i], li[CP + i + 1]):
                k = li[CI + t]
                r += lr[W + n * i + k] * lr[lam + k]
            old = lr[lam + i]
            new = max(0.0, old - r / lr[W + n * i + i])
            change = max(change, abs(new - old))
            size = max(size, new)
            lr[lam + i] = new
        if change <= PGS_RTOL * size:
            return it + 1
    return sweeps


@jit
def limit_apply(ints, reals, buf, q, v, li, lr, dofs, nf):
    """One application of the limit solver after a substep (as
    :meth:`core.limits.LimitSolver.apply`): engagement, the velocity impulse through
    ``M^-1 N_e^T`` (Cholesky of the CRBA mass matrix; with ``dofs`` not None its coordinates
    ``dofs[nf:]`` locked: their rows and columns of M the identity's, their entries of
    ``M^-1 N_e^T`` zero, :meth:`core.limits.LimitSolver.lock`), then the joint-space position
    projection over every constraint; projected Gauss-Seidel for both. Status 4 if M is not
    positive definite, 5 if a twist limit is undefined (a swing of pi)."""
    nv = ints[H_NV]
    c = li[LI_C]
    (E, ST, _, _, IX, _, _, _), (D, DD, N, L, Y, W, lam, bb, _) = limit_offsets(c, nv)
    ne = 0
    for k in range(c):
        d = limit_row(li, lr, q, k, nv, N, D, lr)
        dof = li[LI_HEADER + 2 * k + 1]
        n = N + nv * k
        if d != d:                                       # a twist at a swing of pi
            return 5
        dd = lr[n + dof] * v[dof]
        if li[LI_HEADER + 2 * k] >= LIMIT_CONE:
            dd += lr[n + dof + 1] * v[dof + 1] + lr[n + dof + 2] * v[dof + 2]
        lr[DD + k] = dd
        was = li[E + k] != 0
        leave = was and d > 0.0 and dd > 0.0 and li[ST + k] >= li[LI_MIN]
        on = (was and not leave) or d < 0.0
        li[E + k] = 1 if on else 0
        li[ST + k] = li[ST + k] + 1 if on else 0
        if on:
            li[IX + ne] = k
            ne += 1
    if ne == 0:
        return 0
    crba_recursion(ints, reals, buf, q)
    oM = ints[H_M]
    if dofs is not None:                                 # locked: the identity's rows
        for t in range(nf, dofs.size):
            p = dofs[t]
            for j in range(nv):
                buf[oM + nv * p + j] = 0.0
                buf[oM + nv * j + p] = 0.0
            buf[oM + nv * p + p] = 1.0
    for i in range(nv):                                  # M = L L^T
        for j in range(i + 1):
            x = buf[oM + nv * i + j]
            for k in range(j):
                x -= lr[L + nv * i + k] * lr[L + nv * j + k]
            if i == j:
                if not x > 0.0:
                    return 4
                lr[L + nv * i + i] = math.sqrt(x)
            else:
                lr[L + nv * i + j] = x / lr[L + nv * j + j]
    _delassus(lr, li, nv, ne, IX, N, L, Y, W, dofs, nf)
    rest = lr[0]
    for e in range(ne):                                  # n.v_new >= -e min(n.v, 0)
        dd = lr[DD + li[IX + e]]
        lr[bb + e] = dd + rest * min(dd, 0.0)
    _pgs(lr, W, bb, lam, ne, li[LI_ITER])
    for e in range(ne):
        y, x = Y + nv * e, lr[lam + e]
        for i in range(nv):
            v[i] += lr[y + i] * x
    need = False                                         # N dq >= -d - p_tol
    for e in range(ne):
        k = li[IX + e]
        need = need or lr[D + k] + lr[LR_HEADER + LR_PER * k + 1] < 0.0
    if not need:
        return 0
    for k in range(c):                                   # bb: the distances, then b
        lr[bb + k] = lr[D + k]
    return _project(li, lr, q, nv)


@jit
def _project(li, lr, q, nv):
    """The joint-space projection in place on ``q`` (:meth:`core.limits.LimitSolver.project`)
    from the constraints' gradients at ``N`` and values at ``b`` (:func:`limit_offsets`) at
    q: ``q + N^T mu`` with ``mu >= 0`` and ``N dq >= -d - p_tol``, re-linearized up to
    POSITION_PASSES times until every constraint is within its deadband; the values and
    gradients at the projected q are left at ``b`` and ``N``. Status 5 if a twist limit is
    undefined (a swing of pi), else 0."""
    c = li[LI_C]
    (_, _, _, _, _, CP, CI, _), (_, _, N, _, _, W, lam, bb, _) = limit_offsets(c, nv)
    for _ in range(POSITION_PASSES):
        for k in range(c):              # W = N N^T over the rows' dofs, the coupled entries
            lr[bb + k] += lr[LR_HEADER + LR_PER * k + 1]
            a, e = _row_dofs(li, k)
            for t in range(li[CP + k], li[CP + k + 1]):
                m = li[CI + t]
                a2, e2 = _row_dofs(li, m)
                x = 0.0
                for i in range(max(a, a2), min(e, e2)):
                    x += lr[N + nv * k + i] * lr[N + nv * m + i]
                lr[W + c * k + m] = x
        _coupled_pgs(li, lr, CP, CI, W, bb, lam, c, li[LI_ITER])
        for k in range(c):
            x = lr[lam + k]
            a, e = _row_dofs(li, k)
            for i in range(a, e):
                q[i] += lr[N + nv * k + i] * x
        inside = True
        for k in range(c):
            d = limit_row(li, lr, q, k, nv, N, bb, lr)
            if d != d:
                return 5
            inside = inside and d + lr[LR_HEADER + LR_PER * k + 1] >= -POSITION_SLACK
        if inside:
            break
    return 0


@jit
def _row_dofs(li, k):
    """The coordinates ``a:e`` where constraint ``k``'s gradient can be nonzero (the rotation
    coordinates of a cone or twist limit, the one coordinate of a range); the products over
    the others are zeros, which leave the sums as they are."""
    dof = li[LI_HEADER + 2 * k + 1]
    return dof, dof + (3 if li[LI_HEADER + 2 * k] >= LIMIT_CONE else 1)


@jit
def limit_row(li, lr, q, k, nv, N, D, out):
    """Constraint ``k`` at ``q`` (constants in ``lr``): its value ``d`` into ``out[D + k]``
    (returned; ``D`` the offset of a (c,) block) and its gradient into row k of the (c, nv)
    block at ``out[N:]`` (zero outside its dofs); ``out`` is ``lr`` in the step's solver."""
    kind, dof = li[LI_HEADER + 2 * k], li[LI_HEADER + 2 * k + 1]
    o = LR_HEADER + LR_PER * k
    n = N + nv * k
    for i in range(nv):
        out[n + i] = 0.0
    if kind == LIMIT_CONE:
        d, g0, g1, g2 = cone(q, dof, lr[o + 2], lr[o + 3], lr[o + 4], lr[o + 5])
        out[n + dof], out[n + dof + 1], out[n + dof + 2] = g0, g1, g2
    elif kind == LIMIT_ELLIPSE:
        d, g0, g1, g2 = ellipse(q, dof, lr, o)
        out[n + dof], out[n + dof + 1], out[n + dof + 2] = g0, g1, g2
    elif kind >= LIMIT_TWIST_LOWER:
        tw, g0, g1, g2 = twist(q, dof, lr[o + 2], lr[o + 3], lr[o + 4])
        sign = 1.0 if kind == LIMIT_TWIST_LOWER else -1.0
        d = sign * (tw - lr[o])
        out[n + dof], out[n + dof + 1], out[n + dof + 2] = sign * g0, sign * g1, sign * g2
    elif kind == LIMIT_LOWER:
        d = q[dof] - lr[o]
        out[n + dof] = 1.0
    else:
        d = lr[o] - q[dof]
        out[n + dof] = -1.0
    out[D + k] = d
    return d


@jit
def limit_hold(li, lr, q, out):
    """:meth:`core.limits.LimitSolver.hold` in place on ``q (nv,)``: the constraints at q,
    the projection (:func:`_project`) where one is outside its deadband, and the values
    ``d (c,)`` and gradients ``N (c, nv)`` at the final q into ``out`` as
    :func:`limit_constraints` leaves them. Returns 1 if q was projected, 0 if not, -1 when
    a twist limit is undefined (a swing of pi; q may then be partly projected)."""
    c, nv = li[LI_C], q.shape[0]
    _, (_, _, N, _, _, _, _, bb, _) = limit_offsets(c, nv)
    need = False
    for k in range(c):
        d = limit_row(li, lr, q, k, nv, N, bb, lr)
        if d != d:
            return -1
        need = need or d + lr[LR_HEADER + LR_PER * k + 1] < 0.0
    if need and _project(li, lr, q, nv):
        return -1
    for k in range(c):
        out[k] = lr[bb + k]
    for i in range(c * nv):
        out[c + i] = lr[N + i]
    return 1 if need else 0


@jit
def limit_constraints(li, lr, q, out):
    """Every constraint of the packed limit solver ``(li, lr)`` at ``q (nv,)``, as
    :meth:`core.limits.LimitSolver.evaluate`: the values ``d (c,)`` into ``out[:c]`` and the
    gradients ``N (c, nv)`` row by row after them (``out (c (1 + nv),)``). Returns False
    when a twist limit is undefined at q (a swing of pi)."""
    c, nv = li[LI_C], q.shape[0]
    for k in range(c):
        d = limit_row(li, lr, q, k, nv, c, 0, out)
        if d != d:
            return False
    return True


@jit
def _delassus(lr, li, nv, ne, IX, N, L, Y, W, dofs, nf):
    """For the constraints ``li[IX:IX + ne]``: the columns ``M^-1 N_e^T`` into ``Y`` (from the
    Cholesky factor at ``L``; zero on the locked coordinates ``dofs[nf:]`` when ``dofs`` is
    not None) and ``W = N_e M^-1 N_e^T`` (ne, ne) into ``W``."""
    for e in range(ne):                                  # column e of M^-1 N_e^T
        n, y = N + nv * li[IX + e], Y + nv * e
        for i in range(nv):
            x = lr[n + i]
            for k in range(i):
                x -= lr[L + nv * i + k] * lr[y + k]
            lr[y + i] = x / lr[L + nv * i + i]
        for i in range(nv - 1, -1, -1):
            x = lr[y + i]
            for k in range(i + 1, nv):
                x -= lr[L + nv * k + i] * lr[y + k]
            lr[y + i] = x / lr[L + nv * i + i]
        if dofs is not None:
            for t in range(nf, dofs.size):
                lr[y + dofs[t]] = 0.0
    for e in range(ne):
        n = N + nv * li[IX + e]
        a, b = _row_dofs(li, li[IX + e])
        for f in range(ne):
            x = 0.0
            y = Y + nv * f
            for i in range(a, b):
                x += lr[n + i] * lr[y + i]
            lr[W + ne * e + f] = x
