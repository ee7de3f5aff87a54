"""core.linkage: live assembly of closed loops (seed 004), couplings in a bake (seed 002)."""

import dataclasses

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.lie import se3, so3
from core.linkage import (LinkJoint, LiveAssembly, check_linkage, redundant_rows,
                          simulate_linkage, spring_forces)
from core.linkage_demos import door, four_bar, four_bar_position, scissor_lift
from core.maximal.solver import apply_displacement

#: the assembly's convergence tolerance (m / rad) used throughout
TOL = 1e-10
#: bodies' positions against the closed form: the assembly leaves constraint errors <= TOL,
#: which move the four-bar's points by their condition (bar length ratios, ~4) times that,
#: plus the closed form's own round-off (a few eps on 2 m): 10 TOL bounds both
CLOSED_FORM_TOL = 10 * TOL
#: central differences with step 1e-6 of energies of size ~100 J: truncation ~1e-12 x the
#: third derivative, round-off ~eps * 100 / 1e-6 ~ 2e-8; relative to the wrench, 1e-6 bounds both
FD_STEP, FD_TOL = 1e-6, 1e-6


def crank_pose(linkage, theta, theta0=0.6):
    """World pose of the four-bar's crank turned to ``theta`` (about +y, from +x to +z)."""
    return se3.from_rp(so3.exp(np.array([0.0, -(theta - theta0), 0.0])), np.zeros(3)) \
        @ linkage.bodies[0].T


def test_four_bar_coupler_follows_the_closed_form_over_a_revolution():
    lk, _ = four_bar()
    live = LiveAssembly(lk, tol=TOL)
    poses = lk.poses
    for theta in 0.6 + np.linspace(0.0, 2 * np.pi, 73)[1:]:
        res = live.solve(crank_pose(lk, theta), poses)
        poses = res.poses
        A, B = four_bar_position(np.array([theta]), 0.5, 1.8, 1.2, 2.0)
        # the coupler's origin is its midpoint; the rocker's, the midpoint of D and B
        np.testing.assert_allclose(poses[1, [0, 2], 3], 0.5 * (A[0] + B[0]), atol=CLOSED_FORM_TOL)
        np.testing.assert_allclose(poses[2, [0, 2], 3], 0.5 * (B[0] + [2.0, 0.0]),
                                   atol=CLOSED_FORM_TOL)
        assert res.converged and res.error <= TOL


def test_solve_is_deterministic_and_reports_its_error():
    lk, _ = four_bar()
    live = LiveAssembly(lk, cg_iterations=2, geometric_iterations=2)
    T = crank_pose(lk, 1.4)
    a, b = live.solve(T), live.solve(T)
    np.testing.assert_array_equal(a.poses, b.poses)
    # the reported error is the largest constraint error of the poses returned
    check = LiveAssembly(lk).system
    check.sim.p, check.sim.R = a.poses[:, :3, 3], a.poses[:, :3, :3]
    assert a.error == pytest.approx(check.errors().max(), rel=1e-12)
    assert not a.converged and "does not close" in live.unreachable(a)


def test_cg_cap_trades_accuracy_for_speed():
    lk, _ = four_bar()
    errs = [LiveAssembly(lk, cg_iterations=cap, geometric_iterations=2).solve(
        crank_pose(lk, 1.2)).error for cap in (2, 4, 50)]
    assert errs[0] > errs[1] > errs[2]


def test_driving_joint_coordinate_moves_the_driven_body():
    lk, _ = scissor_lift()
    live = LiveAssembly(lk)
    res = live.solve(live.driver_pose(-0.15))
    assert res.converged
    np.testing.assert_allclose(res.poses[0, :3, 3], lk.bodies[0].T[:3, 3] + [-0.15, 0, 0],
                               atol=1e-12)
    assert res.poses[-1, 2, 3] > lk.bodies[-1].T[2, 3] + 0.1   # feet closer: the lift rises


def test_redundant_plane_loop_names_the_repeated_constraints():
    lk, _ = four_bar()
    hinges = tuple(dataclasses.replace(j, kind="hinge") for j in lk.joints)
    for build in (lambda: LiveAssembly(dataclasses.replace(lk, joints=hinges)),
                  lambda: simulate_linkage(dataclasses.replace(lk, joints=hinges, driver=""),
                                           0.1, 24)):
        with pytest.raises(InvalidInputError, match=r"redundant \(3 constraint") as err:
            build()
        assert "joint '" in str(err.value) and "rotation about" in str(err.value)


