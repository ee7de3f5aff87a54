"""Sweep benchmark: 200 knee-pendulum variants (a seeded random sample of the release angle
and the ankle spring) in this process and on Dask LocalClusters of 1 and 2 worker processes
(one thread each): variants per second, the speed-up over one worker, and what a task costs
beyond its simulation.

    python scripts/bench.py --only sweep [--quick]

Each variant simulates ``DURATION`` s (1 s: 240 RK4 steps; quick: 40 variants of 0.25 s).
Wall times exclude starting the cluster (timed in its own column). "Overhead per task" is
``(wall x workers - sum of the variants' own wall times) / variants``: the time a worker
spends per variant beyond simulating it (scheduling, transfer, idling, and on a loaded machine
waiting for a core); "empty task" is the wall time per task of as many tasks that do nothing
(``abs``) submitted and gathered the same way: the scheduler's own cost. Every cluster run
must return the in-process records (all entries but ``wall_time``), else the benchmark stops.
"""

import pickle
import time

from core.cluster import local_client
from core.mechanisms import knee_pendulum
from core.sweep import random_variants, run

from .common import table

#: the swept ranges: release angle (rad) and ankle spring (N m / rad)
RANGES = {"knee_start": (-1.5, -1.1), "ankle_stiffness": (2.0, 10.0)}
VARIANTS, DURATION = 200, 1.0
QUICK_VARIANTS, QUICK_DURATION = 40, 0.25


def _deterministic(records):
    """The records without ``wall_time``, the one entry that is not a function of the variant."""
    return [{k: v for k, v in r.items() if k != "wall_time"} for r in records]


def _row(where, workers, records, wall, started="", empty=""):
    """One table row; the overhead per task (ms) only for a cluster of ``workers``."""
    n = len(records)
    overhead = (1e3 * (wall * workers - sum(r["wall_time"] for r in records)) / n
                if workers else "")
    return [where, n, started, wall, n / wall, overhead, empty]


def bench_sweep(quick=False):
    """The sweep table (module docstring): in this process, then LocalClusters of 1 and 2."""
    n, duration = (QUICK_VARIANTS, QUICK_DURATION) if quick else (VARIANTS, DURATION)
    variants = random_variants(RANGES, n, seed=0)
    t0 = time.perf_counter()
    local = run(knee_pendulum, variants, duration=duration)
    rows = [_row("in this process", 0, local, time.perf_counter() - t0)]
    rates = {}
    for workers in (1, 2):
        t0 = time.perf_counter()
        client = local_client(workers)
        started = time.perf_counter() - t0
        try:
            run(knee_pendulum, variants[:2 * workers], client=client, duration=duration)
            t0 = time.perf_counter()                 # timed after every worker's first task
            remote = run(knee_pendulum, variants, client=client, duration=duration)
            wall = time.perf_counter() - t0
            t0 = time.perf_counter()
            client.gather([client.submit(abs, -k, pure=False) for k in range(n)])
            empty = (time.perf_counter() - t0) / n
        finally:
            client.close()
        if _deterministic(remote) != _deterministic(local):
            raise RuntimeError(f"the LocalCluster of {workers} workers returned other records "
                               "than the in-process sweep")
        rows.append(_row(f"LocalCluster, {workers} worker{'s' * (workers > 1)}", workers,
                         remote, wall, started, empty * 1e3))
        rates[workers] = n / wall
    record_bytes = max(len(pickle.dumps(r)) for r in local)
    mean_ms = 1e3 * sum(r["wall_time"] for r in local) / n
    note = (f"{n} knee-pendulum variants of {duration:g} s simulated each (mean "
            f"{mean_ms:.1f} ms per variant in this process); speed-up of 2 workers over 1: "
            f"{rates[2] / rates[1]:.2f}x; a record is at most {record_bytes} bytes pickled. "
            "The cluster runs return the in-process records.")
    return [table("Sweeps: knee-pendulum variants in this process and on a Dask LocalCluster",
                  ["where", "variants", "cluster start (s)", "wall (s)", "variants per s",
                   "overhead per task (ms)", "empty task (ms)"], rows, note=note)]
