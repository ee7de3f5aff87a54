"""Seed 002 (ArtiSynth custom joints): couplings, engagement, position correction."""

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.lie import se3, so3
from core.maximal.couplings import (Constraint, CoupledBodies, CouplingJoint,
                                    CylindricalCoupling, HingeCoupling, SlottedHingeCoupling,
                                    FixedCoupling, FlatPointCoupling, SliderCoupling,
                                    SphericalCoupling, SplineCurveCoupling,
                                    SplinePointCoupling, align_z, nearest_angle)


def spline_joint():
    from core.joints.spline_curve import SplineCurveJoint

    rng = np.random.default_rng(11)
    frames = [np.eye(4)]
    for _ in range(6):
        frames.append(frames[-1] @ se3.exp(np.concatenate([rng.normal(scale=0.3, size=3),
                                                           [0.4, 0.1, 0.0]])))
    return SplineCurveJoint(np.array(frames))


def bowl():
    """A spline surface joint (translations only) through a 5 x 6 grid of a tilted bowl."""
    from core.linkage import point_surface

    u, v = np.meshgrid(np.linspace(-1, 1, 5), np.linspace(-1, 1, 6), indexing="ij")
    return point_surface(np.stack([u + 0.2 * v, v, 0.3 * (u ** 2 + v ** 2) + 0.1 * u], -1))


def couplings():
    return {"hinge": (HingeCoupling(), [0.7]),
            "slotted": (SlottedHingeCoupling(), [0.3, -2.0]),
            "cylindrical": (CylindricalCoupling(), [0.4, 1.2]),
            "spherical": (SphericalCoupling([0, 0, 1.0], 0.8), [0.3, -0.2, 0.5]),
            "point_curve": (SplinePointCoupling(spline_joint()), [1.6, 0.3, -0.4, 0.9]),
            "point_surface": (SplinePointCoupling(bowl()), [0.7, 1.9, -0.2, 0.5, 1.1]),
            "slider": (SliderCoupling((-1.0, 1.0)), [0.4]),
            "fixed": (FixedCoupling(), []),
            "line": (FlatPointCoupling([[0.0], [0.0], [1.0]], [-1.0], [1.0]), [0.3, 0.1, -0.2, 0.4]),
            "plane": (FlatPointCoupling(np.eye(3)[:, :2]), [0.3, -0.5, 0.2, 0.1, 0.6])}


MORE = ["point_curve", "point_surface", "slider", "fixed", "line", "plane"]


@pytest.mark.parametrize("name", ["hinge", "slotted", "cylindrical", "spherical", "spline"]
                         + MORE)
def test_coordinates_round_trip_and_projection(name):
    if name == "spline":
        cp = SplineCurveCoupling(spline_joint(), value=1.5)
        q = np.array([1.6])
    else:
        cp, q = couplings()[name]
        q = np.array(q)
        for c, v in zip(cp.coordinates, q):
            c.value = v + 0.1  # the nearest-angle reference
    T = cp.coordinates_to_TCD(q)
    np.testing.assert_allclose(cp.TCD_to_coordinates(T), q, atol=1e-8)
    TGD, coords = cp.project_to_constraints(T)       # legal: projection is the identity
    np.testing.assert_allclose(TGD, T, atol=1e-8)
    # a perturbed transform projects back onto the constraint surface
    bad = T @ se3.exp(np.random.default_rng(1).normal(scale=1e-3, size=6))
    TGD, coords = cp.project_to_constraints(bad)
    np.testing.assert_allclose(cp.coordinates_to_TCD(coords), TGD, atol=1e-8)
    assert np.abs(se3.log(se3.inv(TGD) @ bad)).max() < 3e-3


@pytest.mark.parametrize("name", ["hinge", "slotted", "cylindrical", "spherical", "spline"]
                         + MORE)
def test_wrenches_annihilate_allowed_motion_and_limits_give_rates(name):
    """Bilateral G_k . v = 0 for every coordinate motion; a limit wrench gives the rate of
    its coordinate (eq. 4.19); both checked with finite differences of coordinates_to_TCD."""
    if name == "spline":
        cp = SplineCurveCoupling(spline_joint(), value=1.5)
        q = np.array([1.5])
    else:
        cp, q = couplings()[name]
        q = np.array(q, dtype=float)
    for c, v in zip(cp.coordinates, q):
        c.value = v
    T = cp.coordinates_to_TCD(q)
    TGD, _ = cp.project_to_constraints(T)
    for i in range(q.size):
        eps = 1e-6
        dq = np.zeros_like(q)
        dq[i] = eps
        vel = se3.log(se3.inv(cp.coordinates_to_TCD(q - dq)) @ cp.coordinates_to_TCD(q + dq))
        vel /= 2 * eps                                    # body velocity of C in D, in C
        for cons in cp.constraints:
            cons.engaged = 1
        cp.update_constraints(TGD, T, np.zeros(6), vel, False)
        for cons in cp.constraints:
            if cons.bilateral:
                assert abs(cons.wrench @ vel) < 1e-7, (name, i)
            elif cons.limit is not None:
                expected = 1.0 if cons.limit == i else 0.0
                assert abs(cons.wrench @ vel - expected) < 1e-6, (name, i, cons.limit)


