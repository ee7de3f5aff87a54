"""Lower-pair joints: revolute, prismatic, helical, cylindrical, universal, planar, fixed.

Every joint here is a product of exponentials of constant screws (seed 000 section 4.1),
``G(q) = exp(s_0 q_0) exp(s_1 q_1) ... exp(s_{n-1} q_{n-1})`` with ``G(0) = I`` (the joint's
placement in its parent body belongs to the model, not to the joint). For such a product
the body-frame Jacobian (eq. 12) and its derivative are

* ``S_i = Ad_{(exp(s_{i+1} q_{i+1}) ... exp(s_{n-1} q_{n-1}))^-1} s_i``
* ``dS_i/dq_j = ad_{S_i} S_j`` for ``j > i`` and ``0`` for ``j <= i``

(the universal joint's ``ds0*/dq1 = ad_{s0*} s1`` of section 4.1 is the case n = 2). Each
class writes the closed form of its own product so a call costs a few microseconds, and
``tests/core/test_lower_pairs.py`` checks every S and H against central differences and
against Pinocchio.

Coordinates: angles in radians, displacements in metres. Axes are normalized on
construction; a zero, non-finite or wrongly shaped axis raises InvalidInputError.
"""

import math

import numpy as np

from ..errors import InvalidInputError, NonFiniteError
from ..lie import so3
from .base import Joint
from .family import JointFamily, covers, dof_selector

__all__ = ["ParamJoint", "Revolute", "Prismatic", "Helical", "Cylindrical", "Universal",
           "Planar", "Fixed", "ScrewFamily", "FixedFamily", "unit_axis", "plane_basis"]

#: the compiled joint kinds of :class:`ScrewFamily` and :class:`FixedFamily`
KIND_SCREW, KIND_FIXED = 1, 6


