"""Contacts: the narrow phase against closed forms and brute force, the broad phase against all
pairs, contact Jacobians against finite differences, and simulations: a bouncing sphere, a
box on an incline, a capsule chain settling on the ground (against MuJoCo), a chain with
reach cones falling onto the ground; bad input."""

import numpy as np
import pytest
from scipy.linalg import cho_solve

from core.contacts import (Box, Capsule, ContactSolver, ConvexHull, MovingCollider, Plane,
                           Sphere, StaticCollider)
from core import backend, dynamics
from core.contacts.broad import sweep_and_prune
from core.contacts.narrow import Posed, closest_segments, collide, collide_plane, gjk, sat
from core.contacts.rules import friction_disc
from core.errors import InvalidInputError
from core.integrators import IMPULSE_POSITION, Integrator
from core.joints.spherical import Free
from core.kinematics import update_kinematics
from core.lie import se3, so3
from core.limits import LimitSolver, ReachCone
from core.mechanisms.shapes import box_inertia, sphere_inertia
from core.model import Model
from scripts.benchmarks.contacts import capsule_chain, chain, link_heights, mujoco_capsule_chain

EPS = np.finfo(float).eps
G = 9.81
#: the integrators that step contacts
METHODS = tuple(IMPULSE_POSITION)


def pose(rng, spread=0.3):
    return se3.from_rp(so3.exp(rng.normal(size=3)), rng.normal(size=3) * spread)


def box_distance(points, half):
    """Distance of points (k, 3) in a box's frame from the box (0 inside)."""
    return np.linalg.norm(np.maximum(np.abs(points) - half, 0.0), axis=1)


# -- narrow phase ---------------------------------------------------------------------------

def test_segment_closest_points_match_a_dense_search():
    rng = np.random.default_rng(1)
    s = np.linspace(0.0, 1.0, 801)
    for _ in range(20):
        p1, q1, p2, q2 = rng.normal(size=(4, 3))
        _, _, c1, c2 = closest_segments(p1, q1, p2, q2)
        A = p1 + s[:, None] * (q1 - p1)
        B = p2 + s[:, None] * (q2 - p2)
        brute = np.linalg.norm(A[:, None] - B[None], axis=2).min()
        d = np.linalg.norm(c2 - c1)
        step = np.linalg.norm(q1 - p1) + np.linalg.norm(q2 - p2)
        # the grid's minimum exceeds the true one by at most half a grid step along each
        assert d <= brute + 1e-12 and brute - d <= step / 800


@pytest.mark.parametrize("pair", ["sphere-sphere", "sphere-capsule", "capsule-capsule"])
def test_rounded_pairs_match_closed_forms(pair):
    rng = np.random.default_rng(2)
    make = {"sphere": lambda: Sphere(rng.uniform(0.05, 0.2)),
            "capsule": lambda: Capsule(rng.uniform(0.05, 0.2), (-0.2, 0, 0), (0.2, 0, 0))}
    a, b = pair.split("-")
    s = np.linspace(0.0, 1.0, 2001)
    for _ in range(20):
        A, B = Posed(make[a](), pose(rng)), Posed(make[b](), pose(rng))
        out = collide(A, B, margin=10.0)
        sep = min(c[2] for c in out)
        PA = A.v[0] + s[:, None] * (A.v[-1] - A.v[0])
        PB = B.v[0] + s[:, None] * (B.v[-1] - B.v[0])
        brute = np.linalg.norm(PA[:, None] - PB[None], axis=2).min() - A.radius - B.radius
        assert abs(sep - brute) <= 0.4 / 2000 + 1e-12
        p, n, sp, _ = out[0]
        assert abs(np.linalg.norm(n) - 1.0) < 1e-12


@pytest.mark.parametrize("kind", ["sphere", "capsule"])
def test_rounded_shapes_against_a_box_match_brute_force(kind):
    """Separation of a sphere/capsule from a box: the box's point distance over a dense
    sampling of the core (apart), and the normal moves them apart by exactly the depth
    (overlapping)."""
    rng = np.random.default_rng(3)
    half = np.array([0.3, 0.2, 0.1])
    box = Posed(Box(half), np.eye(4))
    s = np.linspace(0.0, 1.0, 4001)
    for _ in range(30):
        T = pose(rng, 0.4)
        shape = Sphere(0.1) if kind == "sphere" else Capsule(0.08, (-0.25, 0, 0), (0.25, 0, 0))
        X = Posed(shape, T)
        out = collide(box, X, margin=10.0)
        sep = min(c[2] for c in out)
        core = X.v[0] + s[:, None] * (X.v[-1] - X.v[0])
        dist = box_distance(core, half).min()
        if dist > 1e-3:
            assert abs(sep - (dist - X.radius)) <= 0.5 / 4000 + 1e-9
        else:
            n = out[int(np.argmin([c[2] for c in out]))][1]
            moved = Posed(shape, se3.from_rp(T[:3, :3], T[:3, 3] + n * (-sep - X.radius)))
            d, _, _ = gjk(box.v, moved.v)
            assert d <= 1e-6 + 1e-9
        assert all(abs(np.linalg.norm(c[1]) - 1) < 1e-12 for c in out)


def test_box_box_depth_is_the_least_separating_translation():
    """SAT's depth and normal: moving B by the depth along the normal separates the boxes
    (GJK distance > 0), no random direction separates them with less, and apart boxes are at
    least SAT's separation apart."""
    rng = np.random.default_rng(4)
    A = Posed(Box([0.3, 0.2, 0.15]), np.eye(4))
    shape = Box([0.2, 0.25, 0.1])
    for _ in range(20):
        T = pose(rng, 0.15)
        B = Posed(shape, T)
        depth, n, _ = sat(A, B)
        out = collide(A, B, margin=0.0)
        if depth <= 0.0:
            assert gjk(A.v, B.v)[0] >= -depth - 1e-12 and not out
            continue
        # the manifold's points are no deeper than the boxes overlap
        assert out and min(c[2] for c in out) >= -depth - 1e-12
        grow = lambda x: Posed(shape, se3.from_rp(T[:3, :3], T[:3, 3] + x))
        assert gjk(A.v, grow(n * depth * (1 + 1e-6)).v)[0] > 0.0
        assert gjk(A.v, grow(n * depth * (1 - 1e-3)).v)[0] == 0.0
        for u in rng.normal(size=(50, 3)):
            u /= np.linalg.norm(u)
            assert gjk(A.v, grow(u * depth * (1 - 1e-3)).v)[0] == 0.0


