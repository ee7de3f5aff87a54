"""The core's compiled kernels in Blender: their cache folder, the message while they compile,
and a console line where numba cannot run.

:func:`register` runs first in the add-on's register(), before any core module loads the
kernels (:mod:`core.backend`):

* The JIT cache goes to the extension's own user folder,
  ``bpy.utils.extension_path_user(<extension>, path="numba_cache")``, i.e.
  ``<Blender user folder>/extensions/.user/<repository>/spline_joints/numba_cache``
  (Linux ``~/.config/blender/5.0/...``, macOS ``~/Library/Application Support/Blender/5.0/
  ...``, Windows ``%APPDATA%\\Blender Foundation\\Blender\\5.0\\...``). Blender keeps that
  folder when the extension is upgraded (the extension's own folder is replaced) and the user
  can always write it; Blender 5.0's ``bpy.utils.user_resource`` has no cache type.
* The kernels are compiled for one CPU level, :func:`core.backend.portable_cpu` (x86-64-v3 on
  x86-64 machines that have it, else generic x86-64; Apple's M1 on Apple silicon; the
  machine's own CPU on other ARM machines), not for the machine's own CPU, so the kernels
  built into a zip are the code this machine would compile for itself. A kernel's machine
  code is its cache's, however it reached the process (each kernel calls only its own code,
  :mod:`core.compiled.kernels.options`), so a bake's frames do not depend on where its
  kernels came from, to the bit.
* A zip built on its own platform ships the kernels compiled (``kernel_cache/<digest>`` in
  the extension's folder, written by scripts/build_extension.py; the linux-x64 zips here): the
  first session of a version copies them into the cache folder and loads them, in well under
  a second. Elsewhere (a zip built on another platform, or built without them), the kernels
  compile on their first use with an empty cache: a minute or two of CPU for a first
  simulation; later sessions load them. While one compiles the console prints
  :func:`compile_message` and a line per kernel compiled.
* In an interactive session a background thread runs :func:`core.warm_up.warm_up` a second
  after start (every compiled path, the most used first), so the kernels are compiled (or
  loaded) before the first simulation needs them; while it compiles, the status bar of
  every window shows :func:`compile_message`. A simulation started meanwhile waits for the
  compile (numba's compiler lock) instead of compiling twice.
* Where numba cannot be imported (a platform without its wheels), the core runs its numpy
  backend, slower, and the console says so in one line.
"""

from __future__ import annotations

import os
import threading
import traceback

import bpy

from ..core import backend
from ..core.errors import InvalidInputError

#: the compiled kernels the zip ships (:func:`core.backend.set_cache_dir`'s ``shipped``)
SHIPPED_CACHE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "kernel_cache")
#: the extension's package (``bl_ext.<repository>.spline_joints``)
EXTENSION = __package__.rpartition(".")[0]
PREFIX = "Spline Joints: "

_state = {"stop_watch": None, "compiling": False, "thread": None, "shown": False}


def cache_dir() -> str:
    """The JIT cache folder (created): the extension's user folder's ``numba_cache``."""
    return bpy.utils.extension_path_user(EXTENSION, path="numba_cache", create=True)


def compile_message() -> str:
    return (f"{PREFIX}compiling the dynamics kernels for this version of the extension, once "
            "(a minute or two the first time a simulation needs them); later sessions load "
            "them from the cache")


def _on_compile(kernel, seconds):
    """:func:`core.backend.watch_compiles` callback (any thread): console lines only."""
    if seconds is None:
        if not _state["compiling"]:
            print(compile_message() + f" {cache_dir()} ...", flush=True)
        _state["compiling"] = True
    else:
        print(f"{PREFIX}compiled {kernel} in {seconds:.1f} s", flush=True)


def _status(text):
    for window in bpy.context.window_manager.windows:
        window.workspace.status_text_set(text)


def _poll():
    """Main-thread timer while the warm-up thread runs: the status-bar message."""
    thread = _state["thread"]
    if thread is not None and thread.is_alive():
        if _state["compiling"] and not _state["shown"]:
            _status(compile_message() + " ...")
            _state["shown"] = True
        return 0.25
    if _state["shown"]:
        _status(None)
        _state["shown"] = False
    _state["thread"] = None
    return None


def _warm_up():
    try:
        if not backend.available():
            _numpy_line()
        from ..core.warm_up import warm_up          # the core's algorithms, imported here
        warm_up()
    except Exception:                       # the simulations will report it where it matters
        traceback.print_exc()


def _start_warm_up():
    _state["thread"] = threading.Thread(target=_warm_up, name="spline_joints_warm_up",
                                        daemon=True)
    _state["thread"].start()
    bpy.app.timers.register(_poll, first_interval=0.1)
    return None


def _numpy_line():
    print(f"{PREFIX}numba is not available here; the dynamics run on the numpy backend "
          "(slower)", flush=True)


def register():
    """Compile for :func:`core.backend.portable_cpu`, point the JIT cache at :func:`cache_dir`
    (seeded from :data:`SHIPPED_CACHE`), watch compiles, and in an interactive session start
    the warm-up (module docstring)."""
    try:
        cpu = backend.portable_cpu()
        if cpu is not None:
            backend.set_cpu(cpu)
        backend.set_cache_dir(cache_dir(), shipped=SHIPPED_CACHE)
    except InvalidInputError as err:        # the kernels were loaded before the add-on
        print(f"{PREFIX}{err}; the kernels keep their cache folder", flush=True)
    _state["stop_watch"] = backend.watch_compiles(_on_compile)
    if bpy.app.background:
        import importlib.util
        if importlib.util.find_spec("numba") is None:
            _numpy_line()
    elif not bpy.app.timers.is_registered(_start_warm_up):
        bpy.app.timers.register(_start_warm_up, first_interval=1.0)


def unregister():
    for timer in (_start_warm_up, _poll):
        if bpy.app.timers.is_registered(timer):
            bpy.app.timers.unregister(timer)
    if _state["shown"]:
        _status(None)
        _state["shown"] = False
    if _state["stop_watch"] is not None:
        _state["stop_watch"]()
        _state["stop_watch"] = None
