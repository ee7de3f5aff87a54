"""Headless live playback in real Blender: frames per second of a playback loop that simulates
each demo as the playhead reaches its frames.

    python scripts/bench.py --only playback                  # as a section of the benchmark
    python scripts/bench_playback.py [--quick]                # alone

One fresh Blender process (the PyPI ``bpy`` module) with the extension installed from its
linux-x64 zip into a sandboxed user folder (as :mod:`bench_blender_latency`) places every demo
mechanism of ``core.mechanisms.DEMOS`` at its own frame rate and duration, starts its Live
Preview (``spline_joints.live_mechanism``) and steps ``scene.frame_set`` through its frames:

* "live": the first pass, which simulates each frame when it is reached (plus the preview's
  10 ms look-ahead) and poses the bodies: the rate a user sees while the simulation runs;
* "replay": a second pass over the frames already simulated (posing only).

The kernels are compiled or loaded once before the timing (a short hinge chain). A demo
plays in real time when its live rate reaches its own frame rate; the issue's target is
60 frames per second or more.
"""

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = "bl_ext.user_default.spline_joints"


def worker(out, quick):
    """In a fresh process: the live and replay frame rates of every demo."""
    import importlib

    import bpy

    bpy.ops.preferences.addon_enable(module=MODULE)
    mech = importlib.import_module(MODULE + ".core.mechanisms")
    mech.simulate_mechanism(mech.DEMOS["hinge_chain"](duration=0.1))     # compile or load
    rows = []
    for name, builder in mech.DEMOS.items():
        default = builder()
        fps = int(round(default.fps))
        duration = min(default.duration, 1.0) if quick else default.duration
        bpy.ops.wm.read_homefile(use_empty=True)
        scene = bpy.context.scene
        scene.render.fps, scene.render.fps_base, scene.frame_start = fps, 1.0, 1
        bpy.ops.spline_joints.add_mechanism(demo=name, duration=duration)
        n = int(round(duration * fps)) + 1
        scene.frame_end = n
        scene.frame_set(1)
        bpy.ops.spline_joints.live_mechanism()
        rates = {}
        for kind in ("live", "replay"):
            t0 = time.perf_counter()
            for f in range(1, n + 1):
                scene.frame_set(f)
            rates[kind] = n / (time.perf_counter() - t0)
        bpy.ops.spline_joints.clear_preview()
        rows.append({"demo": name, "fps": fps, "frames": n, "simulated": duration, **rates})
    atomic_write = importlib.import_module(MODULE + ".core.io").atomic_write
    atomic_write(out, json.dumps(rows))


def measure(quick=False):
    """Install the zip into a fresh sandbox and run the worker: its rows."""
    import shutil

    from bench_blender_latency import RUNNER, _run, _zip

    tmp = tempfile.mkdtemp(prefix="spline_joints_playback_")
    try:
        user = os.path.join(tmp, "user")
        env = dict(os.environ, BLENDER_USER_RESOURCES=user, PYTHONDONTWRITEBYTECODE="1")
        env.pop("NUMBA_CACHE_DIR", None)
        env.pop("SPLINE_JOINTS_BACKEND", None)
        _run([RUNNER, "install", str(_zip())], env, tmp, "install")
        return _run([__file__, *(["--quick"] if quick else []), "--worker"], env, tmp, "worker")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_playback(quick=False):
    """The section of scripts/bench.py: one table of frame rates."""
    from bench import table
    rows = [[r["demo"], r["fps"], r["frames"], r["live"], r["replay"],
             "yes" if r["live"] >= r["fps"] else "no"] for r in measure(quick)]
    note = ("One Blender process, the extension installed from its zip; each demo at its own "
            "frame rate and duration, Live Preview on, scene.frame_set through its frames: "
            "live = the first pass (simulating), replay = the second (posing only). Target: "
            "60 frames per second or more.")
    return [table("Headless live playback (frames per second)",
                  ["demo", "demo fps", "frames", "live", "replay", "keeps up with its fps"],
                  rows, note=note)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", metavar="OUT", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.quick)
        return 0
    sys.path.insert(0, HERE)
    from bench import format_table, machine_description
    print(machine_description())
    for t in bench_playback(args.quick):
        print(format_table(t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
