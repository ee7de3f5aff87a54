"""The contact demos of scripts/build_demos.py, built and baked: the ragdoll tumbling down the
steps (scripts/demos/ragdoll_steps.py) and the chain dropped into the bowl
(scripts/demos/chain_in_bowl.py).

Each demo is built into a temporary folder, simulated once (the add-on's RigJob, as
``spline_joints.bake_rig`` runs it) and keyed with the job's result (``write_keys``); then at
every frame:

* every joint limit holds within the limit solver's tolerance: its deadband ROTARY_TOL of the
  limit's own value (the cone value, the twist angle, the hinge angle), and as much again for
  the second-order remainder of its position correction, which is linear in the coordinates
  (as tests/blender/test_rig_simulation.py measures it);
* the keys play the simulation back: every simulated bone's world pose read from Blender equals
  the job's result to float32 (KEY_TOL);
* no collision shape (the demo's capsules and spheres, built here from the demo's constants
  and the bones' lengths) goes into the ground or a collider box (built from the demo's
  constants and the objects' world matrices) by more than IMPACT_DEPTH, and at the last
  frame, at rest, by more than DEPTH: the contact solver's slop (the depth a resting contact
  keeps) plus the keys' float32 rounding. While the bodies land they go deeper than the slop
  (the solver's position correction acts on the end pose predicted to first order, and the
  bakes report up to about 1.6 mm at a substep); IMPACT_DEPTH is 1 mm, the depth a landing
  capsule chain keeps within in tests/core/test_contacts.py, plus the keys' rounding.

The signed distance of a capsule's segment to a box is convex along the segment, so its
minimum is found by golden-section search to far below DEPTH.
"""

import importlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
#: LimitSolver's default deadband (of the limit's own value: cos for cones, rad for twist)
ROTARY_TOL = 1e-3
#: float32 keys of poses within a few metres of the origin, through up to five parent bones
KEY_TOL = 1e-5
#: ContactSolver's default slop (m): the depth a resting contact keeps
SLOP = 5e-4
DEPTH = SLOP + KEY_TOL
IMPACT_DEPTH = 1e-3 + KEY_TOL
#: a ragdoll "at rest" at the end: its bones' mean speed over the last quarter second (m/s)
REST_SPEED = 0.1


def _demo(module):
    """A demo builder module of scripts/demos/ (in the Blender subprocess only)."""
    return importlib.import_module(f"scripts.demos.{module}")


def _box_distance(p, T, half):
    """Signed distance ``(...)`` of world points ``p (..., 3)`` to the box of half extents
    ``half (3,)`` at the world pose ``T (4, 4)`` (negative inside)."""
    local = (p - T[:3, 3]) @ T[:3, :3]
    q = np.abs(local) - half
    return np.linalg.norm(np.maximum(q, 0.0), axis=-1) + np.minimum(q.max(axis=-1), 0.0)


def _segment_box_distance(a, b, T, half, iterations=80):
    """Smallest signed distance ``(...)`` of the segments ``a -> b (..., 3)`` to a box
    (golden-section search of the convex distance along each segment)."""
    g = 0.5 * (5.0 ** 0.5 - 1.0)
    lo, hi = np.zeros(a.shape[:-1]), np.ones(a.shape[:-1])
    at = lambda t: _box_distance(a + t[..., None] * (b - a), T, half)  # noqa: E731
    for _ in range(iterations):
        t1, t2 = hi - g * (hi - lo), lo + g * (hi - lo)
        left = at(t1) <= at(t2)
        hi, lo = np.where(left, t2, hi), np.where(left, lo, t1)
    return np.minimum(np.minimum(at(0.5 * (lo + hi)), at(np.zeros_like(lo))), at(np.ones_like(lo)))


def _bake(scene, arm):
    """Simulate the armature's rig once and key it as the bake does; returns (job, result,
    world (F, nb, 4, 4) of the rig's bodies read back from the keys at every frame)."""
    import bpy

    from scenes import addon_module

    rig_jobs = addon_module("addon.rig_jobs")
    rig_scene = addon_module("addon.rig_scene")
    job = rig_jobs.RigJob(scene, arm)
    job.simulate()
    result = job.checked_result()
    assert result is not None
    rig_jobs.write_keys(job, result)
    W = rig_scene.normalized(arm.matrix_world)[0]
    world = []
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        bpy.context.view_layer.update()
        world.append([W @ np.array(arm.pose.bones[b.name].matrix) for b in job.bodies])
    return job, result, np.array(world)


