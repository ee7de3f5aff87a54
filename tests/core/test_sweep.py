"""Parameter sweeps (core.sweep, scripts/sweep.py): records equal to simulating each variant by
hand, the same records from a 2-worker Dask LocalCluster as in one process and whatever the
variants per task, progress and cancelling per task, refusals before any work, failed
variants as records, errors naming their variant, and the CSV table and PNG plot written
beside each other.

Runs are short (0.1-0.25 s of simulated knee pendulum per variant); the sweep's speed is
measured by scripts/benchmarks/sweep.py.
"""

import csv
import importlib.util
import math
import os
import re
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.mechanisms import knee_pendulum, simulate_mechanism, spherical_chain
from core.sweep import (CANCELLED, GUIDE, METRICS, TASK_SECONDS, batch_size, builder_parameters,
                        grid_variants, random_variants, run, table)

ROOT = Path(__file__).resolve().parents[2]
#: a diverging variant: an ankle spring far too stiff for the pendulum's 4 ms step
STIFF = 1e9


def _without_wall_time(records):
    """Records minus ``wall_time``, the one entry that is not a function of the variant."""
    return [{k: v for k, v in r.items() if k != "wall_time"} for r in records]


def _assert_same_records(a, b):
    """Records equal but for ``wall_time``, their floats (and lists of floats) to 1e-12:
    kernels compiled in this process and kernels a worker loads from numba's cache may
    contract multiply-adds differently (fastmath "contract"), which changes the last bits of
    a run of about a hundred substeps; the relative drifts and positions are of order 1
    or below, so 1e-12 absolute and relative covers a few ulps per substep."""
    assert len(a) == len(b)
    for x, y in zip(_without_wall_time(a), _without_wall_time(b)):
        assert x.keys() == y.keys()
        for k, u in x.items():
            if isinstance(u, float) or (isinstance(u, (list, tuple)) and u and
                                        isinstance(np.ravel(u)[0], float)):
                np.testing.assert_allclose(y[k], u, rtol=1e-12, atol=1e-12, err_msg=k)
            else:
                assert y[k] == u, (k, y[k], u)


def _knee_variants(n):
    return random_variants({"knee_start": (-1.5, -1.1), "ankle_stiffness": (2.0, 10.0)}, n,
                           seed=0)


def _fractions(stop_after=None):
    """A progress callback recording its fractions; it returns False (cancel) from its
    ``stop_after``-th call on."""
    seen = []

    def progress(fraction):
        seen.append(fraction)
        return stop_after is None or len(seen) < stop_after

    return progress, seen


def _raises_at_steps(steps):
    """A metric that raises KeyError (not a failed record: a bug in a metric) for a variant
    of ``steps`` steps."""
    return {"bug": lambda mechanism, result: {}[result.steps] if result.steps == steps else 0.0}


@pytest.fixture(scope="module")
def two_workers():
    """A client of a LocalCluster of 2 one-thread worker processes, for this module."""
    pytest.importorskip("distributed", reason="Dask distributed is not installed here")
    from core.cluster import local_client
    client = local_client(2)
    yield client
    client.close()


