"""Joint library (seed 000 sections 4-5, seed 003). Every joint implements :class:`Joint`."""

from .base import Joint

__all__ = ["Joint"]