def test_spherical_cone_wrench_is_the_rate_of_g():
    from core import expcoords

    cp = SphericalCoupling([0.2, 0.1, 1.0], 0.6)
    r = np.array([0.4, -0.3, 0.2])
    rdot = np.array([0.3, 0.5, -0.2])
    w_body = so3.right_jacobian(r) @ rdot
    cp.update_constraints(cp.coordinates_to_TCD(r), None, np.zeros(6),
                          np.concatenate([w_body, np.zeros(3)]), True)
    cons = cp.constraints[-1]
    h = 1e-6
    gdot = (expcoords.reach_cone_value(r + h * rdot, *cp.cone)
            - expcoords.reach_cone_value(r - h * rdot, *cp.cone)) / (2 * h)
    assert abs(cons.wrench[:3] @ w_body - gdot) < 1e-7
    assert cons.distance == pytest.approx(float(expcoords.reach_cone_value(r, *cp.cone)))


def test_nearest_angle_wrapping_beyond_two_pi():
    assert nearest_angle(-3.0, 3.0) == pytest.approx(2 * np.pi - 3.0)
    assert nearest_angle(0.1, 4 * np.pi) == pytest.approx(4 * np.pi + 0.1)
    cp = HingeCoupling(-4 * np.pi, 4 * np.pi)
    cp.coordinates[0].value = 0.0
    values = []
    for theta in np.linspace(0.0, 3.5 * np.pi, 60):  # turn continuously through pi, 2 pi, 3 pi
        _, c = cp.project_to_constraints(cp.coordinates_to_TCD([theta]))
        cp.coordinates[0].value = c[0]
        values.append(c[0])
    np.testing.assert_allclose(values, np.linspace(0.0, 3.5 * np.pi, 60), atol=1e-9)


def test_engagement_rules():
    cp = HingeCoupling(-1.0, 1.0)
    cons = cp.constraints[cp.coordinates[0].limit]
    vel = np.zeros(6)
    cp.update_engaged(cons, 1.05, -1.0, 1.0, vel)          # past the upper bound
    assert cons.engaged == -1 and cons.distance == pytest.approx(-0.05)
    vel[2] = -1.0                                         # moving back into range
    cp.update_engaged(cons, 0.9, -1.0, 1.0, vel)          # d > 0, d_dot > 0, but 0 steps
    assert cons.engaged == -1
    cons.engaged_steps = 2
    vel[2] = 1.0                                          # d > 0 but moving toward the bound
    cp.update_engaged(cons, 0.9, -1.0, 1.0, vel)
    assert cons.engaged == -1
    vel[2] = -1.0
    cp.update_engaged(cons, 0.9, -1.0, 1.0, vel)
    assert cons.engaged == 0
    cp.update_engaged(cons, -1.2, -1.0, 1.0, vel)
    assert cons.engaged == 1 and cons.distance == pytest.approx(-0.2)


def slider(x_range=(-1.0, 1.0), u=None):
    cp = SlottedHingeCoupling(x_range=x_range)
    I = np.diag([0.1, 0.1, 0.1])
    j = CouplingJoint(cp, 0, -1, np.eye(4), np.eye(4))
    return cp, CoupledBodies([1.0], [I], [[0.0, 0, 0]], [np.eye(3)], [j], u=u)


def test_slotted_hinge_stops_at_the_limit_with_deadband():
    u = np.array([[0.0, 0.0, 3.0, 2.0, 0.0, 0.0]])      # spin about z and slide along x
    cp, sim = slider(u=u)
    xs = []
    for _ in range(150):
        sim.step(5e-3)
        xs.append(cp.coordinates[0].value)
        assert sim.bilateral_error() < 1e-9
    lim = cp.constraints[4]
    assert lim.engaged == -1
    assert max(xs) < 1.0 + 2 * 5e-3 * 2.0              # at most one step of penetration
    # the deadband leaves the joint inside the region by about penetrationTol
    assert 1.0 < xs[-1] <= 1.0 + cp.penetration_tol + 1e-9
    # it spins on, its angle unclipped and continuous (range 2 pi wide each way)
    assert abs(sim.u[0, 2] - 3.0) < 1e-9


