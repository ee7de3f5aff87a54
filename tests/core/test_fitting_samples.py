"""JointSamples validation, the SE(3) metric and FitReport (core.fitting)."""

import warnings

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.fitting.metric import LENGTH_SCALE_RANGE, SE3Metric, pose_errors
from core.fitting.report import FitReport, make_report
from core.fitting.samples import JointSamples
from core.lie import se3


def _poses(n=6, seed=0):
    rng = np.random.default_rng(seed)
    return se3.exp(rng.normal(size=(n, 6)) * 0.3)


def test_valid_samples_shapes_and_defaults():
    G = _poses()
    s = JointSamples(G, q=np.arange(6.0))
    assert s.q.shape == (6, 1) and s.n_coordinates == 1 and len(s) == 6
    np.testing.assert_array_equal(s.weights, np.ones(6))
    s2 = JointSamples(G, q=np.arange(12.0).reshape(6, 2), weights=np.full(6, 2.0))
    assert s2.n_coordinates == 2
    assert JointSamples(G).q is None


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_pose_or_q_rejected(bad):
    G = _poses()
    G[2, 0, 3] = bad
    with pytest.raises(InvalidInputError, match="NaN or inf"):
        JointSamples(G, q=np.arange(6.0))
    q = np.arange(6.0)
    q[1] = bad
    with pytest.raises(InvalidInputError, match="NaN or inf"):
        JointSamples(_poses(), q=q)


def test_shapes_and_counts_rejected():
    with pytest.raises(InvalidInputError, match=r"\(N, 4, 4\)"):
        JointSamples(np.zeros((3, 3, 3)))
    with pytest.raises(InvalidInputError, match="at least"):
        JointSamples(_poses(1))
    with pytest.raises(InvalidInputError, match="shape"):
        JointSamples(_poses(), q=np.arange(5.0))
    with pytest.raises(InvalidInputError, match="weights"):
        JointSamples(_poses(), weights=np.array([1, 1, 1, 1, 1, 0.0]))
    s = JointSamples(_poses(3), q=[0.0, 1.0, 2.0])
    with pytest.raises(InvalidInputError, match="at least 4 distinct"):
        s.require(4, "an order-4 spline")


def test_duplicates_rejected():
    with pytest.raises(InvalidInputError, match="duplicate"):
        JointSamples(_poses(), q=[0.0, 1.0, 2.0, 2.0, 3.0, 4.0])
    G = _poses()
    G[3] = G[2]
    with pytest.raises(InvalidInputError, match="identical"):
        JointSamples(G)


def test_slightly_off_rotation_reorthonormalized_with_warning():
    G = _poses()
    G[1, :3, :3] += 1e-5 * np.random.default_rng(1).normal(size=(3, 3))
    with pytest.warns(UserWarning, match="re-orthonormalized 1"):
        s = JointSamples(G, q=np.arange(6.0))
    R = s.poses[1, :3, :3]
    # orthonormal columns from an SVD to a few ulps, and three products per entry of R^T R
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=16 * np.finfo(float).eps)
    assert np.linalg.det(R) > 0
    np.testing.assert_allclose(R, G[1, :3, :3], atol=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        JointSamples(_poses(), q=np.arange(6.0))  # exact rotations: no warning


@pytest.mark.parametrize("transform", ["scale", "shear", "reflect"])
def test_scaled_sheared_reflected_rejected(transform):
    G = _poses()
    M = {"scale": np.diag([1.1, 1.1, 1.1]),
         "shear": np.array([[1, 0.2, 0], [0, 1, 0], [0, 0, 1.0]]),
         "reflect": np.diag([1.0, 1.0, -1.0])}[transform]
    G[4, :3, :3] = G[4, :3, :3] @ M
    with pytest.raises(InvalidInputError, match="scaled, sheared or reflected"):
        JointSamples(G, q=np.arange(6.0))


def test_last_row_checked():
    G = _poses()
    G[0, 3, 0] = 0.5
    with pytest.raises(InvalidInputError, match="last row"):
        JointSamples(G)


def test_natural_parameters_are_cumulative_metric_distances():
    steps = np.array([[0.1, 0, 0, 0.01, 0, 0], [0, 0.2, 0, 0, 0.03, 0]])
    G = np.stack([np.eye(4), se3.exp(steps[0]), se3.exp(steps[0]) @ se3.exp(steps[1])])
    t = JointSamples(G).natural_parameters(0.5)
    expected = np.cumsum([0.0] + [np.sqrt(0.25 * s[:3] @ s[:3] + s[3:] @ s[3:]) for s in steps])
    np.testing.assert_allclose(t, expected, rtol=1e-12)


def test_metric_and_pose_errors():
    m = SE3Metric(0.2)
    np.testing.assert_allclose(m.norm([1.0, 0, 0, 0, 0, 0]), 0.2)
    np.testing.assert_allclose(m.norm([0, 0, 0, 0, 3.0, 4.0]), 5.0)
    A = se3.exp([0.0, 0.0, 0.3, 0.001, 0.002, 0.0])
    B = se3.exp([0.0, 0.0, 0.3 + np.radians(2.0), 0.001, 0.002, 0.0])
    B[:3, 3] = A[:3, 3] + [0.003, 0.004, 0.0]
    pos, rot = pose_errors(A[None], B[None])
    np.testing.assert_allclose(pos, [5.0], rtol=1e-12)
    np.testing.assert_allclose(rot, [2.0], rtol=1e-9)
    for bad in (0.0, -1.0, np.nan, "x"):
        with pytest.raises(InvalidInputError, match="length_scale"):
            SE3Metric(bad)


def test_fit_report_fields_and_round_trip():
    G = _poses(5)
    H = G @ se3.exp(np.tile([0, 0, 0.01, 0.001, 0, 0], (5, 1)))
    r = make_report(G, H, status="max_iterations", iterations=7, trace=[3.0, 2.0, 1.0],
                    method="curve", length_scale=0.1)
    assert r.status == "max_iterations" and not r.converged
    np.testing.assert_allclose(r.rotation_residuals_deg, np.degrees(0.01), rtol=1e-9)
    np.testing.assert_allclose(r.rms_position_mm, r.max_position_mm, rtol=1e-9)
    assert r.position_residuals_mm.shape == (5,)
    back = FitReport.from_dict(r.to_dict())
    assert back == r
    with pytest.raises(InvalidInputError, match="status"):
        make_report(G, H, status="stuck", iterations=1, trace=[], method="curve",
                    length_scale=0.1)
    d = r.to_dict()
    d["bogus"] = 1
    with pytest.raises(InvalidInputError, match="unknown field"):
        FitReport.from_dict(d)


def test_metric_length_scale_range():
    """The metric's weights are the length scale squared: a scale whose square overflows or
    underflows is refused with the usable range, not turned into inf or 0 weights."""
    lo, hi = LENGTH_SCALE_RANGE
    for bad in (1e199, 0.1 * lo, 10 * hi, 0.0, -1.0, float("nan")):
        with pytest.raises(InvalidInputError, match="length_scale must be a number of metres"):
            SE3Metric(bad)
    assert np.all(np.isfinite(SE3Metric(hi).weights)) and SE3Metric(lo).weights[0] > 0
