"""Mechanism benchmark: simulated seconds per wall second for every demo at its own step size,
beside the seed's reported step times (seed 000 section 7: 6 ms per step for the 1-DOF knee,
49 ms per step for the 8-DOF "SIGGRAPH Joint 1" chain, on a 2.6 GHz Core 2), and the 8-link
hinge chain against MuJoCo on the same chain (same links, inertias, step size and RK4) in the
same run.

    python scripts/bench.py --only mechanisms [--quick]

Each figure is the median of ``repeat`` runs (3, quick 1) of ``duration`` simulated seconds
(1 s, quick 0.25 s); one "step" is one integration step (RK4 = four dynamics evaluations).
Both backends of :mod:`core.backend` run every demo in the same run, side by side: "numpy"
(the reference) and "numba" (compiled kernels; blank where numba does not import; each demo
runs once on it before timing, which compiles or loads the kernels).
"""

import time

import numpy as np

from core import backend
from core.errors import SimulationError
from core.mechanisms import DEMOS, simulate_mechanism

from .common import table

#: seed 000 section 7, unoptimized implementation on a 2.6 GHz Intel Core 2
SEED_MS_PER_STEP = {"knee_pendulum": 6.0, "sliding_chain": 49.0}


#: the largest steps the seed reports (forward Euler): 100 ms beads, 20 ms globe
SEED_STEPS = {"beads_on_a_wire": 0.1, "globe": 0.02}

#: dynamics evaluations per step of each integrator
EVALS = {"rk4": 4, "euler": 1, "semi_implicit": 1}


def _run(name, duration, repeat, backend_name="numpy"):
    """``(mechanism, last result, median wall s, median CPU s)`` of ``repeat`` runs of demo
    ``name`` for ``duration`` simulated seconds (None: the demo's own) on backend
    ``backend_name`` (None for the numba backend where numba does not import)."""
    if backend_name == "numba" and not backend.available():
        return None
    previous = backend.use(backend_name)
    try:
        if backend_name == "numba":
            simulate_mechanism(DEMOS[name](duration=0.05))       # compile or load the kernels
        mech = DEMOS[name]() if duration is None else DEMOS[name](duration=duration)
        walls, cpus, res = [], [], None
        for _ in range(repeat):
            c0 = time.process_time()
            res = simulate_mechanism(mech)
            cpus.append(time.process_time() - c0)
            walls.append(res.wall_time)
    finally:
        backend.use(previous)
    return mech, res, float(np.median(walls)), float(np.median(cpus))


def mujoco_hinge_chain(mech):
    """MJCF of the hinge chain in ``mech`` (links, inertias, gravity, step, RK4), or None if
    MuJoCo is not installed."""
    try:
        import mujoco
    except ImportError:
        return None
    info = mech.info
    L, m = info["length"], info["mass"]
    model = mech.model
    n = model.nbodies
    I = model.inertias[0]
    Ic = I[:3, :3] - m * np.diag([0.0, (0.5 * L) ** 2, (0.5 * L) ** 2])  # about the COM
    body = ""
    for i in reversed(range(n)):
        pos = "0 0 0" if i == 0 else f"{L} 0 0"
        body = (f'<body name="l{i}" pos="{pos}"><joint type="hinge" axis="0 1 0"/>'
                f'<inertial pos="{L / 2} 0 0" mass="{m}" diaginertia="{Ic[0, 0]} {Ic[1, 1]} '
                f'{Ic[2, 2]}"/><geom type="capsule" fromto="0 0 0 {L} 0 0" size="0.02" '
                f'contype="0" conaffinity="0"/>{body}</body>')
    g = " ".join(str(x) for x in model.gravity)
    xml = (f'<mujoco><option timestep="{mech.dt}" integrator="RK4" gravity="{g}"/>'
           f'<worldbody>{body}</worldbody></mujoco>')
    return mujoco.MjModel.from_xml_string(xml)


def _mujoco_run(mj_model, steps, repeat):
    import mujoco
    walls = []
    data = None
    for _ in range(repeat):
        data = mujoco.MjData(mj_model)
        t0 = time.perf_counter()
        for _ in range(steps):
            mujoco.mj_step(mj_model, data)
        walls.append(time.perf_counter() - t0)
    return float(np.median(walls)), data


