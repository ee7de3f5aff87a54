"""n-DOF spline joint: a product of exponentials of basis twists times Euclidean splines
(seed 000 section 5.2, eqs. 25-26).

    G(q) = H prod_{j=1..m} exp(e_j phi_j(q)),    q in R^n (n = 1, 2, 3)

Each ``phi_j`` is a tensor-product B-spline ``phi_j(q) = sum_J c_j[J] W_J(q)`` with
``W_J(q) = prod_a B^{(a)}_{J_a}(q_a)`` (one knot vector and order per coordinate). The basis
twists default to the three unit translations then the three unit rotations (section 5.2:
translation first, then an Euler-angle-like rotation, which has singular configurations; keep
the joint's range away from them). S and dS/dq come from the shared recursion
(:mod:`core.joints.poe`, Appendix B).

Outside the box ``prod_a [t^a_{k_a-1}, t^a_{n_a}]`` each 1-D basis function continues linearly
from the nearest end of its axis (value plus slope times distance); the tensor product of those
continuations is C1 everywhere (faces and corners), its second derivatives are bounded, and G, S,
H are finite for every |q| <= Q_MAX (1e15; beyond, InvalidInputError as for the curve joint).
"""

import bisect

import numpy as np
from scipy import sparse

from .. import bspline
from ..compiled.layout import SJ_HEAD, SJ_PER_AXIS
from ..errors import InvalidInputError, NonFiniteError
from ..lie import se3
from . import poe
from .base import Joint
from .family import GenericFamily
from .spline_curve import Q_MAX, coordinate_error

__all__ = ["SplineJoint", "SplineJointFamily", "DEFAULT_BASIS_TWISTS"]

#: translations x, y, z then rotations about x, y, z, as twists [w; v]
DEFAULT_BASIS_TWISTS = np.array([
    [0, 0, 0, 1, 0, 0],
    [0, 0, 0, 0, 1, 0],
    [0, 0, 0, 0, 0, 1],
    [1, 0, 0, 0, 0, 0],
    [0, 1, 0, 0, 0, 0],
    [0, 0, 1, 0, 0, 0],
], dtype=float)

#: the compiled joint kind of :class:`SplineJointFamily`
KIND_SURFACE = 7


class _Axis:
    """One coordinate: knots, order, domain and per-span polynomials of the local basis."""

    def __init__(self, knots, order, a):
        self.k = int(order)
        self.t = bspline.check_knots(knots, self.k, name=f"knots[{a}]")
        self.n = self.t.size - self.k
        self.lo, self.hi = bspline.domain(self.t, self.k)
        mus, coeffs = bspline.span_polynomials(self.t, self.k)  # (S,), (S, k, k)
        k = self.k
        pw = np.arange(k, dtype=float)
        d1 = np.zeros_like(coeffs)
        d1[..., :-1] = coeffs[..., 1:] * pw[1:]
        d2 = np.zeros_like(coeffs)
        d2[..., :-1] = d1[..., 1:] * pw[1:]
        self.P = np.ascontiguousarray(np.stack([coeffs, d1, d2], axis=1))  # (S, 3, k, k)
        # value and slope polynomials with the span index last, for np.take in local_batch
        self.PT = np.ascontiguousarray(self.P[:, :2].transpose(1, 2, 3, 0))  # (2, k, k, S)
        self.mus = mus
        self.first = mus - k + 1  # first basis index of each span
        self.starts = self.t[mus]
        self.starts_list = self.starts.tolist()
        self.pw = pw

    def local(self, x):
        """(first index, (3, k) values/1st/2nd derivatives) at a scalar x, extrapolated."""
        c = min(max(x, self.lo), self.hi)
        s = max(bisect.bisect_right(self.starts_list, c) - 1, 0)
        v = self.P[s] @ ((c - self.starts_list[s]) ** self.pw)
        if c != x:
            v[0] += v[1] * (x - c)
            v[2] = 0.0
        return self.first[s], v

    def local_batch(self, x):
        """(first (N,), values (N, k)) for many x, extrapolated (values only)."""
        c = np.clip(x, self.lo, self.hi)
        s = np.clip(np.searchsorted(self.starts, c, side="right") - 1, 0, None)
        u = c - self.starts[s]
        C = np.take(self.PT, s, axis=3)  # (2, k, k, N): value and slope polynomials
        val = C[0, :, -1]
        for p in range(self.k - 2, -1, -1):  # Horner
            val = val * u + C[0, :, p]
        out = np.nonzero(x != c)[0]
        if out.size:
            Co = C[1][:, :, out]
            slope = Co[:, -1]
            for p in range(self.k - 2, -1, -1):
                slope = slope * u[out] + Co[:, p]
            val[:, out] += slope * (x[out] - c[out])
        return self.first[s], val.T


