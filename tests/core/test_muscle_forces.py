"""Muscle forces (core.muscles.hill): DeGroote-Fregly 2016's curves against their published
closed forms, every analytic derivative against central finite differences, the rigid-tendon
muscle against OpenSim 4.6's DeGrooteFregly2016Muscle, and the checks of bad parameters."""

import math

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.muscles import hill

FD_STEP = 1e-6


def _central(f, x, h=FD_STEP):
    return (f(x + h) - f(x - h)) / (2.0 * h)


# ---------------------------------------------------------------------------- closed forms
def test_active_force_length_is_the_three_published_gaussian_like_terms():
    b = [(0.8150671134243542, 1.055033428970575, 0.162384573599574, 0.063303448465465),
         (0.433004984392647, 0.716775413397760, -0.029947116970696, 0.200356847296188),
         (0.1, 1.0, 0.5 * math.sqrt(0.5), 0.0)]
    for l in np.linspace(0.3, 1.8, 31):
        expected = sum(b1 * math.exp(-0.5 * (l - b2) ** 2 / (b3 + b4 * l) ** 2)
                       for b1, b2, b3, b4 in b)
        assert hill.active_force_length(l) == pytest.approx(expected, rel=1e-14)
    assert hill.active_force_length(1.0) == pytest.approx(1.0, abs=1e-12)
    # a wider curve is the same curve stretched about l = 1
    assert hill.active_force_length(1.4, 2.0) == pytest.approx(hill.active_force_length(1.2),
                                                               rel=1e-14)


