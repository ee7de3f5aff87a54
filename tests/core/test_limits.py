"""Joint limits: constraint values and gradients, impulses with restitution, the anti-chattering
engagement rules of seed 002 section 4.10.2, and falling chains at 60 Hz x 10 substeps that
never tunnel through coordinate limits or reach cones."""

import numpy as np
import pytest

from core import backend, expcoords
from core.errors import InvalidInputError
from core.integrators import Integrator
from core.joints.lower_pairs import Prismatic, Revolute
from core.joints.spherical import Spherical
from core.lie import se3
from core.limits import (CoordinateLimit, EllipticCone, LimitSolver, ReachCone, TwistLimit,
                         limits_from_model)
from core.model import Model


def revolute_chain(n=4, lower=-0.5, upper=0.5):
    m = Model(gravity=(0.0, 0.0, -9.81))
    for i in range(n):
        m.add_body(f"l{i}", i - 1, Revolute((0.0, 1.0, 0.0), lower=None if i == 0 else lower,
                                            upper=None if i == 0 else upper),
                   None if i == 0 else se3.from_rp(np.eye(3), [0.3, 0.0, 0.0]),
                   1.0, [0.15, 0.0, 0.0], np.diag([1e-3, 8e-3, 8e-3]))
    return m


def ball_chain(n=3):
    m = Model(gravity=(0.0, 0.0, -9.81))
    for i in range(n):
        m.add_body(f"b{i}", i - 1, Spherical(),
                   None if i == 0 else se3.from_rp(np.eye(3), [0.3, 0.0, 0.0]),
                   1.0, [0.15, 0.0, 0.0], np.diag([1e-3, 8e-3, 8e-3]))
    return m


def fd_rows(solver, q, h=1e-7):
    rows = []
    for k in range(len(q)):
        e = np.zeros(len(q))
        e[k] = h
        rows.append((solver.evaluate(q + e)[0] - solver.evaluate(q - e)[0]) / (2 * h))
    return np.array(rows).T


def test_constraint_gradients_match_finite_differences():
    m = ball_chain(2)
    lims = [ReachCone(1, (1.0, 0.0, 0.0), 0.7),
            EllipticCone(0, (1.0, 0.0, 0.0), (0.0, 0.0, 1.0), 0.5, 0.9),
            TwistLimit(1, (1.0, 0.0, 0.0), -0.4, 0.6),
            CoordinateLimit(0, -0.3, 0.2, index=2)]
    solver = LimitSolver(m, lims)
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = rng.normal(size=6) * 0.6
        d, N = solver.evaluate(q)
        assert d.shape == (6,) and N.shape == (6, 6)
        np.testing.assert_allclose(N, fd_rows(solver, q), atol=1e-6)
    r = np.array([0.2, -0.3, 0.1])
    np.testing.assert_allclose(lims[0].value(r), expcoords.reach_cone_value(r, [1, 0, 0], 0.7))


def test_limits_from_model_reads_joint_bounds():
    lims = limits_from_model(revolute_chain(3, -0.2, 0.4))
    assert [(l.body, l.lower, l.upper) for l in lims] == [(1, -0.2, 0.4), (2, -0.2, 0.4)]
    assert all(l.rotary for l in lims)
    m = Model()
    m.add_body("slider", -1, Prismatic((1.0, 0.0, 0.0), lower=-0.1, upper=0.1))
    (lim,) = limits_from_model(m)
    assert not lim.rotary
    solver = LimitSolver(m, [lim], rotary_tol=1e-3, linear_tol=1e-5)
    assert solver.tol.tolist() == [1e-5, 1e-5]


def test_engagement_rules_deadband_and_two_steps():
    m = revolute_chain(2, -0.5, 0.5)
    solver = LimitSolver(m, limits_from_model(m), rotary_tol=1e-3)
    d = m.create_data()
    # 1. inside the region: engage, push out to the deadband (left p_tol inside), stop the
    #    approach
    q, v = solver.apply(d, np.array([0.0, 0.55]), np.array([0.0, 1.0]))
    assert solver.engaged.tolist() == [False, True]
    np.testing.assert_allclose(q[1], 0.5 + 1e-3, atol=1e-9)
    assert v[1] <= 1e-12
    # 2. just outside the region and moving away, but engaged for one step only: stays engaged
    q, v = solver.apply(d, np.array([0.0, 0.49]), np.array([0.0, -1.0]))
    assert solver.engaged[1]
    # 3. outside but still approaching (d > 0, d_dot < 0): stays engaged (no chattering)
    q, v = solver.apply(d, np.array([0.0, 0.49]), np.array([0.0, 0.3]))
    assert solver.engaged[1] and v[1] <= 1e-12
    # 4. outside and moving away after >= 2 engaged steps: disengages
    q, v = solver.apply(d, np.array([0.0, 0.49]), np.array([0.0, -0.3]))
    assert not solver.engaged[1]
    assert v[1] == -0.3


def test_restitution_reverses_the_approach_speed():
    m = Model(gravity=(0.0, 0.0, 0.0))
    m.add_body("p", -1, Revolute((0.0, 0.0, 1.0), lower=-1.0, upper=0.2), None, 1.0,
               [0.2, 0.0, 0.0], np.diag([1e-3, 1e-2, 1e-2]))
    d = m.create_data()
    solver = LimitSolver(m, limits_from_model(m), restitution=0.5)
    q, v = solver.apply(d, np.array([0.21]), np.array([2.0]))
    np.testing.assert_allclose(v, [-1.0])


