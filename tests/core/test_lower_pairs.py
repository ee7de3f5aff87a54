"""Lower-pair joints: S and H against central differences, closed forms, Pinocchio, batching,
serialization and input validation."""

import json

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.joints.lower_pairs import (Cylindrical, Fixed, Helical, Planar, Prismatic, Revolute,
                                     Universal, plane_basis)
from core.lie import se3, so3

from _fd import fd_hessian, fd_jacobian

EPS = np.finfo(float).eps
#: one joint on two code paths (evaluate() and the single calls, batched and looped: Python
#: floats or numpy arrays, libm's or SIMD sin and cos): a few ulps of entries of size max(1, |q|)
PATHS_TOL = 16 * EPS
#: a joint's closed form against products of se3.exp and so3.exp (other operation orders, O(30)
#: operations of O(1) condition): entries of size max(1, |q|)
CLOSED_FORM_TOL = 32 * EPS


def check_joint_derivatives(joint, q, atol=1e-7):
    """S and H against central differences, and evaluate() against the single calls."""
    G, S, H = joint.evaluate(q)
    assert G.shape == (4, 4) and S.shape == (6, joint.nv) and H.shape == (joint.nv, 6, joint.nv)
    se3.check_transform(G)
    tol = PATHS_TOL * max(1.0, np.abs(q).max(initial=0.0))
    np.testing.assert_allclose(G, joint.transform(q), atol=tol)
    np.testing.assert_allclose(S, joint.jacobian(q), atol=tol)
    np.testing.assert_allclose(H, joint.hessian(q), atol=tol)
    np.testing.assert_allclose(S, fd_jacobian(joint, q), atol=atol)
    np.testing.assert_allclose(H, fd_hessian(joint, q), atol=atol)


rng = np.random.default_rng(7)
AXIS = rng.normal(size=3)
AXIS2 = rng.normal(size=3)

JOINTS = [
    Revolute(AXIS), Revolute(), Prismatic(AXIS), Helical(AXIS, 0.05), Helical((0, 0, 1), -0.3),
    Cylindrical(AXIS), Universal(AXIS, AXIS2), Universal(), Planar(AXIS), Planar(),
]


def _points(nq):
    r = np.random.default_rng(nq)
    return [np.zeros(nq), np.full(nq, 1e-8), r.uniform(-3, 3, nq), np.full(nq, 2 * np.pi + 0.3),
            np.full(nq, np.pi), np.full(nq, -np.pi + 1e-9)]


@pytest.mark.parametrize("joint", JOINTS, ids=repr)
def test_derivatives_match_finite_differences(joint):
    for q in _points(joint.nq):
        check_joint_derivatives(joint, q)


@pytest.mark.parametrize("joint", JOINTS, ids=repr)
def test_batched_equals_looped(joint):
    qs = np.random.default_rng(3).uniform(-7, 7, (17, joint.nq))
    batched = joint.transforms(qs)
    assert batched.shape == (17, 4, 4)
    np.testing.assert_allclose(batched, np.stack([joint.transform(q) for q in qs]),
                               atol=PATHS_TOL * np.abs(qs).max())
    assert joint.transforms(np.zeros((0, joint.nq))).shape == (0, 4, 4)


@pytest.mark.parametrize("joint", JOINTS, ids=repr)
def test_dict_round_trip_is_json(joint):
    d = json.loads(json.dumps(joint.to_dict()))
    back = type(joint).from_dict(d)
    assert back == joint
    q = np.linspace(0.1, 0.7, joint.nq)
    np.testing.assert_array_equal(back.transform(q), joint.transform(q))


def test_limits_round_trip_and_validation():
    j = Universal(lower=[-1.0, -np.inf], upper=2.0)
    np.testing.assert_array_equal(j.lower, [-1.0, -np.inf])
    np.testing.assert_array_equal(j.upper, [2.0, 2.0])
    back = Universal.from_dict(json.loads(json.dumps(j.to_dict())))
    np.testing.assert_array_equal(back.lower, j.lower)
    np.testing.assert_array_equal(back.upper, j.upper)
    assert np.all(Revolute().lower == -np.inf) and np.all(Revolute().upper == np.inf)
    with pytest.raises(InvalidInputError, match="swap"):
        Revolute(lower=1.0, upper=0.0)
    with pytest.raises(InvalidInputError, match="2 numbers"):
        Universal(lower=[0.0, 1.0, 2.0])
    with pytest.raises(InvalidInputError, match="NaN"):
        Prismatic(upper=np.nan)


