"""Scene descriptions shared by every mechanism, and the one simulation entry point.

A :class:`Mechanism` says everything the Blender side needs to build and bake a demo without
knowing any physics: the model (reduced coordinates, :class:`core.model.Model`) or a seed-001
:class:`core.maximal.skeleton.Skeleton`, the initial state, the time stepping (output frame
rate, substeps per frame, duration, integrator), an optional prescribed :class:`Drive`,
one :class:`BodyDisplay` per body (mesh hint, size, colour, optional polyline) and optional
``scenery``: displays fixed to the world, such as a kinematically deforming surface whose
vertices are a function of time (:meth:`BodyDisplay.surface_mesh`).

:func:`simulate` integrates it and returns a :class:`SimulationResult` with per-frame
``q, v``, body poses ``(F, nb, 4, 4)``, mechanical energy, the work done by the drive, the
constraint error and the wall time.

Time stepping is :class:`core.integrators.Integrator` (one of its methods, chart changes,
NaN checks, limits after every step) with the accelerations below.

Prescribed coordinates (rheonomic drives). Some demos move part of the tree kinematically:
the spinning wire frame of the beads (a revolute coordinate ``q_p = w t``) or the time axis of
a deforming spline surface joint (a coordinate ``q_p = t``). With the free coordinates ``f``
and the prescribed ones ``p`` the equations of motion ``M a + h = tau`` split into

    M_ff a_f = -h_f - M_fp a_p            (solved for a_f; seed 000 eq. 7 summed by crba)
    tau_p    =  M_pf a_f + M_pp a_p + h_p (the drive's generalized force)

with ``M`` from :func:`core.dynamics.crba` and ``h`` from
:func:`core.dynamics.nonlinear_effects` (gravity, velocity products, springs). The drive's
power is ``tau_p . v_p``; the mechanical energy changes by exactly its integral, which
the tests check.
"""

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from .. import dynamics
from ..errors import InvalidInputError, SimulationError
from ..integrators import METHODS, Integrator
from ..kinematics import forward_kinematics
from ..limits import LimitSolver
from ..maximal.skeleton import UPDATES as SKELETON_UPDATES

__all__ = ["BodyDisplay", "Drive", "Mechanism", "SimulationResult", "simulate",
           "MESH_HINTS", "INTEGRATORS"]

#: mesh hints the Blender side understands
MESH_HINTS = ("capsule", "sphere", "ellipsoid", "box", "plane", "bead", "wire", "bone",
              "airplane", "surface")
#: integrators of :func:`simulate` (those of :mod:`core.integrators`)
INTEGRATORS = METHODS
#: :func:`simulate` stops when ``|E - E_0 - W_drive|`` exceeds this many times the larger of
#: ``|E_0|``, the largest kinetic energy so far and 1 J
BLOWUP = 100.0


