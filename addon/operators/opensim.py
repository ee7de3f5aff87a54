"""OpenSim import and export: a model (.osim) as an armature driven by its coordinates, a
motion (.mot / .sto) as keys of those coordinates, spline joints fitted to the model's joints,
and the model (with its fitted joints) and its animated coordinates written back. What an
import creates is laid out in :mod:`..osim_scene`.

Fitted joints (:class:`SPLINE_JOINTS_OT_fit_osim_joint`) are fitted to the exact joint of the
model as imported (core.fitting.osim.spline_joint_from_osim) and stored on the armature data
(:func:`documents.store_osim_fit`); switched on, they replace the exact joints in the live
drive and in the exported model (:func:`documents.osim_rig`).
"""

from __future__ import annotations

import math
import os

import bpy
import numpy as np
from bpy.props import BoolProperty, FloatProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from .. import bridge, handlers
from ..documents import is_osim_armature, osim_rig, remove_osim_fit, store_osim_fit
from ..osim_scene import key_coordinates, scene_model, write_osim_import
from ._common import OsimArmatureOperator, reporting

class SPLINE_JOINTS_OT_import_osim(bpy.types.Operator, ImportHelper):
    """Import an OpenSim model (.osim): one bone per body with its meshes, and one keyframable
    property per coordinate that poses the bones as OpenSim does"""

    bl_idname = "spline_joints.import_osim"
    bl_label = "Import OpenSim Model"
    bl_options = {"REGISTER", "UNDO"}
    filename_ext = ".osim"
    filter_glob: StringProperty(default="*.osim", options={"HIDDEN"})
    mesh_folder: StringProperty(name="Mesh Folder", subtype="DIR_PATH",
                                description="Another folder to look for the model's mesh files in, "
                                            "after the model's own folder and its Geometry folder")

    @reporting
    def execute(self, context):
        from ...core.osim_rig import read_osim_import

        search = (bpy.path.abspath(self.mesh_folder),) if self.mesh_folder else ()
        plan = read_osim_import(self.filepath, search)  # every file read before anything is made
        with bridge.new_data_blocks_removed_on_error():  # not expected: all read and checked
            write_osim_import(context.scene, context.view_layer, plan)
        level = {"WARNING"} if plan.missing or plan.rig.model.notes else {"INFO"}
        self.report(level, plan.summary())
        return {"FINISHED"}


class SPLINE_JOINTS_OT_import_osim_motion(bpy.types.Operator, ImportHelper):
    """Key the active OpenSim armature's coordinates from a motion (.mot or .sto) in a new
    action; the armature's previous action is kept on an NLA track"""

    bl_idname = "spline_joints.import_osim_motion"
    bl_label = "Import OpenSim Motion"
    bl_options = {"REGISTER", "UNDO"}
    filename_ext = ".mot"
    filter_glob: StringProperty(default="*.mot;*.sto", options={"HIDDEN"})
    use_motion_timing: BoolProperty(
        name="Use the Motion's Frame Rate and Range", default=True,
        description="Set the scene's frame rate to the motion's and its frame range to the keyed frames")

    @classmethod
    def poll(cls, context):
        return is_osim_armature(context.object)

    @reporting
    def execute(self, context):
        from ...core.io.motion import read_motion
        from ...core.io.osim import motion_coordinates
        from ...core.osim_rig import keying_rate, motion_frames, motion_rate

        arm, scene = context.object, context.scene
        rig = osim_rig(arm.data)
        motion = read_motion(self.filepath)
        time, q, report = motion_coordinates(rig.model, motion)
        fps, fps_base, rate = keying_rate(scene.render.fps, scene.render.fps_base,
                                          motion_rate(time) if self.use_motion_timing else None)
        frames = motion_frames(time, rate, scene.frame_start)
        _, rows = np.unique(frames, return_index=True)  # the first row on each frame
        frames, q = frames[rows], q[rows]
        name = f"{arm.name} {os.path.splitext(os.path.basename(self.filepath))[0]}"
        # -- everything computed; write ---------------------------------------------------
        if self.use_motion_timing:
            scene.render.fps, scene.render.fps_base = fps, fps_base
            scene.frame_start, scene.frame_end = int(frames[0]), int(frames[-1])
        action, kept = key_coordinates(arm, rig.coordinate_names, name, frames, q)
        scene.frame_set(scene.frame_current)
        text = (f"Keyed {len(time)} rows of {os.path.basename(self.filepath)} on {len(frames)} frames "
                f"({int(frames[0])}..{int(frames[-1])} at {rate:.4g} fps) in action '{action.name}'")
        if report["missing"]:
            text += f"; {len(report['missing'])} coordinates not in the motion kept at their " \
                    f"defaults: {', '.join(report['missing'])}"
        if report["ignored"]:
            text += f"; {len(report['ignored'])} columns ignored: {', '.join(report['ignored'][:10])}"
        if kept:
            text += f"; the previous action is kept on NLA track '{kept}'"
        self.report({"WARNING"} if report["missing"] else {"INFO"}, text)
        return {"FINISHED"}


