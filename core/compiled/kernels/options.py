"""The numba options of every compiled kernel (:mod:`core.compiled`), in one place, and where
numba caches them.

``jit``: cached on disk, numpy's error model (a division by zero gives inf/NaN, which the
statuses and the callers' finiteness checks catch, instead of a checked branch) and
floating-point contraction (``a * b + c`` as one fused multiply-add where the CPU has it);
``inline``: the same, inlined by numba into each caller (for the thin levels between
compiled calls and the small products in the recursions' loops, which LLVM would otherwise
call, returning their tuples through memory). ``OPTIONS`` are the options themselves, for
``numba.extending.overload``.

:class:`PackageLocator`, which this module puts first in numba's list of cache locators,
places the cache of every kernel of the core under ``NUMBA_CACHE_DIR/<the kernel's package>``
(e.g. ``.../core.compiled.kernels``) and stamps it with the SHA-256 of its source file's
bytes. numba's own locator names the folder by a hash of the source file's absolute path and
(numba 0.62) stamps it with the file's modification time, both of which an installation
changes; with this one a cache written where the core was built loads wherever the same
sources are installed under the same package name (:mod:`core.backend` explains the folder
above it and the CPU the kernels are compiled for). The package name is part of the folder
because a cached kernel imports its module by name when it loads. Relies on
``numba.core.caching.UserProvidedCacheLocator`` and ``CacheImpl._locator_classes`` (numba
0.62.1 and 0.68.1, the pinned versions; tests/core/test_backend_numba.py loads a cache from
a moved copy of the core).

Private copies. numba compiles each kernel into its own LLVM library and links into it a copy
of every compiled function it calls that LLVM did not inline, under the callee's own symbol
with weak linkage; the process's JIT resolves such a weak symbol to the first definition it
holds. A kernel compiled in the process therefore called the callee's own library (compiled,
or loaded, just before it), while the same kernel loaded from the cache called its own
copy, which LLVM had optimized again inside the kernel's module (other inlining, other fused
multiply-adds): the same bake gave other last bits, and after a few hundred limit-solver
substeps other frames, depending on whether its kernels were compiled in the process or
loaded. :func:`_private_copies` makes the linked copies in the libraries of the core's
kernels internal before LLVM optimizes them, so that every kernel calls only its own code,
which is the code its cache holds: the same bits whether it was compiled here or loaded, and
whatever the process ran before. Relies on ``CPUCodeLibrary._optimize_final_module``, which
numba runs once per library between linking the callees in and optimizing (numba 0.62.1
and 0.68.1; tests/core/test_kernel_bits.py bakes in a compiling and a loading process).
"""

import functools
import hashlib
import os

import llvmlite.binding as ll
from numba import njit
from numba.core import caching, codegen, config
from numba.core.itanium_mangler import mangle_identifier

__all__ = ["OPTIONS", "jit", "inline", "PackageLocator"]

#: the core's package (``core``, or ``bl_ext.<repository>.spline_joints.core`` in Blender)
CORE_PACKAGE = __name__.rpartition(".compiled.")[0]


@functools.lru_cache(maxsize=None)
def _source_hash(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


class PackageLocator(caching.UserProvidedCacheLocator):
    """numba's cache locator for the functions of :data:`CORE_PACKAGE`: folder
    ``NUMBA_CACHE_DIR/<module's package>``, stamp the source file's SHA-256 (module
    docstring); None (the next locator) for other functions or without ``NUMBA_CACHE_DIR``."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        self._cache_path = os.path.join(config.CACHE_DIR, py_func.__module__.rpartition(".")[0])

    def get_source_stamp(self):
        return _source_hash(self._py_file)

    @classmethod
    def from_function(cls, py_func, py_file):
        if not py_func.__module__.startswith(CORE_PACKAGE + "."):
            return None
        return super().from_function(py_func, py_file)


caching.CacheImpl._locator_classes[:] = [PackageLocator] + [      # a reloaded module's too
    c for c in caching.CacheImpl._locator_classes if c.__module__ != __name__]

#: how the LLVM names of the core's compiled functions begin (numba's mangling of the module
#: path), by which :func:`_private_copies` knows the core's libraries
_MANGLED_CORE = "_Z" + mangle_identifier(CORE_PACKAGE + "._")[:-len("1_E")]


def _private_copies(optimize):
    """``CPUCodeLibrary._optimize_final_module`` (``optimize``) that first gives, in a library
    defining a function of the core, every linked-in function (linkage ``linkonce_odr``)
    internal linkage (module docstring, *Private copies*)."""
    @functools.wraps(optimize)
    def optimize_final_module(library):
        module = library._final_module
        defined = [fn for fn in module.functions if not fn.is_declaration]
        if any(fn.name.startswith(_MANGLED_CORE) for fn in defined):
            for fn in defined:
                if fn.linkage == ll.Linkage.linkonce_odr:
                    fn.linkage = ll.Linkage.internal
        optimize(library)
    return optimize_final_module


codegen.CPUCodeLibrary._optimize_final_module = _private_copies(    # a reloaded module's too
    getattr(codegen.CPUCodeLibrary._optimize_final_module, "__wrapped__",
            codegen.CPUCodeLibrary._optimize_final_module))

OPTIONS = {"error_model": "numpy", "fastmath": {"contract"}}
jit = njit(cache=True, **OPTIONS)
inline = njit(cache=True, inline="always", **OPTIONS)
