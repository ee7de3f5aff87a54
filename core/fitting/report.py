"""Fit reports: what every fit returns besides the joint (MuJoCo's minimize.py style: a status
and an iteration trace; non-convergence is a status, never an exception).

Training errors are measured at the samples; the held-out errors of :func:`midpoint_errors`
measure the fitted joint between them, where a fit with too many control frames strays while
passing through every sample. Both are taken from the returned joint's own evaluation
(:func:`joint_poses`), so a report never describes a joint other than the one returned.
"""

import math
import numbers
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial import cKDTree

from ..errors import InvalidInputError
from ..lie import se3
from ..checks import real_number, whole_number
from .metric import pose_errors

__all__ = ["FitReport", "FitResult", "STATUSES", "ERROR_FLOOR_MM", "ERROR_FLOOR_DEG", "make_report", "joint_poses",
           "midpoint_pairs", "midpoint_errors", "HELDOUT_FIELDS"]

#: FitReport fields of the held-out (midpoint) check; NaN (stored as null) when not measured
HELDOUT_FIELDS = ("heldout_rms_position_mm", "heldout_max_position_mm",
                  "heldout_rms_rotation_deg", "heldout_max_rotation_deg")
_OPTIONAL = ("mean_hessian_norm",) + HELDOUT_FIELDS

#: possible values of FitReport.status
STATUSES = ("converged", "max_iterations", "diverged")

#: the error floor of a fit (max over the samples): a fit whose every sample is within it has
#: converged whatever its solver's tolerance says. 1e-3 mm is ten times the single-precision
#: round-off of a pose Blender stores for a 1 m bone (1e-7 m) and below the three decimals the
#: panel shows; 1e-3 deg likewise (1.7e-5 rad against float32's 1.2e-7)
ERROR_FLOOR_MM = 1e-3
ERROR_FLOOR_DEG = 1e-3


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
        heldout_rms_position_mm, heldout_max_position_mm, heldout_rms_rotation_deg,
            heldout_max_rotation_deg: RMS / max error of the fitted joint at the midpoints
            between neighbouring samples, against the samples' cubic interpolation there
            (:func:`midpoint_errors`); NaN when not measured.
        message: one line for humans.

    ``to_dict`` writes the optional NaN fields (``mean_hessian_norm`` and the held-out ones)
    as None; ``from_dict`` accepts exactly what ``to_dict`` writes and refuses NaN and
    infinite numbers elsewhere.
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
    heldout_rms_position_mm: float = float("nan")
    heldout_max_position_mm: float = float("nan")
    heldout_rms_rotation_deg: float = float("nan")
    heldout_max_rotation_deg: float = float("nan")
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
        for name in _OPTIONAL:
            if not np.isfinite(d[name]):
                d[name] = None
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
        for k in ("rms_position_mm", "max_position_mm", "rms_rotation_deg", "max_rotation_deg",
                  "length_scale", "smoothing") + _OPTIONAL:
            if k in _OPTIONAL and kw.get(k) is None:
                kw[k] = math.nan
            elif k in kw:
                kw[k] = real_number(kw[k], f"fit report field '{k}'",
                                    advice="a report holds finite numbers only (null for an "
                                           "unmeasured optional field): fit the joint again")
        kw["iterations"] = whole_number(kw["iterations"], "fit report field 'iterations'", 0)
        for k in ("position_residuals_mm", "rotation_residuals_deg", "objective_trace"):
            if k not in kw:
                continue
            v = kw[k]
            if not isinstance(v, (list, np.ndarray)) or not all(
                    isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)
                    for x in (v.ravel() if isinstance(v, np.ndarray) else v)):
                raise InvalidInputError(f"fit report field '{k}' must be a list of finite "
                                        "numbers; fit the joint again")
            kw[k] = np.array(v, dtype=float).reshape(-1)
            if k == "objective_trace":
                kw[k] = kw[k].tolist()
        for k in ("method", "message"):
            if not isinstance(kw.get(k, ""), str):
                raise InvalidInputError(f"fit report field '{k}' must be a string")
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


