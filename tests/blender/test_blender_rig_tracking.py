"""Directing a rig's simulation in Blender: a keyed Kinematic switch starts the simulation
with the animation's velocities, Kinematic keyed on again lands the bones back on their
animation, a keyed Pin acts on the frames it is on, a free root following its keyed world
motion (Follow: Global) stays on it, and a Strength of NaN is refused with the scene left as
it was."""

import numpy as np

FRAMES = (1, 25)
N_TAIL = 4
SWITCH = 10


def _walk():
    """The tail rig (hips swinging about Z) with four 8 cm tail bones on ball joints, each
    keyed to wave about X at every frame (the "walk"), and simulated."""
    import math

    import bpy

    from scenes import tail_armature

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    scene.render.fps = 24
    obj = tail_armature("Walk", N_TAIL, 0.08, (0.0, 0.0, 1.0),
                        ((1, 0.0), (7, 0.6), (13, 0.0), (19, -0.6), (25, 0.0)))
    for k in range(N_TAIL):
        pb = obj.pose.bones[f"tail.{k:03d}"]
        pb.rotation_mode = "XYZ"
        for f in range(FRAMES[0] - 1, FRAMES[1] + 2):
            pb.rotation_euler = (0.4 * math.sin(2 * math.pi * (f - k) / 24), 0.0, 0.0)
            pb.keyframe_insert("rotation_euler", frame=f)
        s = pb.spline_joints_sim
        s.enabled, s.kind = True, "BALL"
        s.mass_source, s.mass, s.com, s.inertia = "MANUAL", 0.05, (0.0, 0.04, 0.0), (3e-5, 1e-5, 3e-5)
    scene.spline_joints_sim.use_ground = False
    scene.frame_set(1)
    return obj


def scenario_kinematic_switch(tmp):
    """Every tail bone keyed Kinematic on at frame 1 and off at frame SWITCH: until then the
    bake is the animation (to float32 reading), from then on the simulation, starting with
    the centred difference of the animated coordinates of frames SWITCH - 1 and + 1."""
    import bpy

    from scenes import addon_module

    rig_jobs, core_rig = addon_module("addon.rig_jobs"), addon_module("core.rig")
    obj = _walk()
    for k in range(N_TAIL):
        s = obj.pose.bones[f"tail.{k:03d}"].spline_joints_sim
        for frame, on in ((1, True), (SWITCH, False)):
            s.kinematic = on
            obj.keyframe_insert(f'pose.bones["tail.{k:03d}"].spline_joints_sim.kinematic',
                                frame=frame)
    scene = bpy.context.scene
    scene.frame_set(1)
    assert obj.pose.bones["tail.000"].spline_joints_sim.kinematic      # animated at frame 1
    job = rig_jobs.RigJob(scene, obj)
    rig = job.rig
    job.simulate()
    res = job.checked_result()
    assert res is not None
    i0 = SWITCH - FRAMES[0]
    worst_before, worst_start = 0.0, 0.0
    for k in range(N_TAIL):
        i = [b.name for b in rig.bodies].index(f"tail.{k:03d}")
        body, s = rig.bodies[i], rig.slices[i]
        assert body.simulate_from == i0 / 24.0
        joint = rig.mechanism.model.joints[i]

        def coords(f):
            return core_rig.coordinates_from_pose(joint, "ball", body.T_rest, body.motion[f])[0]
        animated = np.array([coords(f) for f in range(i0 + 1)])
        worst_before = max(worst_before, np.abs(res.q[:i0 + 1, s] - animated).max())
        centred = (coords(i0 + 1) - coords(i0 - 1)) * 24.0 / 2
        worst_start = max(worst_start, np.abs(res.v[i0, s] - centred).max())
        assert np.abs(res.q[-1, s] - coords(FRAMES[1] - FRAMES[0])).max() > 1e-3  # simulated
    assert worst_before < 1e-9 and worst_start < 1e-6, (worst_before, worst_start)
    return {"before": worst_before, "start": worst_start}


