"""Inverse kinematics and marker placement (core.mocap.ik) on OpenSim's gait2392 pipeline,
against OpenSim 4.6 where it is installed.

Where each solver stops. OpenSim's InverseKinematicsTool minimizes the assembly goal with
Simbody's L-BFGS, which stops when the gradient norm relative to ``max(1, |q|)`` is below
the setup's ``accuracy``. At the setup's 1e-5 that leaves the walking trial's coordinates up
to 0.14 degrees (and the marker RMS up to 0.024 mm) from the minimum, more than the 1e-3
degrees and 0.01 mm compared here, so the module's OpenSim run tightens it to
:data:`OPENSIM_ACCURACY` (1e-11: within 2.5e-4 degrees of the minimum; 1e-9 stops at 7e-4).
Ours stops when its largest Newton step is below the setup's accuracy, 1e-5 rad or m,
which leaves it within about 1e-10 of the minimum (the steps converge quadratically).
OpenSim's MarkerPlacer solves at the AssemblySolver's fixed default accuracy 1e-4, so its
static pose is compared through the goal (ours is at least as low) rather than coordinate
by coordinate.

The comparisons with OpenSim skip where it is not importable; everything else runs on the
shipped files (the generic gait2392 model with the scale marker set, the walking and static
trials).
"""

import contextlib
import dataclasses
import math
import os
import shutil

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.fitting.osim import model_with_fits, spline_joint_from_osim
from core.io.markers import read_marker_set, read_trc
from core.io.motion import read_motion
from core.io.osim import read_osim
from core.mocap.ik import (IKCoordinateTask, IKMarkerTask, IKTaskSet, MarkerKinematics,
                           parse_ik_setup, parse_task_set, place_markers, read_ik_setup,
                           run_ik, solve_ik)

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "osim")
PIPELINE = os.path.join(DATA, "gait2392_pipeline")
GAIT = os.path.join(DATA, "gait2392_thelen2003muscle.osim")
#: the accuracy OpenSim's IK runs at here (module docstring)
OPENSIM_ACCURACY = 1e-11


@pytest.fixture(scope="module")
def generic():
    """The generic gait2392 model with the scale marker set's 39 markers."""
    model = read_osim(GAIT)
    return model.with_markers(read_marker_set(os.path.join(PIPELINE,
                                                           "gait2392_Scale_MarkerSet.xml")))


@pytest.fixture(scope="module")
def walk():
    return read_trc(os.path.join(PIPELINE, "subject01_walk1.trc"))


@pytest.fixture(scope="module")
def setup():
    return read_ik_setup(os.path.join(PIPELINE, "subject01_Setup_IK.xml"))


@pytest.fixture(scope="module")
def opensim_run(tmp_path_factory):
    """OpenSim's Scale then IK tools on the pipeline in a fresh folder (IK at
    :data:`OPENSIM_ACCURACY`); returns the folder."""
    osim = pytest.importorskip("opensim")
    folder = tmp_path_factory.mktemp("opensim_pipeline")
    for name in os.listdir(PIPELINE):
        shutil.copy(os.path.join(PIPELINE, name), folder / name)
    shutil.copy(GAIT, folder / "gait2392_simbody.osim")
    shutil.copytree(os.path.join(DATA, "Geometry"), folder / "Geometry")
    with contextlib.chdir(folder):
        osim.ScaleTool("subject01_Setup_Scale.xml").run()
        tool = osim.InverseKinematicsTool("subject01_Setup_IK.xml")
        tool.set_accuracy(OPENSIM_ACCURACY)
        tool.run()
    return folder


def _opensim_motion(path, names):
    """OpenSim's motion file as ``(time, values (N, len(names)))`` in names' order."""
    motion = read_motion(path)
    return motion.time, motion.values[:, [motion.names.index(n) for n in names]]


# ----------------------------------------------------------------------------- setup files
def test_the_ik_setup_reads_as_written(setup):
    assert setup.name == "subject01" and setup.model_file == "subject01_simbody.osim"
    assert setup.time_range == (0.5, 2.5) and setup.accuracy == 1e-5
    assert setup.constraint_weight == 20.0 and setup.report_errors
    assert setup.output_motion_file == "subject01_walk1_ik.mot" and setup.coordinate_file == ""
    assert setup.path(setup.marker_file) == os.path.normpath(os.path.join(PIPELINE,
                                                                          "subject01_walk1.trc"))
    weights = setup.tasks.marker_weights()
    assert len(weights) == 31 and weights["R.ASIS"] == 10.0 and weights["Top.Head"] == 0.1
    assert [(t.name, t.weight, t.value_type) for t in setup.tasks.coordinates] == [
        (n, 1000.0, "default_value")
        for n in ("subtalar_angle_r", "mtp_angle_r", "subtalar_angle_l", "mtp_angle_l")]