def test_force_velocity_passes_through_its_anchors_and_inverts():
    assert hill.force_velocity(-1.0) == pytest.approx(0.0, abs=1e-12)
    assert hill.force_velocity(0.0) == pytest.approx(1.0, abs=1e-12)
    v = np.linspace(-1.0, 1.0, 41)
    d1, d2, d3, d4 = -0.3211346127989808, -8.149, -0.374, 0.8825327733249912
    expected = d1 * np.log(d2 * v + d3 + np.sqrt((d2 * v + d3) ** 2 + 1.0)) + d4
    np.testing.assert_allclose(hill.force_velocity(v), expected, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(hill.force_velocity_inverse(hill.force_velocity(v)), v,
                               atol=1e-12)
    assert np.all(np.diff(hill.force_velocity(v)) > 0)      # lengthening resists more


def test_passive_force_length_is_zero_at_its_floor_and_one_at_its_strain():
    for e0 in (0.4, 0.6, 0.8):
        assert hill.passive_force_length(0.2, e0) == pytest.approx(0.0, abs=1e-15)
        offset = math.exp(4.0 * (0.2 - 1.0) / e0)
        l = 1.0 + e0
        assert hill.passive_force_length(l, e0) == pytest.approx(
            (math.exp(4.0) - offset) / (math.exp(4.0) - offset), rel=1e-14)
        assert hill.passive_force_length_integral(0.2, e0) == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("scale", [1.0, 1.5])
def test_active_force_length_derivative_matches_finite_differences(scale):
    l = np.linspace(0.3, 1.8, 61)
    np.testing.assert_allclose(hill.active_force_length_derivative(l, scale),
                               _central(lambda x: hill.active_force_length(x, scale), l),
                               rtol=1e-7, atol=1e-8)


def test_force_velocity_derivative_matches_finite_differences():
    v = np.linspace(-1.2, 1.2, 49)
    np.testing.assert_allclose(hill.force_velocity_derivative(v),
                               _central(hill.force_velocity, v), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("e0", [0.45, 0.6])
def test_passive_derivative_and_integral_match_finite_differences(e0):
    l = np.linspace(0.3, 1.8, 61)
    np.testing.assert_allclose(hill.passive_force_length_derivative(l, e0),
                               _central(lambda x: hill.passive_force_length(x, e0), l),
                               rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(_central(lambda x: hill.passive_force_length_integral(x, e0), l),
                               hill.passive_force_length(l, e0), rtol=1e-7, atol=1e-8)


def test_elastic_energy_is_the_potential_of_the_passive_tension():
    """``F_T = dU/dL`` for a pennated rigid-tendon muscle without activation or damping."""
    p = hill.HillParameters("m", 900.0, 0.09, 0.25, 0.35, passive_fiber_strain=0.5)
    arr = hill.MuscleArrays([p])
    for L in np.linspace(0.26, 0.4, 15):
        force = hill.rigid_tendon(arr, [L], [0.0], [0.0]).tendon_force[0]
        dU = _central(lambda x: hill.elastic_energy(arr, [x])[0], L)
        assert force == pytest.approx(dU, rel=1e-6, abs=1e-6)


def test_activation_rate_is_opensims_smooth_switch():
    tau_a, tau_d, b = 0.015, 0.06, 10.0
    for a, u in ((0.1, 0.9), (0.8, 0.05), (0.5, 0.5)):
        f = 0.5 * math.tanh(b * (u - a))
        z = 0.5 + 1.5 * a
        expected = ((f + 0.5) / (tau_a * z) + (0.5 - f) * z / tau_d) * (u - a)
        assert hill.activation_rate(a, u, tau_a, tau_d, b) == pytest.approx(expected, rel=1e-14)
    # activating is faster than deactivating by the same step
    assert hill.activation_rate(0.2, 0.7, tau_a, tau_d, b) > \
        -hill.activation_rate(0.7, 0.2, tau_a, tau_d, b)


# ---------------------------------------------------------------------------- rigid tendon
def test_a_slack_tendon_pulls_with_no_force():
    p = hill.HillParameters("slack", 500.0, 0.1, 0.3)
    st = hill.rigid_tendon(hill.MuscleArrays([p]), [0.29, 0.3], [-0.1, 0.0], [1.0, 1.0])
    np.testing.assert_array_equal(st.tendon_force, 0.0)


def test_passive_force_alone_resists_stretch():
    """No activation: a muscle stretched past its optimal length still pulls, harder the
    longer it is (a muscle over the knee resists hyperextension)."""
    p = hill.HillParameters("vasti", 2000.0, 0.09, 0.2, 0.05)
    st = hill.rigid_tendon(hill.MuscleArrays([p, p, p]), [0.30, 0.32, 0.34], [0.0] * 3, [0.0] * 3)
    assert np.all(st.tendon_force > 0.0) and np.all(np.diff(st.tendon_force) > 0.0)


# ---------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("field,value", [("max_isometric_force", math.nan),
                                         ("optimal_fiber_length", 0.0),
                                         ("tendon_slack_length", -0.1),
                                         ("pennation_angle_at_optimal", math.pi / 2),
                                         ("activation_time_constant", math.nan),
                                         ("active_force_width_scale", 0.5)])
def test_a_bad_parameter_is_refused_naming_the_muscle(field, value):
    kwargs = dict(max_isometric_force=100.0, optimal_fiber_length=0.1, tendon_slack_length=0.2)
    kwargs[field] = value
    with pytest.raises(InvalidInputError, match="'bic'.*" + field):
        hill.HillParameters("bic", **kwargs)


def test_an_activation_outside_zero_one_is_refused_naming_the_muscle():
    with pytest.raises(InvalidInputError, match="'bic'.*1.2"):
        hill.check_activation("bic", [0.0, 1.2])
    with pytest.raises(InvalidInputError, match="'bic'"):
        hill.check_activation("bic", math.nan)
    hill.check_activation("bic", [0.0, 0.5, 1.0])


class _Read:
    """A muscle as the .osim reader gives it."""

    def __init__(self, kind, extra, name="m"):
        self.name, self.kind, self.extra = name, kind, extra
        self.max_isometric_force, self.optimal_fiber_length = 300.0, 0.12
        self.tendon_slack_length, self.pennation_angle_at_optimal = 0.2, 0.1
        self.max_contraction_velocity = 10.0


def test_parameters_are_mapped_as_opensims_replace_muscles_maps_them():
    thelen = hill.HillParameters.from_muscle(_Read("Thelen2003Muscle", {
        "activation_time_constant": "0.01", "deactivation_time_constant": 0.04,
        "FmaxMuscleStrain": 0.7, "FmaxTendonStrain": 0.033}))
    assert (thelen.activation_time_constant, thelen.deactivation_time_constant,
            thelen.passive_fiber_strain, thelen.fiber_damping) == (0.01, 0.04, 0.7, 0.0)
    degroote = hill.HillParameters.from_muscle(_Read("DeGrooteFregly2016Muscle", {
        "fiber_damping": 0.02, "active_force_width_scale": 1.5,
        "activation_dynamics_smoothing": 10}))
    assert (degroote.fiber_damping, degroote.active_force_width_scale,
            degroote.activation_smoothing) == (0.02, 1.5, 10.0)
    millard = hill.HillParameters.from_muscle(_Read("Millard2012EquilibriumMuscle", {
        "FiberForceLengthCurve": "<FiberForceLengthCurve name=\"f\"><strain_at_one_norm_force>"
                                 "0.65</strain_at_one_norm_force></FiberForceLengthCurve>"}))
    assert (millard.activation_time_constant, millard.deactivation_time_constant,
            millard.passive_fiber_strain, millard.fiber_damping) == (0.01, 0.04, 0.65, 0.1)
    old = hill.HillParameters.from_muscle(_Read("Schutte1993Muscle_Deprecated", {}))
    assert old.passive_fiber_strain == 0.6 and old.kind == "Schutte1993Muscle_Deprecated"
    with pytest.raises(InvalidInputError, match="'m'.*fiber_damping"):
        hill.HillParameters.from_muscle(_Read("DeGrooteFregly2016Muscle",
                                              {"fiber_damping": "nan"}))
    with pytest.raises(InvalidInputError, match="'m' is a PathSpring"):
        hill.HillParameters.from_muscle(_Read("PathSpring", {}))


# ---------------------------------------------------------------------------- OpenSim
def test_rigid_tendon_force_equals_opensims_degroote_muscle():
    """OpenSim's DeGrooteFregly2016Muscle with ignore_tendon_compliance and
    ignore_activation_dynamics, on a slider (pennated, damped, widened, its own passive
    strain), at lengths from slack to stretched, speeds from fast shortening to lengthening
    and three activations: the same fibre and tendon force from OpenSim's path length and
    lengthening speed within 1e-9 relative."""
    osim = pytest.importorskip("opensim")
    model = osim.Model()
    block = osim.Body("block", 2.0, osim.Vec3(0), osim.Inertia(0.1))
    model.addBody(block)
    model.addJoint(osim.SliderJoint("slide", model.getGround(), osim.Vec3(0), osim.Vec3(0),
                                    block, osim.Vec3(0), osim.Vec3(0)))
    mus = osim.DeGrooteFregly2016Muscle()
    mus.setName("mus")
    for setter, value in (("set_max_isometric_force", 800.0), ("set_optimal_fiber_length", 0.1),
                          ("set_tendon_slack_length", 0.2), ("set_pennation_angle_at_optimal", 0.3),
                          ("set_fiber_damping", 0.05),
                          ("set_passive_fiber_strain_at_one_norm_force", 0.55),
                          ("set_active_force_width_scale", 1.3),
                          ("set_max_contraction_velocity", 8.0),
                          ("set_ignore_tendon_compliance", True),
                          ("set_ignore_activation_dynamics", True)):
        getattr(mus, setter)(value)
    mus.addNewPathPoint("p0", model.getGround(), osim.Vec3(-0.3, 0.02, 0))
    mus.addNewPathPoint("p1", block, osim.Vec3(0, 0, 0))
    model.addForce(mus)
    state = model.initSystem()
    arr = hill.MuscleArrays([hill.HillParameters(
        "mus", 800.0, 0.1, 0.2, 0.3, 8.0, fiber_damping=0.05, passive_fiber_strain=0.55,
        active_force_width_scale=1.3)])
    coordinate = model.getCoordinateSet().get(0)
    compared = 0
    for x in np.linspace(-0.08, 0.12, 9):
        for v in (-0.8, -0.3, 0.0, 0.4):
            for a in (0.0, 0.3, 1.0):
                coordinate.setValue(state, x)
                coordinate.setSpeedValue(state, v)
                mus.setActivation(state, a)
                model.realizeDynamics(state)
                st = hill.rigid_tendon(arr, [mus.getLength(state)],
                                       [mus.getLengtheningSpeed(state)], [a])
                for ours, theirs in ((st.tendon_force[0], mus.getTendonForce(state)),
                                     (st.fiber_force[0], mus.getFiberForce(state)),
                                     (st.fiber_length[0], mus.getFiberLength(state)),
                                     (st.fiber_velocity[0], mus.getFiberVelocity(state))):
                    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-12)
                compared += 1
    assert compared == 108


