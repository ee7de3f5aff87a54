"""Simulate the user's own rigs: armatures whose bones carry joints, chains of objects, beads
on the user's curves. Read the scene into :class:`core.rig.RigBody` lists, simulate with
:func:`core.rig.simulate_rig`, and write the motion back as keys in a new action (bake) or
hold it in a cache played back on frame change (preview).

A *rig* is one armature object with at least one simulated bone (``PoseBone.
spline_joints_sim.enabled`` and not kinematic), or all the scene's objects with a
simulated joint (with their joint parents and wires). Its bodies are the simulated bones
(objects) and every ancestor of one; an ancestor that is not simulated, or is marked
kinematic, follows its animation (a kinematic body). An armature object whose world matrix
moves during the frame range is itself a kinematic root. With the scene's ground on, collider
objects in the scene (:mod:`..colliders`) or self-collision, each simulated body carries
its collision shape (:func:`_shapes`) and the rig the ground :class:`core.contacts.Plane`
and the colliders.

Reading samples the scene at every frame of the scene's range (``scene.frame_set``, so
keys, constraints and drivers are all evaluated) with the live drive and the preview
suspended, and puts the frame back afterwards; nothing is written until the simulation is
complete. A bake keeps the user's animation: each baked data-block's action (if any) is
pushed onto an NLA track and the simulated channels are keyed in a new action above it, so
the kinematic channels still play from the track.
"""

from __future__ import annotations

import bpy
import numpy as np
from bpy.props import EnumProperty

from .. import bridge, colliders, handlers
from ._common import reporting
from .mechanisms import LOOKAHEAD, ThreadedBake

#: the scene's preview caches: ``{(scene name, rig key): _Preview}``
_PREVIEWS: dict = {}
#: a scale farther than this from 1 is refused (armature and joint parents in metres)
_SCALE_TOL = 1e-6


# --------------------------------------------------------------------------------------------
# Reading the scene
# --------------------------------------------------------------------------------------------

class _Body:
    """One body being read: what it is in Blender and how to write it back."""

    def __init__(self, name, owner, kind, parent, settings):
        self.name, self.owner, self.kind, self.parent, self.settings = name, owner, kind, parent, settings
        self.kinematic = settings is None or not settings.enabled or settings.kinematic
        self.poses = {}          # frame -> (4, 4) pose in the parent body (or the world)
        self.warnings = []       # said in the report (a wire fitted above its tolerance)
        self.scale = np.ones(3)  # an object's world scale (written back with its keys)


def _unit_scale(obj, what):
    scale = np.array(obj.matrix_world.to_scale())
    if np.abs(scale - 1.0).max() > _SCALE_TOL:
        raise ValueError(f"{what} '{obj.name}' is scaled by {np.round(scale, 4).tolist()}; a "
                         "simulated rig is measured in metres: apply its scale (Ctrl+A > "
                         "Scale) first")


def _normalized(matrix):
    """(4, 4) rigid frame of a Blender world matrix (scale removed) and the scale (3,)."""
    loc, rot, scale = matrix.decompose()
    T = np.eye(4)
    T[:3, :3] = np.array(rot.to_matrix())
    T[:3, 3] = np.array(loc)
    return T, np.array(scale)


def simulated_armatures(scene):
    return [obj for obj in scene.objects if obj.type == "ARMATURE" and obj.pose is not None
            and any(pb.spline_joints_sim.enabled and not pb.spline_joints_sim.kinematic
                    for pb in obj.pose.bones)]


def simulated_objects(scene):
    return [obj for obj in scene.objects if obj.spline_joints_sim.enabled
            and not obj.spline_joints_sim.kinematic]


def _joint_parent(obj):
    s = obj.spline_joints_sim
    if s.kind == "WIRE":
        return s.wire
    return s.parent if s.parent is not None else obj.parent


def armature_bodies(obj):
    """The bodies of an armature rig: simulated bones and their ancestors, parents first;
    the armature object itself first when it is animated (decided after sampling)."""
    if obj.pose is None:
        raise ValueError(f"'{obj.name}' is not an armature with a pose")
    _unit_scale(obj, "armature")
    keep = set()
    for pb in obj.pose.bones:
        s = pb.spline_joints_sim
        if s.enabled and not s.kinematic:
            b = pb
            while b is not None:
                keep.add(b.name)
                b = b.parent
    order = [pb for pb in obj.pose.bones if pb.name in keep]   # Blender lists parents first
    names = [pb.name for pb in order]
    return [_Body(pb.name, pb, "BONE", -1 if pb.parent is None else names.index(pb.parent.name),
                  pb.spline_joints_sim) for pb in order]


