"""core.maximal.solver.project on dense arrays (small systems) against the sparse path, on
both backends, and Faure's assembly with dense matrices against the sparse one."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.linalg import block_diag

from core import backend
from core.maximal.solver import project, rigid_jacobian, world_inverse_mass

BACKENDS = ["numpy"] + (["numba"] if backend.available() else [])


@pytest.fixture(params=BACKENDS)
def on_backend(request):
    previous = backend.active()
    backend.use(request.param)
    yield request.param
    backend.use(previous)


def system(seed=2, m=30, n=60):
    rng = np.random.default_rng(seed)
    J = (sp.random(m, n, density=0.1, random_state=seed) + sp.eye(m, n)).toarray()
    blocks = rng.normal(size=(n // 6, 6, 6))
    Minv = block_diag(*[0.3 * np.eye(6) + 0.05 * (B @ B.T) for B in blocks])
    return J, Minv, rng.normal(size=m)


@pytest.mark.parametrize("method", ["cg", "direct", "lsqr"])
def test_dense_and_sparse_projections_agree(on_backend, method):
    """The same system as numpy arrays and as sparse matrices gives the same multipliers
    and correction. Tolerance: CG stops at ``|r| < rtol |b|`` and LSQR at ``|r| <= btol |b| +
    atol |A| |lam|`` (Paige and Saunders' rule 1, ``|A|`` its Frobenius-norm estimate), so each
    solution is within ``|A^-1| |r|`` of the exact one (twice that between them); the direct
    solves differ by round-off, ``cond(A) eps |lam|``, far below that bound."""
    J, Minv, b = system()
    tol = 1e-12
    dense = project(J, Minv, b, method=method, tol=tol)
    sparse = project(sp.csr_matrix(J), sp.csr_matrix(Minv), b, method=method, tol=tol)
    A = J @ Minv @ J.T
    r = tol * np.linalg.norm(b)
    if method == "lsqr":
        r += tol * np.linalg.norm(A) * max(np.linalg.norm(dense.lam), np.linalg.norm(sparse.lam))
    bound = 2 * r / np.linalg.eigvalsh(A).min()
    assert np.linalg.norm(dense.lam - sparse.lam) <= bound
    np.testing.assert_allclose(dense.dx, Minv @ J.T @ dense.lam, atol=1e-12)
    if method == "cg":
        assert dense.converged and abs(dense.iterations - sparse.iterations) <= 1


def test_a_capped_dense_cg_takes_the_same_iterates(on_backend):
    """With an iteration cap the dense and sparse CG stop at the same iterate (the same
    recurrence; round-off of the products only, ~ cond(A) eps per iteration)."""
    J, Minv, b = system(seed=5)
    for cap in (1, 3, 7):
        dense = project(J, Minv, b, method="cg", maxiter=cap)
        sparse = project(sp.csr_matrix(J), sp.csr_matrix(Minv), b, method="cg", maxiter=cap)
        assert dense.iterations == sparse.iterations == cap and not dense.converged
        np.testing.assert_allclose(dense.lam, sparse.lam, rtol=1e-9, atol=1e-12)


def test_dense_builders_are_the_sparse_matrices():
    rng = np.random.default_rng(0)
    N, m = 4, 9
    a, b = rng.integers(-1, N, size=m), rng.integers(-1, N, size=m)
    ra, rb = rng.normal(size=(m, 6)), rng.normal(size=(m, 6))
    np.testing.assert_array_equal(rigid_jacobian(a, ra, b, rb, N, dense=True),
                                  rigid_jacobian(a, ra, b, rb, N).toarray())
    R = np.linalg.qr(rng.normal(size=(N, 3, 3)))[0]
    I = np.linalg.inv(np.eye(3) + 0.1 * rng.random((N, 3, 3)))
    inv_mass = rng.random(N)
    np.testing.assert_array_equal(world_inverse_mass(R, I, inv_mass, dense=True),
                                  world_inverse_mass(R, I, inv_mass).toarray())


def test_a_singular_dense_direct_solve_is_reported():
    from core.errors import SimulationError

    J = np.array([[1.0, 0.0], [1.0, 0.0]])
    with pytest.raises(SimulationError, match="singular"):
        project(J, np.eye(2), np.array([1.0, 2.0]), method="direct")
