"""Dynamics (seed 000 eqs. 7-16, Appendix A) against Pinocchio and against itself.

Pinocchio's spatial vectors are [linear; angular]; ours are [angular; linear]. Joint-space
quantities need no conversion for revolute/prismatic joints. For the spherical joint
Pinocchio uses a quaternion and the body angular velocity w = J_b(r) r_dot; our exponential
coordinate rates map through J_b (torques: tau_ours = J_b^T tau_pin; accelerations:
w_dot = J_b r_ddot + (dJ_b/dt) r_dot).
"""

import numpy as np
import pytest

try:
    import pinocchio as pin
except ImportError:                      # Pinocchio is test-only: without it the comparisons skip
    pin = None

from core import backend  # noqa: E402
from core import dynamics as dyn  # noqa: E402
from core import expcoords  # noqa: E402
from core import kinematics as kin  # noqa: E402
from core.errors import InvalidInputError  # noqa: E402
from core.joints.elliptic import Elliptic  # noqa: E402
from core.joints.lower_pairs import Prismatic, Revolute  # noqa: E402
from core.joints.spline_curve import CubicSplineFamily, SplineCurveJoint  # noqa: E402
from core.joints.spherical import Free, Spherical  # noqa: E402
from core.lie import se3, so3  # noqa: E402
from core.model import Model  # noqa: E402

REL = 1e-9
#: one formula reached by two call sequences (the same products, possibly other BLAS
#: blockings): a few dozen ulps of the values
SAME_FORMULA_TOL = 64 * np.finfo(float).eps
needs_pin = pytest.mark.skipif(pin is None, reason="Pinocchio (PyPI pin) is not installed")
GRAVITY = np.array([0.3, -0.2, -9.81])


def rand_rot(rng):
    return so3.exp(rng.normal(size=3))


def rand_inertia(rng):
    """A physical rotational inertia: principal moments from second moments of mass."""
    s = rng.uniform(0.01, 0.1, 3)
    R = rand_rot(rng)
    return R @ np.diag([s[1] + s[2], s[0] + s[2], s[0] + s[1]]) @ R.T


def build_pair(rng, kinds, parents, gravity=GRAVITY):
    """Our Model and an equivalent pinocchio.Model (None without Pinocchio).
    kinds: 'R', 'P' or 'S' per body."""
    m = Model(gravity=gravity)
    pm = None if pin is None else pin.Model()
    if pm is not None:
        pm.gravity.linear = np.asarray(gravity, dtype=float)
    jids = [0]
    for i, (k, p) in enumerate(zip(kinds, parents)):
        H = se3.from_rp(rand_rot(rng), rng.normal(size=3) * 0.3)
        ax = rng.normal(size=3)
        ax /= np.linalg.norm(ax)
        mass, com, inertia = rng.uniform(0.5, 2.0), rng.normal(size=3) * 0.1, rand_inertia(rng)
        j = Revolute(ax) if k == "R" else Prismatic(ax) if k == "P" else Spherical()
        m.add_body(f"b{i}", p, j, H, mass, com, inertia)
        if pm is None:
            continue
        pj = (pin.JointModelRevoluteUnaligned(*ax) if k == "R" else
              pin.JointModelPrismaticUnaligned(*ax) if k == "P" else pin.JointModelSpherical())
        jid = pm.addJoint(jids[p + 1], pj, pin.SE3(H[:3, :3], H[:3, 3]), f"j{i}")
        pm.appendBodyToJoint(jid, pin.Inertia(mass, com, inertia), pin.SE3.Identity())
        jids.append(jid)
    return m, pm