# ---------------------------------------------------------------------------- dynamics
def _pendulum_rig_model():
    """Three bodies (a ball, a hinge, a universal joint) hanging from the world."""
    from core.joints.lower_pairs import Revolute, Universal
    from core.joints.spherical import Spherical
    from core.model import Model
    model = Model(gravity=(0.0, 0.0, -9.81))
    below = np.eye(4)
    below[2, 3] = -0.3
    model.add_body("upper", -1, Spherical(), np.eye(4), mass=2.0, com=(0.0, 0.0, -0.15))
    model.add_body("fore", 0, Revolute((1.0, 0.0, 0.0)), below, mass=1.0, com=(0.0, 0.0, -0.15))
    model.add_body("hand", 1, Universal((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)), below, mass=0.5,
                   com=(0.0, 0.0, -0.05))
    paths = [[(-1, (0.05, 0.0, 0.05)), (0, (0.03, 0.02, -0.1)), (1, (0.02, 0.0, -0.05))],
             [(0, (0.0, 0.04, -0.2)), (2, (0.01, 0.02, -0.05))],
             [(-1, (0.0, -0.1, 0.0)), (1, (0.0, -0.02, -0.1)), (2, (0.0, 0.03, -0.1))]]
    return model, paths


def test_point_paths_speeds_and_forces_are_the_length_gradient():
    """Lengthening speeds ``dL/dq v`` and generalized forces ``-T dL/dq`` against central
    differences of the lengths."""
    from core.muscles.actuation import PointPaths
    model, paths = _pendulum_rig_model()
    geometry = PointPaths(model, paths)
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, v = 0.6 * rng.normal(size=model.nv), rng.normal(size=model.nv)
        J = np.array([(geometry.lengths_and_speeds(q + FD_STEP * e, v)[0]
                       - geometry.lengths_and_speeds(q - FD_STEP * e, v)[0]) / (2 * FD_STEP)
                      for e in np.eye(model.nv)]).T
        _, speeds = geometry.lengths_and_speeds(q, v)
        np.testing.assert_allclose(speeds, J @ v, atol=1e-8)
        tension = np.array([50.0, 120.0, 300.0])
        np.testing.assert_allclose(geometry.generalized_forces(tension), -J.T @ tension,
                                   atol=1e-6)


