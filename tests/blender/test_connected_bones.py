"""A joint that moves the head of a bone connected to its parent is refused when it is applied
(the joint presets and file transfers leave the bone as it was) and flagged in the Simulate
panel under the Joint field when it is chosen there, with what to do."""


def _leg(connected):
    """A new file with armature 'Leg': bone 'femur' and its child 'tibia', connected or not,
    the gait2392 knee's proportions (0.4 m femur along -Z); Pose Mode, 'tibia' active."""
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    data = bpy.data.armatures.new("Leg")
    obj = bpy.data.objects.new("Leg", data)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    femur = data.edit_bones.new("femur")
    femur.head, femur.tail = (0.0, 0.0, 1.0), (0.0, 0.0, 0.6)
    tibia = data.edit_bones.new("tibia")
    tibia.head, tibia.tail = (0.0, 0.0, 0.6), (0.0, 0.0, 0.17)
    tibia.parent, tibia.use_connect = femur, connected
    bpy.ops.object.mode_set(mode="POSE")
    data.bones.active = data.bones["tibia"]
    bpy.context.view_layer.update()
    return obj


def _settings(pb):
    """What the preset operator would change on a bone: its stored joint and fit report."""
    s = pb.spline_joints
    return {"json": s.joint_json, "status": s.fit_status, "ranges": [list(s.range_min),
                                                                       list(s.range_max)],
            "sim": pb.spline_joints_sim.kind}


def scenario_a_preset_on_a_connected_bone_is_refused(tmp):
    import bpy

    obj = _leg(connected=True)
    pb = obj.pose.bones["tibia"]
    before = _settings(pb)
    objects = sorted(o.name for o in bpy.data.objects)
    try:
        result = bpy.ops.spline_joints.apply_joint_preset(preset="KNEE_R")
    except RuntimeError as err:          # Blender raises a CANCELLED operator's ERROR report
        message = str(err)
    else:
        raise AssertionError(f"the preset was applied to a connected bone: {result}")
    assert _settings(pb) == before
    assert sorted(o.name for o in bpy.data.objects) == objects    # no path drawn
    # the same preset on the same leg with the tibia not connected is applied
    obj = _leg(connected=False)
    assert bpy.ops.spline_joints.apply_joint_preset(preset="KNEE_R") == {"FINISHED"}
    assert obj.pose.bones["tibia"].spline_joints.joint_json
    return {"message": message}


def test_a_preset_that_moves_a_connected_head_is_refused_and_changes_nothing(blender):
    message = blender(scenario_a_preset_on_a_connected_bone_is_refused)["message"]
    assert "bone 'tibia' is connected to its parent" in message
    assert "moves the head" in message and "was not applied" in message
    assert "untick Connected (Bone Properties > Relations)" in message


def scenario_panel_lines(tmp):
    import bpy

    labels = []

    class Layout:
        def __getattr__(self, attr):
            return lambda *a, **k: self

        def label(self, text="", icon="NONE", **kw):
            labels.append((text, icon))
            return self

    panel = bpy.types.VIEW3D_PT_spline_joints_simulate

    def draw():
        labels.clear()
        panel.draw(type("P", (), {"layout": Layout()})(), bpy.context)
        return list(labels)

    out = {}
    obj = _leg(connected=False)
    assert bpy.ops.spline_joints.apply_joint_preset(preset="KNEE_R") == {"FINISHED"}
    sim = obj.pose.bones["tibia"].spline_joints_sim
    sim.enabled = True
    for kind in ("SLIDER", "FITTED"):
        sim.kind = kind
        out[f"{kind} apart"] = draw()
    bpy.ops.object.mode_set(mode="EDIT")
    obj.data.edit_bones["tibia"].use_connect = True
    bpy.ops.object.mode_set(mode="POSE")
    obj.data.bones.active = obj.data.bones["tibia"]
    for kind in ("BALL", "HINGE", "SLIDER", "FREE", "FITTED"):
        sim.kind = kind
        out[kind] = draw()
    return out


def test_the_panel_flags_a_joint_that_moves_a_connected_head(blender):
    out = blender(scenario_panel_lines)
    wrong = "Bone 'tibia' is connected to its parent, so Blender keeps its head on the " \
            "parent's tail, but its {} joint moves the head"
    todo = "Untick Connected (Bone Properties > Relations) or use a joint that only turns"
    for kind in ("SLIDER", "FREE", "FITTED"):
        lines = [tuple(x) for x in out[kind]]
        at = lines.index((wrong.format(kind.lower()), "ERROR"))
        assert lines[at + 1] == (todo, "BLANK1"), lines
    for case in ("BALL", "HINGE", "SLIDER apart", "FITTED apart"):
        assert not any(icon == "ERROR" for _, icon in out[case]), (case, out[case])