def object_bodies(scene):
    """The bodies of the scene's object rig: simulated objects, their joint parents and
    wires, parents first; raises ValueError for a loop of joint parents."""
    chosen = {}
    for obj in simulated_objects(scene):
        chain, o = [], obj
        while o is not None:
            if o.name in chain:
                raise ValueError(f"the joint parents of '{obj.name}' form a loop ("
                                 f"{' -> '.join(chain + [o.name])}); a rig is a tree: clear one "
                                 "Joint Parent")
            chain.append(o.name)
            chosen[o.name] = o
            o = _joint_parent(o) if o.spline_joints_sim.enabled else o.parent
    order, placed = [], set()

    def place(o):
        if o.name in placed:
            return
        parent = _joint_parent(o) if o.spline_joints_sim.enabled else o.parent
        if parent is not None and parent.name in chosen:
            place(parent)
        placed.add(o.name)
        order.append(o)

    for o in chosen.values():
        place(o)
    names = [o.name for o in order]
    bodies = []
    for o in order:
        parent = _joint_parent(o) if o.spline_joints_sim.enabled else o.parent
        if o.spline_joints_sim.enabled and not o.spline_joints_sim.kinematic:
            if o.parent is not None and o.parent != parent:
                raise ValueError(f"'{o.name}' is a child of '{o.parent.name}' in Blender but its "
                                 f"joint connects it to '{getattr(parent, 'name', 'the world')}'; "
                                 "clear its Blender parent (Alt+P) or make the two the same")
        bodies.append(_Body(o.name, o, "OBJECT", -1 if parent is None else names.index(parent.name),
                            o.spline_joints_sim))
    return bodies


def _sample(scene, rig_obj, bodies, frames, each_frame=None):
    """Read every body's pose in its parent at ``frames`` (sets the scene's frame; the
    caller puts it back), calling ``each_frame(frame)`` at each one when given."""
    arm_world = {}
    for f in frames:
        scene.frame_set(int(f))
        if each_frame is not None:
            each_frame(f)
        if rig_obj is not None:
            arm_world[f] = _normalized(rig_obj.matrix_world)[0]
            for b in bodies:
                pb = b.owner
                b.poses[f] = bridge.rigid(bridge.matrix_to_array(pb.matrix)) if pb.parent is None \
                    else bridge.read_pose_T_parent_child(pb)
        else:
            worlds = {}
            for b in bodies:
                worlds[b.name], b.scale = _normalized(b.owner.matrix_world)
            for b in bodies:
                T = worlds[b.name]
                if b.parent >= 0:
                    T = np.linalg.solve(worlds[bodies[b.parent].name], T)
                b.poses[f] = bridge.rigid(T)
    return arm_world


def _mass(body, rig_obj, cache):
    """(mass, com, inertia, source) of a simulated body from its settings."""
    from .. import massprops

    s = body.settings
    if s.mass_source == "MANUAL":
        return s.mass, np.array(s.com), np.diag(np.array(s.inertia)), "typed in"
    if body.kind == "OBJECT":
        if body.owner.type != "MESH":
            raise ValueError(f"'{body.name}' has no mesh to take its mass from; set its Mass to "
                             "Typed In")
        mp = massprops.object_mass_properties(body.owner, s.density)
        return mp.mass, mp.com, mp.inertia, f"mesh of {body.name}"
    if s.mass_source == "CAPSULE":
        mp, source = massprops.bone_capsule(body.owner.bone.length, s.density, s.capsule_radius)
        return mp.mass, mp.com, mp.inertia, source
    key = (s.density, s.capsule_radius)
    if key not in cache:
        cache[key] = massprops.armature_mass_properties(rig_obj, s.density, s.capsule_radius)
    mp, source = cache[key][body.name]
    return mp.mass, mp.com, mp.inertia, source