def test_box_on_box_gives_a_manifold_of_its_clipped_face():
    A = Posed(Box([0.5, 0.5, 0.5]), np.eye(4))
    B = Posed(Box([0.2, 0.2, 0.2]), se3.from_rp(np.eye(3), [0.1, 0.0, 0.69]))
    out = collide(A, B, margin=0.05)
    pts = np.array([c[0] for c in out])
    assert len(out) == 4
    np.testing.assert_allclose([c[2] for c in out], -0.01, atol=1e-12)
    np.testing.assert_allclose(np.sort(pts[:, 0]), [-0.1, -0.1, 0.3, 0.3], atol=1e-12)
    # a box hanging over the edge: the manifold is clipped to the lower face
    B = Posed(Box([0.2, 0.2, 0.2]), se3.from_rp(np.eye(3), [0.6, 0.0, 0.69]))
    pts = np.array([c[0] for c in collide(A, B, margin=0.05)])
    assert len(pts) == 4 and pts[:, 0].max() <= 0.5 + 1e-12


def test_hull_and_box_agree_and_planes_take_every_corner():
    rng = np.random.default_rng(5)
    half = np.array([0.3, 0.2, 0.1])
    box = Box(half)
    hull = ConvexHull(box.vertices)
    assert len(hull.faces) == 6 and hull.note == ""
    other = Capsule(0.05, (-0.2, 0, 0), (0.2, 0, 0))
    for _ in range(20):
        T, U = pose(rng, 0.3), pose(rng, 0.3)
        a = collide(Posed(box, T), Posed(other, U), margin=10.0)
        b = collide(Posed(hull, T), Posed(other, U), margin=10.0)
        assert abs(min(c[2] for c in a) - min(c[2] for c in b)) < 1e-9
    plane = Plane(0.05, normal=(0.0, 0.0, 1.0))
    T = pose(rng, 0.05)
    X = Posed(hull, T)
    seps = sorted(c[2] for c in collide_plane(plane, X, margin=10.0))
    np.testing.assert_allclose(seps, np.sort(X.v[:, 2] - 0.05), atol=1e-12)


def test_sweep_and_prune_finds_exactly_the_overlapping_boxes():
    rng = np.random.default_rng(6)
    lo = rng.uniform(0, 10, (300, 3))
    hi = lo + rng.uniform(0.1, 1.5, (300, 3))
    got = {tuple(p) for p in sweep_and_prune(lo, hi).tolist()}
    over = np.all((lo[:, None] <= hi[None]) & (hi[:, None] >= lo[None]), axis=2)
    want = {(i, j) for i, j in zip(*np.nonzero(np.triu(over, 1)))}
    assert got == want


# -- contact Jacobians ----------------------------------------------------------------------

def test_contact_rows_match_finite_differences_of_the_contact_points():
    """The rows of a point fixed to a body are ``d . dx/dt``: against central differences of
    the point's world position along v (q_dot = v), at the neutral pose, at a tiny
    rotation (1e-8) and at random poses."""
    m, shapes = chain(4)
    solver = ContactSolver(m, shapes, [Plane()])
    data = m.create_data()
    rng = np.random.default_rng(7)
    p_local = np.array([0.2, 0.05, -0.03])
    for q in (m.neutral(), np.full(m.nq, 1e-8), rng.normal(size=m.nq) * 0.7):
        v = rng.normal(size=m.nv)
        update_kinematics(m, data, q)
        body = np.array([0, 2, 3])
        P = data.oMi[body, :3, :3] @ p_local + data.oMi[body, :3, 3]
        D = rng.normal(size=(3, 3, 3))
        rows = solver._rows(data, body, P, D)

        def points(x):
            update_kinematics(m, data, x)
            return data.oMi[body, :3, :3] @ p_local + data.oMi[body, :3, 3]
        eps = 1e-6
        fd = (points(q + eps * v) - points(q - eps * v)) / (2 * eps)
        # central differences: truncation ~ eps^2 |x'''| plus rounding ~ EPS |x| / eps
        tol = 1e-9 * np.abs(fd).max() + 1e2 * EPS / eps
        np.testing.assert_allclose(rows @ v, np.einsum("cdk,ck->cd", D, fd), atol=tol)


@pytest.mark.skipif(not backend.available(), reason="numba does not import")
def test_the_compiled_contact_rows_equal_the_numpy_ones():
    """:func:`core.compiled.contacts.contact_rows` (frames and rows from the compiled
    kinematics) against ``tangent_basis`` and ``ContactSolver._rows`` after
    ``update_kinematics``, on a tree of free, ball, hinge and slider joints: contacts between
    bodies and with the world, normals along the axes (the least aligned axis ties) and
    random. Tolerance: each entry is a few dozen products and sums of unit-size rotations,
    positions (up to about a metre) and directions, per ancestor coordinate, so 50 EPS of
    the rows' scale."""
    from core.compiled import dynamics as compiled_dynamics
    from core.compiled.contacts import contact_rows
    from core.contacts.solver import tangent_basis
    from core.joints.lower_pairs import Prismatic, Revolute
    from core.joints.spherical import Spherical

    rng = np.random.default_rng(3)
    m = Model()
    for name, parent, joint in (("root", -1, Free()), ("ball", 0, Spherical()),
                                ("hinge", 1, Revolute(rng.normal(size=3))),
                                ("slider", 0, Prismatic(rng.normal(size=3))),
                                ("tip", 3, Spherical())):
        m.add_body(name, parent, joint, pose(rng), 1.0, rng.normal(size=3) * 0.1, np.eye(3))
    previous = backend.use("numba")
    try:
        solver = ContactSolver(m, [(b, Sphere(0.1)) for b in range(m.nbodies)])
        data = m.create_data()
        for q in (m.neutral(), np.full(m.nq, 1e-8), rng.normal(size=m.nq)):
            a_body = np.array([-1, 0, 1, 2, -1, 3, 4, 2])
            b_body = np.array([4, 2, 4, 3, 1, 0, 1, 2])
            P = rng.normal(size=(8, 3))
            n = rng.normal(size=(8, 3))
            n[:3] = [[0.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.0, -1.0, 0.0]]
            n /= np.linalg.norm(n, axis=1, keepdims=True)
            compiled_dynamics.energies(m, data, q, None)
            J, D = np.full((2 + 24, m.nv), np.nan), np.empty((8, 3, 3))
            contact_rows(compiled_dynamics.packed(m).ints, data.buffer, a_body, b_body, P, n, D, J, 2)
            update_kinematics(m, data, q)
            D_np = np.stack([n, *tangent_basis(n)], axis=1)
            rows = solver._rows(data, b_body, P, D_np) - solver._rows(data, a_body, P, D_np)
            np.testing.assert_allclose(D, D_np, rtol=0, atol=4 * EPS)
            assert np.isnan(J[:2]).all()
            np.testing.assert_allclose(J[2:], rows.reshape(24, m.nv), rtol=0,
                                       atol=50 * EPS * np.abs(rows).max())
    finally:
        backend.use(previous)


