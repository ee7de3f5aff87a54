"""Pins (core.rig, *Pins*): a soft pin's equilibrium is the spring's closed form, also below a
moving body; a hard pin (core.limits.PointPin) keeps a pendulum on its pin within its
deadband without gaining energy, holds a hand to a moving bar on the frames it is keyed on
and holds with contacts; a pin keyed on and off acts exactly on the frames it is on; pins on
kinematic or unknown bones, or with a strength that is not a positive number, are refused
naming the bone; and a kinematic parent's mass does not change how its tail meets a limit
(core.limits, *Locked coordinates*)."""

import math
from dataclasses import replace

import numpy as np
import pytest

from core.dynamics import crba
from core.errors import InvalidInputError
from core.kinematics import forward_kinematics
from core.compiled.layout import POSITION_SLACK
from core.contacts import Capsule, Plane
from core.limits import PIN_TOLERANCE, PointPin
from core.rig import (PIN_FREQUENCY, RigBody, RigJoint, RigPin, RigRun, _point_mass, build_rig,
                      simulate_rig)

FPS = 24.0
G = 9.81
MASS = 2.0
#: how far a hard pin's point may be from its target: the pin's deadband and the slack the
#: projection stops within (core.limits, LimitSolver.project)
HELD = PIN_TOLERANCE + POSITION_SLACK


def _block(**kw):
    """A 2 kg block on a vertical slider at the world origin, at rest."""
    return RigBody("block", -1, np.eye(4), RigJoint("slider", axis=(0.0, 0.0, 1.0)),
                   mass=MASS, inertia=np.eye(3) * 0.01, **kw)


@pytest.mark.parametrize("strength", [1.0, 4.0])
def test_a_soft_pins_equilibrium_is_the_springs_closed_form(strength):
    """``k = s m w^2`` holds the block ``m g / k = g / (s w^2)`` below its pin; critically
    damped (``c = 2 s m w``), it settles there within the run to rounding."""
    pin = RigPin("block", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), strength)
    res = simulate_rig(build_rig([_block()], fps=FPS, duration=3.0, pins=[pin]))
    w = 2.0 * math.pi * PIN_FREQUENCY
    assert res.q[-1, 0] == pytest.approx(-G / (strength * w * w), rel=1e-6)


def test_a_pin_keyed_on_and_off_acts_on_those_frames_only():
    """On from frame 10 to frame 20: before and after, the block falls freely (each frame's
    second difference of its height is -g, semi-implicit Euler's exactly); in between the
    spring pulls it up from 0.86 m below and, critically damped, settles it within 1 mm of
    its equilibrium by frame 20 (``0.86 m (1 + w t) exp(-w t)`` = 0.4 mm at t = 10 frames)."""
    pin = RigPin("block", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1.0, times=(0.0, 10 / FPS, 20 / FPS),
                 active=(False, True, False))
    res = simulate_rig(build_rig([_block()], fps=FPS, duration=30 / FPS, pins=[pin]))
    accel = np.diff(res.q[:, 0], 2) * FPS ** 2
    assert accel[:9] == pytest.approx(-G, rel=1e-9)         # frames 0..10: free
    assert accel[20:] == pytest.approx(-G, rel=1e-9)        # frames 20..30: free
    assert res.q[10, 0] < -0.8 and accel[9] > 0.0            # pulled up from frame 10
    w = 2.0 * math.pi * PIN_FREQUENCY
    assert res.q[20, 0] == pytest.approx(-G / (w * w), abs=1e-3)


