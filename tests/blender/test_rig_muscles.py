"""Muscles on the user's own armature: a biceps authored on a two-bone arm from the 3D cursor,
drawn through its bones as they move, listed with the Spans filter, its keyed activation
flexing the elbow in a live preview and a bake (at 0 the forearm hangs); bad input refused
with the scene as it was; undo."""

import math

import numpy as np

from scenes import refused

#: the muscle's origin on the upper arm and insertion on the forearm (world, rest pose): 3 cm
#: above the elbow's axis, so the tension turns the forearm up
ORIGIN, INSERTION = (0.05, 0.0, 1.53), (0.35, 0.0, 1.53)
#: the elbow's range (rad about the forearm's X, world -Y: positive raises the forearm)
FLEX_RANGE = (-1.6, 2.4)
#: world points of the drawn curve: float32 curve points of coordinates ~1.5 m (4 ulps)
FLOAT32_TOL = 4 * float(np.finfo(np.float32).eps) * 1.5


def _arm():
    """Armature 'Arm' (at the world origin): 'upper_arm' level along +X at 1.5 m, not
    simulated, and 'forearm' connected beyond it on a hinge (1.5 kg, limited to FLEX_RANGE);
    frames 1-24 at 24 fps, no ground. Left in Pose Mode."""
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 24
    scene.render.fps = 24
    scene.spline_joints_sim.use_ground = False
    data = bpy.data.armatures.new("Arm")
    obj = bpy.data.objects.new("Arm", data)
    scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    upper = data.edit_bones.new("upper_arm")
    upper.head, upper.tail, upper.roll = (0.0, 0.0, 1.5), (0.3, 0.0, 1.5), 0.0
    fore = data.edit_bones.new("forearm")
    fore.head, fore.tail, fore.roll = (0.3, 0.0, 1.5), (0.6, 0.0, 1.5), 0.0
    fore.parent, fore.use_connect = upper, True
    bpy.ops.object.mode_set(mode="POSE")
    s = obj.pose.bones["forearm"].spline_joints_sim
    s.enabled, s.kind, s.axis = True, "HINGE", (1.0, 0.0, 0.0)
    s.use_range, s.range_min, s.range_max = True, *FLEX_RANGE
    s.mass_source, s.mass, s.com, s.inertia = "MANUAL", 1.5, (0.0, 0.15, 0.0), (0.012, 0.001, 0.012)
    s.spring_units, s.stiffness, s.damping = "ABSOLUTE", 0.0, 0.2
    bpy.context.view_layer.update()
    return obj


def _add_biceps(obj, name="biceps"):
    """Place the biceps' points at the 3D cursor on each bone and make it (the operators)."""
    import bpy

    for bone, where in (("upper_arm", ORIGIN), ("forearm", INSERTION)):
        obj.data.bones.active = obj.data.bones[bone]
        bpy.context.scene.cursor.location = where
        assert bpy.ops.spline_joints.add_rig_muscle_point(source="CURSOR") == {"FINISHED"}
    assert bpy.ops.spline_joints.add_rig_muscle(name=name, max_isometric_force=300.0) == \
        {"FINISHED"}


def _forearm_angle(obj):
    """The forearm's angle (rad) up from level, from its world head and tail."""
    pb = obj.pose.bones["forearm"]
    M = np.array(obj.matrix_world)
    head, tail = (M[:3, :3] @ np.array(v) + M[:3, 3] for v in (pb.head, pb.tail))
    d = tail - head
    return math.atan2(d[2], d[0])


def _drawn_error(obj, name):
    """Largest distance (m) between the drawn curve's points (world) and the muscle's points
    carried by the bones' current poses (mathutils only)."""
    from mathutils import Vector

    from scenes import addon_module

    muscles = addon_module("addon.muscles")
    item = obj.data.spline_joints_muscles.muscles[name]
    curve = muscles.muscle_objects(obj)[name]
    Mo = np.array(curve.matrix_world)
    got = np.array([p.co[:3] for p in curve.data.splines[0].points]) @ Mo[:3, :3].T + Mo[:3, 3]
    want = []
    for p in item.points:
        pb = obj.pose.bones[p.body]
        B = obj.matrix_world @ pb.matrix
        B.normalize()
        want.append(np.array(B @ Vector(p.location)))
    return float(np.abs(got - np.array(want)).max())


