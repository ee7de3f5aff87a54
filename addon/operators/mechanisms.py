"""Mechanisms from the core's demo library: place one in the scene, bake its dynamics to keys.

A mechanism is stored in the scene as its demo name and settings plus the objects that show
its bodies and its world-fixed ``scenery`` (``Scene.spline_joints_mechanisms``); baking rebuilds
it with ``core.mechanisms.DEMOS[demo]``, calls ``core.mechanisms.simulate_mechanism`` once
(:class:`BakeJob`) and keys the bodies' poses and the deforming scenery's shape keys.
"""

from __future__ import annotations

import threading

import bpy
import numpy as np
from bpy.props import EnumProperty, FloatProperty, IntProperty

from ...core import display
from .. import bridge
from ._common import pick_index, reporting

_DEMO_ITEMS: list = []  # Blender needs the enum item strings kept alive


def demos():
    from ...core.mechanisms import DEMOS

    return DEMOS


def demo_items(self, context):
    if not _DEMO_ITEMS:
        _DEMO_ITEMS.extend((k, k.replace("_", " ").title(), f"core.mechanisms.DEMOS['{k}']")
                           for k in demos())
    return _DEMO_ITEMS


def build_mechanism(demo: str, duration: float, substeps: int, scene):
    """The core Mechanism of a demo at the scene's frame rate, for ``duration`` seconds, with
    ``substeps`` integration steps per frame (0: the demo's own), through the builders'
    contract ``builder(fps=, substeps=, duration=, **params)`` (core.mechanisms)."""
    builder = demos().get(demo)
    if builder is None:
        raise ValueError(f"unknown demo '{demo}'; available: {', '.join(sorted(demos()))}")
    timing = {"fps": scene.render.fps / scene.render.fps_base, "duration": duration}
    if substeps:
        timing["substeps"] = substeps
    return builder(**timing)


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

    demo: EnumProperty(name="Demo", items=demo_items)
    duration: FloatProperty(name="Duration", default=2.0, min=0.01, unit="TIME_ABSOLUTE")

    @reporting
    def execute(self, context):
        scene = context.scene
        mech = build_mechanism(self.demo, self.duration, 0, scene)
        poses = np.tile(np.eye(4), (len(mech.display), 1, 1))
        if mech.model is not None:
            from ...core.kinematics import forward_kinematics

            poses = forward_kinematics(mech.model, mech.model.create_data(), mech.q0)
        meshes = [display_mesh(d) for d in (*mech.display, *mech.scenery)]  # before any writing
        name = _unique_name(scene, mech.name)
        collection = bpy.data.collections.new(f"SJ {name}")
        scene.collection.children.link(collection)
        item = scene.spline_joints_mechanisms.add()
        item.name, item.demo, item.title, item.duration = name, self.demo, mech.title, self.duration
        objects = [bridge.write_display_object(f"{name}.{d.name}", mesh, f"SJ {d.name}", d.colour, collection,
                                               d.visible, d.polylines)
                   for d, mesh in zip((*mech.display, *mech.scenery), meshes)]
        for obj, T in zip(objects, poses):
            obj.rotation_mode = "QUATERNION"
            obj.matrix_world = bridge.array_to_matrix(T)
            item.bodies.add().object = obj
        for obj in objects[len(mech.display):]:
            item.scenery.add().object = obj
        scene.spline_joints_active_mechanism = len(scene.spline_joints_mechanisms) - 1
        extra = f", {len(mech.scenery)} scenery" if mech.scenery else ""
        self.report({"INFO"}, f"Added '{mech.title}' as '{name}' ({len(mech.display)} bodies{extra})")
        return {"FINISHED"}


def display_mesh(disp):
    """(vertices (V, 3), faces) of a core BodyDisplay, or None for hints drawn only by their
    polylines; a deforming ``"surface"`` is drawn in its shape at t = 0 (a bake keys the rest)."""
    if disp.mesh == "surface":
        return disp.surface_mesh(0.0)
    return display.body_mesh(disp.mesh, disp.size, disp.axis, disp.offset)


def scenery_motion(mechanism, times) -> dict:
    """Shape keys of every deforming scenery surface over ``times`` (F,) in seconds (numpy only):
    ``{scenery index: (basis (V, 3), targets (K, V, 3), values (F, K))}``
    (:func:`core.display.shape_key_modes` of ``BodyDisplay.surface_mesh(t)`` at each time)."""
    return {i: display.shape_key_modes(np.stack([d.surface_mesh(t)[0] for t in times]), d.name)
            for i, d in enumerate(mechanism.scenery) if d.mesh == "surface"}


def write_bake(scene, item, result, scenery=None) -> int:
    """Key every body object from the result's world poses (F, nb, 4, 4) and every deforming
    scenery surface from ``scenery`` (:func:`scenery_motion` at the result's times) as
    shape-key values; returns frames written."""
    frames = scene.frame_start + result.times * scene.render.fps / scene.render.fps_base
    for k, ref in enumerate(item.bodies):
        obj = ref.object
        obj.rotation_mode = "QUATERNION"
        bridge.write_transform_keyframes(obj, "", "QUATERNION", frames, result.poses[:, k])
    for i, (basis, targets, values) in (scenery or {}).items():
        bridge.write_shape_key_animation(item.scenery[i].object, basis, targets, frames, values)
    item.baked_frames = len(frames)
    item.energy_drift = result.energy_drift
    item.bake_seconds = result.wall_time
    item.baked_steps = result.steps
    item.constraint_error = float(result.constraint_error.max()) if len(result.constraint_error) else 0.0
    return len(frames)


