"""Capture operators on a two-bone leg: stored samples equal the bone transforms."""

import numpy as np


def scenario_capture_pose(tmp):
    import bpy

    from scenes import expected_T_parent_child, leg_armature, pose_leg

    obj = leg_armature()
    pose_leg(obj)
    shin = obj.pose.bones["shin"]
    assert bpy.ops.spline_joints.capture_pose() == {"FINISHED"}
    pose_leg(obj, shin_rot=(1.1, 0.0, 0.2), shin_loc=(0.0, 0.0, 0.0))
    assert bpy.ops.spline_joints.capture_pose() == {"FINISHED"}
    samples = shin.spline_joints.samples
    assert len(samples) == 2
    T = np.array(samples[1].pose).reshape(4, 4)
    np.testing.assert_allclose(T, expected_T_parent_child(obj), atol=1e-6)
    # The same pose from rest data and the channels, without pose matrices: rest_rel @ basis.
    rest_rel = obj.data.bones["thigh"].matrix_local.inverted() @ obj.data.bones["shin"].matrix_local
    np.testing.assert_allclose(T, np.array(rest_rel @ shin.matrix_basis), atol=1e-6)
    assert abs(samples[1].q[0] - 1.1) < 1e-6 and samples[1].n_coordinates == 1
    assert abs(samples[0].q[0] - 0.7) < 1e-6
    return {"T0": list(samples[0].pose)}


def test_capture_pose(blender):
    out = blender(scenario_capture_pose)
    T0 = np.array(out["T0"]).reshape(4, 4)
    np.testing.assert_allclose(T0[:3, :3] @ T0[:3, :3].T, np.eye(3), atol=1e-6)


