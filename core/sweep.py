"""Parameter sweeps of a demo mechanism: many variants of one builder, each simulated by
:func:`core.mechanisms.simulate_mechanism`, each reduced to a small metric record.

    variants = grid_variants({"knee_start": [-1.4, -1.2], "ankle_stiffness": [2.0, 5.0]})
    records = run(knee_pendulum, variants, duration=0.5)                  # in this process
    records = run(knee_pendulum, variants, client=local_client(2))       # on Dask workers

``builder`` follows the contract of :mod:`core.mechanisms` (``builder(*, fps, substeps,
duration, **params) -> Mechanism``); a variant is a dict of keyword arguments for it.
:func:`grid_variants` gives the full product of a grid of values, :func:`random_variants` a
seeded uniform sample of ranges. :func:`run` checks every parameter name against the
builder's signature before any work, then simulates the variants in this process
(``client=None``) or over the workers of a Dask distributed client, several variants per task
(:func:`batch_size`), the records in variant order either way. A variant whose builder refuses
its parameters or whose simulation diverges gives a record with status ``"failed"`` and the
error's message; the other variants are unaffected. ``progress(fraction) -> bool`` is called
after every variant in this process and after every task on a cluster; False cancels, and the
variants that had not run get records with status ``"cancelled"``. Any other exception a
variant raises stops the sweep, with a note naming the variant (``index`` and parameters).

**Batches.** A Dask task costs the scheduler, the client and the worker a few milliseconds
beyond its work (scripts/benchmarks/sweep.py measures it, and models what it costs a sweep):
with one 40 ms variant per task, 14 workers of a 16-core machine spent a third of their time
on it. On a cluster, ``batch=None`` sizes each task from the measured wall time of the
variants of the last task that came back: ``TASK_SECONDS`` of work, and no more than a
``1 / (GUIDE x workers)`` share of the variants not yet sent, so that the last tasks are short and
the workers finish together; the first ``IN_FLIGHT`` tasks a worker gets, before any time is
known, hold one variant. ``IN_FLIGHT`` tasks per worker are out at a time, so a worker never
waits for the client. ``batch=N`` sends tasks of N variants instead, all at once (``batch=1`` is
one task per variant).

A record (:func:`run_variant`) is a flat dict: ``index``, the variant's parameters, then
``status`` ("completed" or "failed"), ``error`` ("" or the message), ``steps``, ``wall_time``
(s, building and simulating) and one entry per metric (None for a failed variant). The
default metrics (:data:`METRICS`) are the relative energy drift and its warning
(:func:`core.mechanisms.energy_drift_warning`, "" when none), the final coordinates ``q``
(tuple, nq), the last body's final position (tuple, 3), the largest constraint error (m) and
the largest limit violation (None for a mechanism without limits). Every entry but
``wall_time`` is a deterministic function of the variant, so a sweep on a cluster returns
the records of the same sweep in one process, whatever its batches. A cancelled variant's
record has status ``"cancelled"``, ``error`` saying so, and None for ``steps``, ``wall_time``
and every metric. :func:`table` flattens records into the rows of
a table file.

Dask distributed is reached through :mod:`core.cluster` (:func:`~core.cluster.connect`,
:func:`~core.cluster.local_client`), imported only when a sweep runs on a client.
"""

import importlib
import inspect
import itertools
import math
import statistics
import time

import numpy as np

from .checks import real_number, whole_number
from .cluster import CONNECT_TIMEOUT, connect, distributed_module, wait_for_workers
from .errors import InvalidInputError, SplineJointsError
from .limits import LimitSolver
from .mechanisms import energy_drift_warning, simulate_mechanism

__all__ = ["GUIDE", "IN_FLIGHT", "MAX_VARIANTS", "METRICS", "RECORD_FIELDS", "TASK_SECONDS",
           "batch_size", "builder_parameters", "grid_variants", "random_variants",
           "check_variants", "run", "run_batch", "run_variant", "table"]

#: the fields of every record after its parameters and before its metrics
RECORD_FIELDS = ("index", "status", "error", "steps", "wall_time")
#: the most variants of one sweep, counted before any is built
MAX_VARIANTS = 100_000
#: seconds of work an automatic batch aims at: 100 times a task's cost of a few ms
#: (scripts/benchmarks/sweep.py), so that cost is about 1 % of a worker's time, while progress
#: and a cancel still come within a second
TASK_SECONDS = 0.5
#: an automatic batch holds at most 1 / (GUIDE x workers) of the variants not yet sent
GUIDE = 2
#: tasks out per worker at a time with automatic batches (one running, one waiting)
IN_FLIGHT = 2
#: the error of a cancelled variant's record
CANCELLED = "the sweep was cancelled before this variant ran"

