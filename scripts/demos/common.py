"""What the demo builders share: where the files go, the build version stamped into every
scene, each file's view direction, the OpenSim frame and bone colour of the fitting rigs, and
:func:`save`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scripts import blender_kit as kit

OUT = kit.ROOT / "demo_blends"
#: stamped into every scene (``scene["spline_joints_demo_build"]``) so the tests can tell a
#: stale file; bump it whenever a builder changes what it writes
BUILD_VERSION = 7
#: VIEWS value of a demo whose bodies ride on the surface of its first body, a sphere (the
#: globe's planes): the view is derived from the simulated motion
#: (:func:`scripts.demos.mechanisms.facing_view`)
FACE_BODIES = "face the bodies"
#: view direction (from the target towards the camera) per file; default
#: :data:`scripts.blender_kit.DEFAULT_VIEW`
VIEWS = {
    "beads_on_a_wire": (0.45, -1.0, 0.8),
    "globe": FACE_BODIES,
    "knee_pendulum": (0.15, -1.0, 0.25),
    "knee_fit_rig": (0.12, -1.0, 0.12),
    "scapulothoracic": (-0.9, -0.8, 0.45),
    "scapulothoracic_fit_rig": (-1.0, -0.45, 0.35),
    "shoulder_reach_cone": (1.0, -0.35, 0.3),
    "deforming_surface": (0.4, -1.0, 1.4),
    "hinge_chain": (0.2, -1.0, 0.25),
    "skeleton_chain": (0.9, -1.0, 0.55),
    "gait2392_walk": (0.75, -1.0, 0.2),
    "gait2392_mocap": (0.6, -1.0, 0.3),
    "gait2392_muscles": (0.75, -1.0, 0.2),
    "arm26_biceps": (0.2, -1.0, 0.15),
    "four_bar_linkage": (0.25, -1.0, 0.3),
    "scissor_lift": (0.35, -1.0, 0.3),
    "door_stop": (0.3, -0.6, 1.2),
    "character_rig": (1.0, 0.7, 0.45),
    "ragdoll_steps": (1.0, -0.35, 0.3),
    "chain_in_bowl": (0.5, -1.0, 0.7),
    "metarig_ragdoll": (0.35, -1.0, 0.35),
    "walk_hit": (1.0, -0.2, 0.35),
}
#: OpenSim pelvis/thorax frame in the world (OpenSim y up = world z)
T_WORLD_OPENSIM = np.array([[1.0, 0, 0, 0], [0, 0, -1.0, 0], [0, 1.0, 0, 0], [0, 0, 0, 1.0]])
BONE = (0.93, 0.9, 0.82, 1.0)


def save(scene, path: Path) -> None:
    import bpy

    kit.smooth_meshes(scene)
    scene["spline_joints_demo_build"] = BUILD_VERSION
    scene.frame_set(scene.frame_start)
    path.parent.mkdir(parents=True, exist_ok=True)
    with kit.addon_module("core.io").atomic_path(path) as tmp:  # renamed into place when saved
        bpy.ops.wm.save_as_mainfile(filepath=tmp, compress=True, relative_remap=False)
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} kB)", flush=True)
