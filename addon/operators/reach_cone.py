"""Reach cones of a bone on a spherical joint: fit from samples, draw, and evaluate the pose.

The joint rotation of a bone is its rotation relative to its rest pose (child rest frame ->
posed, the rotation of ``matrix_basis``); the tracked direction is the bone's Y axis. The
limit values come only from the core (:mod:`core.expcoords` via :mod:`core.fitting.reach_cone`).
"""

from __future__ import annotations

import bpy
import numpy as np

from .. import bridge
from ._common import BoneOperator

BONE_AXIS = np.array([0.0, 1.0, 0.0])  # a bone's Y axis: the direction the cone limits
REF_AXIS = np.array([1.0, 0.0, 0.0])   # elliptic half-angle 1 is towards the bone's X axis
CONE_PREFIX = "SJ_ReachCone"


def _core():
    from ...core import expcoords
    from ...core.fitting import reach_cone

    return expcoords, reach_cone


def joint_rotations(pose_bone, T_parent_child: np.ndarray) -> np.ndarray:
    """Joint rotations (..., 3, 3) from child-in-parent poses (..., 4, 4)."""
    rest = bridge.read_rest_T_parent_child(pose_bone)
    return np.einsum("ji,...jk->...ik", rest[:3, :3], np.asarray(T_parent_child)[..., :3, :3])


def cone_status(settings, R: np.ndarray) -> dict:
    """Limit values of one joint rotation R (3, 3) under the bone's cone settings.

    Returns swing value (>= 0 inside), twist angle (rad) and ``inside``.
    """
    expcoords, reach_cone = _core()
    N = reach_cone.neutral_rotation(BONE_AXIS, settings.cone_axis)
    r = reach_cone.cone_coordinates(R, N)
    if settings.cone_shape == "CIRCULAR":
        g = float(expcoords.reach_cone_value(r, BONE_AXIS, settings.cone_half_angle))
    else:
        g = float(expcoords.elliptic_cone_value(r, BONE_AXIS, REF_AXIS, settings.cone_half_angle_x,
                                                settings.cone_half_angle_z))
    twist = float(expcoords.twist_angle(r, BONE_AXIS))
    return {"swing_value": g, "twist": twist, "inside": g >= 0.0 and abs(twist) <= settings.twist_limit}


def cone_mesh(settings, length: float, n: int = 48) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (n + 2, 3) and triangles (2n, 3) of the cone in the child's rest frame.

    Apex at the joint, n boundary rays of the given length, closed by a fan at the far end.
    """
    _, reach_cone = _core()
    N = reach_cone.neutral_rotation(BONE_AXIS, settings.cone_axis)
    if settings.cone_shape == "CIRCULAR":
        d = reach_cone.cone_boundary(N, settings.cone_half_angle, None, n)
    else:
        d = reach_cone.cone_boundary(N, settings.cone_half_angle_x, settings.cone_half_angle_z, n)
    ring = length * d
    cap = ring.mean(axis=0)
    verts = np.vstack([np.zeros(3), ring, cap])
    i = np.arange(n)
    j = (i + 1) % n
    sides = np.column_stack([np.zeros(n, dtype=int), 1 + i, 1 + j])
    caps = np.column_stack([np.full(n, n + 1), 1 + j, 1 + i])
    return verts, np.vstack([sides, caps])


def cone_object_name(armature, pose_bone) -> str:
    return f"{CONE_PREFIX}_{armature.name}_{pose_bone.name}"


class SPLINE_JOINTS_OT_fit_reach_cone(BoneOperator, bpy.types.Operator):
    """Fit the smallest reach cone (plus margin) and twist limit holding the captured samples"""

    bl_idname = "spline_joints.fit_reach_cone"
    bl_label = "Fit Reach Cone"

    def run(self, context, armature, pose_bone, settings):
        if len(settings.samples) == 0:
            raise ValueError("no samples: capture poses of the bone first (Capture Pose / Frame Range)")
        R = joint_rotations(pose_bone, bridge.read_sample_poses(settings.samples))
        _, reach_cone = _core()
        fit = reach_cone.fit_reach_cone(R, BONE_AXIS, REF_AXIS, settings.cone_margin)
        settings.cone_axis = tuple(fit.axis)
        settings.cone_half_angle = fit.half_angle
        settings.cone_half_angle_x = min(fit.half_angle_1, 0.5 * np.pi)
        settings.cone_half_angle_z = min(fit.half_angle_2, 0.5 * np.pi)
        settings.twist_limit = fit.twist_limit
        deg = np.degrees
        self.report({"INFO"}, f"Reach cone from {fit.n_samples} samples: half-angle "
                              f"{deg(fit.half_angle):.1f} deg (elliptic {deg(fit.half_angle_1):.1f} x "
                              f"{deg(fit.half_angle_2):.1f}), twist {deg(fit.twist_limit):.1f} deg")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_draw_reach_cone(BoneOperator, bpy.types.Operator):
    """Create or update a translucent cone mesh at the joint, parented to the parent bone"""

    bl_idname = "spline_joints.draw_reach_cone"
    bl_label = "Draw Reach Cone"

    def run(self, context, armature, pose_bone, settings):
        rest = bridge.read_rest_T_parent_child(pose_bone)
        length = settings.cone_length or pose_bone.bone.length
        verts, faces = cone_mesh(settings, length)
        name = cone_object_name(armature, pose_bone)
        obj = bridge.write_mesh_object(name, verts, faces, context.scene.collection)
        bridge.parent_to_bone(obj, armature, pose_bone.parent.name, rest)
        obj.data.materials.clear()
        obj.data.materials.append(bridge.ensure_material("SJ_ReachCone", (0.2, 0.6, 1.0, 0.35)))
        obj.show_transparent = True
        obj.hide_select = True
        self.report({"INFO"}, f"Reach cone '{name}' drawn at '{pose_bone.name}' in '{pose_bone.parent.name}'")
        return {"FINISHED"}


classes = (SPLINE_JOINTS_OT_fit_reach_cone, SPLINE_JOINTS_OT_draw_reach_cone)
