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
                          ("set_active_force_width_scale", 1.3), ("set_max_contraction_velocity", 8.0),
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
