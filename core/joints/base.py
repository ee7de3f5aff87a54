"""The one interface every joint implements (seed 000 section 4).

A joint maps its coordinates ``q: (nq,)`` to the joint transform ``G(q)`` (the child joint
frame in the parent joint frame, eq. 9), the body-frame Jacobian
``S(q) = [(G^-1 dG/dq_i)^vee]`` (eq. 12, shape ``(6, nv)``) and the Hessian
``H[j] = dS/dq_j`` (shape ``(nv, 6, nv)``) that enters the bias acceleration
``q_dot^T dS q_dot`` of eq. 14. Every joint of this project uses coordinate rates as
velocities, so ``nv == nq`` and the velocity of the child is ``u = S q_dot`` (eq. 12).
"""

import numpy as np

from ..errors import InvalidInputError, NonFiniteError
from .family import GenericFamily


class Joint:
    """Abstract joint. Subclasses set ``nq`` and implement :meth:`transform`,
    :meth:`jacobian` and :meth:`hessian` (or :meth:`evaluate`, which the others may call).

    Attributes:
        nq, nv: number of coordinates and of velocity coordinates (equal here).
        lower, upper: coordinate limits ``(nq,)``; ``-inf``/``inf`` where unlimited.
        family: the :class:`~core.joints.family.JointFamily` subclass that evaluates this
            kind of joint in a model's batched kinematics (GenericFamily: one at a time
            through :meth:`evaluate`).
    """

    nq = 0
    family = GenericFamily

    @property
    def nv(self):
        return self.nq

    @property
    def lower(self):
        return np.full(self.nq, -np.inf)

    @property
    def upper(self):
        return np.full(self.nq, np.inf)

    # -- validation ------------------------------------------------------------------
    def check_q(self, q, name="q"):
        """Return ``q`` as a finite float array of shape ``(nq,)`` or raise InvalidInputError."""
        q = np.asarray(q, dtype=float)
        if q.shape == () and self.nq == 1:
            q = q.reshape(1)
        if q.shape != (self.nq,):
            raise InvalidInputError(f"{type(self).__name__}: {name} must have shape "
                                    f"({self.nq},), got {q.shape}")
        if not np.all(np.isfinite(q)):
            raise NonFiniteError(f"{type(self).__name__}: {name} contains NaN or inf; "
                                    "pass finite joint coordinates")
        return q

    def check_qs(self, qs, name="qs"):
        """Return ``qs`` as a finite float array of shape ``(N, nq)`` (a 1-D array is
        accepted for 1-DOF joints) or raise InvalidInputError."""
        qs = np.asarray(qs, dtype=float)
        if qs.ndim == 1 and self.nq == 1:
            qs = qs[:, None]
        if qs.ndim != 2 or qs.shape[1] != self.nq:
            raise InvalidInputError(f"{type(self).__name__}: {name} must have shape "
                                    f"(N, {self.nq}), got {qs.shape}")
        if not np.all(np.isfinite(qs)):
            raise NonFiniteError(f"{type(self).__name__}: {name} contains NaN or inf; "
                                    "pass finite joint coordinates")
        return qs

    # -- evaluation ------------------------------------------------------------------
    def neutral(self):
        """The reference configuration ``(nq,)`` (zeros unless a subclass says otherwise)."""
        return np.zeros(self.nq)

    def transform(self, q):
        """Joint transform ``G(q)``: ``(4, 4)``."""
        return self.evaluate(q)[0]

    def jacobian(self, q):
        """Body-frame joint Jacobian ``S(q)``: ``(6, nv)`` (seed 000 eq. 12)."""
        return self.evaluate(q)[1]

    def hessian(self, q):
        """Joint Hessian ``H`` with ``H[j] = dS/dq_j``: ``(nv, 6, nv)``."""
        return self.evaluate(q)[2]

    def evaluate(self, q):
        """``(G, S, H)`` in one pass; the dynamics algorithms call this."""
        return self.transform(q), self.jacobian(q), self.hessian(q)

    def motion(self, q):
        """``(G, S)``: :meth:`evaluate` without the Hessian, for callers that need no H."""
        return self.evaluate(q)[:2]

    def transforms(self, qs):
        """Batched ``G`` for many coordinates: ``qs: (N, nq) -> (N, 4, 4)``.

        The generic version loops; every family in this package overrides it vectorised.
        """
        qs = self.check_qs(qs)
        return np.stack([self.transform(q) for q in qs]) if len(qs) else np.zeros((0, 4, 4))

    def normalize(self, q, v):
        """Chart change hook ``(q, v) -> (q, v)`` applied by integrators after each step.

        The identity, except for joints with exponential coordinates, which reparametrize
        past angle pi (seed 003 eqs. 66-70).
        """
        return q, v

    def to_dict(self):
        """Plain-data description (lists and numbers) that :func:`from_dict` inverts."""
        raise NotImplementedError(f"{type(self).__name__} does not serialize")

    def __repr__(self):
        return f"{type(self).__name__}(nq={self.nq})"