def test_revolute_and_prismatic_closed_forms():
    k = AXIS / np.linalg.norm(AXIS)
    for q in (0.0, 1e-8, 1.3, -2 * np.pi - 0.3):
        G = Revolute(AXIS).transform(q)
        tol = CLOSED_FORM_TOL * max(1.0, abs(q))
        np.testing.assert_allclose(G, se3.exp(np.r_[k * q, 0, 0, 0]), atol=tol)
        np.testing.assert_allclose(Prismatic(AXIS).transform([q]),
                                   se3.exp(np.r_[0, 0, 0, k * q]), atol=tol)
    np.testing.assert_allclose(Revolute(AXIS).jacobian(0.4)[:, 0], np.r_[k, 0, 0, 0])
    np.testing.assert_allclose(Prismatic(AXIS).jacobian(0.4)[:, 0], np.r_[0, 0, 0, k])


def test_helical_closed_form():
    """Seed 000 4.1: G = exp(s q) with s = [k; h k], S = s, dS = 0; one turn advances 2 pi h."""
    h = 0.125
    j = Helical((0, 0, 2.0), h)
    for q in (0.0, 1e-8, 0.9, 2 * np.pi + 0.3, -4.0):
        np.testing.assert_allclose(j.transform(q), se3.exp(np.array([0, 0, q, 0, 0, h * q])),
                                   atol=CLOSED_FORM_TOL * max(1.0, abs(q)))
        np.testing.assert_array_equal(j.jacobian(q)[:, 0], [0, 0, 1, 0, 0, h])
        np.testing.assert_array_equal(j.hessian(q), np.zeros((1, 6, 1)))
    turn = j.transform(2 * np.pi)
    np.testing.assert_allclose(turn[:3, :3], np.eye(3), atol=CLOSED_FORM_TOL * 2 * np.pi)
    np.testing.assert_allclose(turn[:3, 3], [0, 0, 2 * np.pi * h], atol=CLOSED_FORM_TOL * 2 * np.pi)
    # zero pitch is a revolute joint
    np.testing.assert_allclose(Helical(AXIS, 0.0).transform(0.7), Revolute(AXIS).transform(0.7))


def test_universal_closed_form_and_seed_hessian():
    """S = [Ad_{exp(-s1 q1)} s0, s1] and dS0/dq1 = ad_{S0} s1 (seed 000 section 4.1)."""
    a0 = AXIS / np.linalg.norm(AXIS)
    a1 = AXIS2 / np.linalg.norm(AXIS2)
    j = Universal(AXIS, AXIS2)
    s0, s1 = np.r_[a0, 0, 0, 0], np.r_[a1, 0, 0, 0]
    for q in _points(2):
        G, S, H = j.evaluate(q)
        tol = CLOSED_FORM_TOL * max(1.0, np.abs(q).max())
        np.testing.assert_allclose(G, se3.exp(s0 * q[0]) @ se3.exp(s1 * q[1]), atol=tol)
        np.testing.assert_allclose(S[:, 0], se3.Ad(se3.exp(-s1 * q[1])) @ s0, atol=tol)
        np.testing.assert_allclose(S[:, 1], s1, atol=CLOSED_FORM_TOL)
        np.testing.assert_allclose(H[1][:, 0], se3.ad(S[:, 0]) @ s1, atol=tol)
        np.testing.assert_array_equal(H[0], 0.0)
        np.testing.assert_array_equal(H[1][:, 1], 0.0)


def test_planar_basis_and_closed_form():
    t1, t2 = plane_basis(np.array([0.0, 0.0, 1.0]))
    np.testing.assert_array_equal(t1, [1, 0, 0])
    np.testing.assert_array_equal(t2, [0, 1, 0])
    t1, t2 = plane_basis(np.array([1.0, 0.0, 0.0]))
    np.testing.assert_array_equal(t1, [0, 1, 0])
    np.testing.assert_array_equal(t2, [0, 0, 1])
    n = AXIS / np.linalg.norm(AXIS)
    t1, t2 = plane_basis(n)
    np.testing.assert_allclose([t1 @ n, t2 @ n, t1 @ t2], 0.0, atol=CLOSED_FORM_TOL)
    np.testing.assert_allclose(np.cross(t1, t2), n, atol=CLOSED_FORM_TOL)
    j = Planar(AXIS)
    q = np.array([0.3, -1.2, 2.5])
    G = j.transform(q)
    np.testing.assert_allclose(G, se3.exp(np.r_[0, 0, 0, t1 * q[0]])
                               @ se3.exp(np.r_[0, 0, 0, t2 * q[1]])
                               @ se3.exp(np.r_[n * q[2], 0, 0, 0]),
                               atol=CLOSED_FORM_TOL * np.abs(q).max())
    assert abs(G[:3, 3] @ n) < CLOSED_FORM_TOL * np.abs(q).max()


