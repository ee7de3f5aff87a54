"""The drag tool in Blender: a session of the add-on's drag engine (the object the modal
operator holds) fed synthetic events (mouse pixels in a view built here, timer ticks, Enter,
Esc) pulls a grabbed bone toward the mouse while the rig simulates, records the take to keys
(the old action on an NLA track, one undo step), puts everything back on Esc, keeps a
dragged linkage's loop closed, refuses a click on nothing or on a kinematic bone with the
scene unchanged, and drags a simulated object and a demo mechanism's body the same way.
Record Preview keys a Simulate Preview.

Blender cannot run a modal operator without a window, so the tests drive
:class:`addon.drag.DragSession` (what the operator's ``invoke`` makes) with the events the
operator's ``modal`` hands it, and once through the registered operator's ``modal`` itself
with its window parts (timer, status bar, redraw) stubbed; the view is a perspective
``region``/``region_data`` pair made of mathutils matrices, read by
``bpy_extras.view3d_utils`` as a viewport's.
"""

import numpy as np
import pytest

N_TAIL = 3
BONE = 0.1
ROOT = (0.0, 0.0, 1.0)
#: the tip bone's grabbed point: its middle, and where the mouse pulls it (0.22 m from the
#: tail's root: within the 0.25 m of chain before that point)
GRAB = np.array([0.0, -0.25, 1.0])
TARGET = np.array([0.0, -0.2, 1.1])
#: frames of dragging (one per timer tick at 24 fps: a second)
TICKS = 24
#: a point through the view and back: mathutils matrices are single precision (eps 6e-8),
#: the pixel-to-point round trip of a point 3 m away takes a few of their roundings times
#: the projection's scale; 1e-5 m bounds it
VIEW_TOL = 1e-5


def fake_view(eye, look_at, up=(0.0, 0.0, 1.0), fov=0.8, size=(800, 600)):
    """``(region, rv3d)`` of a perspective view from ``eye`` toward ``look_at``: the
    attributes ``bpy_extras.view3d_utils`` reads of a viewport's region and region data."""
    from types import SimpleNamespace

    from mathutils import Matrix

    eye, look_at, up = (np.array(v, dtype=float) for v in (eye, look_at, up))
    f = (look_at - eye) / np.linalg.norm(look_at - eye)
    r = np.cross(f, up)
    r /= np.linalg.norm(r)
    cam = np.eye(4)
    cam[:3, 0], cam[:3, 1], cam[:3, 2], cam[:3, 3] = r, np.cross(r, f), -f, eye
    view = np.linalg.inv(cam)
    near, far, t = 0.01, 100.0, 1.0 / np.tan(0.5 * fov)
    w, h = size
    P = np.array([[t * h / w, 0, 0, 0], [0, t, 0, 0],
                  [0, 0, (far + near) / (near - far), 2 * far * near / (near - far)],
                  [0, 0, -1, 0]])
    rv3d = SimpleNamespace(view_matrix=Matrix(view.tolist()),
                           perspective_matrix=Matrix((P @ view).tolist()),
                           is_perspective=True, view_perspective="PERSP")
    return SimpleNamespace(width=w, height=h), rv3d


def pixel(view, point):
    """The region pixel ``(x, y)`` that shows the world ``point``."""
    from bpy_extras import view3d_utils
    from mathutils import Vector

    xy = view3d_utils.location_3d_to_region_2d(*view, Vector(point))
    return float(xy[0]), float(xy[1])


def tail_rig():
    """Armature 'Tail' at ROOT: 'hips' keyed (still) and a tail of N_TAIL ball-jointed
    simulated bones along -Y, no gravity and no springs (left alone, nothing moves); the view
    looks at it from +X."""
    import bpy

    from scenes import tail_armature

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 60
    scene.render.fps = 24
    scene.use_gravity = False
    obj = tail_armature("Tail", N_TAIL, BONE, ROOT, ((1, 0.0), (60, 0.0)))
    for k in range(N_TAIL):
        s = obj.pose.bones[f"tail.{k:03d}"].spline_joints_sim
        s.enabled, s.kind = True, "BALL"
        s.mass_source, s.mass = "MANUAL", 0.1
        s.com, s.inertia = (0.0, 0.05, 0.0), (1e-4, 2e-5, 1e-4)
        s.spring_units, s.stiffness, s.damping = "ABSOLUTE", 0.0, 1e-3
    scene.spline_joints_sim.use_ground = False
    bpy.ops.object.mode_set(mode="OBJECT")     # undo steps are object mode's
    scene.frame_set(1)
    return obj, fake_view((3.0, -0.15, 1.0), (0.0, -0.15, 1.0))


