"""Benchmark section "rigs": baking the user's own rigs, core only.

    python scripts/bench.py --only rigs

What a bake of a user rig costs in the core (:func:`core.rig.build_rig` and
:func:`core.rig.simulate_rig`, the two calls ``spline_joints.bake_rig`` makes between reading
the scene and writing keys), on rigs built here as :class:`core.rig.RigBody` lists:

* ``10-bone coned tail``: a kinematic hips bone keyed to swing +-0.9 rad about its Y axis
  (the test rig of tests/blender/test_rig_simulation.py: 8 cm bones of 50 g on ball joints,
  each inside a circular reach cone of 0.35 rad with a twist limit of 0.25 rad, damping
  1e-4 N m s/rad);
* ``30-bone rig``: the same keyed hips carrying three such tails, 120 degrees apart.

Each is simulated for :data:`SECONDS` at 24 frames per second with :data:`SUBSTEPS` RK4
steps per frame (the Simulate panel's default, as in the tail test), from rest.
The figure is the median wall time (over :data:`REPEATS` runs, ``quick``: 3) of build plus
simulation per simulated second, on both backends of :mod:`core.backend` (the numba backend
where it imports); the limit solver's worst excess over the cones is given as a check that
the runs timed are the ones the tests accept.
"""

from __future__ import annotations

import math
import time

import numpy as np

from bench import table
from bench_maximal import on_backend
from core.lie import se3, so3
from core.rig import RigBody, RigJoint, build_rig, simulate_rig

#: simulated seconds per run (the tail test's bake: 25 frames), frames per second, RK4 steps
#: per frame, timed runs
SECONDS = 1.0
FPS = 24.0
SUBSTEPS = 16
REPEATS = 5
#: tail geometry and settings (tests/blender/test_rig_simulation.py's tail)
BONE_LENGTH = 0.08
BONE_MASS = 0.05
HALF_ANGLE = 0.35
TWIST = 0.25
DAMPING = 1e-4
SWING = 0.9


def _hips_motion():
    """Times (K,) and world poses (K, 4, 4) of the hips: a swing of +-SWING rad about the
    vertical, one period per second, at 1 m height."""
    times = np.arange(int(SECONDS * FPS) + 1) / FPS
    base = se3.from_rp(np.eye(3), np.array([0.0, 0.0, 1.0]))
    poses = np.array([base @ se3.from_rp(so3.exp(np.array([0.0, 0.0, SWING * math.sin(2 * math.pi * t)])),
                                         np.zeros(3)) for t in times])
    return times, poses


def rig_bodies(n_tails: int, n_bones: int = 10) -> list:
    """The hips (kinematic) and ``n_tails`` horizontal tails of ``n_bones`` bones each
    (parents first), from the hips' origin, the k-th pointing along ``-Y`` turned by
    ``2 pi k / n_tails`` about Z, each bone along the one before (Y, the bone axis) on a ball
    joint with cone and twist limits; they start at rest and droop into their cones."""
    times, motion = _hips_motion()
    bodies = [RigBody("hips", -1, motion[0], RigJoint("kinematic"), pose=motion[0],
                      motion_times=times, motion=motion)]
    joint = RigJoint("ball", cone="circular", half_angle=HALF_ANGLE, twist=TWIST, damping=DAMPING)
    inertia = np.diag([3e-5, 1e-5, 3e-5])
    for k in range(n_tails):
        turn = se3.from_rp(so3.exp(np.array([0.0, 0.0, math.pi + 2 * math.pi * k / n_tails])), np.zeros(3))
        for b in range(n_bones):
            T_rest = turn if b == 0 else se3.from_rp(np.eye(3), np.array([0.0, BONE_LENGTH, 0.0]))
            bodies.append(RigBody(f"tail{k}.{b:02d}", 0 if b == 0 else len(bodies) - 1, T_rest, joint,
                                  mass=BONE_MASS, com=(0.0, BONE_LENGTH / 2, 0.0), inertia=inertia))
    return bodies


def _row(name, bodies, backend_name, repeats):
    def run():
        rig = build_rig(bodies, fps=FPS, substeps=SUBSTEPS, duration=SECONDS)
        return simulate_rig(rig)

    def timed():
        result = run()                       # compiles (or loads) the kernels, checks the run
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            run()
            times.append(time.perf_counter() - t)
        return result, float(np.median(times))

    out = on_backend(backend_name, timed)
    if out is None:
        return None
    result, seconds = out
    return [name, backend_name, len(bodies) - 1, len(result.times), seconds / SECONDS,
            math.degrees(result.worst_violation)]


def bench_rigs(quick=False):
    repeats = 3 if quick else REPEATS
    rows = []
    for name, bodies in (("10-bone coned tail", rig_bodies(1)), ("30-bone rig (3 tails)", rig_bodies(3))):
        for backend_name in ("numpy", "numba"):
            row = _row(name, bodies, backend_name, repeats)
            if row is not None:
                rows.append(row)
    note = (f"Median wall time of build_rig + simulate_rig over {repeats} runs of {SECONDS:g} s "
            f"at {FPS:g} frames/s, {SUBSTEPS} RK4 steps per frame, on a kinematic hips keyed to "
            "swing (the bake's core work; reading the scene and writing keys come on top).")
    return [table("Rig bake (core): seconds of wall time per simulated second",
                  ["rig", "backend", "simulated bones", "frames", "s per simulated s",
                   "worst cone/twist excess (deg)"], rows, note)]
