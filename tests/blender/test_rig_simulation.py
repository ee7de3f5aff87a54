"""Simulating the user's own rigs in Blender: rigs built from scratch, baked, checked against
the core run of the same model, the limits, the keys kept and bad input refused."""

import numpy as np
import pytest

N_TAIL = 10
HALF_ANGLE = 0.35
TWIST = 0.25
FRAMES = (1, 25)
#: LimitSolver's default deadband (of the limit's own value: cos for cones, rad for twist)
ROTARY_TOL = 1e-3


def _tail_rig():
    """Armature 'Tail': a root bone 'hips' keyed to swing about Z, and a connected tail of
    N_TAIL bones on ball joints with a circular reach cone and a twist limit."""
    import bpy

    from scenes import tail_armature

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    scene.render.fps = 24
    obj = tail_armature("Tail", N_TAIL, 0.08, (0.3, 0.0, 1.0),
                        ((1, 0.0), (7, 0.9), (13, 0.0), (19, -0.9), (25, 0.0)))
    for k in range(N_TAIL):
        pb = obj.pose.bones[f"tail.{k:03d}"]
        s = pb.spline_joints_sim
        s.enabled, s.kind, s.use_cone = True, "BALL", True
        s.mass_source, s.mass, s.com, s.inertia = "MANUAL", 0.05, (0.0, 0.04, 0.0), (3e-5, 1e-5, 3e-5)
        s.spring_units, s.damping = "ABSOLUTE", 1e-4
        c = pb.spline_joints
        c.cone_shape, c.cone_half_angle, c.twist_limit = "CIRCULAR", HALF_ANGLE, TWIST
    scene.spline_joints_sim.substeps = 16
    scene.spline_joints_sim.use_ground = False       # the runs without contacts (rk4)
    scene.frame_set(1)
    return obj