def joint_poses(joint, q):
    """The returned joint's own poses at the sample coordinates: ``q (N, n) -> (N, 4, 4)``.

    Raises InvalidInputError when the joint cannot evaluate them (coordinates beyond what a
    spline joint evaluates, or poses that are not finite), so that a fit never reports on a
    joint that cannot reproduce its own samples.
    """
    lo, hi = q.min(axis=0), q.max(axis=0)
    advice = (f"the sample coordinates span [{', '.join(f'{v:g}' for v in lo)}] to "
              f"[{', '.join(f'{v:g}' for v in hi)}]: express them in radians or metres (or "
              "rescale them to a range near 1) and fit again")
    try:
        G = joint.transforms(q)
    except InvalidInputError:
        G = None
    if G is None or not np.all(np.isfinite(G)):
        raise InvalidInputError(f"the fitted joint cannot evaluate its own sample coordinates; "
                                f"{advice}")
    return G


def midpoint_pairs(q):
    """Index pairs ``(M, 2)`` of neighbouring samples for the held-out check.

    q: (N, n). One coordinate: consecutive samples in coordinate order. Several: each sample
    with its ``2 n`` nearest neighbours in coordinates scaled to the unit box (on a grid, its
    neighbours along every axis), each pair once.
    """
    N, n = q.shape
    if n == 1:
        order = np.argsort(q[:, 0], kind="stable")
        return np.stack([order[:-1], order[1:]], axis=1)
    span = q.max(axis=0) - q.min(axis=0)
    x = (q - q.min(axis=0)) / np.where(span > 0.0, span, 1.0)
    k = min(2 * n + 1, N)
    _, idx = cKDTree(x).query(x, k=k)
    a = np.repeat(np.arange(N), k - 1)
    b = idx[:, 1:].reshape(-1)
    return np.unique(np.sort(np.stack([a, b], axis=1), axis=1), axis=0)


#: sample offsets, in steps of ``q_j - q_i`` from ``q_i``, of the in-line cubic stencils
_IN_LINE = np.array([(-1.0, 0.0, 1.0, 2.0), (0.0, 1.0, 2.0, 3.0), (-2.0, -1.0, 0.0, 1.0)])


def _lagrange_at(t, nodes):
    """Lagrange weights ``(M, 4)`` at ``t (M,)`` of the cubics through ``nodes (M, 4)``."""
    w = np.ones(nodes.shape)
    for a in range(4):
        for b in range(4):
            if a != b:
                w[:, a] *= (t - nodes[:, b]) / (nodes[:, a] - nodes[:, b])
    return w


def _row_ids(keys):
    """An id per row of the integer array ``keys (K, n)``, equal for equal rows and ordered as
    the rows sort (numpy's ``unique(keys, axis=0, return_inverse=True)``): the columns are
    ranked one at a time, each step a one-dimensional sort of ids below K, which is about ten
    times faster than sorting the rows as records."""
    ids = np.zeros(len(keys), dtype=np.int64)
    for column in keys.T:
        _, rank = np.unique(column, return_inverse=True)
        _, ids = np.unique(ids * (rank.max() + 1) + rank.reshape(-1), return_inverse=True)
        ids = ids.reshape(-1)
    return ids


def _stencils(q, pairs):
    """Four samples and their cubic interpolation weights at each pair's midpoint: indices
    ``(M, 4)``, weights ``(M, 4)`` and whether the pair has such a stencil ``(M,)``; a pair
    without four samples in line gets its two samples with weights 1/2 (the geodesic
    midpoint).

    One coordinate: the four samples nearest in coordinate order. Several: samples at
    ``q_i + s (q_j - q_i)`` for ``s`` in one row of :data:`_IN_LINE`, as a grid has them
    (matched to 1e-9 of the coordinate range).
    """
    M = pairs.shape[0]
    idx = np.concatenate([pairs, pairs], axis=1)
    w = np.tile([0.5, 0.5, 0.0, 0.0], (M, 1))
    N, n = q.shape
    if N < 4:
        return idx, w, np.zeros(M, dtype=bool)
    if n == 1:
        order = np.argsort(q[:, 0], kind="stable")
        start = np.clip(np.arange(M) - 1, 0, N - 4)
        idx = order[start[:, None] + np.arange(4)]
        mid = 0.5 * (q[pairs[:, 0], 0] + q[pairs[:, 1], 0])
        return idx, _lagrange_at(mid, q[idx, 0]), np.ones(M, dtype=bool)
    lo, span = q.min(axis=0), np.ptp(q, axis=0)
    span = np.where(span > 0.0, span, 1.0)
    step = q[pairs[:, 1]] - q[pairs[:, 0]]
    points = q[pairs[:, 0], None, None, :] + _IN_LINE[None, :, :, None] * step[:, None, None, :]
    keys = np.round((np.concatenate([q, points.reshape(-1, n)]) - lo) / span * 1e9)
    group = _row_ids(keys.astype(np.int64))
    owner = np.full(group.max() + 1, -1)
    owner[group[:N]] = np.arange(N)
    found = owner[group[N:]].reshape(M, len(_IN_LINE), 4)
    usable = np.all(found >= 0, axis=2)  # (M, 3)
    has = np.any(usable, axis=1)
    first = np.argmax(usable, axis=1)[has]
    idx[has] = found[has, first]
    w[has] = _lagrange_at(np.full(first.size, 0.5), _IN_LINE[first])
    return idx, w, has


