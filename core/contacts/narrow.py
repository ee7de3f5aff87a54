"""Narrow phase: contact points, normals and separations of two posed shapes.

Every shape is a convex core (a point, a segment or a polytope) swept by a sphere of its
radius (:mod:`core.contacts.shapes`), so the distance of two shapes is the distance of their
cores less both radii, and their contact normal is the direction between the cores'
closest points:

* point/segment cores (spheres, capsules): closed-form closest points of two segments
  (:func:`closest_segments`, Ericson, *Real-Time Collision Detection* 5.1.9); two parallel
  capsules touch along the overlap of their axes and get a contact at each end of it;
* a polytope and a point/segment core (sphere/capsule vs box/hull): GJK on the cores
  (:func:`gjk`, the distance algorithm of Gilbert, Johnson and Keerthi with an exact
  closest-point search over the simplex's faces) while they are apart, the separating axis
  test (:func:`sat`) once the cores overlap;
* two polytopes (box-box, box-hull, hull-hull): the separating axis test over both shapes'
  face normals and the cross products of their edge directions, which gives the exact
  penetration depth of convex polyhedra (and a lower bound of their distance when apart).

Where the normal is a face normal, the contacts are the other shape's incident feature (its
face, its segment or its point) clipped to the reference face's side planes (Sutherland-
Hodgman), one contact per kept point, so a box resting on a box or a capsule lying on a face
gets a whole manifold; an edge-edge axis gives one contact at the edges' closest points.

A contact is ``(point (3,), normal (3,), separation, feature)``: the normal points from the
first shape to the second, the point lies midway between the two surfaces, the separation
is the signed distance of the surfaces along the normal (negative when they overlap), and
``feature`` numbers the contacts of one pair (a vertex index for planes) for warm starting.
Only contacts with separation below ``margin`` are returned.
"""

import itertools

import numpy as np

__all__ = ["Posed", "closest_segments", "gjk", "sat", "collide", "collide_plane",
           "plane_contacts", "FACE_COS"]

#: a normal within this cosine of a face normal (about 2.6 degrees) makes that face the
#: reference face of a manifold
FACE_COS = 0.999
#: an edge-edge axis is taken over a face axis only when its overlap is smaller than the
#: face axis's by more than this fraction (faces give whole manifolds, edges one contact)
EDGE_PREFERENCE = 1e-3
#: the subsets of a simplex of k points (k = 1..4), largest first (the compiled twin's too)
SUBSETS = {k: [s for m in range(k, 0, -1) for s in itertools.combinations(range(k), m)]
            for k in range(1, 5)}


class Posed:
    """A shape at a world pose ``T (4, 4)``: ``v`` vertices ``(k, 3)``, ``n`` face normals
    ``(f, 3)``, ``o`` face offsets ``(f,)``, ``dirs`` edge directions ``(d, 3)``, all in the
    world frame, and the shape's ``radius``, ``faces``, ``edges`` and ``edge_dir_of``."""

    __slots__ = ("shape", "v", "n", "o", "dirs", "radius", "polytope")

    def __init__(self, shape, T=None):
        self.shape, self.radius, self.polytope = shape, shape.radius, shape.polytope
        if T is None:
            self.v, self.n, self.o, self.dirs = (shape.vertices, shape.normals, shape.offsets,
                                                 shape.edge_dirs)
            return
        R, p = T[:3, :3], T[:3, 3]
        self.v = shape.vertices @ R.T + p
        self.n = shape.normals @ R.T
        self.o = shape.offsets + self.n @ p
        self.dirs = shape.edge_dirs @ R.T

    def bounds(self, margin=0.0):
        """World axis-aligned box ``(lo (3,), hi (3,))`` grown by the radius and ``margin``."""
        r = self.radius + margin
        return self.v.min(axis=0) - r, self.v.max(axis=0) + r


