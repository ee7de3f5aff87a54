"""Markers: OpenSim marker sets and marker trials (.trc), read and written without OpenSim.

A *model marker* (:class:`Marker`) is a point fixed in a body: OpenSim's ``Marker`` with its
body and its location in the body frame (m). A marker set is read from an OpenSim MarkerSet
file (:func:`read_marker_set`; OpenSim 3.x markers name their ``<body>``, 4.x markers their
``<socket_parent_frame>``) or from the MarkerSet inside a model
(:attr:`core.io.osim.OsimModel.markers`).

A *marker trial* (:class:`MarkerTrial`) is what a motion-capture system recorded: the
positions of labelled markers over time. :func:`read_trc` reads OpenSim's ``.trc`` text
format (``PathFileType 4``): a header of three lines (the file type, then the names and the
values of ``DataRate``, ``CameraRate``, ``NumFrames``, ``NumMarkers``, ``Units``...), a line
``Frame# Time`` followed by the marker labels (one per three columns), a line of ``X1 Y1 Z1
...`` and rows of the frame number, the time and three coordinates per marker. An empty
field (or ``NaN``) is a gap: the marker was not seen in that frame. Positions are converted
to metres from the header's ``Units`` (``mm``, ``cm``, ``m``); the unit as written is kept in
:attr:`MarkerTrial.units`.

Problems (a missing header field, a row whose column count differs from the labels', an
unknown unit, a marker label given twice) raise :class:`~core.errors.InvalidInputError`
naming the file and the line.
"""

import dataclasses
import math
import os
import xml.etree.ElementTree as ET

import numpy as np

from ..errors import InvalidInputError
from .fields import parse_count, parse_float
from .files import atomic_write, read_input

__all__ = ["Marker", "MarkerTrial", "read_marker_set", "parse_marker_set", "marker_elements",
           "read_trc", "parse_trc", "write_trc", "UNITS"]

#: metres per unit of a trial's ``Units`` header field
UNITS = {"mm": 1e-3, "cm": 1e-2, "dm": 1e-1, "m": 1.0, "meters": 1.0, "millimeters": 1e-3}

#: how a .trc field says the marker was not seen
_GAPS = ("", "nan")


@dataclasses.dataclass
class Marker:
    """A model marker: ``location (3,)`` in the frame of ``body`` (m); ``fixed`` markers stay
    where they are when OpenSim's MarkerPlacer moves the others onto a static trial."""

    name: str
    body: str
    location: np.ndarray
    fixed: bool = False


# ----------------------------------------------------------------------------- marker sets
def read_marker_set(path):
    """The markers of an OpenSim MarkerSet file, ``{name: Marker}`` in file order."""
    path = os.fspath(path)
    return parse_marker_set(read_input(path, "OpenSim marker set"), source=path)


