"""Grab and drag the simulation in the viewport, and record what it did.

The drag tool (the operator ``spline_joints.drag`` and its viewport tool) holds a
:class:`DragSession` between events. A click picks the body under the mouse (:func:`pick`):
a bone of an armature with simulated bones (within :data:`BONE_REACH` of its length from
its axis), an object with Simulate on (its mesh), a body of a demo mechanism (its mesh), or a
body of a linkage (its mesh, or its bone). What was grabbed decides the *take*, the
simulation that runs while the mouse moves:

* :class:`RigTake`: the rig (the armature, or the scene's object rig) read as a bake reads
  it (:class:`.rig_jobs.RigJob`) and run frame by frame from the scene's first frame by
  :class:`core.rig.RigRun`, one frame per timer tick at the scene's frame rate, the scene's
  frame following (so its animated bodies play); the grabbed point is pulled toward the
  target by :meth:`core.rig.RigRun.set_drag`'s spring at :data:`DRAG_FREQUENCY` on the
  body's mass, or held as stiff as the step keeps stable (Ctrl). The take ends at the
  frame range's end.
* :class:`MechanismTake`: a demo mechanism (*Mechanisms* panel) built as its bake builds it
  (:class:`.mechanism_bake.BakeJob`) and run the same way by :class:`core.rig.LiveRun` (its
  live preview stops); its bodies are placed by their world matrices.
* :class:`LinkageTake`: the linkage assembled with its grabbed point on the target at every
  tick (:class:`core.linkage.LinkageDrag`: the loops stay closed; the driver is released for
  the drag, the live handler held), from the scene's current frame, one frame per tick.

The target is the point under the mouse on the view plane through the grab point (the
plane facing the viewer at the depth where the body was grabbed). Releasing the left button
or a right click lets go (the simulation keeps running); a click grabs again (a body of the
same take); Enter records the take to keys and ends; Esc ends and puts every body, the
frame and the linkage's state back as they were.

Recording (each take's ``record``, and :func:`record_previews` for a Simulate Preview): the
frames the take computed are keyed into a new action per armature or object, as a bake keys
them (:func:`.rig_jobs.write_keys`; a mechanism's or linkage's bodies by
:func:`.linkage_bake.key_bodies`, into *<object> Drag* or *<object> <linkage>*): the
data-block's own action is pushed onto an NLA track, unmuted, as the base layer the recorded
action plays over (its channels that were not simulated keep playing from there); a rig's
earlier simulation bake is replaced. The operator makes the recording one undo step.
"""

from __future__ import annotations

import math

import numpy as np

from . import bridge, handlers, linkage_bridge, previews
from .rig_scene import simulated_armatures, simulated_objects

#: a bone is grabbed when the mouse's ray passes within this fraction of its length of its
#: axis (head to tail)
BONE_REACH = 0.15
#: the drag spring's frequency (Hz) on the grabbed body's mass when not held (Ctrl)
DRAG_FREQUENCY = 3.0


def view_ray(region, rv3d, xy):
    """``(origin (3,), unit direction (3,))`` of the viewer's ray through the region pixel
    ``xy``."""
    from bpy_extras import view3d_utils

    origin = np.array(view3d_utils.region_2d_to_origin_3d(region, rv3d, xy))
    direction = np.array(view3d_utils.region_2d_to_vector_3d(region, rv3d, xy))
    return origin, direction / np.linalg.norm(direction)


def view_point(region, rv3d, xy, depth):
    """``(3,)`` the point under the region pixel ``xy`` on the view plane through ``depth``."""
    from bpy_extras import view3d_utils

    return np.array(view3d_utils.region_2d_to_location_3d(region, rv3d, xy, depth.tolist()))


class Hit:
    """A body under the mouse: ``kind`` ``"RIG"`` (``target``: the armature, or None for
    the object rig), ``"MECHANISM"`` or ``"LINKAGE"`` (``target``: the mechanism's or
    linkage's index); ``body``: its name (a bone's, an object's; a linkage's body name);
    ``point``: the grabbed world point; ``local``: that point in the body's frame;
    ``simulated``: False for a body that follows its animation; ``distance`` along the ray."""

    def __init__(self, kind, target, body, point, frame, simulated, distance):
        self.kind, self.target, self.body, self.simulated = kind, target, body, simulated
        self.point, self.distance = point, distance
        self.local = np.linalg.solve(frame, np.append(point, 1.0))[:3]


