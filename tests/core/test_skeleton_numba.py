"""The seed-001 skeleton step compiled (numba backend, :mod:`core.compiled.skeleton`)
against the numpy reference (sparse LU of system (6)): accelerations and forces, trajectories
of 10- and 100-body skeletons with every update and post-stabilization, the momentum and
energy behaviour, and the fallbacks to numpy. Never timed (scripts/benchmarks/maximal.py times
them).

Tolerance. The numpy path factors ``A = J M^-1 Jf^T`` by sparse LU; the kernel eliminates
the saddle-point system over the tree. Both solve the same equations, so they differ by
rounding only: each of the ``N + n`` nodes of the tree passes through a handful of 6-term
sums per pass (:data:`OPS_PER_NODE`), the solve multiplies the relative rounding by the
conditioning of ``A``, and along a trajectory of ``K``
steps the per-step differences add up (the horizons are short enough that the dynamics
do not amplify them noticeably). A result ``x`` is compared relative to its scale
``max |x|``: ``|x_numba - x_numpy| <= EPS * OPS_PER_NODE * (N + n) * kappa * K * max |x|``.
The conditioning ``kappa`` is that of ``A`` scaled to a unit diagonal (:func:`kappa`): the
rows of ``A`` mix units (metres of the point rows, radians of the axis rows, masses and
inertias) and both eliminations are insensitive to such diagonal scalings up to rounding
(van der Sluis), so ``cond(A)`` itself (1e4 to 1e7 here) would overstate the error by the
scaling alone (the scaled one is 60 to 2e4). Being a worst-case sum, the bound still
exceeds the observed differences (1e-15 to 1e-12 of the scale) by a wide margin.
"""

import numpy as np
import pytest

from core import backend
from core.errors import SimulationError
from core.maximal.skeleton import Skeleton, SkeletonState, chain

pytestmark = pytest.mark.skipif(not backend.available(), reason="numba does not import")

EPS = np.finfo(float).eps
#: rounding steps per tree node and pass: the rows, the elimination (a 6x6 inverse and two
#: 6-term products) and the back-substitution, each a few 6-term sums
OPS_PER_NODE = 4 * 6


@pytest.fixture
def on():
    """``on(name, fn)``: ``fn()`` with backend ``name`` active; restores the choice."""
    previous = backend.active()

    def run(name, fn):
        backend.use(name)
        return fn()
    yield run
    backend.use(previous)


def _moving(n, seed=0, grounded=False):
    """A chain of ``n`` rods (every third joint spherical) with random consistent
    velocities, a bent configuration, friction and motors."""
    skel, st = chain(n, spherical=tuple(range(0, n - 1, 3)), grounded=grounded)
    rng = np.random.default_rng(seed)
    skel = Skeleton(skel.mass * rng.uniform(0.5, 2.0, n), skel.inertia, skel.E, skel.lever,
                    skel.axis, mu=rng.uniform(0.0, 0.2, skel.n),
                    motor=rng.normal(scale=0.3, size=skel.n))
    st.v = rng.normal(size=st.v.shape)
    st.w = rng.normal(size=st.w.shape)
    st, _ = skel.stabilize(st, tol=1e-13, max_iterations=50)
    return skel, st


def kappa(skel, st):
    """``cond(D^-1/2 A D^-1/2)`` of system (6), ``A = J M^-1 Jf^T`` at ``st`` and ``D`` its
    diagonal (dense)."""
    p, R, _, _ = skel._ext(st)
    J, Jf, _, _ = skel._jacobians(p, R)
    A = (J @ skel._minv @ Jf.T).toarray()
    d = np.sqrt(np.abs(np.diag(A)))
    return float(np.linalg.cond(A / d[:, None] / d[None, :]))


def tolerance(skel, st, steps=1):
    return EPS * OPS_PER_NODE * (skel.N + skel.n) * kappa(skel, st) * steps


def _close(a, b, tol):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(np.abs(a).max(initial=0.0), 1e-300)
    assert np.abs(a - b).max(initial=0.0) <= tol * scale, (np.abs(a - b).max() / scale, tol)


@pytest.mark.parametrize("n", [10, 100])
def test_accelerations_and_forces_match_numpy(on, n):
    skel, st = _moving(n, seed=n)
    f = np.array([0.0, 0.0, -9.81]) * skel.mass[:, None]
    ref = on("numpy", lambda: skel.accelerations(st, f))
    out = on("numba", lambda: skel.accelerations(st, f))
    tol = tolerance(skel, st)
    for r, o in zip(ref, out):
        _close(r, o, tol)


@pytest.mark.parametrize("n", [10, 100])
@pytest.mark.parametrize("update,stabilize,grounded", [("momentum", False, False),
                                                       ("paper", False, True),
                                                       ("momentum", True, True),
                                                       ("heun", True, True),
                                                       ("heun", False, False)])
