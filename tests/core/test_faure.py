"""Seed 004 (Faure): linearized displacement constraints, fast assembly, Stoermer stepping."""

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.lie import se3, so3
from core.maximal.faure import (JOINT_TYPES, Assembly, FaureJoint, bar_between_disks,
                                four_bar)
from core.maximal.solver import apply_displacement

#: a free body's position after up to 20 Stoermer steps: each step adds one rounded
#: displacement (dt u, rescaled on a new dt) to a position of size < 1, a few ulps per step
STEP_TOL = 64 * np.finfo(float).eps


def two_bodies(kind, rng=None, pose2=None):
    """Body 0 and body 1 with joint frames at random offsets; body 1 placed so the joint is
    exactly assembled, then moved by ``pose2`` (a world transform applied to body 1)."""
    rng = np.random.default_rng(0) if rng is None else rng
    T1 = se3.exp(rng.normal(size=6) * 0.5)
    T2 = se3.exp(rng.normal(size=6) * 0.5)
    B0 = se3.exp(rng.normal(size=6))
    B1 = B0 @ T1 @ se3.inv(T2)                    # L2 coincides with L1
    if pose2 is not None:
        B1 = pose2 @ B1
    I = np.stack([np.diag([1.0, 2.0, 3.0]), np.diag([2.0, 1.0, 1.5])])
    return Assembly([1.0, 2.0], I, [FaureJoint(kind, 0, 1, T1, T2)],
                    np.stack([B0[:3, 3], B1[:3, 3]]), np.stack([B0[:3, :3], B1[:3, :3]]))


@pytest.mark.parametrize("kind", sorted(JOINT_TYPES))
def test_table1_constrains_exactly_the_listed_directions(kind):
    """Move L2 by a small displacement along/about each axis of L1 and check which errors
    appear: free directions must leave every error at zero."""
    asm = two_bodies(kind)
    trans, rots = JOINT_TYPES[kind]
    L1, _ = asm.joint_frames()
    assert asm.nconstraints == len(trans) + len(rots)
    for k in range(6):
        xi = np.zeros(6)
        xi[(k + 3) % 6 if k < 3 else k - 3] = 1e-3  # k<3: translation t_k, else rotation r_k
        # displacement of L2 expressed in L1: world motion of body 1 about the joint frame
        move = L1[0] @ se3.exp(xi) @ se3.inv(L1[0])
        moved = two_bodies(kind, pose2=move)
        err = np.abs(moved.errors()).max()
        constrained = (k in trans) if k < 3 else (k - 3 in rots)
        assert (err > 5e-4) == constrained, (kind, k, err)


@pytest.mark.parametrize("kind", sorted(JOINT_TYPES))
@pytest.mark.parametrize("seed", [1, 2])
def test_jacobian_matches_finite_differences(kind, seed):
    rng = np.random.default_rng(seed)
    asm = two_bodies(kind, rng, pose2=se3.exp(rng.normal(size=6) * 0.7))
    J = asm.jacobian().toarray()
    eps = 1e-6
    num = np.zeros_like(J)
    for c in range(12):
        dx = np.zeros(12)
        dx[c] = eps
        pa, Ra = apply_displacement(asm.p, asm.R, dx)
        pb, Rb = apply_displacement(asm.p, asm.R, -dx)
        num[:, c] = (asm.errors(pa, Ra) - asm.errors(pb, Rb)) / (2 * eps)
    np.testing.assert_allclose(J, num, atol=1e-7)


def test_jacobian_at_assembled_configuration_is_the_seed_kinematics():
    """At zero error, rotation rows are r_k . (w2 - w1) and translation rows t_k . v_ij
    (seed 004 eqs. 7-8)."""
    asm = two_bodies("fixed")
    J = asm.jacobian().toarray()
    L1, L2 = asm.joint_frames()
    r = L1[0, :3, :3]
    np.testing.assert_allclose(J[3:, 0:3], -r.T, atol=1e-12)
    np.testing.assert_allclose(J[3:, 6:9], r.T, atol=1e-12)
    P = L1[0, :3, 3]
    w1, v1 = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3])
    u = np.zeros(12)
    u[:3], u[3:6] = w1, v1
    expected = -(v1 + np.cross(w1, P - asm.p[0])) @ r
    np.testing.assert_allclose((J @ u)[:3], expected, atol=1e-12)


def test_four_bar_assembles_from_a_perturbed_state():
    asm = four_bar()
    assert np.abs(asm.errors()).max() < 1e-12
    rng = np.random.default_rng(3)
    asm.p += rng.normal(scale=0.2, size=asm.p.shape)
    asm.R = so3.exp(rng.normal(scale=0.5, size=(3, 3))) @ asm.R
    _, info = asm.correction(geometric_iterations=10)
    assert info.converged and info.error < 1e-10
    assert info.geometric_iterations <= 7
    # quadratic convergence at the end (Newton on the linearized constraints)
    e = np.array(info.errors)
    assert e[-2] < 1e-3 and e[-1] < 10 * e[-2] ** 2 + 1e-12


