"""Packing a compiled :class:`core.model.Model` into the two flat arrays of the kernels
(layout in :mod:`core.compiled.layout`); numpy only."""

import numpy as np

from . import layout as L

__all__ = ["Packed", "pack", "step_arrays", "PackedShapes"]


class Packed:
    """A model's kernel arrays: ``ints`` (int64; read-only when a joint's family has
    ``kernel_large``), ``reals`` (float64), ``python`` (the
    indices in ``model.families`` evaluated in Python before a kernel: no ``kernel_kind``),
    ``multi_python`` (those of them with joints of several coordinates), ``zeros``
    ``(nv,)`` (the acceleration of the nonlinear effects) and ``mass_com (nb, 4)`` (each
    body's ``[m, m c]``, for the potential energy)."""

    def __init__(self, ints, reals, python, multi_python, nv, mass_com):
        self.ints, self.reals = ints, reals
        self.python, self.multi_python = python, multi_python
        self.zeros = np.zeros(nv)
        self.mass_com = mass_com


def pack(model):
    """The :class:`Packed` arrays of ``model`` (compiled), from its bodies, springs and each
    joint family's :meth:`~core.joints.family.JointFamily.kernel_params`."""
    model.compile()
    nb, nv = model.nbodies, model.nv
    at = L.buffer_offsets(nb, nv, model.one_dof_each)
    nps = len(model.point_springs)
    ints = np.zeros(L.HEADER + L.NI * nb + 2 * nps, dtype=np.int64)
    ints[[L.H_NB, L.H_NV, L.H_NPS, L.H_SPRINGS]] = nb, nv, nps, int(model.has_joint_springs)
    for key, name in ((L.H_LSH, "LSH"), (L.H_SM, "S_body"), (L.H_CB, "c_body"),
                      (L.H_DDQ, "ddq"), (L.H_TAU, "tau"), (L.H_NLE, "nle"), (L.H_M, "M"),
                      (L.H_BODY, "bodies"), (L.H_DOF, "dofs"), (L.H_TMP, "tmp")):
        ints[key] = at[name]
    rows = ints[L.HEADER:L.HEADER + L.NI * nb].reshape(nb, L.NI)
    rows[:, L.I_PARENT] = model.parents
    rows[:, L.I_Q] = model.q_start
    rows[:, L.I_N] = model.q_count
    body = np.concatenate([model.placements[:, :3, :].reshape(nb, 12),
                           model.inertias.reshape(nb, 36)], axis=1)
    chunks = [np.asarray(model.gravity, dtype=float), body.ravel()]
    at_r = L.R_BODIES + L.BODY_REALS * nb
    python, multi_python = [], []
    large = False
    for f, family in enumerate(model.families):
        kind = family.kernel_kind
        if kind is None:
            python.append(f)
            if family.multi:
                multi_python.append(f)
            continue
        large = large or family.kernel_large
        for k, b in enumerate(family.bodies.tolist()):
            params, (ns, deg) = family.kernel_params(k)
            rows[b, [L.I_KIND, L.I_PAR, L.I_NS, L.I_DEG, L.I_CHART]] = \
                kind, at_r, ns, deg, family.kernel_charts
            chunks.append(np.asarray(params, dtype=float).ravel())
            at_r += chunks[-1].size
    ints[L.H_RSPRING] = at_r
    chunks.append(np.concatenate([model.spring_k, model.spring_c, model.spring_rest]))
    ints[L.H_RPOINT] = at_r + 3 * nv
    ints[L.H_IPOINT] = L.HEADER + L.NI * nb
    for s, (a, pa, b, pb, k, c, rest) in enumerate(model.point_springs):
        ints[L.HEADER + L.NI * nb + 2 * s:][:2] = a, b
        chunks.append(np.concatenate([pa, pb, [k, c, rest]]))
    if large:
        ints.flags.writeable = False
    mass_com = np.ascontiguousarray(np.column_stack([model.masses,
                                                     model.masses[:, None] * model.coms]))
    return Packed(ints, np.ascontiguousarray(np.concatenate(chunks)), tuple(python),
                  tuple(multi_python), nv, mass_com)


def step_arrays(nv, nb, method, substeps, h, tau, fext, charts, rate_limit=None):
    """The step kernels' array ``sd`` (:data:`core.compiled.layout.S_SIZE`): method code,
    substeps, fext rows, charts flag, rate-limit flag, h, then tau ``(nv,)``, fext ``(nb * 6,
    if any)``, the work rows ``(10 nv)`` (the result and the four RK4 stage states of q
    (rows 0-4) and of v (rows 5-9)) and the rate limit ``(nv,)`` when given."""
    header = [method, substeps, 0 if fext is None else nb, int(charts),
              int(rate_limit is not None), h]
    parts = [header, tau] + ([] if fext is None else [np.ravel(fext)]) + [np.zeros(10 * nv)] + \
        ([] if rate_limit is None else [rate_limit])
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float64)


class PackedShapes:
    """Shapes (:class:`core.contacts.shapes.Shape`, each in its own frame) in the three flat
    arrays of :func:`core.compiled.narrow.pair_contacts`: ``ints`` (int64) the ranges of
    each shape's vertices, faces, edges and edge directions (``vstart``, ``fstart``,
    ``estart``, ``dstart``, each ``(N + 1,)``), each face's range in ``fidx``
    (``fvstart (F + 1,)``), ``fidx`` (the faces' vertex indices within their shape,
    counter-clockwise), ``edges`` (``(E, 2)`` flat, vertex indices within the shape) and
    ``edir`` (``(E,)``, each edge's direction index within the shape), in that order;
    ``rows (V + F + D, 3)`` the vertices, face normals and edge directions; ``reals`` the
    face offsets ``(F,)``, radii ``(N,)`` and extents ``(N,)``."""

    def __init__(self, shapes):
        def starts(counts):
            return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

        def rows(arrays, width, dtype=float):
            return np.concatenate([np.asarray(a, dtype=dtype).reshape(-1, width)
                                   for a in arrays] + [np.zeros((0, width), dtype=dtype)])

        faces = [f for s in shapes for f in s.faces]
        self.ints = np.ascontiguousarray(np.concatenate([
            starts([len(s.vertices) for s in shapes]), starts([len(s.faces) for s in shapes]),
            starts([len(s.edges) for s in shapes]), starts([len(s.edge_dirs) for s in shapes]),
            starts([len(f) for f in faces]), rows(faces, 1, np.int64).ravel(),
            rows([s.edges for s in shapes], 2, np.int64).ravel(),
            rows([s.edge_dir_of for s in shapes], 1, np.int64).ravel()]))
        self.rows = np.ascontiguousarray(np.concatenate([
            rows([s.vertices for s in shapes], 3), rows([s.normals for s in shapes], 3),
            rows([s.edge_dirs for s in shapes], 3)]))
        self.reals = np.ascontiguousarray(np.concatenate([
            rows([s.offsets for s in shapes], 1).ravel(), [s.radius for s in shapes],
            [s.extent for s in shapes]]), dtype=float)

    def arrays(self):
        """The arrays in :func:`core.compiled.narrow.pair_contacts`'s order."""
        return self.ints, self.rows, self.reals
