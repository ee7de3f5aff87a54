"""The compiled (numba) backend against the numpy reference: aba, rnea, crba, the nonlinear
effects, the joint Jacobians and the integrator's step on the same models, aba against
Pinocchio, and the numpy fallback where numba cannot be imported. Never timed
(scripts/benchmarks/dynamics.py times them).

Tolerance. Both backends evaluate the same formulas in different orders (world frame and
batched in numpy, body frames one body at a time compiled), so they differ by rounding
only. Along a tree every body's quantities pass through a few 6-term sums per pass of the
recursion and each level adds its rounding, so a result relative to its scale carries about
``EPS * OPS_PER_BODY * nb`` (:func:`tolerance`); solving for accelerations multiplies that by
the conditioning of the mass matrix (``cond(M)``), and the inverse dynamics' torques are
differences of body forces, so their scale is the largest term (``max |M| |a|`` and the
gravity and velocity terms), not the result. On the models here the bound stays at or below
about 1e-12 of the scale.
"""

import os
import subprocess
import sys
import zlib

import numpy as np
import pytest

from core import backend
from core import dynamics as dyn
from core.integrators import Integrator, Tracking
from core.joints.lower_pairs import (Cylindrical, Fixed, Helical, Prismatic, Revolute,
                                     Universal)
from core.joints.spherical import Free, Spherical
from core.joints.spline_curve import ClosedSplineCurveJoint, SplineCurveJoint
from core.lie import se3, so3
from core.model import Model

pytestmark = pytest.mark.skipif(not backend.available(), reason="numba does not import")


def packed(model):
    """The model's packed arrays (:func:`core.compiled.dynamics.packed`; imported once the
    backend has loaded the kernels into its cache folder)."""
    from core.compiled.dynamics import packed as packed_arrays
    return packed_arrays(model)

EPS = np.finfo(float).eps
#: rounding steps per body and per pass of a recursion: four passes (joints and poses,
#: velocities, the backward and the forward sweep), each a few 6-term sums
OPS_PER_BODY = 4 * 4 * 6
#: further rounding steps of a cubic spline curve joint's evaluation (G, S and dS/dq): three
#: exponentials of the cumulative form and their products and derivatives, each a few
#: dozen operations, and up to twice as many where the coordinate is extrapolated
SPLINE_OPS = 3 * 3 * 30
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tolerance(nb, kappa=1.0, joint_ops=0):
    """Relative agreement of the two backends on a tree of ``nb`` bodies (module docstring),
    with ``joint_ops`` more rounding steps per body for joints whose evaluation is long."""
    return EPS * (OPS_PER_BODY + joint_ops) * nb * kappa


@pytest.fixture
def both():
    """Run a function on the numpy backend and on the numba backend; restores the choice."""
    previous = backend.active()

    def run(fn):
        out = []
        for name in ("numpy", "numba"):
            backend.use(name)
            res = fn()
            out.append(tuple(np.array(r, copy=True) for r in res) if isinstance(res, tuple)
                       else np.array(res, copy=True))
        return out
    yield run
    backend.use(previous)


def _placement(rng, scale=0.3):
    return se3.from_rp(so3.exp(rng.normal(size=3) * 0.4), rng.normal(size=3) * scale)


def _spline_joint(seed):
    th = np.linspace(-2.0, 2.0, 9)
    w = 0.03 * (1 + 0.2 * seed)
    return SplineCurveJoint(se3.from_rp(so3.exp(np.outer(th, [0.2, 1.0, 0.1])),
                                        w * np.stack([np.sin(3 * th), th, th * th], axis=1)))


def _closed_joint():
    t = np.linspace(0, 2 * np.pi, 7)[:-1]
    return ClosedSplineCurveJoint(se3.from_rp(so3.exp(np.outer(t, [0.0, 0.0, 1.0])),
                                              0.1 * np.stack([np.cos(t), np.sin(t), 0 * t], 1)))


def _add(m, rng, name, parent, joint):
    return m.add_body(name, parent, joint, _placement(rng), 0.5 + rng.random(),
                      rng.normal(size=3) * 0.1, np.diag(0.02 + 0.01 * rng.random(3)))


def revolute_chain(n, rng):
    m = Model()
    for i in range(n):
        _add(m, rng, f"r{i}", i - 1, Revolute(rng.normal(size=3)))
    return m


def spline_chain(n, rng):
    m = Model()
    for i in range(n):
        _add(m, rng, f"s{i}", i - 1, _spline_joint(i))
    return m


def ball_chain(n, rng):
    m = Model()
    for i in range(n):
        _add(m, rng, f"b{i}", i - 1, Spherical())
    return m


def mixed_tree(rng):
    """A branching tree of every kind: screws, splines, closed splines, welds and balls
    (kernels) beside joints the kernels leave to Python (universal, cylindrical: several
    coordinates), with joint springs, point springs and the bodies in no family order."""
    m = Model(gravity=(0.3, -0.2, -9.81))
    joints = [Revolute((0, 0, 1)), Universal((1, 0, 0), (0, 1, 0)), _spline_joint(0),
              Spherical(), Prismatic((1, 0, 0)), Cylindrical((0, 1, 0)), Helical((0, 0, 1), 0.1),
              _closed_joint(), Spherical(), Revolute((1, 1, 0)), _spline_joint(2), Fixed()]
    parents = [-1, 0, 0, 1, 2, 3, 3, -1, 7, 8, 5, 8]
    for i, (j, p) in enumerate(zip(joints, parents)):
        _add(m, rng, f"t{i}", p, j)
    m.add_joint_spring(1, 2.0, 0.3)
    m.add_joint_spring(3, [1.0, 2.0, 3.0], 0.1)
    m.add_joint_spring(10, 5.0, 0.2)
    m.add_point_spring(4, [0.1, 0, 0], 9, [0, 0.1, 0], 30.0, 0.5, 0.05)
    m.add_point_spring(6, [0, 0, 0.1], -1, [0.2, 0.1, 0.0], 10.0, 0.2)
    return m


def free_tree(rng):
    """Free joints (a kernel of their own) at the root and inside a tree of balls and
    hinges."""
    m = Model()
    for i, (j, p) in enumerate(zip([Free(), Spherical(), Free(), Revolute((0, 1, 0)),
                                    Spherical()], [-1, 0, 1, 0, 3])):
        _add(m, rng, f"f{i}", p, j)
    return m


MODELS = {
    "revolute1": lambda rng: revolute_chain(1, rng),
    "revolute8": lambda rng: revolute_chain(8, rng),
    "revolute32": lambda rng: revolute_chain(32, rng),
    "spline1": lambda rng: spline_chain(1, rng),
    "spline8": lambda rng: spline_chain(8, rng),
    "ball1": lambda rng: ball_chain(1, rng),
    "ball6": lambda rng: ball_chain(6, rng),
    "mixed_tree": mixed_tree,
    "free_tree": free_tree,
}


def _state(m, rng, outside=False):
    q = m.neutral() + 0.4 * rng.normal(size=m.nq)
    if outside:                       # spline coordinates beyond their knots: extrapolation,
        for i, j in enumerate(m.joints):  # or closed curves' beyond a period: wrapped
            if isinstance(j, ClosedSplineCurveJoint):
                q[m.q_start[i]] = j.upper[0] + 2.5 * j.period
            elif isinstance(j, SplineCurveJoint):
                q[m.q_start[i]] = j.upper[0] + 0.3 if i % 2 else j.lower[0] - 0.2
    return q, rng.normal(size=m.nv), rng.normal(size=m.nv)


