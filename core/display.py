"""Display geometry for the add-on, computed without Blender: body meshes, deforming meshes as
shape keys, and the polylines that draw a joint's path.

Meshes are ``(vertices (V, 3), faces)`` in the body frame, faces as lists of 3 or 4 vertex
indices wound counter-clockwise seen from outside, so every closed mesh here has outward
normals. The hints and sizes of :func:`body_mesh` are those of
:class:`core.mechanisms.BodyDisplay`.
"""

from __future__ import annotations

import numpy as np

from .errors import InvalidInputError

__all__ = ["uv_sphere", "cylinder", "box", "lathe", "capsule", "cone", "helix", "plate",
           "airplane", "merge_meshes", "segment_frames", "body_mesh", "shape_key_modes",
           "joint_path", "frame_axes", "MAX_SHAPE_KEYS", "MODE_TOL"]

#: shape keys at most per deforming surface, and the singular value (relative to the largest)
#: below which a mode of its motion is dropped
MAX_SHAPE_KEYS = 12
MODE_TOL = 1e-7


def uv_sphere(radii, n_u: int = 16, n_v: int = 8):
    """Ellipsoid with semi-axes radii (3,) as a UV sphere: n_u meridians, n_v bands; quads
    plus a triangle fan at each pole. Returns vertices (2 + (n_v - 1) n_u, 3) and faces."""
    radii = np.asarray(radii, dtype=float)
    theta = np.linspace(0.0, np.pi, n_v + 1)[1:-1]
    phi = np.linspace(0.0, 2.0 * np.pi, n_u, endpoint=False)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    ring = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], axis=-1).reshape(-1, 3)
    verts = np.vstack([[0.0, 0.0, 1.0], ring, [0.0, 0.0, -1.0]]) * radii
    bottom = len(verts) - 1
    quads = []
    for i in range(n_v - 2):
        for j in range(n_u):
            k = (j + 1) % n_u
            a, b = 1 + i * n_u, 1 + (i + 1) * n_u
            quads.append([a + j, b + j, b + k, a + k])
    last = 1 + (n_v - 2) * n_u
    tris_top = [[0, 1 + j, 1 + (j + 1) % n_u] for j in range(n_u)]
    tris_bottom = [[bottom, last + (j + 1) % n_u, last + j] for j in range(n_u)]
    return verts, tris_top + quads + tris_bottom


def cylinder(radius: float, length: float, axis: int = 2, n: int = 16):
    """Closed cylinder (an n-gon prism) of the given radius and length centred on the origin
    along ``axis`` (0, 1, 2). Returns vertices (2n, 3) and faces (n quads and two n-gons)."""
    a = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    circle = np.column_stack([radius * np.cos(a), radius * np.sin(a)])
    verts = np.vstack([np.column_stack([circle, np.full(n, -0.5 * length)]),
                       np.column_stack([circle, np.full(n, 0.5 * length)])])
    faces = [[j, (j + 1) % n, n + (j + 1) % n, n + j] for j in range(n)]
    faces += [list(range(n - 1, -1, -1)), list(range(n, 2 * n))]
    return _along(verts, axis), faces


def box(extents):
    """Box with full extents (3,) (each at least 1e-4) centred on the origin. Returns
    vertices (8, 3) and 6 quads."""
    e = 0.5 * np.maximum(np.asarray(extents, dtype=float), 1e-4)
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)
    faces = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    return corners * e, faces


def _along(verts, axis: int):
    """Vertices (V, 3) built along z turned so that z runs along ``axis`` (0, 1, 2): the same
    cyclic permutation as :func:`cylinder` (a rotation, so windings stay outward)."""
    order = {2: [0, 1, 2], 0: [2, 0, 1], 1: [1, 2, 0]}[int(axis)]
    return np.asarray(verts, dtype=float)[:, order]


def lathe(profile, n: int = 16, axis: int = 2):
    """Solid of revolution: ``profile`` (K, 2) of (distance from the axis, height) points from
    the bottom pole to the top pole (first and last distance 0, the others > 0), turned about
    the axis in ``n`` steps. Returns vertices (2 + (K - 2) n, 3) and faces (triangle fans at
    the poles, quads between rings), closed and wound outwards (heights increasing along the
    profile's outer side)."""
    profile = np.asarray(profile, dtype=float)
    if profile.ndim != 2 or len(profile) < 3 or profile[0, 0] != 0 or profile[-1, 0] != 0:
        raise InvalidInputError("lathe: the profile needs >= 3 (rho, z) points starting and "
                                "ending on the axis (rho = 0)")
    a = np.linspace(0.0, 2.0 * np.pi, int(n), endpoint=False)
    rings = [np.column_stack([rho * np.cos(a), rho * np.sin(a), np.full(int(n), z)])
             for rho, z in profile[1:-1]]
    verts = np.vstack([[0.0, 0.0, profile[0, 1]], *rings, [0.0, 0.0, profile[-1, 1]]])
    top, m = len(verts) - 1, len(rings)
    faces = [[0, 1 + (j + 1) % n, 1 + j] for j in range(n)]
    for i in range(m - 1):
        lo, hi = 1 + i * n, 1 + (i + 1) * n
        faces += [[lo + j, lo + (j + 1) % n, hi + (j + 1) % n, hi + j] for j in range(n)]
    last = 1 + (m - 1) * n
    faces += [[top, last + j, last + (j + 1) % n] for j in range(n)]
    return _along(verts, axis), faces