def test_redundant_rows_finds_a_repeated_row():
    rng = np.random.default_rng(0)
    J = rng.normal(size=(4, 9))
    assert redundant_rows(J).size == 0
    J[3] = 2 * J[0] - J[1]
    assert redundant_rows(J).size == 1


def test_a_loop_that_cannot_close_is_reported():
    lk, _ = four_bar()
    rocker = lk.joints[3]
    far = dataclasses.replace(rocker, frame1=se3.from_rp(rocker.frame1[:3, :3], [4.0, 0, 0]))
    live = LiveAssembly(dataclasses.replace(lk, joints=lk.joints[:3] + (far,)))
    res = live.solve(crank_pose(lk, 0.6))
    assert not res.converged
    assert "joint '" in res.worst and "does not close" in live.unreachable(res)


def test_a_bake_of_a_loop_that_cannot_close_names_the_constraint():
    lk, _ = four_bar(driven=False)
    rocker = lk.joints[3]
    far = dataclasses.replace(rocker, frame1=se3.from_rp(rocker.frame1[:3, :3], [4.0, 0, 0]))
    with pytest.raises(InvalidInputError, match=r"does not close: joint '"):
        simulate_linkage(dataclasses.replace(lk, joints=lk.joints[:3] + (far,)), 0.2, 24)
    door_lk, _ = door()
    hinge = door_lk.joints[0]
    off = dataclasses.replace(hinge, frame1=se3.from_rp(np.eye(3), [0.0, 0.0, 3.0]))
    # the couplings solver moves the door onto its hinge within the first frame: it closes
    assert simulate_linkage(dataclasses.replace(door_lk, joints=(off,)), 0.2, 24).errors[-1] < 1e-9


def test_bad_descriptions_are_refused():
    lk, _ = four_bar()
    j = lk.joints[1]
    with pytest.raises(InvalidInputError, match="to itself"):
        check_linkage(dataclasses.replace(
            lk, joints=(dataclasses.replace(j, body1="crank", body2="crank"),)))
    with pytest.raises(InvalidInputError, match="not in the linkage"):
        check_linkage(dataclasses.replace(lk, joints=(dataclasses.replace(j, body2="gone"),)))
    with pytest.raises(InvalidInputError, match="not in the linkage"):
        check_linkage(dataclasses.replace(lk, driver="gone"))
    with pytest.raises(InvalidInputError, match="needs a driver"):
        LiveAssembly(dataclasses.replace(lk, driver=""))
    with pytest.raises(InvalidInputError, match="limits are offered"):
        check_linkage(dataclasses.replace(
            lk, joints=(LinkJoint("s", "fixed", "", "crank", np.eye(4), np.eye(4),
                                  lower=(0.0,), upper=(1.0,)),)))


def test_spring_and_gravity_wrenches_are_minus_the_energy_gradient():
    lk, _ = scissor_lift()
    P = lk.poses
    p, R = P[:, :3, 3], P[:, :3, :3]
    rng = np.random.default_rng(2)
    p = p + rng.normal(scale=0.05, size=p.shape)      # stretch the spring off its pose
    mass = np.array([b.mass for b in lk.bodies])

    def energy(p, R):
        V = -float(np.sum(mass * (p @ np.asarray(lk.gravity))))
        for s in lk.springs:
            x1 = s.point1 if s.body1 == "" else p[lk.index(s.body1)] + R[lk.index(s.body1)] @ s.point1
            x2 = p[lk.index(s.body2)] + R[lk.index(s.body2)] @ s.point2
            V += 0.5 * s.stiffness * (np.linalg.norm(x2 - x1) - s.rest) ** 2
        return V

    f = spring_forces(lk, p, R).reshape(-1)
    for c in range(f.size):
        dx = np.zeros(f.size)
        dx[c] = FD_STEP
        num = (energy(*apply_displacement(p, R, dx)) - energy(*apply_displacement(p, R, -dx)))
        assert abs(-num / (2 * FD_STEP) - f[c]) < FD_TOL * max(1.0, abs(f[c]))


