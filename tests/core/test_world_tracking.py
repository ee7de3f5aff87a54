"""Bodies that follow their animation in the world (core.rig *Following the animation*,
``follow="global"``; core.integrators *World tracking*; core.dynamics *World tracking*): the
spring is the particle potential's gradient and the step's linearization its derivative at
the target (central finite differences), the recursion's added masses solve the dense
implicit system, a free-floating chain follows a walk within 1 mm at strength 1 and the
default substeps without its error adding up along the chain (as joint-space tracking's
does), a strength keyed down blends to limp without a jump, and bad input is refused
naming the bone."""

import numpy as np
import pytest

from core import backend
from core import dynamics as dyn
from core.errors import InvalidInputError
from core.joints.lower_pairs import Revolute
from core.joints.spherical import Free, Spherical
from core.kinematics import body_jacobian, forward_kinematics
from core.lie import se3, so3
from core.model import Model, spatial_inertia
from core.rig import (TRACK_FREQUENCY, RigBody, RigJoint, RigRun, build_rig,
                       simulate_rig)

FPS = 24.0
TIMES = np.arange(0.0, 2.0 + 1e-9, 1.0 / FPS)
#: central-difference step of the finite-difference checks; their error is O(step^2) of
#: the second derivatives (order 1 here), far under the tolerances below
STEP = 1e-6


@pytest.fixture(autouse=True)
def numpy_backend():
    """The numpy reference (the numba twin is compared with it in test_backend_numba)."""
    previous = backend.use("numpy")
    yield
    backend.use(previous)


def _particles(rng, n=8):
    """A rigid body as ``n`` point masses: ``(masses (n,), points (n, 3))`` and its spatial
    inertia about its origin."""
    m = 0.2 + rng.random(n)
    x = rng.normal(size=(n, 3)) * [0.05, 0.2, 0.08] + [0.0, 0.15, 0.0]
    com = m @ x / m.sum()
    r = x - com
    inertia = np.einsum("n,nab->ab", m, (r * r).sum(1)[:, None, None] * np.eye(3)
                        - r[:, :, None] * r[:, None, :])
    return m, x, spatial_inertia(m.sum(), com, inertia)


def _potential(m, x, T, Ts, k):
    """``k/2 sum m |T x - T* x|^2`` over the particles."""
    d = (x @ T[:3, :3].T + T[:3, 3]) - (x @ Ts[:3, :3].T + Ts[:3, 3])
    return 0.5 * k * float(m @ (d * d).sum(1))


def test_the_spring_is_the_gradient_of_the_particle_potential():
    """Far from the target (a turn of about 1 rad and 0.3 m), the wrench's component along
    each body-frame direction is minus the potential's central difference along it."""
    rng = np.random.default_rng(3)
    m, x, J = _particles(rng)
    k = 500.0
    T = se3.from_rp(so3.exp(rng.normal(size=3)), rng.normal(size=3) * 0.3)
    Ts = se3.from_rp(so3.exp(rng.normal(size=3)), rng.normal(size=3) * 0.3)
    f = dyn.body_spring(J, T, Ts, k)
    grad = np.array([(_potential(m, x, T @ se3.exp(STEP * e), Ts, k)
                      - _potential(m, x, T @ se3.exp(-STEP * e), Ts, k)) / (2 * STEP)
                     for e in np.eye(6)])
    assert np.abs(f + grad).max() <= 1e-6 * np.abs(f).max()


