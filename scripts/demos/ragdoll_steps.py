"""The ragdoll demo of scripts/build_demos.py: ``ragdoll_steps.blend``, the character of
scripts/demos/character_rig.py without its tail, limp, tumbling down a flight of steps.

The armature "Ragdoll" has the character's body bones and meshes (:data:`character_rig.BONES`
without the tail, :func:`character_rig._meshes`). Every bone is simulated
(``PoseBone.spline_joints_sim``), its mass from its meshes at :data:`DENSITY`:

* the hips on a free joint (the root);
* the spine, chest, neck, head, shoulders, upper arms and thighs on ball joints, each in an
  elliptical reach cone with a twist limit (:data:`CONES`: half-angles sideways (bone X) and
  forward/back (bone Z), the twist limit, and how far the cone's axis leans forward from the
  rest direction: the hips flex forward far more than they extend);
* the knees and elbows on hinges about the bone's X with end-stops (:data:`HINGES`: the
  straight limb is one end, flexion the other);
* every joint damped (:data:`DAMPING`) and without a spring, so the body is limp.

Collision shapes: spheres for the hips and the head (:data:`SPHERES`), capsules along every
other bone (Automatic) of the radius of its mesh (:data:`RADII`). The flight is
:data:`N_STEPS` box mesh objects marked as colliders, each :data:`RISE` high and :data:`RUN`
deep going down towards -Y from the top step (:data:`TOP_DEPTH` deep); the scene's ground is
on at z = 0. The ragdoll stands at the top step's edge, leaning forward by :data:`LEAN` rad
about its feet, and starts tipping forward at :data:`SPIN` rad/s while pushed forward at
:data:`PUSH` m/s: the hips are keyed at frames 0, 1 and 2 and the scene's Start Moving takes
the velocities from those keys. :data:`FRAMES` frames at :data:`FPS` with :data:`SUBSTEPS`
substeps per frame (semi-implicit Euler).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from scripts import blender_kit as kit
from scripts.demos import character_rig as dc
from scripts.demos.common import VIEWS, save

FPS = 24
FRAMES = 61
SUBSTEPS = 8
INTEGRATOR = "semi_implicit"
DENSITY = 1000.0
DAMPING = 0.02
#: bone -> (half-angle sideways, half-angle forward/back, twist limit, forward lean of the
#: cone's axis), rad
CONES = {
    "spine": (0.3, 0.45, 0.3, 0.15),
    "chest": (0.3, 0.4, 0.3, 0.1),
    "neck": (0.4, 0.5, 0.6, 0.1),
    "head": (0.35, 0.45, 0.5, 0.0),
    **{f"shoulder.{s}": (0.25, 0.25, 0.2, 0.0) for s in "LR"},
    **{f"upper_arm.{s}": (1.1, 1.3, 0.8, 0.4) for s in "LR"},
    **{f"thigh.{s}": (0.6, 1.0, 0.4, 0.5) for s in "LR"},
}
#: bone -> (min, max) of its hinge about the bone's X, rad: the knee flexes backwards
#: (positive), the elbow forwards (negative)
HINGES = {**{f"shin.{s}": (0.0, 2.4) for s in "LR"}, **{f"forearm.{s}": (-2.5, 0.0) for s in "LR"}}
SPHERES = {"hips": 0.1, "head": 0.1}
RADII = {"spine": 0.09, "chest": 0.1, "neck": 0.035, **{f"{b}.{s}": r for s in "LR" for b, r in (
    ("shoulder", 0.035), ("upper_arm", 0.035), ("forearm", 0.03), ("thigh", 0.055), ("shin", 0.042))}}
N_STEPS, RISE, RUN, TOP_DEPTH, WIDTH = 4, 0.22, 0.45, 0.5, 1.4
#: the lowest point of the rest pose's collision shapes (the shins' capsules), armature space
FEET = -0.08 - RADII["shin.L"]
#: where the feet stand on the top step (y), the lean, spin (about the feet, +X tips forward)
#: and push (-Y, forward)
STAND_Y, LEAN, SPIN, PUSH = 0.1, 0.2, 1.0, 0.3
FRICTION = 0.4


def body_bones():
    """The character's bone rows (:data:`character_rig.BONES`) without the tail."""
    return [b for b in dc.BONES if not b[0].startswith("tail.")]


def steps():
    """``[(name, size (3,), centre (3,))]`` of the step boxes, the top step first."""
    out = []
    for k in range(N_STEPS):     # k = 0: the top step
        top = (N_STEPS - k) * RISE
        y0, y1 = (0.0, TOP_DEPTH) if k == 0 else (-k * RUN, -(k - 1) * RUN)
        out.append((f"step.{k}", (WIDTH, y1 - y0, top), (0.0, 0.5 * (y0 + y1), 0.5 * top)))
    return out


