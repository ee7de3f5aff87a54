"""The user's rigs as the simulation reads them: armatures whose bones carry joints, chains of
objects, beads on the user's curves.

A *rig* is one armature object with at least one simulated bone (``PoseBone.
spline_joints_sim.enabled`` and not kinematic), or all the scene's objects with a
simulated joint (with their joint parents and wires). Its bodies (:class:`Body`) are the
simulated bones (objects) and every ancestor of one; an ancestor that is not simulated, or is
marked kinematic, follows its animation (a kinematic body). Each simulated body has its mass
(:func:`body_mass`), its joint (:func:`joint_spec`) and, when anything can touch, its
collision shapes (:func:`body_shapes`); :func:`armature_shapes` and :func:`object_shapes` pose
those shapes in the world at the current frame (the Show Shapes overlay draws them).
:class:`.rig_jobs.RigJob` samples the bodies over the frame range (:func:`sample_poses`) and
builds the core rig from all of this.
"""

from __future__ import annotations

import bpy
import numpy as np

from . import bridge, colliders

#: a scale farther than this from 1 is refused (armature and joint parents in metres)
_SCALE_TOL = 1e-6


class Body:
    """One body being read: what it is in Blender and how to write it back."""

    def __init__(self, name, owner, kind, parent, settings):
        self.name, self.owner, self.kind, self.parent, self.settings = name, owner, kind, parent, settings
        self.kinematic = settings is None or not settings.enabled or (
            settings.kinematic and not keyed_kinematic(owner))
        self.poses = {}          # frame -> (4, 4) pose in the parent body (or the world)
        #: frame -> (Kinematic, Strength, Pin) as animated at that frame (simulated bodies)
        self.animated = {}
        self.warnings = []       # said in the report (a wire fitted above its tolerance)
        self.scale = np.ones(3)  # an object's world scale (written back with its keys)


def _unit_scale(obj, what):
    scale = np.array(obj.matrix_world.to_scale())
    if np.abs(scale - 1.0).max() > _SCALE_TOL:
        raise ValueError(f"{what} '{obj.name}' is scaled by {np.round(scale, 4).tolist()}; a "
                         "simulated rig is measured in metres: apply its scale (Ctrl+A > "
                         "Scale) first")


def normalized(matrix):
    """(4, 4) rigid frame of a Blender world matrix (scale removed) and the scale (3,):
    :func:`normalized_arrays` of its entries."""
    return normalized_arrays(bridge.matrix_to_array(matrix))


def normalized_arrays(M):
    """Rigid frames ``(..., 4, 4)`` of world matrices ``M (..., 4, 4)`` (scale removed) and
    their scales ``(..., 3)``, computed in double precision from the matrices'
    single-precision entries: the scale is the columns' lengths (all negated for a mirroring
    matrix, as ``Matrix.decompose``), the rotation the nearest one to the unscaled columns
    (:func:`bridge.rigid`), so a frame is rigid to double-precision rounding where mathutils'
    own single-precision decomposition leaves it ~1e-7 off."""
    M = np.array(M, dtype=np.float64)
    scale = np.linalg.norm(M[..., :3, :3], axis=-2)
    scale = np.where((np.linalg.det(M[..., :3, :3]) < 0.0)[..., None], -scale, scale)
    M[..., :3, :3] /= np.where(scale == 0.0, 1.0, scale)[..., None, :]
    return bridge.rigid(M), scale


def settings_path(owner, prop):
    """``(ID, data path)`` of the simulation setting ``prop`` of a pose bone or an object
    (what its keys are stored under)."""
    if isinstance(owner, bpy.types.PoseBone):
        name = bpy.utils.escape_identifier(owner.name)
        return owner.id_data, f'pose.bones["{name}"].spline_joints_sim.{prop}'
    return owner, f"spline_joints_sim.{prop}"


def keyed_kinematic(owner):
    """True if a pose bone's (object's) Kinematic switch is keyed, so it may turn off during
    the shot and the body is simulated from there."""
    return bridge.find_fcurve(*settings_path(owner, "kinematic"), 0) is not None


def simulates(owner):
    """True if a pose bone (object) is simulated during the shot: Simulate on and Kinematic
    off or keyed."""
    s = owner.spline_joints_sim
    return s.enabled and (not s.kinematic or keyed_kinematic(owner))


def simulated_armatures(scene):
    return [obj for obj in scene.objects if obj.type == "ARMATURE" and obj.pose is not None
            and any(simulates(pb) for pb in obj.pose.bones)]


def simulated_objects(scene):
    return [obj for obj in scene.objects if simulates(obj)]


def joint_parent(obj):
    s = obj.spline_joints_sim
    if s.kind == "WIRE":
        return s.wire
    return s.parent if s.parent is not None else obj.parent


