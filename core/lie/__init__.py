"""Lie groups SO(3) and SE(3): ``from core.lie import so3, se3``."""

from . import se3, so3

__all__ = ["so3", "se3"]
