"""Benchmark of the dynamics core (never a timed test): per-call cost of ``aba``.

Tables (median microseconds per call, :func:`median_cpu_wall_us`: every run is timed with both
``time.process_time`` and ``time.perf_counter``, so CPU and wall medians come from the same
runs and sit side by side; on a shared machine CPU time is inflated less by other processes,
and the ratios against ``pin.aba`` / ``mujoco.mj_step`` measured in the same run are the
figures to compare):

Both backends of :mod:`core.backend` are timed in the same run, in columns side by side:
"numpy" (the reference) and "numba" (the compiled kernels; its columns are blank where numba
does not import; the kernels are compiled, or loaded from numba's cache, before timing).

1. revolute chains N = 1, 8, 32, 128: ``core.dynamics.aba`` (numpy: auto = the one-body
   method for N = 1, dense CRBA + Cholesky otherwise; numba: the compiled O(n) recursion),
   ``pinocchio.aba`` and ``mujoco.mj_step`` on the same chain (MJCF built here), with
   ratios, and on numba also ``aba(check=False)`` (the integrators' entry, without argument
   validation); and one semi-implicit Euler step of the model integrator (``advance``: on
   numba one kernel call for the step) against ``mj_step``;
2. chains of cubic spline curve joints, N = 1, 8, 32, 128, and the 1-DOF knee (the gait2392
   tibia on its fitted spline curve joint) on both backends, with ``pin.aba`` on the
   revolute chain of the same N (Pinocchio has no spline joints) for scale; and the N = 8
   chain when every call lands in other knot spans than the previous one (the numpy path
   keeps the rows of the last spans, which in a simulation change only when a coordinate
   crosses a knot);
3. energy drift of the passive 5-link spline-joint pendulum, RK4 at 1 ms for 10 s (skipped
   with --quick).
"""

import os
import time

# one BLAS thread: on a loaded 2-core machine OpenBLAS threads stall small products and,
# busy-waiting after a threaded one, inflate the CPU time of the next (set before numpy is
# imported; scripts/bench.py runs this section in a process with the same setting)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from core import backend, dynamics  # noqa: E402
from core.integrators import Integrator  # noqa: E402
from core.joints.lower_pairs import Revolute  # noqa: E402
from core.joints.spline_curve import SplineCurveJoint  # noqa: E402
from core.lie import se3, so3  # noqa: E402
from core.model import Model  # noqa: E402

from .common import table  # noqa: E402

LINK = 0.3
MASS = 1.0
INERTIA = (1e-3, 8e-3, 8e-3)


def median_cpu_wall_us(fn, quick=False, repeat=None):
    """Medians ``(cpu, wall)`` in microseconds of one call of ``fn()``: runs of >= 0.2 s of
    CPU time (0.02 s with quick), 7 of them (3 with quick), each timed with
    ``time.process_time`` and ``time.perf_counter``."""
    target = 0.02 if quick else 0.2
    number = 1
    while True:
        t0 = time.process_time()
        for _ in range(number):
            fn()
        if time.process_time() - t0 >= target:
            break
        number *= 2 if number < 8 else 4
    cpu, wall = [], []
    for _ in range(repeat or (3 if quick else 7)):
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(number):
            fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return float(np.median(cpu)) / number * 1e6, float(np.median(wall)) / number * 1e6


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


def _ours(model, method="auto", check=True):
    d = model.create_data()
    q, v, tau = _state(model, np.random.default_rng(0))
    return lambda: dynamics.aba(model, d, q, v, tau, method=method, check=check)


def _mj_step(n, q):
    import mujoco
    mm = mujoco.MjModel.from_xml_string(mjcf_chain(n))
    md = mujoco.MjData(mm)
    md.qpos[:] = q

    def step():
        mujoco.mj_step(mm, md)
        if md.time > 0.5:                      # keep the state bounded and finite
            md.time = 0.0
            md.qpos[:] = q
            md.qvel[:] = 0.0
    return step


def _pin_aba(n, q, v, tau):
    import pinocchio as pin
    pm = pin_chain(n)
    pd = pm.createData()
    return lambda: pin.aba(pm, pd, q, v, tau)


def _ours_new_span_every_call(model):
    """aba alternating between two states whose spline coordinates sit in different knot
    spans (one knot apart), so that every call looks its spans up and gathers their rows
    (per call: half the cost of the pair)."""
    d = model.create_data()
    q, v, tau = _state(model, np.random.default_rng(0))
    q2 = q + 1.0

    def pair():
        dynamics.aba(model, d, q, v, tau)
        dynamics.aba(model, d, q2, v, tau)
    return pair


