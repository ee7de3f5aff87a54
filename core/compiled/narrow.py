"""numba broad and narrow phase of the contact solver: the contacts of every candidate pair
of posed shapes in one kernel call (:func:`pair_contacts`), for
:meth:`core.contacts.solver.ContactSolver.find_contacts` on the numba backend.

The shapes are packed once per solver into flat arrays
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
with the same features. The two differ by rounding only (products may be fused here, and
numpy's small products may sum in another order), so a contact set differs only where a
quantity lies within rounding of one of the narrow phase's thresholds.

The contacts come back as arrays: the pair ``(i, j)`` (item indices, ``i < j``), point,
normal (from the pair's first shape, the world side for a world pair, to the second),
separation and feature.
"""

import numpy as np

from ..contacts.narrow import _SUBSETS, EDGE_PREFERENCE, FACE_COS, LOW_TIE, PARALLEL_CROSS
from .kernels import _inline, _jit

__all__ = ["pair_contacts"]

#: GJK's iteration cap (:func:`core.contacts.narrow.gjk`'s default)
GJK_ITERATIONS = 64
#: per simplex size k (1..4) its subsets in the reference's order (largest first): a row
#: ``[size, i0, i1, i2, i3]``; rows past ``2^k - 1`` unused
_SUBSET_ROWS = np.zeros((4, 15, 5), dtype=np.int64)
for _k in range(1, 5):
    for _r, _s in enumerate(_SUBSETS[_k]):
        _SUBSET_ROWS[_k - 1, _r, 0] = len(_s)
        _SUBSET_ROWS[_k - 1, _r, 1:1 + len(_s)] = _s
del _k, _r, _s


# -- small vector helpers ----------------------------------------------------------------
@_inline
def _dot(a, b):
    """The dot product of two 3-vectors (arrays or tuples)."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@_inline
def _cross(a, b):
    """The cross product of two 3-vectors as an array (:func:`_tcross`: as a tuple)."""
    out = np.empty(3)
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]
    return out


@_inline
def _clamp01(x):
    return min(max(x, 0.0), 1.0)


@_jit
def closest_segments(p1, q1, p2, q2):
    """:func:`core.contacts.narrow.closest_segments`: ``(s, t, c1 (3,), c2 (3,))``."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f = _dot(d1, d1), _dot(d2, d2), _dot(d2, r)
    tiny = 1e-300
    if a <= tiny and e <= tiny:
        return 0.0, 0.0, p1.copy(), p2.copy()
    if a <= tiny:
        t = _clamp01(f / e)
        return 0.0, t, p1.copy(), p2 + t * d2
    c = _dot(d1, r)
    if e <= tiny:
        s = _clamp01(-c / a)
        return s, 0.0, p1 + s * d1, p2.copy()
    b = _dot(d1, d2)
    denom = a * e - b * b
    s = _clamp01((b * f - c * e) / denom) if denom > 1e-14 * a * e else 0.0
    t = (b * s + f) / e
    if t < 0.0:
        t, s = 0.0, _clamp01(-c / a)
    elif t > 1.0:
        t, s = 1.0, _clamp01((b - c) / a)
    return s, t, p1 + s * d1, p2 + t * d2


# -- GJK ---------------------------------------------------------------------------------
@_inline
def _row(P, i):
    """Row i of ``P (k, 3)`` as a tuple (scalars, no array)."""
    return P[i, 0], P[i, 1], P[i, 2]


@_inline
def _tsub(a, b):
    return a[0] - b[0], a[1] - b[1], a[2] - b[2]


@_inline
def _tcross(a, b):
    return a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]


@_jit
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


@_jit
def _closest_on_simplex(W, k, lam, keep):
    """:func:`core.contacts.narrow._closest_on_simplex` of the first k rows of ``W (4, 3)``:
    the weights into ``lam``, the kept indices (ascending) into ``keep``; returns their
    number."""
    P = np.empty((4, 3))
    w = np.empty(4)
    best, size = np.inf, 0
    for r in range((1 << k) - 1):
        m = _SUBSET_ROWS[k - 1, r, 0]
        for q in range(m):
            P[q] = W[_SUBSET_ROWS[k - 1, r, 1 + q]]
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
            best, size = d, m
            for q in range(m):
                lam[q] = w[q]
                keep[q] = _SUBSET_ROWS[k - 1, r, 1 + q]
    return size


@_inline
def _support(V, d, sign):
    """The first row of ``V (k, 3)`` with the largest ``sign (row . d)``."""
    best, at = sign * _dot(V[0], d), 0
    for i in range(1, V.shape[0]):
        x = sign * _dot(V[i], d)
        if x > best:
            best, at = x, i
    return at


