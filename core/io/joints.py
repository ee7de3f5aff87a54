"""Joint documents: a joint, its coordinates, the fit metric and the fit report as versioned
JSON.

Schema ``spline_joints.joint`` version 2 (all numbers are JSON numbers; floats are written
with Python's shortest round-trip repr, so reading a document back gives bit-identical arrays)::

    {
      "schema": "spline_joints.joint",
      "version": 2,
      "name": "knee_r",                       # optional label
      "joint": {"type": "SplineCurveJoint",   # joint type; the rest is the joint's to_dict():
                "order": 4, "knots": [...], "control_frames": [[[...]]], "control_twists": ...
                # SplineJoint: "knots": [[...], [...]], "order": [4, 4], "coefficients": ...,
                #              "basis_twists": [[...] x 6], "offset": [[...]]
               },
      "coordinates": [{"name": "knee_angle_r", "range": [lo, hi]}],   # one per coordinate;
                                              # an infinite bound is written as null
      "metric": {"name": "se3_length_scale", "length_scale": 0.1} | null,
      "fit_report": {FitReport fields} | null,
      "rest": {"parent": [[4x4]], "child": [[4x4]],           # optional: the bones the joint
               "parent_length": m, "child_length": m} | null  # was made on (RestFrames)
    }

Version 1 is version 2 without ``"rest"``; both are read, version 2 is written.

Validation is strict and symmetric: :func:`loads` accepts what :func:`dumps` writes and
:func:`dumps` writes only what :func:`loads` accepts. A document holds only JSON objects,
arrays, strings, finite numbers and null (no true/false, no NaN or Infinity), is at most
:data:`MAX_DOCUMENT_SIZE` characters long and nested at most :data:`MAX_DEPTH` deep, and each
stored coordinate range lies inside the joint's own range (a spline's knot domain, a lower
pair's limits). Unknown schema names or versions and malformed documents raise
InvalidInputError (NonFiniteError for NaN or infinite numbers) saying what is wrong.
"""

import json
import math
import os
import re
import sys
from dataclasses import dataclass

import numpy as np

from ..checks import real_number
from ..errors import InvalidInputError, NonFiniteError
from ..fitting.metric import SE3Metric
from ..fitting.report import FitReport
from ..lie import se3
from .files import atomic_write, check_writable_path, read_input

__all__ = ["SCHEMA", "SCHEMA_VERSION", "READ_VERSIONS", "JointDocument", "RestFrames", "document_to_dict", "document_from_dict",
           "dumps", "loads", "save", "load", "MAX_DOCUMENT_SIZE", "MAX_DEPTH", "RANGE_SLACK"]

SCHEMA = "spline_joints.joint"
SCHEMA_VERSION = 2
#: versions :func:`loads` reads (version 1 has no "rest")
READ_VERSIONS = (1, 2)
_KEYS = {"schema", "version", "name", "joint", "coordinates", "metric", "fit_report", "rest"}
_REST_KEYS = {"parent", "child", "parent_length", "child_length"}
_COORDINATE_KEYS = {"name", "range"}
_METRIC_KEYS = {"name", "length_scale"}

#: most characters of JSON text (bytes of a file) in a joint document. A fit report stores two
#: residuals per sample (about 50 characters), so this holds the report of some 80 000
#: captured samples; larger texts are refused before they are parsed.
MAX_DOCUMENT_SIZE = 4 * 2 ** 20
#: deepest nesting of arrays and objects in a joint document. The deepest the joints write is
#: 6 (a 3-coordinate SplineJoint's coefficient tensor inside "joint"); deeper texts are refused
#: before they are parsed (Python's parser would recurse once per level).
MAX_DEPTH = 16
#: a stored coordinate bound may lie outside the joint's own range by this fraction of
#: max(1, |bound|): a range rounded to single precision (Blender's float properties) or to
#: six significant digits still loads
RANGE_SLACK = 1e-6


