"""An OpenSim model as an armature, without Blender: bone rest frames, where each geometry sits
on its bone, the coordinates a pose is computed from, and the basis matrices that pose every
bone at its body.

Frames. Armature space is OpenSim's ground frame (metres, Y up; the add-on turns the armature
object +90 deg about X so that Y points up in Blender). Every body but ground is one bone named
as the body, parented to its parent body's bone (a child of ground has no parent bone); ground
is the armature object itself, so its geometry is parented to the object.

A bone's rest frame ``R_b`` (4, 4) in armature space has its head at the body origin in the
model's default pose ``B_b(q0)``, its Y axis (the bone's direction) towards its tail and its X
axis as close to the body's x axis as that allows. The tail points to the origin of the first
child joint's child frame in the default pose (where the child body hangs; a knee whose
translation is a function of the angle keeps its parent frame at the femur's origin, its child
frame at the tibia) when that is at least :data:`MIN_BONE_LENGTH` away; otherwise along the
body's y axis, as long as the body's geometry is large (:data:`DEFAULT_BONE_LENGTH` without
geometry). The offset between a body and its bone, ``B_b(q0)^-1 R_b``, never changes, so at
coordinates q the bone's pose in armature space is

    P_b(q) = B_b(q) B_b(q0)^-1 R_b,

and a geometry at pose ``G`` in its body sits at ``R_b^-1 B_b(q0) G`` in the bone's rest frame.

Basis matrices: with Blender's default bone inheritance (not connected, inherit rotation, full
inherit scale, local location) a pose bone's armature-space matrix is
``P_b = P_p R_p^-1 R_b M_b`` for a parent bone p (``P_b = R_b M_b`` for a root), so its
``matrix_basis`` is ``M_b = R_b^-1 R_p P_p^-1 P_b`` (:func:`pose_bases`).
"""

from __future__ import annotations

import collections
import math
import os
from dataclasses import dataclass, field

import numpy as np

from . import display
from .errors import InvalidInputError
from .lie import se3

__all__ = ["MIN_BONE_LENGTH", "DEFAULT_BONE_LENGTH", "PRIMITIVE_KINDS", "OsimRig",
           "geometry_transform", "geometry_extent", "primitive_mesh", "pose_bases",
           "coordinate_property", "motion_frames", "motion_rate", "trial_frames", "keying_rate",
           "summarize_skipped", "GeometryItem", "MarkerItem", "OsimImport", "read_osim_import",
           "MuscleSimulation", "simulate_muscles"]

#: shortest bone (m): a tail target closer than this is not used, a body's extent is raised to it
MIN_BONE_LENGTH = 0.01
#: length (m) of a bone along its body's y axis when the body has no geometry to measure
DEFAULT_BONE_LENGTH = 0.05
#: OpenSim's analytic geometry drawn as meshes of their sizes (a Cone is drawn as a placeholder)
PRIMITIVE_KINDS = ("Sphere", "Cylinder", "Brick", "Ellipsoid")


def geometry_transform(geometry) -> np.ndarray:
    """Pose times scale of a geometry in its body, ``(4, 4)``: its vertices (in the geometry's
    own frame) map into the body frame by it."""
    return np.asarray(geometry.pose, dtype=float) @ np.diag([*np.asarray(geometry.scale, float), 1.0])


def geometry_extent(vertices, geometry) -> tuple[np.ndarray, np.ndarray]:
    """Bounding box ``(lo (3,), hi (3,))`` in the body frame of a geometry's vertices (V, 3)."""
    v = np.asarray(vertices, dtype=float).reshape(-1, 3)
    if not len(v):
        return np.zeros(3), np.zeros(3)
    T = geometry_transform(geometry)
    v = v @ T[:3, :3].T + T[:3, 3]
    return v.min(axis=0), v.max(axis=0)


