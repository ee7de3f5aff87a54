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

__all__ = ["uv_sphere", "cylinder", "box", "body_mesh", "shape_key_modes", "joint_path",
           "MAX_SHAPE_KEYS", "MODE_TOL"]

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
    order = {2: [0, 1, 2], 0: [2, 0, 1], 1: [1, 2, 0]}[int(axis)]
    return verts[:, order], faces


def box(extents):
    """Box with full extents (3,) (each at least 1e-4) centred on the origin. Returns
    vertices (8, 3) and 6 quads."""
    e = 0.5 * np.maximum(np.asarray(extents, dtype=float), 1e-4)
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)
    faces = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    return corners * e, faces


def body_mesh(hint: str, size, axis: int = 2, offset=None):
    """Mesh for one body: vertices (V, 3) moved by ``offset`` (4, 4) and faces, or None for
    hints drawn only by their polylines ('wire')."""
    size = tuple(float(s) for s in size) + (0.0,) * 3
    if hint == "wire":
        return None
    if hint in ("sphere", "bead"):
        verts, faces = uv_sphere(np.full(3, size[0]))
    elif hint == "ellipsoid":
        verts, faces = uv_sphere(np.array(size[:3]))
    elif hint in ("capsule", "bone"):
        verts, faces = cylinder(size[0], max(size[1], 2.0 * size[0]), axis)
    elif hint == "plane":
        verts, faces = box((size[0], size[1], max(size[2], 0.002)))
    else:  # box, letter, surface, airplane: a box of the given extents
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


def joint_path(doc, n: int = 160, iso_lines: int = 5):
    """Polylines of a joint's origin over its coordinate ranges, and its control frames.

    doc: a :class:`core.io.JointDocument` of a 1- or 2-coordinate joint; its ranges must be
    finite (:meth:`~core.io.JointDocument.finite_ranges`). n: points per polyline (>= 2).
    Returns ``(lines, control_frames)``: for one coordinate, one polyline (n, 3) of
    ``G(q)[:3, 3]`` with q spaced evenly over its range; for two, ``2 * iso_lines`` iso-lines
    (n, 3): coordinate 0 swept over its range at ``iso_lines`` evenly spaced values of
    coordinate 1, then the other way round. ``control_frames`` (K, 4, 4) are the joint's
    control frames (K = 0 for a joint without them). Everything is in the joint's parent frame.
    """
    joint = doc.joint
    if joint.nq not in (1, 2):
        raise InvalidInputError(f"a path is drawn for joints of 1 or 2 coordinates; this "
                                f"{type(joint).__name__} has {joint.nq}")
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
                qs = np.empty((int(n), 2))
                qs[:, a], qs[:, 1 - a] = sweep[a], v
                lines.append(joint.transforms(qs)[:, :3, 3])
    frames = np.asarray(getattr(joint, "control_frames", np.zeros((0, 4, 4))), dtype=float)
    return lines, frames.reshape(-1, 4, 4)
