"""Drive a bone through its stored joint (coordinate sliders) and bake the motion to keyframes."""

from __future__ import annotations

import bpy
import numpy as np
from bpy.props import BoolProperty, IntProperty

from .. import bridge, handlers
from ..documents import joint_document
from ._common import BoneOperator, frame_range, read_frames


class SPLINE_JOINTS_OT_drive_joint(BoneOperator, bpy.types.Operator):
    """Add coordinate sliders (custom properties sj_q0..) with the joint's range to the bone and
    pose it live through the stored joint"""

    bl_idname = "spline_joints.drive_joint"
    bl_label = "Drive from Joint"

    def run(self, context, armature, pose_bone, s):
        from ...core.bones import joint_basis

        doc = joint_document(s)
        bridge.check_drivable(pose_bone)
        ranges = doc.finite_ranges()
        q = np.array([_start_value(pose_bone, i, lo, hi) for i, (lo, hi) in enumerate(ranges)])
        # the pose first: a joint that cannot be posed changes nothing
        basis = joint_basis(doc.joint, bridge.read_rest_T_parent_child(pose_bone), q)
        names = [bridge.ensure_coordinate_property(pose_bone, i, lo, hi, q[i])
                 for i, (lo, hi) in enumerate(ranges)]
        s.drive = True
        pose_bone.matrix_basis = bridge.array_to_matrix(basis)
        self.report({"INFO"}, f"'{pose_bone.name}' follows {', '.join(names)} through its "
                              f"{type(doc.joint).__name__} ({doc.joint.nq} coordinate"
                              f"{'s' if doc.joint.nq != 1 else ''})")
        return {"FINISHED"}


def _start_value(pose_bone, i, lower, upper):
    """Value of coordinate slider i when driving starts: the bone's current ``sj_q<i>`` clamped
    to [lower, upper], or the middle of the range when the bone has none (BridgeError when the
    existing property is not a number)."""
    name = bridge.coordinate_property_name(i)
    if name not in pose_bone.keys():
        return 0.5 * (lower + upper)
    return min(max(bridge.read_custom_property(pose_bone, name), lower), upper)


class SPLINE_JOINTS_OT_bake_joint(BoneOperator, bpy.types.Operator):
    """Write the bone's location/rotation keyframes over a frame range from its joint coordinates"""

    bl_idname = "spline_joints.bake_joint"
    bl_label = "Bake Joint"

    frame_start: IntProperty(name="Start", default=-1, description="First frame (-1: the scene's start)")
    frame_end: IntProperty(name="End", default=-1, description="Last frame (-1: the scene's end)")
    step: IntProperty(name="Step", default=1, min=1)
    stop_driving: BoolProperty(name="Stop Live Drive", default=True,
                               description="Turn the live drive off so the baked keys play back")

    def run(self, context, armature, pose_bone, s):
        from ...core.bones import joint_basis

        scene = context.scene
        doc = joint_document(s)
        bridge.check_drivable(pose_bone)
        frames = frame_range(scene, self.frame_start, self.frame_end, self.step)
        name = pose_bone.name
        with handlers.suspended():
            qs = np.array(read_frames(scene, frames, lambda f: bridge.read_coordinate_values(
                armature.pose.bones[name], doc.joint.nq)))
        pose_bone = armature.pose.bones[name]
        basis = joint_basis(doc.joint, bridge.read_rest_T_parent_child(pose_bone), qs)
        written = bridge.write_bone_keyframes(armature, pose_bone, frames, basis)
        if self.stop_driving:
            pose_bone.spline_joints.drive = False
        self.report({"INFO"}, f"Baked {len(frames)} frames ({frames[0]}-{frames[-1]}) of '{name}' into "
                              f"{', '.join(p.rsplit('.', 1)[-1] for p in written)}")
        return {"FINISHED"}


classes = (SPLINE_JOINTS_OT_drive_joint, SPLINE_JOINTS_OT_bake_joint)
