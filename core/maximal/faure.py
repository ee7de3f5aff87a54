"""Fast assembly with linearized displacement constraints and Stoermer stepping (seed 004).

A joint is two frames ``L1`` (on body 1) and ``L2`` (on body 2) whose relative displacement
is constrained along some axes of ``L1`` (Table 1, read as the seeds README explains):

=================  =====================  ======================================
kind               constrained            meaning
=================  =====================  ======================================
``universal``      ti tj tk               P1 = P2: a ball joint in today's words
``pin``            ti tj tk, rj rk        hinge about i
``cylindrical``    tj tk, rj rk           slide along and turn about i
``prismatic``      tj tk, ri rj rk        slide along i
``ball-socket``    tj tk                  as printed: a point sliding along i
``surface``        ti                     smooth surface contact, normal i
``fixed``          ti tj tk, ri rj rk     our addition: rigid grip (dragging)
=================  =====================  ======================================

Geometric errors (section 3.2): ``delta = P2 - P1`` projected on the world axes ``t_k`` of
``L1``, and the rotation vector ``w_bar = log(R_L1^T R_L2)`` (axis times angle, in ``L1``)
projected on ``r_k``; the displacement constraint is ``b = -error``. The Jacobian ``J`` is the
exact derivative of these errors for world-frame body increments ``[dtheta; dp]`` (the
translational rows use the velocity of body 1 at ``P2``, as the seed's ``v_ij``; the rotational
rows carry ``Jl^-1(w_bar)``, the identity at ``w_bar = 0``). The correction
``dq = M^-1 J^T (J M^-1 J^T)^-1 b`` (eq. 13) is solved by scipy's conjugate gradients through
:func:`core.maximal.solver.project`, with a cap on CG iterations and on geometric iterations
(``correction`` of section 3.4), and rotation increments truncated at 0.8 rad.

Stepping (section 4.2): ``Dq += M^-1 f dt^2; q += Dq; dq = correction(q); q += dq;
Dq += dq``, with ``Dq`` rescaled by ``dt_new / dt_old`` when the step changes (section 4.3).
With the seed's correction (Jacobian re-evaluated at the moved configuration) the scheme is
first order; ``step(directions="start")`` corrects along the start-of-step normals (SHAKE)
and is second order (tests/core/test_faure.py measures both against solve_ivp).
Dragging (section 4.1): a target body of zero inverse mass joined to the dragged body.
"""

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError, SimulationError
from ..lie import se3, so3
from .solver import (apply_displacement, point_rows, project, rigid_jacobian, step_failure,
                     world_inverse_mass)

__all__ = ["JOINT_TYPES", "FaureJoint", "Assembly", "CorrectionInfo", "DENSE_BODIES"]

JOINT_TYPES = {
    "universal": ((0, 1, 2), ()),
    "pin": ((0, 1, 2), (1, 2)),
    "cylindrical": ((1, 2), (1, 2)),
    "prismatic": ((1, 2), (0, 1, 2)),
    "ball-socket": ((1, 2), ()),
    "surface": ((0,), ()),
    "fixed": ((0, 1, 2), (0, 1, 2)),
}

MAX_ROTATION = 0.8  # rad, seed 004 section 3.4
#: up to this many bodies :meth:`Assembly.correction` works with dense matrices (building
#: sparse ones costs more than the dense products of a few bodies; measured by
#: scripts/bench.py --only linkages)
DENSE_BODIES = 16


@dataclass(frozen=True)
class FaureJoint:
    """A joint of ``kind`` between ``body1`` and ``body2`` (``-1``: the fixed world).

    ``T1: (4, 4)`` pose of frame L1 in body 1 (world pose if ``body1 == -1``), ``T2`` likewise.
    """

    kind: str
    body1: int
    body2: int
    T1: np.ndarray
    T2: np.ndarray


