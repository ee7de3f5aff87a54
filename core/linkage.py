"""Linkages: rigid bodies joined in closed loops, assembled live (seed 004) and simulated with
joint couplings (seed 002).

A :class:`Linkage` names its bodies (world poses, masses, inertias), its joints (two frames,
one fixed in each body, that coincide at the described configuration), its springs and
optionally a *driver*: a body whose pose is given (keyed by the user), or a hinge/slider
joint to the world whose coordinate is given.

* :func:`check_linkage` refuses bad descriptions (missing bodies, a joint between a body and
  itself, a driver that is no body) and redundant loops: the constraint Jacobian ``J`` of the
  system solved is rank-checked with scipy's pivoted QR of ``J^T``, and the rows that repeat
  the others are named (joint and direction).
* :class:`LiveAssembly` solves the rest of the linkage for the driver's pose with Faure's
  linearized assembly (:meth:`core.maximal.faure.Assembly.correction`, eq. 13 solved by
  conjugate gradients with an iteration cap, seed 004 section 3.4); the driver has zero
  inverse mass, as the seed's dragged targets (section 4.1).
* :func:`simulate_linkage` bakes the motion under gravity and springs, passive or with the
  driver following its keys as a kinematic body (zero inverse mass): Stoermer
  stepping (seed 004 section 4.2) when every joint is one of Faure's bilateral joints, or the
  couplings of :mod:`core.maximal.couplings` (bilateral and unilateral constraints, deadband,
  two-step engagement; seed 002 section 4.10) when a joint has limits, a reach cone or is a
  slotted hinge or a spline joint; every kind is a coupling too, so limits mix with all of
  them in one linkage.

Joint kinds (a joint's axis is the z axis of its frames):

=================  ===========================================  =================================
kind               motion allowed of frame 2 relative to frame 1  solvers
=================  ===========================================  =================================
``hinge``          turn about z                                  Faure ``pin`` / HingeCoupling
``ball``           turn about any axis                           Faure ``universal`` /
                                                                 SphericalCoupling (reach cone)
``slider``         slide along z                                 Faure ``prismatic`` /
                                                                 SliderCoupling
``cylinder``       slide along and turn about z                  Faure ``cylindrical`` /
                                                                 CylindricalCoupling
``fixed``          none                                          Faure ``fixed`` / FixedCoupling
``line``           the origin slides along z, any rotation       Faure ``ball-socket`` /
                                                                 FlatPointCoupling
``plane``          the origin stays on the xy plane              Faure ``surface`` /
                                                                 FlatPointCoupling
``slotted``        slide along x and turn about z                SlottedHingeCoupling
``curve``          ride a spline curve joint (seed 000 eq. 21)   SplineCurveCoupling
``curve_point``    the origin on that curve's path, any turn     SplinePointCoupling
``surface_point``  the origin on a spline surface (seed 000    SplinePointCoupling
                   eq. 25, translations), any rotation
=================  ===========================================  =================================

Units: metres, kilograms, seconds, radians; poses are ``(4, 4)`` world transforms ``T_W_body``
with the body origin at its centre of mass.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from .checks import real_number, whole_number
from .errors import InvalidInputError, SimulationError
from .integrators import check_record_size
from .lie import se3, so3
from .maximal import couplings as cpl
from .maximal.faure import JOINT_TYPES, Assembly, FaureJoint

__all__ = ["MAX_LINKAGE_STEPS", "LinkBody", "LinkJoint", "LinkSpring", "Linkage",
           "AssemblyResult", "LiveAssembly", "LinkageDrag", "DRAG_WEIGHT",
           "LinkageMotion", "DynamicSystem", "check_linkage", "drive_pose", "dynamic_system",
           "frame_count", "point_surface", "simulate_linkage", "redundant_rows",
           "FAURE_KINDS", "COUPLING_KINDS", "LIMIT_KINDS", "JOINT_KINDS", "RANK_TOL", "CLOSURE_TOL"]

#: joint kind -> Faure's joint type (seed 004 Table 1, see core.maximal.faure)
FAURE_KINDS = {"hinge": "pin", "ball": "universal", "slider": "prismatic",
               "cylinder": "cylindrical", "fixed": "fixed", "line": "ball-socket",
               "plane": "surface"}
#: kinds the couplings solver offers (the others are Faure-only)
JOINT_KINDS = tuple(FAURE_KINDS) + ("slotted", "curve", "curve_point", "surface_point")
#: kinds the couplings solver offers: every kind (the Faure kinds as couplings too, so that
#: they mix with limits in one linkage)
COUPLING_KINDS = JOINT_KINDS
#: kinds that take limits: their coordinates' ranges (hinge: angle; cylinder and slotted:
#: slide and angle; slider and line: slide) or a ball's reach cone
LIMIT_KINDS = ("hinge", "ball", "cylinder", "slotted", "slider", "line")

#: Faure's frame L has its free axis along local x (``i``); a joint's axis is its frame's z.
#: ``L = F @ Z_TO_X``: L's i = F's z, L's j = F's y, L's k = -F's x.
_Z_TO_X = se3.from_rp(so3.exp(np.array([0.0, -np.pi / 2, 0.0])), np.zeros(3))
_L_AXIS_NAMES = ("z", "y", "x")

#: Relative rank tolerance of the constraint Jacobian. Blender stores poses in single precision,
#: so a planar loop read from a scene is redundant only up to ~1e-7 (float32 eps 1.2e-7); a
#: hundred times that separates those round-off singular values from a real mechanism's.
RANK_TOL = 100 * float(np.finfo(np.float32).eps)
#: largest constraint error (m / rad) a bake accepts after its first frame: a loop read from a
#: scene closes to its single-precision poses (~1e-7 m on metre-sized linkages) and the
#: solvers correct that within a step; a loop off by more than ten times that cannot close
CLOSURE_TOL = 1e-6
#: the most steps :func:`simulate_linkage` takes (hours of computing at tens of us a step)
MAX_LINKAGE_STEPS = 10 ** 8


@dataclass(frozen=True)
class LinkBody:
    """A rigid body: ``T: (4, 4)`` world pose (origin at the centre of mass), ``mass`` (kg),
    ``inertia: (3, 3)`` about the centre of mass in body axes (kg m^2)."""

    name: str
    T: np.ndarray
    mass: float
    inertia: np.ndarray


@dataclass(frozen=True)
class LinkJoint:
    """A joint of ``kind`` between ``body1`` (``""``: the world) and ``body2``.

    ``frame1: (4, 4)`` is the joint frame in body 1 (in the world if body1 is ``""``),
    ``frame2: (4, 4)`` the joint frame in body 2; they coincide at the described configuration,
    where the joint's coordinates are zero. Limits (couplings solver): ``lower``/``upper`` per
    coordinate (hinge: angle; cylinder: (slide, angle); slotted: (slide along x, angle);
    slider and line: slide along z; the spline kinds: none, their own range), ``cone``: the
    ball's reach-cone half angle (rad) about z.
    ``curve: (n, 4, 4)`` control frames of the ``curve`` kind's spline curve joint (seed 000
    eq. 21, uniform knots), in frame 1: frame 2 relative to frame 1 is ``G(s)``, so body 2's
    ``frame2`` rides the curve (there the frames coincide only where ``G(s)`` is the identity);
    the ``curve_point`` kind holds only frame 2's origin on the curve's path, free to turn.
    ``surface: (n1, n2, 3)`` control points in frame 1 of the ``surface_point`` kind's spline
    surface (:func:`point_surface`), on which frame 2's origin stays, free to turn.
    """

    name: str
    kind: str
    body1: str
    body2: str
    frame1: np.ndarray
    frame2: np.ndarray
    lower: tuple = ()
    upper: tuple = ()
    cone: float | None = None
    curve: np.ndarray | None = None
    surface: np.ndarray | None = None

    @property
    def limited(self) -> bool:
        return bool(self.lower or self.upper or self.cone is not None)


@dataclass(frozen=True)
class LinkSpring:
    """A linear spring between the points ``point1: (3,)`` of ``body1`` (body frame; world if
    ``""``) and ``point2: (3,)`` of ``body2``: force ``stiffness (N/m) * (length - rest)``
    plus ``damping (N s/m)`` times the stretch rate, along the line between them."""

    name: str
    body1: str
    body2: str
    point1: np.ndarray
    point2: np.ndarray
    stiffness: float
    rest: float
    damping: float = 0.0


@dataclass(frozen=True)
class Linkage:
    """Bodies, joints and springs; ``driver``: name of the body whose pose is given, or
    ``""``; ``drive_joint``: name of a hinge or slider joint to the world whose coordinate is
    given (its moving body is then the driver); ``gravity: (3,)`` m/s^2."""

    bodies: tuple
    joints: tuple
    springs: tuple = ()
    driver: str = ""
    drive_joint: str = ""
    gravity: tuple = (0.0, 0.0, -9.81)

    def index(self, name: str) -> int:
        """Index of body ``name`` (``""``: -1, the world)."""
        if name == "":
            return -1
        for i, b in enumerate(self.bodies):
            if b.name == name:
                return i
        raise InvalidInputError(f"no body named {name!r} in the linkage")

    @property
    def poses(self) -> np.ndarray:
        """``(N, 4, 4)`` world poses of the bodies as described."""
        return np.array([b.T for b in self.bodies], dtype=float).reshape(-1, 4, 4)

    def driver_index(self) -> int:
        """Index of the driven body, or -1 without a driver."""
        if self.drive_joint:
            j = self.joint(self.drive_joint)
            return self.index(j.body2 or j.body1)
        return self.index(self.driver) if self.driver else -1

    def joint(self, name: str) -> LinkJoint:
        for j in self.joints:
            if j.name == name:
                return j
        raise InvalidInputError(f"no joint named {name!r} in the linkage")


# ------------------------------------------------------------------------------------------
# validation and the rank check
# ------------------------------------------------------------------------------------------
def check_linkage(linkage: Linkage, solver: str | None = None) -> str:
    """Validate ``linkage`` and return the solver its dynamics use (``"faure"`` or
    ``"couplings"``; ``solver`` forces one). Raises InvalidInputError naming the bad body,
    joint or spring and what to do."""
    names = [b.name for b in linkage.bodies]
    if not names:
        raise InvalidInputError("the linkage has no bodies; add a joint between two objects")
    gravity = np.asarray(linkage.gravity, dtype=float)
    if gravity.shape != (3,):
        raise InvalidInputError(f"gravity must be 3 numbers (m/s^2), got {linkage.gravity!r}")
    if not np.all(np.isfinite(gravity)):
        raise InvalidInputError(f"gravity {gravity.tolist()} holds NaN or inf: give 3 finite "
                                "numbers in m/s^2 (the scene's gravity, e.g. 0 0 -9.81)")
    if len(set(names)) != len(names) or "" in names:
        raise InvalidInputError(f"body names must be distinct and non-empty, got {names}")
    for b in linkage.bodies:
        se3.check_transform(np.asarray(b.T, dtype=float), f"pose of body {b.name!r}")
        real_number(b.mass, f"mass of body {b.name!r}", 0.0, low_open=True,
                    advice="give it a mass in kg")
        inertia = np.asarray(b.inertia, dtype=float)
        if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)) or \
                np.any(np.linalg.eigvalsh(0.5 * (inertia + inertia.T)) <= 0):
            raise InvalidInputError(f"inertia of body {b.name!r} must be a symmetric positive "
                                    f"definite (3, 3) matrix (kg m^2)")
    jnames = [j.name for j in linkage.joints]
    if len(set(jnames)) != len(jnames):
        raise InvalidInputError(f"joint names must be distinct, got {jnames}")

    def known(body, what):
        if body != "" and body not in names:
            raise InvalidInputError(f"{what} names body {body!r}, which is not in the linkage "
                                    f"(deleted or renamed?); remove it or add the body again")

    for j in linkage.joints:
        what = f"joint {j.name!r} ({j.kind})"
        if j.kind not in JOINT_KINDS:
            raise InvalidInputError(f"{what}: unknown kind; use one of {', '.join(JOINT_KINDS)}")
        known(j.body1, what)
        known(j.body2, what)
        if j.body1 == j.body2:
            raise InvalidInputError(f"{what} joins {j.body1 or 'the world'!r} to itself; pick "
                                    f"two different bodies")
        if j.body2 == "":
            raise InvalidInputError(f"{what}: the world must be body 1; put the moving body "
                                    f"second")
        se3.check_transform(np.asarray(j.frame1, dtype=float), f"{what} frame1")
        se3.check_transform(np.asarray(j.frame2, dtype=float), f"{what} frame2")
        if j.kind in ("curve", "curve_point") and j.curve is None:
            raise InvalidInputError(f"{what} needs the control frames of its curve")
        if j.kind == "surface_point":
            grid = np.asarray(j.surface if j.surface is not None else np.zeros(0), dtype=float)
            if grid.ndim != 3 or grid.shape[2] != 3 or min(grid.shape[:2]) < 4 or \
                    not np.all(np.isfinite(grid)):
                raise InvalidInputError(f"{what} needs a finite (n1, n2, 3) grid of its "
                                        f"surface's control points, at least 4 x 4, got "
                                        f"shape {grid.shape}")
        if j.limited and j.kind not in LIMIT_KINDS:
            raise InvalidInputError(f"{what}: limits are offered on {', '.join(LIMIT_KINDS)} "
                                    f"joints only; remove them")
        if j.cone is not None and j.kind != "ball":
            raise InvalidInputError(f"{what}: a reach cone belongs to a ball joint")
        for lo, hi in zip(j.lower, j.upper):
            if not lo <= hi:
                raise InvalidInputError(f"{what}: limit range [{lo}, {hi}] is empty; pass "
                                        f"lower <= upper")
    for s in linkage.springs:
        what = f"spring {s.name!r}"
        known(s.body1, what)
        known(s.body2, what)
        if s.body1 == s.body2:
            raise InvalidInputError(f"{what} joins {s.body1 or 'the world'!r} to itself")
        real_number(s.stiffness, f"{what} stiffness", 0.0)
        real_number(s.rest, f"{what} rest length", 0.0)
        real_number(s.damping, f"{what} damping", 0.0)
    if linkage.driver and linkage.drive_joint:
        raise InvalidInputError("give either a driving body or a driving joint, not both")
    if linkage.driver:
        known(linkage.driver, "the driver")
    if linkage.drive_joint:
        j = linkage.joint(linkage.drive_joint)
        if j.kind not in ("hinge", "slider") or j.body1 != "":
            raise InvalidInputError(f"driving joint {j.name!r} must be a hinge or slider from "
                                    f"the world to a body; it is a {j.kind} from "
                                    f"{j.body1 or 'the world'!r}")
    needs_couplings = any(j.limited or j.kind not in FAURE_KINDS for j in linkage.joints)
    solver = solver or ("couplings" if needs_couplings else "faure")
    if solver == "faure" and needs_couplings:
        bad = next(j for j in linkage.joints if j.limited or j.kind not in FAURE_KINDS)
        raise InvalidInputError(f"joint {bad.name!r} ({bad.kind}, limits or cone) needs the "
                                f"couplings solver")
    if solver not in ("faure", "couplings"):
        raise InvalidInputError(f"solver must be 'faure' or 'couplings', got {solver!r}")
    return solver


def redundant_rows(J, tol: float = RANK_TOL) -> np.ndarray:
    """Indices of constraint rows of ``J: (m, n)`` that depend on the others: scipy's QR with
    column pivoting of ``J^T`` orders the rows by how much each adds; the ones whose pivot is
    below ``tol`` times the largest are redundant. Returns ``(m - rank,)`` row indices."""
    A = np.asarray(J.toarray() if hasattr(J, "toarray") else J, dtype=float).T
    if A.size == 0:
        return np.zeros(0, dtype=int)
    _, R, piv = sla.qr(A, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    rank = int(np.count_nonzero(d > tol * max(d[0], 1e-300))) if d.size else 0
    return np.sort(piv[rank:])


def _faure_labels(joints) -> list:
    """One label per Faure row, in :class:`Assembly`'s order: translations then rotations."""
    out = []
    for j in joints:
        t, r = JOINT_TYPES[FAURE_KINDS[j.kind]]
        out += [f"joint {j.name!r} ({j.kind}): position along its {_L_AXIS_NAMES[a]} axis"
                for a in t]
        out += [f"joint {j.name!r} ({j.kind}): rotation about its {_L_AXIS_NAMES[a]} axis"
                for a in r]
    return out


