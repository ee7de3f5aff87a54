"""Muscles of an imported OpenSim model in Blender: curves through the core's path points that
follow the pose, wrap surfaces on their bones, the muscle list and its filters, the colours,
and the moment-arm plot's files.
"""

from pathlib import Path

import numpy as np
import pytest

from scenes import refused

OSIM = Path(__file__).resolve().parents[3] / "shared" / "data" / "osim"
GAIT = str(OSIM / "gait2392_thelen2003muscle.osim")
ARM26 = str(OSIM / "arm26.osim")
#: world points: Blender keeps curve points and object matrices in float32 (eps32 ~ 1.2e-7);
#: a point is one float32 rounding of coordinates up to ~1 m composed with the armature's
#: world matrix; 4 ulps of a 3 m scale bound it, as for the bones (test_opensim_import)
FLOAT32_TOL = 4 * float(np.finfo(np.float32).eps) * 3.0

pytestmark = pytest.mark.skipif(not OSIM.is_dir(), reason=f"OpenSim data not found at {OSIM}")


def _imported(path):
    """(core model, armature object) of an .osim file imported into an empty scene."""
    import bpy

    from scenes import addon_module

    bpy.ops.wm.read_homefile(use_empty=True)
    model = addon_module("core.io.osim").read_osim(path)
    assert bpy.ops.spline_joints.import_osim(filepath=path) == {"FINISHED"}
    return model, bpy.context.object


def _pose(arm, values):
    import bpy

    for name, value in values.items():
        arm[name] = value
    arm.update_tag()
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()


def _check_drawn(arm, model, q):
    """Largest world-space error of every muscle curve's points (against the core's path
    points) and of every wrap surface (against armature . B_body(q) . wrap pose)."""
    from scenes import addon_module

    paths = addon_module("core.muscles.paths")
    muscles = addon_module("addon.muscles")
    drawn, wraps = muscles.muscle_objects(arm), muscles.wrap_objects(arm)
    assert sorted(drawn) == sorted(model.muscles)
    assert sorted(wraps) == sorted(model.wrap_objects)
    kin = paths.path_kinematics(model, q)
    M = np.array(arm.matrix_world)
    worst, count = 0.0, 0
    for name, obj in drawn.items():
        want = paths.path_geometry(kin, None, model.muscles[name].path).points
        co = np.array([p.co[:3] for p in obj.data.splines[0].points])
        assert co.shape == want.shape, (name, co.shape, want.shape)
        Mo = np.array(obj.matrix_world)
        got = co @ Mo[:3, :3].T + Mo[:3, 3]
        worst = max(worst, float(np.abs(got - (want @ M[:3, :3].T + M[:3, 3])).max()))
        count += len(co)
    poses = model.body_poses(q)
    wrap_worst = 0.0
    for name, obj in wraps.items():
        w = model.wrap_objects[name]
        if w.body != "ground":
            assert obj.parent == arm and obj.parent_type == "BONE" and obj.parent_bone == w.body
        want = M @ poses[w.body] @ w.pose
        wrap_worst = max(wrap_worst, float(np.abs(np.array(obj.matrix_world) - want).max()))
    return worst, wrap_worst, count


def scenario_arm26_wraps_follow(tmp, arm26):
    model, arm = _imported(arm26)
    out = []
    for pose in ({"r_shoulder_elev": 0.0, "r_elbow_flex": 0.0},
                 {"r_shoulder_elev": 0.5, "r_elbow_flex": 1.6},
                 {"r_shoulder_elev": 0.0, "r_elbow_flex": 0.3}):
        _pose(arm, pose)
        out.append(_check_drawn(arm, model, model.q_from(pose)))
    return out


def test_arm26_muscles_wrap_and_follow(blender):
    """arm26's muscles wrap over its cylinders and ellipsoids: the curves carry the arcs."""
    for worst, wrap_worst, count in blender(scenario_arm26_wraps_follow, arm26=ARM26):
        assert worst <= FLOAT32_TOL and wrap_worst <= FLOAT32_TOL, (worst, wrap_worst)
        assert count > 6 * 2 + 20  # wrap arcs are sampled: far more points than path points


