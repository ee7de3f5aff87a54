"""Joints that transfer (core.transfer, core.joints.MappedJoint, core.io.RestFrames): the
mapping's derivatives against central differences, a joint carried to a rotated, scaled copy of
its rig, the rest-pose warning, documents with and without rest frames, and the OpenSim presets
against the OpenSim oracles."""

import json

import numpy as np
import pytest
from _fd import fd_hessian, fd_jacobian

from core.bones import bone_frame
from core.errors import InvalidInputError
from core.fitting.curve import fit_spline_curve
from core.fitting.samples import JointSamples
from core.io import JointDocument, RestFrames, dumps, loads
from core.joints import MappedJoint, Revolute, ScapulothoracicJoint, joint_from_dict
from core.lie import se3, so3
from core.reference.opensim import KneeGait2392, ScapulothoracicSeth2019
from core.transfer import (OSIM_TO_ARMATURE, PRESETS, REST_WARN_DEG, preset_document,
                           rest_difference, transfer_document)

EPS = np.finfo(float).eps
#: central differences (step 1e-6) of smooth joints: truncation h^2 |S'''| / 6 ~ 1e-11 plus
#: rounding eps |S| / h ~ 1e-10 per entry, times the placements' lever arm (< 2 m) and scale
FD_TOL = 1e-7
#: a composition of four or five 4x4 products of entries of size <= 2 (m or 1), each product
#: adding 4 roundings per entry: 5 * 4 * 2 * eps, rounded up
COMPOSE_TOL = 64 * EPS


def _random_rigid(rng, size=0.3):
    return se3.from_rp(so3.exp(rng.normal(size=3)), size * rng.normal(size=3))


@pytest.fixture(scope="module")
def knee_curve():
    d = KneeGait2392().samples()
    return fit_spline_curve(JointSamples(d["T_femur_tibia"], d["q"]), n_frames=8).joint


def _scapula():
    ref = ScapulothoracicSeth2019()
    return ScapulothoracicJoint(ref.radii, ref.winging_origin[:2], 0.3, lower=ref.ranges[:, 0],
                                upper=ref.ranges[:, 1])


@pytest.mark.parametrize("mirror_axis", [None, 0, 2])
@pytest.mark.parametrize("kind", ["revolute", "curve", "scapula"])
def test_mapped_joint_derivatives_match_central_differences(kind, mirror_axis, knee_curve):
    rng = np.random.default_rng(3)
    inner = {"revolute": Revolute([0.3, -0.2, 0.9]), "curve": knee_curve,
             "scapula": _scapula()}[kind]
    joint = MappedJoint(inner, _random_rigid(rng), _random_rigid(rng), 1.3, mirror_axis)
    lo = np.where(np.isfinite(inner.lower), inner.lower, -1.0)
    hi = np.where(np.isfinite(inner.upper), inner.upper, 1.0)
    points = [np.clip(np.zeros(inner.nq), lo, hi),             # identity (or the range's end)
              np.clip(np.full(inner.nq, 1e-8), lo, hi),        # tiny
              lo + rng.random(inner.nq) * (hi - lo)]           # random
    if kind == "scapula":
        points.append(np.array([0.2, np.pi / 2 - 1e-4, -0.3, 0.1]))  # elevation near the pole
    for q in points:
        G, S, H = joint.evaluate(q)
        np.testing.assert_allclose(S, fd_jacobian(joint, q), rtol=0, atol=FD_TOL)
        np.testing.assert_allclose(H, fd_hessian(joint, q), rtol=0, atol=FD_TOL)
        np.testing.assert_allclose(G, joint.transforms(q[None])[0], rtol=0, atol=COMPOSE_TOL)


def test_mapped_joint_is_the_formula_and_round_trips():
    rng = np.random.default_rng(4)
    inner = Revolute([0.0, 0.0, 1.0])
    P, C = _random_rigid(rng), _random_rigid(rng)
    F = np.diag([1.0, 1.0, -1.0, 1.0])
    joint = MappedJoint(inner, P, C, 0.7, mirror_axis=2)
    for q in (0.0, 0.4, -1.1):
        G = inner.transform(np.array([q]))
        G[:3, 3] *= 0.7
        expected = P @ F @ G @ F @ se3.inv(C)
        np.testing.assert_allclose(joint.transform(np.array([q])), expected, rtol=0,
                                   atol=COMPOSE_TOL)
    back = joint_from_dict(json.loads(json.dumps(joint.to_dict())))
    qs = np.linspace(-1, 1, 7)[:, None]
    np.testing.assert_array_equal(back.transforms(qs), joint.transforms(qs))


