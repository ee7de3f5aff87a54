"""Fitting n-DOF spline joints ``G(q) = H prod_j exp(e_j phi_j(q))`` (seed 000 eqs. 25-26) to
sampled poses: the data-fitting problem that seed 000 section 8 leaves for future work.

Two methods:

* ``"coordinatewise"`` (the naive approach of section 8): read each sample's target values of
  ``phi_j`` off ``H^-1 G_s`` (with the default basis twists: the translation, then the XYZ
  Euler angles ``R = Rx(phi_4) Ry(phi_5) Rz(phi_6)``) and fit each ``phi_j`` by linear least
  squares in the tensor-product B-spline basis.
* ``"se3"``: minimize the SE(3) metric itself, ``sum_s omega_s ||log(G(q_s)^-1 G_s)||^2``
  (eq. 32 with the metric of :class:`SE3Metric`), by Levenberg-Marquardt over all spline
  coefficients, started from the coordinatewise solution. The analytic Jacobian: a change of
  ``phi_j`` moves the pose by the body twist ``sigma_j = Ad_{(E_{j+1} ... E_m)^-1} e_j``
  (``E_j = exp(e_j phi_j)``, eq. 27), ``phi_j = c_j . W(q)`` is linear in the coefficients,
  and ``exp(-d) exp(r) = exp(r - Jl(r)^-1 d)``, so
  ``d r_s / d c_{j,J} = -Jl(r_s)^-1 sigma_j(q_s) W_J(q_s)``.

The offset ``H`` is the sample pose nearest the centre of the coordinate box, so the Euler
angles stay small and away from their singularity (``|phi_5| = pi/2``).
"""

import functools
import warnings

import numpy as np
import scipy.linalg
from scipy.spatial.transform import Rotation

from .. import bspline
from ..errors import InvalidInputError
from ..lie import se3
from ..checks import real_number, whole_number
from .curve import fit_knots
from .metric import DEFAULT_LENGTH_SCALE, SE3Metric
from .report import FitResult, joint_poses, make_report, midpoint_errors
from .samples import JointSamples

__all__ = ["fit_spline_surface", "surface_terms", "residual_jacobian", "METHODS"]

METHODS = ("se3", "coordinatewise")


def surface_terms(H, twists, C, W, jacobian=True):
    """Poses and the body-twist sensitivities of ``G = H prod_j exp(e_j phi_j)``.

    H: (4, 4); twists: (m, 6); C: (m, P) flattened coefficients; W: (N, P) basis weights.
    Returns ``G`` (N, 4, 4), ``phi`` (N, m) and, if ``jacobian``, ``sigma`` (N, m, 6) with
    ``G(c + dc) = G exp(sum_j sigma_j dphi_j)`` to first order.
    """
    phi = W @ C.T  # (N, m)
    E = se3.exp(phi[:, :, None] * twists[None])  # (N, m, 4, 4)
    N, m = phi.shape
    tails = np.empty((N, m, 4, 4))
    tails[:, m - 1] = np.eye(4)
    for j in range(m - 2, -1, -1):
        tails[:, j] = E[:, j + 1] @ tails[:, j + 1]
    G = H @ E[:, 0] @ tails[:, 0]
    out = {"G": G, "phi": phi}
    if jacobian:
        out["sigma"] = np.einsum("nmij,mj->nmi", se3.Ad_inv(tails), twists)
    return out


def _coordinatewise_targets(H, poses):
    """Target phi values (N, 6) for the default basis twists: translation then XYZ Euler."""
    rel = se3.inv(H) @ poses
    ang = Rotation.from_matrix(rel[:, :3, :3]).as_euler("XYZ")
    return np.concatenate([rel[:, :3, 3], ang], axis=1)


def _least_squares(A, Y):
    """The minimum-norm least-squares solution of ``A X = Y`` (A: (N, P), Y: (N, m)),
    transposed to ``(m, P)``, and the rank of A, both as numpy's ``lstsq(rcond=None)`` and
    ``matrix_rank`` define them (singular values above ``max(N, P) eps`` of the largest), from
    one QR factorization of ``[A Y]`` and the SVD of its ``(P, P)`` triangle: A's singular
    values are R's, and ``Q^T Y`` is the triangle's last columns. For the tall bases of
    tensor-product fits this costs one factorization of A where lstsq and matrix_rank take
    one each."""
    N, P = A.shape
    R = scipy.linalg.qr(np.concatenate([A, Y], axis=1), mode="r", check_finite=False)[0][:P]
    U, S, Vt = np.linalg.svd(R[:, :P], full_matrices=False)
    rank = int(np.count_nonzero(S > S[0] * max(N, P) * np.finfo(float).eps)) if S.size else 0
    X = Vt[:rank].T @ ((U[:, :rank].T @ R[:, P:]) / S[:rank, None])
    return X.T, rank


