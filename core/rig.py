"""Simulating the user's own rigs: a tree of bodies (bones or objects) with a joint each.

A rig is a list of :class:`RigBody` in parent-before-child order. Each body has a frame
(a bone's: head at the origin, Y along the bone; an object's: its unscaled world frame), a
parent (another body or the world), its rest pose ``T_rest`` in the parent's frame and a
:class:`RigJoint` that moves it from there:

* ``"hinge"`` (a revolute about ``axis``), ``"slider"`` (a prismatic along ``axis``),
  ``"universal"`` (``axis`` then ``axis2``), ``"ball"`` (:class:`~core.joints.Spherical`,
  exponential coordinates), ``"free"`` and ``"fixed"``: the child's pose in the parent is
  ``T_rest G(q)``, so ``G(q)`` is a pose bone's ``matrix_basis`` (:mod:`core.bones`);
* ``"joint"``: a given core joint whose ``G(q)`` *is* the child's pose in the parent (a
  spline curve or surface joint fitted to captured ``T_parent_child`` samples, a wire along
  a curve); ``T_rest`` is not used;
* ``"kinematic"``: the body follows ``motion``, its poses in the parent sampled at
  ``motion_times``, exactly. A motion that never changes is a fixed joint at that pose;
  otherwise a free joint whose six coordinates (the logarithm of each pose, made continuous
  across the ``|r| = pi`` chart boundary, and its translation) are prescribed by a
  :class:`core.integrators.Drive` that interpolates them with a cubic spline in time, so a
  kinematic bone drives its simulated descendants with continuous velocities and
  accelerations (the drive's work is recorded).

Limits (``RigJoint.lower/upper`` coordinate ranges, a circular or elliptical reach cone
and a twist limit on a ball or free joint) are enforced by :class:`core.limits.LimitSolver`;
a spring and damper per coordinate pulls toward ``rest`` (the zero coordinates, i.e. the
rest pose, when not given).

:func:`build_rig` turns the bodies into a :class:`core.mechanisms.Mechanism` (model,
initial state from each body's current ``pose``, velocities by central differences of
``pose_before``/``pose_after`` when given, limits, drive) and :func:`simulate_rig` runs it
and returns every body's pose in its parent per frame (what a bake writes back), with the
worst limit violation in the limits' own units and the energy drift of a passive rig.

Contacts. A body's collision ``shapes`` (:mod:`core.contacts.shapes`, in its frame) meet
the world's ``colliders`` (a ground :class:`core.contacts.Plane`, static or moving
colliders) through a :class:`core.contacts.ContactSolver` that shares the limits' solver
(:attr:`core.mechanisms.Mechanism.shapes`). Bodies of one rig collide with each other only
with ``self_collision`` (then every pair that is not parent and child, but for the pairs
overlapping in the start pose, which the report's notes name), and a kinematic
body's shapes are left out (nothing pushes a prescribed motion). :class:`PoseMotion`
interpolates sampled rigid poses the way a kinematic body's motion is, for a
:class:`core.contacts.MovingCollider` following an animated object.
Contacts step with the rig's integrator ("implicit" by default, "semi_implicit" or "rk4";
each keeps a resting contact from sinking or creeping, :mod:`core.integrators`); a rig given
"euler" is stepped with "implicit" and says so in its warnings. The result reports the
contacts per frame, the deepest overlap and the most energy one contact step gained.

Several rigs. :func:`build_rigs` simulates several rigs (:class:`RigPart`: a character and
a ragdoll, two ragdolls) as one: their bodies in one model, each keeping its own joints,
limits, springs, tracking, switches and pins, each rig a group of the
:class:`core.contacts.ContactSolver` (``groups`` of :func:`build_rig`). The simulated bodies'
shapes of different rigs collide without ``self_collision`` (which still decides the pairs
within a rig), but for the pairs overlapping at the start, which the report names. A
kinematic body's shapes, left out of its own rig, push the other rigs: its poses in the
world, sampled at the kinematic motions' times, make each shape a moving collider
(:class:`PoseMotion`) that is not pushed back, or a static one when still; this needs every
parent up to the world kinematic (the shapes of a kinematic body under a simulated one are
left out). :func:`part_results` splits the run's result into each rig's.

Following the animation. A simulated body with a ``strength`` above 0 tracks its animated
pose, ``motion`` (its target poses in the parent at ``motion_times``, what its keys,
constraints and drivers give it), in joint space: each coordinate is pulled toward the
target's coordinates ``q*(t)`` (a cubic spline in time of the coordinates closest to each
target pose, :func:`coordinates_from_pose`, rotations continuous across charts) with the
rates ``v*(t)`` of that spline by a spring and damper of
``k = s(t) I w^2, c = 2 s(t) I w`` (:func:`spring_from_frequency` at
:data:`TRACK_FREQUENCY` and the critical :data:`TRACK_DAMPING_RATIO`, ``I`` the coordinate's
inertia), ``s(t)`` the strength interpolated linearly between its samples (one per motion
time, or one for all), so a strength keyed down blends the pull out without a jump. The
springs are taken implicitly with the joint springs (:class:`core.integrators.Tracking`):
the integrator is "implicit" whatever was asked. Strength 1 follows a target within about
``(a* + g / L) / w^2`` rad (a coordinate's load per inertia over ``w^2``): 1 mm on the
tracked chains of ``tests/core/test_rig_tracking.py`` at the default substeps.

A body with ``follow = "global"`` tracks its animated pose in the world instead: its motion
composed with its ancestors' (each must have one, or be kinematic), a cubic spline in time of
the free-joint coordinates of those world poses (:class:`PoseMotion`) giving the target pose
and its body twist at any time, toward which every particle of the body is pulled by a
spring and damper per unit mass of ``k = s(t) w^2``, ``c = 2 s(t) w`` (the same ``w`` and
strength; :class:`core.integrators.Tracking`'s ``world``, taken implicitly inside the
articulated-body recursion as an added mass). Each body is held to the world, not to its
parent, so a free root stays upright on a walk and the error does not add up along a chain;
strength 1 holds a body within about ``g / w^2`` (0.07 mm) of its target under its weight
(``tests/core/test_world_tracking.py``).

Switching from animated to simulated. A simulated body given ``simulate_from`` (s, snapped
to the nearest frame) follows its motion exactly until then, its coordinates (those closest
to each pose, as a tracked body's targets) prescribed by a cubic spline in time like a
kinematic body's, and is simulated from then on, starting on its motion with the
animation's velocities: the centred finite difference of its coordinates one frame either
side, ``(q(t + 1/fps) - q(t - 1/fps)) fps / 2`` (the velocities :func:`build_rig` gives a
body from ``pose_before``/``pose_after``). :func:`simulate_rig` runs the shot in segments
between the switch frames, each starting from the state the one before ended in (the
coordinates are the same throughout); a body's limits act from its switch on.

Switching back to the animation. A body given ``kinematic_from`` (s, snapped to a frame,
after its ``simulate_from``, or simulated from the start without one) follows its motion
again from then on, without a jump: its coordinates are prescribed as the animation's
``a(t)`` plus an offset ``d(t)`` that starts at the simulated state's difference from it,
``d = q - a`` and ``d' = v - a'`` at the switch (rotations in the chart nearest the
animation's), and goes to zero with zero rate over :data:`RETURN_TIME` by a cubic Hermite
blend, so the body's position and velocity are continuous and it lands on its animation
:data:`RETURN_TIME` later, following it exactly from there. The blend is made from the state
the segment before the switch ended in (each run makes it anew); the body's limits act only
while it is simulated. One round trip per body: animated, simulated, animated.

Pins. A :class:`RigPin` holds a point of a simulated body to a target: a world point, or a
point of another body of the rig (``target_body``: a kinematic body following an object's
motion, sampled per frame and interpolated per substep by its cubic spline in double
precision, so a hand holds a moving bar). A soft pin is a spring: ``k = s m w^2`` N/m and
``c = 2 s m w`` N s/m along the line between the points (a
:meth:`core.model.Model.add_point_spring` of rest length 0, its damper on their relative
velocity), ``m`` the body's mass, ``w = 2 pi`` :data:`PIN_FREQUENCY` and ``s`` the pin's
strength, so a pinned body of mass m hangs ``g / (s w^2)`` below its pin (and as far below
a target moving at constant velocity). A hard pin (``hard``) is a bilateral constraint of
the limit solver (:class:`core.limits.PointPin`), solved with the limits (and contacts) in
every substep: the point's velocity is held to its target's, and a point that drifts
farther than :data:`core.limits.PIN_TOLERANCE` from its target in any direction is projected
back, so it stays on its target within that deadband; a target body that a drive moves is
never moved by the pin (:meth:`core.limits.LimitSolver.lock`). The step is first order in
energy: a hard-pinned pendulum loses energy in proportion to the substep and gains none
beyond its swing's oscillation. A rig with a hard pin steps its limits in Python (the
pin's rows need the bodies' poses) between compiled substeps. The spring is explicit: its
frequency on the pinned point,
``w sqrt(s m / m_eff)`` (``m_eff`` the mass the point moves with), stays under the
explicit step's bounds while its damping's ``h c / m_eff = 2 w h s m / m_eff`` stays under 2,
``s m / m_eff < 1 / (w h)``: 6 at the default 192 substeps per second (a strength above that
on a point that moves light, say the tip of a rod of a third of its mass, diverges; a
drag's spring, below, is bounded by the point's mass instead). A pin keyed on and off (``times``/``active``) acts from each frame it
is on to the next it is off: :func:`simulate_rig` runs the shot in segments between those
frames, each with the pins that are on (a hard pin switched on away from its target
snaps onto it in the first substep). Pins on kinematic bodies are refused (nothing moves
a prescribed motion), and so are targets that are not another body of the rig.

Live runs and dragging. :class:`RigRun` simulates a rig frame by frame as a playhead asks
(the frames :func:`simulate_rig` gives, segments included, without its reruns at more
substeps), and :class:`LiveRun` any mechanism with a model (a demo of
:mod:`core.mechanisms`: its drive and tracking read from each restart's time on); both take
a drag: :meth:`RigRun.set_drag` pulls a point of a simulated body toward
a world point by a critically damped spring from the next frame on (:meth:`RigRun.
release` lets go), given as a stiffness or, None, as the stiffest the explicit spring keeps
stable (a hard hold to within the step's bound, not a constraint): ``k = m_eff (d / h)^2``
with ``d`` = :data:`DRAG_STEP` and ``m_eff`` the least mass the grabbed point moves with at the
grab (:func:`_point_mass`); a stiffer one given is held there. Critically damped, its
semi-implicit step stays stable while ``2 w h + (w h)^2 / 2 < 2``, ``w h`` = 0.5 giving
1.13.

Muscles. A rig's :class:`RigMuscle` entries pull along straight paths through points on its
bodies (or the world) with OpenSim's DeGrooteFregly2016 muscle, rigid tendon
(:mod:`core.muscles.hill`): each substep their tensions times their moment arms are added to
the joint torques (:class:`core.muscles.actuation.MuscleForces` as the mechanism's ``tau``,
:class:`core.muscles.actuation.PointPaths` for the paths), their activations given per
muscle over time or integrated from excitations (:func:`core.muscles.actuation.
activation_table`). A muscle's passive fibres pull by themselves when stretched, so a relaxed
muscle across a joint still resists its stretching. The muscle forces are explicit in the
step (the implicit method takes the joint springs and dampers and the tracking springs
only): a strong muscle on a light bone needs small substeps, which :func:`simulate_rig` adds
when a run diverges. On the numba backend a rig with muscles steps substep by substep, its
muscle forces and its dynamics each one compiled call (:mod:`core.muscles.actuation`,
*Numba*). The activations are tabulated over the whole shot and read at the shot's time, so
the muscles act in every segment of a run that switches bodies or pins and in a
:class:`RigRun`, dragged or not, as in one run. The result gives each muscle's tension and
activation per frame; a
rig with muscles is not passive (its muscles do work), so it reports no energy drift.

Stability. The default integrator, "implicit", takes the joint springs and dampers
implicitly, so no Stiffness, Damping or Frequency makes a rig diverge; a spring is given
absolutely or as a frequency and damping ratio scaled by the inertia it moves
(:func:`spring_from_frequency`). Rotation coordinates turn at most
:data:`TURN_PER_SUBSTEP` per substep (a whipping chain of ever lighter bones is held there,
and the result names those bodies), and a run that still diverges is run again with more
substeps by itself (:func:`simulate_rig`).
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.interpolate import CubicSpline

from . import expcoords
from .bones import BONE_AXIS, REF_AXIS
from .checks import real_number, whole_number
from .contacts import MovingCollider, Shape, StaticCollider
from .dynamics import crba
from .errors import InvalidInputError, SimulationError
from .fitting.ik import Chain, solve_ik
from .integrators import IMPULSE_POSITION, Drive, Tracking
from .joints.base import Joint
from .joints.lower_pairs import Fixed, Prismatic, Revolute, Universal
from .joints.spherical import Free, Spherical
from .kinematics import forward_kinematics, point_jacobian
from .lie import se3, so3
from .limits import EllipticCone, PointPin, ReachCone, TwistLimit, joint_limits
from .mechanisms.base import (DRIFT_RESOLUTION, BodyDisplay, Mechanism, MechanismRun,
                              simulate_mechanism)
from .model import Model, default_inertia
from .muscles.actuation import CONTROL_KINDS, MuscleForces, PointPaths, activation_table
from .muscles.hill import HillParameters, MuscleArrays

__all__ = ["JOINT_KINDS", "FOLLOW_MODES", "RigJoint", "RigBody", "RigMuscle", "Rig", "RigResult", "PoseMotion",
           "build_rig",
           "simulate_rig", "coordinates_from_pose", "limit_violation", "spring_from_frequency",
           "RETURN_TIME", "START_TOLERANCE", "INERTIA_FLOOR", "TURN_PER_SUBSTEP", "TRACK_FREQUENCY",
           "TRACK_DAMPING_RATIO", "RigPin", "PIN_FREQUENCY", "RigRun", "RigPart", "build_rigs",
           "part_results"]

JOINT_KINDS = ("hinge", "slider", "universal", "ball", "free", "fixed", "joint", "kinematic")
#: how a body with a strength follows its animation (module docstring, *Following the
#: animation*): its joint's coordinates, or its pose in the world
FOLLOW_MODES = ("local", "global")
#: a body whose current pose is farther than this from its joint's closest pose (m, or rad
#: of rotation) starts at that closest pose with a warning
START_TOLERANCE = 1e-6
#: a kinematic motion whose poses differ by less than this (per matrix entry) is constant
_STILL = 1e-12
#: the natural frequency (Hz) of a coordinate tracking its animated pose at strength 1, and
#: its damping ratio (module docstring, *Following the animation*): at 60 Hz a uniform bone
#: held out level under gravity lags by ``1.5 g / (L w^2)`` rad, 0.1 mm at its tip whatever
#: its length L, and a chain of three 0.4 m bones swinging 0.5 rad at 1 Hz stays within
#: 0.6 mm (``tests/core/test_rig_tracking.py``); implicit, so stable at the default 192
#: substeps per second (``w h`` = 2)
TRACK_FREQUENCY = 60.0
TRACK_DAMPING_RATIO = 1.0
#: the frequency (Hz) of a pinned body of the pin's strength 1 on its pin (module docstring,
#: *Pins*)
PIN_FREQUENCY = 5.0


@dataclass(frozen=True)
class RigJoint:
    """The joint of a body to its parent (module docstring).

    kind: one of :data:`JOINT_KINDS`. axis, axis2: ``(3,)`` in the child's rest frame (hinge
    and slider axis; a universal joint's first and second axes). joint: the core joint of
    kind ``"joint"``. lower, upper: ``(nq,)`` coordinate ranges (rad or m; inf: none) of
    hinge, slider, universal and ``"joint"`` kinds. cone: None, ``"circular"`` or
    ``"elliptical"`` (ball and free joints): the reach cone about ``cone_axis`` (child rest
    frame, the bone's Y by default) with ``half_angle`` or, elliptical, ``half_angle_x`` /
    ``half_angle_z`` towards ``ref_axis`` and ``cone_axis x ref_axis``. twist: None or the
    largest twist (rad) about ``cone_axis``.

    The spring and damper per coordinate toward ``rest`` ``(nq,)`` (None: the zero
    coordinates) are given either absolutely, ``stiffness`` (N m/rad or N/m) and ``damping``
    (N m s/rad or N s/m), or relative to the inertia the coordinate moves
    (:func:`spring_from_frequency`): ``frequency`` (Hz, 0: no spring) and ``damping_ratio``;
    a joint with ``frequency`` given takes the relative form (its stiffness and damping must
    then be 0).
    """

    kind: str
    axis: tuple = (1.0, 0.0, 0.0)
    axis2: tuple = (0.0, 0.0, 1.0)
    joint: Joint = None
    lower: tuple = None
    upper: tuple = None
    cone: str = None
    cone_axis: tuple = tuple(BONE_AXIS)
    ref_axis: tuple = tuple(REF_AXIS)
    half_angle: float = math.pi / 4
    half_angle_x: float = math.pi / 4
    half_angle_z: float = math.pi / 6
    twist: float = None
    stiffness: float = 0.0
    damping: float = 0.0
    rest: tuple = None
    frequency: float = None
    damping_ratio: float = 0.0

    def core_joint(self, name):
        """The core joint of this kind (kinematic: None, decided by the motion)."""
        kind = self.kind
        if kind not in JOINT_KINDS:
            raise InvalidInputError(f"body {name!r}: joint kind {kind!r} is not one of "
                                    f"{JOINT_KINDS}")
        limits = {"lower": self.lower, "upper": self.upper}
        if kind == "hinge":
            return Revolute(self.axis, **limits)
        if kind == "slider":
            return Prismatic(self.axis, **limits)
        if kind == "universal":
            return Universal(self.axis, self.axis2, **limits)
        if kind == "ball":
            return Spherical()
        if kind == "free":
            return Free()
        if kind == "fixed":
            return Fixed()
        if kind == "joint":
            if not isinstance(self.joint, Joint):
                raise InvalidInputError(f"body {name!r}: a joint of kind 'joint' needs its core "
                                        "joint (a fitted spline joint or a wire); fit or pick "
                                        "one first")
            return self.joint
        return None


@dataclass(frozen=True)
class RigBody:
    """One body of a rig (module docstring).

    name: unique. parent: index of an earlier body, or -1 for the world. T_rest: ``(4, 4)``
    rest pose in the parent's frame. joint: :class:`RigJoint`. mass (kg), com ``(3,)`` (m,
    body frame), inertia ``(3, 3)`` about the com (kg m^2). pose: ``(4, 4)`` current pose in
    the parent (the initial state). pose_before, pose_after: the poses one frame before and
    after (central-difference velocities), or None (at rest). q: the initial coordinates
    when known exactly (a driven bone's coordinate sliders), else found from ``pose``.
    motion_times ``(K,)`` (s) and motion ``(K, 4, 4)``: a kinematic body's poses, or the
    animated poses a simulated body tracks. strength: a number or ``(K,)`` one per motion
    time (0: limp), how strongly a simulated body follows its motion (module docstring,
    *Following the animation*), in its joint (``follow`` "local") or in the world
    ("global", :data:`FOLLOW_MODES`). simulate_from: None, or the time (s) until which a simulated
    body follows its motion exactly (module docstring, *Switching from animated to
    simulated*); kinematic_from: None, or the later time (s) from which it returns to its
    motion (*Switching back to the animation*).
    shapes: the body's collision shapes (:class:`core.contacts.Shape`, body frame).
    """

    name: str
    parent: int
    T_rest: np.ndarray
    joint: RigJoint
    mass: float = 1.0
    com: tuple = (0.0, 0.0, 0.0)
    inertia: np.ndarray = None
    pose: np.ndarray = None
    pose_before: np.ndarray = None
    pose_after: np.ndarray = None
    q: tuple = None
    motion_times: np.ndarray = None
    motion: np.ndarray = None
    shapes: tuple = ()
    strength: object = 0.0
    simulate_from: float = None
    follow: str = "local"
    kinematic_from: float = None


@dataclass(frozen=True)
class RigPin:
    """A point of a simulated body held to a target point by a spring or a constraint
    (module docstring, *Pins*). body: the body's name; point ``(3,)`` in its frame (m);
    target ``(3,)`` the target point (m): a world point, or with ``target_body`` (the name
    of another body of the rig, a kinematic one following an object's motion, say) a point
    in that body's frame; strength: above 0, the spring's stiffness relative to the body's
    mass; hard: True holds the point by a constraint instead (:class:`core.limits.PointPin`,
    the strength unused); times ``(K,)`` (s) and active ``(K,)`` (bool): the pin is on from
    each time whose ``active`` is True to the next time (None: on throughout)."""

    body: str
    point: tuple
    target: tuple
    strength: float = 1.0
    times: tuple = None
    active: tuple = None
    target_body: str = None
    hard: bool = False


@dataclass(frozen=True)
class RigMuscle:
    """A muscle of a rig (module docstring, *Muscles*): ``name`` (unique), ``points`` its path,
    at least two ``(body name, (3,) point in that body's frame)`` pairs in order (the body
    ``""``: the world), ``parameters`` its :class:`core.muscles.hill.HillParameters` and
    ``control`` its activation (or excitation, as the rig's ``muscle_control`` says): a
    number in ``[0, 1]`` or ``(times (s), values)`` sampled over the run."""

    name: str
    points: tuple
    parameters: HillParameters
    control: object = 0.0


@dataclass
class Rig:
    """A built rig: the :class:`core.mechanisms.Mechanism` to simulate (its first segment:
    module docstring, *Switching from animated to simulated*), the bodies, each body's
    coordinate slice, the limit objects per body, the start warnings, the prescribed
    coordinates ``[(until (s; inf: throughout), coordinates, cubic spline)]`` of the
    kinematic bodies and of those that switch to simulated, the pins ``[(point spring
    (:meth:`core.model.Model.add_point_spring`'s arguments) or hard pin
    (:class:`core.limits.PointPin`), on ``[(from, until)]`` (s))]`` over the model's own point
    springs ``springs``, and the muscles' forces
    (:class:`core.muscles.actuation.MuscleForces` on the shot's time, which each segment's
    ``tau`` reads from its start; None without muscles). Several rigs simulated as one
    (:func:`build_rigs`): ``parts`` their ``(name, first body, end body)``, their bodies in
    that order (else ``()``). ``returns``: the bodies switching back to their animation,
    ``[(from (s), coordinates, the animation's cubic spline)]``, and ``blends`` the
    :class:`_Return` motion each took at its switch in the last run (module docstring,
    *Switching back to the animation*)."""

    mechanism: Mechanism
    bodies: tuple
    slices: list
    limits: list
    warnings: list = field(default_factory=list)
    prescribed: list = field(default_factory=list)
    pins: list = field(default_factory=list)
    springs: tuple = ()
    muscles: MuscleForces = None
    parts: tuple = ()
    returns: list = field(default_factory=list)
    blends: dict = field(default_factory=dict)


@dataclass(frozen=True)
class RigResult:
    """A simulated rig (F frames, nb bodies): status ("completed"/"cancelled"), times (F,)
    (s), local ``(F, nb, 4, 4)`` each body's pose in its parent, world ``(F, nb, 4, 4)``,
    q (F, nq), energy_drift (relative, None unless the rig is passive), worst_violation
    (rad or m, the largest excess over any limit at any frame; 0 without limits),
    violation_body (its body, or ""), wall_time (s), steps, warnings (start warnings);
    with contacts (else None, 0, 0, ()): contacts ``(F,)`` the most contacts of a substep in
    each frame (:meth:`core.contacts.ContactReport.per_frame`), worst_penetration (m, the
    deepest overlap of any substep), energy_gained (J, the most one contact step gained)
    and contact_notes (:attr:`core.contacts.ContactReport.notes`: how shapes were made,
    the self-collision pairs left out); energy ``(F,)`` and kinetic ``(F,)`` the mechanical
    and kinetic energy per frame (J), drive_work ``(F,)`` the kinematic bodies' work since
    the start (J) and v ``(F, nv)`` the coordinates' rates; with muscles (else ``()``, None,
    None): muscles their names, tension ``(F, m)`` each muscle's tension along its path (N)
    and activation ``(F, m)`` per frame."""

    status: str
    times: np.ndarray
    local: np.ndarray
    world: np.ndarray
    q: np.ndarray
    energy_drift: float
    worst_violation: float
    violation_body: str
    wall_time: float
    steps: int
    warnings: tuple
    contacts: np.ndarray = None
    worst_penetration: float = 0.0
    energy_gained: float = 0.0
    contact_notes: tuple = ()
    energy: np.ndarray = None
    kinetic: np.ndarray = None
    drive_work: np.ndarray = None
    v: np.ndarray = None
    muscles: tuple = ()
    tension: np.ndarray = None
    activation: np.ndarray = None


def _hinge_angle(axis, R):
    """The rotation about the unit ``axis`` closest to each R ``(..., 3, 3)`` (largest
    ``tr(R_a^T R)``): ``(...)``."""
    w = np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0],
                  R[..., 1, 0] - R[..., 0, 1]], axis=-1)
    return np.arctan2(w @ axis, np.trace(R, axis1=-2, axis2=-1) -
                      np.einsum("i,...ij,j->...", axis, R, axis))


def coordinates_from_pose(joint, kind, T_rest, T, q_guess=None):
    """The coordinates ``(nq,)`` of ``joint`` (of ``kind``) that put the child closest to
    ``T`` (4, 4) in the parent, and the distance left ``(metres, radians)``.

    Closed forms for hinge, slider, ball and free joints; the core's IK (:func:`solve_ik`,
    from ``q_guess`` when given) for universal joints and given joints."""
    placement = np.eye(4) if kind == "joint" else T_rest
    B = se3.inv(placement) @ T
    if kind == "hinge":
        q = np.array([_hinge_angle(joint.axis, B[:3, :3])])
    elif kind == "slider":
        q = np.array([float(joint.axis @ B[:3, 3])])
    elif kind == "ball":
        q = so3.log(B[:3, :3])
    elif kind == "free":
        q = np.concatenate([so3.log(B[:3, :3]), B[:3, 3]])
    elif kind == "fixed":
        q = np.zeros(0)
    else:
        result = solve_ik(Chain([joint]), B, q0=q_guess, max_iterations=50, position_tol=1e-10,
                          rotation_tol=1e-10)
        q = result.q
    D = se3.inv(joint.transform(q)) @ B
    return q, (float(np.linalg.norm(D[:3, 3])), float(np.linalg.norm(so3.log(D[:3, :3]))))


def _charts(r):
    """The exponential coordinates of the rotation exp(r) in the charts next to r's:
    ``r`` and ``r -+ 2 pi r/|r|`` (seed 003 eq. 66 with n = 0, -1, 1)."""
    th = float(np.linalg.norm(r))
    if th < 1e-9:
        return [r]
    u = r / th
    return [r, r - 2.0 * math.pi * u, r + 2.0 * math.pi * u]


def _nearest_chart(r, ref):
    """The exponential coordinates of exp(r) in the chart nearest ``ref`` (3,)."""
    return min(_charts(r), key=lambda c: float(np.sum((c - ref) ** 2)))


def _continuous_logs(R):
    """Exponential coordinates ``(K, 3)`` of rotations ``(K, 3, 3)`` taken continuously: each
    in the chart nearest the one before."""
    r = so3.log(R)
    for k in range(1, len(r)):
        r[k] = _nearest_chart(r[k], r[k - 1])
    return r


class _KinematicMotion:
    """The prescribed coordinates of the kinematic bodies (and of those not yet switched to
    simulated): a cubic spline of each body's coordinates in time (clamped to the sampled
    times), at a time t (s) or at times ``(K,)`` (then ``(K, k)`` arrays) of a run that
    starts ``offset`` s into the shot."""

    def __init__(self, splines, offset=0.0):
        self.splines, self.offset = splines, offset

    def __call__(self, t):
        t = np.asarray(t, dtype=float) + self.offset
        q, v, a = [], [], []
        for s in self.splines:
            tt = np.clip(t, s.x[0], s.x[-1])
            q.append(s(tt))
            v.append(s(tt, 1))
            a.append(s(tt, 2))
        return (np.concatenate(q, axis=-1), np.concatenate(v, axis=-1),
                np.concatenate(a, axis=-1))


def _check_pose(T, what):
    try:
        return se3.check_transform(np.asarray(T, dtype=float), what)
    except (TypeError, ValueError) as err:
        raise InvalidInputError(f"{what}: {err}") from None


class PoseMotion:
    """Rigid poses ``poses (K, 4, 4)`` sampled at increasing ``times (K,)`` (s, K >= 2) as a
    function of time: a cubic spline of the free-joint coordinates (each rotation's
    logarithm, made continuous across the ``|r| = pi`` chart boundary, and the translation),
    clamped to the sampled times; calling it at t gives the ``(4, 4)`` pose. ``spline`` is the
    :class:`scipy.interpolate.CubicSpline` of the six coordinates."""

    def __init__(self, times, poses):
        q = np.concatenate([_continuous_logs(poses[:, :3, :3]), poses[:, :3, 3]], axis=1)
        self.spline = CubicSpline(times, q, axis=0)
        self.joint = Free()

    def __call__(self, t):
        s = self.spline
        return self.joint.transform(s(min(max(float(t), s.x[0]), s.x[-1])))


def _kinematic(body, pose):
    """(joint, placement, spline or None) of a kinematic body from its motion (without one:
    fixed at ``pose``)."""
    if body.motion is None:
        return Fixed(), pose, None
    times, motion = _motion(body)
    if np.abs(motion - motion[0]).max() <= _STILL or len(motion) < 2:
        return Fixed(), motion[0], None
    return Free(), np.eye(4), PoseMotion(times, motion).spline


def _motion(body):
    """``(times (K,), poses (K, 4, 4))`` of a body's motion, checked."""
    times = np.asarray(body.motion_times, dtype=float).ravel()
    motion = np.asarray(body.motion, dtype=float)
    if motion.ndim != 3 or motion.shape[1:] != (4, 4) or len(times) != len(motion):
        raise InvalidInputError(f"body {body.name!r}: a motion needs one (4, 4) pose per time, "
                                f"got {motion.shape} poses for {len(times)} times")
    _check_pose(motion, f"body {body.name!r}: a pose of its motion")
    if len(times) > 1 and not np.all(np.diff(times) > 0):
        raise InvalidInputError(f"body {body.name!r}: the motion's times must increase")
    return times, motion


def _strengths(body, count):
    """``(count,)`` a simulated body's strength per motion time, checked: finite, >= 0."""
    try:
        s = np.asarray(body.strength, dtype=float).ravel()
    except (TypeError, ValueError):
        raise InvalidInputError(f"body {body.name!r}: Strength must be a number or one number "
                                f"per frame, got {body.strength!r}") from None
    if s.size == 1:
        s = np.full(count, s[0])
    if s.size != count:
        raise InvalidInputError(f"body {body.name!r}: give one Strength per frame of its "
                                f"animation ({count}), got {s.size}")
    bad = np.nonzero(~(np.isfinite(s) & (s >= 0.0)))[0]
    if bad.size:
        raise InvalidInputError(f"body {body.name!r}: Strength must be a number at or above 0 "
                                f"at every frame, got {s[bad[0]]:g} at sample {bad[0]}; key "
                                "it to 0 (limp) or more")
    return s


class _Shiftable:
    """Tracking read at the shot's time: :meth:`shifted` gives the same tracking (its
    splines shared) for a run that starts ``offset`` s into the shot."""

    def shifted(self, offset):
        out = self.__class__.__new__(self.__class__)
        out.__dict__.update(self.__dict__, offset=offset)
        return out


class _Tracks(_Shiftable):
    """The tracking springs of a rig's tracked bodies as a
    :class:`core.integrators.Tracking` motion: at times ``t (K,)`` the gains ``(K, nv)``
    (strength interpolated linearly, clamped to its samples, times each coordinate's
    :data:`TRACK_FREQUENCY` gains ``kw, cw``) and the target coordinates and rates (a cubic
    spline in time, clamped: at rest outside its samples; one sample: that pose) in a run
    that starts ``offset`` s into the shot. ``tracks``: ``(slice, times, strengths, target
    coordinates (K, nq), kw, cw)``; the bodies sampled at the same times share one spline
    and one interpolation (a character's bones: one each per call)."""

    def __init__(self, nv, tracks, offset=0.0):
        self.nv, self.offset = nv, offset
        groups = {}
        for s, times, strength, q, kw, cw in tracks:
            n = s.stop - s.start
            groups.setdefault(tuple(times), []).append(
                (np.arange(s.start, s.stop), np.repeat(strength[:, None], n, axis=1), q, kw, cw))
        self.groups = []
        for key, members in groups.items():
            times = np.array(key)
            cols, strength, q, kw, cw = (np.concatenate(parts, axis=-1)
                                         for parts in zip(*members))
            target = CubicSpline(times, q, axis=0) if len(times) > 1 else q[0]
            self.groups.append((cols, times, strength, target, kw, cw))


    def __call__(self, t):
        t = np.atleast_1d(np.asarray(t, dtype=float)) + self.offset
        k, c, q, v = (np.zeros((t.size, self.nv)) for _ in range(4))
        for cols, times, strength, target, kw, cw in self.groups:
            a = _interpolated(times, strength, t)
            k[:, cols], c[:, cols] = a * kw, a * cw
            if not isinstance(target, CubicSpline):
                q[:, cols] = target
                continue
            tt = np.clip(t, times[0], times[-1])
            q[:, cols] = target(tt)
            inside = (t >= times[0]) & (t <= times[-1])
            v[:, cols] = target(tt, 1) * inside[:, None]
        return k, c, q, v


def _interpolated(times, strength, t):
    """The strength ``(K, ...)`` at times ``t (K,)``: linear between its samples ``strength
    (len(times), ...)``, clamped to the first and the last (one sample: that one)."""
    if len(times) < 2:
        return strength[:1]
    i = np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 2)
    w = np.clip((t - times[i]) / (times[i + 1] - times[i]), 0.0, 1.0)
    w = w.reshape(w.shape + (1,) * (strength.ndim - 1))
    return strength[i] * (1.0 - w) + strength[i + 1] * w


class _WorldTracks(_Shiftable):
    """The world tracking of a rig's bodies that follow their animation in the world
    (module docstring) as :attr:`core.integrators.Tracking.world`: at times ``t (K,)`` the
    gains per unit mass ``(K, nb)`` (strength interpolated linearly, clamped, times ``w^2``
    and ``2 w``), the target world poses ``(K, nb, 4, 4)`` and body twists ``(K, nb, 6)``
    (cubic splines of the free-joint coordinates as :class:`PoseMotion`'s, clamped: at rest
    outside its samples; one sample: that pose) in a run that starts ``offset`` s into the
    shot. ``tracks``: ``(body index, times, strengths, world poses (K, 4, 4))``; the bodies
    sampled at the same times share one spline and one interpolation (a character's bones:
    one each per call)."""

    def __init__(self, nb, tracks, offset=0.0):
        self.nb, self.offset = nb, offset
        groups = {}
        for i, times, strength, poses in tracks:
            groups.setdefault(tuple(times), []).append((i, strength, poses))
        self.groups = []
        for key, members in groups.items():
            times = np.array(key)
            cols = np.array([i for i, _, _ in members])
            strength = np.stack([s for _, s, _ in members], axis=1)
            poses = np.stack([p for _, _, p in members], axis=1)          # (K, n, 4, 4)
            q = np.concatenate([np.stack([_continuous_logs(p[:, :3, :3]) for _, _, p in members],
                                         axis=1), poses[:, :, :3, 3]], axis=2)
            target = CubicSpline(times, q, axis=0) if len(times) > 1 else poses[0]
            self.groups.append((cols, times, strength, target))


    def __call__(self, t):
        t = np.atleast_1d(np.asarray(t, dtype=float)) + self.offset
        w = 2.0 * math.pi * TRACK_FREQUENCY
        k, c = np.zeros((t.size, self.nb)), np.zeros((t.size, self.nb))
        T = np.broadcast_to(np.eye(4), (t.size, self.nb, 4, 4)).copy()
        V = np.zeros((t.size, self.nb, 6))
        for cols, times, strength, target in self.groups:
            s = _interpolated(times, strength, t)
            k[:, cols], c[:, cols] = s * w * w, s * 2.0 * TRACK_DAMPING_RATIO * w
            if not isinstance(target, CubicSpline):
                T[:, cols] = target
                continue
            tt = np.clip(t, times[0], times[-1])
            q = target(tt)                                                # (K, n, 6)
            rate = target(tt, 1) * ((t >= times[0]) & (t <= times[-1]))[:, None, None]
            R = so3.exp(q[..., :3])
            G = T[:, cols]
            G[..., :3, :3], G[..., :3, 3] = R, q[..., 3:]
            T[:, cols] = G
            V[:, cols, :3] = np.einsum("knab,knb->kna", so3.right_jacobian(q[..., :3]),
                                       rate[..., :3])
            V[:, cols, 3:] = np.einsum("knba,knb->kna", R, rate[..., 3:])
        return k, c, T, V


def _world_motion(bodies, i, times):
    """``(K, 4, 4)`` the animated world poses of body ``i`` at its motion's ``times``: its
    motion composed with its ancestors' (a kinematic ancestor without one: fixed at its
    pose); InvalidInputError when an ancestor has no animation or another timing."""
    T = np.broadcast_to(np.eye(4), (len(times), 4, 4))
    j = i
    while j >= 0:
        b = bodies[j]
        if b.motion is not None:
            own, local = _motion(b)
            if own.shape != times.shape or not np.allclose(own, times):
                raise InvalidInputError(f"body {bodies[i].name!r} follows its animation in "
                                        f"the world, but {b.name!r} above it is animated at "
                                        "other times; sample every bone at the same frames")
        elif b.joint.kind == "kinematic":
            local = _check_pose(b.T_rest if b.pose is None else b.pose,
                                f"body {b.name!r}: pose")
        else:
            raise InvalidInputError(f"body {bodies[i].name!r} follows its animation in the "
                                    f"world, which needs the animation of every bone above "
                                    f"it, and {b.name!r} has none; key that bone's pose, or "
                                    "set Follow to Local")
        T = local @ T
        j = int(b.parent)
    return T


def _limits(body, i, core):
    """core.limits objects of one simulated body."""
    out = []
    j = body.joint
    if j.cone is not None or j.twist is not None:
        if j.kind not in ("ball", "free"):
            raise InvalidInputError(f"body {body.name!r}: reach cones and twist limits need a "
                                    f"ball or free joint, not a {j.kind}")
    if j.cone == "circular":
        out.append(ReachCone(i, j.cone_axis, j.half_angle))
    elif j.cone == "elliptical":
        out.append(EllipticCone(i, j.cone_axis, j.ref_axis, j.half_angle_x, j.half_angle_z))
    elif j.cone is not None:
        raise InvalidInputError(f"body {body.name!r}: cone must be None, 'circular' or "
                                f"'elliptical', got {j.cone!r}")
    if j.twist is not None:
        tw = real_number(j.twist, f"body {body.name!r}: twist limit", 0.0, math.pi)
        out.append(TwistLimit(i, j.cone_axis, -tw, tw))
    return out + joint_limits(i, core)


#: the largest ``h lambda`` of a decaying mode each explicit method keeps stable (RK4: its
#: stability region reaches -2.785 on the real axis; explicit and semi-implicit Euler: -2)
STABLE_DECAY = {"rk4": 2.785, "euler": 2.0, "semi_implicit": 2.0}
#: the largest ``h omega`` of an undamped oscillation each explicit method keeps (RK4: its
#: stability region reaches 2.828 on the imaginary axis; semi-implicit Euler: 2; explicit
#: Euler grows any oscillation, bounded here by the semi-implicit figure)
STABLE_SWING = {"rk4": 2.828, "euler": 2.0, "semi_implicit": 2.0}
#: the frequency (Hz) a damping ratio refers to on a joint without a spring (frequency 0):
#: its coordinate's rate then decays as ``exp(-4 pi ratio t)``
FREE_DAMPING_HZ = 1.0


def spring_from_frequency(inertia, frequency, ratio):
    """``(stiffness, damping)`` per coordinate from the inertias ``(n,)`` the coordinates move
    (the joint-space mass matrix's diagonal at the rest pose: the bone and everything below
    it, the joints below held), a natural frequency (Hz) and a damping ratio: ``k = I w^2``,
    ``c = 2 ratio I w`` with ``w = 2 pi frequency``, so the coordinate alone swings at
    ``frequency`` and decays at ``ratio`` on any bone size (``w = 2 pi``
    :data:`FREE_DAMPING_HZ` in ``c`` when the frequency is 0)."""
    inertia = np.asarray(inertia, dtype=float)
    w = 2.0 * math.pi * float(frequency)
    wd = w if frequency > 0.0 else 2.0 * math.pi * FREE_DAMPING_HZ
    return inertia * w * w, 2.0 * float(ratio) * inertia * wd


def _stiff_spring_warning(name, inertia, k, c, fps, substeps, integrator):
    """A sentence when an explicit method cannot follow a body's spring or damper: the
    fastest decay ``c / I`` and swing ``sqrt(k / I)`` of its coordinates (``I`` the mass
    matrix's diagonal, the joints below held) against :data:`STABLE_DECAY` and
    :data:`STABLE_SWING`; None when it can, or for the implicit method."""
    if integrator not in STABLE_DECAY or not (np.any(k) or np.any(c)):
        return None
    h = 1.0 / (float(fps) * int(substeps))
    need = max(float(np.max(c / inertia)) * h / STABLE_DECAY[integrator],
               float(np.sqrt(np.max(k / inertia))) * h / STABLE_SWING[integrator])
    if need <= 1.0:
        return None
    return (f"{name}'s spring or damper is too stiff for steps of {1000 * h:.3g} ms with the "
            f"{integrator} integrator, so the run will likely diverge: switch the Integrator "
            f"to Implicit Euler (stable at any stiffness and damping) or use at least "
            f"{int(math.ceil(need * int(substeps)))} Substeps")


#: the most a simulated rotation coordinate turns per substep at its rate (rad): faster
#: motion is not resolved by the step (fewer than 13 substeps a turn) and is held to it
#: (:class:`core.integrators.Integrator`, *Rate limit*)
TURN_PER_SUBSTEP = 0.5
#: the rotation coordinates of each joint kind (the rest: translations, a spline joint's)
_ROTATIONS = {"hinge": 1, "universal": 2, "ball": 3, "free": 3}


def _turns(body, joint):
    """``(nq,)`` the step limit of a body's coordinates: :data:`TURN_PER_SUBSTEP` on the
    rotation coordinates of a simulated body, inf elsewhere."""
    out = np.full(joint.nq, np.inf)
    out[:_ROTATIONS.get(body.joint.kind, 0)] = TURN_PER_SUBSTEP
    return out


#: the least principal moment of inertia of a simulated body, as a fraction of the largest
#: principal moment of any simulated body of the rig (:func:`_floored_inertias`)
INERTIA_FLOOR = 1e-4


def _floored_inertias(bodies):
    """``({name: (3, 3) inertia about the com}, floor, [names raised])`` of the simulated
    bodies, each principal moment raised to at least ``floor`` = :data:`INERTIA_FLOOR`
    times the largest principal moment of the rig's simulated bodies.

    A bone thousands of times lighter to turn than its neighbours (a face bone on a head, a
    finger on a hand, a thin neck between chest and head) makes the rig's equations stiff:
    a whipping chain of light bones, or contacts and limits pushing on one, turn it faster
    than any affordable step follows. Human meta-rigs with every bone simulated need 16
    times the substeps without the floor and hold at the default with it; bones above the
    floor keep their inertia exactly."""
    out = {}
    for b in bodies:
        if b.joint.kind == "kinematic":
            continue
        m = real_number(b.mass, f"body {b.name!r}: mass", 0.0)
        out[b.name] = default_inertia(m) if b.inertia is None else \
            np.asarray(b.inertia, dtype=float)
    try:
        moments = {name: np.linalg.eigh(I) for name, I in out.items()}
    except (np.linalg.LinAlgError, ValueError):
        return out, 0.0, []              # the model refuses the body, naming it
    floor = INERTIA_FLOOR * max((float(w.max()) for w, _ in moments.values()), default=0.0)
    raised = []
    for name, (w, V) in moments.items():
        if w.min() < floor:
            out[name] = (V * np.maximum(w, floor)) @ V.T
            raised.append(name)
    return out, floor, raised


def _listed(names, shown=8):
    """``"a, b, c"``, or the first ``shown`` and how many more."""
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[:shown])} and {len(names) - shown} more"


