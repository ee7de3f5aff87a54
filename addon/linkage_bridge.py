"""The linkages' part of the bpy <-> numpy layer (see :mod:`.bridge`): a scene linkage read into
a :class:`core.linkage.Linkage`, joint frames stored in double precision, poses written back.

Bodies (:class:`BodyRef`) are the objects, or bones of armature objects, the joints name, in
order of first mention. An object's pose is its ``matrix_world`` made rigid
(:func:`.bridge.rigid`: scale removed, nearest rotation), its origin taken as the centre of
mass; its mass is ``Object.spline_joints_linkage_mass`` and its inertia that of a solid box
of its bounding box times its scale (each edge at least :data:`MIN_SIZE`). A bone's pose is
the armature's world matrix times the bone's pose matrix, made rigid, its head taken as the
centre of mass; its mass is ``PoseBone.spline_joints_linkage_mass`` and its inertia that of a
solid box along the bone, its length by a fifth of that (:data:`BONE_WIDTH`); its pose is
written through its ``matrix_basis`` (:func:`core.bones.pose_basis` of its pose in its parent
bone), so the armature keeps its other bones. The live
assembly's last poses are kept in double precision on the linkage (:data:`POSES_KEY`), so the
next assembly starts from exactly what the last one returned (Blender keeps object matrices in
single precision).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.lie import se3
from .bridge import BridgeError, array_to_matrix, matrix_to_array, pick_index, rigid
from .linkage_properties import FRAME_KEYS

#: ID property of a linkage: the last live assembly's poses, (N * 16) doubles, bodies in order
POSES_KEY = "poses_f64"
#: ID property of a linkage: the names of the bodies POSES_KEY belongs to
POSE_NAMES_KEY = "pose_names"
#: ID property of a linkage: constraint error per baked frame (doubles)
ERRORS_KEY = "frame_errors_f64"
#: joint kinds on a curve object's Spline Curve joint
CURVE_KINDS = ("curve", "curve_point")
#: smallest box edge (m) for a body's inertia (an empty has no size)
MIN_SIZE = 0.01


#: a bone body's box: as wide and deep as this times its length
BONE_WIDTH = 0.2


def active_linkage(scene, index: int = -1):
    """``(i, item)`` of the scene's linkage ``index`` (-1: the active one)."""
    i = pick_index(scene.spline_joints_linkages, scene.spline_joints_active_linkage, index, "linkage")
    return i, scene.spline_joints_linkages[i]


def object_pose(obj) -> np.ndarray:
    """``(4, 4)`` rigid world pose of an object (scale removed)."""
    return rigid(matrix_to_array(obj.matrix_world))


@dataclass(frozen=True)
class BodyRef:
    """A linkage body: an object, or the bone named ``bone`` of the armature object ``obj``."""

    obj: object
    bone: str = ""

    @property
    def name(self) -> str:
        """The body's name in the core linkage: the object's, or ``"armature:bone"``."""
        return f"{self.obj.name}:{self.bone}" if self.bone else self.obj.name

    @property
    def pose_bone(self):
        return self.obj.pose.bones[self.bone]


def body_ref(obj, bone: str = "") -> BodyRef | None:
    """The body of an object (None: the world) or of its bone ``bone``; BridgeError when the
    armature has no such bone."""
    if obj is None:
        return None
    if bone and (obj.type != "ARMATURE" or obj.pose is None or bone not in obj.pose.bones):
        raise BridgeError(f"'{obj.name}' has no bone '{bone}'; pick a bone of an armature")
    return BodyRef(obj, bone)


def body_pose(ref: BodyRef) -> np.ndarray:
    """``(4, 4)`` rigid world pose of a body (its head for a bone)."""
    if not ref.bone:
        return object_pose(ref.obj)
    return rigid(matrix_to_array(ref.obj.matrix_world) @ matrix_to_array(ref.pose_bone.matrix))


def write_frames(joint, T1: np.ndarray, T2: np.ndarray) -> None:
    """Store a joint's frame in body 1 and in body 2 ((4, 4) each) as doubles."""
    for key, T in zip(FRAME_KEYS, (T1, T2)):
        joint[key] = [float(x) for x in np.asarray(T, dtype=float).ravel()]


def read_frames(joint) -> tuple[np.ndarray, np.ndarray]:
    """A joint's stored frames ``(T1, T2)``, (4, 4) each."""
    out = []
    for key in FRAME_KEYS:
        if key not in joint:
            raise BridgeError(f"joint '{joint.name}' has no stored frames; remove it and add it again")
        out.append(np.array(joint[key], dtype=float).reshape(4, 4))
    return out[0], out[1]


def joint_frames_at(F: np.ndarray, body1, body2) -> tuple[np.ndarray, np.ndarray]:
    """Frames in body 1 (a :class:`BodyRef`; world if None) and body 2 of a joint whose world
    frame is ``F``."""
    T1 = F if body1 is None else se3.inv(body_pose(body1)) @ F
    return T1, se3.inv(body_pose(body2)) @ F