def test_trajectories_match_numpy(on, n, update, stabilize, grounded):
    """Every update, with and without post-stabilization; "heun" solves system (6) twice
    per step, so its differences add up over twice the steps."""
    skel, st0 = _moving(n, seed=n + 1, grounded=grounded)
    f = np.array([0.0, -9.81, 0.0]) * skel.mass[:, None]
    steps = 25

    def run():
        st, infos = st0.copy(), []
        for _ in range(steps):
            st, info = skel.step(st, 2e-3, f, update=update, stabilize=stabilize)
            infos.append(info)
        return st, infos

    (ref, ri), (out, oi) = on("numpy", run), on("numba", run)
    tol = tolerance(skel, st0, steps * (2 if update == "heun" else 1))
    for name in ("p", "R", "v", "w"):
        _close(getattr(ref, name), getattr(out, name), tol)
    _close(ri[-1].c, oi[-1].c, tol)
    _close(ri[-1].d, oi[-1].d, tol)
    for a, b in zip(ri, oi):
        assert a.stabilization_iterations == b.stabilization_iterations
        # separations: lengths of joint gaps, rounding relative to the body positions' scale
        for x, y in ((a.separation_before, b.separation_before),
                     (a.separation_after, b.separation_after)):
            assert abs(x - y) <= tol * (1 + np.abs(ref.p).max())


def test_momentum_and_energy_behaviour_unchanged(on):
    """Free-floating with friction and motors: linear and angular momentum conserved to
    round-off every step on both backends; the kinetic energies of the two runs agree."""
    skel, st0 = _moving(100, seed=3)
    P0, L0 = skel.linear_momentum(st0), skel.angular_momentum(st0)
    scale = 1 + np.abs(L0).max() + np.abs(P0).max()

    def run():
        st, energies = st0.copy(), []
        for _ in range(100):
            st, _ = skel.step(st, 2e-3)
            assert np.abs(skel.linear_momentum(st) - P0).max() < 1e-12 * scale
            assert np.abs(skel.angular_momentum(st) - L0).max() < 1e-12 * scale
            energies.append(skel.kinetic_energy(st))
        return np.array(energies)

    ref, out = on("numpy", run), on("numba", run)
    _close(ref, out, tolerance(skel, st0, 100))


def test_heun_and_loops_run_on_numpy_and_agree(on):
    """"heun" calls the compiled accelerations twice; a loop through the world (not a
    tree) is left to the numpy path on the numba backend."""
    skel, st = _moving(10, seed=5, grounded=True)
    ref = on("numpy", lambda: skel.step(st, 1e-3, update="heun")[0])
    out = on("numba", lambda: skel.step(st, 1e-3, update="heun")[0])
    _close(ref.w, out.w, tolerance(skel, st, 2))
    # close the chain to the world at its far end too
    E = np.vstack([skel.E, [[9, -1]]])
    lever = np.concatenate([skel.lever, [[[0.5, 0, 0], [10.0, 0, 0]]]])
    loop = Skeleton(skel.mass, skel.inertia, E, lever, np.zeros((skel.n + 1, 2, 3)))
    rest = SkeletonState(st.p * 0 + (np.arange(10)[:, None] + 0.5) * [1.0, 0, 0],
                         np.broadcast_to(np.eye(3), (10, 3, 3)).copy(), np.zeros((10, 3)),
                         np.zeros((10, 3)))
    from core.compiled import skeleton as compiled
    assert compiled.packed(loop) is None
    a = on("numpy", lambda: loop.step(rest, 1e-3, update="paper")[0])
    b = on("numba", lambda: loop.step(rest, 1e-3, update="paper")[0])
    np.testing.assert_array_equal(a.p, b.p)


def test_divergence_raises_the_numpy_error_on_numba(on):
    skel, st = _moving(10, seed=6)
    st.w = st.w * 1e150
    for name in ("numpy", "numba"):
        with pytest.raises(SimulationError, match="Skeleton.step diverged"):
            on(name, lambda: skel.step(st, 1e3))


@pytest.mark.parametrize("update", ["heun", "momentum"])
def test_steps_is_repeated_step(on, update):
    """``Skeleton.steps`` (one kernel call on numba) gives the states of as many ``step``
    calls, bit for bit on numba (the same kernel steps) and on numpy (the same loop)."""
    skel, st0 = _moving(10, seed=3, grounded=True)
    f = np.array([0.0, -9.81, 0.0]) * skel.mass[:, None]
    for name in ("numba", "numpy"):
        def run():
            st = st0.copy()
            for _ in range(7):
                st, info = skel.step(st, 2e-3, f, update=update, stabilize=True)
            many, info_many = skel.steps(st0, 2e-3, 7, f, update=update, stabilize=True)
            return st, info, many, info_many
        st, info, many, info_many = on(name, run)
        for x in ("p", "R", "v", "w"):
            assert np.array_equal(getattr(st, x), getattr(many, x)), (name, x)
        assert np.array_equal(info.c, info_many.c)
        assert info.stabilization_iterations == info_many.stabilization_iterations


def test_steps_failure_raises_as_step(on):
    """A diverging run through ``steps`` raises the SimulationError of ``step``."""
    skel, st = _moving(10, seed=4)
    st.v *= 1e3
    st.w *= 1e3
    with pytest.raises(SimulationError, match="Skeleton.step"):
        on("numba", lambda: skel.steps(st, 0.5, 20, update="heun", stabilize=True))
