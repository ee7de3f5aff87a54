"""Fit a spline joint to the captured samples, draw its path, export and import joint JSON."""

from __future__ import annotations

import warnings

import bpy
from bpy.props import BoolProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from .. import bridge
from ..bridge import target_bone
from ..documents import joint_document, rest_frames, status_words, store_document
from ..paths import draw_joint_path, path_parent_name
from ._common import BoneOperator, has_target


def fit_options(settings):
    """core JointFitOptions from the bone's fit settings."""
    from ...core.fitting.document import JointFitOptions

    return JointFitOptions(kind=settings.fit_type.lower(), order=settings.fit_order,
                           length_scale=settings.fit_length_scale, n_frames=settings.fit_frames,
                           smoothing=settings.fit_smoothing, grid=tuple(settings.fit_grid),
                           method=settings.fit_method)


class SPLINE_JOINTS_OT_fit(BoneOperator, bpy.types.Operator):
    """Fit a spline joint (curve or surface) to the captured samples and store it on the bone"""

    bl_idname = "spline_joints.fit"
    bl_label = "Fit Joint"

    draw_path: BoolProperty(name="Draw Path", default=True, description="Draw the fitted path afterwards")

    def run(self, context, armature, pose_bone, s):
        from ...core.display import joint_path
        from ...core.fitting.document import fit_joint_document

        if self.draw_path:
            path_parent_name(pose_bone)
        options = fit_options(s)
        poses, q, weights = bridge.read_samples(s.samples)
        names = tuple(bridge.coordinate_property_name(i) for i in range(options.n_coordinates))
        rest = rest_frames(pose_bone) if pose_bone.parent is not None else None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            doc = fit_joint_document(poses, q, options, weights, names,
                                     f"{armature.name}:{pose_bone.name}", rest)
        path = joint_path(doc) if self.draw_path else None
        report = store_document(s, doc).report
        if path is not None:
            draw_joint_path(context.scene, armature, pose_bone, path)
        level = {"INFO"} if report.converged and not caught else {"WARNING"}
        notes = "".join(f"; {w.message}" for w in caught)
        self.report(level, f"{status_words(report.status)[0]}: RMS {report.rms_position_mm:.3f} mm / "
                           f"{report.rms_rotation_deg:.3f} deg, max {report.max_position_mm:.3f} mm / "
                           f"{report.max_rotation_deg:.3f} deg at the samples; between them max "
                           f"{report.heldout_max_position_mm:.3f} mm / "
                           f"{report.heldout_max_rotation_deg:.3f} deg{notes}")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_draw_joint_path(BoneOperator, bpy.types.Operator):
    """Draw the stored joint's path as a curve with small axes at its control frames"""

    bl_idname = "spline_joints.draw_joint_path"
    bl_label = "Draw Joint Path"

    def run(self, context, armature, pose_bone, settings):
        from ...core.display import joint_path

        obj = draw_joint_path(context.scene, armature, pose_bone, joint_path(joint_document(settings)))
        self.report({"INFO"}, f"Drew '{obj.name}'")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_export_joint(BoneOperator, bpy.types.Operator, ExportHelper):
    """Write the bone's stored joint to a JSON file (the core's versioned joint document)"""

    bl_idname = "spline_joints.export_joint"
    bl_label = "Export Joint JSON"
    bl_options = {"REGISTER"}  # writes a file, changes nothing in the scene
    filename_ext = ".json"
    filter_glob: StringProperty(default="*.json", options={"HIDDEN"})

    @classmethod
    def poll(cls, context):
        return has_target(context) and bool(target_bone(context)[1].spline_joints.joint_json)

    def run(self, context, armature, pose_bone, settings):
        from ...core import io

        doc = joint_document(settings)
        try:  # io.save refuses a missing folder or a folder first and replaces the file atomically
            io.save(self.filepath, doc)
        except OSError as exc:
            raise ValueError(f"cannot write {self.filepath}: {exc.strerror or exc}; choose a "
                             "folder you can write to (the existing file is unchanged)") from None
        self.report({"INFO"}, f"Wrote {self.filepath}")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_import_joint(BoneOperator, bpy.types.Operator, ImportHelper):
    """Read a joint JSON file (core versioned joint document) and store it on the active bone"""

    bl_idname = "spline_joints.import_joint"
    bl_label = "Import Joint JSON"
    filename_ext = ".json"
    filter_glob: StringProperty(default="*.json", options={"HIDDEN"})

    def run(self, context, armature, pose_bone, s):
        from ...core import io

        from ...core.transfer import REST_WARN_DEG, REST_WARN_MM, rest_difference

        doc = io.load(self.filepath)  # InvalidInputError names a missing, binary or bad file
        far = ""
        if doc.rest is not None and pose_bone.parent is not None:
            mm, deg = rest_difference(doc.rest.T_parent_child,
                                      bridge.read_rest_T_parent_child(pose_bone))
            if mm >= REST_WARN_MM or deg >= REST_WARN_DEG:
                far = (f"; this rig's rest pose is {mm:.1f} mm and {deg:.1f} deg from the rig "
                       "the joint was made on: Transfer Joint from File maps and scales it "
                       "onto these bones")
        store_document(s, doc)
        self.report({"WARNING"} if far else {"INFO"},
                    f"Stored {type(doc.joint).__name__} from {self.filepath} on '{pose_bone.name}'{far}")
        return {"FINISHED"}


classes = (SPLINE_JOINTS_OT_fit, SPLINE_JOINTS_OT_draw_joint_path, SPLINE_JOINTS_OT_export_joint,
           SPLINE_JOINTS_OT_import_joint)
