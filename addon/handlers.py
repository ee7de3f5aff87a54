"""The live drive: a frame-change and depsgraph handler that poses driven bones.

Registered by the add-on (nothing executable is stored in the .blend, so it works with
auto-run scripts off). For every pose bone whose Spline Joints ``drive`` flag is on, the
coordinate custom properties ``sj_q0..`` are read and the bone is posed at ``G(q)`` of the
stored joint. A bone is written only when its pose changes, so the handler's own write does
not retrigger it endlessly. A bone that cannot be driven (an unreadable stored document, a
connected bone, ...) is skipped and reported once, on the console and in its fit status.
"""

from __future__ import annotations

import traceback

import bpy
import numpy as np
from bpy.app.handlers import persistent

from . import bridge
from .documents import fit_status, joint_document

_state = {"busy": False, "suspended": 0, "errors": set()}


def driven_bones(scene):
    for obj in scene.objects:
        if obj.type != "ARMATURE" or obj.pose is None:
            continue
        for pb in obj.pose.bones:
            s = pb.spline_joints
            if s.drive and s.joint_json:
                yield obj, pb


def pose_bone_from_joint(pose_bone) -> bool:
    """Pose one driven bone from its coordinates; True when its basis changed."""
    from ..core.bones import joint_basis

    doc = joint_document(pose_bone.spline_joints)
    q = bridge.read_coordinate_values(pose_bone, doc.joint.nq)
    basis = joint_basis(doc.joint, bridge.read_rest_T_parent_child(pose_bone), q)
    if np.allclose(np.array(pose_bone.matrix_basis), basis, atol=1e-7, rtol=0.0):
        return False
    bridge.check_drivable(pose_bone)
    pose_bone.matrix_basis = bridge.array_to_matrix(basis)
    return True


def update_scene(scene) -> int:
    """Pose every driven bone of the scene; returns how many changed."""
    if _state["busy"] or _state["suspended"]:
        return 0
    _state["busy"] = True
    changed = 0
    try:
        for obj, pb in driven_bones(scene):
            key = (obj.name, pb.name)
            try:
                changed += pose_bone_from_joint(pb)
                if key in _state["errors"]:  # driven again: the status shows the fit again
                    _state["errors"].discard(key)
                    _show_status(pb, fit_status(joint_document(pb.spline_joints)))
            except Exception as exc:  # an escaping error would print on every frame change
                if key not in _state["errors"]:  # say it once; the bone stays as it is
                    _state["errors"].add(key)
                    _report_drive_error(obj, pb, exc)
    finally:
        _state["busy"] = False
    return changed


def _report_drive_error(obj, pose_bone, exc):
    """Say once why a driven bone is skipped: on the console (with the traceback when the
    error is not one of the core's or the bridge's ValueErrors, which say what to do) and in
    the bone's fit status, which the Fit panel shows."""
    detail = str(exc) if isinstance(exc, ValueError) else traceback.format_exc()
    print(f"Spline Joints: cannot drive {obj.name}/{pose_bone.name}: {detail}")
    _show_status(pose_bone, f"cannot drive: {exc}")


def _show_status(pose_bone, text):
    """Write the bone's fit status (the Fit panel shows it), except where Blender makes ID data
    read-only (e.g. while rendering): the console line has said it then."""
    try:
        pose_bone.spline_joints.fit_status = text
    except AttributeError:
        pass


class suspended:
    """Context manager: no live driving inside (used while baking)."""

    def __enter__(self):
        _state["suspended"] += 1

    def __exit__(self, *exc):
        _state["suspended"] -= 1


@persistent
def on_frame_change(scene, depsgraph=None):
    update_scene(scene)


@persistent
def on_depsgraph_update(scene, depsgraph=None):
    update_scene(scene)


def register():
    for lst, fn in ((bpy.app.handlers.frame_change_post, on_frame_change),
                    (bpy.app.handlers.depsgraph_update_post, on_depsgraph_update)):
        if fn not in lst:
            lst.append(fn)


def unregister():
    for lst, fn in ((bpy.app.handlers.frame_change_post, on_frame_change),
                    (bpy.app.handlers.depsgraph_update_post, on_depsgraph_update)):
        while fn in lst:
            lst.remove(fn)
