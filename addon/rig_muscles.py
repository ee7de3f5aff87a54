"""Muscles on the user's own armatures: authored on the bones, drawn live, simulated with the rig.

A rig muscle is an item of the armature data's ``spline_joints_muscles.muscles``: its path
points (each a bone and a point in that bone's frame, head at the origin, Y along the bone:
the frame a simulated bone has in :mod:`core.rig`) and its DeGroote-Fregly 2016 parameters.
It is drawn as the OpenSim muscles are (:func:`.muscles.write_muscle_object`: a curve object
parented to the armature, its points in armature space) through its points carried by the
bones' current poses, :func:`follow_rig_pose` (called by the live drive, :mod:`.handlers`),
coloured by its length change from the rest pose's length or by its rigid-tendon tension at
the activation of the armature object's ``<muscle> activation`` property
(:func:`.muscles.activation_property`: 0..1, keyable), as the list's Colour setting says.

A new muscle's lengths are derived from its path's length at the armature's rest pose
(:func:`rest_fitted_lengths`): the tendon takes :data:`TENDON_SHARE` of it and the fibres the
rest at optimal length, so the muscle starts where its active force peaks and its passive
fibres are slack.

A bake or live preview of the armature (:class:`.rig_jobs.RigJob`) reads each muscle as a
:class:`core.rig.RigMuscle` with its activation sampled at every frame of the range
(:class:`MuscleReader`), keys, drivers and NLA included; :func:`moment_arm_sweep` tabulates a
muscle's length and moment arm over a simulated bone's joint of the rig read so.
"""

from __future__ import annotations

import math

import bpy
import numpy as np

from . import bridge
from .documents import is_osim_armature
from .muscles import (activation_property, muscle_objects, write_activation_property,
                      write_drawn_muscle, write_muscle_object)

#: the share of a new muscle's rest path length given to its tendon (the fibres take the rest)
TENDON_SHARE = 0.5


def muscle_settings(arm):
    """The armature data's rig muscle settings (``spline_joints_muscles``)."""
    return arm.data.spline_joints_muscles


def rig_muscle_armatures(scene):
    """The scene's armature objects (not imported OpenSim ones) that carry rig muscles."""
    return [obj for obj in scene.objects if obj.type == "ARMATURE" and obj.pose is not None
            and len(obj.data.spline_joints_muscles.muscles) and not is_osim_armature(obj)]


def bone_frames(arm, bones, rest=False) -> dict:
    """``{bone: (4, 4)}`` each bone's frame in armature space (its scale removed): as posed,
    or at rest."""
    out = {}
    for name in bones:
        M = arm.data.bones[name].matrix_local if rest else arm.pose.bones[name].matrix
        out[name] = bridge.rigid(bridge.matrix_to_array(M))
    return out


def missing_bones(arm, item) -> list:
    """``[(point number from 1, bone)]`` of the muscle's points on bones the armature lacks."""
    return [(k + 1, p.body) for k, p in enumerate(item.points) if p.body not in arm.data.bones]


def check_bones(arm, item) -> None:
    """ValueError naming the muscle and its first point on a bone the armature lacks."""
    missing = missing_bones(arm, item)
    if missing:
        k, bone = missing[0]
        raise ValueError(f"muscle '{item.name}': its path point {k} is on bone '{bone}', which "
                         f"armature '{arm.name}' does not have; remove the muscle and add it "
                         "again on the armature's bones")


def path_points(points, frames) -> np.ndarray:
    """(K, 3) the path ``points`` (``[(bone, (3,) point in its frame)]``) in armature space
    with the bones at ``frames`` (:func:`bone_frames`)."""
    out = np.empty((len(points), 3))
    for k, (bone, location) in enumerate(points):
        T = frames[bone]
        out[k] = T[:3, :3] @ np.asarray(location, dtype=float) + T[:3, 3]
    return out


def item_points(item) -> list:
    """``[(bone, (3,) point)]`` of a rig muscle's path."""
    return [(p.body, tuple(p.location)) for p in item.points]


def path_length(points) -> float:
    return float(np.linalg.norm(np.diff(points, axis=0), axis=1).sum())


def rest_length(arm, points) -> float:
    """The length (m) of the path ``points`` (``[(bone, (3,) point)]``) at the armature's rest
    pose."""
    return path_length(path_points(points, bone_frames(arm, {b for b, _ in points}, rest=True)))


def rest_fitted_lengths(rest_length, pennation=0.0):
    """``(optimal fibre length, tendon slack length)`` (m) of a muscle whose path is
    ``rest_length`` (m) at rest (module docstring): its fibres at optimal length there,
    ``l_slack + l_opt cos(pennation) = rest_length``. ValueError for a pennation outside
    0..90 deg."""
    if not 0.0 <= pennation < 0.5 * math.pi:
        raise ValueError(f"the pennation angle {math.degrees(pennation):.4g} deg must be from 0 "
                         "to below 90 deg")
    slack = TENDON_SHARE * rest_length
    return (rest_length - slack) / math.cos(pennation), slack


