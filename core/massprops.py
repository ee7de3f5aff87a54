"""Mass properties (mass, centre of mass, inertia, volume) of closed triangle meshes, of meshes
split into labelled pieces, and of capsules.

Method: the divergence theorem turns each volume integral of ``1``, ``x`` and ``x x^T`` over
the solid into a sum over its boundary triangles (Mirtich 1996, "Fast and accurate computation
of polyhedral mass properties", J. Graphics Tools 1(2); Eberly, "Polyhedral Mass Properties
(Revisited)", 2002). Written per triangle ``(a, b, c)``, each term is the integral over the
signed tetrahedron ``(o, a, b, c)`` from a reference point ``o`` (Tonon 2004, "Explicit exact
formulas for the 3-D tetrahedron inertia tensor in terms of its vertex coordinates",
J. Math. Stat. 1(1)), with ``d = a . (b x c)`` (six signed volumes):

    volume = sum d / 6,    int x dV = sum d (a + b + c) / 24,
    int x x^T dV = sum d (a a^T + b b^T + c c^T + s s^T) / 120,   s = a + b + c.

Coordinates are taken relative to the mean vertex ``o`` so that the result does not lose
digits when the mesh is far from the origin. The formulas are exact for the polyhedron the
triangles bound (a UV sphere gives the inscribed polyhedron, not the sphere).

Units are SI: vertices in metres, density in kg/m^3, inertia in kg m^2.
"""

from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from .checks import real_number, whole_number
from .errors import InvalidInputError
from .lie import se3

__all__ = ["MassProperties", "combine", "mesh_mass_properties", "split_mass_properties",
           "capsule_mass_properties"]

EPS = np.finfo(float).eps
#: roundings in one triple product ``a . (b x c)`` (three products and two sums in the cross
#: product, three products and two sums in the dot product): its error is at most this many
#: eps times ``|a| |b| |c|``
_TRIPLE_PRODUCT_ROUNDINGS = 10


@dataclass(frozen=True, eq=False)
class MassProperties:
    """Rigid-body mass properties in one frame.

    mass: kg (> 0); com: ``(3,)`` centre of mass in metres, in the frame the geometry was
    given in; inertia: ``(3, 3)`` rotational inertia about the centre of mass, axes of that
    frame, kg m^2; volume: m^3 (> 0). The arrays are read-only copies.
    """

    mass: float
    com: np.ndarray
    inertia: np.ndarray
    volume: float

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "mass", real_number(self.mass, "mass (kg)", 0.0, low_open=True))
        set_(self, "volume", real_number(self.volume, "volume (m^3)", 0.0, low_open=True))
        com = np.array(self.com, dtype=float)
        inertia = np.array(self.inertia, dtype=float)
        if com.shape != (3,) or not np.all(np.isfinite(com)):
            raise InvalidInputError(f"com must be 3 finite numbers (metres), got {self.com!r}")
        if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
            raise InvalidInputError("inertia must be a finite 3x3 matrix (kg m^2 about the "
                                    f"centre of mass), got shape {inertia.shape}")
        inertia = 0.5 * (inertia + inertia.T)
        com.flags.writeable = False
        inertia.flags.writeable = False
        set_(self, "com", com)
        set_(self, "inertia", inertia)

    def transformed(self, T_new_old):
        """The same body expressed in another frame: ``T_new_old: (4, 4)`` is the pose of the
        current frame in the new one (a rigid transform). ``com' = R com + p``,
        ``inertia' = R inertia R^T``."""
        T = se3.check_transform(T_new_old, "T_new_old")
        if T.shape != (4, 4):
            raise InvalidInputError(f"T_new_old must be one (4, 4) transform, got {T.shape}")
        R = T[:3, :3]
        return MassProperties(self.mass, R @ self.com + T[:3, 3], R @ self.inertia @ R.T,
                              self.volume)

    @staticmethod
    def combine(parts):
        """One body made of ``parts`` (MassProperties in a common frame): masses and volumes
        add, the centre of mass is the mass-weighted mean, and each part's inertia is moved to
        it by the parallel-axis theorem ``I + m (|d|^2 1 - d d^T)``, ``d = com_i - com``."""
        parts = list(parts)
        if not parts or not all(isinstance(p, MassProperties) for p in parts):
            raise InvalidInputError("combine needs one or more MassProperties (in one frame)")
        m = np.array([p.mass for p in parts])
        c = np.stack([p.com for p in parts])
        mass = m.sum()
        com = m @ c / mass
        d = c - com
        shift = np.einsum("k,kj,kl->jl", m, d, d)
        inertia = sum(p.inertia for p in parts) + np.trace(shift) * np.eye(3) - shift
        return MassProperties(mass, com, inertia, sum(p.volume for p in parts))


