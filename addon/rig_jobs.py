"""Simulate the user's rigs (:mod:`.rig_scene`): read the scene into :class:`core.rig.RigBody`
lists, simulate with :func:`core.rig.simulate_rig`, and write the motion back as keys in a new
action (:func:`write_keys`) or hold it for playback (:mod:`.previews`).

:class:`RigJob` is one rig as a bake job (:mod:`.jobs`): reading and writing on the main
thread, ``simulate`` numpy only. With the scene's ground on,
collider objects in the scene (:mod:`.colliders`) or self-collision, each simulated body
carries its collision shape and the rig the ground :class:`core.contacts.Plane` and the
colliders. An armature object whose world matrix moves during the frame range is itself a
kinematic root. An armature's muscles (:mod:`.rig_muscles`) pull with their activations as
keyed on the armature at each frame. A bone's Pin Target object (not a body of the rig)
becomes a kinematic body after the rig's own, following the object's world motion sampled at
every frame, which its pin holds the bone to (:class:`core.rig.RigPin`'s ``target_body``).

Reading samples the scene at every frame of the scene's range (``scene.frame_set``, so
keys, constraints and drivers are all evaluated) with the live drive and the preview
suspended and the rig's earlier simulation bakes off (:class:`bridge.simulations_off`), and
puts the frame back afterwards; nothing is written until the simulation is complete. A bake
keeps the user's animation: each baked data-block's earlier simulation bake is removed, its
own action (if any) pushed onto an NLA track, and the simulated channels are keyed in a
simulation action above it (marked, :data:`bridge.SIMULATION_MARK`), so the kinematic
channels still play from the track; :func:`bake_rigs` then checks that the viewport shows
what was simulated (:mod:`.bake_checks`). :class:`RigBatch` runs the rigs of one
operator together; nothing is written unless every rig completed.
"""

from __future__ import annotations

import bpy
import numpy as np

from . import bake_checks, bridge, colliders, handlers, previews
from .documents import is_osim_armature
from .jobs import Job
from .rig_muscles import MuscleReader
from .rig_scene import (armature_bodies, body_mass, body_shapes, joint_spec, normalized,
                        object_bodies, sample_poses)


def _directed(body, frames, times):
    """``{strength, follow, simulate_from, kinematic_from}`` of a simulated body from its
    animated Strength and Kinematic at ``frames`` (the times ``times``, s from the start
    frame) and its Follow: the strength per frame (or 0), "local" or "global", the time its
    keyed Kinematic turns off (the end when it stays on; none when it starts off) and the
    time it turns on again (:mod:`core.rig`, *Switching back to the animation*). Raises
    ValueError for a Kinematic that leaves the animation a second time."""
    kinematic = np.array([body.animated[f][0] for f in frames])
    strength = np.array([body.animated[f][1] for f in frames])
    out = {"strength": strength if np.any(strength != 0.0) else 0.0,
           "follow": body.settings.follow.lower()}
    if not kinematic.any():
        return out if np.any(strength != 0.0) else {}
    changes = np.nonzero(kinematic[1:] != kinematic[:-1])[0] + 1
    turns = changes if kinematic[0] else np.r_[0, changes]    # off, on, off, ...
    if len(turns) > 2:
        raise ValueError(f"'{body.name}': Kinematic is keyed off again at frame "
                         f"{frames[int(turns[2])]} after the bone returned to its animation; "
                         "a bone can leave its animation and return to it once, so key "
                         "Kinematic off once and on again once at most")
    if kinematic[0]:
        out["simulate_from"] = float(times[turns[0]] if len(turns) else times[-1])
    if len(turns) > 1:
        out["kinematic_from"] = float(times[turns[1]])
    return out


def _pins(body, frames, times, targets):
    """The :class:`core.rig.RigPin` of a bone (object) with Pin ticked or keyed at
    ``frames`` (a kinematic body's, always on: the core refuses it naming the bone), hard or
    soft, to its Pin Target's rig body (``targets``: :func:`_pin_targets`) or to the world."""
    from ..core.rig import RigPin

    s = body.settings
    if s is None or not s.enabled:
        return []
    active = np.array([body.animated[f][2] for f in frames]) if body.animated else \
        np.full(len(frames), bool(s.use_pin))
    if not active.any():
        return []
    tail = body.kind == "BONE" and s.pin_at == "TAIL"
    point = (0.0, body.owner.bone.length if tail else 0.0, 0.0)
    target = None if s.pin_target is None else targets[s.pin_target.name]
    return [RigPin(body.name, point, tuple(s.pin_location), s.pin_strength, times=tuple(times),
                   active=tuple(bool(a) for a in active), target_body=target,
                   hard=bool(s.pin_hard))]