def _shapes(body):
    """The core collision shapes of a simulated body in its frame (``Collision``): a bone's
    along its Y from the head, an object's from its bounding box (scaled, in the unscaled
    object frame, :func:`colliders.bounds_shape`). A shape that cannot be made (a zero
    radius, a flat box) raises ValueError naming the body."""
    from ...core.contacts import Box, Capsule, Sphere

    s = body.settings
    kind = s.collision
    if kind == "NONE":
        return ()
    r = s.collision_radius
    try:
        if body.kind == "BONE":
            length = body.owner.bone.length
            mid = np.eye(4)
            mid[1, 3] = 0.5 * length
            if kind == "SPHERE":
                return (Sphere(r or 0.5 * length, mid[:3, 3]),)
            r = r or 0.1 * length
            if kind == "BOX":
                return (Box((r, 0.5 * length, r), mid),)
            return (Capsule(r, (0.0, 0.0, 0.0), (0.0, length, 0.0)),)
        corners = np.array([tuple(c) for c in body.owner.bound_box]) * body.scale
        return (colliders.bounds_shape("BOX" if kind == "AUTO" else kind, corners.min(axis=0),
                                       corners.max(axis=0), r),)
    except ValueError as err:
        raise ValueError(f"'{body.name}': its {kind.lower()} collision shape: {err}; set its "
                         "Collision Radius above 0 or its Collision to None") from None


def _fitted_joint(pb):
    from ...core.io import joints as jio

    doc_text = pb.spline_joints.joint_json
    if not doc_text:
        raise ValueError(f"bone '{pb.name}' uses a Fitted Joint but has none: capture and fit "
                         "one in the Fit panel first, or pick another joint")
    doc = jio.loads(doc_text)
    n = pb.spline_joints.n_coordinates
    if doc.joint.nq != n:
        raise ValueError(f"bone '{pb.name}': its fitted joint has {doc.joint.nq} coordinate(s) "
                         f"but the bone is set up for {n}; fit it again or set Coordinates to "
                         f"{doc.joint.nq}")
    return doc


def _joint_spec(body, rig_obj):
    """The :class:`core.rig.RigJoint` and the initial coordinates (or None) of a body."""
    from ...core.rig import RigJoint

    if body.kinematic:
        return RigJoint("kinematic"), None
    s = body.settings
    kind = s.kind.lower()
    extra, q = {}, None
    if s.kind == "FITTED":
        if body.kind != "BONE":
            raise ValueError(f"'{body.name}': a Fitted Joint belongs to a bone; objects take "
                             "the other joints")
        doc = _fitted_joint(body.owner)
        kind, extra = "joint", {"joint": doc.joint}
        if body.owner.spline_joints.drive:
            q = bridge.read_coordinate_values(body.owner, doc.joint.nq)
        if s.use_range:
            extra.update(lower=(s.range_min,) * doc.joint.nq, upper=(s.range_max,) * doc.joint.nq)
    elif s.kind == "WIRE":
        if body.kind != "OBJECT" or s.wire is None:
            raise ValueError(f"'{body.name}': a Bead on Wire needs a curve object in Wire")
        fit = _wire(s.wire)
        if not fit.within_tolerance:
            body.warnings.append(f"the wire follows '{s.wire.name}' only to "
                                 f"{1000 * fit.max_position_error:.3g} mm (asked "
                                 f"{1000 * fit.tolerance:.3g} mm): sharp corners are rounded")
        kind, extra = "joint", {"joint": fit.joint}
    elif s.kind in ("HINGE", "SLIDER", "UNIVERSAL"):
        extra["axis"] = tuple(s.axis)
        if s.kind == "UNIVERSAL":
            extra["axis2"] = tuple(s.axis2)
        if s.use_range:
            n = 2 if s.kind == "UNIVERSAL" else 1
            if s.range_min >= s.range_max:
                raise ValueError(f"'{body.name}': the range's Min ({s.range_min:.4g}) must be "
                                 f"below its Max ({s.range_max:.4g})")
            extra.update(lower=(s.range_min,) * n, upper=(s.range_max,) * n)
    if s.use_cone:
        if s.kind not in ("BALL", "FREE") or body.kind != "BONE":
            raise ValueError(f"'{body.name}': a reach cone holds a bone's Ball or Free joint; "
                             "switch the cone off or the joint to Ball")
        c = body.owner.spline_joints
        if c.cone_shape == "CIRCULAR":
            extra.update(cone="circular", half_angle=c.cone_half_angle)
        else:
            extra.update(cone="elliptical", half_angle_x=c.cone_half_angle_x,
                         half_angle_z=c.cone_half_angle_z)
        extra.update(cone_axis=tuple(c.cone_axis))
        if c.twist_limit < np.pi:
            extra["twist"] = c.twist_limit
    if body.kind == "BONE" and body.owner.bone.use_connect and body.owner.parent is not None:
        _check_connected(body, kind, extra)
    return RigJoint(kind, stiffness=s.stiffness, damping=s.damping, **extra), q