def scenario_biceps(tmp):
    import csv
    import os

    import bpy

    from scenes import addon_module, bake_rig

    muscles = addon_module("addon.muscles")
    display = addon_module("core.muscles.display")
    out = {}
    angles = {}
    for activation in (1.0, 0.0):
        obj = _arm()
        _add_biceps(obj)
        items = obj.data.spline_joints_muscles.muscles
        item = items["biceps"]
        out["joints"] = item.joints
        rest = math.dist(ORIGIN, INSERTION)
        out["lengths"] = (item.optimal_fiber_length, item.tendon_slack_length, rest)
        out["drawn_rest"] = _drawn_error(obj, "biceps")
        prop = muscles.activation_property("biceps")
        obj[prop] = activation
        obj.keyframe_insert(f'["{prop}"]', frame=1)
        scene = bpy.context.scene
        if activation:      # the moment-arm plot about the elbow, then the live preview
            settings = obj.data.spline_joints_muscles
            settings.plot_coordinate, settings.plot_folder = "forearm", tmp
            assert bpy.ops.spline_joints.plot_rig_moment_arm() == {"FINISHED"}
            with open(os.path.join(tmp, "biceps_forearm_moment_arm.csv")) as fh:
                rows = list(csv.reader(fh))
            out["plot"] = (rows[0], np.array(rows[1:], dtype=float).tolist(),
                           os.path.getsize(os.path.join(tmp, "biceps_forearm_moment_arm.png")))
            # the muscle pulls in the live preview too, drawn as it plays

            scene.spline_joints_sim.live = True
            assert bpy.ops.spline_joints.simulate_preview() == {"FINISHED"}
            for f in range(1, 13):
                scene.frame_set(f)
            bpy.context.view_layer.update()
            out["preview"] = (_forearm_angle(obj), _drawn_error(obj, "biceps"))
            assert bpy.ops.spline_joints.clear_preview() == {"FINISHED"}
            scene.frame_set(1)
        result, message, _ = bake_rig(scene, obj)
        out[f"message {activation}"] = message
        angles[activation] = []
        for f in (1, 6, 12, 24):
            scene.frame_set(f)
            bpy.context.view_layer.update()
            angles[activation].append(_forearm_angle(obj))
        out[f"drawn {activation}"] = _drawn_error(obj, "biceps")
        # the list's filter: the biceps spans the forearm's joint, not the upper arm's
        keep = display.filter_muscles([i.name for i in items],
                                      [(i.coordinates.split(), i.joints.split()) for i in items],
                                      "", "fore")
        out["filter"] = (bool(keep[0]), bool(display.filter_muscles(
            ["biceps"], [([], item.joints.split())], "", "upper")[0]))
    out["angles"] = {str(k): v for k, v in angles.items()}
    return out


def test_activated_biceps_flexes_the_elbow(blender):
    out = blender(scenario_biceps)
    print(out)
    lopt, slack, rest = out["lengths"]
    # the lengths come from the path's rest length: fibres at optimal length there
    assert abs(lopt + slack - rest) < 1e-6 and abs(slack - 0.5 * rest) < 1e-6
    assert out["joints"] == "forearm" and out["filter"] == [True, False]
    assert out["drawn_rest"] <= FLOAT32_TOL
    for activation in ("1.0", "0.0"):
        assert out[f"drawn {activation}"] <= FLOAT32_TOL, out
    flexed, hanging = out["angles"]["1.0"], out["angles"]["0.0"]
    assert abs(flexed[0]) < 1e-6 and abs(hanging[0]) < 1e-6
    # activated: the forearm rises (flexes) at once; relaxed: it hangs (falls)
    assert flexed[1] > 0.05 and flexed[-1] > 1.0, flexed
    assert hanging[1] < -0.05 and hanging[-1] < -1.0, hanging
    assert "biceps up to" in out["message 1.0"]
    # the plot: the elbow's range, 3 cm of moment arm at the straight elbow (the path runs
    # level 3 cm above the elbow's axis), the length the path's rest length there
    head, table, png = out["plot"]
    table = np.array(table)
    assert head[0] == "forearm (rad)" and png > 1000
    # the range as Blender holds it (float32)
    np.testing.assert_allclose(table[[0, -1], 0], FLEX_RANGE, rtol=np.finfo(np.float32).eps)
    r0, L0 = (np.interp(0.0, table[:, 0], table[:, k]) for k in (2, 1))
    assert abs(r0 - 0.03) < 1e-3 and abs(L0 - rest) < 1e-4, (r0, L0)
    # the live preview runs the same steps: the bake's angle at frame 12 (keys in float32)
    preview, drawn = out["preview"]
    assert abs(preview - flexed[2]) < 1e-5 and drawn <= FLOAT32_TOL, (preview, flexed, drawn)