@pytest.mark.parametrize("task, words", [
    ("<IKMarkerTask name='A'><weight>heavy</weight></IKMarkerTask>", "'A'.*weight"),
    ("<IKMarkerTask name='A'><weight>-1</weight></IKMarkerTask>", "'A'.*>= 0"),
    ("<IKMarkerTask name='A'><apply>yes</apply></IKMarkerTask>", "'A'.*true or false"),
    ("<IKCoordinateTask name='c'><value_type>guess</value_type></IKCoordinateTask>",
     "'c'.*value_type"),
    ("<IKMarkerTask><weight>1</weight></IKMarkerTask>", "no name"),
])
def test_bad_tasks_name_the_task(task, words):
    text = ("<OpenSimDocument><InverseKinematicsTool name='t'><IKTaskSet><objects>"
            f"{task}</objects></IKTaskSet></InverseKinematicsTool></OpenSimDocument>")
    with pytest.raises(InvalidInputError, match=words):
        parse_ik_setup(text, "s.xml")


def test_a_setup_without_the_tool_is_refused():
    with pytest.raises(InvalidInputError, match="not an inverse kinematics setup"):
        parse_ik_setup("<OpenSimDocument><ScaleTool/></OpenSimDocument>", "s.xml")
    with pytest.raises(InvalidInputError, match="not a complete XML"):
        parse_ik_setup("<OpenSimDocument><InverseKinematicsTool>", "s.xml")


# ----------------------------------------------------------------------------- Jacobian
def _poses(kin, rng):
    """Default, tiny, random and near-range-end poses of the free coordinates."""
    model = kin.model
    default = model.default_q()[kin.free]
    lo = np.array([model.coordinates[model.coordinate_names[i]].range[0] for i in kin.free])
    hi = np.array([model.coordinates[model.coordinate_names[i]].range[1] for i in kin.free])
    random = lo + rng.random(len(lo)) * (hi - lo)
    return {"default": default, "tiny": default + 1e-7 * rng.normal(size=len(default)),
            "random": random, "range end": hi - 1e-6 * (hi - lo)}


@pytest.mark.parametrize("spline_knees", [False, True])
def test_marker_jacobian_matches_central_differences(generic, spline_knees):
    """Central differences with h = 1e-6 carry h^2/6 |x'''| (below 1e-12 m for lever arms
    of a metre) and eps |x| / h of rounding (about 2e-10 m): 1e-8 m per unit of q is far
    above both and far below any wrong column (a lever arm of centimetres). The curvature
    (weights c of order 1) is checked the same way against differences of the Jacobian, to
    1e-7 of its largest entry (the differences' rounding, 1e-10, over entries of order 1)."""
    model = generic
    if spline_knees:
        model = model_with_fits(model, {n: spline_joint_from_osim(model, n).document
                                        for n in ("knee_r", "knee_l")})
    kin = MarkerKinematics(model, list(model.markers))
    rng = np.random.default_rng(3)
    h = 1e-6
    for what, q in _poses(kin, rng).items():
        x, J = kin.evaluate(q)
        np.testing.assert_allclose(x, model.marker_positions(_full(model, kin, q), kin.names),
                                   rtol=0, atol=1e-12)
        fd = np.empty_like(J)
        for k in range(len(q)):
            step = np.zeros(len(q))
            step[k] = h
            fd[:, :, k] = (kin.positions(q + step) - kin.positions(q - step)) / (2 * h)
        err = np.abs(J - fd).max()
        assert err < 1e-8, f"{what}: the Jacobian is {err:.3g} from central differences"
        # the curvature sum_m c_m . d2x_m/dq2 against central differences of the Jacobian
        c = rng.normal(size=x.shape)
        C = kin.curvature(x, J, c, kin.joint_derivatives(q))
        fd = np.empty_like(C)
        for a in range(len(q)):
            step = np.zeros(len(q))
            step[a] = h
            dJ = (kin.evaluate(q + step)[1] - kin.evaluate(q - step)[1]) / (2 * h)
            fd[a] = np.einsum("mi,mik->k", c, dJ)
        err = np.abs(C - fd).max()
        assert err < 1e-7 * np.abs(fd).max(), f"{what}: the curvature is {err:.3g} off"
        np.testing.assert_allclose(C, C.T, rtol=0, atol=1e-12 * np.abs(C).max())


