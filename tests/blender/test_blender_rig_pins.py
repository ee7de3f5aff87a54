"""Hard pins to a moving object in Blender: a hand grabs a swaying bar at frame 20 and lets go
at frame 50 (Pin keyed on and off, Hard, Pin Target the bar), and the bad inputs (a pin on a
kinematic bone, a Pin Target not in the scene, a Pin Strength of NaN) are refused naming
what is wrong with the scene left as it was; world poses are read in double precision."""

import numpy as np

FRAMES = (1, 70)
GRAB, LET_GO = 20, 50
BONE = 0.3


def _arm():
    """An armature 1 m up with a still root 'hips' and two 0.3 m limp bones on ball joints
    (the arm and the hand), level along -Y at the start, and an empty 'Bar' keyed to sway
    0.1 m along X at 1 Hz about (0, -0.4, 0.8), within the arm's reach."""
    import math

    import bpy

    from scenes import tail_armature

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    scene.render.fps = 24
    scene.spline_joints_sim.use_ground = False
    obj = tail_armature("Arm", 2, BONE, (0.0, 0.0, 1.0), ((1, 0.0),))
    for k in range(2):
        s = obj.pose.bones[f"tail.{k:03d}"].spline_joints_sim
        s.enabled, s.kind = True, "BALL"
        s.mass_source, s.mass, s.com, s.inertia = "MANUAL", 1.0, (0.0, 0.15, 0.0), \
            (7.5e-3, 1e-3, 7.5e-3)
    bar = bpy.data.objects.new("Bar", None)
    scene.collection.objects.link(bar)
    for f in range(FRAMES[0] - 1, FRAMES[1] + 2):
        bar.location = (0.1 * math.sin(2 * math.pi * f / 24), -0.4, 0.8)
        bar.keyframe_insert("location", frame=f)
    scene.frame_set(1)
    return obj, bar


def _grab(obj, bar):
    """The hand's tail hard-pinned to the bar's origin, Pin keyed on at GRAB, off at LET_GO."""
    hand = obj.pose.bones["tail.001"]
    s = hand.spline_joints_sim
    s.pin_at, s.pin_hard, s.pin_target, s.pin_location = "TAIL", True, bar, (0.0, 0.0, 0.0)
    for f, on in ((FRAMES[0], False), (GRAB, True), (LET_GO, False)):
        s.use_pin = on
        obj.keyframe_insert(f'pose.bones["{hand.name}"].spline_joints_sim.use_pin', frame=f)
    return s


def scenario_grab_a_moving_bar(tmp):
    """Until frame GRAB the bake is the unpinned one (to rounding); from the frame after it to LET_GO the
    hand's tail is on the bar (within the pin's deadband and the projection's slack of the
    bar's sampled motion, and within float32 reading of where Blender puts the bar); after
    LET_GO it falls away."""
    import bpy

    from scenes import addon_module

    rig_jobs, limits = addon_module("addon.rig_jobs"), addon_module("core.limits")
    layout = addon_module("core.compiled.layout")
    obj, bar = _arm()
    scene = bpy.context.scene
    free_job = rig_jobs.RigJob(scene, obj)
    free_job.simulate()
    free = free_job.checked_result()
    _grab(obj, bar)
    scene.frame_set(1)
    job = rig_jobs.RigJob(scene, obj)
    job.simulate()
    res = job.checked_result()
    names = [b.name for b in job.rig.bodies]
    hand, target = names.index("tail.001"), names.index("Bar (pin target)")
    length = obj.pose.bones["tail.001"].bone.length         # 0.3 in float32
    tip = res.world[:, hand] @ np.array([0.0, length, 0.0, 1.0])
    on_bar = res.world[:, target, :3, 3]
    gap = np.abs(tip[:, :3] - on_bar).max(axis=1)
    k0 = GRAB - FRAMES[0]
    # to rounding: the pinned rig carries the bar's body and steps in segments
    np.testing.assert_allclose(res.world[:k0 + 1, :hand + 1], free.world[:k0 + 1], rtol=0,
                               atol=1e-12)
    held = limits.PIN_TOLERANCE + layout.POSITION_SLACK
    assert gap[k0 + 1:LET_GO - FRAMES[0] + 1].max() <= held, gap.tolist()
    blender = []
    for f in range(GRAB + 1, LET_GO + 1):
        scene.frame_set(f)
        blender.append(np.array(bar.matrix_world.translation))
    reading = np.abs(np.array(blender) - on_bar[k0 + 1:LET_GO - FRAMES[0] + 1]).max()
    assert reading < 1e-6, reading                        # float32 of a 1 m coordinate
    assert gap[k0] > 0.01 and gap[-1] > 0.05, (gap[k0], gap[-1])
    return {"held": float(gap[k0 + 1:LET_GO - FRAMES[0] + 1].max()), "reading": reading,
            "released": float(gap[-1])}