def _pin_targets(scene, bodies):
    """``{object name: the rig body it is}`` of the simulated bodies' Pin Target objects: a
    body of the rig itself, or a kinematic body ``"<name> (pin target)"`` that follows the
    object's world motion (the RigJob adds it). ValueError for a target not in the scene."""
    out = {}
    names = {b.name for b in bodies if b.kind == "OBJECT"}
    for b in bodies:
        s = b.settings
        obj = None if s is None or not s.enabled else s.pin_target
        if obj is None:
            continue
        if scene.objects.get(obj.name) is not obj:
            raise ValueError(f"'{b.name}': its Pin Target '{obj.name}' is not in the scene; "
                             "pick an object of the scene, or clear Pin Target to pin to Pin "
                             "Location in the world")
        out[obj.name] = obj.name if obj.name in names else f"{obj.name} (pin target)"
    return out


class RigJob(Job):
    """Read one rig, simulate it (maybe in a worker thread), write it back.

    ``target``: an armature object, or None for the scene's object rig. ``together``: it is
    simulated with other rigs (:class:`RigBatch`), so its bodies carry their collision
    shapes whatever else can touch, kinematic ones included (they push the other rigs).
    ``part`` (:class:`core.rig.RigPart`) and ``options`` (:func:`core.rig.build_rig`'s other
    arguments) are what its core rig is built from.
    """

    def __init__(self, scene, target, together=False):
        from ..core.contacts import Plane
        from ..core.rig import RigBody, RigJoint, RigPart, build_rig

        self.scene, self.target = scene, target
        settings = scene.spline_joints_sim
        fps = scene.render.fps / scene.render.fps_base
        start, end = scene.frame_start, scene.frame_end
        if end <= start:
            raise ValueError(f"the scene's frame range {start}-{end} has no frame to simulate; "
                             "set End after Start")
        bodies = armature_bodies(target) if target is not None else object_bodies(scene)
        if not bodies:
            raise ValueError("nothing to simulate: tick Simulate on a bone or object")
        self.bodies = bodies
        mass_cache = {}
        masses = {b.name: body_mass(b, target, mass_cache) for b in bodies if not b.kinematic}
        specs = {b.name: joint_spec(b, target) for b in bodies}
        frames = list(range(start - 1, end + 1))
        current = scene.frame_current
        reader = colliders.ColliderReader(scene)
        self.muscles = MuscleReader(target, [b.name for b in bodies]) \
            if target is not None else None
        targets = _pin_targets(scene, bodies)
        moving = {name: {} for name, body in targets.items() if body != name}

        def read_frame(f):
            reader.sample(bpy.context.evaluated_depsgraph_get(), f == start)
            if self.muscles is not None:
                self.muscles.sample(f)
            for name, poses in moving.items():          # the pin targets' world motion
                poses[f] = normalized(scene.objects[name].matrix_world)[0]

        baked = [target] if target is not None else _object_bakes(scene)
        with handlers.suspended(), previews.suspended_preview():
            try:
                with bridge.simulations_off(baked):   # the user's animation, not a bake
                    arm_world = sample_poses(scene, target, bodies, frames, read_frame)
            finally:
                scene.frame_set(current)
        times = (np.array(frames[1:], dtype=float) - start) / fps
        objects, self.collider_summary = reader.colliders(
            (np.array(frames, dtype=float) - start) / fps)
        touching = settings.use_ground or bool(objects) or settings.use_self_collision or \
            together
        core_bodies, pins = [], []
        arm_index = None
        if target is not None:
            W = np.stack([arm_world[f] for f in frames[1:]])
            offset = 0
            if np.abs(W - W[0]).max() > 1e-12:
                arm_index = 0
                offset = 1
                core_bodies.append(RigBody(f"{target.name} (object)", -1, np.eye(4),
                                           RigJoint("kinematic"), pose=W[0], motion_times=times,
                                           motion=W))
        directed = {b.name: {} if b.kinematic else _directed(b, frames[1:], times)
                    for b in bodies}
        # following in the world composes the animation of every bone above: all animated
        in_world = any(d.get("follow") == "global" for d in directed.values())
        for b in bodies:
            rest = self._rest(b, target, arm_index is None, arm_world, start)
            joint, q = specs[b.name]
            pins.extend(_pins(b, frames[1:], times, targets))
            motion = None
            if joint.kind == "kinematic" or directed[b.name] or in_world:
                motion = np.stack([b.poses[f] for f in frames[1:]])
                if target is not None and b.parent < 0 and arm_index is None:
                    motion = arm_world[start][None] @ motion
            pose = b.poses[start]
            before, after = b.poses[start - 1], b.poses[start + 1]
            if target is not None and b.parent < 0 and arm_index is None:
                pose, before, after = (arm_world[f] @ b.poses[f] for f in (start, start - 1, start + 1))
            mass, com, inertia, source = masses.get(b.name, (1.0, np.zeros(3), None, ""))
            if not b.kinematic:
                b.source, b.mass = source, mass
            parent = b.parent + (1 if arm_index is not None else 0) if b.parent >= 0 else \
                (0 if arm_index is not None else -1)
            use_v = settings.use_velocities
            shaped = not b.kinematic or (together and b.settings is not None
                                         and b.settings.enabled)
            shapes = body_shapes(b) if touching and shaped else ()
            core_bodies.append(RigBody(b.name, parent, rest, joint, mass=mass, com=com,
                                       inertia=inertia, pose=pose,
                                       pose_before=before if use_v else None,
                                       pose_after=after if use_v else None, q=q,
                                       motion_times=times if motion is not None else None,
                                       motion=motion, shapes=shapes, **directed[b.name]))
        for name, poses in moving.items():          # after the rig's bodies (see offset)
            W = np.stack([poses[f] for f in frames[1:]])
            core_bodies.append(RigBody(targets[name], -1, np.eye(4), RigJoint("kinematic"),
                                       pose=W[0], motion_times=times, motion=W))
        self.offset = 1 if arm_index is not None else 0
        gravity = np.array(scene.gravity) if scene.use_gravity else np.zeros(3)
        ground = ()
        if settings.use_ground:
            ground = (Plane(settings.ground_height, friction=settings.ground_friction,
                            restitution=settings.ground_restitution),)
        name = target.name if target is not None else "objects"
        muscles = self.muscles.rig_muscles(frames[1:], times) if self.muscles is not None \
            else ()
        self.part = RigPart(name, tuple(core_bodies), tuple(pins), tuple(muscles))
        self.options = dict(gravity=gravity, fps=fps, substeps=settings.substeps,
                            duration=(end - start) / fps, integrator=settings.integrator,
                            restitution=settings.restitution, colliders=ground + objects,
                            friction=settings.friction,
                            self_collision=settings.use_self_collision)
        self.rig = build_rig(core_bodies, name=name, pins=pins, muscles=muscles, **self.options)
        self.frames = np.arange(start, end + 1, dtype=float)
        self.fraction, self.cancelled, self.result = 0.0, False, None

    def _rest(self, b, target, static_armature, arm_world, start):
        """A body's rest pose in its parent (bones: the rest matrices; objects: the stored
        rest or the pose at the start frame)."""
        if b.kind == "BONE":
            T = bridge.matrix_to_array(b.owner.bone.matrix_local)
            if b.parent >= 0:
                parent = bridge.matrix_to_array(self.bodies[b.parent].owner.bone.matrix_local)
                return bridge.rigid(np.linalg.solve(parent, T))
            return bridge.rigid(arm_world[start] @ T if static_armature else T)
        rest = np.array(b.settings.rest).reshape(4, 4) if b.settings is not None else np.zeros((4, 4))
        return bridge.rigid(rest) if np.any(rest) else b.poses[start]

    # -- simulate (numpy only: may run in a worker thread) --------------------------------
    def simulate(self):
        from ..core.rig import simulate_rig

        try:
            self.result = simulate_rig(self.rig, self.progress)
        except Exception as exc:  # handed to the main thread, reported there
            self.result = exc

    def checked_result(self):
        """The completed result, or None when cancelled; a failure raises ValueError."""
        r = self.result
        if isinstance(r, ValueError):
            raise ValueError(f"Simulation failed, nothing written: {r}")
        if isinstance(r, BaseException):
            raise ValueError(f"Simulation failed, nothing written: {type(r).__name__} ({r})")
        return None if r.status != "completed" else r

    # -- writing back (main thread) ---------------------------------------------------------
    def local_poses(self, world):
        """``{body name: (F, 4, 4)}`` what each simulated body's channels must show for the
        world poses ``world (F, nb, 4, 4)`` of the rig's bodies: a bone's basis
        (:func:`core.bones.pose_basis` of its pose in its parent bone, or in the world for a
        root of a still armature), an object's matrix_basis."""
        from ..core.bones import pose_basis
        from ..core.lie import se3

        parents = self.rig.mechanism.model.parents
        out = {}
        for k, b in enumerate(self.bodies):
            if b.kinematic:
                continue
            i = k + self.offset
            if b.kind == "BONE":
                T = world[:, i] if parents[i] < 0 else se3.inv(world[:, parents[i]]) @ world[:, i]
                out[b.name] = pose_basis(self.rig.bodies[i].T_rest, T)
            else:
                full = world[:, i] * np.append(b.scale, 1.0)[None, None, :]
                obj = b.owner
                if obj.parent is not None:
                    j = next(n for n, c in enumerate(self.bodies) if c.owner == obj.parent)
                    pfull = world[:, j + self.offset] * np.append(
                        self.bodies[j].scale, 1.0)[None, None, :]
                    pinv = bridge.matrix_to_array(obj.matrix_parent_inverse)
                    full = np.linalg.solve(pfull @ pinv, full)
                out[b.name] = full
        return out

    def report(self, result):
        parts = [f"{len(result.times)} frames of {sum(not b.kinematic for b in self.bodies)} "
                 f"simulated bodies in {result.wall_time:.2f} s"]
        if result.energy_drift is not None:
            parts.append(f"energy drift {100 * result.energy_drift:.3g} %")
        if any(self.rig.limits):
            parts.append(f"worst limit excess {np.degrees(result.worst_violation):.3g} deg"
                         + (f" ({result.violation_body})" if result.violation_body else ""))
        if self.collider_summary:
            parts.append(f"{len(self.collider_summary)} collider(s) ("
                         f"{'; '.join(self.collider_summary)})")
        muscles = self.muscles.report(result) if self.muscles is not None else ""
        if muscles:
            parts.append(muscles)
        if result.contacts is not None:
            parts.append(f"up to {int(result.contacts.max(initial=0))} contacts per "
                         f"frame, worst penetration {1000 * result.worst_penetration:.3g} mm")
        text = ", ".join(parts)
        if result.contact_notes:
            text += "; note: " + "; ".join(result.contact_notes)
        warnings = [*result.warnings, *(w for b in self.bodies for w in b.warnings)]
        if warnings:
            text += "; warning: " + "; ".join(warnings)
        return text


