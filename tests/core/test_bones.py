"""A bone as a joint's child (core.bones): basis matrices against a direct solve, joint
rotations against scipy, reach-cone status, mesh and fit in the bone's conventions."""

import math
from collections import Counter

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from core.bones import (BONE_AXIS, BoneCone, cone_mesh, cone_status, describe_cone_fit,
                        fit_cone, joint_basis, joint_rotations, pose_basis)
from core.errors import InvalidInputError, NonFiniteError
from core.fitting.reach_cone import fit_reach_cone
from core.joints.lower_pairs import Revolute

EPS = np.finfo(float).eps
#: a 4x4 product and a rigid inverse: a few roundings per entry, entries of order 1 (metres)
TOL = 32 * EPS


def rigid(rotvec, p):
    T = np.eye(4)
    T[:3, :3] = Rotation.from_rotvec(rotvec).as_matrix()
    T[:3, 3] = p
    return T


def random_rigid(rng, n):
    T = np.tile(np.eye(4), (n, 1, 1))
    T[:, :3, :3] = Rotation.random(n, random_state=rng).as_matrix()
    T[:, :3, 3] = rng.uniform(-1.0, 1.0, (n, 3))
    return T


@pytest.fixture
def rest():
    return rigid([0.2, -0.4, 0.3], [0.01, 0.3, -0.02])


def test_pose_basis_is_the_direct_solve(rest):
    T = random_rigid(np.random.default_rng(1), 20)
    B = pose_basis(rest, T)
    np.testing.assert_allclose(B, np.linalg.solve(rest, T), rtol=0, atol=TOL)
    np.testing.assert_allclose(rest @ B, T, rtol=0, atol=TOL)
    np.testing.assert_allclose(pose_basis(rest, T[3]), B[3], rtol=0, atol=0)
    with pytest.raises(InvalidInputError, match="not a rotation"):
        pose_basis(np.diag([2.0, 1.0, 1.0, 1.0]), T)


def test_joint_basis_poses_the_bone_through_the_joint(rest):
    joint = Revolute((0.3, 0.1, 1.0))
    qs = np.linspace(-1.0, 2.0, 7)[:, None]
    B = joint_basis(joint, rest, qs)
    assert B.shape == (7, 4, 4)
    np.testing.assert_allclose(B, np.linalg.solve(rest, joint.transforms(qs)), rtol=0, atol=TOL)
    np.testing.assert_allclose(joint_basis(joint, rest, qs[4]), B[4], rtol=0, atol=TOL)
    # about the joint axis by q: the basis rotation is rest^T exp(q k)
    k = np.array([0.3, 0.1, 1.0]) / np.linalg.norm([0.3, 0.1, 1.0])
    np.testing.assert_allclose(B[:, :3, :3], rest[:3, :3].T @ Rotation.from_rotvec(qs * k).as_matrix(),
                               rtol=0, atol=TOL)
    qs[[2, 5]] = np.nan
    with pytest.raises(NonFiniteError, match=r"sample\(s\) \[2, 5\]"):
        joint_basis(joint, rest, qs)
    with pytest.raises(InvalidInputError, match=r"shape \(1,\) or \(N, 1\)"):
        joint_basis(joint, rest, np.zeros((3, 2)))


def test_joint_rotations_against_scipy(rest):
    R_joint = Rotation.random(10, random_state=2)
    poses = np.tile(np.eye(4), (10, 1, 1))
    poses[:, :3, :3] = (Rotation.from_matrix(rest[:3, :3]) * R_joint).as_matrix()
    poses[:, :3, 3] = 5.0  # translations do not enter
    np.testing.assert_allclose(joint_rotations(rest, poses), R_joint.as_matrix(), rtol=0, atol=TOL)


def posed(rest, rotvec):
    """Child-in-parent pose with joint rotation exp(rotvec) about the rest pose."""
    T = rest.copy()
    T[:3, :3] = rest[:3, :3] @ Rotation.from_rotvec(rotvec).as_matrix()
    return T


def test_circular_status_is_the_swing_angle_against_the_half_angle(rest):
    cone = BoneCone(half_angle=0.5, twist_limit=0.3)
    for a in (0.0, 0.2, 0.5 - 1e-9, 0.5 + 1e-9, 1.0):
        s = cone_status(cone, rest, posed(rest, [a, 0.0, 0.0]))  # swing of the Y axis by a
        assert s.swing_value == pytest.approx(math.cos(a) - math.cos(0.5), abs=8 * EPS)
        assert s.inside == (a <= 0.5) and s.twist == pytest.approx(0.0, abs=8 * EPS)
    s = cone_status(cone, rest, posed(rest, [0.0, 0.4, 0.0]))  # pure twist past the limit
    assert s.twist == pytest.approx(0.4, abs=8 * EPS) and s.swing_value > 0 and not s.inside


def test_tilted_and_elliptical_status(rest):
    b = 0.7
    axis = Rotation.from_rotvec([b, 0.0, 0.0]).apply(BONE_AXIS)
    centred = cone_status(BoneCone(axis=tuple(axis), half_angle=0.3), rest, posed(rest, [b, 0, 0]))
    assert centred.swing_value == pytest.approx(1.0 - math.cos(0.3), abs=16 * EPS)
    cone = BoneCone(shape="elliptical", half_angle_x=0.6, half_angle_z=0.25)
    # a rotation about Z swings Y towards -X (the first half-angle), one about X towards Z
    for rotvec, edge in (([0, 0, 0.6], True), ([0.25, 0, 0], True), ([0, 0, 0.25], False)):
        s = cone_status(cone, rest, posed(rest, rotvec))
        assert (abs(s.swing_value) <= 64 * EPS) == edge, (rotvec, s)
        assert s.inside or edge
    with pytest.raises(InvalidInputError, match="circular' or 'elliptical"):
        BoneCone(shape="square")