@dataclass
class RestFrames:
    """Where a joint was made: the rest frames of its parent and child bones and their lengths.

    parent, child: (4, 4) rigid rest frames of the two bones in one armature space (a bone's
    frame: head at its origin, Y along the bone, X and Z by its roll), metres; parent_length,
    child_length: the bones' lengths (m, > 0). The joint's transform ``G(q)`` is the child
    bone's frame in the parent bone's frame, so :attr:`T_parent_child` is the pose it is
    compared with on another rig (:func:`core.transfer.transfer_document`).
    InvalidInputError names a frame that is not rigid or a length that is not positive.
    """

    parent: np.ndarray
    child: np.ndarray
    parent_length: float
    child_length: float

    def __post_init__(self):
        self.parent = se3.check_transform(np.array(self.parent, dtype=float), "rest parent frame")
        self.child = se3.check_transform(np.array(self.child, dtype=float), "rest child frame")
        if self.parent.shape != (4, 4) or self.child.shape != (4, 4):
            raise InvalidInputError("rest frames must be one (4, 4) frame per bone")
        for name in ("parent_length", "child_length"):
            setattr(self, name, real_number(getattr(self, name), f"rest {name}", 0.0,
                                            low_open=True, advice="a bone's length in metres"))

    @property
    def T_parent_child(self):
        """(4, 4) rest pose of the child bone in the parent bone's frame."""
        return se3.inv(self.parent) @ self.child

    def to_dict(self):
        return {"parent": self.parent.tolist(), "child": self.child.tolist(),
                "parent_length": self.parent_length, "child_length": self.child_length}

    @classmethod
    def from_dict(cls, d):
        """Inverse of :meth:`to_dict`; InvalidInputError for anything else."""
        if not isinstance(d, dict) or set(d) != _REST_KEYS:
            raise InvalidInputError(f"joint document field 'rest' must be an object with the "
                                    f"keys {sorted(_REST_KEYS)}, or null")
        try:
            return cls(np.array(d["parent"], dtype=float), np.array(d["child"], dtype=float),
                       d["parent_length"], d["child_length"])
        except (TypeError, ValueError) as exc:
            if isinstance(exc, InvalidInputError):
                raise
            raise InvalidInputError(f"joint document field 'rest' is malformed ({exc}); "
                                    "export the joint again") from None