def write_keys(job, result):
    """Key every simulated body in a simulation action per data-block (:func:`bridge.
    mark_simulation`): the data-block's previous simulation is removed (:func:`bridge.
    remove_simulation`), its own action pushed onto the NLA. A bone with Keys On is keyed
    through its control (:func:`land_on_controls`: a Rigify DEF bone's FK control). Limbs
    whose simulated or keyed FK controls are in IK mode get their IK/FK switch keyed to FK in
    the same action (:func:`bake_checks.limb_switches`). Returns (the actions' names, what
    the report says about them)."""
    poses = job.local_poses(result.world)
    frames = job.frames[:len(result.times)]
    owners = {}
    for b in job.bodies:
        if not b.kinematic:
            owners.setdefault(job.target if b.kind == "BONE" else b.owner, []).append(b)
    if job.target is None:     # objects no longer simulated lose their bake
        for obj in _object_bakes(job.scene):
            if obj not in owners:
                bridge.remove_simulation(obj)
    names, notes = [], []
    for id_data, bodies in owners.items():
        kept = bridge.remove_simulation(id_data)
        bridge.push_action_to_nla(id_data)
        controls = list({b.settings.key_bone: id_data.pose.bones[b.settings.key_bone]
                         for b in bodies if b.kind == "BONE" and b.settings.key_bone}.values())
        keyed = [b.owner for b in bodies if not (b.kind == "BONE" and b.settings.key_bone)]
        switches = bake_checks.limb_switches(id_data, [pb.name for pb in keyed + controls]) \
            if job.target is not None else []
        landed = {}
        if controls:
            for path, value, _ in switches:     # the limbs in FK while the controls are posed
                if path:
                    head, _, key = path[:-2].rpartition('["')
                    id_data.path_resolve(head)[key] = value
            landed = land_on_controls(job, result, frames)
        paths = [p for pb in keyed + controls for p in _channel_paths_of(pb)] + \
            [p for p, _, _ in switches if p]
        before = {p: kept[p] if p in kept else bridge.read_channel(id_data, p) for p in paths}
        action = bridge.new_action(id_data, f"{id_data.name} Simulation")
        bridge.mark_simulation(action, "BONES" if job.target is not None else "OBJECTS",
                               [b.name for b in bodies], before, frames)
        names.append(action.name)
        for pb in controls:
            bridge.write_bone_keyframes(id_data, pb, frames, landed[pb.name])
        for b in bodies:
            if b.kind == "BONE" and b.settings.key_bone:
                pass                                  # its control is keyed above
            elif b.kind == "BONE":
                b.owner.spline_joints.drive = False   # the keys play, not the coordinate slider
                bridge.write_bone_keyframes(id_data, b.owner, frames, poses[b.name])
            else:
                bridge.write_transform_keyframes(b.owner, "", b.owner.rotation_mode, frames,
                                                 _unscaled(poses[b.name]))
            b.settings.shown_mass = getattr(b, "mass", 0.0)
            b.settings.shown_source = getattr(b, "source", "")
        for path, value, note in switches:
            if path:
                bridge.write_fcurve_keys(id_data, path, 0, frames[[0, -1]], np.full(2, value),
                                         interpolation="CONSTANT")
            notes.append(note)
        if job.target is not None and is_osim_armature(job.target):
            notes.append(f"the OpenSim coordinates leave the {len(bodies)} simulated bone(s) "
                         f"to their keys from frame {int(frames[0])} to {int(frames[-1])} "
                         f"while '{action.name}' is the armature's action (outside that range "
                         "or with another action, the coordinates pose them again)")
    return names, notes


