"""Contact impulses with Coulomb friction and restitution, solved together with the joint
limits' impulses in every integrator substep.

:class:`ContactSolver` takes the shapes attached to a model's bodies and the world's
colliders. In a substep of length h from ``(q0, v0)``, given the integrator's end state
``(q1, v1)`` (:class:`core.integrators.Integrator`), it

1. poses the shapes at q0 (:func:`core.kinematics.update_kinematics`), finds candidate
   pairs (:func:`core.contacts.broad.sweep_and_prune` on the shapes' boxes grown by the
   margin; planes against every shape) and their contacts (:mod:`core.contacts.narrow`):
   every contact closer than ``margin`` plus the distance the fastest shape point covers in
   the substep, each with a normal n (from the first shape to the second), two tangents and
   its separation s;
2. forms the rows ``J (m, nv)`` of the joint limits that are engaged or reach their bound
   within the substep (:meth:`core.limits.LimitSolver.engage`, ``d + moved < 0`` below) and
   three rows per contact: the world velocity of a contact point p on body i is
   ``v_o + w x p`` for the body's spatial velocity ``[w; v_o] = J_i v`` (world-frame
   Jacobian columns of the body's ancestors, :func:`core.kinematics.body_jacobian`), so a
   direction d's row is ``d . J_v + (p x d) . J_w``, the second body's less the first's;
3. solves one mixed complementarity problem on ``W = J M(q0)^-1 J^T`` for impulses on v1 by
   projected Gauss-Seidel with warm starting (the previous substep's impulses of the same
   contacts and limits): unilateral rows for the limits and the contact normals (a pin's pairs of opposite rows
   with target rate 0: a bilateral row, :class:`core.limits.PointPin`), and per
   contact the tangent pair on the friction disc ``|lambda_t| <= mu lambda_n`` solved
   exactly in the block's metric (:func:`friction_disc`: a sliding contact's friction
   opposes its sliding, the maximum-dissipation rule of a Coulomb cone);
4. ends the substep at ``(q1 + c h dv + dq, v1 + dv)``, ``dv = M^-1 J^T lambda``, with c
   the share of a velocity change the integrator's position update takes (1 for
   "semi_implicit", 1/2 for "rk4"; :data:`core.integrators.IMPULSE_POSITION`) and the
   position correction dq: first the limit solver's joint-space projection
   (:meth:`core.limits.LimitSolver.project`: only the joints at their limits move, until
   every limit is within its deadband), then, where the end pose predicted to first order
   leaves a contact more than ``slop`` deep, a mass-weighted correction ``M^-1 A^T mu``,
   ``mu >= 0``, of the contact normals that keeps every limit within its deadband (rows A:
   the normals and the limits; the projection again for what these linear rows leave
   outside a curved limit). The deadband leaves a resting contact up to ``slop`` deep,
   engaged, without jitter.

Self-collision collides the shapes of bodies that are not parent and child, but for the
pairs of bodies whose shapes overlap more than ``slop`` in the start pose (the solver's
``start``): rigs overlap there by design, and those pairs are left out for the whole run and
named in the report's notes. Several rigs simulated as one model are the solver's
``groups``: the shapes of bodies of different groups always collide (the pairs overlapping
at the start left out likewise), those of one group only with self-collision, and a
collider given a group (a rig's animated bone) leaves that group's bodies alone. A contact whose normal or tangent no joint moves (a point on
the line through the joints between its bodies: a zero row of J, so a singular W) gets no
impulse there (:data:`core.contacts.rules.FREE_ROW_RTOL`); an impulse there changes no
velocity.

A substep without contacts is the limit solver's own step
(:meth:`core.limits.LimitSolver.apply`), exactly as without a contact solver.

Backends. The numpy code here is the reference. A solver made on the numba backend asks
:data:`core.backend.twins` once for its compiled stepper
(:class:`core.compiled.contact_solver.ContactSteps`, :attr:`ContactSolver.compiled`): for
worlds without moving colliders and limits that have kernels, a substep is then a few
kernel calls with arrays between them, and an integrator's step of substeps with their
contact steps is one kernel call where its compiled stepper allows it
(:meth:`core.compiled.integrators.IntegratorSteps.contact_substeps`); elsewhere the reference code runs with the
stepper's narrow phase, pose, Gauss-Seidel and impulse kernels, the contacts travelling as
arrays (:class:`ContactSet`).

Velocity targets. The integrator moves a row (a contact normal or a limit) by ``moved``
over the substep and leaves it at the rate ``u1``; an impulse changing the rate by ``du``
moves it by a further ``c h du``. A row still apart (gap ``s > 0``) may close its gap in the
substep but not more, and an overlapping one may not sink further: ``u_n >= u1 - (max(s, 0)
+ moved) / (c h)``, capped at 0 so that these speculative rows never push apart (an overlap
left is the position correction's). For "semi_implicit" (``moved = h u1``) this is ``u_n >=
-s / h`` and ``u_n >= 0``, and at speeds up to the margin per substep no shape passes into
another. A contact that touches within the substep (``s + moved <= 0``) while approaching
faster than ``bounce_threshold`` at the substep's start bounces: its start speed ``u0`` is
reversed and scaled by the pair's restitution e, and the substep's forces act on top
(``u_n >= -e u0 + (u_n1 - u0)``), so an elastic bounce keeps the energy and an inelastic one
keeps ``e^2`` of the normal kinetic energy. Slower contacts are inelastic, so bouncing
bodies come to rest. Engaged limit rows take the limit solver's restitution target ``-e
min(d_dot, 0)``.

Materials (:func:`pair_material`): each side's friction and restitution, or the solver's
defaults where neither side has one.

Report (:meth:`ContactSolver.report`): per substep the contacts carrying an impulse or
overlapping, the deepest overlap at the substep's start pose, and the energy the contact
step changed in the substeps with contacts: the impulses' change of kinetic energy plus
the position correction's change of potential energy (positive values are energy gained).
"""

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from .. import backend as _backend
from .. import dynamics
from ..checks import real_number, whole_number
from ..errors import InvalidInputError
from ..kinematics import update_kinematics
from ..limits import LimitSolver
from . import rules
from .broad import sweep_and_prune
from .narrow import Posed, collide, plane_contacts
from .rules import KEY_BITS, contact_keys, disc, not_positive_definite
from .shapes import MovingCollider, Plane, Shape, StaticCollider

