"""A zoo of rigs a user builds from scratch, baked at the add-on's defaults (Implicit Euler,
16 substeps, Frequency and Ratio springs): Blender's human meta-rig as a ragdoll (body bones
and every bone), tails and chains on keyed roots with springs and dampers over four orders
of magnitude, a 1 cm bone next to a 1 m bone, and self-collision with capsules that overlap
at rest. Each must bake without divergence, gain no more energy than the method's bound,
keep every limit within its deadband and say in its report what it changed or left out."""

import math

import pytest

pytestmark = pytest.mark.slow

#: the limit solver's deadband is 1e-3 of a cone's cosine (core.limits.LimitSolver), which is
#: 1e-3 / sin(half angle) rad at the cone; the narrowest cone of the zoo is 30 deg
DEADBAND = 1e-3 / math.sin(math.radians(30.0))
FACE = ("face", "teeth", "nose", "lip", "jaw", "chin", "ear", "lid", "brow", "forehead",
        "temple", "cheek", "tongue", "eye")
FINGERS = ("thumb", "f_index", "f_middle", "f_ring", "f_pinky", "palm")


def _checks(result, message, job):
    """What every zoo bake must show: completed, the limits within their deadband, no energy
    gained beyond the implicit method's bound (first order: DRIFT_RESOLUTION of the energy
    in motion, core.mechanisms.base) unless the kinematic bones did work, and a report."""
    from scenes import addon_module

    base = addon_module("core.mechanisms.base")
    assert result.status == "completed"
    work = abs(result.drive_work).max()
    gained = float((result.energy - result.energy[0] - result.drive_work).max())
    bound = base.DRIFT_RESOLUTION ** job.rig.mechanism.order * max(result.kinetic.max(), work)
    assert message.startswith("Baked into"), message
    return {"gained": gained, "bound": bound, "message": message,
            "violation": result.worst_violation, "where": result.violation_body,
            "wall": result.wall_time}


def _holds(out, passive=True):
    """The limits within their deadband and, for a passive rig (nothing keyed drives it),
    no energy gained beyond the bound. A keyed bone does work on the rig that the bound
    does not count (its limit impulses on the first simulated bone are not in the drive's
    work), so a driven rig's energy is not bounded here."""
    assert out["violation"] <= DEADBAND, out
    if passive:
        assert out["gained"] <= out["bound"], out


def _metarig(all_bones, radius_ratio=None, self_collision=False):
    """Blender's human meta-rig (Rigify's) 20 cm above the ground as a ragdoll: a free root,
    hinges with ranges for shins and forearms, ball joints with a 45 deg cone and a 30 deg
    twist limit elsewhere, capsule masses; the body bones only (29) or every bone (159)."""
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.preferences.addon_enable(module="rigify")
    bpy.ops.object.armature_human_metarig_add()
    obj = bpy.context.active_object
    obj.location = (0.0, 0.0, 0.2)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 49
    bpy.ops.object.mode_set(mode="POSE")
    count = 0
    for pb in obj.pose.bones:
        if not all_bones and pb.name.startswith(FACE + FINGERS):
            continue
        s = pb.spline_joints_sim
        s.enabled, s.mass_source = True, "CAPSULE"
        if radius_ratio is not None:
            s.collision, s.collision_radius = "CAPSULE", radius_ratio * pb.bone.length
        if pb.parent is None:
            s.kind = "FREE"
        elif pb.name.startswith(("shin", "forearm")):
            s.kind, s.axis, s.use_range = "HINGE", (1.0, 0.0, 0.0), True
            s.range_min, s.range_max = 0.0, 2.4
        else:
            s.kind, s.use_cone = "BALL", True
            c = pb.spline_joints
            c.cone_shape, c.cone_half_angle = "CIRCULAR", math.radians(45.0)
            c.twist_limit = math.radians(30.0)
        count += 1
    scene.spline_joints_sim.use_self_collision = self_collision
    scene.frame_set(1)
    return scene, obj, count


def scenario_metarig(tmp, all_bones):
    from scenes import bake_rig

    scene, obj, count = _metarig(all_bones)
    result, message, job = bake_rig(scene, obj)
    out = _checks(result, message, job)
    out["bones"] = count
    out["refined"] = [w for w in result.warnings if "run again" in w]
    out["light"] = [w for w in result.warnings if "light bone" in w]
    return out


