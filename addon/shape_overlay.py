"""Show Shapes: the collision shapes of the simulated bodies and of the colliders drawn as
wireframes over the 3D viewport (``Scene.spline_joints_sim.show_shapes``).

The line segments are a pure function of the shapes and their poses (:func:`shape_segments`);
:func:`scene_segments` poses every shape the way a simulation reads it (a bone's in its
pose bone frame, an object's in its unscaled world frame, a collider's at its world matrix).
A GPU draw handler and two handlers that recompute the segments after a depsgraph update or
a frame change are installed only while some scene's Show Shapes is on (:func:`sync`, on the
property's change and after a file loads), so nothing runs while it is off; unregister
removes them all.
"""

from __future__ import annotations

import bpy
import numpy as np
from bpy.app.handlers import persistent


#: the wireframe's colour (RGBA)
COLOUR = (1.0, 0.55, 0.1, 1.0)
#: segments per full circle of a sphere or capsule
CIRCLE = 24

_state = {"draw": None, "segments": {}, "batch": (None, None)}


def _arc(centre, u, w, r, start, stop, n):
    """Segments ``(n, 2, 3)`` of the arc ``centre + r (cos a u + sin a w)``, a from start to
    stop."""
    a = np.linspace(start, stop, n + 1)
    p = centre + r * (np.cos(a)[:, None] * u + np.sin(a)[:, None] * w)
    return np.stack([p[:-1], p[1:]], axis=1)


def shape_segments(shape, pose=None, n=CIRCLE):
    """World line segments ``(k, 2, 3)`` of a core collision shape at the rigid ``pose (4,
    4)`` (identity if None): a box's or hull's edges; a sphere's three great circles in the
    pose's axes; a capsule's two end circles, four side lines and the half circles of its
    caps in two planes through its axis (``n`` segments per full circle)."""
    T = np.eye(4) if pose is None else np.asarray(pose, dtype=float)
    R = T[:3, :3]
    v = shape.vertices @ R.T + T[:3, 3]
    if shape.polytope:
        return v[shape.edges]
    r = shape.radius
    if len(v) == 1:
        return np.concatenate([_arc(v[0], R[:, i], R[:, (i + 1) % 3], r, 0.0, 2 * np.pi, n)
                               for i in range(3)])
    a, b = v
    u = (b - a) / np.linalg.norm(b - a)
    e1 = np.cross(u, np.eye(3)[int(np.argmin(np.abs(u)))])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(u, e1)
    half = n // 2
    parts = [_arc(a, e1, e2, r, 0.0, 2 * np.pi, n), _arc(b, e1, e2, r, 0.0, 2 * np.pi, n)]
    for e in (e1, e2):
        parts.append(_arc(b, e, u, r, 0.0, np.pi, half))
        parts.append(_arc(a, e, u, r, np.pi, 2 * np.pi, half))
        parts.append(np.array([[a + r * e, b + r * e], [a - r * e, b - r * e]]))
    return np.concatenate(parts)


def scene_segments(scene, depsgraph):
    """World line segments ``(k, 2, 3)`` of the collision shapes of the scene's simulated
    bones and objects at their current poses and of its colliders at their world matrices;
    a shape that cannot be made (the simulation reports why) is left out."""
    from . import colliders
    from .rig_scene import (armature_shapes, object_shapes, simulated_armatures,
                            simulated_objects)

    out = []

    def add(make):
        try:
            out.extend(shape_segments(*item) for item in make())
        except ValueError:                        # the bake says what is wrong
            pass

    for arm in simulated_armatures(scene):
        add(lambda: armature_shapes(arm))
    for obj in simulated_objects(scene):
        add(lambda: object_shapes(obj))
    for obj in colliders.collider_objects(scene):
        def collider(obj=obj):
            shape, _ = colliders.collider_shape(obj, obj.spline_joints_collider,
                                                colliders.mesh_points(obj, depsgraph))
            return [(shape.transformed(np.array(obj.matrix_world)), None)]
        add(collider)
    return np.concatenate(out) if out else np.zeros((0, 2, 3))


def _refresh(scene, depsgraph):
    _state["segments"][scene.name] = scene_segments(scene, depsgraph)


@persistent
def _on_update(scene, depsgraph=None):
    if scene.spline_joints_sim.show_shapes and depsgraph is not None:
        _refresh(scene, depsgraph)


def _draw():
    import gpu
    from gpu_extras.batch import batch_for_shader

    scene = bpy.context.scene
    if not scene.spline_joints_sim.show_shapes:
        return
    segments = _state["segments"].get(scene.name)
    if segments is None or not len(segments):
        return
    shader = gpu.shader.from_builtin("UNIFORM_COLOR")
    drawn, batch = _state["batch"]
    if drawn is not segments:
        batch = batch_for_shader(shader, "LINES",
                                 {"pos": segments.reshape(-1, 3).astype(np.float32)})
        _state["batch"] = (segments, batch)
    shader.uniform_float("color", COLOUR)
    gpu.state.depth_test_set("LESS_EQUAL")
    batch.draw(shader)
    gpu.state.depth_test_set("NONE")


_UPDATES = (bpy.app.handlers.depsgraph_update_post, bpy.app.handlers.frame_change_post)


def _install():
    if _state["draw"] is None:
        _state["draw"] = bpy.types.SpaceView3D.draw_handler_add(_draw, (), "WINDOW", "POST_VIEW")
    for lst in _UPDATES:
        if _on_update not in lst:
            lst.append(_on_update)


def _remove():
    if _state["draw"] is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_state["draw"], "WINDOW")
        _state["draw"] = None
    for lst in _UPDATES:
        while _on_update in lst:
            lst.remove(_on_update)
    _state["segments"].clear()
    _state["batch"] = (None, None)


def installed():
    """True while the draw handler is in place."""
    return _state["draw"] is not None


def sync():
    """Install the overlay while some scene's Show Shapes is on (computing its shapes now),
    remove it otherwise; redraw the 3D views."""
    scenes = [s for s in bpy.data.scenes if s.spline_joints_sim.show_shapes]
    if not scenes:
        _remove()
    else:
        _install()
        for scene in scenes:
            _refresh(scene, bpy.context.evaluated_depsgraph_get() if scene == bpy.context.scene
                     else scene.view_layers[0].depsgraph)
    for window in getattr(bpy.context.window_manager, "windows", ()):
        for area in window.screen.areas:
            if area.type == "VIEW_3D":
                area.tag_redraw()


@persistent
def _on_load(*args):
    sync()


def register():
    bpy.app.handlers.load_post.append(_on_load)
    try:
        sync()
    except AttributeError:            # enabled at startup: no file data yet (load_post follows)
        pass


def unregister():
    while _on_load in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.remove(_on_load)
    _remove()
