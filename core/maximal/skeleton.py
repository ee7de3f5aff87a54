"""Skeletons of rigid bodies linked by hinges and spherical joints (seed 001, Hakenberg).

State per body ``i`` (seed 001 "Generic equations of motion"): centre of mass ``p: (N, 3)``
and linear velocity ``v: (N, 3)`` in world coordinates, orientation ``R: (N, 3, 3)`` (object
to world), angular velocity ``w: (N, 3)`` in *object* coordinates; constant inertia
``I: (N, 3, 3)`` and mass ``m: (N,)``.

Topology: ``E: (n, 2)`` body indices per joint; the incidence matrix ``s: (n, N)`` has
``+1`` at ``E[j, 0]`` and ``-1`` at ``E[j, 1]``. Joint ``j`` has levers ``l: (n, 2, 3)``
(object coordinates of each body) and axes ``z: (n, 2, 3)`` (unit for a hinge, zero for a
spherical joint). Intrinsic torque ``e_j = -mu_j (R1 w1 - R2 w2) + b_j R1 z1`` (friction and
motor, world coordinates). A body index of ``-1`` attaches the joint to the fixed world
(``p = 0``, ``R = 1``), an addition for pendulums; the seed's skeletons are free-floating.

Constraint forces ``c_j, d_j`` (world) come from the linear system (6). Its matrix is
``-(J M^-1 J^T)`` written blockwise (eq. 5): with the velocity constraints (2) written as
``J u = 0`` for ``u = [w_body; v]`` per body, the accelerations (4) are ``M^-1 J^T [c; d]``.
The 6n x 6n system has rank ``5 n_h + 3 n_s``: ``d_j`` along a hinge axis does nothing and a
spherical joint has no ``d_j``. We therefore solve it in the reduced basis that the seed's
remark names (``d_j`` in the plane orthogonal to the axis, ``d_j = 0`` for spherical joints),
which gives the pseudoinverse solution, by one sparse factorization through the shared
:func:`core.maximal.solver.project`; on the numba backend (:mod:`core.backend`) the same
system is eliminated over the tree in one compiled call together with the update and the
post-stabilization (:mod:`core.compiled.skeleton`; the numpy path remains for joints that
do not form a tree and to raise the errors of a failed step).

Momentum. The theorem (continuous time) needs the joints closed, eq. (1). To keep the total
linear and angular momentum exact to round-off in discrete time even while the joints drift,
forces act at the joint midpoint ``(a1 + a2)/2`` and the ``d_j`` torque uses the mean axis;
both coincide with the paper's levers when (1) holds. ``update="momentum"`` integrates the
world angular momentum ``R I w`` (exact conservation); ``update="paper"`` is the seed's literal
update step (``v += a h; p += v h; w += I^-1(-W I w + t) h; R = R exp(W h)``), whose angular
momentum error is O(h^2) per step.
"""

from dataclasses import dataclass, field

import numpy as np

from .. import backend as _backend
from ..checks import whole_number
from ..errors import InvalidInputError, NonFiniteError
from ..lie import so3
from .solver import block_diag, project, rigid_jacobian, step_failure

__all__ = ["Skeleton", "SkeletonState", "StepInfo", "incidence", "UPDATES", "UPDATE_ORDERS"]

UPDATES = ("momentum", "paper", "heun")
#: order of accuracy of each update (see :meth:`Skeleton.step`)
UPDATE_ORDERS = {"momentum": 1, "paper": 1, "heun": 2}


def incidence(E, nbodies):
    """Incidence matrix ``s: (n, N)`` of seed 001: +1 at ``E[j,0]``, -1 at ``E[j,1]``."""
    E = np.asarray(E, dtype=int)
    s = np.zeros((E.shape[0], nbodies))
    rows = np.arange(E.shape[0])
    for col, sign in ((0, 1.0), (1, -1.0)):
        ok = E[:, col] >= 0
        s[rows[ok], E[ok, col]] = sign
    return s


@dataclass
class SkeletonState:
    """Dynamic configuration: ``p, v: (N, 3)`` world; ``R: (N, 3, 3)``; ``w: (N, 3)`` object."""

    p: np.ndarray
    R: np.ndarray
    v: np.ndarray
    w: np.ndarray

    def copy(self):
        return SkeletonState(self.p.copy(), self.R.copy(), self.v.copy(), self.w.copy())


