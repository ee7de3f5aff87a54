"""Reach cones of a bone on a spherical joint: fit from samples, draw, and evaluate the pose;
Blender constraints for the limits they can hold exactly.

The joint rotation, tracked direction (the bone's Y axis) and limit values are the core's
(:mod:`core.bones`, through :mod:`core.fitting.reach_cone` and :mod:`core.expcoords`).
"""

from __future__ import annotations

import bpy
import numpy as np

from .. import bridge
from ..cones import cone_object_name, cone_options
from ..documents import joint_document
from ..holding import FREE_COLOUR
from ._common import BoneOperator

#: name of the Limit Rotation constraint that Add Blender Constraints writes
HINGE_CONSTRAINT = "SJ Hinge Limit"


class SPLINE_JOINTS_OT_fit_reach_cone(BoneOperator, bpy.types.Operator):
    """Fit the smallest reach cone (plus margin) and twist limit holding the captured samples"""

    bl_idname = "spline_joints.fit_reach_cone"
    bl_label = "Fit Reach Cone"

    def run(self, context, armature, pose_bone, settings):
        from ...core.bones import describe_cone_fit, fit_cone

        fit = fit_cone(bridge.read_rest_T_parent_child(pose_bone), bridge.read_sample_poses(settings.samples),
                       settings.cone_margin)
        settings.cone_axis = tuple(fit.axis)
        settings.cone_half_angle = fit.half_angle
        settings.cone_half_angle_x = min(fit.half_angle_1, 0.5 * np.pi)  # the properties' maximum
        settings.cone_half_angle_z = min(fit.half_angle_2, 0.5 * np.pi)
        settings.twist_limit = fit.twist_limit
        level, message = describe_cone_fit(fit, settings.cone_margin)
        self.report({level}, message)
        return {"FINISHED"}


class SPLINE_JOINTS_OT_draw_reach_cone(BoneOperator, bpy.types.Operator):
    """Create or update a translucent cone mesh at the joint, parented to the parent bone, in
    the rig's Spline Joints collection"""

    bl_idname = "spline_joints.draw_reach_cone"
    bl_label = "Draw Reach Cone"

    def run(self, context, armature, pose_bone, settings):
        from ...core.bones import cone_mesh

        rest = bridge.read_rest_T_parent_child(pose_bone)
        verts, faces = cone_mesh(cone_options(settings), settings.cone_length or pose_bone.bone.length)
        name = cone_object_name(armature, pose_bone)
        collection = bridge.rig_collection(context.scene, armature)
        obj = bridge.write_mesh_object(name, verts, faces, collection)
        bridge.move_to_collection(obj, collection)
        bridge.parent_to_bone(obj, armature, pose_bone.parent.name, rest)
        obj.data.materials.clear()
        # its own material: Hold Limits colours it by the pose's state (addon/holding.py)
        obj.data.materials.append(bridge.ensure_material(obj.name, FREE_COLOUR))
        obj.show_transparent = True
        obj.hide_select = True
        self.report({"INFO"}, f"Reach cone '{name}' drawn at '{pose_bone.name}' in '{pose_bone.parent.name}'")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_add_limit_constraints(BoneOperator, bpy.types.Operator):
    """Add a Limit Rotation constraint that keeps the bone's range without the extension, where
    Blender can hold the limit exactly: a driven 1-coordinate joint that turns the bone about
    one of its own axes. Reach cones and twist limits are not Euler-angle boxes: refused"""

    bl_idname = "spline_joints.add_limit_constraints"
    bl_label = "Add Blender Constraints"

    def run(self, context, armature, pose_bone, s):
        from ...core.bone_limits import hinge_limit

        if not (s.drive and s.joint_json):
            raise ValueError("Blender's Limit Rotation limits Euler angles to a box, which no "
                             "reach cone or twist limit is: nothing added. Keep Hold Limits on "
                             "for the cone; a constraint is offered for a driven 1-coordinate "
                             "hinge joint")
        doc = joint_document(s)
        limit = hinge_limit(doc.joint, bridge.read_rest_T_parent_child(pose_bone), doc.ranges)
        con = bridge.write_limit_rotation(pose_bone, HINGE_CONSTRAINT, limit.axis, limit.lower,
                                          limit.upper)
        self.report({"INFO"}, f"'{con.name}' on '{pose_bone.name}': {'XYZ'[limit.axis]} from "
                              f"{np.degrees(limit.lower):.2f} to {np.degrees(limit.upper):.2f} "
                              "deg in local space, the other axes locked")
        return {"FINISHED"}


classes = (SPLINE_JOINTS_OT_fit_reach_cone, SPLINE_JOINTS_OT_draw_reach_cone,
           SPLINE_JOINTS_OT_add_limit_constraints)