def closest_segments(p1, q1, p2, q2):
    """Closest points of segments ``[p1, q1]`` and ``[p2, q2]`` (each (3,); a segment may be
    a point): ``(s, t, c1 (3,), c2 (3,))`` with ``c1 = p1 + s (q1 - p1)``,
    ``c2 = p2 + t (q2 - p2)``, s and t in [0, 1] (Ericson 5.1.9)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f = d1 @ d1, d2 @ d2, d2 @ r
    tiny = 1e-300
    if a <= tiny and e <= tiny:
        return 0.0, 0.0, p1, p2
    if a <= tiny:
        t = min(max(f / e, 0.0), 1.0)
        return 0.0, t, p1, p2 + t * d2
    c = d1 @ r
    if e <= tiny:
        s = min(max(-c / a, 0.0), 1.0)
        return s, 0.0, p1 + s * d1, p2
    b = d1 @ d2
    denom = a * e - b * b
    s = min(max((b * f - c * e) / denom, 0.0), 1.0) if denom > 1e-14 * a * e else 0.0
    t = (b * s + f) / e
    if t < 0.0:
        t, s = 0.0, min(max(-c / a, 0.0), 1.0)
    elif t > 1.0:
        t, s = 1.0, min(max((b - c) / a, 0.0), 1.0)
    return s, t, p1 + s * d1, p2 + t * d2


def _weights(P):
    """Barycentric weights of the origin's projection onto the affine hull of ``P (k, 3)``
    (k = 1..4), or None where P is degenerate (a repeated point, collinear or coplanar
    points at rounding level): dot products, cross products and triple products, which
    keep their signs where a linear solve of a flat simplex would not."""
    k = len(P)
    if k == 1:
        return np.ones(1)
    if k == 2:
        d = P[1] - P[0]
        dd = d @ d
        if dd <= 1e-26 * (P[0] @ P[0] + P[1] @ P[1]):
            return None
        t = -(P[0] @ d) / dd
        return np.array([1.0 - t, t])
    if k == 3:
        n = np.cross(P[1] - P[0], P[2] - P[0])
        nn = n @ n
        if nn <= 1e-26 * np.sum(P * P) ** 2:
            return None
        return np.array([n @ np.cross(P[1], P[2]), n @ np.cross(P[2], P[0]),
                         n @ np.cross(P[0], P[1])]) / nn
    vol = np.linalg.det(P[1:] - P[0])
    if abs(vol) <= 1e-13 * np.sum(P * P) ** 1.5:
        return None
    return np.array([np.linalg.det(P[[1, 2, 3]]), -np.linalg.det(P[[0, 2, 3]]),
                     np.linalg.det(P[[0, 1, 3]]), -np.linalg.det(P[[0, 1, 2]])]) / vol


def _closest_on_simplex(W):
    """Barycentric weights and indices of the point of ``conv(W)`` (``W (k, 3)``, k <= 4)
    closest to the origin: the valid projection onto the affine hull of some subset
    (weights all positive) of least norm."""
    best = (np.inf, None, None)
    for sub in SUBSETS[len(W)]:
        P = W[list(sub)]
        lam = _weights(P)
        if lam is None or lam.min() <= 0.0:
            continue
        x = lam @ P
        d = x @ x
        if d < best[0]:
            best = (d, lam, sub)
    return best[1], list(best[2])


def gjk(VA, VB, max_iterations=64):
    """Distance of the convex hulls of ``VA (ka, 3)`` and ``VB (kb, 3)``: ``(distance,
    a (3,), b (3,))`` with a and b the closest points (distance 0 and a = b when they
    overlap). Stops when the lower bound ``v . w / |v|`` is within 1e-12 relative of
    ``|v|``, or when the simplex contains the origin."""
    scale = max(float(np.abs(VA).max()), float(np.abs(VB).max()), 1e-300)
    A, B = [VA[0]], [VB[0]]
    v = VA[0] - VB[0]
    lam = np.ones(1)
    for _ in range(max_iterations):
        vv = v @ v
        if vv <= (1e-13 * scale) ** 2:
            break
        ia, ib = int(np.argmax(VA @ -v)), int(np.argmax(VB @ v))
        w = VA[ia] - VB[ib]
        if vv - v @ w <= 1e-12 * vv or any(np.array_equal(VA[ia], a) and
                                            np.array_equal(VB[ib], b) for a, b in zip(A, B)):
            break
        A.append(VA[ia])
        B.append(VB[ib])
        Ws = np.array(A) - np.array(B)
        lam, keep = _closest_on_simplex(Ws)
        A, B = [A[k] for k in keep], [B[k] for k in keep]
        v = lam @ Ws[keep]
        if len(keep) == 4:                       # the origin is inside the tetrahedron
            v = np.zeros(3)
            break
    a, b = lam @ np.array(A), lam @ np.array(B)
    if v @ v <= (1e-13 * scale) ** 2:
        return 0.0, a, a
    return float(np.sqrt(v @ v)), a, b


def sat(A, B):
    """Separating axis test of two posed cores, at least one a polytope: ``(overlap, normal
    (3,), axis)`` where overlap is the smallest overlap of the two projections over the
    candidate axes (positive: the cores interpenetrate by it, the exact depth of convex
    polyhedra; negative: they are apart by at least -overlap), normal the direction (from A
    to B) that separates them by the least motion, and axis ``("face", side)`` (side 0 = A,
    1 = B) or ``("edge", ia, ib)`` (edge direction indices)."""
    tags = [("face", 0)] * len(A.n) + [("face", 1)] * len(B.n)
    axes = [A.n, B.n]
    if len(A.dirs) and len(B.dirs):
        c = np.cross(A.dirs[:, None, :], B.dirs[None, :, :])
        norm = np.linalg.norm(c, axis=2)
        ia, ib = np.nonzero(norm > PARALLEL_CROSS)
        axes.append(c[ia, ib] / norm[ia, ib, None])
        tags += [("edge", int(i), int(j)) for i, j in zip(ia, ib)]
    U = np.concatenate(axes)
    PA, PB = A.v @ U.T, B.v @ U.T
    over = np.stack([PA.max(axis=0) - PB.min(axis=0), PB.max(axis=0) - PA.min(axis=0)])
    side = np.argmin(over, axis=0)
    o = over[side, np.arange(len(U))]
    faces = np.array([t[0] == "face" for t in tags])
    k = int(np.argmin(np.where(faces, o, np.inf))) if faces.any() else int(np.argmin(o))
    if not faces.all():
        e = int(np.argmin(np.where(faces, np.inf, o)))
        if o[e] < o[k] - EDGE_PREFERENCE * abs(o[k]) or not faces.any():
            k = e
    n = U[k] if side[k] == 0 else -U[k]
    return float(o[k]), n, tags[k]


#: edge directions whose cross product is shorter than this are parallel (no SAT axis)
PARALLEL_CROSS = 1e-6


def _clip(points, F, nf):
    """``points (k, 3)`` (a point, a segment or a polygon in order) clipped to the prism of
    the face polygon ``F (m, 3)`` (counter-clockwise about its normal ``nf``): the kept
    points ``(j, 3)``."""
    P = points
    for k in range(len(F)):
        a, inward = F[k], np.cross(nf, F[(k + 1) % len(F)] - F[k])
        d = (P - a) @ inward
        if len(P) == 0:
            break
        if len(P) == 1:
            P = P if d[0] >= 0.0 else P[:0]
        elif len(P) == 2:
            if d.min() >= 0.0:
                continue
            if d.max() < 0.0:
                P = P[:0]
                continue
            x = P[0] + (P[1] - P[0]) * (d[0] / (d[0] - d[1]))
            P = np.array([x, P[1]] if d[0] < 0.0 else [P[0], x])
        else:
            out = []
            for i in range(len(P)):
                j = (i + 1) % len(P)
                if d[i] >= 0.0:
                    out.append(P[i])
                if (d[i] >= 0.0) != (d[j] >= 0.0):
                    out.append(P[i] + (P[j] - P[i]) * (d[i] / (d[i] - d[j])))
            P = np.array(out).reshape(-1, 3)
    return P


def _face_contacts(R, f, X, incident, radius, margin):
    """Contacts of ``incident (k, 3)`` points of shape X (core radius ``radius``) clipped to
    face f of the polytope R: normals along the face normal (from R to X)."""
    nf = R.n[f]
    F = R.v[R.shape.faces[f]]
    P = _clip(incident, F, nf)
    out = []
    for k, x in enumerate(P):
        s = x @ nf - R.o[f] - radius
        if s < margin:
            out.append((x - nf * (radius + 0.5 * s), nf, float(s), k))
    return out


def _incident(X, n):
    """The points of X's core that face a reference face of normal ``n`` (pointing at X):
    X's face most opposed to n for a polytope, else all core vertices."""
    if X.polytope:
        return X.v[X.shape.faces[int(np.argmin(X.n @ n))]]
    return X.v