def _check_connected(body, kind, extra):
    """A connected bone's head is glued to its parent's tail: refuse joints that move it."""
    moves = kind in ("slider", "free")
    if kind == "joint":
        joint = extra["joint"]
        qs = np.linspace(joint.lower, joint.upper, 9) if np.all(np.isfinite(joint.lower)) and \
            np.all(np.isfinite(joint.upper)) else joint.neutral()[None] + np.linspace(-1, 1, 9)[:, None]
        heads = joint.transforms(qs)[:, :3, 3]
        moves = float(np.ptp(heads, axis=0).max()) > 1e-6
    if moves:
        raise ValueError(f"bone '{body.name}' is connected to its parent, so Blender keeps its "
                         f"head on the parent's tail, but its {body.settings.kind.lower()} joint "
                         "moves the head; untick Connected (Bone Properties > Relations) or "
                         "use a joint that only turns")


#: how far (m) a bead's wire may leave the user's curve: control frames are added until the
#: fitted wire is this close (up to core.wire.MAX_FRAMES; the report says when it is not)
WIRE_TOLERANCE = 1e-6


def _wire(curve_obj):
    """The :class:`core.wire.WireFit` of a curve object, within :data:`WIRE_TOLERANCE`."""
    from ...core.wire import wire_joint
    from .. import curves

    return wire_joint(curves.read_curve(curve_obj), tolerance=WIRE_TOLERANCE)


