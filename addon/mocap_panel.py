"""The "Motion Capture" sub-panel of the OpenSim panel: the marker trial and its import, the
Scale, Inverse Kinematics and Inverse Dynamics tools with their setup files, the forces
drawn as arrows. Drawing only: no scene changes."""

from __future__ import annotations

import bpy

from .panels import SidebarPanel


class VIEW3D_PT_spline_joints_mocap(SidebarPanel, bpy.types.Panel):
    bl_label = "Motion Capture"
    bl_idname = "VIEW3D_PT_spline_joints_mocap"
    bl_parent_id = "VIEW3D_PT_spline_joints_opensim"
    guide = "guides/motion-capture.md"

    def draw(self, context):
        layout, settings = self.layout, context.scene.spline_joints_mocap
        box = layout.box()
        box.prop(settings, "marker_file")
        row = box.row(align=True)
        row.prop(settings, "up_axis", expand=True)
        box.prop(settings, "use_trial_timing")
        box.prop(settings, "zero_frame")
        op = box.operator("spline_joints.import_markers", icon="EMPTY_DATA")
        op.filepath, op.up_axis = settings.marker_file, settings.up_axis
        op.use_trial_timing = settings.use_trial_timing
        box = layout.box()
        box.prop(settings, "scale_setup")
        box.operator("spline_joints.scale_model", icon="FULLSCREEN_ENTER")
        box = layout.box()
        box.prop(settings, "ik_setup")
        box.operator("spline_joints.inverse_kinematics", icon="CON_KINEMATIC")
        box = layout.box()
        box.prop(settings, "id_setup")
        box.prop(settings, "id_use_keys")
        box.operator("spline_joints.inverse_dynamics", icon="FORCE_TORQUE")
        box = layout.box()
        box.prop(settings, "loads_file")
        box.prop(settings, "metres_per_newton")
        box.operator("spline_joints.draw_forces", icon="FORCE_FORCE")


classes = (VIEW3D_PT_spline_joints_mocap,)