def _edge_contact(A, B, n, ia, ib, overlap):
    """One contact at the closest points of A's and B's supporting edges along the
    directions ``ia``/``ib`` (an edge-edge SAT axis ``n`` from A to B)."""
    def support(S, k, sign):
        if not S.polytope:
            return S.v[0], S.v[-1]
        E = S.shape.edges[S.shape.edge_dir_of == k]
        mid = (S.v[E[:, 0]] + S.v[E[:, 1]]) @ n
        e = E[int(np.argmax(sign * mid))]
        return S.v[e[0]], S.v[e[1]]
    _, _, pa, pb = closest_segments(*support(A, ia, 1.0), *support(B, ib, -1.0))
    s = -overlap - A.radius - B.radius
    return [(0.5 * (pa + n * A.radius + pb - n * B.radius), n, float(s), 0)]


#: points whose heights differ by less than this fraction of the coordinates' magnitude are
#: equally low (:func:`_lowest`): far above the rounding of a height, far below any length
#: that matters
LOW_TIE = 1e-12


def _lowest(V, n):
    """The first of the points ``V (k, 3)`` whose height along n is within
    :data:`LOW_TIE` of the least: the corners of a face across n are equally low, and the
    first of them is taken whatever the rounding of their heights."""
    h = V @ n
    return V[int(np.argmax(h <= h.min() + LOW_TIE * np.abs(V).max()))]


