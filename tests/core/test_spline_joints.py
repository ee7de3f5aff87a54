"""Spline joints (seed 000 section 5, Appendix B): the product-of-exponentials engine, the
cubic-B-spline curve joint on SE(3) and the n-DOF tensor-product spline joint.

Every S and dS/dq is checked against central differences of G and S; continuity across knots,
extrapolation, batching, serialisation and input validation are checked too."""

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.linalg import expm

from core import bspline as bs
from core.errors import InvalidInputError
from core.joints import poe
from core.joints.base import Joint
from core.joints.spline_curve import SplineCurveJoint, frame_knots_to_full, natural_knots
from core.joints.spline_surface import DEFAULT_BASIS_TWISTS, SplineJoint
from core.lie import se3

from _fd import FD_STEP, fd_hessian, fd_jacobian

FD_TOL = 1e-7  # relative to max(1, |value|); central differences leave ~1e-10 here
EPS = np.finfo(float).eps
#: one product of exponentials on two code paths or by two formulas (Python floats or numpy
#: ufuncs, libm's or SIMD sin and cos, other operation orders): a few ulps of each of O(30)
#: roundings, relative to the size of the values
PATHS_TOL = 64 * EPS


def assert_derivatives(joint, q, tol=FD_TOL, h=FD_STEP):
    G, S, H = joint.evaluate(q)
    S_fd, H_fd = fd_jacobian(joint, q, h), fd_hessian(joint, q, h)
    np.testing.assert_allclose(S, S_fd, atol=tol * max(1.0, np.abs(S).max()))
    np.testing.assert_allclose(H, H_fd, atol=10 * tol * max(1.0, np.abs(H).max()))
    assert np.all(np.isfinite(G)) and np.all(np.isfinite(S)) and np.all(np.isfinite(H))
    # interface methods agree with evaluate
    np.testing.assert_array_equal(joint.transform(q), G)
    np.testing.assert_array_equal(joint.jacobian(q), S)
    np.testing.assert_array_equal(joint.hessian(q), H)
    assert S.shape == (6, joint.nv) and H.shape == (joint.nv, 6, joint.nv)


def random_twist(rng, angle=None, scale=1.0):
    w = rng.normal(size=3)
    w /= np.linalg.norm(w)
    w *= rng.uniform(0.1, 2.0) if angle is None else angle
    return np.concatenate([w, scale * rng.normal(size=3)])


def chain_frames(twists, G0=None):
    F = [np.eye(4) if G0 is None else G0]
    for z in twists:
        F.append(F[-1] @ se3.exp(z))
    return np.array(F)


def knots_interior(joint):
    k = joint.order
    return joint.knots[k - 1:joint.knots.size - k + 1]


# --- the engine ---------------------------------------------------------------------------

SPECIAL_ANGLES = [0.0, 1e-12, 1e-8, 1e-3, 0.1, 0.5 - 1e-12, 0.5 + 1e-12, 0.5, 1.35, 1.36,
                  np.pi - 1e-9, np.pi, np.pi + 1e-7, 2 * np.pi - 1e-6, 2 * np.pi, 7.0]


@pytest.mark.parametrize("angle", SPECIAL_ANGLES)
def test_twist_table_exp_and_adjoint_match_se3(angle):
    rng = np.random.default_rng(7)
    g = np.array([random_twist(rng, angle), random_twist(rng, angle)])
    g[1, 3:] = 0.0  # pure rotation
    tab = poe.TwistTable(np.vstack([g, [[0, 0, 0, 0.3, -0.2, 1.0]]]))  # and pure translation
    # b theta crosses the series switch (0.5) for several of these
    for b in [0.0, 1e-9, 0.37, -1.3, 1.0, 0.999999999999, 1.000000000001]:
        for k in range(3):
            s = np.array(poe.exp_scalars(b, tab.theta[k]))
            # each is a product of powers of b and one factor from sin or cos (libm's or SIMD
            # kernels): a few ulps relative
            np.testing.assert_allclose(s, poe.exp_scalars_batch(b, tab.theta[k]),
                                       rtol=PATHS_TOL, atol=0)
            r = s @ tab.K[k]
            E = r[:16].reshape(4, 4) + np.eye(4)
            A = r[16:].reshape(6, 6) + np.eye(6)
            # the batched structure-of-arrays product (its own factors and Rodrigues' formula)
            G = poe.transforms(np.eye(4)[:3, :, None], poe.soa_twists(tab.g[k:k + 1])[..., None],
                               np.array([[b]]))[0]
            np.testing.assert_allclose(G, E, rtol=0, atol=PATHS_TOL * np.abs(E).max())
            np.testing.assert_allclose(E, se3.exp(tab.g[k] * b), atol=1e-12)
            np.testing.assert_allclose(E, expm(se3.hat(tab.g[k] * b)), atol=1e-11)
            np.testing.assert_allclose(A, se3.Ad(se3.exp(-tab.g[k] * b)), atol=1e-11)
            np.testing.assert_allclose(tab.adg[k], se3.ad(tab.g[k]))


