"""The linkages' part of the bpy <-> numpy layer (see :mod:`.bridge`): a scene linkage read into
a :class:`core.linkage.Linkage`, joint frames stored in double precision, poses written back.

Bodies are the objects the joints name, in order of first mention. A body's pose is its
``matrix_world`` made rigid (:func:`.bridge.rigid`: scale removed, nearest rotation), its
origin taken as the centre of mass; its mass is ``Object.spline_joints_linkage_mass`` and its
inertia that of a solid box of its bounding box times its scale (each edge at least
:data:`MIN_SIZE`). The live
assembly's last poses are kept in double precision on the linkage (:data:`POSES_KEY`), so the
next assembly starts from exactly what the last one returned (Blender keeps object matrices in
single precision).
"""

from __future__ import annotations

import numpy as np

from ..core.lie import se3
from ..core.linkage import LinkBody, LinkJoint, Linkage, LinkSpring
from .bridge import BridgeError, array_to_matrix, matrix_to_array, rigid
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


def object_pose(obj) -> np.ndarray:
    """``(4, 4)`` rigid world pose of an object (scale removed)."""
    return rigid(matrix_to_array(obj.matrix_world))


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
    """Frames in body 1 (world if None) and body 2 of a joint whose world frame is ``F``."""
    T1 = F if body1 is None else se3.inv(object_pose(body1)) @ F
    return T1, se3.inv(object_pose(body2)) @ F


def read_body(obj) -> LinkBody:
    """The body of an object: rigid pose, mass, solid-box inertia."""
    m = float(obj.spline_joints_linkage_mass)
    # the bounding box times the scale property (``obj.dimensions`` takes the scale from the
    # world matrix, whose single-precision decomposition changes as the object turns)
    box = np.array([tuple(c) for c in obj.bound_box], dtype=float)
    x, y, z = np.maximum((box.max(axis=0) - box.min(axis=0)) * np.abs(np.array(obj.scale)), MIN_SIZE)
    inertia = m / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])
    return LinkBody(obj.name, object_pose(obj), m, inertia)


def check_body(obj) -> None:
    """A linkage body is placed and keyed in world coordinates: it must have no parent."""
    if obj.parent is not None:
        raise BridgeError(f"'{obj.name}' has a parent; a linkage body is placed in world "
                          f"coordinates: clear its parent (Alt+P, keep transform)")


def linkage_objects(scene, item) -> list:
    """The linkage's body objects in order of first mention; BridgeError when a joint lost an
    object (deleted, or no longer in the scene)."""
    objects = []
    for joint in item.joints:
        for which, obj in (("first", joint.body1), ("second", joint.body2)):
            if obj is None:
                if which == "first" and joint.to_world:
                    continue
                raise BridgeError(f"joint '{joint.name}' of linkage '{item.name}' lost its {which} "
                                  f"body (deleted?); remove the joint or add it again")
            if scene.objects.get(obj.name) is None:
                raise BridgeError(f"joint '{joint.name}' of linkage '{item.name}' names '{obj.name}', "
                                  f"which is not in the scene; link it back or remove the joint")
            if obj not in objects:
                check_body(obj)
                objects.append(obj)
    if item.driver is not None and item.driver not in objects:
        raise BridgeError(f"the driving body '{item.driver.name}' of linkage '{item.name}' has no "
                          f"joint; add one or clear the driver")
    return objects


def read_linkage(scene, item, driven: bool = True) -> tuple[Linkage, list]:
    """``(Linkage, objects)`` of a scene linkage at the objects' current poses; ``driven``:
    with its driver (live assembly), else released (dynamics)."""
    objects = linkage_objects(scene, item)
    joints, springs = [], []
    for joint in item.joints:
        T1, T2 = read_frames(joint)
        b1 = "" if joint.body1 is None else joint.body1.name
        b2 = joint.body2.name
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
    driver = item.driver.name if (driven and item.driver is not None and not item.drive_joint) else ""
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


def write_poses(objects, poses: np.ndarray, skip=()) -> None:
    """Place objects (without parents) at world poses ``(N, 4, 4)``: their location and
    rotation (in their rotation mode; Euler angles continuous with the current ones) are set,
    their scale is left as it is (assigning ``matrix_world`` would decompose it again, in
    single precision, on every frame). Indices in ``skip`` are left alone."""
    for k, (obj, T) in enumerate(zip(objects, poses)):
        if k in skip:
            continue
        M = array_to_matrix(T)
        obj.location = M.translation
        if obj.rotation_mode == "QUATERNION":
            obj.rotation_quaternion = M.to_quaternion()
        elif obj.rotation_mode == "AXIS_ANGLE":
            axis, angle = M.to_quaternion().to_axis_angle()
            obj.rotation_axis_angle = (angle, *axis)
        else:
            obj.rotation_euler = M.to_euler(obj.rotation_mode, obj.rotation_euler)
