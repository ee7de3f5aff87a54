"""Wires: spline curve joints along Blender's curves (Bezier, NURBS, poly; open or cyclic).

A curve is read into a :class:`CurveData` (numbers only, in the curve object's local frame;
``addon/curves.py`` reads it from a Blender curve) and evaluated exactly as Blender defines it:

- Bezier: segment i runs from point i to point i + 1 (the last back to the first when cyclic)
  as the cubic Bezier ``co_i, handle_right_i, handle_left_{i+1}, co_{i+1}``, parameter
  ``t in [0, 1]``. Tilt is interpolated in t by the spline's ``tilt_interpolation`` from the
  points i - 1 .. i + 2 (Blender's ``alfa_bezpart`` with ``key_curve_position_weights``:
  LINEAR, CARDINAL, BSPLINE; EASE blends points i and i + 1 by ``3t^2 - 2t^3``). One
  difference: Blender gives the last evaluated point of an open BSPLINE-tilted curve its
  point's own tilt, where the wire keeps the segment's blend (continuous).
- NURBS: a rational B-spline of ``order`` (degree order - 1) with Blender's knots
  (``calcknots``: uniform unit knots, clamped ends with ``use_endpoint``, inner knots repeated
  order - 1 times with ``use_bezier``); a cyclic spline wraps its first order - 1 points to
  the end and gets ``2 order - 1`` tail knots repeating the head's spacing. The parameter runs
  over ``[t_{k-1}, t_{n_c}]`` (``n_c`` control points after wrapping), split at the distinct
  knots. Tilt is the rational basis' blend of the point tilts.
- Poly: straight segments between the points (and from the last to the first when cyclic),
  tilt linear along each segment.

Arc length. The wire's coordinate is ``q`` = distance along the curve in metres from the
first point, ``q in [0, L]``; a cyclic curve is periodic with period L. The segments' lengths
are Gauss-Legendre quadratures of the speed ``|dp/dt|``; ``t(q)`` is found by Newton's method.

Frames. At q the frame has x = the unit tangent ``dp/dq``, z = a rotation-minimizing normal
rotated by the tilt about x (right-handed) and y = z cross x. The rotation-minimizing normal
starts at q = 0 as the curve-local +Z axis made perpendicular to the tangent (+Y if the
tangent is within 1e-3 rad of Z), and is carried along by the double-reflection method (Wang,
Juettler, Zheng and Liu, "Computation of rotation minimizing frames", ACM TOG 2008; fourth
order in the step) on a grid at most ``L / 4096`` apart. On a cyclic curve the transported
normal comes back at q = L turned by an angle ``phi`` (the holonomy, in (-pi, pi]) about the
tangent; the normal at q is turned back by ``-phi q / L`` so that the frame closes. A planar
curve in the local XY plane (Blender's default drawing plane) thus has z = +Z everywhere
before tilt, as the rose wires of :mod:`core.mechanisms.beads` have z normal to their plane.

Fitting (:func:`wire_joint`). The exact frames at q are fitted by a cubic spline curve joint
(seed 000 eqs. 21-24, sections 6.1-6.2) with uniform knots in metres: an open curve gets a
:class:`~core.joints.spline_curve.SplineCurveJoint` whose range is exactly ``[0, L]``
(:func:`core.fitting.curve.fit_spline_curve`), a cyclic one a
:class:`~core.joints.spline_curve.ClosedSplineCurveJoint` with ``spacing = L / n`` and period
L (:func:`core.fitting.curve.fit_closed_spline_curve`), so in both the joint coordinate is
metres along the wire. The fit is checked against the exact curve at dense points; where the
curve has corners (poly curves, vector handles) the C2 joint rounds them and the error says
by how much.
"""

from dataclasses import dataclass

import numpy as np
from scipy.interpolate import BSpline

from .checks import real_number, whole_number
from .errors import InvalidInputError
from .fitting.curve import fit_closed_spline_curve, fit_spline_curve
from .fitting.samples import JointSamples
from .lie import so3

__all__ = ["CurveData", "bezier_curve", "nurbs_curve", "poly_curve", "WirePath", "WireFit",
           "wire_joint", "blender_nurbs_knots", "TILT_INTERPOLATIONS", "MAX_FRAMES"]

