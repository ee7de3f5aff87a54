"""Fits say what they did: a held-out error beside the training error, a warning when the
samples do not determine the control frames, reports taken from the returned joint, and
settings checked before any work with messages that name the setting."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import io
from core.bspline import basis_matrix
from core.errors import InvalidInputError
from core.fitting import JointSamples
from core.fitting import curve
from core.fitting.curve import adaptive_knots, fit_spline_curve
from core.fitting.document import JointFitOptions, fit_joint_document
from core.fitting.ik import Chain, leg_chain, solve_ik
from core.fitting.metric import pose_errors
from core.fitting.reach_cone import cone_boundary, fit_reach_cone
from core.fitting import report as fit_report
from core.fitting.report import FitReport
from core.fitting.surface import fit_spline_surface
from core.joints import Revolute
from core.lie import se3, so3
from core.reference.opensim import KneeGait2392

KNEE = KneeGait2392()
#: raw Python texts that must never reach a user
RAW_TEXTS = ("invalid literal", "could not convert", "math domain", "cannot convert",
             "must be real number", "object of type")


def _knee_samples(n):
    q = np.linspace(*KNEE.range, n)
    return q, KNEE.poses(q)


def _fit_quietly(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fit_spline_curve(*args, **kwargs)


def _surface_samples(na, nb):
    """A smooth 2-DOF motion sampled on an na x nb grid: q (N, 2), poses (N, 4, 4)."""
    a, b = np.meshgrid(np.linspace(-0.5, 0.5, na), np.linspace(-0.4, 0.4, nb), indexing="ij")
    q = np.stack([a.ravel(), b.ravel()], axis=1)
    xi = np.stack([q[:, 0], 0.3 * q[:, 0] * q[:, 1], q[:, 1], 0.01 * q[:, 1],
                   0.005 * q[:, 0] * q[:, 1], 0.01 * q[:, 0]], axis=1)
    return q, se3.exp(xi)


# -- held-out error and under-determined fits ------------------------------------------------

def test_too_many_control_frames_warn_and_the_heldout_error_shows_the_gap():
    """10 knee samples, 30 control frames: the fit passes through every sample, but between
    them the joint is more than 10 mm off; the warning names the supported count and the
    held-out error measures the gap (against the true motion at the midpoints)."""
    q, G = _knee_samples(10)
    with pytest.warns(UserWarning, match=r"30 control frames are more than the 10 samples "
                                         r"determine \(with adaptive knots they support 10\)"):
        fit = fit_spline_curve(JointSamples(G, q), n_frames=30)
    r = fit.report
    assert r.max_position_mm < 1e-6
    assert "support 10" in r.message
    mid = 0.5 * (q[1:] + q[:-1])
    true_gap = pose_errors(fit.joint.transforms(mid), KNEE.poses(mid))[0]
    assert true_gap.max() > 10.0
    assert r.heldout_max_position_mm >= 0.5 * true_gap.max()


def test_supported_frames_fit_without_warning_and_heldout_matches_the_truth():
    """131 knee samples and 8 frames: no warning, and the held-out error agrees with the
    fitted joint's true error between samples to the chord error of 1-degree spacing."""
    q, G = _knee_samples(131)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        r = fit_spline_curve(JointSamples(G, q), n_frames=8).report
        fit = fit_spline_curve(JointSamples(G, q), n_frames=8)
    mid = 0.5 * (q[1:] + q[:-1])
    true_gap = pose_errors(fit.joint.transforms(mid), KNEE.poses(mid))[0]
    # chord of a 1-degree step on a knee whose tibia moves ~ 5 cm per radian: ~ 1e-3 mm
    assert abs(r.heldout_max_position_mm - true_gap.max()) < 0.01
    assert r.heldout_rms_position_mm < 0.05 and r.heldout_max_rotation_deg < 0.01


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=4, max_size=25, unique=True),
       st.integers(4, 30), st.integers(2, 5))
def test_determined_frames_is_the_rank_of_the_collocation_matrix(sites, n, k):
    """Schoenberg-Whitney: the greedy count equals the rank of the basis at the sites."""
    sites = np.sort(np.array(sites))
    if n < k or np.min(np.diff(sites)) < 1e-6:
        return
    knots = np.concatenate([np.full(k - 1, -0.1 * np.arange(k - 1, 0, -1)),
                            np.linspace(0.0, 1.0, n - k + 2),
                            1.0 + 0.1 * np.arange(1, k)])
    B = basis_matrix(knots, k, sites)[0]
    assert curve.determined_frames(knots, k, sites) == np.linalg.matrix_rank(B)


