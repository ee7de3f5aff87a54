"""Motion-capture operators: a marker trial (.trc, .c3d) imported as animated empties
(:class:`..mocap.MarkerImportJob`)."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, StringProperty
from bpy_extras.io_utils import ImportHelper

from ..mocap import MarkerImportJob
from ..mocap_properties import UP_AXIS_ITEMS
from ._common import ThreadedBake


class SPLINE_JOINTS_OT_import_markers(ThreadedBake, bpy.types.Operator, ImportHelper):
    """Import a marker trial (.trc or .c3d): one animated empty per marker in a new collection
    named after the trial; a marker is hidden on the frames where the trial has no data for it"""

    bl_idname = "spline_joints.import_markers"
    bl_label = "Import Markers"
    bl_options = {"REGISTER", "UNDO"}
    filename_ext = ".trc"
    filter_glob: StringProperty(default="*.trc;*.c3d", options={"HIDDEN"})
    up_axis: EnumProperty(name="Up Axis", items=UP_AXIS_ITEMS, default="Y",
                          description="Which axis of the trial points up")
    use_trial_timing: BoolProperty(
        name="Use the Trial's Frame Rate and Range", default=True,
        description="Set the scene's frame rate to the trial's and its frame range to the keyed "
                    "frames (off: the scene's rate is kept and samples fall between frames)")

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


def menu_import(self, context):
    self.layout.operator(SPLINE_JOINTS_OT_import_markers.bl_idname, text="Marker Trial (.trc/.c3d)")


def register_menus():
    bpy.types.TOPBAR_MT_file_import.append(menu_import)


def unregister_menus():
    bpy.types.TOPBAR_MT_file_import.remove(menu_import)


classes = (SPLINE_JOINTS_OT_import_markers,)
