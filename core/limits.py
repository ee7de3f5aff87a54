"""Joint limits enforced by impulses (seed 003 eqs. 50-61, seed 002 section 4.10.2).

Limit kinds (each gives one or two unilateral constraints ``d(q) >= 0`` with a gradient in
the joint's coordinates; d < 0 means inside the inadmissible region):

* :class:`CoordinateLimit`: ``lower <= q_k <= upper`` on one coordinate of a joint
  (``d = q - lower`` and ``d = upper - q``, seed 002 eq. 4.13);
* :class:`ReachCone`: spherical joints, ``g(r) = <p, exp(r) p> - cos(phi) >= 0`` (seed 003
  eqs. 50-52) with ``grad g`` of eqs. 58-60 (:func:`core.expcoords.reach_cone_value`);
* :class:`EllipticCone`: two half-angles (:func:`core.expcoords.elliptic_cone_value`);
* :class:`TwistLimit`: ``lower <= twist angle about p <= upper``
  (:func:`core.expcoords.twist_angle`);
* :class:`PointPin`: a bilateral constraint ``x_a(q) - x_b(q) = 0`` holding a point of a body
  to a point of another body or of the world (a hard pin), as the pairs ``e_k >= 0`` and
  ``-e_k >= 0`` of each world component ``e_k`` of ``x_a - x_b``, always engaged, with
  gradients ``+-(J_a - J_b)``, the points' world Jacobians.

Spherical-joint limits read the rotation coordinates ``r`` (the first three coordinates of a
:class:`~core.joints.spherical.Spherical` or :class:`~core.joints.spherical.Free` joint).

:class:`LimitSolver` runs after every integrator substep. For the engaged constraints
(rows ``n_l`` of ``N``, gradients in the full coordinate vector) it applies

1. a velocity impulse ``v += M^-1 N^T lambda``, ``lambda >= 0``, so that
   ``n_l . v >= -e min(n_l . v_before, 0)`` (restitution e; seed 003: the impulse is along
   grad g, mass-weighted by the inverse mass matrix);
2. when an engaged constraint is more than ``p_tol`` outside, a position projection in
   joint space ``q += N^T mu``, ``mu >= 0``, with ``N dq >= -d - p_tol`` for *every*
   constraint, re-linearized at the projected pose up to :data:`~core.compiled.layout.
   POSITION_PASSES` times until each is within its deadband (the deadband of seed 002 lets a
   joint rest up to ``p_tol`` outside, so it does not chatter). Each limit's gradient lives
   in its own joint's coordinates, so the projection moves only the joints at their limits;
   a mass-weighted one (``M^-1 N^T``) moves every joint of the chain without changing the
   velocities, which pumped energy into a whipping chain of coned joints until it diverged.

Engagement (seed 002 section 4.10.2): a constraint engages when ``d < 0``; it disengages
only when ``d > 0`` and ``d_dot > 0`` (moving away) and after at least ``min_engaged_steps``
(default 2) substeps engaged. A pin's pairs are always engaged, take no restitution and
have the pin's own deadband (:data:`PIN_TOLERANCE`): the impulse keeps the pinned point's
velocity equal to its target's (``J v = 0`` in both directions), and the projection puts it
back within the deadband whenever it drifts farther. The small complementarity problems are
solved by projected Gauss-Seidel on ``W = N M^-1 N^T`` (a row no free coordinate moves,
``W_ii = 0``, gets no impulse).

Locked coordinates (:meth:`LimitSolver.lock`: an integrator's driven coordinates, which a
drive prescribes). The impulse and the projection act on the other coordinates only: the
impulse solves with the free block of the mass matrix, ``W = N_f M_ff^-1 N_f^T`` and ``v_f
+= M_ff^-1 N_f^T lambda`` (a locked coordinate is infinitely heavy), so a kinematic
parent's mass does not change how its simulated child meets its limit, and the projection
moves no locked coordinate (a pin to a driven body moves the pinned body, never its
target). ``d_dot = N v`` keeps the locked rates: a pin to a moving body holds the pinned
point's velocity to the target's.
"""

import math

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from . import backend as _backend
from . import dynamics, expcoords
from .compiled import layout as L
from .errors import InvalidInputError, NonFiniteError
from .kinematics import forward_kinematics, point_jacobian

