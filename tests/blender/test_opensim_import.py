"""OpenSim import in Blender: a model as an armature with meshes and coordinate properties, a
walking motion keyed on those properties, bones posed exactly where the core puts the bodies,
errors that leave nothing behind, undo, and a Workbench still of the walking model.

Bone count: gait2392 has 13 bodies including ground; ground is the armature object itself, so
the armature has 12 bones.
"""

import os
from pathlib import Path

import numpy as np
import pytest
from scenes import printed_reports

OSIM = Path(__file__).resolve().parents[3] / "shared" / "data" / "osim"
GAIT = str(OSIM / "gait2392_thelen2003muscle.osim")
ARM26 = str(OSIM / "arm26.osim")
PENDULUM = str(OSIM / "double_pendulum.osim")
WALK = str(OSIM / "subject01_walk1_ik.mot")
#: rows of the walking motion checked pose by pose
ROWS = (0, 37, 90, 151, 210)
#: world poses: Blender keeps bone and object matrices in float32 (eps32 ~ 1.2e-7); a bone
#: five joints below the root is composed from ~6 float32 matrices whose entries reach ~2 m
#: (pelvis height plus the walk's travel along x) besides the unit rotation entries, each
#: product rounding about an ulp of the largest. 4 ulps of that scale, 1.4e-6 (~1e-6 m
#: relative to the 1.8 m model), bounds it; the largest error measured is 6.3e-7.
FLOAT32_TOL = 4 * float(np.finfo(np.float32).eps) * (2.0 + 1.0)

pytestmark = pytest.mark.skipif(not OSIM.is_dir(), reason=f"OpenSim data not found at {OSIM}")


def _counts():
    import bpy

    kinds = ("objects", "meshes", "armatures", "collections", "actions", "materials")
    return {k: len(getattr(bpy.data, k)) for k in kinds}


def _expected(model, q):
    """Core body poses in Blender world space (the armature object turned +90 deg about X)."""
    Rx = np.array([[1.0, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]])
    return {b: Rx @ T for b, T in model.body_poses(q).items()}


def _check_pose(arm, model, q, geometry_of):
    """Largest world-space error of every bone (against B(q) B(q0)^-1 R) and every mesh
    object (against B(q) G, the geometry's pose and scale in its body)."""
    from scenes import addon_module

    rig_mod = addon_module("core.osim_rig")
    expected, default = _expected(model, q), _expected(model, None)
    worst = 0.0
    for pb in arm.pose.bones:
        rest = np.array(arm.matrix_world) @ np.array(pb.bone.matrix_local)
        want = expected[pb.name] @ np.linalg.inv(default[pb.name]) @ rest
        worst = max(worst, float(np.abs(np.array(arm.matrix_world) @ np.array(pb.matrix) - want).max()))
    for obj, (body, g) in geometry_of.items():
        want = expected[body] @ rig_mod.geometry_transform(g)
        worst = max(worst, float(np.abs(np.array(obj.matrix_world) - want).max()))
    return worst


def _geometry_objects(collection, model):
    """{mesh object: (body, OsimGeometry)} by object name (the mesh file's stem)."""
    out = {}
    for body in model.bodies.values():
        for g in body.geometry:
            obj = collection.objects[os.path.splitext(g.mesh_file)[0]]
            out[obj] = (body.name, g)
    return out


