"""SE(3): rigid transforms as 4x4 matrices, twists as 6-vectors ``[w; v]`` (angular first).

Seed 000 eqs. 1-5. Every function is batched over leading dimensions:
``xi: (..., 6)``, ``T: (..., 4, 4)``, 6x6 operators ``(..., 6, 6)``.
"""

import numpy as np

from ..errors import InvalidInputError, NonFiniteError
from . import series, so3

__all__ = ["hat", "vee", "exp", "log", "inv", "Ad", "Ad_inv", "ad", "Ad_star", "ad_star",
           "left_jacobian", "right_jacobian", "left_jacobian_inv", "right_jacobian_inv",
           "from_rp", "check_transform", "check_twist"]


def check_twist(xi, name="xi"):
    """Return ``xi`` as a float array (..., 6) of finite numbers, or raise InvalidInputError."""
    return so3.check_vector(xi, name, 6)


def check_transform(T, name="T", tol=so3.ORTHONORMAL_TOL):
    """Return ``T`` (..., 4, 4) as float array if it is a finite rigid transform, else raise."""
    T = np.asarray(T, dtype=float)
    if T.ndim < 2 or T.shape[-2:] != (4, 4):
        raise InvalidInputError(f"{name} must have shape (..., 4, 4), got {T.shape}; "
                                "pass homogeneous 4x4 transforms")
    if not np.all(np.isfinite(T)):
        raise NonFiniteError(f"{name} contains NaN or inf; pass finite numbers")
    if np.abs(T[..., 3, :] - np.array([0.0, 0.0, 0.0, 1.0])).max(initial=0.0) > tol:
        raise InvalidInputError(f"{name}'s last row must be [0, 0, 0, 1]")
    so3.check_rotation(T[..., :3, :3], f"the rotation part of {name}", tol)
    return T


def from_rp(R, p):
    """4x4 transform with rotation ``R: (..., 3, 3)`` and translation ``p: (..., 3)``."""
    R = np.asarray(R, dtype=float)
    p = np.asarray(p, dtype=float)
    shape = np.broadcast_shapes(R.shape[:-2], p.shape[:-1])
    T = np.zeros(shape + (4, 4))
    T[..., :3, :3] = R
    T[..., :3, 3] = p
    T[..., 3, 3] = 1.0
    return T


def hat(xi):
    """Twist coordinates to se(3) matrix ``[[w], v; 0, 0]``. ``(..., 6) -> (..., 4, 4)``."""
    xi = np.asarray(xi, dtype=float)
    X = np.zeros(xi.shape[:-1] + (4, 4))
    X[..., :3, :3] = so3.hat(xi[..., :3])
    X[..., :3, 3] = xi[..., 3:]
    return X


def vee(X):
    """Inverse of :func:`hat`. ``(..., 4, 4) -> (..., 6)``."""
    X = np.asarray(X, dtype=float)
    return np.concatenate([so3.vee(X[..., :3, :3]), X[..., :3, 3]], axis=-1)


def exp(xi):
    """Exponential map: ``exp([w; v]) = [exp(w), Jl(w) v; 0, 1]``. ``(..., 6) -> (..., 4, 4)``."""
    xi = np.asarray(xi, dtype=float)
    if xi.shape == (6,):
        T = np.empty((4, 4))
        T[:3, :3] = so3.exp(xi[:3])
        T[:3, 3] = so3.left_jacobian(xi[:3]) @ xi[3:]
        T[3] = (0.0, 0.0, 0.0, 1.0)
        return T
    w, v = xi[..., :3], xi[..., 3:]
    t2 = np.einsum("...i,...i->...", w, w)
    W = so3.hat(w)
    W2 = W @ W
    a, b, c = series.a(t2)[..., None, None], series.b(t2)[..., None, None], \
        series.c(t2)[..., None, None]
    eye = np.eye(3)
    R = eye + a * W + b * W2
    V = eye + b * W + c * W2
    return from_rp(R, np.einsum("...ij,...j->...i", V, v))


def log(T):
    """Logarithm: the twist ``[w; v]`` with exp = T and |w| <= pi. ``(..., 4, 4) -> (..., 6)``.

    Robust at rotation angle 0 and pi (see :func:`core.lie.so3.log`); at exactly pi the sign
    of w is one of the two valid ones.
    """
    T = np.asarray(T, dtype=float)
    w = so3.log(T[..., :3, :3])
    v = np.einsum("...ij,...j->...i", so3.left_jacobian_inv(w), T[..., :3, 3])
    return np.concatenate([w, v], axis=-1)