def test_the_step_linearizes_the_pull_by_its_derivative_at_the_target():
    """The implicit step takes the wrench at its end, ``f(T0 exp(h V1), V1)`` with ``V1 = V0
    + h A``, as ``f0 - (h c + h^2 k) J A``: at the target (at rest) its central difference in
    A is that matrix, and ``f0`` the wrench itself; the stiffness ``-df/dxi`` there is ``k
    J``."""
    rng = np.random.default_rng(4)
    _, _, J = _particles(rng)
    k, c, h = (2 * np.pi * TRACK_FREQUENCY) ** 2, 4 * np.pi * TRACK_FREQUENCY, 1.0 / 192
    Ts = se3.from_rp(so3.exp(rng.normal(size=3)), rng.normal(size=3))

    def end_wrench(A):
        V1 = h * A
        return dyn.body_spring(J, Ts @ se3.exp(h * V1), Ts, k) - c * J @ V1
    # A moves the pose by h^2 A: a step of 1 (rad or m)/s^2 turns it by 3e-5, the
    # difference's rounding ~ 100 eps k |J| / step and its truncation ~ k |J| (h^2 step)^3
    # / h^2 (the spring's third derivative), both about 2e-8 here
    step, scale = 1.0, np.abs(k * J).max()
    D = np.stack([(end_wrench(step * e) - end_wrench(-step * e)) / (2 * step)
                  for e in np.eye(6)], axis=1)
    tol = 100 * np.finfo(float).eps * scale / step + scale * h ** 4 * step ** 2
    assert np.abs(D + (h * c + h * h * k) * J).max() <= tol
    K = np.stack([(dyn.body_spring(J, Ts @ se3.exp(STEP * e), Ts, k)
                   - dyn.body_spring(J, Ts @ se3.exp(-STEP * e), Ts, k)) / (2 * STEP)
                  for e in np.eye(6)], axis=1)
    assert np.abs(K + k * J).max() <= 1e-6 * np.abs(k * J).max()


def _tree(rng):
    m = Model()
    m.add_body("root", -1, Free(), np.eye(4), 1.3, rng.normal(size=3) * 0.1,
               np.diag([0.02, 0.03, 0.04]))
    m.add_body("mid", 0, Spherical(), se3.from_rp(so3.exp(rng.normal(size=3) * 0.3),
                                                  [0, 0.3, 0]), 0.7, rng.normal(size=3) * 0.1,
               np.diag([0.01, 0.02, 0.015]))
    m.add_body("tip", 1, Revolute([1, 0, 0]), se3.from_rp(np.eye(3), [0, 0.3, 0]), 0.4,
               [0, 0.1, 0], np.diag([0.01, 0.002, 0.01]))
    return m.compile()


@pytest.mark.parametrize("method", ["dense", "recursive"])
def test_the_added_masses_solve_the_implicit_system(method):
    """The recursion's added masses and pulls give the solution of the dense implicit
    system ``(M + sum_i a_i J_i^T I_i J_i) a = tau - h + sum_i J_i^T (f0_i - a_i I_i
    c_i)`` (``J_i`` the body Jacobian, ``c_i`` the body's velocity-product acceleration):
    two formulations, so round-off apart (the solve's conditioning times a few dozen ulps
    per body)."""
    rng = np.random.default_rng(1)
    m = _tree(rng)
    q, v, tau = rng.normal(size=m.nv) * 0.3, rng.normal(size=m.nv), rng.normal(size=m.nv)
    track = np.zeros((m.nbodies, dyn.TRACK_COLUMNS))
    track[:, :4] = rng.random((m.nbodies, 4)) * [0.5, 300.0, 20.0, 10.0]
    for row in track:
        row[4:13] = so3.exp(rng.normal(size=3)).ravel()
        row[13:] = rng.normal(size=9)
    d = m.create_data()
    got = dyn.aba(m, d, q, v, tau, method=method, track=track).copy()
    M = dyn.crba(m, d, q).copy()
    rhs = tau - dyn.nonlinear_effects(m, d, q, v)
    forward_kinematics(m, d, q, v, np.zeros(m.nv))
    for i, row in enumerate(track):
        a, k, kv, c = row[:4]
        Jb, T, I = body_jacobian(m, d, i, "body"), d.oMi[i].copy(), m.inertias[i]
        Ts = se3.from_rp(row[4:13].reshape(3, 3), row[13:16])
        Vb, Ab = d.Adinv[i] @ d.V[i], d.Adinv[i] @ d.A[i]
        Q, dd = T[:3, :3].T @ Ts[:3, :3], T[:3, :3].T @ (T[:3, 3] - Ts[:3, 3])
        w = Q @ row[16:19]
        W = np.r_[w, Q @ row[19:22] - np.cross(dd, w)]
        f0 = dyn.body_spring(I, T, Ts, k) - I @ (kv * Vb - c * W)
        M += a * Jb.T @ I @ Jb
        rhs += Jb.T @ (f0 - a * I @ Ab)
    expected = np.linalg.solve(M, rhs)
    tol = 64 * np.finfo(float).eps * m.nbodies * np.linalg.cond(M)
    assert np.abs(got - expected).max() <= tol * np.abs(expected).max()


