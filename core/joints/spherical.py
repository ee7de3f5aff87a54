"""Spherical (ball) and free joints in exponential coordinates (seed 003).

``Spherical``: ``q = r`` (3 exponential coordinates), ``G(q) = [exp(r), 0; 0, 1]``,
body-frame ``S = [J_b(r); 0]`` (seed 003 eq. 20, which is ``(G^-1 dG/dr_i)^vee`` of seed 000
eq. 12) and ``H[j] = [dJ_b/dr_j; 0]``.

``Free``: ``q = [r, p]`` (rotation exponential coordinates, then the translation in the
parent frame), ``G(q) = [exp(r), p; 0, 1]``, ``S = [[J_b, 0], [0, R^T]]`` and
``H[j] = [[dJ_b/dr_j, 0], [0, -[J_b e_j] R^T]]`` for j < 3, ``H[j] = 0`` for j >= 3.

Velocities are coordinate rates (``v = q_dot``). :meth:`normalize` changes chart past
``|r| > pi`` (seed 003 eqs. 66-70) so a spinning joint never reaches the singular
``|r| = 2 pi``. Range limits of these joints are reach cones (see
:func:`core.expcoords.reach_cone_value`), not coordinate boxes, so ``lower``/``upper`` are
always infinite.
"""

import math

import numpy as np

from .. import expcoords
from ..errors import InvalidInputError
from ..lie import so3
from .base import Joint
from .family import GenericFamily, JointFamily
from .lower_pairs import ParamJoint

__all__ = ["Spherical", "Free", "SphericalFamily", "FreeFamily"]

#: the compiled joint kinds of :class:`SphericalFamily` and :class:`FreeFamily`
KIND_SPHERE, KIND_FREE = 3, 8


class SphericalFamily(JointFamily):
    """The :class:`Spherical` joints of a model, all at once: one batched
    :func:`core.expcoords.exp_and_derivatives` gives ``R``, ``J_b`` and ``dJ_b/dr`` of every
    joint (the same per-element formulas as :meth:`Spherical.evaluate`); ``P G`` takes the
    rotation, ``S = [J_b; 0]`` goes to ``data.S_body`` and ``q_dot^T (dS/dq) q_dot =
    [sum_jk dJ_b/dr_j[:, k] r_dot_j r_dot_k; 0]`` to ``data.c_body``."""

    def __init__(self, bodies, joints, placements, q_start):
        super().__init__(bodies, joints, placements, q_start)
        self.idx = np.array(self.dofs)                     # (m, 3) coordinate indices
        self.flat = self.idx.ravel()
        self.PR = self.placements[:, :3, :3]
        self.Pp = self.placements[:, :3, 3]

    #: the kernel needs no constants besides the body's placement
    kernel_kind = KIND_SPHERE
    kernel_charts = True

    def create_work(self, data):
        data.S_body[self.flat, 3:] = 0.0
        data.c_body[self.bodies, 3:] = 0.0
        return [None]                                      # dJ_b/dr of the last calc

    def calc(self, q, data, work):
        R, Jb, dJ = expcoords.exp_and_derivatives(q[self.idx])
        L = data.oMi
        L[self.bodies, :3, :3] = self.PR @ R
        L[self.bodies, :3, 3] = self.Pp
        data.S_body[self.flat, :3] = Jb.transpose(0, 2, 1).reshape(-1, 3)
        work[0] = dJ

    def velocity_product(self, v, data, work):
        w = v[self.idx]
        data.c_body[self.bodies, :3] = np.einsum("mjak,mj,mk->ma", work[0], w, w)


class _ExpCoordJoint(ParamJoint):
    """Shared by the joints with rotation exponential coordinates: no box limits (they change
    chart past |r| > pi) and a fast ``check_q``."""

    def __init__(self, lower=None, upper=None):
        self._init_limits(lower, upper)
        if np.any(np.isfinite(self._lower)) or np.any(np.isfinite(self._upper)):
            raise InvalidInputError(
                f"{type(self).__name__} takes no coordinate limits (exponential coordinates "
                "change chart past |r| > pi); limit it with a reach cone, "
                "core.expcoords.reach_cone_value")

    def check_q(self, q, name="q"):
        """``q`` as a finite float array ``(nq,)`` or InvalidInputError (fast path for a
        finite float64 array of the right shape)."""
        if type(q) is np.ndarray and q.shape == (self.nq,) and q.dtype == np.float64 \
                and math.isfinite(sum(q.tolist())):
            return q
        return Joint.check_q(self, q, name)


