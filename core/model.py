"""Kinematic trees of general scleronomic joints (seed 000 sections 3-4, eqs. 7-9, 25).

A :class:`Model` holds, for every body ``i`` (numbered in the order they were added, parents
first): its parent (``-1`` is the world), its joint (any :class:`core.joints.base.Joint`),
the constant placement ``H_i: (4, 4)`` of the joint's parent frame in the parent body (the H
of eq. 25), so that the body's pose is ``T_i = T_parent H_i G_i(q_i)`` (eq. 9), and the 6x6
spatial inertia ``J_i`` of eq. 8 in the body frame. It also holds gravity, joint springs and
dampers and point-to-point damped springs (passive forces the dynamics always include).

The structure is compiled once (:meth:`Model.compile`, called lazily by the algorithms) into
index arrays, so that :mod:`core.kinematics` and :mod:`core.dynamics` work on all bodies with
array operations instead of a Python loop per body, and into joint families
(:mod:`core.joints.family`), each evaluating its joints in a batch.
"""

import math

import numpy as np

from .errors import InvalidInputError, NonFiniteError
from .joints.base import Joint
from .joints.family import GenericFamily, dof_selector
from .lie import se3, so3

__all__ = ["Model", "spatial_inertia", "default_inertia", "DEFAULT_GRAVITY"]

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)


def default_inertia(mass):
    """The rotational inertia about the centre of mass of a body given without one (kg m^2):
    ``1e-3 * mass * I``."""
    return 1e-3 * float(mass) * np.eye(3)


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


def _check_inertia(mass, com, inertia, name, physical=True):
    mass = float(mass)
    if not np.isfinite(mass) or mass < 0.0 or (physical and mass == 0.0):
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
    if not physical:
        return mass, com, 0.5 * (inertia + inertia.T)
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
        self.packed = None

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
        self.packed = None                   # the compiled backend repacks gravity

    # ------------------------------------------------------------------ building
    def add_body(self, name, parent, joint, placement=None, mass=1.0, com=(0.0, 0.0, 0.0),
                 inertia=None, physical=True):
        """Add a body and return its index.

        Args:
            name: unique string. parent: index of an existing body, or -1 for the world.
            joint: a :class:`core.joints.base.Joint` (its G(q) moves this body).
            placement: ``(4, 4)`` pose of the joint's parent frame in the parent body (H of
                eq. 25); identity if None.
            mass: kg (> 0). com: ``(3,)`` centre of mass in the body frame (m).
            inertia: ``(3, 3)`` rotational inertia about the centre of mass (kg m^2),
                symmetric positive definite, principal moments obeying the triangle
                inequality; default :func:`default_inertia`.
            physical: False accepts mass properties as OpenSim and Simbody do (mass >= 0,
                any finite symmetric inertia, e.g. a point mass or a measured tensor with
                a slightly negative principal moment); the model's mass matrix must then be
                positive definite as a whole for the dynamics to run.
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
        mass, com, checked = _check_inertia(mass, com, np.eye(3) if inertia is None
                                            else inertia, name, physical)
        inertia = default_inertia(mass) if inertia is None else checked
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
        """Build the index arrays, constant tables and joint families the batched
        algorithms use.

        Called automatically; cheap enough to call after every change to the model.
        Attributes it sets (besides those of the class docstring):
            ancestry ``(nb, nb)``: ``ancestry[i, k] = 1`` if body k is i or an ancestor of
            i (so ``ancestry @ X`` sums X over each body's ancestors and ``ancestry.T @ X``
            over its subtree); ancestry_T its transpose, contiguous.
            dof_incidence ``(nb, nv)``: 1 where coordinate j belongs to body i.
            one_dof_each: every body has exactly one coordinate; one_dof_bodies and
            one_dof_q: the bodies with one coordinate and their coordinates (slices where
            they are ranges); multi_bodies ``(k,)``: the bodies with several coordinates.
            mass_mask ``(nv, nv)``: True where M may be non-zero in the lower triangle
            (body(l) is body(j) or an ancestor); mass_mask_upper_only: its transpose minus
            itself; mass_lower_dense: the whole lower triangle is in the mask (a chain).
            pose_schedule: pointer-jumping steps ``(bodies, their current ancestor)`` that
            compose local transforms into world poses in ``log2(depth)`` batched products.
            aba_levels: the articulated-body recursion's batches, deepest first, each
            ``(bodies, parents, dofs (m, n), n, has_parent, parents unique)``.
            families: the :class:`~core.joints.family.JointFamily` objects that evaluate
            the joints; multi_families: those with joints of several coordinates.
            one_body_inertia: for a one-body model, eq. 8's inertia as floats
            ``(I_o row-major (9), (m r)_x, (m r)_y, (m r)_z, m)``; else None.
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
        anc = np.zeros((nb, nb))
        depth = np.zeros(nb, dtype=int)
        for i, p in enumerate(self.parents):
            if p >= 0:
                anc[i] = anc[p]
                depth[i] = depth[p] + 1
            anc[i, i] = 1.0
        self.ancestry = anc
        self.ancestry_T = np.ascontiguousarray(anc.T)
        B = np.zeros((nb, nv))
        B[self.dof_body, np.arange(nv)] = 1.0
        self.dof_incidence = B
        lower = anc[self.dof_body][:, self.dof_body] > 0      # body(l) anc-or-self of body(j)
        self.mass_mask = lower
        self.mass_mask_upper_only = np.ascontiguousarray(lower.T & ~lower)
        self.mass_lower_dense = bool(np.all(lower[np.tril_indices(nv)]))
        one = np.nonzero(self.q_count == 1)[0]
        self.one_dof_bodies = dof_selector(one)
        self.one_dof_q = dof_selector(self.q_start[one])
        self.multi_bodies = np.nonzero(self.q_count > 1)[0]
        schedule = []
        ptr = self.parents.copy()
        while np.any(ptr >= 0):
            sel = np.nonzero(ptr >= 0)[0]
            schedule.append((dof_selector(sel), dof_selector(ptr[sel])))
            new = ptr.copy()
            new[sel] = ptr[ptr[sel]]
            ptr = new
        self.pose_schedule = schedule
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
        groups = {}
        for i, j in enumerate(self.joints):
            family = j.family if j.family.accepts(j) else GenericFamily
            groups.setdefault(family, []).append(i)
        self.families = tuple(
            family(b, [self.joints[i] for i in b], self.placements[b], self.q_start[b])
            for family, b in ((f, np.array(b)) for f, b in groups.items()))
        self.multi_families = tuple(f for f in self.families if f.multi)
        self._compile_springs()
        self._data_key = (id(self), nb, nv)      # Data.model_id of data made after this
        self.one_body_inertia = None
        if nb == 1:
            J = self.inertias[0]
            self.one_body_inertia = tuple(J[:3, :3].ravel().tolist()) + (
                float(J[2, 4]), float(J[0, 5]), float(J[1, 3]), float(J[3, 3]))
        #: the compiled backend's packed arrays (core.compiled.pack), built on first use
        self.packed = None
        self._compiled = True
        return self

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