@pytest.mark.parametrize("method", ["semi_implicit", "rk4"])
def test_falling_chain_never_tunnels_through_coordinate_limits(method):
    m = revolute_chain(4, -0.5, 0.5)
    solver = LimitSolver(m, limits_from_model(m), restitution=0.2, rotary_tol=1e-3)
    integ = Integrator(m, 1.0 / 60.0, substeps=10, method=method, limits=solver)
    q, v = np.zeros(m.nq), np.zeros(m.nv)
    v[0] = -3.0                                       # whip the chain down
    worst, hit = 0.0, False
    for k in range(120):
        q, v = integ.step(k / 60.0, q, v)
        worst = max(worst, float(np.max(np.abs(q[1:]) - 0.5)))
        hit |= bool(solver.engaged.any())
    assert hit
    assert worst <= 1.5e-3             # the deadband (1e-3) plus the Gauss-Seidel residual


def test_falling_ball_chain_stays_in_its_reach_cones():
    m = ball_chain(3)
    cones = [ReachCone(i, (1.0, 0.0, 0.0), 0.5) for i in (1, 2)]
    twist = [TwistLimit(i, (1.0, 0.0, 0.0), -0.3, 0.3) for i in (1, 2)]
    solver = LimitSolver(m, cones + twist, rotary_tol=1e-3)
    integ = Integrator(m, 1.0 / 60.0, substeps=10, method="semi_implicit", limits=solver)
    q, v = np.zeros(m.nq), np.zeros(m.nv)
    v[:3] = [2.0, -1.0, 0.5]                           # root swings and twists
    worst_cone, worst_twist, hit = 0.0, 0.0, False
    for k in range(90):
        q, v = integ.step(k / 60.0, q, v)
        for c in cones:
            worst_cone = min(worst_cone, float(c.value(q[3 * c.body:3 * c.body + 3])))
        for t in twist:
            tw = float(t.value(q[3 * t.body:3 * t.body + 3]))
            worst_twist = max(worst_twist, abs(tw) - 0.3)
        hit |= bool(solver.engaged[:2].any())
    assert hit
    assert worst_cone >= -3e-3                         # deadband 1e-3 plus linearization
    assert worst_twist <= 3e-3


@pytest.mark.skipif(not backend.available(), reason="numba does not import")
def test_the_compiled_projection_of_coupled_limits_equals_the_numpy_one():
    """A reach cone and a twist limit on each joint of a ball chain, listed apart (the cones
    first), a pose outside most of them: the compiled projection, whose Gauss-Seidel sums
    each row over the constraints sharing its coordinates, against the numpy projection on
    the dense ``N N^T``. Both stop once a sweep changes no impulse by more than 1e-10 of the
    largest; the three rows of a joint contract by well under 0.99 a sweep, so where the two
    stop a sweep apart their results differ by at most 1e-8 of the projection's size, and
    rounding adds a few dozen EPS of q. A row summed without the others of its joint moves
    the pose by a fraction of the projection."""
    m = ball_chain(4)
    cones = [ReachCone(i, (1.0, 0.0, 0.0), 0.4) for i in (1, 2, 3)]
    twists = [TwistLimit(i, (1.0, 0.0, 0.0), -0.2, 0.3) for i in (1, 2, 3)]
    rng = np.random.default_rng(11)
    q = np.concatenate([rng.normal(size=3)] + [[0.9, 0.3, -0.5] + 0.1 * rng.normal(size=3)
                                               for _ in range(3)])
    out = {}
    previous = backend.active()
    try:
        for name in ("numpy", "numba"):
            backend.use(name)
            solver = LimitSolver(m, cones + twists)
            d0 = solver.evaluate(q)[0]
            held, d, _ = solver.hold(q)
            out[name] = held
    finally:
        backend.use(previous)
    assert np.sum(d0 + solver.tol < 0) >= 5 and np.all(d + solver.tol >= -1e-9)
    size = np.abs(out["numpy"] - q).max()
    np.testing.assert_allclose(out["numba"], out["numpy"], rtol=0,
                               atol=1e-8 * size + 50 * np.finfo(float).eps * np.abs(q).max())


def test_elliptic_cone_holds_a_pushed_ball():
    m = Model(gravity=(0.0, 0.0, 0.0))
    m.add_body("ball", -1, Spherical(), None, 1.0, [0.3, 0.0, 0.0], np.diag([1e-3, 1e-2, 1e-2]))
    cone = EllipticCone(0, (1.0, 0.0, 0.0), (0.0, 0.0, 1.0), 0.3, 0.8)
    solver = LimitSolver(m, [cone])
    integ = Integrator(m, 1.0 / 60.0, substeps=10, method="rk4", limits=solver)
    q, v = np.zeros(3), np.array([0.0, 2.0, 2.0])
    worst = 1.0
    for k in range(60):
        q, v = integ.step(k / 60.0, q, v)
        worst = min(worst, float(cone.value(q)))
    assert worst >= -3e-3 and solver.engaged.any()


def test_limit_validation():
    m = revolute_chain(2)
    with pytest.raises(InvalidInputError, match="lower <= upper"):
        CoordinateLimit(0, 1.0, 0.0)
    with pytest.raises(InvalidInputError, match="Spherical"):
        LimitSolver(m, [ReachCone(0, (1, 0, 0), 0.5)])
    with pytest.raises(InvalidInputError, match="restitution"):
        LimitSolver(m, [], restitution=2.0)
    with pytest.raises(InvalidInputError, match="index"):
        LimitSolver(m, [CoordinateLimit(0, -1, 1, index=1)])
    with pytest.raises(InvalidInputError, match="twist"):
        TwistLimit(0, (1, 0, 0), -4.0, 0.0)