def test_passive_muscles_conserve_mechanical_plus_elastic_energy():
    """No activation, no damping: the muscles are springs along their paths, so the work of
    their forces is minus the change of their elastic energy and ``E_mech + U`` stays constant
    to rk4's order (halving the step divides the drift by about 16; by more than 10 here)."""
    from core import dynamics
    from core.integrators import simulate
    from core.muscles.actuation import MuscleForces, PointPaths, activation_table
    model, paths = _pendulum_rig_model()
    q0 = np.array([0.3, -0.2, 0.1, 0.8, 0.2, -0.3])
    lengths, _ = PointPaths(model, paths).lengths_and_speeds(q0, np.zeros(model.nv))
    muscles = hill.MuscleArrays([hill.HillParameters(f"m{i}", 400.0, 0.08, L - 0.12, 0.2)
                                 for i, L in enumerate(lengths)])      # fibres at 1.5 l_opt
    drifts = []
    for dt in (2e-3, 1e-3):
        forces = MuscleForces(muscles, PointPaths(model, paths),
                              activation_table(muscles, {}, "activation", 1.0, dt))
        assert forces.elastic_energy(q0) > 1.0            # the muscles start stretched
        tr = simulate(model, q0, np.zeros(model.nv), dt, int(round(1.0 / dt)), "rk4",
                      tau=forces, record_every=50)
        data = model.create_data()
        total = [dynamics.mechanical_energy(model, data, q, v) + forces.elastic_energy(q)
                 for q, v in zip(tr.q, tr.v)]
        moved = float(np.max(np.abs(tr.energy - tr.energy[0])))
        assert moved > 1.0                                 # energy went to and fro
        drifts.append(float(np.max(np.abs(np.array(total) - total[0]))))
    assert drifts[0] < 1e-3 * moved
    assert drifts[1] < drifts[0] / 10.0


def test_activation_follows_the_excitation_as_a_fine_ode_solution_does():
    from scipy.integrate import solve_ivp
    from core.muscles.actuation import activation_table
    p = hill.HillParameters("m", 100.0, 0.1, 0.2, activation_time_constant=0.01,
                            deactivation_time_constant=0.04, activation_smoothing=10.0)
    muscles = hill.MuscleArrays([p])
    times, values = [0.0, 0.1, 0.3, 0.31, 0.6], [0.0, 1.0, 1.0, 0.1, 0.1]
    table = activation_table(muscles, {"m": (times, values)}, "excitation", 0.6, 1e-3,
                             initial={"m": 0.05})
    rate = lambda t, a: hill.activation_rate(a, np.interp(t, times, values), 0.01, 0.04, 10.0)
    fine = solve_ivp(rate, (0.0, 0.6), [0.05], rtol=1e-11, atol=1e-13, max_step=1e-3,
                     dense_output=True)
    for t in np.linspace(0.0, 0.6, 61):
        assert table(t)[0] == pytest.approx(fine.sol(t)[0], abs=1e-6)
    assert table(0.3)[0] > 0.9 and table(0.6)[0] < 0.2