def _free_port():
    """A local TCP port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sweep_script():
    spec = importlib.util.spec_from_file_location("sweep_script", ROOT / "scripts" / "sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- variants ---------------------------------------------------------------------------------

def test_grid_variants_are_the_full_product_with_the_last_parameter_fastest():
    assert grid_variants({"a": [1, 2], "b": [3.0, 4.0, 5.0]}) == [
        {"a": 1, "b": 3.0}, {"a": 1, "b": 4.0}, {"a": 1, "b": 5.0},
        {"a": 2, "b": 3.0}, {"a": 2, "b": 4.0}, {"a": 2, "b": 5.0}]


def test_random_variants_are_seeded_uniform_samples_inside_their_ranges():
    ranges = {"knee_start": (-1.5, -1.1), "ankle_stiffness": (2.0, 10.0)}
    a = random_variants(ranges, 50, seed=3)
    assert a == random_variants(ranges, 50, seed=3) != random_variants(ranges, 50, seed=4)
    assert len(a) == 50 and all(list(v) == list(ranges) for v in a)
    for name, (lo, hi) in ranges.items():
        values = np.array([v[name] for v in a])
        assert np.all((lo <= values) & (values <= hi)) and np.ptp(values) > 0.5 * (hi - lo)


@pytest.mark.parametrize("ranges, n, message", [
    ({}, 3, "no ranges to sample"),
    ({"knee_start": (-1.1, -1.5)}, 3, r"need finite low <= high"),
    ({"knee_start": (-1.5, math.inf)}, 3, r"need finite low <= high"),
    ({"knee_start": -1.5}, 3, r"give two numbers \(low, high\)"),
    ({"knee_start": (-1.5, -1.1)}, 0, "integer >= 1"),
])
def test_bad_random_ranges_are_refused(ranges, n, message):
    with pytest.raises(InvalidInputError, match=message):
        random_variants(ranges, n)


# -- in-process sweeps ----------------------------------------------------------------------

def test_in_process_records_equal_simulating_each_variant_by_hand():
    grid = {"knee_start": [-1.4, -1.2], "ankle_stiffness": [3.0, 6.0]}
    records = run(knee_pendulum, grid, duration=0.25)
    assert [r["index"] for r in records] == [0, 1, 2, 3]
    for record, params in zip(records, grid_variants(grid)):
        mechanism = knee_pendulum(duration=0.25, **params)
        result = simulate_mechanism(mechanism)
        assert list(record)[:3] == ["index", "knee_start", "ankle_stiffness"]
        assert {k: record[k] for k in params} == params
        assert record["status"] == "completed" and record["error"] == ""
        assert record["steps"] == result.steps == 60 and record["wall_time"] > 0
        assert record["energy_drift"] == result.energy_drift
        assert record["drift_warning"] == ""                 # passive, well resolved
        assert record["final_q"] == tuple(result.q[-1])
        assert record["final_position"] == tuple(result.poses[-1, -1, :3, 3])
        assert record["max_constraint_error"] == result.constraint_error.max()
        assert record["max_limit_violation"] is None         # the knee pendulum has no limits
        assert list(record)[-len(METRICS):] == list(METRICS)


def test_a_mechanism_with_limits_reports_its_largest_limit_violation():
    records = run(spherical_chain, {"n_links": [2]}, metrics=["max_limit_violation"],
                  duration=0.3)
    violation = records[0]["max_limit_violation"]
    # the cones stop the falling links within the limit solver's deadband (1e-3) plus the
    # penetration of one substep
    assert records[0]["status"] == "completed" and 0.0 <= violation < 5e-3


def test_a_diverging_or_refused_variant_is_a_failed_record_and_the_others_complete():
    records = run(knee_pendulum, [{"knee_start": -1.3, "ankle_stiffness": 5.0},
                                  {"knee_start": -1.3, "ankle_stiffness": STIFF},
                                  {"knee_start": 1.0, "ankle_stiffness": 5.0}], duration=0.25)
    assert [r["status"] for r in records] == ["completed", "failed", "failed"]
    assert "diverged" in records[1]["error"] and "reduce the step" in records[1]["error"]
    assert "knee_start must lie in the OpenSim range" in records[2]["error"]
    for r in records[1:]:
        assert r["steps"] is None and all(r[m] is None for m in METRICS)


def test_progress_in_this_process_comes_after_every_variant_and_false_cancels():
    variants = _knee_variants(4)
    progress, seen = _fractions(stop_after=2)
    records = run(knee_pendulum, variants, duration=0.1, progress=progress)
    assert seen == [0.25, 0.5]
    assert [r["status"] for r in records] == ["completed"] * 2 + ["cancelled"] * 2
    assert [r["index"] for r in records] == [0, 1, 2, 3]
    assert list(records[3]) == list(records[0])          # the same columns in the same order
    assert records[3]["knee_start"] == variants[3]["knee_start"]


def test_an_automatic_batch_is_half_a_second_of_work_and_shrinks_at_the_end():
    assert batch_size(1000, 4, None) == 1                         # no time measured yet
    assert batch_size(1000, 4, 0.04) == int(TASK_SECONDS / 0.04) == 12
    assert batch_size(1000, 4, 0.001) == 1000 // (GUIDE * 4) == 125   # a share of the rest
    assert batch_size(9, 4, 0.001) == 2 and batch_size(1, 4, 0.001) == 1
    assert batch_size(1000, 4, 30.0) == 1                         # variants longer than a task


@pytest.mark.parametrize("batch", [0, 2.5, "4"])
def test_a_batch_that_is_not_a_whole_number_of_variants_is_refused(batch):
    with pytest.raises(InvalidInputError, match=r"variants per task \(batch\) must be an "
                                                r"integer >= 1.*None to size the tasks"):
        run(knee_pendulum, {"knee_start": [-1.3]}, batch=batch)


def test_metrics_can_be_chosen_by_name_or_given_as_functions():
    records = run(knee_pendulum, {"knee_start": [-1.3]}, duration=0.1,
                  metrics={"final_knee": lambda mechanism, result: float(result.q[-1, 1])})
    assert list(records[0])[-1] == "final_knee" and "energy_drift" not in records[0]
    assert run(knee_pendulum, {"knee_start": [-1.3]}, metrics=["energy_drift"],
               duration=0.1)[0]["energy_drift"] > 0
    with pytest.raises(InvalidInputError, match="unknown metric 'drift'; choose from"):
        run(knee_pendulum, {"knee_start": [-1.3]}, metrics=["drift"])


# -- refusals before any work -----------------------------------------------------------------

def test_a_parameter_the_builder_does_not_take_is_refused_before_any_work():
    calls = []

    def pendulum(*, fps=60.0, substeps=4, duration=0.1, knee_start=-1.3):
        calls.append(knee_start)
        return knee_pendulum(fps=fps, substeps=substeps, duration=duration,
                             knee_start=knee_start)

    assert builder_parameters(pendulum) == ("fps", "substeps", "duration", "knee_start")
    with pytest.raises(InvalidInputError, match=r"pendulum takes no parameter 'damping'; its "
                                                r"parameters are fps, substeps, duration, "
                                                r"knee_start: sweep some of these"):
        run(pendulum, {"knee_start": [-1.3, -1.2], "damping": [0.1]})
    with pytest.raises(InvalidInputError, match="takes no parameter 'damping'"):
        run(pendulum, [{"knee_start": -1.3}, {"damping": 0.1}])
    assert calls == []


@pytest.mark.parametrize("grid, timing, message", [
    ({}, {}, "the grid has no parameters"),
    ({"knee_start": []}, {}, "'knee_start' has no values"),
    ({"knee_start": -1.3}, {}, r"give a list of values, got -1.3; write \[-1.3\]"),
    ([], {}, "the sweep has no variants"),
    ({"duration": [0.1, 0.2]}, {"duration": 0.3}, "also a timing keyword given to the sweep"),
])
def test_empty_or_contradictory_sweeps_are_refused(grid, timing, message):
    with pytest.raises(InvalidInputError, match=message):
        run(knee_pendulum, grid, **timing)


# -- Dask distributed -------------------------------------------------------------------------

def test_an_unreachable_scheduler_is_a_clear_error_within_the_timeout():
    pytest.importorskip("distributed", reason="Dask distributed is not installed here")
    threads = {t.ident for t in threading.enumerate()}
    address = f"tcp://127.0.0.1:{_free_port()}"
    start = time.perf_counter()
    with pytest.raises(InvalidInputError, match=rf"could not reach a Dask scheduler at "
                                                rf"'{address}' within 2 s .*dask scheduler"):
        run(knee_pendulum, {"knee_start": [-1.3]}, client=address, timeout=2)
    assert time.perf_counter() - start < 12
    with pytest.raises(InvalidInputError, match="check the address"):
        run(knee_pendulum, {"knee_start": [-1.3]}, client="no-port-here", timeout=2)
    assert {t.ident for t in threading.enumerate()} == threads     # no IO loop left running


def _accepting(reply):
    """A listening socket on a local port that accepts every connection and sends ``reply``
    (b"" sends nothing), keeping the connection open: not a Dask scheduler."""
    server = socket.create_server(("127.0.0.1", 0))
    held = []

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:                 # the server was closed
                return
            held.append(conn)
            conn.sendall(reply)

    threading.Thread(target=serve, daemon=True).start()
    return server, held


@pytest.mark.parametrize("reply, reason", [
    (b"", "the connection was accepted, but nothing answered distributed's handshake"),
    (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
     "something answered, but not as a Dask scheduler"),
])
def test_a_server_that_is_not_a_scheduler_is_a_clear_error_within_the_timeout(reply, reason):
    """A port where something else listens (silent, or a web server such as a scheduler's
    dashboard) is refused within the timeout, saying what answered and which port a scheduler
    uses, and leaves no thread running."""
    pytest.importorskip("distributed", reason="Dask distributed is not installed here")
    server, held = _accepting(reply)
    threads = {t.ident for t in threading.enumerate()}
    address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
    try:
        start = time.perf_counter()
        with pytest.raises(InvalidInputError, match=re.escape(f"({reason}") + ".*8787 is its "
                                                                              "dashboard"):
            run(knee_pendulum, {"knee_start": [-1.3]}, client=address, timeout=1)
        assert time.perf_counter() - start < 10
        assert {t.ident for t in threading.enumerate()} == threads
    finally:
        server.close()
        for conn in held:
            conn.close()


def test_a_local_cluster_of_two_workers_returns_the_in_process_records(two_workers):
    """200 knee-pendulum variants (and one that diverges) on 2 worker processes: the same
    records, in variant order, as the same sweep in this process; a builder from a module the
    workers cannot import is refused naming both workers."""
    variants = _knee_variants(200) + [{"knee_start": -1.3, "ankle_stiffness": STIFF}]
    local = run(knee_pendulum, variants, duration=0.1)
    assert len(two_workers.scheduler_info()["workers"]) == 2
    remote = run(knee_pendulum, variants, client=two_workers, duration=0.1)
    _assert_same_records(remote, local)
    assert [r["status"] for r in remote] == ["completed"] * 200 + ["failed"]

    def elsewhere(*, fps=60.0, substeps=4, duration=0.1, knee_start=-1.3):
        return knee_pendulum(knee_start=knee_start)

    elsewhere.__module__ = "module_the_workers_lack"
    with pytest.raises(InvalidInputError, match=r"the Dask worker\(s\) tcp://\S+, tcp://\S+ "
                                                r"could not import 'module_the_workers_"
                                                r"lack' .*PYTHONPATH"):
        run(elsewhere, {"knee_start": [-1.3]}, client=two_workers)


def test_batches_of_any_size_return_the_records_of_one_variant_per_task(two_workers,
                                                                         monkeypatch):
    """The same 81 variants one per task, in automatic batches and in batches of 7 (the last
    one short): the same records bit for bit, in variant order (each worker runs the same
    kernels whatever its batch), and progress once per task, rising to 1. With tasks of
    unbounded time the automatic batches are one variant for each of the 2 x 2 first tasks,
    then a quarter of the variants not yet sent (2 workers, GUIDE 2), rounded up."""
    variants = _knee_variants(80) + [{"knee_start": -1.3, "ankle_stiffness": STIFF}]
    progress, single = _fractions()
    one = run(knee_pendulum, variants, client=two_workers, duration=0.1, batch=1,
              progress=progress)
    assert single == [k / 81 for k in range(1, 82)]
    monkeypatch.setattr("core.sweep.TASK_SECONDS", math.inf)
    guided = [1, 1, 1, 1, 20, 15, 11, 8, 6, 5, 3, 3, 2, 1, 1, 1, 1]
    for batch, sizes in ((None, guided), (7, [7] * 11 + [4])):
        progress, seen = _fractions()
        records = run(knee_pendulum, variants, client=two_workers, duration=0.1, batch=batch,
                      progress=progress)
        assert _without_wall_time(records) == _without_wall_time(one)
        assert [r["index"] for r in records] == list(range(81))
        assert records[-1]["status"] == "failed"
        assert seen == sorted(seen) and seen[-1] == 1.0
        assert sorted(np.diff(np.round(np.array([0.0, *seen]) * 81))) == sorted(sizes)


def test_a_cancel_on_a_cluster_keeps_the_finished_tasks_and_marks_the_rest(two_workers):
    variants = _knee_variants(40)
    whole = run(knee_pendulum, variants, client=two_workers, duration=0.1, batch=1)
    progress, seen = _fractions(stop_after=2)
    records = run(knee_pendulum, variants, client=two_workers, duration=0.1, batch=4,
                  progress=progress)
    assert seen == [0.1, 0.2]                           # two tasks of 4 variants came back
    assert [r["index"] for r in records] == list(range(40))
    done = [r for r in records if r["status"] == "completed"]
    assert len(done) == 8
    assert _without_wall_time(done) == _without_wall_time([whole[r["index"]] for r in done])
    for r in records:
        if r["status"] != "completed":
            assert r["status"] == "cancelled" and r["error"] == CANCELLED
            assert r["steps"] is None and r["wall_time"] is None
            assert all(r[m] is None for m in METRICS)
            assert {k: r[k] for k in variants[0]} == variants[r["index"]]


def test_an_error_of_a_variant_in_a_batch_names_the_variant(two_workers):
    """A metric that raises KeyError (a bug, not a failed simulation) for the second of three
    variants run in one task stops the sweep with the KeyError, noted with that variant."""
    grid = {"knee_start": [-1.3], "duration": [0.1, 0.2, 0.3]}    # 24, 48, 72 steps
    for client, batch in ((None, None), (two_workers, 3), (two_workers, None)):
        with pytest.raises(KeyError) as caught:
            run(knee_pendulum, grid, metrics=_raises_at_steps(48), client=client, batch=batch)
        assert caught.value.__notes__ == ["in sweep variant 1: knee_start=-1.3, duration=0.2"]


def test_a_scheduler_without_workers_is_a_clear_error_within_the_timeout():
    distributed = pytest.importorskip("distributed",
                                      reason="Dask distributed is not installed here")
    client = distributed.Client(n_workers=0, processes=False, dashboard_address=":0")
    try:
        start = time.perf_counter()
        with pytest.raises(InvalidInputError, match=r"no Dask worker joined the scheduler at "
                                                    r"\S+ within 1 s: start workers with "
                                                    r"`dask worker"):
            run(knee_pendulum, {"knee_start": [-1.3]}, client=client, timeout=1)
        assert time.perf_counter() - start < 10
    finally:
        client.close()


# -- the command line: CSV table and PNG plot ---------------------------------------------------

def test_the_script_writes_a_readable_table_and_plot(tmp_path, capsys):
    image = pytest.importorskip("matplotlib.image", reason="matplotlib is not installed here")
    script = _sweep_script()
    out = tmp_path / "sweeps"
    argv = ["knee_pendulum", "--param", "knee_start=-1.4,-1.2", "--param",
            f"ankle_stiffness=5,{STIFF:g}", "--duration", "0.25", "--out", str(out)]
    assert script.main(argv) == 1          # two variants failed
    printed = capsys.readouterr().out
    assert "4 variants, 2 failed" in printed and "variants per second" in printed
    assert printed.count("failed: variant") == 2
    assert sorted(os.listdir(out)) == ["knee_pendulum_sweep.csv", "knee_pendulum_sweep.png"]

    with open(out / "knee_pendulum_sweep.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    expected = run(knee_pendulum, {"knee_start": [-1.4, -1.2], "ankle_stiffness": [5, STIFF]},
                   duration=0.25)
    columns, _ = table(expected)
    assert list(rows[0]) == columns
    assert columns[:8] == ["index", "knee_start", "ankle_stiffness", "status", "error",
                           "steps", "wall_time", "energy_drift"]
    assert "final_q[2]" in columns and "final_position[0]" in columns
    for row, record in zip(rows, expected):
        assert row["status"] == record["status"]
        if record["status"] == "completed":
            assert float(row["energy_drift"]) == record["energy_drift"]   # repr round trip
            assert float(row["final_q[1]"]) == record["final_q"][1]
            assert row["max_limit_violation"] == "" and row["error"] == ""
        else:
            assert row["error"] == record["error"] and row["final_q[1]"] == ""
    picture = image.imread(out / "knee_pendulum_sweep.png")
    assert picture.shape[2] == 4 and picture.shape[0] > 100 and np.ptp(picture[..., :3]) > 0.5

    # one swept parameter: the metric against it, over the previous files
    assert script.main(["knee_pendulum", "--param", "knee_start=-1.4,-1.3,-1.2",
                        "--duration", "0.1", "--plot", "max_constraint_error",
                        "--out", str(out)]) == 0
    with open(out / "knee_pendulum_sweep.csv", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 3
    assert image.imread(out / "knee_pendulum_sweep.png").shape[0] > 100
    assert sorted(os.listdir(out)) == ["knee_pendulum_sweep.csv", "knee_pendulum_sweep.png"]


@pytest.mark.parametrize("argv, message", [
    (["--param", "damping=0.1,0.2"], "takes no parameter 'damping'"),
    (["--param", "knee_start"], "write NAME=VALUES"),
    ([], "give either --param"),
    (["--param", "knee_start=-1.3", "--random", "knee_start=-1.5:-1.1"], "not both"),
    (["--random", "knee_start=-1.5"], "give one range LOW:HIGH"),
    (["--param", "knee_start=-1.3", "--batch", "0"], "--batch must be an integer >= 1"),
])
def test_the_script_refuses_bad_input_with_one_sentence_and_writes_nothing(tmp_path, capsys,
                                                                           argv, message):
    script = _sweep_script()
    out = tmp_path / "sweeps"
    assert script.main(["knee_pendulum", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert not out.exists()
