"""Drive a bone through its stored joint (coordinate sliders) and bake the motion to keyframes,
destroying nothing: a bone's own location/rotation keys are converted or left alone, a bake
goes into a new action with the previous one kept on the NLA."""

from __future__ import annotations

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, IntProperty

from .. import bridge, handlers
from ..documents import joint_document
from ._common import BoneOperator

KEYS_ITEMS = [
    ("REFUSE", "Refuse",
     "Do not drive a bone that has location/rotation keys: the live drive would override them"),
    ("CONVERT", "Convert Keys to Coordinate",
     "Replace the bone's location/rotation keys by keys of the joint coordinate that best "
     "reproduces each keyed pose; the action as it was is kept as a copy"),
]


class SPLINE_JOINTS_OT_drive_joint(BoneOperator, bpy.types.Operator):
    """Add coordinate sliders (custom properties sj_q0..) with the joint's range to the bone and
    pose it live through the stored joint"""

    bl_idname = "spline_joints.drive_joint"
    bl_label = "Drive from Joint"

    existing_keys: EnumProperty(name="Existing Keys", items=KEYS_ITEMS, default="REFUSE",
                                description="What to do when the bone already has "
                                            "location/rotation keys")

    def invoke(self, context, event):
        try:
            armature, pose_bone = bridge.target_bone(context)
        except ValueError:
            return self.execute(context)
        if len(bridge.bone_transform_key_frames(armature, pose_bone)):
            return context.window_manager.invoke_props_dialog(self)  # ask before overriding
        return self.execute(context)

    def run(self, context, armature, pose_bone, s):
        from ...core.bones import joint_basis

        doc = joint_document(s)
        bridge.check_drivable(pose_bone)
        keyed = bridge.bone_transform_key_frames(armature, pose_bone)
        ranges = doc.finite_ranges()
        if len(keyed) and self.existing_keys == "REFUSE":
            raise ValueError(
                f"'{pose_bone.name}' has location/rotation keys on {len(keyed)} frames "
                f"({keyed[0]:g}-{keyed[-1]:g}) that the live drive would override: drive it "
                "with Existing Keys 'Convert Keys to Coordinate' (keys of the coordinate that "
                "best reproduce each keyed pose; the action as it was is kept), or remove or "
                "move the keys first")
        if len(keyed):
            return self.convert(context, armature, pose_bone, doc, keyed)
        q = np.array([_start_value(pose_bone, i, lo, hi) for i, (lo, hi) in enumerate(ranges)])
        # the pose first: a joint that cannot be posed changes nothing
        basis = joint_basis(doc.joint, bridge.read_rest_T_parent_child(pose_bone), q)
        names = [bridge.ensure_coordinate_property(pose_bone, i, lo, hi, q[i],
                                                   doc.coordinate_names[i])
                 for i, (lo, hi) in enumerate(ranges)]
        s.drive = True
        pose_bone.matrix_basis = bridge.array_to_matrix(basis)
        self.report({"INFO"}, f"'{pose_bone.name}' follows {', '.join(names)} through its joint "
                              f"{doc.name or type(doc.joint).__name__} ({doc.joint.nq} coordinate"
                              f"{'s' if doc.joint.nq != 1 else ''}: "
                              f"{', '.join(doc.coordinate_names)})")
        return {"FINISHED"}

    def convert(self, context, armature, pose_bone, doc, frames):
        """Keys of the coordinates at the keyed frames (per frame, the coordinates whose joint
        pose is closest to the keyed pose: core.fitting.ik.joint_coordinates), then the bone's
        own keys removed from the action, a copy of which keeps them."""
        from ...core.fitting.ik import joint_coordinates

        name = pose_bone.name
        with handlers.suspended():
            poses = np.array(bridge.read_frames(context.scene, frames, lambda f: bridge.read_pose_T_parent_child(
                armature.pose.bones[name])))
        q, results = joint_coordinates(doc.joint, poses)
        ranges = doc.finite_ranges()
        q = np.clip(q, ranges[:, 0], ranges[:, 1])
        mm = 1000.0 * max(r.position_error for r in results)
        deg = np.degrees(max(r.rotation_error for r in results))
        pose_bone = armature.pose.bones[name]
        kept = bridge.keep_action_copy(armature, "before Drive")
        bridge.remove_fcurves(armature, bridge.bone_transform_fcurves(armature, pose_bone))
        names = []
        for i, (lo, hi) in enumerate(ranges):
            names.append(bridge.ensure_coordinate_property(pose_bone, i, lo, hi, q[0, i],
                                                           doc.coordinate_names[i]))
            bridge.write_fcurve_keys(armature, pose_bone.path_from_id(f'["{names[-1]}"]'), 0,
                                     frames, q[:, i], group=name)
        pose_bone.spline_joints.drive = True
        level = {"INFO"} if all(r.converged for r in results) else {"WARNING"}
        self.report(level, f"Converted {len(frames)} keyed poses of '{name}' into keys of "
                           f"{', '.join(names)}: the joint reproduces them to {mm:.3f} mm, "
                           f"{deg:.3f} deg at most; the action as it was is kept as '{kept}'")
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
    """Key the bone's location/rotation over a frame range from its joint coordinates, in a new
    action (the previous action keeps playing from an NLA track)"""

    bl_idname = "spline_joints.bake_joint"
    bl_label = "Bake Joint"

    frame_start: IntProperty(name="Start", default=-1, description="First frame (-1: the scene's start)")
    frame_end: IntProperty(name="End", default=-1, description="Last frame (-1: the scene's end)")
    step: IntProperty(name="Step", default=1, min=1,
                      description="Key every n-th frame; above 1 the frames between keys are "
                                  "interpolated and leave the joint's path")
    subframes: IntProperty(name="Keys per Frame", default=1, min=1, max=16,
                           description="Keys within each frame (2: at every half frame) for "
                                       "motion blur or retiming; 1 keys whole frames")
    stop_driving: BoolProperty(name="Stop Live Drive", default=True,
                               description="Turn the live drive off so the baked keys play back")

    def run(self, context, armature, pose_bone, s):
        from ...core.bones import joint_basis

        scene = context.scene
        doc = joint_document(s)
        bridge.check_drivable(pose_bone)
        whole = bridge.frame_range(scene, self.frame_start, self.frame_end, self.step)
        frames = (whole[:, None] + np.arange(self.subframes)[None, :] / self.subframes).ravel()
        frames = frames[frames <= whole[-1]]
        name = pose_bone.name
        with handlers.suspended():
            qs = np.array(bridge.read_frames(scene, frames, lambda f: bridge.read_coordinate_values(
                armature.pose.bones[name], doc.joint.nq)))
        pose_bone = armature.pose.bones[name]
        basis = joint_basis(doc.joint, bridge.read_rest_T_parent_child(pose_bone), qs)
        kept = bridge.push_action_to_nla(armature)
        action = bridge.new_action(armature, f"{armature.name} {name} baked")
        written = bridge.write_bone_keyframes(armature, pose_bone, frames, basis)
        if self.stop_driving:
            pose_bone.spline_joints.drive = False
        notes = f"; the previous action plays on NLA track '{kept}'" if kept else ""
        if self.step > 1:
            notes += (f"; with Step {self.step} the frames between keys are interpolated "
                      "(linearly) and leave the joint's path: bake with Step 1 to stay on it")
        self.report({"INFO"}, f"Baked {len(frames)} keys ({whole[0]}-{whole[-1]}) of '{name}' into "
                              f"{', '.join(p.rsplit('.', 1)[-1] for p in written)} of the new "
                              f"action '{action.name}'{notes}")
        return {"FINISHED"}


classes = (SPLINE_JOINTS_OT_drive_joint, SPLINE_JOINTS_OT_bake_joint)
