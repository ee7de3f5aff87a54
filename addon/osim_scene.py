"""An imported OpenSim model in the scene: what the OpenSim import writes, its markers as
spheres on its bones, and coordinates keyed from a motion.

The model's armature, meshes and coordinate properties are laid out by
:func:`core.osim_rig.read_osim_import` (every file read before anything is created) and
written into one new collection named after the model: an armature object turned +90 deg about
X (OpenSim's Y up becomes Blender's Z up; armature space is OpenSim's ground), one bone per body
(ground is the armature object), one mesh object per geometry parented to its bone (mesh
data-blocks shared per file; geometry OpenSim hides is hidden), a placeholder empty for each
mesh file not found (and each shape not drawn), one small sphere per marker of the model's
MarkerSet on its bone, one float custom property per coordinate on the armature object, and
each muscle as a curve and each wrap surface as a mesh (:mod:`addon.muscles`). The model's
text is stored on the armature data (:func:`documents.store_osim_model`);
:mod:`addon.handlers` poses the bones from the coordinate properties, and a motion is keyed on
them (:func:`key_coordinates`).

Model markers (:func:`write_model_markers`): one small sphere per marker, parented to its
body's bone (to the armature object for a marker on ground), so posing the model carries it.
Moving a sphere (or parenting it to another
bone) moves the marker: :func:`read_model_markers` reads the spheres back as markers and
:func:`scene_model` is the stored model with them, which the OpenSim export writes and the
motion-capture tools use. A sphere that was not moved gives back the model's marker exactly.
"""

from __future__ import annotations

import math
import os

import bpy
import numpy as np

from . import bridge, muscles
from .documents import osim_rig, store_osim_model

#: the group the coordinate keys of an imported motion are filed under
KEY_GROUP = "OpenSim coordinates"
#: display size (m) of the empty standing in for a mesh file that was not found
PLACEHOLDER_SIZE = 0.02


def _material(geometry):
    """The shared material of a geometry's colour and opacity."""
    rgba = (*[float(c) for c in geometry.color], float(geometry.opacity))
    name = "OpenSim " + " ".join(f"{c:.3g}" for c in rgba)
    return bridge.ensure_material(name, rgba)


def write_osim_import(scene, view_layer, plan):
    """Create the collection, armature, coordinate properties, meshes and placeholders of a
    :class:`core.osim_rig.OsimImport`; returns the armature object."""
    from ..core.osim_rig import coordinate_property

    model = plan.rig.model
    collection = bpy.data.collections.new(model.name)
    scene.collection.children.link(collection)
    arm = bridge.write_armature(model.name, plan.rig.bodies, plan.rig.parents, plan.rests,
                                plan.lengths, collection, view_layer)
    arm.rotation_mode = "XYZ"
    arm.rotation_euler = (0.5 * math.pi, 0.0, 0.0)
    arm.show_in_front = True
    arm.data.display_type = "STICK"
    store_osim_model(arm.data, plan.text, plan.path)
    for name, c in model.coordinates.items():
        bridge.write_float_property(arm, name, c.default, **coordinate_property(c))
    data = {key: bridge.write_mesh_data(os.path.splitext(os.path.basename(key))[0], v, f, smooth=True)
            for key, (v, f) in plan.meshes.items()}
    for item in plan.items:
        obj = bridge.new_object(item.label, data.get(item.mesh_key), collection)
        if obj.type == "EMPTY":
            obj.empty_display_type = "SPHERE"
            obj.empty_display_size = PLACEHOLDER_SIZE
        else:  # the mesh data is shared per file, the colour is the geometry's: an object slot
            if not obj.data.materials:
                obj.data.materials.append(None)
            obj.material_slots[0].link = "OBJECT"
            obj.material_slots[0].material = _material(item.geometry)
        if item.body in plan.rig.bodies:
            bridge.parent_to_bone(obj, arm, item.body, item.placement)
        else:
            bridge.parent_to_object(obj, arm, item.placement)
        if not item.geometry.visible:
            obj.hide_render = True
            obj.hide_set(True)
    write_model_markers(arm, collection, plan)
    muscles.write_muscles(arm, plan.rig)
    for obj in view_layer.objects:
        obj.select_set(obj == arm)
    view_layer.objects.active = arm
    return arm