def _close(a, b, tol, scale, what):
    err = np.abs(a - b).max() / scale
    assert err <= tol, f"{what}: {err:.3g} of the scale > {tol:.3g}"


@pytest.mark.parametrize("outside", [False, True])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_backends_agree(name, outside, both):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    m = MODELS[name](rng)
    d = m.create_data()
    q, v, tau = _state(m, rng, outside)
    fext = rng.normal(size=(m.nbodies, 6))
    nb = m.nbodies
    M = dyn.crba(m, d, q).copy()
    kappa = np.linalg.cond(M)
    ops = SPLINE_OPS if any(isinstance(j, SplineCurveJoint) for j in m.joints) else 0
    a_np, a_nb = both(lambda: dyn.aba(m, d, q, v, tau, fext))
    _close(a_np, a_nb, tolerance(nb, kappa, ops), np.abs(a_np).max(), "aba")
    a_rec, = both(lambda: dyn.aba(m, d, q, v, tau, fext, method="recursive"))[:1]
    _close(a_rec, a_nb, tolerance(nb, kappa, ops), np.abs(a_np).max(), "recursive")
    if all(f.kernel_kind is not None for f in m.families):
        # the kernels' dense method (CRBA, the nonlinear effects, their own Cholesky) against
        # numpy's (LAPACK's): the solve adds 3 nv + 1 roundings per entry times cond(M)
        # (Higham, Accuracy and Stability, thm. 10.4), at most 18 per body (6 coordinates
        # each) against the recursions' OPS_PER_BODY
        a_dense, = both(lambda: dyn.aba(m, d, q, v, tau, fext, method="dense"))[:1]
        _close(_dense_kernel(m, q, v, tau, fext), a_dense, tolerance(nb, kappa, ops),
               np.abs(a_np).max(), "dense kernel")
    t_np, t_nb = both(lambda: dyn.rnea(m, d, q, v, a_np, fext))
    h_np, h_nb = both(lambda: dyn.nonlinear_effects(m, d, q, v, fext))
    scale = max(np.abs(M).max() * np.abs(a_np).max(), np.abs(h_np).max(), np.abs(tau).max())
    _close(t_np, t_nb, tolerance(nb), scale, "rnea")
    _close(t_nb, tau, tolerance(nb, kappa), scale, "rnea(aba(tau))")
    _close(h_np, h_nb, tolerance(nb), scale, "nonlinear effects")
    M_np, M_nb = both(lambda: dyn.crba(m, d, q))
    _close(M_np, M_nb, tolerance(nb), np.abs(M_np).max(), "crba")
    assert np.array_equal(M_nb, M_nb.T)
    (M2, h2), = both(lambda: dyn.crba_and_nle(m, d, q, v, fext))[1:]
    assert np.array_equal(M2, M_nb) and np.array_equal(h2, h_nb)
    # the world poses the kernels leave in data.oMi are the numpy kinematics'
    P_np, P_nb = both(lambda: (dyn.aba(m, d, q, v, tau), d.oMi)[1])
    _close(P_np, P_nb, tolerance(nb), 1.0, "poses")
    _jacobians_agree(m, d, q, both, tolerance(nb, 1.0, ops))
    # an armature as large as M's diagonal: D + armature in both recursions
    arm = rng.random(m.nv) * np.diag(M).max()
    kappa_arm = np.linalg.cond(M + np.diag(arm))
    A_np, A_nb = both(lambda: dyn.aba(m, d, q, v, tau, fext, armature=arm))
    _close(A_np, A_nb, tolerance(nb, kappa_arm, ops), np.abs(A_np).max(), "aba, armature")
    A_rec, = both(lambda: dyn.aba(m, d, q, v, tau, fext, method="recursive", armature=arm))[:1]
    _close(A_rec, A_nb, tolerance(nb, kappa_arm, ops), np.abs(A_np).max(),
           "recursive, armature")


def _dense_kernel(m, q, v, tau, fext):
    """:func:`core.compiled.kernels.dynamics.dense_aba`'s accelerations (a fresh buffer), and
    that it leaves M's Cholesky factor (L below the diagonal, L^T above)."""
    from core.compiled.kernels.dynamics import dense_aba
    from core.compiled.layout import H_DDQ
    previous = backend.use("numba")
    try:
        p, d = packed(m), m.create_data()
        M = np.empty((m.nv, m.nv))
        assert dense_aba(p.ints, p.reals, d.buffer, q, v, tau, np.ascontiguousarray(fext),
                         M) == 0
        L = np.tril(M)
        np.testing.assert_array_equal(np.triu(M), L.T)
        M_ref = dyn.crba(m, m.create_data(), q)
        assert np.abs(L @ L.T - M_ref).max() <= tolerance(m.nbodies) * np.abs(M_ref).max()
        return d.buffer[p.ints[H_DDQ]:p.ints[H_DDQ] + m.nv].copy()
    finally:
        backend.use(previous)


def _jacobians_agree(m, d, q, both, tol):
    """compute_joint_jacobians on both backends: the world poses, the world Jacobian columns,
    the inverse adjoints and ``[Ad S; Ad dS/dq]`` of the one-coordinate joints, relative to
    their largest entry (or 1)."""
    one = m.one_dof_bodies
    out_np, out_nb = both(lambda: (dyn.compute_joint_jacobians(m, d, q), d.oMi, d.Adinv,
                                   d.W[one, :2]))
    for a, b, what in zip(out_np, out_nb, ("S_world", "poses", "Adinv", "W")):
        if a.size:                    # W is empty on a model without one-coordinate joints
            _close(a, b, tol, max(np.abs(a).max(), 1.0), f"compute_joint_jacobians {what}")


def stiff_springs(m, stiffness=2e4, damping=40.0):
    """Joint springs and dampers on every coordinate of ``m``; by default stiff enough at
    the parity tests' 0.5 ms substeps (``h^2 k / I`` and ``h c / I`` of 0.1 to 1 on these
    bodies) that the implicit method's armature ``h C + h^2 K`` and rate term ``h K v``
    change every substep."""
    for i, j in enumerate(m.joints):
        if j.nq:
            m.add_joint_spring(i, stiffness, damping)
    return m


@pytest.mark.parametrize("method", ["euler", "semi_implicit", "rk4", "implicit"])
@pytest.mark.parametrize("name", ["revolute8", "ball6", "spline8", "mixed_tree", "free_tree"])
def test_integrator_step_agrees(name, method, both):
    """One kernel call per substep (models whose joints all have kernels) or the Python
    stages (the mixed tree) give the numpy integrator's trajectory (the implicit method on
    stiff springs)."""
    rng = np.random.default_rng(7)
    m = MODELS[name](rng)
    if method == "implicit":
        stiff_springs(m)
    q0, v0, tau = _state(m, rng)
    fext = 0.1 * rng.normal(size=(m.nbodies, 6))

    def run():
        integ = Integrator(m, 1e-3, 2, method, tau=tau, fext=fext)
        if backend.active() == "numba":
            assert (integ.compiled is not None) == (name != "mixed_tree")
            assert integ.compiled is None or integ.compiled.step_args is not None
        tr = integ.run(q0, v0, 20, check_energy=False)
        return tr.q[-1], tr.v[-1]
    (q_np, v_np), (q_nb, v_nb) = both(run)
    scale = max(np.abs(q_np).max(), np.abs(v_np).max())
    tol = _trajectory_tolerance(m, q0, 20 * 2)
    _close(q_np, q_nb, tol, scale, "q")
    _close(v_np, v_nb, tol, scale, "v")