__all__ = ["CoordinateLimit", "ReachCone", "EllipticCone", "TwistLimit", "PointPin",
           "LimitSolver", "joint_limits", "limits_from_model", "PIN_TOLERANCE"]

#: the deadband of a hard pin (m): the pinned point is projected back onto its target
#: whenever it is farther than this in any world direction
PIN_TOLERANCE = 1e-6


def _joint_slice(model, body, need_rotation):
    model.compile()
    i = model.body_index(body)
    if i < 0:
        raise InvalidInputError("a limit needs a body, not the world (-1)")
    n = int(model.q_count[i])
    if need_rotation and n not in (3, 6):
        raise InvalidInputError(f"body {model.names[i]!r}: reach cones and twist limits need a "
                                "Spherical or Free joint (exponential coordinates)")
    return i, int(model.q_start[i]), n


class _Limit:
    """Base: ``constraints(model, q) -> (d (c,), grads (c, n_joint))`` and the joint's dofs;
    ``bilateral`` limits (pins) are always engaged, ``tolerance`` a deadband of their own
    (None: the solver's rotary or linear one)."""

    rotary = True
    bilateral = False
    tolerance = None

    def bind(self, model):
        self.body_index, self.start, self.n = _joint_slice(model, self.body,
                                                           self.need_rotation)
        return self

    def dofs(self):
        return np.arange(self.start, self.start + self.n)


class CoordinateLimit(_Limit):
    """``lower <= q[k] <= upper`` on coordinate ``k`` of ``body``'s joint (either bound may be
    infinite). ``rotary`` selects the tolerance kind (radians vs metres)."""

    need_rotation = False

    def __init__(self, body, lower=-np.inf, upper=np.inf, index=0, rotary=True):
        self.body, self.index = body, int(index)
        self.lower, self.upper = float(lower), float(upper)
        self.rotary = bool(rotary)
        if np.isnan(self.lower) or np.isnan(self.upper) or self.lower > self.upper:
            raise InvalidInputError(f"coordinate limit on {body!r}: need lower <= upper, got "
                                    f"[{lower}, {upper}]")

    def bind(self, model):
        super().bind(model)
        if not 0 <= self.index < self.n:
            raise InvalidInputError(f"coordinate limit on {self.body!r}: index {self.index} "
                                    f"outside the joint's {self.n} coordinates")
        return self

    def constraints(self, qj):
        d, g = [], []
        e = np.zeros(self.n)
        e[self.index] = 1.0
        if np.isfinite(self.lower):
            d.append(qj[self.index] - self.lower)
            g.append(e)
        if np.isfinite(self.upper):
            d.append(self.upper - qj[self.index])
            g.append(-e)
        return np.array(d), np.array(g).reshape(len(d), self.n)


class ReachCone(_Limit):
    """Circular reach cone of a spherical joint: the angle between ``axis`` p and
    ``exp(r) p`` stays below ``half_angle`` (seed 003 eqs. 50-61)."""

    need_rotation = True

    def __init__(self, body, axis, half_angle):
        self.body, self.axis, self.half_angle = body, np.asarray(axis, float), float(half_angle)
        self.value(np.zeros(3))                       # validates axis and angle

    def value(self, r):
        """``g(r)`` (eq. 52), >= 0 inside: ``r: (..., 3) -> (...)``."""
        return expcoords.reach_cone_value(r, self.axis, self.half_angle)

    def constraints(self, qj):
        r = qj[:3]
        g = np.zeros((1, self.n))
        g[0, :3] = expcoords.reach_cone_gradient(r, self.axis, self.half_angle)
        return np.array([self.value(r)]), g


class EllipticCone(_Limit):
    """Elliptic reach cone: swing of ``axis`` up to ``half_angle_1`` towards ``ref_axis`` and
    ``half_angle_2`` across it (:func:`core.expcoords.elliptic_cone_value`)."""

    need_rotation = True

    def __init__(self, body, axis, ref_axis, half_angle_1, half_angle_2):
        self.body = body
        self.args = (np.asarray(axis, float), np.asarray(ref_axis, float), float(half_angle_1),
                     float(half_angle_2))
        self.value(np.zeros(3))

    def value(self, r):
        """Elliptic cone value, >= 0 inside: ``r: (..., 3) -> (...)``."""
        return expcoords.elliptic_cone_value(r, *self.args)

    def constraints(self, qj):
        r = qj[:3]
        g = np.zeros((1, self.n))
        g[0, :3] = expcoords.elliptic_cone_gradient(r, *self.args)
        return np.array([self.value(r)]), g


