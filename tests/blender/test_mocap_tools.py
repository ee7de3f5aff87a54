"""The motion-capture tools in Blender on OpenSim's gait2392 example: Scale imports the scaled
subject (its markers placed), Inverse Kinematics keys its coordinates so that the model walks
through the imported trial's markers with the marker errors it reports, refusals leave the
scene unchanged, and undo takes the keys back."""

import shutil
from pathlib import Path

import numpy as np
import pytest
from scenes import printed_reports

OSIM = Path(__file__).resolve().parents[3] / "shared" / "data" / "osim"
PIPELINE = OSIM / "gait2392_pipeline"
#: keyed coordinates are float32: one rounding of values up to ~1.6 rad or m
KEY_TOL = 2 * float(np.finfo(np.float32).eps) * 1.6
#: world marker positions through float32 bone and object matrices (test_opensim_import's
#: allowance: ~6 composed float32 transforms with entries up to ~2 m), in mm
WORLD_TOL_MM = 1e3 * 4 * float(np.finfo(np.float32).eps) * (2.0 + 1.0)

pytestmark = pytest.mark.skipif(not PIPELINE.is_dir(), reason=f"pipeline data not found at {PIPELINE}")


def pipeline_folder(tmp):
    """The example's files in ``tmp``/pipe, with the generic model under the name the Scale
    setup gives it and its meshes (shared/data/osim/README.md)."""
    folder = Path(tmp) / "pipe"
    shutil.copytree(PIPELINE, folder)
    shutil.copy(OSIM / "gait2392_thelen2003muscle.osim", folder / "gait2392_simbody.osim")
    (folder / "Geometry").symlink_to(OSIM / "Geometry")
    return folder


def scaled_subject(tmp):
    """An empty scene with the example's subject scaled and imported by the Scale operator:
    (pipeline folder, scene, the Motion Capture settings, the armature, the Scale report)."""
    import bpy

    folder = pipeline_folder(tmp)
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    settings = scene.spline_joints_mocap
    settings.scale_setup = str(folder / "subject01_Setup_Scale.xml")
    result, report = printed_reports(lambda: bpy.ops.spline_joints.scale_model())
    assert result == {"FINISHED"}
    return folder, scene, settings, bpy.context.object, report


def _counts():
    import bpy

    kinds = ("objects", "collections", "actions", "meshes", "armatures", "materials")
    return {k: len(getattr(bpy.data, k)) for k in kinds}


def scenario_scale_and_ik(tmp, rows):
    import bpy

    from scenes import addon_module

    osim = addon_module("core.io.osim")
    markers_io = addon_module("core.io.markers")
    ik = addon_module("core.mocap.ik")
    folder, scene, settings, arm, scale_report = scaled_subject(tmp)
    assert arm.name == "subject01" and (folder / "subject01_simbody.osim").is_file()
    spheres = {o["spline_joints_model_marker"]: o for o in arm.children
               if "spline_joints_model_marker" in o}
    placed = osim.read_osim(folder / "subject01_simbody.osim")
    assert sorted(spheres) == sorted(placed.markers)

    settings.marker_file = str(folder / "subject01_walk1.trc")
    assert bpy.ops.spline_joints.import_markers(filepath=settings.marker_file) == {"FINISHED"}
    empties = {o["spline_joints_marker_label"]: o for o in bpy.data.collections["subject01_walk1"].objects
               if "spline_joints_marker_label" in o}
    bpy.context.view_layer.objects.active = arm
    settings.ik_setup = str(folder / "subject01_Setup_IK.xml")
    result, ik_report = printed_reports(lambda: bpy.ops.spline_joints.inverse_kinematics())
    assert result == {"FINISHED"}

    # The keys are the core's solve of the same model and trial.
    setup = ik.read_ik_setup(settings.ik_setup)
    trial = markers_io.read_trc(settings.marker_file)
    core = ik.solve_ik(placed, trial, setup.tasks, time_range=setup.time_range,
                       accuracy=setup.accuracy)
    names = list(placed.coordinate_names)
    key_error, rms_error, world_rms = 0.0, 0.0, {}
    for k in rows:
        frame = 1 + int(core.frames[k])        # trial row r is on frame 1 + r
        scene.frame_set(frame)
        bpy.context.view_layer.update()
        keyed = np.array([arm[n] for n in names])
        key_error = max(key_error, float(np.abs(keyed - core.q[k]).max()))
        rms_error = max(rms_error, abs(arm["ik_marker_error_rms_mm"] - 1e3 * core.errors[k, 1]))
        # the posed model's spheres against the trial's empties, in the scene
        d = [np.array(spheres[m].matrix_world.translation) - np.array(empties[m].matrix_world.translation)
             for m in core.markers]
        world_rms[frame] = (float(1e3 * np.sqrt(np.mean(np.sum(np.square(d), axis=1)))),
                            float(1e3 * core.errors[k, 1]))
    return {"scale_report": scale_report, "ik_report": ik_report, "key_error": key_error,
            "rms_error": rms_error, "world_rms": world_rms, "frames": len(core.time),
            "range": [scene.frame_start, scene.frame_end], "fps": scene.render.fps}