@pytest.mark.parametrize("method", ["semi_implicit", "rk4", "implicit"])
@pytest.mark.parametrize("name", ["ball6", "free_tree"])
def test_rate_limit_agrees(name, method, both):
    """The rate limit clipped inside the kernel's substeps gives the numpy integrator's
    trajectory, with the limit reached: clipping is 1-Lipschitz, so the differences stay
    those of the unclipped steps."""
    rng = np.random.default_rng(11)
    m = MODELS[name](rng)
    if method == "implicit":
        stiff_springs(m)
    q0, v0, tau = _state(m, rng)
    limit = np.full(m.nv, 0.5 * np.abs(v0).max())

    def run():
        integ = Integrator(m, 1e-3, 2, method, tau=tau, rate_limit=limit)
        if backend.active() == "numba":
            assert integ.compiled is not None and integ.compiled.advance_args is not None
        tr = integ.run(q0, v0, 20, check_energy=False)
        return tr.q[-1], tr.v[-1], np.abs(tr.v[1:]).max(axis=0)   # after the start
    (q_np, v_np, top_np), (q_nb, v_nb, _) = both(run)
    assert np.any(top_np == limit) and np.all(top_np <= limit)
    scale = max(np.abs(q_np).max(), np.abs(v_np).max())
    tol = _trajectory_tolerance(m, q0, 20 * 2)
    _close(q_np, q_nb, tol, scale, "q")
    _close(v_np, v_nb, tol, scale, "v")


def _tracking(m, q0):
    """A :class:`Tracking` of every coordinate of ``m`` toward ``q0 + 0.3 sin(5 t)`` with
    gains that change in time and are as stiff as :func:`stiff_springs` (so the armature and
    the tracking torques change every substep)."""
    def motion(t):
        t = np.asarray(t, dtype=float)[..., None]
        k = 2e4 * (1.0 + 0.5 * np.sin(3.0 * t)) + 0.0 * q0
        return k, 40.0 + 0.0 * k, q0 + 0.3 * np.sin(5.0 * t), 1.5 * np.cos(5.0 * t) + 0.0 * q0
    return Tracking(motion, "test tracking", vectorized=True)


@pytest.mark.parametrize("path", ["steps", "substeps"])
@pytest.mark.parametrize("name", ["revolute8", "ball6", "free_tree"])
def test_tracking_agrees(name, path, both):
    """The tracking springs taken in the kernels (a table of every substep's gains in one
    call of the step kernel, or one row per substep kernel) give the numpy integrator's
    trajectory: the same linearized backward Euler, so the differences are those of the
    accelerations, adding up over the substeps."""
    rng = np.random.default_rng(13)
    m = stiff_springs(MODELS[name](rng))
    q0, v0, tau = _state(m, rng)
    _tracked_runs_agree(m, q0, v0, tau, _tracking(m, q0), path, both)


def _tracked_runs_agree(m, q0, v0, tau, tracking, path, both):
    """Forty implicit 0.5 ms substeps of ``m`` with ``tracking`` from ``(q0, v0)``, as steps
    (one kernel call) or substep by substep, on both backends: moved, and the same to
    :func:`_trajectory_tolerance`."""
    def run():
        integ = Integrator(m, 1e-3, 2, "implicit", tau=tau, tracking=tracking)
        if backend.active() == "numba":
            assert integ.compiled is not None and integ.compiled.advance_args is not None
        if path == "steps":
            tr = integ.run(q0, v0, 20, check_energy=False)
            return tr.q[-1], tr.v[-1]
        q, v = q0.copy(), v0.copy()
        for k in range(40):
            q, v = integ._substep(k * integ.h, q, v)
        return q, v
    (q_np, v_np), (q_nb, v_nb) = both(run)
    assert not np.allclose(q_np, q0)
    scale = max(np.abs(q_np).max(), np.abs(v_np).max())
    tol = _trajectory_tolerance(m, q0, 20 * 2)
    _close(q_np, q_nb, tol, scale, "q")
    _close(v_np, v_nb, tol, scale, "v")


def _world_tracking(m, q0, joints=False):
    """A :class:`Tracking` of every body of ``m`` toward its world pose at ``q0`` turned
    about z by ``0.3 sin(5 t)`` and shifted, with gains per unit mass that change in time (a
    20 Hz spring, so the added masses and the pull change every substep); with ``joints``,
    the joint-space tracking of :func:`_tracking` too."""
    with_numpy = backend.use("numpy")
    try:
        d = m.create_data()
        dyn.kinetic_energy(m, d, q0, np.zeros(m.nv))
        start = d.oMi.copy()
    finally:
        backend.use(with_numpy)
    w = 2 * np.pi * 20.0

    def world(t):
        t = np.asarray(t, dtype=float)
        turn = se3.from_rp(so3.exp(np.outer(0.3 * np.sin(5 * t), [0.0, 0.0, 1.0])),
                           np.outer(0.1 * t, [1.0, 0.0, 0.0]))
        T = turn[:, None] @ start[None]
        k = np.outer(w * w * (1.0 + 0.5 * np.sin(3.0 * t)), np.ones(m.nbodies))
        V = np.broadcast_to(np.array([0.0, 0.0, 1.5, 0.1, 0.0, 0.0]), T.shape[:2] + (6,))
        return k, 2.0 * w + 0.0 * k, T, V
    motion = _tracking(m, q0).motion if joints else None
    return Tracking(motion, "test world tracking", vectorized=True, world=world)


@pytest.mark.parametrize("path", ["steps", "substeps"])
@pytest.mark.parametrize("name", ["revolute8", "ball6", "free_tree"])
def test_world_tracking_agrees(name, path, both):
    """World tracking taken in the kernels (the added masses and pulls of every substep from
    one table, or one row per substep kernel; with joint springs and joint-space tracking
    on the ball chain) gives the numpy integrator's trajectory: the same recursion's
    linearized backward Euler, so the differences are those of the accelerations, adding up
    over the substeps."""
    rng = np.random.default_rng(17)
    m = MODELS[name](rng)
    if name == "ball6":
        stiff_springs(m)
    q0, v0, tau = _state(m, rng)
    _tracked_runs_agree(m, q0, v0, tau, _world_tracking(m, q0, joints=name == "ball6"), path,
                        both)


def _trajectory_tolerance(m, q0, substeps):
    """A trajectory's agreement after ``substeps`` substeps: each substep's accelerations
    carry ``tolerance(nb, cond(M))`` and the differences add up over the substeps (over 1e-3 s
    substeps of these slow motions they are not amplified)."""
    with_numpy = backend.use("numpy")
    try:
        kappa = np.linalg.cond(dyn.crba(m, m.create_data(), q0))
    finally:
        backend.use(with_numpy)
    return tolerance(m.nbodies, kappa) * substeps


