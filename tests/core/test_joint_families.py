"""Joint families: every family's batched evaluation equals its joints' own evaluate(), and a
new joint type with a family of its own runs through kinematics and dynamics unchanged."""

import math

import numpy as np
import pytest

from core import dynamics as dyn
from core import kinematics as kin
from core.joints.base import Joint
from core.joints.family import GenericFamily, JointFamily
from core.joints.lower_pairs import (Fixed, FixedFamily, Helical, Prismatic, Revolute,
                                     ScrewFamily, Universal)
from core.joints.spherical import Spherical, SphericalFamily
from core.joints.spline_curve import (ClosedCubicSplineFamily, ClosedSplineCurveJoint,
                                     CubicSplineFamily, SplineCurveJoint)
from core.lie import se3, so3
from core.model import Model

EPS = np.finfo(float).eps
#: a joint's values are O(1) products of a few dozen operations (exp coefficients, a 3x3 or
#: 4x4 product with the placement): a few hundred ulps bound the difference between two
#: evaluation orders of the same formulas
TOL = 256 * EPS


def _frames(rng, n=7):
    T = np.eye(4)
    out = []
    for _ in range(n):
        T = T @ se3.exp(rng.normal(size=6) * 0.3)
        out.append(T)
    return np.array(out)


def _model(joints, parents, rng):
    m = Model()
    for i, (j, p) in enumerate(zip(joints, parents)):
        m.add_body(f"b{i}", p, j, se3.exp(rng.normal(size=6) * 0.5), 1.0 + 0.1 * i,
                   rng.normal(size=3) * 0.1, np.diag([0.02, 0.03, 0.04]))
    return m.compile()


def _local_reference(m, q, v):
    """Per body ``(P G, S (6, n), q_dot^T H q_dot)`` from the joints' own evaluate()."""
    out = []
    for i, j in enumerate(m.joints):
        s = slice(m.q_start[i], m.q_start[i] + j.nq)
        G, S, H = j.evaluate(q[s])
        out.append((m.placements[i] @ G, S, np.einsum("jak,j,k->a", H, v[s], v[s]), H))
    return out


def _calc_all(m, d, q, v):
    """Run every family's calc (and velocity_product) and return ``d`` (local transforms in
    d.oMi, before any pose composition)."""
    for family, work in zip(m.families, d.family_work):
        family.calc(q, d, work)
        if family.multi:
            family.velocity_product(v, d, work)
    return d


