"""Demo mechanisms (seed 000 section 7, Fig. 5): scene descriptions without Blender and the
:func:`simulate_mechanism` entry point. One module per mechanism; :mod:`.base` holds the
shared description (:class:`Mechanism`, :class:`BodyDisplay`, and :class:`Drive` from
:mod:`core.integrators`).

:data:`DEMOS` maps each demo's name to its builder. Every builder follows one contract:

    builder(*, fps=..., substeps=..., duration=..., **params) -> Mechanism

keyword arguments only: ``fps`` output frames per second, ``substeps`` integration steps per
frame (the step is ``1 / (fps * substeps)`` s) and ``duration`` seconds simulated, each with
a per-demo default, become the Mechanism's ``fps``, ``substeps`` and ``duration`` and are
validated by :func:`check_timing` before any other work;
``params`` are the demo's own settings (links, masses, rates, ...), whose defaults give the
demo as shown. Callers such as the add-on pass the scene's settings as these three keywords.
"""

from .base import (BakeResult, BodyDisplay, Drive, Mechanism, MechanismRun, check_timing,
                   energy_drift_limit, energy_drift_warning, simulate_mechanism)
from .beads import beads_on_a_wire
from .chains import hinge_chain, sliding_chain, spherical_chain
from .deforming import deforming_surface
from .globe import spinning_globe
from .knee import knee_pendulum
from .scapulothoracic import scapulothoracic_rig
from .skeleton import skeleton_chain

__all__ = ["BodyDisplay", "Drive", "Mechanism", "BakeResult", "simulate_mechanism", "MechanismRun",
           "DEMOS",
           "check_timing", "energy_drift_limit", "energy_drift_warning",
           "hinge_chain", "spherical_chain", "sliding_chain", "beads_on_a_wire",
           "spinning_globe", "knee_pendulum", "scapulothoracic_rig", "deforming_surface",
           "skeleton_chain"]

#: demo name -> builder (the contract above; e.g. ``DEMOS["globe"](duration=2)``)
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