def scenario_tail_bake(tmp):
    import bpy

    from scenes import action_fcurves, addon_module

    rig_jobs = addon_module("addon.rig_jobs")
    rig_scene = addon_module("addon.rig_scene")
    core_rig = addon_module("core.rig")
    bridge = addon_module("addon.bridge")
    obj = _tail_rig()
    before = bridge.read_fcurve_keys(obj, 'pose.bones["hips"].rotation_euler', 1).copy()
    old_action = obj.animation_data.action.name

    # The core run of the same model, built here from the known geometry (not the reader).
    job = rig_jobs.RigJob(bpy.context.scene, obj)
    scene = bpy.context.scene
    # Blender's matrices are single precision; the same conversions as the reader's keep the
    # inputs bit-identical, so the runs agree to round-off, not to float32.
    W = rig_scene.normalized(obj.matrix_world)[0]
    times = np.arange(FRAMES[1] - FRAMES[0] + 1) / 24.0
    hips_motion, tail_poses = [], {}
    for f in range(FRAMES[0] - 1, FRAMES[1] + 1):
        scene.frame_set(f)
        if f >= FRAMES[0]:
            hips_motion.append(W @ bridge.rigid(np.array(obj.pose.bones["hips"].matrix)))
        if f <= FRAMES[0] + 1:
            tail_poses[f] = [bridge.read_pose_T_parent_child(obj.pose.bones[f"tail.{k:03d}"])
                             for k in range(N_TAIL)]
    scene.frame_set(1)
    bodies = [core_rig.RigBody("hips", -1, W @ np.array(obj.data.bones["hips"].matrix_local),
                               core_rig.RigJoint("kinematic"), pose=hips_motion[0],
                               motion_times=times, motion=np.array(hips_motion))]
    for k in range(N_TAIL):
        bone = obj.data.bones[f"tail.{k:03d}"]
        rest = bridge.rigid(np.linalg.solve(bridge.matrix_to_array(bone.parent.matrix_local),
                                            bridge.matrix_to_array(bone.matrix_local)))
        s, c = obj.pose.bones[bone.name].spline_joints_sim, obj.pose.bones[bone.name].spline_joints
        # the settings as stored (single precision), so both runs see the same numbers
        joint = core_rig.RigJoint("ball", cone="circular", half_angle=c.cone_half_angle,
                                  twist=c.twist_limit, damping=s.damping)
        bodies.append(core_rig.RigBody(
            bone.name, k, rest, joint, mass=s.mass, com=np.array(s.com),
            inertia=np.diag(np.array(s.inertia)), pose=tail_poses[1][k],
            pose_before=tail_poses[0][k], pose_after=tail_poses[2][k]))
    rig = core_rig.build_rig(bodies, gravity=np.array(scene.gravity), fps=24.0, substeps=16,
                             duration=(FRAMES[1] - FRAMES[0]) / 24.0)
    direct = core_rig.simulate_rig(rig)
    job.simulate()
    via_reader = job.checked_result()
    assert via_reader is not None
    np.testing.assert_allclose(via_reader.world, direct.world, rtol=0, atol=1e-9)

    # Every frame inside the cone and the twist limit within the solver's tolerance: its
    # deadband ROTARY_TOL of the limit's value (cos(swing) - cos(half-angle) for the cone, the
    # angle for the twist), and as much again for the second-order remainder of its position
    # correction, which is linear in the coordinates. The report's worst excess (in angles)
    # is the one measured here from the recorded coordinates.
    expcoords = addon_module("core.expcoords")
    so3 = addon_module("core.lie").so3
    allowed = 2.0 * ROTARY_TOL
    y = np.array([0.0, 1.0, 0.0])
    worst = 0.0
    for k in range(N_TAIL):
        q = direct.q[:, rig.slices[k + 1]]
        spec = rig.bodies[k + 1].joint
        g = expcoords.reach_cone_value(q, y, spec.half_angle)
        assert g.min() >= -allowed, (k, g.min())
        twist = np.abs(expcoords.twist_angle(q, y))
        assert twist.max() <= spec.twist + allowed, (k, twist.max())
        swing = np.arccos(np.clip((so3.exp(q) @ y)[:, 1], -1.0, 1.0))
        worst = max(worst, (swing - spec.half_angle).max(), (twist - spec.twist).max())
    np.testing.assert_allclose(direct.worst_violation, max(worst, 0.0), rtol=1e-12, atol=1e-15)
    assert np.ptp(direct.world[:, -1, :3, 3], axis=0).max() > 0.05   # the tail swings

    # The operator bakes into a new action; the hips keys stay in the old one, on the NLA.
    bpy.ops.ed.undo_push(message="before the bake")
    # the second argument pushes an undo step after the operator, as the UI does
    assert bpy.ops.spline_joints.bake_rig("EXEC_DEFAULT", True) == {"FINISHED"}
    ad = obj.animation_data
    assert ad.action.name != old_action
    assert [s.action.name for t in ad.nla_tracks for s in t.strips] == [old_action]
    after = np.empty(2 * len(before))
    kept = bpy.data.actions[old_action]
    action_fcurves(kept).find('pose.bones["hips"].rotation_euler', index=1).keyframe_points.foreach_get("co", after)
    np.testing.assert_array_equal(after.reshape(-1, 2), before)
    # The baked keys play the simulation back (float32 keys: 1e-5 m).
    for f in (5, 12, 25):
        scene.frame_set(f)
        tip = W @ np.array(obj.pose.bones[f"tail.{N_TAIL - 1:03d}"].matrix)
        np.testing.assert_allclose(tip[:3, 3], direct.world[f - 1, -1, :3, 3], atol=1e-5)
        hips = W @ np.array(obj.pose.bones["hips"].matrix)
        np.testing.assert_allclose(hips, hips_motion[f - 1], atol=1e-6)

    # Undo takes the bake back: the old action active again, no NLA track.
    bpy.ops.ed.undo()
    obj = bpy.data.objects["Tail"]
    assert obj.animation_data.action.name == old_action and not obj.animation_data.nla_tracks
    return {"frames": len(direct.times), "worst": float(direct.worst_violation)}