@pytest.mark.parametrize("n, m", [(1, 1), (1, 3), (2, 4), (3, 6)])
def test_poe_engine_vs_finite_differences(n, m):
    """G = H prod exp(g_k phi_k(q)) with quadratic phi: S and dS/dq of Appendix B vs FD.

    A wrong ad term in eq. 30 (the previous mu instead of the updated one) fails here."""
    rng = np.random.default_rng(10 * n + m)
    g = np.array([random_twist(rng) for _ in range(m)])
    tab = poe.TwistTable(g)
    H = se3.exp(random_twist(rng))
    a0 = rng.normal(size=m)
    a1 = rng.normal(size=(m, n))
    a2 = rng.normal(size=(m, n, n))
    a2 = a2 + np.swapaxes(a2, 1, 2)

    class Quadratic(Joint):
        nq = n

        def evaluate(self, q):
            q = self.check_q(q)
            phi = a0 + a1 @ q + 0.5 * np.einsum("kij,i,j->k", a2, q, q)
            dphi = a1 + np.einsum("kij,j->ki", a2, q)
            return poe.evaluate(H, tab.g, tab.theta, tab.adg, tab.K, phi, dphi, a2)

    joint = Quadratic()
    for q in [np.zeros(n), np.full(n, 1e-8), rng.normal(size=n)]:
        assert_derivatives(joint, q)


def test_appendix_b_hessian_needs_the_updated_mu():
    """The seeds README trap, shown numerically: eq. 30 with ad of the *previous* mu_{k-1}
    (as printed) disagrees with central differences; with the updated mu_k (ours) it agrees."""
    rng = np.random.default_rng(42)
    m, n = 3, 2
    g = np.array([random_twist(rng) for _ in range(m)])
    a1 = rng.normal(size=(m, n))

    def G_of(q):
        G = np.eye(4)
        for k in range(m):
            G = G @ se3.exp(g[k] * (a1[k] @ q))
        return G

    def S_H(q, updated):
        mu = np.zeros((6, n))
        dmu = np.zeros((n, 6, n))
        for k in range(m):
            Ai = se3.Ad(se3.exp(-g[k] * (a1[k] @ q)))
            new = np.outer(g[k], a1[k]) + Ai @ mu
            use = new if updated else mu
            dmu = np.stack([Ai @ dmu[j] + (se3.ad(use.T) @ g[k]).T * a1[k, j]
                            for j in range(n)])
            mu = new
        return mu, dmu

    q = rng.normal(size=n)
    h = 1e-6
    H_fd = np.stack([(S_H(q + e, True)[0] - S_H(q - e, True)[0]) / (2 * h)
                     for e in np.eye(n) * h])
    S_fd = np.stack([se3.vee(se3.inv(G_of(q)) @ (G_of(q + e) - G_of(q - e)) / (2 * h))
                     for e in np.eye(n) * h], axis=1)
    S, H_right = S_H(q, True)
    _, H_wrong = S_H(q, False)
    np.testing.assert_allclose(S, S_fd, atol=1e-8)
    np.testing.assert_allclose(H_right, H_fd, atol=1e-7)
    assert np.abs(H_wrong - H_fd).max() > 1e-2
    # and the engine agrees with the right one
    tab = poe.TwistTable(g)
    _, S_e, H_e = poe.evaluate(np.eye(4), tab.g, tab.theta, tab.adg, tab.K, a1 @ q, a1,
                               np.zeros((m, n, n)))
    np.testing.assert_allclose(S_e, S, atol=1e-12)
    np.testing.assert_allclose(H_e, H_right, atol=1e-12)