@_jit
def gjk(VA, VB):
    """:func:`core.contacts.narrow.gjk`: ``(distance, a (3,), b (3,))``."""
    scale = 1e-300
    for V in (VA, VB):
        for i in range(V.shape[0]):
            for c in range(3):
                scale = max(scale, abs(V[i, c]))
    SA, SB, W = np.empty((4, 3)), np.empty((4, 3)), np.empty((4, 3))
    lam = np.zeros(4)
    keep = np.zeros(4, dtype=np.int64)
    SA[0], SB[0] = VA[0], VB[0]
    m = 1
    lam[0] = 1.0
    v = VA[0] - VB[0]
    for _ in range(GJK_ITERATIONS):
        vv = _dot(v, v)
        if vv <= (1e-13 * scale) ** 2:
            break
        ia, ib = _support(VA, v, -1.0), _support(VB, v, 1.0)
        w = _tsub(_row(VA, ia), _row(VB, ib))
        if vv - _dot((v[0], v[1], v[2]), w) <= 1e-12 * vv:
            break
        seen = False
        for q in range(m):
            if _row(SA, q) == _row(VA, ia) and _row(SB, q) == _row(VB, ib):
                seen = True
        if seen:
            break
        SA[m], SB[m] = VA[ia], VB[ib]
        m += 1
        for q in range(m):
            W[q] = SA[q] - SB[q]
        size = _closest_on_simplex(W, m, lam, keep)
        v = np.zeros(3)
        for q in range(size):
            SA[q], SB[q] = SA[keep[q]], SB[keep[q]]
            v += lam[q] * W[keep[q]]
        m = size
        if m == 4:                               # the origin is inside the tetrahedron
            v = np.zeros(3)
            break
    a, b = np.zeros(3), np.zeros(3)
    for q in range(m):
        a += lam[q] * SA[q]
        b += lam[q] * SB[q]
    vv = _dot(v, v)
    if vv <= (1e-13 * scale) ** 2:
        return 0.0, a, a.copy()
    return np.sqrt(vv), a, b


# -- the shapes of one call --------------------------------------------------------------
# G: (vstart, fstart, fvstart, fidx, estart, edges, edir, dstart, wv, wn, wo, wd, radius,
#     extent), the packed arrays with the world vertices wv, normals wn, offsets wo and
#     edge directions wd

@_inline
def _v(G, s):
    """Shape s's world core vertices ``(k, 3)`` (a view)."""
    return G[8][G[0][s]:G[0][s + 1]]


@_inline
def _polytope(G, s):
    return G[1][s + 1] > G[1][s]


@_jit
def _face_points(G, s, f):
    """The world vertices ``(m, 3)`` of face f (global index) of shape s, in order."""
    fvstart, fidx, wv = G[2], G[3], G[8]
    base = G[0][s]
    F = np.empty((fvstart[f + 1] - fvstart[f], 3))
    for q in range(F.shape[0]):
        F[q] = wv[base + fidx[fvstart[f] + q]]
    return F


@_jit
def _best_face(G, s, n, sign):
    """The first face of shape s whose world normal has the largest ``sign (n_f . n)``."""
    f0 = G[1][s]
    return f0 + _support(G[9][f0:G[1][s + 1]], n, sign)


@_inline
def _lowest(V, n):
    """:func:`core.contacts.narrow._lowest`: the first row of ``V (k, 3)`` whose dot product
    with n is within :data:`~core.contacts.narrow.LOW_TIE` of the least."""
    h = np.empty(V.shape[0])
    size = 0.0
    for i in range(V.shape[0]):
        h[i] = _dot(V[i], n)
        for a in range(3):
            size = max(size, abs(V[i, a]))
    low = h.min() + LOW_TIE * size
    at = 0
    while h[at] > low:
        at += 1
    return V[at]


