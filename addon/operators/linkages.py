"""Linkages: joints between objects that close loops, assembled live as a driver moves
(seed 004) and baked to keys, either as that live assembly over the scene's frames or as the
passive dynamics under gravity and springs (Stoermer steps, or the couplings solver with
limits; seed 002).

Every operator validates everything (bodies present, no joint of a body with itself, no loop
repeating a constraint, ...) before its first write; a bake
(:class:`..linkage_bake.LinkageBakeJob`) writes its keys into a new action per object and
keeps the object's previous action on an NLA track.
"""

from __future__ import annotations

import numpy as np
import bpy
from bpy.props import BoolProperty, EnumProperty, FloatVectorProperty, IntProperty, StringProperty

from ...core.lie import se3, so3
from .. import bridge, linkage_bridge, linkage_handlers
from ..linkage_bake import LinkageBakeJob
from ..linkage_bridge import active_linkage
from ..linkage_properties import AXIS_ITEMS, KIND_ITEMS
from ._common import ThreadedBake, reporting

#: joint kinds placed on a curve or surface object (frame 1 is that object's frame)
PATH_KINDS = ("curve", "curve_point", "surface_point")
#: rotation whose z axis is world X, Y or Z (a joint's axis is its frame's z)
_AXIS_ROTATIONS = {"X": so3.exp(np.array([0.0, np.pi / 2, 0.0])),
                   "Y": so3.exp(np.array([-np.pi / 2, 0.0, 0.0])),
                   "Z": np.eye(3)}


def _unique(names, base: str) -> str:
    name, k = base, 1
    while name in names:
        name, k = f"{base}.{k:03d}", k + 1
    return name


def joint_frame(location, axis: str, active) -> np.ndarray:
    """World frame ``(4, 4)`` of a new joint at ``location`` (3,) with its z along ``axis``
    (an AXIS_ITEMS key; LOCAL_* use the rotation of the active body, a
    :class:`.linkage_bridge.BodyRef`)."""
    where, letter = axis.split("_")
    R = _AXIS_ROTATIONS[letter]
    if where == "LOCAL":
        R = linkage_bridge.body_pose(active)[:3, :3] @ R
    return se3.from_rp(R, np.asarray(location, dtype=float))


class _OnLinkage:
    """Operator mixin: ``index`` of the linkage acted on (-1: the active one); available when
    the scene has a linkage."""

    index: IntProperty(name="Linkage", default=-1, description="Linkage to act on (-1: the active one)")

    @classmethod
    def poll(cls, context):
        return len(context.scene.spline_joints_linkages) > 0


class SPLINE_JOINTS_OT_add_linkage(bpy.types.Operator):
    """Add an empty linkage to the scene and make it the active one"""

    bl_idname = "spline_joints.add_linkage"
    bl_label = "Add Linkage"
    bl_options = {"REGISTER", "UNDO"}

    name: StringProperty(name="Name", default="Linkage")

    def execute(self, context):
        scene = context.scene
        item = scene.spline_joints_linkages.add()
        item.name = _unique({x.name for x in scene.spline_joints_linkages if x != item}, self.name)
        scene.spline_joints_active_linkage = len(scene.spline_joints_linkages) - 1
        self.report({"INFO"}, f"Added linkage '{item.name}'")
        return {"FINISHED"}


#: body colours of the demo linkages, in turn
_COLOURS = ((0.85, 0.45, 0.2, 1.0), (0.25, 0.5, 0.8, 1.0), (0.35, 0.65, 0.35, 1.0),
            (0.75, 0.7, 0.3, 1.0), (0.6, 0.4, 0.7, 1.0))


def _demo_items(self, context):
    from ...core.linkage_demos import DEMOS

    if not _DEMO_ITEMS:
        _DEMO_ITEMS.extend((k, k.replace("_", " ").title(), f"core.linkage_demos.DEMOS['{k}']")
                           for k in DEMOS)
    return _DEMO_ITEMS


_DEMO_ITEMS: list = []  # Blender needs the enum item strings kept alive


