"""The numba options of every compiled kernel (:mod:`core.compiled`), in one place.

``jit``: cached on disk, numpy's error model (a division by zero gives inf/NaN, which the
statuses and the callers' finiteness checks catch, instead of a checked branch) and
floating-point contraction (``a * b + c`` as one fused multiply-add where the CPU has it);
``inline``: the same, inlined by numba into each caller (for the thin levels between
compiled calls and the small products in the recursions' loops, which LLVM would otherwise
call, returning their tuples through memory). ``OPTIONS`` are the options themselves, for
``numba.extending.overload``.
"""

from numba import njit

__all__ = ["OPTIONS", "jit", "inline"]

OPTIONS = {"error_model": "numpy", "fastmath": {"contract"}}
jit = njit(cache=True, **OPTIONS)
inline = njit(cache=True, inline="always", **OPTIONS)
