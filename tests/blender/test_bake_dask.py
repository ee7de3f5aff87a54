"""scripts/bake.py on Dask distributed: a LocalCluster of 2 workers bakes the same keyframes as
the local process pool; a worker killed while it holds a task is replaced and the file is baked
once, with the retry counted; an unreachable scheduler, a scheduler without workers and a worker
without bpy are refused with one sentence each."""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = [sys.executable, str(ROOT / "scripts" / "bake.py")]
NAMES = ["hinge_chain.blend", "knee_pendulum.blend", "beads_on_a_wire.blend"]
PAUSE_ENV = "SPLINE_JOINTS_BAKE_PAUSE_BEFORE_RENAME"
WAIT = 120.0  # s: bound on any wait (three demo bakes on 2 workers take a few seconds)

distributed = pytest.importorskip("distributed")


@pytest.fixture
def inputs(tmp_path):
    """Copies of three short demo files in tmp_path/in (the demos themselves are never written)."""
    (tmp_path / "in").mkdir()
    return [Path(shutil.copy(ROOT / "demo_blends" / name, tmp_path / "in" / name)) for name in NAMES]


@pytest.fixture
def cluster(sandbox, monkeypatch):
    """A LocalCluster of 2 worker processes (with nannies that restart a killed worker) whose
    workers see the sandboxed extension, and a client of it."""
    monkeypatch.setenv("BLENDER_USER_RESOURCES", sandbox["env"]["BLENDER_USER_RESOURCES"])
    monkeypatch.setenv(PAUSE_ENV, "2")  # every bake waits 2 s before its rename: time to kill a worker
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as local, distributed.Client(local) as client:
        yield client


def bake(files, out, env, *extra):
    return subprocess.run([*SCRIPT, *map(str, files), "--out", str(out), *extra], env=env,
                          capture_output=True, text=True, timeout=WAIT)


def summary(stdout):
    """(baked, failed, retried) from bake.py's summary line."""
    match = re.search(r"^summary: (\d+) baked, (\d+) failed, (\d+) retried", stdout, re.MULTILINE)
    assert match, stdout
    return tuple(map(int, match.groups()))


def scenario_keyframes(tmp, paths):
    """Every baked keyframe coordinate of each file: {path: {"action/slot/data_path[i]": [x, y, ...]}}."""
    import bpy

    out = {}
    for path in paths:
        bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
        keys = {}
        for action in bpy.data.actions:
            for layer in action.layers:
                for strip in layer.strips:
                    for bag in strip.channelbags:
                        for fc in bag.fcurves:
                            co = [0.0] * (2 * len(fc.keyframe_points))
                            fc.keyframe_points.foreach_get("co", co)
                            keys[f"{action.name}/{bag.slot.identifier}/{fc.data_path}[{fc.array_index}]"] = co
        out[path] = keys
    return out


def test_local_cluster_bakes_the_keyframes_of_the_process_pool(blender, sandbox, inputs, tmp_path):
    single = bake(inputs, tmp_path / "single", sandbox["env"], "--jobs", "1")
    assert single.returncode == 0, single.stdout + single.stderr
    dask = bake(inputs, tmp_path / "dask", sandbox["env"], "--scheduler", "local", "--jobs", "2")
    assert dask.returncode == 0, dask.stdout + dask.stderr
    assert summary(dask.stdout) == (3, 0, 0)
    assert sorted(os.listdir(tmp_path / "dask")) == sorted(NAMES)  # no temporary left
    for name in NAMES:
        assert f"baked: {tmp_path / 'dask' / name}: baked 1 mechanism(s)" in dask.stdout, dask.stdout
    res = blender(scenario_keyframes, paths=[str(tmp_path / d / n) for d in ("single", "dask") for n in NAMES])
    for name in NAMES:
        single_keys, dask_keys = res[str(tmp_path / "single" / name)], res[str(tmp_path / "dask" / name)]
        assert single_keys and all(len(co) > 2 for co in single_keys.values()), single_keys
        assert dask_keys == single_keys, name


def test_a_worker_killed_mid_task_is_replaced_and_its_file_baked_once(cluster, sandbox, inputs, tmp_path):
    address = cluster.scheduler.address
    out = tmp_path / "out"
    proc = subprocess.Popen([*SCRIPT, *map(str, inputs[:2]), "--out", str(out), "--scheduler", address],
                            env=sandbox["env"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + WAIT
    while not any(cluster.processing().values()):
        assert time.monotonic() < deadline and proc.poll() is None, "no task reached a worker"
        time.sleep(0.05)
    time.sleep(1.0)  # the task's child is baking or waiting to rename
    holder = next(worker for worker, keys in cluster.processing().items() if keys)
    os.kill(cluster.run(os.getpid, workers=[holder])[holder], signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=WAIT)
    assert proc.returncode == 0, stdout + stderr
    assert summary(stdout) == (2, 0, 1)
    assert sorted(os.listdir(out)) == sorted(NAMES[:2])  # each file once, no temporary left
    assert sorted(ln.split(": ")[1] for ln in stdout.splitlines() if ln.startswith("baked:")) == [
        str(out / name) for name in sorted(NAMES[:2])]


def test_a_worker_without_bpy_is_named_before_any_task(cluster, sandbox, inputs, tmp_path):
    worker = sorted(cluster.scheduler_info()["workers"])[0]
    cluster.run(lambda: sys.modules.__setitem__("bpy", None), workers=[worker])  # import bpy fails there
    proc = bake(inputs[:1], tmp_path / "out", sandbox["env"], "--scheduler", cluster.scheduler.address)
    assert proc.returncode == 1 and "baked:" not in proc.stdout, proc.stdout + proc.stderr
    assert f"error: Dask worker {worker}: cannot import bpy (" in proc.stderr, proc.stderr
    assert os.listdir(tmp_path / "out") == []


def test_an_unreachable_scheduler_is_refused_within_the_timeout(inputs, tmp_path):
    with socket.socket() as sock:  # a port nothing listens on: bound, then released
        sock.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{sock.getsockname()[1]}"
    start = time.monotonic()
    proc = bake(inputs[:1], tmp_path / "out", os.environ, "--scheduler", address)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert time.monotonic() - start < 30.0  # the 10 s timeout plus Python's and distributed's start
    assert proc.stderr.startswith(f"error: could not reach a Dask scheduler at '{address}' within 10 s"), \
        proc.stderr
    assert "start one there with `dask scheduler`" in proc.stderr
    assert os.listdir(tmp_path / "out") == []


def test_a_scheduler_without_workers_is_refused(inputs, tmp_path):
    with distributed.LocalCluster(n_workers=0, dashboard_address=":0") as empty:
        proc = bake(inputs[:1], tmp_path / "out", os.environ, "--scheduler", empty.scheduler_address)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr == (f"error: no Dask worker joined the scheduler at {empty.scheduler_address} within "
                           f"10 s: start workers with `dask worker {empty.scheduler_address}`\n")
    assert os.listdir(tmp_path / "out") == []
