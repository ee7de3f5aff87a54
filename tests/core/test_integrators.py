"""Integrators: the stepping loop (records, cancel), convergence order, energy conservation on
spline-joint chains, prescribed coordinates and their work, chart changes of spinning ball
joints, blow-up detection, constant memory, and the elliptic joint against a spline curve
joint through the same ellipse."""

import tracemalloc

import numpy as np
import pytest

from core import dynamics as dyn
from core import kinematics as kin
from core.errors import InvalidInputError, SimulationError
from core.integrators import Drive, Integrator, integrate, simulate
from core.joints.elliptic import Elliptic
from core.joints.lower_pairs import Revolute
from core.joints.spherical import Spherical
from core.joints.spline_curve import SplineCurveJoint
from core.lie import se3, so3
from core.model import Model


def pendulum(n=3, length=0.4):
    m = Model(gravity=(0.0, 0.0, -9.81))
    for i in range(n):
        m.add_body(f"l{i}", i - 1, Revolute((0.0, 1.0, 0.0)),
                   None if i == 0 else se3.from_rp(np.eye(3), [length, 0.0, 0.0]),
                   1.0, [length / 2, 0.0, 0.0], np.diag([1e-3, 0.013, 0.013]))
    return m


def spline_joint(rng, n_frames=7, scale=0.15):
    """A cubic spline curve joint through gently varying random control frames."""
    frames = np.empty((n_frames, 4, 4))
    T = np.eye(4)
    for k in range(n_frames):
        T = T @ se3.exp(np.r_[rng.normal(size=3) * 0.25, rng.normal(size=3) * scale])
        frames[k] = T
    return SplineCurveJoint(frames)


def pendulum_spline_joint(wobble=0.02, n_frames=13):
    """A cubic spline curve joint sampling a hinge about y with a spatial wobble: control
    frames ``Rot_y(theta_k) Trans(wobble sin 3 theta_k, wobble theta_k, wobble theta_k^2)``
    for theta_k in [-3, 3], so the joint coordinate runs roughly like the hinge angle."""
    th = np.linspace(-3.0, 3.0, n_frames)
    frames = se3.from_rp(so3.exp(np.outer(th, [0.0, 1.0, 0.0])),
                         wobble * np.stack([np.sin(3 * th), th, th * th], axis=1))
    return SplineCurveJoint(frames)


def spline_chain(n=5, start_angle=0.3):
    """A passive n-link pendulum of spline curve joints hanging along -z; every joint starts
    about ``start_angle`` rad from hanging."""
    m = Model(gravity=(0.0, 0.0, -9.81))
    for i in range(n):
        m.add_body(f"s{i}", i - 1, pendulum_spline_joint(),
                   None if i == 0 else se3.from_rp(np.eye(3), [0.0, 0.0, -0.25]),
                   0.5, [0.0, 0.0, -0.125], np.diag([2.6e-3, 2.6e-3, 1e-4]))
    j = m.joints[0]
    mid = 0.5 * (j.lower[0] + j.upper[0])
    q0 = np.full(n, mid + start_angle / 0.5)           # 0.5 rad of theta per unit of q
    return m, q0


class Counter:
    """A stepper whose state is a number that grows by 0.5 per step; records it and a pair."""

    def __init__(self):
        self.times = []

    def advance(self, t, x):
        self.times.append(t)
        return x + 0.5

    def record(self, t, x):
        return {"x": x, "pair": np.array([x, 2.0 * x])}


def test_integrate_records_the_start_every_kth_step_and_the_last():
    stepper = Counter()
    rec = integrate(stepper, 0.0, 0.5, 7, t0=1.0, record_every=3)
    assert rec.status == "completed" and rec.steps == 7 and rec.wall_time >= 0.0
    np.testing.assert_allclose(rec.t, [1.0, 2.5, 4.0, 4.5])
    np.testing.assert_allclose(rec.values["x"], [0.0, 1.5, 3.0, 3.5])
    np.testing.assert_allclose(rec.values["pair"][:, 1], [0.0, 3.0, 6.0, 7.0])
    np.testing.assert_allclose(stepper.times, 1.0 + 0.5 * np.arange(7))


def test_integrate_cancel_keeps_no_records():
    seen = []
    rec = integrate(Counter(), 0.0, 0.5, 10, record_every=2,
                    progress=lambda f: seen.append(f) or f < 0.5)
    assert seen == [0.2, 0.4, 0.6]
    assert rec.status == "cancelled" and rec.steps == 6
    assert rec.t.shape == (0,) and rec.values["pair"].shape == (0, 2)
    with pytest.raises(InvalidInputError, match="progress"):
        integrate(Counter(), 0.0, 0.5, 10, progress=0.5)
    with pytest.raises(InvalidInputError, match="record_every"):
        integrate(Counter(), 0.0, 0.5, 10, record_every=0)