def bone_parent(pb):
    """The pose bone a bone's joint connects to: its Joint Parent Bone when set, else its
    parent in the armature (None at a root); ValueError for a name the armature lacks or a
    Joint Parent Bone without Keys On (its keys could not be written in the armature's
    hierarchy)."""
    s = pb.spline_joints_sim
    if not s.parent_bone:
        return pb.parent
    bones = pb.id_data.pose.bones
    if s.parent_bone not in bones:
        raise ValueError(f"bone '{pb.name}': its Joint Parent Bone '{s.parent_bone}' is not a "
                         "bone of the armature; pick one or clear it")
    if not s.key_bone and (pb.parent is None or pb.parent.name != s.parent_bone):
        raise ValueError(f"bone '{pb.name}' has Joint Parent Bone '{s.parent_bone}', not its "
                         "armature parent, so its own keys cannot show the simulation: set "
                         "Keys On to the control it follows, or clear the Joint Parent Bone")
    if s.key_bone and s.key_bone not in bones:
        raise ValueError(f"bone '{pb.name}': its Keys On bone '{s.key_bone}' is not a bone of "
                         "the armature; pick one or clear it")
    return bones[s.parent_bone]


def armature_bodies(obj):
    """The bodies of an armature rig: simulated bones and their ancestors (through
    :func:`bone_parent`), parents first; the armature object itself first when it is
    animated (decided after sampling). ValueError for joint parents in a loop."""
    if obj.pose is None:
        raise ValueError(f"'{obj.name}' is not an armature with a pose")
    _unit_scale(obj, "armature")
    parent = {}
    for pb in obj.pose.bones:
        if simulates(pb):
            b = pb
            while b is not None and b.name not in parent:
                parent[b.name] = bone_parent(b)
                b = parent[b.name]
    order, placed = [], set()
    for pb in obj.pose.bones:              # Blender lists parents first; joint parents may not
        chain, b = [], pb
        while b is not None and b.name in parent and b.name not in placed:
            if b.name in chain:
                raise ValueError(f"the joint parents of '{pb.name}' form a loop; clear a "
                                 "Joint Parent Bone")
            chain.append(b.name)
            b = parent[b.name]
        for name in reversed(chain):
            placed.add(name)
            order.append(obj.pose.bones[name])
    names = [pb.name for pb in order]
    return [Body(pb.name, pb, "BONE", -1 if parent[pb.name] is None
                 else names.index(parent[pb.name].name), pb.spline_joints_sim) for pb in order]


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
            o = joint_parent(o) if o.spline_joints_sim.enabled else o.parent
    order, placed = [], set()

    def place(o):
        if o.name in placed:
            return
        parent = joint_parent(o) if o.spline_joints_sim.enabled else o.parent
        if parent is not None and parent.name in chosen:
            place(parent)
        placed.add(o.name)
        order.append(o)

    for o in chosen.values():
        place(o)
    names = [o.name for o in order]
    bodies = []
    for o in order:
        parent = joint_parent(o) if o.spline_joints_sim.enabled else o.parent
        if simulates(o):
            if o.parent is not None and o.parent != parent:
                raise ValueError(f"'{o.name}' is a child of '{o.parent.name}' in Blender but its "
                                 f"joint connects it to '{getattr(parent, 'name', 'the world')}'; "
                                 "clear its Blender parent (Alt+P) or make the two the same")
        bodies.append(Body(o.name, o, "OBJECT", -1 if parent is None else names.index(parent.name),
                            o.spline_joints_sim))
    return bodies


def sample_poses(scene, rig_obj, bodies, frames, each_frame=None):
    """Read every body's pose in its parent at ``frames`` (sets the scene's frame; the
    caller puts it back), and each simulated body's animated Kinematic, Strength and Pin
    (:attr:`Body.animated`), calling ``each_frame(frame)`` at each one when given. The
    matrices are read at each frame and made rigid relative poses for all frames at once
    (a few stacked LAPACK calls rather than several per body and frame, which a threaded
    BLAS makes slow on a busy machine)."""
    arm_world, raw = {}, []
    for f in frames:
        scene.frame_set(int(f))
        if each_frame is not None:
            each_frame(f)
        for b in bodies:
            if not b.kinematic:
                s = b.settings
                b.animated[f] = (bool(s.kinematic), float(s.strength), bool(s.use_pin))
        if rig_obj is not None:
            arm_world[f] = normalized(rig_obj.matrix_world)[0]
        raw.append([bridge.matrix_to_array(b.owner.matrix if rig_obj is not None
                                           else b.owner.matrix_world) for b in bodies])
    if not bodies or not len(frames):
        return arm_world
    mats = np.array(raw, dtype=np.float64)                         # (F, bodies, 4, 4)
    if rig_obj is None:                                            # objects: world frames
        mats, scales = normalized_arrays(mats)
        for k, b in enumerate(bodies):
            b.scale = scales[-1, k]
    children = [k for k, b in enumerate(bodies) if b.parent >= 0]
    if children:                                                   # in the parent's frame
        mats[:, children] = np.linalg.solve(mats[:, [bodies[k].parent for k in children]],
                                            mats[:, children])
    poses = bridge.rigid(mats)
    for i, f in enumerate(frames):
        for k, b in enumerate(bodies):
            b.poses[f] = poses[i, k]
    return arm_world