#: ``combine(parts)``: see :meth:`MassProperties.combine`.
combine = MassProperties.combine


def _label(name):
    return f"mesh '{name}'" if name else "the mesh"


def _check_mesh(vertices, faces, name):
    """vertices ``(V, 3)`` finite floats and faces ``(F, 3)`` valid indices, a closed,
    manifold and consistently oriented surface; returns them as arrays."""
    what = _label(name)
    v = np.asarray(vertices, dtype=float)
    f = np.asarray(faces)
    if v.ndim != 2 or v.shape[1] != 3:
        raise InvalidInputError(f"{what}: vertices must have shape (V, 3), got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise InvalidInputError(f"{what} has vertex coordinates that are NaN or inf; "
                                "fix or delete those vertices")
    if f.ndim != 2 or f.shape[1] != 3 or not (np.issubdtype(f.dtype, np.integer) or f.size == 0):
        raise InvalidInputError(f"{what}: faces must be an (F, 3) integer array of vertex "
                                f"indices (triangles), got shape {f.shape} of {f.dtype}; "
                                "triangulate polygons first")
    if len(f) == 0:
        raise InvalidInputError(f"{what} has no faces; mass properties need a closed surface")
    f = f.astype(np.int64)
    if f.min() < 0 or f.max() >= len(v):
        raise InvalidInputError(f"{what}: face vertex indices must lie in 0..{len(v) - 1}, "
                                f"got {f.min()}..{f.max()}")
    repeated = (f[:, 0] == f[:, 1]) | (f[:, 1] == f[:, 2]) | (f[:, 2] == f[:, 0])
    if repeated.any():
        raise InvalidInputError(f"{what}: {int(repeated.sum())} triangles use one vertex twice "
                                f"(face {int(np.argmax(repeated))} first); remove them "
                                "(Mesh > Clean Up > Degenerate Dissolve)")
    n = np.int64(len(v))
    tail, head = f.ravel(), np.roll(f, -1, axis=1).ravel()     # directed edges of each face
    _, count = np.unique(np.minimum(tail, head) * n + np.maximum(tail, head),
                         return_counts=True)
    holes, crowded = int((count == 1).sum()), int((count > 2).sum())
    if holes:
        raise InvalidInputError(
            f"{what} is not closed: {holes} edges border only one face (a hole); close it "
            "(Mesh > Clean Up > Fill Holes, or Merge by Distance if its vertices are split) "
            "or use a capsule")
    if crowded:
        raise InvalidInputError(
            f"{what} is non-manifold: {crowded} edges are shared by more than two faces; find "
            "them with Select > Select All by Trait > Non Manifold and separate the touching "
            "parts, or use a capsule")
    _, directed = np.unique(tail * n + head, return_counts=True)
    flipped = int((directed > 1).sum())
    if flipped:
        raise InvalidInputError(
            f"{what} has inconsistent normals: {flipped} edges join two faces that point "
            "opposite ways; recalculate them (Mesh > Normals > Recalculate Outside)")
    return v, f


