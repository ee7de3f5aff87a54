"""Joint couplings with bilateral and unilateral constraints (seed 002, ArtiSynth 4.10).

A coupling constrains the joint transform ``T_CD`` (ArtiSynth's name: the pose of frame C,
fixed in body A, relative to frame D, fixed in body B; ``T_D_C`` in this project's naming).
It owns a list of :class:`Constraint` s, each a wrench ``[moment; force]`` (project order)
in frame G, bilateral (``G_k v_CD = 0``, eq. 4.8) or unilateral (``N_l v_CD >= 0``, eq. 4.9,
engaged with sign ``E_l``), and optional :class:`Coordinate` s with ranges whose limits are
enforced by unilateral constraints. Every coupling implements the four duties of 4.10.4:

* :meth:`Coupling.coordinates_to_TCD` (``coordinatesToTCD``)
* :meth:`Coupling.TCD_to_coordinates` (``TCDToCoordinates``; angles via ``nearest_angle``)
* :meth:`Coupling.project_to_constraints` (``projectToConstraints``: ``T_CD -> T_GD``)
* :meth:`Coupling.update_constraints` (``updateConstraints``: wrenches, and for
  unilateral constraints that are not coordinate limits the engaged/distance values)

The wrench derivatives ``dotWrenchG`` of the manual are not kept: :class:`CoupledBodies`
maps every wrench to world-frame rows re-evaluated at each step, and the manual allows
leaving the derivative terms at zero.

:class:`CoupledBodies` runs them: velocity-level stepping with the bilateral rows as
equalities and the engaged unilateral rows as an active set (non-negative multipliers),
then position correction ``G dq = -d_g`` (eq. 4.12) and ``N dq >= -d_n`` with a deadband
(move by ``-d - tol``), engagement when a limit is crossed and disengagement only when
``d > 0`` and ``d_dot > 0`` after at least two engaged steps (eq. 4.17). All linear solves
go through :func:`core.maximal.solver.project`.
"""

from dataclasses import dataclass

import numpy as np
import scipy.optimize as opt

from ..errors import InvalidInputError, NonFiniteError
from ..lie import se3, so3
from .solver import (apply_displacement, project, rigid_jacobian, step_failure,
                     world_inverse_mass)

__all__ = ["Constraint", "Coordinate", "Coupling", "HingeCoupling", "SlottedHingeCoupling",
           "CylindricalCoupling", "SphericalCoupling", "SplineCurveCoupling", "SliderCoupling",
           "FixedCoupling", "PointCoupling", "FlatPointCoupling", "SplinePointCoupling",
           "CoupledBodies",
           "CouplingJoint", "nearest_angle"]

TWO_PI = 2.0 * np.pi


def nearest_angle(phi, current):
    """The angle ``phi + 2 pi k`` nearest to ``current`` (``CoordinateInfo.nearestAngle``)."""
    return float(phi + TWO_PI * np.round((current - phi) / TWO_PI))


def _wrench(m=(0.0, 0.0, 0.0), f=(0.0, 0.0, 0.0)):
    return np.concatenate([np.asarray(m, dtype=float), np.asarray(f, dtype=float)])


@dataclass
class Constraint:
    """One constraint wrench ``[moment; force]`` in frame G (ArtiSynth RigidBodyConstraint).

    ``engaged``: 0, 1 or -1 (unilateral only; bilateral rows are always active);
    ``distance``: signed distance to the admissible boundary (negative = penetration);
    ``engaged_steps``: steps since engagement; ``limit``: index of the coordinate whose
    range it enforces, or None.
    """

    bilateral: bool
    rotary: bool
    wrench: np.ndarray
    constant: bool
    engaged: int = 0
    distance: float = 0.0
    engaged_steps: int = 0
    limit: int = None

    def set_wrench(self, m=(0.0, 0.0, 0.0), f=(0.0, 0.0, 0.0)):
        self.wrench = _wrench(m, f)


@dataclass
class Coordinate:
    """A joint coordinate with range ``[min, max]`` and its current ``value``."""

    min: float
    max: float
    value: float = 0.0
    angular: bool = False
    limit: int = None

    def nearest_angle(self, phi):
        return nearest_angle(phi, self.value)


def align_z(R):
    """Shortest rotation taking ``R``'s z axis to ``(0,0,1)``, applied to ``R``
    (ArtiSynth ``rotateZDirection``): the result is a rotation about z. ``(3,3) -> (3,3)``."""
    z = R[:, 2]
    axis = np.cross(z, [0.0, 0.0, 1.0])
    s, c = np.linalg.norm(axis), z[2]
    if s < 1e-300:
        if c > 0:
            return R.copy()
        return so3.exp(np.array([np.pi, 0.0, 0.0])) @ R
    return so3.exp(axis / s * np.arctan2(s, c)) @ R