def _final_position(mechanism, result):
    """The last body's final world position ``(3,)`` as a tuple (m)."""
    return tuple(float(x) for x in result.poses[-1, -1, :3, 3])


def _max_limit_violation(mechanism, result):
    """The largest violation ``max(0, -d)`` of the mechanism's limits over the recorded frames,
    in each limit's own measure (radians, metres, or a reach cone's cosine margin, see
    :mod:`core.limits`); None for a mechanism without limits."""
    if not mechanism.limits or mechanism.model is None:
        return None
    solver = LimitSolver(mechanism.model, list(mechanism.limits))
    d = min(float(solver.evaluate(q)[0].min()) for q in result.q)
    return max(0.0, -d)


#: metric name -> ``(mechanism, result) -> value`` (a float, a tuple of floats, a str or None);
#: ``result`` is the variant's :class:`core.mechanisms.BakeResult`
METRICS = {
    "energy_drift": lambda mechanism, result: float(result.energy_drift),
    "drift_warning": lambda mechanism, result: energy_drift_warning(
        mechanism, result.energy_drift) or "",
    "final_q": lambda mechanism, result: tuple(float(x) for x in result.q[-1]),
    "final_position": _final_position,
    "max_constraint_error": lambda mechanism, result: float(result.constraint_error.max()),
    "max_limit_violation": _max_limit_violation,
}


def builder_parameters(builder):
    """The keyword parameters of ``builder`` (a tuple of names, in signature order), or None
    when it takes any keyword (``**params``)."""
    try:
        signature = inspect.signature(builder)
    except (TypeError, ValueError) as err:
        raise InvalidInputError(f"{builder!r} is not a mechanism builder (a function "
                                "builder(*, fps, substeps, duration, **params)); pass one of "
                                "core.mechanisms.DEMOS") from err
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        return None
    return tuple(name for name, p in signature.parameters.items() if p.kind in kinds)


def _builder_name(builder):
    return getattr(builder, "__name__", repr(builder))


def grid_variants(grid):
    """The full product of ``grid`` (``{name: [values]}``) as a list of variant dicts, the
    last parameter varying fastest: ``{"a": [1, 2], "b": [3, 4]}`` gives (1, 3), (1, 4),
    (2, 3), (2, 4). The values are kept as given (ints stay ints)."""
    if not isinstance(grid, dict) or not grid:
        raise InvalidInputError("the grid has no parameters: give a dict of parameter name -> "
                                "list of values, e.g. {'knee_start': [-1.4, -1.2]}")
    for name, values in grid.items():
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise InvalidInputError(f"grid parameter {name!r}: give a list of values, got "
                                    f"{values!r}; write [{values!r}] for a single value")
        if len(values) == 0:
            raise InvalidInputError(f"grid parameter {name!r} has no values: give at least one")
    count = math.prod(len(values) for values in grid.values())
    _check_count(count, " x ".join(str(len(values)) for values in grid.values()) + " values")
    names = list(grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*grid.values())]


def _check_count(count, how):
    if count > MAX_VARIANTS:
        raise InvalidInputError(f"the sweep has {count} variants ({how}), more than the "
                                f"{MAX_VARIANTS} one sweep may run: sweep fewer values, or split "
                                "the sweep into several runs")


def random_variants(ranges, n, seed=0):
    """``n`` variants drawn uniformly from ``ranges`` (``{name: (low, high)}``, finite,
    low <= high) with ``numpy.random.default_rng(seed)``, one parameter after the other in
    the dict's order: a list of ``n`` dicts of floats, the same for the same arguments."""
    if not isinstance(ranges, dict) or not ranges:
        raise InvalidInputError("no ranges to sample: give a dict of parameter name -> "
                                "(low, high), e.g. {'knee_start': (-1.5, -1.1)}")
    n = whole_number(n, "the number of random variants")
    _check_count(n, "random samples")
    rng = np.random.default_rng(seed)
    columns = {}
    for name, bounds in ranges.items():
        try:
            low, high = (float(x) for x in bounds)
        except (TypeError, ValueError) as err:
            raise InvalidInputError(f"range of {name!r}: give two numbers (low, high), got "
                                    f"{bounds!r}") from err
        if not (math.isfinite(low) and math.isfinite(high) and low <= high):
            raise InvalidInputError(f"range of {name!r}: need finite low <= high, got "
                                    f"({low}, {high})")
        columns[name] = rng.uniform(low, high, int(n))
    return [{name: float(values[k]) for name, values in columns.items()} for k in range(n)]


