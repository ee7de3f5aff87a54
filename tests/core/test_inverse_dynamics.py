"""core.mocap.inverse_dynamics: OpenSim's InverseDynamicsTool reproduced.

OpenSim 4.6 (Python 3.13 environment only) runs the gait2392 pipeline (scale, inverse
kinematics, inverse dynamics) in a temporary folder; our inverse dynamics of the same IK
motion and external loads must give its generalized forces within 1e-3 N m (N) at every
frame. The filter, padding and splines are checked against closed forms, scipy and (where
importable) OpenSim's own Storage and GCVSpline; the load transport against a hand
computation; the spline-knee model against the exact one.
"""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy.signal import butter

from core.errors import InvalidInputError
from core.io.external_loads import read_external_loads
from core.io.motion import read_motion, write_motion
from core.io.osim import read_osim
from core.mocap.inverse_dynamics import (
    InverseDynamicsSetup, body_wrench, butterworth3, filter_coordinates, inverse_dynamics,
    lowpass_iir, natural_spline, pad, read_inverse_dynamics_setup, run_inverse_dynamics)

OSIM = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "osim"
PIPELINE = OSIM / "gait2392_pipeline"
needs_data = pytest.mark.skipif(not PIPELINE.is_dir(),
                                reason="shared/data is not beside this checkout")
#: the agreement asked of our generalized forces with InverseDynamicsTool's, N m or N (the
#: file OpenSim writes rounds to 1e-8)
AGREEMENT = 1e-3


# ----------------------------------------------------------------------------- OpenSim run
@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """A folder where OpenSim 4.6 has run the gait2392 pipeline's Scale, IK and ID tools."""
    osim = pytest.importorskip("opensim")
    if not PIPELINE.is_dir():
        pytest.skip("shared/data is not beside this checkout")
    osim.Logger.removeFileSink()
    folder = tmp_path_factory.mktemp("gait2392_pipeline")
    for item in PIPELINE.iterdir():
        shutil.copy(item, folder / item.name)
    shutil.copy(OSIM / "gait2392_thelen2003muscle.osim", folder / "gait2392_simbody.osim")
    shutil.copytree(OSIM / "Geometry", folder / "Geometry")
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        assert osim.ScaleTool("subject01_Setup_Scale.xml").run()
        assert osim.InverseKinematicsTool("subject01_Setup_IK.xml").run()
        assert osim.InverseDynamicsTool("subject01_Setup_InverseDynamics.xml").run()
    finally:
        os.chdir(cwd)
    return folder


def test_generalized_forces_match_opensims_inverse_dynamics_tool(pipeline, tmp_path):
    setup = read_inverse_dynamics_setup(pipeline / "subject01_Setup_InverseDynamics.xml")
    result = run_inverse_dynamics(setup, output=tmp_path / "ours.sto")
    reference = read_motion(Path(setup.output))
    assert result.status == "done" and result.warnings == ()
    assert result.names == reference.names            # OpenSim's labels, in its order
    assert np.allclose(result.time, reference.time, rtol=0, atol=1e-8)   # 8 decimals written
    error = np.abs(result.forces - reference.values)
    assert error.max() <= AGREEMENT, (
        f"largest difference {error.max():.3g} in {result.names[error.max(0).argmax()]}")
    written = read_motion(tmp_path / "ours.sto")
    assert written.names == result.names and np.array_equal(written.values, result.forces)
    assert written.name == "Inverse Dynamics Generalized Forces" and not written.in_degrees


def test_locked_coordinates_report_the_force_the_motion_needs_as_opensim_does(pipeline):
    """OpenSim's solver ignores constraints: a locked coordinate moves as the motion file
    says and its generalized force is reported. Two coordinates of the scaled model locked,
    one that the IK motion moves (knee_angle_l)."""
    import xml.etree.ElementTree as ET

    import opensim

    tree = ET.parse(pipeline / "subject01_simbody.osim")
    for c in tree.iter("Coordinate"):
        if c.get("name") in ("knee_angle_l", "mtp_angle_r"):
            c.find("locked").text = "true"
    tree.write(pipeline / "locked.osim")
    text = (pipeline / "subject01_Setup_InverseDynamics.xml").read_text()
    text = text.replace("subject01_simbody.osim", "locked.osim").replace(
        "InverseDynamicsOutput.sto", "locked.sto")
    (pipeline / "locked_setup.xml").write_text(text)
    cwd = os.getcwd()
    os.chdir(pipeline)
    try:
        assert opensim.InverseDynamicsTool("locked_setup.xml").run()
    finally:
        os.chdir(cwd)
    setup = read_inverse_dynamics_setup(pipeline / "locked_setup.xml")
    assert read_osim(setup.model_file).coordinates["knee_angle_l"].locked
    result = run_inverse_dynamics(setup, output=pipeline / "ours_locked.sto")
    reference = read_motion(Path(setup.output))
    assert result.names == reference.names
    assert np.abs(result.forces - reference.values).max() <= AGREEMENT
    assert np.abs(result.column("knee_angle_l")).max() > 1.0       # not held still


