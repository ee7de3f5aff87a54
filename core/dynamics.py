"""Inverse and forward dynamics of trees of general scleronomic joints (seed 000 eqs. 7-16,
43-44, Appendix A).

Names and call shapes follow Pinocchio: ``rnea(model, data, q, v, a)``,
``aba(model, data, q, v, tau)``, ``crba(model, data, q)``, ``nonlinear_effects``; each writes
into ``data`` and returns its main result. Vectors: ``q, v, a, tau: (nv,)`` (coordinate
rates; every joint here has nq == nv); external wrenches ``fext: (nb, 6)`` ``[moment; force]``
in each body's frame (as Pinocchio's fext), or None.

Forces included in every algorithm (so that ``rnea(aba(tau)) == tau`` holds with them):
gravity, ``fext``, joint springs/dampers ``-k (q - rest) - c q_dot`` and point-to-point damped
springs between bodies (:meth:`core.model.Model.add_point_spring`). ``rnea`` returns the
actuation torque still needed on top of them.

Formulation
-----------
All quantities live in the world (spatial) frame, where eq. 7 keeps its form
(``f = J A - ad*_V J V``, coordinate-invariant) and the tree recursions of eqs. 11, 14, 15
become sums over ancestors or descendants: one product with the model's ``(nb, nb)``
ancestry matrix replaces a Python loop over bodies, and world poses are composed by pointer
jumping (log2(depth) batched products). Every step is a batched array operation over all
bodies; at the sizes that matter here (one to a few dozen bodies) the cost is the number of
numpy calls, not arithmetic, so one product fills several results where it can:

* the joints are evaluated by their families (:mod:`core.joints.family`): constant screws
  by one table product, cubic spline curves (closed ones wrapped into their period) by one
  product with per-span polynomial tables
  (:class:`core.joints.spline_curve.CubicSplineFamily`), spherical joints by one batched
  evaluation of the exponential coordinates, other joints one by one;
* ``[Ad_T, Ad_{T^-1}^T]`` of all bodies from one product of ``[p; 1] (x) R`` with a
  constant table (:data:`core.kinematics.AD_TABLE`), ``[Ad S; Ad dS/dq]`` in one more;
* the bias accelerations ``c = ad_V U + q_dot^2 Ad dS/dq`` and ``ad*_V I V`` from one outer
  product and one constant table (:data:`core.kinematics.BILINEAR_TABLE`);
* ``[I_world | f]`` summed over subtrees by one ancestry product and ``S^T [Ic | f_joint]``
  by one more: the rows of the mass matrix and the nonlinear effects together; the
  Cholesky solve by one LAPACK ``dposv`` in place.

The price is that :class:`core.data.Data` fields are views into shared buffers, overwritten
by the next call.

Armature. :func:`aba` takes an optional joint-space armature ``(nv,)``, a diagonal added to
the mass matrix: it returns ``(M + diag(armature))^-1 (tau - h)``. In the articulated-body
recursion the joint equation of coordinate i becomes ``tau_i - armature_i q_ddot_i = S_i^T
f_i``, so the armature adds to ``D_i = S_i^T U_i`` before it is inverted and nothing else
changes; the dense method adds it to the diagonal of M before the Cholesky solve. The
implicit integrator (:mod:`core.integrators`) solves with the armature ``h C + h^2 K`` of
its joint springs and dampers.

World tracking. :func:`aba` and :func:`crba_and_nle` take an optional ``track``, ``(nb,``
:data:`TRACK_COLUMNS` ``)`` rows ``[a, k, k_v, c, R* (9, row-major), p* (3), w* (3), v*
(3)]``, one per body: body i is pulled toward the target pose ``(R*, p*)`` (world) moving
with the body twist ``[w*; v*]`` (its own frame) by a spring and damper on every particle of
it, per unit mass, taken implicitly over a step (:mod:`core.integrators`, *Tracking*). The
spring is the gradient of ``U = k/2 int |T x - T* x|^2 dm`` over the body's particles x
(its frame): with ``Q = R^T R*``, ``d = R^T (p - p*)``, ``m c`` the first mass moment and
``Sigma = int x x^T dm = tr(I_o)/2 1 - I_o`` the second (``I_o`` the rotational inertia
about the origin), the wrench on the body (its frame, about its origin) is

    F = -k ((1 - Q) m c + m d),    n = k vee(Q Sigma - Sigma Q^T) - k m c x d

whose derivative in the pose ``T exp(xi)`` at the target is ``-k J`` (J the body's spatial
inertia), and the damper ``-c J (V - W*)`` pulls the body twist V toward the target's twist
at the body, ``W* = Ad_{T^-1 T*} [w*; v*]``. The implicit step's wrench at its end, with the
body acceleration A (``V1 = V0 + h A``), is linearized as ``f0 - a J A``, ``a = h c + h^2
k``, ``f0 = [n; F] - J (k_v V0 - c W*)``, ``k_v = c + h k`` (the caller gives ``a`` and
``k_v`` with h): each body's acceleration meets ``(1 + a) J``, an added mass, and ``f0`` is
an external wrench. Both enter the recursions as they are: the articulated inertias start
from ``(1 + a) J`` and the bias wrenches take ``-f0`` and ``-a J G`` (gravity enters as the
base's acceleration G, which the added mass must not scale), so a step stays one O(n)
recursion; the dense method sums the scaled inertias into M the same way (``M + sum_i a_i
J_i^T I_i J_i`` with the body Jacobians, never formed).

Forward dynamics methods (:func:`aba`'s ``method``)
-------------------------------------------------
* ``"recursive"``: the articulated-body recursion of Appendix A, O(n), sequential in the
  tree depth and batched over the bodies of one depth (on a chain every link costs about a
  dozen small numpy calls);
* ``"dense"``: the CRBA mass matrix, the nonlinear effects and a Cholesky solve through
  LAPACK's dposv (LU if M is not numerically positive definite): O(n^2) array work and an
  O(n^3) factorisation that stays negligible up to a few hundred dofs, and far fewer numpy
  calls than the recursion, so it is the faster of the two here up to
  :data:`DENSE_MAX_DOFS` dofs;
* ``"body"``: one body without point springs, its Newton-Euler equation solved directly
  (in Python floats after the joint family's evaluation when the joint has one
  coordinate).

``"auto"`` picks "body" where it applies, else "dense" up to :data:`DENSE_MAX_DOFS` dofs and
"recursive" above. On the numba backend (:mod:`core.backend`) ``aba`` "auto" and
"recursive", ``rnea``, ``crba``, ``nonlinear_effects`` and ``crba_and_nle`` run compiled
body-frame recursions instead: each reads its compiled twin (:mod:`core.compiled.dynamics`)
from :data:`core.backend.twins` where it starts (the O(n) articulated-body recursion,
Newton-Euler and composite rigid bodies, one kernel call each after the joints without a
kernel are evaluated in Python), and so do the kinetic, potential and mechanical
energies (one kernel call each, which leaves the world poses in ``data.oMi``) and
:func:`compute_joint_jacobians` (the joints and poses in one kernel call); the momentum stays
numpy. All agree to round-off and are tested against Pinocchio;
``scripts/bench.py --only dynamics`` times them beside ``pin.aba`` and MuJoCo's
``mj_step``.
"""

