"""Forward kinematics, velocities, accelerations and Jacobians of a :class:`core.model.Model`.

Seed 000 eqs. 9-14, written in the world (spatial) frame so that every tree recursion is a
sum over ancestors (a product with the model's ancestry matrix) instead of a Python loop:

* poses ``T_i = T_parent(i) H_i G_i(q_i)`` (eq. 9), composed by pointer jumping: about
  ``log2(depth)`` batched 4x4 products for the whole tree;
* world Jacobian columns ``Ad_{T_i} S_i`` (eq. 12 mapped to the world frame);
* spatial velocities ``V_i = V_parent + Ad_{T_i} S_i q_dot_i`` (eq. 11: ``Ad_{T_i} v_i``);
* spatial accelerations ``A_i = A_parent + Ad_{T_i}(S_i q_ddot_i + q_dot_i^T dS_i q_dot_i)
  + ad_{V_i} Ad_{T_i} S_i q_dot_i``, which is ``Ad_{T_i}`` applied to eq. 14's body
  acceleration (``d/dt Ad_T x = ad_V Ad_T x`` for the spatial velocity ``V`` of ``T``).

The joints themselves are evaluated by their families (:mod:`core.joints.family`), which
write each body's local transform ``H_i G_i(q_i)`` and body-frame ``S`` (and ``dS/dq``) into
``data``; this module never looks at joint types.

Every function takes ``model, data`` first, writes into ``data`` and returns its main result.
"""

import numpy as np

from .errors import InvalidInputError
from .lie import se3, so3

__all__ = ["forward_kinematics", "update_kinematics", "update_jacobian_columns",
           "update_velocities", "body_jacobian", "body_velocity", "point_jacobian"]


def _adjoint_table():
    """``(36, 72)``: ``[Ad_T, Ad_{T^-1}^T]`` flattened, as a linear map of the 36 products
    ``[p; 1] (x) R`` of ``T = (R, p)``: ``Ad = [[R, 0], [[p] R, R]]`` and
    ``Ad_{T^-1}^T = [[R, [p] R], [0, R]]`` with ``([p] R)_ab = -eps_akr p_r R_kb``."""
    K = np.zeros((4, 3, 3, 2, 6, 6))
    for a in range(3):
        for b in range(3):
            for blk in (0, 1):
                K[3, a, b, blk, a, b] = K[3, a, b, blk, 3 + a, 3 + b] = 1.0
            for k in range(3):
                for r in range(3):
                    eps = (a - k) * (k - r) * (r - a) / 2.0            # Levi-Civita
                    K[r, k, b, 0, 3 + a, b] -= eps
                    K[r, k, b, 1, a, 3 + b] -= eps
    return K.reshape(36, 72)


def _bilinear_table():
    """``(126, 12)``: ``[c, ad*_V m]`` as a linear map of the outer product of ``[V, s]``
    (7) and ``[U, h, m]`` (18): ``c = ad_V U + s h`` (seed 000 eq. 4) and ``ad*_V m =
    ad_V^T m`` (eq. 5). One product replaces building the ad matrices."""
    E = np.zeros((7, 18, 12))
    eye = np.eye(6)
    for i in range(6):
        ad = se3.ad(eye[i])
        E[i, :6, :6] = ad.T            # row j: ad_{e_i} e_j
        E[i, 12:, 6:] = ad             # row j: ad_{e_i}^T e_j
    E[6, 6:12, :6] = eye
    return E.reshape(126, 12)


#: ``(36, 72)``: ``[p; 1] (x) R`` of a pose ``(R, p)`` times this is ``[Ad_T, Ad_{T^-1}^T]``
AD_TABLE = _adjoint_table()
#: ``(126, 12)``: ``[V, s] (x) [U, h, m]`` times this is ``[ad_V U + s h, ad*_V m]``
BILINEAR_TABLE = _bilinear_table()


def update_kinematics(model, data, q):
    """Joint evaluation, world poses, adjoints and world Jacobian columns at ``q: (nq,)``,
    without argument checks (the algorithms' first pass; ``q`` a float array of the right
    shape). Writes ``data.oMi`` (world poses), ``data.Ad``/``Adinv``, ``data.S_body``,
    ``data.S_world`` and ``data.W[:, :2]`` (``[Ad S; Ad dS/dq]`` of one-coordinate joints).
    Returns ``data.oMi``."""
    L = data.oMi
    for family, work in zip(model.families, data.family_work):
        family.calc(q, data, work)
    for views, (sel, ptr) in zip(data.pose_views, model.pose_schedule):
        if views is None:
            L[sel] = L[ptr] @ L[sel]
        else:
            np.matmul(*views, out=views[1])
    return update_jacobian_columns(model, data)


def update_jacobian_columns(model, data):
    """The second half of :func:`update_kinematics`, from the world poses ``data.oMi`` and
    the joints' body-frame rows (``data.SH``, ``data.S_body``) at one q: ``data.S_body`` of
    the one-coordinate joints, the adjoints ``data.Ad``/``Adinv``, ``data.W[:, :2]`` and the
    world Jacobian columns ``data.S_world``. Returns ``data.oMi``."""
    if not model.one_dof_each and len(model.multi_bodies) < model.nbodies:
        data.S_body[model.one_dof_q] = data.SH[model.one_dof_bodies, 0]
    np.multiply(*data.adX_in, out=data.adX)
    np.matmul(data.adX.reshape(-1, 36), AD_TABLE, out=data.AdAdT.reshape(-1, 72))
    # [S_w; h_w] = [S; dS/dq] Ad^T row-wise
    np.matmul(data.SH, data.Ad.transpose(0, 2, 1), out=data.W[:, :2])
    if not model.one_dof_each:
        np.matmul(data.Ad[model.dof_body], data.S_body[:, :, None],
                  out=data.S_world[:, :, None])
    return data.oMi