# --- the spline curve joint ------------------------------------------------------------------

def make_curve(seed=0, m=8, order=4, natural=True, length_scale=0.5, spread=0.3):
    rng = np.random.default_rng(seed)
    z0 = np.array([0.4, -0.2, 0.3, 0.1, 0.05, 0.3])
    twists = z0 + spread * rng.normal(size=(m, 6))
    F = chain_frames(twists, se3.exp(random_twist(rng)))
    knots = natural_knots(F, length_scale, order) if natural else None
    return SplineCurveJoint(F, knots, order)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10 ** 6), st.floats(-0.2, 1.2), st.sampled_from([2, 3, 4, 5]))
def test_curve_derivatives_random(seed, frac, order):
    joint = make_curve(seed, order=order, natural=seed % 2 == 0)
    lo, hi = joint.lower[0], joint.upper[0]
    q = lo + frac * (hi - lo)
    knots = joint.knots
    if order < 4 and np.min(np.abs(knots - q)) < 1e-4:
        q += 3e-4  # low orders are not C2 at knots: difference away from them
    if min(abs(q - lo), abs(q - hi)) < 1e-4:
        q += 3e-4 if q < 0.5 * (lo + hi) else -3e-4  # dS/dq jumps to 0 at the range ends
    assert_derivatives(joint, np.array([q]))


def test_curve_derivatives_at_and_near_knots_and_tiny_offsets():
    joint = make_curve(3)
    lo = joint.lower[0]
    for t in knots_interior(joint)[1:-1]:  # the range ends are tested with extrapolation
        for off in [1e-3, -1e-3]:
            assert_derivatives(joint, np.array([t + off]))
        # at a knot d2S/dq2 jumps, so the central difference of S is off by ~h |jump| / 4:
        # use a smaller step there
        for off in [0.0, 1e-8, -1e-8]:
            assert_derivatives(joint, np.array([t + off]), tol=1e-6, h=1e-7)
    assert_derivatives(joint, np.array([lo + 1e-5]))
    assert_derivatives(joint, np.array([1e-5]))


@pytest.mark.parametrize("angle", [1e-9, 1e-4, np.pi - 1e-6, np.pi, np.pi + 1e-3,
                                   2 * np.pi - 1e-3, 2 * np.pi - 1e-7, 2 * np.pi + 0.3])
def test_curve_derivatives_with_control_twists_near_singular_angles(angle):
    rng = np.random.default_rng(int(angle * 1000))
    twists = np.array([random_twist(rng, angle, 0.3) for _ in range(6)])
    joint = SplineCurveJoint.from_twists(np.eye(4), twists, order=4)
    for q in np.linspace(joint.lower[0], joint.upper[0], 7) + 1e-3:
        assert_derivatives(joint, np.array([q]))
    # the frames are reproduced exactly at the end of the chain of control twists
    np.testing.assert_allclose(joint.control_frames[-1], chain_frames(twists)[-1], atol=1e-12)


