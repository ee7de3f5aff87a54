"""Fitting 1-DOF spline curve joints to sampled poses (seed 000 sections 6.1-6.3).

The spline curve joint (eqs. 21-24) is ``G(q) = G_{i0} prod_{l=1}^{k-1} exp(Bc_{i0+l}(q) z_{i0+l})``
on the knot span ``[t_mu, t_mu+1)``, ``i0 = mu - k + 1``, with control frames ``G_i``, their
relative twists ``z_i = log(G_{i-1}^-1 G_i)`` and the cumulative basis ``Bc`` (eq. 22).

Data fitting (eqs. 31-36). Each iteration moves every control frame by a body twist,
``G_i <- G_i exp(u_i)``, and linearizes the pose at every sample: ``G(q_s) <- G(q_s) exp(M_s u)``
with ``u = (u_0, ..., u_{n-1})``. The printed eqs. 33-34 are rebuilt here from eq. 24 exactly:
with ``x_l = Bc_{i0+l} z_{i0+l}``, ``T_l = exp(x_{l+1}) ... exp(x_{k-1})`` (``T_{k-1} = I``),

    dz_i   = Jr(z_i)^-1 (u_i - Ad_{exp(-z_i)} u_{i-1})                        (eq. 33, exact)
    M_s u  = Ad_{T_0^-1} u_{i0} + sum_l Ad_{T_l^-1} Jr(x_l) Bc_{i0+l} dz_{i0+l}   (eq. 34)

Setting the Jacobians ``Jr`` to the identity gives the paper's approximation, in which the
blocks collapse to the regular B-spline weights ``B_j Ad_{T_j^-1}`` of eq. 34. The desired
velocities are ``u_d = log(G(q_s)^-1 G_s)`` (eq. 36) and, since ``exp(-d) exp(r) =
exp(r - Jl(r)^-1 d)``, the rows are premultiplied by ``Jl(r_s)^-1`` (the identity for small
residuals). The normal equations of ``M u = u_d`` (eq. 35) in the metric are block banded
(bandwidth ``6k``) and solved with scipy's sparse solver (:func:`scipy.sparse.linalg.spsolve`)
with Levenberg-Marquardt damping: a step is kept only if the objective decreases, so the trace
never increases.

Closed curves (:func:`fit_closed_spline_curve`) fit the n control frames of one period: the
wrapped spline's frames ``G_{j mod n}`` are evaluated as an open curve and the normal equations
of the copies folded onto their originals.

Smoothing (eqs. 37-43). The joint Hessian ``h(q) = dS/dq`` (a twist for 1 DOF) is computed
analytically from the same product, and the combined objective
``(1 - w) mean ||u_d||^2 + w mean ||h||^2`` is minimized; ``N`` (eq. 42), the map from control
frame velocities to ``h_dot``, chains central differences of ``h`` in the span twists (the
paper notes numerical differentiation is simple and effective here) with the exact twist
rates of eq. 33, and the target rate is ``h_dot_d = -c h`` (eq. 43).
"""

import warnings

import numpy as np
from scipy.sparse import csc_matrix
from scipy.sparse.linalg import spsolve

from .. import bspline
from ..errors import InvalidInputError
from ..lie import se3, so3
from .metric import DEFAULT_LENGTH_SCALE, SE3Metric
from ..checks import real_number, whole_number
from .report import FitResult, joint_poses, make_report, midpoint_errors
from .samples import JointSamples

__all__ = ["fit_spline_curve", "fit_closed_spline_curve", "curve_terms", "hessian_jacobian",
           "initial_frames", "fit_knots",
           "adaptive_knots", "levenberg_marquardt", "determined_frames"]

_FD_STEP = 1e-6


def fit_knots(q_min, q_max, n_frames, order):
    """Uniform knot vector ``(n_frames + order,)`` whose domain is exactly ``[q_min, q_max]``."""
    spacing = (q_max - q_min) / (n_frames - order + 1)
    return bspline.uniform_knots(n_frames, order, start=q_min, spacing=spacing)


