"""A user's first bake in real Blender (the PyPI ``bpy`` module), with the extension installed
from its linux-x64 zip into a sandboxed user folder and no kernel cache there.

    python scripts/bench.py --only first_use

One fresh Blender process per demo (``demo_blends/*.blend``, scripts/build_demos.py; among
them ``metarig_ragdoll``, a Make Ragdoll of Blender's human meta-rig), each started with the
extension's user folder as a fresh install leaves it: the JIT cache folder and Python's
bytecode deleted (so the add-on copies the zip's compiled kernels, ``kernel_cache``, in as a
first session does). As a background run (``blender -b``: no warm-up thread), the worker
enables the add-on, opens the demo and bakes everything it simulates, as the Bake buttons do
(each mechanism and linkage with its operator, the rigs as ``spline_joints.bake_rig``), and
times from the bake call:

* the first simulated frame (the first progress report of a bake job: the core reports after
  every recorded frame), which includes importing numba and scipy and loading or compiling
  the kernels;
* the whole first bake;
* the same bake again in the same process (warm: everything imported and loaded);
* in another process, as in an interactive session: the add-on's warm-up thread run to its
  end first (it imports numba and loads every kernel), then the first frame.

It also counts the kernels compiled during each (``core.backend.watch_compiles``): with the
zip's kernels, none. One more process bakes ``metarig_ragdoll`` with the zip's kernels
deleted from the installed extension, as a zip built on another platform than its own
(the Windows and macOS zips built on Linux, which ship none) starts.
Targets (issue "First use"): first frame within 3 s, first bake within the warm bake + 5 s.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from scripts import blender_kit as kit
from scripts.blender_kit import MODULE

from .blender_latency import PYCACHE, sandbox
from .common import ENTRY, table

TIMEOUT = 900
#: environment variables of a worker: the .blend file to bake, and "interactive" to run the
#: add-on's warm-up thread to its end first
DEMO_VAR = "SPLINE_JOINTS_FIRST_USE_DEMO"
SESSION_VAR = "SPLINE_JOINTS_FIRST_USE_SESSION"
DEMOS = os.path.join(kit.ROOT, "demo_blends")
#: the demo also baked without the zip's kernels (the first use of a zip built off its platform)
COLD_DEMO = "metarig_ragdoll"


def worker(out, quick=False):
    """In a fresh process: enable the add-on, open the demo, bake it twice (module
    docstring; ``quick`` changes nothing here)."""
    import bpy

    import threading

    bpy.ops.preferences.addon_enable(module=MODULE)
    backend = kit.addon_module("core.backend")
    warm_up = None
    if os.environ.get(SESSION_VAR) == "interactive":     # the add-on's warm-up thread first
        t0 = time.perf_counter()
        thread = threading.Thread(target=kit.addon_module("addon.jit")._warm_up)
        thread.start()
        thread.join()
        warm_up = time.perf_counter() - t0
    jobs = kit.addon_module("addon.jobs")
    compiles, first = [], []
    backend.watch_compiles(lambda kernel, seconds: seconds is None or compiles.append((kernel, seconds)))
    progress = jobs.Job.progress

    def timed_progress(job, fraction):
        if fraction > 0 and not first:
            first.append(time.perf_counter())
        return progress(job, fraction)

    jobs.Job.progress = timed_progress
    bpy.ops.wm.open_mainfile(filepath=os.environ[DEMO_VAR])
    runs = []
    for _ in range(2):
        first.clear()
        n = len(compiles)
        t0 = time.perf_counter()
        kit.bake_all()
        t1 = time.perf_counter()
        runs.append({"first_frame": first[0] - t0 if first else None, "bake": t1 - t0,
                     "compiled": [kernel for kernel, _ in compiles[n:]],
                     "compile_s": sum(seconds for _, seconds in compiles[n:])})
    kit.addon_module("core.io").atomic_write(out, json.dumps(
        {"first": runs[0], "warm": runs[1], "warm_up": warm_up, "backend": backend.active()}))


def _run(env, tmp, demo, name, session):
    out = os.path.join(tmp, name + ".json")
    proc = subprocess.run([sys.executable, ENTRY, "--section", "first_use", "--worker", out],
                          env=dict(env, **{DEMO_VAR: demo, SESSION_VAR: session}),
                          capture_output=True, text=True, timeout=TIMEOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"Blender subprocess {name} failed:\n{proc.stdout[-4000:]}"
                           f"{proc.stderr[-4000:]}")
    with open(out) as fh:
        return json.load(fh)


def measure(demos, cold=True):
    """Install the zip into a fresh sandbox and run, per demo path, a background worker and
    an interactive one, each with the JIT cache and bytecode deleted, then (``cold``) a
    background one of :data:`COLD_DEMO` without the zip's kernels. Returns
    ``[(label, report)]``, the background and interactive reports of a demo in one dict."""
    tmp = tempfile.mkdtemp(prefix="spline_joints_first_use_")
    try:
        env = sandbox(tmp)
        user = os.path.join(tmp, "user", "extensions")
        caches = os.path.join(user, ".user", "user_default", "spline_joints", "numba_cache")
        shipped = os.path.join(user, "user_default", "spline_joints", "kernel_cache")
        runs = []
        plan = [(os.path.basename(d)[:-6], d, True) for d in demos]
        if cold:
            plan.append((COLD_DEMO + ", no kernels in the zip",
                         os.path.join(DEMOS, COLD_DEMO + ".blend"), False))
        for label, demo, keep in plan:
            report = {}
            for session in ("background", "interactive") if keep else ("background",):
                shutil.rmtree(os.path.join(tmp, PYCACHE), ignore_errors=True)
                shutil.rmtree(caches, ignore_errors=True)
                if not keep:
                    shutil.rmtree(shipped, ignore_errors=True)
                report[session] = _run(env, tmp, demo, f"{label.split(',')[0]}-{session}"
                                       + ("" if keep else "-cold"), session)
            runs.append((label, report))
        return runs
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_first_use(quick=False):
    """The section of scripts/bench.py: one table, one row per process (s)."""
    demos = sorted(glob.glob(os.path.join(DEMOS, "*.blend")))
    if quick:
        demos = [d for d in demos if os.path.basename(d)[:-6] in ("hinge_chain", COLD_DEMO)]
    rows = []
    for label, report in measure(demos):
        first, warm = report["background"]["first"], report["background"]["warm"]
        if first["first_frame"] is None:
            rows.append([label, "nothing to bake", "", "", "", "", "", "", ""])
            continue
        after = report.get("interactive")
        rows.append([label, first["first_frame"], first["bake"], warm["bake"],
                     first["bake"] - warm["bake"],
                     f"{len(first['compiled'])} ({first['compile_s']:.1f} s)",
                     len(warm["compiled"]),
                     after["warm_up"] if after else "", after["first"]["first_frame"] if after else ""])
    note = ("Fresh Blender processes, the extension installed from its linux-x64 zip, its "
            "JIT cache and Python's bytecode deleted first (OPENBLAS_NUM_THREADS=1 as in the "
            "other timing sections); times from the bake call. Background: a background run "
            "(no warm-up thread); first frame: the first progress report of a bake (importing "
            "numba and scipy and loading or compiling the kernels included); warm: the same "
            "bake again in the same process. Interactive: another process that first runs the "
            "add-on's warm-up thread to its end (an interactive session starts it a second "
            "after start: it imports numba and loads every kernel) and then bakes. The last "
            "row deletes the kernels the zip ships, as the Windows and macOS zips start. "
            "Targets: first frame within 3 s, first bake within the warm bake + 5 s.")
    return [table("First use: a first bake after installing the zip (s)",
                  ["demo", "first frame", "first bake", "warm bake", "first - warm",
                   "kernels compiled (time)", "compiled, warm",
                   "interactive: warm-up thread", "interactive: then first frame"],
                  rows, note=note)]