def _channel_paths_of(owner):
    """The data paths of a keyed bone's or object's transform channels (all rotation
    modes)."""
    if isinstance(owner, bpy.types.PoseBone):
        return [owner.path_from_id(c) for c in bridge.TRANSFORM_CHANNELS]
    return list(bridge.TRANSFORM_CHANNELS)


def land_on_controls(job, result, frames):
    """``{control name: (F, 4, 4) matrix_basis}``: the Keys On controls of the simulated
    bones (a control several bones share led by the first, the others welded to it) posed
    frame by frame so that each carries its bone where the simulation put it
    (the control keeps its rest offset to the bone: ``C = D_sim D_rest^-1 C_rest`` in
    armature space), parents first, the scene evaluated after each (a control's parent may
    follow another control through constraints). Sets the scene's frame and puts it back;
    the controls keep the last frame's pose until their keys are written."""
    import mathutils

    obj, scene = job.target, job.scene
    pairs, seen = [], set()
    for k, b in enumerate(job.bodies):         # parents first: a control's first bone leads
        if not b.kinematic and b.settings.key_bone and b.settings.key_bone not in seen:
            seen.add(b.settings.key_bone)
            pairs.append((k + job.offset, b, obj.pose.bones[b.settings.key_bone]))
    pairs.sort(key=lambda p: len(p[2].parent_recursive))
    offsets = {C.name: np.linalg.solve(bridge.rigid(bridge.matrix_to_array(b.owner.bone.matrix_local)),
                                       bridge.rigid(bridge.matrix_to_array(C.bone.matrix_local)))
               for _, b, C in pairs}
    out = {C.name: np.empty((len(frames), 4, 4)) for _, _, C in pairs}
    current = scene.frame_current
    try:
        for k, f in enumerate(frames):
            scene.frame_set(int(f))
            W = normalized(obj.matrix_world)[0]
            for i, b, C in pairs:
                target = np.linalg.solve(W, result.world[k, i]) @ offsets[C.name]
                C.matrix = mathutils.Matrix(target.tolist())
                bpy.context.view_layer.update()
                out[C.name][k] = bridge.matrix_to_array(C.matrix_basis)
    finally:
        scene.frame_set(current)
    return out


