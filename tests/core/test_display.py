"""Display geometry (core.display): closed, outward meshes with the exact volumes of their
polyhedra, shape keys that rebuild a deformation, joint paths on the joint's own transforms."""

import math
from collections import Counter

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from core.display import (airplane, body_mesh, box, capsule, cone, cylinder, helix, joint_path,
                          lathe, plate, segment_frames, shape_key_modes, uv_sphere)
from core.errors import InvalidInputError
from core.io import JointDocument
from core.joints.lower_pairs import Cylindrical, Fixed, Planar, Prismatic, Revolute
from core.joints.spline_curve import SplineCurveJoint

EPS = np.finfo(float).eps


def triangles(faces):
    """Fan triangulation (T, 3) of polygon faces."""
    return np.array([[f[0], f[i], f[i + 1]] for f in faces for i in range(1, len(f) - 1)])


def signed_volume(verts, faces):
    """Divergence theorem: sum of det(a, b, c) / 6 over the triangles; > 0 when wound outwards."""
    t = np.asarray(verts)[triangles(faces)]
    return float(np.einsum("ij,ij->i", t[:, 0], np.cross(t[:, 1], t[:, 2])).sum() / 6.0)


def assert_closed(faces):
    """Every directed edge appears once and its reverse once: closed and consistently wound."""
    edges = Counter((f[i], f[(i + 1) % len(f)]) for f in faces for i in range(len(f)))
    assert all(n == 1 for n in edges.values())
    assert all(edges[(b, a)] == 1 for a, b in edges)


def test_uv_sphere_is_a_closed_polyhedron_inscribed_in_the_ellipsoid():
    radii = np.array([0.3, 0.2, 0.5])
    vols = []
    for n_u, n_v in ((8, 4), (16, 8), (64, 32)):
        v, f = uv_sphere(radii, n_u, n_v)
        assert v.shape == (2 + (n_v - 1) * n_u, 3)
        assert_closed(f)
        np.testing.assert_allclose(((v / radii) ** 2).sum(axis=1), 1.0, rtol=0, atol=8 * EPS)
        vols.append(signed_volume(v, f))
    exact = 4.0 / 3.0 * math.pi * radii.prod()
    # inscribed, convex: the volume grows towards the ellipsoid's from below
    assert 0.0 < vols[0] < vols[1] < vols[2] < exact
    assert exact - vols[2] < 0.01 * exact


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_cylinder_is_a_closed_prism_along_its_axis(axis):
    r, length, n = 0.05, 0.3, 12
    v, f = cylinder(r, length, axis, n)
    assert v.shape == (2 * n, 3)
    assert_closed(f)
    prism = 0.5 * n * r * r * math.sin(2.0 * math.pi / n) * length
    assert abs(signed_volume(v, f) - prism) <= 64 * EPS * prism
    np.testing.assert_allclose(v[:, axis].max() - v[:, axis].min(), length, rtol=4 * EPS)
    others = np.delete(v, axis, axis=1)
    np.testing.assert_allclose(np.hypot(others[:, 0], others[:, 1]), r, rtol=4 * EPS)


def test_box_volume_and_smallest_extent():
    v, f = box((0.2, 0.1, 0.4))
    assert_closed(f)
    assert abs(signed_volume(v, f) - 0.008) <= 16 * EPS * 0.008
    v, _ = box((0.2, 0.0, 0.4))
    assert np.ptp(v[:, 1]) == pytest.approx(1e-4, rel=4 * EPS)


def test_body_mesh_hints_and_offset():
    assert body_mesh("wire", (0.1,)) is None
    v, f = body_mesh("sphere", (0.1,))
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 0.1, rtol=4 * EPS)
    v, f = body_mesh("capsule", (0.02, 0.01), axis=1)  # at least twice the radius long
    assert np.ptp(v[:, 1]) == pytest.approx(0.04, rel=4 * EPS)
    T = np.eye(4)
    T[:3, :3] = Rotation.from_rotvec([0.3, -0.2, 0.9]).as_matrix()
    T[:3, 3] = (0.1, 0.2, -0.3)
    v0, f0 = body_mesh("box", (0.1, 0.2, 0.3))
    v1, f1 = body_mesh("box", (0.1, 0.2, 0.3), offset=T)
    assert f1 == f0
    np.testing.assert_allclose(v1, v0 @ T[:3, :3].T + T[:3, 3], rtol=0, atol=8 * EPS)
    assert signed_volume(v1, f1) == pytest.approx(0.006, rel=64 * EPS)  # rigid: volume kept


def test_shape_keys_rebuild_a_deformation_of_two_modes():
    rng = np.random.default_rng(3)
    base = rng.normal(size=(30, 3))
    modes = rng.normal(size=(2, 30, 3))
    t = np.linspace(0.0, 1.0, 25)
    tracks = base + np.sin(3 * t)[:, None, None] * modes[0] + (t * t)[:, None, None] * modes[1]
    basis, targets, values = shape_key_modes(tracks)
    assert targets.shape == (2, 30, 3) and values.shape == (25, 2)
    assert np.abs(values).max() == pytest.approx(1.0, rel=4 * EPS)
    rebuilt = basis + np.einsum("fk,kvi->fvi", values, targets - basis)
    np.testing.assert_allclose(rebuilt, tracks, rtol=0, atol=1e3 * EPS * np.abs(tracks).max())