def _segment_hit(origin, direction, a, b, radius):
    """``(distance along the ray, closest point of the segment a-b)`` when the ray passes
    within ``radius`` of the segment, else None."""
    u = b - a
    w = a - origin
    uu, ud = u @ u, u @ direction
    den = uu - ud * ud
    s = 0.0 if den <= 1e-12 * max(uu, 1e-300) else (ud * (w @ direction) - (w @ u)) / den
    s = min(max(s, 0.0), 1.0)
    p = a + s * u
    t = float((p - origin) @ direction)
    if t <= 0.0 or np.linalg.norm(origin + t * direction - p) > radius:
        return None
    return t, p


def _mesh_hit(obj, origin, direction, depsgraph):
    """``(distance, world point)`` where the ray meets the object's evaluated mesh, or None."""
    if obj.type != "MESH":
        return None
    M = bridge.matrix_to_array(obj.matrix_world)
    o = np.linalg.solve(M, np.append(origin, 1.0))[:3]
    d = np.linalg.solve(M[:3, :3], direction)
    found, location, _, _ = obj.evaluated_get(depsgraph).ray_cast(o.tolist(), d.tolist(),
                                                                 depsgraph=depsgraph)
    if not found:
        return None
    p = (M @ np.append(np.array(location), 1.0))[:3]
    return float((p - origin) @ direction), p


def _bone_hit(arm, pb, origin, direction):
    """``(distance, closest point of the bone's axis)`` when the ray passes within
    :data:`BONE_REACH` of the pose bone ``pb`` of ``arm``, else None."""
    W = bridge.matrix_to_array(arm.matrix_world)
    head, tail = ((W @ np.append(np.array(v), 1.0))[:3] for v in (pb.head, pb.tail))
    return _segment_hit(origin, direction, head, tail,
                        BONE_REACH * float(np.linalg.norm(tail - head)))


def pick(scene, depsgraph, origin, direction):
    """The nearest :class:`Hit` on the ray ``origin + t direction`` (t > 0), or None: bones
    of armatures with simulated bones, objects with Simulate on, bodies of demo mechanisms
    and of linkages."""
    hits = []
    rigged = {a.name for a in simulated_armatures(scene)}
    for arm in scene.objects:
        if arm.name not in rigged:
            continue
        for pb in arm.pose.bones:
            found = _bone_hit(arm, pb, origin, direction)
            if found:
                s = pb.spline_joints_sim
                frame = linkage_bridge.body_pose(linkage_bridge.BodyRef(arm, pb.name))
                hits.append(Hit("RIG", arm, pb.name, found[1], frame,
                                s.enabled and not s.kinematic, found[0]))
    moving = set(o.name for o in simulated_objects(scene))
    for obj in scene.objects:
        if obj.spline_joints_sim.enabled:
            found = _mesh_hit(obj, origin, direction, depsgraph)
            if found:
                hits.append(Hit("RIG", None, obj.name, found[1], linkage_bridge.object_pose(obj),
                                obj.name in moving, found[0]))
    for k, item in enumerate(scene.spline_joints_mechanisms):
        for ref in item.bodies:
            found = ref.object is not None and _mesh_hit(ref.object, origin, direction, depsgraph)
            if found:
                hits.append(Hit("MECHANISM", k, ref.object.name, found[1],
                                linkage_bridge.object_pose(ref.object), True, found[0]))
    for k, item in enumerate(scene.spline_joints_linkages):
        try:
            refs = linkage_bridge.linkage_objects(scene, item)
        except ValueError:             # a linkage that lost a body: nothing to grab there
            continue
        for ref in refs:
            found = (_bone_hit(ref.obj, ref.pose_bone, origin, direction) if ref.bone
                     else _mesh_hit(ref.obj, origin, direction, depsgraph))
            if found:
                hits.append(Hit("LINKAGE", k, ref.name, found[1], linkage_bridge.body_pose(ref),
                                True, found[0]))
    return min(hits, key=lambda h: h.distance) if hits else None