def capsule(radius: float, length: float, axis: int = 2, n: int = 16, cap_rings: int = 4):
    """Capsule (a cylinder with hemispherical ends) of total length ``max(length, 2 radius)``
    centred on the origin along ``axis``: a :func:`lathe` of ``cap_rings`` rings per end."""
    half = 0.5 * max(float(length), 2.0 * radius) - radius
    t = np.linspace(0.0, 0.5 * np.pi, int(cap_rings) + 1)[1:]
    bottom = [(radius * np.sin(x), -half - radius * np.cos(x)) for x in t]
    top = [(radius * np.sin(x), half + radius * np.cos(x)) for x in t[::-1]]
    if half <= 0.0:
        top = top[1:]                   # a sphere: one equator ring
    return lathe([(0.0, -half - radius), *bottom, *top, (0.0, half + radius)], n, axis)


def cone(half_angle: float, length: float, axis: int = 2, n: int = 32):
    """Closed circular cone with its apex at the origin opening along +``axis`` with
    ``half_angle`` (rad, < pi/2) up to ``length``: vertices (n + 2, 3) and faces."""
    if not 0.0 < half_angle < 0.5 * np.pi or not length > 0.0:
        raise InvalidInputError(f"cone: need 0 < half_angle < pi/2 and length > 0, got "
                                f"{half_angle}, {length}")
    return lathe([(0.0, 0.0), (length * np.tan(half_angle), length), (0.0, length)], n, axis)


def helix(coil_radius: float, wire_radius: float, turns: float, length: float = 1.0,
          steps_per_turn: int = 12, sides: int = 6):
    """A coil spring from the origin to ``(0, 0, length)``: a tube of ``wire_radius`` around
    ``turns`` turns of a helix of ``coil_radius`` about z, capped at both ends. The tube is
    built for length 1 and stretched along z, so the vertices are linear in ``length``
    (``helix(..., L) = diag(1, 1, L) helix(..., 1)``: one shape key spans every length).
    Returns vertices ((K + 1) sides, 3) and faces."""
    k = max(int(np.ceil(turns * steps_per_turn)), 2)
    s = np.linspace(0.0, 1.0, k + 1)
    th = 2.0 * np.pi * turns * s
    centre = np.column_stack([coil_radius * np.cos(th), coil_radius * np.sin(th), s])
    tangent = np.column_stack([-coil_radius * 2 * np.pi * turns * np.sin(th),
                               coil_radius * 2 * np.pi * turns * np.cos(th), np.ones_like(s)])
    tangent /= np.linalg.norm(tangent, axis=1, keepdims=True)
    normal = np.column_stack([np.cos(th), np.sin(th), np.zeros_like(s)])  # towards the outside
    binormal = np.cross(tangent, normal)
    a = np.linspace(0.0, 2.0 * np.pi, int(sides), endpoint=False)
    ring = (np.cos(a)[None, :, None] * normal[:, None] + np.sin(a)[None, :, None] * binormal[:, None])
    verts = (centre[:, None] + wire_radius * ring).reshape(-1, 3)
    m = int(sides)
    faces = [[i * m + j, i * m + (j + 1) % m, (i + 1) * m + (j + 1) % m, (i + 1) * m + j]
             for i in range(k) for j in range(m)]
    faces += [list(range(m - 1, -1, -1)), list(range(k * m, (k + 1) * m))]
    verts[:, 2] *= float(length)
    return verts, faces


def plate(outline, extents, axis: int = 2):
    """A flat plate: the polygon ``outline`` (K, 2) (counter-clockwise, any scale) fitted to
    the full extents ``(x, y)`` of ``extents`` and extruded symmetrically to the thickness
    ``extents[2]`` along z (then turned to ``axis``). Returns vertices (2K, 3) and faces (two
    K-gons and K quads, wound outwards)."""
    p = np.asarray(outline, dtype=float)
    lo, hi = p.min(axis=0), p.max(axis=0)
    p = (p - 0.5 * (lo + hi)) / np.maximum(hi - lo, 1e-12) * np.asarray(extents[:2], dtype=float)
    k, h = len(p), 0.5 * max(float(extents[2]), 1e-4)
    verts = np.vstack([np.column_stack([p, np.full(k, -h)]), np.column_stack([p, np.full(k, h)])])
    faces = [list(range(k - 1, -1, -1)), list(range(k, 2 * k))]
    faces += [[j, (j + 1) % k, k + (j + 1) % k, k + j] for j in range(k)]
    return _along(verts, axis), faces


