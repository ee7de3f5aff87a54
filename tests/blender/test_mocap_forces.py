"""Ground reaction forces in Blender: each ExternalForce of gait2392's walking trial drawn as an
arrow keyed on every frame at its centre of pressure, pointing along the force, as long as the
force times the root's metres per newton (a driver: changing it resizes the arrows); loads the
arrows cannot show are refused with nothing left behind; undo."""

import shutil
from pathlib import Path

import numpy as np
import pytest
from scenes import printed_reports

PIPELINE = Path(__file__).resolve().parents[3] / "shared" / "data" / "osim" / "gait2392_pipeline"
#: float32 keys and matrices: one rounding of values up to ~1 m (points) and of the ~0.8 m
#: arrow (800 N at 1 mm/N), composed with the lab frame's float32 turn
TOL = 4 * float(np.finfo(np.float32).eps) * 1.0

pytestmark = pytest.mark.skipif(not PIPELINE.is_dir(), reason=f"pipeline data not found at {PIPELINE}")


def scenario_arrows(tmp, frames):
    import bpy

    from scenes import addon_module

    loads_io = addon_module("core.io.external_loads")
    folder = Path(tmp) / "pipe"
    shutil.copytree(PIPELINE, folder)
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    settings = scene.spline_joints_mocap
    assert bpy.ops.spline_joints.import_markers(filepath=str(folder / "subject01_walk1.trc")) == {"FINISHED"}
    settings.loads_file = str(folder / "subject01_walk1_grf.xml")
    result, printed = printed_reports(lambda: bpy.ops.spline_joints.draw_forces())
    assert result == {"FINISHED"}
    loads = loads_io.read_external_loads(settings.loads_file)
    collection = bpy.data.collections["subject01_walk1_grf"]
    Rx = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])
    errors, lengths = {}, {}
    for frame in frames:
        scene.frame_set(frame)
        t = (frame - 1) / 60.0
        for f in loads.forces:
            arrow = collection.objects[f.name]
            point = np.array([np.interp(t, loads.data.time, loads.data.values[:, c])
                              for c in f.point_columns])
            force = np.array([np.interp(t, loads.data.time, loads.data.values[:, c])
                              for c in f.force_columns])
            M = np.array(arrow.matrix_world)
            errors[f"cop {frame} {f.name}"] = float(np.abs(M[:3, 3] - Rx @ point).max())
            errors[f"arrow {frame} {f.name}"] = float(np.abs(M[:3, 2] - Rx @ force * 1e-3).max())
            lengths[f"{frame} {f.name}"] = float(np.linalg.norm(force))
    root = collection.objects["subject01_walk1_grf lab"]
    root["metres_per_newton"] = 2e-3
    scene.frame_set(frames[0])
    arrow = collection.objects[loads.forces[0].name]
    doubled = float(np.linalg.norm(np.array(arrow.matrix_world)[:3, 2]))
    return {"errors": errors, "lengths": lengths, "report": printed, "doubled": doubled,
            "names": sorted(o.name for o in collection.objects)}


@pytest.mark.slow
def test_force_arrows_at_the_centre_of_pressure(blender):
    out = blender(scenario_arrows, frames=[31, 60, 95])
    for what, err in out["errors"].items():
        assert err <= TOL, (what, err)
    assert out["names"] == ["ExternalForce_1", "ExternalForce_2", "subject01_walk1_grf lab"]
    assert "Drew 2 forces of subject01_walk1_grf.xml" in out["report"]
    assert out["doubled"] == pytest.approx(2e-3 * out["lengths"]["31 ExternalForce_1"], rel=1e-6)


def scenario_refusal_and_undo(tmp):
    import bpy

    folder = Path(tmp) / "pipe"
    shutil.copytree(PIPELINE, folder)
    bpy.ops.wm.read_homefile(use_empty=True)
    settings = bpy.context.scene.spline_joints_mocap
    text = (folder / "subject01_walk1_grf.xml").read_text()
    (folder / "in_body.xml").write_text(text.replace(
        "<point_expressed_in_body> ground </point_expressed_in_body>",
        "<point_expressed_in_body> calcn_r </point_expressed_in_body>", 1))
    settings.loads_file = str(folder / "in_body.xml")
    before = len(bpy.data.objects), len(bpy.data.collections), len(bpy.data.meshes)
    try:
        bpy.ops.spline_joints.draw_forces()
        message = "FINISHED"
    except RuntimeError as exc:
        message = str(exc)
    after = len(bpy.data.objects), len(bpy.data.collections), len(bpy.data.meshes)
    settings.loads_file = str(folder / "subject01_walk1_grf.xml")
    bpy.ops.ed.undo_push(message="before forces")
    assert bpy.ops.spline_joints.draw_forces("EXEC_DEFAULT", True) == {"FINISHED"}
    drawn = len(bpy.data.objects)
    bpy.ops.ed.undo()
    return {"message": message, "unchanged": before == after, "drawn": drawn,
            "undone": len(bpy.data.objects), "before": before[0]}


def test_refused_loads_leave_nothing_and_undo(blender):
    out = blender(scenario_refusal_and_undo)
    assert "No forces drawn" in out["message"] and "'calcn_r'" in out["message"]
    assert out["unchanged"]
    assert out["drawn"] == out["before"] + 3 and out["undone"] == out["before"]
