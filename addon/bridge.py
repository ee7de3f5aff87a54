"""The only code that converts between Blender data and numpy arrays.

Operators read Blender state through the ``read_*`` functions, hand numpy arrays to the core,
and write results back through the ``write_*`` functions. Nothing here does joint maths.

Frames and units:
* ``T_parent_child`` is the pose of the child bone's frame (head at the joint, Y along the bone,
  roll included) in the parent bone's frame, as a (4, 4) float64 array. It is computed in
  armature space, so the armature object's own transform is ignored. Armature-space units are
  taken as metres (the project's scenes use a unit scale of 1 and unscaled armature objects).
* Matrices are row-major numpy arrays, exactly as mathutils prints them.
* Blender keeps matrices in single precision, so a rotation read from it is orthonormal only to
  ~1e-7; the ``read_*_T_parent_child`` functions return its nearest rotation (orthonormal to
  ~1e-15), and captured sample poses are stored in double precision, so what the core receives
  is rigid without repair.
"""

from __future__ import annotations

import bpy
import numpy as np
from mathutils import Matrix

#: joint coordinates a captured sample and a bone's coordinate sliders hold at most
MAX_COORDINATES = 2
SAMPLE_PROPERTY_PREFIX = "sj_q"
#: ID property of a captured sample holding its pose as 16 doubles (row-major T_parent_child).
#: Samples saved before it existed have only the single-precision ``pose`` field.
SAMPLE_POSE_KEY = "pose_f64"


class BridgeError(ValueError):
    """The scene is not in a state the operation can use; the message says what to change."""


# --------------------------------------------------------------------------------------------
# Matrices
# --------------------------------------------------------------------------------------------

def matrix_to_array(m) -> np.ndarray:
    """mathutils Matrix (4x4) -> (4, 4) float64 array."""
    return np.array(m, dtype=np.float64).reshape(4, 4)


def array_to_matrix(a: np.ndarray) -> Matrix:
    """(4, 4) array -> mathutils Matrix."""
    a = np.asarray(a, dtype=np.float64).reshape(4, 4)
    return Matrix(a.tolist())


def rigid(T: np.ndarray) -> np.ndarray:
    """Transforms (..., 4, 4) with each rotation replaced by its nearest rotation (the polar
    factor U V^T of its SVD) and the last row set to [0, 0, 0, 1]; the translation is kept.

    For Blender's single-precision matrices, which are rigid only to ~1e-7.
    """
    T = np.array(T, dtype=np.float64)
    U, _, Vt = np.linalg.svd(T[..., :3, :3])
    T[..., :3, :3] = U @ Vt
    T[..., 3, :] = (0.0, 0.0, 0.0, 1.0)
    return T


def _require_parent(pose_bone) -> None:
    if pose_bone.parent is None:
        raise BridgeError(f"bone '{pose_bone.name}' has no parent: a joint needs a parent bone; "
                          "parent it (Edit Mode, Ctrl+P > Keep Offset)")


def read_rest_T_parent_child(pose_bone) -> np.ndarray:
    """Rest pose of the bone in its parent's frame. Returns (4, 4)."""
    _require_parent(pose_bone)
    parent = matrix_to_array(pose_bone.parent.bone.matrix_local)
    child = matrix_to_array(pose_bone.bone.matrix_local)
    return rigid(np.linalg.solve(parent, child))


def read_rest_frames(pose_bone) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Rest frames (4, 4) of the bone's parent and of the bone in armature space (made rigid)
    and their lengths (m): ``(parent, child, parent_length, child_length)``, the fields of a
    core :class:`~core.io.RestFrames`."""
    _require_parent(pose_bone)
    parent, child = pose_bone.parent.bone, pose_bone.bone
    return (rigid(matrix_to_array(parent.matrix_local)), rigid(matrix_to_array(child.matrix_local)),
            float(parent.length), float(child.length))


def read_pose_T_parent_child(pose_bone) -> np.ndarray:
    """Current (evaluated) pose of the bone in its parent's frame. Returns (4, 4).

    Uses the pose matrices in armature space, so constraints and drivers are included once the
    depsgraph has been evaluated (``view_layer.update()`` or ``scene.frame_set``).
    """
    _require_parent(pose_bone)
    parent = matrix_to_array(pose_bone.parent.matrix)
    child = matrix_to_array(pose_bone.matrix)
    return rigid(np.linalg.solve(parent, child))


def write_sample_pose(sample, T_parent_child: np.ndarray) -> None:
    """Store a sample's pose (4, 4) in double precision (and its single-precision ``pose`` copy,
    which scripts and old versions of the add-on read)."""
    values = np.asarray(T_parent_child, dtype=np.float64).reshape(16)
    sample[SAMPLE_POSE_KEY] = values.tolist()
    sample.pose = values


def read_sample_poses(samples) -> np.ndarray:
    """(N, 4, 4) poses of a sample collection, exactly as stored; BridgeError when it is empty.

    Samples from files saved before the double-precision key existed fall back to their
    single-precision ``pose`` made rigid (:func:`rigid`), so they too reach the core without
    its re-orthonormalization warning.
    """
    if len(samples) == 0:
        raise BridgeError("no samples: capture poses of the bone first (Capture Pose / Frame Range)")
    poses = np.empty((len(samples), 4, 4), dtype=np.float64)
    for k, sample in enumerate(samples):
        stored = sample.get(SAMPLE_POSE_KEY)
        if stored is None:
            poses[k] = rigid(np.array(sample.pose, dtype=np.float64).reshape(4, 4))
        else:
            poses[k] = np.array(stored.to_list(), dtype=np.float64).reshape(4, 4)
    return poses


def read_sample_coordinates(samples, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates q (N, n) and weights (N,) of a sample collection.

    n: how many coordinates to read from every sample; None takes the samples' own count,
    which must be the same for all (BridgeError otherwise).
    """
    count = len(samples)
    q = np.empty(MAX_COORDINATES * count, dtype=np.float64)
    samples.foreach_get("q", q)
    used = np.empty(count, dtype=np.int32)
    samples.foreach_get("n_coordinates", used)
    w = np.empty(count, dtype=np.float64)
    samples.foreach_get("weight", w)
    if n is None:
        if np.any(used != used[:1]):
            raise BridgeError("the samples have different numbers of coordinates; clear them and "
                              "capture again with one coordinate setting")
        n = int(used[0]) if count else 0
    return q.reshape(count, MAX_COORDINATES)[:, :n], w