def parse_marker_set(data, source="<string>"):
    """Parse the bytes or text of a MarkerSet file (``source`` names it in messages).

    The file's root holds a ``<MarkerSet>`` (inside ``<OpenSimDocument>`` or alone). A 4.x
    marker's ``socket_parent_frame`` must name a body (``/bodyset/NAME`` or ``/ground``):
    offset frames are known only inside a model."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise InvalidInputError(f"{source}: not a complete XML file ({exc}); the file is "
                                "truncated or not an OpenSim marker set") from None
    marker_set = root if root.tag == "MarkerSet" else root.find("MarkerSet")
    if marker_set is None:
        raise InvalidInputError(f"{source}: no <MarkerSet> element: not an OpenSim marker "
                                "set file")

    def body_of(frame, marker):
        name = frame.rstrip("/").rpartition("/")[2]
        if frame.strip("/") not in ("ground", f"bodyset/{name}"):
            raise InvalidInputError(f"{source}: marker {marker!r}: socket_parent_frame "
                                    f"{frame!r} is not "
                                    "a body; in a marker set file a marker is on a body "
                                    "(/bodyset/NAME or /ground)")
        return name

    return marker_elements(marker_set, source, body_of)


def marker_elements(marker_set, source, body_of):
    """``{name: Marker}`` from the ``<Marker>`` elements of a ``<MarkerSet>`` element.

    ``body_of(frame, marker) -> body`` resolves the 4.x ``socket_parent_frame`` of the
    marker named ``marker``; it may also
    return ``(body, T)`` with the frame's pose ``T (4, 4)`` in that body, in which case the
    location is carried into the body frame."""
    markers = {}
    objects = marker_set.find("objects")
    for el in (objects if objects is not None else marker_set):
        if el.tag != "Marker":
            continue
        name = el.get("name", "").strip()
        where = f"marker {name!r}"
        if not name:
            raise InvalidInputError(f"{source}: a Marker has no name; name every marker")
        if name in markers:
            raise InvalidInputError(f"{source}: {where} is given twice; marker names must be "
                                    "unique")
        socket = (el.findtext("socket_parent_frame") or "").strip()
        body = (el.findtext("body") or "").strip()
        T = np.eye(4)
        if socket:
            found = body_of(socket, name)
            body, T = found if isinstance(found, tuple) else (found, T)
        if not body:
            raise InvalidInputError(f"{source}: {where} names no body (<body> or "
                                    "<socket_parent_frame>); say which body it is on")
        text = (el.findtext("location") or "").split()
        if len(text) != 3:
            raise InvalidInputError(f"{source}: {where}: <location> must hold 3 numbers, "
                                    f"found {len(text)}")
        location = np.array([parse_float(v, f"{where} <location>") for v in text])
        if not np.all(np.isfinite(location)):
            raise InvalidInputError(f"{source}: {where}: <location> holds a non-finite number")
        fixed = (el.findtext("fixed") or "false").strip().lower() in ("true", "1", "yes")
        markers[name] = Marker(name, body, T[:3, :3] @ location + T[:3, 3], fixed)
    return markers


# ----------------------------------------------------------------------------- trials
@dataclasses.dataclass(frozen=True, eq=False)
class MarkerTrial:
    """Marker positions over time.

    names: labels in file order; time: ``(N,)`` s; positions: ``(N, M, 3)`` metres, NaN where
    a marker was not seen; rate: frames per second (``DataRate``); units: the file's unit as
    written; frames: ``(N,)`` frame numbers as written; source: the file read (or "").
    """

    names: tuple
    time: np.ndarray
    positions: np.ndarray
    rate: float
    units: str = "m"
    frames: np.ndarray = None
    source: str = ""

    def __post_init__(self):
        if self.frames is None:
            object.__setattr__(self, "frames", np.arange(1, len(self.time) + 1))

    def index(self, name):
        """Column of marker ``name``."""
        try:
            return self.names.index(name)
        except ValueError:
            raise InvalidInputError(f"{self.source or 'trial'}: no marker {name!r}; its "
                                    f"markers are {list(self.names)}") from None

    def marker(self, name):
        """``(N, 3)`` positions of marker ``name`` (a view)."""
        return self.positions[:, self.index(name)]

    def frame_range(self, start, end):
        """``(first, last)``: the rows OpenSim's ``MarkerData::findFrameRange`` takes for
        ``start..end`` s, from the last frame at or before ``start`` (the first frame when none
        is) to the first frame from there at or after ``end`` (the last frame when none is).
        A range that ends before the trial starts, or starts after it ends, raises, naming
        the trial's time span."""
        time = self.time
        if start > end:
            raise InvalidInputError(f"{self.source or 'trial'}: the time range {start:g}..{end:g} "
                                    "s starts after it ends; write the start time first")
        if len(time) == 0 or end < time[0] or start > time[-1]:
            span = f"{time[0]:g}..{time[-1]:g} s" if len(time) else "no frames"
            raise InvalidInputError(
                f"{self.source or 'trial'}: the time range {start:g}..{end:g} s lies outside "
                f"the trial, which spans {span}; choose a range inside it")
        before = np.flatnonzero(time <= start)
        first = int(before[-1]) if len(before) else 0
        after = np.flatnonzero(time[first:] >= end)
        return first, (first + int(after[0]) if len(after) else len(time) - 1)

    def between(self, start, end):
        """The frames with ``start <= time <= end`` (a new trial). A range that holds no
        frame raises, naming the trial's time span."""
        keep = (self.time >= start) & (self.time <= end)
        if not keep.any():
            raise InvalidInputError(
                f"{self.source or 'trial'}: the time range {start:g}..{end:g} s holds no frame "
                f"of the trial, which spans {self.time[0]:g}..{self.time[-1]:g} s; choose a "
                "range inside it")
        return dataclasses.replace(self, time=self.time[keep], positions=self.positions[keep],
                                   frames=self.frames[keep])


def read_trc(path):
    """Read a ``.trc`` marker trial (module docstring); returns a :class:`MarkerTrial`."""
    path = os.fspath(path)
    text = read_input(path, "marker trial (.trc)")
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return parse_trc(text, source=path)


