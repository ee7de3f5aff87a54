"""1-DOF spline curve joint: a cumulative B-spline on SE(3) (seed 000 section 5.1, eqs. 21-24).

Given control frames ``G_0 .. G_m`` (m + 1 of them) and control twists
``z_j = log(G_{j-1}^-1 G_j)``, the joint transform is (eq. 21)

    G(q) = G_0 prod_{j=1..m} exp(z_j Bc_j(q)),    Bc_j = sum_{l >= j} B_{l,k}  (eq. 22)

On the knot span ``t_mu <= q < t_{mu+1}`` all ``Bc_j`` with ``j <= mu - k + 1`` are 1 and those
with ``j > mu`` are 0, so ``G(q) = G_{mu-k+1} prod_{j=mu-k+2..mu} exp(z_j Bc_j(q))``: a product of
only k - 1 exponentials (eq. 24). S and dS/dq come from the shared product-of-exponentials
recursion (:mod:`core.joints.poe`, Appendix B) with ``phi_j = Bc_j``.

Knot convention. The knot vector has ``m + 1 + k`` entries ``t_0 .. t_{m+k}`` (one B-spline
basis function per control frame); the valid coordinate range is the B-spline domain
``[t_{k-1}, t_{m+1}]``. With simple knots ``G`` is ``C^{k-2}`` (C2 for the default cubic,
k = 4); a knot repeated r times lowers that to ``C^{k-1-r}``. The default (``knots=None``) is
uniform with unit spacing and the range ``[0, m + 2 - k]``. :func:`natural_knots` builds knots
from the distances between control frames (section 6.1).

Outside ``[t_{k-1}, t_{m+1}]`` the joint continues along its end twist with constant body
velocity: ``G(q) = G(q_end) exp(S(q_end) (q - q_end))``, ``S(q) = S(q_end)``, ``dS/dq = 0``.
This is C1 (G and S continuous; dS/dq jumps to 0) and finite for every |q| <= Q_MAX = 1e15
(larger |q| raises InvalidInputError: it only comes from a diverged simulation).

Control twists come from the principal log, so consecutive control frames must differ by a
rotation of less than pi; to pass larger turns give the twists directly with
:meth:`SplineCurveJoint.from_twists`.
"""

import bisect
import math

import numpy as np
from numpy.polynomial import chebyshev

from .. import bspline
from ..errors import InvalidInputError, NonFiniteError
from ..lie import se3
from . import poe
from .base import Joint
from .family import GenericFamily, JointFamily, covers, dof_selector

__all__ = ["SplineCurveJoint", "ClosedSplineCurveJoint", "CubicSplineFamily",
           "ClosedCubicSplineFamily", "natural_knots",
           "frame_knots_to_full", "coordinate_error", "Q_MAX", "FIT_DEGREES", "FIT_TOL"]

#: the compiled joint kinds of :class:`CubicSplineFamily` and :class:`ClosedCubicSplineFamily`
KIND_SPLINE, KIND_CLOSED_SPLINE = 2, 5


#: |q| beyond this is rejected: the linear extrapolation stays finite far beyond it, but such
#: coordinates only come from a diverged simulation (and q itself has no digits left)
Q_MAX = 1e15


def coordinate_error(x, lo, hi):
    """The NonFiniteError for a spline coordinate ``x`` that is NaN, inf or beyond
    :data:`Q_MAX` (``[lo, hi]`` the knot range, quoted in the message); the spline joints
    raise it."""
    if not math.isfinite(x):
        return NonFiniteError("spline joint: q is NaN or inf; pass finite coordinates.")
    return NonFiniteError(
        f"spline joint: q = {x:g} is beyond +-{Q_MAX:g} (the knot range is [{lo:g}, {hi:g}]); "
        "such coordinates mean the simulation diverged: reduce the time step or check forces.")


def _check_frames(control_frames, order, name="control_frames"):
    F = np.asarray(control_frames, dtype=float)
    if F.ndim != 3 or F.shape[1:] != (4, 4):
        raise InvalidInputError(
            f"{name} must have shape (m + 1, 4, 4): a stack of 4x4 transforms; got {F.shape}.")
    if F.shape[0] < order:
        raise InvalidInputError(
            f"a spline curve joint of order {order} needs at least {order} control frames; got "
            f"{F.shape[0]}. Add control frames or lower the order (order 4 = cubic).")
    return se3.check_transform(F, name)


def _check_spline_order(order):
    if isinstance(order, (bool, np.bool_)) or not isinstance(order, (int, np.integer)) \
            or order < 2:
        raise InvalidInputError(
            f"order must be an integer >= 2 (4 = cubic, C2; order k gives C^(k-2)); got {order!r}.")
    return int(order)


def frame_knots_to_full(frame_knots, order):
    """Expand one knot per control frame ``s_0 .. s_m`` into a full knot vector (m + 1 + k,).

    Control frame j gets knot index ``j + k // 2`` (for the cubic: ``t_{j+2} = s_j``, the middle
    of its basis function's support), so that the parameter advances by about
    ``s_j - s_{j-1}`` between control frames j-1 and j. ``k // 2`` knots are added before
    (spaced like ``s_1 - s_0``) and ``k - k // 2`` after (spaced like ``s_m - s_{m-1}``).
    """
    k = _check_spline_order(order)
    s = np.asarray(frame_knots, dtype=float)
    if s.ndim != 1 or s.size < 2:
        raise InvalidInputError(f"frame_knots must be 1-D with at least 2 values; got {s.shape}.")
    c = k // 2
    d0, d1 = s[1] - s[0], s[-1] - s[-2]
    before = s[0] - d0 * np.arange(c, 0, -1)
    after = s[-1] + d1 * np.arange(1, k - c + 1)
    return np.concatenate([before, s, after])


