"""OpenSim motion files (core.io.motion): the shipped IK result, old headers, exact round trips,
OpenSim 4.6 reading what we write (Python 3.13 environment only), and the refusals."""

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from core.errors import InvalidInputError
from core.io import Motion, read_motion, write_motion

WALK = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "osim" / \
    "subject01_walk1_ik.mot"
needs_walk = pytest.mark.skipif(not WALK.exists(), reason="shared/data is not beside this checkout")

GAIT2392_COORDINATES = (
    "pelvis_tilt pelvis_list pelvis_rotation pelvis_tx pelvis_ty pelvis_tz hip_flexion_r "
    "hip_adduction_r hip_rotation_r knee_angle_r ankle_angle_r subtalar_angle_r mtp_angle_r "
    "hip_flexion_l hip_adduction_l hip_rotation_l knee_angle_l ankle_angle_l subtalar_angle_l "
    "mtp_angle_l lumbar_extension lumbar_bending lumbar_rotation").split()


@pytest.fixture
def opensim():
    """OpenSim 4.6 (Python 3.13 environment only), without its log file in the working folder."""
    module = pytest.importorskip("opensim")
    module.Logger.removeFileSink()
    return module


def _write(tmp_path, text, name="m.mot"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _refused(path, match):
    with pytest.raises(InvalidInputError, match=match) as info:
        read_motion(path)
    assert str(path) in str(info.value)


# -- the shipped IK result -------------------------------------------------------------------


@needs_walk
def test_the_shipped_ik_motion_reads():
    m = read_motion(WALK)
    assert m.name == "Coordinates" and m.in_degrees is True
    assert m.names == tuple(GAIT2392_COORDINATES)
    assert m.time.shape == (211,) and m.values.shape == (211, 23)
    assert m.header == {"version": "1", "nRows": "211", "nColumns": "24", "inDegrees": "yes"}
    lines = WALK.read_text().splitlines()
    rows = [line for line in lines[lines.index("endheader") + 2:] if line.strip()]
    for i, line in ((0, rows[0]), (-1, rows[-1])):
        expected = [float(cell) for cell in line.split()]
        assert [m.time[i]] + m.values[i].tolist() == expected
    assert m.time[0] == 0.5 and m.time[-1] == 4.0
    assert m.values[0, 0] == 4.76281529


@needs_walk
def test_only_rotational_columns_are_converted_to_radians():
    m = read_motion(WALK)
    translations = {"pelvis_tx", "pelvis_ty", "pelvis_tz"}
    rad = m.values_in_radians({n: n not in translations for n in m.names})
    for j, name in enumerate(m.names):
        expected = m.values[:, j] if name in translations else m.values[:, j] * math.pi / 180
        assert np.allclose(rad[:, j], expected, rtol=1e-15, atol=0), name
    assert rad[0, m.names.index("pelvis_ty")] == 1.03324624  # metres stay metres
    assert m.values[0, 0] == 4.76281529  # a copy: the motion is unchanged
    with pytest.raises(InvalidInputError, match="rotational.*: lumbar_bending, lumbar_rotation"):
        m.values_in_radians({n: True for n in m.names[:-2]})


def test_a_motion_in_radians_is_returned_unchanged(tmp_path):
    write_motion(tmp_path / "r.mot", ["a", "b"], [0.0, 1.0], [[1.0, 2.0], [3.0, 4.0]])
    m = read_motion(tmp_path / "r.mot")
    assert m.in_degrees is False
    assert m.values_in_radians({"a": True, "b": False}).tolist() == [[1.0, 2.0], [3.0, 4.0]]


# -- headers ---------------------------------------------------------------------------------


def test_a_header_without_in_degrees_means_radians(tmp_path):
    """OpenSim's Storage::setNull sets _inDegrees = false; parseHeaders changes it only on an
    inDegrees line (or, in files without a version, 'Angles are in degrees.')."""
    path = _write(tmp_path, "motion\nversion=1\nnRows=1\nnColumns=2\nendheader\ntime\ta\n0\t1\n")
    assert read_motion(path).in_degrees is False
    for value, degrees in (("yes", True), ("Y", True), ("YES", True), ("no", False),
                           ("true", False)):
        path = _write(tmp_path, f"m\nversion=1\ninDegrees={value}\nendheader\ntime a\n0 1\n")
        assert read_motion(path).in_degrees is degrees, value


def test_an_old_header_without_version(tmp_path):
    path = _write(tmp_path, "name walk trial\ndatacolumns 3\ndatarows 2\nrange 0 0.01\n"
                            "Angles are in degrees.\nendheader\n\n"
                            "time   knee  pelvis_tx\n0.0  10.5  0.25\n0.01  11  0.5\n\n")
    m = read_motion(path)
    assert m.name == "walk trial" and m.names == ("knee", "pelvis_tx") and m.in_degrees
    assert m.header == {"name": "walk trial", "datacolumns": "3", "datarows": "2",
                        "range": "0 0.01"}
    assert m.time.tolist() == [0.0, 0.01] and m.values.tolist() == [[10.5, 0.25], [11, 0.5]]
    # the name on the first line, counts as key=value, no unit line: radians
    path = _write(tmp_path, "Coordinates\nnRows=1\nnColumns=2\nendheader\ntime a\n0 1\n")
    m = read_motion(path)
    assert m.name == "Coordinates" and not m.in_degrees and m.names == ("a",)
    # a version-1 file ignores the old unit sentence, as OpenSim does
    path = _write(tmp_path, "c\nversion=1\nAngles are in degrees.\nendheader\ntime a\n0 1\n")
    assert read_motion(path).in_degrees is False


def test_time_need_not_be_the_first_column_and_tabs_allow_spaces_in_labels(tmp_path):
    path = _write(tmp_path, "m\nendheader\nknee angle\tTime\tb\n1 0.5 2\n3 0.6 4\n")
    m = read_motion(path)
    assert m.names == ("knee angle", "b") and m.time.tolist() == [0.5, 0.6]
    assert m.values.tolist() == [[1, 2], [3, 4]]


def test_windows_line_ends_and_latin1_text(tmp_path):
    path = tmp_path / "w.mot"
    path.write_bytes("Mouvement \xe9\r\nversion=1\r\nnRows=1\r\nnColumns=2\r\nendheader\r\n"
                     "time\ta\r\n0\t1e-3\r\n".encode("latin-1"))
    m = read_motion(path)
    assert m.name == "Mouvement \xe9" and m.values.tolist() == [[1e-3]]


# -- writing ---------------------------------------------------------------------------------


@needs_walk
def test_the_shipped_motion_round_trips_bit_exactly(tmp_path):
    m = read_motion(WALK)
    write_motion(tmp_path / "w.mot", m.names, m.time, m.values, in_degrees=True, name=m.name)
    back = read_motion(tmp_path / "w.mot")
    assert back.names == m.names and back.in_degrees and back.name == "Coordinates"
    assert np.array_equal(back.time, m.time) and np.array_equal(back.values, m.values)
    assert back.header == m.header
    assert [p.name for p in tmp_path.iterdir()] == ["w.mot"]


FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)


