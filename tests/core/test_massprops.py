"""core.massprops: closed forms for boxes, prisms (polygonal cylinders) and capsules, the
inscribed polyhedron of a UV sphere against scipy's convex hull volume and its convergence to
the sphere, rigid-motion invariance, split pieces against separately closed halves, and the
messages for meshes that bound no solid."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import ConvexHull
from scipy.spatial.transform import Rotation

from core.errors import InvalidInputError
from core.lie import se3
from core.massprops import (MassProperties, capsule_mass_properties, combine,
                            mesh_mass_properties, split_mass_properties)

EPS = np.finfo(float).eps
#: roundings per triangle in the integrals: a triple product (10), four outer products scaled
#: by it and summed (~30), the centring and the shift to the centre of mass (~10), rounded up
ROUNDINGS_PER_TRIANGLE = 64


def mesh_tol(faces, conditioning=1.0):
    """Relative round-off bound of the integrals over ``faces`` (the sums grow linearly in the
    number of triangles); ``conditioning`` scales it for inputs that carry their own error
    (e.g. rotated vertices far from the origin)."""
    return ROUNDINGS_PER_TRIANGLE * len(faces) * EPS * conditioning


def rigid(seed, offset=1.0):
    rng = np.random.default_rng(seed)
    return se3.from_rp(Rotation.random(random_state=rng).as_matrix(),
                       rng.uniform(-offset, offset, 3))


def apply(T, v):
    return v @ T[:3, :3].T + T[:3, 3]


def box(extents):
    """Axis-aligned box centred at the origin: 8 vertices, 12 outward triangles."""
    v = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    v *= 0.5 * np.asarray(extents, dtype=float)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return v, np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))])


def revolve(profile, n):
    """Closed surface of revolution about z: ``profile`` lists ``(radius, z)`` from the bottom
    pole to the top pole (first and last radius 0), ``n`` segments around; outward
    triangles."""
    rings = profile[1:-1]
    t = 2 * np.pi * np.arange(n) / n
    v = [(0.0, 0.0, profile[0][1])]
    for rho, z in rings:
        v.extend(zip(rho * np.cos(t), rho * np.sin(t), np.full(n, z)))
    v.append((0.0, 0.0, profile[-1][1]))
    top = len(v) - 1
    j, k = np.arange(n), (np.arange(n) + 1) % n
    ring = [1 + i * n for i in range(len(rings))]
    faces = [np.stack([np.zeros(n, int), ring[0] + k, ring[0] + j], 1)]
    for lo, hi in zip(ring[:-1], ring[1:]):
        faces += [np.stack([lo + j, lo + k, hi + k], 1), np.stack([lo + j, hi + k, hi + j], 1)]
    faces.append(np.stack([np.full(n, top), ring[-1] + j, ring[-1] + k], 1))
    return np.array(v), np.concatenate(faces)


def uv_sphere(radius, n):
    phi = np.linspace(-np.pi / 2, np.pi / 2, n // 2 + 1)
    return revolve(list(zip(radius * np.cos(phi), radius * np.sin(phi))), n)


def oriented_hull(points):
    """Convex hull triangles of ``points`` wound with outward normals."""
    hull = ConvexHull(points)
    f = hull.simplices.copy()
    n = np.cross(points[f[:, 1]] - points[f[:, 0]], points[f[:, 2]] - points[f[:, 0]])
    inward = np.einsum("ij,ij->i", n, hull.equations[:, :3]) < 0
    f[inward] = f[inward][:, ::-1]
    return hull, f


def assert_same(a, b, tol, scale_length):
    """MassProperties a == b to relative ``tol`` (com relative to ``scale_length``)."""
    assert a.mass == pytest.approx(b.mass, rel=tol)
    assert a.volume == pytest.approx(b.volume, rel=tol)
    np.testing.assert_allclose(a.com, b.com, rtol=0, atol=tol * scale_length)
    np.testing.assert_allclose(a.inertia, b.inertia, rtol=0,
                               atol=tol * np.abs(b.inertia).max())


# --------------------------------------------------------------------------------------------
# Closed forms
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_posed_box_matches_closed_form(seed):
    rng = np.random.default_rng(seed)
    extents = rng.uniform(0.05, 2.0, 3)
    density = rng.uniform(100.0, 3000.0)
    T = rigid(seed, offset=5.0)
    v, f = box(extents)
    mp = mesh_mass_properties(apply(T, v), f, density, name="Box")
    x, y, z = extents
    mass = density * x * y * z
    R = T[:3, :3]
    expected = MassProperties(mass, T[:3, 3],
                              R @ np.diag(mass / 12 * np.array([y * y + z * z, x * x + z * z,
                                                                x * x + y * y])) @ R.T,
                              x * y * z)
    assert_same(mp, expected, mesh_tol(f, conditioning=1 + 5.0 / extents.min()),
                np.linalg.norm(extents))


@pytest.mark.parametrize("n", [3, 7, 32])
def test_prism_matches_polygon_closed_form(n):
    """A revolved cylinder is a prism on a regular n-gon of circumradius r: area
    ``A = n r^2 sin(2 pi/n) / 2``, polar second moment ``J = n r^4 sin(2 pi/n)(2 + cos(2 pi/n))
    / 12`` (isotropic in-plane), so about the centre ``I_zz = rho h J`` and ``I_xx = I_yy =
    rho (h J / 2 + A h^3 / 12)``."""
    r, h, rho = 0.3, 1.7, 950.0
    v, f = revolve([(0, 0), (r, 0), (r, h), (0, h)], n)
    mp = mesh_mass_properties(v, f, rho)
    s, c = np.sin(2 * np.pi / n), np.cos(2 * np.pi / n)
    A = n * r * r * s / 2
    J = n * r ** 4 * s * (2 + c) / 12
    transverse = rho * (h * J / 2 + A * h ** 3 / 12)
    expected = MassProperties(rho * A * h, [0, 0, h / 2],
                              np.diag([transverse, transverse, rho * h * J]), A * h)
    assert_same(mp, expected, mesh_tol(f), h)


@pytest.mark.parametrize("n", [8, 24, 64])
def test_uv_sphere_is_its_hull_polyhedron(n):
    v, f = uv_sphere(0.8, n)
    hull, _ = oriented_hull(v)
    mp = mesh_mass_properties(v, f, 1.0)
    assert mp.volume == pytest.approx(hull.volume, rel=mesh_tol(f))
    np.testing.assert_allclose(mp.com, 0.0, atol=mesh_tol(f) * 0.8)


def test_uv_sphere_converges_to_the_sphere_at_second_order():
    """The inscribed polyhedron's volume and inertia errors shrink like 1/n^2: doubling the
    resolution divides them by about 4, and ``n^2 error`` settles to its limit (within 5%
    between n = 64 and 128)."""
    r, rho = 0.5, 1000.0
    mass = rho * 4 / 3 * np.pi * r ** 3
    errors = []
    sizes = np.array([16, 32, 64, 128])
    for n in sizes:
        mp = mesh_mass_properties(*uv_sphere(r, n), rho)
        errors.append([abs(mp.mass / mass - 1),
                       np.abs(mp.inertia / (0.4 * mass * r * r) - np.eye(3)).max()])
    scaled = np.array(errors) * sizes[:, None] ** 2
    assert np.all(np.abs(scaled[:-1] / scaled[1:] - 1) < 0.25), scaled
    assert np.all(np.abs(scaled[-2] / scaled[-1] - 1) < 0.05), scaled


def test_capsule_closed_form_against_revolved_meshes():
    r, L, rho = 0.04, 0.3, 1100.0
    exact = capsule_mass_properties(r, L, rho, axis=2)
    errors = []
    sizes = np.array([32, 64, 128])
    for n in sizes:
        phi = np.linspace(-np.pi / 2, np.pi / 2, n // 2 + 1)
        lower = [(r * np.cos(p), r * np.sin(p)) for p in phi[phi <= 0]]
        upper = [(r * np.cos(p), L + r * np.sin(p)) for p in phi[phi >= 0]]
        v, f = revolve(lower + upper, n)
        mp = mesh_mass_properties(v, f, rho)
        # symmetric about its middle: the centre of mass is exact up to rounding
        np.testing.assert_allclose(mp.com, exact.com, atol=mesh_tol(f) * L)
        errors.append([abs(mp.mass / exact.mass - 1),
                       np.abs(mp.inertia - exact.inertia).max() / np.abs(exact.inertia).max()])
    scaled = np.array(errors) * sizes[:, None] ** 2    # second order: n^2 error settles
    assert np.all(np.abs(scaled[:-1] / scaled[1:] - 1) < 0.05), scaled


def test_capsule_axes_and_sphere_limit():
    r, rho = 0.1, 500.0
    sphere = capsule_mass_properties(r, 0.0, rho)
    mass = rho * 4 / 3 * np.pi * r ** 3
    assert sphere.mass == pytest.approx(mass, rel=4 * EPS)
    np.testing.assert_allclose(sphere.inertia, 0.4 * mass * r * r * np.eye(3), rtol=8 * EPS)
    along_y = capsule_mass_properties(r, 0.5, rho)
    assert along_y.com.tolist() == [0.0, 0.25, 0.0]
    # axis 0 is axis 1 turned by the proper rotation x -> y, y -> -x
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    along_x = capsule_mass_properties(r, 0.5, rho, axis=0)
    moved = along_y.transformed(se3.from_rp(turn.T, np.zeros(3)))
    np.testing.assert_allclose(moved.inertia, along_x.inertia, rtol=0, atol=4 * EPS * moved.mass)
    np.testing.assert_allclose(np.abs(moved.com), along_x.com, atol=0)


# --------------------------------------------------------------------------------------------
# Frames, combination, invariance
# --------------------------------------------------------------------------------------------

def test_combine_two_shells_equals_one_mesh_with_both():
    va, fa = box([0.2, 0.3, 0.4])
    vb, fb = box([0.5, 0.1, 0.2])
    va, vb = apply(rigid(1), va), apply(rigid(2, offset=3.0), vb)
    both = mesh_mass_properties(np.concatenate([va, vb]), np.concatenate([fa, fb + 8]), 7.0)
    parts = combine([mesh_mass_properties(va, fa, 7.0), mesh_mass_properties(vb, fb, 7.0)])
    assert_same(parts, both, mesh_tol(np.concatenate([fa, fb]), conditioning=30.0), 3.0)
    assert MassProperties.combine is combine


def test_cavity_inside_shell_is_subtracted():
    """An inward-wound inner box is a hollow: mass and inertia are the outer minus the inner."""
    vo, fo = box([1.0, 1.2, 1.4])
    vi, fi = box([0.4, 0.5, 0.6])
    vi = vi + [0.1, -0.05, 0.2]
    hollow = mesh_mass_properties(np.concatenate([vo, vi]), np.concatenate([fo, fi[:, ::-1] + 8]),
                                  2.0)
    outer, inner = mesh_mass_properties(vo, fo, 2.0), mesh_mass_properties(vi, fi, 2.0)
    assert hollow.mass == pytest.approx(outer.mass - inner.mass, rel=mesh_tol(fo) * 10)
    first = outer.mass * outer.com - inner.mass * inner.com
    np.testing.assert_allclose(hollow.com, first / hollow.mass, atol=mesh_tol(fo) * 10)


def test_inward_mesh_is_flipped():
    v, f = uv_sphere(0.3, 12)
    assert_same(mesh_mass_properties(v, f[:, ::-1], 3.0), mesh_mass_properties(v, f, 3.0),
                mesh_tol(f), 0.3)


def test_transformed_round_trip_and_rejects_non_rigid():
    mp = mesh_mass_properties(*box([0.1, 0.2, 0.3]), 10.0)
    T = rigid(7, offset=2.0)
    back = mp.transformed(T).transformed(se3.inv(T))
    assert_same(back, mp, 32 * EPS * 20, 2.0)
    with pytest.raises(InvalidInputError, match="rotation"):
        mp.transformed(np.diag([2.0, 1.0, 1.0, 1.0]))


@settings(max_examples=40, deadline=None)
@given(points=st.integers(8, 40), seed=st.integers(0, 2 ** 31 - 1),
       offset=st.sampled_from([0.0, 1.0, 100.0]))
def test_rigid_motion_invariance(points, seed, offset):
    """Properties of a moved mesh are the moved properties (random convex polyhedra)."""
    rng = np.random.default_rng(seed)
    p = rng.normal(size=(points, 3)) * rng.uniform(0.2, 1.0, 3)
    hull, f = oriented_hull(p)
    used = np.unique(f)
    extent = np.ptp(p[used], axis=0).max()
    T = rigid(seed + 1, offset=offset)
    here = mesh_mass_properties(p, f, 2.5)
    there = mesh_mass_properties(apply(T, p), f, 2.5)
    assert_same(there, here.transformed(T), mesh_tol(f, conditioning=1 + offset / extent),
                extent)
    assert here.volume == pytest.approx(hull.volume, rel=mesh_tol(f))


# --------------------------------------------------------------------------------------------
# Split into labelled pieces
# --------------------------------------------------------------------------------------------

def test_split_cylinder_halves_equal_closed_halves_and_sum_to_whole():
    r, h, n, rho = 0.05, 0.4, 24, 1060.0
    T = rigid(3, offset=1.0)
    v, f = revolve([(0, 0), (r, 0), (r, h / 2), (r, h), (0, h)], n)
    z = v[f].mean(axis=1)[:, 2]
    labels = np.where(z < h / 2, "thigh", "shin")
    v = apply(T, v)
    pieces = split_mass_properties(v, f, labels, rho, name="Leg")
    assert set(pieces) == {"thigh", "shin"}
    lower = mesh_mass_properties(apply(T, revolve([(0, 0), (r, 0), (r, h / 2), (0, h / 2)],
                                                  n)[0]),
                                 revolve([(0, 0), (r, 0), (r, h / 2), (0, h / 2)], n)[1], rho)
    vu, fu = revolve([(0, h / 2), (r, h / 2), (r, h), (0, h)], n)
    upper = mesh_mass_properties(apply(T, vu), fu, rho)
    tol = mesh_tol(f, conditioning=1 + 1.0 / h)
    assert_same(pieces["thigh"], lower, tol, h)
    assert_same(pieces["shin"], upper, tol, h)
    assert_same(combine(pieces.values()), mesh_mass_properties(v, f, rho), tol, h)
    only = split_mass_properties(v, f, labels, rho, keep=["shin"])
    assert list(only) == ["shin"]
    as_objects = split_mass_properties(v, f, labels.astype(object), rho)
    assert set(as_objects) == {"thigh", "shin"} and all(type(k) is str for k in as_objects)
    assert_same(as_objects["shin"], pieces["shin"], 0.0, h)


def test_split_by_tilted_plane_sums_to_whole():
    """Two pieces sharing zig-zag cut loops: each loop's fan is added to one piece and
    subtracted from the other, so the pieces add up to the whole mesh."""
    v, f = uv_sphere(0.2, 48)
    c = v[f].mean(axis=1)
    labels = (c @ [0.3, 0.5, 0.8] > 0.02).astype(int)
    pieces = split_mass_properties(v, f, labels, 900.0)
    whole = mesh_mass_properties(v, f, 900.0)
    assert_same(combine(pieces.values()), whole, mesh_tol(f), 0.2)
    assert pieces[0].mass > pieces[1].mass > 0.25 * whole.mass


def test_split_single_label_is_the_whole_mesh():
    v, f = uv_sphere(0.2, 12)
    pieces = split_mass_properties(v, f, np.zeros(len(f), int), 1.0)
    assert_same(pieces[0], mesh_mass_properties(v, f, 1.0), mesh_tol(f), 0.2)


# --------------------------------------------------------------------------------------------
# Meshes that bound no solid, and bad arguments
# --------------------------------------------------------------------------------------------

def test_open_mesh_names_the_hole_and_the_fix():
    v, f = box([1, 1, 1])
    with pytest.raises(InvalidInputError, match=r"mesh 'Body' is not closed: 3 edges border "
                                                r"only one face \(a hole\).*Fill Holes"):
        mesh_mass_properties(v, f[1:], 1.0, name="Body")


def test_non_manifold_edge():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0, -1, 0], [0, 0, -1]], float)
    tet = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    other = np.array([[0, 1, 4], [0, 5, 1], [0, 4, 5], [1, 5, 4]])
    mesh_mass_properties(v, other, 1.0)                     # each tetrahedron is fine alone
    with pytest.raises(InvalidInputError, match="non-manifold: 1 edges are shared by more than "
                                                "two faces"):
        mesh_mass_properties(v, np.concatenate([tet, other]), 1.0, name="Fin")


def test_one_flipped_face_is_inconsistent():
    v, f = box([1, 2, 3])
    f = f.copy()
    f[4] = f[4, ::-1]
    with pytest.raises(InvalidInputError, match="inconsistent normals: 3 edges.*Recalculate "
                                                "Outside"):
        mesh_mass_properties(v, f, 1.0)


def test_zero_volume_is_rejected():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0.0]])
    with pytest.raises(InvalidInputError, match="encloses no volume"):
        mesh_mass_properties(v, [[0, 1, 2], [0, 2, 1]], 1.0, name="Sheet")
    # a flat box (zero height) is closed and oriented, and flat
    vb, fb = box([1.0, 1.0, 0.0])
    with pytest.raises(InvalidInputError, match="mesh 'Flat' encloses no volume"):
        mesh_mass_properties(vb, fb, 1.0, name="Flat")


@pytest.mark.parametrize("vertices, faces, message", [
    (np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, np.nan]]), [[0, 2, 1]], "NaN or inf"),
    (np.zeros((4, 3)), [[0, 1, 4]], r"indices must lie in 0..3"),
    (np.zeros((4, 3)), [[0, 1, -1]], r"indices must lie in 0..3"),
    (np.zeros((4, 3)), [[0, 1, 1]], "use one vertex twice"),
    (np.zeros((4, 3)), [[0.0, 1.0, 2.0]], "integer"),
    (np.zeros((4, 3)), [[0, 1, 2, 3]], r"\(F, 3\)"),
    (np.zeros((4, 2)), [[0, 1, 2]], r"shape \(V, 3\)"),
    (np.zeros((4, 3)), np.zeros((0, 3), int), "no faces"),
])
def test_bad_arrays(vertices, faces, message):
    with pytest.raises(InvalidInputError, match=message):
        mesh_mass_properties(vertices, faces, 1.0)


@pytest.mark.parametrize("density", [0.0, -1.0, np.nan, np.inf, "1", True])
def test_bad_density(density):
    with pytest.raises(InvalidInputError, match="density"):
        mesh_mass_properties(*box([1, 1, 1]), density)
    with pytest.raises(InvalidInputError, match="density"):
        capsule_mass_properties(0.1, 0.2, density)


@pytest.mark.parametrize("radius, length, axis, message", [
    (0.0, 1.0, 1, "radius"), (-0.1, 1.0, 1, "radius"), (np.nan, 1.0, 1, "radius"),
    (0.1, -1.0, 1, "length"), (0.1, np.inf, 1, "length"), (0.1, 1.0, 3, "axis"),
    (0.1, 1.0, 0.5, "axis"),
])
def test_bad_capsule(radius, length, axis, message):
    with pytest.raises(InvalidInputError, match=message):
        capsule_mass_properties(radius, length, 1000.0, axis=axis)


def test_split_label_shape_and_uncapped_open_mesh():
    v, f = box([1, 1, 1])
    with pytest.raises(InvalidInputError, match="one entry per face"):
        split_mass_properties(v, f, np.zeros(3), 1.0)
    with pytest.raises(InvalidInputError, match="not closed"):
        split_mass_properties(v, f[:-1], np.zeros(len(f) - 1), 1.0, name="Body")


def test_mass_properties_validates_and_is_read_only():
    mp = MassProperties(1.0, [0, 0, 0], np.eye(3), 1e-3)
    with pytest.raises(ValueError):
        mp.com[0] = 1.0
    for args, message in [((0.0, [0, 0, 0], np.eye(3), 1.0), "mass"),
                          ((1.0, [0, 0], np.eye(3), 1.0), "com"),
                          ((1.0, [0, 0, 0], np.eye(2), 1.0), "inertia"),
                          ((1.0, [0, 0, 0], np.eye(3), 0.0), "volume")]:
        with pytest.raises(InvalidInputError, match=message):
            MassProperties(*args)
    with pytest.raises(InvalidInputError, match="one or more"):
        combine([])