def spanned_joints(arm, bones) -> list:
    """The bones (parents first) whose joints a path through points on ``bones`` spans:
    those on the armature's tree between the path's bones, below the bone they all hang
    from."""
    chains = []
    for name in dict.fromkeys(bones):
        b, chain = arm.data.bones[name], []
        while b is not None:
            chain.append(b.name)
            b = b.parent
        chains.append(chain)
    common = set(chains[0]).intersection(*chains[1:])
    spanned = {n for chain in chains for n in chain if n not in common}
    return [b.name for b in arm.data.bones if b.name in spanned]


def hill_parameters(item):
    """The :class:`core.muscles.hill.HillParameters` of a rig muscle (InvalidInputError names
    the muscle and the parameter for a number it refuses)."""
    from ..core.muscles.hill import HillParameters

    return HillParameters(item.name, item.max_isometric_force, item.optimal_fiber_length,
                          item.tendon_slack_length, item.pennation_angle)


def add_rig_muscle(arm, name, points, values) -> None:
    """Add muscle ``name`` through ``points`` (``[(bone, (3,) point in its frame)]``) with the
    parameters ``values`` (the item's property names): listed, drawn, given its activation
    property, shown at the pose. ValueError, before anything is written, for a name taken, a
    path of fewer than two points, a bone the armature lacks or a parameter refused."""
    from ..core.muscles.hill import HillParameters

    settings = muscle_settings(arm)
    name = name.strip()
    if not name or name in settings.muscles or name in muscle_objects(arm):
        raise ValueError(f"muscle name '{name}' is empty or taken; give the muscle a new name")
    if len(points) < 2:
        raise ValueError(f"a muscle needs at least two path points, {len(points)} are placed: "
                         "add points (Point at Cursor / At Vertices) first")
    missing = sorted({b for b, _ in points if b not in arm.data.bones})
    if missing:
        raise ValueError(f"path points are on bones armature '{arm.name}' does not have: "
                         f"{', '.join(missing)}; clear the points and place them again")
    HillParameters(name, values["max_isometric_force"], values["optimal_fiber_length"],
                   values["tendon_slack_length"], values["pennation_angle"])
    item = settings.muscles.add()
    item.name = name
    for bone, location in points:
        p = item.points.add()
        p.body, p.location = bone, tuple(float(x) for x in location)
    for key, value in values.items():
        setattr(item, key, value)
    item.joints = item.coordinates = " ".join(spanned_joints(arm, [b for b, _ in points]))
    write_muscle_object(arm, name)
    write_activation_property(arm, name)
    settings.active_muscle = len(settings.muscles) - 1
    follow_rig_pose(arm)


def remove_rig_muscle(arm, name) -> None:
    """Remove muscle ``name``: its list item, its curve object (and material) and its
    activation property with its keys."""
    settings = muscle_settings(arm)
    index = settings.muscles.find(name)
    if index < 0:
        raise ValueError(f"armature '{arm.name}' has no muscle '{name}'; choose one in the list")
    obj = muscle_objects(arm).get(name)
    if obj is not None:
        curve, materials = obj.data, [m for m in obj.data.materials if m is not None]
        bpy.data.objects.remove(obj)
        if curve.users == 0:
            bpy.data.curves.remove(curve)
        for m in materials:
            if m.users == 0:
                bpy.data.materials.remove(m)
    prop = activation_property(name)
    fc = bridge.find_fcurve(arm, bridge.coordinate_path(prop), 0)
    if fc is not None:
        bridge.remove_fcurves(arm, [fc])
    if prop in arm.keys():
        del arm[prop]
    settings.muscles.remove(index)
    settings.active_muscle = max(0, min(settings.active_muscle, len(settings.muscles) - 1))


def follow_rig_pose(arm) -> int:
    """Write the drawn rig muscles of ``arm`` at its bones' current poses: their points and
    colours; returns how many muscles changed. A muscle on a bone the armature lacks raises
    ValueError naming it."""
    from ..core.muscles.display import muscle_colors
    from ..core.muscles.hill import MuscleArrays

    settings = muscle_settings(arm)
    objects = muscle_objects(arm)
    items = [m for m in settings.muscles if m.name in objects]
    if not items:
        return 0
    for item in items:
        check_bones(arm, item)
    bones = {p.body for item in items for p in item.points}
    posed, rest = bone_frames(arm, bones), bone_frames(arm, bones, rest=True)
    paths = [item_points(item) for item in items]
    points = [path_points(p, posed) for p in paths]
    lengths = np.array([path_length(p) for p in points])
    rest_lengths = np.array([path_length(path_points(p, rest)) for p in paths])
    arrays, activations = None, None
    if settings.muscle_color == "FORCE":
        arrays = MuscleArrays(hill_parameters(item) for item in items)
        activations = bridge.read_named_values(arm, [activation_property(m.name) for m in items],
                                               np.zeros(len(items)))
    colors = muscle_colors(lengths, rest_lengths, settings.muscle_color, arrays, activations)
    changed = 0
    for item, p, rgba in zip(items, points, colors):
        changed += write_drawn_muscle(objects[item.name], p, rgba)
    return changed