@given(table=hnp.arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 4)),
                        elements=FLOATS),
       degrees=st.booleans())
def test_round_trip_is_bit_exact(tmp_path_factory, table, degrees):
    path = tmp_path_factory.mktemp("m") / "t.sto"
    names = [f"c{j}" for j in range(table.shape[1] - 1)] + ["knee_angle_r"]
    write_motion(path, names, table[:, 0], table, in_degrees=degrees)
    back = read_motion(path)
    assert back.names == tuple(names) and back.in_degrees is degrees and back.name == "t"
    assert back.time.view(np.int64).tolist() == table[:, 0].view(np.int64).tolist()
    assert back.values.view(np.int64).tolist() == table.view(np.int64).tolist()


def test_the_written_text(tmp_path):
    write_motion(tmp_path / "a.mot", ["hip", "x"], [0.0, 0.1], [[-0.0, 1e-300], [1 / 3, 2.0]],
                 in_degrees=True, name="IK")
    assert (tmp_path / "a.mot").read_text() == (
        "IK\nversion=1\nnRows=2\nnColumns=3\ninDegrees=yes\nendheader\ntime\thip\tx\n"
        "0.0\t-0.0\t1e-300\n0.1\t0.3333333333333333\t2.0\n")


@pytest.mark.parametrize("args,match", [
    ((["a b"], [0.0], [[1.0]]), "without spaces or tabs"),
    ((["a", "a"], [0.0], [[1.0, 2.0]]), "names repeat"),
    ((["time"], [0.0], [[1.0]]), "leave it out of names"),
    ((["a"], [0.0, 1.0], [[1.0]]), r"shape \(N, C\) = \(2, 1\)"),
    ((["a"], [], np.zeros((0, 1))), "N >= 1"),
    ((["a"], [0.0], [[math.nan]]), "finite"),
    ((["a"], [math.inf], [[1.0]]), "finite"),
    (([""], [0.0], [[1.0]]), "non-empty"),
])
def test_write_refuses_what_opensim_could_not_read(tmp_path, args, match):
    path = _write(tmp_path, "old")
    with pytest.raises(InvalidInputError, match=match):
        write_motion(path, *args)
    with pytest.raises(InvalidInputError, match="one line of text"):
        write_motion(path, ["a"], [0.0], [[1.0]], name="two\nlines")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["m.mot"]