def test_gcvspline_with_zero_error_variance_is_the_natural_interpolating_spline():
    osim = pytest.importorskip("opensim")
    rng = np.random.default_rng(3)
    x = np.cumsum(rng.uniform(0.005, 0.03, 60))
    y = np.sin(7 * x) + 0.05 * rng.standard_normal(60)
    xs = np.linspace(x[0], x[-1], 157)
    for degree in (5, 3):
        theirs = osim.GCVSpline()
        theirs.setDegree(degree)
        for a, b in zip(x, y):
            theirs.addPoint(float(a), float(b))
        ours = natural_spline(x, y, degree)
        for order in range(3):
            components = osim.StdVectorInt([0] * order)
            ref = np.array([theirs.calcValue(osim.Vector(1, float(t))) if order == 0 else
                            theirs.calcDerivative(components, osim.Vector(1, float(t)))
                            for t in xs])
            # GCVSPL stops its search at a relative smoothing of 1e-15; through the spline's
            # conditioning (steps 5..30 ms, derivatives up to 1/h^2) that stays below 1e-9
            scale = np.abs(ref).max()
            assert np.abs(ours(xs, order) - ref).max() <= 1e-9 * scale, (degree, order)


def test_padding_resampling_and_filter_match_opensims_storage(tmp_path):
    osim = pytest.importorskip("opensim")
    osim.Logger.removeFileSink()
    rng = np.random.default_rng(5)
    time = np.round(np.arange(40) / 60.0, 3)          # 3 decimals: not uniform, resampled
    values = np.column_stack([np.sin(5 * time), np.cos(3 * time) + 0.01 * rng.random(40)])
    write_motion(tmp_path / "s.mot", ["a", "b"], time, values)
    storage = osim.Storage(str(tmp_path / "s.mot"))
    storage.pad(storage.getSize() // 2)
    storage.lowpassIIR(6.0)
    theirs = np.array([[storage.getStateVector(i).getData().get(j) for j in range(2)]
                       for i in range(storage.getSize())])
    their_time = np.array([storage.getStateVector(i).getTime()
                           for i in range(storage.getSize())])
    t, ours, dt, used, warnings = filter_coordinates(time, values, 6.0)
    assert used == 6.0 and warnings == [] and dt == pytest.approx(0.016, abs=1e-15)
    assert np.array_equal(t, their_time)
    assert np.abs(ours - theirs).max() <= 1e-12


# ----------------------------------------------------------------------------- signals
def test_pad_reflects_and_negates_about_the_ends():
    t = np.array([0.0, 1.0, 3.0, 4.0])
    v = np.array([[1.0], [2.0], [5.0], [4.0]])
    tp, vp = pad(t, v, 2)
    assert np.array_equal(tp, [-3.0, -1.0, 0.0, 1.0, 3.0, 4.0, 5.0, 7.0])
    assert np.array_equal(vp[:, 0], [-3.0, 0.0, 1.0, 2.0, 5.0, 4.0, 3.0, 6.0])


def test_butterworth_coefficients_are_scipys_third_order_low_pass():
    for dt, fc in ((1 / 60, 6.0), (0.001, 15.0), (0.01, 20.0)):
        b, a, used = butterworth3(dt, fc)
        sb, sa = butter(3, 2 * fc * dt)
        assert used == fc
        assert np.allclose(b, sb, rtol=1e-12, atol=0) and np.allclose(a, sa, rtol=1e-12, atol=1e-15)
    _, _, used = butterworth3(0.01, 60.0)              # above Nyquist: 0.49 fs
    assert used == pytest.approx(49.0)


def _opensim_recursion(x, b, a):
    """Signal::LowpassIIR's loop written out: one pass over a 1-D signal."""
    y = np.array(x, dtype=float)
    for i in range(3, len(x)):
        y[i] = (b[0] * x[i] + b[1] * x[i - 1] + b[2] * x[i - 2] + b[3] * x[i - 3]
                - a[1] * y[i - 1] - a[2] * y[i - 2] - a[3] * y[i - 3])
    return y


def test_lowpass_is_the_forward_backward_recursion_started_from_the_samples():
    rng = np.random.default_rng(1)
    x = np.cumsum(rng.standard_normal((200, 3)), axis=0)
    dt, fc = 0.01, 6.0
    b, a, _ = butterworth3(dt, fc)
    expected = np.column_stack([_opensim_recursion(_opensim_recursion(x[:, j], b, a)[::-1],
                                                   b, a)[::-1] for j in range(3)])
    ours, used = lowpass_iir(x, dt, fc)
    assert used == fc
    assert np.abs(ours - expected).max() <= 1e-10 * np.abs(expected).max()
    constant, _ = lowpass_iir(np.full((50, 1), 2.5), dt, fc)    # unit gain at 0 Hz
    assert np.allclose(constant, 2.5, rtol=0, atol=1e-12)
    with pytest.raises(InvalidInputError, match="too few"):
        lowpass_iir(x[:3], dt, fc)


def test_a_cutoff_above_half_the_sampling_rate_is_lowered_with_a_warning():
    time = np.arange(30) / 60.0                         # uniform: filtered as it is
    values = np.sin(4 * time)[:, None]
    t, filtered, dt, used, warnings = filter_coordinates(time, values, 40.0)
    assert used == pytest.approx(0.49 * 60) and dt == pytest.approx(1 / 60)
    assert len(warnings) == 1 and "40 Hz is not below half the sampling rate 30 Hz" in warnings[0]
    assert len(t) == 30 + 2 * 15 and np.array_equal(t[15:45], time)
    with pytest.raises(InvalidInputError, match="times must increase"):
        filter_coordinates(np.r_[time[:5], time[4:]], np.zeros((31, 1)), 6.0)


def test_natural_quintic_reproduces_quadratics_and_has_natural_ends():
    x = np.sort(np.random.default_rng(2).uniform(0, 1, 12))
    y = 3 * x ** 2 - x + 2
    s = natural_spline(x, y, 5)
    xs = np.linspace(x[0], x[-1], 50)
    assert np.allclose(s(xs), 3 * xs ** 2 - xs + 2, atol=1e-12)
    assert np.allclose(s(xs, 2), 6.0, atol=1e-8)
    wiggly = natural_spline(x, np.sin(9 * x), 5)
    for end in (x[0], x[-1]):
        assert abs(wiggly(end, 3)) < 1e-6 and abs(wiggly(end, 4)) < 1e-4
    with pytest.raises(InvalidInputError, match="at least 6 samples"):
        natural_spline(x[:5], y[:5], 5)


# ----------------------------------------------------------------------------- loads
def test_body_wrench_moves_a_force_at_a_point_to_the_body_frame_by_hand():
    pose = np.eye(4)
    pose[:3, :3] = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]     # 90 degrees about z
    pose[:3, 3] = [1.0, 0.0, 0.0]
    w = body_wrench(pose, np.array([1.0, 2.0, 0.0]), np.array([0.0, 0.0, 5.0]),
                    np.array([1.0, 0.0, 0.0]))
    # moment about the body origin in ground: (1,0,0) + (0,2,0) x (0,0,5) = (11, 0, 0)
    assert np.allclose(w, [0.0, -11.0, 0.0, 0.0, 0.0, 5.0])