class RigJob:
    """Read one rig, simulate it (maybe in a worker thread), write it back.

    ``target``: an armature object, or None for the scene's object rig.
    """

    def __init__(self, scene, target):
        from ...core.contacts import Plane
        from ...core.rig import RigBody, RigJoint, build_rig

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
        masses = {b.name: _mass(b, target, mass_cache) for b in bodies if not b.kinematic}
        specs = {b.name: _joint_spec(b, target) for b in bodies}
        frames = list(range(start - 1, end + 1))
        current = scene.frame_current
        reader = colliders.ColliderReader(scene)

        def read_colliders(f):
            reader.sample(bpy.context.evaluated_depsgraph_get(), f == start)

        with handlers.suspended(), suspended_preview():
            try:
                arm_world = _sample(scene, target, bodies, frames, read_colliders)
            finally:
                scene.frame_set(current)
        times = (np.array(frames[1:], dtype=float) - start) / fps
        objects, self.collider_summary = reader.colliders(
            (np.array(frames, dtype=float) - start) / fps)
        touching = settings.use_ground or bool(objects) or settings.use_self_collision
        core_bodies = []
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
        for b in bodies:
            rest = self._rest(b, target, arm_index is None, arm_world, start)
            joint, q = specs[b.name]
            motion = None
            if joint.kind == "kinematic":
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
            shapes = _shapes(b) if touching and not b.kinematic else ()
            core_bodies.append(RigBody(b.name, parent, rest, joint, mass=mass, com=com,
                                       inertia=inertia, pose=pose,
                                       pose_before=before if use_v else None,
                                       pose_after=after if use_v else None, q=q,
                                       motion_times=times if motion is not None else None,
                                       motion=motion, shapes=shapes))
        self.offset = 1 if arm_index is not None else 0
        gravity = np.array(scene.gravity) if scene.use_gravity else np.zeros(3)
        ground = ()
        if settings.use_ground:
            ground = (Plane(settings.ground_height, friction=settings.ground_friction,
                            restitution=settings.ground_restitution),)
        self.rig = build_rig(core_bodies, gravity=gravity, fps=fps, substeps=settings.substeps,
                             duration=(end - start) / fps, integrator=settings.integrator,
                             restitution=settings.restitution, colliders=ground + objects,
                             friction=settings.friction,
                             self_collision=settings.use_self_collision,
                             name=target.name if target is not None else "objects")
        self.frames = np.arange(start, end + 1, dtype=float)
        self.fraction, self.cancelled, self.result = 0.0, False, None

    def _rest(self, b, target, static_armature, arm_world, start):
        """A body's rest pose in its parent (bones: the rest matrices; objects: the stored
        rest or the pose at the start frame)."""
        if b.kind == "BONE":
            if b.owner.parent is not None:
                return bridge.read_rest_T_parent_child(b.owner)
            T = bridge.matrix_to_array(b.owner.bone.matrix_local)
            return bridge.rigid(arm_world[start] @ T if static_armature else T)
        rest = np.array(b.settings.rest).reshape(4, 4) if b.settings is not None else np.zeros((4, 4))
        return bridge.rigid(rest) if np.any(rest) else b.poses[start]

    # -- simulate (numpy only: may run in a worker thread) --------------------------------
    def progress(self, fraction):
        self.fraction = fraction
        return not self.cancelled

    def cancel(self):
        self.cancelled = True

    def simulate(self):
        from ...core.rig import simulate_rig

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
        from ...core.bones import pose_basis
        from ...core.lie import se3

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
    """Key every simulated body in a new action per data-block (the old action pushed onto
    the NLA); returns the actions' names."""
    poses = job.local_poses(result.world)
    frames = job.frames[:len(result.times)]
    owners = {}
    for b in job.bodies:
        if not b.kinematic:
            owners.setdefault(job.target if b.kind == "BONE" else b.owner, []).append(b)
    names = []
    for id_data, bodies in owners.items():
        bridge.push_action_to_nla(id_data)
        action = bridge.new_action(id_data, f"{id_data.name} Simulation")
        names.append(action.name)
        for b in bodies:
            if b.kind == "BONE":
                b.owner.spline_joints.drive = False   # the keys play, not the coordinate slider
                bridge.write_bone_keyframes(id_data, b.owner, frames, poses[b.name])
            else:
                bridge.write_transform_keyframes(b.owner, "", b.owner.rotation_mode, frames,
                                                 _unscaled(poses[b.name]))
            b.settings.shown_mass = getattr(b, "mass", 0.0)
            b.settings.shown_source = getattr(b, "source", "")
    return names


def _unscaled(M):
    """(F, 4, 4) rigid parts of matrices with scale (the object's scale channel stays)."""
    out = M.copy()
    out[:, :3, :3] /= np.linalg.norm(M[:, :3, :3], axis=1, keepdims=True)
    return out


# --------------------------------------------------------------------------------------------
# Preview cache
# --------------------------------------------------------------------------------------------

class _Preview:
    """A rig's simulated motion held for playback: all frames of a completed simulation, or
    a live :class:`core.mechanisms.MechanismRun` that computes frames as the playhead
    reaches them."""

    def __init__(self, job, result=None):
        from ...core.mechanisms import MechanismRun

        self.job = job
        self.start = int(job.frames[0])
        self.run = MechanismRun(job.rig.mechanism) if result is None else None
        self.n_frames = len(job.frames) if result is None else len(result.times)
        self.poses = None if result is None else job.local_poses(result.world)
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

    def at(self, frame, lookahead):
        """``{body name: (4, 4)}`` the channels at the scene frame ``frame`` (clipped to the
        range); a live run first computes up to it and on for ``lookahead`` seconds."""
        f = int(np.clip(frame - self.start, 0, self.n_frames - 1))
        if self.run is None:
            return {name: M[f] for name, M in self.poses.items()}
        self.run.advance_to(f, lookahead)
        return {name: M[0] for name, M in self.job.local_poses(self.run.poses[f:f + 1]).items()}


_preview_state = {"suspended": 0}


class suspended_preview:
    def __enter__(self):
        _preview_state["suspended"] += 1

    def __exit__(self, *exc):
        _preview_state["suspended"] -= 1


