"""OpenSim exchange: reading models, meshes and motions, and the imported gait2392's dynamics.

Rows: the median time of one call (:func:`scripts.benchmarks.common.median_us`); the dynamics of the imported
gait2392 (aba, rnea, crba) on both backends of :mod:`core.backend` (numpy, and numba where
it imports: its twelve CustomJoints compiled, :mod:`core.compiled.kernels.custom`), CPU medians of
:func:`scripts.benchmarks.dynamics._on`. Where ``opensim`` imports (the Python 3.13 environment:
``.venv-py313/bin/python scripts/bench.py --only osim``) the same model's forward dynamics in
OpenSim 4.6 (muscles removed, as in the import) is timed in the same run, so the ratios are
measured side by side.
"""

import glob
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from core.dynamics import aba, crba, rnea
from core.io.motion import read_motion
from core.io.osim import motion_coordinates, read_osim
from core.io.vtp import read_vtp

from .common import median_us, table
from .dynamics import _on

OSIM = os.path.join(ROOT, "..", "shared", "data", "osim")
GAIT = os.path.join(OSIM, "gait2392_thelen2003muscle.osim")
WALK = os.path.join(OSIM, "subject01_walk1_ik.mot")


def opensim_gait(q, v=None, muscles=True):
    """OpenSim 4.6's gait2392 (without its muscles unless ``muscles``) and a state at
    coordinates ``q`` and speeds ``v`` (the reader's order; zero speeds when None), or None
    where OpenSim does not import."""
    try:
        import opensim
    except ImportError:
        return None
    opensim.Logger.removeFileSink()
    opensim.Logger.setLevelString("error")
    m = opensim.Model(GAIT)
    if not muscles:
        m.updForceSet().clearAndDestroy()
    state = m.initSystem()
    cs = m.getCoordinateSet()
    names = read_osim(GAIT).coordinate_names
    for name, qi, vi in zip(names, q, np.zeros(len(q)) if v is None else v):
        c = cs.get(name)
        c.setLocked(state, False)
        c.setValue(state, float(qi), False)
        c.setSpeedValue(state, float(vi))
    return m, state


def _opensim_forward(q, v):
    """A callable timing OpenSim's forward dynamics of gait2392 without muscles at (q, v)
    (coordinates in the reader's order), or None where OpenSim does not import."""
    loaded = opensim_gait(q, v, muscles=False)
    if loaded is None:
        return None
    m, state = loaded
    t = [state.getTime()]

    def forward():
        t[0] += 1e-9                       # a new time invalidates every cached stage
        state.setTime(t[0])
        m.realizeAcceleration(state)
    return forward


def bench_osim(quick=False):
    """Rows ``(what, median)``."""
    model = read_osim(GAIT)
    core_model, names = model.to_core_model(lock=())
    data = core_model.create_data()
    rng = np.random.default_rng(0)
    q = model.default_q() + rng.uniform(-0.3, 0.3, model.nq)
    v = rng.uniform(-1.0, 1.0, model.nq)
    tau = np.zeros(model.nq)
    knee = model.joint("knee_r").joint
    meshes = sorted(glob.glob(os.path.join(OSIM, "Geometry", "*.vtp")))
    motion = read_motion(WALK)
    rows = [
        ("read_osim gait2392 (576 kB, 23 coordinates), ms", median_us(lambda: read_osim(GAIT),
                                                                    quick) / 1e3),
        (f"read_vtp, all {len(meshes)} gait2392 meshes, ms",
         median_us(lambda: [read_vtp(p) for p in meshes], quick) / 1e3),
        ("read_motion + motion_coordinates (211 rows), ms",
         median_us(lambda: motion_coordinates(model, read_motion(WALK)), quick) / 1e3),
        ("body_poses gait2392, us", median_us(lambda: model.body_poses(q), quick)),
        ("knee CustomJoint evaluate (G, S, dS/dq), us",
         median_us(lambda: knee.evaluate(q[names.index("knee_angle_r"):][:1]), quick)),
    ]
    del motion
    calls = (("aba gait2392 (23 DOF)", lambda: lambda: aba(core_model, data, q, v, tau)),
             ("rnea gait2392", lambda: lambda: rnea(core_model, data, q, v, tau)),
             ("crba gait2392", lambda: lambda: crba(core_model, data, q)))
    for what, make in calls:
        for name in ("numpy", "numba"):
            cpu = _on(name, make, quick)[0]
            if cpu != "":
                rows.append((f"{what}, {name} backend, us", cpu))
    forward = _opensim_forward(q, v)
    if forward is not None:
        rows.append(("OpenSim 4.6 realizeAcceleration gait2392 (same q, v), us",
                     median_us(forward, quick, cpu=True)))
    return [table("OpenSim exchange and the imported gait2392", ["what", "median"],
                  [[name, f"{value:.4g}"] for name, value in rows],
                  note="CPU time for the dynamics rows; wall time for the file rows")]
