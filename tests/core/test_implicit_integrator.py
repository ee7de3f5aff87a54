"""The "implicit" method of :mod:`core.integrators` (symplectic Euler with the joint springs
and dampers by linearized backward Euler): the articulated-body solve with an armature
against a dense solve, a hinge against the scheme's own recurrence and against the
continuous oscillator, stability on light chains where the explicit methods diverge, its
energy, and the driven step's equation.

Tolerances. The armature solve: as ``test_backend_numba``'s (rounding steps per body and
pass times the bodies times the condition of ``M + diag(armature)``). The hinge: one
substep is a few dozen roundings (the joint's evaluation, ``S^T J S``, the right-hand side
and the update, :data:`STEP_OPS`), and with ``|lambda| <= 1`` the differences only add up
over the substeps. The continuous comparison: the bound of the module docstring,
``|ln(lambda) / h - mu| <= w (w h / 2) / (1 - w h)``.
"""

import math

import numpy as np
import pytest

from core import backend
from core import dynamics as dyn
from core.errors import InvalidInputError, SimulationError
from core.integrators import Drive, Integrator
from core.joints.lower_pairs import Prismatic, Revolute
from core.joints.spherical import Free, Spherical
from core.lie import se3
from core.massprops import capsule_mass_properties
from core.model import Model
from tests.core.test_backend_numba import SPLINE_OPS, _add, _spline_joint, tolerance

EPS = np.finfo(float).eps
BACKENDS = ["numpy"] + (["numba"] if backend.available() else [])
#: the user's frame rate and substeps (the add-on's defaults)
FPS, SUBSTEPS = 24.0, 16
H = 1.0 / (FPS * SUBSTEPS)
#: rounding steps of one substep of a one-coordinate joint: its evaluation and ``S^T J S``
#: (a few dozen), the right-hand side and the update (a dozen)
STEP_OPS = 100


@pytest.fixture(params=BACKENDS)
def on_backend(request):
    previous = backend.use(request.param)
    yield request.param
    backend.use(previous)


def branched(rng):
    """A free root carrying a ball, a hinge, a slider and a cubic spline curve joint on two
    branches, with joint springs."""
    m = Model(gravity=(0.2, -0.1, -9.81))
    for i, (j, p) in enumerate(zip([Free(), Spherical(), Revolute((0, 1, 0)),
                                    Prismatic((1, 0, 0)), _spline_joint(1), Spherical()],
                                   [-1, 0, 1, 0, 3, 4])):
        _add(m, rng, f"b{i}", p, j)
    m.add_joint_spring(1, [3.0, 2.0, 1.0], 0.2)
    m.add_joint_spring(4, 5.0, 0.1)
    return m


def one_body(joint):
    m = Model()
    m.add_body("b", -1, joint, None, 1.3, (0.1, 0.05, -0.2), np.diag([0.02, 0.03, 0.025]))
    m.add_joint_spring(0, 2.0, 0.3)
    return m


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_armature_aba_is_the_dense_solve(seed, on_backend):
    """aba with an armature solves ``(M + diag(armature)) a = tau - h`` (M from crba, h the
    nonlinear effects) by every method, compiled or not, on a branched tree and on one body
    (the "body" method), at random states and armatures as large as M's diagonal."""
    rng = np.random.default_rng(seed)
    for m, ops in ((branched(rng), SPLINE_OPS), (one_body(Revolute((0, 0, 1))), 0),
                   (one_body(Spherical()), 0)):
        d = m.create_data()
        q = m.neutral() + 0.4 * rng.normal(size=m.nq)
        v, tau = rng.normal(size=m.nv), rng.normal(size=m.nv)
        fext = rng.normal(size=(m.nbodies, 6))
        M, h = (x.copy() for x in dyn.crba_and_nle(m, d, q, v, fext))
        arm = rng.random(m.nv) * np.diag(M).max()
        A = M + np.diag(arm)
        ref = np.linalg.solve(A, tau - h)
        tol = tolerance(m.nbodies, np.linalg.cond(A), ops)
        methods = ["auto", "dense", "recursive"] + (["body"] if m.nbodies == 1 else [])
        for method in methods:
            a = dyn.aba(m, d, q, v, tau, fext, method=method, armature=arm)
            err = np.abs(a - ref).max() / np.abs(ref).max()
            assert err <= tol, f"{method}: {err:.3g} > {tol:.3g}"
        plain = np.linalg.solve(M, tau - h)            # a zero armature: plain aba
        for method in methods:
            a = dyn.aba(m, d, q, v, tau, fext, method=method, armature=np.zeros(m.nv))
            assert np.abs(a - plain).max() <= tolerance(m.nbodies, np.linalg.cond(M), ops) * \
                np.abs(plain).max()
        assert np.abs(plain - ref).max() > 1e3 * tol * np.abs(ref).max()
    with pytest.raises(InvalidInputError, match=">= 0"):
        dyn.aba(m, d, q, v, tau, armature=-np.ones(m.nv))


