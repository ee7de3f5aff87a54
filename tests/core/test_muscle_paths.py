"""Muscle paths (core.muscles.paths, core.muscles.wrap): reading, building, lengths, speeds
and moment arms, checked against central finite differences of our own length and against
OpenSim 4.6 (where ``opensim`` imports: the Python 3.13 environment).

Comparisons with OpenSim: every muscle of gait2392, arm26 and the thoracoscapular model, at 9
values over the range of each coordinate it spans (the others at their defaults) and at 20
random poses inside the ranges. In the OpenSim model every coordinate is unlocked (OpenSim
ignores a value set on a locked one) and the thoracoscapular model's PointConstraint is not
enforced: our moment arms hold the other coordinates still, while OpenSim's MomentArmSolver
moves them with the constraint. OpenSim's moment arm about a coordinate is per unit of its
generalized speed; the scapulothoracic joint's ellipsoid mobilizer has speeds that are not
the coordinates' rates, so OpenSim's values are compared with ``N^T r``, ``N = dq/du`` read
from OpenSim. The thoracoscapular sweep is ``slow``; its default pose and three random poses
run always.
"""

import math
import os
import re

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.io.osim import parse_osim, read_osim
from core.io.osim_export import osim_document
from core.muscles.paths import (ConditionalPathPoint, GeometryPath, MovingPathPoint,
                                PathPoint, PathSet, PathWrap, lengthening_speed, moment_arms,
                                path_generalized_forces, path_geometry, path_kinematics,
                                path_length, path_measures, spanned_coordinates)
from core.muscles.wrap import WrapObject

OSIM = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "osim")
GAIT, ARM, THORAX = ("gait2392_thelen2003muscle.osim", "arm26.osim",
                     "ThoracoscapularShoulderModel.osim")
EPS = np.finfo(float).eps
#: OpenSim and we compose the same ~10 transforms and sums per point in the same order up to
#: rounding; the issue's bounds, far above the ~1e-15 m both agree to
LENGTH_TOL, LENGTH_TOL_WRAP = 1e-9, 1e-6
ARM_TOL, ARM_TOL_WRAP = 1e-8, 1e-6
#: central differences with step H of a length ~1 m: rounding ~ eps L / H ~ 2e-10; truncation
#: H^2 |L'''| / 6, where gait2392's quadriceps splines put knots 1.7e-4 rad apart near 0
#: (|L'''| up to ~1e3 m): ~2e-10
H = 1e-6
FD_TOL = 1e-8
#: a wrapped path: OpenSim's tangent points are not exactly where the path is shortest (the
#: cylinder's are slid along the axis only when a path has several wraps, to 0.1 degree; the
#: ellipsoid's lie in a plane chosen by its heuristics), so OpenSim's moment arm, which ours
#: reproduces, differs from -dL/dq of its own length; arm26 shows up to 0.33 mm
FD_TOL_WRAP = 5e-4


def path(name):
    return os.path.join(OSIM, name)


@pytest.fixture(scope="module")
def models():
    return {name: read_osim(path(name)) for name in (GAIT, ARM, THORAX)}


def _random_poses(model, n, seed):
    rng = np.random.default_rng(seed)
    lo = np.array([c.range[0] for c in model.coordinates.values()])
    hi = np.array([c.range[1] for c in model.coordinates.values()])
    return lo + rng.random((n, model.nq)) * (hi - lo)