#: a start pose farther than this outside a limit (rad; m for a slider's range: a tenth of
#: it) is named before the run: the limit solver's deadband (:class:`core.limits.LimitSolver`)
START_EXCESS = 1e-3


def _start_outside(body, joint, q):
    """``[sentence]`` naming how far a body's start coordinates ``q`` lie outside its limits
    (:func:`limit_violation`), or ``[]`` within :data:`START_EXCESS`."""
    excess = float(limit_violation(body.joint, joint, q[None])[0])
    linear = body.joint.kind == "slider"
    if excess <= (0.1 * START_EXCESS if linear else START_EXCESS):
        return []
    size = f"{1000 * excess:.3g} mm" if linear else f"{math.degrees(excess):.3g} deg"
    what = "range" if body.joint.cone is None and body.joint.twist is None else \
        "reach cone or twist limit" if body.joint.lower is None else "limits"
    return [f"{body.name} starts {size} outside its {what}, so the simulation snaps it inside "
            f"at the first step: pose it inside at the start frame, or widen the {what}"]


def _spring_spec(body):
    """``(absolute, stiffness or frequency, damping or ratio, rest)`` of a simulated body's
    spring and damper, checked."""
    j, name = body.joint, body.name
    k = real_number(j.stiffness, f"body {name!r}: stiffness", 0.0)
    c = real_number(j.damping, f"body {name!r}: damping", 0.0)
    rest = None if j.rest is None else np.asarray(j.rest, float)
    if j.frequency is None:
        return True, k, c, rest
    if k or c:
        raise InvalidInputError(f"body {name!r}: give its spring either as a frequency and a "
                                f"damping ratio or as a stiffness and a damping, not both")
    return (False, real_number(j.frequency, f"body {name!r}: frequency (Hz)", 0.0),
            real_number(j.damping_ratio, f"body {name!r}: damping ratio", 0.0), rest)


