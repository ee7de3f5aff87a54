"""Muscles of an imported OpenSim armature in the scene: one curve object per muscle through
its path, one mesh object per wrap surface, the muscle list, and the live update.

Each muscle is a curve object (one poly spline with a round bevel) parented to the armature
object with an identity parent inverse, so its points are written in armature space, which
is OpenSim's ground. Its custom property :data:`MUSCLE_KEY` names the muscle; its material
(one per muscle, linked to the object) carries the colour. :func:`follow_pose` (called by the
live drive, :mod:`.handlers`, after the bones) evaluates every muscle at the armature's
coordinates with one shared path kinematics (:class:`core.muscles.display.MuscleDisplay`)
and writes the points and colours that changed. The colour shows the length change from the
rest length, or the rigid-tendon tension at the activations of the armature's custom
properties :func:`activation_property` (0..1, missing ones 0; made at import, keyed to drive a
muscle simulation), as the OpenSim panel's Colour setting says.

Each wrap object is a mesh (its cylinder, sphere or ellipsoid) parented to its body's bone
(to the armature object for ground), with custom property :data:`WRAP_KEY` naming it.

The armature data's ``spline_joints_osim.muscles`` lists the muscles with the coordinates
and joints each spans (the OpenSim panel's list filters on them).
"""

from __future__ import annotations

import bpy
import numpy as np

from . import bridge

#: object custom property naming the muscle a curve object draws
MUSCLE_KEY = "spline_joints_muscle"
#: object custom property naming the wrap object a mesh object shows
WRAP_KEY = "spline_joints_wrap"
#: bevel radius (m) of a muscle's curve
MUSCLE_RADIUS = 0.004
#: colour of the wrap surfaces (see-through)
WRAP_RGBA = (0.35, 0.55, 0.85, 0.35)
#: how far (m) a drawn point must move to be written again (float32 round-off ~1e-7 m)
POINT_TOL = 1e-6

#: id(model) -> (model, MuscleDisplay): one display per parsed model
_DISPLAYS: dict = {}


def activation_property(muscle: str) -> str:
    """The armature object's custom property holding a muscle's activation (0..1)."""
    return f"{muscle} activation"


def muscle_display(model):
    """The :class:`core.muscles.display.MuscleDisplay` of a model (made once per model)."""
    from ..core.muscles.display import MuscleDisplay

    entry = _DISPLAYS.get(id(model))
    if entry is None or entry[0] is not model:
        if len(_DISPLAYS) > 16:
            _DISPLAYS.clear()
        entry = _DISPLAYS[id(model)] = (model, MuscleDisplay(model))
    return entry[1]


def muscle_objects(arm) -> dict:
    """``{muscle name: curve object}`` of an armature's drawn muscles."""
    return {o[MUSCLE_KEY]: o for o in arm.children if MUSCLE_KEY in o.keys()}


def wrap_objects(arm) -> dict:
    """``{wrap object name: mesh object}`` of an armature's drawn wrap surfaces."""
    out = {}
    for o in arm.children_recursive:
        if WRAP_KEY in o.keys():
            out[o[WRAP_KEY]] = o
    return out


def _collection(arm):
    return arm.users_collection[0]


def write_muscle_list(arm, model) -> None:
    """Fill the armature data's muscle list from the model (coordinates and joints spanned)."""
    from ..core.muscles.display import muscle_spans

    items = arm.data.spline_joints_osim.muscles
    items.clear()
    for name, (coordinates, joints) in muscle_spans(model).items():
        item = items.add()
        item.name, item.coordinates, item.joints = name, " ".join(coordinates), " ".join(joints)


def write_muscle_object(arm, name):
    """A curve object for muscle ``name`` of the armature (its points written by
    :func:`follow_pose`)."""
    curve = bpy.data.curves.new(name, "CURVE")
    curve.dimensions = "3D"
    curve.bevel_depth = MUSCLE_RADIUS
    curve.bevel_resolution = 2
    curve.use_fill_caps = True
    curve.splines.new("POLY")
    obj = bridge.new_object(name, curve, _collection(arm))
    obj[MUSCLE_KEY] = name
    bridge.parent_to_object(obj, arm, np.eye(4))
    material = bpy.data.materials.new(f"{name} muscle")
    obj.data.materials.append(material)
    return obj


def write_wrap_object(arm, rig, wrap_object, rest=None):
    """A mesh object showing ``wrap_object`` (core.muscles.wrap.WrapObject) on its bone;
    ``rest``: the bone's rest frame (4, 4) in armature space (read when None)."""
    from ..core import display

    w = wrap_object
    if w.kind == "WrapCylinder":
        v, f = display.cylinder(w.radius, w.length, axis=2, n=24)
    elif w.kind == "WrapSphere":
        v, f = display.uv_sphere(np.full(3, w.radius))
    else:
        v, f = display.uv_sphere(np.asarray(w.radii, dtype=float))
    obj = bridge.new_object(f"{w.name} (wrap)", bridge.write_mesh_data(w.name, v, f, smooth=True),
                            _collection(arm))
    obj[WRAP_KEY] = w.name
    obj.data.materials.append(bridge.ensure_material("OpenSim wrap surface", WRAP_RGBA))
    obj.show_wire = True
    if w.body in rig.bodies:
        if rest is None:
            rest = bridge.read_bone_rests(arm, [w.body])[0]
        B0 = rig.default_poses[rig.bodies.index(w.body)]
        bridge.parent_to_bone(obj, arm, w.body, bridge.rigid(np.linalg.inv(rest) @ B0) @ w.pose)
    else:
        bridge.parent_to_object(obj, arm, w.pose)
    return obj


