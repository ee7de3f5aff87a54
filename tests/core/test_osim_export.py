"""core.io.osim_export: models written as .osim files, read back by core.io.osim and by
OpenSim 4.6.

The OpenSim parts run where ``opensim`` imports (the Python 3.13 environment, .venv-py313).
"""

import dataclasses
import math
import os

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.io.osim import GROUND, OsimCoupler, find_mesh_file, parse_osim, read_osim
from core.io.osim_export import (DEFAULT_TOLERANCE, export_osim, osim_document,
                                 write_model_motion, write_osim)
from core.joints.lower_pairs import Prismatic, Revolute, Universal
from core.joints.opensim import LinearFunction
from core.lie import se3
from test_osim_import import _os_pose, _set_q  # OpenSim's poses, coordinates set by name

OSIM = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "osim")
MODELS = ("gait2392_thelen2003muscle.osim", "ThoracoscapularShoulderModel.osim",
          "arm26.osim", "double_pendulum.osim")
#: child-in-parent poses after a round trip: the offsets are written as exact decimals of
#: their translation and X-Y-Z angles, and the angles are turned back into a matrix, a few
#: ulps from the one read; composed with P, X_FM and C^-1 (lengths ~1 m) that stays within a
#: few hundred ulps of the unit scale
POSE_TOL = 1e-12
#: the fitted knee exported and posed by OpenSim vs the fitted joint: the brief's bound
KNEE_MM, KNEE_DEG = 0.01, 0.01

opensim_tests = pytest.mark.skipif(
    __import__("importlib").util.find_spec("opensim") is None,
    reason="OpenSim 4.6 is installed in the Python 3.13 test environment only")


def path(name):
    return os.path.join(OSIM, name)


def random_qs(model, n, seed):
    """n random q within the coordinates' ranges (clipped to +-1.5 around the default)."""
    rng = np.random.default_rng(seed)
    lo = np.array([max(c.range[0], c.default - 1.5) for c in model.coordinates.values()])
    hi = np.array([min(c.range[1], c.default + 1.5) for c in model.coordinates.values()])
    return rng.uniform(lo, hi, (n, model.nq))


# ----------------------------------------------------------------------------- round trip
@pytest.mark.parametrize("name", MODELS)
def test_round_trip_preserves_the_model(name):
    m = read_osim(path(name))
    back = parse_osim(osim_document(m), source="back.osim")
    assert [(j.name, j.kind, j.parent, j.child, j.coordinates) for j in back.joints] == \
        [(j.name, j.kind, j.parent, j.child, j.coordinates) for j in m.joints]
    for q in random_qs(m, 20, 1):
        for j in m.joints:
            assert np.abs(back.pose_in_parent(j.name, q) - m.pose_in_parent(j.name, q)).max() \
                <= POSE_TOL
    assert back.coordinates == m.coordinates        # ranges, flags, defaults, motion types
    assert np.array_equal(back.gravity, m.gravity)
    for b in m.bodies.values():
        c = back.bodies[b.name]
        assert c.mass == b.mass and np.array_equal(c.com, b.com)
        assert np.array_equal(c.inertia, b.inertia)
        assert [(g.kind, g.mesh_file, g.dimensions) for g in c.geometry] == \
            [(g.kind, g.mesh_file, g.dimensions) for g in b.geometry]
        for g, h in zip(b.geometry, c.geometry):
            assert np.abs(g.pose - h.pose).max() <= POSE_TOL
            assert np.array_equal(g.scale, h.scale) and g.color == h.color


def test_couplers_round_trip():
    m = read_osim(path("double_pendulum.osim"))
    f = LinearFunction(0.5, -0.1)
    m.couplers.append(OsimCoupler("couple <q2>", "q2", ("q1",), f, f.to_dict(), False))
    back = parse_osim(osim_document(m), source="back.osim")
    (c,) = back.couplers
    assert (c.name, c.dependent, c.independent, c.enforced) == \
        ("couple <q2>", "q2", ("q1",), False)
    assert c.function == f


def _moved_axis_model(joint):
    """double_pendulum with its second pin replaced by ``joint`` (a core joint)."""
    m = read_osim(path("double_pendulum.osim"))
    if joint.nq == 2:
        m = dataclasses.replace(m, coordinates=dict(m.coordinates))
        m.coordinates["q3"] = dataclasses.replace(m.coordinates["q2"], name="q3")
    j = m.joints[1]
    m.joints[1] = dataclasses.replace(j, joint=joint, coordinates=("q2", "q3")[:joint.nq])
    return m