def scenario_preview(tmp):
    import bpy

    from scenes import addon_module

    previews = addon_module("addon.previews")
    obj = _tail_rig()
    action = obj.animation_data.action.name
    assert bpy.ops.spline_joints.simulate_preview() == {"FINISHED"}
    assert obj.animation_data.action.name == action and not obj.animation_data.nla_tracks
    scene = bpy.context.scene
    tip = obj.pose.bones[f"tail.{N_TAIL - 1:03d}"]
    scene.frame_set(10)
    moved = np.array(tip.matrix_basis)
    assert np.abs(moved - np.eye(4)).max() > 1e-3
    shown = {}
    for f in (3, 10, 25):
        scene.frame_set(f)
        shown[f] = np.array(tip.matrix_basis)
    # A changed setting drops the preview: the tail is back at its (unanimated) rest.
    obj.pose.bones["tail.000"].spline_joints_sim.damping = 0.01
    scene.frame_set(11)
    assert not previews.PREVIEWS
    np.testing.assert_array_equal(np.array(tip.matrix_basis), np.eye(4))
    obj.pose.bones["tail.000"].spline_joints_sim.damping = 1e-4
    # Live: nothing simulated up front; each frame when the playhead reaches it, the same
    # poses as the whole-range preview (the same steps at the same times).
    scene.spline_joints_sim.live = True
    scene.frame_set(1)
    assert bpy.ops.spline_joints.simulate_preview() == {"FINISHED"}
    (live,) = previews.PREVIEWS.values()
    assert live.run is not None and live.run.ready <= 1 + 25
    for f in range(1, 26):
        scene.frame_set(f)
        if f in shown:
            np.testing.assert_array_equal(np.array(tip.matrix_basis), shown[f])
    assert live.run.ready == 25
    return {}


def scenario_bad_input(tmp):
    import bpy

    from scenes import addon_module

    obj = _tail_rig()
    scene = bpy.context.scene

    def refused(fragment):
        try:
            bpy.ops.spline_joints.bake_rig()
        except RuntimeError as err:
            assert fragment in str(err), str(err)
        else:
            raise AssertionError(f"no error containing {fragment!r}")
        assert not obj.animation_data.nla_tracks   # scene unchanged

    pb = obj.pose.bones["tail.004"]
    pb.spline_joints_sim.mass = 0.0
    refused("has no mass")
    pb.spline_joints_sim.mass = 0.05
    pb.spline_joints_sim.use_cone = False
    pb.spline_joints_sim.kind = "SLIDER"          # tail.004 is connected
    refused("is connected to its parent")
    pb.spline_joints_sim.kind = "FITTED"
    refused("has none")
    io, transfer = addon_module("core.io"), addon_module("core.transfer")
    pb.spline_joints.joint_json = io.dumps(transfer.preset_document("KNEE_R"))  # 1 coordinate
    pb.spline_joints.n_coordinates = 2
    refused("has 1 coordinate(s) but the bone is set up for 2")
    pb.spline_joints.joint_json = ""
    pb.spline_joints_sim.kind = "BALL"
    # mass from an open mesh parented to the bone
    pb.spline_joints_sim.mass_source = "AUTO"
    mesh = bpy.data.meshes.new("Open")
    mesh.from_pydata([(0, 0, 0), (0.1, 0, 0), (0, 0.1, 0), (0, 0, 0.1)], [], [(0, 1, 2), (0, 1, 3)])
    open_obj = bpy.data.objects.new("Open", mesh)
    scene.collection.objects.link(open_obj)
    open_obj.parent, open_obj.parent_type, open_obj.parent_bone = obj, "BONE", pb.name
    refused("is not closed")
    bpy.data.objects.remove(open_obj)
    pb.spline_joints_sim.mass_source = "MANUAL"
    pb.spline_joints_sim.use_cone = True
    # a joint parent loop of objects
    a = bpy.data.objects.new("A", None)
    b = bpy.data.objects.new("B", None)
    for o in (a, b):
        scene.collection.objects.link(o)
        o.spline_joints_sim.enabled = True
        o.spline_joints_sim.mass_source = "MANUAL"
    a.spline_joints_sim.parent, b.spline_joints_sim.parent = b, a
    bpy.context.view_layer.objects.active = a
    try:
        bpy.ops.spline_joints.bake_rig()
    except RuntimeError as err:
        assert "form a loop" in str(err), str(err)
    else:
        raise AssertionError("a parent loop was accepted")
    assert a.animation_data is None and b.animation_data is None
    return {}


@pytest.mark.smoke
def test_tail_bake(blender):
    out = blender(scenario_tail_bake)
    assert out["frames"] == FRAMES[1] - FRAMES[0] + 1


def test_preview(blender):
    blender(scenario_preview)


def test_bad_input(blender):
    blender(scenario_bad_input)