def grabbed_world(obj, bone, local):
    W = np.array(obj.matrix_world) @ np.array(obj.pose.bones[bone].matrix)
    return (W @ np.append(local, 1.0))[:3]


def scenario_drag_and_record(tmp, hold):
    import bpy

    from scenes import action_fcurves, addon_module

    drag = addon_module("addon.drag")
    obj, view = tail_rig()
    scene = bpy.context.scene
    bpy.ops.ed.undo_push(message="before the drag")
    session = drag.DragSession(scene, bpy.context.evaluated_depsgraph_get(), *view,
                               pixel(view, GRAB), hold)
    take = session.take
    assert isinstance(take, drag.RigTake) and take.body == f"tail.{N_TAIL - 1:03d}"
    assert np.linalg.norm(take.grabbed() - GRAB) < VIEW_TOL         # the bone's axis, there
    assert session.event("MOUSEMOVE", "NOTHING", pixel(view, TARGET), hold)[0] == "RUNNING_MODAL"
    assert np.linalg.norm(session.target - TARGET) < VIEW_TOL, session.target - TARGET
    start = float(np.linalg.norm(take.grabbed() - TARGET))
    for _ in range(TICKS):
        assert session.event("TIMER", "NOTHING", pixel(view, TARGET), hold)[0] == "RUNNING_MODAL"
    dragged = float(np.linalg.norm(take.grabbed() - TARGET))
    # what the viewport shows is the run's last frame, at the scene's matching frame
    bpy.context.view_layer.update()
    shown = grabbed_world(obj, take.body, take.point)
    assert scene.frame_current == 1 + take.run.ready - 1
    assert np.linalg.norm(shown - take.grabbed()) < 1e-5
    # let go (right click): the run goes on without the pull
    assert session.event("RIGHTMOUSE", "PRESS", pixel(view, TARGET), hold)[0] == "RUNNING_MODAL"
    for _ in range(4):
        session.event("TIMER", "NOTHING", pixel(view, TARGET), hold)
    old = obj.animation_data.action.name
    frames = take.run.ready
    state, message = session.event("RET", "PRESS", pixel(view, TARGET), hold)
    assert state == "FINISHED", message
    bpy.ops.ed.undo_push(message="Drag Simulation")     # what Blender does for the operator
    ad = obj.animation_data
    assert ad.action.name == "Tail Simulation" and [t.name for t in ad.nla_tracks] == [old]
    assert not ad.nla_tracks[0].mute
    curves = {(fc.data_path, fc.array_index): len(fc.keyframe_points)
              for fc in action_fcurves(ad.action)}
    tip = f'pose.bones["{take.body}"]'
    assert curves[(f"{tip}.rotation_quaternion", 0)] == frames
    # the keys play the take: the last frame shows where the drag left the tip
    scene.frame_set(frames)
    keyed = grabbed_world(obj, take.body, take.point)
    last = take.run.poses[frames - 1, take.names.index(take.body)]
    assert np.linalg.norm(keyed - (last[:3, :3] @ take.point + last[:3, 3])) < 1e-5
    bpy.ops.ed.undo()
    obj = bpy.data.objects["Tail"]
    undone = (obj.animation_data.action.name == old and not obj.animation_data.nla_tracks)
    return {"start": start, "dragged": dragged, "message": message, "undone": undone}


@pytest.mark.slow
@pytest.mark.parametrize("hold", [False, True])
def test_a_dragged_bone_follows_the_mouse_and_the_take_is_recorded(blender, hold):
    out = blender(scenario_drag_and_record, hold=hold)
    assert out["start"] > 0.1
    # a second of a 3 Hz critically damped pull (or the stiffest stable one) brings the
    # grabbed point within a fifth of its start distance
    assert out["dragged"] < 0.2 * out["start"], out
    assert "Recorded frames 1-" in out["message"]
    assert out["undone"], "one undo takes the recording back"


