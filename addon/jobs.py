"""The shape of a bake job, which the operators run headless or in a worker thread.

A job reads everything it needs from Blender when it is made (main thread); ``simulate()``
is numpy only and may run in a worker thread, handing the core :meth:`Job.progress` as its
``progress(fraction) -> bool`` callback and keeping the result or the exception;
``finish(scene)`` (main thread) writes a completed result and returns (operator result,
report level, message), writes nothing for a cancelled one and raises ValueError for a failed
one. :meth:`Job.cancel` (Esc) makes the next progress call return False, so the core stops.
:class:`.mechanism_bake.BakeJob`, :class:`.linkage_bake.LinkageBakeJob` and
:class:`.rig_jobs.RigJob` are jobs; the operators' ``ThreadedBake`` runs them.
"""

from __future__ import annotations


class Job:
    """Progress and cancelling of a bake job; a job sets ``fraction = 0.0`` and
    ``cancelled = False`` when it is made and defines ``simulate`` and its writing."""

    def progress(self, fraction: float) -> bool:
        """The core's progress callback: records the fraction done; False once cancelled."""
        self.fraction = fraction
        return not self.cancelled

    def cancel(self) -> None:
        self.cancelled = True