def _full(model, kin, q_free):
    q = model.default_q()
    q[kin.free] = q_free
    return q


# ----------------------------------------------------------------------------- the solver
def test_ik_matches_opensim_at_every_frame(opensim_run, setup):
    """Our IK on OpenSim's scaled model, solved to the setup's accuracy, against OpenSim's
    (module docstring): every coordinate within 1e-3 degrees (translations within 1e-6 m)
    at every frame, and the marker errors OpenSim reports within 0.01 mm."""
    folder = str(opensim_run)
    model = read_osim(os.path.join(folder, "subject01_simbody.osim"))
    ours = solve_ik(model, read_trc(os.path.join(folder, "subject01_walk1.trc")), setup.tasks,
                    time_range=setup.time_range, accuracy=setup.accuracy)
    assert ours.status == "solved" and not ours.warnings
    time, ref = _opensim_motion(os.path.join(folder, "subject01_walk1_ik.mot"), ours.names)
    np.testing.assert_allclose(ours.time, time, rtol=0, atol=1e-12)
    diff = np.abs(ours.degrees() - ref)
    rot = ours.rotational
    assert diff[:, rot].max() < 1e-3, f"{diff[:, rot].max():.3g} degrees from OpenSim"
    assert diff[:, ~rot].max() < 1e-6, f"{diff[:, ~rot].max():.3g} m from OpenSim"
    errors = read_motion(os.path.join(folder, "subject01_ik_marker_errors.sto"))
    np.testing.assert_allclose(errors.time, ours.time, rtol=0, atol=1e-12)
    rms = errors.values[:, errors.names.index("marker_error_RMS")]
    largest = errors.values[:, errors.names.index("marker_error_max")]
    assert np.abs(ours.errors[:, 1] - rms).max() < 1e-5
    assert np.abs(ours.errors[:, 2] - largest).max() < 1e-5


def test_run_ik_writes_what_opensim_writes(opensim_run, tmp_path):
    """The tool run from its setup file: the same coordinates (columns, degrees) and the
    same marker error file as OpenSim's, beside the setup."""
    folder = str(opensim_run)
    for name in ("subject01_Setup_IK.xml", "subject01_simbody.osim", "subject01_walk1.trc"):
        shutil.copy(os.path.join(folder, name), tmp_path / name)
    result = run_ik(read_ik_setup(tmp_path / "subject01_Setup_IK.xml"))
    ours = read_motion(tmp_path / "subject01_walk1_ik.mot")
    theirs = read_motion(os.path.join(folder, "subject01_walk1_ik.mot"))
    assert ours.in_degrees and theirs.in_degrees and set(ours.names) == set(theirs.names)
    assert ours.name == theirs.name == "Coordinates"
    np.testing.assert_array_equal(ours.values, result.degrees())
    errors = read_motion(tmp_path / "subject01_ik_marker_errors.sto")
    reference = read_motion(os.path.join(folder, "subject01_ik_marker_errors.sto"))
    assert errors.names == reference.names and errors.name == reference.name
    assert not errors.in_degrees


def test_spline_knees_track_the_trial_as_the_exact_knees(generic, walk, setup):
    """The generic model with both knees replaced by fitted spline curve joints (0.1 mm from
    the exact knee over its range) tracks the walking trial's first second as the exact
    model does: marker RMS within the fit's 0.1 mm, coordinates within 0.1 degrees (the
    unscaled model fits the subject to some 45 mm, which leaves the knee's neighbours room
    to trade; measured: 0.04 degrees, 0.01 mm)."""
    fits = {n: spline_joint_from_osim(generic, n) for n in ("knee_r", "knee_l")}
    assert max(f.max_position_mm for f in fits.values()) < 0.2
    documents = {n: f.document for n, f in fits.items()}
    exact = solve_ik(generic, walk, setup.tasks, time_range=(0.5, 1.5))
    fitted = solve_ik(generic, walk, setup.tasks, time_range=(0.5, 1.5), fits=documents)
    again = solve_ik(model_with_fits(generic, documents), walk, setup.tasks,
                     time_range=(0.5, 1.5))
    np.testing.assert_array_equal(fitted.q, again.q)
    assert fitted.names == exact.names
    diff = np.abs(fitted.degrees() - exact.degrees())
    assert diff[:, exact.rotational].max() < 0.1
    assert diff[:, ~exact.rotational].max() < 1e-4
    assert np.abs(fitted.errors[:, 1] - exact.errors[:, 1]).max() < 1e-4