def scenario_gait_muscles_follow(tmp, gait):
    import time

    import bpy

    from scenes import addon_module

    paths = addon_module("core.muscles.paths")
    display = addon_module("core.muscles.display")
    muscles = addon_module("addon.muscles")
    documents = addon_module("addon.documents")
    model, arm = _imported(gait)
    drawn = muscles.muscle_objects(arm)
    pose = {"hip_flexion_r": 0.6, "knee_angle_r": -1.2, "ankle_angle_r": 0.2,
            "hip_adduction_l": -0.2, "knee_angle_l": -0.4, "pelvis_tx": 0.3}
    _pose(arm, pose)
    worst, wrap_worst, points = _check_drawn(arm, model, model.q_from(pose))
    assert worst <= FLOAT32_TOL, worst
    # colour by length: the shortened knee flexors' neighbour, vastus (knee flexed: longer)
    vas = drawn["vas_int_r"].data.materials[0].diffuse_color
    rest = display.MuscleDisplay(model).colors(
        display.MuscleDisplay(model).rest_lengths)[0]
    assert vas[2] < rest[2] or vas[1] > rest[1]  # towards yellow: more green, less blue
    # the list and its filters
    items = arm.data.spline_joints_osim.muscles
    assert len(items) == len(model.muscles)
    knee = display.filter_muscles([i.name for i in items],
                                  [(i.coordinates.split(), i.joints.split()) for i in items],
                                  "", "knee_r")
    spans = {n: paths.spanned_coordinates(model, m.path) for n, m in model.muscles.items()}
    assert sorted(np.array([i.name for i in items])[knee]) == sorted(
        n for n, c in spans.items() if "knee_angle_r" in c)
    vas_named = display.filter_muscles([i.name for i in items],
                                       [(i.coordinates.split(), i.joints.split()) for i in items],
                                       "VAS", "")
    assert sorted(np.array([i.name for i in items])[vas_named]) == sorted(
        n for n in model.muscles if "vas" in n)
    # force colouring: an activated muscle is redder than a relaxed one at the same pose
    arm[muscles.activation_property("vas_int_r")] = 1.0
    arm.data.spline_joints_osim.muscle_color = "FORCE"
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    active = np.array(drawn["vas_int_r"].data.materials[0].diffuse_color)
    relaxed = np.array(drawn["vas_int_l"].data.materials[0].diffuse_color)
    assert active[1] < relaxed[1], (active, relaxed)
    arm.data.spline_joints_osim.muscle_color = "LENGTH"
    # time: every muscle redrawn per pose change (the handler's muscle step)
    rig = documents.osim_rig(arm.data)
    times = []
    for k in range(20):
        qk = model.q_from({"knee_angle_r": -0.05 * k, "hip_flexion_r": 0.03 * k})
        t0 = time.perf_counter()
        changed = muscles.follow_pose(arm, rig, qk)
        times.append(time.perf_counter() - t0)
        assert changed > 0
    return {"worst": worst, "points": points,
            "ms_median": 1e3 * float(np.median(times)), "ms_max": 1e3 * float(np.max(times))}


def test_gait_muscles_follow_the_pose(blender):
    out = blender(scenario_gait_muscles_follow, gait=GAIT)
    print(out)
    assert out["worst"] <= FLOAT32_TOL


def scenario_moment_arm_plot(tmp, gait):
    import csv
    import os

    import bpy

    from scenes import addon_module

    paths = addon_module("core.muscles.paths")
    model, arm = _imported(gait)
    settings = arm.data.spline_joints_osim
    settings.active_muscle = [m.name for m in settings.muscles].index("vas_int_r")
    settings.plot_coordinate = "knee_angle_r"
    settings.plot_folder = os.path.join(tmp, "missing")
    before = sorted(os.listdir(tmp))
    assert "Plot Folder" in refused(bpy.ops.spline_joints.plot_moment_arm)
    assert sorted(os.listdir(tmp)) == before
    settings.plot_folder = tmp
    assert bpy.ops.spline_joints.fit_osim_joint(joint="knee_r") == {"FINISHED"}
    assert bpy.ops.spline_joints.plot_moment_arm() == {"FINISHED"}
    png = os.path.join(tmp, "vas_int_r_knee_angle_r_moment_arm.png")
    csv_path = png[:-4] + ".csv"
    assert os.path.isfile(png) and os.path.getsize(png) > 1000
    rows = list(csv.reader(open(csv_path)))
    head, table = rows[0], np.array(rows[1:], dtype=float)
    assert len(head) == 5 and "fitted" in head[4]
    # the exact column is the core's moment arm at each value
    for x, arm_exact in table[::15, [0, 2]]:
        kin = paths.path_kinematics(model, model.q_from({"knee_angle_r": x}))
        r = paths.moment_arms(kin, None, model.muscles["vas_int_r"].path,
                              coordinates=["knee_angle_r"])[0]
        assert abs(r - arm_exact) < 1e-12
    assert np.abs(table[:, 4] - table[:, 2]).max() < 2e-3  # the fitted knee: within 2 mm
    image = bpy.data.images["Moment Arm Plot"]
    assert tuple(image.size) == (640, 560)
    return {"files": sorted(os.listdir(tmp)),
            "diff_mm": 1e3 * float(np.abs(table[:, 4] - table[:, 2]).max())}


