"""core.mocap.scale: OpenSim's ScaleTool (GenericModelMaker, ModelScaler, MarkerPlacer) on the
gait2392 example, against the model's own geometry and (where installed) OpenSim 4.6, which
runs the same setup in a temporary folder."""

import dataclasses
import math
import os
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.io.markers import MarkerTrial, read_marker_set, read_trc
from core.io.motion import read_motion
from core.io.osim import offset_pose, read_osim
from core.io.osim_export import write_osim
from core.lie import se3
from core.mocap.scale import (ManualScale, Measurement, parse_scale_setup, read_scale_setup,
                              scale_factors, scale_model, scale_set_document, scale_tool,
                              take_measurement, write_scale_set)
from core.muscles.paths import MovingPathPoint, path_kinematics, path_length

from test_muscle_paths import LENGTH_TOL, LENGTH_TOL_WRAP, _OpenSim, _random_poses

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "osim")
PIPELINE = os.path.join(DATA, "gait2392_pipeline")
GAIT = os.path.join(DATA, "gait2392_thelen2003muscle.osim")
SETUP = "subject01_Setup_Scale.xml"
#: the brief's bounds: scale factors (a ratio of distances) and body poses (m); masses (kg)
#: and inertias (kg m^2) are held to the same, all far above the ~1e-15 the two codes differ
#: by (the same products and sums, in an order that may differ)
FACTOR_TOL = POSE_TOL = MASS_TOL = 1e-9
#: muscle parameters (relative): a ratio of two path lengths times the parameter
PARAMETER_TOL = 1e-9


def _copy_pipeline(folder, geometry=False):
    for name in os.listdir(PIPELINE):
        shutil.copy(os.path.join(PIPELINE, name), folder)
    shutil.copy(GAIT, os.path.join(folder, "gait2392_simbody.osim"))
    if geometry:
        os.symlink(os.path.abspath(os.path.join(DATA, "Geometry")),
                   os.path.join(folder, "Geometry"))
    return str(folder)


def _edited_setup(folder, name, edit):
    """A copy of the example's setup in ``folder`` called ``name``, changed by ``edit(tool
    element)``."""
    tree = ET.parse(os.path.join(folder, SETUP))
    edit(tree.getroot().find("ScaleTool"))
    tree.write(os.path.join(folder, name), encoding="UTF-8", xml_declaration=True)
    return os.path.join(folder, name)


def _without_placer(tool):
    tool.remove(tool.find("MarkerPlacer"))


def _unequal(tool):
    """No MarkerPlacer; masses scaled with the bodies; pelvis measured along y only; the femurs
    and a foot scaled by unequal manual factors (the inertias' cylinder rule)."""
    _without_placer(tool)
    scaler = tool.find("ModelScaler")
    scaler.find("preserve_mass_distribution").text = "false"
    for m in scaler.find("MeasurementSet/objects"):
        if m.get("name") == "pelvis":
            m.find("BodyScaleSet/objects/BodyScale/axes").text = " Y "
    manual = scaler.find("ScaleSet/objects")
    for s in manual:
        if s.findtext("segment").strip() == "femur_r":
            s.find("scales").text = "1.1 0.9 1.05"
    extra = ET.SubElement(manual, "Scale")
    ET.SubElement(extra, "scales").text = "0.95 1.2 1.1"
    ET.SubElement(extra, "segment").text = "calcn_l"
    ET.SubElement(extra, "apply").text = "true"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The example's inputs in a folder of their own, with two setups without the
    MarkerPlacer: the example's scaling, and one with unequal factors and scaled masses."""
    f = _copy_pipeline(tmp_path_factory.mktemp("scale"))
    _edited_setup(f, "scale_only.xml", _without_placer)
    _edited_setup(f, "unequal.xml", _unequal)
    return f


@pytest.fixture(scope="module")
def generic(folder):
    setup = read_scale_setup(os.path.join(folder, "scale_only.xml"))
    model = read_osim(setup.model_file).with_markers(read_marker_set(setup.marker_set_file))
    return setup, model, read_trc(setup.scaler.marker_file)


# ----------------------------------------------------------------------------- setup
def test_the_example_setup_reads_every_field(folder, generic):
    setup = generic[0]
    assert setup.name == "subject01" and setup.mass == 72.6 and setup.placer is None
    assert setup.model_file == os.path.join(folder, "gait2392_simbody.osim")
    assert setup.marker_set_file == os.path.join(folder, "gait2392_Scale_MarkerSet.xml")
    s = setup.scaler
    assert s.apply and s.scaling_order == ("measurements", "manualScale")
    assert [m.name for m in s.measurements] == ["torso", "pelvis", "thigh", "shank", "foot"]
    thigh = s.measurements[2]
    assert thigh.pairs == (("R.ASIS", "R.Knee.Lat"), ("L.ASIS", "L.Knee.Lat"))
    assert thigh.bodies == {b: (0, 1, 2) for b in ("femur_r", "femur_l", "patella_r",
                                                  "patella_l")}
    assert [(m.segment, m.factors) for m in s.manual_scales][2] == \
        ("tibia_r", (0.988523, 0.988523, 0.988523))
    assert s.time_range == (1.0, 2.0) and s.preserve_mass_distribution
    assert s.marker_file == os.path.join(folder, "subject01_static.trc")
    assert s.output_model_file == os.path.join(folder, "subject01_scaledOnly.osim")
    assert s.output_scale_file == os.path.join(folder, "subject01_scaleSet_applied.xml")


