"""numba broad and narrow phase of the contact solver: the contacts of every candidate pair
of posed shapes in one kernel call (:func:`pair_contacts`), for
:meth:`core.contacts.solver.ContactSolver.find_contacts` on the numba backend.

The shapes are packed once per solver into three flat arrays
(:class:`core.compiled.pack.PackedShapes`); a call takes their world poses, poses every
vertex, face plane and edge direction, compares the boxes of every pair (the broad phase:
the candidate pairs of :func:`core.contacts.broad.sweep_and_prune`, in the same order; a
box test costs nanoseconds, so for the tens to hundreds of shapes of a model comparing
every pair costs less than sorting the boxes), and collides each candidate pair by the
algorithm of :mod:`core.contacts.narrow`, the reference, step for step: closed-form segment
distances and parallel capsules, GJK with the exact closest-point search over the
simplex's subsets (largest first, the same degeneracy tests), the separating axis test with
:data:`~core.contacts.narrow.EDGE_PREFERENCE`, reference faces within
:data:`~core.contacts.narrow.FACE_COS`, Sutherland-Hodgman clipping and edge-edge contacts,
with the same features. One step is added: a polytope and a point/segment core that one of
the polytope's face planes keeps more than the radius plus the margin apart are skipped
before GJK (:func:`_plane_apart`; GJK's distance, never below the true one, would reject
them too). The two differ by rounding only (products may be fused here, and numpy's small
products may sum in another order), so a contact set differs only where a quantity lies
within rounding of one of the narrow phase's thresholds.

Cost: vectors are tuples of three floats, and GJK's simplex and the clipped polygons live
in work rows of the call's arrays, so a pair allocates nothing (unless the output fills up
or a clipped polygon outgrows its buffer). The functions pass the shapes as ``G``, three
arrays and a :class:`_Layout` of offsets: numba counts the references of every array a
function receives, at its entry and exits, so passing the fourteen packed arrays and the
work arrays as one tuple would cost tens of reference count updates a function call.

The contacts come back as arrays: the pair ``(i, j)`` (item indices, ``i < j``), point,
normal (from the pair's first shape, the world side for a world pair, to the second),
separation and feature.

Mirrors (reference -> twin; parity test ``tests/core/test_compiled_narrow.py``, every test
comparing the two on the same shapes; contact sets compared exactly away from the
thresholds, points to the rounding of the few-term products that place them):

* ``contacts.broad.sweep_and_prune`` -> the box tests of :func:`pair_contacts`;
* ``contacts.narrow.closest_segments`` -> :func:`closest_segments`, ``contacts.narrow.gjk``
  -> :func:`gjk`, ``contacts.narrow.sat`` -> :func:`sat`, ``contacts.narrow.collide`` ->
  :func:`collide`, each private helper of the reference -> the one of the same name here;
* ``contacts.solver.ContactSolver.find_contacts`` (numpy path) -> :func:`pair_contacts`:
  ``::test_find_contacts_are_the_same_on_both_backends``.
"""

from collections import namedtuple

import numpy as np

from ..contacts.narrow import EDGE_PREFERENCE, FACE_COS, LOW_TIE, PARALLEL_CROSS, SUBSETS
from .kernels.options import inline, jit

__all__ = ["pair_contacts"]

#: GJK's iteration cap (:func:`core.contacts.narrow.gjk`'s default)
GJK_ITERATIONS = 64
#: per simplex size k (1..4) its subsets in the reference's order (largest first): a row
#: ``[size, i0, i1, i2, i3]``; rows past ``2^k - 1`` unused
_SUBSET_ROWS = np.zeros((4, 15, 5), dtype=np.int64)
for _k in range(1, 5):
    for _r, _s in enumerate(SUBSETS[_k]):
        _SUBSET_ROWS[_k - 1, _r, 0] = len(_s)
        _SUBSET_ROWS[_k - 1, _r, 1:1 + len(_s)] = _s
del _k, _r, _s