class PinMap:
    """Maps our (q, q_dot, q_ddot, tau) to Pinocchio's and back, joint by joint."""

    def __init__(self, model, pmodel):
        self.m, self.pm = model, pmodel

    def _blocks(self):
        for i, j in enumerate(self.m.joints):
            jm = self.pm.joints[i + 1]
            yield (j, slice(self.m.q_start[i], self.m.q_start[i] + j.nq),
                   slice(jm.idx_q, jm.idx_q + jm.nq), slice(jm.idx_v, jm.idx_v + jm.nv))

    def q(self, q):
        out = np.zeros(self.pm.nq)
        for j, s, sq, _ in self._blocks():
            if isinstance(j, Spherical):
                out[sq] = pin.Quaternion(so3.exp(q[s])).coeffs()
            else:
                out[sq] = q[s]
        return out

    def _jb(self, r, rdot):
        Jb = expcoords.J_b(r)
        dJ = expcoords.dJ_b_dr(r)                    # (3, 3, 3): dJ[j] = dJ_b/dr_j
        return Jb, np.einsum("jab,j->ab", dJ, rdot)

    def v(self, q, v):
        out = np.zeros(self.pm.nv)
        for j, s, _, sv in self._blocks():
            out[sv] = expcoords.J_b(q[s]) @ v[s] if isinstance(j, Spherical) else v[s]
        return out

    def a(self, q, v, a):
        out = np.zeros(self.pm.nv)
        for j, s, _, sv in self._blocks():
            if isinstance(j, Spherical):
                Jb, Jdot = self._jb(q[s], v[s])
                out[sv] = Jb @ a[s] + Jdot @ v[s]
            else:
                out[sv] = a[s]
        return out

    def a_back(self, q, v, apin):
        out = np.zeros(self.m.nv)
        for j, s, _, sv in self._blocks():
            if isinstance(j, Spherical):
                Jb, Jdot = self._jb(q[s], v[s])
                out[s] = np.linalg.solve(Jb, apin[sv] - Jdot @ v[s])
            else:
                out[s] = apin[sv]
        return out

    def tau(self, q, tau):
        """Our generalized force -> Pinocchio's (dual of the body angular velocity)."""
        out = np.zeros(self.pm.nv)
        for j, s, _, sv in self._blocks():
            out[sv] = np.linalg.solve(expcoords.J_b(q[s]).T, tau[s]) \
                if isinstance(j, Spherical) else tau[s]
        return out

    def tau_back(self, q, tpin):
        out = np.zeros(self.m.nv)
        for j, s, _, sv in self._blocks():
            out[s] = expcoords.J_b(q[s]).T @ tpin[sv] if isinstance(j, Spherical) else tpin[sv]
        return out


def random_state(rng, model):
    q = rng.normal(size=model.nq)
    for i, j in enumerate(model.joints):
        if isinstance(j, Spherical):           # stay inside |r| < pi, away from 2 pi
            s = slice(model.q_start[i], model.q_start[i] + 3)
            q[s] *= rng.uniform(0.1, 2.5) / np.linalg.norm(q[s])
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv)


def assert_rel(x, y, rel=REL):
    x, y = np.asarray(x), np.asarray(y)
    scale = max(np.abs(y).max(), 1.0)
    assert np.abs(x - y).max() <= rel * scale, (np.abs(x - y).max(), scale)


def random_tree(rng, n, kinds):
    """Parents in depth-first order (Pinocchio's crba needs contiguous subtrees)."""
    parents = [-1]
    for i in range(1, n):
        parents.append(int(rng.integers(max(0, i - 3), i)))
    # depth-first renumbering is guaranteed when each parent is the previous body or an
    # ancestor of it; enforce it by construction
    for i in range(1, n):
        anc = []
        p = i - 1
        while p >= 0:
            anc.append(p)
            p = parents[p]
        if parents[i] not in anc:
            parents[i] = i - 1
    return [str(rng.choice(list(kinds))) for _ in range(n)], parents


CASES = [("chain R", "R", False), ("chain P", "RP", False), ("chain S", "S", False),
         ("chain mixed", "RPS", False), ("tree R", "R", True), ("tree mixed", "RPS", True)]