@dataclass(frozen=True)
class CorrectionInfo:
    """Trace of one :meth:`Assembly.correction`.

    ``errors``: max |b| before each geometric iteration and after the last one;
    ``cg_iterations``: CG iterations per geometric iteration; ``converged``: final error <= tol.
    """

    errors: tuple
    cg_iterations: tuple
    converged: bool

    @property
    def error(self):
        return self.errors[-1]

    @property
    def geometric_iterations(self):
        return len(self.cg_iterations)


class Assembly:
    """Rigid bodies ``[w; v]`` joined by :class:`FaureJoint` s (seed 004).

    Args:
        mass: ``(N,)``; inertia: ``(N, 3, 3)`` about the centre of mass, body axes.
        joints: sequence of :class:`FaureJoint`.
        p: ``(N, 3)`` centres of mass; R: ``(N, 3, 3)`` orientations.
    Attributes ``p, R`` hold the configuration, ``Dq: (N, 6)`` the Stoermer displacement
    ``[dtheta; dp]`` of the last step (world frame); ``dense``: the corrections build ``J``
    and ``M^-1`` as numpy arrays (default: at most :data:`DENSE_BODIES` bodies) instead of
    sparse matrices, the same solve (:func:`core.maximal.solver.project`).
    """

    def __init__(self, mass, inertia, joints, p, R):
        self.mass = np.asarray(mass, dtype=float).reshape(-1)
        N = self.mass.shape[0]
        self.inertia = np.asarray(inertia, dtype=float)
        if np.any(self.mass <= 0) or self.inertia.shape != (N, 3, 3):
            raise InvalidInputError(f"Assembly: need masses > 0 and inertia of shape ({N}, 3, 3)")
        self.inv_mass = 1.0 / self.mass
        self.inv_inertia = np.linalg.inv(self.inertia)
        self.p = np.array(p, dtype=float).reshape(N, 3)
        self.R = so3.check_rotation(np.array(R, dtype=float).reshape(N, 3, 3), "R").copy()
        self.Dq = np.zeros((N, 6))
        self.dt = None
        self.dense = N <= DENSE_BODIES
        self.joints = []
        self._targets = {}
        self._build_tables()
        for jt in joints:
            self.add_joint(jt)

    @property
    def nbodies(self):
        return self.mass.shape[0]

    @property
    def nconstraints(self):
        return int(sum(len(t) + len(r) for t, r in (JOINT_TYPES[j.kind] for j in self.joints)))

    def add_joint(self, joint):
        """Append a :class:`FaureJoint` (validated) and rebuild the row tables."""
        if joint.kind not in JOINT_TYPES:
            raise InvalidInputError(f"FaureJoint kind {joint.kind!r} unknown; use one of "
                                    f"{sorted(JOINT_TYPES)}")
        N = self.nbodies
        if not (-1 <= joint.body1 < N and -1 <= joint.body2 < N) or joint.body1 == joint.body2:
            raise InvalidInputError(f"FaureJoint bodies must be two different indices in "
                                    f"[-1, {N}), got {joint.body1}, {joint.body2}")
        se3.check_transform(joint.T1, "FaureJoint.T1")
        se3.check_transform(joint.T2, "FaureJoint.T2")
        self.joints.append(joint)
        self._build_tables()

    def _build_tables(self):
        js = self.joints
        self._b1 = np.array([j.body1 for j in js], dtype=int)
        self._b2 = np.array([j.body2 for j in js], dtype=int)
        self._T1 = np.array([j.T1 for j in js], dtype=float).reshape(-1, 4, 4)
        self._T2 = np.array([j.T2 for j in js], dtype=float).reshape(-1, 4, 4)
        rj, rrot, rax = [], [], []
        for k, jt in enumerate(js):
            t, r = JOINT_TYPES[jt.kind]
            rj += [k] * (len(t) + len(r))
            rrot += [False] * len(t) + [True] * len(r)
            rax += list(t) + list(r)
        self._row_joint = np.array(rj, dtype=int)
        self._row_rot = np.array(rrot, dtype=bool)
        self._row_axis = np.array(rax, dtype=int)

    # -- bodies of zero inverse mass (dragging targets) -----------------------------------
    def add_target(self, T_W_target):
        """Add an immovable body (zero inverse mass) at ``T_W_target`` and return its index.

        Join it to a body with a ``"fixed"`` (or any) joint and move it with
        :meth:`move_target`; :meth:`correction` then drags the structure toward it.
        """
        T = se3.check_transform(T_W_target, "T_W_target")
        self.mass = np.append(self.mass, 1.0)
        self.inertia = np.concatenate([self.inertia, np.eye(3)[None]])
        self.inv_mass = np.append(self.inv_mass, 0.0)
        self.inv_inertia = np.concatenate([self.inv_inertia, np.zeros((1, 3, 3))])
        self.p = np.concatenate([self.p, T[None, :3, 3]])
        self.R = np.concatenate([self.R, T[None, :3, :3]])
        self.Dq = np.concatenate([self.Dq, np.zeros((1, 6))])
        idx = self.nbodies - 1
        self._targets[idx] = True
        return idx

    def move_target(self, index, T_W_target):
        """Set the pose of a target body made by :meth:`add_target`."""
        if index not in self._targets:
            raise InvalidInputError(f"body {index} is not a target; create it with add_target")
        T = se3.check_transform(T_W_target, "T_W_target")
        self.p[index] = T[:3, 3]
        self.R[index] = T[:3, :3]

    # -- geometry ---------------------------------------------------------------------------
    def joint_frames(self, p=None, R=None):
        """World poses of every joint's L1 and L2: ``(n, 4, 4)`` each, at the current
        configuration or at ``p: (N, 3)``, ``R: (N, 3, 3)``."""
        p = self.p if p is None else p
        R = self.R if R is None else R

        def world(bodies, T):
            out = T.copy()
            ok = bodies >= 0
            out[ok] = se3.from_rp(R[bodies[ok]], p[bodies[ok]]) @ T[ok]
            return out
        return world(self._b1, self._T1), world(self._b2, self._T2)

    def errors(self, p=None, R=None):
        """Geometric constraint errors ``(m,)`` (seed 004 section 3.2; ``b = -errors``)."""
        p = self.p if p is None else p
        R = self.R if R is None else R
        return self._entries(p, R, jacobian=False)[1]

    def jacobian(self, p=None, R=None):
        """Sparse Jacobian ``J: (m, 6N)`` of :meth:`errors` for world body increments
        ``[dtheta; dp]`` (seed 004 section 3.4), at the current configuration or at ``p, R``;
        a fixed ``J`` for :meth:`correction`'s ``jacobian`` argument."""
        p = self.p if p is None else p
        R = self.R if R is None else R
        return self._entries(p, R)[0]

    def _entries(self, p, R, jacobian=True, dense=False):
        """``compute_entries`` of section 3.4: ``J: (m, 6N)`` (sparse, or a numpy array with
        ``dense``) and errors ``(m,)``."""
        L1, L2 = self.joint_frames(p, R)
        RL1 = L1[:, :3, :3]
        delta = L2[:, :3, 3] - L1[:, :3, 3]
        wbar = so3.log(np.swapaxes(RL1, 1, 2) @ L2[:, :3, :3])
        j, rot, ax = self._row_joint, self._row_rot, self._row_axis
        t_world = RL1[j, :, ax]                            # (m, 3) axis k of L1 in world
        err = np.where(rot, wbar[j, ax], np.einsum("mi,mi->m", delta[j], t_world))
        if not jacobian:
            return None, err
        # rotational rows: e_k^T Jl^-1(wbar) R_L1^T acting on dtheta2 - dtheta1
        Jli = so3.left_jacobian_inv(wbar)
        rrow = np.einsum("mi,mij->mj", Jli[j, ax], np.swapaxes(RL1, 1, 2)[j])
        P2 = L2[j, :3, 3]
        b1, b2 = self._b1[j], self._b2[j]
        O1 = np.where((b1 >= 0)[:, None], p[np.maximum(b1, 0)], 0.0)
        O2 = np.where((b2 >= 0)[:, None], p[np.maximum(b2, 0)], 0.0)
        zero = np.zeros_like(rrow)
        row1 = np.where(rot[:, None], np.concatenate([-rrow, zero], 1),
                        -point_rows(t_world, P2, O1))
        row2 = np.where(rot[:, None], np.concatenate([rrow, zero], 1),
                        point_rows(t_world, P2, O2))
        J = rigid_jacobian(b1, row1, b2, row2, self.nbodies, dense)
        return J, err

    def inverse_mass(self, R=None, dense=False):
        """``M^-1: (6N, 6N)`` (world ``[w; v]`` layout; zero blocks for targets), sparse or,
        with ``dense``, a numpy array."""
        return world_inverse_mass(self.R if R is None else R, self.inv_inertia, self.inv_mass,
                                  dense)

    # -- the fast assembly algorithm (section 3.4) -------------------------------------------
    def correction(self, geometric_iterations=3, cg_iterations=50, tol=1e-10, cg_tol=1e-12,
                   max_rotation=MAX_ROTATION, apply=True, regularization=0.0, jacobian=None):
        """Iterative mass-weighted assembly of the current configuration.

        Args:
            geometric_iterations: cap on linearize-and-solve rounds.
            cg_iterations: cap on CG iterations per round (``None``: until ``cg_tol``).
            tol: ``geometryOk``: stop when ``max |b| <= tol``.
            max_rotation: truncation of per-body rotation increments (rad).
            apply: move the bodies (else restore the configuration).
            regularization: relative diagonal shift for redundant or unreachable constraint
                sets (least-squares assembly, see :func:`core.maximal.solver.project`).
            jacobian: optional fixed ``J`` (sparse or dense) for the correction directions and the
                system matrix (chord iterations; only ``b`` is re-evaluated). The seed
                re-evaluates ``J`` at every iteration (``None``); :meth:`step` passes the
                Jacobian of the start of the step for its ``directions="start"`` variant.
        Returns:
            ``(dq: (N, 6) world [dtheta; dp], CorrectionInfo)``.
        """
        p, R = self.p.copy(), self.R.copy()
        errs, cgs = [], []
        dense = self.dense and (jacobian is None or isinstance(jacobian, np.ndarray))
        J, e = self._entries(p, R, dense=dense)
        for _ in range(geometric_iterations):
            errs.append(float(np.abs(e).max(initial=0.0)))
            if errs[-1] <= tol:
                break
            res = project(J if jacobian is None else jacobian, self.inverse_mass(R, dense), -e,
                          method="cg", maxiter=cg_iterations, tol=cg_tol,
                          regularization=regularization)
            cgs.append(res.iterations)
            p, R = apply_displacement(p, R, res.dx, max_rotation)
            J, e = self._entries(p, R, jacobian=jacobian is None, dense=dense)
        else:
            errs.append(float(np.abs(e).max(initial=0.0)))
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(R))):
            raise SimulationError("Assembly.correction produced non-finite poses; reduce the "
                                  "time step or check for contradictory joints")
        dq = np.concatenate([so3.log(R @ np.swapaxes(self.R, 1, 2)), p - self.p], axis=1)
        if apply:
            self.p, self.R = p, R
        return dq, CorrectionInfo(tuple(errs), tuple(cgs), errs[-1] <= tol)

    # -- Stoermer stepping (section 4.2) -------------------------------------------------
    def set_velocity(self, u, dt, acc=None):
        """Initialize the Stoermer displacement from velocities ``u: (N, 6)`` ``[w; v]``
        (world) and optional accelerations ``acc: (N, 6)`` (e.g. ``M^-1 f``).

        The seed writes ``Dq(0) = q_dot dt + dt^2 q_ddot / 2`` for the first displacement.
        Because :meth:`step` adds ``M^-1 f dt^2`` before moving, the stored value is
        ``u dt - dt^2 acc / 2``, so that the first step moves by ``u dt + dt^2 acc / 2``
        (second-order start; the correction removes the constrained part).
        """
        u = np.asarray(u, dtype=float).reshape(self.nbodies, 6)
        a = 0.0 if acc is None else np.asarray(acc, dtype=float).reshape(self.nbodies, 6)
        self.Dq = u * dt - 0.5 * dt ** 2 * a
        self.dt = dt

    def free_acceleration(self, forces):
        """``M^-1 f``: ``forces (N, 6)`` world wrenches -> accelerations ``(N, 6)``."""
        f = np.asarray(forces, dtype=float).reshape(-1)
        return (self.inverse_mass() @ f).reshape(-1, 6)

    def velocity(self):
        """Velocity estimate ``Dq / dt``: ``(N, 6)`` ``[w; v]`` world."""
        return self.Dq / self.dt if self.dt else np.zeros_like(self.Dq)

    def step(self, dt, forces=None, geometric_iterations=3, cg_iterations=50, tol=1e-10,
             directions="current"):
        """The seed's ``step(dt)``; ``forces: (N, 6)`` world wrenches ``[torque; force]`` at
        the centres of mass. Returns the :class:`CorrectionInfo` of the post-correction.

        ``directions="current"`` is the seed's correction (Jacobian re-evaluated at the
        moved configuration). Projecting along the end-of-step constraint normals makes the
        scheme first order in dt (the per-step correction, O(dt^2), is tilted by O(dt)).
        ``directions="start"`` keeps the Jacobian of the start of the step for the
        correction directions, as SHAKE does, which restores second order (measured in
        tests/core/test_cross_validation.py).

        A step that diverges (non-finite poses or solves) raises SimulationError naming dt,
        the fastest body and a smaller step.
        """
        if directions not in ("current", "start"):
            raise InvalidInputError("Assembly.step: directions must be 'current' or 'start'")
        if not (np.isfinite(dt) and dt > 0):
            raise InvalidInputError(f"Assembly.step: dt must be a positive number, got {dt}")
        speed = np.abs(self.Dq).max(axis=1)
        try:
            with np.errstate(over="ignore", invalid="ignore"):   # the poses are checked
                return self._step(dt, forces, geometric_iterations, cg_iterations, tol,
                                  directions)
        except (ArithmeticError, ValueError) as err:
            failure = step_failure("Assembly.step", dt, speed, err)
            if failure is None:
                raise
            raise failure from err

    def _step(self, dt, forces, geometric_iterations, cg_iterations, tol, directions):
        """:meth:`step` after validation; numerical failures propagate."""
        if self.dt is not None and dt != self.dt:
            self.Dq = self.Dq * (dt / self.dt)  # section 4.3: rescale on a new time step
        self.dt = dt
        if forces is not None:
            f = np.asarray(forces, dtype=float).reshape(self.nbodies, 6)
            self.Dq = self.Dq + (self.inverse_mass() @ f.reshape(-1)).reshape(-1, 6) * dt ** 2
        for idx in self._targets:
            self.Dq[idx] = 0.0
        J0 = self._entries(self.p, self.R, dense=self.dense)[0] if directions == "start" else None
        self.p, self.R = apply_displacement(self.p, self.R, self.Dq.reshape(-1))
        dq, info = self.correction(geometric_iterations, cg_iterations, tol, jacobian=J0)
        self.Dq = self.Dq + dq
        return info

    def gravity_forces(self, g=(0.0, 0.0, -9.81)):
        """World wrenches ``(N, 6)`` of gravity (zero for targets)."""
        f = np.zeros((self.nbodies, 6))
        f[:, 3:] = self.mass[:, None] * np.asarray(g, dtype=float)
        f[list(self._targets)] = 0.0
        return f


