"""Put a joint made elsewhere on the active bone: a joint file fitted on another rig, or one of
the OpenSim presets, mapped by the bones' rest frames and scaled by a bone-length ratio
(:mod:`core.transfer`), its path drawn as a preview."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, StringProperty
from bpy_extras.io_utils import ImportHelper

from ..documents import rest_frames, store_document
from ..paths import draw_joint_path, path_parent_name
from ..rig_scene import connected_head_problem
from ._common import BoneOperator

SCALE_ITEMS = [
    ("PARENT", "Parent Bone Length",
     "Scale the joint's translations by this rig's parent bone length over the joint's (as "
     "OpenSim scales a joint with its parent segment: a knee with the femur)"),
    ("CHILD", "Child Bone Length",
     "Scale the joint's translations by this rig's child bone length over the joint's"),
    ("NONE", "No Scaling", "Keep the joint's translations in metres as they are"),
    ("CUSTOM", "Custom Ratio", "Scale the joint's translations by the ratio given below"),
]


def preset_items(self, context):
    from ...core.transfer import PRESETS

    return [(key, label, text) for key, (label, text, _) in PRESETS.items()]


class _Transfer(BoneOperator):
    """Shared settings and steps: map ``doc`` onto the active bone, store it, draw its path."""

    scale_by: EnumProperty(name="Scale By", items=SCALE_ITEMS, default="PARENT",
                           description="Which length ratio scales the joint's translations "
                                       "(rotations are never scaled)")
    ratio: FloatProperty(name="Ratio", default=1.0, min=1e-3, max=1e3,
                         description="Factor of the joint's translations when Scale By is "
                                     "Custom Ratio (1.3: a bone 30 % longer)")
    draw_path: BoolProperty(name="Draw Path", default=True,
                            description="Draw the transferred joint's path (a preview of where "
                                        "the child bone's head goes) in the parent bone")

    def transfer(self, context, armature, pose_bone, s, doc):
        """Refused (ValueError, nothing changed) when the mapped joint would move the head of
        a bone connected to its parent (:func:`..rig_scene.connected_head_problem`)."""
        from ...core.display import joint_path
        from ...core.transfer import transfer_document

        if self.draw_path:
            path_parent_name(pose_bone)
        custom = self.scale_by == "CUSTOM"
        result = transfer_document(doc, rest_frames(pose_bone),
                                   "parent" if custom else self.scale_by.lower(),
                                   ratio=self.ratio if custom else None)
        problem = connected_head_problem(pose_bone, "FITTED", result.document.joint)
        if problem is not None:
            raise ValueError(f"{problem[0]}: {doc.name or 'the joint'} was not applied; "
                             f"{problem[1]}")
        path = joint_path(result.document) if self.draw_path else None
        store_document(s, result.document)
        if path is not None:
            draw_joint_path(context.scene, armature, pose_bone, path)
        text = (f"'{pose_bone.name}' has {doc.name or 'the joint'} with translations x"
                f"{result.ratio:.3f}")
        if result.warning:
            self.report({"WARNING"}, f"{text}; {result.warning}")
        else:
            self.report({"INFO"}, f"{text}; its rest pose is {result.rest_offset_mm:.1f} mm, "
                                  f"{result.rest_angle_deg:.1f} deg from the joint's")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_transfer_joint(_Transfer, bpy.types.Operator, ImportHelper):
    """Read a joint JSON file fitted on another rig and fit it to this bone and its parent:
    mapped by the bones' rest frames, translations scaled by a bone-length ratio"""

    bl_idname = "spline_joints.transfer_joint"
    bl_label = "Transfer Joint from File"
    filename_ext = ".json"
    filter_glob: StringProperty(default="*.json", options={"HIDDEN"})

    def run(self, context, armature, pose_bone, s):
        from ...core import io

        return self.transfer(context, armature, pose_bone, s, io.load(self.filepath))


class SPLINE_JOINTS_OT_apply_joint_preset(_Transfer, bpy.types.Operator):
    """Put an OpenSim joint on this bone and its parent (the gait2392 knee on a tibia under a
    femur, the Seth 2019 scapulothoracic joint on a scapula under a thorax), scaled to the bones"""

    bl_idname = "spline_joints.apply_joint_preset"
    bl_label = "Apply Joint Preset"

    preset: EnumProperty(name="Preset", items=preset_items,
                         description="The OpenSim joint to put on the active bone")

    def run(self, context, armature, pose_bone, s):
        from ...core.transfer import preset_document

        return self.transfer(context, armature, pose_bone, s, preset_document(self.preset))


classes = (SPLINE_JOINTS_OT_transfer_joint, SPLINE_JOINTS_OT_apply_joint_preset)
