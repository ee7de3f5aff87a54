"""First-call latency of the compiled kernels in real Blender (the PyPI ``bpy`` module), with
the extension installed from its linux-x64 zip into a sandboxed user folder.

    python scripts/bench.py --only blender                   # as a section of the benchmark
    python scripts/bench_blender_latency.py [--quick]         # alone (quick: 1 cold, 2 warm)

Every measurement is a fresh Blender process (``bpy`` is one Blender per process) that
enables the add-on, whose register() points the JIT cache at the extension's user folder
(:mod:`addon.jit`), then times, from after the add-on is enabled:

* the first ``aba`` on an 8-link revolute chain, which imports ``core.dynamics`` and numba
  (from the extension's wheels) and compiles or loads the aba kernel;
* then the first ``simulate_mechanism`` of the hinge-chain demo (0.5 s simulated, RK4),
  which compiles or loads the step kernels and simulates.

"Cold" processes start with the cache folder deleted (the first session after installing or
upgrading the extension), "warm" ones with the cache a previous process filled. The worker
also reports whether the console showed the compile message (:func:`addon.jit.compile_message`).
Never a test: ``tests/blender/test_install.py`` checks that the kernels come from the
bundled numba and land in the cache folder.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RUNNER = os.path.join(ROOT, "tests", "blender", "_runner.py")
MODULE = "bl_ext.user_default.spline_joints"
TIMEOUT = 600


def worker(out, quick=False):
    """In a fresh process: enable the add-on, time the first aba and the first simulate
    (``quick`` changes nothing here: it sets how many processes run)."""
    import contextlib
    import importlib
    import io

    import bpy

    bpy.ops.preferences.addon_enable(module=MODULE)
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        t0 = time.perf_counter()
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
        t2 = time.perf_counter()
    backend = importlib.import_module(MODULE + ".core.backend")
    jit = importlib.import_module(MODULE + ".addon.jit")
    text = console.getvalue()
    sys.stdout.write(text)
    atomic_write = importlib.import_module(MODULE + ".core.io").atomic_write
    atomic_write(out, json.dumps({"aba": t1 - t0, "simulate": t2 - t1,
                                  "backend": backend.active(),
                                  "message": jit.compile_message() in text,
                                  "cache": jit.cache_dir()}))


def _zip():
    """The linux-x64 zip, built (or reused) by scripts/build_extension.py."""
    sys.path.insert(0, HERE)
    import build_extension
    with build_extension.build_lock():
        return build_extension.build(["linux-x64"], offline=False, force=False,
                                     blender_ext=None)[0]


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
    linux-x64 zip installed there (no JIT cache or backend override from the caller)."""
    env = dict(os.environ, BLENDER_USER_RESOURCES=os.path.join(tmp, "user"),
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("SPLINE_JOINTS_BACKEND", None)
    _run([RUNNER, "install", str(_zip())], env, tmp, "install")
    return env


def main_for(doc, worker, section, argv=None):
    """The command line of a Blender bench script: ``--worker OUT`` runs ``worker(OUT,
    quick)`` in this (fresh Blender) process; otherwise print ``section(quick)``'s tables."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--worker", metavar="OUT", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.quick)
        return 0
    sys.path.insert(0, HERE)
    from bench import format_table, machine_description
    print(machine_description())
    for t in section(args.quick):
        print(format_table(t))
    return 0


def measure(cold=3, warm=5):
    """Install the zip into a fresh sandbox; run ``cold`` processes each with the cache
    deleted, then ``warm`` with it filled. Returns ``{"cold": [...], "warm": [...]}`` of the
    workers' reports."""
    tmp = tempfile.mkdtemp(prefix="spline_joints_latency_")
    try:
        env = sandbox(tmp)
        runs = {"cold": [], "warm": []}
        for kind, n in (("cold", cold), ("warm", warm)):
            for i in range(n):
                if kind == "cold" and runs["cold"]:
                    shutil.rmtree(runs["cold"][-1]["cache"], ignore_errors=True)
                runs[kind].append(_run([__file__, "--worker"], env, tmp, f"{kind}{i}"))
        return runs
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_blender_latency(quick=False):
    """The section of scripts/bench.py: one table of medians (s)."""
    from bench import table
    runs = measure(*((1, 2) if quick else (3, 5)))
    rows = []
    for kind in ("cold", "warm"):
        rs = runs[kind]
        aba = float(np.median([r["aba"] for r in rs]))
        sim = float(np.median([r["simulate"] for r in rs]))
        total = float(np.median([r["aba"] + r["simulate"] for r in rs]))
        rows.append([kind, len(rs), rs[0]["backend"], aba, sim, total,
                     "yes" if all(r["message"] for r in rs) else
                     ("no" if not any(r["message"] for r in rs) else "some")])
    note = ("Fresh Blender processes with the extension installed from its zip; cold: the JIT "
            "cache folder empty (first session after install or upgrade), warm: filled by a "
            "previous process. Targets: cold under 15 s with a progress message, warm under 1 s.")
    return [table("First-call latency in Blender (s, median)",
                  ["cache", "processes", "backend", "first aba (imports numba)",
                   "then first simulate (hinge chain, 0.5 s)", "total", "compile message"],
                  rows, note=note)]


if __name__ == "__main__":
    sys.exit(main_for(__doc__, worker, bench_blender_latency))