@settings(max_examples=12, deadline=None)
@given(st.integers(6, 30), st.integers(4, 36))
def test_warning_exactly_when_the_samples_do_not_determine_the_frames(n_samples, n_frames):
    q, G = _knee_samples(n_samples)
    knots = adaptive_knots(q, G, n_frames, 4, 0.1)
    under = curve.determined_frames(knots, 4, q) < n_frames
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = fit_spline_curve(JointSamples(G, q), n_frames=n_frames, max_iterations=5).report
    assert any("more than" in str(w.message) for w in caught) == under
    assert under or n_frames <= n_samples
    assert all(math.isfinite(getattr(r, f)) for f in (
        "heldout_rms_position_mm", "heldout_max_position_mm", "heldout_rms_rotation_deg",
        "heldout_max_rotation_deg"))


def test_given_knots_with_frames_no_sample_reaches_warn():
    """Six interior knots bunched between two samples leave basis functions without a sample
    of their own: the warning counts the frames the samples still determine."""
    q, G = _knee_samples(20)
    lo, hi = q[0], q[-1]
    h = (hi - lo) / 19
    inner = np.concatenate([[lo], lo + h * np.array([9.1, 9.2, 9.3, 9.4, 9.5, 9.6]), [hi]])
    knots = np.concatenate([lo - h * np.arange(3, 0, -1), inner, hi + h * np.arange(1, 4)])
    supported = curve.determined_frames(knots, 4, q)
    assert supported < 10
    with pytest.warns(UserWarning, match=f"determine only {supported} of the 10 control frames"):
        fit_spline_curve(JointSamples(G, q), n_frames=10, knots=knots)


def test_surface_with_more_control_points_than_the_samples_determine_warns():
    q, G = _surface_samples(5, 14)  # 70 samples, 5 distinct values along the first axis
    with pytest.warns(UserWarning, match=r"determine only 40 of the 64 control points"):
        r = fit_spline_surface(JointSamples(G, q), grid=(8, 8), method="coordinatewise").report
    assert "5 x 14 distinct values" in r.message
    assert math.isfinite(r.heldout_max_position_mm)


def test_surface_heldout_error_on_a_determined_grid():
    q, G = _surface_samples(9, 9)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        fit = fit_spline_surface(JointSamples(G, q), grid=(5, 5))
    pos, rot = fit_report.midpoint_errors(fit.joint, q, G)
    assert pos.size >= 2 * 8 * 9  # every grid edge of the 9 x 9 samples at least
    assert fit.report.heldout_max_position_mm == pytest.approx(pos.max())
    assert fit.report.heldout_max_position_mm < 0.5


# -- the report describes the returned joint ---------------------------------------------------

@settings(max_examples=15, deadline=None)
@given(st.integers(-14, 17))
def test_report_is_the_returned_joint_or_the_fit_refuses(exponent):
    """Coordinates scaled by 10**exponent: either a clear refusal before work, or a report
    whose residuals are exactly the returned joint's at the sample coordinates."""
    q, G = _knee_samples(20)
    q = q * 10.0 ** exponent
    try:
        fit = fit_spline_curve(JointSamples(G, q), n_frames=6)
    except InvalidInputError as exc:
        assert "radians or metres" in str(exc) and exponent > 14
        return
    pos, rot = pose_errors(fit.joint.transforms(q), G)
    np.testing.assert_array_equal(fit.report.position_residuals_mm, pos)
    np.testing.assert_array_equal(fit.report.rotation_residuals_deg, rot)


def test_coordinates_beyond_what_a_joint_evaluates_are_refused():
    q, G = _knee_samples(10)
    with pytest.raises(InvalidInputError, match="beyond the \\+-1e\\+15"):
        fit_spline_curve(JointSamples(G, q * 1e16), n_frames=6)
    with pytest.raises(InvalidInputError, match="radians or metres"):
        fit_joint_document(G, q * 1e16, JointFitOptions(n_frames=6))


# -- the report's new fields in documents ----------------------------------------------------

def test_heldout_fields_survive_documents_and_nan_is_refused():
    q, G = _knee_samples(30)
    doc = fit_joint_document(G, q, JointFitOptions(n_frames=6))
    back = io.loads(io.dumps(doc))
    for name in ("heldout_rms_position_mm", "heldout_max_position_mm",
                 "heldout_rms_rotation_deg", "heldout_max_rotation_deg"):
        assert getattr(back.report, name) == getattr(doc.report, name)
        assert math.isfinite(getattr(back.report, name))
    d = doc.report.to_dict()
    FitReport.from_dict({**d, "heldout_max_position_mm": None})  # unmeasured: allowed
    for bad in (float("nan"), float("inf")):
        with pytest.raises(InvalidInputError, match="heldout_max_position_mm"):
            FitReport.from_dict({**d, "heldout_max_position_mm": bad})
        with pytest.raises(InvalidInputError, match="rms_position_mm"):
            FitReport.from_dict({**d, "rms_position_mm": bad})
    old = {k: v for k, v in d.items() if not k.startswith("heldout_")}
    assert math.isnan(FitReport.from_dict(old).heldout_max_position_mm)
    assert FitReport.from_dict(old).to_dict()["heldout_max_position_mm"] is None


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True, allow_infinity=True) | st.integers()
    | st.text(max_size=3), lambda inner: st.lists(inner, max_size=3), max_leaves=6)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["rms_position_mm", "iterations", "position_residuals_mm",
                        "objective_trace", "heldout_max_position_mm", "mean_hessian_norm",
                        "method", "length_scale"]), _JSON_VALUES)