def _redundancy_error(J, labels, what):
    rows = redundant_rows(J)
    if rows.size:
        listed = "; ".join(labels[k] for k in rows)
        raise InvalidInputError(
            f"{what}: the loop is redundant ({rows.size} constraint(s) repeat the others): "
            f"{listed}. Make one joint of the loop looser (a hinge of a plane loop a 'line' "
            f"joint along its axis, or a ball joint), or remove that joint")


def _split_joints(linkage: Linkage, driver: int) -> tuple[list, list]:
    """``(solved, measured)`` joints for a linkage whose body ``driver`` is moved by its
    input: the joints between the world and the driver have nothing left to solve (only the
    input moves them) and are measured; the others are solved."""
    fixed = {-1, driver}
    solved = [j for j in linkage.joints
              if not {linkage.index(j.body1), linkage.index(j.body2)} <= fixed]
    return solved, [j for j in linkage.joints if j not in solved]


def _inertias(linkage):
    return (np.array([b.mass for b in linkage.bodies], dtype=float),
            np.array([b.inertia for b in linkage.bodies], dtype=float).reshape(-1, 3, 3))


def _faure_system(linkage, poses, joints):
    """Faure :class:`Assembly` of ``joints`` (LinkJoints with Faure kinds) at ``poses``."""
    mass, inertia = _inertias(linkage)
    fj = [FaureJoint(FAURE_KINDS[j.kind], linkage.index(j.body1), linkage.index(j.body2),
                     np.asarray(j.frame1, dtype=float) @ _Z_TO_X,
                     np.asarray(j.frame2, dtype=float) @ _Z_TO_X) for j in joints]
    return Assembly(mass, inertia, fj, poses[:, :3, 3], poses[:, :3, :3])


