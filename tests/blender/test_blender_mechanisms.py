"""Mechanisms: place a core demo in the scene, bake its dynamics to keys, undo, reload."""

import numpy as np


def scenario_add_and_bake(tmp):
    import bpy

    from scenes import addon_module

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start = 30, 1
    assert bpy.ops.spline_joints.add_mechanism(demo="hinge_chain", duration=0.3) == {"FINISHED"}
    item = scene.spline_joints_mechanisms[0]
    bodies = [ref.object for ref in item.bodies]
    assert len(bodies) == 8 and all(o is not None and o.type == "MESH" for o in bodies)
    assert bpy.data.collections.get("SJ hinge_chain") is not None

    bpy.ops.ed.undo_push(message="before bake")
    assert bpy.ops.spline_joints.bake_dynamics("EXEC_DEFAULT", True) == {"FINISHED"}
    item = scene.spline_joints_mechanisms[0]
    assert item.baked_frames == 10 and item.energy_drift < 1e-3
    # The keys reproduce the core's simulation at the scene's frame rate.
    core = addon_module("core.mechanisms")
    result = core.simulate(core.DEMOS["hinge_chain"](duration=0.3, fps=30.0))
    bridge = addon_module("addon.bridge")
    last = bodies[-1]
    keys = bridge.read_fcurve_keys(last, "location", 0)
    assert keys.shape == (10, 2)
    np.testing.assert_allclose(keys[:, 0], 1 + np.arange(10), atol=1e-4)
    for f in (1, 5, 10):
        scene.frame_set(f)
        np.testing.assert_allclose(np.array(last.matrix_world), result.poses[f - 1, -1], atol=1e-4)
    name = last.name  # Python references die on undo
    bpy.ops.ed.undo()
    last = bpy.data.objects[name]
    undone = last.animation_data is None or last.animation_data.action is None
    bpy.ops.ed.redo()
    path = f"{tmp}/chain.blend"
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    item = bpy.context.scene.spline_joints_mechanisms[0]
    return {"undone": undone, "frames_after_reload": item.baked_frames,
            "objects": [ref.object.name for ref in item.bodies]}


def test_add_and_bake_mechanism(blender):
    out = blender(scenario_add_and_bake)
    assert out["undone"], "undo must remove the bake"
    assert out["frames_after_reload"] == 10 and len(out["objects"]) == 8


def scenario_bake_errors(tmp):
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.ops.spline_joints.add_mechanism(demo="hinge_chain", duration=0.1) == {"FINISHED"}
    item = bpy.context.scene.spline_joints_mechanisms[0]
    bpy.data.objects.remove(item.bodies[3].object)
    try:
        bpy.ops.spline_joints.bake_dynamics()
    except RuntimeError as exc:
        message = str(exc)
    else:
        message = ""
    assert all(ref.object is None or ref.object.animation_data is None for ref in item.bodies)
    return {"message": message}


def test_bake_error_writes_nothing(blender):
    assert "lost the objects of bodies [3]" in blender(scenario_bake_errors)["message"]
