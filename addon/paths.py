"""A joint's path drawn in the scene: the curve the child bone's head follows, with the axes of
the joint's control frames, as one curve object parented to the parent bone."""

from __future__ import annotations

import numpy as np

from . import bridge

PATH_PREFIX = "SJ_JointPath"
#: the control frames' axes are drawn this fraction of the bone's length long and this fraction
#: as thick as the path (a knee's path is a few centimetres: longer axes would hide it)
AXES_LENGTH = 0.04
AXES_RADIUS = 0.25


def path_object_name(armature, pose_bone) -> str:
    return f"{PATH_PREFIX}_{armature.name}_{pose_bone.name}"


def path_parent_name(pose_bone) -> str:
    """Name of the parent bone a joint path is drawn in; ValueError saying what to do when the
    bone has none (checked before anything is fitted, stored or created)."""
    if pose_bone.parent is None:
        raise ValueError(f"bone '{pose_bone.name}' has no parent bone to draw the joint path in: "
                         "parent it to the joint's parent bone (Edit Mode, Ctrl+P > Keep Offset), "
                         "or fit with Draw Path off")
    return pose_bone.parent.name


def draw_joint_path(scene, armature, pose_bone, path):
    """Write ``path = (lines, control_frames)`` of :func:`core.display.joint_path` as one curve
    object in the rig's collection (:func:`bridge.rig_collection`): the path, and thinner
    lines for the x, y, z axes of the control frames (:func:`core.display.frame_axes`,
    :data:`AXES_LENGTH` of the bone's length), parented to the parent bone at its head (the
    joint's parent frame).
    Axes drawn as empties by earlier versions (``<name>.axes.000``...) are removed."""
    from ..core.display import frame_axes

    lines, frames = path
    parent = path_parent_name(pose_bone)
    name = path_object_name(armature, pose_bone)
    axes = list(frame_axes(frames, AXES_LENGTH * pose_bone.bone.length))
    collection = bridge.rig_collection(scene, armature)
    obj = bridge.write_poly_curve_object(name, list(lines) + axes, collection,
                                         bevel=0.01 * pose_bone.bone.length,
                                         radii=[1.0] * len(lines) + [AXES_RADIUS] * len(axes))
    bridge.move_to_collection(obj, collection)
    bridge.remove_objects(f"{name}.axes.")
    bridge.parent_to_bone(obj, armature, parent, np.eye(4))
    return obj