def _object_bakes(scene):
    """The scene's objects that carry a simulation bake of the object rig."""
    return [o for o in scene.objects if any(bridge.simulation_record(a)["rig"] == "OBJECTS"
                                            for a in bridge.simulation_actions(o))]


def _unscaled(M):
    """(F, 4, 4) rigid parts of matrices with scale (the object's scale channel stays)."""
    out = M.copy()
    out[:, :3, :3] /= np.linalg.norm(M[:, :3, :3], axis=1, keepdims=True)
    return out


class RigBatch:
    """The rigs of one operator run in the job shape (:mod:`.jobs`): ``simulate()``
    (numpy only; a worker thread may run it), ``fraction``, ``cancel()`` and
    ``finish(scene)``, which hands the completed results to ``write(scene, jobs, results)
    -> messages`` (main thread; nothing is written unless every rig completed).

    Several rigs are simulated together (:attr:`rig`, :func:`core.rig.build_rigs`): one
    model, each rig with its own bodies, limits, tracking and pins, their collision shapes
    colliding with each other's and an animated rig's shapes pushing the others; the run's
    result is split into each job's (:func:`core.rig.part_results`)."""

    def __init__(self, jobs, label, write):
        from ..core.rig import build_rigs

        self.jobs, self.label, self.write = jobs, label, write
        self.cancelled = False
        #: the core rig of all the jobs' rigs together (None for one rig)
        self.rig = None if len(jobs) < 2 else build_rigs([j.part for j in jobs],
                                                         **jobs[0].options)

    @property
    def fraction(self):
        return sum(j.fraction for j in self.jobs) / len(self.jobs)

    @property
    def start_warnings(self):
        """What reading the rigs found before any simulation (a start pose outside a limit,
        a spring an explicit integrator cannot follow), one sentence each."""
        if self.rig is not None:
            return list(self.rig.warnings)
        return [w for job in self.jobs for w in job.rig.warnings]

    def progress(self, fraction):
        """The joined run's progress callback: every job's fraction; False once cancelled."""
        for job in self.jobs:
            job.fraction = fraction
        return not self.cancelled

    def simulate(self):
        if self.rig is None:
            for job in self.jobs:
                job.simulate()
                if job.cancelled:
                    break
            return
        from ..core.rig import part_results, simulate_rig

        try:
            results = part_results(self.rig, simulate_rig(self.rig, self.progress))
        except Exception as exc:  # handed to the main thread, reported there
            results = [exc] * len(self.jobs)
        for job, result in zip(self.jobs, results):
            job.result = result

    def cancel(self):
        self.cancelled = True
        for job in self.jobs:
            job.cancel()

    def finish(self, scene):
        results = [job.checked_result() for job in self.jobs]     # raises before any write
        if any(r is None for r in results):
            return {"CANCELLED"}, "WARNING", f"{self.label} cancelled: nothing written"
        messages = self.write(scene, self.jobs, results)
        level = "WARNING" if any("warning:" in m for m in messages) else "INFO"
        return {"FINISHED"}, level, " | ".join(messages)