def read_samples(samples) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """poses (N, 4, 4), coordinates q (N, n) (None when the samples have none) and weights
    (N,) of the captured samples, for a fit; BridgeError when there are none or their numbers
    of coordinates differ."""
    poses = read_sample_poses(samples)
    q, w = read_sample_coordinates(samples)
    return poses, (q if q.shape[1] else None), w


def check_drivable(pose_bone) -> None:
    """Raise BridgeError unless setting matrix_basis from T_parent_child poses this bone exactly."""
    _require_parent(pose_bone)
    bone = pose_bone.bone
    problems = []
    if bone.use_connect:
        problems.append("it is connected to its parent (Edit Mode: Alt+P > Disconnect Bone)")
    if not bone.use_inherit_rotation:
        problems.append("'Inherit Rotation' is off")
    if bone.inherit_scale != "FULL":
        problems.append("'Inherit Scale' is not Full")
    if not bone.use_local_location:
        problems.append("'Local Location' is off")
    if problems:
        raise BridgeError(f"bone '{pose_bone.name}' cannot be posed by a joint: " + "; ".join(problems))


def read_basis_rotation(pose_bone) -> np.ndarray:
    """The rotation (3, 3) of the bone's ``matrix_basis`` (its scale removed, :func:`rigid`):
    with Blender's default inheritance, the joint rotation of the bone in its parent."""
    return rigid(matrix_to_array(pose_bone.matrix_basis))[:3, :3]


def write_basis_rotation(pose_bone, R: np.ndarray) -> bool:
    """Set the bone's rotation channels, in its own rotation mode, to the rotation R (3, 3):
    Euler angles compatible with the current ones and the quaternion on the current one's
    side, so keyed or interpolated channels do not flip. Returns False (and writes nothing,
    so no depsgraph update follows) when the single-precision channels already hold it."""
    m = Matrix(np.asarray(R, dtype=np.float64).tolist())
    mode = pose_bone.rotation_mode
    if mode == "QUATERNION":
        q = m.to_quaternion()
        q.make_compatible(pose_bone.rotation_quaternion)
        path, values = "rotation_quaternion", tuple(q)
    elif mode == "AXIS_ANGLE":
        axis, angle = m.to_quaternion().to_axis_angle()
        path, values = "rotation_axis_angle", (angle, *axis)
    else:
        path, values = "rotation_euler", tuple(m.to_euler(mode, pose_bone.rotation_euler))
    if np.array_equal(np.array(getattr(pose_bone, path), dtype=np.float32),
                      np.array(values, dtype=np.float32)):
        return False
    setattr(pose_bone, path, values)
    return True


def write_limit_rotation(pose_bone, name: str, axis: int, lower: float, upper: float):
    """Add (or update) the bone's Limit Rotation constraint ``name`` in local space: rotation
    about its axis ``axis`` (0, 1, 2: X, Y, Z) in [lower, upper] radians, about the other two
    axes none. Returns the constraint."""
    con = pose_bone.constraints.get(name)
    if con is None or con.type != "LIMIT_ROTATION":
        con = pose_bone.constraints.new("LIMIT_ROTATION")
        con.name = name
    con.owner_space = "LOCAL"
    for i, a in enumerate("xyz"):
        setattr(con, f"use_limit_{a}", True)
        setattr(con, f"min_{a}", float(lower) if i == axis else 0.0)
        setattr(con, f"max_{a}", float(upper) if i == axis else 0.0)
    return con


# --------------------------------------------------------------------------------------------
# Driving coordinates
# --------------------------------------------------------------------------------------------

def read_rotation_channel(pose_bone, axis: int) -> float:
    """Rotation channel X/Y/Z (0/1/2) of the bone in radians.

    Euler modes read the keyed Euler value itself (so angles past pi stay continuous);
    quaternion and axis-angle modes convert the basis rotation to an XYZ Euler angle.
    """
    if pose_bone.rotation_mode in {"QUATERNION", "AXIS_ANGLE"}:
        return float(pose_bone.matrix_basis.to_euler("XYZ")[axis])
    return float(pose_bone.rotation_euler[axis])


def read_custom_property(owner, name: str) -> float:
    """A numeric custom property; BridgeError names the owner and property if it is missing."""
    if name not in owner.keys():
        raise BridgeError(f"'{owner.name}' has no custom property '{name}'; add it or pick another source")
    value = owner[name]
    try:
        return float(value)
    except (TypeError, ValueError):
        raise BridgeError(f"custom property '{name}' on '{owner.name}' is not a number") from None


def coordinate_property_name(i: int) -> str:
    return f"{SAMPLE_PROPERTY_PREFIX}{i}"


