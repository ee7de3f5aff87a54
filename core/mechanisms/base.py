"""Scene descriptions shared by every mechanism, and the one way to simulate them.

A :class:`Mechanism` says everything the Blender side needs to build and bake a demo without
knowing any physics: the model (reduced coordinates, :class:`core.model.Model`) or a seed-001
:class:`core.maximal.skeleton.Skeleton`, the initial state, the time stepping (output frame
rate, substeps per frame, duration, integrator), an optional prescribed
:class:`core.integrators.Drive`, one :class:`BodyDisplay` per body (mesh hint, size, colour,
optional polyline) and optional ``scenery``: displays fixed to the world, such as a
kinematically deforming surface whose vertices are a function of time
(:meth:`BodyDisplay.surface_mesh`).

:func:`check_timing` validates a mechanism's timing before any work (every builder calls it
first, :class:`Mechanism` again with its real record size): ``fps`` and ``duration`` finite
and > 0 with at least one frame after the first, ``substeps`` an integer >= 1, recorded
arrays (:meth:`Mechanism.record_floats` per frame) within
:data:`core.integrators.MAX_RECORD_BYTES` and at most :data:`MAX_STEPS` integration steps;
each refusal gives the figure and what to change.

:func:`simulate_mechanism` builds the mechanism's stepper and runs it through
:func:`core.integrators.integrate` (``fps * duration`` frames of ``substeps`` steps each,
progress and cancel after every frame); it returns a :class:`BakeResult` with per-frame
``q, v``, body poses ``(F, nb, 4, 4)``, mechanical energy, the work done by the drive, the
constraint error and the wall time. A model steps with :class:`core.integrators.Integrator`
(its methods, chart changes, NaN checks, limits after every step, prescribed coordinates
and their work, see :mod:`core.integrators`); a skeleton with
:meth:`core.maximal.skeleton.Skeleton.step` and post-stabilization. Divergence of either is a
:class:`core.errors.SimulationError` naming the time, the body and a smaller step, also when
the energy blows up (:data:`BLOWUP`).

Energy drift. A passive mechanism conserves its mechanical energy, so its
:attr:`BakeResult.energy_drift` is the integrator's error. For a method of order ``p`` the
relative energy error of a run grows like ``(h omega)^p`` (``omega`` the fastest angular rate
of the motion); ``h omega = 0.2`` (about 30 steps per period of the fastest motion,
:data:`DRIFT_RESOLUTION`) is the coarsest step that still resolves a motion, so a passive
bake whose drift exceeds ``0.2^p`` (rk4: 1.6e-3; the skeleton's second-order "heun" update:
0.04; first-order methods: 0.2) has a step too large for its motion and gets a warning
(:func:`energy_drift_warning`). Over their full durations at their default steps the
passive demos stay 25 (sliding chain, rk4: 6.4e-5) to 4000 times (knee pendulum: 3.8e-7)
below their limits, the skeleton chain 16 times (2.4e-3).

The demo builders that return Mechanisms share one contract, stated in :mod:`core.mechanisms`.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from .. import dynamics
from ..display import segment_frames
from ..checks import real_number, whole_number
from ..errors import InvalidInputError, SimulationError
from ..integrators import (METHODS, ORDERS, Drive, Integrator, check_record_size,
                           diverged, integrate)
from ..contacts import ContactSolver
from ..limits import LimitSolver
from ..maximal.skeleton import UPDATE_ORDERS as SKELETON_ORDERS
from ..maximal.skeleton import UPDATES as SKELETON_UPDATES

__all__ = ["BodyDisplay", "Drive", "Mechanism", "BakeResult", "simulate_mechanism", "MechanismRun",
           "MESH_HINTS", "INTEGRATORS", "MAX_STEPS", "DRIFT_RESOLUTION", "check_timing",
           "energy_drift_limit", "energy_drift_warning"]

#: mesh hints the Blender side understands
MESH_HINTS = ("capsule", "sphere", "ellipsoid", "box", "plane", "bead", "wire", "bone",
              "airplane", "surface", "pin", "socket", "cone", "helix", "plate", "mesh")
#: integrators of a mechanism's model (those of :mod:`core.integrators`)
INTEGRATORS = METHODS
#: :func:`simulate_mechanism` stops when ``|E - E_0 - W_drive|`` exceeds this many times the
#: larger of ``|E_0|``, the largest kinetic energy so far and 1 J
BLOWUP = 100.0
#: the most integration steps a mechanism may take (hours of computing at 20-100 us a step)
MAX_STEPS = 10 ** 8
#: ``h omega`` of the coarsest step that resolves a motion (module docstring, energy drift)
DRIFT_RESOLUTION = 0.2


def check_timing(name, fps, substeps, duration, floats_per_frame=20):
    """Validate a mechanism's timing before any work (the builders call it first, the
    :class:`Mechanism` again with its :meth:`~Mechanism.record_floats`): ``fps`` and
    ``duration`` finite numbers > 0 giving at least one frame after the first, ``substeps``
    an integer >= 1, records of ``floats_per_frame`` numbers per frame (20: one body) within
    :data:`core.integrators.MAX_RECORD_BYTES` and at most :data:`MAX_STEPS` steps.
    Returns ``substeps`` as an int; raises InvalidInputError with the figure and what to do."""
    for what, x in (("fps", fps), ("duration", duration)):
        real_number(x, f"mechanism {name!r}: {what}", 0.0, low_open=True)
    substeps = whole_number(substeps, f"mechanism {name!r}: substeps")
    frames = float(duration) * float(fps)
    if frames < 0.5:
        raise InvalidInputError(f"mechanism {name!r}: {duration:g} s at {fps:g} fps gives no "
                                f"frame after the first; make the duration at least "
                                f"{1.0 / fps:.4g} s (one frame)")
    check_record_size(frames + 1, floats_per_frame, f"mechanism {name!r} ({duration:g} s at "
                                                    f"{fps:g} fps)")
    steps = round(frames) * substeps
    if steps > MAX_STEPS:
        raise InvalidInputError(f"mechanism {name!r}: {duration:g} s at {fps:g} fps with "
                                f"{substeps} substeps per frame is {steps:.3g} integration "
                                f"steps, more than {MAX_STEPS:.0e} (hours of computing); "
                                "shorten the duration, lower the frame rate or use fewer "
                                "substeps")
    return substeps


@dataclass(frozen=True)
class BodyDisplay:
    """How to draw one body (all lengths in metres, in the body frame).

    name: object name; mesh: one of :data:`MESH_HINTS`; size: ``(3,)`` extents as the hint
    needs (the meshes are :func:`core.display.body_mesh`'s):

    - capsule = (radius, length, 0), a rod with rounded ends along the local axis ``axis``;
      bone = (radius, length, 0), the same as a flat-ended cylinder;
    - pin = (radius, length, 0): a hinge pin, a short cylinder along ``axis`` (the hinge's);
    - sphere, bead, socket = (radius, 0, 0); socket marks a ball joint;
    - ellipsoid = semi-axes; box, plane = full extents (a plane is a thin box);
    - airplane = (length, span, height): a small aircraft, nose along +x, fin up +z;
    - cone = (half-angle (rad), length, 0): a circular cone, apex at the origin, opening
      along +``axis`` (a reach cone; give it a translucent colour);
    - plate = (x extent, y extent, thickness): the outline ``geometry`` (K, 2) (counter-
      clockwise) fitted to the extents and extruded along ``axis``;
    - mesh = (x, y, z) scale of the triangle mesh ``geometry = (vertices (V, 3), triangles
      (T, 3))`` (e.g. a bone surface read from a .vtp file);
    - helix = (coil radius, wire radius, turns): a coil spring stretched between the two
      points ``ends = ((body, point (3,)), (body, point (3,)))``, each in the frame of a body
      of the mechanism (index; -1: the world); only as :attr:`Mechanism.scenery`, where the
      Blender side poses and stretches it at every frame (:meth:`spring_frames`);
    - wire = (wire radius, 0, 0) with the wire in ``polylines``; surface: below.

    colour: RGBA ``(4,)`` in [0, 1] (alpha < 1: translucent); offset: ``(4, 4)`` mesh pose
    in the body frame; axis: local axis (0, 1 or 2) of capsules, pins, cones and plates;
    polylines: tuple of ``(K, 3)`` arrays drawn as curves attached to the body (wires,
    coastlines); visible: False for carrier bodies; parts: further displays drawn with the
    body, each in the body frame with its own mesh and colour (joint markers, reach cones,
    a hub's wires), as objects that follow the body's object.

    A kinematically deforming surface (mesh ``"surface"``, size unused) is a grid of
    vertices that moves with time: ``vertices(t) -> (nu, nv, 3)`` gives the grid at time t
    (seconds since the start of the simulation) in the frame ``offset`` of the body (or of
    the world for :attr:`Mechanism.scenery`); neighbouring grid points form quads
    (:meth:`surface_mesh`). The Blender side samples it at every output frame.
    """

    name: str
    mesh: str
    size: tuple = (0.05, 0.0, 0.0)
    colour: tuple = (0.8, 0.8, 0.8, 1.0)
    offset: np.ndarray = field(default_factory=lambda: np.eye(4))
    axis: int = 2
    polylines: tuple = ()
    visible: bool = True
    vertices: object = None
    parts: tuple = ()
    geometry: object = None
    ends: tuple = ()

    def __post_init__(self):
        if self.mesh not in MESH_HINTS:
            raise InvalidInputError(f"display {self.name!r}: mesh must be one of {MESH_HINTS}, "
                                    f"got {self.mesh!r}")
        if len(self.colour) != 4:
            raise InvalidInputError(f"display {self.name!r}: colour must be RGBA (4 numbers)")
        if (self.mesh == "surface") != callable(self.vertices):
            raise InvalidInputError(f"display {self.name!r}: a 'surface' display needs "
                                    "vertices = a function t -> (nu, nv, 3) grid, and only "
                                    "a 'surface' display takes one")
        if (self.mesh in ("plate", "mesh")) != (self.geometry is not None):
            raise InvalidInputError(f"display {self.name!r}: a 'plate' needs geometry = its "
                                    "outline (K, 2) and a 'mesh' geometry = (vertices, "
                                    "triangles); no other display takes geometry")
        if (self.mesh == "helix") != (len(self.ends) == 2):
            raise InvalidInputError(f"display {self.name!r}: a 'helix' needs ends = ((body, "
                                    "point), (body, point)), and only a 'helix' takes ends")
        if not all(isinstance(p, BodyDisplay) and p.mesh not in ("surface", "helix")
                   for p in self.parts):
            raise InvalidInputError(f"display {self.name!r}: parts must be BodyDisplay "
                                    "entries drawn with the body (not surfaces or helices)")

    def spring_frames(self, poses):
        """Pose and length of a 'helix' over a motion: ``poses (F, nb, 4, 4)`` world poses of
        the bodies -> ``(frames (F, 4, 4), lengths (F,))``, each frame at the first end with
        z towards the second (:func:`core.display.segment_frames`)."""
        if self.mesh != "helix":
            raise InvalidInputError(f"display {self.name!r} is a {self.mesh!r}, not a 'helix'; "
                                    "only helices have spring_frames")
        poses = np.asarray(poses, dtype=float)
        pts = []
        for body, point in self.ends:
            p = np.append(np.asarray(point, dtype=float), 1.0)
            pts.append(np.broadcast_to(p[:3], (len(poses), 3)) if body < 0
                       else np.einsum("fij,j->fi", poses[:, body], p)[:, :3])
        return segment_frames(*pts)

    def surface_mesh(self, t):
        """The deforming surface at time ``t`` (s): ``(vertices (nu nv, 3), quads
        ((nu-1)(nv-1), 4))`` with the vertices in the display's parent frame (``offset``
        applied) and the quads as vertex indices of neighbouring grid points."""
        if self.mesh != "surface":
            raise InvalidInputError(f"display {self.name!r} is a {self.mesh!r}, not a "
                                    "deforming 'surface'; only surfaces have surface_mesh")
        grid = np.asarray(self.vertices(float(t)), dtype=float)
        if grid.ndim != 3 or grid.shape[2] != 3 or min(grid.shape[:2]) < 2:
            raise InvalidInputError(f"display {self.name!r}: vertices(t) must return an "
                                    f"(nu, nv, 3) grid with nu, nv >= 2, got {grid.shape}")
        if not np.all(np.isfinite(grid)):
            raise InvalidInputError(f"display {self.name!r}: vertices({t}) is not finite")
        nu, nv = grid.shape[:2]
        T = np.asarray(self.offset, dtype=float)
        verts = grid.reshape(-1, 3) @ T[:3, :3].T + T[:3, 3]
        i, j = np.meshgrid(np.arange(nu - 1), np.arange(nv - 1), indexing="ij")
        a = (i * nv + j).reshape(-1)
        quads = np.stack([a, a + nv, a + nv + 1, a + 1], axis=1)
        return verts, quads


@dataclass
class Mechanism:
    """A demo scene without Blender (see the module docstring).

    Attributes:
        name: identifier; title: human-readable name.
        model: :class:`core.model.Model` (reduced coordinates) or None for a skeleton.
        q0, v0: initial state ``(nq,)``, ``(nv,)`` (for a skeleton: None).
        fps: output frames per second; substeps: integration steps per output frame, so the
            step size is ``dt = 1 / (fps * substeps)``; duration: seconds simulated.
        integrator: one of :data:`INTEGRATORS` (reduced coordinates; a skeleton uses seed
            001's own update, ``skeleton_update``).
        drive: :class:`Drive` or None.
        tracking: :class:`core.integrators.Tracking` or None: coordinates pulled toward a
            moving target by springs the "implicit" integrator takes implicitly.
        display: one :class:`BodyDisplay` per body, in body order.
        constraint_error: None or ``(mechanism, times (F,), q (F, nq), poses (F, nb, 4, 4))
            -> (F,)`` metres: distance of the constrained bodies from the geometry they must
            stay on, measured independently of the joint coordinates (e.g. a bead's distance
            to its wire). None uses the kinematic consistency of the poses with the tree.
        skeleton, skeleton_state, skeleton_gravity: the seed-001 variant (model is None).
        skeleton_update: the update of :meth:`core.maximal.skeleton.Skeleton.step`
            ("heun", second order, by default: the first-order "momentum" and "paper"
            updates gain energy in proportion to the step, see skeleton.py); every step is
            post-stabilized.
        scenery: :class:`BodyDisplay` entries fixed to the world (offset = world pose), e.g.
            a deforming surface; not bodies of the model.
        limits: :mod:`core.limits` objects (reach cones, coordinate limits) enforced by
            impulses after every step with ``restitution`` (:class:`core.limits.LimitSolver`).
        shapes: ``(body, Shape)`` pairs (:mod:`core.contacts.shapes`, in the body's frame)
            and colliders: the world's :class:`core.contacts.Plane` and collider objects; with
            both, a :class:`core.contacts.ContactSolver` (``friction`` and ``restitution`` its
            defaults where a side has none) solves the contacts with the limits' impulses in
            every step (:meth:`contact_solver`). self_collision: the shapes of bodies that
            are not parent and child also meet each other (then shapes alone make contacts),
            except the pairs that overlap at q0 (the solver's ``start``; its report's notes
            name them). groups: None, or ``(nb,)`` a group per body (the rig of each body when
            several rigs are one model): shapes of different groups meet without
            self_collision (:class:`core.contacts.ContactSolver`).
        passive: True if nothing drives, damps or stops the motion (energy is conserved).
        info: free-form facts for the demo table (e.g. reference data used).
        step_limit: None or ``(nv,)`` the most each coordinate may move per substep at its
            rate (inf: no limit): the integrator's ``rate_limit`` is ``step_limit / dt``
            (:class:`core.integrators.Integrator`, *Rate limit*).
        tau: None or the applied generalized forces, a callable ``tau(t, q, v) -> (nv,)``
            (the integrator's ``tau``; e.g. a rig's muscles,
            :class:`core.muscles.actuation.MuscleForces`).
    """

    name: str
    title: str
    model: object
    q0: np.ndarray
    v0: np.ndarray
    fps: float = 60.0
    substeps: int = 10
    duration: float = 2.0
    integrator: str = "rk4"
    drive: Drive = None
    tracking: object = None
    display: tuple = ()
    constraint_error: object = None
    skeleton: object = None
    skeleton_state: object = None
    skeleton_gravity: tuple = (0.0, 0.0, -9.81)
    skeleton_update: str = "heun"
    scenery: tuple = ()
    limits: tuple = ()
    restitution: float = 0.0
    passive: bool = True
    info: dict = field(default_factory=dict)
    shapes: tuple = ()
    colliders: tuple = ()
    friction: float = 0.5
    self_collision: bool = False
    groups: tuple = None
    step_limit: np.ndarray = None
    tau: object = None

    def __post_init__(self):
        if self.integrator not in INTEGRATORS:
            raise InvalidInputError(f"mechanism {self.name!r}: integrator must be one of "
                                    f"{INTEGRATORS}, got {self.integrator!r}")
        if self.model is not None:
            self.model.compile()
            self.q0 = self.model.check_state(self.q0, name="q0")
            self.v0 = self.model.check_state(self.v0, name="v0")
            nb = self.model.nbodies
        else:
            if self.skeleton is None or self.skeleton_state is None:
                raise InvalidInputError(f"mechanism {self.name!r}: give a model or a skeleton "
                                        "with its initial state")
            nb = self.skeleton.N
        if len(self.display) != nb:
            raise InvalidInputError(f"mechanism {self.name!r}: {len(self.display)} display "
                                    f"entries for {nb} bodies; give one per body")
        if self.skeleton_update not in SKELETON_UPDATES:
            raise InvalidInputError(f"mechanism {self.name!r}: skeleton_update must be one "
                                    f"of {SKELETON_UPDATES}, got {self.skeleton_update!r}")
        if not all(isinstance(d, BodyDisplay) for d in self.scenery):
            raise InvalidInputError(f"mechanism {self.name!r}: scenery must be a tuple of "
                                    "BodyDisplay entries")
        self.substeps = check_timing(self.name, self.fps, self.substeps, self.duration,
                                     self.record_floats())
        if (self.shapes or self.colliders) and self.model is None:
            raise InvalidInputError(f"mechanism {self.name!r}: contacts need a model (reduced "
                                    "coordinates); a skeleton takes no shapes or colliders")
        self.contact_solver(None)      # checks the shapes, colliders and materials now

    def contact_solver(self, limits):
        """The :class:`core.contacts.ContactSolver` of the mechanism's shapes and colliders
        sharing the :class:`core.limits.LimitSolver` ``limits`` (or None), or None when
        nothing can touch: no shapes, or no colliders without self-collision or groups. Its
        start pose is q0 (the pairs that may collide overlapping there are left out)."""
        if not (self.shapes and (self.colliders or self.self_collision or
                                 self.groups is not None)):
            return None
        return ContactSolver(self.model, list(self.shapes), list(self.colliders), limits=limits,
                             self_collision=self.self_collision, groups=self.groups,
                             start=self.q0,
                             friction=self.friction, restitution=self.restitution)

    def record_floats(self):
        """Numbers recorded per output frame: ``q, v``, the body poses (16 each), energy,
        kinetic energy, drive work and constraint error, and the vertices of deforming
        scenery surfaces (sampled per frame by the add-on)."""
        n = 16 * self.nbodies + 4
        if self.model is not None:
            n += self.model.nq + self.model.nv
        for d in self.scenery:
            if d.mesh == "surface":
                n += np.size(d.vertices(0.0))
        return n

    @property
    def dt(self):
        """Integration step size in seconds."""
        return 1.0 / (self.fps * self.substeps)

    @property
    def n_frames(self):
        """Output frames including the initial one."""
        return int(round(self.duration * self.fps)) + 1

    @property
    def nbodies(self):
        return self.model.nbodies if self.model is not None else self.skeleton.N

    @property
    def order(self):
        """Order of accuracy of the mechanism's time stepping (its integrator's, or the
        skeleton update's)."""
        if self.model is None:
            return SKELETON_ORDERS[self.skeleton_update]
        return ORDERS[self.integrator]

    @property
    def ndof(self):
        """Degrees of freedom (free coordinates; a skeleton's 6N minus its constraint rank)."""
        if self.model is None:
            return 6 * self.skeleton.N - self.skeleton.rank
        return self.model.nv - (len(self.drive.dofs) if self.drive is not None else 0)


@dataclass
class BakeResult:
    """Per-frame output of :func:`simulate_mechanism` (F frames, nb bodies).

    status: "completed" or "cancelled" (then every array has zero frames).
    times (F,), q (F, nq), v (F, nv) (skeletons: zero columns), poses (F, nb, 4, 4) world
    poses of the body frames, energy (F,) kinetic + potential (J), kinetic (F,) kinetic
    energy (J), drive_work (F,) work done by the drive since t = 0 (J), constraint_error (F,)
    (m), wall_time (s), steps (int), dt (s).
    """

    name: str
    status: str
    times: np.ndarray
    q: np.ndarray
    v: np.ndarray
    poses: np.ndarray
    energy: np.ndarray
    kinetic: np.ndarray
    drive_work: np.ndarray
    constraint_error: np.ndarray
    wall_time: float
    steps: int
    dt: float
    contacts: object = None

    @property
    def energy_scale(self):
        """The energy that moves: ``max(max kinetic, max |drive work|)`` (J)."""
        if self.energy.size == 0:
            return 0.0
        return float(max(self.kinetic.max(), np.abs(self.drive_work).max()))

    @property
    def energy_drift(self):
        """``max |E - E_0 - W_drive| / energy_scale``: the energy error relative to the
        energy in motion (0 if there are no frames or nothing moves). For damped mechanisms
        this measures the dissipation, not an error."""
        if self.energy.size == 0:
            return 0.0
        dev = float(np.abs(self.energy - self.energy[0] - self.drive_work).max())
        return dev / self.energy_scale if self.energy_scale > 0 else dev


class _BlowUpCheck:
    """The energy blow-up check of a mechanism's stepper: stops when ``|E - E_0 - W_drive|``
    exceeds :data:`BLOWUP` times the larger of ``|E_0|``, the largest kinetic energy of the
    earlier records and 1 J (the record's own kinetic energy would raise the bar with the
    blow-up it measures)."""

    def reset_energy(self):
        self.first_energy, self.kinetic_max = None, 0.0

    def check_energy(self, t, E, K, work, fastest):
        """Raise SimulationError naming ``t``, the body ``fastest()`` (a callable returning
        the fastest body's name) and a smaller step if the energy ``E`` (J) at time ``t`` blew
        up; ``K`` kinetic energy, ``work`` drive work."""
        if self.first_energy is None:
            self.first_energy = E
        elif not abs(E - self.first_energy - work) <= BLOWUP * max(abs(self.first_energy),
                                                                   self.kinetic_max, 1.0):
            body = fastest()
            raise SimulationError(
                f"{self.name}: the simulation diverged at t = {t:.4g} s: the energy went from "
                f"{self.first_energy:.4g} J to {E:.4g} J (fastest body {body!r}); reduce the "
                f"step: dt = {self.dt:.4g} s is too large for this motion, try "
                f"{self.dt / 4:.4g} s or less (more substeps or a higher frame rate)", t, body,
                f"the energy went from {self.first_energy:.4g} J to {E:.4g} J")
        self.kinetic_max = max(self.kinetic_max, K)


class _ModelStepper(_BlowUpCheck, Integrator):
    """The :class:`core.integrators.Integrator` of a mechanism's model (one step = one
    substep of a frame, its drive and limits), recording what a bake keeps per frame, with
    the energy blow-up check of :class:`_BlowUpCheck`; a joint or solve failing on a diverged
    state while recording is reported like one inside a step."""

    def __init__(self, mech):
        limits = None
        if mech.limits:
            limits = LimitSolver(mech.model, list(mech.limits), restitution=mech.restitution)
        super().__init__(mech.model, mech.dt, 1, mech.integrator, tau=mech.tau, limits=limits,
                         drive=mech.drive, contacts=mech.contact_solver(limits),
                         tracking=mech.tracking,
                         rate_limit=None if mech.step_limit is None else
                         np.asarray(mech.step_limit, dtype=float) / mech.dt)
        self.name = mech.name
        self.frame_data = mech.model.create_data()
        self.reset_energy()

    def start(self, q0, v0, t0=0.0):
        """:meth:`Integrator.start`, also resetting the energy blow-up check."""
        self.reset_energy()
        return super().start(q0, v0, t0)

    def record(self, t, state):
        """``q (nq,)``, ``v (nv,)``, ``poses (nb, 4, 4)``, ``energy``, ``kinetic`` and
        ``drive_work`` at time t; raises SimulationError on a divergence."""
        q, v, work = state
        model, data = self.model, self.frame_data
        try:
            K = dynamics.kinetic_energy(model, data, q, v)
            E = K + dynamics.potential_energy(model, data, q)   # leaves the poses in oMi
            poses = data.oMi.copy()
        except (ArithmeticError, ValueError) as err:
            if not diverged(err):
                raise
            self._check(t, q, v, cause=err)
        self.check_energy(t, E, K, work, lambda: model.names[int(np.argmax(
            np.nan_to_num(np.abs(data.V).max(axis=1), nan=np.inf)))])
        return {"q": q, "v": v, "poses": poses, "energy": E, "kinetic": K, "drive_work": work}


class _SkeletonStepper(_BlowUpCheck):
    """A seed-001 skeleton under gravity as a stepper of :func:`core.integrators.integrate`:
    state :class:`core.maximal.skeleton.SkeletonState`, one post-stabilized
    :meth:`~core.maximal.skeleton.Skeleton.step` of ``dt`` per step, with the energy blow-up
    check of :class:`_BlowUpCheck`; a failed step is reported with its time and the fastest
    body's display name."""

    def __init__(self, mech):
        self.skeleton, self.dt, self.update = mech.skeleton, mech.dt, mech.skeleton_update
        self.name, self.names = mech.name, [d.name for d in mech.display]
        self.gravity = np.asarray(mech.skeleton_gravity, dtype=float)
        self.f_ext = self.skeleton.mass[:, None] * self.gravity[None, :]
        self.reset_energy()

    def _fastest(self, state):
        """Display name of the body with the largest linear or angular velocity component."""
        speed = np.nan_to_num(np.abs(np.concatenate([state.v, state.w], axis=1)).max(axis=1),
                              nan=np.inf)
        return self.names[int(np.argmax(speed))]

    def advance(self, t, state):
        try:
            return self.skeleton.step(state, self.dt, f_ext=self.f_ext, update=self.update,
                                      stabilize=True)[0]
        except (ArithmeticError, ValueError) as err:
            if not (diverged(err) or isinstance(err, SimulationError)):
                raise
            raise SimulationError(
                f"{self.name}: the simulation diverged at t = {t + self.dt:.4g} s (fastest "
                f"body {self._fastest(state)!r}): {err}; reduce the step: dt = {self.dt:.4g} s "
                f"is too large for this motion, try {self.dt / 4:.4g} s or less (more "
                "substeps or a higher frame rate)") from err

    def advance_steps(self, t, state, count):
        """``count`` steps from time ``t`` (:meth:`core.maximal.skeleton.Skeleton.steps`: one
        kernel call on the numba backend); a failure is taken again step by step with
        :meth:`advance`, whose error names the failing step's time."""
        try:
            return self.skeleton.steps(state, self.dt, count, f_ext=self.f_ext,
                                       update=self.update, stabilize=True)[0]
        except (ArithmeticError, ValueError):
            for k in range(count):
                state = self.advance(t + k * self.dt, state)
            return state

    def record(self, t, state):
        """``poses (nb, 4, 4)``, ``energy``, ``kinetic`` and ``constraint_error`` (the largest
        joint gap, m); raises SimulationError on an energy blow-up."""
        sk = self.skeleton
        poses = np.tile(np.eye(4), (sk.N, 1, 1))
        poses[:, :3, :3] = state.R
        poses[:, :3, 3] = state.p
        K = sk.kinetic_energy(state)
        E = K - float(sk.mass @ (state.p @ self.gravity))
        self.check_energy(t, E, K, 0.0, lambda: self._fastest(state))
        return {"poses": poses, "energy": E, "kinetic": K,
                "constraint_error": sk.separation(state)[0]}


def energy_drift_limit(mechanism):
    """The :attr:`BakeResult.energy_drift` above which a bake of ``mechanism`` gets a warning:
    ``DRIFT_RESOLUTION ** order`` for a passive mechanism (module docstring), None for a
    driven, damped or limited one, whose energy changes by design."""
    return DRIFT_RESOLUTION ** mechanism.order if mechanism.passive else None


def energy_drift_warning(mechanism, drift):
    """A sentence for the bake report when the energy ``drift`` (relative, see
    :attr:`BakeResult.energy_drift`) of a passive ``mechanism`` exceeds
    :func:`energy_drift_limit`, else None."""
    limit = energy_drift_limit(mechanism)
    if limit is None or drift <= limit:
        return None
    method = (f"the skeleton's {mechanism.skeleton_update!r} update" if mechanism.model is None
              else f"{mechanism.integrator!r}")
    return (f"the energy of this passive mechanism drifted by {100.0 * drift:.3g} % of the "
            f"energy in motion, more than the {100.0 * limit:.2g} % that {method} (order "
            f"{mechanism.order}) stays under with a step that resolves the motion: the step "
            f"dt = {mechanism.dt:.4g} s is too large, so the motion is not trustworthy; bake "
            f"again with more substeps (e.g. {4 * mechanism.substeps}) or a higher frame rate")


def _constraint_error(mechanism, times, q, poses):
    """``(F,)`` metres: the mechanism's own ``constraint_error`` measure, or the largest
    distance of a body's pose from its parent pose x placement x G(q)."""
    if len(times) == 0:
        return np.zeros(0)
    if mechanism.constraint_error is not None:
        return np.asarray(mechanism.constraint_error(mechanism, times, q, poses), dtype=float)
    model = mechanism.model
    err = np.zeros(len(times))
    for i, j in enumerate(model.joints):                 # every frame at once, joint by joint
        s = slice(model.q_start[i], model.q_start[i] + model.q_count[i])
        T = model.placements[i] @ j.transforms(q[:, s])
        if model.parents[i] >= 0:
            T = poses[:, model.parents[i]] @ T
        err = np.maximum(err, np.abs(T[:, :3, 3] - poses[:, i, :3, 3]).max(axis=1))
    return err


def _stepper(mechanism):
    """The stepper of a mechanism and its initial state (a model's or a skeleton's)."""
    if not isinstance(mechanism, Mechanism):
        raise InvalidInputError(f"expected a Mechanism, got {type(mechanism).__name__}")
    if mechanism.model is None:
        return _SkeletonStepper(mechanism), mechanism.skeleton_state.copy()
    stepper = _ModelStepper(mechanism)
    return stepper, stepper.start(mechanism.q0, mechanism.v0)


class MechanismRun:
    """A mechanism simulated frame by frame on demand (live playback): the same steps as
    :func:`simulate_mechanism` (``substeps`` steps per output frame from the same initial
    state and at the same times, so frame k equals the bake's frame k), computed only as
    far as asked and kept.

    Attributes: ``n_frames``; ``ready`` (frames computed so far, from 0); ``poses``
    ``(n_frames, nb, 4, 4)`` world poses, ``q`` ``(n_frames, nq)`` and ``v`` ``(n_frames,
    nv)`` (a skeleton's: no columns), valid for the first ``ready`` frames.
    """

    def __init__(self, mechanism):
        self.mechanism = mechanism
        self._stepper, self._state = _stepper(mechanism)
        self.n_frames = mechanism.n_frames
        nq = 0 if mechanism.model is None else mechanism.model.nq
        self.poses = np.empty((self.n_frames, mechanism.nbodies, 4, 4))
        self.q = np.empty((self.n_frames, nq))
        self.v = np.empty((self.n_frames, nq))
        self.ready = 0
        self._keep(0.0)

    def _keep(self, t):
        with np.errstate(over="ignore", invalid="ignore"):
            out = self._stepper.record(t, self._state)
        self.poses[self.ready] = out["poses"]
        if self.q.shape[1]:
            self.q[self.ready], self.v[self.ready] = out["q"], out["v"]
        self.ready += 1

    def advance_to(self, frame, seconds=None):
        """Compute frames until ``frame`` (index from 0, clipped to the last) is ready, then
        on while the wall time since the call stays under ``seconds`` (look-ahead; None:
        none). Returns ``ready``. Divergence raises :class:`core.errors.SimulationError`."""
        frame = min(whole_number(frame, "frame", 0), self.n_frames - 1)
        mech = self.mechanism
        start = time.perf_counter()
        while self.ready < self.n_frames and (
                self.ready <= frame or (seconds is not None
                                        and time.perf_counter() - start < seconds)):
            first = (self.ready - 1) * mech.substeps         # the step index, as integrate's
            many = getattr(self._stepper, "advance_steps", None)
            with np.errstate(over="ignore", invalid="ignore"):
                if many is not None and mech.substeps > 1:
                    self._state = many(first * mech.dt, self._state, mech.substeps)
                else:
                    for k in range(first, first + mech.substeps):
                        self._state = self._stepper.advance(k * mech.dt, self._state)
            self._keep((first + mech.substeps) * mech.dt)
        return self.ready


def simulate_mechanism(mechanism, progress=None):
    """Integrate ``mechanism`` for its duration and return a :class:`BakeResult`.

    progress: optional ``fraction -> bool`` called after every output frame; returning False
    cancels, and the result then has ``status == "cancelled"`` and no frames.
    Raises SimulationError (naming the time and the body) if the state becomes non-finite or
    the energy blows up.
    """
    stepper, state = _stepper(mechanism)
    sub = mechanism.substeps
    rec = integrate(stepper, state, mechanism.dt, (mechanism.n_frames - 1) * sub,
                    record_every=sub, progress=progress)
    r, n = rec.values, len(rec.t)
    times = np.arange(n) / mechanism.fps
    report = None
    if mechanism.model is None:
        q = v = np.zeros((n, 0))
        work, cerr = np.zeros(n), r["constraint_error"]
    else:
        q, v, work = r["q"], r["v"], r["drive_work"]
        cerr = _constraint_error(mechanism, times, q, r["poses"])
        if stepper.contacts is not None:
            report = stepper.contacts.report()
    return BakeResult(mechanism.name, rec.status, times, q, v, r["poses"], r["energy"],
                      r["kinetic"], work, cerr, rec.wall_time, rec.steps, mechanism.dt, report)
