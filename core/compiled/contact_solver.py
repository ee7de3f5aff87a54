"""The compiled twin of :class:`core.contacts.solver.ContactSolver`'s substep: the stepper
that :func:`stepper` makes for a contact solver on the numba backend. For worlds without
moving colliders and limits that have kernels, the integrator's substeps of a step with
their contact steps are one kernel call where its stepper allows it
(:meth:`ContactSteps.substeps`, :func:`core.compiled.contact_step.contact_substeps`: the
kernels below, called from one compiled loop), else a substep's contact step is a few
kernel calls with arrays between them (:meth:`ContactSteps.apply`): the pose (:func:`core.compiled.dynamics.
energies`), the shapes' poses and point-speed bound (:func:`core.compiled.contact_step.
shape_poses`), the narrow phase (:func:`core.compiled.narrow.pair_contacts`, every pair's
box test instead of sweep and prune), the planes' contacts, the limits' engagement and rows
and the warm starts (:func:`core.compiled.contact_step.gather_contacts`), the impulses
(:meth:`ContactSteps.solve`) and the end state (:func:`core.compiled.contact_step.
finish_contacts`). Elsewhere the reference code runs with this stepper's narrow phase,
pose, Gauss-Seidel and impulses. Compared with the reference in
``tests/core/test_contacts.py`` and ``tests/core/test_compiled_narrow.py``.
"""

import numpy as np

from . import contact_step as K
from . import dynamics
from .contacts import contact_pgs, contact_solve, fastest_point
from .layout import B_SIZE, B_V, S_NSUB, buffer_offsets, limit_offsets
from .narrow import pair_contacts
from .pack import PackedShapes
from ..contacts import rules
from ..contacts.rules import not_positive_definite
from ..errors import NonFiniteError
from ..kinematics import update_kinematics

__all__ = ["stepper", "ContactSteps", "COMPILED_SOLVE_WORK"]

#: the most multiply-adds ``m nv (nv + m) / 2`` (m rows, nv coordinates) of the triangular
#: solves and ``W`` for which :meth:`ContactSteps.solve` forms them in its kernel
#: (:func:`core.compiled.contacts.contact_solve`); larger problems take the reference's
#: numpy path, whose BLAS products are blocked and vectorized
COMPILED_SOLVE_WORK = 5e6


def stepper(solver):
    """The :class:`ContactSteps` of the :class:`core.contacts.ContactSolver` ``solver``."""
    return ContactSteps(solver)