def test_bad_pins_are_refused_naming_the_bone():
    hips = RigBody("hips", -1, np.eye(4), RigJoint("kinematic"))
    arm = RigBody("arm", 0, np.eye(4), RigJoint("hinge"), mass=1.0)
    with pytest.raises(InvalidInputError, match="'hips'.*kinematic"):
        build_rig([hips, arm], pins=[RigPin("hips", (0, 0, 0), (0, 0, 0))])
    with pytest.raises(InvalidInputError, match="'leg'"):
        build_rig([hips, arm], pins=[RigPin("leg", (0, 0, 0), (0, 0, 0))])
    with pytest.raises(InvalidInputError, match="'arm'.*strength"):
        build_rig([hips, arm], pins=[RigPin("arm", (0, 0, 0), (0, 0, 0), float("nan"))])
    with pytest.raises(InvalidInputError, match="'arm'.*strength"):
        build_rig([hips, arm], pins=[RigPin("arm", (0, 0, 0), (0, 0, 0), 0.0)])
    with pytest.raises(InvalidInputError, match="'arm'.*finite"):
        build_rig([hips, arm], pins=[RigPin("arm", (0, 0, 0), (0, float("inf"), 0))])
    for target in ("bar", "arm"):                  # not a body of the rig, or itself
        with pytest.raises(InvalidInputError, match="'arm'.*target"):
            build_rig([hips, arm], pins=[RigPin("arm", (0, 0, 0), (0, 0, 0), hard=True,
                                                target_body=target)])


def test_a_live_run_gives_the_bakes_frames_across_pin_switches():
    """RigRun computes the frames simulate_rig gives (the same steps, segment by segment),
    whether asked frame by frame or all at once."""
    pin = RigPin("block", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1.0, times=(0.0, 10 / FPS, 20 / FPS),
                 active=(False, True, False))
    rig = build_rig([_block()], fps=FPS, duration=30 / FPS, pins=[pin])
    baked = simulate_rig(rig)
    stepwise, at_once = RigRun(rig), RigRun(rig)
    for f in range(31):
        stepwise.advance_to(f)
    assert at_once.advance_to(40) == 31 and stepwise.ready == 31
    for run in (stepwise, at_once):
        assert np.array_equal(run.q, baked.q)
        assert np.array_equal(run.poses, baked.world)


def _pendulum():
    """A 1 kg, 0.5 m rod hanging on a hinge about X at the origin (its Y axis down)."""
    down = np.array([[1.0, 0, 0, 0], [0, 0, 1.0, 0], [0, -1.0, 0, 0], [0, 0, 0, 1.0]])
    return RigBody("rod", -1, down, RigJoint("hinge", damping=0.5), mass=1.0,
                   com=(0.0, 0.25, 0.0), inertia=np.diag([1 / 48, 1e-3, 1 / 48]))


@pytest.mark.parametrize("stiffness", [None, 400.0])
def test_a_drag_pulls_the_grabbed_point_toward_the_target_and_release_lets_go(stiffness):
    """Dragging the rod's tip toward a point on its circle, 90 degrees up, brings the tip
    there within the spring's sag under gravity (the rod's weight torque ``m g L / 2`` held
    by ``k d L``: ``d = m g / (2 k)``, k the stiffness given or the stiffest the step keeps,
    ``m_eff (0.5 / h)^2`` with ``m_eff = I / L^2 = m / 3`` at the rod's tip); released, it
    swings back down."""
    rig = build_rig([_pendulum()], fps=FPS, duration=4.0)
    run = RigRun(rig)
    run.advance_to(5)
    target = np.array([0.0, 0.5, 0.0])
    run.set_drag("rod", (0.0, 0.5, 0.0), target, stiffness)
    run.advance_to(60)
    tip = run.poses[60, 0] @ np.array([0.0, 0.5, 0.0, 1.0])
    k = (1.0 / 3.0) * (0.5 / rig.mechanism.dt) ** 2 if stiffness is None else stiffness
    assert np.linalg.norm(tip[:3] - target) == pytest.approx(9.81 / (2 * k), rel=0.02)
    run.release()
    run.advance_to(96)
    tip = run.poses[96, 0] @ np.array([0.0, 0.5, 0.0, 1.0])
    assert tip[2] < -0.2                                     # swung back down
    with pytest.raises(InvalidInputError, match="'nobody'"):
        run.set_drag("nobody", (0, 0, 0), target)