def test_stays_engaged_at_least_two_steps_then_leaves():
    u = np.array([[0.0, 0.0, 0.0, 2.0, 0.0, 0.0]])
    cp, sim = slider(u=u)
    lim = cp.constraints[4]
    while lim.engaged == 0:
        sim.step(5e-3)
    sim.u[0, 3] = -2.0                                    # pull back at once
    sim.step(5e-3)
    assert lim.engaged == -1                              # one step: must stay engaged
    for _ in range(5):
        sim.step(5e-3)
    assert lim.engaged == 0 and cp.coordinates[0].value < 1.0


def test_cylindrical_body_falls_to_its_lower_limit():
    cp = CylindricalCoupling(z_range=(-0.5, 0.5))
    j = CouplingJoint(cp, 0, -1, np.eye(4), np.eye(4))
    sim = CoupledBodies([2.0], [np.diag([0.1, 0.2, 0.3])], [[0.0, 0, 0]], [np.eye(3)], [j],
                        u=np.array([[0.3, -0.2, 1.0, 0.5, 0.1, 0.0]]))
    g = np.array([[0.0, 0, 0, 0, 0, -2.0 * 9.81]])
    for _ in range(200):
        sim.step(5e-3, g)
    z, theta = cp.coordinate_values
    assert -0.5 - 2 * cp.penetration_tol < z < -0.5 + 1e-3
    assert sim.bilateral_error() < 1e-9
    assert abs(sim.u[0, 5]) < 1e-6                        # at rest on the limit
    assert abs(theta) > 0.5                               # still free to turn


def test_spherical_pendulum_respects_its_reach_cone():
    from core import expcoords

    cp = SphericalCoupling([1.0, 0.0, 0.0], 0.4)
    # body hangs along x from the joint at the origin; gravity pulls along -y
    j = CouplingJoint(cp, 0, -1, se3.from_rp(np.eye(3), [-0.5, 0, 0]), np.eye(4))
    sim = CoupledBodies([1.0], [np.diag([0.01, 0.1, 0.1])], [[0.5, 0, 0]], [np.eye(3)], [j])
    g = np.array([[0.0, 0, 0, 0, -9.81, 0]])
    worst = 1.0
    for _ in range(150):
        sim.step(3e-3, g)
        worst = min(worst, float(expcoords.reach_cone_value(cp.coordinate_values, *cp.cone)))
        assert sim.bilateral_error() < 1e-9
    assert cp.constraints[-1].engaged == 1
    assert worst > -0.02                                  # the cone held (g >= 0 is inside)
    # without the cone the body falls far outside it
    free = SphericalCoupling()
    sim2 = CoupledBodies([1.0], [np.diag([0.01, 0.1, 0.1])], [[0.5, 0, 0]], [np.eye(3)],
                         [CouplingJoint(free, 0, -1, j.T_A_C, np.eye(4))])
    for _ in range(150):
        sim2.step(3e-3, g)
    assert float(expcoords.reach_cone_value(free.coordinate_values, *cp.cone)) < -0.1


def test_spline_curve_coupling_keeps_a_free_body_on_the_curve():
    joint = spline_joint()
    cp = SplineCurveCoupling(joint, value=1.2)
    # frame D is the world; C is the body frame: the body starts on the curve at s = 1.2
    T0 = joint.transform(np.array([1.2]))
    sim = CoupledBodies([1.0], [np.diag([0.05, 0.05, 0.05])], [T0[:3, 3]], [T0[:3, :3]],
                        [CouplingJoint(cp, 0, -1, np.eye(4), np.eye(4))])
    g = np.array([[0.0, 0, 0, 0, -9.81, 0]])
    s = []
    for _ in range(60):
        sim.step(3e-3, g)
        s.append(cp.coordinates[0].value)
        assert sim.bilateral_error() < 1e-8
        TCD = se3.from_rp(sim.R[0], sim.p[0])
        assert np.abs(se3.log(se3.inv(joint.transform(np.array([s[-1]]))) @ TCD)).max() < 1e-8
    assert np.ptp(s) > 1e-3                              # it slid along the curve