def test_moment_arm_plot_files(blender):
    out = blender(scenario_moment_arm_plot, gait=GAIT)
    print(out)
    assert not [f for f in out["files"] if f.endswith(".tmp") or ".tmp." in f]


def _state(arm):
    """What an authoring operator may change: object, curve and mesh counts, the stored model's
    text, the placed points."""
    import bpy

    from scenes import addon_module

    documents = addon_module("addon.documents")
    return {"objects": len(bpy.data.objects), "curves": len(bpy.data.curves),
            "meshes": len(bpy.data.meshes), "text": documents.osim_text(arm.data),
            "draft": len(arm.data.spline_joints_osim.draft_points)}


def scenario_author_and_export(tmp, arm26):
    import os

    import bpy

    from scenes import addon_module

    osim = addon_module("core.io.osim")
    muscles = addon_module("addon.muscles")
    model, arm = _imported(arm26)
    pose = {"r_shoulder_elev": 0.3, "r_elbow_flex": 0.9}
    _pose(arm, pose)
    q = model.q_from(pose)
    poses = model.body_poses(q)
    M = np.array(arm.matrix_world)
    wanted = {"r_humerus": np.array([0.01, -0.12, 0.02]),
              "r_ulna_radius_hand": np.array([0.005, -0.06, 0.015])}
    refusals = {}
    start = _state(arm)
    refusals["no points"] = refused(lambda: bpy.ops.spline_joints.add_muscle(name="flexor"))
    assert _state(arm) == start
    for body, local in wanted.items():
        world = M @ poses[body] @ np.append(local, 1.0)
        bpy.context.scene.cursor.location = world[:3]
        assert bpy.ops.spline_joints.add_muscle_point(source="CURSOR", body=body) == {"FINISHED"}
    placed = _state(arm)
    refusals["missing body"] = refused(
        lambda: bpy.ops.spline_joints.add_muscle_point(source="CURSOR", body="femur"))
    assert _state(arm) == placed
    refusals["bad force"] = refused(
        lambda: bpy.ops.spline_joints.add_muscle(name="flexor", max_isometric_force=-5.0))
    assert _state(arm) == placed
    draft = arm.data.spline_joints_osim.draft_points
    located = max(float(np.abs(np.array(p.location) - wanted[p.body]).max()) for p in draft)
    bpy.ops.ed.undo_push(message="before the muscle")
    assert bpy.ops.spline_joints.add_muscle("EXEC_DEFAULT", True, name="flexor",
                                            max_isometric_force=800.0,
                                            optimal_fiber_length=0.12,
                                            tendon_slack_length=0.1) == {"FINISHED"}
    added = _state(arm)
    assert added["objects"] == placed["objects"] + 1 and added["draft"] == 0
    arm = bpy.data.objects[arm.name]
    drawn = muscles.muscle_objects(arm)
    assert "flexor" in drawn and "flexor" in [m.name for m in arm.data.spline_joints_osim.muscles]
    # the wrap object: a bad radius is refused, a good one is drawn on its bone
    bpy.context.scene.cursor.location = (M @ poses["r_humerus"] @ np.array([0, -0.25, 0, 1]))[:3]
    before_wrap = _state(arm)
    refusals["radius"] = refused(lambda: bpy.ops.spline_joints.add_wrap_object(
        name="elbow_wrap", kind="WrapCylinder", body="r_humerus", radius=0.0))
    assert _state(arm) == before_wrap
    assert bpy.ops.spline_joints.add_wrap_object(
        "EXEC_DEFAULT", True, name="elbow_wrap", kind="WrapCylinder", body="r_humerus", radius=0.015,
        length=0.08) == {"FINISHED"}
    assert "elbow_wrap" in muscles.wrap_objects(arm)
    # export and read back with the core
    out = os.path.join(tmp, "authored.osim")
    assert bpy.ops.spline_joints.export_osim(filepath=out) == {"FINISHED"}
    back = osim.read_osim(out)
    m = back.muscles["flexor"]
    assert m.max_isometric_force == 800.0 and abs(m.optimal_fiber_length - 0.12) < 1e-7
    bodies = [p.body for p in m.path.points]
    exported = max(float(np.abs(p.location - wanted[p.body]).max()) for p in m.path.points)
    w = back.wrap_objects["elbow_wrap"]
    assert w.body == "r_humerus" and abs(w.radius - 0.015) < 1e-7
    assert [pw.wrap_object for pw in m.path.wraps] == ["elbow_wrap"]
    # the drawn curve is the core's path of the exported model at the pose
    _pose(arm, pose)
    worst, wrap_worst, _ = _check_drawn(arm, back, back.q_from(pose))
    # undo: back to before the muscle (the wrap object's step undone first)
    name = arm.name
    bpy.ops.ed.undo()
    bpy.ops.ed.undo()
    arm = bpy.data.objects[name]
    undone = _state(arm)
    return {"refusals": refusals, "located": located, "exported": exported, "bodies": bodies,
            "worst": worst, "wrap_worst": wrap_worst,
            "undone_same": undone["text"] == placed["text"],
            "undone_objects": undone["objects"], "placed_objects": placed["objects"]}