def test_door_swings_into_its_stop_and_engages_once():
    lk, _ = door()
    motion = simulate_linkage(lk, 2.0, 24, substeps=10)
    assert motion.solver == "couplings" and motion.status == "completed"
    assert motion.engagements == {"hinge/5": 1}         # the stop engaged once: no chatter
    assert motion.violations.max() <= motion.violation_tol
    assert motion.errors.max() < 1e-9
    angle = np.arctan2(motion.poses[:, 0, 1, 0], motion.poses[:, 0, 0, 0])
    # shut against the stop, held within the deadband (rotary tolerance) past it
    assert angle[0] == pytest.approx(1.2) and abs(angle[-1]) <= motion.violation_tol


def test_four_bar_dynamics_keeps_the_loop_closed_and_can_be_cancelled():
    lk, _ = four_bar(driven=False)
    motion = simulate_linkage(lk, 0.5, 24, substeps=10)
    assert motion.solver == "faure" and motion.errors.max() < 1e-9
    assert np.ptp(motion.poses[:, 1, 2, 3]) > 0.05                    # it swings
    calls = []
    stopped = simulate_linkage(lk, 0.5, 24, progress=lambda f: calls.append(f) or len(calls) < 3)
    assert stopped.status == "cancelled" and len(stopped.times) == 3


def test_a_body_slides_along_a_spline_curve_joint_under_gravity():
    from core.joints.spline_curve import SplineCurveJoint
    from core.linkage import LinkBody, Linkage

    points = [[0.0, 0, 1.0], [0.5, 0, 0.55], [1.0, 0, 0.35], [1.5, 0, 0.45], [2.0, 0, 0.9]]
    frames = np.array([se3.from_rp(np.eye(3), p) for p in points])
    curve = SplineCurveJoint(frames)
    s0 = curve.lower[0] + 0.3 * (curve.upper[0] - curve.lower[0])
    start = curve.transform(np.array([s0]))
    bead = LinkBody("bead", start, 0.2, 0.2 * 0.4 * 0.02 ** 2 * np.eye(3))
    wire = LinkJoint("wire", "curve", "", "bead", np.eye(4), np.eye(4), curve=frames)
    motion = simulate_linkage(Linkage((bead,), (wire,)), 1.0, 24, substeps=10)
    assert motion.solver == "couplings" and motion.errors.max() < 1e-8
    grid = curve.transforms(np.linspace(curve.lower[0], curve.upper[0], 40001)[:, None])[:, :3, 3]
    p = motion.poses[:, 0, :3, 3]
    gap = np.linalg.norm(p[:, None] - grid[None], axis=-1).min(axis=1)
    spacing = np.linalg.norm(np.diff(grid, axis=0), axis=1).max()
    assert gap.max() <= spacing                  # on the curve, to the grid's resolution
    assert np.abs(motion.poses[:, 0, :3, :3] - np.eye(3)).max() < 1e-8   # no turning
    assert np.ptp(p[:, 0]) > 0.1                               # it slid down the valley


#: the driver's pose after a step: exp(log(R_next R^T)) R and p + (p_next - p) round off by a
#: few eps times the poses' size (~2 m)
ON_KEYS_TOL = 1e-12


def test_a_keyed_driver_drives_a_one_dof_linkage_to_the_live_assembly_poses():
    """A driver following its keys leaves a one-DOF linkage no freedom: the dynamics' frames
    are the live assembly's (each closed to TOL; the positions then agree to the loop's
    condition times that, CLOSED_FORM_TOL), the first one too, though the keys start away
    from the described configuration."""
    bar, _ = four_bar()
    crank = np.array([crank_pose(bar, th) for th in 0.8 + np.linspace(0.0, 1.5, 25)])
    lift, _ = scissor_lift()
    slide = LiveAssembly(lift)
    block = np.array([slide.driver_pose(x) for x in -0.02 - 0.25 * np.linspace(0.0, 1.0, 25)])
    for lk, keys in ((bar, crank), (lift, block)):
        motion = simulate_linkage(lk, 1.0, 24, substeps=10, tol=TOL, driver_poses=keys)
        assert motion.solver == "faure" and motion.errors.max() < 1e-9
        d = lk.driver_index()
        np.testing.assert_allclose(motion.poses[:, d], keys, atol=ON_KEYS_TOL)
        live, P = LiveAssembly(lk, tol=TOL), lk.poses
        for k, T in enumerate(keys):
            P = live.solve(T, P).poses
            np.testing.assert_allclose(motion.poses[k], P, atol=CLOSED_FORM_TOL)