# ------------------------------------------------------------------------------------------
# live assembly (seed 004 section 3.4)
# ------------------------------------------------------------------------------------------
def drive_pose(linkage: Linkage, value: float) -> np.ndarray:
    """``(4, 4)`` world pose of the body moved by the linkage's driving joint at its
    coordinate ``value`` (rad for a hinge, m for a slider): ``frame1 M(value) frame2^-1``."""
    if not linkage.drive_joint:
        raise InvalidInputError("this linkage is not driven by a joint coordinate")
    j = linkage.joint(linkage.drive_joint)
    x = real_number(value, "drive value")
    M = (se3.from_rp(so3.exp(np.array([0.0, 0.0, x])), np.zeros(3)) if j.kind == "hinge"
         else se3.from_rp(np.eye(3), [0.0, 0.0, x]))
    return np.asarray(j.frame1, dtype=float) @ M @ se3.inv(np.asarray(j.frame2, dtype=float))


@dataclass(frozen=True)
class AssemblyResult:
    """One live assembly: ``poses: (N, 4, 4)`` world poses of all bodies (the driver's as
    given); ``error``: largest constraint error left (m for positions, rad for rotations) over
    every joint, those between the driver and the world included (only the driver's input
    moves those); ``worst``: the label of that constraint; ``cg_iterations``: CG iterations
    per geometric iteration (0 per correction of the couplings' direct solves); ``converged``:
    the solved constraints' largest error <= tol."""

    poses: np.ndarray
    error: float
    worst: str
    cg_iterations: tuple
    converged: bool