@dataclass
class JointDocument:
    """A joint with its coordinate names and ranges, fit metric and fit report.

    joint: a :class:`core.joints.Joint` with ``to_dict``; coordinate_names: nq strings
    (default ``q0, q1, ...``); ranges: (nq, 2) (default the joint's limits); metric:
    :class:`SE3Metric` or None; report: :class:`FitReport` or None; name: label; rest:
    :class:`RestFrames` of the bones the joint was made on, or None (unknown).
    InvalidInputError when a field has the wrong type, a range leaves the joint's own range
    (beyond :data:`RANGE_SLACK`) or the joint does not evaluate to finite transforms over the
    ranges (:func:`dumps` refuses anything else :func:`loads` would refuse).
    """

    joint: object
    coordinate_names: tuple = ()
    ranges: np.ndarray = None
    metric: object = None
    report: object = None
    name: str = ""
    rest: object = None

    def __post_init__(self):
        nq = self.joint.nq
        if not self.coordinate_names:
            self.coordinate_names = tuple(f"q{i}" for i in range(nq))
        self.coordinate_names = tuple(self.coordinate_names)
        if len(self.coordinate_names) != nq or not all(
                isinstance(c, str) and c for c in self.coordinate_names):
            raise InvalidInputError(f"coordinate_names must be {nq} non-empty strings, got "
                                    f"{self.coordinate_names!r}")
        if self.ranges is None:
            self.ranges = np.stack([self.joint.lower, self.joint.upper], axis=1)
        r = np.array(self.ranges, dtype=float)
        if r.size == 0:
            r = r.reshape(0, 2)
        if r.shape != (nq, 2) or np.any(np.isnan(r)) or np.any(r[:, 0] > r[:, 1]):
            raise InvalidInputError(f"ranges must be {nq} pairs [lower, upper] with lower <= "
                                    f"upper, got {self.ranges!r}")
        self.ranges = r
        self._check_ranges_inside_joint()
        self._check_joint_evaluates()
        if not isinstance(self.name, str):
            raise InvalidInputError(f"the document name must be a string, got {self.name!r}")
        if self.metric is not None and not isinstance(self.metric, SE3Metric):
            raise InvalidInputError(f"metric must be an SE3Metric or None, got "
                                    f"{type(self.metric).__name__}")
        if self.report is not None and not isinstance(self.report, FitReport):
            raise InvalidInputError(f"report must be a FitReport or None, got "
                                    f"{type(self.report).__name__}")
        if self.rest is not None and not isinstance(self.rest, RestFrames):
            raise InvalidInputError(f"rest must be RestFrames or None, got "
                                    f"{type(self.rest).__name__}")

    def _check_ranges_inside_joint(self):
        """InvalidInputError naming the first coordinate whose range leaves the joint's own
        range (beyond :data:`RANGE_SLACK`)."""
        lower, upper = self.joint.lower, self.joint.upper
        for i, (lo, hi) in enumerate(self.ranges):
            slack_lo = RANGE_SLACK * max(1.0, abs(lo)) if math.isfinite(lo) else 0.0
            slack_hi = RANGE_SLACK * max(1.0, abs(hi)) if math.isfinite(hi) else 0.0
            if lo < lower[i] - slack_lo or hi > upper[i] + slack_hi:
                raise InvalidInputError(
                    f"coordinate '{self.coordinate_names[i]}' has the range [{lo}, {hi}], outside "
                    f"the {type(self.joint).__name__}'s own range [{lower[i]}, {upper[i]}] "
                    "(its knot domain or limits): store a range inside it, or fit the joint "
                    "over the range you need")

    def _check_joint_evaluates(self):
        """InvalidInputError unless the joint's transform is finite at the middle of the ranges
        and at both ends of each coordinate's range (-1 and 1 for an unbounded end): a joint
        rebuilt from numbers too large for its arithmetic evaluates to NaN there."""
        nq = self.joint.nq
        if nq == 0:
            return
        lo = np.where(np.isfinite(self.ranges[:, 0]), self.ranges[:, 0], -1.0)
        hi = np.where(np.isfinite(self.ranges[:, 1]), self.ranges[:, 1], 1.0)
        mid = 0.5 * (lo + hi)
        qs = np.repeat(mid[None, :], 2 * nq + 1, axis=0)
        qs[1 + np.arange(nq), np.arange(nq)] = lo
        qs[1 + nq + np.arange(nq), np.arange(nq)] = hi
        with np.errstate(over="ignore", invalid="ignore"):
            G = self.joint.transforms(qs)
        bad = ~np.all(np.isfinite(G), axis=(1, 2))
        if np.any(bad):
            raise NonFiniteError(f"the {type(self.joint).__name__} evaluates to NaN or inf at "
                                 f"q = {qs[np.argmax(bad)].tolist()}: its parameters are too "
                                 "large to compute with; fit or build the joint again")

    @classmethod
    def from_fit(cls, result, coordinate_names=(), name="", rest=None):
        """Document of a :class:`core.fitting.FitResult`: its joint, the joint's range, the
        fit's metric (from ``report.length_scale``), the report and ``rest``."""
        return cls(result.joint, coordinate_names, metric=SE3Metric(result.report.length_scale),
                   report=result.report, name=name, rest=rest)

    def finite_ranges(self):
        """The ranges (nq, 2); InvalidInputError naming the first coordinate whose range is
        unbounded (a slider or a drawn path needs finite limits)."""
        bad = np.flatnonzero(~np.all(np.isfinite(self.ranges), axis=1))
        if bad.size:
            i = int(bad[0])
            lo, hi = self.ranges[i]
            raise InvalidInputError(f"coordinate '{self.coordinate_names[i]}' of the joint has the "
                                    f"unbounded range [{lo}, {hi}]; sliders and drawn paths need "
                                    "finite limits: fit the joint again or store finite ranges")
        return self.ranges


def _bound(x):
    return None if math.isinf(x) else float(x)