def coordinate_path(name: str) -> str:
    """Data path of a custom property (an imported OpenSim armature's coordinate) on its owner,
    with quotes and backslashes in the name escaped, as Blender's data paths need."""
    return f'["{bpy.utils.escape_identifier(name)}"]'


def read_coordinate_values(pose_bone, nq: int) -> np.ndarray:
    """Current joint coordinates (nq,) from the bone's ``sj_q<i>`` properties (0 where missing)."""
    return read_named_values(pose_bone, [coordinate_property_name(i) for i in range(nq)], np.zeros(nq))


def read_named_values(owner, names, defaults) -> np.ndarray:
    """Float custom properties ``names`` of ``owner`` as an array (n,); a missing (or
    non-numeric) one takes its entry of ``defaults`` (n,)."""
    out = np.array(defaults, dtype=np.float64)
    for i, name in enumerate(names):
        value = owner.get(name)
        if isinstance(value, (int, float)):
            out[i] = float(value)
    return out


def write_float_property(owner, name: str, value: float, **ui) -> str:
    """Create/update the float custom property ``name`` of ``owner`` (an ID or a pose bone):
    its value, then its UI data ``ui`` (keywords of ``id_properties_ui(name).update``: min,
    max, soft_min, soft_max, subtype, default, description). Animatable, like any ID property."""
    owner[name] = float(value)
    owner.id_properties_ui(name).update(**ui)
    return name


def ensure_coordinate_property(pose_bone, i: int, lower: float, upper: float, value: float | None = None,
                               label: str = "") -> str:
    """Create/update the float custom property ``sj_q<i>`` with the range [lower, upper].

    It is animatable (a regular ID property) and shown as a slider in the panel; its tooltip
    names the joint's coordinate ``label`` (e.g. "knee_angle_r") and its range.
    """
    name = coordinate_property_name(i)
    if value is None:
        value = float(pose_bone.get(name, 0.5 * (lower + upper)))
    what = f"'{label}', coordinate {i}" if label else f"coordinate {i}"
    return write_float_property(pose_bone, name, min(max(value, lower), upper), min=lower, max=upper,
                                soft_min=lower, soft_max=upper,
                                description=f"The joint's {what} ({lower:.4g} to {upper:.4g}, "
                                            "radians or metres): moving or keying it poses this "
                                            "bone through the joint")


# --------------------------------------------------------------------------------------------
# Keyframes
# --------------------------------------------------------------------------------------------

def _fcurves_for(id_data, create: bool):
    """The F-curve collection of an ID's action (Blender 4.2 and the 4.4+ slotted actions).

    ``id_data`` is any animatable data-block (object, shape key, material...); a new action
    slot takes its ID type from the data-block (``id_data.id_type``: OBJECT, KEY, ...).
    """
    ad = id_data.animation_data
    if ad is None:
        if not create:
            return None
        ad = id_data.animation_data_create()
    if ad.action is None:
        if not create:
            return None
        ad.action = bpy.data.actions.new(f"{id_data.name}Action")
    action = ad.action
    if not hasattr(action, "layers"):  # Blender < 4.4: legacy action
        return action.fcurves
    from bpy_extras import anim_utils

    slot = ad.action_slot
    if slot is None:
        if not create:
            return None
        slot = action.slots.new(id_type=id_data.id_type, name=id_data.name)
        ad.action_slot = slot
    if create:
        return anim_utils.action_ensure_channelbag_for_slot(action, slot).fcurves
    bag = anim_utils.action_get_channelbag_for_slot(action, slot)
    return None if bag is None else bag.fcurves


def find_fcurve(id_data, data_path: str, index: int):
    """The F-curve of ``data_path[index]`` in the data-block's action, or None."""
    fcurves = _fcurves_for(id_data, create=False)
    return None if fcurves is None else fcurves.find(data_path, index=index)


def write_fcurve_keys(id_data, data_path: str, index: int, frames: np.ndarray, values: np.ndarray,
                      group: str = "", interpolation: str = "LINEAR") -> None:
    """Replace the keys of one F-curve inside [frames.min(), frames.max()] with (frames, values).

    ``id_data`` is the data-block that owns the animated property (an object, a shape-key
    block ``mesh.shape_keys``, ...); ``data_path`` is relative to it.

    Keys outside that frame range are kept. Written with ``keyframe_points.add`` +
    ``foreach_set`` (never one keyframe_insert per key). frames, values: (N,).
    """
    frames = np.asarray(frames, dtype=np.float64).ravel()
    values = np.asarray(values, dtype=np.float64).ravel()
    if frames.shape != values.shape or frames.size == 0:
        raise BridgeError("keyframes need as many values as frames, and at least one")
    fcurves = _fcurves_for(id_data, create=True)
    fc = fcurves.find(data_path, index=index)
    if fc is None:
        if hasattr(id_data.animation_data.action, "layers"):
            fc = fcurves.new(data_path, index=index, group_name=group)
        else:
            fc = fcurves.new(data_path, index=index, action_group=group)
    old = np.empty(2 * len(fc.keyframe_points), dtype=np.float64)
    fc.keyframe_points.foreach_get("co", old)
    old = old.reshape(-1, 2)
    keep = old[(old[:, 0] < frames.min() - 1e-6) | (old[:, 0] > frames.max() + 1e-6)]
    co = np.concatenate([keep, np.column_stack([frames, values])])
    co = co[np.argsort(co[:, 0], kind="stable")]
    fc.keyframe_points.clear()
    fc.keyframe_points.add(len(co))
    fc.keyframe_points.foreach_set("co", co.ravel())
    interp = fc.keyframe_points[0].bl_rna.properties["interpolation"].enum_items[interpolation].value
    fc.keyframe_points.foreach_set("interpolation", np.full(len(co), interp, dtype=np.int32))
    fc.update()