def _assemble(system, P, labels, geometric_iterations, cg_iterations, tol) -> AssemblyResult:
    """Close the loops of ``system`` (a :class:`DynamicSystem`) from the poses ``P: (N, 4,
    4)`` by its mass-weighted correction (Faure's, CG capped; or the couplings' direct
    solves) and measure every joint."""
    sim = system.sim
    sim.p, sim.R = P[:, :3, 3].copy(), so3.check_rotation(P[:, :3, :3], "poses").copy()
    if system.solver == "faure":
        cg = sim.correction(geometric_iterations, cg_iterations, tol)[1].cg_iterations
    else:
        cg = (0,) * sim.correct_positions(geometric_iterations, tol)
    out = se3.from_rp(sim.R, sim.p)
    solved = system.errors(measured=False)
    err = system.errors()
    k = int(np.argmax(err)) if err.size else 0
    worst = float(err[k]) if err.size else 0.0
    return AssemblyResult(out, worst, labels[k] if err.size else "", cg,
                          float(solved.max(initial=0.0)) <= tol)


class LiveAssembly:
    """The linkage prepared for repeated assembly while its driver moves.

    The system is :func:`dynamic_system`'s driven one: the driver has zero inverse mass so
    the correction moves only the other bodies, the joints between the world and the driver
    (nothing to solve) are only measured, and the constraint Jacobian is rank-checked once
    here. Linkages of Faure's kinds (hinge, ball, slider, cylinder, fixed, line, plane) are
    assembled by Faure's correction (seed 004, CG capped); a linkage with a slotted hinge or
    a spline joint by the couplings' mass-weighted position correction (seed 002 eq. 4.12,
    direct solves: the CG cap does not apply).

    Args:
        linkage: a :class:`Linkage` with a driver (body or joint); limits are ignored here
            (they act in :func:`simulate_linkage`).
        cg_iterations: cap on CG iterations per geometric iteration (seed 004's accuracy for
            speed knob); geometric_iterations: cap on linearize-and-solve rounds; tol: stop
            when the largest error is below it (m / rad); dense: build the corrections'
            matrices as numpy arrays (True) or sparse (False); None: dense up to
            :data:`core.maximal.faure.DENSE_BODIES` bodies.
    """

    def __init__(self, linkage: Linkage, cg_iterations: int = 50, geometric_iterations: int = 10,
                 tol: float = 1e-10, dense: bool | None = None):
        if linkage.driver_index() < 0:
            raise InvalidInputError("live assembly needs a driver: a driving body or a driving "
                                    "hinge/slider joint")
        self.cg_iterations = whole_number(cg_iterations, "cg_iterations")
        self.geometric_iterations = whole_number(geometric_iterations, "geometric_iterations")
        self.tol = real_number(tol, "tol", 0.0, low_open=True)
        self.linkage = linkage
        self.system = _unlimited_system(linkage, driven=True)
        faure = self.system.solver == "faure"
        self.driver = self.system.driver
        self.labels = self.system.labels()
        if dense is not None and faure:
            self.system.sim.dense = bool(dense)

    def driver_pose(self, value: float) -> np.ndarray:
        """``(4, 4)`` world pose of the driven body at the driving joint's coordinate
        ``value`` (:func:`drive_pose`)."""
        return drive_pose(self.linkage, value)

    def solve(self, driver_pose, poses=None) -> AssemblyResult:
        """Assemble for the driver at ``driver_pose: (4, 4)``, starting from ``poses:
        (N, 4, 4)`` (default: the described configuration; pass the last result for a warm
        start). Faure's assembly is deterministic: the same inputs give the same poses bit for
        bit."""
        T = se3.check_transform(np.asarray(driver_pose, dtype=float), "driver pose")
        P = self.linkage.poses if poses is None else np.array(poses, dtype=float)
        if P.shape != (len(self.linkage.bodies), 4, 4):
            raise InvalidInputError(f"poses must have shape ({len(self.linkage.bodies)}, 4, 4),"
                                    f" got {P.shape}")
        P[self.driver] = T
        return _assemble(self.system, P, self.labels, self.geometric_iterations,
                         self.cg_iterations, self.tol)

    def unreachable(self, result: AssemblyResult) -> str:
        """A sentence for a result that did not close (driver out of reach or contradictory
        joints), naming the worst constraint; ``""`` when it converged."""
        if result.converged:
            return ""
        return (f"the loop does not close: {result.worst} is off by {result.error:.3g} "
                f"(m or rad) after {len(result.cg_iterations)} geometric iterations; the "
                f"driver may be out of reach, or raise the CG/iteration caps")


