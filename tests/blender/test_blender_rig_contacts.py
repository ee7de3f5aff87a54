"""Rigs landing on the ground in Blender: a chain hanging from a still (kinematic) root
bone swings down onto the scene's ground plane; the bake equals the core run of the same
model with the same shapes and plane, no bone goes below the ground, the report gives the
worst penetration; a shape that cannot be made is refused with the scene unchanged."""

import numpy as np

N_LINKS, LINK, HEIGHT = 3, 0.2, 0.35
GROUND = 0.05
FRAMES = (1, 37)
#: the deepest a capsule may go below the ground at any frame (m); the contact solver
#: keeps a resting contact within its slop (0.5 mm)
DEPTH = 1e-3


def _chain():
    """Armature 'Chain': a still root 'hips' (one key) HEIGHT above GROUND and N_LINKS bones
    of LINK on ball joints laid out horizontally from its head, with automatic (capsule)
    collision shapes; the ground on at GROUND."""
    import bpy

    from scenes import tail_armature

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    scene.render.fps = 24
    obj = tail_armature("Chain", N_LINKS, LINK, (0.0, 0.0, GROUND + HEIGHT), ((1, 0.0),))
    for k in range(N_LINKS):
        s = obj.pose.bones[f"tail.{k:03d}"].spline_joints_sim
        s.enabled, s.kind, s.spring_units = True, "BALL", "ABSOLUTE"
        s.mass_source, s.mass, s.com, s.inertia = "MANUAL", 0.3, (0.0, 0.1, 0.0), (1e-3, 6e-5, 1e-3)
    st = scene.spline_joints_sim
    st.substeps, st.use_velocities = 8, False
    st.use_ground, st.ground_height, st.ground_friction = True, GROUND, 0.8
    scene.frame_set(1)
    return obj


def _depth(world, lengths, radii, ground):
    """``(F,)`` the deepest any link's capsule reaches below ``ground`` (m) for the world
    poses ``world (F, N_LINKS, 4, 4)`` (bone frames: Y along the bone)."""
    heads = world[:, :, 2, 3]
    tails = heads + lengths[None] * world[:, :, 2, 1]
    return np.maximum(ground - (np.minimum(heads, tails) - radii[None]), 0.0).max(axis=1)


def scenario_chain_lands(tmp):
    import bpy

    from scenes import addon_module

    rig_jobs = addon_module("addon.rig_jobs")
    rig_scene = addon_module("addon.rig_scene")
    core_rig = addon_module("core.rig")
    contacts = addon_module("core.contacts")
    bridge = addon_module("addon.bridge")
    obj = _chain()
    scene = bpy.context.scene
    st = scene.spline_joints_sim
    job = rig_jobs.RigJob(scene, obj)

    # The core run of the same model from the known geometry, with the settings as stored
    # (single precision) so both runs see the same numbers.
    W = rig_scene.normalized(obj.matrix_world)[0]
    n = FRAMES[1] - FRAMES[0] + 1
    times = np.arange(n) / 24.0
    hips = W @ bridge.rigid(np.array(obj.pose.bones["hips"].matrix))
    bodies = [core_rig.RigBody("hips", -1, W @ np.array(obj.data.bones["hips"].matrix_local),
                               core_rig.RigJoint("kinematic"), pose=hips, motion_times=times,
                               motion=np.repeat(hips[None], n, axis=0))]
    lengths, radii = [], []
    for k in range(N_LINKS):
        bone = obj.data.bones[f"tail.{k:03d}"]
        rest = bridge.rigid(np.linalg.solve(np.array(bone.parent.matrix_local),
                                            np.array(bone.matrix_local)))
        s = obj.pose.bones[bone.name].spline_joints_sim
        lengths.append(bone.length)
        radii.append(0.1 * bone.length)
        shape = contacts.Capsule(0.1 * bone.length, (0.0, 0.0, 0.0), (0.0, bone.length, 0.0))
        bodies.append(core_rig.RigBody(
            bone.name, k, rest, core_rig.RigJoint("ball"), mass=s.mass, com=np.array(s.com),
            inertia=np.diag(np.array(s.inertia)),
            pose=bridge.read_pose_T_parent_child(obj.pose.bones[bone.name]), shapes=(shape,)))
    ground = contacts.Plane(st.ground_height, friction=st.ground_friction,
                            restitution=st.ground_restitution)
    rig = core_rig.build_rig(bodies, gravity=np.array(scene.gravity), fps=24.0, substeps=8,
                             duration=(FRAMES[1] - FRAMES[0]) / 24.0, colliders=(ground,))
    direct = core_rig.simulate_rig(rig)
    job.simulate()
    via_reader = job.checked_result()
    assert via_reader is not None
    np.testing.assert_allclose(via_reader.world, direct.world, rtol=0, atol=1e-9)

    lengths, radii = np.array(lengths), np.array(radii)
    depth = _depth(direct.world[:, 1:], lengths, radii, st.ground_height)
    assert depth.max() <= DEPTH, depth.max()
    assert direct.worst_penetration <= DEPTH
    assert direct.contacts[-1] >= 1                      # it lies on the ground at the end
    text = job.report(via_reader)
    assert f"worst penetration {1000 * via_reader.worst_penetration:.3g} mm" in text, text
    # the contacts step with the scene's integrator
    assert job.rig.mechanism.integrator == st.integrator == "implicit"

    # The bake: its keys play the simulation back (float32 keys: 1e-5 m) above the ground.
    assert bpy.ops.spline_joints.bake_rig() == {"FINISHED"}
    for f in (1, 12, 25, 37):
        scene.frame_set(f)
        world = np.array([W @ np.array(obj.pose.bones[f"tail.{k:03d}"].matrix)
                          for k in range(N_LINKS)])
        np.testing.assert_allclose(world[:, :3, 3], direct.world[f - 1, 1:, :3, 3], atol=1e-5)
        assert _depth(world[None], lengths, radii, st.ground_height)[0] <= DEPTH + 1e-5
    return {"worst_mm": 1000 * via_reader.worst_penetration,
            "contacts": int(direct.contacts.max())}


def scenario_bad_shape(tmp):
    """A simulated object whose bounds are a line (a one-edge mesh) with a capsule shape
    gets a zero radius: refused, naming it, nothing written."""
    import bpy

    _chain()
    scene = bpy.context.scene
    mesh = bpy.data.meshes.new("Rod")
    mesh.from_pydata([(0.0, 0.0, 0.0), (0.3, 0.0, 0.0)], [(0, 1)], [])
    rod = bpy.data.objects.new("Rod", mesh)
    scene.collection.objects.link(rod)
    rod.location = (0.0, 0.0, 1.0)
    s = rod.spline_joints_sim
    s.enabled, s.kind, s.mass_source, s.collision = True, "FREE", "MANUAL", "CAPSULE"
    s.spring_units = "ABSOLUTE"
    bpy.context.view_layer.objects.active = rod
    bpy.context.view_layer.update()
    try:
        bpy.ops.spline_joints.bake_rig()
    except RuntimeError as err:
        assert "'Rod'" in str(err) and "radius > 0" in str(err), str(err)
    else:
        raise AssertionError("a zero-radius capsule was accepted")
    assert rod.animation_data is None
    assert bpy.data.objects["Chain"].animation_data.nla_tracks.__len__() == 0
    return {}


def test_chain_lands_on_the_ground(blender):
    out = blender(scenario_chain_lands)
    assert out["worst_mm"] <= 1000 * DEPTH and out["contacts"] >= 1


def test_zero_radius_capsule_is_refused(blender):
    blender(scenario_bad_shape)
