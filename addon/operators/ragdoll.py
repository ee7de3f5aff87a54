"""Set up a rig's simulation in one step: Make Ragdoll (:mod:`core.ragdoll`'s plan written to
every bone's Simulate and Reach Cone settings, masses by de Leva or from the skinned meshes,
capsules from the skin or the bone lengths, the gait2392 knee on request); Copy to Selected
(the active bone's settings onto the other selected bones) and Mirror (the selected bones'
settings onto their other-side bones, axes mirrored across the armature's X = 0 plane, as
Blender's own X-Axis Mirror), both in the Pose menu's Spline Joints entries.

Editing several bones at once: Alt+edit of a field in the Simulate panel (or right-click >
Copy to Selected) is Blender's own: for a property group registered on pose bones, Blender's
``UI_context_copy_to_selected_list`` (editors/interface/interface_ops.cc) finds the group
under the active pose bone and applies the edit through that path to every selected pose
bone; the panel draws the active pose bone's groups, so this holds for every Simulate and
Reach Cone field (a window's button context is needed, so the headless tests exercise
Copy Simulation to Selected, which copies every setting at once)."""

from __future__ import annotations

import math
import re

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty

from .. import bridge
from ..documents import rest_frames, store_document
from ..rig_scene import connected_head_problem, normalized
from ._common import reporting

#: bones listed by name in a report before "and N more"
LISTED = 12


def _listed(names):
    shown = ", ".join(names[:LISTED])
    return shown + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")


#: the Rigify controls that carry a deforming trunk bone rigidly (the chest and hips
#: controls bend the spine through its tweaks, so the bones between are welded)
RIGIFY_TRUNK = {"spine": "torso", "spine.004": "neck", "spine.006": "head"}


def is_rigify(obj):
    """Whether ``obj`` is a rig Rigify generated (its deforming bones are DEF-)."""
    return bool(obj.data.get("rig_id")) and any(b.name.startswith("DEF-") for b in obj.data.bones)


def rigify_parent(obj, bone):
    """The deforming bone a Rigify DEF bone hangs from in the body: its first ancestor that
    is a DEF bone or an ORG bone with a DEF twin other than itself; None at the root."""
    b = bone.parent
    while b is not None:
        if b.name.startswith("DEF-"):
            return b.name
        twin = "DEF-" + b.name[4:]
        if b.name.startswith("ORG-") and twin != bone.name and twin in obj.data.bones:
            return twin
        b = b.parent
    return None


def rigify_control(obj, def_name):
    """The control a Rigify DEF bone follows rigidly (its FK control, the shoulder, the
    torso, neck or head), or None."""
    from ..bake_checks import fk_control

    base = def_name[4:]
    if base in RIGIFY_TRUNK:
        return RIGIFY_TRUNK[base] if RIGIFY_TRUNK[base] in obj.pose.bones else None
    fk = fk_control(obj, base)
    if fk is not None and re.search(r"\.\d{3}$", base) is None:    # not a limb's piece
        return fk
    return base if base.startswith("shoulder.") and base in obj.pose.bones else None


def rest_bones(obj):
    """The armature's bones at rest as :class:`core.ragdoll.RestBone` (armature space,
    parents first; a Rigify rig's DEF bones hang from each other, :func:`rigify_parent`);
    ValueError for a scaled armature or one in Edit Mode."""
    from ...core.ragdoll import RestBone

    if obj.data.is_editmode:
        raise ValueError(f"armature '{obj.name}' is in Edit Mode; leave Edit Mode (Tab) so its "
                         "bones' rest poses are read")
    scale = normalized(obj.matrix_world)[1]
    if np.abs(scale - 1.0).max() > 1e-6:
        raise ValueError(f"armature '{obj.name}' is scaled by {np.round(scale, 4).tolist()}; a "
                         "ragdoll is measured in metres: apply its scale (Ctrl+A > Scale) first")
    rigify = is_rigify(obj)
    out = []
    for b in obj.data.bones:
        M = bridge.rigid(bridge.matrix_to_array(b.matrix_local))
        parent = rigify_parent(obj, b) if rigify and b.name.startswith("DEF-") else \
            b.parent.name if b.parent else None
        out.append(RestBone(b.name, parent, tuple(b.head_local), tuple(b.tail_local),
                            tuple(M[:3, :3].ravel())))
    order = {b.name: k for k, b in enumerate(out)}
    depth = {}

    def level(b):                 # DEF parents may come after their children in Blender
        if b.name not in depth:
            depth[b.name] = 0 if b.parent is None else 1 + level(out[order[b.parent]])
        return depth[b.name]

    return sorted(out, key=level)


