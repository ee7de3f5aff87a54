"""The one constrained-system solver of the maximal-coordinate package.

Every solver in :mod:`core.maximal` (Hakenberg skeletons, ArtiSynth-style couplings, Faure's
assembly) reduces to the same mass-weighted projection (seed 004 eq. 13, seed 001 eq. 6):

    A lam = b,   A = J M^-1 J^T,   dx = M^-1 J^T lam,

with a sparse constraint Jacobian ``J: (m, n)`` and a sparse block-diagonal inverse mass
``M^-1: (n, n)``. ``dx`` is the smallest correction in the kinetic-energy metric with
``J dx = b``. The helpers below build ``J`` and ``M^-1`` for rigid bodies with array operations
(no per-constraint Python loop) and apply rigid displacements.

Rigid-body velocity layout used by the couplings and the assembly: per body six entries
``[w; v]`` (angular first, project convention), ``w`` the angular velocity in world
coordinates and ``v`` the velocity of the centre of mass in world coordinates. A body with
zero inverse mass and zero inverse inertia does not move (a grounded or dragged target).
"""

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .. import backend as _backend
from ..errors import InvalidInputError, NonFiniteError, SimulationError
from ..integrators import diverged
from ..lie import so3

__all__ = ["ProjectionResult", "project", "world_inverse_mass", "rigid_jacobian",
           "point_rows", "apply_displacement", "step_failure"]

METHODS = ("cg", "direct", "lsqr")


@dataclass(frozen=True)
class ProjectionResult:
    """Outcome of :func:`project`.

    Attributes:
        dx: ``(n,)`` correction ``M^-1 J^T lam``.
        lam: ``(m,)`` multipliers.
        iterations: iterations used by the linear solver (0 for ``direct``).
        residual: ``|A lam - b|`` (Euclidean).
        converged: False when the iteration cap stopped CG/LSQR before ``tol``.
    """

    dx: np.ndarray
    lam: np.ndarray
    iterations: int
    residual: float
    converged: bool