def test_the_grabbed_points_mass_matches_central_differences():
    """The drag's effective mass ``1 / lambda_max(J M^-1 J^T)`` from the point's analytic
    Jacobian equals the one from the Jacobian by central differences of the point's world
    position (step 1e-6: truncation 1e-12, rounding 1e-10 of the entries), on a hinge and a
    ball joint in a bent pose; on the rod alone it is ``I_pivot / L^2 = m / 3``."""
    rod = build_rig([_pendulum()]).mechanism.model
    assert _point_mass(rod, np.array([0.3]), 0, np.array([0.0, 0.5, 0.0])) == \
        pytest.approx(1.0 / 3.0, rel=1e-12)
    child = RigBody("hand", 0, np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0.5], [0, 0, 1.0, 0],
                                         [0, 0, 0, 1.0]]),
                    RigJoint("ball"), mass=0.4, com=(0.0, 0.1, 0.0),
                    inertia=np.diag([2e-3, 5e-4, 2e-3]))
    model = build_rig([_pendulum(), child]).mechanism.model
    q = np.array([0.4, 0.2, -0.3, 0.5])
    point = np.array([0.02, 0.2, -0.01])
    data = model.create_data()

    def world(qq):
        forward_kinematics(model, data, qq)
        return data.oMi[1][:3, :3] @ point + data.oMi[1][:3, 3]
    step = 1e-6
    J = np.stack([(world(q + step * e) - world(q - step * e)) / (2 * step)
                  for e in np.eye(4)], axis=1)
    M = np.array(crba(model, model.create_data(), q))
    expected = 1.0 / np.linalg.eigvalsh(J @ np.linalg.solve(M, J.T)).max()
    assert _point_mass(model, q, 1, point) == pytest.approx(expected, rel=1e-8)


def _rod(L=0.5, mass=2.0):
    """A uniform ``L`` m rod on a free joint, its head at (0, 0, 1) and its Y axis along
    the world's Y (level)."""
    T = np.eye(4)
    T[:3, 3] = (0.0, 0.0, 1.0)
    return RigBody("rod", -1, T, RigJoint("free"), mass=mass, com=(0.0, L / 2, 0.0),
                   inertia=np.diag([mass * L * L / 12, 1e-3, mass * L * L / 12]))


def _hard_pendulum(substeps, duration):
    """The level rod hard-pinned at its head: a spherical pendulum released from level."""
    pin = RigPin("rod", (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), hard=True)
    return simulate_rig(build_rig([_rod()], fps=FPS, substeps=substeps, duration=duration,
                                  pins=[pin]))


@pytest.mark.slow
def test_a_hard_pinned_pendulum_stays_on_its_pin_and_gains_no_energy():
    """Released level, the rod swings on its pin for 4 s with its head within the pin's
    deadband (PIN_TOLERANCE in every world direction) (plus the projection's slack) at every frame. The constraint step is
    first order (the impulse at the substep's end pose takes the centripetal part of the
    velocity with it): halving the substep divides the energy lost by about 2 (between 1.4
    and 2.6: a first-order error, where second order would give 4 and none 1), and the
    most it rises above its start at any frame (a swing's oscillation) shrinks too and
    stays under a tenth of what the run loses."""
    runs = [_hard_pendulum(s, 4.0) for s in (8, 16)]
    for res in runs:
        head = res.world[:, 0, :3, 3]
        assert np.abs(head - (0.0, 0.0, 1.0)).max() <= HELD
        tip = res.world[:, 0, :3, :3] @ np.array([0.0, 0.5, 0.0])
        assert tip[:, 2].min() < -0.45                      # it swings down
    lost = [res.energy[0] - res.energy[-1] for res in runs]
    gained = [(res.energy - res.energy[0]).max() for res in runs]
    assert lost[0] > 0.0 and 1.4 < lost[0] / lost[1] < 2.6
    assert gained[0] < 0.1 * lost[0] and gained[1] < 0.6 * gained[0]