class TwistLimit(_Limit):
    """``lower <= twist angle about axis <= upper`` (swing-twist decomposition, radians)."""

    need_rotation = True

    def __init__(self, body, axis, lower, upper):
        self.body, self.axis = body, np.asarray(axis, float)
        self.lower, self.upper = float(lower), float(upper)
        if not -np.pi <= self.lower <= self.upper <= np.pi:
            raise InvalidInputError(f"twist limit on {body!r}: need -pi <= lower <= upper <= pi, "
                                    f"got [{lower}, {upper}]")
        self.value(np.zeros(3))

    def value(self, r):
        """The twist angle: ``r: (..., 3) -> (...)``."""
        return expcoords.twist_angle(r, self.axis)

    def constraints(self, qj):
        r = qj[:3]
        tw = float(self.value(r))
        gr = expcoords.twist_gradient(r, self.axis)
        g = np.zeros((2, self.n))
        g[0, :3], g[1, :3] = gr, -gr
        return np.array([tw - self.lower, self.upper - tw]), g


class PointPin(_Limit):
    """``point (3,)`` of ``body`` (name or index; its frame) held to ``target (3,)`` of
    ``target_body`` (its frame; -1: the world, then ``target`` is a world point) by a
    bilateral constraint (module docstring), within ``tolerance`` metres. Its coordinates are
    all the model's (the rows live on the ancestors of both bodies)."""

    bilateral = True
    rotary = False
    need_rotation = False

    def __init__(self, body, point, target_body=-1, target=(0.0, 0.0, 0.0),
                 tolerance=PIN_TOLERANCE):
        self.body, self.target_body = body, target_body
        self.point = np.asarray(point, dtype=float).reshape(3)
        self.target = np.asarray(target, dtype=float).reshape(3)
        self.tolerance = float(tolerance)
        if not (np.all(np.isfinite(np.r_[self.point, self.target]))
                and self.tolerance > 0.0):
            raise InvalidInputError(f"pin on {body!r}: point and target must be 3 finite "
                                    "numbers each and the tolerance above 0")

    def bind(self, model):
        model.compile()
        self.body_index = model.body_index(self.body)
        self.target_index = model.body_index(self.target_body)
        if self.body_index < 0 or self.body_index == self.target_index:
            raise InvalidInputError(f"pin on {self.body!r}: pin a body of the model to another "
                                    "body or to the world")
        self.model, self.data = model, model.create_data()
        self.start, self.n = 0, model.nv
        return self

    def constraints(self, q):
        forward_kinematics(self.model, self.data, q)
        x, J = point_jacobian(self.model, self.data, self.body_index, self.point)
        if self.target_index >= 0:
            xt, Jt = point_jacobian(self.model, self.data, self.target_index, self.target)
            x, J = x - xt, J - Jt
        else:
            x = x - self.target
        return np.concatenate([x, -x]), np.concatenate([J, -J])


def joint_limits(body, joint):
    """A :class:`CoordinateLimit` on ``body`` (index) for every finite bound of ``joint``'s
    ``lower/upper``; a coordinate whose Jacobian column has no rotation at the neutral pose
    is linear (metres)."""
    out = []
    lo, hi = np.asarray(joint.lower, float), np.asarray(joint.upper, float)
    S = None
    for k in range(joint.nq):
        if np.isfinite(lo[k]) or np.isfinite(hi[k]):
            S = joint.jacobian(joint.neutral()) if S is None else S
            rotary = bool(np.abs(S[:3, k]).max() > 0.0)
            out.append(CoordinateLimit(body, lo[k], hi[k], index=k, rotary=rotary))
    return out


def limits_from_model(model):
    """:func:`joint_limits` of every body of the model."""
    return [lim for i, j in enumerate(model.joints) for lim in joint_limits(i, j)]


