"""Benchmark of the "muscles" section: a 40-muscle rig simulated (core only).

    python scripts/bench.py --only muscles

:func:`muscle_arm` builds an arm as :class:`core.rig.RigBody` entries (a fixed torso, an
upper arm on a ball joint, a forearm on an elbow hinge, a hand on a universal wrist; bones
along Y) with :data:`MUSCLES` :class:`core.rig.RigMuscle` entries of two or three points
spanning the shoulder, the elbow, the wrist or two of them, their excitations sine curves
with their own phases (activation dynamics integrated, :mod:`core.muscles.actuation`). It is
baked for :data:`SECONDS` at 24 frames per second with :data:`SUBSTEPS` steps per frame (the
Simulate panel's default) and half as many (build_rig's default) by the rigs' default
integrator ("implicit"); the figure is the
median wall time of :func:`core.rig.build_rig` plus :func:`core.rig.simulate_rig` (over
:data:`REPEATS` runs after one that compiles or loads the kernels) per simulated second, its
inverse, the real-time factor, and the same from the CPU time, on both backends.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from core.lie import so3
from core.muscles.hill import HillParameters
from core.rig import RigBody, RigJoint, RigMuscle, build_rig, simulate_rig

from .common import table
from .rigs import timed_bake

#: muscles of the arm, simulated seconds, frames per second, steps per frame, timed runs
MUSCLES = 40
SECONDS = 2.0
FPS = 24.0
SUBSTEPS = 16
REPEATS = 3


def _placed(y):
    T = np.eye(4)
    T[1, 3] = y
    return T


def muscle_arm(n_muscles=MUSCLES, seconds=SECONDS):
    """``(bodies, muscles)`` of the benchmark's arm (module docstring)."""
    bodies = [RigBody("torso", -1, np.eye(4), RigJoint("fixed"), mass=30.0),
              RigBody("upper", 0, _placed(0.4), RigJoint("ball"), mass=2.0,
                      com=(0.0, 0.15, 0.0), inertia=np.diag([0.015, 0.002, 0.015])),
              RigBody("fore", 1, _placed(0.3), RigJoint("hinge", axis=(1.0, 0.0, 0.0),
                                                        damping=0.05),
                      mass=1.2, com=(0.0, 0.13, 0.0), inertia=np.diag([0.008, 0.001, 0.008])),
              RigBody("hand", 2, _placed(0.26), RigJoint("universal", axis=(1.0, 0.0, 0.0),
                                                         axis2=(0.0, 0.0, 1.0)),
                      mass=0.4, com=(0.0, 0.05, 0.0), inertia=np.diag([5e-4, 2e-4, 5e-4]))]
    spans = (("torso", "upper"), ("upper", "fore"), ("fore", "hand"), ("torso", "fore"),
             ("upper", "hand"))
    lengths = {"torso": 0.4, "upper": 0.3, "fore": 0.26, "hand": 0.1}
    rng = np.random.default_rng(0)
    times = np.linspace(0.0, seconds, 49)
    muscles = []
    for k in range(n_muscles):
        a, b = spans[k % len(spans)]
        angle = 2.0 * math.pi * k / n_muscles
        side = 0.02 + 0.02 * rng.random()
        offset = side * np.array([math.cos(angle), 0.0, math.sin(angle)])
        start = offset + np.array([0.0, 0.6 * lengths[a], 0.0])
        end = offset + np.array([0.0, 0.4 * lengths[b], 0.0])
        points = [(a, start)]
        if k % 3 == 0:                                     # a via point on the middle bone
            via = "upper" if (a, b) != ("upper", "fore") else "fore"
            if via not in (a, b):
                points.append((via, offset * 1.5 + np.array([0.0, 0.5 * lengths[via], 0.0])))
        points.append((b, end))
        excitation = 0.5 + 0.45 * np.sin(2.0 * math.pi * (times / 1.3 + k / n_muscles))
        muscles.append(RigMuscle(f"m{k}", tuple(points), None, (times, excitation)))
    # each fibre at its optimal length, 30 % of the path, in the start pose
    rest = build_rig(bodies, muscles=[replace(m, parameters=HillParameters(m.name, 1.0, 1.0, 0.0))
                                      for m in muscles])
    start, _ = rest.muscles.geometry.lengths_and_speeds(rest.mechanism.q0, rest.mechanism.v0)
    return bodies, [replace(m, parameters=HillParameters(m.name, 200.0 + 10.0 * k, 0.3 * L,
                                                         0.7 * L, 0.1))
                    for k, (m, L) in enumerate(zip(muscles, start))]


def _row(backend_name, substeps, repeats):
    bodies, muscles = muscle_arm()

    def run():
        rig = build_rig(bodies, fps=FPS, substeps=substeps, duration=SECONDS, muscles=muscles,
                        muscle_control="excitation")
        return simulate_rig(rig)

    out = timed_bake(run, backend_name, repeats)
    if out is None:
        return None
    result, seconds, cpu = out
    return [backend_name, substeps, len(muscles), len(bodies) - 1, len(result.times),
            f"{seconds / SECONDS:.3g}", f"{SECONDS / seconds:.3g}", f"{SECONDS / cpu:.3g}",
            f"{1e6 * cpu / (SECONDS * FPS * substeps):.4g}",
            f"{float(np.abs(result.tension).max()):.4g}"]


def bench_muscle_rig(quick=False):
    repeats = 1 if quick else REPEATS
    rows = [row for row in (_row(b, n, repeats) for b in ("numpy", "numba")
                            for n in (SUBSTEPS, SUBSTEPS // 2)) if row is not None]
    note = (f"Median wall and CPU time of build_rig + simulate_rig over {repeats} run(s) of "
            f"{SECONDS:g} s at {FPS:g} frames/s ({SUBSTEPS} steps per frame: the Simulate "
            f"panel's default; {SUBSTEPS // 2}: build_rig's), implicit "
            "integrator, excitations as sine curves (activation dynamics integrated); the "
            "muscle forces are passed to the dynamics as tau every substep (on numba both "
            "compiled: the muscles' paths, tensions and generalized forces in one call, then "
            "aba). On a loaded machine the wall time exceeds the CPU "
            "time by the other processes' share.")
    return [table(f"A {MUSCLES}-muscle arm rig: wall time per simulated second",
                  ["backend", "steps per frame", "muscles", "simulated bones", "frames",
                   "wall s per simulated s", "real-time factor (wall)",
                   "real-time factor (CPU time)", "CPU us per substep",
                   "largest tension (N)"], rows, note)]
