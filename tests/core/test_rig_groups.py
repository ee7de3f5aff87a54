"""Several rigs simulated as one (core.rig.build_rigs): two chains dropped on each other
collide and stay apart within the contact solver's slop, an animated rig's shapes push
another rig but not their own, moving colliders keep the shot's time across segments, each
rig's result is its own bodies, and both backends find the same contacts between groups."""

from dataclasses import replace

import numpy as np
import pytest

from core import backend
from core.contacts import Capsule, Plane, Sphere
from core.contacts.narrow import Posed, collide
from core.errors import InvalidInputError
from core.mechanisms.base import simulate_mechanism
from core.rig import (RigBody, RigJoint, RigPart, RigPin, build_rig, build_rigs, part_results,
                      simulate_rig)

EPS = np.finfo(float).eps
#: the chains' capsule radius and link length (m)
R, L = 0.04, 0.3
#: a bone frame whose Y (the bone) points along the world's +X
ALONG_X = np.array([[0.0, 1.0, 0.0, 0.0], [-1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0],
                    [0.0, 0.0, 0.0, 1.0]])
CAPSULE = Capsule(R, (0.0, 0.0, 0.0), (0.0, L, 0.0))
FPS = 24.0


def _chain(origin, along_x, extra=()):
    """Three capsule links of a free root at ``origin`` along +X (``along_x``) or +Y, ball
    joints with a soft spring toward straight."""
    root = (ALONG_X if along_x else np.eye(4)).copy()
    root[:3, 3] = origin
    link = np.eye(4)
    link[1, 3] = L
    kw = dict(mass=1.0, com=(0.0, L / 2, 0.0), inertia=np.diag([L * L / 12, 1e-3, L * L / 12]),
              shapes=(CAPSULE,))
    bend = RigJoint("ball", frequency=1.0, damping_ratio=1.0)
    return (RigBody("root", -1, root, RigJoint("free"), **kw),
            RigBody("mid", 0, link, bend, **kw), RigBody("tip", 1, link, bend, **kw)) + extra


def _crossed(extra=()):
    """Chain ``a`` lying on the ground along X, chain ``b`` 0.5 m up along Y across it."""
    return [RigPart("a", _chain((-0.45, 0.0, R), True, extra)),
            RigPart("b", _chain((0.0, -0.45, 0.5), False))]


def _closest(world_a, world_b):
    """The least separation (m; negative: overlap) of the chains' capsules at each frame."""
    out = []
    for Wa, Wb in zip(world_a, world_b):
        seps = [c[2] for Ta in Wa[:3] for Tb in Wb[:3]
                for c in collide(Posed(CAPSULE, Ta), Posed(CAPSULE, Tb), 0.05)]
        out.append(min(seps, default=0.05))
    return np.array(out)


def test_two_chains_dropped_on_each_other_stay_apart_within_the_slop():
    """Chain b falls 0.42 m onto chain a lying on the ground and comes to rest across it:
    the capsules never overlap by more than the contact solver's slop (its position
    correction's deadband, 0.5 mm); the same bodies as one rig without self-collision pass
    through each other to the ground."""
    rig = build_rigs(_crossed(), fps=FPS, duration=1.5, colliders=(Plane(0.0),))
    res = simulate_rig(rig)
    a, b = part_results(rig, res)
    slop = rig.mechanism.contact_solver(None).slop
    gap = _closest(a.world, b.world)
    assert gap.min() >= -slop
    assert gap.min() < 0.01                       # they touched
    assert abs(gap[-1]) <= 2 * slop               # b rests across a at the end
    assert b.world[-1, 1, 2, 3] > 2 * R           # its middle link above a, not on the ground
    assert np.all(np.abs(a.world[-1, :, 2, 3] - R) <= slop)
    one = [replace(x, name=f"{part.name}/{x.name}", parent=x.parent + 3 * k
                   if x.parent >= 0 else -1) for k, part in enumerate(_crossed())
           for x in part.bodies]
    apart = simulate_rig(build_rig(one, fps=FPS, duration=1.5, colliders=(Plane(0.0),)))
    assert np.all(np.abs(apart.world[-1, 3:, 2, 3] - R) <= 1e-3)      # fell through a


