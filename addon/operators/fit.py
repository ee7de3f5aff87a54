"""Fit a spline joint to the captured samples and draw its path."""

from __future__ import annotations

import warnings

import bpy
import numpy as np
from bpy.props import BoolProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from .. import bridge
from ._common import BoneOperator, has_target, joint_document, sample_coordinates, target_bone

PATH_PREFIX = "SJ_JointPath"


def build_samples(settings):
    """core JointSamples from the stored samples (validation is the core's)."""
    from ...core.fitting import JointSamples

    poses = bridge.read_sample_poses(settings.samples)
    if len(poses) == 0:
        raise ValueError("no samples: capture poses of the bone first (Capture Pose / Frame Range)")
    q, nq, w = sample_coordinates(settings)
    if np.any(nq != nq[0]):
        raise ValueError("the samples have different numbers of coordinates; clear them and capture "
                         "again with one coordinate setting")
    n = int(nq[0])
    return JointSamples(poses, q[:, :n] if n else None, w), n


def path_object_name(armature, pose_bone) -> str:
    return f"{PATH_PREFIX}_{armature.name}_{pose_bone.name}"


def draw_joint_path(context, armature, pose_bone, doc, n: int = 160):
    """Curve of the joint's origin over its range (iso-lines for 2 coordinates) with small axes
    at the control frames, parented to the parent bone at its head (the joint's parent frame)."""
    joint = doc.joint
    lo, hi = np.asarray(doc.ranges, dtype=float).T
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError("the joint's coordinate range is unbounded: a path cannot be drawn")
    if joint.nq == 1:
        qs = np.linspace(lo[0], hi[0], n)[:, None]
        lines = [joint.transforms(qs)[:, :3, 3]]
    else:
        lines = []
        for a in range(joint.nq):
            for v in np.linspace(lo[1 - a], hi[1 - a], 5):
                qs = np.empty((n, 2))
                qs[:, a] = np.linspace(lo[a], hi[a], n)
                qs[:, 1 - a] = v
                lines.append(joint.transforms(qs)[:, :3, 3])
    name = path_object_name(armature, pose_bone)
    obj = bridge.write_poly_curve_object(name, lines, context.scene.collection,
                                         bevel=0.01 * pose_bone.bone.length)
    bridge.parent_to_bone(obj, armature, pose_bone.parent.name, np.eye(4))
    frames = getattr(joint, "control_frames", np.zeros((0, 4, 4)))
    bridge.write_axes_empties(f"{name}.axes", frames, 0.15 * pose_bone.bone.length, obj,
                              context.scene.collection)
    return obj


class SPLINE_JOINTS_OT_fit(BoneOperator, bpy.types.Operator):
    """Fit a spline joint (curve or surface) to the captured samples and store it on the bone"""

    bl_idname = "spline_joints.fit"
    bl_label = "Fit Joint"

    draw_path: BoolProperty(name="Draw Path", default=True, description="Draw the fitted path afterwards")

    def run(self, context, armature, pose_bone, s):
        from ...core import io
        from ...core.fitting import SE3Metric

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            samples, n = build_samples(s)
            if s.fit_type == "CURVE":
                from ...core.fitting.curve import fit_spline_curve

                if n > 1:
                    raise ValueError(f"a spline curve has one coordinate; the samples have {n}: "
                                     "choose Spline Surface or capture with one coordinate")
                result = fit_spline_curve(samples, n_frames=s.fit_frames, order=s.fit_order,
                                          smoothing=s.fit_smoothing, length_scale=s.fit_length_scale)
            else:
                from ...core.fitting.surface import fit_spline_surface

                if n != 2:
                    raise ValueError(f"a spline surface needs two coordinates per sample; the samples "
                                     f"have {n}: set Coordinates to 2 and capture again")
                result = fit_spline_surface(samples, grid=tuple(s.fit_grid), method=s.fit_method,
                                            order=s.fit_order, length_scale=s.fit_length_scale)
            names = tuple(bridge.coordinate_property_name(i) for i in range(result.joint.nq))
            doc = io.JointDocument(result.joint, coordinate_names=names,
                                   metric=SE3Metric(s.fit_length_scale), report=result.report,
                                   name=f"{armature.name}:{pose_bone.name}")
            text = io.dumps(doc)
        doc = io.loads(text)  # what is stored is what was checked
        if self.draw_path:
            draw_joint_path(context, armature, pose_bone, doc)
        report = result.report
        s.joint_json = text
        for i, (lo, hi) in enumerate(np.asarray(doc.ranges)):
            s.range_min[i], s.range_max[i] = float(lo), float(hi)
        s.fit_status = report.status
        s.fit_rms_mm, s.fit_max_mm = report.rms_position_mm, report.max_position_mm
        s.fit_rms_deg, s.fit_max_deg = report.rms_rotation_deg, report.max_rotation_deg
        level = {"INFO"} if report.converged and not caught else {"WARNING"}
        notes = "".join(f"; {w.message}" for w in caught)
        self.report(level, f"Fit {report.status}: RMS {report.rms_position_mm:.3f} mm / "
                           f"{report.rms_rotation_deg:.3f} deg, max {report.max_position_mm:.3f} mm / "
                           f"{report.max_rotation_deg:.3f} deg{notes}")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_draw_joint_path(BoneOperator, bpy.types.Operator):
    """Draw the stored joint's path as a curve with small axes at its control frames"""

    bl_idname = "spline_joints.draw_joint_path"
    bl_label = "Draw Joint Path"

    def run(self, context, armature, pose_bone, settings):
        if pose_bone.parent is None:
            raise ValueError(f"bone '{pose_bone.name}' has no parent bone to draw the path in")
        obj = draw_joint_path(context, armature, pose_bone, joint_document(settings))
        self.report({"INFO"}, f"Drew '{obj.name}'")
        return {"FINISHED"}


classes = (SPLINE_JOINTS_OT_fit, SPLINE_JOINTS_OT_draw_joint_path)


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
        io.save(self.filepath, doc)
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

        try:
            doc = io.load(self.filepath)
        except OSError as exc:
            raise ValueError(f"cannot read {self.filepath}: {exc.strerror}") from None
        s.joint_json = io.dumps(doc)
        ranges = np.asarray(doc.ranges, dtype=float)
        for i, (lo, hi) in enumerate(ranges[: len(s.range_min)]):
            s.range_min[i], s.range_max[i] = float(lo), float(hi)
        report = doc.report
        s.fit_status = report.status if report is not None else "imported"
        if report is not None:
            s.fit_rms_mm, s.fit_max_mm = report.rms_position_mm, report.max_position_mm
            s.fit_rms_deg, s.fit_max_deg = report.rms_rotation_deg, report.max_rotation_deg
        self.report({"INFO"}, f"Stored {type(doc.joint).__name__} from {self.filepath} on '{pose_bone.name}'")
        return {"FINISHED"}


classes = (*classes, SPLINE_JOINTS_OT_export_joint, SPLINE_JOINTS_OT_import_joint)
