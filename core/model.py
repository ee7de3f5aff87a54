"""Kinematic trees of general scleronomic joints (seed 000 sections 3-4, eqs. 7-9, 25).

A :class:`Model` holds, for every body ``i`` (numbered in the order they were added, parents
first): its parent (``-1`` is the world), its joint (any :class:`core.joints.base.Joint`),
the constant placement ``H_i: (4, 4)`` of the joint's parent frame in the parent body (the H
of eq. 25), so that the body's pose is ``T_i = T_parent H_i G_i(q_i)`` (eq. 9), and the 6x6
spatial inertia ``J_i`` of eq. 8 in the body frame. It also holds gravity, joint springs and
dampers and point-to-point damped springs (passive forces the dynamics always include).

The structure is compiled into index arrays once (:meth:`Model.compile`, called lazily by the
algorithms) so that :mod:`core.kinematics` and :mod:`core.dynamics` can work on all bodies
with array operations instead of a Python loop per body.
"""

import math

import numpy as np
from numpy.polynomial import chebyshev

from .errors import InvalidInputError, NonFiniteError
from .joints.base import Joint
from .joints.spline_curve import cubic_span_values
from .lie import se3, so3

__all__ = ["Model", "spatial_inertia", "DEFAULT_GRAVITY"]

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)


def spatial_inertia(mass, com, inertia):
    """The 6x6 generalized inertia ``J = [[I_o, m[r]], [m[r]^T, m 1]]`` of seed 000 eq. 8.

    ``mass`` in kg, ``com: (3,)`` the centre of mass in the body frame, ``inertia: (3, 3)`` the
    rotational inertia about the centre of mass; ``I_o = inertia + m [r]^T [r]`` is the
    rotational inertia about the body origin. Acts on twists ``[w; v]``: the momentum of a
    body moving with body velocity ``v`` is ``J v``.
    """
    r = so3.hat(np.asarray(com, dtype=float))
    J = np.empty((6, 6))
    J[:3, :3] = np.asarray(inertia, dtype=float) + mass * (r.T @ r)
    J[:3, 3:] = mass * r
    J[3:, :3] = mass * r.T
    J[3:, 3:] = mass * np.eye(3)
    return J


def _as_slice(idx):
    """``idx`` (sorted int array) as a slice when it is a contiguous range (basic indexing
    gives views and skips numpy's gather/scatter), else unchanged."""
    idx = np.asarray(idx, dtype=int)
    if idx.size and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
        return slice(int(idx[0]), int(idx[0]) + idx.size)
    return idx


def _check_inertia(mass, com, inertia, name):
    mass = float(mass)
    if not np.isfinite(mass) or mass <= 0.0:
        raise InvalidInputError(f"body {name!r}: mass must be a positive finite number in kg, "
                                f"got {mass}")
    com = np.asarray(com, dtype=float)
    if com.shape != (3,) or not np.all(np.isfinite(com)):
        raise InvalidInputError(f"body {name!r}: com must be 3 finite numbers (the centre of "
                                f"mass in the body frame, metres), got {com!r}")
    inertia = np.asarray(inertia, dtype=float)
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
        raise InvalidInputError(f"body {name!r}: inertia must be a finite 3x3 matrix (kg m^2 "
                                f"about the centre of mass), got shape {inertia.shape}")
    scale = max(np.abs(inertia).max(), 1e-300)
    if np.abs(inertia - inertia.T).max() > 1e-9 * scale:
        raise InvalidInputError(f"body {name!r}: inertia must be symmetric; pass "
                                "(I + I.T) / 2 if the asymmetry is rounding")
    principal = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    if principal[0] <= 0.0:
        raise InvalidInputError(f"body {name!r}: inertia must be positive definite, its "
                                f"principal moments are {principal}; give every axis a "
                                "positive moment")
    a, b, c = principal
    if c > a + b + 1e-9 * c:
        raise InvalidInputError(f"body {name!r}: principal moments {principal} violate the "
                                "triangle inequality (largest > sum of the other two), which "
                                "no physical mass distribution has; check the inertia")
    return mass, com, 0.5 * (inertia + inertia.T)


#: candidate degrees of the per-span polynomials of the cubic spline joints (the lowest that
#: reaches FIT_TOL is used), the error they must reach (relative to max(1, |values|)), the
#: Chebyshev nodes per span of the least-squares fit and the points where it is verified
FIT_DEGREES = (12, 16, 20, 24, 28, 32)
FIT_TOL = 2e-14
_FIT_NODES = np.cos(np.pi * (np.arange(64) + 0.5) / 64)
_FIT_CHECK = np.linspace(-1.0, 1.0, 33)