def test_setup_problems_name_the_field(folder):
    def bad_order(tool):
        tool.find("ModelScaler/scaling_order").text = "measurements stretch"

    def bad_pair(tool):
        tool.find("ModelScaler/MeasurementSet/objects/Measurement/MarkerPairSet/objects/"
                  "MarkerPair/markers").text = "V.Sacral"

    def bad_range(tool):
        tool.find("ModelScaler/time_range").text = "2 1"

    for edit, words in ((bad_order, "'stretch'"), (bad_pair, "two markers"),
                        (bad_range, "starts after it ends")):
        path = _edited_setup(folder, "bad.xml", lambda t: (_without_placer(t), edit(t)))
        with pytest.raises(InvalidInputError, match=words):
            read_scale_setup(path)
    for text, words in (("<OpenSimDocument><ScaleTool name='s'>", "not a complete XML"),
                        ("<OpenSimDocument><IKTool/></OpenSimDocument>", "no <ScaleTool>"),
                        ("<OpenSimDocument><ScaleTool/></OpenSimDocument>",
                         "name the generic model")):
        with pytest.raises(InvalidInputError, match=words):
            parse_scale_setup(text)


def test_a_set_kept_in_its_own_file_is_read_from_it(folder, generic):
    def measurements_apart(tool):
        _without_placer(tool)
        scaler = tool.find("ModelScaler")
        inline = scaler.find("MeasurementSet")
        root = ET.Element("OpenSimDocument", Version="30000")
        root.append(inline)
        ET.ElementTree(root).write(os.path.join(folder, "measurements.xml"))
        scaler.remove(inline)
        ET.SubElement(scaler, "MeasurementSet", file="measurements.xml")

    setup = read_scale_setup(_edited_setup(folder, "apart.xml", measurements_apart))
    assert setup.scaler.measurements == generic[0].scaler.measurements


# ----------------------------------------------------------------------------- measurements
def test_the_frames_averaged_are_those_opensim_marker_data_picks():
    t = np.arange(10) * 0.1
    trial = MarkerTrial(("A",), t, np.zeros((10, 1, 3)), 10.0)
    assert trial.frame_range(0.2, 0.5) == (2, 5)
    assert trial.frame_range(0.25, 0.45) == (2, 5)     # the frame before each end included
    assert trial.frame_range(-1.0, 0.3) == (0, 3)      # clipped to the trial
    assert trial.frame_range(0.8, 5.0) == (8, 9)
    for start, end in ((1.0, 2.0), (-2.0, -1.0)):
        with pytest.raises(InvalidInputError, match="outside the trial"):
            trial.frame_range(start, end)
    with pytest.raises(InvalidInputError, match="starts after it ends"):
        trial.frame_range(0.5, 0.2)


def test_a_measurement_is_the_mean_ratio_of_trial_to_model_distances(generic):
    setup, model, trial = generic
    thigh = setup.scaler.measurements[2]
    result = take_measurement(model, trial, thigh, (1.0, 2.0))
    first, last = trial.frame_range(1.0, 2.0)
    assert (first, last) == (60, 120)                   # OpenSim: "frames 61 to 121"
    ratios = []
    for (a, b), (a2, b2, on_model, in_trial) in zip(thigh.pairs, result.pairs):
        assert (a, b) == (a2, b2)
        pa, pb = model.marker_positions(names=[a, b])
        assert on_model == pytest.approx(np.linalg.norm(pa - pb), rel=1e-15)
        d = trial.marker(a)[first:last + 1] - trial.marker(b)[first:last + 1]
        assert in_trial == pytest.approx(np.linalg.norm(d, axis=1).mean(), rel=1e-14)
        ratios.append(in_trial / on_model)
    assert result.factor == pytest.approx(np.mean(ratios), rel=1e-15)
    # the ASIS markers of the marker set lie 0.256 m apart across the pelvis
    pelvis = take_measurement(model, trial, setup.scaler.measurements[1], (1.0, 2.0))
    assert pelvis.pairs[0][2] == pytest.approx(0.256, abs=1e-15)


def test_factors_follow_the_axes_and_the_order_of_the_steps(generic):
    setup, model, trial = generic
    s = setup.scaler
    factors, results, warnings = scale_factors(model, s, trial)
    by_name = {r.name: r.factor for r in results}
    assert np.all(factors["torso"] == by_name["torso"])
    assert np.all(factors["talus_r"] == by_name["shank"])
    assert np.all(factors["tibia_r"] == 0.988523)       # the manual scale comes second
    assert np.all(factors["ground"] == 1.0)
    assert any("'patella_r'" in w and "ignored" in w for w in warnings)
    flipped = dataclasses.replace(s, scaling_order=("manualScale", "measurements"))
    assert np.all(scale_factors(model, flipped, trial)[0]["tibia_r"] == by_name["shank"])
    only_y = dataclasses.replace(s, scaling_order=("measurements",), measurements=(
        Measurement("pelvis", (("R.ASIS", "L.ASIS"),), {"pelvis": (1,)}),))
    assert scale_factors(model, only_y, trial)[0]["pelvis"].tolist() == \
        [1.0, by_name["pelvis"], 1.0]


