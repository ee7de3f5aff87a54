"""The live drive: a frame-change and depsgraph handler that poses driven bones and imported
OpenSim armatures.

Registered by the add-on (nothing executable is stored in the .blend, so it works with
auto-run scripts off). For every pose bone whose Spline Joints ``drive`` flag is on, the
coordinate custom properties ``sj_q0..`` are read and the bone is posed at ``G(q)`` of the
stored joint. For every armature holding an imported OpenSim model
(:func:`documents.is_osim_armature`), the coordinate custom properties of the armature object
(one per OpenSim coordinate, named as it) are read and every bone is posed at its body's pose
``body_poses(q)`` (:class:`core.osim_rig.OsimRig`) of the model with its fitted joints that
are switched on (:func:`documents.osim_rig`), except the bones whose simulation bake is the
armature's action, inside the baked frame range (:func:`bridge.baked_bodies`): those play
their keys; then the armature's drawn muscles follow its coordinates
(:func:`.muscles.follow_pose`); the muscles on other armatures' bones follow their
bones (:func:`.rig_muscles.follow_rig_pose`). A bone is written only when its pose
changes (by more than :data:`POSE_TOL`), so the handler's own write does not retrigger it
endlessly. Bones with Hold Limits on are then held inside their limits (:mod:`.holding`: driven
bones by their coordinates' ranges, others by their reach cone and twist limit). Linkages with
Live Assembly on follow their driver (:func:`.linkage_handlers.follow_driver`). On a frame
change the frame callbacks run after that (:func:`register_frame_callback`: the add-on
registers the previews' playback, :mod:`.previews`). A bone,
armature or linkage that cannot be driven (an unreadable stored document or model, a
connected bone, ...) is skipped and reported once, on the console (and a bone in its fit
status).

Scripts that set a coordinate property (a driven bone's ``sj_q0``.., an OpenSim armature's
coordinate) see the bones follow once the depsgraph has run the handler and evaluated what it
wrote. Assigning a custom property from Python does not tag anything for update, so::

    pose_bone["sj_q0"] = 0.7          # or obj["knee_angle_r"] = -1.0
    obj.update_tag()                  # the property changed: the object needs an update
    bpy.context.view_layer.update()   # depsgraph update -> the handler writes the bone bases
    bpy.context.view_layer.update()   # evaluates them: pose_bone.matrix, children's matrix_world

``scene.frame_set(f)`` runs the handler for animated coordinates; one ``view_layer.update()``
after it evaluates the pose. (Sliders in the interface tag the update themselves.)
"""

from __future__ import annotations

import traceback

import bpy
import numpy as np
from bpy.app.handlers import persistent

from . import bridge
from .documents import fit_status, is_osim_armature, joint_document, osim_rig
from .holding import hold_bone, held_bones
from .linkage_handlers import follow_driver
from .muscles import follow_pose
from .rig_muscles import follow_rig_pose, rig_muscle_armatures

#: how far (m or, for rotations, per matrix entry) a bone's basis must move to be written again;
#: above the float32 round-off of Blender's stored location, rotation and scale (~1e-7)
POSE_TOL = 1e-6

_state = {"busy": False, "suspended": 0, "errors": set()}
#: ``fn(scene)`` called in order on every frame change, after :func:`update_scene`
_frame_callbacks: list = []


def driven_bones(scene):
    for obj in scene.objects:
        if obj.type != "ARMATURE" or obj.pose is None:
            continue
        for pb in obj.pose.bones:
            s = pb.spline_joints
            if s.drive and s.joint_json:
                yield obj, pb


def pose_bone_from_joint(pose_bone) -> bool:
    """Pose one driven bone from its coordinates (clamped to the joint's ranges when it holds
    its limits); True when its basis changed."""
    from ..core.bone_limits import hold_coordinates
    from ..core.bones import joint_basis

    doc = joint_document(pose_bone.spline_joints)
    q = bridge.read_coordinate_values(pose_bone, doc.joint.nq)
    if pose_bone.spline_joints.hold_limits:
        q = hold_coordinates(q, doc.ranges)
    basis = joint_basis(doc.joint, bridge.read_rest_T_parent_child(pose_bone), q)
    if np.allclose(np.array(pose_bone.matrix_basis), basis, atol=1e-7, rtol=0.0):
        return False
    bridge.check_drivable(pose_bone)
    pose_bone.matrix_basis = bridge.array_to_matrix(basis)
    return True