def _unlimited_system(linkage: Linkage, driven: bool) -> DynamicSystem:
    """:func:`dynamic_system` of the linkage without its limits (assembly ignores them), on
    Faure's correction when every joint is one of its kinds, else the couplings'."""
    unlimited = dataclasses.replace(linkage, joints=tuple(
        dataclasses.replace(j, lower=(), upper=(), cone=None) for j in linkage.joints))
    faure = all(j.kind in FAURE_KINDS for j in linkage.joints)
    return dynamic_system(unlimited, "faure" if faure else "couplings", driven=driven)


#: how many times its mass the grabbed body of a :class:`LinkageDrag` weighs in the correction
DRAG_WEIGHT = 100.0
#: halvings of a :class:`LinkageDrag` move tried before the bodies stay where they were
DRAG_HALVINGS = 4


class LinkageDrag:
    """A linkage dragged by a point of one of its bodies (the viewport's drag tool, seed 004
    section 4.1's dragged targets made soft).

    The linkage is released: a driving body or driving joint's body moves like the others and
    every joint, those to the world included, is solved. :meth:`solve` translates the grabbed
    body so that its point lands on the target, then closes the loops by the assembly's
    mass-weighted correction (:class:`LiveAssembly`'s) with the grabbed body weighing
    :data:`DRAG_WEIGHT` times its mass and inertia: the other bodies give way as far as the
    joints let them and the grabbed one comes back as far as the loop needs, so repeated
    solves bring the point onto a target it can reach. A move the correction
    cannot close within its caps is halved, up to :data:`DRAG_HALVINGS` times; when none
    closes, the poses stay as given (the result's ``converged`` is False).

    Args:
        linkage: a :class:`Linkage` (limits are ignored, as in :class:`LiveAssembly`).
        body: the grabbed body's name; point: ``(3,)`` the grabbed point in its frame.
        cg_iterations, geometric_iterations, tol: the assembly's caps (:class:`LiveAssembly`).
    """

    def __init__(self, linkage: Linkage, body: str, point, cg_iterations: int = 50,
                 geometric_iterations: int = 10, tol: float = 1e-10):
        if not body:
            raise InvalidInputError("pick a body of the linkage to drag, not the world")
        self.body = linkage.index(body)
        self.point = np.asarray(point, dtype=float).reshape(-1)
        if self.point.shape != (3,) or not np.all(np.isfinite(self.point)):
            raise InvalidInputError(f"the grabbed point of {body!r} must be 3 finite numbers "
                                    f"(m, in the body's frame)")
        self.cg_iterations = whole_number(cg_iterations, "cg_iterations")
        self.geometric_iterations = whole_number(geometric_iterations, "geometric_iterations")
        self.tol = real_number(tol, "tol", 0.0, low_open=True)
        self.linkage = dataclasses.replace(linkage, driver="", drive_joint="")
        self.system = _unlimited_system(self.linkage, driven=False)
        self.system.sim.inv_mass[self.body] /= DRAG_WEIGHT
        self.system.sim.inv_inertia[self.body] /= DRAG_WEIGHT
        self.labels = self.system.labels()

    def grabbed(self, poses) -> np.ndarray:
        """``(3,)`` world position of the grabbed point at ``poses: (N, 4, 4)``."""
        T = np.asarray(poses, dtype=float)[self.body]
        return T[:3, :3] @ self.point + T[:3, 3]

    def solve(self, target, poses) -> AssemblyResult:
        """Move the grabbed point toward ``target: (3,)`` (world, m) from the assembled
        ``poses: (N, 4, 4)`` and close the loops (class docstring)."""
        P0 = np.array(poses, dtype=float)
        if P0.shape != (len(self.linkage.bodies), 4, 4):
            raise InvalidInputError(f"poses must have shape ({len(self.linkage.bodies)}, 4, 4),"
                                    f" got {P0.shape}")
        x = np.asarray(target, dtype=float).reshape(-1)
        if x.shape != (3,) or not np.all(np.isfinite(x)):
            raise InvalidInputError("the drag target must be 3 finite numbers (m, world)")
        move = x - self.grabbed(P0)
        for _ in range(DRAG_HALVINGS + 1):
            P = P0.copy()
            P[self.body, :3, 3] += move
            result = _assemble(self.system, P, self.labels, self.geometric_iterations,
                               self.cg_iterations, self.tol)
            if result.converged:
                return result
            move = 0.5 * move
        return dataclasses.replace(_assemble(self.system, P0, self.labels, 0,
                                             self.cg_iterations, self.tol), converged=False)