def test_measurement_markers_missing_from_model_or_trial_are_named(generic):
    setup, model, trial = generic
    pair = Measurement("reach", (("R.ASIS", "Nose"),), {"torso": (0,)})
    s = dataclasses.replace(setup.scaler, measurements=(pair,))
    with pytest.raises(InvalidInputError, match="'Nose' is not on model"):
        scale_factors(model, s, trial)
    model2 = model.with_markers({"Nose": dataclasses.replace(model.markers["Top.Head"],
                                                             name="Nose")})
    with pytest.raises(InvalidInputError, match="'Nose' is not in the marker trial"):
        scale_factors(model2, s, trial)
    late = dataclasses.replace(setup.scaler, time_range=(50.0, 60.0))
    with pytest.raises(InvalidInputError, match="outside the trial"):
        scale_factors(model, late, trial)


def test_a_manual_scale_of_a_missing_body_is_ignored_with_a_warning(generic):
    setup, model, trial = generic
    manual = setup.scaler.manual_scales + (ManualScale("patella_r", (2.0, 2.0, 2.0)),)
    s = dataclasses.replace(setup.scaler, scaling_order=("manualScale",),
                            manual_scales=manual)
    factors, _, warnings = scale_factors(model, s, trial)
    assert "patella_r" not in factors and np.all(factors["femur_r"] == 1.14724)
    assert warnings == ["a manual scale scales body 'patella_r', which model "
                        "'3DGaitModel2392' does not have: ignored"]


def test_a_gap_in_the_range_skips_the_measurement_with_a_warning(generic):
    setup, model, trial = generic
    positions = trial.positions.copy()
    positions[70, trial.index("Top.Head")] = np.nan
    gappy = dataclasses.replace(trial, positions=positions)
    factors, results, warnings = scale_factors(model, setup.scaler, gappy)
    assert math.isnan(results[0].factor) and np.all(factors["torso"] == 1.0)
    assert any("'torso' was not used" in w for w in warnings)


# ----------------------------------------------------------------------------- the model
def test_equal_factors_everywhere_scale_every_pose_and_keep_the_mass_distribution(generic):
    model = generic[1]
    k = 1.07
    scaled = scale_model(model, {b: [k, k, k] for b in model.bodies},
                         preserve_mass_distribution=True)
    rng = np.random.default_rng(3)
    for q in [model.default_q()] + [model.default_q() + rng.uniform(-0.5, 0.5, model.nq)
                                    for _ in range(5)]:
        # in the pelvis (the pelvis translations are coordinates, which no scaling changes)
        # every body and marker is k times as far, the knee's spline translations included
        before, after = model.body_poses(q), scaled.body_poses(q)
        to_pelvis, to_scaled_pelvis = se3.inv(before["pelvis"]), se3.inv(after["pelvis"])
        for b in list(model.bodies)[1:]:
            T0, T1 = to_pelvis @ before[b], to_scaled_pelvis @ after[b]
            np.testing.assert_allclose(T1[:3, :3], T0[:3, :3], atol=1e-15)
            np.testing.assert_allclose(T1[:3, 3], k * T0[:3, 3], atol=1e-15)
        m0 = model.marker_positions(q) - before["pelvis"][:3, 3]
        m1 = scaled.marker_positions(q) - after["pelvis"][:3, 3]
        np.testing.assert_allclose(m1, k * m0, atol=1e-15)
    for b in model.bodies:
        assert scaled.bodies[b].mass == model.bodies[b].mass
        np.testing.assert_allclose(scaled.bodies[b].inertia, k * k * model.bodies[b].inertia,
                                   rtol=1e-15)
        for g0, g1 in zip(model.bodies[b].geometry, scaled.bodies[b].geometry):
            np.testing.assert_allclose(g1.scale, k * g0.scale, rtol=1e-15)
    heavier = scale_model(model, {b: [k, k, k] for b in model.bodies})
    assert heavier.bodies["torso"].mass == pytest.approx(k ** 3 * model.bodies["torso"].mass,
                                                         rel=1e-15)


def test_the_subject_mass_keeps_the_ratios_of_the_masses(generic):
    model = generic[1]
    scaled = scale_model(model, {}, preserve_mass_distribution=True, mass=72.6)
    masses = np.array([b.mass for b in model.bodies.values()])
    new = np.array([b.mass for b in scaled.bodies.values()])
    assert new.sum() == pytest.approx(72.6, rel=1e-14)
    np.testing.assert_allclose(new, masses * 72.6 / masses.sum(), rtol=1e-15)


