"""Benchmark of the dynamics core (never a timed test): per-call cost of ``aba``.

    python scripts/bench_dynamics.py [--quick]

Tables (median microseconds of CPU time per call, :func:`median_cpu_us`: like
:func:`bench.median_us` but timed with ``time.process_time``, so that other processes on a
shared machine inflate the figures less; every column, ours and the references, uses it):

1. revolute chains N = 1, 8, 32, 128: ``core.dynamics.aba`` (auto = single-body path for
   N = 1, dense CRBA + Cholesky otherwise), the O(n) articulated-body recursion of
   Appendix A, ``pinocchio.aba`` and ``mujoco.mj_step`` on the same chain (MJCF built here),
   with ratios;
2. chains of cubic spline curve joints, N = 1, 8, 32, 128, and the 1-DOF knee (the gait2392
   tibia on its fitted spline curve joint);
3. energy drift of the passive 5-link spline-joint pendulum, RK4 at 1 ms for 10 s (skipped
   with --quick).
"""

import os
import sys
import time
import timeit

# one BLAS thread: on a loaded 2-core machine OpenBLAS threads stall small products (set
# before numpy is imported; when bench.py imports this module the caller's setting applies)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _p in (ROOT, HERE):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from bench import format_table, machine_description, table  # noqa: E402

from core import dynamics  # noqa: E402
from core.joints.lower_pairs import Revolute  # noqa: E402
from core.joints.spline_curve import SplineCurveJoint  # noqa: E402
from core.lie import se3, so3  # noqa: E402
from core.model import Model  # noqa: E402

LINK = 0.3
MASS = 1.0
INERTIA = (1e-3, 8e-3, 8e-3)


def median_cpu_us(fn, quick=False, repeat=None):
    """Median CPU time (``time.process_time``) of one call of ``fn()`` in microseconds: runs of
    >= 0.2 s (0.02 s with quick), 7 of them (3 with quick)."""
    timer = timeit.Timer(fn, timer=time.process_time)
    target = 0.02 if quick else 0.2
    number = 1
    while timer.timeit(number) < target:
        number *= 2 if number < 8 else 4
    runs = timer.repeat(repeat=repeat or (3 if quick else 7), number=number)
    return float(np.median(runs)) / number * 1e6



def revolute_chain(n):
    m = Model(gravity=(0.0, 0.0, -9.81), name=f"revolute{n}")
    for i in range(n):
        m.add_body(f"l{i}", i - 1, Revolute((0.0, 1.0, 0.0)),
                   None if i == 0 else se3.from_rp(np.eye(3), [LINK, 0.0, 0.0]),
                   MASS, [LINK / 2, 0.0, 0.0], np.diag(INERTIA))
    return m


def pin_chain(n):
    import pinocchio as pin
    pm = pin.Model()
    pm.gravity.linear = np.array([0.0, 0.0, -9.81])
    parent = 0
    for i in range(n):
        H = pin.SE3(np.eye(3), np.array([0.0 if i == 0 else LINK, 0.0, 0.0]))
        parent = pm.addJoint(parent, pin.JointModelRY(), H, f"j{i}")
        pm.appendBodyToJoint(parent, pin.Inertia(MASS, np.array([LINK / 2, 0.0, 0.0]),
                                                 np.diag(INERTIA)), pin.SE3.Identity())
    return pm


def mjcf_chain(n):
    body, close = "", ""
    for i in range(n):
        pos = "0 0 0" if i == 0 else f"{LINK} 0 0"
        body += (f'<body name="l{i}" pos="{pos}"><joint type="hinge" axis="0 1 0" '
                 f'damping="0.05"/><inertial pos="{LINK / 2} 0 0" mass="{MASS}" '
                 f'diaginertia="{INERTIA[0]} {INERTIA[1]} {INERTIA[2]}"/>')
        close += "</body>"
    return ('<mujoco><option timestep="0.0005" gravity="0 0 -9.81"/><worldbody>'
            + body + close + "</worldbody></mujoco>")


def spline_joint(seed):
    """A cubic spline curve joint sampling a hinge about y with a spatial wobble."""
    th = np.linspace(-3.0, 3.0, 13)
    w = 0.02 * (1 + 0.1 * seed)
    return SplineCurveJoint(se3.from_rp(so3.exp(np.outer(th, [0.0, 1.0, 0.0])),
                                        w * np.stack([np.sin(3 * th), th, th * th], axis=1)))