@pytest.mark.parametrize("joint, kind", [
    (Revolute(axis=(0.6, 0.0, 0.8)), "PinJoint"),
    (Revolute(axis=(0.0, 0.0, -1.0)), "PinJoint"),
    (Prismatic(axis=(0.0, 0.6, -0.8)), "SliderJoint"),
    (Universal(axis0=(0.0, 0.6, 0.8), axis1=(1.0, 0.0, 0.0)), "UniversalJoint"),
    (Universal(axis0=(0.0, 0.6, 0.8), axis1=(0.6, 0.8, 0.0)), "CustomJoint")])
def test_lower_pairs_about_any_axis_keep_their_poses(joint, kind):
    m = _moved_axis_model(joint)
    back = parse_osim(osim_document(m), source="axis.osim")
    assert back.joints[1].kind == kind
    for q in random_qs(m, 10, 2):
        assert np.abs(back.pose_in_parent(m.joints[1].name, q) -
                      m.pose_in_parent(m.joints[1].name, q)).max() <= POSE_TOL


# ----------------------------------------------------------------------------- bad input
def _spherical_model():
    from core.joints.spherical import Spherical
    m = read_osim(path("double_pendulum.osim"))
    m.joints[1] = dataclasses.replace(m.joints[1], joint=Spherical())
    return m


def test_unexportable_joint_is_named_and_nothing_is_written(tmp_path):
    m = _spherical_model()
    target = tmp_path / "out.osim"
    with pytest.raises(InvalidInputError, match=r"joint 'pin2' \(Spherical.*replace it"):
        write_osim(target, m)
    assert not target.exists() and os.listdir(tmp_path) == []
    target.write_text("old content")
    with pytest.raises(InvalidInputError, match="pin2"):
        write_osim(target, m)
    assert target.read_text() == "old content" and os.listdir(tmp_path) == ["out.osim"]


def test_bad_tolerance_is_refused():
    with pytest.raises(InvalidInputError, match="tolerance must be"):
        export_osim(read_osim(path("arm26.osim")), tolerance=(0.0, 1e-5))


# ----------------------------------------------------------------------------- spline joints
@pytest.fixture(scope="module")
def fitted_knee():
    """gait2392 with knee_r replaced by a spline curve fitted to the exact knee (8 frames)."""
    from core.fitting.curve import fit_spline_curve
    from core.fitting.samples import JointSamples
    from core.fitting.osim import with_joint
    m = read_osim(path("gait2392_thelen2003muscle.osim"))
    j = m.joint("knee_r")
    q = np.linspace(*m.coordinates["knee_angle_r"].range, 121)
    fit = fit_spline_curve(JointSamples(j.joint.transforms(q[:, None]), q), n_frames=8)
    return with_joint(m, dataclasses.replace(j, joint=fit.joint, spec={}))


def test_spline_curve_knee_is_written_as_simm_splines_within_tolerance(fitted_knee):
    export = export_osim(fitted_knee)
    (c,) = export.conversions
    assert c.joint == "knee_r" and c.functions == "SimmSpline"
    assert c.max_position_error <= DEFAULT_TOLERANCE[0]
    assert c.max_angle_error <= DEFAULT_TOLERANCE[1]
    # read back by the reader (one coordinate per axis): the CustomJoint's poses are the
    # fitted joint's within the tolerance on a grid other than the checked one
    back = parse_osim(export.text, source="knee.osim")
    knee = back.joint("knee_r")
    assert knee.kind == "CustomJoint"
    assert all(f["type"] == "SimmSpline" and len(f["x"]) == c.size
               for f in knee.spec["functions"])
    q = np.linspace(*fitted_knee.coordinates["knee_angle_r"].range, 997)
    G = np.array([back.pose_in_parent("knee_r", {"knee_angle_r": a}) for a in q])
    F = fitted_knee.joint("knee_r").joint.transforms(q[:, None])
    from core.fitting.metric import pose_errors
    pos, rot = pose_errors(G, F)
    assert pos.max() * 1e-3 <= DEFAULT_TOLERANCE[0] * 1.01
    assert math.radians(rot.max()) <= DEFAULT_TOLERANCE[1] * 1.01


