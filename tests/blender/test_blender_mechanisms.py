"""Mechanisms: place a core demo in the scene, bake its dynamics to keys, undo, reload."""

import numpy as np
import pytest


def new_scene_with(demo: str, duration: float):
    """An empty scene at 30 fps from frame 1 holding one added mechanism: (scene, item)."""
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start = 30, 1
    assert bpy.ops.spline_joints.add_mechanism(demo=demo, duration=duration) == {"FINISHED"}
    return scene, scene.spline_joints_mechanisms[0]


def scenario_add_and_bake(tmp):
    import bpy

    from scenes import addon_module

    scene, item = new_scene_with("hinge_chain", 0.3)
    bodies = [ref.object for ref in item.bodies]
    assert len(bodies) == 8 and all(o is not None and o.type == "MESH" for o in bodies)
    assert bpy.data.collections.get("SJ hinge_chain") is not None

    bpy.ops.ed.undo_push(message="before bake")
    assert bpy.ops.spline_joints.bake_dynamics("EXEC_DEFAULT", True) == {"FINISHED"}
    item = scene.spline_joints_mechanisms[0]
    assert item.baked_frames == 10 and item.energy_drift < 1e-3
    # The keys reproduce the core's simulation at the scene's frame rate.
    core = addon_module("core.mechanisms")
    result = core.simulate_mechanism(core.DEMOS["hinge_chain"](duration=0.3, fps=30.0))
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


@pytest.mark.smoke
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


def scenario_cancel_bake(tmp):
    import bpy

    from scenes import addon_module, cancelling_at

    mechanisms = addon_module("addon.mechanism_bake")
    scene, item = new_scene_with("hinge_chain", 0.5)
    scene.frame_set(7)
    bodies = [ref.object for ref in item.bodies]
    before = {o.name: np.array(o.matrix_world) for o in bodies}
    n_actions = len(bpy.data.actions)

    EscAtHalf = cancelling_at(mechanisms.BakeJob)  # the modal's Esc at half the frames
    job = EscAtHalf(scene, -1)
    job.simulate()  # what the modal's worker thread runs
    status, level, message = job.finish(scene)
    assert job.result.status == "cancelled" and len(job.result.times) == 0
    assert all(o.animation_data is None for o in bodies), "no partial keyframes"
    assert len(bpy.data.actions) == n_actions
    for o in bodies:
        np.testing.assert_array_equal(np.array(o.matrix_world), before[o.name])
    assert item.baked_frames == 0 and item.bake_seconds == 0.0 and scene.frame_current == 7

    # The same job without Esc bakes every frame.
    full = mechanisms.BakeJob(scene, -1)
    full.simulate()
    done = full.finish(scene)
    return {"status": sorted(status), "level": level, "message": message, "seen": EscAtHalf.seen,
            "done": sorted(done[0]), "frames": item.baked_frames}


def test_cancelled_bake_writes_nothing(blender):
    out = blender(scenario_cancel_bake)
    assert out["status"] == ["CANCELLED"] and out["level"] == "WARNING"
    assert "cancelled at 5" in out["message"] and "no keyframes written" in out["message"], out["message"]
    seen = out["seen"]
    assert 0.5 <= seen[-1] < 1.0 and len(seen) < 16, seen  # stopped right after the Esc
    assert out["done"] == ["FINISHED"] and out["frames"] == 16


def _scene_state(scene):
    """What a failed or refused bake must leave unchanged: objects with their poses and
    animation, actions, collections and the mechanisms' bake fields."""
    import bpy

    return {"objects": {o.name: [list(r) for r in o.matrix_world] for o in scene.objects},
            "animated": sorted(o.name for o in scene.objects if o.animation_data is not None),
            "actions": sorted(a.name for a in bpy.data.actions),
            "collections": sorted(c.name for c in bpy.data.collections),
            "mechanisms": [(m.name, m.baked_frames, m.bake_seconds, m.energy_drift)
                           for m in scene.spline_joints_mechanisms],
            "frame": scene.frame_current}


def _operator_error(op, *args, **kwargs) -> str:
    """The ERROR report of an operator run from Python (Blender raises it as RuntimeError)."""
    try:
        result = op(*args, **kwargs)
    except RuntimeError as exc:
        return str(exc)
    raise AssertionError(f"the operator returned {result} without an error report")


