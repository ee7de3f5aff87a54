"""Shared operator plumbing: whether there is a target bone, ValueErrors turned into reports,
frame ranges."""

from __future__ import annotations

import functools

import numpy as np

from ..bridge import target_bone


def has_target(context) -> bool:
    try:
        target_bone(context)
    except ValueError:
        return False
    return True


def reporting(method):
    """Wrap an operator method ``method(self, context, *args)``: a ValueError (core or bridge)
    becomes an ERROR report and CANCELLED. (Blender checks the argument count of ``invoke`` and
    ``modal``, so those delegate to a wrapped method instead of being wrapped.)

    Operators compute everything before writing to the scene, so a cancelled run changes nothing.
    """

    @functools.wraps(method)
    def wrapper(self, context, *args):
        try:
            return method(self, context, *args)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}

    return wrapper


class BoneOperator:
    """Mixin for operators on the active pose bone (the joint's child).

    ``poll`` needs an active pose bone; ``execute`` finds it and calls
    ``self.run(context, armature, pose_bone, settings)`` (settings: ``pose_bone.spline_joints``),
    turning a ValueError into an ERROR report and CANCELLED (see :func:`reporting`).
    """

    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return has_target(context)

    @reporting
    def execute(self, context):
        armature, pose_bone = target_bone(context)
        return self.run(context, armature, pose_bone, pose_bone.spline_joints)


def pick_index(collection, active: int, index: int, what: str) -> int:
    """``index``, or ``active`` when index < 0, checked against the collection's length."""
    i = active if index < 0 else index
    if not 0 <= i < len(collection):
        raise ValueError(f"{what} {i} does not exist: there are {len(collection)}")
    return i


def frame_range(scene, start: int, end: int, step: int) -> np.ndarray:
    """Frames start..end (inclusive) by step; -1 for start or end means the scene's own."""
    start = scene.frame_start if start < 0 else start
    end = scene.frame_end if end < 0 else end
    if end < start:
        raise ValueError(f"frame range {start}..{end} is empty: the end must not be before the start")
    return np.arange(start, end + 1, step)


def read_frames(scene, frames, read) -> list:
    """``read(frame)`` after ``scene.frame_set(frame)`` for each frame (a whole number, or a
    fractional frame set as its frame and subframe); the current frame (and subframe) is
    restored afterwards, also when ``read`` raises."""
    current = scene.frame_current, scene.frame_subframe
    try:
        out = []
        for f in frames:
            whole = int(np.floor(f))
            scene.frame_set(whole, subframe=float(f) - whole)
            out.append(read(whole if float(f) == whole else float(f)))
        return out
    finally:
        scene.frame_set(current[0], subframe=current[1])