class Recorded:
    """A take's motion as :func:`.rig_jobs.write_keys` reads a result: ``world (F, nb, 4,
    4)`` world poses of the rig's bodies and ``times (F,)``."""

    def __init__(self, world, fps):
        self.world = world
        self.times = np.arange(len(world)) / fps


class _LiveTake:
    """A run of :class:`core.rig.LiveRun` (``run``) from the scene's first frame with a drag
    on the body ``body`` (its name, ``names`` the run's bodies), one frame per tick, the
    scene's frame following (module docstring); subclasses place the bodies (:meth:`show`),
    put them back (:meth:`restore`) and key them (:meth:`record`)."""

    def _start(self, scene, run, names, hit):
        self.scene, self.run, self.names = scene, run, names
        self.frame, self.start = scene.frame_current, scene.frame_start
        self.grab(hit)

    def grab(self, hit):
        """Take hold of the hit's point (the pull comes with :meth:`pull`)."""
        self.body, self.point = self._name(hit), hit.local
        self.mass = float(self.run.mechanism.model.masses[self.names.index(self.body)]) \
            if self.run.mechanism.model is not None else 0.0

    def _name(self, hit):
        return hit.body

    def grabbed(self) -> np.ndarray:
        """``(3,)`` the grabbed point's world position at the last computed frame."""
        T = self.run.poses[self.run.ready - 1, self.names.index(self.body)]
        return T[:3, :3] @ self.point + T[:3, 3]

    def pull(self, target, hold):
        k = None if hold else self.mass * (2.0 * math.pi * DRAG_FREQUENCY) ** 2
        self.run.set_drag(self.body, self.point, target, k)

    def release(self):
        self.run.release()

    def step(self) -> bool:
        """Compute and show the next frame; False at the end of the frame range."""
        if self.run.ready >= self.run.n_frames:
            return False
        self.run.advance_to(self.run.ready)
        f = self.run.ready - 1
        self.scene.frame_set(self.start + f)
        self.show(f)
        return True


class RigTake(_LiveTake):
    """A rig run live with a drag (:class:`core.rig.RigRun`; module docstring)."""

    def __init__(self, scene, hit):
        from ..core.rig import RigRun
        from .rig_jobs import RigJob

        previews.clear_previews(scene, [hit.target])
        self.target = hit.target
        self.job = RigJob(scene, hit.target)
        self.owners = {b.name: b.owner for b in self.job.bodies if not b.kinematic}
        self.saved = {name: o.matrix_basis.copy() for name, o in self.owners.items()}
        self._start(scene, RigRun(self.job.rig), [b.name for b in self.job.rig.bodies], hit)

    def same(self, hit) -> bool:
        return hit.kind == "RIG" and hit.target == self.target

    def show(self, f):
        for name, M in self.job.local_poses(self.run.poses[f:f + 1]).items():
            self.owners[name].matrix_basis = bridge.array_to_matrix(M[0])

    def restore(self):
        for name, o in self.owners.items():
            o.matrix_basis = self.saved[name]
        self.scene.frame_set(self.frame)

    def record(self) -> str:
        from .rig_jobs import write_keys

        n = self.run.ready
        names, notes = write_keys(self.job, Recorded(self.run.poses[:n], self.run.fps))
        self.scene.frame_set(self.scene.frame_current)
        text = f"Recorded frames {self.start}-{self.start + n - 1} into {', '.join(names)}"
        return text + ("; " + "; ".join(notes) if notes else "")