def four_bar(a=1.0, b=2.0, c=1.5, d=2.0, theta=1.0, mass=1.0, coupler_joint="universal"):
    """A four-bar linkage: ground link of length ``d`` on the x axis, crank ``a`` at the
    origin, coupler ``b``, rocker ``c``; the crank and rocker turn on pins about z. The
    crank angle ``theta`` sets the assembled configuration.

    ``coupler_joint`` joins the coupler to crank and rocker. The default ``"universal"``
    (ball, spatial RSSR linkage: 16 independent constraints, 2 DOF: the crank and the idle
    spin of the coupler) keeps ``J`` full rank. ``"pin"`` gives the textbook planar
    linkage, which is overconstrained in space (20 rows, rank 17): off the solution its
    linearized system is inconsistent and plain CG does not converge on it.
    Returns an :class:`Assembly` with 3 moving bars."""
    A = np.array([a * np.cos(theta), a * np.sin(theta), 0.0])
    D = np.array([d, 0.0, 0.0])
    # intersect circle |B - A| = b with |B - D| = c (upper solution)
    dist = np.linalg.norm(D - A)
    x = (b ** 2 - c ** 2 + dist ** 2) / (2 * dist)
    y = np.sqrt(max(b ** 2 - x ** 2, 0.0))
    ex = (D - A) / dist
    ey = np.array([-ex[1], ex[0], 0.0])
    B = A + x * ex + y * ey
    bars = [(np.zeros(3), A), (A, B), (D, B)]
    p, R, inertia, lengths = [], [], [], []
    for s, e in bars:
        L = np.linalg.norm(e - s)
        ang = np.arctan2(*(e - s)[[1, 0]])
        p.append(0.5 * (s + e))
        R.append(so3.exp(np.array([0, 0, ang])))
        inertia.append(mass * np.diag([0.01, L ** 2 / 12 + 0.01, L ** 2 / 12 + 0.01]))
        lengths.append(L)

    Rz = so3.exp(np.array([0.0, -np.pi / 2, 0.0]))  # frame axis i (local x) = world z

    def pin(body1, x1, body2, x2):
        return FaureJoint("pin", body1, body2, se3.from_rp(Rz, x1), se3.from_rp(Rz, x2))

    l0, l1, l2 = lengths
    joints = [
        pin(-1, np.zeros(3), 0, [-l0 / 2, 0, 0]),
        FaureJoint(coupler_joint, 0, 1, se3.from_rp(Rz, [l0 / 2, 0, 0]),
                   se3.from_rp(Rz, [-l1 / 2, 0, 0])),
        FaureJoint(coupler_joint, 1, 2, se3.from_rp(Rz, [l1 / 2, 0, 0]),
                   se3.from_rp(Rz, [l2 / 2, 0, 0])),
        pin(-1, D, 2, [-l2 / 2, 0, 0]),
    ]
    return Assembly(np.full(3, mass), np.array(inertia), joints, np.array(p), np.array(R))