def test_curve_cubic_fast_path_equals_the_spline_joint_engine():
    """The cubic curve's unrolled recursion equals the general n-DOF spline joint (the
    product-of-exponentials engine over all m twists) built as the same curve: eq. 21 is
    eq. 25 with basis twists z_j, offset G_0 and phi_j = Bc_j, whose B-spline coefficients
    in the basis B_l are 1 for l >= j and 0 below. The tolerance is a few hundred ulps of
    the values: both sides chain up to m exponentials and adjoints of O(1) entries."""
    joint = make_curve(5)
    z = joint.control_twists
    m = z.shape[0]
    coefficients = np.array([[1.0 if l >= j else 0.0 for l in range(m + 1)]
                             for j in range(1, m + 1)])
    engine = SplineJoint([joint.knots], coefficients, order=4, basis_twists=z,
                         offset=joint.control_frames[0])
    for q in np.linspace(joint.lower[0], joint.upper[0], 23):
        for a, b in zip(joint.evaluate(q), engine.evaluate(np.array([q]))):
            np.testing.assert_allclose(a, b, rtol=0,
                                       atol=500 * np.finfo(float).eps * max(1.0, abs(b).max()))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_curve_is_c2_across_every_knot(seed):
    joint = make_curve(seed, m=9)
    for t in knots_interior(joint)[1:-1]:
        left = joint.evaluate(np.nextafter(t, -np.inf) - 1e-12)
        right = joint.evaluate(t)
        for a, b in zip(left, right):
            np.testing.assert_allclose(a, b, atol=1e-8)


def test_curve_matches_eq21_full_product():
    """eq. 24 (k - 1 exponentials) equals eq. 21 (all m exponentials of the cumulative basis)."""
    joint = make_curve(4, m=7)
    qs = np.linspace(joint.lower[0], joint.upper[0], 31)
    cum = bs.cumulative_basis(joint.knots, joint.order, qs)[0]
    for i, q in enumerate(qs):
        G = joint.control_frames[0].copy()
        for j, z in enumerate(joint.control_twists, start=1):
            G = G @ se3.exp(z * cum[i, j])
        np.testing.assert_allclose(joint.transform(q), G, atol=1e-12)


def test_curve_passes_near_control_frames_and_uniform_default_range():
    F = chain_frames([[0, 0, 0.1, 1, 0, 0]] * 5)
    joint = SplineCurveJoint(F)  # uniform knots
    assert joint.lower[0] == 0.0 and joint.upper[0] == 5 + 2 - 4
    # a straight screw line: the cubic B-spline reproduces it and S is the constant twist
    for q in np.linspace(0, 3, 7):
        np.testing.assert_allclose(joint.jacobian(q)[:, 0], [0, 0, 0.1, 1, 0, 0], atol=1e-12)
        np.testing.assert_allclose(joint.hessian(q), 0.0, atol=1e-12)


def test_curve_clamped_knots_interpolate_end_frames_and_repeated_knot_lowers_continuity():
    joint = make_curve(11, m=7)
    F = joint.control_frames
    clamped = SplineCurveJoint(F, bs.clamped_knots(8, 4, 0.0, 2.0))
    np.testing.assert_allclose(clamped.transform(0.0), F[0], atol=1e-12)
    np.testing.assert_allclose(clamped.transform(2.0), F[-1], atol=1e-12)
    for q in [1e-3, 0.77, 2.0 - 1e-3]:
        assert_derivatives(clamped, np.array([q]))
    # a double interior knot: still C1 there (G and S continuous), derivatives right elsewhere
    t = bs.uniform_knots(8, 4)
    t[5] = t[4]
    t = np.sort(t)
    double = SplineCurveJoint(F, t)
    for x, y in zip(double.evaluate(t[4] - 1e-11)[:2], double.evaluate(t[4])[:2]):
        np.testing.assert_allclose(x, y, atol=1e-8)
    assert_derivatives(double, np.array([t[4] + 0.3]))


