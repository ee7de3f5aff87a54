"""numba kernels of the contact solver (:class:`core.contacts.solver.ContactSolver`, whose
numpy code is the reference):

* :func:`contact_rows`: the contacts' frames and Jacobian rows from the compiled
  kinematics' world poses and body-frame joint columns
  (:func:`core.compiled.dynamics.energies`), as ``tangent_basis`` and ``_rows`` give them
  from ``core.kinematics.update_kinematics``;
* :func:`contact_solve`: the impulses of a contact step (rows, Delassus matrix, Gauss-Seidel);
* :func:`fastest_point`: the bound on the shapes' point speeds;
* :func:`contact_pgs`: the projected Gauss-Seidel of ``ContactSolver._pgs``, the same sweeps
  over the limit rows and the contacts' normal rows and friction discs, in the same order,
  with the same stopping rule, without a Python call per row.

Mirrors (reference -> twin; parity test in ``tests/core/test_contacts.py``):

* ``tangent_basis`` and ``ContactSolver._rows`` -> :func:`contact_rows`:
  ``::test_the_compiled_contact_rows_equal_the_numpy_ones``;
* ``ContactSolver.impulses`` -> :func:`contact_solve`:
  ``::test_the_compiled_contact_impulses_equal_the_numpy_ones``;
* ``ContactSolver._speed_bound`` -> :func:`fastest_point`:
  ``::test_the_point_speed_bound_is_the_same_on_both_backends``;
* ``ContactSolver._pgs`` -> :func:`contact_pgs`:
  ``::test_the_compiled_contact_sweeps_equal_the_numpy_ones``.
"""

import math

import numpy as np

from ..contacts import rules
from ..contacts.rules import FREE_ROW_RTOL
from .kernels.dynamics import cholesky, crba_recursion
from .kernels.kinematics import s_row
from .kernels.options import jit
from .layout import H_LSH, H_M, HEADER, I_N, I_PARENT, I_Q, NI


#: :func:`core.contacts.rules.disc` compiled: the friction impulse on the disc
disc = jit(rules.disc)


@jit
def contact_pgs(W, b, lam, n_lim, mu, blocks, tangent, iterations, rtol):
    """Projected Gauss-Seidel in place on ``lam (m,)`` (warm start in it): rows ``[0,
    n_lim)`` unilateral, then per contact c (rows ``k = n_lim + 3 c``) its normal row and its
    tangent pair on the disc ``|lam_t| <= mu[c] lam_n`` (:data:`disc` with ``blocks[c] = (w1,
    w2, q00, q01, q10, q11)``, the eigen-decomposition of the pair's 2x2 block of W, and
    ``tangent[c] = (W_k+1,k+1, W_k+1,k+2, W_k+2,k+2, W_k+1,k, W_k+2,k)``); a row or friction
    direction whose diagonal or block eigenvalue is at most
    :data:`core.contacts.rules.FREE_ROW_RTOL` of W's largest diagonal (no joint moves it)
    keeps a zero impulse; stops after a sweep that changes no impulse by more than ``rtol``
    times the largest. Returns the sweeps taken.

    The rows' residuals ``b + W lam`` are kept in a vector that each change of impulses
    updates (W symmetric: its row k for its column k): one pass over the m residuals per limit
    row or contact whose impulses change (an inner loop without a reduction, which LLVM
    vectorizes), none for those that stay. The largest impulse of the stopping rule is taken
    over the values the sweep sets (``m = n_lim + 3 len(mu)``: it sets every row once)."""
    m = b.shape[0]
    r = np.empty(m)
    floor = 0.0
    for i in range(m):
        r[i] = b[i]
        floor = max(floor, W[i, i])
    floor *= FREE_ROW_RTOL
    for j in range(m):
        x = lam[j]
        if x != 0.0:
            for i in range(m):
                r[i] += W[j, i] * x
    for it in range(iterations):
        change = size = 0.0
        for i in range(n_lim):
            old = lam[i]
            new = max(0.0, old - r[i] / W[i, i]) if W[i, i] > floor else 0.0
            d = new - old
            change = max(change, abs(d))
            size = max(size, new)
            lam[i] = new
            if d != 0.0:
                for j in range(m):
                    r[j] += W[i, j] * d
        for c in range(mu.shape[0]):
            k = n_lim + 3 * c
            old, t1, t2 = lam[k], lam[k + 1], lam[k + 2]
            new = max(0.0, old - r[k] / W[k, k]) if W[k, k] > floor else 0.0
            dn = new - old
            a11, a12, a22, c1, c2 = (tangent[c, 0], tangent[c, 1], tangent[c, 2], tangent[c, 3],
                                     tangent[c, 4])
            w1 = blocks[c, 0] if blocks[c, 0] > floor else np.inf
            w2 = blocks[c, 1] if blocks[c, 1] > floor else np.inf
            u1, u2 = disc(w1, w2, blocks[c, 2], blocks[c, 3], blocks[c, 4],
                          blocks[c, 5], r[k + 1] + c1 * dn - a11 * t1 - a12 * t2,
                          r[k + 2] + c2 * dn - a12 * t1 - a22 * t2, mu[c] * new)
            lam[k], lam[k + 1], lam[k + 2] = new, u1, u2
            d1, d2 = u1 - t1, u2 - t2
            change = max(change, max(abs(dn), max(abs(d1), abs(d2))))
            size = max(size, max(new, max(abs(u1), abs(u2))))
            if dn != 0.0 or d1 != 0.0 or d2 != 0.0:
                for j in range(m):
                    r[j] += W[k, j] * dn + W[k + 1, j] * d1 + W[k + 2, j] * d2
        if change <= rtol * size:
            return it + 1
    return iterations


