"""Markers: .trc trials, MarkerSet files and a model's markers, against the files' own numbers
and (where installed) OpenSim 4.6."""

import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from core.errors import InvalidInputError
from core.io.markers import (Marker, MarkerTrial, parse_marker_set, parse_trc,
                             read_marker_set, read_trc, write_trc)
from core.io.osim import parse_osim, read_osim
from core.io.osim_export import osim_document

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "osim")
PIPELINE = os.path.join(DATA, "gait2392_pipeline")
GAIT = os.path.join(DATA, "gait2392_thelen2003muscle.osim")


def _trc(rows, names=("A", "B"), units="mm", rate="60.00", count=None):
    n = len(names) if count is None else count
    head = ["PathFileType\t4\t(X/Y/Z)\tt.trc",
            "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits",
            f"{rate}\t{rate}\t{len(rows)}\t{n}\t{units}",
            "Frame#\tTime\t" + "\t".join(f"{m}\t\t" for m in names),
            "\t\t" + "\t".join(f"X{i}\tY{i}\tZ{i}" for i in range(1, len(names) + 1)),
            ""]
    return "\n".join(head + rows) + "\n"


# ----------------------------------------------------------------------------- .trc
def test_the_walking_trial_reads_in_metres_with_its_labels_and_times():
    trial = read_trc(os.path.join(PIPELINE, "subject01_walk1.trc"))
    assert trial.positions.shape == (151, 41, 3)
    assert trial.names[:3] == ("R.ASIS", "L.ASIS", "V.Sacral")
    assert trial.rate == 60.0 and trial.units == "mm"
    # the first row as written in the file, in mm
    np.testing.assert_array_equal(trial.positions[0, 0], np.array([617.247620, 1055.275020,
                                                                   170.781980]) * 1e-3)
    assert trial.time[1] == 0.017 and trial.frames[-1] == 151
    np.testing.assert_array_equal(trial.marker("L.ASIS"), trial.positions[:, 1])


def test_units_convert_to_metres():
    row = "1\t0\t1\t2\t3\t4\t5\t6"
    for unit, scale in (("mm", 1e-3), ("cm", 1e-2), ("m", 1.0)):
        trial = parse_trc(_trc([row], units=unit))
        np.testing.assert_array_equal(trial.positions[0].ravel(),
                                      np.arange(1.0, 7.0) * scale)


def test_empty_fields_and_nan_are_gaps():
    trial = parse_trc(_trc(["1\t0\t1\t2\t3\t\t\t", "2\t0.1\tNaN\tNaN\tNaN\t4\t5\t6"]))
    assert np.isnan(trial.positions[0, 1]).all() and np.isnan(trial.positions[1, 0]).all()
    assert np.isfinite(trial.positions[0, 0]).all() and np.isfinite(trial.positions[1, 1]).all()


@pytest.mark.parametrize("text, words", [
    (_trc(["1\t0\t1\t2\t3\t4\t5"]), "columns"),                       # one field short
    (_trc(["1\t0\t1\t2\t3\t4\t5\t6\t7"]), "columns"),                 # one field too many
    (_trc(["1\t0\t1\t2\t3\t4\t5\t6"], units="furlong"), "unit"),
    (_trc(["1\t0\t1\t2\t3\t4\t5\t6"], names=("A", "A")), "more than once"),
    (_trc(["1\t0\t1\t2\t3\t4\t5\t6"], count=3), "NumMarkers"),
    (_trc(["1\t0\t1\t2\t3\t4\t5\t6", "2\t0\t1\t2\t3\t4\t5\t6"]), "increase"),
    (_trc(["1\t0\t1\t2\t3\t4\t5\t6"], rate="0"), "DataRate"),
    (_trc(["1\t0\t1\tx\t3\t4\t5\t6"]), "not a number"),
    (_trc([]), "no rows"),
    ("Frame#\tTime\n", "not a .trc"),
])
def test_bad_trc_files_say_what_is_wrong(text, words):
    with pytest.raises(InvalidInputError, match=words):
        parse_trc(text, source="bad.trc")


def test_a_time_range_outside_the_trial_is_refused_and_one_inside_selects_frames():
    trial = read_trc(os.path.join(PIPELINE, "subject01_static.trc"))
    part = trial.between(1.0, 2.0)
    assert part.time[0] >= 1.0 and part.time[-1] <= 2.0 and len(part.time) > 50
    assert part.positions.shape[1:] == trial.positions.shape[1:]
    with pytest.raises(InvalidInputError, match="holds no frame"):
        trial.between(10.0, 11.0)
    with pytest.raises(InvalidInputError, match="no marker 'Nose'"):
        trial.marker("Nose")