def project(J, minv, b, method="cg", tol=1e-12, maxiter=None, x0=None, J_force=None,
            regularization=0.0, preconditioner="jacobi"):
    """Solve ``(J M^-1 J^T) lam = b`` and return ``dx = M^-1 J^T lam`` (seed 004 eq. 13).

    Small systems may come dense: when ``J`` and ``minv`` are both numpy arrays, ``A`` is
    formed with dense products (no sparse-matrix construction, which dominates the cost of a
    few bodies' solves) and solved by the same method (CG: scipy's, on the dense ``A``;
    direct: LAPACK's ``solve``).

    Args:
        J: sparse or dense ``(m, n)`` constraint Jacobian.
        minv: inverse mass, sparse/dense ``(n, n)`` or its diagonal ``(n,)``.
        b: ``(m,)`` right-hand side (displacement, velocity or acceleration constraint).
        method: ``"cg"`` (Jacobi-preconditioned conjugate gradients: scipy's, or on the
            numba backend the same iteration compiled, :func:`core.compiled.projection.cg`;
            handles the positive semidefinite systems of redundant constraints when ``b``
            is consistent), ``"direct"``
            (sparse LU via ``spsolve``; needs full row rank) or ``"lsqr"`` (minimum-norm
            least squares, the pseudoinverse solution of seed 001).
        tol: relative tolerance for CG/LSQR.
        maxiter: iteration cap for CG/LSQR (``None``: scipy's default); the seed 004 knob
            that trades accuracy for speed.
        x0: ``(m,)`` initial multipliers for CG.
        J_force: optional ``(m, n)`` matrix whose transpose maps multipliers to generalized
            forces when it differs from ``J`` (the skeleton's momentum-exact levers); the
            system is then ``J M^-1 J_force^T`` (unsymmetric: use ``"direct"``/``"lsqr"``).
        regularization: ``eps >= 0`` added to the diagonal of ``A`` (times its mean
            diagonal). Redundant constraints make ``A`` singular and, off the solution, the
            linearized system inconsistent; with ``eps > 0`` the correction becomes the
            damped least-squares one ``(J^T J + eps' M)^-1 J^T b`` and CG stays bounded.
        preconditioner: ``"jacobi"`` (CG preconditioned by ``diag(A)^-1``; it divides the
            condition number of badly mass-scaled structures by ~100) or ``None``.
    Returns:
        :class:`ProjectionResult`.
    """
    if method not in METHODS:
        raise InvalidInputError(f"project: method must be one of {METHODS}, got {method!r}")
    dense = isinstance(J, np.ndarray) and isinstance(minv, np.ndarray) and J_force is None
    if dense:
        J = np.asarray(J, dtype=float)
        Minv = np.diag(minv.astype(float)) if minv.ndim == 1 else minv.astype(float)
    else:
        J = sp.csr_matrix(J)
        Minv = (sp.diags(np.asarray(minv, dtype=float)) if np.ndim(minv) == 1
                else sp.csr_matrix(minv))
    m, n = J.shape
    b = np.asarray(b, dtype=float).reshape(-1)
    if Minv.shape != (n, n) or b.shape != (m,):
        raise InvalidInputError(f"project: shapes disagree: J {J.shape}, M^-1 {Minv.shape}, "
                                f"b {b.shape}; need J (m, n), M^-1 (n, n), b (m,)")
    if not np.all(np.isfinite(b)):
        raise NonFiniteError("project: b contains NaN or inf; check the constraint errors")
    if m == 0 or not np.any(b):
        return ProjectionResult(np.zeros(n), np.zeros(m), 0, 0.0, True)
    Jf = J if J_force is None else sp.csr_matrix(J_force)
    if Jf.shape != J.shape:
        raise InvalidInputError(f"project: J_force {Jf.shape} must match J {J.shape}")
    if J_force is not None and method == "cg":
        raise InvalidInputError("project: J_force makes the system unsymmetric; "
                                "use method='direct' or 'lsqr'")
    MJt = Minv @ Jf.T
    A = J @ MJt if dense else (J @ MJt).tocsr()
    if regularization:
        if regularization < 0:
            raise InvalidInputError("project: regularization must be >= 0")
        shift = regularization * max(A.diagonal().mean(), 1e-300)
        A = A + np.eye(m) * shift if dense else (A + sp.identity(m) * shift).tocsr()
    iterations = 0
    converged = True
    if method == "cg":
        count = [0]

        def _count(_xk):
            count[0] += 1

        pre = None
        if preconditioner == "jacobi":
            diag = A.diagonal()
            pre = sp.diags(np.where(diag > 0, 1.0 / np.where(diag > 0, diag, 1.0), 1.0))
        elif preconditioner is not None:
            raise InvalidInputError("project: preconditioner must be 'jacobi' or None")
        twin = _backend.twins.project_cg
        if twin is not None:
            lam, iterations, converged = twin(A, b, x0, tol, maxiter, pre)
        elif dense:
            lam, iterations, converged = _dense_cg(A, b, x0, tol, maxiter, pre)
        else:
            lam, info = spla.cg(A, b, x0=x0, rtol=tol, atol=0.0, maxiter=maxiter, M=pre,
                                callback=_count)
            iterations, converged = count[0], info == 0
    elif method == "direct":
        if dense:
            try:
                lam = np.linalg.solve(A, b)
            except np.linalg.LinAlgError:   # singular: reported below
                lam = np.full(m, np.nan)
        else:
            with warnings.catch_warnings():     # a singular A gives NaN, reported below
                warnings.simplefilter("ignore", spla.MatrixRankWarning)
                lam = np.atleast_1d(spla.spsolve(A.tocsc(), b))
    else:
        out = spla.lsqr(A, b, atol=tol, btol=tol, iter_lim=maxiter)
        lam, istop, iterations = out[0], out[1], out[2]
        converged = istop in (1, 2, 4, 5) or (istop == 0)
    if not np.all(np.isfinite(lam)):
        raise SimulationError("project: the constraint system is singular or the state "
                              "diverged (NaN multipliers); in a time step, reduce the step; "
                              "otherwise remove redundant constraints or use method='cg' or "
                              "'lsqr'")
    residual = float(np.linalg.norm(A @ lam - b))
    return ProjectionResult(np.asarray(MJt @ lam).reshape(-1), lam, int(iterations), residual,
                            bool(converged))