def test_align_z_is_a_rotation_about_z():
    R = so3.exp(np.array([0.3, -0.2, 1.0]))
    A = align_z(R)
    np.testing.assert_allclose(A[:, 2], [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(A[2], [0, 0, 1], atol=1e-12)


def test_bad_input_raises():
    with pytest.raises(InvalidInputError):
        HingeCoupling(1.0, -1.0)
    with pytest.raises(InvalidInputError):
        SphericalCoupling([0, 0, 1.0])
    cp = HingeCoupling()
    with pytest.raises(InvalidInputError):
        CoupledBodies([1.0], [np.eye(3)], [[0, 0, 0]], [np.eye(3)],
                      [CouplingJoint(cp, 0, 0, np.eye(4), np.eye(4))])
    _, sim = slider()
    with pytest.raises(InvalidInputError):
        sim.step(-1.0)
    assert isinstance(Constraint(True, False, np.zeros(6), True).engaged, int)


@pytest.mark.parametrize("integrator,order", [("euler", 1.0), ("rattle", 2.0)])
def test_order_of_accuracy_of_the_integrators(integrator, order):
    """One rod on a hinge released 0.6 rad above the horizontal, against solve_ivp."""
    from scipy.integrate import solve_ivp

    L, m = 0.3, 0.5
    I = m * np.diag([2e-4, L ** 2 / 12, L ** 2 / 12])
    T, errs = 0.1, []
    for h in (4e-3, 2e-3):
        R = so3.exp(np.array([0.0, 0.0, 0.6]))
        cp = HingeCoupling()
        sim = CoupledBodies([m], [I], [R @ [L / 2, 0, 0]], [R],
                            [CouplingJoint(cp, 0, -1, se3.from_rp(np.eye(3), [-L / 2, 0, 0]),
                                           np.eye(4))])
        f = np.array([[0.0, 0, 0, 0, -m * 9.81, 0]])
        for _ in range(int(round(T / h))):
            sim.step(h, f, integrator=integrator)
        Ip = I[2, 2] + m * (L / 2) ** 2
        ref = solve_ivp(lambda t, y: [y[1], -m * 9.81 * L / 2 * np.cos(y[0]) / Ip], (0, T),
                        [0.6, 0.0], rtol=1e-12, atol=1e-12).y[0, -1]
        errs.append(abs(cp.coordinates[0].value - ref))
    assert abs(np.log2(errs[0] / errs[1]) - order) < 0.3, errs
    with pytest.raises(InvalidInputError):
        sim.step(h, f, integrator="rk4")


def test_fitted_spline_coupling_between_two_free_bodies():
    """A spline curve joint fitted to helical samples (core.fitting) constrains body 0
    (frame C) relative to body 1 (frame D); no external forces: the relative pose stays on
    the curve and the total linear momentum is conserved by the internal constraint
    impulses."""
    from core.fitting.curve import fit_spline_curve

    t = np.linspace(0.0, 1.5, 30)
    poses = np.stack([se3.from_rp(so3.exp(np.array([0.0, 0.0, 0.8 * ti])),
                                  [0.5 * np.cos(ti), 0.5 * np.sin(ti), 0.2 * ti]) for ti in t])
    joint = fit_spline_curve(poses, n_frames=6).joint
    s0 = 0.5 * (joint.lower[0] + joint.upper[0])
    cp = SplineCurveCoupling(joint, value=s0)
    T_W_D = se3.exp(np.array([0.1, -0.2, 0.3, 1.0, 0.5, -0.2]))
    T_W_C = T_W_D @ joint.transform(np.array([s0]))
    S = joint.jacobian(np.array([s0]))[:, 0]
    # body 0 moves along the curve relative to body 1 (twist S in C), body 1 drifts
    u = np.zeros((2, 6))
    Rc = T_W_C[:3, :3]
    u[0, :3] = Rc @ S[:3] * 0.8
    u[0, 3:] = Rc @ S[3:] * 0.8
    u[1] = [0.0, 0.1, 0.0, 0.2, 0.0, -0.1]
    u[0] += u[1] + np.concatenate([[0, 0, 0], np.cross(u[1, :3], T_W_C[:3, 3] - T_W_D[:3, 3])])
    masses = np.array([1.0, 2.0])
    sim = CoupledBodies(masses, [np.diag([0.1, 0.2, 0.15]), np.diag([0.3, 0.2, 0.25])],
                        [T_W_C[:3, 3], T_W_D[:3, 3]], [T_W_C[:3, :3], T_W_D[:3, :3]],
                        [CouplingJoint(cp, 0, 1, np.eye(4), np.eye(4))], u=u)
    P0 = (masses[:, None] * sim.u[:, 3:]).sum(0)
    for _ in range(40):
        sim.step(5e-3)
        assert sim.bilateral_error() < 1e-8
        np.testing.assert_allclose((masses[:, None] * sim.u[:, 3:]).sum(0), P0, atol=1e-12)
    assert abs(cp.coordinates[0].value - s0) > 1e-2      # it slid along the fitted curve