def check_variants(builder, variants, timing=None):
    """``variants`` (a grid dict or a list of variant dicts) as a list of dicts with the
    ``timing`` keywords (a dict such as ``{"duration": 0.5}``; None values are dropped)
    added; refuses, before any work, an empty sweep, a parameter the builder does not take,
    one named like a record field or metric, and one given both in a variant and in
    ``timing``."""
    timing = {k: v for k, v in (timing or {}).items() if v is not None}
    for key, value in timing.items():
        _check_timing(key, value, key)
    if isinstance(variants, dict):
        variants = grid_variants(variants)
    variants = list(variants)
    _check_count(len(variants), "variant dicts")
    if not variants:
        raise InvalidInputError("the sweep has no variants: give a grid {name: [values]} or a "
                                "list of variant dicts (grid_variants, random_variants)")
    accepted = builder_parameters(builder)
    name = _builder_name(builder)
    for k, variant in enumerate(variants):
        if not isinstance(variant, dict):
            raise InvalidInputError(f"variant {k} is a {type(variant).__name__}, not a dict of "
                                    "parameter name -> value")
        unknown = [p for p in variant if accepted is not None and p not in accepted]
        if unknown:
            raise InvalidInputError(
                f"{name} takes no parameter {', '.join(map(repr, unknown))}; its parameters "
                f"are {', '.join(accepted)}: sweep some of these")
        for key, value in variant.items():
            _check_timing(key, value, f"variant {k}: {key}")
        clash = [p for p in variant if p in RECORD_FIELDS or p in METRICS or p in timing]
        if clash:
            raise InvalidInputError(
                f"variant {k}: parameter {', '.join(map(repr, clash))} is also "
                + ("a timing keyword given to the sweep; give it in one place only"
                   if set(clash) <= set(timing) else "the name of a record field or metric"))
    return [{**variant, **timing} for variant in variants]


def _check_timing(key, value, what):
    """Refuse a timing value every variant would fail on: substeps not an integer >= 1, fps
    or duration not a number > 0 (other keys pass)."""
    if key == "substeps":
        whole_number(value, what, advice="give the steps per frame (1 or more)")
    elif key in ("fps", "duration"):
        real_number(value, what, 0.0, low_open=True, advice="give a number > 0")


def _metric_functions(metrics):
    """``metrics`` (None: all of :data:`METRICS`; names of METRICS; or a dict name ->
    ``(mechanism, result) -> value``) as a dict name -> function."""
    if metrics is None:
        return dict(METRICS)
    if isinstance(metrics, dict):
        bad = [k for k, f in metrics.items() if not callable(f)]
        if bad:
            raise InvalidInputError(f"metric {bad[0]!r} is not a function "
                                    "(mechanism, result) -> value")
        return dict(metrics)
    if isinstance(metrics, str):
        metrics = [metrics]
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise InvalidInputError(f"unknown metric {unknown[0]!r}; choose from "
                                f"{', '.join(METRICS)} or pass a dict name -> function")
    return {m: METRICS[m] for m in metrics}


def run_variant(builder, params, metrics, index=0, timing=()):
    """Build ``builder(**params, **timing)``, simulate it and return its record (module
    docstring). ``metrics``: dict name -> ``(mechanism, result) -> value``; ``timing``: the
    keywords of ``params`` that are the sweep's fixed timing (left out of the record).
    A builder refusing its parameters (ValueError, TypeError) or a simulation that diverges
    (:class:`core.errors.SimulationError`, ArithmeticError) gives status "failed"."""
    start = time.perf_counter()
    record = {"index": int(index)}
    record.update((k, v) for k, v in params.items() if k not in timing)
    try:
        mechanism = builder(**params)
        result = simulate_mechanism(mechanism)
        values = {name: fn(mechanism, result) for name, fn in metrics.items()}
        status, error, steps = "completed", "", int(result.steps)
    except (ValueError, TypeError, ArithmeticError) as err:
        values = dict.fromkeys(metrics)
        status, steps = "failed", None
        error = str(err) if isinstance(err, SplineJointsError) \
            else f"{type(err).__name__}: {err}"
    record.update(status=status, error=error, steps=steps,
                  wall_time=time.perf_counter() - start)
    record.update(values)
    return record


