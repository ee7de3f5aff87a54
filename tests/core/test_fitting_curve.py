"""Spline curve fitting (seed 000 sections 6.1-6.3) on the gait2392 knee."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import InvalidInputError
from core.fitting.curve import (adaptive_knots, curve_terms, fit_knots, fit_spline_curve,
                                hessian_jacobian, levenberg_marquardt)
from core.fitting.metric import pose_errors
from core.fitting.samples import JointSamples
from core.joints.spline_curve import SplineCurveJoint
from core.lie import se3
from core.reference.opensim import KneeGait2392


@pytest.fixture(scope="module")
def knee():
    ref = KneeGait2392()
    d = ref.samples()
    return ref, d["q"], d["T_femur_tibia"]


def _random_curve(seed, n=7, k=4):
    rng = np.random.default_rng(seed)
    steps = rng.normal(size=(n - 1, 6)) * np.array([0.4, 0.4, 0.4, 0.05, 0.05, 0.05])
    frames = [se3.exp(rng.normal(size=6) * 0.5)]
    for s in steps:
        frames.append(frames[-1] @ se3.exp(s))
    knots = np.cumsum(rng.uniform(0.3, 1.0, size=n + k)) - 1.0
    return np.array(frames), knots


def _blocks_vs_fd(frames, knots, k, qs, t, u, eps=1e-6):
    """The eq. 34 blocks of ``t = curve_terms(...)`` applied to control-frame perturbations
    ``u: (m + 1, 6)`` (``G_j -> G_j exp(u_j)``), and the same pose change by central
    differences: two ``(len(qs), 6)`` arrays."""
    Gp = curve_terms(frames @ se3.exp(eps * u), knots, k, qs, blocks=False)["G"]
    Gm = curve_terms(frames @ se3.exp(-eps * u), knots, k, qs, blocks=False)["G"]
    fd = (se3.log(se3.inv(t["G"]) @ Gp) - se3.log(se3.inv(t["G"]) @ Gm)) / (2 * eps)
    idx = t["i0"][:, None] + np.arange(k)
    return np.einsum("slij,slj->si", t["C"], u[idx]), fd


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_jacobian_blocks_match_finite_differences(seed):
    """M_s u (eq. 34, rebuilt exactly from eq. 24) against central differences."""
    k = 4
    frames, knots = _random_curve(seed)
    rng = np.random.default_rng(100 + seed)
    lo, hi = knots[k - 1], knots[frames.shape[0]]
    qs = np.concatenate([rng.uniform(lo, hi, 20), [lo, hi - 1e-9, knots[k + 1]]])
    t = curve_terms(frames, knots, k, qs)
    analytic, fd = _blocks_vs_fd(frames, knots, k, qs, t, rng.normal(size=(frames.shape[0], 6)))
    np.testing.assert_allclose(analytic, fd, atol=1e-7)


@pytest.mark.parametrize("seed", [0, 4])
def test_hessian_jacobian_matches_finite_differences_in_the_frames(seed):
    """N of eq. 42 against central differences of h over control-frame perturbations."""
    k = 4
    frames, knots = _random_curve(seed)
    rng = np.random.default_rng(200 + seed)
    qs = rng.uniform(knots[k - 1], knots[frames.shape[0]], 15)
    t = curve_terms(frames, knots, k, qs, hessian=True)
    Nh = hessian_jacobian(frames, t["span"])
    u = rng.normal(size=frames.shape[0] * 6)
    eps = 1e-6
    step = se3.exp(eps * u.reshape(-1, 6))
    hp = curve_terms(frames @ step, knots, k, qs, hessian=True)["h"]
    hm = curve_terms(frames @ se3.inv(step), knots, k, qs, hessian=True)["h"]
    np.testing.assert_allclose(Nh @ u, (hp - hm) / (2 * eps), atol=1e-5)


@pytest.mark.parametrize("seed", [0, 3])
def test_pose_jacobian_and_hessian_match_spline_curve_joint(seed):
    k = 4
    frames, knots = _random_curve(seed)
    joint = SplineCurveJoint(frames, knots=knots, order=k)
    qs = np.linspace(knots[k - 1], knots[frames.shape[0]], 17)
    t = curve_terms(frames, knots, k, qs, hessian=True)
    np.testing.assert_allclose(t["G"], joint.transforms(qs), atol=1e-12)
    for s, q in enumerate(qs):
        _, S, H = joint.evaluate(q)
        np.testing.assert_allclose(t["S"][s], S[:, 0], atol=1e-11)
        np.testing.assert_allclose(t["h"][s], H[0, :, 0], atol=1e-10)
    # h = dS/dq by central differences at interior points
    eps = 1e-6
    inner = qs[1:-1]
    fd = (curve_terms(frames, knots, k, inner + eps, hessian=True)["S"]
          - curve_terms(frames, knots, k, inner - eps, hessian=True)["S"]) / (2 * eps)
    np.testing.assert_allclose(curve_terms(frames, knots, k, inner, hessian=True)["h"], fd,
                               atol=1e-6)


@pytest.mark.parametrize("n_frames", [8, 9, 10])
def test_knee_fit_meets_accuracy(knee, n_frames):
    ref, q, G = knee
    res = fit_spline_curve(JointSamples(G, q), n_frames=n_frames)
    rep = res.report
    assert rep.status == "converged", rep.message
    assert rep.rms_position_mm <= 0.05 and rep.rms_rotation_deg <= 0.05
    assert np.all(np.diff(rep.objective_trace) <= 0.0)
    assert len(rep.objective_trace) >= 2 and rep.iterations >= 1
    assert isinstance(res.joint, SplineCurveJoint) and len(res.joint.control_frames) == n_frames
    # the returned joint reproduces the report and generalizes between the 1-degree samples
    pos, rot = pose_errors(res.joint.transforms(q), G)
    np.testing.assert_allclose(pos, rep.position_residuals_mm, atol=1e-9)
    dense = np.linspace(*ref.range, 997)
    pos, rot = pose_errors(res.joint.transforms(dense), ref.poses(dense))
    assert np.sqrt(np.mean(pos ** 2)) <= 0.06 and np.sqrt(np.mean(rot ** 2)) <= 0.05
    np.testing.assert_allclose([res.joint.lower[0], res.joint.upper[0]], ref.range, atol=1e-12)
    # the held-out (between samples) check sees the same: at 1-degree spacing the samples'
    # cubic interpolation is within 1e-4 mm of the motion, far below the fit's own error
    mid = 0.5 * (q[1:] + q[:-1])
    true_mid = pose_errors(res.joint.transforms(mid), ref.poses(mid))[0]
    assert abs(rep.heldout_max_position_mm - true_mid.max()) <= 1e-3
    assert rep.heldout_max_position_mm <= 0.09 and rep.heldout_max_rotation_deg <= 0.002


def test_knee_fit_without_coordinates_uses_natural_parameterization(knee):
    _, q, G = knee
    res = fit_spline_curve(JointSamples(G), n_frames=8, length_scale=0.1)
    assert res.report.rms_position_mm <= 0.05 and res.report.rms_rotation_deg <= 0.05
    assert res.joint.lower[0] == 0.0
    # natural parameter ~ arc length in the metric: |S| close to 1 across the range
    qs = np.linspace(res.joint.lower[0], res.joint.upper[0], 50)
    S = curve_terms(res.joint.control_frames, res.joint.knots, 4, qs, hessian=True)["S"]
    speed = np.sqrt(0.01 * np.sum(S[:, :3] ** 2, axis=1) + np.sum(S[:, 3:] ** 2, axis=1))
    np.testing.assert_allclose(speed, 1.0, atol=0.05)


def test_uniform_knots_and_explicit_knots(knee):
    _, q, G = knee
    s = JointSamples(G, q)
    kn = fit_knots(q[0], q[-1], 10, 4)
    a = fit_spline_curve(s, n_frames=10, knots="uniform")
    b = fit_spline_curve(s, n_frames=10, knots=kn)
    np.testing.assert_allclose(a.joint.knots, kn)
    np.testing.assert_allclose(a.report.rms_position_mm, b.report.rms_position_mm, rtol=1e-9)
    assert a.report.rms_position_mm <= 0.05
    ak = adaptive_knots(q, G, 8, 4, 0.1)
    assert ak.size == 12 and ak[3] == q[0] and ak[8] == q[-1] and np.all(np.diff(ak) > 0)


def _noisy_knee(q, G, seed=7, sigma_mm=0.5, sigma_deg=0.5):
    rng = np.random.default_rng(seed)
    N = q.size
    w = rng.normal(size=(N, 3)) * np.radians(sigma_deg) / np.sqrt(3)
    p = rng.normal(size=(N, 3)) * 1e-3 * sigma_mm / np.sqrt(3)
    Gn = G @ se3.exp(np.concatenate([w, np.zeros((N, 3))], axis=1))
    Gn[:, :3, 3] += p
    return JointSamples(Gn, q)


def test_smoothing_halves_hessian_and_keeps_residual(knee):
    _, q, G = knee
    s = _noisy_knee(q, G)
    plain = fit_spline_curve(s, n_frames=10)
    smooth = fit_spline_curve(s, n_frames=10, smoothing=1e-3)
    assert smooth.report.mean_hessian_norm <= 0.5 * plain.report.mean_hessian_norm
    assert smooth.report.rms_position_mm <= 1.5 * 0.5
    assert smooth.report.rms_rotation_deg <= 1.5 * 0.5
    assert np.all(np.diff(smooth.report.objective_trace) <= 0.0)
    assert smooth.report.smoothing == 1e-3


def test_non_convergence_is_a_status(knee):
    _, q, G = knee
    res = fit_spline_curve(JointSamples(G, q), n_frames=8, max_iterations=1)
    assert res.report.status == "max_iterations"
    assert res.report.iterations == 1


def test_bad_arguments_raise(knee):
    _, q, G = knee
    s = JointSamples(G, q)
    with pytest.raises(InvalidInputError, match="smoothing"):
        fit_spline_curve(s, smoothing=1.0)
    with pytest.raises(InvalidInputError, match="n_frames"):
        fit_spline_curve(s, n_frames=3)
    with pytest.raises(InvalidInputError, match="knots"):
        fit_spline_curve(s, knots="cubic")
    with pytest.raises(InvalidInputError, match="domain"):
        fit_spline_curve(s, n_frames=8, knots=fit_knots(q[0] + 0.1, q[-1], 8, 4))
    with pytest.raises(InvalidInputError, match="2 coordinates"):
        fit_spline_curve(JointSamples(G[:10], np.c_[q[:10], q[:10]]))
    with pytest.raises(InvalidInputError, match="at least 4 distinct"):
        fit_spline_curve(JointSamples(G[:3], q[:3]), n_frames=4)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.sampled_from([1e-8, 1e-3, 0.3, 1.0]),
       near_pi=st.booleans())
def test_jacobian_blocks_property(seed, scale, near_pi):
    """Eq. 34 blocks against central differences for tiny, moderate and large control twists,
    including a rotation of nearly pi between two control frames."""
    k = 4
    rng = np.random.default_rng(seed)
    n = 6
    steps = rng.normal(size=(n - 1, 6)) * scale
    if near_pi:
        axis = rng.normal(size=3)
        steps[2, :3] = 3.1 * axis / np.linalg.norm(axis)
    frames = [se3.exp(rng.normal(size=6))]
    for s in steps:
        frames.append(frames[-1] @ se3.exp(s))
    frames = np.array(frames)
    knots = np.cumsum(rng.uniform(0.2, 1.0, size=n + k))
    qs = rng.uniform(knots[k - 1], knots[n], 8)
    t = curve_terms(frames, knots, k, qs, hessian=True)
    analytic, fd = _blocks_vs_fd(frames, knots, k, qs, t, rng.normal(size=(n, 6)))
    np.testing.assert_allclose(analytic, fd, atol=1e-6 * max(1.0, np.abs(fd).max()))
    dq = 1e-6
    Sp = curve_terms(frames, knots, k, qs + dq, hessian=True)["S"]
    Sm = curve_terms(frames, knots, k, qs - dq, hessian=True)["S"]
    inside = np.all(np.abs(qs[:, None] - knots[None, :]) > 2 * dq, axis=1)
    np.testing.assert_allclose(t["h"][inside], ((Sp - Sm) / (2 * dq))[inside],
                               atol=1e-5 * max(1.0, np.abs(t["h"]).max()))


def test_weights_pull_the_fit_towards_heavy_samples(knee):
    _, q, G = knee
    rng = np.random.default_rng(2)
    Gn = G.copy()
    Gn[:, :3, 3] += rng.normal(size=(q.size, 3)) * 1e-3
    w = np.ones(q.size)
    w[60] = 1e4
    light = fit_spline_curve(JointSamples(Gn, q), n_frames=8)
    heavy = fit_spline_curve(JointSamples(Gn, q, weights=w), n_frames=8)
    assert heavy.report.position_residuals_mm[60] < 0.2 * light.report.position_residuals_mm[60]


def test_partial_hessian_rate_still_descends(knee):
    _, q, G = knee
    s = _noisy_knee(q, G, seed=11)
    full = fit_spline_curve(s, n_frames=8, smoothing=1e-3, max_iterations=4)
    half = fit_spline_curve(s, n_frames=8, smoothing=1e-3, hessian_rate=0.5, max_iterations=4)
    # h_dot_d = -c h asks for a partial step: still a descent, but slower than c = 1
    assert np.all(np.diff(half.report.objective_trace) < 0.0)
    assert half.report.objective_trace[-1] > full.report.objective_trace[-1]
    assert half.report.status == "max_iterations"


def test_more_control_frames_than_samples(knee):
    """Extra control frames (20 frames, 17 samples) are fitted with a warning: the plain fit
    interpolates, and smoothing spends the extra freedom on a small joint Hessian (section
    6.3)."""
    _, q, G = knee
    s = JointSamples(G[::8], q[::8])
    with pytest.warns(UserWarning, match="more than the 17 samples determine"):
        plain = fit_spline_curve(s, n_frames=20, max_iterations=6)
    with pytest.warns(UserWarning, match="more than the 17 samples determine"):
        smooth = fit_spline_curve(s, n_frames=20, smoothing=1e-3, max_iterations=6)
    assert plain.report.rms_position_mm <= 0.01 and plain.report.rms_rotation_deg <= 0.01
    assert smooth.report.rms_position_mm <= 0.2
    assert smooth.report.mean_hessian_norm <= 0.5 * plain.report.mean_hessian_norm
    for rep in (plain.report, smooth.report):
        assert np.all(np.diff(rep.objective_trace) <= 0.0)


class _BrokenProblem:
    """A problem whose objective is NaN away from the start: no step can be accepted."""

    def __init__(self, n):
        self.n = n

    def evaluate(self, frames, linearize):
        if linearize:
            return 1.0, None, np.eye(6 * self.n), np.ones(6 * self.n)
        return float("nan"), None


def test_diverged_is_a_status():
    frames = se3.exp(np.zeros((5, 6)))
    out, status, iterations, trace = levenberg_marquardt(_BrokenProblem(5), frames, 50, 1e-10)
    assert status == "diverged" and trace == [1.0] and iterations < 50
    np.testing.assert_array_equal(out, frames)


def test_closed_fit_recovers_a_closed_joint_and_its_period():
    """Samples of a known closed joint (spacing 0.3, period 7 x 0.3) are fitted back to it:
    the normal equations folded round the seam reach round-off, and the result is closed."""
    from core.fitting.curve import fit_closed_spline_curve
    from core.joints.spline_curve import ClosedSplineCurveJoint

    n, h = 7, 0.3
    th = 2 * np.pi * np.arange(n) / n
    xi = np.zeros((n, 6))
    xi[:, 2], xi[:, 0] = th, 0.4 * np.sin(th)
    F = se3.exp(xi)
    F[:, :3, 3] = np.stack([np.cos(th), np.sin(th), 0.2 * np.cos(2 * th)], axis=1)
    truth = ClosedSplineCurveJoint(F, spacing=h)
    q = np.linspace(0.0, truth.period, 8 * n, endpoint=False) + 0.01
    res = fit_closed_spline_curve(JointSamples(truth.transforms(q), q[:, None]), truth.period,
                                  n_frames=n)
    j = res.joint
    assert isinstance(j, ClosedSplineCurveJoint) and j.period == truth.period
    assert res.report.status == "converged" and res.report.max_position_mm < 1e-7
    x = np.linspace(-1.0, 3.0, 97)
    assert np.abs(j.transforms(x) - truth.transforms(x)).max() < 1e-9
    with pytest.raises(InvalidInputError, match="one coordinate"):
        fit_closed_spline_curve(JointSamples(truth.transforms(q)), truth.period)
    with pytest.raises(InvalidInputError, match="period"):
        fit_closed_spline_curve(JointSamples(truth.transforms(q), q[:, None]), 0.0)
