"""core.wire: Blender curves evaluated exactly, parameterized by arc length (metres), framed
by rotation-minimizing normals turned by the tilt, and fitted by spline curve joints."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad

from core import wire
from core.errors import InvalidInputError
from core.joints.spline_curve import ClosedSplineCurveJoint, SplineCurveJoint
from core.lie import so3

from _fd import fd_hessian, fd_jacobian

EPS = np.finfo(float).eps
#: the standard handle length of a quarter circle, as Blender draws a Bezier circle
HANDLE = 0.5523


def _circle(r=0.5, tilt=None, cyclic=True):
    """A circle of radius r in the XY plane as 4 Bezier arcs (handles ``HANDLE r``)."""
    P = r * np.array([[1, 0, 0], [0, 1, 0], [-1, 0, 0], [0, -1, 0]], dtype=float)
    T = HANDLE * r * np.array([[0, 1, 0], [-1, 0, 0], [0, -1, 0], [1, 0, 0]], dtype=float)
    return wire.bezier_curve(P, P - T, P + T, tilt, cyclic=cyclic)


def _bezier_point(c, i, t, nu=0):
    """The test's own Bernstein form of Bezier segment i (point i to i + 1) at t, or its
    derivative (nu = 1)."""
    j = (i + 1) % len(c.points)
    B = np.array([c.points[i], c.handle_right[i], c.handle_left[j], c.points[j]])
    if nu == 0:
        w = [(1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t * t, t ** 3]
    else:
        w = [-3 * (1 - t) ** 2, 3 * (1 - t) * (1 - 3 * t), 3 * t * (2 - 3 * t), 3 * t * t]
    return np.dot(w, B)


def _saddle(n=5, cyclic=True, tilt=True):
    """A smooth saddle-shaped loop through n points, Bezier handles along its tangents, tilt
    rising from 0 to 1 over the points (or none)."""
    th = 2 * np.pi * np.arange(n) / n
    P = np.stack([np.cos(th), 0.6 * np.sin(th), 0.2 * np.sin(2 * th)], axis=1)
    D = np.stack([-np.sin(th), 0.6 * np.cos(th), 0.4 * np.cos(2 * th)], axis=1) * (
        2 * np.pi / (3 * n))
    return wire.bezier_curve(P, P - D, P + D, np.linspace(0.0, 1.0, n) if tilt else None,
                             cyclic=cyclic)


#: scipy's quad warns that round-off limits it when asked for 1e-14; its answers are still
#: within a few ulps of the integral (the checks below allow 64 eps)
_QUAD_ROUNDOFF = pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")


@_QUAD_ROUNDOFF
def test_bezier_circle_has_the_length_of_its_arcs():
    r = 0.5
    path = wire.WirePath(_circle(r))
    c = path.curve
    # the Bezier arcs bulge off the circle by at most max|rho - r| (sampled with the test's own
    # Bernstein form); the length differs from 2 pi r by at most 2 pi that bulge, plus the
    # radial wobble's second-order term
    t = np.linspace(0.0, 1.0, 2001)
    rho = np.linalg.norm(np.array([_bezier_point(c, 0, s) for s in t]), axis=1)
    bulge = np.abs(rho - r).max()
    assert 1e-5 < bulge / r < 3e-4                    # the known error of the 0.5523 handles
    assert abs(path.length - 2 * np.pi * r) <= 2 * np.pi * bulge * 1.01
    # the length against the test's own quadrature of the speed
    L = 4 * quad(lambda s: np.linalg.norm(_bezier_point(c, 0, s, 1)), 0.0, 1.0,
                 epsabs=1e-15, epsrel=1e-14)[0]
    assert abs(path.length - L) <= 64 * EPS * L


@_QUAD_ROUNDOFF
@pytest.mark.parametrize("curve", [_circle(), _saddle(cyclic=False), _saddle()],
                         ids=["circle", "open saddle", "closed saddle"])
def test_q_is_the_arc_length(curve):
    path = wire.WirePath(curve)
    c = path.curve
    for i in range(2):
        for t in (0.0, 0.13, 0.5, 0.91):
            s = path.breaks[i] + quad(lambda u: np.linalg.norm(_bezier_point(c, i, u, 1)),
                                      0.0, t, epsabs=1e-15, epsrel=1e-14)[0]
            assert np.linalg.norm(path.points([s])[0] - _bezier_point(c, i, t)) \
                <= 64 * EPS * path.length
    assert np.allclose(path.breaks[-1], path.length)


def test_tangent_and_curvature_against_finite_differences():
    for curve in (_saddle(), wire.nurbs_curve(_saddle().points, [1.0, 2.0, 0.5, 1.0, 3.0],
                                                order=4, use_endpoint=True),
                  wire.nurbs_curve(_saddle().points, order=3, cyclic=True)):
        path = wire.WirePath(curve)
        q = np.linspace(0.05, 0.95, 13) * path.length
        h = 1e-4 * path.length
        P = [path.points(q + a * h) for a in (-1, 0, 1)]
        x, k = path.derivatives(q)
        # central differences: error h^2 |p'''| / 6 (curvatures here are below 40 / m)
        assert np.allclose(x, (P[2] - P[0]) / (2 * h), atol=1e-6)
        assert np.allclose(k, (P[2] - 2 * P[1] + P[0]) / h ** 2, atol=1e-4)
        assert np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-14)


def test_frames_are_orthonormal_with_x_the_tangent():
    path = wire.WirePath(_saddle())
    q = np.linspace(0.0, path.length, 101)
    F = path.frames(q)
    R = F[:, :3, :3]
    assert np.allclose(np.swapaxes(R, 1, 2) @ R, np.eye(3), atol=1e-13)
    assert np.allclose(np.linalg.det(R), 1.0, atol=1e-13)
    assert np.allclose(R[:, :, 0], path.derivatives(q)[0], atol=1e-13)
    assert np.allclose(F[:, :3, 3], path.points(q), atol=1e-15)


@_QUAD_ROUNDOFF
def test_tilt_turns_z_about_the_tangent():
    tilt = np.array([0.0, 0.7, -0.4, 1.5])
    flat, tilted = wire.WirePath(_circle()), wire.WirePath(_circle(tilt=tilt))
    assert flat.length == tilted.length
    q = np.linspace(0.0, flat.length, 41)
    F0, F1 = flat.frames(q), tilted.frames(q)
    assert np.allclose(F0[:, :3, 2], [0.0, 0.0, 1.0], atol=1e-12)   # a flat XY wire: z = +Z
    assert np.allclose(F1[:, :3, 0], F0[:, :3, 0], atol=1e-15)
    # the turn from the flat z to the tilted z about x: the tilt, linear in each segment's t
    turn = np.arctan2(np.einsum("ij,ij->i", np.cross(F0[:, :3, 2], F1[:, :3, 2]), F0[:, :3, 0]),
                      np.einsum("ij,ij->i", F0[:, :3, 2], F1[:, :3, 2]))
    c = flat.curve
    for i, qi in enumerate(q):
        seg = min(int(np.searchsorted(flat.breaks, qi, side="right")) - 1, 3)
        # t of q by the test's own quadrature and bisection
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            s = flat.breaks[seg] + quad(lambda u: np.linalg.norm(_bezier_point(c, seg, u, 1)),
                                        0.0, mid, epsabs=1e-15)[0]
            lo, hi = (mid, hi) if s < qi else (lo, mid)
        expect = (1 - lo) * tilt[seg] + lo * tilt[(seg + 1) % 4]
        assert abs(turn[i] - expect) <= 1e-9, (qi, turn[i], expect)


def test_normal_is_rotation_minimizing_and_closes_round_a_loop():
    """The twist rate (dz/dq . y) is 0 on an open untilted curve and the constant -phi / L on
    a closed one (the holonomy spread evenly); the closed frame at L is the frame at 0."""
    P, D = _saddle().points, _saddle().handle_right - _saddle().points
    for cyclic in (False, True):
        path = wire.WirePath(wire.bezier_curve(P, P - D, P + D, cyclic=cyclic))
        L = path.length
        q = np.linspace(0.02, 0.98, 25) * L
        h = 1e-5 * L
        dz = (path.frames(q + h)[:, :3, 2] - path.frames(q - h)[:, :3, 2]) / (2 * h)
        rate = np.einsum("ij,ij->i", dz, path.frames(q)[:, :3, 1])
        # double reflection on steps L / 4096: error (kappa step)^4 per unit length
        assert np.ptp(rate) <= 1e-6, rate
        if cyclic:
            assert abs(rate.mean()) > 1e-3          # a saddle's normal turns on the way round
            assert np.allclose(path.frames([L])[0], path.frames([0.0])[0], atol=1e-12)
            assert np.allclose(path.frames(q + 2 * L), path.frames(q), atol=1e-12)
        else:
            assert np.abs(rate).max() <= 1e-6


def test_nurbs_of_order_two_is_the_polyline():
    P = _saddle(7).points
    for cyclic in (False, True):
        poly = wire.WirePath(wire.poly_curve(P, np.arange(7.0), cyclic=cyclic))
        for endpoint in (False, True):
            nurbs = wire.WirePath(wire.nurbs_curve(P, order=2, tilt=np.arange(7.0),
                                                   cyclic=cyclic, use_endpoint=endpoint))
            assert abs(nurbs.length - poly.length) <= 16 * EPS * poly.length
            q = np.linspace(0.0, poly.length, 57)
            assert np.allclose(nurbs.points(q), poly.points(q), atol=1e-14)
            assert np.allclose(nurbs.frames(q), poly.frames(q), atol=1e-11)
        assert np.allclose(poly.breaks, np.concatenate([[0.0], np.cumsum(np.linalg.norm(
            np.diff(np.vstack([P, P[:1]]) if cyclic else P, axis=0), axis=1))]), atol=1e-14)


def test_blender_knot_vectors():
    """Blender's calcknots, worked by hand from its loop."""
    knots = wire.blender_nurbs_knots
    np.testing.assert_array_equal(knots(5, 4, False, False, False), np.arange(9.0))
    np.testing.assert_array_equal(knots(5, 4, False, True, False), [0, 0, 0, 0, 1, 2, 2, 2, 2])
    np.testing.assert_array_equal(knots(5, 4, True, False, False), np.arange(12.0))
    np.testing.assert_array_equal(knots(5, 3, True, True, False), [0, 1, 1, 2, 3, 4, 5, 5, 6, 7])
    np.testing.assert_array_equal(knots(7, 4, False, False, True),
                                  [0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3])