def test_cancelled_run_returns_no_states():
    m = pendulum(2)
    res = Integrator(m, 0.01).run([0.3, 0.2], [0.0, 0.0], 10, progress=lambda f: f < 0.25)
    assert res.status == "cancelled" and res.steps == 3
    assert res.q.shape == (0, 2) and res.energy.shape == (0,)


def test_drive_prescribes_its_coordinate_and_energy_changes_by_its_work():
    """The base joint of a double pendulum follows ``0.4 sin 3t``; E - E0 - W_drive shrinks
    with RK4's order as the step halves (the work uses RK4's quadrature weights)."""
    m = pendulum(2)
    drive = Drive((0,), lambda t: ([0.4 * np.sin(3 * t)], [1.2 * np.cos(3 * t)],
                                   [-3.6 * np.sin(3 * t)]))
    errs = []
    for dt in (0.02, 0.01):
        res = Integrator(m, dt, drive=drive).run([0.0, 0.3], [0.0, 0.0], int(round(1 / dt)))
        # the same motion at times that may differ by a few ulps of t <= 1 s (rate <= 3.6)
        tol = 16 * np.finfo(float).eps * 3.6
        np.testing.assert_allclose(res.q[:, 0], 0.4 * np.sin(3 * res.t), rtol=0, atol=tol)
        np.testing.assert_allclose(res.v[:, 0], 1.2 * np.cos(3 * res.t), rtol=0, atol=tol)
        assert np.abs(res.drive_work).max() > 0.1
        errs.append(np.abs(res.energy - res.energy[0] - res.drive_work).max()
                    / np.abs(res.drive_work).max())
    assert errs[0] < 1e-5 and errs[1] < errs[0] / 8.0, errs


def test_rk4_is_fourth_order_and_euler_first_order():
    m = pendulum(2)
    q0, v0 = np.array([0.7, -0.4]), np.array([0.5, 0.0])
    ref = simulate(m, q0, v0, 1e-3, 500, "rk4", record_every=500).q[-1]
    errs = {}
    for method in ("rk4", "euler", "semi_implicit"):
        errs[method] = [np.abs(simulate(m, q0, v0, dt, int(round(0.5 / dt)), method,
                                        record_every=10 ** 6).q[-1] - ref).max()
                        for dt in (0.01, 0.005)]
    assert 12.0 < errs["rk4"][0] / errs["rk4"][1] < 20.0            # 2^4 = 16
    for method in ("euler", "semi_implicit"):
        assert 1.6 < errs[method][0] / errs[method][1] < 2.4          # 2^1


def test_substeps_equal_smaller_steps():
    m = pendulum(2)
    q0, v0 = np.array([0.3, 0.2]), np.zeros(2)
    a = Integrator(m, 0.01, substeps=4).run(q0, v0, 10).q[-1]
    b = Integrator(m, 0.0025).run(q0, v0, 40).q[-1]
    np.testing.assert_allclose(a, b, atol=1e-13)


def test_spline_pendulum_energy_drift_rk4():
    """The target is a relative drift below 1e-5 over 10 s at 1 ms; that run (10,000 RK4
    steps) is measured by scripts/benchmarks/dynamics.py. The suite integrates 1 s and holds
    the drift to a tenth of the bound (drift grows about linearly with time)."""
    m, q0 = spline_chain(5)
    res = simulate(m, q0, np.zeros(m.nv), 1e-3, 1000, "rk4", record_every=50)
    E = res.energy
    # relative to the energy exchanged (potential measured from the lowest configuration)
    d = m.create_data()
    hanging = np.full(m.nv, 0.5 * (m.joints[0].lower[0] + m.joints[0].upper[0]))
    scale = E[0] - dyn.potential_energy(m, d, hanging)
    assert scale > 0.1
    assert np.abs(E - E[0]).max() / scale < 1e-6
    assert np.ptp(res.q[:, -1]) > 0.3                      # it really swings
    assert np.all(res.q > m.joints[0].lower[0]) and np.all(res.q < m.joints[0].upper[0])