# -- small vector helpers: 3-vectors as tuples -------------------------------------------
@inline
def _dot(a, b):
    """The dot product of two 3-vectors (arrays or tuples)."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@inline
def _row(P, i):
    """Row i of ``P (k, 3)`` as a tuple (scalars, no array)."""
    return P[i, 0], P[i, 1], P[i, 2]


@inline
def _tsub(a, b):
    return a[0] - b[0], a[1] - b[1], a[2] - b[2]


@inline
def _tcross(a, b):
    return a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]


@inline
def _tmad(p, s, d):
    """``p + s d`` for 3-vectors p, d and a number s."""
    return p[0] + s * d[0], p[1] + s * d[1], p[2] + s * d[2]


@inline
def _tadd(a, b):
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


@inline
def _mid(pa, pb, n, ra, rb):
    """``(pa + n ra + pb - n rb) / 2``: midway between two surfaces at core points pa, pb."""
    return (0.5 * (pa[0] + n[0] * ra + pb[0] - n[0] * rb),
            0.5 * (pa[1] + n[1] * ra + pb[1] - n[1] * rb),
            0.5 * (pa[2] + n[2] * ra + pb[2] - n[2] * rb))


@inline
def _clamp01(x):
    return min(max(x, 0.0), 1.0)


@jit
def closest_segments(p1, q1, p2, q2):
    """:func:`core.contacts.narrow.closest_segments` of tuples: ``(s, t, c1, c2)``."""
    d1, d2, r = _tsub(q1, p1), _tsub(q2, p2), _tsub(p1, p2)
    a, e, f = _dot(d1, d1), _dot(d2, d2), _dot(d2, r)
    tiny = 1e-300
    if a <= tiny and e <= tiny:
        return 0.0, 0.0, p1, p2
    if a <= tiny:
        t = _clamp01(f / e)
        return 0.0, t, p1, _tmad(p2, t, d2)
    c = _dot(d1, r)
    if e <= tiny:
        s = _clamp01(-c / a)
        return s, 0.0, _tmad(p1, s, d1), p2
    b = _dot(d1, d2)
    denom = a * e - b * b
    s = _clamp01((b * f - c * e) / denom) if denom > 1e-14 * a * e else 0.0
    t = (b * s + f) / e
    if t < 0.0:
        t, s = 0.0, _clamp01(-c / a)
    elif t > 1.0:
        t, s = 1.0, _clamp01((b - c) / a)
    return s, t, _tmad(p1, s, d1), _tmad(p2, t, d2)


# -- GJK ---------------------------------------------------------------------------------
@jit
def _weights(P, k, lam):
    """:func:`core.contacts.narrow._weights` of the first k rows of ``P (4, 3)`` into
    ``lam[:k]``; False where P is degenerate."""
    if k == 1:
        lam[0] = 1.0
        return True
    p0, p1 = _row(P, 0), _row(P, 1)
    if k == 2:
        d = _tsub(p1, p0)
        dd = _dot(d, d)
        if dd <= 1e-26 * (_dot(p0, p0) + _dot(p1, p1)):
            return False
        t = -_dot(p0, d) / dd
        lam[0], lam[1] = 1.0 - t, t
        return True
    p2 = _row(P, 2)
    if k == 3:
        size = _dot(p0, p0) + _dot(p1, p1) + _dot(p2, p2)
        n = _tcross(_tsub(p1, p0), _tsub(p2, p0))
        nn = _dot(n, n)
        if nn <= 1e-26 * size ** 2:
            return False
        lam[0] = _dot(n, _tcross(p1, p2)) / nn
        lam[1] = _dot(n, _tcross(p2, p0)) / nn
        lam[2] = _dot(n, _tcross(p0, p1)) / nn
        return True
    p3 = _row(P, 3)
    size = _dot(p0, p0) + _dot(p1, p1) + _dot(p2, p2) + _dot(p3, p3)
    vol = _dot(_tsub(p1, p0), _tcross(_tsub(p2, p0), _tsub(p3, p0)))
    if abs(vol) <= 1e-13 * size ** 1.5:
        return False
    lam[0] = _dot(p1, _tcross(p2, p3)) / vol
    lam[1] = -_dot(p0, _tcross(p2, p3)) / vol
    lam[2] = _dot(p0, _tcross(p1, p3)) / vol
    lam[3] = -_dot(p0, _tcross(p1, p2)) / vol
    return True



@jit
def _closest_on_simplex(S, k, lw):
    """:func:`core.contacts.narrow._closest_on_simplex` of the first k points of GJK's
    simplex ``W`` (rows 8-11 of ``S (16, 3)``): the weights into ``lw[:4]``; returns their
    number and the row of the kept subset in ``_SUBSET_ROWS[k - 1]`` (its indices
    ascending). Rows 12-15 of S and ``lw[4:]`` are work space."""
    P, w = S[12:], lw[4:]
    best, size, at = np.inf, 0, 0
    for r in range((1 << k) - 1):
        m = _SUBSET_ROWS[k - 1, r, 0]
        for q in range(m):
            i = 8 + _SUBSET_ROWS[k - 1, r, 1 + q]
            P[q, 0], P[q, 1], P[q, 2] = S[i, 0], S[i, 1], S[i, 2]
        if not _weights(P, m, w):
            continue
        low = w[0]
        for q in range(1, m):
            low = min(low, w[q])
        if low <= 0.0:
            continue
        x0 = x1 = x2 = 0.0
        for q in range(m):
            x0 += w[q] * P[q, 0]
            x1 += w[q] * P[q, 1]
            x2 += w[q] * P[q, 2]
        d = x0 * x0 + x1 * x1 + x2 * x2
        if d < best:
            best, size, at = d, m, r
            for q in range(m):
                lw[q] = w[q]
    return size, at


@inline
def _support(V, d, sign):
    """The first row of ``V (k, 3)`` with the largest ``sign (row . d)``."""
    best, at = sign * _dot(_row(V, 0), d), 0
    for i in range(1, V.shape[0]):
        x = sign * _dot(_row(V, i), d)
        if x > best:
            best, at = x, i
    return at


@jit
def gjk(VA, VB, S, lw):
    """:func:`core.contacts.narrow.gjk`: ``(distance, a, b)`` (a, b tuples). The simplex
    lives in the work arrays ``S (16, 3)`` (rows 0-3 its points of A, 4-7 of B, 8-11 their
    differences W) and ``lw (8,)`` (its weights first)."""
    scale = 1e-300
    for V in (VA, VB):
        for i in range(V.shape[0]):
            for c in range(3):
                scale = max(scale, abs(V[i, c]))
    for c in range(3):
        S[0, c], S[4, c] = VA[0, c], VB[0, c]
    m = 1
    lw[0] = 1.0
    v = _tsub(_row(VA, 0), _row(VB, 0))
    for _ in range(GJK_ITERATIONS):
        vv = _dot(v, v)
        if vv <= (1e-13 * scale) ** 2:
            break
        ia, ib = _support(VA, v, -1.0), _support(VB, v, 1.0)
        a, b = _row(VA, ia), _row(VB, ib)
        if vv - _dot(v, _tsub(a, b)) <= 1e-12 * vv:
            break
        seen = False
        for q in range(m):
            if _row(S, q) == a and _row(S, 4 + q) == b:
                seen = True
        if seen:
            break
        for c in range(3):
            S[m, c], S[4 + m, c] = a[c], b[c]
        m += 1
        for q in range(m):
            for c in range(3):
                S[8 + q, c] = S[q, c] - S[4 + q, c]
        size, r = _closest_on_simplex(S, m, lw)
        v0 = v1 = v2 = 0.0
        for q in range(size):
            k = _SUBSET_ROWS[m - 1, r, 1 + q]
            for c in range(3):
                S[q, c], S[4 + q, c] = S[k, c], S[4 + k, c]
            v0 += lw[q] * S[8 + k, 0]
            v1 += lw[q] * S[8 + k, 1]
            v2 += lw[q] * S[8 + k, 2]
        v = (v0, v1, v2)
        m = size
        if m == 4:                               # the origin is inside the tetrahedron
            v = (0.0, 0.0, 0.0)
            break
    a0 = a1 = a2 = b0 = b1 = b2 = 0.0
    for q in range(m):
        a0 += lw[q] * S[q, 0]
        a1 += lw[q] * S[q, 1]
        a2 += lw[q] * S[q, 2]
        b0 += lw[q] * S[4 + q, 0]
        b1 += lw[q] * S[4 + q, 1]
        b2 += lw[q] * S[4 + q, 2]
    a, b = (a0, a1, a2), (b0, b1, b2)
    vv = _dot(v, v)
    if vv <= (1e-13 * scale) ** 2:
        return 0.0, a, a
    return np.sqrt(vv), a, b


# -- the shapes of one call --------------------------------------------------------------
#: where the parts of ``G = (I, X, Y, L)`` start: ``I`` the packed ints
#: (:class:`core.compiled.pack.PackedShapes`: vstart at 0, then fstart, estart, dstart,
#: fvstart, fidx, edges (flat), edir), ``X (rows, 3)`` the world vertices (row 0), normals,
#: edge directions and work rows (GJK's simplex, two clipping buffers of ``clip_rows``),
#: ``Y`` the world face offsets (at 0), radii, extents and work values (GJK's weights,
#: the clipping's side distances)
_Layout = namedtuple("_Layout", ["fstart", "estart", "dstart", "fvstart", "fidx", "edges",
                                 "edir", "normals", "dirs", "simplex", "clip", "clip_rows",
                                 "radius", "extent", "weights", "sides"])


@inline
def _v(G, s):
    """Shape s's world core vertices ``(k, 3)`` (a view)."""
    return G[1][G[0][s]:G[0][s + 1]]