__all__ = ["ContactSolver", "ContactReport", "ContactSet", "pair_material", "tangent_basis"]



def pair_material(a, b, friction, restitution):
    """``(mu, e)`` of two sides (objects with ``friction`` and ``restitution``, each None or
    a number): the geometric mean of two frictions and the larger restitution; one side's
    value where the other has None; the defaults ``friction``, ``restitution`` where both
    have None."""
    fa, fb = a.friction, b.friction
    mu = friction if fa is None and fb is None else fb if fa is None else fa if fb is None \
        else float(np.sqrt(fa * fb))
    ea, eb = a.restitution, b.restitution
    e = restitution if ea is None and eb is None else eb if ea is None else ea if eb is None \
        else max(ea, eb)
    return mu, e


def _closing(u1, gap, moved, c_h):
    """Speculative targets (module docstring): the least end rates ``u_new`` of rows with
    end rates ``u1`` that the integrator moves by ``moved`` over the substep, ``gap >= 0``
    apart (0 for an overlapping row), so that ``gap + moved + c_h (u_new - u1) >= 0``
    (``c_h = c h``), capped at 0."""
    return np.minimum(u1 - (gap + moved) / c_h, 0.0)


def tangent_basis(n):
    """Unit tangents ``(t1, t2)`` of unit normals ``n (c, 3)``: ``(c, 3)`` each, ``t1, t2, n``
    right-handed, t1 across the world axis least aligned with n."""
    axis = np.eye(3)[np.argmin(np.abs(n), axis=1)]
    t1 = np.cross(n, axis)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    return t1, np.cross(n, t1)


@dataclass(frozen=True)
class ContactReport:
    """What a run's contact steps did, per substep (S substeps): ``t (S,)`` the time after
    the substep, ``contacts (S,)`` contacts carrying a normal impulse or overlapping,
    ``penetration (S,)`` the deepest overlap (m, 0 without one) at the substep's start
    pose (the previous substep's end), ``energy_change (S,)`` the mechanical energy the
    contact step changed (J; positive = gained), and ``notes`` (how shapes were made, e.g.
    a hull used for a concave point set; the self-collision pairs left out)."""

    t: np.ndarray
    contacts: np.ndarray
    penetration: np.ndarray
    energy_change: np.ndarray
    notes: tuple

    @property
    def worst_penetration(self):
        """The deepest overlap of the run (m)."""
        return float(self.penetration.max(initial=0.0))

    @property
    def energy_gained(self):
        """The largest energy one contact step gained (J; 0 if none gained any)."""
        return float(max(self.energy_change.max(initial=0.0), 0.0))

    def per_frame(self, frame_times):
        """The most contacts of any substep in each frame interval ``(t_{k-1}, t_k]`` of the
        increasing ``frame_times (F,)`` (the first frame: the substeps up to ``t_0``): ``(F,)``
        ints."""
        k = np.searchsorted(np.asarray(frame_times, dtype=float), self.t - 1e-12, side="left")
        out = np.zeros(len(frame_times), dtype=int)
        inside = k < len(out)
        np.maximum.at(out, k[inside], self.contacts[inside])
        return out


