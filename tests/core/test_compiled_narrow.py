"""The compiled narrow phase (core/compiled/narrow.py) against the Python one
(core/contacts/narrow.py, the reference): the same contacts (pairs, features) with the same
points, normals and separations to rounding, for every pair of shape kinds at random poses
and in the special cases (touching, coincident cores, parallel capsules and edges, face-face
manifolds, edge-edge contacts), and the same contact lists from
``ContactSolver.find_contacts`` on both backends.

Tolerance: both sides evaluate the same formulas on the same floats and differ only in the
order of the three-term sums and in fused multiply-adds, one rounding (``eps`` relative) of a
term at a time. A contact's point, normal and separation come out of at most ``OPS = 100``
such roundings on coordinates of magnitude ``L`` (the pose, GJK's last simplex projection,
a clip intersection, a normalization), and the divisions by a simplex triangle's squared
area and by a clip's ``d_i - d_j`` amplify them by at most the square of the inverse aspect
ratio of the shapes' triangles, ``KAPPA = 100`` for the shapes here (aspect ratios >= 1/10):
``OPS * KAPPA * eps * L``. The contact sets agree wherever no quantity lies within that
much of a threshold (margins, FACE_COS, EDGE_PREFERENCE), which random poses from a
continuous distribution and the special cases below (exact values) do.
"""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from core import backend
from core.compiled.pack import PackedShapes
from core.contacts import (Box, Capsule, ContactSolver, ConvexHull, MovingCollider, Plane,
                           Sphere, StaticCollider)
from core.contacts.narrow import Posed, collide
from core.contacts.rules import KEY_BITS
from core.joints.spherical import Free
from core.kinematics import update_kinematics
from core.lie import se3, so3
from core.model import Model

pytestmark = pytest.mark.skipif(not backend.available(), reason="numba does not import")

EPS = np.finfo(float).eps
OPS, KAPPA = 100, 100
MARGIN = 0.05
#: an octahedron of half-axes 0.4, 0.3, 0.25 with a seventh corner raised over one face:
#: a hull of triangles of two sizes
HULL_POINTS = np.array([[0.4, 0, 0], [-0.4, 0, 0], [0, 0.3, 0], [0, -0.3, 0], [0, 0, 0.25],
                        [0, 0, -0.25], [0.2, 0.15, 0.125]])


def kinds():
    return {"sphere": Sphere(0.15),
            "capsule": Capsule(0.1, (-0.25, 0.0, 0.0), (0.25, 0.0, 0.0)),
            "box": Box((0.3, 0.2, 0.1)),
            "hull": ConvexHull(HULL_POINTS)}


def at(rotation=(0.0, 0.0, 0.0), position=(0.0, 0.0, 0.0)):
    return se3.from_rp(so3.exp(np.asarray(rotation, dtype=float)), np.asarray(position, float))


def compiled_pair(A, TA, B, TB, margin=MARGIN):
    """The compiled contacts of shape A at TA and B at TB (both model shapes, normals from
    A to B): ``{feature: (point, normal, separation)}``."""
    from core.compiled.narrow import pair_contacts

    packed = PackedShapes([A, B])
    pairs, P, N, S, F = pair_contacts(*packed.arrays(), np.stack([TA, TB]), 2,
                                      np.ones((2, 2), dtype=bool), float(margin))
    assert np.all(pairs == [0, 1])
    return {int(k): (p, n, float(s)) for p, n, s, k in zip(P, N, S, F)}


def reference_pair(A, TA, B, TB, margin=MARGIN):
    return {k: (p, n, s) for p, n, s, k in collide(Posed(A, TA), Posed(B, TB), margin)}


def scale(*posed):
    """L: the largest coordinate magnitude of the posed cores plus their radii."""
    return max(float(np.abs(x.v).max()) + x.radius for x in posed)


def assert_same(got, want, L, radii):
    """The same features with points and separations within ``OPS * KAPPA * eps * L`` and
    normals within that times ``L / g`` where the cores are ``g = s + r_A + r_B > 0`` apart
    (such a normal is the cores' closest-point difference over g)."""
    assert got.keys() == want.keys()
    tol = OPS * KAPPA * EPS * L
    for k, (p, n, s) in want.items():
        q, m, r = got[k]
        g = s + radii
        np.testing.assert_allclose(q, p, rtol=0, atol=tol)
        np.testing.assert_allclose(m, n, rtol=0, atol=tol * (1.0 + (L / g if g > 0 else 0.0)))
        assert abs(r - s) <= tol


def check_pair(A, TA, B, TB, margin=MARGIN):
    """Both narrow phases on one pair: returns the reference's contacts."""
    want = reference_pair(A, TA, B, TB, margin)
    assert_same(compiled_pair(A, TA, B, TB, margin), want, scale(Posed(A, TA), Posed(B, TB)),
                A.radius + B.radius)
    return want