_finite = st.floats(-5.0, 5.0, allow_nan=False, allow_subnormal=False)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 6), m=st.integers(1, 4), data=st.data())
def test_write_then_read_gives_the_trial_back(n, m, data, tmp_path_factory):
    values = np.array(data.draw(st.lists(_finite, min_size=n * m * 3, max_size=n * m * 3)))
    positions = values.reshape(n, m, 3)
    gaps = np.array(data.draw(st.lists(st.booleans(), min_size=n * m, max_size=n * m)))
    positions[gaps.reshape(n, m)] = np.nan
    trial = MarkerTrial(names=tuple(f"M{k}" for k in range(m)),
                        time=np.arange(n) / 100.0, positions=positions, rate=100.0)
    path = tmp_path_factory.mktemp("trc") / "round.trc"
    write_trc(path, trial)
    back = read_trc(path)
    assert back.names == trial.names and back.rate == trial.rate
    np.testing.assert_array_equal(back.time, trial.time)
    np.testing.assert_array_equal(np.isnan(back.positions), np.isnan(positions))
    # written in mm as the shortest exact decimal of x * 1e3 and read back times 1e-3:
    # two roundings of half an ulp each
    ok = ~np.isnan(positions)
    np.testing.assert_allclose(back.positions[ok], positions[ok], rtol=2 * np.finfo(float).eps,
                               atol=0)


# ----------------------------------------------------------------------------- marker sets
def test_the_scale_marker_set_reads_its_bodies_locations_and_flags():
    markers = read_marker_set(os.path.join(PIPELINE, "gait2392_Scale_MarkerSet.xml"))
    assert len(markers) == 39
    sternum = markers["Sternum"]
    assert sternum.body == "torso" and not sternum.fixed
    np.testing.assert_array_equal(sternum.location, [0.07, 0.3, 0.0])


def test_marker_set_problems_name_the_marker():
    doc = ('<OpenSimDocument><MarkerSet><objects>{}</objects></MarkerSet></OpenSimDocument>')
    with pytest.raises(InvalidInputError, match="'A'.*3 numbers"):
        parse_marker_set(doc.format('<Marker name="A"><body>b</body><location>1 2</location>'
                                    '</Marker>'))
    with pytest.raises(InvalidInputError, match="'A' is given twice"):
        parse_marker_set(doc.format('<Marker name="A"><body>b</body><location>1 2 3</location>'
                                    '</Marker>' * 2))
    with pytest.raises(InvalidInputError, match="names no body"):
        parse_marker_set(doc.format('<Marker name="A"><location>1 2 3</location></Marker>'))
    with pytest.raises(InvalidInputError, match="is not a body"):
        parse_marker_set(doc.format('<Marker name="A"><socket_parent_frame>/jointset/j/f'
                                    '</socket_parent_frame><location>1 2 3</location></Marker>'))
    with pytest.raises(InvalidInputError, match="no <MarkerSet>"):
        parse_marker_set("<OpenSimDocument/>")


# ----------------------------------------------------------------------------- in a model
def _with_marker_on_offset_frame():
    """gait2392 with a marker on an offset frame of the pelvis (turned and moved)."""
    text = open(GAIT, encoding="utf-8").read()
    frame = ('<components><PhysicalOffsetFrame name="mark_frame"><socket_parent>/bodyset/pelvis'
             '</socket_parent><translation>0.1 0.2 0.3</translation><orientation>0.3 -0.2 0.5'
             '</orientation></PhysicalOffsetFrame></components>')
    text = text.replace('<Body name="pelvis">', '<Body name="pelvis">' + frame, 1)
    marker = ('<Marker name="OnFrame"><socket_parent_frame>/bodyset/pelvis/mark_frame'
              '</socket_parent_frame><location>0.01 0.02 0.03</location><fixed>true</fixed>'
              '</Marker><Marker name="OnFemur"><socket_parent_frame>/bodyset/femur_r'
              '</socket_parent_frame><location>0 -0.2 0.05</location></Marker>')
    return text.replace('<MarkerSet name="markerset">\n\t\t\t<objects />',
                        f'<MarkerSet name="markerset"><objects>{marker}</objects>', 1)