def scenario_beads_on_spun_curve(tmp):
    import bpy

    from scenes import addon_module

    rig_jobs = addon_module("addon.rig_jobs")
    rig_scene = addon_module("addon.rig_scene")
    curves = addon_module("addon.curves")
    wire = addon_module("core.wire")
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end, scene.render.fps = 1, 24, 24
    scene.spline_joints_sim.use_ground = False
    bpy.ops.curve.primitive_bezier_circle_add(radius=0.5, location=(0.0, 0.0, 1.0),
                                              rotation=(1.2, 0.0, 0.0))
    curve = bpy.context.active_object
    curve.rotation_mode = "XYZ"
    for f, a in ((1, 0.0), (24, 3.0)):
        curve.rotation_euler = (1.2, 0.0, a)
        curve.keyframe_insert("rotation_euler", frame=f)
    path = wire.WirePath(curves.read_curve(curve))
    beads = []
    for k, q in enumerate((0.3, 1.7)):
        bpy.ops.mesh.primitive_uv_sphere_add(radius=0.03)
        b = bpy.context.active_object
        scene.frame_set(1)
        b.matrix_world = curve.matrix_world @ __import__("mathutils").Matrix(path.frames(np.array([q]))[0].tolist())
        beads.append(b)
    for b in beads:
        b.select_set(True)
    curve.select_set(True)
    bpy.context.view_layer.objects.active = curve
    assert bpy.ops.spline_joints.add_beads() == {"FINISHED"}
    job = rig_jobs.RigJob(scene, None)
    job.simulate()
    result = job.checked_result()
    fit = rig_scene.wire_fit(curve)
    worst_joint, worst_curve = 0.0, 0.0
    for k, b in enumerate(beads):
        i = next(n for n, body in enumerate(job.rig.bodies) if body.name == b.name)
        curve_i = job.rig.mechanism.model.parents[i]
        local = np.linalg.solve(result.world[:, curve_i], result.world[:, i])
        q = result.q[:, job.rig.slices[i]][:, 0]
        on_joint = fit.joint.transforms(q[:, None])[:, :3, 3]
        worst_joint = max(worst_joint, np.abs(local[:, :3, 3] - on_joint).max())
        worst_curve = max(worst_curve, path.closest(local[:, :3, 3])[1].max())
    assert worst_joint < 1e-9, worst_joint
    assert worst_curve <= fit.max_position_error * (1 + 1e-6) + 1e-9, (worst_curve, fit.max_position_error)
    assert np.ptp(result.q[:, job.rig.slices[-1]]) > 0.05     # the beads slide
    assert bpy.ops.spline_joints.bake_rig() == {"FINISHED"}
    scene.frame_set(12)
    world = np.array(beads[0].matrix_world)
    i = next(n for n, body in enumerate(job.rig.bodies) if body.name == beads[0].name)
    np.testing.assert_allclose(world[:3, 3], result.world[11, i, :3, 3], atol=1e-5)
    return {"joint": worst_joint, "curve": worst_curve, "fit": fit.max_position_error}


def test_beads_on_spun_curve(blender):
    out = blender(scenario_beads_on_spun_curve)
    assert out["curve"] <= 1e-6          # the beads stay on the user's curve