@pytest.mark.parametrize("n", [1, 8, 32])
def test_aba_matches_pinocchio_on_the_numba_backend(n):
    pin = pytest.importorskip("pinocchio")
    previous = backend.use("numba")
    try:
        rng = np.random.default_rng(n)
        m = Model()
        pm = pin.Model()
        pm.gravity.linear = np.array(m.gravity)
        parent = 0
        for i in range(n):
            P = _placement(rng)
            mass, com, inertia = 0.5 + rng.random(), rng.normal(size=3) * 0.1, \
                np.diag(0.02 + 0.01 * rng.random(3))
            m.add_body(f"l{i}", i - 1, Revolute((0, 1, 0)), P, mass, com, inertia)
            parent = pm.addJoint(parent, pin.JointModelRY(), pin.SE3(P[:3, :3], P[:3, 3]),
                                 f"j{i}")
            pm.appendBodyToJoint(parent, pin.Inertia(mass, com, inertia), pin.SE3.Identity())
        d, pd = m.create_data(), pm.createData()
        q, v, tau = (rng.normal(size=n) for _ in range(3))
        a = dyn.aba(m, d, q, v, tau)
        ref = pin.aba(pm, pd, q, v, tau)
        kappa = np.linalg.cond(pin.crba(pm, pd, q))
        _close(a, ref, tolerance(n, kappa), np.abs(ref).max(), "aba vs pin.aba")
    finally:
        backend.use(previous)


def test_singular_joint_inertia_raises_on_the_numba_backend():
    """A massless body on a prismatic joint: D = S^T IA S = 0, a NonFiniteError, not NaN."""
    previous = backend.use("numba")
    try:
        m = Model()
        m.add_body("ghost", -1, Prismatic((1, 0, 0)), None, 0.0, (0, 0, 0), np.zeros((3, 3)),
                   physical=False)
        with pytest.raises(ValueError, match="singular"):
            dyn.aba(m, m.create_data(), np.zeros(1), np.zeros(1), np.zeros(1))
    finally:
        backend.use(previous)


def test_nonfinite_arguments_are_rejected_as_on_numpy():
    previous = backend.use("numba")
    try:
        m = revolute_chain(3, np.random.default_rng(0))
        d = m.create_data()
        with pytest.raises(ValueError, match="NaN"):
            dyn.aba(m, d, np.array([0.0, np.nan, 0.0]), np.zeros(3), np.zeros(3))
        with pytest.raises(ValueError, match="shape"):
            dyn.aba(m, d, np.zeros(2), np.zeros(3), np.zeros(3))
        assert np.all(np.isfinite(dyn.aba(m, d, [0.0, 1.0, 2.0], [0, 0, 0], [0, 0, 0])))
    finally:
        backend.use(previous)


def test_aba_kernel_has_one_version_per_ints_type():
    """Lists, other dtypes, strided and read-only arrays go through the Python checks and a
    contiguous copy to the one compiled version of aba_free (never compiling another), with
    the result of float64 arrays; wrong lengths are still InvalidInputErrors."""
    previous = backend.use("numba")
    try:
        m = revolute_chain(3, np.random.default_rng(0))
        d = m.create_data()
        q, v, tau = np.array([0.1, -0.4, 0.3]), np.array([1.0, 0.5, -2.0]), np.zeros(3)
        expected = dyn.aba(m, d, q, v, tau).copy()
        read_only = q.copy()
        read_only.flags.writeable = False
        for args in ((q.tolist(), v, tau), (np.repeat(q, 2)[::2], v, tau),
                     (q.astype(np.float32).astype(np.float64), v.astype(np.float32), tau),
                     (read_only, v, tau)):
            assert np.array_equal(dyn.aba(m, d, *args), dyn.aba(m, d, *(np.asarray(
                x, dtype=float) for x in args)))
        assert np.array_equal(dyn.aba(m, d, read_only, v, tau), expected)
        from numba import types
        states = types.Array(types.float64, 1, "C")
        assert {sig[1:] for sig in backend.kernels.aba_free.signatures} == {(states,) * 5}
        assert len(backend.kernels.aba_free.signatures) <= 2          # writable, read-only ints
        with pytest.raises(ValueError, match="shape"):
            dyn.aba(m, d, q, v, np.zeros(4))
    finally:
        backend.use(previous)


def test_large_joint_kinds_compile_for_their_models_only():
    """The packer marks the ints of a model with an n-DOF spline joint (or a CustomJoint)
    read-only, the kernels' sign to compile those joints' evaluation; other models'
    ints stay writable (and their kernels without that code)."""
    from core.compiled import layout as L
    from core.joints.spline_surface import KIND_SURFACE, SplineJoint

    knots, ramp = np.arange(-3.0, 5.0), 0.3 * np.arange(4.0)
    coefficients = np.zeros((6, 4, 4))
    coefficients[0], coefficients[1] = ramp[:, None], ramp[None, :]
    surface = Model()
    surface.add_body("s", -1, SplineJoint([knots, knots], coefficients), None, 1.0,
                     (0, 0, -0.1), 0.01 * np.eye(3))
    assert not packed(surface).ints.flags.writeable
    assert packed(MODELS["mixed_tree"](np.random.default_rng(0))).ints.flags.writeable
    assert packed(surface).ints[L.HEADER + L.I_KIND] == KIND_SURFACE


#: rounding steps of an n-DOF spline joint's evaluation per basis twist (the joint has m of
#: them): its coordinate phi_j, a tensor sum of k^n products of the axes' basis values (each
#: a Horner of k terms, 2 k roundings per axis), then as a cubic spline curve's its
#: exponential and the products of Appendix B
def _surface_ops(m, k, n):
    return m * (k ** n + 2 * k * n + SPLINE_OPS)


def _surface_tree(rng):
    """n-DOF spline joints of two and three coordinates (cubic, six basis twists) below a
    revolute and a ball, the first with a point spring."""
    from core.joints.spline_surface import SplineJoint

    knots = np.arange(-3.0, 5.0)
    c2 = 0.3 * rng.normal(size=(6, 4, 4))
    c3 = 0.2 * rng.normal(size=(6, 4, 4, 4))
    m = Model(gravity=(0.2, 0.1, -9.81))
    for i, (j, p) in enumerate(zip([Revolute((0, 1, 0)), SplineJoint([knots, knots], c2),
                                    Spherical(), SplineJoint([knots] * 3, c3)],
                                   [-1, 0, 1, 2])):
        _add(m, rng, f"u{i}", p, j)
    m.add_point_spring(1, [0.1, 0, 0], -1, [0.0, 0.2, 0.1], 20.0, 0.3)
    return m


