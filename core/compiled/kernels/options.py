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
with weak linkage, and the process's JIT resolves a weak symbol to the first definition it
holds. Left so, a kernel compiled in the process would call its callees' own libraries
(compiled, or loaded, just before it), while the same kernel loaded from the cache calls its
own copies, which LLVM optimized again inside the kernel's module (other inlining, other fused
multiply-adds), or another kernel's copies loaded before it: other last bits in a bake's first
frame, and after a few hundred limit-solver substeps other frames, depending on how the
kernels came and what the process ran before. :func:`_private_copies` renames the linked
copies in each optimized library of the core's kernels with a suffix of that library's own
(a digest of the symbols it exports), so that its machine code calls only its own copies,
which is the code its cache holds, however the kernel reached the process and whatever the
process ran before. The names change after LLVM optimized the library, so its
code is what it would be under the callees' names, and :func:`_shared_names` gives the
copies their names back in the module other kernels link in (where copies of one callee
merge into one). Relies on ``CPUCodeLibrary._optimize_final_module``, which numba runs once
per library between linking the callees in and making its machine code, and
``_get_module_for_linking`` (numba 0.62.1 and 0.68.1; tests/core/test_kernel_bits.py bakes
in a compiling and a loading process).
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
    """``CPUCodeLibrary._optimize_final_module`` (``optimize``) that then renames, in a library
    defining a function of the core, every linked-in function (linkage ``linkonce_odr``) with
    a suffix unique to the library, kept as ``library.private_suffix`` (module docstring,
    *Private copies*)."""
    @functools.wraps(optimize)
    def optimize_final_module(library):
        optimize(library)
        defined = [fn for fn in library._final_module.functions if not fn.is_declaration]
        exported = sorted(fn.name for fn in defined if fn.linkage == ll.Linkage.external)
        if any(name.startswith(_MANGLED_CORE) for name in exported):
            library.private_suffix = "." + hashlib.sha256(
                "\n".join(exported).encode()).hexdigest()[:16]
            for fn in defined:
                if fn.linkage == ll.Linkage.linkonce_odr:
                    fn.name += library.private_suffix
    return optimize_final_module


def _shared_names(get_module):
    """``CPUCodeLibrary._get_module_for_linking`` (``get_module``) whose module, a copy of a
    library :func:`_private_copies` renamed, has the callees' own names back."""
    @functools.wraps(get_module)
    def get_module_for_linking(library):
        module = get_module(library)
        suffix = getattr(library, "private_suffix", None)
        if suffix is not None and module is not library._final_module:
            for fn in module.functions:
                if fn.name.endswith(suffix):
                    fn.name = fn.name[:-len(suffix)]
        return module
    return get_module_for_linking


for _name, _wrap in (("_optimize_final_module", _private_copies),
                     ("_get_module_for_linking", _shared_names)):
    _method = getattr(codegen.CPUCodeLibrary, _name)
    setattr(codegen.CPUCodeLibrary, _name,                           # a reloaded module's too
            _wrap(getattr(_method, "__wrapped__", _method)))


OPTIONS = {"error_model": "numpy", "fastmath": {"contract"}}
jit = njit(cache=True, **OPTIONS)
inline = njit(cache=True, inline="always", **OPTIONS)