def midpoint_errors(joint, q, poses):
    """Held-out position (mm) and rotation (deg) errors, ``(M,)`` each, of a fitted joint.

    For each pair ``(i, j)`` of :func:`midpoint_pairs`, the joint at the midpoint coordinate
    ``(q_i + q_j) / 2``, where no sample lies, is compared with the samples' own cubic
    interpolation there: ``C exp(sum_a w_a log(C^-1 G_a))`` over four samples in line
    (:func:`_stencils`), ``C`` the geodesic midpoint of ``G_i`` and ``G_j``. A fit that passes
    through every sample but wanders between them (more control frames than the samples
    determine) shows here, while on smooth motion the reference's own error falls as the
    fourth power of the sample spacing. Pairs without four samples in line (the diagonal
    neighbours at a grid's corners) are left out when other pairs have them; when none has
    (scattered samples, or fewer than four), every pair is compared with ``C``, whose own
    error falls as the square of the spacing, so that the figure is then an upper estimate.
    q: (N, n); poses: (N, 4, 4). One batched joint evaluation.
    """
    pairs = midpoint_pairs(q)
    idx, w, cubic = _stencils(q, pairs)
    if np.any(cubic) and not np.all(cubic):
        pairs, idx, w = pairs[cubic], idx[cubic], w[cubic]
    A, B = poses[pairs[:, 0]], poses[pairs[:, 1]]
    centre = A @ se3.exp(0.5 * se3.log(se3.inv(A) @ B))
    chart = se3.log(se3.inv(centre)[:, None] @ poses[idx])  # (M, 4, 6)
    reference = centre @ se3.exp(np.einsum("ma,mai->mi", w, chart))
    return pose_errors(joint_poses(joint, 0.5 * (q[pairs[:, 0]] + q[pairs[:, 1]])), reference)


def _rms_max(x):
    return float(np.sqrt(np.mean(x ** 2))), float(x.max())


def make_report(G_fit, G_target, *, status, iterations, trace, method, length_scale,
                smoothing=0.0, mean_hessian_norm=float("nan"), heldout=None, message=""):
    """Build a FitReport from fitted and target poses ``(N, 4, 4)`` each; ``heldout``: None or
    the ``(position_mm (M,), rotation_deg (M,))`` of :func:`midpoint_errors`.

    A solver stopped by its iteration cap ("max_iterations") with every sample within
    :data:`ERROR_FLOOR_MM` and :data:`ERROR_FLOOR_DEG` is reported "converged" (the message
    says so): its errors are at the floor, nothing is left to converge."""
    if status not in STATUSES:
        raise InvalidInputError(f"status must be one of {STATUSES}, got {status!r}")
    pos, rot = pose_errors(G_fit, G_target)
    held = (math.nan,) * 4
    if heldout is not None and heldout[0].size:
        held = _rms_max(heldout[0]) + _rms_max(heldout[1])
    (rms_pos, max_pos), (rms_rot, max_rot) = _rms_max(pos), _rms_max(rot)
    if status == "max_iterations" and max_pos <= ERROR_FLOOR_MM and max_rot <= ERROR_FLOOR_DEG:
        status = "converged"
        message += (f" (iteration cap reached with every sample within the error floor, "
                    f"{ERROR_FLOOR_MM:g} mm and {ERROR_FLOOR_DEG:g} deg)")
    return FitReport(
        rms_position_mm=rms_pos, max_position_mm=max_pos, rms_rotation_deg=rms_rot,
        max_rotation_deg=max_rot, status=status, iterations=int(iterations),
        objective_trace=[float(x) for x in trace],
        position_residuals_mm=pos, rotation_residuals_deg=rot, method=method,
        length_scale=float(length_scale), smoothing=float(smoothing),
        mean_hessian_norm=float(mean_hessian_norm), message=message,
        **dict(zip(HELDOUT_FIELDS, held)))
