"""Does the viewport show a bake? What a rig's own set-up does to simulated bodies.

:func:`limb_switches` finds the IK/FK switches of limbs (a Rigify arm or leg) whose FK
controls are simulated while the limb follows its IK chain, before the keys are written:
a constraint that copies a simulated bone, followed on the same bone by a constraint whose
influence a driver reads from a custom property (``IK_FK`` on the limb's parent control). The
bake keys that property to the value that gives the overriding constraint no influence.

:func:`overridden_bodies` runs after the keys are written: it evaluates the scene at the
first, middle and last baked frames (constraints, drivers and the live drive applied) and
compares every simulated bone's and object's world pose with the simulated one (a bone keyed
through a control, Keys On, by its head and direction: a Rigify limb spreads the twist over
its segments). A body off by
more than the float32 round-off of the matrices Blender evaluates is named with what
overrides it (a constraint, an IK constraint further down its chain, a driver on its
transform channels, the coordinate drive) and what to do, in the panel's terms; the bodies
that are off only because they follow such a body are listed with it.
"""

from __future__ import annotations

import numpy as np

from . import bridge
from .documents import is_osim_armature
from .rig_scene import normalized

#: float32 round-off: Blender stores and multiplies pose matrices in single precision
EPS32 = float(np.finfo(np.float32).eps)
#: round-off operations per bone of a chain: the keyed channels (4 quaternion or 3 Euler
#: values), the basis built from them, the product with the rest and parent matrices
OPS_PER_BONE = 16


def limb_switches(obj, names) -> list[tuple[str, float, str]]:
    """IK/FK switches to key so that the simulated bones ``names`` of armature ``obj`` move
    their limbs: ``[(data path of the switch property, value, what the report says)]``; a
    switch that cannot be set from its driver is said as a warning with an empty path."""
    names = set(names)
    drivers = {d.data_path: d for d in (obj.animation_data.drivers if obj.animation_data else ())}
    out, seen = [], set()
    for pb in obj.pose.bones:
        stack = list(pb.constraints)
        for i, copy in enumerate(stack):
            if copy.mute or getattr(copy, "subtarget", "") not in names or \
                    getattr(copy, "target", None) != obj:
                continue
            for later in stack[i + 1:]:
                path = later.path_from_id("influence")
                if later.mute or later.type != copy.type or path not in drivers:
                    continue
                switch = _switch_value(obj, drivers[path])
                if switch is None:
                    out.append(("", 0.0, f"warning: '{copy.subtarget}' moves nothing you see "
                                f"while '{pb.name}' follows its constraint '{later.name}' "
                                "(set by a driver): switch the limb to FK before baking"))
                    continue
                prop, value = switch
                if prop not in seen:
                    seen.add(prop)
                    out.append((prop, value, f"'{copy.subtarget}' is an FK control of a limb "
                                f"in IK mode: the bake keys {_property_label(prop)} to "
                                f"{value:g} (FK) in the simulation action"))
    return out


def _switch_value(obj, driver_fcurve):
    """(data path, value) of the custom property of ``obj`` that sets the driven influence,
    at which the influence is 0; None when the driver is not one property through a
    straight line (a sum or average of one variable, maybe a first-order polynomial)."""
    d = driver_fcurve.driver
    if d.type not in ("SUM", "AVERAGE") or len(d.variables) != 1:
        return None
    var = d.variables[0]
    target = var.targets[0]
    if var.type != "SINGLE_PROP" or target.id != obj or not target.data_path.endswith('"]'):
        return None
    mods = list(driver_fcurve.modifiers)
    if not mods:
        value = 0.0
    elif len(mods) == 1 and mods[0].type == "GENERATOR" and mods[0].mode == "POLYNOMIAL" \
            and mods[0].poly_order == 1 and not mods[0].use_additive and mods[0].coefficients[1]:
        c0, c1 = mods[0].coefficients
        value = -c0 / c1
    else:
        return None
    try:
        bridge.read_channel(obj, target.data_path)
    except (ValueError, KeyError):
        return None
    return target.data_path, float(value)


def _property_label(path):
    """'IK_FK of upper_arm_parent.L' for ``pose.bones["upper_arm_parent.L"]["IK_FK"]``."""
    head, _, key = path[:-2].rpartition('["')
    owner = head.partition('["')[2].rstrip('"]')
    return f"{key} of '{owner}'" if owner else key