PAIRS = [(a, b) for i, a in enumerate(kinds()) for b in list(kinds())[i:]]


@given(st.integers(0, 2**32 - 1))
def test_every_pair_of_kinds_at_random_poses(seed):
    """Each kind with each (both orders) at 8 random poses per example: centres 0 to 0.9 m
    apart in a random direction, so that pairs are apart, near, touching and deep."""
    rng = np.random.default_rng(seed)
    shapes = kinds()
    for a, b in PAIRS:
        for _ in range(8):
            d = rng.normal(size=3)
            TA = at(rng.normal(size=3), rng.uniform(-2.0, 2.0, 3))
            TB = at(rng.normal(size=3), TA[:3, 3] + d / np.linalg.norm(d) * rng.uniform(0, 0.9))
            check_pair(shapes[a], TA, shapes[b], TB)
            check_pair(shapes[b], TB, shapes[a], TA)


def test_random_poses_reach_every_branch():
    """The random test's distribution gives contacts of every pair kind, apart and
    overlapping, and manifolds of several contacts wherever a polytope takes part (parallel
    capsules, which random poses do not make, are among the special cases)."""
    rng = np.random.default_rng(1)
    shapes = kinds()
    for a, b in PAIRS:
        seps, sizes = [], []
        for _ in range(200):
            d = rng.normal(size=3)
            TA = at(rng.normal(size=3), rng.uniform(-2.0, 2.0, 3))
            TB = at(rng.normal(size=3), TA[:3, 3] + d / np.linalg.norm(d) * rng.uniform(0, 0.9))
            got = check_pair(shapes[a], TA, shapes[b], TB)
            seps += [c[2] for c in got.values()]
            sizes.append(len(got))
        assert min(seps) < 0.0 < max(seps), (a, b)
        if "sphere" not in (a, b) and (a, b) != ("capsule", "capsule"):
            assert max(sizes) >= 2, (a, b)


# -- special cases ---------------------------------------------------------------------------

def test_spheres_apart_touching_overlapping_and_concentric():
    s1, s2 = Sphere(0.1), Sphere(0.2)
    for gap, count in ((0.04, 1), (0.0, 1), (-0.05, 1), (0.06, 0)):
        got = check_pair(s1, at(), s2, at(position=(0.3 + gap, 0.0, 0.0)))
        assert len(got) == count
    got = check_pair(s1, at(), s2, at())                # coincident cores
    assert abs(got[0][2] + 0.3) <= 2 * EPS


def test_capsules_crossing_parallel_and_coincident():
    c1 = Capsule(0.1, (-0.3, 0.0, 0.0), (0.3, 0.0, 0.0))
    c2 = Capsule(0.05, (-0.2, 0.0, 0.0), (0.2, 0.0, 0.0))
    assert len(check_pair(c1, at(), c2, at((0, 0, np.pi / 2), (0.1, 0, 0.12)))) == 1
    # parallel: the overlap's two ends, then a partial overlap, then end to end
    assert len(check_pair(c1, at(), c2, at(position=(0.05, 0.0, 0.14)))) == 2
    assert len(check_pair(c1, at(), c2, at(position=(0.4, 0.0, 0.14)))) == 2
    assert len(check_pair(c1, at(), c2, at(position=(0.55, 0.0, 0.0)))) == 1
    # coincident axes (cores meet along a segment) and a sphere on the axis
    assert len(check_pair(c1, at(), c2, at())) == 2
    assert len(check_pair(c1, at(), Sphere(0.1), at(position=(0.1, 0.0, 0.0)))) == 1
    assert len(check_pair(Sphere(0.1), at(), Sphere(0.1), at())) == 1


def test_box_face_manifolds_edges_and_parallel_edges():
    box = Box((0.3, 0.2, 0.1))
    small = Box((0.1, 0.1, 0.1))
    # resting face on face: the small box's 4 corners; turned 45 degrees: still 4 corners
    assert len(check_pair(box, at(), small, at(position=(0.05, 0.0, 0.199)))) == 4
    assert len(check_pair(box, at(), small, at((0, 0, np.pi / 4), (0.0, 0.0, 0.19)))) == 4
    # a large face on a small one: the clipped polygon (the small face's corners)
    assert len(check_pair(small, at(), box, at(position=(0.0, 0.0, 0.195)))) == 4
    # edge on edge: crossed ridges
    ridge_a = at((np.pi / 4, 0.0, 0.0))
    ridge_b = at((0.0, np.pi / 4, 0.0), (0.0, 0.0, 0.1 * np.sqrt(2) + 0.2 * np.sqrt(2) - 0.01))
    got = check_pair(small, ridge_a, Box((0.2, 0.3, 0.2)), ridge_b)
    assert len(got) == 1 and abs(got[0][1][2]) > 0.99
    # parallel edges: two ridges along x, side by side (no edge-edge axis from them)
    got = check_pair(small, ridge_a, small, at((np.pi / 4, 0.0, 0.0),
                                               (0.05, 0.0, 0.2 * np.sqrt(2) - 0.01)))
    assert len(got) >= 1