@needs_pin
@pytest.mark.parametrize("name,kinds,tree", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("seed", [0, 1])
def test_rnea_aba_crba_match_pinocchio(name, kinds, tree, seed):
    rng = np.random.default_rng(seed + 17 * len(name))
    n = 7
    if tree:
        ks, parents = random_tree(rng, n, kinds)
    else:
        ks, parents = [kinds[i % len(kinds)] for i in range(n)], list(range(-1, n - 1))
    m, pm = build_pair(rng, ks, parents)
    d, pd = m.create_data(), pm.createData()
    mp = PinMap(m, pm)
    q, v, a, tau = random_state(rng, m)
    qp, vp = mp.q(q), mp.v(q, v)
    # inverse dynamics
    tp = pin.rnea(pm, pd, qp, vp, mp.a(q, v, a))
    assert_rel(dyn.rnea(m, d, q, v, a), mp.tau_back(q, tp))
    # forward dynamics, both formulations
    ap = pin.aba(pm, pd, qp, vp, mp.tau(q, tau))
    expected = mp.a_back(q, v, ap)
    assert_rel(dyn.aba(m, d, q, v, tau, method="recursive"), expected)
    assert_rel(dyn.aba(m, d, q, v, tau, method="dense"), expected)
    # mass matrix: for revolute/prismatic joints M is Pinocchio's
    M = dyn.crba(m, d, q)
    # blocks of one body's coordinates are computed on both sides of the diagonal
    np.testing.assert_allclose(M, M.T, rtol=0, atol=SAME_FORMULA_TOL * np.abs(M).max())
    if "S" not in ks:
        Mp = pin.crba(pm, pd, qp)
        assert_rel(M, np.triu(Mp) + np.triu(Mp, 1).T)


@needs_pin
def test_external_wrenches_match_pinocchio():
    rng = np.random.default_rng(3)
    m, pm = build_pair(rng, list("RPRRPR"), [-1, 0, 1, 2, 2, 4])
    d, pd = m.create_data(), pm.createData()
    q, v, a, tau = random_state(rng, m)
    fext = rng.normal(size=(m.nbodies, 6))               # [moment; force] in body frames
    fpin = [pin.Force.Zero()] + [pin.Force(f[3:], f[:3]) for f in fext]
    assert_rel(dyn.rnea(m, d, q, v, a, fext=fext), pin.rnea(pm, pd, q, v, a, fpin))
    assert_rel(dyn.aba(m, d, q, v, tau, fext=fext), pin.aba(pm, pd, q, v, tau, fpin))
    assert_rel(dyn.aba(m, d, q, v, tau, fext=fext, method="recursive"),
               pin.aba(pm, pd, q, v, tau, fpin))


@needs_pin
def test_kinematics_and_jacobians_match_pinocchio():
    rng = np.random.default_rng(5)
    m, pm = build_pair(rng, list("RPSRS"), [-1, 0, 1, 2, 1])
    d, pd = m.create_data(), pm.createData()
    mp = PinMap(m, pm)
    q, v, a, _ = random_state(rng, m)
    T = kin.forward_kinematics(m, d, q, v, a)
    pin.forwardKinematics(pm, pd, mp.q(q), mp.v(q, v), mp.a(q, v, a))
    for i in range(m.nbodies):
        np.testing.assert_allclose(T[i], pd.oMi[i + 1].homogeneous, atol=1e-12)
        vb = kin.body_velocity(m, d, i)                  # body frame [w; v]
        np.testing.assert_allclose(vb, np.r_[pd.v[i + 1].angular, pd.v[i + 1].linear],
                                   atol=1e-11)
        ab = d.Adinv[i] @ d.A[i]                         # body acceleration (eq. 14)
        np.testing.assert_allclose(ab, np.r_[pd.a[i + 1].angular, pd.a[i + 1].linear],
                                   atol=1e-10)
        J = kin.body_jacobian(m, d, i)
        np.testing.assert_allclose(J @ v, vb, atol=1e-11)
        np.testing.assert_allclose(kin.body_jacobian(m, d, i, "world") @ v, d.V[i],
                                   atol=1e-11)


def test_eq14_bias_sign_by_finite_differences():
    """d/dt of the body velocity along a trajectory equals eq. 14 with +ad_v S q_dot."""
    rng = np.random.default_rng(11)
    m, _ = build_pair(rng, list("SRS"), [-1, 0, 1])
    d = m.create_data()
    q, v, a, _ = random_state(rng, m)
    h = 1e-6
    kin.forward_kinematics(m, d, q, v, a)
    ab = np.einsum("nab,nb->na", d.Adinv, d.A)
    vel = []
    for s in (-1, 1):
        qs, vs = q + s * h * v + 0.5 * h * h * a, v + s * h * a
        kin.forward_kinematics(m, d, qs, vs)
        vel.append(np.einsum("nab,nb->na", d.Adinv, d.V))
    np.testing.assert_allclose((vel[1] - vel[0]) / (2 * h), ab, atol=1e-6)


def test_crba_and_nle_reproduce_rnea():
    rng = np.random.default_rng(2)
    m, _ = build_pair(rng, list("RSPSR"), [-1, 0, 1, 1, 3])
    d = m.create_data()
    q, v, a, _ = random_state(rng, m)
    M = dyn.crba(m, d, q).copy()
    h = dyn.nonlinear_effects(m, d, q, v).copy()
    np.testing.assert_allclose(M @ a + h, dyn.rnea(m, d, q, v, a), rtol=1e-11, atol=1e-11)
    assert np.all(np.linalg.eigvalsh(M) > 0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spline_joint_trees_are_self_consistent(seed):
    """Spline joints (no Pinocchio counterpart): rnea(aba(tau)) == tau and
    crba^-1 (tau - nle) equals the Appendix A recursion, on a branching tree mixing cubic and
    quadratic spline curve joints with lower pairs and a ball joint."""
    rng = np.random.default_rng(seed)
    m = Model(gravity=GRAVITY)
    joints = [_spline_joint(), Revolute(rng.normal(size=3)), _spline_joint(),
              SplineCurveJoint(_spline_joint().control_frames, order=3), Spherical(),
              _spline_joint()]
    for i, (j, p) in enumerate(zip(joints, [-1, 0, 1, 0, 3, 4])):
        m.add_body(f"b{i}", p, j, se3.from_rp(rand_rot(rng), rng.normal(size=3) * 0.3),
                   rng.uniform(0.5, 2.0), rng.normal(size=3) * 0.1, rand_inertia(rng))
    d = m.create_data()
    q, v, _, tau = random_state(rng, m)
    for i, j in enumerate(m.joints):
        if isinstance(j, SplineCurveJoint):          # inside the knot range
            q[m.q_start[i]] = rng.uniform(j.lower[0], j.upper[0])
    ddq = dyn.aba(m, d, q, v, tau, method="recursive").copy()
    np.testing.assert_allclose(dyn.rnea(m, d, q, v, ddq), tau, rtol=1e-10, atol=1e-10)
    M = dyn.crba(m, d, q).copy()
    h = dyn.nonlinear_effects(m, d, q, v).copy()
    np.testing.assert_allclose(np.linalg.solve(M, tau - h), ddq, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dyn.aba(m, d, q, v, tau), ddq, rtol=1e-10, atol=1e-10)


def test_springs_are_consistent_and_conservative():
    """rnea(aba(tau)) == tau with joint and point springs; energy balance of the springs."""
    rng = np.random.default_rng(8)
    m, _ = build_pair(rng, list("RSR"), [-1, 0, 1])
    m.add_joint_spring("b0", 3.0, 0.5, rest=0.2)
    m.add_joint_spring(1, [1.0, 2.0, 3.0], 0.1)
    m.add_point_spring("b2", [0.1, 0.0, 0.0], -1, [0.5, 0.5, 0.0], 20.0, 0.7, 0.1)
    m.add_point_spring("b1", [0.0, 0.1, 0.0], "b2", [0.0, 0.0, 0.1], 5.0, 0.2, 0.0)
    d = m.create_data()
    q, v, _, tau = random_state(rng, m)
    for method in ("dense", "recursive"):
        ddq = dyn.aba(m, d, q, v, tau, method=method).copy()
        np.testing.assert_allclose(dyn.rnea(m, d, q, v, ddq), tau, rtol=1e-10, atol=1e-10)
    # conservative part: with v = 0, the spring generalized forces are -dU/dq
    z = np.zeros(m.nv)
    h = dyn.nonlinear_effects(m, d, q, z)
    eps = 1e-6
    grad = np.array([(dyn.potential_energy(m, d, q + eps * e) -
                      dyn.potential_energy(m, d, q - eps * e)) / (2 * eps) for e in np.eye(m.nv)])
    np.testing.assert_allclose(h, grad, rtol=1e-6, atol=1e-6)


def test_energy_rate_is_power_of_torques():
    """dE/dt = tau . q_dot for a passive model without damping (kinetic + gravity)."""
    rng = np.random.default_rng(4)
    m, _ = build_pair(rng, list("RSPR"), [-1, 0, 1, 1])
    d = m.create_data()
    q, v, _, tau = random_state(rng, m)
    ddq = dyn.aba(m, d, q, v, tau).copy()
    h = 1e-6
    E = [dyn.mechanical_energy(m, d, q + s * h * v + 0.5 * h * h * ddq, v + s * h * ddq)
         for s in (-1, 1)]
    np.testing.assert_allclose((E[1] - E[0]) / (2 * h), tau @ v, rtol=1e-6, atol=1e-6)


@needs_pin
def test_kinetic_energy_and_momentum():
    rng = np.random.default_rng(6)
    m, pm = build_pair(rng, list("RSP"), [-1, 0, 1])
    d, pd = m.create_data(), pm.createData()
    mp = PinMap(m, pm)
    q, v, _, _ = random_state(rng, m)
    M = dyn.crba(m, d, q).copy()
    np.testing.assert_allclose(dyn.kinetic_energy(m, d, q, v), 0.5 * v @ M @ v, rtol=1e-12)
    lin, ang = dyn.momentum(m, d, q, v)
    pin.computeCentroidalMomentum(pm, pd, mp.q(q), mp.v(q, v))
    c = pd.com[0]
    np.testing.assert_allclose(lin, pd.hg.linear, atol=1e-12)
    # Pinocchio's angular momentum is about the centre of mass; ours about the origin
    np.testing.assert_allclose(ang, pd.hg.angular + np.cross(c, pd.hg.linear), atol=1e-12)


def test_free_floating_tree_conserves_momentum():
    rng = np.random.default_rng(9)
    m = Model(gravity=(0.0, 0.0, 0.0))
    m.add_body("base", -1, Free(), None, 2.0, [0.0, 0.1, 0.0], rand_inertia(rng))
    for i, p in enumerate([0, 1, 0, 3]):
        m.add_body(f"l{i}", p, Spherical() if i % 2 else Revolute(rng.normal(size=3)),
                   se3.from_rp(rand_rot(rng), rng.normal(size=3) * 0.3), 1.0,
                   rng.normal(size=3) * 0.1, rand_inertia(rng))
    d = m.create_data()
    q, v, _, _ = random_state(rng, m)
    q[:3] *= 0.3 / np.linalg.norm(q[:3])
    h0 = np.concatenate(dyn.momentum(m, d, q, v))
    # RK4 with zero torque: momentum stays constant up to the integration error
    dt = 1e-3
    for _ in range(200):
        def f(x):
            return np.concatenate([x[m.nq:], dyn.aba(m, d, x[:m.nq], x[m.nq:], np.zeros(m.nv))])
        x = np.concatenate([q, v])
        k1 = f(x)
        k2 = f(x + 0.5 * dt * k1)
        k3 = f(x + 0.5 * dt * k2)
        k4 = f(x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        q, v = x[:m.nq], x[m.nq:]
    h1 = np.concatenate(dyn.momentum(m, d, q, v))
    np.testing.assert_allclose(h1, h0, atol=1e-8 * max(1.0, np.abs(h0).max()))


def _spline_joint():
    rng = np.random.default_rng(1)
    T, out = np.eye(4), []
    for _ in range(6):
        T = T @ se3.exp(rng.normal(size=6) * 0.3)
        out.append(T)
    return SplineCurveJoint(np.array(out))


@pytest.mark.parametrize("x", [-0.4, 0.0, 0.7, 1.0, 2.0 - 1e-12, 2.0, 3.0, 3.5])
def test_single_spline_fast_path_every_span_and_outside(x):
    """One body on a cubic spline joint takes aba's float fast path (placement folded into
    the span table); it matches the dense tree algorithm and forward kinematics on every
    span, at knots, at the range ends and outside the range (general path)."""
    rng = np.random.default_rng(5)
    m = Model(gravity=GRAVITY)
    m.add_body("b", -1, _spline_joint(), se3.exp(rng.normal(size=6)), 1.5, [0.1, -0.2, 0.05],
               rand_inertia(rng))
    m.add_joint_spring("b", 2.0, 0.3)
    d = m.create_data()
    assert isinstance(m.families[0], CubicSplineFamily)
    q, v, tau = np.array([x]), rng.normal(size=1), rng.normal(size=1)
    fext = rng.normal(size=(1, 6))
    for f in (None, fext):
        fast = dyn.aba(m, d, q, v, tau, f).copy()
        T = d.oMi[0].copy()
        np.testing.assert_allclose(fast, dyn.aba(m, d, q, v, tau, f, method="dense"),
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(T, kin.forward_kinematics(m, d, q)[0], atol=1e-12)
    with pytest.raises(InvalidInputError, match="NaN"):
        dyn.aba(m, d, np.array([np.nan]), v, tau)
    with pytest.raises(InvalidInputError, match="shape"):
        dyn.aba(m, d, q, np.zeros(2), tau)


def one_body_reference(m, q, v, tau, fext):
    """Forward dynamics of a one-body model from the joint's own evaluate() (the exact
    recursion): eqs. 14-16 in the body frame, ``S^T J S q_ddot = tau + passive - S^T (J (c +
    a_g) - ad*_u J u - f_ext)`` with ``u = S q_dot``, ``c = q_dot^T dS q_dot`` and ``a_g = [0;
    -R^T g]``."""
    G, S, H = m.joints[0].evaluate(q)
    R = (m.placements[0] @ G)[:3, :3]
    J = m.inertias[0]
    u = S @ v
    a0 = np.einsum("jak,j,k->a", H, v, v)
    a0[3:] -= R.T @ m.gravity
    w = J @ a0 - se3.ad(u).T @ (J @ u)
    if fext is not None:
        w -= fext[0]
    return np.linalg.solve(S.T @ J @ S, tau + dyn.passive_forces(m, q, v) - S.T @ w)


@pytest.mark.parametrize("joint", [Revolute((0.3, 1.0, -0.2)), Spherical(), Free(),
                                   Elliptic(0.3, 0.2, (0.2, 0.1, 1.0)), _spline_joint()],
                         ids=["revolute", "spherical", "free", "elliptic", "spline"])
def test_body_method_matches_the_joint_recursion_and_the_tree_algorithms(joint):
    """aba's one-body method (the joint family's batched evaluation, in floats for one
    coordinate) agrees with eqs. 14-16 written from the joint's own evaluate() and with the
    dense and recursive tree algorithms, and "auto" picks it."""
    rng = np.random.default_rng(3)
    m = Model(gravity=GRAVITY)
    m.add_body("b", -1, joint, se3.exp(rng.normal(size=6)), 1.5, [0.1, -0.2, 0.05],
               rand_inertia(rng))
    m.add_joint_spring("b", 2.0, 0.3)
    d = m.create_data()
    for _ in range(5):
        q, v, _, tau = random_state(rng, m)
        if isinstance(joint, SplineCurveJoint):
            q[:] = rng.uniform(joint.lower[0] - 0.2, joint.upper[0] + 0.2)
        for f in (None, rng.normal(size=(1, 6))):
            body = dyn.aba(m, d, q, v, tau, f, method="body").copy()
            if backend.active() == "numpy":           # "auto" is the body method there
                np.testing.assert_array_equal(dyn.aba(m, d, q, v, tau, f), body)
            else:                                     # and the compiled recursion on numba
                np.testing.assert_allclose(dyn.aba(m, d, q, v, tau, f), body, rtol=1e-11,
                                           atol=1e-11)
            np.testing.assert_allclose(body, one_body_reference(m, q, v, tau, f),
                                       rtol=1e-11, atol=1e-11)
            for method in ("dense", "recursive"):
                np.testing.assert_allclose(body, dyn.aba(m, d, q, v, tau, f, method=method),
                                           rtol=1e-11, atol=1e-11)


def test_single_spline_float_path_matches_the_joint_recursion():
    """The one-body path of a cubic spline joint (its span tables, then floats) agrees with
    eqs. 14-16 written from the joint's own evaluate() to 1e-12 on many q in every span, at
    every knot, at the range ends and just inside them, with and without fext, with
    springs, after a gravity change, with and without argument checks; outside the range
    the joint's extrapolation gives the dense algorithm's answer."""
    rng = np.random.default_rng(11)
    m = Model(gravity=GRAVITY)
    m.add_body("b", -1, _spline_joint(), se3.exp(rng.normal(size=6)), 1.5, [0.1, -0.2, 0.05],
               rand_inertia(rng))
    m.add_joint_spring("b", 2.0, 0.3, rest=0.4)
    d = m.create_data()
    j = m.joints[0]
    lo, hi = float(j.lower[0]), float(j.upper[0])
    xs = np.concatenate([rng.uniform(lo, hi, 60), np.unique(j.knots), [lo, hi, lo + 1e-13,
                         hi - 1e-13], np.linspace(lo, hi, 41)])
    for k, x in enumerate(xs):
        if k == 50:
            m.gravity = (1.0, -2.0, 9.0)
        q, v, tau = np.array([x]), rng.normal(size=1) * 3, rng.normal(size=1)
        for f in (None, rng.normal(size=(1, 6))):
            fast = dyn.aba(m, d, q, v, tau, f).copy()
            T = d.oMi[0].copy()
            trusted = dyn.aba(m, d, q, v, tau, f, check=False).copy()
            np.testing.assert_allclose(fast, one_body_reference(m, q, v, tau, f), rtol=1e-12,
                                       atol=1e-12)
            np.testing.assert_array_equal(trusted, fast)
            np.testing.assert_allclose(T, m.placements[0] @ j.transform(q), rtol=0,
                                       atol=1e-12)
    for x in (lo - 0.3, hi + 0.3):
        q, v, tau = np.array([x]), np.array([0.7]), np.array([0.2])
        np.testing.assert_allclose(dyn.aba(m, d, q, v, tau),
                                   dyn.aba(m, d, q, v, tau, method="dense"), rtol=1e-9)


def test_crba_and_nle_match_the_separate_calls():
    rng = np.random.default_rng(21)
    m = Model(gravity=GRAVITY)
    m.add_body("a", -1, _spline_joint(), None, 1.2, [0.1, 0.0, 0.2], rand_inertia(rng))
    m.add_body("b", 0, Spherical(), se3.exp(rng.normal(size=6)), 0.7, [0.0, 0.1, 0.0],
               rand_inertia(rng))
    m.add_body("c", 0, Revolute((0.0, 0.0, 1.0)), se3.exp(rng.normal(size=6)), 0.4)
    m.add_joint_spring("c", 3.0, 0.2)
    d = m.create_data()
    q, v, _, _ = random_state(rng, m)
    q[0] = 1.1
    fext = rng.normal(size=(3, 6))
    M, h = dyn.crba_and_nle(m, d, q, v, fext)
    M, h = M.copy(), h.copy()
    np.testing.assert_allclose(M, dyn.crba(m, d, q), rtol=SAME_FORMULA_TOL,
                               atol=SAME_FORMULA_TOL)
    np.testing.assert_allclose(h, dyn.nonlinear_effects(m, d, q, v, fext),
                               rtol=SAME_FORMULA_TOL, atol=SAME_FORMULA_TOL)


def test_input_validation():
    """The dynamics' own argument checks (the model builder's are in test_model)."""
    m = Model()
    m.add_body("a", -1, Revolute())
    d = m.create_data()
    with pytest.raises(InvalidInputError, match="shape"):
        dyn.aba(m, d, [0.0, 1.0], [0.0], [0.0])
    with pytest.raises(InvalidInputError, match="NaN"):
        dyn.rnea(m, d, [np.nan], [0.0], [0.0])
    with pytest.raises(InvalidInputError, match="method"):
        dyn.aba(m, d, [0.0], [0.0], [0.0], method="fast")
    with pytest.raises(InvalidInputError, match="fext"):
        dyn.aba(m, d, [0.0], [0.0], [0.0], fext=np.zeros((2, 6)))


@pytest.mark.parametrize("backend_name", ["numpy", "numba"])
def test_recursive_aba_long_bent_ball_chain_falls_freely(backend_name):
    """A free-floating zig-zag chain of 100 bodies on ball joints, bent at every joint and
    at rest, falls as one: the root accelerates at g and no joint moves. The articulated
    inertias are symmetrized at every level; their rounding asymmetry otherwise grew tenfold
    every two levels. Tolerance: EPS times the bodies times the articulated inertias'
    condition (lever arms of up to 10 m over 0.1 m radii of gyration: 1e4)."""
    if backend_name == "numba" and not backend.available():
        pytest.skip("numba is not installed")
    previous = backend.use(backend_name)
    try:
        m = Model()
        inertia = np.diag([1e-3, 1e-3, 2e-4])
        m.add_body("root", -1, Free(), mass=1.0, com=(0.0, 0.0, 0.05), inertia=inertia)
        for k in range(1, 100):
            P = se3.from_rp(so3.exp(np.array([0.5 * (-1) ** k, 0.0, 0.0])), np.array([0, 0, 0.1]))
            m.add_body(f"b{k}", k - 1, Spherical(), P, mass=1.0, com=(0.0, 0.0, 0.05),
                       inertia=inertia)
        q = np.zeros(m.nq)
        q[:3] = (0.3, 0.2, 0.1)
        q[6::3] = 0.4
        a = dyn.aba(m, m.create_data(), q, np.zeros(m.nv), np.zeros(m.nv), method="recursive")
        tol = np.finfo(float).eps * m.nbodies * 1e4 * 9.81
        np.testing.assert_allclose(a[3:6], m.gravity, atol=tol)
        assert np.abs(a[:3]).max() <= tol and np.abs(a[6:]).max() <= tol
    finally:
        backend.use(previous)