# ------------------------------------------------------------------------------------------
# dynamics
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LinkageMotion:
    """A simulated linkage sampled once per frame.

    ``times: (F,)`` s; ``poses: (F, N, 4, 4)``; ``errors: (F,)`` largest bilateral constraint
    error per frame (m / rad); ``violations: (F,)`` deepest unilateral limit violation per
    frame (m / rad, 0 inside); ``engagements``: ``{"joint/constraint": count}`` of engagements
    of each unilateral constraint; ``violation_tol``: what the couplings solver allows (its
    deadband plus one step's travel at the fastest limit speed seen, the step that detects the
    crossing); ``status``: ``"completed"`` or ``"cancelled"``; ``solver``; ``steps``;
    ``wall_time`` s.
    """

    times: np.ndarray
    poses: np.ndarray
    errors: np.ndarray
    violations: np.ndarray
    engagements: dict
    violation_tol: float
    status: str
    solver: str
    steps: int
    wall_time: float


def spring_forces(linkage: Linkage, p, R, u=None) -> np.ndarray:
    """World wrenches ``(N, 6)`` ``[torque; force]`` about the centres of mass of gravity and
    the springs at ``p: (N, 3)``, ``R: (N, 3, 3)`` and velocities ``u: (N, 6)`` ``[w; v]``
    (for the springs' damping; None: no damping)."""
    mass, _ = _inertias(linkage)
    f = np.zeros((len(linkage.bodies), 6))
    f[:, 3:] = mass[:, None] * np.asarray(linkage.gravity, dtype=float)
    for s in linkage.springs:
        ends = []
        for body, point in ((s.body1, s.point1), (s.body2, s.point2)):
            i = linkage.index(body)
            x = np.asarray(point, dtype=float)
            if i < 0:
                ends.append((i, x, np.zeros(3)))
                continue
            w = R[i] @ x
            v = np.zeros(3) if u is None else u[i, 3:] + np.cross(u[i, :3], w)
            ends.append((i, p[i] + w, v))
        d = ends[1][1] - ends[0][1]
        length = float(np.linalg.norm(d))
        n = d / length if length > 0 else np.zeros(3)
        tension = s.stiffness * (length - s.rest) + s.damping * float(n @ (ends[1][2] - ends[0][2]))
        for (i, x, _), sign in zip(ends, (1.0, -1.0)):
            if i >= 0:
                force = sign * tension * n
                f[i, 3:] += force
                f[i, :3] += np.cross(x - p[i], force)
    return f


def _coupling(j: LinkJoint):
    lo = list(j.lower) + [-np.inf] * 2
    hi = list(j.upper) + [np.inf] * 2
    if j.kind == "slider":
        return cpl.SliderCoupling((lo[0], hi[0]))
    if j.kind == "fixed":
        return cpl.FixedCoupling()
    if j.kind == "line":
        return cpl.FlatPointCoupling(np.eye(3)[:, 2:], lo[:1], hi[:1])
    if j.kind == "plane":
        return cpl.FlatPointCoupling(np.eye(3)[:, :2])
    if j.kind == "hinge":
        return cpl.HingeCoupling(lo[0], hi[0])
    if j.kind == "cylinder":
        return cpl.CylindricalCoupling((lo[0], hi[0]), (lo[1], hi[1]))
    if j.kind == "slotted":
        return cpl.SlottedHingeCoupling((lo[0], hi[0]), (lo[1], hi[1]))
    if j.kind == "ball":
        return cpl.SphericalCoupling(None if j.cone is None else [0.0, 0.0, 1.0], j.cone)
    if j.kind == "surface_point":
        return cpl.SplinePointCoupling(point_surface(j.surface))
    from .joints.spline_curve import SplineCurveJoint

    curve = SplineCurveJoint(np.asarray(j.curve, dtype=float))
    if j.kind == "curve_point":
        return cpl.SplinePointCoupling(curve)
    return cpl.SplineCurveCoupling(curve, value=0.5 * (curve.lower[0] + curve.upper[0]))


def point_surface(points):
    """The spline surface joint (seed 000 eq. 25, :class:`core.joints.spline_surface.
    SplineJoint`, n = 2) whose translation is the uniform cubic B-spline surface of control
    points ``points: (n1, n2, 3)`` (knots spaced 1, coordinates in ``[0, n1 - 3] x [0, n2 -
    3]``, no rotation): the surface Blender draws for an order-4 NURBS surface of those
    points without endpoints."""
    from .joints.spline_surface import DEFAULT_BASIS_TWISTS, SplineJoint

    P = np.asarray(points, dtype=float)
    knots = [np.arange(n + 4, dtype=float) - 3.0 for n in P.shape[:2]]
    return SplineJoint(knots, np.moveaxis(P, 2, 0), 4, DEFAULT_BASIS_TWISTS[:3])


def _coupled(linkage: Linkage, joints):
    """:class:`CoupledBodies` of the linkage's bodies joined by ``joints`` (LinkJoints; frame
    C of each joint on body 2, D on body 1)."""
    mass, inertia = _inertias(linkage)
    P = linkage.poses
    cj = [cpl.CouplingJoint(_coupling(j), linkage.index(j.body2), linkage.index(j.body1),
                            np.asarray(j.frame2, dtype=float), np.asarray(j.frame1, dtype=float))
          for j in joints]
    return cpl.CoupledBodies(mass, inertia, P[:, :3, 3], P[:, :3, :3], cj)


def _coupling_labels(joints, sim) -> list:
    """One label per bilateral row of :meth:`CoupledBodies.bilateral_jacobian`."""
    out = []
    for j, jt in zip(joints, sim.joints):
        out += [f"joint {j.name!r} ({j.kind}): its {'rotation' if c.rotary else 'position'} "
                f"constraint {k}" for k, c in enumerate(jt.coupling.constraints) if c.bilateral]
    return out


def _limit_violation(coupling) -> float:
    """Deepest violation of the coupling's coordinate ranges and reach cone (m / rad)."""
    worst = 0.0
    for c in coupling.coordinates:
        if c.limit is not None:
            worst = max(worst, c.min - c.value, c.value - c.max)
    if isinstance(coupling, cpl.SphericalCoupling) and coupling.cone is not None:
        worst = max(worst, -coupling.constraints[-1].distance)
    return max(worst, 0.0)