def test_controls_are_checked_by_muscle_name_before_anything_runs():
    from core.muscles.actuation import activation_table
    muscles = hill.MuscleArrays([hill.HillParameters("bic", 100.0, 0.1, 0.2)])
    with pytest.raises(InvalidInputError, match="'bic'.*1.5"):
        activation_table(muscles, {"bic": ([0.0, 1.0], [0.2, 1.5])}, "excitation", 1.0, 1e-3)
    with pytest.raises(InvalidInputError, match="'bic'.*-0.1"):
        activation_table(muscles, {"bic": -0.1}, "activation", 1.0, 1e-3)
    with pytest.raises(InvalidInputError, match="'tri'"):
        activation_table(muscles, {"tri": 0.5}, "activation", 1.0, 1e-3)
    with pytest.raises(InvalidInputError, match="'bic'.*increasing"):
        activation_table(muscles, {"bic": ([0.0, 0.0], [0.2, 0.3])}, "activation", 1.0, 1e-3)


ARM26 = "/work/shared/data/osim/arm26.osim"


@pytest.mark.slow
@pytest.mark.parametrize("muscle,activation", [("BICshort", 0.3), ("BIClong", 0.08)])
def test_arm26_biceps_flexes_the_elbow_as_opensims_forward_simulation(muscle, activation):
    """arm26 with its muscles replaced by DeGrooteFregly2016Muscle (rigid tendons, activation
    given), only one head of the biceps applying force at a constant activation, shoulder and
    elbow free under gravity from (0.2, 0.4) rad: OpenSim's Manager (RungeKuttaMerson,
    accuracy 1e-10) and our rk4 at dt = 1 ms agree within 1e-4 rad at every 10 ms for 1 s.
    The long head wraps over the humeral head's ellipsoid; its activation keeps the elbow
    inside its range (beyond 3.7 rad OpenSim's run turns NaN)."""
    osim = pytest.importorskip("opensim")
    from core.integrators import simulate
    from core.io.osim import read_osim
    from core.muscles.actuation import osim_muscle_forces
    start = {"r_shoulder_elev": 0.2, "r_elbow_flex": 0.4}
    model = osim.Model(ARM26)
    osim.DeGrooteFregly2016Muscle.replaceMuscles(model)
    for i in range(model.getMuscles().getSize()):
        mus = osim.DeGrooteFregly2016Muscle.safeDownCast(model.getMuscles().get(i))
        mus.set_ignore_tendon_compliance(True)
        mus.set_ignore_activation_dynamics(True)
        mus.set_appliesForce(mus.getName() == muscle)
    controller = osim.PrescribedController()
    controller.addActuator(model.getMuscles().get(muscle))
    controller.prescribeControlForActuator(muscle, osim.Constant(activation))
    model.addController(controller)
    state = model.initSystem()
    for name, value in start.items():
        model.getCoordinateSet().get(name).setValue(state, value)
    manager = osim.Manager(model)
    manager.setIntegratorAccuracy(1e-10)
    manager.initialize(state)
    reference = []
    for k in range(1, 101):
        state = manager.integrate(0.01 * k)
        reference.append([model.getCoordinateSet().get(n).getValue(state) for n in start])
    ours_model = read_osim(ARM26)
    core, names = ours_model.to_core_model()
    dt = 1e-3
    forces = osim_muscle_forces(ours_model, names, dt, 1.0, {muscle: activation},
                                muscles=[muscle])
    tr = simulate(core, ours_model.q_from(start), np.zeros(2), dt, 1000, "rk4", tau=forces,
                  record_every=10, check_energy=False)
    assert names == tuple(start)
    assert np.ptp(tr.q[:, 1]) > 0.5                     # the elbow flexed
    np.testing.assert_allclose(tr.q[1:], np.array(reference), atol=1e-4, rtol=0.0)


def test_an_imported_models_muscle_simulation_reports_progress_and_cancels():
    """simulate_muscles calls progress once per frame up to 1; False cancels at once (no
    frames), and a run that is not cancelled gives the same coordinates as one without
    progress."""
    from core.io.osim import read_osim
    from core.osim_rig import simulate_muscles
    model = read_osim(ARM26)
    start = {"r_shoulder_elev": 0.2, "r_elbow_flex": 0.4}
    times = np.linspace(0.0, 0.1, 5)
    seen = []
    done = simulate_muscles(model, start, times, {"BICshort": 0.3},
                            progress=lambda f: seen.append(f) is None)
    assert done.status == "completed" and seen == pytest.approx([0.25, 0.5, 0.75, 1.0])
    plain = simulate_muscles(model, start, times, {"BICshort": 0.3})
    np.testing.assert_array_equal(done.q, plain.q)
    assert done.q.shape == (5, model.nq) and done.q[-1, 1] > done.q[0, 1]  # the elbow flexes
    asked = []
    stopped = simulate_muscles(model, start, times, {"BICshort": 0.3},
                               progress=lambda f: asked.append(f) or False)
    assert stopped.status == "cancelled" and stopped.q.shape == (0, model.nq)
    assert asked == [0.25] and stopped.steps < done.steps


