"""Fit, draw-path and capture operators on a bone that lost its parent report a sentence and
leave the scene as it was; a fit with more control frames than the samples determine is
stored with its warning and held-out error, which the Fit panel shows."""


def _keyed_knee(obj, frames=(1, 21)):
    import bpy

    shin = obj.pose.bones["shin"]
    for f, a in zip(frames, (0.0, 1.4)):
        shin.rotation_euler = (a, 0.1 * a, 0.0)
        shin.location = (0.0, 0.02 * a, 0.01 * a * a)
        shin.keyframe_insert("rotation_euler", frame=f)
        shin.keyframe_insert("location", frame=f)
    s = shin.spline_joints
    s.source, s.rotation_axis_0 = "ROTATION", "0"
    bpy.context.scene.frame_set(1)
    return shin


def _scene_state(obj):
    import bpy

    s = obj.pose.bones["shin"].spline_joints
    return {"objects": sorted(o.name for o in bpy.data.objects),
            "curves": len(bpy.data.curves), "json": s.joint_json, "status": s.fit_status,
            "samples": len(s.samples), "frame": bpy.context.scene.frame_current}


def _unparent(obj):
    import bpy

    bpy.ops.object.mode_set(mode="EDIT")
    obj.data.edit_bones["shin"].parent = None
    bpy.ops.object.mode_set(mode="POSE")
    obj.data.bones.active = obj.data.bones["shin"]
    bpy.context.view_layer.update()


def _error(op, **kwargs):
    try:
        result = op(**kwargs)
    except RuntimeError as exc:
        return str(exc)
    return f"no error: {sorted(result)}"


def scenario_operators_on_a_bone_without_parent(tmp):
    import bpy

    from scenes import leg_armature

    obj = leg_armature()
    _keyed_knee(obj)
    assert bpy.ops.spline_joints.capture_range(frame_start=1, frame_end=21) == {"FINISHED"}
    assert bpy.ops.spline_joints.fit(draw_path=False) == {"FINISHED"}
    _unparent(obj)
    bpy.context.scene.frame_set(7)
    before = _scene_state(obj)
    ops = bpy.ops.spline_joints
    messages = {
        "fit": _error(ops.fit),
        "draw": _error(ops.draw_joint_path),
        "capture_pose": _error(ops.capture_pose),
        "capture_range": _error(ops.capture_range, frame_start=1, frame_end=21),
    }
    after = _scene_state(obj)
    # without drawing, a fit needs only the stored samples
    refit = sorted(ops.fit(draw_path=False))
    return {"messages": messages, "before": before, "after": after, "refit": refit,
            "stray": [o.name for o in bpy.data.objects if o.name.startswith("SJ_")]}


def test_operators_on_a_bone_without_parent_change_nothing(blender):
    out = blender(scenario_operators_on_a_bone_without_parent)
    assert out["after"] == out["before"]
    assert out["stray"] == []
    for name, text in out["messages"].items():
        assert "no parent" in text, (name, text)
        assert "Traceback" not in text and "AttributeError" not in text, (name, text)
    assert "Ctrl+P" in out["messages"]["fit"] and "Draw Path off" in out["messages"]["fit"]
    assert out["refit"] == ["FINISHED"]


def scenario_underdetermined_fit_is_flagged(tmp):
    import bpy

    from scenes import addon_module, leg_armature

    io = addon_module("core.io")
    obj = leg_armature()
    shin = _keyed_knee(obj)
    assert bpy.ops.spline_joints.capture_range(frame_start=1, frame_end=21, step=2) == {"FINISHED"}
    s = shin.spline_joints
    s.fit_frames = 30
    assert bpy.ops.spline_joints.fit() == {"FINISHED"}
    report = io.loads(s.joint_json).report
    labels = []

    class Layout:
        def __getattr__(self, attr):
            return lambda *a, **k: self

        def label(self, text="", **kw):
            labels.append(text)
            return self

    panel = bpy.types.VIEW3D_PT_spline_joints_fit
    panel.draw(type("P", (), {"layout": Layout()})(), bpy.context)
    return {"message": report.message, "rms": report.rms_position_mm,
            "heldout_max": report.heldout_max_position_mm,
            "heldout_deg": report.heldout_max_rotation_deg, "labels": labels}


def test_underdetermined_fit_is_stored_with_its_warning_and_heldout_error(blender):
    out = blender(scenario_underdetermined_fit_is_flagged)
    assert "30 control frames are more than the 11 samples determine" in out["message"]
    assert out["heldout_max"] > 0.0 and out["heldout_deg"] > 0.0
    shown = [t for t in out["labels"] if t.startswith("Between samples")]
    assert len(shown) == 2, out["labels"]
    assert f"{out['heldout_max']:.3f} mm" in shown[0]