def document_to_dict(doc):
    """Plain JSON-able dict of a :class:`JointDocument` (schema version :data:`SCHEMA_VERSION`)."""
    if not isinstance(doc, JointDocument):
        raise InvalidInputError("document_to_dict expects a JointDocument")
    try:
        joint = doc.joint.to_dict()
    except NotImplementedError as exc:
        raise InvalidInputError(f"{exc}; only joints with to_dict() can be saved") from None
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "name": doc.name,
        "joint": joint,
        "coordinates": [{"name": n, "range": [_bound(lo), _bound(hi)]}
                        for n, (lo, hi) in zip(doc.coordinate_names, doc.ranges)],
        "metric": None if doc.metric is None else doc.metric.to_dict(),
        "fit_report": None if doc.report is None else doc.report.to_dict(),
        "rest": None if doc.rest is None else doc.rest.to_dict(),
    }


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_plain(d):
    """InvalidInputError unless ``d`` is plain JSON data of a joint document: objects with
    string keys, arrays, strings, numbers and null, nested at most :data:`MAX_DEPTH` deep;
    NonFiniteError naming the field of a NaN, an infinite number or an integer too large for a
    double. True and false are refused: no field of a joint document is a boolean."""
    stack = [(d, "document", 1)]
    while stack:
        v, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InvalidInputError(f"joint document is nested deeper than {MAX_DEPTH} levels "
                                    f"(at {where}); it is not a joint document")
        if isinstance(v, dict):
            bad = [k for k in v if not isinstance(k, str)]
            if bad:
                raise InvalidInputError(f"joint document field {where} has the non-string key "
                                        f"{bad[0]!r}")
            items = [(f"{where}.{k}", x) for k, x in v.items()]
        else:
            items = [(f"{where}[{i}]", x) for i, x in enumerate(v)]
        for at, x in items:
            if isinstance(x, (dict, list, tuple)):
                stack.append((x, at, depth + 1))
            elif _is_number(x):
                if not (isinstance(x, float) and math.isfinite(x)
                        or isinstance(x, int) and abs(x) <= sys.float_info.max):
                    raise NonFiniteError(
                        f"joint document field {at} is {x!r}" + ("" if isinstance(x, float) else
                                                                  ", too large for a double") +
                        ": a joint document holds only finite numbers (NaN and infinity are not "
                        "JSON); export the joint again from a valid fit")
            elif not (x is None or isinstance(x, str)):
                raise InvalidInputError(f"joint document field {at} is {x!r}, which no joint "
                                        "document field can be (they hold objects, arrays, "
                                        "strings, numbers or null)")


def _require(d, key, kind, what):
    if key not in d:
        raise InvalidInputError(f"joint document lacks '{key}' ({what})")
    v = d[key]
    if not isinstance(v, kind):
        raise InvalidInputError(f"joint document field '{key}' must be {what}, got "
                                f"{type(v).__name__}")
    return v


def _read_bound(x, default, i, pair):
    if x is None:
        return default
    if not _is_number(x):
        raise InvalidInputError(f"coordinate {i} range must hold numbers or null, got {pair!r}")
    return float(x)


def document_from_dict(d):
    """Rebuild a :class:`JointDocument` from :func:`document_to_dict`'s output (or the parsed
    JSON of a document); InvalidInputError says what is wrong with anything else."""
    from ..joints.registry import joint_from_dict

    if not isinstance(d, dict):
        raise InvalidInputError(f"a joint document must be a JSON object, got {type(d).__name__}")
    schema = d.get("schema")
    if schema != SCHEMA:
        raise InvalidInputError(f"not a joint document: schema is {schema!r}, expected {SCHEMA!r}")
    version = d.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidInputError(f"joint document version must be an integer, got {version!r}")
    if version not in READ_VERSIONS:
        raise InvalidInputError(f"unknown joint document version {version}; this build reads "
                                f"versions {', '.join(map(str, READ_VERSIONS))}: update the "
                                "add-on to open it")
    keys = _KEYS if version >= 2 else _KEYS - {"rest"}
    unknown = set(d) - keys
    if unknown:
        raise InvalidInputError(f"joint document has unknown field(s) {sorted(unknown)}; "
                                f"version {version} has {sorted(keys)}")
    _check_plain(d)
    jd = _require(d, "joint", dict, "an object with the joint's 'type' and parameters")
    if "type" not in jd:
        raise InvalidInputError("joint document's 'joint' lacks 'type' (the joint class name)")
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # the checks refuse what overflows
            joint = joint_from_dict(jd)
    except InvalidInputError as exc:
        raise InvalidInputError(f"joint document's 'joint' is malformed: {exc}") from None
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as exc:
        raise InvalidInputError(f"joint document's 'joint' is malformed ({exc!r})") from None
    coords = _require(d, "coordinates", list, "a list of {name, range}")
    if len(coords) != joint.nq:
        raise InvalidInputError(f"joint document lists {len(coords)} coordinates for a "
                                f"{joint.nq}-coordinate {jd['type']}")
    names, ranges = [], []
    for i, c in enumerate(coords):
        if not isinstance(c, dict) or set(c) != _COORDINATE_KEYS or not isinstance(c["name"], str) \
                or not isinstance(c["range"], list) or len(c["range"]) != 2:
            raise InvalidInputError(f"coordinate {i} must be {{'name': str, 'range': [lo, hi]}}, "
                                    f"got {c!r}")
        lo, hi = c["range"]
        ranges.append([_read_bound(lo, -math.inf, i, c["range"]),
                       _read_bound(hi, math.inf, i, c["range"])])
        names.append(c["name"])
    metric = d.get("metric")
    if metric is not None:
        if not isinstance(metric, dict) or set(metric) != _METRIC_KEYS \
                or metric["name"] != "se3_length_scale" or not _is_number(metric["length_scale"]):
            raise InvalidInputError(f"unknown metric {metric!r}; expected {{'name': "
                                    "'se3_length_scale', 'length_scale': metres}")
        metric = SE3Metric(metric["length_scale"])
    report = d.get("fit_report")
    if report is not None:
        try:
            report = FitReport.from_dict(report)
        except InvalidInputError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
            raise InvalidInputError(f"joint document's 'fit_report' is malformed ({exc!r})") \
                from None
    name = d.get("name", "")
    if not isinstance(name, str):
        raise InvalidInputError(f"joint document 'name' must be a string, got {name!r}")
    rest = d.get("rest")
    if rest is not None:
        rest = RestFrames.from_dict(rest)
    return JointDocument(joint=joint, coordinate_names=tuple(names), ranges=np.array(ranges),
                         metric=metric, report=report, name=name, rest=rest)