class Coupling:
    """Base class: subclasses implement :meth:`initialize_constraints` and the four duties.

    Tolerances for the deadband: ``penetration_tol`` (linear, m) and ``rotary_limit_tol``
    (rotary, rad).
    """

    penetration_tol = 1e-4
    rotary_limit_tol = 1e-3

    def __init__(self):
        self.constraints = []
        self.coordinates = []
        self.initialize_constraints()

    # -- construction helpers (addConstraint / addCoordinate) -----------------------------
    def add_constraint(self, bilateral, rotary, wrench=None):
        c = Constraint(bool(bilateral), bool(rotary),
                       np.zeros(6) if wrench is None else np.asarray(wrench, dtype=float),
                       wrench is not None)
        self.constraints.append(c)
        return c

    def add_coordinate(self, lo=-np.inf, hi=np.inf, limit=None, angular=False, value=0.0):
        if not lo <= hi:
            raise InvalidInputError(f"coordinate range [{lo}, {hi}] is empty; pass min <= max")
        idx = len(self.coordinates)
        if limit is not None:
            if self.constraints[limit].bilateral:
                raise InvalidInputError("a coordinate limit must use a unilateral constraint")
            self.constraints[limit].limit = idx
        self.coordinates.append(Coordinate(float(lo), float(hi), float(value), angular, limit))
        return self.coordinates[-1]

    def set_range(self, index, lo, hi):
        """Change the range of coordinate ``index``."""
        if not lo <= hi:
            raise InvalidInputError(f"coordinate range [{lo}, {hi}] is empty; pass min <= max")
        self.coordinates[index].min, self.coordinates[index].max = float(lo), float(hi)

    @property
    def coordinate_values(self):
        return np.array([c.value for c in self.coordinates])

    # -- the duties ----------------------------------------------------------------------
    def initialize_constraints(self):
        raise NotImplementedError

    def coordinates_to_TCD(self, coords):
        """``T_CD: (4, 4)`` from coordinate values ``(ncoords,)``."""
        raise NotImplementedError

    def TCD_to_coordinates(self, TCD):
        """Coordinates ``(ncoords,)`` of a legal ``T_CD`` (angles by nearest_angle, unclipped)."""
        raise NotImplementedError

    def project_to_constraints(self, TCD):
        """``(T_GD, coords)``: the nearest ``T_CD`` satisfying the bilateral constraints."""
        raise NotImplementedError

    def update_constraints(self, TGD, TCD, errC, velGD, update_engaged):
        """Refresh non-constant wrenches (and, if ``update_engaged``, the engaged/distance
        values of unilateral constraints that are not coordinate limits). Default: nothing
        (all wrenches constant)."""

    # -- engagement rules (4.10.2) -------------------------------------------------------
    def update_engaged(self, cons, dist, dmin, dmax, velGD, change=True):
        """ArtiSynth's ``updateEngaged``: inadmissible region ``dist < dmin`` or
        ``dist > dmax``; engage on entry, disengage only when ``d > 0`` and ``d_dot > 0``
        (eq. 4.17) and the constraint has been engaged for at least two steps. With
        ``change=False`` only the distance is refreshed (used inside position correction)."""
        if cons.engaged == 0 and change:
            if dist < dmin:
                cons.engaged, cons.engaged_steps = 1, 0
            elif dist > dmax:
                cons.engaged, cons.engaged_steps = -1, 0
        if cons.engaged == 0:
            cons.distance = min(dist - dmin, dmax - dist)
            return
        d = dist - dmin if cons.engaged == 1 else dmax - dist
        cons.distance = d
        speed = cons.engaged * float(cons.wrench @ velGD)
        if change and d > 0 and speed > 0 and cons.engaged_steps >= 2:
            cons.engaged, cons.engaged_steps = 0, 0

    def update_limits(self, velGD, change=True):
        """Engagement and distance of the coordinate-limit constraints (ArtiSynth does this
        itself for LIMIT constraints)."""
        for coord in self.coordinates:
            if coord.limit is not None:
                self.update_engaged(self.constraints[coord.limit], coord.value, coord.min,
                                    coord.max, velGD, change)

    def tolerance(self, cons):
        return self.rotary_limit_tol if cons.rotary else self.penetration_tol


# ------------------------------------------------------------------------------------------
# concrete couplings
# ------------------------------------------------------------------------------------------
class HingeCoupling(Coupling):
    """Rotation about the z axis of D; coordinate theta (4.10.4's example coupling)."""

    def __init__(self, lo=-np.inf, hi=np.inf):
        super().__init__()
        self.set_range(0, lo, hi)

    def initialize_constraints(self):
        for k in range(3):
            self.add_constraint(True, False, _wrench(f=np.eye(3)[k]))
        self.add_constraint(True, True, _wrench(m=(1.0, 0, 0)))
        self.add_constraint(True, True, _wrench(m=(0, 1.0, 0)))
        lim = self.add_constraint(False, True, _wrench(m=(0, 0, 1.0)))
        self.add_coordinate(limit=self.constraints.index(lim), angular=True)

    def coordinates_to_TCD(self, coords):
        return se3.from_rp(so3.exp(np.array([0.0, 0.0, coords[0]])), np.zeros(3))

    def TCD_to_coordinates(self, TCD):
        return np.array([self.coordinates[0].nearest_angle(np.arctan2(TCD[1, 0], TCD[0, 0]))])

    def project_to_constraints(self, TCD):
        TGD = se3.from_rp(align_z(TCD[:3, :3]), np.zeros(3))
        return TGD, self.TCD_to_coordinates(TGD)


