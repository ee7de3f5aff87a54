"""Motion-capture settings stored in the .blend: ``Scene.spline_joints_mocap``
(:class:`SPLINE_JOINTS_PG_mocap`), the files and options of the "Motion Capture" panel, saved
with the file and restored by undo."""

from __future__ import annotations

import bpy
from bpy.props import (BoolProperty, EnumProperty, FloatProperty, PointerProperty,
                       StringProperty)
from bpy.types import PropertyGroup

UP_AXIS_ITEMS = [("Y", "Y Up", "The trial's Y axis points up (OpenSim's .trc files)"),
                 ("Z", "Z Up", "The trial's Z axis points up (many labs' .c3d files)")]


#: the keywords of the trial options, shared by the panel's settings and the import operator
UP_AXIS = dict(name="Up Axis", items=UP_AXIS_ITEMS, default="Y",
               description="Which axis of the trial points up")
TRIAL_TIMING = dict(
    name="Use the Trial's Frame Rate and Range", default=True,
    description="Set the scene's frame rate to the trial's and its frame range to the keyed "
                "frames (off: the scene's rate is kept and samples fall between frames)")


class SPLINE_JOINTS_PG_mocap(PropertyGroup):
    """The Motion Capture panel's files and options (on the scene)."""

    marker_file: StringProperty(name="Markers", subtype="FILE_PATH",
                                description="The marker trial to import or solve (.trc or .c3d)")
    up_axis: EnumProperty(**UP_AXIS)
    use_trial_timing: BoolProperty(**TRIAL_TIMING)
    zero_frame: FloatProperty(
        name="Frame at 0 s", default=1.0,
        description="The scene frame of the trial's time 0, where Inverse Kinematics keys and "
                    "forces are drawn (Import Markers sets it: the trial's first row on the "
                    "scene's first frame)")
    loads_file: StringProperty(name="Forces", subtype="FILE_PATH",
                               description="OpenSim external loads (.xml) naming their data file "
                                           "(.mot): the ground reaction forces to draw and to "
                                           "apply in Inverse Dynamics")
    metres_per_newton: FloatProperty(
        name="Arrow Length (m/N)", default=1e-3, min=0.0, soft_max=0.01, precision=5,
        description="Length of a force arrow per newton of force (1 mm/N: body weight ~0.7 m)")
    id_setup: StringProperty(name="ID Setup", subtype="FILE_PATH",
                             description="OpenSim Inverse Dynamics setup (.xml): external loads, "
                                         "time range, low-pass filter and the .sto to write")
    id_use_keys: BoolProperty(
        name="Coordinates from the Armature's Keys", default=True,
        description="Use the active armature's keyed coordinates (from Inverse Kinematics); "
                    "off: the setup's coordinates file, as OpenSim does")
    scale_setup: StringProperty(name="Scale Setup", subtype="FILE_PATH",
                                description="OpenSim Scale tool setup (.xml): the generic model, "
                                            "marker set, static trial and the files to write")
    ik_setup: StringProperty(name="IK Setup", subtype="FILE_PATH",
                             description="OpenSim Inverse Kinematics setup (.xml): marker "
                                         "weights, time range and accuracy (the trial above, or "
                                         "the setup's own when none is chosen)")


def register_properties():
    bpy.types.Scene.spline_joints_mocap = PointerProperty(
        type=SPLINE_JOINTS_PG_mocap, description="Motion-capture files and options")


def unregister_properties():
    del bpy.types.Scene.spline_joints_mocap


classes = (SPLINE_JOINTS_PG_mocap,)