def _check_family_output(m, d, q, v):
    for i, (PG, S, c, H) in enumerate(_local_reference(m, q, v)):
        scale = max(1.0, np.abs(H).max(initial=0.0), np.abs(S).max(initial=0.0))
        np.testing.assert_allclose(d.oMi[i], PG, rtol=0, atol=TOL * 4, err_msg=f"body {i}")
        n = S.shape[1]
        if n == 1:
            np.testing.assert_allclose(d.SH[i, 0], S[:, 0], rtol=0, atol=TOL * scale)
            np.testing.assert_allclose(d.SH[i, 1], H[0, :, 0], rtol=0, atol=TOL * scale)
        elif n:
            s = slice(m.q_start[i], m.q_start[i] + n)
            np.testing.assert_allclose(d.S_body[s], S.T, rtol=0, atol=TOL * scale)
            np.testing.assert_allclose(d.c_body[i], c, rtol=0,
                                       atol=TOL * scale * max(1.0, np.abs(v[s]).max()) ** 2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_family_matches_its_joints_evaluate(seed):
    """Screw, cubic spline and spherical families on bodies that are not contiguous (their
    scatter paths) and GenericFamily for the rest: local transform, S, dS/dq and the
    velocity product equal the joints' own evaluate()."""
    rng = np.random.default_rng(seed)
    joints = [Revolute(rng.normal(size=3)), Spherical(), SplineCurveJoint(_frames(rng)),
              Prismatic(rng.normal(size=3)), Universal(), SplineCurveJoint(_frames(rng)),
              Spherical(), Helical(rng.normal(size=3), 0.2), SplineCurveJoint(_frames(rng),
                                                                             order=3)]
    m = _model(joints, [-1, 0, 1, 2, 0, 4, 5, 6, 3], rng)
    kinds = {type(f): f.bodies.tolist() for f in m.families}
    assert kinds == {ScrewFamily: [0, 3, 7], SphericalFamily: [1, 6],
                     CubicSplineFamily: [2, 5], GenericFamily: [4, 8]}
    d = m.create_data()
    for _ in range(4):
        q = m.neutral() + rng.normal(size=m.nq)
        v = rng.normal(size=m.nv) * 2.0
        _check_family_output(m, _calc_all(m, d, q, v), q, v)


@pytest.mark.parametrize("angle", [0.0, 1e-8, 1e-4, 0.5, math.pi - 1e-7, math.pi,
                                   math.pi + 1e-6, 2 * math.pi - 1e-6, 2 * math.pi - 1e-9])
def test_spherical_family_near_its_singular_angles(angle):
    """The batched exponential coordinates equal Spherical.evaluate at rotation angles 0,
    tiny, pi and near 2 pi (where J_b^-1 is singular but J_b, dJ_b stay finite)."""
    rng = np.random.default_rng(int(angle * 1e3))
    m = _model([Spherical(), Spherical(), Spherical()], [-1, 0, 1], rng)
    d = m.create_data()
    axes = rng.normal(size=(3, 3))
    q = (axes / np.linalg.norm(axes, axis=1)[:, None] * angle).ravel()
    v = rng.normal(size=m.nv)
    _check_family_output(m, _calc_all(m, d, q, v), q, v)


def test_spline_family_gathers_spans_for_each_data_and_falls_back_outside():
    """Two Data of one model keep their own current spans; a coordinate outside the knot
    range is evaluated by the joint's extrapolation."""
    rng = np.random.default_rng(7)
    m = _model([SplineCurveJoint(_frames(rng)), SplineCurveJoint(_frames(rng))], [-1, 0],
               rng)
    d1, d2 = m.create_data(), m.create_data()
    lo, hi = m.joints[0].lower[0], m.joints[0].upper[0]
    for q in ([lo + 0.1, hi - 0.1], [hi + 0.4, lo - 0.2], [0.5 * (lo + hi), lo]):
        q = np.array(q)
        other = q[::-1].copy()
        _calc_all(m, d1, q, np.zeros(2))
        _calc_all(m, d2, other, np.zeros(2))
        _check_family_output(m, d1, q, np.zeros(2))
        _check_family_output(m, d2, other, np.zeros(2))


def test_closed_curve_and_weld_families_match_their_joints_evaluate():
    """Closed cubic curves (coordinates inside the period, a whole number of periods away,
    and just below its start, where the wrap's mod rounds) and welds: the families'
    local transforms, S and dS/dq equal the joints' own evaluate()."""
    rng = np.random.default_rng(5)
    closed = [ClosedSplineCurveJoint(_frames(rng, 6)), ClosedSplineCurveJoint(_frames(rng, 5))]
    m = _model([Revolute((0, 0, 1)), closed[0], Fixed(), closed[1]], [-1, 0, 1, 2], rng)
    kinds = {type(f): f.bodies.tolist() for f in m.families}
    assert kinds == {ScrewFamily: [0], ClosedCubicSplineFamily: [1, 3], FixedFamily: [2]}
    d = m.create_data()
    for shift in (0.0, 3.0, -2.0):
        for x in (0.3, -1e-17, 0.9999):
            q = np.array([0.2] + [j.lower[0] + (x + shift) * j.period for j in closed])
            _check_family_output(m, _calc_all(m, d, q, np.zeros(3)), q, np.zeros(3))


class Screwdriver(Joint):
    """A joint of the test's own: rotation by q about z while advancing ``pitch q`` along x
    (not a screw: the translation is perpendicular to the axis). S = [0, 0, 1, cos q pitch,
    -sin q pitch, 0] in the body frame, dS/dq its derivative."""

    nq = 1

    def __init__(self, pitch):
        self.pitch = pitch

    def evaluate(self, q):
        x = float(self.check_q(q)[0])
        c, s = math.cos(x), math.sin(x)
        G = np.eye(4)
        G[:2, :2] = [[c, -s], [s, c]]
        G[0, 3] = self.pitch * x
        S = np.array([[0.0], [0.0], [1.0], [self.pitch * c], [-self.pitch * s], [0.0]])
        H = np.array([0.0, 0.0, 0.0, -self.pitch * s, -self.pitch * c, 0.0])[None, :, None]
        return G, S, H


class ScrewdriverFamily(JointFamily):
    """All Screwdriver joints of a model with array operations, counting its calls."""

    calls = 0

    @classmethod
    def accepts(cls, joint):
        return joint.pitch != 0.0

    def calc(self, q, data, work):
        type(self).calls += 1
        x = q[[d[0] for d in self.dofs]]
        c, s = np.cos(x), np.sin(x)
        p = np.array([j.pitch for j in self.joints])
        G = np.zeros((len(x), 4, 4))
        G[:, 0, 0], G[:, 0, 1], G[:, 1, 0], G[:, 1, 1] = c, -s, s, c
        G[:, 2, 2] = G[:, 3, 3] = 1.0
        G[:, 0, 3] = p * x
        data.oMi[self.bodies] = self.placements @ G
        data.SH[self.bodies, 0] = np.stack([0 * c, 0 * c, 1 + 0 * c, p * c, -p * s, 0 * c], 1)
        data.SH[self.bodies, 1] = np.stack([0 * c, 0 * c, 0 * c, -p * s, -p * c, 0 * c], 1)


Screwdriver.family = ScrewdriverFamily


class PlainScrewdriver(Screwdriver):
    """The same joint, evaluated one by one."""

    family = GenericFamily


def test_a_new_joint_type_with_its_own_family_needs_no_change_to_the_algorithms():
    """A joint type defined outside core, with a batched family of its own, runs through
    forward kinematics, rnea, crba and every aba method; the results equal those of the
    same joints evaluated one by one (a family that declines a joint, pitch 0 here, leaves
    it to GenericFamily)."""
    rng = np.random.default_rng(3)
    joints = [Screwdriver(0.2), Revolute((0.0, 1.0, 0.0)), Screwdriver(-0.1), Screwdriver(0.0)]
    m = _model(joints, [-1, 0, 1, 2], rng)
    assert {type(f): f.bodies.tolist() for f in m.families} == {
        ScrewdriverFamily: [0, 2], ScrewFamily: [1], GenericFamily: [3]}
    ref = Model()
    for i, j in enumerate(joints):
        plain = PlainScrewdriver(j.pitch) if isinstance(j, Screwdriver) else j
        r = so3.hat(m.coms[i])
        ref.add_body(f"b{i}", m.parents[i], plain, m.placements[i], m.masses[i], m.coms[i],
                     m.inertias[i][:3, :3] - m.masses[i] * r.T @ r)
    ref.compile()
    assert {type(f): f.bodies.tolist() for f in ref.families} == {
        GenericFamily: [0, 2, 3], ScrewFamily: [1]}
    d, dr = m.create_data(), ref.create_data()
    q, v, tau = rng.normal(size=(3, m.nq))
    calls = ScrewdriverFamily.calls
    # the same local transforms (closed forms in two orders) composed over four bodies
    np.testing.assert_allclose(kin.forward_kinematics(m, d, q, v),
                               kin.forward_kinematics(ref, dr, q, v), rtol=0, atol=4 * TOL)
    np.testing.assert_allclose(dyn.rnea(m, d, q, v, tau), dyn.rnea(ref, dr, q, v, tau),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dyn.crba(m, d, q), dyn.crba(ref, dr, q), rtol=1e-12,
                               atol=1e-12)
    for method in ("dense", "recursive"):
        np.testing.assert_allclose(dyn.aba(m, d, q, v, tau, method=method),
                                   dyn.aba(ref, dr, q, v, tau, method=method),
                                   rtol=1e-10, atol=1e-10)
    assert ScrewdriverFamily.calls == calls + 5


def test_each_compiled_kind_is_declared_once_and_has_its_branch():
    """Every family with a ``kernel_kind`` (the families of the registry's joints) has a
    number of its own, not the Python families' KIND_PYTHON, and the compiled kinematics
    (or, for a large kind, its ``large_joint``) takes that number from the joint's module
    for its branch."""
    import importlib
    import inspect
    import sys

    from core.joints.family import KIND_PYTHON
    from core.joints.registry import JOINT_TYPES

    kinds = {}
    for cls in JOINT_TYPES.values():
        family = getattr(cls, "family", None)
        if family is not None and family.kernel_kind is not None:
            kinds.setdefault(family.kernel_kind, set()).add(family)
    assert all(len(f) == 1 for f in kinds.values()), kinds
    assert KIND_PYTHON not in kinds
    pytest.importorskip("numba")
    # the modules, not the package's re-exported kernel function of the same name
    joints = importlib.import_module("core.compiled.kernels.joints")
    kinematics = importlib.import_module("core.compiled.kernels.kinematics")
    for kind, (family,) in kinds.items():
        module = sys.modules[family.__module__]
        names = [n for n, v in vars(module).items() if n.startswith("KIND_") and v == kind]
        assert len(names) == 1, (family, names)
        where = joints if family.kernel_large else kinematics
        assert getattr(where, names[0]) == kind
        assert f"kind == {names[0]}" in inspect.getsource(where), (family, names[0])