def _built_and_baked(tmp, build, name, armature):
    """Build demo ``name`` into ``tmp`` with ``build``, open it and bake its armature
    (:func:`_bake`); the limits hold at every frame (:func:`_check_limits`) and the keys play
    the result back to KEY_TOL. Returns (armature, job, result, world, worst limit excess)."""
    import bpy

    build(Path(tmp))
    bpy.ops.wm.open_mainfile(filepath=str(Path(tmp) / f"{name}.blend"), load_ui=False)
    arm = bpy.data.objects[armature]
    job, result, world = _bake(bpy.context.scene, arm)
    worst_limit = _check_limits(job, result)
    assert worst_limit <= 2.0 * ROTARY_TOL, worst_limit
    np.testing.assert_allclose(world, result.world, rtol=0, atol=KEY_TOL)
    return arm, job, result, world, worst_limit


def _check_limits(job, result):
    """The largest excess of any limit constraint over the run (limit units); every limit
    object of the rig, bound to its model, at every frame."""
    mech = job.rig.mechanism
    worst = 0.0
    for lim in mech.limits:
        lim.bind(mech.model)
        for q in result.q:
            d = lim.constraints(q[lim.start:lim.start + lim.n])[0]
            worst = max(worst, float(-d.min()))
    return worst


def _capsules(arm, job, radius_of):
    """``(a (nb, 4), b (nb, 4), radii (nb,))``: each body's shape as the segment a -> b
    (homogeneous points in the bone frame) and its radius; ``radius_of(bone name) -> (kind,
    radius)``; a sphere is a zero-length segment at the bone's middle."""
    shapes = []
    for b in job.bodies:
        length = arm.data.bones[b.name].length
        kind, r = radius_of(b.name)
        if kind == "SPHERE":
            shapes.append(((0.0, 0.5 * length, 0.0), (0.0, 0.5 * length, 0.0), r))
        else:
            shapes.append(((0.0, 0.0, 0.0), (0.0, length, 0.0), r))
    a, b = (np.array([np.append(s[k], 1.0) for s in shapes]) for k in (0, 1))
    return a, b, np.array([s[2] for s in shapes])


def _depths(world, a, b, radii, boxes):
    """``(F, nb)`` the deepest each body's shape reaches into the ground (z = 0) or any of
    ``boxes [(T (4, 4), half (3,))]`` (m; 0 when clear), and ``(len(boxes),)`` the closest
    any shape came to each box (m, negative when inside)."""
    A = (world @ a[None, :, :, None])[..., :3, 0]
    B = (world @ b[None, :, :, None])[..., :3, 0]
    depth = np.maximum(radii - np.minimum(A[..., 2], B[..., 2]), 0.0)
    closest = []
    for T, half in boxes:
        d = _segment_box_distance(A, B, T, half) - radii
        depth = np.maximum(depth, np.maximum(-d, 0.0))
        closest.append(float(d.min()))
    return depth, np.array(closest)


def scenario_ragdoll(tmp):
    import bpy

    dr = _demo("ragdoll_steps")

    arm, job, result, world, worst_limit = _built_and_baked(tmp, dr.build_ragdoll_steps, "ragdoll_steps",
                                                            "Ragdoll")
    assert len(job.bodies) == 15 and all(not b.kinematic for b in job.bodies)

    boxes = []
    for name, size, centre in dr.steps():
        T = np.eye(4)
        T[:3, 3] = centre
        np.testing.assert_allclose(np.array(bpy.data.objects[name].matrix_world), T, atol=1e-7)
        boxes.append((T, 0.5 * np.array(size)))
    a, b, radii = _capsules(arm, job, lambda n: ("SPHERE", dr.SPHERES[n]) if n in dr.SPHERES
                            else ("CAPSULE", dr.RADII[n]))
    depth, closest = _depths(world, a, b, radii, boxes)
    assert depth.max() <= IMPACT_DEPTH, (depth.max(), np.unravel_index(depth.argmax(), depth.shape))
    assert depth[-1].max() <= DEPTH, depth[-1]
    touched = int((closest <= IMPACT_DEPTH).sum())
    assert touched >= 3, closest             # it hits several steps on the way down (to IMPACT_DEPTH)
    # It ends lying below the top step, past the second, touching the steps or the ground,
    # and nearly still: no bone moves faster than REST_SPEED over the last quarter second.
    hips = world[:, 0, :3, 3]
    assert hips[-1, 2] < dr.N_STEPS * dr.RISE and hips[-1, 1] < -dr.RUN, hips[-1]
    assert result.contacts[-1] >= 1, result.contacts[-1]
    last = round(0.25 * dr.FPS)
    speed = float(np.linalg.norm(world[-1, :, :3, 3] - world[-1 - last, :, :3, 3], axis=1).max()) * dr.FPS / last
    assert speed < REST_SPEED, speed
    return {"worst_limit": worst_limit, "worst_mm": 1000 * float(depth.max()),
            "report_mm": 1000 * result.worst_penetration, "contacts": int(result.contacts.max()),
            "touched": touched, "wall": result.wall_time, "end_speed": speed}


