"""A joint carried into other frames and sizes: ``G'(q) = P E(phi_s(G(q))) C^-1``.

A joint ``G(q)`` (the child joint frame in the parent joint frame) is re-expressed with

* ``phi_s([R, p]) = [R, s p]``: its translations scaled by ``s > 0`` (OpenSim's segment
  scaling of a joint's translation functions). ``phi_s`` is a group automorphism of SE(3)
  (``phi_s(A B) = phi_s(A) phi_s(B)``), so ``phi_s(G)^-1 d phi_s(G) = D_s (G^-1 dG)`` with
  ``D_s = diag(1, 1, 1, s, s, s)`` acting on twists ``[w; v]``;
* ``E(X) = F X F`` for the reflection ``F`` of one axis (mirror image: a right joint made a
  left one), also an automorphism, acting on twists as ``[w; v] -> [-F w; F v]`` (angular
  velocity is a pseudovector);
* constant rigid placements: ``P`` (4, 4), the inner joint's parent frame in the new parent
  frame, and ``C`` (4, 4), its child frame in the new child frame. The right factor
  conjugates the body twist: ``(G C^-1)^-1 d(G C^-1) = Ad_C (G^-1 dG)``.

Hence the body Jacobian (seed 000 eq. 12) and its derivative are

    ``S'(q) = Ad_C M S(q)``, ``H'[j] = Ad_C M H[j]``, ``M = D_s`` (times the reflection's
    twist map when mirrored),

constant linear maps of the inner joint's own ``S`` and ``H``. A MappedJoint of a MappedJoint
is flattened on construction (:meth:`MappedJoint.compose`), so a joint transferred twice is
still one wrapper around the original joint.
"""

import numpy as np

from ..checks import real_number
from ..errors import InvalidInputError
from ..lie import se3
from .base import Joint

__all__ = ["MappedJoint"]


def _reflection(axis):
    """(4, 4) diagonal reflection of ``axis`` (0, 1, 2), or the identity for None."""
    F = np.eye(4)
    if axis is not None:
        F[axis, axis] = -1.0
    return F