def edges_closed(faces):
    edges = Counter((f[i], f[(i + 1) % 3]) for f in faces for i in range(3))
    return all(n == 1 for n in edges.values()) and all(edges[(b, a)] == 1 for a, b in edges)


def test_circular_cone_mesh_is_a_closed_pyramid():
    phi, length, n = 0.6, 0.25, 24
    axis = Rotation.from_rotvec([0.3, 0.0, -0.5]).apply(BONE_AXIS)
    v, f = cone_mesh(BoneCone(axis=tuple(axis), half_angle=phi), length, n)
    assert v.shape == (n + 2, 3) and f.shape == (2 * n, 3)
    assert edges_closed(f.tolist())
    np.testing.assert_array_equal(v[0], 0.0)
    np.testing.assert_allclose(np.linalg.norm(v[1:-1], axis=1), length, rtol=8 * EPS)
    np.testing.assert_allclose(v[1:-1] @ axis, length * math.cos(phi), rtol=0, atol=16 * EPS)
    t = v[f]
    volume = np.einsum("ij,ij->i", t[:, 0], np.cross(t[:, 1], t[:, 2])).sum() / 6.0
    r, h = length * math.sin(phi), length * math.cos(phi)
    pyramid = 0.5 * n * r * r * math.sin(2.0 * math.pi / n) * h / 3.0  # n-gon base, outward
    assert abs(volume - pyramid) <= 256 * EPS * pyramid


def test_elliptical_cone_mesh_reaches_each_half_angle():
    v, f = cone_mesh(BoneCone(shape="elliptical", half_angle_x=0.8, half_angle_z=0.3), 1.0, 8)
    assert edges_closed(f.tolist())
    angles = np.arccos(np.clip(v[1:-1] @ BONE_AXIS, -1.0, 1.0))
    # arccos near these angles amplifies the dot product's round-off by 1/sin(angle) < 4
    tol = 32 * EPS
    np.testing.assert_allclose(angles[[0, 4]], 0.8, rtol=0, atol=tol)  # towards +X and -X
    np.testing.assert_allclose(angles[[2, 6]], 0.3, rtol=0, atol=tol)  # towards -Z and +Z
    assert np.all((angles >= 0.3 - tol) & (angles <= 0.8 + tol))
    with pytest.raises(InvalidInputError, match="positive distance"):
        cone_mesh(BoneCone(), 0.0)


def test_fit_cone_is_the_reach_cone_fit_of_the_joint_rotations(rest):
    R_joint = Rotation.from_rotvec([[0.3, 0.0, 0.1], [-0.2, 0.1, 0.25], [0.1, -0.3, -0.3],
                                    [0.45, 0.2, 0.0], [0.0, 0.0, 0.0]])
    poses = np.array([posed(rest, r) for r in R_joint.as_rotvec()])
    fit = fit_cone(rest, poses, margin=0.01)
    ref = fit_reach_cone(R_joint.as_matrix(), BONE_AXIS, (1.0, 0.0, 0.0), 0.01)
    # both fits see the same rotations up to round-off and land on the same active
    # constraints, so they agree to round-off amplified by the cap's conditioning (< 10 here)
    tol = 1e3 * EPS
    assert fit.n_samples == 5
    np.testing.assert_allclose(fit.axis, ref.axis, rtol=0, atol=tol)
    for name in ("half_angle", "half_angle_1", "half_angle_2", "twist_limit"):
        assert getattr(fit, name) == pytest.approx(getattr(ref, name), abs=tol)
    d = R_joint.apply(BONE_AXIS)
    assert np.arccos(np.clip(d @ fit.axis, -1, 1)).max() <= fit.half_angle - 0.01 + tol
    assert all(cone_status(BoneCone(axis=tuple(fit.axis), half_angle=fit.half_angle,
                                    twist_limit=fit.twist_limit), rest, T).inside for T in poses)


def test_cone_fit_message_warns_when_the_margin_is_below_the_held_out_angle(rest):
    """The message gives the angles in degrees and the held-out angle; it warns exactly when
    a sample left out falls farther outside the others' cone than the margin covers."""
    R_joint = Rotation.from_rotvec([[0.3, 0.0, 0.1], [-0.2, 0.1, 0.25], [0.1, -0.3, -0.3],
                                    [0.45, 0.2, 0.0], [0.0, 0.0, 0.0], [0.1, 0.1, 0.1]])
    fit = fit_cone(rest, np.array([posed(rest, r) for r in R_joint.as_rotvec()]))
    assert fit.heldout_angle > 0.0
    below, above = 0.5 * fit.heldout_angle, 2.0 * fit.heldout_angle
    level, text = describe_cone_fit(fit, below)
    assert level == "WARNING" and "raise the margin" in text
    assert f"{math.degrees(fit.half_angle):.1f} deg" in text
    assert f"{math.degrees(fit.heldout_angle):.1f} deg outside" in text
    level, text = describe_cone_fit(fit, above)
    assert level == "INFO" and "raise the margin" not in text
    one = fit_cone(rest, np.array([posed(rest, [0.2, 0.0, 0.1])]))
    assert describe_cone_fit(one, 0.0) == ("INFO", describe_cone_fit(one, 0.0)[1])
    assert "left out" not in describe_cone_fit(one, 0.0)[1]