class SPLINE_JOINTS_OT_fit_osim_joint(OsimArmatureOperator, bpy.types.Operator):
    """Fit a spline joint to one of the model's joints (1 or 2 coordinates; the joint's other
    coordinates at the model's defaults) and use it in place of the exact joint"""

    bl_idname = "spline_joints.fit_osim_joint"
    bl_label = "Fit Spline Joint"
    bl_options = {"REGISTER", "UNDO"}
    joint: StringProperty(name="Joint", description="The model's joint to fit (empty: the joint "
                                                    "chosen in the OpenSim panel)")

    @reporting
    def execute(self, context):
        from ...core.fitting.osim import spline_joint_from_osim

        data = context.object.data
        settings = data.spline_joints_osim
        name = self.joint or settings.joint
        if not name:
            raise ValueError("choose a joint to fit in the OpenSim panel (joints of 1 or 2 "
                             "coordinates)")
        model = osim_rig(data, fitted=False).model  # always fitted to the exact joint
        fit = spline_joint_from_osim(model, name, n_frames=settings.n_frames,
                                     grid=tuple(settings.grid))
        text = fit.summary(model)
        store_osim_fit(data, fit, text)  # written only now: the fit succeeded
        self.report({"INFO"}, text)
        return {"FINISHED"}


class SPLINE_JOINTS_OT_remove_osim_fit(OsimArmatureOperator, bpy.types.Operator):
    """Remove a fitted spline joint: the model's exact OpenSim joint poses the bones again"""

    bl_idname = "spline_joints.remove_osim_fit"
    bl_label = "Remove Fitted Joint"
    bl_options = {"REGISTER", "UNDO"}
    joint: StringProperty(name="Joint", description="The joint whose fitted spline joint is removed")

    @reporting
    def execute(self, context):
        remove_osim_fit(context.object.data, self.joint)
        self.report({"INFO"}, f"Removed the fitted joint of {self.joint}: the exact OpenSim "
                              "joint is used again")
        return {"FINISHED"}


def _write_failed(path, exc):
    """The ValueError an operator reports when the file system refuses a write."""
    return ValueError(f"cannot write {path}: {exc.strerror or exc}; choose a folder you can "
                      "write to (nothing was written, an existing file is unchanged)")


def conversion_text(c) -> str:
    """One exported joint's conversion (core.io.osim_export.JointConversion) in words."""
    size = (f"{c.size} knots each" if c.functions == "SimmSpline"
            else f"polynomials of total order {c.size}")
    return (f"{c.joint}: {c.source} as a CustomJoint of {c.functions} functions ({size}), "
            f"pose error at most {1e3 * c.max_position_error:.2g} mm and "
            f"{math.degrees(c.max_angle_error):.2g} deg over {c.points} poses")