@dataclass(frozen=True)
class ContactSet:
    """The contacts found at one pose (:meth:`ContactSolver.find_contacts`), one row each:
    the bodies ``a``, ``b (c,)`` (-1: the world), ``point (c, 3)``, ``normal (c, 3)`` (from
    a to b), ``separation (c,)``, the pair's ``friction`` and ``restitution (c,)``, the
    warm-start ``key (c,)`` (:func:`contact_keys`) and ``mover (c,)``: the index in
    ``ContactSolver.movers`` of a moving collider on side a, or -1."""

    a: np.ndarray
    b: np.ndarray
    point: np.ndarray
    normal: np.ndarray
    separation: np.ndarray
    friction: np.ndarray
    restitution: np.ndarray
    key: np.ndarray
    mover: np.ndarray

    def __len__(self):
        return len(self.separation)

    @staticmethod
    def join(parts):
        """One set of the row blocks ``parts`` (tuples in the fields' order)."""
        if not parts:
            return ContactSet(*(np.zeros(shape, dtype) for shape, dtype in (
                (0, np.int64), (0, np.int64), ((0, 3), float), ((0, 3), float), (0, float),
                (0, float), (0, float), (0, np.int64), (0, np.int64))))
        fields = [np.ascontiguousarray(np.concatenate(f)) for f in zip(*parts)]
        for k in (0, 1, 7, 8):                          # bodies, keys, movers
            fields[k] = fields[k].astype(np.int64, copy=False)
        return ContactSet(*fields)