class BakeJob:
    """One dynamics bake, split by thread: prepare and finish touch Blender data and run on the
    main thread; :meth:`simulate` is numpy only and may run in a worker thread.

    Both the operator's headless ``execute`` and its interactive modal run go through
    ``BakeJob(scene, index)``, ``simulate()`` and ``finish(scene)``; Esc calls :meth:`cancel`,
    which makes the next :meth:`progress` call return False so the core stops.
    """

    def __init__(self, scene, index: int):
        i = pick_index(scene.spline_joints_mechanisms, scene.spline_joints_active_mechanism, index,
                       "mechanism")
        item = scene.spline_joints_mechanisms[i]
        for what, refs in (("bodies", item.bodies), ("scenery", item.scenery)):
            missing = [k for k, ref in enumerate(refs) if ref.object is None]
            if missing:
                raise ValueError(f"mechanism '{item.name}' lost the objects of {what} {missing}; add it again")
        self.mechanism = build_mechanism(item.demo, item.duration, item.substeps, scene)
        for what, displays, refs in (("bodies", self.mechanism.display, item.bodies),
                                     ("scenery", self.mechanism.scenery, item.scenery)):
            if len(displays) != len(refs):
                raise ValueError(f"mechanism '{item.name}' has {len(displays)} {what} but the scene holds "
                                 f"{len(refs)} objects for them; add it again")
        self.index, self.name = i, item.name
        self.fraction, self.cancelled, self.result, self.scenery = 0.0, False, None, {}

    def progress(self, fraction: float) -> bool:
        """The core's progress callback: records the fraction done; False once cancelled."""
        self.fraction = fraction
        return not self.cancelled

    def cancel(self) -> None:
        self.cancelled = True

    def simulate(self) -> None:
        """Run the core simulation and, once it completes, sample the deforming scenery at its
        times (:func:`scenery_motion`); the result or the exception is kept for :meth:`finish`."""
        from ...core.mechanisms import simulate_mechanism

        try:
            self.result = simulate_mechanism(self.mechanism, self.progress)
            if self.result.status == "completed":
                self.scenery = scenery_motion(self.mechanism, self.result.times)
        except Exception as exc:  # handed to the main thread, reported by finish()
            self.result = exc

    def finish(self, scene) -> tuple[set, str, str]:
        """Write the keys of a completed simulation: (operator result, report level, message).

        A cancelled simulation writes nothing; a failed one raises ValueError (nothing written).
        Everything written (body keys, scenery shape keys) was computed before the first write.
        A passive mechanism whose energy drifted more than its integrator allows
        (``core.mechanisms.energy_drift_warning``) is baked with a WARNING report saying so.
        """
        from ...core.mechanisms import energy_drift_warning

        result = self.result
        if isinstance(result, ValueError):  # the core's errors and the scenery's
            raise ValueError(f"Bake of '{self.name}' failed, no keyframes written: {result}")
        if isinstance(result, BaseException):
            raise ValueError(f"Bake of '{self.name}' failed, no keyframes written: the simulation "
                             f"stopped with {type(result).__name__} ({result}); try a shorter "
                             "duration or fewer substeps")
        if result.status != "completed":
            return ({"CANCELLED"}, "WARNING", f"Bake of '{self.name}' cancelled at "
                                              f"{100.0 * self.fraction:.0f} %: no keyframes written")
        n = write_bake(scene, scene.spline_joints_mechanisms[self.index], result, self.scenery)
        message = (f"Baked '{self.name}': {n} frames in {result.wall_time:.2f} s, "
                   f"energy drift {100.0 * result.energy_drift:.3f} %")
        warning = energy_drift_warning(self.mechanism, result.energy_drift)
        if warning:
            return {"FINISHED"}, "WARNING", f"{message}; warning: {warning}"
        return {"FINISHED"}, "INFO", message


class SPLINE_JOINTS_OT_bake_dynamics(bpy.types.Operator):
    """Simulate a mechanism with the core and key its bodies at the scene's frame rate
    (Esc cancels and writes nothing)"""

    bl_idname = "spline_joints.bake_dynamics"
    bl_label = "Bake Dynamics"
    bl_options = {"REGISTER", "UNDO"}

    index: IntProperty(name="Mechanism", default=-1, description="Mechanism to bake (-1: the active one)")

    @classmethod
    def poll(cls, context):
        return len(context.scene.spline_joints_mechanisms) > 0

    def _finish(self, context):
        status, level, message = self._job.finish(context.scene)
        self.report({level}, message)
        return status

    @reporting
    def execute(self, context):
        self._job = BakeJob(context.scene, self.index)
        self._job.simulate()
        return self._finish(context)

    def invoke(self, context, event):
        """Interactive run: simulate in a worker thread (numpy only) with a progress bar."""
        return self._start(context)

    def modal(self, context, event):
        return self._step(context, event.type)

    @reporting
    def _start(self, context):
        self._job = BakeJob(context.scene, self.index)
        self._thread = threading.Thread(target=self._job.simulate, daemon=True)
        self._thread.start()
        wm = context.window_manager
        wm.progress_begin(0, 100)
        self._timer = wm.event_timer_add(0.1, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    @reporting
    def _step(self, context, event_type: str):
        wm = context.window_manager
        if event_type == "ESC":
            self._job.cancel()
            return {"RUNNING_MODAL"}
        if event_type != "TIMER":
            return {"PASS_THROUGH"}
        wm.progress_update(int(100 * self._job.fraction))
        if self._thread.is_alive():
            return {"RUNNING_MODAL"}
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        return self._finish(context)


classes = (SPLINE_JOINTS_OT_add_mechanism, SPLINE_JOINTS_OT_bake_dynamics)