class SlottedHingeCoupling(Coupling):
    """The manual's worked example (4.10.5): translation x along D's x axis and rotation
    theta about D's z axis, ``T_CD = (Rz(theta), (x, 0, 0))`` (eq. 3.24); x in [-1, 1],
    theta in [-2 pi, 2 pi] by default."""

    X, THETA = 0, 1

    def __init__(self, x_range=(-1.0, 1.0), theta_range=(-TWO_PI, TWO_PI)):
        super().__init__()
        self.set_range(self.X, *x_range)
        self.set_range(self.THETA, *theta_range)

    def initialize_constraints(self):
        self.add_constraint(True, False)                              # y of D, in G
        self.add_constraint(True, False, _wrench(f=(0, 0, 1.0)))
        self.add_constraint(True, True, _wrench(m=(1.0, 0, 0)))
        self.add_constraint(True, True, _wrench(m=(0, 1.0, 0)))
        self.add_constraint(False, False)                             # x limit
        self.add_constraint(False, True, _wrench(m=(0, 0, 1.0)))      # theta limit
        self.add_coordinate(-1.0, 1.0, limit=4)
        self.add_coordinate(-TWO_PI, TWO_PI, limit=5, angular=True)

    def coordinates_to_TCD(self, coords):
        return se3.from_rp(so3.exp(np.array([0.0, 0.0, coords[1]])), [coords[0], 0.0, 0.0])

    def TCD_to_coordinates(self, TCD):
        theta = np.arctan2(TCD[1, 0], TCD[0, 0])
        return np.array([TCD[0, 3], self.coordinates[self.THETA].nearest_angle(theta)])

    def project_to_constraints(self, TCD):
        TGD = se3.from_rp(align_z(TCD[:3, :3]), [TCD[0, 3], 0.0, 0.0])
        return TGD, self.TCD_to_coordinates(TGD)

    def update_constraints(self, TGD, TCD, errC, velGD, update_engaged):
        s, c = TGD[1, 0], TGD[0, 0]
        self.constraints[0].set_wrench(f=(s, c, 0.0))                 # D's y axis seen in G
        # x limit: D's x axis seen in G, so that x_dot = N . v_GD (eq. 4.19)
        self.constraints[4].set_wrench(f=(c, -s, 0.0))


class CylindricalCoupling(Coupling):
    """Translation z along and rotation theta about D's z axis (4.10.1's example)."""

    def __init__(self, z_range=(-np.inf, np.inf), theta_range=(-np.inf, np.inf)):
        super().__init__()
        self.set_range(0, *z_range)
        self.set_range(1, *theta_range)

    def initialize_constraints(self):
        self.add_constraint(True, False, _wrench(f=(1.0, 0, 0)))
        self.add_constraint(True, False, _wrench(f=(0, 1.0, 0)))
        self.add_constraint(True, True, _wrench(m=(1.0, 0, 0)))
        self.add_constraint(True, True, _wrench(m=(0, 1.0, 0)))
        self.add_constraint(False, False, _wrench(f=(0, 0, 1.0)))
        self.add_constraint(False, True, _wrench(m=(0, 0, 1.0)))
        self.add_coordinate(limit=4)
        self.add_coordinate(limit=5, angular=True)

    def coordinates_to_TCD(self, coords):
        return se3.from_rp(so3.exp(np.array([0.0, 0.0, coords[1]])), [0.0, 0.0, coords[0]])

    def TCD_to_coordinates(self, TCD):
        theta = np.arctan2(TCD[1, 0], TCD[0, 0])
        return np.array([TCD[2, 3], self.coordinates[1].nearest_angle(theta)])

    def project_to_constraints(self, TCD):
        TGD = se3.from_rp(align_z(TCD[:3, :3]), [0.0, 0.0, TCD[2, 3]])
        return TGD, self.TCD_to_coordinates(TGD)