@pytest.mark.parametrize("axes", [(None, None), (2, None), (None, 2), (2, 2)])
def test_a_mapped_joint_of_a_mapped_joint_is_one_wrapper(axes):
    rng = np.random.default_rng(5)
    inner = Revolute([0.2, 0.5, 0.8])
    once = MappedJoint(inner, _random_rigid(rng), _random_rigid(rng), 1.3, axes[0])
    P2, C2 = _random_rigid(rng), _random_rigid(rng)
    twice = MappedJoint(once, P2, C2, 0.6, axes[1])
    assert twice.joint is inner and twice.scale == pytest.approx(0.78, abs=4 * EPS)
    assert twice.mirror_axis == (None if axes[0] == axes[1] else 2)
    qs = np.linspace(-2, 2, 9)[:, None]
    nested = once.transforms(qs)
    nested[:, :3, 3] *= 0.6
    F = np.diag([1.0, 1.0, -1.0, 1.0]) if axes[1] == 2 else np.eye(4)
    expected = P2 @ F @ nested @ F @ se3.inv(C2)
    np.testing.assert_allclose(twice.transforms(qs), expected, rtol=0, atol=COMPOSE_TOL)


def _rig(rng):
    """Rest frames of a parent and child bone (armature space) with the child's head near the
    parent's tail: RestFrames and the parent's frame."""
    hip, knee, ankle = np.array([0.1, 0.0, 1.0]), np.array([0.12, 0.03, 0.55]), \
        np.array([0.1, 0.0, 0.1])
    return RestFrames(bone_frame(hip, knee, 0.3), bone_frame(knee, ankle, -0.2),
                      float(np.linalg.norm(knee - hip)), float(np.linalg.norm(ankle - knee)))


def _moved(rest, R0, t, s):
    """The rig turned by R0 (3, 3), scaled by s and moved by t (3,) in its armature space."""
    def move(W):
        out = np.array(W)
        out[:3, :3] = R0 @ W[:3, :3]
        out[:3, 3] = s * R0 @ W[:3, 3] + t
        return out
    return RestFrames(move(rest.parent), move(rest.child), s * rest.parent_length,
                      s * rest.child_length), move


def test_a_joint_transferred_to_a_rotated_scaled_copy_reproduces_the_mapped_poses(knee_curve):
    rng = np.random.default_rng(6)
    source = _rig(rng)
    G0 = knee_curve.transform(np.array([0.0]))
    doc = JointDocument(knee_curve, ("knee",), rest=RestFrames(
        source.parent, source.parent @ G0, source.parent_length, source.child_length))
    R0, t, s = so3.exp(np.array([0.4, -1.2, 2.0])), np.array([3.0, -1.0, 0.5]), 1.3
    target, move = _moved(doc.rest, R0, t, s)
    result = transfer_document(doc, target)
    assert result.ratio == pytest.approx(s, rel=4 * EPS)
    qs = np.linspace(*doc.ranges[0], 25)[:, None]
    # the child bone's armature-space poses on the copy are the source's, moved
    placed = target.parent @ result.document.joint.transforms(qs)
    expected = np.stack([move(source.parent @ G) for G in knee_curve.transforms(qs)])
    scale = np.abs(expected).max()
    np.testing.assert_allclose(placed, expected, rtol=0, atol=1e-12 * scale)
    assert result.rest_offset_mm < 1e-9 and result.rest_angle_deg < 1e-9
    assert result.warning == ""
    # the ratio scales translations only: rotations equal, translations s times
    G, G1 = knee_curve.transforms(qs), result.document.joint.transforms(qs)
    np.testing.assert_allclose(G1[:, :3, :3], G[:, :3, :3], rtol=0, atol=COMPOSE_TOL)
    np.testing.assert_allclose(G1[:, :3, 3], s * G[:, :3, 3], rtol=0, atol=COMPOSE_TOL)
    # and it transfers again (its rest frames are the target's): back to the source
    back = transfer_document(loads(dumps(result.document)), doc.rest)
    np.testing.assert_allclose(back.document.joint.transforms(qs), G, rtol=0, atol=COMPOSE_TOL)