def _rest_diagonal(model):
    """``(nv,)`` the mass matrix's diagonal at the rest pose (every joint at its neutral
    coordinates: a coordinate's entry depends on the bodies below it only): the inertia
    each coordinate moves, the joints below held."""
    q_rest = np.concatenate([j.neutral() for j in model.joints])
    return np.diag(crba(model, model.create_data(), q_rest)).copy()


def _target(body, joint, T_rest, q):
    """``(times (K,), strengths (K,), target coordinates (K, nq))`` of a simulated body
    that follows its motion (module docstring, *Following the animation*; ``q`` its start
    coordinates, the guess for the first pose), or None for one with no strength."""
    if body.motion is None:
        if np.ndim(body.strength) == 0 and body.strength == 0.0:
            return None
        _strengths(body, 1)
        raise InvalidInputError(f"body {body.name!r} has a Strength but no animated pose to "
                                "follow; key its pose, or set its Strength to 0")
    times, motion = _motion(body)
    strength = _strengths(body, len(times))
    if not np.any(strength):
        return None
    return times, strength, _motion_coordinates(body, joint, T_rest, motion, q)


def _motion_coordinates(body, joint, T_rest, motion, q):
    """``(K, nq)`` the coordinates of a simulated body's joint closest to each pose of its
    motion ``(K, 4, 4)`` (:func:`coordinates_from_pose`; hinges, balls and free joints in
    closed form for all poses at once, the others each from the one before, the first from
    ``q``), rotations continuous across charts from ``q``'s."""
    kind = body.joint.kind
    B = se3.inv(T_rest) @ motion if kind != "joint" else motion
    if kind == "hinge":
        return _hinge_angle(joint.axis, B[:, :3, :3])[:, None]
    if kind in ("ball", "free"):
        r = so3.log(B[:, :3, :3])
        r[0] = _nearest_chart(r[0], q[:3])
        for k in range(1, len(r)):
            r[k] = _nearest_chart(r[k], r[k - 1])
        return r if kind == "ball" else np.concatenate([r, B[:, :3, 3]], axis=1)
    out, guess = np.empty((len(motion), joint.nq)), q
    for k, T in enumerate(motion):
        out[k], _ = coordinates_from_pose(joint, kind, T_rest, T, q_guess=guess)
        guess = out[k]
    return out


