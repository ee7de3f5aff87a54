"""Elliptic joint (seed 000 eqs. 17-20): geometry, the re-derived dS/dq, batching, validation."""

import json

import numpy as np
import pytest
from test_lower_pairs import check_joint_derivatives

from core.errors import InvalidInputError
from core.joints.elliptic import Elliptic
from core.joints.lower_pairs import Revolute
from core.lie import se3, so3

AXIS = np.array([0.3, -0.8, 0.5])
JOINTS = [Elliptic(2.0, 1.0), Elliptic(0.4, 1.7, AXIS), Elliptic(1.0, 1.0), Elliptic(3.0, 0.05)]
QS = [0.0, 1e-8, -1e-8, 0.7, np.pi / 2, np.pi - 1e-9, np.pi, -2.2, 2 * np.pi + 0.3, 40.0]
EPS = np.finfo(float).eps
#: entries built from sin q and cos q (numpy's SIMD kernels or libm: a few ulps each) by O(10)
#: products, sums, an arctan2 or a normalization; absolute, times the size max(a, b, 1)
GEOMETRY_TOL = 32 * EPS


def _size(a, b):
    return max(a, b, 1.0)


@pytest.mark.parametrize("joint", JOINTS, ids=repr)
def test_derivatives_match_finite_differences(joint):
    for q in QS + list(np.random.default_rng(1).uniform(-7, 7, 5)):
        # the thin ellipse (a/b = 60) has phi'' up to ~ (a/b)^2: scale the tolerance with it
        check_joint_derivatives(joint, np.array([q]), atol=1e-7 * max(joint.a / joint.b,
                                                                      joint.b / joint.a) ** 2)


def test_seed_equations_17_18_with_axis_z():
    a, b = 2.0, 0.7
    j = Elliptic(a, b)
    for q in QS:
        G = j.transform(q)
        phi = np.arctan2(b * np.sin(q), a * np.cos(q))
        np.testing.assert_allclose(G[:3, :3], so3.exp(np.array([0, 0, phi])), atol=GEOMETRY_TOL)
        np.testing.assert_allclose(G[:3, 3], [a * np.sin(q), -b * np.cos(q), 0.0],
                                   atol=GEOMETRY_TOL * _size(a, b))


def _phi(q, a, b):
    return np.unwrap(np.arctan2(b * np.sin(q), a * np.cos(q)))


def test_phi_derivatives_and_corrected_eq20():
    """phi' = ab/D, phi'' = 2ab(a^2-b^2) sc/D^2 and eq. 20 with the primes restored."""
    a, b, h = 1.3, 0.6, 1e-5
    j = Elliptic(a, b)
    for q in QS:
        c, s = np.cos(q), np.sin(q)
        D = a * a * c * c + b * b * s * s
        ph = _phi(np.array([q - h, q, q + h]), a, b)
        dphi, ddphi = (ph[2] - ph[0]) / (2 * h), (ph[2] - 2 * ph[1] + ph[0]) / h ** 2
        np.testing.assert_allclose(a * b / D, dphi, atol=1e-8)
        np.testing.assert_allclose(2 * a * b * (a * a - b * b) * s * c / D ** 2, ddphi,
                                   atol=2e-4)
        G, S, H = j.evaluate(q)
        Rt = G[:3, :3].T
        np.testing.assert_allclose(S[:, 0], np.r_[0, 0, a * b / D,
                                                  Rt @ [a * c, b * s, 0]],
                                   atol=GEOMETRY_TOL * _size(a, b))
        d1 = a * b / D
        np.testing.assert_allclose(
            H[0, :, 0], np.r_[0, 0, 2 * a * b * (a * a - b * b) * s * c / D ** 2,
                              Rt @ [(b * d1 - a) * s, (b - a * d1) * c, 0]],
            atol=GEOMETRY_TOL * _size(a, b) ** 3)   # phi'' ~ a b (a^2 - b^2) / D^2