def hinge(length):
    """A capsule of ``length`` (radius a tenth, water's density) on a hinge about z, without
    gravity: a linear oscillator ``I x'' + c x' + k x = 0`` once a spring is added."""
    mp = capsule_mass_properties(0.1 * length, length, 1000.0, axis=0)
    m = Model(gravity=(0.0, 0.0, 0.0))
    m.add_body("bone", -1, Revolute((0, 0, 1)), None, mp.mass, mp.com, mp.inertia)
    return m


def _run_hinge(m, k, c, x0, seconds):
    m.add_joint_spring(0, k, c)
    n = int(round(seconds / H))
    tr = Integrator(m, H, 1, "implicit").run(np.array([x0]), np.zeros(1), n,
                                             check_energy=False)
    return tr.q[:, 0], tr.v[:, 0]


@pytest.mark.parametrize("length", [0.01, 1.0])
def test_hinge_follows_the_schemes_recurrence(length):
    """With the user's numbers (stiffness 2, damping 0.1) on a 1 cm and a 1 m bone (moments
    of inertia 1e10 apart; on the small bone ``h c / I`` and ``h^2 k / I`` are far beyond
    the explicit methods' bounds), the trajectory is the recurrence ``a = -(k x + (c + h k)
    v) / (I + h c + h^2 k)``, ``v += h a``, ``x += h v`` to rounding, and its energy ``(I v^2
    + k x^2) / 2`` never grows (backward Euler on the oscillator: ``x1 - x0 = h f(x1)`` with
    ``<x1, f(x1)> = -c v1^2 <= 0`` in that energy's inner product)."""
    m = hinge(length)
    I = float(dyn.crba(m, m.create_data(), np.zeros(1))[0, 0])
    k, c = 2.0, 0.1
    xs, vs = _run_hinge(m, k, c, 0.3, 2.0)
    x, v = 0.3, 0.0
    rx, rv = [x], [v]
    for _ in range(len(xs) - 1):
        a = -(k * x + (c + H * k) * v) / (I + H * c + H * H * k)
        v += H * a
        x += H * v
        rx.append(x)
        rv.append(v)
    tol = STEP_OPS * EPS * len(xs)
    assert np.abs(xs - rx).max() <= tol * np.abs(rx).max()
    assert np.abs(vs - rv).max() <= tol * np.abs(rv).max()
    energy = I * vs * vs + k * xs * xs
    assert np.all(np.diff(energy) <= tol * energy[0])
    if length < 0.1:
        assert H * c / I > 1e3 and H * H * k / I > 10


def _fit_eigenvalue(x):
    """The complex eigenvalue lambda of a sampled damped oscillation ``x_n = Re(p
    lambda^n)``: the samples obey ``x_{n+2} = 2 Re(lambda) x_{n+1} - |lambda|^2 x_n``, whose
    two coefficients a least-squares fit returns."""
    (tr, det), *_ = np.linalg.lstsq(np.stack([x[1:-1], -x[:-2]], axis=1), x[2:], rcond=None)
    return complex(0.5 * tr, math.sqrt(det - 0.25 * tr * tr))


@pytest.mark.parametrize("zeta", [0.0, 0.1])
@pytest.mark.parametrize("length", [0.01, 1.0])
def test_hinge_period_and_decay_within_the_stated_bound(length, zeta):
    """A joint of 2 Hz and damping ratio zeta, normalized by the bone's inertia (so the
    same motion on both bones): the eigenvalue measured from the trajectory is the closed
    form ``1 / (1 - h mu)`` (``|lambda|^2 = 1 / (1 + h c/I + h^2 k/I)``), and its decay rate
    and frequency per second are the continuous ones within ``w (w h / 2) / (1 - w h)``;
    undamped, the numerical decay is most of that bound (the scheme's damping ratio about
    ``w h / 2``), so the bound is not loose."""
    m = hinge(length)
    I = float(dyn.crba(m, m.create_data(), np.zeros(1))[0, 0])
    w = 2.0 * math.pi * 2.0
    k, c = I * w * w, 2.0 * zeta * I * w
    xs, _ = _run_hinge(m, k, c, 0.3, 2.0)
    lam = _fit_eigenvalue(xs)
    mu = complex(-zeta * w, w * math.sqrt(1.0 - zeta * zeta))
    # the samples' rounding (as the recurrence test's) through the fit, whose two columns
    # differ by about w h: its condition is about 1 / (w h)^2
    tol = STEP_OPS * EPS * len(xs) / (w * H) ** 2
    assert abs(lam - 1.0 / (1.0 - H * mu)) <= tol
    assert abs(abs(lam) ** 2 - 1.0 / (1.0 + H * c / I + H * H * k / I)) <= tol
    rate = np.log(lam) / H                                  # -decay + i frequency, per s
    bound = w * (w * H / 2.0) / (1.0 - w * H)
    assert abs(rate.real - mu.real) <= bound
    assert abs(rate.imag - mu.imag) <= bound
    if zeta == 0.0:
        assert -rate.real >= 0.9 * w * w * H / 2.0 and -rate.real / rate.imag <= w * H / 2.0