class Spherical(_ExpCoordJoint):
    """Ball joint, ``nq = nv = 3``, ``q = r`` with ``R = exp([r])`` (seed 003)."""

    nq = 3
    family = SphericalFamily

    def evaluate(self, q):
        """``(G (4, 4), S (6, 3), H (3, 6, 3))`` from one evaluation of the coefficients."""
        R, Jb, dJ = expcoords.exp_and_derivatives(self.check_q(q))
        G = np.eye(4)
        G[:3, :3] = R
        S = np.zeros((6, 3))
        S[:3] = Jb
        H = np.zeros((3, 6, 3))
        H[:, :3, :] = dJ
        return G, S, H

    def transform(self, q):
        """``G(q) = [exp(r), 0; 0, 1]``: ``(4, 4)``."""
        G = np.eye(4)
        G[:3, :3] = expcoords.exp_and_derivatives(self.check_q(q), order=0)[0]
        return G

    def jacobian(self, q):
        """``S = [J_b(r); 0]``: ``(6, 3)`` (seed 003 eq. 20)."""
        S = np.zeros((6, 3))
        S[:3] = expcoords.J_b(self.check_q(q))
        return S

    def hessian(self, q):
        """``H[j] = [dJ_b/dr_j; 0]``: ``(3, 6, 3)``."""
        H = np.zeros((3, 6, 3))
        H[:, :3, :] = expcoords.dJ_b_dr(self.check_q(q))
        return H

    def transforms(self, qs):
        """Vectorised ``qs: (N, 3) -> (N, 4, 4)``."""
        qs = self.check_qs(qs)
        G = np.zeros((len(qs), 4, 4))
        G[:, :3, :3] = so3.exp(qs)
        G[:, 3, 3] = 1.0
        return G

    def normalize(self, q, v):
        """Reparametrize ``(r, r_dot)`` when ``|r| > pi`` (eqs. 66-69); identity otherwise.

        ``q, v: (3,)`` -> new ``(q, v)`` with ``|q| <= pi``, the same rotation and the same
        angular velocity.
        """
        q = self.check_q(q)
        v = self.check_q(v, "v")
        if math.sqrt(float(q @ q)) <= math.pi:
            return q, v
        out = expcoords.reparametrize(q, v)
        return out.r, out.r_dot


class Free(_ExpCoordJoint):
    """Free (6-DOF) joint, ``q = [r (3), p (3)]``: rotation exp(r), translation p in the
    parent frame. ``nq = nv = 6``."""

    nq = 6

    def evaluate(self, q):
        """``(G (4, 4), S (6, 6), H (6, 6, 6))``; see the module docstring for the formulas."""
        q = self.check_q(q)
        R, Jb, dJ = expcoords.exp_and_derivatives(q[:3])
        G = np.eye(4)
        G[:3, :3] = R
        G[:3, 3] = q[3:]
        S = np.zeros((6, 6))
        S[:3, :3] = Jb
        S[3:, 3:] = R.T
        H = np.zeros((6, 6, 6))
        H[:3, :3, :3] = dJ
        # d(R^T)/dr_j = -[J_b e_j] R^T  (since dR/dr_j = R [J_b e_j])
        H[:3, 3:, 3:] = -so3.hat(Jb.T) @ R.T
        return G, S, H

    def transform(self, q):
        """``G(q) = [exp(r), p; 0, 1]``: ``(4, 4)``."""
        q = self.check_q(q)
        G = np.eye(4)
        G[:3, :3] = expcoords.exp_and_derivatives(q[:3], order=0)[0]
        G[:3, 3] = q[3:]
        return G

    def jacobian(self, q):
        """``S = [[J_b, 0], [0, R^T]]``: ``(6, 6)``."""
        q = self.check_q(q)
        R, Jb = expcoords.exp_and_derivatives(q[:3], order=1)
        S = np.zeros((6, 6))
        S[:3, :3] = Jb
        S[3:, 3:] = R.T
        return S

    def transforms(self, qs):
        """Vectorised ``qs: (N, 6) -> (N, 4, 4)``."""
        qs = self.check_qs(qs)
        G = np.zeros((len(qs), 4, 4))
        G[:, :3, :3] = so3.exp(qs[:, :3])
        G[:, :3, 3] = qs[:, 3:]
        G[:, 3, 3] = 1.0
        return G

    def normalize(self, q, v):
        """Reparametrize the rotation part ``(r, r_dot)`` when ``|r| > pi`` (eqs. 66-69);
        the translation and its rate are unchanged. ``q, v: (6,)``."""
        q = self.check_q(q)
        v = self.check_q(v, "v")
        r = q[:3]
        if math.sqrt(float(r @ r)) <= math.pi:
            return q, v
        out = expcoords.reparametrize(r, v[:3])
        return np.concatenate([out.r, q[3:]]), np.concatenate([out.r_dot, v[3:]])


class FreeFamily(GenericFamily):
    """The :class:`Free` joints of a model: in Python one at a time through
    :meth:`Free.evaluate` (as :class:`~core.joints.family.GenericFamily`), in the compiled
    kernels from the coordinates alone (no constants)."""

    kernel_kind = KIND_FREE
    kernel_charts = True


Free.family = FreeFamily