def primitive_mesh(geometry):
    """``(vertices (V, 3), faces)`` of a Sphere, Cylinder, Brick or Ellipsoid with OpenSim's sizes
    (radius; radius and half_height along y; half_lengths; radii) in the geometry's frame."""
    dims = {k: [float(x) for x in v] for k, v in geometry.dimensions.items()}
    kind = geometry.kind
    if kind == "Sphere":
        return display.uv_sphere(np.full(3, dims.get("radius", [0.05])[0]))
    if kind == "Ellipsoid":
        return display.uv_sphere(np.array((dims.get("radii", []) + [0.05] * 3)[:3]))
    if kind == "Cylinder":
        return display.cylinder(dims.get("radius", [0.05])[0],
                                2.0 * dims.get("half_height", [0.05])[0], axis=1, n=24)
    if kind == "Brick":
        return display.box(2.0 * np.array((dims.get("half_lengths", []) + [0.05] * 3)[:3]))
    raise InvalidInputError(f"geometry {geometry.name!r}: {kind} is not one of the drawn "
                            f"primitives {PRIMITIVE_KINDS}")


def _frame_along(direction, x_hint) -> np.ndarray:
    """Rotation (3, 3) whose Y column is ``direction`` (unit) and whose X column is the part of
    ``x_hint`` normal to it (another body axis when x_hint is parallel)."""
    y = direction / np.linalg.norm(direction)
    for hint in (x_hint, np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0])):
        x = hint - (hint @ y) * y
        if np.linalg.norm(x) > 1e-6:
            break
    x /= np.linalg.norm(x)
    return np.column_stack([x, y, np.cross(x, y)])


class OsimRig:
    """The armature of an :class:`core.io.osim.OsimModel` (see the module docstring).

    Attributes: model; bodies (tuple of the bones' body names, parents first); parents
    ((nb,) int array, index of each bone's parent bone, -1 for children of ground);
    default_poses ((nb, 4, 4) body poses B_b(q0) in ground); coordinate_names.

    reference: the model whose default pose the bones' rest frames were laid out from, when
    it is not ``model`` itself (the imported model, for a rig whose joints were replaced by
    fitted ones: :func:`core.fitting.osim.model_with_fits`). The default poses are then the
    reference's, so a body of ``model`` sits at ``B_b(q)`` exactly (``P_b(q) R_b^-1 B_b(q0)``
    with the reference's B_b(q0)), not at ``B_b(q)`` composed with the small offset between
    the two models' default poses. The reference must have the same bodies.
    """

    def __init__(self, model, reference=None):
        self.model = model
        self.bodies = tuple(j.child for j in model.joints)
        index = {b: i for i, b in enumerate(self.bodies)}
        self.parents = np.array([index.get(j.parent, -1) for j in model.joints], dtype=int)
        poses = (model if reference is None else reference).body_poses()
        self.default_poses = np.stack([poses[b] for b in self.bodies]) if self.bodies \
            else np.zeros((0, 4, 4))
        self._inverse_defaults = se3.inv(self.default_poses)
        self.coordinate_names = model.coordinate_names

    # ---------------------------------------------------------------- rest frames
    def rest_frames(self, extents) -> tuple[np.ndarray, np.ndarray]:
        """Rest frames ``R (nb, 4, 4)`` in armature space and bone lengths ``(nb,)`` (m).

        extents: ``{body name: largest size (m) of its geometry}`` for the bodies that have
        geometry (the fallback length of a bone without a child joint to point at).
        """
        rests, lengths = [], []
        for i, body in enumerate(self.bodies):
            B = self.default_poses[i]
            head = B[:3, 3]
            direction, length = None, 0.0
            for j in self.model.joints:
                if j.parent != body:
                    continue
                child = self.default_poses[self.bodies.index(j.child)]
                M = child @ j.child_offset  # the joint's child frame in ground at q0
                offset = M[:3, 3] - head
                if np.linalg.norm(offset) >= MIN_BONE_LENGTH:
                    direction, length = offset, float(np.linalg.norm(offset))
                break
            if direction is None:
                direction = B[:3, 1]
                length = max(float(extents.get(body, DEFAULT_BONE_LENGTH)), MIN_BONE_LENGTH)
            R = np.eye(4)
            R[:3, :3] = _frame_along(direction, B[:3, 0])
            R[:3, 3] = head
            rests.append(R)
            lengths.append(length)
        return (np.stack(rests) if rests else np.zeros((0, 4, 4))), np.array(lengths)

    def body_in_bone(self, body: str, rest) -> np.ndarray:
        """``R_b^-1 B_b(q0)`` (4, 4): the frame of ``body`` in its bone's rest frame ``rest``
        (4, 4); the identity for ground (what hangs on ground hangs on the armature object,
        whose space is ground)."""
        if body not in self.bodies:
            return np.eye(4)
        return se3.inv(rest) @ self.default_poses[self.bodies.index(body)]

    def geometry_in_bone(self, body: str, rest, geometry, scaled: bool = True) -> np.ndarray:
        """Pose and scale ``(4, 4)`` of a geometry of ``body`` in its bone's rest frame
        ``rest`` (4, 4), or in ground for a geometry of ground; scaled=False leaves the
        geometry's scale out (the pose alone)."""
        G = geometry_transform(geometry) if scaled else np.asarray(geometry.pose, dtype=float)
        return self.body_in_bone(body, rest) @ G

    def point_in_bone(self, body: str, rest, point) -> np.ndarray:
        """A point (3,) given in the frame of ``body``, in its bone's rest frame ``rest``
        (in ground for ground): where a marker of the body hangs on the bone."""
        T = self.body_in_bone(body, rest)
        return T[:3, :3] @ np.asarray(point, dtype=float) + T[:3, 3]

    def point_in_body(self, body: str, rest, point) -> np.ndarray:
        """The inverse of :meth:`point_in_bone`: a point (3,) in the rest frame of the bone of
        ``body`` (in ground for ground), in the body's frame."""
        T = self.body_in_bone(body, rest)
        return T[:3, :3].T @ (np.asarray(point, dtype=float) - T[:3, 3])

    # ---------------------------------------------------------------- posing
    def q(self, values) -> np.ndarray:
        """``(nq,)`` coordinates from values (nq,) in :attr:`coordinate_names` order, each
        enforced coordinate coupler's dependent coordinate set from its independent one (as
        OpenSim assembles the model)."""
        q = self.model.q_from(np.asarray(values, dtype=float))
        index = {n: i for i, n in enumerate(self.coordinate_names)}
        for c in self.model.couplers:
            if c.enforced:
                q[index[c.dependent]] = float(c.function.value(q[index[c.independent[0]]]))
        return q

    def bone_poses(self, rests, q) -> np.ndarray:
        """Bone poses ``P_b(q) = B_b(q) B_b(q0)^-1 R_b`` in armature space, ``(nb, 4, 4)``.

        rests: (nb, 4, 4) rigid rest frames in :attr:`bodies` order; q: (nq,)."""
        poses = self.model.body_poses(q)
        B = np.stack([poses[b] for b in self.bodies]) if self.bodies else np.zeros((0, 4, 4))
        return B @ self._inverse_defaults @ np.asarray(rests, dtype=float)

    def bases(self, rests, q) -> np.ndarray:
        """``matrix_basis`` of every bone at q, ``(nb, 4, 4)`` (:func:`pose_bases`)."""
        return pose_bases(self.parents, rests, self.bone_poses(rests, q))


