"""Divergence and bad timing are the simulation's own errors.

A simulation that diverges (a step far too large for its motion) raises
:class:`core.errors.SimulationError` naming the time, the body and a smaller step, whichever
numerical failure the diverged state causes first (an overflow, a spline coordinate out of
all range, a mass matrix that is no longer positive definite, a singular constraint system);
a run never completes with a blown-up energy. Timing and sizes are checked before any work.
A passive mechanism whose energy drifts more than its integrator's order allows gets a
warning sentence.
"""

import dataclasses
import functools
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.checks import whole_number
from core.errors import InvalidInputError, SimulationError
from core.integrators import MAX_RECORD_BYTES, METHODS, Integrator, integrate, simulate
from core.joints.spherical import Spherical
from core.lie import se3, so3
from core.limits import LimitSolver, ReachCone
from core.maximal.couplings import CoupledBodies, CouplingJoint, HingeCoupling
from core.maximal.skeleton import chain
from core.mechanisms import (DEMOS, energy_drift_limit, energy_drift_warning, hinge_chain,
                             simulate_mechanism)
from core.mechanisms.chains import chain_model


@functools.lru_cache(maxsize=None)
def demo(name):
    """Each demo built once (some fit spline joints) for 6 s (the deforming surface's time
    range); runs vary it with dataclasses.replace."""
    return DEMOS[name](duration=6.0)


def assert_divergence_message(err, mech):
    """The message names a time, one of the mechanism's bodies and a smaller step, in words
    (no numpy, scipy or LAPACK text, no exception type names), and the error carries the
    time and the body."""
    text = str(err)
    assert type(err) is SimulationError, (type(err), text)
    assert re.search(r"t = [0-9.e+-]+ s", text), text
    names = [d.name for d in mech.display]
    assert any(f"'{n}'" in text for n in names), text
    assert "reduce the step" in text, text
    for library in ("leading minor", "LinAlgError", "NonFiniteError", "ZeroDivisionError",
                    "FloatingPointError", "OverflowError", "math domain", "Error:"):
        assert library not in text, text
    assert err.time is not None and err.body in names, (err.time, err.body)


def run(mech):
    """simulate_mechanism; returns the result or the SimulationError raised."""
    try:
        return simulate_mechanism(mech)
    except SimulationError as err:
        return err


@pytest.mark.parametrize("name,fps", [("spherical_chain", 5.0), ("spherical_chain", 2.0),
                                      ("deforming_surface", 0.5), ("skeleton_chain", 5.0),
                                      ("hinge_chain", 0.1), ("sliding_chain", 0.1),
                                      ("scapulothoracic", 0.1), ("knee_pendulum", 2.0)])
def test_demos_at_absurd_steps_raise_a_simulation_error_naming_time_and_body(name, fps):
    """One step per frame at these frame rates (0.2 s to 10 s steps) diverges: the error is
    a SimulationError naming t and a body, never a raw LinAlgError / NonFiniteError, and
    never a completed run with a blown-up energy."""
    duration = 6.0 if name == "deforming_surface" else max(6.0, 1.0 / fps)
    mech = dataclasses.replace(demo(name), fps=fps, substeps=1, duration=duration)
    out = run(mech)
    assert isinstance(out, SimulationError), f"completed with energy {out.energy[[0, -1]]}"
    assert_divergence_message(out, mech)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(DEMOS)), step=st.floats(0.01, 5.0),
       method=st.sampled_from(METHODS), kick=st.floats(-30.0, 30.0))
def test_any_step_and_start_either_completes_finite_or_raises_a_simulation_error(
        name, step, method, kick):
    """Hypothesis over step sizes, integrators and initial rates: the only error is a
    SimulationError naming t and a body; a completed run has finite poses and an energy
    within the blow-up bound."""
    base = demo(name)
    changes = {"fps": 1.0 / step, "substeps": 1, "duration": min(3.0, 30 * step)}
    if base.model is not None:
        changes["integrator"] = method
        v0 = base.v0 + kick * np.cos(np.arange(base.model.nv))
        changes["v0"] = v0
    mech = dataclasses.replace(base, **changes)
    out = run(mech)
    if isinstance(out, SimulationError):
        assert_divergence_message(out, mech)
    else:
        assert out.status == "completed" and np.all(np.isfinite(out.poses))
        assert np.all(np.isfinite(out.energy))