def read_fcurve_keys(id_data, data_path: str, index: int) -> np.ndarray:
    """Keys of one F-curve of a data-block as an (N, 2) array of (frame, value); empty if none."""
    fc = find_fcurve(id_data, data_path, index)
    if fc is None:
        return np.zeros((0, 2))
    co = np.empty(2 * len(fc.keyframe_points), dtype=np.float64)
    fc.keyframe_points.foreach_get("co", co)
    return co.reshape(-1, 2)


def write_transform_keyframes(owner, path_prefix: str, rotation_mode: str, frames: np.ndarray,
                              matrices: np.ndarray, id_obj=None, group: str = "") -> list[str]:
    """Key location and rotation (in ``rotation_mode``) from (N, 4, 4) matrices at frames (N,).

    ``owner`` is an object (``path_prefix`` "") or a pose bone (its ``path_from_id()``);
    ``id_obj`` is the object whose action receives the keys (default: owner). Quaternion keys
    are made sign-continuous and Euler keys compatible, so interpolation takes the short way.
    Returns the data paths written.
    """
    frames = np.asarray(frames, dtype=np.float64)
    matrices = np.asarray(matrices, dtype=np.float64)
    id_obj = owner if id_obj is None else id_obj
    loc = matrices[:, :3, 3]
    rots = []
    previous = None
    for m in matrices:
        mat = Matrix(m[:3, :3].tolist())
        if rotation_mode == "QUATERNION":
            rots.append(tuple(mat.to_quaternion()))
        elif rotation_mode == "AXIS_ANGLE":
            axis, angle = mat.to_quaternion().to_axis_angle()
            rots.append((angle, *axis))
        else:
            previous = mat.to_euler(rotation_mode) if previous is None else mat.to_euler(rotation_mode, previous)
            rots.append(tuple(previous))
    rots = np.array(rots)
    if rotation_mode == "QUATERNION":
        for k in range(1, len(rots)):
            if np.dot(rots[k], rots[k - 1]) < 0.0:
                rots[k] = -rots[k]
        rot_path = "rotation_quaternion"
    elif rotation_mode == "AXIS_ANGLE":
        rot_path = "rotation_axis_angle"
    else:
        rot_path = "rotation_euler"
    prefix = f"{path_prefix}." if path_prefix else ""
    for name, values in (("location", loc), (rot_path, rots)):
        for i in range(values.shape[1]):
            write_fcurve_keys(id_obj, f"{prefix}{name}", i, frames, values[:, i], group=group)
    return [f"{prefix}location", f"{prefix}{rot_path}"]


def write_bone_keyframes(obj, pose_bone, frames: np.ndarray, basis: np.ndarray) -> list[str]:
    """Key a bone's location and rotation from matrix_basis per frame: frames (N,), basis (N, 4, 4)."""
    return write_transform_keyframes(pose_bone, pose_bone.path_from_id(), pose_bone.rotation_mode,
                                     frames, basis, id_obj=obj, group=pose_bone.name)


#: the channels of a pose bone the live drive and Bake Joint write
TRANSFORM_CHANNELS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle")


def bone_transform_fcurves(obj, pose_bone) -> list:
    """The F-curves of the object's active action (slot) that key the pose bone's location or
    rotation channels (:data:`TRANSFORM_CHANNELS`)."""
    fcurves = _fcurves_for(obj, create=False)
    if fcurves is None:
        return []
    paths = {pose_bone.path_from_id(c) for c in TRANSFORM_CHANNELS}
    return [fc for fc in fcurves if fc.data_path in paths]


def bone_transform_key_frames(obj, pose_bone) -> np.ndarray:
    """Sorted distinct frames (K,) at which the object's active action keys the pose bone's
    location or rotation; empty when it keys none."""
    frames = [np.empty(0)]
    for fc in bone_transform_fcurves(obj, pose_bone):
        co = np.empty(2 * len(fc.keyframe_points), dtype=np.float64)
        fc.keyframe_points.foreach_get("co", co)
        frames.append(co[0::2])
    return np.unique(np.concatenate(frames))


def keep_action_copy(id_data, suffix: str) -> str:
    """Copy the data-block's active action as ``<name> (<suffix>)`` with a fake user, so it is
    saved with the file though nothing uses it; returns the copy's name."""
    copy = id_data.animation_data.action.copy()
    copy.name = f"{id_data.animation_data.action.name} ({suffix})"
    copy.use_fake_user = True
    return copy.name


def remove_fcurves(id_data, fcurves) -> None:
    """Remove F-curves (from :func:`bone_transform_fcurves`) from the active action (slot)."""
    collection = _fcurves_for(id_data, create=False)
    for fc in list(fcurves):
        collection.remove(fc)


def push_action_to_nla(id_data) -> str | None:
    """Move the data-block's action (if any) onto a new NLA track of its own name, as Blender's
    *Push Down* does, and leave no active action. Returns the track's name, or None when there
    was no action. The action keeps playing from the track under whatever is keyed above it."""
    ad = id_data.animation_data
    if ad is None or ad.action is None:
        return None
    action = ad.action
    slot = getattr(ad, "action_slot", None)
    track = ad.nla_tracks.new()
    track.name = action.name
    strip = track.strips.new(action.name, int(action.frame_range[0]), action)
    if slot is not None and hasattr(strip, "action_slot"):
        strip.action_slot = slot
    ad.action = None
    return track.name