def pose_bases(parents, rests, poses) -> np.ndarray:
    """Basis matrices ``M_b = R_b^-1 R_p P_p^-1 P_b`` (``R_b^-1 P_b`` for a root) that put
    bones at armature-space poses with Blender's default inheritance.

    parents: (nb,) parent index or -1; rests, poses: (nb, 4, 4) rigid. Returns (nb, 4, 4).
    """
    rests = np.asarray(rests, dtype=float)
    poses = np.asarray(poses, dtype=float)
    inv_rests = se3.inv(rests)
    out = inv_rests @ poses
    child = np.asarray(parents) >= 0
    p = np.asarray(parents)[child]
    out[child] = inv_rests[child] @ rests[p] @ se3.inv(poses[p]) @ poses[child]
    return out


def coordinate_property(coordinate) -> dict:
    """How an OpenSim coordinate is shown as a Blender float property: ``default``, hard
    ``min``/``max`` (clamped coordinates only), ``soft_min``/``soft_max`` (its range, when
    finite), ``subtype`` (ANGLE for rotational, DISTANCE for translational, NONE for coupled)
    and a one-line ``description`` in plain words."""
    c = coordinate
    rotational = c.motion_type == "rotational"
    unit, scale = ("rad", math.degrees) if rotational else ("m", float)
    shown = "deg" if rotational else "m"
    lo, hi = c.range
    out = {"default": float(c.default),
           "subtype": {"rotational": "ANGLE", "translational": "DISTANCE"}.get(c.motion_type, "NONE")}
    text = f"{c.name}: OpenSim coordinate ({unit if c.motion_type != 'coupled' else 'coupled'})"
    if math.isfinite(lo) and math.isfinite(hi):
        out["soft_min"], out["soft_max"] = float(lo), float(hi)
        if c.clamped:
            out["min"], out["max"] = float(lo), float(hi)
        text += f", range {scale(lo):.4g}..{scale(hi):.4g} {shown}"
        text += " (clamped)" if c.clamped else ""
    if c.locked:
        text += ", locked in OpenSim at its default"
    out["description"] = text
    return out