@pytest.mark.skipif(not backend.available(), reason="numba does not import")
def test_the_point_speed_bound_is_the_same_on_both_backends():
    """The contact solver's bound on the shapes' point speeds (``ContactSolver._pose`` with
    v): from world-frame velocities on numpy, from the compiled kinematics' body-frame
    velocities (:func:`core.compiled.contacts.fastest_point`) on numba; it is a frame-free
    speed, so the two agree to the roundings of the velocity recursion (50 EPS of the
    largest speed), at rest (0) and at random states."""
    m, shapes = chain(5)
    data = m.create_data()
    rng = np.random.default_rng(9)
    for q, v in ((m.neutral(), np.zeros(m.nv)),
                 (rng.normal(size=m.nq), rng.normal(size=m.nv))):
        bounds = []
        previous = backend.active()
        try:
            for name in ("numpy", "numba"):
                backend.use(name)
                bounds.append(ContactSolver(m, shapes, [Plane()])._pose(data, q, v))
        finally:
            backend.use(previous)
        assert abs(bounds[1] - bounds[0]) <= 50 * EPS * bounds[0]


@pytest.mark.skipif(not backend.available(), reason="numba does not import")
def test_the_compiled_contact_impulses_equal_the_numpy_ones(monkeypatch):
    """``ContactSteps.impulses`` (:func:`core.compiled.contacts.contact_solve`) against
    ``ContactSolver.impulses`` on the same contact step (rows, right-hand sides, end gaps,
    dv, the energy change and the Cholesky factor, through ``M^-1 J^T``): a zig-zag capsule
    chain in reach cones lying on the ground (sticking and sliding contacts, self-contacts,
    engaged limit rows), a moving world side and a restitution, both Gauss-Seidels run for
    exactly K sweeps.
    Tolerances: the rows and right-hand sides are a few dozen roundings of unit-size terms
    (50 EPS of their scale); W and M^-1 J^T differ by nv EPS cond(M) of their scale (two
    Cholesky solves). W is singular (more rows than coordinates), so cond(W) bounds nothing;
    instead each Gauss-Seidel row update minimizes the quadratic over the row's convex set, a
    projection in the W-seminorm, which does not enlarge the two runs' difference in that
    norm, the M-norm of their dv. Each of the K sweeps' m row updates adds its roundings and
    W's error, so dv differs by at most ``K m (50 EPS + nv EPS cond M) sqrt(cond M)`` of its
    size in the max-norm. The impulses themselves are not unique (W singular) and are not
    compared; their effect, dv, is."""
    from core.compiled.contact_solver import ContactSteps
    from core.contacts import rules

    K = 40
    monkeypatch.setattr(rules, "PGS_RTOL", 0.0)
    rng = np.random.default_rng(4)
    m, shapes, q0, plane = capsule_chain(6, drop=-0.05)
    q0[6:] += 0.01 * rng.normal(size=m.nq - 6)
    cones = LimitSolver(m, [ReachCone(i, (1.0, 0.0, 0.0), 0.25) for i in range(1, 6)])
    solver = ContactSolver(m, shapes, [Plane(0.0, friction=0.6, restitution=0.5)],
                           limits=cones, self_collision=True, iterations=K)
    data = m.create_data()
    v = 0.3 * rng.normal(size=m.nv)
    v[5] = -1.0                                            # falling onto the ground: bounces
    h = 1e-3
    v1 = v + h * rng.normal(size=m.nv)
    step = h * v1
    previous = backend.use("numba")
    try:
        out = {}
        for name, solve in (("numpy", solver.impulses), ("numba", ContactSteps(solver).impulses)):
            update_kinematics(m, data, q0)
            f = solver.find_contacts(data, 0.0, 0.05)
            d, N, ddot, engaged = cones.engage(q0, v1)
            lim = np.nonzero(d < 0.1)[0]
            nl, nc = len(lim), len(f)
            J, b = np.empty((nl + 3 * nc, m.nv)), np.empty(nl + 3 * nc)
            J[:nl], b[:nl] = N[lim], ddot[lim]
            lam = np.zeros(len(b))
            arrays = (f.a, f.b, f.point, f.normal, f.separation, f.friction, f.restitution,
                      np.tile([0.2, -0.1, 0.05], (nc, 1)))
            fac, dv, gap, kinetic = solve(data, q0, v, v1, step, arrays, J, b, lam, nl, h,
                                          0.5 * h)
            out[name] = J, b, lam, dv, gap, kinetic, cho_solve(fac, J.T)
    finally:
        backend.use(previous)
    J, b, lam, dv, gap, kinetic, Y = out["numpy"]                    # Y = M^-1 J^T
    assert nl >= 2 and nc >= 8 and np.any(lam[nl::3] > 0.0) and np.any(lam[nl::3] == 0.0)
    for x, y in zip(out["numba"][:2], (J, b)):
        np.testing.assert_allclose(x, y, rtol=0, atol=50 * EPS * np.abs(y).max())
    np.testing.assert_allclose(out["numba"][4], gap, rtol=0, atol=50 * EPS * np.abs(b).max())
    M = dynamics.crba(m, data, q0)
    rows = J.shape[0]
    cond = np.linalg.cond(M)
    w_err = m.nv * EPS * cond
    dv_tol = K * rows * (50 * EPS + w_err) * np.sqrt(cond) * np.abs(dv).max()
    np.testing.assert_allclose(out["numba"][6], Y, rtol=0, atol=w_err * np.abs(Y).max())
    np.testing.assert_allclose(out["numba"][3], dv, rtol=0, atol=dv_tol)
    energy = 0.5 * (v1 + dv) @ M @ (v1 + dv)
    assert abs(out["numba"][5] - kinetic) <= EPS * m.nv ** 2 * energy + \
        np.abs(M @ (v1 + dv)).max() * m.nv * dv_tol


