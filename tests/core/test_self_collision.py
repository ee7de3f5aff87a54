"""Self-collision on rigs whose capsules overlap at rest: the pairs overlapping in the start
pose are left out and named in the report, pairs that start apart still collide, the two
backends find and solve the same filtered contacts, and a contact that no joint moves (a
singular Delassus matrix) is solved."""

import numpy as np
import pytest

from core import backend, dynamics
from core.contacts import Capsule, Plane, Sphere
from core.contacts.solver import ContactSolver
from core.integrators import Integrator
from core.mechanisms.base import simulate_mechanism
from core.kinematics import update_kinematics
from core.model import Model
from core.joints.spherical import Spherical
from core.rig import RigBody, RigJoint, build_rig, simulate_rig

EPS = np.finfo(float).eps
#: spine links and the legs' bones (m); every capsule has the radius R
LINK, THIGH, HIP, R = 0.1, 0.4, 0.1, 0.07


def _frame(y, x=0.0):
    """A bone frame at ``(x, 0, 0)`` of its parent whose Y (the bone) points along ``y``."""
    T = np.eye(4)
    yy = np.asarray(y, float)
    xx = np.array([1.0, 0.0, 0.0])
    T[:3, :3] = np.column_stack([xx, yy, np.cross(xx, yy)])
    T[0, 3] = x
    return T


def _body_rig(height=1.0, duration=1.0, substeps=16):
    """A ragdoll trunk with thick capsules (radius R): a free spine bone 1 m up pointing up,
    three ball-jointed spine links on it, and per side a hip bone (``pelvis``) and a thigh
    hanging from the spine's head at x = +-HIP/2 and +-(HIP + 0.02), over a ground plane.
    Seven pairs that are not parent and child overlap by 2 to 8 cm at rest; the others are
    at least 1.6 cm apart."""
    root = _frame((0.0, 0.0, 1.0))
    root[2, 3] = height
    up = np.eye(4)
    up[1, 3] = LINK
    down = (0.0, -1.0, 0.0)         # the parent's -Y: straight down under an upright spine
    kw = dict(com=(0.0, 0.05, 0.0), inertia=np.diag([2e-3, 1e-3, 2e-3]))
    bodies = [RigBody("spine", -1, root, RigJoint("free"), mass=4.0,
                      shapes=(Capsule(R, (0.0, 0.0, 0.0), (0.0, LINK, 0.0)),), **kw)]
    for k in range(1, 4):
        bodies.append(RigBody(f"spine.{k:03d}", k - 1, up, RigJoint("ball"), mass=2.0,
                              shapes=(Capsule(R, (0.0, 0.0, 0.0), (0.0, LINK, 0.0)),), **kw))
    for side, s in (("L", 1.0), ("R", -1.0)):
        bodies.append(RigBody(f"pelvis.{side}", 0, _frame(down, s * HIP / 2),
                              RigJoint("ball"), mass=1.0,
                              shapes=(Capsule(R, (0.0, 0.0, 0.0), (0.0, HIP, 0.0)),), **kw))
        bodies.append(RigBody(f"thigh.{side}", 0, _frame(down, s * (HIP + 0.02)),
                              RigJoint("ball", cone="circular", half_angle=0.6), mass=5.0,
                              shapes=(Capsule(R, (0.0, 0.0, 0.0), (0.0, THIGH, 0.0)),),
                              com=(0.0, 0.2, 0.0), inertia=np.diag([6e-2, 1e-2, 6e-2])))
    return build_rig(bodies, fps=24.0, substeps=substeps, duration=duration,
                     colliders=(Plane(0.0),), self_collision=True)


