"""The "Simulate" sidebar panel: everything the active bone's (or object's) simulation uses in
one place (joint, axes and range, reach cone and twist limit, spring, mass, collision shape,
strength toward the animation, pin),
the bone's reach-cone tools (fit, draw, hold the pose inside the limits), and the scene's
simulation settings and buttons; its "Collider" subpanel: the active object as a collider of
the simulated rigs; its "Muscles" subpanel: the active armature's muscles (:mod:`.rig_muscles`),
listed and filtered, the chosen one's activation (keyable), parameters and moment-arm plot,
and authoring. Drawing only: no scene changes. A Joint choice that cannot work on the
bone (one that moves a connected bone's head) is shown as an error under the Joint field,
with what to do: a property update cannot refuse it."""

from __future__ import annotations

import math

import bpy

from . import bridge
from .documents import is_osim_armature, joint_document
from .panels import SidebarPanel, draw_muscle_list, draw_muscle_plot, draw_new_muscle
from .rig_scene import connected_head_problem


def _owner(context):
    """(settings, label, is_bone) of the active pose bone in Pose Mode, else the active
    object, else (None, None, False)."""
    pb = context.active_pose_bone if context.mode == "POSE" else None
    if pb is not None:
        return pb.spline_joints_sim, pb.name, True
    obj = context.active_object
    if obj is not None and obj.type != "ARMATURE":
        return obj.spline_joints_sim, obj.name, False
    return None, None, False


def _switched(layout, data, switch, *names):
    """A row: the boolean ``switch`` of ``data`` and the properties ``names`` it makes
    active."""
    row = layout.row(align=True)
    row.prop(data, switch)
    sub = row.row(align=True)
    sub.active = getattr(data, switch)
    for name in names:
        sub.prop(data, name)


def _connected_error(layout, pose_bone, kind):
    """Two lines under the Joint field when ``kind`` moves the head of ``pose_bone``, connected
    to its parent (:func:`.rig_scene.connected_head_problem`; a Fitted Joint judged by the
    joint stored on the bone, none when it cannot be read): what is wrong, what to do."""
    joint = None
    if kind == "FITTED":
        try:
            joint = joint_document(pose_bone.spline_joints).joint
        except ValueError:
            pass                       # no joint stored yet: Bake says so
    problem = connected_head_problem(pose_bone, kind, joint)
    if problem is not None:
        wrong, todo = problem
        layout.label(text=wrong[0].upper() + wrong[1:], icon="ERROR")
        layout.label(text=todo[0].upper() + todo[1:], icon="BLANK1")


def _joint(layout, context, s, is_bone):
    """The joint, its axes, range and cone switch, spring, mass and collision shape of ``s``."""
    col = layout.column(align=True)
    col.prop(s, "kind")
    if is_bone:
        _connected_error(col, context.active_pose_bone, s.kind)
    if s.kind in ("HINGE", "SLIDER", "UNIVERSAL"):
        col.prop(s, "axis")
        if s.kind == "UNIVERSAL":
            col.prop(s, "axis2")
    if s.kind == "WIRE":
        col.prop(s, "wire")
    if not is_bone and s.kind != "WIRE":
        col.prop(s, "parent")
        col.operator("spline_joints.set_object_rest")
    if s.kind in ("HINGE", "SLIDER", "UNIVERSAL", "FITTED"):
        _switched(col, s, "use_range", "range_min", "range_max")
    if s.kind in ("BALL", "FREE") and is_bone:
        col.prop(s, "use_cone", text="Reach Cone and Twist Limit (below)")
    if is_bone:
        arm = context.active_object.data
        col.prop_search(s, "parent_bone", arm, "bones")
        col.prop_search(s, "key_bone", arm, "bones")
    col = layout.column(align=True)
    col.prop(s, "spring_units", text="")
    if s.spring_units == "RELATIVE":
        col.prop(s, "frequency", text="Frequency (Hz)")
        col.prop(s, "damping_ratio")
    else:
        col.prop(s, "stiffness")
        col.prop(s, "damping")
    col = layout.column(align=True)
    col.prop(s, "mass_source")
    if s.mass_source == "MANUAL":
        col.prop(s, "mass")
        col.prop(s, "com")
        col.prop(s, "inertia")
    else:
        col.prop(s, "density")
        if is_bone:
            col.prop(s, "capsule_radius")
    col = layout.column(align=True)
    col.prop(s, "collision")
    if s.collision in ("CAPSULE", "SPHERE", "BOX") or (s.collision == "AUTO" and is_bone):
        col.prop(s, "collision_radius")
    if s.shown_source:
        layout.label(text=f"Last run: {s.shown_mass:.4g} kg from {s.shown_source}")