class MappedJoint(Joint):
    """``G'(q) = P F phi_s(G(q)) F C^-1`` (module docstring) of an inner ``joint``.

    Args:
        joint: a core joint (any family; a MappedJoint is flattened into this one).
        parent: (4, 4) rigid ``P``; child: (4, 4) rigid ``C`` (default identities).
        scale: ``s > 0``, the factor of every translation of the inner joint (m per m).
        mirror_axis: None, or 0/1/2: the inner joint's frames reflected across that axis'
            plane (``F = diag`` with -1 there) before ``P`` and ``C`` place it.
    Coordinates, limits, neutral configuration and chart changes are the inner joint's.
    """

    def __init__(self, joint, parent=None, child=None, scale=1.0, mirror_axis=None):
        if not isinstance(joint, Joint):
            raise InvalidInputError(f"a MappedJoint wraps a core joint, got "
                                    f"{type(joint).__name__}")
        parent = np.eye(4) if parent is None else se3.check_transform(parent, "MappedJoint parent")
        child = np.eye(4) if child is None else se3.check_transform(child, "MappedJoint child")
        scale = real_number(scale, "MappedJoint scale", 0.0, low_open=True,
                            advice="the factor of the joint's translations, e.g. 1.3")
        if mirror_axis is not None and mirror_axis not in (0, 1, 2):
            raise InvalidInputError(f"MappedJoint mirror_axis must be None, 0, 1 or 2, got "
                                    f"{mirror_axis!r}")
        if isinstance(joint, MappedJoint):
            joint, parent, child, scale, mirror_axis = joint.compose(parent, child, scale,
                                                                     mirror_axis)
        self.joint = joint
        self.parent = np.array(parent, dtype=float)
        self.child = np.array(child, dtype=float)
        self.scale = float(scale)
        self.mirror_axis = mirror_axis
        self.nq = joint.nq
        F = _reflection(mirror_axis)
        D = np.diag([1.0, 1.0, 1.0, self.scale, self.scale, self.scale])
        if mirror_axis is not None:
            D = np.diag(np.concatenate([-np.diag(F)[:3], self.scale * np.diag(F)[:3]]))
        self._F = F
        self._left = self.parent @ F
        self._right = F @ se3.inv(self.child)
        self._twist_map = se3.Ad(self.child) @ D  # (6, 6): S' = Ad_C M S

    def compose(self, parent, child, scale, mirror_axis):
        """The inner joint, placements, scale and reflection of ``MappedJoint(self, parent,
        child, scale, mirror_axis)`` as one wrapper around ``self.joint``: ``(joint, P, C, s,
        axis)``. Both reflections of one axis cancel; two different ones are refused (their
        product is a rotation, which the placements would have to absorb: map the inner joint
        instead)."""
        if mirror_axis is not None and self.mirror_axis is not None \
                and mirror_axis != self.mirror_axis:
            raise InvalidInputError("a MappedJoint mirrored across one axis cannot be mirrored "
                                    "across another; mirror the original joint instead")
        axis = self.mirror_axis if mirror_axis is None else (
            None if mirror_axis == self.mirror_axis else mirror_axis)
        F2 = _reflection(mirror_axis)

        def scaled(T):
            out = np.array(T, dtype=float)
            out[:3, 3] *= scale
            return out

        # P2 F2 phi2(P1 F1 phi1(G) F1 C1^-1) F2 C2^-1: phi2 is an automorphism that commutes
        # with the (diagonal) reflections, so this is P F phi2(phi1(G)) F C^-1 with
        # F = F2 F1, P = P2 F2 phi2(P1) F2 and C = C2 F2 phi2(C1) F2
        P = parent @ F2 @ scaled(self.parent) @ F2
        C = child @ F2 @ scaled(self.child) @ F2
        return self.joint, P, C, scale * self.scale, axis

    @property
    def lower(self):
        return self.joint.lower

    @property
    def upper(self):
        return self.joint.upper

    def neutral(self):
        return self.joint.neutral()

    def normalize(self, q, v):
        return self.joint.normalize(q, v)

    def _outer(self, G):
        """``P F phi_s(G) F C^-1`` of inner transforms ``G: (..., 4, 4)``."""
        G = np.array(G, dtype=float)
        G[..., :3, 3] *= self.scale
        return self._left @ G @ self._right

    def evaluate(self, q):
        """``(G', S', H')``: (4, 4), (6, nq), (nq, 6, nq) (module docstring)."""
        G, S, H = self.joint.evaluate(q)
        return (self._outer(G), self._twist_map @ S,
                np.einsum("ab,jbk->jak", self._twist_map, H))

    def transform(self, q):
        return self._outer(self.joint.transform(q))

    def transforms(self, qs):
        return self._outer(self.joint.transforms(qs))

    def to_dict(self):
        return {"type": "MappedJoint", "joint": self.joint.to_dict(),
                "parent": self.parent.tolist(), "child": self.child.tolist(),
                "scale": self.scale, "mirror_axis": self.mirror_axis}

    @classmethod
    def from_dict(cls, d):
        """Inverse of :meth:`to_dict`; InvalidInputError for anything else."""
        from .registry import joint_from_dict

        keys = {"type", "joint", "parent", "child", "scale", "mirror_axis"}
        if set(d) != keys:
            raise InvalidInputError(f"a MappedJoint dict has the keys {sorted(keys)}, got "
                                    f"{sorted(d)}")
        axis = d["mirror_axis"]
        if axis is not None and (isinstance(axis, bool) or axis not in (0, 1, 2)):
            raise InvalidInputError(f"MappedJoint mirror_axis must be null, 0, 1 or 2, got "
                                    f"{axis!r}")
        return cls(joint_from_dict(d["joint"]), np.array(d["parent"], dtype=float),
                   np.array(d["child"], dtype=float), d["scale"], axis)

    def __repr__(self):
        return (f"MappedJoint({self.joint!r}, scale={self.scale:g}"
                f"{'' if self.mirror_axis is None else f', mirror_axis={self.mirror_axis}'})")