def _sampled_overlaps(rig, depth):
    """The pairs of bodies (names, sorted) that are not parent and child whose capsules
    overlap more than ``depth`` at the rig's start pose, from the distance of 801 points
    along each capsule's segment (a sampled distance exceeds the true one by at most half
    the spacing, 0.25 mm here, far below the test's 1.6 cm clearance)."""
    mech = rig.mechanism
    m = mech.model
    T = update_kinematics(m, m.create_data(), mech.q0)
    t = np.linspace(0.0, 1.0, 801)[:, None]
    segments = []
    for name, shape in mech.shapes:
        i = m.body_index(name)
        a, b = (T[i, :3, :3] @ p + T[i, :3, 3] for p in shape.vertices)
        segments.append((i, a + t * (b - a), shape.radius))
    out = set()
    for k, (i, P, r) in enumerate(segments):
        for j, Q, s in segments[k + 1:]:
            if i == j or m.parents[i] == j or m.parents[j] == i:
                continue
            gap = np.sqrt(((P[:, None] - Q[None]) ** 2).sum(axis=2)).min() - r - s
            assert abs(gap + depth) > 0.01          # clearly on one side of the threshold
            if gap < -depth:
                out.add(tuple(sorted((m.names[i], m.names[j]), key=m.names.index)))
    return sorted(out, key=lambda p: (m.names.index(p[0]), m.names.index(p[1])))


def test_pairs_overlapping_at_rest_are_left_out_and_named():
    rig = _body_rig()
    solver = rig.mechanism.contact_solver(None)
    expected = _sampled_overlaps(rig, solver.slop)
    m = rig.mechanism.model
    assert len(expected) == 7 and ("pelvis.L", "thigh.L") in expected
    assert [(m.names[i], m.names[j]) for i, j in solver.excluded_pairs] == expected
    res = simulate_rig(rig)
    note = "self-collision leaves out 7 pairs that overlap in the start pose: " + \
        ", ".join(f"{a}/{b}" for a, b in expected)
    assert sum(n.startswith(note) for n in res.contact_notes) == 1
    # it fell onto the ground and stayed in one piece, within the slop of the surface
    assert res.worst_penetration <= 1e-3 and res.contacts.max() >= 1
    assert np.all(np.isfinite(res.world))
    # the spine is among the bodies kept: it still collides with the thighs (pairs apart)
    kept = solver.pairs_allowed
    i = [b for b, (name, _) in enumerate(rig.mechanism.shapes) if name == "thigh.L"][0]
    j = [b for b, (name, _) in enumerate(rig.mechanism.shapes) if name == "thigh.R"][0]
    assert kept[i, j] and kept[j, i]


def test_without_self_collision_nothing_is_left_out():
    rig = _body_rig()
    mech = rig.mechanism
    solver = ContactSolver(mech.model, list(mech.shapes), list(mech.colliders),
                           start=mech.q0)
    assert solver.excluded_pairs == () and solver.notes == ()


def _three_spheres(fps=24.0):
    """Three free unit-mass spheres of radius 0.1 without gravity: ``a`` and ``b`` overlapping
    by 5 cm at rest, ``c`` 2 cm above ``b`` coming down onto it at 0.2 m/s (slow enough that
    ``c`` stays 1.9 cm clear of ``a`` after the impact)."""
    def at(x, z):
        T = np.eye(4)
        T[0, 3], T[2, 3] = x, z
        return T

    ball = (Sphere(0.1),)
    inertia = 0.4 * 0.1 ** 2 * np.eye(3)
    free = RigJoint("free")
    bodies = [RigBody("a", -1, at(-0.15, 0.0), free, inertia=inertia, shapes=ball),
              RigBody("b", -1, at(0.0, 0.0), free, inertia=inertia, shapes=ball),
              RigBody("c", -1, at(0.0, 0.22), free, inertia=inertia, shapes=ball,
                      pose=at(0.0, 0.22), pose_before=at(0.0, 0.22 + 0.2 / fps),
                      pose_after=at(0.0, 0.22 - 0.2 / fps))]
    return build_rig(bodies, gravity=(0.0, 0.0, 0.0), fps=fps, substeps=8, duration=0.5,
                     self_collision=True)


def test_bodies_that_start_apart_still_meet_while_the_overlapping_pair_is_left_out():
    rig = _three_spheres()
    solver = rig.mechanism.contact_solver(None)
    assert solver.excluded_pairs == ((0, 1),)
    res = simulate_rig(rig)
    assert res.contact_notes == ("self-collision leaves out 1 pair that overlaps in the "
                                 "start pose: a/b; it passes through each other",)
    z = res.world[:, :, 2, 3]
    # c lands on b and does not pass into it (to within the slop); an inelastic impact of
    # equal masses: both move on at half the speed
    assert (z[:, 2] - z[:, 1]).min() >= 0.2 - solver.slop - 1e-12
    np.testing.assert_allclose((z[-1, 1:] - z[-2, 1:]) * 24.0, [-0.1, -0.1], rtol=0,
                               atol=1e-9)
    # a and b are left as they overlap: nothing pushes a away from b
    np.testing.assert_array_equal(res.world[:, 0], res.world[:1, 0].repeat(len(z), axis=0))