def scenario_gait_walk(tmp, gait, walk, rows):
    import bpy

    from scenes import addon_module

    osim = addon_module("core.io.osim")
    motion_io = addon_module("core.io.motion")
    rig_mod = addon_module("core.osim_rig")
    bpy.ops.wm.read_homefile(use_empty=True)
    model = osim.read_osim(gait)
    result, printed = printed_reports(lambda: bpy.ops.spline_joints.import_osim(filepath=gait))
    assert result == {"FINISHED"}
    collection = bpy.data.collections[model.name]
    arm = bpy.context.object
    assert arm.type == "ARMATURE" and arm.name in collection.objects
    bones = sorted(b.name for b in arm.data.bones)
    assert bones == sorted(b for b in model.bodies if b != "ground"), bones
    for b in arm.data.bones:
        assert b.length > 0.0 and not b.use_connect
        joint = next(j for j in model.joints if j.child == b.name)
        assert (b.parent.name if b.parent else "ground") == joint.parent
    meshes = [o for o in collection.objects if o.type == "MESH"]
    assert len(meshes) == 20 and not [o for o in collection.objects if o.type == "EMPTY"]
    assert len({o.data.name for o in meshes}) == 20
    treadmill = collection.objects["treadmill"]
    assert treadmill.parent == arm and treadmill.parent_type == "OBJECT" and treadmill.hide_render
    coords = list(model.coordinate_names)
    assert all(c in arm.keys() for c in coords) and len(coords) == 23
    ui = arm.id_properties_ui("knee_angle_r").as_dict()
    assert ui["subtype"] == "ANGLE" and abs(ui["soft_min"] + 2.0943951) < 1e-6
    assert ui["description"] == "knee_angle_r: OpenSim coordinate (rad), range -120..10 deg"
    assert arm.id_properties_ui("pelvis_ty").as_dict()["default"] == pytest.approx(0.95)
    geometry_of = _geometry_objects(collection, model)
    bpy.context.view_layer.update()
    errors = {"default": _check_pose(arm, model, None, geometry_of)}

    # A coordinate set from Python: the depsgraph handler poses the bones.
    q = model.default_q()
    q[coords.index("knee_angle_r")] = -1.0
    q[coords.index("hip_flexion_l")] = 0.6
    arm["knee_angle_r"], arm["hip_flexion_l"] = -1.0, 0.6
    arm.update_tag()  # assigning an ID property from Python tags nothing (addon.handlers)
    bpy.context.view_layer.update()  # the handler writes the bone bases
    bpy.context.view_layer.update()  # evaluates them
    errors["python"] = _check_pose(arm, model, q, geometry_of)

    # The walking motion, keyed and played back frame by frame.
    result, motion_printed = printed_reports(lambda: bpy.ops.spline_joints.import_osim_motion(filepath=walk))
    assert result == {"FINISHED"}
    scene = bpy.context.scene
    time, qs, rep = osim.motion_coordinates(model, motion_io.read_motion(walk))
    assert scene.render.fps == 60 and abs(scene.render.fps / scene.render.fps_base - 60.0) < 1e-9
    frames = rig_mod.motion_frames(time, 60.0, 1)
    assert (scene.frame_start, scene.frame_end) == (frames[0], frames[-1]) == (1, 211)
    action = arm.animation_data.action
    assert action is not None and action.name.endswith("subject01_walk1_ik")
    for row in rows:
        scene.frame_set(int(frames[row]))
        bpy.context.view_layer.update()
        assert abs(arm["knee_angle_r"] - qs[row, coords.index("knee_angle_r")]) < 1e-6
        errors[f"row {row}"] = _check_pose(arm, model, qs[row], geometry_of)
    # Posed once, the handler writes nothing more (no endless depsgraph updates).
    assert addon_module("addon.handlers").update_scene(scene) == 0
    return {"errors": errors, "import_report": printed, "motion_report": motion_printed,
            "ignored": rep["ignored"], "missing": rep["missing"]}


@pytest.mark.smoke
def test_gait2392_imports_and_walks(blender):
    out = blender(scenario_gait_walk, gait=GAIT, walk=WALK, rows=ROWS)
    for what, err in out["errors"].items():
        assert err < FLOAT32_TOL, (what, err)
    assert "12 bodies as bones, 23 coordinates, 20 meshes from 20 files" in out["import_report"]
    assert "20 meshes from 20 files, 92 muscles" in out["import_report"]
    assert "not imported" not in out["import_report"]
    assert "Keyed 211 rows" in out["motion_report"] and "211 frames" in out["motion_report"]
    assert out["missing"] == [] and out["ignored"] == []


def scenario_arm26_placeholders(tmp, arm26):
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    result, printed = printed_reports(lambda: bpy.ops.spline_joints.import_osim(filepath=arm26))
    assert result == {"FINISHED"}
    collection = bpy.data.collections["arm26"]
    empties = [o for o in collection.objects if o.type == "EMPTY"]
    arm = bpy.context.object
    return {"bones": sorted(b.name for b in arm.data.bones), "report": printed,
            "placeholders": sorted(o.name for o in empties),
            "parents": sorted({o.parent_bone or o.parent.name for o in empties}),
            "meshes": len([o for o in collection.objects if o.type == "MESH"
                           and "spline_joints_model_marker" not in o
                           and "spline_joints_wrap" not in o]),
            "wraps": len([o for o in collection.objects if "spline_joints_wrap" in o]),
            "markers": sorted((o.name, o.parent_bone) for o in collection.objects
                              if "spline_joints_model_marker" in o)}


def test_arm26_placeholders_for_missing_meshes(blender):
    out = blender(scenario_arm26_placeholders, arm26=ARM26)
    assert out["bones"] == ["base", "r_humerus", "r_ulna_radius_hand"]
    # besides the wrap surfaces (two cylinders, two ellipsoids) no mesh is found
    assert out["meshes"] == 0 and out["wraps"] == 4 and len(out["placeholders"]) == 36
    assert out["markers"] == [["r_acromion", "base"], ["r_humerus_epicondyle", "r_humerus"],
                              ["r_radius_styloid", "r_ulna_radius_hand"]], out["markers"]
    assert "arm_r_humerus.vtp (missing)" in out["placeholders"]
    assert out["parents"] == ["base", "r_humerus", "r_ulna_radius_hand"]
    assert "36 mesh files not found (placeholders): ground_ribs.vtp" in out["report"]
    assert "0 meshes from 0 files, 6 muscles, 4 wrap surfaces, 3 markers; 36 mesh files not found" in out["report"]


