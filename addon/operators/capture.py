"""Capture operators: record child-in-parent poses and driving coordinates as samples."""

from __future__ import annotations

import bpy
import numpy as np
from bpy.props import IntProperty

from .. import bridge
from ..bridge import target_bone
from ._common import BoneOperator, has_target


def read_coordinates(settings, armature, pose_bone, frame: int) -> np.ndarray:
    """Driving coordinate value(s) of the current state, shape (n_coordinates,)."""
    n = settings.n_coordinates
    if settings.source == "FRAME":
        if n != 1:
            raise ValueError("the frame-number source gives one coordinate; set Coordinates to 1 "
                             "or use rotation channels / custom properties")
        span = settings.frame_end - settings.frame_start
        if span == 0:
            raise ValueError("frame start equals frame end: the frame mapping needs a non-empty range")
        t = (frame - settings.frame_start) / span
        return np.array([settings.frame_q_start + t * (settings.frame_q_end - settings.frame_q_start)])
    source = pose_bone
    if settings.source_bone:
        source = armature.pose.bones.get(settings.source_bone)
        if source is None:
            raise ValueError(f"source bone '{settings.source_bone}' is not in armature '{armature.name}'")
    if settings.source == "ROTATION":
        axes = (int(settings.rotation_axis_0), int(settings.rotation_axis_1))[:n]
        return np.array([bridge.read_rotation_channel(source, a) for a in axes])
    names = (settings.property_0, settings.property_1)[:n]
    return np.array([bridge.read_custom_property(source, name) for name in names])


def append_samples(settings, frames, qs, poses) -> None:
    """Append samples (all values already validated)."""
    for frame, q, T in zip(frames, qs, poses):
        item = settings.samples.add()
        item.frame = int(frame)
        item.n_coordinates = len(q)
        item.q = tuple(q) + (0.0,) * (len(item.q) - len(q))
        bridge.write_sample_pose(item, T)
        item.weight = 1.0
    settings.active_sample = len(settings.samples) - 1


def duplicate_warning(settings, qs) -> str:
    """A warning text when new samples qs (K, n) repeat coordinate values already stored, else ''."""
    from ...core.fitting.samples import repeated_coordinates

    dup = repeated_coordinates(bridge.read_sample_coordinates(settings.samples, qs.shape[1])[0], qs)
    return f"; {dup} sample(s) repeat a coordinate value already captured" if dup else ""


def check_finite(poses: np.ndarray, qs: np.ndarray) -> None:
    if not (np.isfinite(poses).all() and np.isfinite(qs).all()):
        raise ValueError("the captured pose or coordinate has non-finite numbers; check the bone's "
                         "constraints and drivers")


class SPLINE_JOINTS_OT_capture_pose(BoneOperator, bpy.types.Operator):
    """Record the active bone's pose in its parent's frame and its driving coordinate(s)"""

    bl_idname = "spline_joints.capture_pose"
    bl_label = "Capture Pose"

    def run(self, context, armature, pose_bone, settings):
        frame = context.scene.frame_current
        T = bridge.read_pose_T_parent_child(pose_bone)
        q = read_coordinates(settings, armature, pose_bone, frame)
        check_finite(T, q)
        warning = duplicate_warning(settings, q[None])
        append_samples(settings, [frame], [q], [T])
        q_text = ", ".join(f"{v:.4g}" for v in q)
        self.report({"WARNING"} if warning else {"INFO"},
                    f"Sample {len(settings.samples)} at q = ({q_text}){warning}")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_capture_range(BoneOperator, bpy.types.Operator):
    """Record one sample per frame over a frame range (animation played back, then restored)"""

    bl_idname = "spline_joints.capture_range"
    bl_label = "Capture Frame Range"

    frame_start: IntProperty(name="Start", default=-1, description="First frame (-1: the scene's start)")
    frame_end: IntProperty(name="End", default=-1, description="Last frame (-1: the scene's end)")
    step: IntProperty(name="Step", default=0, min=0, description="Frame step (0: the bone's capture step)")

    def run(self, context, armature, pose_bone, settings):
        scene = context.scene
        bone_name = pose_bone.name
        frames = bridge.frame_range(scene, self.frame_start, self.frame_end, self.step or settings.capture_step)

        def read(f):
            pb = armature.pose.bones[bone_name]
            return bridge.read_pose_T_parent_child(pb), read_coordinates(settings, armature, pb, f)

        poses, qs = (np.array(a) for a in zip(*bridge.read_frames(scene, frames, read)))
        check_finite(poses, qs)
        settings = armature.pose.bones[bone_name].spline_joints
        warning = duplicate_warning(settings, qs)
        append_samples(settings, frames, qs, poses)
        self.report({"WARNING"} if warning else {"INFO"},
                    f"Captured {len(frames)} samples from frames {frames[0]}-{frames[-1]}{warning}")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_delete_sample(BoneOperator, bpy.types.Operator):
    """Delete one captured sample"""

    bl_idname = "spline_joints.delete_sample"
    bl_label = "Delete Sample"

    index: IntProperty(name="Index", default=-1, description="Sample to delete (-1: the active one)")

    @classmethod
    def poll(cls, context):
        return has_target(context) and len(target_bone(context)[1].spline_joints.samples) > 0

    def run(self, context, armature, pose_bone, settings):
        i = bridge.pick_index(settings.samples, settings.active_sample, self.index, "sample")
        settings.samples.remove(i)
        settings.active_sample = min(i, len(settings.samples) - 1) if settings.samples else 0
        self.report({"INFO"}, f"Deleted sample {i + 1}; {len(settings.samples)} left")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_clear_samples(BoneOperator, bpy.types.Operator):
    """Delete every captured sample of the active bone"""

    bl_idname = "spline_joints.clear_samples"
    bl_label = "Clear Samples"

    def run(self, context, armature, pose_bone, settings):
        n = len(settings.samples)
        settings.samples.clear()
        settings.active_sample = 0
        self.report({"INFO"}, f"Cleared {n} samples")
        return {"FINISHED"}


classes = (SPLINE_JOINTS_OT_capture_pose, SPLINE_JOINTS_OT_capture_range,
           SPLINE_JOINTS_OT_delete_sample, SPLINE_JOINTS_OT_clear_samples)