def osim_armatures(scene):
    """The scene's armature objects that hold an imported OpenSim model."""
    return [obj for obj in scene.objects if is_osim_armature(obj) and obj.pose is not None]


def pose_osim_armature(obj, baked=frozenset()) -> int:
    """Pose every bone of an imported OpenSim armature at its body for the coordinate values
    of the object's custom properties (missing ones at their defaults), except the ``baked``
    bones (names), which play their simulation keys; returns how many bones were written."""
    rig = osim_rig(obj.data)
    values = bridge.read_named_values(obj, rig.coordinate_names, rig.model.default_q())
    rests = bridge.read_bone_rests(obj, rig.bodies)
    bases = rig.bases(rests, rig.q(values))
    current = bridge.read_pose_bases(obj, rig.bodies)
    moved = ~np.all(np.isclose(current, bases, atol=POSE_TOL, rtol=POSE_TOL), axis=(1, 2))
    moved &= np.array([b not in baked for b in rig.bodies], dtype=bool)
    if np.any(moved):
        bridge.write_pose_bases(obj, [b for b, m in zip(rig.bodies, moved) if m], bases[moved])
    return int(np.count_nonzero(moved))


def update_scene(scene) -> int:
    """Pose every driven bone and every imported OpenSim armature of the scene, hold the held
    bones, assemble the live linkages whose driver moved; returns how many bones and linkages
    changed."""
    if _state["busy"] or _state["suspended"]:
        return 0
    _state["busy"] = True
    changed = 0
    try:
        for obj in osim_armatures(scene):
            key = (obj.name, "")
            try:
                changed += pose_osim_armature(obj, bridge.baked_bodies(obj, scene.frame_current))
                _state["errors"].discard(key)
            except Exception as exc:  # said once; the armature stays as it is
                _say_once(key, f"cannot pose OpenSim armature {obj.name}", exc)
            key = (obj.name, "muscles")
            try:
                changed += follow_pose(obj, osim_rig(obj.data))
                _state["errors"].discard(key)
            except Exception as exc:  # said once; the muscles stay as they are
                _say_once(key, f"cannot draw the muscles of {obj.name}", exc)
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
        for obj in rig_muscle_armatures(scene):
            key = (obj.name, "rig muscles")
            try:
                changed += follow_rig_pose(obj)
                _state["errors"].discard(key)
            except Exception as exc:  # said once; the muscles stay as they are
                _say_once(key, f"cannot draw the muscles of {obj.name}", exc)
        for obj, pb in held_bones(scene):
            key = (obj.name, pb.name, "hold")
            try:
                changed += hold_bone(obj, pb)
                _state["errors"].discard(key)
            except Exception as exc:  # said once; the bone stays as it is
                _say_once(key, f"cannot hold {obj.name}/{pb.name} in its limits", exc)
        for item in scene.spline_joints_linkages:
            key = (scene.name, item.name, "linkage")
            try:
                changed += follow_driver(scene, item)
                _state["errors"].discard(key)
            except Exception as exc:  # said once (and in its status); the bodies stay
                _say_once(key, f"cannot assemble linkage {item.name}", exc)
    finally:
        _state["busy"] = False
    return changed


def _say_once(key, what, exc):
    """Print ``what`` and why on the console the first time ``key`` fails (with the traceback
    when the error is not one of the core's or the bridge's ValueErrors)."""
    if key not in _state["errors"]:
        _state["errors"].add(key)
        detail = str(exc) if isinstance(exc, ValueError) else traceback.format_exc()
        print(f"Spline Joints: {what}: {detail}")


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


def register_frame_callback(fn) -> None:
    """Call ``fn(scene)`` on every frame change, after the live drive (in registration order)."""
    if fn not in _frame_callbacks:
        _frame_callbacks.append(fn)


def unregister_frame_callback(fn) -> None:
    while fn in _frame_callbacks:
        _frame_callbacks.remove(fn)


@persistent
def on_frame_change(scene, depsgraph=None):
    update_scene(scene)
    for fn in _frame_callbacks:
        fn(scene)


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
