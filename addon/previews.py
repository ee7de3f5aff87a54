"""What plays on frame change without keys: previews of simulated rigs and live mechanisms.

A rig preview (:class:`RigPreview`, in :data:`PREVIEWS`) holds a rig's simulated motion, all
frames of a completed :class:`.rig_jobs.RigJob` or a live run that computes frames as the
playhead reaches them; it is dropped when anything the simulation reads changes
(:func:`rig_signature`). A live mechanism (:class:`LiveMechanism`, in :data:`LIVE_MECHANISMS`)
simulates a mechanism of :mod:`.mechanism_bake` the same way. :func:`play_previews` and
:func:`play_live_mechanisms` pose them at the scene's frame; the add-on registers both as
frame callbacks of :mod:`.handlers`.
"""

from __future__ import annotations

import bpy
import numpy as np

from . import bridge, colliders
from .rig_scene import simulated_objects

#: the scene's rig previews: ``{(scene name, rig key): RigPreview}`` (rig key: the armature's
#: name, "" for the object rig)
PREVIEWS: dict = {}
#: live mechanisms: ``{(scene name, mechanism name): LiveMechanism}``
LIVE_MECHANISMS: dict = {}
#: seconds a live run keeps simulating ahead of the playhead after each frame change
LOOKAHEAD = 0.01


class RigPreview:
    """A rig's simulated motion held for playback: all frames of a completed simulation, or
    a live :class:`core.rig.RigRun` that computes frames as the playhead reaches them (its
    switches to simulated and its pins included), its own or, ``shared`` ``(run, first
    body, end body)``, the run of several rigs together whose bodies ``first:end`` are
    this rig's (:class:`.rig_jobs.LivePreviews`)."""

    def __init__(self, job, result=None, shared=None):
        from ..core.rig import RigRun

        self.job = job
        self.start = int(job.frames[0])
        self.run, self.span = None, slice(None)
        if shared is not None:
            self.run, self.span = shared[0], slice(*shared[1:])
        elif result is None:
            self.run = RigRun(job.rig)
        self.n_frames = len(job.frames) if result is None else len(result.times)
        self.poses = None if result is None else job.local_poses(result.world)
        self._world = None if result is None else result.world
        self.target = job.target
        self.owners = {b.name: b for b in job.bodies if not b.kinematic}
        self.signature = rig_signature(job.scene, job.target)
        #: the channels before any playback, put back when the preview goes
        self.saved = {name: b.owner.matrix_basis.copy() for name, b in self.owners.items()}

    def restore(self):
        """Put the simulated bodies' channels back as they were before the preview."""
        try:
            for name, b in self.owners.items():
                b.owner.matrix_basis = self.saved[name]
        except ReferenceError:                    # the rig was deleted: nothing to put back
            pass

    def world(self):
        """``(F, nb, 4, 4)`` the rig's world poses of the frames held: all of a completed
        simulation, those a live run has computed."""
        return self._world if self.run is None else self.run.poses[:self.run.ready, self.span]

    def at(self, frame, lookahead):
        """``{body name: (4, 4)}`` the channels at the scene frame ``frame`` (clipped to the
        range); a live run first computes up to it and on for ``lookahead`` seconds."""
        f = int(np.clip(frame - self.start, 0, self.n_frames - 1))
        if self.run is None:
            return {name: M[f] for name, M in self.poses.items()}
        self.run.advance_to(f, lookahead)
        return {name: M[0] for name, M in
                self.job.local_poses(self.run.poses[f:f + 1, self.span]).items()}


_preview_state = {"suspended": 0}


class suspended_preview:
    def __enter__(self):
        _preview_state["suspended"] += 1

    def __exit__(self, *exc):
        _preview_state["suspended"] -= 1


def rig_signature(scene, target):
    """A string that changes when anything the simulation reads from settings changes."""
    def values(s):
        return tuple(v if isinstance(v, (str, int, float, bool)) else
                     getattr(v, "name", "") if v is None or isinstance(v, bpy.types.ID) else
                     tuple(v) for v in (getattr(s, p) for p in _SIGNED))

    items = []
    objs = [target] if target is not None else simulated_objects(scene)
    for obj in objs:
        if obj.type == "ARMATURE":
            items.extend((pb.name, values(pb.spline_joints_sim), tuple(map(tuple, pb.bone.matrix_local)),
                          pb.spline_joints.joint_json)
                         for pb in obj.pose.bones if pb.spline_joints_sim.enabled)
        else:
            items.append((obj.name, values(obj.spline_joints_sim), getattr(obj.spline_joints_sim.wire,
                                                                            "name", "")))
    items.extend((obj.name, tuple(getattr(obj.spline_joints_collider, p)
                                  for p in _COLLIDER_SIGNED))
                 for obj in colliders.collider_objects(scene))
    st = scene.spline_joints_sim
    items.append((st.substeps, st.integrator, st.use_velocities, st.restitution, st.live,
                   scene.frame_start, scene.frame_end, tuple(scene.gravity), st.use_ground,
                   st.ground_height, st.ground_friction, st.ground_restitution, st.friction,
                   st.use_self_collision))
    return repr(items)