# ----------------------------------------------------------------------------- reading
def test_muscles_and_wrap_objects_are_read(models):
    gait, arm, thorax = models[GAIT], models[ARM], models[THORAX]
    with open(path(GAIT), encoding="utf-8") as fh:
        names = re.findall(r'<Thelen2003Muscle name="([^"]+)"', fh.read())
    assert list(gait.muscles) == names and len(names) == 92
    assert {m.kind for m in thorax.muscles.values()} == {"Millard2012EquilibriumMuscle"}
    assert len(thorax.muscles) == 33 and len(arm.muscles) == 6
    assert not [s for s in gait.skipped + arm.skipped if "Muscle" in s or "Wrap" in s]
    rf = gait.muscles["rect_fem_r"]
    assert (rf.max_isometric_force, rf.optimal_fiber_length, rf.tendon_slack_length) == \
        (1169.0, 0.114, 0.31)
    assert rf.pennation_angle_at_optimal == 0.08726646 and rf.extra["Flen"] == "1.8"
    p1, p2, p3 = rf.path.points
    assert type(p1) is PathPoint and p1.body == "pelvis"
    assert isinstance(p2, ConditionalPathPoint) and p2.coordinate == "knee_angle_r"
    assert p2.range == (-2.61799, -1.45997)
    assert isinstance(p3, MovingPathPoint) and p3.body == "tibia_r"
    assert [f[0] for f in p3.functions] == ["knee_angle_r"] * 3
    assert sorted(arm.wrap_objects) == ["BIClonghh", "TRI", "TRIlongglen", "TRIlonghh"]
    tri = arm.wrap_objects["TRI"]
    assert (tri.kind, tri.body, tri.radius, tri.length, tri.quadrant) == \
        ("WrapCylinder", "r_humerus", 0.016, 0.05, "all")
    assert arm.wrap_objects["TRIlonghh"].radii.tolist() == [0.035, 0.02, 0.02]
    assert [w.wrap_object for w in arm.muscles["TRIlong"].path.wraps] == \
        ["TRI", "TRIlonghh", "TRIlongglen"]
    assert arm.muscles["BIClong"].path.wraps[0].range == (2, 3)
    assert len(thorax.wrap_objects) == 10
    assert "Millard" not in " ".join(thorax.skipped)
    millard = thorax.muscles["TrapeziusScapula_M"].extra
    assert millard["ForceVelocityCurve"].startswith("<ForceVelocityCurve")


def _edited(name, old, new, count=1):
    with open(path(name), encoding="utf-8") as fh:
        text = fh.read()
    assert old in text
    return text.replace(old, new, count)


@pytest.mark.parametrize("name, old, new, match", [
    (ARM, "<socket_parent_frame>/bodyset/base</socket_parent_frame>\n\t\t\t\t\t\t\t\t\t"
          "<!--The fixed location of the path point expressed in its parent frame.-->\n"
          "\t\t\t\t\t\t\t\t\t<location>-0.053650000000000003",
     "<socket_parent_frame>/bodyset/scapula</socket_parent_frame>\n"
     "<location>-0.053650000000000003", r"path point 'TRIlong-P1'.*'/bodyset/scapula'"),
    (ARM, "<radius>0.016</radius>", "<radius>0</radius>", r"wrap object 'TRI'.*radius"),
    (ARM, "<radius>0.016</radius>", "<radius>-0.01</radius>", r"wrap object 'TRI'.*radius"),
    (ARM, "<dimensions>0.035000000000000003 0.02 0.02</dimensions>",
     "<dimensions>0.035 0 0.02</dimensions>", r"wrap object 'TRIlonghh'.*dimensions"),
    (GAIT, "<range>-2.6179899999999998 -1.45997</range>", "<range>-1.45997 -2.61799</range>",
     r"rect_fem_r-P2.*minimum above its maximum"),
    (GAIT, "<max_isometric_force>1169</max_isometric_force>",
     "<max_isometric_force>nan</max_isometric_force>", r"rect_fem_r.*max_isometric_force"),
])
def test_bad_input_is_refused_at_read_time(name, old, new, match):
    with pytest.raises(InvalidInputError, match=match):
        parse_osim(_edited(name, old, new), source=name)


def test_built_from_python(models):
    arm = models[ARM]
    q = arm.q_from({"r_elbow_flex": 1.0})
    poses = arm.body_poses(q)
    a = np.array([0.01, -0.2, 0.0])
    b = np.array([0.02, -0.05, 0.01])
    p = GeometryPath([PathPoint("r_humerus", a, "a"), PathPoint("r_ulna_radius_hand", b, "b")])
    world = [poses[body][:3, :3] @ x + poses[body][:3, 3] for body, x in
             (("r_humerus", a), ("r_ulna_radius_hand", b))]
    assert path_length(arm, q, p) == pytest.approx(np.linalg.norm(world[1] - world[0]),
                                                   abs=1e-15)
    assert spanned_coordinates(arm, p) == ("r_elbow_flex",)
    r = moment_arms(arm, q, p)
    assert r[0] == 0.0 and r[1] != 0.0
    # a wrap added from Python: the elbow's cylinder
    wrapped = GeometryPath(p.points, [PathWrap("TRI", name="w")])
    assert path_length(arm, q, wrapped) >= path_length(arm, q, p)
    with pytest.raises(InvalidInputError, match="minimum above its maximum"):
        ConditionalPathPoint("r_humerus", a, "c", coordinate="r_elbow_flex", range=(1, 0))
    with pytest.raises(InvalidInputError, match="radius"):
        WrapObject("w", "WrapSphere", "r_humerus", np.eye(4), radius=0.0)
    with pytest.raises(InvalidInputError, match="'nowhere'"):
        path_length(arm, q, GeometryPath([PathPoint("nowhere", a, "x"), p.points[1]]))
    with pytest.raises(InvalidInputError, match="'missing'"):
        path_length(arm, q, GeometryPath(p.points, [PathWrap("missing", name="w")]))


