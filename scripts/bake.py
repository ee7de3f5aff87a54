"""Bake every Spline Joints mechanism of .blend files headless, and save the results.

With the PyPI bpy module (the extension installed in Blender's user folder, or pass --install):
    python scripts/bake.py A.blend B.blend --out DIR [--jobs N] [--install ZIP]
Inside a Blender binary (the file is the one Blender opened):
    blender -b A.blend --python scripts/bake.py -- --out DIR
On a Dask cluster (distributed is imported only with --scheduler):
    python scripts/bake.py A.blend B.blend --out DIR --scheduler tcp://HOST:8786 [--install ZIP]
    python scripts/bake.py A.blend B.blend --out DIR --scheduler local --jobs N   # a LocalCluster

Each input is opened, every mechanism of every scene is baked with
``spline_joints.bake_dynamics``, every linkage with ``spline_joints.bake_linkage`` and every
simulated rig (each armature with simulated bones, and the scene's simulated objects) as
``spline_joints.bake_rig(which='ALL')`` bakes it (``scripts.blender_kit.bake_rigs``: keys in a
new action, the old action kept on the NLA), and the file is saved as DIR/<same name> through
``core.io.atomic_path`` (a hidden temporary in DIR renamed into place), so a failed or
interrupted bake never leaves a half-written file.

Guarantees of ``python scripts/bake.py``:

- Before any work, the arguments are checked: ``--out`` must be (or become) a folder, each
  input a readable .blend file, and no two inputs may share a file name (both would be saved
  as one output). Every problem is printed as one ``error:`` sentence and nothing is baked.
- One run at a time writes into a folder: the run holds an exclusive ``flock`` on DIR (released
  by the kernel however the run ends); a second run into the same DIR stops before any work.
  (Windows has no flock: there, concurrent runs into one folder are not detected.)
- Every file is baked in its own child process (bpy is a process-wide singleton, and a damaged
  file can crash Blender's reader): a crash becomes ``error: FILE: Blender crashed reading or
  baking this file (signal 11; Python was in FUNC (FILE:LINE), called from FUNC (FILE:LINE))``
  (the child's faulthandler stack, :func:`crash_site`) and the other files go on. ``--jobs``
  children run at once.
- SIGINT, SIGTERM and SIGHUP are forwarded to the children, which remove their temporaries and
  exit; the parent waits for them (a second signal, or GRACE seconds, kills them) and names the
  files not baked. A child receives SIGTERM when the parent dies (Linux: PR_SET_PDEATHSIG;
  elsewhere a thread watches the parent's pid).
- A process killed outright leaves its temporary behind (``.NAME.PID.TOKEN.tmp.blend``, or with
  Blender's ``@`` suffix while it writes); the next run removes those whose process is gone.

With ``--scheduler``, each file is one Dask task (``bake_task``): its bytes and this script's
(with the part of scripts/ it imports, :data:`SHIPPED`) go to a worker, which writes them into a
private temporary folder and bakes the file in a child process exactly as above
(``run_child_on_worker``); the baked file's bytes come back and this process writes them under
DIR with ``core.io.atomic_write``. Workers need not share a file system with this process.
Before any task every worker is checked (bpy and core importable, else ``error: Dask worker
ADDRESS: ...``) and, with ``--install``, the zip is installed on one worker per host. A failure
of the file (unreadable, a crash of its child) is returned as that file's ``error:`` line and
not retried; a worker lost mid-task is replaced by Dask (the scheduler's ``allowed-failures``, 3
by default), and the summary line counts those retries. A scheduler not reached within
core.cluster.CONNECT_TIMEOUT seconds (10) is an error that says how to start one.

Exit status: 0 when every file baked; 1 when a file failed or the arguments were refused, with
one ``error: FILE: reason`` line per failure on stderr; 128 + N when stopped by signal N.

Test hook: with the environment variable SPLINE_JOINTS_BAKE_PAUSE_BEFORE_RENAME=SECONDS, a
complete temporary waits that long before it is renamed into place, so a test can kill the
process at that point.
"""

from __future__ import annotations

import argparse
import faulthandler
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from scripts.blender_kit import (MODULE, bake_open_file, install_extension, pid_alive,  # noqa: E402
                                 remove_temporaries)