#: the time (s) a body switching back to its animation takes to land on it (module
#: docstring, *Switching back to the animation*)
RETURN_TIME = 0.25


class _Return:
    """The prescribed coordinates of a body returning to its animation (module docstring,
    *Switching back to the animation*): the animation's cubic spline ``spline`` plus the
    cubic Hermite offset from ``d0`` with rate ``d1`` at ``t0`` to zero with zero rate at
    ``t0 + RETURN_TIME``, called as a :class:`scipy.interpolate.CubicSpline` (``(t, nu)``,
    ``x`` its sampled times)."""

    def __init__(self, spline, t0, d0, d1):
        self.spline, self.t0, self.d0, self.d1 = spline, t0, d0, d1
        self.x = spline.x

    def __call__(self, t, nu=0):
        T = RETURN_TIME
        s = (np.asarray(t, dtype=float) - self.t0) / T
        inside = ((s >= 0.0) & (s <= 1.0))[..., None]
        s = np.clip(s, 0.0, 1.0)[..., None]
        if nu == 0:
            h0, h1 = 2 * s ** 3 - 3 * s ** 2 + 1, T * (s ** 3 - 2 * s ** 2 + s)
        elif nu == 1:
            h0, h1 = (6 * s ** 2 - 6 * s) / T, 3 * s ** 2 - 4 * s + 1
        else:
            h0, h1 = (12 * s - 6) / T ** 2, (6 * s - 4) / T
        offset = h0 * self.d0 + h1 * self.d1
        if nu:
            offset = offset * inside
        return self.spline(t, nu) + offset