def _key_start(arm) -> None:
    """Key the hips at frames 0, 1 and 2: turned forward about the feet by LEAN + SPIN t and
    moved forward by PUSH t (t = (frame - 1) / FPS), linear in between."""
    import bpy

    so3 = kit.addon_module("core.lie").so3
    hips = arm.pose.bones["hips"]
    M = np.array(arm.data.bones["hips"].matrix_local)
    pivot = np.array([0.0, 0.0, FEET])
    for f in (0, 1, 2):
        t = (f - 1) / FPS
        P = np.eye(4)
        P[:3, :3] = so3.exp(np.array([LEAN + SPIN * t, 0.0, 0.0]))
        P[:3, 3] = pivot - P[:3, :3] @ pivot + np.array([0.0, -PUSH * t, 0.0])
        hips.matrix_basis = kit.matrix(np.linalg.solve(M, P @ M))
        hips.keyframe_insert("location", frame=f)
        hips.keyframe_insert("rotation_quaternion", frame=f)
    for fc in arm.animation_data.action.layers[0].strips[0].channelbags[0].fcurves:
        for kp in fc.keyframe_points:
            kp.interpolation = "LINEAR"
    bpy.context.view_layer.update()


def _simulate_settings(arm) -> None:
    forward = np.array([0.0, -1.0, 0.0])        # the character faces -Y
    for pb in arm.pose.bones:
        s, c = pb.spline_joints_sim, pb.spline_joints
        s.enabled, s.mass_source, s.density, s.damping = True, "AUTO", DENSITY, DAMPING
        s.spring_units = "ABSOLUTE"
        if pb.name in SPHERES:
            s.collision, s.collision_radius = "SPHERE", SPHERES[pb.name]
        else:
            s.collision, s.collision_radius = "AUTO", RADII[pb.name]
        if pb.parent is None:
            s.kind = "FREE"
        elif pb.name in HINGES:
            s.kind, s.axis, s.use_range = "HINGE", (1.0, 0.0, 0.0), True
            s.range_min, s.range_max = HINGES[pb.name]
        else:
            side, front, twist, lean = CONES[pb.name]
            s.kind, s.use_cone = "BALL", True
            R = np.array(arm.data.bones[pb.name].matrix_local)[:3, :3]
            ahead = R.T @ forward                 # forward in the bone's frame, across its Y
            ahead[1] = 0.0
            ahead /= np.linalg.norm(ahead)
            c.cone_shape, c.cone_half_angle_x, c.cone_half_angle_z = "ELLIPTICAL", side, front
            c.cone_axis = tuple(math.cos(lean) * np.array([0.0, 1.0, 0.0]) + math.sin(lean) * ahead)
            c.twist_limit = twist


def build_ragdoll_steps(out: Path) -> None:
    """``ragdoll_steps.blend`` (module docstring)."""
    import bpy

    bridge = kit.addon_module("addon.bridge")
    display = kit.addon_module("core.display")
    scene = kit.new_scene(FPS, FRAMES, "ragdoll_steps")
    arm = kit.armature("Ragdoll", dc._bone_frames(body_bones()))
    arm.location = (0.0, STAND_Y, N_STEPS * RISE - FEET)
    dc._meshes(arm, n_tail=0)
    bpy.context.view_layer.update()
    _key_start(arm)
    _simulate_settings(arm)
    st = scene.spline_joints_sim
    st.substeps, st.integrator, st.use_velocities = SUBSTEPS, INTEGRATOR, True
    st.use_ground, st.ground_height, st.ground_friction, st.friction = True, 0.0, FRICTION, FRICTION
    stone = (0.72, 0.7, 0.66, 1.0)
    for name, size, centre in steps():
        step = bridge.write_mesh_object(name, *display.box(size), scene.collection)
        step.data.materials.append(bridge.ensure_material("SJ step", stone))
        step.location = centre
        step.spline_joints_collider.enabled = True
    # the camera frames the steps, the standing ragdoll's head and where it lands
    reach = np.array([[x, y, z] for x in (-0.7, 0.7) for y in (-2.3, TOP_DEPTH) for z in (0.0, 2.5)])
    kit.ground_quad(scene, reach[[0, 4, 6, 2]] * [1.0, 1.0, 0.0])
    bpy.ops.object.mode_set(mode="OBJECT")
    scene.frame_set(1)
    kit.setup_render(scene, reach, VIEWS["ragdoll_steps"], margin=1.02)
    save(scene, out / "ragdoll_steps.blend")
