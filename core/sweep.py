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
(``client=None``) or maps them over the workers of a Dask distributed client (one task per
variant, results in variant order). A variant whose builder refuses its parameters or whose
simulation diverges gives a record with status ``"failed"`` and the error's message; the other
variants are unaffected.

A record (:func:`run_variant`) is a flat dict: ``index``, the variant's parameters, then
``status`` ("completed" or "failed"), ``error`` ("" or the message), ``steps``, ``wall_time``
(s, building and simulating) and one entry per metric (None for a failed variant). The
default metrics (:data:`METRICS`) are the relative energy drift and its warning
(:func:`core.mechanisms.energy_drift_warning`, "" when none), the final coordinates ``q``
(tuple, nq), the last body's final position (tuple, 3), the largest constraint error (m) and
the largest limit violation (None for a mechanism without limits). Every entry but
``wall_time`` is a deterministic function of the variant, so a sweep on a cluster returns
the records of the same sweep in one process. :func:`table` flattens records into the rows of
a table file.

Dask distributed is reached through :mod:`core.cluster` (:func:`~core.cluster.connect`,
:func:`~core.cluster.local_client`), imported only when a sweep runs on a client.
"""

import importlib
import inspect
import itertools
import math
import time

import numpy as np

from .checks import real_number, whole_number
from .cluster import CONNECT_TIMEOUT, connect, wait_for_workers
from .errors import InvalidInputError, SplineJointsError
from .limits import LimitSolver
from .mechanisms import energy_drift_warning, simulate_mechanism

__all__ = ["MAX_VARIANTS", "METRICS", "RECORD_FIELDS", "builder_parameters", "grid_variants",
           "random_variants", "check_variants", "run", "run_variant", "table"]

#: the fields of every record after its parameters and before its metrics
RECORD_FIELDS = ("index", "status", "error", "steps", "wall_time")
#: the most variants of one sweep, counted before any is built
MAX_VARIANTS = 100_000

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


def run(builder, grid, metrics=None, client=None, *, fps=None, substeps=None, duration=None,
        timeout=CONNECT_TIMEOUT):
    """Simulate every variant of ``grid`` and return their records, in variant order.

    builder: a mechanism builder (``core.mechanisms.DEMOS[name]``); grid: a dict
    ``{name: [values]}`` (its full product, :func:`grid_variants`) or a list of variant dicts
    (:func:`random_variants`); metrics: None (all of :data:`METRICS`), names of METRICS, or a
    dict name -> ``(mechanism, result) -> value``; client: None (in this process), a
    ``distributed.Client``, or a scheduler address ``"tcp://host:8786"`` (connected within
    ``timeout`` seconds and closed at the end, :func:`connect`); fps, substeps, duration: the
    timing of every variant (None: the builder's default).

    Raises InvalidInputError before any simulation for an empty sweep, a parameter the
    builder does not take (the message lists those it takes), an unknown metric, a scheduler
    that cannot be reached or gets no worker within ``timeout`` seconds, and workers (named)
    or a scheduler that cannot import the sweep's code. A variant that fails gives a record
    with its error.
    """
    timing = {k: v for k, v in (("fps", fps), ("substeps", substeps), ("duration", duration))
              if v is not None}
    variants = check_variants(builder, grid, timing)
    functions = _metric_functions(metrics)
    keys = tuple(timing)
    if client is None:
        return [run_variant(builder, v, functions, k, keys) for k, v in enumerate(variants)]
    owned = isinstance(client, str)
    if owned:
        client = connect(client, timeout)
    try:
        _check_workers(client, builder, timeout)
        futures = [client.submit(run_variant, builder, v, functions, k, keys, pure=False)
                   for k, v in enumerate(variants)]
        return client.gather(futures)
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