def test_curve_attributes_are_read_only():
    joint = make_curve(12)
    with pytest.raises(ValueError):
        joint.knots[0] = 5.0
    with pytest.raises(ValueError):
        joint.control_frames[0, 0, 0] = 2.0


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10 ** 6), st.floats(0.05, 2.0))
def test_natural_parameterization_keeps_s_away_from_zero(seed, length_scale):
    # A curve that does not turn back on itself: every control twist lies within half of
    # |z0| of z0 in the metric of natural_knots, so any two make an angle of at most 60 deg.
    # (A control polygon that reverses can legitimately slow the spline to nearly zero.)
    rng = np.random.default_rng(seed)
    scale = np.array([length_scale] * 3 + [1.0] * 3)
    z0 = np.array([0.4, -0.2, 0.3, 0.1, 0.05, 0.3])
    noise = rng.normal(size=(10, 6))
    cap = 0.5 * np.linalg.norm(scale * z0)
    noise *= np.minimum(1.0, cap / np.linalg.norm(scale * noise, axis=1))[:, None]
    F = chain_frames(z0 + noise, se3.exp(random_twist(rng)))
    joint = SplineCurveJoint(F, natural_knots(F, length_scale, 4), 4)
    qs = np.linspace(joint.lower[0], joint.upper[0], 301)
    speeds = np.array([np.linalg.norm(scale * joint.jacobian(q)[:, 0]) for q in qs])
    # natural knots make each control twist unit-length per unit q, and S(q) is close to a
    # combination of them (eq. 34) with weights summing to one; within a 30-degree cone
    # around z0 it cannot cancel. Over 1,500 seeded cases (5 length scales) the extremes were
    # 0.57 and 1.29 (the adjoint terms and unequal knot spans move it off 1)
    assert speeds.min() > 0.4 and speeds.max() < 1.6


def test_natural_knots_convention():
    F = chain_frames([[0, 0, 0, 1, 0, 0], [0, 0, 0, 2, 0, 0], [0, 0, np.pi / 2, 0, 0, 0],
                      [0, 0, 0, 0, 0, 3]])
    t = natural_knots(F, length_scale=2.0)
    # distances 1, 2, 2 * pi/2 = pi, 3; frame j sits at knot index j + 2; range starts at 0
    s = np.array([0, 1, 3, 3 + np.pi, 6 + np.pi])
    np.testing.assert_allclose(t[2:7] - t[2], s, atol=1e-12)
    assert t.size == 5 + 4 and t[3] == 0.0
    np.testing.assert_allclose(frame_knots_to_full(s, 4)[2:7], s)


@pytest.mark.parametrize("order", [2, 4, 5])
def test_curve_batched_equals_looped_including_outside(order):
    joint = make_curve(6, order=order)
    lo, hi = joint.lower[0], joint.upper[0]
    qs = np.concatenate([np.linspace(lo - 2, hi + 2, 97), joint.knots, [lo, hi]])
    Gs = joint.transforms(qs)
    Gs2 = joint.transforms(qs[:, None])
    loop = np.array([joint.transform(q) for q in qs])
    np.testing.assert_allclose(Gs, loop, atol=1e-12)
    np.testing.assert_array_equal(Gs, Gs2)
    assert joint.transforms(np.zeros((0, 1))).shape == (0, 4, 4)


def test_curve_extrapolation_is_c1_constant_twist_and_finite():
    joint = make_curve(8)
    for end in (joint.lower[0], joint.upper[0]):
        sign = -1.0 if end == joint.lower[0] else 1.0
        G0, S0, _ = joint.evaluate(end)
        inside = joint.evaluate(end - sign * 1e-9)
        outside = joint.evaluate(end + sign * 1e-9)
        np.testing.assert_allclose(outside[0], inside[0], atol=1e-8)
        np.testing.assert_allclose(outside[1], inside[1], atol=1e-7)
        for d in [1e-9, 0.3, 5.0, 1e4, 1e14]:
            q = end + sign * d
            G, S, H = joint.evaluate(q)
            assert np.all(np.isfinite(G)) and np.all(np.isfinite(S))
            # outside, the end's twist; S0 from the spline product at the end
            np.testing.assert_allclose(S, S0, atol=PATHS_TOL * np.abs(S0).max())
            np.testing.assert_array_equal(H, 0.0)
            np.testing.assert_allclose(G, G0 @ se3.exp(S0[:, 0] * (q - end)), atol=1e-9 * (1 + d))
            if 1e-5 <= d < 100:  # central differences must not straddle the range end
                assert_derivatives(joint, np.array([q]))