def scenario_escape_restores(tmp):
    from types import SimpleNamespace

    import bpy

    from scenes import addon_module

    drag = addon_module("addon.drag")
    obj, view = tail_rig()
    scene = bpy.context.scene
    scene.frame_set(5)
    before = {pb.name: np.array(pb.matrix_basis) for pb in obj.pose.bones}
    action = obj.animation_data.action.name
    session = drag.DragSession(scene, bpy.context.evaluated_depsgraph_get(), *view,
                               pixel(view, GRAB))
    # the events go through the registered operator's own modal, its window parts stubbed
    op_class = bpy.types.SPLINE_JOINTS_OT_drag
    reports, calls = [], []
    op = SimpleNamespace(_session=session, _timer="timer",
                         report=lambda level, text: reports.append((sorted(level), text)))
    op._end = lambda context: op_class._end(op, context)
    context = SimpleNamespace(
        area=SimpleNamespace(tag_redraw=lambda: calls.append("redraw")),
        workspace=SimpleNamespace(status_text_set=lambda text: calls.append(text)),
        window_manager=SimpleNamespace(event_timer_remove=lambda t: calls.append(t)))

    def event(kind, value, point):
        x, y = pixel(view, point)
        return op_class.modal(op, context, SimpleNamespace(
            type=kind, value=value, mouse_region_x=x, mouse_region_y=y, ctrl=False))

    assert event("MOUSEMOVE", "NOTHING", TARGET) == {"RUNNING_MODAL"}
    for _ in range(10):
        assert event("TIMER", "NOTHING", TARGET) == {"RUNNING_MODAL"}
    assert event("MIDDLEMOUSE", "PRESS", TARGET) == {"PASS_THROUGH"}    # the view turns
    moved = max(np.abs(np.array(pb.matrix_basis) - before[pb.name]).max()
                for pb in obj.pose.bones)
    assert event("ESC", "PRESS", TARGET) == {"CANCELLED"}
    assert reports and "nothing recorded" in reports[-1][1] and reports[-1][0] == ["INFO"]
    assert "timer" in calls and calls[-2:] == [None, "redraw"]    # timer gone, status cleared
    after = max(np.abs(np.array(pb.matrix_basis) - before[pb.name]).max()
                for pb in obj.pose.bones)
    return {"moved": float(moved), "after": float(after), "frame": scene.frame_current,
            "action": obj.animation_data.action.name == action,
            "tracks": len(obj.animation_data.nla_tracks)}


def test_escape_puts_the_rig_back(blender):
    out = blender(scenario_escape_restores)
    assert out["moved"] > 1e-2
    assert out["after"] == 0.0 and out["frame"] == 5
    assert out["action"] and out["tracks"] == 0


def scenario_bad_clicks(tmp):
    import bpy

    from scenes import addon_module

    drag = addon_module("addon.drag")
    obj, view = tail_rig()
    obj.pose.bones["tail.000"].spline_joints_sim.kinematic = True
    scene = bpy.context.scene
    scene.frame_set(3)
    before = {pb.name: np.array(pb.matrix_basis) for pb in obj.pose.bones}
    messages = {}
    for what, point in (("nothing", (0.0, 1.0, 1.5)), ("hips", (0.0, 0.0, 1.1)),
                        ("kinematic", (0.0, -0.05, 1.0))):
        try:
            drag.DragSession(scene, bpy.context.evaluated_depsgraph_get(), *view,
                             pixel(view, point))
        except ValueError as exc:
            messages[what] = str(exc)
    changed = max(np.abs(np.array(pb.matrix_basis) - before[pb.name]).max()
                  for pb in obj.pose.bones)
    return {"messages": messages, "changed": float(changed), "frame": scene.frame_current,
            "tracks": len(obj.animation_data.nla_tracks),
            "actions": sorted(a.name for a in bpy.data.actions)}


def test_a_click_on_nothing_or_on_a_kinematic_bone_is_refused(blender):
    out = blender(scenario_bad_clicks)
    msgs = out["messages"]
    assert "nothing to drag under the mouse" in msgs["nothing"]
    assert "'hips' follows its animation" in msgs["hips"]
    assert "'tail.000' follows its animation" in msgs["kinematic"]
    assert out["changed"] == 0.0 and out["frame"] == 3 and out["tracks"] == 0
    assert out["actions"] == ["TailAction"]