def test_report_fields_load_as_written_or_are_refused_by_name(field_name, value):
    """Any JSON value in a report field: refused with the field's name, or loaded to what
    to_dict writes back (so save writes what load accepted)."""
    q, G = _knee_samples(12)
    d = fit_spline_curve(JointSamples(G, q), n_frames=5).report.to_dict()
    d[field_name] = value
    try:
        report = FitReport.from_dict(d)
    except InvalidInputError as exc:
        assert field_name in str(exc) and not any(raw in str(exc) for raw in RAW_TEXTS)
        return
    again = report.to_dict()
    assert FitReport.from_dict(again) == report
    assert all(v is None or not isinstance(v, float) or math.isfinite(v) for v in again.values())


# -- settings checked before work ----------------------------------------------------------------

def _curve_samples():
    q, G = _knee_samples(20)
    return JointSamples(G, q)


BAD_CURVE = [
    ("n_frames", 8.7), ("n_frames", "x"), ("n_frames", float("nan")), ("n_frames", True),
    ("n_frames", 3), ("order", 4.5), ("order", "4"), ("order", 1),
    ("tol", -1.0), ("tol", float("nan")), ("tol", 1.0), ("tol", "small"),
    ("smoothing", -0.1), ("smoothing", 1.0), ("smoothing", float("nan")), ("smoothing", "a"),
    ("hessian_rate", 0.0), ("max_iterations", 2.5), ("max_iterations", float("inf")),
    ("max_iterations", 0), ("length_scale", 0.0), ("length_scale", -1.0),
]


@pytest.mark.parametrize("name,value", BAD_CURVE)
def test_bad_curve_settings_are_named(name, value):
    with pytest.raises(InvalidInputError, match=name) as exc:
        fit_spline_curve(_curve_samples(), **{name: value})
    assert not any(raw in str(exc.value) for raw in RAW_TEXTS)


BAD_SURFACE = [
    ("grid", ("a", "b")), ("grid", "ab"), ("grid", (4.5, 4)), ("grid", 4), ("grid", (4,)),
    ("grid", (2, 4)), ("order", "x"), ("tol", -1.0), ("max_iterations", "a"),
    ("method", "fast"),
]


@pytest.mark.parametrize("name,value", BAD_SURFACE)
def test_bad_surface_settings_are_named(name, value):
    q, G = _surface_samples(6, 6)
    with pytest.raises(InvalidInputError, match=name) as exc:
        fit_spline_surface(JointSamples(G, q), **{name: value})
    assert not any(raw in str(exc.value) for raw in RAW_TEXTS)


@pytest.mark.parametrize("options,match", [
    (dict(kind="surface", grid=("a", "4")), "grid entry 0"),
    (dict(kind="surface", grid=4), "grid"),
    (dict(kind="surface", grid="ab"), "grid"),
    (dict(n_frames=8.7), "n_frames"),
    (dict(smoothing=-1.0), "smoothing"),
    (dict(order="x"), "order"),
    (dict(length_scale=0.0), "length_scale"),
    (dict(method="x"), "method"),
])
def test_fit_joint_document_names_bad_options(options, match):
    q, G = _knee_samples(20)
    if options.get("kind") == "surface":
        q, G = _surface_samples(6, 6)
    with pytest.raises(InvalidInputError, match=match) as exc:
        fit_joint_document(G, q, JointFitOptions(**options))
    assert not any(raw in str(exc.value) for raw in RAW_TEXTS)


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3),
                 st.booleans(), st.lists(st.floats(-1.0, 1.0), max_size=2)))
def test_any_weight_list_is_accepted_or_refused_with_a_sentence(w):
    q, G = _knee_samples(6)
    weights = [w] * 6
    try:
        s = JointSamples(G, q, weights)
    except InvalidInputError as exc:
        assert "weights" in str(exc) and not any(raw in str(exc) for raw in RAW_TEXTS)
        return
    assert np.all(np.isfinite(s.weights)) and np.all(s.weights > 0.0)


