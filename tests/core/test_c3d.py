"""read_c3d: a file the c3d package writes comes back as a MarkerTrial (labels stripped, metres
from the POINT group's unit, NaN where a point is invalid); damaged files are refused by name."""

import io
import warnings

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.io.c3d import read_c3d

c3d = pytest.importorskip("c3d")

LABELS = ["LASI ", " RASI", "S2"]
RATE = 120.0


def write_trial(path, positions, invalid=(), units="mm", first_frame=1):
    """A C3D file of float points positions (N, M, 3) in ``units``; ``invalid``: (frame, point)
    pairs written with a negative residual (the format's mark of an invalid point)."""
    writer = c3d.Writer(point_rate=RATE, point_units=units)
    for k, frame in enumerate(positions):
        points = np.zeros((len(frame), 5), np.float32)
        points[:, :3] = frame
        for f, m in invalid:
            if f == k:
                points[m, 3] = -1.0
        writer.add_frames((points, np.zeros((0, 0))))
    writer.set_point_labels(LABELS)
    writer.set_start_frame(first_frame)
    buffer = io.BytesIO()
    with warnings.catch_warnings():  # the package warns that the file has no analog data
        warnings.simplefilter("ignore")
        writer.write(buffer)
    path.write_bytes(buffer.getvalue())
    return path


@pytest.fixture
def positions():
    return np.random.default_rng(3).uniform(-900.0, 900.0, (9, 3, 3)).astype(np.float32)


def test_round_trip_in_millimetres(tmp_path, positions):
    path = write_trial(tmp_path / "walk.c3d", positions, invalid=[(4, 1), (5, 1)])
    trial = read_c3d(path)
    assert trial.names == ("LASI", "RASI", "S2")
    assert trial.rate == RATE and trial.units == "mm"
    np.testing.assert_array_equal(trial.frames, np.arange(1, 10))
    np.testing.assert_allclose(trial.time, np.arange(9) / RATE, rtol=0, atol=1e-15)
    expected = positions.astype(np.float64) * 1e-3
    expected[4:6, 1] = np.nan
    # float32 in the file; the conversion to metres is one rounding of a product
    np.testing.assert_allclose(trial.positions, expected, rtol=2 * np.finfo(float).eps, atol=0)
    assert np.isnan(trial.marker("RASI")[4:6]).all() and np.isfinite(trial.marker("RASI")[[3, 6]]).all()


def test_units_from_the_point_group(tmp_path, positions):
    trial = read_c3d(write_trial(tmp_path / "m.c3d", positions * 1e-3, units="m"))
    assert trial.units == "m"
    np.testing.assert_allclose(trial.positions, (positions * np.float32(1e-3)).astype(float),
                               rtol=0, atol=0)


def test_frames_as_numbered_in_the_file(tmp_path, positions):
    trial = read_c3d(write_trial(tmp_path / "late.c3d", positions, first_frame=101))
    np.testing.assert_array_equal(trial.frames, np.arange(101, 110))
    assert trial.time[0] == pytest.approx(100 / RATE, rel=1e-15)


def test_truncated_file_is_refused(tmp_path, positions):
    path = write_trial(tmp_path / "walk.c3d", np.repeat(positions, 20, axis=0))
    data = path.read_bytes()
    cut = tmp_path / "cut.c3d"
    cut.write_bytes(data[:len(data) - 1024])
    with pytest.raises(InvalidInputError, match=r"cut\.c3d is truncated: .*180 frames"):
        read_c3d(cut)


def test_damaged_header_is_refused(tmp_path, positions):
    path = write_trial(tmp_path / "walk.c3d", positions)
    head = tmp_path / "head.c3d"
    head.write_bytes(path.read_bytes()[:600])
    with pytest.raises(InvalidInputError, match=r"head\.c3d"):
        read_c3d(head)
    junk = tmp_path / "junk.c3d"
    junk.write_bytes(b"not a c3d file at all")
    with pytest.raises(InvalidInputError, match=r"junk\.c3d"):
        read_c3d(junk)


def test_damaged_bytes_give_a_trial_or_a_clear_refusal(tmp_path, positions):
    """Bytes of a valid file overwritten at random (header, parameters, data): the reader
    returns a trial or raises InvalidInputError naming the file, never anything else."""
    data = bytearray(write_trial(tmp_path / "walk.c3d", positions).read_bytes())
    rng = np.random.default_rng(11)
    path = tmp_path / "damaged.c3d"
    for _ in range(60):
        damaged = bytearray(data)
        for where in rng.integers(0, len(data), size=rng.integers(1, 8)):
            damaged[int(where)] = int(rng.integers(0, 256))
        path.write_bytes(bytes(damaged))
        try:
            trial = read_c3d(path)
        except InvalidInputError as exc:
            assert "damaged.c3d" in str(exc)
        else:
            assert trial.positions.shape[1:] == (len(trial.names), 3)
