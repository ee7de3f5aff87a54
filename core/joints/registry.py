"""Joint (de)serialization: :func:`joint_from_dict` rebuilds any joint from ``joint.to_dict()``.

Every family's ``to_dict()`` writes its class name under ``"type"``; :data:`JOINT_TYPES`
lists the families by that name and :func:`joint_from_dict` dispatches to the class's
``from_dict``. A new family is added to the tuple below.
"""

from ..errors import InvalidInputError
from .elliptic import Elliptic
from .lower_pairs import Cylindrical, Fixed, Helical, Planar, Prismatic, Revolute, Universal
from .mapped import MappedJoint
from .opensim import CustomJoint, EllipsoidJoint, ScapulothoracicJoint
from .spherical import Free, Spherical
from .spline_curve import ClosedSplineCurveJoint, SplineCurveJoint
from .spline_surface import SplineJoint

__all__ = ["JOINT_TYPES", "joint_from_dict"]

#: ``"type"`` string -> joint class
JOINT_TYPES = {cls.__name__: cls for cls in (
    Revolute, Prismatic, Helical, Cylindrical, Universal, Planar, Fixed, Elliptic,
    Spherical, Free, SplineCurveJoint, ClosedSplineCurveJoint, SplineJoint, CustomJoint,
    ScapulothoracicJoint, EllipsoidJoint, MappedJoint,
)}


def joint_from_dict(d):
    """Rebuild a joint from a dict written by its ``to_dict()`` (e.g. read from JSON).

    ``d: {"type": <class name>, <parameters>...}``. Raises InvalidInputError for a
    non-dict, a missing or unknown ``"type"``, or parameters the class rejects.
    """
    if not isinstance(d, dict):
        raise InvalidInputError(f"joint_from_dict expects a dict, got {type(d).__name__}; "
                                "pass the output of joint.to_dict()")
    kind = d.get("type")
    if kind not in JOINT_TYPES:
        raise InvalidInputError(f"unknown joint type {kind!r}; expected one of "
                                f"{sorted(JOINT_TYPES)} (the 'type' written by to_dict())")
    return JOINT_TYPES[kind].from_dict(d)
