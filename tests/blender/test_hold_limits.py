"""Hold Limits: a bone posed or played outside its reach cone, twist limit or coordinate range
is shown at the closest admissible pose; the cone's colour shows the state; a hinge's range
becomes a Blender Limit Rotation constraint."""

import math

import numpy as np

#: the held pose is written as single-precision channels: mathutils converts the rotation in
#: single precision and Blender stores each channel rounded, about five roundings of 2^-24 on
#: angles up to pi; the angles below are read from the stored channels in double
CHANNEL_TOL = 5 * math.pi * 2.0 ** -24
#: a pose read from Blender: products of a few single-precision 4x4 matrices, entries of order 1
POSE_TOL = 16 * 2.0 ** -24

HALF_ANGLE, TWIST = 0.5, 0.3
HALF_X, HALF_Z = 0.6, 0.3
Y = np.array([0.0, 1.0, 0.0])


def _rotation(pb):
    """The bone's basis rotation (3, 3) from its stored channels, in double precision."""
    from scipy.spatial.transform import Rotation

    if pb.rotation_mode == "QUATERNION":
        w, x, y, z = (float(v) for v in pb.rotation_quaternion)
        return Rotation.from_quat([x, y, z, w]).as_matrix()
    assert pb.rotation_mode == "XYZ"
    return Rotation.from_euler("xyz", [float(v) for v in pb.rotation_euler]).as_matrix()


def _angle(a, b):
    return math.atan2(np.linalg.norm(np.cross(a, b)), float(a @ b))


def _twist(R):
    """Twist about Y of R = swing * twist (independent of the add-on: from the quaternion)."""
    from scipy.spatial.transform import Rotation

    x, y, z, w = Rotation.from_matrix(R).as_quat()
    return 2 * math.atan2(y, w) if w >= 0 else 2 * math.atan2(-y, -w)


def _ellipse_gap(R):
    """(swing - boundary swing in the same tilt direction, conditioning of the boundary's asin)
    of the elliptical cone about Y (HALF_X towards X, HALF_Z towards Z)."""
    d = R @ Y
    u, w = np.array([1.0, 0.0, 0.0]), np.cross(Y, [1.0, 0.0, 0.0])
    psi = math.atan2(d @ w, d @ u)
    x = 1 / math.sqrt(math.cos(psi) ** 2 / math.sin(HALF_X / 2) ** 2
                      + math.sin(psi) ** 2 / math.sin(HALF_Z / 2) ** 2)
    return _angle(Y, d) - 2 * math.asin(x), 1 / math.sqrt(1 - x * x)


def _update():
    import bpy

    bpy.context.view_layer.update()   # depsgraph_update_post -> the add-on's handler holds
    bpy.context.view_layer.update()   # evaluates what it wrote


def scenario_hold_while_posing(tmp):
    import bpy

    from scenes import leg_armature

    obj = leg_armature()
    shin = obj.pose.bones["shin"]
    s = shin.spline_joints
    s.cone_half_angle, s.twist_limit = HALF_ANGLE, TWIST
    assert bpy.ops.spline_joints.draw_reach_cone() == {"FINISHED"}
    cone = bpy.data.objects["SJ_ReachCone_Leg_shin"]
    colours = {"drawn": tuple(cone.data.materials[0].diffuse_color)}
    out = {}

    # switch off: a pose outside stays where it was put
    shin.rotation_euler = (1.2, 0.4, -0.3)
    _update()
    assert tuple(shin.rotation_euler) == tuple(np.float32([1.2, 0.4, -0.3]))

    s.hold_limits = True
    _update()
    R = _rotation(shin)
    out["circular"] = (_angle(Y, R @ Y) - HALF_ANGLE, abs(_twist(R)) - TWIST)
    colours["at_limit"] = tuple(cone.data.materials[0].diffuse_color)

    # inside: untouched, bit for bit
    inside = np.float32([0.1, 0.05, -0.1])
    shin.rotation_euler = inside
    _update()
    assert np.array_equal(np.float32(shin.rotation_euler), inside)
    colours["inside"] = tuple(cone.data.materials[0].diffuse_color)

    # twist only: clamped to the twist limit, the bone's direction stays
    shin.rotation_euler = (0.0, 1.0, 0.0)
    _update()
    R = _rotation(shin)
    out["twist"] = (abs(_twist(R)) - TWIST, _angle(Y, R @ Y))

    # elliptical cone, a bone in quaternion mode
    s.cone_shape = "ELLIPTICAL"
    s.cone_half_angle_x, s.cone_half_angle_z = HALF_X, HALF_Z
    s.twist_limit = math.pi
    shin.rotation_mode = "QUATERNION"
    for k, rotvec in enumerate(([0.9, 0.0, 0.5], [0.0, 0.0, -1.4], [1.1, 0.3, 0.0])):
        from scipy.spatial.transform import Rotation

        x, y, z, w = Rotation.from_rotvec(rotvec).as_quat()
        shin.rotation_quaternion = (w, x, y, z)
        _update()
        out[f"elliptical{k}"] = _ellipse_gap(_rotation(shin))

    # switched off: the cone is neutral again and poses stay outside
    s.hold_limits = False
    colours["off"] = tuple(cone.data.materials[0].diffuse_color)
    shin.rotation_quaternion = (0.8, 0.6, 0.0, 0.0)
    _update()
    assert np.array_equal(np.float32(shin.rotation_quaternion), np.float32([0.8, 0.6, 0.0, 0.0]))
    return {"out": out, "colours": colours}