def scenario_capture_range_and_persistence(tmp):
    import os

    import bpy

    from scenes import expected_T_parent_child, leg_armature

    obj = leg_armature()
    shin = obj.pose.bones["shin"]
    scene = bpy.context.scene
    for f, angle in ((1, 0.0), (11, 1.5)):
        shin.rotation_euler = (angle, 0.0, 0.0)
        shin.location = (0.0, 0.01 * angle, 0.0)
        shin.keyframe_insert("rotation_euler", frame=f)
        shin.keyframe_insert("location", frame=f)
    settings = shin.spline_joints
    settings.source = "FRAME"
    settings.frame_start, settings.frame_end = 1, 11
    settings.frame_q_start, settings.frame_q_end = 0.0, 2.0
    scene.frame_set(4)
    assert bpy.ops.spline_joints.capture_range(frame_start=1, frame_end=11, step=2) == {"FINISHED"}
    assert scene.frame_current == 4, "capture_range must restore the current frame"
    samples = shin.spline_joints.samples
    assert [s.frame for s in samples] == [1, 3, 5, 7, 9, 11]
    np.testing.assert_allclose([s.q[0] for s in samples], [0.0, 0.4, 0.8, 1.2, 1.6, 2.0], atol=1e-9)
    expected = []
    for s in samples:
        scene.frame_set(s.frame)
        expected.append(expected_T_parent_child(obj))
        np.testing.assert_allclose(np.array(s.pose).reshape(4, 4), expected[-1], atol=1e-6)
    assert bpy.ops.spline_joints.delete_sample(index=0) == {"FINISHED"}
    path = os.path.join(tmp, "capture.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    samples = bpy.data.objects["Leg"].pose.bones["shin"].spline_joints.samples
    assert [s.frame for s in samples] == [3, 5, 7, 9, 11]
    for s, T in zip(samples, expected[1:]):
        np.testing.assert_allclose(np.array(s.pose).reshape(4, 4), T, atol=1e-6)
    bpy.context.view_layer.objects.active = bpy.data.objects["Leg"]
    assert bpy.ops.spline_joints.clear_samples() == {"FINISHED"}
    assert len(samples) == 0
    return {}


def test_capture_range_and_persistence(blender):
    blender(scenario_capture_range_and_persistence)


def scenario_errors_leave_scene_unchanged(tmp):
    import bpy

    from scenes import leg_armature, pose_leg

    obj = leg_armature()
    pose_leg(obj)
    shin = obj.pose.bones["shin"]
    assert bpy.ops.spline_joints.capture_pose() == {"FINISHED"}
    before = [tuple(s.pose) for s in shin.spline_joints.samples]
    messages = []
    # 1. a missing custom property; 2. the root bone (no parent); 3. frame source with 2 coordinates.
    shin.spline_joints.source = "PROPERTY"
    shin.spline_joints.property_0 = "flexion"
    try:
        bpy.ops.spline_joints.capture_pose()
    except RuntimeError as exc:
        messages.append(str(exc))
    shin.spline_joints.source = "FRAME"
    shin.spline_joints.n_coordinates = 2
    try:
        bpy.ops.spline_joints.capture_range(frame_start=1, frame_end=5)
    except RuntimeError as exc:
        messages.append(str(exc))
    obj.data.bones.active = obj.data.bones["thigh"]
    try:
        bpy.ops.spline_joints.capture_pose()
    except RuntimeError as exc:
        messages.append(str(exc))
    assert [tuple(s.pose) for s in shin.spline_joints.samples] == before
    assert len(obj.pose.bones["thigh"].spline_joints.samples) == 0
    assert bpy.context.scene.frame_current == 1
    return {"messages": messages}


def test_errors_are_reported_and_change_nothing(blender):
    messages = blender(scenario_errors_leave_scene_unchanged)["messages"]
    assert len(messages) == 3
    assert "no custom property 'flexion'" in messages[0]
    assert "one coordinate" in messages[1]
    assert "no parent" in messages[2]


def scenario_undo(tmp):
    import bpy

    from scenes import leg_armature, pose_leg

    obj = leg_armature()
    pose_leg(obj)
    bpy.ops.ed.undo_push(message="before capture")
    # The second positional argument asks bpy.ops to push an undo step, as the UI does.
    assert bpy.ops.spline_joints.capture_pose("EXEC_DEFAULT", True) == {"FINISHED"}
    after = len(bpy.data.objects["Leg"].pose.bones["shin"].spline_joints.samples)
    bpy.ops.ed.undo()
    undone = len(bpy.data.objects["Leg"].pose.bones["shin"].spline_joints.samples)
    bpy.ops.ed.redo()
    redone = len(bpy.data.objects["Leg"].pose.bones["shin"].spline_joints.samples)
    return {"after": after, "undone": undone, "redone": redone}


def test_undo_restores_samples(blender):
    assert blender(scenario_undo) == {"after": 1, "undone": 0, "redone": 1}


def scenario_double_precision_poses(tmp):
    import warnings

    import bpy

    from scenes import addon_module, expected_T_parent_child, leg_armature, pose_leg

    bridge = addon_module("addon.bridge")
    JointSamples = addon_module("core.fitting").JointSamples
    obj = leg_armature()
    pose_leg(obj)
    shin = obj.pose.bones["shin"]
    assert bpy.ops.spline_joints.capture_pose() == {"FINISHED"}
    T_read = bridge.read_pose_T_parent_child(shin)
    T_stored = bridge.read_sample_poses(shin.spline_joints.samples)[0]
    R = T_stored[:3, :3]
    out = {"roundtrip": float(np.abs(T_stored - T_read).max()),
           "orthonormal": float(np.abs(R.T @ R - np.eye(3)).max())}
    np.testing.assert_allclose(T_stored, expected_T_parent_child(obj), atol=1e-6)

    # A captured range fits without the core's re-orthonormalization warning.
    shin.spline_joints.samples.clear()
    for f, a in ((1, 0.0), (21, 1.4)):
        shin.rotation_euler = (a, 0.1 * a, 0.0)
        shin.location = (0.0, 0.02 * a, 0.01 * a * a)
        shin.keyframe_insert("rotation_euler", frame=f)
        shin.keyframe_insert("location", frame=f)
    shin.spline_joints.source, shin.spline_joints.rotation_axis_0 = "ROTATION", "0"
    assert bpy.ops.spline_joints.capture_range(frame_start=1, frame_end=21) == {"FINISHED"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        JointSamples(*bridge.read_samples(shin.spline_joints.samples))
    poses = bridge.read_sample_poses(shin.spline_joints.samples)
    assert bpy.ops.spline_joints.fit() == {"FINISHED"}

    # Saved and reloaded, the poses are bit-identical.
    path = f"{tmp}/precision.blend"
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    samples = bpy.data.objects["Leg"].pose.bones["shin"].spline_joints.samples
    out["reloaded"] = float(np.abs(bridge.read_sample_poses(samples) - poses).max())

    # A sample saved before the double key existed (single-precision pose only) reads as rigid.
    for k in range(len(samples)):
        del samples[k][bridge.SAMPLE_POSE_KEY]
    legacy = bridge.read_sample_poses(samples)
    np.testing.assert_allclose(legacy, poses, atol=1e-6)
    Rl = legacy[:, :3, :3]
    out["legacy_orthonormal"] = float(np.abs(np.swapaxes(Rl, 1, 2) @ Rl - np.eye(3)).max())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        JointSamples(*bridge.read_samples(samples))
    return out


def test_captured_poses_reach_the_core_exactly(blender):
    out = blender(scenario_double_precision_poses)
    assert out["roundtrip"] <= 1e-12 and out["reloaded"] <= 1e-12, out
    assert out["orthonormal"] <= 1e-12 and out["legacy_orthonormal"] <= 1e-12, out
