"""Batch-bake benchmark: files per minute of ``scripts/bake.py`` with the local process pool and
with a Dask LocalCluster, on 1 and 2 workers, and the two costs that bound Dask's scaling to
more machines: the scheduler's round trip per task and the bytes each baked file sends back.

    python scripts/bench.py --only batch [--quick]

Needs the bpy module and distributed (the .venv of ``scripts/setup_env.sh``); without them the
section returns a table that says so. The extension is built (``scripts/build_extension.py``,
cached in build/) and installed into a temporary Blender user folder, so the user's own Blender
folder is not touched. The inputs are copies of three short demos (hinge_chain, knee_pendulum,
beads_on_a_wire), 4 of each (quick: 2 of each). Each wall time is the median of 3 runs (quick: 1)
of bake.py from start to exit, including its LocalCluster's start and every child's Blender start.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

SCRIPTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(SCRIPTS)

from scripts import blender_kit as kit
from .common import table

DEMOS = ("hinge_chain", "knee_pendulum", "beads_on_a_wire")
EMPTY_TASKS = 500  # tasks of the scheduler round-trip measurement (quick: 100)


def _missing():
    """Why the section cannot run here (a sentence), or None."""
    import importlib.util
    import platform

    missing = [m for m in ("bpy", "distributed") if importlib.util.find_spec(m) is None]
    if missing:
        return (f"skipped: {' and '.join(missing)} not installed in {sys.executable}; "
                "run it with .venv/bin/python (bash scripts/setup_env.sh)")
    if kit.host_platform() is None:
        return f"skipped: no extension build for {sys.platform} {platform.machine()}"
    return None


def _bake(files, out, env, *extra):
    """Wall seconds of one bake.py run; RuntimeError with its output when a file fails."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, os.path.join(SCRIPTS, "bake.py"), *files, "--out", out, *extra],
                          env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"bake.py {' '.join(extra)} failed:\n{proc.stdout}{proc.stderr}")
    return seconds


def _empty_task_ms(n):
    """Mean round trip of ``n`` empty tasks on a 2-worker LocalCluster, in ms per
    task (submitted together, as bake.py submits its files)."""
    from distributed import Client, LocalCluster, wait

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        client.submit(int, 0, pure=False).result()  # the workers are up and connected
        start = time.perf_counter()
        wait(client.map(int, range(n), pure=False))
        return (time.perf_counter() - start) / n * 1e3


def bench_batch(quick=False):
    """Files per minute of bake.py (process pool and Dask LocalCluster, 1 and 2 workers) and
    the scheduler round trip per task and result size per baked file."""
    reason = _missing()
    if reason is not None:
        return [table("Batch bakes", ["engine", "workers", "files", "wall (s)", "files per minute"], [],
                      note=reason)]
    copies = 2 if quick else 4
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, BLENDER_USER_RESOURCES=os.path.join(tmp, "user"))
        os.mkdir(os.path.join(tmp, "in"))
        files = []
        for demo in DEMOS:
            for k in range(copies):
                files.append(os.path.join(tmp, "in", f"{demo}_{k}.blend"))
                shutil.copy(os.path.join(ROOT, "demo_blends", f"{demo}.blend"), files[-1])
        _bake(files[:1], os.path.join(tmp, "warm"), env, "--install", kit.build_zip())
        rows = []
        for engine, extra in (("process pool", ()), ("Dask LocalCluster", ("--scheduler", "local"))):
            for jobs in (1, 2):
                out = os.path.join(tmp, f"{extra[-1] if extra else 'pool'}{jobs}")
                seconds = float(np.median([_bake(files, f"{out}_{r}", env, "--jobs", str(jobs), *extra)
                                           for r in range(1 if quick else 3)]))
                rows.append([engine, jobs, len(files), seconds, len(files) / seconds * 60.0])
        sizes = {demo: os.path.getsize(os.path.join(f"{out}_0", f"{demo}_0.blend")) / 1024 for demo in DEMOS}
    n = 100 if quick else EMPTY_TASKS
    costs = [[f"scheduler round trip per task ({n} empty tasks, 2 workers)", "ms", _empty_task_ms(n)]]
    costs += [[f"result sent back per baked file ({demo})", "KiB", kib] for demo, kib in sizes.items()]
    return [
        table(f"Batch bakes: scripts/bake.py on {len(files)} demo files (files per minute)",
              ["engine", "workers", "files", "wall (s)", "files per minute"], rows,
              note="Median wall time of a whole run, including the LocalCluster's start and a "
                   "Blender start per file."),
        table("Batch bakes: the costs per task that bound Dask's scaling", ["cost", "unit", "value"], costs),
    ]
