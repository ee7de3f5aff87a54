"""Joint samples: measured poses ``G_k`` of a joint at coordinates ``q_k`` (seed 000 section 6.2).

A :class:`JointSamples` holds ``N`` poses of the child joint frame in the parent joint frame
(``poses: (N, 4, 4)``), optional coordinates (``q: (N, n)``; for a 1-DOF joint they may be
omitted, then the poses are taken in order and parameterized naturally, section 6.1) and
optional positive weights ``(N,)``. Everything is validated once, here, so the fitting code can
trust its inputs.
"""

import warnings

import numpy as np

from ..errors import InvalidInputError, NonFiniteError
from ..joints.spline_curve import Q_MAX
from ..lie import se3

__all__ = ["JointSamples", "ORTHONORMAL_REPAIR_TOL", "ORTHONORMAL_EXACT_TOL",
           "repeated_coordinates"]

#: rotations with max |R^T R - I| at or below this pass unchanged
ORTHONORMAL_EXACT_TOL = 1e-9
#: up to this deviation a rotation is re-orthonormalized (with a warning); beyond it, it is
#: treated as scaled or sheared and rejected
ORTHONORMAL_REPAIR_TOL = 1e-3


def _orthonormalize(R):
    """Nearest rotation (polar factor) of each ``R: (N, 3, 3)`` via the SVD."""
    U, _, Vt = np.linalg.svd(R)
    return U @ Vt