@_jit
def sat(G, A, B):
    """:func:`core.contacts.narrow.sat` of shapes A and B: ``(overlap, normal (3,), edge,
    ia, ib)`` with ``edge`` False for a face axis, else the edge direction indices (within
    each shape)."""
    wn, wd = G[9], G[11]
    VA, VB = _v(G, A), _v(G, B)
    best_face, face_n, face_found = np.inf, np.zeros(3), False
    best_edge, edge_n, edge_found, ea, eb = np.inf, np.zeros(3), False, 0, 0
    for side_shape in range(2):
        s = A if side_shape == 0 else B
        axes = wn[G[1][s]:G[1][s + 1]]
        for k in range(axes.shape[0]):
            o, n = _overlap(VA, VB, axes[k])
            if o < best_face:
                best_face, face_n, face_found = o, n, True
    d0, d1 = G[7][A], G[7][A + 1]
    e0, e1 = G[7][B], G[7][B + 1]
    for i in range(d0, d1):
        for j in range(e0, e1):
            c = _cross(wd[i], wd[j])
            norm = np.sqrt(_dot(c, c))
            if norm > PARALLEL_CROSS:
                o, n = _overlap(VA, VB, c / norm)
                if o < best_edge:
                    best_edge, edge_n, edge_found, ea, eb = o, n, True, i - d0, j - e0
    if edge_found and (not face_found or
                       best_edge < best_face - EDGE_PREFERENCE * abs(best_face)):
        return best_edge, edge_n, True, ea, eb
    return best_face, face_n, False, 0, 0


@_jit
def _overlap(VA, VB, u):
    """The overlap of the projections of VA and VB on u and the direction (u or -u, from A
    to B) it is measured along."""
    amin, amax = np.inf, -np.inf
    for i in range(VA.shape[0]):
        x = _dot(VA[i], u)
        amin, amax = min(amin, x), max(amax, x)
    bmin, bmax = np.inf, -np.inf
    for i in range(VB.shape[0]):
        x = _dot(VB[i], u)
        bmin, bmax = min(bmin, x), max(bmax, x)
    o0, o1 = amax - bmin, bmax - amin
    if o0 <= o1:
        return o0, u.copy()
    return o1, -u


# -- clipping and contacts ---------------------------------------------------------------
@_jit
def _clip(points, F, nf):
    """:func:`core.contacts.narrow._clip`: ``points (k, 3)`` clipped to the prism of the face
    polygon ``F (m, 3)`` (counter-clockwise about ``nf``)."""
    P = points
    m = F.shape[0]
    for k in range(m):
        n = P.shape[0]
        if n == 0:
            break
        a = F[k]
        inward = _cross(nf, F[(k + 1) % m] - a)
        d = np.empty(n)
        for i in range(n):
            d[i] = _dot(P[i] - a, inward)
        if n == 1:
            if d[0] < 0.0:
                P = P[:0]
        elif n == 2:
            if min(d[0], d[1]) >= 0.0:
                continue
            if max(d[0], d[1]) < 0.0:
                P = P[:0]
                continue
            x = P[0] + (P[1] - P[0]) * (d[0] / (d[0] - d[1]))
            Q = P.copy()
            if d[0] < 0.0:
                Q[0] = x
            else:
                Q[1] = x
            P = Q
        else:
            Q = np.empty((2 * n, 3))
            c = 0
            for i in range(n):
                j = (i + 1) % n
                if d[i] >= 0.0:
                    Q[c] = P[i]
                    c += 1
                if (d[i] >= 0.0) != (d[j] >= 0.0):
                    Q[c] = P[i] + (P[j] - P[i]) * (d[i] / (d[i] - d[j]))
                    c += 1
            P = Q[:c]
    return P


@_jit
def _add(out, c, p, n, s, k):
    """``out`` (pairs, points, normals, separations, features; grown by doubling when full)
    with the contact ``(p, n, s, k)`` in row c, and ``c + 1``."""
    cap = out[3].shape[0]
    if c == cap:
        pairs, points = np.empty((2 * cap, 2), dtype=np.int64), np.empty((2 * cap, 3))
        normals, seps = np.empty((2 * cap, 3)), np.empty(2 * cap)
        features = np.empty(2 * cap, dtype=np.int64)
        for q in range(c):
            pairs[q, 0], pairs[q, 1] = out[0][q, 0], out[0][q, 1]
            for a in range(3):
                points[q, a], normals[q, a] = out[1][q, a], out[2][q, a]
            seps[q], features[q] = out[3][q], out[4][q]
        out = (pairs, points, normals, seps, features)
    for a in range(3):
        out[1][c, a], out[2][c, a] = p[a], n[a]
    out[3][c] = s
    out[4][c] = k
    return out, c + 1


@_jit
def _face_contacts(G, R, f, incident, radius, margin, out, c):
    """:func:`core.contacts.narrow._face_contacts`: the points ``incident (k, 3)`` of a
    shape of core radius ``radius`` clipped to face f (global index) of polytope R, appended
    at row c; returns ``(out, c)``."""
    nf = G[9][f]
    P = _clip(incident, _face_points(G, R, f), nf)
    for k in range(P.shape[0]):
        x = P[k]
        s = _dot(x, nf) - G[10][f] - radius
        if s < margin:
            out, c = _add(out, c, x - nf * (radius + 0.5 * s), nf, s, k)
    return out, c