@pytest.mark.parametrize("curve", [_circle(), _saddle(), _saddle(cyclic=False),
                                   wire.nurbs_curve(_saddle().points, order=3, cyclic=True)],
                         ids=["circle", "closed saddle", "open saddle", "cyclic nurbs"])
def test_fitted_wire_is_within_the_tolerance(curve):
    tol = 1e-4
    fit = wire.wire_joint(curve, tolerance=tol)
    path = wire.WirePath(curve)
    assert fit.within_tolerance and fit.max_position_error <= tol
    assert fit.length == path.length and fit.closed == curve.cyclic
    if curve.cyclic:
        assert isinstance(fit.joint, ClosedSplineCurveJoint)
        assert np.isclose(fit.joint.period, path.length, rtol=1e-15)
        assert np.isclose(fit.joint.spacing * fit.n_frames, path.length, rtol=1e-15)
    else:
        assert type(fit.joint) is SplineCurveJoint
        assert fit.joint.lower[0] == 0.0 and np.isclose(fit.joint.upper[0], path.length,
                                                       rtol=1e-14)
    # independently of the fit's own check: the joint's path against the exact curve
    q = np.random.default_rng(0).uniform(0.0, path.length, 300)
    _, d = path.closest(fit.joint.transforms(q)[:, :3, 3])
    assert d.max() <= tol
    assert np.linalg.norm(fit.joint.transforms(q)[:, :3, 3] - path.points(q), axis=1).max() \
        <= fit.max_position_error * 1.5        # between the check points, same order


