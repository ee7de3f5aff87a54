"""Re-baking a user's rig: the simulation action replaces the previous one (the user's own
actions and NLA tracks stay), Start Moving reads the user's animation and not the earlier
bake, the same settings give the same keys bit for bit, an unticked bone loses its keys, and
undo takes a bake back."""

import numpy as np

N_TAIL = 4
FRAMES = (1, 25)


def _keyed_tail():
    """Armature 'Tail': 'hips' keyed to swing (its action 'TailAction'), a tail of N_TAIL
    simulated ball-jointed bones with Start Moving on, and a user's NLA track 'User layer'
    holding an action of its own."""
    import bpy

    from scenes import tail_armature

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    scene.render.fps = 24
    obj = tail_armature("Tail", N_TAIL, 0.1, (0.0, 0.0, 1.0),
                        ((1, 0.0), (4, 0.8), (13, -0.8), (25, 0.0)))
    obj.animation_data.action.name = "TailAction"
    layer = bpy.data.actions.new("UserLayer")
    track = obj.animation_data.nla_tracks.new()
    track.name = "User layer"
    track.strips.new("UserLayer", 1, layer)
    for k in range(N_TAIL):
        s = obj.pose.bones[f"tail.{k:03d}"].spline_joints_sim
        s.enabled, s.kind = True, "BALL"
        s.mass_source, s.mass, s.com, s.inertia = "MANUAL", 0.05, (0.0, 0.05, 0.0), (4e-5, 1e-5, 4e-5)
        s.spring_units, s.damping = "ABSOLUTE", 1e-3
    scene.spline_joints_sim.use_velocities = True
    scene.spline_joints_sim.use_ground = False
    scene.frame_set(7)             # not the start frame: the bake must not read what it shows
    return obj


def _keys(action):
    """{(data path, index): (N, 2) keys} of an action."""
    from scenes import action_fcurves

    out = {}
    for fc in action_fcurves(action):
        co = np.empty(2 * len(fc.keyframe_points))
        fc.keyframe_points.foreach_get("co", co)
        out[(fc.data_path, fc.array_index)] = co.reshape(-1, 2)
    return out


def _simulation_actions():
    import bpy

    from scenes import addon_module

    bridge = addon_module("addon.bridge")
    return [a.name for a in bpy.data.actions if bridge.simulation_record(a) is not None]


def _tracks(obj):
    return [(t.name, [s.action.name for s in t.strips]) for t in obj.animation_data.nla_tracks]


def scenario_rebakes(tmp):
    import bpy

    from scenes import addon_module

    obj = _keyed_tail()
    scene = bpy.context.scene
    assert bpy.ops.spline_joints.bake_rig() == {"FINISHED"}
    first = _keys(obj.animation_data.action)
    tracks = _tracks(obj)
    assert tracks == [("User layer", ["UserLayer"]), ("TailAction", ["TailAction"])], tracks
    assert _simulation_actions() == ["Tail Simulation"]
    assert scene.frame_current == 7
    tip = np.array(obj.pose.bones[f"tail.{N_TAIL - 1:03d}"].matrix_basis)
    # Start Moving took the tail's velocity from the user's (still) tail: the first key is the
    # rest pose, the second has moved away from it.
    rot = 'pose.bones["tail.000"].rotation_quaternion'
    np.testing.assert_allclose([first[(rot, i)][0, 1] for i in range(4)], [1.0, 0.0, 0.0, 0.0],
                               rtol=0, atol=1e-6)
    assert np.abs(tip - np.eye(4)).max() > 1e-3          # the viewport shows the bake

    for _ in range(5):
        assert bpy.ops.spline_joints.bake_rig() == {"FINISHED"}
        again = _keys(obj.animation_data.action)
        assert again.keys() == first.keys()
        for key in first:
            assert np.array_equal(again[key], first[key]), key
    assert _tracks(obj) == tracks
    assert _simulation_actions() == ["Tail Simulation"]
    assert obj.animation_data.action.name == "Tail Simulation"
    assert "UserLayer" in bpy.data.actions and "TailAction" in bpy.data.actions

    # A cancelled bake reads the rig with the bake off and changes nothing: the same action,
    # keys, tracks and pose on screen.
    rig_jobs = addon_module("addon.rig_jobs")
    batch = rig_jobs.RigBatch([rig_jobs.RigJob(scene, obj)], "Bake", rig_jobs.bake_rigs)
    batch.cancel()
    batch.simulate()
    assert batch.finish(scene)[0] == {"CANCELLED"}
    assert obj.animation_data.action.name == "Tail Simulation" and _tracks(obj) == tracks
    assert all(np.array_equal(_keys(obj.animation_data.action)[k], first[k]) for k in first)
    np.testing.assert_array_equal(
        np.array(obj.pose.bones[f"tail.{N_TAIL - 1:03d}"].matrix_basis), tip)

    # Undo takes a bake back: another damping's keys, then the previous keys again.
    bpy.ops.ed.undo_push(message="before the bake")
    obj.pose.bones["tail.000"].spline_joints_sim.damping = 2e-3
    assert bpy.ops.spline_joints.bake_rig("EXEC_DEFAULT", True) == {"FINISHED"}
    obj = bpy.data.objects["Tail"]
    changed = _keys(obj.animation_data.action)
    assert any(not np.array_equal(changed[k], first[k]) for k in first)
    bpy.ops.ed.undo()
    obj, scene = bpy.data.objects["Tail"], bpy.context.scene
    undone = _keys(obj.animation_data.action)
    assert all(np.array_equal(undone[k], first[k]) for k in first)
    assert _tracks(obj) == tracks and _simulation_actions() == ["Tail Simulation"]

    # An unticked bone loses its keys and goes back to its pose from before the first bake.
    last = obj.pose.bones[f"tail.{N_TAIL - 1:03d}"]
    last.spline_joints_sim.enabled = False
    assert bpy.ops.spline_joints.bake_rig() == {"FINISHED"}
    paths = {path for path, _ in _keys(obj.animation_data.action)}
    assert paths and not any(f'"{last.name}"' in p for p in paths), paths
    assert any('"tail.000"' in p for p in paths)
    for f in (1, 12, 25):
        scene.frame_set(f)
        np.testing.assert_array_equal(np.array(last.matrix_basis), np.eye(4))
    assert _tracks(obj) == tracks and _simulation_actions() == ["Tail Simulation"]
    return {"channels": len(first)}


def test_rebakes_replace_and_repeat(blender):
    out = blender(scenario_rebakes)
    assert out["channels"] == 7 * N_TAIL      # location and quaternion of every tail bone