def test_shape_keys_of_a_still_mesh_and_too_many_modes():
    still = np.repeat(np.arange(12.0).reshape(1, 4, 3), 5, axis=0)
    basis, targets, values = shape_key_modes(still)
    np.testing.assert_array_equal(basis, still[0])
    assert targets.shape == (0, 4, 3) and values.shape == (5, 0)
    with pytest.raises(InvalidInputError, match="'noise' deforms in 5 independent modes"):
        shape_key_modes(np.random.default_rng(0).normal(size=(6, 10, 3)), "noise", max_keys=4)


def test_path_of_a_one_coordinate_joint():
    doc = JointDocument(Prismatic((1.0, 0.0, 0.0), lower=-0.2, upper=0.3))
    lines, frames = joint_path(doc, n=11)
    assert len(lines) == 1 and frames.shape == (0, 4, 4)
    np.testing.assert_allclose(lines[0][:, 0], np.linspace(-0.2, 0.3, 11), rtol=0, atol=4 * EPS)
    np.testing.assert_array_equal(lines[0][:, 1:], 0.0)


def test_iso_lines_of_a_two_coordinate_joint():
    joint = Cylindrical((0.0, 0.0, 1.0))  # q = (angle about z, slide along z)
    doc = JointDocument(joint, ranges=[[-1.0, 1.0], [0.0, 0.4]])
    lines, _ = joint_path(doc, n=7, iso_lines=3)
    assert len(lines) == 6 and all(line.shape == (7, 3) for line in lines)
    for k, v in enumerate(np.linspace(0.0, 0.4, 3)):   # coordinate 0 swept, 1 held at v
        q = np.column_stack([np.linspace(-1.0, 1.0, 7), np.full(7, v)])
        np.testing.assert_array_equal(lines[k], joint.transforms(q)[:, :3, 3])
    for k, v in enumerate(np.linspace(-1.0, 1.0, 3)):  # then coordinate 1 swept, 0 held
        q = np.column_stack([np.full(7, v), np.linspace(0.0, 0.4, 7)])
        np.testing.assert_array_equal(lines[3 + k], joint.transforms(q)[:, :3, 3])


def test_path_carries_the_control_frames():
    frames = np.tile(np.eye(4), (5, 1, 1))
    frames[:, 0, 3] = np.linspace(0.0, 0.4, 5)
    doc = JointDocument(SplineCurveJoint(frames), ranges=[[0.0, 1.0]])
    lines, out = joint_path(doc)
    np.testing.assert_array_equal(out, frames)
    assert lines[0].shape == (160, 3)


def test_path_needs_finite_ranges_and_holds_further_coordinates_at_mid_range():
    with pytest.raises(InvalidInputError, match="coordinate 'q0' .* unbounded range"):
        joint_path(JointDocument(Revolute()))
    joint = Planar()  # q = (x, y, angle): the angle held at the middle of its range
    lines, _ = joint_path(JointDocument(joint, ranges=[[0, 1], [0, 2], [0.2, 0.6]]), n=5,
                          iso_lines=2)
    q = np.column_stack([np.linspace(0, 1, 5), np.zeros(5), np.full(5, 0.4)])
    np.testing.assert_array_equal(lines[0], joint.transforms(q)[:, :3, 3])
    with pytest.raises(InvalidInputError, match="has none"):
        joint_path(JointDocument(Fixed()))
    with pytest.raises(InvalidInputError, match="n >= 2"):
        joint_path(JointDocument(Prismatic(lower=0.0, upper=1.0)), n=1)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_capsule_is_closed_with_its_length_and_radius_along_its_axis(axis):
    v, f = capsule(0.03, 0.3, axis)
    assert_closed(f)
    assert np.ptp(v[:, axis]) == pytest.approx(0.3, rel=1e-12)
    others = np.delete(v, axis, axis=1)
    assert np.hypot(others[:, 0], others[:, 1]).max() == pytest.approx(0.03, rel=1e-12)
    # inscribed in the capsule: below its volume, within 5 % (16 sides)
    exact = math.pi * 0.03 ** 2 * (0.3 - 0.06) + 4.0 / 3.0 * math.pi * 0.03 ** 3
    assert 0.95 * exact < signed_volume(v, f) < exact
    v, f = capsule(0.05, 0.01)  # shorter than its diameter: a sphere
    assert_closed(f)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 0.05, rtol=1e-12)


def test_lathe_needs_a_profile_from_pole_to_pole():
    with pytest.raises(InvalidInputError, match="profile"):
        lathe([(0.1, 0.0), (0.1, 1.0), (0.0, 1.0)])


