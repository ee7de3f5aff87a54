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
environment compiles those it needs (about 15 s of CPU for an aba and a mechanism's steps,
about a minute for every path), later processes load them (a fraction of a second).
The cache lives in a folder named by a digest of the core's sources
(:func:`source_digest`), so an edited or upgraded core never loads kernels compiled from
other sources: under ``core/compiled/__pycache__/numba/`` by default, or under the folder
given to :func:`set_cache_dir` (where the core is installed read-only or replaced on upgrade:
the add-on passes its user folder, ``bpy.utils.extension_path_user(...)/numba_cache``), or
under ``NUMBA_CACHE_DIR`` exactly as the caller sets it (the caller then keeps it fresh).
Inside that folder each kernel's cache lies under its package's name
(:class:`core.compiled.kernels.options.PackageLocator`), not under a hash of the install path
as numba's default has it, so a cache built from the same sources elsewhere loads here: the
extension zip ships one, which :func:`set_cache_dir` copies in (its ``shipped``), compiled
for the CPU :func:`set_cpu` names (numba compiles for this machine's CPU unless told).
:func:`watch_compiles` reports the compiles as they happen (for a progress message) and
:func:`core.warm_up.warm_up` compiles, or loads, the kernels of every algorithm at a moment
of the caller's choosing.

The boundary. This is the one module that imports :mod:`core.compiled`. The reference
modules reach compiled code only through :data:`twins`, a :class:`Twins` table holding the
compiled twin of each of their public operations (None on the numpy backend): an
operation reads its entry once, where it starts (``twin = backend.twins.aba``), and runs
the twin instead of its own code when there is one; the integrator and the contact solver
read theirs when they are made and keep the compiled stepper the entry makes for them.
:data:`twins` is resolved on first access (:func:`active`).
"""

import os
import warnings
from dataclasses import dataclass

from .errors import InvalidInputError

__all__ = ["BACKENDS", "ENV_VAR", "PORTABLE_CPU", "APPLE_CPU", "Twins", "use", "active", "available",
           "set_cache_dir", "portable_cpu", "set_cpu", "source_digest", "watch_compiles",
           "kernels", "twins"]

BACKENDS = ("numpy", "numba")
#: environment variable naming the backend
ENV_VAR = "SPLINE_JOINTS_BACKEND"
#: the CPU level (LLVM's name) the add-on compiles the kernels for on every x86-64 machine
#: that has it (:func:`portable_cpu`, :func:`set_cpu`), and the extension zip's shipped cache
#: is compiled for: AVX2 and FMA (Intel since 2013, AMD since 2015). Against this machine's
#: own CPU its dynamics rows of scripts/bench.py took 0.98-1.08x the time; ``generic``
#: x86-64 (SSE2, no FMA), the fallback, up to 1.23x.
PORTABLE_CPU = "x86-64-v3"
#: the CPU level (LLVM's name) the add-on compiles the kernels for on a Mac with Apple silicon:
#: the first of them, whose features every later one has
APPLE_CPU = "apple-m1"
#: LLVM's names of the features :data:`PORTABLE_CPU` requires
_PORTABLE_FEATURES = ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave",
                      "cx16", "popcnt", "sahf", "sse3", "ssse3", "sse4.1", "sse4.2")



@dataclass(frozen=True, slots=True)
class Twins:
    """The compiled twin of each public operation of the reference modules (the functions
    of :mod:`core.compiled.twins`), or None where the reference runs: every entry on the
    numpy backend. Entries named after a function are called with that function's checked
    arguments and return its result; ``integrator`` and ``contact_solver`` make, from a new
    :class:`core.integrators.Integrator` or :class:`core.contacts.ContactSolver`, its
    compiled stepper (or None when nothing of it compiles)."""

    aba: object = None
    rnea: object = None
    nonlinear_effects: object = None
    crba: object = None
    crba_and_nle: object = None
    kinetic_energy: object = None
    potential_energy: object = None
    mechanical_energy: object = None
    compute_joint_jacobians: object = None
    limit_constraints: object = None
    limit_hold: object = None
    limit_pgs: object = None
    integrator: object = None
    contact_solver: object = None
    skeleton_accelerations: object = None
    skeleton_step: object = None
    project_cg: object = None
    point_path_forces: object = None
    activation_steps: object = None


_NO_TWINS = Twins()

#: the compiled kernel module :mod:`core.compiled.kernels` when the numba backend is active,
#: else None (resolved by :func:`active`)
kernels = None
_twins = None           # the numba backend's Twins, once the compiled modules are loaded
_name = None            # the active backend's name once resolved
_import_error = None    # why numba could not be imported (None: not tried or it imports)
_watchers = []          # watch_compiles callbacks
_listener = None        # the numba event listener calling them, once installed


def source_digest():
    """16 hex digits of the SHA-256 of every ``.py`` file of the core (paths and bytes):
    the compiled kernels' cache folder is named by it, because numba checks only the
    source file of each cached function, not the files of the functions it compiles in, so
    a cache written by other sources could otherwise be loaded after an edit or upgrade."""
    import hashlib

    root = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            full = os.path.join(folder, name)
            h.update(os.path.relpath(full, root).encode())
            with open(full, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()[:16]


def _cache_folder(base, digest=None, shipped=None):
    """``base/<digest>`` (default :func:`source_digest`), created; sibling folders of other
    digests are removed (caches of sources no longer installed). Where it does not exist yet
    and ``shipped/<digest>`` does, it starts as a copy of that (copied into a temporary
    sibling, renamed into place; a process that loses the race keeps the winner's)."""
    import re
    import shutil

    digest = digest or source_digest()
    os.makedirs(base, exist_ok=True)
    for name in os.listdir(base):
        if name != digest and re.fullmatch(r"[0-9a-f]{16}", name):
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    folder = os.path.join(base, digest)
    seed = shipped and os.path.join(shipped, digest)
    if seed and os.path.isdir(seed) and not os.path.exists(folder):
        tmp = os.path.join(base, f".{digest}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(seed, tmp)
        try:
            os.rename(tmp, folder)
        except OSError:                     # another process put its copy there first
            shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(folder, exist_ok=True)
    return folder


def _point_numba_at(folder):
    os.environ["NUMBA_CACHE_DIR"] = folder
    _reload_numba_config()


def _reload_numba_config():
    """numba reads its environment variables when it is imported: re-read them if it is."""
    import sys
    if sys.modules.get("numba") is not None:
        from numba.core import config
        config.reload_config()


def _default_cache():
    """Point numba's cache at ``<core>/compiled/__pycache__/numba/<digest>`` when the caller
    has set no folder (neither :func:`set_cache_dir` nor ``NUMBA_CACHE_DIR``) and that place
    is writable; otherwise numba's own choice stands."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    base = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compiled", "__pycache__",
                        "numba")
    try:
        _point_numba_at(_cache_folder(base))
    except OSError:
        pass


def _load_kernels():
    """The kernel module, or None with the reason kept in ``_import_error``."""
    global _import_error
    import sys
    if __package__ + ".compiled.kernels" not in sys.modules:
        _default_cache()
    try:
        from .compiled import kernels as mod
    except ImportError as err:        # numba (or llvmlite) missing or broken
        _import_error = err
        return None
    _import_error = None
    if _watchers:
        _install_listener()
    return mod


def available():
    """True if the numba backend can be used here (numba imports)."""
    if kernels is not None:
        return True
    return _load_kernels() is not None


def __getattr__(name):
    """:data:`twins`, resolved by :func:`active` on first access."""
    if name == "twins":
        active()
        return twins
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _set(name, mod):
    """Make backend ``name`` active (``mod`` its kernel module, None for numpy) and
    :data:`twins` its table."""
    global _name, kernels, twins, _twins
    if mod is not None and _twins is None:
        from .compiled.twins import TWINS
        _twins = Twins(**TWINS)
    _name, kernels = name, mod
    twins = _NO_TWINS if mod is None else _twins


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


def set_cache_dir(path, shipped=None):
    """Write (and read) the compiled kernels' cache under ``path`` (a writable folder,
    created if needed), in its subfolder named by :func:`source_digest` (other digests'
    subfolders are removed), through ``NUMBA_CACHE_DIR``. ``shipped``: a read-only folder
    holding caches built from these sources in their digest's subfolder (the extension zip's
    ``kernel_cache``); the digest's subfolder under ``path`` starts as a copy of it when it
    does not exist yet, so the kernels load instead of compiling. numba binds each kernel to its cache
    folder when the kernel module is imported, so this must come before the first
    algorithm call on the numba backend (and before :func:`use`/:func:`active` load the
    kernels); raises InvalidInputError after that unless ``path`` is already the folder."""
    import sys
    digest = source_digest()
    path = os.path.join(os.path.abspath(str(path)), digest)
    if __package__ + ".compiled.kernels" in sys.modules:
        from numba.core import config
        if path != os.path.abspath(config.CACHE_DIR or ""):
            raise InvalidInputError("set_cache_dir must be called before the compiled kernels "
                                    "are loaded (the first algorithm call on the numba backend)")
        return
    _point_numba_at(_cache_folder(os.path.dirname(path), digest, shipped))


def portable_cpu():
    """The CPU to compile the kernels for so that every machine of a kind runs the same code
    (:func:`set_cpu`): :data:`PORTABLE_CPU` on an x86-64 machine whose CPU has its features,
    ``"generic"`` on an older x86-64 one (or where llvmlite does not import),
    :data:`APPLE_CPU` on a Mac with Apple silicon, None elsewhere (other ARM machines:
    numba compiles for this machine)."""
    import platform
    import sys
    machine = platform.machine().lower()
    if machine == "arm64" and sys.platform == "darwin":
        return APPLE_CPU
    if machine not in ("x86_64", "amd64"):
        return None
    try:
        from llvmlite import binding
        features = binding.get_host_cpu_features()
    except (ImportError, RuntimeError):
        return "generic"
    return PORTABLE_CPU if all(features.get(f, False) for f in _PORTABLE_FEATURES) else "generic"


def set_cpu(name):
    """Compile the kernels for LLVM's CPU ``name`` (e.g. :func:`portable_cpu`'s) with that
    CPU's own features, instead of this machine's (``NUMBA_CPU_NAME`` and an empty
    ``NUMBA_CPU_FEATURES``): code that runs on every CPU of that level, and the same bits
    whether the kernels are compiled in this process or loaded from a cache compiled for that
    CPU elsewhere (numba keys each cached kernel by the CPU name and features it was compiled
    for, and loads only a match). Must come before the kernels load (raises
    InvalidInputError after, unless ``name`` is already set)."""
    import sys
    if __package__ + ".compiled.kernels" in sys.modules:
        from numba.core import config
        if (config.CPU_NAME, config.CPU_FEATURES) != (name, ""):
            raise InvalidInputError("set_cpu must be called before the compiled kernels are "
                                    "loaded (the first algorithm call on the numba backend)")
        return
    os.environ["NUMBA_CPU_NAME"], os.environ["NUMBA_CPU_FEATURES"] = name, ""
    _reload_numba_config()


def watch_compiles(callback):
    """Call ``callback(kernel, seconds)`` around each compile of a compiled kernel in this
    process: with ``seconds=None`` when the kernel starts compiling, then with the seconds
    taken when it is done. A compile is a cache miss (the first call with an empty or stale
    cache, or with new argument types); loading from the cache is not reported, and the
    functions a kernel calls compile inside its report. The callback runs in the thread
    that calls the kernel; its exceptions are printed, not raised. numba is not imported
    for this: the watch starts when the kernels load. Returns a function that ends the
    watch."""
    _watchers.append(callback)
    if kernels is not None:
        _install_listener()

    def stop():
        if callback in _watchers:
            _watchers.remove(callback)
    return stop


def _install_listener():
    """Register one numba ``numba:compile`` event listener that calls the watchers for the
    outermost compile of a function of this package (per thread)."""
    global _listener
    if _listener is not None:
        return
    import threading
    import time
    import traceback

    from numba.core import event

    package, local = __package__ + ".", threading.local()

    def notify(*args):
        for callback in list(_watchers):
            try:
                callback(*args)
            except Exception:                  # a progress message must not stop a compile
                traceback.print_exc()

    class Listener(event.Listener):
        def on_start(self, ev):
            depth = getattr(local, "depth", 0)
            local.depth = depth + 1
            if depth == 0:
                func = ev.data["dispatcher"].py_func
                local.outer = func.__module__.startswith(package) and func.__name__
                local.t0 = time.perf_counter()
                if local.outer:
                    notify(local.outer, None)

        def on_end(self, ev):
            local.depth -= 1
            if local.depth == 0 and local.outer:
                notify(local.outer, time.perf_counter() - local.t0)

    _listener = Listener()
    event.register("numba:compile", _listener)