# -- rigs ----------------------------------------------------------------------------------

#: a free-floating chain: hips (free), spine and head (balls), lengths and masses
LENGTHS, MASSES = (0.2, 0.5, 0.25), (12.0, 20.0, 5.0)


def _walk(t):
    """The hips' world poses at times t: 1.2 m/s forward, a 3 cm bob at 2 Hz, a 0.15 rad
    sway and yaw at 1 Hz, 1 m above the ground."""
    R = so3.exp(np.stack([0.05 * np.sin(4 * np.pi * t), 0.15 * np.sin(2 * np.pi * t),
                          0.15 * np.sin(2 * np.pi * t + 1.0)], 1))
    p = np.stack([0.03 * np.sin(2 * np.pi * t), 1.2 * t,
                  1.0 + 0.03 * np.sin(4 * np.pi * t)], 1)
    return se3.from_rp(R, p)


def _motions(times):
    """Each body's animated pose in its parent at ``times``: the hips on :func:`_walk` (Y up
    the bones, along the world's z), the spine and head swinging 0.3 and 0.2 rad."""
    hips = _walk(times) @ se3.from_rp(so3.exp([np.pi / 2, 0.0, 0.0]), np.zeros(3))
    out = [hips]
    for i, (amplitude, phase) in enumerate([(0.3, 0.5), (0.2, 2.0)]):
        swing = amplitude * np.sin(2 * np.pi * times + phase)
        out.append(se3.from_rp(np.eye(3), [0.0, LENGTHS[i], 0.0]) @ se3.from_rp(
            so3.exp(np.outer(swing, [1.0, 0.0, 0.3])), np.zeros((len(times), 3))))
    return out


def _bodies(strength, follow="global"):
    """The chain animated by :func:`_motions`, starting on the animation with its
    velocities."""
    motions = _motions(TIMES)
    around = _motions(np.array([-1.0 / FPS, 1.0 / FPS]))
    out = []
    for i, (length, mass) in enumerate(zip(LENGTHS, MASSES)):
        T_rest = np.eye(4) if i == 0 else se3.from_rp(np.eye(3), [0.0, LENGTHS[i - 1], 0.0])
        inertia = mass * np.diag([length ** 2 / 12 + 0.01, 0.01, length ** 2 / 12 + 0.01])
        out.append(RigBody(["hips", "spine", "head"][i], i - 1, T_rest,
                           RigJoint("free" if i == 0 else "ball"), mass=mass,
                           com=(0.0, length / 2, 0.0), inertia=inertia, pose=motions[i][0],
                           pose_before=around[i][0], pose_after=around[i][1],
                           motion_times=TIMES, motion=motions[i], strength=strength,
                           follow=follow))
    return out


def _world(local):
    """World poses ``(F, 3, 4, 4)`` from the chain's local poses ``(F, 3, 4, 4)``."""
    out = local.copy()
    for i in range(1, local.shape[1]):
        out[:, i] = out[:, i - 1] @ local[:, i]
    return out


def _errors(world):
    """Each frame's largest distance (m) of a body's head or tail from the animation's."""
    target = _world(np.stack(_motions(TIMES), axis=1))
    ends = np.array([[0.0, 0.0, 0.0, 1.0]] + [[0.0, L, 0.0, 1.0] for L in LENGTHS])
    err = [np.linalg.norm((world[:, i] - target[:, i]) @ ends[j], axis=-1)
           for i in range(3) for j in (0, i + 1)]
    return np.max(err, axis=0)


