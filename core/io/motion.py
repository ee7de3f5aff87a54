"""OpenSim motion and storage files (.mot / .sto): read and write.

A file is a header, a line ``endheader``, a line of column labels and rows of numbers. The
header of version 1 files (``version=1``) is ``key=value`` lines (``nRows``, ``nColumns``,
``inDegrees``) after a first line with the file's name; older files (no ``version``) name
their counts ``datarows`` / ``datacolumns`` (or ``nr`` / ``nc``) followed by a space, may say
``name NAME``, and may state their unit in the line ``Angles are in degrees.``. The counts
include the time column. Columns are separated by tabs or spaces.

The unit rule is OpenSim's (``Storage::parseHeaders``): ``inDegrees=yes`` (or ``y``, any
case) means degrees, any other value radians, and a file that does not say is in radians.
Only rotational coordinates are angles: :meth:`Motion.values_in_radians` converts those and
leaves translations in metres.

Problems raise :class:`~core.errors.InvalidInputError` naming the file and the line.
:func:`write_motion` writes version-1 files that OpenSim's ``Storage`` and
``TimeSeriesTable`` read, with every number as its shortest exact decimal (reading gives the
same float64), through :func:`~core.io.files.atomic_write`.
"""

import math
import os
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidInputError
from .fields import parse_count, parse_float
from .files import atomic_write, read_input

__all__ = ["Motion", "read_motion", "write_motion", "MAX_MOTION_LINES", "MAX_MOTION_CELLS"]

#: the most lines of a motion file (header, labels and rows; some 3 hours at 100 Hz),
#: counted before the text is split
MAX_MOTION_LINES = 10 ** 6
#: the most numbers of a motion file's rows (rows times columns), counted before they are read
MAX_MOTION_CELLS = 2 * 10 ** 7

#: header keys that hold the row and column counts, as OpenSim accepts them
_ROW_KEYS = ("nRows", "nr", "datarows")
_COLUMN_KEYS = ("nColumns", "nc", "datacolumns")
#: keys older files write with a space instead of "="
_SPACED_KEYS = {"name", "version", "inDegrees", "units", "range", *_ROW_KEYS, *_COLUMN_KEYS}


@dataclass(frozen=True, eq=False)
class Motion:
    """The content of a motion file.

    ``names``: the column labels after time; ``time: (N,)``; ``values: (N, C)`` float64, one
    column per name, in the file's units; ``in_degrees``: whether its angles are degrees;
    ``header``: the header's ``key=value`` lines (and the counts and name of older headers)
    as strings; ``name``: the file's name line.
    """

    names: tuple
    time: np.ndarray
    values: np.ndarray
    in_degrees: bool = False
    header: dict = field(default_factory=dict)
    name: str = ""

    def values_in_radians(self, is_rotational):
        """``values: (N, C)`` with the rotational columns in radians (a copy).

        ``is_rotational`` maps every column name to True for a rotational coordinate (an
        angle) or False for anything else (a translation in metres, a force...); in a file in
        radians nothing changes. InvalidInputError names the columns the mapping leaves out.
        """
        missing = [n for n in self.names if n not in is_rotational]
        if missing:
            raise InvalidInputError(f"values_in_radians: say whether these columns are "
                                    f"rotational (True) or not (False): {', '.join(missing)}")
        values = np.array(self.values, dtype=np.float64)
        if self.in_degrees:
            rotational = [bool(is_rotational[n]) for n in self.names]
            values[:, rotational] = np.deg2rad(values[:, rotational])
        return values


def _read_lines(path):
    raw = read_input(path, "motion")
    lines = raw.count(b"\n") + raw.count(b"\r") + 1   # at least the lines splitlines makes
    if lines > MAX_MOTION_LINES:
        raise InvalidInputError(f"{path} has more than {MAX_MOTION_LINES} lines, the most a "
                                "motion file may have: resample the motion to a lower rate or "
                                "split it into several files")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return text.splitlines()


