"""Mechanisms of the core's demo library in the scene: built at the scene's frame rate, their
display meshes, and their dynamics baked to keys.

A mechanism is stored in the scene as its demo name and settings plus the objects that show
its bodies and its ``scenery`` (``Scene.spline_joints_mechanisms``). :class:`BakeJob`
rebuilds it with ``core.mechanisms.DEMOS[demo]``, calls ``core.mechanisms.simulate_mechanism``
once and keys the bodies' poses and the moving scenery (:func:`write_bake`): the deforming
surfaces' shape keys, and the springs' poses and stretch.
"""

from __future__ import annotations

import numpy as np

from ..core import display
from . import bridge
from .jobs import Job


def demos():
    from ..core.mechanisms import DEMOS

    return DEMOS


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


class BakeJob(Job):
    """One dynamics bake, split by thread: prepare and finish touch Blender data and run on the
    main thread; :meth:`simulate` is numpy only and may run in a worker thread.

    Both the operator's headless ``execute`` and its interactive modal run go through
    ``BakeJob(scene, index)``, ``simulate()`` and ``finish(scene)``; Esc calls :meth:`cancel`,
    which makes the next :meth:`progress` call return False so the core stops.
    """

    def __init__(self, scene, index: int):
        i = bridge.pick_index(scene.spline_joints_mechanisms, scene.spline_joints_active_mechanism, index,
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

    def simulate(self) -> None:
        """Run the core simulation and, once it completes, sample the moving scenery at its
        times and poses (:func:`scenery_motion`); the result or the exception is kept for
        :meth:`finish`."""
        from ..core.mechanisms import simulate_mechanism

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
        from ..core.mechanisms import energy_drift_warning

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
