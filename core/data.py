"""Work arrays reused by every algorithm call (Pinocchio's Model/Data split).

Everything here is expressed in the world (spatial) frame unless the name says ``body``:
twists ``[w; v]`` and wrenches ``[moment; force]`` about the world origin. The world frame
makes the tree sums plain additions (``V_i = V_parent + Ad_{T_i} S_i q_dot_i``), which lets
the algorithms run on all bodies at once with array operations.

Many attributes are views into a few shared buffers, laid out so that one batched product
fills several of them at once (see :mod:`core.kinematics` and :mod:`core.dynamics`); they
are overwritten by the next call, so copy what must survive it.
"""

import math

import numpy as np

__all__ = ["Data"]


class Data:
    """Preallocated arrays for one :class:`core.model.Model` (``nb`` bodies, ``nv`` dofs).

    Attributes:
        oMi ``(nb, 4, 4)``: world poses T_i (eq. 9).
        Ad ``(nb, 6, 6)``: Ad_{T_i}; Adinv ``(nb, 6, 6)``: Ad_{T_i^-1} (a transposed view of
        ``Adinv_T``, which is ``[[R, [p] R], [0, R]]``).
        S_body ``(nv, 6)``: body-frame joint Jacobian columns (eq. 12), one per coordinate.
        S_world ``(nv, 6)``: the same columns in the world frame, ``Ad_{T_i} S_i``.
        hess: per body the joint Hessian ``(n_i, 6, n_i)`` of joints evaluated one by one
            (left empty for constant-screw and cubic spline curve joints: the Hessian of a
            one-coordinate joint is kept in ``SH[i, 1]``).
        SH ``(nb, 2, 6)``: per body with one coordinate ``[S; dS/dq]`` in the body frame.
        V ``(nb, 6)``: spatial velocities; A ``(nb, 6)``: spatial accelerations
        (time derivative of V; equals Ad_{T_i} of the body acceleration of eq. 14).
        bias ``(nb, 6)``: velocity-product acceleration of each joint in the world frame
        (the c_i of eq. 44: ``ad_V u + Ad_T q_dot^T dS q_dot``).
        I_world ``(nb, 6, 6)``: spatial inertias in the world frame; Ic ``(nb, 6, 6)``:
        composite (subtree) inertias.
        f ``(nb, 6)``: body wrenches (eq. 15 terms); f_joint ``(nb, 6)``: wrench transmitted
        through each joint; f_ext_world ``(nb, 6)``: external + spring wrenches.
        tau, ddq, nle ``(nv,)``; M ``(nv, nv)``.
    """

    def __init__(self, model):
        nb, nv = model.nbodies, int(model.q_count.sum())
        self.nbodies, self.nv = nb, nv
        self.model_id = (id(model), nb, nv)
        # per body [T (16, row-major), S (6), dS/dq (6)]: one product of the batched spline
        # path writes a joint's local transform and its [S; dS/dq] together
        self.LSH = np.zeros((nb, 28))
        self.LSH[:, [0, 5, 10, 15]] = 1.0
        self.oMi = self.LSH[:, :16].reshape(nb, 4, 4)
        L = self.oMi
        # pointer-jumping products as (parent pose, pose) view pairs where both are ranges
        self.pose_views = [(L[ptr], L[sel]) if isinstance(sel, slice) and
                           isinstance(ptr, slice) else None for sel, ptr in model.pose_schedule]
        # adjoints: [p; 1] (x) R, and one product with core.kinematics' table gives
        # [Ad, Adinv^T] (both linear in R and [p] R)
        self.adX = np.zeros((nb, 4, 3, 3))
        self.adX_in = (L[:, :, 3, None, None], L[:, None, :3, :3])
        self.AdAdT = np.zeros((nb, 2, 6, 6))
        self.Ad = self.AdAdT[:, 0]
        self.Adinv_T = self.AdAdT[:, 1]
        self.Adinv = self.Adinv_T.transpose(0, 2, 1)
        # body-frame [S; dS/dq] of one-coordinate joints; world rows [S_w, h_w, U, s h_w, I V]
        # (h_w = Ad dS/dq; U = Ad S q_dot the joint's velocity; s h_w with s = q_dot, or
        # Ad q_dot^T dS q_dot for joints of several coordinates; I V the momentum)
        self.SH = self.LSH[:, 16:].reshape(nb, 2, 6)
        self.W = np.zeros((nb, 5, 6))
        if model.one_dof_each:
            self.S_body = self.SH[:, 0]
            self.S_world = self.W[:, 0]
        else:
            self.S_body = np.zeros((nv, 6))
            self.S_world = np.zeros((nv, 6))
        self.Ub = self.W[:, 2]
        self.hv = self.W[:, 3]
        self.IV = self.W[:, 4]
        self.W_tail = self.W[:, 2:].reshape(nb, 1, 18)
        # [V, s]: with one coordinate per body s = q_dot (data.v is a view of it), so that
        # s (s h_w) = q_dot^2 Ad dS/dq; else s = 1
        self.Vp = np.ones((nb, 7))
        self.V = self.Vp[:, :6]
        self.Vp[:, :6] = 0.0
        self.v = self.Vp[:, 6] if model.one_dof_each else np.zeros(nv)
        self.outer = np.zeros((nb, 7, 18))
        self.outer_flat = self.outer.reshape(nb, 126)
        self.bil = np.zeros((nb, 12))                # [c, ad*_V I V]
        self.bias = self.bil[:, :6]
        self.adstar_IV = self.bil[:, 6:]
        self.hess = [np.zeros((0, 6, 0))] * nb
        if len(model.screw_bodies):
            self.S_body[model.screw_dofs] = model.screw_S      # constant screws
        self.screw_coef = np.zeros((len(model.screw_bodies), 4))
        self.screw_coef[:, 0] = 1.0
        self._spline_buffers(model)
        self.A = np.zeros((nb, 6))
        self.A0 = np.zeros((nb, 6))
        self.IA0 = np.zeros((nb, 6))
        # [I_world | f] per body, and its subtree sums [Ic | f_joint] (one product for both)
        self.Y = np.zeros((nb, 6, 7))
        self.I_world = self.Y[:, :, :6]
        self.f = self.Y[:, :, 6]
        self.Z = np.zeros((nb, 6, 7))
        self.Ic = self.Z[:, :, :6]
        self.f_joint = self.Z[:, :, 6]
        self.JAdinv = np.zeros((nb, 6, 6))
        # per coordinate S^T [Ic | f_joint]: [F^T (mass-matrix rows), nonlinear effect]
        self.FN = np.zeros((nv, 1, 7))
        self.F = self.FN[:, 0, :6]
        self.f_ext_world = np.zeros((nb, 6))
        self.tau = np.zeros(nv)
        self.ddq = np.zeros(nv)
        self.nle = np.zeros(nv)
        self.M = np.zeros((nv, nv))
        # articulated-body recursion work arrays (Appendix A)
        self.IA = np.zeros((nb, 6, 6))
        self.pA = np.zeros((nb, 6))
        self.aba_U = [None] * len(model.aba_levels)
        self.aba_Dinv = [None] * len(model.aba_levels)
        self.aba_u = [None] * len(model.aba_levels)

    def _spline_buffers(self, model):
        """Work arrays of the batched cubic spline evaluation (core.kinematics
        ._cubic_splines): the rows of the current knot spans (midpoint, coefficients) and
        the powers of ``q - midpoint``."""
        ns = len(model.spline_bodies)
        #: span bounds [lo, hi) of the gathered rows (NaN: look the span up again) and the
        #: joints outside their knot range (evaluated one by one)
        self.span_lo = [math.nan] * ns
        self.span_hi = [math.nan] * ns
        self.span_fallback = []
        if not ns:
            return
        n1 = model.spline_degree + 1
        self.spline_rows = np.zeros((ns, 1 + 28 * n1))
        self.spline_mid = self.spline_rows[:, 0]
        self.spline_coef = self.spline_rows[:, 1:].reshape(ns, n1, 28)
        self.spline_pow = np.ones((n1, ns))                     # (q - m)^0 .. ^deg
        self.spline_pow_T = self.spline_pow.T[:, None, :]
        self.spline_pow1_all = self.spline_pow[:, 0]            # one joint: its powers,
        self.spline_pow1 = self.spline_pow1_all[1:]             # those from the first
        sel = model.spline_sel
        self.spline_out = (self.LSH[sel] if isinstance(sel, slice)
                           else np.zeros((ns, 28)))[:, None, :]
