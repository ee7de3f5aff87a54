"""First-call latency of the compiled kernels in real Blender (the PyPI ``bpy`` module), with
the extension installed from its linux-x64 zip into a sandboxed user folder.

    python scripts/bench.py --only blender                   # as a section of the benchmark

Every measurement is a fresh Blender process (``bpy`` is one Blender per process) that
enables the add-on, whose register() points the JIT cache at the extension's user folder
(:mod:`addon.jit`), then times, from after the add-on is enabled:

* the first ``aba`` on an 8-link revolute chain, which imports ``core.dynamics`` and numba
  (from the extension's wheels) and compiles or loads the aba kernel;
* then the first ``simulate_mechanism`` of the hinge-chain demo (0.5 s simulated, RK4),
  which compiles or loads the step kernels and simulates.

"Cold" processes start with the cache folder and Python's bytecode deleted (the first
session after installing or upgrading the extension), "warm" ones with both as a previous
process left them. The worker
also reports whether the console showed the compile message (:func:`addon.jit.compile_message`).

Two kinds of session: "blocking" as in a background run (``blender -b``, where the add-on
starts no warm-up), the first calls waiting for their kernels; "interactive" where the
add-on's warm-up thread (:mod:`addon.jit`, :func:`core.warm_up.warm_up`) runs first, as a
second after the start of an interactive session: the worker times the warm-up (every
compiled path) and then the same first calls, which then find their kernels ready (a
simulation started while the warm-up runs waits for the kernels it needs, at most the
blocking figure).
Never a test: ``tests/blender/test_install.py`` checks that the kernels come from the
bundled numba and land in the cache folder.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from scripts import blender_kit as kit
from scripts.blender_kit import MODULE

from .common import ENTRY, table

RUNNER = os.path.join(kit.ROOT, "tests", "blender", "_runner.py")
TIMEOUT = 600
#: the sandbox's folder of Python bytecode (deleted with the JIT cache for a cold process)
PYCACHE = "pycache"
#: environment variable of a worker: "interactive" runs the add-on's warm-up first
MODE_VAR = "SPLINE_JOINTS_LATENCY_SESSION"


def worker(out, quick=False):
    """In a fresh process: enable the add-on, time the first aba and the first simulate
    (``quick`` changes nothing here: it sets how many processes run)."""
    import contextlib
    import importlib
    import io
    import threading

    import bpy

    bpy.ops.preferences.addon_enable(module=MODULE)
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        warm_up = 0.0
        if os.environ.get(MODE_VAR) == "interactive":   # the add-on's warm-up thread first
            t0 = time.perf_counter()
            thread = threading.Thread(target=importlib.import_module(MODULE + ".addon.jit")
                                      ._warm_up)
            thread.start()
            thread.join()
            warm_up = time.perf_counter() - t0
        t0, c0 = time.perf_counter(), time.process_time()
        dyn = importlib.import_module(MODULE + ".core.dynamics")
        lp = importlib.import_module(MODULE + ".core.joints.lower_pairs")
        mech = importlib.import_module(MODULE + ".core.mechanisms")
        Model = importlib.import_module(MODULE + ".core.model").Model
        model = Model()
        for i in range(8):
            model.add_body(f"r{i}", i - 1, lp.Revolute((0.0, 1.0, 0.0)), np.eye(4), 1.0,
                           np.array([0.0, 0.0, -0.1]), 0.01 * np.eye(3))
        data = model.create_data()
        dyn.aba(model, data, model.neutral(), np.zeros(8), np.zeros(8))
        t1 = time.perf_counter()
        mech.simulate_mechanism(mech.DEMOS["hinge_chain"](duration=0.5))
        t2, c2 = time.perf_counter(), time.process_time()
    backend = importlib.import_module(MODULE + ".core.backend")
    jit = importlib.import_module(MODULE + ".addon.jit")
    text = console.getvalue()
    sys.stdout.write(text)
    atomic_write = importlib.import_module(MODULE + ".core.io").atomic_write
    atomic_write(out, json.dumps({"aba": t1 - t0, "simulate": t2 - t1, "warm_up": warm_up,
                                  "cpu": c2 - c0,
                                  "backend": backend.active(),
                                  "message": jit.compile_message() in text,
                                  "cache": jit.cache_dir()}))


def _run(args, env, tmp, name):
    out = os.path.join(tmp, name + ".json")
    proc = subprocess.run([sys.executable, *args, out], env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"Blender subprocess {name} failed:\n{proc.stdout}{proc.stderr}")
    with open(out) as fh:
        return json.load(fh)


def sandbox(tmp):
    """The environment of Blender processes whose user folder is ``tmp``/user, with the
    linux-x64 zip installed there (no JIT cache or backend override from the caller), and
    Python's bytecode cache in ``tmp``/pycache (:data:`PYCACHE`; written and read as in a
    user's Blender, where later sessions import the extension and its wheels from their
    bytecode, and never in the repository)."""
    env = dict(os.environ, BLENDER_USER_RESOURCES=os.path.join(tmp, "user"),
               PYTHONPYCACHEPREFIX=os.path.join(tmp, PYCACHE))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("SPLINE_JOINTS_BACKEND", None)
    _run([RUNNER, "install", kit.build_zip()], env, tmp, "install")
    return env


def measure(cold=3, warm=5, interactive=(2, 2)):
    """Install the zip into a fresh sandbox; run ``cold`` blocking processes each with the
    cache deleted, then ``warm`` with it filled, then ``interactive`` (cold, warm) processes
    that run the add-on's warm-up first. Returns ``{(session, cache): [...]}`` of the
    workers' reports."""
    tmp = tempfile.mkdtemp(prefix="spline_joints_latency_")
    try:
        env = sandbox(tmp)
        runs = {}
        for session, counts in (("blocking", (cold, warm)), ("interactive", interactive)):
            for kind, n in zip(("cold", "warm"), counts):
                rs = runs[session, kind] = []
                for i in range(n):
                    if kind == "cold":
                        shutil.rmtree(os.path.join(tmp, PYCACHE), ignore_errors=True)
                    if kind == "cold" and runs.get(("blocking", "cold")):
                        shutil.rmtree(runs["blocking", "cold"][-1]["cache"], ignore_errors=True)
                    rs.append(_run([ENTRY, "--section", "blender", "--worker"], dict(env, **{MODE_VAR: session}),
                                   tmp, f"{session}-{kind}{i}"))
        return runs
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_blender_latency(quick=False):
    """The section of scripts/bench.py: one table of medians (s)."""
    runs = measure(*((1, 2, (1, 1)) if quick else (3, 5, (2, 2))))
    rows = []
    for (session, kind), rs in runs.items():
        if not rs:
            continue
        med = {k: float(np.median([r[k] for r in rs]))
               for k in ("warm_up", "aba", "simulate", "cpu")}
        total = float(np.median([r["aba"] + r["simulate"] for r in rs]))
        rows.append([session, kind, len(rs), rs[0]["backend"],
                     med["warm_up"] if session == "interactive" else "", med["aba"],
                     med["simulate"], total, med["cpu"],
                     "yes" if all(r["message"] for r in rs) else
                     ("no" if not any(r["message"] for r in rs) else "some")])
    note = ("Fresh Blender processes with the extension installed from its zip; cold: the JIT "
            "cache folder empty (first session after install or upgrade), warm: filled by a "
            "previous process; blocking: the first calls compile or load what they need (a "
            "background run), interactive: after the add-on's warm-up thread (every compiled "
            "path). CPU time: the process's, over the first aba and simulate (the wall time "
            "less the waits for other jobs on a shared machine). Targets: cold under 15 s "
            "with a progress message, warm under 1 s.")
    return [table("First-call latency in Blender (s, median)",
                  ["session", "cache", "processes", "backend", "warm-up thread",
                   "first aba (imports numba)", "then first simulate (hinge chain, 0.5 s)",
                   "first aba + simulate", "their CPU time", "compile message"],
                  rows, note=note)]