def _bat_and_pendulum(extra=()):
    """An animated bat (a kinematic capsule sweeping along +X at 1 m/s through x = 0 at
    z = 0.7) with a simulated knob on its end overlapping it, and a pendulum hanging from
    (0, 0, 1) down to z = 0.5 (bodies ``extra`` added to its rig)."""
    times = np.arange(25) / FPS
    poses = np.tile(np.eye(4), (len(times), 1, 1))
    poses[:, :3, 3] = np.column_stack([times - 0.5, np.full(len(times), -0.2),
                                       np.full(len(times), 0.7)])
    end = np.eye(4)
    end[1, 3] = 0.4
    bat = RigPart("bat", (RigBody("bat", -1, np.eye(4), RigJoint("kinematic"), pose=poses[0],
                                  motion_times=times, motion=poses,
                                  shapes=(Capsule(0.05, (0, 0, 0), (0, 0.4, 0)),)),
                          RigBody("knob", 0, end, RigJoint("ball"), mass=0.2,
                                  shapes=(Sphere(0.06, (0.0, 0.0, 0.0)),))))
    down = np.array([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 1.0], [0, 0, 0, 1]])
    bob = RigBody("bob", -1, down, RigJoint("ball"), mass=1.0, com=(0.0, 0.25, 0.0),
                  inertia=np.diag([0.02, 1e-3, 0.02]),
                  shapes=(Capsule(0.04, (0, 0, 0), (0, 0.5, 0)),))
    return [bat, RigPart("pendulum", (bob,) + tuple(extra))], times


def _tip_x(result):
    """The pendulum's tip's x per frame."""
    W = result.world[:, 0]
    return W[:, 0, :3] @ np.array([0.0, 0.5, 0.0]) + W[:, 0, 3]


def test_an_animated_rig_pushes_another_but_not_its_own_bodies():
    """The bat's shape is a moving collider of the bat's group: it meets the pendulum (which
    swings away once the bat reaches it, about 0.45 s in) but not the bat's own knob; the
    knob, simulated, meets the pendulum; the pendulum never sinks into the bat beyond the
    slop. Without the bat's shape the pendulum hangs still."""
    parts, _ = _bat_and_pendulum()
    rig = build_rigs(parts, fps=FPS, duration=1.0)
    (mover,) = rig.mechanism.colliders
    solver = rig.mechanism.contact_solver(None)
    names = [n for n, _ in rig.mechanism.shapes]
    knob, bob = names.index("bat/knob"), names.index("pendulum/bob")
    ns = len(names)
    assert mover.group == 0 and not solver.pairs_allowed[knob, ns]
    assert solver.pairs_allowed[bob, ns] and solver.pairs_allowed[knob, bob]
    res = simulate_rig(rig)
    _, pendulum = part_results(rig, res)
    x = _tip_x(pendulum)
    assert np.all(np.abs(x[:9]) < 1e-9) and x[-1] > 0.3
    assert res.worst_penetration <= solver.slop
    bare = [replace(parts[0], bodies=(replace(parts[0].bodies[0], shapes=()),) +
                    parts[0].bodies[1:]), parts[1]]
    still = part_results(*(lambda r: (r, simulate_rig(r)))(build_rigs(bare, fps=FPS,
                                                                     duration=1.0)))[1]
    assert np.abs(_tip_x(still)).max() < 1e-9


def test_moving_colliders_keep_the_shot_time_across_segments():
    """A body far away that switches from animated to simulated at 0.25 s cuts the run in
    two segments; the bat still reaches the pendulum at the same frame, so the pendulum
    moves as without the cut (the segments restart the contact solver's warm start, so
    equal up to its iteration tolerance)."""
    parts, times = _bat_and_pendulum()
    plain = part_results(*(lambda r: (r, simulate_rig(r)))(build_rigs(parts, fps=FPS,
                                                                     duration=1.0)))[1]
    far = np.eye(4)
    far[:3, 3] = (5.0, 0.0, 3.0)
    away = RigBody("far", -1, far, RigJoint("free"), motion_times=times,
                   motion=np.tile(far, (len(times), 1, 1)), simulate_from=0.25)
    parts, _ = _bat_and_pendulum((away,))
    cut = part_results(*(lambda r: (r, simulate_rig(r)))(build_rigs(parts, fps=FPS,
                                                                   duration=1.0)))[1]
    np.testing.assert_allclose(_tip_x(cut), _tip_x(plain), atol=1e-3)


def test_each_rig_gets_its_own_bodies_and_pins():
    """part_results gives each rig its bodies' poses, coordinates and rates in its order;
    a pin given on a rig's body name holds that rig's body (chain b's root stays near its
    pin while the rest of the chain swings down)."""
    parts = _crossed()
    pin = RigPin("root", (0.0, 0.0, 0.0), (0.0, -0.45, 0.5), strength=1.0)
    parts[1] = replace(parts[1], pins=(pin,))
    rig = build_rigs(parts, fps=FPS, duration=0.5, colliders=(Plane(0.0),))
    assert [b.name for b in rig.bodies] == [f"{p}/{n}" for p in "ab"
                                            for n in ("root", "mid", "tip")]
    assert rig.parts == (("a", 0, 3), ("b", 3, 6))
    res = simulate_rig(rig)
    a, b = part_results(rig, res)
    np.testing.assert_array_equal(b.world, res.world[:, 3:])
    np.testing.assert_array_equal(a.q, res.q[:, :a.q.shape[1]])
    assert a.q.shape[1] + b.q.shape[1] == res.q.shape[1] and b.v.shape == b.q.shape
    assert rig.pins[0][0][0] == 3                     # b/root
    assert b.world[-1, 0, 2, 3] > 0.3 and a.world[-1, 0, 2, 3] == pytest.approx(R, abs=1e-3)