def _count(path, header, keys, lines):
    """(count, line number) of the first of ``keys`` in ``header``, or (None, None)."""
    for key in keys:
        if key in header:
            try:
                return parse_count(header[key], key), lines[key]
            except InvalidInputError as exc:
                raise InvalidInputError(f"{path} line {lines[key]}: {exc}") from None
    return None, None


def _parse_header(path, lines):
    """(header dict, header line numbers by key, name, in_degrees, index of the line after
    ``endheader``)."""
    header, where, name, angles, first = {}, {}, "", None, True
    for i, line in enumerate(lines):
        line = line.strip()
        if not line:
            continue
        cut = min((line.find(c) for c in " \t=" if c in line), default=len(line))
        key, rest = line[:cut], line[cut:].lstrip(" \t=")
        if key == "endheader":
            break
        if "=" in line or key in _SPACED_KEYS:
            header[key], where[key] = rest, i + 1
            if key == "name":
                name = rest
        elif line in ("Angles are in degrees.", "Angles are in radians."):
            angles = line.endswith("degrees.")
        elif first:
            name = line
        first = False
    else:
        raise InvalidInputError(f"{path} has no line 'endheader': it is not an OpenSim motion "
                                f"or storage file, or it is truncated")
    version = header.get("version", "0").strip()
    if "inDegrees" in header:
        in_degrees = header["inDegrees"].strip().lower() in ("yes", "y")
    elif angles is not None and version in ("", "0"):
        in_degrees = angles
    else:
        in_degrees = False
    return header, where, name, in_degrees, i + 1


def _labels(path, line, number):
    labels = line.split("\t") if "\t" in line else line.split()
    labels = [label.strip() for label in labels]
    if "" in labels:
        raise InvalidInputError(f"{path} line {number}: column {labels.index('') + 1} has an "
                                f"empty label: name every column")
    seen = set()
    duplicates = [lab for lab in labels if lab in seen or seen.add(lab)]
    if duplicates:
        raise InvalidInputError(f"{path} line {number}: column labels "
                                f"{', '.join(sorted(set(duplicates)))} occur more than once: "
                                f"give every column its own name")
    return labels


def _row(path, line, number, labels):
    cells = line.split()
    if len(cells) != len(labels):
        raise InvalidInputError(f"{path} line {number}: {len(cells)} numbers but "
                                f"{len(labels)} column labels: every row needs one number a "
                                f"column")
    row = []
    for j, cell in enumerate(cells):
        try:
            value = parse_float(cell, "cell")
        except InvalidInputError:
            raise InvalidInputError(f"{path} line {number} column {j + 1} ({labels[j]}): "
                                    f"{cell!r} is not a number: correct the file") from None
        if not math.isfinite(value):
            raise InvalidInputError(f"{path} line {number} column {j + 1} ({labels[j]}): "
                                    f"{cell} is not a finite number: fill the gap (e.g. "
                                    f"interpolate) before importing")
        row.append(value)
    return row


