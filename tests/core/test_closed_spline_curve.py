"""ClosedSplineCurveJoint (seed 000 eqs. 21-24 with periodically wrapped control frames):
period n in q, C2 across the seam (S and H against central differences there), periodic
batched transforms, and exact round trips through to_dict, the joint registry and core.io."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.errors import InvalidInputError
from core.io import JointDocument, dumps, loads
from core.joints import ClosedSplineCurveJoint, SplineCurveJoint, joint_from_dict
from core.lie import se3
from core.mechanisms.beads import rose_frames

from _fd import fd_hessian, fd_jacobian

_ROSE = ClosedSplineCurveJoint(rose_frames(16))


def _twisted_loop(n=6):
    """n frames on a circle that turn about their own x axis as they go round (not planar)."""
    th = 2 * np.pi * np.arange(n) / n
    xi = np.zeros((n, 6))
    xi[:, 2] = th
    xi[:, 0] = 0.4 * np.sin(th)
    F = se3.exp(xi)
    F[:, :3, 3] = np.stack([np.cos(th), np.sin(th), 0.2 * np.cos(2 * th)], axis=1)
    return F


def test_closed_curve_joint_is_periodic_and_c2_across_the_seam():
    j = ClosedSplineCurveJoint(rose_frames(24))
    lo, P = j.lower[0], j.period
    assert lo == 0.0 and P == 24.0 and j.upper[0] == lo + P
    for x in (lo, lo + 0.37, lo + P - 1e-9, lo + 5.5):
        for a, b in zip(j.evaluate(np.array([x])), j.evaluate(np.array([x + P]))):
            assert np.allclose(a, b, atol=1e-12)
    # S and H on both sides of the seam against central differences
    for x in (lo, lo + P, lo + 1e-8, lo + P - 1e-8):
        G, S, H = j.evaluate(np.array([x]))
        assert np.allclose(fd_jacobian(j, x), S, atol=1e-7)
        assert np.allclose(fd_hessian(j, x), H, atol=1e-6)
    q, v = j.normalize(np.array([lo + 2.5 * P]), np.array([3.0]))
    assert lo <= q[0] < lo + P and np.isclose(q[0], lo + 0.5 * P) and v[0] == 3.0


def test_seam_is_c2_for_a_twisted_loop():
    j = ClosedSplineCurveJoint(_twisted_loop())
    left = j.evaluate(j.period - 1e-12)
    right = j.evaluate(0.0)
    for a, b in zip(left, right):                      # G, S and dS/dq continuous at the seam
        assert np.allclose(a, b, atol=1e-9)
    for x in (0.0, 1e-8, j.period, 3.7):
        G, S, H = j.evaluate(x)
        assert np.allclose(fd_jacobian(j, x), S, atol=1e-7)
        assert np.allclose(fd_hessian(j, x), H, atol=1e-6)


@given(x=st.floats(-50.0, 50.0), turns=st.integers(-3, 3))
def test_closed_curve_joint_has_period_n_everywhere(x, turns):
    j = _ROSE
    for a, b in zip(j.evaluate(np.array([x])), j.evaluate(np.array([x + turns * j.period]))):
        assert np.allclose(a, b, atol=1e-11)
    q, _ = j.normalize(np.array([x]), np.zeros(1))
    assert j.lower[0] <= q[0] < j.upper[0]
    assert np.allclose(j.transform(q), j.transform(np.array([x])), atol=1e-11)


def test_batched_transforms_are_periodic_and_match_evaluate():
    j = _ROSE
    x = np.array([-40.2, -1e-17, 0.0, 3.3, 15.999, 16.0, 31.5])
    T = j.transforms(x)
    assert np.allclose(T, np.stack([j.transform(v) for v in x]), atol=1e-12)
    assert np.allclose(T, j.transforms(x + 2 * j.period), atol=1e-11)
    with pytest.raises(InvalidInputError, match="diverged"):
        j.transforms(np.array([1e16]))


def test_to_dict_says_closed_and_round_trips_exactly():
    j = ClosedSplineCurveJoint(_twisted_loop(), order=4)
    d = j.to_dict()
    assert d["type"] == "ClosedSplineCurveJoint" and d["order"] == 4
    assert np.shape(d["control_frames"]) == (6, 4, 4) and np.shape(d["control_twists"]) == (6, 6)
    for back in (ClosedSplineCurveJoint.from_dict(d), joint_from_dict(d)):
        assert type(back) is ClosedSplineCurveJoint and back.period == j.period
        assert back.to_dict() == d
        qs = np.linspace(-7.0, 13.0, 41)
        np.testing.assert_array_equal(back.transforms(qs), j.transforms(qs))
    frames_only = {k: v for k, v in d.items() if k != "control_twists"}
    assert np.allclose(joint_from_dict(frames_only).transforms(qs), j.transforms(qs), atol=1e-12)
    with pytest.raises(InvalidInputError, match="type 'SplineCurveJoint'"):
        SplineCurveJoint.from_dict(d)           # an open loader refuses a closed description
    with pytest.raises(InvalidInputError, match="disagree"):
        edited = np.array(d["control_frames"])
        edited[2, :3, 3] += 0.1                 # a frame moved without updating the twists
        ClosedSplineCurveJoint.from_dict(dict(d, control_frames=edited.tolist()))


def test_spacing_scales_the_coordinate_and_round_trips():
    F, h = _twisted_loop(), 0.37
    unit, scaled = ClosedSplineCurveJoint(F), ClosedSplineCurveJoint(F, spacing=h)
    assert scaled.period == 6 * h and scaled.spacing == h and scaled.upper[0] == 6 * h
    for x in (0.0, 0.8, 2.5, 5.9, -3.3):
        G1, S1, H1 = unit.evaluate(x)
        Gh, Sh, Hh = scaled.evaluate(x * h)        # G_h(q) = G_1(q / h)
        assert np.allclose(Gh, G1, atol=1e-12)
        assert np.allclose(Sh, S1 / h, atol=1e-11)
        assert np.allclose(Hh, H1 / h ** 2, atol=1e-10)
        assert np.allclose(fd_jacobian(scaled, x * h), Sh, atol=1e-7 / h)
    d = scaled.to_dict()
    assert d["spacing"] == h
    back = joint_from_dict(d)
    np.testing.assert_array_equal(back.transforms([0.1, 1.7]), scaled.transforms([0.1, 1.7]))
    assert back.to_dict() == d and loads(dumps(JointDocument(scaled, ("s",)))).joint.period \
        == scaled.period
    for bad in (0.0, -1.0, float("nan"), True):
        with pytest.raises(InvalidInputError, match="spacing"):
            ClosedSplineCurveJoint(F, spacing=bad)


def test_core_io_document_round_trips_a_closed_curve_exactly():
    j = _ROSE
    doc = JointDocument(j, ("s",), name="rose")
    text = dumps(doc)
    back = loads(text)
    assert type(back.joint) is ClosedSplineCurveJoint and back.joint.period == j.period
    np.testing.assert_array_equal(back.joint.control_frames, j.control_frames)
    np.testing.assert_array_equal(back.joint.control_twists, j.control_twists)
    np.testing.assert_array_equal(back.ranges, [[0.0, j.period]])
    qs = np.array([-3.1, 0.0, 0.25, 7.5, 15.99, 16.0, 20.5])
    np.testing.assert_array_equal(back.joint.transforms(qs), j.transforms(qs))
    for x in qs:                                   # still closed after reloading: periodic
        for a, b in zip(back.joint.evaluate(x), j.evaluate(x + j.period)):
            assert np.allclose(a, b, atol=1e-11)
    assert dumps(back) == text


def test_from_twists_allows_large_turns_and_rejects_an_open_loop():
    # one full turn about z in four steps, two of them beyond pi (2.5 pi and -1.5 pi)
    z = np.zeros((4, 6))
    z[:, 2] = 2 * np.pi / 4 + np.array([2 * np.pi, 0.0, 0.0, -2 * np.pi])
    z[:, 3] = 0.5
    with pytest.raises(InvalidInputError, match="close the loop"):
        ClosedSplineCurveJoint.from_twists(np.eye(4), z)
    z[:, 3] = 0.0
    j = ClosedSplineCurveJoint.from_twists(np.eye(4), z)
    np.testing.assert_array_equal(ClosedSplineCurveJoint.from_dict(j.to_dict()).transforms(
        [0.3, 2.9]), j.transforms([0.3, 2.9]))
    assert np.allclose(j.loop_twists, z)


@pytest.mark.parametrize("frames, order, message", [
    (rose_frames(8)[:3], 4, "at least 4 control frames"),
    (np.zeros((5, 4)), 4, "shape"),
    (rose_frames(8), 1, "order"),
])
def test_bad_input_raises(frames, order, message):
    with pytest.raises(InvalidInputError, match=message):
        ClosedSplineCurveJoint(frames, order)
