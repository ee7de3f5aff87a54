"""Benchmark section "linkages": live assembly of the demo linkages, per frame.

    python scripts/bench.py --only linkages

For the driven demo linkages of :mod:`core.linkage_demos` (the four-bar with its crank as the
driving body, the scissor lift driven by its foot slider), one :meth:`LiveAssembly.solve` per
frame as the live handler calls it: the driver moved one frame's step (the four-bar's crank
by 5 degrees, the lift's slider by up to 1.3 cm, 30 cm in and back) from the previous
frame's poses, at each CG cap of
:data:`CAPS` (10 corrections at most, tolerance 1e-10). The median time per frame (us) and
the largest constraint error (m or rad) over the frames are given, on both backends of
:mod:`core.backend` (the numba backend runs the CG iteration compiled). The Blender handler
adds the reading and writing of the objects (``scripts/bench.py --only blender`` measures
Blender's side of the live drive).
"""

from __future__ import annotations

import numpy as np

from bench import median_us, table
from bench_maximal import on_backend
from core.lie import se3, so3
from core.linkage import LiveAssembly
from core.linkage_demos import four_bar, scissor_lift

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
            live = LiveAssembly(linkage, cg_iterations=cap, geometric_iterations=10, tol=1e-10)
            starts, worst, P = [], 0.0, linkage.poses
            for T in drivers:  # the per-frame chain, each frame from the last
                starts.append(P)
                res = live.solve(T, P)
                P, worst = res.poses, max(worst, res.error)
            k = [0]

            def one_frame():
                i = k[0] % len(drivers)
                k[0] += 1
                live.solve(drivers[i], starts[i])

            rows.append([name, len(linkage.bodies), cap, f"{median_us(one_frame, quick):.0f}",
                         f"{worst:.1e}"])
    return rows


def bench_linkages(quick=False):
    out = []
    for backend_name in ("numpy", "numba"):
        rows = on_backend(backend_name, lambda: _rows(quick))
        if rows is None:
            continue
        out.append(table(f"Live assembly per frame ({backend_name} backend)",
                         ["linkage", "bodies", "CG cap", "median us / frame",
                          "largest error (m/rad)"], rows,
                         note=f"{FRAMES} frames, the driver one frame's step from the last "
                              "frame's poses, 10 corrections at most, tolerance 1e-10"))
    return out
