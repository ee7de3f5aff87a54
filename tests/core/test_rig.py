"""core.rig: rigs of the user's bodies against direct models, kinematic drives, the start
state read from poses, the limit report and bad input."""

import math

import numpy as np
import pytest

from core.errors import InvalidInputError, SimulationError
from core.integrators import simulate
from core.joints.lower_pairs import Fixed, Revolute, Universal
from core.lie import so3
from core.massprops import capsule_mass_properties
from core.mechanisms.base import energy_drift_limit
from core.model import Model
from core.rig import (STABLE_DECAY, RigBody, RigJoint, build_rig, coordinates_from_pose, limit_violation,
                      simulate_rig)

EPS = np.finfo(float).eps


def _T(r=(0.0, 0.0, 0.0), p=(0.0, 0.0, 0.0)):
    T = np.eye(4)
    T[:3, :3] = so3.exp(np.asarray(r, dtype=float))
    T[:3, 3] = p
    return T


def _hinge_chain(n=4):
    rest = [_T((0.3, 0.1, 0.0), (0.0, 0.0, 1.0))] + [_T(p=(0.0, 0.2, 0.0))] * (n - 1)
    return rest, [RigBody(f"b{k}", k - 1, rest[k], RigJoint("hinge", axis=(1.0, 0.0, 0.0)),
                          mass=0.5, com=(0.0, 0.1, 0.0), inertia=np.diag([2e-3, 1e-4, 2e-3]),
                          pose=rest[k] @ _T((0.2 + 0.1 * k, 0.0, 0.0)))
                  for k in range(n)]


def test_hinge_rig_equals_the_direct_model():
    rest, bodies = _hinge_chain()
    rig = build_rig(bodies, fps=30.0, substeps=8, duration=0.5, integrator="rk4")
    res = simulate_rig(rig)
    m = Model()
    for k in range(4):
        m.add_body(f"b{k}", k - 1, Revolute((1.0, 0.0, 0.0)), rest[k], mass=0.5,
                   com=(0.0, 0.1, 0.0), inertia=np.diag([2e-3, 1e-4, 2e-3]))
    q0 = np.array([0.2, 0.3, 0.4, 0.5])
    np.testing.assert_allclose(rig.mechanism.q0, q0, rtol=0, atol=8 * EPS)
    tr = simulate(m, q0, np.zeros(4), 1.0 / 240.0, 120, record_every=8)
    np.testing.assert_allclose(res.q, tr.q, rtol=0, atol=1e-12)
    # passive, so the drift is reported; under rk4's bound for a resolved motion
    assert res.energy_drift is not None and 0.0 < res.energy_drift < energy_drift_limit(rig.mechanism)
    # local poses are each body in its parent, and chain up to the world poses
    np.testing.assert_allclose(res.world[:, 1], res.world[:, 0] @ res.local[:, 1], atol=1e-14)


@pytest.mark.parametrize("kind,joint", [("hinge", Revolute((0.0, 0.6, 0.8))),
                                        ("universal", Universal((1.0, 0.0, 0.0), (0.0, 0.0, 1.0)))])
def test_coordinates_from_pose_recovers_reachable_poses(kind, joint):
    rest = _T((0.1, -0.2, 0.3), (0.0, 0.1, 0.0))
    q = np.array([0.7]) if kind == "hinge" else np.array([0.4, -0.9])
    found, (dp, dr) = coordinates_from_pose(joint, kind, rest, rest @ joint.transform(q))
    np.testing.assert_allclose(found, q, atol=1e-9)
    assert dp < 1e-9 and dr < 1e-9


def test_hinge_start_projects_an_unreachable_pose_with_a_warning():
    rest, bodies = _hinge_chain(1)
    twisted = RigBody("b0", -1, rest[0], RigJoint("hinge", axis=(1.0, 0.0, 0.0)), mass=0.5,
                      pose=rest[0] @ _T((0.5, 0.0, 0.2)))
    rig = build_rig([twisted], fps=30.0, substeps=2, duration=0.1)
    assert rig.warnings and "cannot reach" in rig.warnings[0]
    # the closest hinge angle: the rotation about x nearest exp([0.5, 0, 0.2])
    angles = np.linspace(-math.pi, math.pi, 200001)
    R = so3.exp(np.array([0.5, 0.0, 0.2]))
    traces = np.cos(angles) * (np.trace(R) - R[0, 0]) + np.sin(angles) * (R[2, 1] - R[1, 2])
    assert abs(rig.mechanism.q0[0] - angles[np.argmax(traces)]) < 2 * math.pi / 200000