def _dense_cg(A, b, x0, tol, maxiter, pre):
    """``spla.cg(A, b, x0, rtol=tol, atol=0, maxiter, M=pre)`` on a dense ``A: (m, m)`` with
    numpy vector operations (scipy's operator wrapping costs more than a small system's
    products): the iteration of :func:`core.compiled.kernels.cg`. Returns ``(lam,
    iterations, converged)``."""
    m = b.size
    maxiter = 10 * m if maxiter is None else int(maxiter)
    x = np.zeros(m) if x0 is None else np.array(x0, dtype=float).reshape(m)
    dinv = np.ones(m) if pre is None else pre.diagonal()
    atol = tol * float(np.linalg.norm(b))
    r = b - A @ x if np.any(x) else b.copy()
    p, rho_prev = None, 1.0
    for it in range(maxiter):
        if float(np.sqrt(r @ r)) < atol:
            return x, it, True
        z = dinv * r
        rho = float(r @ z)
        p = z if p is None else p * (rho / rho_prev) + z
        q = A @ p
        alpha = rho / float(p @ q)
        x += alpha * p
        r -= alpha * q
        rho_prev = rho
    return x, maxiter, False


def step_failure(where, h, speed, err):
    """The SimulationError for a time step of ``h`` seconds of a maximal-coordinate solver
    (``where``, e.g. "Skeleton.step") that failed with ``err``, or None if ``err`` is not a
    divergence (an input error to pass on). A divergence is a non-finite state or solve
    (:func:`core.integrators.diverged`) or a constraint system made singular by a state the
    step moved too far (:func:`project`'s SimulationError). ``speed: (N,)`` per body at the
    start of the step names the fastest body."""
    if not (diverged(err) or isinstance(err, SimulationError)):
        return None
    body = int(np.argmax(np.nan_to_num(np.asarray(speed, dtype=float), nan=np.inf)))
    return SimulationError(f"{where} diverged at h = {h:g} s (body {body} moves fastest; "
                           f"{type(err).__name__}: {err}): the step is too large for this "
                           f"motion; reduce it, e.g. to {h / 4:g} s")


def world_inverse_mass(R, inv_inertia_body, inv_mass, dense=False):
    """Block-diagonal ``M^-1: (6N, 6N)`` for the ``[w; v]`` world layout.

    Args:
        R: ``(N, 3, 3)`` body orientations (body to world).
        inv_inertia_body: ``(N, 3, 3)`` inverse inertia about the centre of mass, body axes.
        inv_mass: ``(N,)`` inverse masses (0 for an immovable body).
        dense: a numpy array instead of a sparse matrix (small systems, see :func:`project`).
    Returns:
        csr (or dense) ``(6N, 6N)`` with blocks ``[[R I^-1 R^T, 0], [0, m^-1 1]]``.
    """
    R = np.asarray(R, dtype=float)
    N = R.shape[0]
    blocks = np.zeros((N, 6, 6))
    blocks[:, :3, :3] = R @ np.asarray(inv_inertia_body, dtype=float) @ np.swapaxes(R, 1, 2)
    blocks[:, 3:, 3:] = np.asarray(inv_mass, dtype=float)[:, None, None] * np.eye(3)
    return block_diag(blocks, dense)


