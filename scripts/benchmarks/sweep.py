"""Sweep benchmark: the knee-pendulum sweep on Dask LocalClusters of 1 and 2 one-thread
workers, 100 variants of about 40 ms per worker, one variant per task (``batch=1``) and in
automatic batches (:func:`core.sweep.batch_size`), and a model of the efficiency from the
per-task costs, checked against these runs and extrapolated to 14 workers.

    python scripts/bench.py --only sweep [--quick]

The variants are a seeded random sample of the release angle and the ankle spring, each
simulating ``DURATION`` s (2 s: 480 RK4 steps; quick: 20 variants of 0.5 s per worker). Each
figure is the median of ``REPEATS`` runs (quick: 1) on a cluster whose workers ran a task
first, excluding the cluster's start. For a run of ``n`` variants in ``tasks`` tasks on ``W``
workers, with ``t`` the mean wall time of its variants (their records' ``wall_time``, which
other work on the machine stretches as it stretches the run):

- efficiency ``E = n t / (W wall)``: the share of the workers' time spent in variants;
- per-task cost ``c = (W wall - n t) / tasks``: what a task costs beyond its variants (the
  scheduler and the client handling it, sending it and its records, a worker waiting for its
  next task);
- main-process CPU per task: the CPU time of this process (the client and the LocalCluster's
  scheduler, which serve one task after the other) per task of the run.

The model (:func:`model_efficiency`) is the machine-repairman queue: each of ``W`` workers
runs a task of ``b`` variants (``b t``) plus its own per-task cost ``c_w`` in parallel, then
waits for the serial scheduler and client, ``s`` per task, queueing behind the other workers'
tasks. It is written in CPU time: ``t`` is a variant's CPU time in this process, ``s`` the main
process's CPU per extra task (the difference between the unbatched and the batched runs' CPU
over the difference of their tasks), ``c_w`` the unbatched 1-worker run's per-task cost scaled
by its variants' CPU / wall time, less ``s``. Other work on a shared machine stretches every
time of a run alike (each process gets a share of a core), which leaves the efficiency as it
is; the other three runs check it (each with its mean ``b``). Its prediction for 14 workers,
every process on a core of its own, takes 1,400 variants and for automatic batches the mean
of the schedule :func:`core.sweep.batch_size` gives for variants of ``t``. Every
batched run must return the records of the unbatched run (all entries but ``wall_time``),
else the benchmark stops.
"""

import statistics
import time

from core.cluster import local_client
from core.mechanisms import knee_pendulum
from core.sweep import IN_FLIGHT, batch_size, random_variants, run

from .common import table

#: the swept ranges: release angle (rad) and ankle spring (N m / rad)
RANGES = {"knee_start": (-1.5, -1.1), "ankle_stiffness": (2.0, 10.0)}
#: variants per worker and simulated seconds of each (about 40 ms of wall time unloaded)
PER_WORKER, DURATION, REPEATS = 100, 2.0, 3
QUICK_PER_WORKER, QUICK_DURATION = 20, 0.5
#: the workers of the prediction; variants timed in CPU time in this process
PREDICT_WORKERS, CPU_VARIANTS = 14, 10


def _deterministic(records):
    """The records without ``wall_time``, the one entry that is not a function of the variant."""
    return [{k: v for k, v in r.items() if k != "wall_time"} for r in records]


def automatic_batches(n, workers, t):
    """The variants per task of an automatic sweep of ``n`` variants of ``t`` seconds on
    ``workers`` one-thread workers: one each for the first ``IN_FLIGHT`` tasks of every
    worker, then :func:`core.sweep.batch_size` of the variants not yet sent."""
    sizes = [1] * min(n, IN_FLIGHT * workers)
    while sum(sizes) < n:
        sizes.append(batch_size(n - sum(sizes), workers, t))
    return sizes


def model_efficiency(workers, t, batch, c_w, s):
    """The model's share of a worker's time spent in variants (module docstring): ``workers``
    workers, variants of ``t`` s, ``batch`` variants per task (a mean), a per-task cost
    ``c_w`` (s) on a worker and ``s`` (s) at the serial scheduler; mean value analysis of the
    closed queue (exact for exponential service times)."""
    think, queue = batch * t + c_w, 0.0
    for k in range(1, workers + 1):
        response = s * (1.0 + queue)
        throughput = k / (think + response)              # tasks per second
        queue = throughput * response
    return throughput * batch * t / workers


def _largest_serial_cost(workers, t, batch, c_w, target):
    """The largest scheduler cost per task (s) at which the model keeps ``target``; None when
    it does not even without one."""
    if model_efficiency(workers, t, batch, c_w, 0.0) < target:
        return None
    low, high = 0.0, batch * t
    for _ in range(60):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if model_efficiency(workers, t, batch, c_w, mid) >= target \
            else (low, mid)
    return low


def _ms(seconds):
    return "none" if seconds is None else 1e3 * seconds