def test_planar_four_bar_with_pins_is_redundant_and_assembles_regularized():
    asm = four_bar(coupler_joint="pin")
    J = asm.jacobian().toarray()
    assert J.shape == (20, 18) and np.linalg.matrix_rank(J) == 17
    outcome = []
    for reg in (0.0, 1e-6):
        asm = four_bar(coupler_joint="pin")
        rng = np.random.default_rng(3)
        asm.p += rng.normal(scale=0.2, size=asm.p.shape)
        asm.R = so3.exp(rng.normal(scale=0.5, size=(3, 3))) @ asm.R
        outcome.append(asm.correction(geometric_iterations=15, regularization=reg)[1])
    assert not outcome[0].converged  # plain CG on the inconsistent linearization
    assert outcome[1].converged


def test_bar_between_disks_converges_and_keeps_the_centre_of_mass():
    asm = bar_between_disks()
    com = (asm.mass[:, None] * asm.p).sum(0)
    _, info = asm.correction(geometric_iterations=10)
    assert info.converged and np.all(np.diff(info.errors) < 0)
    np.testing.assert_allclose((asm.mass[:, None] * asm.p).sum(0), com, atol=1e-12)
    L1, L2 = asm.joint_frames()
    np.testing.assert_allclose(L1[:, :3, 3], asm.p[:2], atol=1e-10)


def test_rotation_increments_are_truncated():
    asm = two_bodies("fixed", pose2=se3.exp(np.array([2.5, 0, 0, 0, 0, 0])))
    R0 = asm.R.copy()
    asm.correction(geometric_iterations=1, max_rotation=0.8)
    turned = np.linalg.norm(so3.log(asm.R @ np.swapaxes(R0, 1, 2)), axis=1)
    assert np.all(turned <= 0.8 + 1e-12) and turned.max() > 0.79
    _, info = asm.correction(geometric_iterations=20)
    assert info.converged


def test_cg_cap_trades_accuracy_for_speed():
    errs = []
    for cap in (2, 5, 50):
        asm = four_bar()
        rng = np.random.default_rng(4)
        asm.p += rng.normal(scale=0.05, size=asm.p.shape)
        _, info = asm.correction(geometric_iterations=2, cg_iterations=cap)
        assert max(info.cg_iterations) <= cap
        errs.append(info.error)
    assert errs[0] > errs[1] > errs[2]


def test_stoermer_free_body_moves_uniformly_and_rescales():
    I = np.diag([1.0, 1.0, 1.0])[None]
    asm = Assembly([2.0], I, [], np.zeros((1, 3)), np.eye(3)[None])
    u = np.array([[0.0, 0.0, 0.5, 1.0, -2.0, 0.5]])
    asm.set_velocity(u, 0.01)
    for _ in range(10):
        asm.step(0.01)
    np.testing.assert_allclose(asm.p[0], 0.1 * u[0, 3:], atol=STEP_TOL)
    asm.step(0.005)  # new time step: the displacement is rescaled, the velocity kept
    np.testing.assert_allclose(asm.p[0], 0.105 * u[0, 3:], atol=STEP_TOL)
    np.testing.assert_allclose(asm.velocity(), u, atol=1e-12)


def test_stoermer_start_is_second_order_for_a_constant_force():
    I = np.eye(3)[None]
    asm = Assembly([2.0], I, [], np.zeros((1, 3)), np.eye(3)[None])
    f = np.array([[0.0, 0, 0, 1.0, -4.0, 2.0]])
    u0 = np.array([[0.0, 0, 0, 0.5, 0.0, -1.0]])
    dt = 0.01
    asm.set_velocity(u0, dt, asm.free_acceleration(f))
    for _ in range(20):
        asm.step(dt, f)
    t = 20 * dt
    np.testing.assert_allclose(asm.p[0], u0[0, 3:] * t + 0.5 * f[0, 3:] / 2.0 * t ** 2,
                               atol=STEP_TOL)


def test_stoermer_four_bar_keeps_constraints_and_energy():
    asm = four_bar()
    dt, g = 1e-3, np.array([0.0, -9.81, 0.0])
    asm.set_velocity(np.zeros((3, 6)), dt)

    def energy():
        u = asm.velocity()
        kin = 0.5 * (asm.mass * (u[:, 3:] ** 2).sum(1)).sum()
        Iw = np.einsum("nij,njk,nlk,nl->ni", asm.R, asm.inertia, asm.R, u[:, :3])
        kin += 0.5 * (u[:, :3] * Iw).sum()
        return kin - (asm.mass * (asm.p @ g)).sum()

    E0 = energy()
    drop = []
    for _ in range(400):
        info = asm.step(dt, asm.gravity_forces(g))
        assert info.error < 1e-9
        drop.append(asm.p[1, 1])
    assert min(drop) < asm.p[1, 1] + 1e-3 or np.ptp(drop) > 0.05  # it moved
    assert abs(energy() - E0) < 0.02 * (asm.mass * 9.81).sum()