def _scapula_surface_model():
    from core.fitting.osim import spline_joint_from_osim, with_joint
    m = read_osim(path("ThoracoscapularShoulderModel.osim"))
    fit = spline_joint_from_osim(m, "scapulothoracic",
                                 ("scapula_abduction", "scapula_elevation"))
    return with_joint(m, fit.osim_joint), fit


#: a spline surface as polynomials of order <= 8: looser than the default tolerance, which
#: the surface misses by ~5 um and ~1 mrad (test_surface_refused_at_the_default_tolerance)
SURFACE_TOLERANCE = (1e-4, 1e-3)


def test_surface_refused_at_the_default_tolerance():
    m, _ = _scapula_surface_model()
    with pytest.raises(InvalidInputError, match=r"scapulothoracic.*polynomials of total order"):
        export_osim(m)


def test_surface_is_written_as_polynomials_and_reads_back():
    """The polynomial surface is within the tolerance of the fitted joint, and the reader
    reads it back (axes of two coordinates) posing the scapula as the fitted joint does."""
    from core.fitting.metric import pose_errors
    m, _ = _scapula_surface_model()
    export = export_osim(m, tolerance=SURFACE_TOLERANCE)
    (c,) = export.conversions
    assert c.functions == "MultivariatePolynomialFunction" and 1 <= c.size <= 8
    assert c.max_position_error <= SURFACE_TOLERANCE[0]
    assert c.max_angle_error <= SURFACE_TOLERANCE[1]
    back = parse_osim(export.text, source="scapula.osim")
    st = back.joint("scapulothoracic")
    assert st.kind == "CustomJoint" and st.coordinates == ("scapula_abduction",
                                                           "scapula_elevation")
    assert sum(isinstance(a, tuple) for a in st.joint.arguments) == 6
    fitted = m.joint("scapulothoracic")
    lo, hi = fitted.joint.lower, fitted.joint.upper
    qs = np.random.default_rng(9).uniform(lo, hi, (200, 2))
    G = np.array([back.pose_in_parent("scapulothoracic", dict(zip(st.coordinates, q)))
                  for q in qs])
    F = np.array([m.pose_in_parent("scapulothoracic", dict(zip(st.coordinates, q)))
                  for q in qs])
    pos, rot = pose_errors(G, F)                     # mm and degrees
    # within the tolerance up to the exported fit's own sampling (a slightly wider margin
    # than on the checked grid: these are random points of the same box)
    assert pos.max() * 1e-3 <= 2 * SURFACE_TOLERANCE[0]
    assert math.radians(rot.max()) <= 2 * SURFACE_TOLERANCE[1]


# ----------------------------------------------------------------------------- motions
def test_motion_is_written_in_degrees(tmp_path):
    from core.io.motion import read_motion
    m = read_osim(path("gait2392_thelen2003muscle.osim"))
    q = random_qs(m, 7, 4)
    t = np.linspace(0.0, 0.6, 7)
    write_model_motion(tmp_path / "m.mot", m, t, q)
    motion = read_motion(tmp_path / "m.mot")
    assert motion.in_degrees and motion.names == m.coordinate_names
    rot = np.array([m.is_rotational(n) for n in m.coordinate_names])
    assert np.array_equal(motion.values[:, rot], np.degrees(q[:, rot]))
    assert np.array_equal(motion.values[:, ~rot], q[:, ~rot])
    with pytest.raises(InvalidInputError, match="q must have shape"):
        write_model_motion(tmp_path / "bad.mot", m, t, q[:, :3])


# ----------------------------------------------------------------------------- vs OpenSim
def _load(opensim, file):
    """OpenSim's model of ``file`` with its state, and what OpenSim logged loading it."""
    log = str(file) + ".log"
    level = opensim.Logger.getLevelString()
    opensim.Logger.setLevelString("info")     # global: another module may have lowered it
    opensim.Logger.addFileSink(log)
    try:
        m = opensim.Model(str(file))
        state = m.initSystem()
    finally:
        opensim.Logger.removeFileSink()
        opensim.Logger.setLevelString(level)
    with open(log, encoding="utf-8") as fh:
        return m, state, fh.read()


@pytest.fixture
def opensim_dir(tmp_path):
    """A folder whose Geometry/ is the shipped meshes, so an exported gait2392 finds them."""
    import opensim
    opensim.Logger.removeFileSink()
    os.symlink(os.path.abspath(os.path.join(OSIM, "Geometry")), tmp_path / "Geometry")
    return opensim, tmp_path


