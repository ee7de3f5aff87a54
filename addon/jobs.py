"""The shape of a bake job, which the operators run headless or in a worker thread.

A job reads everything it needs from Blender when it is made (main thread); ``simulate()``
is numpy only and may run in a worker thread, handing the core :meth:`Job.progress` as its
``progress(fraction) -> bool`` callback and keeping the result or the exception;
``finish(scene)`` (main thread) writes a completed result and returns (operator result,
report level, message), writes nothing for a cancelled one and raises ValueError for a failed
one. :meth:`Job.cancel` (Esc) makes the next progress call return False, so the core stops.
:class:`.mechanism_bake.BakeJob`, :class:`.linkage_bake.LinkageBakeJob` and
:class:`.rig_jobs.RigJob` are jobs, and so are the :class:`ToolJob` of :mod:`.mocap` and
:mod:`.muscle_jobs`; the operators' ``ThreadedBake`` runs them.
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


class ToolJob(Job):
    """A job whose ``_run()`` (any thread) reads its files and computes, and whose
    ``write(scene, result)`` (main thread) writes its result into the scene and returns
    (operator result, report level, message). ``finish`` writes nothing for a cancelled run
    (:attr:`cancelled_text` is reported) and raises ValueError ``"<refused_text>: <why>"``
    for a refused one."""

    refused_text = "Nothing done"
    cancelled_text = "Cancelled: nothing was changed"

    def __init__(self):
        self.fraction, self.cancelled, self.result = 0.0, False, None

    def simulate(self):
        try:
            self.result = self._run()
        except ValueError as exc:  # handed to the main thread, reported there
            self.result = exc

    def finish(self, scene):
        if isinstance(self.result, ValueError):
            raise ValueError(f"{self.refused_text}: {self.result}")
        if self.result is None:
            return {"CANCELLED"}, "WARNING", self.cancelled_text
        return self.write(scene, self.result)