def test_the_error_falls_with_the_knot_spacing_as_the_curve_allows():
    """h^3 on a NURBS of order 4 (continuous curvature: 8x per halving), h^2 on a Bezier
    curve whose curvature jumps at its points (4x per halving)."""
    def errors(curve, counts):
        return np.array([wire.wire_joint(curve, n_frames=n).max_position_error
                         for n in counts])

    nurbs = errors(wire.nurbs_curve(_saddle().points, order=4, cyclic=True), (20, 40, 80))
    assert np.all(nurbs[:-1] / nurbs[1:] > 6.0), nurbs
    bezier = errors(_saddle(tilt=False), (40, 80, 160))
    assert np.all(bezier[:-1] / bezier[1:] > 3.5), bezier
    assert wire.wire_joint(_saddle(), n_frames=12).n_frames == 12


def test_closed_wire_is_continuous_at_the_seam():
    fit = wire.wire_joint(_saddle(tilt=False), tolerance=1e-5)
    j, L = fit.joint, fit.length
    for a, b in zip(j.evaluate(L - 1e-12), j.evaluate(0.0)):
        assert np.allclose(a, b, atol=1e-9)
    h = j.spacing                 # H is continuous but kinked at knots: check between them
    for x in (0.5 * h, L - 0.5 * h, 7.5 * h):
        G, S, H = j.evaluate(x)
        # central differences with step 1e-6 inside a knot span: error h^2 |d3S/dq3| / 6,
        # with d3S/dq3 of the order |H| / spacing^2
        scale = max(1.0, np.abs(H).max()) / h ** 2
        assert np.allclose(fd_jacobian(j, x), S, atol=1e-7)
        assert np.allclose(fd_hessian(j, x), H, atol=1e-12 * scale + 1e-7)


