"""Joint documents are validated strictly and symmetrically: what load accepts, save writes and
reloads identically; what save writes, load accepts; anything else is an InvalidInputError."""

import copy
import json
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import InvalidInputError, NonFiniteError
from core.fitting.curve import fit_spline_curve
from core.fitting.report import FitReport
from core.fitting.samples import JointSamples
from core.io import (MAX_DEPTH, MAX_DOCUMENT_SIZE, JointDocument, document_from_dict,
                     document_to_dict, dumps, load, loads, save)
from core.joints import (ClosedSplineCurveJoint, Elliptic, Fixed, Helical, Revolute, Spherical,
                         SplineCurveJoint, SplineJoint)
from core.lie import se3


def _frames(n, turn=0.3):
    return se3.exp(np.array([[0.1 * i, 0.0, turn * i, 0.02 * i, 0.01 * i * i, 0.0]
                             for i in range(n)]))


def _curve_fit_document():
    q = np.linspace(0.0, 1.0, 12)
    joint = SplineCurveJoint(_frames(6), order=4)
    res = fit_spline_curve(JointSamples(joint.transforms(q * joint.upper[0]),
                                        q * joint.upper[0]), n_frames=5)
    return JointDocument.from_fit(res, ("knee",), name="knee")


def _documents():
    surface = SplineJoint([np.arange(-3.0, 5.0), np.arange(-3.0, 5.0)],
                          np.linspace(0.0, 0.1, 6 * 4 * 4).reshape(6, 4, 4), order=[4, 4])
    return {
        "curve fit": _curve_fit_document(),
        "surface": JointDocument(surface, ("a", "b"), [[0.0, 1.0], [0.0, 0.5]]),
        "closed curve": JointDocument(ClosedSplineCurveJoint(_frames(5, 1.2)), ("s",)),
        "revolute": JointDocument(Revolute((0.0, 0.0, 1.0), lower=-1.0, upper=2.0), ("r",)),
        "helical": JointDocument(Helical((1.0, 0.0, 0.0), pitch=0.01), ("h",), [[-1.0, 1.0]]),
        "elliptic": JointDocument(Elliptic(0.2, 0.1), ("e",), [[-1.0, 1.0]]),
        "spherical": JointDocument(Spherical(), ("x", "y", "z"), [[-1.0, 1.0]] * 3),
        "fixed": JointDocument(Fixed(), name="weld"),
    }


DOCUMENTS = _documents()
TEXTS = {k: dumps(v) for k, v in DOCUMENTS.items()}


@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_every_joint_type_loads_what_it_saves(kind, tmp_path):
    text = TEXTS[kind]
    assert dumps(loads(text)) == text
    save(tmp_path / "j.json", DOCUMENTS[kind])
    assert dumps(load(tmp_path / "j.json")) == text


def _mutate(kind, mutate):
    d = json.loads(TEXTS[kind])
    mutate(d)
    return json.dumps(d)


def _set(path, value):
    def mutate(d):
        for key in path[:-1]:
            d = d[key]
        d[path[-1]] = value
    return mutate


FRAME = ("joint", "control_frames")


@pytest.mark.parametrize("kind, mutate, error, message", [
    ("curve fit", _set(("joint", "order"), 4.7), InvalidInputError,
     r"order must be an integer >= 2 .*got 4.7"),
    ("curve fit", _set(("joint", "order"), True), InvalidInputError,
     r"document.joint.order is True"),
    ("curve fit", _set(("joint", "knots"), None), InvalidInputError, "knots null"),
    ("curve fit", _set(("coordinates", 0, "range"), [40.0, 50.0]), InvalidInputError,
     r"'knee' has the range \[40.0, 50.0\], outside the SplineCurveJoint's own range"),
    ("revolute", _set(("coordinates", 0, "range"), [None, 1.0]), InvalidInputError,
     r"range \[-inf, 1.0\], outside the Revolute's own range \[-1.0, 2.0\]"),
    ("curve fit", _set(FRAME + (3, 0, 1), float("nan")), NonFiniteError,
     r"document.joint.control_frames\[3\]\[0\]\[1\] is nan"),
    ("closed curve", _set(FRAME + (2, 1, 3), float("inf")), NonFiniteError,
     r"control_frames\[2\]\[1\]\[3\] is inf"),
    ("curve fit", _set(("fit_report", "rms_position_mm"), float("nan")), NonFiniteError,
     "fit_report.rms_position_mm is nan"),
    ("curve fit", _set(("fit_report", "position_residuals_mm", 2), float("-inf")),
     NonFiniteError, r"position_residuals_mm\[2\] is -inf"),
    ("curve fit", _set(("fit_report", "iterations"), 10 ** 400), NonFiniteError,
     "too large for a double"),
    ("curve fit", _set(("coordinates", 0, "range"), ["0", 1.0]), InvalidInputError,
     "numbers or null"),
    ("curve fit", _set(("coordinates", 0, "unit"), "rad"), InvalidInputError,
     r"coordinate 0 must be \{'name': str, 'range': \[lo, hi\]\}"),
    ("curve fit", _set(("metric", "length_scale"), "0.1"), InvalidInputError, "unknown metric"),
    ("surface", _set(("joint", "order"), [4, 4.5]), InvalidInputError, "integers >= 2"),
    ("helical", _set(("joint", "pitch"), False), InvalidInputError, "pitch is False"),
])
def test_documents_with_wrong_types_or_meanings_are_refused(kind, mutate, error, message):
    text = _mutate(kind, mutate)
    with pytest.raises(error, match=message):
        loads(text)
    with pytest.raises(error, match=message):
        document_from_dict(json.loads(text))


