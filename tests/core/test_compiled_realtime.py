"""The compiled paths the demos take on the numba backend agree with the numpy reference:
a driven substep in one kernel call (:func:`core.compiled.kernels.driven_step`), the kernels
of closed spline curves and welds, and whole demo bakes.

Tolerances as in ``test_backend_numba``: each substep's accelerations agree to
``tolerance(nb, cond(M))`` (eps times the recursions' rounding steps per body times the
conditioning of the solve) and the differences add up over the substeps."""

import numpy as np
import pytest

from core import backend
from core.errors import SimulationError
from core.integrators import METHODS, Drive, Integrator
from core.joints.lower_pairs import Fixed, Revolute
from core.model import Model
from tests.core.test_backend_numba import (_add, _close, _closed_joint, _spline_joint,
                                           _trajectory_tolerance, both,  # noqa: F401
                                           stiff_springs)

pytestmark = pytest.mark.skipif(not backend.available(), reason="numba is not installed")


def driven_tree(rng):
    """A spun frame (coordinate 0, prescribed) carrying a closed spline curve, a weld, a
    hinge and an open spline curve, with a joint spring: every joint has a kernel."""
    m = Model(gravity=(0.2, -0.1, -9.81))
    for i, (j, p) in enumerate(zip([Revolute((0, 0, 1)), _closed_joint(), Fixed(),
                                    Revolute((1, 0, 0)), _spline_joint(1)],
                                   [-1, 0, 1, 2, 3])):
        _add(m, rng, f"d{i}", p, j)
    m.add_joint_spring(3, 3.0, 0.2)
    return m


def _spin(t):
    """The drive of coordinate 0: ``q = 2 t + 0.3 sin 5t``."""
    return [2.0 * t + 0.3 * np.sin(5 * t)], [2.0 + 1.5 * np.cos(5 * t)], \
        [-7.5 * np.sin(5 * t)]


@pytest.mark.parametrize("method", METHODS)
def test_driven_substep_agrees(method, both):
    """With a drive, one kernel call per substep gives the numpy integrator's trajectory
    and the drive's work (its powers at the stages, the method's weights); the implicit
    method on stiff springs, the driven coordinate's included."""
    rng = np.random.default_rng(11)
    m = driven_tree(rng)
    if method == "implicit":
        stiff_springs(m)
    q0 = m.neutral() + 0.3 * rng.normal(size=m.nq)
    v0 = rng.normal(size=m.nv)
    tau = 0.1 * rng.normal(size=m.nv)
    fext = 0.1 * rng.normal(size=(m.nbodies, 6))

    def run():
        integ = Integrator(m, 1e-3, 2, method, tau=tau, fext=fext, drive=Drive((0,), _spin))
        assert backend.active() == "numpy" or (integ.compiled.drive_args is not None and
                                                integ.compiled.step_args is None)
        tr = integ.run(q0, v0, 25, check_energy=False)
        return tr.q[-1], tr.v[-1], tr.drive_work[-1:]
    (q_np, v_np, w_np), (q_nb, v_nb, w_nb) = both(run)
    scale = max(np.abs(q_np).max(), np.abs(v_np).max())
    tol = _trajectory_tolerance(m, q0, 25 * 2)
    _close(q_np, q_nb, tol, scale, "q")
    _close(v_np, v_nb, tol, scale, "v")
    _close(w_np, w_nb, tol, max(abs(w_np[0]), 1.0), "drive work")


def test_driven_kernel_needs_kernels_and_constant_forces():
    """The driven kernel is used only where every joint has a kernel and tau, fext are
    constant; otherwise the substeps stay on the Python path."""
    from core.joints.lower_pairs import Universal
    rng = np.random.default_rng(2)
    m = driven_tree(rng)
    drive = Drive((0,), _spin)
    previous = backend.use("numba")
    try:
        assert Integrator(m, 1e-3, drive=drive).compiled.drive_args is not None
        assert Integrator(m, 1e-3, drive=drive, tau=lambda t, q, v: 0 * q).compiled is None
        _add(m, rng, "u", 4, Universal((1, 0, 0), (0, 1, 0)))
        assert Integrator(m, 1e-3, drive=drive).compiled is None
    finally:
        backend.use(previous)


