"""Contacts: collision shapes on a model's bodies, colliders of the world, the narrow and
broad phases, and the contact solver that an integrator applies after every substep with
the joint limits (:mod:`core.contacts.solver`)."""

from .shapes import (Box, Capsule, ConvexHull, MovingCollider, Plane, Shape, Sphere,
                     StaticCollider)
from .solver import ContactReport, ContactSolver

__all__ = ["Shape", "Sphere", "Capsule", "Box", "ConvexHull", "Plane", "StaticCollider",
           "MovingCollider", "ContactSolver", "ContactReport"]