BLEND_HEADERS = (b"BLENDER", b"\x28\xb5\x2f\xfd", b"\x1f\x8b")  # plain, zstd- and gzip-compressed
#: what a Dask worker needs to run a child (paths under ROOT): this script and the part of
#: scripts/ it imports; sent with every task
SHIPPED = ("scripts/__init__.py", "scripts/blender_kit.py", "scripts/bake.py")
STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))
CRASH_SIGNALS = frozenset(getattr(signal, n) for n in ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT")
                          if hasattr(signal, n))
GRACE = 10.0  # seconds a signalled child has to remove its temporary and exit before SIGKILL
POLL = 0.05  # seconds between checks of the children


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help=".blend files (none inside a Blender binary: its own file)")
    parser.add_argument("--out", required=True, help="output directory (created if missing)")
    parser.add_argument("--jobs", type=int, default=1, help="files baked in parallel processes (with --scheduler local: the LocalCluster's "
                                                      "worker processes)")
    parser.add_argument("--install", help="extension zip to install into the user folder first")
    parser.add_argument("--scheduler", help="bake on a Dask cluster: tcp://HOST:PORT of a running scheduler, "
                                            "or local for a LocalCluster of --jobs workers")
    parser.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)  # set for a child process
    return parser.parse_args(argv)


# ------------------------------------------------------------------------------------------
# Checks before any work
# ------------------------------------------------------------------------------------------

def core_files():
    """:mod:`core.io.files` of this checkout (imported when needed: the main process runs from
    the repository, the children, on a Dask worker too, never need it)."""
    from core.io import files

    return files


def input_problem(path: str) -> str | None:
    """Why ``path`` cannot be baked (a sentence), or None when it reads as a .blend file."""
    if not os.path.exists(path):
        return "no such file; check the path"
    if os.path.isdir(path):
        return "is a folder, not a .blend file; pass the .blend files inside it"
    if (problem := core_files().input_file_problem(path, math.inf)) is not None:
        return f"cannot be baked: {problem}"
    if not path.lower().endswith(".blend"):
        return "is not a .blend file (its name does not end in .blend); pass files saved by Blender"
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(BLEND_HEADERS[0]))
    except OSError as exc:
        return f"cannot be read ({exc.strerror}); give this user read access to it or leave it out"
    if not head.startswith(BLEND_HEADERS):
        return ("is not a .blend file (it does not start with Blender's file header); "
                "pass files saved by Blender")
    return None


def out_problem(out: str) -> str | None:
    """Why ``--out`` cannot receive the baked files (a sentence), or None."""
    if os.path.exists(out) and not os.path.isdir(out):
        return f"--out {out} is a file, not a folder; pass a folder (it is created if missing)"
    existing = os.path.abspath(out)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return f"--out {out} cannot be created because {existing} is a file; pass another folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"--out {out} is not writable ({existing} does not allow writing); pass a folder you can write to"
    return None


def argument_problems(args: argparse.Namespace, in_blender: bool) -> list[str]:
    """Every reason to refuse the run before any work, one sentence each."""
    problems = []
    if args.jobs < 1:
        problems.append(f"--jobs must be at least 1 (got {args.jobs}); pass how many files to bake at once")
    if args.scheduler is not None and args.scheduler != "local" and "://" not in args.scheduler:
        problems.append(f"--scheduler {args.scheduler} is not a scheduler address; pass tcp://HOST:PORT "
                        "(as `dask scheduler` prints it) or local")
    if args.install and not os.path.isfile(args.install):
        problems.append(f"--install {args.install}: no such file; pass the extension zip that "
                        "scripts/build_extension.py writes")
    if (problem := out_problem(args.out)) is not None:
        problems.append(problem)
    if not in_blender and not args.files:
        problems.append("no .blend files given; pass the files to bake")
    for path in args.files:
        if (problem := input_problem(path)) is not None:
            problems.append(f"{path}: {problem}")
    by_name: dict[str, list[str]] = {}
    for path in args.files:
        by_name.setdefault(os.path.normcase(os.path.basename(path)), []).append(path)
    clashes = [f"{name} from {', '.join(paths)}" for name, paths in by_name.items() if len(paths) > 1]
    if clashes:
        problems.append(f"several inputs would be saved under one name in {args.out} ({'; '.join(clashes)}); "
                        "rename them or bake them into different --out folders")
    return problems