def _knee_documents(obj, plan):
    """``{shin bone: transferred gait2392 knee document}`` for the plan's knees; ValueError
    (nothing written) for a knee the preset cannot sit on."""
    from ...core.transfer import preset_document, transfer_document

    out = {}
    for name, setup in plan.setups.items():
        if setup.segment != "shank" or setup.kind != "HINGE":
            continue
        pb = obj.pose.bones[name]
        right = np.dot(np.array(pb.bone.head_local), plan.left) < 0.0
        doc = preset_document("KNEE_R" if right else "KNEE_L")
        result = transfer_document(doc, rest_frames(pb), "parent")
        problem = connected_head_problem(pb, "FITTED", result.document.joint)
        if problem is not None:
            raise ValueError(f"{problem[0]}: the gait2392 knee slides the shin; {problem[1]}, "
                             "or untick Knee Preset")
        out[name] = result.document
    return out


def _capsules(obj, plan, use_mesh):
    """``({bone: capsule radius}, sized from the skin: [bones])``: the skin's median distance
    from each bone (:func:`core.ragdoll.capsule_radius`) where a skinned mesh covers it,
    else the plan's radius from the bone's length."""
    from ...core.ragdoll import capsule_radius
    from ..massprops import skin_points

    radii = {n: s.radius for n, s in plan.setups.items()}
    skinned = []
    if use_mesh:
        points = skin_points(obj)
        for name in plan.setups:
            if name in points:
                b = obj.data.bones[name]
                radii[name] = capsule_radius(points[name], b.head_local, b.tail_local)
                skinned.append(name)
    return radii, skinned


def rigify_setups(obj, bones, plan):
    """A Rigify rig's plan simulated on its DEF bones, keyed on their controls: ``{bone:
    (joint parent bone, keys-on control)}``; a bone without a control of its own is welded
    (``FIXED``) and keyed through its parent's control."""
    parents = {b.name: b.parent for b in bones}
    out = {}
    for name, setup in plan.setups.items():            # parents first
        control = rigify_control(obj, name)
        if control is None or setup.kind == "FIXED":
            up = parents[name]
            if up is None or up not in out:
                raise ValueError(f"Rigify bone '{name}' follows no control this ragdoll keys; "
                                 "simulate the DEF bones from the torso down")
            setup.kind, setup.range, setup.cone, setup.twist = "FIXED", None, None, None
            control = out[up][1]
        out[name] = (parents[name] or "", control)
    return out


def write_setup(pb, setup, radius, mass_source, knee=None, rigify=None):
    """One bone's plan into its Simulate (``spline_joints_sim``) and Reach Cone
    (``spline_joints``) settings; ``rigify``: its (joint parent bone, keys-on control)."""
    s, c = pb.spline_joints_sim, pb.spline_joints
    s.enabled, s.kinematic = True, False
    s.parent_bone, s.key_bone = rigify if rigify is not None else ("", "")
    s.kind = setup.kind
    s.use_range = setup.range is not None
    s.use_cone = setup.cone is not None
    if setup.kind == "HINGE":
        s.axis = setup.axis
        s.range_min, s.range_max = setup.range
    if setup.cone is not None:
        c.cone_shape, c.cone_axis = "ELLIPTICAL", (0.0, 1.0, 0.0)
        c.cone_half_angle_x, c.cone_half_angle_z = setup.cone
        c.twist_limit = setup.twist if setup.twist is not None else math.pi
    if knee is not None:
        stored = store_document(c, knee)
        c.n_coordinates = stored.joint.nq
        s.kind, s.use_range = "FITTED", True
        s.range_min, s.range_max = (float(v) for v in stored.ranges[0])
    s.mass_source = mass_source
    if mass_source == "MANUAL":
        s.mass, s.com, s.inertia = setup.mass, setup.com, setup.inertia
    s.collision, s.collision_radius = "CAPSULE", radius
    s.capsule_radius = radius


