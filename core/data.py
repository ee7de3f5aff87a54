"""Work arrays reused by every algorithm call (Pinocchio's Model/Data split).

Everything here is expressed in the world (spatial) frame unless the name says ``body``:
twists ``[w; v]`` and wrenches ``[moment; force]`` about the world origin. The world frame
makes the tree sums plain additions (``V_i = V_parent + Ad_{T_i} S_i q_dot_i``), which lets
the algorithms run on all bodies at once with array operations.

Several fields are views into one shared buffer, laid out so that one batched product fills
them together (noted at each); every field is overwritten by the next algorithm call, so
copy what must survive it.

The joint rows (``LSH``, ``S_body``, ``c_body``) and the results (``ddq``, ``tau``, ``nle``,
``M``) are views into one flat ``buffer`` that also holds the compiled kernels' scratch
(:mod:`core.compiled.layout`), so that a compiled call takes one array for all of them. On
the numba backend (:mod:`core.backend`) ``aba``, ``rnea``, ``crba`` and the nonlinear
effects write only ``oMi`` (world poses), those rows and their result; the other fields
keep what the last numpy-path call wrote.
"""

import numpy as np

from .compiled.layout import buffer_offsets

__all__ = ["Data"]


class Data:
    """Preallocated arrays for one :class:`core.model.Model` (``nb`` bodies, ``nv`` dofs).

    Made by :meth:`core.model.Model.create_data`; ``model_id`` ties it to the model as it
    was then (:meth:`~core.model.Model.check_data`). The fields are declared, with their
    shape, frame and meaning, in :meth:`__init__`.
    """

    def __init__(self, model):
        nb, nv = model.nbodies, int(model.q_count.sum())
        #: number of coordinates; model_id: the model (and its size) this Data was made for
        self.nv = nv
        self.model_id = (id(model), nb, nv)

        #: ``(size,)`` the flat array holding LSH, S_body, c_body, ddq, tau, nle, M and the
        #: compiled kernels' scratch (sections at :func:`buffer_offsets`)
        at = buffer_offsets(nb, nv, model.one_dof_each)
        self.buffer = buf = np.zeros(at["size"])

        def section(name, *shape):
            n = int(np.prod(shape))
            return buf[at[name]:at[name] + n].reshape(shape)

        # -- joints and poses (core.kinematics; written by the joint families' calc) ------
        #: ``(nb, 28)`` per body ``[T (16, row-major), S (6), dS/dq (6)]``: one product of
        #: a joint family can write a body's local transform and its ``[S; dS/dq]`` together
        self.LSH = section("LSH", nb, 28)
        self.LSH[:, [0, 5, 10, 15]] = 1.0
        #: ``(nb, 4, 4)`` view of LSH: world poses ``T_i`` (eq. 9); between the families'
        #: calc and the pose composition, the local transforms ``P_i G_i(q_i)``
        self.oMi = self.LSH[:, :16].reshape(nb, 4, 4)
        #: ``(nb, 2, 6)`` view of LSH: per body with one coordinate ``[S; dS/dq]``, body frame
        self.SH = self.LSH[:, 16:].reshape(nb, 2, 6)
        #: ``(nv, 6)`` body-frame joint Jacobian columns (eq. 12), one row per coordinate (a
        #: view of ``SH[:, 0]`` when every body has one coordinate)
        self.S_body = self.SH[:, 0] if model.one_dof_each else section("S_body", nv, 6)
        #: ``(nb, 6)`` ``q_dot^T (dS/dq) q_dot`` of joints with several coordinates, body frame
        self.c_body = section("c_body", nb, 6)
        #: per joint family of the model (``model.families``), its buffers (JointData)
        self.family_work = [family.create_work(self) for family in model.families]
        #: pointer-jumping products of the pose composition as ``(ancestor poses, poses)``
        #: view pairs where both index sets are ranges (None: gather and scatter)
        L = self.oMi
        self.pose_views = [(L[ptr], L[sel]) if isinstance(sel, slice) and
                           isinstance(ptr, slice) else None for sel, ptr in model.pose_schedule]
        #: ``(nb, 4, 3, 3)`` ``[p; 1] (x) R`` of every pose; one product of it with a constant
        #: table gives both adjoints; adX_in: the two broadcast views of oMi it is made from
        self.adX = np.zeros((nb, 4, 3, 3))
        self.adX_in = (L[:, :, 3, None, None], L[:, None, :3, :3])
        #: ``(nb, 2, 6, 6)`` ``[Ad_{T_i}, Ad_{T_i^-1}^T]``; Ad, Adinv_T are its two views and
        #: Adinv ``(nb, 6, 6)`` = ``Ad_{T_i^-1}`` a transposed view of Adinv_T
        self.AdAdT = np.zeros((nb, 2, 6, 6))
        self.Ad = self.AdAdT[:, 0]
        self.Adinv_T = self.AdAdT[:, 1]
        self.Adinv = self.Adinv_T.transpose(0, 2, 1)

        # -- velocities (core.kinematics) ---------------------------------------------------
        #: ``(nb, 5, 6)`` world-frame rows per body ``[S_w, h_w, U, s h_w, I V]``: ``S_w = Ad
        #: S`` and ``h_w = Ad dS/dq`` (one-coordinate joints), ``U = Ad S q_dot`` the joint's
        #: velocity, ``s h_w`` (``s = q_dot`` for one coordinate; for several coordinates
        #: ``Ad q_dot^T dS q_dot`` with ``s = 1``) and ``I V`` the body's momentum
        self.W = np.zeros((nb, 5, 6))
        #: ``(nv, 6)`` world-frame Jacobian columns ``Ad_{T_i} S_i`` (a view of ``W[:, 0]``
        #: when every body has one coordinate)
        self.S_world = self.W[:, 0] if model.one_dof_each else np.zeros((nv, 6))
        self.Ub = self.W[:, 2]
        self.hv = self.W[:, 3]
        self.IV = self.W[:, 4]
        self.W_tail = self.W[:, 2:].reshape(nb, 1, 18)
        #: ``(nb, 7)`` ``[V, s]``: V ``(nb, 6)`` spatial velocities (eq. 11 in the world
        #: frame) and ``s`` (``q_dot`` of one-coordinate joints, else 1); with one
        #: coordinate per body ``v`` ``(nv,)`` is a view of ``s``, else a separate copy of
        #: the velocity argument
        self.Vp = np.ones((nb, 7))
        self.V = self.Vp[:, :6]
        self.Vp[:, :6] = 0.0
        self.v = self.Vp[:, 6] if model.one_dof_each else np.zeros(nv)
        #: ``(nb, 7, 18)`` outer product of ``[V, s]`` and ``[U, s h_w, I V]`` (and its flat
        #: ``(nb, 126)`` view), whose product with a constant table gives ``bil``
        self.outer = np.zeros((nb, 7, 18))
        self.outer_flat = self.outer.reshape(nb, 126)
        #: ``(nb, 12)`` ``[c, ad*_V I V]``: bias ``(nb, 6)`` the velocity-product
        #: acceleration of each joint (the c_i of eq. 44: ``ad_V U + Ad q_dot^T dS q_dot``)
        #: and adstar_IV ``(nb, 6)`` the gyroscopic wrench ``ad*_V I V`` (eq. 15)
        self.bil = np.zeros((nb, 12))
        self.bias = self.bil[:, :6]
        self.adstar_IV = self.bil[:, 6:]

        # -- dynamics (core.dynamics) -------------------------------------------------------
        #: ``(nb, 6)`` spatial accelerations (time derivative of V, gravity included in the
        #: dynamics, without it in forward_kinematics); A0 ``(nb, 6)`` the same at
        #: ``q_ddot = 0``; IA0 ``(nb, 6)`` ``I_world A`` of the last body-force pass
        self.A = np.zeros((nb, 6))
        self.A0 = np.zeros((nb, 6))
        self.IA0 = np.zeros((nb, 6))
        #: ``(nb, 6, 7)`` ``[I_world | f]``: I_world ``(nb, 6, 6)`` spatial inertias in the
        #: world frame, f ``(nb, 6)`` body wrenches (eq. 15)
        self.Y = np.zeros((nb, 6, 7))
        self.I_world = self.Y[:, :, :6]
        self.f = self.Y[:, :, 6]
        #: ``(nb, 6, 7)`` subtree sums of Y, ``[Ic | f_joint]``: composite inertias and
        #: f_joint ``(nb, 6)`` the wrench each joint transmits (one ancestry product for both)
        self.Z = np.zeros((nb, 6, 7))
        self.f_joint = self.Z[:, :, 6]
        #: ``(nb, 6, 6)`` ``J Ad_{T^-1}``, the first factor of I_world
        self.JAdinv = np.zeros((nb, 6, 6))
        #: ``(nv, 1, 7)`` per coordinate ``S_w^T [Ic | f_joint]``: F ``(nv, 6)`` (its first
        #: six, the mass-matrix rows before the product with S_w) and the nonlinear effect
        self.FN = np.zeros((nv, 1, 7))
        self.F = self.FN[:, 0, :6]
        #: ``(nb, 6)`` world-frame wrenches of fext and the point springs
        self.f_ext_world = np.zeros((nb, 6))
        #: ``(nv,)`` results: rnea's torques, aba's accelerations, nonlinear effects;
        #: M ``(nv, nv)`` the mass matrix (crba)
        self.tau = section("tau", nv)
        self.ddq = section("ddq", nv)
        self.nle = section("nle", nv)
        self.M = section("M", nv, nv)
        #: articulated-body recursion (Appendix A): IA ``(nb, 6, 6)`` articulated inertias,
        #: pA ``(nb, 6)`` bias wrenches; per entry of ``model.aba_levels`` its ``U = IA S``,
        #: ``D^-1`` (``(S^T U)^-1``, or D itself for one coordinate) and ``u = tau - S^T pA``
        self.IA = np.zeros((nb, 6, 6))
        self.pA = np.zeros((nb, 6))
        self.aba_U = [None] * len(model.aba_levels)
        self.aba_Dinv = [None] * len(model.aba_levels)
        self.aba_u = [None] * len(model.aba_levels)