@dataclass
class DynamicSystem:
    """A linkage as its dynamics solver's system (see :func:`dynamic_system`).

    ``solver``: ``"faure"`` or ``"couplings"``; ``sim``: the Faure :class:`Assembly` or the
    :class:`CoupledBodies` of the ``joints`` it solves; ``driver``: index of the body moved
    by the driver's input (zero inverse mass), or -1 when released; ``check``: the same
    solver's system of the joints between the world and the driver (only the input moves
    them; measured, not solved), or None."""

    linkage: Linkage
    solver: str
    sim: object
    joints: list
    driver: int
    check: object = None

    def errors(self, measured: bool = True) -> np.ndarray:
        """Bilateral constraint errors of the solved joints then (``measured``) the measured
        ones (m / rad), one label each in :meth:`labels` order."""
        sim, chk = self.sim, self.check if measured else None
        if self.solver == "faure":
            err = np.abs(sim.errors())
            if chk is not None:
                err = np.concatenate([err, np.abs(chk.errors(sim.p, sim.R))])
            return err
        out = []
        for system in (sim, chk):
            if system is None:
                continue
            system.p, system.R = sim.p, sim.R
            for jt in system.joints:
                TCD, TGD, errC, vel = system.joint_state(jt)
                jt.coupling.update_constraints(TGD, TCD, errC, vel, False)
                out += [abs(float(c.wrench @ errC)) for c in jt.coupling.constraints
                        if c.bilateral]
        return np.array(out)

    def labels(self) -> list:
        measured = [j for j in self.linkage.joints if j not in self.joints]
        if self.solver == "faure":
            return _faure_labels(self.joints) + _faure_labels(measured)
        return (_coupling_labels(self.joints, self.sim) +
                (_coupling_labels(measured, self.check) if self.check is not None else []))

    def move_driver(self, T, h: float) -> None:
        """Give the driver the displacement (Faure) or velocity (couplings) that takes it to
        the world pose ``T: (4, 4)`` in the next step of ``h`` s."""
        d, sim = self.driver, self.sim
        step = np.concatenate([so3.log(T[:3, :3] @ sim.R[d].T), T[:3, 3] - sim.p[d]])
        if self.solver == "faure":
            sim.Dq[d] = step
        else:
            sim.u[d] = step / h


def dynamic_system(linkage: Linkage, solver: str | None = None,
                   driven: bool = False) -> DynamicSystem:
    """The linkage as its dynamics solver's system at the described configuration, after
    :func:`check_linkage` and the rank check of its constraint Jacobian (InvalidInputError
    naming the repeated constraints of a redundant loop). ``driven``: the driver (body or
    driving joint) becomes a kinematic body of zero inverse mass, moved by its input
    (:meth:`DynamicSystem.move_driver`); else the driver is released."""
    solver = check_linkage(linkage, solver)
    driver = linkage.driver_index() if driven else -1
    if driven and driver < 0:
        raise InvalidInputError("a driven simulation needs a driver: a driving body or a "
                                "driving hinge/slider joint")
    joints, measured = (_split_joints(linkage, driver) if driven
                        else (list(linkage.joints), []))
    if solver == "faure":
        sim = _faure_system(linkage, linkage.poses, joints)
        check = _faure_system(linkage, linkage.poses, measured) if measured else None
        J, labels = sim.jacobian(), _faure_labels(joints)
    else:
        sim = _coupled(linkage, joints)
        check = _coupled(linkage, measured) if measured else None
        J, labels = sim.bilateral_jacobian(), _coupling_labels(joints, sim)
    if driven:
        sim.inv_mass[driver] = 0.0
        sim.inv_inertia[driver] = 0.0
        keep = np.ones(J.shape[1], dtype=bool)
        keep[6 * driver:6 * driver + 6] = False          # the driver does not move
        J = J[:, np.flatnonzero(keep)]
    _redundancy_error(J, labels, "the linkage")
    return DynamicSystem(linkage, solver, sim, joints, driver, check)


def _check_closed(system: DynamicSystem) -> None:
    """After the first frame's steps (which correct the described configuration), a loop
    whose solved constraints are still off by more than :data:`CLOSURE_TOL` cannot close:
    raise InvalidInputError naming the worst constraint. (The joints between the world and
    a driver are its input's to keep: measured in the frames' errors, not refused.)"""
    err = system.errors(measured=False)
    if err.size and err.max() > CLOSURE_TOL:
        k = int(np.argmax(err))
        raise InvalidInputError(f"the loop does not close: {system.labels()[k]} stays off by "
                                f"{err[k]:.3g} (m or rad); check the joints' positions")


def _driver_path(driver_poses, nframes: int, substeps: int) -> np.ndarray:
    """The driver's pose at the end of every step, ``(nframes - 1, substeps, 4, 4)``, from its
    poses at the frames ``(F, 4, 4)``, F >= nframes: between frames k and k + 1 it moves by
    the constant body twist ``log(T_k^-1 T_k+1)`` (screw motion), landing on each frame's
    pose."""
    P = se3.check_transform(np.asarray(driver_poses, dtype=float), "driver poses")
    if P.ndim != 3 or P.shape[0] < nframes:
        raise InvalidInputError(f"driver poses must have shape (F, 4, 4) with F >= {nframes} "
                                f"(one per frame of the simulation), got {P.shape}")
    twists = se3.log(se3.inv(P[:nframes - 1]) @ P[1:nframes])               # (F-1, 6)
    frac = np.arange(1, substeps + 1) / substeps
    path = P[:nframes - 1, None] @ se3.exp(frac[None, :, None] * twists[:, None])
    path[:, -1] = P[1:nframes]
    return path


def frame_count(duration: float, fps: float) -> int:
    """Frames :func:`simulate_linkage` samples over ``duration`` s at ``fps``, frame 0
    included."""
    return int(np.floor(duration * fps + 1e-9)) + 1