@inline
def _faces(G, s):
    """The range of shape s's faces (global indices)."""
    I, L = G[0], G[3]
    return I[L.fstart + s], I[L.fstart + s + 1]


@inline
def _polytope(G, s):
    f0, f1 = _faces(G, s)
    return f1 > f0


@inline
def _normal(G, f):
    """Face f's world normal, a tuple."""
    return _row(G[1], G[3].normals + f)


@inline
def _corners(G, f):
    """Face f's number of corners."""
    I, L = G[0], G[3]
    return I[L.fvstart + f + 1] - I[L.fvstart + f]


@inline
def _corner(G, s, f, q):
    """Corner q of face f (global index) of shape s in the world, a tuple."""
    I, L = G[0], G[3]
    return _row(G[1], I[s] + I[L.fidx + I[L.fvstart + f] + q])


@inline
def _radius(G, s):
    return G[2][G[3].radius + s]


@jit
def _best_face(G, s, n, sign):
    """The first face of shape s whose world normal has the largest ``sign (n_f . n)``."""
    f0, f1 = _faces(G, s)
    nrm = G[3].normals
    return f0 + _support(G[1][nrm + f0:nrm + f1], n, sign)


@inline
def _lowest(V, n):
    """:func:`core.contacts.narrow._lowest`: the first row of ``V (k, 3)`` whose dot product
    with n is within :data:`~core.contacts.narrow.LOW_TIE` of the least, a tuple."""
    least, size = np.inf, 0.0
    for i in range(V.shape[0]):
        least = min(least, _dot(_row(V, i), n))
        for a in range(3):
            size = max(size, abs(V[i, a]))
    low = least + LOW_TIE * size
    at = 0
    while _dot(_row(V, at), n) > low:
        at += 1
    return _row(V, at)


