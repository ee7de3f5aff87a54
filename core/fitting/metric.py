"""The SE(3) metric of the fits: a twist norm with a length scale (seed 000 section 6.1 and
footnote 2, the "unweighted" metric).

``||[w; v]||_L^2 = L^2 |w|^2 + |v|^2`` (metres): a rotation of one radian costs as much as a
translation of ``L`` metres, as in :func:`core.joints.spline_curve.natural_knots`.
Distances between poses are ``d(A, B) = ||log(A^-1 B)||_L`` (eq. 32).
Reported errors are metric-free: position error in mm and rotation angle in degrees.
"""

import numpy as np

from ..errors import InvalidInputError
from ..lie import se3, so3

__all__ = ["SE3Metric", "pose_errors", "DEFAULT_LENGTH_SCALE", "LENGTH_SCALE_RANGE"]

#: default length scale in metres (a joint's size: 1 rad of rotation ~ 10 cm of translation)
DEFAULT_LENGTH_SCALE = 0.1
#: length scales (m) the metric takes: its weights are their squares, which must stay finite
#: and normal in double precision with room for the residuals they multiply
LENGTH_SCALE_RANGE = (1e-9, 1e9)


class SE3Metric:
    """Weighted twist norm ``||[w; v]||^2 = L^2 |w|^2 + |v|^2`` (metres), ``L = length_scale``.

    Attributes: length_scale (m); weights (6,) the diagonal ``(L^2, L^2, L^2, 1, 1, 1)``;
    sqrt_weights (6,).
    """

    def __init__(self, length_scale=DEFAULT_LENGTH_SCALE):
        try:
            L = float(length_scale)
        except (TypeError, ValueError):
            raise InvalidInputError(f"length_scale must be a number of metres, got "
                                    f"{length_scale!r}") from None
        lo, hi = LENGTH_SCALE_RANGE
        if not np.isfinite(L) or not lo <= L <= hi:
            raise InvalidInputError(f"length_scale must be a number of metres from {lo:g} to "
                                    f"{hi:g}, got {L!r}; use roughly the size of the joint, "
                                    "e.g. 0.1")
        self.length_scale = L
        self.sqrt_weights = np.array([L, L, L, 1.0, 1.0, 1.0])
        self.weights = self.sqrt_weights ** 2

    def norm(self, xi):
        """``xi: (..., 6) -> (...)`` weighted norm."""
        return np.linalg.norm(np.asarray(xi, dtype=float) * self.sqrt_weights, axis=-1)

    def residuals(self, G, G_target):
        """Twist residuals ``log(G^-1 G_target)``: ``(N, 4, 4), (N, 4, 4) -> (N, 6)`` (eq. 36)."""
        return se3.log(se3.inv(G) @ G_target)

    def distance(self, A, B):
        """``d(A, B) = ||log(A^-1 B)||``: ``(..., 4, 4) x 2 -> (...)`` (eq. 32's d)."""
        return self.norm(se3.log(se3.inv(A) @ B))

    def to_dict(self):
        return {"name": "se3_length_scale", "length_scale": self.length_scale}


def pose_errors(G, G_target):
    """Position error (mm) and rotation error (deg) of each pose: ``(N, 4, 4) x 2 -> (N,), (N,)``.

    Position error is ``|p - p_target|`` in the parent frame; rotation error is the angle of
    ``R^T R_target``.
    """
    G = np.asarray(G, dtype=float)
    G_target = np.asarray(G_target, dtype=float)
    pos = 1e3 * np.linalg.norm(G[..., :3, 3] - G_target[..., :3, 3], axis=-1)
    rel = np.swapaxes(G[..., :3, :3], -1, -2) @ G_target[..., :3, :3]
    rot = np.degrees(np.linalg.norm(so3.log(rel), axis=-1))
    return pos, rot