def bake_rigs(scene, jobs, results):
    """:class:`RigBatch`'s ``write`` of a bake: every rig keyed (:func:`write_keys`), then
    checked in the evaluated scene (:func:`bake_checks.overridden_bodies`): a simulated body
    the viewport does not show is a warning."""
    messages = []
    for job, result in zip(jobs, results):
        names, notes = write_keys(job, result)
        text = f"Baked into {', '.join(names)}: {job.report(result)}"
        if notes:
            text += "; " + "; ".join(notes)
        messages.append(text)
    for k, (job, result) in enumerate(zip(jobs, results)):   # every rig written first
        warnings = bake_checks.overridden_bodies(job, result)
        if warnings:
            messages[k] += "; " + "; ".join(warnings)
    return messages


class LivePreviews(RigBatch):
    """Live previews: nothing simulated up front; the rigs get a run that simulates frames
    as the playhead reaches them (one for all when several are simulated together)."""

    def simulate(self):
        """Nothing to simulate up front."""

    @property
    def fraction(self):
        return 1.0

    def finish(self, scene):
        from ..core.rig import RigRun

        run = None if self.rig is None else RigRun(self.rig)
        for k, job in enumerate(self.jobs):
            shared = None if run is None else (run,) + self.rig.parts[k][1:]
            previews.hold_preview(scene, job, shared=shared)
        previews.play_previews(scene)
        return {"FINISHED"}, "INFO", (f"Live preview of {len(self.jobs)} rig(s): frames are "
                                      "simulated as the playhead reaches them")


def hold_previews(scene, jobs, results):
    """:class:`RigBatch`'s ``write`` of a preview: every rig's motion held for playback."""
    for job, result in zip(jobs, results):
        previews.hold_preview(scene, job, result)
    previews.play_previews(scene)
    return [f"Preview: {job.report(result)}" for job, result in zip(jobs, results)]
