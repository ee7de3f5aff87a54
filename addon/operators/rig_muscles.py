"""Muscles on the user's own armatures (:mod:`..rig_muscles`): path points placed on the
active bone at the 3D cursor or at selected vertices, a muscle made of them with its
parameters (its lengths from the path's rest length unless typed), a muscle removed, and the
chosen muscle's moment-arm plot against a bone's joint (:func:`..rig_muscles.moment_arm_sweep`
on the rig as a bake reads it)."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, StringProperty

from .. import rig_muscles
from ..documents import is_osim_armature
from ..rig_jobs import RigJob
from ._common import reporting
from .muscles import PLACE_AT_ITEMS, MuscleParameters, place_points, plot_folder, write_plot


class _RigArmatureOperator:
    """Mixin: the active object must be an armature that is not an imported OpenSim model
    (whose muscles the OpenSim panel authors)."""

    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        obj = context.object
        if obj is not None and obj.type == "ARMATURE" and not is_osim_armature(obj):
            return True
        cls.poll_message_set("Make an armature the active object (an imported OpenSim "
                             "model's muscles are made in the OpenSim panel)")
        return False


def _active_muscle(arm) -> str:
    """The name of the muscle chosen in the armature's muscle list."""
    settings = rig_muscles.muscle_settings(arm)
    if not 0 <= settings.active_muscle < len(settings.muscles):
        raise ValueError("choose a muscle in the Muscles list")
    return settings.muscles[settings.active_muscle].name


class SPLINE_JOINTS_OT_add_rig_muscle_point(_RigArmatureOperator, bpy.types.Operator):
    """Add path points for the next muscle at the 3D cursor or at the selected vertices,
    moving with the active bone (or the bone named)"""

    bl_idname = "spline_joints.add_rig_muscle_point"
    bl_label = "Add Path Point"
    source: EnumProperty(name="Place At", description="Where the path points go",
                         items=PLACE_AT_ITEMS, default="CURSOR")
    bone: StringProperty(name="Bone", description="The bone the points move with (empty: the "
                                                  "active bone)")

    @reporting
    def execute(self, context):
        arm = context.object
        bone = self.bone or getattr(arm.data.bones.active, "name", "")
        if not bone:
            raise ValueError("make the bone the point moves with active (Pose Mode), or name "
                             "it")
        if bone not in arm.data.bones:
            raise ValueError(f"armature '{arm.name}' has no bone '{bone}'; pick one of its "
                             "bones")
        B = rig_muscles.bone_frames(arm, [bone])[bone]
        self.report({"INFO"}, place_points(context, arm, self.source, bone, B,
                                           rig_muscles.muscle_settings(arm).draft_points))
        return {"FINISHED"}


class SPLINE_JOINTS_OT_clear_rig_muscle_points(_RigArmatureOperator, bpy.types.Operator):
    """Remove the path points placed for the next muscle"""

    bl_idname = "spline_joints.clear_rig_muscle_points"
    bl_label = "Clear Path Points"

    def execute(self, context):
        rig_muscles.muscle_settings(context.object).draft_points.clear()
        return {"FINISHED"}


class SPLINE_JOINTS_OT_add_rig_muscle(_RigArmatureOperator, MuscleParameters, bpy.types.Operator):
    """Make a muscle through the placed path points, with its parameters: drawn at once,
    listed, and pulling in bakes and previews with its keyable '<name> activation' property"""

    bl_idname = "spline_joints.add_rig_muscle"
    bl_label = "Add Muscle"
    use_rest_lengths: BoolProperty(name="Lengths From the Path", default=True,
                                   description="Tendon slack length half the path's length at "
                                               "rest and the fibres at optimal length there; "
                                               "off: the lengths typed")
    pennation_angle: FloatProperty(name="Pennation Angle", default=0.0, subtype="ANGLE",
                                   description="The fibres' angle to the tendon at optimal "
                                               "fibre length")

    @reporting
    def execute(self, context):
        arm = context.object
        draft = rig_muscles.muscle_settings(arm).draft_points
        points = [(p.body, tuple(p.location)) for p in draft]
        values = dict(max_isometric_force=self.max_isometric_force,
                      optimal_fiber_length=self.optimal_fiber_length,
                      tendon_slack_length=self.tendon_slack_length,
                      pennation_angle=self.pennation_angle)
        text = ""
        if self.use_rest_lengths and len(points) >= 2 and \
                all(b in arm.data.bones for b, _ in points):
            length = rig_muscles.rest_length(arm, points)
            lopt, slack = rig_muscles.rest_fitted_lengths(length, self.pennation_angle)
            values.update(optimal_fiber_length=lopt, tendon_slack_length=slack)
            text = (f": rest length {1000 * length:.4g} mm, optimal fibre length "
                    f"{1000 * lopt:.4g} mm, tendon slack length {1000 * slack:.4g} mm")
        rig_muscles.add_rig_muscle(arm, self.name, points, values)
        draft.clear()
        self.report({"INFO"}, f"Added muscle {self.name.strip()} through {len(points)} "
                              f"points{text}")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_remove_rig_muscle(_RigArmatureOperator, bpy.types.Operator):
    """Remove the muscle chosen in the list (its curve, its activation property and keys)"""

    bl_idname = "spline_joints.remove_rig_muscle"
    bl_label = "Remove Muscle"

    @reporting
    def execute(self, context):
        arm = context.object
        name = _active_muscle(arm)
        rig_muscles.remove_rig_muscle(arm, name)
        self.report({"INFO"}, f"Removed muscle {name}")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_plot_rig_moment_arm(_RigArmatureOperator, bpy.types.Operator):
    """Plot the chosen muscle's moment arm and length against the joint of the chosen bone it
    spans (a Hinge's angle or a Slider's travel over its range), the other joints as at the
    scene's start; writes a PNG and a CSV to the Plot Folder and shows the PNG in Blender"""

    bl_idname = "spline_joints.plot_rig_moment_arm"
    bl_label = "Plot Moment Arm"

    @reporting
    def execute(self, context):
        arm = context.object
        settings = rig_muscles.muscle_settings(arm)
        muscle = _active_muscle(arm)
        if not settings.plot_coordinate:
            raise ValueError(f"muscle '{muscle}' spans no joint to plot against")
        folder = plot_folder(settings)
        job = RigJob(context.scene, arm)              # the rig as a bake reads it
        sweep = rig_muscles.moment_arm_sweep(job.rig, muscle, settings.plot_coordinate)
        self.report({"INFO"}, write_plot(context, folder, sweep))
        return {"FINISHED"}


classes = (SPLINE_JOINTS_OT_add_rig_muscle_point, SPLINE_JOINTS_OT_clear_rig_muscle_points,
           SPLINE_JOINTS_OT_add_rig_muscle, SPLINE_JOINTS_OT_remove_rig_muscle,
           SPLINE_JOINTS_OT_plot_rig_moment_arm)