def _switch(body, fps):
    """The time (s, snapped to a frame) a simulated body switches from its motion to
    simulated (module docstring), or None."""
    if body.simulate_from is None:
        return None
    t = real_number(body.simulate_from, f"body {body.name!r}: simulate from (s)")
    if body.motion is None or len(body.motion) < 2:
        raise InvalidInputError(f"body {body.name!r} switches from animated to simulated but "
                                "has no animation to follow before; key its pose over at "
                                "least two frames, or untick Kinematic")
    return round(t * fps) / fps


def _return(body, switch, fps):
    """The time (s, snapped to a frame) a body switches back to its animation (module
    docstring, *Switching back to the animation*), or None; ``switch`` its switch to
    simulated (None: simulated from the start)."""
    if body.kinematic_from is None:
        return None
    t = real_number(body.kinematic_from, f"body {body.name!r}: kinematic from (s)")
    if body.motion is None or len(body.motion) < 2:
        raise InvalidInputError(f"body {body.name!r} switches back to its animation but has "
                                "no animation to return to; key its pose over at least two "
                                "frames, or leave Kinematic off")
    t = round(t * fps) / fps
    if t <= (switch or 0.0):
        raise InvalidInputError(f"body {body.name!r} switches back to its animation at "
                                f"{t:.4g} s, before it is simulated (from "
                                f"{switch or 0.0:.4g} s); key Kinematic off before keying it "
                                "on again")
    return t


def _add_springs(model, bodies, springs, slices, fps, substeps, integrator, warnings, diagonal):
    """Add the simulated bodies' springs and dampers ``springs [(body index, spec)]``
    (:func:`_spring_spec`) to the model: relative ones through
    :func:`spring_from_frequency` on ``diagonal`` (:func:`_rest_diagonal`); a warning per
    body an explicit method cannot follow (:func:`_stiff_spring_warning`)."""
    for i, (absolute, a, b, rest) in springs:
        inertia = diagonal[slices[i]]
        k, c = (np.full(len(inertia), a), np.full(len(inertia), b)) if absolute else \
            spring_from_frequency(inertia, a, b)
        warning = _stiff_spring_warning(bodies[i].name, inertia, k, c, fps, substeps, integrator)
        if warning:
            warnings.append(warning)
        if np.any(k) or np.any(c):
            model.add_joint_spring(i, k, c, rest=rest)


def build_rig(bodies, gravity=(0.0, 0.0, -9.81), fps=24.0, substeps=8, duration=1.0,
              integrator=None, restitution=0.0, name="rig", colliders=(), friction=0.5,
              self_collision=False, pins=(), muscles=(), muscle_control="activation",
              groups=None):
    """A :class:`Rig` from ``bodies`` (a sequence of :class:`RigBody`, parents first).

    gravity: ``(3,)`` m/s^2 in the world. fps, substeps, duration: output frames per
    second, integration steps per frame, seconds (the bake's frame range). integrator: one
    of :data:`core.integrators.METHODS`; None: "implicit" ("euler" with contacts:
    "implicit", module docstring). restitution: of the limits, and of contacts where neither
    side has its own; colliders: the world's :class:`core.contacts.Plane` and collider
    objects; friction: of contacts where neither side has its own; self_collision: the
    simulated bodies' shapes also meet each other (pairs that are not parent and child),
    which makes contacts without colliders; pins: :class:`RigPin` objects; muscles:
    :class:`RigMuscle` entries whose ``control`` is each one's activation, or its excitation
    with ``muscle_control = "excitation"`` (module docstring, *Muscles*); groups: None, or
    a group per body (the rig it belongs to, :func:`build_rigs`): the shapes of simulated
    bodies of different groups collide, and a kinematic body's shapes meet the other groups'
    bodies (module docstring, *Several rigs*). Raises
    InvalidInputError naming the body for an empty rig, a parent that is not an earlier body,
    a simulated body without mass, a joint kind or limit that does not fit, a shape that is
    not a :class:`core.contacts.Shape`, a motion or pose that is not rigid, a Strength that
    is not a number at or above 0, and a pin on a kinematic or unknown body; naming the
    muscle for a path point on a body the rig does not have, a path of fewer than two
    points, parameters that are not HillParameters and a control outside ``[0, 1]``.
    """
    bodies = tuple(bodies)
    if not bodies:
        raise InvalidInputError("the rig has no bodies; give at least one simulated body")
    if not any(b.joint.kind != "kinematic" for b in bodies):
        raise InvalidInputError("every body of the rig is kinematic, so there is nothing to "
                                "simulate; give at least one body a joint")
    shapes, shape_groups = [], set()
    groups = _groups(groups, len(bodies))
    for i, b in enumerate(bodies):
        if not all(isinstance(sh, Shape) for sh in b.shapes):
            raise InvalidInputError(f"body {b.name!r}: shapes must be core.contacts Shape "
                                    "objects (Sphere, Capsule, Box, ConvexHull)")
        if b.joint.kind != "kinematic":
            shapes.extend((b.name, sh) for sh in b.shapes)
            if b.shapes and groups is not None:
                shape_groups.add(groups[i])
    animated = () if groups is None else _kinematic_colliders(bodies, groups)
    colliders = tuple(colliders) + animated
    contacts = bool(shapes and (colliders or self_collision or len(shape_groups) > 1))
    asked = integrator
    integrator = asked or "implicit"
    model = Model(gravity=gravity, name=name)
    slices, limits, warnings, q0, v0, display = [], [], [], [], [], []
    if contacts and integrator not in IMPULSE_POSITION:
        integrator = "implicit"
        warnings.append(f"contacts need a method whose positions follow the substep's "
                        f"velocity changes, so the rig is stepped with implicit instead of {asked}")
    inertias, floor, raised = _floored_inertias(bodies)
    if raised:
        warnings.append(f"{len(raised)} light bone(s) turn with at least {floor:.3g} kg m^2 of "
                        f"inertia ({INERTIA_FLOOR:g} of the heaviest bone's), so the step "
                        f"can follow them: {_listed(raised)}")
    springs, tracked, world, prescribed, returns = [], [], [], [], []
    names = set()
    start = 0
    for i, b in enumerate(bodies):
        if b.name in names:
            raise InvalidInputError(f"two bodies are called {b.name!r}; give them unique names")
        names.add(b.name)
        if not -1 <= int(b.parent) < i:
            raise InvalidInputError(f"body {b.name!r}: parent {b.parent} is not an earlier body "
                                    f"(-1 for the world, 0..{i - 1}); list parents first and "
                                    "check that the parent chain has no loop")
        kinematic = b.joint.kind == "kinematic"
        if not kinematic:
            mass = real_number(b.mass, f"body {b.name!r}: mass", 0.0)
            if mass <= 0.0:
                raise InvalidInputError(f"body {b.name!r} has no mass, so it cannot be "
                                        "simulated; give it a mesh, a capsule or a typed mass "
                                        "above 0, or make it kinematic")
        T_rest = _check_pose(b.T_rest, f"body {b.name!r}: rest pose")
        pose = T_rest if b.pose is None else _check_pose(b.pose, f"body {b.name!r}: pose")
        if kinematic:
            joint, placement, spline = _kinematic(b, pose)
        else:
            joint, placement, spline = b.joint.core_joint(b.name), T_rest, None
            if b.joint.kind == "joint":
                placement = np.eye(4)
        model.add_body(b.name, int(b.parent), joint, placement, mass=max(float(b.mass), 1e-9)
                       if kinematic else float(b.mass), com=b.com,
                       inertia=b.inertia if kinematic else inertias[b.name])
        s = slice(start, start + joint.nq)
        start += joint.nq
        slices.append(s)
        display.append(BodyDisplay(b.name, "bone", (0.01, 0.1, 0.0), visible=False))
        q0.append(np.zeros(joint.nq))
        v0.append(np.zeros(joint.nq))
        limits.append([])
        if spline is not None:
            prescribed.append((math.inf, list(range(s.start, s.stop)), spline))
        if kinematic or joint.nq == 0:
            continue
        if b.q is not None:
            q = joint.check_q(np.asarray(b.q, dtype=float))
        else:
            q, (dp, dr) = coordinates_from_pose(joint, b.joint.kind, T_rest, pose)
            if dp > START_TOLERANCE or dr > START_TOLERANCE:
                warnings.append(f"{b.name} starts {1000 * dp:.3g} mm and "
                                f"{math.degrees(dr):.3g} deg away from its current pose: its "
                                f"{b.joint.kind} joint cannot reach that pose, so it starts at "
                                "the closest pose the joint can take")
        v = np.zeros(joint.nq)
        if b.pose_before is not None and b.pose_after is not None:
            qb, _ = coordinates_from_pose(joint, b.joint.kind, T_rest,
                                          _check_pose(b.pose_before, f"body {b.name!r}: pose before"),
                                          q_guess=q)
            qa, _ = coordinates_from_pose(joint, b.joint.kind, T_rest,
                                          _check_pose(b.pose_after, f"body {b.name!r}: pose after"),
                                          q_guess=q)
            if b.joint.kind in ("ball", "free"):
                qb[:3] = _nearest_chart(qb[:3], q[:3])
                qa[:3] = _nearest_chart(qa[:3], q[:3])
            v = (qa - qb) * (0.5 * fps)
        q0[-1], v0[-1] = q, v
        if b.follow not in FOLLOW_MODES:
            raise InvalidInputError(f"body {b.name!r}: follow must be one of {FOLLOW_MODES}, "
                                    f"got {b.follow!r}")
        target = _target(b, joint, T_rest, q)
        if target is not None and b.follow == "global":
            world.append((i, target[0], target[1], _world_motion(bodies, i, target[0])))
        elif target is not None:
            tracked.append((i,) + target)
        switch = _switch(b, fps)
        back = _return(b, switch, fps)
        if switch is not None or back is not None:
            times, motion = _motion(b)
            animation = CubicSpline(times, _motion_coordinates(b, joint, T_rest, motion, q),
                                    axis=0)
            dofs = list(range(s.start, s.stop))
            if switch is not None:
                prescribed.append((switch, dofs, animation))
            if back is not None:
                returns.append((back, dofs, animation, b.joint.kind in ("ball", "free")))
        limits[-1] = _limits(b, i, joint)
        if limits[-1]:
            warnings.extend(_start_outside(b, joint, q))
        springs.append((i, _spring_spec(b)))
    if (tracked or world) and integrator != "implicit":
        warnings.append(f"bones following the animation need the implicit integrator (stable "
                        f"at any Strength), so the rig is stepped with it instead of "
                        f"{integrator}")
        integrator = "implicit"
    diagonal = _rest_diagonal(model) if springs or tracked else None
    _add_springs(model, bodies, springs, slices, fps, substeps, integrator, warnings, diagonal)
    tracking = motion = None
    if tracked:
        kw, cw = spring_from_frequency(diagonal, TRACK_FREQUENCY, TRACK_DAMPING_RATIO)
        motion = _Tracks(model.nv, [(slices[i], times, strength, q, kw[slices[i]],
                                     cw[slices[i]]) for i, times, strength, q in tracked])
    if tracked or world:
        tracking = Tracking(motion, "bones following their animation", vectorized=True,
                            world=_WorldTracks(len(bodies), world) if world else None)
    drive = _drive(prescribed, 0.0)
    forces = _muscle_forces(model, muscles, muscle_control, duration, fps, substeps)
    flat = [lim for lims in limits for lim in lims]
    passive = not prescribed and tracking is None and forces is None and not flat and \
        not contacts and not np.any(model.compile().spring_c)  # compiled: the springs added
    q0 = np.concatenate(q0) if q0 else np.zeros(0)
    v0 = np.concatenate(v0) if v0 else np.zeros(0)
    if drive is not None:
        qp, vp, _ = drive.motion(0.0)
        q0[list(drive.dofs)], v0[list(drive.dofs)] = qp, vp
    step_limit = np.concatenate([_turns(b, j) for b, j in zip(bodies, model.joints)]) \
        if model.nv else None
    mech = Mechanism(name, name, model, q0, v0, fps=real_number(fps, "fps", 0.0, low_open=True),
                     substeps=whole_number(substeps, "substeps"), duration=duration,
                     integrator=integrator, drive=drive, tracking=tracking,
                     display=tuple(display),
                     limits=tuple(flat), restitution=restitution, passive=passive,
                     shapes=tuple(shapes) if contacts else (),
                     colliders=colliders if contacts else (), friction=friction,
                     self_collision=bool(self_collision) and contacts,
                     groups=groups if contacts else None, step_limit=step_limit, tau=forces)
    rig = Rig(mech, bodies, slices, limits, warnings, prescribed,
              _pins(pins, bodies, model, fps), tuple(model.point_springs), forces,
              returns=returns)
    if rig.pins or any(until < math.inf for until, _, _ in prescribed):
        rig.mechanism = _segment(rig, 0.0, q0, v0)
    return rig