def test_kinematic_body_follows_its_motion_and_drives_its_child():
    times = np.arange(25) / 24.0
    motion = np.stack([_T((0.0, 0.0, 0.8 * math.sin(3.0 * t)), (0.1 * t, 0.0, 1.0))
                       for t in times])
    bodies = [RigBody("root", -1, np.eye(4), RigJoint("kinematic"), motion_times=times,
                      motion=motion),
              RigBody("arm", 0, _T(p=(0.0, 0.0, -0.1)), RigJoint("hinge", axis=(1.0, 0.0, 0.0)),
                      mass=0.3, com=(0.0, -0.1, 0.0), inertia=np.diag([1e-3, 1e-4, 1e-3]))]
    res = simulate_rig(build_rig(bodies, fps=24.0, substeps=8, duration=1.0))
    np.testing.assert_allclose(res.world[:, 0], motion, atol=1e-13)
    assert np.ptp(res.q[:, 6]) > 0.01          # the swinging root moves the hinge
    assert res.energy_drift is None            # driven: not passive


def test_kinematic_motion_across_the_half_turn_chart():
    times = np.arange(9) / 8.0
    motion = np.stack([_T((0.0, 0.0, 2.5 + t)) for t in times])     # passes |r| = pi
    bodies = [RigBody("root", -1, np.eye(4), RigJoint("kinematic"), motion_times=times,
                      motion=motion),
              RigBody("b", 0, np.eye(4), RigJoint("ball"), mass=1.0, com=(0.0, -0.1, 0.0))]
    rig = build_rig(bodies, fps=8.0, substeps=4, duration=1.0)
    qp, vp, _ = rig.mechanism.drive.motion(0.5)
    np.testing.assert_allclose(vp[:3], [0.0, 0.0, 1.0], atol=1e-9)   # no jump of 2 pi
    res = simulate_rig(rig)
    np.testing.assert_allclose(res.world[:, 0], motion, atol=1e-12)


def test_still_kinematic_body_is_fixed():
    bodies = [RigBody("root", -1, np.eye(4), RigJoint("kinematic"), pose=_T(p=(0, 0, 1))),
              RigBody("b", 0, np.eye(4), RigJoint("ball"), mass=1.0, com=(0.0, -0.1, 0.0))]
    rig = build_rig(bodies, fps=8.0, substeps=4, duration=0.5)
    assert isinstance(rig.mechanism.model.joints[0], Fixed) and rig.mechanism.drive is None


def test_limit_violation_in_angles():
    spec = RigJoint("ball", cone="circular", half_angle=0.4, twist=0.2)
    from core.joints.spherical import Spherical

    q = np.array([[0.5, 0.0, 0.0], [0.0, 0.3, 0.0], [0.1, 0.0, 0.0]])
    out = limit_violation(spec, Spherical(), q)
    np.testing.assert_allclose(out, [0.1, 0.1, 0.0], atol=1e-12)
    ell = RigJoint("ball", cone="elliptical", half_angle_x=0.6, half_angle_z=0.3)
    # swing towards the bone's X axis (a turn about -Z) is limited by half_angle_x
    np.testing.assert_allclose(limit_violation(ell, Spherical(), [[0.0, 0.0, -0.7]]), [0.1],
                               atol=1e-12)
    np.testing.assert_allclose(limit_violation(ell, Spherical(), [[0.35, 0.0, 0.0]]), [0.05],
                               atol=1e-12)


def test_bad_input():
    rest, bodies = _hinge_chain(2)
    with pytest.raises(InvalidInputError, match="has no mass"):
        build_rig([bodies[0], RigBody("b1", 0, rest[1], RigJoint("ball"), mass=0.0)])
    with pytest.raises(InvalidInputError, match="not an earlier body"):
        build_rig([RigBody("b0", 1, rest[0], RigJoint("ball")), bodies[1]])
    with pytest.raises(InvalidInputError, match="nothing to simulate"):
        build_rig([RigBody("k", -1, np.eye(4), RigJoint("kinematic"))])
    with pytest.raises(InvalidInputError, match="ball or free joint"):
        build_rig([RigBody("b", -1, np.eye(4), RigJoint("hinge", cone="circular"))])
    with pytest.raises(InvalidInputError, match="unique names"):
        build_rig([bodies[0], RigBody("b0", 0, rest[1], RigJoint("ball"))])
    with pytest.raises(InvalidInputError, match="needs its core"):
        build_rig([RigBody("b", -1, np.eye(4), RigJoint("joint"))])


