"""``gait2392_mocap.blend``: OpenSim's gait2392 motion-capture example run with the add-on's
operators, as a user would from the Motion Capture panel: the subject scaled from the static
trial (``spline_joints.scale_model``, the scaled model with its placed markers imported), the
walking trial's markers imported (``spline_joints.import_markers``), the scaled model solved
through them (``spline_joints.inverse_kinematics``) and the ground reaction forces drawn as
arrows (``spline_joints.draw_forces``). The trial's markers (empties) also show a small
sphere, instanced from the hidden collection ``Marker sphere``, so that they render; the
model's own markers are the pink spheres on its bones. A ground plane lies under the feet, the
camera frames the walk, and the text ``CREDITS`` gives the data's authors and licence (CC BY
3.0). The example's files are read from :data:`PIPELINE`; the tools' outputs go to a
temporary folder."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np

from scripts import blender_kit as kit
from scripts.demos.common import VIEWS, save
from scripts.demos.gait2392_walk import OSIM_DATA

#: OpenSim's gait2392 pipeline example (see shared/data/osim/README.md)
PIPELINE = OSIM_DATA / "gait2392_pipeline"
#: radius (m) and colour of the spheres that the trial's markers show
TRIAL_MARKER_RADIUS = 0.012
TRIAL_MARKER_RGBA = (0.1, 0.45, 0.95, 1.0)
MOCAP_CREDITS = """gait2392_mocap.blend: OpenSim's gait2392 motion-capture pipeline in Blender.

Model, bone meshes, marker set, static and walking marker trials, ground reaction forces and
the tools' setup files: opensim-org/opensim-models, Models/Gait2392_Simbody and
Pipelines/Gait2392_Simbody (subject01), by Delp, Loan, Hoy, Zajac, Topp, Rosen, Thelen,
Anderson and Seth; joints after Delp et al. (1990, IEEE TBME 37:757-767); planar knee after
Yamaguchi & Zajac (1989, J. Biomech. 21:1-10). Licensed CC BY 3.0
(https://creativecommons.org/licenses/by/3.0/). Scaled, solved and drawn by Spline Joints'
Scale, Inverse Kinematics and Draw Forces operators.
"""


def _pipeline_folder(tmp: Path) -> Path:
    """The example's files in ``tmp`` with the generic model under the name its Scale setup
    gives it, beside its meshes."""
    folder = tmp / "pipe"
    shutil.copytree(PIPELINE, folder)
    shutil.copy(OSIM_DATA / "gait2392_thelen2003muscle.osim", folder / "gait2392_simbody.osim")
    (folder / "Geometry").symlink_to(OSIM_DATA / "Geometry")
    return folder


def _marker_spheres(scene, collection) -> None:
    """Let every trial marker (empty) of ``collection`` instance one small sphere, kept in a
    collection ``Marker sphere`` that is not linked to the scene."""
    import bpy

    bridge = kit.addon_module("addon.bridge")
    display = kit.addon_module("core.display")
    spheres = bpy.data.collections.new("Marker sphere")
    mesh = bridge.write_mesh_data("Marker sphere", *display.uv_sphere(np.full(3, TRIAL_MARKER_RADIUS), 12, 6),
                                  smooth=True)
    mesh.materials.append(bridge.ensure_material("SJ trial marker", TRIAL_MARKER_RGBA))
    bridge.new_object("Marker sphere", mesh, spheres)
    for obj in collection.objects:
        if "spline_joints_marker_label" in obj:
            obj.instance_type, obj.instance_collection = "COLLECTION", spheres


def build_gait_mocap(out: Path) -> None:
    """Scale, markers, inverse kinematics and force arrows of the gait2392 example."""
    import bpy

    if not PIPELINE.is_dir():
        raise SystemExit(f"error: {PIPELINE} not found: gait2392_mocap needs the shipped OpenSim data")
    scene = kit.new_scene(60, 151, "gait2392_mocap")
    settings = scene.spline_joints_mocap
    with tempfile.TemporaryDirectory(prefix="sj_mocap_") as tmp:
        folder = _pipeline_folder(Path(tmp))
        settings.scale_setup = str(folder / "subject01_Setup_Scale.xml")
        kit.check(bpy.ops.spline_joints.scale_model(), "scale_model")
        arm = bpy.context.object
        settings.marker_file = str(folder / "subject01_walk1.trc")
        kit.check(bpy.ops.spline_joints.import_markers(filepath=settings.marker_file), "import_markers")
        bpy.context.view_layer.objects.active = arm
        settings.ik_setup = str(folder / "subject01_Setup_IK.xml")
        kit.check(bpy.ops.spline_joints.inverse_kinematics(), "inverse_kinematics")
        settings.loads_file = str(folder / "subject01_walk1_grf.xml")
        kit.check(bpy.ops.spline_joints.draw_forces(), "draw_forces")
        for key in ("marker_file", "scale_setup", "ik_setup", "loads_file"):
            setattr(settings, key, "")  # the temporary folder is gone once the file is saved
    _marker_spheres(scene, bpy.data.collections["subject01_walk1"])
    pts = kit.visible_points(scene, range(scene.frame_start, scene.frame_end + 1, 10))
    quad = kit.ground_under(scene, pts, 0.2)  # the ground reaches 0.2 m beyond the feet
    kit.setup_render(scene, np.vstack([pts, quad]), VIEWS["gait2392_mocap"], margin=1.04)
    credits = bpy.data.texts.new("CREDITS")
    credits.write(MOCAP_CREDITS)
    save(scene, out / "gait2392_mocap.blend")