def update_velocities(model, data, v, momentum=True):
    """Spatial velocities ``V (nb, 6)``, joint bias accelerations ``c (nb, 6)`` (eq. 44's
    ``c_i = q_dot^T dS q_dot + ad_v u`` mapped to the world frame) and, if ``momentum``
    (needs ``data.I_world``), ``ad*_V I V`` (``data.adstar_IV``): one outer product of
    ``[V, s]`` and ``[U, s h_w, I V]`` and one product with a constant table give both.
    Needs :func:`update_kinematics` at the same q, and ``data.v`` holding ``v`` (it is
    ``s`` on models with one coordinate per body); no argument checks. Returns ``data.V``."""
    W = data.W
    if model.one_dof_each:                           # data.v (= s) holds v already
        np.multiply(W[:, :2], v[:, None, None], out=W[:, 2:4])             # [U, s h_w]
    else:
        np.matmul(model.dof_incidence, data.S_world * v[:, None], out=data.Ub)
        vb = v[model.one_dof_q]
        data.hv[model.one_dof_bodies] = W[model.one_dof_bodies, 1] * (vb * vb)[:, None]
        if model.multi_families:
            for family, work in zip(model.families, data.family_work):
                if family.multi:
                    family.velocity_product(v, data, work)
            mb = model.multi_bodies
            data.hv[mb] = (data.Ad[mb] @ data.c_body[mb, :, None])[:, :, 0]
    np.matmul(model.ancestry, data.Ub, out=data.V)
    if momentum:
        np.matmul(data.I_world, data.V[:, :, None], out=data.IV[:, :, None])
    else:
        data.IV[:] = 0.0
    np.multiply(data.Vp[:, :, None], data.W_tail, out=data.outer)
    np.matmul(data.outer_flat, BILINEAR_TABLE, out=data.bil)
    return data.V


def forward_kinematics(model, data, q, v=None, a=None):
    """Poses (and velocities, accelerations) of every body.

    Args: ``q: (nq,)``, optional ``v: (nv,)`` (coordinate rates) and ``a: (nv,)`` (needs v).
    Writes ``data.oMi (nb, 4, 4)`` (world poses T_i, eq. 9), ``data.S_world (nv, 6)``,
    ``data.V (nb, 6)`` spatial velocities and ``data.A (nb, 6)`` spatial accelerations
    without gravity (eq. 14 in the world frame). Returns ``data.oMi``.
    """
    model.check_data(data)
    q = model.check_state(q)
    update_kinematics(model, data, q)
    if v is not None:
        v = model.check_state(v, "v")
        data.v[:] = v
        update_velocities(model, data, v, momentum=False)
        if a is not None:
            a = model.check_state(a, "a")
            np.matmul(model.ancestry, model.dof_incidence @ (data.S_world * a[:, None])
                      + data.bias, out=data.A)
    elif a is not None:
        raise InvalidInputError("forward_kinematics: pass v together with a")
    return data.oMi


def body_jacobian(model, data, body, frame="body"):
    """Jacobian ``(6, nv)`` mapping ``q_dot`` to ``body``'s velocity, from the last
    forward_kinematics: ``frame="body"`` gives the body velocity v_i (eq. 11),
    ``frame="world"`` the spatial velocity V_i = Ad_{T_i} v_i."""
    i = model.body_index(body)
    if i < 0:
        raise InvalidInputError("body_jacobian: the world has no Jacobian; pass a body")
    J = (data.S_world * model.ancestry[i, model.dof_body][:, None]).T
    if frame == "world":
        return J
    if frame == "body":
        return data.Adinv[i] @ J
    raise InvalidInputError(f"frame must be 'body' or 'world', got {frame!r}")


def point_jacobian(model, data, body, point):
    """World position ``(3,)`` and Jacobian ``(3, nv)`` (``q_dot`` to the point's world
    velocity) of ``point (3,)`` fixed in ``body``'s frame, from the last forward_kinematics:
    ``R (J_v - [p]x J_w)`` with the body Jacobian's angular rows ``J_w`` and linear ``J_v``."""
    Jb = body_jacobian(model, data, body, "body")
    T = data.oMi[model.body_index(body)]
    p = np.asarray(point, dtype=float)
    return T[:3, :3] @ p + T[:3, 3], T[:3, :3] @ (Jb[3:] - so3.hat(p) @ Jb[:3])


def body_velocity(model, data, body, frame="body"):
    """Velocity twist ``(6,)`` of ``body`` from the last forward_kinematics with v: the body
    velocity ``v_i`` (``frame="body"``) or the spatial velocity ``V_i`` (``"world"``)."""
    i = model.body_index(body)
    if frame == "world":
        return data.V[i].copy()
    if frame == "body":
        return data.Adinv[i] @ data.V[i]
    raise InvalidInputError(f"frame must be 'body' or 'world', got {frame!r}")