def test_hold_while_posing(blender):
    res = blender(scenario_hold_while_posing)
    out, colours = res["out"], res["colours"]
    swing_gap, twist_gap = out["circular"]
    assert abs(swing_gap) <= CHANNEL_TOL and twist_gap <= CHANNEL_TOL, out
    twist_gap, swing = out["twist"]
    assert abs(twist_gap) <= CHANNEL_TOL and swing <= CHANNEL_TOL, out
    for k in range(3):
        gap, cond = out[f"elliptical{k}"]
        assert abs(gap) <= CHANNEL_TOL * cond, out
    red, green, blue = colours["at_limit"], colours["inside"], colours["off"]
    assert red[0] > 0.8 and red[1] < 0.3, colours
    assert green[1] > 0.6 and green[0] < 0.3, colours
    assert blue == colours["drawn"] and blue[2] > 0.8, colours


def scenario_playback(tmp):
    import bpy

    from scenes import addon_module, leg_armature

    obj = leg_armature()
    shin = obj.pose.bones["shin"]
    s = shin.spline_joints
    s.cone_half_angle, s.twist_limit = HALF_ANGLE, TWIST
    for f, rot in ((1, (0.2, 0.0, 0.0)), (11, (1.4, 0.0, 0.6))):
        shin.rotation_euler = rot
        shin.keyframe_insert("rotation_euler", frame=f)
    bridge = addon_module("addon.bridge")
    keys = [bridge.read_fcurve_keys(obj, 'pose.bones["shin"].rotation_euler', i).tolist()
            for i in range(3)]
    s.hold_limits = True
    scene = bpy.context.scene
    gaps, inside = {}, {}
    for f in (1, 3, 6, 9, 11):
        scene.frame_set(f)   # frame_change_post -> the handler holds the displayed pose
        bpy.context.view_layer.update()
        R = _rotation(shin)
        fc = [bridge.find_fcurve(obj, 'pose.bones["shin"].rotation_euler', i) for i in range(3)]
        from scipy.spatial.transform import Rotation

        keyed = Rotation.from_euler("xyz", [c.evaluate(f) for c in fc]).as_matrix()
        inside[f] = _angle(Y, keyed @ Y) <= HALF_ANGLE
        gaps[f] = (_angle(Y, R @ Y) - HALF_ANGLE, float(np.abs(R - keyed).max()))
    after = [bridge.read_fcurve_keys(obj, 'pose.bones["shin"].rotation_euler', i).tolist()
             for i in range(3)]
    return {"gaps": gaps, "inside": inside, "keys_kept": after == keys}


def test_playback_shows_projected_poses_and_keeps_keys(blender):
    res = blender(scenario_playback)
    assert res["keys_kept"]
    assert res["inside"]["1"] and not res["inside"]["11"]
    for f, (gap, from_keys) in res["gaps"].items():
        if res["inside"][f]:
            assert from_keys <= POSE_TOL and gap < 0, (f, res)  # the keyed pose, as keyed
        else:
            assert abs(gap) <= CHANNEL_TOL, (f, res)      # on the cone's boundary