def natural_knots(control_frames, length_scale=1.0, order=4):
    """Natural knots (seed 000 section 6.1) for ``SplineCurveJoint(control_frames, knots, order)``.

    control_frames: (m + 1, 4, 4); length_scale: metres per radian (> 0).
    Per-frame knots follow ``s_j = s_{j-1} + |log(G_{j-1}^-1 G_j)|`` with the metric
    ``|[w; v]| = sqrt((length_scale |w|)^2 + |v|^2)``: a rotation of theta radians counts as
    ``length_scale * theta`` metres, so q measures (approximately) arc length in metres and
    ``|S(q)| ~ 1`` in that metric. They are expanded by :func:`frame_knots_to_full` and shifted
    so that the valid range starts at q = 0. Returns (m + 1 + order,).
    Raises InvalidInputError if two consecutive control frames coincide (zero distance would
    repeat a knot and break C2): remove the duplicate frame.
    """
    k = _check_spline_order(order)
    F = _check_frames(control_frames, k)
    if not (np.isscalar(length_scale) and np.isfinite(length_scale) and length_scale > 0):
        raise InvalidInputError(
            f"length_scale must be a finite number > 0 (metres per radian); got {length_scale!r}.")
    z = se3.log(np.matmul(se3.inv(F[:-1]), F[1:]))
    d = np.sqrt((length_scale ** 2) * np.sum(z[:, :3] ** 2, axis=1) + np.sum(z[:, 3:] ** 2, axis=1))
    tiny = 1e-12 * max(1.0, float(d.max()))
    if np.any(d <= tiny):
        j = int(np.argmax(d <= tiny)) + 1
        raise InvalidInputError(
            f"control frames {j - 1} and {j} coincide, so natural knots would repeat; remove one "
            "of them (or pass explicit knots).")
    full = frame_knots_to_full(np.concatenate([[0.0], np.cumsum(d)]), k)
    return full - full[k - 1]


def _read_description(data, kind, *extra):
    """``(control_frames array, order, data[extra]...)`` from a ``to_dict()`` of type ``kind``
    (the class name), or InvalidInputError saying what is missing."""
    if not isinstance(data, dict) or data.get("type") != kind:
        raise InvalidInputError(
            f"from_dict expects the dict made by {kind}.to_dict() (with type '{kind}').")
    try:
        frames = np.asarray(data["control_frames"], dtype=float)
        order = data["order"]
        rest = [data[key] for key in extra]
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"{kind} description is incomplete or malformed ({exc!r}); it needs "
            f"{', '.join(('order',) + extra)} and control_frames.") from None
    order = _check_spline_order(order)
    missing = [key for key, value in zip(extra, rest) if value is None]
    if missing:
        raise InvalidInputError(
            f"{kind} description has {missing[0]} null; to_dict() writes them: give the "
            f"{missing[0]} as numbers.")
    if "control_twists" in data and (frames.ndim != 3 or frames.shape[0] < 1):
        raise InvalidInputError("control_frames must be a (number of frames, 4, 4) list.")
    return (frames, order, *rest)


def _check_frames_agree(frames, rebuilt):
    """Raise InvalidInputError unless stored ``frames`` match those ``rebuilt`` from
    ``control_frames[0]`` and the stored control twists (both (m + 1, 4, 4)); a NaN in either
    is a mismatch."""
    if frames.shape != rebuilt.shape or not np.abs(frames - rebuilt).max() <= 1e-6:
        raise InvalidInputError(
            "control_frames and control_twists disagree (G_j != G_{j-1} exp(z_j)); after "
            "editing the frames, drop control_twists to rebuild from the frames.")


