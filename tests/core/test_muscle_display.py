"""What the 3D view and the moment-arm plot show of a model's muscles (core.muscles.display):
points and lengths from the paths, colours by length change and by force, the list's filter,
the sweep's table and its files."""

import csv
from pathlib import Path

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.muscles import display, paths

ARM26 = Path(__file__).resolve().parents[3] / "shared" / "data" / "osim" / "arm26.osim"
pytestmark = pytest.mark.skipif(not ARM26.is_file(), reason=f"{ARM26} not found")


@pytest.fixture(scope="module")
def arm26():
    from core.io.osim import read_osim

    return read_osim(str(ARM26))


def test_points_and_lengths_are_the_paths(arm26):
    d = display.MuscleDisplay(arm26)
    q = arm26.q_from({"r_elbow_flex": 1.2, "r_shoulder_elev": 0.4})
    points, lengths = d.evaluate(q)
    for name, p, length in zip(d.names, points, lengths):
        state = paths.path_geometry(arm26, q, arm26.muscles[name].path)
        np.testing.assert_array_equal(p, state.points)
        assert length == state.length
    rest = [paths.path_length(arm26, None, arm26.muscles[n].path) for n in d.names]
    np.testing.assert_array_equal(d.rest_lengths, rest)


def test_length_colours_run_from_blue_through_red_to_yellow(arm26):
    d = display.MuscleDisplay(arm26)
    L0 = d.rest_lengths
    at_rest = d.colors(L0)
    np.testing.assert_allclose(at_rest, np.tile(display._REST, (len(L0), 1)))
    short = d.colors(L0 * (1.0 - display.LENGTH_SPAN))
    long = d.colors(L0 * (1.0 + 2.0 * display.LENGTH_SPAN))  # clipped at full colour
    np.testing.assert_allclose(short, np.tile(display._SHORT, (len(L0), 1)))
    np.testing.assert_allclose(long, np.tile(display._LONG, (len(L0), 1)))


def test_force_colours_follow_the_tension_and_refuse_bad_activations(arm26):
    d = display.MuscleDisplay(arm26)
    L = d.rest_lengths
    relaxed = d.tensions(L, np.zeros(len(L)))
    active = d.tensions(L, np.ones(len(L)))
    assert np.all(active > relaxed)
    c0, c1 = d.colors(L, "FORCE", np.zeros(len(L))), d.colors(L, "FORCE", np.ones(len(L)))
    assert np.all(c1[:, 1] < c0[:, 1])  # deeper red: less green
    a = np.zeros(len(L))
    a[d.names.index("BRA")] = 1.5
    with pytest.raises(InvalidInputError, match="'BRA'.*outside"):
        d.colors(L, "FORCE", a)
    with pytest.raises(InvalidInputError, match="colour mode"):
        d.colors(L, "SPEED")


def test_filter_by_name_and_by_spanned_coordinate_or_joint(arm26):
    spans = display.muscle_spans(arm26)
    names = list(spans)
    shoulder = display.filter_muscles(names, [spans[n] for n in names], "", "SHOULDER")
    want = [n for n in names if "r_shoulder_elev" in paths.spanned_coordinates(
        arm26, arm26.muscles[n].path)]
    assert [n for n, k in zip(names, shoulder) if k] == want and 0 < len(want) < len(names)
    tri = display.filter_muscles(names, [spans[n] for n in names], "tri", "")
    assert [n for n, k in zip(names, tri) if k] == ["TRIlong", "TRIlat", "TRImed"]
    shoulder_tri = display.filter_muscles(names, [spans[n] for n in names], "TRI", "shoulder")
    assert [n for n, k in zip(names, shoulder_tri) if k] == ["TRIlong"]


def test_sweep_tables_the_moment_arms_and_writes_its_files(arm26, tmp_path):
    sweep = display.moment_arm_sweep({"exact": arm26, "again": arm26}, "BIClong",
                                     "r_elbow_flex", {"r_shoulder_elev": 0.3}, samples=7)
    for j, x in enumerate(sweep.values):
        q = arm26.q_from({"r_shoulder_elev": 0.3, "r_elbow_flex": x})
        r = paths.moment_arms(arm26, q, arm26.muscles["BIClong"].path, ["r_elbow_flex"])[0]
        assert sweep.moment_arms[0, j] == r
    assert sweep.largest_difference_mm() == [0.0]
    display.write_sweep_csv(tmp_path / "t.csv", sweep)
    rows = list(csv.reader(open(tmp_path / "t.csv")))
    assert rows[0] == ["r_elbow_flex (rad)", "length exact (m)", "moment arm exact (m)",
                       "length again (m)", "moment arm again (m)"]
    np.testing.assert_array_equal(np.array(rows[1:], dtype=float)[:, 2], sweep.moment_arms[0])
    pytest.importorskip("matplotlib")
    display.write_sweep_png(tmp_path / "t.png", sweep)
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.png"]  # no temporaries


def test_sweep_refuses_what_it_cannot_plot(arm26):
    with pytest.raises(InvalidInputError, match="no muscle 'biceps'"):
        display.moment_arm_sweep({"exact": arm26}, "biceps", "r_elbow_flex")
    with pytest.raises(InvalidInputError, match="no coordinate 'knee'"):
        display.moment_arm_sweep({"exact": arm26}, "BIClong", "knee")