def _integrals(v, f):
    """Volume integrals of ``1``, ``x`` and ``x x^T`` over the solid bounded by triangles
    ``f: (F, 3)`` of vertices ``v: (V, 3)``, in coordinates relative to ``origin: (3,)``, the
    mean of the vertices the triangles use: returns ``(volume, first (3,), second (3, 3),
    origin, rounding)``. ``rounding`` bounds the rounding error of ``volume``: each triple
    product is off by at most ``_TRIPLE_PRODUCT_ROUNDINGS`` eps ``|a| |b| |c|``, and summing
    F terms adds at most F eps times the sum of their magnitudes."""
    used = np.zeros(len(v), dtype=bool)
    used[f.ravel()] = True
    origin = v[used].mean(axis=0)
    a, b, c = (v[f[:, k]] - origin for k in range(3))
    d = np.einsum("ij,ij->i", a, np.cross(b, c))
    s = a + b + c
    volume = d.sum() / 6.0
    first = d @ s / 24.0
    corners = np.concatenate([a, b, c, s])                   # (4F, 3), each weighted by d
    second = (corners.T * np.tile(d, 4)) @ corners / 120.0
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) * np.linalg.norm(c, axis=1)
    rounding = (_TRIPLE_PRODUCT_ROUNDINGS + len(f)) * EPS * norms.sum() / 6.0
    return volume, first, second, origin, rounding


def _properties(integrals, density, what):
    """MassProperties from :func:`_integrals`' result; ``what`` names the solid in errors."""
    volume, first, second, origin, rounding = integrals
    if volume <= rounding:
        raise InvalidInputError(
            f"{what} encloses no volume ({volume:.3g} m^3, within rounding {rounding:.3g} of "
            "zero or below): it is flat or its faces cancel; give it thickness (an applied "
            "Solidify modifier) or use a capsule")
    com = first / volume
    centred = second - volume * np.outer(com, com)
    inertia = density * (np.trace(centred) * np.eye(3) - centred)
    return MassProperties(density * volume, origin + com, inertia, volume)


def _outward(v, f):
    """``f`` with every triangle's winding reversed when the surface encloses a negative
    volume (normals pointing inward), and the integrals of the outward surface."""
    integrals = _integrals(v, f)
    if integrals[0] >= 0.0:
        return f, integrals
    volume, first, second, origin, rounding = integrals
    return f[:, ::-1], (-volume, -first, -second, origin, rounding)


def mesh_mass_properties(vertices, faces, density, *, name=None):
    """Mass properties of the solid bounded by a closed triangle mesh of uniform density.

    vertices: ``(V, 3)`` metres; faces: ``(F, 3)`` integer vertex indices (triangles; every
    edge shared by exactly two faces, each directed edge used once); density: kg/m^3 (> 0);
    name: the mesh's name, used in error messages. A mesh whose normals all point inward is
    accepted (its winding is reversed). Several closed shells are one body: an inward shell
    inside an outward one is a cavity. Returns :class:`MassProperties` in the vertices' frame.

    Raises InvalidInputError for an open, non-manifold or inconsistently oriented mesh, zero
    volume, non-finite coordinates or indices out of range, saying what to fix.
    """
    density = real_number(density, "density (kg/m^3)", 0.0, low_open=True)
    v, f = _check_mesh(vertices, faces, name)
    return _properties(_outward(v, f)[1], density, _label(name))


def _capped(v, f):
    """The piece ``f: (P, 3)`` of a closed, consistently oriented mesh, closed again: every
    boundary edge ``(a, b)`` (a directed edge whose reverse is not in the piece) gets the
    triangle ``(b, a, centroid)``, where the centroid (mean of the unique vertices) belongs
    to the connected set of boundary edges the edge is in (a boundary loop, or loops touching
    at a vertex). Returns ``(vertices (V + L, 3), faces (P + B, 3))``."""
    n = np.int64(len(v))
    tail, head = f.ravel(), np.roll(f, -1, axis=1).ravel()
    open_ = ~np.isin(head * n + tail, tail * n + head)
    if not open_.any():
        return v, f
    tail, head = tail[open_], head[open_]
    graph = coo_matrix((np.ones(len(tail)), (tail, head)), shape=(len(v), len(v)))
    _, loop = connected_components(graph, directed=False)
    ends = np.unique(tail)                      # every boundary vertex starts one edge
    loops, which = np.unique(loop[ends], return_inverse=True)
    centroids = np.zeros((len(loops), 3))
    np.add.at(centroids, which, v[ends])
    centroids /= np.bincount(which)[:, None]
    index = np.empty(len(v), dtype=np.int64)
    index[ends] = n + which
    caps = np.stack([head, tail, index[tail]], axis=1)
    return np.concatenate([v, centroids]), np.concatenate([f, caps])