class SPLINE_JOINTS_OT_add_demo_linkage(bpy.types.Operator):
    """Place a demo linkage of the core library (four-bar, scissor lift, door with a stop): one
    box object per body and a new linkage joining them"""

    bl_idname = "spline_joints.add_demo_linkage"
    bl_label = "Add Demo Linkage"
    bl_options = {"REGISTER", "UNDO"}

    demo: EnumProperty(name="Demo", items=_demo_items, description="The demo linkage to place")
    driven: BoolProperty(name="Driven", default=True,
                         description="Keep the demo's driver (live assembly); off: released, "
                                     "for a dynamics bake")
    offset: FloatVectorProperty(name="Offset", size=3, unit="LENGTH",
                                description="Move the whole linkage by this much (m)")

    @reporting
    def execute(self, context):
        import dataclasses

        from ...core import display
        from ...core.linkage_demos import DEMOS

        scene = context.scene
        linkage, sizes = DEMOS[self.demo]()
        move = se3.from_rp(np.eye(3), np.array(self.offset, dtype=float))
        linkage = dataclasses.replace(
            linkage, driver=linkage.driver if self.driven else "",
            drive_joint=linkage.drive_joint if self.driven else "",
            bodies=tuple(dataclasses.replace(b, T=move @ b.T) for b in linkage.bodies),
            joints=tuple(dataclasses.replace(j, frame1=move @ j.frame1) if j.body1 == "" else j
                         for j in linkage.joints),
            springs=tuple(dataclasses.replace(s, point1=s.point1 + move[:3, 3]) if s.body1 == "" else s
                          for s in linkage.springs))
        name = _unique({x.name for x in scene.spline_joints_linkages}, self.demo)
        collection = bpy.data.collections.new(f"SJ {name}")
        scene.collection.children.link(collection)
        objects = {}
        for k, body in enumerate(linkage.bodies):
            verts, faces = display.box(sizes[body.name])
            obj = bridge.write_display_object(f"{name}.{body.name}", (verts, faces), f"SJ {body.name}",
                                              _COLOURS[k % len(_COLOURS)], collection)
            obj.matrix_world = bridge.array_to_matrix(body.T)
            obj.spline_joints_linkage_mass = body.mass
            objects[body.name] = obj
        context.view_layer.update()  # matrix_world as evaluated from the stored transforms
        item = scene.spline_joints_linkages.add()
        item.name = name

        def stored(body, T):
            """A frame of the description in the body as Blender holds it (single precision),
            so the frames of each joint coincide at the objects' poses."""
            if body == "":
                return T
            return se3.inv(linkage_bridge.object_pose(objects[body])) @ linkage.bodies[linkage.index(body)].T @ T

        for j in (*linkage.joints, *linkage.springs):
            joint = item.joints.add()
            joint.name = j.name
            joint.body1 = objects.get(j.body1)
            joint.body2 = objects[j.body2]
            joint.to_world = j.body1 == ""
            if hasattr(j, "kind"):
                joint.kind = j.kind
                linkage_bridge.write_frames(joint, stored(j.body1, j.frame1), stored(j.body2, j.frame2))
                if j.lower:
                    joint.use_limits = True
                    joint.lower_angle, joint.upper_angle = j.lower[-1], j.upper[-1]
                    if len(j.lower) == 2:
                        joint.lower_slide, joint.upper_slide = j.lower[0], j.upper[0]
            else:
                joint.kind = "spring"
                linkage_bridge.write_frames(joint, stored(j.body1, se3.from_rp(np.eye(3), j.point1)),
                                            stored(j.body2, se3.from_rp(np.eye(3), j.point2)))
                joint.stiffness, joint.rest_length, joint.damping = j.stiffness, j.rest, j.damping
        self._markers(linkage, objects, collection, name)
        item.driver = objects.get(linkage.driver)
        item.drive_joint = linkage.drive_joint
        item.live = bool(linkage.driver or linkage.drive_joint)
        item.mode = "ASSEMBLY" if item.live else "DYNAMICS"
        scene.spline_joints_active_linkage = len(scene.spline_joints_linkages) - 1
        self.report({"INFO"}, f"Added linkage '{name}': {len(linkage.bodies)} bodies, "
                              f"{len(linkage.joints)} joints, {len(linkage.springs)} springs")
        return {"FINISHED"}


    @staticmethod
    def _markers(linkage, objects, collection, name):
        """A pin along each joint's axis, drawn in (and following) its second body, and a
        grey block where a joint holds a body to the world."""
        from ...core import display

        pin = display.cylinder(_PIN[0], _PIN[1])
        for j in linkage.joints:
            body = objects[j.body2]
            T = se3.inv(linkage_bridge.object_pose(body)) @ linkage.bodies[linkage.index(j.body2)].T @ j.frame2
            verts = pin[0] @ T[:3, :3].T + T[:3, 3]
            marker = bridge.write_display_object(f"{name}.{j.name} pin", (verts, pin[1]), "SJ joint pin",
                                                 (0.2, 0.2, 0.22, 1.0), collection)
            marker.parent = body
            if j.body1 == "":
                block = display.box((3 * _PIN[0], 3 * _PIN[0], 3 * _PIN[0]))
                ground = bridge.write_display_object(f"{name}.{j.name} ground", block, "SJ ground block",
                                                     (0.55, 0.56, 0.58, 1.0), collection)
                ground.matrix_world = bridge.array_to_matrix(j.frame1)


