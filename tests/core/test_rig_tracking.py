"""Rigs that follow their animation (core.rig, *Following the animation* and *Switching from
animated to simulated*): a tracked chain follows a prescribed motion within 1 mm at strength
1 and the default substeps, a strength keyed down by half each frame blends to limp without
a jump, bones switching from animated to simulated start with the animation's velocities,
and bad strengths are refused naming the bone."""

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.joints.lower_pairs import Revolute
from core.lie import se3
from core.rig import RETURN_TIME, TRACK_FREQUENCY, RigBody, RigJoint, build_rig, simulate_rig

FPS = 24.0
L = 0.4
N = 3
TIMES = np.arange(0.0, 2.0 + 1e-9, 1.0 / FPS)
#: the animation: each hinge swings 0.5 rad at 1 Hz, a phase apart
ANGLES = np.stack([0.5 * np.sin(2.0 * np.pi * TIMES + k) for k in range(N)], axis=1)
TIP = np.array([0.0, L, 0.0, 1.0])


def _chain(strength, angles=ANGLES):
    """Three 0.4 m, 2 kg bones on hinges about x (gravity across them), each animated by
    ``angles`` and starting on its animation with the animation's velocities."""
    bodies = []
    for i in range(N):
        T_rest = np.eye(4) if i == 0 else se3.from_rp(np.eye(3), [0.0, L, 0.0])
        motion = np.array([T_rest @ Revolute((1.0, 0.0, 0.0)).transform(q[i:i + 1])
                           for q in angles])
        bodies.append(RigBody(f"bone{i}", i - 1, T_rest, RigJoint("hinge"), mass=2.0,
                              com=(0.0, L / 2, 0.0), inertia=np.diag([L * L / 6, 1e-3, L * L / 6]),
                              pose=motion[0], pose_before=motion[0], pose_after=motion[1],
                              motion_times=TIMES, motion=motion, strength=strength))
    return bodies


def _tips(local):
    """The chain's tip in the world ``(F, 3)`` from each frame's local poses ``(F, N, 4, 4)``."""
    W = local[:, 0]
    for i in range(1, N):
        W = W @ local[:, i]
    return (W @ TIP)[:, :3]


def _animated_tips():
    return _tips(np.array([[b.motion[k] for b in _chain(1.0)] for k in range(len(TIMES))]))


def test_a_tracked_chain_follows_its_animation_within_a_millimetre():
    rig = build_rig(_chain(1.0), fps=FPS, duration=TIMES[-1])
    assert rig.mechanism.substeps == 8 and rig.mechanism.integrator == "implicit"
    res = simulate_rig(rig)
    err = np.linalg.norm(_tips(res.local) - _animated_tips(), axis=1)
    assert err.max() < 1e-3, f"the tip strays {1000 * err.max():.3g} mm from the animation"
    # a weaker pull lags more: the bound is the strength's doing, not the animation's ease
    weak = simulate_rig(build_rig(_chain(0.05), fps=FPS, duration=TIMES[-1]))
    assert np.linalg.norm(_tips(weak.local) - _animated_tips(), axis=1).max() > 5e-3


def _released(strength):
    """The tip's acceleration and jerk per frame (finite differences of the recorded
    frames) of the chain run with ``strength`` per frame."""
    tips = _tips(simulate_rig(build_rig(_chain(strength), fps=FPS, duration=TIMES[-1])).local)
    return (np.linalg.norm(np.diff(tips, 2, axis=0), axis=1) * FPS ** 2,
            np.linalg.norm(np.diff(tips, 3, axis=0), axis=1) * FPS ** 3)


