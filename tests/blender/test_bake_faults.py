"""Fault injection on scripts/bake.py: killing the parent (gracefully and outright), a child, a
child while its complete temporary waits to be renamed, a damaged .blend that crashes Blender's
reader, and a second run into the same --out. After each: no partial or stale file, no process
left, and a clean rerun bakes everything."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scripts import bake

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = [sys.executable, str(ROOT / "scripts" / "bake.py")]
NAMES = ["hinge_chain.blend", "knee_pendulum.blend"]
PAUSE_ENV = "SPLINE_JOINTS_BAKE_PAUSE_BEFORE_RENAME"
WAIT = 120.0  # s: bound on any wait for a process (two demo bakes take a few seconds)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@pytest.fixture
def inputs(tmp_path):
    """Copies of two demo files (the demos themselves are never written)."""
    folder = tmp_path / "in"
    folder.mkdir()
    for name in NAMES:
        shutil.copy(ROOT / "demo_blends" / name, folder / name)
    return [folder / name for name in NAMES]


def start(files, out, env, pause=None, jobs=2):
    """bake.py in a process group of its own (its pid), as a shell starts a command."""
    env = dict(env, **({PAUSE_ENV: str(pause)} if pause is not None else {}))
    return subprocess.Popen([*SCRIPT, *map(str, files), "--out", str(out), "--jobs", str(jobs)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_until(predicate, what):
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def temporaries(out):
    return sorted(n for n in os.listdir(out) if ".tmp.blend" in n) if out.is_dir() else []


def complete_temporaries(out, n):
    """True when ``n`` complete temporaries (Blender has renamed its "@" file) wait in ``out``."""
    names = temporaries(out)
    return len(names) == n and not any(name.endswith("@") for name in names)


def bake_processes(parent_pid):
    """Pids of the live children started by bake.py ``parent_pid`` (found by command line, so
    children the parent left behind count too)."""
    pids = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = (Path("/proc") / entry / "cmdline").read_bytes().split(b"\0")
            state = (Path("/proc") / entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError, PermissionError):
            continue
        if b"--parent-pid" in cmdline and cmdline[cmdline.index(b"--parent-pid") + 1] == str(parent_pid).encode() \
                and state != "Z":
            pids.append(int(entry))
    return pids


def child_for(parent_pid, name):
    pids = [pid for pid in bake_processes(parent_pid)
            if (Path("/proc") / str(pid) / "cmdline").read_bytes().endswith(name.encode() + b"\0")]
    assert len(pids) == 1, pids
    return pids[0]


def is_complete_blend(path):
    """An uncompressed .blend as bake.py saves it: Blender's header first, the ENDB block last."""
    data = path.read_bytes()
    return data.startswith(b"BLENDER") and b"ENDB" in data[-64:]