def test_failed_driven_kernel_reports_as_the_python_path():
    """A driven substep whose mass matrix is not positive definite (a body without mass on
    the free coordinate) is taken again in Python, which raises the SimulationError naming
    the cause."""
    previous = backend.use("numba")
    try:
        m = Model()
        m.add_body("frame", -1, Revolute((0, 0, 1)), np.eye(4), 1.0, np.zeros(3),
                   0.1 * np.eye(3))
        m.add_body("ghost", 0, Revolute((1, 0, 0)), np.eye(4), 0.0, np.zeros(3),
                   np.zeros((3, 3)), physical=False)
        integ = Integrator(m, 1e-3, drive=Drive((0,), _spin))
        assert integ.compiled.drive_args is not None
        with pytest.raises(SimulationError, match="diverged"):
            integ.run(m.neutral(), np.zeros(m.nv), 2, check_energy=False)
    finally:
        backend.use(previous)


def test_energies_agree_and_leave_the_world_poses(both):
    """Kinetic and potential energy (gravity, joint and point springs) in one kernel call
    each equal the numpy sums, and the potential energy leaves the world poses at q in
    ``data.oMi`` on both backends (a bake's record reads them there). Tolerance: sums over
    the bodies of products of the recursions' values, ``tolerance(nb)`` of the largest
    term."""
    from core import dynamics as dyn
    from core.kinematics import forward_kinematics
    from tests.core.test_backend_numba import _state, mixed_tree, tolerance
    rng = np.random.default_rng(4)
    m = mixed_tree(rng)
    d = m.create_data()
    q, v, _ = _state(m, rng)

    def energies():
        K, E = dyn.kinetic_energy(m, d, q, v), dyn.mechanical_energy(m, d, q, v)
        return K, dyn.potential_energy(m, d, q), E, d.oMi
    (K_np, U_np, E_np, P_np), (K_nb, U_nb, E_nb, P_nb) = both(energies)
    scale = max(abs(K_np), abs(U_np), 1.0)
    tol = tolerance(m.nbodies)
    _close(K_np, K_nb, tol, scale, "kinetic")
    _close(U_np, U_nb, tol, scale, "potential")
    _close(E_np, E_nb, tol, scale, "mechanical")
    _close(P_np, forward_kinematics(m, m.create_data(), q), tol, 1.0, "poses (numpy)")
    _close(P_nb, P_np, tol, 1.0, "poses (numba)")


class _Counter:
    """A stepper whose state is the number of steps taken; ``advance_steps`` optional."""

    def __init__(self, many):
        self.calls = 0
        if many:
            self.advance_steps = self._many

    def advance(self, t, n):
        self.calls += 1
        return n + 1

    def _many(self, t, n, count):
        self.calls += 1
        return n + count

    def record(self, t, n):
        return {"n": float(n)}


@pytest.mark.parametrize("n_steps,every", [(10, 3), (9, 3), (1, 4), (5, 1)])
def test_integrate_takes_the_steps_between_records_at_once(n_steps, every):
    """A stepper with ``advance_steps`` gets one call per record (the steps between two
    records), and the records and times equal those of the step-by-step loop."""
    from core.integrators import integrate
    one, many = _Counter(False), _Counter(True)
    a = integrate(one, 0, 0.01, n_steps, 0.5, every)
    b = integrate(many, 0, 0.01, n_steps, 0.5, every)
    assert np.array_equal(a.t, b.t) and np.array_equal(a.values["n"], b.values["n"])
    assert a.steps == b.steps == n_steps
    assert one.calls == n_steps
    assert many.calls == len(b.t) - 1                     # one call per record after the first


def test_skeleton_bake_agrees_and_diverges_alike(both):
    """A skeleton bake steps a frame's steps in one kernel call on numba
    (``advance_steps``): its poses equal the numpy bake's to rounding over the run (the
    solves' differences add up, 1e-12 of the scale allowed for 300 Heun steps of an 8-body
    chain, cf. test_skeleton_numba's bound), and a step too large diverges on both."""
    from core.mechanisms import simulate_mechanism, skeleton_chain
    P_np, P_nb = both(lambda: simulate_mechanism(skeleton_chain(duration=0.5)).poses)
    _close(P_np, P_nb, 1e-12, 1.0, "poses")
    for name in ("numpy", "numba"):
        previous = backend.use(name)
        try:
            with pytest.raises(SimulationError, match="diverged at t = "):
                simulate_mechanism(skeleton_chain(duration=6.0, fps=2, substeps=3))
        finally:
            backend.use(previous)


