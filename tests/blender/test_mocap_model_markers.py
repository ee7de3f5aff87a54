"""A model's markers in Blender: the OpenSim import puts a sphere per marker on its bone, posing
the model carries the spheres to the markers' world positions, and a sphere moved (or parented
to another bone) moves the marker that the OpenSim export writes; unmoved markers are written
exactly as they were read."""

from pathlib import Path

import numpy as np
import pytest
from scenes import printed_reports

OSIM = Path(__file__).resolve().parents[3] / "shared" / "data" / "osim"
GAIT = str(OSIM / "gait2392_thelen2003muscle.osim")
MARKER_SET = str(OSIM / "gait2392_pipeline" / "gait2392_Scale_MarkerSet.xml")
#: world positions through float32 bone and object matrices (see test_opensim_import's
#: FLOAT32_TOL: ~6 composed float32 transforms with entries up to ~2 m)
FLOAT32_TOL = 4 * float(np.finfo(np.float32).eps) * (2.0 + 1.0)

pytestmark = pytest.mark.skipif(not OSIM.is_dir(), reason=f"OpenSim data not found at {OSIM}")


def scenario_model_markers(tmp, gait, marker_set):
    import bpy

    from scenes import addon_module

    osim = addon_module("core.io.osim")
    markers_io = addon_module("core.io.markers")
    export = addon_module("core.io.osim_export")
    path = Path(tmp) / "gait_markers.osim"
    export.write_osim(path, osim.read_osim(gait).with_markers(markers_io.read_marker_set(marker_set)))
    model = osim.read_osim(path)
    bpy.ops.wm.read_homefile(use_empty=True)
    result, printed = printed_reports(lambda: bpy.ops.spline_joints.import_osim(
        filepath=str(path), mesh_folder=str(Path(gait).parent / "Geometry")))
    assert result == {"FINISHED"}
    arm = bpy.context.object
    spheres = {o["spline_joints_model_marker"]: o for o in arm.children
               if "spline_joints_model_marker" in o}
    assert sorted(spheres) == sorted(model.markers)
    assert all(spheres[n].parent_bone == m.body for n, m in model.markers.items())

    # Posed: every sphere sits on its marker's world position (armature turned +90 deg about X).
    coords = list(model.coordinate_names)
    q = model.default_q()
    for name, value in (("knee_angle_r", -1.0), ("hip_flexion_r", 0.7), ("pelvis_tx", 0.3),
                        ("ankle_angle_l", 0.3)):
        q[coords.index(name)] = value
        arm[name] = value
    arm.update_tag()
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    Rx = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])
    want = model.marker_positions(q) @ Rx.T
    names = list(model.markers)
    worst = max(float(np.abs(np.array(spheres[n].matrix_world.translation) - want[k]).max())
                for k, n in enumerate(names))

    # Edited: one sphere moved 2 cm along its bone's x axis, another parented to the pelvis.
    moved, reparented = spheres["R.Knee.Lat"], spheres["Sternum"]
    moved.location.x += 0.02
    world = reparented.matrix_world.copy()
    reparented.parent_bone = "pelvis"
    reparented.matrix_world = world
    bpy.context.view_layer.update()
    out = Path(tmp) / "edited.osim"
    assert bpy.ops.spline_joints.export_osim(filepath=str(out)) == {"FINISHED"}
    edited = osim.read_osim(out)
    knee = model.markers["R.Knee.Lat"]
    rest = np.array(arm.data.bones[knee.body].matrix_local)
    rig = addon_module("addon.documents").osim_rig(arm.data)
    b = rig.bodies.index(knee.body)
    body_x = np.linalg.inv(rig.default_poses[b])[:3, :3] @ rest[:3, 0]   # bone x in the body
    moved_by = edited.markers["R.Knee.Lat"].location - knee.location
    sternum_world = edited.marker_positions(q, ["Sternum"])[0]
    same = [n for n in names if n not in ("R.Knee.Lat", "Sternum")
            and np.array_equal(edited.markers[n].location, model.markers[n].location)
            and edited.markers[n].body == model.markers[n].body]
    return {"worst": worst, "report": printed, "moved_by": moved_by.tolist(),
            "expected_move": (0.02 * body_x).tolist(), "sternum_body": edited.markers["Sternum"].body,
            "sternum_error": float(np.abs(sternum_world - model.marker_positions(q, ["Sternum"])[0]).max()),
            "same": len(same), "count": len(names)}


def test_model_markers_follow_bones_and_edits_export(blender):
    out = blender(scenario_model_markers, gait=GAIT, marker_set=MARKER_SET)
    assert out["worst"] < FLOAT32_TOL, out["worst"]
    assert ", 39 markers" in out["report"]
    # float32 object channels and bone matrices: ~1e-7 m on a 2 cm move
    np.testing.assert_allclose(out["moved_by"], out["expected_move"], rtol=0, atol=1e-6)
    assert out["sternum_body"] == "pelvis" and out["sternum_error"] < 1e-5
    assert out["same"] == out["count"] - 2