def _directed(layout, s):
    """Following the animation (Strength, keyable, and Follow: Local or Global) and the pin
    of ``s`` (keyable)."""
    col = layout.column(align=True)
    row = col.row(align=True)
    row.prop(s, "strength")
    row.prop(s, "follow", expand=True)
    row = col.row(align=True)
    row.prop(s, "use_pin")
    sub = row.row(align=True)
    sub.active = s.use_pin
    sub.prop(s, "pin_at", text="")
    sub.prop(s, "pin_hard", toggle=True)
    strength = sub.row(align=True)
    strength.active = s.use_pin and not s.pin_hard
    strength.prop(s, "pin_strength", text="Strength")
    sub = col.column(align=True)
    sub.active = s.use_pin
    sub.prop(s, "pin_target")
    sub.prop(s, "pin_location", text="Offset" if s.pin_target is not None else "Pin Location")


def _reach_cone(layout, pose_bone, ball):
    """The bone's reach cone and twist limit (what a simulated ball joint with Reach Cone on
    is held in, and what Hold Limits holds an animated pose in), its tools and whether the
    current pose is inside."""
    from ..core.bones import cone_status
    from .cones import cone_options

    c = pose_bone.spline_joints
    box = layout.box()
    box.label(text="Reach Cone" + (" (the ball joint's limits)" if ball and
                                   pose_bone.spline_joints_sim.use_cone else ""),
              icon="MESH_CONE")
    col = box.column(align=True)
    col.prop(c, "cone_shape", expand=True)
    col.prop(c, "cone_axis", text="")
    if c.cone_shape == "CIRCULAR":
        col.prop(c, "cone_half_angle")
    else:
        col.prop(c, "cone_half_angle_x")
        col.prop(c, "cone_half_angle_z")
    col.prop(c, "twist_limit")
    col.prop(c, "cone_margin")
    col.prop(c, "cone_length")
    row = box.row(align=True)
    row.operator("spline_joints.fit_reach_cone", icon="CON_ROTLIMIT")
    row.operator("spline_joints.draw_reach_cone", icon="MESH_CONE")
    row = box.row(align=True)
    row.prop(c, "hold_limits", toggle=True, icon="LOCKED")
    row.operator("spline_joints.add_limit_constraints", icon="CONSTRAINT_BONE")
    try:
        status = cone_status(cone_options(c), bridge.read_rest_T_parent_child(pose_bone),
                             bridge.read_pose_T_parent_child(pose_bone))
    except ValueError as exc:
        box.label(text=str(exc), icon="ERROR")
        return
    box.label(text="Pose inside the limits" if status.inside else "Pose OUTSIDE the limits",
              icon="CHECKMARK" if status.inside else "ERROR")
    box.label(text=f"Cone margin {status.swing_value:+.3f} (below 0: outside)   twist "
                   f"{math.degrees(status.twist):+.1f} deg")


