"""Blender objects as colliders of the simulated rigs.

An object whose ``Object.spline_joints_collider`` is enabled (:mod:`.rig_properties`) is a
collider of every rig simulated in its scene. Its shape is read from its evaluated mesh
(modifiers applied) at the start frame, in the object's own coordinates
(:func:`collider_shape`): a sphere, capsule or box of the vertices' bounds
(:func:`bounds_shape`), the one of those whose volume is closest to the vertices' convex
hull's (Automatic, :func:`fit_primitive`), or that convex hull itself (a concave mesh is
filled in, and the report says so).

:class:`ColliderReader` samples each collider's ``matrix_world`` at the frames a rig job
samples: a collider that stays put is a :class:`core.contacts.StaticCollider` at its world
matrix (its scale applied to the shape, where the shape can take it); one that moves is a
:class:`core.contacts.MovingCollider` following its sampled rigid poses
(:class:`core.rig.PoseMotion`, the spline of the kinematic bodies), with its scale, which
must not change, applied to the shape once.
"""

from __future__ import annotations

import numpy as np

from . import bridge

#: a moving collider whose scale changes by more than this (relative) over the frame range
#: is refused; the float32 rounding of a keyed scale is 6e-8 of it
SCALE_CHANGE_TOL = 1e-6

#: Automatic fits a capsule only to bounds whose longest half side exceeds the others by
#: this factor: rounder bounds (a faceted UV sphere's differ by its facets) are a sphere's
CAPSULE_ASPECT = 1.1

SHAPE_NAMES = {"SPHERE": "sphere", "CAPSULE": "capsule", "BOX": "box", "CONVEX_HULL": "convex hull"}


def bounds_shape(kind, lo, hi, radius=0.0, friction=None, restitution=None):
    """The core shape of kind "SPHERE", "CAPSULE" or "BOX" of the axis-aligned bounds
    ``lo, hi (3,)``: a sphere of ``radius`` (0: the largest half extent) about their
    centre, a capsule along their longest side of ``radius`` (0: the largest other half
    extent) that ends at the bounds, or their box. Raises InvalidInputError for a zero
    radius or a flat box."""
    from ..core.contacts import Box, Capsule, Sphere

    centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    material = {"friction": friction, "restitution": restitution}
    if kind == "SPHERE":
        return Sphere(radius or float(half.max()), centre, **material)
    if kind == "CAPSULE":
        a = int(np.argmax(half))
        r = radius or float(np.delete(half, a).max())
        axis = np.eye(3)[a] * max(float(half[a]) - r, 0.0)
        return Capsule(r, centre - axis, centre + axis, **material)
    pose = np.eye(4)
    pose[:3, 3] = centre
    return Box(half, pose, **material)


def fit_primitive(points):
    """"SPHERE", "CAPSULE" or "BOX": the :func:`bounds_shape` of the bounds of ``points
    (n, 3)`` whose volume is closest to the volume of their convex hull (a box for points
    that enclose no volume, a capsule only for bounds longer than :data:`CAPSULE_ASPECT`
    times their other half sides)."""
    import scipy.spatial

    lo, hi = points.min(axis=0), points.max(axis=0)
    half = 0.5 * (hi - lo)
    try:
        volume = scipy.spatial.ConvexHull(points).volume
    except (scipy.spatial.QhullError, ValueError):
        return "BOX"
    a = int(np.argmax(half))
    r = float(np.delete(half, a).max())
    candidates = {"BOX": 8.0 * float(np.prod(half)),
                  "SPHERE": 4.0 / 3.0 * np.pi * float(half.max()) ** 3}
    if half[a] > CAPSULE_ASPECT * r:
        candidates["CAPSULE"] = np.pi * r * r * 2.0 * (half[a] - r) + 4.0 / 3.0 * np.pi * r ** 3
    return min(candidates, key=lambda k: abs(candidates[k] - volume))


def mesh_points(obj, depsgraph):
    """The vertices ``(n, 3)`` of the evaluated mesh of ``obj`` (modifiers applied) in the
    object's own coordinates; ValueError for an object without geometry or in Edit Mode."""
    if obj.mode == "EDIT":
        raise ValueError(f"collider '{obj.name}' is in Edit Mode; leave Edit Mode (Tab) so its "
                         "mesh is read")
    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh() if obj.type in ("MESH", "CURVE", "SURFACE", "FONT", "META") \
        else None
    try:
        n = 0 if mesh is None else len(mesh.vertices)
        if n == 0:
            raise ValueError(f"collider '{obj.name}' has no vertices to take its shape from; "
                             "give it a mesh or untick Collider")
        v = np.empty(3 * n, dtype=np.float32)
        mesh.vertices.foreach_get("co", v)
    finally:
        if mesh is not None:
            evaluated.to_mesh_clear()
    return v.astype(np.float64).reshape(-1, 3)


