"""numba kernel of the contact solver's projected Gauss-Seidel
(:meth:`core.contacts.solver.ContactSolver._pgs`, the numpy reference): the same sweeps over
the limit rows and the contacts' normal rows and friction discs, in the same order, with the
same stopping rule, without a Python call per row."""

from ..contacts.solver import _disc
from .kernels import _jit


#: :func:`core.contacts.solver._disc` compiled: the friction impulse on the disc
disc = _jit(_disc)


@_jit
def contact_pgs(W, b, lam, n_lim, mu, blocks, tangent, iterations, rtol):
    """Projected Gauss-Seidel in place on ``lam (m,)`` (warm start in it): rows ``[0,
    n_lim)`` unilateral, then per contact c (rows ``k = n_lim + 3 c``) its normal row and its
    tangent pair on the disc ``|lam_t| <= mu[c] lam_n`` (:data:`disc` with ``blocks[c] = (w1,
    w2, q00, q01, q10, q11)``, the eigen-decomposition of the pair's 2x2 block of W, and
    ``tangent[c] = (W_k+1,k+1, W_k+1,k+2, W_k+2,k+2, W_k+1,k, W_k+2,k)``); stops after a sweep
    that changes no impulse by more than ``rtol`` times the largest. Returns the sweeps
    taken."""
    m = b.shape[0]
    for it in range(iterations):
        change = 0.0
        for i in range(n_lim):
            r = b[i]
            for j in range(m):
                r += W[i, j] * lam[j]
            old = lam[i]
            new = max(0.0, old - r / W[i, i])
            change = max(change, abs(new - old))
            lam[i] = new
        for c in range(mu.shape[0]):
            k = n_lim + 3 * c
            r0, r1, r2 = b[k], b[k + 1], b[k + 2]
            for j in range(m):
                x = lam[j]
                r0 += W[k, j] * x
                r1 += W[k + 1, j] * x
                r2 += W[k + 2, j] * x
            old, t1, t2 = lam[k], lam[k + 1], lam[k + 2]
            new = max(0.0, old - r0 / W[k, k])
            dn = new - old
            a11, a12, a22, c1, c2 = (tangent[c, 0], tangent[c, 1], tangent[c, 2], tangent[c, 3],
                                     tangent[c, 4])
            u1, u2 = disc(blocks[c, 0], blocks[c, 1], blocks[c, 2], blocks[c, 3], blocks[c, 4],
                          blocks[c, 5], r1 + c1 * dn - a11 * t1 - a12 * t2,
                          r2 + c2 * dn - a12 * t1 - a22 * t2, mu[c] * new)
            lam[k], lam[k + 1], lam[k + 2] = new, u1, u2
            change = max(change, max(abs(dn), max(abs(u1 - t1), abs(u2 - t2))))
        size = 0.0
        for j in range(m):
            size = max(size, abs(lam[j]))
        if change <= rtol * size:
            return it + 1
    return iterations