def test_ratio_choices_and_refusals(knee_curve):
    rest = _rig(np.random.default_rng(7))
    doc = JointDocument(knee_curve, rest=rest)
    target = RestFrames(rest.parent, rest.child, 2.0 * rest.parent_length,
                        3.0 * rest.child_length)
    assert transfer_document(doc, target, "child").ratio == pytest.approx(3.0)
    assert transfer_document(doc, target, "none").ratio == 1.0
    assert transfer_document(doc, target, ratio=0.5).ratio == 0.5
    with pytest.raises(InvalidInputError, match="scale_by"):
        transfer_document(doc, target, "femur")
    with pytest.raises(InvalidInputError, match="scale"):
        transfer_document(doc, target, ratio=-1.0)
    with pytest.raises(InvalidInputError, match="rest frames"):
        transfer_document(JointDocument(knee_curve), target)


def test_a_rest_pose_far_from_the_joints_is_reported_in_mm_and_deg(knee_curve):
    rest = _rig(np.random.default_rng(8))
    doc = JointDocument(knee_curve, rest=rest)
    turned = rest.child @ se3.from_rp(so3.exp(np.array([0.0, np.radians(10.0), 0.0])),
                                      np.array([0.0, 0.0, 0.0]))
    turned[:3, 3] += rest.parent[:3, :3] @ np.array([0.0, 0.0, 0.012])
    result = transfer_document(doc, RestFrames(rest.parent, turned, rest.parent_length,
                                               rest.child_length))
    assert result.rest_angle_deg == pytest.approx(10.0, abs=1e-9)
    assert result.rest_offset_mm == pytest.approx(12.0, abs=1e-9)
    assert REST_WARN_DEG <= 10.0 and "12.0 mm and 10.0 deg" in result.warning
    assert rest_difference(np.eye(4), np.eye(4)) == (0.0, 0.0)


def test_documents_keep_rest_frames_and_old_documents_still_load(knee_curve):
    rest = _rig(np.random.default_rng(9))
    doc = JointDocument(knee_curve, ("knee",), rest=rest)
    back = loads(dumps(doc))
    np.testing.assert_array_equal(back.rest.parent, rest.parent)
    np.testing.assert_array_equal(back.rest.child, rest.child)
    assert (back.rest.parent_length, back.rest.child_length) == (rest.parent_length,
                                                                 rest.child_length)
    old = json.loads(dumps(JointDocument(knee_curve, ("knee",))))
    old["version"] = 1
    del old["rest"]
    assert loads(json.dumps(old)).rest is None
    old["rest"] = None
    with pytest.raises(InvalidInputError, match="unknown field"):
        loads(json.dumps(old))
    bad = json.loads(dumps(doc))
    bad["rest"]["parent_length"] = 0.0
    with pytest.raises(InvalidInputError, match="parent_length"):
        loads(json.dumps(bad))
    bad["rest"] = {"parent": [[1.0]]}
    with pytest.raises(InvalidInputError, match="rest"):
        loads(json.dumps(bad))