@dataclass(frozen=True)
class StepInfo:
    """Diagnostics of one :meth:`Skeleton.step`.

    ``c, d: (n, 3)`` constraint forces (world), ``separation_before``/``separation_after``
    the largest joint gap (m) and axis misalignment (rad) before and after post-stabilization.
    """

    c: np.ndarray
    d: np.ndarray
    separation_before: float
    separation_after: float
    stabilization_iterations: int = 0


@dataclass
class Skeleton:
    """A tree of ``N`` rigid bodies and ``n`` joints (seed 001).

    Args:
        mass: ``(N,)``; inertia: ``(N, 3, 3)`` symmetric positive definite (object axes).
        E: ``(n, 2)`` body indices (``-1`` = fixed world).
        lever: ``(n, 2, 3)`` joint location in object coordinates of ``E[j,0]``, ``E[j,1]``.
        axis: ``(n, 2, 3)`` hinge axis in each body's object coordinates; zero rows make
            joint ``j`` spherical.
        mu: ``(n,)`` friction coefficients (>= 0); motor: ``(n,)`` motor torques ``b_j``.
    """

    mass: np.ndarray
    inertia: np.ndarray
    E: np.ndarray
    lever: np.ndarray
    axis: np.ndarray
    mu: np.ndarray = None
    motor: np.ndarray = None
    #: the compiled backend's arrays of this skeleton (:mod:`core.compiled.skeleton`), built
    #: on first use; False when its joints do not form a tree
    packed: object = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        self.mass = np.asarray(self.mass, dtype=float).reshape(-1)
        N = self.mass.shape[0]
        self.inertia = np.asarray(self.inertia, dtype=float)
        self.E = np.asarray(self.E, dtype=int).reshape(-1, 2)
        n = self.E.shape[0]
        self.lever = np.asarray(self.lever, dtype=float)
        self.axis = np.asarray(self.axis, dtype=float)
        self.mu = np.zeros(n) if self.mu is None else np.asarray(self.mu, dtype=float)
        self.motor = np.zeros(n) if self.motor is None else np.asarray(self.motor, dtype=float)
        if np.any(self.mass <= 0) or not np.all(np.isfinite(self.mass)):
            raise InvalidInputError("Skeleton: masses must be finite and > 0")
        if self.inertia.shape != (N, 3, 3) or np.any(np.linalg.eigvalsh(
                0.5 * (self.inertia + np.swapaxes(self.inertia, 1, 2))) <= 0):
            raise InvalidInputError(f"Skeleton: inertia must be (N={N}, 3, 3) symmetric "
                                    "positive definite")
        if self.lever.shape != (n, 2, 3) or self.axis.shape != (n, 2, 3):
            raise InvalidInputError(f"Skeleton: lever and axis must have shape (n={n}, 2, 3), "
                                    f"got {self.lever.shape} and {self.axis.shape}")
        if np.any(self.E >= N) or np.any(self.E < -1) or np.any(self.E[:, 0] == self.E[:, 1]):
            raise InvalidInputError("Skeleton: E must hold body indices in [-1, N) and join two "
                                    "different bodies")
        if self.mu.shape != (n,) or self.motor.shape != (n,) or np.any(self.mu < 0):
            raise InvalidInputError("Skeleton: mu and motor must have shape (n,), mu >= 0")
        norms = np.linalg.norm(self.axis, axis=2)
        hinge = norms[:, 0] > 0
        if np.any((norms[:, 1] > 0) != hinge) or np.any(np.abs(norms[hinge] - 1) > 1e-9):
            raise InvalidInputError("Skeleton: each joint's two axes must both be unit "
                                    "(hinge) or both zero (spherical)")
        self.hinge = hinge
        self.N, self.n = N, n
        # internal body arrays carry one extra fixed "world" body at index N
        self._idx = np.where(self.E < 0, N, self.E)
        self._inv_inertia = np.concatenate([np.linalg.inv(self.inertia), np.zeros((1, 3, 3))])
        self._inv_mass = np.concatenate([1.0 / self.mass, [0.0]])
        blocks = np.zeros((N + 1, 6, 6))
        blocks[:, :3, :3] = self._inv_inertia
        blocks[:, 3:, 3:] = self._inv_mass[:, None, None] * np.eye(3)
        self._minv = block_diag(blocks)

    # -- bookkeeping -------------------------------------------------------------------
    @property
    def rank(self):
        """Rank of system (6): ``5 n_h + 3 n_s``."""
        return int(5 * self.hinge.sum() + 3 * (~self.hinge).sum())

    def _ext(self, state):
        """State arrays with the fixed world body appended: p, R, v, w of shape (N+1, ...)."""
        p = np.concatenate([state.p, np.zeros((1, 3))])
        R = np.concatenate([state.R, np.eye(3)[None]])
        v = np.concatenate([state.v, np.zeros((1, 3))])
        w = np.concatenate([state.w, np.zeros((1, 3))])
        return p, R, v, w

    def check_state(self, state):
        """Validate shapes and finiteness of ``state``; raise InvalidInputError otherwise."""
        N = self.N
        for name, arr, shape in (("p", state.p, (N, 3)), ("R", state.R, (N, 3, 3)),
                                 ("v", state.v, (N, 3)), ("w", state.w, (N, 3))):
            if np.shape(arr) != shape or not np.all(np.isfinite(arr)):
                raise InvalidInputError(f"SkeletonState.{name} must be finite with shape {shape}")

    # -- joint geometry ---------------------------------------------------------------
    def _geometry(self, p, R):
        i1, i2 = self._idx[:, 0], self._idx[:, 1]
        R1, R2 = R[i1], R[i2]
        r1 = np.einsum("nij,nj->ni", R1, self.lever[:, 0])
        r2 = np.einsum("nij,nj->ni", R2, self.lever[:, 1])
        a1, a2 = p[i1] + r1, p[i2] + r2
        n1 = np.einsum("nij,nj->ni", R1, self.axis[:, 0])
        n2 = np.einsum("nij,nj->ni", R2, self.axis[:, 1])
        return i1, i2, R1, R2, a1, a2, n1, n2

    def joint_residuals(self, state):
        """Residuals of eq. (1) per joint (world): ``(a1 - a2, n1 - n2)``, each ``(n, 3)``,
        the gap between the joint points of the two bodies and between their hinge axes
        (zero rows for spherical joints)."""
        p, R, _, _ = self._ext(state)
        _, _, _, _, a1, a2, n1, n2 = self._geometry(p, R)
        return a1 - a2, n1 - n2

    def separation(self, state):
        """Largest violation of eq. (1): ``(gap (m), axis misalignment (rad))``."""
        p, R, _, _ = self._ext(state)
        _, _, _, _, a1, a2, n1, n2 = self._geometry(p, R)
        gap = np.linalg.norm(a1 - a2, axis=1).max(initial=0.0)
        mis = np.linalg.norm(np.cross(n1, n2), axis=1).max(initial=0.0)
        return float(gap), float(mis)

    def _axis_basis(self, n1):
        """Two unit vectors ``(n, 2, 3)`` orthogonal to each (world) hinge axis."""
        a = np.where(np.abs(n1[:, :1]) < 0.9, np.array([[1.0, 0, 0]]), np.array([[0, 1.0, 0]]))
        b1 = np.cross(n1, a)
        nb = np.linalg.norm(b1, axis=1, keepdims=True)
        b1 = np.divide(b1, nb, out=np.zeros_like(b1), where=nb > 0)
        b2 = np.cross(n1, b1)
        return np.stack([b1, b2], axis=1)

    def _jacobians(self, p, R):
        """Constraint Jacobian ``J`` (rows of eq. 2 in the reduced basis) and the force map
        ``Jf`` (midpoint levers), both sparse ``(5 n_h + 3 n_s, 6 (N + 1))`` over
        ``u = [w_body; v]``; plus the geometry."""
        i1, i2, R1, R2, a1, a2, n1, n2 = geo = self._geometry(p, R)
        n = self.n
        eye = np.broadcast_to(np.eye(3), (n, 3, 3))
        L1, L2 = so3.hat(self.lever[:, 0]), so3.hat(self.lever[:, 1])
        # point rows (3 per joint): v1 - R1 L1 w1 - v2 + R2 L2 w2
        pa = np.concatenate([-R1 @ L1, eye], axis=2)
        pb = np.concatenate([R2 @ L2, -eye], axis=2)
        mid = 0.5 * (a1 + a2)
        lt1 = np.einsum("nji,nj->ni", R1, mid - p[i1])
        lt2 = np.einsum("nji,nj->ni", R2, mid - p[i2])
        fa = np.concatenate([-R1 @ so3.hat(lt1), eye], axis=2)
        fb = np.concatenate([R2 @ so3.hat(lt2), -eye], axis=2)
        # axis rows (2 per hinge): B^T (-R1 Z1 w1 + R2 Z2 w2)
        h = self.hinge
        B = self._axis_basis(n1[h])
        Z1, Z2 = so3.hat(self.axis[h, 0]), so3.hat(self.axis[h, 1])
        zero = np.zeros((h.sum(), 2, 3))
        za = np.concatenate([B @ (-R1[h] @ Z1), zero], axis=2)
        zb = np.concatenate([B @ (R2[h] @ Z2), zero], axis=2)
        nbar = 0.5 * (n1[h] + n2[h])
        # torque of d on body 1 (object axes): R1^T (nbar x d) with d = B^T delta
        ga = np.concatenate([-(B @ so3.hat(nbar) @ R1[h]), zero], axis=2)
        gb = np.concatenate([B @ so3.hat(nbar) @ R2[h], zero], axis=2)
        body_a = np.concatenate([np.repeat(i1, 3), np.repeat(i1[h], 2)])
        body_b = np.concatenate([np.repeat(i2, 3), np.repeat(i2[h], 2)])
        nb = self.N + 1
        J = rigid_jacobian(body_a, np.concatenate([pa.reshape(-1, 6), za.reshape(-1, 6)]),
                           body_b, np.concatenate([pb.reshape(-1, 6), zb.reshape(-1, 6)]), nb)
        Jf = rigid_jacobian(body_a, np.concatenate([fa.reshape(-1, 6), ga.reshape(-1, 6)]),
                            body_b, np.concatenate([fb.reshape(-1, 6), gb.reshape(-1, 6)]), nb)
        return J, Jf, B, geo

    def _free_forces(self, R, w, f_ext):
        """Generalized forces ``[t_body; f]`` per body (N+1, 6) without constraint forces:
        gyroscopic ``-W I w``, intrinsic joint torques ``e_j`` and external forces."""
        i1, i2 = self._idx[:, 0], self._idx[:, 1]
        Iext = np.concatenate([self.inertia, np.zeros((1, 3, 3))])
        F = np.zeros((self.N + 1, 6))
        F[:, :3] = -np.cross(w, np.einsum("nij,nj->ni", Iext, w))
        n1 = np.einsum("nij,nj->ni", R[i1], self.axis[:, 0])
        e = (-self.mu[:, None] * (np.einsum("nij,nj->ni", R[i1], w[i1])
                                  - np.einsum("nij,nj->ni", R[i2], w[i2]))
             + self.motor[:, None] * n1)
        np.add.at(F[:, :3], i1, np.einsum("nji,nj->ni", R[i1], e))
        np.add.at(F[:, :3], i2, -np.einsum("nji,nj->ni", R[i2], e))
        if f_ext is not None:
            F[:self.N, 3:] += f_ext
        return F

    # -- the paper's algorithm ------------------------------------------------------------
    def accelerations(self, state, f_ext=None):
        """Solve system (6) and return ``(a, dw, c, d)``.

        ``a: (N, 3)`` linear accelerations (world), ``dw: (N, 3)`` angular accelerations
        (object axes, i.e. ``I^-1(-W I w + t)``), ``c, d: (n, 3)`` constraint forces (world).
        ``f_ext: (N, 3)`` optional external forces at the centres of mass (world).
        """
        twin = _backend.twins.skeleton_accelerations
        if twin is not None:
            out = twin(self, state, f_ext)
            if out is not None:
                return out
        p, R, v, w = self._ext(state)
        J, Jf, B, geo = self._jacobians(p, R)
        i1, i2, R1, R2, a1, a2, n1, n2 = geo
        F = self._free_forces(R, w, f_ext)
        Minv = self._minv
        acc_free = Minv @ F.reshape(-1)
        # velocity-product terms of eq. (3): R1 W1 W1 l1 - R2 W2 W2 l2, same with z
        W1, W2 = so3.hat(w[i1]), so3.hat(w[i2])
        cp = (np.einsum("nij,nj->ni", R1 @ W1 @ W1, self.lever[:, 0])
              - np.einsum("nij,nj->ni", R2 @ W2 @ W2, self.lever[:, 1]))
        h = self.hinge
        cz = (np.einsum("nij,nj->ni", R1[h] @ W1[h] @ W1[h], self.axis[h, 0])
              - np.einsum("nij,nj->ni", R2[h] @ W2[h] @ W2[h], self.axis[h, 1]))
        bias = np.concatenate([cp.reshape(-1), np.einsum("nki,ni->nk", B, cz).reshape(-1)])
        rhs = -bias - J @ acc_free
        res = project(J, Minv, rhs, method="direct", J_force=Jf)
        acc = (acc_free + res.dx).reshape(-1, 6)[:self.N]
        n = self.n
        c = res.lam[:3 * n].reshape(n, 3)
        d = np.zeros((n, 3))
        d[h] = np.einsum("nki,nk->ni", B, res.lam[3 * n:].reshape(-1, 2))
        if not np.all(np.isfinite(acc)):
            raise NonFiniteError("Skeleton: non-finite accelerations; check the inertias and "
                                 "that the joints form a tree")
        return acc[:, 3:], acc[:, :3], c, d

    def step(self, state, h, f_ext=None, update="momentum", stabilize=False,
             stabilize_tol=1e-10, stabilize_iterations=10):
        """Advance ``state`` by ``h`` seconds (seed 001 "Algorithm for animation").

        Args:
            state: :class:`SkeletonState` at time t (consistent with eqs. 1-2).
            h: time step > 0.
            f_ext: ``(N, 3)`` optional external forces (world), e.g. ``m g``.
            update: ``"momentum"`` (world angular momentum, exact conservation),
                ``"paper"`` (the seed's reassignments, literally) or ``"heun"`` (two solves
                of system (6) per step, explicit trapezoid on ``p, v, w`` and
                ``R exp(h (w0 + w1) / 2)``: second order, for accuracy comparisons; the
                other two are first order because the velocity-dependent terms of (5) use
                the old velocities). Energy of passive joints: the first-order updates gain
                it in proportion to h (a grounded chain falling under gravity gains about
                1% of its kinetic energy per 0.25 s at h = 4 ms, with or without
                stabilization); "heun" errs as h^2 (tests/core/test_skeleton.py).
            stabilize: project positions onto (1) and velocities onto (2) afterwards
                (mass-weighted post-stabilization with the shared solver).
        Returns:
            ``(new_state, StepInfo)``.
        Raises:
            SimulationError naming h, the fastest body and a smaller step when the step
            diverges (a non-finite state, or a constraint system made singular by a state
            that the step moved too far).
        """
        if not (np.isfinite(h) and h > 0):
            raise InvalidInputError(f"Skeleton.step: h must be a positive number, got {h}")
        if update not in UPDATES:
            raise InvalidInputError(f"Skeleton.step: update must be one of {UPDATES}")
        self.check_state(state)
        try:
            with np.errstate(over="ignore", invalid="ignore"):   # the state is checked
                return self._step(state, h, f_ext, update, stabilize, stabilize_tol,
                                  stabilize_iterations)
        except (ArithmeticError, ValueError) as err:
            failure = step_failure("Skeleton.step", h, np.abs(np.concatenate(
                [state.v, state.w], axis=1)).max(axis=1), err)
            if failure is None:
                raise
            raise failure from err

    def steps(self, state, h, count, f_ext=None, update="momentum", stabilize=False,
              stabilize_tol=1e-10, stabilize_iterations=10):
        """``count`` (an integer >= 1) :meth:`step` s of ``h`` with the same arguments: the
        same states, on the numba backend in one kernel call (a failure there takes the
        steps again one by one, which raises :meth:`step`'s error). Returns ``(new_state,
        StepInfo of the last step)``."""
        count = whole_number(count, "Skeleton.steps: count")
        twin = _backend.twins.skeleton_step
        if twin is not None and count > 1 and np.isfinite(h) and h > 0 and update in UPDATES:
            self.check_state(state)
            with np.errstate(over="ignore", invalid="ignore"):
                out = twin(self, state, h, f_ext, update, stabilize, stabilize_tol,
                           stabilize_iterations, count)
            if out is not None:
                p, R, v, w, c, d, before, after, iters = out
                return SkeletonState(p, R, v, w), StepInfo(c, d, before, after, iters)
        info = None
        for _ in range(count):
            state, info = self.step(state, h, f_ext, update, stabilize, stabilize_tol,
                                    stabilize_iterations)
        return state, info

    def _step(self, state, h, f_ext, update, stabilize, stabilize_tol, stabilize_iterations):
        """:meth:`step` after validation; numerical failures propagate. On the numba backend
        every update with its stabilization is one kernel call
        (:func:`core.compiled.skeleton.step`); where it declines (joints not a tree, a
        singular pivot, a non-finite state) the numpy path below runs and raises."""
        twin = _backend.twins.skeleton_step
        if twin is not None:
            out = twin(self, state, h, f_ext, update, stabilize, stabilize_tol,
                       stabilize_iterations)
            if out is not None:
                p, R, v, w, c, d, before, after, iters = out
                return SkeletonState(p, R, v, w), StepInfo(c, d, before, after, iters)
        a, dw, c, d = self.accelerations(state, f_ext)
        v = state.v + h * a
        p = state.p + h * v
        if update == "heun":
            pred = SkeletonState(state.p + h * state.v, state.R @ so3.exp(h * state.w), v,
                                 state.w + h * dw)
            a2, dw2, _, _ = self.accelerations(pred, f_ext)
            p = state.p + 0.5 * h * (state.v + pred.v)
            v = state.v + 0.5 * h * (a + a2)
            w = state.w + 0.5 * h * (dw + dw2)
            R = state.R @ so3.exp(0.5 * h * (state.w + pred.w))
        elif update == "paper":
            w = state.w + h * dw
            R = state.R @ so3.exp(h * w)
        else:
            Iw = np.einsum("nij,nj->ni", self.inertia, state.w)
            gyro = -np.cross(state.w, Iw)
            # body-frame momentum after the impulse of the non-gyroscopic torques
            pi_body = Iw + h * (np.einsum("nij,nj->ni", self.inertia, dw) - gyro)
            w_tilde = np.einsum("nij,nj->ni", self._inv_inertia[:-1], pi_body)
            Rinc = so3.exp(h * w_tilde)
            R = state.R @ Rinc
            w = np.einsum("nij,nj->ni", self._inv_inertia[:-1],
                          np.einsum("nji,nj->ni", Rinc, pi_body))
        new = SkeletonState(p, R, v, w)
        if not all(np.all(np.isfinite(x)) for x in (p, R, v, w)):
            raise NonFiniteError("the state became NaN/inf")
        before = after = max(self.separation(new))
        iters = 0
        if stabilize:
            new, iters = self.stabilize(new, stabilize_tol, stabilize_iterations)
            after = max(self.separation(new))
        return new, StepInfo(c, d, before, after, iters)

    def stabilize(self, state, tol=1e-10, max_iterations=10):
        """Post-stabilization: mass-weighted projection of positions onto eq. (1) (Newton
        iterations) and of velocities onto eq. (2). Returns ``(state, iterations)``."""
        st = state.copy()
        it = 0
        for it in range(1, max_iterations + 1):
            p, R, _, _ = self._ext(st)
            J, _, B, geo = self._jacobians(p, R)
            _, _, _, _, a1, a2, n1, n2 = geo
            h = self.hinge
            err = np.concatenate([(a1 - a2).reshape(-1),
                                  np.einsum("nki,ni->nk", B, n1[h] - n2[h]).reshape(-1)])
            if np.abs(err).max(initial=0.0) <= tol:
                break
            dx = project(J, self._minv, -err, method="direct").dx.reshape(-1, 6)[:self.N]
            st.p = st.p + dx[:, 3:]
            st.R = st.R @ so3.exp(dx[:, :3])
        p, R, v, w = self._ext(st)
        J, _, _, _ = self._jacobians(p, R)
        u = np.concatenate([w, v], axis=1).reshape(-1)
        du = project(J, self._minv, -(J @ u), method="direct").dx.reshape(-1, 6)[:self.N]
        st.w = st.w + du[:, :3]
        st.v = st.v + du[:, 3:]
        return st, it

    # -- invariants ------------------------------------------------------------------------
    def linear_momentum(self, state):
        """Total linear momentum ``sum m v``: (3,)."""
        return (self.mass[:, None] * state.v).sum(axis=0)

    def angular_momentum(self, state):
        """Total angular momentum about the world origin ``sum p x m v + R I w``: (3,)."""
        Iw = np.einsum("nij,nj->ni", self.inertia, state.w)
        return (np.cross(state.p, self.mass[:, None] * state.v)
                + np.einsum("nij,nj->ni", state.R, Iw)).sum(axis=0)

    def kinetic_energy(self, state):
        """Total kinetic energy ``sum m v.v/2 + w.I w/2``."""
        Iw = np.einsum("nij,nj->ni", self.inertia, state.w)
        return float(0.5 * (self.mass * (state.v ** 2).sum(1)).sum()
                     + 0.5 * (state.w * Iw).sum())

    def momentum_rate(self, state, f_ext=None):
        """The theorem's quantities ``(sum m a, sum p x m a + R t)`` from (4): both vanish
        when the joints are closed (eq. 1). Returns two ``(3,)`` arrays."""
        a, dw, _, _ = self.accelerations(state, f_ext)
        Iw = np.einsum("nij,nj->ni", self.inertia, state.w)
        # d/dt (R I w) = R (W I w + I dw) = R t, the torque of eq. (4) in world axes
        t = np.einsum("nij,nj->ni", self.inertia, dw) + np.cross(state.w, Iw)
        dL = (np.cross(state.p, self.mass[:, None] * a)
              + np.einsum("nij,nj->ni", state.R, t)).sum(0)
        return (self.mass[:, None] * a).sum(0), dL