class SPLINE_JOINTS_OT_make_ragdoll(bpy.types.Operator):
    """Make the active armature a ragdoll in one step: joints, hinge ranges, reach cones and
    twist limits by the bones' names (meta-rig, Rigify DEF, Mixamo, Unreal, .L/.R, _l/_r),
    masses and collision capsules; unknown bones are listed"""

    bl_idname = "spline_joints.make_ragdoll"
    bl_label = "Make Ragdoll"
    bl_options = {"REGISTER", "UNDO"}

    total_mass: FloatProperty(name="Body Mass", default=75.0, min=1.0, soft_max=200.0,
                              unit="MASS", description="The character's mass, spread over the "
                                                       "bones by de Leva's segment fractions")
    sex: EnumProperty(name="Tables", default="male", items=[
        ("male", "Male", "de Leva (1996) male segment parameters"),
        ("female", "Female", "de Leva (1996) female segment parameters")],
        description="Which of de Leva's segment tables")
    masses: EnumProperty(name="Masses", default="DE_LEVA", items=[
        ("DE_LEVA", "Body Mass", "Segment fractions of the Body Mass (de Leva 1996): mass, "
                                 "centre of mass and inertia typed into each bone"),
        ("MESH", "Mesh Volumes", "From the volumes of the meshes skinned or parented to each "
                                 "bone at the density below (a capsule where none is)")],
        description="Where the bones' masses come from")
    density: FloatProperty(name="Density", default=1000.0, min=1e-3,
                           description="kg/m^3 of the meshes when Masses is Mesh Volumes")
    shapes_from_mesh: BoolProperty(name="Capsules from Skin", default=True,
                                   description="Size each collision capsule by the skinned "
                                               "mesh around its bone (else, or without a "
                                               "mesh, by the bone's length)")
    knee_preset: BoolProperty(name="gait2392 Knees", default=False,
                              description="Put the OpenSim gait2392 knee (it rolls and slides) "
                                          "on the shins instead of a hinge; a connected shin "
                                          "must be disconnected first")
    selected_only: BoolProperty(name="Selected Bones", default=False,
                                description="Set up only the selected bones (Pose Mode); "
                                            "off: every bone of the armature")

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return obj is not None and obj.type == "ARMATURE"

    @reporting
    def execute(self, context):
        from ...core.ragdoll import plan_ragdoll

        obj = context.active_object
        if obj is None or obj.type != "ARMATURE":
            raise ValueError("make an armature active to make it a ragdoll")
        bones = rest_bones(obj)
        rigify = is_rigify(obj)
        only = [b.name for b in bones if b.name.startswith("DEF-")] if rigify else None
        if self.selected_only:
            only = [pb.name for pb in obj.pose.bones if _is_selected(pb)
                    and (only is None or pb.name in only)]
            if not only:
                raise ValueError("no bone is selected: select the bones in Pose Mode or untick "
                                 "Selected Bones" + (" (a Rigify rig: its DEF bones)" if rigify
                                                     else ""))
        plan = plan_ragdoll(bones, self.total_mass, self.sex, only)
        keyed = rigify_setups(obj, bones, plan) if rigify else {}
        if rigify and self.knee_preset:
            raise ValueError("the gait2392 knee slides the shin, which a Rigify FK control "
                             "cannot follow: untick Knee Preset")
        knees = _knee_documents(obj, plan) if self.knee_preset else {}
        radii, skinned = _capsules(obj, plan, self.shapes_from_mesh)
        if self.masses == "MESH":
            from ..massprops import armature_mass_properties

            armature_mass_properties(obj, self.density, bone_names=list(plan.setups))
        # everything is computed: write
        source = "MANUAL" if self.masses == "DE_LEVA" else "AUTO"
        for name, setup in plan.setups.items():
            pb = obj.pose.bones[name]
            write_setup(pb, setup, radii[name], source, knees.get(name), keyed.get(name))
            if source == "AUTO":
                pb.spline_joints_sim.density = self.density
        for name in plan.left_alone:
            obj.pose.bones[name].spline_joints_sim.enabled = False
        mass = sum(s.mass for s in plan.setups.values())
        parts = [f"'{obj.name}' is a ragdoll ({plan.scheme} names): {len(plan.setups)} bones",
                 f"{mass:.1f} kg by de Leva ({self.sex})" if source == "MANUAL"
                 else f"masses from the meshes at {self.density:g} kg/m^3",
                 f"capsules from the skin on {len(skinned)}, from bone lengths on "
                 f"{len(plan.setups) - len(skinned)}"]
        if knees:
            parts.append(f"gait2392 knees on {', '.join(knees)}")
        if keyed:
            controls = sorted({c for _, c in keyed.values()})
            parts.append(f"a bake keys {len(controls)} Rigify controls ({_listed(controls)})")
        text = "; ".join(parts)
        if plan.unknown:
            welded = len(plan.unknown) - len(plan.left_alone)
            text += (f"; {len(plan.unknown)} unknown bone(s), not simulated: "
                     f"{_listed(plan.unknown)}" if not welded else
                     f"; {len(plan.unknown)} unknown bone(s): {_listed(plan.unknown)} ("
                     f"{welded} welded to their parents, the others not simulated)")
            self.report({"WARNING"}, text)
        else:
            self.report({"INFO"}, text)
        return {"FINISHED"}