def motion_frames(time, fps: float, frame_start: int) -> np.ndarray:
    """Frame of every motion row, the first row on ``frame_start``:
    ``frame_start + round((time - time[0]) * fps)``, ``(N,)`` int (importing the same motion
    again keys the same frames)."""
    t = np.asarray(time, dtype=float)
    return frame_start + np.rint((t - t[0]) * fps).astype(int)


@dataclass(frozen=True, eq=False)
class MuscleSimulation:
    """What :func:`simulate_muscles` did: ``status`` (``"completed"`` or ``"cancelled"``, then
    no frames), ``q`` (N, nq) the model's coordinates at the simulated times (``q[0] = q0``),
    ``steps`` (RK4 steps taken) and ``wall_time`` (s)."""

    status: str
    q: np.ndarray
    steps: int
    wall_time: float


def simulate_muscles(model, q0, times, activations, max_step=5e-3, progress=None):
    """Forward simulation of an imported model (:class:`core.io.osim.OsimModel`) moved by its
    muscles' rigid-tendon forces and gravity from ``q0`` (nq,) at rest, the coordinates the
    file locks held, over ``times`` (N,) (s, uniform); returns a :class:`MuscleSimulation`.

    activations: ``{muscle: number or (times, values)}`` in [0, 1] (piecewise linear; a
    muscle not named is relaxed, its passive force still acting). RK4 with the largest step
    at most ``max_step`` (s) that divides the frame interval (arm26's biceps at 0.3: 5 ms
    steps follow 1 ms steps within 1e-4 rad), stepped by :func:`core.integrators.simulate`
    with the muscle forces as its ``tau``. progress: None or ``fraction -> bool`` called after
    every frame; False cancels (status ``"cancelled"``, no frames). InvalidInputError names a
    muscle the model does not have, an activation outside [0, 1] or a bad parameter, before
    anything is simulated."""
    from .integrators import simulate
    from .muscles.actuation import osim_muscle_forces

    t = np.asarray(times, dtype=float)
    steps = np.diff(t)
    if len(t) < 2 or not np.all(steps > 0.0) or np.ptp(steps) > 1e-9 * steps[0]:
        raise InvalidInputError("simulate over at least two frames at a steady rate")
    per_frame = max(int(math.ceil(steps[0] / max_step - 1e-9)), 1)
    dt = steps[0] / per_frame
    core, names = model.to_core_model()
    duration = float(t[-1] - t[0])
    controls = {n: (c if np.isscalar(c) else (np.asarray(c[0], float) - t[0], c[1]))
                for n, c in activations.items()}
    forces = osim_muscle_forces(model, names, dt, duration, controls)
    q0 = model.q_from(q0)
    index = [model.coordinate_names.index(n) for n in names]
    trajectory = simulate(core, q0[index], np.zeros(core.nv), dt, per_frame * (len(t) - 1),
                          "rk4", tau=forces, record_every=per_frame, check_energy=False,
                          progress=progress)
    q = np.repeat(q0[None, :], len(trajectory.q), axis=0)
    q[:, index] = trajectory.q
    return MuscleSimulation(trajectory.status, q, trajectory.steps, trajectory.wall_time)


def trial_frames(numbers, rate: float, fps: float, frame_start: int) -> np.ndarray:
    """Scene frame of every row of a recording kept whole (a marker trial), from its frame
    ``numbers (N,)`` sampled at ``rate`` (Hz), the first row on ``frame_start``:
    ``frame_start + (numbers - numbers[0]) * fps / rate``, ``(N,)`` float, a frame within 1e-6
    of a whole number made whole. Rows between frames are keyed there: no row is dropped.
    (The frame numbers, not a time column that files round to the millisecond, so a trial
    keyed at its own rate lands on whole frames.)"""
    n = np.asarray(numbers, dtype=float)
    frames = frame_start + (n - n[0]) * (fps / rate)
    whole = np.rint(frames)
    return np.where(np.abs(frames - whole) <= 1e-6, whole, frames)