def body_mass(body, rig_obj, cache):
    """(mass, com, inertia, source) of a simulated body from its settings."""
    from . import massprops

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


def body_shapes(body):
    """The core collision shapes of a simulated body in its frame (``Collision``): a bone's
    along its Y from the head, an object's from its bounding box (scaled, in the unscaled
    object frame, :func:`colliders.bounds_shape`). A shape that cannot be made (a zero
    radius, a flat box) raises ValueError naming the body."""
    from ..core.contacts import Box, Capsule, Sphere

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


def armature_shapes(obj) -> list:
    """``[(shape, world pose (4, 4))]`` of the collision shapes of an armature rig's simulated
    bones at their current poses (ValueError when a shape cannot be made)."""
    W = normalized(obj.matrix_world)[0]
    return [(sh, W @ bridge.rigid(bridge.matrix_to_array(b.owner.matrix)))
            for b in armature_bodies(obj) if not b.kinematic for sh in body_shapes(b)]


def object_shapes(obj) -> list:
    """``[(shape, world pose (4, 4))]`` of the collision shapes of a simulated object at its
    current pose (ValueError when a shape cannot be made)."""
    b = Body(obj.name, obj, "OBJECT", -1, obj.spline_joints_sim)
    T, b.scale = normalized(obj.matrix_world)
    return [(sh, T) for sh in body_shapes(b)]


def _fitted_joint(pb):
    from ..core.io import joints as jio

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


def joint_spec(body, rig_obj):
    """The :class:`core.rig.RigJoint` and the initial coordinates (or None) of a body."""
    from ..core.rig import RigJoint

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
        fit = wire_fit(s.wire)
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
    if body.kind == "BONE":
        problem = connected_head_problem(body.owner, s.kind, extra.get("joint"))
        if problem is not None:
            raise ValueError("; ".join(problem))
    if s.spring_units == "RELATIVE":
        extra.update(frequency=s.frequency, damping_ratio=s.damping_ratio)
    else:
        extra.update(stiffness=s.stiffness, damping=s.damping)
    return RigJoint(kind, **extra), q


def connected_head_problem(pose_bone, kind, joint=None):
    """Why a joint cannot sit on ``pose_bone``, or None: a connected bone's head is glued to
    its parent's tail (Blender keeps it there), so a joint that moves the head cannot work.
    ``kind``: the Joint choice ("SLIDER" and "FREE" move the head; "FITTED" moves it when
    ``joint``, its core joint, does anywhere in its range or within 1 of its neutral
    coordinates where it has none; a "FITTED" kind without ``joint`` is not judged).
    Returns ``(what is wrong, what to do)``, two sentences for a report or two panel lines."""
    if not (pose_bone.bone.use_connect and pose_bone.parent is not None):
        return None
    moves = kind in ("SLIDER", "FREE")
    if kind == "FITTED" and joint is not None:
        qs = np.linspace(joint.lower, joint.upper, 9) if np.all(np.isfinite(joint.lower)) and \
            np.all(np.isfinite(joint.upper)) else joint.neutral()[None] + np.linspace(-1, 1, 9)[:, None]
        heads = joint.transforms(qs)[:, :3, 3]
        moves = float(np.ptp(heads, axis=0).max()) > 1e-6
    if not moves:
        return None
    what = "fitted" if kind == "FITTED" else kind.lower()
    return (f"bone '{pose_bone.name}' is connected to its parent, so Blender keeps its head "
            f"on the parent's tail, but its {what} joint moves the head",
            "untick Connected (Bone Properties > Relations) or use a joint that only turns")


#: how far (m) a bead's wire may leave the user's curve: control frames are added until the
#: fitted wire is this close (up to core.wire.MAX_FRAMES; the report says when it is not)
WIRE_TOLERANCE = 1e-6


def wire_fit(curve_obj):
    """The :class:`core.wire.WireFit` of a curve object, within :data:`WIRE_TOLERANCE`."""
    from ..core.wire import wire_joint
    from . import curves

    return wire_joint(curves.read_curve(curve_obj), tolerance=WIRE_TOLERANCE)