def test_author_muscle_and_wrap_then_export(blender):
    out = blender(scenario_author_and_export, arm26=ARM26)
    r = out["refusals"]
    assert "at least two path points" in r["no points"]
    assert "femur" in r["missing body"]
    assert "max_isometric_force" in r["bad force"]
    assert "radius" in r["radius"] and "positive" in r["radius"]
    # the points, placed through float32 world coordinates, are where they were put
    assert out["located"] < 1e-6 and out["exported"] < 1e-6
    assert out["bodies"] == ["r_humerus", "r_ulna_radius_hand"]
    assert out["worst"] <= FLOAT32_TOL and out["wrap_worst"] <= FLOAT32_TOL
    assert out["undone_same"] and out["undone_objects"] == out["placed_objects"]


def _keyed(arm):
    """The armature's F-curves: ``{data path: [(frame, value), ...]}``."""
    action = arm.animation_data.action if arm.animation_data else None
    if action is None:
        return {}
    from scenes import action_fcurves

    return {fc.data_path: [tuple(k.co) for k in fc.keyframe_points]
            for fc in action_fcurves(action)}


def scenario_biceps_flexes_the_elbow(tmp, arm26):
    import bpy

    from scenes import addon_module, cancelling_at

    bridge = addon_module("addon.bridge")
    muscles = addon_module("addon.muscles")
    jobs = addon_module("addon.muscle_jobs")
    rig_mod = addon_module("core.osim_rig")
    model, arm = _imported(arm26)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    scene.frame_start, scene.frame_end = 1, 13
    start = {"r_shoulder_elev": 0.2, "r_elbow_flex": 0.4}
    for name, value in start.items():
        arm[name] = value
    prop = bridge.coordinate_path(muscles.activation_property("BICshort"))
    # an activation outside [0, 1] is refused naming the muscle, nothing keyed
    arm[muscles.activation_property("BICshort")] = 1.5
    arm.keyframe_insert(prop, frame=1)
    refusal = refused(bpy.ops.spline_joints.simulate_muscles)
    keyed = bridge.find_fcurve(arm, bridge.coordinate_path("r_elbow_flex"), 0)
    for f, a in ((1, 0.3), (13, 0.3)):
        arm[muscles.activation_property("BICshort")] = a
        arm.keyframe_insert(prop, frame=f)
    scene.frame_set(5)
    before = (_keyed(arm), {n: arm[n] for n in model.coordinate_names}, scene.frame_current,
              len(bpy.data.actions))

    EscAtHalf = cancelling_at(jobs.MuscleSimulationJob)  # the modal's Esc at half the frames
    esc = EscAtHalf(scene, arm)
    esc.simulate()                                     # what the modal's worker thread runs
    cancelled = esc.finish(scene)
    after = (_keyed(arm), {n: arm[n] for n in model.coordinate_names}, scene.frame_current,
             len(bpy.data.actions))
    full = jobs.MuscleSimulationJob(scene, arm)        # run to the end, not written
    full.simulate()
    frames = np.arange(1, 14)
    want = rig_mod.simulate_muscles(model, start, (frames - 1) / 24.0, {"BICshort": 0.3}).q
    bpy.ops.ed.undo_push(message="before the simulation")
    assert bpy.ops.spline_joints.simulate_muscles("EXEC_DEFAULT", True) == {"FINISHED"}
    got = np.array([[bridge.find_fcurve(arm, bridge.coordinate_path(n), 0).evaluate(float(f))
                     for n in model.coordinate_names] for f in frames])
    scene.frame_set(13)
    bpy.context.view_layer.update()
    worst, _, _ = _check_drawn(arm, model, model.q_from(got[-1]))
    message, name = full.finish(scene), arm.name
    bpy.ops.ed.undo()
    undone = _keyed(bpy.data.objects[name])
    return {"refused": refusal, "keyed_before": keyed is not None,
            "error": float(np.abs(got - want).max()), "elbow": got[:, 1].tolist(),
            "drawn": worst, "cancelled": [sorted(cancelled[0]), *cancelled[1:]],
            "unchanged": repr(after) == repr(before), "seen": EscAtHalf.seen,
            "fraction": full.fraction, "job_error": float(np.abs(full.result.q - want).max()),
            "message": message[2], "undone": repr(undone) == repr(before[0])}