def split_mass_properties(vertices, faces, labels, density, *, name=None, keep=None):
    """Mass properties of the pieces of a closed mesh whose faces carry labels (e.g. the bone
    that dominates each face's vertex weights).

    vertices: ``(V, 3)`` metres; faces: ``(F, 3)`` triangles of a closed, manifold,
    consistently oriented mesh (checked as in :func:`mesh_mass_properties`); labels:
    ``(F,)`` one hashable label per face; density: kg/m^3; keep: labels to compute (default:
    all). Returns ``{label: MassProperties}`` in the vertices' frame.

    Each piece's open boundary loops are closed by a fan of triangles from the loop's
    centroid (the mean of its vertices). Where the cut between pieces is planar, the fan lies
    in the cut plane and every piece is the exact solid on its side of the plane, so the pieces
    sum to the whole. Where it is not planar, the fan is a ruled surface through the loop:
    two pieces sharing one loop get the same fan with opposite orientation (they still sum to
    the whole), but each piece's share of the volume near the cut is approximate. Where three
    or more pieces meet along one loop (a piece bordering two others on one loop), their fans
    differ and the sum differs from the whole near that junction.
    """
    density = real_number(density, "density (kg/m^3)", 0.0, low_open=True)
    v, f = _check_mesh(vertices, faces, name)
    labels = np.asarray(labels)
    if labels.shape != (len(f),):
        raise InvalidInputError(f"{_label(name)}: labels must have one entry per face, shape "
                                f"({len(f)},), got {labels.shape}")
    f = _outward(v, f)[0]
    names, which = np.unique(labels, return_inverse=True)
    keep = None if keep is None else set(keep)
    out = {}
    for k, label in enumerate(names):
        label = label.item() if isinstance(label, np.generic) else label
        if keep is not None and label not in keep:
            continue
        out[label] = _properties(_integrals(*_capped(v, f[which == k])), density,
                                 f"the faces labelled {label!r} in {_label(name)}, capped "
                                 "where cut,")
    return out


def capsule_mass_properties(radius, length, density, axis=1):
    """A solid capsule: a cylinder of ``radius`` from 0 to ``length`` along coordinate
    ``axis`` (0, 1, 2 = x, y, z; 1 is a Blender bone's Y axis from head to tail) with a
    hemisphere on each end. radius > 0 and length >= 0 in metres, density kg/m^3.

    Closed forms: cylinder mass ``m_c = rho pi r^2 L``, both hemispheres ``m_s = rho 4/3 pi
    r^3``; about the centre, axial ``I_a = m_c r^2 / 2 + 2/5 m_s r^2``, transverse
    ``I_t = m_c (3 r^2 + L^2) / 12 + m_s (2/5 r^2 + L^2 / 4 + 3/8 L r)`` (each hemisphere's
    centroid lies ``3r/8`` from its flat face; the parallel-axis theorem moves it out to
    ``L/2 + 3r/8``).
    """
    r = real_number(radius, "capsule radius (m)", 0.0, low_open=True)
    L = real_number(length, "capsule length (m)", 0.0)
    rho = real_number(density, "density (kg/m^3)", 0.0, low_open=True)
    axis = whole_number(axis, "axis", minimum=0)
    if axis > 2:
        raise InvalidInputError(f"axis must be 0, 1 or 2 (x, y, z), got {axis}")
    m_c = rho * np.pi * r * r * L
    m_s = rho * 4.0 / 3.0 * np.pi * r ** 3
    axial = 0.5 * m_c * r * r + 0.4 * m_s * r * r
    transverse = m_c * (3.0 * r * r + L * L) / 12.0 + m_s * (0.4 * r * r + 0.25 * L * L
                                                             + 0.375 * L * r)
    inertia = np.full(3, transverse)
    inertia[axis] = axial
    com = np.zeros(3)
    com[axis] = 0.5 * L
    return MassProperties(m_c + m_s, com, np.diag(inertia), np.pi * r * r * (L + 4.0 * r / 3.0))
