"""The compiled muscle forces (core.compiled.actuation) against the numpy reference
(core.muscles.actuation, core.muscles.hill): the generalized forces of straight paths
(:class:`~core.muscles.actuation.PointPaths` in :class:`~core.muscles.actuation.MuscleForces`)
and the activation dynamics' RK4 (:func:`~core.muscles.actuation.activation_table`).

Tolerances. Both backends evaluate the same formulas, in other orders and with fused
multiply-adds, so they differ by rounding only: each result carries about ``N * EPS`` of the
magnitudes it is built from, ``N`` = 64 bounding twice (one per backend) the ~30 roundings on
the longest chain of one term (a point's transform 6, a segment's difference and norm 5, the
unit vector 1, the speed's dot product 5, a wrench's cross product 3, the subtree sum over 4
bodies, the projection on a column 6), times the conditioning of each step:

* a unit vector ``e = d / |d|`` from points of magnitude ``|p|`` carries ``EPS |p| / |d|``
  relative: ``kappa = max |p| / min |d|``;
* a tension ``T(L, dL/dt)`` carries its own evaluation's rounding (``N EPS`` of the sum of its
  terms' magnitudes ``F_abs``), plus its sensitivity to the inputs' rounding,
  ``|dT/dL| (L + sum |p|)`` and ``|dT/d(dL/dt)| (|dL/dt| + kappa sum |v_p|)`` (central
  differences of the reference), relative ``N EPS``;
* ``tau_j = sum_m T_m r_mj``: ``sum_m (dT_m + kappa N EPS |T_m|) A_mj`` with ``A_mj`` the
  sum of the magnitudes of the path's terms on coordinate j (``|S_ang,j| |p| + |S_lin,j|``
  over the points of muscle m below coordinate j, once per segment at the point).

The activations: RK4 of ``n`` grid steps, about 40 roundings per step and muscle (four
rates with a tanh each); the dynamics is contractive (``da/dt`` decreases with ``a`` and the
step is below the time constants), so a step's rounding does not grow afterwards and ``n *
48 * EPS`` bounds the sum of all steps' roundings.
"""

import math

import numpy as np
import pytest

from core import backend
from core.muscles import actuation, hill
from core.rig import RigBody, RigJoint, RigMuscle, build_rig

pytestmark = pytest.mark.skipif(not backend.available(), reason="numba does not import")

EPS = np.finfo(float).eps
N = 64


@pytest.fixture
def numba_backend():
    previous = backend.use("numba")
    yield
    backend.use(previous)


def _placed(y):
    T = np.eye(4)
    T[1, 3] = y
    return T


def _arm(control="activation"):
    """A shoulder (ball), elbow (hinge) and wrist (universal) below a fixed torso, with
    muscles on one, two and three segments, world points, a via point, slack and taut
    tendons, pennation and damping."""
    bodies = [RigBody("torso", -1, np.eye(4), RigJoint("fixed"), mass=30.0),
              RigBody("upper", 0, _placed(0.4), RigJoint("ball"), mass=2.0,
                      com=(0.0, 0.15, 0.0), inertia=np.diag([0.015, 0.002, 0.015])),
              RigBody("fore", 1, _placed(0.3), RigJoint("hinge", axis=(1.0, 0.0, 0.0)),
                      mass=1.2, com=(0.0, 0.13, 0.0), inertia=np.diag([0.008, 0.001, 0.008])),
              RigBody("hand", 2, _placed(0.26), RigJoint("universal", axis=(1.0, 0.0, 0.0),
                                                         axis2=(0.0, 0.0, 1.0)),
                      mass=0.4, com=(0.0, 0.05, 0.0), inertia=np.diag([5e-4, 2e-4, 5e-4]))]
    paths = [(("torso", (0.03, 0.25, 0.0)), ("upper", (0.02, 0.12, 0.01))),
             (("", (-0.05, 0.3, 0.04)), ("upper", (-0.02, 0.1, 0.0)),
              ("fore", (-0.03, 0.08, 0.02))),
             (("upper", (0.0, 0.2, 0.03)), ("fore", (0.0, 0.1, 0.03))),
             (("torso", (0.0, 0.3, -0.04)), ("upper", (0.01, 0.15, -0.04)),
              ("fore", (0.0, 0.05, -0.03)), ("hand", (0.0, 0.04, -0.02))),
             (("fore", (0.02, 0.15, 0.0)), ("hand", (0.01, 0.05, 0.01)))]
    slack = (0.1, 0.2, 0.5, 0.3, 0.05)          # the third tendon is slack
    rng = np.random.default_rng(7)
    times = np.linspace(0.0, 0.5, 11)
    muscles = [RigMuscle(f"m{k}", points,
                         hill.HillParameters(f"m{k}", 300.0 + 50.0 * k, 0.12, slack[k],
                                             0.05 * k, fiber_damping=0.01 * k,
                                             passive_fiber_strain=0.5 + 0.05 * k),
                         (times, rng.uniform(0.0, 1.0, times.size)))
               for k, points in enumerate(paths)]
    return build_rig(bodies, fps=24.0, substeps=8, duration=0.5, muscles=muscles,
                     muscle_control=control)