# ----------------------------------------------------------------------------- derivatives
def _fd_moment_arms(model, q, muscles):
    """``{muscle: -dL/dq (nq,)}`` by central differences, one kinematics per step."""
    out = {m: np.zeros(model.nq) for m in muscles}
    for k in range(model.nq):
        e = np.zeros(model.nq)
        e[k] = H
        plus, minus = path_kinematics(model, q + e), path_kinematics(model, q - e)
        for name in muscles:
            p = model.muscles[name].path
            out[name][k] = -(path_length(plus, None, p) - path_length(minus, None, p)) / (2 * H)
    return out


@pytest.mark.parametrize("name", [GAIT, ARM])
def test_moment_arms_are_minus_the_length_gradient(models, name):
    """At the default pose, a tiny pose (every coordinate within 1e-4 of 0) and random poses:
    exact for point paths, within what OpenSim's tangent points allow for paths with one wrap.
    A path with several wraps (arm26's TRIlong) has OpenSim's length, which mixes the tangent
    points of its first pass with the arcs of its last (core.muscles.paths._freeze), and
    OpenSim's moment arm; these two differ by millimetres in OpenSim itself, so such paths
    are checked against OpenSim only."""
    model = models[name]
    rng = np.random.default_rng(3)
    poses = [model.default_q(), 1e-4 * rng.uniform(-1, 1, model.nq),
             *_random_poses(model, 2, 5)]
    for q in poses:
        fd = _fd_moment_arms(model, q, model.muscles)
        kin = path_kinematics(model, q)
        for mname, muscle in model.muscles.items():
            if len(muscle.path.wraps) > 1:
                continue
            r = moment_arms(kin, None, muscle.path)
            tol = FD_TOL_WRAP if muscle.path.wraps else FD_TOL
            assert np.abs(r - fd[mname]).max() <= tol, (mname, q)


def test_conditional_point_switching(models):
    """rect_fem_r's femoral point is active for knee_angle_r in [-2.61799, -1.45997] (plus
    OpenSim's 1e-5): the length kinks there and each side's moment arm is that side's
    one-sided derivative."""
    gait = models[GAIT]
    muscle = gait.muscles["rect_fem_r"].path
    k = gait.coordinate_names.index("knee_angle_r")
    edge = -1.45997 + 1e-5
    for q_knee, step, points in ((edge - 1e-4, -H, 3), (edge + 1e-4, H, 2)):
        q = gait.q_from({"knee_angle_r": q_knee})
        assert len(path_geometry(gait, q, muscle).nodes) == points
        e = np.zeros(gait.nq)
        e[k] = step
        # second-order one-sided difference, away from the switch
        d = -(-3 * path_length(gait, q, muscle) + 4 * path_length(gait, q + e, muscle)
              - path_length(gait, q + 2 * e, muscle)) / (2 * step)
        assert moment_arms(gait, q, muscle, ["knee_angle_r"])[0] == pytest.approx(d, abs=FD_TOL)
    below = moment_arms(gait, gait.q_from({"knee_angle_r": edge - 1e-9}), muscle)[k]
    above = moment_arms(gait, gait.q_from({"knee_angle_r": edge + 1e-9}), muscle)[k]
    assert abs(below - above) > 1e-4