def test_curve_serialisation_round_trip_keeps_big_turns():
    twists = np.array([[0, 0, 4.0, 0.1, 0, 0]] * 5)  # 4 rad per segment (> pi)
    joint = SplineCurveJoint.from_twists(np.eye(4), twists, order=4)
    data = json.loads(json.dumps(joint.to_dict()))
    back = SplineCurveJoint.from_dict(data)
    qs = np.linspace(-1, 4, 11)
    np.testing.assert_allclose(back.transforms(qs), joint.transforms(qs), atol=1e-13)
    np.testing.assert_allclose(back.control_twists, twists)
    plain = SplineCurveJoint.from_dict({k: v for k, v in data.items() if k != "control_twists"})
    assert plain.control_twists[0, 2] < np.pi  # rebuilt from frames: the short way round
    edited = dict(data, control_frames=(np.array(data["control_frames"]) * 1.0).tolist())
    edited["control_frames"][2][0][3] += 0.1
    with pytest.raises(InvalidInputError, match="disagree"):
        SplineCurveJoint.from_dict(edited)


def test_curve_interface_basics():
    joint = make_curve(9)
    assert joint.nq == joint.nv == 1
    np.testing.assert_array_equal(joint.neutral(), [0.0])
    assert isinstance(joint, Joint)
    G1 = joint.transform(0.4)
    np.testing.assert_array_equal(G1, joint.transform(np.array([0.4])))
    np.testing.assert_array_equal(G1, joint.transform(np.float64(0.4)))
    assert "SplineCurveJoint" in repr(joint)


def _frames(m, seed=0):
    return make_curve(seed, m=m - 1, natural=False).control_frames


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda: SplineCurveJoint(_frames(3), order=4), "at least 4 control frames"),
        (lambda: SplineCurveJoint(_frames(6), knots=np.arange(10.0)[::-1]), "non-decreasing"),
        (lambda: SplineCurveJoint(_frames(6), knots=np.arange(9.0)), "m \\+ 1 \\+ order = 10"),
        (lambda: SplineCurveJoint(_frames(6), knots=[0, 1, 2, 3, np.nan, 5, 6, 7, 8, 9]),
         "NaN or inf"),
        (lambda: SplineCurveJoint(_frames(6)[:, :3, :]), "\\(m \\+ 1, 4, 4\\)"),
        (lambda: SplineCurveJoint(np.eye(4)), "\\(m \\+ 1, 4, 4\\)"),
        (lambda: SplineCurveJoint(_frames(6) * np.array([1, 1, 1.1, 1])[:, None]), "rotation"),
        (lambda: SplineCurveJoint(np.where(np.eye(4) > 0, np.inf, 0) + _frames(6)),
         "NaN or inf"),
        (lambda: SplineCurveJoint(_frames(6), order=1), "order must be an integer >= 2"),
        (lambda: SplineCurveJoint.from_twists(np.eye(4), np.zeros((2, 6))), "at least 3"),
        (lambda: SplineCurveJoint.from_twists(np.eye(4), np.zeros((5, 5))), "6"),
        (lambda: natural_knots(np.array([np.eye(4)] * 5)), "coincide"),
        (lambda: natural_knots(_frames(6), length_scale=0.0), "length_scale"),
        (lambda: make_curve(1).transform(np.nan), "NaN or inf"),
        (lambda: make_curve(1).transform(np.array([0.1, 0.2])), "shape"),
        (lambda: make_curve(1).transforms(np.array([0.1, np.inf])), "NaN or inf"),
        (lambda: SplineCurveJoint.from_dict({"type": "Revolute"}), "SplineCurveJoint"),
        (lambda: make_curve(1).evaluate(2e15), "diverged"),
        (lambda: make_curve(1).transforms([0.1, -3e15]), "diverged"),
    ],
)
def test_curve_bad_input_raises_with_message(make, fragment):
    with pytest.raises(InvalidInputError, match=fragment):
        make()


# --- the n-DOF spline joint -------------------------------------------------------------------

