"""Versioned JSON joint documents (core.io): exact round trips and clear errors."""

import json

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.fitting.curve import fit_spline_curve
from core.fitting.metric import SE3Metric
from core.fitting.samples import JointSamples
from core.fitting.surface import fit_spline_surface
from core.io import (SCHEMA, SCHEMA_VERSION, JointDocument, document_to_dict, dumps, load, loads,
                     save)
from core.joints.lower_pairs import Revolute
from core.reference.opensim import KneeGait2392, ScapulothoracicSeth2019


@pytest.fixture(scope="module")
def knee_doc():
    ref = KneeGait2392()
    d = ref.samples()
    res = fit_spline_curve(JointSamples(d["T_femur_tibia"], d["q"]), n_frames=8)
    return JointDocument(res.joint, ("knee_angle_r",), [ref.range], SE3Metric(0.1), res.report,
                         name="knee_r")


def test_curve_document_round_trip_is_exact(knee_doc, tmp_path):
    text = dumps(knee_doc)
    back = loads(text)
    j0, j1 = knee_doc.joint, back.joint
    assert type(j1) is type(j0) and j1.order == j0.order
    np.testing.assert_array_equal(j1.knots, j0.knots)
    np.testing.assert_array_equal(j1.control_frames, j0.control_frames)
    np.testing.assert_array_equal(j1.control_twists, j0.control_twists)
    qs = np.linspace(*j0.lower, 5).tolist() + [0.0, 0.1]
    np.testing.assert_array_equal(j1.transforms(qs), j0.transforms(qs))
    assert back.coordinate_names == ("knee_angle_r",) and back.name == "knee_r"
    np.testing.assert_array_equal(back.ranges, knee_doc.ranges)
    assert back.metric.length_scale == 0.1
    assert back.report == knee_doc.report
    np.testing.assert_array_equal(back.report.position_residuals_mm,
                                  knee_doc.report.position_residuals_mm)
    assert dumps(back) == text
    path = tmp_path / "knee.json"
    save(path, knee_doc)
    assert dumps(load(path)) == text
    d = json.loads(text)
    assert d["schema"] == SCHEMA and d["version"] == SCHEMA_VERSION
    assert d["joint"]["type"] == "SplineCurveJoint" and d["joint"]["order"] == 4


def test_surface_document_round_trip_is_exact():
    g = ScapulothoracicSeth2019().grid()
    s = JointSamples(g["T_pjoint_cjoint"].reshape(-1, 4, 4)[::2],
                     g["q"][..., :2].reshape(-1, 2)[::2])
    res = fit_spline_surface(s, (4, 4), method="coordinatewise")
    doc = JointDocument(res.joint, ("scapula_abduction", "scapula_elevation"),
                        report=res.report)
    back = loads(dumps(doc))
    np.testing.assert_array_equal(back.joint.coefficients, res.joint.coefficients)
    np.testing.assert_array_equal(back.joint.basis_twists, res.joint.basis_twists)
    np.testing.assert_array_equal(back.joint.offset, res.joint.offset)
    for a in range(2):
        np.testing.assert_array_equal(back.joint.knots[a], res.joint.knots[a])
    assert back.metric is None and back.report == res.report
    assert json.loads(dumps(doc))["joint"]["basis_twists"] == res.joint.basis_twists.tolist()


def test_document_from_fit(knee_doc):
    from core.fitting.report import FitResult
    doc = JointDocument.from_fit(FitResult(knee_doc.joint, knee_doc.report), ("knee_angle_r",),
                                 name="knee_r")
    back = loads(dumps(doc))
    np.testing.assert_array_equal(back.ranges, [[knee_doc.joint.lower[0], knee_doc.joint.upper[0]]])
    assert back.metric.length_scale == knee_doc.report.length_scale
    assert back.report == knee_doc.report and back.name == "knee_r"


def test_infinite_ranges_written_as_null():
    doc = JointDocument(Revolute((0, 0, 1)))
    d = json.loads(dumps(doc))
    assert d["coordinates"] == [{"name": "q0", "range": [None, None]}]
    back = loads(dumps(doc))
    assert np.all(np.isinf(back.ranges)) and back.report is None


def test_finite_ranges_name_the_unbounded_coordinate(knee_doc):
    np.testing.assert_array_equal(knee_doc.finite_ranges(), knee_doc.ranges)
    doc = JointDocument(Revolute((1, 0, 0)), ("flexion",), [[-1.0, np.inf]])
    with pytest.raises(InvalidInputError, match=r"'flexion' of the joint has the unbounded range "
                                                r"\[-1.0, inf\]"):
        doc.finite_ranges()


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(version=3), "unknown joint document version 3"),
    (lambda d: d.update(version="1"), "version must be an integer"),
    (lambda d: d.update(schema="other"), "not a joint document"),
    (lambda d: d.pop("joint"), "lacks 'joint'"),
    (lambda d: d["joint"].pop("type"), "lacks 'type'"),
    (lambda d: d["joint"].update(type="Wormhole"), "unknown joint type"),
    (lambda d: d["joint"].pop("knots"), "malformed"),
    (lambda d: d["joint"].update(control_twists=[[0.0] * 5]), "malformed"),
    (lambda d: d.update(coordinates=[]), "0 coordinates"),
    (lambda d: d["coordinates"][0].update(range=["a", 1]), "numbers or null"),
    (lambda d: d.update(metric={"name": "inertia"}), "unknown metric"),
    (lambda d: d["fit_report"].update(status="lost"), "status"),
    (lambda d: d.update(color="red"), "unknown field"),
])
def test_malformed_documents_raise(knee_doc, mutate, message):
    d = document_to_dict(knee_doc)
    mutate(d)
    with pytest.raises(InvalidInputError, match=message):
        loads(json.dumps(d))


def test_not_json_and_bad_document_arguments(knee_doc):
    with pytest.raises(InvalidInputError, match="not valid JSON"):
        loads("{nope")
    with pytest.raises(InvalidInputError, match="JSON object"):
        loads("[1, 2]")
    with pytest.raises(InvalidInputError, match="coordinate_names"):
        JointDocument(knee_doc.joint, ("a", "b"))
    with pytest.raises(InvalidInputError, match="ranges"):
        JointDocument(knee_doc.joint, ("a",), [[1.0, 0.0]])