@pytest.mark.parametrize("outside", [False, True])
def test_surface_joints_agree(outside, both):
    """The compiled n-DOF spline joint (:func:`core.compiled.kernels.surface.surface_joint`) against
    :meth:`core.joints.spline_surface.SplineJoint.evaluate` through aba, rnea, crba and the
    world poses, inside the knot domain and beyond it (the linear continuation), to
    :func:`tolerance` with the joint's own rounding steps (:func:`_surface_ops`)."""
    from core.joints.spline_surface import SplineJoint

    rng = np.random.default_rng(23)
    m = _surface_tree(rng)
    d = m.create_data()
    nb = m.nbodies
    q = m.neutral() + 0.5 * rng.normal(size=m.nq)
    if outside:
        for i, j in enumerate(m.joints):
            if isinstance(j, SplineJoint):
                q[m.q_start[i]] = j.upper[0] + 0.7
                q[m.q_start[i] + 1] = j.lower[1] - 0.4
    v, tau, fext = rng.normal(size=m.nv), rng.normal(size=m.nv), rng.normal(size=(nb, 6))
    ops = _surface_ops(6, 4, 3)
    M_np, M_nb = both(lambda: dyn.crba(m, d, q))
    kappa = np.linalg.cond(M_np)
    _close(M_np, M_nb, tolerance(nb, 1.0, ops), np.abs(M_np).max(), "crba")
    a_np, a_nb = both(lambda: dyn.aba(m, d, q, v, tau, fext))
    _close(a_np, a_nb, tolerance(nb, kappa, ops), np.abs(a_np).max(), "aba")
    t_np, t_nb = both(lambda: dyn.rnea(m, d, q, v, a_np, fext))
    scale = max(np.abs(M_np).max() * np.abs(a_np).max(), np.abs(tau).max(),
                np.abs(t_np).max())
    _close(t_np, t_nb, tolerance(nb, 1.0, ops), scale, "rnea")
    P_np, P_nb = both(lambda: (dyn.aba(m, d, q, v, tau), d.oMi)[1])
    _close(P_np, P_nb, tolerance(nb, 1.0, ops), 1.0, "poses")


def test_use_and_environment():
    previous = backend.active()
    try:
        assert backend.use("numpy") == previous
        assert backend.active() == "numpy" and backend.kernels is None
        backend.use("numba")
        assert backend.active() == "numba" and backend.kernels is not None
        with pytest.raises(ValueError, match="backend must be"):
            backend.use("cuda")
    finally:
        backend.use(previous)


_FALLBACK = r"""
import sys, warnings
sys.modules["numba"] = None                      # numba "not installed": ImportError
sys.path.insert(0, ROOT)
import numpy as np
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from core import backend, dynamics
    assert backend.active() == "numpy", backend.active()
    assert not backend.available()
msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
if ENV == "numba":
    assert any("does not import" in s for s in msgs), msgs
else:
    assert not msgs, msgs
from core.joints.lower_pairs import Revolute
from core.model import Model
m = Model()
for i in range(3):
    m.add_body(f"l{i}", i - 1, Revolute((0, 1, 0)))
a = dynamics.aba(m, m.create_data(), np.zeros(3), np.zeros(3), np.zeros(3))
assert np.all(np.isfinite(a))
try:
    backend.use("numba")
except ValueError as err:
    assert "numba" in str(err)
else:
    raise AssertionError("use('numba') without numba must raise")
print("fallback ok")
"""


@pytest.mark.parametrize("env", [None, "numba"])
def test_numpy_fallback_without_numba(env):
    """With numba hidden (an ImportError), the core runs on numpy: silently by default,
    with a RuntimeWarning when the environment asked for numba."""
    code = _FALLBACK.replace("ROOT", repr(ROOT)).replace("ENV", repr(env))
    environ = dict(os.environ)
    environ.pop(backend.ENV_VAR, None)
    if env is not None:
        environ[backend.ENV_VAR] = env
    out = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "fallback ok" in out.stdout


class _PythonCone:
    """A limit the compiled solver does not know (the reach cone's constraints through the
    limit interface only), so the limits run in Python after each substep's kernel call."""

    def __init__(self, cone):
        self.cone = cone

    def __getattr__(self, name):
        return getattr(self.cone, name)

    def bind(self, model):
        self.cone.bind(model)
        return self


def _limited(kind, rng, springs=False):
    """A chain with limits the compiled solver runs (reach cones on balls, coordinate
    limits on revolutes, an elliptic cone among the cones) or one it leaves to Python (a
    limit of another class, "python"); with :func:`stiff_springs` when ``springs``."""
    from core.limits import CoordinateLimit, EllipticCone, LimitSolver, ReachCone
    if kind == "revolute":
        m = revolute_chain(5, rng)
        lims = [CoordinateLimit(i, -0.3, 0.4) for i in range(5)]
        lims.append(CoordinateLimit(2, upper=0.2))
    else:
        m = ball_chain(5, rng)
        lims = [ReachCone(i, rng.normal(size=3), 0.4 + 0.1 * i) for i in range(5)]
        if kind == "elliptic":
            lims[2] = EllipticCone(2, (0, 0, 1), (1, 0, 0), 0.5, 0.3)
        if kind == "python":
            lims[2] = _PythonCone(lims[2])
    if springs:
        stiff_springs(m)
    return m, LimitSolver(m, lims, restitution=0.3)


@pytest.mark.parametrize("method", ["semi_implicit", "rk4", "implicit"])
@pytest.mark.parametrize("kind", ["revolute", "ball", "elliptic", "python"])
def test_limits_agree(kind, method, both):
    """The limit solver compiled into the step kernel (coordinate limits, circular and
    elliptic reach cones) or applied in Python after each substep kernel (a limit of another
    class present) gives the numpy path's trajectory, the same engagement at every step and
    the same distances (the implicit method on stiff springs).

    Tolerance: as the integrator test (:func:`_trajectory_tolerance` over the 300
    substeps), the impulses adding a Cholesky solve and 30 Gauss-Seidel sweeps on a W of
    condition below 1e2 per substep; engagement flips only where a distance is within
    rounding of zero, so it is compared exactly."""
    rng = np.random.default_rng(11)
    m, solver = _limited(kind, rng, springs=method == "implicit")
    q0 = 0.3 * rng.normal(size=m.nq)
    v0 = (4.0 if kind != "revolute" else 2.0) * rng.normal(size=m.nv)

    def run():
        integ = Integrator(m, 1e-3, 2, method, limits=solver)
        assert backend.active() == "numpy" or \
            (integ.compiled.advance_args is not None) == (kind != "python")
        assert solver.compiled == (kind != "python")
        state = integ.start(q0, v0)
        flags, dist = [], []
        for k in range(150):
            state = integ.advance(k * integ.dt, state)
            flags.append(solver.engaged.copy())
            dist.append(solver.distances.copy())
        return state[0], state[1], np.array(flags), np.array(dist)
    (q_np, v_np, e_np, d_np), (q_nb, v_nb, e_nb, d_nb) = both(run)
    assert e_np.any() and not e_np.all(), "the run should engage and release limits"
    assert np.array_equal(e_np, e_nb)
    scale = max(np.abs(q_np).max(), np.abs(v_np).max())
    tol = _trajectory_tolerance(m, q0, 150 * 2)
    _close(q_np, q_nb, tol, scale, "q")
    _close(v_np, v_nb, tol, scale, "v")
    _close(d_np, d_nb, tol, 1.0, "distances")


#: rounding steps of one limit's value and gradient: the rotation's coefficients, the
#: rotated axis, the cone or twist formula and J_b^T, each a few dozen operations
LIMIT_OPS = 100