def test_bad_parts_are_refused_naming_the_rig():
    parts = _crossed()
    with pytest.raises(InvalidInputError, match="share a name"):
        build_rigs([parts[0], parts[0]])
    with pytest.raises(InvalidInputError, match="no rigs"):
        build_rigs([])
    bad = replace(parts[1], bodies=(replace(parts[1].bodies[0], parent=2),) + parts[1].bodies[1:])
    with pytest.raises(InvalidInputError, match="rig 'b', body 'root'"):
        build_rigs([parts[0], bad])
    with pytest.raises(InvalidInputError, match="one group per body"):
        build_rig(parts[0].bodies, groups=(0, 1))


def test_both_backends_find_the_same_contacts_between_groups():
    """The chains of two groups plus a still animated post of chain a's group (a static
    collider of group 0) that chain b lands on: along a numpy run, the numba solver finds the contacts the numpy
    one does (same keys and bodies, separations within a few dozen roundings of the pose's
    scale), the post meeting chain b only."""
    post = RigBody("post", -1, np.eye(4), RigJoint("kinematic"),
                   shapes=(Capsule(0.05, (0.0, 0.3, 0.0), (0.0, 0.3, 0.3)),))
    previous = backend.active()
    try:
        solvers = {}
        for name in ("numpy", "numba"):
            backend.use(name)
            mech = build_rigs(_crossed((post,)), fps=FPS, duration=1.0,
                              colliders=(Plane(0.0),)).mechanism
            solvers[name] = mech.contact_solver(None)
        backend.use("numpy")
        traj = simulate_mechanism(mech)
    finally:
        backend.use(previous)
    ref, twin = solvers["numpy"], solvers["numba"]
    assert twin.compiled is not None and ref.compiled is None
    np.testing.assert_array_equal(ref.pairs_allowed, twin.pairs_allowed)
    post_hits = 0
    for q in traj.q:
        found = {}
        for name, s in solvers.items():
            data = ref.model.create_data()
            s._pose(data, q)
            found[name] = s.find_contacts(data, 0.0, 0.05)
        f, g = found["numpy"], found["numba"]
        of, og = np.argsort(f.key), np.argsort(g.key)
        np.testing.assert_array_equal(f.key[of], g.key[og])
        np.testing.assert_array_equal(f.b[of], g.b[og])
        np.testing.assert_allclose(f.separation[of], g.separation[og], rtol=0,
                                   atol=50 * EPS * max(np.abs(q).max(), 1.0))
        world = f.a < 0
        hit = f.b[world & (f.normal[:, 2] < 0.99)]        # not the ground's
        assert np.all(hit >= 4)                           # chain b's bodies only
        post_hits += len(hit)
    assert post_hits > 0 and len(ref.shapes) == 6


def test_each_rigs_muscles_pull_in_the_joint_run_and_come_back_with_its_result():
    """A rig's muscles go into the joint run with their bodies (named ``part/muscle``) and
    come back in the part's result under their own names: an arm whose biceps is fully active
    next to a chain, without gravity, flexes its elbow as the arm alone does. The two
    runs solve the same decoupled equations in different orders (the chain's coordinates in
    between), so they agree to the integration's rounding: a relative 1e-9 is 1e3 steps of
    a few ulps each, amplified by the flexing elbow's conditioning of order one."""
    from core.muscles import hill
    from core.rig import RigMuscle
    at_elbow = np.eye(4)
    at_elbow[1, 3] = 0.3
    arm = (RigBody("upper", -1, np.eye(4), RigJoint("fixed"), mass=2.0),
           RigBody("fore", 0, at_elbow, RigJoint("hinge", axis=(1.0, 0.0, 0.0)), mass=1.0,
                   com=(0.0, 0.15, 0.0)))
    biceps = RigMuscle("biceps", (("upper", (0.0, 0.05, 0.03)), ("fore", (0.0, 0.04, 0.03))),
                       hill.HillParameters("biceps", 600.0, 0.1, 0.19), 1.0)
    options = dict(gravity=(0.0, 0.0, 0.0), fps=FPS, duration=0.5)
    rig = build_rigs([RigPart("arm", arm, (), (biceps,)),
                      RigPart("b", _chain((2.0, 0.0, 1.0), False))], **options)
    alone = simulate_rig(build_rig(arm, muscles=[biceps], **options))
    arm_result, chain_result = part_results(rig, simulate_rig(rig))
    assert arm_result.muscles == ("biceps",) and chain_result.muscles == ()
    assert chain_result.tension is None and chain_result.activation is None
    np.testing.assert_array_equal(arm_result.activation, 1.0)
    assert abs(alone.q[-1, 0]) > 0.5                              # the elbow flexed
    np.testing.assert_allclose(arm_result.q, alone.q, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(arm_result.tension, alone.tension, rtol=1e-9)