def test_model_markers_are_read_carried_into_their_body_and_written_back():
    model = parse_osim(_with_marker_on_offset_frame())
    assert list(model.markers) == ["OnFrame", "OnFemur"]
    assert not any(s.startswith("Marker") for s in model.skipped)
    on = model.markers["OnFrame"]
    assert on.body == "pelvis" and on.fixed
    from core.io.osim import offset_pose
    T = offset_pose([0.1, 0.2, 0.3], [0.3, -0.2, 0.5])
    np.testing.assert_allclose(on.location, T[:3, :3] @ [0.01, 0.02, 0.03] + T[:3, 3],
                               rtol=0, atol=4 * np.finfo(float).eps)
    back = parse_osim(osim_document(model))
    for name, m in model.markers.items():
        assert back.markers[name].body == m.body and back.markers[name].fixed == m.fixed
        np.testing.assert_array_equal(back.markers[name].location, m.location)
    q = model.q_from({"hip_flexion_r": 0.7, "pelvis_tx": 0.2})
    np.testing.assert_array_equal(back.marker_positions(q), model.marker_positions(q))


def test_marker_positions_follow_the_bodies():
    model = parse_osim(_with_marker_on_offset_frame())
    q = model.q_from({"hip_flexion_r": 0.9})
    T = model.body_poses(q)["femur_r"]
    np.testing.assert_allclose(model.marker_positions(q, ["OnFemur"])[0],
                               T[:3, :3] @ [0, -0.2, 0.05] + T[:3, 3], rtol=0, atol=1e-15)
    with pytest.raises(InvalidInputError, match="no markers"):
        model.marker_positions(q, ["Nose"])


def test_with_markers_replaces_and_adds_as_update_marker_set_does():
    model = parse_osim(_with_marker_on_offset_frame())
    new = {"OnFemur": Marker("OnFemur", "tibia_r", np.array([0.0, 0.1, 0.0])),
           "Extra": Marker("Extra", "torso", np.array([0.0, 0.4, 0.0]), fixed=True)}
    updated = model.with_markers(new)
    assert list(updated.markers) == ["OnFrame", "OnFemur", "Extra"]
    assert updated.markers["OnFemur"].body == "tibia_r"
    assert model.markers["OnFemur"].body == "femur_r"      # the original is unchanged
    with pytest.raises(InvalidInputError, match="no bodies \\['skull'\\]"):
        model.with_markers({"X": Marker("X", "skull", np.zeros(3))})


def test_a_model_marker_on_a_missing_body_is_refused():
    text = _with_marker_on_offset_frame().replace("/bodyset/femur_r</socket_parent_frame>",
                                                  "/bodyset/femur_x</socket_parent_frame>")
    with pytest.raises(InvalidInputError, match="OnFemur"):
        parse_osim(text, source="m.osim")


def test_model_markers_match_opensim(tmp_path):
    osim = pytest.importorskip("opensim")
    path = tmp_path / "m.osim"
    path.write_text(_with_marker_on_offset_frame(), encoding="utf-8")
    ours = read_osim(path)
    model = osim.Model(str(path))
    state = model.initSystem()
    names = ("hip_flexion_r", "knee_angle_r", "pelvis_tilt", "pelvis_tx")
    values = (0.6, -0.8, 0.2, 0.3)
    for name, value in zip(names, values):
        model.getCoordinateSet().get(name).setValue(state, value)
    q = ours.q_from(dict(zip(names, values)))
    markers = model.getMarkerSet()
    for k in range(markers.getSize()):
        m = markers.get(k)
        ref = m.getLocationInGround(state)
        # two 4x4 chains of a few dozen operations on lengths below 2 m
        np.testing.assert_allclose(ours.marker_positions(q, [m.getName()])[0],
                                   [ref.get(i) for i in range(3)], rtol=0, atol=1e-14)


def test_written_trials_read_in_opensim(tmp_path):
    osim = pytest.importorskip("opensim")
    trial = read_trc(os.path.join(PIPELINE, "subject01_walk1.trc"))
    path = tmp_path / "copy.trc"
    write_trc(path, trial)
    table = osim.TimeSeriesTableVec3(str(path))
    assert table.getNumRows() == len(trial.time)
    assert list(table.getColumnLabels()) == list(trial.names)
    row = table.getRowAtIndex(10)
    got = np.array([[row[k].get(i) for i in range(3)] for k in range(len(trial.names))])
    np.testing.assert_allclose(got * 1e-3, trial.positions[10], rtol=2 * np.finfo(float).eps)