@pytest.mark.skipif(not backend.available(), reason="numba does not import")
def test_large_contact_problems_take_the_blas_path_with_the_same_step(monkeypatch):
    """On the numba backend a contact step whose triangular solves and W exceed
    ``COMPILED_SOLVE_WORK`` multiply-adds takes the numpy path (BLAS products, the world
    Jacobian columns computed first); forced both ways on one step of a chain lying on the
    ground, with K Gauss-Seidel sweeps each, the end states agree. The two solves' rounding
    agreement is :func:`test_the_compiled_contact_impulses_equal_the_numpy_ones`'s; here a
    wrong path (rows from stale Jacobian columns) differs in the leading digits, so 1e-6 of
    the step's velocity change (and of its position change, c h dv) separates them."""
    from core.compiled import contact_solver as compiled_solver
    from core.contacts import rules

    K = 40
    monkeypatch.setattr(rules, "PGS_RTOL", 0.0)
    m, shapes, q0, plane = capsule_chain(5, drop=-0.05)
    data = m.create_data()
    rng = np.random.default_rng(6)
    v = 0.2 * rng.normal(size=m.nv)
    h = 1e-3
    q1, v1 = q0 + h * v, v + h * rng.normal(size=m.nv)
    previous = backend.use("numba")
    try:
        solver = ContactSolver(m, shapes, [plane], self_collision=True, iterations=K)
        out = []
        for work in (np.inf, 0.0):
            monkeypatch.setattr(compiled_solver, "COMPILED_SOLVE_WORK", work)
            calls = []
            for name, owner in (("numpy", solver), ("compiled", solver.compiled)):
                monkeypatch.setattr(owner, "impulses", (lambda f, n: lambda *a: calls.append(n)
                                                        or f(*a))(owner.impulses, name))
            solver.reset()
            out.append(solver.apply(data, q0, v, q1, v1, 0.0, h))
            assert calls == ["compiled" if work else "numpy"]
            monkeypatch.undo()
            monkeypatch.setattr(rules, "PGS_RTOL", 0.0)
    finally:
        backend.use(previous)
    assert solver.report().contacts[-1] >= 5
    dv = np.abs(out[0][1] - v1).max()
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=0, atol=1e-6 * dv)
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=0,
                               atol=1e-6 * h * dv + 50 * EPS * np.abs(q1).max())


@pytest.mark.skipif(not backend.available(), reason="numba does not import")
def test_the_compiled_contact_substep_equals_the_reference_glue(monkeypatch):
    """``ContactSolver.apply`` on the numba backend (the glue kernels of
    :mod:`core.compiled.contact_step`) against the reference code of ``apply`` on the same
    backend (the same narrow-phase and impulse kernels), substep by substep from the same
    inputs along a fall of a zig-zag chain in reach cones onto a bouncy ground and a static
    box, with self-collision: end states, warm starts, limit engagement and the report.
    Both Gauss-Seidels run exactly K sweeps. Tolerance: each row update of a Gauss-Seidel on
    ``W = J M^-1 J^T`` (the contact step's, and the position correction's on its normal and
    limit rows) minimizes the quadratic over the row's convex set, a projection in the
    W-seminorm, so it does not enlarge the difference of two runs in that norm, which is the
    M-norm of their ``dv = M^-1 J^T lam``; a sweep of m rows adds a few dozen roundings (50
    EPS) per row to it. After K sweeps the velocities differ by at most ``K m 50 EPS
    sqrt(cond M)`` of the velocity change in the max-norm (W is singular here: more contact
    rows than coordinates, so cond(W) gives no bound), and the positions likewise of their
    change over the substep, plus the roundings of q itself."""
    from core.compiled import contact_step
    from core.compiled.contact_solver import ContactSteps
    from core.contacts import rules

    K = 40
    monkeypatch.setattr(rules, "PGS_RTOL", 0.0)
    m, shapes, q0, plane = capsule_chain(6, drop=0.05)
    cones = [ReachCone(i, (1.0, 0.0, 0.0), 0.3) for i in range(1, 6)]
    box = StaticCollider(Box([0.2, 0.2, 0.05]), se3.from_rp(np.eye(3), [0.9, 0.0, 0.02]))
    world = [Plane(0.0, friction=0.6, restitution=0.4), box]
    previous = backend.use("numba")
    solvers = [ContactSolver(m, shapes, world, limits=LimitSolver(m, cones),
                             self_collision=True, iterations=K) for _ in range(2)]
    backend.use(previous)
    reference, compiled = solvers
    monkeypatch.setattr(reference.compiled, "apply", lambda *a: None)
    conditions, seen = [], {"corrected": 0, "engaged": 0, "contacts": 0}
    solve = ContactSteps.impulses

    def impulses(self, data, q, *rest):                  # rows and cond(M) of each step
        out = solve(self, data, q, *rest)
        conditions.append(len(rest[4]) * np.sqrt(np.linalg.cond(dynamics.crba(m, data, q))))
        return out

    monkeypatch.setattr(ContactSteps, "impulses", impulses)
    finish, moved = contact_step.finish_contacts, []      # whether q left q1 + c h dv

    def finished(*args):
        out = finish(*args)
        moved.append(out[4])
        return out

    monkeypatch.setattr(contact_step, "finish_contacts", finished)
    data = m.create_data()
    apply_reference = reference.apply

    def both(data_, q, v, q1, v1, t, h, weight=1.0):
        expected = apply_reference(data_, q, v, q1, v1, t, h, weight)
        got = compiled.apply(m.create_data(), q, v, q1, v1, t, h, weight)
        assert len(compiled._log) == len(reference._log)
        if reference.touching:
            seen["contacts"] += 1
            seen["corrected"] += moved[-1]
            seen["engaged"] += bool(np.any(reference.limits.engaged))
            scale = K * 50 * EPS * max(conditions[-2:])
            dv = max(np.abs(expected[1] - v1).max(), EPS)
            np.testing.assert_allclose(got[1], expected[1], rtol=0, atol=scale * dv)
            np.testing.assert_allclose(got[0], expected[0], rtol=0,
                                       atol=scale * np.abs(expected[0] - q1).max() +
                                       50 * EPS * np.abs(q1).max())
            np.testing.assert_array_equal(compiled.warm_keys, reference.warm_keys)
            lam_tol = scale * np.abs(reference.warm_lam).max()
            np.testing.assert_allclose(compiled.warm_lam, reference.warm_lam, rtol=0,
                                       atol=lam_tol)
            np.testing.assert_allclose(compiled.warm_limits, reference.warm_limits, rtol=0,
                                       atol=scale * np.abs(reference.warm_limits).max())
            np.testing.assert_array_equal(compiled.limits.engaged, reference.limits.engaged)
            # the report: the time; the contacts carrying a normal impulse, up to those whose
            # impulse is within the tolerance of zero; the deepest overlap
            (t_c, active_c, depth_c, _), (t_r, active_r, depth_r, _) = \
                compiled._log[-1], reference._log[-1]
            assert t_c == t_r
            assert abs(active_c - active_r) <= np.sum(reference.warm_lam[:, 0] <= lam_tol)
            assert abs(depth_c - depth_r) <= 50 * EPS * max(np.abs(q1).max(), 1.0)
        return expected

    previous = backend.use("numba")
    try:
        monkeypatch.setattr(reference, "apply", both)
        v0 = np.zeros(m.nv)
        v0[3:6] = [0.3, 0.0, -1.5]
        v0[6:9] = [0.0, 2.0, 1.0]
        integ = Integrator(m, 1.0 / 120.0, 4, "semi_implicit", contacts=reference)
        integ.compiled.contact_args = None              # the substeps through apply
        integ.run(q0, v0, 60)
    finally:
        backend.use(previous)
    assert seen["contacts"] >= 100 and seen["engaged"] >= 10 and seen["corrected"] >= 5, seen
    assert reference.report().contacts.max() >= 6


