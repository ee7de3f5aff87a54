"""Lie groups SO(3) and SE(3): ``from core.lie import so3, se3``; their trigonometric
coefficient functions with Taylor branches near zero: ``core.lie.series``."""

from . import se3, series, so3

__all__ = ["so3", "se3", "series"]