@jit
def _overlap(VA, VB, u):
    """The overlap of the projections of VA and VB on u and the direction (u or -u, from A
    to B) it is measured along."""
    amin, amax = np.inf, -np.inf
    for i in range(VA.shape[0]):
        x = _dot(_row(VA, i), u)
        amin, amax = min(amin, x), max(amax, x)
    bmin, bmax = np.inf, -np.inf
    for i in range(VB.shape[0]):
        x = _dot(_row(VB, i), u)
        bmin, bmax = min(bmin, x), max(bmax, x)
    o0, o1 = amax - bmin, bmax - amin
    if o0 <= o1:
        return o0, u
    return o1, (-u[0], -u[1], -u[2])


@jit
def sat(G, A, B):
    """:func:`core.contacts.narrow.sat` of shapes A and B: ``(overlap, normal, edge, ia,
    ib)`` with ``edge`` False for a face axis, else the edge direction indices (within each
    shape)."""
    I, X, L = G[0], G[1], G[3]
    VA, VB = _v(G, A), _v(G, B)
    zero = (0.0, 0.0, 0.0)
    best_face, face_n, face_found = np.inf, zero, False
    best_edge, edge_n, edge_found, ea, eb = np.inf, zero, False, 0, 0
    for side_shape in range(2):
        f0, f1 = _faces(G, A if side_shape == 0 else B)
        for f in range(f0, f1):
            o, n = _overlap(VA, VB, _normal(G, f))
            if o < best_face:
                best_face, face_n, face_found = o, n, True
    d0, d1 = I[L.dstart + A], I[L.dstart + A + 1]
    e0, e1 = I[L.dstart + B], I[L.dstart + B + 1]
    for i in range(d0, d1):
        for j in range(e0, e1):
            c = _tcross(_row(X, L.dirs + i), _row(X, L.dirs + j))
            norm = np.sqrt(_dot(c, c))
            if norm > PARALLEL_CROSS:
                o, n = _overlap(VA, VB, (c[0] / norm, c[1] / norm, c[2] / norm))
                if o < best_edge:
                    best_edge, edge_n, edge_found, ea, eb = o, n, True, i - d0, j - e0
    if edge_found and (not face_found or
                       best_edge < best_face - EDGE_PREFERENCE * abs(best_face)):
        return best_edge, edge_n, True, ea, eb
    return best_face, face_n, False, 0, 0


