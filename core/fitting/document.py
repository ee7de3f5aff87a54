"""One entry point from captured samples to a stored joint: fit a spline curve or surface
joint and wrap it in a :class:`core.io.JointDocument` (the add-on's Fit Joint operator).

:class:`JointFitOptions` holds every setting; :func:`fit_joint_document` validates the
samples (:class:`JointSamples`), runs :func:`core.fitting.curve.fit_spline_curve` or
:func:`core.fitting.surface.fit_spline_surface` and returns
``JointDocument.from_fit(result, ...)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from .metric import DEFAULT_LENGTH_SCALE
from .samples import JointSamples

__all__ = ["JointFitOptions", "fit_joint_document", "KINDS"]

KINDS = ("curve", "surface")


@dataclass(frozen=True)
class JointFitOptions:
    """Settings of :func:`fit_joint_document`.

    kind: "curve" (1-DOF :class:`~core.joints.SplineCurveJoint`) or "surface" (2-DOF
    :class:`~core.joints.SplineJoint`). order: spline order (4: cubic). length_scale: metres
    weighed like one radian. Curve only: n_frames control frames, smoothing weight in [0, 1).
    Surface only: grid (2,) control points per coordinate, method "se3" or "coordinatewise".
    kind, method and the grid's length are checked here; the numbers by the fit they go to,
    before it starts (InvalidInputError naming the setting).
    """

    kind: str = "curve"
    order: int = 4
    length_scale: float = DEFAULT_LENGTH_SCALE
    n_frames: int = 8
    smoothing: float = 0.0
    grid: tuple = (6, 6)
    method: str = "se3"

    def __post_init__(self):
        from .surface import METHODS

        if self.kind not in KINDS:
            raise InvalidInputError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.method not in METHODS:
            raise InvalidInputError(f"method must be one of {METHODS}, got {self.method!r}")
        if isinstance(self.grid, (str, bytes)) or not hasattr(self.grid, "__len__") \
                or not 1 <= len(self.grid) <= 3:
            raise InvalidInputError(f"grid must give 1 to 3 control-point counts, one per "
                                    f"coordinate, e.g. (6, 6); got {self.grid!r}")

    @property
    def n_coordinates(self) -> int:
        """Coordinates of the fitted joint: 1 for a curve, ``len(grid)`` for a surface."""
        return 1 if self.kind == "curve" else len(self.grid)


def fit_joint_document(poses, q, options=JointFitOptions(), weights=None, coordinate_names=(),
                       name="", rest=None):
    """Fit a spline joint to samples and return its :class:`core.io.JointDocument`.

    Args:
        poses: (N, 4, 4) child-in-parent poses ``G_k``.
        q: (N, n) coordinates of the samples, or None (n = 0: a curve parameterized naturally
            along the ordered poses). A curve takes n <= 1, a surface n = len(options.grid).
        options: :class:`JointFitOptions`.
        weights: None or (N,) positive sample weights.
        coordinate_names: ``options.n_coordinates`` names for the document (default
            ``q0, q1, ...``); name: its label; rest: the :class:`core.io.RestFrames` of the
            bones the samples were captured on (kept in the document, so that the joint can
            be transferred to other bones: :func:`core.transfer.transfer_document`), or None.
    Returns:
        ``JointDocument.from_fit(result, coordinate_names, name)``: the joint, its range (the
        sample coordinates' box), the fit's metric and :class:`FitReport` (errors at the
        samples and between them, :func:`core.fitting.report.midpoint_errors`).
    Raises InvalidInputError (from :class:`JointSamples` and the fits, or here when the number
    of coordinates does not suit ``options.kind``), before any fitting work. The fits warn
    (UserWarning, repeated in the report's message) when the samples determine fewer control
    frames or points than ``options`` asks for.
    """
    from ..io import JointDocument

    n = 0 if q is None else int(np.prod(np.shape(q)[1:], dtype=int))
    if options.kind == "curve":
        from .curve import fit_spline_curve

        if n > 1:
            raise InvalidInputError(f"a spline curve has one coordinate; the samples have {n}: fit "
                                    "a spline surface or capture samples with one coordinate")
        result = fit_spline_curve(JointSamples(poses, q, weights), n_frames=options.n_frames,
                                  order=options.order, smoothing=options.smoothing,
                                  length_scale=options.length_scale)
    else:
        from .surface import fit_spline_surface

        k = options.n_coordinates
        if n != k:
            raise InvalidInputError(f"a spline surface on a grid of {k} axes needs {k} coordinates "
                                    f"per sample; the samples have {n}: capture them with {k}")
        result = fit_spline_surface(JointSamples(poses, q, weights), grid=tuple(options.grid),
                                    method=options.method, order=options.order,
                                    length_scale=options.length_scale)
    return JointDocument.from_fit(result, coordinate_names, name, rest)