def _groups(groups, count):
    """``(count,)`` ints: a group per body, checked; None for None."""
    if groups is None:
        return None
    try:
        out = tuple(int(g) for g in groups)
    except (TypeError, ValueError):
        raise InvalidInputError("groups must be one whole number per body") from None
    if len(out) != count:
        raise InvalidInputError(f"give one group per body ({count}), got {len(out)}")
    return out


def _kinematic_colliders(bodies, groups):
    """The colliders of the kinematic bodies' shapes (module docstring, *Several rigs*): each
    shape at its body's world poses, sampled at every kinematic motion's times, a
    :class:`core.contacts.StaticCollider` when still, else a :class:`core.contacts.
    MovingCollider` (:class:`PoseMotion` of those poses), given its body's group (it leaves
    its own rig alone). Only a body whose parents up to the world are all kinematic has its
    poses before the run; the shapes of a kinematic body under a simulated one are left out."""
    kinematic = [b.joint.kind == "kinematic" for b in bodies]
    grid = np.array(sorted({float(t) for b, k in zip(bodies, kinematic)
                            if k and b.motion is not None for t in _motion(b)[0]}) or [0.0])
    world, out = {}, []
    for i, b in enumerate(bodies):
        if not kinematic[i] or (b.parent >= 0 and b.parent not in world):
            continue
        T_rest = _check_pose(b.T_rest, f"body {b.name!r}: rest pose")
        joint, placement, spline = _kinematic(
            b, T_rest if b.pose is None else _check_pose(b.pose, f"body {b.name!r}: pose"))
        if spline is None:
            local = np.broadcast_to(placement, (len(grid), 4, 4))
        else:
            q = spline(np.clip(grid, spline.x[0], spline.x[-1]))
            local = placement @ np.array([joint.transform(qk) for qk in q])
        W = world[i] = local if b.parent < 0 else world[b.parent] @ local
        if not b.shapes:
            continue
        still = len(grid) < 2 or np.abs(W - W[0]).max() <= _STILL
        motion = None if still else PoseMotion(grid, W)
        out.extend(StaticCollider(sh, W[0], group=groups[i]) if still else
                   MovingCollider(sh, motion, group=groups[i]) for sh in b.shapes)
    return tuple(out)


@dataclass(frozen=True)
class RigPart:
    """One rig of several simulated as one (:func:`build_rigs`): ``name`` (unique among
    them), its ``bodies`` (:class:`RigBody`, parents first, parents indexed within the part),
    ``pins`` (:class:`RigPin` on its bodies' names) and ``muscles`` (:class:`RigMuscle` on
    its bodies' names)."""

    name: str
    bodies: tuple
    pins: tuple = ()
    muscles: tuple = ()


def build_rigs(parts, **options):
    """One :class:`Rig` of several rigs (module docstring, *Several rigs*): the bodies of
    ``parts`` (:class:`RigPart`) in one model, each named ``"part/body"`` and in the part's
    group, their pins and muscles with them (a muscle named ``"part/muscle"``); ``options`` are :func:`build_rig`'s (the colliders, gravity
    and steps all parts share). :func:`part_results` splits its result. Raises
    InvalidInputError for no parts, two parts of one name, or a parent outside its part."""
    parts = tuple(parts)
    if not parts:
        raise InvalidInputError("no rigs to simulate; give at least one")
    names = [p.name for p in parts]
    if len(set(names)) != len(names):
        raise InvalidInputError(f"two rigs share a name ({names}); give them unique names")
    bodies, pins, muscles, groups, spans = [], [], [], [], []
    for g, part in enumerate(parts):
        first = len(bodies)
        for k, b in enumerate(part.bodies):
            if not -1 <= int(b.parent) < k:
                raise InvalidInputError(f"rig {part.name!r}, body {b.name!r}: parent "
                                        f"{b.parent} is not an earlier body of the rig")
            bodies.append(replace(b, name=f"{part.name}/{b.name}",
                                  parent=-1 if b.parent < 0 else first + int(b.parent)))
            groups.append(g)
        pins += [replace(pin, body=f"{part.name}/{pin.body}") for pin in part.pins]
        muscles += [replace(m, name=f"{part.name}/{m.name}",
                            parameters=replace(m.parameters, name=f"{part.name}/{m.name}"),
                            points=tuple((f"{part.name}/{body}" if body else body, point)
                                         for body, point in m.points))
                    for m in part.muscles]
        spans.append((part.name, first, len(bodies)))
    rig = build_rig(bodies, pins=pins, muscles=muscles, groups=groups, **options)
    rig.parts = tuple(spans)
    return rig


def part_results(rig, result):
    """The :class:`RigResult` of each part of a rig of :func:`build_rigs` from the result of
    its run: each part's bodies (poses, coordinates and rates, its worst limit excess) and
    muscles (names without the part's prefix, tensions and activations); the run's timing, contacts, energies
    and warnings as they are (one run for all)."""
    model = rig.mechanism.model
    out = []
    for name, first, end in rig.parts:
        cols = np.r_[tuple(np.arange(rig.slices[i].start, rig.slices[i].stop)
                           for i in range(first, end))].astype(int)
        worst, where = _worst_excess(rig, model, result.q, range(first, end))
        mine = [k for k, m in enumerate(result.muscles or ()) if m.startswith(name + "/")]
        muscles = dict(muscles=tuple(result.muscles[k][len(name) + 1:] for k in mine),
                       tension=result.tension[:, mine],
                       activation=result.activation[:, mine]) if mine else \
            dict(muscles=(), tension=None, activation=None)
        out.append(replace(result, local=result.local[:, first:end],
                           world=result.world[:, first:end], q=result.q[:, cols],
                           v=None if result.v is None else result.v[:, cols],
                           worst_violation=worst,
                           violation_body=where[len(name) + 1:], **muscles))
    return out


def _worst_excess(rig, model, q, indices):
    """``(excess, body name)``: the largest excess over a limit of the bodies ``indices`` at
    any frame of ``q (F, nq)`` (:func:`limit_violation`; ``(0.0, "")`` within them)."""
    worst, where = 0.0, ""
    for i in indices:
        if not rig.limits[i] or len(q) == 0:
            continue
        b = rig.bodies[i]
        excess = float(limit_violation(b.joint, model.joints[i], q[:, rig.slices[i]]).max())
        if excess > worst:
            worst, where = excess, b.name
    return worst, where


def _pins(pins, bodies, model, fps):
    """The rig's pins ``[(point spring or PointPin, on [(from, until)])]`` (:class:`Rig`),
    checked, their switch times snapped to frames."""
    index = {b.name: i for i, b in enumerate(bodies)}
    out = []
    for pin in pins:
        if not isinstance(pin, RigPin) or pin.body not in index:
            raise InvalidInputError(f"pin on {getattr(pin, 'body', pin)!r}: pins must be RigPin "
                                    "objects on a body of the rig; pick one of its bones")
        i = index[pin.body]
        if bodies[i].joint.kind == "kinematic":
            raise InvalidInputError(f"pin on {pin.body!r}: that bone is kinematic, and nothing "
                                    "moves a bone that follows its animation; untick "
                                    "Kinematic or pin a simulated bone")
        j = -1
        if pin.target_body is not None:
            if pin.target_body not in index or pin.target_body == pin.body:
                raise InvalidInputError(f"pin on {pin.body!r}: its target {pin.target_body!r} "
                                        "is not another body of the rig; pick the Pin Target "
                                        "object again, or clear it to pin to a world point")
            j = index[pin.target_body]
        s = real_number(pin.strength, f"pin on {pin.body!r}: strength", 0.0, low_open=True)
        try:
            point = np.asarray(pin.point, dtype=float).reshape(3)
            target = np.asarray(pin.target, dtype=float).reshape(3)
        except (TypeError, ValueError):
            raise InvalidInputError(f"pin on {pin.body!r}: point and target must be 3 numbers "
                                    "each") from None
        if not np.all(np.isfinite(np.r_[point, target])):
            raise InvalidInputError(f"pin on {pin.body!r}: point and target must be finite")
        w = 2.0 * math.pi * PIN_FREQUENCY
        m = float(model.masses[i])
        spans = [(-math.inf, math.inf)]
        if pin.times is not None:
            times = np.round(np.asarray(pin.times, dtype=float).ravel() * fps) / fps
            active = np.asarray(pin.active, dtype=bool).ravel()
            if active.size != times.size or (times.size > 1 and np.any(np.diff(times) <= 0)):
                raise InvalidInputError(f"pin on {pin.body!r}: give one on/off state per "
                                        "time, at increasing frames")
            ends = list(times[1:]) + [math.inf]
            spans = [(a if k else -math.inf, b) for k, (a, b, on) in
                     enumerate(zip(times, ends, active)) if on]
        held = PointPin(i, point, j, target) if pin.hard else \
            (i, point, j, target, s * m * w * w, 2.0 * s * m * w, 0.0)
        out.append((held, spans))
    return out