# ------------------------------------------------------------------------------------------
# Baking (in a process with bpy)
# ------------------------------------------------------------------------------------------

def enable_addon(install_zip: str | None) -> None:
    import bpy  # first: it puts Blender's own script modules (addon_utils) on sys.path
    import addon_utils

    if install_zip:
        install_extension(install_zip)
    if not addon_utils.check(MODULE)[1]:
        try:
            bpy.ops.preferences.addon_enable(module=MODULE)
        except Exception:  # reported below with what to do
            pass
    if MODULE not in bpy.context.preferences.addons:
        raise RuntimeError("the Spline Joints extension is not installed in this Blender's user folder; "
                           "install it (Preferences > Get Extensions > Install from Disk) or pass --install ZIP")


def bake_file(path: str, out_dir: str) -> str:
    """Open ``path`` and bake it into ``out_dir`` (:func:`scripts.blender_kit.bake_open_file`)."""
    import bpy

    try:
        bpy.ops.wm.open_mainfile(filepath=os.path.abspath(path), load_ui=False)
    except RuntimeError as exc:
        reason = " ".join(str(exc).split())
        raise RuntimeError(f"Blender could not read this file ({reason}); it may be damaged: open it in "
                           "Blender to check it, or restore it from a backup") from None
    return bake_open_file(out_dir, os.path.basename(path))