def read_body(ref: BodyRef) -> LinkBody:
    """The body of an object or bone: rigid pose, mass, solid-box inertia."""
    from ..core.linkage import LinkBody    # not at import: core.linkage loads the kernels

    if ref.bone:
        m = float(ref.pose_bone.spline_joints_linkage_mass)
        length = max(float(ref.pose_bone.bone.length), MIN_SIZE)
        x, y, z = BONE_WIDTH * length, length, BONE_WIDTH * length       # the bone along y
    else:
        obj = ref.obj
        m = float(obj.spline_joints_linkage_mass)
        # the bounding box times the scale property (``obj.dimensions`` takes the scale from
        # the world matrix, whose single-precision decomposition changes as the object turns)
        box = np.array([tuple(c) for c in obj.bound_box], dtype=float)
        x, y, z = np.maximum((box.max(axis=0) - box.min(axis=0)) * np.abs(np.array(obj.scale)),
                             MIN_SIZE)
    inertia = m / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])
    return LinkBody(ref.name, body_pose(ref), m, inertia)


def check_body(ref: BodyRef) -> None:
    """A linkage body is placed and keyed in world coordinates: an object (or a bone's
    armature) must have no parent."""
    if ref.obj.parent is not None:
        what = "armature" if ref.bone else "linkage body"
        raise BridgeError(f"'{ref.obj.name}' has a parent; a {what} is placed in world "
                          f"coordinates: clear its parent (Alt+P, keep transform)")


def joint_bodies(joint) -> tuple:
    """``(body 1, body 2)`` of a joint item as :class:`BodyRef` s (body 1 None: the world)."""
    return body_ref(joint.body1, joint.bone1), body_ref(joint.body2, joint.bone2)


def driver_ref(item) -> BodyRef | None:
    """The driving body of a linkage item (object or bone), or None."""
    return body_ref(item.driver, item.driver_bone)


def linkage_objects(scene, item) -> list:
    """The linkage's bodies (:class:`BodyRef`) in order of first mention; BridgeError when a
    joint lost an object or bone (deleted, or no longer in the scene)."""
    bodies = []
    for joint in item.joints:
        for which, obj, bone in (("first", joint.body1, joint.bone1),
                                 ("second", joint.body2, joint.bone2)):
            if obj is None:
                if which == "first" and joint.to_world:
                    continue
                raise BridgeError(f"joint '{joint.name}' of linkage '{item.name}' lost its {which} "
                                  f"body (deleted?); remove the joint or add it again")
            if scene.objects.get(obj.name) is None:
                raise BridgeError(f"joint '{joint.name}' of linkage '{item.name}' names '{obj.name}', "
                                  f"which is not in the scene; link it back or remove the joint")
            ref = body_ref(obj, bone)
            if ref not in bodies:
                check_body(ref)
                bodies.append(ref)
    driver = driver_ref(item)
    if driver is not None and driver not in bodies:
        raise BridgeError(f"the driving body '{driver.name}' of linkage '{item.name}' has no "
                          f"joint; add one or clear the driver")
    return bodies


def read_linkage(scene, item, driven: bool = True) -> tuple[Linkage, list]:
    """``(Linkage, objects)`` of a scene linkage at the objects' current poses; ``driven``:
    with its driver (live assembly), else released (dynamics)."""
    from ..core.linkage import LinkJoint, Linkage, LinkSpring

    objects = linkage_objects(scene, item)
    joints, springs = [], []
    for joint in item.joints:
        T1, T2 = read_frames(joint)
        ref1, ref2 = joint_bodies(joint)
        b1 = "" if ref1 is None else ref1.name
        b2 = ref2.name
        if joint.kind == "spring":
            springs.append(LinkSpring(joint.name, b1, b2, T1[:3, 3], T2[:3, 3], joint.stiffness,
                                      joint.rest_length, joint.damping))
            continue
        lower, upper, cone = (), (), None
        if joint.use_limits:
            if joint.kind == "ball":
                cone = joint.cone
            else:
                slide, angle = (joint.lower_slide, joint.upper_slide), (joint.lower_angle, joint.upper_angle)
                ranges = {"hinge": [angle], "cylinder": [slide, angle], "slotted": [slide, angle]}
                pairs = ranges.get(joint.kind, [slide])
                lower, upper = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        curve = read_curve_frames(joint.curve) if joint.kind in CURVE_KINDS else None
        surface = read_surface_points(joint.surface) if joint.kind == "surface_point" else None
        joints.append(LinkJoint(joint.name, joint.kind, b1, b2, T1, T2, lower, upper, cone, curve,
                                surface))
    gravity = tuple(scene.gravity) if scene.use_gravity else (0.0, 0.0, 0.0)
    driver = driver_ref(item).name if (driven and item.driver is not None and not item.drive_joint) else ""
    linkage = Linkage(tuple(read_body(o) for o in objects), tuple(joints), tuple(springs), driver,
                      item.drive_joint if driven else "", gravity)
    return linkage, objects