def scenario_bad_input(tmp):
    import bpy

    from scenes import addon_module

    muscles = addon_module("addon.muscles")
    obj = _arm()
    # a muscle needs two points and a free name
    assert "at least two path points" in refused(
        lambda: bpy.ops.spline_joints.add_rig_muscle(name="lonely"))
    _add_biceps(obj)
    obj.data.bones.active = obj.data.bones["forearm"]
    assert bpy.ops.spline_joints.add_rig_muscle_point(source="CURSOR") == {"FINISHED"}
    assert bpy.ops.spline_joints.add_rig_muscle_point(source="CURSOR") == {"FINISHED"}
    assert "taken" in refused(lambda: bpy.ops.spline_joints.add_rig_muscle(name="biceps"))
    assert "pennation" in refused(lambda: bpy.ops.spline_joints.add_rig_muscle(
        name="p", pennation_angle=2.0))
    assert len(obj.data.spline_joints_muscles.muscles) == 1
    prop = muscles.activation_property("biceps")
    item = obj.data.spline_joints_muscles.muscles["biceps"]

    def state():
        actions = sorted(a.name for a in bpy.data.actions)
        return actions, tuple(obj.pose.bones["forearm"].matrix_basis.to_quaternion())

    messages = []
    before = state()
    # a path point on a bone the armature does not have
    item.points[1].body = "hand"
    messages.append(refused(bpy.ops.spline_joints.bake_rig))
    assert state() == before
    item.points[1].body = "forearm"
    # an activation outside [0, 1] (the property holds keyed values in 0..1; a script can
    # assign any number)
    obj[prop] = 1.5
    before = state()
    messages.append(refused(bpy.ops.spline_joints.bake_rig))
    assert state() == before
    obj[prop] = 0.5
    # a NaN parameter
    item.max_isometric_force = float("nan")
    before = state()
    messages.append(refused(bpy.ops.spline_joints.bake_rig))
    assert state() == before
    return messages


def test_bad_input_is_refused_by_name(blender):
    missing, activation, nan = blender(scenario_bad_input)
    assert "muscle 'biceps'" in missing and "'hand'" in missing and "point 2" in missing
    assert "muscle 'biceps'" in activation and "1.5" in activation and "frame 1," in activation
    assert "'biceps activation'" in activation
    assert "muscle 'biceps'" in nan and "max_isometric_force" in nan and "nan" in nan


def scenario_undo(tmp):
    import bpy

    from scenes import addon_module

    muscles = addon_module("addon.muscles")
    obj = _arm()
    for bone, where in (("upper_arm", ORIGIN), ("forearm", INSERTION)):
        obj.data.bones.active = obj.data.bones[bone]
        bpy.context.scene.cursor.location = where
        assert bpy.ops.spline_joints.add_rig_muscle_point(source="CURSOR") == {"FINISHED"}
    bpy.ops.ed.undo_push(message="before the muscle")
    # The second positional argument asks bpy.ops to push an undo step, as the UI does.
    assert bpy.ops.spline_joints.add_rig_muscle("EXEC_DEFAULT", True, name="biceps") == \
        {"FINISHED"}

    def state():
        arm = bpy.data.objects["Arm"]
        return (len(arm.data.spline_joints_muscles.muscles), sorted(muscles.muscle_objects(arm)),
                muscles.activation_property("biceps") in arm.keys(),
                len(arm.data.spline_joints_muscles.draft_points))

    after = state()
    bpy.ops.ed.undo()
    undone = state()
    bpy.ops.ed.redo()
    arm = bpy.data.objects["Arm"]
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.spline_joints.remove_rig_muscle() == {"FINISHED"}
    removed = state()
    return {"after": after, "undone": undone, "removed": removed}


def test_undo_and_remove(blender):
    out = blender(scenario_undo)
    assert out["after"] == [1, ["biceps"], True, 0]
    assert out["undone"] == [0, [], False, 2]
    assert out["removed"] == [0, [], False, 0]