def _drive(prescribed, t0, back=()):
    """The :class:`core.integrators.Drive` of the coordinates still prescribed at ``t0``
    (``until > t0``) and of those returned to their animation ``back`` ``[(coordinates,
    motion)]`` in a run that starts ``t0`` s into the shot, or None."""
    live = [(dofs, spline) for until, dofs, spline in prescribed if until > t0] + list(back)
    if not live:
        return None
    return Drive(tuple(d for dofs, _ in live for d in dofs),
                 _KinematicMotion([spline for _, spline in live], t0),
                 "kinematic bodies following their animation", vectorized=True)


def _segment(rig, t0, q, v, extra=()):
    """The mechanism of the rig's segment from ``t0`` (s into the shot) to the shot's end
    starting at ``(q, v)``: the coordinates prescribed then driven (their motion shifted to
    the segment's start), those switching at ``t0`` placed on their motion with the centred
    finite-difference rates of it one frame either side, those switching back at ``t0``
    blended onto their animation from ``(q, v)`` (*Switching back to the animation*), the
    limits of the bodies simulated in it, the tracking, the moving colliders and the muscles' activations shifted (module
    docstring, *Switching from animated to simulated*, *Muscles*), and the pins on at ``t0``
    (*Pins*) with the point springs ``extra`` (a drag)."""
    mech, limits, slices, prescribed = rig.mechanism, rig.limits, rig.slices, rig.prescribed
    q, v = np.array(q, dtype=float), np.array(v, dtype=float)
    driven = set()
    for until, dofs, spline in prescribed:
        if until > t0:
            driven.update(dofs)
        elif until == t0:
            def at(t):
                return spline(min(max(t, spline.x[0]), spline.x[-1]))
            step = 1.0 / mech.fps
            q[dofs] = at(t0)
            v[dofs] = (at(t0 + step) - at(t0 - step)) * (0.5 * mech.fps)
    for k, (start, dofs, animation, rotation) in enumerate(rig.returns):
        if start == t0:                       # the blend from the state the run is in
            a = animation(t0)
            d = q[dofs] - a
            if rotation:
                d[:3] = _nearest_chart(q[dofs][:3], a[:3]) - a[:3]
            rig.blends[k] = _Return(animation, t0, d, v[dofs] - animation(t0, 1))
    back = [(dofs, rig.blends[k]) for k, (start, dofs, _, _) in enumerate(rig.returns)
            if start <= t0]
    driven.update(d for dofs, _ in back for d in dofs)
    live = [lim for i, lims in enumerate(limits) for lim in lims
            if not driven.intersection(range(slices[i].start, slices[i].stop))]
    on = [held for held, spans in rig.pins if any(a <= t0 < b for a, b in spans)]
    live += [held for held in on if isinstance(held, PointPin)]
    tracking = mech.tracking
    if tracking is not None:
        tracking = replace(tracking, **{name: getattr(tracking, name).shifted(t0)
                                        for name in ("motion", "world")
                                        if getattr(tracking, name) is not None})
    model = mech.model
    if rig.pins or extra:
        model = copy.copy(model)
        model.point_springs = list(rig.springs) + [held for held in on
                                                   if not isinstance(held, PointPin)]
        model.point_springs += list(extra)
        model._compiled, model.packed = False, None
    forces = rig.muscles
    if forces is not None:
        forces = MuscleForces(forces.muscles, forces.geometry, replace(
            forces.activation, start=forces.activation.start - t0))
    return replace(mech, model=model, q0=q, v0=v, drive=_drive(prescribed, t0, back),
                   tracking=tracking, tau=forces, limits=tuple(live),
                   colliders=_colliders_later(mech.colliders, t0),
                   passive=mech.passive and not rig.pins and not extra,
                   duration=mech.duration - t0)


def _muscle_forces(model, muscles, control, duration, fps, substeps):
    """The :class:`core.muscles.actuation.MuscleForces` of the rig's :class:`RigMuscle`
    entries on its model (straight paths, :class:`core.muscles.actuation.PointPaths`), or
    None without muscles; InvalidInputError naming the muscle for what does not fit."""
    muscles = tuple(muscles)
    if not muscles:
        return None
    if control not in CONTROL_KINDS:
        raise InvalidInputError(f"muscle_control must be one of {CONTROL_KINDS}, got "
                                f"{control!r}")
    names, paths = set(), []
    for m in muscles:
        if not isinstance(m, RigMuscle) or not isinstance(m.parameters, HillParameters):
            raise InvalidInputError(f"muscle {getattr(m, 'name', m)!r}: give each muscle as a "
                                    "RigMuscle with HillParameters")
        if m.name in names:
            raise InvalidInputError(f"two muscles are called {m.name!r}; give them unique names")
        names.add(m.name)
        if len(m.points) < 2:
            raise InvalidInputError(f"muscle {m.name!r} has {len(m.points)} path point(s); "
                                    "give it at least two, on different bones")
        path = []
        for body, point in m.points:
            if body and body not in model.names:
                raise InvalidInputError(f"muscle {m.name!r}: path point on {body!r}, which is "
                                        "not a body of the rig; attach it to one of "
                                        f"{list(model.names)}")
            p = np.asarray(point, dtype=float)
            if p.shape != (3,) or not np.all(np.isfinite(p)):
                where = repr(body) if body else "the world"
                raise InvalidInputError(f"muscle {m.name!r}: a path point on {where} must be "
                                        "3 finite numbers")
            path.append((model.body_index(body) if body else -1, p))
        paths.append(path)
    arrays = MuscleArrays([m.parameters for m in muscles])
    table = activation_table(arrays, {m.name: m.control for m in muscles}, control, duration,
                             1.0 / (fps * substeps))
    return MuscleForces(arrays, PointPaths(model, paths), table)


def _swing(R, axis):
    """Swing angle (rad) of the unit ``axis`` under rotations ``R (F, 3, 3)`` and the carried
    axis ``R axis (F, 3)``."""
    pa = R @ axis
    return np.arccos(np.clip(pa @ axis, -1.0, 1.0)), pa


def limit_violation(spec, joint, q):
    """How far each of the poses ``q (F, nq)`` of one body is outside its limits: ``(F,)``,
    zero inside, in the limits' own units (rad for cones, twist and rotary ranges, m for
    linear ranges). Cones measure the swing of ``cone_axis`` past the boundary angle in its
    direction (elliptical: ``2 asin(1 / sqrt(cos^2 psi / A + sin^2 psi / B))`` with
    ``A, B = sin^2`` of the half half-angles, :func:`core.expcoords.elliptic_cone_value`)."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    out = np.zeros(len(q))
    for k in range(joint.nq):
        lo, hi = float(joint.lower[k]), float(joint.upper[k])
        out = np.maximum(out, np.maximum(lo - q[:, k], q[:, k] - hi))
    if spec.cone is None and spec.twist is None:
        return out
    R = so3.exp(q[:, :3])
    p = np.asarray(spec.cone_axis, float) / np.linalg.norm(spec.cone_axis)
    s, pa = _swing(R, p)
    if spec.cone == "circular":
        out = np.maximum(out, s - spec.half_angle)
    elif spec.cone == "elliptical":
        u = np.asarray(spec.ref_axis, float)
        u = u - (u @ p) * p
        u /= np.linalg.norm(u)
        w = np.cross(p, u)
        psi = np.arctan2(pa @ w, pa @ u)
        A, B = math.sin(0.5 * spec.half_angle_x) ** 2, math.sin(0.5 * spec.half_angle_z) ** 2
        bound = 1.0 / np.sqrt(np.cos(psi) ** 2 / A + np.sin(psi) ** 2 / B)
        out = np.maximum(out, s - 2.0 * np.arcsin(np.minimum(bound, 1.0)))
    if spec.twist is not None:
        ok = s < math.pi - 1e-6          # the twist is undefined at a half-turn swing
        tw = np.zeros(len(q))
        tw[ok] = expcoords.twist_angle(q[ok, :3], p)
        out = np.maximum(out, np.abs(tw) - spec.twist)
    return np.maximum(out, 0.0)


#: how many times :func:`simulate_rig` runs a diverged rig again, each time with
#: :data:`REFINE_FACTOR` times the substeps
REFINEMENTS = 2
REFINE_FACTOR = 4


def _check_gain(mech, res):
    """Raise SimulationError when a rig that nothing drives (no kinematic motion, no tracked
    animation, no muscles, no moving collider) gained more mechanical energy than its
    method's bound: ``DRIFT_RESOLUTION ** order`` (:mod:`core.mechanisms.base`) of the larger
    of its start's kinetic energy and the work of lifting it by 1 m. Springs, dampers, limits
    and contacts with still colliders only keep or take energy, so such a gain is a diverging
    run (a ragdoll shot into the air), which :func:`simulate_rig` runs again with more substeps."""
    if mech.drive is not None or mech.tracking is not None or mech.tau is not None or \
            any(isinstance(c, MovingCollider) for c in mech.colliders) \
            or res.status != "completed" or not len(res.energy):
        return
    model = mech.model
    lift = float(model.masses.sum()) * float(np.linalg.norm(model.gravity)) * 1.0
    bound = DRIFT_RESOLUTION ** mech.order * max(float(res.kinetic[0]), lift, 1.0)
    gained = res.energy - res.energy[0]
    k = int(np.argmax(gained))
    if gained[k] > bound:
        raise SimulationError(
            f"the rig gained {gained[k]:.4g} J by t = {res.times[k]:.3g} s with nothing "
            f"driving it, more than the {bound:.3g} J its method allows: the step did not "
            "follow its motion", float(res.times[k]), None,
            f"it gained {gained[k]:.3g} J of energy with nothing driving it")


def _divergence(err):
    """``" at t = ... s on 'body' (reason)"``: what a SimulationError says of where and why,
    without its advice on the step (the rig chooses its steps itself)."""
    where = f" at t = {err.time:.3g} s" if err.time is not None else ""
    body = f" on {err.body!r}" if err.body is not None else ""
    reason = f" ({err.reason})" if err.reason else ""
    return where + body + reason


def _diverged(err, substeps):
    """The SimulationError of a rig that diverged at every refinement (the last at
    ``substeps``), in the Simulate panel's terms."""
    return SimulationError(
        f"the simulation diverged{_divergence(err)} even at {substeps} substeps per frame: "
        f"check that bone's Joint, limits and spring (Frequency or Stiffness and Damping), "
        f"its Mass, and its start pose", err.time, err.body, err.reason)


def _held_back(mech, v):
    """Names of the bodies whose coordinate rates ``v (F, nv)`` reached the mechanism's rate
    limit at a recorded frame (:attr:`core.mechanisms.Mechanism.step_limit`)."""
    if mech.step_limit is None or not len(v):
        return []
    limit = np.asarray(mech.step_limit) / mech.dt
    at = np.any(np.abs(v) >= limit * (1.0 - 1e-12), axis=0)
    model = mech.model
    return list(dict.fromkeys(model.names[int(model.dof_body[k])] for k in np.nonzero(at)[0]))


def _run(mech, progress):
    """``(BakeResult, the mechanism run, notes)``: :func:`core.mechanisms.simulate_mechanism`
    of one segment, run again with :data:`REFINE_FACTOR` times the substeps when it diverges
    or gains energy with nothing driving it (:func:`simulate_rig`)."""
    notes = []
    for attempt in range(REFINEMENTS + 1):
        try:
            res = simulate_mechanism(mech, progress)
            _check_gain(mech, res)
            return res, mech, notes
        except SimulationError as err:
            finer = replace(mech, substeps=mech.substeps * REFINE_FACTOR)
            if attempt == REFINEMENTS:
                raise _diverged(err, mech.substeps) from err
            notes.append(f"the run diverged{_divergence(err)} at {mech.substeps} substeps "
                         f"per frame, so it was run again at {finer.substeps}")
            mech = finer


#: ``w h`` of a drag's spring at its stiffest (module docstring, *Live runs and dragging*)
DRAG_STEP = 0.5