def test_unequal_factors_scale_the_inertia_as_a_cylinder():
    """A solid cylinder along y (radius r, length L): scaled by (a, b, c) it is a cylinder of
    radius^2 r^2 a c and length b L."""
    from core.io.osim import OsimBody, OsimModel
    m, r, L = 3.0, 0.05, 0.4
    inertia = np.diag([m * (L * L / 12 + r * r / 4), m * r * r / 2, m * (L * L / 12 + r * r / 4)])
    inertia[0, 1] = inertia[1, 0] = 1e-4
    body = OsimBody("rod", m, np.array([0.0, 0.1, 0.0]), inertia)
    model = OsimModel("m", "", 40000, np.zeros(3), {"ground": OsimBody(
        "ground", 0.0, np.zeros(3), np.zeros((3, 3))), "rod": body}, [], {}, [], [], [])
    a, b, c = 1.2, 0.8, 1.1
    for keep in (True, False):
        got = scale_model(model, {"rod": [a, b, c]}, preserve_mass_distribution=keep)
        rod = got.bodies["rod"]
        mass = m if keep else m * a * b * c
        r2, L2 = r * r * a * c, L * b
        expected = np.diag([mass * (L2 * L2 / 12 + r2 / 4), mass * r2 / 2,
                            mass * (L2 * L2 / 12 + r2 / 4)])
        expected[0, 1] = expected[1, 0] = 1e-4 * a * b * (1.0 if keep else a * b * c)
        assert rod.mass == pytest.approx(mass, rel=1e-15)
        np.testing.assert_allclose(rod.inertia, expected, rtol=1e-13)
        np.testing.assert_allclose(rod.com, [0.0, 0.1 * b, 0.0], rtol=1e-15)


def test_scale_factors_must_be_usable(generic):
    model = generic[1]
    for factors, words in (({"patella_r": [1, 1, 1]}, "'patella_r'"),
                           ({"torso": [1, 0, 1]}, "non-zero"),
                           ({"torso": [1, np.nan, 1]}, "finite")):
        with pytest.raises(InvalidInputError, match=words):
            scale_model(model, factors)


def test_a_scaled_model_is_written_and_read_back(generic, tmp_path):
    setup, model, trial = generic
    factors = scale_factors(model, setup.scaler, trial)[0]
    scaled = scale_model(model, factors, preserve_mass_distribution=True, mass=72.6)
    write_osim(tmp_path / "s.osim", scaled)
    back = read_osim(tmp_path / "s.osim")
    q = scaled.default_q() + 0.3
    for b, T in scaled.body_poses(q).items():
        np.testing.assert_allclose(back.body_poses(q)[b], T, atol=1e-14)
    np.testing.assert_allclose(back.marker_positions(q), scaled.marker_positions(q), atol=1e-14)


def test_the_scale_set_file_holds_each_body_and_exact_factors(generic, tmp_path):
    setup, model, trial = generic
    factors = scale_factors(model, setup.scaler, trial)[0]
    write_scale_set(tmp_path / "set.xml", model, factors)
    root = ET.parse(tmp_path / "set.xml").getroot()
    scales = root.findall("ScaleSet/objects/Scale")
    assert [s.findtext("segment") for s in scales] == list(model.bodies)
    for s in scales:
        values = [float(v) for v in s.findtext("scales").split()]
        assert values == factors[s.findtext("segment")].tolist()
        assert s.findtext("apply") == "true"
    assert root.find("ScaleSet/groups") is not None
    assert scale_set_document(model, {}).count("<scales> 1.0 1.0 1.0</scales>") == \
        len(model.bodies)


# ----------------------------------------------------------------------------- the tool
def test_the_tool_without_marker_placer_writes_the_scaled_model_and_factors(folder, tmp_path):
    f = _copy_pipeline(tmp_path)
    setup = _edited_setup(f, "s.xml", _without_placer)
    seen = []
    result = scale_tool(setup, progress=lambda x: seen.append(x) or True)
    assert result.status == "done" and seen[-1] == 1.0
    assert result.model is result.scaled_model and result.model.name == "subject01"
    assert set(result.written) == {os.path.join(f, "subject01_scaledOnly.osim"),
                                   os.path.join(f, "subject01_scaleSet_applied.xml")}
    assert sum(b.mass for b in read_osim(result.written[0]).bodies.values()) == \
        pytest.approx(72.6, rel=1e-14)
    assert any("MarkerPlacer" in w for w in result.warnings)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """Our ScaleTool on the example's own setup (the MarkerPlacer included) in a folder of its
    own: ``(folder, result)``."""
    f = _copy_pipeline(tmp_path_factory.mktemp("ours"))
    return f, scale_tool(os.path.join(f, SETUP))


def test_the_tool_places_the_markers_on_the_static_pose_and_writes_its_files(full_run):
    f, result = full_run
    assert result.status == "done"
    assert result.written == tuple(os.path.join(f, n) for n in (
        "subject01_scaledOnly.osim", "subject01_scaleSet_applied.xml", "subject01_simbody.osim",
        "subject01_static_output.mot"))
    placed, q = result.model, result.placement.q
    assert placed is result.placement.model and placed.name == "subject01"
    np.testing.assert_array_equal(placed.default_q(), result.scaled_model.default_q())
    # each moved marker sits on the static trial's average (MarkerData's frames 61..121)
    trial = read_trc(os.path.join(f, "subject01_static.trc"))
    first, last = trial.frame_range(1.0, 2.0)
    moved = list(result.placement.moved)
    average = np.array([trial.marker(n)[first:last + 1].mean(axis=0) for n in moved])
    np.testing.assert_allclose(placed.marker_positions(q, names=moved), average, atol=1e-12)
    written = read_osim(os.path.join(f, "subject01_simbody.osim"))
    np.testing.assert_allclose(written.marker_positions(q, names=moved), average, atol=1e-12)
    motion = read_motion(os.path.join(f, "subject01_static_output.mot"))
    assert motion.time.tolist() == [1.0] and not motion.in_degrees
    column = motion.names.index("/jointset/knee_r/knee_angle_r/value")
    assert motion.values[0, column] == q[placed.coordinate_names.index("knee_angle_r")]