class LimitSolver:
    """Impulse-based enforcement of a list of limits with ArtiSynth's anti-chattering rules.

    Args:
        model: the :class:`core.model.Model`; limits: list of limit objects above.
        restitution: e in [0, 1]; rotary_tol / linear_tol: deadband p_tol (rad / m, applied
            to d in the limit's own units); min_engaged_steps: >= 1 (seed 002 uses 2);
        iterations: the most projected Gauss-Seidel sweeps (fewer once converged, :meth:`_pgs`).

    Attributes after :meth:`apply`: ``engaged`` (bool per constraint), ``engaged_steps``,
    ``distances``; this state lives in ``kernel_arrays`` ``(li, lr)``, the packed solver
    that the compiled integrator step runs when ``compiled`` (coordinate limits, circular
    and elliptic reach cones and twist limits; see :func:`core.compiled.kernels.advance`),
    so both paths
    continue each other's engagement. :meth:`apply` raises :class:`core.errors.NonFiniteError` (which the integrators report as
    a divergence) when the mass matrix is no longer positive definite.
    """

    def __init__(self, model, limits, restitution=0.0, rotary_tol=1e-3, linear_tol=1e-4,
                 min_engaged_steps=2, iterations=500):
        self.model = model.compile()
        self.limits = [lim.bind(model) for lim in limits]
        if not 0.0 <= restitution <= 1.0:
            raise InvalidInputError(f"restitution must be in [0, 1], got {restitution}")
        if rotary_tol < 0 or linear_tol < 0 or int(min_engaged_steps) < 1:
            raise InvalidInputError("tolerances must be >= 0 and min_engaged_steps >= 1")
        self.restitution = float(restitution)
        self.min_engaged_steps = int(min_engaged_steps)
        self.iterations = int(iterations)
        q0 = model.neutral()
        counts = [len(lim.constraints(q0[lim.dofs()])[0]) for lim in self.limits]
        self.n_constraints = int(sum(counts))
        #: the limited body of every constraint: (c,) body indices
        self.constraint_body = np.repeat([lim.body_index for lim in self.limits],
                                         counts).astype(int)
        self.tol = np.concatenate([[0.0]] + [np.full(c, lim.tolerance if lim.tolerance is not None
                                                     else rotary_tol if lim.rotary else linear_tol)
                                             for c, lim in zip(counts, self.limits)])[1:]
        #: ``(c,)`` bool: the rows of bilateral limits (pins), always engaged, no restitution
        self.bilateral = np.repeat([lim.bilateral for lim in self.limits], counts).astype(bool)
        #: ``(c,)`` each row's restitution (0 on the bilateral rows)
        self.bounce = np.where(self.bilateral, 0.0, self.restitution)
        #: the locked coordinates (module docstring, *Locked coordinates*)
        self.locked = np.zeros(0, dtype=int)
        self.kernel_arrays = self._pack(counts)
        li, lr = self.kernel_arrays
        (e, st, *_), (dist, *_) = L.limit_offsets(self.n_constraints, model.nv)
        c = self.n_constraints
        #: substeps each constraint has been engaged (a view of the packed state)
        self.engaged_steps = li[st:st + c]
        #: the constraints' values d at the last :meth:`apply` (a view of the packed state)
        self.distances = lr[dist:dist + c]
        self.distances[:] = np.inf
        self._engaged = li[e:e + c]

    @property
    def engaged(self):
        """``(c,)`` bool: which constraints are engaged (a copy of the packed state)."""
        return self._engaged != 0

    @engaged.setter
    def engaged(self, value):
        self._engaged[:] = np.asarray(value, dtype=bool)

    def _pack(self, counts):
        """The arrays ``(li, lr)`` of the compiled limit solver (layout:
        :func:`core.compiled.layout.limit_offsets`): kinds, coordinates and constants of
        the constraints, and the engagement state, which :meth:`apply` shares. The rows
        hold the constraints of :class:`CoordinateLimit`, :class:`ReachCone`,
        :class:`EllipticCone` and :class:`TwistLimit`; with another kind of limit in the
        list :attr:`compiled` is False (the limits are applied here, in Python, after every
        substep)."""
        c, nv = self.n_constraints, self.model.nv
        (*_, li_size), (*_, lr_size) = L.limit_offsets(c, nv)
        li, lr = np.zeros(li_size, dtype=np.int64), np.zeros(lr_size)
        li[[L.LI_C, L.LI_MIN, L.LI_ITER]] = c, self.min_engaged_steps, self.iterations
        lr[0] = self.restitution
        rows = li[L.LI_HEADER:L.LI_HEADER + 2 * c].reshape(c, 2)
        reals = lr[L.LR_HEADER:L.LR_HEADER + L.LR_PER * c].reshape(c, L.LR_PER)
        reals[:, 1] = self.tol
        self.compiled = True
        k = 0
        for lim, n in zip(self.limits, counts):
            if isinstance(lim, CoordinateLimit):
                dof = lim.start + lim.index
                for kind, bound in ((L.LIMIT_LOWER, lim.lower), (L.LIMIT_UPPER, lim.upper)):
                    if np.isfinite(bound):
                        rows[k] = kind, dof
                        reals[k, 0] = bound
                        k += 1
            elif isinstance(lim, ReachCone):
                rows[k] = L.LIMIT_CONE, lim.start
                reals[k, 2:5] = lim.axis / np.linalg.norm(lim.axis)
                reals[k, 5] = math.cos(lim.half_angle)
                k += 1
            elif isinstance(lim, EllipticCone):
                axis, ref, h1, h2 = lim.args
                p, u, _ = expcoords.ellipse_frame(axis, ref)
                rows[k] = L.LIMIT_ELLIPSE, lim.start
                reals[k, [0, 5]] = math.sin(0.5 * h1) ** 2, math.sin(0.5 * h2) ** 2
                reals[k, 2:5], reals[k, 6:9] = p, u
                k += 1
            elif isinstance(lim, TwistLimit):
                for kind, bound in ((L.LIMIT_TWIST_LOWER, lim.lower),
                                    (L.LIMIT_TWIST_UPPER, lim.upper)):
                    rows[k] = kind, lim.start
                    reals[k, 0] = bound
                    reals[k, 2:5] = lim.axis / np.linalg.norm(lim.axis)
                    k += 1
            else:
                self.compiled = False
                k += n
        # each constraint's coupled ones: those whose coordinates overlap its own
        start = rows[:, 1]
        end = start + np.where(rows[:, 0] >= L.LIMIT_CONE, 3, 1)
        coupled = (start[:, None] < end[None, :]) & (start[None, :] < end[:, None])
        (*_, cp, ci, _), _ = L.limit_offsets(c, nv)
        li[cp + 1:cp + c + 1] = np.cumsum(coupled.sum(axis=1))
        li[ci:ci + int(coupled.sum())] = np.nonzero(coupled)[1]
        return li, lr

    def lock(self, dofs):
        """Lock the coordinates ``dofs`` (module docstring): the impulses and projections
        move the others only (an integrator locks its driven coordinates)."""
        self.locked = np.asarray(dofs, dtype=int).ravel()

    def _free_rows(self, N):
        """``N`` with its locked columns zeroed (a copy), or N itself when none is locked."""
        if not self.locked.size:
            return N
        N = N.copy()
        N[:, self.locked] = 0.0
        return N

    def reset(self):
        """Forget the engagement state (call before a new run)."""
        self.engaged = False
        self.engaged_steps[:] = 0

    def evaluate(self, q):
        """All constraints: ``d (c,)`` and ``N (c, nv)`` (rows are the gradients); on the
        numba backend by :func:`core.compiled.limits.constraints` when
        :attr:`compiled` (each limit's own evaluation below where a twist limit is undefined,
        which raises)."""
        twin = _backend.twins.limit_constraints
        if twin is not None and self.compiled:
            out = twin(self, q)
            if out is not None:
                return out
        c, nv = self.n_constraints, self.model.nv
        d, N = np.empty(c), np.zeros((c, nv))
        k = 0
        for lim in self.limits:
            dofs = lim.dofs()
            dl, gl = lim.constraints(q[dofs])
            d[k:k + len(dl)] = dl
            N[k:k + len(dl), dofs] = gl
            k += len(dl)
        return d, N

    def _pgs(self, W, b):
        """``lambda >= 0`` with ``W lambda + b >= 0`` complementary: projected Gauss-Seidel
        from zero until a sweep changes no impulse by more than ``PGS_RTOL`` times the
        largest (at most ``iterations`` sweeps; :data:`core.compiled.layout.PGS_RTOL`); the compiled
        :func:`core.compiled.limits.pgs` when the numba backend is on."""
        twin = _backend.twins.limit_pgs
        if twin is not None:
            return twin(W, b, self.iterations)
        lam = np.zeros(len(b))
        diag = np.diag(W)
        for _ in range(self.iterations):
            change = size = 0.0
            for i in range(len(b)):
                new = max(0.0, lam[i] - (b[i] + W[i] @ lam) / diag[i]) if diag[i] > 0.0 else 0.0
                change, size = max(change, abs(new - lam[i])), max(size, new)
                lam[i] = new
            if change <= L.PGS_RTOL * size:
                break
        return lam

    def engage(self, q, v):
        """Evaluate the constraints at ``q, v: (nv,)`` and update the engagement state (module
        docstring); returns ``d (c,)``, ``N (c, nv)``, ``d_dot = N v (c,)`` and the engaged
        constraints' ``(c,)`` bool mask."""
        d, N = self.evaluate(q)
        ddot = N @ v
        self.distances[:] = d
        was = self.engaged
        leave = was & (d > 0) & (ddot > 0) & (self.engaged_steps >= self.min_engaged_steps)
        engaged = (was & ~leave) | (d < 0) | self.bilateral
        self.engaged_steps[:] = np.where(engaged, self.engaged_steps + 1, 0)
        self.engaged = engaged
        return d, N, ddot, engaged

    def apply(self, data, q, v):
        """Engage/disengage, then the velocity impulse and position correction.

        ``q, v: (nv,)``; returns new ``(q, v)`` arrays (unchanged when nothing is engaged)."""
        if self.n_constraints == 0:
            return q, v
        d, N, ddot, engaged = self.engage(q, v)
        if not engaged.any():
            return q, v
        Ne = self._free_rows(N[engaged])
        M = dynamics.crba(self.model, data, q)
        if self.locked.size:               # the free block, the locked ones infinitely heavy
            M = M.copy()
            M[self.locked, :] = M[:, self.locked] = 0.0
            M[self.locked, self.locked] = 1.0
        try:
            fac = cho_factor(M, check_finite=False)
        except np.linalg.LinAlgError:
            worst = int(self.constraint_body[engaged][np.argmin(d[engaged])])
            raise NonFiniteError(
                f"limits: the mass matrix is not positive definite while body "
                f"{self.model.names[worst]!r} is held at its limit, which only a diverged "
                "state gives; reduce the time step") from None
        MinvNt = cho_solve(fac, Ne.T, check_finite=False)           # (nv, c)
        W = Ne @ MinvNt
        # velocity: n.v_new >= -e min(n.v, 0)
        target = -self.bounce[engaged] * np.minimum(ddot[engaged], 0.0)
        lam = self._pgs(W, ddot[engaged] - target)
        v = v + MinvNt @ lam
        if np.any(d[engaged] + self.tol[engaged] < 0):
            q = self.project(q, d, N)
        return q, v

    def hold(self, q):
        """``(q', d, N)``: ``q`` projected (:meth:`project`) where a constraint is outside its
        deadband (else q itself), and the constraints at q'; on the numba backend in one
        kernel call (:func:`core.compiled.limits.hold`) when :attr:`compiled`."""
        twin = _backend.twins.limit_hold
        if twin is not None and self.compiled:
            out = twin(self, q)
            if out is not None:
                return out
        d, N = self.evaluate(q)
        if np.any(d + self.tol < 0.0):
            q = self.project(q, d, N)
            d, N = self.evaluate(q)
        return q, d, N

    def project(self, q, d, N):
        """The position projection (module docstring, step 2): ``q + N^T mu`` with ``mu >=
        0`` and ``N dq >= -d - p_tol`` for every constraint, re-linearized at the projected
        pose up to ``POSITION_PASSES`` times until each constraint is within its deadband;
        ``d, N`` the constraints at q (:meth:`evaluate`). Call it when a constraint is
        outside its deadband; returns a new array."""
        for _ in range(L.POSITION_PASSES):
            N = self._free_rows(N)
            q = q + N.T @ self._pgs(N @ N.T, d + self.tol)
            d, N = self.evaluate(q)
            if np.all(d + self.tol >= -L.POSITION_SLACK):
                break
        return q