@pytest.mark.skipif(not backend.available(), reason="numba does not import")
def test_both_backends_leave_out_the_same_pairs_and_find_the_same_contacts(monkeypatch):
    """The filtered pairs on both backends: the same excluded pairs, and along the trunk's
    fall (the numpy run's states) the same contacts (bodies and warm-start keys, none of an
    excluded pair) with separations within a few dozen roundings of the pose's scale; then
    one contact substep per frame on both backends with exactly K Gauss-Seidel sweeps, whose
    velocities differ by at most ``K m 50 EPS sqrt(cond M)`` of the velocity change
    (``test_contacts.py::test_the_compiled_contact_substep_equals_the_reference_glue``
    derives this bound: each sweep's row updates are projections in the W-seminorm, which
    do not enlarge the runs' difference in the M-norm of dv, and add about 50 roundings per
    row)."""
    from core.contacts import rules

    K = 40
    monkeypatch.setattr(rules, "PGS_RTOL", 0.0)
    previous = backend.active()
    try:
        solvers = {}
        for name in ("numpy", "numba"):
            backend.use(name)
            mech = _body_rig(height=1.02, duration=0.6).mechanism
            solvers[name] = ContactSolver(mech.model, list(mech.shapes), list(mech.colliders),
                                          self_collision=True, start=mech.q0, iterations=K)
        backend.use("numpy")
        traj = simulate_mechanism(mech)
    finally:
        backend.use(previous)
    ref, twin = solvers["numpy"], solvers["numba"]
    assert twin.compiled is not None and ref.compiled is None
    assert ref.excluded_pairs == twin.excluded_pairs and len(ref.excluded_pairs) == 7
    np.testing.assert_array_equal(ref.pairs_allowed, twin.pairs_allowed)
    m = ref.model
    excluded = set(ref.excluded_pairs)
    h = 1.0 / (24.0 * 16)
    seen = 0
    for q, v in zip(traj.q, traj.v):
        found = {}
        for name, s in solvers.items():
            data = m.create_data()
            s._pose(data, q)
            found[name] = s.find_contacts(data, 0.0, 0.05)
        f, g = found["numpy"], found["numba"]
        np.testing.assert_array_equal(np.sort(f.key), np.sort(g.key))
        of, og = np.argsort(f.key), np.argsort(g.key)
        np.testing.assert_array_equal(f.a[of], g.a[og])
        np.testing.assert_allclose(f.separation[of], g.separation[og], rtol=0,
                                   atol=50 * EPS * max(np.abs(q).max(), 1.0))
        assert not excluded & {(min(a, b), max(a, b)) for a, b in zip(f.a, f.b)}
        if not len(f):
            continue
        seen += 1
        # the same inputs on both backends: the frame's state, an end state moved on at its
        # velocity (nq = nv here)
        v1 = v.copy()
        q1 = q + h * v1
        out = {}
        for name, s in solvers.items():
            s.reset()
            out[name] = s.apply(m.create_data(), q, v, q1, v1, 0.0, h)
        M = dynamics.crba(m, m.create_data(), q)
        scale = K * 50 * EPS * 3 * len(f) * np.sqrt(np.linalg.cond(M))
        dv = max(np.abs(out["numpy"][1] - v1).max(), EPS)
        np.testing.assert_allclose(out["numba"][1], out["numpy"][1], rtol=0, atol=scale * dv)
    assert seen >= 5


def _joint_spheres(gap):
    """Two pendulums on ball joints at (0, 0, 1) and (gap, 0, 1), each a sphere of radius
    0.1 centred on its joint and a mass 0.2 m below it: the spheres' contact lies on the line
    through the two joints, where neither joint moves it along the normal (its row of J is
    zero, and so W's row and column)."""
    m = Model(gravity=(0.0, 0.0, -9.81))
    for k in range(2):
        T = np.eye(4)
        T[:3, 3] = (k * gap, 0.0, 1.0)
        m.add_body(f"p{k}", -1, Spherical(), T, mass=1.0, com=(0.0, 0.0, -0.2),
                   inertia=1e-3 * np.eye(3))
    return m, [("p0", Sphere(0.1)), ("p1", Sphere(0.1))]


