"""Fit statuses in words a user reads: an iteration cap reached with every sample at the error
floor is "converged"; above the floor the cap stays a status of its own."""

import numpy as np

from core.fitting.report import ERROR_FLOOR_DEG, ERROR_FLOOR_MM, make_report
from core.lie import se3


def _report(offset_mm, status="max_iterations"):
    target = np.tile(np.eye(4), (3, 1, 1))
    fit = target.copy()
    fit[:, 0, 3] += offset_mm / 1000.0
    return make_report(fit, target, status=status, iterations=50, trace=[1.0],
                       method="curve", length_scale=0.1, message="4 control frames")


def test_an_iteration_cap_at_the_error_floor_is_converged():
    report = _report(0.5 * ERROR_FLOOR_MM)
    assert report.status == "converged" and report.converged
    assert "iteration cap reached" in report.message and "error floor" in report.message


def test_an_iteration_cap_above_the_floor_stays_a_cap():
    assert _report(2.0 * ERROR_FLOOR_MM).status == "max_iterations"
    turned = np.tile(np.eye(4), (3, 1, 1))
    fit = turned @ se3.exp(np.array([np.radians(2.0 * ERROR_FLOOR_DEG), 0, 0, 0, 0, 0]))
    report = make_report(fit, turned, status="max_iterations", iterations=50, trace=[1.0],
                         method="curve", length_scale=0.1)
    assert report.status == "max_iterations"
    assert _report(0.0, status="diverged").status == "diverged"
