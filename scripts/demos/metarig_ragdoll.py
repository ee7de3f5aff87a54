"""The one-step ragdoll demo of scripts/build_demos.py: ``metarig_ragdoll.blend``, Blender's
human meta-rig made a ragdoll by one call of Make Ragdoll (``spline_joints.make_ragdoll``)
and dropped on the ground.

The armature "metarig" (Rigify's human meta-rig, ``armature_human_metarig_add``) is lifted
:data:`LIFT` m and tipped :data:`TIP` rad about the world Y axis, so it lands on its side.
Make Ragdoll sets up its 29 body bones from their names (the hips free, hinges for knees,
elbows and toes, ball joints in elliptical reach cones with twist limits elsewhere, AAOS
ranges; de Leva masses of a :data:`MASS` kg body; capsules from the bones' lengths) and
leaves the face and finger bones on their parents. Each simulated bone carries a capsule
mesh of its collision capsule, so the render shows what collides. The ground is on at z = 0;
:data:`FRAMES` frames at :data:`FPS` at the scene's default substeps and integrator;
unbaked (``spline_joints.bake_rig`` bakes it).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from scripts import blender_kit as kit
from scripts.demos.common import VIEWS, save

FPS = 24
FRAMES = 49
LIFT, TIP = 1.0, math.radians(25.0)
MASS = 75.0
SKIN = (0.85, 0.62, 0.45, 1.0)


def capsule_meshes(arm) -> None:
    """A capsule mesh of each simulated bone's collision capsule, parented to the bone."""
    display = kit.addon_module("core.display")
    for pb in arm.pose.bones:
        s = pb.spline_joints_sim
        if s.enabled:
            length, r = pb.bone.length, s.collision_radius
            kit.bone_mesh(arm, pb.name, f"capsule.{pb.name}",
                          display.capsule(r, length + 2.0 * r, axis=1), SKIN,
                          kit.translation((0.0, 0.5 * length, 0.0)))


def build_metarig_ragdoll(out: Path) -> None:
    """``metarig_ragdoll.blend`` (module docstring)."""
    import bpy

    scene = kit.new_scene(FPS, FRAMES, "metarig_ragdoll")
    bpy.ops.preferences.addon_enable(module="rigify")
    bpy.ops.object.armature_human_metarig_add()
    arm = bpy.context.active_object
    arm.location, arm.rotation_euler = (0.0, 0.0, LIFT), (0.0, TIP, 0.0)
    bpy.ops.object.mode_set(mode="POSE")
    assert bpy.ops.spline_joints.make_ragdoll(total_mass=MASS) == {"FINISHED"}
    bpy.ops.object.mode_set(mode="OBJECT")
    capsule_meshes(arm)
    scene.spline_joints_sim.use_ground = True
    reach = np.array([[x, y, z] for x in (-1.2, 1.2) for y in (-0.6, 0.6) for z in (0.0, LIFT + 2.05)])
    kit.ground_quad(scene, reach[[0, 4, 6, 2]] * [1.4, 1.6, 0.0])
    scene.frame_set(1)
    kit.setup_render(scene, reach, VIEWS["metarig_ragdoll"], margin=1.0)
    save(scene, out / "metarig_ragdoll.blend")