def test_an_imported_muscle_with_a_nan_parameter_is_refused_by_name():
    from core.io.osim import read_osim
    from core.muscles.actuation import osim_muscle_forces
    model = read_osim(ARM26)
    core, names = model.to_core_model()
    model.muscles["BRA"].optimal_fiber_length = math.nan
    with pytest.raises(InvalidInputError, match="'BRA'.*optimal_fiber_length"):
        osim_muscle_forces(model, names, 1e-3, 1.0)
    with pytest.raises(InvalidInputError, match="'TRIlat'.*2"):
        osim_muscle_forces(model, names, 1e-3, 1.0, {"TRIlat": 2.0}, muscles=["TRIlat"])


# ---------------------------------------------------------------------------- rigs
def _arm_rig(control, elbow=0.0, optimal=0.1, duration=0.5, simulate_from=None, **kwargs):
    """An upper arm fixed to the world and a forearm on an elbow hinge (bones along Y), a
    biceps from the front of the upper arm to the forearm: at ``elbow = 0`` its fibre is at
    its ``optimal`` length (m). With ``simulate_from`` (s) the forearm is animated, held
    still at its start pose, and switches to simulated then."""
    from core.rig import RigBody, RigJoint, RigMuscle, build_rig
    from core.lie import so3
    at_elbow = np.eye(4)
    at_elbow[1, 3] = 0.3
    pose = at_elbow.copy()
    pose[:3, :3] = so3.exp(np.array([elbow, 0.0, 0.0]))
    animation = {} if simulate_from is None else {
        "motion_times": np.linspace(0.0, duration, 13),
        "motion": np.repeat(pose[None], 13, axis=0), "simulate_from": simulate_from}
    bodies = [RigBody("upper", -1, np.eye(4), RigJoint("fixed"), mass=2.0),
              RigBody("fore", 0, at_elbow, RigJoint("hinge", axis=(1.0, 0.0, 0.0)), mass=1.0,
                      com=(0.0, 0.15, 0.0), pose=pose, **animation)]
    length = 0.29
    biceps = RigMuscle("biceps", (("upper", (0.0, 0.05, 0.03)), ("fore", (0.0, 0.04, 0.03))),
                       hill.HillParameters("biceps", 600.0, optimal, length - optimal), control)
    return build_rig(bodies, gravity=(0.0, 0.0, 0.0), duration=duration, muscles=[biceps],
                     **kwargs)


def test_an_activated_biceps_flexes_a_rig_elbow():
    from core.rig import simulate_rig
    active = simulate_rig(_arm_rig(1.0))
    relaxed = simulate_rig(_arm_rig(0.0))
    assert active.muscles == ("biceps",) and active.tension.shape == (len(active.times), 1)
    np.testing.assert_array_equal(active.activation, 1.0)
    assert active.tension[0, 0] > 500.0                       # near Fmax at optimal length
    assert abs(active.q[-1, 0]) > 0.5                         # the elbow flexed
    # DeGroote's passive fibre pulls a little at the optimal length (1.8 % of Fmax): the
    # relaxed elbow turns the same way, much slower
    assert 0.0 < relaxed.q[2, 0] / active.q[2, 0] < 0.1
    assert active.energy_drift is None                         # muscles do work


