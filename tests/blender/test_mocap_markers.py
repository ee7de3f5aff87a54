"""Marker trials in Blender: a .trc and a .c3d imported as keyed empties (one per marker, named
as the file names them, at the file's positions on the sampled frames, hidden in gaps), the
trial's rate mapped to the scene's frames, refused files that leave nothing, and undo."""

from pathlib import Path

import numpy as np
import pytest
from scenes import printed_reports

PIPELINE = Path(__file__).resolve().parents[3] / "shared" / "data" / "osim" / "gait2392_pipeline"
WALK = str(PIPELINE / "subject01_walk1.trc")
#: rows of the walking trial checked
ROWS = (0, 37, 90, 150)
#: keyed locations are float32 (Blender's F-curves): one rounding of a value up to 1.5 m, and
#: the lab frame's 90 deg turn (float32 sin/cos of pi/2) composed once more for world positions
KEY_TOL = 2 * float(np.finfo(np.float32).eps) * 1.5

pytestmark = pytest.mark.skipif(not PIPELINE.is_dir(), reason=f"pipeline data not found at {PIPELINE}")


def _counts():
    import bpy

    kinds = ("objects", "collections", "actions", "meshes", "curves")
    return {k: len(getattr(bpy.data, k)) for k in kinds}


def labelled(collection):
    """{marker label: empty} of an imported trial's collection."""
    return {o["spline_joints_marker_label"]: o for o in collection.objects
            if "spline_joints_marker_label" in o}


def write_c3d(path, trial, rows, gaps):
    """A C3D file (float points, mm) of ``rows`` of a trial, the (row, marker) pairs in
    ``gaps`` written invalid."""
    import io
    import warnings

    import c3d

    writer = c3d.Writer(point_rate=trial.rate, point_units="mm")
    for r in rows:
        points = np.zeros((len(trial.names), 5), np.float32)
        points[:, :3] = trial.positions[r] * 1e3
        for g_row, m in gaps:
            if g_row == r:
                points[m, 3] = -1.0
        writer.add_frames((points, np.zeros((0, 0))))
    writer.set_point_labels(list(trial.names))
    buffer = io.BytesIO()
    with warnings.catch_warnings():  # the package warns that the file has no analog data
        warnings.simplefilter("ignore")
        writer.write(buffer)
    Path(path).write_bytes(buffer.getvalue())


def scenario_trc_and_c3d(tmp, walk, rows):
    import bpy

    from scenes import addon_module

    markers_io = addon_module("core.io.markers")
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = 24
    trial = markers_io.read_trc(walk)
    result, printed = printed_reports(lambda: bpy.ops.spline_joints.import_markers(filepath=walk))
    assert result == {"FINISHED"}
    collection = bpy.data.collections["subject01_walk1"]
    root = collection.objects["subject01_walk1 lab"]
    empties = sorted(o.name for o in collection.objects if o.parent == root)
    assert empties == sorted(trial.names) and len(empties) == 41
    assert scene.render.fps == 60 and (scene.frame_start, scene.frame_end) == (1, 151)
    lasi = collection.objects["L.ASIS"]
    assert lasi.empty_display_type == "SPHERE" and lasi.show_name
    errors = {}
    for row in rows:
        scene.frame_set(1 + row)
        for m in (0, 1, 20, 40):
            obj = collection.objects[trial.names[m]]
            want = trial.positions[row, m]
            errors[f"local {row} {m}"] = float(np.abs(np.array(obj.location) - want).max())
            world = np.array(obj.matrix_world.translation)
            errors[f"world {row} {m}"] = float(np.abs(world - [want[0], -want[2], want[1]]).max())
            assert not obj.hide_viewport

    # A C3D of 30 rows with a gap in two markers, Z up, at the scene's own rate (60 fps since
    # the .trc) from frame 101: the gap's rows are hidden, nothing keyed there.
    path = Path(tmp) / "walk_gaps.c3d"
    write_c3d(path, trial, range(30), [(r, m) for r in range(10, 15) for m in (3, 7)])
    scene.frame_start = 101
    result, printed_c3d = printed_reports(lambda: bpy.ops.spline_joints.import_markers(
        filepath=str(path), up_axis="Z", use_trial_timing=False))
    assert result == {"FINISHED"}
    assert scene.render.fps == 60  # kept: the scene's rate is whatever it was
    gaps = bpy.data.collections["walk_gaps"]
    assert tuple(gaps.objects["walk_gaps lab"].rotation_euler) == (0.0, 0.0, 0.0)
    gapped = labelled(gaps)[trial.names[3]]
    keys = addon_module("addon.bridge").read_fcurve_keys(gapped, "location", 0)
    assert len(keys) == 25
    np.testing.assert_allclose(keys[:, 0], 101 + np.delete(np.arange(30), range(10, 15)),
                               rtol=0, atol=1e-4)
    seen = {}
    for row in (5, 10, 12, 14, 15):
        scene.frame_set(101 + row)
        seen[row] = (bool(gapped.hide_viewport), bool(gapped.hide_render),
                     bool(labelled(gaps)[trial.names[4]].hide_viewport))
        if row in (5, 15):
            local = np.array(gapped.location)
            errors[f"c3d {row}"] = float(np.abs(local - trial.positions[row, 3]).max())
    return {"errors": errors, "report": printed, "report_c3d": printed_c3d,
            "seen": {str(k): v for k, v in seen.items()}}