class SPLINE_JOINTS_OT_export_osim(OsimArmatureOperator, bpy.types.Operator, ExportHelper):
    """Write the active imported armature's OpenSim model (.osim), with the fitted spline joints
    that are switched on as CustomJoints of sampled functions"""

    bl_idname = "spline_joints.export_osim"
    bl_label = "Export OpenSim Model"
    bl_options = {"REGISTER"}  # writes a file, changes nothing in the scene
    filename_ext = ".osim"
    filter_glob: StringProperty(default="*.osim", options={"HIDDEN"})
    tolerance_mm: FloatProperty(
        name="Position Tolerance (mm)", default=1e-3, min=1e-6, max=10.0, precision=4,
        description="Largest distance (mm) between a fitted joint's pose and the pose of the "
                    "OpenSim functions written for it; smaller takes more knots")
    tolerance_deg: FloatProperty(
        name="Angle Tolerance (deg)", default=math.degrees(1e-5), min=1e-6, max=10.0, precision=5,
        description="Largest rotation (degrees) between a fitted joint's pose and the pose of "
                    "the OpenSim functions written for it; smaller takes more knots")

    @reporting
    def execute(self, context):
        from ...core.io.files import check_writable_path
        from ...core.io.osim_export import write_osim

        model = scene_model(context.object)  # with the markers where the spheres are
        path = check_writable_path(self.filepath)
        try:  # the whole document is built first, then written atomically
            conversions = write_osim(path, model, tolerance=(1e-3 * self.tolerance_mm,
                                                                 math.radians(self.tolerance_deg)))
        except OSError as exc:
            raise _write_failed(path, exc) from None
        text = f"Wrote {os.path.basename(path)} ({model.name})"
        text += ("; converted: " + "; ".join(conversion_text(c) for c in conversions)
                 if conversions else "; every joint written as itself")
        self.report({"INFO"}, text)
        return {"FINISHED"}


class SPLINE_JOINTS_OT_export_osim_motion(OsimArmatureOperator, bpy.types.Operator, ExportHelper):
    """Write the active imported armature's coordinates on every frame of the scene's range as
    an OpenSim motion (.mot; angles in degrees)"""

    bl_idname = "spline_joints.export_osim_motion"
    bl_label = "Export OpenSim Motion"
    bl_options = {"REGISTER"}  # writes a file; the current frame is restored
    filename_ext = ".mot"
    filter_glob: StringProperty(default="*.mot", options={"HIDDEN"})

    @reporting
    def execute(self, context):
        from ...core.io.files import check_writable_path
        from ...core.io.osim_export import write_model_motion

        arm, scene = context.object, context.scene
        rig = osim_rig(arm.data)
        path = check_writable_path(self.filepath)
        frames = bridge.frame_range(scene, -1, -1, 1)
        names, defaults = rig.coordinate_names, rig.model.default_q()
        with handlers.suspended():  # the values are read; no bone needs posing meanwhile
            values = bridge.read_frames(scene, frames,
                                 lambda f: bridge.read_named_values(arm, names, defaults))
        q = np.stack([rig.q(v) for v in values])
        time = (frames - frames[0]) * scene.render.fps_base / scene.render.fps
        try:
            write_model_motion(path, rig.model, time, q)
        except OSError as exc:
            raise _write_failed(path, exc) from None
        self.report({"INFO"}, f"Wrote {os.path.basename(path)}: {len(names)} coordinates of "
                              f"{arm.name} on {len(frames)} frames ({int(frames[0])}.."
                              f"{int(frames[-1])}), angles in degrees")
        return {"FINISHED"}


def menu_import(self, context):
    self.layout.operator(SPLINE_JOINTS_OT_import_osim.bl_idname, text="OpenSim Model (.osim)")
    self.layout.operator(SPLINE_JOINTS_OT_import_osim_motion.bl_idname, text="OpenSim Motion (.mot/.sto)")


def menu_export(self, context):
    self.layout.operator(SPLINE_JOINTS_OT_export_osim.bl_idname, text="OpenSim Model (.osim)")
    self.layout.operator(SPLINE_JOINTS_OT_export_osim_motion.bl_idname, text="OpenSim Motion (.mot)")


def register_menus():
    bpy.types.TOPBAR_MT_file_import.append(menu_import)
    bpy.types.TOPBAR_MT_file_export.append(menu_export)


def unregister_menus():
    bpy.types.TOPBAR_MT_file_export.remove(menu_export)
    bpy.types.TOPBAR_MT_file_import.remove(menu_import)


classes = (SPLINE_JOINTS_OT_import_osim, SPLINE_JOINTS_OT_import_osim_motion,
           SPLINE_JOINTS_OT_fit_osim_joint, SPLINE_JOINTS_OT_remove_osim_fit,
           SPLINE_JOINTS_OT_export_osim, SPLINE_JOINTS_OT_export_osim_motion)