def test_each_frame_is_the_minimum(generic, walk, setup):
    """At a solved frame the goal's gradient vanishes (relative to its Gauss-Newton scale)
    and no coordinate step lowers it."""
    res = solve_ik(generic, walk, setup.tasks, time_range=(1.0, 1.0), accuracy=1e-10)
    kin = MarkerKinematics(generic, res.markers)
    row = walk.positions[res.frames[0], [walk.names.index(n) for n in res.markers]]
    weights = setup.tasks.marker_weights()
    w = np.array([weights[n] for n in res.markers])
    tasks = setup.tasks.applied_coordinates()
    index = [generic.coordinate_names.index(t.name) for t in tasks]

    def goal(q):
        x = kin.positions(q[kin.free])
        value = float(w @ np.sum((x - row) ** 2, axis=1)) / (2 * w.sum())
        return value + sum(t.weight * (q[i] - generic.coordinates[t.name].default) ** 2 / 2
                           for t, i in zip(tasks, index))

    q = res.q[0]
    best = goal(q)
    for k in range(generic.nq):
        for d in (1e-4, -1e-4):
            step = q.copy()
            step[k] += d
            assert goal(step) >= best


def test_locked_coordinates_are_held_and_clamped_ones_stay_in_range(generic, walk, setup):
    coords = dict(generic.coordinates)
    coords["lumbar_bending"] = dataclasses.replace(coords["lumbar_bending"], locked=True,
                                                   default=0.05)
    coords["knee_angle_r"] = dataclasses.replace(coords["knee_angle_r"], clamped=True,
                                                 range=(-0.3, 0.0))
    model = dataclasses.replace(generic, coordinates=coords)
    res = solve_ik(model, walk, setup.tasks, time_range=(0.5, 1.5))
    q = dict(zip(res.names, res.q.T))
    assert np.all(q["lumbar_bending"] == 0.05)
    free = solve_ik(generic, walk, setup.tasks, time_range=(0.5, 1.5))
    knee = dict(zip(free.names, free.q.T))["knee_angle_r"]
    assert knee.min() < -0.3                       # the free knee bends beyond the clamp
    assert q["knee_angle_r"].min() == -0.3 and q["knee_angle_r"].max() <= 0.0


def test_a_locked_coordinate_drops_its_task(generic, walk, setup):
    coords = dict(generic.coordinates)
    coords["mtp_angle_r"] = dataclasses.replace(coords["mtp_angle_r"], locked=True)
    model = dataclasses.replace(generic, coordinates=coords)
    res = solve_ik(model, walk, setup.tasks, time_range=(0.5, 0.6))
    assert any("mtp_angle_r" in w and "locked" in w for w in res.warnings)


# ----------------------------------------------------------------------------- bad input
def test_a_task_marker_missing_from_the_trial_is_skipped_with_a_warning(generic, walk, setup):
    tasks = dataclasses.replace(setup.tasks, markers=setup.tasks.markers
                                + (IKMarkerTask("R.Knee.Lat", 1.0),))
    res = solve_ik(generic, walk, tasks, time_range=(0.5, 0.6))
    assert any("R.Knee.Lat" in w and "not in the trial" in w for w in res.warnings)
    assert "R.Knee.Lat" not in res.markers and len(res.markers) == 31


def test_time_ranges_are_clipped_to_the_trial_or_refused(generic, walk, setup):
    res = solve_ik(generic, walk, setup.tasks, time_range=(2.4, 9.0))
    assert res.time[-1] == walk.time[-1] and any("clipped" in w for w in res.warnings)
    with pytest.raises(InvalidInputError, match="misses the trial.*0..2.5"):
        solve_ik(generic, walk, setup.tasks, time_range=(3.0, 4.0))
    with pytest.raises(InvalidInputError, match="ends before it starts"):
        solve_ik(generic, walk, setup.tasks, time_range=(1.0, 0.5))


