"""The Linkages sidebar panel (tab "Spline Joints") and its lists. Drawing only."""

from __future__ import annotations

import bpy

from .panels import SidebarPanel


class SPLINE_JOINTS_UL_linkages(bpy.types.UIList):
    """One row per linkage: name, joints, live or baked."""

    bl_idname = "SPLINE_JOINTS_UL_linkages"

    def draw_item(self, context, layout, data, item, icon, active_data, active_property, index=0, flt_flag=0):
        layout.prop(item, "name", text="", emboss=False, icon="CON_PIVOT")
        state = "live" if item.live else (f"{item.baked_frames} frames" if item.baked_frames else "off")
        layout.label(text=f"{len(item.joints)} joints, {state}")


class SPLINE_JOINTS_UL_link_joints(bpy.types.UIList):
    """One row per joint: name, type, the two bodies."""

    bl_idname = "SPLINE_JOINTS_UL_link_joints"

    def draw_item(self, context, layout, data, item, icon, active_data, active_property, index=0, flt_flag=0):
        layout.prop(item, "name", text="", emboss=False)
        first = "world" if item.body1 is None else item.body1.name + (f":{item.bone1}" if item.bone1 else "")
        second = "?" if item.body2 is None else item.body2.name + (f":{item.bone2}" if item.bone2 else "")
        layout.label(text=f"{item.kind}: {first} - {second}")


class VIEW3D_PT_spline_joints_linkages(SidebarPanel, bpy.types.Panel):
    """Linkages: join objects by joints (closing loops), drive one, bake."""

    bl_label = "Linkages"
    bl_idname = "VIEW3D_PT_spline_joints_linkages"
    guide = "guides/linkages.md"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        scene = context.scene
        row = layout.row()
        row.template_list("SPLINE_JOINTS_UL_linkages", "", scene, "spline_joints_linkages",
                          scene, "spline_joints_active_linkage", rows=2)
        col = row.column(align=True)
        col.operator("spline_joints.add_linkage", text="", icon="ADD")
        col.operator("spline_joints.remove_linkage", text="", icon="REMOVE")
        layout.label(text="Select 1-2 objects (or bones), the moving one active; joint at the 3D cursor",
                     icon="INFO")
        layout.operator_menu_enum("spline_joints.add_link_joint", "kind", text="Add Joint", icon="ADD")
        layout.operator_menu_enum("spline_joints.add_demo_linkage", "demo", icon="MESH_CUBE")
        items = scene.spline_joints_linkages
        i = scene.spline_joints_active_linkage
        if not 0 <= i < len(items):
            return
        item = items[i]
        row = layout.row()
        row.template_list("SPLINE_JOINTS_UL_link_joints", "", item, "joints", item, "active_joint", rows=3)
        row.operator("spline_joints.remove_link_joint", text="", icon="REMOVE")
        if 0 <= item.active_joint < len(item.joints):
            _draw_joint(layout, item.joints[item.active_joint])
        obj = context.active_object
        bone = context.active_pose_bone if context.mode == "POSE" else None
        if bone is not None:
            layout.prop(bone, "spline_joints_linkage_mass", text=f"Mass of {bone.name}")
        elif obj is not None:
            layout.prop(obj, "spline_joints_linkage_mass", text=f"Mass of {obj.name}")
        box = layout.box()
        box.label(text="Live Assembly", icon="DRIVER")
        box.prop(item, "driver")
        if item.driver is not None and item.driver.type == "ARMATURE":
            box.prop_search(item, "driver_bone", item.driver.data, "bones")
        box.prop_search(item, "drive_joint", item, "joints")
        if item.drive_joint:
            box.prop(item, "drive_value")
        box.prop(item, "live")
        col = box.column(align=True)
        col.prop(item, "cg_iterations")
        col.prop(item, "geometric_iterations")
        col.prop(item, "tolerance")
        box.label(text=f"Constraint error {item.error:.2e} m/rad")
        if item.status:
            box.label(text=item.status)
        box.operator("spline_joints.assemble_linkage", icon="CON_PIVOT")
        box = layout.box()
        box.label(text="Bake", icon="PHYSICS")
        box.prop(item, "mode")
        if item.mode == "DYNAMICS":
            col = box.column(align=True)
            col.prop(item, "duration")
            col.prop(item, "substeps")
            driven = item.driver is not None or item.drive_joint
            box.label(text="The driver follows its keys" if driven else "Released: no driver",
                      icon="ANIM" if driven else "BLANK1")
        box.operator("spline_joints.bake_linkage", icon="REC")
        if item.baked_frames:
            box.label(text=f"{item.baked_frames} frames ({item.solver}), error {item.constraint_error:.1e}")
            if item.engagements:
                box.label(text=f"Limits engaged {item.engagements}x, deepest "
                               f"{item.limit_violation:.1e} (allowed {item.violation_tolerance:.1e})")


def _draw_joint(layout, joint):
    """The active joint's type and its own settings (spring, curve, surface, limits)."""
    col = layout.column(align=True)
    col.prop(joint, "kind")
    if joint.kind == "spring":
        col.prop(joint, "stiffness")
        col.prop(joint, "rest_length")
        col.prop(joint, "damping")
        return
    if joint.kind in ("curve", "curve_point"):
        col.prop(joint, "curve")
        return
    if joint.kind == "surface_point":
        col.prop(joint, "surface")
        return
    if joint.kind not in ("hinge", "ball", "cylinder", "slotted", "slider", "line"):
        return
    col.prop(joint, "use_limits")
    if not joint.use_limits:
        return
    if joint.kind == "ball":
        col.prop(joint, "cone")
        return
    if joint.kind != "hinge":
        col.prop(joint, "lower_slide")
        col.prop(joint, "upper_slide")
    if joint.kind in ("hinge", "cylinder", "slotted"):
        col.prop(joint, "lower_angle")
        col.prop(joint, "upper_angle")


classes = (SPLINE_JOINTS_UL_linkages, SPLINE_JOINTS_UL_link_joints, VIEW3D_PT_spline_joints_linkages)