def read_motion(path):
    """The :class:`Motion` in the .mot or .sto file ``path``.

    The time column is the one labelled ``time`` (any case), wherever it stands; the other
    columns keep their order. Blank lines are skipped.
    InvalidInputError naming the file (and the line) when it cannot be read, there is no
    ``endheader`` or no
    ``time`` column, column labels repeat, a row has the wrong number of cells or a cell is
    not a finite number, or the rows or columns disagree with the header's counts.
    """
    path = os.fspath(path)
    lines = _read_lines(path)
    header, where, name, in_degrees, start = _parse_header(path, lines)
    n_rows, rows_line = _count(path, header, _ROW_KEYS, where)
    n_columns, columns_line = _count(path, header, _COLUMN_KEYS, where)
    numbered = [(k + 1, line) for k, line in enumerate(lines[start:], start) if line.strip()]
    if not numbered:
        raise InvalidInputError(f"{path}: nothing follows 'endheader' (line {start}): the "
                                f"column labels and the data are missing")
    label_line, text = numbered[0]
    labels = _labels(path, text.strip(), label_line)
    if n_columns is not None and n_columns != len(labels):
        raise InvalidInputError(f"{path} line {columns_line}: the header says {n_columns} "
                                f"columns, line {label_line} has {len(labels)} labels: correct "
                                f"the count or the labels")
    lowered = [label.lower() for label in labels]
    if "time" not in lowered:
        raise InvalidInputError(f"{path} line {label_line}: no 'time' column among the labels "
                                f"({' '.join(labels[:5])}...): a motion needs its times")
    t = lowered.index("time")
    rows = numbered[1:]
    if not rows:
        raise InvalidInputError(f"{path}: no data rows after the labels on line {label_line}")
    if n_rows is not None and n_rows != len(rows):
        extra = f"; the first row beyond it is line {rows[n_rows][0]}" if len(rows) > n_rows \
            else ""
        raise InvalidInputError(f"{path} line {rows_line}: the header says {n_rows} rows, the "
                                f"file has {len(rows)} (lines {rows[0][0]}-{rows[-1][0]})"
                                f"{extra}: correct the count or restore the missing rows")
    if len(rows) * len(labels) > MAX_MOTION_CELLS:
        raise InvalidInputError(f"{path}: {len(rows)} rows of {len(labels)} columns are "
                                f"{len(rows) * len(labels)} numbers, more than the "
                                f"{MAX_MOTION_CELLS} a motion file may hold: resample the motion "
                                "or keep only the coordinates' columns")
    table = np.array([_row(path, line, number, labels) for number, line in rows],
                     dtype=np.float64).reshape(len(rows), len(labels))
    keep = [j for j in range(len(labels)) if j != t]
    return Motion(names=tuple(labels[j] for j in keep), time=table[:, t].copy(),
                  values=table[:, keep], in_degrees=in_degrees, header=header, name=name)


def write_motion(path, names, time, values, in_degrees=False, name=None):
    """Write a version-1 OpenSim motion file (.mot or .sto) to ``path``.

    ``names``: C column labels (no whitespace, unique, not ``time``); ``time: (N,)``;
    ``values: (N, C)``, finite; ``in_degrees`` is written as ``inDegrees=yes/no`` and must say
    the unit of the rotational columns; ``name``: the first line, by default the file's name
    without extension. Numbers are written as their shortest exact decimal, tab-separated.
    """
    path = os.fspath(path)
    names = tuple(names)
    if name is None:
        name = os.path.splitext(os.path.basename(path))[0]
    if not isinstance(name, str) or not name.strip() or "\n" in name or "\r" in name \
            or "=" in name:
        raise InvalidInputError(f"write_motion: name must be one line of text without '=', "
                                f"got {name!r}")
    for label in names:
        if not isinstance(label, str) or not label or label != "".join(label.split()):
            raise InvalidInputError(f"write_motion: column name {label!r} must be non-empty "
                                    f"text without spaces or tabs (OpenSim splits labels at "
                                    f"whitespace)")
        if label.lower() == "time":
            raise InvalidInputError("write_motion: 'time' is written as the first column; "
                                    "leave it out of names")
    if len(set(names)) != len(names):
        raise InvalidInputError("write_motion: column names repeat: give every column its "
                                "own name")
    time = np.asarray(time, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if time.ndim != 1 or len(time) == 0:
        raise InvalidInputError(f"write_motion: time must have shape (N,) with N >= 1, got "
                                f"{time.shape}")
    if values.shape != (len(time), len(names)):
        raise InvalidInputError(f"write_motion: values must have shape (N, C) = "
                                f"{(len(time), len(names))} for {len(time)} times and "
                                f"{len(names)} names, got {values.shape}")
    if not (np.all(np.isfinite(time)) and np.all(np.isfinite(values))):
        raise InvalidInputError("write_motion: time and values must be finite (no NaN or inf)")
    table = np.column_stack([time, values]).tolist()
    lines = [name.strip(), "version=1", f"nRows={len(time)}", f"nColumns={len(names) + 1}",
             f"inDegrees={'yes' if in_degrees else 'no'}", "endheader",
             "\t".join(("time",) + names)]
    lines += ["\t".join(map(repr, row)) for row in table]
    atomic_write(path, "\n".join(lines) + "\n")