#: the sweep of a joint without a range: +-90 deg of a hinge, +-10 cm of a slider
SWEEP_SPAN = {"hinge": 0.5 * math.pi, "slider": 0.1}


def moment_arm_sweep(rig, muscle, bone, samples=61):
    """:class:`core.muscles.display.MuscleSweep` of ``muscle`` about the hinge or slider of
    ``bone`` in ``rig`` (a :class:`core.rig.Rig` read as a bake reads it), over the joint's
    range (:data:`SWEEP_SPAN` either side of the rest without one), the other coordinates at
    the rig's start. ValueError for a bone that is not simulated or has another joint."""
    from ..core.muscles.display import point_path_sweep

    names = [b.name for b in rig.bodies]
    if bone not in names or rig.bodies[names.index(bone)].joint.kind == "kinematic":
        raise ValueError(f"bone '{bone}' is not simulated, so it has no joint to plot "
                         "against; tick Simulate on it with a Hinge or Slider joint")
    i = names.index(bone)
    joint = rig.bodies[i].joint
    if joint.kind not in SWEEP_SPAN:
        raise ValueError(f"bone '{bone}' has a {joint.kind} joint; the moment arm is plotted "
                         "against a Hinge's angle or a Slider's travel")
    lo, hi = -SWEEP_SPAN[joint.kind], SWEEP_SPAN[joint.kind]
    if joint.lower is not None and np.isfinite(joint.lower[0]):
        lo = float(joint.lower[0])
    if joint.upper is not None and np.isfinite(joint.upper[0]):
        hi = float(joint.upper[0])
    return point_path_sweep(rig.muscles.geometry, rig.muscles.muscles.names, muscle, bone,
                            rig.slices[i].start, rig.mechanism.q0,
                            np.linspace(lo, hi, samples), rotational=joint.kind == "hinge",
                            label=f"{bone} {joint.kind}")


class MuscleReader:
    """The rig muscles of armature ``arm`` as a bake reads them: checked when made (every
    point on a bone of the rig, ``bodies``: the rig's body names; the parameters),
    their activations read at each frame :meth:`sample` is called on (the scene at that
    frame), and :meth:`rig_muscles` the :class:`core.rig.RigMuscle` entries."""

    def __init__(self, arm, bodies):
        settings = muscle_settings(arm)
        self.arm = arm
        self.items = list(settings.muscles)
        bodies = set(bodies)
        for item in self.items:
            check_bones(arm, item)
            outside = [p.body for p in item.points if p.body not in bodies]
            if outside:
                raise ValueError(f"muscle '{item.name}': bone '{outside[0]}' does not move in "
                                 "the simulation (it is neither simulated nor above a simulated "
                                 "bone); tick Simulate on it or on a bone below it, or put the "
                                 "muscle's points on the simulated bones and their parents")
            if len(item.points) < 2:
                raise ValueError(f"muscle '{item.name}' has {len(item.points)} path point(s); "
                                 "remove it and add it again through at least two")
        self.parameters = [hill_parameters(item) for item in self.items]
        self.props = [activation_property(item.name) for item in self.items]
        self.frames, self.values = [], []

    def sample(self, frame) -> None:
        """Read every muscle's activation at ``frame`` (the scene is there)."""
        if self.items:
            self.frames.append(frame)
            self.values.append([float(self.arm.get(p, 0.0) or 0.0) for p in self.props])

    def rig_muscles(self, frames, times) -> tuple:
        """The :class:`core.rig.RigMuscle` entries, each activation ``(times, values)`` at
        ``frames`` (sampled, :meth:`sample`); ValueError naming the muscle, the frame and the
        property for an activation outside 0..1."""
        from ..core.rig import RigMuscle

        if not self.items:
            return ()
        row = {f: k for k, f in enumerate(self.frames)}
        values = np.array([self.values[row[f]] for f in frames]).reshape(len(frames), -1)
        out = []
        for j, (item, params) in enumerate(zip(self.items, self.parameters)):
            a = values[:, j]
            bad = ~((a >= 0.0) & (a <= 1.0))
            if bad.any():
                k = int(np.argmax(bad))
                raise ValueError(f"muscle '{item.name}': its activation is {a[k]:.4g} at frame "
                                 f"{int(frames[k])}, outside 0..1; set or key the armature's "
                                 f"'{self.props[j]}' between 0 (relaxed) and 1 (fully active)")
            points = tuple(item_points(item))
            control = float(a[0]) if np.all(a == a[0]) else (tuple(times), tuple(a))
            out.append(RigMuscle(item.name, points, params, control))
        return tuple(out)

    def report(self, result) -> str:
        """What the report says of the muscles after a run: each one's largest tension."""
        if not self.items or result.tension is None:
            return ""
        peaks = result.tension.max(axis=0)
        return "muscles " + ", ".join(f"{n} up to {t:.3g} N"
                                      for n, t in zip(result.muscles, peaks))