def test_the_placed_markers_are_written_as_a_marker_set_when_asked(tmp_path):
    f = _copy_pipeline(tmp_path)

    def marker_file(tool):
        tool.find("MarkerPlacer/output_marker_file").text = "placed_markers.xml"

    result = scale_tool(_edited_setup(f, "s.xml", marker_file))
    written = read_marker_set(os.path.join(f, "placed_markers.xml"))
    assert list(written) == list(result.model.markers)
    for name, marker in result.model.markers.items():
        assert written[name].body == marker.body and written[name].fixed == marker.fixed
        assert np.array_equal(written[name].location, marker.location)


def test_a_placer_without_its_trial_is_refused_before_anything_is_written(tmp_path):
    f = _copy_pipeline(tmp_path)
    before = set(os.listdir(f))

    def no_trial(tool):
        tool.find("MarkerPlacer/marker_file").text = " Unassigned "

    with pytest.raises(InvalidInputError, match="MarkerPlacer names no <marker_file>"):
        scale_tool(_edited_setup(f, "s.xml", no_trial))
    assert set(os.listdir(f)) == before | {"s.xml"}


def test_a_cancelled_tool_writes_nothing(tmp_path):
    f = _copy_pipeline(tmp_path)
    before = set(os.listdir(f))
    for stop in (0.5, 1.0):                 # after the scaling, after the placement
        result = scale_tool(os.path.join(f, SETUP), progress=lambda x: x < stop)
        assert result.status == "cancelled" and result.model is None and not result.written
        assert set(os.listdir(f)) == before


# ----------------------------------------------------------------------------- vs OpenSim
@pytest.fixture(scope="module")
def opensim_run(tmp_path_factory):
    """OpenSim 4.6's ScaleTool run on the example (and on the unequal-factors setup) in a
    folder of its own: ``(opensim, folder, static pose {coordinate: value})``."""
    opensim = pytest.importorskip("opensim")
    level = opensim.Logger.getLevelString()
    opensim.Logger.setLevelString("off")      # OpenSim's log level is global: put it back
    f = _copy_pipeline(tmp_path_factory.mktemp("opensim_scale"), geometry=True)
    def unequal(tool):
        _unequal(tool)
        tool.find("ModelScaler/output_model_file").text = "unequal.osim"
        tool.find("ModelScaler/output_scale_file").text = "unequal_scaleSet.xml"

    _edited_setup(f, "unequal.xml", unequal)
    tool = opensim.ScaleTool(os.path.join(f, SETUP))
    assert tool.run() and opensim.ScaleTool(os.path.join(f, "unequal.xml")).run()
    # the static pose at full precision (its .mot file keeps 8 decimals)
    pose = tool.getMarkerPlacer().getOutputStorage()
    labels, row = pose.getColumnLabels(), pose.getStateVector(0).getData()
    static = {labels.get(i + 1).split("/")[-2]: row.get(i) for i in range(row.getSize())
              if labels.get(i + 1).endswith("/value")}
    yield opensim, f, static
    opensim.Logger.setLevelString(level)


def _opensim_factors(opensim, generic_file, scaled_file):
    """The factors OpenSim applied to each body, exactly: its bodies' mesh scale factors
    after scaling over those before (the ScaleSet file keeps 6 digits only)."""
    def mesh_scales(path):
        m = opensim.Model(path)
        bodies = m.getBodySet()
        return {bodies.get(i).getName(): _vec(bodies.get(i).get_attached_geometry(0)
                                              .get_scale_factors())
                for i in range(bodies.getSize())}
    before, after = mesh_scales(generic_file), mesh_scales(scaled_file)
    return {b: after[b] / before[b] for b in after}


def _vec(v):
    return np.array([v.get(k) for k in range(3)])


def _compare_with_opensim(opensim, ours, file):
    """Body poses at the default and random coordinates, masses, centres of mass, inertias
    and markers of ``ours`` against OpenSim's model in ``file``."""
    m = _compare_with_opensim_bodies(opensim, ours, file)
    for i in range(m.getMarkerSet().getSize()):
        mk = m.getMarkerSet().get(i)
        assert np.abs(_vec(mk.get_location()) - ours.markers[mk.getName()].location).max() \
            <= POSE_TOL