class SplineCurveJoint(Joint):
    """1-DOF joint along a cumulative B-spline on SE(3) (seed 000 eqs. 21-24).

    control_frames: (m + 1, 4, 4) rigid transforms, m + 1 >= order;
    knots: (m + 1 + order,) non-decreasing, or None for uniform unit spacing
    (see :func:`natural_knots`); order: k >= 2 (4 = cubic, C2).

    Attributes: ``order``, ``knots`` (m+1+k,), ``control_frames`` (m+1, 4, 4),
    ``control_twists`` (m, 6), ``lower``/``upper`` = ``[t_{k-1}]``/``[t_{m+1}]``.
    In a model, cubic ones are evaluated from per-span tables (:class:`CubicSplineFamily`).
    """

    nq = 1

    def __init__(self, control_frames, knots=None, order=4):
        k = _check_spline_order(order)
        F = _check_frames(control_frames, k)
        z = se3.log(np.matmul(se3.inv(F[:-1]), F[1:]))
        self._setup(F[0], z, knots, k)

    @classmethod
    def from_twists(cls, first_frame, control_twists, knots=None, order=4):
        """Build from ``G_0: (4, 4)`` and control twists ``z: (m, 6)`` (any rotation angle,
        e.g. turns beyond pi between consecutive frames); ``G_j = G_{j-1} exp(z_j)``."""
        k = _check_spline_order(order)
        G0 = se3.check_transform(first_frame, "first_frame")
        if G0.shape != (4, 4):
            raise InvalidInputError(f"first_frame must be one 4x4 transform; got {G0.shape}.")
        z = se3.check_twist(control_twists, "control_twists")
        if z.ndim != 2:
            raise InvalidInputError(
                f"control_twists must have shape (m, 6); got {z.shape}.")
        if z.shape[0] + 1 < k:
            raise InvalidInputError(
                f"order {k} needs at least {k - 1} control twists ({k} control frames); got "
                f"{z.shape[0]}. Add twists or lower the order.")
        self = cls.__new__(cls)
        self._setup(G0, z, knots, k)
        return self

    # -- construction -------------------------------------------------------------------
    def _setup(self, G0, z, knots, k):
        m = z.shape[0]
        if knots is None:
            t = bspline.uniform_knots(m + 1, k)
        else:
            t = np.asarray(knots, dtype=float)
            if t.ndim != 1 or t.size != m + 1 + k:
                raise InvalidInputError(
                    f"knots must have m + 1 + order = {m + 1 + k} entries for {m + 1} control "
                    f"frames of order {k}; got shape {t.shape}. Use natural_knots(...) or "
                    "bspline.uniform_knots(m + 1, order).")
            t = bspline.check_knots(t, k)
        self.order = k
        self.knots = np.array(t)
        self.control_twists = np.array(z, dtype=float)
        frames = np.empty((m + 1, 4, 4))
        frames[0] = G0
        E = se3.exp(z)
        for j in range(m):
            frames[j + 1] = frames[j] @ E[j]
        self.control_frames = frames
        for arr in (self.knots, self.control_twists, self.control_frames):
            arr.flags.writeable = False  # the precomputed tables below depend on them
        table = poe.TwistTable(z)

        mus, coeffs = bspline.span_polynomials(t, k)  # (S,), (S, k, k)
        # cumulative functions Bc_{mu-k+2..mu} = suffix sums of the local basis, as polynomials
        cum = np.cumsum(coeffs[:, ::-1, :], axis=1)[:, ::-1, :][:, 1:, :]  # (S, k-1, k)
        pw = np.arange(k, dtype=float)
        d1 = np.zeros_like(cum)
        d1[..., :-1] = cum[..., 1:] * pw[1:]
        d2 = np.zeros_like(cum)
        d2[..., :-1] = d1[..., 1:] * pw[1:]
        self._D = np.ascontiguousarray(np.stack([cum, d1, d2], axis=1))  # (S, 3, k-1, k)
        # twists of span mu: z_{mu-k+2..mu} stored at z[mu-k+1 .. mu-1]
        idx = (mus - k + 1)[:, None] + np.arange(k - 1)[None, :]
        spans = table.take(idx.ravel())
        S_ = mus.size
        self._g = spans.g.reshape(S_, k - 1, 6)
        self._theta = spans.theta.reshape(S_, k - 1)
        self._adg = spans.adg.reshape(S_, k - 1, 6, 6)
        self._K = spans.K.reshape(S_, k - 1, 10, 52)
        self._H = np.ascontiguousarray(frames[mus - k + 1])
        # structure-of-arrays tables for the batched path (span index last)
        self._DT = np.ascontiguousarray(self._D[:, 0].transpose(1, 2, 0))  # (k-1, k, S)
        self._HT = np.ascontiguousarray(self._H[:, :3, :].transpose(1, 2, 0))  # (3, 4, S)
        self._PT = np.ascontiguousarray(poe.soa_twists(self._g).transpose(1, 2, 0))  # (k-1,11,S)
        self._starts = t[mus]
        self._starts_list = [float(v) for v in self._starts]
        self._pw = pw
        self._lo = float(t[k - 1])
        self._hi = float(t[m + 1])
        self._zeroH = np.zeros((1, 6, 1))
        self._cubic = None
        if k == 4:
            self._cubic = _cubic_tables(self._H, self._g, self._adg, self._K)
            self._cubic_poly = [row.ravel().tolist() for row in self._D]
            self._theta_list = self._theta.tolist()
        # end data for the constant-twist extrapolation
        G_lo, S_lo, _ = self._inside(self._lo)
        G_hi, S_hi, _ = self._inside(self._hi)
        self._end_G = np.stack([G_lo, G_hi])
        self._end_S = np.stack([S_lo[:, 0], S_hi[:, 0]])
        self._end_table = poe.TwistTable(self._end_S)

    # -- evaluation -----------------------------------------------------------------------
    @property
    def lower(self):
        return np.array([self._lo])

    @property
    def upper(self):
        return np.array([self._hi])

    def neutral(self):
        """q = 0 clipped into the valid range (the start of the range for natural or default
        knots)."""
        return np.array([min(max(0.0, self._lo), self._hi)])

    def _scalar(self, q):
        # fast paths for a float and a float64 array of shape (1,); the rest via check_q
        if isinstance(q, float):
            x = float(q)
        elif type(q) is np.ndarray and q.shape == (1,) and q.dtype == np.float64:
            x = float(q[0])
        else:
            x = float(self.check_q(q)[0])
        if not abs(x) <= Q_MAX:
            raise coordinate_error(x, self._lo, self._hi)
        return x

    def _inside(self, x):
        s = bisect.bisect_right(self._starts_list, x) - 1
        if s < 0:
            s = 0
        u = x - self._starts_list[s]
        if self._cubic is not None:
            return _cubic_evaluate(self._cubic[s], self._theta_list[s], self._adg[s, 2],
                                   self._cubic_poly[s], u)
        vals = self._D[s] @ (u ** self._pw)  # (3, k-1): Bc, dBc/dq, d2Bc/dq2
        return poe.evaluate(self._H[s], self._g[s], self._theta[s], self._adg[s], self._K[s],
                            vals[0], vals[1][:, None], vals[2][:, None, None])

    def evaluate(self, q):
        """``(G (4, 4), S (6, 1), H (1, 6, 1))`` at ``q: (1,)`` or a float (eqs. 24, 27-30)."""
        x = self._scalar(q)
        if x < self._lo:
            end, dq = 0, x - self._lo
        elif x > self._hi:
            end, dq = 1, x - self._hi
        else:
            return self._inside(x)
        tab = self._end_table
        coef = poe.exp_scalars(dq, tab.theta[end])
        E = (np.dot(coef[:4], tab.KE[end]) + poe.I4_FLAT).reshape(4, 4)
        return self._end_G[end] @ E, self._end_S[end][:, None].copy(), self._zeroH.copy()

    def transforms(self, qs):
        """Batched ``G``: ``qs: (N, 1)`` or ``(N,)`` -> ``(N, 4, 4)``, vectorised."""
        x = self.check_qs(qs)[:, 0]
        N = x.size
        if N and not np.abs(x).max() <= Q_MAX:
            raise coordinate_error(float(x[np.argmax(np.abs(x))]), self._lo, self._hi)
        out = np.empty((N, 4, 4))
        below = x < self._lo
        above = x > self._hi
        inside = ~(below | above)
        xi = x[inside]
        if xi.size:
            s = np.clip(np.searchsorted(self._starts, xi, side="right") - 1, 0, None)
            u = xi - self._starts[s]
            # np.take keeps the samples axis contiguous (fancy indexing would not)
            C = np.take(self._DT, s, axis=2)  # (k-1, k, n) polynomial coefficients
            phi = C[:, -1]
            for p in range(self.order - 2, -1, -1):  # Horner
                phi = phi * u + C[:, p]
            out[inside] = poe.transforms(np.take(self._HT, s, axis=2),
                                         np.take(self._PT, s, axis=2), phi)
        for end, mask, q_end in ((0, below, self._lo), (1, above, self._hi)):
            if np.any(mask):
                dq = (x[mask] - q_end)[None, :]
                out[mask] = poe.transforms(self._end_G[end, :3, :, None],
                                           poe.soa_twists(self._end_S[end:end + 1])[:, :, None],
                                           dq)
        return out

    # -- serialisation ------------------------------------------------------------------------
    def to_dict(self):
        """Plain data: type, order, knots, control_frames and control_twists (lists)."""
        return {
            "type": "SplineCurveJoint",
            "order": self.order,
            "knots": self.knots.tolist(),
            "control_frames": self.control_frames.tolist(),
            "control_twists": self.control_twists.tolist(),
        }

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`. With ``control_twists`` the joint is rebuilt from
        ``control_frames[0]`` and the twists (turns beyond pi survive) and the frames must agree
        with them; without, from the frames."""
        frames, order, knots = _read_description(data, "SplineCurveJoint", "knots")
        if "control_twists" in data:
            joint = cls.from_twists(frames[0], data["control_twists"], knots, order)
            _check_frames_agree(frames, joint.control_frames)
            return joint
        return cls(frames, knots, order)

    def __repr__(self):
        return (f"SplineCurveJoint(order={self.order}, control_frames={len(self.control_frames)}, "
                f"range=[{self._lo:g}, {self._hi:g}])")


# -- cubic fast path --------------------------------------------------------------------------
# For k = 4 the recursion of Appendix B over the three exponentials of a span unrolls to
# (E_i = exp(g_i b_i), A_i = Ad_{exp(-g_i b_i)}, b_i = Bc_i(q), primes = d/dq):
#   y = A_2 g_1, w = ad_{g_2} y, a = A_3 g_2, c = ad_{g_3} a, [Zy, Zw] = A_3 [y, w], V = ad_{g_3} Zy
#   S  = g_3 b3' + a b2' + Zy b1'
#   dS = g_3 b3'' + a b2'' + Zy b1'' - Zw b1' b2' - c b3' b2' - V b3' b1'
# (the ad terms use the updated mu, as in poe). Everything that is linear in the exp scalars of
# one twist (H E_1, E_2, E_3, A_3, [y, w], [g_3, a, c]) comes out of one product of the 31-vector
# [1, s_1(10), s_2(10), s_3(10)] with a (31, 120) table built per span below. Tested against the
# generic poe.evaluate.

def _cubic_tables(H, g, adg, K):
    """(S, 31, 120) tables of the unrolled cubic recursion for every span."""
    S_ = H.shape[0]
    T = np.zeros((S_, 31, 120))
    KE = K[:, :, :, :16].reshape(S_, 3, 10, 4, 4)
    KA = K[:, :, :, 16:].reshape(S_, 3, 10, 6, 6)
    eye4 = np.eye(4)
    # H E_1 = H + sum_r s1_r H KE1_r
    T[:, 0, 0:16] = H.reshape(S_, 16)
    T[:, 1:11, 0:16] = np.matmul(H[:, None], KE[:, 0]).reshape(S_, 10, 16)
    T[:, 0, 16:32] = eye4.ravel()
    T[:, 11:21, 16:32] = KE[:, 1].reshape(S_, 10, 16)
    T[:, 0, 32:48] = eye4.ravel()
    T[:, 21:31, 32:48] = KE[:, 2].reshape(S_, 10, 16)
    T[:, 0, 48:84] = np.eye(6).ravel()
    T[:, 21:31, 48:84] = KA[:, 2].reshape(S_, 10, 36)
    # [y, w] (6, 2) row-major at 84:96: y = g1 + sum s2_r KA2_r g1, w = adg2 y
    g1, g2, g3 = g[:, 0], g[:, 1], g[:, 2]
    KA2g1 = np.einsum("srij,sj->sri", KA[:, 1], g1)  # (S, 10, 6)
    yw0 = np.stack([g1, np.einsum("sij,sj->si", adg[:, 1], g1)], axis=-1)  # (S, 6, 2)
    yw = np.stack([KA2g1, np.einsum("sij,srj->sri", adg[:, 1], KA2g1)], axis=-1)  # (S,10,6,2)
    T[:, 0, 84:96] = yw0.reshape(S_, 12)
    T[:, 11:21, 84:96] = yw.reshape(S_, 10, 12)
    # [g3, a, c] (6, 3) row-major at 96:114: a = g2 + sum s3_r KA3_r g2, c = adg3 a
    KA3g2 = np.einsum("srij,sj->sri", KA[:, 2], g2)
    gac0 = np.stack([g3, g2, np.einsum("sij,sj->si", adg[:, 2], g2)], axis=-1)
    gac = np.stack([np.zeros_like(KA3g2), KA3g2,
                    np.einsum("sij,srj->sri", adg[:, 2], KA3g2)], axis=-1)
    T[:, 0, 96:114] = gac0.reshape(S_, 18)
    T[:, 21:31, 96:114] = gac.reshape(S_, 10, 18)
    return T


def cubic_span_values(joint, u):
    """``(S, P, 28)``: ``[G (16, row-major), S (6), dS/dq (6)]`` of the cubic spline curve
    ``joint`` on each of its ``S`` knot spans at the offsets ``u: (S, P)`` from the span
    starts: the vectorised twin of :func:`_cubic_evaluate` (same tables, same exp scalars),
    from which :class:`CubicSplineFamily` tabulates the spans (:func:`_fit_spans`)."""
    u = np.asarray(u, dtype=float)
    S_, P = u.shape
    vals = np.einsum("sdfp,snp->sndf", joint._D, u[..., None] ** np.arange(4))  # (S,P,3,3)
    b, d, e = vals[..., 0, :], vals[..., 1, :], vals[..., 2, :]         # Bc, Bc', Bc''
    cvec = np.ones((S_, P, 31))
    cvec[..., 1:] = poe.exp_scalars_batch(b, joint._theta[:, None, :]).reshape(S_, P, 30)
    r = cvec @ joint._cubic                                            # (S, P, 120)
    E = r[..., :48].reshape(S_, P, 3, 4, 4)                           # H E_1, E_2, E_3
    G = E[:, :, 0] @ E[:, :, 1] @ E[:, :, 2]
    Z = r[..., 48:84].reshape(S_, P, 6, 6) @ r[..., 84:96].reshape(S_, P, 6, 2)  # [Zy, Zw]
    M = np.concatenate((r[..., 96:114].reshape(S_, P, 6, 3), Z,
                        joint._adg[:, None, 2] @ Z[..., :1]), axis=3)  # (S, P, 6, 6)
    (d1, d2, d3), (e1, e2, e3) = np.moveaxis(d, -1, 0), np.moveaxis(e, -1, 0)
    zero = np.zeros_like(d1)
    C = np.stack([np.stack(pair, -1) for pair in ((d3, e3), (d2, e2), (zero, -d3 * d2),
                                                  (d1, e1), (zero, -d1 * d2),
                                                  (zero, -d3 * d1))], axis=-2)  # (S, P, 6, 2)
    SH = M @ C
    return np.concatenate([G.reshape(S_, P, 16), SH[..., 0], SH[..., 1]], axis=-1)


def _cubic_evaluate(table, theta, adg3, poly, u):
    """``(G, S, H)`` on one span of a cubic curve joint at ``u = q - t_mu``.

    table: (31, 120) from :func:`_cubic_tables`; theta: 3 twist angles; adg3: (6, 6);
    poly: 36 floats, the (3 derivative orders, 3 functions, 4 powers) coefficients of Bc.
    """
    u2 = u * u
    u3 = u2 * u
    (b1, b2, b3, d1, d2, d3, e1, e2, e3) = [
        poly[i] + poly[i + 1] * u + poly[i + 2] * u2 + poly[i + 3] * u3 for i in range(0, 36, 4)]
    t1, t2, t3 = theta
    cvec = np.array([1.0] + poe.exp_scalars(b1, t1) + poe.exp_scalars(b2, t2)
                    + poe.exp_scalars(b3, t3))
    r = cvec @ table
    E = r[:48].reshape(3, 4, 4)  # H E_1, E_2, E_3
    G = E[0] @ E[1] @ E[2]
    Z = r[48:84].reshape(6, 6) @ r[84:96].reshape(6, 2)  # [Zy, Zw]
    M = np.concatenate((r[96:114].reshape(6, 3), Z, adg3 @ Z[:, :1]), axis=1)  # (6, 6)
    C = np.array([[d3, e3], [d2, e2], [0.0, -d3 * d2], [d1, e1], [0.0, -d1 * d2],
                  [0.0, -d3 * d1]])
    SH = M @ C
    return G, SH[:, :1], SH[:, 1].reshape(1, 6, 1)


# -- the cubic family of a model: per-span polynomial tables ----------------------------------
#: candidate degrees of the per-span polynomials (the lowest that reaches FIT_TOL is used),
#: the error they must reach (relative to max(1, |values|)), the Chebyshev nodes per span of
#: the least-squares fit and the points where it is verified
FIT_DEGREES = (12, 16, 20, 24, 28, 32)
FIT_TOL = 2e-14
_FIT_NODES = np.cos(np.pi * (np.arange(64) + 0.5) / 64)
_FIT_CHECK = np.linspace(-1.0, 1.0, 33)


def _cheb_to_monomial(deg):
    """``(deg + 1, deg + 1)``: column k holds the monomial coefficients of T_k."""
    out = np.zeros((deg + 1, deg + 1))
    for k in range(deg + 1):
        m = chebyshev.cheb2poly(np.eye(deg + 1)[k])
        out[:m.size, k] = m
    return out


def _fit_spans(joints, placements):
    """Tabulate every knot span of the cubic ``joints`` (placements ``(m, 4, 4)``):
    ``(rows (S, 1 + 28 (deg + 1)), deg, err)``.

    Row s holds the span midpoint ``c`` and the ``(deg + 1, 28)`` coefficients, in the powers
    of ``q - c``, of ``[P G(q) (16, row-major), S (6), dS/dq (6)]``, where ``G, S, dS/dq``
    are the exact values of the joint's recursion (:func:`cubic_span_values`) and ``P`` the
    placement. They are entire functions of q on a span (products of exponentials of
    cubics), so a polynomial of modest degree reaches round-off: the coefficients come from
    a least-squares Chebyshev fit at 64 Chebyshev nodes (their discrete orthogonality makes
    it one product), converted to monomials, and the lowest degree in :data:`FIT_DEGREES`
    whose error at 33 points per span (ends included), relative to ``max(1, |values|)``, is
    at most :data:`FIT_TOL` is kept (else the most accurate); ``err`` is that verified
    error."""
    nodes = np.concatenate([_FIT_NODES, _FIT_CHECK])
    mids, halves, values = [], [], []
    for joint, P in zip(joints, placements):
        a = joint._starts
        h = 0.5 * (np.append(a[1:], joint._hi) - a)
        Y = cubic_span_values(joint, h[:, None] * (nodes + 1.0))
        Y[..., :16] = (P @ Y[..., :16].reshape(-1, 4, 4)).reshape(Y.shape[:2] + (16,))
        mids.append(a + h)
        halves.append(h)
        values.append(Y)
    Y = np.concatenate(values)                                 # (S, nodes, 28)
    nfit = _FIT_NODES.size
    half = np.concatenate(halves)
    scale = np.maximum(1.0, np.abs(Y[:, nfit:]).max(axis=(1, 2)))
    best = None
    for deg in FIT_DEGREES:
        # least squares at the Chebyshev nodes by their discrete orthogonality
        c = chebyshev.chebvander(_FIT_NODES, deg).T @ \
            Y[:, :nfit].transpose(1, 0, 2).reshape(nfit, -1) * (2.0 / nfit)
        c[0] *= 0.5
        coef = (_cheb_to_monomial(deg) @ c).reshape(deg + 1, len(half), 28).transpose(1, 0, 2)
        coef /= half[:, None, None] ** np.arange(deg + 1)[:, None]   # spans are non-empty
        pw = np.ones((len(half), _FIT_CHECK.size, deg + 1))      # powers as calc() forms
        pw[..., 1:] = (half[:, None] * _FIT_CHECK)[:, :, None]   # them: running products
        np.multiply.accumulate(pw[..., 1:], axis=2, out=pw[..., 1:])
        err = float((np.abs(pw @ coef - Y[:, nfit:]).max(axis=(1, 2)) / scale).max())
        if best is None or err < best[2]:
            best = (deg, coef, err)
        if err <= FIT_TOL:
            break
    deg, coef, err = best
    rows = np.concatenate([np.concatenate(mids)[:, None], coef.reshape(len(half), -1)],
                          axis=1)
    return np.ascontiguousarray(rows), deg, err


class _SpanWork:
    """Per-Data buffers of a :class:`CubicSplineFamily`: the rows of the current knot spans
    ``rows (n, 1 + 28 (deg + 1))`` (midpoint ``mid (n,)``, coefficients ``coef (n, deg + 1,
    28)``), the powers ``pow (deg + 1, n)`` of ``q - mid``, the product's output ``out (n, 1,
    28)`` (a view of ``data.LSH`` when the bodies are a range), the bounds ``[lo, hi)`` of the
    gathered spans (NaN: look the span up again) and the joints outside their knot range."""

    def __init__(self, family, data):
        n = len(family.joints)
        n1 = family.degree + 1
        self.rows = np.zeros((n, 1 + 28 * n1))
        self.mid = self.rows[:, 0]
        self.coef = self.rows[:, 1:].reshape(n, n1, 28)
        self.pow = np.ones((n1, n))
        self.pow_T = self.pow.T[:, None, :]
        self.pow_tail = self.pow[1:]
        sel = family.body_sel
        self.scatter = not isinstance(sel, slice)
        self.out = (np.zeros((n, 28)) if self.scatter else data.LSH[sel])[:, None, :]
        self.whole_q = covers(family.dof_sel, data.nv)
        self.span_lo = [math.nan] * n
        self.span_hi = [math.nan] * n
        self.fallback = []
        #: one joint: 1-D views for a vector-matrix product (cheaper than a batch of one)
        self.single = n == 1 and not self.scatter
        if self.single:
            self.pow1, self.coef1, self.out1 = self.pow[:, 0], self.coef[0], self.out[0, 0]


class CubicSplineFamily(JointFamily):
    """The cubic :class:`SplineCurveJoint` s of a model, all at once.

    On each knot span ``P G(q)``, ``S`` and ``dS/dq`` are entire functions of q, tabulated
    at model compile as polynomials in ``q - midpoint`` fitted to the joint's exact recursion
    (:func:`_fit_spans`). :meth:`calc` takes the powers of ``q - midpoint`` and one product
    with the rows of the current spans, three array operations whatever the number of
    joints; the rows stay gathered until a coordinate leaves its span. Joints outside their
    knot range are evaluated by their own :meth:`SplineCurveJoint.evaluate` (extrapolation).
    The price: the fit at model compile (a few ms per joint) and ``28 (degree + 1)`` floats
    per knot span; the tables equal the recursion to a few ulps of its values rather than
    bit for bit.

    Attributes (besides :class:`~core.joints.family.JointFamily`'s): ``rows`` (all spans'
    tables), ``degree`` (their polynomial degree), ``fit_error`` (their verified error
    relative to ``max(1, |values|)``, at most :data:`FIT_TOL` on every model tested).
    """

    @classmethod
    def accepts(cls, joint):
        return joint._cubic is not None

    def __init__(self, bodies, joints, placements, q_start):
        super().__init__(bodies, joints, placements, q_start)
        self.rows, self.degree, self.fit_error = _fit_spans(self.joints, self.placements)
        #: first row of each joint in ``rows``; the joints' span starts and ranges
        self.first = np.cumsum([0] + [len(j._starts) for j in self.joints])[:-1].tolist()
        self.starts = [j._starts_list for j in self.joints]
        self.ranges = [(j._lo, j._hi) for j in self.joints]
        self.dof_sel = dof_selector(np.asarray(q_start, dtype=int))
        self.body_sel = dof_selector(self.bodies)

    #: the kernel reads ``[lo, hi, span starts, (P G, S) at lo and at hi (2 x 18), the
    #: joint's rows]`` and ``(span count, degree)``; beyond the knots it extrapolates as
    #: :meth:`SplineCurveJoint.evaluate` does (constant twist)
    kernel_kind = KIND_SPLINE

    def kernel_params(self, k):
        j, P = self.joints[k], self.placements[k]
        ns = len(self.starts[k])
        ends = [np.concatenate([(P @ j._end_G[e])[:3].ravel(), j._end_S[e]]) for e in (0, 1)]
        rows = self.rows[self.first[k]:self.first[k] + ns]
        return (np.concatenate([[j._lo, j._hi], j._starts, ends[0], ends[1], rows.ravel()]),
                (ns, self.degree))

    def create_work(self, data):
        return _SpanWork(self, data)

    def _gather(self, xl, work):
        """Look up the knot span of every joint at the coordinates ``xl`` (floats) as
        :meth:`SplineCurveJoint.evaluate` does (``bisect_right`` on the span starts), gather
        their rows and record the span bounds."""
        rows, lo_b, hi_b, fallback = [], [], [], []
        for k, (x, starts, (lo, hi), first) in enumerate(zip(
                xl, self.starts, self.ranges, self.first)):
            if lo <= x <= hi:
                s = bisect.bisect_right(starts, x) - 1
                lo_b.append(starts[s])
                hi_b.append(starts[s + 1] if s + 1 < len(starts)
                            else math.nextafter(hi, math.inf))
            else:               # beyond the knots (or NaN): evaluate() extrapolates (or raises)
                s = len(starts) - 1 if x > hi else 0
                lo_b.append(math.nan)
                hi_b.append(math.nan)
                fallback.append(k)
            rows.append(first + s)
        np.take(self.rows, rows, axis=0, out=work.rows)
        work.span_lo, work.span_hi, work.fallback = lo_b, hi_b, fallback

    def calc(self, q, data, work):
        self._calc(q if work.whole_q else q[self.dof_sel], data, work)

    def _calc(self, x, data, work):
        """:meth:`calc` at the family's coordinates ``x: (n,)``."""
        xl = x.tolist()
        if work.single and not work.fallback and work.span_lo[0] <= xl[0] < work.span_hi[0]:
            pw = work.pow1
            pw[1:] = xl[0] - work.mid[0]
            np.multiply.accumulate(pw[1:], out=pw[1:])
            np.matmul(pw, work.coef1, out=work.out1)
            return
        for a, lo, hi in zip(xl, work.span_lo, work.span_hi):
            if not lo <= a < hi:
                self._gather(xl, work)
                break
        pw = work.pow_tail
        np.subtract(x, work.mid, out=pw)                        # broadcast to every row
        np.multiply.accumulate(pw, axis=0, out=pw)
        np.matmul(work.pow_T, work.coef, out=work.out)
        out = work.out[:, 0]
        for k in work.fallback:
            G, S, H = self.joints[k].evaluate(x[k:k + 1])
            out[k, :16] = (self.placements[k] @ G).ravel()
            out[k, 16:22] = S[:, 0]
            out[k, 22:] = H[0, :, 0]
        if work.scatter:
            data.LSH[self.bodies] = out


SplineCurveJoint.family = CubicSplineFamily


# -- closed curves ----------------------------------------------------------------------------

class ClosedSplineCurveJoint(SplineCurveJoint):
    """1-DOF joint along a closed cumulative B-spline on SE(3) (seed 000 eqs. 21-24).

    control_frames: ``(n, 4, 4)``, one period, not repeated (n >= order); order: k >= 2;
    spacing: the knot spacing h > 0 (default 1).
    The control twists are taken round the loop, ``z_j = log(G_{j-1}^-1 G_{j mod n})`` for
    j = 1..n, and repeated periodically (the frames wrap as ``G_0 .. G_{n-1}, G_0 .. G_{k-2}``)
    with uniform knots ``h`` apart, so the coordinate has period ``n h``, range ``[0, n h]``,
    and the curve is ``C^{k-2}`` (C2 for the cubic) across the seam as everywhere else (a
    wire of length L fitted with ``h = L / n`` has its coordinate in metres, :mod:`core.wire`).
    q outside the range is moved by whole periods (so ``evaluate``/``transforms`` are periodic
    for every finite q) and :meth:`normalize` wraps q into ``[0, n h)``.

    Attributes (besides those of :class:`SplineCurveJoint`, which describe the wrapped open
    spline): ``period`` (float, = n h), ``spacing`` (h) and ``loop_twists`` (n, 6), the twists
    of one period.
    """

    def __init__(self, control_frames, order=4, *, spacing=1.0):
        k = _check_spline_order(order)
        F = _check_frames(control_frames, k)
        z = se3.log(np.matmul(se3.inv(F), np.roll(F, -1, axis=0)))
        self._setup_closed(F[0], z, k, spacing)

    @classmethod
    def from_twists(cls, first_frame, control_twists, *, order=4, spacing=1.0):
        """Build from ``G_0: (4, 4)`` and the n twists of one loop ``z: (n, 6)`` (any rotation
        angle), ``G_j = G_{j-1} exp(z_j)``; the loop must close: ``G_0 exp(z_1)..exp(z_n) = G_0``.
        """
        k = _check_spline_order(order)
        G0 = se3.check_transform(first_frame, "first_frame")
        if G0.shape != (4, 4):
            raise InvalidInputError(f"first_frame must be one 4x4 transform; got {G0.shape}.")
        z = se3.check_twist(control_twists, "control_twists")
        if z.ndim != 2 or z.shape[0] < k:
            raise InvalidInputError(
                f"a closed curve of order {k} needs control_twists of shape (n, 6) with n >= {k} "
                f"(one per control frame of the loop); got {z.shape}.")
        loop = np.eye(4)
        for E in se3.exp(z):
            loop = loop @ E
        err = np.abs(loop - np.eye(4)).max() / max(1.0, float(np.abs(z[:, 3:]).sum()))
        if not err <= 1e-9:
            raise InvalidInputError(
                f"control_twists do not close the loop (exp(z_1)..exp(z_n) differs from the "
                f"identity by {err:.3g}); pass the twists between consecutive frames of one full "
                "period, including the one from the last frame back to the first.")
        self = cls.__new__(cls)
        self._setup_closed(G0, z, k, spacing)
        return self

    def _setup_closed(self, G0, z, k, spacing):
        n = z.shape[0]
        if isinstance(spacing, (bool, np.bool_)) or not np.isscalar(spacing) \
                or not (np.isfinite(spacing) and spacing > 0):
            raise InvalidInputError(
                f"spacing must be a finite number > 0 (the coordinate per control frame); got "
                f"{spacing!r}.")
        h = float(spacing)
        self._setup(G0, z[np.arange(n + k - 2) % n], bspline.uniform_knots(n + k - 1, k,
                                                                          spacing=h), k)
        self.spacing = h
        self.period = n * h
        self.loop_twists = self.control_twists[:n]

    def _wrap(self, x):
        """``x`` (float or array) moved by whole periods into ``[lower, lower + period)``."""
        r = np.mod(x - self._lo, self.period)
        # mod of a tiny negative number rounds up to the period itself
        return self._lo + np.where(r >= self.period, 0.0, r)

    def evaluate(self, q):
        """``(G (4, 4), S (6, 1), H (1, 6, 1))`` at ``q: (1,)`` or a float, periodic in q."""
        x = self._scalar(q)
        if not self._lo <= x < self._hi:
            x = float(self._wrap(x))
        return self._inside(x)

    def transforms(self, qs):
        """Batched periodic ``G``: ``qs: (N,)`` or ``(N, 1)`` -> ``(N, 4, 4)``."""
        x = self.check_qs(qs)[:, 0]
        if x.size and not np.abs(x).max() <= Q_MAX:
            raise coordinate_error(float(x[np.argmax(np.abs(x))]), self._lo, self._hi)
        return super().transforms(self._wrap(x))

    def normalize(self, q, v):
        """Wrap ``q: (1,)`` into ``[lower, lower + period)``; ``v`` unchanged."""
        return np.array([float(self._wrap(self._scalar(q)))]), v

    def to_dict(self):
        """Plain data: type ``"ClosedSplineCurveJoint"``, order, spacing, the n control frames
        and the n loop twists of one period (lists); :meth:`from_dict` rebuilds the same joint
        (a description without ``spacing`` has unit spacing)."""
        n = len(self.loop_twists)
        return {
            "type": "ClosedSplineCurveJoint",
            "order": self.order,
            "spacing": self.spacing,
            "control_frames": self.control_frames[:n].tolist(),
            "control_twists": self.loop_twists.tolist(),
        }

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`: from ``control_frames[0]`` and the loop twists when given
        (turns beyond pi survive; the frames must agree with them), else from the frames."""
        frames, order = _read_description(data, "ClosedSplineCurveJoint")
        spacing = data.get("spacing", 1.0)
        if "control_twists" not in data:
            return cls(frames, order, spacing=spacing)
        joint = cls.from_twists(frames[0], data["control_twists"], order=order, spacing=spacing)
        _check_frames_agree(frames, joint.control_frames[:len(joint.loop_twists)])
        return joint

    def __repr__(self):
        return (f"ClosedSplineCurveJoint(order={self.order}, "
                f"control_frames={len(self.loop_twists)}, period={self.period:g})")


class ClosedCubicSplineFamily(CubicSplineFamily):
    """The cubic :class:`ClosedSplineCurveJoint` s of a model: a :class:`CubicSplineFamily`
    whose coordinates are first wrapped into one period, as
    :meth:`ClosedSplineCurveJoint.evaluate` does (the compiled kernel wraps them alike)."""

    def __init__(self, bodies, joints, placements, q_start):
        super().__init__(bodies, joints, placements, q_start)
        #: ``(n,)`` each joint's lower end and period
        self.lower = np.array([j._lo for j in self.joints])
        self.upper = np.array([j._hi for j in self.joints])
        self.period = np.array([j.period for j in self.joints])

    #: the kernel reads ``[period, the cubic family's parameters]``
    kernel_kind = KIND_CLOSED_SPLINE

    def kernel_params(self, k):
        params, shape = super().kernel_params(k)
        return np.concatenate([[self.period[k]], params]), shape

    def calc(self, q, data, work):
        x = q[self.dof_sel]
        out = ~((self.lower <= x) & (x < self.upper))
        if out.any():
            r = np.mod(x - self.lower, self.period)
            # mod of a tiny negative number rounds up to the period itself
            x = np.where(out, self.lower + np.where(r >= self.period, 0.0, r), x)
        self._calc(x, data, work)


ClosedSplineCurveJoint.family = ClosedCubicSplineFamily
