"""The hit-and-fall demo of scripts/build_demos.py: ``walk_hit.blend``, a walking character
made a ragdoll in one step (Make Ragdoll on Blender's human meta-rig) that follows its walk
by pose matching until a ball hits it, then falls.

The meta-rig "metarig" walks along -Y at :data:`SPEED` m/s, one stride every :data:`STRIDE`
s: its hips bone ("spine") is keyed along the path, the thighs swing +-:data:`THIGH` rad,
the shins bend up to :data:`KNEE` rad (on the side the knee's hinge range allows) and the
upper arms swing +-:data:`ARM` rad against the legs. Make Ragdoll (a :data:`MASS` kg body)
sets up the simulation; then

* the hips are keyed Kinematic until frame :data:`HIT` and simulated from there, starting
  with the walk's velocity;
* every other simulated bone follows the walk at Strength 1 (pose matching), keyed down to 0
  over the :data:`LIMP` frames after :data:`HIT` (limp);
* a ball (a sphere collider of radius :data:`BALL`) flies across the path at chest height
  and reaches the chest just after frame :data:`HIT`, once the hips are simulated (a
  collider pushing a body its animation still prescribes could not move it, and would sink
  into it); its centre crosses the path :data:`LATE` frames after :data:`HIT`.

Each simulated bone carries a capsule mesh of its collision capsule; the ground is on at
z = 0; :data:`FRAMES` frames at :data:`FPS`, :data:`SUBSTEPS` substeps per frame; unbaked (``spline_joints.bake_rig`` bakes it).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from scripts import blender_kit as kit
from scripts.demos.common import VIEWS, save
from scripts.demos.metarig_ragdoll import capsule_meshes

FPS = 24
FRAMES = 73
SPEED, STRIDE = 1.1, 1.0
THIGH, KNEE, ARM = 0.35, 0.6, 0.3
MASS = 75.0
HIT, LIMP = 37, 4
BALL = 0.18
#: the ball's height (m), its speed across the path (m/s) and the frames it flies
BALL_HEIGHT, BALL_SPEED, BALL_FRAMES = 1.45, 1.5, 24
LATE = 4
#: substeps per frame: twice the default for the limp landing after the hit (the bake reports
#: a worst penetration of 1.6 mm and a worst limit excess of 0.06 deg; with a 2.5 m/s ball
#: the landing diverged, its energy growing without bound)
SUBSTEPS = 16
BALL_COLOUR = (0.8, 0.2, 0.15, 1.0)


def _walk(arm) -> None:
    """Key the walk (module docstring) from frame 0 to FRAMES + 1 (the bake samples a frame
    either side of the range)."""
    import bpy
    from mathutils import Matrix, Quaternion

    bones = arm.pose.bones
    hips = bones["spine"]
    rest = np.array(hips.bone.matrix_local)
    for pb in bones:
        pb.rotation_mode = "QUATERNION"
    knees = {}
    for side in "LR":
        s = bones[f"shin.{side}"].spline_joints_sim
        bend = 1.0 if s.range_max >= -s.range_min else -1.0
        knees[side] = (tuple(s.axis), bend)
    for f in range(0, FRAMES + 2):
        t = (f - 1) / FPS
        phase = 2.0 * math.pi * t / STRIDE
        T = rest.copy()
        T[1, 3] -= SPEED * t
        T[2, 3] += 0.02 * math.cos(2.0 * phase)
        hips.matrix = Matrix(T.tolist())
        bpy.context.view_layer.update()
        hips.keyframe_insert("location", frame=f)
        for side, sign in (("L", 1.0), ("R", -1.0)):
            swing = sign * math.sin(phase)
            angles = {f"thigh.{side}": ((1.0, 0.0, 0.0), THIGH * swing),
                      f"upper_arm.{side}": ((1.0, 0.0, 0.0), -ARM * swing)}
            axis, bend = knees[side]
            angles[f"shin.{side}"] = (axis, bend * KNEE * max(0.0, math.sin(phase * sign + 1.2)))
            for name, (axis, angle) in angles.items():
                bones[name].rotation_quaternion = Quaternion(axis, angle)
                bones[name].keyframe_insert("rotation_quaternion", frame=f)


def _direct(arm) -> None:
    """Key the hips Kinematic until HIT and every other simulated bone's Strength from 1 to
    0 over the LIMP frames after it."""
    for pb in arm.pose.bones:
        s = pb.spline_joints_sim
        if not s.enabled:
            continue
        path = f'pose.bones["{pb.name}"].spline_joints_sim'
        if pb.name == "spine":
            for frame, on in ((1, True), (HIT, False)):
                s.kinematic = on
                arm.keyframe_insert(f"{path}.kinematic", frame=frame)
            continue
        for frame, strength in ((1, 1.0), (HIT, 1.0), (HIT + LIMP, 0.0)):
            s.strength = strength
            arm.keyframe_insert(f"{path}.strength", frame=frame)


def _ball(scene):
    """The ball: a sphere collider crossing the path (+X to -X) at chest height, its centre
    on the path at frame HIT + LATE."""
    bridge = kit.addon_module("addon.bridge")
    display = kit.addon_module("core.display")
    ball = bridge.write_mesh_object("Ball", *display.capsule(BALL, 2.0 * BALL, axis=2),
                                    scene.collection)
    ball.data.materials.append(bridge.ensure_material("SJ ball", BALL_COLOUR))
    y = -SPEED * (HIT - 1) / FPS
    cross = HIT + LATE
    for f in (cross - BALL_FRAMES // 2, cross + BALL_FRAMES // 2):
        ball.location = (BALL_SPEED * (cross - f) / FPS, y, BALL_HEIGHT)
        ball.keyframe_insert("location", frame=f)
    c = ball.spline_joints_collider
    c.enabled, c.shape = True, "SPHERE"
    return ball


def build_walk_hit(out: Path) -> None:
    """``walk_hit.blend`` (module docstring)."""
    import bpy

    scene = kit.new_scene(FPS, FRAMES, "walk_hit")
    bpy.ops.preferences.addon_enable(module="rigify")
    bpy.ops.object.armature_human_metarig_add()
    arm = bpy.context.active_object
    bpy.ops.object.mode_set(mode="POSE")
    assert bpy.ops.spline_joints.make_ragdoll(total_mass=MASS) == {"FINISHED"}
    _walk(arm)
    _direct(arm)
    bpy.ops.object.mode_set(mode="OBJECT")
    capsule_meshes(arm)
    _ball(scene)
    scene.spline_joints_sim.use_ground = True
    scene.spline_joints_sim.substeps = SUBSTEPS
    end = -SPEED * FRAMES / FPS
    reach = np.array([[x, y, z] for x in (-1.4, 1.4) for y in (0.6, end - 1.0)
                      for z in (0.0, 2.0)])
    kit.ground_quad(scene, reach[[0, 4, 6, 2]] * [1.2, 1.0, 0.0])
    scene.frame_set(1)
    kit.setup_render(scene, reach, VIEWS["walk_hit"], margin=1.0)
    save(scene, out / "walk_hit.blend")