def scenario_drag_linkage(tmp):
    import bpy

    from scenes import addon_module
    from test_linkages import FLOAT32_POSE, build_four_bar, closure_error

    drag = addon_module("addon.drag")
    demos = addon_module("core.linkage_demos")
    linkage_bridge = addon_module("addon.linkage_bridge")
    scene, item, objs = build_four_bar()
    view = fake_view((1.0, -6.0, 0.8), (1.0, 0.0, 0.8))
    coupler = objs["coupler"]
    start_pose = linkage_bridge.object_pose(coupler)
    grab = start_pose[:3, 3] + start_pose[:3, 0] * 0.2          # on the bar, off its centre
    # where that point of the coupler is with the crank at 1.2 rad (a place it can reach)
    session = drag.DragSession(scene, bpy.context.evaluated_depsgraph_get(), *view,
                               pixel(view, grab))
    take = session.take
    assert isinstance(take, drag.LinkageTake)
    assert take.drag.linkage.bodies[take.drag.body].name == "coupler"
    # the grabbed point (on the box's face toward the viewer) with the crank at 1.2 rad
    there = demos.four_bar(theta=1.2)[0]
    target = (there.bodies[there.index("coupler")].T @ np.append(take.drag.point, 1.0))[:3]
    before = {name: np.array(o.matrix_world) for name, o in objs.items()}
    session.event("MOUSEMOVE", "NOTHING", pixel(view, target))
    start = float(np.linalg.norm(take.grabbed() - target))
    errors, closures = [], []
    for _ in range(12):
        session.event("TIMER", "NOTHING", pixel(view, target))
        bpy.context.view_layer.update()
        errors.append(take.error)          # the largest so far
        closures.append(closure_error(item, linkage_bridge))
    dragged = float(np.linalg.norm(take.grabbed() - target))
    n = len(take.poses)
    state, message = session.event("RET", "PRESS", pixel(view, target))
    assert state == "FINISHED", message
    keyed = [name for name, o in objs.items() if o.animation_data and o.animation_data.action]
    # the keys play the take, the scene at its last frame; Esc on a second drag puts the
    # bodies back where the first left them
    frame = scene.frame_current
    left = {name: np.array(o.matrix_world) for name, o in objs.items()}
    session = drag.DragSession(scene, bpy.context.evaluated_depsgraph_get(), *view,
                               pixel(view, take.grabbed()))
    session.event("MOUSEMOVE", "NOTHING", pixel(view, grab))
    for _ in range(5):
        session.event("TIMER", "NOTHING", pixel(view, grab))
    assert session.event("ESC", "PRESS", pixel(view, grab))[0] == "CANCELLED"
    bpy.context.view_layer.update()
    back = max(np.abs(np.array(o.matrix_world) - left[name]).max() for name, o in objs.items())
    moved = max(np.abs(left[name] - before[name]).max() for name in objs)
    return {"start": start, "dragged": dragged, "errors": errors, "closures": closures,
            "tolerance": item.tolerance, "float32": FLOAT32_POSE, "frames": n,
            "keyed": sorted(keyed), "live": item.live, "back": float(back),
            "moved": float(moved), "message": message, "frame": frame,
            "after": scene.frame_current}


@pytest.mark.slow
def test_a_dragged_linkage_body_keeps_the_loop_closed(blender):
    out = blender(scenario_drag_linkage)
    assert out["start"] > 0.1
    assert out["dragged"] < 1e-3, out
    assert max(out["errors"]) <= out["tolerance"]
    # the objects' own poses close the loop to their single precision
    assert max(out["closures"]) <= out["float32"]
    assert out["keyed"] == ["coupler", "crank", "rocker"] and not out["live"]
    assert "Recorded linkage" in out["message"]
    assert out["frame"] == 1 + out["frames"] - 1 and out["after"] == out["frame"]
    assert out["moved"] > 0.1 and out["back"] < out["float32"]


def scenario_record_preview(tmp):
    import bpy

    from scenes import action_fcurves, addon_module

    previews = addon_module("addon.previews")
    obj, view = tail_rig()
    scene = bpy.context.scene
    scene.use_gravity = True
    old = obj.animation_data.action.name
    assert bpy.ops.spline_joints.simulate_preview() == {"FINISHED"}
    scene.frame_set(40)
    shown = np.array(obj.pose.bones["tail.002"].matrix_basis)
    bpy.ops.ed.undo_push(message="before recording")
    assert bpy.ops.spline_joints.record_preview("EXEC_DEFAULT", True) == {"FINISHED"}
    ad = obj.animation_data
    recorded = (ad.action.name, [t.name for t in ad.nla_tracks], len(previews.PREVIEWS))
    keys = max(len(fc.keyframe_points) for fc in action_fcurves(ad.action))
    scene.frame_set(40)
    keyed = np.array(obj.pose.bones["tail.002"].matrix_basis)
    bpy.ops.ed.undo()
    obj = bpy.data.objects["Tail"]
    undone = obj.animation_data.action.name == old and not obj.animation_data.nla_tracks
    refused = ""
    try:
        bpy.ops.spline_joints.record_preview()
    except RuntimeError as exc:
        refused = str(exc)
    return {"recorded": recorded, "old": old, "keys": keys,
            "diff": float(np.abs(keyed - shown).max()), "undone": undone, "refused": refused}