#: Blender's spline ``tilt_interpolation`` values
TILT_INTERPOLATIONS = ("LINEAR", "CARDINAL", "BSPLINE", "EASE")
#: cap on the control frames :func:`wire_joint` tries when it picks their number itself
MAX_FRAMES = 512
#: Gauss-Legendre nodes per sub-interval and sub-intervals per segment for the arc length: the
#: speed is analytic on a segment, so the quadrature reaches round-off
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(10)
_SUBINTERVALS = 16
#: the rotation-minimizing frame's grid has at least this many steps
_RMF_STEPS = 4096
#: a segment end whose speed is below this fraction of the segment's mean speed is a
#: zero tangent (a handle on its point)
_ZERO_SPEED = 1e-6
#: tangents turning by more than pi - this (rad) at a point are a cusp
_CUSP = 1e-3
#: samples per knot span for the fit, and check points per knot span for its errors
_FIT_PER_SPAN = 6
_CHECK_PER_SPAN = 16


@dataclass(frozen=True)
class CurveData:
    """One spline of a Blender curve, in the curve object's local frame (metres, radians).

    kind: "BEZIER", "NURBS" or "POLY"; points: (n, 3); tilt: (n,); cyclic: bool;
    handle_left, handle_right: (n, 3) for Bezier (else None); weights: (n,) for NURBS (else
    None); order, use_endpoint, use_bezier: NURBS settings; tilt_interpolation: one of
    :data:`TILT_INTERPOLATIONS` (Bezier). Build it with :func:`bezier_curve`,
    :func:`nurbs_curve` or :func:`poly_curve`, which check it.
    """

    kind: str
    points: np.ndarray
    tilt: np.ndarray
    cyclic: bool
    handle_left: np.ndarray = None
    handle_right: np.ndarray = None
    weights: np.ndarray = None
    order: int = 4
    use_endpoint: bool = False
    use_bezier: bool = False
    tilt_interpolation: str = "LINEAR"


