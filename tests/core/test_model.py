"""Model building, validation, compiled structure, and the batched joint evaluation of the
kinematics against each joint's own evaluate()."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from core import dynamics as dyn
from core import kinematics as kin
from core.errors import InvalidInputError, NonFiniteError
from core.joints.elliptic import Elliptic
from core.joints.lower_pairs import Fixed, Helical, Prismatic, Revolute, Universal
from core.joints.spherical import Free, Spherical
from core.joints.spline_curve import FIT_TOL, CubicSplineFamily, SplineCurveJoint
from core.lie import se3
from core.model import Model, spatial_inertia

EPS = np.finfo(float).eps


def random_frames(rng, n=7, turn=0.3):
    out, T = np.empty((n, 4, 4)), np.eye(4)
    for k in range(n):
        T = T @ se3.exp(np.r_[rng.normal(size=3) * turn, rng.normal(size=3) * 0.1])
        out[k] = T
    return out


def mixed_tree(rng):
    joints = [Revolute(rng.normal(size=3)), SplineCurveJoint(random_frames(rng)),
              Spherical(), Prismatic(rng.normal(size=3)), Helical(rng.normal(size=3), 0.1),
              SplineCurveJoint(random_frames(rng), order=3), Elliptic(0.3, 0.2),
              Universal(), Fixed(), SplineCurveJoint(random_frames(rng)), Free()]
    parents = [-1, 0, 1, 1, 0, 4, 2, 6, 7, 3, 8]
    m = Model()
    for i, (j, p) in enumerate(zip(joints, parents)):
        m.add_body(f"b{i}", p, j, se3.exp(rng.normal(size=6) * 0.5), 1.0 + i,
                   rng.normal(size=3) * 0.1, np.diag([0.02, 0.03, 0.04]))
    return m


def test_spatial_inertia_matches_eq8():
    m, c, I = 2.0, np.array([0.1, -0.2, 0.3]), np.diag([0.1, 0.2, 0.25])
    J = spatial_inertia(m, c, I)
    # kinetic energy of a body moving with twist [w; v] about its origin
    w, v = np.array([0.3, -1.0, 0.5]), np.array([1.0, 2.0, -0.5])
    vc = v + np.cross(w, c)
    T = 0.5 * m * vc @ vc + 0.5 * w @ I @ w
    np.testing.assert_allclose(0.5 * np.r_[w, v] @ J @ np.r_[w, v], T, rtol=16 * EPS)  # ~40 ops
    np.testing.assert_allclose(J, J.T)


def test_compiled_structure():
    rng = np.random.default_rng(0)
    m = mixed_tree(rng).compile()
    assert m.nbodies == 11 and m.nq == m.nv == sum(j.nq for j in m.joints)
    for i, p in enumerate(m.parents):
        anc = {i}
        while p >= 0:
            anc.add(int(p))
            p = m.parents[p]
        assert set(np.nonzero(m.ancestry[i])[0].tolist()) == anc
    assert m.neutral().shape == (m.nq,)
    assert m.lower.shape == m.upper.shape == (m.nq,)
    # each joint evaluated by its family; the order-3 spline, elliptic and universal joints
    # one by one through evaluate(), the free joint too (its family is a GenericFamily with
    # a kernel kind)
    assert {type(f).__name__: f.bodies.tolist() for f in m.families} == {
        "ScrewFamily": [0, 3, 4], "CubicSplineFamily": [1, 9], "SphericalFamily": [2],
        "FixedFamily": [8], "GenericFamily": [5, 6, 7], "FreeFamily": [10]}
    assert [f.multi for f in m.multi_families] == [True, True, True]
    d = m.create_data()
    assert d.M.shape == (m.nv, m.nv)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batched_kinematics_match_sequential_joint_evaluation(seed):
    rng = np.random.default_rng(seed)
    m = mixed_tree(rng)
    d = m.create_data()
    q = m.neutral() + rng.normal(size=m.nq) * 0.4
    for i in spline_bodies(m):                            # one spline joint outside its range
        q[m.q_start[i]] = m.joints[i].upper[0] + 0.3 if seed == 1 else q[m.q_start[i]] + 1.0
    v = rng.normal(size=m.nv)
    T = kin.forward_kinematics(m, d, q, v)
    poses = []
    for i, j in enumerate(m.joints):
        s = slice(m.q_start[i], m.q_start[i] + j.nq)
        # G from the joint's own batched transforms(); S and H from its scalar evaluate()
        # (exp scalars in closed form; the batched cubic path uses their power series in b)
        tol = 1e-12
        _, S, H = j.evaluate(q[s])
        if isinstance(j, SplineCurveJoint):        # and the batched S is consistent with H
            np.testing.assert_allclose(fd_body_hessian(m, q, s), H, atol=1e-7)
        parent = np.eye(4) if m.parents[i] < 0 else poses[m.parents[i]]
        poses.append(parent @ m.placements[i] @ j.transforms(q[s][None])[0])
        np.testing.assert_allclose(T[i], poses[-1], atol=1e-12)
        np.testing.assert_allclose(d.S_world[s], (se3.Ad(poses[-1]) @ S).T, atol=tol)
        bias_joint = se3.Ad(poses[-1]) @ np.einsum("jak,j,k->a", H, v[s], v[s])
        Ub = (d.S_world[s].T @ v[s])
        expected = bias_joint + se3.ad(d.V[i]) @ Ub
        np.testing.assert_allclose(d.bias[i], expected, atol=tol)


def spline_bodies(m):
    """The bodies evaluated from per-span tables."""
    return np.concatenate([f.bodies for f in m.families if isinstance(f, CubicSplineFamily)])


def knots_in_range(joint):
    """The distinct knots of a spline curve joint on its coordinate range."""
    t = joint.knots
    return np.unique(t[(t >= joint.lower[0]) & (t <= joint.upper[0])]).tolist()


def fd_body_hessian(m, q, s, h=1e-6):
    """dS/dq of the joint owning the coordinates ``s`` from the batched kinematics."""
    d = m.create_data()
    cols = []
    for k in range(s.start, s.stop):
        e = np.zeros(m.nq)
        e[k] = h
        kin.forward_kinematics(m, d, q + e)
        Sp = d.S_body[s].T.copy()
        kin.forward_kinematics(m, d, q - e)
        cols.append((Sp - d.S_body[s].T) / (2 * h))
    return np.array(cols)


def _spline_model(rng, step, n=1):
    m = Model()
    for i in range(n):
        m.add_body(f"s{i}", i - 1, SplineCurveJoint(random_frames(rng, 9, step)),
                   se3.exp(rng.normal(size=6) * 0.5), 1.0, [0.0, 0.0, -0.1], np.eye(3) * 0.01)
    return m


@pytest.mark.parametrize("step", [0.05, 0.3, 1.0, 1.7])
def test_spline_span_tables_reach_round_off(step):
    """The batched path evaluates cubic spline joints from per-span polynomials fitted to the
    exact recursion at model compile: their verified error is at the level of round-off for
    control twists turning by little or by nearly pi, and G, S, dS/dq match the joint's own
    evaluate() everywhere on the knot range, knots and ends included."""
    rng = np.random.default_rng(11)
    m = _spline_model(rng, step).compile()
    j = m.joints[0]
    family, = m.families
    assert isinstance(family, CubicSplineFamily)
    assert family.fit_error <= FIT_TOL, (family.degree, family.fit_error)
    d = m.create_data()
    lo, hi = j.lower[0], j.upper[0]
    for x in np.r_[np.linspace(lo, hi, 101), knots_in_range(j)]:
        kin.forward_kinematics(m, d, np.array([x]))
        G, S, H = j.evaluate(np.array([x]))
        scale = max(1.0, np.abs(H).max())
        np.testing.assert_allclose(d.oMi[0], m.placements[0] @ G, rtol=0, atol=1e-13)
        np.testing.assert_allclose(d.SH[0, 0], S[:, 0], rtol=0, atol=1e-13 * scale)
        np.testing.assert_allclose(d.SH[0, 1], H[0, :, 0], rtol=0, atol=1e-13 * scale)


@given(st.floats(0.0, 1.0), st.sampled_from([0.2, 1.2]))
def test_spline_span_tables_property(t, step):
    """Property: for any coordinate on the knot range the tabulated joint equals evaluate()."""
    m = _spline_model(np.random.default_rng(12), step)
    d = m.create_data()
    j = m.joints[0]
    x = j.lower[0] + t * (j.upper[0] - j.lower[0])
    kin.forward_kinematics(m, d, np.array([x]))
    G, S, H = j.evaluate(np.array([x]))
    got = np.r_[d.oMi[0].ravel(), d.SH[0].ravel()]
    want = np.r_[(m.placements[0] @ G).ravel(), S[:, 0], H[0, :, 0]]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * max(1.0, np.abs(want).max()))


def test_adjoint_and_velocity_product_tables():
    """The constant tables of core.kinematics: [p; 1] (x) R -> [Ad_T, Ad_{T^-1}^T], and
    [V, s] (x) [U, h, m] -> [ad_V U + s h, ad_V^T m]."""
    rng = np.random.default_rng(3)
    for _ in range(5):
        T = se3.exp(rng.normal(size=6) * 2.0)
        X = T[:, 3, None, None] * T[None, :3, :3]
        AdAdT = (X.reshape(36) @ kin.AD_TABLE).reshape(2, 6, 6)
        # each entry is a sum of at most three products of pose entries (|p| up to ~10)
        tol = 8 * EPS * max(1.0, np.abs(T).max())
        np.testing.assert_allclose(AdAdT[0], se3.Ad(T), rtol=0, atol=tol)
        np.testing.assert_allclose(AdAdT[1], se3.Ad(se3.inv(T)).T, rtol=0, atol=tol)
        V, U, h, mom = rng.normal(size=(4, 6))
        s = rng.normal()
        out = np.outer(np.r_[V, s], np.r_[U, h, mom]).reshape(126) @ kin.BILINEAR_TABLE
        # sums of at most seven products of O(1) normal samples
        tol = 16 * EPS * np.abs(np.r_[V, s]).max() * np.abs(np.r_[U, h, mom]).max()
        np.testing.assert_allclose(out[:6], se3.ad(V) @ U + s * h, rtol=0, atol=tol)
        np.testing.assert_allclose(out[6:], se3.ad(V).T @ mom, rtol=0, atol=tol)


def test_spline_span_cache_follows_the_coordinates():
    """The batched cubic spline path keeps the span rows of the last call and looks spans up
    again only when a coordinate leaves its span: a sequence of coordinates crossing knots,
    landing exactly on them, leaving the knot range and coming back gives what a fresh Data
    gives, and NaN still raises."""
    rng = np.random.default_rng(4)
    m = Model()
    for i in range(3):
        m.add_body(f"s{i}", i - 1, SplineCurveJoint(random_frames(rng)),
                   se3.exp(rng.normal(size=6) * 0.3), 1.0, [0.0, 0.0, -0.1], np.eye(3) * 0.01)
    d = m.create_data()
    knots = knots_in_range(m.joints[0])
    lo, hi = m.joints[0].lower[0], m.joints[0].upper[0]
    v = rng.normal(size=3)
    for x in [0.3, 0.35, knots[2], knots[2] - 1e-13, knots[3] + 0.1, lo - 0.5, lo, 1.2, hi,
              hi + 1e-9, 0.9, hi - 1e-14, knots[1]]:
        q = np.array([x, 0.5 * (lo + hi), knots[1] + 1e-3 * x])
        kin.forward_kinematics(m, d, q, v)
        fresh = m.create_data()
        kin.forward_kinematics(m, fresh, q, v)
        for name in ("oMi", "S_world", "bias", "V"):
            np.testing.assert_array_equal(getattr(d, name), getattr(fresh, name), err_msg=name)
    with pytest.raises(NonFiniteError):
        dyn.aba(m, d, np.array([0.5, np.nan, 0.5]), v, np.zeros(3), None, check=False)


def test_as_given_mass_properties_are_accepted_only_when_asked():
    """physical=False takes OpenSim's mass properties as they are (a point mass, a measured
    tensor with a negative principal moment) but still refuses negative mass, asymmetry and
    non-finite values."""
    m = Model()
    point = m.add_body("rod", -1, Revolute(), None, 1.0, com=(0.0, -1.0, 0.0),
                       inertia=np.zeros((3, 3)), physical=False)
    odd = np.diag([1.0, 1.0, -1e-6])
    m.add_body("radius", point, Revolute(), None, 0.2, inertia=odd, physical=False)
    m.add_body("frame", point, Fixed(), None, 0.0, physical=False)
    M = dyn.crba(m, m.create_data(), np.array([0.3, 0.2]))
    assert M[0, 0] > 0.0
    for bad in ({"mass": -1.0}, {"inertia": [[1, 0.1, 0], [0, 1, 0], [0, 0, 1]]},
                {"com": (0.0, np.inf, 0.0)}):
        with pytest.raises(InvalidInputError):
            m.add_body("bad", -1, Revolute(), None, **{"mass": 1.0, **bad}, physical=False)
    with pytest.raises(InvalidInputError, match="positive definite"):
        m.add_body("strict", -1, Revolute(), None, 0.2, inertia=odd)


def test_validation_messages():
    m = Model()
    for mass in (0.0, -1.0):
        with pytest.raises(InvalidInputError, match="mass"):
            m.add_body("a", -1, Revolute(), None, mass)
    with pytest.raises(InvalidInputError, match="triangle"):
        m.add_body("a", -1, Revolute(), None, 1.0, inertia=np.diag([1.0, 1.0, 3.0]))
    for moment in (-0.5, 0.0):
        with pytest.raises(InvalidInputError, match="positive definite"):
            m.add_body("a", -1, Revolute(), None, 1.0, inertia=np.diag([1.0, 1.0, moment]))
    with pytest.raises(InvalidInputError, match="symmetric"):
        m.add_body("a", -1, Revolute(), None, 1.0, inertia=[[1, 0.1, 0], [0, 1, 0], [0, 0, 1]])
    with pytest.raises(InvalidInputError, match="add the parent body first"):
        m.add_body("a", 0, Revolute())
    with pytest.raises(InvalidInputError, match="finite"):
        m.add_body("a", -1, Revolute(), None, 1.0, com=[0, np.nan, 0])
    with pytest.raises(InvalidInputError, match="placement"):
        m.add_body("a", -1, Revolute(), np.diag([2.0, 1.0, 1.0, 1.0]))
    with pytest.raises(InvalidInputError, match="Joint"):
        m.add_body("a", -1, "revolute")
    with pytest.raises(InvalidInputError, match="no bodies"):
        m.create_data()
    m.add_body("a", -1, Revolute())
    with pytest.raises(InvalidInputError, match="already"):
        m.add_body("a", -1, Revolute())
    with pytest.raises(InvalidInputError, match="no body named"):
        m.body_index("b")
    with pytest.raises(InvalidInputError, match=">= 0"):
        m.add_joint_spring("a", -1.0)
    with pytest.raises(InvalidInputError, match="different"):
        m.add_point_spring("a", [0, 0, 0], "a", [0, 0, 0], 1.0)
    with pytest.raises(InvalidInputError, match="gravity"):
        Model(gravity=(0.0, np.inf, 0.0))
    d = m.create_data()
    with pytest.raises(InvalidInputError, match="shape"):
        kin.forward_kinematics(m, d, [0.0, 0.0])
    m2 = Model()
    m2.add_body("a", -1, Revolute())
    with pytest.raises(InvalidInputError, match="create_data"):
        kin.forward_kinematics(m2, d, [0.0])
    with pytest.raises(InvalidInputError, match="with a"):
        kin.forward_kinematics(m, d, [0.0], None, [0.0])
    m.add_body("b", 0, Revolute())
    with pytest.raises(InvalidInputError, match="create_data"):
        kin.forward_kinematics(m, d, [0.0, 0.0])


def test_every_joint_family_in_one_tree_is_dynamically_consistent():
    """Fixed, universal, elliptic, free, quadratic and cubic spline joints together: the
    dense and Appendix A forward dynamics agree and rnea inverts them."""
    from core import dynamics as dyn
    rng = np.random.default_rng(3)
    m = mixed_tree(rng)
    d = m.create_data()
    q = m.neutral() + rng.normal(size=m.nq) * 0.3
    v, tau = rng.normal(size=m.nv), rng.normal(size=m.nv)
    a = dyn.aba(m, d, q, v, tau, method="dense").copy()
    np.testing.assert_allclose(dyn.aba(m, d, q, v, tau, method="recursive"), a, atol=1e-10)
    np.testing.assert_allclose(dyn.rnea(m, d, q, v, a), tau, atol=1e-10)


def test_default_inertia_is_the_documented_one():
    """Without an inertia a body gets ``1e-3 * mass * I`` about its centre of mass."""
    m = Model()
    m.add_body("a", -1, Revolute(), mass=2.0, com=(0.1, 0.0, 0.0))
    m.compile()
    expected = spatial_inertia(2.0, [0.1, 0.0, 0.0], 2e-3 * np.eye(3))
    np.testing.assert_array_equal(m.inertias[0], expected)
    with pytest.raises(InvalidInputError, match="mass"):
        Model().add_body("b", -1, Revolute(), mass=-1.0)
