"""Sidebar panels (tab "Spline Joints") and the samples UIList. Drawing only: no scene changes."""

from __future__ import annotations

import math

import bpy

from .bridge import target_bone
from .documents import OSIM_PATH_KEY, is_osim_armature, osim_rig, status_words
from .muscles import activation_property

CATEGORY = "Spline Joints"


def _bone_or_hint(layout, context, hint="Make the joint's child bone active in Pose Mode",
                  usable=lambda pose_bone: True):
    """(armature, pose bone) of the active bone, or (None, None) after drawing ``hint``
    when there is none or ``usable(pose_bone)`` is False."""
    try:
        armature, pose_bone = target_bone(context)
    except ValueError:
        armature, pose_bone = None, None
    if pose_bone is None or not usable(pose_bone):
        layout.label(text=hint, icon="INFO")
        return None, None
    return armature, pose_bone


class SPLINE_JOINTS_UL_samples(bpy.types.UIList):
    """One row per captured sample: frame, coordinates, weight."""

    bl_idname = "SPLINE_JOINTS_UL_samples"

    def draw_item(self, context, layout, data, item, icon, active_data, active_property, index=0, flt_flag=0):
        row = layout.row(align=True)
        row.label(text=f"{index + 1}  f{item.frame}")
        q = ", ".join(f"{v:.3f}" for v in tuple(item.q)[: item.n_coordinates]) or "-"
        row.label(text=f"q = {q}")
        row.prop(item, "weight", text="w", emboss=False)