def test_strength_halving_per_frame_blends_to_limp_without_a_jump():
    """From frame 12 the strength halves each frame. The gains fall monotonically at every
    substep (linear between the keys: no step within a frame), and over the ten frames of
    the blend the tip's acceleration and jerk stay within what the fully tracked run reaches:
    no pop where the pull goes. Cutting the strength from 1 to 0 in one frame exceeds both,
    so the check sees a jump."""
    start, frames = 12, np.arange(len(TIMES))
    strength = np.where(frames < start, 1.0, 0.5 ** np.maximum(frames - start, 0))
    mech = build_rig(_chain(strength), fps=FPS, duration=TIMES[-1]).mechanism
    h = 1.0 / (FPS * mech.substeps)
    k = mech.tracking.motion(np.arange(1, len(TIMES) * mech.substeps) * h)[0]
    assert np.all(np.diff(k, axis=0) <= 1e-9 * k.max())
    assert k[-1].max() < 1e-6 * k[0].max()              # limp at the end
    window = slice(start - 2, start + 10)
    accel, jerk = _released(strength)
    tracked_accel, tracked_jerk = _released(1.0)
    assert accel[window].max() <= tracked_accel.max()
    assert jerk[window].max() <= tracked_jerk.max()
    cut_accel, cut_jerk = _released(np.where(frames < start, 1.0, 0.0))
    assert cut_accel[window].max() > tracked_accel.max()
    assert cut_jerk[window].max() > 1.5 * tracked_jerk.max()


def test_a_still_target_is_held_against_gravity_within_the_spring_lag():
    """A bone held out level (gravity across it) by strength 1 toward a still pose sags by
    ``m g (L/2) / k`` with ``k = I w^2`` (I the hinge's inertia), the spring's closed form."""
    T = np.eye(4)
    bone = RigBody("arm", -1, T, RigJoint("hinge"), mass=2.0, com=(0.0, L / 2, 0.0),
                   inertia=np.diag([L * L / 6, 1e-3, L * L / 6]), motion_times=[0.0],
                   motion=[T], strength=1.0)
    res = simulate_rig(build_rig([bone], fps=FPS, duration=3.0))
    inertia = L * L / 6 + 2.0 * (L / 2) ** 2
    k = inertia * (2.0 * np.pi * TRACK_FREQUENCY) ** 2
    assert res.q[-1, 0] == pytest.approx(-2.0 * 9.81 * L / 2 / k, rel=1e-3)


def test_bad_strengths_are_refused_naming_the_bone():
    bodies = _chain(1.0)
    nan = [bodies[0], RigBody(**{**bodies[1].__dict__, "strength": float("nan")}), bodies[2]]
    with pytest.raises(InvalidInputError, match="bone1.*Strength"):
        build_rig(nan)
    negative = bodies[:2] + [RigBody(**{**bodies[2].__dict__,
                                        "strength": -np.ones(len(TIMES))})]
    with pytest.raises(InvalidInputError, match="bone2.*Strength"):
        build_rig(negative)
    short = [RigBody(**{**bodies[0].__dict__, "strength": np.ones(3)})] + bodies[1:]
    with pytest.raises(InvalidInputError, match="bone0.*one Strength per frame"):
        build_rig(short)
    unanimated = [RigBody(**{**bodies[0].__dict__, "motion": None, "motion_times": None})]
    with pytest.raises(InvalidInputError, match="bone0.*no animated pose"):
        build_rig(unanimated)


def test_a_rig_asked_for_an_explicit_method_tracks_implicitly_and_says_so():
    rig = build_rig(_chain(1.0), integrator="rk4")
    assert rig.mechanism.integrator == "implicit"
    assert any("implicit integrator" in w for w in rig.warnings)


def test_a_switch_to_simulated_starts_with_the_animations_velocities():
    """Bones animated until frame 12 follow the animation exactly (double precision), then
    start simulated with the centred difference of their animated coordinates one frame
    either side, and fall from there; a second bone switching later keeps its animation
    until its own frame."""
    switch = {0: 12, 1: 12, 2: 18}
    bodies = [RigBody(**{**b.__dict__, "strength": 0.0, "simulate_from": switch[i] / FPS})
              for i, b in enumerate(_chain(1.0))]
    res = simulate_rig(build_rig(bodies, fps=FPS, duration=TIMES[-1]))
    assert np.abs(res.q[:13, :2] - ANGLES[:13, :2]).max() < 1e-12
    assert np.abs(res.q[:19, 2] - ANGLES[:19, 2]).max() < 1e-12
    centred = (ANGLES[13] - ANGLES[11]) * FPS / 2
    assert res.v[12, :2] == pytest.approx(centred[:2], abs=1e-12)
    assert res.v[18, 2] == pytest.approx((ANGLES[19, 2] - ANGLES[17, 2]) * FPS / 2, abs=1e-12)
    assert np.abs(res.q[-1] - ANGLES[-1]).max() > 0.2          # fell from its animation


