"""OpenSim functions and joints (core.joints.opensim): against OpenSim 4.6 itself where the
``opensim`` package imports (the Python 3.13 environment, .venv-py313), against the reference oracles of
core.reference.opensim, S and H against central differences, serialization, bad input, and
the dynamics of a model built from these joints."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import dynamics as dyn
from core.errors import InvalidInputError, NonFiniteError
from core.joints import JOINT_TYPES, joint_from_dict
from core.joints.opensim import (Constant, CustomJoint, EllipsoidJoint, LinearFunction,
                                 MultiplierFunction, MultivariatePolynomialFunction, NaturalCubicSpline, PiecewiseLinearFunction,
                                 PolynomialFunction, ScapulothoracicJoint, SimmSpline,
                                 function_from_dict)
from core.lie import se3
from core.model import Model
from core.reference.opensim import KneeGait2392, ScapulothoracicSeth2019

from _fd import fd_hessian, fd_jacobian

EPS = np.finfo(float).eps
#: our functions against OpenSim's: the same operations in the same order (Horner, FMM
#: coefficients by the same elimination, the same bisection), so equal up to a compiler's
#: contraction of a*b+c into one fused rounding: a few ulps of the terms' magnitude
FUNCTION_ULPS = 8 * EPS
#: a pose against another program's (OpenSim's Rotation(angle, axis) products, scipy's rotation
#: vectors): O(30) roundings of entries of size 1 (rotations) and of size |translation|
#: (metres); angles up to |q| lose |q| ulps in sin/cos
POSE_TOL = 64 * EPS
#: central differences with step FD_STEP = 1e-6 of functions whose third derivative is O(10):
#: truncation h^2 f'''/6 ~ 1e-11 plus rounding eps |S| / h ~ 1e-10 per entry
FD_TOL = 1e-7

# ----------------------------------------------------------------------------- fixtures

rng = np.random.default_rng(2392)
KNOTS_X = np.array([-2.3, -1.37, -0.61, 0.23, 0.91, 1.52, 2.4])   # no knot at 0 or 1e-8
KNOTS_Y = rng.normal(size=KNOTS_X.size) * 0.3


def _functions():
    """One function of each kind, knots off the points the tests evaluate derivatives at."""
    return [
        Constant(0.25),
        LinearFunction(1.5, -0.3),
        PolynomialFunction([0.3, -1.2, 0.5, 2.0]),
        SimmSpline(KNOTS_X, KNOTS_Y),
        SimmSpline(KNOTS_X[:3], KNOTS_Y[:3]),
        SimmSpline(KNOTS_X[:2], KNOTS_Y[:2]),
        NaturalCubicSpline(KNOTS_X, KNOTS_Y),
        PiecewiseLinearFunction(KNOTS_X, KNOTS_Y),
        MultiplierFunction(SimmSpline(KNOTS_X, KNOTS_Y), 0.7),
        MultiplierFunction({"type": "LinearFunction", "coefficients": [2.0, 1.0]}, -1.5),
    ]


FUNCTIONS = _functions()
#: inside, outside, at and next to the knots
ARGS = np.concatenate([np.linspace(-4.5, 4.5, 91), KNOTS_X, KNOTS_X + 1e-13, KNOTS_X - 1e-13,
                       KNOTS_X + 1e-9])

TILTED = np.array([[1.0, 0.2, 0.1], [0.1, 1.0, 0.3], [-0.2, 0.1, 1.0],
                   [1.0, 0.0, 0.2], [0.3, 1.0, 0.0], [0.0, -0.2, 1.0]])


def _custom_joint():
    """Three coordinates; every axis tilted; splines, a polynomial, a multiplier and a constant
    axis without a coordinate."""
    return CustomJoint(
        TILTED,
        [LinearFunction(1.0, 0.0), SimmSpline(KNOTS_X, KNOTS_Y), PolynomialFunction([0.2, -0.1, 0.4]),
         Constant(0.02), MultiplierFunction(SimmSpline(KNOTS_X, 0.1 * KNOTS_Y), 0.5),
         LinearFunction(0.05, 0.01)],
        [0, 1, 2, None, 0, 1], 3, lower=[-2.0, -1.0, -np.inf], upper=2.0, neutral=[0.1, 0, 0])


def _multivariate_joint():
    """Two coordinates; a rotation and a translation driven by polynomials of both (one with
    its arguments in reverse order), the others by one coordinate or none."""
    rot = MultivariatePolynomialFunction([0.1, 0.8, -0.2, 1.1, 0.3, 0.25], 2, 2)
    tr = MultivariatePolynomialFunction(rng.normal(size=10) * 0.05, 2, 3)
    return CustomJoint(
        TILTED,
        [rot, LinearFunction(-0.7, 0.1), Constant(0.3), tr, SimmSpline(KNOTS_X, 0.1 * KNOTS_Y),
         Constant(-0.01)],
        [[0, 1], 1, None, (1, 0), 0, None], 2, neutral=[0.2, -0.1])


SETH = ScapulothoracicSeth2019()


def _scapulothoracic():
    j = SETH.document["joint"]
    return ScapulothoracicJoint(SETH.radii, j["scapula_winging_axis_origin"],
                                j["scapula_winging_axis_direction"],
                                lower=SETH.ranges[:, 0], upper=SETH.ranges[:, 1],
                                neutral=SETH.defaults)


JOINTS = [_custom_joint(), _multivariate_joint(), _scapulothoracic(),
          EllipsoidJoint([0.3, 0.2, 0.1]), EllipsoidJoint([0.05, 0.05, 0.05])]


def _points(nq, seed=0):
    r = np.random.default_rng(seed)
    return [np.zeros(nq), np.full(nq, 1e-8), r.uniform(-1.2, 1.2, nq), r.uniform(-1.2, 1.2, nq)]


def _opensim():
    return pytest.importorskip("opensim")


def _term_scale(f, x):
    """Sum of the magnitudes the value of ``f`` at ``x`` is built from (rounding scale)."""
    if isinstance(f, MultiplierFunction):
        return abs(f.scale) * _term_scale(f.function, x)
    if isinstance(f, PolynomialFunction):
        n = f.coefficients.size
        return np.polyval(np.abs(f.coefficients) * np.arange(n, 0, -1) ** 2, np.abs(x))
    if isinstance(f, SimmSpline):
        w = np.abs(x) + np.abs(f.x).max()
        return (np.abs(f.y).max() + np.abs(f.b).max() * w + np.abs(f.c).max() * w ** 2
                + np.abs(f.d).max() * w ** 3)
    if isinstance(f, PiecewiseLinearFunction):
        return np.abs(f.y).max() + np.abs(f.b).max() * (np.abs(x) + np.abs(f.x).max())
    return 1.0 + np.abs(x) * 2.0


def _osim_function(osim, f, keep):
    """The same function built with OpenSim; ``keep`` holds objects OpenSim adopted."""
    if isinstance(f, Constant):
        return osim.Constant(f.c)
    if isinstance(f, LinearFunction):
        return osim.LinearFunction(f.slope, f.intercept)
    if isinstance(f, PolynomialFunction):
        return osim.PolynomialFunction(osim.Vector(f.coefficients.tolist()))
    if isinstance(f, (SimmSpline, PiecewiseLinearFunction)):
        cls = osim.PiecewiseLinearFunction if isinstance(f, PiecewiseLinearFunction) \
            else osim.SimmSpline                      # NaturalCubicSpline reads as SimmSpline
        g = cls()
        for x, y in zip(f.x, f.y):
            g.addPoint(float(x), float(y))
        return g
    if isinstance(f, MultivariatePolynomialFunction):
        return osim.MultivariatePolynomialFunction(osim.Vector(f.coefficients.tolist()),
                                                   f.dimension, f.order)
    if isinstance(f, MultiplierFunction):
        inner = _osim_function(osim, f.function, keep)
        inner.thisown = False                         # the MultiplierFunction owns it
        keep.append(inner)
        return osim.MultiplierFunction(inner, f.scale)
    raise AssertionError(type(f))


# ----------------------------------------------------------------------------- functions


@pytest.mark.parametrize("f", FUNCTIONS, ids=[f"{i}-{f!r}" for i, f in enumerate(FUNCTIONS)])
def test_functions_match_opensim(f):
    osim = _opensim()
    keep = []
    g = _osim_function(osim, f, keep)
    for order in (0, 1, 2):
        ours = f.value(ARGS) if order == 0 else f.derivative(ARGS, order)
        theirs = np.array([g.calcValue(osim.Vector(1, float(x))) if order == 0 else
                           g.calcDerivative(osim.StdVectorInt([0] * order), osim.Vector(1, float(x)))
                           for x in ARGS])
        np.testing.assert_allclose(ours, theirs, rtol=0,
                                   atol=FUNCTION_ULPS * _term_scale(f, ARGS).max())


def test_natural_cubic_spline_is_what_opensim_reads_for_the_name():
    """OpenSim 4.6 maps the type name NaturalCubicSpline to SimmSpline."""
    osim = _opensim()
    assert osim.OpenSimObject.newInstanceOfType("NaturalCubicSpline").getConcreteClassName() \
        == "SimmSpline"


@pytest.mark.parametrize("f", FUNCTIONS, ids=[f"{i}-{f!r}" for i, f in enumerate(FUNCTIONS)])
def test_function_shapes_and_dict_round_trip(f):
    for x in (0.3, np.zeros((2, 3)), np.linspace(-1, 1, 5)):
        assert np.shape(f.value(x)) == np.shape(x) == np.shape(f(x))
        assert np.shape(f.derivative(x, 1)) == np.shape(f.derivative(x, 2)) == np.shape(x)
    d = json.loads(json.dumps(f.to_dict()))
    back = function_from_dict(d)
    assert back == f and type(back) is type(f)
    np.testing.assert_array_equal(back.value(ARGS), f.value(ARGS))


@pytest.mark.parametrize("f", FUNCTIONS, ids=[f"{i}-{f!r}" for i, f in enumerate(FUNCTIONS)])
def test_scalar_path_is_the_vectorised_one(f):
    """``at(x)`` (the joints' scalar path) returns exactly value, f' and f'' at every
    argument, including at, next to and beyond the knots."""
    expected = np.stack([f.value(ARGS), f.derivative(ARGS, 1), f.derivative(ARGS, 2)], axis=1)
    got = np.array([f.at(float(x)) for x in ARGS])
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("f", FUNCTIONS, ids=[f"{i}-{f!r}" for i, f in enumerate(FUNCTIONS)])
def test_function_derivatives_match_finite_differences(f):
    h = 1e-6
    x = np.concatenate([np.linspace(-4.4, 4.4, 37), [0.0, 1e-8]])
    x = x[np.min(np.abs(x[:, None] - KNOTS_X[None, :]), axis=1) > 4 * h]   # C2 only
    fd1 = (f.value(x + h) - f.value(x - h)) / (2 * h)
    fd2 = (f.derivative(x + h) - f.derivative(x - h)) / (2 * h)
    scale = 1.0 + np.max(_term_scale(f, x))
    np.testing.assert_allclose(f.derivative(x), fd1, rtol=0, atol=FD_TOL * scale)
    np.testing.assert_allclose(f.derivative(x, 2), fd2, rtol=0, atol=FD_TOL * scale)


def test_function_closed_forms():
    assert PolynomialFunction([2.0, 0.0, 1.0]).value(3.0) == 19.0         # 2 x^2 + 1
    assert PolynomialFunction([2.0, 0.0, 1.0]).derivative(3.0) == 12.0
    assert PolynomialFunction([2.0, 0.0, 1.0]).derivative(3.0, 2) == 4.0
    assert PolynomialFunction([5.0]).derivative(3.0, 2) == 0.0
    assert LinearFunction(2.0, 1.0).to_dict()["coefficients"] == [2.0, 1.0]   # OpenSim's order
    pl = PiecewiseLinearFunction([0.0, 1.0, 3.0], [0.0, 2.0, 1.0])
    np.testing.assert_array_equal(pl.value([-1.0, 0.5, 2.0, 5.0]), [-2.0, 1.0, 1.5, 0.0])
    np.testing.assert_array_equal(pl.derivative([-1.0, 5.0]), [2.0, -0.5])
    np.testing.assert_array_equal(NaturalCubicSpline(KNOTS_X, KNOTS_Y).value(ARGS),
                                  SimmSpline(KNOTS_X, KNOTS_Y).value(ARGS))
    assert NaturalCubicSpline(KNOTS_X, KNOTS_Y).to_dict()["type"] == "NaturalCubicSpline"


def test_function_bad_input():
    with pytest.raises(InvalidInputError, match="increasing"):
        PiecewiseLinearFunction([0.0, 0.0, 1.0], [1.0, 2.0, 3.0])
    with pytest.raises(InvalidInputError, match=">= 2"):
        NaturalCubicSpline([0.0], [1.0])
    with pytest.raises(NonFiniteError, match="finite"):
        SimmSpline([0.0, 1.0], [1.0, np.nan])
    with pytest.raises(NonFiniteError, match="finite"):
        LinearFunction(1.0, 0.0).value(np.nan)
    with pytest.raises(InvalidInputError, match="finite"):
        Constant(np.nan)
    with pytest.raises(InvalidInputError, match="order"):
        PolynomialFunction([1.0]).derivative(0.5, 3)
    with pytest.raises(InvalidInputError, match="unknown OpenSim function type 'Sine'"):
        function_from_dict({"type": "Sine", "amplitude": 1.0})
    with pytest.raises(InvalidInputError, match="expected exactly"):
        function_from_dict({"type": "Constant", "val": 1.0})
    with pytest.raises(InvalidInputError, match="slope, intercept"):
        function_from_dict({"type": "LinearFunction", "coefficients": [1.0, 2.0, 3.0]})
    with pytest.raises(InvalidInputError, match="expected a dict, got a list"):
        function_from_dict([1.0])
    with pytest.raises(InvalidInputError, match="MultiplierFunction function"):
        MultiplierFunction(lambda x: x, 2.0)


# ----------------------------------------------------------------------------- joints


def check_joint(joint, q):
    G, S, H = joint.evaluate(q)
    assert G.shape == (4, 4) and S.shape == (6, joint.nq) and H.shape == (joint.nq, 6, joint.nq)
    se3.check_transform(G)
    np.testing.assert_array_equal(joint.transform(q), G)
    for ours, theirs in zip(joint.motion(q), (G, S)):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_allclose(joint.transforms(q[None])[0], G, rtol=0,
                               atol=POSE_TOL * max(1.0, np.abs(q).max()))
    np.testing.assert_allclose(S, fd_jacobian(joint, q), rtol=0, atol=FD_TOL)
    np.testing.assert_allclose(H, fd_hessian(joint, q), rtol=0, atol=FD_TOL)


@pytest.mark.parametrize("joint", JOINTS, ids=lambda j: f"{j!r}-{j.to_dict().get('radii', '')}")
def test_joint_derivatives_match_finite_differences(joint):
    for q in _points(joint.nq):
        check_joint(joint, q)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-2.0, 2.0), min_size=4, max_size=4), st.integers(0, len(JOINTS) - 1))
def test_joint_derivatives_property(qs, which):
    joint = JOINTS[which]
    check_joint(joint, np.asarray(qs[:joint.nq]))


@pytest.mark.parametrize("joint", JOINTS, ids=lambda j: f"{j!r}-{j.to_dict().get('radii', '')}")
def test_joint_dict_round_trip_and_registry(joint):
    d = json.loads(json.dumps(joint.to_dict()))
    assert type(joint).__name__ in JOINT_TYPES
    back = joint_from_dict(d)
    assert back == joint
    np.testing.assert_array_equal(back.lower, joint.lower)
    np.testing.assert_array_equal(back.upper, joint.upper)
    np.testing.assert_array_equal(back.neutral(), joint.neutral())
    qs = np.random.default_rng(5).uniform(-1, 1, (7, joint.nq))
    np.testing.assert_array_equal(back.transforms(qs), joint.transforms(qs))
    assert joint.transforms(np.zeros((0, joint.nq))).shape == (0, 4, 4)


def test_custom_joint_equals_the_knee_reference():
    """The gait2392 knee as a CustomJoint against the reference oracle (scipy rotations, the
    same SimmSplines), at 200 angles inside and outside the range."""
    ref = KneeGait2392()
    j = ref.joint
    knee = CustomJoint(j.axes, j.functions, j.arguments, 1)
    q = np.linspace(-3.5, 1.5, 200)
    np.testing.assert_allclose(knee.transforms(q), ref.joint_poses(q), rtol=0,
                               atol=POSE_TOL * 3.5)
    for a in q[::20]:
        np.testing.assert_allclose(knee.transform(a), ref.joint_poses([a])[0], rtol=0,
                                   atol=POSE_TOL * 3.5)
        check_joint(knee, np.array([a]))


def test_scapulothoracic_equals_the_seth2019_reference():
    joint = _scapulothoracic()
    qs = np.random.default_rng(11).uniform(-1.5, 1.5, (100, 4))
    np.testing.assert_allclose(joint.transforms(qs), SETH.joint_poses(qs), rtol=0,
                               atol=POSE_TOL)
    g = SETH.grid()
    np.testing.assert_allclose(joint.transforms(g["q"].reshape(-1, 4)),
                               g["T_pjoint_cjoint"].reshape(-1, 4, 4), rtol=0, atol=POSE_TOL)
    np.testing.assert_array_equal(joint.neutral(), SETH.defaults)


def _osim_model(osim, make_joint):
    """A one-joint model: ground -> body through ``make_joint(ground, body)`` (identity
    offsets)."""
    m = osim.Model()
    b = osim.Body("b", 1.0, osim.Vec3(0), osim.Inertia(1, 1, 1))
    m.addBody(b)
    j = make_joint(m.getGround(), b)
    m.addJoint(j)
    return m, b, j


def _osim_poses(osim, model, body, joint, qs, order):
    """X_ground_body for each row of ``qs`` (coordinate k of OpenSim's joint is
    ``q[order[k]]``)."""
    s = model.initSystem()
    out = []
    for q in qs:
        for k, i in enumerate(order):
            joint.get_coordinates(k).setValue(s, float(q[i]), False)
        model.realizePosition(s)
        X = body.findTransformBetween(s, model.getGround())
        R = X.R().asMat33()
        T = np.eye(4)
        T[:3, :3] = [[R.get(a, b) for b in range(3)] for a in range(3)]
        T[:3, 3] = [X.p()[a] for a in range(3)]
        out.append(T)
    return np.array(out)


@pytest.mark.parametrize("make_ours", [_custom_joint, _multivariate_joint])
def test_custom_joint_matches_opensim(make_ours):
    osim = _opensim()
    ours = make_ours()
    keep = []

    def make(ground, body):
        spatial = osim.SpatialTransform()
        for k in range(6):
            axis = spatial.updTransformAxis(k)
            axis.setAxis(osim.Vec3(*TILTED[k]))
            names = osim.ArrayStr()
            a = ours.arguments[k]
            for i in (() if a is None else a if isinstance(a, tuple) else (a,)):
                names.append(f"q{i}")
            axis.setCoordinateNames(names)
            f = _osim_function(osim, ours.functions[k], keep)
            f.thisown = False                          # the TransformAxis owns it
            axis.setFunction(f)
        return osim.CustomJoint("cj", ground, body, spatial)

    model, body, joint = _osim_model(osim, make)
    order = [int(joint.get_coordinates(k).getName()[1:]) for k in range(ours.nq)]
    qs = np.random.default_rng(50).uniform(-3.0, 3.0, (50, ours.nq))
    np.testing.assert_allclose(ours.transforms(qs), _osim_poses(osim, model, body, joint, qs, order),
                               rtol=0, atol=POSE_TOL * 3.0)


def test_ellipsoid_joint_matches_opensim():
    osim = _opensim()
    radii = [0.3, 0.2, 0.1]
    model, body, joint = _osim_model(
        osim, lambda g, b: osim.EllipsoidJoint("e", g, b, osim.Vec3(*radii)))
    qs = np.random.default_rng(51).uniform(-3.0, 3.0, (50, 3))
    np.testing.assert_allclose(EllipsoidJoint(radii).transforms(qs),
                               _osim_poses(osim, model, body, joint, qs, [0, 1, 2]),
                               rtol=0, atol=POSE_TOL * 3.0)


def test_scapulothoracic_joint_matches_opensim():
    osim = _opensim()
    ours = _scapulothoracic()
    model, body, joint = _osim_model(osim, lambda g, b: osim.ScapulothoracicJoint(
        "st", g, b, osim.Vec3(*ours.radii), osim.Vec2(*ours.winging_origin),
        ours.winging_direction))
    qs = np.random.default_rng(52).uniform(-1.5, 1.5, (50, 4))
    np.testing.assert_allclose(ours.transforms(qs),
                               _osim_poses(osim, model, body, joint, qs, [0, 1, 2, 3]),
                               rtol=0, atol=POSE_TOL * 1.5)


def test_custom_joint_axes_follow_opensim():
    f6 = [LinearFunction()] * 3 + [Constant(0.0)] * 3
    args = [0, 1, 2, None, None, None]
    with pytest.raises(InvalidInputError, match="rotation1 .* rotation2 .* collinear"):
        CustomJoint([[1, 0, 0], [2, 0, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]], f6, args, 3)
    with pytest.raises(InvalidInputError, match="translation1 .* translation2 .* zero or collinear"):
        CustomJoint([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 0, 0], [0, 0, 1]], f6, args, 3)
    # a nearly collinear pair: |a x b| = 2e-6 < 1e-5 is refused, 2e-5 accepted
    with pytest.raises(InvalidInputError, match="collinear"):
        CustomJoint([[1, 0, 0], [1, 2e-6, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]], f6, args, 3)
    j = CustomJoint([[1, 0, 0], [1, 2e-5, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]], f6, args, 3)
    np.testing.assert_allclose(np.linalg.norm(j.axes, axis=1), 1.0, rtol=0, atol=EPS)


def test_custom_joint_bad_input():
    good = dict(axes=np.eye(3).tolist() * 2, functions=[LinearFunction()] * 6,
                arguments=[0, 0, 0, 0, 0, 0], nq=1)
    with pytest.raises(InvalidInputError, match="only a Constant"):
        CustomJoint(**{**good, "arguments": [None, 0, 0, 0, 0, 0]})
    with pytest.raises(InvalidInputError, match="not a coordinate index"):
        CustomJoint(**{**good, "arguments": [0, 0, 0, 0, 0, 1]})
    with pytest.raises(InvalidInputError, match="shape \\(6, 3\\)"):
        CustomJoint(**{**good, "axes": np.eye(3)})
    with pytest.raises(NonFiniteError, match="finite"):
        CustomJoint(**{**good, "axes": np.full((6, 3), np.nan)})
    with pytest.raises(InvalidInputError, match="6 functions"):
        CustomJoint(**{**good, "functions": [Constant()] * 5})
    with pytest.raises(InvalidInputError, match="nq"):
        CustomJoint(**{**good, "nq": 0})
    with pytest.raises(InvalidInputError, match="unknown OpenSim function"):
        CustomJoint(**{**good, "functions": [{"type": "Step"}] * 6})
    with pytest.raises(InvalidInputError, match="swap"):
        CustomJoint(**good, lower=1.0, upper=0.0)
    with pytest.raises(NonFiniteError):
        _custom_joint().evaluate([0.0, np.nan, 0.0])
    with pytest.raises(InvalidInputError, match="positive"):
        EllipsoidJoint([0.1, 0.0, 0.2])
    with pytest.raises(InvalidInputError, match="winging_origin"):
        ScapulothoracicJoint([0.1, 0.1, 0.1], [0.0, 0.0, 0.0])
    with pytest.raises(InvalidInputError, match="winging_direction"):
        ScapulothoracicJoint([0.1, 0.1, 0.1], [0.0, 0.0], np.inf)


def test_model_dynamics_are_consistent():
    """rnea(aba(tau)) == tau and crba^-1 (tau - nle) == aba on a chain of the three joints."""
    r = np.random.default_rng(9)
    m = Model()
    for i, (joint, parent) in enumerate(zip([_custom_joint(), _scapulothoracic(),
                                              EllipsoidJoint([0.3, 0.2, 0.1])], [-1, 0, 1])):
        m.add_body(f"b{i}", parent, joint, se3.exp(r.normal(size=6) * 0.3),
                   r.uniform(0.5, 2.0), r.normal(size=3) * 0.1, np.diag(r.uniform(0.2, 0.3, 3)))
    d = m.create_data()
    q = r.uniform(-1, 1, m.nq)
    v = r.normal(size=m.nv)
    tau = r.normal(size=m.nv)
    ddq = dyn.aba(m, d, q, v, tau).copy()
    np.testing.assert_allclose(dyn.rnea(m, d, q, v, ddq), tau, rtol=1e-10, atol=1e-10)
    M = dyn.crba(m, d, q).copy()
    h = dyn.nonlinear_effects(m, d, q, v).copy()
    np.testing.assert_allclose(np.linalg.solve(M, tau - h), ddq, rtol=1e-10, atol=1e-10)


# ----------------------------------------------------------------------------- multivariate
MVP = [MultivariatePolynomialFunction(rng.normal(size=6), 2, 2),
       MultivariatePolynomialFunction(rng.normal(size=20), 3, 3),
       MultivariatePolynomialFunction([2.5], 4, 0)]


@pytest.mark.parametrize("f", MVP, ids=lambda f: f"dim{f.dimension}-order{f.order}")
def test_multivariate_polynomial_matches_opensim(f):
    """Term order, value and first derivatives against OpenSim 4.6 (which evaluates no
    second derivatives of this function)."""
    osim = _opensim()
    g = _osim_function(osim, f, [])
    for x in np.random.default_rng(7).uniform(-1.5, 1.5, (20, f.dimension)):
        v = osim.Vector(x.tolist())
        terms = g.getTermValues(v)
        # each term a product of up to `order` factors, rounded once per product
        np.testing.assert_allclose([terms.get(i) for i in range(terms.size())],
                                   f.monomials(x), rtol=(f.order + 1) * EPS, atol=0)
        value, grad, _ = f.at(x)
        scale = np.abs(f.coefficients) @ np.abs(f.monomials(np.abs(x) + 1.0))
        assert abs(value - g.calcValue(v)) <= FUNCTION_ULPS * scale
        assert value == f.value(x)
        for a in range(f.dimension):
            assert abs(grad[a] - g.calcDerivative(osim.StdVectorInt([a]), v)) \
                <= FUNCTION_ULPS * f.order * scale


@pytest.mark.parametrize("f", MVP, ids=lambda f: f"dim{f.dimension}-order{f.order}")
def test_multivariate_polynomial_derivatives_match_finite_differences(f):
    h = 1e-6
    for x in np.random.default_rng(8).uniform(-1.5, 1.5, (5, f.dimension)):
        _, grad, hess = f.at(x)
        for a in range(f.dimension):
            e = np.zeros(f.dimension)
            e[a] = h
            fd = (f.at(x + e)[0] - f.at(x - e)[0]) / (2 * h)
            fd2 = (f.at(x + e)[1] - f.at(x - e)[1]) / (2 * h)
            scale = 1.0 + np.abs(f.coefficients).sum() * 10.0 ** f.order
            assert abs(grad[a] - fd) <= FD_TOL * scale
            np.testing.assert_allclose(hess[a], fd2, rtol=0, atol=FD_TOL * scale)


def test_multivariate_polynomial_bad_input():
    with pytest.raises(InvalidInputError, match="has 6 terms; got 5"):
        MultivariatePolynomialFunction(np.ones(5), 2, 2)
    with pytest.raises(InvalidInputError, match="at most 6 arguments"):
        MultivariatePolynomialFunction([1.0], 7, 0)
    with pytest.raises(InvalidInputError, match="takes 2 argument"):
        CustomJoint(TILTED, [MultivariatePolynomialFunction(np.ones(3), 2, 1)] +
                    [Constant(0.0)] * 5, [0, None, None, None, None, None], 2)
    with pytest.raises(InvalidInputError, match="takes 1 argument"):
        CustomJoint(TILTED, [LinearFunction()] + [Constant(0.0)] * 5,
                    [[0, 1], None, None, None, None, None], 2)