def scenario_errors_leave_nothing(tmp, gait, pendulum, walk):
    import shutil

    import bpy

    from scenes import addon_module

    motion_io = addon_module("core.io.motion")
    bpy.ops.wm.read_homefile(use_empty=True)
    text = Path(gait).read_text()
    truncated = Path(tmp) / "truncated.osim"
    truncated.write_text(text[: len(text) // 2])
    unknown = Path(tmp) / "unknown_joint.osim"
    unknown.write_text(Path(pendulum).read_text().replace("PinJoint", "WobbleJoint"))
    bad_mesh = Path(tmp) / "bad_mesh" / "double_pendulum.osim"
    (bad_mesh.parent / "Geometry").mkdir(parents=True)
    shutil.copy(pendulum, bad_mesh)
    (bad_mesh.parent / "Geometry" / "sphere.vtp").write_text("<VTKFile type='PolyData'><Poly")
    messages = {}
    before = _counts()
    for name, path in (("truncated", truncated), ("unknown", unknown), ("mesh", bad_mesh),
                       ("missing file", Path(tmp) / "nothing.osim")):
        try:
            bpy.ops.spline_joints.import_osim(filepath=str(path))
            messages[name] = "FINISHED"
        except RuntimeError as exc:
            messages[name] = str(exc)
        assert _counts() == before, (name, _counts(), before)

    # A motion of another model onto gait2392: refused, nothing keyed, no action made.
    assert bpy.ops.spline_joints.import_osim(filepath=gait) == {"FINISHED"}
    arm = bpy.context.object
    other = Path(tmp) / "arm_motion.mot"
    motion_io.write_motion(other, ["r_shoulder_elev", "r_elbow_flex"], np.array([0.0, 0.1]),
                           np.array([[10.0, 20.0], [15.0, 25.0]]), in_degrees=True)
    before = _counts()
    fps = bpy.context.scene.render.fps
    try:
        bpy.ops.spline_joints.import_osim_motion(filepath=str(other))
        messages["motion"] = "FINISHED"
    except RuntimeError as exc:
        messages["motion"] = str(exc)
    assert _counts() == before and arm.animation_data is None and bpy.context.scene.render.fps == fps
    return messages


def test_errors_leave_nothing_behind(blender):
    out = blender(scenario_errors_leave_nothing, gait=GAIT, pendulum=PENDULUM, walk=WALK)
    assert "truncated" in out["truncated"] and "not a complete XML file" in out["truncated"]
    assert "WobbleJoint is not supported" in out["unknown"]
    assert "sphere.vtp" in out["mesh"]
    assert "cannot read OpenSim model" in out["missing file"]
    assert "none of its columns" in out["motion"] and "r_shoulder_elev" in out["motion"]


def scenario_existing_action_kept(tmp, gait, walk):
    import bpy

    from scenes import action_fcurves

    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.ops.spline_joints.import_osim(filepath=gait) == {"FINISHED"}
    arm = bpy.context.object
    arm.location = (0.0, 0.0, 0.0)
    arm.keyframe_insert("location", frame=1)
    arm.location = (1.0, 0.0, 0.0)
    arm.keyframe_insert("location", frame=50)
    old = arm.animation_data.action
    old_name = old.name
    _, printed = printed_reports(lambda: bpy.ops.spline_joints.import_osim_motion(filepath=walk,
                                                                          use_motion_timing=False))
    ad = arm.animation_data
    old = bpy.data.actions.get(old_name)
    strips = [(t.name, s.action.name) for t in ad.nla_tracks for s in t.strips]
    bpy.context.scene.frame_set(50)
    return {"active": ad.action.name, "old": old_name, "old_exists": old is not None, "strips": strips,
            "old_fcurves": len(list(action_fcurves(old))),
            "x_at_50": arm.location[0], "report": printed, "fps": bpy.context.scene.render.fps}


def test_existing_action_survives_motion_import(blender):
    out = blender(scenario_existing_action_kept, gait=GAIT, walk=WALK)
    old = out["old"]
    assert out["old_exists"] and out["old_fcurves"] == 3
    assert out["strips"] == [[old, old]] and out["active"] != old
    assert out["x_at_50"] == pytest.approx(1.0)  # the pushed-down action still plays
    assert f"previous action is kept on NLA track '{old}'" in out["report"]
    assert out["fps"] == 24  # use_motion_timing=False keeps the scene's rate


def scenario_undo_import(tmp, gait):
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    before = _counts()
    bpy.ops.ed.undo_push(message="before import")
    # The second positional argument asks bpy.ops to push an undo step, as the UI does.
    assert bpy.ops.spline_joints.import_osim("EXEC_DEFAULT", True, filepath=gait) == {"FINISHED"}
    after = _counts()
    bpy.ops.ed.undo()
    undone = _counts()
    bpy.ops.ed.redo()
    return {"before": before, "after": after, "undone": undone, "redone": _counts()}


def test_undo_removes_the_import(blender):
    out = blender(scenario_undo_import, gait=GAIT)
    # armature + 20 meshes + 92 muscle curves
    assert out["after"]["objects"] == out["before"]["objects"] + 21 + 92
    assert out["after"]["armatures"] == 1 and out["after"]["collections"] == 1
    assert out["undone"] == out["before"]
    assert out["redone"] == out["after"]


def scenario_render_walk(tmp, gait, walk, frame):
    import bpy
    from mathutils import Vector

    from scenes import addon_module

    files = addon_module("core.io.files")
    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.ops.spline_joints.import_osim(filepath=gait) == {"FINISHED"}
    assert bpy.ops.spline_joints.import_osim_motion(filepath=walk) == {"FINISHED"}
    scene = bpy.context.scene
    scene.frame_set(frame)
    bpy.context.view_layer.update()
    pelvis = bpy.context.object.pose.bones["pelvis"]
    target = bpy.context.object.matrix_world @ pelvis.head + Vector((0.0, 0.0, -0.1))
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    cam.location = target + Vector((1.2, -2.6, 0.5))
    cam.rotation_euler = (target - cam.location).to_track_quat("-Z", "Y").to_euler()
    cam.data.lens = 40
    scene.camera = cam
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.shading.color_type = "MATERIAL"
    scene.display.shading.light = "STUDIO"
    scene.render.resolution_x, scene.render.resolution_y = 480, 640
    out = str(Path(tmp) / "gait2392_walk.png")
    with files.atomic_path(out) as path:
        scene.render.filepath = path
        bpy.ops.render.render(write_still=True)
    img = bpy.data.images.load(out)
    px = np.empty(img.size[0] * img.size[1] * 4, dtype=np.float32)
    img.pixels.foreach_get(px)
    rgb = px.reshape(img.size[1], img.size[0], 4)[..., :3]
    background = rgb[0, 0]
    covered = np.any(np.abs(rgb - background) > 0.05, axis=-1)
    rows, cols = np.nonzero(covered)
    return {"path": out, "covered": float(covered.mean()),
            "box": [int(rows.min()), int(rows.max()), int(cols.min()), int(cols.max())]}


def test_render_walking_gait2392(blender):
    out = blender(scenario_render_walk, gait=GAIT, walk=WALK, frame=90)
    assert os.path.isfile(out["path"])
    top, bottom, left, right = out["box"]
    assert 0.03 < out["covered"] < 0.6, out  # the model fills part of the frame
    assert bottom - top > 2 * (right - left) * 0.6, out  # a standing figure: taller than wide


def scenario_quoted_coordinate_names(tmp, pendulum):
    import bpy

    from scenes import addon_module

    motion_io = addon_module("core.io.motion")
    names = {"q1": 'a"]b', "q2": "c\\\\d[0]"}
    text = Path(pendulum).read_text()
    for old, new in names.items():
        text = text.replace(f'"{old}"', '"' + new.replace('"', "&quot;") + '"')
    model_path = os.path.join(tmp, "quoted.osim")
    Path(model_path).write_text(text)
    motion_path = os.path.join(tmp, "quoted.mot")
    time = np.linspace(0.0, 1.0, 11)
    values = np.column_stack([0.5 * time, -0.25 * time])
    motion_io.write_motion(motion_path, list(names.values()), time, values)
    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.ops.spline_joints.import_osim(filepath=model_path) == {"FINISHED"}
    arm = bpy.context.object
    assert bpy.ops.spline_joints.import_osim_motion(filepath=motion_path) == {"FINISHED"}
    scene = bpy.context.scene
    got = []
    for frame in (scene.frame_start, scene.frame_end):
        scene.frame_set(frame)
        got.append([arm[name] for name in names.values()])
    return {"got": got, "names": sorted(arm.keys())}


def test_coordinates_named_with_quotes_and_brackets_follow_their_motion(blender, tmp_path):
    out = blender(scenario_quoted_coordinate_names, pendulum=PENDULUM)
    assert out["got"][0] == pytest.approx([0.0, 0.0])
    assert out["got"][1] == pytest.approx([0.5, -0.25])
