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

Every function takes ``model, data`` first, writes into ``data`` and returns its main result.
"""

import numpy as np

from .errors import InvalidInputError, NonFiniteError
from .joints import poe

__all__ = ["forward_kinematics", "body_jacobian", "body_velocity", "body_pose",
           "compute_joint_jacobians", "ad_apply", "ad_star_apply"]

# flat positions in a 6x6 matrix where ad_V = [[W, 0], [P, W]] (seed 000 eq. 4) holds +V_k
# and -V_k: W = hat(w) at (0:3, 0:3) and (3:6, 3:6), P = hat(v) at (3:6, 0:3)
def _hat_positions(r0, c0, comp0):
    plus = [((r0 + 2) * 6 + c0 + 1, comp0 + 0), ((r0 + 0) * 6 + c0 + 2, comp0 + 1),
            ((r0 + 1) * 6 + c0 + 0, comp0 + 2)]
    minus = [((r0 + 1) * 6 + c0 + 2, comp0 + 0), ((r0 + 2) * 6 + c0 + 0, comp0 + 1),
             ((r0 + 0) * 6 + c0 + 1, comp0 + 2)]
    return plus, minus


_PLUS, _MINUS = [], []
for _r0, _c0, _k0 in ((0, 0, 0), (3, 3, 0), (3, 0, 3)):
    _p, _m = _hat_positions(_r0, _c0, _k0)
    _PLUS += _p
    _MINUS += _m
_AD_PLUS_POS = np.array([p for p, _ in _PLUS])
_AD_PLUS_SRC = np.array([k for _, k in _PLUS])
_AD_MINUS_POS = np.array([p for p, _ in _MINUS])
_AD_MINUS_SRC = np.array([k for _, k in _MINUS])
# both in one scatter: entry _AD_POS[k] holds _AD_SIGN[k] * V[_AD_SRC[k]]
_AD_POS = np.concatenate([_AD_PLUS_POS, _AD_MINUS_POS])
_AD_SRC = np.concatenate([_AD_PLUS_SRC, _AD_MINUS_SRC])
_AD_SIGN = np.concatenate([np.ones(len(_AD_PLUS_POS)), -np.ones(len(_AD_MINUS_POS))])
# and for a plain 3x3 hat(p) stored flat
_HAT_PLUS_POS, _HAT_MINUS_POS = np.array([7, 2, 3]), np.array([5, 6, 1])


def ad_matrices(V, out=None):
    """``ad_V: (n, 6, 6)`` for twists ``V: (n, 6)`` (seed 000 eq. 4), built with two
    scattered assignments instead of per-block hat calls."""
    n = V.shape[0]
    if out is None:
        out = np.zeros((n, 6, 6))
    out.reshape(n, 36)[:, _AD_POS] = V[:, _AD_SRC] * _AD_SIGN
    return out


def ad_apply(V, U):
    """``ad_V U`` row-wise (seed 000 eq. 4): ``V, U: (n, 6) -> (n, 6)``."""
    return (ad_matrices(V) @ U[:, :, None])[:, :, 0]


def ad_star_apply(V, F):
    """``ad*_V F = ad_V^T F`` row-wise on wrenches ``[moment; force]`` (eq. 5):
    ``(n, 6), (n, 6) -> (n, 6)``."""
    return (np.swapaxes(ad_matrices(V), 1, 2) @ F[:, :, None])[:, :, 0]


def _check_vec(model, x, name):
    x = np.asarray(x, dtype=float)
    if x.shape != (model.nv,):
        raise InvalidInputError(f"{name} must have shape ({model.nv},), got {x.shape}")
    if not np.isfinite(x).all():
        raise NonFiniteError(f"{name} contains NaN or inf; pass finite numbers")
    return x


#: up to this many cubic spline joints their exp scalars are computed by poe.exp_scalars in a
#: loop (same values, the batch twin agrees to round-off): fewer calls than the array branches
_SCALAR_EXP_JOINTS = 10


def _cubic_splines(model, data, q):
    """G, S and dS/dq of every cubic spline curve joint at once (the batched form of
    ``core.joints.spline_curve._cubic_evaluate``: eqs. 24, 27-30 unrolled for k = 4), in
    preallocated work arrays (see :meth:`core.model.Model._compile_cubic_splines`)."""
    x = q[model.spline_dofs]
    n = x.size
    # global span index: last span start <= x (clamped to the joint's first span)
    gs = np.searchsorted(model.spline_keys, x + model.spline_shift, side="right") - 1
    np.maximum(gs, model.spline_first, out=gs)
    upow = data.spline_upow
    u = np.subtract(x, model.spline_starts[gs], out=upow[:, 1, 0])
    np.multiply(u, u, out=upow[:, 2, 0])
    np.multiply(upow[:, 2, 0], u, out=upow[:, 3, 0])
    b = np.matmul(model.spline_poly[gs], upow)[:, :, 0]            # (n, 15), see the model
    cvec = data.spline_cvec
    if n <= _SCALAR_EXP_JOINTS:          # a Python loop beats ~25 array calls on few angles
        sc = []
        for bb, tt in zip(b[:, :3].ravel().tolist(), model.spline_theta[gs].ravel().tolist()):
            sc += poe.exp_scalars(bb, tt)
        data.spline_scalars[...] = np.array(sc, dtype=float).reshape(n, 3, 10)
    else:
        poe.exp_scalars_batch(b[:, :3], model.spline_theta[gs], out=data.spline_scalars)
    r = np.matmul(cvec[:, None, :], model.spline_table[gs])[:, 0]   # (n, 150)
    G = np.matmul(r[:, 0:16].reshape(n, 4, 4), r[:, 16:32].reshape(n, 4, 4))
    G = np.matmul(G, r[:, 32:48].reshape(n, 4, 4))
    Z = np.matmul(r[:, 48:120].reshape(n, 12, 6), r[:, 120:132].reshape(n, 6, 2))
    M = data.spline_M                                 # columns [g_3, a, c, Zy, Zw, V]
    M[:, :, :3] = r[:, 132:150].reshape(n, 6, 3)
    M[:, :, 3:5] = Z[:, :6]
    M[:, :, 5] = Z[:, 6:, 0]
    # S  = g_3 d3 + a d2 + Zy d1,
    # dS = g_3 e3 + a e2 + Zy e1 - c d3 d2 - Zw d1 d2 - V d3 d1
    C = data.spline_C.reshape(n, 12)
    C[:, [0, 1, 2, 3, 6, 7]] = b[:, 3:9]
    C[:, [5, 9, 11]] = -(b[:, 9:12] * b[:, 12:15])
    SH = np.matmul(M, data.spline_C)
    S, H = SH[:, :, 0], SH[:, :, 1]
    outside = (x < model.spline_lo) | (x > model.spline_hi)
    if outside.any():
        for k in np.nonzero(outside)[0]:
            i = model.spline_bodies[k]
            Gk, Sk, Hk = model.joints[i].evaluate(x[k:k + 1])
            G[k], S[k], H[k] = Gk, Sk[:, 0], Hk[0, :, 0]
    sel = model.spline_sel
    data.G[sel] = G
    data.oMi[sel] = np.matmul(model.spline_H, G)
    data.S_body[model.spline_dof_sel] = S
    data.spline_hess[:] = H


def _poses(model, data, q):
    """Joint evaluation, world poses, adjoints and world Jacobian columns for ``q: (nq,)``."""
    L = data.oMi
    if model.all_screws:
        coef = data.screw_coef
        np.sin(q, out=coef[:, 1])
        np.cos(q, out=coef[:, 2])
        np.subtract(1.0, coef[:, 2], out=coef[:, 2])
        coef[:, 3] = q
        np.matmul(coef[:, None, :], model.screw_table, out=L.reshape(-1, 1, 16)[:, :, :12])
    else:
        sb = model.screw_bodies
        if len(sb):
            qs = q[model.screw_dofs]
            coef = data.screw_coef
            np.sin(qs, out=coef[:, 1])
            np.cos(qs, out=coef[:, 2])
            np.subtract(1.0, coef[:, 2], out=coef[:, 2])
            coef[:, 3] = qs
            L[sb, :3, :] = (coef[:, None, :] @ model.screw_table).reshape(-1, 3, 4)
        if len(model.spline_bodies):
            _cubic_splines(model, data, q)
        for i, dofs in zip(model.other_bodies, model.other_dofs):
            G, S, H = model.joints[i].evaluate(q[dofs])
            data.G[i] = G
            L[i] = model.placements[i] @ G
            data.S_body[dofs] = S.T
            data.hess[i] = H
    for sel, ptr in model.pose_schedule:
        L[sel] = L[ptr] @ L[sel]
    R = L[:, :3, :3]
    Ad, Adinv = data.Ad, data.Adinv
    data.Ad_diag[:] = R[:, None]      # both diagonal blocks; upper right stays zero
    phat = data.phat.reshape(-1, 9)
    p = L[:, :3, 3]
    phat[:, _HAT_PLUS_POS] = p
    phat[:, _HAT_MINUS_POS] = -p
    np.matmul(data.phat, R, out=Ad[:, 3:, :3])                               # [p] R
    Rt = R.transpose(0, 2, 1)
    data.Adinv_diag[:] = Rt[:, None]
    Adinv[:, 3:, :3] = Ad[:, 3:, :3].transpose(0, 2, 1)      # -R^T [p] = ([p] R)^T
    Ads = Ad if model.one_dof_each else Ad[model.dof_body]
    np.matmul(Ads, data.S_body[:, :, None], out=data.S_world[:, :, None])
    return L


def _velocities(model, data, v):
    """Spatial velocities ``V (nb, 6)`` and joint bias accelerations ``c (nb, 6)`` (eq. 44's
    ``c_i = q_dot^T dS q_dot + ad_v u`` mapped to the world frame)."""
    Ub = data.S_world * v[:, None]
    if not model.one_dof_each:
        Ub = model.dof_incidence @ Ub
    np.matmul(model.ancestry, Ub, out=data.V)
    ad_matrices(data.V, out=data.adV)
    c = data.bias
    np.matmul(data.adV, Ub[:, :, None], out=c[:, :, None])
    if len(model.spline_bodies):
        vs = v[model.spline_dof_sel]
        hb = data.spline_hess * (vs * vs)[:, None]
        sel = model.spline_sel
        c[sel] += np.matmul(data.Ad[sel], hb[:, :, None])[:, :, 0]
    for i, dofs in zip(model.other_bodies, model.other_dofs):
        H = data.hess[i]
        if H.size:
            vi = v[dofs]
            c[i] += data.Ad[i] @ np.einsum("jak,j,k->a", H, vi, vi)
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
    data.q[:] = q
    _poses(model, data, q)
    if v is not None:
        v = _check_vec(model, v, "v")
        data.v[:] = v
        _velocities(model, data, v)
        if a is not None:
            a = _check_vec(model, a, "a")
            np.matmul(model.ancestry, model.dof_incidence @ (data.S_world * a[:, None])
                      + data.bias, out=data.A)
    elif a is not None:
        raise InvalidInputError("forward_kinematics: pass v together with a")
    return data.oMi


def body_pose(model, data, body):
    """World pose ``T_i: (4, 4)`` of ``body`` (name or index) after forward_kinematics."""
    return data.oMi[model.body_index(body)].copy()


def compute_joint_jacobians(model, data, q):
    """All world-frame joint Jacobian columns ``(6, nv)``: column j is ``Ad_{T_i} S_i e_j``
    for the body i owning coordinate j."""
    forward_kinematics(model, data, q)
    return data.S_world.T.copy()


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


def body_velocity(model, data, body, frame="body"):
    """Velocity twist ``(6,)`` of ``body`` from the last forward_kinematics with v: the body
    velocity ``v_i`` (``frame="body"``) or the spatial velocity ``V_i`` (``"world"``)."""
    i = model.body_index(body)
    if frame == "world":
        return data.V[i].copy()
    if frame == "body":
        return data.Adinv[i] @ data.V[i]
    raise InvalidInputError(f"frame must be 'body' or 'world', got {frame!r}")