@pytest.mark.parametrize("all_bones", [False, True], ids=["body_bones", "every_bone"])
def test_metarig_ragdoll(blender, all_bones):
    out = blender(scenario_metarig, all_bones=all_bones)
    assert out["bones"] == (159 if all_bones else 29)
    _holds(out)
    # the default substeps hold: no run again with more, and the light bones are named
    assert not out["refined"], out["refined"]
    assert out["light"] and out["light"][0] in out["message"]


def scenario_self_collision(tmp):
    """The body ragdoll with capsules a third of each bone's length thick: many pairs
    overlap at rest; they are left out and named, the others collide."""
    from scenes import bake_rig

    scene, obj, _ = _metarig(False, radius_ratio=0.3, self_collision=True)
    result, message, job = bake_rig(scene, obj)
    out = _checks(result, message, job)
    out["notes"] = list(result.contact_notes)
    return out


def test_self_collision_with_capsules_overlapping_at_rest(blender):
    out = blender(scenario_self_collision)
    _holds(out)
    assert "overlap in the start pose" in out["message"], out["message"]
    assert "spine" in out["message"]


def scenario_chains(tmp):
    """Tails of 3, 10 and 30 bones (3 cm capsules, 30 deg cones, 10 deg twist) on a keyed
    hip, with springs and dampers typed in over four orders of magnitude and as the default
    frequency and ratio; every bake holds."""
    import bpy

    from scenes import bake_rig, tail_armature

    cases = []
    for n in (3, 10, 30):
        for units, stiffness, damping in (("RELATIVE", 0.0, 0.0), ("ABSOLUTE", 2.0, 0.1),
                                          ("ABSOLUTE", 1e-3, 1e-4), ("ABSOLUTE", 10.0, 1.0)):
            bpy.ops.wm.read_homefile(use_empty=True)
            scene = bpy.context.scene
            scene.frame_start, scene.frame_end = 1, 25
            obj = tail_armature("Tail", n, 0.03, (0.0, 0.0, 1.0),
                                ((1, 0.0), (7, 0.9), (13, 0.0), (19, -0.9), (25, 0.0)))
            for k in range(n):
                pb = obj.pose.bones[f"tail.{k:03d}"]
                s = pb.spline_joints_sim
                s.enabled, s.kind, s.use_cone, s.mass_source = True, "BALL", True, "CAPSULE"
                s.spring_units, s.stiffness, s.damping = units, stiffness, damping
                if units == "RELATIVE":
                    s.frequency = 2.0
                c = pb.spline_joints
                c.cone_shape, c.cone_half_angle = "CIRCULAR", math.radians(30.0)
                c.twist_limit = math.radians(10.0)
            scene.spline_joints_sim.use_ground = False
            scene.frame_set(1)
            out = _checks(*bake_rig(scene, obj))
            cases.append({"bones": n, "units": units, "stiffness": stiffness,
                          "damping": damping, **out})
    return cases


def test_tails_with_springs_over_four_orders_of_magnitude(blender):
    cases = blender(scenario_chains)
    assert len(cases) == 12
    for out in cases:
        _holds(out, passive=False)


def scenario_tiny_next_to_large(tmp):
    """A 1 m bone on a ball joint at the world origin carrying a 1 cm bone on a ball joint,
    dropped on the ground: the light bone does not force a smaller step."""
    import bpy

    from scenes import bake_rig

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 49
    data = bpy.data.armatures.new("Pair")
    obj = bpy.data.objects.new("Pair", data)
    scene.collection.objects.link(obj)
    obj.location = (0.0, 0.0, 0.5)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    big = data.edit_bones.new("big")
    big.head, big.tail = (0.0, 0.0, 0.0), (1.0, 0.0, 0.3)
    small = data.edit_bones.new("small")
    small.head, small.tail = (1.0, 0.0, 0.3), (1.0, 0.01, 0.3)
    small.parent, small.use_connect = big, True
    bpy.ops.object.mode_set(mode="POSE")
    for name, kind in (("big", "FREE"), ("small", "BALL")):
        s = obj.pose.bones[name].spline_joints_sim
        s.enabled, s.kind, s.mass_source = True, kind, "CAPSULE"
    scene.frame_set(1)
    result, message, job = bake_rig(scene, obj)
    out = _checks(result, message, job)
    out["substeps"] = job.rig.mechanism.substeps
    out["refined"] = [w for w in result.warnings if "run again" in w]
    return out


def test_tiny_bone_next_to_a_large_one(blender):
    out = blender(scenario_tiny_next_to_large)
    _holds(out)
    assert out["substeps"] == 16 and not out["refined"], out