def scenario_bad_pins(tmp):
    """A pin on a kinematic bone, a Pin Target unlinked from the scene and a Pin Strength
    of NaN: each bake is refused with a message naming the bone (and the target or the
    strength), and nothing is written (the armature's action, no NLA track)."""
    import bpy

    obj, bar = _arm()
    action = obj.animation_data.action.name
    hips = obj.pose.bones["hips"].spline_joints_sim
    hand = obj.pose.bones["tail.001"].spline_joints_sim

    def refused(*words):
        try:
            bpy.ops.spline_joints.bake_rig()
        except RuntimeError as err:
            assert all(w in str(err) for w in words), str(err)
        else:
            raise AssertionError(f"accepted: {words}")
        assert obj.animation_data.action.name == action and not obj.animation_data.nla_tracks
    hips.enabled, hips.kinematic, hips.use_pin = True, True, True
    refused("hips", "kinematic")
    hips.enabled = hips.use_pin = False
    hand.use_pin, hand.pin_target = True, bar
    bpy.context.scene.collection.objects.unlink(bar)
    refused("tail.001", "Bar", "not in the scene")
    hand.pin_target = None
    hand.pin_strength = float("nan")
    assert hand.pin_strength != hand.pin_strength, "Blender kept no NaN"
    refused("tail.001", "strength")
    return {}


def scenario_world_poses_in_double(tmp):
    """An object's world frame read for the simulation (rig_scene.normalized) is rigid to
    double-precision rounding and keeps the matrix's own translation, where mathutils'
    decomposition leaves the rotation ~1e-7 from orthonormal."""
    import math

    import bpy
    from mathutils import Euler

    from scenes import addon_module

    rig_scene = addon_module("addon.rig_scene")
    bpy.ops.wm.read_homefile(use_empty=True)
    obj = bpy.data.objects.new("Far", None)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = (1234.5678, -987.65, 3.21)
    obj.rotation_euler = Euler((0.3, -1.1, 2.9))
    obj.scale = (1.0, 1.0, -1.0)
    bpy.context.view_layer.update()
    T, scale = rig_scene.normalized(obj.matrix_world)
    R = T[:3, :3]
    off = np.abs(R.T @ R - np.eye(3)).max()
    assert off < 1e-14 and abs(np.linalg.det(R) - 1.0) < 1e-14, off
    M = np.array(obj.matrix_world, dtype=float)
    assert np.array_equal(T[:3, 3], M[:3, 3])
    assert np.allclose(scale, -1.0, atol=1e-6)
    assert np.abs(R @ np.diag(scale) - M[:3, :3]).max() < 1e-6
    _, rot, _ = obj.matrix_world.decompose()
    single = np.array(rot.to_matrix())
    return {"double": float(off), "single": float(np.abs(single.T @ single - np.eye(3)).max()),
            "angle": math.degrees(float(np.arccos(np.clip((np.trace(single.T @ R) - 1) / 2,
                                                          -1, 1))))}


def test_a_hand_holds_a_moving_bar_from_the_frame_pinned_until_let_go(blender):
    blender(scenario_grab_a_moving_bar)


def test_bad_pins_are_refused_and_the_scene_is_unchanged(blender):
    blender(scenario_bad_pins)


def test_world_poses_are_read_in_double_precision(blender):
    blender(scenario_world_poses_in_double)
