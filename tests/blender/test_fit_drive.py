"""Fit a spline curve joint from captured samples, drive the bone live, bake keyframes, reload."""

import numpy as np
import pytest

FRAMES = (1, 41)
ANGLES = (0.0, 1.6)


def _knee_motion(obj):
    """Shin flexes about X from 0 to 1.6 rad over frames 1-41 while its head slides (knee-like)."""
    import bpy

    shin = obj.pose.bones["shin"]
    for f in range(FRAMES[0], FRAMES[1] + 1, 4):
        a = ANGLES[0] + (ANGLES[1] - ANGLES[0]) * (f - FRAMES[0]) / (FRAMES[1] - FRAMES[0])
        shin.rotation_euler = (a, 0.0, 0.0)
        shin.location = (0.0, 0.02 * np.sin(a), 0.01 * a * a)
        shin.keyframe_insert("rotation_euler", frame=f)
        shin.keyframe_insert("location", frame=f)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = FRAMES


def _T(obj):
    from scenes import expected_T_parent_child

    return expected_T_parent_child(obj)


def scenario_fit_drive_bake(tmp):
    import bpy

    from scenes import addon_module, leg_armature

    io = addon_module("core.io")
    obj = leg_armature()
    _knee_motion(obj)
    shin = obj.pose.bones["shin"]
    s = shin.spline_joints
    s.source, s.rotation_axis_0 = "ROTATION", "0"
    assert bpy.ops.spline_joints.capture_range() == {"FINISHED"}
    reference = {}
    for f in (5, 17, 30):
        bpy.context.scene.frame_set(f)
        reference[f] = (shin.rotation_euler[0], _T(obj))
    s.fit_frames = 8
    assert bpy.ops.spline_joints.fit() == {"FINISHED"}
    assert s.fit_status == "converged", s.fit_status
    assert s.fit_rms_mm < 0.05 and s.fit_rms_deg < 0.05, (s.fit_rms_mm, s.fit_rms_deg)
    doc = io.loads(s.joint_json)
    assert type(doc.joint).__name__ == "SplineCurveJoint"
    np.testing.assert_allclose(doc.ranges[0], ANGLES, atol=1e-6)
    for q, T in reference.values():  # the stored joint reproduces the captured poses
        np.testing.assert_allclose(doc.joint.transform(np.array([q])), T, atol=2e-4)
    path = bpy.data.objects["SJ_JointPath_Leg_shin"]
    assert path.parent == obj and path.parent_bone == "thigh" and path.type == "CURVE"
    # one object in the rig's collection: the path and the 8 control frames' 3 axes each
    assert [c.name for c in path.users_collection] == ["Spline Joints Leg"]
    assert len(path.data.splines) == 1 + 3 * 8
    assert not [o for o in bpy.data.objects if o.type == "EMPTY"]

    # Live drive: the slider poses the bone; animating the slider animates the bone.
    obj.animation_data_clear()
    assert bpy.ops.spline_joints.drive_joint() == {"FINISHED"}
    ui = shin.id_properties_ui("sj_q0").as_dict()
    assert abs(ui["min"] - ANGLES[0]) < 1e-6 and abs(ui["max"] - ANGLES[1]) < 1e-6
    q, T = reference[17]
    shin["sj_q0"] = q
    obj.update_tag()
    bpy.context.view_layer.update()  # depsgraph_update_post -> the add-on's handler
    bpy.context.view_layer.update()  # evaluate the pose it wrote
    np.testing.assert_allclose(_T(obj), T, atol=2e-4)
    shin["sj_q0"] = 0.2
    shin.keyframe_insert('["sj_q0"]', frame=1)
    shin["sj_q0"] = 1.4
    shin.keyframe_insert('["sj_q0"]', frame=11)
    driven = {}
    for f in (1, 4, 11):
        bpy.context.scene.frame_set(f)  # frame_change_post -> handler
        bpy.context.view_layer.update()
        qf = shin["sj_q0"]
        driven[f] = qf
        np.testing.assert_allclose(_T(obj), doc.joint.transform(np.array([qf])), atol=1e-5)
    assert 0.2 < driven[4] < 1.4

    # Bake: keys written with foreach_set into a new action (the slider's keeps playing from an
    # NLA track); with the drive off they reproduce the driven poses.
    before = obj.animation_data.action.name
    assert bpy.ops.spline_joints.bake_joint(frame_start=1, frame_end=11) == {"FINISHED"}
    assert not s.drive
    assert obj.animation_data.action.name == "Leg shin baked"
    assert [st.action.name for t in obj.animation_data.nla_tracks for st in t.strips] == [before]
    bridge = addon_module("addon.bridge")
    for path_, n in (("location", 3), ("rotation_euler", 3)):
        for i in range(n):
            keys = bridge.read_fcurve_keys(obj, f'pose.bones["shin"].{path_}', i)
            assert keys.shape == (11, 2) and np.allclose(keys[:, 0], np.arange(1, 12))
    for f in (1, 4, 11):
        bpy.context.scene.frame_set(f)
        bpy.context.view_layer.update()
        np.testing.assert_allclose(_T(obj), doc.joint.transform(np.array([driven[f]])), atol=1e-5)

    # Persistence, loading with scripts disabled (nothing executable is stored).
    blend = f"{tmp}/knee.blend"
    text = s.joint_json
    bpy.ops.wm.save_as_mainfile(filepath=blend)
    bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False, use_scripts=False)
    obj = bpy.data.objects["Leg"]
    shin = obj.pose.bones["shin"]
    assert shin.spline_joints.joint_json == text and shin.spline_joints.fit_status == "converged"
    assert len(shin.spline_joints.samples) == 41
    shin.spline_joints.drive = True
    obj.animation_data_clear()  # drop the baked keys and the slider's (on Bake's NLA track)
    shin["sj_q0"] = 0.9
    obj.update_tag()
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    np.testing.assert_allclose(_T(obj), doc.joint.transform(np.array([0.9])), atol=1e-5)
    return {"driven": driven}


