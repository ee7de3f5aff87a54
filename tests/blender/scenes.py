"""Scenes built by the Blender tests (imported inside scenario functions, in Blender)."""

import importlib

import numpy as np

ADDON = "bl_ext.user_default.spline_joints"


def addon_module(name):
    """A module of the installed extension, e.g. addon_module('addon.bridge')."""
    return importlib.import_module(f"{ADDON}.{name}")


def printed_reports(call):
    """Run ``call()`` and return (its result, what Blender printed meanwhile): background
    Blender prints operator reports to stdout."""
    import ctypes
    import os
    import tempfile

    libc = ctypes.CDLL(None)
    with tempfile.TemporaryFile(mode="w+b") as out:
        saved = os.dup(1)
        libc.fflush(None)
        os.dup2(out.fileno(), 1)
        try:
            result = call()
        finally:
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
        out.seek(0)
        return result, out.read().decode("utf-8", "replace")


def refused(call):
    """The message of an operator call that reports an error (RuntimeError in background)."""
    try:
        call()
    except RuntimeError as exc:
        return str(exc)
    raise AssertionError("the operator did not refuse")


def action_fcurves(action):
    """The F-curves of an action with one slot: ``action.fcurves`` on Blender 4.2 and 4.3,
    its first layer's first strip's first channel bag from 4.4 (slotted actions)."""
    if not hasattr(action, "layers"):
        return action.fcurves
    return action.layers[0].strips[0].channelbags[0].fcurves


def leg_armature(name="Leg"):
    """Armature 'Leg': root bone 'thigh' and a disconnected child 'shin' (both with roll).

    The armature object is moved, rotated and left in Pose Mode with 'shin' active, so tests
    also check that the object's transform is ignored.
    """
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = (0.4, -0.3, 0.2)
    obj.rotation_euler = (0.1, 0.2, 0.3)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    thigh = data.edit_bones.new("thigh")
    thigh.head, thigh.tail, thigh.roll = (0.0, 0.0, 1.0), (0.0, 0.02, 0.55), 0.3
    shin = data.edit_bones.new("shin")
    shin.head, shin.tail, shin.roll = (0.01, 0.0, 0.5), (0.0, 0.03, 0.1), -0.2
    shin.parent = thigh
    shin.use_connect = False
    bpy.ops.object.mode_set(mode="POSE")
    data.bones.active = data.bones["shin"]
    obj.pose.bones["shin"].rotation_mode = "XYZ"
    bpy.context.view_layer.update()
    return obj


def tail_armature(name, n_tail, bone_length, location, swing):
    """Armature ``name`` at ``location``: a root bone 'hips' (0.2 m up Z) and a tail of
    ``n_tail`` bones 'tail.000', ... of ``bone_length`` along -Y from the hips' head,
    connected after the first; 'hips' keyed to turn about its own axis (XYZ Euler Y) by
    ``swing`` [(frame, angle rad), ...]. Left in Pose Mode."""
    import bpy

    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = location
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    hips = data.edit_bones.new("hips")
    hips.head, hips.tail = (0.0, 0.0, 0.0), (0.0, 0.0, 0.2)
    parent = hips
    for k in range(n_tail):
        b = data.edit_bones.new(f"tail.{k:03d}")
        b.head, b.tail = (0.0, -bone_length * k, 0.0), (0.0, -bone_length * (k + 1), 0.0)
        b.parent, b.use_connect = parent, k > 0
        parent = b
    bpy.ops.object.mode_set(mode="POSE")
    hb = obj.pose.bones["hips"]
    hb.rotation_mode = "XYZ"
    for f, a in swing:
        hb.rotation_euler = (0.0, a, 0.0)
        hb.keyframe_insert("rotation_euler", frame=f)
    return obj


def pose_leg(obj, thigh_quat=(0.96, 0.2, 0.1, 0.15), shin_rot=(0.7, 0.05, -0.1), shin_loc=(0.003, -0.01, 0.002)):
    import bpy

    thigh = obj.pose.bones["thigh"]
    thigh.rotation_mode = "QUATERNION"
    q = np.array(thigh_quat) / np.linalg.norm(thigh_quat)
    thigh.rotation_quaternion = q
    shin = obj.pose.bones["shin"]
    shin.rotation_euler = shin_rot
    shin.location = shin_loc
    bpy.context.view_layer.update()


def expected_T_parent_child(obj, child="shin"):
    """Child-in-parent pose computed with mathutils only (independent of the bridge)."""
    pb = obj.pose.bones[child]
    return np.array(pb.parent.matrix.inverted() @ pb.matrix)


def hanging_links(scene):
    """Two 6 x 6 x 30 cm mesh links 'link0', 'link1' hanging from an empty 'base' at 1.5 m on
    hinges about world X (Blender parents, density 500, absolute springs), their rest poses
    set where they hang. Returns the links."""
    import bpy
    from mathutils import Matrix

    base = bpy.data.objects.new("base", None)
    scene.collection.objects.link(base)
    base.location = (0.0, 0.0, 1.5)
    links = []
    for k in range(2):
        bpy.ops.mesh.primitive_cube_add(size=1.0)
        o = bpy.context.active_object
        o.name = f"link{k}"
        o.data.transform(Matrix.Diagonal((0.06, 0.06, 0.3, 1.0)))        # 6 x 6 x 30 cm
        o.data.transform(Matrix.Translation((0.0, 0.0, -0.15)))          # hangs from its origin
        o.parent = base if k == 0 else links[-1]
        o.matrix_parent_inverse = Matrix.Identity(4)
        o.location = (0.0, 0.0, 0.0 if k == 0 else -0.3)
        s = o.spline_joints_sim
        s.enabled, s.kind, s.axis, s.density = True, "HINGE", (1.0, 0.0, 0.0), 500.0
        s.spring_units = "ABSOLUTE"
        links.append(o)
    bpy.context.view_layer.update()
    for o in links:
        bpy.context.view_layer.objects.active = o
        assert bpy.ops.spline_joints.set_object_rest() == {"FINISHED"}
    return links


def cancelling_at(job_class, fraction: float = 0.5):
    """A subclass of a bake job class whose progress presses the modal's Esc (``cancel``) once
    the core reports ``fraction`` done; its ``seen`` lists every fraction reported."""

    class EscAt(job_class):
        seen = []

        def progress(self, done):
            self.seen.append(done)
            if done >= fraction:
                self.cancel()
            return super().progress(done)

    return EscAt


def bake_rig(scene, obj):
    """Read, simulate and key one rig as the Bake operator does; returns (result, report,
    job)."""
    rig_jobs = addon_module("addon.rig_jobs")
    job = rig_jobs.RigJob(scene, obj)
    job.simulate()
    result = job.checked_result()
    (message,) = rig_jobs.bake_rigs(scene, [job], [result])
    return result, message, job
