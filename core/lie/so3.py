"""SO(3): rotations as 3x3 matrices, rotation vectors (exponential coordinates) as 3-vectors.

Every function is batched over leading dimensions: ``w: (..., 3)``, ``R: (..., 3, 3)``.
Jacobian conventions are in :mod:`core.conventions`:
``exp(w + dw) = exp(w) exp(Jr(w) dw)`` and ``exp(w + dw) = exp(Jl(w) dw) exp(w)``.
"""

import math

import numpy as np

from ..errors import InvalidInputError, NonFiniteError
from . import series

__all__ = ["cross", "hat", "vee", "exp", "log", "left_jacobian", "right_jacobian",
           "left_jacobian_inv", "right_jacobian_inv", "check_rotation", "check_vector"]

#: tolerance of check_rotation on ||R^T R - I|| and |det R - 1|
ORTHONORMAL_TOL = 1e-6


def check_vector(w, name="w", size=3):
    """Return ``w`` as a float array of shape (..., size), or raise InvalidInputError."""
    w = np.asarray(w, dtype=float)
    if w.ndim == 0 or w.shape[-1] != size:
        raise InvalidInputError(f"{name} must have shape (..., {size}), got {w.shape}; "
                                f"pass {size} numbers per vector")
    if not np.all(np.isfinite(w)):
        raise NonFiniteError(f"{name} contains NaN or inf; pass finite numbers")
    return w


def check_rotation(R, name="R", tol=ORTHONORMAL_TOL):
    """Return ``R`` (..., 3, 3) as float array if it is a finite proper rotation, else raise."""
    R = np.asarray(R, dtype=float)
    if R.ndim < 2 or R.shape[-2:] != (3, 3):
        raise InvalidInputError(f"{name} must have shape (..., 3, 3), got {R.shape}")
    if not np.all(np.isfinite(R)):
        raise NonFiniteError(f"{name} contains NaN or inf; pass finite numbers")
    err = np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)).max(initial=0.0)
    det = np.linalg.det(R)
    if err > tol or np.any(np.abs(det - 1.0) > tol):
        raise InvalidInputError(
            f"{name} is not a rotation matrix (max |R^T R - I| = {err:.3g}, det = "
            f"{np.min(det):.6g}); pass an orthonormal matrix with det +1 (remove scale and "
            f"shear, e.g. orthonormalize with scipy.spatial.transform.Rotation.from_matrix)")
    return R


def cross(a, b):
    """``a x b`` for (..., 3) arrays (broadcast), without np.cross's overhead."""
    if a.ndim == 1 and b.ndim == 1:
        ax, ay, az = a.tolist()
        bx, by, bz = b.tolist()
        return np.array([ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx])
    ax, ay, az = a[..., 0], a[..., 1], a[..., 2]
    bx, by, bz = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx], axis=-1)


def hat(w):
    """Skew-symmetric matrix [w] with [w] x = w cross x. ``w: (..., 3) -> (..., 3, 3)``."""
    w = np.asarray(w, dtype=float)
    W = np.zeros(w.shape[:-1] + (3, 3))
    W[..., 0, 1] = -w[..., 2]
    W[..., 0, 2] = w[..., 1]
    W[..., 1, 0] = w[..., 2]
    W[..., 1, 2] = -w[..., 0]
    W[..., 2, 0] = -w[..., 1]
    W[..., 2, 1] = w[..., 0]
    return W


def vee(W):
    """Inverse of :func:`hat` (uses the antisymmetric part). ``(..., 3, 3) -> (..., 3)``."""
    W = np.asarray(W, dtype=float)
    return 0.5 * np.stack([W[..., 2, 1] - W[..., 1, 2],
                           W[..., 0, 2] - W[..., 2, 0],
                           W[..., 1, 0] - W[..., 0, 1]], axis=-1)


