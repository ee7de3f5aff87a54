"""Mass properties of bones and mesh objects from the scene's meshes (reads Blender data into
numpy arrays and calls :mod:`core.massprops`; writes nothing).

Meshes are read as their un-deformed data (``obj.data``: no modifiers, shape-key basis), as
triangles (``mesh.loop_triangles``), so polygons of any size are accepted. Lengths are metres
(a scene unit scale of 1), density kg/m^3.

A bone's mass comes from
* mesh objects parented to the bone (``parent_type`` 'BONE'): the whole mesh, and
* mesh objects skinned to the armature (an Armature modifier using this armature's vertex
  groups, or the legacy 'ARMATURE' parent type): each triangle belongs to the deforming bone
  whose vertex group has the largest summed weight over its three vertices; the bone's
  triangles are closed where they were cut off the rest of the mesh by fans from each cut
  loop's centroid (:func:`core.massprops.split_mass_properties`, exact for planar cuts),
  with the meshes and the bones in their rest poses. A skinned mesh counts (and must be
  closed) only when it gives one of the requested bones at least one triangle.
When no mesh gives the bone anything, a capsule around the bone stands in.
Only the scenes the armature is in are searched, and only direct children of the bone count
as parented (a mesh under an empty under the bone does not).
"""

from __future__ import annotations

import numpy as np

from ..core.checks import real_number
from ..core.errors import InvalidInputError
from ..core.lie import se3
from ..core.massprops import (capsule_mass_properties, combine, mesh_mass_properties,
                              split_mass_properties)
from .bridge import BridgeError, matrix_to_array, rigid

__all__ = ["bone_mass_properties", "armature_mass_properties", "object_mass_properties",
           "bone_capsule", "skin_points", "CAPSULE_RADIUS_FRACTION"]

#: radius of the stand-in capsule as a fraction of the bone's length when ``capsule_radius``
#: is 0: a limb segment's radius is roughly 0.08-0.15 of its length (a thigh about 0.07 m on
#: 0.45 m, an upper arm 0.04 m on 0.3 m)
CAPSULE_RADIUS_FRACTION = 0.1
#: tolerance on the armature's scale being uniform (Blender keeps matrices in single precision)
_SCALE_TOL = 1e-5


def _apply(T, v):
    """Points ``v: (N, 3)`` moved by ``T: (4, 4)`` (any affine map)."""
    return v @ T[:3, :3].T + T[:3, 3]


def _read_mesh(obj):
    """The un-deformed mesh of ``obj`` as vertices ``(V, 3)`` float64 in the object's own
    coordinates and triangles ``(F, 3)`` int64."""
    mesh = obj.data
    if mesh.is_editmode:
        raise BridgeError(f"mesh '{obj.name}' is in Edit Mode; leave Edit Mode (Tab) so its "
                          "edits are read")
    v = np.empty(3 * len(mesh.vertices), dtype=np.float32)
    mesh.vertices.foreach_get("co", v)
    t = np.empty(3 * len(mesh.loop_triangles), dtype=np.int32)
    mesh.loop_triangles.foreach_get("vertices", t)
    return v.astype(np.float64).reshape(-1, 3), t.astype(np.int64).reshape(-1, 3)


def _explained(obj, compute):
    """``compute()``, with a note added to a mesh error when ``obj`` has modifiers that the
    un-deformed mesh lacks (a Mirror modifier leaves the stored half open)."""
    try:
        return compute()
    except InvalidInputError as exc:
        extra = [m.name for m in obj.modifiers if m.type != "ARMATURE"]
        if not extra:
            raise
        raise InvalidInputError(f"{exc}; the mesh is read without its modifiers "
                                f"({', '.join(extra)}): apply them to include what they "
                                "add") from exc


def _check_density(density):
    return real_number(density, "density (kg/m^3)", 0.0, low_open=True,
                       advice="e.g. 1000 for water-like soft tissue")


def object_mass_properties(obj, density):
    """Mass properties of a mesh object of uniform ``density`` (kg/m^3) in the object's
    unscaled world frame: origin and rotation of ``obj.matrix_world.decompose()`` (its scale,
    including a negative one, is applied to the vertices; a mirrored mesh's inside-out winding
    is turned back by the core). Returns :class:`core.massprops.MassProperties`."""
    density = _check_density(density)
    if obj is None or obj.type != "MESH":
        raise BridgeError(f"'{getattr(obj, 'name', obj)}' is not a mesh object; pick a mesh")
    world = obj.matrix_world
    location, rotation, _ = world.decompose()
    frame = rigid(se3.from_rp(np.array(rotation.to_matrix()), np.array(location)))
    v, t = _read_mesh(obj)
    v = _apply(np.linalg.solve(frame, matrix_to_array(world)), v)
    return _explained(obj, lambda: mesh_mass_properties(v, t, density, name=obj.name))


