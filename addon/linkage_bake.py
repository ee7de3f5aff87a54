"""Linkages baked to keys (:class:`LinkageBakeJob`): the passive dynamics under gravity and
springs (Stoermer steps, or the couplings solver with limits; seed 002), or the live assembly
(seed 004) over the scene's frames. The keys go into a new action per object, the object's
previous action kept on an NLA track (:func:`write_keys`).
"""

from __future__ import annotations

import time

import numpy as np

from . import bridge, handlers, linkage_bridge, linkage_handlers
from .jobs import Job


def key_bodies(bodies, frames, poses, suffix, skip=()) -> list:
    """Key world poses ``(F, N, 4, 4)`` at ``frames (F,)`` on every body
    (:class:`.linkage_bridge.BodyRef`) but those in ``skip``: an object's transform, a bone's
    location and rotation channels (its ``matrix_basis``, :func:`.linkage_bridge.bone_bases`),
    each object (or armature) into a new action *<object> <suffix>* (a previous action goes
    to an NLA track; an armature's other bones keep theirs there). Returns the NLA tracks
    made."""
    kept, fresh = [], set()
    bases = linkage_bridge.bone_bases(bodies, poses)
    for k, ref in enumerate(bodies):
        if k in skip:
            continue
        obj = ref.obj
        if obj not in fresh:
            fresh.add(obj)
            track = bridge.push_action_to_nla(obj)
            if track:
                kept.append(f"{obj.name}: {track}")
            bridge.new_action(obj, f"{obj.name} {suffix}")
        if ref.bone:
            bridge.write_bone_keyframes(obj, ref.pose_bone, frames, bases[k])
        else:
            bridge.write_transform_keyframes(obj, "", obj.rotation_mode, frames, poses[:, k])
    return kept


def write_keys(scene, item, bodies, frames, poses, skip=()) -> list:
    """:func:`key_bodies` of a linkage's bodies into actions named after the linkage, with
    Live Assembly switched off so the keys play. Returns the NLA tracks made."""
    kept = key_bodies(bodies, frames, poses, item.name, skip)
    item.live = False
    return kept


class LinkageBakeJob(Job):
    """A linkage bake as a job (:mod:`.jobs`): everything read from Blender
    here (main thread), :meth:`simulate` numpy only, :meth:`finish` writes.

    DYNAMICS: :func:`core.linkage.simulate_linkage` of the linkage; with a driver (body or
    driving joint) the driver's input is read at every simulated frame from the scene's start
    (the live handler held) and the driver follows it as a kinematic body, else the linkage
    is released. ASSEMBLY: the driver's input read at every frame of the scene's range, then
    :meth:`core.linkage.LiveAssembly.solve` frame after frame, each from the last.
    """

    def __init__(self, scene, index: int):
        from ..core.linkage import dynamic_system, frame_count

        self.index, item = linkage_bridge.active_linkage(scene, index)
        self.name, self.mode = item.name, item.mode
        self.fps = scene.render.fps / scene.render.fps_base
        self.fraction, self.cancelled, self.result = 0.0, False, None
        if self.mode == "DYNAMICS":  # from the scene's start (where a live driver put it)
            self.start = scene.frame_start
            self.linkage, self.objects = bridge.read_frames(
                scene, [self.start], lambda f: linkage_bridge.read_linkage(scene, item))[0]
            self.duration, self.substeps = item.duration, item.substeps
            self.driver_poses = None
            if self.linkage.driver_index() >= 0:
                frames = self.start + np.arange(frame_count(self.duration, self.fps))
                self.driver_poses = np.array(self._inputs(scene, item, self.linkage, frames))
            dynamic_system(self.linkage, driven=self.driver_poses is not None)
            return
        self.live, linkage, self.objects = linkage_handlers.live_assembly(scene, item)
        self.frames = np.arange(scene.frame_start, scene.frame_end + 1)
        self.inputs = self._inputs(scene, item, linkage, self.frames)
        self.first = linkage.poses

    @staticmethod
    def _inputs(scene, item, linkage, frames) -> list:
        """The driver's input (world pose (4, 4)) at each of ``frames``, the live handler held."""
        with handlers.suspended():
            return bridge.read_frames(scene, frames, lambda f: linkage_handlers.driver_input(linkage, item))

    def simulate(self) -> None:
        from ..core.linkage import simulate_linkage

        try:
            if self.mode == "DYNAMICS":
                self.result = simulate_linkage(self.linkage, self.duration, self.fps, self.substeps,
                                               self.progress, driver_poses=self.driver_poses)
                return
            poses, errors, P = [], [], self.first
            t0 = time.perf_counter()
            for k, T in enumerate(self.inputs):
                if not self.progress(k / len(self.inputs)):
                    self.result = "cancelled"
                    return
                res = self.live.solve(T, P)
                P = res.poses
                poses.append(P)
                errors.append(res.error)
            self.result = (np.array(poses), np.array(errors), time.perf_counter() - t0)
        except Exception as exc:  # handed to the main thread, reported by finish()
            self.result = exc

    def finish(self, scene) -> tuple[set, str, str]:
        """Write the keys of a completed bake: (operator result, report level, message); a
        cancelled bake writes nothing, a failed one raises ValueError (nothing written)."""
        result = self.result
        if isinstance(result, BaseException):
            detail = str(result) if isinstance(result, ValueError) else f"{type(result).__name__}: {result}"
            raise ValueError(f"Bake of linkage '{self.name}' failed, no keyframes written: {detail}")
        if result == "cancelled" or getattr(result, "status", "") == "cancelled":
            return ({"CANCELLED"}, "WARNING", f"Bake of linkage '{self.name}' cancelled at "
                                              f"{100.0 * self.fraction:.0f} %: no keyframes written")
        item = scene.spline_joints_linkages[self.index]
        if self.mode == "DYNAMICS":
            frames = self.start + result.times * self.fps
            skip = (self.linkage.driver_index(),) if self.linkage.driver else ()
            kept = write_keys(scene, item, self.objects, frames, result.poses, skip)
            errors = result.errors
            item.solver, item.bake_seconds = result.solver, result.wall_time
            item.limit_violation = float(result.violations.max())
            item.violation_tolerance = result.violation_tol
            item.engagements = int(sum(result.engagements.values()))
        else:
            poses, errors, item.bake_seconds = result
            frames = self.frames
            skip = () if self.live.linkage.drive_joint else (self.live.driver,)
            kept = write_keys(scene, item, self.objects, frames, poses, skip)
            item.solver, item.limit_violation, item.engagements = "faure", 0.0, 0
        item.baked_frames = len(frames)
        item.constraint_error = float(np.max(errors))
        item[linkage_bridge.ERRORS_KEY] = [float(e) for e in errors]
        scene.frame_set(scene.frame_current)
        message = (f"Baked linkage '{self.name}' ({item.solver}): {len(frames)} frames, largest "
                   f"constraint error {item.constraint_error:.1e} (m/rad)")
        if self.mode == "DYNAMICS" and self.driver_poses is not None:
            message += ", the driver following its input"
        if self.mode == "DYNAMICS" and item.engagements:
            message += f", limits engaged {item.engagements} time(s)"
        if kept:
            message += f"; previous actions kept on NLA tracks ({', '.join(kept)})"
        return {"FINISHED"}, "INFO", message + "; live assembly switched off so the keys play"