def test_limit_evaluation_agrees(both):
    """LimitSolver.evaluate compiled (:func:`core.compiled.kernels.limit_constraints`) and
    each limit's own evaluation give the same values and gradients for every compiled kind
    (coordinate bounds, circular and elliptic cones, twist bounds) at rotation angles 0,
    1e-8, random, and 1e-6 off pi and 2 pi, and the same error where a twist is undefined.

    Tolerance: LIMIT_OPS roundings of unit-size terms, times the conditioning of the
    formulas at the sample: 1 / rho^2 = 1 / (1 - Z^2) of an elliptic cone's far branch (Z =
    the rotated axis's cosine with the axis, Z < 0) and 1 / cos^2(swing / 2) of a twist
    (from scipy's quaternion of the rotation: ``w^2 + <(x, y, z), p>^2``)."""
    from scipy.spatial.transform import Rotation

    from core.errors import InvalidInputError
    from core.limits import CoordinateLimit, EllipticCone, LimitSolver, ReachCone, TwistLimit
    rng = np.random.default_rng(5)
    m = ball_chain(4, rng)
    twist_axis = np.array([0.2, 1.0, 0.1]) / np.linalg.norm([0.2, 1.0, 0.1])
    ellipse_axes = {1: np.array([0.0, 0.0, 1.0]), 3: np.array([1.0, 0.0, 0.0])}
    solver = LimitSolver(m, [ReachCone(0, (0.3, 0.2, 1.0), 0.7),
                             EllipticCone(1, ellipse_axes[1], (1, 0, 0), 0.5, 1.1),
                             TwistLimit(2, twist_axis, -0.4, 0.6),
                             CoordinateLimit(3, -0.3, 0.2, index=1),
                             EllipticCone(3, ellipse_axes[3], (0, 1, 0), 1.2, 0.4)])
    assert solver.compiled and solver.n_constraints == 7
    for angle in (0.0, 1e-8, None, np.pi - 1e-6, np.pi + 1e-6, 2 * np.pi - 1e-6):
        for _ in range(40):
            axes = rng.normal(size=(4, 3))
            axes /= np.linalg.norm(axes, axis=1, keepdims=True)
            q = (axes * (rng.uniform(0.0, 2.0 * np.pi, size=(4, 1)) if angle is None
                         else angle)).ravel()
            (d_np, N_np), (d_nb, N_nb) = both(lambda: solver.evaluate(q))
            rot = Rotation.from_rotvec(q.reshape(4, 3))
            kappa = 1.0
            for b, p in ellipse_axes.items():
                Z = rot[b].apply(p) @ p
                kappa = max(kappa, 1.0 / (1.0 - Z * Z) if Z < 0.0 else 1.0)
            x, y, z, w = rot[2].as_quat()
            kappa = max(kappa, 1.0 / (w * w + np.dot([x, y, z], twist_axis) ** 2))
            tol = EPS * LIMIT_OPS * kappa
            _close(d_np, d_nb, tol, max(1.0, np.abs(d_np).max()), "values")
            _close(N_np, N_nb, tol, max(1.0, np.abs(N_np).max()), "gradients")
    swing = np.cross(twist_axis, [1.0, 0.0, 0.0])                # a swing of pi
    q = np.zeros(12)
    q[6:9] = np.pi * swing / np.linalg.norm(swing)
    for name in ("numpy", "numba"):
        backend.use(name)
        with pytest.raises(InvalidInputError, match="twist about the axis is undefined"):
            solver.evaluate(q)


def test_limit_hold_agrees(both):
    """LimitSolver.hold compiled (:func:`core.compiled.kernels.limit_hold`, one call for the
    constraints, the joint-space projection and the constraints at its end) and in Python
    (:meth:`core.limits.LimitSolver.project` around each limit's evaluation): the same
    projected coordinates, values and gradients, and q itself back where every limit is
    within its deadband.

    Tolerance: each projection pass is a Gauss-Seidel on ``N N^T`` (unit gradients of
    distinct coordinates' limits, condition below 10) and a re-evaluation, LIMIT_OPS
    roundings each; up to POSITION_PASSES passes, so 10 POSITION_PASSES LIMIT_OPS EPS."""
    from core.compiled.layout import POSITION_PASSES
    from core.limits import CoordinateLimit, EllipticCone, LimitSolver, ReachCone, TwistLimit
    rng = np.random.default_rng(8)
    m = ball_chain(4, rng)
    solver = LimitSolver(m, [ReachCone(0, (0.3, 0.2, 1.0), 0.5),
                             EllipticCone(1, (0, 0, 1), (1, 0, 0), 0.4, 0.7),
                             TwistLimit(2, (0.2, 1.0, 0.1), -0.3, 0.4),
                             CoordinateLimit(3, -0.3, 0.2, index=1)])
    tol = 10 * POSITION_PASSES * LIMIT_OPS * EPS
    projected = 0
    for scale in (0.05, 0.8, 1.2):
        for _ in range(10):
            q = scale * rng.normal(size=12)

            def hold():
                q1, d, N = solver.hold(q)
                return q1, d, N, np.array(q1 is q)
            (q_np, d_np, N_np, same_np), (q_nb, d_nb, N_nb, same_nb) = both(hold)
            assert same_np == same_nb
            projected += not same_np
            _close(q_np, q_nb, tol, max(1.0, np.abs(q_np).max()), "q")
            _close(d_np, d_nb, tol, 1.0, "values")
            _close(N_np, N_nb, tol, max(1.0, np.abs(N_np).max()), "gradients")
    assert 5 <= projected < 30, projected


def test_kernel_chart_change_is_reparametrize():
    """The step kernel's chart change of spherical joints is
    :func:`core.expcoords.reparametrize` (|r| from below pi to 3 pi, a few ulps), and that of
    free joints :meth:`core.joints.spherical.Free.normalize`."""
    from core.expcoords import reparametrize
    previous = backend.use("numba")
    try:
        rng = np.random.default_rng(5)
        m = ball_chain(6, rng)
        p = packed(m)
        r = rng.normal(size=(6, 3))
        r *= np.linspace(0.5, 3.0, 6)[:, None] * np.pi / np.linalg.norm(r, axis=1)[:, None]
        rd = rng.normal(size=(6, 3))
        q, v = r.ravel().copy(), rd.ravel().copy()
        backend.kernels.normalize(p.ints, q, v)
        ref = reparametrize(r, rd)
        assert np.allclose(q, ref.r.ravel(), rtol=0, atol=64 * EPS * 3 * np.pi)
        assert np.allclose(v, ref.r_dot.ravel(), rtol=0, atol=64 * EPS * np.abs(rd).max() * 10)
        m = free_tree(rng)                  # free joints: the rotation part, as Free.normalize
        p = packed(m)
        q0, v0 = 3.0 * rng.normal(size=m.nq), rng.normal(size=m.nv)
        q, v = q0.copy(), v0.copy()
        backend.kernels.normalize(p.ints, q, v)
        for i, j in enumerate(m.joints):
            s = slice(m.q_start[i], m.q_start[i] + m.q_count[i])
            if isinstance(j, Free):
                qr, vr = j.normalize(q0[s], v0[s])
                assert np.linalg.norm(q0[s][:3]) > np.pi
                assert np.allclose(q[s], qr, rtol=0, atol=64 * EPS * 3 * np.pi)
                assert np.allclose(v[s], vr, rtol=0, atol=64 * EPS * np.abs(v0).max() * 10)
    finally:
        backend.use(previous)


