"""Batched joint evaluation for the tree algorithms (Pinocchio's JointModel / JointData split).

:meth:`core.model.Model.compile` groups the model's joints by family (the class named by
each joint's :attr:`~core.joints.base.Joint.family`, or :class:`GenericFamily` where that
family declines the joint) and builds one :class:`JointFamily` per group. A family owns how
its joints are evaluated: constant screws from one table product
(:class:`~core.joints.lower_pairs.ScrewFamily`), cubic spline curves from per-span
polynomial tables (:class:`~core.joints.spline_curve.CubicSplineFamily`), spherical joints
in exponential coordinates from one batched evaluation
(:class:`~core.joints.spherical.SphericalFamily`), anything else through the joint's own
:meth:`~core.joints.base.Joint.evaluate`. :mod:`core.kinematics` and :mod:`core.dynamics`
call the three methods below and never look at joint types or joint internals.

The contract (``b`` a body of the family, ``P_b`` its placement, ``q_b`` its coordinates):

* ``work = family.create_work(data)``: the family's per-:class:`~core.data.Data` buffers
  (its JointData); may also write constants into ``data`` once (a constant S).
* ``family.calc(q, data, work)``, ``q: (nq,)`` the model's coordinates, writes
    - ``data.oMi[b] = P_b G_b(q_b)``, the local transform (the kinematics composes the
      world poses in place afterwards);
    - for a joint with one coordinate ``data.SH[b] = [S; dS/dq]``, body frame (seed 000
      eq. 12 and its derivative);
    - for a joint with several coordinates ``data.S_body[dofs_b] = S^T``, ``(nq_b, 6)``.
* ``family.velocity_product(v, data, work)`` (only called on families with joints of
  several coordinates, after ``calc`` at the same q) writes
  ``data.c_body[b] = q_dot^T (dS/dq) q_dot`` ``(6,)``, body frame (the joint term of seed
  000 eq. 14) for those joints; one-coordinate joints get theirs from ``SH`` as
  ``q_dot^2 dS/dq``.

Everything crossing this interface is a flat float64 array (``q``, ``v`` and the fields of
``data``), so a compiled kernel can implement ``calc`` for a family without Python objects
per joint in its loop. The compiled backend (:mod:`core.compiled`) does so for a family
that names a ``kernel_kind`` and gives each joint's constants as floats through
:meth:`JointFamily.kernel_params`; the joints of the other families are evaluated by their
``calc`` (and ``velocity_product``) in Python into the same ``data`` rows before the
compiled recursion runs.

A compiled joint kind is declared in its joint's module: a ``KIND_*`` number (distinct from
every other module's), the family's ``kernel_kind``, ``kernel_params``, and the flags
``kernel_charts`` and ``kernel_large``; its evaluation is a branch of
:func:`core.compiled.kernels.kinematics.kinematics`.
"""

import numpy as np

__all__ = ["JointFamily", "GenericFamily", "dof_selector", "covers", "KIND_PYTHON"]

#: the packed joint kind of a family without a compiled kernel (``kernel_kind`` None)
KIND_PYTHON = 0


def dof_selector(idx):
    """``idx`` (sorted int array) as a slice when it is a contiguous range (basic indexing
    gives views and skips numpy's gather/scatter), else as an int array."""
    idx = np.asarray(idx, dtype=int)
    if idx.size and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
        return slice(int(idx[0]), int(idx[0]) + idx.size)
    return idx


def covers(sel, n):
    """True if the selector ``sel`` (from :func:`dof_selector`) is the whole range ``0..n``."""
    return isinstance(sel, slice) and sel == slice(0, n)


class JointFamily:
    """The joints of one family in a model, evaluated together (see the module docstring).

    Args:
        bodies: ``(m,)`` indices of the bodies moved by these joints (increasing).
        joints: the ``m`` joints.
        placements: ``(m, 4, 4)`` their placements (pose of the joint's parent frame in the
            parent body).
        q_start: ``(m,)`` index of each joint's first coordinate in the model's q.

    Attributes: ``bodies``, ``joints`` (tuple), ``placements``, ``dofs`` (list of ``(nq_b,)``
    coordinate indices), ``multi``: True if some joint has several coordinates (then
    :meth:`velocity_product` is called).
    """

    #: the compiled kernels' joint kind for this family (a ``KIND_*`` of its joint's module,
    #: a branch of :func:`core.compiled.kernels.kinematics.kinematics`), or None: the compiled
    #: backend calls :meth:`calc` in Python
    kernel_kind = None
    #: True if each joint's first three coordinates are exponential coordinates of a
    #: rotation whose chart the compiled integrator changes past pi (as the joint's
    #: ``normalize``)
    kernel_charts = False
    #: True for a kind whose kernel is large (about half the compile time of every kernel):
    #: the packer marks the ``ints`` of a model with such joints read-only, and the kernels
    #: compile that kind's evaluation only for read-only ``ints``, so that models without
    #: them never wait for it to compile
    kernel_large = False

    @classmethod
    def accepts(cls, joint):
        """True if this family evaluates ``joint`` (else the model uses GenericFamily)."""
        return True

    def kernel_params(self, k):
        """Constants of the ``k``-th joint for the compiled kernel of :attr:`kernel_kind`:
        ``(floats (p,), (span count, degree))`` (see :mod:`core.compiled.pack`)."""
        return np.zeros(0), (0, 0)

    def __init__(self, bodies, joints, placements, q_start):
        self.bodies = np.asarray(bodies, dtype=int)
        self.joints = tuple(joints)
        self.placements = np.asarray(placements, dtype=float)
        self.dofs = [np.arange(s, s + j.nq) for s, j in zip(q_start, self.joints)]
        self.multi = any(j.nq > 1 for j in self.joints)

    def create_work(self, data):
        """Per-Data buffers of this family (None if it needs none)."""
        return None

    def calc(self, q, data, work):
        """Local transforms and body-frame Jacobians of the family's joints at ``q: (nq,)``."""
        raise NotImplementedError

    def velocity_product(self, v, data, work):
        """``data.c_body[b] = q_dot^T (dS/dq) q_dot`` for joints of several coordinates."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(bodies={self.bodies.tolist()})"


class GenericFamily(JointFamily):
    """Any joint, one at a time through its :meth:`~core.joints.base.Joint.evaluate`; the
    Hessians of joints with several coordinates are kept in the work list for
    :meth:`velocity_product`."""

    def __init__(self, bodies, joints, placements, q_start):
        super().__init__(bodies, joints, placements, q_start)
        self.items = list(zip(self.bodies.tolist(), self.dofs))   # (body, coordinates)

    def create_work(self, data):
        return [None] * len(self.joints)

    def calc(self, q, data, work):
        L, SH, S_body = data.oMi, data.SH, data.S_body
        for k, (b, dofs) in enumerate(self.items):
            G, S, H = self.joints[k].evaluate(q[dofs])
            np.matmul(self.placements[k], G, out=L[b])
            if len(dofs) == 1:
                SH[b, 0] = S[:, 0]
                SH[b, 1] = H[0, :, 0]
            elif len(dofs):
                S_body[dofs] = S.T
                work[k] = H

    def velocity_product(self, v, data, work):
        for k, (b, dofs) in enumerate(self.items):
            if len(dofs) > 1:
                vi = v[dofs]
                data.c_body[b] = np.einsum("jak,j,k->a", work[k], vi, vi)
