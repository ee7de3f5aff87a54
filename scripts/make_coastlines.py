"""Write core/data/coastlines.json: a few long, simplified coastlines for the globe demo.

How the committed file was made (the package is NOT a dependency of the project; run this in
a throw-away environment):

    python3.11 -m venv /tmp/coastvenv
    /tmp/coastvenv/bin/pip install pyshp shapely numpy scipy   # scipy: core.io (atomic write)
    /tmp/coastvenv/bin/pip install --no-deps geopandas==0.14.4
    /tmp/coastvenv/bin/python scripts/make_coastlines.py

Source: the ``naturalearth_lowres`` shapefile that geopandas 0.14.4 ships in
``geopandas/datasets/`` (Natural Earth 1:110m Admin 0 Countries; Natural Earth data are in the
public domain; geopandas itself is BSD-3-Clause). geopandas is located with importlib but not
imported (importing it would need pandas); the shapefile is read with pyshp.

Method, per outline: union of the country polygons of the listed continents (shapely
``unary_union``), the exterior ring of the largest resulting polygon oriented counter-clockwise
in (lon, lat) (land on the left), opened where it runs along the +-180 deg meridian (an
artefact of the antimeridian cut, not a coast), then Douglas-Peucker simplification
(shapely ``simplify`` with ``preserve_topology=False``) with the tolerance bisected so that
the line keeps at most its target vertex count (80-150, see OUTLINES), rounded to 1e-4 deg.
"""

import argparse
import importlib.metadata
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import shapefile
import shapely
from shapely.geometry import LineString, MultiPolygon, Polygon, shape
from shapely.geometry.polygon import orient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core.io import atomic_write  # noqa: E402

OUTLINES = {  # name -> (continents in Natural Earth's `continent` field, target point count)
    "africa": (("Africa",), 100),
    "eurasia": (("Europe", "Asia"), 150),
    "north_america": (("North America",), 140),
    "south_america": (("South America",), 100),
    "australia": (("Oceania",), 80),
}
ANTIMERIDIAN = 180.0 - 1e-9
OUT = Path(__file__).resolve().parents[1] / "core" / "data" / "coastlines.json"


def shapefile_path():
    spec = importlib.util.find_spec("geopandas")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("geopandas 0.14.4 is not installed in this environment; see the docstring.")
    root = Path(spec.submodule_search_locations[0])
    path = root / "datasets" / "naturalearth_lowres" / "naturalearth_lowres.shp"
    if not path.exists():
        raise SystemExit(f"{path} not found: geopandas >= 1.0 no longer ships it; use 0.14.4.")
    return path


def largest_outline(reader, continents):
    polys = [shape(sr.shape.__geo_interface__) for sr in reader.iterShapeRecords()
             if sr.record["continent"] in continents]
    merged = shapely.unary_union(polys)
    parts = list(merged.geoms) if isinstance(merged, MultiPolygon) else [merged]
    biggest = max(parts, key=lambda p: p.area)
    ring = np.asarray(orient(Polygon(biggest.exterior), sign=1.0).exterior.coords)
    return ring  # (N, 2), closed: ring[0] == ring[-1]


def open_at_antimeridian(ring):
    """Drop segments that lie on lon = +-180; return (polyline, closed)."""
    on_cut = (np.abs(ring[:-1, 0]) >= ANTIMERIDIAN) & (np.abs(ring[1:, 0]) >= ANTIMERIDIAN)
    if not on_cut.any():
        return ring[:-1], True
    pts = ring[:-1]
    n = len(pts)
    pieces, current = [], []
    start = int(np.flatnonzero(on_cut)[0]) + 1  # begin right after a cut segment
    for j in range(n):
        i = (start + j) % n
        current.append(pts[i])
        if on_cut[i]:  # segment i -> i+1 is on the cut: close this piece
            pieces.append(np.array(current))
            current = []
    if current:
        pieces.append(np.array(current))
    return max(pieces, key=len), False


def simplify(line, closed, target):
    coords = np.vstack([line, line[:1]]) if closed else line
    geom = LineString(coords)
    lo, hi = 0.0, 10.0
    best = coords
    for _ in range(60):
        tol = 0.5 * (lo + hi)
        pts = np.asarray(geom.simplify(tol, preserve_topology=False).coords)
        if len(pts) > target:
            lo = tol
        else:
            hi = tol
            best = pts
    if closed:
        best = best[:-1]
    return np.round(best, 4)


def to_json(doc):
    """Pretty JSON with one [lon, lat] point per line (readable diffs, small file)."""
    head = {k: v for k, v in doc.items() if k != "lines"}
    text = json.dumps(head, indent=1)[:-2]  # drop the closing "\n}"
    blocks = []
    for name, pts in doc["lines"].items():
        body = ",\n".join(f"   [{lon}, {lat}]" for lon, lat in pts)
        blocks.append(f"  {json.dumps(name)}: [\n{body}\n  ]")
    return text + ',\n "lines": {\n' + ",\n".join(blocks) + "\n }\n}\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    shp = shapefile_path()
    version = importlib.metadata.version("geopandas")
    reader = shapefile.Reader(str(shp))
    lines, closed = {}, {}
    for name, (continents, target) in OUTLINES.items():
        line, is_closed = open_at_antimeridian(largest_outline(reader, continents))
        pts = simplify(line, is_closed, target)
        lines[name] = pts.tolist()
        closed[name] = is_closed
        print(f"{name:14s} {len(line):5d} -> {len(pts):4d} points, closed={is_closed}")

    doc = {
        "source": (f"PyPI package geopandas {version}, file geopandas/datasets/naturalearth_lowres/"
                   "naturalearth_lowres.shp (Natural Earth 1:110m Admin 0 Countries, as "
                   "redistributed by geopandas)"),
        "licence": ("Natural Earth data are in the public domain (Natural Earth terms of use, "
                    "naturalearthdata.com/about/terms-of-use). The geopandas package that "
                    "carried the file is BSD-3-Clause; no geopandas code is included."),
        "attribution": "Made with Natural Earth. Free vector and raster map data @ naturalearthdata.com.",
        "method": ("scripts/make_coastlines.py: union of country polygons per continent, exterior "
                   "ring of the largest polygon, counter-clockwise in (lon, lat) so land is on "
                   "the left, opened where it runs along lon = +-180, Douglas-Peucker simplified "
                   "to 80-150 points per line, rounded to 1e-4 deg. Where two continents meet "
                   "(Suez/Sinai, Panama-Colombia) a short stretch follows the land border."),
        "units": "degrees; each point is [longitude, latitude], longitude in [-180, 180]",
        "closed": closed,
        "lines": lines,
    }
    atomic_write(args.out, to_json(doc))
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
