"""A bone as the child of a joint: the add-on's bone conventions without Blender.

Frames (those of ``addon/bridge.py``): ``T_parent_child`` (4, 4) is the pose of the child
bone's frame (head at the joint, Y along the bone) in its parent bone's frame and ``T_rest``
(4, 4) the same pose at rest. With Blender's default inheritance a pose bone's
``matrix_basis`` B satisfies ``T_parent_child = T_rest @ B``, and its joint rotation is the
rotation of B: ``R_rest^T R_parent_child`` (child rest frame -> posed).

Reach cones of a bone track its Y axis (:data:`BONE_AXIS`); an elliptical cone's first
half-angle is towards the bone's X axis (:data:`REF_AXIS`), the second towards its Z axis.
The limit values are those of :mod:`core.expcoords`, through :mod:`core.fitting.reach_cone`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import expcoords
from .errors import InvalidInputError, NonFiniteError
from .fitting import reach_cone
from .lie import se3, so3

__all__ = ["BONE_AXIS", "REF_AXIS", "bone_frame", "pose_basis", "joint_basis", "joint_rotations", "BoneCone",
           "ConeStatus", "cone_status", "cone_mesh", "fit_cone", "describe_cone_fit"]

BONE_AXIS = np.array([0.0, 1.0, 0.0])  # a bone's Y axis: the direction a reach cone limits
REF_AXIS = np.array([1.0, 0.0, 0.0])   # an elliptical cone's first half-angle is towards X


#: Blender's thresholds in ``vec_roll_to_mat3_normalized`` (armature.cc): below SAFE the
#: bone is near -Y and ``1 + y`` is recomputed from x and z; below CRITICAL (distance from the
#: -Y axis) the bone is taken as exactly -Y
_ROLL_SAFE = 6.1e-3
_ROLL_CRITICAL = 2.5e-4


def bone_frame(head, tail, roll=0.0):
    """The rest frame (4, 4) Blender gives a bone from its head, tail (3,) each, metres, and
    roll (rad): origin at the head, Y along ``tail - head``, X and Z from Blender's rule for a
    roll of 0 (``vec_roll_to_mat3_normalized``: the rotation taking Y to the bone's direction
    about ``Y x direction``) turned by ``roll`` about Y. InvalidInputError for a bone of zero
    length."""
    head = np.asarray(head, dtype=float).reshape(3)
    d = np.asarray(tail, dtype=float).reshape(3) - head
    length = float(np.linalg.norm(d))
    if not length > 0.0 or not np.all(np.isfinite(d)):
        raise InvalidInputError(f"a bone needs distinct, finite head and tail, got {head.tolist()} "
                                f"and {np.asarray(tail).tolist()}")
    x, y, z = d / length
    theta, theta_alt = 1.0 + y, x * x + z * z
    if theta > _ROLL_SAFE or theta_alt > _ROLL_CRITICAL ** 2:
        if theta <= _ROLL_SAFE:
            theta = 0.5 * theta_alt + 0.125 * theta_alt * theta_alt
        B = np.array([[1.0 - x * x / theta, x, -x * z / theta],
                      [-x, y, -z],
                      [-x * z / theta, z, 1.0 - z * z / theta]])
    else:
        B = np.diag([-1.0, -1.0, 1.0])
    T = np.eye(4)
    T[:3, :3] = so3.exp(np.array([x, y, z]) * float(roll)) @ B
    T[:3, 3] = head
    return T


def pose_basis(T_rest, T_parent_child):
    """Basis matrices that put the bone at ``T_parent_child``: ``T_rest^-1 T_parent_child``.

    T_rest: (4, 4) rigid; T_parent_child: (..., 4, 4). Returns (..., 4, 4). The inverse is the
    rigid one (``R^T``, ``-R^T p``), which equals the general inverse to round-off for the
    orthonormal rest poses the bridge reads; InvalidInputError when T_rest is not rigid.
    """
    T_rest = se3.check_transform(T_rest, "T_rest")
    return se3.inv(T_rest) @ np.asarray(T_parent_child, dtype=float)


def joint_basis(joint, T_rest, q):
    """Basis matrices that pose a bone through its joint: ``T_rest^-1 G(q)``.

    joint: a core joint; T_rest: (4, 4); q: (nq,) for one pose -> (4, 4), or (N, nq) ->
    (N, 4, 4). NonFiniteError names the samples whose coordinates are NaN or inf.
    """
    q = np.asarray(q, dtype=float)
    if q.shape[-1:] != (joint.nq,) or q.ndim > 2:
        raise InvalidInputError(f"q must have shape ({joint.nq},) or (N, {joint.nq}) for this "
                                f"{type(joint).__name__}, got {q.shape}")
    bad = ~np.all(np.isfinite(q.reshape(-1, joint.nq)), axis=1)
    if np.any(bad):
        raise NonFiniteError(f"joint coordinates are NaN or inf at sample(s) "
                             f"{np.flatnonzero(bad)[:10].tolist()}; check the values (or the "
                             "animation) that set them")
    G = joint.transform(q) if q.ndim == 1 else joint.transforms(q)
    return pose_basis(T_rest, G)


def joint_rotations(T_rest, T_parent_child):
    """Joint rotations ``R_rest^T R`` (..., 3, 3) of child-in-parent poses (..., 4, 4) about
    the rest pose T_rest (4, 4)."""
    T_rest = se3.check_transform(T_rest, "T_rest")
    R = np.asarray(T_parent_child, dtype=float)[..., :3, :3]
    return np.einsum("ji,...jk->...ik", T_rest[:3, :3], R)


@dataclass(frozen=True)
class BoneCone:
    """Reach-cone and twist limits of a bone on a spherical joint (angles in radians).

    axis: (3,) cone centre in the child's rest frame (normalized where used). shape:
    "circular" (half_angle) or "elliptical" (half_angle_x towards the bone's X axis,
    half_angle_z towards its Z axis). twist_limit: largest |twist| about the bone's Y axis.
    """

    axis: tuple = (0.0, 1.0, 0.0)
    shape: str = "circular"
    half_angle: float = np.pi / 4
    half_angle_x: float = np.pi / 4
    half_angle_z: float = np.pi / 6
    twist_limit: float = np.pi

    def __post_init__(self):
        if self.shape not in ("circular", "elliptical"):
            raise InvalidInputError(f"cone shape must be 'circular' or 'elliptical', got {self.shape!r}")

    @property
    def half_angles(self):
        """(half-angle towards X, half-angle towards Z): both ``half_angle`` when circular."""
        if self.shape == "circular":
            return self.half_angle, self.half_angle
        return self.half_angle_x, self.half_angle_z


@dataclass(frozen=True)
class ConeStatus:
    """A pose against a :class:`BoneCone`: swing_value (>= 0 inside the cone), twist (rad) and
    inside (swing inside and ``|twist| <= twist_limit``)."""

    swing_value: float
    twist: float
    inside: bool


def cone_status(cone, T_rest, T_parent_child):
    """:class:`ConeStatus` of one pose T_parent_child (4, 4) of a bone at rest pose T_rest
    (4, 4). The swing value is :func:`core.expcoords.reach_cone_value` (circular) or
    :func:`core.expcoords.elliptic_cone_value` of the cone coordinates of the joint rotation."""
    N = reach_cone.neutral_rotation(BONE_AXIS, cone.axis)
    r = reach_cone.cone_coordinates(joint_rotations(T_rest, T_parent_child), N)
    if cone.shape == "circular":
        g = float(expcoords.reach_cone_value(r, BONE_AXIS, cone.half_angle))
    else:
        g = float(expcoords.elliptic_cone_value(r, BONE_AXIS, REF_AXIS, *cone.half_angles))
    twist = float(expcoords.twist_angle(r, BONE_AXIS))
    return ConeStatus(g, twist, bool(g >= 0.0 and abs(twist) <= cone.twist_limit))


def cone_mesh(cone, length, n=48):
    """Closed mesh of the cone in the child's rest frame: vertices (n + 2, 3), triangles (2n, 3).

    Vertex 0 is the apex at the joint, vertices 1..n the ends of n boundary rays of the given
    length (:func:`core.fitting.reach_cone.cone_boundary`) and vertex n + 1 their centroid,
    the hub of the fan that closes the far end. Triangles are wound outwards for cones
    narrower than a half-space (half-angles below pi/2; wider ones turn inside out).
    """
    length = float(length)
    if not (np.isfinite(length) and length > 0.0):
        raise InvalidInputError(f"cone length must be a positive distance, got {length!r}")
    N = reach_cone.neutral_rotation(BONE_AXIS, cone.axis)
    ring = length * reach_cone.cone_boundary(N, *cone.half_angles, n, BONE_AXIS, REF_AXIS)
    verts = np.vstack([np.zeros(3), ring, ring.mean(axis=0)])
    i = np.arange(int(n))
    j = (i + 1) % int(n)
    sides = np.column_stack([np.zeros(int(n), dtype=int), 1 + j, 1 + i])
    caps = np.column_stack([np.full(int(n), int(n) + 1), 1 + i, 1 + j])
    return verts, np.vstack([sides, caps])


def fit_cone(T_rest, poses, margin=0.0):
    """Fit a bone's reach cone and twist limit to child-in-parent poses (N, 4, 4), N >= 1:
    :func:`core.fitting.reach_cone.fit_reach_cone` of their joint rotations about T_rest
    (4, 4), tracking :data:`BONE_AXIS` with the first elliptic half-angle towards
    :data:`REF_AXIS`; margin (radians) is added to every angle. Returns its ReachConeFit."""
    return reach_cone.fit_reach_cone(joint_rotations(T_rest, poses), BONE_AXIS, REF_AXIS, margin)


def describe_cone_fit(fit, margin):
    """``(level, message)`` for a user: a ReachConeFit's angles in degrees and its held-out
    angle; level "WARNING" when a sample left out falls farther outside the cone of the
    others than ``margin`` (radians) covers, else "INFO"."""
    deg = math.degrees
    message = (f"Reach cone from {fit.n_samples} samples: half-angle {deg(fit.half_angle):.1f} "
               f"deg (elliptic {deg(fit.half_angle_1):.1f} x {deg(fit.half_angle_2):.1f}), "
               f"twist {deg(fit.twist_limit):.1f} deg")
    if not math.isfinite(fit.heldout_angle):
        return "INFO", message
    message += (f"; a sample left out falls up to {deg(fit.heldout_angle):.1f} deg outside the "
                "cone of the others")
    if fit.heldout_angle <= margin:
        return "INFO", message
    return "WARNING", (f"{message}, more than the margin ({deg(margin):.1f} deg): capture more "
                       "poses near the limit or raise the margin")
