"""OpenSim's wrap objects: surfaces fixed to a body that a geometry path wraps over.

A :class:`WrapObject` is a WrapCylinder, WrapSphere, WrapEllipsoid or WrapTorus at ``pose``
(4, 4) in its body's frame (OpenSim's ``translation`` and ``xyz_body_rotation``, body-fixed
X-Y-Z angles), with its ``quadrant`` (``"all"``, ``"x"``, ``"-x"``, ``"y"``, ... : the side of
the surface a path may wrap on) and its sizes (m): ``radius`` and ``length`` for a cylinder
(axis z, centred), ``radius`` for a sphere, ``radii`` (3,) for an ellipsoid (OpenSim's
``dimensions``), ``radii = (inner, outer)`` for a torus.
"""

import dataclasses

import numpy as np

from ..errors import InvalidInputError

__all__ = ["WrapObject", "WRAP_KINDS", "QUADRANTS"]

#: the wrap objects the reader imports
WRAP_KINDS = ("WrapCylinder", "WrapSphere", "WrapEllipsoid", "WrapTorus")
#: OpenSim's quadrant names (``"all"`` or a signed axis)
QUADRANTS = ("all", "x", "-x", "y", "-y", "z", "-z")


@dataclasses.dataclass
class WrapObject:
    """A wrap surface on ``body`` (see the module docstring)."""

    name: str
    kind: str
    body: str
    pose: np.ndarray
    quadrant: str = "all"
    active: bool = True
    radius: float = 0.0
    length: float = 0.0
    radii: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))

    def __post_init__(self):
        where = f"wrap object {self.name!r} ({self.kind})"
        if self.kind not in WRAP_KINDS:
            raise InvalidInputError(f"{where}: the kind must be one of {WRAP_KINDS}")
        if self.quadrant not in QUADRANTS:
            raise InvalidInputError(f"{where}: quadrant {self.quadrant!r} is not one of "
                                    f"{QUADRANTS}")
        self.pose = np.asarray(self.pose, dtype=float)
        self.radii = np.atleast_1d(np.asarray(self.radii, dtype=float))
        sizes = {"WrapCylinder": {"radius": self.radius, "length": self.length},
                 "WrapSphere": {"radius": self.radius},
                 "WrapEllipsoid": {"dimensions": self.radii},
                 "WrapTorus": {"inner_radius": self.radii[:1], "outer_radius": self.radii[1:2]}
                 }[self.kind]
        for prop, value in sizes.items():
            value = np.atleast_1d(np.asarray(value, dtype=float))
            if value.size == 0 or not np.all(np.isfinite(value)) or np.any(value <= 0.0):
                raise InvalidInputError(f"{where}: its {prop} {value.tolist()} must be positive "
                                        "(m); give the surface its size")

    @property
    def axis_sign(self):
        """``(axis index or None for "all", sign)`` of the quadrant."""
        if self.quadrant == "all":
            return None, 1.0
        return "xyz".index(self.quadrant[-1]), (-1.0 if self.quadrant.startswith("-") else 1.0)
