"""C3D motion-capture files: their 3-D points as a :class:`~core.io.markers.MarkerTrial`.

Read through the pure-Python ``c3d`` package (pinned in the requirements; the extension zip
ships its one ``py3-none-any`` wheel). What is taken from the file:

* the points' labels from ``POINT:LABELS`` (continued in ``LABELS2``, ``LABELS3``... for
  files of more than 255 points), surrounding blanks stripped; a point without a label is
  named ``M<number>`` (``M001`` for the first point);
* the rate from ``POINT:RATE`` (the header's when the parameter is missing);
* the unit from ``POINT:UNITS`` (``mm``, ``cm``, ``m``...; millimetres when the parameter is
  missing, as the C3D format's default), positions converted to metres;
* a point is invalid on a frame (a gap, NaN) when its residual is negative, as the format
  marks it; the package also marks non-finite coordinates invalid.

Frames are numbered as the file numbers them (its first frame need not be 1); the time of
frame ``f`` is ``(f - 1) / rate``, as a .trc exported from the same capture writes it.
Problems raise :class:`~core.errors.InvalidInputError` naming the file: unreadable header or
parameters, a truncated data section (fewer frames than the header announces), a unit or rate
that cannot be used, repeated labels.
"""

import io
import os
import warnings

import numpy as np

from ..errors import InvalidInputError
from .files import read_input
from .markers import UNITS, MarkerTrial

__all__ = ["read_c3d"]


def _labels(reader, count):
    """The ``count`` point labels of the POINT group, stripped (``M<k>`` for an empty one)."""
    labels = []
    for key in ["LABELS"] + [f"LABELS{k}" for k in range(2, 100)]:
        param = reader.get(f"POINT:{key}")
        if param is None:
            break
        labels += [str(s).strip() for s in np.ravel(param.string_array)]
    labels = (labels + [""] * count)[:count]
    return tuple(label or f"M{k + 1:03d}" for k, label in enumerate(labels))


def _units(reader):
    param = reader.get("POINT:UNITS")
    text = "" if param is None else str(param.string_value).strip()
    return text or "mm"


def read_c3d(path) -> MarkerTrial:
    """The 3-D points of the C3D file ``path`` as a :class:`MarkerTrial` (metres, NaN where a
    point is invalid). InvalidInputError naming the file when it cannot be used (see the module
    docstring)."""
    try:
        import c3d
    except ImportError:
        raise InvalidInputError("reading .c3d files needs the 'c3d' package, which the extension "
                                "ships: reinstall the extension (or pip install c3d==0.6.0)") \
            from None
    path = os.fspath(path)
    data = read_input(path, "C3D file")
    with warnings.catch_warnings():  # the package warns of a short file; counted below
        warnings.simplefilter("ignore")
        try:
            reader = c3d.Reader(io.BytesIO(data))
            rate = float(reader.point_rate)
            count = int(reader.point_used)
            expected = int(reader.frame_count)
            labels = _labels(reader, count)
            units = _units(reader)
            frames, rows = [], []
            for number, points, _analog in reader.read_frames(copy=True):
                frames.append(number)
                xyz = points[:, :3].astype(np.float64)
                xyz[points[:, 3] < 0.0] = np.nan
                rows.append(xyz)
        except Exception as exc:  # the package's struct/index/value errors on a damaged file
            raise InvalidInputError(f"cannot read C3D file {path}: its header or parameters are "
                                    f"damaged or it is no C3D file ({type(exc).__name__}); export "
                                    "it again from the capture software") from None
    if len(rows) < expected:
        raise InvalidInputError(f"C3D file {path} is truncated: its header announces {expected} "
                                f"frames, the data section holds {len(rows)}; copy or export the "
                                "file again")
    if not (np.isfinite(rate) and rate > 0.0):
        raise InvalidInputError(f"C3D file {path}: its point rate is {rate} Hz; a trial needs a "
                                "positive rate (POINT:RATE)")
    if count == 0 or not rows:
        raise InvalidInputError(f"C3D file {path} holds no 3-D points ({count} points, "
                                f"{len(rows)} frames): choose a file with marker data")
    repeated = sorted({n for n in labels if labels.count(n) > 1})
    if repeated:
        raise InvalidInputError(f"C3D file {path}: the point labels {', '.join(repeated[:5])} "
                                "repeat; rename the points so that each label is used once")
    if units.lower() not in UNITS:
        raise InvalidInputError(f"C3D file {path}: its point unit (POINT:UNITS) {units!r} is "
                                f"not one of {', '.join(UNITS)}; set the unit in the capture "
                                "software's export")
    scale = UNITS[units.lower()]
    frame_numbers = np.asarray(frames, dtype=np.int64)
    return MarkerTrial(names=labels, time=(frame_numbers - 1) / rate,
                       positions=np.stack(rows) * scale, rate=rate, units=units,
                       frames=frame_numbers, source=path)