def test_bone_frame_is_blenders_roll_rule_on_known_bones():
    # a bone straight down: roll 0 keeps X on world X and turns Z to world +Y
    T = bone_frame([0, 0, 1], [0, 0, 0])
    np.testing.assert_allclose(T[:3, :3], [[1, 0, 0], [0, 0, 1], [0, -1, 0]], atol=1e-15)
    # along -Y (Blender's special case) and a general bone: rigid, Y along the bone, roll about Y
    # (near -Y: within 6.1e-3 of 1 + y Blender recomputes its theta from x and z)
    for tail, roll in (([0, -1, 0], 0.0), ([0.3, -0.2, 0.5], 0.7), ([3e-3, -1, 0], 0.0)):
        T = bone_frame([0, 0, 0], tail, roll)
        se3.check_transform(T)
        d = np.asarray(tail, float) / np.linalg.norm(tail)
        np.testing.assert_allclose(T[:3, 1], d, atol=1e-12)
        T0 = bone_frame([0, 0, 0], tail, 0.0)
        np.testing.assert_allclose(T[:3, :3], so3.exp(d * roll) @ T0[:3, :3], atol=1e-15)
    # closer than 2.5e-4 to -Y Blender takes the bone as exactly -Y
    np.testing.assert_array_equal(bone_frame([0, 0, 0], [1e-5, -1, 0])[:3, :3],
                                  np.diag([-1.0, -1.0, 1.0]))
    with pytest.raises(InvalidInputError, match="distinct"):
        bone_frame([1, 2, 3], [1, 2, 3])


def test_knee_presets_are_the_opensim_knee_and_its_mirror_image():
    ref = KneeGait2392()
    qs = np.linspace(*ref.range, 31)
    right, left = preset_document("KNEE_R"), preset_document("KNEE_L")
    femur = right.rest.parent @ right.joint.parent  # femur body frame (armature)
    np.testing.assert_allclose(femur[:3, :3], OSIM_TO_ARMATURE, atol=COMPOSE_TOL)
    tibia_heads = (right.rest.parent @ right.joint.transforms(qs[:, None]))[:, :3, 3]
    expected = (femur @ ref.poses(qs))[:, :3, 3]  # the tibia origin, where the bone's head is
    np.testing.assert_allclose(tibia_heads, expected, rtol=0, atol=COMPOSE_TOL)
    M = np.diag([-1.0, 1.0, 1.0])  # armature X = 0 mirror
    left_poses = left.rest.parent @ left.joint.transforms(qs[:, None])
    right_poses = right.rest.parent @ right.joint.transforms(qs[:, None])
    np.testing.assert_allclose(left_poses[:, :3, 3], right_poses[:, :3, 3] @ M, atol=COMPOSE_TOL)
    np.testing.assert_allclose(left_poses[:, :3, 1], right_poses[:, :3, 1] @ M, atol=COMPOSE_TOL)
    assert left.coordinate_names == ("knee_angle_l",)
    # a femur 1.3x longer with its whole leg turned: the scaled OpenSim path, in the femur
    R0 = so3.exp(np.array([0.3, 0.1, -0.5]))
    target, move = _moved(right.rest, R0, np.array([0.2, 0.0, 0.9]), 1.3)
    moved = transfer_document(right, target)
    heads = (target.parent @ moved.document.joint.transforms(qs[:, None]))[:, :3, 3]
    np.testing.assert_allclose(heads, np.stack([move(se3.from_rp(np.eye(3), p))[:3, 3]
                                                for p in tibia_heads]), atol=1e-12)
    assert moved.warning == ""


@pytest.mark.parametrize("key", ["SCAPULA_R", "SCAPULA_L"])
def test_scapula_presets_follow_the_seth_joint(key):
    ref = ScapulothoracicSeth2019()
    doc = preset_document(key)
    rng = np.random.default_rng(10)
    qs = ref.defaults + 0.3 * rng.normal(size=(20, 4))
    M = np.diag([-1.0, 1.0, 1.0, 1.0]) if key.endswith("L") else np.eye(4)
    heads = (doc.rest.parent @ doc.joint.transforms(qs))[:, :3, 3]
    right = preset_document("SCAPULA_R")
    thorax_r = right.rest.parent @ right.joint.parent @ se3.inv(ref.T_thorax_pjoint)
    expected = (M @ thorax_r @ ref.poses(qs))[:, :3, 3]  # the scapula origin: the bone's head
    np.testing.assert_allclose(heads, expected, rtol=0, atol=COMPOSE_TOL)
    np.testing.assert_allclose(thorax_r[:3, :3], OSIM_TO_ARMATURE, atol=COMPOSE_TOL)
    assert doc.joint.nq == 4
    assert set(PRESETS) == {"KNEE_R", "KNEE_L", "SCAPULA_R", "SCAPULA_L"}
    with pytest.raises(InvalidInputError, match="presets are"):
        preset_document("ELBOW")