def _grid(q):
    """For samples on a full tensor grid (every combination of each coordinate's distinct
    values, each once): the distinct values per coordinate and each sample's flat index into
    the grid in C order; None for other samples."""
    values, index = [], []
    for column in q.T:
        distinct, where = np.unique(column, return_inverse=True)
        values.append(distinct)
        index.append(where.reshape(-1))
    sizes = tuple(len(v) for v in values)
    if int(np.prod(sizes)) != len(q):
        return None
    flat = np.ravel_multi_index(index, sizes)
    if np.bincount(flat, minlength=len(q)).max() != 1:
        return None
    return values, flat


def _grid_least_squares(bases, flat, Y):
    """:func:`_least_squares` for a basis that is the Kronecker product of ``bases`` (one
    ``(n_a, P_a)`` matrix per coordinate, rows ordered as the grid's flat index ``flat`` of
    each row of ``Y``): the product's singular values are the products of the factors' and
    its pseudo-inverse is the product of their pseudo-inverses, so the solution takes one
    small SVD per coordinate and tensor contractions instead of a factorization of the
    ``(N, P)`` basis. Same rank rule and minimum-norm solution."""
    sizes = [b.shape[0] for b in bases]
    T = np.zeros((len(flat), Y.shape[1]))
    T[flat] = Y
    T = T.reshape(*sizes, Y.shape[1])
    factors = [np.linalg.svd(b, full_matrices=False) for b in bases]
    for a, (U, _, _) in enumerate(factors):
        T = np.moveaxis(np.tensordot(U.T, T, axes=(1, a)), 0, a)
    S = functools.reduce(np.multiply.outer, [f[1] for f in factors])
    P = int(np.prod([b.shape[1] for b in bases]))
    keep = S > S.max() * max(len(flat), P) * np.finfo(float).eps
    T = np.where(keep[..., None], T / np.where(keep, S, 1.0)[..., None], 0.0)
    for a, (_, _, Vt) in enumerate(factors):
        T = np.moveaxis(np.tensordot(Vt.T, T, axes=(1, a)), 0, a)
    return T.reshape(P, -1).T, int(np.count_nonzero(keep))


def fit_spline_surface(samples, grid=(6, 6), method="se3", order=4,
                       length_scale=DEFAULT_LENGTH_SCALE, max_iterations=50, tol=1e-10):
    """Fit an n-DOF :class:`SplineJoint` (n = len(grid), 1..3) to samples with coordinates.

    Args:
        samples: :class:`JointSamples` with ``q: (N, n)``.
        grid: control points per coordinate (c_1, .., c_n), each >= order. More control
            points than the samples determine (the rank of the B-spline basis at the sample
            coordinates) are fitted with a UserWarning, repeated in the report's message.
        method: "se3" (minimize the SE(3) metric, Levenberg-Marquardt with analytic
            derivatives) or "coordinatewise" (linear least squares per phi_j).
        order: spline order per axis (4 = cubic).
        length_scale: metres of translation weighed like one radian (:class:`SE3Metric`).
        max_iterations, tol: LM iteration cap (>= 1) and relative objective decrease to stop
            (in [0, 1)).

    Knots are uniform with the domain equal to the sample coordinate box. Returns
    :class:`FitResult` (``joint``: SplineJoint, ``report``: :class:`FitReport` with the
    returned joint's errors at the samples and between neighbouring samples,
    :func:`core.fitting.report.midpoint_errors`). Settings are checked before any work.
    """
    from ..joints.spline_surface import DEFAULT_BASIS_TWISTS, SplineJoint

    if method not in METHODS:
        raise InvalidInputError(f"method must be one of {METHODS}, got {method!r}")
    if not isinstance(samples, JointSamples):
        raise InvalidInputError("fit_spline_surface needs JointSamples with coordinates q")
    if samples.q is None:
        raise InvalidInputError("fit_spline_surface needs coordinates: pass JointSamples(poses, "
                                "q) with q of shape (N, n)")
    n = samples.n_coordinates
    if isinstance(grid, (str, bytes)) or not hasattr(grid, "__len__") or len(grid) != n:
        raise InvalidInputError(f"grid must give one control-point count per coordinate, e.g. "
                                f"{(6,) * n} for the samples' {n} coordinates; got {grid!r}")
    k = whole_number(order, "order", 2, "4 is cubic")
    grid = tuple(whole_number(g, f"grid entry {a}", k, f"each axis of an order-{k} spline needs "
                              f"at least {k} control points") for a, g in enumerate(grid))
    max_iterations = whole_number(max_iterations, "max_iterations", 1)
    tol = real_number(tol, "tol", 0.0, 1.0, high_open=True,
                      advice="it is the relative objective decrease at which to stop, e.g. 1e-10")
    P = int(np.prod(grid))
    samples.require(P, f"a {'x'.join(map(str, grid))} control grid")
    q = samples.q
    lo, hi = q.min(axis=0), q.max(axis=0)
    if np.any(hi <= lo):
        raise InvalidInputError("every coordinate must take at least two distinct values in "
                                "the samples")
    knots = [fit_knots(lo[a], hi[a], grid[a], k) for a in range(n)]
    W = bspline.tensor_basis(knots, k, q)[0]  # (N, P)
    metric = SE3Metric(length_scale)
    omega = samples.weights / samples.weights.sum()
    twists = DEFAULT_BASIS_TWISTS
    centre = 0.5 * (lo + hi)
    H = samples.poses[int(np.argmin(np.sum(((q - centre) / (hi - lo)) ** 2, axis=1)))]
    # (a) coordinatewise weighted least squares, also the start of (b)
    sq = np.sqrt(omega)[:, None]
    Y = _coordinatewise_targets(H, samples.poses)
    grid_samples = _grid(q) if np.all(omega == omega[0]) else None
    if grid_samples is not None:
        values, flat = grid_samples
        C, rank = _grid_least_squares(
            [bspline.basis_matrix(knots[a], k, values[a], 0)[0] for a in range(n)], flat, Y)
    else:
        C, rank = _least_squares(W * sq, Y * sq)
    note = ""
    if rank < P:
        distinct = " x ".join(str(np.unique(q[:, a]).size) for a in range(n))
        note = (f"the {samples.size} samples determine only {rank} of the {P} control points of "
                f"the {'x'.join(map(str, grid))} grid (the rank of the B-spline basis at their "
                f"coordinates, which take {distinct} distinct values per axis): the others are "
                "the least-squares minimum-norm choice, not held by data; check the report's "
                "held-out error, and use a coarser grid or capture samples where the grid has "
                "none")
        warnings.warn(note, UserWarning, stacklevel=2)
    sw = metric.sqrt_weights

    def objective(Cf):
        t = surface_terms(H, twists, Cf, W, jacobian=False)
        r = metric.residuals(t["G"], samples.poses)
        return float(np.sum(omega * np.sum((r * sw) ** 2, axis=1)))

    F = objective(C)
    trace = [F]
    status, iterations = "converged", 0
    if method == "se3":
        status, iterations, C, trace = _lm(H, twists, C, W, samples.poses, omega, metric,
                                           max_iterations, tol, trace)
    joint = SplineJoint(knots, C.reshape((6,) + grid), order=k, basis_twists=twists, offset=H)
    report = make_report(joint_poses(joint, q), samples.poses, status=status,
                         iterations=iterations, trace=trace, method=f"surface-{method}",
                         length_scale=metric.length_scale,
                         heldout=midpoint_errors(joint, q, samples.poses),
                         message=f"{'x'.join(map(str, grid))} control grid, {method}: {status}"
                                 + (f"; {note}" if note else ""))
    return FitResult(joint=joint, report=report)