@pytest.mark.slow
def test_activated_biceps_flexes_the_elbow(blender):
    out = blender(scenario_biceps_flexes_the_elbow, arm26=ARM26)
    assert "'BICshort'" in out["refused"] and "outside [0, 1]" in out["refused"]
    assert not out["keyed_before"]
    assert out["error"] < 1e-6  # float32 keys of the core's simulation
    assert out["elbow"][-1] - out["elbow"][0] > 0.3  # the elbow flexed
    assert out["drawn"] <= FLOAT32_TOL
    # Esc at half: nothing keyed, the coordinates and the frame as they were
    assert out["cancelled"] == [["CANCELLED"], "WARNING",
                                "Simulate Muscles cancelled: nothing was keyed"]
    assert out["unchanged"]
    assert 0.5 <= out["seen"][-1] < 1.0 and len(out["seen"]) < 12, out["seen"]
    # the job run to the end: the bar reaches the end, the result is the core's (with the
    # activation read from float32 keys)
    assert out["fraction"] == 1.0 and out["job_error"] < 1e-6
    assert "frames 1..13" in out["message"] and "6 muscles (active: BICshort)" in out["message"]
    assert out["undone"]  # one undo step takes the keys away


def scenario_demo_walk_scrubbed(tmp, demo, gait):
    import bpy

    from scenes import addon_module

    model = addon_module("core.io.osim").read_osim(gait)
    bridge = addon_module("addon.bridge")
    bpy.ops.wm.open_mainfile(filepath=demo, load_ui=False)
    arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    out = []
    for frame in (40, 150):
        bpy.context.scene.frame_set(frame)
        bpy.context.view_layer.update()
        values = bridge.read_named_values(arm, model.coordinate_names, model.default_q())
        out.append(_check_drawn(arm, model, model.q_from(values))[0])
    return out


@pytest.mark.slow
def test_demo_walk_muscles_follow_a_scrubbed_frame(blender):
    demo = Path(__file__).resolve().parents[2] / "demo_blends" / "gait2392_muscles.blend"
    for worst in blender(scenario_demo_walk_scrubbed, demo=str(demo), gait=GAIT):
        assert worst <= FLOAT32_TOL