def _array(values, name, shape):
    """``values`` as a finite read-only float array of ``shape`` (-1: any length)."""
    try:
        a = np.array(values, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInputError(f"curve {name} must be numbers") from None
    if a.ndim != len(shape) or any(s != -1 and s != d for s, d in zip(shape, a.shape)):
        want = "(" + ", ".join("n" if s == -1 else str(s) for s in shape) + ")"
        raise InvalidInputError(f"curve {name} must have shape {want}, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise InvalidInputError(f"curve {name} contains NaN or inf; give finite coordinates")
    a.flags.writeable = False
    return a


def _points(points, tilt, minimum):
    p = _array(points, "points", (-1, 3))
    if p.shape[0] < minimum:
        raise InvalidInputError(f"a wire needs a curve with at least {minimum} points, got "
                                f"{p.shape[0]}; add points to the spline")
    t = _array(np.zeros(len(p)) if tilt is None else tilt, "tilt", (len(p),))
    return p, t


def bezier_curve(points, handle_left, handle_right, tilt=None, *, cyclic=False,
                 tilt_interpolation="LINEAR"):
    """A Bezier spline: points, handle_left, handle_right (n, 3), n >= 2; tilt (n,) radians
    (default 0)."""
    p, t = _points(points, tilt, 2)
    if tilt_interpolation not in TILT_INTERPOLATIONS:
        raise InvalidInputError(f"tilt_interpolation must be one of {TILT_INTERPOLATIONS}, "
                                f"got {tilt_interpolation!r}")
    return CurveData("BEZIER", p, t, bool(cyclic),
                     handle_left=_array(handle_left, "handle_left", (len(p), 3)),
                     handle_right=_array(handle_right, "handle_right", (len(p), 3)),
                     tilt_interpolation=tilt_interpolation)


def poly_curve(points, tilt=None, *, cyclic=False):
    """A poly spline: points (n, 3), n >= 2; tilt (n,) radians (default 0)."""
    p, t = _points(points, tilt, 2)
    return CurveData("POLY", p, t, bool(cyclic))


def nurbs_curve(points, weights=None, *, order=4, tilt=None, cyclic=False,
                use_endpoint=False, use_bezier=False):
    """A NURBS spline: points (n, 3); weights (n,) > 0 (default 1); order 2..n (Blender
    allows up to 6); tilt (n,) radians (default 0); Blender's knot flags."""
    k = whole_number(order, "order", 2, "order 2 is a polyline, 4 is cubic")
    p, t = _points(points, tilt, 2)
    if k > len(p):
        raise InvalidInputError(f"a NURBS spline of order {k} needs at least {k} points, got "
                                f"{len(p)}; lower the order or add points")
    w = _array(np.ones(len(p)) if weights is None else weights, "weights", (len(p),))
    if not np.all(w > 0):
        raise InvalidInputError("NURBS weights must be > 0")
    if use_bezier and (len(p) % (k - 1) != 0 if cyclic else len(p) <= k and not use_endpoint):
        need = "a multiple of order - 1" if cyclic else "more than order"
        raise InvalidInputError(
            f"a NURBS spline with Bezier knots needs {need} points (order {k}, {len(p)} "
            "points), as Blender evaluates it; change the points or the knot setting")
    return CurveData("NURBS", p, t, bool(cyclic), weights=w, order=k,
                     use_endpoint=bool(use_endpoint), use_bezier=bool(use_bezier))


def blender_nurbs_knots(n_points, order, cyclic, use_endpoint, use_bezier):
    """Blender's knot vector (``calcknots``): ``(n_points + order (+ order - 1 if cyclic),)``."""
    k = order
    count = n_points + k + (k - 1 if cyclic else 0)
    repeat_inner = k - 1 if use_bezier else 1
    head = (k - (1 if cyclic else 0)) if use_endpoint else (min(2, repeat_inner) if use_bezier
                                                            else 1)
    tail = 2 * k - 1 if cyclic else (k if use_endpoint else 0)
    knots = np.zeros(count)
    current, r = 0.0, head
    offset = 1 if use_endpoint and cyclic else 0
    if offset:
        current = 1.0
    for i in range(offset, count - tail):
        knots[i] = current
        r -= 1
        if r == 0:
            current += 1.0
            r = repeat_inner
    for i in range(tail):                # in order: a long tail reads knots it has written
        knots[count - tail + i] = current + (knots[i] - knots[0])
    return knots


# -- exact evaluation in the curve's own parameter ---------------------------------------

def _key_weights(t, kind):
    """Blender's ``key_curve_position_weights``: (N, 4) weights of points i-1, i, i+1, i+2."""
    t2, t3 = t * t, t * t * t
    if kind == "LINEAR":
        return np.stack([0 * t, 1 - t, t, 0 * t], axis=1)
    if kind == "CARDINAL":
        fc = 0.71
        return np.stack([-fc * t3 + 2 * fc * t2 - fc * t, (2 - fc) * t3 + (fc - 3) * t2 + 1,
                         (fc - 2) * t3 + (3 - 2 * fc) * t2 + fc * t, fc * t3 - fc * t2], axis=1)
    if kind == "BSPLINE":
        return np.stack([-t3 / 6 + t2 / 2 - t / 2 + 1 / 6, t3 / 2 - t2 + 2 / 3,
                         -t3 / 2 + t2 / 2 + t / 2 + 1 / 6, t3 / 6], axis=1)
    e = 3 * t2 - 2 * t3                                 # EASE
    return np.stack([0 * t, 1 - e, e, 0 * t], axis=1)


class _Segments:
    """The curve as ``count`` segments, each on ``t in [0, 1]``: :meth:`evaluate` gives
    ``p, dp/dt, d2p/dt2`` (N, 3) and the tilt (N,) at segment indices ``seg`` (N,) and ``t``
    (N,); ``ends[i]`` names the curve point where segment i ends (for messages)."""

    def __init__(self, c):
        n = len(c.points)
        self.kind = c.kind
        self.count = n if c.cyclic else n - 1
        i = np.arange(self.count)
        self.starts, self.ends = i, (i + 1) % n
        if c.kind == "NURBS":
            self._setup_nurbs(c)
            return
        if c.cyclic:
            near = (np.arange(-1, self.count + 2)) % n
        else:
            near = np.clip(np.arange(-1, self.count + 2), 0, n - 1)
        self.tilt_near = c.tilt[np.stack([near[:-3], near[1:-2], near[2:-1], near[3:]], 1)]
        self.tilt_kind = c.tilt_interpolation if c.kind == "BEZIER" else "LINEAR"
        a, b = c.points[self.starts], c.points[self.ends]
        if c.kind == "BEZIER":
            self.ctrl = np.stack([a, c.handle_right[self.starts], c.handle_left[self.ends], b], 1)
        else:
            self.ctrl = np.stack([a, b], 1)

    def _setup_nurbs(self, c):
        k, n = c.order, len(c.points)
        wrap = np.arange(n + (k - 1 if c.cyclic else 0)) % n
        knots = blender_nurbs_knots(n, k, c.cyclic, c.use_endpoint, c.use_bezier)
        w = c.weights[wrap]
        coef = np.column_stack([c.points[wrap] * w[:, None], w, c.tilt[wrap] * w])
        self.spline = BSpline(knots, coef, k - 1, extrapolate=False)
        lo, hi = knots[k - 1], knots[len(wrap)]
        breaks = np.unique(knots[(knots >= lo) & (knots <= hi)])
        self.spans = np.stack([breaks[:-1], breaks[1:]], 1)
        self.count = len(self.spans)
        self.starts = np.searchsorted(knots, self.spans[:, 0], side="right") - k
        self.ends = (self.starts + k - 1) % n

    def velocity(self, seg, t):
        """``dp/dt`` (N, 3) alone (the arc length's integrand)."""
        if self.kind == "NURBS":
            return self.evaluate(seg, t)[1]
        P = self.ctrl[seg]
        if self.kind == "POLY":
            return P[:, 1] - P[:, 0]
        tt = t[:, None]
        s = 1 - tt
        return 3 * (s * s * (P[:, 1] - P[:, 0]) + 2 * s * tt * (P[:, 2] - P[:, 1])
                    + tt * tt * (P[:, 3] - P[:, 2]))

    def evaluate(self, seg, t):
        if self.kind == "NURBS":
            a, b = self.spans[seg, 0], self.spans[seg, 1]
            # the span's own polynomial at its end (1 ulp inside: BSpline picks the span by u)
            u = np.clip(a + t * (b - a), a, np.nextafter(b, a))
            h = (b - a)[:, None]
            A, A1 = self.spline(u), self.spline(u, nu=1) * h
            A2 = self.spline(u, nu=2) * h * h if self.spline.k >= 2 else np.zeros_like(A)
            w, w1, w2 = A[:, 3:4], A1[:, 3:4], A2[:, 3:4]
            p = A[:, :3] / w
            dp = (A1[:, :3] - w1 * p) / w
            ddp = (A2[:, :3] - 2 * w1 * dp - w2 * p) / w
            return p, dp, ddp, A[:, 4] / w[:, 0]
        P = self.ctrl[seg]
        tt = t[:, None]
        if self.kind == "BEZIER":
            s = 1 - tt
            p = s ** 3 * P[:, 0] + 3 * s * s * tt * P[:, 1] + 3 * s * tt * tt * P[:, 2] \
                + tt ** 3 * P[:, 3]
            d = np.diff(P, axis=1)
            dp = 3 * (s * s * d[:, 0] + 2 * s * tt * d[:, 1] + tt * tt * d[:, 2])
            dd = np.diff(d, axis=1)
            ddp = 6 * (s * dd[:, 0] + tt * dd[:, 1])
        else:
            p = P[:, 0] + tt * (P[:, 1] - P[:, 0])
            dp = np.broadcast_to(P[:, 1] - P[:, 0], p.shape)
            ddp = np.zeros_like(p)
        tilt = np.einsum("ij,ij->i", _key_weights(t, self.tilt_kind), self.tilt_near[seg])
        return p, dp, ddp, tilt


# -- the exact wire: arc length and frames ------------------------------------------------

def _reflections(v):
    """Householder reflections ``I - 2 v v^T / |v|^2`` (N, 3, 3); the identity where v = 0."""
    c = np.einsum("ij,ij->i", v, v)
    ok = c > 0
    out = np.broadcast_to(np.eye(3), (len(v), 3, 3)).copy()
    out[ok] -= 2.0 * v[ok, :, None] * v[ok, None, :] / c[ok, None, None]
    return out


def _prefix_products(M):
    """``P_i = M_i M_{i-1} .. M_0`` for ``M: (N, 3, 3)`` by a doubling scan (log2 N batched
    products)."""
    P = M.copy()
    d = 1
    while d < len(P):
        P[d:] = P[d:] @ P[:-d]
        d *= 2
    return P


class WirePath:
    """The exact wire of a :class:`CurveData`: its length and its points and frames at the
    arc-length coordinate q (metres; module docstring for the conventions).

    Attributes: ``curve``, ``closed`` (the curve is cyclic), ``length`` (L, m), ``breaks``
    (the arc lengths of the points where segments meet, (count + 1,)).

    Raises InvalidInputError for a curve of zero length, two consecutive points that
    coincide, a tangent that vanishes (a Bezier handle on its point) or a cusp (the curve
    turning back on itself at a point).
    """

    def __init__(self, curve):
        if not isinstance(curve, CurveData):
            raise InvalidInputError("WirePath needs a CurveData (bezier_curve, nurbs_curve or "
                                    f"poly_curve), got {type(curve).__name__}")
        self.curve, self.closed = curve, curve.cyclic
        seg = self._seg = _Segments(curve)
        S, m = seg.count, _SUBINTERVALS
        half = 0.5 / m
        nodes = (np.arange(m)[:, None] + 0.5) / m + half * _GL_NODES[None, :]   # (m, 10)
        speed = self._speed(np.repeat(np.arange(S), nodes.size), np.tile(nodes.ravel(), S))
        sub = (speed.reshape(S, m, -1) * _GL_WEIGHTS).sum(axis=2) * half        # (S, m)
        self._cum = np.concatenate([[0.0], np.cumsum(sub.ravel())])
        self.length = float(self._cum[-1])
        self.breaks = self._cum[::m].copy()
        self._check(speed.reshape(S, -1), sub.sum(axis=1))
        L = self.length
        self._grid = np.linspace(0.0, L, max(_RMF_STEPS, 8 * S) + 1)
        x0 = self._tangent_at(np.zeros(1))[0]
        ref = np.array([0.0, 0.0, 1.0])
        if np.linalg.norm(np.cross(x0, ref)) < np.sin(1e-3):
            ref = np.array([0.0, 1.0, 0.0])
        z0 = ref - (ref @ x0) * x0
        self._z0 = z0 / np.linalg.norm(z0)

    def _speed(self, seg, t):
        return np.linalg.norm(self._seg.velocity(seg, t), axis=1)

    def _check(self, speed, seg_length):
        seg = self._seg
        extent = float(np.ptp(self.curve.points, axis=0).max())
        if not self.length > 1e-12 * max(extent, 1e-300) or not np.isfinite(self.length):
            raise InvalidInputError("the curve has zero length (all its points coincide); a "
                                    "wire needs a curve that goes somewhere")
        S = seg.count
        i = np.arange(S)
        ends = [seg.evaluate(i, np.full(S, t))[1] for t in (0.0, 1.0)]
        for j in range(S):
            a, b = int(seg.starts[j]), int(seg.ends[j])
            if not seg_length[j] > 1e-12 * self.length:
                raise InvalidInputError(f"curve points {a} and {b} coincide (a segment of zero "
                                        "length); delete one of them")
            for where, d, p in (("start", ends[0][j], a), ("end", ends[1][j], b)):
                if not np.linalg.norm(d) > _ZERO_SPEED * seg_length[j]:
                    raise InvalidInputError(
                        f"the curve's tangent vanishes at point {p} (a handle lies on its "
                        "point, or NURBS points repeat); move the handle or point so the "
                        "curve has a direction there")
            if not speed[j].min() > _ZERO_SPEED * seg_length[j]:
                raise InvalidInputError(f"the curve stops (zero tangent) between points {a} and "
                                        f"{b}; reshape that segment")
        joints = range(S) if self.closed else range(S - 1)
        for j in joints:
            a, b = ends[1][j], ends[0][(j + 1) % S]
            if a @ b < -np.cos(_CUSP) * np.linalg.norm(a) * np.linalg.norm(b):
                raise InvalidInputError(
                    f"the curve turns back on itself at point {int(seg.ends[j])} (a cusp): a "
                    "bead cannot follow it; smooth the curve there")

    def _locate(self, q):
        """Segment indices and parameters ``(seg (N,), t (N,))`` at arc lengths ``q (N,)``
        (wrapped into [0, L) on a closed wire, clipped to [0, L] on an open one)."""
        L, m, cum = self.length, _SUBINTERVALS, self._cum
        q = np.mod(q, L) if self.closed else np.clip(q, 0.0, L)
        j = np.clip(np.searchsorted(cum, q, side="right") - 1, 0, len(cum) - 2)
        seg, t0 = j // m, (j % m) / m
        width = 1.0 / m
        t = t0 + width * (q - cum[j]) / (cum[j + 1] - cum[j])
        todo = np.arange(len(q))
        for _ in range(12):            # Newton on s(t) = q; quadratic from the linear guess
            sg, a, tt = seg[todo], t0[todo], t[todo]
            half = 0.5 * (tt - a)
            nodes = a[:, None] + half[:, None] * (1.0 + _GL_NODES[None, :])
            sp = self._speed(np.repeat(sg, _GL_NODES.size), nodes.ravel()).reshape(nodes.shape)
            r = cum[j[todo]] + half * (sp @ _GL_WEIGHTS) - q[todo]
            t[todo] = np.clip(tt - r / self._speed(sg, tt), a, a + width)
            todo = todo[np.abs(r) > 2e-16 * L]
            if not todo.size:
                break
        return seg, t

    def _tangent_at(self, q):
        d = self._seg.evaluate(*self._locate(q))[1]
        return d / np.linalg.norm(d, axis=1)[:, None]

    def points(self, q):
        """Points ``(N, 3)`` at arc lengths ``q: (N,)``."""
        return self._seg.evaluate(*self._locate(np.asarray(q, dtype=float)))[0]

    def derivatives(self, q):
        """``dp/dq, d2p/dq2`` ``(N, 3)`` each: the unit tangent and the curvature vector."""
        _, d1, d2, _ = self._seg.evaluate(*self._locate(np.asarray(q, dtype=float)))
        v = np.linalg.norm(d1, axis=1)[:, None]
        x = d1 / v
        return x, (d2 - (d2 * x).sum(axis=1)[:, None] * x) / v ** 2

    def closest(self, points):
        """Nearest points of the wire to ``points: (N, 3)``: ``(q (N,), distance (N,))``.

        The nearest of the frame grid's points (at most L / 4096 apart), then Newton's method
        on ``(p(q) - x) . dp/dq = 0`` (a local minimum next to the nearest grid point)."""
        x = np.asarray(points, dtype=float).reshape(-1, 3)
        grid = self._grid
        gp = self.points(grid)
        q = np.empty(len(x))
        for a in range(0, len(x), 256):
            d2 = ((x[a:a + 256, None, :] - gp[None]) ** 2).sum(axis=2)
            q[a:a + 256] = grid[np.argmin(d2, axis=1)]
        for _ in range(8):
            t, k = self.derivatives(q)
            e = self.points(q) - x
            g, h = (e * t).sum(axis=1), 1.0 + (e * k).sum(axis=1)
            step = np.where(h > 0, g / np.where(h > 0, h, 1.0), 0.0)
            q = q - np.clip(step, -(grid[1] - grid[0]), grid[1] - grid[0])
            q = np.mod(q, self.length) if self.closed else np.clip(q, 0.0, self.length)
        return q, np.linalg.norm(self.points(q) - x, axis=1)

    def frames(self, q):
        """Frames ``(N, 4, 4)`` at arc lengths ``q: (N,)`` (wrapped into [0, L) on a closed
        wire, clipped to [0, L] on an open one, as :meth:`points`): origin on the curve, x
        the tangent, z the rotation-minimizing normal turned by the tilt, y = z x x."""
        q = np.asarray(q, dtype=float)
        L = self.length
        qs = np.mod(q, L) if self.closed else np.clip(q, 0.0, L)
        allq = np.unique(np.concatenate([self._grid, qs]))
        seg, t = self._locate(allq)
        if self.closed:          # the last point, q = L, is the seam's far side (= q = 0)
            seam = self._locate(np.zeros(1))
            seg[-1], t[-1] = seam[0][0], seam[1][0]
        p, d1, _, tilt = self._seg.evaluate(seg, t)
        x = d1 / np.linalg.norm(d1, axis=1)[:, None]
        H1 = _reflections(p[1:] - p[:-1])
        tL = np.einsum("nij,nj->ni", H1, x[:-1])
        M = _reflections(x[1:] - tL) @ H1
        z = np.empty_like(x)
        z[0] = self._z0
        z[1:] = _prefix_products(M) @ self._z0
        angle = tilt.copy()
        if self.closed:
            x0, zL = x[0], z[-1]
            phi = np.arctan2(np.cross(self._z0, zL) @ x0, self._z0 @ zL)
            angle -= phi * allq / L
        z -= (z * x).sum(axis=1)[:, None] * x
        z /= np.linalg.norm(z, axis=1)[:, None]
        z = np.cos(angle)[:, None] * z + np.sin(angle)[:, None] * np.cross(x, z)
        idx = np.searchsorted(allq, qs)
        out = np.zeros((len(q), 4, 4))
        out[:, :3, 0], out[:, :3, 2] = x[idx], z[idx]
        out[:, :3, 1] = np.cross(z[idx], x[idx])
        out[:, :3, 3] = p[idx]
        out[:, 3, 3] = 1.0
        return out


# -- the fitted wire ----------------------------------------------------------------------

@dataclass(frozen=True)
class WireFit:
    """A wire joint fitted to a curve.

    joint: SplineCurveJoint (open curve; range [0, L]) or ClosedSplineCurveJoint (cyclic;
    period L); in both q is metres along the curve from its first point. length: L (m).
    closed: bool. n_frames: control frames of the joint. max_position_error (m) and
    max_angle_error (rad): the joint against the exact curve (:class:`WirePath`) at 16
    evenly spaced points per knot span and at the curve's points. tolerance: the position error
    asked for; within_tolerance: ``max_position_error <= tolerance``. report: the fit's
    :class:`~core.fitting.report.FitReport` (errors at its samples).
    """

    joint: object
    length: float
    closed: bool
    n_frames: int
    max_position_error: float
    max_angle_error: float
    tolerance: float
    within_tolerance: bool
    report: object


def _fit(path, n, tolerance):
    """The cubic wire joint with ``n`` control frames fitted to the exact frames of ``path``
    at 6 evenly spaced samples per knot span, in the metric whose length scale is the knot
    spacing h (a rotation error of theta weighs as the h theta it moves a point over one
    span); errors measured at 16 points per span and at the curve's points."""
    L, k = path.length, 4
    spans = n if path.closed else n - k + 1
    h = L / spans
    if path.closed:
        q = np.arange(_FIT_PER_SPAN * n) * (L / (_FIT_PER_SPAN * n))
        res = fit_closed_spline_curve(JointSamples(path.frames(q), q[:, None]), L, n,
                                      length_scale=h)
    else:
        q = np.linspace(0.0, L, _FIT_PER_SPAN * spans + 1)
        res = fit_spline_curve(JointSamples(path.frames(q), q[:, None]), n_frames=n,
                               knots="uniform", length_scale=h)
    qc = np.unique(np.concatenate([np.linspace(0.0, L, _CHECK_PER_SPAN * spans + 1),
                                   path.breaks]))
    G, E = res.joint.transforms(qc), path.frames(qc)
    pos = float(np.linalg.norm(G[:, :3, 3] - E[:, :3, 3], axis=1).max())
    ang = float(np.linalg.norm(so3.log(np.swapaxes(G[:, :3, :3], 1, 2) @ E[:, :3, :3]),
                               axis=1).max())
    return WireFit(res.joint, L, path.closed, n, pos, ang, tolerance, pos <= tolerance,
                   res.report)


def wire_joint(curve, n_frames=None, tolerance=1e-4):
    """Fit a wire joint to a curve: ``curve`` (:class:`CurveData` or :class:`WirePath`) ->
    :class:`WireFit`.

    n_frames: control frames (>= 4), or None to choose: 8 or two per curve segment,
    whichever is more, doubled until the position error is at most ``tolerance`` (m), the
    last try with :data:`MAX_FRAMES` (then the most accurate fit is returned, with
    ``within_tolerance`` False: a curve with corners, which the C2 joint rounds).

    Convergence in the knot spacing h: the error falls as h^3 where the curvature is
    continuous (NURBS of order 4, a Bezier circle of equal arcs: their third derivatives jump
    at knots and points), as h^2 where the curvature jumps (at Bezier points in general:
    aligned handles make the tangent continuous, not the curvature), and as h at corners.
    """
    path = curve if isinstance(curve, WirePath) else WirePath(curve)
    tol = real_number(tolerance, "tolerance", 0.0, low_open=True,
                      advice="it is the largest position error (m) to accept, e.g. 1e-4")
    if n_frames is not None:
        return _fit(path, whole_number(n_frames, "n_frames", 4, "a cubic wire needs 4"), tol)
    n, best = min(max(8, 2 * path._seg.count), MAX_FRAMES), None
    while True:
        fit = _fit(path, n, tol)
        if best is None or fit.max_position_error < best.max_position_error:
            best = fit
        if fit.within_tolerance or n == MAX_FRAMES:
            return best
        n = min(2 * n, MAX_FRAMES)