class ContactSolver:
    """Contacts and joint limits of one model, applied in every integrator substep (module
    docstring); pass it to :class:`core.integrators.Integrator` as ``contacts`` (with the
    "semi_implicit" method a resting contact neither sinks nor creeps).

    Args:
        model: the :class:`core.model.Model`.
        shapes: ``(body, Shape)`` pairs (body name or index; a body may have several shapes),
            shapes in the body's frame.
        colliders: :class:`Plane`, :class:`StaticCollider` and :class:`MovingCollider`
            objects of the world.
        limits: None, a :class:`core.limits.LimitSolver`, or a list of limit objects (then a
            LimitSolver with restitution 0 is built); its impulses are solved with the
            contacts'.
        self_collision: also collide shapes of different bodies of the model that are not
            parent and child.
        groups: None, or ``(nb,)`` a group per body of the model (the rig it belongs to,
            when several rigs are one model): shapes of bodies of different groups always
            meet, those of one group only with self_collision; a collider with a ``group``
            leaves that group's bodies alone (:mod:`core.contacts.shapes`).
        start: None, or the start pose ``q (nq,)`` of the runs: the pairs of bodies that
            may collide (self_collision, groups) whose shapes overlap more than ``slop``
            there are left out of collision (:attr:`excluded_pairs`, named in the report's
            notes), as Bullet-based tools and Ragdoll do. Such bones overlap by design (a thick spine,
            a hip capsule around the thigh's head); colliding them would push them apart
            in the first substep, or, where their contact lies on the line through the
            joints between them, not at all. A pair resting within ``slop`` is a contact
            the solver holds without correcting it, so it stays in.
        friction, restitution: the defaults where neither side of a pair has its own.
        slop: the depth (m) a contact may keep (position correction deadband).
        margin: contacts are made this far (m) before the shapes touch, plus the distance
            the fastest shape point covers in the substep.
        bounce_threshold: slower approaches (m/s) do not bounce.
        iterations: the most Gauss-Seidel sweeps per substep (it stops earlier once no
            impulse changes by more than :data:`PGS_RTOL` of the largest).
    """

    def __init__(self, model, shapes, colliders=(), limits=None, self_collision=False,
                 groups=None, start=None, friction=0.5, restitution=0.0, slop=5e-4, margin=0.01,
                 bounce_threshold=0.1, iterations=50):
        self.model = model.compile()
        self.bodies, self.shapes = [], []
        for item in shapes:
            if not (isinstance(item, (tuple, list)) and len(item) == 2
                    and isinstance(item[1], Shape)):
                raise InvalidInputError("shapes must be (body, Shape) pairs, e.g. "
                                        "[('link0', Capsule(0.02, (0, 0, 0), (0.3, 0, 0)))]")
            b = model.body_index(item[0])
            if b < 0:
                raise InvalidInputError("a shape needs a body of the model; put world shapes "
                                        "in StaticCollider objects")
            self.bodies.append(b)
            self.shapes.append(item[1])
        self.bodies = np.array(self.bodies, dtype=int)
        self.planes, self.statics, self.movers = [], [], []
        for c in colliders:
            if isinstance(c, Plane):
                self.planes.append(c)
            elif isinstance(c, StaticCollider):
                self.statics.append(c)
            elif isinstance(c, MovingCollider):
                self.movers.append(c)
            else:
                raise InvalidInputError(f"colliders must be Plane, StaticCollider or "
                                        f"MovingCollider objects, got {type(c).__name__}")
        if limits is None or isinstance(limits, LimitSolver):
            self.limits = limits
        else:
            self.limits = LimitSolver(model, list(limits))
        self.self_collision = bool(self_collision)
        self.friction = real_number(friction, "friction", 0.0)
        self.restitution = real_number(restitution, "restitution", 0.0, 1.0)
        self.slop = real_number(slop, "slop", 0.0)
        self.margin = real_number(margin, "margin", 0.0)
        self.bounce_threshold = real_number(bounce_threshold, "bounce_threshold", 0.0)
        self.iterations = whole_number(iterations, "iterations")
        self._static_posed = [Posed(c.shape) for c in self.statics]
        # the shapes' core vertices stacked (vertices (V, 3)) and each one's shape, body,
        # index in the shape and radius (V,)
        counts = [len(s.vertices) for s in self.shapes]
        self.vertices = np.concatenate([s.vertices for s in self.shapes] or [np.zeros((0, 3))])
        self.vertex_shape = np.repeat(np.arange(len(self.shapes)), counts)
        self.vertex_body = np.repeat(self.bodies, counts)
        self.vertex_local = np.concatenate([np.arange(c) for c in counts] or
                                            [np.zeros(0, dtype=int)])
        self.vertex_radius = np.repeat([s.radius for s in self.shapes], counts)
        #: per plane, the friction and restitution of each shape on it: (planes, shapes, 2)
        self.plane_materials = np.array([[pair_material(p, s, self.friction, self.restitution)
                                          for s in self.shapes] for p in self.planes],
                                        dtype=float).reshape(len(self.planes), len(self.shapes),
                                                             2)
        #: per shape, its first core vertex (shapes, 3) and its extent from it plus its radius
        self.first_vertex = np.array([s.vertices[0] for s in self.shapes]).reshape(-1, 3)
        self.extents = np.array([s.extent for s in self.shapes])
        par = model.parents
        b = self.bodies
        if groups is None:
            groups = np.zeros(model.nbodies, dtype=int)
        groups = np.asarray(groups).ravel()
        if groups.shape != (model.nbodies,):
            raise InvalidInputError(f"contacts: give one group per body of the model "
                                    f"({model.nbodies}), got {groups.size}")
        group = groups[b]
        #: each shape's body's group (shapes,)
        self.shape_groups = group
        # body-body pairs that may collide: different bodies, not parent and child, of
        # different groups or with self-collision
        self._allowed = (b[:, None] != b[None, :]) & (par[b][:, None] != b[None, :]) & \
            (par[b][None, :] != b[:, None]) & \
            (self.self_collision | (group[:, None] != group[None, :]))
        world = [c.shape for c in self.statics + self.movers]
        self.notes = tuple(s.note for s in self.shapes + world if s.note)
        # the statics' poses (their shapes are in the world frame)
        self.static_poses = np.tile(np.eye(4), (len(self.statics), 1, 1))
        #: the pairs of bodies ``(i, j)``, i < j, left out of collision because their
        #: shapes overlap more than ``slop`` at ``start`` (sorted)
        self.excluded_pairs = ()
        if start is not None and self._allowed.any():
            self.excluded_pairs = self._start_overlaps(model.check_state(start, name="start"))
        #: the pairs of the model's shapes and every shape or collider that collide
        #: (shapes, shapes + statics + movers) bool: a body-body pair of ``_allowed`` not left
        #: out, a collider not of the shape's group
        keep = np.array([[c.group is None or c.group != g for c in self.statics + self.movers]
                         for g in group], dtype=bool).reshape(len(b), len(world))
        self.pairs_allowed = np.ascontiguousarray(np.concatenate([self._allowed, keep], axis=1))
        for i, j in self.excluded_pairs:
            self.pairs_allowed[:, :len(b)][((b == i)[:, None] & (b == j)[None, :]) |
                                           ((b == j)[:, None] & (b == i)[None, :])] = False
        #: whether any two shapes of the model may collide
        self.body_pairs = bool(self.pairs_allowed[:, :len(b)].any())
        for within, what in ((True, "self-collision"), (False, "collision between groups")):
            pairs = [(i, j) for i, j in self.excluded_pairs
                     if (groups[i] == groups[j]) == within]
            if not pairs:
                continue
            n = len(pairs)
            names = ", ".join(f"{self.model.names[i]}/{self.model.names[j]}" for i, j in pairs)
            self.notes += (f"{what} leaves out {n} pair{'s' if n > 1 else ''} that "
                           f"overlap{'' if n > 1 else 's'} in the start pose: {names}; "
                           f"{'they pass' if n > 1 else 'it passes'} through each other",)
        items = self.shapes + world
        if max([len(items), len(self.planes)] + [len(x.vertices) for x in items]) >= \
                1 << KEY_BITS:
            raise InvalidInputError(f"contacts: at most {(1 << KEY_BITS) - 1} shapes, planes "
                                    "and vertices of a shape; simplify the collision shapes")
        ns = len(self.shapes)
        # per pair of items i < j (world side a first): bodies (pair_a, pair_b), friction and
        # restitution (pair_materials), moving collider
        second = np.arange(len(items))[None, :] >= ns
        body = np.concatenate([self.bodies, np.full(len(world), -1)])
        self.pair_a = np.where(second, -1, body[:, None])
        self.pair_b = np.where(second, body[:, None], body[None, :])
        self.pair_materials = np.array([[pair_material(x, y, self.friction, self.restitution)
                                         for y in items] for x in items],
                                       dtype=float).reshape(len(items), len(items), 2)
        mover = np.arange(len(items)) - ns - len(self.statics)
        self._pair_mover = np.broadcast_to(np.where(mover >= 0, mover, -1)[None, :],
                                           (len(items), len(items))).copy()
        twin = _backend.twins.contact_solver
        #: the compiled stepper of this solver
        #: (:class:`core.compiled.contact_solver.ContactSteps`) when it was made on the numba
        #: backend, else None
        self.compiled = None if twin is None else twin(self)
        self.reset()

    def _start_overlaps(self, q):
        """The pairs of bodies that may collide (self-collision, groups) whose shapes overlap
        more than ``slop`` at ``q (nq,)``: sorted ``(i, j)`` body indices, i < j. Found by the
        numpy narrow phase (:func:`core.contacts.narrow.collide`) on either backend."""
        data = self.model.create_data()
        T = update_kinematics(self.model, data, q)
        posed = [Posed(x, T[b]) for b, x in zip(self.bodies, self.shapes)]
        if len(posed) < 2:
            return ()
        lo, hi = zip(*(x.bounds() for x in posed))
        b, found = self.bodies, set()
        for i, j in sweep_and_prune(np.array(lo), np.array(hi)):
            if self._allowed[i, j] and any(c[2] < -self.slop
                                           for c in collide(posed[i], posed[j])):
                found.add((min(b[i], b[j]), max(b[i], b[j])))
        return tuple((int(i), int(j)) for i, j in sorted(found))

    def reset(self):
        """Forget the warm starts and the report (call before a new run)."""
        # the last contact step's impulses: the contacts' keys (sorted) and impulses (c, 3),
        # and each limit constraint's (0 where it had no row)
        self.warm_keys, self.warm_lam = np.zeros(0, dtype=np.int64), np.zeros((0, 3))
        self.warm_limits = np.zeros(0 if self.limits is None else self.limits.n_constraints)
        self._log = []
        #: whether the last :meth:`apply` found contacts
        self.touching = False
        if self.limits is not None:
            self.limits.reset()

    def report(self):
        """The :class:`ContactReport` of the substeps since the last :meth:`reset`."""
        log = np.array(self._log, dtype=float).reshape(-1, 4)
        return ContactReport(log[:, 0], log[:, 1].astype(int), log[:, 2], log[:, 3],
                             self.notes)

    # -- contacts --------------------------------------------------------------------
    def find_contacts(self, data, t, margin):
        """The :class:`ContactSet` of contacts closer than ``margin`` (m) of the model posed
        in ``data.oMi`` (after update_kinematics) at time t: the planes' contacts, then the
        pairs' in the order of the pairs (item i < j: the model's shapes, the static, then
        the moving colliders), the normals from side a to side b (a world item is side a)."""
        T = data.oMi
        parts = []
        if self.planes:                     # every shape's core vertices at once
            vb = self.vertex_body
            world_vertices = np.einsum("kab,kb->ka", T[vb, :3, :3], self.vertices) + \
                T[vb, :3, 3]
            for pi, plane in enumerate(self.planes):
                ks, points, seps = plane_contacts(plane, world_vertices, self.vertex_radius,
                                                  margin)
                si = self.vertex_shape[ks]
                material = self.plane_materials[pi, si]
                parts.append((np.full(len(ks), -1), vb[ks], points,
                              np.broadcast_to(plane.normal, points.shape), seps,
                              material[:, 0], material[:, 1],
                              contact_keys(0, pi, si, self.vertex_local[ks]),
                              np.full(len(ks), -1)))
        if self.statics or self.movers or self.body_pairs:
            parts.append(self._pair_contacts(T, t, margin))
        return ContactSet.join([x for x in parts if x is not None and len(x[4])])

    def _pair_contacts(self, T, t, margin):
        """The shape pairs' contacts (:meth:`find_contacts`) as a row block (None if there are
        none): compiled in one kernel call (:func:`core.compiled.narrow.pair_contacts`) on
        the numba backend, pair by pair (sweep and prune, :func:`core.contacts.narrow.
        collide`) on numpy."""
        ns = len(self.shapes)
        if self.compiled is not None:               # every pair in one kernel call
            i, j, P, N, S, F = self.compiled.pair_contacts(T, t, margin)
        else:
            posed = [Posed(x, T[b]) for b, x in zip(self.bodies, self.shapes)]
            every = posed + self._static_posed + [Posed(c.shape, c.pose(t))
                                                  for c in self.movers]
            lo, hi = zip(*(x.bounds(margin) for x in every))
            found = []
            for i, j in sweep_and_prune(np.array(lo), np.array(hi)):
                if i >= ns or not self.pairs_allowed[i, j]:
                    continue                              # world with world, or not allowed
                A, B = (every[j], every[i]) if j >= ns else (every[i], every[j])
                found += [(i, j, p, n, sep, k) for p, n, sep, k in collide(A, B, margin)]
            if not found:
                return None
            i, j, P, N, S, F = (np.array([c[k] for c in found]) for k in range(6))
        material = self.pair_materials[i, j]
        return (self.pair_a[i, j], self.pair_b[i, j], P.reshape(-1, 3), N.reshape(-1, 3), S,
                material[:, 0], material[:, 1], contact_keys(1, i, j, F),
                self._pair_mover[i, j])

    def clear(self, data, q, v, t, dt=None):
        """Whether a step may skip the contact solver. With ``v (nv,)`` and ``dt``: True
        when no contact can be made in the ``dt`` seconds from ``(q, v)`` at time t, i.e. no
        shape comes within the margin plus twice the distance its fastest point covers in
        dt at the speeds of v plus gravity's ``|g| dt^2 / 2`` of another shape or a collider,
        and there is no moving collider (whose sweep this does not bound). With ``v`` None:
        True when no shape overlaps another or a collider at q (the check of such a step's
        end, which catches a speed that more than doubled within it). Poses the model in
        ``data`` (on the numba backend by the compiled kinematics: world poses and body-frame
        velocities)."""
        if v is not None and self.movers:
            return False
        speed = self._pose(data, q, v)
        if v is None:
            reach = 0.0
        else:
            g = float(np.linalg.norm(self.model.gravity))
            reach = self.margin + 2.0 * dt * speed + 0.5 * g * dt * dt
        if self.compiled is not None and not self.movers:
            return not self.compiled.touches(data, reach)
        found = self.find_contacts(data, t, reach)
        return not (np.any(found.separation < 0.0) if v is None else len(found))

    def _pose(self, data, q, v=None):
        """Pose the model in ``data.oMi`` at q (with its joint columns:
        :func:`core.kinematics.update_kinematics`, or with a compiled stepper its compiled
        kinematics, body-frame columns in ``data.buffer``,
        :meth:`core.compiled.contact_solver.ContactSteps.pose`); with ``v``, return
        :meth:`_speed_bound`'s bound at v."""
        if self.compiled is not None:
            return self.compiled.pose(data, q, v)
        update_kinematics(self.model, data, q)
        return None if v is None else self._speed_bound(data, v)

    def skip(self, t, h, substeps):
        """Log ``substeps`` substeps of ``h`` seconds from time t taken without the contact
        solver (after :meth:`clear`): no contacts, no overlap, no energy changed."""
        self._log.extend((t + (k + 1) * h, 0, 0.0, 0.0) for k in range(substeps))

    def _speed_bound(self, data, v):
        """A bound on the speed (m/s) of any point of any shape, from the bodies' world
        spatial velocities ``[w; v_o]`` at ``v (nv,)``: the largest ``|v_o + w x c| + |w|
        extent`` with c the shape's first core vertex (so a fast body's contacts are made a
        substep early); :func:`core.compiled.contacts.fastest_point` on the numba
        backend."""
        if not len(self.shapes):
            return 0.0
        m = self.model
        V = m.ancestry @ (m.dof_incidence @ (data.S_world * v[:, None]))      # (nb, 6)
        T = data.oMi[self.bodies]
        c = np.einsum("sab,sb->sa", T[:, :3, :3], self.first_vertex) + T[:, :3, 3]
        w, vo = V[self.bodies, :3], V[self.bodies, 3:]
        speed = np.linalg.norm(vo + np.cross(w, c), axis=1) + \
            np.linalg.norm(w, axis=1) * self.extents
        return float(speed.max())

    def _rows(self, data, body, P, D):
        """Rows ``(c, 3, nv)``: the directions ``D (c, 3, 3)`` of the world velocities of the
        points ``P (c, 3)`` fixed to ``body (c,)`` (-1: the world, zero rows)."""
        m = self.model
        Sw = data.S_world
        rows = np.einsum("vk,cdk->cdv", Sw[:, 3:], D) + \
            np.einsum("vk,cdk->cdv", Sw[:, :3], np.cross(P[:, None, :], D))
        mask = np.where(body[:, None] >= 0, m.ancestry[body][:, m.dof_body], 0.0)
        return rows * mask[:, None, :]

    # -- the solve -------------------------------------------------------------------
    def _pgs(self, W, b, lam, n_lim, mu):
        """Projected Gauss-Seidel in place on ``lam (m,)``: rows ``[0, n_lim)`` unilateral
        (``lam >= 0``, ``W lam + b >= 0`` complementary), then per contact c a unilateral
        normal row and a tangent pair solved exactly on the disc ``|lam_t| <= mu[c] lam_n``
        (:func:`core.contacts.rules.friction_disc`, so a sliding contact's friction opposes
        its sliding); one product of the contact's three rows with lam per contact and
        sweep. A row or friction direction that no joint moves (its diagonal or block
        eigenvalue at most :data:`core.contacts.rules.FREE_ROW_RTOL` of W's largest
        diagonal) keeps a zero impulse, so a singular W is solved. Stops when a sweep
        changes no impulse by more than :data:`core.contacts.rules.PGS_RTOL` of the
        largest. A compiled stepper runs the same sweeps
        (:meth:`core.compiled.contact_solver.ContactSteps.pgs`)."""
        mu = np.asarray(mu, dtype=float)
        k0 = n_lim + 3 * np.arange(len(mu))
        blocks = np.zeros((len(mu), 6))                     # each tangent pair's eigh
        if len(mu):
            w, Q = np.linalg.eigh(W[k0[:, None, None] + [[[1], [2]]],
                                    k0[:, None, None] + [[[1, 2]]]])
            blocks = np.concatenate([w, Q.reshape(-1, 4)], axis=1)
        tangent = np.stack([W[k0 + 1, k0 + 1], W[k0 + 1, k0 + 2], W[k0 + 2, k0 + 2],
                            W[k0 + 1, k0], W[k0 + 2, k0]], axis=1)       # (c, 5)
        if self.compiled is not None:
            return self.compiled.pgs(W, b, lam, n_lim, mu, blocks, tangent)
        diag = np.diag(W)
        floor = rules.FREE_ROW_RTOL * diag.max(initial=0.0)
        blocks[:, :2] = np.where(blocks[:, :2] > floor, blocks[:, :2], np.inf)
        diag, blocks, tangent, mu = diag.tolist(), blocks.tolist(), tangent.tolist(), mu.tolist()
        for _ in range(self.iterations):
            change = 0.0
            for i in range(n_lim):
                old = lam[i]
                new = max(0.0, old - (b[i] + W[i] @ lam) / diag[i]) if diag[i] > floor else 0.0
                change = max(change, abs(new - old))
                lam[i] = new
            for c, k in enumerate(k0.tolist()):
                r0, r1, r2 = (b[k:k + 3] + W[k:k + 3] @ lam).tolist()
                old, t1, t2 = lam[k:k + 3].tolist()
                new = max(0.0, old - r0 / diag[k]) if diag[k] > floor else 0.0
                dn = new - old
                a11, a12, a22, c1, c2 = tangent[c]
                u1, u2 = disc(*blocks[c], r1 + c1 * dn - a11 * t1 - a12 * t2,
                               r2 + c2 * dn - a12 * t1 - a22 * t2, mu[c] * new)
                lam[k], lam[k + 1], lam[k + 2] = new, u1, u2
                change = max(change, abs(dn), abs(u1 - t1), abs(u2 - t2))
            if change <= rules.PGS_RTOL * np.abs(lam).max(initial=0.0):
                break
        return lam

    def impulses(self, data, q, v, v1, step, arrays, J, b, lam, nl, h, c_h):
        """Steps 2 and 3 of the module docstring for the contacts ``arrays`` (bodies a and
        b, points, normals, separations, frictions, restitutions and the world side's point
        velocities, one row per contact) after the ``nl`` limit rows of ``J`` and ``b``:
        the contacts' rows and right-hand sides, then the impulses into ``lam`` (warm start
        in it). Returns ``(cho_factor of M, dv, the contacts' end gaps without impulses, the
        kinetic energy the impulses change)``; needs the model posed at q in ``data`` with
        its world Jacobian columns (:func:`core.kinematics.update_kinematics`)."""
        m = self.model
        a_body, b_body, P, n, s, mu, rest, world_v = arrays
        nc = len(s)
        D = np.stack([n, *tangent_basis(n)], axis=1)                  # (c, 3, 3)
        Jc = self._rows(data, b_body, P, D) - self._rows(data, a_body, P, D)
        J[nl:] = Jc.reshape(3 * nc, m.nv)
        bias = -np.einsum("cdk,ck->cd", D, world_v)
        u = (Jc @ v1).reshape(nc, 3) + bias
        u0 = (Jc[:, 0] @ v) + bias[:, 0]             # normal speeds at the start
        gap = s + Jc[:, 0] @ step + h * bias[:, 0]   # the end separation without impulses
        target = _closing(u[:, 0], np.maximum(s, 0.0), gap - s, c_h)
        # a bounce reverses the start's approach speed; the forces then act as usual
        bounce = (rest > 0.0) & (u0 < -self.bounce_threshold) & (gap <= 0.0)
        target = np.where(bounce, np.maximum(target, -rest * u0 + u[:, 0] - u0), target)
        b[nl:] = (u - np.stack([target, 0 * target, 0 * target], axis=1)).ravel()
        M = dynamics.crba(m, data, q)
        try:
            fac = cho_factor(M, check_finite=False)
        except np.linalg.LinAlgError as err:
            raise not_positive_definite() from None
        MinvJt = cho_solve(fac, J.T, check_finite=False)                  # (nv, m)
        W = J @ MinvJt
        self._pgs(W, b, lam, nl, mu)
        dv = MinvJt @ lam
        v_new = v1 + dv
        return fac, dv, gap, 0.5 * (v_new @ M @ v_new - v1 @ M @ v1)

    def apply(self, data, q, v, q1, v1, t, h, weight=1.0):
        """The contact and limit step of a substep of ``h`` seconds from time t: ``q, v
        (nv,)`` the state at the substep's start (where the contacts are found; v gives the
        approach speeds of bounces), ``q1, v1 (nv,)`` the integrator's state at its end,
        ``weight`` c the share of a velocity change within the substep that its position
        change takes (:data:`core.integrators.IMPULSE_POSITION`: 1 for "semi_implicit", 1/2
        for "rk4"); returns the corrected end state ``(q1 + c h dv + dq, v1 + dv)`` (new
        arrays; the same ones without contacts or engaged limits). Raises NonFiniteError
        when the mass matrix is not positive definite (a diverged state)."""
        if self.compiled is not None:
            out = self.compiled.apply(data, q, v, q1, v1, t, h, float(weight) * h, self._log)
            if out is not None:
                return out
        m = self.model
        c_h = float(weight) * h
        reach = self.margin + h * self._pose(data, q, v1)
        found = self.find_contacts(data, t, reach)
        nc = len(found)
        self.touching = nc > 0
        if not nc:
            # the limit solver's own step, as without contacts
            self._log.append((t + h, 0, 0.0, 0.0))
            return (q1, v1) if self.limits is None else self.limits.apply(data, q1, v1)
        step = q1 - q               # the integrator's move: mean rates step / h over the substep
        if self.limits is not None and self.limits.n_constraints:
            d, N, ddot, engaged = self.limits.engage(q, v1)
            moved = N @ step
            # engaged, or reaching the limit within the substep (a speculative row)
            lim_rows = np.nonzero(engaged | (d + moved < 0.0))[0]
        else:
            lim_rows = np.zeros(0, dtype=int)
        nl = len(lim_rows)
        J = np.empty((nl + 3 * nc, m.nv))
        b = np.empty(nl + 3 * nc)
        lam = np.zeros(nl + 3 * nc)
        if nl:
            J[:nl] = N[lim_rows]
            dl, ul = d[lim_rows], ddot[lim_rows]
            bounce = self.limits.bounce[lim_rows]
            target = np.where(self.limits.bilateral[lim_rows], 0.0,
                              np.where(dl > 0.0, _closing(ul, dl, moved[lim_rows], c_h),
                                       -bounce * np.minimum(ul, 0.0)))
            b[:nl] = ul - target
            lam[:nl] = self.warm_limits[lim_rows]
        s, P = found.separation, found.point
        world_v = np.zeros((nc, 3))                   # the world side's point velocities
        for k in np.unique(found.mover[found.mover >= 0]).tolist():
            rows = found.mover == k
            world_v[rows] = self.movers[k].point_velocities(t, P[rows])
        at = np.minimum(np.searchsorted(self.warm_keys, found.key), len(self.warm_keys) - 1)
        if len(self.warm_keys):                      # the same contacts' last impulses
            hit = self.warm_keys[at] == found.key
            lam[nl:].reshape(nc, 3)[hit] = self.warm_lam[at[hit]]
        arrays = (found.a, found.b, P, found.normal, s, found.friction, found.restitution,
                  world_v)
        solve = self.impulses if self.compiled is None else self.compiled.solve
        fac, dv, gap, kinetic = solve(data, q, v, v1, step, arrays, J, b, lam, nl, h, c_h)
        v_new = v1 + dv
        if self.limits is not None:
            self.warm_limits[:] = 0.0
            self.warm_limits[lim_rows] = lam[:nl]
        order = np.argsort(found.key)
        self.warm_keys, self.warm_lam = found.key[order], lam[nl:].reshape(nc, 3)[order]
        q_new = q1 + c_h * dv
        q_mid, have_limits = q_new, self.limits is not None and self.limits.n_constraints
        if have_limits:
            # limits: the limit solver's joint-space projection (only the joints at their
            # limits move) until every limit is within its deadband
            q_new, d_end, N_end = self.limits.hold(q_new)
        # contacts: the end pose's separations, predicted to first order, to at most
        # slop deep by a mass-weighted correction that keeps every limit in its deadband
        rows = nl + 3 * np.arange(nc)
        ends = gap + J[rows] @ (c_h * dv + q_new - q_mid)
        if np.any(ends < -self.slop):
            A = np.concatenate([J[rows]] + ([N_end] if have_limits else []))
            MinvAt = cho_solve(fac, A.T, check_finite=False)
            low = np.concatenate([ends + self.slop] + (
                [d_end + self.limits.tol] if have_limits else []))
            corr = np.zeros(len(low))
            self._pgs(A @ MinvAt, low, corr, len(low), np.zeros(0))
            q_new = q_new + MinvAt @ corr
            if have_limits:        # the limits curve: what the linear rows left outside
                q_new = self.limits.hold(q_new)[0]
        potential = 0.0 if q_new is q_mid else \
            dynamics.potential_energy(m, data, q_new) - dynamics.potential_energy(m, data, q_mid)
        active = int(np.sum((lam[nl::3] > 0.0) | (s < 0.0)))
        depth = float(max(0.0, -s.min()))
        self._log.append((t + h, active, depth, kinetic + potential))
        return q_new, v_new