def curve_points(obj) -> np.ndarray:
    """The points ``(n, 3)`` of a curve object's first spline in its own frame (Bezier control
    points or NURBS/poly points)."""
    if obj is None or obj.type != "CURVE" or not len(obj.data.splines):
        raise BridgeError("a Spline Curve joint needs a curve object with a spline; pick one")
    sp = obj.data.splines[0]
    pts = [tuple(p.co)[:3] for p in (sp.bezier_points if sp.type == "BEZIER" else sp.points)]
    return np.array(pts, dtype=float).reshape(-1, 3)


def read_curve_frames(obj) -> np.ndarray:
    """Control frames ``(n, 4, 4)`` of a Spline Curve joint on curve object ``obj``, in its frame
    1 (the curve object's frame when the joint was added): the curve's points, unturned."""
    pts = curve_points(obj)
    if len(pts) < 4:
        raise BridgeError(f"the curve '{obj.name}' has {len(pts)} points; a cubic spline curve joint "
                          "needs at least 4")
    frames = np.tile(np.eye(4), (len(pts), 1, 1))
    frames[:, :3, 3] = pts
    return frames


def read_surface_points(obj) -> np.ndarray:
    """Control points ``(n_v, n_u, 3)`` of a Point on Surface joint: the points of a NURBS
    surface object's first spline, in its own frame (Blender stores them u fastest)."""
    if obj is None or obj.type != "SURFACE" or not len(obj.data.splines):
        raise BridgeError("a Point on Surface joint needs a NURBS surface object; pick one")
    sp = obj.data.splines[0]
    nu, nv = sp.point_count_u, sp.point_count_v
    if min(nu, nv) < 4:
        raise BridgeError(f"the surface '{obj.name}' has {nu} x {nv} points; a cubic spline "
                          "surface needs at least 4 x 4")
    pts = np.array([tuple(p.co)[:3] for p in sp.points], dtype=float)
    return pts.reshape(nv, nu, 3)


def read_state(item, names) -> np.ndarray | None:
    """The last live assembly's poses ``(N, 4, 4)`` if they belong to bodies ``names``."""
    if POSES_KEY not in item or list(item.get(POSE_NAMES_KEY, [])) != list(names):
        return None
    P = np.array(item[POSES_KEY], dtype=float)
    return P.reshape(-1, 4, 4) if P.size == 16 * len(names) else None


def write_state(item, names, poses: np.ndarray) -> None:
    item[POSES_KEY] = [float(x) for x in np.asarray(poses, dtype=float).ravel()]
    item[POSE_NAMES_KEY] = list(names)


def bone_bases(bodies, poses: np.ndarray) -> dict:
    """``{index: basis (..., 4, 4)}`` of the bone bodies for world poses ``(..., N, 4, 4)`` of
    ``bodies``: :func:`core.bones.pose_basis` of each bone's pose in its parent bone (the
    parent's pose from ``poses`` when it is a body too, else as it stands), or in its
    armature for a root bone, as Blender composes ``pose = parent pose @ rest in parent @
    basis``."""
    from ..core.bones import pose_basis

    index = {ref: k for k, ref in enumerate(bodies)}
    out = {}
    for k, ref in enumerate(bodies):
        if not ref.bone:
            continue
        arm = matrix_to_array(ref.obj.matrix_world)
        pb = ref.pose_bone
        # the pose in armature space (the armature's own scale undone)
        T = np.linalg.solve(arm, poses[..., k, :, :])
        rest = matrix_to_array(pb.bone.matrix_local)
        if pb.parent is not None:
            parent = BodyRef(ref.obj, pb.parent.name)
            P = (np.linalg.solve(arm, poses[..., index[parent], :, :]) if parent in index
                 else matrix_to_array(pb.parent.matrix))
            T = np.linalg.solve(P, T)
            rest = np.linalg.solve(matrix_to_array(pb.parent.bone.matrix_local), rest)
        out[k] = pose_basis(rigid(rest), rigid(T))
    return out


def write_poses(objects, poses: np.ndarray, skip=()) -> None:
    """Place bodies (:class:`BodyRef`) at world poses ``(N, 4, 4)``: an object's location and
    rotation (in its rotation mode; Euler angles continuous with the current ones) are set,
    its scale is left as it is (assigning ``matrix_world`` would decompose it again, in single
    precision, on every frame); a bone's ``matrix_basis`` (:func:`bone_bases`). Indices in
    ``skip`` are left alone."""
    bases = bone_bases(objects, poses)
    for k, (ref, T) in enumerate(zip(objects, poses)):
        if k in skip:
            continue
        if ref.bone:
            ref.pose_bone.matrix_basis = array_to_matrix(bases[k])
            continue
        obj = ref.obj
        M = array_to_matrix(T)
        obj.location = M.translation
        if obj.rotation_mode == "QUATERNION":
            obj.rotation_quaternion = M.to_quaternion()
        elif obj.rotation_mode == "AXIS_ANGLE":
            axis, angle = M.to_quaternion().to_axis_angle()
            obj.rotation_axis_angle = (angle, *axis)
        else:
            obj.rotation_euler = M.to_euler(obj.rotation_mode, obj.rotation_euler)
