"""Reach cones: fit from captured samples, draw the mesh on the parent bone, evaluate, render."""

import numpy as np

SHIN_ROTATIONS = [(0.3, 0.0, 0.1), (-0.2, 0.1, 0.25), (0.1, -0.3, -0.3), (0.45, 0.2, 0.0), (0.0, 0.0, 0.0)]


def _capture_swings(obj):
    import bpy

    shin = obj.pose.bones["shin"]
    for rot in SHIN_ROTATIONS:
        shin.rotation_euler = rot
        bpy.context.view_layer.update()
        assert bpy.ops.spline_joints.capture_pose() == {"FINISHED"}


def scenario_fit_and_draw(tmp):
    import bpy
    from mathutils import Euler

    from scenes import addon_module, leg_armature

    obj = leg_armature()
    shin = obj.pose.bones["shin"]
    settings = shin.spline_joints
    settings.cone_margin = 0.0
    _capture_swings(obj)
    assert bpy.ops.spline_joints.fit_reach_cone() == {"FINISHED"}
    # Independent check: bone directions (rest frame) of the samples against the fitted cap.
    d = np.array([np.array(Euler(r, "XYZ").to_matrix())[:, 1] for r in SHIN_ROTATIONS])
    axis = np.array(settings.cone_axis)
    angles = np.degrees(np.arccos(np.clip(d @ axis, -1, 1)))
    assert abs(np.linalg.norm(axis) - 1) < 1e-6
    assert angles.max() <= np.degrees(settings.cone_half_angle) + 1e-3
    assert angles.max() >= np.degrees(settings.cone_half_angle) - 1e-3  # tight: no margin asked
    assert settings.twist_limit > 0

    # Panel status: every sample pose is inside (1 degree of margin: boundary ones clear it).
    cone_status = addon_module("core.bones").cone_status
    cone_options = addon_module("addon.cones").cone_options
    bridge = addon_module("addon.bridge")
    settings.cone_margin = np.radians(1.0)
    assert bpy.ops.spline_joints.fit_reach_cone() == {"FINISHED"}
    inside = []
    rest = bridge.read_rest_T_parent_child(shin)
    for rot in SHIN_ROTATIONS + [(1.4, 0.0, 0.0)]:
        shin.rotation_euler = rot
        bpy.context.view_layer.update()
        s = cone_status(cone_options(settings), rest, bridge.read_pose_T_parent_child(shin))
        # the same pose from the bone's own channels (rest @ matrix_basis, mathutils only)
        from_basis = cone_status(cone_options(settings), rest, rest @ np.array(shin.matrix_basis))
        np.testing.assert_allclose(s.twist, from_basis.twist, atol=1e-6)
        assert s.inside == from_basis.inside
        inside.append(s.inside)
    assert inside == [True] * len(SHIN_ROTATIONS) + [False]

    # Draw twice: created, then updated in place (one object, one mesh).
    for shape in ("CIRCULAR", "ELLIPTICAL"):
        settings.cone_shape = shape
        assert bpy.ops.spline_joints.draw_reach_cone() == {"FINISHED"}
    cones = [o for o in bpy.data.objects if o.name.startswith("SJ_ReachCone")]
    assert len(cones) == 1 and len(bpy.data.meshes) == 1
    cone = cones[0]
    assert cone.parent == obj and cone.parent_type == "BONE" and cone.parent_bone == "thigh"
    # The apex sits on the shin's head whatever the thigh does; the shin's own pose does not move it.
    obj.pose.bones["thigh"].rotation_mode = "XYZ"
    obj.pose.bones["thigh"].rotation_euler = (0.3, -0.2, 0.5)
    shin.rotation_euler = (0.0, 0.0, 0.0)
    shin.location = (0.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    head = obj.matrix_world @ shin.head
    np.testing.assert_allclose(np.array(cone.matrix_world.translation), np.array(head), atol=1e-6)
    # The cone's frame is the shin's rest frame: boundary rays make the elliptic half-angles
    # with the axis towards the bone's X and Z.
    v = np.array([vert.co for vert in cone.data.vertices])[1:-1]
    cone_rot = np.array(cone.matrix_world.to_3x3().normalized())
    shin_rot = np.array((obj.matrix_world @ shin.matrix).to_3x3().normalized())
    np.testing.assert_allclose(cone_rot, shin_rot, atol=1e-6)
    ang = np.arccos(np.clip(v @ axis / np.linalg.norm(v, axis=1), -1, 1))
    assert abs(ang.max() - max(settings.cone_half_angle_x, settings.cone_half_angle_z)) < 0.02
    assert abs(ang.min() - min(settings.cone_half_angle_x, settings.cone_half_angle_z)) < 0.02
    path = f"{tmp}/cone.blend"
    half_angle, cone_name = settings.cone_half_angle, cone.name  # references die on reload
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    s2 = bpy.data.objects["Leg"].pose.bones["shin"].spline_joints
    assert s2.cone_shape == "ELLIPTICAL" and abs(s2.cone_half_angle - half_angle) < 1e-7
    assert bpy.data.objects[cone_name].parent_bone == "thigh"
    return {}


def test_fit_and_draw_reach_cone(blender):
    blender(scenario_fit_and_draw)


def scenario_errors(tmp):
    import bpy

    from scenes import leg_armature

    obj = leg_armature()
    messages = []
    try:
        bpy.ops.spline_joints.fit_reach_cone()
    except RuntimeError as exc:
        messages.append(str(exc))
    shin = obj.pose.bones["shin"]
    for rot in [(0, 0, 0), (2, 0, 0), (-2, 0, 0), (0, 0, 2), (0, 0, -2)]:  # wider than a hemisphere
        shin.rotation_euler = rot
        bpy.context.view_layer.update()
        bpy.ops.spline_joints.capture_pose()
    before = tuple(shin.spline_joints.cone_axis), shin.spline_joints.cone_half_angle
    try:
        bpy.ops.spline_joints.fit_reach_cone()
    except RuntimeError as exc:
        messages.append(str(exc))
    assert (tuple(shin.spline_joints.cone_axis), shin.spline_joints.cone_half_angle) == before
    return {"messages": messages}


def test_fit_errors_change_nothing(blender):
    messages = blender(scenario_errors)["messages"]
    assert len(messages) == 2 and "no samples" in messages[0] and "hemisphere" in messages[1]


def scenario_render(tmp):
    import math

    import bpy

    from scenes import leg_armature

    obj = leg_armature()
    obj.location = (0.0, 0.0, 0.0)
    obj.rotation_euler = (0.0, 0.0, 0.0)
    settings = obj.pose.bones["shin"].spline_joints
    settings.cone_shape = "ELLIPTICAL"
    settings.cone_half_angle_x, settings.cone_half_angle_z = math.radians(50), math.radians(25)
    settings.cone_length = 0.35
    assert bpy.ops.spline_joints.draw_reach_cone() == {"FINISHED"}
    scene = bpy.context.scene
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    cam.location = (1.4, -1.4, 0.9)
    direction = np.array([0.0, 0.0, 0.45]) - np.array(cam.location)
    from mathutils import Vector

    cam.rotation_euler = Vector(direction).to_track_quat("-Z", "Y").to_euler()
    scene.camera = cam
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.shading.light = "STUDIO"
    scene.display.shading.color_type = "MATERIAL"
    scene.render.resolution_x, scene.render.resolution_y = 240, 180
    scene.render.resolution_percentage = 100
    scene.render.filepath = f"{tmp}/reach_cone.png"
    bpy.ops.render.render(write_still=True)
    img = bpy.data.images.load(scene.render.filepath)
    px = np.empty(img.size[0] * img.size[1] * 4, dtype=np.float32)
    img.pixels.foreach_get(px)
    rgb = px.reshape(-1, 4)[:, :3]
    return {"path": scene.render.filepath, "std": float(rgb.std()),
            "blueish": float(np.mean(rgb[:, 2] > rgb[:, 0] + 0.1))}


def test_render_reach_cone_is_not_empty(blender):
    out = blender(scenario_render)
    assert out["std"] > 0.02, out
    assert out["blueish"] > 0.01, out  # the cone's blue covers part of the frame