def test_cylindrical_closed_form():
    k = AXIS / np.linalg.norm(AXIS)
    G = Cylindrical(AXIS).transform([0.8, -0.4])
    np.testing.assert_allclose(G[:3, :3], so3.exp(0.8 * k), atol=CLOSED_FORM_TOL)
    np.testing.assert_allclose(G[:3, 3], -0.4 * k, atol=CLOSED_FORM_TOL)


def test_fixed():
    j = Fixed()
    G, S, H = j.evaluate(np.zeros(0))
    np.testing.assert_array_equal(G, np.eye(4))
    assert S.shape == (6, 0) and H.shape == (0, 6, 0) and j.nq == j.nv == 0
    assert j.transforms(np.zeros((3, 0))).shape == (3, 4, 4)
    assert Fixed.from_dict(json.loads(json.dumps(j.to_dict()))) == j


# -- against Pinocchio -------------------------------------------------------------------
def _pin():
    return pytest.importorskip("pinocchio")


def _pin_chain(joint_models):
    pin = _pin()
    model = pin.Model()
    parent = 0
    for i, jm in enumerate(joint_models):
        parent = model.addJoint(parent, jm, pin.SE3.Identity(), f"j{i}")
    return model, model.createData()


def _pin_placement_and_local_jacobian(model, data, q):
    pin = _pin()
    pin.forwardKinematics(model, data, q)
    pin.computeJointJacobians(model, data, q)
    last = model.njoints - 1
    J = np.asarray(pin.getJointJacobian(model, data, last, pin.ReferenceFrame.LOCAL))
    J = J.reshape(6, model.nv)
    # Pinocchio orders motions [v; w]; ours are [w; v]
    return data.oMi[last].homogeneous, np.vstack([J[3:], J[:3]])


def test_against_pinocchio_revolute_prismatic():
    pin = _pin()
    k = AXIS / np.linalg.norm(AXIS)
    cases = [(Revolute(AXIS), pin.JointModelRevoluteUnaligned(*k)),
             (Revolute((1, 0, 0)), pin.JointModelRX()),
             (Prismatic(AXIS), pin.JointModelPrismaticUnaligned(*k)),
             (Prismatic((0, 0, 1)), pin.JointModelPZ())]
    for ours, jm in cases:
        model, data = _pin_chain([jm])
        for q in (0.0, 1e-8, 0.7, -2.9, 2 * np.pi + 0.3):
            T, J = _pin_placement_and_local_jacobian(model, data, np.array([q]))
            np.testing.assert_allclose(ours.transform(q), T, atol=1e-13)
            np.testing.assert_allclose(ours.jacobian(q), J, atol=1e-13)


def test_against_pinocchio_universal_cylindrical_planar():
    pin = _pin()
    a0 = AXIS / np.linalg.norm(AXIS)
    a1 = AXIS2 / np.linalg.norm(AXIS2)
    uni = Universal(AXIS, AXIS2)
    model, data = _pin_chain([pin.JointModelRevoluteUnaligned(*a0),
                              pin.JointModelRevoluteUnaligned(*a1)])
    cyl = Cylindrical(AXIS)
    cmodel, cdata = _pin_chain([pin.JointModelRevoluteUnaligned(*a0),
                                pin.JointModelPrismaticUnaligned(*a0)])
    pla = Planar()
    pmodel, pdata = pin.Model(), None
    pmodel.addJoint(0, pin.JointModelPlanar(), pin.SE3.Identity(), "planar")
    pdata = pmodel.createData()
    for q in _points(2):
        T, J = _pin_placement_and_local_jacobian(model, data, q)
        np.testing.assert_allclose(uni.transform(q), T, atol=1e-13)
        np.testing.assert_allclose(uni.jacobian(q), J, atol=1e-13)
        T, J = _pin_placement_and_local_jacobian(cmodel, cdata, q)
        np.testing.assert_allclose(cyl.transform(q), T, atol=1e-13)
        np.testing.assert_allclose(cyl.jacobian(q), J, atol=1e-13)
    for q in _points(3):
        qp = np.array([q[0], q[1], np.cos(q[2]), np.sin(q[2])])  # Pinocchio: (x, y, cos, sin)
        T, J = _pin_placement_and_local_jacobian(pmodel, pdata, qp)
        np.testing.assert_allclose(pla.transform(q), T, atol=1e-13)
        # Pinocchio's planar velocity is the body twist (vx, vy, wz), ours the rates
        # (x_dot, y_dot, theta_dot): the two Jacobians differ by the rotation of the rates
        R = pla.transform(q)[:3, :3]
        rates_to_body = np.eye(3)
        rates_to_body[:2, :2] = R[:2, :2].T
        np.testing.assert_allclose(pla.jacobian(q), J @ rates_to_body, atol=1e-13)