def rig_signature(scene, target):
    """A string that changes when anything the simulation reads from settings changes."""
    def values(s):
        return tuple(v if isinstance(v, (str, int, float, bool)) else tuple(v)
                     for v in (getattr(s, p) for p in _SIGNED))

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
           "range_max", "use_cone", "stiffness", "damping", "mass_source", "density",
           "capsule_radius", "mass", "com", "inertia", "collision", "collision_radius")
_COLLIDER_SIGNED = ("shape", "use_friction", "friction", "use_restitution", "restitution")


def _rig_key(target):
    return target.name if target is not None else ""


def play_previews(scene) -> int:
    """Pose the simulated bodies of every valid preview at the scene's frame; a preview whose
    rig changed is dropped. Returns bodies posed."""
    if _preview_state["suspended"]:
        return 0
    n = 0
    for key, prev in list(_PREVIEWS.items()):
        if key[0] != scene.name:
            continue
        try:
            valid = rig_signature(scene, prev.target) == prev.signature
        except ReferenceError:
            valid = False
        if not valid:
            _PREVIEWS.pop(key).restore()
            continue
        try:
            poses = prev.at(scene.frame_current, LOOKAHEAD)
        except ValueError as exc:                 # a live run diverged: said once, dropped
            _PREVIEWS.pop(key).restore()
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
    for key in [k for k in _PREVIEWS if (scene is None or k[0] == scene.name)
                and (keys is None or k[1] in keys)]:
        _PREVIEWS.pop(key).restore()


# --------------------------------------------------------------------------------------------
# Operators
# --------------------------------------------------------------------------------------------

TARGET_ITEMS = [("ACTIVE", "Active Rig", "The active armature, or the scene's simulated "
                                         "objects when the active object is not an armature"),
                ("ALL", "All Rigs", "Every simulated armature and the simulated objects")]


def _targets(context, which):
    scene = context.scene
    if which == "ALL":
        targets = list(simulated_armatures(scene))
        if simulated_objects(scene):
            targets.append(None)
        if not targets:
            raise ValueError("no simulated rig in the scene: tick Simulate on a bone or object")
        return targets
    obj = context.active_object
    if obj is not None and obj.type == "ARMATURE":
        return [obj]
    if not simulated_objects(scene):
        raise ValueError("make an armature with simulated bones active, or tick Simulate on "
                         "an object")
    return [None]


class _RigBatch:
    """The rigs of one operator run in :class:`ThreadedBake`'s job shape: ``simulate()``
    (numpy only; a worker thread may run it), ``fraction``, ``cancel()`` and
    ``finish(scene)``, which hands the completed results to ``write(scene, jobs, results)
    -> messages`` (main thread; nothing is written unless every rig completed)."""

    def __init__(self, jobs, label, write):
        self.jobs, self.label, self.write = jobs, label, write

    @property
    def fraction(self):
        return sum(j.fraction for j in self.jobs) / len(self.jobs)

    def simulate(self):
        for job in self.jobs:
            job.simulate()
            if job.cancelled:
                break

    def cancel(self):
        for job in self.jobs:
            job.cancel()

    def finish(self, scene):
        results = [job.checked_result() for job in self.jobs]     # raises before any write
        if any(r is None for r in results):
            return {"CANCELLED"}, "WARNING", f"{self.label} cancelled: nothing written"
        messages = self.write(scene, self.jobs, results)
        level = "WARNING" if any("warning:" in m for m in messages) else "INFO"
        return {"FINISHED"}, level, " | ".join(messages)


class _RigOperator(ThreadedBake):
    bl_options = {"REGISTER", "UNDO"}

    which: EnumProperty(name="Rigs", items=TARGET_ITEMS, default="ACTIVE",
                        description="Which rigs to work on")

    def make_job(self, context):
        """Read the rigs (their previews dropped first, so the reading sees the user's poses)."""
        targets = _targets(context, self.which)
        clear_previews(context.scene, targets)
        return _RigBatch([RigJob(context.scene, t) for t in targets], self.bl_label, self.write)


def _bake_rigs(scene, jobs, results):
    return [f"Baked into {', '.join(write_keys(job, result))}: {job.report(result)}"
            for job, result in zip(jobs, results)]


