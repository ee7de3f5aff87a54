"""Collision shapes in a body's frame and the colliders of the world.

Every shape is a convex *core* swept by a sphere of ``radius`` (the radius is 0 for the
polytopes), which lets one narrow phase (:mod:`core.contacts.narrow`) handle all pairs:

* :class:`Sphere`: the core is a point (its centre);
* :class:`Capsule`: the core is a segment (the capsule's axis between its two end centres);
* :class:`Box`: the core is the box itself (8 vertices, 6 faces, 3 edge directions);
* :class:`ConvexHull`: the convex hull of a point set (scipy's Qhull), its coplanar facets
  merged into polygonal faces.

A shape's ``vertices (k, 3)``, face ``normals (f, 3)`` and ``offsets (f,)`` (face plane
``n . x = offset``, outward normals), ``faces`` (index arrays, counter-clockwise seen from
outside), ``edges (e, 2)`` and ``edge_dirs (d, 3)`` (unique edge directions; ``edge_dir_of
(e,)`` maps an edge to its direction) are in the frame of the body the shape is attached to.
``friction`` and ``restitution`` are None (take the other side's, see
:func:`core.contacts.solver.pair_material`) or numbers.

Colliders of the world: :class:`Plane` (a half space), :class:`StaticCollider` (a shape at a
fixed pose, which may carry a uniform scale) and :class:`MovingCollider` (a shape following
a pose function of time). A collider given a ``group`` leaves the bodies of that group alone
(:class:`core.contacts.ContactSolver`'s ``groups``: the shape of one rig's animated bone meets
the other rigs only).
"""

import numpy as np
import scipy.spatial

from ..errors import InvalidInputError
from ..lie import se3

__all__ = ["Shape", "Sphere", "Capsule", "Box", "ConvexHull", "Plane", "StaticCollider",
           "MovingCollider", "placement_scale", "MAX_HULL_POINTS"]

#: two edge directions closer than this (|cross| of unit vectors) are the same direction;
#: two facet normals of a hull closer than this are one face
PARALLEL_TOL = 1e-9
#: the most points a convex hull is built from (a dense mesh's hull takes some 20 s there)
MAX_HULL_POINTS = 50_000