def test_a_free_floating_chain_follows_a_walk_in_the_world_within_a_millimetre():
    """Strength 1, the default 8 substeps per frame, gravity: every body's head and tail
    stay within 1 mm of their animated world positions over the walk (the hips have no
    joint to the world: only the world tracking holds them up); a weak strength lags by
    far more, so the bound is the strength's doing."""
    rig = build_rig(_bodies(1.0), fps=FPS, duration=TIMES[-1])
    assert rig.mechanism.substeps == 8 and rig.mechanism.integrator == "implicit"
    res = simulate_rig(rig)
    err = _errors(res.world)
    assert err.max() < 1e-3, f"a bone strays {1000 * err.max():.3g} mm from the animation"
    weak = simulate_rig(build_rig(_bodies(0.02), fps=FPS, duration=TIMES[-1]))
    assert _errors(weak.world).max() > 3e-3


def test_bones_below_a_walking_kinematic_root_follow_it_in_the_world():
    """The hips kinematic on the walk (a drive: the integrator's driven solve with the added
    masses in M and the pulls in h), the spine and head following globally: within 1 mm."""
    bodies = _bodies(1.0)
    bodies[0] = RigBody(**{**bodies[0].__dict__, "joint": RigJoint("kinematic"),
                           "strength": 0.0})
    rig = build_rig(bodies, fps=FPS, duration=TIMES[-1])
    assert rig.mechanism.drive is not None and rig.mechanism.tracking.world is not None
    err = _errors(simulate_rig(rig).world)
    assert err.max() < 1e-3, f"a bone strays {1000 * err.max():.3g} mm from the animation"


def test_a_live_run_follows_in_the_world_and_keeps_following_after_a_drag():
    """A live run (:class:`core.rig.RigRun`) gives the bake's frames, and after a drag on
    the head restarts it at frame 10 (the world targets read from there on) the hips stay
    within a centimetre of their walk while the head is pulled away by the stiffest drag
    (they give a few millimetres to its pull; targets read a frame off would put them 5 cm
    off at the walk's 1.2 m/s)."""
    rig = build_rig(_bodies(1.0), fps=FPS, duration=TIMES[-1])
    baked = simulate_rig(rig)
    run = RigRun(rig)
    run.advance_to(10)
    np.testing.assert_allclose(run.q[:11], baked.q[:11], rtol=0, atol=1e-12)
    run.set_drag("head", (0.0, LENGTHS[2], 0.0), (0.3, 0.5, 1.9))
    run.advance_to(len(TIMES) - 1)
    target = _world(np.stack(_motions(TIMES), axis=1))[:, 0]
    hips = np.linalg.norm(run.poses[:, 0, :3, 3] - target[:, :3, 3], axis=1)
    assert hips.max() < 1e-2, f"the hips stray {1000 * hips.max():.3g} mm"
    assert np.abs(run.q[-1] - baked.q[-1]).max() > 1e-2                 # the drag acted


def test_world_tracking_does_not_add_up_along_the_chain_as_local_tracking_does():
    """Five 0.3 m hinged bones held out level by strength 0.1 toward their still rest pose.
    In the world every particle is pulled by ``s w^2`` per unit mass against ``g``, so each
    bone sags by about ``g / (s w^2)`` (0.69 mm) and so does the tip; in the joints each
    hinge gives way under the weight beyond it and the tip's drop is the sum of those turns
    times their lever arms, several times more."""
    n, length, s = 5, 0.3, 0.1

    def tip_sag(follow):
        bodies = []
        for i in range(n):
            T = np.eye(4) if i == 0 else se3.from_rp(np.eye(3), [0.0, length, 0.0])
            bodies.append(RigBody(f"b{i}", i - 1, T, RigJoint("hinge"), mass=1.0,
                                  com=(0.0, length / 2, 0.0),
                                  inertia=np.diag([length ** 2 / 12, 1e-3, length ** 2 / 12]),
                                  motion_times=[0.0], motion=[T], strength=s, follow=follow))
        res = simulate_rig(build_rig(bodies, fps=FPS, duration=2.0))
        tip = (res.world[-1, -1] @ [0.0, length, 0.0, 1.0])[:3]
        return float(np.linalg.norm(tip - [0.0, n * length, 0.0]))
    own = 9.81 / (s * (2 * np.pi * TRACK_FREQUENCY) ** 2)
    world, local = tip_sag("global"), tip_sag("local")
    assert world < 1.05 * own, (world, own)
    assert local > 5 * world, (local, world)