def merge_meshes(*meshes):
    """One mesh from several ``(vertices, faces)``: vertices stacked, faces renumbered."""
    verts, faces, base = [], [], 0
    for v, f in meshes:
        verts.append(np.asarray(v, dtype=float).reshape(-1, 3))
        faces += [[base + int(i) for i in face] for face in f]
        base += len(verts[-1])
    return np.vstack(verts), faces


def _moved(mesh, p):
    return np.asarray(mesh[0], dtype=float) + np.asarray(p, dtype=float), mesh[1]


def airplane(extents, n: int = 6):
    """A small aircraft of full extents ``(length, span, height)``: nose along +x, wings along
    y, fin up +z, a few dozen faces (a fuselage of revolution with ``n`` sides, wings, a
    tailplane and a fin), centred on the origin along x and y with the fuselage's axis at
    z = 0."""
    L, S, H = (float(e) for e in extents)
    r = 0.09 * L
    fuselage = lathe([(0.0, -0.5 * L), (0.6 * r, -0.42 * L), (r, -0.1 * L), (r, 0.3 * L),
                      (0.0, 0.5 * L)], n, axis=0)
    wing = _moved(plate([(-0.5, -1), (0.5, -1), (1.2, 0), (0.5, 1), (-0.5, 1), (0.2, 0)],
                        (0.22 * L, S, 0.25 * r)), (0.05 * L, 0.0, 0.0))
    tailplane = _moved(box((0.12 * L, 0.38 * S, 0.2 * r)), (-0.42 * L, 0.0, 0.0))
    fin = plate([(0, 0), (1, 0), (0.2, 1), (0, 1)], (0.16 * L, H - r, 0.2 * r))
    fin = _moved((fin[0][:, [0, 2, 1]] * [1, -1, 1], fin[1]),  # turned +90 deg about x: in x-z
                 (-0.42 * L, 0.0, 0.5 * (H - r)))
    return merge_meshes(fuselage, wing, tailplane, fin)