def _without_missing_meshes(m):
    for b in m.bodies.values():
        b.geometry = [g for g in b.geometry
                      if g.kind != "Mesh" or find_mesh_file(g.mesh_file, m.path)]
    return m


@opensim_tests
@pytest.mark.parametrize("name", MODELS)
def test_opensim_loads_the_export_silently_with_equal_poses(opensim_dir, name):
    opensim, folder = opensim_dir
    ours = _without_missing_meshes(read_osim(path(name)))
    write_osim(folder / name, ours)
    m, state, log = _load(opensim, folder / name)
    assert "[warning]" not in log and "[error]" not in log, log
    assert "Loaded model" in log
    for q in random_qs(ours, 5, 3):
        _set_q(m, state, dict(zip(ours.coordinate_names, q)))
        for j in ours.joints:
            assert np.abs(_os_pose(m, state, j.child, j.parent) -
                          ours.pose_in_parent(j.name, q)).max() <= POSE_TOL


@opensim_tests
def test_opensim_poses_the_exported_fitted_knee_like_the_fitted_joint(opensim_dir, fitted_knee):
    from core.fitting.metric import pose_errors
    opensim, folder = opensim_dir
    write_osim(folder / "knee.osim", fitted_knee)
    m, state, log = _load(opensim, folder / "knee.osim")
    assert "[warning]" not in log and "[error]" not in log, log
    j = fitted_knee.joint("knee_r")
    angles = np.linspace(*fitted_knee.coordinates["knee_angle_r"].range, 200)
    got = []
    for a in angles:
        _set_q(m, state, {"knee_angle_r": a})
        got.append(_os_pose(m, state, "tibia_r", "femur_r"))
    expected = j.parent_offset @ j.joint.transforms(angles[:, None]) @ se3.inv(j.child_offset)
    pos, rot = pose_errors(np.array(got), expected)
    assert pos.max() <= KNEE_MM and rot.max() <= KNEE_DEG


@opensim_tests
def test_opensim_poses_the_exported_surface_like_the_fitted_joint(opensim_dir):
    """MultivariatePolynomialFunctions of two coordinates on a CustomJoint, in OpenSim."""
    from core.fitting.metric import pose_errors
    opensim, folder = opensim_dir
    model, fit = _scapula_surface_model()
    model = _without_missing_meshes(model)
    (c,) = write_osim(folder / "st.osim", model, tolerance=SURFACE_TOLERANCE)
    m, state, log = _load(opensim, folder / "st.osim")
    assert "[warning]" not in log and "[error]" not in log, log
    j = model.joint("scapulothoracic")
    rng = np.random.default_rng(8)
    q = rng.uniform(fit.ranges[:, 0], fit.ranges[:, 1], (40, 2))
    got = []
    for a, b in q:
        _set_q(m, state, {"scapula_abduction": a, "scapula_elevation": b})
        got.append(_os_pose(m, state, j.child, j.parent))
    # the joint-frame error is the reported one; the child body adds the child offset's
    # lever arm (|C| < 0.1 m) times the angle error
    lever = np.linalg.norm(j.child_offset[:3, 3])
    expected = j.parent_offset @ j.joint.transforms(q) @ se3.inv(j.child_offset)
    pos, rot = pose_errors(np.array(got), expected)
    assert math.radians(rot.max()) <= c.max_angle_error * 1.01
    assert pos.max() * 1e-3 <= (c.max_position_error + lever * c.max_angle_error) * 1.01


@opensim_tests
def test_opensim_reads_the_motion_back(opensim_dir):
    opensim, folder = opensim_dir
    ours = read_osim(path("gait2392_thelen2003muscle.osim"))
    q = random_qs(ours, 9, 6)
    t = np.linspace(0.0, 0.8, 9)
    write_model_motion(folder / "walk.mot", ours, t, q)
    table = opensim.TimeSeriesTable(str(folder / "walk.mot"))
    labels = list(table.getColumnLabels())
    assert labels == list(ours.coordinate_names)
    assert table.getTableMetaDataAsString("inDegrees") == "yes"
    times = np.array(list(table.getIndependentColumn()))
    values = np.array([[table.getDependentColumn(n)[k] for n in labels]
                       for k in range(len(times))])
    rot = np.array([ours.is_rotational(n) for n in labels])
    assert np.array_equal(times, t)
    assert np.array_equal(values, np.where(rot, np.degrees(q), q))
    storage = opensim.Storage(str(folder / "walk.mot"))
    assert storage.isInDegrees() and storage.getSize() == len(t)