def _finite_points(points, name, count=None):
    p = np.asarray(points, dtype=float)
    if p.ndim != 2 or p.shape[1] != 3 or (count is not None and len(p) != count):
        want = f"({count}, 3)" if count else "(n, 3)"
        raise InvalidInputError(f"{name} must have shape {want}, got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise InvalidInputError(f"{name} contains NaN or inf; pass finite coordinates")
    return p


def _material(friction, restitution, what):
    if friction is not None:
        friction = float(friction)
        if not np.isfinite(friction) or friction < 0:
            raise InvalidInputError(f"{what}: friction must be a finite number >= 0 (or None "
                                    f"to take the other side's), got {friction}")
    if restitution is not None:
        restitution = float(restitution)
        if not 0.0 <= restitution <= 1.0:
            raise InvalidInputError(f"{what}: restitution must be in [0, 1] (or None to take "
                                    f"the other side's), got {restitution}")
    return friction, restitution


def _unique_directions(d):
    """Unit directions ``(m, 3)`` of ``d (e, 3)`` up to sign and the index of each row's: a
    row takes the first direction (in order of appearance) within ``PARALLEL_TOL ** 0.5`` of
    it (``|cross|``), or becomes a new one. The directions found so far are binned in a grid
    of cells twice that size, so each row is compared with the few in its cell's neighbours
    (of its own and of its opposite) instead of with all of them."""
    d = d / np.linalg.norm(d, axis=1, keepdims=True)
    tol = PARALLEL_TOL ** 0.5
    cell = 2.0 * tol
    dirs, of, grid = [], np.empty(len(d), dtype=int), {}
    offsets = [(i, j, k) for i in (-1, 0, 1) for j in (-1, 0, 1) for k in (-1, 0, 1)]
    for n, x in enumerate(d):
        near = set()
        for y in (x, -x):
            c = np.floor(y / cell).astype(np.int64).tolist()
            for o in offsets:
                near.update(grid.get((c[0] + o[0], c[1] + o[1], c[2] + o[2]), ()))
        for j in sorted(near):
            if np.linalg.norm(np.cross(x, dirs[j])) < tol:
                of[n] = j
                break
        else:
            of[n] = len(dirs)
            c = np.floor(x / cell).astype(np.int64).tolist()
            grid.setdefault((c[0], c[1], c[2]), []).append(len(dirs))
            dirs.append(x)
    return np.array(dirs).reshape(-1, 3), of


class Shape:
    """A convex core swept by a sphere of ``radius`` (module docstring); built by the
    subclasses. ``kind`` is "sphere", "capsule", "box" or "hull"; ``note`` says how the shape
    was made where the input was changed (a hull of a concave point set)."""

    kind = None

    def _set(self, vertices, radius, faces=(), friction=None, restitution=None, note=""):
        self.vertices = np.ascontiguousarray(vertices, dtype=float)
        self.radius = float(radius)
        self.faces = tuple(np.asarray(f, dtype=int) for f in faces)
        self.friction, self.restitution = _material(friction, restitution, self.kind)
        self.note = note
        v = self.vertices
        if self.faces:
            n = np.array([np.cross(v[f[1]] - v[f[0]], v[f[2]] - v[f[0]]) for f in self.faces])
            self.normals = n / np.linalg.norm(n, axis=1, keepdims=True)
            self.offsets = np.einsum("fk,fk->f", self.normals,
                                     np.array([v[f[0]] for f in self.faces]))
            edges = {tuple(sorted((int(f[k]), int(f[(k + 1) % len(f)]))))
                     for f in self.faces for k in range(len(f))}
            self.edges = np.array(sorted(edges), dtype=int)
        else:
            self.normals, self.offsets = np.zeros((0, 3)), np.zeros(0)
            self.edges = np.array([[0, 1]]) if len(v) == 2 else np.zeros((0, 2), dtype=int)
        if len(self.edges):
            self.edge_dirs, self.edge_dir_of = _unique_directions(
                v[self.edges[:, 1]] - v[self.edges[:, 0]])
        else:
            self.edge_dirs, self.edge_dir_of = np.zeros((0, 3)), np.zeros(0, dtype=int)
        #: a bound on the distance of any surface point from the core's first vertex
        self.extent = float(np.linalg.norm(v - v[0], axis=1).max()) + self.radius
        return self

    @property
    def polytope(self):
        """True for boxes and hulls (a core with faces)."""
        return bool(self.faces)

    def transformed(self, matrix):
        """This shape moved by ``matrix (4, 4)``: a rigid transform, optionally with a
        uniform positive scale (a Blender object's matrix); a box or hull also takes a
        non-uniform positive scale (it becomes the hull of its moved vertices). Raises
        InvalidInputError for a mirroring (negative) scale, a shear or a non-uniform scale
        of a sphere or capsule, saying what to do."""
        R, scale = placement_scale(matrix, f"the placement of a {self.kind}")
        A, p = np.asarray(matrix, dtype=float)[:3, :3], np.asarray(matrix, dtype=float)[:3, 3]
        if np.ptp(scale) > 1e-9 * scale.max():
            if not self.polytope:
                raise InvalidInputError(
                    f"a {self.kind} cannot take the non-uniform scale {scale.round(6).tolist()} "
                    "(it would become an ellipsoid); apply the scale to the object (Ctrl+A) "
                    "and use its convex hull, or scale it uniformly")
            return ConvexHull(self.vertices @ A.T + p, friction=self.friction,
                              restitution=self.restitution)
        s = float(scale[0])
        out = object.__new__(type(self))
        out._set(self.vertices @ (s * R).T + p, s * self.radius, self.faces, self.friction,
                 self.restitution, self.note)
        return out


def placement_scale(matrix, what):
    """``(R (3, 3), scale (3,))`` of an affine ``matrix (4, 4) = [R diag(scale), p]``
    (columns of the linear part orthogonal, scale > 0); raises InvalidInputError for a
    non-finite matrix, a last row other than [0, 0, 0, 1], a mirroring (negative) or zero
    scale, or a shear."""
    T = np.asarray(matrix, dtype=float)
    if T.shape != (4, 4):
        raise InvalidInputError(f"{what} must be a (4, 4) matrix, got shape {T.shape}")
    if not np.all(np.isfinite(T)):
        raise InvalidInputError(f"{what} holds NaN or inf (a broken object transform, e.g. a "
                                "zero scale inverted or a driver's result): fix the object's "
                                "location, rotation and scale")
    if np.abs(T[3] - [0.0, 0.0, 0.0, 1.0]).max() > 1e-9:
        raise InvalidInputError(f"{what}: the last row must be [0, 0, 0, 1]")
    A = T[:3, :3]
    scale = np.linalg.norm(A, axis=0)
    det = np.linalg.det(A)
    if det <= 0.0 or scale.min() <= 1e-12 * max(scale.max(), 1e-300):
        raise InvalidInputError(
            f"{what} has a negative (mirroring) or zero scale (determinant {det:.3g}); a "
            "collider must keep its handedness: apply the scale to the object (Ctrl+A) or "
            "make every scale component positive")
    R = A / scale
    if np.abs(R.T @ R - np.eye(3)).max() > 1e-6:
        raise InvalidInputError(f"{what} has a shear (its axes are not orthogonal); apply the "
                                "transform to the object (Ctrl+A) first")
    return R, scale


class Sphere(Shape):
    """Sphere of ``radius`` (m, > 0) about ``center (3,)`` in the body frame."""

    kind = "sphere"

    def __init__(self, radius, center=(0.0, 0.0, 0.0), friction=None, restitution=None):
        radius = float(radius)
        if not np.isfinite(radius) or radius <= 0.0:
            raise InvalidInputError(f"a sphere needs a radius > 0 (m), got {radius}")
        self._set(_finite_points([center], "center", 1), radius, friction=friction,
                  restitution=restitution)


class Capsule(Shape):
    """Capsule of ``radius`` (m, > 0) around the segment from ``start (3,)`` to ``end (3,)``
    in the body frame (the centres of its two end caps)."""

    kind = "capsule"

    def __init__(self, radius, start, end, friction=None, restitution=None):
        radius = float(radius)
        if not np.isfinite(radius) or radius <= 0.0:
            raise InvalidInputError(f"a capsule needs a radius > 0 (m), got {radius}; a "
                                    "zero-radius capsule is a line that nothing can touch")
        ends = _finite_points([start, end], "capsule ends", 2)
        if np.linalg.norm(ends[1] - ends[0]) <= 1e-12 * max(1.0, np.abs(ends).max()):
            raise InvalidInputError("a capsule needs two distinct end points; for equal ends "
                                    "use a Sphere")
        self._set(ends, radius, friction=friction, restitution=restitution)


#: the box's faces, counter-clockwise seen from outside (corner k = 4 i + 2 j + l at
#: ``(+-hx, +-hy, +-hz)`` with i, j, l = 0 for the minus sign)
_BOX_FACES = ((0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4),
              (1, 5, 7, 3))


class Box(Shape):
    """Box of ``half_extents (3,)`` (m, > 0) centred at the origin of ``pose (4, 4)`` (rigid,
    in the body frame; identity if None), its edges along the pose's axes."""

    kind = "box"

    def __init__(self, half_extents, pose=None, friction=None, restitution=None):
        h = np.asarray(half_extents, dtype=float)
        if h.shape != (3,) or not np.all(np.isfinite(h)) or h.min() <= 0.0:
            raise InvalidInputError(f"a box needs 3 half extents > 0 (m), got {half_extents!r}")
        T = np.eye(4) if pose is None else se3.check_transform(pose, "box pose")
        corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * h
        self._set(corners @ T[:3, :3].T + T[:3, 3], 0.0, _BOX_FACES, friction, restitution)


class ConvexHull(Shape):
    """The convex hull of ``points (n, 3)`` (n >= 4, not all in one plane) in the body frame,
    built with :class:`scipy.spatial.ConvexHull`. A point set that is not convex (points
    strictly inside its hull, e.g. a concave mesh) is accepted as its hull; ``note`` and
    ``inside`` (the number of such points) say so."""

    kind = "hull"

    def __init__(self, points, friction=None, restitution=None):
        p = _finite_points(points, "hull points")
        if len(p) < 4:
            raise InvalidInputError(f"a convex hull needs at least 4 points, got {len(p)}")
        if len(p) > MAX_HULL_POINTS:
            raise InvalidInputError(
                f"a convex hull is built from at most {MAX_HULL_POINTS} points, got {len(p)}: "
                "decimate the collider mesh (Blender's Decimate modifier, applied) or use a "
                "simpler shape")
        try:
            hull = scipy.spatial.ConvexHull(p)
        except scipy.spatial.QhullError as err:
            raise InvalidInputError(
                "the hull points are (nearly) in one plane or on one line, which encloses no "
                f"volume (Qhull: {str(err).splitlines()[0]}); use a thin Box or more points"
            ) from None
        verts = hull.vertices
        index = {int(k): i for i, k in enumerate(verts)}
        scale = max(float(np.ptp(p, axis=0).max()), 1e-300)
        faces, done = [], np.zeros(len(hull.simplices), dtype=bool)
        eq = hull.equations
        for s in range(len(hull.simplices)):
            if done[s]:
                continue
            same = _coplanar_facets(hull, s, scale)
            done[same] = True
            ids = np.unique(hull.simplices[same])
            n = eq[s, :3]
            c = p[ids].mean(axis=0)
            u = p[ids[0]] - c
            u /= np.linalg.norm(u)
            w = np.cross(n, u)
            order = np.argsort(np.arctan2((p[ids] - c) @ w, (p[ids] - c) @ u))
            faces.append([index[int(k)] for k in ids[order]])
        # points on the hull's surface but not its corners are not inside the hull; the
        # corners are on it (the distances of the others are taken in blocks of rows)
        rest = np.setdiff1d(np.arange(len(p)), verts)
        block = max(1, 2 ** 22 // len(eq))
        self.inside = sum(int(np.sum((p[rest[k:k + block]] @ eq[:, :3].T + eq[:, 3]).max(axis=1)
                                     < -1e-9 * scale)) for k in range(0, len(rest), block))
        note = "" if self.inside == 0 else (
            f"the point set is not convex: {self.inside} of its {len(p)} points lie inside "
            f"its convex hull, which is used as the collider ({len(verts)} corners)")
        self._set(p[verts], 0.0, faces, friction, restitution, note)


def _coplanar_facets(hull, s, scale):
    """Indices of the facets of ``hull`` (a scipy ConvexHull) in the plane of facet ``s``
    (normals and offsets within ``PARALLEL_TOL ** 0.5``): those reached from ``s`` through
    neighbouring facets in that plane. The facets of one plane of a convex hull are one
    connected polygon, so this is every facet in the plane, found in time proportional to
    their number."""
    eq = hull.equations
    tol = PARALLEL_TOL ** 0.5

    def coplanar(t):
        return abs(eq[t, :3] @ eq[s, :3] - 1.0) < tol and abs(eq[t, 3] - eq[s, 3]) < tol * scale

    found, todo = {s}, [s]
    while todo:
        for t in hull.neighbors[todo.pop()].tolist():
            if t not in found and coplanar(t):
                found.add(t)
                todo.append(t)
    return np.array(sorted(found))


class Plane:
    """The half space ``normal . x >= height`` of the world (``normal (3,)`` normalized;
    for the default normal +z, ``height`` is the ground's z in metres), with its
    ``friction`` (>= 0) and ``restitution`` ([0, 1]) or None (take the body's)."""

    kind = "plane"

    def __init__(self, height=0.0, normal=(0.0, 0.0, 1.0), friction=None, restitution=None):
        n = np.asarray(normal, dtype=float)
        if n.shape != (3,) or not np.all(np.isfinite(n)) or np.linalg.norm(n) < 1e-12:
            raise InvalidInputError(f"plane normal must be 3 finite numbers, not all zero, got "
                                    f"{normal!r}")
        self.normal = n / np.linalg.norm(n)
        self.height = float(height)
        if not np.isfinite(self.height):
            raise InvalidInputError(f"plane height must be finite, got {height}")
        self.friction, self.restitution = _material(friction, restitution, "plane")


class StaticCollider:
    """A shape fixed in the world at ``pose (4, 4)`` (a rigid transform, optionally with the
    scales :meth:`Shape.transformed` accepts); ``shape`` holds the moved shape. group: None,
    or the group whose bodies it leaves alone (module docstring)."""

    def __init__(self, shape, pose=None, group=None):
        if not isinstance(shape, Shape):
            raise InvalidInputError(f"a static collider needs a Shape, got "
                                    f"{type(shape).__name__}")
        self.shape = shape if pose is None else shape.transformed(pose)
        self.group = group


class MovingCollider:
    """A shape (in its own frame) moved by ``motion(t) -> (4, 4)`` rigid poses of time t
    (seconds): a kinematic body that pushes the model's bodies but is not pushed. Its point
    velocities are central differences of the motion over ``2 dt_velocity`` seconds. group:
    None, or the group whose bodies it leaves alone (module docstring)."""

    def __init__(self, shape, motion, dt_velocity=1e-4, group=None):
        if not isinstance(shape, Shape):
            raise InvalidInputError(f"a moving collider needs a Shape, got "
                                    f"{type(shape).__name__}")
        if not callable(motion):
            raise InvalidInputError("motion must be a callable t -> (4, 4) pose")
        self.shape, self.motion, self.group = shape, motion, group
        self.dt_velocity = float(dt_velocity)
        if not self.dt_velocity > 0.0:
            raise InvalidInputError(f"dt_velocity must be > 0 (s), got {dt_velocity}")

    def pose(self, t):
        """The rigid pose ``(4, 4)`` at time t (checked)."""
        return se3.check_transform(self.motion(float(t)), f"moving collider pose at t = {t}")

    def point_velocities(self, t, points):
        """World velocities ``(k, 3)`` of the collider's material points at ``points (k, 3)``
        (world) at time t."""
        T0 = se3.inv(self.pose(t))
        d = self.dt_velocity
        ahead = self.pose(t + d) @ T0
        back = self.pose(t - d) @ T0
        return (points @ (ahead[:3, :3] - back[:3, :3]).T + ahead[:3, 3] - back[:3, 3]) / (2 * d)