def test_damping_too_fast_for_the_step_is_warned():
    """A thin bone's damper decays faster than RK4's step can follow (c / I h > 2.785):
    the rig says so, with the integrator and the substeps that would do; a mild one is not
    warned about, nor any damper under the implicit method."""
    def bodies(damping):
        return [RigBody("k", -1, np.eye(4), RigJoint("kinematic")),
                RigBody("b", 0, np.eye(4), RigJoint("ball", damping=damping), mass=0.05,
                        com=(0.0, 0.05, 0.0), inertia=np.diag([3e-5, 2.5e-6, 3e-5]))]
    rig = build_rig(bodies(3e-3), fps=24.0, substeps=8, duration=0.1, integrator="rk4")
    (warning,) = rig.warnings
    assert "Implicit Euler" in warning and "Substeps" in warning
    need = int(warning.split("at least ")[1].split()[0])
    # the substeps asked for make the step stable: no warning with them
    assert not build_rig(bodies(3e-3), fps=24.0, substeps=need, duration=0.1,
                         integrator="rk4").warnings
    assert not build_rig(bodies(1e-5), fps=24.0, substeps=8, duration=0.1,
                         integrator="rk4").warnings


def _damped_slider(damping):
    """A 50 g body on a slider along Y with a damper, moving at 1 m/s: the rate limit of
    rotations does not hold a slider back, so an explicit method's instability shows."""
    after = np.eye(4)
    after[1, 3] = 1.0 / 24.0
    before = np.eye(4)
    before[1, 3] = -1.0 / 24.0
    return [RigBody("k", -1, np.eye(4), RigJoint("kinematic")),
            RigBody("b", 0, np.eye(4), RigJoint("slider", axis=(0.0, 1.0, 0.0),
                                                damping=damping), mass=0.05,
                    pose_before=before, pose_after=after)]


def _turned(angle):
    """The (4, 4) turn by ``angle`` about X."""
    T = np.eye(4)
    T[:3, :3] = so3.exp(np.array([angle, 0.0, 0.0]))
    return T


def test_a_diverging_rig_is_run_again_with_more_substeps_and_says_so():
    """RK4 cannot follow a damper with ``h c / m`` past its bound at 8 substeps; the rig runs
    again at 4x the substeps (inside the bound) by itself, names what it did, and matches a
    run asked at those substeps from the start."""
    h = 1.0 / (24.0 * 8)
    damping = 2.0 * STABLE_DECAY["rk4"] * 0.05 / h     # twice the bound at 8, half at 32
    rig = build_rig(_damped_slider(damping), fps=24.0, substeps=8, duration=0.5,
                    integrator="rk4")
    result = simulate_rig(rig)
    assert result.status == "completed"
    (note,) = [w for w in result.warnings if "run again" in w]
    assert "8 substeps" in note and "at 32" in note and "reduce the step" not in note
    direct = simulate_rig(build_rig(_damped_slider(damping), fps=24.0, substeps=32,
                                    duration=0.5, integrator="rk4"))
    np.testing.assert_array_equal(result.q, direct.q)


def test_a_rig_that_diverges_at_every_refinement_raises_naming_the_substeps():
    h = 1.0 / (24.0 * 8)
    damping = 100.0 * STABLE_DECAY["rk4"] * 0.05 / h
    rig = build_rig(_damped_slider(damping), fps=24.0, substeps=8, duration=0.5,
                    integrator="rk4")
    with pytest.raises(SimulationError, match="even at 128 substeps"):
        simulate_rig(rig)
    # the implicit method follows the same damper at the rig's own substeps: each substep
    # divides the speed by 1 + h c / m, so the body glides v0 m / c in all, as it does
    # under the continuous damper
    calm = simulate_rig(build_rig(_damped_slider(damping), fps=24.0, substeps=8,
                                  duration=0.5))
    assert not [w for w in calm.warnings if "run again" in w]
    np.testing.assert_allclose(calm.q[-1, 0], 1.0 * 0.05 / damping, rtol=1e-9)