def test_a_rig_muscle_sweep_gives_the_paths_length_and_moment_arm():
    """core.muscles.display.point_path_sweep: the length is the path's, the moment arm (the
    generalized force of a unit tension) is -dL/dq by central differences of that length."""
    from core.muscles.display import point_path_sweep

    rig = _arm_rig(0.0)
    geometry = rig.muscles.geometry
    values = np.linspace(-1.0, 1.5, 11)
    sweep = point_path_sweep(geometry, ("biceps",), "biceps", "elbow", 0, rig.mechanism.q0,
                             values)

    def length(x):
        return geometry.lengths_and_speeds(np.array([x]), np.zeros(1))[0][0]

    # central differences of a 0.3 m length: round-off ~ eps L / h, truncation
    # h^2 |d3L/dq3| / 6 far below it, so ten round-offs bound the difference
    tol = 10 * np.finfo(float).eps * 0.3 / FD_STEP
    for x, L, r in zip(values, sweep.lengths[0], sweep.moment_arms[0]):
        assert L == length(x)
        assert abs(r + _central(length, x)) < tol, (x, r, -_central(length, x))
    # straight elbow: the path runs parallel to the bones 3 cm in front of the elbow's axis
    assert values[4] == 0.0 and abs(sweep.moment_arms[0, 4] - 0.03) < 1e-12
    assert sweep.labels == ("rig",) and "elbow (rad)" in sweep.csv_text()
    with pytest.raises(InvalidInputError, match="triceps"):
        point_path_sweep(geometry, ("biceps",), "triceps", "elbow", 0, rig.mechanism.q0, values)


def test_a_relaxed_stretched_muscle_pulls_the_joint_back():
    """No activation, the elbow opened so that the biceps' fibre is stretched: its passive
    force alone turns the elbow back (towards flexion)."""
    from core.rig import simulate_rig
    opened, closed = sorted((simulate_rig(_arm_rig(0.0, elbow=sign * 1.0, optimal=0.03))
                             for sign in (1, -1)), key=lambda r: r.tension[0, 0])[::-1]
    assert opened.tension[0, 0] > 100.0 and opened.tension[0, 0] > 5.0 * closed.tension[0, 0]
    rig = _arm_rig(0.0, elbow=opened.q[0, 0], optimal=0.03)
    lengths = [rig.muscles.geometry.lengths_and_speeds(q, np.zeros(1))[0][0]
               for q in opened.q[:3]]
    assert abs(opened.q[1, 0] - opened.q[0, 0]) > 0.01 and lengths[2] < lengths[1] < lengths[0]


def test_rig_muscles_with_excitation_activate_with_their_time_constants():
    from core.rig import simulate_rig
    result = simulate_rig(_arm_rig(([0.0, 0.1], [0.0, 1.0]), muscle_control="excitation"))
    assert result.activation[0, 0] == 0.0
    assert 0.5 < result.activation[-1, 0] <= 1.0
    assert np.all(np.diff(result.activation[:, 0]) >= 0.0)


def test_bad_rig_muscles_are_refused_by_name_before_anything_is_simulated():
    from core.rig import RigMuscle, build_rig
    from core.rig import RigBody, RigJoint
    with pytest.raises(InvalidInputError, match="'biceps'.*1.5"):
        _arm_rig(1.5)
    with pytest.raises(InvalidInputError, match="'biceps'.*-0.2"):
        _arm_rig(([0.0, 1.0], [0.5, -0.2]), muscle_control="excitation")
    bodies = [RigBody("upper", -1, np.eye(4), RigJoint("hinge"), mass=1.0)]
    p = hill.HillParameters("tri", 100.0, 0.1, 0.2)
    with pytest.raises(InvalidInputError, match="'tri'.*'radius'"):
        build_rig(bodies, muscles=[RigMuscle("tri", (("upper", (0, 0, 0)),
                                                     ("radius", (0, 0, 0))), p)])
    with pytest.raises(InvalidInputError, match="'tri'.*one"):
        build_rig(bodies, muscles=[RigMuscle("tri", (("upper", (0, 0, 0)),), p)])


def test_a_live_preview_of_a_rig_with_muscles_matches_its_bake():
    """The Simulate panel's live playback (:class:`core.rig.RigRun`) steps the rig frame by
    frame: the muscle forces (the mechanism's tau) act there as in the bake."""
    from core.rig import RigRun, simulate_rig
    rig = _arm_rig(([0.0, 0.3], [0.2, 1.0]))
    baked = simulate_rig(rig)
    run = RigRun(rig)
    run.advance_to(len(baked.times) - 1)
    np.testing.assert_allclose(run.q, baked.q, rtol=0.0, atol=1e-12)
    assert abs(baked.q[-1, 0]) > 0.5