@pytest.mark.slow
def test_trc_and_c3d_markers_keyed_with_gaps(blender):
    out = blender(scenario_trc_and_c3d, walk=WALK, rows=ROWS)
    for what, err in out["errors"].items():
        assert err <= KEY_TOL, (what, err)
    assert "Imported 41 markers of subject01_walk1.trc (151 rows at 60 Hz, mm)" in out["report"]
    assert "frames 1..151 at 60 fps" in out["report"]
    assert "2 markers have gaps, hidden there" in out["report_c3d"]
    assert out["seen"] == {"5": [False, False, False], "10": [True, True, False],
                           "12": [True, True, False], "14": [True, True, False],
                           "15": [False, False, False]}


def scenario_scene_rate(tmp, walk):
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start = 24, 10
    assert bpy.ops.spline_joints.import_markers(filepath=walk, use_trial_timing=False) == {"FINISHED"}
    obj = bpy.data.objects["R.ASIS"]
    from scenes import addon_module

    keys = addon_module("addon.bridge").read_fcurve_keys(obj, "location", 1)
    return {"fps": scene.render.fps, "frames": keys[:, 0].tolist()}


def test_scene_rate_keeps_every_row(blender):
    out = blender(scenario_scene_rate, walk=WALK)
    assert out["fps"] == 24
    # 60 Hz rows at 24 fps: 0.4 frames apart from frame 10, none dropped
    np.testing.assert_allclose(out["frames"], 10 + 0.4 * np.arange(151), rtol=0, atol=1e-4)


def scenario_refusals_and_undo(tmp, walk):
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    text = Path(walk).read_text().splitlines()
    bad = Path(tmp) / "ragged.trc"
    bad.write_text("\n".join(text[:10] + [text[10].rsplit("\t", 4)[0]] + text[11:]) + "\n")
    messages = {}
    before = _counts()
    fps = bpy.context.scene.render.fps
    for name, path in (("ragged", bad), ("missing", Path(tmp) / "none.trc")):
        try:
            bpy.ops.spline_joints.import_markers(filepath=str(path))
            messages[name] = "FINISHED"
        except RuntimeError as exc:
            messages[name] = str(exc)
        assert _counts() == before and bpy.context.scene.render.fps == fps, name

    bpy.ops.ed.undo_push(message="before import")
    assert bpy.ops.spline_joints.import_markers("EXEC_DEFAULT", True, filepath=walk) == {"FINISHED"}
    after = len(bpy.data.objects)
    bpy.ops.ed.undo()
    undone = len(bpy.data.objects)
    return {"messages": messages, "after": after, "undone": undone, "before": before["objects"]}


def test_refused_files_leave_nothing_and_undo(blender):
    out = blender(scenario_refusals_and_undo, walk=WALK)
    assert "Nothing imported" in out["messages"]["ragged"] and "ragged.trc" in out["messages"]["ragged"]
    assert "none.trc" in out["messages"]["missing"]
    assert out["after"] == out["before"] + 42 and out["undone"] == out["before"]


def scenario_cancelled_jobs_write_nothing(tmp, walk, loads):
    import bpy

    from scenes import addon_module

    mocap = addon_module("addon.mocap")
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    before = _counts(), scene.render.fps, scene.frame_end
    out = {}
    for name, job in (("markers", mocap.MarkerImportJob(scene, walk)),
                      ("forces", mocap.ForceArrowsJob(scene, loads, 1e-3))):
        job.cancel()                                   # what Esc does while the worker runs
        job.simulate()
        status, level, message = job.finish(scene)
        out[name] = [sorted(status), level, message, job.fraction]
        assert (_counts(), scene.render.fps, scene.frame_end) == before, name
    job = mocap.MarkerImportJob(scene, walk)           # run to the end: the bar reaches the end
    job.simulate()
    out["fraction"] = job.fraction
    return out


def test_cancelled_jobs_write_nothing(blender):
    out = blender(scenario_cancelled_jobs_write_nothing, walk=WALK,
                  loads=str(PIPELINE / "subject01_walk1_grf.xml"))
    assert out["markers"][:3] == [["CANCELLED"], "WARNING", "Marker import cancelled: nothing was imported"]
    assert out["forces"][:3] == [["CANCELLED"], "WARNING", "Drawing forces cancelled: nothing was drawn"]
    assert out["fraction"] > 0.99