def write_muscles(arm, rig) -> None:
    """Draw every muscle and wrap object of the armature's model, fill its muscle list and
    put the muscles at the armature's pose."""
    model = rig.model
    rests = dict(zip(rig.bodies, bridge.read_bone_rests(arm, rig.bodies)))
    for w in model.wrap_objects.values():
        write_wrap_object(arm, rig, w, rests.get(w.body))
    for name in model.muscles:
        write_muscle_object(arm, name)
        write_activation_property(arm, name)
    write_muscle_list(arm, model)
    follow_pose(arm, rig)


def write_activation_property(arm, name) -> None:
    """The armature's activation property of muscle ``name`` (0, range 0..1), keyed to drive
    a muscle simulation and shown by the force colours."""
    bridge.write_float_property(arm, activation_property(name), 0.0, min=0.0, max=1.0,
                                soft_min=0.0, soft_max=1.0,
                                description=f"{name}: activation, 0 relaxed to 1 fully active")


def write_curve_points(curve, points) -> bool:
    """Put the curve's one spline through ``points`` (K, 3); False when it already is."""
    points = np.asarray(points, dtype=np.float64)
    splines = curve.splines
    spline = splines[0] if len(splines) == 1 else None
    if spline is not None and len(spline.points) == len(points):
        current = np.empty(4 * len(points), dtype=np.float32)
        spline.points.foreach_get("co", current)
        if np.all(np.abs(current.reshape(-1, 4)[:, :3] - points) <= POINT_TOL):
            return False
    else:
        splines.clear()
        spline = splines.new("POLY")
        spline.points.add(len(points) - 1)
    co = np.ones((len(points), 4))
    co[:, :3] = points
    spline.points.foreach_set("co", co.astype(np.float32).ravel())
    curve.update_tag()
    return True


def follow_pose(arm, rig, q=None) -> int:
    """Write the drawn muscles of ``arm`` at coordinates ``q`` (default: the armature's
    coordinate properties): their points and colours; returns how many muscles changed."""
    objects = muscle_objects(arm)
    if not objects:
        return 0
    model = rig.model
    shown = model.muscles.keys() & objects.keys()
    if not shown:
        return 0
    if q is None:
        q = rig.q(bridge.read_named_values(arm, rig.coordinate_names, model.default_q()))
    d = muscle_display(model)
    points, lengths = d.evaluate(q)
    settings = arm.data.spline_joints_osim
    activations = None
    if settings.muscle_color == "FORCE":
        activations = bridge.read_named_values(arm, [activation_property(n) for n in d.names],
                                               np.zeros(len(d.names)))
    colors = d.colors(lengths, settings.muscle_color, activations)
    changed = 0
    for name, p, rgba in zip(d.names, points, colors):
        obj = objects.get(name)
        if obj is not None:
            changed += write_drawn_muscle(obj, p, rgba)
    return changed


def write_drawn_muscle(obj, points, rgba) -> bool:
    """Put a muscle's curve object through ``points`` (K, 3) (armature space) in colour
    ``rgba``; False when it already is."""
    moved = write_curve_points(obj.data, points)
    if obj.data.materials and obj.data.materials[0] is not None:
        moved |= bridge.set_material_colour(obj.data.materials[0], rgba)
    return bool(moved)


def body_pose(arm, rig, body) -> np.ndarray:
    """Pose (4, 4) in armature space (OpenSim's ground) of ``body`` at the armature's
    coordinates (identity for ground); ValueError naming a body the model does not have."""
    if body == "ground":
        return np.eye(4)
    model = rig.model
    if body not in model.bodies:
        raise ValueError(f"the model has no body '{body}'; its bodies are "
                         f"{', '.join(b for b in model.bodies if b != 'ground')}")
    q = rig.q(bridge.read_named_values(arm, rig.coordinate_names, model.default_q()))
    return model.body_poses(q)[body]


def store_edited_model(arm, model) -> None:
    """Store ``model`` (the armature's exact model with muscles or wrap objects added) on the
    armature: its .osim text (written and read back before anything is stored), a curve for
    each muscle and a mesh for each wrap object not drawn yet, the muscle list, the pose."""
    from ..core.io.osim import parse_osim
    from ..core.io.osim_export import osim_document
    from .documents import OSIM_PATH_KEY, osim_rig, store_osim_model

    text = osim_document(model)
    source = arm.data.get(OSIM_PATH_KEY) or arm.data.name
    back = parse_osim(text, source=source)
    lost = (model.muscles.keys() - back.muscles.keys()) | \
        (model.wrap_objects.keys() - back.wrap_objects.keys())
    if lost:
        raise ValueError(f"the model written for {sorted(lost)} does not read back; nothing "
                         "was changed")
    store_osim_model(arm.data, text, source)
    rig = osim_rig(arm.data)
    drawn, shown = muscle_objects(arm), wrap_objects(arm)
    for w in back.wrap_objects.values():
        if w.name not in shown:
            write_wrap_object(arm, rig, w)
    for name in back.muscles:
        if name not in drawn:
            write_muscle_object(arm, name)
            write_activation_property(arm, name)
    write_muscle_list(arm, back)
    arm.data.update_tag()
    follow_pose(arm, rig)