def _rodrigues(w, k1, k2):
    """``I + k1(t2) [w] + k2(t2) [w]^2`` for ``w: (..., 3)``; k1, k2 are coefficient
    functions of the squared angle (or constants). One vector takes a Python-float path
    using ``[w]^2 = w w^T - t2 I``."""
    w = np.asarray(w, dtype=float)
    if w.shape == (3,):
        x, y, z = w.tolist()
        t2 = x * x + y * y + z * z
        ka = k1(t2) if callable(k1) else k1
        kb = k2(t2) if callable(k2) else k2
        return np.array([[1.0 + kb * (x * x - t2), kb * x * y - ka * z, kb * x * z + ka * y],
                         [kb * x * y + ka * z, 1.0 + kb * (y * y - t2), kb * y * z - ka * x],
                         [kb * x * z - ka * y, kb * y * z + ka * x, 1.0 + kb * (z * z - t2)]])
    t2 = np.einsum("...i,...i->...", w, w)
    ka = np.asarray(k1(t2) if callable(k1) else k1)[..., None, None]
    kb = np.asarray(k2(t2) if callable(k2) else k2)[..., None, None]
    W = hat(w)
    return np.eye(3) + ka * W + kb * (W @ W)


def exp(w):
    """Rodrigues' formula: R = I + a [w] + b [w]^2. ``w: (..., 3) -> (..., 3, 3)``."""
    return _rodrigues(w, series.a, series.b)


def log(R):
    """Rotation vector w with exp(w) = R and |w| <= pi. ``R: (..., 3, 3) -> (..., 3)``.

    Robust at angle 0 (series of theta/sin theta) and at pi: there the antisymmetric part
    vanishes, so the axis is read from the symmetric part ``(R + R^T)/2 - cos(theta) I =
    (1 - cos theta) n n^T`` and its sign from the antisymmetric part (seed 003 eqs. 3-5).
    At exactly pi both signs are valid; the one returned is deterministic.
    """
    R = np.asarray(R, dtype=float)
    if R.shape == (3, 3):
        return _log_one(R.tolist())
    s_vec = vee(R)  # = sin(theta) n
    sin_t = np.linalg.norm(s_vec, axis=-1)
    cos_t = 0.5 * (np.trace(R, axis1=-2, axis2=-1) - 1.0)
    theta = np.arctan2(sin_t, cos_t)
    # away from pi: w = theta / sin(theta) * s_vec, with theta/sin via the series near 0
    ratio = 1.0 / np.asarray(series.a(theta * theta))
    w = ratio[..., None] * s_vec
    near_pi = cos_t < -0.5
    if np.any(near_pi):
        B = 0.5 * (R + np.swapaxes(R, -1, -2)) - cos_t[..., None, None] * np.eye(3)
        B = B[near_pi]
        col = np.argmax(np.einsum("...ii->...i", B), axis=-1)
        v = np.take_along_axis(B, col[:, None, None], axis=-1)[..., 0]
        n = v / np.linalg.norm(v, axis=-1, keepdims=True)
        sign = np.where(np.einsum("...i,...i->...", n, s_vec[near_pi]) < 0.0, -1.0, 1.0)
        w = np.array(w, copy=True)
        w[near_pi] = (sign * theta[near_pi])[..., None] * n
    return w


def _log_one(r):
    """:func:`log` of one rotation given as nested lists, in Python floats."""
    s = (0.5 * (r[2][1] - r[1][2]), 0.5 * (r[0][2] - r[2][0]), 0.5 * (r[1][0] - r[0][1]))
    sin_t = math.sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2])
    cos_t = 0.5 * (r[0][0] + r[1][1] + r[2][2] - 1.0)
    theta = math.atan2(sin_t, cos_t)
    if cos_t >= -0.5:
        ratio = 1.0 / series.a(theta * theta)
        return np.array([ratio * s[0], ratio * s[1], ratio * s[2]])
    i = max(range(3), key=lambda k: r[k][k])
    v = [0.5 * (r[j][i] + r[i][j]) - (cos_t if j == i else 0.0) for j in range(3)]
    scale = theta / math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    if v[0] * s[0] + v[1] * s[1] + v[2] * s[2] < 0.0:
        scale = -scale
    return np.array([scale * v[0], scale * v[1], scale * v[2]])


def left_jacobian(w):
    """Jl(w) = I + b [w] + c [w]^2. ``(..., 3) -> (..., 3, 3)``."""
    return _rodrigues(w, series.b, series.c)


def right_jacobian(w):
    """Jr(w) = Jl(-w) = I - b [w] + c [w]^2."""
    return left_jacobian(-np.asarray(w, dtype=float))


def left_jacobian_inv(w):
    """Jl(w)^-1 = I - [w]/2 + d [w]^2; singular at |w| = 2 pi."""
    return _rodrigues(w, -0.5, series.d)


def right_jacobian_inv(w):
    """Jr(w)^-1 = Jl(-w)^-1."""
    return left_jacobian_inv(-np.asarray(w, dtype=float))