@pytest.mark.skipif(not backend.available(), reason="numba does not import")
@pytest.mark.parametrize("method, aba, work", [("semi_implicit", "auto", None),
                                               ("rk4", "auto", None),
                                               ("semi_implicit", "dense", None),
                                               ("semi_implicit", "dense", 0.0)])
def test_the_fused_contact_step_equals_the_kernel_calls(monkeypatch, method, aba, work):
    """A step's substeps in one kernel call (:func:`core.compiled.contact_step.
    contact_substeps`) against the same substeps as separate kernel calls with Python
    between them (the integrator's substep, ``ContactSteps.apply``, the chart change), along
    a fall of a zig-zag chain in reach cones onto a bouncy ground and a static box, with
    self-collision: both run the same compiled functions in the same order on the same
    numbers, so the states, the report, the warm starts and the limits' engagement are
    equal bit for bit. With the "dense" aba method the separate calls' substeps take the
    kernels' dense method and first-order update too (numpy's, which they otherwise take,
    agrees with it to rounding: ``tests/core/test_backend_numba.py::test_backends_agree``). ``work`` 0: every
    contact problem is too large for the fused kernel, which hands each contact substep
    back to the separate calls."""
    from core.compiled import contact_solver as compiled_solver
    from core.compiled.dynamics import packed
    from core.compiled.kernels.dynamics import dense_aba
    from core.compiled.kernels.integrators import _first_order
    from core.compiled.layout import H_DDQ

    m, shapes, q0, plane = capsule_chain(6, drop=0.05)
    cones = [ReachCone(i, (1.0, 0.0, 0.0), 0.3) for i in range(1, 6)]
    box = StaticCollider(Box([0.2, 0.2, 0.05]), se3.from_rp(np.eye(3), [0.9, 0.0, 0.02]))
    world = [Plane(0.0, friction=0.6, restitution=0.4), box]
    if work is not None:
        monkeypatch.setattr(compiled_solver, "COMPILED_SOLVE_WORK", work)

    def kernel_substep(integ, t, q, v):                 # the fused kernel's dense substep
        p, buf = packed(m), integ.data.buffer
        assert dense_aba(p.ints, p.reals, buf, q, v, np.zeros(m.nv), np.zeros((0, 6)),
                         np.empty((m.nv, m.nv))) == 0
        qn, vn = np.empty(m.nv), np.empty(m.nv)
        _first_order(buf, p.ints[H_DDQ], integ.h, 1, q, v, qn, vn)
        return qn, vn

    previous = backend.use("numba")
    runs = []
    try:
        for fused in (True, False):
            solver = ContactSolver(m, shapes, world, limits=LimitSolver(m, cones),
                                   self_collision=True)
            integ = Integrator(m, 1.0 / 240, 2, method, contacts=solver, aba_method=aba)
            assert integ.compiled.contact_args is not None
            calls = []
            if aba == "dense":
                monkeypatch.setattr(Integrator, "_substep", kernel_substep)
            if fused:
                substeps = solver.compiled.substeps
                monkeypatch.setattr(solver.compiled, "substeps",
                                    lambda *a: _counted(substeps, calls, a))
            else:
                integ.compiled.contact_args = None
            tr = integ.run(q0, np.zeros(m.nv), 96, check_energy=False)
            engaged = solver.limits.engaged.copy()
            runs.append((tr, np.array(solver._log), solver.warm_keys, solver.warm_lam,
                         solver.warm_limits, engaged, calls))
            monkeypatch.undo()
            if work is not None:
                monkeypatch.setattr(compiled_solver, "COMPILED_SOLVE_WORK", work)
    finally:
        backend.use(previous)
    (a, log_a, *warm_a, engaged_a, calls), (b, log_b, *warm_b, engaged_b, _) = runs
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.v, b.v)
    np.testing.assert_array_equal(log_a, log_b)
    for x, y in zip(warm_a, warm_b):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(engaged_a, engaged_b)
    assert log_a[:, 1].max() >= 3 and engaged_a.any()           # contacts and limits met
    touching = int(np.sum(log_a[:, 1] > 0))
    if work is None:          # the kernel took every step that the clear check did not
        assert len(calls) >= touching // 2 and set(calls) == {2}
    else:                     # it handed back the first substep with contacts, and the
        assert calls[-1] < 2  # steps after it went to the separate calls