def dumps(doc, indent=None):
    """JSON text of a :class:`JointDocument` (strict JSON: no NaN or Infinity).

    Only a document that :func:`loads` reads back is written: InvalidInputError (NonFiniteError
    for NaN or infinite numbers) says why another cannot be saved."""
    d = document_to_dict(doc)
    try:
        document_from_dict(d)
    except InvalidInputError as exc:
        raise type(exc)(f"this joint document cannot be saved, it would not load again: "
                        f"{exc}") from None
    text = json.dumps(d, indent=indent, allow_nan=False)
    if len(text) > MAX_DOCUMENT_SIZE:
        raise InvalidInputError(f"this joint document is {len(text)} characters long, more than "
                                f"the {MAX_DOCUMENT_SIZE} a joint document may have: fit fewer "
                                "samples")
    return text


#: a JSON string (its brackets are not structure)
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
#: anything but a bracket
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _nesting_depth(text):
    """Deepest nesting of arrays and objects in JSON ``text`` (brackets in strings ignored),
    without parsing it."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)).encode("ascii")
    b = np.frombuffer(brackets, dtype=np.uint8)
    steps = np.isin(b, (ord("["), ord("{"))).astype(np.int64) - np.isin(b, (ord("]"), ord("}")))
    return int(np.cumsum(steps).max(initial=0))


def loads(text):
    """Parse JSON text (str) into a :class:`JointDocument`.

    InvalidInputError for text longer than :data:`MAX_DOCUMENT_SIZE` characters or nested
    deeper than :data:`MAX_DEPTH` (both refused before parsing), text that is not JSON, and
    documents :func:`document_from_dict` refuses."""
    if not isinstance(text, str):
        raise InvalidInputError(f"a joint document is JSON text (str), got {type(text).__name__}")
    if len(text) > MAX_DOCUMENT_SIZE:
        raise InvalidInputError(f"joint document is {len(text)} characters long, more than the "
                                f"{MAX_DOCUMENT_SIZE} a joint document may have; it is not a joint "
                                "document written by this add-on")
    depth = _nesting_depth(text)
    if depth > MAX_DEPTH:
        raise InvalidInputError(f"joint document is nested {depth} levels deep, "
                                f"more than the {MAX_DEPTH} a joint document may have; it is not "
                                "a joint document written by this add-on")
    try:
        d = json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer with too many digits
        raise InvalidInputError(f"joint document is not valid JSON ({exc})") from None
    return document_from_dict(d)


def save(path, doc):
    """Write ``doc`` to ``path`` as JSON (UTF-8), atomically (:func:`core.io.files.atomic_write`):
    the document is serialized completely first, so a document that cannot be saved, a missing
    folder or a failed write leaves an existing file as it was."""
    check_writable_path(path)
    atomic_write(path, dumps(doc, indent=1))


def load(path):
    """Read a :class:`JointDocument` from a JSON file.

    InvalidInputError names the file when it is missing, not a regular file, unreadable,
    larger than :data:`MAX_DOCUMENT_SIZE` bytes (refused before it is read,
    :func:`core.io.files.read_input`), not UTF-8 text (a binary file), or not a valid joint
    document."""
    path = os.fspath(path)
    data = read_input(path, "joint document", MAX_DOCUMENT_SIZE)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInputError(f"{path} is not a joint JSON document: it is not UTF-8 text "
                                "(a binary file?); choose a .json file written by Export "
                                "Joint JSON or core.io.save") from None
    try:
        return loads(text)
    except InvalidInputError as exc:
        raise type(exc)(f"{path}: {exc}") from None
