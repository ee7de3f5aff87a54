"""Loaders for the data files in ``core/data/`` (read-only JSON, located relative to this file).

``core/data/`` is a plain resource folder, deliberately without ``__init__.py``: the module
``core.data`` is the dynamics work-array module (``core/data.py``), which a package of the same
name would shadow.

* ``knee_gait2392.json``, ``scapulothoracic_seth2019.json``: OpenSim model numbers with
  provenance (``core/data/README.md``); evaluated by :mod:`core.reference.opensim`.
* ``coastlines.json``: simplified Natural Earth coastlines for the globe demo, written by
  ``scripts/make_coastlines.py``.
* ``gait2392_geometry/*.vtp``: six gait2392 bone meshes of the right leg for the knee demos,
  read by :func:`bone_mesh` (:func:`core.io.vtp.read_vtp`).
"""

import json
from pathlib import Path

import numpy as np

from ..errors import InvalidInputError

__all__ = ["DATA_DIR", "available", "load", "coastlines", "bone_mesh", "BONE_MESHES"]

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
#: the gait2392 bone meshes shipped in ``core/data/gait2392_geometry`` (each in the frame of
#: its OpenSim body: femur_r; tibia_r and fibula in tibia_r; talus, foot and bofoot in
#: talus_r, calcn_r and toes_r)
BONE_MESHES = ("femur_r", "tibia_r", "fibula", "talus", "foot", "bofoot")


def available():
    """Names accepted by :func:`load` (JSON files in ``core/data``, without extension)."""
    return sorted(p.stem for p in DATA_DIR.glob("*.json"))


def load(name):
    """Parse ``core/data/<name>.json`` and return it as a dict (a fresh copy on every call).

    name: e.g. ``"knee_gait2392"`` (``".json"`` may be included).
    """
    stem = str(name)[:-5] if str(name).endswith(".json") else str(name)
    if stem not in available():
        raise InvalidInputError(
            f"no data file named {name!r} in core/data; choose one of {available()}."
        )
    with open(DATA_DIR / f"{stem}.json", encoding="utf-8") as fh:
        return json.load(fh)


def coastlines():
    """Coastline polylines in degrees: ``{name: (N, 2) array of (lon, lat)}``.

    Longitude in [-180, 180], latitude in [-90, 90]. Provenance, licence and attribution are in
    ``load("coastlines")`` (keys ``source``, ``licence``, ``attribution``); whether each line is
    a closed ring (counter-clockwise, land on the left) is in its ``closed`` mapping.
    """
    doc = load("coastlines")
    return {name: np.asarray(pts, dtype=float).reshape(-1, 2) for name, pts in doc["lines"].items()}


def bone_mesh(name):
    """A gait2392 bone mesh of :data:`BONE_MESHES` as ``(vertices (V, 3), triangles (T, 3))``
    in metres, in its OpenSim body's frame (read from ``core/data/gait2392_geometry``)."""
    from ..io.vtp import read_vtp

    if name not in BONE_MESHES:
        raise InvalidInputError(f"no bone mesh named {name!r} in core/data/gait2392_geometry; "
                                f"choose one of {BONE_MESHES}")
    mesh = read_vtp(DATA_DIR / "gait2392_geometry" / f"{name}.vtp")
    return mesh.vertices, mesh.faces