@needs_data
def test_the_spline_knee_model_gives_knee_moments_close_to_the_exact_models():
    from core.fitting.osim import spline_joint_from_osim

    model = read_osim(OSIM / "gait2392_thelen2003muscle.osim")
    motion = read_motion(OSIM / "subject01_walk1_ik.mot")
    loads = read_external_loads(PIPELINE / "subject01_walk1_grf.xml")
    fits = {j: spline_joint_from_osim(model, j).document for j in ("knee_r", "knee_l")}
    kwargs = dict(time_range=(0.4, 1.6), lowpass_cutoff=6.0, forces_to_exclude=("muscles",))
    exact = inverse_dynamics(model, motion, loads, **kwargs)
    spline = inverse_dynamics(model, motion, loads, fits=fits, **kwargs)
    assert spline.names == exact.names and np.array_equal(spline.time, exact.time)
    for knee in ("knee_angle_r", "knee_angle_l"):
        a, b = exact.column(knee), spline.column(knee)
        peak = np.abs(a).max()
        # the fitted knee is within 0.1 mm of the exact one, its slope within ~1 mm/rad:
        # the moments differ by a few percent of their peak, never by nothing
        assert 1e-6 < np.abs(a - b).max() < 0.05 * peak, (knee, np.abs(a - b).max(), peak)


# ----------------------------------------------------------------------------- runs
@needs_data
def test_the_setup_file_is_read_with_paths_from_its_folder():
    setup = read_inverse_dynamics_setup(PIPELINE / "subject01_Setup_InverseDynamics.xml")
    assert setup.name == "subject01_walk1" and setup.time_range == (0.4, 1.6)
    assert setup.forces_to_exclude == ("muscles",) and setup.lowpass_cutoff == 6.0
    assert setup.model_file == str(PIPELINE / "subject01_simbody.osim")
    assert setup.coordinates_file == str(PIPELINE / "subject01_walk1_ik.mot")
    assert setup.external_loads_file == str(PIPELINE / "subject01_walk1_grf.xml")
    assert setup.output == str(PIPELINE / "ResultsInverseDynamics" / "InverseDynamicsOutput.sto")