def test_rounded_shapes_on_polytope_faces_and_inside():
    box, hull = Box((0.3, 0.2, 0.1)), ConvexHull(HULL_POINTS)
    capsule = Capsule(0.05, (-0.1, 0.0, 0.0), (0.1, 0.0, 0.0))
    # lying on the top face (2 contacts), apart within the margin, sunk in (SAT), upright
    assert len(check_pair(box, at(), capsule, at(position=(0.0, 0.0, 0.14)))) == 2
    assert len(check_pair(box, at(), capsule, at(position=(0.0, 0.0, 0.17)))) == 2
    assert len(check_pair(box, at(), capsule, at(position=(0.0, 0.0, 0.08)))) == 2
    assert len(check_pair(box, at(), capsule, at((0, np.pi / 2, 0), (0, 0, 0.24)))) == 1
    # a sphere whose centre is inside the box, and one over a corner
    assert len(check_pair(box, at(), Sphere(0.1), at(position=(0.1, 0.05, 0.02)))) == 1
    assert len(check_pair(box, at(), Sphere(0.1), at(position=(0.35, 0.25, 0.15)))) == 1
    # the world side first: the pair the other way round
    assert len(check_pair(capsule, at(position=(0.0, 0.0, 0.14)), box, at())) == 2
    # hulls: on a box, on a hull, a capsule through a hull
    assert len(check_pair(box, at(), hull, at(position=(0.0, 0.0, 0.34)))) >= 1
    assert len(check_pair(hull, at(), hull, at((0, 0, 0.3), (0.1, 0.05, 0.45)))) >= 1
    assert len(check_pair(hull, at(), capsule, at((0.3, 0.2, 0.1), (0.05, 0.0, 0.1)))) >= 1


# -- the solver on both backends ---------------------------------------------------------------

def scene():
    """Four free bodies (a sphere, a capsule, a box, a hull), a ground plane, a static box and
    hull and a moving capsule, self-collision on."""
    m = Model()
    shapes = []
    for i, shape in enumerate(kinds().values()):
        m.add_body(f"b{i}", -1, Free(), None, 1.0, np.zeros(3), 0.01 * np.eye(3))
        shapes.append((f"b{i}", shape))
    colliders = [Plane(-0.5), StaticCollider(Box((0.4, 0.4, 0.1)), at((0.1, 0, 0), (0, 0, -0.3))),
                 StaticCollider(ConvexHull(HULL_POINTS), at(position=(0.4, 0.0, 0.0))),
                 MovingCollider(Capsule(0.1, (0, 0, -0.2), (0, 0, 0.2)),
                                lambda t: at(position=(0.3 * np.sin(t), 0.2, 0.0)))]
    return m, ContactSolver(m, shapes, colliders, self_collision=True)


def test_find_contacts_are_the_same_on_both_backends():
    m, solver = scene()
    data = m.create_data()
    radius = [s.radius for s in solver.shapes + [c.shape for c in solver.statics +
                                                  solver.movers]]
    rng = np.random.default_rng(3)
    previous = backend.active()
    seen = set()
    try:
        for _ in range(40):
            q = m.neutral()
            for i in range(4):
                q[6 * i:6 * i + 3] = rng.normal(size=3)
                q[6 * i + 3:6 * i + 6] = rng.uniform(-0.4, 0.4, 3)
            update_kinematics(m, data, q)
            t = float(rng.uniform(0, 3))
            out = {}
            for name in ("numpy", "numba"):
                backend.use(name)
                out[name] = solver.find_contacts(data, t, MARGIN)
            want, got = out["numpy"], out["numba"]
            for field in ("key", "a", "b", "friction", "restitution", "mover"):
                assert np.array_equal(getattr(got, field), getattr(want, field)), field
            L = np.abs(data.oMi[:, :3, 3]).max() + 1.0        # shapes and colliders
            mask = (1 << KEY_BITS) - 1
            for c, key in enumerate(want.key.tolist()):
                pair = key >> 3 * KEY_BITS
                i, j = key >> 2 * KEY_BITS & mask, key >> KEY_BITS & mask
                radii = radius[i] + radius[j] if pair else 0.0
                assert_same({0: (got.point[c], got.normal[c], got.separation[c])},
                            {0: (want.point[c], want.normal[c], want.separation[c])}, L, radii)
                seen.add((want.a[c] < 0, want.mover[c] < 0) if pair else "plane")
    finally:
        backend.use(previous)
    # plane contacts, body-body, static and moving-collider pairs all compared
    assert seen == {"plane", (False, True), (True, True), (True, False)}
