"""Muscle paths: lengths and moment arms of all 92 gait2392 muscles at one pose; then a
40-muscle rig simulated (:mod:`scripts.benchmarks.muscle_rig`).

Ours (:mod:`core.muscles.paths`): one :func:`~core.muscles.paths.path_kinematics` of the
pose, then each muscle's length and its moment arms about all 23 coordinates. Where
``opensim`` imports (the Python 3.13 environment: ``.venv-py313/bin/python scripts/bench.py
--only muscles``) OpenSim 4.6 does the same in the same run: ``GeometryPath::getLength`` of
every muscle and ``computeMomentArm`` about each coordinate the muscle spans (fewer calls
than all 23), after a new time invalidates the state's cached positions. Medians of
:func:`scripts.benchmarks.common.median_us` (CPU time).
"""

import numpy as np

from core.io.osim import read_osim
from core.muscles.paths import moment_arms, path_kinematics, path_length, spanned_coordinates

from .common import median_us, table
from .muscle_rig import bench_muscle_rig
from .osim import GAIT, opensim_gait


def _ours(model, q):
    paths = [m.path for m in model.muscles.values()]

    def lengths():
        kin = path_kinematics(model, q)
        return [path_length(kin, None, p) for p in paths]

    def both():
        kin = path_kinematics(model, q)
        return [(path_length(kin, None, p), moment_arms(kin, None, p)) for p in paths]
    return lengths, both


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


def bench_muscles(quick=False):
    model = read_osim(GAIT)
    q = model.default_q() + np.random.default_rng(0).uniform(-0.3, 0.3, model.nq)
    spans = sum(len(spanned_coordinates(model, m.path)) for m in model.muscles.values())
    rows = []
    ours = [median_us(f, quick, cpu=True) / 1e3 for f in _ours(model, q)]
    theirs = _opensim(model, q)
    theirs = [median_us(f, quick, cpu=True) / 1e3 for f in theirs] if theirs else None
    for k, what in enumerate(("lengths", f"lengths + moment arms (ours: 92 x 23; OpenSim: "
                                         f"the {spans} spanned)")):
        rows.append([what, f"{ours[k]:.3g}", f"{theirs[k]:.3g}" if theirs else "",
                     f"{ours[k] / theirs[k]:.2f}" if theirs else ""])
    return [table("gait2392's 92 muscles at one pose", ["what", "ours, ms",
                                                        "OpenSim 4.6, ms", "ours / OpenSim"],
                  rows, note="CPU time; OpenSim in the same process and run")] + \
        bench_muscle_rig(quick)