def _sway(t):
    """A rig's kinematic root: the six coordinates of a free joint (rotation exponential
    coordinates, translation) at time t, or ``(K, 6)`` at times ``(K,)``."""
    t = np.asarray(t, dtype=float)
    s, c = np.sin(3.0 * t), np.cos(3.0 * t)
    z = np.zeros_like(t)
    q = np.stack([0.1 * s, 0.2 * t, 0.9 * s, 0.1 * s, z, 0.05 * t], axis=-1)
    v = np.stack([0.3 * c, 0.2 + z, 2.7 * c, 0.3 * c, z, 0.05 + z], axis=-1)
    a = np.stack([-0.9 * s, z, -8.1 * s, -0.9 * s, z, z], axis=-1)
    return q, v, a


def driven_coned_chain(rng, springs=False):
    """A free root prescribed by :func:`_sway` (a rig's kinematic bone) carrying a chain of
    five balls, each in a reach cone with a twist limit, then a hinge with a coordinate
    range, damped (with springs on every joint when ``springs``, soft enough that the
    limits still engage); and the limit solver of those limits."""
    from core.joints.spherical import Free, Spherical
    from core.limits import CoordinateLimit, LimitSolver, ReachCone, TwistLimit
    m = Model()
    _add(m, rng, "root", -1, Free())
    for i in range(1, 6):
        _add(m, rng, f"b{i}", i - 1, Spherical())
        m.add_joint_spring(i, 0.0, 0.01)
    _add(m, rng, "hinge", 5, Revolute((1, 0, 0)))
    lims = [lim for i in range(1, 6) for lim in (
        ReachCone(i, rng.normal(size=3), 0.25 + 0.05 * i),
        TwistLimit(i, rng.normal(size=3), -0.15, 0.2))]
    lims.append(CoordinateLimit(6, -0.3, 0.35))
    if springs:
        stiff_springs(m, 20.0, 2.0)
    return m, LimitSolver(m, lims, restitution=0.2)


@pytest.mark.parametrize("vectorized", [True, False])
@pytest.mark.parametrize("method", ["semi_implicit", "rk4", "implicit"])
def test_driven_limits_agree(method, vectorized, both):
    """A driven model with limits (reach cones, twist limits, a coordinate range) takes a
    run of steps in one kernel call on numba (limits, chart changes and the drive's motion
    inside): its trajectory, the drive's work, the engagement after every run and the
    distances equal the numpy path's, which applies the limits in Python after each
    substep (the implicit method with springs), the driven coordinates locked in both
    (core.limits.LimitSolver.lock). Tolerance as
    :func:`test_driven_substep_agrees` over the 240 substeps;
    engagement is compared exactly (as test_backend_numba's test_limits_agree)."""
    rng = np.random.default_rng(19)
    m, solver = driven_coned_chain(rng, springs=method == "implicit")
    assert solver.compiled
    q0 = 0.2 * rng.normal(size=m.nq)
    v0 = 2.0 * rng.normal(size=m.nv)
    drive = Drive(tuple(range(6)), _sway, vectorized=vectorized)

    def run():
        integ = Integrator(m, 1e-3, 2, method, limits=solver, drive=drive)
        assert backend.active() == "numpy" or integ.compiled.advance_args is not None
        state = integ.start(q0, v0)
        flags, dist = [], []
        for k in range(30):
            state = integ.advance_steps(4 * k * integ.dt, state, 4)
            flags.append(solver.engaged.copy())
            dist.append(solver.distances.copy())
        return state[0], state[1], [state[2]], np.array(flags), np.array(dist)
    (q_np, v_np, w_np, e_np, d_np), (q_nb, v_nb, w_nb, e_nb, d_nb) = both(run)
    assert e_np.any() and not e_np.all(), "the run should engage and release limits"
    assert np.array_equal(e_np, e_nb)
    scale = max(np.abs(q_np).max(), np.abs(v_np).max())
    tol = _trajectory_tolerance(m, q0, 30 * 4 * 2)
    _close(q_np, q_nb, tol, scale, "q")
    _close(v_np, v_nb, tol, scale, "v")
    _close(w_np, w_nb, tol, max(abs(w_np[0]), 1.0), "drive work")
    _close(d_np, d_nb, tol, 1.0, "distances")
