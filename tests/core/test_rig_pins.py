"""Pins (core.rig, *Pins*): a soft pin's equilibrium is the spring's closed form, a pin keyed
on and off acts exactly on the frames it is on, and pins on kinematic or unknown bones, or
with a strength that is not a positive number, are refused naming the bone."""

import math

import numpy as np
import pytest

from core.dynamics import crba
from core.errors import InvalidInputError
from core.kinematics import forward_kinematics
from core.rig import (PIN_FREQUENCY, RigBody, RigJoint, RigPin, RigRun, _point_mass, build_rig,
                      simulate_rig)

FPS = 24.0
G = 9.81
MASS = 2.0


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