def new_action(id_data, name: str):
    """Give the data-block a new, empty action ``name`` (its previous action must have been
    kept elsewhere first: :func:`push_action_to_nla`); keys written afterwards
    (:func:`write_fcurve_keys`) go into it."""
    ad = id_data.animation_data or id_data.animation_data_create()
    action = bpy.data.actions.new(name)
    ad.action = action
    return action


#: the custom property that marks an action as a bake of the simulation (:mod:`.rig_jobs`):
#: a JSON text ``{"rig": "BONES" or "OBJECTS", "bodies": [names], "before": {data path:
#: [values]}, "frames": [first, last]}``: the baked bones or objects, the values the keyed
#: channels had before the first bake, and the baked frame range
SIMULATION_MARK = "spline_joints_simulation"


def simulation_record(action) -> dict | None:
    """What :data:`SIMULATION_MARK` records on an action, or None for the user's own action."""
    import json

    text = None if action is None else action.get(SIMULATION_MARK)
    return json.loads(text) if isinstance(text, str) else None


def mark_simulation(action, rig: str, bodies, before: dict, frames) -> None:
    """Mark ``action`` as a bake of the simulation (:data:`SIMULATION_MARK`) of the ``bodies``
    (names) of a ``rig`` ("BONES" or "OBJECTS") over ``frames`` (first, last) whose channels
    had the values ``before`` ({data path: [values]}) when they were first baked."""
    import json

    action[SIMULATION_MARK] = json.dumps({"rig": rig, "bodies": list(bodies), "before": before,
                                          "frames": [float(frames[0]), float(frames[-1])]})


def baked_bodies(id_data, frame: float) -> set[str]:
    """The bones or objects whose simulation bake is the data-block's active action and
    covers ``frame`` (empty when there is none)."""
    ad = id_data.animation_data
    record = None if ad is None else simulation_record(ad.action)
    if record is None or not record["frames"][0] <= frame <= record["frames"][1]:
        return set()
    return set(record["bodies"])


def read_channel(id_data, path: str) -> list[float]:
    """The value(s) of an animatable property of a data-block (``pose.bones["a"].location``,
    ``pose.bones["a"]["IK_FK"]``) as a list of floats."""
    value = id_data.path_resolve(path)
    return [float(v) for v in value] if hasattr(value, "__len__") else [float(value)]


def write_channel(id_data, path: str, values) -> None:
    """Set an animatable property of a data-block (see :func:`read_channel`)."""
    if path.endswith('"]'):                                   # a custom property: ...["name"]
        head, _, key = path[:-2].rpartition('["')
        owner = id_data.path_resolve(head) if head else id_data
        owner[key] = values[0] if isinstance(owner[key], float) else type(owner[key])(values[0])
        return
    head, _, attr = path.rpartition(".")
    owner = id_data.path_resolve(head) if head else id_data
    setattr(owner, attr, values if len(values) > 1 else values[0])


def simulation_actions(id_data) -> list:
    """The simulation bakes (:data:`SIMULATION_MARK`) on a data-block: its active action and
    the actions of its NLA strips."""
    ad = id_data.animation_data
    if ad is None:
        return []
    actions = [ad.action] + [s.action for t in ad.nla_tracks for s in t.strips]
    return list({a.name: a for a in actions if simulation_record(a) is not None}.values())


def remove_simulation(id_data) -> dict:
    """Take the simulation bake off a data-block: its marked active action and the NLA tracks
    that play only marked actions are removed (the actions too when nothing else uses them),
    and the baked channels get back the values they had before the first bake. The user's own
    actions and tracks stay. Returns those values ({data path: [values]})."""
    ad = id_data.animation_data
    before = {}
    if ad is None:
        return before
    baked = simulation_actions(id_data)
    for action in baked:
        before.update(simulation_record(action)["before"])
    if simulation_record(ad.action) is not None:
        ad.action = None
    for track in list(ad.nla_tracks):
        if len(track.strips) and all(simulation_record(s.action) is not None for s in track.strips):
            ad.nla_tracks.remove(track)
    for action in baked:
        if action.users == 0:
            bpy.data.actions.remove(action)
    for path, values in before.items():
        try:
            write_channel(id_data, path, values)
        except (ValueError, KeyError, AttributeError):   # a bone or property gone since
            pass
    return before


class simulations_off:
    """Context manager: the data-blocks' simulation bakes are not evaluated inside (their
    active marked action and marked NLA tracks off, the baked channels at their values from
    before the first bake), so the scene shows the user's own animation; everything is put
    back on exit, also after an error."""

    def __init__(self, ids):
        self.ids = [i for i in ids if i.animation_data is not None]
        self.saved = []

    def __enter__(self):
        for id_data in self.ids:
            ad = id_data.animation_data
            action, slot = ad.action, getattr(ad, "action_slot", None)
            record = simulation_record(action)
            tracks = [t for t in ad.nla_tracks if not t.mute and len(t.strips) and
                      all(simulation_record(s.action) is not None for s in t.strips)]
            values = {}
            records = [simulation_record(s.action) for t in tracks for s in t.strips]
            for r in [record] * (record is not None) + records:
                for path, v in r["before"].items():
                    try:
                        values[path] = read_channel(id_data, path)
                        write_channel(id_data, path, v)
                    except (ValueError, KeyError, AttributeError):
                        pass
            self.saved.append((id_data, action if record is not None else None, slot, tracks,
                               values))
            if record is not None:
                ad.action = None
            for t in tracks:
                t.mute = True
        return self

    def __exit__(self, *exc):
        for id_data, action, slot, tracks, values in reversed(self.saved):
            ad = id_data.animation_data
            if action is not None:
                ad.action = action
                if slot is not None and hasattr(ad, "action_slot"):
                    ad.action_slot = slot
            for t in tracks:
                t.mute = False
            for path, v in values.items():
                write_channel(id_data, path, v)
        return False