# -- clipping and contacts ---------------------------------------------------------------
@jit
def _clip(G, X, xf, R, f, nf):
    """:func:`core.contacts.narrow._clip`: the points of shape X (its face xf, global index,
    or its core vertices for ``xf < 0``) clipped to the prism of face f of shape R
    (counter-clockwise about its normal ``nf``): ``(P, p0, n)``, the kept points rows
    ``p0 .. p0 + n`` of P, a clipping buffer of the call's world rows (or a new array where
    a polygon outgrows the buffers)."""
    L = G[3]
    P, p0, pcap = G[1], L.clip, L.clip_rows
    Q, q0, qcap = G[1], L.clip + L.clip_rows, L.clip_rows
    D, d0, dcap = G[2], L.sides, L.clip_rows
    if xf >= 0:
        n = _corners(G, xf)
        for q in range(n):
            P[p0 + q, 0], P[p0 + q, 1], P[p0 + q, 2] = _corner(G, X, xf, q)
    else:
        V = _v(G, X)
        n = V.shape[0]
        for q in range(n):
            P[p0 + q, 0], P[p0 + q, 1], P[p0 + q, 2] = V[q, 0], V[q, 1], V[q, 2]
    m = _corners(G, f)
    for k in range(m):
        if n == 0:
            break
        a = _corner(G, R, f, k)
        inward = _tcross(nf, _tsub(_corner(G, R, f, (k + 1) % m), a))
        if n > dcap:                              # only after a polygon outgrew the buffers
            D, d0, dcap = np.empty(n), 0, n
        for i in range(n):
            D[d0 + i] = _dot(_tsub(_row(P, p0 + i), a), inward)
        if n == 1:
            if D[d0] < 0.0:
                n = 0
        elif n == 2:
            da, db = D[d0], D[d0 + 1]
            if min(da, db) >= 0.0:
                continue
            if max(da, db) < 0.0:
                n = 0
                continue
            t = da / (da - db)
            x = (P[p0, 0] + (P[p0 + 1, 0] - P[p0, 0]) * t,
                 P[p0, 1] + (P[p0 + 1, 1] - P[p0, 1]) * t,
                 P[p0, 2] + (P[p0 + 1, 2] - P[p0, 2]) * t)
            row = p0 if da < 0.0 else p0 + 1
            P[row, 0], P[row, 1], P[row, 2] = x
        else:
            size = 0                              # the kept points and the crossings
            for i in range(n):
                inside = D[d0 + i] >= 0.0
                size += inside + (inside != (D[d0 + (i + 1) % n] >= 0.0))
            if size > qcap:
                Q, q0, qcap = np.empty((size, 3)), 0, size
            c = q0
            for i in range(n):
                j = (i + 1) % n
                di, dj = D[d0 + i], D[d0 + j]
                if di >= 0.0:
                    Q[c, 0], Q[c, 1], Q[c, 2] = P[p0 + i, 0], P[p0 + i, 1], P[p0 + i, 2]
                    c += 1
                if (di >= 0.0) != (dj >= 0.0):
                    t = di / (di - dj)
                    for e in range(3):
                        Q[c, e] = P[p0 + i, e] + (P[p0 + j, e] - P[p0 + i, e]) * t
                    c += 1
            P, p0, pcap, Q, q0, qcap, n = Q, q0, qcap, P, p0, pcap, c - q0
    return P, p0, n


@jit
def _add(out, c, p, n, s, k):
    """``out = (O (cap, 7), K (cap, 3))`` (per contact point, normal and separation; pair
    and feature; grown by doubling when full) with the contact ``(p, n, s, k)`` in row c,
    and ``c + 1``."""
    O, K = out
    if c == O.shape[0]:
        O2, K2 = np.empty((2 * c, 7)), np.empty((2 * c, 3), dtype=np.int64)
        O2[:c] = O
        K2[:c] = K
        O, K = O2, K2
    O[c, 0], O[c, 1], O[c, 2] = p
    O[c, 3], O[c, 4], O[c, 5] = n
    O[c, 6] = s
    K[c, 2] = k
    return (O, K), c + 1


