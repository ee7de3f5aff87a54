"""Simulate the user's own rigs: bake them to keys or preview them (:mod:`..rig_jobs`,
:mod:`..previews`), and set up beads and objects' rest poses (:mod:`..rig_scene`)."""

from __future__ import annotations

import bpy
import numpy as np
from bpy.props import EnumProperty

from .. import bridge, previews
from ..rig_jobs import LivePreviews, RigBatch, RigJob, bake_rigs, hold_previews
from ..rig_scene import joint_parent, normalized, simulated_armatures, simulated_objects, wire_fit
from ._common import ThreadedBake, reporting


TARGET_ITEMS = [("ACTIVE", "Active Rig", "The active armature, or the scene's simulated "
                                         "objects when the active object is not an armature"),
                ("ALL", "All Rigs", "Every simulated armature and the simulated objects")]


def _targets(context, which):
    scene = context.scene
    if which == "ALL":
        targets = list(simulated_armatures(scene))
        if simulated_objects(scene):
            targets.append(None)
        if not targets:
            raise ValueError("no simulated rig in the scene: tick Simulate on a bone or object")
        return targets
    obj = context.active_object
    if obj is not None and obj.type == "ARMATURE":
        return [obj]
    if not simulated_objects(scene):
        raise ValueError("make an armature with simulated bones active, or tick Simulate on "
                         "an object")
    return [None]


class _RigOperator(ThreadedBake):
    bl_options = {"REGISTER", "UNDO"}

    which: EnumProperty(name="Rigs", items=TARGET_ITEMS, default="ACTIVE",
                        description="Which rigs to work on")

    def make_job(self, context):
        """Read the rigs (their previews dropped first, so the reading sees the user's poses)."""
        targets = _targets(context, self.which)
        previews.clear_previews(context.scene, targets)
        together = len(targets) > 1
        return RigBatch([RigJob(context.scene, t, together) for t in targets], self.bl_label,
                        self.write)


class SPLINE_JOINTS_OT_bake_rig(_RigOperator, bpy.types.Operator):
    """Simulate the rig over the scene's frame range and key the simulated bones and objects
    into a new action (the old one stays on the NLA; Esc cancels and writes nothing)"""

    bl_idname = "spline_joints.bake_rig"
    bl_label = "Bake Simulation"
    write = staticmethod(bake_rigs)


class SPLINE_JOINTS_OT_simulate_preview(_RigOperator, bpy.types.Operator):
    """Simulate the rig and play it back on frame changes without writing keys (dropped when
    a joint setting changes or by Clear Preview); with Live on, frames are simulated as the
    playhead reaches them"""

    bl_idname = "spline_joints.simulate_preview"
    bl_label = "Simulate Preview"
    bl_options = {"REGISTER"}
    write = staticmethod(hold_previews)

    def make_job(self, context):
        batch = super().make_job(context)
        if context.scene.spline_joints_sim.live:
            return LivePreviews(batch.jobs, self.bl_label, None)
        return batch


class SPLINE_JOINTS_OT_clear_preview(bpy.types.Operator):
    """Drop the simulation previews and live mechanisms of this scene (the bodies go back to
    where they were, or to their animation)"""

    bl_idname = "spline_joints.clear_preview"
    bl_label = "Clear Preview"
    bl_options = {"REGISTER"}

    def execute(self, context):
        previews.clear_previews(context.scene)
        previews.stop_live_mechanisms(context.scene)
        context.scene.frame_set(context.scene.frame_current)
        return {"FINISHED"}


class SPLINE_JOINTS_OT_add_beads(bpy.types.Operator):
    """Make the active curve a wire and the other selected objects beads sliding on it"""

    bl_idname = "spline_joints.add_beads"
    bl_label = "Beads on Curve"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return obj is not None and obj.type == "CURVE"

    @reporting
    def execute(self, context):
        curve = context.active_object
        beads = [o for o in context.selected_objects if o != curve]
        if not beads:
            raise ValueError("select the bead objects, then the curve last (active)")
        wire_fit(curve)  # refuses a bad curve before anything changes
        for o in beads:
            s = o.spline_joints_sim
            s.enabled, s.kinematic, s.kind, s.wire = True, False, "WIRE", curve
            if s.mass_source == "AUTO" and o.type != "MESH":
                s.mass_source = "MANUAL"
        self.report({"INFO"}, f"{len(beads)} bead(s) on '{curve.name}'")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_set_object_rest(bpy.types.Operator):
    """Store the active object's current pose in its joint parent as its joint's rest pose"""

    bl_idname = "spline_joints.set_object_rest"
    bl_label = "Set Rest Pose"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.active_object is not None

    @reporting
    def execute(self, context):
        obj = context.active_object
        T = normalized(obj.matrix_world)[0]
        parent = joint_parent(obj)
        if parent is not None:
            T = np.linalg.solve(normalized(parent.matrix_world)[0], T)
        obj.spline_joints_sim.rest = tuple(bridge.rigid(T).ravel())
        return {"FINISHED"}


classes = (SPLINE_JOINTS_OT_bake_rig, SPLINE_JOINTS_OT_simulate_preview,
           SPLINE_JOINTS_OT_clear_preview, SPLINE_JOINTS_OT_add_beads,
           SPLINE_JOINTS_OT_set_object_rest)