class SidebarPanel:
    """Mixin of every panel: the "Spline Joints" tab of the 3D view's sidebar, and a help button
    in the header that opens the panel's guide (``guide``: its page under docs/)."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = CATEGORY
    guide = "getting-started.md"

    def draw_header_preset(self, context):
        op = self.layout.operator("spline_joints.open_guide", text="", icon="HELP", emboss=False)
        op.page = self.guide


class VIEW3D_PT_spline_joints_capture(SidebarPanel, bpy.types.Panel):
    bl_label = "Capture"
    bl_idname = "VIEW3D_PT_spline_joints_capture"
    guide = "guides/knee.md"

    def draw(self, context):
        layout = self.layout
        armature, pose_bone = _bone_or_hint(layout, context)
        if pose_bone is None:
            return
        s = pose_bone.spline_joints
        parent = pose_bone.parent.name if pose_bone.parent else "none"
        layout.label(text=f"{pose_bone.name} in {parent}", icon="BONE_DATA")
        col = layout.column(align=True)
        col.prop(s, "n_coordinates")
        col.prop(s, "source")
        if s.source == "FRAME":
            row = col.row(align=True)
            row.prop(s, "frame_start")
            row.prop(s, "frame_end")
            row = col.row(align=True)
            row.prop(s, "frame_q_start")
            row.prop(s, "frame_q_end")
        else:
            col.prop_search(s, "source_bone", armature.pose, "bones")
            for i in range(s.n_coordinates):
                col.prop(s, f"rotation_axis_{i}" if s.source == "ROTATION" else f"property_{i}")
        row = layout.row(align=True)
        row.operator("spline_joints.capture_pose", icon="REC")
        row.operator("spline_joints.capture_range", icon="RENDER_ANIMATION")
        layout.prop(s, "capture_step")
        layout.template_list("SPLINE_JOINTS_UL_samples", "", s, "samples", s, "active_sample", rows=4)
        row = layout.row(align=True)
        row.operator("spline_joints.delete_sample", icon="REMOVE")
        row.operator("spline_joints.clear_samples", icon="TRASH")


class VIEW3D_PT_spline_joints_fit(SidebarPanel, bpy.types.Panel):
    bl_label = "Fit"
    bl_idname = "VIEW3D_PT_spline_joints_fit"
    guide = "guides/knee.md"

    def draw(self, context):
        layout = self.layout
        _, pose_bone = _bone_or_hint(layout, context)
        if pose_bone is None:
            return
        s = pose_bone.spline_joints
        col = layout.column(align=True)
        col.prop(s, "fit_type", text="")
        if s.fit_type == "CURVE":
            col.prop(s, "fit_frames")
            col.prop(s, "fit_smoothing")
        else:
            col.prop(s, "fit_grid")
            col.prop(s, "fit_method", text="")
        col.prop(s, "fit_order")
        col.prop(s, "fit_length_scale")
        row = layout.row(align=True)
        row.operator("spline_joints.fit", icon="IPO_BEZIER")
        row.operator("spline_joints.draw_joint_path", icon="CURVE_PATH", text="Draw Path")
        row = layout.row(align=True)
        row.operator("spline_joints.import_joint", icon="IMPORT", text="Import")
        row.operator("spline_joints.export_joint", icon="EXPORT", text="Export")
        row = layout.row(align=True)
        row.operator("spline_joints.transfer_joint", icon="LINKED", text="Transfer")
        row.operator_menu_enum("spline_joints.apply_joint_preset", "preset", icon="PRESET",
                               text="Preset")
        if s.fit_status:
            box = layout.box()
            text, icon = status_words(s.fit_status)
            box.label(text=text, icon=icon)
            box.label(text=f"Position RMS {s.fit_rms_mm:.3f} mm, max {s.fit_max_mm:.3f} mm")
            box.label(text=f"Rotation RMS {s.fit_rms_deg:.3f} deg, max {s.fit_max_deg:.3f} deg")
            _draw_heldout(box, s)


def _draw_heldout(layout, settings):
    """The stored fit's held-out errors (the joint between neighbouring samples, see
    core.fitting.report.midpoint_errors), when the stored report has them."""
    from .documents import joint_document

    try:
        report = joint_document(settings).report
    except ValueError:
        return
    if report is None or not math.isfinite(report.heldout_max_position_mm):
        return
    layout.label(text=f"Between samples RMS {report.heldout_rms_position_mm:.3f} mm, max "
                      f"{report.heldout_max_position_mm:.3f} mm")
    layout.label(text=f"Between samples RMS {report.heldout_rms_rotation_deg:.3f} deg, max "
                      f"{report.heldout_max_rotation_deg:.3f} deg")


class VIEW3D_PT_spline_joints_drive(SidebarPanel, bpy.types.Panel):
    bl_label = "Drive"
    bl_idname = "VIEW3D_PT_spline_joints_drive"
    guide = "guides/knee.md"

    def draw(self, context):
        layout = self.layout
        _, pose_bone = _bone_or_hint(layout, context, "Fit a joint first",
                                     lambda pb: bool(pb.spline_joints.joint_json))
        if pose_bone is None:
            return
        s = pose_bone.spline_joints
        row = layout.row(align=True)
        row.operator("spline_joints.drive_joint", icon="DRIVER")
        row.prop(s, "drive", toggle=True)
        row.prop(s, "hold_limits", toggle=True, icon="LOCKED", text="")
        keys = pose_bone.keys()
        i = 0
        while f"sj_q{i}" in keys:                 # one slider per coordinate, any count
            layout.prop(pose_bone, f'["sj_q{i}"]', slider=True)
            i += 1
        layout.operator("spline_joints.bake_joint", icon="KEYINGSET")


class SPLINE_JOINTS_UL_mechanisms(bpy.types.UIList):
    """One row per mechanism placed in the scene."""

    bl_idname = "SPLINE_JOINTS_UL_mechanisms"

    def draw_item(self, context, layout, data, item, icon, active_data, active_property, index=0, flt_flag=0):
        layout.label(text=item.name, icon="PHYSICS")
        layout.label(text=f"{item.baked_frames} frames" if item.baked_frames else "not baked")


class VIEW3D_PT_spline_joints_mechanisms(SidebarPanel, bpy.types.Panel):
    bl_label = "Mechanisms"
    bl_idname = "VIEW3D_PT_spline_joints_mechanisms"
    guide = "guides/mechanisms.md"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        scene = context.scene
        layout.operator_menu_enum("spline_joints.add_mechanism", "demo", icon="ADD")
        layout.template_list("SPLINE_JOINTS_UL_mechanisms", "", scene, "spline_joints_mechanisms",
                             scene, "spline_joints_active_mechanism", rows=3)
        mechs = scene.spline_joints_mechanisms
        i = scene.spline_joints_active_mechanism
        if 0 <= i < len(mechs):
            item = mechs[i]
            col = layout.column(align=True)
            col.prop(item, "duration")
            col.prop(item, "substeps")
            layout.operator("spline_joints.bake_dynamics", icon="PHYSICS")
            row = layout.row(align=True)
            row.operator("spline_joints.live_mechanism", icon="PLAY")
            row.operator("spline_joints.clear_preview", text="", icon="X")
            if item.baked_frames:
                layout.label(text=f"Energy drift {100 * item.energy_drift:.3f} %, {item.bake_seconds:.2f} s")


class VIEW3D_PT_spline_joints_opensim(SidebarPanel, bpy.types.Panel):
    bl_label = "OpenSim"
    bl_idname = "VIEW3D_PT_spline_joints_opensim"
    guide = "guides/opensim.md"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        obj, layout = context.object, self.layout
        layout.operator("spline_joints.import_osim", icon="IMPORT", text="Import Model")
        if not is_osim_armature(obj):
            layout.label(text="Select an imported OpenSim armature", icon="INFO")
            return
        try:
            rig = osim_rig(obj.data)
        except ValueError as exc:
            layout.label(text=str(exc), icon="ERROR")
            return
        box = layout.box()
        box.label(text=f"{rig.model.name}: {len(rig.bodies)} bodies, {rig.model.nq} coordinates",
                  icon="ARMATURE_DATA")
        box.label(text=str(obj.data.get(OSIM_PATH_KEY, "")))
        layout.operator("spline_joints.import_osim_motion", icon="ANIM", text="Import Motion")
        _draw_osim_fits(layout, obj.data, rig)
        _draw_osim_muscles(layout, obj)
        row = layout.row(align=True)
        row.operator("spline_joints.export_osim", icon="EXPORT", text="Export Model")
        row.operator("spline_joints.export_osim_motion", icon="EXPORT", text="Export Motion")
        from .bridge import coordinate_path

        col = layout.column(align=True)
        for name in rig.coordinate_names:
            if name in obj.keys():
                col.prop(obj, coordinate_path(name), text=name)


class SPLINE_JOINTS_UL_muscles(bpy.types.UIList):
    """The muscles of an imported model (or of an armature's bones, the Simulate panel's
    Muscles subpanel), filtered by name (the list's own filter) and by the coordinate or
    joint they span (the panel's Spans field)."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_property, index=0, flt_flag=0):
        row = layout.row()
        row.label(text=item.name, icon="FORCE_CURVE")
        row.label(text=item.joints)

    def filter_items(self, context, data, propname):
        from ..core.muscles.display import filter_muscles

        items = getattr(data, propname)
        keep = filter_muscles([i.name for i in items],
                              [(i.coordinates.split(), i.joints.split()) for i in items],
                              self.filter_name, data.muscle_span_filter)
        if self.use_filter_invert:
            keep = ~keep
        flags = [self.bitflag_filter_item if k else 0 for k in keep]
        return flags, []


def _draw_osim_muscles(layout, arm):
    """The muscle list with its filter, the colour setting, the moment-arm plot, and the
    authoring of muscles (path points, the muscle, wrap objects)."""
    settings = arm.data.spline_joints_osim
    box = layout.box()
    draw_muscle_list(box, arm, settings)
    box.operator("spline_joints.simulate_muscles", icon="PLAY")
    draw_muscle_plot(box, settings, "spline_joints.plot_moment_arm")
    row = draw_new_muscle(box, settings, "")
    row.operator("spline_joints.add_wrap_object", icon="MESH_CYLINDER")


def draw_muscle_list(layout, arm, settings, list_id=""):
    """The muscle list of ``settings`` (:class:`.properties.MuscleListSettings`, on ``arm``'s
    data) with its Spans filter and the Colour setting, and the chosen muscle's activation
    slider; returns the chosen muscle's item, or None."""
    from .bridge import coordinate_path

    layout.label(text=f"Muscles ({len(settings.muscles)})", icon="FORCE_CURVE")
    layout.prop(settings, "muscle_span_filter", icon="FILTER")
    layout.template_list("SPLINE_JOINTS_UL_muscles", list_id, settings, "muscles", settings,
                         "active_muscle", rows=4)
    layout.prop(settings, "muscle_color")
    if not 0 <= settings.active_muscle < len(settings.muscles):
        return None
    item = settings.muscles[settings.active_muscle]
    prop = activation_property(item.name)
    if prop in arm.keys():
        layout.prop(arm, coordinate_path(prop), text="Activation", slider=True)
    return item


def draw_muscle_plot(layout, settings, operator, text=None):
    """The moment-arm plot's coordinate (labelled ``text``), folder and ``operator``."""
    col = layout.column(align=True)
    col.prop(settings, "plot_coordinate", text=text)
    col.prop(settings, "plot_folder")
    col.operator(operator, icon="GRAPH")


def draw_new_muscle(layout, settings, kind):
    """The placed path points and the buttons placing them and making the muscle (operators
    ``spline_joints.add_<kind>muscle_point`` ...); returns the row of Add Muscle."""
    col = layout.column(align=True)
    col.label(text=f"New muscle: {len(settings.draft_points)} path points placed")
    row = col.row(align=True)
    place = f"spline_joints.add_{kind}muscle_point"
    row.operator(place, text="Point at Cursor").source = "CURSOR"
    row.operator(place, text="At Vertices").source = "VERTICES"
    row.operator(f"spline_joints.clear_{kind}muscle_points", text="", icon="X")
    row = col.row(align=True)
    row.operator(f"spline_joints.add_{kind}muscle", icon="ADD")
    return row


def _draw_osim_fits(layout, data, rig):
    """The fit settings, the Fit button and one row per fitted joint (switch, errors, remove)."""
    settings = data.spline_joints_osim
    box = layout.box()
    box.label(text="Spline joints fitted to the model's joints", icon="IPO_BEZIER")
    col = box.column(align=True)
    col.prop(settings, "joint")
    try:
        two = len(rig.model.joint(settings.joint).coordinates) == 2 if settings.joint else False
    except ValueError:  # a joint replaced by a fit of fewer coordinates, or none to pick
        two = False
    col.prop(settings, "grid" if two else "n_frames")
    col.operator("spline_joints.fit_osim_joint", icon="IPO_BEZIER")
    for fit in settings.fits:
        row = box.row(align=True)
        row.prop(fit, "use", text=fit.name)
        row.operator("spline_joints.remove_osim_fit", icon="X", text="").joint = fit.name
        box.label(text=f"In range: at most {fit.max_mm:.3g} mm, {fit.max_deg:.3g} deg; past "
                       f"it up to {fit.beyond_mm:.3g} mm")


classes = (SPLINE_JOINTS_UL_samples, SPLINE_JOINTS_UL_mechanisms, SPLINE_JOINTS_UL_muscles,
           VIEW3D_PT_spline_joints_capture,
           VIEW3D_PT_spline_joints_fit, VIEW3D_PT_spline_joints_drive,
           VIEW3D_PT_spline_joints_mechanisms, VIEW3D_PT_spline_joints_opensim)
