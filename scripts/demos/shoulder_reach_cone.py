"""``shoulder_reach_cone.blend``: a humerus on a ball joint; swing samples captured, a reach
cone fitted (``spline_joints.fit_reach_cone``) and drawn (``spline_joints.draw_reach_cone``);
the humerus is keyed onto the cone's boundary and held there, the cone red while it is."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from scripts import blender_kit as kit
from scripts.demos.common import BONE, VIEWS, save

#: humerus swings captured for the reach cone: XYZ Euler angles (rad) relative to the rest pose
#: (hanging down), around an abducted, slightly flexed centre; X < 0 swings laterally, Z forward
SHOULDER_CENTRE = (-0.6, 0.0, 0.15)
SHOULDER_SWINGS = [(SHOULDER_CENTRE[0] + a * math.cos(t), 0.0, SHOULDER_CENTRE[2] + b * math.sin(t))
                   for t in np.linspace(0, 2 * math.pi, 12, endpoint=False)
                   for a, b in ((0.45, 0.6), (0.22, 0.3))] + [SHOULDER_CENTRE]


#: frames between which the humerus is held at its reach cone's limit
SHOULDER_HOLD = (22, 36)
#: the swing (exponential coordinates about the cone's centre, direction only) that drives the
#: humerus into its cone's boundary
SHOULDER_LIMIT_SWING = (0.0, 0.0, 1.0)
#: reach cone colours: the bone inside its cone, at the limit (|swing value| <= 1e-3)
CONE_INSIDE, CONE_AT_LIMIT = (0.1, 0.75, 0.25, 0.4), (0.95, 0.1, 0.05, 0.6)
LIMIT_TOL = 1e-3


def cone_limit_rotation(cone, swing, tol=1e-12):
    """XYZ Euler angles (3,) of the bone's basis rotation that swings it from the cone's centre
    in the direction ``swing`` (3,, orthogonal to the bone's Y axis) onto the cone's boundary:
    the swing angle at which the swing value (:func:`core.bones.cone_status`) is 0, found by
    bisection."""
    from mathutils import Matrix

    bones, so3 = kit.addon_module("core.bones"), kit.addon_module("core.lie.so3")
    reach = kit.addon_module("core.fitting.reach_cone")
    N = reach.neutral_rotation(bones.BONE_AXIS, cone.axis)
    k = np.asarray(swing, dtype=float) / np.linalg.norm(swing)

    def value(t):
        T = np.eye(4)
        T[:3, :3] = N @ so3.exp(t * k)
        return bones.cone_status(cone, np.eye(4), T).swing_value

    lo, hi = 0.0, math.pi - 1e-6
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if value(mid) > 0.0 else (lo, mid)
    return tuple(Matrix((N @ so3.exp(lo * k)).tolist()).to_euler("XYZ"))


def _key_cone_colour(scene, pose_bone, cone, rest) -> None:
    """Key the reach cone's material colour at every frame: :data:`CONE_AT_LIMIT` where the
    bone's swing value is within :data:`LIMIT_TOL` of the limit, else :data:`CONE_INSIDE`
    (constant between keys)."""
    import bpy

    bridge, bones = kit.addon_module("addon.bridge"), kit.addon_module("core.bones")
    frames = np.arange(scene.frame_start, scene.frame_end + 1)
    colours = []
    for f in frames:
        scene.frame_set(int(f))
        g = bones.cone_status(cone, rest, bridge.read_pose_T_parent_child(pose_bone)).swing_value
        colours.append(CONE_AT_LIMIT if abs(g) <= LIMIT_TOL else CONE_INSIDE)
    mat = bpy.data.materials["SJ_ReachCone"]
    for i in range(4):
        bridge.write_fcurve_keys(mat, "diffuse_color", i, frames, np.array(colours)[:, i],
                                 interpolation="CONSTANT")
    scene.frame_set(scene.frame_start)


def build_shoulder_rig(out: Path) -> None:
    """A humerus on a ball joint with a fitted, drawn elliptical reach cone."""
    import bpy

    bridge = kit.addon_module("addon.bridge")
    display = kit.addon_module("core.display")
    scene = kit.new_scene(30, 48, "shoulder_reach_cone")
    # Shoulder girdle bone pointing laterally (world -y), humerus hanging down and forward.
    T_sh = np.eye(4)
    T_sh[:3, :3] = np.diag([1.0, -1.0, -1.0])  # Y along world -y (the right shoulder)
    T_sh[:3, 3] = (0.0, 0.0, 1.4)
    T_hu = np.eye(4)
    T_hu[:3, :3] = [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]]  # Y down (-z world)
    T_hu[:3, 3] = (0.0, -0.18, 1.4)
    arm = kit.armature("Arm", [("girdle", None, T_sh, 0.18), ("humerus", "girdle", T_hu, 0.3)])
    hum = arm.pose.bones["humerus"]
    hum.rotation_mode = "XYZ"
    s = hum.spline_joints
    s.source, s.property_0 = "PROPERTY", "sample"  # a counter: the cone needs no coordinate
    for k, rot in enumerate(SHOULDER_SWINGS):
        hum["sample"] = float(k)
        hum.rotation_euler = rot
        bpy.context.view_layer.update()
        kit.check(bpy.ops.spline_joints.capture_pose(), "capture_pose")
    s.cone_margin = math.radians(3.0)
    kit.check(bpy.ops.spline_joints.fit_reach_cone(), "fit_reach_cone")
    s.cone_shape, s.cone_length = "ELLIPTICAL", 0.26
    kit.check(bpy.ops.spline_joints.draw_reach_cone(), "draw_reach_cone")
    rest = bridge.read_rest_T_parent_child(hum)
    cone = kit.addon_module("addon.cones").cone_options(s)
    to_limit = cone_limit_rotation(cone, SHOULDER_LIMIT_SWING)
    inside = [(SHOULDER_CENTRE[0] + 0.36 * math.cos(t), 0.0, SHOULDER_CENTRE[2] + 0.48 * math.sin(t))
              for t in (0.0, math.pi / 2)]
    keys = [(1, inside[0]), (12, inside[1]), (SHOULDER_HOLD[0], to_limit), (SHOULDER_HOLD[1], to_limit),
            (48, inside[0])]  # sweep inside, swing out to the limit, hold it, come back
    frames = np.array([f for f, _ in keys], dtype=float)
    for i in range(3):  # linear: straight to the limit and exactly on it while held
        bridge.write_fcurve_keys(arm, hum.path_from_id("rotation_euler"), i, frames,
                                 np.array([rot[i] for _, rot in keys]))
    _key_cone_colour(scene, hum, cone, rest)
    kit.bone_mesh(arm, "humerus", "humerus shaft", display.cylinder(0.02, 0.26, axis=1), BONE,
                  kit.translation((0.0, 0.15, 0.0)))
    kit.bone_mesh(arm, "humerus", "humeral head", display.uv_sphere((0.028,) * 3, 12, 6), BONE)
    kit.bone_mesh(arm, "humerus", "elbow", display.uv_sphere((0.03, 0.02, 0.022), 12, 6), BONE,
                  kit.translation((0.0, 0.29, 0.0)))
    kit.bone_mesh(arm, "girdle", "girdle", display.cylinder(0.014, 0.16, axis=1), (0.85, 0.8, 0.7, 1.0),
                  kit.translation((0.0, 0.08, 0.0)))
    torso = bridge.write_mesh_object("torso", *display.uv_sphere((0.1, 0.13, 0.26), 20, 10), scene.collection)
    torso.data.materials.append(bridge.ensure_material("SJ torso", (0.85, 0.72, 0.66, 1.0)))
    torso.location = (0.0, 0.02, 1.2)
    pts = [np.array([[x, y, z] for x in (-0.2, 0.2) for y in (-0.5, 0.16) for z in (0.95, 1.48)])]
    kit.setup_render(scene, np.vstack(pts), VIEWS["shoulder_reach_cone"], margin=1.0)
    save(scene, out / "shoulder_reach_cone.blend")