def test_moment_arms_near_wrap_lift_off(models):
    """TRIlat over the elbow's cylinder: the path leaves the cylinder somewhere in the
    elbow's range; on both sides of that angle the moment arm follows the length."""
    arm = models[ARM]
    muscle = arm.muscles["TRIlat"].path
    k = arm.coordinate_names.index("r_elbow_flex")
    angles = np.linspace(*arm.coordinates["r_elbow_flex"].range, 401)
    wrapped = [len(path_geometry(arm, arm.q_from({"r_elbow_flex": a}), muscle).nodes) >
               len(muscle.points) for a in angles]
    switch = int(np.nonzero(np.diff(wrapped))[0][0])
    for a in (angles[switch] - 1e-3, angles[switch + 1] + 1e-3):
        q = arm.q_from({"r_elbow_flex": a})
        e = np.zeros(arm.nq)
        e[k] = H
        d = -(path_length(arm, q + e, muscle) - path_length(arm, q - e, muscle)) / (2 * H)
        assert moment_arms(arm, q, muscle)[k] == pytest.approx(d, abs=FD_TOL_WRAP)


def test_lengthening_speed_and_generalized_forces(models):
    gait = models[GAIT]
    q = _random_poses(gait, 1, 11)[0]
    v = np.random.default_rng(12).uniform(-2, 2, gait.nq)
    for name in ("rect_fem_r", "vas_int_r", "glut_max1_l", "soleus_r"):
        p = gait.muscles[name].path
        d = (path_length(gait, q + H * v, p) - path_length(gait, q - H * v, p)) / (2 * H)
        assert lengthening_speed(gait, q, v, p) == pytest.approx(d, abs=FD_TOL * 10)
        assert np.array_equal(path_generalized_forces(gait, q, p, 250.0),
                              250.0 * moment_arms(gait, q, p))
    with pytest.raises(InvalidInputError, match="speeds"):
        lengthening_speed(gait, q, v[:3], p)


@pytest.mark.parametrize("name", [GAIT, ARM])
def test_a_path_set_measures_what_each_path_measures(models, name):
    """PathSet (the wrap-free paths batched) against path_measures path by path, at poses
    inside the ranges (conditional points on and off) and beyond them (moving points'
    coordinates clamped). Both do the same products and sums in another order: a length sums
    K segment norms of world points |p| <= P, each within ~4 eps P, so |dL| <= 8 K eps P; a
    moment arm sums 2K terms p x f . w + f . v with |f| = 1 and |w| <= 1 (rotations), so
    within 8 K eps P (the lever arms' rounding); a speed likewise times max |v|."""
    model = models[name]
    muscles = list(model.muscles)
    paths = [model.muscles[m].path for m in muscles]
    batch = PathSet(model, paths, muscles)
    rng = np.random.default_rng(5)
    poses = np.vstack([_random_poses(model, 6, 4), 1.5 * _random_poses(model, 2, 6)])
    for q in poses:
        v = rng.uniform(-2.0, 2.0, model.nq)
        kin = path_kinematics(model, q)
        lengths, speeds, arms = batch.measures(kin, v)
        P = max(np.abs(T[:3, 3]).max() for T in kin.poses.values()) + 1.0
        for m, p in enumerate(paths):
            L, s, r = path_measures(kin, p, v)
            tol = 8 * len(p.points) * EPS * P
            assert abs(lengths[m] - L) <= tol
            assert abs(speeds[m] - s) <= tol * np.abs(v).max() * 4
            np.testing.assert_allclose(arms[m], r, rtol=0.0, atol=tol * 4)
    with pytest.raises(InvalidInputError, match="'bad'.*body 'nowhere'"):
        PathSet(model, [GeometryPath([PathPoint("nowhere", np.zeros(3), "bad"),
                                      PathPoint("ground", np.ones(3))])], ["m"])


# ----------------------------------------------------------------------------- vs OpenSim
opensim_tests = pytest.mark.skipif(
    __import__("importlib").util.find_spec("opensim") is None,
    reason="OpenSim 4.6 is installed in the Python 3.13 test environment only")