def test_cone_has_its_apex_at_the_origin_and_its_half_angle():
    v, f = cone(0.6, 0.2, axis=0, n=64)
    assert_closed(f)
    np.testing.assert_array_equal(v[0], 0.0)
    rim = v[1:-1]
    np.testing.assert_allclose(rim[:, 0], 0.2, rtol=1e-12)
    np.testing.assert_allclose(np.arctan2(np.hypot(rim[:, 1], rim[:, 2]), rim[:, 0]), 0.6, rtol=1e-12)
    exact = math.pi * (0.2 * math.tan(0.6)) ** 2 * 0.2 / 3.0
    assert 0.99 * exact < signed_volume(v, f) < exact
    with pytest.raises(InvalidInputError, match="half_angle"):
        cone(2.0, 0.2)


def test_helix_is_a_closed_tube_linear_in_its_length():
    v1, f = helix(0.01, 0.002, 8.0, 1.0)
    v3, f3 = helix(0.01, 0.002, 8.0, 0.03)
    assert f3 == f
    assert_closed(f)
    np.testing.assert_allclose(v3, v1 * [1.0, 1.0, 0.03], rtol=0, atol=1e-15)
    assert -0.0021 < v1[:, 2].min() < 0.0 and 1.0 < v1[:, 2].max() < 1.0021  # wire radius
    r = np.hypot(v1[:, 0], v1[:, 1])
    assert r.min() > 0.01 - 0.0021 and r.max() < 0.01 + 0.0021
    assert signed_volume(v1, f) > 0.0


def test_plate_fits_its_outline_to_the_extents():
    outline = [(-0.2, -1.0), (0.35, 0.35), (0.5, 0.55), (0.5, 0.8), (-0.5, 0.9), (-0.55, 0.3)]
    v, f = plate(outline, (0.09, 0.13, 0.01))
    assert_closed(f)
    np.testing.assert_allclose(np.ptp(v, axis=0), (0.09, 0.13, 0.01), rtol=1e-12)
    assert signed_volume(v, f) > 0.0


def test_airplane_is_a_few_dozen_closed_outward_pieces_in_its_extents():
    v, f = airplane((0.13, 0.12, 0.04))
    assert 20 <= len(f) <= 80
    assert_closed(f)
    assert signed_volume(v, f) > 0.0
    np.testing.assert_allclose(np.ptp(v, axis=0), (0.13, 0.12, 0.04), rtol=0.05)  # 6 sides
    nose = v[np.argmax(v[:, 0])]
    assert nose[0] == pytest.approx(0.065) and abs(nose[1]) < 1e-12        # nose along +x
    assert v[:, 2].max() > 0.025 and abs(v[np.argmax(v[:, 2]), 1]) < 0.002   # fin up +z


def test_segment_frames_point_z_from_one_end_to_the_other():
    rng = np.random.default_rng(5)
    p0, p1 = rng.normal(size=(20, 3)), rng.normal(size=(20, 3))
    p1[0] = p0[0] + [1e-3, 0.0, 0.0]                  # along x: another reference axis
    T, length = segment_frames(p0, p1)
    np.testing.assert_allclose(length, np.linalg.norm(p1 - p0, axis=1), rtol=1e-14)
    np.testing.assert_allclose(T[:, :3, 3] + length[:, None] * T[:, :3, 2], p1, atol=1e-14)
    np.testing.assert_allclose(np.einsum("fji,fjk->fik", T[:, :3, :3], T[:, :3, :3]),
                               np.broadcast_to(np.eye(3), (20, 3, 3)), atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(T[:, :3, :3]), 1.0, rtol=1e-14)


def test_body_mesh_of_the_new_hints():
    v, _ = body_mesh("mesh", (2.0, 2.0, 2.0), geometry=(np.eye(3), np.array([[0, 1, 2]])))
    np.testing.assert_array_equal(v, 2.0 * np.eye(3))
    v, f = body_mesh("pin", (0.01, 0.08), axis=1)
    assert np.ptp(v[:, 1]) == pytest.approx(0.08)
    v, f = body_mesh("socket", (0.04,))
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 0.04, rtol=4 * EPS)
    v, f = body_mesh("helix", (0.01, 0.002, 5.0))
    assert v[:, 2].max() == pytest.approx(1.0, abs=0.003)


def test_frame_axes_draw_each_frames_axes_from_its_origin():
    from core.display import frame_axes
    from core.lie import so3

    frames = np.tile(np.eye(4), (2, 1, 1))
    frames[1, :3, :3] = so3.exp(np.array([0.3, -0.2, 1.1]))
    frames[1, :3, 3] = (0.1, 0.2, 0.3)
    segments = frame_axes(frames, 0.05)
    assert segments.shape == (6, 2, 3)
    for k in range(2):
        for a in range(3):
            np.testing.assert_array_equal(segments[3 * k + a, 0], frames[k, :3, 3])
            np.testing.assert_allclose(segments[3 * k + a, 1],
                                       frames[k, :3, 3] + 0.05 * frames[k, :3, a], atol=1e-16)
    assert frame_axes(np.zeros((0, 4, 4)), 1.0).shape == (0, 2, 3)