def _counted(substeps, calls, args):
    """Call ``substeps(*args)`` and note the substeps it took."""
    out = substeps(*args)
    calls.append(out[2])
    return out


@pytest.mark.skipif(not backend.available(), reason="numba does not import")
def test_the_compiled_clear_check_agrees_with_the_contacts_found():
    """``ContactSolver.clear`` on numba (the planes' least separation and the narrow phase,
    no contact set built) against the numpy backend's (``find_contacts``) over random poses
    and speeds of a chain above a ground and beside a box, with self-collision, both forms:
    a step's start with the speeds (contacts within the margin plus the travel) and a
    step's end (any overlap). The poses are drawn so that both answers occur; the backends'
    separations differ by rounding only, so they could disagree only for a pose within
    about 1e-15 m of a threshold, which 60 random draws do not hit."""
    m, shapes, q0, plane = capsule_chain(4, drop=0.05)
    box = StaticCollider(Box([0.1, 0.1, 0.1]), se3.from_rp(np.eye(3), [0.5, 0.3, 0.1]))
    rng = np.random.default_rng(7)
    answers = {"numpy": [], "numba": []}
    states = []
    for _ in range(60):
        q = q0.copy()
        q[3:6] += rng.normal(scale=[0.3, 0.3, 0.08])
        q[6:] += rng.normal(scale=0.6, size=m.nq - 6)
        states.append((q, rng.normal(scale=2.0, size=m.nv)))
    previous = backend.active()
    try:
        for name in answers:
            backend.use(name)
            solver = ContactSolver(m, shapes, [plane, box], self_collision=True)
            data = m.create_data()
            for q, v in states:
                answers[name].append((solver.clear(data, q, v, 0.0, 1.0 / 60.0),
                                      solver.clear(data, q, None, 0.0)))
    finally:
        backend.use(previous)
    assert answers["numba"] == answers["numpy"]
    starts, ends = zip(*answers["numpy"])
    assert 0 < sum(starts) < len(starts) and 0 < sum(ends) < len(ends)


# -- simulations ----------------------------------------------------------------------------

def ball(radius=0.1, mass=1.0):
    m = Model(gravity=(0.0, 0.0, -G))
    m.add_body("ball", -1, Free(), mass=mass, inertia=sphere_inertia(mass, radius))
    return m


def apexes(z):
    k = np.nonzero((z[1:-1] > z[:-2]) & (z[1:-1] >= z[2:]))[0] + 1
    return z[k]


@pytest.mark.parametrize("method", METHODS)
def test_a_sphere_bounces_to_e_squared_of_its_height_and_comes_to_rest(method):
    r, e, H, fps = 0.1, 0.8, 1.0, 240.0
    m = ball(r)
    solver = ContactSolver(m, [("ball", Sphere(r))], [Plane(restitution=e, friction=0.5)])
    integ = Integrator(m, 1.0 / fps, 1, method, contacts=solver)
    q0 = np.zeros(6)
    q0[5] = H + r
    tr = integ.run(q0, np.zeros(6), int(8 * fps))
    z = tr.q[:, 5] - r
    h = 1.0 / fps
    tops = apexes(z)
    assert len(tops) >= 6
    prev = H
    for top in tops[:6]:
        V = np.sqrt(2 * G * prev)
        # the bounce starts from a gap s < V h (a speculative contact), keeping e^2 of the
        # energy at that height; symplectic Euler's flights lag by h/2 of the speed (the
        # fall's impact speed is low by g h / 2, the rise's apex by e V h / 2), and a
        # frame samples the apex within g h^2 / 8
        assert abs(top - e * e * prev) <= (1 - e * e) * V * h + e * V * h + G * h * h
        prev = top
    rep = solver.report()
    assert rep.worst_penetration < 1e-3 and z.min() > -1e-3
    assert np.abs(tr.v[-1]).max() < 1e-9 and abs(z[-1]) <= solver.slop + 1e-12
    # no contact step gains energy: restitution keeps e^2 of the normal kinetic energy
    assert rep.energy_gained <= m.masses.sum() * G * rep.worst_penetration
    assert rep.per_frame(tr.t).max() == 1


@pytest.mark.parametrize("method", METHODS)
def test_an_elastic_sphere_never_rises_above_its_start(method):
    r = 0.1
    m = ball(r)
    solver = ContactSolver(m, [("ball", Sphere(r))], [Plane(restitution=1.0)])
    integ = Integrator(m, 1.0 / 240, 1, method, contacts=solver)
    q0 = np.zeros(6)
    q0[5] = 0.5 + r
    tr = integ.run(q0, np.zeros(6), 480)
    assert tr.q[:, 5].max() <= q0[5] + 1e-9
    assert apexes(tr.q[:, 5])[0] > q0[5] - np.sqrt(2 * G * 0.5) / 240


@pytest.mark.parametrize("mu", [0.2, 0.3, 0.7])
@pytest.mark.parametrize("method", METHODS)
def test_a_box_on_an_incline_sticks_or_slides_with_coulomb_friction(mu, method):
    theta = np.radians(25.0)
    half = np.array([0.1, 0.08, 0.05])
    m = Model(gravity=(0.0, 0.0, -G))
    m.add_body("box", -1, Free(), mass=2.0, inertia=box_inertia(2.0, 2 * half))
    normal = np.array([-np.sin(theta), 0.0, np.cos(theta)])
    down = np.array([-np.cos(theta), 0.0, -np.sin(theta)])          # down the slope
    plane = Plane(0.0, normal, friction=mu)
    solver = ContactSolver(m, [("box", Box(half, friction=mu))], [plane])
    fps = 240.0
    integ = Integrator(m, 1.0 / fps, 2, method, contacts=solver)
    q0 = np.zeros(6)
    q0[1] = -theta                      # the box's bottom face on the incline
    q0[3:] = normal * (half[2] - solver.slop)
    tr = integ.run(q0, np.zeros(6), int(fps))
    x = (tr.q[:, 3:] - q0[3:]) @ down
    a = G * (np.sin(theta) - mu * np.cos(theta))
    if mu > np.tan(theta):
        assert np.abs(x).max() < 1e-6
    else:
        t = tr.t[tr.t > 0.1]
        fit = np.polyfit(t, x[tr.t > 0.1], 2)
        assert abs(2 * fit[0] - a) <= 0.01 * a
    assert np.abs(tr.q[:, 3:] @ normal - half[2]).max() < 1e-3        # it stays on the plane