def test_nan_gaps_are_skipped_at_their_frames(generic, walk, setup):
    """A marker missing at some frames is left out of those frames' goals (and counted as 0
    in the reported errors, as OpenSim counts it): there the pose is the one solved without
    the marker at all."""
    positions = walk.positions.copy()
    gap = walk.names.index("R.Heel")
    positions[40:46, gap] = np.nan
    holed = dataclasses.replace(walk, positions=positions)
    res = solve_ik(generic, holed, setup.tasks, time_range=(0.6, 0.8), accuracy=1e-10)
    assert any("R.Heel (6 of 13 frames)" in w for w in res.warnings)
    without = dataclasses.replace(setup.tasks, markers=tuple(
        t for t in setup.tasks.markers if t.name != "R.Heel"))
    ref = solve_ik(generic, walk, without, time_range=(0.6, 0.8), accuracy=1e-10)
    inside = (res.frames >= 40) & (res.frames < 46)
    assert inside.sum() == 6
    np.testing.assert_allclose(res.q[inside], ref.q[inside], rtol=0, atol=1e-8)
    assert not np.allclose(res.q[~inside], ref.q[~inside], atol=1e-6)
    # errors: the gap marker counts 0 in the total and stays in the RMS's count
    x = generic.marker_positions(res.q[inside][0], res.markers)
    obs = holed.positions[40, [walk.names.index(n) for n in res.markers]]
    d2 = np.nan_to_num(np.sum((x - obs) ** 2, axis=1))
    assert math.isclose(res.errors[inside][0, 1], math.sqrt(d2.sum() / 31), rel_tol=1e-12)


def test_unknown_coordinates_and_markers_are_refused(generic, walk, setup):
    tasks = dataclasses.replace(setup.tasks, coordinates=(IKCoordinateTask("elbow", 1.0),))
    with pytest.raises(InvalidInputError, match="elbow"):
        solve_ik(generic, walk, tasks)
    tasks = IKTaskSet(markers=(IKMarkerTask("Nowhere", 1.0),))
    with pytest.raises(InvalidInputError, match="no marker of the trial"):
        solve_ik(generic, walk, tasks)
    from_file = dataclasses.replace(setup.tasks, coordinates=(
        IKCoordinateTask("knee_angle_r", 1.0, value_type="from_file"),))
    with pytest.raises(InvalidInputError, match="coordinate file"):
        solve_ik(generic, walk, from_file)


def test_nothing_is_written_on_an_error_or_a_cancel(generic, walk, setup, tmp_path):
    shutil.copy(os.path.join(PIPELINE, "subject01_walk1.trc"), tmp_path / "subject01_walk1.trc")
    text = open(os.path.join(PIPELINE, "subject01_Setup_IK.xml"), encoding="utf-8").read()
    missed = text.replace("<time_range> 0.5 2.5</time_range>", "<time_range> 5 6</time_range>")
    assert missed != text
    (tmp_path / "setup.xml").write_text(missed, encoding="utf-8")
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(InvalidInputError, match="misses the trial"):
        run_ik(read_ik_setup(tmp_path / "setup.xml"), model=generic)
    assert sorted(os.listdir(tmp_path)) == before
    calls = []
    res = run_ik(parse_ik_setup(text, str(tmp_path / "setup.xml")), model=generic,
                 progress=lambda f: calls.append(f) or len(calls) < 3)
    assert res.status == "cancelled" and len(res.time) == 0 and len(calls) == 3
    assert sorted(os.listdir(tmp_path)) == before


def test_the_walking_trial_runs_whole_and_writes_both_files(generic, tmp_path):
    shutil.copy(os.path.join(PIPELINE, "subject01_walk1.trc"), tmp_path / "subject01_walk1.trc")
    text = open(os.path.join(PIPELINE, "subject01_Setup_IK.xml"), encoding="utf-8").read()
    setup = parse_ik_setup(text, str(tmp_path / "setup.xml"))
    fractions = []
    res = run_ik(setup, model=generic, progress=lambda f: fractions.append(f) or True)
    assert res.status == "solved" and len(res.time) == 121 and fractions[-1] == 1.0
    motion = read_motion(tmp_path / "subject01_walk1_ik.mot")
    np.testing.assert_array_equal(motion.values, res.degrees())
    errors = read_motion(tmp_path / "subject01_ik_marker_errors.sto")
    np.testing.assert_array_equal(errors.values, res.errors)
    assert np.all(res.errors[:, 1] < 0.05)         # centimetres on the unscaled model