@pytest.mark.parametrize("method", ["euler", "semi_implicit"])
def test_a_limited_chain_whose_mass_matrix_fails_in_the_limit_solver_names_the_body(method):
    """The reach cones' impulse solve (Cholesky of M) at a diverged state, without the energy
    check that would stop the run earlier: a SimulationError from Integrator.run naming t
    and a body, not scipy's 'leading minor' LinAlgError."""
    m = demo("spherical_chain")
    integ = Integrator(m.model, 0.05, method=method,
                       limits=LimitSolver(m.model, list(m.limits)))
    with pytest.raises(SimulationError, match=r"t = .* on body 'link\d'.*reduce the step"):
        integ.run(m.q0, m.v0, 100, check_energy=False)


@settings(max_examples=60, deadline=None)
@given(step=st.floats(0.01, 2.0), method=st.sampled_from(METHODS), limited=st.booleans(),
       check_energy=st.booleans(),
       start=st.lists(st.floats(-3.0, 3.0), min_size=9, max_size=9),
       rates=st.lists(st.floats(-20.0, 20.0), min_size=9, max_size=9))
def test_simulate_from_any_state_completes_finite_or_raises_a_simulation_error(
        step, method, limited, check_energy, start, rates):
    """core.integrators.simulate on a chain of three ball joints (with or without reach
    cones, with or without the energy check): a finite trajectory or a SimulationError
    naming t and a body, whatever the step and the initial state."""
    model = chain_model(3, lambda i: Spherical(), name="balls")
    limits = None
    if limited:
        limits = LimitSolver(model, [ReachCone(i, (1.0, 0.0, 0.0), 0.5) for i in (1, 2)])
    try:
        traj = simulate(model, np.array(start), np.array(rates), step, 40, method=method,
                        limits=limits, check_energy=check_energy)
    except SimulationError as err:
        assert re.search(r"t = [0-9.e+-]+ s", str(err)) and "'link" in str(err), str(err)
        assert "reduce the step" in str(err), str(err)
    else:
        assert np.all(np.isfinite(traj.q)) and np.all(np.isfinite(traj.v))


def test_skeleton_step_that_diverges_names_the_step_and_a_body():
    skel, state = chain(4, length=0.3, mass=0.5, radius=0.02, hinge_axis=(0.0, 1.0, 0.0),
                        spherical=(2,), grounded=True)
    g = skel.mass[:, None] * np.array([0.0, 0.0, -9.81])
    with pytest.raises(SimulationError, match=r"h = 2 s \(body \d moves fastest.*reduce it"):
        for _ in range(100):
            state = skel.step(state, 2.0, f_ext=g, update="heun", stabilize=True)[0]


def test_coupled_bodies_step_that_diverges_is_a_simulation_error():
    """A hinge released fast at a 0.2 s rattle step: the NaN constraint error becomes a
    SimulationError naming h and a body (it escaped as NonFiniteError from the solver)."""
    L, m = 0.3, 0.5
    R = so3.exp(np.array([0.0, 0.0, 0.6]))
    sim = CoupledBodies([m], [m * np.diag([2e-4, L ** 2 / 12, L ** 2 / 12])], [R @ [L / 2, 0, 0]],
                        [R], [CouplingJoint(HingeCoupling(), 0, -1,
                                            se3.from_rp(np.eye(3), [-L / 2, 0, 0]), np.eye(4))],
                        u=[[0.0, 0.0, 50.0, 0.0, 0.0, 0.0]])
    f = np.array([[0.0, 0, 0, 0, -m * 9.81, 0]])
    with pytest.raises(SimulationError, match=r"h = 0.2 s \(body 0 moves fastest.*reduce it"):
        for _ in range(200):
            sim.step(0.2, f, integrator="rattle")


# -- validation before work -------------------------------------------------------------------

BAD_TIMING = [("fps", float("nan")), ("fps", float("inf")), ("fps", -30.0), ("fps", 0.0),
              ("fps", True), ("fps", "60"), ("duration", float("nan")), ("duration", -1.0),
              ("duration", float("inf")), ("duration", 1e-6), ("substeps", 2.5),
              ("substeps", 0), ("substeps", float("nan")), ("substeps", float("inf")),
              ("substeps", True), ("substeps", "4")]


@pytest.mark.parametrize("name", sorted(DEMOS))
@pytest.mark.parametrize("what,value", BAD_TIMING)
def test_builders_refuse_unusable_timing_with_the_parameter_named(name, what, value):
    with pytest.raises(InvalidInputError, match=f"{what}|frame after the first"):
        DEMOS[name](**{what: value})