def key_coordinates(arm, names, action_name: str, frames, q):
    """Key the coordinate properties ``names`` of the OpenSim armature ``arm`` with
    ``q (F, len(names))`` at ``frames (F,)`` in a new action ``action_name`` (its previous
    action kept on an NLA track); returns (the action, the NLA track's name or None)."""
    kept = bridge.push_action_to_nla(arm)
    action = bridge.new_action(arm, action_name)
    for i, coordinate in enumerate(names):
        bridge.write_fcurve_keys(arm, bridge.coordinate_path(coordinate), 0, frames, q[:, i],
                                 group=KEY_GROUP)
    return action, kept


#: custom property of a model marker's sphere: the marker's name
MODEL_MARKER_KEY = "spline_joints_model_marker"
#: custom property beside it: where the import put the sphere (3 doubles, in its bone's rest
#: frame), so that an unmoved sphere gives back the model's exact location
PLACED_KEY = "spline_joints_marker_placed"
#: radius (m) and colour of a model marker's sphere
MODEL_MARKER_RADIUS = 0.01
MODEL_MARKER_RGBA = (1.0, 0.25, 0.7, 1.0)

def write_model_markers(arm, collection, plan) -> list:
    """One sphere per :class:`core.osim_rig.MarkerItem` of an :class:`core.osim_rig.OsimImport`
    (one shared mesh), parented to the marker's bone at its placement (to ``arm`` for a marker
    on ground), in ``collection``; returns the spheres."""
    from ..core.display import uv_sphere

    if not plan.markers:
        return []
    vertices, faces = uv_sphere(np.full(3, MODEL_MARKER_RADIUS), 12, 6)
    mesh = bridge.write_mesh_data("OpenSim marker", vertices, faces, smooth=True)
    mesh.materials.append(bridge.ensure_material("OpenSim marker", MODEL_MARKER_RGBA))
    spheres = []
    for item in plan.markers:
        obj = bridge.new_object(item.marker.name, mesh, collection)
        obj[MODEL_MARKER_KEY] = item.marker.name
        obj[PLACED_KEY] = [float(v) for v in item.placement]
        T = np.eye(4)
        T[:3, 3] = item.placement
        if item.marker.body in plan.rig.bodies:
            bridge.parent_to_bone(obj, arm, item.marker.body, T)
        else:
            bridge.parent_to_object(obj, arm, T)
        spheres.append(obj)
    return spheres


def read_model_markers(arm, rig) -> dict:
    """The markers the spheres of the OpenSim armature ``arm`` place (``{name: Marker}``):
    each on the body of the bone it hangs from (ground when it hangs from the armature object),
    at its location there; the model's own marker, exactly, for a sphere that was not moved.
    ``rig``: the armature's :func:`documents.osim_rig`."""
    import dataclasses

    from ..core.io.markers import Marker

    rests = dict(zip(rig.bodies, bridge.read_bone_rests(arm, rig.bodies)))
    out = {}
    for obj in arm.children:
        name = obj.get(MODEL_MARKER_KEY)
        if not isinstance(name, str):
            continue
        body = obj.parent_bone if obj.parent_type == "BONE" and obj.parent_bone in rests \
            else "ground"
        point = bridge.read_parent_placement(obj)[:3, 3]
        original = rig.model.markers.get(name)
        placed = np.array(obj.get(PLACED_KEY, [np.nan] * 3), dtype=float)
        # float32 object channels hold the placement to ~1e-7 m: closer is "not moved"
        if original is not None and original.body == body and \
                np.all(np.abs(point - placed) <= 1e-6):
            out[name] = original
            continue
        location = rig.point_in_body(body, rests.get(body, np.eye(4)), point)
        out[name] = (dataclasses.replace(original, body=body, location=location)
                     if original is not None else Marker(name, body, location))
    return out


def scene_model(arm):
    """The OpenSim model of the armature ``arm`` as the scene has it: the stored model (with
    its switched-on fitted joints) whose markers are where the spheres put them."""
    rig = osim_rig(arm.data)
    markers = read_model_markers(arm, rig)
    return rig.model.with_markers(markers) if markers else rig.model