def _armature_scale(armature_obj):
    """The armature object's uniform world scale (armature units to metres)."""
    scale = np.array(armature_obj.matrix_world.to_scale())
    if np.any(scale <= 0.0) or np.ptp(scale) > _SCALE_TOL * scale.max():
        raise BridgeError(f"armature '{armature_obj.name}' has scale "
                          f"{tuple(np.round(scale, 6))}; mass properties need a uniform "
                          "positive scale: apply it (Ctrl+A > Scale) or scale all axes alike")
    return float(scale.mean())


def _skinned(obj, armature_obj):
    """Whether ``obj`` is deformed by ``armature_obj``'s vertex groups."""
    if obj.parent == armature_obj and obj.parent_type == "ARMATURE":
        return True
    return any(m.type == "ARMATURE" and m.object == armature_obj and m.use_vertex_groups
               for m in obj.modifiers)


def _rest_T_armature_object(obj, armature_obj):
    """Pose ``(4, 4)`` of ``obj`` in armature space (armature units, any scale of ``obj``
    included) with the armature in its rest pose."""
    basis = matrix_to_array(obj.matrix_parent_inverse) @ matrix_to_array(obj.matrix_basis)
    if obj.parent == armature_obj:
        if obj.parent_type == "BONE" and obj.parent_bone in armature_obj.data.bones:
            bone = armature_obj.data.bones[obj.parent_bone]
            tail = np.eye(4)
            tail[1, 3] = bone.length            # a bone's children hang from its tail
            return matrix_to_array(bone.matrix_local) @ tail @ basis
        return basis
    return np.linalg.solve(matrix_to_array(armature_obj.matrix_world),
                           matrix_to_array(obj.matrix_world))


def _scene_meshes(armature_obj):
    found = {}
    for scene in armature_obj.users_scene:
        for obj in scene.objects:
            if obj.type == "MESH":
                found[obj.name] = obj
    return [found[name] for name in sorted(found)]


def _dominant_bones(obj, triangles, bones):
    """For each triangle ``(F, 3)`` of ``obj``'s mesh, the name of the deforming bone (among
    ``bones``) whose vertex group has the largest summed weight over its vertices, or ''
    where none of them has weight: ``(F,)`` str."""
    groups = [g for g in obj.vertex_groups if g.name in bones]
    names = [g.name for g in groups]
    columns = {g.index: k for k, g in enumerate(groups)}
    mesh = obj.data
    entries = [(v.index, columns[g.group], g.weight) for v in mesh.vertices for g in v.groups
               if g.group in columns]
    weights = np.zeros((len(mesh.vertices), len(names) + 1))
    if entries:
        rows, cols, w = (np.array(x) for x in zip(*entries))
        np.add.at(weights, (rows.astype(np.int64), cols.astype(np.int64)), w)
    face = weights[triangles].sum(axis=1)
    face[:, -1] = 0.0                           # the '' column wins only where all are zero
    best = np.where(face.max(axis=1) > 0.0, face.argmax(axis=1), len(names))
    return np.array(names + [""])[best]


