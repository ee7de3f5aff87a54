"""Benchmark section "rigs": baking the user's own rigs, core only.

    python scripts/bench.py --only rigs

What a bake of a user rig costs in the core (:func:`core.rig.build_rig` and
:func:`core.rig.simulate_rig`, the two calls ``spline_joints.bake_rig`` makes between reading
the scene and writing keys), on rigs built here as :class:`core.rig.RigBody` lists:

* ``10-bone coned tail``: a kinematic hips bone keyed to swing +-0.9 rad about its Y axis
  (the test rig of tests/blender/test_rig_simulation.py: 8 cm bones of 50 g on ball joints,
  each inside a circular reach cone of 0.35 rad with a twist limit of 0.25 rad, damping
  1e-4 N m s/rad);
* ``30-bone rig``: the same keyed hips carrying three such tails, 120 degrees apart;
* ``20-bone pose-matched``: the hips with two tails of ten such bones, on ball joints without
  cones (the animation keeps them in range), every bone following its own animation (a 0.3
  rad wave about X) at Strength 1 (:func:`tracked_bodies`), implicit only (following the
  animation is stepped implicitly whatever is asked). With the tails' cones and twist
  limits kept, the limit solver's checks take about three quarters of the time.

Each is simulated for :data:`SECONDS` at 24 frames per second with :data:`SUBSTEPS` steps
per frame (the Simulate panel's default, as in the tail test), from rest, by each of
:data:`INTEGRATORS` side by side (rk4, the rigs' default before the implicit method;
semi-implicit Euler; the implicit method, the default: semi-implicit Euler with the joint
springs and dampers implicit). The figure is the
median wall time (over :data:`REPEATS` runs, ``quick``: 3) of build plus simulation per
simulated second, and per substep, on both backends of :mod:`core.backend` (the numba
backend where it imports); the limit solver's worst excess over the cones is given as a
check that the runs timed are the ones the tests accept.

:func:`character_rig` builds the character demo's rig the same way for the realtime section
(:mod:`scripts.benchmarks.realtime`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from core.lie import se3, so3
from core.rig import RigBody, RigJoint, build_rig, simulate_rig

from .common import table
from .maximal import on_backend

#: simulated seconds per run (the tail test's bake: 25 frames), frames per second, steps
#: per frame, timed runs
SECONDS = 1.0
FPS = 24.0
SUBSTEPS = 16
REPEATS = 5
#: the integrators timed side by side (:data:`core.integrators.METHODS` but explicit Euler,
#: which the rigs do not offer)
INTEGRATORS = ("rk4", "semi_implicit", "implicit")
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


def tracked_bodies(n_tails: int = 2) -> list:
    """:func:`rig_bodies` with plain ball joints (damping :data:`DAMPING`, no cone or twist
    limit) and every tail bone following an animation at Strength 1: its rest pose turned
    ``0.3 sin(2 pi (t - b / 10))`` rad about X (a wave down each tail)."""
    times, _ = _hips_motion()
    joint = RigJoint("ball", damping=DAMPING)
    out = []
    for i, body in enumerate(rig_bodies(n_tails)):
        if body.joint.kind != "kinematic":
            b = int(body.name.split(".")[1])
            angles = 0.3 * np.sin(2 * math.pi * (times - b / 10))
            motion = np.array([body.T_rest @ se3.from_rp(so3.exp(np.array([a, 0.0, 0.0])),
                                                         np.zeros(3)) for a in angles])
            body = RigBody(body.name, body.parent, body.T_rest, joint, body.mass,
                           body.com, body.inertia, motion_times=times, motion=motion,
                           strength=1.0)
        out.append(body)
    return out


def _ellipsoid(a, b, c, density):
    """Mass (kg) and inertia (3, 3) about the centre of a solid ellipsoid of semi-axes a, b, c."""
    m = density * 4.0 / 3.0 * math.pi * a * b * c
    return m, np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * m / 5.0


def _shin_mass(length, density=1000.0):
    """Mass, com and inertia of a shin of the character (scripts/demos/character_rig.py): its leg
    capsule along the bone and its foot box at the tail, at the Simulate panel's default
    density (combined by the parallel-axis theorem)."""
    from core.massprops import capsule_mass_properties
    leg = capsule_mass_properties(0.042, 0.32, density)
    (fx, fy, fz) = (0.08, 0.06, 0.16)
    mf = density * fx * fy * fz
    parts = [(leg.mass, np.asarray(leg.com), np.asarray(leg.inertia)),
             (mf, np.array([0.0, length, 0.0]),
              np.diag([fy * fy + fz * fz, fx * fx + fz * fz, fx * fx + fy * fy]) * mf / 12.0)]
    m = sum(p[0] for p in parts)
    com = sum(p[0] * p[1] for p in parts) / m
    inertia = sum(I + mi * (float((c - com) @ (c - com)) * np.eye(3) - np.outer(c - com, c - com))
                  for mi, c, I in parts)
    return m, com, inertia


def _fitted_knee(side, frames, lengths):
    """The character's fitted knee (scripts/demos/character_rig.py ``_fit_knee``, core only): the
    gait2392 knee preset moved onto its thigh and shin bones, posed over its range on a
    1-degree grid and fitted with a spline curve joint (12 frames, order 4, length scale
    0.1 m)."""
    from core.fitting import JointSamples
    from core.fitting.curve import fit_spline_curve
    from core.io import RestFrames
    from core.transfer import preset_document, transfer_document
    thigh, shin = f"thigh.{side}", f"shin.{side}"
    doc = transfer_document(preset_document(f"KNEE_{side}"),
                            RestFrames(frames[thigh], frames[shin], lengths[thigh],
                                       lengths[shin])).document
    lo, hi = (float(x) for x in doc.ranges[0])
    qs = np.linspace(lo, hi, int(round(math.degrees(hi - lo))) + 1)
    poses = np.array([doc.joint.transform(np.array([q])) for q in qs])
    return fit_spline_curve(JointSamples(poses, q=qs), n_frames=12, order=4,
                            length_scale=0.1).joint


_CHARACTER = []


def character_bodies() -> list:
    """The rig of the character demo (scripts/demos/character_rig.py, character_rig.blend) built
    in the core as its bake builds it (the simulated bones and their ancestors), cached:
    the hips kinematic, swaying about its bone Y by ``SWAY sin(2 pi t / SWAY_PERIOD)`` (the
    demo's keys, sampled per frame); the thighs kinematic, turned forward (sitting); the coned,
    twist-limited, sprung and damped tail of ``N_TAIL`` ball joints (closed-form masses of
    its ellipsoid meshes at the fur's density); both shins on fitted spline knees
    (:func:`_fitted_knee`), damped, starting straight (q = 0)."""
    if _CHARACTER:
        return _CHARACTER[0]
    from scripts.demos import character_rig as dc
    from core.bones import bone_frame

    frames = {name: bone_frame(head, tail) for name, _, head, tail in dc.BONES}
    lengths = {name: float(np.linalg.norm(np.subtract(tail, head)))
               for name, _, head, tail in dc.BONES}
    parents = {name: parent for name, parent, *_ in dc.BONES}
    keep = set()                           # the simulated bones and their ancestors
    for name in parents:
        if name.startswith(("tail", "shin")):
            while name is not None:
                keep.add(name)
                name = parents[name]
    index = {name: k for k, name in enumerate(n for n, *_ in dc.BONES if n in keep)}
    times = np.arange(dc.FRAMES) / dc.FPS
    turns = dc.SWAY * np.sin(2 * math.pi * times / dc.SWAY_PERIOD)
    sway = np.array([se3.from_rp(so3.exp(np.array([0.0, a, 0.0])), np.zeros(3)) for a in turns])
    bodies = []
    for name, parent, *_ in dc.BONES:
        if name not in keep:
            continue
        F = frames[name]
        T_rest = F if parent is None else se3.inv(frames[parent]) @ F
        up = -1 if parent is None else index[parent]
        if name == "hips":
            motion = F @ sway
            bodies.append(RigBody(name, up, T_rest, RigJoint("kinematic"), pose=motion[0],
                                  motion_times=times, motion=motion))
        elif name.startswith("thigh"):
            turn = se3.from_rp(so3.exp(np.array([-0.5 * math.pi, 0.0, 0.0])), np.zeros(3))
            turn[:3, 3] = F[:3, 3] - turn[:3, :3] @ F[:3, 3]           # about the hip joint
            bodies.append(RigBody(name, up, T_rest, RigJoint("kinematic"),
                                  pose=se3.inv(frames[parent]) @ turn @ F))
        elif name.startswith("tail"):
            k = int(name.split(".")[1])
            r = 0.045 - 0.003 * k
            m, inertia = _ellipsoid(r, 0.055, r, dc.TAIL_DENSITY)
            joint = RigJoint("ball", cone="circular", half_angle=dc.TAIL_CONE, twist=dc.TAIL_TWIST,
                             stiffness=dc.TAIL_STIFFNESS * (1.0 - k / dc.N_TAIL) ** 2,
                             damping=dc.TAIL_DAMPING)
            bodies.append(RigBody(name, up, T_rest, joint, mass=m,
                                  com=(0.0, 0.5 * lengths[name], 0.0), inertia=inertia))
        elif name.startswith("shin"):
            m, com, inertia = _shin_mass(lengths[name])
            knee = _fitted_knee(name.split(".")[1], frames, lengths)
            bodies.append(RigBody(name, up, T_rest, RigJoint("joint", joint=knee,
                                                             damping=dc.KNEE_DAMPING),
                                  mass=m, com=com, inertia=inertia, q=(0.0,)))
    _CHARACTER.append(bodies)
    return bodies


def character_rig():
    """:func:`core.rig.build_rig` of :func:`character_bodies` at the demo's frame rate and
    frame range and the Simulate panel's defaults (:data:`SUBSTEPS` RK4 steps per frame)."""
    from scripts.demos import character_rig as dc
    return build_rig(character_bodies(), fps=dc.FPS, substeps=SUBSTEPS,
                     duration=(dc.FRAMES - 1) / dc.FPS)


def timed_bake(run, backend_name, repeats):
    """``(result, median wall time (s), median CPU time (s))`` of ``run()`` (a bake) on
    backend ``backend_name`` over ``repeats`` runs after one that compiles (or loads) the
    kernels and gives the result; None where that backend is not available."""
    def timed():
        result = run()
        times, cpu = [], []
        for _ in range(repeats):
            t, c = time.perf_counter(), time.process_time()
            run()
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        return result, float(np.median(times)), float(np.median(cpu))

    return on_backend(backend_name, timed)


def _row(name, bodies, integrator, backend_name, repeats):
    def run():
        rig = build_rig(bodies, fps=FPS, substeps=SUBSTEPS, duration=SECONDS,
                        integrator=integrator)
        return simulate_rig(rig)

    out = timed_bake(run, backend_name, repeats)
    if out is None:
        return None
    result, seconds, _ = out
    return [name, integrator, backend_name, len(bodies) - 1, len(result.times),
            seconds / SECONDS, 1e6 * seconds / (SECONDS * FPS * SUBSTEPS),
            math.degrees(result.worst_violation)]


def bench_rigs(quick=False):
    repeats = 3 if quick else REPEATS
    rows = []
    for name, bodies, methods in (("10-bone coned tail", rig_bodies(1), INTEGRATORS),
                                  ("30-bone rig (3 tails)", rig_bodies(3), INTEGRATORS),
                                  ("20-bone pose-matched (2 tails)", tracked_bodies(),
                                   ("implicit",))):
        for backend_name in ("numpy", "numba"):
            for integrator in methods:
                row = _row(name, bodies, integrator, backend_name, repeats)
                if row is not None:
                    rows.append(row)
    note = (f"Median wall time of build_rig + simulate_rig over {repeats} runs of {SECONDS:g} s "
            f"at {FPS:g} frames/s, {SUBSTEPS} steps per frame, on a kinematic hips keyed to "
            "swing (the bake's core work; reading the scene and writing keys come on top); "
            "per substep: the same over the run's substeps, build included.")
    return [table("Rig bake (core): wall time per simulated second and per substep",
                  ["rig", "integrator", "backend", "simulated bones", "frames",
                   "s per simulated s", "us per substep", "worst cone/twist excess (deg)"],
                  rows, note)]