def _flip(contacts):
    return [(p, -n, s, k) for p, n, s, k in contacts]


def _rounded(A, B, margin):
    """Two point/segment cores (spheres, capsules)."""
    _, _, ca, cb = closest_segments(A.v[0], A.v[-1], B.v[0], B.v[-1])
    d = float(np.linalg.norm(cb - ca))
    ra, rb = A.radius, B.radius
    if d - ra - rb >= margin:
        return []
    if d > 1e-12 * (A.shape.extent + B.shape.extent):
        n = (cb - ca) / d
    else:                                        # cores meet: any direction across them
        axis = A.v[-1] - A.v[0] if len(A.v) == 2 else B.v[-1] - B.v[0]
        ref = np.array([0.0, 0.0, 1.0]) if abs(axis[2]) < 0.9 * np.linalg.norm(axis) \
            else np.array([1.0, 0.0, 0.0])
        n = np.cross(axis, ref) if axis @ axis > 0 else ref
        n = n / np.linalg.norm(n)
    if len(A.v) == 2 and len(B.v) == 2:          # parallel capsules: the overlap's two ends
        u = A.v[1] - A.v[0]
        L = float(np.linalg.norm(u))
        u = u / L
        w = B.v[1] - B.v[0]
        if np.linalg.norm(np.cross(u, w)) < 1e-3 * np.linalg.norm(w):
            sb = (B.v - A.v[0]) @ u
            lo, hi = max(0.0, sb.min()), min(L, sb.max())
            if hi - lo > 1e-9 * L:
                out = []
                for k, x in enumerate((lo, hi)):
                    pa = A.v[0] + x * u
                    _, _, _, pb = closest_segments(pa, pa, B.v[0], B.v[1])
                    s = float((pb - pa) @ n) - ra - rb
                    if s < margin:
                        out.append((0.5 * (pa + n * ra + pb - n * rb), n, s, k))
                return out
    s = d - ra - rb
    return [(0.5 * (ca + n * ra + cb - n * rb), n, s, 0)]