@jit
def _face_contacts(G, R, f, X, xf, radius, margin, out, c):
    """:func:`core.contacts.narrow._face_contacts`: the points of shape X (core radius
    ``radius``; its face xf, or its core vertices for ``xf < 0``) clipped to face f (global
    index) of polytope R, appended at row c; returns ``(out, c)``."""
    nf = _normal(G, f)
    P, p0, m = _clip(G, X, xf, R, f, nf)
    for k in range(m):
        x = _row(P, p0 + k)
        s = _dot(x, nf) - G[2][f] - radius
        if s < margin:
            out, c = _add(out, c, _tmad(x, -(radius + 0.5 * s), nf), nf, s, k)
    return out, c


@inline
def _incident(G, X, n):
    """:func:`core.contacts.narrow._incident`: X's face most opposed to n (global index) for
    a polytope, else -1 (its core vertices)."""
    if _polytope(G, X):
        return _best_face(G, X, n, -1.0)
    return -1


@jit
def _edge_support(G, S, k, n, sign):
    """The ends of S's edge along its direction k whose midpoint is furthest along
    ``sign n`` (the core's segment for a capsule)."""
    V = _v(G, S)
    if not _polytope(G, S):
        return _row(V, 0), _row(V, V.shape[0] - 1)
    I, L = G[0], G[3]
    best, at = -np.inf, -1
    for e in range(I[L.estart + S], I[L.estart + S + 1]):
        if I[L.edir + e] == k:
            x = sign * _dot(_tadd(_row(V, I[L.edges + 2 * e]), _row(V, I[L.edges + 2 * e + 1])),
                            n)
            if at < 0 or x > best:
                best, at = x, e
    return _row(V, I[L.edges + 2 * at]), _row(V, I[L.edges + 2 * at + 1])


@jit
def _edge_contact(G, A, B, n, ia, ib, overlap, out, c):
    """:func:`core.contacts.narrow._edge_contact`."""
    a0, a1 = _edge_support(G, A, ia, n, 1.0)
    b0, b1 = _edge_support(G, B, ib, n, -1.0)
    _, _, pa, pb = closest_segments(a0, a1, b0, b1)
    ra, rb = _radius(G, A), _radius(G, B)
    s = -overlap - ra - rb
    return _add(out, c, _mid(pa, pb, n, ra, rb), n, s, int(0))


@jit
def _rounded(G, A, B, margin, out, c):
    """:func:`core.contacts.narrow._rounded`: two point/segment cores."""
    VA, VB = _v(G, A), _v(G, B)
    la, lb = VA.shape[0], VB.shape[0]
    a0, a1, b0, b1 = _row(VA, 0), _row(VA, la - 1), _row(VB, 0), _row(VB, lb - 1)
    _, _, ca, cb = closest_segments(a0, a1, b0, b1)
    g = _tsub(cb, ca)
    d = np.sqrt(_dot(g, g))
    ra, rb = _radius(G, A), _radius(G, B)
    if d - ra - rb >= margin:
        return out, c
    if d > 1e-12 * (G[2][G[3].extent + A] + G[2][G[3].extent + B]):
        n = (g[0] / d, g[1] / d, g[2] / d)
    else:                                        # cores meet: any direction across them
        axis = _tsub(a1, a0) if la == 2 else _tsub(b1, b0)
        if abs(axis[2]) < 0.9 * np.sqrt(_dot(axis, axis)):
            ref = (0.0, 0.0, 1.0)
        else:
            ref = (1.0, 0.0, 0.0)
        n = _tcross(axis, ref) if _dot(axis, axis) > 0 else ref
        norm = np.sqrt(_dot(n, n))
        n = (n[0] / norm, n[1] / norm, n[2] / norm)
    if la == 2 and lb == 2:                      # parallel capsules: the overlap's two ends
        u = _tsub(a1, a0)
        L = np.sqrt(_dot(u, u))
        u = (u[0] / L, u[1] / L, u[2] / L)
        w = _tsub(b1, b0)
        x = _tcross(u, w)
        if np.sqrt(_dot(x, x)) < 1e-3 * np.sqrt(_dot(w, w)):
            s0, s1 = _dot(_tsub(b0, a0), u), _dot(_tsub(b1, a0), u)
            lo, hi = max(0.0, min(s0, s1)), min(L, max(s0, s1))
            if hi - lo > 1e-9 * L:
                for k in range(2):
                    pa = _tmad(a0, lo if k == 0 else hi, u)
                    _, _, _, pb = closest_segments(pa, pa, b0, b1)
                    s = _dot(_tsub(pb, pa), n) - ra - rb
                    if s < margin:
                        out, c = _add(out, c, _mid(pa, pb, n, ra, rb), n, s, k)
                return out, c
    return _add(out, c, _mid(ca, cb, n, ra, rb), n, d - ra - rb, int(0))