def test_a_whole_rig_switching_equals_one_started_there_from_its_neighbouring_frames():
    """Every bone switching at frame 12 runs on as a rig built at frame 12 from the poses of
    frames 11, 12 and 13 (``pose_before``/``pose_after``: the same centred difference) does."""
    switched = simulate_rig(build_rig(
        [RigBody(**{**b.__dict__, "strength": 0.0, "simulate_from": 0.5})
         for b in _chain(1.0)], fps=FPS, duration=TIMES[-1]))
    started = simulate_rig(build_rig(
        [RigBody(**{**b.__dict__, "strength": 0.0, "motion": None, "motion_times": None,
                    "pose": b.motion[12], "pose_before": b.motion[11],
                    "pose_after": b.motion[13]}) for b in _chain(1.0)],
        fps=FPS, duration=TIMES[-1] - 0.5))
    assert np.abs(switched.q[12:] - started.q).max() < 1e-12   # same start, same steps
    assert np.abs(switched.q[-1] - ANGLES[-1]).max() > 0.2          # fell from its animation


def test_a_switch_needs_an_animation():
    bone = _chain(0.0)[0]
    with pytest.raises(InvalidInputError, match="bone0.*no animation"):
        build_rig([RigBody(**{**bone.__dict__, "motion": None, "motion_times": None,
                              "simulate_from": 0.5})])


def test_a_bone_keyed_back_to_kinematic_lands_on_its_animation_without_a_jump():
    """Bones simulated from frame 12 and keyed back to kinematic at frame 24: up to frame 24
    the run is the one that stays simulated (same state and rates at the switch: no jump in
    position or velocity), the step after it stays within the blend's second-order bound
    ``h^2 / 2 max|a|`` (``a`` the animation's acceleration plus the Hermite offset's, ``6
    |d0| / T^2 + 4 |d1| / T``), and from RETURN_TIME later the bones follow their animation
    exactly."""
    back = 24
    bodies = [RigBody(**{**b.__dict__, "strength": 0.0, "simulate_from": 0.5,
                         "kinematic_from": back / FPS}) for b in _chain(1.0)]
    returned = simulate_rig(build_rig(bodies, fps=FPS, duration=TIMES[-1]))
    stayed = simulate_rig(build_rig([RigBody(**{**b.__dict__, "kinematic_from": None})
                                     for b in bodies], fps=FPS, duration=TIMES[-1]))
    assert np.abs(returned.q[:back + 1] - stayed.q[:back + 1]).max() < 1e-12
    assert np.abs(returned.v[:back + 1] - stayed.v[:back + 1]).max() < 1e-12
    landed = back + int(round(RETURN_TIME * FPS))
    assert np.abs(returned.q[landed:] - ANGLES[landed:]).max() < 1e-9
    d0, d1 = stayed.q[back] - ANGLES[back], stayed.v[back] - 0.5 * 2 * np.pi * np.cos(
        2 * np.pi * TIMES[back] + np.arange(N))
    a = (0.5 * (2 * np.pi) ** 2 + 6 * np.abs(d0) / RETURN_TIME ** 2 +
         4 * np.abs(d1) / RETURN_TIME) * 1.05          # the spline's own error: a few %
    h = 1.0 / FPS
    step = np.abs(returned.q[back + 1] - returned.q[back] - h * returned.v[back])
    assert np.all(step <= 0.5 * h * h * a), (step, 0.5 * h * h * a)
    assert np.abs(stayed.q[back] - ANGLES[back]).max() > 0.1     # it had fallen away


def test_a_return_needs_an_animation_and_a_time_after_the_switch():
    bone = _chain(0.0)[0]
    with pytest.raises(InvalidInputError, match="bone0.*no animation to return to"):
        build_rig([RigBody(**{**bone.__dict__, "motion": None, "motion_times": None,
                              "kinematic_from": 0.5})])
    with pytest.raises(InvalidInputError, match="bone0.*before it is simulated"):
        build_rig([RigBody(**{**bone.__dict__, "simulate_from": 0.5, "kinematic_from": 0.25})],
                  fps=FPS, duration=1.0)