def test_a_start_pose_outside_a_cone_is_named_with_its_excess_before_the_run():
    """A ball joint that starts 50 deg past a 30 deg cone is named, with the excess, when the
    rig is built; one inside is not."""
    def rig(angle):
        return build_rig([RigBody("k", -1, np.eye(4), RigJoint("kinematic")),
                          RigBody("b", 0, np.eye(4), RigJoint("ball", cone="circular",
                                                              half_angle=np.radians(30)),
                                  mass=0.05, com=(0.0, 0.05, 0.0), pose=_turned(angle))],
                         duration=0.1)
    (warning,) = [w for w in rig(np.radians(80)).warnings if "outside" in w]
    assert warning.startswith("b starts 50 deg outside its reach cone")
    assert not [w for w in rig(np.radians(20)).warnings if "outside" in w]


def test_light_bones_get_the_inertia_floor_and_are_named():
    """A bone 10^6 times lighter to turn than the heaviest is raised to INERTIA_FLOOR of it
    (its principal axes kept), named in the warnings; the heavy bone keeps its inertia."""
    from core.rig import INERTIA_FLOOR

    rest = np.eye(4)
    rest[1, 3] = 1.0
    heavy = np.diag([0.1, 0.01, 0.1])
    bodies = [RigBody("big", -1, np.eye(4), RigJoint("ball"), mass=1.0, com=(0.0, 0.5, 0.0),
                      inertia=heavy),
              RigBody("tiny", 0, rest, RigJoint("ball"), mass=1e-3, com=(0.0, 0.005, 0.0),
                      inertia=np.diag([1e-7, 1e-8, 1e-7]))]
    rig = build_rig(bodies, duration=0.1)
    (warning,) = [w for w in rig.warnings if "light bone" in w]
    assert warning.startswith("1 light bone(s)") and warning.endswith(": tiny")
    J = rig.mechanism.model.inertias
    com_big = np.array([0.0, 0.5, 0.0])
    np.testing.assert_allclose(J[0][:3, :3] - 1.0 * (com_big @ com_big * np.eye(3) -
                                                     np.outer(com_big, com_big)), heavy,
                               atol=1e-15)
    com = np.array([0.0, 0.005, 0.0])
    about_com = J[1][:3, :3] - 1e-3 * (com @ com * np.eye(3) - np.outer(com, com))
    np.testing.assert_allclose(about_com, INERTIA_FLOOR * 0.1 * np.eye(3), rtol=1e-12)


def test_an_undriven_rig_that_gains_energy_is_run_again_with_more_substeps():
    """Explicit Euler amplifies a spring's swing by sqrt(1 + (w h)^2) a step: on an undriven
    3 Hz hinge (no gravity, 12 J of motion) the energy grows beyond the method's bound
    (DRIFT_RESOLUTION of the start's energy in motion) at 8 and 32 substeps, so the rig runs
    again by itself until it holds (at 128: the growth over 1 s is e^(w^2 h) - 1, 6 %)."""
    length, rate = 1.0, 1.5
    capsule = capsule_mass_properties(0.1 * length, length, 1000.0)
    after = _turned(rate / 24.0)
    body = RigBody("bone", -1, np.eye(4), RigJoint("hinge", frequency=19.2 / (2 * np.pi)),
                   mass=capsule.mass, com=capsule.com, inertia=capsule.inertia,
                   pose=np.eye(4), pose_before=after.T, pose_after=after)
    rig = build_rig([body], gravity=(0.0, 0.0, 0.0), fps=24.0, substeps=8, duration=1.0,
                    integrator="euler")
    result = simulate_rig(rig)
    notes = [w for w in result.warnings if "run again" in w]
    assert len(notes) == 2 and "at 128" in notes[1], notes
    assert "gained" in notes[0] and "nothing driving it" in notes[0]
    assert result.steps == 128 * 24


@pytest.mark.parametrize("joint", [RigJoint("hinge", damping=0.5),
                                   RigJoint("hinge", frequency=0.0, damping_ratio=0.1)])
def test_a_damped_rig_is_not_passive(joint):
    """A damper takes energy out by design, in either spring form: the rig reports no energy
    drift for it, and the undamped one does."""
    body = RigBody("b", -1, np.eye(4), joint, mass=1.0, com=(0.0, 0.1, 0.0))
    assert not build_rig([body], gravity=(0.0, 0.0, 0.0)).mechanism.passive
    free = RigBody("b", -1, np.eye(4), RigJoint("hinge"), mass=1.0, com=(0.0, 0.1, 0.0))
    assert build_rig([free], gravity=(0.0, 0.0, 0.0)).mechanism.passive
