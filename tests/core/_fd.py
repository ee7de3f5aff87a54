"""Central finite differences of a joint's body Jacobian and Hessian, shared by the joint
tests (seed 000 eq. 12: ``S_i = (G^-1 dG/dq_i)^vee``, ``H[j] = dS/dq_j``)."""

import numpy as np

from core.lie import se3

FD_STEP = 1e-6


def _steps(q, h):
    q = np.atleast_1d(np.asarray(q, dtype=float))
    return q, h * np.eye(q.size)


def fd_jacobian(joint, q, h=FD_STEP):
    """Central-difference body Jacobian ``[(G^-1 dG/dq_i)^vee]``: ``(6, nq)`` for ``q: (nq,)``
    (a float for 1-DOF joints). Asserts each ``G^-1 dG/dq_i`` is an se(3) element (skew
    rotation part, zero last row)."""
    q, E = _steps(q, h)
    G_inv = se3.inv(joint.transform(q))
    cols = []
    for e in E:
        X = G_inv @ (joint.transform(q + e) - joint.transform(q - e)) / (2 * h)
        assert np.allclose(X[:3, :3], -X[:3, :3].T, atol=1e-7)
        assert np.allclose(X[3], 0.0, atol=1e-12)
        cols.append(se3.vee(X))
    return np.stack(cols, axis=1)


def fd_hessian(joint, q, h=FD_STEP):
    """Central-difference ``H[j] = dS/dq_j``: ``(nq, 6, nq)`` for ``q: (nq,)``."""
    q, E = _steps(q, h)
    return np.stack([(joint.jacobian(q + e) - joint.jacobian(q - e)) / (2 * h) for e in E])