import math

import numpy as np
from scipy.linalg import lapack as _lapack

from . import backend as _backend
from .errors import InvalidInputError, NonFiniteError
from .kinematics import update_kinematics, update_velocities
from .lie import se3

__all__ = ["rnea", "aba", "crba", "nonlinear_effects", "crba_and_nle", "kinetic_energy",
           "potential_energy", "compute_joint_jacobians",
           "mechanical_energy", "momentum", "passive_forces", "DENSE_MAX_DOFS",
           "TRACK_COLUMNS", "body_spring"]

#: ``aba(method="auto")`` uses the dense formulation up to this many dofs.
DENSE_MAX_DOFS = 256
#: the columns of one body's row of world tracking (module docstring, *World tracking*)
TRACK_COLUMNS = 22
#: the methods of :func:`aba` that the numba backend runs compiled (the O(n) recursion)
COMPILED_METHODS = ("auto", "recursive")


def _external_wrenches(model, data, v, fext):
    """World-frame wrenches on each body from ``fext`` and the point springs: ``(nb, 6)``.

    Needs poses (and V if v is given) in ``data``."""
    F = data.f_ext_world
    if fext is not None:
        np.einsum("nba,nb->na", data.Adinv, fext, out=F)       # Ad*_{T^-1} f (eq. 5)
    else:
        F[:] = 0.0
    T = data.oMi
    for a, pa, b, pb, k, c, rest in model.point_springs:
        xa = T[a, :3, :3] @ pa + T[a, :3, 3]
        xb = pb if b < 0 else T[b, :3, :3] @ pb + T[b, :3, 3]
        d = xb - xa
        length = float(np.sqrt(d @ d))
        if length < 1e-12:
            continue
        e = d / length
        mag = k * (length - rest)
        if v is not None and c:
            Va = data.V[a]
            va = Va[3:] + np.cross(Va[:3], xa)
            vb = np.zeros(3) if b < 0 else data.V[b, 3:] + np.cross(data.V[b, :3], xb)
            mag += c * float(e @ (vb - va))
        fa = mag * e
        F[a, :3] += np.cross(xa, fa)
        F[a, 3:] += fa
        if b >= 0:
            F[b, :3] -= np.cross(xb, fa)
            F[b, 3:] -= fa
    return F