def inv(T):
    """Inverse transform ``[R^T, -R^T p; 0, 1]``."""
    T = np.asarray(T, dtype=float)
    Rt = np.swapaxes(T[..., :3, :3], -1, -2)
    return from_rp(Rt, -np.einsum("...ij,...j->...i", Rt, T[..., :3, 3]))


def Ad(T):
    """Adjoint ``[[R, 0], [[p] R, R]]`` (eq. 2): maps twists in frame b to frame a for T_a_b."""
    T = np.asarray(T, dtype=float)
    R = T[..., :3, :3]
    A = np.zeros(T.shape[:-2] + (6, 6))
    A[..., :3, :3] = R
    A[..., 3:, 3:] = R
    A[..., 3:, :3] = so3.hat(T[..., :3, 3]) @ R
    return A


def Ad_inv(T):
    """Ad(T)^-1 = Ad(T^-1) = ``[[R^T, 0], [-R^T [p], R^T]]``."""
    T = np.asarray(T, dtype=float)
    Rt = np.swapaxes(T[..., :3, :3], -1, -2)
    A = np.zeros(T.shape[:-2] + (6, 6))
    A[..., :3, :3] = Rt
    A[..., 3:, 3:] = Rt
    A[..., 3:, :3] = -Rt @ so3.hat(T[..., :3, 3])
    return A


def ad(xi):
    """Lie bracket matrix ``[[[w], 0], [[v], [w]]]`` (eq. 4): ad(x) y = [x, y]."""
    xi = np.asarray(xi, dtype=float)
    W = so3.hat(xi[..., :3])
    A = np.zeros(xi.shape[:-1] + (6, 6))
    A[..., :3, :3] = W
    A[..., 3:, 3:] = W
    A[..., 3:, :3] = so3.hat(xi[..., 3:])
    return A


def Ad_star(T):
    """Dual adjoint Ad*_T = Ad_T^T acting on wrenches [moment; force] (eq. 5)."""
    return np.swapaxes(Ad(T), -1, -2)


def ad_star(xi):
    """Dual bracket ad*_xi = ad_xi^T acting on wrenches (eq. 5)."""
    return np.swapaxes(ad(xi), -1, -2)


def left_jacobian(xi):
    """SE(3) left Jacobian ``Jl(xi) = sum_k ad_xi^k / (k+1)!`` in closed form.

    Uses the minimal polynomial of ad_xi: ``Jl = I + c1 ad + c2 ad^2 + c3 ad^3 + c4 ad^4``
    (coefficients in :func:`core.lie.series.se3_coefficients`). ``(..., 6) -> (..., 6, 6)``.
    """
    xi = np.asarray(xi, dtype=float)
    w = xi[..., :3]
    t2 = np.einsum("...i,...i->...", w, w)
    c1, c2, c3, c4 = (c[..., None, None] for c in series.se3_coefficients(t2))
    A = ad(xi)
    A2 = A @ A
    A3 = A2 @ A
    return np.eye(6) + c1 * A + c2 * A2 + c3 * A3 + c4 * (A2 @ A2)


def right_jacobian(xi):
    """SE(3) right Jacobian ``Jr(xi) = Jl(-xi)``."""
    return left_jacobian(-np.asarray(xi, dtype=float))


def left_jacobian_inv(xi):
    """Inverse of :func:`left_jacobian` by blocks: ``[[A, 0], [-A Q A, A]]``, A = so3 Jl(w)^-1.

    Singular where the rotation angle is a non-zero multiple of 2 pi.
    """
    xi = np.asarray(xi, dtype=float)
    J = left_jacobian(xi)
    A = so3.left_jacobian_inv(xi[..., :3])
    out = np.zeros(J.shape)
    out[..., :3, :3] = A
    out[..., 3:, 3:] = A
    out[..., 3:, :3] = -A @ J[..., 3:, :3] @ A
    return out


def right_jacobian_inv(xi):
    """Inverse of :func:`right_jacobian`: ``Jl(-xi)^-1``."""
    return left_jacobian_inv(-np.asarray(xi, dtype=float))
