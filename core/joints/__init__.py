"""Joint library (seed 000 sections 4-5, seed 003). Every joint implements :class:`Joint`."""

from .base import Joint
from .elliptic import Elliptic
from .lower_pairs import Cylindrical, Fixed, Helical, Planar, Prismatic, Revolute, Universal
from .mapped import MappedJoint
from .opensim import CustomJoint, EllipsoidJoint, ScapulothoracicJoint
from .registry import JOINT_TYPES, joint_from_dict
from .spherical import Free, Spherical
from .spline_curve import ClosedSplineCurveJoint, SplineCurveJoint, natural_knots
from .spline_surface import SplineJoint

__all__ = ["Joint", "Revolute", "Prismatic", "Helical", "Cylindrical", "Universal", "Planar",
           "Fixed", "Elliptic", "Spherical", "Free", "SplineCurveJoint", "ClosedSplineCurveJoint",
           "natural_knots", "SplineJoint", "CustomJoint", "ScapulothoracicJoint", "EllipsoidJoint",
           "MappedJoint", "JOINT_TYPES", "joint_from_dict"]