def capsule_chain(n, stiffness, damping, gravity=(0.0, 0.0, -9.81)):
    """``n`` capsules of 3 cm (radius 3 mm, water's density) on ball joints, the first on
    the world, each bone along y from its parent's tail (horizontal under the default
    gravity), with joint springs and dampers (none when both are 0)."""
    bone = 0.03
    mp = capsule_mass_properties(0.1 * bone, bone, 1000.0)
    m = Model(gravity=gravity)
    for i in range(n):
        m.add_body(f"c{i}", i - 1, Spherical(),
                   None if i == 0 else se3.from_rp(np.eye(3), [0.0, bone, 0.0]),
                   mp.mass, mp.com, mp.inertia)
        if stiffness or damping:
            m.add_joint_spring(i, stiffness, damping)
    return m


def _bent(m, angle):
    q = m.neutral()
    q[0::3] = angle                                   # each ball bent about its x axis
    return q


#: (chain length, start bend (rad), stiffness, damping) of the stability runs: the 6-bone
#: tail over the whole grid, 1e-4 to 1e3 and none; the 30-bone chain without the runs whose
#: springs and dampers are both 1e-4 or less: that chain, falling undamped, whips its tip
#: to hundreds of rad/s, and its explicit velocity terms then diverge at these substeps
#: under "semi_implicit" as under "implicit" (the springs and dampers are not the cause)
GRID = [(6, 0.5, k, c) for k in (0.0, 1e-4, 2.0, 1e3) for c in (0.0, 1e-4, 0.1, 1e3)] + \
    [(30, 0.1, k, c) for k in (0.0, 1e-4, 2.0, 1e3) for c in (1e-2, 0.1, 1e3)] + \
    [(30, 0.1, k, c) for k in (2.0, 1e3) for c in (0.0, 1e-4)]


@pytest.mark.parametrize("n,bend,stiffness,damping", GRID)
def test_light_chains_stay_stable_and_lose_energy(n, bend, stiffness, damping):
    """A chain of 3 cm capsules on ball joints (the 6-bone tail of a user's rig, a 30-bone
    chain), released bent from horizontal under gravity, 2 s at 24 fps x 16 substeps: no
    divergence, and with a damper the mechanical energy (springs included) never exceeds
    its start by more than the method's O(h) oscillation
    (:func:`test_undamped_energy_oscillates_as_symplectic_euler`)."""
    m = capsule_chain(n, stiffness, damping)
    tr = Integrator(m, 1.0 / FPS, SUBSTEPS, "implicit").run(_bent(m, bend), np.zeros(m.nv),
                                                           int(2 * FPS))
    assert np.all(np.isfinite(tr.q)) and np.all(np.isfinite(tr.v))
    if damping > 0.0:
        assert tr.energy.max() - tr.energy[0] <= UNDAMPED_OSCILLATION


#: the bound (J) on ``|E - E0|`` of the undamped 6-bone chain hanging 0.1 rad from rest over
#: 2 s at 24 fps x 16 substeps (measured 4.8e-6 J; symplectic Euler's oscillation, O(h))
UNDAMPED_OSCILLATION = 1e-5