def segment_frames(p0, p1):
    """Frames ``(F, 4, 4)`` at ``p0`` (F, 3) with z towards ``p1`` (F, 3) (any x orthogonal to
    it, continuous in the direction), and the lengths ``|p1 - p0|`` (F,): the pose and length
    of a straight element, such as a :func:`helix`, between two moving points."""
    p0, p1 = np.atleast_2d(np.asarray(p0, dtype=float)), np.atleast_2d(np.asarray(p1, dtype=float))
    d = p1 - p0
    length = np.linalg.norm(d, axis=1)
    z = d / np.maximum(length, 1e-12)[:, None]
    ref = np.where(np.abs(z[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
    x = ref - np.sum(ref * z, axis=1, keepdims=True) * z
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    T = np.tile(np.eye(4), (len(p0), 1, 1))
    T[:, :3, 0], T[:, :3, 1], T[:, :3, 2], T[:, :3, 3] = x, np.cross(z, x), z, p0
    return T, length


def body_mesh(hint: str, size, axis: int = 2, offset=None, geometry=None):
    """Mesh for one body: vertices (V, 3) moved by ``offset`` (4, 4) and faces, or None for
    hints drawn only by their polylines ('wire'). The hints and sizes are those of
    :class:`core.mechanisms.BodyDisplay`; ``geometry`` is the outline (K, 2) of a 'plate' or
    the ``(vertices (V, 3), triangles (T, 3))`` of a 'mesh'."""
    size = tuple(float(s) for s in size) + (0.0,) * 3
    if hint == "wire":
        return None
    if hint == "sphere":
        verts, faces = uv_sphere(np.full(3, size[0]), 32, 16)
    elif hint in ("bead", "socket"):
        verts, faces = uv_sphere(np.full(3, size[0]))
    elif hint == "ellipsoid":
        verts, faces = uv_sphere(np.array(size[:3]), 32, 16)
    elif hint == "capsule":
        verts, faces = capsule(size[0], size[1], axis)
    elif hint in ("bone", "pin"):
        verts, faces = cylinder(size[0], max(size[1], 2.0 * size[0]), axis)
    elif hint == "cone":
        verts, faces = cone(size[0], size[1], axis)
    elif hint == "helix":
        verts, faces = helix(size[0], size[1], size[2] or 8.0)
    elif hint == "plane":
        verts, faces = box((size[0], size[1], max(size[2], 0.002)))
    elif hint == "plate":
        verts, faces = plate(geometry, size[:3], axis)
    elif hint == "airplane":
        verts, faces = airplane(size[:3])
    elif hint == "mesh":
        scale = np.array([s if s else 1.0 for s in size[:3]])
        verts, faces = np.asarray(geometry[0], dtype=float) * scale, np.asarray(geometry[1]).tolist()
    else:  # box, surface: a box of the given extents
        verts, faces = box(size[:3] if any(size[:3]) else (0.05, 0.05, 0.05))
    if offset is not None:
        T = np.asarray(offset, dtype=float)
        verts = verts @ T[:3, :3].T + T[:3, 3]
    return verts, faces


def shape_key_modes(tracks, name: str = "surface", tol: float = MODE_TOL, max_keys: int = MAX_SHAPE_KEYS):
    """Factor the vertex tracks of a deforming mesh into relative shape keys.

    tracks: (F, V, 3) vertex positions per frame. The tracks minus their mean are factored by
    SVD; every mode whose singular value exceeds ``tol`` times the largest is one key: the
    mean plus the mode at its largest coefficient. Returns ``(basis (V, 3), targets (K, V, 3),
    values (F, K))`` with values in [-1, 1] and
    ``tracks[f] ~= basis + sum_k values[f, k] (targets[k] - basis)``. A mesh whose shape is
    linear in one function of time is exactly one key; a static one has none (K = 0).
    InvalidInputError (naming ``name``) if it needs more than ``max_keys`` keys.
    """
    tracks = np.asarray(tracks, dtype=float)
    mean = tracks.mean(axis=0)
    U, S, Vt = np.linalg.svd((tracks - mean).reshape(len(tracks), -1), full_matrices=False)
    modes = np.flatnonzero(S > tol * S[0]) if S.size and S[0] > 0 else np.zeros(0, dtype=int)
    if len(modes) > max_keys:
        raise InvalidInputError(f"'{name}' deforms in {len(modes)} independent modes over these frames; "
                                f"at most {max_keys} are stored as shape keys: bake a shorter range")
    coef = U[:, modes] * S[modes]  # (F, K)
    amp = np.abs(coef).max(axis=0)
    targets = mean + (amp[:, None] * Vt[modes]).reshape(len(modes), *mean.shape)
    return mean, targets, coef / amp


def frame_axes(frames, size: float):
    """Line segments ``(3K, 2, 3)`` drawing the x, y and z axes of frames ``(K, 4, 4)``: from
    each frame's origin ``size`` along each of its axes, frame by frame."""
    frames = np.asarray(frames, dtype=float).reshape(-1, 4, 4)
    start = np.repeat(frames[:, :3, 3], 3, axis=0)
    ends = start + float(size) * np.swapaxes(frames[:, :3, :3], 1, 2).reshape(-1, 3)
    return np.stack([start, ends], axis=1)


def joint_path(doc, n: int = 160, iso_lines: int = 5):
    """Polylines of a joint's origin over its coordinate ranges, and its control frames.

    doc: a :class:`core.io.JointDocument`; its ranges must be finite
    (:meth:`~core.io.JointDocument.finite_ranges`). n: points per polyline (>= 2).
    Returns ``(lines, control_frames)``: for one coordinate, one polyline (n, 3) of
    ``G(q)[:3, 3]`` with q spaced evenly over its range; for two or more, ``2 * iso_lines``
    iso-lines (n, 3): coordinate 0 swept over its range at ``iso_lines`` evenly spaced values of
    coordinate 1, then the other way round, any further coordinates at the middle of their
    ranges (where the Drive panel's sliders start). ``control_frames`` (K, 4, 4) are the joint's
    control frames (K = 0 for a joint without them). Everything is in the joint's parent frame.
    """
    joint = doc.joint
    if joint.nq < 1:
        raise InvalidInputError(f"a path is drawn for joints with coordinates; this "
                                f"{type(joint).__name__} has none")
    if int(n) < 2 or int(iso_lines) < 1:
        raise InvalidInputError(f"a path needs n >= 2 points per line and iso_lines >= 1, got "
                                f"n={n!r}, iso_lines={iso_lines!r}")
    lo, hi = doc.finite_ranges().T
    sweep = [np.linspace(lo[a], hi[a], int(n)) for a in range(joint.nq)]
    if joint.nq == 1:
        lines = [joint.transforms(sweep[0][:, None])[:, :3, 3]]
    else:
        lines = []
        for a in range(2):
            for v in np.linspace(lo[1 - a], hi[1 - a], int(iso_lines)):
                qs = np.tile(0.5 * (lo + hi), (int(n), 1))
                qs[:, a], qs[:, 1 - a] = sweep[a], v
                lines.append(joint.transforms(qs)[:, :3, 3])
    frames = np.asarray(getattr(joint, "control_frames", np.zeros((0, 4, 4))), dtype=float)
    return lines, frames.reshape(-1, 4, 4)