def bar_between_disks(distance=2.0, bar_offset=(0.3, -0.5, 0.2), bar_angle=0.6,
                      disk_mass=5.0, bar_mass=1.0):
    """Fig. 2 of seed 004: a bar whose endpoints must coincide with the centres of two free
    disks (ball joints, ``"universal"``). The disks sit at ``(0,0,0)`` and
    ``(distance,0,0)``; the bar (length ``distance``) starts displaced by ``bar_offset`` and
    turned by ``bar_angle`` about z. Returns an :class:`Assembly` (bodies: disk, disk, bar).
    """
    r = 0.5
    disk_I = disk_mass * np.diag([r ** 2 / 2, r ** 2 / 4, r ** 2 / 4])
    bar_I = bar_mass * np.diag([0.01, distance ** 2 / 12, distance ** 2 / 12])
    p = np.array([[0.0, 0, 0], [distance, 0, 0],
                  np.array([distance / 2, 0, 0]) + np.asarray(bar_offset, dtype=float)])
    R = np.stack([np.eye(3), np.eye(3), so3.exp(np.array([0.0, 0.0, bar_angle]))])
    eye = np.eye(4)
    joints = [FaureJoint("universal", 2, 0, se3.from_rp(np.eye(3), [-distance / 2, 0, 0]), eye),
              FaureJoint("universal", 2, 1, se3.from_rp(np.eye(3), [distance / 2, 0, 0]), eye)]
    return Assembly([disk_mass, disk_mass, bar_mass], np.stack([disk_I, disk_I, bar_I]), joints,
                    p, R)