def test_undamped_energy_oscillates_as_symplectic_euler():
    """Without springs and dampers "implicit" is "semi_implicit" (the same trajectory), and
    on the 6-bone chain hanging (gravity along the bones) and swinging 0.1 rad its energy
    error is symplectic Euler's: within :data:`UNDAMPED_OSCILLATION`, bounded (the second
    second's at most twice the first's, no drift) and first order (at most 0.6 of it with
    twice the substeps)."""
    m = capsule_chain(6, 0.0, 0.0, gravity=(0.0, 9.81, 0.0))
    q0 = _bent(m, 0.1)

    def run(method, substeps):
        return Integrator(m, 1.0 / FPS, substeps, method).run(q0, np.zeros(m.nv),
                                                             int(2 * FPS))
    tr = run("implicit", SUBSTEPS)
    ref = run("semi_implicit", SUBSTEPS)
    assert np.array_equal(tr.q, ref.q) and np.array_equal(tr.v, ref.v)
    err = np.abs(tr.energy - tr.energy[0])
    half = len(err) // 2
    assert err.max() <= UNDAMPED_OSCILLATION
    assert err[half:].max() <= 2.0 * err[:half + 1].max()
    fine = np.abs(run("implicit", 2 * SUBSTEPS).energy - tr.energy[0])
    assert fine.max() <= 0.6 * err.max()


def test_rk4_diverges_where_implicit_does_not():
    """The user's tail (stiffness 2, damping 0.1 on 3 cm bones) diverges under rk4 and
    semi_implicit at 16 substeps, and not under implicit: the grid of
    :func:`test_light_chains_stay_stable_and_lose_energy` can fail."""
    m = capsule_chain(6, 2.0, 0.1)
    q0 = _bent(m, 0.5)
    for method in ("rk4", "semi_implicit"):
        with pytest.raises(SimulationError, match="diverged|blow-up"):
            Integrator(m, 1.0 / FPS, SUBSTEPS, method).run(q0, np.zeros(m.nv), int(2 * FPS))
    tr = Integrator(m, 1.0 / FPS, SUBSTEPS, "implicit").run(q0, np.zeros(m.nv), int(2 * FPS))
    assert np.abs(tr.v[-1]).max() < 1e-2                  # settled at its rest


def test_driven_step_solves_the_reduced_equation():
    """With a drive and springs on free and on driven coordinates, one substep is ``(M_ff +
    A_f) a_f = tau_f - h_f - M_fp a_p - h K_f v_f``, ``v1 = v0 + h a``, ``q1 = q0 + h v1`` on
    the free coordinates (A the armature ``h C + h^2 K``), the driven ones set to the drive's
    motion, and the drive's work ``h f_p . v_p`` with ``f_p = M_p a + h_p - tau_p`` (their
    springs in h_p as they are)."""
    rng = np.random.default_rng(5)
    m = branched(rng)
    m.add_joint_spring(0, 40.0, 3.0)                  # on the driven root
    m.add_joint_spring(2, 800.0, 9.0)
    p = np.arange(6)

    ap = 0.7 * np.ones(6)

    def motion(t):
        return 0.1 * t + 0.5 * ap * t * t, 0.1 + ap * t, ap
    q0 = m.neutral() + 0.2 * rng.normal(size=m.nq)
    q0[p] = 0.0
    v0 = rng.normal(size=m.nv)
    v0[p] = 0.1
    tau = rng.normal(size=m.nv)
    h = 1e-2
    integ = Integrator(m, h, 1, "implicit", tau=tau, drive=Drive(tuple(p), motion))
    q1, v1, work = integ.advance(0.0, integ.start(q0, v0))
    with_numpy = backend.use("numpy")
    try:
        M, nle = (x.copy() for x in dyn.crba_and_nle(m, m.create_data(), q0, v0))
    finally:
        backend.use(with_numpy)
    f = np.setdiff1d(np.arange(m.nv), p)
    K, C = m.spring_k, m.spring_c
    A = M[np.ix_(f, f)] + np.diag(h * C[f] + h * h * K[f])
    a = np.zeros(m.nv)
    a[p] = ap
    a[f] = np.linalg.solve(A, tau[f] - nle[f] - M[np.ix_(f, p)] @ ap - h * K[f] * v0[f])
    kappa = np.linalg.cond(A)
    tol = tolerance(m.nbodies, kappa, SPLINE_OPS)
    v_ref = v0 + h * a
    assert np.abs(v1[f] - v_ref[f]).max() <= tol * np.abs(v_ref).max()
    assert np.abs(q1[f] - (q0[f] + h * v_ref[f])).max() <= tol * np.abs(q0).max()
    qp, vp, _ = motion(h)
    assert np.array_equal(q1[p], qp) and np.array_equal(v1[p], vp)
    fp = M[p] @ a + nle[p] - tau[p]
    assert abs(work - h * fp @ v0[p]) <= tol * h * np.abs(fp).max() * np.abs(v0[p]).sum()
    explicit = np.linalg.solve(M[np.ix_(f, f)], tau[f] - nle[f] - M[np.ix_(f, p)] @ ap)
    assert np.abs(explicit - a[f]).max() > 1e3 * tol * np.abs(a).max()
