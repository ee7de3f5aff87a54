"""The compiled twins of :class:`core.limits.LimitSolver`'s constraint evaluation, position
hold and projected Gauss-Seidel (:meth:`~core.limits.LimitSolver.evaluate`,
:meth:`~core.limits.LimitSolver.hold`, ``LimitSolver._pgs``), on the solver's packed arrays
``kernel_arrays``; compared with the reference in ``tests/core/test_limits.py`` and
``tests/core/test_backend_numba.py``."""

import numpy as np

from . import kernels
from .layout import PGS_RTOL

__all__ = ["constraints", "hold", "pgs"]


def constraints(solver, q):
    """``(d (c,), N (c, nv))`` of every constraint of ``solver`` (``compiled``) at ``q``
    (:func:`core.compiled.kernels.limit_constraints`), or None where a twist limit is
    undefined (the reference then raises)."""
    c, nv = solver.n_constraints, solver.model.nv
    out = np.empty(c * (1 + nv))
    li, lr = solver.kernel_arrays
    if kernels.limit_constraints(li, lr, np.ascontiguousarray(q, float), out):
        return out[:c], out[c:].reshape(c, nv)
    return None


def hold(solver, q):
    """``(q', d, N)`` of :meth:`core.limits.LimitSolver.hold` in one kernel call
    (:func:`core.compiled.kernels.limit_hold`; ``q`` itself where nothing moved), or None
    where the kernel declines."""
    c, nv = solver.n_constraints, solver.model.nv
    out, held = np.empty(c * (1 + nv)), np.array(q, dtype=float)
    status = kernels.limit_hold(*solver.kernel_arrays, held, out)
    if status < 0:
        return None
    return q if status == 0 else held, out[:c], out[c:].reshape(c, nv)


def pgs(W, b, iterations):
    """``lambda >= 0`` complementary to ``W lambda + b >= 0`` by at most ``iterations``
    projected Gauss-Seidel sweeps (:func:`core.compiled.kernels.pgs`)."""
    lam = np.zeros(len(b))
    kernels.pgs(W, b, lam, iterations, PGS_RTOL)
    return lam