def scenario_knee_pendulum(tmp):
    """Capture and fit a knee, then simulate the shin on the fitted joint as a pendulum under
    a still (kinematic) thigh, with the fitted range as end-stops."""
    import bpy

    from scenes import addon_module, leg_armature
    from test_fit_drive import _knee_motion

    rig_jobs = addon_module("addon.rig_jobs")
    rig_scene = addon_module("addon.rig_scene")
    core_rig = addon_module("core.rig")
    bridge = addon_module("addon.bridge")
    io = addon_module("core.io")
    obj = leg_armature()
    _knee_motion(obj)
    shin = obj.pose.bones["shin"]
    s = shin.spline_joints
    s.source, s.rotation_axis_0, s.fit_frames = "ROTATION", "0", 8
    assert bpy.ops.spline_joints.capture_range() == {"FINISHED"}
    assert bpy.ops.spline_joints.fit() == {"FINISHED"}
    obj.animation_data_clear()
    assert bpy.ops.spline_joints.drive_joint() == {"FINISHED"}
    shin["sj_q0"] = 1.2
    obj.update_tag()
    bpy.context.view_layer.update()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end, scene.render.fps = 1, 49, 24
    scene.spline_joints_sim.use_velocities = False
    scene.spline_joints_sim.use_ground = False
    sim = shin.spline_joints_sim
    sim.enabled, sim.kind, sim.use_range, sim.range_min, sim.range_max = True, "FITTED", True, 0.0, 1.6
    sim.spring_units = "ABSOLUTE"
    sim.mass_source, sim.mass, sim.com, sim.inertia = "MANUAL", 3.7, (0.0, 0.19, 0.0), (0.05, 0.005, 0.05)

    doc = io.loads(s.joint_json)
    job = rig_jobs.RigJob(scene, obj)
    job.simulate()
    via_reader = job.checked_result()
    W = rig_scene.normalized(obj.matrix_world)[0]
    bodies = [core_rig.RigBody("thigh", -1, np.eye(4), core_rig.RigJoint("kinematic"),
                               pose=W @ bridge.rigid(np.array(obj.pose.bones["thigh"].matrix))),
              core_rig.RigBody("shin", 0, np.eye(4),
                               core_rig.RigJoint("joint", joint=doc.joint, lower=(sim.range_min,),
                                                 upper=(sim.range_max,)),
                               mass=sim.mass, com=np.array(sim.com),
                               inertia=np.diag(np.array(sim.inertia)), q=(shin["sj_q0"],))]
    direct = core_rig.simulate_rig(core_rig.build_rig(bodies, gravity=np.array(scene.gravity),
                                                      fps=24.0, substeps=16, duration=2.0))
    np.testing.assert_allclose(via_reader.world, direct.world, rtol=0, atol=1e-9)
    q = direct.q[:, 0]
    assert q.min() < 0.3 and q.max() <= 1.2 + 1e-9          # it swings down to the stop
    assert q.min() >= -2.0 * ROTARY_TOL                     # held by the end-stop
    assert bpy.ops.spline_joints.bake_rig() == {"FINISHED"}
    assert not s.drive                                      # the keys play, not the slider
    scene.frame_set(25)
    T = bridge.read_pose_T_parent_child(shin)
    np.testing.assert_allclose(T, doc.joint.transform(np.array([q[24]])), atol=1e-5)
    return {"qmin": float(q.min())}


def test_knee_pendulum(blender):
    blender(scenario_knee_pendulum)


def scenario_object_chain(tmp):
    """Two mesh objects hanging from an empty on hinges (Blender parents), masses from their
    meshes: the bake keeps each hinge on its axis, the mass equals the meshes' closed form."""
    import bpy

    from scenes import addon_module, hanging_links

    rig_jobs = addon_module("addon.rig_jobs")
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end, scene.render.fps = 1, 25, 24
    links = hanging_links(scene)
    links[0].rotation_euler = (0.8, 0.0, 0.0)
    links[1].rotation_euler = (-0.4, 0.0, 0.0)
    bpy.context.view_layer.update()
    scene.spline_joints_sim.use_velocities = False
    scene.spline_joints_sim.use_ground = False
    scene.spline_joints_sim.integrator = "rk4"      # its energy drift is bounded below
    job = rig_jobs.RigJob(scene, None)
    job.simulate()
    result = job.checked_result()
    assert result.energy_drift is not None and result.energy_drift < 1.6e-3   # passive, rk4
    assert bpy.ops.spline_joints.bake_rig() == {"FINISHED"}
    mass = 500.0 * 0.06 * 0.06 * 0.3
    for o in links:
        assert abs(o.spline_joints_sim.shown_mass - mass) <= 1e-6 * mass
    for f in (1, 9, 25):
        scene.frame_set(f)
        W0, W1 = (np.array(o.matrix_world) for o in links)
        rel = np.linalg.solve(W0, W1)
        np.testing.assert_allclose(rel[:3, 3], [0.0, 0.0, -0.3], atol=1e-5)  # on the pin
        np.testing.assert_allclose(rel[:3, 0], [1.0, 0.0, 0.0], atol=1e-5)   # about its axis
        np.testing.assert_allclose(W0[:3, 3], [0.0, 0.0, 1.5], atol=1e-6)
    assert np.ptp(np.degrees(result.q[:, 0])) > 10.0                        # it swings
    return {}


def test_object_chain(blender):
    blender(scenario_object_chain)