def _cheb_to_monomial(deg):
    """``(deg + 1, deg + 1)``: column k holds the monomial coefficients of T_k."""
    out = np.zeros((deg + 1, deg + 1))
    for k in range(deg + 1):
        m = chebyshev.cheb2poly(np.eye(deg + 1)[k])
        out[:m.size, k] = m
    return out


def _fit_cubic_spans(joints, placements):
    """Tabulate every knot span of the cubic spline curve ``joints`` (of bodies with joint
    placements ``placements``) for the batched dynamics: ``(rows (S, 1 + 28 (deg + 1)),
    deg, err)``.

    Row s holds the span midpoint ``m`` and the ``(deg + 1, 28)`` coefficients, in the powers
    of ``q - m``, of ``[P G(q) (16, row-major), S (6), dS/dq (6)]``, where ``G, S, dS/dq``
    are the exact values of the joint's recursion (:func:`~core.joints.spline_curve
    .cubic_span_values`, the vectorised ``_cubic_evaluate``) and ``P`` the placement. They
    are entire functions of q on a span (products of exponentials of cubics), so a
    polynomial of modest degree reaches round-off: the coefficients come from a
    least-squares Chebyshev fit at 64 Chebyshev nodes (their discrete orthogonality makes it
    one product), converted to monomials, and the lowest degree
    in :data:`FIT_DEGREES` whose error at 33 points per span (ends included), relative to
    ``max(1, |values|)``, is at most :data:`FIT_TOL` is kept (else the most accurate);
    ``err`` is that verified error."""
    nodes = np.concatenate([_FIT_NODES, _FIT_CHECK])
    mids, halves, values = [], [], []
    for joint, P in zip(joints, placements):
        a = joint._starts
        h = 0.5 * (np.append(a[1:], joint._hi) - a)
        Y = cubic_span_values(joint, h[:, None] * (nodes + 1.0))
        Y[..., :16] = (P @ Y[..., :16].reshape(-1, 4, 4)).reshape(Y.shape[:2] + (16,))
        mids.append(a + h)
        halves.append(h)
        values.append(Y)
    Y = np.concatenate(values)                                 # (S, nodes, 28)
    nfit = _FIT_NODES.size
    half = np.concatenate(halves)
    scale = np.maximum(1.0, np.abs(Y[:, nfit:]).max(axis=(1, 2)))
    best = None
    for deg in FIT_DEGREES:
        # least squares at the Chebyshev nodes by their discrete orthogonality
        c = chebyshev.chebvander(_FIT_NODES, deg).T @ \
            Y[:, :nfit].transpose(1, 0, 2).reshape(nfit, -1) * (2.0 / nfit)
        c[0] *= 0.5
        coef = (_cheb_to_monomial(deg) @ c).reshape(deg + 1, len(half), 28).transpose(1, 0, 2)
        coef /= half[:, None, None] ** np.arange(deg + 1)[:, None]   # spans are non-empty
        pw = np.ones((len(half), _FIT_CHECK.size, deg + 1))      # powers as the runtime
        pw[..., 1:] = (half[:, None] * _FIT_CHECK)[:, :, None]   # forms them: products
        np.multiply.accumulate(pw[..., 1:], axis=2, out=pw[..., 1:])
        err = float((np.abs(pw @ coef - Y[:, nfit:]).max(axis=(1, 2)) / scale).max())
        if best is None or err < best[2]:
            best = (deg, coef, err)
        if err <= FIT_TOL:
            break
    deg, coef, err = best
    rows = np.concatenate([np.concatenate(mids)[:, None], coef.reshape(len(half), -1)],
                          axis=1)
    return np.ascontiguousarray(rows), deg, err


