"""Spline joint design from data (seed 000 sections 6-8): samples, the SE(3) metric, fit
reports, 1-DOF curve fitting with smoothing, 2-DOF surface fitting and inverse kinematics.

Entry points: :func:`fit_spline_curve`, :func:`fit_spline_surface`, :func:`solve_ik`.
Modules are imported lazily by callers (``from core.fitting.curve import fit_spline_curve``);
this package imports only the light data types.
"""

from .metric import SE3Metric, pose_errors
from .report import FitReport, FitResult
from .samples import JointSamples

__all__ = ["JointSamples", "FitReport", "FitResult", "SE3Metric", "pose_errors"]