def run_batch(builder, batch, metrics, timing=()):
    """The records (:func:`run_variant`) of ``batch``, a list of ``(index, params)``, in its
    order. An exception a variant raises that is not a failed record (a bug in a builder or a
    metric) stops the batch, with a note naming the variant's index and parameters."""
    records = []
    for index, params in batch:
        try:
            records.append(run_variant(builder, params, metrics, index, timing))
        except Exception as err:
            err.add_note(f"in sweep variant {index}: {_describe(params, timing)}")
            raise
    return records


def _describe(params, timing=()):
    """A variant's swept parameters as ``name=value, ...`` (its timing keywords left out)."""
    return ", ".join(f"{k}={v!r}" for k, v in params.items() if k not in timing)


def batch_size(remaining, workers, variant_seconds):
    """The number of variants of the next automatic task (module docstring): 1 while
    ``variant_seconds`` (the wall time of a variant, s) is None (not measured yet), else
    ``TASK_SECONDS / variant_seconds`` rounded down and at most ``remaining / (GUIDE x
    workers)`` rounded up (``remaining``: variants not yet sent), and at least 1."""
    if variant_seconds is None:
        return 1
    by_share = -(-int(remaining) // (GUIDE * max(int(workers), 1)))
    return max(1, int(min(by_share, TASK_SECONDS / max(variant_seconds, 1e-6))))


def _cancelled_record(index, params, metrics, timing=()):
    """The record of a variant a cancel kept from running (module docstring)."""
    record = {"index": int(index)}
    record.update((k, v) for k, v in params.items() if k not in timing)
    record.update(status="cancelled", error=CANCELLED, steps=None, wall_time=None)
    record.update(dict.fromkeys(metrics))
    return record


def run(builder, grid, metrics=None, client=None, *, fps=None, substeps=None, duration=None,
        timeout=CONNECT_TIMEOUT, batch=None, progress=None):
    """Simulate every variant of ``grid`` and return their records, in variant order.

    builder: a mechanism builder (``core.mechanisms.DEMOS[name]``); grid: a dict
    ``{name: [values]}`` (its full product, :func:`grid_variants`) or a list of variant dicts
    (:func:`random_variants`); metrics: None (all of :data:`METRICS`), names of METRICS, or a
    dict name -> ``(mechanism, result) -> value``; client: None (in this process), a
    ``distributed.Client``, or a scheduler address ``"tcp://host:8786"`` (connected within
    ``timeout`` seconds and closed at the end, :func:`connect`); fps, substeps, duration: the
    timing of every variant (None: the builder's default); batch: variants per Dask task
    (None: sized from the variants' measured time, :func:`batch_size`; ignored in this
    process); progress: None or ``progress(fraction) -> bool``, called after every variant
    in this process and every task on a cluster with the fraction of variants done; False
    cancels (the variants not run get records with status ``"cancelled"``).

    Raises InvalidInputError before any simulation for an empty sweep, a parameter the
    builder does not take (the message lists those it takes), an unknown metric, a ``batch``
    that is not an integer >= 1, a scheduler that cannot be reached or gets no worker within
    ``timeout`` seconds, and workers (named) or a scheduler that cannot import the sweep's
    code. A variant that fails gives a record with its error; any other exception of a
    variant propagates with a note naming it, and on a cluster cancels the other tasks.
    """
    timing = {k: v for k, v in (("fps", fps), ("substeps", substeps), ("duration", duration))
              if v is not None}
    variants = check_variants(builder, grid, timing)
    functions = _metric_functions(metrics)
    keys = tuple(timing)
    if batch is not None:
        batch = whole_number(batch, "the variants per task (batch)",
                             advice="give 1 or more, or None to size the tasks automatically")
    if client is None:
        records = []
        for k, variant in enumerate(variants):
            records += run_batch(builder, [(k, variant)], functions, keys)
            if progress is not None and progress((k + 1) / len(variants)) is False:
                records += [_cancelled_record(j, v, functions, keys)
                            for j, v in enumerate(variants) if j > k]
                break
        return records
    owned = isinstance(client, str)
    if owned:
        client = connect(client, timeout)
    try:
        _check_workers(client, builder, timeout)
        return _run_on_client(client, builder, variants, functions, keys, batch, progress)
    except Exception as err:
        missing = _missing_module(err)
        if missing is None:
            raise
        raise InvalidInputError(
            f"the Dask cluster could not import {missing!r} to run the sweep: start "
            "`dask scheduler` and `dask worker` in the same pinned environment as this "
            "client, with this repository (the same commit) on their PYTHONPATH") from err
    finally:
        if owned:
            client.close()


def _run_on_client(client, builder, variants, functions, keys, batch, progress):
    """The records of :func:`run` on ``client``'s workers, ``batch`` variants per task (None:
    :func:`batch_size`, ``IN_FLIGHT`` tasks per worker out at a time; an integer: every task
    sent at once)."""
    as_completed = distributed_module().as_completed
    n = len(variants)
    workers = sum(client.nthreads().values())     # worker threads: tasks that run at once
    limit = n if batch is not None else IN_FLIGHT * max(workers, 1)
    records = [None] * n
    sent, done, seconds = 0, 0, None
    pending = {}

    def send():
        nonlocal sent
        size = batch or batch_size(n - sent, workers, seconds)
        chunk = [(k, variants[k]) for k in range(sent, min(n, sent + size))]
        future = client.submit(run_batch, builder, chunk, functions, keys, pure=False)
        pending[future] = (chunk[0][0], chunk[-1][0])
        sent += len(chunk)
        return future

    futures = as_completed([send() for _ in range(limit) if sent < n])
    try:
        for future in futures:
            first, last = pending.pop(future)
            try:
                returned = future.result()
            except Exception as err:
                if not any(note.startswith("in sweep variant")
                           for note in getattr(err, "__notes__", ())):
                    err.add_note(f"in the Dask task of sweep variants {first} to {last}")
                raise
            for record in returned:
                records[record["index"]] = record
            done += len(returned)
            seconds = statistics.median(r["wall_time"] for r in returned)
            if progress is not None and progress(done / n) is False:
                break
            while sent < n and len(pending) < limit:
                futures.add(send())
    finally:
        if pending:
            client.cancel(list(pending))
    return [r if r is not None else _cancelled_record(k, variants[k], functions, keys)
            for k, r in enumerate(records)]


def _check_workers(client, builder, timeout):
    """InvalidInputError naming the workers when no worker joins ``client``'s scheduler
    within ``timeout`` seconds, or when a worker cannot import the sweep's code (this module
    and the builder's): such a worker would fail to unpack its tasks and never return."""
    wait_for_workers(client, timeout)
    modules = [__name__]
    if getattr(builder, "__module__", None) not in (None, "__main__", __name__):
        modules.append(builder.__module__)
    for module in modules:
        results = client.run(importlib.import_module, module, on_error="return")
        failed = {worker: result for worker, result in results.items()
                  if isinstance(result, BaseException)}
        if failed:
            raise InvalidInputError(
                f"the Dask worker(s) {', '.join(sorted(failed))} could not import "
                f"{module!r} ({next(iter(failed.values()))}): start `dask worker` in the same "
                "pinned environment as this client, with this repository (the same commit) "
                "on its PYTHONPATH")


def _missing_module(err):
    """The name of the module a ModuleNotFoundError in ``err``'s chain of causes names, or
    None (a scheduler or worker without the sweep's code)."""
    while err is not None:
        if isinstance(err, ModuleNotFoundError):
            return err.name
        err = err.__cause__ or err.__context__
    return None


def table(records):
    """``(columns, rows)`` of a table with one row per record: the record's keys in their
    order, a tuple-valued entry spread over columns ``name[0], name[1], ...`` (as many as
    its longest value; shorter and None values leave blanks, as None cells). Records of one
    sweep share their keys, so the columns depend only on the sweep."""
    widths = {}
    for record in records:
        for key, value in record.items():
            width = len(value) if isinstance(value, tuple) else 0
            widths[key] = max(widths.get(key, 0), width)
    columns = [f"{key}[{i}]" if widths[key] else key
               for key in widths for i in range(max(widths[key], 1))]
    rows = []
    for record in records:
        row = []
        for key in widths:
            value = record.get(key)
            if widths[key]:
                value = tuple(value) if isinstance(value, tuple) else ()
                row += list(value) + [None] * (widths[key] - len(value))
            else:
                row.append(None if isinstance(value, tuple) else value)
        rows.append(row)
    return columns, rows