def curve_terms(frames, knots, order, qs, hessian=False, blocks=True):
    """Poses, the eq. 34 Jacobian blocks and (optionally) the joint Hessian at many ``qs``.

    frames: (n, 4, 4) control frames; knots: (n + k,); qs: (N,) inside the domain.
    Returns dict: ``G`` (N, 4, 4); ``i0`` (N,) first active control frame; ``C`` (N, k, 6, 6)
    with ``C[s, l]`` the block of ``u_{i0+l}`` in ``M_s`` (omitted unless ``blocks``); if
    ``hessian``: ``S`` (N, 6) the joint Jacobian (eq. 27), ``h`` (N, 6) its derivative
    ``dS/dq`` and ``span`` (the span's twist indices, twists and basis values, for
    :func:`hessian_jacobian`).
    """
    k = order
    n = frames.shape[0]
    z = np.zeros((n, 6))
    z[1:] = se3.log(se3.inv(frames[:-1]) @ frames[1:])
    span = bspline.find_span(knots, k, qs)
    cb = bspline.cumulative_basis(knots, k, qs, nderiv=2 if hessian else 0)
    N = qs.shape[0]
    i0 = span - k + 1
    rows = np.arange(N)
    idx = i0[:, None] + np.arange(1, k)[None, :]  # (N, k-1)
    b = cb[0][rows[:, None], idx]  # (N, k-1)
    zl = z[idx]  # (N, k-1, 6)
    x = b[..., None] * zl
    E = se3.exp(x)  # (N, k-1, 4, 4)
    tails = [np.broadcast_to(np.eye(4), (N, 4, 4))]
    for l in range(k - 1, 0, -1):  # T_{l-1} = exp(x_l) T_l
        tails.append(E[:, l - 1] @ tails[-1])
    tails = np.stack(tails[::-1], axis=1)  # (N, k, 4, 4): tails[:, l] = T_l
    G = frames[i0] @ tails[:, 0]
    AdTi = se3.Ad_inv(tails)  # (N, k, 6, 6)
    out = {"G": G, "i0": i0}
    if blocks:
        Jinv_z = se3.right_jacobian_inv(z[1:])  # (n-1, 6, 6)
        Ad_ez = se3.Ad_inv(np.concatenate([np.eye(4)[None], se3.exp(z[1:])]))  # (n, 6, 6)
        A = AdTi[:, 1:] @ se3.right_jacobian(x) * b[..., None, None] @ Jinv_z[idx - 1]
        C = np.empty((N, k, 6, 6))
        C[:, 0] = AdTi[:, 0]
        C[:, 1:] = A
        C[:, :-1] -= A @ Ad_ez[idx]
        out["C"] = C
    if hessian:
        db = cb[1][rows[:, None], idx]
        d2b = cb[2][rows[:, None], idx]
        out["S"], out["h"] = _velocity_and_hessian(AdTi[:, 1:], zl, db, d2b)
        out["span"] = (idx, zl, b, db, d2b)
    return out


def determined_frames(knots, order, sites):
    """How many control frames the sample coordinates determine: ``knots (n + k,)``, sorted
    distinct ``sites (N,)`` -> an int ``<= n``.

    A frame is determined only through samples where its B-spline acts; the collocation matrix
    of a B-spline basis has full rank n exactly when distinct sites can be assigned to distinct
    basis functions with each site inside its function's support (Schoenberg-Whitney), and the
    largest such assignment is its rank. With basis supports ordered along the axis, taking
    for each function in turn the first free site inside its support finds the largest one.
    """
    B = bspline.basis_matrix(knots, order, sites)[0] > 0.0  # (N, n)
    count, first_free = 0, 0
    for j in range(B.shape[1]):
        rows = np.flatnonzero(B[first_free:, j])
        if rows.size:
            first_free += int(rows[0]) + 1
            count += 1
    return count