# ----------------------------------------------------------------------------- marker placer
@pytest.fixture(scope="module")
def scale_tasks():
    import xml.etree.ElementTree as ET
    path = os.path.join(PIPELINE, "subject01_Setup_Scale.xml")
    return parse_task_set(ET.parse(path).getroot().find(".//MarkerPlacer/IKTaskSet"), path)


@pytest.fixture(scope="module")
def static():
    return read_trc(os.path.join(PIPELINE, "subject01_static.trc"))


def _average(trial, start, end):
    """MarkerData::averageFrames by hand: from the last frame at or before start to the
    first at or after end, gaps left out."""
    first = np.nonzero(trial.time <= start)[0][-1]
    last = first + np.nonzero(trial.time[first:] >= end)[0][0]
    return np.nanmean(trial.positions[first:last + 1], axis=0)


def test_placed_markers_sit_on_the_averaged_trial(generic, static, scale_tasks):
    fixed = dataclasses.replace(generic.markers["Sternum"], fixed=True)
    model = generic.with_markers({"Sternum": fixed})
    before = {n: m.location.copy() for n, m in model.markers.items()}
    placed = place_markers(model, static, scale_tasks, time_range=(1.0, 2.0))
    assert placed.time_range == (1.0, 2.0) and "Sternum" not in placed.moved
    assert len(placed.moved) == 38 and set(placed.model.markers) == set(model.markers)
    average = _average(static, 1.0, 2.0)
    x = placed.model.marker_positions(placed.q, placed.moved)
    np.testing.assert_allclose(x, average[[static.names.index(n) for n in placed.moved]],
                               rtol=0, atol=1e-12)
    np.testing.assert_array_equal(placed.model.markers["Sternum"].location, fixed.location)
    for n, m in model.markers.items():                                  # the input is kept
        np.testing.assert_array_equal(m.location, before[n])
    assert placed.model.default_q().tolist() == model.default_q().tolist()


def test_markers_the_static_trial_lacks_are_removed(generic, static, scale_tasks):
    extra = dataclasses.replace(generic.markers["Sternum"], name="Extra")
    placed = place_markers(generic.with_markers({"Extra": extra}), static, scale_tasks,
                           time_range=(0.0, 99.0))
    assert "Extra" not in placed.model.markers
    assert any("Extra" in w and "removed" in w for w in placed.warnings)
    assert placed.time_range == (static.time[0], static.time[-1])
    with pytest.raises(InvalidInputError, match="no span"):
        place_markers(generic, static, scale_tasks, time_range=(7.0, 8.0))


def test_marker_movement_beyond_the_limit_is_reported(generic, static, scale_tasks):
    placed = place_markers(generic, static, scale_tasks, time_range=(1.0, 2.0),
                           max_marker_movement=1e-6)
    block = static.positions[(static.time >= 1.0) & (static.time <= 2.0)] * 1e3   # mm
    spread = block.max(axis=0) - block.min(axis=0)
    moving = {n for n, s in zip(static.names, spread) if s.max() > 1e-6}
    assert 40 < len(moving) < len(static.names)        # three markers are held constant
    warned = {w.split()[1] for w in placed.warnings if "max_marker_movement" in w}
    assert warned == moving
    calm = place_markers(generic, static, scale_tasks, time_range=(1.0, 2.0),
                         max_marker_movement=1e6)
    assert not any("max_marker_movement" in w for w in calm.warnings)