# --------------------------------------------------------------------------------------------
# Armatures built from a model (OpenSim import) and posed from numbers
# --------------------------------------------------------------------------------------------

def write_armature(name: str, bones, parents, rests: np.ndarray, lengths: np.ndarray, collection,
                   view_layer) -> bpy.types.Object:
    """A new armature object ``name`` (linked to ``collection``) with one bone per name in
    ``bones``: rest frame ``rests[i]`` (4, 4) in armature space (head at its origin, the bone
    along its Y axis, roll from its X axis), length ``lengths[i]`` (m), parent bone
    ``bones[parents[i]]`` (-1: none). Bones are not connected and keep Blender's default
    inheritance (rotation, full scale, local location), so :func:`write_pose_bases` poses them
    exactly. Builds the bones in Edit Mode (the object becomes the view layer's active object)
    and returns in Object Mode. BridgeError when a name does not fit a bone name."""
    for bone in bones:
        if len(bone.encode("utf-8")) > 63:
            raise BridgeError(f"body name '{bone}' is longer than Blender's 63-byte bone names; "
                              "shorten it in the model file")
    if bpy.context.object is not None and bpy.context.object.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    collection.objects.link(obj)
    view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        edit = []
        for bone, parent, rest, length in zip(bones, parents, rests, lengths):
            eb = data.edit_bones.new(bone)
            eb.head, eb.tail, eb.roll = (0.0, 0.0, 0.0), (0.0, float(length), 0.0), 0.0
            eb.matrix = array_to_matrix(rest)
            eb.use_connect = False
            if parent >= 0:
                eb.parent = edit[parent]
            edit.append(eb)
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
    return obj


def read_bone_rests(armature_obj, names) -> np.ndarray:
    """Rest frames (n, 4, 4) in armature space of the named bones (``Bone.matrix_local``),
    made rigid (:func:`rigid`). BridgeError names a missing bone."""
    bones = armature_obj.data.bones
    missing = [n for n in names if n not in bones]
    if missing:
        raise BridgeError(f"armature '{armature_obj.name}' has no bones {missing[:5]}; import the "
                          "model again")
    return rigid(np.stack([matrix_to_array(bones[n].matrix_local) for n in names])) if len(names) \
        else np.zeros((0, 4, 4))


def read_pose_bases(armature_obj, names) -> np.ndarray:
    """``matrix_basis`` (n, 4, 4) of the named pose bones."""
    bones = armature_obj.pose.bones
    return np.stack([matrix_to_array(bones[n].matrix_basis) for n in names]) if len(names) \
        else np.zeros((0, 4, 4))


def write_pose_bases(armature_obj, names, bases: np.ndarray) -> None:
    """Set ``matrix_basis`` of the named pose bones from bases (n, 4, 4)."""
    bones = armature_obj.pose.bones
    for n, basis in zip(names, bases):
        bones[n].matrix_basis = array_to_matrix(basis)


def new_object(name: str, data, collection) -> bpy.types.Object:
    """A new object ``name`` (Blender adds a suffix when the name is taken) showing ``data``
    (a mesh, or None for an empty), linked to ``collection``."""
    obj = bpy.data.objects.new(name, data)
    collection.objects.link(obj)
    return obj


def parent_to_object(obj, parent, T_parent_obj: np.ndarray) -> None:
    """Parent ``obj`` to the object ``parent`` so that it sits at ``T_parent_obj`` (4, 4; may
    carry a scale) in the parent's frame."""
    obj.parent = parent
    obj.parent_type = "OBJECT"
    obj.matrix_parent_inverse = Matrix.Identity(4)
    obj.matrix_basis = array_to_matrix(T_parent_obj)


# --------------------------------------------------------------------------------------------
# Meshes and curves
# --------------------------------------------------------------------------------------------

def _ensure_object(name: str, data, collection) -> bpy.types.Object:
    obj = bpy.data.objects.get(name)
    if obj is not None and obj.type != ("MESH" if isinstance(data, bpy.types.Mesh) else "CURVE"):
        raise BridgeError(f"an object named '{name}' exists and is not a {type(data).__name__}; rename it")
    if obj is None:
        obj = bpy.data.objects.new(name, data)
        collection.objects.link(obj)
    else:
        old = obj.data
        obj.data = data
        if old is not None and old.users == 0:
            (bpy.data.meshes if isinstance(old, bpy.types.Mesh) else bpy.data.curves).remove(old)
    return obj


def parent_to_bone(obj, armature_obj, bone_name: str, T_bone_obj: np.ndarray) -> None:
    """Parent ``obj`` to a bone so that it sits at ``T_bone_obj`` (4, 4) in the bone's frame.

    Blender puts a bone-parented child at the bone's *tail*; matrix_parent_inverse is set to a
    translation back to the head so the given pose is relative to the bone's head frame.
    """
    bone = armature_obj.data.bones[bone_name]
    obj.parent = armature_obj
    obj.parent_type = "BONE"
    obj.parent_bone = bone_name
    back = np.eye(4)
    back[1, 3] = -bone.length
    obj.matrix_parent_inverse = array_to_matrix(back)
    obj.matrix_basis = array_to_matrix(T_bone_obj)


