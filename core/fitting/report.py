"""Fit reports: what every fit returns besides the joint (MuJoCo's minimize.py style: a status
and an iteration trace; non-convergence is a status, never an exception)."""

from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidInputError
from .metric import pose_errors

__all__ = ["FitReport", "FitResult", "STATUSES", "make_report"]

#: possible values of FitReport.status
STATUSES = ("converged", "max_iterations", "diverged")


@dataclass
class FitReport:
    """Accuracy and convergence of one fit.

    Fields:
        rms_position_mm, max_position_mm: RMS / max position error over the samples (mm).
        rms_rotation_deg, max_rotation_deg: RMS / max rotation error (deg).
        status: one of :data:`STATUSES`.
        iterations: accepted plus rejected solver iterations.
        objective_trace: objective after each accepted iteration, starting with the initial one.
        position_residuals_mm, rotation_residuals_deg: per-sample errors, (N,) each.
        method: which fit produced it ("curve", "surface-se3", "surface-coordinatewise").
        length_scale: the metric's length scale (m).
        smoothing: the smoothing weight w (curve fits; 0 otherwise).
        mean_hessian_norm: mean weighted joint-Hessian norm over the samples (curve fits).
        message: one line for humans.
    """

    rms_position_mm: float
    max_position_mm: float
    rms_rotation_deg: float
    max_rotation_deg: float
    status: str
    iterations: int
    objective_trace: list = field(default_factory=list)
    position_residuals_mm: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rotation_residuals_deg: np.ndarray = field(default_factory=lambda: np.zeros(0))
    method: str = ""
    length_scale: float = 0.0
    smoothing: float = 0.0
    mean_hessian_norm: float = float("nan")
    message: str = ""

    @property
    def converged(self):
        return self.status == "converged"

    def to_dict(self):
        """Plain JSON-able data (lists and numbers); :meth:`from_dict` inverts it exactly."""
        d = {}
        for name in self.__dataclass_fields__:
            v = getattr(self, name)
            if isinstance(v, np.ndarray):
                v = v.tolist()
            elif isinstance(v, (list, tuple)):
                v = [float(x) for x in v]
            elif isinstance(v, (np.floating, np.integer)):
                v = v.item()
            d[name] = v
        if not np.isfinite(d["mean_hessian_norm"]):
            d["mean_hessian_norm"] = None
        return d

    @classmethod
    def from_dict(cls, d):
        if not isinstance(d, dict):
            raise InvalidInputError(f"fit report must be an object, got {type(d).__name__}")
        names = set(cls.__dataclass_fields__)
        unknown = set(d) - names
        if unknown:
            raise InvalidInputError(f"fit report has unknown field(s) {sorted(unknown)}; "
                                    f"expected a subset of {sorted(names)}")
        required = ("rms_position_mm", "max_position_mm", "rms_rotation_deg",
                    "max_rotation_deg", "status", "iterations")
        missing = [k for k in required if k not in d]
        if missing:
            raise InvalidInputError(f"fit report lacks field(s) {missing}")
        kw = dict(d)
        if kw["status"] not in STATUSES:
            raise InvalidInputError(f"fit report status {kw['status']!r} is not one of {STATUSES}")
        try:
            for k in ("rms_position_mm", "max_position_mm", "rms_rotation_deg",
                      "max_rotation_deg", "length_scale", "smoothing"):
                if k in kw:
                    kw[k] = float(kw[k])
            kw["iterations"] = int(kw["iterations"])
            kw["mean_hessian_norm"] = (float("nan") if kw.get("mean_hessian_norm") is None
                                       else float(kw["mean_hessian_norm"]))
            for k in ("position_residuals_mm", "rotation_residuals_deg"):
                if k in kw:
                    kw[k] = np.array(kw[k], dtype=float).reshape(-1)
            if "objective_trace" in kw:
                kw["objective_trace"] = [float(x) for x in kw["objective_trace"]]
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"fit report has a malformed number ({exc})") from None
        return cls(**kw)

    def __eq__(self, other):
        if not isinstance(other, FitReport):
            return NotImplemented
        a, b = self.to_dict(), other.to_dict()
        return a == b


@dataclass
class FitResult:
    """A fitted joint and its :class:`FitReport`."""

    joint: object
    report: FitReport


def make_report(G_fit, G_target, *, status, iterations, trace, method, length_scale,
                smoothing=0.0, mean_hessian_norm=float("nan"), message=""):
    """Build a FitReport from fitted and target poses ``(N, 4, 4)`` each."""
    if status not in STATUSES:
        raise InvalidInputError(f"status must be one of {STATUSES}, got {status!r}")
    pos, rot = pose_errors(G_fit, G_target)
    return FitReport(
        rms_position_mm=float(np.sqrt(np.mean(pos ** 2))), max_position_mm=float(pos.max()),
        rms_rotation_deg=float(np.sqrt(np.mean(rot ** 2))), max_rotation_deg=float(rot.max()),
        status=status, iterations=int(iterations), objective_trace=[float(x) for x in trace],
        position_residuals_mm=pos, rotation_residuals_deg=rot, method=method,
        length_scale=float(length_scale), smoothing=float(smoothing),
        mean_hessian_norm=float(mean_hessian_norm), message=message)
