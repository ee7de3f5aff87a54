"""Which implementation runs the tree algorithms: ``"numpy"`` (the reference) or ``"numba"``
(compiled kernels, :mod:`core.compiled`).

The choice, in order of precedence:

* :func:`use` (``core.backend.use("numpy")``), for the rest of the process;
* the environment variable ``SPLINE_JOINTS_BACKEND=numpy|numba``, read at the first call of
  :func:`active`;
* otherwise ``"numba"`` when numba imports, else ``"numpy"`` silently.

Where numba cannot be imported, ``"numba"`` from the environment falls back to ``"numpy"``
(with a RuntimeWarning naming the import error) and :func:`use` raises InvalidInputError: the
core always works, slower, without numba.

The compiled kernels are cached on disk (numba's ``cache=True``): the first use in a fresh
environment compiles them (tens of seconds), later processes load them. numba writes the
cache beside the source files, or under ``NUMBA_CACHE_DIR`` when that is set; where the core
is installed read-only (a Blender extension), the caller points it at a writable folder
before the first compile with :func:`set_cache_dir` (the add-on passes Blender's user cache
folder, ``bpy.utils.user_resource("CACHE")``).

The algorithms read the module attribute :data:`kernels` (None on the numpy backend) on
every call; :func:`active` resolves the choice the first time.
"""

import os
import warnings

from .errors import InvalidInputError

__all__ = ["BACKENDS", "ENV_VAR", "use", "active", "available", "set_cache_dir", "kernels"]

BACKENDS = ("numpy", "numba")
#: environment variable naming the backend
ENV_VAR = "SPLINE_JOINTS_BACKEND"

#: the compiled kernel module :mod:`core.compiled.kernels` when the numba backend is active,
#: else None (resolved by :func:`active`)
kernels = None
_name = None            # the active backend's name once resolved
_import_error = None    # why numba could not be imported (None: not tried or it imports)


def _load_kernels():
    """The kernel module, or None with the reason kept in ``_import_error``."""
    global _import_error
    try:
        from .compiled import kernels as mod
    except ImportError as err:        # numba (or llvmlite) missing or broken
        _import_error = err
        return None
    _import_error = None
    return mod


def available():
    """True if the numba backend can be used here (numba imports)."""
    if kernels is not None:
        return True
    return _load_kernels() is not None


def _set(name, mod):
    global _name, kernels
    _name, kernels = name, mod


def use(name):
    """Select the backend ``"numpy"`` or ``"numba"`` for the rest of the process; returns
    the previous one. Raises InvalidInputError for another name, or for ``"numba"`` where
    numba cannot be imported."""
    if name not in BACKENDS:
        raise InvalidInputError(f"backend must be one of {BACKENDS}, got {name!r}")
    previous = active()
    if name == "numpy":
        _set("numpy", None)
        return previous
    mod = kernels or _load_kernels()
    if mod is None:
        raise InvalidInputError(f"the numba backend needs numba, which does not import here "
                                f"({_import_error}); install numba==0.68.1 or use 'numpy'")
    _set("numba", mod)
    return previous


def active():
    """The active backend's name (resolving the environment variable and numba's presence
    on the first call)."""
    if _name is not None:
        return _name
    wanted = os.environ.get(ENV_VAR, "").strip().lower() or None
    if wanted is not None and wanted not in BACKENDS:
        raise InvalidInputError(f"{ENV_VAR} must be one of {BACKENDS}, got {wanted!r}")
    if wanted == "numpy":
        _set("numpy", None)
        return _name
    mod = _load_kernels()
    if mod is None:
        if wanted == "numba":
            warnings.warn(f"{ENV_VAR}=numba but numba does not import ({_import_error}); "
                          "using the numpy backend", RuntimeWarning, stacklevel=2)
        _set("numpy", None)
    else:
        _set("numba", mod)
    return _name


def set_cache_dir(path):
    """Write (and read) the compiled kernels' cache under ``path`` (a writable folder,
    created if needed), through ``NUMBA_CACHE_DIR``. numba binds each kernel to its cache
    folder when the kernel module is imported, so this must come before the first
    algorithm call on the numba backend (and before :func:`use`/:func:`active` load the
    kernels); raises InvalidInputError after that unless ``path`` is already the folder."""
    import sys
    path = os.path.abspath(str(path))
    if __package__ + ".compiled.kernels" in sys.modules:
        from numba.core import config
        if path != os.path.abspath(config.CACHE_DIR or ""):
            raise InvalidInputError("set_cache_dir must be called before the compiled kernels "
                                    "are loaded (the first algorithm call on the numba backend)")
        return
    os.makedirs(path, exist_ok=True)
    os.environ["NUMBA_CACHE_DIR"] = path
    if "numba" in sys.modules:                 # numba read its settings at import: re-read
        from numba.core import config
        config.reload_config()