def test_non_finite_json_constants_are_refused_on_load_as_on_save():
    d = json.loads(TEXTS["curve fit"])
    d["fit_report"]["max_rotation_deg"] = 1e400  # parsed as inf, as Python writes Infinity
    with pytest.raises(NonFiniteError, match="max_rotation_deg is inf"):
        loads(json.dumps(d).replace("Infinity", "1e400"))
    report = FitReport.from_dict(json.loads(TEXTS["curve fit"])["fit_report"])
    report.max_rotation_deg = math.inf
    doc = DOCUMENTS["curve fit"]
    with pytest.raises(NonFiniteError, match="max_rotation_deg is inf"):
        dumps(JointDocument(doc.joint, doc.coordinate_names, doc.ranges, doc.metric, report))


def test_save_writes_only_what_load_accepts(tmp_path):
    doc = DOCUMENTS["curve fit"]
    report = FitReport.from_dict(json.loads(TEXTS["curve fit"])["fit_report"])
    report.status = "lost"
    with pytest.raises(InvalidInputError, match="cannot be saved, it would not load again: fit "
                                                "report status 'lost'"):
        save(tmp_path / "j.json", JointDocument(doc.joint, ("knee",), report=report))
    with pytest.raises(InvalidInputError, match="name must be a string"):
        JointDocument(doc.joint, ("knee",), name=7)
    with pytest.raises(InvalidInputError, match="outside the SplineCurveJoint's own range"):
        JointDocument(doc.joint, ("knee",), [[-5.0, 0.5]])
    assert os.listdir(tmp_path) == []


def test_a_fixed_joint_round_trips():
    back = loads(TEXTS["fixed"])
    assert isinstance(back.joint, Fixed) and back.ranges.shape == (0, 2) and back.name == "weld"


def test_a_document_that_cannot_be_saved_leaves_the_existing_file(tmp_path):
    path = tmp_path / "knee.json"
    save(path, DOCUMENTS["curve fit"])
    before = path.read_bytes()
    doc = DOCUMENTS["curve fit"]
    report = FitReport.from_dict(json.loads(TEXTS["curve fit"])["fit_report"])
    report.rms_position_mm = float("nan")
    with pytest.raises(NonFiniteError, match="rms_position_mm is nan"):
        save(path, JointDocument(doc.joint, ("knee",), report=report))
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["knee.json"]


def test_save_into_a_missing_folder_or_onto_a_folder_is_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="does not exist: create it or choose another"):
        save(tmp_path / "missing" / "j.json", DOCUMENTS["revolute"])
    with pytest.raises(InvalidInputError, match="is a folder, not a file"):
        save(tmp_path, DOCUMENTS["revolute"])
    assert os.listdir(tmp_path) == []


def _deep(n):
    return '{"schema": "spline_joints.joint", "version": 1, "joint": ' + "[" * n + "]" * n + "}"


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5000, 200_000])
def test_deeply_nested_documents_are_refused_before_parsing(depth, tmp_path):
    with pytest.raises(InvalidInputError, match=f"nested {depth + 1} levels deep, more than "
                                                f"the {MAX_DEPTH}"):
        loads(_deep(depth))
    path = tmp_path / "deep.json"
    path.write_text(_deep(depth))
    with pytest.raises(InvalidInputError, match="deep.json: joint document is nested"):
        load(path)


