"""Motion-capture operators, thin wrappers around the jobs of :mod:`..mocap` (run headless, or
in a worker thread with a progress bar where Esc cancels): a marker trial (.trc, .c3d)
imported as animated empties, OpenSim's Scale tool (the scaled model imported), Inverse
Kinematics (the active OpenSim armature's coordinates keyed), Inverse Dynamics (its joint
moments keyed and plotted) and ground reaction forces drawn as arrows."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, StringProperty
from bpy_extras.io_utils import ImportHelper

from ..mocap import ForceArrowsJob, IDJob, IKJob, MarkerImportJob, ScaleJob
from ..mocap_properties import TRIAL_TIMING, UP_AXIS
from ._common import OsimArmatureOperator, ThreadedBake


class SPLINE_JOINTS_OT_import_markers(ThreadedBake, bpy.types.Operator, ImportHelper):
    """Import a marker trial (.trc or .c3d): one animated empty per marker in a new collection
    named after the trial; a marker is hidden on the frames where the trial has no data for it"""

    bl_idname = "spline_joints.import_markers"
    bl_label = "Import Markers"
    bl_options = {"REGISTER", "UNDO"}
    filename_ext = ".trc"
    filter_glob: StringProperty(default="*.trc;*.c3d", options={"HIDDEN"})
    up_axis: EnumProperty(**UP_AXIS)
    use_trial_timing: BoolProperty(**TRIAL_TIMING)

    def make_job(self, context):
        if not self.filepath:
            raise ValueError("choose a marker file (.trc or .c3d) in the Motion Capture panel")
        return MarkerImportJob(context.scene, bpy.path.abspath(self.filepath), self.up_axis,
                               self.use_trial_timing)

    def invoke(self, context, event):
        """From the panel (a file given): read in a worker thread with a progress bar, Esc
        cancels; from File > Import (no file yet): the file browser, then :meth:`execute`."""
        if not self.filepath:
            return ImportHelper.invoke(self, context, event)
        return self._start(context)


class SPLINE_JOINTS_OT_scale_model(ThreadedBake, bpy.types.Operator):
    """Run OpenSim's Scale tool on the Scale setup (the files it names are written, as OpenSim
    writes them) and import the scaled model as a new armature"""

    bl_idname = "spline_joints.scale_model"
    bl_label = "Scale"
    bl_options = {"REGISTER", "UNDO"}

    def make_job(self, context):
        return ScaleJob(context.scene.spline_joints_mocap.scale_setup)


class SPLINE_JOINTS_OT_inverse_kinematics(OsimArmatureOperator, ThreadedBake, bpy.types.Operator):
    """Solve OpenSim's Inverse Kinematics of the marker trial on the active OpenSim armature
    (its markers where the spheres are) and key its coordinates in a new action, with the
    marker errors of every frame"""

    bl_idname = "spline_joints.inverse_kinematics"
    bl_label = "Inverse Kinematics"
    bl_options = {"REGISTER", "UNDO"}

    def make_job(self, context):
        settings = context.scene.spline_joints_mocap
        return IKJob(context.scene, context.object, settings.ik_setup, settings.marker_file,
                     settings.use_trial_timing, settings.zero_frame)


class SPLINE_JOINTS_OT_inverse_dynamics(OsimArmatureOperator, ThreadedBake, bpy.types.Operator):
    """Solve OpenSim's Inverse Dynamics of the active OpenSim armature's keyed motion with the
    setup's external loads: the generalized forces keyed as properties of the armature, the
    setup's .sto written with a PNG plot beside it"""

    bl_idname = "spline_joints.inverse_dynamics"
    bl_label = "Inverse Dynamics"
    bl_options = {"REGISTER", "UNDO"}

    def make_job(self, context):
        s = context.scene.spline_joints_mocap
        return IDJob(context.scene, context.object, s.id_setup, s.id_use_keys, s.zero_frame)


class SPLINE_JOINTS_OT_draw_forces(ThreadedBake, bpy.types.Operator):
    """Draw the external loads' forces (ground reaction forces) as arrows at their centres of
    pressure, keyed on every frame, their length proportional to the force"""

    bl_idname = "spline_joints.draw_forces"
    bl_label = "Draw Forces"
    bl_options = {"REGISTER", "UNDO"}

    def make_job(self, context):
        s = context.scene.spline_joints_mocap
        return ForceArrowsJob(context.scene, s.loads_file, s.metres_per_newton, s.up_axis,
                              s.zero_frame)


def menu_import(self, context):
    self.layout.operator(SPLINE_JOINTS_OT_import_markers.bl_idname, text="Marker Trial (.trc/.c3d)")


def register_menus():
    bpy.types.TOPBAR_MT_file_import.append(menu_import)


def unregister_menus():
    bpy.types.TOPBAR_MT_file_import.remove(menu_import)


classes = (SPLINE_JOINTS_OT_import_markers, SPLINE_JOINTS_OT_scale_model,
           SPLINE_JOINTS_OT_inverse_kinematics, SPLINE_JOINTS_OT_inverse_dynamics,
           SPLINE_JOINTS_OT_draw_forces)