def test_opensim_reads_what_we_write(tmp_path, opensim):
    rng = np.random.default_rng(3)
    names = ["knee_angle_r", "pelvis_tx", "hip_flexion_r"]
    time = np.linspace(0.0, 1.0, 7) + 1e-17
    values = rng.normal(size=(7, 3)) * [90.0, 1e-3, 1e5]
    values[0] = [-0.0, 5e-324, 1 / 3]
    path = tmp_path / "ours.sto"
    write_motion(path, names, time, values, in_degrees=True, name="ours")

    table = opensim.TimeSeriesTable(str(path))
    assert list(table.getColumnLabels()) == names
    assert np.array_equal(np.asarray(table.getIndependentColumn()), time)
    assert np.array_equal(table.getMatrix().to_numpy(), values)
    assert table.getTableMetaDataAsString("inDegrees") == "yes"

    storage = opensim.Storage(str(path))
    assert storage.isInDegrees() and storage.getSize() == 7
    assert [storage.getColumnLabels().get(i) for i in range(4)] == ["time"] + names
    for j, name in enumerate(names):
        column = opensim.ArrayDouble()
        storage.getDataColumn(name, column)
        assert [column.get(i) for i in range(column.getSize())] == values[:, j].tolist()


def test_opensim_and_we_agree_on_a_file_without_in_degrees(tmp_path, opensim):
    path = _write(tmp_path, "m\nversion=1\nnRows=1\nnColumns=2\nendheader\ntime\ta\n0\t1\n")
    assert opensim.Storage(str(path)).isInDegrees() is read_motion(path).in_degrees is False


@needs_walk
def test_opensim_reads_the_shipped_motion_as_we_do(opensim):
    m = read_motion(WALK)
    table = opensim.TimeSeriesTable(str(WALK))
    assert tuple(table.getColumnLabels()) == m.names
    assert np.array_equal(table.getMatrix().to_numpy(), m.values)
    assert opensim.Storage(str(WALK)).isInDegrees() is m.in_degrees


# -- refusals --------------------------------------------------------------------------------


def test_a_missing_time_column_is_refused(tmp_path):
    path = _write(tmp_path, "m\nversion=1\nnRows=1\nnColumns=2\nendheader\nframe\ta\n0\t1\n")
    _refused(path, r"line 6: no 'time' column among the labels")


ROWS = "m\nversion=1\nnRows=3\nnColumns=2\ninDegrees=no\nendheader\ntime\ta\n"
COLUMNS = "m\nversion=1\nnRows=2\nnColumns=3\nendheader\ntime\ta\tb\n"


@pytest.mark.parametrize("text,match", [
    # rows that disagree with nRows: the message names the header line and the rows' lines
    (ROWS + "0\t1\n1\t2\n",
     r"line 3: the header says 3 rows, the file has 2 \(lines 8-9\): correct the count"),
    (ROWS + "0 1\n1 2\n2 3\n3 4\n",
     r"line 3: the header says 3 rows, the file has 4 \(lines 8-11\); the first row beyond it "
     r"is line 11"),
    (ROWS.replace("nRows=3", "nRows=three") + "0 1\n", r"line 3: nRows 'three' is not a count"),
    # columns that disagree with the labels or nColumns
    (COLUMNS + "0\t1\t2\n1\t2\n", r"line 8: 2 numbers but 3 column labels"),
    (COLUMNS.replace("nColumns=3", "nColumns=4") + "0 1 2\n1 2 3\n",
     r"line 4: the header says 4 columns, line 6 has 3 labels"),
    # cells that are not finite numbers: line and column
    (COLUMNS + "0\t1\t2\n1\t2\tthree\n", r"line 8 column 3 \(b\): 'three' is not a number"),
    (COLUMNS + "0\t1\t2\n1\t1_000\t3\n", r"line 8 column 2 \(a\): '1_000' is not a number"),
    (COLUMNS + "0\t1\t2\n1\tnan\t3\n", r"line 8 column 2 \(a\): nan is not a finite number"),
])
def test_rows_columns_and_cells_that_disagree_are_refused(tmp_path, text, match):
    _refused(_write(tmp_path, text), match)


def test_duplicate_column_names_are_refused(tmp_path):
    path = _write(tmp_path, "m\nendheader\ntime\ta\tb\ta\ttime\n0 1 2 3 4\n")
    _refused(path, r"line 3: column labels a, time occur more than once")
    _refused(_write(tmp_path, "m\nendheader\ntime\t\ta\n0 1 2\n"), "column 2 has an empty label")


def test_files_that_are_not_motions_are_refused(tmp_path):
    _refused(_write(tmp_path, "time a\n0 1\n"), "has no line 'endheader'")
    _refused(_write(tmp_path, ""), "has no line 'endheader'")
    _refused(_write(tmp_path, "m\nendheader\n\n"), "nothing follows 'endheader'")
    _refused(_write(tmp_path, "m\nendheader\ntime a\n"), "no data rows after the labels on line 3")
    _refused(tmp_path / "missing.mot", "cannot read motion .*missing.mot: No such file")
    _refused(tmp_path, "cannot read motion .*: is a folder, not a file")


def test_motion_is_a_plain_record():
    m = Motion(names=("a",), time=np.zeros(1), values=np.zeros((1, 1)))
    assert m.in_degrees is False and m.header == {} and m.name == ""