@pytest.mark.parametrize("joint", JOINTS, ids=repr)
def test_origin_on_ellipse_and_frame_tangent(joint):
    k, t1, t2 = joint.axis, joint.t1, joint.t2
    qs = np.linspace(-7, 7, 301)
    G = joint.transforms(qs)
    p = G[:, :3, 3]
    size = _size(joint.a, joint.b)
    np.testing.assert_allclose(p @ k, 0.0, atol=GEOMETRY_TOL * size)
    # dividing by the short semi-axis amplifies the other axis' round-off by a/b or b/a
    np.testing.assert_allclose((p @ t1 / joint.a) ** 2 + (p @ t2 / joint.b) ** 2, 1.0,
                               atol=GEOMETRY_TOL * size / min(joint.a, joint.b))
    # the child's t1 axis is the unit tangent; k is kept
    dp = joint.a * np.cos(qs)[:, None] * t1 + joint.b * np.sin(qs)[:, None] * t2
    tangent = dp / np.linalg.norm(dp, axis=1, keepdims=True)
    np.testing.assert_allclose(G[:, :3, :3] @ t1, tangent, atol=GEOMETRY_TOL)
    np.testing.assert_allclose(G[:, :3, :3] @ k, np.broadcast_to(k, (len(qs), 3)),
                               atol=GEOMETRY_TOL)
    # so the body velocity of the origin is along the body t1 axis, with speed |p'|
    for q, speed in zip(qs[::30], np.linalg.norm(dp, axis=1)[::30]):
        np.testing.assert_allclose(joint.jacobian(q)[3:, 0], speed * t1, atol=GEOMETRY_TOL * size)


def test_circle_is_an_offset_revolute():
    r = 0.8
    j = Elliptic(r, r, AXIS)
    offset = np.eye(4)
    offset[:3, 3] = -r * j.t2
    for q in QS:
        np.testing.assert_allclose(j.transform(q), Revolute(AXIS).transform(q) @ offset,
                                   atol=GEOMETRY_TOL)
        assert np.all(j.hessian(q)[0, :3] == 0.0)  # constant turning rate on a circle


@pytest.mark.parametrize("joint", JOINTS, ids=repr)
def test_batched_equals_looped_and_dict(joint):
    qs = np.random.default_rng(5).uniform(-9, 9, 23)
    # batched (numpy ufuncs) and single (Python floats) paths round differently
    np.testing.assert_allclose(joint.transforms(qs), np.stack([joint.transform(q) for q in qs]),
                               atol=GEOMETRY_TOL * _size(joint.a, joint.b))
    np.testing.assert_array_equal(joint.transforms(qs[:, None]), joint.transforms(qs))
    back = Elliptic.from_dict(json.loads(json.dumps(joint.to_dict())))
    assert back == joint and back.to_dict()["type"] == "Elliptic"
    np.testing.assert_array_equal(back.evaluate(0.3)[2], joint.evaluate(0.3)[2])
    se3.check_transform(joint.transforms(qs))


def test_limits():
    j = Elliptic(1.0, 2.0, lower=-1.0, upper=1.5)
    np.testing.assert_array_equal([j.lower, j.upper], [[-1.0], [1.5]])
    back = Elliptic.from_dict(j.to_dict())
    np.testing.assert_array_equal([back.lower, back.upper], [[-1.0], [1.5]])


@pytest.mark.parametrize("args", [(0.0, 1.0), (1.0, -2.0), (np.nan, 1.0), (1.0, np.inf),
                                  ([1.0, 2.0], 1.0), (1.0, 1.0, (0, 0, 0)),
                                  (1.0, 1.0, (0, 0, np.nan)), (1e-300, 1e-300), (1e200, 1.0)])
def test_bad_parameters_raise(args):
    with pytest.raises(InvalidInputError):
        Elliptic(*args)


@pytest.mark.parametrize("a, b", [(1e-6, 1e-6), (1e-6, 1e6), (1e6, 1e6)])
def test_extreme_semi_axes_evaluate_to_finite_values(a, b):
    """At the ends of the accepted range eq. 20's fourth powers neither overflow nor vanish."""
    j = Elliptic(a, b)
    for q in (0.0, 0.3, 1.0, np.pi / 2, 1e8):
        G, S, H = j.evaluate([q])
        assert np.all(np.isfinite(G)) and np.all(np.isfinite(S)) and np.all(np.isfinite(H))


def test_bad_coordinates_raise():
    j = Elliptic(1.0, 2.0)
    for q in (np.nan, np.inf, [0.1, 0.2], np.zeros((1, 1))):
        for f in (j.transform, j.jacobian, j.hessian, j.evaluate):
            with pytest.raises(InvalidInputError, match="Elliptic"):
                f(q)
    with pytest.raises(InvalidInputError, match="shape"):
        j.transforms(np.zeros((3, 2)))
    with pytest.raises(InvalidInputError, match="NaN"):
        j.transforms([0.0, np.nan])
