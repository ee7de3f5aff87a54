"""Springs and dampers given as a frequency and a damping ratio: the same setting gives the
same motion on a 1 cm and a 1 m bone, as the closed form of a damped oscillator says."""

import math

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.lie import so3
from core.massprops import capsule_mass_properties
from core.rig import (FREE_DAMPING_HZ, RigBody, RigJoint, build_rig, simulate_rig,
                      spring_from_frequency)

FPS, SUBSTEPS, DURATION = 24.0, 16, 2.0
FREQUENCY, RATIO, RATE = 2.0, 0.1, 1.5


def _bone(length, joint):
    """A solid capsule bone of ``length`` (m), radius a tenth of it, water's density, on a
    hinge about X at the world origin (a 1 cm bone is 10^-6 the mass of a 1 m bone and
    10^-10 its inertia), starting at the joint's zero at RATE rad/s."""
    capsule = capsule_mass_properties(0.1 * length, length, 1000.0)
    turn = np.eye(4)
    turn[:3, :3] = so3.exp(np.array([RATE / FPS, 0.0, 0.0]))
    return RigBody("bone", -1, np.eye(4), joint, mass=capsule.mass, com=capsule.com,
                   inertia=capsule.inertia, pose=np.eye(4), pose_before=turn.T,
                   pose_after=turn)


def _closed_form(t):
    """The hinge angle of ``I x'' + c x' + k x = 0`` from ``x = 0`` at the rate the bodies
    start with (their central difference of the turn, ``sin`` of it per frame)."""
    w = 2.0 * math.pi * FREQUENCY
    wd = w * math.sqrt(1.0 - RATIO ** 2)
    v0 = math.atan2(math.sin(RATE / FPS), math.cos(RATE / FPS)) * FPS
    return v0 / wd * np.exp(-RATIO * w * t) * np.sin(wd * t)


@pytest.mark.parametrize("length", [0.01, 1.0])
def test_frequency_and_ratio_give_the_closed_form_on_any_bone_size(length):
    """A 2 Hz, 0.1 ratio spring on a hinge (no gravity) swings and decays as the closed form
    on a 1 cm and a 1 m bone alike. RK4's error per step on the oscillator's modes is at
    most ``(w h)^5 e^(w h) / 120`` (the remainder of exp's series after four terms), so over
    N steps the state (angle, rate / w) is off by at most N times that, times the modes'
    condition ``1 / sqrt(1 - ratio^2)``, of the start's size."""
    rig = build_rig([_bone(length, RigJoint("hinge", frequency=FREQUENCY,
                                            damping_ratio=RATIO))],
                    gravity=(0.0, 0.0, 0.0), fps=FPS, substeps=SUBSTEPS, duration=DURATION,
                    integrator="rk4")
    result = simulate_rig(rig)
    x = result.q[:, 0]
    expected = _closed_form(result.times)
    w = 2.0 * math.pi * FREQUENCY
    h = 1.0 / (FPS * SUBSTEPS)
    steps = DURATION / h
    start = RATE / w
    bound = steps * (w * h) ** 5 * math.exp(w * h) / 120 / math.sqrt(1 - RATIO ** 2) * start
    assert np.abs(x - expected).max() <= bound + 1e-12
    # the swing is real: a quarter period out it has moved by about the start over w
    assert np.abs(x).max() > 0.5 * start


def test_spring_from_frequency_is_the_oscillator_of_that_frequency():
    """k = I w^2 and c = 2 ratio I w, so that k / I = w^2 and c / (2 sqrt(k I)) = ratio; a
    joint without a spring damps at the ratio of a FREE_DAMPING_HZ swing."""
    inertia = np.array([1e-9, 2.0])
    k, c = spring_from_frequency(inertia, 3.0, 0.25)
    w = 2 * math.pi * 3.0
    np.testing.assert_allclose(k / inertia, w * w, rtol=1e-15)
    np.testing.assert_allclose(c / (2 * np.sqrt(k * inertia)), 0.25, rtol=1e-15)
    k0, c0 = spring_from_frequency(inertia, 0.0, 0.25)
    assert not np.any(k0)
    np.testing.assert_allclose(c0 / inertia, 2 * 0.25 * 2 * math.pi * FREE_DAMPING_HZ,
                               rtol=1e-15)


def test_relative_inertia_is_the_bone_and_what_hangs_below():
    """The inertia a relative spring scales with is the mass matrix's diagonal at rest: a
    chain's first joint carries the whole chain, so its spring is stiffer than the last's."""
    rest = np.eye(4)
    rest[1, 3] = 0.1
    bodies = [RigBody(f"b{i}", i - 1, np.eye(4) if i == 0 else rest,
                      RigJoint("hinge", frequency=1.0), mass=0.1, com=(0.0, 0.05, 0.0),
                      inertia=np.diag([1e-4, 1e-5, 1e-4])) for i in range(3)]
    model = build_rig(bodies, gravity=(0.0, 0.0, 0.0), duration=0.1).mechanism.model
    k = model.spring_k
    assert k[0] > k[1] > k[2] > 0
    # the last bone alone about its hinge: its inertia about the com plus m d^2
    np.testing.assert_allclose(k[2], (1e-4 + 0.1 * 0.05 ** 2) * (2 * math.pi) ** 2,
                               rtol=1e-12)


def test_both_spring_forms_at_once_are_refused():
    with pytest.raises(InvalidInputError, match="not both"):
        build_rig([RigBody("b", -1, np.eye(4), RigJoint("hinge", frequency=1.0, damping=0.1))])


@pytest.mark.parametrize("length", [0.01, 1.0])
def test_implicit_default_decays_and_swings_as_the_closed_form_within_its_accuracy(length):
    """The rig's default integrator (implicit) on the same 2 Hz, 0.1 ratio hinge: a damped
    sinusoid fitted to the frames has the closed form's decay rate and frequency within the
    method's stated accuracy ``w (w h / 2) / (1 - w h)`` (core.integrators), the same on a
    1 cm and a 1 m bone. The scheme's discrete solution is exactly a damped sinusoid
    (``lambda^n``), so the fit itself adds only rounding."""
    from scipy.optimize import curve_fit

    rig = build_rig([_bone(length, RigJoint("hinge", frequency=FREQUENCY,
                                            damping_ratio=RATIO))],
                    gravity=(0.0, 0.0, 0.0), fps=FPS, substeps=SUBSTEPS, duration=DURATION)
    assert rig.mechanism.integrator == "implicit"
    result = simulate_rig(rig)
    w = 2.0 * math.pi * FREQUENCY
    h = 1.0 / (FPS * SUBSTEPS)

    def sinusoid(t, a, decay, wd, phase):
        return a * np.exp(-decay * t) * np.sin(wd * t + phase)

    start = (RATE / w, RATIO * w, w * math.sqrt(1 - RATIO ** 2), 0.0)
    (a, decay, wd, phase), _ = curve_fit(sinusoid, result.times, result.q[:, 0], p0=start,
                                         xtol=1e-14, ftol=1e-14, gtol=1e-14)
    residual = np.abs(sinusoid(result.times, a, decay, wd, phase) - result.q[:, 0]).max()
    assert residual <= 1e-9 * abs(a)
    accuracy = w * (w * h / 2) / (1 - w * h)
    assert abs(decay - RATIO * w) <= accuracy, (decay, RATIO * w, accuracy)
    assert abs(wd - w * math.sqrt(1 - RATIO ** 2)) <= accuracy
    # the method does add damping: the fit is not simply the closed form
    assert decay > RATIO * w