class SphericalCoupling(Coupling):
    """Ball joint, coordinates the exponential coordinates ``r`` of the rotation of C in D
    (seed 003), with an optional reach cone ``g(r) >= 0`` (seed 003 eqs. 50-52) enforced by a
    unilateral constraint that is *not* a coordinate limit: its wrench
    ``N = [J_r(r)^-T grad g; 0]`` gives ``g_dot = N . v_GD`` (eq. 61's impulse direction
    expressed on the body angular velocity), and :meth:`update_constraints` sets its
    engaged and distance values."""

    def __init__(self, cone_axis=None, half_angle=None):
        self.cone = None
        super().__init__()
        if cone_axis is not None:
            if half_angle is None:
                raise InvalidInputError("SphericalCoupling: a reach cone needs half_angle")
            self.cone = (np.asarray(cone_axis, dtype=float), float(half_angle))
            self.add_constraint(False, True)

    def initialize_constraints(self):
        for k in range(3):
            self.add_constraint(True, False, _wrench(f=np.eye(3)[k]))
        for k in range(3):
            self.add_coordinate()

    def coordinates_to_TCD(self, coords):
        return se3.from_rp(so3.exp(np.asarray(coords, dtype=float)), np.zeros(3))

    def TCD_to_coordinates(self, TCD):
        return so3.log(TCD[:3, :3])

    def project_to_constraints(self, TCD):
        TGD = se3.from_rp(TCD[:3, :3], np.zeros(3))
        return TGD, self.TCD_to_coordinates(TGD)

    def update_constraints(self, TGD, TCD, errC, velGD, update_engaged):
        if self.cone is None:
            return
        from .. import expcoords

        axis, half = self.cone
        r = so3.log(TGD[:3, :3])
        grad = expcoords.reach_cone_gradient(r, axis, half)
        cons = self.constraints[-1]
        cons.set_wrench(m=so3.right_jacobian_inv(r).T @ grad)
        # the distance is refreshed on every call (position correction needs it); the
        # engaged value changes only when update_engaged is set
        g = float(expcoords.reach_cone_value(r, axis, half))
        self.update_engaged(cons, g, 0.0, np.inf, velGD, change=update_engaged)


class SplineCurveCoupling(Coupling):
    """A fitted 1-DOF spline curve joint used as a constraint between two bodies:
    ``T_CD = G(s)`` of a :class:`core.joints.spline_curve.SplineCurveJoint` (seed 000
    eqs. 21-24). Five bilateral wrenches span the annihilator of ``S(s)`` (updated each
    step), the coordinate ``s`` is limited to the joint's knot range with the limit wrench
    ``S / |S|^2`` (so that ``s_dot = N . v_GD``, eq. 4.19), and ``project_to_constraints``
    moves ``T_CD`` to the nearest point of the spline: ``s* = argmin |log(G(s)^-1 T_CD)|_W``
    (rotation weighted by ``length_scale``), by Gauss-Newton from the current value with a
    grid search plus scipy's bounded scalar minimizer as the fallback.
    """

    def __init__(self, joint, length_scale=1.0, search_window=None, value=None):
        self.joint = joint
        self.length_scale = float(length_scale)
        lo, hi = float(joint.lower[0]), float(joint.upper[0])
        self.window = (hi - lo) * 0.25 if search_window is None else float(search_window)
        super().__init__()
        self.set_range(0, lo, hi)
        self.coordinates[0].value = lo if value is None else float(value)

    def initialize_constraints(self):
        for _ in range(5):
            self.add_constraint(True, False)
        self.add_constraint(False, False)
        self.add_coordinate(limit=5)

    def coordinates_to_TCD(self, coords):
        return self.joint.transform(np.array([coords[0]]))

    def _distance2(self, TCD, s):
        G = self.joint.transforms(np.atleast_1d(s)[:, None])
        xi = se3.log(np.einsum("nij,jk->nik", se3.inv(G), TCD))
        return (self.length_scale ** 2 * (xi[:, :3] ** 2).sum(1) + (xi[:, 3:] ** 2).sum(1))

    def TCD_to_coordinates(self, TCD, iterations=20):
        """Nearest point of the curve: Gauss-Newton on ``xi(s) = log(G(s)^-1 T_CD)`` with
        ``dxi/ds = -Jl^-1(xi) S(s)`` from the current value; if it does not settle, a grid
        search in the window refined by scipy's bounded scalar minimizer."""
        s = self.coordinates[0].value
        wgt = np.array([self.length_scale ** 2] * 3 + [1.0] * 3)
        for _ in range(iterations):
            G, S, _ = self.joint.evaluate(np.array([s]))
            xi = se3.log(se3.inv(G) @ TCD)
            a = se3.left_jacobian_inv(xi) @ S[:, 0]
            step = float((a * wgt) @ xi) / float((a * wgt) @ a)
            step = float(np.clip(step, -self.window, self.window))
            s += step
            if abs(step) < 1e-13:
                return np.array([s])
        c = self.coordinates[0]
        lo = max(c.value - self.window, self.joint.lower[0] - self.window)
        hi = min(c.value + self.window, self.joint.upper[0] + self.window)
        grid = np.linspace(lo, hi, 41)
        k = int(np.argmin(self._distance2(TCD, grid)))
        a, b = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
        res = opt.minimize_scalar(lambda x: float(self._distance2(TCD, x)[0]), bounds=(a, b),
                                  method="bounded", options={"xatol": 1e-12})
        return np.array([res.x])

    def project_to_constraints(self, TCD):
        s = self.TCD_to_coordinates(TCD)
        return self.coordinates_to_TCD(s), s

    def update_constraints(self, TGD, TCD, errC, velGD, update_engaged):
        S = self.joint.jacobian(np.array([self.coordinates[0].value]))[:, 0]
        # orthonormal basis of the wrenches annihilating S: the last 5 left singular vectors
        U = np.linalg.svd(S[:, None], full_matrices=True)[0]
        for k in range(5):
            self.constraints[k].wrench = U[:, k + 1].copy()
        self.constraints[5].wrench = S / float(S @ S)


