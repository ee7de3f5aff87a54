"""Inverse kinematics on the Fig. 3 leg (spherical hip, fitted gait2392 spline knee,
revolute ankle) by damped least squares with analytic Jacobians."""

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.fitting.ik import Chain, leg_chain, solve_ik
from core.joints.lower_pairs import Revolute
from core.joints.spherical import Spherical
from core.lie import se3, so3


@pytest.fixture(scope="module")
def leg():
    return leg_chain()


def _random_q(chain, rng):
    q = rng.uniform(chain.lower.clip(-1, 1), chain.upper.clip(-1, 1))
    q[:3] = rng.normal(size=3) * 0.6
    return q


def test_chain_jacobian_matches_finite_differences(leg):
    rng = np.random.default_rng(3)
    configurations = [np.zeros(5), np.array([1e-8, -1e-8, 1e-8, -1e-8, 1e-8])]
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    configurations.append(np.concatenate([(np.pi - 1e-4) * axis, [-1.0, 0.2]]))  # hip near pi
    configurations += [np.minimum(_random_q(leg, rng), [9, 9, 9, 0.1, 9]) for _ in range(3)]
    for q in configurations:
        T, J = leg.forward(q)
        eps = 1e-6
        for i in range(leg.nq):
            dq = np.zeros(leg.nq)
            dq[i] = eps
            fd = (se3.log(se3.inv(T) @ leg.pose(q + dq))
                  - se3.log(se3.inv(T) @ leg.pose(q - dq))) / (2 * eps)
            np.testing.assert_allclose(J[:, i], fd, atol=1e-7)


def test_reachable_targets_met_within_20_iterations(leg):
    rng = np.random.default_rng(0)
    for _ in range(25):
        q_true = _random_q(leg, rng)
        target = leg.pose(q_true)
        res = solve_ik(leg, target)
        assert res.status == "converged", (q_true, res)
        assert res.iterations <= 20 and res.runs == 1
        assert res.position_error <= 1e-6 and res.rotation_error <= 1e-4
        T = leg.pose(res.q)
        assert np.linalg.norm(T[:3, 3] - target[:3, 3]) <= 1e-6
        assert np.linalg.norm(so3.log(T[:3, :3].T @ target[:3, :3])) <= 1e-4
        assert np.all(res.q >= leg.lower) and np.all(res.q <= leg.upper)
        assert np.all(np.diff(res.error_trace) < 0.0)


def test_unreachable_target_returns_closest_pose_and_status(leg):
    target = leg.pose(np.zeros(5))
    target[:3, 3] = [0.3, -1.2, 0.2]  # beyond the leg's reach
    res = solve_ik(leg, target, max_iterations=100)
    assert res.status == "unreachable"
    assert np.all(res.q >= leg.lower) and np.all(res.q <= leg.upper)
    # no random admissible configuration is closer in the IK metric
    sw = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    best = np.linalg.norm(se3.log(se3.inv(res.pose) @ target) * sw)
    rng = np.random.default_rng(5)
    for _ in range(300):
        q = _random_q(leg, rng)
        q[:3] = rng.normal(size=3)
        d = np.linalg.norm(se3.log(se3.inv(leg.pose(q)) @ target) * sw)
        assert d >= best - 1e-9


def test_joint_limits_hold_for_targets_beyond_the_range(leg):
    # the pose at coordinates beyond the knee and ankle limits (the joints extrapolate there)
    q = np.array([0.2, -0.1, 0.3, 0.6, 0.9])
    target = leg.pose(q)
    res = solve_ik(leg, target, max_iterations=60)
    assert res.status in ("unreachable", "max_iterations")
    assert np.all(res.q >= leg.lower) and np.all(res.q <= leg.upper)
    assert res.q[3] == leg.upper[3] and res.q[4] == leg.upper[4]


def test_revolute_chain_and_bad_inputs():
    chain = Chain([Revolute((0, 0, 1), lower=-1.0, upper=1.0), Revolute((0, 0, 1))],
                  [np.eye(4), se3.exp([0, 0, 0, 1.0, 0, 0])], tip=se3.exp([0, 0, 0, 1.0, 0, 0]))
    target = chain.pose([0.3, -0.5])
    res = solve_ik(chain, target)
    assert res.converged and res.position_error <= 1e-6
    with pytest.raises(InvalidInputError, match="placements"):
        Chain([Spherical()], [np.eye(4), np.eye(4)])
    with pytest.raises(InvalidInputError, match="target"):
        solve_ik(chain, np.eye(3))
    with pytest.raises(InvalidInputError, match="max_iterations"):
        solve_ik(chain, target, max_iterations=0)
    with pytest.raises(InvalidInputError, match="finite"):
        chain.forward([np.nan, 0.0])


def test_joint_coordinates_recover_the_coordinates_of_poses_on_the_joint():
    from core.fitting.ik import joint_coordinates
    from core.reference.opensim import KneeGait2392
    from core.fitting.curve import fit_spline_curve
    from core.fitting.samples import JointSamples

    d = KneeGait2392().samples()
    knee = fit_spline_curve(JointSamples(d["T_femur_tibia"], d["q"]), n_frames=8).joint
    keyed = np.array([-0.1, -0.4, -1.0, -1.6, -1.2, -0.3])
    q, results = joint_coordinates(knee, knee.transforms(keyed[:, None]))
    # solve_ik's default tolerances: 1e-6 m and 1e-4 rad at each pose
    assert all(r.converged for r in results)
    assert max(r.position_error for r in results) <= 1e-6
    np.testing.assert_allclose(knee.transforms(q)[:, :3, 3],
                               knee.transforms(keyed[:, None])[:, :3, 3], rtol=0, atol=1e-6)
    off = knee.transforms(keyed[:1, None])
    off[0, :3, 3] += [0.0, 0.0, 0.02]  # 20 mm out of the knee's plane: the closest pose
    _, far = joint_coordinates(knee, off)
    assert far[0].status == "unreachable" and far[0].position_error == pytest.approx(0.02, abs=1e-4)
    with pytest.raises(InvalidInputError, match=r"\(N, 4, 4\)"):
        joint_coordinates(knee, np.eye(4))
