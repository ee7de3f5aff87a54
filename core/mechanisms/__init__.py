"""Demo mechanisms (seed 000 section 7, Fig. 5): scene descriptions without Blender and the
:func:`simulate` entry point. One module per mechanism; :mod:`.base` holds the shared
description (:class:`Mechanism`, :class:`BodyDisplay`, :class:`Drive`)."""

from .base import BodyDisplay, Drive, Mechanism, SimulationResult, simulate
from .beads import beads_on_a_wire
from .chains import hinge_chain, sliding_chain, spherical_chain
from .globe import globe
from .knee import knee_pendulum
from .scapulothoracic import scapulothoracic

__all__ = ["BodyDisplay", "Drive", "Mechanism", "SimulationResult", "simulate",
           "hinge_chain", "spherical_chain", "sliding_chain", "beads_on_a_wire", "globe",
           "knee_pendulum", "scapulothoracic"]