def parse_trc(text, source="<string>"):
    """Parse the text of a ``.trc`` file (``source`` names it in messages)."""
    lines = text.splitlines()

    def fail(number, what):
        raise InvalidInputError(f"{source}: line {number}: {what}")

    if len(lines) < 5 or not lines[0].startswith("PathFileType"):
        fail(1, "not a .trc file: it must start with a PathFileType line, a header of "
                "names and values, and the marker labels")
    keys, values = lines[1].split("\t"), lines[2].split("\t")
    header = {k.strip(): v.strip() for k, v in zip(keys, values) if k.strip()}
    for key in ("DataRate", "NumFrames", "NumMarkers", "Units"):
        if key not in header:
            fail(2, f"the header has no {key}; a .trc header names DataRate, CameraRate, "
                    "NumFrames, NumMarkers and Units")
    rate = parse_float(header["DataRate"], "DataRate")
    if not (math.isfinite(rate) and rate > 0):
        fail(3, f"DataRate {header['DataRate']!r} must be a positive number of frames per "
                "second")
    n_markers = parse_count(header["NumMarkers"], "NumMarkers")
    unit = header["Units"]
    if unit.lower() not in UNITS:
        fail(3, f"unit {unit!r} is not one of {', '.join(UNITS)}; say the positions' unit in "
                "the Units field")
    scale = UNITS[unit.lower()]
    labels = lines[3].rstrip("\r\n").split("\t")
    if len(labels) < 2 or labels[0].strip() != "Frame#" or labels[1].strip() != "Time":
        fail(4, "the labels line must start with Frame# and Time")
    names = tuple(v.strip() for v in labels[2::3] if v.strip())
    if len(names) != n_markers:
        fail(4, f"the header says NumMarkers {n_markers} but the labels name {len(names)} "
                "markers; correct NumMarkers or the labels")
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        fail(4, f"markers {twice} are labelled more than once; labels must be unique")
    width = 2 + 3 * n_markers
    rows = []
    start = 5 if len(lines) > 4 and not _is_data_row(lines[4]) else 4
    for number, line in enumerate(lines[start:], start=start + 1):
        if not line.strip():
            continue
        fields = line.rstrip("\r\n").split("\t")
        while len(fields) > width and not fields[-1].strip():
            fields.pop()
        if len(fields) != width:
            fail(number, f"the row has {len(fields)} columns but the labels ask for {width} "
                         f"(frame, time and 3 per marker for {n_markers} markers)")
        rows.append([math.nan if f.strip().lower() in _GAPS else
                     parse_float(f.strip(), f"line {number}") for f in fields])
    if not rows:
        fail(len(lines), "the file has no rows of positions")
    data = np.array(rows, dtype=float)
    if not np.all(np.isfinite(data[:, :2])):
        fail(start + 1, "every row needs its frame number and time")
    time = data[:, 1]
    if np.any(np.diff(time) <= 0):
        bad = int(np.argmax(np.diff(time) <= 0)) + 1
        fail(start + 1 + bad, "times must increase from row to row")
    positions = data[:, 2:].reshape(len(data), n_markers, 3) * scale
    return MarkerTrial(names=names, time=time, positions=positions, rate=rate, units=unit,
                       frames=data[:, 0].astype(np.int64), source=source)


def _is_data_row(line):
    first = line.split("\t")[0].strip()
    return bool(first) and first.lstrip("-").isdigit()


def write_trc(path, trial):
    """Write ``trial`` as a ``.trc`` file in millimetres (as OpenSim writes trials), gaps as
    empty fields, through :func:`~core.io.files.atomic_write`."""
    n, m = len(trial.time), len(trial.names)
    out = [f"PathFileType\t4\t(X/Y/Z)\t{os.path.basename(os.fspath(path))}",
           "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\t"
           "OrigDataStartFrame\tOrigNumFrames",
           f"{trial.rate!r}\t{trial.rate!r}\t{n}\t{m}\tmm\t{trial.rate!r}\t"
           f"{int(trial.frames[0]) if n else 1}\t{n}",
           "Frame#\tTime\t" + "\t".join(f"{name}\t\t" for name in trial.names),
           "\t\t" + "\t".join(f"X{i}\tY{i}\tZ{i}" for i in range(1, m + 1)),
           ""]
    mm = np.asarray(trial.positions, dtype=float) * 1e3
    for k in range(n):
        cells = ["" if not math.isfinite(v) else repr(float(v)) for v in mm[k].ravel()]
        out.append(f"{int(trial.frames[k])}\t{float(trial.time[k])!r}\t" + "\t".join(cells))
    atomic_write(path, "\n".join(out) + "\n")