def _polytope_rounded(P, X, margin):
    """A polytope P and a point/segment core X; normals from P to X."""
    d, cp, cx = gjk(P.v, X.v)
    r = X.radius
    if d - r >= margin:
        return []
    if d > 0.0:
        n = (cx - cp) / d
        f = int(np.argmax(P.n @ n))
        if P.n[f] @ n > FACE_COS:
            out = _face_contacts(P, f, X, X.v, r, margin)
            if out:
                return out
        s = d - r
        return [(cp + n * (0.5 * s), n, float(s), 0)]
    overlap, n, axis = sat(P, X)
    if axis[0] == "edge":
        return _edge_contact(P, X, n, axis[1], axis[2], overlap)
    f = int(np.argmax(P.n @ n))
    out = _face_contacts(P, f, X, X.v, r, margin)
    if out:
        return out
    x = _lowest(X.v, n)
    s = -overlap - r
    return [(x - n * (r + 0.5 * s), n, float(s), 0)]


def _polytopes(A, B, margin):
    overlap, n, axis = sat(A, B)
    if -overlap >= margin:
        return []
    if axis[0] == "edge":
        return _edge_contact(A, B, n, axis[1], axis[2], overlap)
    fa, fb = int(np.argmax(A.n @ n)), int(np.argmax(B.n @ -n))
    if A.n[fa] @ n >= B.n[fb] @ -n:
        out = _face_contacts(A, fa, B, _incident(B, A.n[fa]), 0.0, margin)
    else:
        out = _flip(_face_contacts(B, fb, A, _incident(A, B.n[fb]), 0.0, margin))
    if out:
        return out
    x = _lowest(B.v, n)
    return [(x + n * (0.5 * overlap), n, float(-overlap), 0)]


def collide(A, B, margin=0.0):
    """Contacts of two :class:`Posed` shapes with separation below ``margin`` (m), normals
    from A to B (module docstring): a list of ``(point, normal, separation, feature)``."""
    if A.polytope and B.polytope:
        return _polytopes(A, B, margin)
    if A.polytope:
        return _polytope_rounded(A, B, margin)
    if B.polytope:
        return _flip(_polytope_rounded(B, A, margin))
    return _rounded(A, B, margin)


def plane_contacts(plane, points, radius, margin=0.0):
    """The core vertices ``points (k, 3)`` (world; each swept by ``radius``, a number or
    ``(k,)``) closer than ``margin`` to a :class:`core.contacts.shapes.Plane`: their indices
    ``(c,)``, contact points ``(c, 3)`` (halfway between the plane and the swept surface)
    and separations ``(c,)``."""
    n = plane.normal
    s = points @ n - plane.height - radius
    k = np.nonzero(s < margin)[0]
    r = radius[k] if np.ndim(radius) else radius
    return k, points[k] - np.multiply.outer(r + 0.5 * s[k], n), s[k]


def collide_plane(plane, X, margin=0.0):
    """Contacts of a :class:`core.contacts.shapes.Plane` and a :class:`Posed` shape: one per
    core vertex closer than ``margin`` to the plane (a sphere 1, a capsule its 2 ends, a
    polytope its corners), normals the plane's, features the vertex indices."""
    k, p, s = plane_contacts(plane, X.v, X.radius, margin)
    return [(p[i], plane.normal, float(s[i]), int(k[i])) for i in range(len(k))]