#: settings that are results of the last run, not set-up: never copied
_RESULTS = {"rna_type", "shown_mass", "shown_source"}
#: the Reach Cone settings a simulated ball joint uses
CONE_SETTINGS = ("cone_shape", "cone_axis", "cone_half_angle", "cone_half_angle_x",
                 "cone_half_angle_z", "twist_limit", "cone_margin")


def copy_simulation(source, target):
    """Every simulation setting of pose bone ``source`` onto pose bone ``target``: its
    Simulate settings (``spline_joints_sim``) and its reach cone (``spline_joints``)."""
    src, dst = source.spline_joints_sim, target.spline_joints_sim
    for prop in src.bl_rna.properties:
        if prop.identifier not in _RESULTS and not prop.is_readonly:
            setattr(dst, prop.identifier, getattr(src, prop.identifier))
    for name in CONE_SETTINGS:
        setattr(target.spline_joints, name, getattr(source.spline_joints, name))


def _is_selected(pb):
    """Whether a pose bone is selected (Blender 5 keeps it on the pose bone, 4.x on the
    bone)."""
    return pb.select if hasattr(pb, "select") else pb.bone.select


def _selected_bones(context):
    obj = context.active_object
    if obj is None or obj.type != "ARMATURE" or obj.pose is None:
        raise ValueError("make an armature active and select its bones in Pose Mode")
    return obj, [pb for pb in obj.pose.bones if _is_selected(pb)]