def bench_mechanisms(quick=False):
    """Rows per demo and the MuJoCo comparison, as tables for scripts/bench.py."""
    duration = 0.25 if quick else 1.0
    repeat = 1 if quick else 3
    rows = []
    hinge = {}
    for name in DEMOS:
        runs = {b: _run(name, duration, repeat, b) for b in ("numpy", "numba")}
        mech, res, wall, cpu = runs["numpy"]
        seed = SEED_MS_PER_STEP.get(name)
        fast = runs["numba"]
        rows.append([name, mech.nbodies, mech.ndof, mech.integrator, mech.dt * 1e3, res.steps,
                     duration / wall, "" if fast is None else duration / fast[2],
                     cpu / res.steps * 1e3, "" if fast is None else fast[3] / res.steps * 1e3,
                     "" if fast is None else cpu / fast[3], "" if seed is None else seed,
                     res.energy_drift, "" if fast is None else fast[1].energy_drift,
                     float(res.constraint_error.max())])
        if name == "hinge_chain":
            hinge = {b: r for b, r in runs.items() if r is not None}
    out = [table(f"Mechanisms: {duration:g} s simulated per demo (median of {repeat}), both "
                 "backends in the same run",
                 ["demo", "bodies", "DOF", "integrator", "dt (ms)", "steps",
                  "numpy sim s / wall s", "numba sim s / wall s", "numpy CPU ms / step",
                  "numba CPU ms / step", "numpy / numba (CPU)", "seed ms / step",
                  "numpy energy drift", "numba energy drift", "constraint error (m)"], rows,
                 note="energy drift: max |E - E0 - W_drive| / max(kinetic, |W_drive|); for "
                      "the damped scapula it is the dissipation, for the ball chain the "
                      "inelastic reach-cone stops, for the skeleton seed 001's stepping. An "
                      "RK4 step is 4 dynamics evaluations, the seed's forward Euler step 1; "
                      "seed figures: knee (1 DOF) and the 8-DOF sliding-letter chain on a "
                      "2.6 GHz Core 2. The skeleton's 'step' is one seed-001 Heun step with "
                      "post-stabilization (on numba one kernel call for the steps of a "
                      "frame). CPU per step includes "
                      "recording the frames (poses and energies).")]
    seed_rows = []
    for name, dt in SEED_STEPS.items():
        for integrator in ("euler", "semi_implicit", "rk4"):
            mech = DEMOS[name](duration=4.0 * duration, fps=1.0 / dt, substeps=1,
                               integrator=integrator)
            try:
                r = simulate_mechanism(mech)
                outcome = f"ran, energy drift {r.energy_drift:.3g}"
            except SimulationError as exc:
                outcome = "diverged at t = " + str(exc).split(" at t = ")[1].split(" ")[0] + " s"
            seed_rows.append([name, dt * 1e3, integrator, 4.0 * duration, outcome])
    out.append(table("The seed's largest steps (its forward Euler) on our demos",
                     ["demo", "dt (ms)", "integrator", "simulated (s)", "outcome"], seed_rows,
                     note="The seed does not give its wires' and globe's sizes or speeds; ours "
                          "(0.3 m rose, beads up to ~3 m/s) need the smaller default steps."))
    mech, res, wall, _ = hinge["numpy"]
    mj = mujoco_hinge_chain(mech)
    if mj is not None:
        mj_wall, data = _mujoco_run(mj, res.steps, repeat)
        rows = []
        for b, (_, r, w, _) in hinge.items():
            diff = float(np.abs(np.asarray(data.qpos) - r.q[-1]).max())
            rows.append([f"core ({b})", r.steps, w, duration / w, w / r.steps * 1e6,
                         w / mj_wall, diff])
        rows.append(["MuJoCo mj_step", res.steps, mj_wall, duration / mj_wall,
                     mj_wall / res.steps * 1e6, 1.0, 0.0])
        out.append(table(
            f"Hinge chain ({mech.nbodies} links, dt = {mech.dt * 1e3:g} ms, RK4) vs MuJoCo, "
            "same run",
            ["engine", "steps", "wall (s)", "sim s / wall s", "us / step", "/ MuJoCo",
             "max |q - q_mujoco| at the end (rad)"], rows,
            note="core's us / step includes recording every frame (poses and energies); "
                 "MuJoCo's loop records nothing"))
    return out