@dataclass(frozen=True)
class BodyDisplay:
    """How to draw one body (all lengths in metres, in the body frame).

    name: object name; mesh: one of :data:`MESH_HINTS`; size: ``(3,)`` extents (radius,
    length, ... as the hint needs: capsule = (radius, length, 0) along the body's local
    axis ``axis``; sphere/bead = (radius, 0, 0); ellipsoid = semi-axes; box/plane/airplane
    = full extents; bone = (radius, length, 0) like a capsule; wire = (wire radius, 0, 0)
    with the wire in ``polylines``);
    colour: RGBA ``(4,)`` in [0, 1]; offset: ``(4, 4)`` mesh pose in the body frame;
    axis: local capsule axis (0, 1 or 2); polylines: tuple of ``(K, 3)`` arrays drawn as
    curves attached to the body (wires, coastlines); visible: False for carrier bodies.

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


@dataclass(frozen=True)
class Drive:
    """Prescribed (kinematically driven) coordinates.

    dofs: indices of the driven coordinates ``(k,)``; motion: ``t -> (q (k,), v (k,),
    a (k,))`` their position, rate and acceleration at time t (seconds); description: text.
    """

    dofs: tuple
    motion: object
    description: str = ""

    def evaluate(self, t):
        q, v, a = (np.asarray(x, dtype=float).reshape(len(self.dofs))
                   for x in self.motion(float(t)))
        return q, v, a


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
        passive: True if nothing drives, damps or stops the motion (energy is conserved).
        info: free-form facts for the demo table (e.g. reference data used).
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

    def __post_init__(self):
        if self.integrator not in INTEGRATORS:
            raise InvalidInputError(f"mechanism {self.name!r}: integrator must be one of "
                                    f"{INTEGRATORS}, got {self.integrator!r}")
        if not (self.fps > 0 and int(self.substeps) >= 1 and self.duration > 0):
            raise InvalidInputError(f"mechanism {self.name!r}: fps and duration must be > 0 "
                                    "and substeps >= 1")
        self.substeps = int(self.substeps)
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
    def ndof(self):
        """Degrees of freedom (free coordinates; a skeleton's 6N minus its constraint rank)."""
        if self.model is None:
            return 6 * self.skeleton.N - self.skeleton.rank
        return self.model.nv - (len(self.drive.dofs) if self.drive is not None else 0)


@dataclass
class SimulationResult:
    """Per-frame output of :func:`simulate` (F frames, nb bodies).

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


def _empty(mech, nb, nq, wall, steps):
    z = np.zeros(0)
    return SimulationResult(mech.name, "cancelled", z, np.zeros((0, nq)), np.zeros((0, nq)),
                            np.zeros((0, nb, 4, 4)), z, z, z, z, wall, steps, mech.dt)


class _Dynamics:
    """Accelerations and drive power for one mechanism (reuses one Data)."""

    def __init__(self, mech):
        self.model = mech.model
        self.data = mech.model.create_data()
        self.drive = mech.drive
        nv = self.model.nv
        self.tau0 = np.zeros(nv)
        if self.drive is not None:
            p = np.asarray(self.drive.dofs, dtype=int)
            if p.size == 0 or len(set(p.tolist())) != p.size or p.min() < 0 or p.max() >= nv:
                raise InvalidInputError(f"drive dofs {p.tolist()} must be distinct indices in "
                                        f"[0, {nv})")
            self.p = p
            self.f = np.setdiff1d(np.arange(nv), p)

    def impose(self, t, q, v):
        """Overwrite the driven coordinates with the drive's motion at t (in place)."""
        if self.drive is not None:
            qp, vp, _ = self.drive.evaluate(t)
            q[self.p] = qp
            v[self.p] = vp

    def accel(self, t, q, v):
        """``(q_ddot (nv,), drive power)`` at time t."""
        if self.drive is None:
            return dynamics.aba(self.model, self.data, q, v, self.tau0).copy(), 0.0
        _, vp, ap = self.drive.evaluate(t)
        M, h = dynamics.crba_and_nle(self.model, self.data, q, v)
        f, p = self.f, self.p
        a = np.empty(self.model.nv)
        a[p] = ap
        if f.size:
            rhs = -h[f] - M[np.ix_(f, p)] @ ap
            a[f] = cho_solve(cho_factor(M[np.ix_(f, f)], check_finite=False), rhs,
                             check_finite=False)
        tau_p = M[p] @ a + h[p]
        return a, float(tau_p @ vp)


class _DrivenIntegrator(Integrator):
    """:class:`core.integrators.Integrator` whose accelerations come from :class:`_Dynamics`
    (prescribed coordinates split out) and which keeps the drive power of every dynamics
    evaluation, so a step's drive work uses the method's own quadrature weights."""

    WEIGHTS = {"rk4": (1 / 6, 2 / 6, 2 / 6, 1 / 6), "euler": (1.0,), "semi_implicit": (1.0,)}

    def __init__(self, mech, limits):
        super().__init__(mech.model, mech.dt, 1, mech.integrator, limits=limits)
        self.dyn = _Dynamics(mech)
        self.powers = []

    def acceleration(self, t, q, v):
        a, power = self.dyn.accel(t, q, v)
        self.powers.append(power)
        return a

    def step_with_work(self, t, q, v):
        """One step of dt; returns ``(q, v, drive work over the step)``."""
        self.powers.clear()
        q, v = self.step(t, q, v)
        w = self.WEIGHTS[self.method]
        if len(self.powers) != len(w):
            raise SimulationError(f"the integrator evaluated the dynamics {len(self.powers)} "
                                  f"times in one {self.method} step, expected {len(w)}")
        self.dyn.impose(t + self.dt, q, v)
        return q, v, self.dt * float(np.dot(w, self.powers))


def _kinematic_error(model, data, q, poses):
    """Largest distance between each body's pose and its parent pose x placement x G(q)."""
    err = 0.0
    for i, j in enumerate(model.joints):
        s = slice(model.q_start[i], model.q_start[i] + model.q_count[i])
        parent = np.eye(4) if model.parents[i] < 0 else poses[model.parents[i]]
        T = parent @ model.placements[i] @ j.transform(q[s])
        err = max(err, float(np.abs(T[:3, 3] - poses[i, :3, 3]).max()))
    return err


def _simulate_model(mech, progress):
    model = mech.model
    solver = None
    if mech.limits:
        solver = LimitSolver(model, list(mech.limits), restitution=mech.restitution)
    integ = _DrivenIntegrator(mech, solver)
    dyn = integ.dyn
    data = model.create_data()
    F, sub, dt = mech.n_frames, mech.substeps, mech.dt
    nb, nq = model.nbodies, model.nq
    q, v = mech.q0.copy(), mech.v0.copy()
    dyn.impose(0.0, q, v)
    Q = np.empty((F, nq))
    V = np.empty((F, nq))
    P = np.empty((F, nb, 4, 4))
    E = np.empty(F)
    K = np.empty(F)
    W = np.zeros(F)
    work = 0.0
    t0 = time.perf_counter()
    steps = 0

    def record(k):
        Q[k], V[k] = q, v
        P[k] = forward_kinematics(model, data, q)
        K[k] = dynamics.kinetic_energy(model, data, q, v)
        E[k] = K[k] + dynamics.potential_energy(model, data, q)
        W[k] = work
        if k and abs(E[k] - E[0] - W[k]) > BLOWUP * max(abs(E[0]), K[:k + 1].max(), 1.0):
            fast = model.names[int(np.argmax(np.linalg.norm(data.V, axis=1)))]
            raise SimulationError(f"{mech.name}: the energy blew up at t = {k / mech.fps:.4f} s "
                                  f"(fastest body {fast!r}); reduce the step (dt = {dt:.4g} s)")

    record(0)
    for k in range(1, F):
        for s in range(sub):
            q, v, dw = integ.step_with_work(((k - 1) * sub + s) * dt, q, v)
            work += dw
            steps += 1
        record(k)
        if progress is not None and progress(k / (F - 1)) is False:
            return _empty(mech, nb, nq, time.perf_counter() - t0, steps)
    wall = time.perf_counter() - t0
    times = np.arange(F) / mech.fps
    if mech.constraint_error is not None:
        cerr = np.asarray(mech.constraint_error(mech, times, Q, P), dtype=float)
    else:
        cerr = np.array([_kinematic_error(model, data, Q[k], P[k]) for k in range(F)])
    return SimulationResult(mech.name, "completed", times, Q, V, P, E, K, W, cerr, wall, steps,
                            dt)


def _simulate_skeleton(mech, progress):
    sk = mech.skeleton
    st = mech.skeleton_state.copy()
    F, sub, dt = mech.n_frames, mech.substeps, mech.dt
    nb = sk.N
    g = np.asarray(mech.skeleton_gravity, dtype=float)
    f_ext = sk.mass[:, None] * g[None, :]
    P = np.empty((F, nb, 4, 4))
    E = np.empty(F)
    K = np.empty(F)
    C = np.empty(F)
    t0 = time.perf_counter()
    steps = 0

    def record(k):
        P[k] = np.eye(4)
        P[k, :, :3, :3] = st.R
        P[k, :, :3, 3] = st.p
        K[k] = sk.kinetic_energy(st)
        E[k] = K[k] - float(sk.mass @ (st.p @ g))
        C[k] = sk.separation(st)[0]

    record(0)
    for k in range(1, F):
        for _ in range(sub):
            st, _info = sk.step(st, dt, f_ext=f_ext, update=mech.skeleton_update,
                                stabilize=True)
            steps += 1
        record(k)
        if progress is not None and progress(k / (F - 1)) is False:
            return _empty(mech, nb, 0, time.perf_counter() - t0, steps)
    wall = time.perf_counter() - t0
    times = np.arange(F) / mech.fps
    return SimulationResult(mech.name, "completed", times, np.zeros((F, 0)), np.zeros((F, 0)),
                            P, E, K, np.zeros(F), C, wall, steps, dt)


def simulate(mechanism, progress=None):
    """Integrate ``mechanism`` for its duration and return a :class:`SimulationResult`.

    progress: optional ``fraction -> bool`` called after every output frame; returning False
    cancels, and the result then has ``status == "cancelled"`` and no frames.
    Raises SimulationError (naming the time and the body) if the state becomes non-finite or
    the energy blows up.
    """
    if not isinstance(mechanism, Mechanism):
        raise InvalidInputError(f"simulate expects a Mechanism, got {type(mechanism).__name__}")
    if progress is not None and not callable(progress):
        raise InvalidInputError("progress must be a callable fraction -> bool, or None")
    if mechanism.model is None:
        return _simulate_skeleton(mechanism, progress)
    return _simulate_model(mechanism, progress)