@jit
def _point_rows(ints, buf, body, c, P, D, J, r0, sign):
    """Add ``sign`` times the rows of contact c's point ``P[c]`` fixed to ``body`` along its
    frame ``D[c]`` (rows ``r0 + 3 c + d``): per coordinate j of an ancestor joint, ``D[c, d]
    . (w x P + v_o)`` for the coordinate's world twist ``[w; v_o] = [R s_w; R s_v + p x w]``
    (``(R, p)`` the joint's body's world pose, ``[s_w; s_v]`` its body-frame column)."""
    x0, x1, x2 = P[c, 0], P[c, 1], P[c, 2]
    oL = ints[H_LSH]
    k = body
    while k >= 0:
        row = HEADER + NI * k
        o = oL + 28 * k
        for j in range(ints[row + I_N]):
            s = s_row(ints, k, j)
            a0, a1, a2 = buf[s], buf[s + 1], buf[s + 2]
            b0, b1, b2 = buf[s + 3], buf[s + 4], buf[s + 5]
            w0 = buf[o] * a0 + buf[o + 1] * a1 + buf[o + 2] * a2
            w1 = buf[o + 4] * a0 + buf[o + 5] * a1 + buf[o + 6] * a2
            w2 = buf[o + 8] * a0 + buf[o + 9] * a1 + buf[o + 10] * a2
            p0, p1, p2 = buf[o + 3], buf[o + 7], buf[o + 11]
            u0 = buf[o] * b0 + buf[o + 1] * b1 + buf[o + 2] * b2 + p1 * w2 - p2 * w1 \
                + w1 * x2 - w2 * x1
            u1 = buf[o + 4] * b0 + buf[o + 5] * b1 + buf[o + 6] * b2 + p2 * w0 - p0 * w2 \
                + w2 * x0 - w0 * x2
            u2 = buf[o + 8] * b0 + buf[o + 9] * b1 + buf[o + 10] * b2 + p0 * w1 - p1 * w0 \
                + w0 * x1 - w1 * x0
            col = ints[row + I_Q] + j
            for d in range(3):
                J[r0 + 3 * c + d, col] += sign * (D[c, d, 0] * u0 + D[c, d, 1] * u1 +
                                                  D[c, d, 2] * u2)
        k = ints[row + I_PARENT]