@pytest.mark.slow
def test_scale_then_ik_walks_through_the_markers(blender):
    out = blender(scenario_scale_and_ik, rows=[0, 40, 120])
    assert "Scaled 'subject01'" in out["scale_report"] and "imported as 'subject01'" in out["scale_report"]
    assert "subject01_simbody.osim" in out["scale_report"]
    assert f"Inverse Kinematics of {out['frames']} frames" in out["ik_report"] and out["frames"] == 121
    assert out["key_error"] <= KEY_TOL, out["key_error"]
    assert out["rms_error"] <= 1e3 * KEY_TOL * 0.1, out["rms_error"]  # values ~20 mm
    for frame, (seen, reported) in out["world_rms"].items():
        assert abs(seen - reported) <= WORLD_TOL_MM, (frame, seen, reported)
    assert out["fps"] == 60 and out["range"] == [31, 151]


def scenario_refusals_and_undo(tmp):
    import bpy

    folder = pipeline_folder(tmp)
    bpy.ops.wm.read_homefile(use_empty=True)
    settings = bpy.context.scene.spline_joints_mocap
    messages = {}
    # Scale with a setup that writes no model: refused before anything runs or is written.
    text = (folder / "subject01_Setup_Scale.xml").read_text()
    for name in ("subject01_scaledOnly.osim", "subject01_simbody.osim"):
        text = text.replace(f"<output_model_file> {name} </output_model_file>",
                            "<output_model_file> Unassigned </output_model_file>")
    (folder / "no_output.xml").write_text(text)
    settings.scale_setup = str(folder / "no_output.xml")
    before = _counts()
    try:
        bpy.ops.spline_joints.scale_model()
    except RuntimeError as exc:
        messages["scale"] = str(exc)
    assert _counts() == before and not (folder / "subject01_scaleSet_applied.xml").exists()

    settings.scale_setup = str(folder / "subject01_Setup_Scale.xml")
    assert bpy.ops.spline_joints.scale_model() == {"FINISHED"}
    arm = bpy.context.object
    # IK on a trial that lacks the markers the setup weighs most: refused, nothing keyed.
    trial = (folder / "subject01_walk1.trc").read_text().replace("R.ASIS", "R.ASIS.x")
    (folder / "renamed.trc").write_text(trial)
    settings.ik_setup = str(folder / "subject01_Setup_IK.xml")
    for name, marker_file in (("missing trial", str(folder / "none.trc")),
                              ("no setup", "")):
        settings.marker_file = marker_file
        if name == "no setup":
            settings.ik_setup = ""
        before = _counts()
        try:
            bpy.ops.spline_joints.inverse_kinematics()
            messages[name] = "FINISHED"
        except RuntimeError as exc:
            messages[name] = str(exc)
        assert _counts() == before and arm.animation_data is None, name

    settings.ik_setup = str(folder / "subject01_Setup_IK.xml")
    settings.marker_file = str(folder / "renamed.trc")
    # Esc while the worker solves: the job stops at its next frame and writes nothing.
    from scenes import addon_module

    job = addon_module("addon.mocap").IKJob(bpy.context.scene, arm, settings.ik_setup,
                                            settings.marker_file)
    job.cancel()
    job.simulate()
    before = _counts()
    cancelled = list(job.finish(bpy.context.scene))
    assert _counts() == before and arm.animation_data is None
    messages["cancelled"] = [sorted(cancelled[0]), *cancelled[1:]]
    bpy.ops.ed.undo_push(message="before IK")
    result, printed = printed_reports(
        lambda: bpy.ops.spline_joints.inverse_kinematics("EXEC_DEFAULT", True))
    assert result == {"FINISHED"}
    keyed = bpy.data.objects["subject01"].animation_data.action is not None
    bpy.ops.ed.undo()
    arm = bpy.data.objects["subject01"]
    undone = arm.animation_data is None or arm.animation_data.action is None
    return {"messages": messages, "keyed": keyed, "undone": undone, "renamed_report": printed}