def _compare_with_opensim_bodies(opensim, ours, file):
    from test_osim_import import _os_pose, _set_q
    m = opensim.Model(file)
    state = m.initSystem()
    rng = np.random.default_rng(7)
    lo = np.array([max(c.range[0], c.default - 1.5) for c in ours.coordinates.values()])
    hi = np.array([min(c.range[1], c.default + 1.5) for c in ours.coordinates.values()])
    for q in [ours.default_q()] + list(rng.uniform(lo, hi, (10, ours.nq))):
        _set_q(m, state, dict(zip(ours.coordinate_names, q)))
        poses = ours.body_poses(q)
        for b in ours.bodies:
            if b != "ground":
                assert np.abs(_os_pose(m, state, b, "ground") - poses[b]).max() <= POSE_TOL
    for i in range(m.getBodySet().getSize()):
        b = m.getBodySet().get(i)
        body = ours.bodies[b.getName()]
        assert abs(b.getMass() - body.mass) <= MASS_TOL
        assert np.abs(_vec(b.getMassCenter()) - body.com).max() <= POSE_TOL
        inertia = b.getInertia()
        I = body.inertia
        assert np.abs(_vec(inertia.getMoments()) - np.diag(I)).max() <= MASS_TOL
        assert np.abs(_vec(inertia.getProducts()) - I[[0, 0, 1], [1, 2, 2]]).max() <= MASS_TOL
    return m


@pytest.mark.parametrize("name, output", [(SETUP, "subject01_scaledOnly.osim"),
                                          ("unequal.xml", "unequal.osim")])
def test_scaling_equals_opensim(opensim_run, folder, name, output, tmp_path):
    opensim, f, _ = opensim_run
    setup = read_scale_setup(os.path.join(folder, "scale_only.xml" if name == SETUP else name))
    result = scale_tool(setup, write=False)
    expected = _opensim_factors(opensim, os.path.join(f, "gait2392_simbody.osim"),
                                os.path.join(f, output))
    for body, fac in expected.items():
        assert np.abs(result.factors[body] - fac).max() <= FACTOR_TOL, body
    # each measurement's factor as OpenSim's ModelScaler computes it
    tool = opensim.ScaleTool(os.path.join(f, name))
    model = tool.getGenericModelMaker().processModel(tool.getPathToSubject())
    state = model.initSystem()
    trial = opensim.MarkerData(os.path.join(f, "subject01_static.trc"))
    trial.convertToUnits(model.getLengthUnits())
    measurements = tool.getModelScaler().getMeasurementSet()
    for ours in result.measurements:
        theirs = tool.getModelScaler().computeMeasurementScaleFactor(
            state, model, trial, measurements.get(ours.name))
        assert abs(ours.factor - theirs) <= FACTOR_TOL
    _compare_with_opensim(opensim, result.scaled_model, os.path.join(f, output))
    # OpenSim reads our files: the model poses as ours, the scale set holds our factors
    write_osim(tmp_path / "ours.osim", result.scaled_model)
    _compare_with_opensim(opensim, result.scaled_model, str(tmp_path / "ours.osim"))
    write_scale_set(tmp_path / "set.xml", result.scaled_model, result.factors)
    scale_set = opensim.ScaleSet(str(tmp_path / "set.xml"))
    for s in (scale_set.get(i) for i in range(scale_set.getSize())):
        assert np.abs(_vec(s.getScaleFactors()) - result.factors[s.getSegmentName()]).max() \
            == 0.0


def test_the_placed_model_equals_opensims(opensim_run, full_run):
    """The final model: the same bodies and markers as OpenSim's ``subject01_simbody.osim``,
    each marker on the static trial's average at the static pose each tool solved (the poses
    differ by up to ~0.6 degrees in the back: OpenSim's marker placer stops its solve at
    accuracy 1e-4, short of the optimum core.mocap.ik reaches)."""
    from test_osim_import import _set_q
    opensim, folder, q_opensim = opensim_run
    ours = full_run[1]
    m = opensim.Model(os.path.join(folder, "subject01_simbody.osim"))
    markers = m.getMarkerSet()
    assert sorted(markers.get(i).getName() for i in range(markers.getSize())) == \
        sorted(ours.model.markers)
    np.testing.assert_array_equal(ours.model.default_q(), [
        m.getCoordinateSet().get(n).getDefaultValue() for n in ours.model.coordinate_names])
    state = m.initSystem()
    _set_q(m, state, q_opensim)
    moved = list(ours.placement.moved)
    theirs = np.array([_vec(markers.get(n).getLocationInGround(state)) for n in moved])
    assert np.abs(ours.model.marker_positions(ours.placement.q, names=moved) - theirs).max() \
        <= POSE_TOL
    _compare_with_opensim_bodies(opensim, ours.model, os.path.join(folder,
                                                                   "subject01_simbody.osim"))
    # OpenSim reads the placed model we wrote: its markers sit where ours do
    _compare_with_opensim(opensim, ours.model, os.path.join(full_run[0],
                                                            "subject01_simbody.osim"))
    # the marker placer leaves the scaled muscles as they are
    _compare_muscles_with_opensim(opensim, ours.model, os.path.join(folder,
                                                                     "subject01_simbody.osim"))