def simulate_linkage(linkage: Linkage, duration: float, fps: float, substeps: int = 10,
                     progress=None, solver: str | None = None, cg_iterations: int = 50,
                     geometric_iterations: int = 5, tol: float = 1e-10,
                     driver_poses=None) -> LinkageMotion:
    """Simulate the linkage from rest at its described configuration under gravity and its
    springs for ``duration`` s, ``substeps`` steps per frame at ``fps`` frames per second,
    and sample it at every frame (frame 0 included).

    ``driver_poses: (F, 4, 4)``: the driver's world poses at the frames (its keys; F at least
    the number of frames sampled): the driver (body, or the body of the driving joint) is then
    a kinematic body of zero inverse mass that follows them (a screw motion between frames,
    :func:`_driver_path`) and pushes the rest; it starts at ``driver_poses[0]``, the loops
    closed there first by moving the other bodies (``geometric_iterations`` mass-weighted
    corrections: Faure's assembly or the couplings' position correction). ``None``: any
    driver is released and the linkage moves passively.

    Faure solver: Stoermer steps with the SHAKE-style correction along the start-of-step
    Jacobian (:meth:`Assembly.step` ``directions="start"``), CG capped at ``cg_iterations``.
    Couplings solver: :meth:`CoupledBodies.step` (semi-implicit Euler, unilateral limits with
    deadband and two-step engagement). ``progress(fraction) -> bool`` is called once per
    frame; False cancels (status ``"cancelled"``, the frames so far are kept). A redundant
    loop raises InvalidInputError naming the repeated constraints, a loop that cannot close
    (still off by more than :data:`CLOSURE_TOL` after the first frame) one naming the worst
    constraint; a diverging step raises SimulationError."""
    duration = real_number(duration, "duration", 0.0, low_open=True, advice="seconds")
    fps = real_number(fps, "fps", 0.0, low_open=True)
    substeps = whole_number(substeps, "substeps")
    nframes = frame_count(duration, fps)
    N = len(linkage.bodies)
    run = f"the linkage's run ({duration:g} s at {fps:g} fps)"
    check_record_size(nframes, 16 * N + 2, run)
    steps = (nframes - 1) * substeps
    if steps > MAX_LINKAGE_STEPS:
        raise InvalidInputError(f"{run} with {substeps} substeps per frame is {steps:.3g} "
                                f"steps, more than {MAX_LINKAGE_STEPS:.0e} (hours of "
                                "computing); shorten the duration, lower the frame rate or "
                                "use fewer substeps")
    h = 1.0 / (fps * substeps)
    t0 = time.perf_counter()
    poses = np.zeros((nframes, N, 4, 4))
    errors, violations = np.zeros(nframes), np.zeros(nframes)
    engagements, status, fastest = {}, "completed", 0.0
    path = None
    if driver_poses is not None:
        if linkage.driver_index() < 0:
            raise InvalidInputError("driver poses were given but the linkage has no driver; "
                                    "set a driving body or a driving joint")
        path = _driver_path(driver_poses, nframes, substeps)
        d = linkage.driver_index()
        bodies = list(linkage.bodies)
        bodies[d] = dataclasses.replace(bodies[d], T=np.asarray(driver_poses[0], dtype=float))
        linkage = dataclasses.replace(linkage, bodies=tuple(bodies))
    system = dynamic_system(linkage, solver, driven=path is not None)
    solver, sim = system.solver, system.sim
    if path is not None:                      # close the loops at the driver's first pose
        if solver == "faure":
            sim.correction(geometric_iterations, cg_iterations, tol)
        else:
            sim.correct_positions(geometric_iterations, tol)
    if solver == "faure":
        f = spring_forces(linkage, sim.p, sim.R)
        sim.set_velocity(np.zeros((N, 6)), h, sim.free_acceleration(f))

        def advance():
            return sim.step(h, spring_forces(linkage, sim.p, sim.R, sim.velocity()),
                            geometric_iterations, cg_iterations, tol, directions="start")
    else:
        state = {id(c): c.engaged for jt in sim.joints for c in jt.coupling.constraints}

        def advance():
            nonlocal fastest
            sim.step(h, spring_forces(linkage, sim.p, sim.R, sim.u))
            for j, jt in zip(system.joints, sim.joints):
                for k, c in enumerate(jt.coupling.constraints):
                    if c.bilateral:
                        continue
                    if c.engaged and not state[id(c)]:
                        key = f"{j.name}/{k}"
                        engagements[key] = engagements.get(key, 0) + 1
                    state[id(c)] = c.engaged
                    if c.limit is not None:
                        speed = abs(float(c.wrench @ sim.joint_state(jt)[3]))
                        fastest = max(fastest, speed)

    def sample(k):
        poses[k] = se3.from_rp(sim.R, sim.p)
        errors[k] = float(system.errors().max(initial=0.0))
        if solver == "couplings":
            violations[k] = max((_limit_violation(jt.coupling) for jt in sim.joints),
                                default=0.0)
    sample(0)
    steps, done = 0, 1
    for k in range(1, nframes):
        if progress is not None and not progress((k - 1) / max(nframes - 1, 1)):
            status = "cancelled"
            break
        try:
            for i in range(substeps):
                if path is not None:
                    system.move_driver(path[k - 1, i], h)
                advance()
                steps += 1
        except SimulationError as exc:
            raise SimulationError(f"the linkage's simulation failed at t = {k / fps:.3f} s: "
                                  f"{exc}; try more substeps") from exc
        sample(k)
        done = k + 1
        if k == 1:
            _check_closed(system)
    if progress is not None and status == "completed":
        progress(1.0)
    tol_limit = (max(cpl.Coupling.penetration_tol, cpl.Coupling.rotary_limit_tol) + fastest * h
                 if solver == "couplings" else 0.0)
    return LinkageMotion(np.arange(done) / fps, poses[:done], errors[:done], violations[:done],
                         engagements, tol_limit, status, solver, steps,
                         time.perf_counter() - t0)
