"""core.fitting.osim: spline joints fitted to the exact joints of the shipped OpenSim models."""

import math
import os

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.fitting.metric import pose_errors
from core.fitting.osim import MAX_SPAN, spline_joint_from_osim, with_joint
from core.io import JointDocument
from core.io.osim import read_osim
from core.joints.spline_curve import SplineCurveJoint
from core.joints.spline_surface import SplineJoint
from core.lie import se3

OSIM = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "osim")
SCAPULA = ("scapula_abduction", "scapula_elevation")
#: the knee with 8 control frames: the fit's own residual (measured 0.082 mm max, 0.038 mm
#: RMS, 0.0017 deg) with a margin of ~20 %
KNEE8_MM, KNEE8_RMS_MM, KNEE_DEG = 0.1, 0.045, 0.002
#: with 10 control frames: "a few hundredths of a mm" (measured 0.029 mm)
KNEE10_MM = 0.035
#: the scapula surface, grid (8, 6) over the quarter-turn box: measured 0.13 mm, 0.10 deg
SCAPULA_MM, SCAPULA_DEG = 0.16, 0.12


def path(name):
    return os.path.join(OSIM, name)


@pytest.fixture(scope="module")
def gait():
    return read_osim(path("gait2392_thelen2003muscle.osim"))


@pytest.fixture(scope="module")
def shoulder():
    return read_osim(path("ThoracoscapularShoulderModel.osim"))


@pytest.fixture(scope="module")
def knee(gait):
    return spline_joint_from_osim(gait, "knee_r")


def test_knee_fit_is_within_hundredths_of_a_millimetre(gait, knee):
    assert isinstance(knee.joint, SplineCurveJoint) and isinstance(knee.document, JointDocument)
    assert knee.coordinates == ("knee_angle_r",) and knee.held == {}
    assert np.array_equal(knee.ranges, [gait.coordinates["knee_angle_r"].range])
    assert knee.max_position_mm <= KNEE8_MM and knee.rms_position_mm <= KNEE8_RMS_MM
    assert knee.max_angle_deg <= KNEE_DEG
    finer = spline_joint_from_osim(gait, "knee_r", n_frames=10)
    assert finer.max_position_mm <= KNEE10_MM
    # the report is the child body in the parent body, as OpenSim poses it
    q = np.linspace(*knee.ranges[0], 333)
    pos, _ = pose_errors(np.array([gait.pose_in_parent("knee_r", {"knee_angle_r": a})
                                   for a in q]),
                         knee.joint.transforms(q[:, None]))   # both offsets are identities
    assert pos.max() <= knee.max_position_mm * 1.05


def test_knee_diverges_about_a_millimetre_17_degrees_past_the_range(knee):
    rows = {(r[1], r[2]): r for r in knee.beyond}
    assert set(rows) == {(e, d) for e in ("lower", "upper") for d in (5.0, 10.0, 17.0)}
    for end in ("lower", "upper"):
        mm = [rows[end, d][3] for d in (5.0, 10.0, 17.0)]
        assert mm[0] < mm[1] < mm[2]                   # growing past the end
    # the end screw vs OpenSim's linear SimmSpline continuation: ~1 mm at 17 degrees
    assert 0.5 <= rows["lower", 17.0][3] <= 1.5
    assert 0.3 <= rows["upper", 17.0][3] <= 1.5
    assert max(r[4] for r in knee.beyond) < 0.05         # degrees: the rotation stays exact


def test_scapula_surface_is_fitted_at_the_default_upward_rotation_and_winging(shoulder):
    fit = spline_joint_from_osim(shoulder, "scapulothoracic", SCAPULA)
    assert isinstance(fit.joint, SplineJoint) and fit.joint.nq == 2
    assert fit.held == {"scapula_upward_rot": 0.20820491154386678,
                        "scapula_winging": 0.2735851952290064}
    assert fit.max_position_mm <= SCAPULA_MM and fit.max_angle_deg <= SCAPULA_DEG
    # the +-pi ranges are sampled over a quarter turn around the defaults
    assert np.allclose(fit.ranges[:, 1] - fit.ranges[:, 0], MAX_SPAN[2][0])
    defaults = [shoulder.coordinates[c].default for c in SCAPULA]
    assert np.allclose(fit.ranges.mean(axis=1), defaults)
    # a fit with upward rotation and winging at 0 misses the model's scapula at its defaults
    # by far more: the held values matter
    at_zero = spline_joint_from_osim(shoulder, "scapulothoracic", SCAPULA,
                                     held={"scapula_upward_rot": 0.0, "scapula_winging": 0.0})
    j = shoulder.joint("scapulothoracic")
    rng = np.random.default_rng(2)
    q2 = rng.uniform(fit.ranges[:, 0], fit.ranges[:, 1], (200, 2))
    full = np.column_stack([q2, np.tile([fit.held["scapula_upward_rot"],
                                         fit.held["scapula_winging"]], (200, 1))])
    exact = j.joint.transforms(full)
    Cinv = se3.inv(j.child_offset)
    right = pose_errors(j.parent_offset @ fit.joint.transforms(q2) @ Cinv,
                        j.parent_offset @ exact @ Cinv)
    wrong = pose_errors(j.parent_offset @ at_zero.joint.transforms(q2) @ Cinv,
                        j.parent_offset @ exact @ Cinv)
    assert right[0].max() <= SCAPULA_MM and right[1].max() <= SCAPULA_DEG
    assert wrong[0].max() > 50 * SCAPULA_MM and wrong[1].max() > 50 * SCAPULA_DEG