@pytest.mark.parametrize("kwargs,match", [
    (dict(max_iterations="a"), "max_iterations"), (dict(max_iterations=2.5), "max_iterations"),
    (dict(damping=float("nan")), "damping"), (dict(damping=-1.0), "damping"),
    (dict(position_tol=-1.0), "position_tol"), (dict(rotation_tol=float("nan")), "rotation_tol"),
    (dict(q0=["a"] * 5), "chain coordinates"), (dict(length_scale=0.0), "length_scale"),
])
def test_bad_ik_settings_are_named(kwargs, match):
    chain = leg_chain()
    target = chain.pose(np.full(5, 0.1))
    with pytest.raises(InvalidInputError, match=match) as exc:
        solve_ik(chain, target, **kwargs)
    assert not any(raw in str(exc.value) for raw in RAW_TEXTS)


@pytest.mark.parametrize("args,match", [
    (([Revolute([0.0, 0.0, 1.0])], ["a"]), "placement 0"),
    (([Revolute([0.0, 0.0, 1.0])], None, "x"), "tip"),
    (([object()],), "joint 0 of the chain"),
])
def test_bad_chains_are_named(args, match):
    with pytest.raises(InvalidInputError, match=match) as exc:
        Chain(*args)
    assert not any(raw in str(exc.value) for raw in RAW_TEXTS)


def test_ik_target_out_of_numeric_reach_is_refused_with_a_sentence():
    chain = leg_chain()
    far = np.eye(4)
    far[:3, 3] = 1e300
    with pytest.raises(InvalidInputError, match="too far from the chain"):
        solve_ik(chain, far)
    with pytest.raises(InvalidInputError, match="target must be one"):
        solve_ik(chain, "a")


@pytest.mark.parametrize("call,match", [
    (lambda R: fit_reach_cone(R, margin="a"), "margin"),
    (lambda R: fit_reach_cone(R, margin=float("nan")), "margin"),
    (lambda R: cone_boundary(np.eye(3), 0.5, n="a"), "n must"),
    (lambda R: cone_boundary(np.eye(3), "a"), "half_angle_1"),
    (lambda R: cone_boundary(np.eye(3), 0.5, 4.0), "half_angle_2"),
])
def test_bad_reach_cone_settings_are_named(call, match):
    R = so3.exp(np.random.default_rng(0).normal(scale=0.3, size=(10, 3)))
    with pytest.raises(InvalidInputError, match=match) as exc:
        call(R)
    assert not any(raw in str(exc.value) for raw in RAW_TEXTS)


# -- reach cone held-out check -------------------------------------------------------------------

def test_reach_cone_heldout_angle():
    """Two directions: leaving one out gives a zero cone around the other, which misses it by
    the whole arc (twice the half-angle); many directions: a small held-out angle."""
    e = np.array([1.0, 0.0, 0.0])
    two = fit_reach_cone(np.stack([so3.exp(0.2 * e), so3.exp(-0.2 * e)]))
    assert two.heldout_angle == pytest.approx(2.0 * two.half_angle, abs=1e-6)
    assert math.isnan(fit_reach_cone(np.eye(3)[None]).heldout_angle)
    rng = np.random.default_rng(3)
    many = fit_reach_cone(so3.exp(rng.uniform(-0.5, 0.5, size=(300, 3))))
    assert 0.0 <= many.heldout_angle < 0.2 * many.half_angle


def test_reach_cone_fit_of_a_long_capture():
    """4000 captured rotations: the elliptic fit looks only at the constraints that can bind
    (memory and time near linear in the samples) and still holds every sample, with one on
    the boundary."""
    from core import expcoords
    from core.fitting.reach_cone import cone_coordinates

    R = so3.exp(np.random.default_rng(5).uniform(-0.5, 0.5, size=(4000, 3)))
    fit = fit_reach_cone(R)
    g = expcoords.elliptic_cone_value(cone_coordinates(R, fit.neutral), np.array([0.0, 1.0, 0.0]),
                                      np.array([1.0, 0.0, 0.0]), fit.half_angle_1,
                                      fit.half_angle_2)
    assert g.min() > -1e-9 and g.min() < 1e-6


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 40), st.integers(0, 10_000))
def test_reach_cone_heldout_is_the_leave_one_out_miss(n, seed):
    """Against a brute-force leave-one-out over every sample."""
    R = so3.exp(np.random.default_rng(seed).uniform(-0.6, 0.6, size=(n, 3)))
    fit = fit_reach_cone(R)
    p = np.array([0.0, 1.0, 0.0])
    d = R @ p
    worst = 0.0
    for i in range(n):
        rest = fit_reach_cone(np.delete(R, i, axis=0))
        angle = math.acos(float(np.clip(d[i] @ rest.axis, -1.0, 1.0)))
        worst = max(worst, angle - rest.half_angle)
    assert fit.heldout_angle == pytest.approx(worst, abs=1e-6)