def unit_axis(axis, name="axis"):
    """Validate and normalize a direction: ``axis: (3,)`` -> unit ``(3,)``.

    Raises InvalidInputError if the axis is not 3 finite numbers or has zero length.
    """
    a = np.asarray(axis, dtype=float)
    if a.shape != (3,):
        raise InvalidInputError(f"{name} must be 3 numbers (x, y, z), got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise NonFiniteError(f"{name} contains NaN or inf; pass a finite direction")
    n = np.linalg.norm(a)
    if not math.isfinite(n):  # |a|^2 overflows: normalize the direction scaled to max |a_i| = 1
        a = a / np.abs(a).max()
        n = np.linalg.norm(a)
    if n < 1e-12:
        raise InvalidInputError(f"{name} has zero length; pass a non-zero direction such as "
                                "(0, 0, 1)")
    # a vector that is unit to round-off is kept bit for bit, so to_dict/from_dict round-trip
    return a if abs(n - 1.0) <= 4e-16 else a / n


def plane_basis(normal):
    """Two unit tangents ``(t1, t2)`` with ``t1 x t2 = normal`` (unit ``normal: (3,)``).

    ``t1`` is the coordinate axis least aligned with ``normal`` (the first one on ties),
    projected onto the plane, so ``normal = z`` gives ``t1 = x, t2 = y`` and ``normal = x``
    gives ``t1 = y, t2 = z``.
    """
    e = np.zeros(3)
    e[int(np.argmin(np.abs(normal)))] = 1.0
    t1 = e - np.dot(e, normal) * normal
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(normal, t1)


def _rotation_about(K, K2, c, s):
    """Rodrigues ``I + s K + (1 - c) K^2`` for a unit axis ``K = [k]``; ``c, s: (N,)``."""
    c = np.asarray(c, dtype=float)[..., None, None]
    s = np.asarray(s, dtype=float)[..., None, None]
    return np.eye(3) + s * K + (1.0 - c) * K2


def _limits(value, nq, name, default):
    if value is None:
        return np.full(nq, default)
    v = np.asarray(value, dtype=float)
    if v.shape == ():
        v = np.full(nq, float(v))
    if v.shape != (nq,):
        raise InvalidInputError(f"{name} must be a number or {nq} numbers, got shape {v.shape}")
    if np.any(np.isnan(v)):
        raise InvalidInputError(f"{name} contains NaN; use -inf/inf (or None) for no limit")
    return v


def _limits_to_list(v):
    return [None if np.isinf(x) else float(x) for x in v]


def _limits_from_list(v, default):
    if v is None:
        return None
    return [default if x is None else x for x in np.atleast_1d(np.asarray(v, dtype=object))]


class ParamJoint(Joint):
    """A joint defined by a few constant parameters: stores the coordinate limits and
    serializes to/from a plain dict. Subclasses set ``nq``, call ``_init_limits`` in their
    constructor and return their constructor arguments from ``_params``."""

    def _init_limits(self, lower, upper):
        self._lower = _limits(lower, self.nq, "lower", -np.inf)
        self._upper = _limits(upper, self.nq, "upper", np.inf)
        if np.any(self._lower > self._upper):
            raise InvalidInputError(f"{type(self).__name__}: lower limit {self._lower} exceeds "
                                    f"upper limit {self._upper}; swap them")

    @property
    def lower(self):
        return self._lower.copy()

    @property
    def upper(self):
        return self._upper.copy()

    def _params(self):
        return {}

    def to_dict(self):
        """``{"type": class name, parameters..., "lower": [...], "upper": [...]}``; infinite
        limits are written as ``None`` so the dict is valid JSON."""
        d = {"type": type(self).__name__}
        d.update(self._params())
        d["lower"] = _limits_to_list(self._lower)
        d["upper"] = _limits_to_list(self._upper)
        return d

    @classmethod
    def from_dict(cls, d):
        """Inverse of :meth:`to_dict`."""
        if not isinstance(d, dict):
            raise InvalidInputError(f"{cls.__name__}.from_dict expects a dict, got "
                                    f"{type(d).__name__}; pass the output of to_dict()")
        if d.get("type", cls.__name__) != cls.__name__:
            raise InvalidInputError(f"{cls.__name__}.from_dict got type {d.get('type')!r}; "
                                    "use core.joints.joint_from_dict to dispatch on the type")
        kw = {k: v for k, v in d.items() if k not in ("type", "lower", "upper")}
        if cls.nq:
            kw["lower"] = _limits_from_list(d.get("lower"), -np.inf)
            kw["upper"] = _limits_from_list(d.get("upper"), np.inf)
        try:
            return cls(**kw)
        except TypeError as exc:
            raise InvalidInputError(f"{cls.__name__}.from_dict: bad keys in {sorted(d)} "
                                    f"({exc}); write the dict with to_dict()") from None

    def __repr__(self):
        args = ", ".join(f"{k}={np.round(v, 6).tolist() if isinstance(v, list) else v}"
                         for k, v in self._params().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    __hash__ = None


class _ConstantScrews(ParamJoint):
    """Joints whose screws commute, so ``S`` is a constant ``(6, nq)`` (``self._S``, set by the
    subclass) and ``H = 0`` (seed 000 section 4.1); the subclass provides :meth:`transform`."""

    def jacobian(self, q):
        """``S``: ``(6, nq)`` constant (seed 000 section 4.1)."""
        self.check_q(q)
        return self._S.copy()

    def hessian(self, q):
        """``H = 0``: ``(nq, 6, nq)``."""
        self.check_q(q)
        return np.zeros((self.nq, 6, self.nq))

    def evaluate(self, q):
        return self.transform(q), self._S.copy(), np.zeros((self.nq, 6, self.nq))


class ScrewFamily(JointFamily):
    """Revolute, prismatic and helical joints of a model, all at once: with the screw
    ``s = [k; v]`` (``v`` parallel to ``k``, or ``k = 0``, so ``[k] v = 0``) the top 3x4
    block of ``P G(q)`` is ``[P_R + sin q P_R [k] + (1 - cos q) P_R [k]^2, P_p + q P_R v]``,
    one product of ``[1, sin q, 1 - cos q, q]`` with a ``(4, 12)`` table per joint that
    folds in the placement. ``S = s`` is constant and ``dS/dq = 0``: both are written into
    ``data.SH`` once, by :meth:`create_work`."""

    def __init__(self, bodies, joints, placements, q_start):
        super().__init__(bodies, joints, placements, q_start)
        screws = np.array([j.screw for j in self.joints])
        K = so3.hat(screws[:, :3])
        H = self.placements[:, :3, :]
        HR = H[:, :, :3]
        table = np.zeros((len(screws), 4, 3, 4))
        table[:, 0] = H
        table[:, 1, :, :3] = HR @ K
        table[:, 2, :, :3] = HR @ (K @ K)
        table[:, 3, :, 3] = np.einsum("nij,nj->ni", HR, screws[:, 3:])
        #: ``(m, 4, 12)``: the top 3x4 block of ``P G(q)`` is ``[1, sin q, 1 - cos q, q]`` times it
        self.table = table.reshape(len(screws), 4, 12)
        self.screws = screws
        self.dof_sel = dof_selector(np.asarray(q_start, dtype=int))
        self.body_sel = dof_selector(self.bodies)

    #: the kernel reads the table (48 floats) and the screw (6) of each joint
    kernel_kind = KIND_SCREW

    def kernel_params(self, k):
        return np.concatenate([self.table[k].ravel(), self.screws[k]]), (0, 0)

    def create_work(self, data):
        data.SH[self.bodies, 0] = self.screws
        data.SH[self.bodies, 1] = 0.0
        coef = np.zeros((len(self.screws), 4))
        coef[:, 0] = 1.0
        #: where one product writes the top rows of the local transforms (a view if the
        #: bodies are a range), and whether the family's coordinates are the whole q
        out = data.LSH[self.body_sel, None, :12] if isinstance(self.body_sel, slice) else None
        return coef, out, covers(self.dof_sel, data.nv)

    def calc(self, q, data, work):
        coef, out, whole_q = work
        x = q if whole_q else q[self.dof_sel]
        np.sin(x, out=coef[:, 1])
        np.cos(x, out=coef[:, 2])
        np.subtract(1.0, coef[:, 2], out=coef[:, 2])
        coef[:, 3] = x
        if out is not None:
            np.matmul(coef[:, None, :], self.table, out=out)
        else:
            data.oMi[self.bodies, :3, :] = (coef[:, None, :] @ self.table).reshape(-1, 3, 4)


class _Screw1(_ConstantScrews):
    """1-DOF joint ``G(q) = exp(s q)`` about/along a constant unit axis; ``S = s``, ``H = 0``."""

    nq = 1
    family = ScrewFamily

    def _setup(self, axis, screw):
        self.axis = unit_axis(axis)
        self.screw = np.asarray(screw, dtype=float)
        self._S = self.screw.reshape(6, 1)
        self._K = so3.hat(self.axis)
        self._K2 = self._K @ self._K

    def transform(self, q):
        """``G(q) = exp(s q)``: ``(4, 4)``."""
        return self._G(self.check_q(q)[0])

    def transforms(self, qs):
        """``qs: (N, 1)`` or ``(N,)`` -> ``(N, 4, 4)``."""
        return self._Gs(self.check_qs(qs)[:, 0])


class Revolute(_Screw1):
    """Rotation by ``q`` (rad) about a unit ``axis: (3,)`` through the joint origin.

    ``G(q) = exp([k; 0] q)``, ``S = [k; 0]``, ``H = 0``.
    """

    def __init__(self, axis=(0.0, 0.0, 1.0), lower=None, upper=None):
        k = unit_axis(axis)
        self._setup(k, np.concatenate([k, np.zeros(3)]))
        self._init_limits(lower, upper)

    def _params(self):
        return {"axis": self.axis.tolist()}

    def _G(self, q):
        c, s = math.cos(q), math.sin(q)
        G = np.eye(4)
        G[:3, :3] += s * self._K + (1.0 - c) * self._K2
        return G

    def _Gs(self, q):
        G = np.zeros((len(q), 4, 4))
        G[:, :3, :3] = _rotation_about(self._K, self._K2, np.cos(q), np.sin(q))
        G[:, 3, 3] = 1.0
        return G


class Prismatic(_Screw1):
    """Translation by ``q`` (m) along a unit ``axis: (3,)``.

    ``G(q) = exp([0; k] q)``, ``S = [0; k]``, ``H = 0``.
    """

    def __init__(self, axis=(0.0, 0.0, 1.0), lower=None, upper=None):
        k = unit_axis(axis)
        self._setup(k, np.concatenate([np.zeros(3), k]))
        self._init_limits(lower, upper)

    def _params(self):
        return {"axis": self.axis.tolist()}

    def _G(self, q):
        G = np.eye(4)
        G[:3, 3] = q * self.axis
        return G

    def _Gs(self, q):
        G = np.zeros((len(q), 4, 4))
        G[:, [0, 1, 2, 3], [0, 1, 2, 3]] = 1.0
        G[:, :3, 3] = q[:, None] * self.axis
        return G


class Helical(_Screw1):
    """Screw motion: rotation ``q`` (rad) about ``axis`` with ``pitch * q`` (m) along it.

    Seed 000 section 4.1: ``s = [k; h k]``, ``G(q) = exp(s q) = [exp([k] q), h q k; 0, 1]``
    (the translation is along the rotation axis, which ``Jl`` leaves unchanged),
    ``S = s`` and ``H = 0``. ``pitch`` is metres per radian and may be any finite number
    (0 gives a revolute joint).
    """

    def __init__(self, axis=(0.0, 0.0, 1.0), pitch=0.0, lower=None, upper=None):
        k = unit_axis(axis)
        pitch = np.asarray(pitch, dtype=float)
        if pitch.shape != () or not np.isfinite(pitch):
            raise InvalidInputError(f"Helical: pitch must be one finite number (metres per "
                                    f"radian), got {pitch!r}")
        self.pitch = float(pitch)
        self._setup(k, np.concatenate([k, self.pitch * k]))
        self._init_limits(lower, upper)

    def _params(self):
        return {"axis": self.axis.tolist(), "pitch": self.pitch}

    def _G(self, q):
        c, s = math.cos(q), math.sin(q)
        G = np.eye(4)
        G[:3, :3] += s * self._K + (1.0 - c) * self._K2
        G[:3, 3] = (self.pitch * q) * self.axis
        return G

    def _Gs(self, q):
        G = np.zeros((len(q), 4, 4))
        G[:, :3, :3] = _rotation_about(self._K, self._K2, np.cos(q), np.sin(q))
        G[:, :3, 3] = (self.pitch * q)[:, None] * self.axis
        G[:, 3, 3] = 1.0
        return G


class Cylindrical(_ConstantScrews):
    """Rotation ``q[0]`` (rad) about and translation ``q[1]`` (m) along one unit ``axis``.

    ``G(q) = exp([k; 0] q0) exp([0; k] q1) = [exp([k] q0), q1 k; 0, 1]`` (the two screws
    commute), ``S = [[k, 0], [0, k]]`` constant, ``H = 0``.
    """

    nq = 2

    def __init__(self, axis=(0.0, 0.0, 1.0), lower=None, upper=None):
        self.axis = unit_axis(axis)
        self._K = so3.hat(self.axis)
        self._K2 = self._K @ self._K
        self._S = np.zeros((6, 2))
        self._S[:3, 0] = self.axis
        self._S[3:, 1] = self.axis
        self._init_limits(lower, upper)

    def _params(self):
        return {"axis": self.axis.tolist()}

    def transform(self, q):
        q = self.check_q(q)
        G = np.eye(4)
        G[:3, :3] += math.sin(q[0]) * self._K + (1.0 - math.cos(q[0])) * self._K2
        G[:3, 3] = q[1] * self.axis
        return G

    def transforms(self, qs):
        qs = self.check_qs(qs)
        G = np.zeros((len(qs), 4, 4))
        G[:, :3, :3] = _rotation_about(self._K, self._K2, np.cos(qs[:, 0]), np.sin(qs[:, 0]))
        G[:, :3, 3] = qs[:, 1:2] * self.axis
        G[:, 3, 3] = 1.0
        return G


class Universal(ParamJoint):
    """Two revolutes in series with intersecting axes: ``G(q) = exp([a0; 0] q0) exp([a1; 0] q1)``.

    Seed 000 section 4.1: ``S = [Ad_{exp(-s1 q1)} s0, s1] = [[R1^T a0, a1], [0, 0]]`` with
    ``R1 = exp([a1] q1)``; the only non-zero Hessian column is
    ``H[1][:, 0] = dS0/dq1 = ad_{S0} s1 = [(R1^T a0) x a1; 0]``. ``axis1`` is expressed in the
    frame after the first rotation (the usual Cardan cross); the axes may be any two
    non-parallel unit vectors (parallel axes are accepted but make a degenerate joint).
    """

    nq = 2

    def __init__(self, axis0=(1.0, 0.0, 0.0), axis1=(0.0, 1.0, 0.0), lower=None, upper=None):
        self.axis0 = unit_axis(axis0, "axis0")
        self.axis1 = unit_axis(axis1, "axis1")
        self._K0 = so3.hat(self.axis0)
        self._K0sq = self._K0 @ self._K0
        self._K1 = so3.hat(self.axis1)
        self._K1sq = self._K1 @ self._K1
        self._init_limits(lower, upper)

    def _params(self):
        return {"axis0": self.axis0.tolist(), "axis1": self.axis1.tolist()}

    def _parts(self, q):
        c0, s0, c1, s1 = math.cos(q[0]), math.sin(q[0]), math.cos(q[1]), math.sin(q[1])
        R0 = np.eye(3) + s0 * self._K0 + (1.0 - c0) * self._K0sq
        R1 = np.eye(3) + s1 * self._K1 + (1.0 - c1) * self._K1sq
        return R0, R1

    def transform(self, q):
        R0, R1 = self._parts(self.check_q(q))
        G = np.eye(4)
        G[:3, :3] = R0 @ R1
        return G

    def evaluate(self, q):
        R0, R1 = self._parts(self.check_q(q))
        G = np.eye(4)
        G[:3, :3] = R0 @ R1
        S = np.zeros((6, 2))
        s0 = R1.T @ self.axis0
        S[:3, 0] = s0
        S[:3, 1] = self.axis1
        H = np.zeros((2, 6, 2))
        H[1, :3, 0] = self._K1 @ -s0  # s0 x a1 = -[a1] s0
        return G, S, H

    def transforms(self, qs):
        qs = self.check_qs(qs)
        R0 = _rotation_about(self._K0, self._K0sq, np.cos(qs[:, 0]), np.sin(qs[:, 0]))
        R1 = _rotation_about(self._K1, self._K1sq, np.cos(qs[:, 1]), np.sin(qs[:, 1]))
        G = np.zeros((len(qs), 4, 4))
        G[:, :3, :3] = R0 @ R1
        G[:, 3, 3] = 1.0
        return G


class Planar(ParamJoint):
    """Motion in the plane through the origin normal to ``normal``: ``q = (x, y, theta)``.

    ``G(q) = exp([0; t1] x) exp([0; t2] y) exp([n; 0] theta) = [exp([n] theta), x t1 + y t2]``
    with the tangents ``(t1, t2)`` of :func:`plane_basis` (``normal = z`` gives x, y).
    ``S = [[0, 0, n], [R^T t1, R^T t2, 0]]`` with ``R = exp([n] theta)``; the non-zero Hessian
    entries are ``H[2][:, i] = ad_{S_i} S_2 = [0; -n x R^T t_i]`` for ``i = 0, 1``.
    """

    nq = 3

    def __init__(self, normal=(0.0, 0.0, 1.0), lower=None, upper=None):
        self.normal = unit_axis(normal, "normal")
        self.t1, self.t2 = plane_basis(self.normal)
        self._K = so3.hat(self.normal)
        self._K2 = self._K @ self._K
        self._init_limits(lower, upper)

    def _params(self):
        return {"normal": self.normal.tolist()}

    def _R(self, theta):
        return np.eye(3) + math.sin(theta) * self._K + (1.0 - math.cos(theta)) * self._K2

    def transform(self, q):
        q = self.check_q(q)
        G = np.eye(4)
        G[:3, :3] = self._R(q[2])
        G[:3, 3] = q[0] * self.t1 + q[1] * self.t2
        return G

    def evaluate(self, q):
        q = self.check_q(q)
        R = self._R(q[2])
        G = np.eye(4)
        G[:3, :3] = R
        G[:3, 3] = q[0] * self.t1 + q[1] * self.t2
        S = np.zeros((6, 3))
        u1, u2 = R.T @ self.t1, R.T @ self.t2
        S[3:, 0] = u1
        S[3:, 1] = u2
        S[:3, 2] = self.normal
        H = np.zeros((3, 6, 3))
        H[2, 3:, :2] = -self._K @ S[3:, :2]  # -n x R^T t_i
        return G, S, H

    def transforms(self, qs):
        qs = self.check_qs(qs)
        G = np.zeros((len(qs), 4, 4))
        G[:, :3, :3] = _rotation_about(self._K, self._K2, np.cos(qs[:, 2]), np.sin(qs[:, 2]))
        G[:, :3, 3] = qs[:, 0:1] * self.t1 + qs[:, 1:2] * self.t2
        G[:, 3, 3] = 1.0
        return G


class FixedFamily(JointFamily):
    """The welds of a model: each local transform is its placement (``G = I``), no
    coordinates, nothing else to write."""

    #: the kernel copies the placement (no parameters)
    kernel_kind = KIND_FIXED

    def calc(self, q, data, work):
        data.oMi[self.bodies] = self.placements


class Fixed(ParamJoint):
    """A weld: ``nq = 0``, ``G = I``, ``S: (6, 0)``, ``H: (0, 6, 0)``."""

    nq = 0
    family = FixedFamily

    def __init__(self):
        self._init_limits(None, None)

    def evaluate(self, q=()):
        self.check_q(q)
        return np.eye(4), np.zeros((6, 0)), np.zeros((0, 6, 0))

    def transform(self, q=()):
        return self.evaluate(q)[0]

    def jacobian(self, q=()):
        return self.evaluate(q)[1]

    def hessian(self, q=()):
        return self.evaluate(q)[2]

    def transforms(self, qs):
        qs = self.check_qs(qs)
        return np.broadcast_to(np.eye(4), (len(qs), 4, 4)).copy()