def chain(nlinks, length=1.0, mass=1.0, radius=0.05, hinge_axis=(0.0, 0.0, 1.0),
          spherical=(), grounded=False, direction=(1.0, 0.0, 0.0)):
    """A straight chain of slender rods (test and benchmark fixture).

    Link ``i`` is a uniform rod of ``length`` along ``direction`` with its centre at
    ``(i + 1/2) length direction``; joint ``j`` joins link ``j-1`` and ``j`` at their common
    end (joint 0 joins the world to link 0 when ``grounded``). Joints listed in ``spherical``
    are spherical, the others hinges about ``hinge_axis``.
    Returns ``(Skeleton, SkeletonState)`` at rest.
    """
    d = np.asarray(direction, dtype=float)
    d = d / np.linalg.norm(d)
    N = nlinks
    Ia = mass * radius ** 2 / 2
    It = mass * (3 * radius ** 2 + length ** 2) / 12
    # rod along d: inertia It on the transverse axes, Ia along d
    inertia = np.broadcast_to(It * np.eye(3) + (Ia - It) * np.outer(d, d), (N, 3, 3)).copy()
    p = (np.arange(N)[:, None] + 0.5) * length * d
    E, lever = [], []
    first = 0 if grounded else 1
    for j in range(first, N):
        E.append((j - 1, j) if j > 0 else (-1, 0))
        lever.append((0.5 * length * d if j > 0 else np.zeros(3), -0.5 * length * d))
    E = np.array(E, dtype=int).reshape(-1, 2)
    n = E.shape[0]
    axis = np.broadcast_to(np.asarray(hinge_axis, dtype=float), (n, 2, 3)).copy()
    for j in spherical:
        axis[j] = 0.0
    skel = Skeleton(np.full(N, mass), inertia, E, np.array(lever).reshape(n, 2, 3), axis)
    state = SkeletonState(p, np.broadcast_to(np.eye(3), (N, 3, 3)).copy(), np.zeros((N, 3)),
                          np.zeros((N, 3)))
    return skel, state
