"""core.rig with contacts: a chain hanging from a fixed kinematic root swings down onto a
ground plane and comes to rest on it, the integrator choice and the contact report;
self-collision between a rig's bodies; the pose interpolation of moving colliders."""

import numpy as np
import pytest

from core.contacts import Capsule, Plane, Sphere
from core.contacts.solver import ContactSolver
from core.errors import InvalidInputError
from core.lie import so3
from core.mechanisms import MechanismRun
from core.rig import PoseMotion, RigBody, RigJoint, build_rig, simulate_rig

#: the deepest overlap allowed at any frame (m); a resting contact keeps at most the
#: contact solver's slop (0.5 mm)
DEPTH = 1e-3
LINK, RADIUS, HEIGHT, GROUND = 0.2, 0.02, 0.3, -0.1


def _chain(n=3, integrator=None, colliders=None, duration=2.0, cone=None):
    """A fixed (kinematic) root HEIGHT above the ground holding n ball-jointed links laid out
    horizontally (bone Y along world +x), each with a capsule along its bone (and a circular
    reach cone of half-angle ``cone`` about it when given)."""
    root = np.eye(4)
    root[:3, :3] = [[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    root[:3, 3] = (0.0, 0.0, GROUND + HEIGHT)
    step = np.eye(4)
    step[1, 3] = LINK
    bodies = [RigBody("root", -1, root, RigJoint("kinematic"), mass=0.0)]
    for k in range(n):
        joint = RigJoint("ball") if cone is None else RigJoint("ball", cone="circular",
                                                               half_angle=cone)
        bodies.append(RigBody(f"link{k}", k, step if k else np.eye(4), joint,
                              mass=0.3, com=(0.0, 0.5 * LINK, 0.0),
                              inertia=np.diag([1e-3, 6e-5, 1e-3]),
                              shapes=(Capsule(RADIUS, (0.0, 0.0, 0.0), (0.0, LINK, 0.0)),)))
    if colliders is None:
        colliders = (Plane(GROUND, friction=0.8),)
    return build_rig(bodies, fps=24.0, substeps=8, duration=duration, integrator=integrator,
                     colliders=colliders)


def _depth(world):
    """The deepest a link's capsule goes below the ground at each frame: ``(F,)`` m."""
    heads = world[:, 1:, 2, 3]
    tails = heads + LINK * world[:, 1:, 2, 1]
    return np.maximum(GROUND - (np.minimum(heads, tails) - RADIUS), 0.0).max(axis=1)


@pytest.mark.parametrize("integrator", [None, "semi_implicit", "rk4"])
def test_a_chain_falls_onto_the_ground_and_settles(integrator):
    rig = _chain(integrator=integrator)
    assert rig.mechanism.integrator == (integrator or "implicit") and not rig.warnings
    res = simulate_rig(rig)
    depth = _depth(res.world)
    assert depth.max() <= DEPTH
    assert res.worst_penetration <= DEPTH
    # it reached the ground: the lowest link point is within the slop of the ground
    tails = res.world[-1, 1:, 2, 3] + LINK * res.world[-1, 1:, 2, 1]
    assert np.min(np.minimum(res.world[-1, 1:, 2, 3], tails)) - RADIUS < GROUND + 1e-3
    assert res.contacts.shape == res.times.shape and res.contacts[-1] >= 1
    assert res.contacts[0] == 0
    # settled: the last half second moves no link point by more than a millimetre
    last = res.world[-12:, 1:, :3, 3]
    assert np.abs(last - last[-1]).max() < 1e-3
    assert res.energy_drift is None and res.energy_gained >= 0.0


def test_limits_engaged_before_any_contact():
    """Reach cones of 0.5 rad stop the links in the air first (rows of limits without a
    contact), then the chain lands: limits and contacts solved together."""
    rig = _chain(cone=0.5)
    assert rig.mechanism.limits and rig.mechanism.shapes
    res = simulate_rig(rig)
    depth = _depth(res.world)
    assert res.contacts[-1] >= 1 and depth.max() <= DEPTH
    # the report's depth is over every substep, so it covers the frames' (the landing's
    # first substep may overshoot the slop; at 8 substeps 1.3 mm, at 16 none)
    assert res.worst_penetration >= depth[:-1].max() - 1e-12
    assert res.worst_violation < 0.01


def test_live_frames_equal_the_bake_with_contacts():
    rig = _chain(duration=1.0)
    res = simulate_rig(rig)
    run = MechanismRun(rig.mechanism)
    run.advance_to(run.n_frames - 1)
    np.testing.assert_array_equal(run.poses, res.world)


def test_without_a_ground_the_chain_falls_through():
    res = simulate_rig(_chain(colliders=(), duration=0.5))
    assert res.contacts is None and res.worst_penetration == 0.0
    assert _depth(res.world).max() > 0.05
    assert _chain(colliders=()).mechanism.integrator == "implicit"


def test_euler_with_contacts_is_replaced_and_said():
    rig = _chain(integrator="euler")
    assert rig.mechanism.integrator == "implicit"
    assert any("euler" in w and "implicit" in w for w in rig.warnings)


def test_a_whipping_coned_tail_runs_with_the_ground_on():
    """A kinematic root swinging an 8-link damped tail with reach cones and twist limits, a
    ground far below: with the contact solver in every substep the tail holds its limits
    as it does without a ground (semi-implicit Euler at these substeps is unstable for the
    tail's fast coupled modes; RK4, the default, is not)."""
    n, L = 8, 0.06
    root = np.eye(4)
    root[:3, :3] = [[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    root[2, 3] = 1.0
    times = np.linspace(0.0, 2.0, 49)
    motion = np.repeat(root[None], len(times), axis=0)
    for k, t in enumerate(times):
        c, s_ = np.cos(0.6 * np.sin(3.0 * t)), np.sin(0.6 * np.sin(3.0 * t))
        motion[k, :3, :3] = np.array([[c, -s_, 0.0], [s_, c, 0.0], [0.0, 0.0, 1.0]]) @ root[:3, :3]
    step = np.eye(4)
    step[1, 3] = L
    bodies = [RigBody("root", -1, root, RigJoint("kinematic"), mass=0.0, pose=root,
                      motion_times=times, motion=motion)]
    for k in range(n):
        joint = RigJoint("ball", cone="circular", half_angle=0.5, twist=0.3,
                         stiffness=0.05 * (1 - k / n) ** 2, damping=1e-3)
        bodies.append(RigBody(f"l{k}", k, step if k else np.eye(4), joint, mass=0.05,
                              com=(0.0, L / 2, 0.0), inertia=np.diag([2e-5, 4e-6, 2e-5]),
                              shapes=(Capsule(0.1 * L, (0.0, 0.0, 0.0), (0.0, L, 0.0)),)))
    runs = [simulate_rig(build_rig(bodies, fps=24, substeps=16, duration=2.0,
                                   colliders=cols)) for cols in ((), (Plane(-5.0),))]
    for res in runs:
        assert res.worst_violation < 0.01
    assert runs[1].contacts.max() == 0


def test_bad_shapes_are_refused():
    root = RigBody("root", -1, np.eye(4), RigJoint("ball"), shapes=("capsule",))
    with pytest.raises(InvalidInputError, match="Shape"):
        build_rig([root], colliders=(Plane(),))
    with pytest.raises(InvalidInputError, match="radius"):
        Capsule(0.0, (0.0, 0.0, 0.0), (0.0, 0.1, 0.0))


def _two_spheres(self_collision, fps=24.0):
    """Two free unit-mass spheres of radius 0.1 without gravity or colliders: one at rest at
    the origin, the other 0.3 m above it coming down at 1 m/s (its poses one frame before
    and after give the velocity)."""
    def at(z):
        T = np.eye(4)
        T[2, 3] = z
        return T

    ball = (Sphere(0.1),)
    inertia = 0.4 * 0.1 ** 2 * np.eye(3)
    bodies = [RigBody("low", -1, at(0.0), RigJoint("free"), inertia=inertia, shapes=ball),
              RigBody("high", -1, at(0.3), RigJoint("free"), inertia=inertia, shapes=ball,
                      pose=at(0.3), pose_before=at(0.3 + 1 / fps), pose_after=at(0.3 - 1 / fps))]
    return build_rig(bodies, gravity=(0.0, 0.0, 0.0), fps=fps, substeps=8, duration=0.5,
                     self_collision=self_collision)


def test_self_collision_makes_the_rig_bodies_meet():
    rig = _two_spheres(True)
    solver = rig.mechanism.contact_solver(None)
    assert isinstance(solver, ContactSolver) and solver.self_collision
    assert rig.mechanism.integrator == "implicit"
    res = simulate_rig(rig)
    z = res.world[:, :, 2, 3]
    gap = z[:, 1] - z[:, 0]
    # the spheres stay apart to within the solver's slop
    assert gap.min() >= 0.2 - solver.slop - 1e-12
    # an inelastic impact of equal masses: both move on at half the speed (momentum kept)
    speed = (z[-1] - z[-2]) * 24.0
    np.testing.assert_allclose(speed, [-0.5, -0.5], rtol=0, atol=1e-9)
    assert res.contacts.max() >= 1


def test_without_self_collision_the_rig_bodies_pass_through():
    rig = _two_spheres(False)
    assert rig.mechanism.contact_solver(None) is None
    res = simulate_rig(rig)
    gap = res.world[:, 1, 2, 3] - res.world[:, 0, 2, 3]
    assert gap.min() < 0.0 and res.contacts is None


def test_pose_motion_interpolates_rigid_poses_across_the_half_turn():
    """Poses turning about z at a steady 3 rad/s through the half turn while moving along x
    at 0.5 m/s: the spline of the continuous logarithm is linear in time, so the motion
    is exact between the samples too (a log jumping at pi would not be)."""
    times = np.linspace(0.0, 1.5, 16)
    def pose(t):
        T = np.eye(4)
        T[:3, :3] = so3.exp(np.array([0.0, 0.0, 3.0 * t]))
        T[0, 3] = 0.5 * t
        return T

    motion = PoseMotion(times, np.array([pose(t) for t in times]))
    for t in np.concatenate([times, 0.5 * (times[1:] + times[:-1])]):
        np.testing.assert_allclose(motion(t), pose(t), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(motion(-1.0), motion(0.0))      # clamped to the samples
    np.testing.assert_array_equal(motion(9.0), motion(1.5))


def test_steps_clear_of_contacts_run_as_without_them():
    """A coned chain swinging under its root with the ground far below: every step is clear
    of contacts (ContactSolver.clear), so on numba it is the same kernel step as without a
    ground and the runs agree (the batching of steps into kernel calls differs, not the
    arithmetic); with the ground just below, the steps near it go through the contact
    solver and the links land."""
    far = simulate_rig(_chain(cone=0.5, colliders=(Plane(GROUND - 10.0),), duration=1.0))
    free = simulate_rig(_chain(cone=0.5, colliders=(), duration=1.0))
    np.testing.assert_allclose(far.world, free.world, rtol=0, atol=1e-12)
    assert far.contacts.max() == 0
    near = simulate_rig(_chain(cone=0.5, duration=1.0))
    assert near.contacts.max() >= 1 and _depth(near.world).max() <= DEPTH