@pytest.mark.parametrize("method", METHODS)
def test_a_capsule_chain_settles_on_the_ground_like_mujoco(method):
    mujoco = pytest.importorskip("mujoco")
    n, r, L, mu = 5, 0.03, 0.3, 0.8
    m, shapes, q0, plane = capsule_chain(n, r, L, mu=mu)
    solver = ContactSolver(m, shapes, [plane])
    fps, sub = 240.0, 2
    integ = Integrator(m, 1.0 / fps, sub, method, contacts=solver)
    tr = integ.run(q0, np.zeros(m.nv), int(3 * fps), record_every=int(fps))
    data = m.create_data()
    update_kinematics(m, data, tr.q[-1])
    ends = np.stack([data.oMi[:, :3, 3], data.oMi[:, :3, :3] @ [L, 0, 0] + data.oMi[:, :3, 3]])
    assert (ends[..., 2] - r).min() >= -1e-3
    # settled: kinetic energy below 1e-6 of the potential energy it fell through
    drop = m.masses.sum() * G * 0.3
    assert dynamics.kinetic_energy(m, data, tr.q[-1], tr.v[-1]) < 1e-6 * drop
    # the same chain in MuJoCo: free root, ball joints, capsules, plane, same friction
    mj, md = mujoco_capsule_chain(n, q0, 1.0 / fps / sub, r, L, mu=mu)
    for _ in range(int(3 * fps * sub)):
        mujoco.mj_step(mj, md)
    np.testing.assert_allclose(np.sort(link_heights(m, data, tr.q[-1], L)),
                               np.sort(md.xipos[1:, 2]), atol=2e-3)


@pytest.mark.parametrize("method", METHODS)
def test_a_chain_with_reach_cones_falls_onto_the_ground_inside_its_limits(method):
    n, r, L, half = 5, 0.03, 0.3, 0.5
    m, shapes, q0, plane = capsule_chain(n, r, L, drop=0.8)     # a zig-zag inside the cones
    cones = [ReachCone(i, (1.0, 0.0, 0.0), half) for i in range(1, n)]
    limits = LimitSolver(m, cones)
    solver = ContactSolver(m, shapes, [plane], limits=limits, self_collision=True)
    fps = 240.0
    integ = Integrator(m, 1.0 / fps, 2, method, contacts=solver, limits=limits)
    v0 = np.zeros(m.nv)
    v0[3:6] = [0.0, 0.0, -1.0]
    v0[6:9] = [0.0, 2.0, 1.0]           # the second link swings towards its cone
    tr = integ.run(q0, v0, int(2 * fps))
    data = m.create_data()
    # the deadband; the limit passes at the end pose converge quadratically, and what they
    # leave (below 1e-9 after three of them) is covered by 1e-6
    tol_cone = limits.tol[0] + 1e-6
    worst_cone, lowest = np.inf, np.inf
    for q in tr.q:
        worst_cone = min(worst_cone, min(c.value(q[3 * i + 3:3 * i + 6])
                                         for i, c in zip(range(1, n), cones)))
        update_kinematics(m, data, q)
        ends = np.concatenate([data.oMi[:, :3, 3],
                               data.oMi[:, :3, :3] @ [L, 0, 0] + data.oMi[:, :3, 3]])
        lowest = min(lowest, (ends[:, 2] - r).min())
    assert worst_cone < 0.0                           # the cones were reached
    assert worst_cone >= -tol_cone
    assert lowest >= -1e-3
    rep = solver.report()
    assert rep.energy_gained <= m.masses.sum() * G * max(rep.worst_penetration, solver.slop)


@pytest.mark.parametrize("method", METHODS)
def test_a_moving_collider_pushes_a_resting_sphere(method):
    r = 0.1
    m = ball(r)
    wall = Box([0.05, 0.5, 0.5])
    speed = 0.5

    def motion(t):
        return se3.from_rp(np.eye(3), [-0.3 + speed * t, 0.0, 0.5])
    solver = ContactSolver(m, [("ball", Sphere(r))],
                           [Plane(friction=0.0), MovingCollider(wall, motion)], friction=0.0)
    integ = Integrator(m, 1.0 / 240, 1, method, contacts=solver)
    q0 = np.zeros(6)
    q0[5] = r - solver.slop
    tr = integ.run(q0, np.zeros(6), 240)
    wall_x = -0.3 + speed * tr.t + 0.05
    assert np.all(tr.q[:, 3] - r >= wall_x - 1e-3)       # never inside the wall
    assert tr.v[-1, 3] >= speed - 1e-6                    # pushed along at the wall's speed


# -- bad input ------------------------------------------------------------------------------

def test_a_concave_point_set_is_used_as_its_hull_and_reported():
    star = [[0, 0, 1], [0, 0, -1], [1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0],
            [0.1, 0.1, 0.1], [-0.1, 0.05, 0.0]]
    hull = ConvexHull(star)
    assert hull.inside == 2 and "not convex" in hull.note and len(hull.vertices) == 6
    m = ball()
    solver = ContactSolver(m, [("ball", hull)], [Plane()])
    assert solver.report().notes == (hull.note,)


def test_bad_shapes_and_placements_raise_clear_errors():
    with pytest.raises(InvalidInputError, match="zero-radius capsule"):
        Capsule(0.0, (0, 0, 0), (1, 0, 0))
    with pytest.raises(InvalidInputError, match="distinct end points"):
        Capsule(0.1, (0, 0, 0), (0, 0, 0))
    mirror = np.diag([-1.0, 2.0, 1.0, 1.0])
    with pytest.raises(InvalidInputError, match="negative \\(mirroring\\)"):
        StaticCollider(Box([1, 1, 1]), mirror)
    with pytest.raises(InvalidInputError, match="non-uniform scale"):
        StaticCollider(Sphere(0.1), np.diag([1.0, 2.0, 1.0, 1.0]))
    with pytest.raises(InvalidInputError, match="one plane"):
        ConvexHull([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]])
    with pytest.raises(InvalidInputError, match="Shape"):
        ContactSolver(ball(), [("ball", "sphere")])
    # a uniform scale is applied; a non-uniform one makes a box the hull of its corners
    s = StaticCollider(Sphere(0.1), np.diag([2.0, 2.0, 2.0, 1.0])).shape
    assert s.radius == pytest.approx(0.2)
    b = StaticCollider(Box([1, 1, 1]), np.diag([1.0, 2.0, 3.0, 1.0])).shape
    np.testing.assert_allclose(np.abs(b.vertices).max(axis=0), [1, 2, 3])
    with pytest.raises(InvalidInputError, match="pass the LimitSolver"):
        m, shapes = chain(2)
        Integrator(m, 0.01, contacts=ContactSolver(m, shapes),
                   limits=LimitSolver(m, [ReachCone(1, (1, 0, 0), 0.5)]))
    with pytest.raises(InvalidInputError, match="semi_implicit or rk4"):
        Integrator(m, 0.01, method="euler", contacts=ContactSolver(m, shapes))