def collider_shape(obj, settings, points):
    """``(core Shape, kind)``: the collider shape of ``obj`` from its ``points (n, 3)`` in
    the object's own coordinates, with the collider's friction and restitution (None where
    they are the scene's), and the kind used ("SPHERE", "CAPSULE", "BOX", "CONVEX_HULL").
    Raises ValueError naming the object when the shape cannot be made."""
    from ..core.contacts import ConvexHull
    from ..core.errors import InvalidInputError

    kind = fit_primitive(points) if settings.shape == "AUTO" else settings.shape
    material = {"friction": settings.friction if settings.use_friction else None,
                "restitution": settings.restitution if settings.use_restitution else None}
    try:
        if kind == "CONVEX_HULL":
            return ConvexHull(points, **material), kind
        return bounds_shape(kind, points.min(axis=0), points.max(axis=0), **material), kind
    except InvalidInputError as err:
        raise ValueError(f"collider '{obj.name}': its {SHAPE_NAMES[kind]}: {err}") from None


def collider_objects(scene):
    """The scene's objects marked as colliders."""
    return [obj for obj in scene.objects if obj.spline_joints_collider.enabled]


class ColliderReader:
    """The scene's colliders read for one simulation: :meth:`sample` at every sampled frame
    (the scene set to it), then :meth:`colliders`. Refuses (ValueError) an object that is
    both simulated and a collider."""

    def __init__(self, scene):
        self.objects = collider_objects(scene)
        for obj in self.objects:
            s = obj.spline_joints_sim
            if s.enabled and not s.kinematic:
                raise ValueError(f"'{obj.name}' is simulated and a collider; a collider is "
                                 "not pushed: untick Collider, or make it Kinematic")
        self.matrices = {obj.name: [] for obj in self.objects}
        self.shapes = {}

    def sample(self, depsgraph, shape_frame):
        """Record every collider's world matrix at the scene's frame; read the shapes too
        when ``shape_frame`` (the start frame)."""
        for obj in self.objects:
            self.matrices[obj.name].append(bridge.matrix_to_array(obj.matrix_world))
            if shape_frame:
                self.shapes[obj.name] = collider_shape(obj, obj.spline_joints_collider,
                                                       mesh_points(obj, depsgraph))

    def colliders(self, times):
        """``(colliders, summary)``: the core colliders for the matrices sampled at ``times
        (K,)`` (s) and one "name: shape[, moving]" entry each. A shape note (a concave mesh's
        hull) is prefixed with the object's name, so the contact report names it. Raises
        ValueError naming the object for a placement its shape cannot take (a mirroring,
        sheared or, for a sphere or capsule, non-uniform scale) and for a moving collider
        whose scale changes."""
        from ..core.contacts import MovingCollider, StaticCollider
        from ..core.contacts.shapes import placement_scale
        from ..core.rig import PoseMotion

        out, summary = [], []
        for obj in self.objects:
            shape, kind = self.shapes[obj.name]
            M = np.array(self.matrices[obj.name])
            moving = not np.array_equal(M, np.broadcast_to(M[0], M.shape))
            try:
                if not moving:
                    collider = StaticCollider(shape, M[0])
                else:
                    _, scale = placement_scale(M[0], "its world matrix")
                    scales = np.linalg.norm(M[:, :3, :3], axis=1)
                    change = float(np.abs(scales / scale - 1.0).max())
                    if change > SCALE_CHANGE_TOL:
                        raise ValueError(
                            f"its scale changes by {100 * change:.3g} % over the frame range; a "
                            "moving collider keeps its shape: animate its location and rotation "
                            "only (or apply the scale, Ctrl+A)")
                    S = np.diag(np.append(scale, 1.0))
                    collider = MovingCollider(shape.transformed(S),
                                              PoseMotion(times, bridge.rigid(M / S.diagonal())))
            except ValueError as err:          # the core's InvalidInputError is one
                raise ValueError(f"collider '{obj.name}': {err}") from None
            if collider.shape.note:
                collider.shape.note = f"'{obj.name}': {collider.shape.note}"
            out.append(collider)
            summary.append(f"{obj.name}: {SHAPE_NAMES[kind]}" + (", moving" if moving else ""))
        return tuple(out), summary