def spline_chain(n):
    m = Model(gravity=(0.0, 0.0, -9.81), name=f"spline{n}")
    for i in range(n):
        m.add_body(f"s{i}", i - 1, spline_joint(i),
                   None if i == 0 else se3.from_rp(np.eye(3), [0.0, 0.0, -0.25]),
                   0.5, [0.0, 0.0, -0.125], np.diag([2.6e-3, 2.6e-3, 1e-4]))
    return m


def knee_model():
    from core.mechanisms.knee import knee_joint
    joint, _ = knee_joint()
    m = Model(gravity=(0.0, 0.0, -9.81), name="knee")
    m.add_body("tibia", -1, joint, None, 3.7, [0.0, -0.18, 0.0], np.diag([0.05, 0.004, 0.05]))
    return m


def _state(model, rng):
    q = np.array([0.5 * (lo + hi) if np.isfinite(lo) else 0.0
                  for lo, hi in zip(model.lower, model.upper)]) + 0.3 * rng.normal(size=model.nq)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def _ours(model, method="auto"):
    d = model.create_data()
    q, v, tau = _state(model, np.random.default_rng(0))
    return lambda: dynamics.aba(model, d, q, v, tau, method=method)


def revolute_table(quick):
    import mujoco
    import pinocchio as pin
    rows = []
    for n in (1, 8, 32, 128):
        m = revolute_chain(n)
        q, v, tau = _state(m, np.random.default_rng(0))
        ours = median_cpu_us(_ours(m), quick)
        rec = median_cpu_us(_ours(m, "recursive"), quick)
        pm = pin_chain(n)
        pd = pm.createData()
        t_pin = median_cpu_us(lambda: pin.aba(pm, pd, q, v, tau), quick)
        mm = mujoco.MjModel.from_xml_string(mjcf_chain(n))
        md = mujoco.MjData(mm)
        md.qpos[:] = q

        def step():
            mujoco.mj_step(mm, md)
            if md.time > 0.5:                      # keep the state bounded and finite
                md.time = 0.0
                md.qpos[:] = q
                md.qvel[:] = 0.0
        t_mj = median_cpu_us(step, quick)
        rows.append([n, ours, rec, t_pin, t_mj, ours / t_pin, ours / t_mj])
    return table("aba on revolute chains (us per call)",
                 ["N", "ours aba", "ours Appendix A recursion", "pin.aba", "mujoco.mj_step",
                  "ours / pin", "ours / mj_step"], rows,
                 note="ours aba = method 'auto' (single-body path for N = 1, dense CRBA + "
                      "Cholesky otherwise); target: N = 32 within 20x of mj_step")


def spline_table(quick):
    rows = []
    for n in (1, 8, 32, 128):
        m = spline_chain(n)
        rows.append([f"spline chain N={n}", n, median_cpu_us(_ours(m), quick),
                     median_cpu_us(_ours(m, "recursive"), quick)])
    rows.append(["knee (gait2392 tibia, 1 DOF)", 1, median_cpu_us(_ours(knee_model()), quick),
                 median_cpu_us(_ours(knee_model(), "recursive"), quick)])
    return table("aba with cubic spline curve joints (us per call)",
                 ["model", "N", "ours aba", "ours Appendix A recursion"], rows,
                 note="targets: N = 8 spline chain <= 200 us; 1-DOF knee <= 30 us")


def energy_table():
    from core.integrators import simulate
    m = spline_chain(5)
    j = m.joints[0]
    mid = 0.5 * (j.lower[0] + j.upper[0])
    q0 = np.full(5, mid + 0.6)
    t0 = time.perf_counter()
    res = simulate(m, q0, np.zeros(5), 1e-3, 10_000, "rk4", record_every=100)
    wall = time.perf_counter() - t0
    d = m.create_data()
    exchanged = res.energy[0] - dynamics.potential_energy(m, d, np.full(5, mid))
    drift = np.abs(res.energy - res.energy[0]).max()
    return table("passive 5-link spline-joint pendulum, RK4, dt = 1 ms, 10 s",
                 ["steps", "wall s", "max |E - E0| (J)", "E0 - E_hanging (J)",
                  "relative drift", "relative to |E0|"],
                 [[res.steps, wall, drift, exchanged, drift / exchanged,
                   drift / abs(res.energy[0])]],
                 note="issue target: relative drift < 1e-5")


def bench_dynamics(quick=False):
    """Tables of the dynamics benchmark (see the module docstring)."""
    tables = [revolute_table(quick), spline_table(quick)]
    if not quick:
        tables.append(energy_table())
    return tables


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    print(machine_description())
    for t in bench_dynamics(quick):
        print()
        print(format_table(t))