@pytest.mark.parametrize("name", ["numpy", "numba"])
def test_a_contact_no_joint_moves_is_solved_not_blamed_on_the_step(name):
    """Overlapping spheres on the joints' line, kept in (no start pose given), pushed
    sideways by the pendulums' swing: W is singular (the normal rows vanish). The contact
    step solves it: the impulse of the rows no joint moves stays zero, the run is finite, and
    the pendulums swing as they would without the contact (an impulse there changes no
    velocity)."""
    if name == "numba" and not backend.available():
        pytest.skip("numba does not import")
    m, shapes = _joint_spheres(0.15)
    q0 = np.zeros(m.nq)
    q0[:3], q0[3:] = (0.3, 0.0, 0.0), (-0.2, 0.1, 0.0)
    previous = backend.active()
    try:
        backend.use(name)
        solver = ContactSolver(m, shapes, self_collision=True)
        data = m.create_data()
        solver._pose(data, q0)
        found = solver.find_contacts(data, 0.0, 0.01)
        assert len(found) == 1 and found.separation[0] < -0.04
        runs = [Integrator(m, 1e-3, 1, "semi_implicit", contacts=c).run(q0, np.zeros(m.nv), 200)
                for c in (solver, None)]
    finally:
        backend.use(previous)
    assert np.all(np.isfinite(runs[0].q))
    assert solver.report().contacts.max() == 1           # overlapping all along
    np.testing.assert_allclose(runs[0].q, runs[1].q, rtol=0, atol=1e-12)
    assert np.all(solver.warm_lam[:, 0] == 0.0)


@pytest.mark.skipif(not backend.available(), reason="numba does not import")
def test_sweeps_leave_rows_no_joint_moves_at_zero_on_both_backends(monkeypatch):
    """A random problem (2 limit rows, 5 contacts) where a limit row, one contact's normal
    and another's first tangent have zero rows of J (so zero rows and columns of W, and a
    tangent block with a zero eigenvalue): the numpy sweeps divided by zero and the compiled
    ones returned NaN. Both now leave those impulses at zero and solve the rest alike: the
    other rows form a well-posed problem, so the bound of
    ``test_contacts.py::test_the_compiled_contact_sweeps_equal_the_numpy_ones`` applies with
    the condition number of its W."""
    from core.contacts import rules

    rng = np.random.default_rng(11)
    n_lim, nc, K = 2, 5, 40
    m = n_lim + 3 * nc
    J = rng.normal(size=(m, m + 8))
    free = [1, n_lim + 3 * 2, n_lim + 3 * 4 + 1]
    J[free] = 0.0
    W = J @ J.T
    b = rng.normal(size=m)
    b[free] = -1.0                     # rows that want an impulse no motion can give
    mu = rng.uniform(0.2, 1.0, nc)
    shape_model = Model()
    shape_model.add_body("x", -1, Spherical(), np.eye(4), mass=1.0, inertia=np.eye(3))
    monkeypatch.setattr(rules, "PGS_RTOL", 0.0)
    out = {}
    previous = backend.active()
    try:
        for name in ("numpy", "numba"):
            backend.use(name)
            solver = ContactSolver(shape_model, [("x", Sphere(0.1))], iterations=K)
            out[name] = solver._pgs(W, b, np.zeros(m), n_lim, mu)
    finally:
        backend.use(previous)
    lam = out["numpy"]
    assert np.all(np.isfinite(lam)) and np.all(np.isfinite(out["numba"]))
    assert np.all(lam[free] == 0.0) and np.all(out["numba"][free] == 0.0)
    kept = np.setdiff1d(np.arange(m), free)
    assert np.any(lam[n_lim::3] > 0.0)
    bound = K * (m * EPS * np.linalg.cond(W[np.ix_(kept, kept)]) + nc * 1e-12) * \
        np.abs(lam).max()
    np.testing.assert_allclose(out["numba"], lam, rtol=0, atol=bound)