def passive_forces(model, q, v):
    """Joint spring and damper torques ``-k (q - rest) - c q_dot``: ``(nv,)``."""
    model.compile()
    if not model.has_joint_springs:
        return np.zeros(model.nv)
    return -model.spring_k * (q - model.spring_rest) - model.spring_c * v


def _world_inertias(model, data):
    """``I_world = Ad_{T^-1}^T J Ad_{T^-1}`` for every body: ``(nb, 6, 6)``."""
    np.matmul(model.inertias, data.Adinv, out=data.JAdinv)
    np.matmul(data.Adinv_T, data.JAdinv, out=data.I_world)
    return data.I_world


def _bias_wrenches(model, data, v, fext):
    """``-ad*_V I V - f_ext`` per body (world frame): ``(nb, 6)``."""
    out = -data.adstar_IV
    if fext is not None or model.point_springs:
        out -= _external_wrenches(model, data, v, fext)
    return out


def body_spring(J, T, T_target, k):
    """The spring of world tracking (module docstring, *World tracking*): ``(..., 6)`` the
    wrench ``[n; F]`` (body frame, about its origin) on bodies of spatial inertia ``J (...,
    6, 6)`` at poses ``T (..., 4, 4)`` pulled toward ``T_target`` with ``k (...)`` per unit
    mass (1/s^2)."""
    R, p = T[..., :3, :3], T[..., :3, 3]
    Rt = np.swapaxes(R, -1, -2)
    Q = Rt @ T_target[..., :3, :3]
    d = np.einsum("...ab,...b->...a", Rt, p - T_target[..., :3, 3])
    Io = J[..., :3, :3]
    mc = np.stack([J[..., 2, 4], J[..., 0, 5], J[..., 1, 3]], axis=-1)
    sigma = 0.5 * np.trace(Io, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - Io
    N = Q @ sigma
    k = np.asarray(k, dtype=float)[..., None]
    n = k * (np.stack([N[..., 2, 1] - N[..., 1, 2], N[..., 0, 2] - N[..., 2, 0],
                       N[..., 1, 0] - N[..., 0, 1]], axis=-1) - np.cross(mc, d))
    F = -k * (mc - np.einsum("...ab,...b->...a", Q, mc) + J[..., 3, 3, None] * d)
    return np.concatenate([n, F], axis=-1)


def _track_pull(model, data, track):
    """World tracking (module docstring) at the state in ``data`` (poses, velocities, world
    inertias): the world inertias scaled to ``(1 + a) I`` in place, and the world wrenches
    ``-(f0 + a J G)`` ``(nb, 6)`` that the bias wrenches take."""
    track = np.asarray(track, dtype=float)
    a, kv, c = track[:, 0], track[:, 2], track[:, 3]
    T = data.oMi
    Ts = np.zeros_like(T)
    Ts[:, :3, :3] = track[:, 4:13].reshape(-1, 3, 3)
    Ts[:, :3, 3] = track[:, 13:16]
    J = model.inertias
    Rt = np.swapaxes(T[:, :3, :3], 1, 2)
    Q = Rt @ Ts[:, :3, :3]
    d = np.einsum("nab,nb->na", Rt, T[:, :3, 3] - Ts[:, :3, 3])
    w = np.einsum("nab,nb->na", Q, track[:, 16:19])
    W = np.concatenate([w, np.einsum("nab,nb->na", Q, track[:, 19:22]) - np.cross(d, w)], 1)
    u = kv[:, None] * np.einsum("nab,nb->na", data.Adinv, data.V) - c[:, None] * W
    u[:, 3:] += a[:, None] * (Rt @ model.gravity)                   # -a G, G = [0; -R^T g]
    pull = np.einsum("nab,nb->na", J, u) - body_spring(J, T, Ts, track[:, 1])
    data.I_world *= (1.0 + a)[:, None, None]
    return np.einsum("nab,nb->na", data.Adinv_T, pull)


def _checked(model, data, q, v, fext):
    """``(q, v, fext)`` validated (and ``data`` checked against the model)."""
    model.check_data(data)
    return model.check_state(q), model.check_state(v, "v"), model.check_fext(fext)


def _prepare(model, data, q, v, fext):
    """Kinematics, world inertias and velocity terms at ``(q, v)`` (checked arguments)."""
    data.v[:] = v
    update_kinematics(model, data, q)
    _world_inertias(model, data)
    update_velocities(model, data, v)


def _body_forces(model, data, A, v, fext, pull=None):
    """Body wrenches ``f = I A - ad*_V I V - f_ext`` (eq. 15, world frame) into ``data.f``
    for spatial accelerations ``A (nb, 6)`` (gravity included), plus world tracking's
    ``pull`` (:func:`_track_pull`, or None), then, by one product with
    the ancestry matrix, the subtree sums ``[Ic | f_joint]`` and ``S^T [Ic | f_joint]``
    (``data.FN``: mass-matrix rows and the joint forces ``tau = S^T f_joint``, eq. 16)."""
    np.matmul(data.I_world, A[:, :, None], out=data.IA0[:, :, None])
    np.subtract(data.IA0, data.adstar_IV, out=data.f)
    if fext is not None or model.point_springs:
        data.f -= _external_wrenches(model, data, v, fext)
    if pull is not None:
        data.f += pull
    _subtree_sums(model, data)


def _subtree_sums(model, data):
    nb = model.nbodies
    np.matmul(model.ancestry_T, data.Y.reshape(nb, 42), out=data.Z.reshape(nb, 42))
    Z = data.Z if model.one_dof_each else data.Z[model.dof_body]
    np.matmul(data.S_world[:, None, :], Z, out=data.FN)


def rnea(model, data, q, v, a, fext=None):
    """Recursive Newton-Euler inverse dynamics (seed 000 eqs. 14-16): the actuation
    ``tau: (nv,)`` that produces ``a`` at ``(q, v)`` given gravity, ``fext: (nb, 6)`` and the
    model's springs. Writes ``data.tau``, ``data.f`` (body wrenches), ``data.f_joint``."""
    q, v, fext = _checked(model, data, q, v, fext)
    a = model.check_state(a, "a")
    twin = _backend.twins.rnea
    if twin is not None:
        return twin(model, data, q, v, a, fext)
    _prepare(model, data, q, v, fext)
    # eq. 14 in the world frame: A_i = A_parent + Ad_T(S q_ddot + q_dot^T dS q_dot) + ad_V u
    Sa = data.S_world * a[:, None]
    if not model.one_dof_each:
        Sa = model.dof_incidence @ Sa
    np.matmul(model.ancestry, Sa + data.bias, out=data.A)
    data.A += model.gravity_twist
    _body_forces(model, data, data.A, v, fext)
    data.tau[:] = data.FN[:, 0, 6]
    if model.has_joint_springs:
        data.tau -= passive_forces(model, q, v)
    return data.tau


def _nle_forces(model, data, v, fext, pull=None):
    """Eq. 15 with q_ddot = 0 (``A0`` = the ancestors' sum of c, plus gravity): the
    nonlinear effects without springs are ``data.FN[:, 0, 6]`` afterwards."""
    np.matmul(model.ancestry, data.bias, out=data.A0)
    np.add(data.A0, model.gravity_twist, out=data.A0)
    _body_forces(model, data, data.A0, v, fext, pull)


def _nle_prepared(model, data, q, v, fext, pull=None):
    _nle_forces(model, data, v, fext, pull)
    np.copyto(data.nle, data.FN[:, 0, 6])
    if model.has_joint_springs:
        data.nle -= passive_forces(model, q, v)
    return data.nle


def nonlinear_effects(model, data, q, v, fext=None):
    """``h(q, v) = rnea(q, v, 0)``: gravity, Coriolis/centrifugal and joint Hessian terms,
    minus springs and fext: ``(nv,)`` (written to ``data.nle``)."""
    q, v, fext = _checked(model, data, q, v, fext)
    twin = _backend.twins.nonlinear_effects
    if twin is not None:
        return twin(model, data, q, v, fext)
    _prepare(model, data, q, v, fext)
    return _nle_prepared(model, data, q, v, fext)


def _mass_lower(model, data):
    """The lower triangle of M (``M[j, l] = S_j^T Ic S_l`` for body(l) an ancestor of
    body(j) or the same body; the strict upper triangle holds garbage) from ``data.FN``."""
    M = data.M
    np.matmul(data.F, data.S_world.T, out=M)
    if not model.mass_lower_dense:
        M *= model.mass_mask
    return M


def _crba_prepared(model, data):
    M = _mass_lower(model, data)
    if model.mass_lower_dense:                # else _mass_lower masked it already
        M *= model.mass_mask
    M += M.T * model.mass_mask_upper_only
    return M


def crba(model, data, q):
    """Joint-space mass matrix ``M(q): (nv, nv)`` (symmetric, full), by composite rigid
    bodies: ``M_jl = S_j^T Ic S_l`` with ``Ic`` the subtree inertia of the deeper body."""
    model.check_data(data)
    q = model.check_state(q)
    twin = _backend.twins.crba
    if twin is not None:
        return twin(model, data, q)
    update_kinematics(model, data, q)
    _world_inertias(model, data)
    _subtree_sums(model, data)
    return _crba_prepared(model, data)


def crba_and_nle(model, data, q, v, fext=None, track=None):
    """``(M (nv, nv), h (nv,))``: :func:`crba` and :func:`nonlinear_effects` at one state from
    one kinematics pass (joint evaluation, poses, world inertias computed once instead of
    twice; on the numba backend two kernel calls, each after its own evaluation of the
    joints without a kernel, whose local transforms the kernel composes into world poses in
    place). With ``track`` (module docstring, *World tracking*; numpy only) M takes the
    added masses and h the tracking wrenches. Writes ``data.M`` and ``data.nle`` and returns
    them."""
    q, v, fext = _checked(model, data, q, v, fext)
    twin = _backend.twins.crba_and_nle
    if twin is not None and track is None:
        return twin(model, data, q, v, fext)
    _prepare(model, data, q, v, fext)
    pull = None if track is None else _track_pull(model, data, track)
    h = _nle_prepared(model, data, q, v, fext, pull)
    return _crba_prepared(model, data), h


def _add_armature(M, armature):
    """``M + diag(armature)`` in place (``armature`` None: M unchanged); returns M."""
    if armature is not None:
        M.flat[::M.shape[0] + 1] += armature
    return M


def _checked_armature(model, armature):
    """``armature`` as a finite float array of shape ``(nv,)``, every entry >= 0."""
    armature = model.check_state(armature, "armature")
    if not np.all(armature >= 0.0):
        raise InvalidInputError("armature must be >= 0 on every coordinate (a diagonal added "
                                "to the mass matrix)")
    return armature


def _aba_dense(model, data, q, v, tau, fext, armature, pull=None):
    _nle_forces(model, data, v, fext, pull)
    rhs = np.subtract(tau, data.FN[:, 0, 6], out=data.ddq)          # tau - h, solved in place
    if model.has_joint_springs:
        rhs += passive_forces(model, q, v)
    M = _add_armature(_mass_lower(model, data), armature)
    if model.nv == 1:
        rhs /= M[0, 0]
        return data.ddq
    # Cholesky through LAPACK directly (np.linalg.solve spends more time checking arguments
    # than solving at these sizes; dposv reads the lower triangle only and leaves rhs alone
    # if it fails); LU if M is not numerically positive definite
    _, x, info = _lapack.dposv(M, rhs, lower=True, overwrite_b=True)
    if info:
        try:
            x = np.linalg.solve(_add_armature(_crba_prepared(model, data), armature), rhs)
        except np.linalg.LinAlgError:
            raise NonFiniteError(
                f"aba: the mass matrix is singular at this configuration (its leading minor "
                f"{info} is not positive and LU fails), which only a diverged state gives "
                "for bodies with mass and inertia; reduce the time step, or check the "
                "coordinates passed and the bodies' inertias") from None
    if x is not data.ddq:
        data.ddq[:] = x
    return data.ddq


def _aba_recursive(model, data, q, v, tau, fext, armature, pull=None):
    """Appendix A: backward recursion of articulated inertias ``IA`` and bias forces ``pA``
    (eq. 43 ``f = IA A + pA``), forward recursion of eq. 44, in the world frame and batched
    over the bodies of one depth; the armature (or None) adds to ``D = S^T U`` (module
    docstring). A multi-DOF joint's ``IA - U D^-1 U^T`` is symmetrized:
    its rounding asymmetry is amplified from level to level (a zig-zag chain of 20 ball
    joints under a free root fell at 272 m/s^2 instead of 9.81)."""
    tau = tau + passive_forces(model, q, v)
    IA, pA = data.IA, data.pA
    IA[:] = data.I_world
    pA[:] = _bias_wrenches(model, data, v, fext)
    if pull is not None:
        pA += pull
    Sw, c = data.S_world, data.bias
    for k, (idx, par, dofs, n, has_parent, unique) in enumerate(model.aba_levels):
        Ia = IA[idx]
        ci = c[idx]
        if n == 1:                                                 # the common 1-DOF case
            S = Sw[dofs[:, 0]]                                     # (m, 6)
            U = (Ia @ S[:, :, None])[:, :, 0]
            D = (S * U).sum(axis=1)
            if armature is not None:
                D += armature[dofs[:, 0]]
            u = tau[dofs[:, 0]] - (S * pA[idx]).sum(axis=1)
            UD = U / D[:, None]
            Pa = Ia - UD[:, :, None] * U[:, None, :]
            pa = pA[idx] + (Pa @ ci[:, :, None])[:, :, 0] + UD * u[:, None]
            data.aba_U[k], data.aba_Dinv[k], data.aba_u[k] = U, D, u
        elif n:
            S = Sw[dofs]                                           # (m, n, 6)
            U = np.einsum("mab,mnb->man", Ia, S)                   # IA S
            D = np.einsum("mna,mak->mnk", S, U)
            if armature is not None:
                D += armature[dofs][:, :, None] * np.eye(n)
            Dinv = np.linalg.inv(D)                                # Omega^-1
            u = tau[dofs] - np.einsum("mna,ma->mn", S, pA[idx])
            UD = U @ Dinv
            Pa = Ia - UD @ np.swapaxes(U, 1, 2)
            Pa = 0.5 * (Pa + np.swapaxes(Pa, 1, 2))   # symmetric: rounding grows otherwise
            pa = pA[idx] + np.einsum("mab,mb->ma", Pa, ci) + np.einsum("man,mn->ma", UD, u)
            data.aba_U[k], data.aba_Dinv[k], data.aba_u[k] = U, Dinv, u
        else:
            Pa = Ia
            pa = pA[idx] + np.einsum("mab,mb->ma", Ia, ci)
        if has_parent.any():
            pp = par[has_parent]
            if unique:
                IA[pp] += Pa[has_parent]
                pA[pp] += pa[has_parent]
            else:
                np.add.at(IA, pp, Pa[has_parent])
                np.add.at(pA, pp, pa[has_parent])
    g = model.gravity_twist
    for k in range(len(model.aba_levels) - 1, -1, -1):
        idx, par, dofs, n, has_parent, unique = model.aba_levels[k]
        Ap = np.where(has_parent[:, None], data.A[np.maximum(par, 0)], g) + c[idx]
        if n == 1:
            U, D, u = data.aba_U[k], data.aba_Dinv[k], data.aba_u[k]
            qdd = (u - (U * Ap).sum(axis=1)) / D
            data.ddq[dofs[:, 0]] = qdd
            data.A[idx] = Ap + Sw[dofs[:, 0]] * qdd[:, None]
        elif n:
            U, Dinv, u = data.aba_U[k], data.aba_Dinv[k], data.aba_u[k]
            qdd = np.einsum("mnk,mk->mn", Dinv, u - np.einsum("man,ma->mn", U, Ap))
            data.ddq[dofs] = qdd
            data.A[idx] = Ap + np.einsum("mna,mn->ma", Sw[dofs], qdd)
        else:
            data.A[idx] = Ap
    return data.ddq


def _scalar(model, x, name):
    """The one coordinate of ``x: (1,)`` as a float, validated like
    :meth:`core.model.Model.check_state` (which raises the error for anything that is not a
    finite float array of shape (1,))."""
    if type(x) is np.ndarray and x.shape == (1,):
        f = float(x[0])
        if math.isfinite(f):
            return f
    return float(model.check_state(x, name)[0])


def _aba_one_dof_body(model, data, q, x, qd, t, fext, arm=0.0):
    """One body on a joint of one coordinate: seed 000 eqs. 14-16 in the body frame reduce to
    ``q_ddot = (tau + (J s)_v . R^T g - q_dot^2 (J s) . h + s . f_ext) / (s . J s + arm)``
    with ``s = S``, ``h = dS/dq`` (``S^T ad*_v J v = q_dot^2 (ad_s s)^T J s = 0``), in Python
    floats from the family's row ``[P G, S, dS/dq]`` of ``data.LSH``. ``x, qd, t, arm``:
    floats (q, q_dot, tau with the springs added, the armature); ``fext`` None or
    checked."""
    family = model.families[0]
    family.calc(q, data, data.family_work[0])
    (r00, r01, r02, _, r10, r11, r12, _, r20, r21, r22, _, _, _, _, _,
     s0, s1, s2, s3, s4, s5, h0, h1, h2, h3, h4, h5) = data.LSH[0].tolist()
    i0, i1, i2, i3, i4, i5, i6, i7, i8, m0, m1, m2, mass = model.one_body_inertia
    j0 = i0 * s0 + i1 * s1 + i2 * s2 + m1 * s5 - m2 * s4        # I_o w + m r x v
    j1 = i3 * s0 + i4 * s1 + i5 * s2 + m2 * s3 - m0 * s5
    j2 = i6 * s0 + i7 * s1 + i8 * s2 + m0 * s4 - m1 * s3
    j3 = mass * s3 - m1 * s2 + m2 * s1                          # m v - m r x w
    j4 = mass * s4 - m2 * s0 + m0 * s2
    j5 = mass * s5 - m0 * s1 + m1 * s0
    gx, gy, gz = model.gravity_list
    rhs = (t - qd * qd * (j0 * h0 + j1 * h1 + j2 * h2 + j3 * h3 + j4 * h4 + j5 * h5)
           + j3 * (gx * r00 + gy * r10 + gz * r20)                         # (J s)_v . R^T g
           + j4 * (gx * r01 + gy * r11 + gz * r21)
           + j5 * (gx * r02 + gy * r12 + gz * r22))
    if fext is not None:
        f = fext[0].tolist()
        rhs += s0 * f[0] + s1 * f[1] + s2 * f[2] + s3 * f[3] + s4 * f[4] + s5 * f[5]
    data.ddq[0] = rhs / (j0 * s0 + j1 * s1 + j2 * s2 + j3 * s3 + j4 * s4 + j5 * s5 + arm)
    return data.ddq


def _aba_body(model, data, q, v, tau, fext, armature):
    """One body on one joint (eqs. 14-16 in the body frame, no tree): ``(S^T J S +
    diag(armature)) q_ddot = tau - S^T (J (c + a_g) - ad*_{S v} J S v - f_ext)`` with ``c =
    q_dot^T dS q_dot`` (the ad term of eq. 14 vanishes since the body velocity is ``S
    q_dot``) and gravity ``a_g = [0; -R^T g]`` in the body frame. ``q, v, tau`` checked float
    arrays, ``fext`` None or checked, ``armature`` None or checked."""
    if model.has_joint_springs:
        tau = tau + passive_forces(model, q, v)
    if model.nv == 1:
        return _aba_one_dof_body(model, data, q, float(q[0]), float(v[0]), float(tau[0]),
                                 fext, 0.0 if armature is None else float(armature[0]))
    family = model.families[0]
    family.calc(q, data, data.family_work[0])
    S = data.S_body.T                                    # (6, nv)
    a0 = np.zeros(6)
    if family.multi:
        family.velocity_product(v, data, data.family_work[0])
        a0 += data.c_body[0]
    a0[3:] -= model.gravity @ data.oMi[0, :3, :3]       # R^T g
    J = model.inertias[0]
    vb = S @ v
    w = J @ a0 - se3.ad(vb).T @ (J @ vb)
    if fext is not None:
        w -= fext[0]
    data.ddq[:] = np.linalg.solve(_add_armature(S.T @ J @ S, armature), tau - S.T @ w)
    return data.ddq


def aba(model, data, q, v, tau, fext=None, *, check=True, method="auto", armature=None,
        track=None):
    """Forward dynamics ``q_ddot: (nv,)`` at ``(q, v)`` under actuation ``tau: (nv,)``,
    gravity, ``fext: (nb, 6)`` and the model's springs (seed 000 Appendix A, eqs. 43-44);
    with ``armature (nv,)`` (>= 0) the solution of ``(M + diag(armature)) q_ddot = tau - h``
    (module docstring); with ``track`` ``(nb,`` :data:`TRACK_COLUMNS` ``)`` world tracking's
    added masses and wrenches (module docstring, *World tracking*; "dense" or "recursive",
    numpy).

    ``method``:

    * ``"recursive"``: the O(n) articulated-body recursion of Appendix A;
    * ``"dense"``: ``M q_ddot = tau - h`` with the CRBA mass matrix (Cholesky);
    * ``"body"``: for a model of one body without point springs, its one Newton-Euler
      equation solved directly (in Python floats for a joint of one coordinate);
    * ``"auto"`` (default): "body" where it applies, else "dense" up to
      :data:`DENSE_MAX_DOFS` dofs and "recursive" above (see the module docstring).

    All agree to round-off. ``check=False`` skips argument validation, for callers
    (integrators) that check their state for non-finite values after every step: ``q, v,
    tau`` (and ``armature``) must then be float arrays of shape ``(nv,)`` and ``fext`` None
    or a checked ``(nb, 6)`` array. Writes ``data.ddq`` (the "body" method writes only
    ``data.oMi[0]``, the joint's ``S`` and ``data.ddq``).

    On the numba backend (:mod:`core.backend`) "auto" and "recursive" run the compiled O(n)
    recursion (:data:`COMPILED_METHODS`; it writes ``data.oMi`` and ``data.ddq``); "dense"
    and "body" stay numpy.
    """
    if check and armature is not None:
        armature = _checked_armature(model, armature)
    twin = _backend.twins.aba
    if twin is not None and method in COMPILED_METHODS and track is None:
        return twin(model, data, q, v, tau, fext, check, armature)
    if method == "auto":
        method = ("body" if model.one_body_inertia is not None and not model.point_springs
                  and track is None else "dense" if model.nv <= DENSE_MAX_DOFS
                  else "recursive")
        if method == "body" and model.nv == 1:             # floats from the start
            if check:
                model.check_data(data)
                x, qd, t = _scalar(model, q, "q"), _scalar(model, v, "v"), \
                    _scalar(model, tau, "tau")
                fext = model.check_fext(fext)
            else:
                x, qd, t = float(q[0]), float(v[0]), float(tau[0])
            if model.has_joint_springs:
                t -= float(model.spring_k[0]) * (x - float(model.spring_rest[0])) + \
                    float(model.spring_c[0]) * qd
            return _aba_one_dof_body(model, data, q, x, qd, t, fext,
                                     0.0 if armature is None else float(armature[0]))
    if method not in ("body", "dense", "recursive"):
        raise InvalidInputError(f"method must be 'auto', 'body', 'dense' or 'recursive', got "
                                f"{method!r}")
    if check:
        model.check_data(data)
        q = model.check_state(q)
        v = model.check_state(v, "v")
        tau = model.check_state(tau, "tau")
        fext = model.check_fext(fext)
    if method == "body":
        if model.one_body_inertia is None or model.point_springs or track is not None:
            raise InvalidInputError("method='body' solves a model of one body without point "
                                    f"springs; this one has {model.nbodies} bodies and "
                                    f"{len(model.point_springs)} point springs (or a "
                                    "tracking): use 'auto'")
        return _aba_body(model, data, q, v, tau, fext, armature)
    _prepare(model, data, q, v, fext)
    pull = None if track is None else _track_pull(model, data, track)
    if method == "dense":
        return _aba_dense(model, data, q, v, tau, fext, armature, pull)
    return _aba_recursive(model, data, q, v, tau, fext, armature, pull)


def kinetic_energy(model, data, q, v):
    """``sum_i 1/2 v_i^T J_i v_i`` (eq. 8 inertias): a float (on the numba backend one
    kernel call)."""
    q, v, _ = _checked(model, data, q, v, None)
    twin = _backend.twins.kinetic_energy
    if twin is not None:
        return twin(model, data, q, v)
    _prepare(model, data, q, v, None)
    return 0.5 * float(np.einsum("na,nab,nb->", data.V, data.I_world, data.V))


def potential_energy(model, data, q):
    """Gravity ``-sum m_i g . c_i`` (c_i world centre of mass) plus the elastic energy of joint
    springs ``1/2 k (q - rest)^2`` and point springs ``1/2 k (l - rest)^2``: a float. The
    world poses at q are left in ``data.oMi`` (on the numba backend by one kernel call)."""
    model.check_data(data)
    q = model.check_state(q)
    twin = _backend.twins.potential_energy
    if twin is not None:
        return twin(model, data, q)
    T = update_kinematics(model, data, q)
    c = np.einsum("nab,nb->na", T[:, :3, :3], model.coms) + T[:, :3, 3]
    e = -float(model.masses @ (c @ model.gravity))
    if model.has_joint_springs:
        e += 0.5 * float(model.spring_k @ (q - model.spring_rest) ** 2)
    for a, pa, b, pb, k, _c, rest in model.point_springs:
        xa = T[a, :3, :3] @ pa + T[a, :3, 3]
        xb = pb if b < 0 else T[b, :3, :3] @ pb + T[b, :3, 3]
        e += 0.5 * k * (np.linalg.norm(xb - xa) - rest) ** 2
    return e


def compute_joint_jacobians(model, data, q):
    """World poses and world joint Jacobian columns at ``q: (nq,)`` (Pinocchio's
    ``computeJointJacobians``): everything :func:`core.kinematics.update_kinematics` writes
    (``data.oMi``, ``data.Ad``/``Adinv``, ``data.S_body``, ``data.W[:, :2]``), so that
    :func:`core.kinematics.body_jacobian` reads them. Returns ``data.S_world (nv, 6)``. On the
    numba backend the joints and poses are one kernel call."""
    model.check_data(data)
    q = model.check_state(q)
    twin = _backend.twins.compute_joint_jacobians
    if twin is not None:
        twin(model, data, q)
    else:
        update_kinematics(model, data, q)
    return data.S_world


def mechanical_energy(model, data, q, v):
    """Kinetic plus potential energy: a float (on the numba backend one kernel call)."""
    twin = _backend.twins.mechanical_energy
    if twin is not None:
        q, v, _ = _checked(model, data, q, v, None)
        return twin(model, data, q, v)
    return kinetic_energy(model, data, q, v) + potential_energy(model, data, q)


def momentum(model, data, q, v):
    """World-frame momentum: ``(linear (3,), angular (3,))``, the angular part about the world
    origin (the spatial momentum ``sum_i I_world_i V_i``)."""
    q, v, _ = _checked(model, data, q, v, None)
    _prepare(model, data, q, v, None)
    h = np.einsum("nab,nb->a", data.I_world, data.V)
    return h[3:].copy(), h[:3].copy()