def armature_mass_properties(armature_obj, density, capsule_radius=0.0, bone_names=None):
    """Mass properties of the bones ``bone_names`` (default: all) of ``armature_obj``, each
    in its bone's rest frame (``bone.matrix_local``: head at the origin, Y along the bone;
    metres, the armature object's uniform scale applied), from the meshes described in the
    module docstring; a skinned mesh is read and split once for all bones.

    density: kg/m^3; capsule_radius: metres, radius of the stand-in capsule from head to tail
    for a bone no mesh covers (0: :data:`CAPSULE_RADIUS_FRACTION` times the bone's length).
    Returns ``{bone name: (MassProperties, source)}``, ``source`` saying in words where the
    mass came from, e.g. "2 meshes: Body (skinned), Helmet (parented)" or "capsule r=12 mm".
    """
    density = _check_density(density)
    capsule_radius = real_number(capsule_radius, "capsule radius (m)", 0.0,
                                 advice="0 picks a tenth of the bone's length")
    if armature_obj is None or armature_obj.type != "ARMATURE":
        raise BridgeError(f"'{getattr(armature_obj, 'name', armature_obj)}' is not an "
                          "armature object; pick the rig's armature")
    if armature_obj.data.is_editmode:
        raise BridgeError(f"armature '{armature_obj.name}' is in Edit Mode; leave Edit Mode "
                          "(Tab) so its bones' rest poses are read")
    bones = armature_obj.data.bones
    names = [b.name for b in bones] if bone_names is None else list(bone_names)
    missing = [n for n in names if n not in bones]
    if missing:
        raise BridgeError(f"armature '{armature_obj.name}' has no bone named "
                          f"{', '.join(repr(n) for n in missing)}")
    scale = _armature_scale(armature_obj)
    deforming = {b.name for b in bones if b.use_deform}
    parts = {n: [] for n in names}
    for obj in _scene_meshes(armature_obj):
        if _skinned(obj, armature_obj):
            if not any(n in deforming and n in obj.vertex_groups for n in names):
                continue
            v, t = _read_mesh(obj)
            labels = _dominant_bones(obj, t, deforming)
            wanted = set(names).intersection(labels)
            if not wanted:
                continue
            v = scale * _apply(_rest_T_armature_object(obj, armature_obj), v)
            pieces = _explained(obj, lambda: split_mass_properties(
                v, t, labels, density, name=obj.name, keep=wanted))
            for n, mp in pieces.items():
                parts[n].append((mp, f"{obj.name} (skinned)"))
        elif obj.parent == armature_obj and obj.parent_type == "BONE" \
                and obj.parent_bone in parts:
            v, t = _read_mesh(obj)
            v = scale * _apply(_rest_T_armature_object(obj, armature_obj), v)
            mp = _explained(obj, lambda: mesh_mass_properties(v, t, density, name=obj.name))
            parts[obj.parent_bone].append((mp, f"{obj.name} (parented)"))
    result = {}
    for n in names:
        bone = bones[n]
        frame = rigid(matrix_to_array(bone.matrix_local))
        frame[:3, 3] *= scale
        if parts[n]:
            whole = combine(mp for mp, _ in parts[n]).transformed(se3.inv(frame))
            count = len(parts[n])
            source = (f"{count} mesh{'es' if count > 1 else ''}: "
                      + ", ".join(s for _, s in parts[n]))
        else:
            whole, source = bone_capsule(scale * bone.length, density, capsule_radius)
        result[n] = (whole, source)
    return result


def bone_capsule(length, density, capsule_radius=0.0):
    """``(MassProperties, source)`` of the capsule standing in for a bone of ``length`` (m)
    from its head along its Y: radius ``capsule_radius`` (m; 0:
    :data:`CAPSULE_RADIUS_FRACTION` times the length)."""
    radius = capsule_radius or CAPSULE_RADIUS_FRACTION * length
    return capsule_mass_properties(radius, length, density), f"capsule r={1000 * radius:.3g} mm"


def bone_mass_properties(armature_obj, bone_name, density, capsule_radius=0.0):
    """Mass properties of one bone in its rest frame and where they came from:
    ``(MassProperties, source)``; see :func:`armature_mass_properties`, which computes
    several bones while reading each skinned mesh once."""
    return armature_mass_properties(armature_obj, density, capsule_radius,
                                    bone_names=[bone_name])[bone_name]


def skin_points(armature_obj):
    """``{bone name: (N, 3) points}``: the vertices of the meshes skinned to ``armature_obj``
    (the module docstring's meshes, at rest, in armature space, metres) by the deforming
    bone whose vertex group weighs most on each; bones no vertex belongs to are absent."""
    scale = _armature_scale(armature_obj)
    deforming = {b.name for b in armature_obj.data.bones if b.use_deform}
    out = {}
    for obj in _scene_meshes(armature_obj):
        if not _skinned(obj, armature_obj):
            continue
        groups = [g for g in obj.vertex_groups if g.name in deforming]
        if not groups:
            continue
        v, _ = _read_mesh(obj)
        columns = {g.index: k for k, g in enumerate(groups)}
        weights = np.zeros((len(v), len(groups)))
        for vert in obj.data.vertices:
            for g in vert.groups:
                if g.group in columns:
                    weights[vert.index, columns[g.group]] += g.weight
        v = scale * _apply(_rest_T_armature_object(obj, armature_obj), v)
        best = weights.argmax(axis=1)
        has = weights.max(axis=1) > 0.0
        for k, g in enumerate(groups):
            mine = v[has & (best == k)]
            if len(mine):
                out[g.name] = np.concatenate([out[g.name], mine]) if g.name in out else mine
    return out