def test_refusals_leave_the_scene_and_undo(blender):
    out = blender(scenario_refusals_and_undo)
    m = out["messages"]
    assert "Scale failed, nothing imported" in m["scale"] and "output_model_file" in m["scale"]
    assert "none.trc" in m["missing trial"] and "nothing keyed" in m["missing trial"]
    assert m["cancelled"] == [["CANCELLED"], "WARNING", "Inverse Kinematics cancelled: nothing was keyed"]
    assert "choose the Inverse Kinematics setup file" in m["no setup"]
    # a marker of the setup missing from the trial is skipped with a warning, as OpenSim does
    assert "R.ASIS" in out["renamed_report"]
    assert out["keyed"] and out["undone"]


def scenario_inverse_dynamics(tmp, frames):
    import bpy

    from scenes import addon_module

    loads_io = addon_module("core.io.external_loads")
    id_mod = addon_module("core.mocap.inverse_dynamics")
    mocap = addon_module("addon.mocap")
    osim = addon_module("core.io.osim")
    folder, scene, settings, arm, _ = scaled_subject(tmp)
    settings.marker_file = str(folder / "subject01_walk1.trc")
    assert bpy.ops.spline_joints.import_markers(filepath=settings.marker_file) == {"FINISHED"}
    bpy.context.view_layer.objects.active = arm
    settings.ik_setup = str(folder / "subject01_Setup_IK.xml")
    assert bpy.ops.spline_joints.inverse_kinematics() == {"FINISHED"}

    # Loads on a body the model lacks: refused, nothing keyed or written.
    text = (folder / "subject01_walk1_grf.xml").read_text()
    (folder / "bad_grf.xml").write_text(text.replace("<applied_to_body> calcn_r", "<applied_to_body> calcn_x"))
    setup = (folder / "subject01_Setup_InverseDynamics.xml").read_text()
    (folder / "bad_id.xml").write_text(setup.replace("subject01_walk1_grf.xml", "bad_grf.xml"))
    settings.id_setup = str(folder / "bad_id.xml")
    keys_before = set(arm.keys())
    try:
        bpy.ops.spline_joints.inverse_dynamics()
        refused = "FINISHED"
    except RuntimeError as exc:
        refused = str(exc)
    unchanged = set(arm.keys()) == keys_before and not (folder / "ResultsInverseDynamics").exists()

    settings.id_setup = str(folder / "subject01_Setup_InverseDynamics.xml")
    bpy.ops.ed.undo_push(message="before ID")
    result, printed = printed_reports(lambda: bpy.ops.spline_joints.inverse_dynamics("EXEC_DEFAULT", True))
    assert result == {"FINISHED"}
    arm = bpy.data.objects["subject01"]
    # the same solve in the core, on the motion the keys hold
    model = osim.read_osim(folder / "subject01_simbody.osim")
    motion = mocap.armature_motion(arm, model.coordinate_names, 1.0, 60.0)
    s = id_mod.read_inverse_dynamics_setup(settings.id_setup)
    core = id_mod.inverse_dynamics(model, motion, loads_io.read_external_loads(s.external_loads_file),
                                   time_range=s.time_range, lowpass_cutoff=s.lowpass_cutoff,
                                   forces_to_exclude=s.forces_to_exclude)
    worst = 0.0
    for row in frames:
        scene.frame_set(int(round(1 + 60.0 * core.time[row])))
        for name, value in zip(core.names, core.forces[row]):
            worst = max(worst, abs(arm[name] - value) / max(1.0, abs(value)))
    sto = folder / "ResultsInverseDynamics" / "InverseDynamicsOutput.sto"
    png = sto.with_suffix(".png")
    images = [i.name for i in bpy.data.images]
    bpy.ops.ed.undo()
    undone = "knee_angle_r_moment" not in bpy.data.objects["subject01"].keys()
    return {"refused": refused, "unchanged": unchanged, "report": printed, "worst": worst,
            "sto": sto.is_file(), "png": png.read_bytes()[:8].hex() if png.is_file() else "",
            "images": images, "undone": undone, "rows": len(core.time)}


