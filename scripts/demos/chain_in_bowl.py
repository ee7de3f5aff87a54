"""The bowl demo of scripts/build_demos.py: ``chain_in_bowl.blend``, a chain dropped into a bowl
built from convex collider pieces, piling up on itself.

The armature "Chain" has :data:`N_LINKS` bones of :data:`LINK` m, laid out as chords of a
helix (:data:`COIL` m radius, rising :data:`PITCH` m a turn, its lowest point :data:`DROP` m
up) about a vertical axis :data:`OFF_AXIS` from the bowl's: it lands on the bottom and the
foot of the slope, its upper turn falls onto the lower and it settles in a heap on the bottom;
each bone carries a capsule mesh of :data:`RADIUS` (its mass from that mesh at
:data:`DENSITY`). All bones are simulated: the first on a free joint, the others on ball
joints in a circular reach cone of :data:`CONE` rad with a little damping
(:data:`DAMPING`); their collision shapes are capsules along the bones (Automatic, Collision
Radius :data:`RADIUS`), and the scene's Self-Collision is on, so links that are not
neighbours push each other apart instead of passing through.

The bowl is :data:`N_WALLS` + 1 box mesh objects marked as colliders (shape Box): a square
bottom plate (:data:`BOTTOM`) on the ground, and a ring of slabs, each :data:`WALL` (width,
length up the slope, thickness), leaning out at :data:`SLOPE` rad from the horizontal from the
bottom's edge (:data:`BASE_RADIUS` from the axis). The scene's ground is on at z = 0.
:data:`FRAMES` frames at :data:`FPS` with :data:`SUBSTEPS` substeps per frame (semi-implicit
Euler), starting at rest.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from scripts import blender_kit as kit
from scripts.demos.common import VIEWS, save

FPS = 24
FRAMES = 49
SUBSTEPS = 8
INTEGRATOR = "semi_implicit"
N_LINKS, LINK, RADIUS = 12, 0.08, 0.022
COIL, PITCH, DROP, OFF_AXIS = 0.1, 0.12, 0.4, (0.1, 0.04)
CONE, DAMPING, DENSITY = 1.0, 2e-3, 2000.0
FRICTION = 0.5
#: the bottom plate's (size (3,), centre (3,)) and the slabs of the ring
BOTTOM = ((0.46, 0.46, 0.04), (0.0, 0.0, 0.02))
N_WALLS, BASE_RADIUS, SLOPE = 8, 0.2, math.radians(50.0)
WALL = (0.36, 0.34, 0.04)
#: how far (m) each slab reaches below the bottom's top, closing the seam
SEAM = 0.03
METAL = (0.55, 0.6, 0.68, 1.0)
CHAIN = (0.8, 0.35, 0.12, 1.0)


def bowl_pieces():
    """``[(name, size (3,), T_world (4, 4))]`` of the bowl's boxes: the bottom, then the slabs
    (slab frame: X around the ring, Y up the slope, Z out of the bowl's inside)."""
    size, centre = BOTTOM
    T = np.eye(4)
    T[:3, 3] = centre
    out = [("bowl.bottom", size, T)]
    top = centre[2] + 0.5 * size[2]
    for k in range(N_WALLS):
        phi = 2.0 * math.pi * k / N_WALLS
        u = np.array([math.cos(phi), math.sin(phi), 0.0])
        t = np.array([-math.sin(phi), math.cos(phi), 0.0])
        s = math.cos(SLOPE) * u + math.sin(SLOPE) * np.array([0.0, 0.0, 1.0])
        n = np.cross(t, s)                                  # out of the bowl's inside
        start = BASE_RADIUS * u + np.array([0.0, 0.0, top]) - SEAM * s
        T = np.eye(4)
        T[:3, :3] = np.column_stack([t, s, n])
        T[:3, 3] = start + 0.5 * WALL[1] * s + 0.5 * WALL[2] * n
        out.append((f"bowl.wall.{k}", WALL, T))
    return out


def helix_points():
    """``(N_LINKS + 1, 3)`` the joints of the chain: points of the helix LINK apart (chords),
    from its lowest point up."""
    # the turn angle a whose chord on the helix is LINK (bisection; the chord grows with a)
    lo, hi = 0.0, math.pi
    for _ in range(60):
        a = 0.5 * (lo + hi)
        chord = math.hypot(2.0 * COIL * math.sin(0.5 * a), PITCH * a / (2.0 * math.pi))
        lo, hi = (a, hi) if chord < LINK else (lo, a)
    angles = a * np.arange(N_LINKS + 1)
    return np.column_stack([OFF_AXIS[0] + COIL * np.cos(angles), OFF_AXIS[1] + COIL * np.sin(angles),
                            DROP + PITCH * angles / (2.0 * math.pi)])


def chain_bones():
    """``(name, parent, T_arm_bone, length)`` of the chain's bones along :func:`helix_points`,
    for :func:`scripts.blender_kit.armature`."""
    bones = kit.addon_module("core.bones")
    p = helix_points()
    return [(f"link.{k:02d}", None if k == 0 else f"link.{k - 1:02d}",
             bones.bone_frame(p[k], p[k + 1]), float(np.linalg.norm(p[k + 1] - p[k])))
            for k in range(N_LINKS)]


def build_chain_in_bowl(out: Path) -> None:
    """``chain_in_bowl.blend`` (module docstring)."""
    import bpy

    bridge = kit.addon_module("addon.bridge")
    display = kit.addon_module("core.display")
    scene = kit.new_scene(FPS, FRAMES, "chain_in_bowl")
    arm = kit.armature("Chain", chain_bones())
    for pb in arm.pose.bones:
        kit.bone_mesh(arm, pb.name, pb.name, display.capsule(RADIUS, LINK + 2.0 * RADIUS, axis=1),
                      CHAIN, kit.translation((0.0, 0.5 * LINK, 0.0)))
        s = pb.spline_joints_sim
        s.enabled, s.mass_source, s.density, s.damping = True, "AUTO", DENSITY, DAMPING
        s.spring_units = "ABSOLUTE"
        s.collision, s.collision_radius = "AUTO", RADIUS
        if pb.parent is None:
            s.kind = "FREE"
        else:
            s.kind, s.use_cone = "BALL", True
            pb.spline_joints.cone_shape, pb.spline_joints.cone_half_angle = "CIRCULAR", CONE
    st = scene.spline_joints_sim
    st.substeps, st.integrator, st.use_velocities = SUBSTEPS, INTEGRATOR, False
    st.use_ground, st.ground_height, st.ground_friction, st.friction = True, 0.0, FRICTION, FRICTION
    st.use_self_collision = True
    for name, size, T in bowl_pieces():
        piece = bridge.write_mesh_object(name, *display.box(size), scene.collection)
        piece.data.materials.append(bridge.ensure_material("SJ bowl", METAL))
        piece.matrix_world = kit.matrix(T)
        c = piece.spline_joints_collider
        c.enabled, c.shape = True, "BOX"
    r = BASE_RADIUS + WALL[1] * math.cos(SLOPE) + 0.05
    reach = np.array([[x, y, z] for x in (-r, r) for y in (-r, r) for z in (0.0, DROP + 2.0 * PITCH)])
    kit.ground_quad(scene, reach[[0, 4, 6, 2]] * [1.6, 1.6, 0.0])
    bpy.ops.object.mode_set(mode="OBJECT")
    scene.frame_set(1)
    kit.setup_render(scene, reach, VIEWS["chain_in_bowl"], margin=1.0)
    save(scene, out / "chain_in_bowl.blend")
