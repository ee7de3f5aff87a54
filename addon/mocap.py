"""Motion capture in the scene: a marker trial (.trc, .c3d) as animated empties.

:class:`MarkerImportJob` reads a trial (:func:`core.io.markers.read_trc`,
:func:`core.io.c3d.read_c3d`) and lays out its keys off the main thread; ``finish(scene)``
writes them into a new collection named after the trial:

* a root empty (``<trial> lab``) holding the lab frame: turned +90 deg about X for a Y-up
  trial (OpenSim's convention, as the imported OpenSim armature is), unturned for a Z-up one;
* one empty per marker (named by its label, which its property :data:`LABEL_KEY` keeps),
  parented to the root, drawn as a small sphere with its name shown,
  its location keyed (in the lab frame, metres) on every sample where the marker is seen;
* where a marker is not seen (a gap: NaN in the trial) its ``hide_viewport`` and
  ``hide_render`` are keyed on (constant interpolation), so it vanishes for the gap's frames
  and the user sees where the trial has no data.

Rows map to frames by their frame numbers (:func:`core.osim_rig.trial_frames`):
at the trial's own rate (the scene's rate set to it) every row is a whole frame; at another
scene rate rows fall between frames and are keyed there, so every sample is kept.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import bpy
import numpy as np

from . import bridge
from .jobs import Job

#: display radius (m) of a marker's sphere
MARKER_SIZE = 0.012
#: the key group of a marker's location and visibility keys
MARKER_GROUP = "Marker"
#: custom property of a marker's empty: the marker's label in the trial (the object's name
#: gets Blender's ".001" suffix when another trial's marker has the label)
LABEL_KEY = "spline_joints_marker_label"
#: trial up axes: the root empty's rotation about X (radians)
UP_AXES = {"Y": 0.5 * math.pi, "Z": 0.0}


def read_trial(path):
    """The :class:`core.io.markers.MarkerTrial` of a .trc or .c3d file (by its extension)."""
    if os.path.splitext(os.fspath(path))[1].lower() == ".c3d":
        from ..core.io.c3d import read_c3d

        return read_c3d(path)
    from ..core.io.markers import read_trc

    return read_trc(path)


@dataclass(frozen=True, eq=False)
class MarkerKeys:
    """What one marker's empty is keyed with: location keys ``frames (K,)`` and ``locations
    (K, 3)`` on the samples where it is seen; hide keys ``hide_frames (H,)`` with 0/1
    ``hidden (H,)`` at the first row and wherever it appears or vanishes; ``gap_rows``: how
    many rows it is not seen on."""

    name: str
    frames: np.ndarray
    locations: np.ndarray
    hide_frames: np.ndarray
    hidden: np.ndarray
    gap_rows: int


def marker_keys(name, frames, positions) -> MarkerKeys:
    """:class:`MarkerKeys` of one marker: ``frames (N,)`` of the rows, ``positions (N, 3)``
    (NaN rows: not seen)."""
    seen = np.all(np.isfinite(positions), axis=1)
    change = np.flatnonzero(np.diff(seen.astype(np.int8))) + 1
    rows = np.concatenate([[0], change])
    return MarkerKeys(name=name, frames=frames[seen], locations=positions[seen],
                      hide_frames=frames[rows], hidden=(~seen[rows]).astype(float),
                      gap_rows=int(np.count_nonzero(~seen)))


class MarkerImportJob(Job):
    """A marker trial read and laid out as keys (``simulate``, any thread) and written into
    the scene (``finish``, main thread): see the module docstring.

    up_axis: a key of :data:`UP_AXES`; use_trial_timing: set the scene's rate to the trial's
    and its frame range to the keyed frames (else the scene's rate is kept)."""

    def __init__(self, scene, path: str, up_axis: str = "Y", use_trial_timing: bool = True):
        if up_axis not in UP_AXES:
            raise ValueError(f"up axis {up_axis!r}: choose one of {', '.join(UP_AXES)}")
        self.path, self.up_axis, self.use_trial_timing = os.fspath(path), up_axis, use_trial_timing
        self.scene_timing = (scene.render.fps, scene.render.fps_base)
        self.frame_start = scene.frame_start
        self.fraction, self.cancelled, self.result = 0.0, False, None

    def simulate(self):
        try:
            self.result = self._plan()
        except ValueError as exc:  # handed to the main thread, reported there
            self.result = exc

    def _plan(self):
        from ..core.osim_rig import keying_rate, trial_frames

        trial = read_trial(self.path)
        self.progress(0.5)
        timing = keying_rate(*self.scene_timing, trial.rate if self.use_trial_timing else None)
        frames = trial_frames(trial.frames, trial.rate, timing[2], self.frame_start)
        keys = []
        for m, name in enumerate(trial.names):
            if not self.progress(0.5 + 0.5 * m / len(trial.names)):
                return None
            keys.append(marker_keys(name, frames, trial.positions[:, m]))
        return trial, timing, frames, keys

    def finish(self, scene):
        """Write the keys (module docstring); returns (operator result, report level,
        message). Nothing is written for a cancelled run; a refused file raises ValueError."""
        if isinstance(self.result, ValueError):
            raise ValueError(f"Nothing imported: {self.result}")
        if self.result is None:
            return {"CANCELLED"}, "WARNING", "Marker import cancelled: nothing was imported"
        trial, (fps, fps_base, rate), frames, keys = self.result
        name = os.path.splitext(os.path.basename(self.path))[0]
        with bridge.new_data_blocks_removed_on_error():
            collection = write_marker_trial(scene, name, keys, self.up_axis)
            if self.use_trial_timing:
                scene.render.fps, scene.render.fps_base = fps, fps_base
                scene.frame_start = int(math.floor(frames[0]))
                scene.frame_end = int(math.ceil(frames[-1]))
        scene.frame_set(scene.frame_current)
        gaps = [k for k in keys if k.gap_rows]
        text = (f"Imported {len(keys)} markers of {os.path.basename(self.path)} "
                f"({len(trial.time)} rows at {trial.rate:.4g} Hz, {trial.units}) on frames "
                f"{frames[0]:.6g}..{frames[-1]:.6g} at {rate:.4g} fps in collection "
                f"'{collection.name}'")
        if gaps:
            shown = ", ".join(f"{k.name} ({k.gap_rows} rows)" for k in gaps[:6])
            more = f" and {len(gaps) - 6} more" if len(gaps) > 6 else ""
            text += f"; {len(gaps)} markers have gaps, hidden there: {shown}{more}"
        return {"FINISHED"}, "INFO", text


def write_marker_trial(scene, name: str, keys, up_axis: str):
    """A new collection ``name`` in the scene with the trial's root empty and one keyed
    empty per :class:`MarkerKeys` (module docstring); returns the collection."""
    collection = bpy.data.collections.new(name)
    scene.collection.children.link(collection)
    root = bridge.new_object(f"{name} lab", None, collection)
    root.empty_display_type = "ARROWS"
    root.empty_display_size = 0.1
    root.rotation_euler = (UP_AXES[up_axis], 0.0, 0.0)
    for k in keys:
        obj = bridge.new_object(k.name, None, collection)
        obj.empty_display_type = "SPHERE"
        obj.empty_display_size = MARKER_SIZE
        obj.show_name = True
        obj.show_in_front = True
        obj[LABEL_KEY] = k.name
        bridge.parent_to_object(obj, root, np.eye(4))
        for axis in range(3):
            if len(k.frames):
                bridge.write_fcurve_keys(obj, "location", axis, k.frames, k.locations[:, axis],
                                         group=MARKER_GROUP)
        for path in ("hide_viewport", "hide_render"):
            bridge.write_fcurve_keys(obj, path, 0, k.hide_frames, k.hidden, group=MARKER_GROUP,
                                     interpolation="CONSTANT")
    return collection
