"""Mechanisms from the core's demo library: place one in the scene, bake its dynamics to keys.

A mechanism is stored in the scene as its demo name and settings plus the objects that show
its bodies and its ``scenery`` (``Scene.spline_joints_mechanisms``); each display's ``parts``
(joint markers, reach cones, wires) are child objects of its object, so they follow it.
Baking rebuilds it with ``core.mechanisms.DEMOS[demo]``, calls
``core.mechanisms.simulate_mechanism`` once (:class:`BakeJob`) and keys the bodies' poses and
the moving scenery: the deforming surfaces' shape keys, and the springs' poses and stretch.
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


def display_mesh(disp, length: float = 1.0):
    """(vertices (V, 3), faces) of a core BodyDisplay, or None for hints drawn only by their
    polylines; a deforming ``"surface"`` is drawn in its shape at t = 0 and a ``"helix"`` at
    ``length`` along its local z (a bake keys the rest)."""
    if disp.mesh == "surface":
        return disp.surface_mesh(0.0)
    if disp.mesh == "helix":
        return display.helix(disp.size[0], disp.size[1], disp.size[2], length)
    return display.body_mesh(disp.mesh, disp.size, disp.axis, disp.offset, disp.geometry)


def scenery_motion(mechanism, times, poses) -> dict:
    """Motion of the moving scenery over ``times`` (F,) in seconds and the bodies' world
    ``poses`` (F, nb, 4, 4) (numpy only): ``{scenery index: (basis (V, 3), targets (K, V, 3),
    values (F, K), matrices (F, 4, 4) or None)}``. A deforming surface is
    :func:`core.display.shape_key_modes` of ``BodyDisplay.surface_mesh(t)`` at each time (no
    matrices); a spring (``"helix"``) is posed by ``BodyDisplay.spring_frames`` and stretched
    by one shape key (its vertices are linear in its length)."""
    out = {}
    for i, d in enumerate(mechanism.scenery):
        if d.mesh == "surface":
            tracks = np.stack([d.surface_mesh(t)[0] for t in times])
            out[i] = (*display.shape_key_modes(tracks, d.name), None)
        elif d.mesh == "helix":
            frames, lengths = d.spring_frames(poses)
            unit = display_mesh(d)[0]
            tracks = unit[None] * np.stack([np.ones_like(lengths)] * 2 + [lengths], axis=1)[:, None]
            out[i] = (*display.shape_key_modes(tracks, d.name), frames)
    return out


def write_bake(scene, item, result, scenery=None) -> int:
    """Key every body object from the result's world poses (F, nb, 4, 4) and the moving
    scenery from ``scenery`` (:func:`scenery_motion` of the result): shape-key values, and
    the pose of each spring; returns frames written."""
    frames = scene.frame_start + result.times * scene.render.fps / scene.render.fps_base
    for k, ref in enumerate(item.bodies):
        obj = ref.object
        obj.rotation_mode = "QUATERNION"
        bridge.write_transform_keyframes(obj, "", "QUATERNION", frames, result.poses[:, k])
    for i, (basis, targets, values, matrices) in (scenery or {}).items():
        obj = item.scenery[i].object
        bridge.write_shape_key_animation(obj, basis, targets, frames, values)
        if matrices is not None:
            obj.rotation_mode = "QUATERNION"
            bridge.write_transform_keyframes(obj, "", "QUATERNION", frames, matrices)
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
        """Run the core simulation and, once it completes, sample the moving scenery at its
        times and poses (:func:`scenery_motion`); the result or the exception is kept for
        :meth:`finish`."""
        from ...core.mechanisms import simulate_mechanism

        try:
            self.result = simulate_mechanism(self.mechanism, self.progress)
            if self.result.status == "completed":
                self.scenery = scenery_motion(self.mechanism, self.result.times, self.result.poses)
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


class ThreadedBake:
    """Operator mixin for a bake job with :class:`BakeJob`'s shape (``simulate()``,
    ``progress``/``fraction``, ``cancel()``, ``finish(scene)``): headless ``execute`` runs it at
    once; ``invoke`` runs ``simulate`` in a worker thread with a progress bar, Esc cancels.
    The operator defines ``make_job(context)``."""

    def _finish(self, context):
        status, level, message = self._job.finish(context.scene)
        self.report({level}, message)
        return status

    @reporting
    def execute(self, context):
        self._job = self.make_job(context)
        self._job.simulate()
        return self._finish(context)

    def invoke(self, context, event):
        """Interactive run: simulate in a worker thread (numpy only) with a progress bar."""
        return self._start(context)

    def modal(self, context, event):
        return self._step(context, event.type)

    @reporting
    def _start(self, context):
        self._job = self.make_job(context)
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


#: live previews: ``{(scene name, mechanism name): _Live}``
_LIVE: dict = {}
#: seconds a live preview keeps simulating ahead of the playhead after each frame change
LOOKAHEAD = 0.01


class _Live:
    """A mechanism simulated as the playhead reaches each frame (nothing keyed): its
    :class:`core.mechanisms.MechanismRun`, body objects, first frame and their matrices before
    (put back when the preview stops)."""

    def __init__(self, scene, job):
        from ...core.mechanisms import MechanismRun

        item = scene.spline_joints_mechanisms[job.index]
        self.run = MechanismRun(job.mechanism)
        self.objects = [ref.object for ref in item.bodies]
        self.start = scene.frame_start
        self.saved = [obj.matrix_world.copy() for obj in self.objects]

    def pose(self, frame):
        k = int(np.clip(frame - self.start, 0, self.run.n_frames - 1))
        self.run.advance_to(k, LOOKAHEAD)
        for obj, T in zip(self.objects, self.run.poses[k]):
            obj.matrix_world = bridge.array_to_matrix(T)

    def restore(self):
        try:
            for obj, M in zip(self.objects, self.saved):
                obj.matrix_world = M
        except ReferenceError:                   # deleted objects: nothing to put back
            pass


def play_live_mechanisms(scene) -> int:
    """Pose the bodies of the scene's live mechanisms at its frame; one that diverges is
    stopped with a console message. Returns the mechanisms posed."""
    n = 0
    for key, live in list(_LIVE.items()):
        if key[0] != scene.name:
            continue
        try:
            live.pose(scene.frame_current)
            n += 1
        except (ValueError, ReferenceError) as exc:
            _LIVE.pop(key).restore()
            print(f"Spline Joints: live preview of '{key[1]}' stopped: {exc}")
    return n


def stop_live_mechanisms(scene) -> None:
    for key in [k for k in _LIVE if k[0] == scene.name]:
        _LIVE.pop(key).restore()


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
        key = (scene.name, job.name)
        if key in _LIVE:
            _LIVE.pop(key).restore()
        _LIVE[key] = _Live(scene, job)
        _LIVE[key].pose(scene.frame_current)
        self.report({"INFO"}, f"Live preview of '{job.name}': frames are simulated as the "
                              "playhead reaches them")
        return {"FINISHED"}


classes = (SPLINE_JOINTS_OT_add_mechanism, SPLINE_JOINTS_OT_bake_dynamics,
           SPLINE_JOINTS_OT_live_mechanism)