def scenario_bowl(tmp):
    import bpy

    db = _demo("chain_in_bowl")

    arm, job, result, world, worst_limit = _built_and_baked(tmp, db.build_chain_in_bowl, "chain_in_bowl",
                                                            "Chain")
    assert bpy.context.scene.spline_joints_sim.use_self_collision

    boxes = []
    for name, size, T in db.bowl_pieces():
        np.testing.assert_allclose(np.array(bpy.data.objects[name].matrix_world), T, atol=1e-6)
        boxes.append((T, 0.5 * np.array(size)))
    a, b, radii = _capsules(arm, job, lambda n: ("CAPSULE", db.RADIUS))
    depth, _ = _depths(world, a, b, radii, boxes)
    assert depth.max() <= IMPACT_DEPTH, (depth.max(), np.unravel_index(depth.argmax(), depth.shape))
    assert depth[-1].max() <= DEPTH, depth[-1]
    # Self-collision: links that are not neighbours stay apart by their radii (to IMPACT_DEPTH).
    A, B = world[:, :, :3, 3], world[:, :, :3, 3] + db.LINK * world[:, :, :3, 1]
    overlap = 0.0
    for i in range(db.N_LINKS):
        for j in range(i + 2, db.N_LINKS):
            d = _segment_distance(A[:, i], B[:, i], A[:, j], B[:, j])
            overlap = max(overlap, float((2 * db.RADIUS - d).max()))
    assert overlap <= IMPACT_DEPTH, overlap
    # Every link ends inside the bowl: within the rim's radius and below its top.
    rim_r = db.BASE_RADIUS + db.WALL[1] * np.cos(db.SLOPE)
    ends = np.concatenate([A[-1], B[-1]])
    assert np.hypot(ends[:, 0], ends[:, 1]).max() < rim_r, ends
    return {"worst_limit": worst_limit, "worst_mm": 1000 * float(depth.max()), "overlap_mm": 1000 * overlap,
            "report_mm": 1000 * result.worst_penetration, "contacts": int(result.contacts.max()),
            "wall": result.wall_time}


def _segment_distance(p0, p1, q0, q1):
    """``(F,)`` the distance between segments ``p0 -> p1`` and ``q0 -> q1`` (F, 3): the
    distance from each point of the first to the second segment (exact: a projection clamped
    to it) minimized over a golden-section search along the first (convex)."""
    def to_second(t):
        p = p0 + t[:, None] * (p1 - p0)
        d = q1 - q0
        s = np.clip(((p - q0) * d).sum(axis=1) / (d * d).sum(axis=1), 0.0, 1.0)
        return np.linalg.norm(p - q0 - s[:, None] * d, axis=1)

    g = 0.5 * (5.0 ** 0.5 - 1.0)
    lo, hi = np.zeros(len(p0)), np.ones(len(p0))
    for _ in range(80):
        t1, t2 = hi - g * (hi - lo), lo + g * (hi - lo)
        left = to_second(t1) <= to_second(t2)
        hi, lo = np.where(left, t2, hi), np.where(left, lo, t1)
    return np.minimum(to_second(0.5 * (lo + hi)), np.minimum(to_second(0.0 * lo), to_second(0.0 * lo + 1.0)))


def test_ragdoll_down_the_steps(blender):
    out = blender(scenario_ragdoll)
    assert out["touched"] >= 3 and out["contacts"] >= 3, out


def test_chain_in_the_bowl(blender):
    out = blender(scenario_bowl)
    assert out["contacts"] >= 3, out
