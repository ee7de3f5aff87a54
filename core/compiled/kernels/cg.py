"""numba twin of the conjugate gradients of the maximal-coordinate projection
(:func:`core.maximal.solver.project`, ``method="cg"``).

Mirrors (reference -> twin; parity test):

* ``scipy.sparse.linalg.cg`` with the Jacobi preconditioner, as ``maximal.solver.project``
  calls it -> :func:`cg`:
  ``tests/core/test_backend_numba.py::test_compiled_cg_is_scipys_iteration``.
"""

import math

from .options import jit

__all__ = ["cg"]


@jit
def _csr_matvec(data, indices, indptr, x, out):
    for i in range(indptr.size - 1):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * x[indices[k]]
        out[i] = acc


@jit
def cg(data, indices, indptr, dinv, b, x, maxiter, atol, work):
    """Jacobi-preconditioned conjugate gradients on the CSR matrix ``(data, indices,
    indptr)`` from ``x`` (in place; zeros or an initial guess), the steps of
    ``scipy.sparse.linalg.cg`` (stop when ``|r| < atol`` before an iteration, ``z = dinv
    r``); ``work (4, m)`` scratch. Returns the iterations completed; ``maxiter`` means not
    converged."""
    m = b.size
    r, z, p, q = work[0], work[1], work[2], work[3]
    nonzero = False
    for i in range(m):
        nonzero = nonzero or x[i] != 0.0
    if nonzero:
        _csr_matvec(data, indices, indptr, x, q)
        for i in range(m):
            r[i] = b[i] - q[i]
    else:
        for i in range(m):
            r[i] = b[i]
    rho_prev = 1.0
    for it in range(maxiter):
        rr = 0.0
        for i in range(m):
            rr += r[i] * r[i]
        if math.sqrt(rr) < atol:
            return it
        rho = 0.0
        for i in range(m):
            z[i] = dinv[i] * r[i]
            rho += r[i] * z[i]
        if it > 0:
            beta = rho / rho_prev
            for i in range(m):
                p[i] = p[i] * beta + z[i]
        else:
            for i in range(m):
                p[i] = z[i]
        _csr_matvec(data, indices, indptr, p, q)
        pq = 0.0
        for i in range(m):
            pq += p[i] * q[i]
        alpha = rho / pq
        for i in range(m):
            x[i] += alpha * p[i]
            r[i] -= alpha * q[i]
        rho_prev = rho
    return maxiter