_SIGNED = ("enabled", "kinematic", "kind", "axis", "axis2", "use_range", "range_min",
           "range_max", "use_cone", "spring_units", "frequency", "damping_ratio", "stiffness",
           "damping", "mass_source", "density",
           "capsule_radius", "mass", "com", "inertia", "collision", "collision_radius",
           "strength", "follow", "use_pin", "pin_at", "pin_location", "pin_strength",
           "pin_hard", "pin_target")
_COLLIDER_SIGNED = ("shape", "use_friction", "friction", "use_restitution", "restitution")


def _rig_key(target):
    return target.name if target is not None else ""


def play_previews(scene) -> int:
    """Pose the simulated bodies of every valid preview at the scene's frame; a preview whose
    rig changed is dropped. Returns bodies posed."""
    if _preview_state["suspended"]:
        return 0
    n = 0
    for key, prev in list(PREVIEWS.items()):
        if key[0] != scene.name:
            continue
        try:
            valid = rig_signature(scene, prev.target) == prev.signature
        except ReferenceError:
            valid = False
        if not valid:
            PREVIEWS.pop(key).restore()
            continue
        try:
            poses = prev.at(scene.frame_current, LOOKAHEAD)
        except ValueError as exc:                 # a live run diverged: said once, dropped
            PREVIEWS.pop(key).restore()
            print(f"Spline Joints: live preview of '{key[1] or 'objects'}' stopped: {exc}")
            continue
        for name, M in poses.items():
            prev.owners[name].owner.matrix_basis = bridge.array_to_matrix(M)
            n += 1
    return n


def clear_previews(scene=None, targets=None):
    """Drop the previews of ``scene`` (None: every scene), of the rigs ``targets`` (armature
    objects, None for the object rig; default all), putting their bodies back as they were."""
    keys = {_rig_key(t) for t in targets} if targets is not None else None
    for key in [k for k in PREVIEWS if (scene is None or k[0] == scene.name)
                and (keys is None or k[1] in keys)]:
        PREVIEWS.pop(key).restore()


def hold_preview(scene, job, result=None, shared=None) -> None:
    """Hold a rig's preview for playback: the completed ``result`` of ``job`` (a
    :class:`.rig_jobs.RigJob`), or a live run of it when ``result`` is None (``shared``: its
    part of a run of several rigs, :class:`RigPreview`)."""
    PREVIEWS[(scene.name, _rig_key(job.target))] = RigPreview(job, result, shared)


# --------------------------------------------------------------------------------------------
# Live mechanisms
# --------------------------------------------------------------------------------------------

class LiveMechanism:
    """A mechanism simulated as the playhead reaches each frame (nothing keyed): its
    :class:`core.mechanisms.MechanismRun`, body objects, first frame and their matrices before
    (put back when the preview stops)."""

    def __init__(self, scene, job):
        from ..core.mechanisms import MechanismRun

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
    for key, live in list(LIVE_MECHANISMS.items()):
        if key[0] != scene.name:
            continue
        try:
            live.pose(scene.frame_current)
            n += 1
        except (ValueError, ReferenceError) as exc:
            LIVE_MECHANISMS.pop(key).restore()
            print(f"Spline Joints: live preview of '{key[1]}' stopped: {exc}")
    return n


def stop_live_mechanisms(scene) -> None:
    for key in [k for k in LIVE_MECHANISMS if k[0] == scene.name]:
        LIVE_MECHANISMS.pop(key).restore()


def start_live_mechanism(scene, job) -> None:
    """Play the mechanism of ``job`` (a :class:`.mechanism_bake.BakeJob`) live from the scene's
    current frame, replacing a live run of it already playing."""
    key = (scene.name, job.name)
    if key in LIVE_MECHANISMS:
        LIVE_MECHANISMS.pop(key).restore()
    LIVE_MECHANISMS[key] = LiveMechanism(scene, job)
    LIVE_MECHANISMS[key].pose(scene.frame_current)