def test_deeply_nested_dicts_are_refused():
    d = json.loads(TEXTS["revolute"])
    node = d
    for _ in range(3000):
        node["joint"] = {}
        node = node["joint"]
    with pytest.raises(InvalidInputError, match=f"nested deeper than {MAX_DEPTH} levels"):
        document_from_dict(d)


def test_brackets_inside_strings_do_not_count_as_nesting():
    d = json.loads(TEXTS["revolute"])
    d["name"] = "[" * 1000 + "\\\"{" * 100
    assert loads(json.dumps(d)).name == d["name"]


def test_oversized_documents_are_refused_with_their_size(tmp_path):
    d = json.loads(TEXTS["revolute"])
    d["name"] = "x" * MAX_DOCUMENT_SIZE
    text = json.dumps(d)
    with pytest.raises(InvalidInputError, match=f"is {len(text)} characters long, more than the "
                                                f"{MAX_DOCUMENT_SIZE}"):
        loads(text)
    path = tmp_path / "big.json"
    path.write_text(text)
    with pytest.raises(InvalidInputError, match=f"big.json: {len(text)} bytes, more than the "
                                                f"{MAX_DOCUMENT_SIZE}"):
        load(path)
    doc = DOCUMENTS["revolute"]
    with pytest.raises(InvalidInputError, match="characters long, more than the"):
        dumps(JointDocument(doc.joint, doc.coordinate_names, doc.ranges, name="x" * MAX_DOCUMENT_SIZE))


def test_binary_and_missing_files_say_what_they_are(tmp_path):
    path = tmp_path / "image.json"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(InvalidInputError, match="image.json is not a joint JSON document: it is "
                                                "not UTF-8 text"):
        load(path)
    with pytest.raises(InvalidInputError, match="cannot read .*nothing.json: No such file"):
        load(tmp_path / "nothing.json")
    with pytest.raises(InvalidInputError, match="cannot read joint document .*: is a folder, not a file"):
        load(tmp_path)
    with pytest.raises(InvalidInputError, match="JSON text \\(str\\), got bytes"):
        loads(b"{}")
    with pytest.raises(InvalidInputError, match="not valid JSON"):
        loads('{"a": ' + "1" * 5000 + "}")  # more digits than Python converts


# -- mutations --------------------------------------------------------------------------------

def _paths(node, path=()):
    """Every path (tuple of keys and indices) to a node of parsed JSON, the root included."""
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, path + (i,))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4)
    | st.sampled_from([4.7, 0, -1, 2, 4, 1e308, 10 ** 400, "4", [], {}, [0.0] * 6, [[0.0] * 4] * 4]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                 max_size=3),
    max_leaves=6)


@st.composite
def mutated_documents(draw):
    kind = draw(st.sampled_from(sorted(TEXTS)))
    d = json.loads(TEXTS[kind])
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(_paths(d))))
        op = draw(st.sampled_from(["replace", "delete", "insert", "scale", "shift"]))
        parent = d
        for key in path[:-1]:
            parent = parent[key]
        if not path:
            if op == "replace":
                d = copy.deepcopy(draw(JSON_VALUES))
            continue
        key, value = path[-1], parent[path[-1]]
        if op == "replace":
            parent[key] = copy.deepcopy(draw(JSON_VALUES))
        elif op == "delete":
            del parent[key]
        elif op == "insert" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(draw(JSON_VALUES)))
        elif op == "insert":
            parent[draw(st.text(max_size=6))] = copy.deepcopy(draw(JSON_VALUES))
        elif isinstance(value, float) or type(value) is int and abs(value) < 1e300:
            factor = draw(st.sampled_from([-1.0, 0.0, 0.5, 1.0 + 1e-9, 2.0, 1e200]))
            parent[key] = value * factor if op == "scale" else value + draw(st.floats(-2, 2))
    return json.dumps(d)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=mutated_documents())
def test_mutated_documents_load_and_save_identically_or_raise_invalid_input(text):
    try:
        doc = loads(text)
    except InvalidInputError:
        return
    saved = dumps(doc)
    assert dumps(loads(saved)) == saved
    assert document_to_dict(loads(saved)) == json.loads(saved)


def test_an_axis_whose_squared_length_overflows_loads_as_its_direction():
    text = _mutate("elliptic", _set(("joint", "axis"), [1.3407807929942597e154, 0.0, 1.0]))
    doc = loads(text)
    np.testing.assert_allclose(json.loads(dumps(doc))["joint"]["axis"], [1.0, 0.0, 0.0],
                               rtol=0.0, atol=1e-154)
    assert dumps(loads(dumps(doc))) == dumps(doc)