class SPLINE_JOINTS_OT_bake_rig(_RigOperator, bpy.types.Operator):
    """Simulate the rig over the scene's frame range and key the simulated bones and objects
    into a new action (the old one stays on the NLA; Esc cancels and writes nothing)"""

    bl_idname = "spline_joints.bake_rig"
    bl_label = "Bake Simulation"
    write = staticmethod(_bake_rigs)


class _LivePreviews(_RigBatch):
    """Live previews: nothing simulated up front; each rig gets a run that simulates frames
    as the playhead reaches them."""

    def simulate(self):
        """Nothing to simulate up front."""

    @property
    def fraction(self):
        return 1.0

    def finish(self, scene):
        for job in self.jobs:
            _PREVIEWS[(scene.name, _rig_key(job.target))] = _Preview(job)
        play_previews(scene)
        return {"FINISHED"}, "INFO", (f"Live preview of {len(self.jobs)} rig(s): frames are "
                                      "simulated as the playhead reaches them")


def _hold_previews(scene, jobs, results):
    for job, result in zip(jobs, results):
        _PREVIEWS[(scene.name, _rig_key(job.target))] = _Preview(job, result)
    play_previews(scene)
    return [f"Preview: {job.report(result)}" for job, result in zip(jobs, results)]


class SPLINE_JOINTS_OT_simulate_preview(_RigOperator, bpy.types.Operator):
    """Simulate the rig and play it back on frame changes without writing keys (dropped when
    a joint setting changes or by Clear Preview); with Live on, frames are simulated as the
    playhead reaches them"""

    bl_idname = "spline_joints.simulate_preview"
    bl_label = "Simulate Preview"
    bl_options = {"REGISTER"}
    write = staticmethod(_hold_previews)

    def make_job(self, context):
        batch = super().make_job(context)
        if context.scene.spline_joints_sim.live:
            return _LivePreviews(batch.jobs, self.bl_label, None)
        return batch


class SPLINE_JOINTS_OT_clear_preview(bpy.types.Operator):
    """Drop the simulation previews and live mechanisms of this scene (the bodies go back to
    where they were, or to their animation)"""

    bl_idname = "spline_joints.clear_preview"
    bl_label = "Clear Preview"
    bl_options = {"REGISTER"}

    def execute(self, context):
        from .mechanisms import stop_live_mechanisms

        clear_previews(context.scene)
        stop_live_mechanisms(context.scene)
        context.scene.frame_set(context.scene.frame_current)
        return {"FINISHED"}


class SPLINE_JOINTS_OT_add_beads(bpy.types.Operator):
    """Make the active curve a wire and the other selected objects beads sliding on it"""

    bl_idname = "spline_joints.add_beads"
    bl_label = "Beads on Curve"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return obj is not None and obj.type == "CURVE"

    @reporting
    def execute(self, context):
        curve = context.active_object
        beads = [o for o in context.selected_objects if o != curve]
        if not beads:
            raise ValueError("select the bead objects, then the curve last (active)")
        _wire(curve)  # refuses a bad curve before anything changes
        for o in beads:
            s = o.spline_joints_sim
            s.enabled, s.kinematic, s.kind, s.wire = True, False, "WIRE", curve
            if s.mass_source == "AUTO" and o.type != "MESH":
                s.mass_source = "MANUAL"
        self.report({"INFO"}, f"{len(beads)} bead(s) on '{curve.name}'")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_set_object_rest(bpy.types.Operator):
    """Store the active object's current pose in its joint parent as its joint's rest pose"""

    bl_idname = "spline_joints.set_object_rest"
    bl_label = "Set Rest Pose"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.active_object is not None

    @reporting
    def execute(self, context):
        obj = context.active_object
        T = _normalized(obj.matrix_world)[0]
        parent = _joint_parent(obj)
        if parent is not None:
            T = np.linalg.solve(_normalized(parent.matrix_world)[0], T)
        obj.spline_joints_sim.rest = tuple(bridge.rigid(T).ravel())
        return {"FINISHED"}


classes = (SPLINE_JOINTS_OT_bake_rig, SPLINE_JOINTS_OT_simulate_preview,
           SPLINE_JOINTS_OT_clear_preview, SPLINE_JOINTS_OT_add_beads,
           SPLINE_JOINTS_OT_set_object_rest)