def read_parent_placement(obj) -> np.ndarray:
    """The pose (4, 4) of ``obj`` in the frame it hangs from: its parent bone's head frame
    (rest, the bone's ``matrix_local``; :func:`parent_to_bone` undone, whatever parent inverse
    a re-parenting left) or its parent object's frame."""
    T = matrix_to_array(obj.matrix_parent_inverse) @ matrix_to_array(obj.matrix_basis)
    if obj.parent_type == "BONE" and obj.parent_bone:
        tail = np.eye(4)
        tail[1, 3] = obj.parent.data.bones[obj.parent_bone].length
        T = tail @ T
    return T


def write_mesh_data(name: str, vertices: np.ndarray, faces, smooth: bool = False) -> bpy.types.Mesh:
    """A new mesh data-block from vertices (V, 3) and faces: an (F, k) integer array or lists
    of vertex indices of any lengths (written with ``foreach_set``). smooth: smooth shading."""
    vertices = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    if isinstance(faces, np.ndarray) and faces.ndim == 2:
        sizes = np.full(len(faces), faces.shape[1], dtype=np.int64)
        loops = faces.ravel()
    else:
        sizes = np.array([len(f) for f in faces], dtype=np.int64)
        loops = np.concatenate([np.asarray(f, dtype=np.int64) for f in faces]) if len(faces) \
            else np.zeros(0, np.int64)
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(vertices))
    mesh.vertices.foreach_set("co", vertices.astype(np.float32).ravel())
    mesh.loops.add(len(loops))
    mesh.loops.foreach_set("vertex_index", loops.astype(np.int32))
    mesh.polygons.add(len(sizes))
    mesh.polygons.foreach_set("loop_start", (np.cumsum(sizes) - sizes).astype(np.int32))
    mesh.update(calc_edges=True)
    mesh.validate()
    if smooth:
        mesh.shade_smooth()
    return mesh


def write_mesh_object(name: str, vertices: np.ndarray, faces: np.ndarray, collection) -> bpy.types.Object:
    """Create or update a mesh object from vertices (V, 3) and faces (lists of vertex indices).

    The old mesh data-block is replaced (and freed when unused) so the update is one undo step.
    """
    return _ensure_object(name, write_mesh_data(name, vertices, faces), collection)


def write_poly_curve_object(name: str, polylines, collection, bevel: float = 0.0,
                            radii=None) -> bpy.types.Object:
    """Create or update a curve object with one POLY spline per polyline (each (N, 3)).

    bevel: tube radius (so the curve shows in renders; 0 draws a wire in the viewport only);
    radii: None, or one factor of the tube radius per polyline (thinner lines in one object).
    """
    curve = bpy.data.curves.new(name, type="CURVE")
    curve.dimensions = "3D"
    curve.bevel_depth = bevel
    radii = np.ones(len(polylines)) if radii is None else np.asarray(radii, dtype=np.float64)
    for points, radius in zip(polylines, radii):
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        spline = curve.splines.new("POLY")
        spline.points.add(len(points) - 1)
        co = np.column_stack([points, np.ones(len(points))])
        spline.points.foreach_set("co", co.ravel())
        spline.points.foreach_set("radius", np.full(len(points), radius, dtype=np.float32))
    return _ensure_object(name, curve, collection)


def rig_collection(scene, armature) -> bpy.types.Collection:
    """The collection ``Spline Joints <armature name>`` that holds what the add-on draws for
    one rig (joint paths, reach cones), a child of the scene's collection, created when
    missing."""
    name = f"Spline Joints {armature.name}"
    collection = bpy.data.collections.get(name)
    if collection is None:
        collection = bpy.data.collections.new(name)
    if collection.name not in scene.collection.children:
        scene.collection.children.link(collection)
    return collection


def move_to_collection(obj, collection) -> None:
    """Link ``obj`` to ``collection`` only (drawn before rig collections existed, it sat in
    the scene's top level)."""
    if obj.name not in collection.objects:
        collection.objects.link(obj)
    for other in list(obj.users_collection):
        if other != collection:
            other.objects.unlink(obj)


#: the data-block kinds an import creates, removed in this order if writing fails half-way
CREATED_KINDS = ("objects", "meshes", "armatures", "curves", "materials", "actions", "images",
                 "collections")


class new_data_blocks_removed_on_error:
    """Context manager: when its body raises, every data-block of the :data:`CREATED_KINDS`
    made inside is removed (then the exception goes on), so a failed import leaves nothing."""

    def __enter__(self):
        self.before = {kind: set(getattr(bpy.data, kind)) for kind in CREATED_KINDS}
        return self

    def __exit__(self, kind, exc, tb):
        if exc is not None:
            for name in CREATED_KINDS:
                blocks = getattr(bpy.data, name)
                for block in [b for b in blocks if b not in self.before[name]]:
                    blocks.remove(block)
        return False


def remove_objects(prefix: str) -> int:
    """Delete the objects whose names start with ``prefix``; returns how many."""
    doomed = [obj for obj in bpy.data.objects if obj.name.startswith(prefix)]
    for obj in doomed:
        bpy.data.objects.remove(obj)
    return len(doomed)


