"""Mechanisms from the core's demo library: place one in the scene, bake its dynamics to keys
(:class:`..mechanism_bake.BakeJob`), play it live (:mod:`..previews`).

A mechanism is stored in the scene as its demo name and settings plus the objects that show
its bodies and its ``scenery`` (``Scene.spline_joints_mechanisms``); each display's ``parts``
(joint markers, reach cones, wires) are child objects of its object, so they follow it.
"""

from __future__ import annotations

import bpy
import numpy as np
from bpy.props import EnumProperty, FloatProperty, IntProperty

from .. import bridge, previews
from ..mechanism_bake import BakeJob, build_mechanism, demos, display_mesh
from ._common import ThreadedBake, reporting

_DEMO_ITEMS: list = []  # Blender needs the enum item strings kept alive


def demo_items(self, context):
    if not _DEMO_ITEMS:
        _DEMO_ITEMS.extend((k, k.replace("_", " ").title(), f"core.mechanisms.DEMOS['{k}']")
                           for k in demos())
    return _DEMO_ITEMS


def _unique_name(scene, base: str) -> str:
    names = {m.name for m in scene.spline_joints_mechanisms}
    name, k = base, 1
    while name in names or bpy.data.collections.get(f"SJ {name}") is not None:
        name, k = f"{base}.{k:03d}", k + 1
    return name


class SPLINE_JOINTS_OT_add_mechanism(bpy.types.Operator):
    """Place a demo mechanism of the core library in the scene (one object per body and per
    scenery item)"""

    bl_idname = "spline_joints.add_mechanism"
    bl_label = "Add Mechanism"
    bl_options = {"REGISTER", "UNDO"}

    demo: EnumProperty(name="Demo", items=demo_items, description="The demo mechanism to add")
    duration: FloatProperty(name="Duration", default=2.0, min=0.01, unit="TIME_ABSOLUTE",
                            description="Seconds of motion the mechanism is simulated and baked for")

    @reporting
    def execute(self, context):
        scene = context.scene
        mech = build_mechanism(self.demo, self.duration, 0, scene)
        poses = np.tile(np.eye(4), (len(mech.display), 1, 1))
        if mech.model is not None:
            from ...core.kinematics import forward_kinematics

            poses = forward_kinematics(mech.model, mech.model.create_data(), mech.q0)
        displays = (*mech.display, *mech.scenery)
        springs = {i: d.spring_frames(poses[None]) for i, d in enumerate(mech.scenery)
                   if d.mesh == "helix"}
        meshes = [display_mesh(d) for d in displays]  # before any writing
        for i, (frames, lengths) in springs.items():
            meshes[len(mech.display) + i] = display_mesh(mech.scenery[i], float(lengths[0]))
        parts = [[display_mesh(p) for p in d.parts] for d in displays]
        name = _unique_name(scene, mech.name)
        collection = bpy.data.collections.new(f"SJ {name}")
        scene.collection.children.link(collection)
        item = scene.spline_joints_mechanisms.add()
        item.name, item.demo, item.title, item.duration = name, self.demo, mech.title, self.duration
        objects = [bridge.write_display_object(f"{name}.{d.name}", mesh, f"SJ {d.name}", d.colour, collection,
                                               d.visible, d.polylines)
                   for d, mesh in zip(displays, meshes)]
        for obj, d, part_meshes in zip(objects, displays, parts):
            for p, mesh in zip(d.parts, part_meshes):  # drawn in the body frame, following it
                child = bridge.write_display_object(f"{name}.{p.name}", mesh, f"SJ {p.name}", p.colour,
                                                    collection, d.visible and p.visible, p.polylines)
                child.parent = obj
        for obj, T in zip(objects, poses):
            obj.rotation_mode = "QUATERNION"
            obj.matrix_world = bridge.array_to_matrix(T)
            item.bodies.add().object = obj
        for i, obj in enumerate(objects[len(mech.display):]):
            if i in springs:
                obj.rotation_mode = "QUATERNION"
                obj.matrix_world = bridge.array_to_matrix(springs[i][0][0])
            item.scenery.add().object = obj
        scene.spline_joints_active_mechanism = len(scene.spline_joints_mechanisms) - 1
        extra = f", {len(mech.scenery)} scenery" if mech.scenery else ""
        self.report({"INFO"}, f"Added '{mech.title}' as '{name}' ({len(mech.display)} bodies{extra})")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_bake_dynamics(ThreadedBake, bpy.types.Operator):
    """Simulate a mechanism with the core and key its bodies at the scene's frame rate
    (Esc cancels and writes nothing)"""

    bl_idname = "spline_joints.bake_dynamics"
    bl_label = "Bake Dynamics"
    bl_options = {"REGISTER", "UNDO"}

    index: IntProperty(name="Mechanism", default=-1, description="Mechanism to bake (-1: the active one)")

    @classmethod
    def poll(cls, context):
        return len(context.scene.spline_joints_mechanisms) > 0

    def make_job(self, context):
        return BakeJob(context.scene, self.index)


class SPLINE_JOINTS_OT_live_mechanism(bpy.types.Operator):
    """Play a mechanism live: each frame is simulated when the playhead reaches it (and a
    little ahead), nothing is keyed; Clear Preview stops it"""

    bl_idname = "spline_joints.live_mechanism"
    bl_label = "Live Preview"
    bl_options = {"REGISTER"}

    index: IntProperty(name="Mechanism", default=-1, description="Mechanism to play (-1: the active one)")

    @classmethod
    def poll(cls, context):
        return len(context.scene.spline_joints_mechanisms) > 0

    @reporting
    def execute(self, context):
        scene = context.scene
        job = BakeJob(scene, self.index)       # validates the objects, builds the mechanism
        previews.start_live_mechanism(scene, job)
        self.report({"INFO"}, f"Live preview of '{job.name}': frames are simulated as the "
                              "playhead reaches them")
        return {"FINISHED"}


classes = (SPLINE_JOINTS_OT_add_mechanism, SPLINE_JOINTS_OT_bake_dynamics,
           SPLINE_JOINTS_OT_live_mechanism)