def watch_parent(parent_pid: int) -> None:
    """Have this process receive SIGTERM when its parent (pid ``parent_pid``) ends."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
    else:
        def poll():
            while os.getppid() == parent_pid:
                time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=poll, daemon=True).start()
    if os.getppid() != parent_pid:  # the parent ended before the watch was set
        os.kill(os.getpid(), signal.SIGTERM)


def child(args: argparse.Namespace) -> int:
    """Child process: install the extension (--install, no file) or bake the one file given."""
    label = args.files[0] if args.files else args.install

    def stop(signum, _frame):
        remove_temporaries(args.out, pid=os.getpid())
        print(f"error: {label}: baking was stopped by signal {signum} ({signal.Signals(signum).name}); "
              "run bake.py again to bake this file", file=sys.stderr, flush=True)
        os._exit(128 + signum)

    for signum in STOP_SIGNALS:
        signal.signal(signum, stop)
    faulthandler.enable()  # a crash prints the Python stack, which the parent names in its error line
    watch_parent(args.parent_pid)
    try:
        enable_addon(args.install)
        if args.files:
            print("baked:", bake_file(args.files[0], args.out), flush=True)
        else:
            print(f"installed: {args.install}", flush=True)
    except Exception as exc:
        print(f"error: {label}: {' '.join(str(exc).split())}", file=sys.stderr, flush=True)
        return 1
    return 0


# ------------------------------------------------------------------------------------------
# Parent (no bpy)
# ------------------------------------------------------------------------------------------

def child_lines(label: str, returncode: int, output: str) -> tuple[bool, list[str]]:
    """Whether a child succeeded, and its ``baked:`` / ``installed:`` / ``error:`` lines for the user."""
    if returncode < 0:
        signum = -returncode
        if signum in CRASH_SIGNALS:
            return False, [f"error: {label}: Blender crashed reading or baking this file (signal {signum}"
                           f"{crash_site(output)}); the file may be damaged: open it in Blender to check "
                           "it, or restore it from a backup"]
        return False, [f"error: {label}: the baking process was killed (signal {signum}, "
                       f"{signal.Signals(signum).name}); run bake.py again to bake this file"]
    lines = [ln for ln in output.splitlines() if ln.startswith(("error:", "baked:", "installed:"))]
    if returncode == 0 and any(ln.startswith(("baked:", "installed:")) for ln in lines):
        return True, lines
    errors = [ln for ln in lines if ln.startswith("error:")]
    if not errors:
        last = [ln.strip() for ln in output.splitlines() if ln.strip()][-1:] or ["no output"]
        errors = [f"error: {label}: the baking process ended with exit status {returncode} "
                  f"(last output: {last[0]})"]
    return False, errors


def crash_site(output: str) -> str:
    """Where a crashed child was, from the stack that faulthandler printed into its ``output``:
    ``"; Python was in FUNC (FILE:LINE)"`` for the innermost frame of the crashing thread, with
    ``", called from FUNC (FILE:LINE)"`` for the innermost frame of this script or blender_kit.py
    when that is another (``bake_file``: Blender was reading the file; ``blender_kit.py``: it
    was baking); "" when the output has no such stack."""
    lines = output.splitlines()
    start = next((i for i, ln in enumerate(lines)
                  if ln.startswith("Current thread ") and ln.endswith("(most recent call first):")), None)
    if start is None:
        return ""
    frames = []  # (function, file name, line), innermost first
    for line in lines[start + 1:]:
        match = re.fullmatch(r'\s+File "(.*)", line (\d+) in (\S+)', line)
        if match is None:
            break
        frames.append((match[3], os.path.basename(match[1]), match[2]))
    if not frames:
        return ""
    caller = next((f for f in frames if f[1] in ("bake.py", "blender_kit.py")), None)
    where = "{} ({}:{})".format
    return f"; Python was in {where(*frames[0])}" + (
        f", called from {where(*caller)}" if caller and caller != frames[0] else "")


def child_command(path: str | None, out_dir: str, install: str | None = None,
                  script: str = __file__) -> list[str]:
    """Command line of a child process of this process that bakes ``path`` into ``out_dir``
    (path None: installs the extension zip ``install``), running the bake.py at ``script``."""
    cmd = [sys.executable, os.path.abspath(script), "--parent-pid", str(os.getpid()), "--out", out_dir]
    return cmd + (["--install", install] if path is None else [path])


def run_children(args: argparse.Namespace) -> int:
    """Install (--install) in one child, then bake each file in its own child, --jobs at once."""
    running: dict[subprocess.Popen, tuple[str, object]] = {}
    signalled: set[subprocess.Popen] = set()
    stops: list[tuple[int, float]] = []  # (signal, time received)

    def on_signal(signum, _frame):
        stops.append((signum, time.monotonic()))

    def run(paths: list[str | None], jobs: int) -> tuple[int, list[str | None]]:
        """Run the children (path None: the install); returns the number failed and the paths
        never started."""
        queue, failed = list(paths), 0
        while (queue and not stops) or running:
            while queue and not stops and len(running) < jobs:
                path = queue.pop(0)
                log = tempfile.TemporaryFile()
                running[subprocess.Popen(child_command(path, args.out, args.install), stdout=log,
                                         stderr=subprocess.STDOUT)] = (
                    path or args.install, log)
            if stops:
                hard = len(stops) > 1 or time.monotonic() - stops[0][1] > GRACE
                for proc in running:
                    if hard:
                        proc.kill()
                    elif proc not in signalled:
                        proc.send_signal(stops[0][0])
                        signalled.add(proc)
            for proc in [p for p in running if p.poll() is not None]:
                label, log = running.pop(proc)
                log.seek(0)
                ok, lines = child_lines(label, proc.returncode, log.read().decode(errors="replace"))
                log.close()
                failed += not ok
                for line in lines:
                    print(line, file=sys.stdout if ok else sys.stderr, flush=True)
            time.sleep(POLL)
        return failed, queue

    previous = {signum: signal.signal(signum, on_signal) for signum in STOP_SIGNALS}
    try:
        failed, not_started = run([None], 1) if args.install else (0, [])
        if failed or stops:  # the extension is not installed: no file is started
            not_started = list(args.files)
        else:
            failed, not_started = run(list(args.files), args.jobs)
    finally:
        for proc in running:  # only after an error in this function: no child outlives it
            proc.kill()
            proc.wait()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if stops:
        signum = stops[0][0]
        for path in not_started:
            print(f"error: {path}: not baked: bake.py was stopped by signal {signum} "
                  f"({signal.Signals(signum).name}) before this file; run bake.py again to bake it",
                  file=sys.stderr)
        return 128 + signum
    return 1 if failed else 0


# ------------------------------------------------------------------------------------------
# Dask: the client (no bpy) sends each file's bytes to a worker, which bakes it in a child
# ------------------------------------------------------------------------------------------

def worker_folder() -> str:
    """A new private folder for one task in the system temporary folder, named after this
    process; folders of worker processes that no longer run (killed mid-task) are removed first."""
    import shutil

    root = tempfile.gettempdir()
    for name in os.listdir(root):
        match = re.fullmatch(r"spline_joints_bake\.(\d+)\..+", name)
        if match and not pid_alive(int(match[1])):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"spline_joints_bake.{os.getpid()}.")


def run_child_on_worker(name: str | None, data: bytes, scripts: dict[str, bytes], label: str,
                        final: str | None) -> tuple[bool, list[str], bytes | None]:
    """Write ``data`` (the .blend file ``name``, or with name None the extension zip) and this
    script with what it imports (``scripts``: :data:`SHIPPED` path -> bytes) into a private
    folder, bake or install it in a child
    process as the local path does, and return (ok, the child's lines for the user with the
    worker's paths replaced by ``label`` and ``final``, the baked file's bytes or None)."""
    import shutil

    from core.io import atomic_write

    folder = worker_folder()
    try:
        os.mkdir(os.path.join(folder, "in"))
        local = os.path.join(folder, "in", name or "extension.zip")
        out = os.path.join(folder, "out")
        atomic_write(local, data)
        os.mkdir(os.path.join(folder, "scripts"))
        for path, text in scripts.items():
            atomic_write(os.path.join(folder, path), text)
        command = child_command(name and local, out, None if name else local,
                                os.path.join(folder, "scripts", "bake.py"))
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
        output = proc.stdout.decode(errors="replace")
        if final is not None:
            output = output.replace(os.path.join(out, name), final)
        ok, lines = child_lines(label, proc.returncode, output.replace(local, label))
        blend = None
        if ok and name:
            with open(os.path.join(out, name), "rb") as fh:
                blend = fh.read()
        return ok, lines, blend
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bake_task(name: str, data: bytes, scripts: dict[str, bytes], label: str, final: str) -> dict:
    """A Dask task: bake the .blend file ``name`` (its bytes ``data``) on this worker in a child
    process. A failure of the file (unreadable, a crash of the child) is returned as its error
    lines, never raised, so Dask does not retry it; only a lost worker makes Dask run it again.

    Returns {"ok", "lines" (the ``baked:`` / ``error:`` lines naming ``label`` and ``final``),
    "blend" (the baked file's bytes, or None), "worker" (this worker's address), "seconds"}.
    """
    from distributed import get_worker

    start = time.monotonic()
    ok, lines, blend = run_child_on_worker(name, data, scripts, label, final)
    return {"ok": ok, "lines": lines, "blend": blend, "worker": get_worker().address,
            "seconds": time.monotonic() - start}


def worker_problem() -> str | None:
    """Run on each worker before any task: why this worker cannot bake (a phrase), or None."""
    import importlib.util

    missing = [m for m in ("bpy", "core") if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    return (f"cannot import {' or '.join(missing)} ({sys.executable}); start the worker with the pinned "
            "environment (`bash scripts/setup_env.sh`, then `PYTHONPATH=. .venv/bin/dask worker ...` "
            "in the repository)")


def install_on_worker(data: bytes, scripts: dict[str, bytes], label: str) -> list[str] | None:
    """Run on one worker per host: install the extension zip (its bytes ``data``) into the
    host's Blender user folder in a child process; None when it is installed, else the child's
    error lines."""
    ok, lines, _ = run_child_on_worker(None, data, scripts, label, None)
    return None if ok else lines


def retried_counts(keys: list[str], dask_scheduler=None) -> dict[str, int]:
    """Run on the scheduler: how many times each task of ``keys`` was lost with its worker."""
    return {key: dask_scheduler.tasks[key].suspicious for key in keys if key in dask_scheduler.tasks}


def connect(args: argparse.Namespace):
    """A Dask client of ``--scheduler`` (a LocalCluster of ``--jobs`` workers with ``local``)
    with at least one worker; InvalidInputError with what to do when the scheduler cannot be
    reached, or gets no worker, within core.cluster.CONNECT_TIMEOUT seconds."""
    from core import cluster

    if args.scheduler == "local":
        return cluster.local_client(args.jobs)
    client = cluster.connect(args.scheduler)
    try:
        cluster.wait_for_workers(client)
    except Exception:
        client.close()
        raise
    return client


def run_dask(args: argparse.Namespace) -> int:
    """Bake each file as one task on the Dask cluster of ``--scheduler`` and write the results
    under ``--out`` (atomically, on this machine); print a line per file as it completes and a
    summary (baked, failed, retried, wall time, per-file time)."""
    from core.errors import SplineJointsError
    from core.io import atomic_write
    from distributed import as_completed
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker

    start = time.monotonic()
    try:
        client = connect(args)
    except SplineJointsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    scripts = {}
    for path in SHIPPED:
        with open(os.path.join(ROOT, path), "rb") as fh:
            scripts[path] = fh.read()
    try:
        problems = {w: p for w, p in client.run(worker_problem).items() if p is not None}
        if not problems and args.install:
            with open(args.install, "rb") as fh:
                data = fh.read()
            hosts = {info["host"]: worker for worker, info in client.scheduler_info()["workers"].items()}
            problems = {w: " ".join(lines) for w, lines in client.run(
                install_on_worker, data, scripts, args.install, workers=list(hosts.values())).items() if lines}
        for worker, problem in problems.items():
            print(f"error: Dask worker {worker}: {problem}", file=sys.stderr)
        if problems:
            return 1
        futures = {}
        for i, path in enumerate(args.files):
            name = os.path.basename(path)
            with open(path, "rb") as fh:
                data = fh.read()
            future = client.submit(bake_task, name, data, scripts, path, os.path.join(args.out, name),
                                   key=f"bake-{i}-{name}", pure=False)
            futures[future] = path
        baked, failed, seconds, pending = 0, 0, {}, dict(futures)
        try:
            for done, future in enumerate(as_completed(futures), 1):
                path = pending.pop(future)
                try:
                    record = future.result()
                except (KilledWorker, FutureCancelledError) as exc:
                    record = {"ok": False, "blend": None, "worker": "?", "seconds": 0.0, "lines": [
                        f"error: {path}: the Dask workers baking this file were lost repeatedly "
                        f"({type(exc).__name__}); check the workers' logs and run bake.py again"]}
                if record["ok"]:
                    atomic_write(os.path.join(args.out, os.path.basename(path)), record["blend"])
                    baked += 1
                    seconds[os.path.basename(path)] = record["seconds"]
                else:
                    failed += 1
                for line in record["lines"]:
                    print(line, file=sys.stdout if record["ok"] else sys.stderr, flush=True)
                print(f"  [{done}/{len(futures)}] {path}: {record['seconds']:.1f} s on {record['worker']}",
                      flush=True)
        except KeyboardInterrupt:
            for path in pending.values():
                print(f"error: {path}: not baked: bake.py was interrupted (SIGINT) before this file came "
                      "back; run bake.py again to bake it", file=sys.stderr)
            return 128 + signal.SIGINT
        retried = client.run_on_scheduler(retried_counts, [f.key for f in futures])
    finally:
        cluster = client.cluster
        client.close()
        if cluster is not None:
            cluster.close()
    per_file = ", ".join(f"{name} {t:.1f} s" for name, t in seconds.items())
    print(f"summary: {baked} baked, {failed} failed, {sum(retried.values())} retried after a lost worker; "
          f"wall time {time.monotonic() - start:.1f} s" + (f"; per file: {per_file}" if per_file else ""),
          flush=True)
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.parent_pid is not None:
        return child(args)
    in_blender = "bpy" in sys.modules  # a Blender binary has imported it; `python bake.py` has not
    problems = argument_problems(args, in_blender)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 1
    try:
        os.makedirs(args.out, exist_ok=True)
        lock = core_files().lock_folder(args.out, "bake.py")
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        for name in remove_temporaries(args.out):
            print(f"removed {os.path.join(args.out, name)}: a temporary left by a process that no longer runs")
        if not in_blender:
            return run_children(args) if args.scheduler is None else run_dask(args)
        import bpy

        try:
            enable_addon(args.install)
            print("baked:", bake_open_file(args.out, os.path.basename(bpy.data.filepath) or "untitled.blend"))
        except Exception as exc:
            print(f"error: {bpy.data.filepath}: {' '.join(str(exc).split())}", file=sys.stderr)
            return 1
        return 0
    finally:
        if lock is not None:
            os.close(lock)


if __name__ == "__main__":
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    sys.exit(main(argv))