def _hinge_motion(obj):
    """The shin turns about its own X axis from -0.5 to 1.0 rad over frames 1-31, its head
    fixed: a hinge."""
    import bpy

    shin = obj.pose.bones["shin"]
    for f in range(1, 32, 3):
        shin.rotation_euler = (-0.5 + 1.5 * (f - 1) / 30, 0.0, 0.0)
        shin.keyframe_insert("rotation_euler", frame=f)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 31


def scenario_hinge(tmp):
    import bpy

    from scenes import addon_module, expected_T_parent_child, leg_armature

    obj = leg_armature()
    _hinge_motion(obj)
    shin = obj.pose.bones["shin"]
    s = shin.spline_joints
    messages = []
    try:  # no driven joint: a cone is not an Euler box, nothing is added
        bpy.ops.spline_joints.add_limit_constraints()
    except RuntimeError as exc:
        messages.append(str(exc))
    assert len(shin.constraints) == 0
    s.source, s.rotation_axis_0 = "ROTATION", "0"
    assert bpy.ops.spline_joints.capture_range() == {"FINISHED"}
    assert bpy.ops.spline_joints.fit() == {"FINISHED"}
    obj.animation_data_clear()
    assert bpy.ops.spline_joints.drive_joint() == {"FINISHED"}
    doc = addon_module("core.io").loads(s.joint_json)
    lo, hi = doc.ranges[0]

    # past the range: held at its end (the slider keeps the value it was given)
    s.hold_limits = True
    shin["sj_q0"] = hi + 0.7
    obj.update_tag()
    _update()
    held = np.abs(expected_T_parent_child(obj) - doc.joint.transform(np.array([hi]))).max()
    s.hold_limits = False
    obj.update_tag()
    _update()
    free = np.abs(expected_T_parent_child(obj) - doc.joint.transform(np.array([hi]))).max()

    assert bpy.ops.spline_joints.add_limit_constraints() == {"FINISHED"}
    assert bpy.ops.spline_joints.add_limit_constraints() == {"FINISHED"}  # updates, not adds
    con = shin.constraints["SJ Hinge Limit"]
    # the constraint alone holds the range: drive off, the channels past it
    s.drive = False
    shin.rotation_euler = (1.6, 0.0, 0.0)
    shin.location = (0.0, 0.0, 0.0)
    _update()
    T = expected_T_parent_child(obj)
    from scipy.spatial.transform import Rotation

    rest = addon_module("addon.bridge").read_rest_T_parent_child(shin)
    turned = Rotation.from_matrix(rest[:3, :3].T @ T[:3, :3]).as_rotvec()
    return {"messages": messages, "held": float(held), "free": float(free),
            "limits": [len(shin.constraints), con.owner_space, con.use_limit_x, con.use_limit_y,
                       con.use_limit_z, con.min_x, con.max_x, con.min_y, con.max_y, con.min_z,
                       con.max_z],
            "range": [float(lo), float(hi)], "turned": turned.tolist()}


def test_hinge_range_held_and_given_to_blender(blender):
    from core.bone_limits import HINGE_TOL

    res = blender(scenario_hinge)
    assert len(res["messages"]) == 1 and "box" in res["messages"][0], res["messages"]
    # the held pose is the joint's at the range's end (to Blender's single-precision pose),
    # the free one far past it
    assert res["held"] <= POSE_TOL and res["free"] > 0.05, res
    n, space, ux, uy, uz, min_x, max_x, min_y, max_y, min_z, max_z = res["limits"]
    assert n == 1 and space == "LOCAL" and ux and uy and uz
    lo, hi = res["range"]
    # the fitted hinge turns from lo to hi about X (the capture read the X channel as q), to
    # the hinge check's own tolerance
    assert abs(min_x - lo) <= HINGE_TOL and abs(max_x - hi) <= HINGE_TOL, res
    assert (min_y, max_y, min_z, max_z) == (0.0, 0.0, 0.0, 0.0)
    # Blender's constraint stops the bone at the range's end on its own
    np.testing.assert_allclose(res["turned"], [hi, 0.0, 0.0], atol=HINGE_TOL)