def test_a_pins_rows_match_central_differences():
    """A PointPin's gradients (the pinned point's world Jacobian less its target's, both
    ways) equal central differences of its values (step 1e-6: truncation 1e-12, rounding
    1e-10 of the entries), a hand on a ball joint pinned to a point of a free body."""
    hand = RigBody("hand", -1, np.eye(4), RigJoint("ball"), mass=0.4, com=(0.0, 0.1, 0.0))
    bar = RigBody("bar", -1, np.eye(4), RigJoint("free"), mass=1.0)
    model = build_rig([hand, bar]).mechanism.model
    pin = PointPin("hand", (0.02, 0.2, -0.01), "bar", (0.3, 0.0, 0.1)).bind(model)
    q = np.array([0.4, 0.2, -0.3, 0.1, -0.5, 0.2, 0.3, 0.1, -0.2])
    d, N = pin.constraints(q)
    step = 1e-6
    fd = np.stack([(pin.constraints(q + step * e)[0] - pin.constraints(q - step * e)[0]) /
                   (2 * step) for e in np.eye(len(q))], axis=1)
    assert np.allclose(N, fd, rtol=0.0, atol=1e-8)
    assert np.array_equal(d[:3], -d[3:]) and np.array_equal(N[:3], -N[3:])


def _moving(times, x, z):
    """Poses ``(K, 4, 4)`` at ``times`` translated to ``(x(t), 0, z(t))``."""
    poses = np.repeat(np.eye(4)[None], len(times), axis=0)
    poses[:, 0, 3], poses[:, 2, 3] = x(times), z(times)
    return poses


def test_a_hard_pin_to_a_moving_body_holds_from_the_frame_it_is_keyed_on_until_off():
    """Without gravity a rod floats at rest; its tip is hard-pinned to a point of a
    kinematic bar swaying along X from frame 20 to frame 50: until frame 20 it stays where
    it is, from the first frame after the switch on (where the projection has put it on the
    bar, 0.17 m away) to the switch off its tip is within the pin's deadband of the bar's
    point, and after frame 50 it coasts, its centre of mass moving at constant velocity (to
the step's rounding of a spinning body's gyroscopic terms)."""
    times = np.arange(73) / FPS
    bar = RigBody("bar", -1, np.eye(4), RigJoint("kinematic"), motion_times=times,
                  motion=_moving(times, lambda t: 0.2 * np.sin(2 * np.pi * t),
                                 lambda t: 1.0 + 0.0 * t))
    pin = RigPin("rod", (0.0, 0.5, 0.0), (0.0, 0.5, 0.0), target_body="bar", hard=True,
                 times=(0.0, 20 / FPS, 50 / FPS), active=(False, True, False))
    res = simulate_rig(build_rig([bar, _rod()], gravity=(0.0, 0.0, 0.0), fps=FPS,
                                 duration=72 / FPS, pins=[pin]))
    tip = res.world[:, 1, :3, :3] @ np.array([0.0, 0.5, 0.0]) + res.world[:, 1, :3, 3]
    target = res.world[:, 0, :3, :3] @ np.array([0.0, 0.5, 0.0]) + res.world[:, 0, :3, 3]
    gap = np.abs(tip - target).max(axis=1)
    assert gap[21:51].max() <= HELD
    assert gap[20] > 0.15
    assert np.abs(res.world[:21, 1] - res.world[0, 1]).max() == 0.0   # at rest until then
    com = res.world[:, 1, :3, :3] @ np.array([0.0, 0.25, 0.0]) + res.world[:, 1, :3, 3]
    assert np.abs(com[51] - com[50]).max() > 1e-3             # let go moving
    # held, the bar's sway would bend its path by 0.2 (2 pi)^2 / FPS^2 = 0.014 m a frame
    assert np.abs(np.diff(com[50:], 2, axis=0)).max() < 1e-6