def _cart_and_pendulum(limits=((), ())):
    """A cart (the driver) carrying a pendulum on a hinge along world y, 0.5 turned down."""
    from core.linkage import LinkBody, Linkage

    y_axis = so3.exp(np.array([-np.pi / 2, 0.0, 0.0]))
    cart = LinkBody("cart", se3.from_rp(np.eye(3), [0.0, 0.0, 1.0]), 2.0, 0.1 * np.eye(3))
    bob = LinkBody("bob", se3.from_rp(so3.exp(np.array([0.0, -0.5, 0.0])),
                                      [0.5 * np.cos(0.5), 0.0, 1.0 + 0.5 * np.sin(0.5)]),
                   1.0, 0.01 * np.eye(3))
    F = se3.from_rp(y_axis, [0.0, 0.0, 1.0])
    pin = LinkJoint("pin", "hinge", "cart", "bob", se3.inv(cart.T) @ F, se3.inv(bob.T) @ F,
                    lower=limits[0], upper=limits[1])
    return Linkage((cart, bob), (pin,), driver="cart"), F


@pytest.mark.parametrize("limits", [((), ()), ((-0.6,), (0.6,))])
def test_a_driver_keyed_still_holds_its_joints_like_the_world(limits):
    """The driver has zero inverse mass: keyed still, it is the world to the rest (its
    columns add nothing to the solves: the same frames up to round-off)."""
    from core.linkage import Linkage

    lk, F = _cart_and_pendulum(limits)
    motion = simulate_linkage(lk, 1.0, 24, driver_poses=np.array([lk.bodies[0].T] * 25))
    pin = dataclasses.replace(lk.joints[0], body1="", frame1=F)
    alone = simulate_linkage(Linkage(lk.bodies[1:], (pin,)), 1.0, 24)
    assert motion.solver == alone.solver == ("couplings" if limits[0] else "faure")
    np.testing.assert_allclose(motion.poses[:, 1], alone.poses[:, 0], atol=ON_KEYS_TOL)
    assert motion.engagements == alone.engagements
    assert np.ptp(alone.poses[:, 0, 2, 3]) > 0.1                       # it swings


def test_a_moving_driver_carries_a_limited_pendulum_within_its_stop():
    lk, _ = _cart_and_pendulum(((-0.6,), (0.6,)))
    t = np.arange(25) / 24
    keys = np.array([se3.from_rp(np.eye(3), [0.8 * np.sin(3 * x), 0.0, 1.0]) for x in t])
    motion = simulate_linkage(lk, 1.0, 24, driver_poses=keys)
    assert motion.solver == "couplings" and motion.errors.max() < 1e-9
    np.testing.assert_allclose(motion.poses[:, 0], keys, atol=ON_KEYS_TOL)
    assert motion.violations.max() <= motion.violation_tol and motion.engagements
    rel = se3.inv(motion.poses[:, 0]) @ motion.poses[:, 1]
    # the hinge's turn about y from where it was described (the bob turned -0.5 about y)
    turn = np.arctan2(rel[:, 0, 2], rel[:, 0, 0]) + 0.5
    assert np.abs(turn).max() <= 0.6 + motion.violation_tol
    assert np.abs(turn).max() >= 0.6                             # pushed into a stop


def test_driver_poses_are_checked():
    lk, _ = four_bar()
    keys = np.array([lk.bodies[0].T] * 25)
    with pytest.raises(InvalidInputError, match="no driver"):
        simulate_linkage(dataclasses.replace(lk, driver=""), 1.0, 24, driver_poses=keys)
    with pytest.raises(InvalidInputError, match="F >= 25"):
        simulate_linkage(lk, 1.0, 24, driver_poses=keys[:10])