def test_dragging_toward_a_target_frame():
    asm = four_bar()
    target_pose = se3.from_rp(asm.R[0], asm.p[0])
    grip = asm.add_target(target_pose)
    asm.add_joint(FaureJoint("universal", 0, grip, se3.from_rp(np.eye(3), [0.5, 0, 0]),
                             se3.from_rp(np.eye(3), [0.5, 0, 0])))
    # drag the crank tip to a new, reachable place: turn the crank by 0.3 rad
    turn = so3.exp(np.array([0.0, 0.0, 0.3]))
    moved = se3.from_rp(turn @ asm.R[0], turn @ asm.p[0])
    asm.move_target(grip, moved)
    # the grip adds constraints that repeat the linkage's own (z = 0, |tip| = a): the set is
    # redundant, so the assembly runs as damped least squares
    _, info = asm.correction(geometric_iterations=30, regularization=1e-6)
    assert info.converged
    # a target has zero inverse mass: its displacement is exactly zero
    np.testing.assert_array_equal(asm.p[grip], moved[:3, 3])
    np.testing.assert_allclose(asm.p[0], turn @ four_bar().p[0], atol=1e-8)


def test_bad_input_raises():
    with pytest.raises(InvalidInputError):
        two_bodies("hinge")
    asm = four_bar()
    with pytest.raises(InvalidInputError):
        asm.add_joint(FaureJoint("pin", 0, 7, np.eye(4), np.eye(4)))
    with pytest.raises(InvalidInputError):
        asm.step(0.0)
    with pytest.raises(InvalidInputError):
        asm.move_target(0, np.eye(4))


def test_shared_solver_methods_agree_and_satisfy_the_constraints():
    import scipy.sparse as sp

    from core.maximal.solver import project, world_inverse_mass

    rng = np.random.default_rng(5)
    J = sp.random(8, 18, density=0.5, random_state=6, format="csr")
    R = so3.exp(rng.normal(size=(3, 3)))
    A = rng.normal(size=(3, 3, 3))
    Minv = world_inverse_mass(R, A @ np.swapaxes(A, 1, 2) + np.eye(3), [1.0, 0.5, 2.0])
    b = rng.normal(size=8)
    out = {m: project(J, Minv, b, method=m) for m in ("cg", "direct", "lsqr")}
    for res in out.values():
        np.testing.assert_allclose(J @ res.dx, b, atol=1e-8)
        np.testing.assert_allclose(res.dx, out["direct"].dx, atol=1e-8)
    assert out["cg"].iterations > 0 and out["cg"].converged
    # the projection is the smallest correction in the kinetic metric: dx = M^-1 J^T lam
    np.testing.assert_allclose(out["direct"].dx, Minv @ (J.T @ out["direct"].lam), atol=1e-12)
    capped = project(J, Minv, b, method="cg", maxiter=2)
    assert capped.iterations == 2 and not capped.converged
    with pytest.raises(InvalidInputError):
        project(J, Minv, b[:3])
    with pytest.raises(InvalidInputError):
        project(J, Minv, b, method="qr")
    with pytest.raises(InvalidInputError):
        project(J, Minv, b, J_force=J)  # unsymmetric system with CG


def rod_pendulum(dt):
    """One rod (length 0.3 m, 0.5 kg) on a pin at the origin, released 0.6 rad above the
    horizontal x axis; gravity -y."""
    L, m = 0.3, 0.5
    I = m * np.diag([2e-4, L ** 2 / 12, L ** 2 / 12])
    R = so3.exp(np.array([0.0, 0.0, 0.6]))
    Rz = so3.exp(np.array([0.0, -np.pi / 2, 0.0]))
    asm = Assembly([m], I[None], [FaureJoint("pin", -1, 0, se3.from_rp(Rz, np.zeros(3)),
                                             se3.from_rp(Rz, [-L / 2, 0, 0]))],
                   (R @ [L / 2, 0, 0])[None], R[None])
    f = asm.gravity_forces((0.0, -9.81, 0.0))
    asm.set_velocity(np.zeros((1, 6)), dt, asm.free_acceleration(f))
    Ip = I[2, 2] + m * (L / 2) ** 2
    return asm, f, lambda th: -m * 9.81 * (L / 2) * np.cos(th) / Ip


@pytest.mark.parametrize("directions,order", [("current", 1.0), ("start", 2.0)])
def test_stoermer_order_of_accuracy(directions, order):
    """Against scipy's solve_ivp on the pendulum ODE: the seed's correction (current
    Jacobian) is first order, the start-of-step Jacobian (SHAKE) second order."""
    from scipy.integrate import solve_ivp

    T = 0.1
    errs = []
    for dt in (4e-3, 2e-3):
        asm, f, acc = rod_pendulum(dt)
        for _ in range(int(round(T / dt))):
            asm.step(dt, f, geometric_iterations=5, tol=1e-13, directions=directions)
        theta = np.arctan2(asm.R[0, 1, 0], asm.R[0, 0, 0])
        ref = solve_ivp(lambda t, y: [y[1], acc(y[0])], (0, T), [0.6, 0.0], rtol=1e-12,
                        atol=1e-12).y[0, -1]
        errs.append(abs(theta - ref))
    assert abs(np.log2(errs[0] / errs[1]) - order) < 0.3, errs
    with pytest.raises(InvalidInputError):
        asm.step(dt, f, directions="end")
