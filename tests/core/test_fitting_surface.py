"""n-DOF spline joint fitting (seed 000 section 8's future work) on the Seth 2019
scapulothoracic grid."""

import numpy as np
import pytest

from core import bspline
from core.errors import InvalidInputError
from core.fitting.curve import fit_knots
from core.fitting.metric import SE3Metric, pose_errors
from core.fitting.samples import JointSamples
from core.fitting.surface import fit_spline_surface, residual_jacobian, surface_terms
from core.joints.spline_surface import DEFAULT_BASIS_TWISTS, SplineJoint
from core.lie import se3
from core.reference.opensim import ScapulothoracicSeth2019


@pytest.fixture(scope="module")
def grid():
    g = ScapulothoracicSeth2019().grid()
    q = g["q"][..., :2].reshape(-1, 2)
    G = g["T_pjoint_cjoint"].reshape(-1, 4, 4)
    I, J = np.meshgrid(np.arange(17), np.arange(11), indexing="ij")
    # held-out interior points (the knot box stays that of the full grid)
    hold = (((I + 2 * J) % 5 == 0) & (I > 0) & (I < 16) & (J > 0) & (J < 10)).ravel()
    return q, G, hold


@pytest.fixture(scope="module")
def fits(grid):
    q, G, hold = grid
    train = JointSamples(G[~hold], q[~hold])
    return {m: fit_spline_surface(train, (6, 6), method=m) for m in ("coordinatewise", "se3")}


@pytest.mark.parametrize("method", ["coordinatewise", "se3"])
def test_held_out_accuracy(grid, fits, method):
    q, G, hold = grid
    res = fits[method]
    assert isinstance(res.joint, SplineJoint) and res.joint.coefficients.shape == (6, 6, 6)
    assert res.report.status == "converged"
    pos, rot = pose_errors(res.joint.transforms(q[hold]), G[hold])
    assert np.sqrt(np.mean(pos ** 2)) <= 0.5 and np.sqrt(np.mean(rot ** 2)) <= 0.5
    assert res.report.rms_position_mm <= 0.5 and res.report.rms_rotation_deg <= 0.5
    # the report describes the returned joint
    pos_fit, _ = pose_errors(res.joint.transforms(q[~hold]), G[~hold])
    np.testing.assert_allclose(pos_fit, res.report.position_residuals_mm, atol=1e-9)


def test_se3_at_least_as_good_on_the_metric(grid, fits):
    q, G, hold = grid
    m = SE3Metric(0.1)
    cw, s3 = fits["coordinatewise"], fits["se3"]
    assert s3.report.objective_trace[-1] <= cw.report.objective_trace[-1]
    assert np.all(np.diff(s3.report.objective_trace) <= 0.0)
    d_cw = m.distance(cw.joint.transforms(q[hold]), G[hold])
    d_s3 = m.distance(s3.joint.transforms(q[hold]), G[hold])
    assert np.mean(d_s3 ** 2) <= np.mean(d_cw ** 2)


@pytest.mark.parametrize("seed, scale", [(0, 0.3), (1, 0.3), (2, 0.0), (3, 1e-8), (4, 1.5)])
def test_residual_jacobian_matches_finite_differences(seed, scale):
    """At zero coefficients (identity), tiny ones, random ones and large Euler angles."""
    rng = np.random.default_rng(seed)
    knots = [fit_knots(-1.0, 1.0, 5, 4), fit_knots(-0.5, 0.7, 4, 4)]
    q = np.c_[rng.uniform(-1, 1, 12), rng.uniform(-0.5, 0.7, 12)]
    W = bspline.tensor_basis(knots, 4, q)[0]
    C = rng.normal(size=(6, W.shape[1])) * scale
    H = np.eye(4) if scale == 0.0 else se3.exp(rng.normal(size=6))
    targets = se3.exp(rng.normal(size=(12, 6)) * 0.5)
    metric = SE3Metric(0.2)
    r, J = residual_jacobian(H, DEFAULT_BASIS_TWISTS, C, W, targets, metric)
    # the poses agree with the joint's own evaluation
    joint = SplineJoint(knots, C.reshape(6, 5, 4), basis_twists=DEFAULT_BASIS_TWISTS, offset=H)
    np.testing.assert_allclose(surface_terms(H, DEFAULT_BASIS_TWISTS, C, W)["G"],
                               joint.transforms(q), atol=1e-12)
    eps = 1e-6
    for p in rng.choice(C.size, 8, replace=False):
        dC = np.zeros(C.size)
        dC[p] = eps
        rp, _ = residual_jacobian(H, DEFAULT_BASIS_TWISTS, C + dC.reshape(C.shape), W,
                                  targets, metric)
        rm, _ = residual_jacobian(H, DEFAULT_BASIS_TWISTS, C - dC.reshape(C.shape), W,
                                  targets, metric)
        np.testing.assert_allclose(J[:, :, p], (rp - rm) / (2 * eps), atol=1e-7)


