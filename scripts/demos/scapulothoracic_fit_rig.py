"""``scapulothoracic_fit_rig.blend``: thorax ellipsoid and scapula; the 17 x 11 Seth 2019 grid
(``core.reference.ScapulothoracicSeth2019``) captured with ``spline_joints.capture_pose``
(custom-property source), a fitted 8 x 6 spline surface joint and animated sliders."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from scripts import blender_kit as kit
from scripts.demos.common import BONE, T_WORLD_OPENSIM, VIEWS, save


def build_scapula_rig(out: Path) -> None:
    """Thorax/scapula armature; the Seth 2019 grid captured, fitted (spline surface), driven."""
    import bpy

    ref = kit.addon_module("core.reference").ScapulothoracicSeth2019()
    bridge = kit.addon_module("addon.bridge")
    display = kit.addon_module("core.display")
    scene = kit.new_scene(30, 96, "scapulothoracic_fit_rig")
    T_thorax = T_WORLD_OPENSIM.copy()
    T_thorax[:3, 3] = (0.0, 0.0, 1.3)
    rest = ref.defaults.copy()
    bones = [("thorax", None, T_thorax, 0.12), ("scapula", "thorax", T_thorax @ ref.pose(rest), 0.08)]
    arm = kit.armature("Shoulder", bones)
    scap = arm.pose.bones["scapula"]
    s = scap.spline_joints
    s.n_coordinates, s.source, s.property_0, s.property_1 = 2, "PROPERTY", "abduction", "elevation"
    grid = ref.grid()
    rest_rel = bridge.read_rest_T_parent_child(scap)
    for q, T in zip(grid["q"].reshape(-1, 4), grid["T_thorax_scapula"].reshape(-1, 4, 4)):
        scap["abduction"], scap["elevation"] = float(q[0]), float(q[1])
        scap.matrix_basis = kit.matrix(np.linalg.solve(rest_rel, T))
        bpy.context.view_layer.update()
        kit.check(bpy.ops.spline_joints.capture_pose(), "capture_pose")
    scap.matrix_basis = kit.matrix(np.eye(4))
    s.fit_type, s.fit_grid, s.fit_method, s.fit_order, s.fit_length_scale = \
        "SURFACE", (8, 6), "coordinatewise", 4, 0.1
    kit.check(bpy.ops.spline_joints.fit(), "fit")
    kit.colour_path(arm, "scapula", (0.2, 0.35, 0.8, 1.0))
    kit.check(bpy.ops.spline_joints.drive_joint(), "drive_joint")
    lo, hi = np.array(s.range_min), np.array(s.range_max)
    mid, amp = 0.5 * (lo + hi), 0.35 * (hi - lo)
    keys = [(1 + 12 * k, mid + amp * np.array([math.cos(k * math.pi / 4), math.sin(k * math.pi / 4)]))
            for k in range(9)]
    kit.key_sliders(scap, keys)

    scap_mod = kit.addon_module("core.mechanisms.scapulothoracic")
    kit.bone_mesh(arm, "thorax", "thorax", display.uv_sphere(ref.radii, 32, 16), (0.85, 0.72, 0.66, 0.35),
                  ref.T_thorax_pjoint)
    ribs = bridge.write_poly_curve_object("ribs", scap_mod.rib_bands(ref.radii, ref.T_thorax_pjoint),
                                          scene.collection, bevel=0.004)
    ribs.data.materials.append(bridge.ensure_material("SJ ribs", (0.93, 0.88, 0.8, 1.0)))
    bridge.parent_to_bone(ribs, arm, "thorax", np.eye(4))
    # the blade lies in the tangent plane of the ellipsoid at the joint's contact frame
    kit.bone_mesh(arm, "scapula", "scapula blade", display.plate(scap_mod.SCAPULA_OUTLINE, scap_mod.PLATE),
                  (0.95, 0.92, 0.85, 1.0), ref.T_scapula_cjoint @ kit.translation((0.0, 0.0, 0.006)))
    kit.bone_mesh(arm, "thorax", "clavicle", display.cylinder(0.009, 0.15, axis=2), BONE,
                  kit.translation((0.0, 0.0, 0.08)))
    centre = T_thorax @ ref.T_thorax_pjoint
    box = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float) * ref.radii
    pts = box @ centre[:3, :3].T + centre[:3, 3]
    scap_pts = (T_thorax @ grid["T_thorax_scapula"].reshape(-1, 4, 4))[:, :3, 3]
    kit.setup_render(scene, np.vstack([pts, scap_pts]), VIEWS["scapulothoracic_fit_rig"], margin=1.05)
    save(scene, out / "scapulothoracic_fit_rig.blend")