def test_failed_kernel_step_reports_as_the_python_path():
    """A step the kernel cannot finish (a diverging state) is taken again in Python, which
    raises the SimulationError naming the body and a smaller step."""
    from core.errors import SimulationError
    previous = backend.use("numba")
    try:
        rng = np.random.default_rng(3)
        m, solver = _limited("ball", rng)
        integ = Integrator(m, 2.0, 1, "euler", limits=solver)
        assert integ.compiled.advance_args is not None
        with pytest.raises(SimulationError, match="reduce the step"):
            integ.run(np.zeros(m.nq), 1e3 * np.ones(m.nv), 50, check_energy=False)
    finally:
        backend.use(previous)


def test_compiled_cg_is_scipys_iteration(both):
    """The projection's conjugate gradients compiled give scipy's multipliers and iteration
    count on a Jacobi-preconditioned SPD system. Tolerance: both stop with ``|r| <
    rtol |b|``, so ``|lam_1 - lam_2| <= |A^-1| (|r_1| + |r_2|) < 2 rtol |A^-1| |b|``."""
    import scipy.sparse as sp

    from core.maximal.solver import project
    rng = np.random.default_rng(2)
    m, n = 40, 90
    J = sp.random(m, n, density=0.08, random_state=3) + sp.eye(m, n)
    minv = 0.5 + rng.random(n)
    b = rng.normal(size=m)
    out = both(lambda: (lambda r: (r.lam, r.dx, [r.iterations], [r.converged]))(
        project(J, minv, b, method="cg", tol=1e-12)))
    (lam_np, dx_np, it_np, ok_np), (lam_nb, dx_nb, it_nb, ok_nb) = out
    A = (J @ sp.diags(minv) @ J.T).toarray()
    bound = 2 * 1e-12 * np.linalg.norm(b) / np.linalg.eigvalsh(A).min()
    assert ok_np[0] and ok_nb[0] and abs(int(it_np[0]) - int(it_nb[0])) <= 1
    assert np.linalg.norm(lam_np - lam_nb) <= bound
    capped = both(lambda: [project(J, minv, b, method="cg", tol=1e-12, maxiter=5).iterations])
    assert capped[0][0] == capped[1][0] == 5


def test_faure_assembly_agrees(both):
    """Faure's correction with the compiled CG: the same geometric iterations and errors'
    decrease, and configurations within the CG's bound per round (scaled by the rounds)."""
    from core.maximal.faure import bar_between_disks, four_bar

    def run(make):
        asm = make()
        asm.p = asm.p + 0.05 * np.random.default_rng(1).normal(size=asm.p.shape)
        dq, info = asm.correction(geometric_iterations=6, cg_iterations=200)
        return dq, np.array(info.errors), np.array(info.cg_iterations), asm.p
    for make in (four_bar, bar_between_disks):
        (dq_np, e_np, c_np, p_np), (dq_nb, e_nb, c_nb, p_nb) = both(lambda: run(make))
        assert e_np.size == e_nb.size and e_np[-1] <= 1e-10 and e_nb[-1] <= 1e-10
        assert np.abs(c_np - c_nb).max() <= 1
        # each round's dx differs by at most the CG bound (1e-12 relative, times the
        # conditioning of these small systems, < 1e3): 1e-9 of the configuration's size
        _close(p_np, p_nb, 1e-9, max(1.0, np.abs(p_np).max()), "positions")
        _close(dq_np, dq_nb, 1e-9, max(1.0, np.abs(dq_np).max()), "dq")


# -- OpenSim CustomJoints: compiled from their axis and function tables ----------------------
def _opensim_tree(rng):
    """The CustomJoints of tests/core/test_opensim_joints.py (three coordinates with
    splines, a polynomial, a multiplier and a constant axis; two coordinates with
    multivariate polynomials, which stay in Python) and one of a single coordinate with
    every compiled function kind (nested multipliers, a piecewise linear function), with an
    ellipsoid joint (Python) between them."""
    from test_opensim_joints import KNOTS_X, KNOTS_Y, TILTED, _custom_joint, _multivariate_joint

    from core.joints.opensim import (Constant, CustomJoint, EllipsoidJoint, LinearFunction,
                                     MultiplierFunction, PiecewiseLinearFunction,
                                     PolynomialFunction, SimmSpline)
    knee = CustomJoint(
        TILTED,
        [SimmSpline(KNOTS_X, KNOTS_Y), MultiplierFunction(MultiplierFunction(
            SimmSpline(KNOTS_X[:3], KNOTS_Y[:3]), 0.7), -1.3), LinearFunction(0.4, 0.1),
         PiecewiseLinearFunction(KNOTS_X, 0.1 * KNOTS_Y), PolynomialFunction([0.02, -0.1, 0.05]),
         Constant(0.03)],
        [0, 0, 0, 0, 0, None], 1)
    m = Model(gravity=(0.1, -9.81, 0.2))
    joints = [_custom_joint(), knee, EllipsoidJoint([0.3, 0.2, 0.1]), _multivariate_joint(),
              _custom_joint(), knee]
    for i, (j, p) in enumerate(zip(joints, [-1, 0, 1, 0, 3, 4])):
        _add(m, rng, f"o{i}", p, j)
    return m


def _knot_states(m, rng):
    """Coordinates inside, beyond and at the knots of tests/core/test_opensim_joints.py
    (exactly at a knot, within ROUNDOFF_ERROR of an end knot, beyond both ends)."""
    from test_opensim_joints import KNOTS_X
    states = [m.neutral() + 0.8 * rng.normal(size=m.nq)]
    for picks in ([KNOTS_X[0] - 0.7, KNOTS_X[-1] + 0.9], KNOTS_X, [KNOTS_X[0] + 1e-13,
                                                                     KNOTS_X[-1] - 1e-13]):
        states.append(rng.choice(picks, size=m.nq))
    return states


def _gait2392():
    from core.io.osim import read_osim
    path = os.path.join(ROOT, "..", "shared", "data", "osim", "gait2392_thelen2003muscle.osim")
    if not os.path.exists(path):
        pytest.skip("gait2392 not in ../shared/data/osim")
    osim = read_osim(path)
    return osim.to_core_model(lock=())[0], osim.default_q()