def test_marker_placement_matches_opensim(opensim_run, static, scale_tasks):
    """OpenSim's placed markers at its own static pose sit on our average of the static
    trial (its pose is printed to 8 decimals: 1e-8 rad on lever arms below 2 m); its static
    pose, solved at the AssemblySolver's default accuracy 1e-4, is no lower in the goal than
    ours."""
    folder = str(opensim_run)
    theirs = read_osim(os.path.join(folder, "subject01_simbody.osim"))
    motion = read_motion(os.path.join(folder, "subject01_static_output.mot"))
    values = {n.split("/")[-2]: v for n, v in zip(motion.names, motion.values[0])
              if n.endswith("/value")}
    q_theirs = theirs.q_from(values)
    names = list(theirs.markers)
    average = _average(static, 1.0, 2.0)[[static.names.index(n) for n in names]]
    np.testing.assert_allclose(theirs.marker_positions(q_theirs, names), average, rtol=0,
                               atol=5e-8)
    scaled = read_osim(os.path.join(folder, "subject01_scaledOnly.osim"))
    ours = place_markers(scaled, static, scale_tasks, time_range=(1.0, 2.0))
    assert set(ours.model.markers) == set(theirs.markers)
    kin = MarkerKinematics(scaled, ours.markers)
    inside = (static.time >= 1.0) & (static.time <= 2.0)
    row = static.positions[inside].mean(axis=0)[[static.names.index(n) for n in ours.markers]]
    weights = scale_tasks.marker_weights()
    w = np.array([weights[n] for n in ours.markers])

    def goal(q):
        x = kin.positions(q[kin.free])
        value = float(w @ np.sum((x - row) ** 2, axis=1)) / (2 * w.sum())
        for t in scale_tasks.applied_coordinates():
            target = scaled.coordinates[t.name].default if t.value_type == "default_value" \
                else t.value
            value += t.weight * (q[scaled.coordinate_names.index(t.name)] - target) ** 2 / 2
        return value

    assert goal(ours.q) <= goal(q_theirs)


def test_from_file_tasks_follow_the_coordinate_file(generic, walk, setup, tmp_path):
    """A from_file task pulls its coordinate to the coordinate file's value at each frame:
    the file in degrees (as OpenSim writes motions), rows every 0.1 s, read through the
    setup's coordinate_file; a line of values is interpolated exactly."""
    from core.io.motion import write_motion
    times = np.linspace(0.4, 1.2, 9)
    write_motion(tmp_path / "coordinates.mot", ("knee_angle_r", "pelvis_tx"), times,
                 np.column_stack([-30.0 + 10.0 * times, 0 * times]), in_degrees=True)
    shutil.copy(os.path.join(PIPELINE, "subject01_walk1.trc"), tmp_path / "subject01_walk1.trc")
    text = open(os.path.join(PIPELINE, "subject01_Setup_IK.xml"), encoding="utf-8").read()
    task = ("<IKCoordinateTask name='knee_angle_r'><weight>1000000</weight>"
            "<value_type>from_file</value_type></IKCoordinateTask></objects>")
    text = text.replace("</objects>", task).replace(
        "<coordinate_file></coordinate_file>", "<coordinate_file>coordinates.mot"
        "</coordinate_file>").replace("<time_range> 0.5 2.5</time_range>",
                                      "<time_range> 0.5 1.0</time_range>")
    res = run_ik(parse_ik_setup(text, str(tmp_path / "setup.xml")), model=generic)
    knee = res.degrees()[:, res.names.index("knee_angle_r")]
    assert np.abs(knee - (-30.0 + 10.0 * res.time)).max() < 1e-3
    free = solve_ik(generic, walk, setup.tasks, time_range=(0.5, 1.0))
    assert np.abs(free.degrees()[:, res.names.index("knee_angle_r")] - knee).max() > 5.0
    short = read_motion(tmp_path / "coordinates.mot")
    short = dataclasses.replace(short, time=short.time[:5], values=short.values[:5])
    tasks = dataclasses.replace(setup.tasks, coordinates=(
        IKCoordinateTask("knee_angle_r", 1.0, value_type="from_file"),))
    with pytest.raises(InvalidInputError, match="at least 6 samples"):
        solve_ik(generic, walk, tasks, coordinate_values=short)