@_jit
def _incident(G, X, n):
    """:func:`core.contacts.narrow._incident`."""
    if _polytope(G, X):
        return _face_points(G, X, _best_face(G, X, n, -1.0))
    return _v(G, X)


@_jit
def _edge_support(G, S, k, n, sign):
    """The ends of S's edge along its direction k whose midpoint is furthest along
    ``sign n`` (the core's segment for a capsule)."""
    V = _v(G, S)
    if not _polytope(G, S):
        return V[0], V[V.shape[0] - 1]
    edges, edir = G[5], G[6]
    best, at = -np.inf, -1
    for e in range(G[4][S], G[4][S + 1]):
        if edir[e] == k:
            x = sign * _dot(V[edges[e, 0]] + V[edges[e, 1]], n)
            if at < 0 or x > best:
                best, at = x, e
    return V[edges[at, 0]], V[edges[at, 1]]


@_jit
def _edge_contact(G, A, B, n, ia, ib, overlap, out, c):
    """:func:`core.contacts.narrow._edge_contact`."""
    a0, a1 = _edge_support(G, A, ia, n, 1.0)
    b0, b1 = _edge_support(G, B, ib, n, -1.0)
    _, _, pa, pb = closest_segments(a0, a1, b0, b1)
    ra, rb = G[12][A], G[12][B]
    s = -overlap - ra - rb
    return _add(out, c, 0.5 * (pa + n * ra + pb - n * rb), n, s, int(0))


@_jit
def _rounded(G, A, B, margin, out, c):
    """:func:`core.contacts.narrow._rounded`: two point/segment cores."""
    VA, VB = _v(G, A), _v(G, B)
    la, lb = VA.shape[0], VB.shape[0]
    _, _, ca, cb = closest_segments(VA[0], VA[la - 1], VB[0], VB[lb - 1])
    g = cb - ca
    d = np.sqrt(_dot(g, g))
    ra, rb = G[12][A], G[12][B]
    if d - ra - rb >= margin:
        return out, c
    if d > 1e-12 * (G[13][A] + G[13][B]):
        n = g / d
    else:                                        # cores meet: any direction across them
        axis = VA[la - 1] - VA[0] if la == 2 else VB[lb - 1] - VB[0]
        ref = np.zeros(3)
        if abs(axis[2]) < 0.9 * np.sqrt(_dot(axis, axis)):
            ref[2] = 1.0
        else:
            ref[0] = 1.0
        n = _cross(axis, ref) if _dot(axis, axis) > 0 else ref
        n = n / np.sqrt(_dot(n, n))
    if la == 2 and lb == 2:                      # parallel capsules: the overlap's two ends
        u = VA[1] - VA[0]
        L = np.sqrt(_dot(u, u))
        u = u / L
        w = VB[1] - VB[0]
        x = _cross(u, w)
        if np.sqrt(_dot(x, x)) < 1e-3 * np.sqrt(_dot(w, w)):
            s0, s1 = _dot(VB[0] - VA[0], u), _dot(VB[1] - VA[0], u)
            lo, hi = max(0.0, min(s0, s1)), min(L, max(s0, s1))
            if hi - lo > 1e-9 * L:
                for k in range(2):
                    pa = VA[0] + (lo if k == 0 else hi) * u
                    _, _, _, pb = closest_segments(pa, pa, VB[0], VB[1])
                    s = _dot(pb - pa, n) - ra - rb
                    if s < margin:
                        out, c = _add(out, c, 0.5 * (pa + n * ra + pb - n * rb), n, s, k)
                return out, c
    return _add(out, c, 0.5 * (ca + n * ra + cb - n * rb), n, d - ra - rb, int(0))


@_jit
def _polytope_rounded(G, P, X, margin, out, c):
    """:func:`core.contacts.narrow._polytope_rounded`: a polytope P and a point/segment core
    X, normals from P to X."""
    VX = _v(G, X)
    d, cp, cx = gjk(_v(G, P), VX)
    r = G[12][X]
    if d - r >= margin:
        return out, c
    wn = G[9]
    if d > 0.0:
        n = (cx - cp) / d
        f = _best_face(G, P, n, 1.0)
        if _dot(wn[f], n) > FACE_COS:
            out, c2 = _face_contacts(G, P, f, VX, r, margin, out, c)
            if c2 > c:
                return out, c2
        s = d - r
        return _add(out, c, cp + n * (0.5 * s), n, s, int(0))
    overlap, n, edge, ia, ib = sat(G, P, X)
    if edge:
        return _edge_contact(G, P, X, n, ia, ib, overlap, out, c)
    f = _best_face(G, P, n, 1.0)
    out, c2 = _face_contacts(G, P, f, VX, r, margin, out, c)
    if c2 > c:
        return out, c2
    x = _lowest(VX, n)
    s = -overlap - r
    return _add(out, c, x - n * (r + 0.5 * s), n, s, int(0))