def keying_rate(scene_fps: int, scene_fps_base: float, rate: float | None):
    """(fps, fps_base, frames per second) to key a recording with: its own ``rate`` (Hz; an
    integer fps when the rate is one to 1 ppm, the time steps' round-off; else with the base
    making it exact) or, for None, the scene's ``scene_fps / scene_fps_base``."""
    if rate is None:
        return scene_fps, scene_fps_base, scene_fps / scene_fps_base
    fps = int(min(max(round(rate), 1), 32767))
    if abs(rate - fps) <= 1e-6 * rate:
        return fps, 1.0, float(fps)
    return fps, fps / rate, float(rate)


def summarize_skipped(skipped) -> str:
    """``"92 Thelen2003Muscle, 3 Marker"``: the reader's skipped items counted by type, most
    first ("" when nothing was skipped)."""
    counts = collections.Counter(s.split()[0] for s in skipped if s.strip())
    return ", ".join(f"{n} {kind}" for kind, n in counts.most_common())


def motion_rate(time) -> float:
    """Rows per second of a motion sampled at a steady rate: 1 / the median time step;
    InvalidInputError for fewer than two rows or times that do not increase."""
    t = np.asarray(time, dtype=float)
    steps = np.diff(t)
    if len(t) < 2 or not np.all(steps > 0.0):
        raise InvalidInputError("the motion needs at least two rows at increasing times to "
                                "give a frame rate; keep the scene's rate instead")
    return float(1.0 / np.median(steps))


# ----------------------------------------------------------------------------- the import
@dataclass(frozen=True, eq=False)
class GeometryItem:
    """One thing drawn on a body: ``body`` (a bone's body, or ground), ``geometry`` (the
    model's OsimGeometry), ``status`` (``"mesh"``: a mesh file read; ``"primitive"``: an
    analytic shape as a mesh; ``"missing"``: a mesh file not found; ``"unsupported"``: a shape
    not drawn), ``mesh_key`` (key of :attr:`OsimImport.meshes`, "" for placeholders) and
    ``placement`` (4, 4): its pose and scale in the bone's rest frame (in ground for ground's
    geometry); a placeholder's placement has no scale."""

    body: str
    geometry: object
    status: str
    mesh_key: str
    placement: np.ndarray

    @property
    def label(self) -> str:
        """The object name: the mesh file's stem, the shape's name, or the placeholder's
        ``"<mesh_file> (missing)"`` / ``"<name> (<kind> not drawn)"``."""
        g = self.geometry
        if self.status == "mesh":
            return os.path.splitext(os.path.basename(g.mesh_file))[0]
        if self.status == "missing":
            return f"{g.mesh_file} (missing)"
        if self.status == "unsupported":
            return f"{g.name} ({g.kind} not drawn)"
        return g.name


@dataclass(frozen=True, eq=False)
class MarkerItem:
    """A model marker as the armature shows it: ``marker`` (core.io.markers.Marker) and
    ``placement`` (3,), its location in its body's bone rest frame (in ground for a marker on
    ground), where its sphere hangs on the bone."""

    marker: object
    placement: np.ndarray