class VIEW3D_PT_spline_joints_simulate(SidebarPanel, bpy.types.Panel):
    bl_label = "Simulate"
    bl_idname = "VIEW3D_PT_spline_joints_simulate"
    guide = "guides/rig.md"

    def draw(self, context):
        layout = self.layout
        s, name, is_bone = _owner(context)
        obj = context.active_object
        if obj is not None and obj.type == "ARMATURE":
            row = layout.row(align=True)
            row.operator("spline_joints.make_ragdoll", icon="ARMATURE_DATA")
            row.operator("spline_joints.copy_simulation", text="", icon="COPYDOWN")
            row.operator("spline_joints.mirror_simulation", text="", icon="MOD_MIRROR")
        if s is None:
            layout.label(text="Select a bone (Pose Mode) or an object", icon="INFO")
        else:
            layout.label(text=name, icon="BONE_DATA" if is_bone else "OBJECT_DATA")
            row = layout.row()
            row.prop(s, "enabled")
            row.prop(s, "kinematic")
            if s.enabled and not s.kinematic:
                _joint(layout, context, s, is_bone)
            if s.enabled:
                _directed(layout, s)
            if is_bone and context.active_pose_bone.parent is not None:
                _reach_cone(layout, context.active_pose_bone,
                            s.enabled and not s.kinematic and s.kind in ("BALL", "FREE"))
        st = context.scene.spline_joints_sim
        box = layout.box()
        box.label(text=f"Scene: frames {context.scene.frame_start}-{context.scene.frame_end}")
        col = box.column(align=True)
        col.prop(st, "substeps")
        col.prop(st, "integrator", text="")
        col.prop(st, "use_velocities")
        col.prop(st, "restitution")
        col = box.column(align=True)
        col.prop(st, "use_ground")
        sub = col.column(align=True)
        sub.active = st.use_ground
        sub.prop(st, "ground_height")
        sub.prop(st, "ground_friction")
        sub.prop(st, "ground_restitution")
        col = box.column(align=True)
        col.prop(st, "friction")
        row = col.row(align=True)
        row.prop(st, "use_self_collision")
        row.prop(st, "show_shapes", icon="MESH_ICOSPHERE")
        row = box.row(align=True)
        row.prop(st, "live", text="", icon="TIME")
        row.operator("spline_joints.simulate_preview", icon="PLAY")
        row.operator("spline_joints.clear_preview", text="", icon="X")
        row = box.row(align=True)
        row.operator("spline_joints.bake_rig", icon="REC")
        row.operator("spline_joints.record_preview", icon="KEYINGSET")
        if context.active_object is not None and context.active_object.type == "CURVE":
            box.operator("spline_joints.add_beads", icon="CURVE_BEZCURVE")


class VIEW3D_PT_spline_joints_collider(SidebarPanel, bpy.types.Panel):
    bl_label = "Collider"
    bl_idname = "VIEW3D_PT_spline_joints_collider"
    guide = "guides/rig.md"
    bl_parent_id = "VIEW3D_PT_spline_joints_simulate"
    bl_options = {"DEFAULT_CLOSED"}

    def draw_header(self, context):
        obj = context.active_object
        if obj is not None and obj.type != "ARMATURE":
            self.layout.prop(obj.spline_joints_collider, "enabled", text="")

    def draw(self, context):
        layout = self.layout
        obj = context.active_object
        if obj is None or obj.type == "ARMATURE":
            layout.label(text="Select an object to make it a collider", icon="INFO")
            return
        c = obj.spline_joints_collider
        layout.label(text=obj.name, icon="OBJECT_DATA")
        col = layout.column(align=True)
        col.active = c.enabled
        col.prop(c, "shape")
        _switched(col, c, "use_friction", "friction")
        _switched(col, c, "use_restitution", "restitution")


class VIEW3D_PT_spline_joints_rig_muscles(SidebarPanel, bpy.types.Panel):
    bl_label = "Muscles"
    bl_idname = "VIEW3D_PT_spline_joints_rig_muscles"
    guide = "guides/rig.md"
    bl_parent_id = "VIEW3D_PT_spline_joints_simulate"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        arm = context.active_object
        if arm is None or arm.type != "ARMATURE" or is_osim_armature(arm):
            layout.label(text="Select an armature (an imported OpenSim model's muscles are in "
                              "the OpenSim panel)", icon="INFO")
            return
        settings = arm.data.spline_joints_muscles
        item = draw_muscle_list(layout, arm, settings, "rig")
        if item is not None:
            col = layout.column(align=True)
            col.prop(item, "max_isometric_force")
            col.prop(item, "optimal_fiber_length")
            col.prop(item, "tendon_slack_length")
            col.prop(item, "pennation_angle")
            row = col.row()
            row.label(text=f"{len(item.points)} points on "
                           f"{', '.join(dict.fromkeys(p.body for p in item.points))}")
            row.operator("spline_joints.remove_rig_muscle", text="", icon="X")
            draw_muscle_plot(layout, settings, "spline_joints.plot_rig_moment_arm", "Joint")
        draw_new_muscle(layout, settings, "rig_")


classes = (VIEW3D_PT_spline_joints_simulate, VIEW3D_PT_spline_joints_collider,
           VIEW3D_PT_spline_joints_rig_muscles)
