"""Joint library (seed 000 sections 4-5, seed 003). Every joint implements :class:`Joint`."""

from .base import Joint
from .elliptic import Elliptic
from .lower_pairs import Cylindrical, Fixed, Helical, Planar, Prismatic, Revolute, Universal

__all__ = ["Joint", "Revolute", "Prismatic", "Helical", "Cylindrical", "Universal", "Planar",
           "Fixed", "Elliptic"]