# -- bad input ---------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: Revolute((0, 0, 0)), lambda: Revolute((0, np.nan, 1)), lambda: Revolute((1, 0)),
    lambda: Prismatic((np.inf, 0, 0)), lambda: Helical((0, 0, 1), np.nan),
    lambda: Helical((0, 0, 1), [0.1, 0.2]), lambda: Cylindrical([[0, 0, 1]]),
    lambda: Universal((1, 0, 0), (0, 0, 0)), lambda: Planar((0, 0, 1e-15)),
])
def test_bad_construction_raises(make):
    with pytest.raises(InvalidInputError):
        make()


@pytest.mark.parametrize("joint", JOINTS, ids=repr)
def test_bad_coordinates_raise(joint):
    bad = [np.zeros(joint.nq + 1), np.full(joint.nq, np.nan), np.full(joint.nq, np.inf),
           np.zeros((2, joint.nq))]
    for q in bad:
        for f in (joint.transform, joint.jacobian, joint.hessian, joint.evaluate):
            with pytest.raises(InvalidInputError):
                f(q)
    for qs in (np.zeros((3, joint.nq + 1)), np.full((2, joint.nq), np.nan),
               np.zeros((2, 3, joint.nq))):
        with pytest.raises(InvalidInputError):
            joint.transforms(qs)


def test_from_dict_rejects_wrong_type_and_keys():
    with pytest.raises(InvalidInputError, match="joint_from_dict"):
        Revolute.from_dict({"type": "Prismatic", "axis": [0, 0, 1]})
    with pytest.raises(InvalidInputError, match="bad keys"):
        Revolute.from_dict({"type": "Revolute", "axis": [0, 0, 1], "pitch": 2.0})
    with pytest.raises(InvalidInputError, match="expects a dict"):
        Revolute.from_dict("Revolute")


# -- registry ------------------------------------------------------------------------------
def test_registry_round_trips_every_family():
    from core.joints import (JOINT_TYPES, ClosedSplineCurveJoint, CustomJoint, Elliptic,
                             EllipsoidJoint, Free, ScapulothoracicJoint, Spherical,
                             SplineCurveJoint, SplineJoint, joint_from_dict)
    from core.joints.mapped import MappedJoint
    from core.joints.opensim import Constant, LinearFunction, SimmSpline
    r = np.random.default_rng(11)
    frames = se3.exp(np.cumsum(r.normal(size=(6, 6)) * 0.3, axis=0))
    knots = np.arange(8.0)
    examples = JOINTS + [Fixed(), Elliptic(2.0, 0.5, AXIS, lower=-1.0), Spherical(), Free(),
                         SplineCurveJoint(frames), ClosedSplineCurveJoint(frames),
                         SplineJoint([knots, knots], r.normal(size=(6, 4, 4)) * 0.2),
                         CustomJoint(np.vstack([np.eye(3), np.eye(3)]),
                                     [LinearFunction(), Constant(0.1), LinearFunction(0.5, 0.0),
                                      SimmSpline([-1.0, 0.0, 2.0], [0.0, 0.1, -0.1]),
                                      Constant(0.0), LinearFunction()],
                                     [0, None, 1, 0, None, 1], 2, lower=-1.0),
                         ScapulothoracicJoint([0.07, 0.15, 0.08], [-0.05, -0.03], 0.3),
                         EllipsoidJoint([0.3, 0.2, 0.1]),
                         MappedJoint(SplineCurveJoint(frames), parent=frames[1],
                                     scale=1.3, mirror_axis=0)]
    assert {type(j).__name__ for j in examples} == set(JOINT_TYPES)
    for joint in examples:
        d = json.loads(json.dumps(joint.to_dict()))
        back = joint_from_dict(d)
        assert type(back) is type(joint) and back.to_dict()["type"] == d["type"]
        lo, hi = joint.lower, joint.upper
        bounded = np.isfinite(lo) & np.isfinite(hi)
        q = np.where(bounded, 0.6 * lo + 0.4 * np.where(bounded, hi, 0.0), 0.3)
        for x, y in zip(back.evaluate(q), joint.evaluate(q)):
            # the constructor runs again on the stored parameters (normalizes axes again)
            np.testing.assert_allclose(x, y, atol=PATHS_TOL)


def test_registry_rejects_bad_dicts():
    from core.joints import joint_from_dict
    with pytest.raises(InvalidInputError, match="unknown joint type"):
        joint_from_dict({"type": "Hinge"})
    with pytest.raises(InvalidInputError, match="unknown joint type"):
        joint_from_dict({"axis": [0, 0, 1]})
    with pytest.raises(InvalidInputError, match="expects a dict"):
        joint_from_dict([("type", "Revolute")])
    with pytest.raises(InvalidInputError, match="zero length"):
        joint_from_dict({"type": "Revolute", "axis": [0, 0, 0]})