class MechanismTake(_LiveTake):
    """A demo mechanism run live with a drag (:class:`core.rig.LiveRun`; module docstring);
    its live preview, if playing, stops for the drag."""

    def __init__(self, scene, hit):
        from ..core.rig import LiveRun
        from .mechanism_bake import BakeJob

        job = BakeJob(scene, hit.target)
        previews.stop_live_mechanisms(scene)
        self.index, self.item = job.index, scene.spline_joints_mechanisms[job.index]
        self.objects = [ref.object for ref in self.item.bodies]
        self.saved = [o.matrix_world.copy() for o in self.objects]
        model = job.mechanism.model
        names = list(model.names) if model is not None else [o.name for o in self.objects]
        self._start(scene, LiveRun(job.mechanism), names, hit)

    def _name(self, hit):
        return self.names[[o.name for o in self.objects].index(hit.body)]

    def same(self, hit) -> bool:
        return hit.kind == "MECHANISM" and hit.target == self.index

    def show(self, f):
        for obj, T in zip(self.objects, self.run.poses[f]):
            obj.matrix_world = bridge.array_to_matrix(T)

    def restore(self):
        for obj, M in zip(self.objects, self.saved):
            obj.matrix_world = M
        self.scene.frame_set(self.frame)

    def record(self) -> str:
        from .linkage_bake import key_bodies

        n = self.run.ready
        frames = self.start + np.arange(n)
        refs = [linkage_bridge.BodyRef(o) for o in self.objects]
        kept = key_bodies(refs, frames, self.run.poses[:n], "Drag")
        self.scene.frame_set(self.scene.frame_current)
        text = (f"Recorded '{self.item.name}' at frames {int(frames[0])}-{int(frames[-1])} "
                f"into actions '<object> Drag'")
        return text + (f"; previous actions on NLA tracks ({', '.join(kept)})" if kept else "")


class LinkageTake:
    """A linkage assembled with its grabbed point on the target at every tick (module
    docstring); ``error`` is the largest constraint error the take's assemblies left."""

    def __init__(self, scene, hit):
        self.scene, self.index = scene, hit.target
        self.item = scene.spline_joints_linkages[hit.target]
        self.linkage, self.objects = linkage_bridge.read_linkage(scene, self.item)
        self.names = [b.name for b in self.linkage.bodies]
        start = linkage_bridge.read_state(self.item, self.names)
        self.saved_state = start
        self.poses = [self.linkage.poses if start is None else start]
        self.frame = scene.frame_current
        self.target, self.error = None, 0.0
        self.grab(hit)
        self._held = handlers.suspended()        # the live assembly does not follow the driver
        self._held.__enter__()

    def same(self, hit) -> bool:
        return hit.kind == "LINKAGE" and hit.target == self.index

    def grab(self, hit):
        from ..core.linkage import LinkageDrag

        item = self.item
        self.drag = LinkageDrag(self.linkage, hit.body, hit.local, item.cg_iterations,
                                item.geometric_iterations, item.tolerance)

    def grabbed(self) -> np.ndarray:
        return self.drag.grabbed(self.poses[-1])

    def pull(self, target, hold):
        """Put the grabbed point on ``target`` from the next tick on (the assembly holds it
        there as far as the loops let it, Ctrl or not)."""
        self.target = target

    def release(self):
        self.target = None

    def step(self) -> bool:
        P = self.poses[-1]
        if self.target is not None:
            res = self.drag.solve(self.target, P)
            P, self.error = res.poses, max(self.error, res.error)
        self.poses.append(P)
        self.scene.frame_set(self.frame + len(self.poses) - 1)
        self._place(P)
        return True

    def _place(self, P):
        linkage_bridge.write_poses(self.objects, P)
        linkage_bridge.write_state(self.item, self.names, P)

    def _end(self):
        if self._held is not None:
            self._held.__exit__(None, None, None)
            self._held = None

    def restore(self):
        self.scene.frame_set(self.frame)
        self._place(self.poses[0])
        if self.saved_state is None:
            for key in (linkage_bridge.POSES_KEY, linkage_bridge.POSE_NAMES_KEY):
                self.item.pop(key, None)
        self._end()

    def record(self) -> str:
        from .linkage_bake import write_keys

        self._end()
        frames = self.frame + np.arange(len(self.poses))
        kept = write_keys(self.scene, self.item, self.objects, frames, np.array(self.poses))
        self.scene.frame_set(int(frames[-1]))
        text = (f"Recorded linkage '{self.item.name}' at frames {int(frames[0])}-"
                f"{int(frames[-1])}, largest constraint error {self.error:.1e} (m/rad)")
        return text + (f"; previous actions on NLA tracks ({', '.join(kept)})" if kept else "")


#: the take of each kind of :class:`Hit`
TAKES = {"RIG": RigTake, "MECHANISM": MechanismTake, "LINKAGE": LinkageTake}