def residual_jacobian(H, twists, C, W, targets, metric):
    """Weighted residuals ``(N, 6)`` and their Jacobian ``(N, 6, m P)`` with respect to the
    flattened coefficients (analytic, see the module docstring)."""
    t = surface_terms(H, twists, C, W)
    r = metric.residuals(t["G"], targets)
    D = -se3.left_jacobian_inv(r) @ np.swapaxes(t["sigma"], 1, 2)  # (N, 6, m)
    J = (D[:, :, :, None] * W[:, None, None, :]).reshape(r.shape[0], 6, -1)
    sw = metric.sqrt_weights
    return r * sw, J * sw[None, :, None]


def _lm(H, twists, C, W, targets, omega, metric, max_iterations, tol, trace):
    lam = 1e-4
    F = trace[-1]
    shape = C.shape
    r, J = residual_jacobian(H, twists, C, W, targets, metric)
    it = 0
    status = "max_iterations"
    while it < max_iterations:
        it += 1
        Jw = J * np.sqrt(omega)[:, None, None]
        Jf = Jw.reshape(-1, J.shape[2])
        A = Jf.T @ Jf
        g = Jf.T @ (r * np.sqrt(omega)[:, None]).reshape(-1)
        d = np.diag(A)
        floor = 1e-12 * max(d.max(), 1e-300)
        try:
            step = -np.linalg.solve(A + np.diag(lam * (d + floor) + floor), g)
        except np.linalg.LinAlgError:
            lam *= 10.0
            continue
        Cn = C + step.reshape(shape)
        t = surface_terms(H, twists, Cn, W, jacobian=False)
        rn = metric.residuals(t["G"], targets)
        Fn = float(np.sum(omega * np.sum((rn * metric.sqrt_weights) ** 2, axis=1)))
        if np.isfinite(Fn) and Fn < F:
            decrease = F - Fn
            C, F = Cn, Fn
            trace.append(F)
            lam = max(lam / 5.0, 1e-12)
            if decrease <= tol * F or F < 1e-28:
                status = "converged"
                break
            r, J = residual_jacobian(H, twists, C, W, targets, metric)
        else:
            lam *= 8.0
            if lam > 1e12:
                status = "converged" if np.linalg.norm(g) <= 1e-6 * np.sqrt(max(F, 1e-300)) \
                    else "diverged"
                break
    return status, it, C, trace
