"""Muscle paths: lengths and moment arms of all 92 gait2392 muscles at one pose; then a
40-muscle rig simulated (:mod:`scripts.benchmarks.muscle_rig`).

Ours (:mod:`core.muscles.paths`): one :func:`~core.muscles.paths.path_kinematics` of the
pose, then each muscle's length and its moment arms about all 23 coordinates. Where
``opensim`` imports (the Python 3.13 environment: ``.venv-py313/bin/python scripts/bench.py
--only muscles``) OpenSim 4.6 does the same in the same run: ``GeometryPath::getLength`` of
every muscle and ``computeMomentArm`` about each coordinate the muscle spans (fewer calls
than all 23), after a new time invalidates the state's cached positions; and ours batched
(:class:`~core.muscles.paths.PathSet`: lengths, lengthening speeds and moment arms of all
92 at once). Medians of :func:`scripts.benchmarks.common.median_us` (CPU time).

Imported models' muscle forces (:func:`core.muscles.actuation.osim_muscle_forces`, every
muscle, one activation on): ``tau(t, q, v)`` per call at a pose off the defaults, against the
same measures path by path (:func:`core.muscles.paths.path_measures` per muscle after one
:func:`~core.muscles.paths.path_kinematics`), and :func:`core.osim_rig.simulate_muscles`
(Simulate Muscles' run: RK4, 24 frames per second) in simulated seconds per CPU second and
per wall second.
"""

import os
import time

import numpy as np

from core.io.osim import read_osim
from core.muscles.actuation import osim_muscle_forces
from core.muscles.paths import (PathSet, moment_arms, path_kinematics, path_length,
                                path_measures, spanned_coordinates)
from core.osim_rig import simulate_muscles

from .common import median_us, table
from .muscle_rig import bench_muscle_rig
from .osim import GAIT, OSIM, opensim_gait

ARM26 = os.path.join(OSIM, "arm26.osim")
#: tau per call (ms, CPU median of 30 calls) before the wrap-free paths were batched,
#: measured at commit 054523b3 on the 2-core machine at load average ~6
BEFORE_MS = {"arm26": 3.95, "gait2392": 4.55}
#: simulated seconds of Simulate Muscles timed per model (fewer with quick)
SIMULATED = {"arm26": 0.5, "gait2392": 0.25}


def _ours(model, q):
    paths = [m.path for m in model.muscles.values()]

    def lengths():
        kin = path_kinematics(model, q)
        return [path_length(kin, None, p) for p in paths]

    def both():
        kin = path_kinematics(model, q)
        return [(path_length(kin, None, p), moment_arms(kin, None, p)) for p in paths]
    batch = PathSet(model, paths, list(model.muscles))
    rates = np.zeros(model.nq)

    def batched():
        return batch.measures(path_kinematics(model, q), rates)
    return lengths, both, batched


def _opensim(model, q):
    """``(lengths, both)`` callables timing OpenSim, or None where it does not import."""
    loaded = opensim_gait(q)
    if loaded is None:
        return None
    m, state = loaded
    cs = m.getCoordinateSet()
    m.realizePosition(state)
    muscles = m.getMuscles()
    work = [(muscles.get(name).getGeometryPath(),
             [cs.get(c) for c in spanned_coordinates(model, muscle.path)])
            for name, muscle in model.muscles.items()]
    t = [state.getTime()]

    def invalidate():
        t[0] += 1e-9
        state.setTime(t[0])
        m.realizePosition(state)

    def lengths():
        invalidate()
        return [gp.getLength(state) for gp, _ in work]

    def both():
        invalidate()
        return [(gp.getLength(state), [gp.computeMomentArm(state, c) for c in coords])
                for gp, coords in work]
    return lengths, both


def _imported_row(label, file, active, quick):
    model = read_osim(file)
    core, names = model.to_core_model()
    forces = osim_muscle_forces(model, names, 1e-3, 0.1, {active: 0.3})
    index = [model.coordinate_names.index(n) for n in names]
    rng = np.random.default_rng(1)
    qf = model.default_q() + rng.uniform(-0.2, 0.2, model.nq)
    q, v = qf[index], rng.uniform(-1.0, 1.0, len(names))
    vf = np.zeros(model.nq)
    vf[index] = v
    paths = [m.path for m in model.muscles.values()]

    def path_by_path():
        kin = path_kinematics(model, qf)
        return [path_measures(kin, p, vf) for p in paths]
    call = median_us(lambda: forces(0.05, q, v), quick, cpu=True) / 1e3
    single = median_us(path_by_path, quick, cpu=True) / 1e3
    seconds = SIMULATED[label] / (2.0 if quick else 1.0)
    times = np.arange(0.0, seconds + 1e-9, 1.0 / 24.0)
    start = dict(zip(names, q))
    simulate_muscles(model, start, times[:2], {active: 0.3})     # kernels compiled or loaded
    cpu = time.process_time()
    done = simulate_muscles(model, start, times, {active: 0.3})
    cpu = time.process_time() - cpu
    if done.status != "completed":
        return [label, f"{call:.3g}", f"{BEFORE_MS[label]:.3g}", f"{single:.3g}", "", ""]
    return [f"{label} ({len(paths)} muscles)", f"{call:.3g}", f"{BEFORE_MS[label]:.3g}",
            f"{single:.3g}", f"{times[-1] / cpu:.3g}", f"{times[-1] / done.wall_time:.3g}"]


def bench_muscles(quick=False):
    model = read_osim(GAIT)
    q = model.default_q() + np.random.default_rng(0).uniform(-0.3, 0.3, model.nq)
    spans = sum(len(spanned_coordinates(model, m.path)) for m in model.muscles.values())
    rows = []
    ours = [median_us(f, quick, cpu=True) / 1e3 for f in _ours(model, q)]
    theirs = _opensim(model, q)
    theirs = [median_us(f, quick, cpu=True) / 1e3 for f in theirs] if theirs else None
    for k, what in enumerate(("lengths", f"lengths + moment arms (ours: 92 x 23; OpenSim: "
                                         f"the {spans} spanned)",
                              "the same, ours batched (PathSet, lengthening speeds too)")):
        k_theirs = min(k, 1)
        rows.append([what, f"{ours[k]:.3g}", f"{theirs[k_theirs]:.3g}" if theirs else "",
                     f"{ours[k] / theirs[k_theirs]:.2f}" if theirs else ""])
    return [table("gait2392's 92 muscles at one pose", ["what", "ours, ms",
                                                        "OpenSim 4.6, ms", "ours / OpenSim"],
                  rows, note="CPU time; OpenSim in the same process and run"),
            table("imported models' muscle forces", [
                "model", "tau per call, ms", "before batching, ms",
                "path by path, ms", "Simulate Muscles, simulated s per CPU s",
                "per wall s"],
                [_imported_row("arm26", ARM26, "BICshort", quick),
                 _imported_row("gait2392", GAIT, "soleus_r", quick)],
                note="CPU medians; 'before batching': tau at commit 054523b3, median of 30 calls "
                     "(BEFORE_MS); wall time counts other processes on a shared machine")] + \
        bench_muscle_rig(quick)