def overridden_bodies(job, result) -> list[str]:
    """Warnings for the simulated bodies of a written bake whose evaluated poses are not the
    simulated ones (module docstring); the scene's frame is put back afterwards."""
    import bpy

    scene = job.scene
    frames = job.frames[:len(result.times)]
    checked = sorted({0, len(frames) // 2, len(frames) - 1})
    parents = job.rig.mechanism.model.parents
    depth = np.zeros(len(parents), dtype=int)
    for i, p in enumerate(parents):
        depth[i] = depth[p] + 1 if p >= 0 else 1
    reach = 1.0 + float(np.abs(result.world[:, :, :3, 3]).max())
    worst = {}
    current = scene.frame_current
    try:
        for k in checked:
            scene.frame_set(int(frames[k]))
            bpy.context.view_layer.update()   # evaluates what the live drive wrote
            arm = normalized(job.target.matrix_world)[0] if job.target is not None else None
            for n, b in enumerate(job.bodies):
                if b.kinematic:
                    continue
                i = n + job.offset
                if b.kind == "BONE":
                    E = arm @ bridge.rigid(bridge.matrix_to_array(b.owner.matrix))
                else:
                    E = normalized(b.owner.matrix_world)[0]
                S = result.world[k, i]
                moved = float(np.linalg.norm(E[:3, 3] - S[:3, 3]))
                if b.kind == "BONE" and b.settings.key_bone:
                    # keyed through a control (a Rigify limb spreads the twist over its
                    # segments): the bone's direction, not its twist, must show
                    turned = float(np.arccos(np.clip(E[:3, 1] @ S[:3, 1], -1.0, 1.0)))
                else:
                    R = E[:3, :3].T @ S[:3, :3]
                    sine = np.linalg.norm([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0],
                                           R[1, 0] - R[0, 1]])
                    turned = float(np.arctan2(sine / 2.0, (np.trace(R) - 1.0) / 2.0))
                tol = OPS_PER_BONE * depth[i] * EPS32
                if (moved > tol * reach or turned > tol) and \
                        moved + reach * turned > worst.get(b.name, (0.0,))[0]:
                    worst[b.name] = (moved + reach * turned, moved, turned, int(frames[k]))
    finally:
        scene.frame_set(current)
    entries, lead = {}, {}
    for b in job.bodies:                      # parents first
        if b.name not in worst:
            continue
        found = _override(job.target, b)
        up = b.parent
        while up >= 0 and job.bodies[up].name not in worst:
            up = job.bodies[up].parent
        if found is None and up >= 0:         # it only follows an overridden ancestor
            lead[b.name] = lead.get(job.bodies[up].name, job.bodies[up].name)
            entries[lead[b.name]][1].append(b.name)
            continue
        cause, todo = found or (
            "something the bake cannot name (an NLA track above the simulation, a modifier, "
            "a script)", "look at its NLA tracks and the scene's handlers")
        _, moved, turned, frame = worst[b.name]
        entries[b.name] = (f"warning: '{b.name}' does not show the simulation "
                           f"({100 * moved:.2f} cm, {np.degrees(turned):.1f} deg off at frame "
                           f"{frame}", [], f"{cause}; {todo}")
    out = []
    for head, followers, tail in entries.values():
        also = f"; with it {', '.join(repr(n) for n in followers)}" if followers else ""
        out.append(f"{head}{also}): {tail}")
    return out


def _constraint_label(c):
    kind = c.type.replace("_", " ").title().replace("Ik", "IK")
    return f"{kind} constraint '{c.name}'"


def _override(obj, body):
    """(what overrides a simulated body, what to do) for :func:`overridden_bodies`; None when
    nothing on the body itself does (it may follow an overridden parent)."""
    owner = body.owner
    if body.kind == "BONE":
        paths = [owner.path_from_id(c) for c in bridge.TRANSFORM_CHANNELS]
        drivers = obj.animation_data.drivers if obj.animation_data else ()
    else:
        paths = list(bridge.TRANSFORM_CHANNELS)
        drivers = owner.animation_data.drivers if owner.animation_data else ()
    constraints = [c for c in owner.constraints if not c.mute and c.influence > 0.0]
    if constraints:
        labels = ", ".join(_constraint_label(c) for c in constraints)
        todo = f"mute the constraint or untick Simulate on '{body.name}'"
        subtarget = getattr(constraints[0], "subtarget", "")
        if body.kind == "BONE" and body.name[:4] in ("DEF-", "ORG-") and obj.data.get("rig_id"):
            fk = fk_control(obj, body.name[4:])
            todo = (f"a Rigify {body.name[:3]} bone follows its controls: untick Simulate on "
                    f"it and simulate the FK control{f' {fk!r}' if fk else 's'} instead")
        elif subtarget:
            todo = f"simulate '{subtarget}', which it follows, or mute the constraint"
        verb = "overrides" if len(constraints) == 1 else "override"
        return f"its {labels} {verb} the keys", todo
    if body.kind == "BONE":
        for pb in obj.pose.bones:
            for c in pb.constraints:
                if c.mute or c.type not in ("IK", "SPLINE_IK") or c.influence <= 0.0:
                    continue
                chain, b, n = [], pb, c.chain_count
                if c.type == "IK" and not c.use_tail:
                    b = pb.parent
                while b is not None and (n == 0 or len(chain) < n):
                    chain.append(b.name)
                    b = b.parent
                if body.name in chain:
                    return (f"the {_constraint_label(c)} of '{pb.name}' poses its chain",
                            "switch the limb to FK or mute the IK constraint")
    driven = sorted({d.data_path.rpartition(".")[2] for d in drivers if d.data_path in paths})
    if driven:
        return (f"drivers on its {', '.join(driven)} override the keys",
                "remove the drivers (right-click the channel > Delete Driver)")
    if body.kind == "BONE" and owner.spline_joints.drive:
        return "the live drive poses it from its coordinates", "untick Drive on the bone"
    if body.kind == "BONE" and is_osim_armature(obj):
        return ("the OpenSim coordinates pose it",
                "make the simulation the armature's action (the NLA's active action)")
    return None


def fk_control(obj, name):
    """The FK control of a Rigify ORG/DEF bone named ``name`` (without the prefix), e.g.
    'upper_arm_fk.L' for 'upper_arm.L' or 'upper_arm.L.001'; None when there is none."""
    base = name
    while True:
        stem, dot, tail = base.rpartition(".")
        if dot and tail.isdigit():
            base = stem
            continue
        break
    stem, dot, side = base.rpartition(".")
    candidates = [f"{stem}_fk.{side}"] if dot else []
    candidates.append(f"{base}_fk")
    return next((c for c in candidates if c in obj.pose.bones), None)