def test_strength_halving_per_frame_blends_the_world_pull_out_without_a_jump():
    """From frame 12 the strength halves each frame: the gains fall monotonically at every
    substep, and over the blend the head's acceleration and jerk stay within what the fully
    tracked walk reaches (no pop) while the chain goes limp (falls) by the end; cutting the
    strength to 0 in one frame jerks the head by half as much again as the walk's worst, so
    the check sees a jump."""
    start, frames = 12, np.arange(len(TIMES))
    strength = np.where(frames < start, 1.0, 0.5 ** np.maximum(frames - start, 0))
    mech = build_rig(_bodies(strength), fps=FPS, duration=TIMES[-1]).mechanism
    h = 1.0 / (FPS * mech.substeps)
    k = mech.tracking.world(np.arange(1, len(TIMES) * mech.substeps) * h)[0]
    assert np.all(np.diff(k, axis=0) <= 1e-9 * k.max())
    assert k[-1].max() < 1e-6 * k[0].max()

    def head(strength):
        res = simulate_rig(build_rig(_bodies(strength), fps=FPS, duration=TIMES[-1]))
        tips = (res.world[:, 2] @ np.array([0.0, LENGTHS[2], 0.0, 1.0]))[:, :3]
        return (tips[-1, 2], np.linalg.norm(np.diff(tips, 2, axis=0), axis=1) * FPS ** 2,
                np.linalg.norm(np.diff(tips, 3, axis=0), axis=1) * FPS ** 3)
    window = slice(start - 2, start + 10)
    height, accel, jerk = head(strength)
    tracked_height, tracked_accel, tracked_jerk = head(1.0)
    assert accel[window].max() <= tracked_accel.max()
    assert jerk[window].max() <= tracked_jerk.max()
    assert tracked_height - height > 0.5                            # limp: it fell
    _, _, cut = head(np.where(frames < start, 1.0, 0.0))
    assert cut[window].max() > 1.5 * tracked_jerk.max()


def test_the_target_twist_is_the_derivative_of_the_target_pose():
    """The world tracking's target body twist is the central difference of its target
    poses, ``(T*^-1 dT*/dt)^vee``."""
    rig = build_rig(_bodies(1.0), fps=FPS, duration=TIMES[-1])
    world = rig.mechanism.tracking.world
    t = np.array([0.31, 0.77, 1.4])
    _, _, T, V = world(t)
    _, _, Tp, _ = world(t + STEP)
    _, _, Tm, _ = world(t - STEP)
    fd = np.array([[se3.vee(se3.inv(T[k, i]) @ (Tp[k, i] - Tm[k, i]) / (2 * STEP))
                    for i in range(3)] for k in range(len(t))])
    assert np.abs(fd - V).max() <= 1e-6 * np.abs(V).max()


def test_bad_input_is_refused_naming_the_bone():
    bodies = _bodies(1.0)
    nan = bodies[:2] + [RigBody(**{**bodies[2].__dict__, "strength": float("nan")})]
    with pytest.raises(InvalidInputError, match="head.*Strength"):
        build_rig(nan)
    orphan = [RigBody(**{**bodies[0].__dict__, "motion": None, "motion_times": None,
                         "strength": 0.0})] + bodies[1:]
    with pytest.raises(InvalidInputError, match="spine.*hips.*has none"):
        build_rig(orphan)
    odd = bodies[:2] + [RigBody(**{**bodies[2].__dict__, "follow": "sideways"})]
    with pytest.raises(InvalidInputError, match="head.*follow"):
        build_rig(odd)