@pytest.mark.parametrize("name", sorted(set(DEMOS) - {"deforming_surface"}))
def test_a_million_seconds_is_refused_with_the_size_before_any_work(name):
    """1e6 s at 60 fps: 6e7 frames; refused with the figure (GiB) and what to do, where the
    run raised MemoryError."""
    with pytest.raises(InvalidInputError, match=r"GiB.*shorten the duration"):
        DEMOS[name](duration=1e6, substeps=1)
    with pytest.raises(InvalidInputError, match=r"integration steps.*shorten the duration"):
        DEMOS[name](duration=1e4, fps=1000.0, substeps=100)


def test_a_deforming_surface_too_long_to_fit_is_refused_with_the_longest_duration():
    with pytest.raises(InvalidInputError, match=r"control points in time.*at most 14.4 s"):
        DEMOS["deforming_surface"](duration=60.0)


def test_mechanism_record_size_counts_bodies_and_scenery():
    """The Mechanism's own check uses its real record size: 16 numbers per body pose plus
    q, v and the per-frame scalars; a deforming sheet adds its vertices."""
    m = hinge_chain(n_links=8, duration=0.1)
    assert m.record_floats() == 16 * 8 + 4 + 8 + 8
    frames = MAX_RECORD_BYTES / 8 / m.record_floats()
    with pytest.raises(InvalidInputError, match="GiB"):
        dataclasses.replace(m, fps=1.0, duration=1.01 * frames)
    sheet = demo("deforming_surface")
    assert sheet.record_floats() == 16 + 4 + 3 + 3 + np.size(sheet.scenery[0].vertices(0.0))


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True).filter(
    lambda x: not (np.isfinite(x) and x == int(x) and x >= 1)), st.booleans(),
    st.integers(max_value=0), st.text(max_size=3)))
def test_counts_accept_only_integers(value):
    with pytest.raises(InvalidInputError, match="must be an integer"):
        whole_number(value, "substeps")


def test_integrator_and_integrate_refuse_bad_counts_and_huge_records():
    model = chain_model(2, lambda i: Spherical())
    for bad in (float("nan"), float("inf"), 2.5, 0):
        with pytest.raises(InvalidInputError, match="substeps"):
            Integrator(model, 0.01, substeps=bad)
        with pytest.raises(InvalidInputError, match="record_every"):
            simulate(model, np.zeros(6), np.zeros(6), 0.01, 10, record_every=bad)
    with pytest.raises(InvalidInputError, match="dt"):
        Integrator(model, "fast")
    integ = Integrator(model, 0.01)
    with pytest.raises(InvalidInputError, match=r"GiB.*shorten the duration"):
        integrate(integ, integ.start(np.zeros(6), np.zeros(6)), 0.01, 10 ** 12)
    with pytest.raises(InvalidInputError, match="finite"):
        integrate(integ, integ.start(np.zeros(6), np.zeros(6)), float("nan"), 10)


# -- energy drift warning --------------------------------------------------------------------

def test_drift_limit_follows_the_order_of_the_integrator():
    assert energy_drift_limit(hinge_chain(duration=0.1)) == pytest.approx(0.2 ** 4)
    assert energy_drift_limit(hinge_chain(duration=0.1, integrator="euler")) == 0.2
    assert energy_drift_limit(demo("skeleton_chain")) == pytest.approx(0.2 ** 2)
    assert energy_drift_limit(demo("spherical_chain")) is None      # inelastic cones


def test_a_passive_bake_at_a_too_large_step_gets_a_drift_warning():
    """Euler at 60 fps with two substeps: the chain's energy drifts by 28 % of its kinetic
    energy, above first order's 20 %; the same chain with rk4 at the demo's step drifts by
    less than 1e-5."""
    coarse = hinge_chain(n_links=4, duration=1.0, substeps=2, integrator="euler")
    r = simulate_mechanism(coarse)
    assert r.status == "completed" and r.energy_drift > 0.2
    warning = energy_drift_warning(coarse, r.energy_drift)
    assert warning and "passive" in warning and "substeps" in warning and "0.008333" in warning
    fine = hinge_chain(n_links=4, duration=1.0)
    r = simulate_mechanism(fine)
    assert r.energy_drift < 1e-5 and energy_drift_warning(fine, r.energy_drift) is None
    # a driven or damped mechanism's energy changes by design: no warning
    assert energy_drift_warning(demo("spherical_chain"), 10.0) is None