def _setup(tmp_path, **changes):
    """The pipeline's ID setup on the generic model and the shipped IK motion, written to
    ``tmp_path``."""
    fields = dict(name="walk", model_file=str(OSIM / "gait2392_thelen2003muscle.osim"),
                  coordinates_file=str(OSIM / "subject01_walk1_ik.mot"),
                  external_loads_file=str(PIPELINE / "subject01_walk1_grf.xml"),
                  time_range=(0.4, 1.6), forces_to_exclude=("muscles",), lowpass_cutoff=6.0,
                  results_directory=str(tmp_path), output=str(tmp_path / "id.sto"))
    fields.update(changes)
    return InverseDynamicsSetup(**fields)


@needs_data
def test_cancelling_writes_nothing_and_returns_no_rows(tmp_path):
    calls = []

    def progress(fraction):
        calls.append(fraction)
        return len(calls) < 10

    result = run_inverse_dynamics(_setup(tmp_path), progress=progress)
    assert result.status == "cancelled" and result.forces.shape == (0, 23)
    assert result.time.shape == (0,) and result.output == ""
    assert not (tmp_path / "id.sto").exists() and len(calls) == 10
    assert calls == sorted(calls) and 0 <= calls[0] < calls[-1] < 1
    done = run_inverse_dynamics(_setup(tmp_path))
    assert done.status == "done" and done.output == str(tmp_path / "id.sto")
    assert read_motion(tmp_path / "id.sto").names == done.names


@needs_data
def test_unfiltered_coordinates_are_splined_as_they_are(tmp_path):
    result = run_inverse_dynamics(_setup(tmp_path, lowpass_cutoff=-1.0, time_range=(0.6, 0.7)))
    motion = read_motion(OSIM / "subject01_walk1_ik.mot")
    inside = motion.time[(motion.time >= 0.6) & (motion.time <= 0.7 + 1e-12)]
    assert np.array_equal(result.time, inside) and result.cutoff == -1.0


@needs_data
def test_a_time_range_that_misses_the_trial_is_refused(tmp_path):
    with pytest.raises(InvalidInputError, match=r"time range 5\.\.6 s misses the motion's "
                                                 r"0\.5\.\.4 s"):
        run_inverse_dynamics(_setup(tmp_path, time_range=(5.0, 6.0)))
    with pytest.raises(InvalidInputError, match=r"external loads in .*subject01_walk1_grf.mot "
                                                 r"cover 0\.\.2\.5 s but inverse dynamics runs "
                                                 r"over 3\.\.4 s"):
        run_inverse_dynamics(_setup(tmp_path, time_range=(3.0, 4.0)))
    assert not (tmp_path / "id.sto").exists()


@needs_data
def test_a_motion_of_another_model_is_refused(tmp_path):
    write_motion(tmp_path / "other.mot", ["elbow", "wrist"], np.arange(10) * 0.01,
                 np.zeros((10, 2)))
    with pytest.raises(InvalidInputError, match="none of its columns"):
        run_inverse_dynamics(_setup(tmp_path, coordinates_file=str(tmp_path / "other.mot")))


@needs_data
def test_missing_coordinates_stay_at_their_defaults_with_a_warning(tmp_path):
    motion = read_motion(OSIM / "subject01_walk1_ik.mot")
    keep = [n for n in motion.names if n != "lumbar_bending"]
    write_motion(tmp_path / "less.mot", keep, motion.time,
                 motion.values[:, [motion.names.index(n) for n in keep]], in_degrees=True)
    result = run_inverse_dynamics(_setup(tmp_path, coordinates_file=str(tmp_path / "less.mot")))
    assert any("lumbar_bending" in w and "default" in w for w in result.warnings)


@needs_data
def test_forces_the_setup_leaves_in_are_named_in_a_warning(tmp_path):
    result = run_inverse_dynamics(_setup(tmp_path, forces_to_exclude=()))
    assert len(result.warnings) == 1 and "glut_med1_r" in result.warnings[0]
    assert "(92)" in result.warnings[0]


@needs_data
def test_too_few_frames_are_refused():
    from core.io.motion import Motion

    model = read_osim(OSIM / "double_pendulum.osim")
    name = model.coordinate_names[0]

    def frames(n):
        return Motion(names=(name,), time=np.arange(n) * 0.01, values=np.zeros((n, 1)))

    with pytest.raises(InvalidInputError, match="at least 6 samples"):
        inverse_dynamics(model, frames(5))
    assert np.all(np.isfinite(inverse_dynamics(model, frames(6)).forces))
