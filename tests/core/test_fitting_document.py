"""From samples to a stored joint in one call (core.fitting.document), and the repeat count
the capture uses (core.fitting.samples.repeated_coordinates)."""

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.fitting import pose_errors
from core.fitting.document import JointFitOptions, fit_joint_document
from core.fitting.samples import repeated_coordinates
from core.io import dumps, loads
from core.reference.opensim import KneeGait2392, ScapulothoracicSeth2019


@pytest.fixture(scope="module")
def knee():
    return KneeGait2392().samples()


def test_curve_document_of_the_knee(knee):
    poses, q = knee["T_femur_tibia"], knee["q"]
    options = JointFitOptions(kind="curve", n_frames=8, length_scale=0.05)
    doc = fit_joint_document(poses, q[:, None], options, coordinate_names=("sj_q0",), name="Leg:shin")
    assert type(doc.joint).__name__ == "SplineCurveJoint" and options.n_coordinates == 1
    assert doc.coordinate_names == ("sj_q0",) and doc.name == "Leg:shin"
    np.testing.assert_array_equal(doc.ranges, [[q.min(), q.max()]])
    assert doc.metric.length_scale == 0.05 and doc.report.length_scale == 0.05
    assert doc.report.status == "converged" and doc.report.rms_position_mm < 0.05
    # the report describes the stored joint: its largest errors are those of the document
    pos, rot = pose_errors(doc.joint.transforms(q[:, None]), poses)
    assert pos.max() == pytest.approx(doc.report.max_position_mm, rel=1e-12)
    assert rot.max() == pytest.approx(doc.report.max_rotation_deg, rel=1e-12)
    assert loads(dumps(doc)).report == doc.report


def test_weights_reach_the_fit(knee):
    poses, q = knee["T_femur_tibia"], knee["q"][:, None]
    w = np.ones(len(q))
    w[:20] = 50.0  # the first samples dominate: their errors shrink
    plain = fit_joint_document(poses, q, JointFitOptions(n_frames=5))
    weighted = fit_joint_document(poses, q, JointFitOptions(n_frames=5), weights=w)
    first = slice(0, 20)
    assert (weighted.report.position_residuals_mm[first].max()
            < plain.report.position_residuals_mm[first].max())


def test_surface_document():
    g = ScapulothoracicSeth2019().grid()
    poses, q = g["T_pjoint_cjoint"].reshape(-1, 4, 4)[::2], g["q"][..., :2].reshape(-1, 2)[::2]
    options = JointFitOptions(kind="surface", grid=(4, 4), method="coordinatewise")
    doc = fit_joint_document(poses, q, options, coordinate_names=("a", "b"))
    assert type(doc.joint).__name__ == "SplineJoint" and doc.joint.nq == options.n_coordinates == 2
    np.testing.assert_array_equal(doc.ranges, np.column_stack([q.min(axis=0), q.max(axis=0)]))
    assert doc.report.method == "surface-coordinatewise" and doc.coordinate_names == ("a", "b")


def test_coordinates_must_suit_the_kind(knee):
    poses, q = knee["T_femur_tibia"], knee["q"]
    with pytest.raises(InvalidInputError, match="one coordinate; the samples have 2"):
        fit_joint_document(poses, np.column_stack([q, q]), JointFitOptions(kind="curve"))
    with pytest.raises(InvalidInputError, match="needs 2 coordinates per sample; the samples have 1"):
        fit_joint_document(poses, q[:, None], JointFitOptions(kind="surface"))
    with pytest.raises(InvalidInputError, match="needs 2 coordinates .* have 0"):
        fit_joint_document(poses, None, JointFitOptions(kind="surface"))
    with pytest.raises(InvalidInputError, match="kind must be one of"):
        JointFitOptions(kind="CURVE")
    with pytest.raises(InvalidInputError, match="at least 4 distinct samples"):  # JointSamples'
        fit_joint_document(poses[:3], q[:3], JointFitOptions(n_frames=8))


def test_curve_without_coordinates_is_parameterized_along_the_poses(knee):
    doc = fit_joint_document(knee["T_femur_tibia"][::4], None, JointFitOptions(n_frames=6))
    assert doc.joint.nq == 1 and doc.ranges[0, 0] == 0.0 and doc.ranges[0, 1] > 0.0


def test_repeated_coordinates():
    stored = np.array([[0.1, 0.2], [0.3, 0.4]])
    assert repeated_coordinates(stored, [[0.5, 0.6]]) == 0
    assert repeated_coordinates(stored, [[0.3, 0.4 + 1e-12]]) == 1  # equal to 9 decimals
    assert repeated_coordinates(stored, [[0.3, 0.4 + 1e-6]]) == 0
    assert repeated_coordinates(np.zeros((0, 1)), [[1.0], [1.0], [1.0]]) == 2
    assert repeated_coordinates(stored[:, :1], [[0.1]]) == 1  # first coordinates only