class _OpenSim:
    """An OpenSim model with every coordinate unlocked and no constraint enforced, and the
    maps between its coordinates and ours."""

    def __init__(self, model, file):
        import opensim
        opensim.Logger.removeFileSink()
        self.model = model
        self.om = opensim.Model(file)
        cs = self.om.getCoordinateSet()
        for i in range(cs.getSize()):
            cs.get(i).setDefaultLocked(False)
        constraints = self.om.getConstraintSet()
        for i in range(constraints.getSize()):
            constraints.get(i).set_isEnforced(False)
        self.state = self.om.initSystem()
        self.coords = [cs.get(name) for name in model.coordinate_names]
        self.muscles = {n: self.om.getMuscles().get(n).getGeometryPath()
                        for n in model.muscles}
        self.mobilizers = any(j.kind in ("EllipsoidJoint", "ScapulothoracicJoint")
                              for j in model.joints)
        q0 = np.array(self.state.getQ().to_numpy())
        self.q_index = []
        for c in self.coords:
            v = c.getValue(self.state)
            c.setValue(self.state, v + 0.01, False)
            self.q_index.append(int(np.argmax(np.abs(np.array(self.state.getQ().to_numpy())
                                                      - q0))))
            c.setValue(self.state, v, False)

    def set(self, q):
        for c, value in zip(self.coords, q):
            c.setValue(self.state, float(value), False)
        self.om.realizePosition(self.state)

    def speed_map(self):
        """``N`` (nq, nq): column k is dq/dt (our order) for a unit speed of coordinate k."""
        n = len(self.coords)
        if not self.mobilizers:
            return np.eye(n)
        N = np.zeros((n, n))
        for k, c in enumerate(self.coords):
            for other in self.coords:
                other.setSpeedValue(self.state, 0.0)
            c.setSpeedValue(self.state, 1.0)
            self.om.realizeVelocity(self.state)
            N[:, k] = np.array(self.state.getQDot().to_numpy())[self.q_index]
        for c in self.coords:
            c.setSpeedValue(self.state, 0.0)
        self.om.realizePosition(self.state)
        return N


def _same_body_moving_points(path):
    """OpenSim leaves out the motion of a moving point in its body when the next or previous
    point is on the same body (GeometryPath::produceForces)."""
    pts = path.points
    return any(isinstance(a, MovingPathPoint) or isinstance(b, MovingPathPoint)
               for a, b in zip(pts[:-1], pts[1:]) if a.body == b.body)


def _compare(osim, poses):
    """Lengths and moment arms at ``poses``: a list of ``(q, muscle names)``."""
    model = osim.model
    spans = {n: spanned_coordinates(model, m.path) for n, m in model.muscles.items()}
    index = {c: i for i, c in enumerate(model.coordinate_names)}
    for q, names in poses:
        osim.set(q)
        N = osim.speed_map()
        kin = path_kinematics(model, q)
        for name in names:
            p = model.muscles[name].path
            gp = osim.muscles[name]
            length = path_length(kin, None, p)
            err = abs(length - gp.getLength(osim.state))
            assert err <= (LENGTH_TOL_WRAP if p.wraps else LENGTH_TOL), (name, q, err)
            if _same_body_moving_points(p):
                continue                        # see test_moving_points_on_one_body
            r = N.T @ moment_arms(kin, None, p)
            for c in spans[name]:
                theirs = gp.computeMomentArm(osim.state, osim.coords[index[c]])
                err = abs(r[index[c]] - theirs)
                assert err <= (ARM_TOL_WRAP if p.wraps else ARM_TOL), (name, c, q, err)


def _sweeps(model):
    """9 values over the range of each coordinate (the others at their defaults), with the
    muscles spanning it."""
    spans = {n: spanned_coordinates(model, m.path) for n, m in model.muscles.items()}
    poses = []
    for c, coordinate in model.coordinates.items():
        names = [n for n, s in spans.items() if c in s]
        for value in np.linspace(*coordinate.range, 9) if names else ():
            poses.append((model.q_from({c: value}), names))
    return poses


@pytest.fixture(scope="module")
def opensim_models(models):
    return {name: _OpenSim(models[name], path(name)) for name in (GAIT, ARM, THORAX)}


@opensim_tests
@pytest.mark.parametrize("name", [GAIT, ARM])
def test_lengths_and_moment_arms_equal_opensim(models, opensim_models, name):
    model = models[name]
    poses = _sweeps(model) + [(q, list(model.muscles)) for q in _random_poses(model, 20, 7)]
    _compare(opensim_models[name], poses)


@opensim_tests
def test_thoracoscapular_equals_opensim_at_a_few_poses(models, opensim_models):
    model = models[THORAX]
    poses = [model.default_q(), *_random_poses(model, 3, 7)]
    _compare(opensim_models[THORAX], [(q, list(model.muscles)) for q in poses])


@opensim_tests
@pytest.mark.slow
def test_thoracoscapular_sweep_equals_opensim(models, opensim_models):
    model = models[THORAX]
    poses = _sweeps(model) + [(q, list(model.muscles)) for q in _random_poses(model, 20, 7)]
    _compare(opensim_models[THORAX], poses)