class JointSamples:
    """Validated samples of a joint's motion.

    Args:
        poses: (N, 4, 4) transforms ``G_k`` (child joint frame in parent joint frame).
        q: None, (N,) or (N, n) joint coordinates ``q_k``. None is allowed for 1-DOF data:
            the poses are then ordered samples along the motion and get natural parameters
            (:meth:`natural_parameters`).
        weights: None or (N,) positive finite weights (default all ones).

    Attributes:
        poses (N, 4, 4), q (N, n) or None, weights (N,), n_coordinates (int), size (N).

    Raises InvalidInputError for non-finite numbers, bad shapes, fewer than two samples,
    duplicated samples, or rotations that are scaled, sheared or reflected. Rotations off by
    at most :data:`ORTHONORMAL_REPAIR_TOL` are re-orthonormalized with a ``UserWarning``.
    """

    def __init__(self, poses, q=None, weights=None):
        self.poses = self._check_poses(poses)
        N = self.poses.shape[0]
        self.q = None if q is None else self._check_q(q, N)
        self.n_coordinates = 1 if self.q is None else self.q.shape[1]
        self.weights = self._check_weights(weights, N)
        self._check_duplicates()

    # -- validation -----------------------------------------------------------------
    @staticmethod
    def _check_poses(poses):
        try:
            G = np.array(poses, dtype=float)
        except (TypeError, ValueError):
            raise InvalidInputError("samples: poses must be an (N, 4, 4) array of numbers; pass "
                                    "one homogeneous 4x4 transform per sample") from None
        if G.ndim == 2 and G.shape == (4, 4):
            G = G[None]
        if G.ndim != 3 or G.shape[1:] != (4, 4):
            raise InvalidInputError(f"samples: poses must have shape (N, 4, 4), got {G.shape}; "
                                    "pass one homogeneous 4x4 transform per sample")
        if G.shape[0] < 2:
            raise InvalidInputError(f"samples: got {G.shape[0]} pose(s); a fit needs at least "
                                    "two (and more than the spline order) distinct samples")
        bad = ~np.all(np.isfinite(G), axis=(1, 2))
        if np.any(bad):
            raise NonFiniteError(f"samples: pose(s) {np.flatnonzero(bad)[:10].tolist()} "
                                    "contain NaN or inf; remove or repair those samples")
        row = np.abs(G[:, 3, :] - np.array([0.0, 0.0, 0.0, 1.0])).max(axis=1)
        if np.any(row > 1e-9):
            raise InvalidInputError(f"samples: pose(s) {np.flatnonzero(row > 1e-9)[:10].tolist()}"
                                    " have a last row other than [0, 0, 0, 1]; pass rigid "
                                    "transforms (no projection)")
        G[:, 3, :] = (0.0, 0.0, 0.0, 1.0)
        R = G[:, :3, :3]
        err = np.abs(np.swapaxes(R, 1, 2) @ R - np.eye(3)).max(axis=(1, 2))
        det = np.linalg.det(R)
        bad = (err > ORTHONORMAL_REPAIR_TOL) | (det <= 0.0)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            sv = np.linalg.svd(R[i], compute_uv=False)
            raise InvalidInputError(
                f"samples: the rotation of pose {i} is scaled, sheared or reflected (singular "
                f"values {np.round(sv, 6).tolist()}, det {det[i]:.6g}; {int(bad.sum())} pose(s) "
                "affected); joint samples must be rigid: apply scale before capturing or "
                "remove the scale from the transforms")
        fix = err > ORTHONORMAL_EXACT_TOL
        if np.any(fix):
            warnings.warn(f"samples: re-orthonormalized {int(fix.sum())} slightly non-orthonormal "
                          f"rotation(s) (max |R^T R - I| = {err.max():.2g})", UserWarning,
                          stacklevel=3)
            G[fix, :3, :3] = _orthonormalize(R[fix])
        return G

    @staticmethod
    def _check_q(q, N):
        try:
            q = np.array(q, dtype=float)
        except (TypeError, ValueError):
            raise InvalidInputError("samples: q must be an (N,) or (N, n) array of numbers; "
                                    "pass one coordinate value (or row) per pose") from None
        if q.ndim == 1:
            q = q[:, None]
        if q.ndim != 2 or q.shape[0] != N or q.shape[1] < 1:
            raise InvalidInputError(f"samples: q must have shape ({N},) or ({N}, n) to match "
                                    f"{N} poses, got {q.shape}")
        if not np.all(np.isfinite(q)):
            raise NonFiniteError("samples: q contains NaN or inf; pass finite coordinates")
        if np.abs(q).max() > Q_MAX:
            raise InvalidInputError(f"samples: q reaches {np.abs(q).max():g}, beyond the "
                                    f"+-{Q_MAX:g} a spline joint evaluates; express the "
                                    "coordinates in radians or metres (or rescale them to a "
                                    "range near 1)")
        return q

    @staticmethod
    def _check_weights(weights, N):
        if weights is None:
            return np.ones(N)
        try:
            w = np.array(weights, dtype=float)
        except (TypeError, ValueError):
            raise InvalidInputError(f"samples: weights must be {N} positive numbers, one per "
                                    "sample") from None
        if w.shape != (N,):
            raise InvalidInputError(f"samples: weights must have shape ({N},), got {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w <= 0.0):
            raise InvalidInputError("samples: weights must be finite and > 0; drop samples "
                                    "instead of giving them weight 0")
        return w

    def _check_duplicates(self):
        if self.q is not None:
            _, first, counts = np.unique(self.q, axis=0, return_index=True, return_counts=True)
            if np.any(counts > 1):
                dup = self.q[first[counts > 1][0]]
                raise InvalidInputError(
                    f"samples: {int((counts - 1).sum())} duplicate coordinate value(s), e.g. q = "
                    f"{dup.tolist()}; each q must appear once: average or remove the repeats")
        else:
            step = np.abs(np.diff(self.poses, axis=0)).max(axis=(1, 2))
            if np.any(step == 0.0):
                i = int(np.flatnonzero(step == 0.0)[0])
                raise InvalidInputError(
                    f"samples: poses {i} and {i + 1} are identical; without q the poses are "
                    "taken in order along the motion, so remove repeated poses")

    # -- queries --------------------------------------------------------------------
    @property
    def size(self):
        return self.poses.shape[0]

    def __len__(self):
        return self.size

    def require(self, minimum, what):
        """Raise InvalidInputError unless there are at least ``minimum`` distinct samples."""
        if self.size < minimum:
            raise InvalidInputError(f"samples: {what} needs at least {minimum} distinct samples, "
                                    f"got {self.size}; add samples or use fewer control frames")

    def natural_parameters(self, length_scale):
        """Cumulative natural parameters of ordered poses (seed 000 section 6.1): ``(N,)``.

        ``t_0 = 0``, ``t_k = t_{k-1} + ||log(G_{k-1}^-1 G_k)||`` with the metric
        ``||[w; v]||^2 = length_scale^2 |w|^2 + |v|^2`` (metres, as
        :func:`core.joints.spline_curve.natural_knots`).
        """
        from .metric import SE3Metric
        rel = se3.inv(self.poses[:-1]) @ self.poses[1:]
        steps = SE3Metric(length_scale).norm(se3.log(rel))
        return np.concatenate([[0.0], np.cumsum(steps)])

    def subset(self, index):
        """Samples at ``index`` (bool mask or integer array) as a new JointSamples."""
        index = np.asarray(index)
        return JointSamples(self.poses[index], None if self.q is None else self.q[index],
                            self.weights[index])


def repeated_coordinates(q_stored, q_new, decimals=9):
    """How many samples repeat a coordinate value once ``q_new`` joins ``q_stored``.

    q_stored: (M, n) and q_new: (K, n) coordinates (M may be 0). Values are compared after
    rounding to ``decimals`` places; returns the number of rows of the union beyond the first
    of each distinct value (the repeats a :class:`JointSamples` would reject).
    """
    q_new = np.asarray(q_new, dtype=float)
    q_stored = np.asarray(q_stored, dtype=float).reshape(-1, q_new.shape[1])
    _, counts = np.unique(np.round(np.concatenate([q_stored, q_new]), decimals), axis=0,
                          return_counts=True)
    return int((counts - 1).sum())