@pytest.mark.smoke
def test_fit_drive_bake_reload(blender):
    out = blender(scenario_fit_drive_bake)
    assert set(out["driven"]) == {"1", "4", "11"}


def scenario_fit_errors(tmp):
    import bpy

    from scenes import leg_armature

    obj = leg_armature()
    shin = obj.pose.bones["shin"]
    messages = []
    try:
        bpy.ops.spline_joints.fit()
    except RuntimeError as exc:
        messages.append(str(exc))
    for a in (0.1, 0.2, 0.3):
        shin.rotation_euler = (a, 0, 0)
        bpy.context.view_layer.update()
        bpy.ops.spline_joints.capture_pose()
    shin.spline_joints.fit_type = "SURFACE"
    try:
        bpy.ops.spline_joints.fit()
    except RuntimeError as exc:
        messages.append(str(exc))
    shin.spline_joints.fit_type = "CURVE"
    try:
        bpy.ops.spline_joints.fit()  # 3 samples for a cubic spline with 8 frames
    except RuntimeError as exc:
        messages.append(str(exc))
    try:
        bpy.ops.spline_joints.drive_joint()
    except RuntimeError as exc:
        messages.append(str(exc))
    assert shin.spline_joints.joint_json == "" and "sj_q0" not in shin.keys()
    assert not [o for o in bpy.data.objects if o.name.startswith("SJ_")]
    return {"messages": messages}


def test_fit_errors_change_nothing(blender):
    messages = blender(scenario_fit_errors)["messages"]
    assert len(messages) == 4, messages
    assert "no samples" in messages[0]
    assert "needs 2 coordinates" in messages[1]
    assert "at least 4 distinct samples" in messages[2]  # the core's JointSamples validation
    assert "no joint stored" in messages[3]


def scenario_undo_fit_and_render_knee(tmp):
    import bpy
    from mathutils import Vector

    from scenes import leg_armature

    obj = leg_armature()
    obj.location, obj.rotation_euler = (0, 0, 0), (0, 0, 0)
    _knee_motion(obj)
    shin = obj.pose.bones["shin"]
    assert bpy.ops.spline_joints.capture_range() == {"FINISHED"}
    # Undo restores the state before the fit (no joint, no path objects).
    bpy.ops.ed.undo_push(message="before fit")
    assert bpy.ops.spline_joints.fit("EXEC_DEFAULT", True) == {"FINISHED"}
    assert bpy.data.objects.get("SJ_JointPath_Leg_shin") is not None
    bpy.ops.ed.undo()
    obj = bpy.data.objects["Leg"]
    shin = obj.pose.bones["shin"]
    undone = (shin.spline_joints.joint_json == "" and bpy.data.objects.get("SJ_JointPath_Leg_shin") is None
              and len(shin.spline_joints.samples) == 41)
    bpy.ops.ed.redo()
    obj = bpy.data.objects["Leg"]
    shin = obj.pose.bones["shin"]
    redone = shin.spline_joints.joint_json != ""

    # Render the fitted knee: the path tube, axes are empties (not rendered), a shin mesh.
    bpy.context.scene.frame_set(25)
    bpy.ops.mesh.primitive_cylinder_add(radius=0.035, depth=0.38, location=(0, 0, 0))
    tibia = bpy.context.object
    tibia.parent, tibia.parent_type, tibia.parent_bone = obj, "BONE", "shin"
    tibia.location = (0.0, -0.5 * shin.bone.length, 0.0)  # bone children sit at the tail
    tibia.rotation_euler = (1.5708, 0.0, 0.0)  # cylinder axis along the bone
    bpy.context.view_layer.objects.active = obj
    shin.spline_joints.cone_length = 0.08
    assert bpy.ops.spline_joints.draw_reach_cone() == {"FINISHED"}
    scene = bpy.context.scene
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    cam.location = (0.55, -0.35, 0.65)
    cam.rotation_euler = (Vector((0.0, 0.0, 0.45)) - cam.location).to_track_quat("-Z", "Y").to_euler()
    scene.camera = cam
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.shading.color_type = "MATERIAL"
    scene.render.resolution_x, scene.render.resolution_y = 240, 180
    scene.render.filepath = f"{tmp}/knee.png"
    bpy.ops.render.render(write_still=True)
    img = bpy.data.images.load(scene.render.filepath)
    px = np.empty(img.size[0] * img.size[1] * 4, dtype=np.float32)
    img.pixels.foreach_get(px)
    return {"undone": undone, "redone": redone, "std": float(px.reshape(-1, 4)[:, :3].std()),
            "path": scene.render.filepath}