@pytest.mark.parametrize("method", ["coordinatewise", "se3"])
def test_between_samples_error_on_the_full_grid(grid, method):
    """The report's held-out check (midpoints of grid neighbours against the samples' cubic
    interpolation along the grid line) agrees with the 27 held-out points: 0.01 mm."""
    q, G, _ = grid
    rep = fit_spline_surface(JointSamples(G, q), (6, 6), method=method).report
    assert rep.heldout_rms_position_mm <= 0.01 and rep.heldout_max_position_mm <= 0.015
    assert rep.heldout_max_rotation_deg <= 0.05


def test_full_grid_and_max_iterations_status(grid):
    q, G, _ = grid
    res = fit_spline_surface(JointSamples(G, q), (6, 6), method="se3", max_iterations=1)
    assert res.report.status == "max_iterations"
    assert res.report.iterations == 1


def test_bad_arguments(grid):
    q, G, _ = grid
    s = JointSamples(G, q)
    with pytest.raises(InvalidInputError, match="method"):
        fit_spline_surface(s, method="euler")
    with pytest.raises(InvalidInputError, match="grid"):
        fit_spline_surface(s, grid=(6,))
    with pytest.raises(InvalidInputError, match="order"):
        fit_spline_surface(s, grid=(3, 6))
    with pytest.raises(InvalidInputError, match="coordinates"):
        fit_spline_surface(JointSamples(G[:40]), grid=(4,))
    with pytest.raises(InvalidInputError, match="at least 36"):
        fit_spline_surface(s.subset(np.arange(20)), grid=(6, 6))


@pytest.mark.parametrize("deficient", [0, 3], ids=["full_rank", "three_columns_without_data"])
def test_least_squares_from_one_factorization_equals_lstsq(deficient):
    """The coordinatewise fit's solver gives numpy's minimum-norm lstsq solution and
    matrix_rank's rank: on a tall random basis (condition number about 3) and on one whose
    last columns are zero (no sample in their support), as a fit's basis is. The solutions
    differ by the rounding of two backward-stable methods: a few eps times the condition
    number squared (the residual is not zero) of the norm, here with room for the
    (N + P) ulps of each reduction."""
    from core.fitting.surface import _least_squares

    rng = np.random.default_rng(7)
    A = rng.standard_normal((400, 30))
    if deficient:
        A[:, -deficient:] = 0.0
    Y = rng.standard_normal((400, 6))
    X, rank = _least_squares(A, Y)
    expected = np.linalg.lstsq(A, Y, rcond=None)[0].T
    assert rank == np.linalg.matrix_rank(A) == 30 - deficient
    s = np.linalg.svd(A[:, :30 - deficient], compute_uv=False)
    bound = (400 + 30) * np.finfo(float).eps * (s[0] / s[-1]) ** 2 * np.abs(expected).max()
    assert np.abs(X - expected).max() <= bound
    assert np.abs(X[:, 30 - deficient:]).max(initial=0.0) <= bound


@pytest.mark.parametrize("values", [(7, 6, 9), (3, 6, 9)], ids=["determined", "axis_short_of_data"])
def test_grid_least_squares_equals_the_general_solve(values):
    """Samples on a full tensor grid (in shuffled order) are solved through the factors of
    the Kronecker-product basis: the same minimum-norm solution and rank as the solve of the
    whole (N, P) basis, also where one axis has fewer distinct values (3) than control points
    (4), so the basis is rank-deficient. Rounding: both are backward stable, so they differ
    by a few eps times the condition number squared (nonzero residual) of the solution's size,
    with room for the N + P ulps of the reductions; the condition number is that of the
    factors' product, over the kept singular values."""
    from core.fitting.surface import _grid, _grid_least_squares, _least_squares

    rng = np.random.default_rng(3)
    grid, k = (4, 5, 6), 4
    axes = [np.linspace(-0.5, 0.7, m) for m in values]
    q = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    q = q[rng.permutation(len(q))]
    knots = [fit_knots(-0.5, 0.7, g, k) for g in grid]
    W = bspline.tensor_basis(knots, k, q)[0]
    Y = rng.standard_normal((len(q), 6))
    distinct, flat = _grid(q)
    X, rank = _grid_least_squares([bspline.basis_matrix(knots[a], k, distinct[a], 0)[0]
                                   for a in range(3)], flat, Y)
    expected, expected_rank = _least_squares(W, Y)
    assert rank == expected_rank == np.linalg.matrix_rank(W)
    assert rank == np.prod([min(v, g) for v, g in zip(values, grid)])
    s = np.linalg.svd(W, compute_uv=False)[:rank]
    bound = (W.shape[0] + W.shape[1]) * np.finfo(float).eps * (s[0] / s[-1]) ** 2 \
        * np.abs(expected).max()
    assert np.abs(X - expected).max() <= bound
    assert _grid(q[:-1]) is None                      # a grid with one sample missing
    assert _grid(np.concatenate([q[:-1], q[:1]])) is None   # ... and one twice