@jit
def contact_rows(ints, buf, a_body, b_body, P, n, D, J, r0):
    """The contacts' frames and rows: per contact c, ``D[c] = (n, t1, t2)`` with the
    tangents of ``core.contacts.solver.tangent_basis`` (t1 across the world axis least
    aligned with n), and its three rows ``J[r0 + 3 c: r0 + 3 c + 3]`` (zeroed first) of the
    relative velocity of its point ``P[c]`` on body ``b_body[c]`` to the same point on body
    ``a_body[c]`` (-1: the world) along ``D[c]``. Needs the compiled kinematics at the
    substep's pose in ``buf``."""
    nv = J.shape[1]
    for c in range(a_body.shape[0]):
        n0, n1, n2 = n[c, 0], n[c, 1], n[c, 2]
        e0, e1, e2 = abs(n0), abs(n1), abs(n2)
        if e0 <= e1 and e0 <= e2:                       # n x e_k, e_k least aligned with n
            t0, t1, t2 = 0.0, n2, -n1
        elif e1 <= e2:
            t0, t1, t2 = -n2, 0.0, n0
        else:
            t0, t1, t2 = n1, -n0, 0.0
        size = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
        t0, t1, t2 = t0 / size, t1 / size, t2 / size
        D[c, 0, 0], D[c, 0, 1], D[c, 0, 2] = n0, n1, n2
        D[c, 1, 0], D[c, 1, 1], D[c, 1, 2] = t0, t1, t2
        D[c, 2, 0], D[c, 2, 1], D[c, 2, 2] = n1 * t2 - n2 * t1, n2 * t0 - n0 * t2, \
            n0 * t1 - n1 * t0
        for d in range(3):
            for i in range(nv):
                J[r0 + 3 * c + d, i] = 0.0
        _point_rows(ints, buf, b_body[c], c, P, D, J, r0, 1.0)
        _point_rows(ints, buf, a_body[c], c, P, D, J, r0, -1.0)


@jit
def _eigh2(a, b, c, out):
    """Eigen-decomposition of the symmetric ``[[a, b], [b, c]]`` into ``out (6,)``: the two
    eigenvalues, then the eigenvector matrix row-major (columns the eigenvectors), by one
    Jacobi rotation (Golub and Van Loan, 8.5.2: ``tan`` of the smaller rotation angle)."""
    if b == 0.0:
        t = 0.0
    else:
        theta = (c - a) / (2.0 * b)
        t = 1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0))
        if theta < 0.0:
            t = -t
    cs = 1.0 / math.sqrt(t * t + 1.0)
    sn = t * cs
    out[0], out[1] = a - t * b, c + t * b
    out[2], out[3], out[4], out[5] = cs, sn, -sn, cs