def test_the_friction_disc_step_is_the_constrained_minimum():
    """friction_disc against a dense polar grid of the disc (and inside it: the
    unconstrained minimum); on the rim the final velocity opposes the impulse."""
    rng = np.random.default_rng(8)
    for _ in range(20):
        X = rng.normal(size=(2, 2))
        A = X @ X.T + 0.05 * np.eye(2)
        g = rng.normal(size=2)
        cap = rng.uniform(0.05, 2.0)
        w, Q = np.linalg.eigh(A)
        lt = friction_disc(w, Q, g, cap)
        f = lambda l: 0.5 * np.einsum("...i,ij,...j->...", l, A, l) + l @ g
        rad, ang = np.meshgrid(np.linspace(0, cap, 400), np.linspace(0, 2 * np.pi, 2000))
        grid = np.stack([rad * np.cos(ang), rad * np.sin(ang)], axis=-1)
        assert np.linalg.norm(lt) <= cap * (1 + 1e-12)
        # the grid's spacing (cap / 400 radially, 2 pi cap / 2000 around) bounds its gap
        step = cap * max(1 / 400, np.pi / 1000)
        assert f(lt) <= f(grid).min() + 1e-12
        assert f(grid).min() - f(lt) <= (np.abs(A).max() * step + np.linalg.norm(A @ lt + g)) \
            * step
        if np.linalg.norm(np.linalg.solve(A, g)) > cap:
            u = A @ lt + g
            assert abs(u[0] * lt[1] - u[1] * lt[0]) <= 1e-9 * np.linalg.norm(u) * cap
            assert u @ lt < 0.0


@pytest.mark.parametrize("method", METHODS)
def test_a_box_lands_flat_on_a_static_box_and_a_hull_on_the_ground(method):
    """Box-box and hull-plane manifolds in a simulation: each body comes to rest on its
    face (its four lowest corners carry it), at most ``slop`` deep, without jitter."""
    half = np.array([0.1, 0.08, 0.05])
    table = StaticCollider(Box([0.5, 0.5, 0.2]), se3.from_rp(np.eye(3), [0.0, 0.0, 0.2]))
    for shape, colliders, top in ((Box(half), [table], 0.4),
                                  (ConvexHull(Box(half).vertices), [Plane()], 0.0)):
        m = Model(gravity=(0.0, 0.0, -G))
        m.add_body("body", -1, Free(), mass=1.0, inertia=box_inertia(1.0, 2 * half))
        solver = ContactSolver(m, [("body", shape)], colliders, friction=0.6)
        integ = Integrator(m, 1.0 / 240, 2, method, contacts=solver)
        q0 = np.zeros(6)
        q0[:3] = [0.05, -0.03, 0.0]                   # tilted: it lands on an edge first
        q0[5] = top + 0.2
        tr = integ.run(q0, np.zeros(6), 480)
        z = tr.q[-1, 5] - half[2] - top
        assert -solver.slop - 1e-9 <= z <= 1e-6
        # flat: its corners may differ by the deadband at most, across the face's short side
        tilt = np.arccos(min(1.0, so3.exp(tr.q[-1, :3])[2, 2]))
        assert tilt <= solver.slop / (2 * half[1])
        assert np.abs(tr.v[-60:]).max() < 1e-6
        assert solver.report().contacts[-1] == 4


@pytest.mark.skipif(not backend.available(), reason="numba does not import")
def test_the_compiled_contact_sweeps_equal_the_numpy_ones(monkeypatch):
    """:func:`core.compiled.contacts.contact_pgs` against the numpy sweeps of
    ``ContactSolver._pgs`` on a random well-posed problem (3 limit rows, 6 contacts, some
    sliding, some sticking, some leaving), both run for exactly ``K`` sweeps (the stopping
    rule off), then both with the stopping rule. Tolerance: the numpy sweeps sum each row's
    m products, the compiled ones update the rows' residuals by each row's change (at most m
    roundings per residual and sweep), so the two differ by ``m eps`` of the scale per row
    and sweep, times the conditioning of W, over K sweeps; the friction discs' Newton
    iterations stop at 1e-12 of their radius, which adds that much per disc and sweep. A
    sweep more or fewer under the stopping rule changes the impulses by about ``PGS_RTOL``
    of the largest, far above that bound."""
    from core.contacts import rules

    rng = np.random.default_rng(7)
    n_lim, nc, K = 3, 6, 40
    m = n_lim + 3 * nc
    A = rng.normal(size=(m, m + 8))
    W = A @ A.T
    b = rng.normal(size=m)
    mu = rng.uniform(0.2, 1.0, nc)
    m_, shapes = chain(2)

    def both(iterations):
        out = {}
        previous = backend.active()
        try:
            for name in ("numpy", "numba"):
                backend.use(name)
                solver = ContactSolver(m_, shapes, iterations=iterations)
                out[name] = solver._pgs(W, b, np.zeros(m), n_lim, mu)
        finally:
            backend.use(previous)
        return out["numba"], out["numpy"]

    monkeypatch.setattr(rules, "PGS_RTOL", 0.0)
    compiled, lam = both(K)
    assert np.any(lam[:n_lim] == 0.0) and np.any(lam[n_lim::3] > 0.0)
    scale = np.abs(lam).max()
    bound = K * (m * EPS * np.linalg.cond(W) + nc * 1e-12) * scale
    np.testing.assert_allclose(compiled, lam, rtol=0, atol=bound)
    monkeypatch.undo()
    np.testing.assert_allclose(*both(5 * K), rtol=0, atol=bound * 5)