def test_record_preview_keys_what_the_preview_shows(blender):
    out = blender(scenario_record_preview)
    assert out["recorded"] == ["Tail Simulation", [out["old"]], 0]
    assert out["keys"] == 60
    assert out["diff"] < 1e-5
    assert out["undone"]
    assert "no Simulate Preview to record" in out["refused"]


def scenario_drag_mechanism(tmp):
    import bpy

    from scenes import addon_module

    from scenes import action_fcurves

    drag = addon_module("addon.drag")
    core_rig = addon_module("core.rig")
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = 24
    assert bpy.ops.spline_joints.add_mechanism(demo="hinge_chain", duration=1.0) == {"FINISHED"}
    item = scene.spline_joints_mechanisms[0]
    last = item.bodies[len(item.bodies) - 1].object
    bpy.context.view_layer.update()
    centre = np.array(last.matrix_world)[:3, 3]
    view = fake_view(centre + np.array([0.0, -4.0, 0.0]), centre)
    session = drag.DragSession(scene, bpy.context.evaluated_depsgraph_get(), *view,
                               pixel(view, centre))
    take = session.take
    assert isinstance(take, drag.MechanismTake) and take.body == take.names[-1]
    grab = take.grabbed()
    target = grab + np.array([0.0, 0.0, 0.3])
    session.event("MOUSEMOVE", "NOTHING", pixel(view, target))
    for _ in range(TICKS):
        session.event("TIMER", "NOTHING", pixel(view, target))
    n = take.run.ready
    dragged = float(np.linalg.norm(take.grabbed() - target))
    free = core_rig.LiveRun(take.run.mechanism)
    free.advance_to(n - 1)
    T = free.poses[n - 1, -1]
    left = float(np.linalg.norm(T[:3, :3] @ take.point + T[:3, 3] - target))
    bpy.context.view_layer.update()
    shown = np.array(last.matrix_world)[:3, 3]
    state, message = session.event("RET", "PRESS", pixel(view, target))
    assert state == "FINISHED", message
    ad = last.animation_data
    keys = {fc.data_path: len(fc.keyframe_points) for fc in action_fcurves(ad.action)}
    return {"dragged": dragged, "left": left, "frames": n, "action": ad.action.name,
            "name": last.name, "keys": keys["location"],
            "shown": float(np.abs(shown - take.run.poses[n - 1, -1, :3, 3]).max()),
            "message": message}


@pytest.mark.slow
def test_a_dragged_mechanism_body_follows_the_mouse_and_is_recorded(blender):
    out = blender(scenario_drag_mechanism)
    assert out["dragged"] < 0.5 * out["left"], out
    assert out["shown"] < 1e-5
    assert out["action"] == f"{out['name']} Drag" and out["keys"] == out["frames"]
    assert "Recorded 'hinge_chain' at frames 1-" in out["message"]


def scenario_drag_objects(tmp):
    import bpy

    from scenes import addon_module, hanging_links

    drag = addon_module("addon.drag")
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end, scene.render.fps = 1, 48, 24
    links = hanging_links(scene)
    scene.spline_joints_sim.use_ground = False
    view = fake_view((3.0, 0.0, 1.05), (0.0, 0.0, 1.05))
    session = drag.DragSession(scene, bpy.context.evaluated_depsgraph_get(), *view,
                               pixel(view, (0.0, 0.0, 1.05)), True)
    take = session.take
    assert isinstance(take, drag.RigTake) and take.target is None and take.body == "link1"
    grab = take.grabbed()
    target = grab + np.array([0.0, 0.15, 0.1])
    session.event("MOUSEMOVE", "NOTHING", pixel(view, target), True)
    for _ in range(TICKS):
        session.event("TIMER", "NOTHING", pixel(view, target), True)
    dragged = float(np.linalg.norm(take.grabbed() - target))
    state, message = session.event("RET", "PRESS", pixel(view, target), True)
    assert state == "FINISHED", message
    return {"grab_x": float(grab[0]), "start": float(np.linalg.norm(grab - target)),
            "dragged": dragged,
            "actions": [o.animation_data.action.name for o in links], "message": message}


@pytest.mark.slow
def test_a_simulated_object_is_dragged_and_recorded(blender):
    out = blender(scenario_drag_objects)
    assert abs(out["grab_x"] - 0.03) < VIEW_TOL          # on the cube's face toward the view
    assert out["dragged"] < 0.2 * out["start"], out
    assert out["actions"] == ["link0 Simulation", "link1 Simulation"], out