def _on(name, make, quick):
    """CPU and wall medians of ``make()``'s callable on backend ``name`` (``("", "")`` if
    that backend is not available); the callable runs once before timing (compiles)."""
    if name == "numba" and not backend.available():
        return "", ""
    previous = backend.use(name)
    try:
        fn = make()
        fn()
        return median_cpu_wall_us(fn, quick)
    finally:
        backend.use(previous)


def _ratio(a, b):
    return a / b if a != "" and b != "" else ""


def _semi_implicit_step(model):
    integ = Integrator(model, 5e-4, 1, "semi_implicit")
    state = integ.start(*_state(model, np.random.default_rng(0))[:2])
    return lambda: integ.advance(0.0, state)


def revolute_table(quick):
    rows = []
    for n in (1, 8, 32, 128):
        m = revolute_chain(n)
        q, v, tau = _state(m, np.random.default_rng(0))
        ours = {b: _on(b, lambda: _ours(m), quick) for b in ("numpy", "numba")}
        free = _on("numba", lambda: _ours(m, check=False), quick)
        step = {b: _on(b, lambda: _semi_implicit_step(m), quick) for b in ("numpy", "numba")}
        t_pin = median_cpu_wall_us(_pin_aba(n, q, v, tau), quick)
        t_mj = median_cpu_wall_us(_mj_step(n, q), quick)
        rows.append([n, ours["numpy"][0], ours["numba"][0], ours["numba"][1], free[0],
                     t_pin[0], t_pin[1], t_mj[0], _ratio(ours["numpy"][0], t_pin[0]),
                     _ratio(ours["numba"][0], t_pin[0]), _ratio(free[0], t_pin[0]),
                     step["numpy"][0], step["numba"][0], _ratio(step["numba"][0], t_mj[0])])
    return table("aba on revolute chains, both backends (us per call; CPU and wall medians of "
                 "the same runs)",
                 ["N", "numpy aba CPU", "numba aba CPU", "numba aba wall",
                  "numba aba check=False CPU", "pin.aba CPU", "pin.aba wall", "mj_step CPU",
                  "numpy / pin (CPU)", "numba / pin (CPU)", "numba check=False / pin (CPU)",
                  "numpy semi-implicit step CPU", "numba semi-implicit step CPU",
                  "numba step / mj_step (CPU)"], rows,
                 note="numpy aba = method 'auto' (the one-body method for N = 1, dense CRBA + "
                      "Cholesky otherwise); numba aba = the compiled O(n) recursion; "
                      "check=False = the integrators' entry (no argument validation). "
                      "Targets "
                      "(numba): aba <= 1.5x pin.aba at N = 8, 32, 128 and <= 3 us at N = 1; "
                      "a semi-implicit step of N = 8 and 32 faster than mj_step")


def spline_table(quick):
    rows = []
    models = [(f"spline chain N={n}", n, spline_chain(n)) for n in (1, 8, 32, 128)]
    models.append(("knee (gait2392 tibia, 1 DOF)", 1, knee_model()))
    for label, n, m in models:
        ours = {b: _on(b, lambda: _ours(m), quick) for b in ("numpy", "numba")}
        q, v, tau = _state(revolute_chain(n), np.random.default_rng(0))
        t_pin = median_cpu_wall_us(_pin_aba(n, q, v, tau), quick)
        rows.append([label, n, ours["numpy"][0], ours["numba"][0], ours["numba"][1],
                     t_pin[0], _ratio(ours["numba"][0], t_pin[0])])
    m = spline_chain(8)
    new = {b: _on(b, lambda: _ours_new_span_every_call(m), quick) for b in ("numpy", "numba")}
    rows.append(["spline chain N=8, new knot span every call", 8,
                 *(x[0] / 2 if x[0] != "" else "" for x in (new["numpy"], new["numba"])),
                 new["numba"][1] / 2 if new["numba"][1] != "" else "", "", ""])
    return table("aba with cubic spline curve joints, both backends (us per call; CPU and "
                 "wall medians)",
                 ["model", "N", "numpy aba CPU", "numba aba CPU", "numba aba wall",
                  "pin.aba revolute N CPU", "numba / pin (CPU)"], rows,
                 note="targets (numba): N = 8 spline chain <= 8 us; gait2392 knee <= 2 us; "
                      "pin.aba on the revolute chain of the same N (no spline joints in "
                      "Pinocchio)")


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
                 note="target: relative drift < 1e-5")


def bench_dynamics(quick=False):
    """Tables of the dynamics benchmark (see the module docstring)."""
    tables = [revolute_table(quick), spline_table(quick)]
    if not quick:
        tables.append(energy_table())
    return tables