def scenario_kinematic_back_on(tmp):
    """The tail keyed Kinematic on at frame 1, off at SWITCH and on again at BACK: the rig
    reads the return (kinematic_from), the bake lands on the animation RETURN_TIME after
    BACK and follows it to the end; a Kinematic keyed off a third time is refused naming its
    frame, nothing written."""
    import bpy

    from scenes import addon_module

    addon_module("core.backend").use("numpy")  # no kernel compile in this fresh user folder
    rig_jobs, core_rig = addon_module("addon.rig_jobs"), addon_module("core.rig")
    obj = _walk()
    back = SWITCH + 6
    for k in range(N_TAIL):
        s = obj.pose.bones[f"tail.{k:03d}"].spline_joints_sim
        for frame, on in ((1, True), (SWITCH, False), (back, True)):
            s.kinematic = on
            obj.keyframe_insert(f'pose.bones["tail.{k:03d}"].spline_joints_sim.kinematic',
                                frame=frame)
    scene = bpy.context.scene
    job = rig_jobs.RigJob(scene, obj)
    rig = job.rig
    job.simulate()
    res = job.checked_result()
    landed = back - FRAMES[0] + int(round(core_rig.RETURN_TIME * 24.0))
    worst = 0.0
    for k in range(N_TAIL):
        i = [b.name for b in rig.bodies].index(f"tail.{k:03d}")
        body, s = rig.bodies[i], rig.slices[i]
        assert body.kinematic_from == (back - FRAMES[0]) / 24.0
        joint = rig.mechanism.model.joints[i]
        for f in range(landed, FRAMES[1] - FRAMES[0] + 1):
            T = body.T_rest @ joint.transform(res.q[f, s])
            worst = max(worst, np.abs(T - body.motion[f]).max())
    assert worst < 1e-6, worst
    s = obj.pose.bones["tail.000"].spline_joints_sim
    s.kinematic = False
    obj.keyframe_insert('pose.bones["tail.000"].spline_joints_sim.kinematic', frame=back + 4)
    try:
        bpy.ops.spline_joints.bake_rig()
    except RuntimeError as err:
        assert f"keyed off again at frame {back + 4}" in str(err), str(err)
    else:
        raise AssertionError("a second departure from the animation was accepted")
    assert not obj.animation_data.nla_tracks
    return {"worst": worst}


def scenario_pin_keyed(tmp):
    """The last tail bone's tail pinned where it is at the start, Pin keyed on at frame 5 and
    off at frame 15, over a limp tail (Strength 0): before frame 5 the bake is the unpinned
    one; from 5 the pin pulls the tail's end to it; after 15 it drops away again. The core's
    PIN_FREQUENCY of 5 Hz is written out here as the panel's Pin Strength describes it."""
    import bpy

    from scenes import addon_module

    rig_jobs = addon_module("addon.rig_jobs")
    obj = _walk()
    scene = bpy.context.scene
    free_job = rig_jobs.RigJob(scene, obj)
    free_job.simulate()
    free = free_job.checked_result()
    last = obj.pose.bones[f"tail.{N_TAIL - 1:03d}"]
    s = last.spline_joints_sim
    s.pin_at, s.pin_strength = "TAIL", 1.0
    s.pin_location = (obj.matrix_world @ last.tail)
    for f, on in ((1, False), (5, True), (15, False)):
        s.use_pin = on
        obj.keyframe_insert(f'pose.bones["{last.name}"].spline_joints_sim.use_pin', frame=f)
    scene.frame_set(1)
    job = rig_jobs.RigJob(scene, obj)
    job.simulate()
    pinned = job.checked_result()
    i = [b.name for b in job.rig.bodies].index(last.name)
    end = np.array([0.0, 0.08, 0.0, 1.0])
    target = np.array(s.pin_location)

    def gap(res, frame):
        return float(np.linalg.norm((res.world[frame - 1, i] @ end)[:3] - target))
    np.testing.assert_array_equal(pinned.world[:5], free.world[:5])
    # the pin's spring (k = m w^2 on the pinned bone's mass m) carries at most the whole
    # tail's weight, 4 m g: it sags by less than 4 g / w^2 (40 mm), the free tail hangs far
    w = 2.0 * np.pi * 5.0
    assert gap(pinned, 14) < 4 * 9.81 / w ** 2 < 0.1 < gap(free, 14), \
        (gap(pinned, 14), gap(free, 14))
    assert gap(pinned, 25) > 2 * gap(pinned, 14)
    return {"pinned": gap(pinned, 14), "free": gap(free, 14)}