class SliderCoupling(Coupling):
    """Translation z along D's z axis, no turning (a prismatic joint): ``T_CD = (I, (0, 0,
    z))``; five bilateral wrenches, the z range enforced by a unilateral force along z."""

    def __init__(self, z_range=(-np.inf, np.inf)):
        super().__init__()
        self.set_range(0, *z_range)

    def initialize_constraints(self):
        for k in range(2):
            self.add_constraint(True, False, _wrench(f=np.eye(3)[k]))
        for k in range(3):
            self.add_constraint(True, True, _wrench(m=np.eye(3)[k]))
        self.add_constraint(False, False, _wrench(f=(0, 0, 1.0)))
        self.add_coordinate(limit=5)

    def coordinates_to_TCD(self, coords):
        return se3.from_rp(np.eye(3), [0.0, 0.0, coords[0]])

    def TCD_to_coordinates(self, TCD):
        return np.array([TCD[2, 3]])

    def project_to_constraints(self, TCD):
        coords = self.TCD_to_coordinates(TCD)
        return self.coordinates_to_TCD(coords), coords


class FixedCoupling(Coupling):
    """C held at D: six bilateral wrenches, no coordinates (``T_CD = I``)."""

    def initialize_constraints(self):
        for k in range(3):
            self.add_constraint(True, False, _wrench(f=np.eye(3)[k]))
        for k in range(3):
            self.add_constraint(True, True, _wrench(m=np.eye(3)[k]))

    def coordinates_to_TCD(self, coords):
        return np.eye(4)

    def TCD_to_coordinates(self, TCD):
        return np.zeros(0)

    def project_to_constraints(self, TCD):
        return np.eye(4), np.zeros(0)


class PointCoupling(Coupling):
    """The origin of frame C held on a path ``p(s)`` in frame D, free to turn: a curve or line
    (``n = 1`` coordinate) or a surface or plane (``n = 2``). Subclasses give :meth:`point`
    and :meth:`nearest`.

    Coordinates: ``s`` (n values, limited to ``[lo, hi]``) then the exponential coordinates
    of C's rotation in D (free, as :class:`SphericalCoupling`); ``T_CD = (exp(r), p(s))``.
    Bilateral wrenches: the forces along the ``3 - n`` unit normals of the path (left
    singular vectors of ``dp/ds``, ``(3, n)``, orthogonal to its columns), seen in G; the
    limit of ``s_a`` has the force ``(dp/ds)^+`` row ``a``, so that ``s_dot = N . v_GD`` at
    the nearest point (eq. 4.19). :meth:`project_to_constraints` keeps the rotation and moves
    the origin to the nearest point of the path, ``s* = argmin |p(s) - p_C|``.
    """

    def __init__(self, n, lo, hi, value=None):
        self.n = int(n)
        if self.n not in (1, 2):
            raise InvalidInputError(f"{type(self).__name__}: a path of 1 (curve) or 2 (surface) "
                                    f"coordinates is needed, got {self.n}")
        self.lo = np.asarray(lo, dtype=float).reshape(self.n)
        self.hi = np.asarray(hi, dtype=float).reshape(self.n)
        super().__init__()
        for a in range(self.n):
            self.set_range(a, self.lo[a], self.hi[a])
            mid = 0.5 * (self.lo[a] + self.hi[a]) if np.isfinite(self.hi[a] - self.lo[a]) else 0.0
            self.coordinates[a].value = mid if value is None else float(np.ravel(value)[a])

    def initialize_constraints(self):
        n = self.n
        for _ in range(3 - n):
            self.add_constraint(True, False)
        for _ in range(n):
            self.add_constraint(False, False)
        for a in range(n):
            self.add_coordinate(limit=3 - n + a)
        for _ in range(3):
            self.add_coordinate(angular=True)

    def point(self, s):
        """``(p (3,), dp/ds (3, n))`` of the path at ``s: (n,)`` in frame D."""
        raise NotImplementedError

    def nearest(self, x, s):
        """``s: (n,)`` of the path's point nearest ``x: (3,)`` (in D), from the guess ``s``."""
        raise NotImplementedError

    def coordinates_to_TCD(self, coords):
        coords = np.asarray(coords, dtype=float)
        return se3.from_rp(so3.exp(coords[self.n:]), self.point(coords[:self.n])[0])

    def TCD_to_coordinates(self, TCD):
        s = self.nearest(TCD[:3, 3], self.coordinate_values[:self.n])
        return np.concatenate([s, so3.log(TCD[:3, :3])])

    def project_to_constraints(self, TCD):
        coords = self.TCD_to_coordinates(TCD)
        return se3.from_rp(TCD[:3, :3], self.point(coords[:self.n])[0]), coords

    def update_constraints(self, TGD, TCD, errC, velGD, update_engaged):
        n = self.n
        _, T = self.point(self.coordinate_values[:n])
        U = np.linalg.svd(T, full_matrices=True)[0]
        Rt = TGD[:3, :3].T                                   # D axes -> G axes
        for k in range(3 - n):
            self.constraints[k].set_wrench(f=Rt @ U[:, n + k])
        rows = np.linalg.pinv(T)                             # (n, 3): s_dot = rows @ p_dot
        for a in range(n):
            self.constraints[3 - n + a].set_wrench(f=Rt @ rows[a])