@opensim_tests
@pytest.mark.parametrize("name", [GAIT, ARM, THORAX])
def test_lengthening_speeds_equal_opensim(models, opensim_models, name):
    """``GeometryPath::getLengtheningSpeed`` at random poses and speeds (OpenSim's speeds u,
    our coordinate rates N u); the same sums of segment directions times point velocities,
    up to rounding on speeds of ~1 m/s (the bounds of the moment arms)."""
    model, osim = models[name], opensim_models[name]
    rng = np.random.default_rng(41)
    for q in _random_poses(model, 3, 43):
        osim.set(q)
        N = osim.speed_map()
        u = rng.uniform(-2.0, 2.0, model.nq)
        for c, value in zip(osim.coords, u):
            c.setSpeedValue(osim.state, float(value))
        osim.om.realizeVelocity(osim.state)
        kin = path_kinematics(model, q)
        for mname, muscle in model.muscles.items():
            theirs = osim.muscles[mname].getLengtheningSpeed(osim.state)
            ours = lengthening_speed(kin, None, N @ u, muscle.path)
            assert abs(ours - theirs) <= 10 * (ARM_TOL_WRAP if muscle.path.wraps else
                                               ARM_TOL), (mname, q)
        for c in osim.coords:
            c.setSpeedValue(osim.state, 0.0)


@opensim_tests
def test_moving_points_on_one_body(models, opensim_models):
    """LatissimusDorsi's two moving points on the thorax follow shoulder_elv: our moment
    arm is -dL/dq of OpenSim's own length; OpenSim's computeMomentArm leaves out the points'
    motion between them (they are on one body) and differs."""
    model, osim = models[THORAX], opensim_models[THORAX]
    k = model.coordinate_names.index("shoulder_elv")
    q = model.default_q()
    for name in ("LatissimusDorsi_S", "LatissimusDorsi_M", "LatissimusDorsi_I"):
        p = model.muscles[name].path
        assert _same_body_moving_points(p)
        gp = osim.muscles[name]
        lengths = []
        for step in (H, -H):
            qs = q.copy()
            qs[k] += step
            osim.set(qs)
            lengths.append(gp.getLength(osim.state))
        osim.set(q)
        fd = -(lengths[0] - lengths[1]) / (2 * H)
        ours = moment_arms(model, q, p)[k]
        assert ours == pytest.approx(fd, abs=FD_TOL_WRAP if p.wraps else FD_TOL)
        assert abs(gp.computeMomentArm(osim.state, osim.coords[k]) - ours) > 1e-4


@opensim_tests
@pytest.mark.parametrize("name", [GAIT, ARM, THORAX])
def test_exported_muscles_load_in_opensim_with_the_same_lengths(models, tmp_path, name):
    import opensim

    model = models[name]
    out = tmp_path / name
    out.write_text(osim_document(model), encoding="utf-8")
    again = read_osim(out)
    assert list(again.muscles) == list(model.muscles)
    assert sorted(again.wrap_objects) == sorted(model.wrap_objects)
    log = tmp_path / "opensim.log"
    level = opensim.Logger.getLevelString()
    opensim.Logger.setLevelString("info")     # global: another module may have lowered it
    opensim.Logger.removeFileSink()
    opensim.Logger.addFileSink(str(log))
    try:
        om = opensim.Model(str(out))
        state = om.initSystem()
    finally:
        opensim.Logger.removeFileSink()
        opensim.Logger.setLevelString(level)
    lines = log.read_text().splitlines()
    assert any("Loaded model" in line for line in lines), lines
    warnings = [line for line in lines
                if "warn" in line.lower() and "Couldn't find file" not in line]
    assert warnings == []
    q = _random_poses(model, 1, 21)[0]
    cs = om.getCoordinateSet()
    for c, value in zip(model.coordinate_names, q):
        cs.get(c).setLocked(state, False)
        cs.get(c).setValue(state, float(value), False)
    om.realizePosition(state)
    kin = path_kinematics(again, q)
    for mname, muscle in again.muscles.items():
        theirs = om.getMuscles().get(mname).getGeometryPath().getLength(state)
        assert abs(path_length(kin, None, muscle.path) - theirs) <= \
            (LENGTH_TOL_WRAP if muscle.path.wraps else LENGTH_TOL), mname
        assert om.getMuscles().get(mname).getMaxIsometricForce() == \
            model.muscles[mname].max_isometric_force
    assert math.isfinite(om.getTotalMass(state))


