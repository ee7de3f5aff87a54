"""Joint documents: a joint, its coordinates, the fit metric and the fit report as versioned
JSON.

Schema ``spline_joints.joint`` version 1 (all numbers are JSON numbers; floats are written
with Python's shortest round-trip repr, so reading a document back gives bit-identical arrays)::

    {
      "schema": "spline_joints.joint",
      "version": 1,
      "name": "knee_r",                       # optional label
      "joint": {"type": "SplineCurveJoint",   # joint type; the rest is the joint's to_dict():
                "order": 4, "knots": [...], "control_frames": [[[...]]], "control_twists": ...
                # SplineJoint: "knots": [[...], [...]], "order": [4, 4], "coefficients": ...,
                #              "basis_twists": [[...] x 6], "offset": [[...]]
               },
      "coordinates": [{"name": "knee_angle_r", "range": [lo, hi]}],   # one per coordinate;
                                              # an infinite bound is written as null
      "metric": {"name": "se3_length_scale", "length_scale": 0.1} | null,
      "fit_report": {FitReport fields} | null
    }

Unknown schema names or versions and malformed documents raise InvalidInputError saying what
is wrong.
"""

import json
import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError, NonFiniteError
from ..fitting.metric import SE3Metric
from ..fitting.report import FitReport
from .files import atomic_write, check_writable_path

__all__ = ["SCHEMA", "SCHEMA_VERSION", "JointDocument", "document_to_dict", "document_from_dict",
           "dumps", "loads", "save", "load"]

SCHEMA = "spline_joints.joint"
SCHEMA_VERSION = 1
_KEYS = {"schema", "version", "name", "joint", "coordinates", "metric", "fit_report"}


@dataclass
class JointDocument:
    """A joint with its coordinate names and ranges, fit metric and fit report.

    joint: a :class:`core.joints.Joint` with ``to_dict``; coordinate_names: nq strings
    (default ``q0, q1, ...``); ranges: (nq, 2) (default the joint's limits); metric:
    :class:`SE3Metric` or None; report: :class:`FitReport` or None; name: label.
    """

    joint: object
    coordinate_names: tuple = ()
    ranges: np.ndarray = None
    metric: object = None
    report: object = None
    name: str = ""

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
        if r.shape != (nq, 2) or np.any(np.isnan(r)) or np.any(r[:, 0] > r[:, 1]):
            raise InvalidInputError(f"ranges must be {nq} pairs [lower, upper] with lower <= "
                                    f"upper, got {self.ranges!r}")
        self.ranges = r

    @classmethod
    def from_fit(cls, result, coordinate_names=(), name=""):
        """Document of a :class:`core.fitting.FitResult`: its joint, the joint's range, the
        fit's metric (from ``report.length_scale``) and the report."""
        return cls(result.joint, coordinate_names, metric=SE3Metric(result.report.length_scale),
                   report=result.report, name=name)

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
    """Plain JSON-able dict of a :class:`JointDocument` (schema version 1)."""
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
    }


def _require(d, key, kind, what):
    if key not in d:
        raise InvalidInputError(f"joint document lacks '{key}' ({what})")
    v = d[key]
    if not isinstance(v, kind):
        raise InvalidInputError(f"joint document field '{key}' must be {what}, got "
                                f"{type(v).__name__}")
    return v


def document_from_dict(d):
    """Rebuild a :class:`JointDocument` from :func:`document_to_dict`'s output."""
    from ..joints.registry import joint_from_dict

    if not isinstance(d, dict):
        raise InvalidInputError(f"a joint document must be a JSON object, got {type(d).__name__}")
    schema = d.get("schema")
    if schema != SCHEMA:
        raise InvalidInputError(f"not a joint document: schema is {schema!r}, expected {SCHEMA!r}")
    version = d.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidInputError(f"joint document version must be an integer, got {version!r}")
    if version != SCHEMA_VERSION:
        raise InvalidInputError(f"unknown joint document version {version}; this build reads "
                                f"version {SCHEMA_VERSION}: update the add-on to open it")
    unknown = set(d) - _KEYS
    if unknown:
        raise InvalidInputError(f"joint document has unknown field(s) {sorted(unknown)}; "
                                f"version {SCHEMA_VERSION} has {sorted(_KEYS)}")
    jd = _require(d, "joint", dict, "an object with the joint's 'type' and parameters")
    if "type" not in jd:
        raise InvalidInputError("joint document's 'joint' lacks 'type' (the joint class name)")
    try:
        joint = joint_from_dict(jd)
    except InvalidInputError as exc:
        raise InvalidInputError(f"joint document's 'joint' is malformed: {exc}") from None
    except (TypeError, ValueError, KeyError, IndexError) as exc:
        raise InvalidInputError(f"joint document's 'joint' is malformed ({exc!r})") from None
    coords = _require(d, "coordinates", list, "a list of {name, range}")
    if len(coords) != joint.nq:
        raise InvalidInputError(f"joint document lists {len(coords)} coordinates for a "
                                f"{joint.nq}-coordinate {jd['type']}")
    names, ranges = [], []
    for i, c in enumerate(coords):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) \
                or not isinstance(c.get("range"), list) or len(c["range"]) != 2:
            raise InvalidInputError(f"coordinate {i} must be {{'name': str, 'range': [lo, hi]}}, "
                                    f"got {c!r}")
        lo, hi = c["range"]
        try:
            ranges.append([-math.inf if lo is None else float(lo),
                           math.inf if hi is None else float(hi)])
        except (TypeError, ValueError):
            raise InvalidInputError(f"coordinate {i} range must hold numbers or null, got "
                                    f"{c['range']!r}") from None
        names.append(c["name"])
    metric = d.get("metric")
    if metric is not None:
        if not isinstance(metric, dict) or metric.get("name") != "se3_length_scale" \
                or "length_scale" not in metric:
            raise InvalidInputError(f"unknown metric {metric!r}; expected {{'name': "
                                    "'se3_length_scale', 'length_scale': metres}")
        metric = SE3Metric(metric["length_scale"])
    report = d.get("fit_report")
    if report is not None:
        report = FitReport.from_dict(report)
    name = d.get("name", "")
    if not isinstance(name, str):
        raise InvalidInputError(f"joint document 'name' must be a string, got {name!r}")
    return JointDocument(joint=joint, coordinate_names=tuple(names), ranges=np.array(ranges),
                         metric=metric, report=report, name=name)


def dumps(doc, indent=None):
    """JSON text of a :class:`JointDocument` (strict JSON: no NaN or Infinity)."""
    try:
        return json.dumps(document_to_dict(doc), indent=indent, allow_nan=False)
    except ValueError as exc:
        raise NonFiniteError(f"joint document holds a NaN or infinite number ({exc}); "
                                "only finite numbers can be saved") from None


def loads(text):
    """Parse JSON text into a :class:`JointDocument`."""
    try:
        d = json.loads(text)
    except (TypeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"joint document is not valid JSON ({exc})") from None
    return document_from_dict(d)


def save(path, doc):
    """Write ``doc`` to ``path`` as JSON (UTF-8), atomically (:func:`core.io.files.atomic_write`):
    the document is serialized completely first, so a document that cannot be saved, a missing
    folder or a failed write leaves an existing file as it was."""
    check_writable_path(path)
    atomic_write(path, dumps(doc, indent=1))


def load(path):
    """Read a :class:`JointDocument` from a JSON file."""
    with open(path, encoding="utf-8") as f:
        return loads(f.read())