@dataclass(frozen=True, eq=False)
class OsimImport:
    """Everything the add-on writes for one imported model, computed before any of it is.

    text: the .osim file's text (the model is parsed from it, and stored with it); path;
    rig: :class:`OsimRig`; rests (nb, 4, 4) and lengths (nb,): the bones (module docstring);
    meshes: ``{key: (vertices (V, 3), faces)}``, one entry per mesh file (shared by all its
    uses) or primitive; items: the :class:`GeometryItem` of every geometry, bodies in model
    order; missing: the mesh files not found (in order, without repeats); markers: a
    :class:`MarkerItem` per model marker, in the model's order.
    """

    text: str
    path: str
    rig: OsimRig
    rests: np.ndarray
    lengths: np.ndarray
    meshes: dict = field(default_factory=dict)
    items: tuple = ()
    missing: tuple = ()
    markers: tuple = ()

    @property
    def mesh_files(self) -> int:
        """How many distinct mesh files were read."""
        return sum(1 for k in self.meshes if not k.startswith("primitive:"))

    def summary(self) -> str:
        """One line on what is imported: bodies, coordinates, meshes found and missing,
        muscles, wrap surfaces and markers, what the file holds that is not imported, and the
        reader's notes."""
        m = self.rig.model
        counts = collections.Counter(i.status for i in self.items)
        text = (f"Imported '{m.name}': {len(self.rig.bodies)} bodies as bones, {m.nq} "
                f"coordinates, {counts['mesh']} meshes from {self.mesh_files} files")
        if counts["primitive"]:
            text += f", {counts['primitive']} primitive shapes"
        if m.muscles:
            text += f", {len(m.muscles)} muscles"
        if m.wrap_objects:
            text += f", {len(m.wrap_objects)} wrap surfaces"
        if self.markers:
            text += f", {len(self.markers)} markers"
        if self.missing:
            shown = ", ".join(self.missing[:8]) + (f" and {len(self.missing) - 8} more"
                                                   if len(self.missing) > 8 else "")
            text += f"; {len(self.missing)} mesh files not found (placeholders): {shown}"
        if counts["unsupported"]:
            text += f"; {counts['unsupported']} shapes not drawn (placeholders)"
        hidden = sum(1 for i in self.items if not i.geometry.visible)
        if hidden:
            text += f"; {hidden} hidden as in OpenSim"
        skipped = summarize_skipped(m.skipped)
        if skipped:
            text += f"; not imported: {skipped}"
        if m.notes:
            text += "; notes: " + "; ".join(m.notes)
        return text


def _read_text(path: str) -> str:
    from .io.files import read_input

    data = read_input(path, "OpenSim model")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")  # every byte is a character: the parser sees the file as is


def read_osim_import(path, search=()) -> OsimImport:
    """Read an .osim file and every mesh it names, and lay out its armature.

    Mesh files are looked up as OpenSim does (:func:`core.io.osim.find_mesh_file`: beside
    the model, in its Geometry folder, then in ``search``); one that is not found becomes a
    placeholder listed in ``missing``, one that is found but cannot be read raises (as does a
    model the reader refuses): InvalidInputError naming the file.
    """
    from .io.osim import find_mesh_file, parse_osim
    from .io.vtp import read_vtp

    path = os.fspath(path)
    text = _read_text(path)
    rig = OsimRig(parse_osim(text, source=path))
    meshes, found, missing, pending = {}, {}, [], []
    extents = collections.defaultdict(lambda: (np.full(3, np.inf), np.full(3, -np.inf)))
    for body in rig.model.bodies.values():
        for g in body.geometry:
            if g.kind == "Mesh":
                if g.mesh_file not in found:
                    found[g.mesh_file] = find_mesh_file(g.mesh_file, path, tuple(search))
                file = found[g.mesh_file]
                if file is None:
                    if g.mesh_file not in missing:
                        missing.append(g.mesh_file)
                    pending.append((body.name, g, "missing", ""))
                    continue
                if file not in meshes:
                    mesh = read_vtp(file)
                    meshes[file] = (mesh.vertices, mesh.faces)
                key, status = file, "mesh"
            elif g.kind in PRIMITIVE_KINDS:
                key, status = f"primitive:{body.name}:{g.name}", "primitive"
                meshes[key] = primitive_mesh(g)
            else:
                pending.append((body.name, g, "unsupported", ""))
                continue
            lo, hi = geometry_extent(meshes[key][0], g)
            old = extents[body.name]
            extents[body.name] = (np.minimum(old[0], lo), np.maximum(old[1], hi))
            pending.append((body.name, g, status, key))
    sizes = {b: float(np.max(hi - lo)) for b, (lo, hi) in extents.items() if np.all(hi >= lo)}
    rests, lengths = rig.rest_frames(sizes)
    rest_of = dict(zip(rig.bodies, rests))
    items = tuple(GeometryItem(body, g, status, key,
                               rig.geometry_in_bone(body, rest_of.get(body, np.eye(4)), g,
                                                    scaled=status in ("mesh", "primitive")))
                  for body, g, status, key in pending)
    markers = tuple(MarkerItem(m, rig.point_in_bone(m.body, rest_of.get(m.body, np.eye(4)),
                                                    m.location))
                    for m in rig.model.markers.values())
    return OsimImport(text=text, path=os.path.abspath(path), rig=rig, rests=rests,
                      lengths=lengths, meshes=meshes, items=items, missing=tuple(missing),
                      markers=markers)