def scenario_bake_failures_leave_the_scene_unchanged(tmp):
    import bpy

    from scenes import addon_module

    mechanisms = addon_module("addon.mechanism_bake")
    scene, item = new_scene_with("spherical_chain", 3.0)
    scene.frame_set(4)
    before = _scene_state(scene)
    messages = {}

    # a diverging simulation: one 1 s step per frame at 1 fps
    scene.render.fps, item.substeps = 1, 1
    messages["diverged"] = _operator_error(bpy.ops.spline_joints.bake_dynamics)
    # the same failure through the modal's path (BakeJob in its worker, then finish)
    job = mechanisms.BakeJob(scene, -1)
    job.simulate()
    try:
        job.finish(scene)
    except ValueError as exc:
        messages["job"] = str(exc)
    # durations and substeps refused before any work: the record size, the step count
    scene.render.fps, item.substeps = 30, 0
    item.duration = 1e6
    messages["duration"] = _operator_error(bpy.ops.spline_joints.bake_dynamics)
    item.duration, item.substeps = 3.0, 10 ** 7
    messages["substeps"] = _operator_error(bpy.ops.spline_joints.bake_dynamics)
    item.substeps = 0
    after = _scene_state(scene)
    # Add Mechanism refuses a duration it could never bake, adding nothing
    messages["add"] = _operator_error(bpy.ops.spline_joints.add_mechanism, demo="hinge_chain",
                                      duration=1e6)
    added = _scene_state(scene)
    return {"messages": messages, "same": before == after, "same_after_add": before == added}


def test_bake_failures_report_a_sentence_and_change_nothing(blender):
    out = blender(scenario_bake_failures_leave_the_scene_unchanged)
    messages = out["messages"]
    for key in ("diverged", "job"):
        assert "no keyframes written" in messages[key] and "diverged at t = " in messages[key], messages
        assert "'link" in messages[key] and "reduce the step" in messages[key], messages
    assert "GiB" in messages["duration"] and "shorten the duration" in messages["duration"], messages
    assert "integration steps" in messages["substeps"] and "fewer substeps" in messages["substeps"], messages
    assert "GiB" in messages["add"], messages
    assert out["same"], "a failed or refused bake changed the scene"
    assert out["same_after_add"], "a refused Add Mechanism changed the scene"


def scenario_drift_warning(tmp):
    from scenes import addon_module

    mechanisms = addon_module("addon.mechanism_bake")
    scene, item = new_scene_with("hinge_chain", 1.0)
    out = {}
    for substeps in (1, 0):  # one rk4 step per frame drifts 2 %; the demo's 10 stay < 1e-5
        item.substeps = substeps
        job = mechanisms.BakeJob(scene, -1)
        job.simulate()
        status, level, message = job.finish(scene)
        out[substeps] = {"status": sorted(status), "level": level, "message": message,
                         "frames": item.baked_frames}
    return out


def test_passive_bake_with_a_too_large_step_reports_a_drift_warning(blender):
    out = blender(scenario_drift_warning)
    coarse, fine = out["1"], out["0"]
    assert coarse["status"] == ["FINISHED"] and coarse["frames"] == 31
    assert coarse["level"] == "WARNING" and "drifted" in coarse["message"], coarse
    assert "more substeps" in coarse["message"], coarse
    assert fine["level"] == "INFO" and "warning" not in fine["message"], fine


def scenario_live_mechanism(tmp):
    """Live preview: frames simulated as the playhead reaches them, equal to the core's
    simulation; Clear Preview puts the bodies back and stops it."""
    import bpy

    from scenes import addon_module

    scene, item = new_scene_with("hinge_chain", 0.3)
    bodies = [ref.object for ref in item.bodies]
    before = [np.array(o.matrix_world) for o in bodies]
    core = addon_module("core.mechanisms")
    result = core.simulate_mechanism(core.DEMOS["hinge_chain"](duration=0.3, fps=30.0))
    assert bpy.ops.spline_joints.live_mechanism() == {"FINISHED"}
    live = addon_module("addon.previews").LIVE_MECHANISMS
    (run,) = (entry.run for entry in live.values())
    assert run.ready < run.n_frames or run.n_frames <= 10
    for f in range(1, 11):
        scene.frame_set(f)
        np.testing.assert_allclose(np.array(bodies[-1].matrix_world), result.poses[f - 1, -1],
                                   atol=1e-6)      # single-precision matrices
    assert bpy.ops.spline_joints.clear_preview() == {"FINISHED"}
    assert not live
    for o, M in zip(bodies, before):
        np.testing.assert_allclose(np.array(o.matrix_world), M, atol=1e-6)
    assert not any(o.animation_data for o in bodies)   # nothing keyed
    return {}


def test_live_mechanism(blender):
    blender(scenario_live_mechanism)