def scenario_global_root(tmp):
    """The hips simulated on a free joint (nothing ties them to the world) and keyed to walk:
    1.2 m/s along Y with a bob and a sway; the tail on ball joints waving as in
    :func:`_walk`; every bone Strength 1, Follow Global, gravity on. The bake's hips stay
    within 1 mm of where Blender puts the keyed hips at every frame (head and tail); with
    Follow Local on the tail and Strength 0 on the hips the rig falls away."""
    import math

    import bpy

    from scenes import addon_module

    rig_jobs = addon_module("addon.rig_jobs")
    obj = _walk()
    scene = bpy.context.scene
    hips = obj.pose.bones["hips"]
    hips.rotation_mode = "XYZ"
    for f in range(FRAMES[0] - 1, FRAMES[1] + 2):
        t = (f - 1) / 24.0
        # the hips bone points up Z: its local Y is the world's Z, its local Z the world's -Y
        hips.location = (0.02 * math.sin(2 * math.pi * t), 0.03 * math.sin(4 * math.pi * t),
                         -1.2 * t)
        hips.rotation_euler = (0.1 * math.sin(2 * math.pi * t), 0.15 * math.sin(2 * math.pi * t),
                               0.05 * math.sin(4 * math.pi * t))
        hips.keyframe_insert("location", frame=f)
        hips.keyframe_insert("rotation_euler", frame=f)
    s = hips.spline_joints_sim
    s.enabled, s.kind = True, "FREE"
    s.mass_source, s.mass, s.com, s.inertia = "MANUAL", 1.0, (0.0, 0.1, 0.0), (4e-3, 1e-3, 4e-3)
    for pb in obj.pose.bones:
        pb.spline_joints_sim.strength = 1.0
        pb.spline_joints_sim.follow = "GLOBAL"
    animated = []
    for f in range(FRAMES[0], FRAMES[1] + 1):
        scene.frame_set(f)
        M = np.array(obj.matrix_world @ hips.matrix)
        animated.append([(M @ p)[:3] for p in ((0, 0, 0, 1), (0, hips.length, 0, 1))])
    animated = np.array(animated)
    scene.frame_set(1)

    def hips_ends(job):
        job.simulate()
        res = job.checked_result()
        i = [b.name for b in job.rig.bodies].index("hips")
        ends = np.array([[0.0, 0.0, 0.0, 1.0], [0.0, hips.length, 0.0, 1.0]])
        return np.einsum("fab,eb->fea", res.world[:, i], ends)[:, :, :3], job.rig

    ends, rig = hips_ends(rig_jobs.RigJob(scene, obj))
    assert rig.mechanism.tracking.world is not None
    err = float(np.linalg.norm(ends - animated, axis=-1).max())
    assert err < 1e-3, f"the hips stray {1000 * err:.3g} mm from their keys"
    for pb in obj.pose.bones:
        pb.spline_joints_sim.follow = "LOCAL"
    s.strength = 0.0
    fallen, _ = hips_ends(rig_jobs.RigJob(scene, obj))
    drop = float(animated[-1, 0, 2] - fallen[-1, 0, 2])
    assert drop > 0.5, drop
    return {"error": err, "drop": drop}


def scenario_nan_strength(tmp):
    """A Strength of NaN on a bone: the bake is refused naming the bone and its Strength,
    and nothing is written."""
    import bpy

    obj = _walk()
    action = obj.animation_data.action.name
    obj.pose.bones["tail.002"].spline_joints_sim.strength = float("nan")
    try:
        bpy.ops.spline_joints.bake_rig()
    except RuntimeError as err:
        assert "tail.002" in str(err) and "Strength" in str(err), str(err)
    else:
        raise AssertionError("a NaN strength was accepted")
    assert obj.animation_data.action.name == action and not obj.animation_data.nla_tracks
    return {}


def test_a_keyed_walk_switching_to_simulated_starts_with_its_velocities(blender):
    blender(scenario_kinematic_switch)


def test_kinematic_keyed_back_on_lands_on_the_animation(blender):
    blender(scenario_kinematic_back_on)


def test_a_keyed_pin_acts_on_its_frames(blender):
    blender(scenario_pin_keyed)


def test_a_free_root_following_its_keys_in_the_world_stays_on_them(blender):
    blender(scenario_global_root)


def test_a_nan_strength_is_refused_and_the_scene_is_unchanged(blender):
    blender(scenario_nan_strength)
