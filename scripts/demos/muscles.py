"""Muscle demos.

* ``gait2392_muscles.blend``: the OpenSim gait2392 model (``spline_joints.import_osim``) with
  its 92 muscles drawn, walking (``spline_joints.import_osim_motion``, the walk of
  gait2392_walk.blend); the muscles follow the bones and are coloured by their length
  change (shorter blue, at rest red, longer yellow).
* ``arm26_biceps.blend``: OpenSim's arm26 (``spline_joints.import_osim``; its bone meshes are
  not shipped, so each bone is drawn as a rod) with its six muscles wrapping over its
  cylinders and ellipsoids; the biceps' two heads are activated (0.1, keyed on the armature's
  activation properties) and ``spline_joints.simulate_muscles`` keys the coordinates of one
  second of the forward simulation from rest: the biceps flexes the elbow. The muscles are
  coloured by force.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scripts import blender_kit as kit
from scripts.demos.common import BONE, VIEWS, save
from scripts.demos.gait2392_walk import GAIT_CREDITS, OSIM_DATA

ARM26_CREDITS = """arm26_biceps.blend: OpenSim's arm26 model flexed by its biceps.

Model: arm26 (opensim-org/opensim-models, Models/Arm26/arm26.osim), distributed with
OpenSim under that repository's licence. Imported unmodified by Spline Joints; the motion is
Spline Joints' own forward simulation of the model with the biceps activated.
"""
#: the biceps' activation in the arm26 demo
BICEPS_ACTIVATION = 0.1
#: radius (m) of the rods standing in for arm26's bones
ROD_RADIUS = 0.012
#: length (m) of the forearm's rod (elbow to wrist)
FOREARM_LENGTH = 0.25


def _need(*files):
    for f in files:
        if not f.is_file():
            raise SystemExit(f"error: {f} not found: the muscle demos need the shipped OpenSim "
                             "data")


def build_gait_muscles(out: Path) -> None:
    """gait2392 with its muscles, walking."""
    import bpy

    model, motion = OSIM_DATA / "gait2392_thelen2003muscle.osim", OSIM_DATA / "subject01_walk1_ik.mot"
    _need(model, motion)
    scene = kit.new_scene(60, 211, "gait2392_muscles")
    kit.check(bpy.ops.spline_joints.import_osim(filepath=str(model)), "import_osim")
    arm = bpy.context.object
    kit.check(bpy.ops.spline_joints.import_osim_motion(filepath=str(motion)), "import_osim_motion")
    pts = kit.visible_points(scene, range(scene.frame_start, scene.frame_end + 1, 10))
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    m = 0.2
    quad = np.array([[lo[0] - m, lo[1] - m, lo[2]], [hi[0] + m, lo[1] - m, lo[2]],
                     [hi[0] + m, hi[1] + m, lo[2]], [lo[0] - m, hi[1] + m, lo[2]]])
    kit.ground_quad(scene, quad)
    kit.setup_render(scene, np.vstack([pts, quad]), VIEWS["gait2392_muscles"], margin=1.04)
    arm.data.spline_joints_osim.muscle_color = "LENGTH"
    bpy.data.texts.new("CREDITS").write(GAIT_CREDITS.replace(
        "gait2392_walk.blend: the OpenSim gait2392 model walking, twice.",
        "gait2392_muscles.blend: the OpenSim gait2392 model walking with its muscles."))
    save(scene, out / "gait2392_muscles.blend")


def build_arm26_biceps(out: Path) -> None:
    """arm26 flexed by its biceps, simulated."""
    import bpy

    model = OSIM_DATA / "arm26.osim"
    _need(model)
    scene = kit.new_scene(24, 25, "arm26_biceps")
    kit.check(bpy.ops.spline_joints.import_osim(filepath=str(model)), "import_osim")
    arm = bpy.context.object
    display = kit.addon_module("core.display")
    bridge = kit.addon_module("addon.bridge")
    muscles = kit.addon_module("addon.muscles")
    # the humerus from the shoulder to the elbow (its bone); the forearm down its body's -y
    for bone, length, sign in (("r_humerus", arm.data.bones["r_humerus"].length, 1.0),
                               ("r_ulna_radius_hand", FOREARM_LENGTH, -1.0)):
        v, f = display.cylinder(ROD_RADIUS, length, axis=1, n=12)
        kit.bone_mesh(arm, bone, f"{bone} rod", (v, f), BONE,
                      kit.translation((0, 0.5 * sign * length, 0)))
    for obj in list(scene.objects):  # the placeholders of the meshes arm26 does not ship
        if obj.type == "EMPTY":
            obj.hide_render = True
    arm["r_shoulder_elev"], arm["r_elbow_flex"] = 0.2, 0.4
    for name in ("BIClong", "BICshort"):
        prop = bridge.coordinate_path(muscles.activation_property(name))
        arm[muscles.activation_property(name)] = BICEPS_ACTIVATION
        for frame in (scene.frame_start, scene.frame_end):
            arm.keyframe_insert(prop, frame=frame)
    kit.check(bpy.ops.spline_joints.simulate_muscles(), "simulate_muscles")
    arm.data.spline_joints_osim.muscle_color = "FORCE"
    pts = kit.visible_points(scene, range(scene.frame_start, scene.frame_end + 1, 4))
    kit.setup_render(scene, pts, VIEWS["arm26_biceps"], margin=1.3)
    bpy.data.texts.new("CREDITS").write(ARM26_CREDITS)
    save(scene, out / "arm26_biceps.blend")
