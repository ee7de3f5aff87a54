"""Spherical and Free joints (seed 003 exponential coordinates) against finite differences,
scipy and Pinocchio; chart changes past pi."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from core import expcoords as ec
from core.errors import InvalidInputError
from core.joints.spherical import Free, Spherical
from core.lie import se3, so3

from _fd import fd_hessian, fd_jacobian

PI = math.pi
#: a rotation matrix from two Rodrigues evaluations (other operation orders, libm's or SIMD sin
#: and cos, scipy's or Pinocchio's routes): a few ulps of entries <= 1, plus the rounding of the
#: angle, eps |r|, carried into sin and cos; relative to max(1, |r|)
ROTATION_TOL = 16 * np.finfo(float).eps


def _at(theta, seed=0):
    d = np.random.default_rng(seed).normal(size=3)
    return theta * d / np.linalg.norm(d)


ANGLES = [0.0, 1e-8, 1e-4, 0.1 * (1 + 1e-9), 1.5 * (1 - 1e-9), 0.9, 2.5, 3.0 * (1 + 1e-9),
          PI - 1e-7, PI + 1e-7, 4.5, 2 * PI - 1e-3, 2 * PI + 1e-3]
R_POINTS = [_at(th, i) for i, th in enumerate(ANGLES)]
IDS = [f"|r|={th:.10g}" for th in ANGLES]


def _close(a, b, tol):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    err = np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))
    assert err < tol, f"relative error {err:.3g} >= {tol:g}"


def _qs(joint):
    if joint.nq == 3:
        return R_POINTS
    return [np.concatenate([r, [0.3 * i - 1.0, 0.5, -0.2 * i]]) for i, r in enumerate(R_POINTS)]


@pytest.mark.parametrize("joint", [Spherical(), Free()], ids=["Spherical", "Free"])
@pytest.mark.parametrize("k", range(len(ANGLES)), ids=IDS)
def test_S_and_H_against_finite_differences(joint, k):
    q = _qs(joint)[k]
    G, S, H = joint.evaluate(q)
    assert G.shape == (4, 4) and S.shape == (6, joint.nv) and H.shape == (joint.nv, 6, joint.nv)
    _close(S, fd_jacobian(joint, q), 1e-9)
    _close(H, fd_hessian(joint, q), 1e-8)
    # evaluate == (transform, jacobian, hessian): the same formulas on the same q
    np.testing.assert_array_equal(G, joint.transform(q))
    np.testing.assert_array_equal(S, joint.jacobian(q))
    np.testing.assert_array_equal(H, joint.hessian(q))
    # rotation against scipy; translation part of Free
    size = max(1.0, np.linalg.norm(q[:3]))
    _close(G[:3, :3], Rotation.from_rotvec(q[:3]).as_matrix(), ROTATION_TOL * size)
    if joint.nq == 6:
        assert np.array_equal(G[:3, 3], q[3:])


@pytest.mark.parametrize("joint", [Spherical(), Free()], ids=["Spherical", "Free"])
def test_batched_transforms_equal_looped(joint):
    qs = np.stack(_qs(joint))
    Gs = joint.transforms(qs)
    assert Gs.shape == (len(qs), 4, 4)
    for q, G in zip(qs, Gs):     # so3.exp batched, expcoords' Rodrigues single
        _close(G, joint.transform(q), ROTATION_TOL * max(1.0, np.linalg.norm(q[:3])))
    assert joint.transforms(np.zeros((0, joint.nq))).shape == (0, 4, 4)


def test_spherical_against_pinocchio_ball_joint():
    """Pinocchio has no exponential-coordinate ball joint; compare the motion instead: the body
    angular velocity S r_dot equals the one of pin's quaternion ball joint moved along
    the same rotation path."""
    pin = pytest.importorskip("pinocchio")
    model = pin.Model()
    model.addJoint(0, pin.JointModelSpherical(), pin.SE3.Identity(), "ball")
    data = model.createData()
    joint = Spherical()
    for k, r in enumerate(R_POINTS[:11]):
        rd = np.array([0.4, -0.3, 0.9])
        h = 1e-6
        quat = Rotation.from_rotvec(r).as_quat()            # x, y, z, w (pinocchio's order)
        qp = Rotation.from_rotvec(r + h * rd).as_quat()
        qm = Rotation.from_rotvec(r - h * rd).as_quat()
        qm = qm if np.dot(qm, qp) > 0 else -qm
        v_pin = pin.difference(model, qm, qp) / (2 * h)     # body angular velocity
        _close(joint.jacobian(r)[:3] @ rd, v_pin, 1e-8)
        pin.forwardKinematics(model, data, quat)
        _close(joint.transform(r)[:3, :3], data.oMi[1].rotation,
               ROTATION_TOL * max(1.0, np.linalg.norm(r)))


@pytest.mark.parametrize("joint", [Spherical(), Free()], ids=["Spherical", "Free"])
@pytest.mark.parametrize("theta", [PI + 1e-9, 4.0, 2 * PI - 1e-4, 2 * PI + 0.5, 13.0])
def test_normalize_changes_chart_keeping_pose_and_twist(joint, theta):
    q = np.concatenate([_at(theta, 7), [1.0, -2.0, 0.5][: joint.nq - 3]])
    v = np.array([0.3, -1.1, 0.8, 0.2, 0.1, -0.4][: joint.nq])
    q2, v2 = joint.normalize(q, v)
    assert np.linalg.norm(q2[:3]) <= PI + 1e-12
    _close(joint.transform(q2), joint.transform(q), 1e-13)
    _close(joint.jacobian(q2) @ v2, joint.jacobian(q) @ v, 1e-10)   # the same body twist
    q3, v3 = joint.normalize(q2, v2)
    assert np.array_equal(q3, q2) and np.array_equal(v3, v2)


@pytest.mark.parametrize("joint", [Spherical(), Free()], ids=["Spherical", "Free"])
def test_normalize_is_identity_below_pi(joint):
    q = np.concatenate([_at(PI - 1e-9, 2), [1.0, 2.0, 3.0][: joint.nq - 3]])
    v = np.ones(joint.nq)
    q2, v2 = joint.normalize(q, v)
    assert np.array_equal(q2, q) and np.array_equal(v2, v)


def test_spinning_ball_never_reaches_two_pi():
    """Integrate a constant body angular velocity for several turns with r_dot = G_b w and
    normalize after each step: |r| stays <= pi (never near the 2 pi singularity) and the
    rotation follows exp(w t)."""
    joint = Spherical()
    w = np.array([3.0, -1.0, 2.0])
    dt, steps = 4e-3, 1500          # about 3.6 turns
    q = np.zeros(3)
    v = ec.rdot_from_body(q, w)
    max_norm = 0.0
    for _ in range(steps):
        # RK4 on r_dot = G_b(r) w (w constant in the body frame)
        k1 = ec.rdot_from_body(q, w)
        k2 = ec.rdot_from_body(q + 0.5 * dt * k1, w)
        k3 = ec.rdot_from_body(q + 0.5 * dt * k2, w)
        k4 = ec.rdot_from_body(q + dt * k3, w)
        q = q + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        q, v = joint.normalize(q, ec.rdot_from_body(q, w))
        max_norm = max(max_norm, np.linalg.norm(q))
    assert max_norm < PI + 0.01
    _close(joint.transform(q)[:3, :3], so3.exp(w * dt * steps), 1e-7)
    _close(joint.jacobian(q)[:3] @ v, w, 1e-12)


@given(st.lists(st.floats(-12, 12), min_size=3, max_size=3),
       st.lists(st.floats(-3, 3), min_size=3, max_size=3))
@settings(max_examples=40, deadline=None)
def test_free_joint_velocity_is_body_twist(r, pd):
    """S q_dot = (G^-1 G_dot)^vee for Free along a random path (angular part from eq. 6,
    linear part R^T p_dot)."""
    joint = Free()
    q = np.concatenate([r, [0.1, 0.2, 0.3]])
    if abs(math.remainder(np.linalg.norm(r), 2 * PI)) < 1e-3 and np.linalg.norm(r) > 1:
        return
    qd = np.concatenate([[0.5, -0.2, 0.1], pd])
    h = 1e-6
    dG = (joint.transform(q + h * qd) - joint.transform(q - h * qd)) / (2 * h)
    twist = se3.vee(se3.inv(joint.transform(q)) @ dG)
    _close(joint.jacobian(q) @ qd, twist, 1e-8)


@pytest.mark.parametrize("call, match", [
    (lambda: Spherical().transform([0.0, 1.0]), r"shape \(3,\)"),
    (lambda: Spherical().evaluate([np.nan, 0, 0]), "NaN"),
    (lambda: Free().jacobian(np.zeros(3)), r"shape \(6,\)"),
    (lambda: Spherical().transforms(np.zeros((4, 2))), r"\(N, 3\)"),
    (lambda: Spherical().normalize(np.zeros(3), [1.0, np.inf, 0]), "v contains NaN"),
    (lambda: Spherical(lower=[-1, -1, -1]), "reach cone"),
    (lambda: Free(upper=[1, 1, 1, 1, 1, 1]), "reach cone"),
])
def test_bad_input_raises_helpful_error(call, match):
    with pytest.raises(InvalidInputError, match=match):
        call()


def test_dict_round_trip_and_properties():
    for cls, n in ((Spherical, 3), (Free, 6)):
        j = cls()
        assert j.nq == j.nv == n
        assert np.all(np.isinf(j.lower)) and np.all(np.isinf(j.upper))
        assert np.array_equal(j.neutral(), np.zeros(n))
        assert cls.from_dict(j.to_dict()) == j
        assert repr(j) == f"{cls.__name__}()"