class SPLINE_JOINTS_OT_copy_simulation(bpy.types.Operator):
    """Copy every simulation setting of the active bone (joint, range, reach cone and twist,
    spring, mass, collision) to the other selected bones"""

    bl_idname = "spline_joints.copy_simulation"
    bl_label = "Copy Simulation to Selected"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.active_pose_bone is not None

    @reporting
    def execute(self, context):
        obj, selected = _selected_bones(context)
        active = context.active_pose_bone
        targets = [pb for pb in selected if pb != active]
        if not targets:
            raise ValueError("select the bones to copy to, then the bone to copy from last "
                             "(active)")
        for pb in targets:
            copy_simulation(active, pb)
        self.report({"INFO"}, f"'{active.name}''s simulation settings copied to "
                              f"{len(targets)} bone(s)")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_mirror_simulation(bpy.types.Operator):
    """Copy the selected bones' simulation settings to their other-side bones (.L/.R, _l/_r,
    Left/Right), hinge axes, centres of mass, inertias and cones mirrored across the
    armature's X = 0 plane"""

    bl_idname = "spline_joints.mirror_simulation"
    bl_label = "Mirror Simulation"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.active_pose_bone is not None

    @reporting
    def execute(self, context):
        from ...core.ragdoll import mirror_name, mirror_setup

        obj, selected = _selected_bones(context)
        pairs, missing = [], []
        for pb in selected:
            other = mirror_name(pb.name)
            if other is None:
                continue
            if other not in obj.pose.bones:
                missing.append(f"'{other}'")
            elif not _is_selected(obj.pose.bones[other]):
                pairs.append((pb, obj.pose.bones[other]))
        if missing:
            raise ValueError(f"no bone {', '.join(missing)} to mirror to: rename the other "
                             "side's bones to match (.L/.R, _l/_r, Left/Right)")
        if not pairs:
            raise ValueError("select the bones of one side (.L/.R, _l/_r, Left/Right) whose "
                             "settings go to the other side's (not selected)")
        mirrored = []
        for pb, other in pairs:
            frames = [bridge.rigid(bridge.matrix_to_array(b.bone.matrix_local))[:3, :3]
                      for b in (pb, other)]
            s, c = pb.spline_joints_sim, pb.spline_joints
            flips = mirror_setup(*frames, (1.0, 0.0, 0.0), axis=s.axis, com=s.com,
                                 inertia=s.inertia,
                                 halves=(c.cone_half_angle_x, c.cone_half_angle_z))
            axis2 = mirror_setup(*frames, (1.0, 0.0, 0.0), axis=s.axis2)["axis"]
            cone_axis = mirror_setup(*frames, (1.0, 0.0, 0.0), com=c.cone_axis)["com"]
            mirrored.append((other, flips, axis2, cone_axis, pb))
        for other, flips, axis2, cone_axis, pb in mirrored:
            copy_simulation(pb, other)
            s, c = other.spline_joints_sim, other.spline_joints
            s.axis, s.axis2, s.com, s.inertia = flips["axis"], axis2, flips["com"], \
                flips["inertia"]
            c.cone_axis = cone_axis
            c.cone_half_angle_x, c.cone_half_angle_z = flips["halves"]
        self.report({"INFO"}, f"{len(mirrored)} bone(s) mirrored: "
                              + _listed([f"{pb.name} -> {o.name}" for o, _, _, _, pb in mirrored]))
        return {"FINISHED"}


def menu_pose(self, context):
    layout = self.layout
    layout.separator()
    layout.operator(SPLINE_JOINTS_OT_make_ragdoll.bl_idname, icon="ARMATURE_DATA")
    layout.operator(SPLINE_JOINTS_OT_copy_simulation.bl_idname, icon="COPYDOWN")
    layout.operator(SPLINE_JOINTS_OT_mirror_simulation.bl_idname, icon="MOD_MIRROR")


def register_menus():
    bpy.types.VIEW3D_MT_pose.append(menu_pose)


def unregister_menus():
    bpy.types.VIEW3D_MT_pose.remove(menu_pose)


classes = (SPLINE_JOINTS_OT_make_ragdoll, SPLINE_JOINTS_OT_copy_simulation,
           SPLINE_JOINTS_OT_mirror_simulation)
