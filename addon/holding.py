"""Hold Limits: bones kept inside their limits while posing and during playback.

For every pose bone whose ``hold_limits`` switch is on, the live handler (:mod:`.handlers`,
on every depsgraph update and frame change):

* a driven bone (``drive`` on): its coordinates are clamped to the joint's ranges before the
  bone is posed (:func:`core.bone_limits.hold_coordinates`; the coordinate properties keep
  their values);
* any other child bone: its joint rotation (the rotation of its ``matrix_basis``) is
  projected into its reach cone and twist limit (:func:`core.bone_limits.hold_rotation`) and
  written back into its rotation channels, in its own rotation mode, when it moved by more
  than :data:`HOLD_TOL`. The bone's location and scale are left alone.

Keys are never changed: on a keyed bone the projection applies to the displayed pose (the
channels hold the projected values until the animation sets them again on the next frame,
where they are projected again); keying the bone (I) stores the displayed, projected pose.

The bone's drawn reach cone (Draw Reach Cone) shows the state in its own material's colour:
:data:`INSIDE_COLOUR` inside, :data:`LIMIT_COLOUR` at the limit (within :data:`HOLD_TOL` of
it, or held there), :data:`FREE_COLOUR` when the switch is off. Colours and channels are
written only when they change, so the handler's writes do not start updates without end.
"""

from __future__ import annotations

import math

import bpy

from . import bridge
from .cones import cone_object_name, cone_options

#: how far (radians) a held rotation must move to be written: the single-precision round trip
#: of a rotation through Blender's channels and matrix_basis, about ten roundings of 2^-24 on
#: angles up to pi; a pose this close to a limit counts as at the limit
HOLD_TOL = 10.0 * math.pi * 2.0 ** -24

FREE_COLOUR = (0.2, 0.6, 1.0, 0.35)
INSIDE_COLOUR = (0.15, 0.8, 0.25, 0.35)
LIMIT_COLOUR = (0.95, 0.12, 0.08, 0.45)


def held_bones(scene):
    """(armature object, pose bone) of every child bone with Hold Limits on that is not
    driven (driven bones are held by their coordinate ranges)."""
    for obj in scene.objects:
        if obj.type != "ARMATURE" or obj.pose is None:
            continue
        for pb in obj.pose.bones:
            s = pb.spline_joints
            if s.hold_limits and not s.drive and pb.parent is not None:
                yield obj, pb


def hold_bone(armature, pose_bone) -> bool:
    """Project the bone's rotation into its cone and twist limit and colour its cone; True
    when its rotation channels were written."""
    from ..core.bone_limits import hold_rotation

    R, proj = hold_rotation(cone_options(pose_bone.spline_joints),
                            bridge.read_basis_rotation(pose_bone))
    written = proj.angle > HOLD_TOL and bridge.write_basis_rotation(pose_bone, R)
    show_cone_state(armature, pose_bone, LIMIT_COLOUR if proj.margin <= HOLD_TOL else INSIDE_COLOUR)
    return written


def show_cone_state(armature, pose_bone, rgba) -> None:
    """Colour the bone's drawn reach cone (if it has one with its own material)."""
    obj = bpy.data.objects.get(cone_object_name(armature, pose_bone))
    if obj is None or obj.type != "MESH" or not obj.data.materials:
        return
    mat = obj.data.materials[0]
    if mat is not None and mat.name == obj.name:   # its own material, not a shared one
        bridge.set_material_colour(mat, rgba)


def hold_switched(settings) -> None:
    """Hold Limits of a bone switched (the property's update): the handler holds it at once;
    switched off, its cone takes the neutral colour again."""
    obj = settings.id_data
    if settings.hold_limits:
        obj.update_tag()
        return
    key = settings.as_pointer()
    for pb in obj.pose.bones:
        if pb.spline_joints.as_pointer() == key:
            show_cone_state(obj, pb, FREE_COLOUR)
            break