def assert_clean_rerun(inputs, out, env):
    proc = subprocess.run([*SCRIPT, *map(str, inputs), "--out", str(out), "--jobs", "2"], env=env,
                          capture_output=True, text=True, timeout=WAIT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(os.listdir(out)) == NAMES, os.listdir(out)
    assert all(is_complete_blend(out / name) for name in NAMES)
    return proc


@pytest.mark.parametrize("how", ["SIGTERM to bake.py", "Ctrl-C to its process group"])
def test_stopped_parent_stops_children_and_leaves_nothing(sandbox, inputs, tmp_path, how):
    out = tmp_path / "out"
    proc = start(inputs, out, sandbox["env"], pause=WAIT)
    wait_until(lambda: complete_temporaries(out, 2), "both children to reach the rename")
    children = bake_processes(proc.pid)
    assert len(children) == 2
    if how == "SIGTERM to bake.py":
        signum = signal.SIGTERM
        proc.send_signal(signum)
    else:
        signum = signal.SIGINT
        os.killpg(proc.pid, signum)
    stdout, stderr = proc.communicate(timeout=WAIT)
    assert proc.returncode == 128 + signum, stdout + stderr
    for path in inputs:
        assert f"error: {path}: baking was stopped by signal {int(signum)} ({signum.name})" in stderr, stderr
    assert "baked:" not in stdout
    assert not bake_processes(proc.pid) and not any(Path(f"/proc/{pid}").exists() for pid in children)
    assert os.listdir(out) == []  # the children removed their temporaries
    assert_clean_rerun(inputs, out, sandbox["env"])


def test_parent_killed_outright_takes_its_children_along(sandbox, inputs, tmp_path):
    out = tmp_path / "out"
    proc = start(inputs, out, sandbox["env"], pause=WAIT)
    wait_until(lambda: complete_temporaries(out, 2), "both children to reach the rename")
    proc.kill()
    proc.communicate(timeout=WAIT)
    wait_until(lambda: not bake_processes(proc.pid), "the orphaned children to stop")
    assert os.listdir(out) == []
    assert_clean_rerun(inputs, out, sandbox["env"])


def test_child_killed_before_the_rename_leaves_a_stale_temporary_the_rerun_removes(sandbox, inputs, tmp_path):
    out = tmp_path / "out"
    pause = 15.0  # s: long enough to kill one child at the rename; the other then finishes
    proc = start(inputs, out, sandbox["env"], pause=pause)
    wait_until(lambda: complete_temporaries(out, 2), "both children to reach the rename")
    victim = child_for(proc.pid, NAMES[0])
    os.kill(victim, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=WAIT)
    assert proc.returncode == 1, stdout + stderr
    assert f"error: {inputs[0]}: the baking process was killed (signal 9, SIGKILL)" in stderr, stderr
    assert f"baked: {out / NAMES[1]}" in stdout, stdout
    assert not bake_processes(proc.pid)
    stale = temporaries(out)
    assert len(stale) == 1 and stale[0].startswith(f".{NAMES[0]}.{victim}."), stale
    assert NAMES[0] not in os.listdir(out)  # never a partial output under the final name
    rerun = assert_clean_rerun(inputs, out, sandbox["env"])
    assert f"removed {out / stale[0]}: a temporary left by a process that no longer runs" in rerun.stdout


def test_stale_temporaries_of_dead_processes_only_are_removed(sandbox, inputs, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead, alive = gone.pid, os.getpid()
    stale = [f".a.blend.{dead}.tmp.blend@", f".a.blend.{dead}.0123abcd.tmp.blend",
             f".b.blend.{dead}.89abcdef.tmp.blend@"]
    kept = [f".a.blend.{alive}.0123abcd.tmp.blend", f".notes.{dead}.tmp.txt", "a.blend.bak"]
    for name in stale + kept:
        (out / name).write_bytes(b"partial")
    rerun = subprocess.run([*SCRIPT, str(inputs[0]), "--out", str(out)], env=sandbox["env"],
                           capture_output=True, text=True, timeout=WAIT)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert sorted(os.listdir(out)) == sorted(kept + [NAMES[0]])
    for name in stale:
        assert f"removed {out / name}:" in rerun.stdout


def scenario_damaged_copy(tmp, demo, path):
    """Save ``demo`` uncompressed at ``path`` and overwrite 8 bytes of its struct table (the
    SDNA "STRC" section, which Blender 5.0's reader trusts: it crashes with SIGSEGV; Blender
    5.3's checks the type indices and refuses the file)."""
    import bpy

    bpy.ops.wm.open_mainfile(filepath=demo, load_ui=False)
    bpy.ops.wm.save_as_mainfile(filepath=path, copy=True, compress=False)
    data = bytearray(Path(path).read_bytes())
    at = data.index(b"STRC") + 20
    data[at:at + 8] = bytes(b ^ 0xFF for b in data[at:at + 8])
    Path(path).write_bytes(bytes(data))
    return {}


def test_damaged_blend_among_good_ones(blender, sandbox, inputs, tmp_path):
    damaged = inputs[0].parent / "damaged.blend"
    shutil.copy(ROOT / "demo_blends" / "globe.blend", tmp_path / "globe.blend")
    blender(scenario_damaged_copy, demo=str(tmp_path / "globe.blend"), path=str(damaged))
    out = tmp_path / "out"
    proc = subprocess.run([*SCRIPT, str(inputs[0]), str(damaged), str(inputs[1]), "--out", str(out),
                           "--jobs", "1"], env=sandbox["env"], capture_output=True, text=True, timeout=WAIT)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    crashed = f"error: {damaged}: Blender crashed reading or baking this file (signal 11; Python was in "
    refused = f"error: {damaged}: Blender could not read this file ("
    assert proc.stderr.startswith((crashed, refused)), proc.stderr
    if proc.stderr.startswith(crashed):                 # the reader crashed, opening the file
        assert re.search(r", called from bake_file \(bake\.py:\d+\)\); the file may be damaged",
                         proc.stderr), proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert sorted(os.listdir(out)) == NAMES and all(is_complete_blend(out / name) for name in NAMES)


def test_second_run_into_the_same_out_is_refused(sandbox, inputs, tmp_path):
    out = tmp_path / "out"
    first = start(inputs[:1], out, sandbox["env"], pause=WAIT)
    wait_until(lambda: complete_temporaries(out, 1), "the first run to reach the rename")
    second = subprocess.run([*SCRIPT, str(inputs[1]), "--out", str(out)], env=sandbox["env"],
                            capture_output=True, text=True, timeout=WAIT)
    assert second.returncode == 1, second.stdout + second.stderr
    assert second.stderr == (f"error: {out}: another bake.py run is writing into this folder; "
                             "wait for it to finish or pass another --out\n")
    assert len(temporaries(out)) == 1  # the second run removed nothing of the first
    first.send_signal(signal.SIGTERM)
    first.communicate(timeout=WAIT)
    assert_clean_rerun(inputs, out, sandbox["env"])


CORE = "/u/extensions/user_default/spline_joints/core/mechanisms/base.py"
CRASH_STACKS = [
    # the reader crashed under bake_file (faulthandler of Python 3.11: the current thread only)
    ("Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f33591f1b80 (most recent call "
     'first):\n  File "/v/bpy/5.0/scripts/modules/bpy/ops.py", line 109 in __call__\n'
     '  File "/tmp/w/scripts/bake.py", line 205 in bake_file\n'
     '  File "/tmp/w/scripts/bake.py", line 249 in child\n\nExtension modules: numpy (total: 1)',
     "; Python was in __call__ (ops.py:109), called from bake_file (bake.py:205)"),
    # a kernel crashed during the bake, another thread listed first (Python 3.13)
    ("Fatal Python error: Bus error\n\nThread 0x00007effba5926c0 (most recent call first):\n"
     '  File "/p/threading.py", line 992 in run\n\nCurrent thread 0x00007effbb232b80 (most recent '
     f'call first):\n  File "{CORE}", line 301 in step\n'
     '  File "/r/scripts/blender_kit.py", line 512 in bake_rigs\n'
     '  File "/r/scripts/blender_kit.py", line 530 in bake_open_file\n'
     '  File "/r/scripts/bake.py", line 207 in bake_file\n',
     "; Python was in step (base.py:301), called from bake_rigs (blender_kit.py:512)"),
    # the crash was in a frame of the scripts themselves
    ('Current thread 0x1 (most recent call first):\n  File "/r/scripts/bake.py", line 9 in child\n',
     "; Python was in child (bake.py:9)"),
    # no stack: a crash before faulthandler was enabled, or an empty log
    ("Read blend: /tmp/a.blend\n", ""),
    ("Current thread 0x1 (most recent call first):\n\n", ""),
]


@pytest.mark.parametrize("output, site", CRASH_STACKS)
def test_a_crash_names_where_python_was(output, site):
    """The crash line names the innermost frame of the crashing thread of faulthandler's stack
    and the innermost frame of the shipped scripts (bake_file: reading; blender_kit: baking)."""
    assert bake.crash_site(output) == site
    ok, lines = bake.child_lines("a.blend", -7, output)
    assert not ok and lines == [f"error: a.blend: Blender crashed reading or baking this file (signal 7"
                                f"{site}); the file may be damaged: open it in Blender to check it, or "
                                "restore it from a backup"]