# ----------------------------------------------------------------------------- muscles
ARM = os.path.join(DATA, "arm26.osim")
#: arm26 scaled by unequal factors: its wrap objects are rotated in their bodies, so each
#: size takes a mix of the three factors
ARM_FACTORS = {"base": [1.05, 0.95, 0.9], "r_humerus": [1.1, 0.9, 1.2],
               "r_ulna_radius_hand": [0.95, 1.15, 1.05]}


def _local_location(model, q, point):
    """A path point's location in its body at ``q`` (a moving point's coordinates clamped to
    their ranges, as OpenSim evaluates it)."""
    if not isinstance(point, MovingPathPoint):
        return point.location
    local = point.location.copy()
    for k, item in enumerate(point.functions):
        if item is not None:
            lo, hi = model.coordinates[item[0]].range
            local[k] = item[1].value(min(max(q[model.coordinate_names.index(item[0])], lo),
                                         hi))
    return point.frame[:3, :3] @ local + point.frame[:3, 3]


def test_equal_factors_make_every_muscle_and_wrap_k_times_as_long(generic):
    """Every body k times its size: every path is k times as long at any pose (no path point
    is on ground), so the fibre and tendon lengths are too. A wrapped path to 1e-6 m: the
    wrap algorithms work to absolute tolerances (the ellipsoid's arc sampled every mm, its
    tangency iterations), which do not scale."""
    k = 1.07
    for model in (generic[1], read_osim(ARM)):
        scaled = scale_model(model, {b: [k, k, k] for b in model.bodies if b != "ground"})
        for q in [model.default_q(), *_random_poses(model, 3, 5)]:
            before, after = path_kinematics(model, q), path_kinematics(scaled, q)
            for n, m in model.muscles.items():
                assert path_length(after, None, scaled.muscles[n].path) == pytest.approx(
                    k * path_length(before, None, m.path), rel=1e-13,
                    abs=1e-6 if m.path.wraps else 0.0), n
        for n, m in model.muscles.items():
            # the lengths' ratio; a wrapped path's (>= 0.1 m) to 1e-6 m
            rel = 1e-5 if m.path.wraps else 1e-13
            assert scaled.muscles[n].optimal_fiber_length == pytest.approx(
                k * m.optimal_fiber_length, rel=rel)
            assert scaled.muscles[n].tendon_slack_length == pytest.approx(
                k * m.tendon_slack_length, rel=rel)
            assert scaled.muscles[n].max_isometric_force == m.max_isometric_force
        for n, w in model.wrap_objects.items():
            v = scaled.wrap_objects[n]
            np.testing.assert_allclose(v.pose[:3, 3], k * w.pose[:3, 3], rtol=1e-15)
            np.testing.assert_array_equal(v.pose[:3, :3], w.pose[:3, :3])
            np.testing.assert_allclose([v.radius, v.length, *v.radii],
                                       [k * w.radius, k * w.length, *(k * w.radii)],
                                       rtol=1e-15)


def test_moving_point_functions_are_multiplied_by_their_axis_factor(generic):
    """Each function with a coordinate, and the translation of the frame it is given in."""
    model = generic[1]
    muscle = model.muscles["vas_med_r"]
    framed = dataclasses.replace(muscle.path.points[-1], frame=se3.exp([0.0, 0.0, 0.3, 0.01,
                                                                         -0.02, 0.005]))
    muscle = dataclasses.replace(muscle, path=dataclasses.replace(
        muscle.path, points=[*muscle.path.points[:-1], framed]))
    model = dataclasses.replace(model, muscles={**model.muscles, "vas_med_r": muscle})
    s = np.array([1.1, 0.9, 1.05])
    scaled = scale_model(model, {"tibia_r": s})
    point, moved = framed, scaled.muscles["vas_med_r"].path.points[-1]
    np.testing.assert_array_equal(moved.frame[:3, :3], point.frame[:3, :3])
    np.testing.assert_allclose(moved.frame[:3, 3], s * point.frame[:3, 3], rtol=1e-15)
    for q in _random_poses(model, 5, 9):
        local = [f[1].value(min(max(q[model.coordinate_names.index(f[0])],
                                    model.coordinates[f[0]].range[0]),
                                model.coordinates[f[0]].range[1])) for f in point.functions]
        np.testing.assert_allclose(_local_location(scaled, q, moved), s * point.frame[:3, 3]
                                   + point.frame[:3, :3] @ (s * local), rtol=1e-14)
    # scaled twice: one multiplier, its scale the product
    twice = scale_model(scaled, {"tibia_r": s}).muscles["vas_med_r"].path.points[-1]
    assert type(twice.functions[0][1].function) is type(point.functions[0][1])
    assert twice.functions[0][1].scale == pytest.approx(s[0] ** 2, rel=1e-15)


def test_a_rigid_tendon_muscle_keeps_its_lengths():
    """RigidTendonMuscle, alone of the muscle classes, does not rescale its fibre and tendon
    lengths with its path (it has no ``extendPostScale``)."""
    model = read_osim(ARM)
    rigid = dataclasses.replace(model.muscles["BRA"], kind="RigidTendonMuscle")
    model = dataclasses.replace(model, muscles={**model.muscles, "BRA": rigid})
    scaled = scale_model(model, ARM_FACTORS)
    assert scaled.muscles["BRA"].optimal_fiber_length == rigid.optimal_fiber_length
    assert scaled.muscles["BRA"].tendon_slack_length == rigid.tendon_slack_length
    assert scaled.muscles["BICshort"].optimal_fiber_length != \
        model.muscles["BICshort"].optimal_fiber_length


