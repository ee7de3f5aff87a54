"""``gait2392_walk.blend``: the OpenSim gait2392 model with its bone meshes
(``spline_joints.import_osim``) imported twice, :data:`GAIT_SPACING` apart across the walk,
both keyed with the walking motion (``spline_joints.import_osim_motion``); the second with
knee_r and knee_l replaced by fitted spline joints (``spline_joints.fit_osim_joint``). A label
follows each pelvis, a ground plane lies under the feet, the camera frames the whole walk,
and the text ``CREDITS`` gives the model's authors and licence (CC BY 3.0). The model,
meshes and motion are read from :data:`OSIM_DATA`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scripts import blender_kit as kit
from scripts.demos.common import VIEWS, save

#: the shipped OpenSim models, meshes and motions (see the README there)
OSIM_DATA = kit.ROOT.parent / "shared" / "data" / "osim"
#: distance (m) between the two walking models, across the direction of the walk (world y)
GAIT_SPACING = 0.8
GAIT_CREDITS = """gait2392_walk.blend: the OpenSim gait2392 model walking, twice.

Model, bone meshes and walking motion: gait2392 (opensim-org/opensim-models,
Models/Gait2392_Simbody/gait2392_thelen2003muscle.osim, its Geometry folder, and
Pipelines/Gait2392_Simbody/subject01_walk1_ik.mot) by Delp, Loan, Hoy, Zajac, Topp, Rosen,
Thelen, Anderson and Seth; joints after Delp et al. (1990, IEEE TBME 37:757-767); planar knee
after Yamaguchi & Zajac (1989, J. Biomech. 21:1-10). Licensed CC BY 3.0
(https://creativecommons.org/licenses/by/3.0/). Imported unmodified by Spline Joints; the
second model's knees are spline joints fitted to the model's own knees.
"""


def _label(text: str, arm, collection, rotation, offset=(0.12, 0.0, 0.87)):
    """A text object ``text`` that follows the armature's pelvis bone at ``offset`` (world m;
    the pelvis origin is at the sacrum, behind the hips, so forward and up over the head),
    turned by ``rotation`` (3, 3) to face the camera."""
    import bpy
    from mathutils import Matrix

    bridge = kit.addon_module("addon.bridge")
    curve = bpy.data.curves.new(text, "FONT")
    curve.body = text
    curve.align_x, curve.align_y = "CENTER", "BOTTOM"
    curve.size = 0.11
    curve.materials.append(bridge.ensure_material("SJ label", (0.08, 0.1, 0.16, 1.0)))
    obj = bpy.data.objects.new(text, curve)
    collection.objects.link(obj)
    obj.matrix_world = Matrix(np.asarray(rotation, dtype=float).tolist()).to_4x4()
    follow = obj.constraints.new("COPY_LOCATION")
    follow.target, follow.subtarget = arm, "pelvis"
    follow.use_offset = True
    obj.location = offset
    return obj


def _share_meshes(first, second) -> None:
    """Let the objects of collection ``second`` show the mesh data of the same file in
    ``first`` (the two imports read the same files), and remove the copies."""
    import bpy

    by_object = {o.name.split(".")[0]: o.data for o in first.objects if o.type == "MESH"}
    for obj in second.objects:
        if obj.type == "MESH" and obj.name.split(".")[0] in by_object:
            copy, obj.data = obj.data, by_object[obj.name.split(".")[0]]
            if copy.users == 0:
                bpy.data.meshes.remove(copy)


def build_gait_walk(out: Path) -> None:
    """gait2392 imported twice and walking, the second on fitted spline knees."""
    import bpy

    model, motion = OSIM_DATA / "gait2392_thelen2003muscle.osim", OSIM_DATA / "subject01_walk1_ik.mot"
    for f in (model, motion):
        if not f.is_file():
            raise SystemExit(f"error: {f} not found: gait2392_walk needs the shipped OpenSim data")
    scene = kit.new_scene(60, 211, "gait2392_walk")
    view = np.asarray(VIEWS["gait2392_walk"], dtype=float)
    from mathutils import Vector

    facing = np.array(Vector((view / np.linalg.norm(view)).tolist()).to_track_quat("Z", "Y").to_matrix())
    arms = []
    for name, label, y, knees in (("gait2392 exact knee", "exact OpenSim knee", 0.0, ()),
                                  ("gait2392 fitted knee", "fitted spline knee", GAIT_SPACING,
                                   ("knee_r", "knee_l"))):
        kit.check(bpy.ops.spline_joints.import_osim(filepath=str(model)), "import_osim")
        arm = bpy.context.object
        arm.name = name
        arm.location = (0.0, y, 0.0)
        collection = arm.users_collection[0]
        collection.name = name
        kit.check(bpy.ops.spline_joints.import_osim_motion(filepath=str(motion)), "import_osim_motion")
        for joint in knees:
            kit.check(bpy.ops.spline_joints.fit_osim_joint(joint=joint), f"fit_osim_joint {joint}")
        _label(label, arm, collection, facing)
        arms.append(arm)
    _share_meshes(arms[0].users_collection[0], arms[1].users_collection[0])
    pts = kit.visible_points(scene, range(scene.frame_start, scene.frame_end + 1, 10))
    quad = kit.ground_under(scene, pts, 0.2)  # the ground reaches 0.2 m beyond the feet
    kit.setup_render(scene, np.vstack([pts, quad]), view, margin=1.04)
    credits = bpy.data.texts.new("CREDITS")
    credits.write(GAIT_CREDITS)
    save(scene, out / "gait2392_walk.blend")