def _timed(client, variants, duration, batch):
    """(wall s, tasks, main-process CPU s, mean variant s, records) of one sweep on
    ``client``."""
    tasks = []
    cpu, t0 = time.process_time(), time.perf_counter()
    records = run(knee_pendulum, variants, client=client, duration=duration, batch=batch,
                  progress=lambda fraction: tasks.append(fraction) is None)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu
    t = statistics.fmean(r["wall_time"] for r in records)
    return wall, len(tasks), cpu, t, records


def bench_sweep(quick=False):
    """The sweep tables (module docstring)."""
    per_worker, duration = (QUICK_PER_WORKER, QUICK_DURATION) if quick else (PER_WORKER, DURATION)
    repeats = 1 if quick else REPEATS
    probe = random_variants(RANGES, CPU_VARIANTS + 1, seed=1)
    run(knee_pendulum, probe[:1], duration=duration)              # the kernels are loaded
    cpu = time.process_time()
    run(knee_pendulum, probe[1:], duration=duration)
    t_cpu = (time.process_time() - cpu) / CPU_VARIANTS
    measured = {}
    for workers in (1, 2):
        variants = random_variants(RANGES, per_worker * workers, seed=0)
        client = local_client(workers)
        try:
            run(knee_pendulum, variants[:2 * workers], client=client, duration=duration, batch=1)
            runs = {1: [], None: []}
            for _ in range(repeats):
                for batch in runs:
                    runs[batch].append(_timed(client, variants, duration, batch))
        finally:
            client.close()
        if any(_deterministic(r[-1]) != _deterministic(runs[1][0][-1])
               for r in runs[1] + runs[None]):
            raise RuntimeError(f"the sweeps on {workers} workers returned other records in "
                               "batches than one variant per task")
        for batch, timed in runs.items():
            measured[workers, batch] = (len(variants),) + tuple(
                statistics.median(r[k] for r in timed) for k in range(4))

    def cost(workers, batch):
        n, wall, tasks, _, t = measured[workers, batch]
        return (workers * wall - n * t) / tasks

    serial = statistics.fmean(
        (measured[w, 1][3] - measured[w, None][3]) / (measured[w, 1][2] - measured[w, None][2])
        for w in (1, 2))
    c_w = max(cost(1, 1) * t_cpu / measured[1, 1][-1] - serial, 0.0)
    rows, speed_1 = [], measured[1, 1][0] / measured[1, 1][1]
    for (workers, batch), (n, wall, tasks, cpu, t) in measured.items():
        b = n / tasks
        rows.append([workers, "1" if batch else f"automatic, mean {b:.1f}", tasks, 1e3 * t,
                     wall, n / wall, 100 * n * t / (workers * wall),
                     100 * n / wall / speed_1 / workers, 1e3 * cost(workers, batch),
                     1e3 * cpu / tasks, 100 * model_efficiency(workers, t_cpu, b, c_w, serial)])
    t = t_cpu
    n = per_worker * PREDICT_WORKERS
    auto = n / len(automatic_batches(n, PREDICT_WORKERS, t))
    predicted = [[f"{PREDICT_WORKERS} workers, {label}", round(n / b), b,
                  100 * model_efficiency(PREDICT_WORKERS, t, b, c_w, serial),
                  _ms(_largest_serial_cost(PREDICT_WORKERS, t, b, c_w, 0.9))]
                 for label, b in (("1 variant per task", 1.0), ("automatic batches", auto))]
    return [
        table(f"Sweeps: {per_worker} knee-pendulum variants per worker on a Dask LocalCluster",
              ["workers", "variants per task", "tasks", "t (ms)", "wall (s)", "variants per s",
               "efficiency (%)", "speed-up over 1 worker unbatched / workers (%)",
               "per-task cost (ms)", "main-process CPU per task (ms)", "model (%)"],
              rows,
              note=(f"Variants of {duration:g} s simulated, t their mean wall time ("
                    f"{1e3 * t_cpu:.1f} ms of CPU in this process); each figure the median of "
                    f"{repeats} run(s). The model, in CPU time: scheduler cost s = "
                    f"{1e3 * serial:.2f} ms per task (main-process CPU per extra task), worker "
                    f"cost c_w = {1e3 * c_w:.2f} ms per task (the unbatched 1-worker run's "
                    "per-task cost scaled by its variants' CPU / wall time, less s); the other "
                    "rows check it. The batched runs return the records of the unbatched "
                    "ones.")),
        table(f"Sweeps: the model's prediction for {PREDICT_WORKERS} workers, "
              f"{per_worker} variants of {1e3 * t:.1f} ms per worker",
              ["cluster", "tasks", "variants per task (mean)", "predicted efficiency (%)",
               "largest scheduler cost per task for 90 % (ms)"],
              predicted,
              note=(f"Every process on a core of its own: variants of their CPU time, "
                    f"s = {1e3 * serial:.2f} ms and c_w = {1e3 * c_w:.2f} ms as measured above; "
                    "the automatic batches are the mean of core.sweep.batch_size's schedule for "
                    "these variants.")),
    ]
