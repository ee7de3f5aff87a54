"""Work arrays reused by every algorithm call (Pinocchio's Model/Data split).

Everything here is expressed in the world (spatial) frame unless the name says ``body``:
twists ``[w; v]`` and wrenches ``[moment; force]`` about the world origin. The world frame
makes the tree sums plain additions (``V_i = V_parent + Ad_{T_i} S_i q_dot_i``), which lets
the algorithms run on all bodies at once with array operations.
"""

import numpy as np
from numpy.lib.stride_tricks import as_strided

__all__ = ["Data"]


class Data:
    """Preallocated arrays for one :class:`core.model.Model` (``nb`` bodies, ``nv`` dofs).

    Attributes:
        G ``(nb, 4, 4)``: joint transforms G_i(q_i) (eq. 9).
        oMi ``(nb, 4, 4)``: world poses T_i.
        Ad ``(nb, 6, 6)``: Ad_{T_i}; Adinv ``(nb, 6, 6)``: Ad_{T_i^-1}.
        S_body ``(nv, 6)``: body-frame joint Jacobian columns (eq. 12), one per coordinate.
        S_world ``(nv, 6)``: the same columns in the world frame, ``Ad_{T_i} S_i``.
        hess: per body the joint Hessian ``(n_i, 6, n_i)`` (left empty for constant-screw
            joints, whose Hessian is zero).
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
        self.q = np.zeros(nv)
        self.v = np.zeros(nv)
        self.G = np.tile(np.eye(4), (nb, 1, 1))
        self.oMi = np.tile(np.eye(4), (nb, 1, 1))
        self.oMi0_top = self.oMi.reshape(-1)[:12]    # view: rows 0-2 of body 0's pose, flat
        self.Ad = np.zeros((nb, 6, 6))
        self.Adinv = np.zeros((nb, 6, 6))
        # views of the two diagonal 3x3 blocks of each Ad / Adinv (both hold R / R^T), so
        # that one assignment fills both
        s0, s1, s2 = self.Ad.strides
        self.Ad_diag, self.Adinv_diag = (
            as_strided(X, shape=(nb, 2, 3, 3), strides=(s0, 3 * s1 + 3 * s2, s1, s2))
            for X in (self.Ad, self.Adinv))
        self.S_body = np.zeros((nv, 6))
        self.S_world = np.zeros((nv, 6))
        self.hess = [np.zeros((0, 6, 0))] * nb
        ns = len(model.spline_bodies)
        self.spline_hess = np.zeros((ns, 6))   # dS/dq of cubic splines
        # cubic spline work arrays: powers of u, [1, exp scalars of the 3 twists], the
        # columns [g_3, a, c, Zy, Zw, V] and the (6, 2) coefficients of [S, dS/dq]
        self.spline_upow = np.ones((ns, 4, 1))
        self.spline_cvec = np.ones((ns, 31))
        self.spline_scalars = self.spline_cvec[:, 1:].reshape(ns, 3, 10)   # a view
        self.spline_M = np.zeros((ns, 6, 6))
        self.spline_C = np.zeros((ns, 6, 2))
        self.screw_coef = np.zeros((len(model.screw_bodies), 4))
        self.screw_coef[:, 0] = 1.0
        if len(model.screw_bodies):
            self.S_body[model.screw_dofs] = model.screw_S      # constant screws
        self.V = np.zeros((nb, 6))
        self.adV = np.zeros((nb, 6, 6))      # ad_{V_i}
        self.phat = np.zeros((nb, 3, 3))     # [p_i] work array
        self.A = np.zeros((nb, 6))
        self.AV = np.zeros((nb, 6, 2))       # [A0, V]: the nonlinear effects' two products
        self.bias = np.zeros((nb, 6))
        self.I_world = np.zeros((nb, 6, 6))
        self.Ic = np.zeros((nb, 6, 6))
        self.f = np.zeros((nb, 6))
        self.f_joint = np.zeros((nb, 6))
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
