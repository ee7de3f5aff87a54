"""Mechanism scenery: add_mechanism draws the deforming demo's sheet, bake_dynamics keys its
motion as shape keys (undoable, nothing on cancel, replaced on a re-bake); springs are posed
and stretched at every frame; displays' parts follow their bodies."""

import numpy as np

SHEET = "deforming_surface.sheet"
MODE0 = 'key_blocks["mode 0"].value'


def _vertices(mesh):
    co = np.empty(3 * len(mesh.vertices))
    mesh.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def scenario_deforming_sheet(tmp):
    import bpy

    from scenes import addon_module

    bridge = addon_module("addon.bridge")
    mechanisms = addon_module("addon.mechanism_bake")
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start = 30, 1
    assert bpy.ops.spline_joints.add_mechanism(demo="deforming_surface", duration=0.3) == {"FINISHED"}
    item = scene.spline_joints_mechanisms[0]
    assert [ref.object.name for ref in item.scenery] == [SHEET]
    sheet = item.scenery[0].object
    assert [c.name for c in sheet.users_collection] == ["SJ deforming_surface"]
    assert sheet.data.materials[0].name == "SJ sheet" and sheet.data.shape_keys is None
    mech = addon_module("core.mechanisms").DEMOS["deforming_surface"](duration=0.3, fps=30.0)
    verts0, quads = mech.scenery[0].surface_mesh(0.0)
    static_err = float(np.abs(_vertices(sheet.data) - verts0).max())
    assert len(sheet.data.polygons) == len(quads)

    # Esc before the first frame: the core stops, nothing is sampled or written.
    job = mechanisms.BakeJob(scene, -1)
    job.cancel()
    job.simulate()
    assert job.finish(scene)[0] == {"CANCELLED"} and job.scenery == {}
    assert sheet.data.shape_keys is None and len(bpy.data.actions) == 0

    bpy.ops.ed.undo_push(message="before bake")
    assert bpy.ops.spline_joints.bake_dynamics("EXEC_DEFAULT", True) == {"FINISHED"}
    keys = sheet.data.shape_keys
    names = [kb.name for kb in keys.key_blocks]
    values = bridge.read_fcurve_keys(keys, MODE0, 0)
    # The evaluated sheet is the core's surface at every frame (float32 vertices).
    depsgraph = bpy.context.evaluated_depsgraph_get()
    surface_err = 0.0
    for f in range(1, 11):
        scene.frame_set(f)
        evaluated = _vertices(sheet.evaluated_get(depsgraph).data)
        exact = mech.scenery[0].surface_mesh((f - 1) / 30.0)[0]
        surface_err = max(surface_err, float(np.abs(evaluated - exact).max()))
    moved = float(np.abs(mech.scenery[0].surface_mesh(0.3)[0] - verts0).max())

    bpy.ops.ed.undo()
    sheet = bpy.data.objects[SHEET]
    ball = bpy.data.objects["deforming_surface.ball"]
    undone = sheet.data.shape_keys is None and ball.animation_data is None and len(bpy.data.actions) == 0
    bpy.ops.ed.redo()
    sheet = bpy.data.objects[SHEET]
    redone = len(bridge.read_fcurve_keys(sheet.data.shape_keys, MODE0, 0)) == 10

    # A second bake replaces the keys (and drops the old shape-key action).
    n_actions = len(bpy.data.actions)
    assert bpy.ops.spline_joints.bake_dynamics("EXEC_DEFAULT", True) == {"FINISHED"}
    sheet = bpy.data.objects[SHEET]
    rebaked = ([kb.name for kb in sheet.data.shape_keys.key_blocks],
               len(bridge.read_fcurve_keys(sheet.data.shape_keys, MODE0, 0)), len(bpy.data.actions) - n_actions)
    # The factorization keeps no mode for a still mesh and refuses too many.
    display = addon_module("core.display")
    still = display.shape_key_modes(np.repeat(verts0[None], 4, axis=0))
    try:
        display.shape_key_modes(np.random.default_rng(0).normal(size=(20, 30, 3)), "noise", max_keys=5)
    except ValueError as exc:
        refused = str(exc)
    else:
        refused = ""
    return {"still": [list(a.shape) for a in still], "refused": refused, "static_err": static_err, "names": names, "frames": values[:, 0].tolist(),
            "values": values[:, 1].tolist(), "surface_err": surface_err, "moved": moved,
            "undone": undone, "redone": redone, "rebaked": list(rebaked)}