def test_spinning_ball_joint_changes_chart_and_keeps_energy():
    m = Model(gravity=(0.0, 0.0, 0.0))
    m.add_body("ball", -1, Spherical(), None, 1.0, [0.0, 0.0, 0.0], np.diag([0.1, 0.2, 0.25]))
    d = m.create_data()
    q0 = np.array([0.1, 0.2, 0.3])
    # spin about the body's intermediate-ish axis at 20 rad/s: |r| passes pi many times
    from core import expcoords
    v0 = expcoords.rdot_from_body(q0, np.array([1.0, 0.3, 20.0]))
    integ = Integrator(m, 1e-3, method="rk4")
    q, v = q0.copy(), v0.copy()
    E0 = dyn.kinetic_energy(m, d, q, v)
    R_prev = so3.exp(q)
    for k in range(1500):
        q, v = integ.step(k * 1e-3, q, v)
        assert np.linalg.norm(q) <= np.pi + 1e-12
        R = so3.exp(q)
        assert np.linalg.norm(so3.log(R_prev.T @ R)) < 0.05       # continuous rotation
        R_prev = R
    assert abs(dyn.kinetic_energy(m, d, q, v) - E0) < 1e-6 * E0
    lin, ang = dyn.momentum(m, d, q0, v0)
    lin1, ang1 = dyn.momentum(m, d, q, v)
    np.testing.assert_allclose(ang1, ang, atol=1e-6 * np.linalg.norm(ang))


def test_blow_up_raises_simulation_error_naming_time_and_body():
    m = Model(gravity=(0.0, 0.0, 0.0))
    m.add_body("stiff", -1, Revolute(), None, 1.0, [0.1, 0.0, 0.0], np.eye(3) * 1e-3)
    m.add_joint_spring("stiff", 1e5)
    with pytest.raises(SimulationError, match=r"t = .*'stiff'"):
        simulate(m, [0.1], [0.0], 0.05, 400, "euler")


def test_nonfinite_state_raises():
    m = pendulum(1)
    with pytest.raises(SimulationError, match="NaN or infinite.*'l0'"):
        simulate(m, [0.1], [0.0], 1e-3, 10, "euler",
                 tau=lambda t, q, v: np.array([1e200 if t > 0.004 else 0.0]),
                 check_energy=False)


def test_bad_arguments():
    m = pendulum(1)
    with pytest.raises(InvalidInputError, match="method"):
        Integrator(m, 0.01, method="leapfrog")
    with pytest.raises(InvalidInputError, match="dt"):
        Integrator(m, -0.01)
    with pytest.raises(InvalidInputError, match="substeps"):
        Integrator(m, 0.01, substeps=0)


@pytest.mark.slow
def test_100k_steps_in_constant_memory():
    """100,000 steps: the resident set does not grow (ru_maxrss, untraced, so the run stays
    short), and tracemalloc over a 5,000-step window sees no Python allocation retained per
    step (what is left after the window is independent of its length)."""
    resource = pytest.importorskip("resource")                     # Unix only
    m = pendulum(1)
    integ = Integrator(m, 1e-3, method="semi_implicit")
    integ.run([0.5], [0.0], 2000, record_every=2000)               # warm caches
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = integ.run([0.5], [0.0], 100_000, record_every=100_000, check_energy=False)
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert res.steps == 100_000 and len(res.t) == 2
    assert rss1 - rss0 < 2048                                      # KiB on Linux
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    integ.run([0.5], [0.0], 5000, record_every=5000, check_energy=False)
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak - base < 100_000 and current - base < 20_000


def test_elliptic_joint_matches_spline_curve_joint_on_the_same_ellipse():
    a, b = 0.3, 0.2
    ell = Elliptic(a, b, axis=(0.0, 0.0, 1.0))
    qs = np.linspace(-1.8, 1.8, 181)
    spl = SplineCurveJoint(ell.transforms(qs))

    def model(joint):
        m = Model(gravity=(0.0, -9.81, 0.0))
        m.add_body("slider", -1, joint, None, 1.0, [0.0, 0.0, 0.0], np.diag([1e-3, 1e-3, 1e-3]))
        return m

    me, ms = model(ell), model(spl)
    q0e = 1.0
    target = ell.transform([q0e])[:3, 3]
    grid = np.linspace(spl.lower[0], spl.upper[0], 4001)
    dist = np.linalg.norm(spl.transforms(grid)[:, :3, 3] - target, axis=1)
    q0s = grid[np.argmin(dist)]
    for _ in range(20):                                         # refine by Newton on |p - x|^2
        G, S, _ = spl.evaluate([q0s])
        t = G[:3, :3] @ S[3:, 0]
        q0s -= (G[:3, 3] - target) @ t / (t @ t)
    re = simulate(me, [q0e], [0.0], 2e-3, 1000, "rk4", record_every=10)
    rs = simulate(ms, [q0s], [0.0], 2e-3, 1000, "rk4", record_every=10)
    de, ds = me.create_data(), ms.create_data()
    pe = np.array([kin.forward_kinematics(me, de, q)[0, :3, 3].copy() for q in re.q])
    ps = np.array([kin.forward_kinematics(ms, ds, q)[0, :3, 3].copy() for q in rs.q])
    assert np.ptp(pe[:, 0]) > 0.3                                # it swings across
    assert np.linalg.norm(pe - ps, axis=1).max() < 1e-3
