"""OpenSim reference models (core.reference.opensim) against the derived tables in core/data,
and the SimmSpline rules (FMM end conditions, C2 knots, linear extrapolation) on their own."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from core.reference import datasets as data
from core.errors import InvalidInputError
from core.reference import KneeGait2392, ScapulothoracicSeth2019, SimmSpline, offset_frame

TABLE_TOL = 1e-12  # the tables match OpenSim 4.6 to ~1e-15
EPS = np.finfo(float).eps
#: rotations composed of up to four elementary rotations (sin, cos and three products per
#: entry each): a few ulps per factor in R, and in R^T R or det R
ROTATION_TOL = 32 * EPS
#: a cubic span a + b dx + c dx^2 + d dx^3 of the SimmSpline: O(10) roundings of its terms,
#: relative to the spline's values
SPLINE_TOL = 16 * EPS
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


@pytest.fixture(scope="module")
def knee():
    return KneeGait2392()


@pytest.fixture(scope="module")
def scap():
    return ScapulothoracicSeth2019()


def _orthonormal(T):
    R = T[..., :3, :3]
    eye = np.broadcast_to(np.eye(3), R.shape)
    assert np.allclose(np.swapaxes(R, -1, -2) @ R, eye, atol=ROTATION_TOL)
    assert np.allclose(np.linalg.det(R), 1.0, atol=ROTATION_TOL)
    assert np.array_equal(T[..., 3, :], np.broadcast_to([0.0, 0.0, 0.0, 1.0], T[..., 3, :].shape))


# ---------------------------------------------------------------- data files


@pytest.mark.parametrize("name", ["knee_gait2392", "scapulothoracic_seth2019"])
def test_data_copies_identical_to_shared(name):
    if not (SHARED / f"{name}.json").exists():
        pytest.skip("shared/data is not beside this checkout")
    ours = data.DATA_DIR / f"{name}.json"
    assert ours.read_bytes() == (SHARED / f"{name}.json").read_bytes()


def test_load_unknown_name_raises():
    with pytest.raises(InvalidInputError, match="choose one of"):
        data.load("no_such_file")
    assert data.load("knee_gait2392.json")["joint"]["name"] == "knee_r"


# ---------------------------------------------------------------- knee


def test_knee_reproduces_every_derived_row(knee):
    s = knee.samples()
    assert s["q"].shape == (131,)
    assert np.abs(knee.poses(s["q"]) - s["T_femur_tibia"]).max() <= TABLE_TOL
    values = knee.joint.axis_values(s["q"])
    assert np.abs(values - s["spatial_transform_values"]).max() <= TABLE_TOL
    for i in (0, 57, 130):
        assert np.abs(knee.pose(s["q"][i]) - s["T_femur_tibia"][i]).max() <= TABLE_TOL


def test_knee_table_covers_range_and_frames_coincide(knee):
    s = knee.samples()
    assert knee.range == (-2.0943951, 0.17453293)
    assert s["q"][0] == pytest.approx(knee.range[0], abs=1e-7)
    assert s["q"][-1] == pytest.approx(knee.range[1], abs=1e-7)
    q = np.linspace(-2.5, 2.5, 41)
    assert np.array_equal(knee.joint_poses(q), knee.poses(q))
    # R = Rz(q), origin (s1(q), s2(q), 0)
    T = knee.poses(q)
    assert np.allclose(T[:, :3, :3], Rotation.from_euler("z", q[:, None]).as_matrix(), atol=ROTATION_TOL)
    assert np.array_equal(T[:, 0, 3], knee.spline_x(q))
    assert np.array_equal(T[:, 1, 3], knee.spline_y(q))
    assert np.all(T[:, 2, 3] == 0.0)


def test_knee_rotations_orthonormal(knee):
    rng = np.random.default_rng(4)
    _orthonormal(knee.poses(rng.uniform(-3.0, 3.0, 200)))


def test_knee_extrapolates_linearly_beyond_knots(knee):
    lo, hi = knee.spline_x.x[0], knee.spline_x.x[-1]
    t = np.array([1e-9, 0.01, 0.3, 1.0])
    for q0, sign, end in ((hi, 1.0, -1), (lo, -1.0, 0)):
        T = knee.poses(q0 + sign * t)
        for k, spline in ((0, knee.spline_x), (1, knee.spline_y)):
            slope = spline.derivative(q0 + sign * t)
            assert np.all(slope == spline.b[end])
            expected = spline.y[end] + sign * t * spline.b[end]
            # (q0 + t) - q0 differs from t by an ulp of q0, times the slope; the sum rounds
            tol = SPLINE_TOL * (abs(spline.y[end]) + abs(q0 * spline.b[end]))
            assert np.allclose(T[:, k, 3], expected, rtol=0, atol=tol)


def test_knee_rejects_bad_input(knee):
    with pytest.raises(InvalidInputError, match="finite"):
        knee.pose(np.nan)
    with pytest.raises(InvalidInputError, match="scalar"):
        knee.pose([0.1, 0.2])
    with pytest.raises(InvalidInputError, match="1-D"):
        knee.poses(np.zeros((2, 2)))


# ---------------------------------------------------------------- SimmSpline


def test_spline_interpolates_knots_and_is_c2(knee):
    for s in (knee.spline_x, knee.spline_y):
        assert np.allclose(s(s.x), s.y, rtol=0, atol=SPLINE_TOL * np.abs(s.y).max())
        xi = s.x[1:-1]
        eps = 1e-9
        for order, tol in ((1, 1e-7), (2, 1e-5)):
            left = s.derivative(xi - eps, order)
            right = s.derivative(xi + eps, order)
            assert np.allclose(left, right, rtol=0, atol=tol)
        # third derivative jumps at interior knots (it is only C2, a real spline)
        assert np.any(np.abs(np.diff(s.d)) > 1e-6)


def test_spline_end_condition_matches_cubic_through_end_knots(knee):
    """FMM: f''' at each end equals the third derivative of the cubic through 4 end knots."""
    for s in (knee.spline_x, knee.spline_y):
        for sl, k in ((slice(0, 4), 0), (slice(-4, None), -2)):
            lead = np.polyfit(s.x[sl], s.y[sl], 3)[0]
            assert 6.0 * s.d[k] == pytest.approx(6.0 * lead, rel=1e-9)


@given(
    st.lists(st.floats(0.05, 2.0), min_size=3, max_size=9),
    st.lists(st.floats(-3.0, 3.0), min_size=4, max_size=4),
    st.floats(-5.0, 5.0),
)
def test_spline_reproduces_cubics_exactly(gaps, coef, x0):
    """The FMM end conditions make the spline exact for cubic polynomials (any knots)."""
    x = x0 + np.concatenate([[0.0], np.cumsum(gaps)])
    y = np.polyval(coef, x)
    s = SimmSpline(x, y)
    xs = np.linspace(x[0], x[-1], 57)
    scale = 1.0 + np.abs(y).max()
    assert np.allclose(s(xs), np.polyval(coef, xs), rtol=0, atol=1e-9 * scale)
    assert np.allclose(s.derivative(xs), np.polyval(np.polyder(coef), xs), rtol=0,
                       atol=1e-8 * scale)


@given(st.lists(st.floats(-1.0, 1.0), min_size=5, max_size=12), st.floats(0.0, 1.0))
def test_spline_derivatives_match_finite_differences(ys, u):
    x = np.linspace(-2.0, 2.0, len(ys)) + 0.1 * np.sin(np.arange(len(ys)))
    s = SimmSpline(x, ys)
    q = x[0] + u * (x[-1] - x[0])
    h = 1e-6
    q = np.clip(q, x[0] + 2 * h, x[-1] - 2 * h)
    fd1 = (s(q + h) - s(q - h)) / (2 * h)
    fd2 = (s.derivative(q + h) - s.derivative(q - h)) / (2 * h)
    assert s.derivative(q) == pytest.approx(fd1, abs=1e-6)
    assert s.derivative(q, 2) == pytest.approx(fd2, abs=1e-4)


def test_spline_small_cases_and_end_snapping():
    line = SimmSpline([0.0, 2.0], [1.0, 5.0])
    assert np.allclose(line([-1.0, 0.5, 3.0]), [-1.0, 2.0, 7.0])
    quad = SimmSpline([0.0, 1.0, 3.0], [0.0, 1.0, 9.0])  # n == 3 reproduces quadratics
    xs = np.linspace(-1.0, 4.0, 11)
    inside = (xs >= 0) & (xs <= 3)
    assert np.allclose(quad(xs[inside]), xs[inside] ** 2, rtol=0, atol=SPLINE_TOL * 9.0)
    assert np.allclose(quad(xs[~inside]), np.where(xs[~inside] < 0, 0.0, 9.0 + 6.0 * (xs[~inside] - 3)))
    s = SimmSpline([0.0, 1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 0.0, 2.0, 1.0])
    assert s(4.0 - 1e-13) == 1.0 and s(1e-13) == 0.0
    assert s.derivative(1e-13, 2) == 2.0 * s.c[0]
    assert s.derivative(-1e-3, 2) == 0.0


def test_spline_rejects_bad_knots():
    with pytest.raises(InvalidInputError, match="increasing"):
        SimmSpline([0.0, 0.0, 1.0], [1.0, 2.0, 3.0])
    with pytest.raises(InvalidInputError, match=">= 2"):
        SimmSpline([0.0], [1.0])
    with pytest.raises(InvalidInputError, match="finite"):
        SimmSpline([0.0, 1.0], [1.0, np.inf])
    with pytest.raises(InvalidInputError, match="order"):
        SimmSpline([0.0, 1.0], [1.0, 2.0]).derivative(0.5, 3)


# ---------------------------------------------------------------- offset frames


def test_offset_frame_is_body_fixed_xyz():
    o = np.array([-0.5181, -1.1416, -0.2854])
    t = np.array([0.1, -0.2, 0.3])

    def rx(a):
        c, s = np.cos(a), np.sin(a)
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])

    def ry(a):
        c, s = np.cos(a), np.sin(a)
        return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])

    def rz(a):
        c, s = np.cos(a), np.sin(a)
        return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])

    T = offset_frame(t, o)
    assert np.allclose(T[:3, :3], rx(o[0]) @ ry(o[1]) @ rz(o[2]), rtol=0, atol=ROTATION_TOL)
    assert np.array_equal(T[:3, 3], t)


# ---------------------------------------------------------------- scapulothoracic


def test_scapula_reproduces_every_grid_entry(scap):
    g = scap.grid()
    assert g["q"].shape == (17, 11, 4)
    assert np.allclose(g["abduction"], np.linspace(-0.8, 0.8, 17), atol=1e-12)
    assert np.allclose(g["elevation"], np.linspace(-0.5, 0.5, 11), atol=1e-12)
    q = g["q"].reshape(-1, 4)
    assert np.abs(scap.poses(q) - g["T_thorax_scapula"].reshape(-1, 4, 4)).max() <= TABLE_TOL
    assert np.abs(scap.joint_poses(q) - g["T_pjoint_cjoint"].reshape(-1, 4, 4)).max() <= TABLE_TOL
    i, j = 3, 7
    assert np.abs(scap.pose(g["q"][i, j]) - g["T_thorax_scapula"][i, j]).max() <= TABLE_TOL
    assert np.abs(scap.joint_pose(g["q"][i, j]) - g["T_pjoint_cjoint"][i, j]).max() <= TABLE_TOL


def test_scapula_ranges_and_defaults(scap):
    assert scap.ranges.shape == (4, 2)
    assert np.allclose(scap.ranges[:3], [[-3.14159265, 3.14159265]] * 3)
    assert np.allclose(scap.ranges[3], [-1.57079633, 1.57079633])
    assert scap.defaults[0] == -0.31156113764349197


def _step_by_step(scap, q):
    """Simbody's chain as built by ScapulothoracicJoint (the JSON's `construction` list),
    independent of the closed form: F = P rotated +pi/2 about z; Ellipsoid mobilizer with
    body-fixed XYZ angles and semi-axes (ry, rx, rz); M1 = Rz(pi/2) in B1; pin about u through o."""
    def tf(R, p=(0.0, 0.0, 0.0)):
        T = np.eye(4)
        T[:3, :3] = R
        T[:3, 3] = p
        return T

    rx, ry, rz = scap.radii
    semi = np.array([ry, rx, rz])
    R_fm = Rotation.from_euler("XYZ", q[:3]).as_matrix()
    X_fm = tf(R_fm, semi * R_fm[:, 2])
    quarter = Rotation.from_euler("z", np.pi / 2).as_matrix()
    X_p_b1 = tf(quarter) @ X_fm @ tf(quarter.T)
    Ru = Rotation.from_rotvec(q[3] * scap.winging_axis).as_matrix()
    o = scap.winging_origin
    X_b1_b2 = tf(Ru, o - Ru @ o)
    return X_p_b1 @ X_b1_b2


@pytest.mark.parametrize("winging", [None, (np.array([0.031, -0.027, 0.0]), 0.7)])
def test_scapula_closed_form_equals_step_by_step_chain(winging):
    scap = ScapulothoracicSeth2019()
    if winging is not None:
        scap.winging_origin = winging[0]
        scap.winging_axis = np.array([-np.sin(winging[1]), np.cos(winging[1]), 0.0])
    rng = np.random.default_rng(2019)
    qs = rng.uniform(-1.2, 1.2, (300, 4))
    qs[:5] = [[0, 0, 0, 0], [1e-8, -1e-8, 1e-8, 1e-8], [np.pi / 2, 0, 0, 0],
              [0, np.pi / 2, 0, 0], [np.pi, -np.pi, np.pi, 1.5]]
    ref = np.array([_step_by_step(scap, q) for q in qs])
    got = scap.joint_poses(qs)
    assert np.abs(got - ref).max() < ROTATION_TOL   # the same rotations and offsets, regrouped
    _orthonormal(got)
    _orthonormal(scap.poses(qs))


def test_scapula_contact_point_on_ellipsoid(scap):
    rng = np.random.default_rng(7)
    qs = rng.uniform(-3, 3, (100, 4))
    qs[:, 2:] = 0.0  # q3 spins about the contact point; q4 moves off it unless o = 0
    p = scap.joint_poses(qs)[:, :3, 3]
    assert np.allclose(np.sum((p / scap.radii) ** 2, axis=1), 1.0, atol=1e-13)


def test_scapula_rejects_bad_input(scap):
    with pytest.raises(InvalidInputError, match="shape"):
        scap.poses(np.zeros((3, 3)))
    with pytest.raises(InvalidInputError, match="finite"):
        scap.pose([0.0, np.nan, 0.0, 0.0])
    with pytest.raises(InvalidInputError, match="one coordinate vector"):
        scap.pose(np.zeros((2, 4)))