def write_display_object(name: str, mesh, material: str, colour, collection, visible: bool = True,
                         polylines=()) -> bpy.types.Object:
    """The object that shows one mechanism body or scenery item.

    mesh: ``(vertices (V, 3), faces)`` or None (an empty); material: name of the material
    (:func:`ensure_material` with colour RGBA (4,)) of the mesh and its polylines; invisible
    displays are drawn as wire and hidden in renders. polylines: (K, 3) arrays drawn as a child
    curve ``<name>.lines``.
    """
    if mesh is None:
        obj = bpy.data.objects.new(name, None)
        collection.objects.link(obj)
    else:
        obj = write_mesh_object(name, mesh[0], mesh[1], collection)
        obj.data.materials.append(ensure_material(material, colour))
        obj.hide_render = not visible
        obj.display_type = "TEXTURED" if visible else "WIRE"
    if len(polylines):
        lines = write_poly_curve_object(f"{name}.lines", polylines, collection, bevel=0.003)
        lines.parent = obj
        lines.data.materials.append(ensure_material(material, colour))
    return obj


def write_shape_key_animation(obj, basis: np.ndarray, targets: np.ndarray, frames: np.ndarray,
                              values: np.ndarray) -> list[str]:
    """Replace a mesh object's shape keys by a deformation keyed per frame.

    basis: (V, 3) reference shape (also written to the mesh vertices); targets: (K, V, 3) one
    relative key ``mode k`` each; values: (F, K) key values at frames (F,), written through
    :func:`write_fcurve_keys` on the shape-key block. Earlier shape keys and their action are
    removed first. Returns the data paths keyed (relative to ``obj.data.shape_keys``).
    """
    basis = np.asarray(basis, dtype=np.float64).reshape(-1, 3)
    targets = np.asarray(targets, dtype=np.float64).reshape(-1, len(basis), 3)
    values = np.asarray(values, dtype=np.float64).reshape(len(frames), len(targets))
    mesh = obj.data
    if len(mesh.vertices) != len(basis):
        raise BridgeError(f"'{obj.name}' has {len(mesh.vertices)} vertices, the deformation "
                          f"{len(basis)}; add the mechanism again")
    old = mesh.shape_keys
    if old is not None:
        action = old.animation_data.action if old.animation_data is not None else None
        obj.shape_key_clear()
        if action is not None and action.users == 0:
            bpy.data.actions.remove(action)
    mesh.vertices.foreach_set("co", basis.astype(np.float32).ravel())
    mesh.update()
    if not len(targets):
        return []
    obj.shape_key_add(name="Basis", from_mix=False)
    paths = []
    for k, target in enumerate(targets):
        key = obj.shape_key_add(name=f"mode {k}", from_mix=False)
        key.slider_min = min(-1.0, float(values[:, k].min()))
        key.slider_max = max(1.0, float(values[:, k].max()))
        key.data.foreach_set("co", target.astype(np.float32).ravel())
        path = key.path_from_id("value")
        write_fcurve_keys(mesh.shape_keys, path, 0, frames, values[:, k])
        paths.append(path)
    return paths


def ensure_material(name: str, rgba) -> bpy.types.Material:
    """A material with this viewport colour (Workbench 'Material' colour); alpha < 1 blends."""
    mat = bpy.data.materials.get(name) or bpy.data.materials.new(name)
    mat.diffuse_color = tuple(float(c) for c in rgba)
    if rgba[3] < 1.0:
        if hasattr(mat, "surface_render_method"):  # Blender >= 4.2 (EEVEE Next)
            mat.surface_render_method = "BLENDED"
        if hasattr(mat, "blend_method"):
            mat.blend_method = "BLEND"
    return mat


def set_material_colour(material, rgba) -> bool:
    """Set a material's viewport colour RGBA (4,) unless it already has it (a write would
    start another depsgraph update); True when it changed."""
    if np.array_equal(np.array(material.diffuse_color, dtype=np.float32),
                      np.array(rgba, dtype=np.float32)):
        return False
    material.diffuse_color = tuple(float(c) for c in rgba)
    return True


def target_bone(context):
    """(armature object, pose bone) for the active pose bone; ValueError when there is none."""
    pose_bone = getattr(context, "active_pose_bone", None)
    obj = context.object
    if pose_bone is None and obj is not None and obj.type == "ARMATURE" and obj.data.bones.active:
        pose_bone = obj.pose.bones.get(obj.data.bones.active.name)
    if pose_bone is None:
        raise ValueError("no active pose bone: select an armature and make the joint's child bone active")
    return pose_bone.id_data, pose_bone


# --------------------------------------------------------------------------------------------
# Scene frames and collection items
# --------------------------------------------------------------------------------------------

def pick_index(collection, active: int, index: int, what: str) -> int:
    """``index``, or ``active`` when index < 0, checked against the collection's length."""
    i = active if index < 0 else index
    if not 0 <= i < len(collection):
        raise ValueError(f"{what} {i} does not exist: there are {len(collection)}")
    return i


def frame_range(scene, start: int, end: int, step: int) -> np.ndarray:
    """Frames start..end (inclusive) by step; -1 for start or end means the scene's own."""
    start = scene.frame_start if start < 0 else start
    end = scene.frame_end if end < 0 else end
    if end < start:
        raise ValueError(f"frame range {start}..{end} is empty: the end must not be before the start")
    return np.arange(start, end + 1, step)


def read_frames(scene, frames, read) -> list:
    """``read(frame)`` after ``scene.frame_set(frame)`` for each frame (a whole number, or a
    fractional frame set as its frame and subframe); the current frame (and subframe) is
    restored afterwards, also when ``read`` raises."""
    current = scene.frame_current, scene.frame_subframe
    try:
        out = []
        for f in frames:
            whole = int(np.floor(f))
            scene.frame_set(whole, subframe=float(f) - whole)
            out.append(read(whole if float(f) == whole else float(f)))
        return out
    finally:
        scene.frame_set(current[0], subframe=current[1])