class ContactSteps:
    """A contact solver's compiled substep, narrow phase, pose, Gauss-Seidel and impulses
    (module docstring), with the arrays its kernels take: the shapes packed for the narrow
    phase, the buffer offsets of the shapes' bodies' velocities, the planes ``(P, 4)``
    (normal, height), the narrow phase's poses (the statics' after the shapes') and the
    limit solver's arrays (an empty solver's where there is none)."""

    def __init__(self, solver):
        self.solver = solver
        model = solver.model
        at = buffer_offsets(model.nbodies, model.nv, model.one_dof_each)["bodies"] + B_V
        #: the buffer offset of each shape's body's body-frame velocity in the kernels
        self.body_velocity = at + B_SIZE * solver.bodies
        world = [c.shape for c in solver.statics + solver.movers]
        self.packed = PackedShapes(solver.shapes + world)
        self.planes = np.array([[*p.normal, p.height] for p in solver.planes],
                               dtype=float).reshape(-1, 4)
        self.poses = np.concatenate([np.zeros((len(solver.shapes), 4, 4)),
                                     solver.static_poses])
        (*_, li_size), (*_, lr_size) = limit_offsets(0, model.nv)
        self.limit_arrays = solver.limits.kernel_arrays if solver.limits is not None else \
            (np.zeros(li_size, dtype=np.int64), np.zeros(lr_size))
        #: whether the last contact problem solved here was larger than
        #: :data:`COMPILED_SOLVE_WORK` (:meth:`substeps` then leaves the steps to
        #: :meth:`apply` until one is not)
        self.large = False
        consts = np.zeros(K.C_SIZE)
        consts[[K.C_MARGIN, K.C_BOUNCE, K.C_SLOP, K.C_ITERATIONS, K.C_RTOL, K.C_WORK]] = (
            solver.margin, solver.bounce_threshold, solver.slop, solver.iterations,
            rules.PGS_RTOL, COMPILED_SOLVE_WORK)
        #: :func:`core.compiled.contact_step.contact_substeps`' numbers
        self.consts = consts
        self._mass = np.empty((model.nv, model.nv))

    @property
    def fuses(self):
        """Whether :meth:`substeps` takes this solver's substeps: no moving colliders, every
        joint with a kernel, no limits or limits that have kernels (as :meth:`apply`)."""
        s = self.solver
        return not (s.movers or dynamics.packed(s.model).python or
                    (s.limits is not None and not s.limits.compiled))

    def substeps(self, data, t, q, v, sd, dense, weight):
        """The integrator's substeps from ``(q, v)`` at time t with this solver's contact
        step in one kernel call (:func:`core.compiled.contact_step.contact_substeps`, ``sd``,
        ``dense`` as it takes them; ``weight`` the c of :meth:`apply`): ``(q, v, substeps
        taken)``, the state after them, their report rows logged and their warm starts kept.
        The substeps not taken (the kernel stops at a failure, which the reference substep
        then names, or at a problem larger than :data:`COMPILED_SOLVE_WORK`) start from the
        state returned, the limit solver's state as it was there."""
        s = self.solver
        m = s.model
        p = dynamics.packed(m)
        li, lr = self.limit_arrays
        self.consts[K.C_T], self.consts[K.C_WEIGHT] = t, weight
        q, v = q.copy(), v.copy()
        log = np.empty((int(sd[S_NSUB]), 4))
        status, done, keys, lam, limits, touching = K.contact_substeps(
            p.ints, p.reals, data.buffer, p.mass_com, q, v, sd, dense, self._mass, li, lr,
            *self.packed.arrays(), self.poses, len(s.shapes), s.pairs_allowed, s.bodies,
            self.body_velocity, s.first_vertex, s.extents, self.planes, s.plane_materials,
            s.vertices.ravel(), s.vertex_shape, s.vertex_body, s.vertex_local,
            s.vertex_radius, s.pair_a, s.pair_b, s.pair_materials, self.consts, s.warm_keys,
            s.warm_lam, s.warm_limits, log)
        s.warm_keys, s.warm_lam, s.warm_limits = keys, lam, limits
        if done:
            s.touching = touching
            s._log.extend((end, int(n), depth, e) for end, n, depth, e in log[:done].tolist())
        self.large = status == K.TOO_LARGE
        return q, v, done

    def pose(self, data, q, v=None):
        """``ContactSolver._pose`` by the compiled kinematics (world poses, body-frame
        columns and velocities in ``data.buffer``): with ``v``, the bound on the shapes'
        point speeds (:func:`core.compiled.contacts.fastest_point`; point speeds do not
        depend on the frame), else 0.0."""
        s = self.solver
        dynamics.energies(s.model, data, q, v)
        if v is None:
            return 0.0
        return fastest_point(data.buffer, self.body_velocity, s.first_vertex, s.extents)

    def pair_contacts(self, T, t, margin):
        """The shape pairs' contacts closer than ``margin`` of the model posed in ``T``
        (world poses) at time t, in one kernel call (:func:`core.compiled.narrow.
        pair_contacts`): ``(i, j, points, normals, separations, features)``."""
        s = self.solver
        poses = np.concatenate([T[s.bodies], s.static_poses] +
                               [c.pose(t)[None] for c in s.movers])
        pairs, P, N, S, F = pair_contacts(*self.packed.arrays(), poses, len(s.shapes),
                                          s.pairs_allowed, float(margin))
        return pairs[:, 0], pairs[:, 1], P, N, S, F

    def touches(self, data, margin):
        """Whether a shape of the model posed in ``data`` (by :meth:`pose`) is closer than
        ``margin`` to a plane, a static collider or another shape it may collide with,
        without building the contacts (the planes' least separation,
        :func:`core.compiled.contact_step.plane_separation`, then the narrow phase only if
        they are clear)."""
        s = self.solver
        p = dynamics.packed(s.model)
        K.shape_poses(p.ints, data.buffer, s.bodies, self.body_velocity, s.first_vertex,
                      s.extents, self.poses)
        if K.plane_separation(p.ints, data.buffer, self.planes, s.vertices.ravel(),
                              s.vertex_body, s.vertex_radius) < margin:
            return True
        if not (s.statics or s.body_pairs):
            return False
        separations = pair_contacts(*self.packed.arrays(), self.poses, len(s.shapes),
                                    s.pairs_allowed, margin)[3]
        return bool(np.any(separations < margin))

    def pgs(self, W, b, lam, n_lim, mu, blocks, tangent):
        """``ContactSolver._pgs``'s sweeps in one kernel call
        (:func:`core.compiled.contacts.contact_pgs`), in place on ``lam``."""
        contact_pgs(W, b, lam, n_lim, mu, blocks, tangent, self.solver.iterations,
                    rules.PGS_RTOL)
        return lam

    def solve(self, data, q, v, v1, step, arrays, J, b, lam, nl, h, c_h):
        """The impulses of :meth:`core.contacts.ContactSolver.impulses`: by :meth:`impulses`
        up to :data:`COMPILED_SOLVE_WORK`, else by the reference after the world Jacobian
        columns (the compiled kinematics leaves body-frame ones)."""
        s = self.solver
        nv, size = s.model.nv, len(b)
        self.large = size * nv * (nv + size) > 2.0 * COMPILED_SOLVE_WORK
        if not self.large:
            return self.impulses(data, q, v, v1, step, arrays, J, b, lam, nl, h, c_h)
        update_kinematics(s.model, data, q)
        return s.impulses(data, q, v, v1, step, arrays, J, b, lam, nl, h, c_h)

    def impulses(self, data, q, v, v1, step, arrays, J, b, lam, nl, h, c_h):
        """:meth:`core.contacts.ContactSolver.impulses` in one kernel call
        (:func:`core.compiled.contacts.contact_solve`; the joints without a kernel
        evaluated first)."""
        s = self.solver
        m = s.model
        p = dynamics.packed(m)
        if p.python:
            dynamics.python_joints(m, data, p, q, None)
        nc, nv, rows = len(arrays[0]), m.nv, len(b)
        M, dv, gap = np.empty((nv, nv)), np.empty(nv), np.empty(nc)
        kinetic = contact_solve(p.ints, p.reals, data.buffer, q, v, v1, step, *arrays, h, c_h,
                                s.bounce_threshold, nl, J, b, lam, np.empty((nc, 3, 3)),
                                M, False, np.empty((nv, rows)), np.empty((rows, rows)),
                                np.empty((nc, 6)), np.empty((nc, 5)), dv, gap,
                                s.iterations, rules.PGS_RTOL)
        if kinetic != kinetic:
            raise not_positive_definite()
        return (M, True), dv, gap, kinetic

    def apply(self, data, q, v, q1, v1, t, h, c_h, log):
        """:meth:`core.contacts.ContactSolver.apply` in a few kernel calls (module
        docstring), its report row appended to ``log``; None, with the limit solver's state
        as it was, for worlds with moving colliders, joints without kernels or limits
        without them, and where a kernel declines (a twist limit undefined, a mass matrix
        that is not positive definite: the reference code then raises the error that names
        the cause)."""
        s = self.solver
        m = s.model
        p = dynamics.packed(m)
        if s.movers or p.python or (s.limits is not None and not s.limits.compiled):
            return None
        dynamics.energies(m, data, q, v1)
        reach = s.margin + h * K.shape_poses(p.ints, data.buffer, s.bodies,
                                              self.body_velocity, s.first_vertex, s.extents,
                                              self.poses)
        pairs = pair_contacts(*self.packed.arrays(), self.poses, len(s.shapes),
                              s.pairs_allowed, reach)
        li, lr = self.limit_arrays
        saved = None if s.limits is None else (li.copy(), s.limits.distances.copy())
        status, nc, nl, lim_rows, a, b, P, n, sep, mu, rest, key, J, rhs, lam = \
            K.gather_contacts(p.ints, data.buffer, q, v1, q1, c_h, reach, self.planes,
                              s.plane_materials, s.vertices.ravel(), s.vertex_shape,
                              s.vertex_body, s.vertex_local, s.vertex_radius, *pairs,
                              s.pair_a, s.pair_b, s.pair_materials, li, lr, s.warm_keys,
                              s.warm_lam, s.warm_limits)
        s.touching = nc > 0
        if status == 0 and not nc:
            # the limit solver's own step, as without contacts
            log.append((t + h, 0, 0.0, 0.0))
            return (q1, v1) if s.limits is None else s.limits.apply(data, q1, v1)
        if status == 0:
            arrays = (a, b, P, n, sep, mu, rest, np.zeros((nc, 3)))
            try:
                fac, dv, gap, kinetic = self.solve(data, q, v, v1, q1 - q, arrays, J, rhs,
                                                   lam, nl, h, c_h)
            except NonFiniteError:
                status = 4
        if status == 0:
            F = fac[0]                  # L below the diagonal and L^T above, as the kernel's
            if not fac[1]:              # scipy's upper factor U = L^T
                U = np.triu(F)
                F = U.T + np.triu(U, 1)
            status, q_new, q_mid, v_new, moved, keys, warm, warm_limits, active, depth = \
                K.finish_contacts(q1, v1, dv, c_h, gap, sep, J, nl, lim_rows, lam, key, F, li,
                                  lr, s.slop, s.iterations, rules.PGS_RTOL)
        if status:
            if saved is not None:
                li[:], s.limits.distances[:] = saved
            return None
        s.warm_keys, s.warm_lam, s.warm_limits = keys, warm, warm_limits
        potential = dynamics.energies(m, data, q_new, None)[1] - \
            dynamics.energies(m, data, q_mid, None)[1] if moved else 0.0
        log.append((t + h, active, depth, kinetic + potential))
        return q_new, v_new