@pytest.mark.parametrize("which", ["opensim_joints", "gait2392"])
def test_custom_joints_agree(which, both):
    """CustomJoints (every one of gait2392's twelve; the test joints) compiled against
    their Python evaluation: aba, rnea, the nonlinear effects and crba at states inside,
    beyond and at the spline knots, to :func:`tolerance` as the other models (the joint's
    own evaluation adds a few dozen roundings of its axis functions' terms, within the
    per-body allowance)."""
    from core.compiled import layout as L
    from core.joints.family import KIND_PYTHON
    from core.joints.opensim import KIND_CUSTOM, CustomJoint, CustomJointFamily
    rng = np.random.default_rng(16)
    if which == "gait2392":
        m, q0 = _gait2392()
        states = [q0 + rng.uniform(-lim, lim, m.nq) for lim in (0.3, 1.0, 3.0)]
    else:
        m = _opensim_tree(rng)
        states = _knot_states(m, rng)
    nb = m.nbodies
    kinds = packed(m).ints[L.HEADER:L.HEADER + L.NI * nb].reshape(nb, L.NI)[:, L.I_KIND]
    for b, j in enumerate(m.joints):
        compiled = isinstance(j, CustomJoint) and CustomJointFamily.accepts(j)
        assert kinds[b] == (KIND_CUSTOM if compiled else KIND_PYTHON)
    if which == "gait2392":
        assert np.all(kinds == KIND_CUSTOM)
    d = m.create_data()
    for q in states:
        v, tau = rng.normal(size=m.nv), rng.normal(size=m.nv)
        fext = rng.normal(size=(nb, 6))
        M = dyn.crba(m, d, q).copy()
        kappa = np.linalg.cond(M)
        a_np, a_nb = both(lambda: dyn.aba(m, d, q, v, tau, fext))
        _close(a_np, a_nb, tolerance(nb, kappa), np.abs(a_np).max(), "aba")
        t_np, t_nb = both(lambda: dyn.rnea(m, d, q, v, a_np, fext))
        h_np, h_nb = both(lambda: dyn.nonlinear_effects(m, d, q, v))
        scale = max(np.abs(M).max() * np.abs(a_np).max(), np.abs(h_np).max(),
                    np.abs(tau).max())
        _close(t_np, t_nb, tolerance(nb), scale, "rnea")
        _close(h_np, h_nb, tolerance(nb), scale, "nonlinear effects")
        M_np, M_nb = both(lambda: dyn.crba(m, d, q))
        _close(M_np, M_nb, tolerance(nb), np.abs(M_np).max(), "crba")
        P_np, P_nb = both(lambda: (dyn.aba(m, d, q, v, tau), d.oMi)[1])
        _close(P_np, P_nb, tolerance(nb), 1.0, "poses")
        _jacobians_agree(m, d, q, both, tolerance(nb))


def test_cache_folder_is_named_by_the_sources(tmp_path):
    """A change to any core source names a new cache folder (numba itself checks only each
    cached function's own file), and the folders of other sources are removed."""
    from core import backend
    digest = backend.source_digest()
    assert len(digest) == 16 and digest == backend.source_digest()
    stale = tmp_path / "0123456789abcdef"
    stale.mkdir()
    keep = tmp_path / "notes"
    keep.mkdir()
    folder = backend._cache_folder(str(tmp_path))
    assert folder == str(tmp_path / digest) and not stale.exists() and keep.exists()


def test_cache_folder_starts_from_the_shipped_one(tmp_path):
    """A cache folder that does not exist yet starts as a copy of the shipped cache of its
    digest (the extension zip's compiled kernels); one that exists is left as it is."""
    from core import backend
    digest = backend.source_digest()
    shipped = tmp_path / "shipped" / digest
    shipped.mkdir(parents=True)
    (shipped / "kernels").mkdir()
    (shipped / "kernels" / "aba-1.py311.nbi").write_bytes(b"index")
    folder = backend._cache_folder(str(tmp_path / "user"), shipped=str(tmp_path / "shipped"))
    assert (tmp_path / "user" / digest / "kernels" / "aba-1.py311.nbi").read_bytes() == b"index"
    assert sorted(os.listdir(tmp_path / "user")) == [digest]          # no temporary left
    (shipped / "kernels" / "aba-1.py311.nbi").write_bytes(b"other")
    assert backend._cache_folder(str(tmp_path / "user"), shipped=str(tmp_path / "shipped")) == folder
    assert (tmp_path / "user" / digest / "kernels" / "aba-1.py311.nbi").read_bytes() == b"index"


_MOVED_CORE = """
import json, sys
sys.path.insert(0, PARENT)
from core import backend
backend.set_cpu("generic")
backend.set_cache_dir(CACHE)
compiles = []
backend.watch_compiles(lambda kernel, seconds: seconds is None or compiles.append(kernel))
import numpy as np
from core import dynamics
from core.joints.lower_pairs import Revolute
from core.model import Model
m = Model()
for i in range(3):
    m.add_body(f"l{i}", i - 1, Revolute((0, 1, 0)), np.eye(4), 1.0, np.array([0.0, 0.0, -0.1]),
               0.01 * np.eye(3))
a = dynamics.aba(m, m.create_data(), np.full(3, 0.3), np.full(3, 0.2), np.zeros(3))
print(json.dumps({"compiled": compiles, "a": [x.hex() for x in a]}))
"""


def test_cache_loads_from_a_moved_copy_of_the_core(tmp_path):
    """Kernels cached by a copy of the core load, without compiling, in another copy of the
    same sources at another path with other modification times (as the extension's shipped
    kernels load wherever Blender installs it), and give the same bits."""
    import json
    import shutil
    environ = {k: v for k, v in os.environ.items()
               if k not in ("NUMBA_CACHE_DIR", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES",
                            backend.ENV_VAR)}
    built, installed = tmp_path / "built", tmp_path / "elsewhere" / "installed"
    shutil.copytree(os.path.join(ROOT, "core"), built / "core",
                    ignore=shutil.ignore_patterns("__pycache__"))
    runs = []
    for parent in (built, installed):
        if parent == installed:
            shutil.copytree(built / "core", installed / "core", copy_function=shutil.copyfile,
                            ignore=shutil.ignore_patterns("__pycache__"))
            shutil.rmtree(built)
        code = _MOVED_CORE.replace("PARENT", repr(str(parent))).replace(
            "CACHE", repr(str(tmp_path / "cache")))
        out = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True,
                             text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert "aba" in runs[0]["compiled"] or "aba_free" in runs[0]["compiled"], runs[0]
    assert runs[1]["compiled"] == []
    assert runs[1]["a"] == runs[0]["a"]


def test_portable_cpu_follows_the_machine(monkeypatch, capfd):
    """x86-64-v3 where the CPU has every feature it needs, generic x86-64 where one is
    missing, Apple's M1 on any Mac with Apple silicon, none (the machine's own CPU) on other
    ARM machines; each a CPU that LLVM knows for its target (it warns and ignores a name it
    does not know)."""
    import platform
    import sys

    from llvmlite import binding
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    monkeypatch.setattr(sys, "platform", "linux")
    assert backend.portable_cpu() is None
    monkeypatch.setattr(sys, "platform", "darwin")
    assert backend.portable_cpu() == backend.APPLE_CPU
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    every = dict.fromkeys(backend._PORTABLE_FEATURES, True)
    monkeypatch.setattr(binding, "get_host_cpu_features", lambda: every)
    assert backend.portable_cpu() == backend.PORTABLE_CPU == "x86-64-v3"
    monkeypatch.setattr(binding, "get_host_cpu_features", lambda: {**every, "avx2": False})
    assert backend.portable_cpu() == "generic"
    binding.initialize_all_targets()
    binding.initialize_all_asmprinters()
    module = binding.parse_assembly("define double @f(double %a) {\n ret double %a\n}")
    for triple, cpu in (("arm64-apple-darwin", backend.APPLE_CPU),
                        ("x86_64-unknown-linux-gnu", backend.PORTABLE_CPU),
                        ("arm64-apple-darwin", "no-such-cpu")):
        capfd.readouterr()
        target = binding.Target.from_triple(triple)
        target.create_target_machine(cpu=cpu, features="").emit_assembly(module)
        unknown = "is not a recognized processor" in capfd.readouterr().err
        assert unknown == (cpu == "no-such-cpu"), (triple, cpu)