def _reference(forces, t, q, v):
    previous = backend.use("numpy")
    try:
        return forces(t, q, v), forces.state(t, q, v)
    finally:
        backend.use(previous)


def _tolerance(forces, t, q, v, state):
    """Per coordinate, the bound of the module docstring."""
    g, m = forces.geometry, forces.muscles
    model, data = g.model, g.data
    lengths, speeds = g.lengths_and_speeds(q, v)
    P = g.points
    twists = model.ancestry @ (model.dof_incidence @ (data.S_world * v[:, None]))
    moving = g.body >= 0
    vp = np.zeros_like(P)
    vp[moving] = twists[g.body[moving], 3:] + np.cross(twists[g.body[moving], :3], P[moving])
    seg_len = np.linalg.norm(P[g.seg_b] - P[g.seg_a], axis=1)
    kappa = np.abs(P).max() / seg_len.min()
    a = forces.activation(t)

    def tension(L, Ld):
        return hill.rigid_tendon(m, L, Ld, a).tendon_force
    hL, hV = 1e-7 * lengths, 1e-7 * (1.0 + np.abs(speeds))
    dT_dL = (tension(lengths + hL, speeds) - tension(lengths - hL, speeds)) / (2 * hL)
    dT_dV = (tension(lengths, speeds + hV) - tension(lengths, speeds - hV)) / (2 * hV)
    norm_p, norm_v = np.linalg.norm(P, axis=1), np.linalg.norm(vp, axis=1)
    point_muscle = np.zeros(len(g.body), dtype=int)
    point_muscle[g.seg_a], point_muscle[g.seg_b] = g.seg_m, g.seg_m
    sum_p = np.bincount(point_muscle, norm_p, minlength=len(m))
    sum_v = np.bincount(point_muscle, norm_v, minlength=len(m))
    f_abs = m.max_isometric_force * (a * state.active_fl * np.abs(state.force_velocity)
                                     + state.passive_fl
                                     + m.fiber_damping * np.abs(state.norm_fiber_velocity))
    dT = N * EPS * (f_abs + np.abs(dT_dL) * (lengths + sum_p)
                    + np.abs(dT_dV) * (np.abs(speeds) + kappa * sum_v))
    ends = np.bincount(np.concatenate([g.seg_a, g.seg_b]), minlength=len(g.body))
    S = data.S_world
    A = np.zeros((len(m), model.nv))
    for k in np.nonzero(moving)[0]:
        below = model.ancestry[g.body[k], model.dof_body] > 0     # coordinates above point k
        A[point_muscle[k], below] += ends[k] * (np.linalg.norm(S[below, :3], axis=1)
                                                * norm_p[k]
                                                + np.linalg.norm(S[below, 3:], axis=1))
    return ((dT + kappa * N * EPS * np.abs(state.tendon_force))[:, None] * A).sum(axis=0)


def test_point_path_forces_agree(numba_backend):
    forces = _arm().muscles
    model = forces.geometry.model
    assert model.nq == model.nv
    rng = np.random.default_rng(3)
    taut = slack = 0
    for trial in range(12):
        q = model.neutral() + rng.uniform(-0.6, 0.6, model.nq)     # exponential coordinates
        v = rng.normal(0.0, 2.0, model.nv)
        t = rng.uniform(0.0, 0.5)
        compiled = forces(t, q, v).copy()
        reference, state = _reference(forces, t, q, v)
        tol = _tolerance(forces, t, q, v, state)
        assert np.all(np.abs(compiled - reference) <= tol), (trial, compiled - reference, tol)
        taut += int(np.sum(state.tendon_force != 0.0))
        slack += int(np.sum(state.tendon_force == 0.0))
        assert np.abs(reference).max() > 1.0            # forces of some size were compared
    assert taut > 0 and slack > 0                       # both branches of the tendon ran


def test_the_numba_backend_computes_point_path_forces_compiled(numba_backend, monkeypatch):
    forces = _arm().muscles

    def refused(*args):
        raise AssertionError("the reference geometry ran on the numba backend")
    monkeypatch.setattr(forces.geometry, "lengths_and_speeds", refused)
    model = forces.geometry.model
    assert np.all(np.isfinite(forces(0.1, model.neutral(), np.zeros(model.nv))))


def test_activation_table_agrees(numba_backend):
    rig = _arm("excitation")
    m = rig.muscles.muscles
    rng = np.random.default_rng(5)
    times = np.linspace(0.0, 1.0, 21)
    controls = {name: (times, rng.uniform(0.0, 1.0, times.size)) for name in m.names}
    initial = {m.names[0]: 0.9}
    compiled = actuation.activation_table(m, controls, "excitation", 1.0, 1e-3,
                                          initial=initial).values
    previous = backend.use("numpy")
    try:
        reference = actuation.activation_table(m, controls, "excitation", 1.0, 1e-3,
                                               initial=initial).values
    finally:
        backend.use(previous)
    steps = len(reference) - 1
    assert steps > 1000
    assert reference.std(axis=0).min() > 0.05                 # activations that move
    assert np.abs(compiled - reference).max() <= steps * 48 * EPS