def test_a_muscle_acts_across_a_switch_from_animated_to_simulated():
    """A forearm held on its (still) animation for 0.25 s, then simulated, its biceps
    activated on a ramp over the whole shot: the tension and activation are recorded on every
    frame, the activation the ramp's at the shot's time; the muscle cannot move the elbow
    while it is animated and flexes it after the switch (a relaxed one far less) exactly as a
    rig that starts at the switch with the rest of the ramp does (the activations read at the
    shot's time in the second segment, not from 0), in the bake and in the live run."""
    from core.rig import RigRun, simulate_rig
    ramp = ([0.0, 0.5], [0.2, 1.0])
    rig = _arm_rig(ramp, simulate_from=0.25)
    switched = simulate_rig(rig)
    times, k = switched.times, 6                        # frame 6 at 24 fps: the switch
    assert len(times) == 13 and times[k] == pytest.approx(0.25)
    assert switched.tension.shape == switched.activation.shape == (13, 1)
    np.testing.assert_allclose(switched.activation[:, 0], np.interp(times, *ramp),
                               rtol=0.0, atol=1e-12)
    assert np.all(switched.tension[:k + 1, 0] > 100.0)  # pulling while held on the animation
    np.testing.assert_array_equal(switched.q[:k + 1, 0], 0.0)
    later = simulate_rig(_arm_rig(([-0.25, 0.25], ramp[1]), duration=0.25))
    np.testing.assert_allclose(switched.q[k:], later.q, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(switched.tension[k:], later.tension, rtol=1e-12)
    relaxed = simulate_rig(_arm_rig(0.0, simulate_from=0.25))
    assert abs(switched.q[-1, 0]) > 5.0 * abs(relaxed.q[-1, 0]) > 0.0   # passive: a little
    run = RigRun(rig)
    run.advance_to(len(times) - 1)
    np.testing.assert_allclose(run.q, switched.q, rtol=0.0, atol=1e-12)


def test_a_dragged_and_released_live_run_keeps_the_muscles_activation_clock():
    """A live run of the biceps on a ramp over the whole shot, its forearm dragged at frame 3
    and let go at frame 6 (two restarts): every frame's muscle forces read the activation
    the undragged bake records on that frame (the ramp at the shot's time, not from each
    restart's 0), while the drag moves the elbow."""
    from core.rig import RigRun, simulate_rig
    ramp = ([0.0, 0.5], [0.2, 1.0])
    rig = _arm_rig(ramp)
    baked = simulate_rig(rig)

    class Watched(RigRun):
        def __init__(self, rig):
            self.starts = []                      # (first frame, mechanism) of each restart
            super().__init__(rig)

        def _restart(self, frame, mech):
            self.starts.append((frame, mech))
            super()._restart(frame, mech)

    run = Watched(rig)
    run.advance_to(3)
    run.set_drag("fore", (0.0, 0.3, 0.0), (0.0, 0.3, -0.2))
    run.advance_to(6)
    run.release()
    run.advance_to(len(baked.times) - 1)
    assert [frame for frame, _ in run.starts] == [0, 3, 6]
    used = np.array([[mech.tau.activation((f - first) / run.fps)
                      for first, mech in run.starts if first <= f][-1]
                     for f in range(len(baked.times))])
    np.testing.assert_allclose(used, baked.activation, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(baked.activation[:, 0], np.interp(baked.times, *ramp),
                               rtol=0.0, atol=1e-12)
    assert abs(run.q[6, 0] - baked.q[6, 0]) > 0.01                  # the drag acted


def test_a_cancelled_run_of_a_rig_with_muscles_has_no_frames():
    """Cancelled in its second segment (after the switch): no frames, the muscles' records
    empty with a column per muscle."""
    from core.rig import simulate_rig
    result = simulate_rig(_arm_rig(1.0, simulate_from=0.25), progress=lambda f: f < 0.7)
    assert result.status == "cancelled" and result.muscles == ("biceps",)
    assert result.tension.shape == result.activation.shape == (0, 1)


def test_gait2392s_relaxed_muscles_resist_knee_hyperextension_and_deep_flexion():
    """Every muscle of gait2392 at zero activation, at rest: the passive fibres alone turn the
    knee back from hyperextension (flexing torque, growing past straight) and from deep
    flexion (the quadriceps stretched)."""
    from core.io.osim import read_osim
    from core.muscles.actuation import osim_muscle_forces
    model = read_osim("/work/shared/data/osim/gait2392_thelen2003muscle.osim")
    _, names = model.to_core_model(lock=())
    forces = osim_muscle_forces(model, names, 1e-3, 0.1)
    order = [model.coordinate_names.index(n) for n in names]
    knee = names.index("knee_angle_r")

    def torque(angle):
        q = model.q_from({"knee_angle_r": angle})[order]
        return forces(0.0, q, np.zeros(len(q)))[knee]

    assert torque(0.17) < torque(0.0) < 0.0                  # 10 degrees hyperextended
    assert torque(-2.0) > 10.0                                # 115 degrees flexed