@_inline
def _flip(out, c0, c):
    for k in range(c0, c):
        out[2][k] = -out[2][k]


@_jit
def _polytopes(G, A, B, margin, out, c):
    """:func:`core.contacts.narrow._polytopes`."""
    overlap, n, edge, ia, ib = sat(G, A, B)
    if -overlap >= margin:
        return out, c
    if edge:
        return _edge_contact(G, A, B, n, ia, ib, overlap, out, c)
    wn = G[9]
    fa, fb = _best_face(G, A, n, 1.0), _best_face(G, B, n, -1.0)
    if _dot(wn[fa], n) >= _dot(wn[fb], -n):
        out, c2 = _face_contacts(G, A, fa, _incident(G, B, wn[fa]), 0.0, margin, out, c)
    else:
        out, c2 = _face_contacts(G, B, fb, _incident(G, A, wn[fb]), 0.0, margin, out, c)
        _flip(out, c, c2)
    if c2 > c:
        return out, c2
    x = _lowest(_v(G, B), n)
    return _add(out, c, x + n * (0.5 * overlap), n, -overlap, int(0))


@_jit
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
@_inline
def _transform(R, p, x, out):
    """``out = R x + p`` (p None: ``R x``) for ``R`` the 3x3 block of a pose."""
    for a in range(3):
        out[a] = R[a, 0] * x[0] + R[a, 1] * x[1] + R[a, 2] * x[2]
        if p is not None:
            out[a] += p[a]


@_jit
def pair_contacts(vstart, fstart, fvstart, fidx, estart, edges, edir, dstart, verts,
                  normals, offsets, dirs, radius, extent, poses, ns, allowed, margin):
    """The contacts closer than ``margin`` of the packed shapes (the arrays of
    :class:`core.compiled.pack.PackedShapes`) at the world ``poses (N, 4, 4)``: items
    ``[0, ns)`` the model's shapes, the rest the world's (never collided with each other);
    two model shapes i, j only where ``allowed[i, j]``. The pairs are those whose world
    boxes grown by their radius and the margin overlap, each collided as by
    :func:`core.contacts.narrow.collide` with the world side first. Returns ``(pairs (c,
    2), points (c, 3), normals (c, 3), separations (c,), features (c,))``, pairs in
    increasing ``(i, j)`` order."""
    N = poses.shape[0]
    wv, wn = np.empty_like(verts), np.empty_like(normals)
    wo, wd = np.empty_like(offsets), np.empty_like(dirs)
    lo, hi = np.empty((N, 3)), np.empty((N, 3))
    for s in range(N):
        R, p = poses[s, :3, :3], poses[s, :3, 3]
        for k in range(vstart[s], vstart[s + 1]):
            _transform(R, p, verts[k], wv[k])
        for f in range(fstart[s], fstart[s + 1]):
            _transform(R, None, normals[f], wn[f])
            wo[f] = offsets[f] + _dot(wn[f], p)
        for d in range(dstart[s], dstart[s + 1]):
            _transform(R, None, dirs[d], wd[d])
        r = radius[s] + margin
        for a in range(3):
            low, high = np.inf, -np.inf
            for k in range(vstart[s], vstart[s + 1]):
                low, high = min(low, wv[k, a]), max(high, wv[k, a])
            lo[s, a], hi[s, a] = low - r, high + r
    G = (vstart, fstart, fvstart, fidx, estart, edges, edir, dstart, wv, wn, wo, wd, radius,
         extent)
    out = (np.empty((16, 2), dtype=np.int64), np.empty((16, 3)), np.empty((16, 3)),
           np.empty(16), np.empty(16, dtype=np.int64))
    c = int(0)
    for i in range(ns):
        for j in range(i + 1, N):
            if j < ns and not allowed[i, j]:
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
                out[0][k, 0], out[0][k, 1] = i, j
    return out[0][:c], out[1][:c], out[2][:c], out[3][:c], out[4][:c]