def test_a_soft_pin_follows_a_moving_body_at_the_springs_sag():
    """The block on its slider, soft-pinned to a kinematic hook rising at 0.2 m/s, follows
    it ``g / (s w^2)`` below once the critically damped spring has settled (the damper pulls
    on the relative velocity, so a ramp adds no lag): at the end of 3 s within 1e-6 m of
    the closed form."""
    times = np.arange(73) / FPS * 3
    hook = RigBody("hook", -1, np.eye(4), RigJoint("kinematic"), motion_times=times,
                   motion=_moving(times, lambda t: 0.0 * t, lambda t: 1.0 + 0.2 * t))
    block = replace(_block(), parent=-1)
    pin = RigPin("block", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 2.0, target_body="hook")
    res = simulate_rig(build_rig([hook, block], fps=FPS, duration=3.0, pins=[pin]))
    w = 2.0 * math.pi * PIN_FREQUENCY
    assert res.world[-1, 1, 2, 3] == pytest.approx(1.6 - G / (2.0 * w * w), abs=1e-6)


def test_a_kinematic_parents_mass_does_not_change_how_a_tail_meets_its_limit():
    """A tail on a ball joint with a 0.4 rad reach cone under a kinematic parent swaying
    along X falls into its cone: the limit impulses act on the simulated coordinates only
    (the tail's block of the mass matrix, which the parent's mass is no part of), so a
    parent of 1 g and one of 1 t give the same motion to the last bit. Through the whole
    mass matrix the light parent would take part of each impulse (5e-11 rad apart here,
    the tail's own mass dominating what the parent's translation moves)."""
    times = np.arange(49) / FPS

    def run(mass):
        arm = RigBody("arm", -1, np.eye(4), RigJoint("kinematic"), mass=mass,
                      inertia=np.eye(3) * 0.01 * mass, motion_times=times,
                      motion=_moving(times, lambda t: 0.2 * np.sin(2 * np.pi * t),
                                     lambda t: 1.0 + 0.0 * t))
        tail = RigBody("tail", 0, np.eye(4), RigJoint("ball", cone="circular", half_angle=0.4),
                       mass=1.0, com=(0.0, 0.25, 0.0), inertia=np.diag([0.02, 1e-3, 0.02]))
        return simulate_rig(build_rig([arm, tail], fps=FPS, duration=2.0))
    light, heavy = run(1e-3), run(1e3)
    swing = np.linalg.norm(light.q[:, 6:9], axis=1)
    assert swing.max() > 0.39                                # it reaches its cone
    assert np.array_equal(light.q[:, 6:], heavy.q[:, 6:])


def test_a_hard_pin_holds_while_its_body_rests_on_the_ground():
    """The rod hard-pinned at its head 0.3 m above the ground, its 0.5 m capsule swinging
    down onto it: the contact solver solves the pin's rows with the contact's (target rate
    0 both ways), so the head stays on its pin within its deadband while the tip comes to
    rest on the ground (the capsule's radius up, within the contact slop)."""
    T = np.eye(4)
    T[:3, 3] = (0.0, 0.0, 0.3)
    rod = replace(_rod(), T_rest=T, shapes=(Capsule(0.02, (0.0, 0.0, 0.0), (0.0, 0.5, 0.0)),))
    pin = RigPin("rod", (0.0, 0.0, 0.0), (0.0, 0.0, 0.3), hard=True)
    res = simulate_rig(build_rig([rod], fps=FPS, duration=2.0, pins=[pin],
                                 colliders=(Plane(0.0),)))
    assert np.abs(res.world[:, 0, :3, 3] - (0.0, 0.0, 0.3)).max() <= HELD
    tip = res.world[:, 0, :3, :3] @ np.array([0.0, 0.5, 0.0]) + res.world[:, 0, :3, 3]
    assert res.contacts.max() >= 1 and res.worst_penetration < 5e-4
    assert tip[-1, 2] == pytest.approx(0.02, abs=5e-4)
