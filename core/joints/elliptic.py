"""The elliptic joint of seed 000 section 4.1 (eqs. 17-20).

The child origin slides along an ellipse with semi-axes ``a`` (along ``t1``) and ``b``
(along ``t2``) in the plane normal to the unit ``axis`` k, and the child frame turns about
k so that its first tangent axis stays tangent to the ellipse:

    G(q) = [exp([k] phi(q)), p(q); 0, 1],   p(q) = a sin q t1 - b cos q t2,      (17)
    phi(q) = atan2(b sin q, a cos q)                                                (18)

with ``(t1, t2)`` from :func:`core.joints.lower_pairs.plane_basis` (``axis = z`` gives
``t1 = x, t2 = y`` and the seed's ``p = (a sin q, -b cos q, 0)``).

Derivatives (c = cos q, s = sin q, D = a^2 c^2 + b^2 s^2):

    phi'  = a b / D,            phi'' = 2 a b (a^2 - b^2) s c / D^2
    p'    = a c t1 + b s t2,    p''   = -a s t1 + b c t2
    S     = [phi' k; R^T p']                                                        (19)
    dS/dq = [phi'' k; R^T (p'' - phi' k x p')]
          = [phi'' k; R^T ((b phi' - a) s t1 + (b - a phi') c t2)]                  (20)

(``d R^T/dq = -phi' [k] R^T``). The printed eq. 20 lost the primes: its ``phi`` in the
angular part is ``phi''`` and those inside the bracket are ``phi'``. Since R t1 is the unit
tangent, ``R^T p' = sqrt(D) t1``: the child origin moves along its own t1 axis (tested).
``cos phi = a c / sqrt(D)`` and ``sin phi = b s / sqrt(D)``, so no atan2 is evaluated.
"""

import math

import numpy as np

from ..errors import InvalidInputError
from ..lie import so3
from .lower_pairs import ParamJoint, plane_basis, unit_axis

__all__ = ["Elliptic"]


#: semi-axes (m) outside this range would overflow or underflow the fourth powers in eq. 20
SEMI_AXIS_RANGE = (1e-6, 1e6)


def _semi_axis(x, name):
    x = np.asarray(x, dtype=float)
    lo, hi = SEMI_AXIS_RANGE
    if x.shape != () or not np.isfinite(x) or not lo <= x <= hi:
        raise InvalidInputError(f"Elliptic: semi-axis {name} must be one number from {lo:g} to "
                                f"{hi:g} (metres), got {x!r}; give the ellipse in metres")
    return float(x)


class Elliptic(ParamJoint):
    """1-DOF joint sliding along an ellipse with tangential orientation (seed 000 eqs. 17-20).

    Args:
        a, b: semi-axes (m), both within :data:`SEMI_AXIS_RANGE`; ``a == b`` is a circle of
            radius a.
        axis: ``(3,)`` normal of the ellipse's plane, normalized (default z).
        lower, upper: optional limits on q (rad).
    """

    nq = 1

    def __init__(self, a, b, axis=(0.0, 0.0, 1.0), lower=None, upper=None):
        self.a = _semi_axis(a, "a")
        self.b = _semi_axis(b, "b")
        self.axis = unit_axis(axis)
        self.t1, self.t2 = plane_basis(self.axis)
        self._K = so3.hat(self.axis)
        self._K2 = self._K @ self._K
        self._init_limits(lower, upper)

    def _params(self):
        return {"a": self.a, "b": self.b, "axis": self.axis.tolist()}

    def _frames(self, q):
        """``R: (N, 3, 3)`` and ``p: (N, 3)`` for ``q: (N,)`` (eqs. 17-18)."""
        a, b = self.a, self.b
        c, s = np.cos(q), np.sin(q)
        D = a * a * c * c + b * b * s * s
        r = np.sqrt(D)
        cphi, sphi = (a * c / r)[:, None, None], (b * s / r)[:, None, None]
        R = np.eye(3) + sphi * self._K + (1.0 - cphi) * self._K2
        p = (a * s)[:, None] * self.t1 - (b * c)[:, None] * self.t2
        return R, p

    def transforms(self, qs):
        """``qs: (N, 1)`` or ``(N,)`` -> ``G: (N, 4, 4)`` (eq. 17)."""
        qs = self.check_qs(qs)
        R, p = self._frames(qs[:, 0])
        G = np.zeros((len(qs), 4, 4))
        G[:, :3, :3] = R
        G[:, :3, 3] = p
        G[:, 3, 3] = 1.0
        return G

    def _single(self, q):
        """``G (4, 4)``, its rotation ``R`` and ``(c, s, D)`` at one coordinate ``q`` (float)."""
        a, b = self.a, self.b
        c, s = math.cos(q), math.sin(q)
        D = a * a * c * c + b * b * s * s
        r = math.sqrt(D)
        G = np.eye(4)
        G[:3, :3] += (b * s / r) * self._K + (1.0 - a * c / r) * self._K2
        G[:3, 3] = (a * s) * self.t1 - (b * c) * self.t2
        return G, G[:3, :3], c, s, D

    def transform(self, q):
        """``G(q)``: ``(4, 4)`` (eq. 17)."""
        return self._single(self.check_q(q)[0])[0]

    def jacobian(self, q):
        """``S(q)``: ``(6, 1)`` (eq. 19)."""
        return self.evaluate(q)[1]

    def hessian(self, q):
        """``dS/dq``: ``(1, 6, 1)`` (eq. 20, re-derived; see the module docstring)."""
        return self.evaluate(q)[2]

    def evaluate(self, q):
        """``(G (4, 4), S (6, 1), H (1, 6, 1))`` in one pass."""
        a, b = self.a, self.b
        G, R, c, s, D = self._single(self.check_q(q)[0])
        dphi = a * b / D
        ddphi = 2.0 * a * b * (a * a - b * b) * s * c / (D * D)
        dp = a * c * self.t1 + b * s * self.t2
        bracket = (b * dphi - a) * s * self.t1 + (b - a * dphi) * c * self.t2
        S = np.empty((6, 1))
        S[:3, 0] = dphi * self.axis
        S[3:, 0] = R.T @ dp
        H = np.empty((1, 6, 1))
        H[0, :3, 0] = ddphi * self.axis
        H[0, 3:, 0] = R.T @ bracket
        return G, S, H