@jit
def delassus_rows(F, J, Zt, W):
    """For the Cholesky factor ``F (nv, nv)`` of M (L in its lower half, as
    :func:`contact_solve` leaves it) and rows ``J (m, nv)``: ``Zt = L^-1 J^T (nv, m)`` and
    ``W = J M^-1 J^T = Zt^T Zt (m, m)``. The inner loops run along contiguous rows without a
    reduction (loops LLVM vectorizes), each element's terms added in the order of the
    textbook loops: Zt's rows from the top (four earlier rows per pass over a row), W's upper
    half by rows (four rows of Zt per pass), then mirrored."""
    nv, m = J.shape[1], J.shape[0]
    for i in range(nv):                                  # Zt = L^-1 J^T
        t = Zt[i]
        for r in range(m):
            t[r] = J[r, i]
        k = 0
        while k + 4 <= i:
            y0, y1, y2, y3 = F[i, k], F[i, k + 1], F[i, k + 2], F[i, k + 3]
            z0, z1, z2, z3 = Zt[k], Zt[k + 1], Zt[k + 2], Zt[k + 3]
            for r in range(m):
                t[r] = (((t[r] - y0 * z0[r]) - y1 * z1[r]) - y2 * z2[r]) - y3 * z3[r]
            k += 4
        for l in range(k, i):
            y, z = F[i, l], Zt[l]
            for r in range(m):
                t[r] -= y * z[r]
        y = F[i, i]
        for r in range(m):
            t[r] /= y
    for r in range(m):                                   # W's upper half, then mirrored
        n, t = m - r, W[r, r:]
        for col in range(n):
            t[col] = 0.0
        i = 0
        while i + 4 <= nv:
            y0, y1, y2, y3 = Zt[i, r], Zt[i + 1, r], Zt[i + 2, r], Zt[i + 3, r]
            z0, z1, z2, z3 = Zt[i, r:], Zt[i + 1, r:], Zt[i + 2, r:], Zt[i + 3, r:]
            for col in range(n):
                t[col] = (((t[col] + y0 * z0[col]) + y1 * z1[col]) + y2 * z2[col]) + \
                    y3 * z3[col]
            i += 4
        for l in range(i, nv):
            y, z = Zt[l, r], Zt[l, r:]
            for col in range(n):
                t[col] += y * z[col]
        for col in range(r + 1, m):
            W[col, r] = W[r, col]


@jit
def impulse_velocity(F, Zt, lam, dv):
    """``dv = M^-1 J^T lam = L^-T Zt lam`` into ``dv (nv,)`` for :func:`delassus_rows`'
    ``Zt (nv, m)`` and the factor ``F`` (L^T read from its upper half, as :func:`contact_solve`
    leaves it): four rows of Zt per pass, then the back substitution."""
    nv, m = Zt.shape[0], Zt.shape[1]
    i = 0
    while i + 4 <= nv:
        x0 = x1 = x2 = x3 = 0.0
        for r in range(m):
            y = lam[r]
            x0 += Zt[i, r] * y
            x1 += Zt[i + 1, r] * y
            x2 += Zt[i + 2, r] * y
            x3 += Zt[i + 3, r] * y
        dv[i], dv[i + 1], dv[i + 2], dv[i + 3] = x0, x1, x2, x3
        i += 4
    for l in range(i, nv):
        x = 0.0
        for r in range(m):
            x += Zt[l, r] * lam[r]
        dv[l] = x
    for i in range(nv - 1, -1, -1):
        x = dv[i]
        for k in range(i + 1, nv):
            x -= F[i, k] * dv[k]
        dv[i] = x / F[i, i]