def make_surface(n, seed=0, orders=None, twists=None, scale=0.4):
    rng = np.random.default_rng(seed)
    orders = orders or [4, 4, 4][:n]
    # the domains contain 0 (not a knot) in their interior
    knots = [bs.uniform_knots(6 + a, orders[a], start=-1.0, spacing=0.53 + 0.1 * a)
             for a in range(n)]
    m = 6 if twists is None else len(twists)
    shape = (m,) + tuple(len(t) - k for t, k in zip(knots, orders))
    C = scale * rng.normal(size=shape)
    return SplineJoint(knots, C, orders, twists, se3.exp(random_twist(rng)))


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_surface_derivatives_vs_fd(n, seed):
    joint = make_surface(n, seed)
    rng = np.random.default_rng(seed + 100)
    lo, hi = joint.lower, joint.upper
    # interior, tiny values, near the box (FD steps must not straddle its faces, where
    # dS/dq jumps), outside the box
    qs = [rng.uniform(lo, hi), np.full(n, 1e-8), lo + 1e-5, hi - 1e-5, lo - 0.4, hi + 0.3]
    if n >= 2:
        qs.append(np.where(np.arange(n) == 0, hi[0] + 0.5, 0.47 * lo + 0.53 * hi))  # a face
        qs.append(np.where(np.arange(n) % 2 == 0, lo - 0.2, hi + 0.7))  # a corner
    for q in qs:
        assert_derivatives(joint, q)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 3), st.integers(0, 10 ** 6), st.floats(-0.3, 1.3))
def test_surface_derivatives_random(n, seed, frac):
    joint = make_surface(n, seed, orders=[4, 5, 4][:n])
    rng = np.random.default_rng(seed)
    q = joint.lower + (frac + 0.1 * rng.uniform(-1, 1, n)) * (joint.upper - joint.lower)
    near = [np.min(np.abs(np.concatenate([[lo, hi], t]) - x))
            for x, lo, hi, t in zip(q, joint.lower, joint.upper, joint.knots)]
    q = q + np.where(np.array(near) < 1e-4, 3e-4, 0.0)  # keep FD steps off knots and faces
    assert_derivatives(joint, q)


def test_surface_with_general_twists_and_big_angles():
    rng = np.random.default_rng(3)
    twists = np.array([random_twist(rng, a, 0.5) for a in (1e-9, np.pi, 2 * np.pi - 1e-4)])
    joint = make_surface(2, 4, twists=twists, scale=3.0)  # phi up to several radians
    for q in [np.zeros(2), np.array([-0.7, 0.9]), np.array([0.1, 1e-8])]:
        assert_derivatives(joint, q)


