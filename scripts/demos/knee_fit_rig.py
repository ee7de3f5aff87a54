"""``knee_fit_rig.blend``: femur/tibia armature; the tibia is posed over the OpenSim gait2392
knee range (1-degree grid, ``core.reference.KneeGait2392``), the poses are recorded with
``spline_joints.capture_range`` (frame-number source), fitted with ``spline_joints.fit``
(12-frame spline curve, path drawn) and driven by the ``sj_q0`` slider, which is animated."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from scripts import blender_kit as kit
from scripts.demos.common import BONE, T_WORLD_OPENSIM, VIEWS, save

#: OpenSim body frame (y up the bone, x forward) -> Blender bone frame (Y head -> tail down the
#: leg): a half turn about z
C_LEG = np.diag([-1.0, -1.0, 1.0, 1.0])


def build_knee_rig(out: Path) -> None:
    """Femur/tibia armature; gait2392 knee captured, fitted (spline curve) and driven."""
    import bpy

    ref = kit.addon_module("core.reference").KneeGait2392()
    bridge = kit.addon_module("addon.bridge")
    display = kit.addon_module("core.display")
    lo, hi = ref.range
    n = int(round(math.degrees(hi - lo))) + 1  # the reference's 1-degree grid (131 poses)
    scene = kit.new_scene(30, n, "knee_fit_rig")
    T_hip = T_WORLD_OPENSIM @ kit.translation((0.0, 0.95, 0.0))  # OpenSim femur frame in the world
    T_rest = ref.pose(0.0)
    femur_len = float(np.linalg.norm(T_rest[:3, 3]))
    bones = [("femur", None, T_hip @ C_LEG, femur_len),
             ("tibia", "femur", T_hip @ T_rest @ C_LEG, 0.43)]
    arm = kit.armature("Knee", bones)
    tibia = arm.pose.bones["tibia"]

    # Pose the tibia over the OpenSim range, one reference pose per frame, and capture it.
    qs = np.linspace(lo, hi, n)
    T_pc = np.linalg.inv(C_LEG) @ ref.poses(qs) @ C_LEG  # tibia bone in femur bone
    basis = np.linalg.solve(bridge.read_rest_T_parent_child(tibia)[None], T_pc)
    kit.fit_curve_to_keys(arm, tibia, basis, lo, hi)
    kit.check(bpy.ops.spline_joints.drive_joint(), "drive_joint")
    frames = 96
    scene.frame_end = frames
    kit.key_sliders(tibia, [(1, (hi,)), (frames // 2, (lo,)), (frames, (hi,))])

    # The gait2392 bone meshes (CC BY 3.0) in their OpenSim body frames: the femur's and the
    # tibia's are the bones' frames turned by C_LEG (the knee's offset frames are identities),
    # the foot's hang from the tibia at the ankle (the ankle is not a joint of this rig).
    knee = kit.addon_module("core.mechanisms.knee")
    bone_mesh = kit.addon_module("core.reference").bone_mesh
    kit.bone_mesh(arm, "femur", "femur_r", bone_mesh("femur_r"), BONE, C_LEG)
    kit.bone_mesh(arm, "tibia", "tibia_r", bone_mesh("tibia_r"), BONE, C_LEG)
    kit.bone_mesh(arm, "tibia", "fibula", bone_mesh("fibula"), (0.88, 0.84, 0.74, 1.0), C_LEG)
    for name, file, at in knee.FOOT_MESHES:
        kit.bone_mesh(arm, "tibia", name, bone_mesh(file), BONE,
                      C_LEG @ kit.translation(np.add(knee.ANKLE_IN_TIBIA, at)))
    pelvis = bridge.write_mesh_object("pelvis", *display.box((0.16, 0.12, 0.24)), scene.collection)
    pelvis.data.materials.append(bridge.ensure_material("SJ pelvis", (0.85, 0.8, 0.7, 1.0)))
    pelvis.location = (0.0, 0.08, 1.02)

    # Frame the whole swing: knee and foot over the range.
    ankle = np.array([[0.0, -0.43, 0.0, 1.0], [0.2, -0.48, 0.0, 1.0], [-0.1, -0.48, 0.0, 1.0]])
    pts = [(T_hip @ T @ ankle.T).T[:, :3] for T in ref.poses(qs[::5])]
    pts += [np.array([[x, y, z] for x in (-0.08, 0.08) for y in (0.02, 0.14) for z in (0.9, 1.16)])]
    kit.setup_render(scene, np.vstack(pts), VIEWS["knee_fit_rig"])
    save(scene, out / "knee_fit_rig.blend")