def test_corners_are_rounded_and_reported():
    square = wire.poly_curve([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], cyclic=True)
    fit = wire.wire_joint(square, n_frames=32)
    assert abs(fit.length - 4.0) <= 8 * EPS * 4.0
    assert not fit.within_tolerance and fit.max_position_error > 1e-3
    assert fit.max_angle_error > 0.5                  # the tangent turns by pi / 2 at a corner


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_random_smooth_bezier_is_parameterized_by_arc_length(seed):
    """|dp/dq| = 1: for the exact wire to the central differences' h^2 error, and for the
    fitted joint (the translational part of S) to the derivative of a position error e
    fitted over knot spans h: |e'| <= 16 e / h (a cubic's derivative error against its value
    error, Hall and Meyer's constants 1/24 and 1/384)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 8))
    th = 2 * np.pi * (np.arange(n) + rng.uniform(-0.2, 0.2, n)) / n
    r = rng.uniform(0.8, 1.2, n)
    P = np.stack([r * np.cos(th), r * np.sin(th), rng.uniform(-0.2, 0.2, n)], axis=1)
    D = (np.roll(P, -1, axis=0) - np.roll(P, 1, axis=0)) / 6     # Catmull-Rom handles
    curve = wire.bezier_curve(P, P - D, P + D, rng.uniform(-1, 1, n), cyclic=True)
    path = wire.WirePath(curve)
    L = path.length
    q = rng.uniform(0.0, L, 40)
    h = 1e-5 * L
    speed = np.linalg.norm(path.points(q + h) - path.points(q - h), axis=1) / (2 * h)
    assert np.allclose(speed, 1.0, atol=1e-7)
    fit = wire.wire_joint(path, tolerance=1e-4)
    v = np.array([np.linalg.norm(fit.joint.evaluate(x)[1][3:, 0]) for x in q])
    assert np.abs(v - 1.0).max() <= 16 * fit.max_position_error / fit.joint.spacing


@pytest.mark.parametrize("make, message", [
    (lambda: wire.poly_curve([[0, 0, 0]]), "at least 2 points"),
    (lambda: wire.poly_curve([[0, 0, 0], [0, 0, 0]]), "zero length"),
    (lambda: wire.poly_curve([[0, 0, 0], [1, 0, 0], [1, 0, 0], [2, 1, 0]]), "coincide"),
    (lambda: wire.poly_curve([[0, 0, 0], [1, 0, 0], [0.2, 0, 0]]), "cusp"),
    (lambda: wire.bezier_curve([[0, 0, 0], [1, 0, 0]], [[0, 0, 0], [0.7, 0, 0]],
                               [[0, 0, 0], [1.3, 0, 0]]), "tangent vanishes at point 0"),
    (lambda: wire.poly_curve([[0, 0, 0], [np.nan, 0, 0]]), "NaN or inf"),
    (lambda: wire.poly_curve([[0, 0], [1, 0]]), r"shape \(n, 3\)"),
    (lambda: wire.poly_curve([[0, 0, 0], [1, 0, 0]], tilt=[0.0]), "tilt"),
    (lambda: wire.nurbs_curve(np.eye(3), order=4), "at least 4 points"),
    (lambda: wire.nurbs_curve(np.eye(3), [1, 0, 1], order=2), "weights must be > 0"),
    (lambda: wire.nurbs_curve(np.eye(3), order=2.5), "order"),
    (lambda: wire.nurbs_curve(_saddle().points, order=3, cyclic=True, use_bezier=True),
     "multiple"),
    (lambda: wire.bezier_curve(np.eye(3), np.eye(3), np.eye(3), tilt_interpolation="X"),
     "tilt_interpolation"),
])
def test_bad_curves_raise(make, message):
    with pytest.raises(InvalidInputError, match=message):
        wire.WirePath(make())


def test_bad_settings_raise():
    with pytest.raises(InvalidInputError, match="tolerance"):
        wire.wire_joint(_circle(), tolerance=0.0)
    with pytest.raises(InvalidInputError, match="n_frames"):
        wire.wire_joint(_circle(), n_frames=3)
    with pytest.raises(InvalidInputError, match="CurveData"):
        wire.WirePath(np.eye(3))


def test_rotation_errors_are_measured_against_the_exact_frames():
    fit = wire.wire_joint(_saddle(), n_frames=40)
    path = wire.WirePath(_saddle())
    q = np.linspace(0.0, path.length, 333)
    G, E = fit.joint.transforms(q), path.frames(q)
    angle = np.linalg.norm(so3.log(np.swapaxes(G[:, :3, :3], 1, 2) @ E[:, :3, :3]), axis=1)
    assert angle.max() <= fit.max_angle_error * 1.5 and fit.max_angle_error < 0.05