class DragSession:
    """The drag tool between events: the take of what was grabbed at ``xy`` (region pixel)
    in the view ``region``/``rv3d``. Raises ValueError, the scene unchanged, when nothing
    simulated is under the mouse."""

    def __init__(self, scene, depsgraph, region, rv3d, xy, hold=False):
        self.scene, self.depsgraph, self.region, self.rv3d = scene, depsgraph, region, rv3d
        hit = self._hit(xy)
        self.take = TAKES[hit.kind](scene, hit)
        try:
            self._hold(hit, xy, hold)
        except ValueError:                   # a body the run cannot pull
            self.take.restore()
            raise

    def _hit(self, xy):
        hit = pick(self.scene, self.depsgraph, *view_ray(self.region, self.rv3d, xy))
        if hit is None:
            raise ValueError("nothing to drag under the mouse: click a bone with Simulate on, "
                             "an object with Simulate on or a body of a linkage")
        if not hit.simulated:
            raise ValueError(f"'{hit.body}' follows its animation (Kinematic, or Simulate "
                             "off), so nothing can drag it: grab a simulated bone or object, "
                             "or untick Kinematic")
        return hit

    def _hold(self, hit, xy, hold):
        self.depth, self.dragging = hit.point, True
        self.target = view_point(self.region, self.rv3d, xy, self.depth)
        self.take.pull(self.target, hold)
        self._pulled = (self.target, hold)

    def event(self, kind, value, xy, hold=False):
        """Handle one event (``kind``/``value`` as Blender's ``event.type``/``event.value``,
        ``xy`` the mouse's region pixel, ``hold`` Ctrl): ``("RUNNING_MODAL" or
        "PASS_THROUGH" or "FINISHED" or "CANCELLED", message)``. A take that fails (a
        diverging simulation) is put back and its ValueError raised."""
        try:
            return self._event(kind, value, xy, hold)
        except ValueError:
            self.take.restore()
            raise

    def _event(self, kind, value, xy, hold):
        take = self.take
        if kind == "TIMER":
            if self.dragging and (self._pulled[1] != hold
                                  or not np.array_equal(self._pulled[0], self.target)):
                take.pull(self.target, hold)
                self._pulled = (self.target, hold)
            if not take.step():
                return "RUNNING_MODAL", "the frame range ends here: Enter records, Esc " \
                                        "puts everything back"
            return "RUNNING_MODAL", ""
        if kind == "MOUSEMOVE":
            if self.dragging:
                self.target = view_point(self.region, self.rv3d, xy, self.depth)
            return "RUNNING_MODAL", ""
        if (kind == "LEFTMOUSE" and value == "RELEASE") or (kind == "RIGHTMOUSE"
                                                             and value == "PRESS"):
            if self.dragging:
                self.dragging = False
                take.release()
            return "RUNNING_MODAL", "let go: click to grab again, Enter records, Esc puts " \
                                    "everything back"
        if kind == "LEFTMOUSE" and value == "PRESS":
            hit = pick(self.scene, self.depsgraph, *view_ray(self.region, self.rv3d, xy))
            if hit is None or not hit.simulated or not take.same(hit):
                return "RUNNING_MODAL", "grab a simulated body of the same rig or linkage"
            take.grab(hit)
            self._hold(hit, xy, hold)
            return "RUNNING_MODAL", ""
        if kind == "ESC" and value == "PRESS":
            take.restore()
            return "CANCELLED", "Drag ended: nothing recorded, the scene is as it was"
        if kind in ("RET", "NUMPAD_ENTER") and value == "PRESS":
            return "FINISHED", take.record()
        return "PASS_THROUGH", ""


def record_previews(scene) -> list:
    """Key the scene's rig previews (:mod:`.previews`: a completed Simulate Preview, or the
    frames a live one has computed) as a bake keys them, and drop them; returns a message per
    rig. ValueError when the scene holds no preview."""
    from .rig_jobs import write_keys

    held = [(key, prev) for key, prev in previews.PREVIEWS.items() if key[0] == scene.name]
    if not held:
        raise ValueError("no Simulate Preview to record: run Simulate Preview (or drag the "
                         "rig) first")
    messages = []
    for key, prev in held:
        world = prev.world()
        previews.PREVIEWS.pop(key).restore()
        names, notes = write_keys(prev.job, Recorded(world, prev.job.rig.mechanism.fps))
        messages.append(f"Recorded {len(world)} frames into {', '.join(names)}"
                        + ("; " + "; ".join(notes) if notes else ""))
    scene.frame_set(scene.frame_current)
    return messages