class SplineJoint(Joint):
    """n-DOF spline joint ``G(q) = H prod_j exp(e_j phi_j(q))`` (seed 000 eqs. 25-26).

    knots: n knot vectors (n = 1, 2, 3; a single 1-D array means n = 1);
    coefficients: (m, c_1, .., c_n) with ``c_a = len(knots[a]) - order_a``: phi_j's
    tensor-product B-spline coefficients; order: int or n ints (default 4, cubic, C2);
    basis_twists: (m, 6) constant twists e_j, default :data:`DEFAULT_BASIS_TWISTS` (m = 6);
    offset: (4, 4) constant H, default identity.

    Attributes: ``nq = n``, ``orders``, ``knots`` (list), ``basis_twists``, ``offset``,
    ``coefficients`` (a copy), ``lower``/``upper`` = the knot domain of each coordinate.
    For fitting: :meth:`basis` gives the tensor-product weights and their q-derivatives, so
    ``phi_j = coefficients[j].ravel() @ W``; :meth:`with_coefficients` makes a new joint.
    """

    def __init__(self, knots, coefficients, order=4, basis_twists=None, offset=None):
        if isinstance(knots, np.ndarray) and knots.ndim == 1 or \
                isinstance(knots, (list, tuple)) and all(np.isscalar(t) for t in knots):
            knots = [knots]  # one knot vector: n = 1
        try:
            knots = [np.asarray(t, dtype=float) for t in knots]
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"knots must be a list of n 1-D knot vectors (n = 1, 2, 3) ({exc}).") from None
        n = len(knots)
        if not 1 <= n <= 3:
            raise InvalidInputError(
                f"SplineJoint supports n = 1, 2 or 3 coordinates; got {n} knot vectors.")
        if np.isscalar(order):
            orders = [order] * n
        else:
            orders = list(order)
        if len(orders) != n:
            raise InvalidInputError(f"got {len(orders)} orders for {n} knot vectors; pass one "
                                    "order per coordinate or a single int.")
        for k in orders:
            if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 2:
                raise InvalidInputError(
                    f"orders must be integers >= 2 (4 = cubic, C2); got {orders!r}.")
        self._axes = [_Axis(knots[a], orders[a], a) for a in range(n)]
        self.nq = n
        e = DEFAULT_BASIS_TWISTS if basis_twists is None else basis_twists
        e = se3.check_twist(e, "basis_twists")
        if e.ndim != 2 or e.shape[0] < 1:
            raise InvalidInputError(f"basis_twists must have shape (m, 6); got {e.shape}.")
        m = e.shape[0]
        shape = (m,) + tuple(ax.n for ax in self._axes)
        C = np.asarray(coefficients, dtype=float)
        if C.shape != shape:
            raise InvalidInputError(
                f"coefficients must have shape {shape} (one tensor of spline coefficients per "
                f"basis twist, len(knots[a]) - order per axis); got {C.shape}.")
        if not np.all(np.isfinite(C)):
            raise NonFiniteError("coefficients contain NaN or inf; pass finite numbers.")
        H = np.eye(4) if offset is None else se3.check_transform(offset, "offset")
        if H.shape != (4, 4):
            raise InvalidInputError(f"offset must be one 4x4 transform; got {H.shape}.")
        self._C = np.array(C)
        self._Cflat = self._C.reshape(m, -1)
        self.offset = np.array(H)
        self._table = poe.TwistTable(e)
        self.basis_twists = self._table.g
        self._P = poe.soa_twists(self.basis_twists)[:, :, None]
        for arr in (self.offset, self.basis_twists):
            arr.flags.writeable = False  # the precomputed tables depend on them
        self._theta_list = self._table.theta.tolist()
        # positions of phi, dphi/dq_a, d2phi/dq_a dq_b in the flattened (3,)*n derivative table
        # whose axes are the derivative orders (d_1, ..., d_n) (see _functions)
        def flat(orders_):
            return int(np.ravel_multi_index(tuple(orders_), (3,) * n))
        z = [0] * n
        self._i0 = flat(z)
        self._i1 = [flat([1 if b == a else 0 for b in range(n)]) for a in range(n)]
        self._i2 = np.array([[flat([(b == a) + (b == c) for b in range(n)]) for c in range(n)]
                             for a in range(n)])

    # -- properties -----------------------------------------------------------------------
    @property
    def orders(self):
        return [ax.k for ax in self._axes]

    @property
    def knots(self):
        return [ax.t.copy() for ax in self._axes]

    @property
    def coefficients(self):
        """(m, c_1, .., c_n) copy of the spline coefficients."""
        return self._C.copy()

    @property
    def lower(self):
        return np.array([ax.lo for ax in self._axes])

    @property
    def upper(self):
        return np.array([ax.hi for ax in self._axes])

    def neutral(self):
        """q = 0 clipped into the knot box."""
        return np.clip(np.zeros(self.nq), self.lower, self.upper)

    def with_coefficients(self, coefficients):
        """A new joint with the same knots, orders, twists and offset."""
        return SplineJoint(self.knots, coefficients, self.orders, self.basis_twists, self.offset)

    # -- spline functions ---------------------------------------------------------------------
    def _functions(self, q):
        """phi (m,), dphi (m, n), d2phi (m, n, n) at a checked q."""
        n = self.nq
        X = self._C
        sl = [slice(None)]
        bases = []
        for a, ax in enumerate(self._axes):
            first, v = ax.local(float(q[a]))
            sl.append(slice(first, first + ax.k))
            bases.append(v)
        X = X[tuple(sl)]  # (m, k_1, .., k_n)
        m = X.shape[0]
        # contract the last axis first: X[m, k_1.., k_a, (d_{a+1}..d_n)] -> ... (m, 3^n)
        X = X @ bases[n - 1].T  # (m, k_1, .., k_{n-1}, 3)
        for a in range(n - 2, -1, -1):
            X = bases[a] @ X.reshape((m,) + X.shape[1:a + 1] + (X.shape[a + 1], -1))
        Xf = X.reshape(m, -1)
        return Xf[:, self._i0], Xf[:, self._i1], Xf[:, self._i2]

    def _check_range(self, q):
        if not np.abs(q).max() <= Q_MAX:
            i = np.unravel_index(np.argmax(np.abs(q)), q.shape)
            a = i[-1]
            raise coordinate_error(float(q[i]), self._axes[a].lo, self._axes[a].hi)
        return q

    def basis(self, q):
        """Tensor-product basis weights at ``q: (n,)`` (with the linear extrapolation).

        Returns W (C,), dW (n, C), d2W (n, n, C) with ``C = prod_a c_a`` in C order, so that
        ``phi_j(q) = coefficients[j].ravel() @ W`` and likewise for the derivatives. These are
        d(phi_j)/d(coefficients[j]); chain them with S (``dG = G hat(S dq)``) for fitting.
        """
        q = self._check_range(self.check_q(q))
        n = self.nq
        dense = []
        for a, ax in enumerate(self._axes):
            first, v = ax.local(float(q[a]))
            d = np.zeros((3, ax.n))
            d[:, first:first + ax.k] = v
            dense.append(d)

        def product(o):
            w = dense[0][o[0]]
            for a in range(1, n):
                w = np.multiply.outer(w, dense[a][o[a]]).ravel()
            return w

        W = product([0] * n)
        dW = np.stack([product([int(b == a) for b in range(n)]) for a in range(n)])
        d2W = np.empty((n, n, W.size))
        for a in range(n):
            for c in range(n):
                d2W[a, c] = product([(b == a) + (b == c) for b in range(n)])
        return W, dW, d2W

    def functions(self, q):
        """``(phi (m,), dphi (m, n), d2phi (m, n, n))``: the spline functions of eq. 25."""
        return self._functions(self._check_range(self.check_q(q)))

    # -- joint interface -------------------------------------------------------------------------
    def evaluate(self, q):
        """``(G (4, 4), S (6, n), H (n, 6, n))`` at ``q: (n,)`` (eqs. 25-30)."""
        q = self._check_range(self.check_q(q))
        phi, dphi, d2phi = self._functions(q)
        t = self._table
        return poe.evaluate(self.offset, t.g, self._theta_list, t.adg, t.K, phi.tolist(), dphi,
                            d2phi)

    def transforms(self, qs):
        """Batched ``G``: ``qs: (N, n) -> (N, 4, 4)``, vectorised over the samples."""
        qs = self.check_qs(qs)
        N = qs.shape[0]
        if N == 0:
            return np.zeros((0, 4, 4))
        self._check_range(qs)
        # tensor-product weights of the prod(k_a) non-zero basis functions of each sample as a
        # sparse (N, C) matrix: phi = W @ coefficients.reshape(m, C).T
        w = np.ones((N, 1))
        flat = np.zeros((N, 1), dtype=np.intp)
        for a, ax in enumerate(self._axes):
            first, v = ax.local_batch(qs[:, a])
            idx = first[:, None] + np.arange(ax.k)[None, :]  # (N, k_a)
            w = (w[:, :, None] * v[:, None, :]).reshape(N, -1)
            flat = (flat[:, :, None] * ax.n + idx[:, None, :]).reshape(N, -1)
        K = w.shape[1]
        W = sparse.csr_matrix((w.ravel(), flat.ravel(), np.arange(0, N * K + 1, K)),
                              shape=(N, self._Cflat.shape[1]))
        phi = np.asarray(W @ self._Cflat.T)  # (N, m)
        return poe.transforms(self.offset[:3, :, None], self._P, np.ascontiguousarray(phi.T))

    # -- serialisation -------------------------------------------------------------------------
    def to_dict(self):
        """Plain data: type, knots, order, coefficients, basis_twists, offset (lists)."""
        return {
            "type": "SplineJoint",
            "knots": [ax.t.tolist() for ax in self._axes],
            "order": self.orders,
            "coefficients": self._C.tolist(),
            "basis_twists": self.basis_twists.tolist(),
            "offset": self.offset.tolist(),
        }

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`."""
        if not isinstance(data, dict) or data.get("type") != "SplineJoint":
            raise InvalidInputError("from_dict expects the dict made by SplineJoint.to_dict() "
                                    "(with type 'SplineJoint').")
        try:
            return cls(data["knots"], data["coefficients"], data["order"],
                       data.get("basis_twists"), data.get("offset"))
        except KeyError as exc:
            raise InvalidInputError(
                f"SplineJoint description lacks {exc}; it needs knots, coefficients and "
                "order.") from None

    def __repr__(self):
        return (f"SplineJoint(n={self.nq}, twists={self._C.shape[0]}, "
                f"coefficients={self._C.shape[1:]})")


class SplineJointFamily(GenericFamily):
    """The :class:`SplineJoint` s of a model: evaluated one by one through
    :meth:`SplineJoint.evaluate` on the numpy backend, by the compiled kernel
    :func:`core.compiled.kernels.surface.surface_joint` on the numba backend."""

    #: the kernel reads the knot-span and twist tables of :mod:`core.compiled.kernels.surface`
    kernel_kind = KIND_SURFACE
    kernel_large = True

    def kernel_params(self, k):
        """``[n, m, (k, c, lo, hi, S, offset) per axis (3), H (12), g (m, 6), C, the axis
        tables]`` (layout in :mod:`core.compiled.kernels.surface`) and ``(0, 0)``."""
        j = self.joints[k]
        m = j.basis_twists.shape[0]
        head = np.zeros(SJ_HEAD)
        head[:2] = j.nq, m
        C = j._C.reshape((m,) + tuple(ax.n for ax in j._axes) + (1,) * (3 - j.nq))
        body = [j.offset[:3].ravel(), j.basis_twists.ravel(), C.ravel()]
        at = SJ_HEAD + sum(x.size for x in body)
        for a, ax in enumerate(j._axes):
            table = np.concatenate([ax.starts, ax.first, ax.P.ravel()])
            head[2 + SJ_PER_AXIS * a:2 + SJ_PER_AXIS * (a + 1)] = (ax.k, ax.n, ax.lo, ax.hi,
                                                             ax.starts.size, at)
            body.append(table)
            at += table.size
        return np.concatenate([head] + body), (0, 0)


SplineJoint.family = SplineJointFamily
