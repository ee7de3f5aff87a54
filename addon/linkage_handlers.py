"""Live assembly of linkages: every linkage with Live Assembly on follows its driver, called
by the live handler (:func:`.handlers.update_scene`, on frame changes and depsgraph updates).

When the driving body's pose (moved or keyed) or the driving joint's Drive Value changes, the
linkage is read (:func:`.linkage_bridge.read_linkage`), assembled by a cached
:class:`core.linkage.LiveAssembly` (rebuilt only when the joints, masses or settings change)
starting from the last assembly's double-precision poses, and the other bodies are placed.
The constraint error left and a status line are written to the linkage, which the Linkages
panel shows. Nothing is solved while the driver stands still, so the handler's own writes do
not retrigger it, and nothing while a bake runs (:class:`.handlers.suspended`). A linkage that
cannot be assembled (a redundant loop, a deleted body, ...) keeps its poses; the reason is in
its status and, once, on the console.
"""

from __future__ import annotations

import numpy as np

from . import linkage_bridge

_live: dict = {}     # (scene name, linkage name) -> (fingerprint, LiveAssembly)
_inputs: dict = {}   # (scene name, linkage name) -> the inputs of its last assembly


def _fingerprint(linkage, item) -> tuple:
    """What a LiveAssembly depends on besides the poses: joints (their paths too), masses,
    settings."""
    joints = tuple((j.name, j.kind, j.body1, j.body2, j.frame1.tobytes(), j.frame2.tobytes(),
                    *(None if x is None else x.tobytes() for x in (j.curve, j.surface)))
                   for j in linkage.joints)
    bodies = tuple((b.name, b.mass, b.inertia.tobytes()) for b in linkage.bodies)
    return (joints, bodies, linkage.driver, linkage.drive_joint, item.cg_iterations,
            item.geometric_iterations, item.tolerance)


def live_assembly(scene, item):
    """``(LiveAssembly, linkage, objects)`` of a scene linkage, the solver cached."""
    from ..core.linkage import LiveAssembly

    linkage, objects = linkage_bridge.read_linkage(scene, item)
    key = (scene.name, item.name)
    fp = _fingerprint(linkage, item)
    cached = _live.get(key)
    if cached is None or cached[0] != fp:
        cached = (fp, LiveAssembly(linkage, item.cg_iterations, item.geometric_iterations,
                                   item.tolerance))
        _live[key] = cached
        _inputs.pop(key, None)
    return cached[1], linkage, objects


def driver_input(linkage, item) -> np.ndarray:
    """The driver's world pose ``(4, 4)`` now: from the driving joint's Drive Value
    (``linkage`` gives the joint's frames), or the driving body's (object's or bone's) pose."""
    from ..core.linkage import drive_pose

    if linkage.drive_joint:
        return drive_pose(linkage, item.drive_value)
    return linkage_bridge.body_pose(linkage_bridge.driver_ref(item))


def assemble(scene, item, start=None):
    """Assemble a linkage for its driver's current input from ``start`` ``(N, 4, 4)`` (default:
    the last live assembly's poses, else the objects' poses); returns ``(result, live,
    objects)``. Writes nothing."""
    live, linkage, objects = live_assembly(scene, item)
    names = [b.name for b in linkage.bodies]
    if start is None:
        start = linkage_bridge.read_state(item, names)
    return live.solve(driver_input(linkage, item), start), live, objects


def write_result(item, result, live, objects) -> None:
    """Place the bodies the driver moved, keep the poses, show the error and status."""
    linkage_bridge.write_poses(objects, result.poses,
                               skip=() if live.linkage.drive_joint else (live.driver,))
    linkage_bridge.write_state(item, [o.name for o in objects], result.poses)
    item.error = result.error
    item.status = live.unreachable(result) or f"closed ({result.error:.1e} m/rad)"


def follow_driver(scene, item) -> int:
    """Assemble a live linkage whose driver moved (its input differs from the last assembly's)
    and place its bodies; returns 1 when it did, else 0. A linkage that cannot be assembled
    keeps its poses: the ValueError is written to its status and raised (the live handler,
    :func:`.handlers.update_scene`, says it once on the console)."""
    if not item.live or (item.driver is None and not item.drive_joint):
        return 0
    key = (scene.name, item.name)
    try:
        live, linkage, objects = live_assembly(scene, item)
        T = driver_input(linkage, item)
        if key in _inputs and np.array_equal(_inputs[key], T):
            return 0
        result = live.solve(T, linkage_bridge.read_state(item, [b.name for b in linkage.bodies]))
    except ValueError as exc:
        _inputs.pop(key, None)
        try:
            item.status = f"cannot assemble: {exc}"
        except AttributeError:  # ID data is read-only while rendering
            pass
        raise
    try:
        write_result(item, result, live, objects)
    except AttributeError:  # ID data is read-only while rendering: nothing placed
        return 0
    _inputs[key] = T
    return 1