def test_a_rod_hangs_from_a_spline_curve_by_a_point_free_to_turn():
    """curve_point: the rod's top (0.3 m above its centre) stays on the curve's path while
    the rod swings (its orientation changes, unlike the curve kind's bead)."""
    from core.joints.spline_curve import SplineCurveJoint
    from core.linkage import LinkBody, Linkage

    points = [[0.0, 0, 1.0], [0.5, 0, 0.55], [1.0, 0, 0.35], [1.5, 0, 0.45], [2.0, 0, 0.9]]
    frames = np.array([se3.from_rp(np.eye(3), p) for p in points])
    curve = SplineCurveJoint(frames)
    top = se3.from_rp(np.eye(3), [0.0, 0.0, 0.3])
    start = curve.transform(np.array([curve.lower[0] + 0.3 * (curve.upper[0] - curve.lower[0])]))
    rod = LinkBody("rod", start @ se3.inv(top), 0.2, np.diag([0.01, 0.01, 0.001]))
    wire = LinkJoint("wire", "curve_point", "", "rod", np.eye(4), top, curve=frames)
    motion = simulate_linkage(Linkage((rod,), (wire,)), 1.0, 24, substeps=10)
    assert motion.solver == "couplings" and motion.errors.max() < 1e-9
    tips = (motion.poses[:, 0] @ top)[:, :3, 3]
    grid = curve.transforms(np.linspace(curve.lower[0], curve.upper[0], 40001)[:, None])[:, :3, 3]
    gap = np.linalg.norm(tips[:, None] - grid[None], axis=-1).min(axis=1)
    assert gap.max() <= np.linalg.norm(np.diff(grid, axis=0), axis=1).max()
    assert np.abs(motion.poses[:, 0, :3, :3] - np.eye(3)).max() > 0.1        # it turned
    assert np.ptp(tips[:, 0]) > 0.1                                           # and slid


def test_a_ball_rolls_in_a_spline_surface_bowl():
    """surface_point: the ball's lowest point stays on the bowl (the distance to the
    surface, from the coupling's own nearest-point search, below the reported error) and
    it moves across both of the surface's directions."""
    from core.linkage import LinkBody, Linkage, point_surface
    from core.maximal.couplings import SplinePointCoupling

    u, v = np.meshgrid(np.linspace(-1, 1, 5), np.linspace(-1, 1, 6), indexing="ij")
    grid = np.stack([u, v, 0.3 * (u ** 2 + v ** 2)], -1)
    surface = point_surface(grid)
    contact = se3.from_rp(np.eye(3), [0.0, 0.0, -0.1])
    start = surface.transforms(np.array([[0.3, 1.1]]))[0]
    ball = LinkBody("ball", start @ se3.inv(contact), 0.5, 0.002 * np.eye(3))
    bowl = LinkJoint("bowl", "surface_point", "", "ball", np.eye(4), contact, surface=grid)
    motion = simulate_linkage(Linkage((ball,), (bowl,)), 2.0, 24, substeps=10)
    assert motion.solver == "couplings" and motion.errors.max() < 1e-9
    assert motion.violations.max() == 0.0                # inside the surface's range
    near = SplinePointCoupling(surface)
    points = (motion.poses[:, 0] @ contact)[:, :3, 3]
    for x in points:
        TGD, _ = near.project_to_constraints(se3.from_rp(np.eye(3), x))
        assert np.linalg.norm(TGD[:3, 3] - x) <= 1e-9
    assert min(np.ptp(points[:, 0]), np.ptp(points[:, 1])) > 0.1


def test_point_joints_need_their_path():
    from core.linkage import LinkBody, Linkage

    body = LinkBody("b", np.eye(4), 1.0, np.eye(3))
    for kind, kw in (("curve_point", {}), ("surface_point", {"surface": np.zeros((3, 4, 3))})):
        with pytest.raises(InvalidInputError, match="needs"):
            check_linkage(Linkage((body,), (LinkJoint("j", kind, "", "b", np.eye(4), np.eye(4),
                                                      **kw),)))


def test_dense_and_sparse_assembly_give_the_same_poses():
    """Faure's correction with dense matrices (small systems) and with sparse ones: the same
    frames, each closed to TOL (positions then agree to CLOSED_FORM_TOL)."""
    lift, _ = scissor_lift()
    runs = []
    for dense in (True, False):
        live = LiveAssembly(lift, tol=TOL, dense=dense)
        P, out = lift.poses, []
        for x in -0.3 * np.sin(np.pi * np.arange(1, 25) / 24):
            res = live.solve(live.driver_pose(x), P)
            assert res.converged
            P = res.poses
            out.append(P)
        runs.append(np.array(out))
    np.testing.assert_allclose(runs[0], runs[1], atol=CLOSED_FORM_TOL)