@jit
def contact_solve(ints, reals, buf, q, v, v1, step, a_body, b_body, P, n, s, mu, rest,
                  world_v, h, c_h, bounce_threshold, nl, J, b, lam, D, M, factored, Zt, W,
                  blocks, tangent, dv, gap, iterations, rtol):
    """The impulses of a contact step (``ContactSolver.apply``'s steps 2 and 3 on the
    numba backend): the mass matrix ``M (nv, nv)`` at q (its lower Cholesky factor L left
    in its lower half, L^T in its upper half, by :func:`cholesky`; with ``factored``, M
    holds that factor and the buffer M at q already, as :func:`dense_aba` leaves them) and
    the compiled kinematics at q in ``buf``;
    the contacts' frames ``D`` and rows (:func:`contact_rows`) into ``J`` after the ``nl``
    limit rows (given with their ``b``); the contacts' right-hand sides ``b`` (speculative
    and bounce targets on the normals, as ``apply`` forms them, ``world_v (c, 3)`` the world
    side's point velocities), the end gaps ``gap (c,)`` without impulses; ``Zt = L^-1 J^T
    (nv, m)``, ``W = J M^-1 J^T = Zt^T Zt``, the friction blocks' eigen-decompositions and
    couplings, :func:`contact_pgs` on ``lam`` (warm start in it) and ``dv = L^-T Zt lam``.
    Returns the kinetic energy the impulses change, or NaN if M is not positive definite
    (nothing after the factorization is computed).

    Zt and W by :func:`delassus_rows`, dv by :func:`impulse_velocity`."""
    nv, m, nc = v.shape[0], b.shape[0], a_body.shape[0]
    oM = ints[H_M]
    if not factored:
        crba_recursion(ints, reals, buf, q)
        for i in range(nv):
            for j in range(nv):
                M[i, j] = buf[oM + nv * i + j]
    contact_rows(ints, buf, a_body, b_body, P, n, D, J, nl)
    for c in range(nc):
        k = nl + 3 * c
        w0, w1, w2 = world_v[c, 0], world_v[c, 1], world_v[c, 2]
        # end rates: the bias -D world_v (the world side's motion) plus J v1
        un = -(D[c, 0, 0] * w0 + D[c, 0, 1] * w1 + D[c, 0, 2] * w2)
        ut1 = -(D[c, 1, 0] * w0 + D[c, 1, 1] * w1 + D[c, 1, 2] * w2)
        ut2 = -(D[c, 2, 0] * w0 + D[c, 2, 1] * w1 + D[c, 2, 2] * w2)
        bias_n, u0, moved = un, un, 0.0
        for i in range(nv):
            un += J[k, i] * v1[i]
            ut1 += J[k + 1, i] * v1[i]
            ut2 += J[k + 2, i] * v1[i]
            u0 += J[k, i] * v[i]
            moved += J[k, i] * step[i]
        gap[c] = s[c] + moved + h * bias_n
        target = min(un - (max(s[c], 0.0) + gap[c] - s[c]) / c_h, 0.0)
        if rest[c] > 0.0 and u0 < -bounce_threshold and gap[c] <= 0.0:
            target = max(target, -rest[c] * u0 + un - u0)
        b[k], b[k + 1], b[k + 2] = un - target, ut1, ut2
    if not (factored or cholesky(M)):
        return math.nan
    delassus_rows(M, J, Zt, W)
    for c in range(nc):
        k = nl + 3 * c
        _eigh2(W[k + 1, k + 1], W[k + 1, k + 2], W[k + 2, k + 2], blocks[c])
        tangent[c, 0], tangent[c, 1], tangent[c, 2] = W[k + 1, k + 1], W[k + 1, k + 2], \
            W[k + 2, k + 2]
        tangent[c, 3], tangent[c, 4] = W[k + 1, k], W[k + 2, k]
    contact_pgs(W, b, lam, nl, mu, blocks, tangent, iterations, rtol)
    impulse_velocity(M, Zt, lam, dv)
    kinetic = 0.0
    for i in range(nv):                     # (v1 + dv)^T M (v1 + dv) - v1^T M v1, M's rows
        x = 0.0
        for j in range(nv):
            x += buf[oM + nv * i + j] * (2.0 * v1[j] + dv[j])
        kinetic += dv[i] * x
    return 0.5 * kinetic


@jit
def fastest_point(buf, at, first, extent):
    """``ContactSolver._speed_bound`` from the compiled kinematics' body-frame velocities
    ``[w; v_o]`` at ``buf[at[k]:at[k] + 6]`` of each shape k's body: the largest ``|v_o + w x
    c| + |w| extent`` over the shapes (c the shape's first core vertex ``first[k]``)."""
    top = 0.0
    for k in range(at.shape[0]):
        o = at[k]
        w0, w1, w2 = buf[o], buf[o + 1], buf[o + 2]
        c0, c1, c2 = first[k, 0], first[k, 1], first[k, 2]
        u0 = buf[o + 3] + w1 * c2 - w2 * c1
        u1 = buf[o + 4] + w2 * c0 - w0 * c2
        u2 = buf[o + 5] + w0 * c1 - w1 * c0
        top = max(top, math.sqrt(u0 * u0 + u1 * u1 + u2 * u2) +
                  math.sqrt(w0 * w0 + w1 * w1 + w2 * w2) * extent[k])
    return top
