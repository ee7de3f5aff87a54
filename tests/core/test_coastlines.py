"""core/data/coastlines.json (written by scripts/make_coastlines.py) and its loader."""

from pathlib import Path

import numpy as np
import pytest

from core.reference import datasets as data


@pytest.fixture(scope="module")
def doc():
    return data.load("coastlines")


def test_provenance_fields_present(doc):
    assert "Natural Earth" in doc["attribution"]
    assert "public domain" in doc["licence"]
    assert "geopandas 0.14.4" in doc["source"]
    assert set(doc["closed"]) == set(doc["lines"])


def test_file_is_small():
    assert (data.DATA_DIR / "coastlines.json").stat().st_size < 100_000


def test_lines_are_finite_degrees_with_enough_points():
    lines = data.coastlines()
    assert {"africa", "eurasia", "north_america", "south_america", "australia"} <= set(lines)
    for name, pts in lines.items():
        assert pts.ndim == 2 and pts.shape[1] == 2, name
        assert 20 <= len(pts) <= 150, name
        assert np.all(np.isfinite(pts)), name
        assert np.all(np.abs(pts[:, 0]) <= 180.0), name
        assert np.all(np.abs(pts[:, 1]) <= 90.0), name
        steps = np.linalg.norm(np.diff(pts, axis=0), axis=1)
        assert np.all(steps > 0.0), f"{name} repeats a point"


def test_closed_rings_have_land_on_the_left(doc):
    """Counter-clockwise in (lon, lat): positive shoelace area, and not repeated at the end."""
    lines = data.coastlines()
    closed = [n for n, c in doc["closed"].items() if c]
    assert closed
    for name in closed:
        x, y = lines[name].T
        area = 0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y)
        assert area > 100.0, name  # square degrees; every continent is far larger
        assert not np.array_equal(lines[name][0], lines[name][-1]), name


def test_known_geography(doc):
    """Spot checks: Africa reaches the Cape (~34.8 S), South America Tierra del Fuego (~54 S)."""
    lines = data.coastlines()
    assert lines["africa"][:, 1].min() == pytest.approx(-34.8, abs=0.5)
    assert lines["south_america"][:, 1].min() == pytest.approx(-54.0, abs=1.0)
    assert lines["australia"][:, 0].min() > 110.0 and lines["australia"][:, 1].max() < -10.0