def test_a_wrap_sphere_needs_factors_of_positive_mean():
    from core.muscles.wrap import WrapObject
    model = read_osim(ARM)
    sphere = WrapObject("ball", "WrapSphere", "r_humerus", np.eye(4), radius=0.02)
    model = dataclasses.replace(model, wrap_objects={**model.wrap_objects, "ball": sphere})
    scaled = scale_model(model, {"r_humerus": [1.1, 0.9, 1.3]})
    assert scaled.wrap_objects["ball"].radius == pytest.approx(0.02 * 1.1, rel=1e-15)
    with pytest.raises(InvalidInputError, match="'ball'.*positive mean"):
        scale_model(model, {"r_humerus": [-1.0, 0.5, 0.4]})
    assert model.wrap_objects["ball"].radius == 0.02


def _compare_muscles_with_opensim(opensim, ours, file):
    """Muscles and wrap objects of ``ours`` against OpenSim's model in ``file``: parameters,
    every path point in its body (moving points at 10 random poses), wrap objects' poses and
    sizes, and every path's length at those poses."""
    osim = _OpenSim(ours, file)
    om, state = osim.om, osim.state
    for n, m in ours.muscles.items():
        theirs = om.getMuscles().get(n)
        assert theirs.getOptimalFiberLength() == pytest.approx(m.optimal_fiber_length,
                                                               rel=PARAMETER_TOL), n
        assert theirs.getTendonSlackLength() == pytest.approx(m.tendon_slack_length,
                                                              rel=PARAMETER_TOL), n
    bodies = om.getBodySet()
    for n, w in ours.wrap_objects.items():
        theirs = bodies.get(w.body).getWrapObjectSet().get(n)
        T = offset_pose(_vec(theirs.get_translation()), _vec(theirs.get_xyz_body_rotation()))
        assert np.abs(T - w.pose).max() <= POSE_TOL, n
        kind = getattr(opensim, w.kind).safeDownCast(theirs)
        if w.kind == "WrapEllipsoid":
            sizes, mine = _vec(kind.get_dimensions()), w.radii
        else:
            sizes, mine = [kind.get_radius()], [w.radius]
        if w.kind == "WrapCylinder":
            sizes, mine = sizes + [kind.get_length()], mine + [w.length]
        assert np.abs(np.subtract(sizes, mine)).max() <= POSE_TOL, n
    for q in _random_poses(ours, 10, 11):
        osim.set(q)
        kin = path_kinematics(ours, q)
        for n, m in ours.muscles.items():
            path = osim.muscles[n]
            points = path.getPathPointSet()
            for i, point in enumerate(m.path.points):
                theirs = _vec(points.get(i).getLocation(state))
                assert np.abs(theirs - _local_location(ours, q, point)).max() <= POSE_TOL, \
                    (n, i)
            err = abs(path_length(kin, None, m.path) - path.getLength(state))
            assert err <= (LENGTH_TOL_WRAP if m.path.wraps else LENGTH_TOL), (n, err)


@pytest.mark.parametrize("name, output", [(SETUP, "subject01_scaledOnly.osim"),
                                          ("unequal.xml", "unequal.osim")])
def test_scaled_muscles_equal_opensims(opensim_run, folder, name, output, tmp_path):
    opensim, f, _ = opensim_run
    setup = read_scale_setup(os.path.join(folder, "scale_only.xml" if name == SETUP else name))
    scaled = scale_tool(setup, write=False).scaled_model
    _compare_muscles_with_opensim(opensim, scaled, os.path.join(f, output))
    # OpenSim reads the scaled model we write with the same muscles
    write_osim(tmp_path / "ours.osim", scaled)
    _compare_muscles_with_opensim(opensim, scaled, str(tmp_path / "ours.osim"))


def test_arm26_scaled_by_unequal_factors_equals_opensim(opensim_run, tmp_path):
    """Model::scale on arm26 (two wrap cylinders and two wrap ellipsoids, rotated in their
    bodies) with manual unequal factors."""
    opensim = opensim_run[0]
    om = opensim.Model(ARM)
    state = om.initSystem()
    scale_set = opensim.ScaleSet()
    for body, f in ARM_FACTORS.items():
        s = opensim.Scale()
        s.setSegmentName(body)
        s.setScaleFactors(opensim.Vec3(*f))
        s.setApply(True)
        scale_set.cloneAndAppend(s)
    assert om.scale(state, scale_set, True, -1.0)
    om.printToXML(str(tmp_path / "theirs.osim"))
    ours = scale_model(read_osim(ARM), ARM_FACTORS, preserve_mass_distribution=True)
    _compare_muscles_with_opensim(opensim, ours, str(tmp_path / "theirs.osim"))
    write_osim(tmp_path / "ours.osim", ours)
    _compare_muscles_with_opensim(opensim, ours, str(tmp_path / "ours.osim"))