def adaptive_knots(qs, poses, n_frames, order, length_scale, floor=0.2):
    """Knots ``(n_frames + order,)`` with the domain ``[qs[0], qs[-1]]`` whose interior knots
    equidistribute ``|f^(4)|^(1/4)`` of the sampled motion (de Boor's knot placement for cubic
    approximation; the spacing stays within about ``1/floor`` of uniform).

    The motion is read as a Euclidean curve ``f(q) = [L log(R_ref^T R(q)); p(q)]`` (metres, the
    metric's weighting), fitted by least squares with twice as many uniform spans; the jumps of
    its third derivative at the knots estimate ``f^(4)``. qs: (N,) ascending; poses (N, 4, 4).
    """
    k = order
    ref = poses[poses.shape[0] // 2, :3, :3]
    y = np.concatenate([length_scale * so3.log(ref.T @ poses[:, :3, :3]), poses[:, :3, 3]],
                       axis=1)
    m = min(max(2 * n_frames, 2 * k), max(qs.size - 1, k))
    t = bspline.clamped_knots(m, k, qs[0], qs[-1])
    B = bspline.basis_matrix(t, k, qs)[0]
    coef = np.linalg.lstsq(B, y, rcond=None)[0]
    edges = t[k - 1:m + 1]
    width = np.diff(edges)
    mids = 0.5 * (edges[:-1] + edges[1:])
    d3 = bspline.basis_matrix(t, k, mids, nderiv=k - 1)[k - 1] @ coef  # (spans, 6)
    jumps = np.linalg.norm(np.diff(d3, axis=0), axis=1) / (0.5 * (width[:-1] + width[1:]))
    f4 = np.zeros(width.size)
    f4[:-1] += 0.5 * jumps
    f4[1:] += 0.5 * jumps
    rho = f4 ** 0.25
    mean = np.sum(rho * width) / np.sum(width)
    if not mean > 0.0:
        return fit_knots(qs[0], qs[-1], n_frames, k)
    rho = np.maximum(rho, floor * mean)
    cum = np.concatenate([[0.0], np.cumsum(rho * width)])
    inner = np.interp(np.linspace(0.0, cum[-1], n_frames - k + 2), cum, edges)
    inner[0], inner[-1] = qs[0], qs[-1]
    d0, d1 = inner[1] - inner[0], inner[-1] - inner[-2]
    return np.concatenate([inner[0] - d0 * np.arange(k - 1, 0, -1), inner,
                           inner[-1] + d1 * np.arange(1, k)])


def _velocity_and_hessian(AdTi, zl, db, d2b):
    """``S`` and ``h = dS/dq`` (N, 6) of ``T_0 = prod_l exp(b_l z_l)`` from ``AdTi[:, l] =
    Ad_{T_l^-1}`` (N, k-1, 6, 6), the twists ``zl`` (N, k-1, 6) and ``db, d2b`` (N, k-1).

    ``S = sum_l sigma_l b'_l`` with ``sigma_l = Ad_{T_l^-1} z_l`` (eq. 27), and since
    ``d/dq Ad_{T_l^-1} = -ad_{V_l} Ad_{T_l^-1}`` with ``V_l = sum_{m > l} sigma_m b'_m``,
    ``h = sum_l (sigma_l b''_l + b'_l ad_{sigma_l} V_l)``.
    """
    sigma = np.einsum("nlij,nlj->nli", AdTi, zl)
    vel = sigma * db[..., None]
    V = np.cumsum(vel[:, ::-1], axis=1)[:, ::-1] - vel
    h = np.einsum("nl,nli->ni", d2b, sigma) + np.einsum("nl,nlij,nlj->ni", db, se3.ad(sigma), V)
    return vel.sum(axis=1), h


def _hessian_from_twists(zl, b, db, d2b):
    """``h`` (N, 6) from the span twists and basis values alone (see curve_terms)."""
    N, m = b.shape
    E = se3.exp(b[..., None] * zl)
    tails = np.empty((N, m, 4, 4))
    tails[:, m - 1] = np.eye(4)
    for l in range(m - 2, -1, -1):
        tails[:, l] = E[:, l + 1] @ tails[:, l + 1]
    return _velocity_and_hessian(se3.Ad_inv(tails), zl, db, d2b)[1]


def hessian_jacobian(frames, span):
    """``N`` of eq. 42: ``d h(q_s) / d u`` (N, 6, 6n) for control frame velocities ``u``.

    ``h`` depends on the frames only through the span twists ``z``; ``dh/dz`` is taken by
    central differences in ``z`` (batched over the samples; the paper notes numerical
    differentiation is simple and effective here) and chained with the exact
    ``dz_i = Jr(z_i)^-1 (u_i - Ad_{exp(-z_i)} u_{i-1})`` (eq. 33). span: ``curve_terms(...,
    hessian=True)["span"]``.
    """
    idx, zl, b, db, d2b = span
    N, m = b.shape
    n = frames.shape[0]
    eps = _FD_STEP
    D = np.empty((N, m, 6, 6))  # D[s, l, :, d] = dh / dz_l[d]
    for l in range(m):
        for d in range(6):
            zp = zl.copy()
            zp[:, l, d] += eps
            zm = zl.copy()
            zm[:, l, d] -= eps
            D[:, l, :, d] = (_hessian_from_twists(zp, b, db, d2b)
                             - _hessian_from_twists(zm, b, db, d2b)) / (2.0 * eps)
    DJ = D @ se3.right_jacobian_inv(zl)  # d h / d(u_j - Ad u_{j-1})
    prev = -DJ @ se3.Ad_inv(se3.exp(zl))
    Nh = np.zeros((N, 6, n, 6))
    rows = np.arange(N)
    for l in range(m):
        Nh[rows, :, idx[:, l], :] += DJ[:, l]
        Nh[rows, :, idx[:, l] - 1, :] += prev[:, l]
    return Nh.reshape(N, 6, 6 * n)


def initial_frames(samples_q, poses, knots, order):
    """Starting control frames: the sampled motion, interpolated (and extrapolated) along
    geodesics between neighbouring samples, at the Greville abscissae of the knots.

    samples_q: (N,) sorted ascending; poses: (N, 4, 4); knots: (n + k,). Returns (n, 4, 4).
    """
    k = order
    n = knots.size - k
    grev = np.array([knots[i + 1:i + k].mean() for i in range(n)])
    j = np.clip(np.searchsorted(samples_q, grev) - 1, 0, samples_q.size - 2)
    s = (grev - samples_q[j]) / (samples_q[j + 1] - samples_q[j])
    rel = se3.log(se3.inv(poses[j]) @ poses[j + 1])
    return poses[j] @ se3.exp(s[:, None] * rel)


def _normal_equations(J, r, i0, weights, n, k):
    """``A = sum_s w_s J_s^T J_s`` (6n, 6n) and ``g = sum_s w_s J_s^T r_s`` (6n,) for per-sample
    rows ``J: (N, m, 6k)`` and residuals ``r: (N, m)`` placed at columns
    ``6 i0 .. 6 (i0 + k)``."""
    A = np.zeros((6 * n, 6 * n))
    g = np.zeros(6 * n)
    Jt = np.swapaxes(J, 1, 2) * weights[:, None, None]
    blocks = np.matmul(Jt, J)
    grads = np.matmul(Jt, r[:, :, None])[:, :, 0]
    for start in np.unique(i0):
        sel = i0 == start
        c = slice(6 * start, 6 * (start + k))
        A[c, c] += blocks[sel].sum(axis=0)
        g[c] += grads[sel].sum(axis=0)
    return A, g


def _solve_sparse(A, g):
    """Solve the symmetric positive definite, block-banded system ``A x = g`` with SuperLU.

    (LAPACK's banded Cholesky is as fast on an idle machine, but its OpenBLAS threads stall
    for 100+ ms per call when the cores are shared; the sparse LU does not.)
    """
    x = spsolve(csc_matrix(A), g)
    if not np.all(np.isfinite(x)):
        raise np.linalg.LinAlgError("singular damped normal equations")
    return x


class _CurveProblem:
    """The objective ``(1 - w) sum_s omega_s ||r_s||^2 / sum omega + w mean_s ||h_s||^2``
    (norms in the metric) and its Gauss-Newton model around given control frames."""

    def __init__(self, qs, targets, weights, knots, order, metric, smoothing, rate):
        self.qs, self.targets, self.knots, self.k = qs, targets, knots, order
        self.omega = weights / weights.sum()
        self.metric = metric
        self.w = smoothing
        self.rate = rate
        self.sw = metric.sqrt_weights

    def evaluate(self, frames, linearize):
        smooth = self.w > 0.0
        t = curve_terms(frames, self.knots, self.k, self.qs, hessian=smooth, blocks=linearize)
        r = self.metric.residuals(t["G"], self.targets)
        F = (1.0 - self.w) * np.sum(self.omega * np.sum((r * self.sw) ** 2, axis=1))
        if smooth:
            F += self.w * np.mean(np.sum((t["h"] * self.sw) ** 2, axis=1))
        if not linearize:
            return F, t
        n, k = frames.shape[0], self.k
        J = -se3.left_jacobian_inv(r) @ t["C"].transpose(0, 2, 1, 3).reshape(-1, 6, 6 * k)
        J = J * self.sw[None, :, None]
        rw = r * self.sw
        A, g = _normal_equations(J, rw, t["i0"], self.omega, n, k)
        A *= 1.0 - self.w
        g *= 1.0 - self.w
        if smooth:
            Nh = hessian_jacobian(frames, t["span"]) * self.sw[None, :, None]  # (N, 6, 6n)
            hw = t["h"] * self.sw
            wn = self.w / self.qs.size
            A += wn * np.einsum("sai,saj->ij", Nh, Nh)
            # h_dot_d = -c h (eq. 43): the rows ask N u = -c h
            g += wn * self.rate * np.einsum("sai,sa->i", Nh, hw)
        return F, t, A, g  # step solves A u = -g


def levenberg_marquardt(problem, frames, max_iterations, tol):
    """Damped Gauss-Newton over control frames ``(n, 4, 4)``, moved as ``G_i exp(u_i)``.

    ``problem.evaluate(frames, linearize)`` returns ``(F, terms)``, or with ``linearize``
    ``(F, terms, A, g)``: the objective, anything, and the Gauss-Newton model whose step
    solves ``A u = -g`` (``A: (6n, 6n)``). A step is kept only if ``F`` decreases.
    Returns ``(frames, status, iterations, trace)``: status "converged" (relative decrease
    below ``tol``, or stationary to round-off), "max_iterations" or "diverged" (``F`` not
    finite at the start, or no damped step decreases it away from a stationary point);
    ``trace`` lists the accepted objectives.
    """
    lam = 1e-4
    F, _, A, g = problem.evaluate(frames, True)
    trace = [F]
    if not np.isfinite(F):
        return frames, "diverged", 0, trace
    it = 0
    status = "max_iterations"
    while it < max_iterations:
        it += 1
        diag = np.diag(A).copy()
        floor = 1e-12 * max(diag.max(), 1e-300)
        damped = A + np.diag(lam * (diag + floor) + floor)
        try:
            step = -_solve_sparse(damped, g)
        except np.linalg.LinAlgError:
            lam *= 10.0
            continue
        cand = frames @ se3.exp(step.reshape(-1, 6))
        F_new, _ = problem.evaluate(cand, False)
        if np.isfinite(F_new) and F_new < F:
            decrease = F - F_new
            frames, F = cand, F_new
            trace.append(F)
            lam = max(lam / 5.0, 1e-12)
            if decrease <= tol * F or np.abs(step).max() < 1e-13 or F < 1e-28:
                status = "converged"
                break
            F, _, A, g = problem.evaluate(frames, True)
        else:
            lam *= 8.0
            if lam > 1e12:
                # no descent left along any damped direction: stationary to round-off
                gnorm = np.linalg.norm(g)
                status = "converged" if gnorm <= 1e-8 * max(F, 1e-300) ** 0.5 or F < 1e-20 \
                    else "diverged"
                break
    return frames, status, it, trace


def fit_spline_curve(samples, n_frames=8, order=4, smoothing=0.0,
                     length_scale=DEFAULT_LENGTH_SCALE, hessian_rate=1.0, knots="adaptive",
                     max_iterations=50, tol=1e-10):
    """Fit a 1-DOF spline curve joint to samples (seed 000 sections 6.1-6.3).

    Args:
        samples: :class:`JointSamples` (or an (N, 4, 4) array of ordered poses). With
            coordinates, the joint's coordinate is the sample coordinate; without, the poses
            are parameterized naturally (section 6.1) with the metric's length scale.
        n_frames: number of control frames n (>= order). More than the samples determine
            (:func:`determined_frames`) are fitted with a UserWarning, repeated in the report's
            message, naming how many they support: the extra frames are held between samples
            only by their start guess and the smoothing term (seed 000 section 6.3), which the
            report's held-out error measures.
        order: spline order k (4 = cubic, C2).
        smoothing: Hessian weight w in [0, 1) (eq. 43); 0 fits the data only.
        length_scale: metres of translation weighed like one radian of rotation
            (:class:`SE3Metric`).
        hessian_rate: c in ``h_dot_d = -c h``, 0 < c <= 1.
        knots: "adaptive" (default: :func:`adaptive_knots`, denser where the motion bends),
            "uniform" (:func:`fit_knots`), or a full knot vector ``(n_frames + order,)``
            whose domain contains the sample coordinates. The domain of the first two is the
            sample range.
        max_iterations: cap on solver iterations (>= 1); tol: relative objective decrease to
            stop, in [0, 1).

    Returns :class:`FitResult` with ``joint`` (a SplineCurveJoint) and ``report``
    (:class:`FitReport`; ``report.status`` says whether it converged). The report's errors
    are the returned joint's at the samples, and its held-out errors the joint's between
    neighbouring samples (:func:`core.fitting.report.midpoint_errors`). Settings are checked
    before any work; InvalidInputError says which one is wrong, and is raised too when the
    fitted joint cannot evaluate the sample coordinates (e.g. coordinates beyond 1e15).
    """
    from ..joints.spline_curve import SplineCurveJoint

    if not isinstance(samples, JointSamples):
        samples = JointSamples(samples)
    if samples.n_coordinates != 1:
        raise InvalidInputError(f"fit_spline_curve fits 1-DOF joints; the samples have "
                                f"{samples.n_coordinates} coordinates: use fit_spline_surface")
    k = whole_number(order, "order", 2, "4 is cubic")
    n = whole_number(n_frames, "n_frames", k, f"a spline of order {k} needs at least {k} "
                     "control frames")
    smoothing = real_number(smoothing, "smoothing", 0.0, 1.0, high_open=True,
                            advice="0 fits the data only, 1e-3 smooths lightly")
    hessian_rate = real_number(hessian_rate, "hessian_rate", 0.0, 1.0, low_open=True)
    max_iterations = whole_number(max_iterations, "max_iterations", 1)
    tol = real_number(tol, "tol", 0.0, 1.0, high_open=True,
                      advice="it is the relative objective decrease at which to stop, e.g. 1e-10")
    samples.require(k, f"an order-{k} spline")
    metric = SE3Metric(length_scale)
    qs = samples.q[:, 0] if samples.q is not None else samples.natural_parameters(length_scale)
    order_idx = np.argsort(qs, kind="stable")
    qs, poses, weights = qs[order_idx], samples.poses[order_idx], samples.weights[order_idx]
    note = ""
    if isinstance(knots, str) and knots in ("adaptive", "uniform"):
        rule = knots

        def place(m):
            if rule == "adaptive":
                return adaptive_knots(qs, poses, m, k, metric.length_scale)
            return fit_knots(qs[0], qs[-1], m, k)

        knots = place(n)
        if determined_frames(knots, k, qs) < n:
            supported = next((m for m in range(min(n, qs.size), k - 1, -1)
                              if determined_frames(place(m), k, qs) == m), k)
            note = (f"{n} control frames are more than the {qs.size} samples determine (with "
                    f"{rule} knots they support {supported})")
    elif isinstance(knots, str):
        raise InvalidInputError(f"knots must be 'adaptive', 'uniform' or an array, got {knots!r}")
    else:
        knots = bspline.check_knots(knots, k)
        if knots.size != n + k:
            raise InvalidInputError(f"knots must have n_frames + order = {n + k} entries, "
                                    f"got {knots.size}")
        lo, hi = bspline.domain(knots, k)
        if qs[0] < lo or qs[-1] > hi:
            raise InvalidInputError(f"the sample coordinates [{qs[0]:.6g}, {qs[-1]:.6g}] leave "
                                    f"the knots' domain [{lo:.6g}, {hi:.6g}]; widen the knots")
        supported = determined_frames(knots, k, qs)
        if supported < n:
            note = (f"the {qs.size} samples determine only {supported} of the {n} control frames "
                    "of the given knots (the others act where no sample is)")
    if note:
        note += (": between samples the extra frames are held by their start guess and the "
                 "smoothing term, not by data; check the report's held-out error, and use fewer "
                 "control frames or capture more samples")
        warnings.warn(note, UserWarning, stacklevel=2)
    frames = initial_frames(qs, poses, knots, k)
    problem = _CurveProblem(qs, poses, weights, knots, k, metric, smoothing, hessian_rate)
    frames, status, iterations, trace = levenberg_marquardt(problem, frames, max_iterations, tol)
    t = curve_terms(frames, knots, k, qs, hessian=True, blocks=False)
    hnorm = float(np.mean(metric.norm(t["h"])))
    inverse = np.empty_like(order_idx)
    inverse[order_idx] = np.arange(order_idx.size)
    joint = SplineCurveJoint(frames, knots=knots, order=k)
    G = joint_poses(joint, qs[:, None])
    report = make_report(
        G[inverse], poses[inverse], status=status, iterations=iterations, trace=trace,
        method="curve", length_scale=metric.length_scale, smoothing=smoothing,
        mean_hessian_norm=hnorm, heldout=midpoint_errors(joint, qs[:, None], poses),
        message=f"{n} control frames, order {k}: {status} after {iterations} iterations"
                + (f"; {note}" if note else ""))
    return FitResult(joint=joint, report=report)


class _ClosedCurveProblem:
    """A :class:`_CurveProblem` over the ``n`` control frames of one period of a closed curve:
    the wrapped spline's frames ``G_{j mod n}`` (``j < n + k - 1``, as
    :class:`~core.joints.spline_curve.ClosedSplineCurveJoint` wraps them) are evaluated by the
    open problem, and its normal equations ``(6 (n + k - 1),)^2`` folded onto the loop frames
    (a wrapped copy moves with its original)."""

    def __init__(self, open_problem, n):
        self.inner, self.n = open_problem, n
        self.wrap = np.arange(n + open_problem.k - 1) % n

    def evaluate(self, frames, linearize):
        out = self.inner.evaluate(frames[self.wrap], linearize)
        if not linearize:
            return out
        F, t, A, g = out
        m = 6 * self.n
        tail = A.shape[0] - m                  # the copies G_0 .. G_{k-2} at the end
        Af = A[:m, :m].copy()
        Af[:, :tail] += A[:m, m:]
        Af[:tail, :] += A[m:, :m]
        Af[:tail, :tail] += A[m:, m:]
        gf = g[:m].copy()
        gf[:tail] += g[m:]
        return F, t, Af, gf


def fit_closed_spline_curve(samples, period, n_frames=8, order=4,
                            length_scale=DEFAULT_LENGTH_SCALE, max_iterations=50, tol=1e-10):
    """Fit a closed 1-DOF spline curve joint (seed 000 sections 6.1-6.2, periodic) to samples.

    Args:
        samples: :class:`JointSamples` with coordinates (N, 1): the poses of one period.
        period: the coordinate's period P (> 0); sample coordinates are taken modulo P.
        n_frames: control frames n of the loop (>= order); the knots are uniform,
            ``h = P / n`` apart, so the joint's coordinate is the samples' one.
        order, length_scale, max_iterations, tol: as in :func:`fit_spline_curve` (no
            smoothing term: the loop's frames are fitted to the data only).

    Returns :class:`FitResult` with a :class:`~core.joints.spline_curve.ClosedSplineCurveJoint`
    (``spacing = P / n``, period P) and its report (errors at the samples and held out
    between them). The start guess interpolates the samples geodesically (periodically) at
    the Greville abscissae of the wrapped knots; the Levenberg-Marquardt iteration is
    :func:`levenberg_marquardt`'s.
    """
    from ..joints.spline_curve import ClosedSplineCurveJoint

    if not isinstance(samples, JointSamples) or samples.q is None or samples.n_coordinates != 1:
        raise InvalidInputError("fit_closed_spline_curve needs JointSamples with one "
                                "coordinate per sample (the position round the loop)")
    P = real_number(period, "period", 0.0, low_open=True)
    k = whole_number(order, "order", 2, "4 is cubic")
    n = whole_number(n_frames, "n_frames", k, f"a closed spline of order {k} needs at least "
                     f"{k} control frames")
    max_iterations = whole_number(max_iterations, "max_iterations", 1)
    tol = real_number(tol, "tol", 0.0, 1.0, high_open=True,
                      advice="it is the relative objective decrease at which to stop, e.g. 1e-10")
    samples.require(k, f"an order-{k} spline")
    metric = SE3Metric(length_scale)
    qs = np.mod(samples.q[:, 0], P)
    qs = np.where(qs >= P, 0.0, qs)               # mod of a tiny negative number rounds to P
    order_idx = np.argsort(qs, kind="stable")
    qs, poses, weights = qs[order_idx], samples.poses[order_idx], samples.weights[order_idx]
    h = P / n
    knots = bspline.uniform_knots(n + k - 1, k, spacing=h)
    around = np.concatenate([qs - P, qs, qs + P])
    frames = initial_frames(around, np.concatenate([poses] * 3), knots[:n + k], k)
    problem = _ClosedCurveProblem(
        _CurveProblem(qs, poses, weights, knots, k, metric, 0.0, 1.0), n)
    frames, status, iterations, trace = levenberg_marquardt(problem, frames, max_iterations, tol)
    joint = ClosedSplineCurveJoint(frames, k, spacing=h)
    G = joint_poses(joint, qs[:, None])
    inverse = np.empty_like(order_idx)
    inverse[order_idx] = np.arange(order_idx.size)
    report = make_report(
        G[inverse], poses[inverse], status=status, iterations=iterations, trace=trace,
        method="curve", length_scale=metric.length_scale,
        heldout=midpoint_errors(joint, qs[:, None], poses),
        message=f"closed curve, {n} control frames, order {k}: {status} after {iterations} "
                "iterations")
    return FitResult(joint=joint, report=report)
