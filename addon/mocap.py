"""Motion capture in the scene: a marker trial (.trc, .c3d) as animated empties, the jobs of
OpenSim's tools (Scale, Inverse Kinematics, Inverse Dynamics) on an imported model, and the
ground reaction forces of an ExternalLoads file as animated arrows (:class:`ForceArrowsJob`).

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
from .documents import osim_rig
from .jobs import ToolJob

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


def _stem(path) -> str:
    return os.path.splitext(os.path.basename(os.fspath(path)))[0]


def _file(path: str, what: str) -> str:
    """``path`` made absolute (Blender's ``//`` too); ValueError naming the panel's field when
    it is empty."""
    if not path:
        raise ValueError(f"choose the {what} in the Motion Capture panel")
    return os.path.abspath(bpy.path.abspath(path))


class TrialTiming:
    """How a job keys a recording's rows: at the trial's rate (the scene's rate and frame range
    then set to it, :meth:`apply`) or at the scene's. Frame number ``n`` of a trial is at
    ``(n - 1) / rate`` s (:mod:`core.io.c3d`), and time ``t`` on scene frame
    ``zero_frame + t * fps``: ``zero_frame`` is the scene's setting "Frame at 0 s"
    (``Scene.spline_joints_mocap.zero_frame``, which Import Markers sets so that the trial's
    first row is on the scene's first frame), so that the markers, the solved coordinates
    and the forces of one trial line up. Read from the scene when the job is made;
    zero_frame None: the trial's first row on the scene's first frame."""

    def __init__(self, scene, use_trial_timing: bool, zero_frame: float | None = None):
        self.use_trial_timing = use_trial_timing
        self.scene = (scene.render.fps, scene.render.fps_base)
        self.frame_start = scene.frame_start
        self.zero_frame = zero_frame

    def frames(self, trial):
        """((fps, fps_base, frames per second), the scene frame of every row (N,))."""
        from ..core.osim_rig import keying_rate, trial_frames

        timing = keying_rate(*self.scene, trial.rate if self.use_trial_timing else None)
        first = self.frame_start if self.zero_frame is None else \
            self.zero_frame + (trial.frames[0] - 1) * timing[2] / trial.rate
        return timing, trial_frames(trial.frames, trial.rate, timing[2], first)

    @staticmethod
    def zero_of(trial, timing, frames) -> float:
        """The scene frame of time 0 for a trial keyed on ``frames``."""
        return float(frames[0] - (trial.frames[0] - 1) * timing[2] / trial.rate)

    def apply(self, scene, timing, frames) -> None:
        """Set the scene's rate and frame range to the keyed ``frames`` (with the trial's
        timing only)."""
        if self.use_trial_timing:
            scene.render.fps, scene.render.fps_base = timing[:2]
            scene.frame_start = int(math.floor(frames[0]))
            scene.frame_end = int(math.ceil(frames[-1]))


class MarkerImportJob(ToolJob):
    """A marker trial read and laid out as keys (``simulate``, any thread) and written into
    the scene (``finish``, main thread): see the module docstring.

    up_axis: a key of :data:`UP_AXES`; use_trial_timing: set the scene's rate to the trial's
    and its frame range to the keyed frames (else the scene's rate is kept)."""

    refused_text = "Nothing imported"
    cancelled_text = "Marker import cancelled: nothing was imported"

    def __init__(self, scene, path: str, up_axis: str = "Y", use_trial_timing: bool = True):
        if up_axis not in UP_AXES:
            raise ValueError(f"up axis {up_axis!r}: choose one of {', '.join(UP_AXES)}")
        super().__init__()
        self.path, self.up_axis = os.fspath(path), up_axis
        self.timing = TrialTiming(scene, use_trial_timing)

    def _run(self):
        trial = read_trial(self.path)
        self.progress(0.5)
        timing, frames = self.timing.frames(trial)
        keys = []
        for m, name in enumerate(trial.names):
            if not self.progress(0.5 + 0.5 * m / len(trial.names)):
                return None
            keys.append(marker_keys(name, frames, trial.positions[:, m]))
        self.progress(1.0)
        return trial, timing, frames, keys

    def write(self, scene, result):
        """Write the keys (module docstring)."""
        trial, timing, frames, keys = result
        with bridge.new_data_blocks_removed_on_error():
            collection = write_marker_trial(scene, _stem(self.path), keys, self.up_axis)
            self.timing.apply(scene, timing, frames)
            scene.spline_joints_mocap.zero_frame = TrialTiming.zero_of(trial, timing, frames)
        scene.frame_set(scene.frame_current)
        gaps = [k for k in keys if k.gap_rows]
        text = (f"Imported {len(keys)} markers of {os.path.basename(self.path)} "
                f"({len(trial.time)} rows at {trial.rate:.4g} Hz, {trial.units}) on frames "
                f"{frames[0]:.6g}..{frames[-1]:.6g} at {timing[2]:.4g} fps in collection "
                f"'{collection.name}'")
        if gaps:
            shown = ", ".join(f"{k.name} ({k.gap_rows} rows)" for k in gaps[:6])
            more = f" and {len(gaps) - 6} more" if len(gaps) > 6 else ""
            text += f"; {len(gaps)} markers have gaps, hidden there: {shown}{more}"
        return {"FINISHED"}, "INFO", text


def _lab(scene, name: str, up_axis: str):
    """A new collection ``name`` in the scene and its root empty ``<name> lab`` holding the
    lab frame (turned for a Y-up recording, :data:`UP_AXES`): (collection, root)."""
    collection = bpy.data.collections.new(name)
    scene.collection.children.link(collection)
    root = bridge.new_object(f"{name} lab", None, collection)
    root.empty_display_type = "ARROWS"
    root.empty_display_size = 0.1
    root.rotation_euler = (UP_AXES[up_axis], 0.0, 0.0)
    return collection, root


def write_marker_trial(scene, name: str, keys, up_axis: str):
    """A new collection ``name`` in the scene with the trial's root empty and one keyed
    empty per :class:`MarkerKeys` (module docstring); returns the collection."""
    collection, root = _lab(scene, name, up_axis)
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


class ScaleJob(ToolJob):
    """OpenSim's Scale tool on a setup file (:func:`core.mocap.scale.scale_tool`, which writes
    the files the setup names), then the scaled model imported as a new armature
    (:func:`.osim_scene.write_osim_import`). The setup must name the model file to write (the
    MarkerPlacer's ``output_model_file``, or the ModelScaler's): it is what is imported."""

    refused_text = "Scale failed, nothing imported"
    cancelled_text = "Scale cancelled: nothing was written or imported"

    def __init__(self, setup_path: str):
        super().__init__()
        self.setup_path = _file(setup_path, "Scale setup file (.xml)")

    def _run(self):
        from ..core.mocap.scale import read_scale_setup, scale_tool
        from ..core.osim_rig import read_osim_import

        setup = read_scale_setup(self.setup_path)
        placer = setup.placer if setup.placer is not None and setup.placer.apply else None
        scaler = setup.scaler if setup.scaler is not None and setup.scaler.apply else None
        output = (placer.output_model_file if placer is not None else "") or \
            (scaler.output_model_file if scaler is not None else "")
        if not output:
            raise ValueError(f"the Scale setup {os.path.basename(self.setup_path)} writes no "
                             "model: name an <output_model_file> in its MarkerPlacer (or "
                             "ModelScaler) so the scaled model can be imported")
        result = scale_tool(setup, write=True, progress=lambda f: self.progress(0.9 * f))
        if result.status != "done":
            return None
        generic = os.path.dirname(setup.model_file)
        plan = read_osim_import(output, (generic, os.path.join(generic, "Geometry")))
        self.progress(1.0)
        return result, plan

    def write(self, scene, result):
        from .osim_scene import write_osim_import

        result, plan = result
        with bridge.new_data_blocks_removed_on_error():
            arm = write_osim_import(scene, bpy.context.view_layer, plan)
        factors = np.array([f for f in result.factors.values()])
        text = (f"Scaled '{result.model.name}': factors {factors.min():.4g}..{factors.max():.4g} "
                f"over {len(factors)} bodies")
        if result.placement is not None:
            p = result.placement
            text += (f"; {len(p.moved)} markers placed on the static pose (marker error RMS "
                     f"{1e3 * p.errors[1]:.3g} mm, largest {1e3 * p.errors[2]:.3g} mm at "
                     f"{p.worst})")
        text += f"; imported as '{arm.name}'; wrote {', '.join(map(os.path.basename, result.written))}"
        if result.warnings:
            text += "; " + "; ".join(result.warnings)
        return {"FINISHED"}, "WARNING" if result.warnings else "INFO", text


#: custom properties of an OpenSim armature keyed by Inverse Kinematics: the marker errors of
#: every frame (mm)
IK_ERROR_KEYS = ("ik_marker_error_rms_mm", "ik_marker_error_max_mm")


class IKJob(ToolJob):
    """OpenSim's Inverse Kinematics (:func:`core.mocap.ik.solve_ik`) of a marker trial on the
    OpenSim armature ``arm``'s model as the scene has it (:func:`.osim_scene.scene_model`:
    markers where the spheres are), with the setup file's tasks, time range and accuracy;
    the coordinates keyed on the armature in a new action (as Import OpenSim Motion keys
    them) on the trial's frames as Import Markers maps them, with the per-frame marker error
    RMS and maximum (:data:`IK_ERROR_KEYS`, mm) keyed beside them.

    marker_path: the trial (.trc or .c3d); empty: the setup's ``marker_file``."""

    refused_text = "Inverse Kinematics failed, nothing keyed"
    cancelled_text = "Inverse Kinematics cancelled: nothing was keyed"

    def __init__(self, scene, arm, setup_path: str, marker_path: str = "",
                 use_trial_timing: bool = True, zero_frame: float = 1.0):
        from .osim_scene import scene_model

        super().__init__()
        self.setup_path = _file(setup_path, "Inverse Kinematics setup file (.xml)")
        self.marker_path = os.path.abspath(bpy.path.abspath(marker_path)) if marker_path else ""
        self.arm_name = arm.name
        self.model = scene_model(arm)
        self.timing = TrialTiming(scene, use_trial_timing, zero_frame)

    def _run(self):
        from ..core.io.motion import read_motion
        from ..core.mocap.ik import read_ik_setup, solve_ik

        setup = read_ik_setup(self.setup_path)
        path = self.marker_path or (setup.path(setup.marker_file) if setup.marker_file else "")
        if not path:
            raise ValueError("choose the marker trial in the Motion Capture panel (the setup "
                             "names no <marker_file>)")
        trial = read_trial(path)
        values = read_motion(setup.path(setup.coordinate_file)) if setup.coordinate_file \
            else None
        result = solve_ik(self.model, trial, setup.tasks, time_range=setup.time_range,
                          coordinate_values=values, accuracy=setup.accuracy,
                          progress=self.progress)
        return None if result.status != "solved" else (trial, path, result)

    def write(self, scene, result):
        from .osim_scene import key_coordinates

        arm = bpy.data.objects.get(self.arm_name)
        if arm is None:
            raise ValueError(f"the armature '{self.arm_name}' is gone; run Inverse Kinematics "
                             "again")
        trial, path, r = result
        timing, frames = self.timing.frames(trial)
        frames = frames[r.frames]
        self.timing.apply(scene, timing, frames)
        action, kept = key_coordinates(arm, r.names, f"{arm.name} IK {_stem(path)}", frames, r.q)
        for key, column in zip(IK_ERROR_KEYS, (1, 2)):
            bridge.write_float_property(arm, key, 1e3 * r.errors[0, column], min=0.0,
                                        description="Inverse Kinematics marker error (mm) at "
                                                    "this frame")
            bridge.write_fcurve_keys(arm, bridge.coordinate_path(key), 0, frames,
                                     1e3 * r.errors[:, column], group="Marker errors")
        arm.update_tag()  # new ID properties tag nothing: the evaluated copy must get them
        scene.frame_set(scene.frame_current)
        worst = int(np.argmax(r.errors[:, 2]))
        text = (f"Inverse Kinematics of {len(r.time)} frames of {os.path.basename(path)} keyed "
                f"in action '{action.name}': marker error RMS {1e3 * r.errors[:, 1].mean():.3g} mm "
                f"on average (at most {1e3 * r.errors[:, 1].max():.3g} mm), largest "
                f"{1e3 * r.errors[worst, 2]:.3g} mm ({r.worst[worst]} at t = {r.time[worst]:.4g} s)")
        if kept:
            text += f"; the previous action is kept on NLA track '{kept}'"
        if r.warnings:
            text += "; " + "; ".join(r.warnings)
        return {"FINISHED"}, "WARNING" if r.warnings else "INFO", text


# ----------------------------------------------------------------------------- force arrows
#: custom property of a force arrow: its force's magnitude (N), keyed per frame
FORCE_KEY = "force_N"
#: custom property of the forces' root empty: arrow length per newton (m/N), which the arrows'
#: drivers read, so changing it resizes every arrow at once
LENGTH_KEY = "metres_per_newton"
#: arrow colour, shaft radius (m) and the share of its unit length taken by the head
ARROW_RGBA = (0.95, 0.55, 0.1, 1.0)
ARROW_RADIUS = 0.008
ARROW_HEAD = 0.15


@dataclass(frozen=True, eq=False)
class ArrowKeys:
    """One external force sampled on scene frames: ``frames (F,)``, ``points (F, 3)`` (the
    centre of pressure, m) and ``forces (F, 3)`` (N), in the lab frame."""

    name: str
    frames: np.ndarray
    points: np.ndarray
    forces: np.ndarray


def _z_to(directions) -> np.ndarray:
    """Quaternions (F, 4) w x y z turning +Z onto each of the ``directions (F, 3)`` (any
    length; a zero one gives the identity)."""
    d = np.asarray(directions, dtype=float)
    n = np.linalg.norm(d, axis=1)
    d = np.divide(d, n[:, None], out=np.tile([0.0, 0.0, 1.0], (len(d), 1)), where=n[:, None] > 0)
    q = np.column_stack([1.0 + d[:, 2], -d[:, 1], d[:, 0], np.zeros(len(d))])
    down = q[:, 0] < 1e-12  # straight down: half a turn about x
    q[down] = (0.0, 1.0, 0.0, 0.0)
    return q / np.linalg.norm(q, axis=1)[:, None]


class ForceArrowsJob(ToolJob):
    """The forces of an OpenSim ExternalLoads file (:func:`core.io.external_loads.
    read_external_loads`, with its data file) as arrows: one per force, in a new collection
    named after the file under a lab-frame empty (Y or Z up, as a trial), each keyed on every
    scene frame the data cover (time ``t`` on frame ``zero_frame + t * fps``, linear between
    the data's rows) with its centre of pressure (location), direction (rotation) and
    magnitude (:data:`FORCE_KEY`); its length is the magnitude times the root's
    :data:`LENGTH_KEY` through a driver. Forces and points must be expressed in ground, as
    force plates record them."""

    refused_text = "No forces drawn"
    cancelled_text = "Drawing forces cancelled: nothing was drawn"

    def __init__(self, scene, path: str, metres_per_newton: float, up_axis: str = "Y",
                 zero_frame: float = 1.0):
        super().__init__()
        self.path = _file(path, "external loads file (.xml)")
        self.metres_per_newton, self.up_axis = float(metres_per_newton), up_axis
        self.fps = scene.render.fps / scene.render.fps_base
        self.zero_frame = float(zero_frame)

    def _run(self):
        from ..core.io.external_loads import GROUND, read_external_loads

        loads = read_external_loads(self.path)
        time, values = loads.data.time, loads.data.values
        first = math.ceil(self.zero_frame + time[0] * self.fps - 1e-9)
        last = math.floor(self.zero_frame + time[-1] * self.fps + 1e-9)
        if last < first:
            raise ValueError(f"{os.path.basename(self.path)}: its data span less than a frame")
        frames = np.arange(first, last + 1, dtype=float)
        t = (frames - self.zero_frame) / self.fps
        arrows = []
        for k, f in enumerate(loads.forces):
            if f.force_columns is None or f.point_columns is None:
                raise ValueError(f"ExternalForce {f.name!r} gives no "
                                 f"{'force' if f.force_columns is None else 'point'}: an arrow "
                                 "needs both (force_identifier and point_identifier)")
            if GROUND not in (f.force_frame, f.point_frame) or f.force_frame != f.point_frame:
                raise ValueError(f"ExternalForce {f.name!r} is expressed in {f.force_frame!r} "
                                 f"(point in {f.point_frame!r}); arrows are drawn for forces "
                                 "and points in ground, as force plates record them")
            sample = [np.column_stack([np.interp(t, time, values[:, c]) for c in cols])
                      for cols in (f.point_columns, f.force_columns)]
            arrows.append(ArrowKeys(f.name, frames, *sample))
            if not self.progress((k + 1) / len(loads.forces)):
                return None
        if not arrows:
            raise ValueError(f"{os.path.basename(self.path)} has no enabled ExternalForce")
        return loads, arrows

    def write(self, scene, result):
        loads, arrows = result
        with bridge.new_data_blocks_removed_on_error():
            collection = write_force_arrows(scene, _stem(self.path), arrows, self.up_axis,
                                            self.metres_per_newton)
        scene.frame_set(scene.frame_current)
        peak = max(float(np.linalg.norm(a.forces, axis=1).max()) for a in arrows)
        frames = arrows[0].frames
        return {"FINISHED"}, "INFO", (
            f"Drew {len(arrows)} forces of {os.path.basename(self.path)} "
            f"({', '.join(a.name for a in arrows)}) on frames {int(frames[0])}..{int(frames[-1])} "
            f"in collection '{collection.name}': largest {peak:.4g} N, drawn "
            f"{peak * self.metres_per_newton:.3g} m long (change '{LENGTH_KEY}' on "
            f"'{collection.name} lab' to resize)")


def write_force_arrows(scene, name: str, arrows, up_axis: str, metres_per_newton: float):
    """A new collection ``name`` with the lab-frame root (holding :data:`LENGTH_KEY`) and one
    keyed, driven arrow per :class:`ArrowKeys` (:class:`ForceArrowsJob`); returns the
    collection."""
    from ..core.display import lathe

    collection, root = _lab(scene, name, up_axis)
    bridge.write_float_property(root, LENGTH_KEY, metres_per_newton, min=0.0,
                                description="Force arrow length per newton (m/N)")
    r, h = ARROW_RADIUS, 1.0 - ARROW_HEAD
    mesh = bridge.write_mesh_data(f"{name} arrow", *lathe(
        [(0.0, 0.0), (r, 0.0), (r, h), (2.5 * r, h), (0.0, 1.0)], n=12))
    mesh.materials.append(bridge.ensure_material("Force arrow", ARROW_RGBA))
    for a in arrows:
        obj = bridge.new_object(a.name, mesh, collection)
        obj.rotation_mode = "QUATERNION"
        bridge.parent_to_object(obj, root, np.eye(4))
        magnitude = np.linalg.norm(a.forces, axis=1)
        bridge.write_float_property(obj, FORCE_KEY, float(magnitude[0]), min=0.0,
                                    description="The force's magnitude (N) at this frame")
        bridge.write_fcurve_keys(obj, bridge.coordinate_path(FORCE_KEY), 0, a.frames, magnitude,
                                 group="Force")
        turns = _z_to(a.forces)
        for axis in range(3):
            bridge.write_fcurve_keys(obj, "location", axis, a.frames, a.points[:, axis],
                                     group="Force")
        for axis in range(4):
            bridge.write_fcurve_keys(obj, "rotation_quaternion", axis, a.frames, turns[:, axis],
                                     group="Force")
        driver = obj.driver_add("scale", 2).driver
        driver.type, driver.expression = "SCRIPTED", "force * length"
        for var_name, owner, key in (("force", obj, FORCE_KEY), ("length", root, LENGTH_KEY)):
            var = driver.variables.new()
            var.name, var.type = var_name, "SINGLE_PROP"
            var.targets[0].id = owner
            var.targets[0].data_path = bridge.coordinate_path(key)
    return collection


# ----------------------------------------------------------------------------- inverse dynamics
#: the coordinates a moment plot shows when the model has them (gait models' sagittal joints)
PLOTTED = ("hip_flexion_r", "knee_angle_r", "ankle_angle_r", "hip_flexion_l", "knee_angle_l",
           "ankle_angle_l")


def armature_motion(arm, names, zero_frame: float, fps: float):
    """The coordinates ``names`` of the OpenSim armature ``arm`` as its active action keys
    them, on every whole frame from its first key to its last: a
    :class:`core.io.motion.Motion` (radians and metres; time ``(frame - zero_frame) / fps``).
    A coordinate without keys keeps its property's value. ValueError when nothing is keyed."""
    from ..core.io.motion import Motion

    curves = {n: bridge.find_fcurve(arm, bridge.coordinate_path(n), 0) for n in names}
    keyed = [c for c in curves.values() if c is not None and len(c.keyframe_points)]
    if not keyed:
        raise ValueError(f"'{arm.name}' has no keyed coordinates: run Inverse Kinematics (or "
                         "import a motion) first, or use the setup's coordinates file")
    first = math.ceil(min(c.range()[0] for c in keyed))
    last = math.floor(max(c.range()[1] for c in keyed))
    frames = np.arange(first, last + 1)
    values = np.column_stack([
        [c.evaluate(f) for f in frames] if c is not None and len(c.keyframe_points)
        else np.full(len(frames), float(arm.get(n, 0.0))) for n, c in curves.items()])
    return Motion(names=tuple(names), time=(frames - zero_frame) / fps, values=values,
                  in_degrees=False, name=f"{arm.name} keys")


def write_moment_plot(path, result) -> str:
    """A PNG of the generalized forces of an inverse dynamics result (the coordinates of
    :data:`PLOTTED` the result has, else its first six) against time, written atomically to
    ``path``; returns "" or, when matplotlib is not installed, why no plot was written."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return "matplotlib is not installed, so no plot was written (pip install matplotlib)"
    from ..core.io.files import atomic_path

    shown = [c for c in PLOTTED if c in result.coordinates] or list(result.coordinates[:6])
    figure = Figure(figsize=(8, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for c in shown:
        axes.plot(result.time, result.column(c), label=result.names[result.coordinates.index(c)])
    axes.set_xlabel("time (s)")
    axes.set_ylabel("generalized force (N m, N)")
    axes.set_title("Inverse dynamics")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8, ncol=2)
    figure.tight_layout()
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png")
    return ""


class IDJob(ToolJob):
    """OpenSim's Inverse Dynamics (:func:`core.mocap.inverse_dynamics.inverse_dynamics`) of
    the OpenSim armature ``arm``'s model (its switched-on fitted joints in place) with the
    setup's external loads, time range and low-pass filter, along the armature's keyed
    coordinates (:func:`armature_motion`; ``use_keys`` False: the setup's coordinates file).
    Writes the setup's .sto and a PNG plot beside it (:func:`write_moment_plot`), keys every
    generalized force as a custom property of the armature (``<coordinate>_moment`` /
    ``_force``, OpenSim's column names) and loads the plot as an image, shown in any open
    Image Editor."""

    refused_text = "Inverse Dynamics failed, nothing keyed or written"
    cancelled_text = "Inverse Dynamics cancelled: nothing was keyed or written"

    def __init__(self, scene, arm, setup_path: str, use_keys: bool = True,
                 zero_frame: float = 1.0):
        super().__init__()
        self.setup_path = _file(setup_path, "Inverse Dynamics setup file (.xml)")
        self.arm_name = arm.name
        rig = osim_rig(arm.data)
        self.model = rig.model
        self.fps = scene.render.fps / scene.render.fps_base
        self.zero_frame = float(zero_frame)
        self.motion = armature_motion(arm, rig.coordinate_names, self.zero_frame, self.fps) \
            if use_keys else None

    def _run(self):
        from ..core.io.external_loads import read_external_loads
        from ..core.io.files import check_writable_path
        from ..core.io.motion import read_motion, write_motion
        from ..core.mocap.inverse_dynamics import (OUTPUT_TITLE, inverse_dynamics,
                                                   read_inverse_dynamics_setup)

        setup = read_inverse_dynamics_setup(self.setup_path)
        motion = self.motion if self.motion is not None else read_motion(setup.coordinates_file)
        loads = read_external_loads(setup.external_loads_file) \
            if setup.external_loads_file else None
        result = inverse_dynamics(self.model, motion, loads, time_range=setup.time_range,
                                  lowpass_cutoff=setup.lowpass_cutoff,
                                  forces_to_exclude=setup.forces_to_exclude,
                                  progress=self.progress)
        if result.status != "done":
            return None
        os.makedirs(setup.results_directory, exist_ok=True)
        output = check_writable_path(setup.output)
        write_motion(output, result.names, result.time, result.forces, in_degrees=False,
                     name=OUTPUT_TITLE)
        plot = os.path.splitext(output)[0] + ".png"
        missing = write_moment_plot(plot, result)
        return result, output, ("" if missing else plot), missing

    def write(self, scene, result):
        result, output, plot, missing = result
        arm = bpy.data.objects.get(self.arm_name)
        if arm is None:
            raise ValueError(f"the armature '{self.arm_name}' is gone; run Inverse Dynamics "
                             "again")
        frames = self.zero_frame + result.time * self.fps
        for name, column in zip(result.names, result.forces.T):
            bridge.write_float_property(arm, name, float(column[0]),
                                        description="Inverse Dynamics generalized force (N m "
                                                    "or N) at this frame")
            bridge.write_fcurve_keys(arm, bridge.coordinate_path(name), 0, frames, column,
                                     group="Inverse Dynamics")
        arm.update_tag()  # new ID properties tag nothing: the evaluated copy must get them
        scene.frame_set(scene.frame_current)
        if plot:
            show_image(bpy.data.images.load(plot, check_existing=True))
        peak = np.unravel_index(np.argmax(np.abs(result.forces)), result.forces.shape)
        text = (f"Inverse Dynamics of {len(result.time)} frames ({result.time[0]:.4g}.."
                f"{result.time[-1]:.4g} s) keyed on '{arm.name}' as {len(result.names)} "
                f"properties; largest {result.names[peak[1]]} "
                f"{result.forces[peak]:.4g} at t = {result.time[peak[0]]:.4g} s; wrote "
                f"{os.path.basename(output)}" + (f" and {os.path.basename(plot)}" if plot else ""))
        warnings = list(result.warnings) + ([missing] if missing else [])
        if warnings:
            text += "; " + "; ".join(warnings)
        return {"FINISHED"}, "WARNING" if warnings else "INFO", text


def show_image(image) -> None:
    """Reload ``image`` from its file and show it in every open Image Editor."""
    image.reload()
    window_manager = bpy.context.window_manager
    for window in (window_manager.windows if window_manager else ()):
        for area in window.screen.areas:
            if area.type == "IMAGE_EDITOR":
                area.spaces.active.image = image