def test_limits_mix_with_lines_and_sliders_in_one_linkage():
    """A released four-bar (hinges and a line joint) with a stop on its crank, and the
    scissor lift (slider, hinges, lines, a plane) with a stop on its sliding block: the
    couplings solver takes every kind, the loops stay closed and the stops hold within the
    solver's tolerance."""
    bar, _ = four_bar(driven=False)
    crank = dataclasses.replace(bar.joints[0], lower=(-0.3,), upper=(0.3,))
    motion = simulate_linkage(dataclasses.replace(bar, joints=(crank,) + bar.joints[1:]),
                              1.0, 24, substeps=10)
    assert motion.solver == "couplings" and motion.errors.max() < 1e-9
    turn = np.arctan2(motion.poses[:, 0, 2, 0], motion.poses[:, 0, 0, 0]) - 0.6  # crank x
    assert np.abs(turn).max() <= 0.3 + motion.violation_tol
    assert motion.engagements and motion.violations.max() <= motion.violation_tol
    lift, _ = scissor_lift()
    drive = dataclasses.replace(lift.joints[0], lower=(-0.02,), upper=(0.02,))
    motion = simulate_linkage(dataclasses.replace(lift, joints=(drive,) + lift.joints[1:],
                                                  drive_joint=""), 1.0, 24, substeps=10)
    assert motion.solver == "couplings" and motion.errors.max() < 1e-9
    travel = motion.poses[:, 0, 0, 3] - lift.bodies[0].T[0, 3]
    assert np.abs(travel).max() <= 0.02 + motion.violation_tol
    assert motion.engagements == {"drive/5": 1}           # the spring holds it at the stop


def test_a_slotted_linkage_is_assembled_live_by_the_couplings():
    """A crank (the driver, hinged to the world) whose pin rides a slot along a rocker held
    at its pivot on the hinge axis (a point-on-line joint, so the plane loop repeats no
    constraint): the couplings' position correction closes it live, and the rocker points
    from its pivot at the pin, the closed form (its x axis along the pin's direction, to the
    loop's condition times TOL)."""
    from core.linkage import LinkBody, Linkage

    y_axis = so3.exp(np.array([-np.pi / 2, 0.0, 0.0]))      # z along world y
    pin, pivot = np.array([0.3, 0.0, 0.0]), np.array([1.0, 0.0, 0.0])
    crank = LinkBody("crank", se3.from_rp(np.eye(3), 0.5 * pin), 1.0, 0.01 * np.eye(3))
    rocker = LinkBody("rocker", se3.from_rp(np.eye(3), [0.5, 0.0, 0.0]), 1.0, 0.01 * np.eye(3))

    def frame(body, at):
        return se3.inv(body.T) @ se3.from_rp(y_axis, at)
    joints = (LinkJoint("ground", "hinge", "", "crank", se3.from_rp(y_axis, np.zeros(3)),
                        frame(crank, np.zeros(3))),
              LinkJoint("pivot", "line", "", "rocker", se3.from_rp(y_axis, pivot),
                        frame(rocker, pivot)),
              LinkJoint("slot", "slotted", "rocker", "crank", frame(rocker, pin),
                        frame(crank, pin)))
    live = LiveAssembly(Linkage((crank, rocker), joints, driver="crank"), tol=TOL)
    assert live.system.solver == "couplings"
    P = live.linkage.poses
    for theta in np.linspace(0.0, 1.2, 13)[1:]:
        T = se3.from_rp(so3.exp(np.array([0.0, -theta, 0.0])), np.zeros(3)) @ crank.T
        res = live.solve(T, P)
        assert res.converged and res.error <= TOL
        P = res.poses
        d = (T @ se3.inv(crank.T) @ np.append(pin, 1.0))[:3] - pivot
        assert np.linalg.norm(np.cross(P[1, :3, 0], d / np.linalg.norm(d))) <= CLOSED_FORM_TOL
