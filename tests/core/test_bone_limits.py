"""core.bone_limits: a bone held in its reach cone, coordinates clamped, hinges for Blender."""

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from core.bone_limits import HINGE_TOL, hinge_limit, hold_coordinates, hold_rotation
from core.bones import BONE_AXIS, BoneCone, cone_status
from core.errors import InvalidInputError
from core.joints.lower_pairs import Helical, Revolute, Universal

EPS = np.finfo(float).eps
#: the projection's own accuracy (tests/core/test_limit_projection.py) plus the neutral
#: rotation's product: a few dozen roundings of unit-sized numbers
TOL = 128 * EPS


def _pose(R):
    T = np.eye(4)
    T[:3, :3] = R
    return T


def _angle(a, b):
    return math.atan2(np.linalg.norm(np.cross(a, b)), a @ b)


@pytest.mark.parametrize("cone", [
    BoneCone(axis=tuple(Rotation.from_rotvec([0.4, 0.0, 0.2]).apply(BONE_AXIS)), half_angle=0.5,
             twist_limit=0.3),
    BoneCone(shape="elliptical", half_angle_x=0.7, half_angle_z=0.3, twist_limit=math.pi),
])
def test_hold_rotation_puts_the_bone_on_its_cone(cone):
    rng = np.random.default_rng(1)
    rest = np.eye(4)
    for R in Rotation.random(100, random_state=rng).as_matrix():
        held, proj = hold_rotation(cone, R)
        before = cone_status(cone, rest, _pose(R))
        after = cone_status(cone, rest, _pose(held))
        assert proj.inside == before.inside
        if before.inside:
            np.testing.assert_allclose(held, R, atol=TOL)  # N exp(log(N^T R))
            continue
        assert abs(after.twist) <= cone.twist_limit + TOL
        if before.swing_value < 0:
            if cone.shape == "circular":  # the bone's Y axis on the cone around its axis
                assert _angle(held @ BONE_AXIS, np.array(cone.axis)) == pytest.approx(
                    cone.half_angle, abs=TOL)
            else:
                assert abs(after.swing_value) <= TOL / math.sin(0.5 * 0.3) ** 2
        # the distance moved is that of the joint rotation
        assert _angle(held @ BONE_AXIS, R @ BONE_AXIS) == pytest.approx(proj.swing_moved, abs=TOL)


def test_hold_coordinates_clamps_to_the_ranges():
    np.testing.assert_array_equal(hold_coordinates([1.5, -3.0], [[0, 1], [-np.inf, 2]]), [1.0, -3.0])
    np.testing.assert_array_equal(hold_coordinates([0.5], [[0, 1]]), [0.5])
    for bad in ([[1, 0]], [[0, 1], [0, 1]], [[np.nan, 1]]):
        with pytest.raises(InvalidInputError, match="lower <= upper"):
            hold_coordinates([0.5], bad)


def test_hinge_limit_of_a_revolute_about_a_bone_axis():
    for i, axis in enumerate(np.eye(3)):
        lim = hinge_limit(Revolute(axis), np.eye(4), [[-0.4, 1.1]])
        assert (lim.axis, lim.lower, lim.upper) == (i, pytest.approx(-0.4, abs=TOL),
                                                    pytest.approx(1.1, abs=TOL))
    # about -Y: the angles turn round
    lim = hinge_limit(Revolute([0, -1, 0]), np.eye(4), [[-0.4, 1.1]])
    assert (lim.axis, lim.lower, lim.upper) == (1, pytest.approx(-1.1, abs=TOL),
                                                pytest.approx(0.4, abs=TOL))


class _Swinging(Revolute):
    """A hinge about X whose angle is sin(q): its extremes lie between the range's ends."""

    def transform(self, q):
        return super().transform(np.sin(np.atleast_1d(q)))

    def transforms(self, qs):
        return super().transforms(np.sin(np.asarray(qs, dtype=float)))


def test_hinge_limit_finds_extremes_inside_the_range():
    lim = hinge_limit(_Swinging([1, 0, 0]), np.eye(4), [[0.3, 2.9]])
    assert lim.axis == 0
    assert lim.upper == pytest.approx(1.0, abs=1e-12)   # sin at pi/2, between samples
    assert lim.lower == pytest.approx(math.sin(2.9), abs=TOL)


@pytest.mark.parametrize("joint,rest,ranges,match", [
    (Revolute([1, 0.01, 0]), np.eye(4), [[0, 1]], "off its X axis"),
    (Helical([0, 0, 1], pitch=0.01), np.eye(4), [[0, 1]], "head moves"),
    (Revolute([1, 0, 0]), np.eye(4), [[0, 3.5]], "half a turn"),
    (Universal(), np.eye(4), [[0, 1], [0, 1]], "2 coordinates"),
    (Revolute([1, 0, 0]), np.eye(4), [[0, np.inf]], "finite"),
])
def test_hinge_limit_refuses_what_a_box_cannot_hold(joint, rest, ranges, match):
    with pytest.raises(InvalidInputError, match=match):
        hinge_limit(joint, rest, ranges)


def test_hinge_tolerance_admits_single_precision_noise():
    """A hinge read back from single-precision poses is still a hinge."""
    wobble = Revolute([1.0, HINGE_TOL / 10, 0.0])
    assert hinge_limit(wobble, np.eye(4), [[0, 1]]).axis == 0


def test_limits_of_pi_or_more_limit_nothing():
    """Blender stores its maximum pi in single precision, 3.1415927 > pi: no limit."""
    pi32 = float(np.float32(np.pi))
    R = Rotation.from_rotvec([0.0, 3.0, 0.0]).as_matrix() @ Rotation.from_rotvec([2.5, 0, 0]).as_matrix()
    held, proj = hold_rotation(BoneCone(half_angle=pi32, twist_limit=pi32), R)
    assert proj.inside and np.allclose(held, R, atol=TOL)
    with pytest.raises(InvalidInputError, match="twist limit"):
        hold_rotation(BoneCone(twist_limit=-0.1), R)
