"""Shared operator plumbing: whether there is a target bone or an OpenSim armature, ValueErrors
turned into reports, and the threaded run of a bake job."""

from __future__ import annotations

import functools
import threading

from ..bridge import target_bone
from ..documents import is_osim_armature


def has_target(context) -> bool:
    try:
        target_bone(context)
    except ValueError:
        return False
    return True


def reporting(method):
    """Wrap an operator method ``method(self, context, *args)``: a ValueError (core or bridge)
    becomes an ERROR report and CANCELLED. (Blender checks the argument count of ``invoke`` and
    ``modal``, so those delegate to a wrapped method instead of being wrapped.)

    Operators compute everything before writing to the scene, so a cancelled run changes nothing.
    """

    @functools.wraps(method)
    def wrapper(self, context, *args):
        try:
            return method(self, context, *args)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}

    return wrapper


class OsimArmatureOperator:
    """Mixin: the active object must be an imported OpenSim armature (else the poll says so)."""

    @classmethod
    def poll(cls, context):
        if is_osim_armature(context.object):
            return True
        cls.poll_message_set("Make an imported OpenSim armature the active object "
                             "(File > Import > OpenSim Model)")
        return False


class BoneOperator:
    """Mixin for operators on the active pose bone (the joint's child).

    ``poll`` needs an active pose bone; ``execute`` finds it and calls
    ``self.run(context, armature, pose_bone, settings)`` (settings: ``pose_bone.spline_joints``),
    turning a ValueError into an ERROR report and CANCELLED (see :func:`reporting`).
    """

    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return has_target(context)

    @reporting
    def execute(self, context):
        armature, pose_bone = target_bone(context)
        return self.run(context, armature, pose_bone, pose_bone.spline_joints)


class ThreadedBake:
    """Operator mixin for a bake job (:mod:`..jobs`: ``simulate()``,
    ``progress``/``fraction``, ``cancel()``, ``finish(scene)``): headless ``execute`` runs it at
    once; ``invoke`` runs ``simulate`` in a worker thread with a progress bar, Esc cancels.
    A job's ``start_warnings`` are reported before it simulates. The operator defines
    ``make_job(context)``."""

    def _warn_early(self):
        """Report the job's ``start_warnings`` (if it has them) before it simulates."""
        for warning in getattr(self._job, "start_warnings", ()):
            self.report({"WARNING"}, warning)

    def _finish(self, context):
        status, level, message = self._job.finish(context.scene)
        self.report({level}, message)
        return status

    @reporting
    def execute(self, context):
        self._job = self.make_job(context)
        self._warn_early()
        self._job.simulate()
        return self._finish(context)

    def invoke(self, context, event):
        """Interactive run: simulate in a worker thread (numpy only) with a progress bar."""
        return self._start(context)

    def modal(self, context, event):
        return self._step(context, event.type)

    @reporting
    def _start(self, context):
        self._job = self.make_job(context)
        self._warn_early()
        self._thread = threading.Thread(target=self._job.simulate, daemon=True)
        self._thread.start()
        wm = context.window_manager
        wm.progress_begin(0, 100)
        self._timer = wm.event_timer_add(0.1, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    @reporting
    def _step(self, context, event_type: str):
        wm = context.window_manager
        if event_type == "ESC":
            self._job.cancel()
            return {"RUNNING_MODAL"}
        if event_type != "TIMER":
            return {"PASS_THROUGH"}
        wm.progress_update(int(100 * self._job.fraction))
        if self._thread.is_alive():
            return {"RUNNING_MODAL"}
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        return self._finish(context)