def block_diag(blocks, dense=False):
    """Block diagonal from ``blocks: (N, k, k)`` without a Python loop: sparse csr, or a
    numpy array with ``dense``."""
    blocks = np.asarray(blocks, dtype=float)
    N, k, _ = blocks.shape
    if dense:
        out = np.zeros((N, k, N, k))
        out[np.arange(N), :, np.arange(N), :] = blocks
        return out.reshape(N * k, N * k)
    base = (np.arange(N) * k)[:, None, None]
    rows = np.broadcast_to(base + np.arange(k)[None, :, None], blocks.shape)
    cols = np.broadcast_to(base + np.arange(k)[None, None, :], blocks.shape)
    return sp.csr_matrix((blocks.ravel(), (rows.ravel(), cols.ravel())), shape=(N * k, N * k))


def rigid_jacobian(body_a, rows_a, body_b, rows_b, nbodies, dense=False):
    """``J: (m, 6 nbodies)`` from per-row 6-vectors acting on two bodies: sparse csr, or a
    numpy array with ``dense`` (small systems, see :func:`project`).

    Row ``r`` reads ``rows_a[r] . u_{body_a[r]} + rows_b[r] . u_{body_b[r]}``; a body index
    of ``-1`` means ground (its entries are dropped).

    Args:
        body_a, body_b: ``(m,)`` int body indices (``-1`` for ground).
        rows_a, rows_b: ``(m, 6)`` row blocks in the ``[w; v]`` layout.
        nbodies: number of bodies N.
    """
    body_a = np.asarray(body_a, dtype=int)
    body_b = np.asarray(body_b, dtype=int)
    m = body_a.shape[0]
    r = np.repeat(np.arange(m), 6)
    blocks = []
    for body, vals in ((body_a, rows_a), (body_b, rows_b)):
        vals = np.asarray(vals, dtype=float).reshape(m, 6)
        c = (body[:, None] * 6 + np.arange(6)[None, :]).ravel()
        keep = np.repeat(body >= 0, 6)
        blocks.append((vals.ravel()[keep], r[keep], c[keep]))
    data = np.concatenate([blk[0] for blk in blocks])
    rr = np.concatenate([blk[1] for blk in blocks])
    cc = np.concatenate([blk[2] for blk in blocks])
    if dense:
        out = np.zeros((m, 6 * nbodies))
        np.add.at(out, (rr, cc), data)
        return out
    return sp.csr_matrix((data, (rr, cc)), shape=(m, 6 * nbodies))


def point_rows(direction, point, com):
    """Row blocks ``[r x d; d]`` so that ``row . [w; v] = d . (v + w x r)``, ``r = point - com``.

    The velocity of a body point along ``direction``: ``direction, point, com: (m, 3) ->
    (m, 6)``. With ``direction`` a moment axis instead, use ``[d; 0]``.
    """
    d = np.asarray(direction, dtype=float)
    r = np.asarray(point, dtype=float) - np.asarray(com, dtype=float)
    return np.concatenate([np.cross(r, d), d], axis=-1)


def apply_displacement(p, R, dx, max_rotation=None):
    """Move bodies by ``dx: (6N,)`` in the ``[w; v]`` world layout.

    ``p: (N, 3)``, ``R: (N, 3, 3)``; rotation increments are applied on the left
    (world axes): ``R <- exp(dtheta) R``. With ``max_rotation`` the rotation increment of a
    body is truncated to that angle (seed 004 section 3.4: 0.8 rad); the translation is
    scaled with it so the increment keeps its direction.
    Returns new ``(p, R)``.
    """
    d = np.asarray(dx, dtype=float).reshape(-1, 6)
    if max_rotation is not None:
        ang = np.linalg.norm(d[:, :3], axis=1)
        scale = np.where(ang > max_rotation, max_rotation / np.maximum(ang, 1e-300), 1.0)
        d = d * scale[:, None]
    return p + d[:, 3:], so3.exp(d[:, :3]) @ R
