"""The character demo of scripts/build_demos.py: ``character_rig.blend``, secondary motion
simulated on a user-style rig (the Simulate panel's settings, baked by
``spline_joints.bake_rig`` / scripts/bake.py, not a core demo mechanism).

A small character (armature "Critter": hips, spine, chest, neck, head, shoulders and arms,
thighs and shins; facing -Y, its right side at -X) sits on a ledge and sways: the hips bone is
keyed to turn about the vertical by +-:data:`SWAY` rad, one sway every :data:`SWAY_PERIOD`
seconds, over :data:`FRAMES` frames at :data:`FPS`; the thighs are keyed forward (sitting).
Simulated (``PoseBone.spline_joints_sim``):

* a tail of :data:`N_TAIL` bones from the hips, raised backwards in its rest pose, on ball
  joints, each in a circular reach cone of :data:`TAIL_CONE` rad with a twist limit of
  :data:`TAIL_TWIST` rad, a spring toward the rest pose (:data:`TAIL_STIFFNESS` N m/rad at
  the root, falling with the square of the distance to the tip, as the weight it carries
  does) and damping :data:`TAIL_DAMPING` N m s/rad; each bone carries a closed ellipsoid mesh
  (parented to the bone), so its mass comes from the mesh (divergence theorem) at a fur's
  density of :data:`TAIL_DENSITY` kg/m^3;
* both shins on a fitted spline knee: the gait2392 knee preset (``spline_joints.
  apply_joint_preset``, KNEE_R / KNEE_L, scaled by the thigh length) is posed over its range
  on a 1-degree grid, captured (``spline_joints.capture_range``) and fitted with a spline
  curve joint (``spline_joints.fit``, 12 frames, order 4); the shin starts straight (the fitted
  joint at q = 0) with the thigh horizontal and swings down on the knee as a damped pendulum
  (:data:`KNEE_DAMPING`), its mass from its leg and foot meshes.

Everything else follows its keys (kinematic). The hips, thighs and all other bones carry
meshes parented to them; the armature itself is not rendered.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from scripts import blender_kit as kit
from scripts.demos.common import VIEWS, save

FPS = 24
FRAMES = 97
#: the hips' sway about the vertical (rad) and its period (s)
SWAY = 0.45
SWAY_PERIOD = 2.0
N_TAIL = 8
TAIL_CONE = 0.5
TAIL_TWIST = 0.3
TAIL_STIFFNESS = 8.0
TAIL_DAMPING = 4e-3
TAIL_DENSITY = 300.0
#: the tail's rest direction: back (+Y) and up by this angle (rad)
TAIL_RISE = math.radians(35.0)
TAIL_BONE = 0.085
KNEE_DAMPING = 0.05
#: the tail's stiffness and damping were chosen for Runge-Kutta 4 at the default substeps
INTEGRATOR = "rk4"
#: bone layout in the rest (standing) pose, armature space (m): name, parent, head, tail
BONES = [
    ("hips", None, (0.0, 0.0, 0.6), (0.0, 0.0, 0.72)),
    ("spine", "hips", (0.0, 0.0, 0.72), (0.0, 0.0, 0.9)),
    ("chest", "spine", (0.0, 0.0, 0.9), (0.0, 0.0, 1.08)),
    ("neck", "chest", (0.0, 0.0, 1.08), (0.0, 0.0, 1.14)),
    ("head", "neck", (0.0, 0.0, 1.14), (0.0, 0.0, 1.34)),
    *[b for side, x in (("L", 1.0), ("R", -1.0)) for b in (
        (f"shoulder.{side}", "chest", (0.03 * x, 0.0, 1.05), (0.17 * x, 0.0, 1.05)),
        (f"upper_arm.{side}", f"shoulder.{side}", (0.19 * x, 0.0, 1.05), (0.19 * x, 0.0, 0.82)),
        (f"forearm.{side}", f"upper_arm.{side}", (0.19 * x, 0.0, 0.82), (0.19 * x, 0.0, 0.6)),
        (f"thigh.{side}", "hips", (0.09 * x, 0.0, 0.58), (0.09 * x, 0.0, 0.26)),
        (f"shin.{side}", f"thigh.{side}", (0.09 * x, 0.0, 0.26), (0.09 * x, 0.0, -0.08)))],
    *[(f"tail.{k}", "hips" if k == 0 else f"tail.{k - 1}",
       (0.0, 0.07 + TAIL_BONE * k * math.cos(TAIL_RISE), 0.62 + TAIL_BONE * k * math.sin(TAIL_RISE)),
       (0.0, 0.07 + TAIL_BONE * (k + 1) * math.cos(TAIL_RISE), 0.62 + TAIL_BONE * (k + 1) * math.sin(TAIL_RISE)))
      for k in range(N_TAIL)],
]
#: the ledge the character sits on: (size, centre) of a box, m
LEDGE = ((1.2, 0.22, 0.5), (0.0, -0.01, 0.25))
SKIN = (0.86, 0.62, 0.42, 1.0)
FUR = (0.92, 0.5, 0.12, 1.0)
CLOTH = (0.25, 0.42, 0.7, 1.0)


def _bone_frames(layout=BONES):
    """``(name, parent, T_arm_bone, length)`` of the bones of ``layout`` (rows as in
    :data:`BONES`), for :func:`scripts.blender_kit.armature`."""
    bones = kit.addon_module("core.bones")
    return [(name, parent, bones.bone_frame(head, tail), float(np.linalg.norm(np.subtract(tail, head))))
            for name, parent, head, tail in layout]


def _meshes(arm, n_tail: int = N_TAIL) -> None:
    """A closed mesh per bone (bone-parented, in the bone's head frame, Y along the bone), for
    the body and the first ``n_tail`` tail bones."""
    display = kit.addon_module("core.display")
    lengths = {b.name: b.length for b in arm.data.bones}

    def along(name, mesh, colour, y=None, label=None):
        T = kit.translation((0.0, 0.5 * lengths[name] if y is None else y, 0.0))
        kit.bone_mesh(arm, name, label or name, mesh, colour, T)

    along("hips", display.uv_sphere((0.13, 0.1, 0.1), 20, 10), CLOTH)
    along("spine", display.uv_sphere((0.12, 0.13, 0.09), 20, 10), CLOTH)
    along("chest", display.uv_sphere((0.14, 0.12, 0.1), 20, 10), CLOTH)
    along("neck", display.cylinder(0.035, 0.08, axis=1), SKIN)
    along("head", display.uv_sphere((0.1, 0.1, 0.1), 20, 10), SKIN)
    for side in ("L", "R"):
        along(f"shoulder.{side}", display.capsule(0.035, 0.16, axis=1), CLOTH)
        along(f"upper_arm.{side}", display.capsule(0.035, 0.25, axis=1), SKIN)
        along(f"forearm.{side}", display.capsule(0.03, 0.24, axis=1), SKIN)
        along(f"thigh.{side}", display.capsule(0.055, 0.36, axis=1), CLOTH)
        along(f"shin.{side}", display.capsule(0.042, 0.32, axis=1), SKIN)
        along(f"shin.{side}", display.box((0.08, 0.06, 0.16)), (0.2, 0.2, 0.22, 1.0),
              y=lengths[f"shin.{side}"], label=f"foot.{side}")   # the foot points forward (-Y)
    for k in range(n_tail):
        r = 0.045 - 0.003 * k
        along(f"tail.{k}", display.uv_sphere((r, 0.055, r), 14, 8), FUR)


def _fit_knee(arm, side: str) -> None:
    """Put the gait2392 knee preset on shin.<side>, capture its range on a 1-degree grid and
    fit it with a spline curve joint; the shin is left posed at the fitted joint's q = 0."""
    import bpy

    bridge = kit.addon_module("addon.bridge")
    jio = kit.addon_module("core.io")
    scene = bpy.context.scene
    shin = arm.pose.bones[f"shin.{side}"]
    arm.data.bones.active = arm.data.bones[shin.name]
    kit.check(bpy.ops.spline_joints.apply_joint_preset(preset=f"KNEE_{side}", draw_path=False),
              "apply_joint_preset")
    preset = jio.loads(shin.spline_joints.joint_json).joint
    lo, hi = float(preset.lower[0]), float(preset.upper[0])
    n = int(round(math.degrees(hi - lo))) + 1
    qs = np.linspace(lo, hi, n)
    rest = bridge.read_rest_T_parent_child(shin)
    basis = np.linalg.solve(rest[None], np.array([preset.transform(q[None]) for q in qs]))
    scene.frame_end = n
    kit.fit_curve_to_keys(arm, shin, basis, lo, hi)
    fitted = jio.loads(shin.spline_joints.joint_json).joint
    shin.matrix_basis = kit.matrix(np.linalg.solve(rest, fitted.transform(np.zeros(1))))


def _key_pose(arm) -> None:
    """The hips' sway (about the vertical, its bone Y) and the thighs turned forward (sitting)."""
    import bpy

    hips = arm.pose.bones["hips"]
    hips.rotation_mode = "XYZ"
    step = SWAY_PERIOD * FPS / 4
    for k in range(int((FRAMES - 1) / step) + 1):
        hips.rotation_euler = (0.0, SWAY * math.sin(0.5 * math.pi * k), 0.0)
        hips.keyframe_insert("rotation_euler", frame=1 + k * step)
    for side in ("L", "R"):
        thigh = arm.pose.bones[f"thigh.{side}"]
        bone = arm.data.bones[thigh.name]
        M = np.array(bone.matrix_local)
        turn = np.eye(4)
        turn[:3, :3] = kit.addon_module("core.lie").so3.exp(np.array([-0.5 * math.pi, 0.0, 0.0]))
        turn[:3, 3] = M[:3, 3] - turn[:3, :3] @ M[:3, 3]      # about the hip joint
        thigh.matrix_basis = kit.matrix(np.linalg.solve(M, turn @ M))
        bpy.context.view_layer.update()
        assert thigh.tail[1] < thigh.head[1] - 0.3, "the thigh must point forward (-Y)"
        thigh.keyframe_insert("rotation_quaternion", frame=1)


def _simulate_settings(arm) -> None:
    for k in range(N_TAIL):
        pb = arm.pose.bones[f"tail.{k}"]
        s = pb.spline_joints_sim
        s.enabled, s.kind, s.use_cone, s.mass_source, s.density = True, "BALL", True, "AUTO", TAIL_DENSITY
        s.spring_units = "ABSOLUTE"
        s.stiffness, s.damping = TAIL_STIFFNESS * (1.0 - k / N_TAIL) ** 2, TAIL_DAMPING
        c = pb.spline_joints
        c.cone_shape, c.cone_half_angle, c.twist_limit = "CIRCULAR", TAIL_CONE, TAIL_TWIST
    for side in ("L", "R"):
        s = arm.pose.bones[f"shin.{side}"].spline_joints_sim
        s.enabled, s.kind, s.mass_source, s.damping = True, "FITTED", "AUTO", KNEE_DAMPING
        s.spring_units = "ABSOLUTE"


def build_character_rig(out: Path) -> None:
    """``character_rig.blend`` (module docstring)."""
    import bpy

    bridge = kit.addon_module("addon.bridge")
    display = kit.addon_module("core.display")
    scene = kit.new_scene(FPS, FRAMES, "character_rig")
    arm = kit.armature("Critter", _bone_frames())
    for side in ("L", "R"):
        _fit_knee(arm, side)
    scene.frame_start, scene.frame_end = 1, FRAMES
    _key_pose(arm)
    _simulate_settings(arm)
    # no ground: the character sits on a ledge (not a collider), and its coned tail diverges
    # at t = 2.3 s when the contact solver takes over its limits
    scene.spline_joints_sim.use_ground = False
    scene.spline_joints_sim.integrator = INTEGRATOR
    _meshes(arm)
    ledge = bridge.write_mesh_object("ledge", *display.box(LEDGE[0]), scene.collection)
    ledge.data.materials.append(bridge.ensure_material("SJ ledge", (0.7, 0.7, 0.68, 1.0)))
    ledge.location = LEDGE[1]
    # Frame the keyed motion and where the tail and the shins can reach.
    pts = kit.visible_points(scene, range(1, FRAMES + 1, 6))
    reach = [[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.75) for z in (0.0, 1.4)]
    bpy.ops.object.mode_set(mode="OBJECT")
    scene.frame_set(1)
    kit.setup_render(scene, np.vstack([pts, reach]), VIEWS["character_rig"], margin=1.0)
    save(scene, out / "character_rig.blend")