def test_deforming_sheet_is_drawn_and_baked_as_shape_keys(blender):
    out = blender(scenario_deforming_sheet)
    assert out["static_err"] < 1e-6, out["static_err"]  # added in its shape at t = 0
    assert out["names"] == ["Basis", "mode 0"], out["names"]  # the ripple is one mode
    np.testing.assert_allclose(out["frames"], 1 + np.arange(10), atol=1e-6)
    values = np.array(out["values"])
    assert np.abs(values).max() <= 1.0 + 1e-9 and np.ptp(values) > 0.5, values  # keyed, and moving
    assert out["moved"] > 0.02 and out["surface_err"] < 1e-5, out  # the sheet follows the core
    assert out["undone"], "undo must remove the sheet's shape keys and the ball's keys"
    assert out["redone"]
    assert out["rebaked"] == [["Basis", "mode 0"], 10, 0], out["rebaked"]
    assert out["still"] == [[625, 3], [0, 625, 3], [4, 0]], out["still"]
    assert "'noise' deforms in 19 independent modes" in out["refused"], out["refused"]


def scenario_springs_and_parts(tmp):
    import bpy

    from scenes import addon_module

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start = 60, 1
    assert bpy.ops.spline_joints.add_mechanism(demo="scapulothoracic", duration=0.2) == {"FINISHED"}
    item = scene.spline_joints_mechanisms[0]
    ribs = bpy.data.objects["scapulothoracic.ribs"]
    parts = {"ribs_parent": ribs.parent.name, "no_material": [o.name for o in scene.objects
                                                            if o.type == "MESH" and not o.data.materials]}
    assert bpy.ops.spline_joints.bake_dynamics("EXEC_DEFAULT", True) == {"FINISHED"}
    mech = addon_module("core.mechanisms").DEMOS["scapulothoracic"](duration=0.2, fps=60.0)
    result = addon_module("core.mechanisms").simulate_mechanism(mech)
    display = addon_module("core.display")
    depsgraph = bpy.context.evaluated_depsgraph_get()
    err, lengths = 0.0, []
    for k, spring in enumerate(mech.scenery):
        frames, length = spring.spring_frames(result.poses)
        obj = item.scenery[k].object
        for f in range(1, 13, 3):
            scene.frame_set(f)
            ev = obj.evaluated_get(depsgraph)
            co = np.empty(3 * len(ev.data.vertices))
            ev.data.vertices.foreach_get("co", co)
            M = np.array(ev.matrix_world)
            world = co.reshape(-1, 3) @ M[:3, :3].T + M[:3, 3]
            local = display.helix(*spring.size, length[f - 1])[0]
            exact = local @ frames[f - 1, :3, :3].T + frames[f - 1, :3, 3]
            err = max(err, float(np.abs(world - exact).max()))
        lengths.append(float(np.ptp(length[:13])))
    return {"parts": parts, "err": err, "lengths": lengths}


def test_springs_follow_their_ends_and_parts_their_bodies(blender):
    out = blender(scenario_springs_and_parts)
    assert out["parts"]["ribs_parent"] == "scapulothoracic.thorax", out["parts"]
    assert out["parts"]["no_material"] == [], out["parts"]
    assert out["err"] < 1e-5, out["err"]             # float32 vertices and keys
    assert min(out["lengths"]) > 1e-3, out["lengths"]  # the springs stretch
