"""Data files shipped with the core (read-only), located relative to this package.

* ``knee_gait2392.json``, ``scapulothoracic_seth2019.json``: OpenSim model numbers with
  provenance (see README.md in this folder); evaluated by :mod:`core.reference.opensim`.
* ``coastlines.json``: simplified Natural Earth coastlines for the globe demo, written by
  ``scripts/make_coastlines.py``.
"""

import json
from pathlib import Path

import numpy as np

from ..errors import InvalidInputError

__all__ = ["available", "load", "coastlines"]

_HERE = Path(__file__).resolve().parent


def available():
    """Names accepted by :func:`load` (JSON files in this folder, without extension)."""
    return sorted(p.stem for p in _HERE.glob("*.json"))


def load(name):
    """Parse ``core/data/<name>.json`` and return it as a dict (a fresh copy on every call).

    name: e.g. ``"knee_gait2392"`` (``".json"`` may be included).
    """
    stem = str(name)[:-5] if str(name).endswith(".json") else str(name)
    if stem not in available():
        raise InvalidInputError(
            f"no data file named {name!r} in core/data; choose one of {available()}."
        )
    with open(_HERE / f"{stem}.json", encoding="utf-8") as fh:
        return json.load(fh)


def coastlines():
    """Coastline polylines in degrees: ``{name: (N, 2) array of (lon, lat)}``.

    Longitude in [-180, 180], latitude in [-90, 90]. Provenance, licence and attribution are in
    ``load("coastlines")`` (keys ``source``, ``licence``, ``attribution``); whether each line is
    a closed ring is in its ``closed`` mapping.
    """
    doc = load("coastlines")
    return {name: np.asarray(pts, dtype=float).reshape(-1, 2) for name, pts in doc["lines"].items()}