# ----------------------------------------------------------------------------- fitted knee
def test_quadriceps_moment_arms_with_the_fitted_knee(models):
    """gait2392's knee_r fitted by a spline curve over knee_angle_r: the comparison's exact
    rows are the model's moment arms, its fitted rows -dL/dq of the path with the spline
    knee (its S), and the two differ where the fitted knee's pose does."""
    from core.fitting.osim import fitted_moment_arms, spline_joint_from_osim, with_joint

    gait = models[GAIT]
    quads = ["rect_fem_r", "vas_int_r", "vas_lat_r", "vas_med_r"]
    fit = spline_joint_from_osim(gait, "knee_r")
    c = fitted_moment_arms(gait, fit, quads, "knee_angle_r", samples=7)
    assert c.values[0] == gait.coordinates["knee_angle_r"].range[0] and c.exact.shape == (4, 7)
    fitted = with_joint(gait, fit.osim_joint)
    k = fitted.coordinate_names.index("knee_angle_r")
    for j, value in enumerate(c.values):
        q = gait.q_from({"knee_angle_r": value})
        qf = fitted.q_from({"knee_angle_r": value})
        e = np.zeros(fitted.nq)
        e[k] = H
        for i, name in enumerate(quads):
            p = gait.muscles[name].path
            assert c.exact[i, j] == moment_arms(gait, q, p, ["knee_angle_r"])[0]
            if 0 < j < len(c.values) - 1:      # the moving points stop at the range's ends
                d = -(path_length(fitted, qf + e, p) - path_length(fitted, qf - e, p)) / (2 * H)
                assert c.fitted[i, j] == pytest.approx(d, abs=FD_TOL)
    assert np.array_equal(c.max_difference_mm, 1e3 * np.abs(c.fitted - c.exact).max(axis=1))
    assert np.all(c.max_difference_mm > 0.0)
    with pytest.raises(InvalidInputError, match="hip_flexion_r"):
        fitted_moment_arms(gait, fit, quads, "hip_flexion_r")


# ----------------------------------------------------------------------------- core trees
def _in_core_frames(model, path):
    """The path with its points moved into the core bodies' frames of
    ``model.to_core_model()`` (each body's joint child frame)."""
    import dataclasses

    points = []
    for pt in path.points:
        T = model.core_to_body(pt.body)
        if isinstance(pt, MovingPathPoint):
            points.append(dataclasses.replace(pt, frame=T @ pt.frame))
        else:
            points.append(dataclasses.replace(pt, location=T[:3, :3] @ pt.location + T[:3, 3]))
    return GeometryPath(points, path.wraps)


def test_paths_on_a_core_tree(models):
    """The same paths on gait2392 as a core tree (its bodies' frames are the joints' child
    frames) have the same lengths and moment arms."""
    gait = models[GAIT]
    tree, names = gait.to_core_model(lock=())
    assert names == gait.coordinate_names
    q = _random_poses(gait, 1, 31)[0]
    kin = path_kinematics(tree, q, coordinates=names)
    for name in ("rect_fem_r", "vas_lat_l", "semimem_r", "glut_max2_l", "ext_hal_r"):
        p = gait.muscles[name].path
        core_path = _in_core_frames(gait, p)
        assert path_length(kin, None, core_path) == pytest.approx(path_length(gait, q, p),
                                                                 abs=1e-14)
        assert np.abs(moment_arms(kin, None, core_path) - moment_arms(gait, q, p)).max() < 1e-14
    with pytest.raises(InvalidInputError, match="name its 23 coordinates"):
        path_kinematics(tree, q, coordinates=names[:3])


def test_export_refuses_a_moving_point_in_an_offset_frame(models):
    import dataclasses

    gait = models[GAIT]
    muscle = gait.muscles["vas_med_r"]
    points = list(muscle.path.points)
    moved = np.eye(4)
    moved[:3, 3] = [0.0, 0.01, 0.0]
    points[-1] = dataclasses.replace(points[-1], frame=moved)
    changed = dataclasses.replace(muscle, path=GeometryPath(points, muscle.path.wraps))
    model = dataclasses.replace(gait, muscles={**gait.muscles, "vas_med_r": changed})
    with pytest.raises(InvalidInputError, match="vas_med_r.*offset from its body"):
        osim_document(model)