class FlatPointCoupling(PointCoupling):
    """The origin of C on a line (``axes: (3, 1)``) or plane (``axes: (3, 2)``, orthonormal
    columns) through D's origin: ``p(s) = axes s``, any rotation; ``s`` limited to
    ``[lo, hi]`` (default unlimited). The nearest point is ``axes^T x``."""

    def __init__(self, axes, lo=None, hi=None):
        self.axes = np.asarray(axes, dtype=float).reshape(3, -1)
        n = self.axes.shape[1]
        super().__init__(n, np.full(n, -np.inf) if lo is None else lo,
                         np.full(n, np.inf) if hi is None else hi)

    def point(self, s):
        return self.axes @ np.asarray(s, dtype=float), self.axes

    def nearest(self, x, s):
        return self.axes.T @ x


class SplinePointCoupling(PointCoupling):
    """:class:`PointCoupling` on the path of a spline joint: the translation ``p(s)`` of
    ``G(s)`` of a :class:`core.joints.spline_curve.SplineCurveJoint` (n = 1) or a
    :class:`core.joints.spline_surface.SplineJoint` with n = 2 (seed 000 eqs. 21, 25),
    ``s`` limited to the joint's knot range; ``dp/ds = R(s) S_v(s)``. The nearest point:
    Gauss-Newton from the current value (steps clipped to a quarter of the range), restarted
    from the best of a grid over the range if it does not settle.
    """

    def __init__(self, joint, value=None):
        self.joint = joint
        super().__init__(joint.nq, joint.lower, joint.upper, value)

    def point(self, s):
        G, S, _ = self.joint.evaluate(np.asarray(s, dtype=float))
        return G[:3, 3], G[:3, :3] @ S[3:, :]

    def _gauss_newton(self, x, s, iterations=30):
        """``argmin |p(s) - x|`` from ``s: (n,)``: ``(s, converged)``."""
        window = 0.25 * (self.hi - self.lo)
        for _ in range(iterations):
            p, T = self.point(s)
            step = np.clip(np.linalg.lstsq(T, x - p, rcond=None)[0], -window, window)
            s = s + step
            if np.abs(step).max() < 1e-13:
                return s, True
        return s, False

    def nearest(self, x, s):
        s, ok = self._gauss_newton(x, s)
        if not ok:
            axes = [np.linspace(lo, hi, 17) for lo, hi in zip(self.lo, self.hi)]
            grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, self.n)
            G = self.joint.transforms(grid)
            s, _ = self._gauss_newton(x, grid[int(np.argmin(np.linalg.norm(G[:, :3, 3] - x,
                                                                           axis=1)))])
        return s


# ------------------------------------------------------------------------------------------
# the system
# ------------------------------------------------------------------------------------------
@dataclass
class CouplingJoint:
    """A coupling between body ``body_a`` (frame C at ``T_A_C``) and ``body_b`` (frame D at
    ``T_B_D``; ``body_b = -1`` for the world, ``T_B_D`` then being D's world pose)."""

    coupling: Coupling
    body_a: int
    body_b: int
    T_A_C: np.ndarray
    T_B_D: np.ndarray