#: radius and length (m) of the pins drawn at the demo linkages' joints
_PIN = (0.035, 0.14)


class SPLINE_JOINTS_OT_remove_linkage(_OnLinkage, bpy.types.Operator):
    """Remove the active linkage (its objects and their keys stay)"""

    bl_idname = "spline_joints.remove_linkage"
    bl_label = "Remove Linkage"
    bl_options = {"REGISTER", "UNDO"}

    @reporting
    def execute(self, context):
        scene = context.scene
        i, item = active_linkage(scene, self.index)
        name = item.name
        scene.spline_joints_linkages.remove(i)
        scene.spline_joints_active_linkage = max(0, min(i, len(scene.spline_joints_linkages) - 1))
        self.report({"INFO"}, f"Removed linkage '{name}'")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_add_link_joint(bpy.types.Operator):
    """Join the selected object (the world when only one is selected) to the active object by a
    joint at the 3D cursor, or by a spring; a joint that would repeat constraints of a loop is
    refused"""

    bl_idname = "spline_joints.add_link_joint"
    bl_label = "Add Joint"
    bl_options = {"REGISTER", "UNDO"}

    kind: EnumProperty(name="Type", items=KIND_ITEMS,
                       description="What the new joint allows between the two bodies")
    axis: EnumProperty(name="Axis", items=AXIS_ITEMS, default="LOCAL_Z",
                       description="Axis of the joint (the hinge or slide axis, the plane's normal)")
    at_cursor: BoolProperty(name="At 3D Cursor", default=True,
                            description="Place the joint at the 3D cursor (else at the active "
                                        "object's origin)")
    body1: StringProperty(name="First Body", description="Object name of the first body (with "
                                                          "Second Body set; empty: the world)")
    body2: StringProperty(name="Second Body", description="Object name of the moving body "
                                                           "(empty: use the selection)")
    bone1: StringProperty(name="First Bone", description="With First Body an armature: the bone "
                                                          "that is the first body")
    bone2: StringProperty(name="Second Bone", description="With Second Body an armature: the bone "
                                                           "that is the moving body")
    name: StringProperty(name="Name", description="Joint name (empty: the type's name)")
    curve: StringProperty(name="Curve", description="Spline Curve type: the curve object's name (its "
                                                     "points are the control points; put the 3D cursor "
                                                     "on the path)")
    surface: StringProperty(name="Surface", description="Point on Surface type: the NURBS surface "
                                                         "object's name (its points are the control "
                                                         "points; put the 3D cursor on the surface)")
    linkage: IntProperty(name="Linkage", default=-1,
                         description="Linkage to add to (-1: the active one, made if none)")

    @reporting
    def execute(self, context):
        scene = context.scene
        first, second = self._bodies(context)
        if first is not None and first == second:
            raise ValueError(f"a joint would join '{second.name}' to itself; pick two different objects")
        for body in (first, second):
            if body is not None:
                linkage_bridge.check_body(body)
        location = scene.cursor.location if self.at_cursor else linkage_bridge.body_pose(second)[:3, 3]
        curve = surface = None
        if self.kind in PATH_KINDS:  # frame 1: the path object's own frame; frame 2 unturned from it
            wanted = "SURFACE" if self.kind == "surface_point" else "CURVE"
            path_name = self.surface if wanted == "SURFACE" else self.curve
            path = bpy.data.objects.get(path_name)
            if path is None or path.type != wanted:
                raise ValueError(f"a {dict((k, n) for k, n, _ in KIND_ITEMS)[self.kind]} joint needs a "
                                 f"{wanted.lower()} object; '{path_name}' is not one")
            curve, surface = (None, path) if wanted == "SURFACE" else (path, None)
            C = linkage_bridge.object_pose(path)
            T1 = C if first is None else se3.inv(linkage_bridge.body_pose(first)) @ C
            T2 = se3.inv(linkage_bridge.body_pose(second)) @ se3.from_rp(C[:3, :3], np.array(location))
        else:
            F = joint_frame(location, self.axis, second)
            T1, T2 = linkage_bridge.joint_frames_at(F, first, second)
        items = scene.spline_joints_linkages
        item = active_linkage(scene, self.linkage)[1] if len(items) else None
        names = set() if item is None else {j.name for j in item.joints}
        name = self.name or _unique(names, dict((k, n) for k, n, _ in KIND_ITEMS)[self.kind])
        if name in names:
            raise ValueError(f"the linkage has a joint named '{name}' already; pick another name")
        self._validate(scene, item, name, first, second, T1, T2, curve, surface)
        # -- checked; write ----------------------------------------------------------------
        if item is None:
            item = items.add()
            item.name = "Linkage"
            scene.spline_joints_active_linkage = 0
        joint = item.joints.add()
        joint.name, joint.kind = name, self.kind
        joint.body1, joint.bone1 = (None, "") if first is None else (first.obj, first.bone)
        joint.body2, joint.bone2 = second.obj, second.bone
        joint.to_world = first is None
        joint.curve, joint.surface = curve, surface
        linkage_bridge.write_frames(joint, T1, T2)
        item.active_joint = len(item.joints) - 1
        what = "spring" if self.kind == "spring" else f"{self.kind} joint"
        self.report({"INFO"}, f"Added {what} '{name}' between "
                              f"{'the world' if first is None else repr(first.name)} and '{second.name}'")
        return {"FINISHED"}

    def _bodies(self, context):
        """``(first, second)`` bodies (:class:`.linkage_bridge.BodyRef`; first None: the world):
        the named objects (and bones), or the selection: in Pose Mode the active bone moves
        relative to another selected bone (else the world), otherwise the active object
        relative to another selected object."""
        ref = linkage_bridge.body_ref
        if self.body2:
            objs = [bpy.data.objects.get(n) if n else None for n in (self.body1, self.body2)]
            for n, o in zip((self.body1, self.body2), objs):
                if n and o is None:
                    raise ValueError(f"no object named '{n}'")
            return ref(objs[0], self.bone1), ref(objs[1], self.bone2)
        active = context.active_object
        if active is None:
            raise ValueError("make the moving object (or bone) active (click it last)")
        if context.mode == "POSE" and context.active_pose_bone is not None:
            bone = context.active_pose_bone
            others = [ref(b.id_data, b.name) for b in context.selected_pose_bones or () if b != bone]
            second = ref(bone.id_data, bone.name)
        else:
            others = [ref(o) for o in context.selected_objects if o != active]
            second = ref(active)
        if len(others) > 1:
            raise ValueError(f"select one or two bodies, not {len(others) + 1}: the active one moves "
                             "relative to the other (or to the world)")
        return (others[0] if others else None), second

    def _validate(self, scene, item, name, first, second, T1, T2, curve, surface):
        """The linkage with the new joint must pass the core's checks (rank check included)."""
        import dataclasses

        from ...core.linkage import LinkJoint, LinkSpring, dynamic_system

        if item is not None and len(item.joints):
            linkage, objects = linkage_bridge.read_linkage(scene, item, driven=False)
        else:
            from ...core.linkage import Linkage

            linkage, objects = Linkage((), ()), []
        bodies = list(linkage.bodies) + [linkage_bridge.read_body(o) for o in (first, second)
                                         if o is not None and o not in objects]
        b1 = "" if first is None else first.name
        if self.kind == "spring":
            springs = linkage.springs + (LinkSpring(name, b1, second.name, T1[:3, 3], T2[:3, 3], 100.0, 0.0),)
            linkage = dataclasses.replace(linkage, bodies=tuple(bodies), springs=springs)
        else:
            frames = None if curve is None else linkage_bridge.read_curve_frames(curve)
            grid = None if surface is None else linkage_bridge.read_surface_points(surface)
            joints = linkage.joints + (LinkJoint(name, self.kind, b1, second.name, T1, T2, curve=frames,
                                                 surface=grid),)
            linkage = dataclasses.replace(linkage, bodies=tuple(bodies), joints=joints)
        if linkage.joints:
            try:
                dynamic_system(linkage)
            except ValueError as exc:
                raise ValueError(f"joint '{name}' cannot be added: {exc}") from None


