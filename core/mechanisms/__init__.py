"""Demo mechanisms (seed 000 section 7, Fig. 5): scene descriptions without Blender and the
:func:`simulate` entry point. One module per mechanism; :mod:`.base` holds the shared
description (:class:`Mechanism`, :class:`BodyDisplay`, :class:`Drive`).

:data:`DEMOS` maps each demo's name to the function that builds it with default settings.
"""

from .base import BodyDisplay, Drive, Mechanism, SimulationResult, simulate
from .beads import beads_on_a_wire
from .chains import hinge_chain, sliding_chain, spherical_chain
from .deforming import deforming_surface
from .globe import spinning_globe
from .knee import knee_pendulum
from .scapulothoracic import scapulothoracic_rig
from .skeleton import skeleton_chain

__all__ = ["BodyDisplay", "Drive", "Mechanism", "SimulationResult", "simulate", "DEMOS",
           "hinge_chain", "spherical_chain", "sliding_chain", "beads_on_a_wire",
           "spinning_globe", "knee_pendulum", "scapulothoracic_rig", "deforming_surface",
           "skeleton_chain"]

#: demo name -> builder (call it with keyword overrides, e.g. ``DEMOS["globe"](duration=2)``)
DEMOS = {
    "hinge_chain": hinge_chain,
    "spherical_chain": spherical_chain,
    "sliding_chain": sliding_chain,
    "beads_on_a_wire": beads_on_a_wire,
    "globe": spinning_globe,
    "knee_pendulum": knee_pendulum,
    "scapulothoracic": scapulothoracic_rig,
    "deforming_surface": deforming_surface,
    "skeleton_chain": skeleton_chain,
}