def test_from_file_tasks_match_opensim(opensim_run, tmp_path):
    """A from_file task pulling the knee 10 degrees beyond OpenSim's own IK result, the file
    (degrees) holding every fifth frame's value so that the values between come from the
    spline: OpenSim splines the file (GCVSplineSet of degree 5, zero error variance) as we
    do, so both solve the same problem (OpenSim at :data:`OPENSIM_ACCURACY`)."""
    from core.io.motion import write_motion
    osim = pytest.importorskip("opensim")
    folder = str(opensim_run)
    for name in ("subject01_Setup_IK.xml", "subject01_simbody.osim", "subject01_walk1.trc"):
        shutil.copy(os.path.join(folder, name), tmp_path / name)
    solved = read_motion(os.path.join(folder, "subject01_walk1_ik.mot"))
    knee = solved.values[::5, solved.names.index("knee_angle_r")] - 10.0
    write_motion(tmp_path / "knee.mot", ("knee_angle_r",), solved.time[::5], knee[:, None],
                 in_degrees=True)
    text = open(tmp_path / "subject01_Setup_IK.xml", encoding="utf-8").read()
    task = ("<IKCoordinateTask name='knee_angle_r'><weight>10</weight>"
            "<value_type>from_file</value_type></IKCoordinateTask></objects>")
    text = text.replace("</objects>", task).replace(
        "<coordinate_file></coordinate_file>",
        "<coordinate_file>knee.mot</coordinate_file>").replace(
        "<output_motion_file>subject01_walk1_ik.mot</output_motion_file>",
        "<output_motion_file>from_file.mot</output_motion_file>").replace(
        "<time_range> 0.5 2.5</time_range>", "<time_range> 0.6 1.2</time_range>")
    (tmp_path / "setup.xml").write_text(text, encoding="utf-8")
    with contextlib.chdir(tmp_path):
        tool = osim.InverseKinematicsTool("setup.xml")
        tool.set_accuracy(OPENSIM_ACCURACY)
        tool.run()
    ours = solve_ik(read_osim(tmp_path / "subject01_simbody.osim"),
                    read_trc(tmp_path / "subject01_walk1.trc"),
                    read_ik_setup(tmp_path / "setup.xml").tasks, time_range=(0.6, 1.2),
                    coordinate_values=read_motion(tmp_path / "knee.mot"))
    time, ref = _opensim_motion(tmp_path / "from_file.mot", ours.names)
    np.testing.assert_allclose(ours.time, time, rtol=0, atol=1e-12)
    pulled = ours.degrees()[:, ours.names.index("knee_angle_r")]
    free = _opensim_motion(os.path.join(folder, "subject01_walk1_ik.mot"), ["knee_angle_r"])
    inside = (free[0] >= 0.6 - 1e-9) & (free[0] <= 1.2 + 1e-9)
    assert np.abs(pulled - free[1][inside, 0]).min() > 1.0    # the task moves the knee
    diff = np.abs(ours.degrees() - ref)
    assert diff[:, ours.rotational].max() < 1e-3
    assert diff[:, ~ours.rotational].max() < 1e-6


def test_a_frame_without_markers_keeps_the_pose_before(generic, walk):
    positions = walk.positions.copy()
    positions[40] = np.nan
    holed = dataclasses.replace(walk, positions=positions)
    tasks = IKTaskSet(markers=tuple(IKMarkerTask(n, 1.0) for n in walk.names))
    res = solve_ik(generic, holed, tasks, time_range=(0.6, 0.7))
    k = int(np.nonzero(res.frames == 40)[0][0])
    assert any("no tracked marker is seen at 1 frames (t = 0.667)" in w for w in res.warnings)
    np.testing.assert_array_equal(res.q[k], res.q[k - 1])
    assert res.errors[k].tolist() == [0.0, 0.0, 0.0]


def test_the_errors_go_to_the_results_directory_made_as_opensim_makes_it(generic, tmp_path):
    shutil.copy(os.path.join(PIPELINE, "subject01_walk1.trc"), tmp_path / "subject01_walk1.trc")
    text = open(os.path.join(PIPELINE, "subject01_Setup_IK.xml"), encoding="utf-8").read()
    text = text.replace("<results_directory>./</results_directory>",
                        "<results_directory>out/ik</results_directory>").replace(
        "<output_motion_file>subject01_walk1_ik.mot</output_motion_file>",
        "<output_motion_file />").replace("<time_range> 0.5 2.5</time_range>",
                                          "<time_range> 0.5 0.6</time_range>")
    run_ik(parse_ik_setup(text, str(tmp_path / "setup.xml")), model=generic)
    assert sorted(os.listdir(tmp_path)) == ["out", "subject01_walk1.trc"]
    assert os.listdir(tmp_path / "out" / "ik") == ["subject01_ik_marker_errors.sto"]