def test_undo_fit_and_render_knee(blender):
    out = blender(scenario_undo_fit_and_render_knee)
    assert out["undone"] and out["redone"]
    assert out["std"] > 0.02, out


def scenario_surface_fit_and_drive(tmp):
    import bpy

    from scenes import addon_module, leg_armature

    io = addon_module("core.io")
    obj = leg_armature()
    shin = obj.pose.bones["shin"]
    s = shin.spline_joints
    s.n_coordinates, s.source = 2, "PROPERTY"
    s.property_0, s.property_1 = "a", "b"
    shin["a"], shin["b"] = 0.0, 0.0
    grid = np.linspace(-0.5, 0.5, 6)
    for a in grid:
        for b in grid:  # a smooth 2-DOF motion: swing about X and Z, the head sliding with it
            shin["a"], shin["b"] = a, b
            shin.rotation_euler = (a, 0.0, b)
            shin.location = (0.01 * b, 0.005 * a * b, 0.01 * a)
            bpy.context.view_layer.update()
            assert bpy.ops.spline_joints.capture_pose() == {"FINISHED"}
    target = obj.pose.bones["shin"].matrix_basis.copy()
    s.fit_type, s.fit_grid = "SURFACE", (4, 4)
    assert bpy.ops.spline_joints.fit() == {"FINISHED"}
    doc = io.loads(s.joint_json)
    assert type(doc.joint).__name__ == "SplineJoint" and doc.joint.nq == 2
    assert s.fit_rms_mm < 0.5 and s.fit_rms_deg < 0.5, (s.fit_rms_mm, s.fit_rms_deg)
    path = bpy.data.objects["SJ_JointPath_Leg_shin"]
    assert len(path.data.splines) == 10  # 5 iso-lines per coordinate
    assert bpy.ops.spline_joints.drive_joint() == {"FINISHED"}
    shin["sj_q0"], shin["sj_q1"] = 0.5, 0.5
    obj.update_tag()
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    err = np.abs(np.array(shin.matrix_basis) - np.array(target)).max()
    return {"err": float(err)}


def test_surface_fit_and_drive(blender):
    assert blender(scenario_surface_fit_and_drive)["err"] < 5e-4


def scenario_export_import(tmp):
    import bpy

    from scenes import leg_armature

    obj = leg_armature()
    shin = obj.pose.bones["shin"]
    for a in np.linspace(0.0, 1.0, 7):
        shin.rotation_euler = (a, 0.0, 0.0)
        shin.location = (0.0, 0.01 * a, 0.0)
        bpy.context.view_layer.update()
        bpy.ops.spline_joints.capture_pose()
    shin.spline_joints.fit_frames = 5
    assert bpy.ops.spline_joints.fit(draw_path=False) == {"FINISHED"}
    text = shin.spline_joints.joint_json
    path = f"{tmp}/shin_joint.json"
    assert bpy.ops.spline_joints.export_joint(filepath=path) == {"FINISHED"}
    obj.data.bones.active = obj.data.bones["thigh"]
    messages = []
    with open(f"{tmp}/bad.json", "w") as fh:
        fh.write('{"schema": "spline_joints.joint", "version": 99}')
    try:
        bpy.ops.spline_joints.import_joint(filepath=f"{tmp}/bad.json")
    except RuntimeError as exc:
        messages.append(str(exc))
    assert obj.pose.bones["thigh"].spline_joints.joint_json == ""
    assert bpy.ops.spline_joints.import_joint(filepath=path) == {"FINISHED"}
    thigh = obj.pose.bones["thigh"].spline_joints
    assert thigh.joint_json == text and thigh.fit_status == shin.spline_joints.fit_status
    return {"messages": messages}


def test_export_import_joint_json(blender):
    messages = blender(scenario_export_import)["messages"]
    assert len(messages) == 1 and "version 99" in messages[0]