class SPLINE_JOINTS_OT_remove_link_joint(bpy.types.Operator):
    """Remove the active joint of the active linkage"""

    bl_idname = "spline_joints.remove_link_joint"
    bl_label = "Remove Joint"
    bl_options = {"REGISTER", "UNDO"}

    index: IntProperty(name="Joint", default=-1, description="Joint to remove (-1: the active one)")

    @classmethod
    def poll(cls, context):
        items = context.scene.spline_joints_linkages
        i = context.scene.spline_joints_active_linkage
        return 0 <= i < len(items) and len(items[i].joints) > 0

    @reporting
    def execute(self, context):
        _, item = active_linkage(context.scene)
        j = bridge.pick_index(item.joints, item.active_joint, self.index, "joint")
        name = item.joints[j].name
        if item.drive_joint == name:
            item.drive_joint = ""
        item.joints.remove(j)
        item.active_joint = max(0, min(j, len(item.joints) - 1))
        self.report({"INFO"}, f"Removed joint '{name}'")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_assemble_linkage(_OnLinkage, bpy.types.Operator):
    """Close the loops of the active linkage for its driver, starting from where the objects
    stand, and place the other bodies"""

    bl_idname = "spline_joints.assemble_linkage"
    bl_label = "Assemble"
    bl_options = {"REGISTER", "UNDO"}

    @reporting
    def execute(self, context):
        scene = context.scene
        _, item = active_linkage(scene, self.index)
        live, linkage, objects = linkage_handlers.live_assembly(scene, item)
        result = live.solve(linkage_handlers.driver_input(linkage, item), linkage.poses)
        problem = live.unreachable(result)
        if problem:
            raise ValueError(f"linkage '{item.name}': {problem}; nothing moved")
        linkage_handlers.write_result(item, result, live, objects)
        self.report({"INFO"}, f"Assembled '{item.name}': constraint error {result.error:.2e} (m/rad), "
                              f"{sum(result.cg_iterations)} CG iterations")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_bake_linkage(_OnLinkage, ThreadedBake, bpy.types.Operator):
    """Bake the active linkage to keys: its dynamics under gravity and springs, or its live
    assembly over the scene's frames (Esc cancels and writes nothing)"""

    bl_idname = "spline_joints.bake_linkage"
    bl_label = "Bake Linkage"
    bl_options = {"REGISTER", "UNDO"}

    def make_job(self, context):
        return LinkageBakeJob(context.scene, self.index)


classes = (SPLINE_JOINTS_OT_add_linkage, SPLINE_JOINTS_OT_add_demo_linkage, SPLINE_JOINTS_OT_remove_linkage, SPLINE_JOINTS_OT_add_link_joint,
           SPLINE_JOINTS_OT_remove_link_joint, SPLINE_JOINTS_OT_assemble_linkage, SPLINE_JOINTS_OT_bake_linkage)