class Model:
    """A kinematic tree (seed 000 eq. 9) with inertias, gravity and passive forces.

    Attributes (after :meth:`compile`, which every algorithm calls when needed):
        nbodies, nq, nv: counts (``nq == nv``: every joint uses coordinate rates).
        names, parents ``(nb,)``, joints, placements ``(nb, 4, 4)``, inertias ``(nb, 6, 6)``
        (eq. 8 in the body frame), masses ``(nb,)``, coms ``(nb, 3)``, gravity ``(3,)``.
        q_start ``(nb,)``, q_count ``(nb,)``: the slice ``q[q_start[i]:q_start[i]+q_count[i]]``
        belongs to body ``i``; dof_body ``(nv,)``: the body owning each coordinate.
    """

    def __init__(self, gravity=DEFAULT_GRAVITY, name="model"):
        self.name = str(name)
        self.gravity = gravity
        self.names = []
        self.parents_list = []
        self.joints = []
        self._placements = []
        self._inertias = []
        self._masses = []
        self._coms = []
        self.joint_springs = []      # (body, stiffness (n,), damping (n,), rest (n,))
        self.point_springs = []      # (body_a, point_a, body_b, point_b, k, c, rest_length)
        self._compiled = False

    @property
    def gravity(self):
        """Gravitational acceleration ``(3,)`` in the world frame (m/s^2), read-only array;
        assign a new vector to change it."""
        return self._gravity

    @gravity.setter
    def gravity(self, value):
        g = np.array(value, dtype=float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise InvalidInputError(f"gravity must be 3 finite numbers (m/s^2), got {value!r}")
        g.flags.writeable = False
        self._gravity = g
        self.gravity_list = g.tolist()       # as Python floats, for the scalar paths
        #: ``[0; -g]``: the base acceleration that stands in for gravity (Featherstone)
        self.gravity_twist = np.concatenate([np.zeros(3), -g])

    # ------------------------------------------------------------------ building
    def add_body(self, name, parent, joint, placement=None, mass=1.0, com=(0.0, 0.0, 0.0),
                 inertia=None):
        """Add a body and return its index.

        Args:
            name: unique string. parent: index of an existing body, or -1 for the world.
            joint: a :class:`core.joints.base.Joint` (its G(q) moves this body).
            placement: ``(4, 4)`` pose of the joint's parent frame in the parent body (H of
                eq. 25); identity if None.
            mass: kg (> 0). com: ``(3,)`` centre of mass in the body frame (m).
            inertia: ``(3, 3)`` rotational inertia about the centre of mass (kg m^2),
                symmetric positive definite, principal moments obeying the triangle
                inequality; default ``1e-3 * mass * I``.
        """
        name = str(name)
        if name in self.names:
            raise InvalidInputError(f"a body named {name!r} already exists; use a unique name")
        parent = int(parent)
        if parent < -1 or parent >= len(self.names):
            raise InvalidInputError(
                f"body {name!r}: parent {parent} is not defined yet; add the parent body "
                f"first (valid parents: -1 for the world, 0..{len(self.names) - 1})")
        if not isinstance(joint, Joint):
            raise InvalidInputError(f"body {name!r}: joint must be a core.joints Joint, got "
                                    f"{type(joint).__name__}")
        if joint.nq != joint.nv:
            raise InvalidInputError(f"body {name!r}: joints must use coordinate rates "
                                    "(nq == nv)")
        H = np.eye(4) if placement is None else se3.check_transform(
            placement, f"placement of body {name!r}")
        mass, com, inertia = _check_inertia(mass, com, np.eye(3) if inertia is None else inertia,
                                            name)
        if inertia is None:
            inertia = 1e-3 * mass * np.eye(3)
        self.names.append(name)
        self.parents_list.append(parent)
        self.joints.append(joint)
        self._placements.append(np.array(H, dtype=float))
        self._masses.append(mass)
        self._coms.append(com.copy())
        self._inertias.append(spatial_inertia(mass, com, inertia))
        self._compiled = False
        return len(self.names) - 1

    def body_index(self, name):
        """Index of the body called ``name`` (or ``name`` itself if it is a valid index)."""
        if isinstance(name, (int, np.integer)):
            if -1 <= int(name) < len(self.names):
                return int(name)
            raise InvalidInputError(f"body index {name} out of range 0..{len(self.names) - 1}")
        try:
            return self.names.index(name)
        except ValueError:
            raise InvalidInputError(f"no body named {name!r}; bodies are {self.names}") from None

    def add_joint_spring(self, body, stiffness, damping=0.0, rest=None):
        """Spring and damper on every coordinate of ``body``'s joint:
        ``tau = -stiffness (q - rest) - damping q_dot`` (per coordinate, ``(n,)`` or scalars)."""
        i = self.body_index(body)
        n = self.joints[i].nq
        k = np.broadcast_to(np.asarray(stiffness, dtype=float), (n,)).copy()
        c = np.broadcast_to(np.asarray(damping, dtype=float), (n,)).copy()
        r = self.joints[i].neutral() if rest is None else np.broadcast_to(
            np.asarray(rest, dtype=float), (n,)).copy()
        if not (np.all(np.isfinite(k)) and np.all(np.isfinite(c)) and np.all(np.isfinite(r))
                and np.all(k >= 0) and np.all(c >= 0)):
            raise InvalidInputError(f"joint spring on {self.names[i]!r}: stiffness and "
                                    "damping must be finite and >= 0, rest finite")
        self.joint_springs.append((i, k, c, r))
        self._compiled = False

    def add_point_spring(self, body_a, point_a, body_b, point_b, stiffness, damping=0.0,
                         rest_length=0.0):
        """Damped spring between ``point_a: (3,)`` on body a and ``point_b`` on body b (points
        in body frames; a body of -1 is the world). Force magnitude
        ``stiffness (l - rest_length) + damping l_dot`` pulling the points together."""
        a, b = self.body_index(body_a), self.body_index(body_b)
        pa, pb = np.asarray(point_a, dtype=float), np.asarray(point_b, dtype=float)
        vals = np.array([stiffness, damping, rest_length], dtype=float)
        if pa.shape != (3,) or pb.shape != (3,) or not np.all(np.isfinite(np.r_[pa, pb, vals])):
            raise InvalidInputError("point spring: points must be 3 finite numbers each and "
                                    "stiffness/damping/rest_length finite")
        if vals.min() < 0 or a == b:
            raise InvalidInputError("point spring: stiffness, damping and rest_length must be "
                                    ">= 0 and the two bodies different")
        self.point_springs.append((a, pa, b, pb, *vals))
        self._compiled = False

    # ------------------------------------------------------------------ compiled form
    @property
    def nbodies(self):
        return len(self.names)

    @property
    def nq(self):
        if self._compiled:
            return self._nq
        return int(sum(j.nq for j in self.joints))

    nv = nq

    def neutral(self):
        """Reference configuration ``q: (nq,)`` (every joint's neutral())."""
        return np.concatenate([j.neutral() for j in self.joints]) if self.joints else np.zeros(0)

    @property
    def lower(self):
        """Coordinate lower limits ``(nq,)`` (-inf where unlimited)."""
        return np.concatenate([j.lower for j in self.joints]) if self.joints else np.zeros(0)

    @property
    def upper(self):
        """Coordinate upper limits ``(nq,)`` (inf where unlimited)."""
        return np.concatenate([j.upper for j in self.joints]) if self.joints else np.zeros(0)

    def compile(self):
        """Build the index arrays and constant tables the vectorised algorithms use.

        Called automatically; cheap enough to call after every change to the model.
        """
        if self._compiled:
            return self
        nb = self.nbodies
        if nb == 0:
            raise InvalidInputError("the model has no bodies; add_body() first")
        self.parents = np.array(self.parents_list, dtype=int)
        self.placements = np.array(self._placements)
        self.inertias = np.array(self._inertias)
        self.masses = np.array(self._masses)
        self.coms = np.array(self._coms)
        self.q_count = np.array([j.nq for j in self.joints], dtype=int)
        self.q_start = np.concatenate([[0], np.cumsum(self.q_count)[:-1]]).astype(int)
        nv = int(self.q_count.sum())
        self._nq = nv
        self.dof_body = np.repeat(np.arange(nb), self.q_count)
        self.one_dof_each = bool(np.all(self.q_count == 1))
        # ancestry: anc[i, k] = 1 if k is i or one of its ancestors
        anc = np.zeros((nb, nb))
        depth = np.zeros(nb, dtype=int)
        for i, p in enumerate(self.parents):
            if p >= 0:
                anc[i] = anc[p]
                depth[i] = depth[p] + 1
            anc[i, i] = 1.0
        self.ancestry = anc
        self.ancestry_T = np.ascontiguousarray(anc.T)
        self.depth = depth
        # dof incidence: B[i, j] = 1 if coordinate j belongs to body i
        B = np.zeros((nb, nv))
        B[self.dof_body, np.arange(nv)] = 1.0
        self.dof_incidence = B
        # mass-matrix sparsity: M[j, l] != 0 only if one body is an ancestor of the other
        lower = anc[self.dof_body][:, self.dof_body] > 0      # body(l) anc-or-self of body(j)
        self.mass_mask = lower
        self.mass_mask_upper_only = np.ascontiguousarray(lower.T & ~lower)
        #: every lower-triangle pair is ancestor-related (a chain): no mask for Cholesky
        self.mass_lower_dense = bool(np.all(lower[np.tril_indices(nv)]))
        one = np.nonzero(self.q_count == 1)[0]
        self.one_dof_bodies = _as_slice(one)
        self.one_dof_q = _as_slice(self.q_start[one])
        # pointer-jumping schedule for world poses: log2(depth) batched products
        schedule = []
        ptr = self.parents.copy()
        while np.any(ptr >= 0):
            sel = np.nonzero(ptr >= 0)[0]
            schedule.append((_as_slice(sel), _as_slice(ptr[sel])))
            new = ptr.copy()
            new[sel] = ptr[ptr[sel]]
            ptr = new
        self.pose_schedule = schedule
        # articulated-body recursion: bodies grouped by (depth, dof count), deepest first
        levels = []
        for d in range(depth.max(), -1, -1):
            for n in sorted(set(self.q_count[depth == d].tolist())):
                idx = np.nonzero((depth == d) & (self.q_count == n))[0]
                dofs = (self.q_start[idx][:, None] + np.arange(n)[None, :])
                par = self.parents[idx]
                has_parent = par >= 0
                unique = len(np.unique(par[has_parent])) == int(has_parent.sum())
                levels.append((idx, par, dofs, n, has_parent, unique))
        self.aba_levels = levels
        self._compile_joint_families()
        self._compile_springs()
        self._data_key = (id(self), nb, nv)      # Data.model_id of data made after this
        #: one body on one cubic spline curve joint: core.dynamics.aba's scalar fast path
        self.single_spline = (nb == 1 and len(self.spline_bodies) == 1
                              and not self.point_springs)
        if self.single_spline:
            # per span of the one joint: its midpoint and coefficient table, for the
            # one-body path of core.dynamics
            self.spline_mids_list = self.spline_rows[:, 0].tolist()
            self.spline_span_coefs = [row[1:].reshape(-1, 28) for row in self.spline_rows]
            # J = [[I_o, [m r]], [[m r]^T, m 1]] (eq. 8) as floats: I_o rows, m r, m
            J = self.inertias[0]
            self.inertia_floats = (tuple(J[:3, :3].ravel().tolist()),
                                   (float(J[2, 4]), float(J[0, 5]), float(J[1, 3])),
                                   float(J[3, 3]))
        self._compiled = True
        return self

    def _compile_joint_families(self):
        """Group constant-screw 1-DOF joints (revolute, prismatic, helical) so that their
        transforms are computed for all of them in one array expression:
        ``H G(q) = [H_R + sin q H_R[k] + (1 - cos q) H_R[k]^2, H_p + q H_R v]`` for the screw
        ``[k; v]`` with ``v`` parallel to ``k`` or ``k = 0`` (then ``[k] v = 0``)."""
        from .joints.lower_pairs import Helical, Prismatic, Revolute
        from .joints.spline_curve import SplineCurveJoint
        spline_bodies = [i for i, j in enumerate(self.joints)
                         if type(j) is SplineCurveJoint and getattr(j, "_cubic", None) is not None]
        self._compile_cubic_splines(spline_bodies)
        screw_bodies = []
        for i, j in enumerate(self.joints):
            if isinstance(j, (Revolute, Prismatic, Helical)):
                k, v = j.screw[:3], j.screw[3:]
                if np.linalg.norm(np.cross(k, v)) < 1e-12:
                    screw_bodies.append(i)
        self.screw_bodies = np.array(screw_bodies, dtype=int)
        sb = self.screw_bodies
        special = set(sb.tolist()) | set(spline_bodies)
        self.other_bodies = np.array([i for i in range(self.nbodies) if i not in special],
                                     dtype=int)
        self.all_screws = len(sb) == self.nbodies and self.one_dof_each
        if len(sb):
            screws = np.array([self.joints[i].screw for i in sb])
            K = so3.hat(screws[:, :3])
            H = self.placements[sb, :3, :]
            HR = H[:, :, :3]
            # the top 3x4 block of H G(q) is table^T [1, sin q, 1 - cos q, q]
            table = np.zeros((len(sb), 4, 3, 4))
            table[:, 0] = H
            table[:, 1, :, :3] = HR @ K
            table[:, 2, :, :3] = HR @ (K @ K)
            table[:, 3, :, 3] = np.einsum("nij,nj->ni", HR, screws[:, 3:])
            self.screw_table = table.reshape(len(sb), 4, 12)
            self.screw_dofs = self.q_start[sb]
            self.screw_S = screws
        self.other_dofs = [np.arange(self.q_start[i], self.q_start[i] + self.q_count[i])
                           for i in self.other_bodies]

    def _compile_cubic_splines(self, bodies):
        """Tabulate every knot span of every cubic :class:`SplineCurveJoint`
        (:func:`_fit_cubic_spans`) so that :mod:`core.kinematics` evaluates the local
        transforms, S and dS/dq of all of them with three batched array operations. Joints
        outside their knot range fall back to evaluate()."""
        self.spline_bodies = np.array(bodies, dtype=int)
        self.spline_dofs = self.q_start[self.spline_bodies] if bodies else np.zeros(0, int)
        if not bodies:
            return
        js = [self.joints[i] for i in bodies]
        self.spline_joints = js
        self.spline_sel = _as_slice(self.spline_bodies)
        self.spline_dof_sel = _as_slice(self.spline_dofs)
        self.spline_all = self.one_dof_each and len(bodies) == self.nbodies
        #: first row of each joint in spline_rows; the joints' span starts and ranges
        self.spline_first = np.cumsum([0] + [len(j._starts) for j in js])[:-1].tolist()
        self.spline_starts_lists = [j._starts_list for j in js]
        self.spline_ranges = [(j._lo, j._hi) for j in js]
        #: per span [midpoint, (degree + 1, 28) coefficients]; the degree; the verified
        #: error of the tables relative to max(1, |values|) (see _fit_cubic_spans)
        self.spline_rows, self.spline_degree, self.spline_fit_error = _fit_cubic_spans(
            js, self.placements[self.spline_bodies])

    def _compile_springs(self):
        js = self.joint_springs
        nv = int(self.q_count.sum())
        self.spring_k = np.zeros(nv)
        self.spring_c = np.zeros(nv)
        self.spring_rest = np.zeros(nv)
        for i, k, c, r in js:
            s = slice(self.q_start[i], self.q_start[i] + self.q_count[i])
            self.spring_k[s] += k
            self.spring_c[s] += c
            self.spring_rest[s] = r
        self.has_joint_springs = bool(np.any(self.spring_k) or np.any(self.spring_c))

    def check_data(self, data):
        """Raise InvalidInputError unless ``data`` was made by this model's create_data()
        after the last change of the model."""
        if not self._compiled:
            self.compile()
        if getattr(data, "model_id", None) != self._data_key:
            raise InvalidInputError("data does not belong to this model (or the model changed "
                                    "after create_data()); call model.create_data() again")

    def check_state(self, q, name="q"):
        """Validate ``q: (nq,)`` (or a velocity ``(nv,)``) as a finite float array."""
        if type(q) is np.ndarray and q.dtype == np.float64 and q.shape == (self.nq,) \
                and np.dot(q, q) < math.inf:   # finite: one product (no FP warnings), NaN is False
            return q
        q = np.asarray(q, dtype=float)
        if q.shape != (self.nq,):
            raise InvalidInputError(f"{name} must have shape ({self.nq},), got {q.shape}; "
                                    f"the model has {self.nq} coordinates")
        if not np.isfinite(q).all():
            raise NonFiniteError(f"{name} contains NaN or inf; pass finite numbers")
        return q

    def check_fext(self, fext):
        """Validate external wrenches ``fext: (nb, 6)`` (``[moment; force]`` per body in its
        own frame) as a finite float array; None passes through."""
        if fext is None:
            return None
        fext = np.asarray(fext, dtype=float)
        if fext.shape != (self.nbodies, 6):
            raise InvalidInputError(f"fext must have shape ({self.nbodies}, 6) (one wrench "
                                    f"[moment; force] per body in its own frame), got "
                                    f"{fext.shape}")
        if not np.all(np.isfinite(fext)):
            raise NonFiniteError("fext contains NaN or inf; pass finite wrenches")
        return fext

    def create_data(self):
        """A :class:`core.data.Data` of preallocated work arrays for this model."""
        from .data import Data
        return Data(self.compile())

    def __repr__(self):
        return f"Model({self.name!r}, nbodies={self.nbodies}, nq={self.nq})"