class CoupledBodies:
    """Free rigid bodies joined by couplings; velocities ``[w; v]`` in world axes.

    Args:
        mass ``(N,)``, inertia ``(N, 3, 3)`` (body axes), p ``(N, 3)``, R ``(N, 3, 3)``,
        joints: list of :class:`CouplingJoint`; u: optional ``(N, 6)`` initial velocities.
    """

    def __init__(self, mass, inertia, p, R, joints, u=None):
        self.mass = np.asarray(mass, dtype=float).reshape(-1)
        N = self.mass.shape[0]
        self.inertia = np.asarray(inertia, dtype=float).reshape(N, 3, 3)
        if np.any(self.mass <= 0):
            raise InvalidInputError("CoupledBodies: masses must be > 0")
        self.inv_mass = 1.0 / self.mass
        self.inv_inertia = np.linalg.inv(self.inertia)
        self.p = np.array(p, dtype=float).reshape(N, 3)
        self.R = so3.check_rotation(np.array(R, dtype=float).reshape(N, 3, 3), "R").copy()
        self.u = np.zeros((N, 6)) if u is None else np.array(u, dtype=float).reshape(N, 6)
        for j in joints:
            if not (0 <= j.body_a < N and -1 <= j.body_b < N) or j.body_a == j.body_b:
                raise InvalidInputError("CouplingJoint: body_a must be a body, body_b a "
                                        f"different body or -1; got {j.body_a}, {j.body_b}")
            se3.check_transform(j.T_A_C, "T_A_C")
            se3.check_transform(j.T_B_D, "T_B_D")
        self.joints = list(joints)
        for j in self.joints:  # coordinates from the initial configuration
            TCD = self._TCD(j)
            _, coords = j.coupling.project_to_constraints(TCD)
            for c, val in zip(j.coupling.coordinates, coords):
                c.value = float(val)

    # -- frames ------------------------------------------------------------------------
    def _world(self, body, T):
        return T if body < 0 else se3.from_rp(self.R[body], self.p[body]) @ T

    def _TCD(self, j):
        return se3.inv(self._world(j.body_b, j.T_B_D)) @ self._world(j.body_a, j.T_A_C)

    def joint_state(self, j):
        """``(T_CD, T_GD, errC, velGD)`` of joint ``j`` (updates its coordinates)."""
        TCD = self._TCD(j)
        TGD, coords = j.coupling.project_to_constraints(TCD)
        for c, val in zip(j.coupling.coordinates, coords):
            c.value = float(val)
        errC = se3.log(se3.inv(TGD) @ TCD)
        rows_a, rows_b = self._rows(j, np.eye(6))
        vel = rows_a @ self.u[j.body_a] + (rows_b @ self.u[j.body_b] if j.body_b >= 0 else 0.0)
        return TCD, TGD, errC, vel

    def _rows(self, j, W):
        """World rows ``(k, 6)`` for body A and body B of wrenches ``W: (k, 6)`` in frame C."""
        TWC = self._world(j.body_a, j.T_A_C)
        Rc, oc = TWC[:3, :3], TWC[:3, 3]
        m = W[:, :3] @ Rc.T
        f = W[:, 3:] @ Rc.T
        # r x f for every row: f @ hat(r)^T
        ra = np.concatenate([m + f @ so3.hat(oc - self.p[j.body_a]).T, f], axis=1)
        pb = self.p[j.body_b] if j.body_b >= 0 else np.zeros(3)
        rb = -np.concatenate([m + f @ so3.hat(oc - pb).T, f], axis=1)
        return ra, rb

    def _assemble(self, update_engaged):
        """Rows of all bilateral and engaged unilateral constraints, with the position
        right-hand side; returns ``(J, b_pos, unilateral_mask)``."""
        ba, bb, Ra, Rb, rhs, uni = [], [], [], [], [], []
        for j in self.joints:
            TCD, TGD, errC, vel = self.joint_state(j)
            cp = j.coupling
            cp.update_constraints(TGD, TCD, errC, vel, update_engaged)
            cp.update_limits(vel, update_engaged)
            W, b, u = [], [], []
            for cons in cp.constraints:
                if cons.bilateral:
                    W.append(cons.wrench)
                    b.append(-float(cons.wrench @ errC))
                    u.append(False)
                elif cons.engaged:
                    W.append(cons.engaged * cons.wrench)
                    b.append(max(-cons.distance - cp.tolerance(cons), 0.0))
                    u.append(True)
            if not W:
                continue
            ra, rb = self._rows(j, np.array(W))
            ba += [j.body_a] * len(W)
            bb += [j.body_b] * len(W)
            Ra.append(ra)
            Rb.append(rb)
            rhs += b
            uni += u
        N = self.mass.shape[0]
        stack = (lambda x: np.concatenate(x)) if Ra else (lambda x: np.zeros((0, 6)))
        J = rigid_jacobian(np.array(ba, dtype=int), stack(Ra), np.array(bb, dtype=int),
                           stack(Rb), N)
        return J, np.array(rhs), np.array(uni, dtype=bool)

    def bilateral_jacobian(self):
        """Sparse ``(m, 6N)`` rows of the bilateral constraints at the current configuration
        (world ``[w; v]`` layout, joints in order, each joint's bilateral wrenches in order);
        for a rank check of the loop."""
        J, _, uni = self._assemble(False)
        return J[np.flatnonzero(~uni)]

    def inverse_mass(self):
        """Sparse ``M^-1: (6N, 6N)`` from ``inv_mass: (N,)`` and ``inv_inertia: (N, 3, 3)``
        (body axes); a body given zero for both is kinematic: the solves do not move it,
        its velocity ``u`` moves it (a keyed driver)."""
        return world_inverse_mass(self.R, self.inv_inertia, self.inv_mass)

    def _solve_active(self, J, Minv, b, uni):
        """Equalities for bilateral rows, active set for unilateral rows (multipliers >= 0)."""
        active = np.ones(J.shape[0], dtype=bool)
        for _ in range(int(uni.sum()) + 1):
            res = project(J[active], Minv, b[active], method="direct")
            lam = np.zeros(J.shape[0])
            lam[active] = res.lam
            pulling = active & uni & (lam < 0)
            if not pulling.any():
                return res.dx
            active &= ~pulling
        return res.dx

    def _forces(self, f_ext):
        """Gyroscopic and external wrenches ``(N, 6)`` (world)."""
        w = self.u[:, :3]
        Iw = np.einsum("nij,njk,nlk,nl->ni", self.R, self.inertia, self.R, w)
        F = np.zeros_like(self.u)
        F[:, :3] = -np.einsum("nij,nj->ni", so3.hat(w), Iw)
        if f_ext is not None:
            F += np.asarray(f_ext, dtype=float).reshape(F.shape)
        return F.reshape(-1)

    def step(self, h, f_ext=None, position_iterations=2, integrator="euler", tol=1e-13):
        """One step with engagement bookkeeping.

        ``f_ext: (N, 6)`` world wrenches ``[torque; force]`` at the centres of mass.
        ``integrator="euler"`` (ArtiSynth-like, first order): velocity solve with the
        constraint rows at the start of the step, position update, then up to
        ``position_iterations`` mass-weighted position corrections ``G dq = -d``.
        ``integrator="rattle"`` (second order for bilateral constraints, used by the
        cross-validation): half kick, drift, SHAKE correction along the start-of-step rows
        (the correction enters the velocity), half kick and velocity projection onto the
        end-of-step rows; engaged unilateral rows are handled as in ``"euler"``.
        A step that diverges (non-finite state or solves, a constraint system made singular)
        raises SimulationError naming h, the fastest body and a smaller step.
        """
        if not (np.isfinite(h) and h > 0):
            raise InvalidInputError(f"CoupledBodies.step: h must be positive, got {h}")
        if integrator not in ("euler", "rattle"):
            raise InvalidInputError("CoupledBodies.step: integrator must be 'euler' or 'rattle'")
        speed = np.abs(self.u).max(axis=1)
        try:
            with np.errstate(over="ignore", invalid="ignore"):   # the state is checked
                self._step(h, f_ext, position_iterations, integrator, tol)
        except (ArithmeticError, ValueError) as err:
            failure = step_failure("CoupledBodies.step", h, speed, err)
            if failure is None:
                raise
            raise failure from err

    def _step(self, h, f_ext, position_iterations, integrator, tol):
        """:meth:`step` after validation; numerical failures propagate (a non-finite state
        raises NonFiniteError)."""
        Minv = self.inverse_mass()
        J, _, uni = self._assemble(True)  # engagement from the current velocities
        if integrator == "euler":
            u_free = self.u.reshape(-1) + h * (Minv @ self._forces(f_ext))
            du = self._solve_active(J, Minv, -(J @ u_free), uni)
            self.u = (u_free + du).reshape(-1, 6)
            self.p, self.R = apply_displacement(self.p, self.R, h * self.u.reshape(-1))
            self.correct_positions(position_iterations, tol)
        else:
            u_half = self.u.reshape(-1) + 0.5 * h * (Minv @ self._forces(f_ext))
            self.p, self.R = apply_displacement(self.p, self.R, h * u_half)
            for _ in range(max(position_iterations, 1) * 5):
                _, b, _ = self._assemble(False)
                if not b.size or np.abs(b).max() < tol:
                    break
                dx = self._solve_active(J, Minv, b, uni)   # SHAKE: start-of-step rows
                self.p, self.R = apply_displacement(self.p, self.R, dx)
                u_half = u_half + dx / h
            self.u = u_half.reshape(-1, 6)
            Minv = self.inverse_mass()
            u_new = u_half + 0.5 * h * (Minv @ self._forces(f_ext))
            J, _, uni = self._assemble(False)
            self.u = (u_new + self._solve_active(J, Minv, -(J @ u_new), uni)).reshape(-1, 6)
        for j in self.joints:
            self.joint_state(j)  # coordinates of the corrected configuration
            for cons in j.coupling.constraints:
                if not cons.bilateral and cons.engaged:
                    cons.engaged_steps += 1
        if not (np.all(np.isfinite(self.p)) and np.all(np.isfinite(self.u))):
            raise NonFiniteError("the state became NaN/inf")

    def correct_positions(self, iterations=2, tol=1e-13):
        """Up to ``iterations`` mass-weighted position corrections ``G dq = -d`` of the
        bilateral and engaged unilateral constraints (eq. 4.12, with the deadband), stopping
        when the largest ``|d|`` is below ``tol``; the velocities are left as they are.
        Returns the number of corrections made."""
        for k in range(iterations):
            J, b, uni = self._assemble(False)
            if not b.size or np.abs(b).max() < tol:
                return k
            dx = self._solve_active(J, self.inverse_mass(), b, uni)
            self.p, self.R = apply_displacement(self.p, self.R, dx)
        return iterations

    def bilateral_error(self):
        """Largest ``|G_k . errC|`` over all joints (after projection)."""
        worst = 0.0
        for j in self.joints:
            TCD, TGD, errC, vel = self.joint_state(j)
            j.coupling.update_constraints(TGD, TCD, errC, vel, False)
            for cons in j.coupling.constraints:
                if cons.bilateral:
                    worst = max(worst, abs(float(cons.wrench @ errC)))
        return worst
