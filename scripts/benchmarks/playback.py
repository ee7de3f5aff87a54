"""Headless live playback in real Blender: frames per second of a playback loop that simulates
each demo as the playhead reaches its frames.

    python scripts/bench.py --only playback                  # as a section of the benchmark

One fresh Blender process (the PyPI ``bpy`` module) with the extension installed from its
linux-x64 zip into a sandboxed user folder (as :mod:`scripts.benchmarks.blender_latency`) places every demo
mechanism of ``core.mechanisms.DEMOS`` at its own frame rate and duration, starts its Live
Preview (``spline_joints.live_mechanism``) and steps ``scene.frame_set`` through its frames:

* "start": seconds from pressing Live Preview to its first frame (building the mechanism,
  e.g. fitting its wires, and simulating 10 ms ahead);
* "live": the first pass, which simulates each frame when it is reached (plus the preview's
  10 ms look-ahead) and poses the bodies: the rate a user sees while the simulation runs;
* "replay": a second pass over the frames already simulated (posing only).

Then every demo file of demo_blends/ with a simulated rig (bones or objects ticked Simulate:
the character, the ragdoll, the chain in the bowl) is opened and played the same way over
its frame range with the rig panel's Live on (``spline_joints.simulate_preview`` for every
rig of the scene), its own substeps, contacts and limits included.

Every kernel is compiled, or loaded from the cache, before the timing (``core.warm_up.
warm_up``, as the add-on does when it is enabled), so the figures are those of a session
whose warm-up has finished. A demo plays in real time when its live rate reaches its own
frame rate; the target is 60 frames per second or more.
"""

import glob
import json
import os
import tempfile
import time

from scripts.blender_kit import MODULE, ROOT

from .common import ENTRY


def _play(bpy, scene, frames, start):
    """Seconds of ``start()`` (the preview's button), then frames per second of two passes
    of ``scene.frame_set`` over ``frames``: live (simulating) and replay (posing); the
    preview cleared after."""
    t0 = time.perf_counter()
    start()
    rates = {"start": time.perf_counter() - t0}
    for kind in ("live", "replay"):
        t0 = time.perf_counter()
        for f in frames:
            scene.frame_set(f)
        rates[kind] = len(frames) / (time.perf_counter() - t0)
    bpy.ops.spline_joints.clear_preview()
    return rates


def worker(out, quick):
    """In a fresh process: the live and replay frame rates of every demo."""
    import importlib

    import bpy

    bpy.ops.preferences.addon_enable(module=MODULE)
    mech = importlib.import_module(MODULE + ".core.mechanisms")
    importlib.import_module(MODULE + ".core.warm_up").warm_up()      # compile or load
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
        # the live mechanism is built on the press, which simulates its first frame + 10 ms
        rates = _play(bpy, scene, range(1, n + 1), bpy.ops.spline_joints.live_mechanism)
        rows.append({"demo": name, "fps": fps, "frames": n, "simulated": duration, **rates})
    rig_scene = importlib.import_module(MODULE + ".addon.rig_scene")
    for path in sorted(glob.glob(os.path.join(str(ROOT), "demo_blends", "*.blend"))):
        bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
        scene = bpy.context.scene
        if not (rig_scene.simulated_armatures(scene) or rig_scene.simulated_objects(scene)):
            continue
        if quick:
            scene.frame_end = min(scene.frame_end, scene.frame_start + scene.render.fps)
        frames = range(scene.frame_start, scene.frame_end + 1)
        scene.spline_joints_sim.live = True
        scene.frame_set(frames[0])
        rates = _play(bpy, scene, frames,
                      lambda: bpy.ops.spline_joints.simulate_preview(which="ALL"))
        rows.append({"demo": os.path.splitext(os.path.basename(path))[0],
                     "fps": scene.render.fps, "frames": len(frames),
                     "simulated": (len(frames) - 1) / scene.render.fps, **rates})
    atomic_write = importlib.import_module(MODULE + ".core.io").atomic_write
    atomic_write(out, json.dumps(rows))


def measure(quick=False):
    """Install the zip into a fresh sandbox and run the worker: its rows."""
    import shutil

    from .blender_latency import _run, sandbox

    tmp = tempfile.mkdtemp(prefix="spline_joints_playback_")
    try:
        env = sandbox(tmp)
        return _run([ENTRY, "--section", "playback", *(["--quick"] if quick else []), "--worker"], env, tmp,
                    "worker")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_playback(quick=False):
    """The section of scripts/bench.py: one table of frame rates."""
    from .common import table
    rows = [[r["demo"], r["fps"], r["frames"], r["start"], r["live"], r["replay"],
             "yes" if r["live"] >= r["fps"] else "no"] for r in measure(quick)]
    note = ("One Blender process, the extension installed from its zip; each demo at its own "
            "frame rate and duration, Live Preview on, scene.frame_set through its frames: "
            "start = pressing Live Preview to its first frame, live = the first pass "
            "(simulating), replay = the second (posing only). Target: "
            "60 frames per second or more.")
    return [table("Headless live playback (frames per second)",
                  ["demo", "demo fps", "frames", "start (s)", "live", "replay",
                   "keeps up with its fps"],
                  rows, note=note)]