@inline
def _plane_apart(G, P, V, gap):
    """Whether all of ``V (k, 3)`` lie at least ``gap`` outside one face plane of polytope
    P: then the distance of P and conv(V) is at least gap (P lies inside the plane)."""
    f0, f1 = _faces(G, P)
    for f in range(f0, f1):
        nf = _normal(G, f)
        low = np.inf
        for i in range(V.shape[0]):
            low = min(low, _dot(_row(V, i), nf))
        if low - G[2][f] >= gap:
            return True
    return False


@jit
def _polytope_rounded(G, P, X, margin, out, c):
    """:func:`core.contacts.narrow._polytope_rounded`: a polytope P and a point/segment core
    X, normals from P to X."""
    VX = _v(G, X)
    r = _radius(G, X)
    if _plane_apart(G, P, VX, r + margin):
        return out, c
    sim, wts = G[3].simplex, G[3].weights
    d, cp, cx = gjk(_v(G, P), VX, G[1][sim:sim + 16], G[2][wts:wts + 8])
    if d - r >= margin:
        return out, c
    if d > 0.0:
        n = ((cx[0] - cp[0]) / d, (cx[1] - cp[1]) / d, (cx[2] - cp[2]) / d)
        f = _best_face(G, P, n, 1.0)
        if _dot(_normal(G, f), n) > FACE_COS:
            out, c2 = _face_contacts(G, P, f, X, -1, r, margin, out, c)
            if c2 > c:
                return out, c2
        s = d - r
        return _add(out, c, _tmad(cp, 0.5 * s, n), n, s, int(0))
    overlap, n, edge, ia, ib = sat(G, P, X)
    if edge:
        return _edge_contact(G, P, X, n, ia, ib, overlap, out, c)
    f = _best_face(G, P, n, 1.0)
    out, c2 = _face_contacts(G, P, f, X, -1, r, margin, out, c)
    if c2 > c:
        return out, c2
    x = _lowest(VX, n)
    s = -overlap - r
    return _add(out, c, _tmad(x, -(r + 0.5 * s), n), n, s, int(0))


@inline
def _flip(out, c0, c):
    for k in range(c0, c):
        for a in range(3, 6):
            out[0][k, a] = -out[0][k, a]


@jit
def _polytopes(G, A, B, margin, out, c):
    """:func:`core.contacts.narrow._polytopes`."""
    overlap, n, edge, ia, ib = sat(G, A, B)
    if -overlap >= margin:
        return out, c
    if edge:
        return _edge_contact(G, A, B, n, ia, ib, overlap, out, c)
    fa, fb = _best_face(G, A, n, 1.0), _best_face(G, B, n, -1.0)
    na, nb = _normal(G, fa), _normal(G, fb)
    if _dot(na, n) >= _dot(nb, (-n[0], -n[1], -n[2])):
        out, c2 = _face_contacts(G, A, fa, B, _incident(G, B, na), 0.0, margin, out, c)
    else:
        out, c2 = _face_contacts(G, B, fb, A, _incident(G, A, nb), 0.0, margin, out, c)
        _flip(out, c, c2)
    if c2 > c:
        return out, c2
    x = _lowest(_v(G, B), n)
    return _add(out, c, _tmad(x, 0.5 * overlap, n), n, -overlap, int(0))


@jit
def collide(G, A, B, margin, out, c):
    """:func:`core.contacts.narrow.collide` of shapes A and B, appended to ``out`` at row c:
    returns ``(out, c)`` after the new rows (their pair column unset)."""
    pa, pb = _polytope(G, A), _polytope(G, B)
    if pa and pb:
        return _polytopes(G, A, B, margin, out, c)
    if pa:
        return _polytope_rounded(G, A, B, margin, out, c)
    if pb:
        out, c2 = _polytope_rounded(G, B, A, margin, out, c)
        _flip(out, c, c2)
        return out, c2
    return _rounded(G, A, B, margin, out, c)