def _point_mass(model, q, body, point):
    """The least mass (kg) the point ``point (3,)`` (body frame) of ``body`` (index) moves
    with at ``q``: ``1 / lambda_max(J M^-1 J^T)``, J the point's ``(3, nv)`` world Jacobian
    (:func:`core.kinematics.point_jacobian`)."""
    data = model.create_data()
    forward_kinematics(model, data, q)
    J = point_jacobian(model, data, body, point)[1]
    M = np.array(crba(model, data, q))
    return 1.0 / float(np.linalg.eigvalsh(J @ np.linalg.solve(M, J.T)).max())


def _cuts(rig):
    """The times (s, on frames) inside the shot where a rig's segments start: its bodies'
    switches to simulated and back and its pins' switches on and off."""
    duration = rig.mechanism.duration
    return sorted({until for until, _, _ in rig.prescribed if 0.0 < until < duration} |
                  {t for t, *_ in rig.returns if t < duration} |
                  {t for _, spans in rig.pins for span in spans for t in span
                   if 0.0 < t < duration})


class LiveRun:
    """A mechanism simulated frame by frame on demand, with a drag (module docstring, *Live
    runs and dragging*). Attributes as :class:`core.mechanisms.MechanismRun`'s: ``n_frames``,
    ``ready``, ``poses`` ``(n_frames, nb, 4, 4)`` world poses and ``q`` ``(n_frames, nq)``,
    valid for the first ``ready`` frames. A drag restarts the run from the last computed
    frame with the mechanism going on from there (:meth:`_going_on`: its drive and tracking
    shifted to that time, the drag's spring added to its model's point springs); a
    mechanism without a model (a seed-001 skeleton) plays but takes no drag."""

    def __init__(self, mechanism, cuts=()):
        mech = mechanism
        self.mechanism, self.fps = mech, mech.fps
        self.n_frames = mech.n_frames
        self.poses = np.empty((self.n_frames, mech.nbodies, 4, 4))
        self.q = np.empty((self.n_frames, 0 if mech.model is None else mech.model.nq))
        self._cuts = list(cuts)
        self._drag = ()
        self._restart(0, mech)

    def _restart(self, frame, mech):
        """Go on from ``frame`` (computed) with the mechanism ``mech`` of the shot's rest."""
        self._run, self._first = MechanismRun(mech), frame
        self.ready = frame
        self._take()

    def _take(self):
        run, k = self._run, self._first
        n = run.ready - (self.ready - k)
        self.poses[self.ready:self.ready + n] = run.poses[self.ready - k:run.ready]
        self.q[self.ready:self.ready + n] = run.q[self.ready - k:run.ready]
        self.ready += n

    def _resume(self):
        """Restart the run from the last computed frame: the mechanism going on from there,
        with the drag."""
        k = self.ready - 1
        run = self._run
        mech = self._going_on(k / self.fps, run.q[k - self._first], run.v[k - self._first])
        self.ready = k
        self._restart(k, mech)

    def _going_on(self, t0, q, v):
        """The mechanism from ``t0`` s into the run at ``(q, v)`` with the drag's spring."""
        mech = self.mechanism
        model = copy.copy(mech.model)
        model.point_springs = list(mech.model.point_springs) + list(self._drag)
        model._compiled, model.packed = False, None
        drive, tracking = mech.drive, mech.tracking
        if drive is not None:
            drive = replace(drive, motion=_later(drive.motion, t0))
        if tracking is not None:
            tracking = replace(tracking, **{name: _later(getattr(tracking, name), t0)
                                            for name in ("motion", "world")
                                            if getattr(tracking, name) is not None})
        return replace(mech, model=model, q0=np.array(q, dtype=float),
                       v0=np.array(v, dtype=float), drive=drive, tracking=tracking,
                       colliders=_colliders_later(mech.colliders, t0),
                       passive=mech.passive and not self._drag, duration=mech.duration - t0)

    def advance_to(self, frame, seconds=None):
        """Compute frames until ``frame`` (index from 0, clipped to the last) is ready, then
        on while the wall time since the call stays under ``seconds`` (None: no look-ahead);
        returns ``ready``. Divergence raises :class:`core.errors.SimulationError`."""
        frame = min(whole_number(frame, "frame", 0), self.n_frames - 1)
        start = time.perf_counter()
        while self.ready < self.n_frames and (
                self.ready <= frame or (seconds is not None
                                        and time.perf_counter() - start < seconds)):
            if self.ready - 1 in self._cuts and self.ready - 1 > self._first:
                self._resume()
                continue
            self._run.advance_to(self.ready - self._first)
            self._take()
        return self.ready

    def _draggable(self, body):
        """The index of the body named ``body`` that a drag may pull; InvalidInputError for
        a body of no model (a skeleton) or an unknown one."""
        model = self.mechanism.model
        if model is None or body not in model.names:
            raise InvalidInputError(f"cannot drag {body!r}: pick a body of "
                                    f"'{self.mechanism.title or self.mechanism.name}' that its "
                                    "joints move (a skeleton's bodies take no drag)")
        return model.names.index(body)

    def set_drag(self, body, point_in_body, target_world, stiffness=None):
        """Pull ``point_in_body (3,)`` of the body named ``body`` toward ``target_world
        (3,)`` from the next frame on: a spring of ``stiffness`` N/m (None: the stiffest the
        step keeps stable, which also bounds a stiffness given; module docstring) critically
        damped on the least mass the point moves with. Raises InvalidInputError for a body
        that cannot be dragged or a bad point, target or stiffness."""
        i = self._draggable(body)
        try:
            point = np.asarray(point_in_body, dtype=float).reshape(3)
            target = np.asarray(target_world, dtype=float).reshape(3)
        except (TypeError, ValueError):
            raise InvalidInputError(f"drag on {body!r}: point and target must be 3 numbers "
                                    "each") from None
        if not np.all(np.isfinite(np.r_[point, target])):
            raise InvalidInputError(f"drag on {body!r}: point and target must be finite")
        mech = self._run.mechanism
        m = _point_mass(mech.model, self.q[self.ready - 1], i, point)
        k = m * (DRAG_STEP / mech.dt) ** 2
        if stiffness is not None:
            k = min(k, real_number(stiffness, f"drag on {body!r}: stiffness (N/m)", 0.0,
                                   low_open=True))
        self._drag = ((i, point, -1, target, k, 2.0 * math.sqrt(k * m), 0.0),)
        self._resume()

    def release(self):
        """Let go of the drag from the next frame on."""
        if self._drag:
            self._drag = ()
            self._resume()


def _later(motion, t0):
    """``motion`` (``t -> ...``, scalar or vectorized) read ``t0`` s later."""
    return lambda t: motion(t + t0)


def _colliders_later(colliders, t0):
    """``colliders`` in a run that starts ``t0`` s into the shot: each moving collider's
    motion read ``t0`` s later."""
    return tuple(MovingCollider(c.shape, _later(c.motion, t0), c.dt_velocity, c.group)
                 if isinstance(c, MovingCollider) else c for c in colliders)


class RigRun(LiveRun):
    """A rig simulated frame by frame on demand, with a drag (:class:`LiveRun`), in its
    segments between switch frames; its kinematic bodies take no drag."""

    def __init__(self, rig):
        self.rig = rig
        super().__init__(rig.mechanism,
                         [int(round(t * rig.mechanism.fps)) for t in _cuts(rig)])

    def _going_on(self, t0, q, v):
        """The rig's segment from ``t0`` at ``(q, v)`` with its pins and the drag."""
        return _segment(self.rig, t0, q, v, self._drag)

    def _draggable(self, body):
        names = [b.name for b in self.rig.bodies]
        if body not in names or self.rig.bodies[names.index(body)].joint.kind == "kinematic":
            raise InvalidInputError(f"cannot drag {body!r}: pick a simulated bone or object of "
                                    "the rig")
        return names.index(body)


def _segments(rig, progress):
    """The rig's run in segments between its switch frames (module docstring, *Switching
    from animated to simulated*): ``(segment results, their mechanisms, notes)``, each
    segment from the state the one before ended in; ``progress`` sees the shot's fraction."""
    mech = rig.mechanism
    duration = mech.duration
    bounds = [0.0] + _cuts(rig) + [duration]
    results, mechs, notes = [], [], []
    for t0, t1 in zip(bounds[:-1], bounds[1:]):
        if results:
            last = results[-1]
            mech = _segment(rig, t0, last.q[-1], last.v[-1])
        mech = replace(mech, duration=t1 - t0)

        def part(fraction, t0=t0, t1=t1):
            return progress((t0 + fraction * (t1 - t0)) / duration)
        res, run, more = _run(mech, None if progress is None else part)
        results.append(res)
        mechs.append(run)
        notes.extend(more)
        if res.status != "completed":
            break
    return results, mechs, notes


def simulate_rig(rig, progress=None):
    """Simulate a :class:`Rig` (``progress(fraction) -> bool``, False cancels) and return a
    :class:`RigResult`. A run that diverges, or that gains energy with nothing driving it
    (:func:`_check_gain`), is run again with :data:`REFINE_FACTOR` times the substeps, up to
    :data:`REFINEMENTS` times, and the result's warnings say so; a rig that
    diverges even then raises :class:`core.errors.SimulationError` naming the time, the
    body and the substeps tried (:func:`core.mechanisms.simulate_mechanism`). A rig whose
    bodies switch from animated to simulated runs in segments between the switch frames,
    the result's frames joined (module docstring)."""
    parts, mechs, notes = _segments(rig, progress)
    model = mechs[0].model
    held = list(dict.fromkeys(n for m, r in zip(mechs, parts) for n in _held_back(m, r.v)))
    if held:
        notes.append(f"{', '.join(held)} turned faster than {TURN_PER_SUBSTEP:g} rad per "
                     f"substep ({TURN_PER_SUBSTEP / mechs[-1].dt:.3g} rad/s), more than the "
                     "step follows, and were held to that speed: more Substeps let them turn "
                     "faster")
    if parts[-1].status != "completed":
        parts = parts[-1:]                       # cancelled: no records
    status = parts[-1].status
    offsets = np.cumsum([0.0] + [r.times[-1] if len(r.times) else 0.0 for r in parts[:-1]])
    works = np.cumsum([0.0] + [r.drive_work[-1] if len(r.times) else 0.0 for r in parts[:-1]])

    def joined(values):            # a switch frame's record: the state its segment starts in
        return np.concatenate([x[:-1] for x in values[:-1]] + [values[-1]])
    times = joined([r.times + t0 for r, t0 in zip(parts, offsets)])
    world, q = joined([r.poses for r in parts]), joined([r.q for r in parts])
    local = np.empty_like(world)
    parents = np.asarray(model.parents)
    roots = parents < 0
    local[:, roots] = world[:, roots]
    if np.any(~roots):
        local[:, ~roots] = se3.inv(world[:, parents[~roots]]) @ world[:, ~roots]
    worst, where = _worst_excess(rig, model, q, range(len(rig.bodies)))
    drift = None
    if mechs[0].passive and len(times):
        drift = parts[0].energy_drift
    reports = [r.contacts for r in parts]
    if reports[0] is None:
        touch, deepest, gained, contact_notes = None, 0.0, 0.0, ()
    else:
        touch = joined([rep.per_frame(r.times) for rep, r in zip(reports, parts)])
        deepest = max(rep.worst_penetration for rep in reports)
        gained = max(rep.energy_gained for rep in reports)
        contact_notes = tuple(dict.fromkeys(n for rep in reports for n in rep.notes))
    v = joined([r.v for r in parts])
    names, tension, activation = (), None, None
    if rig.muscles is not None:
        names = rig.muscles.muscles.names
        states = [rig.muscles.state(t, qk, vk) for t, qk, vk in zip(times, q, v)]
        tension = np.array([st.tendon_force for st in states]).reshape(len(times), len(names))
        activation = np.array([rig.muscles.activation(t) for t in times]).reshape(
            len(times), len(names))
    return RigResult(status, times, local, world, q, drift, worst, where,
                     sum(r.wall_time for r in parts), sum(r.steps for r in parts),
                     tuple(rig.warnings) + tuple(notes), touch, deepest, gained, contact_notes,
                     joined([r.energy for r in parts]), joined([r.kinetic for r in parts]),
                     joined([r.drive_work + w for r, w in zip(parts, works)]), v,
                     names, tension, activation)