@pytest.mark.slow
def test_inverse_dynamics_keys_moments_and_plots(blender):
    out = blender(scenario_inverse_dynamics, frames=[0, 30, 70])
    assert "Inverse Dynamics failed, nothing keyed or written" in out["refused"]
    assert "calcn_x" in out["refused"] and out["unchanged"]
    assert f"Inverse Dynamics of {out['rows']} frames" in out["report"]
    assert "wrote InverseDynamicsOutput.sto and InverseDynamicsOutput.png" in out["report"]
    # keyed float32 values: one rounding, relative to the value (or 1 N m)
    assert out["worst"] <= 2 * float(np.finfo(np.float32).eps), out["worst"]
    assert out["sto"] and out["png"] == "89504e470d0a1a0a"
    assert "InverseDynamicsOutput.png" in out["images"]
    assert out["undone"]


def scenario_fitted_knees(tmp):
    import re

    import bpy

    folder, scene, settings, arm, _ = scaled_subject(tmp)
    settings.marker_file = str(folder / "subject01_walk1.trc")
    assert bpy.ops.spline_joints.import_markers(filepath=settings.marker_file) == {"FINISHED"}
    settings.ik_setup = str(folder / "subject01_Setup_IK.xml")
    settings.id_setup = str(folder / "subject01_Setup_InverseDynamics.xml")
    runs = {}
    for knees in ("exact", "fitted"):
        if knees == "fitted":
            for joint in ("knee_r", "knee_l"):
                assert bpy.ops.spline_joints.fit_osim_joint(joint=joint) == {"FINISHED"}
        bpy.context.view_layer.objects.active = arm
        result, ik_report = printed_reports(lambda: bpy.ops.spline_joints.inverse_kinematics())
        assert result == {"FINISHED"}
        result, id_report = printed_reports(lambda: bpy.ops.spline_joints.inverse_dynamics())
        assert result == {"FINISHED"}
        scene.frame_set(60)
        rms = float(re.search(r"marker error RMS ([0-9.]+) mm on average", ik_report).group(1))
        runs[knees] = {"rms_mm": rms, "knee": float(arm["knee_angle_r_moment"]), "id": id_report}
    return runs


@pytest.mark.slow
def test_the_tools_run_on_fitted_spline_knees(blender):
    """IK and ID of the walk with both knees replaced by spline joints fitted to them: the
    marker errors stay those of the exact knees (the fits follow the knee to ~0.1 mm) and the
    knee moment stays close; the difference itself is a result, not a tolerance."""
    out = blender(scenario_fitted_knees)
    assert abs(out["fitted"]["rms_mm"] - out["exact"]["rms_mm"]) < 0.2, out
    assert "Inverse Dynamics of" in out["fitted"]["id"]
    assert abs(out["fitted"]["knee"] - out["exact"]["knee"]) < 0.05 * max(1.0, abs(out["exact"]["knee"])), out
