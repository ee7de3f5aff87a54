"""Benchmark section "linkages": live assembly of the demo linkages, per frame.

    python scripts/bench.py --only linkages

For the driven demo linkages of :mod:`core.linkage_demos` (the four-bar with its crank as the
driving body, the scissor lift driven by its foot slider), one :meth:`LiveAssembly.solve` per
frame as the live handler calls it: the driver moved one frame's step (the four-bar's crank
by 5 degrees, the lift's slider by up to 1.3 cm, 30 cm in and back) from the previous
frame's poses, at each CG cap of :data:`CAPS` (10 corrections at most, tolerance 1e-10). The
median time per frame (us) with the corrections' matrices sparse and dense (side by side, the
same solve; dense is the default for these few bodies) and the largest constraint error (m or
rad) over the frames are given, on both backends of :mod:`core.backend` (the numba backend
runs the CG iteration compiled).

In Blender (a fresh process with the extension installed in a temporary user folder, the
demo files of demo_blends/ opened): the median time of ``scene.frame_set(f)`` over the keyed
frames with the driven linkage's Live Assembly on (the live handler reads the driver, solves
and places the bodies) and off (Blender's own frame change); their difference is what the
handler costs per frame.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from core.io import atomic_write
from core.lie import se3, so3
from core.linkage import LiveAssembly
from core.linkage_demos import four_bar, scissor_lift

from .common import ENTRY, median_us, table
from .maximal import on_backend

#: CG iteration caps (seed 004's accuracy for speed knob)
CAPS = (3, 10, 50)
#: frames per measured motion
FRAMES = 72


def _motions():
    """``{name: (linkage, driver poses (F, 4, 4))}`` of the driven demo linkages."""
    bar, _ = four_bar()
    crank = bar.bodies[0].T
    turns = np.radians(5.0) * np.arange(1, FRAMES + 1)
    bar_poses = np.array([se3.from_rp(so3.exp(np.array([0.0, -t, 0.0])), np.zeros(3)) @ crank
                          for t in turns])
    lift, _ = scissor_lift()
    live = LiveAssembly(lift)
    travel = -0.3 * np.sin(np.pi * np.arange(1, FRAMES + 1) / FRAMES)   # in 30 cm and out
    lift_poses = np.array([live.driver_pose(x) for x in travel])
    return {"four-bar (crank)": (bar, bar_poses), "scissor lift (slider)": (lift, lift_poses)}


def _rows(quick):
    rows = []
    for name, (linkage, drivers) in _motions().items():
        for cap in CAPS:
            times, worst = [], 0.0
            for dense in (False, True):
                live = LiveAssembly(linkage, cg_iterations=cap, geometric_iterations=10,
                                    tol=1e-10, dense=dense)
                starts, P = [], linkage.poses
                for T in drivers:  # the per-frame chain, each frame from the last
                    starts.append(P)
                    res = live.solve(T, P)
                    P, worst = res.poses, max(worst, res.error)
                k = [0]

                def one_frame():
                    i = k[0] % len(drivers)
                    k[0] += 1
                    live.solve(drivers[i], starts[i])

                times.append(f"{median_us(one_frame, quick):.0f}")
            rows.append([name, len(linkage.bodies), cap, *times, f"{worst:.1e}"])
    return rows


#: demo files and the linkage whose live assembly is timed in Blender
BLENDER_FILES = (("four_bar_linkage", 0), ("scissor_lift", 0))


def worker(out: str, quick: bool) -> None:
    """In a fresh process: time ``frame_set`` over each demo file's frames, live on and off
    (3 passes; 1 with ``quick``); writes ``{file: [ms on, ms off]}`` as JSON to ``out``."""
    from scripts import blender_kit as kit
    from scripts.demos.common import OUT

    repeats = 1 if quick else 3
    bpy = kit.start_blender()
    result = {}
    for name, index in BLENDER_FILES:
        bpy.ops.wm.open_mainfile(filepath=str(OUT / f"{name}.blend"), load_ui=False)
        scene = bpy.context.scene
        item = scene.spline_joints_linkages[index]
        times = []
        for live in (True, False):
            item.live = live
            for f in range(scene.frame_start, scene.frame_end + 1):  # warm: caches, kernels
                scene.frame_set(f)
            ts = []
            for _ in range(repeats):
                for f in range(scene.frame_start, scene.frame_end + 1):
                    t0 = time.perf_counter()
                    scene.frame_set(f)
                    ts.append(time.perf_counter() - t0)
            times.append(1e3 * float(np.median(ts)))
        result[name] = times
    atomic_write(out, json.dumps(result))


def blender_rows(quick):
    """Rows of the Blender measurement (a subprocess: bpy is one Blender per process)."""
    with tempfile.TemporaryDirectory(prefix="sj_bench_linkages_") as tmp:
        out = os.path.join(tmp, "result.json")
        env = dict(os.environ, BLENDER_USER_RESOURCES=os.path.join(tmp, "user"))
        proc = subprocess.run([sys.executable, ENTRY, "--section", "linkages", *(["--quick"] if quick else []),
                               "--worker", out], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"the Blender worker failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        with open(out, encoding="utf-8") as fh:
            result = json.load(fh)
    return [[name, f"{on:.2f}", f"{off:.2f}", f"{on - off:.2f}"] for name, (on, off) in result.items()]


def bench_linkages(quick=False):
    out = []
    for backend_name in ("numpy", "numba"):
        rows = on_backend(backend_name, lambda: _rows(quick))
        if rows is None:
            continue
        out.append(table(f"Live assembly per frame ({backend_name} backend)",
                         ["linkage", "bodies", "CG cap", "sparse: median us / frame",
                          "dense: median us / frame", "largest error (m/rad)"], rows,
                         note=f"{FRAMES} frames, the driver one frame's step from the last "
                              "frame's poses, 10 corrections at most, tolerance 1e-10"))
    out.append(table("Frame change in Blender with the live handler (the driven linkage of each "
                     "demo file)", ["demo file", "live on: median ms / frame",
                                    "live off: median ms / frame", "handler: ms / frame"],
                     blender_rows(quick), note="scene.frame_set over the keyed frames, the files' "
                                               "settings (CG cap 50)"))
    return out