def test_surface_default_twists_are_translations_then_rotations():
    np.testing.assert_array_equal(DEFAULT_BASIS_TWISTS[:3, 3:], np.eye(3))
    np.testing.assert_array_equal(DEFAULT_BASIS_TWISTS[3:, :3], np.eye(3))
    joint = make_surface(1, 5)
    q = np.array([-0.2])
    phi = joint.functions(q)[0]
    R = se3.exp(np.r_[phi[3], 0, 0, 0, 0, 0]) @ se3.exp(np.r_[0, phi[4], 0, 0, 0, 0]) @ \
        se3.exp(np.r_[0, 0, phi[5], 0, 0, 0])
    expect = joint.offset @ se3.from_rp(np.eye(3), phi[:3]) @ R
    np.testing.assert_allclose(joint.transform(q), expect, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_surface_c1_across_box_and_c2_inside(n):
    joint = make_surface(n, 2)
    lo, hi = joint.lower, joint.upper
    mid = 0.5 * (lo + hi)
    for a in range(n):
        for end, sign in ((lo[a], -1), (hi[a], 1)):
            q_in = mid.copy()
            q_in[a] = end - sign * 1e-10
            q_out = mid.copy()
            q_out[a] = end + sign * 1e-10
            A, B = joint.evaluate(q_in), joint.evaluate(q_out)
            np.testing.assert_allclose(A[0], B[0], atol=1e-8)
            np.testing.assert_allclose(A[1], B[1], atol=1e-8)
        # C2 across an interior knot of axis a
        t = joint.knots[a][joint.orders[a]]
        q_l, q_r = mid.copy(), mid.copy()
        q_l[a], q_r[a] = t - 1e-11, t
        for x, y in zip(joint.evaluate(q_l), joint.evaluate(q_r)):
            np.testing.assert_allclose(x, y, atol=1e-8)
    for far in (hi + 1e3, lo - 1e14):
        assert all(np.all(np.isfinite(x)) for x in joint.evaluate(far))
        assert np.all(np.isfinite(joint.transforms(far[None, :])))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_surface_batched_equals_looped_and_basis_gives_functions(n):
    joint = make_surface(n, 6)
    rng = np.random.default_rng(n)
    qs = rng.uniform(joint.lower - 0.6, joint.upper + 0.6, size=(40, n))
    Gs = joint.transforms(qs)
    np.testing.assert_allclose(Gs, np.array([joint.transform(q) for q in qs]), atol=1e-12)
    Cf = joint.coefficients.reshape(joint.coefficients.shape[0], -1)
    for q in qs[:8]:
        W, dW, d2W = joint.basis(q)
        phi, dphi, d2phi = joint.functions(q)
        np.testing.assert_allclose(Cf @ W, phi, atol=1e-13)
        np.testing.assert_allclose(np.einsum("mc,ac->ma", Cf, dW), dphi, atol=1e-12)
        np.testing.assert_allclose(np.einsum("mc,abc->mab", Cf, d2W), d2phi, atol=1e-11)
    inside = rng.uniform(joint.lower, joint.upper, size=(5, n))
    W_ref = bs.tensor_basis(joint.knots, joint.orders, inside)[0]
    np.testing.assert_allclose(np.array([joint.basis(q)[0] for q in inside]), W_ref,
                               atol=PATHS_TOL)   # basis values <= 1


def test_surface_serialisation_and_with_coefficients():
    joint = make_surface(2, 7)
    back = SplineJoint.from_dict(json.loads(json.dumps(joint.to_dict())))
    q = np.array([0.1, -0.3])
    for a, b in zip(joint.evaluate(q), back.evaluate(q)):
        # the constructor runs again on the stored parameters
        np.testing.assert_allclose(a, b, atol=PATHS_TOL * max(1.0, np.abs(b).max()))
    one = SplineJoint(bs.uniform_knots(5, 4).tolist(), np.zeros((6, 5)))  # a plain list, n = 1
    assert one.nq == 1
    zero = joint.with_coefficients(np.zeros_like(joint.coefficients))
    np.testing.assert_array_equal(zero.transform(q), joint.offset)   # exp(0) = I exactly
    assert zero.nq == 2 and joint.neutral().shape == (2,)


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda: SplineJoint([bs.uniform_knots(5, 4)], np.zeros((6, 4))), "shape \\(6, 5\\)"),
        (lambda: SplineJoint([np.arange(9.0)[::-1]], np.zeros((6, 5))), "non-decreasing"),
        (lambda: SplineJoint([bs.uniform_knots(5, 4)] * 4, np.zeros((6,) + (5,) * 4)),
         "n = 1, 2 or 3"),
        (lambda: SplineJoint([bs.uniform_knots(5, 4)], np.full((6, 5), np.nan)), "NaN or inf"),
        (lambda: SplineJoint([bs.uniform_knots(5, 4)], np.zeros((6, 5)), order=[4, 4]),
         "orders"),
        (lambda: SplineJoint([np.arange(5.0)], np.zeros((6, 1))), "at least 8"),
        (lambda: SplineJoint([bs.uniform_knots(5, 4)], np.zeros((2, 5)),
                             basis_twists=np.zeros((2, 5))), "6"),
        (lambda: SplineJoint([bs.uniform_knots(5, 4)], np.zeros((6, 5)),
                             offset=2 * np.eye(4)), "rotation|last row"),
        (lambda: make_surface(2).transform([0.1]), "shape"),
        (lambda: make_surface(2).transform([0.1, np.nan]), "NaN or inf"),
        (lambda: make_surface(2).transforms(np.zeros((3, 3))), "shape"),
        (lambda: SplineJoint.from_dict({"type": "SplineJoint"}), "lacks"),
        (lambda: make_surface(2).evaluate([0.1, 1e16]), "diverged"),
        (lambda: make_surface(3).transforms(np.full((2, 3), -1e16)), "diverged"),
    ],
)
def test_surface_bad_input_raises_with_message(make, fragment):
    with pytest.raises(InvalidInputError, match=fragment):
        make()