# -- posing and the broad phase ----------------------------------------------------------
@inline
def _transform(T, x):
    """``R x`` for ``R`` the 3x3 block of a pose T and a row x, a tuple."""
    return (T[0, 0] * x[0] + T[0, 1] * x[1] + T[0, 2] * x[2],
            T[1, 0] * x[0] + T[1, 1] * x[1] + T[1, 2] * x[2],
            T[2, 0] * x[0] + T[2, 1] * x[1] + T[2, 2] * x[2])


@jit
def pair_contacts(ints, rows, reals, poses, ns, allowed, margin):
    """The contacts closer than ``margin`` of the packed shapes (the arrays of
    :class:`core.compiled.pack.PackedShapes`) at the world ``poses (N, 4, 4)``: items
    ``[0, ns)`` the model's shapes, the rest the world's (never collided with each other);
    a model shape i and an item j only where ``allowed[i, j]`` (``(ns, N)``). The pairs are those whose world
    boxes grown by their radius and the margin overlap, each collided as by
    :func:`core.contacts.narrow.collide` with the world side first. Returns ``(pairs (c,
    2), points (c, 3), normals (c, 3), separations (c,), features (c,))``, pairs in
    increasing ``(i, j)`` order."""
    N = poses.shape[0]
    nv, nf, nd = ints[N], ints[2 * N + 1], ints[4 * N + 3]
    fvstart = 4 * (N + 1)
    fidx = fvstart + nf + 1
    edges = fidx + ints[fvstart + nf]
    # the clipping buffers hold twice the most corners of a face (at least 2): a convex
    # polygon clipped to a face's prism keeps at most as many points as the two have corners
    most = 2
    for f in range(nf):
        most = max(most, ints[fvstart + f + 1] - ints[fvstart + f])
    L = _Layout(N + 1, 2 * (N + 1), 3 * (N + 1), fvstart, fidx, edges,
                edges + 2 * ints[3 * N + 2], nv, nv + nf, nv + nf + nd, nv + nf + nd + 16,
                2 * most, nf, nf + N, nf + 2 * N, nf + 2 * N + 8)
    X = np.empty((L.clip + 2 * L.clip_rows, 3))
    Y = np.empty(L.sides + L.clip_rows)
    lo, hi = np.empty((N, 3)), np.empty((N, 3))
    for s in range(N):
        T = poses[s]
        p = (T[0, 3], T[1, 3], T[2, 3])
        for k in range(ints[s], ints[s + 1]):
            X[k, 0], X[k, 1], X[k, 2] = _tadd(_transform(T, _row(rows, k)), p)
        for f in range(ints[L.fstart + s], ints[L.fstart + s + 1]):
            n = _transform(T, _row(rows, L.normals + f))
            X[L.normals + f, 0], X[L.normals + f, 1], X[L.normals + f, 2] = n
            Y[f] = reals[f] + _dot(n, p)
        for d in range(ints[L.dstart + s], ints[L.dstart + s + 1]):
            X[L.dirs + d, 0], X[L.dirs + d, 1], X[L.dirs + d, 2] = \
                _transform(T, _row(rows, L.dirs + d))
        Y[L.radius + s], Y[L.extent + s] = reals[nf + s], reals[nf + N + s]
        r = reals[nf + s] + margin
        for a in range(3):
            low, high = np.inf, -np.inf
            for k in range(ints[s], ints[s + 1]):
                low, high = min(low, X[k, a]), max(high, X[k, a])
            lo[s, a], hi[s, a] = low - r, high + r
    G = (ints, X, Y, L)
    out = (np.empty((4 * N, 7)), np.empty((4 * N, 3), dtype=np.int64))
    c = int(0)
    for i in range(ns):
        for j in range(i + 1, N):
            if not allowed[i, j]:
                continue
            apart = False
            for a in range(3):
                if lo[j, a] > hi[i, a] or hi[j, a] < lo[i, a]:
                    apart = True
            if apart:
                continue
            c0 = c
            if j >= ns:
                out, c = collide(G, j, i, margin, out, c)
            else:
                out, c = collide(G, i, j, margin, out, c)
            for k in range(c0, c):
                out[1][k, 0], out[1][k, 1] = i, j
    O, K = out
    return (K[:c, :2].copy(), O[:c, :3].copy(), O[:c, 3:6].copy(), O[:c, 6].copy(),
            K[:c, 2].copy())