def test_with_joint_drops_the_held_coordinates(shoulder):
    fit = spline_joint_from_osim(shoulder, "scapulothoracic", SCAPULA)
    m = with_joint(shoulder, fit.osim_joint)
    assert "scapula_winging" not in m.coordinates and "scapula_upward_rot" not in m.coordinates
    assert m.nq == shoulder.nq - 2
    assert m.joint("scapulothoracic").joint is fit.joint
    q = {c: shoulder.coordinates[c].default for c in SCAPULA}
    assert np.abs(m.pose_in_parent("scapulothoracic", q) -
                  shoulder.pose_in_parent("scapulothoracic", q)).max() * 1e3 <= SCAPULA_MM


@pytest.mark.parametrize("coordinates, message", [
    (("knee_angle_x",), "not its coordinates"),
    (("knee_angle_r", "knee_angle_r"), "1 or 2 distinct"),
])
def test_bad_coordinates_are_named(gait, coordinates, message):
    with pytest.raises(InvalidInputError, match=message):
        spline_joint_from_osim(gait, "knee_r", coordinates)


def test_three_coordinates_are_refused(shoulder):
    with pytest.raises(InvalidInputError, match="1 or 2 distinct"):
        spline_joint_from_osim(shoulder, "scapulothoracic")
    with pytest.raises(InvalidInputError, match="held coordinates"):
        spline_joint_from_osim(shoulder, "scapulothoracic", SCAPULA,
                               held={"scapula_abduction": 0.0})
    with pytest.raises(InvalidInputError, match="no joint"):
        spline_joint_from_osim(shoulder, "knee_r")


def test_a_revolute_is_continued_exactly_past_its_range():
    from core.io.osim import parse_osim
    with open(path("double_pendulum.osim"), encoding="utf-8") as fh:
        m = parse_osim(fh.read(), source="dp.osim")
    fit = spline_joint_from_osim(m, "pin1", beyond=(math.degrees(0.1),))
    # a revolute fitted by a spline curve continues along the same screw past its end
    assert all(r[3] < 1e-3 and r[4] < 1e-3 for r in fit.beyond)


def test_model_with_fits_poses_the_bones_at_the_fitted_bodies(gait, knee):
    """A rig of the model with the fitted knee, laid out from the imported model's default
    pose, puts the tibia body exactly at the fitted model's pose (the bones' rest frames stay
    the imported model's)."""
    from core.fitting.osim import model_with_fits
    from core.osim_rig import OsimRig

    fitted = model_with_fits(gait, {"knee_r": knee.document})
    assert fitted.joint("knee_r").joint is knee.document.joint
    assert fitted.coordinate_names == gait.coordinate_names
    assert model_with_fits(gait, {}) is gait
    exact = OsimRig(gait)
    rig = OsimRig(fitted, reference=gait)
    assert np.array_equal(rig.default_poses, exact.default_poses)
    rests, _ = exact.rest_frames({})
    q = gait.default_q()
    q[gait.coordinate_names.index("knee_angle_r")] = -1.2
    b = rig.bodies.index("tibia_r")
    body = rig.bone_poses(rests, q)[b] @ se3.inv(rests[b]) @ exact.default_poses[b]
    np.testing.assert_allclose(body, fitted.body_poses(q)["tibia_r"], rtol=0, atol=1e-14)
    assert not np.allclose(body, gait.body_poses(q)["tibia_r"], rtol=0, atol=1e-6)


def test_fit_summary_says_in_plain_words_how_far_the_joints_drift(gait, knee):
    text = knee.summary(gait)
    assert text.startswith("Fitted knee_r (knee_angle_r -120..10 deg) with 8 control frames")
    assert f"at most {knee.max_position_mm:.3g} mm" in text
    assert "straight line" in text and "screw" in text
    far = max(row[3] for row in knee.beyond if row[1] == "lower")
    assert f"{far:.3g} mm" in text and "17 deg below knee_angle_r's range" in text
