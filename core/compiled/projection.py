"""The compiled twin of the conjugate gradients of :func:`core.maximal.solver.project`
(``method="cg"``), compared with the reference in ``tests/core/test_dense_projection.py``."""

import numpy as np

from . import kernels

__all__ = ["cg"]


def cg(A, b, x0, tol, maxiter, pre):
    """``spla.cg(A, b, x0, rtol=tol, atol=0, maxiter, M=pre)`` as one compiled kernel
    (:func:`core.compiled.kernels.cg`, the same iteration): ``(lam, iterations,
    converged)``."""
    m = b.size
    maxiter = 10 * m if maxiter is None else int(maxiter)
    x = np.zeros(m) if x0 is None else np.array(x0, dtype=float).reshape(m)
    dinv = np.ones(m) if pre is None else np.ascontiguousarray(pre.diagonal(), dtype=float)
    if isinstance(A, np.ndarray):       # a dense A as CSR arrays, every entry stored
        data, indices = np.ascontiguousarray(A, dtype=float).ravel(), np.tile(np.arange(m), m)
        indptr = np.arange(0, m * m + 1, m, dtype=np.int64)
    else:
        A = A.tocsr()
        data, indices, indptr = (np.ascontiguousarray(A.data, dtype=float), A.indices,
                                 A.indptr.astype(np.int64))
    it = kernels.cg(data, indices.astype(np.int64), indptr, dinv, b, x, maxiter,
                    tol * float(np.linalg.norm(b)), np.empty((4, m)))
    return x, int(it), it < maxiter
