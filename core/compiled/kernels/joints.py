"""numba twins of the joints' evaluation (:mod:`core.joints`): each compiled joint kind's
local transform ``P G(q)`` and ``S``, ``dS/dq`` (one coordinate) or ``S`` rows and, with the
velocities, ``q_dot^T (dS/dq) q_dot`` (several), written into the kernels' buffer
(:mod:`core.compiled.layout`) as the families' ``calc`` and ``velocity_product`` write
``data`` (:mod:`core.joints.family`).

A kind is declared beside its joint: the kind number ``KIND_*``, the family's
``kernel_kind``, ``kernel_params`` (its constants, packed by :mod:`core.compiled.pack`) and
the flags ``kernel_charts`` and ``kernel_large``. The one kernel function that dispatches on
the kinds is :func:`core.compiled.kernels.kinematics.kinematics` (a large kind in
:func:`large_joint`'s branch, so that numba compiles it only for models that have one).

Mirrors (reference -> twin; parity test):

* ``lower_pairs.ScrewFamily`` (``KIND_SCREW``) -> :func:`screw`; ``lower_pairs.FixedFamily``
  (``KIND_FIXED``) -> the placement copy in :func:`core.compiled.kernels.kinematics.kinematics`;
* ``spline_curve.CubicSplineFamily``, ``SplineCurveJoint.evaluate`` (``KIND_SPLINE``) ->
  :func:`spline`; ``spline_curve.ClosedCubicSplineFamily`` (``KIND_CLOSED_SPLINE``) ->
  :func:`wrap` then :func:`spline`;
* ``spherical.SphericalFamily`` (``KIND_SPHERE``) -> :func:`sphere`, :func:`sphere_bias`;
  ``spherical.Free.evaluate`` (``KIND_FREE``) -> :func:`free`, :func:`free_bias`;

all through ``tests/core/test_backend_numba.py::test_backends_agree`` (screws, splines inside
and beyond their knots, closed curves a period away, welds, balls, free joints);

* ``opensim.CustomJoint.evaluate`` (``KIND_CUSTOM``) -> :func:`large_joint`,
  :func:`core.compiled.kernels.custom.custom_joint`: ``::test_custom_joints_agree``;
* ``spline_surface.SplineJoint.evaluate`` (``KIND_SURFACE``) -> :func:`large_joint`,
  :func:`core.compiled.kernels.surface.surface_joint`: ``::test_surface_joints_agree``.
"""

import math

from numba.extending import overload

from ...joints.opensim import KIND_CUSTOM
from ...joints.spline_surface import KIND_SURFACE
from .custom import custom_joint
from .expcoords import abg, exp_factors, rate_coefficients
from .options import OPTIONS, jit
from .surface import span_of, surface_joint

__all__ = ["screw", "spline", "wrap", "sphere", "sphere_bias", "free", "free_bias",
           "large_joint"]


@jit
def screw(reals, po, buf, o, x):
    """``P G = [1, sin x, 1 - cos x, x]`` times the (4, 12) table; S = screw, dS/dq = 0."""
    s = math.sin(x)
    c1 = 1.0 - math.cos(x)
    for k in range(12):
        buf[o + k] = (reals[po + k] + s * reals[po + 12 + k] + c1 * reals[po + 24 + k]
                      + x * reals[po + 36 + k])
    for k in range(6):
        buf[o + 16 + k] = reals[po + 48 + k]
        buf[o + 22 + k] = 0.0


@jit
def spline(reals, po, ns, deg, buf, o, x):
    """Cubic spline curve: the span's polynomial in ``x - midpoint`` (Horner) for the 28
    values ``[P G (16), S, dS/dq]``; beyond the knots ``P G_end exp(S_end dq)``, S = S_end
    and dS/dq = 0 (as :meth:`SplineCurveJoint.evaluate`)."""
    lo, hi = reals[po], reals[po + 1]
    st = po + 2
    if lo <= x <= hi:
        s = span_of(reals, st, ns, x)
        w = 1 + 28 * (deg + 1)
        r = st + ns + 36 + s * w
        u = x - reals[r]
        for k in range(28):
            acc = reals[r + 1 + 28 * deg + k]
            for p in range(deg - 1, -1, -1):
                acc = acc * u + reals[r + 1 + 28 * p + k]
            buf[o + k] = acc
        return
    if x < lo:
        e, b = st + ns, x - lo
    else:
        e, b = st + ns + 18, x - hi
    z = e + 12                                          # the end twist S_end
    w0, w1, w2 = reals[z], reals[z + 1], reals[z + 2]
    v0, v1, v2 = reals[z + 3], reals[z + 4], reals[z + 5]
    theta = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    f1, f2, f3 = exp_factors(b * theta)
    ca, cc, ce = b * f1, b * b * f2, b * b * b * f3
    # R = I + a W + c W^2, p = (b I + c W + e W^2) v
    W = (0.0, -w2, w1, w2, 0.0, -w0, -w1, w0, 0.0)
    t = buf                                            # E (3x4) into dS/dq's slots first
    for i in range(3):
        for j in range(3):
            W2 = W[3 * i] * W[j] + W[3 * i + 1] * W[3 + j] + W[3 * i + 2] * W[6 + j]
            t[o + 16 + 3 * i + j] = (1.0 if i == j else 0.0) + ca * W[3 * i + j] + cc * W2
    Wv = (W[1] * v1 + W[2] * v2, W[3] * v0 + W[5] * v2, W[6] * v0 + W[7] * v1)
    WWv = (W[1] * Wv[1] + W[2] * Wv[2], W[3] * Wv[0] + W[5] * Wv[2], W[6] * Wv[0] + W[7] * Wv[1])
    pe = (b * v0 + cc * Wv[0] + ce * WWv[0], b * v1 + cc * Wv[1] + ce * WWv[1],
          b * v2 + cc * Wv[2] + ce * WWv[2])
    for i in range(3):
        P0, P1, P2, P3 = reals[e + 4 * i], reals[e + 4 * i + 1], reals[e + 4 * i + 2], \
            reals[e + 4 * i + 3]
        for j in range(3):
            buf[o + 4 * i + j] = (P0 * t[o + 16 + j] + P1 * t[o + 19 + j]
                                  + P2 * t[o + 22 + j])
        buf[o + 4 * i + 3] = P0 * pe[0] + P1 * pe[1] + P2 * pe[2] + P3
    for k in range(6):
        buf[o + 16 + k] = reals[z + k]
        buf[o + 22 + k] = 0.0


@jit
def wrap(x, lo, hi, period):
    """``x`` outside ``[lo, hi)`` moved by whole periods into ``[lo, lo + period)`` (as
    :meth:`core.joints.spline_curve.ClosedSplineCurveJoint.evaluate` does)."""
    if lo <= x < hi:
        return x
    r = (x - lo) % period
    return lo + (0.0 if r >= period else r)


@jit
def sphere(reals, pb, buf, o, sm, q, qs):
    """Spherical joint: ``P [exp(r), 0]`` and the rows ``S_j = [J_b e_j; 0]`` (seed 003
    eqs. 2, 20); returns R."""
    x, y, z = q[qs], q[qs + 1], q[qs + 2]
    t = x * x + y * y + z * z
    th = math.sqrt(t)
    a, b, g = abg(th, t)
    c = math.cos(th)
    R = (c + b * x * x, -a * z + b * x * y, a * y + b * x * z,
         a * z + b * x * y, c + b * y * y, -a * x + b * y * z,
         -a * y + b * x * z, a * x + b * y * z, c + b * z * z)
    for i in range(3):
        P0, P1, P2 = reals[pb + 4 * i], reals[pb + 4 * i + 1], reals[pb + 4 * i + 2]
        for j in range(3):
            buf[o + 4 * i + j] = P0 * R[j] + P1 * R[3 + j] + P2 * R[6 + j]
        buf[o + 4 * i + 3] = reals[pb + 4 * i + 3]
    # J_b = a I - b [r] + g r r^T; row j of S is column j of J_b
    J = (a + g * x * x, b * z + g * x * y, -b * y + g * x * z,
         -b * z + g * x * y, a + g * y * y, b * x + g * y * z,
         b * y + g * x * z, -b * x + g * y * z, a + g * z * z)
    for j in range(3):
        r = sm + 6 * (qs + j)
        for i in range(3):
            buf[r + i] = J[3 * i + j]
            buf[r + 3 + i] = 0.0
    return R


@jit
def free(reals, pb, buf, o, sm, q, qs):
    """Free joint ``q = [r, p]``: ``P [exp(r), p]``, the rows of r as :func:`sphere`'s and
    ``S_{3+j} = [0; R^T e_j]`` (:meth:`core.joints.spherical.Free.evaluate`)."""
    R = sphere(reals, pb, buf, o, sm, q, qs)
    for i in range(3):
        buf[o + 4 * i + 3] += reals[pb + 4 * i] * q[qs + 3] + \
            reals[pb + 4 * i + 1] * q[qs + 4] + reals[pb + 4 * i + 2] * q[qs + 5]
    for j in range(3):
        r = sm + 6 * (qs + 3 + j)
        for i in range(3):
            buf[r + i] = 0.0
            buf[r + 3 + i] = R[3 * j + i]


@jit
def free_bias(buf, oc, sm, q, v, qs):
    """A free joint's ``q_dot^T (dS/dq) q_dot`` (after :func:`free` wrote its S rows): the
    rotation's as :func:`sphere_bias`, and ``d(R^T)/dt p_dot = -w x R^T p_dot`` with
    ``[w; R^T p_dot] = S q_dot``."""
    sphere_bias(buf, oc, q, v, qs)
    x0 = x1 = x2 = y0 = y1 = y2 = 0.0
    for j in range(6):
        r = sm + 6 * (qs + j)
        qd = v[qs + j]
        x0 += buf[r] * qd
        x1 += buf[r + 1] * qd
        x2 += buf[r + 2] * qd
        y0 += buf[r + 3] * qd
        y1 += buf[r + 4] * qd
        y2 += buf[r + 5] * qd
    buf[oc + 3] = x2 * y1 - x1 * y2
    buf[oc + 4] = x0 * y2 - x2 * y0
    buf[oc + 5] = x1 * y0 - x0 * y1


@jit
def sphere_bias(buf, oc, q, v, qs):
    """``q_dot^T (dS/dq) q_dot = [J_b_dot r_dot; 0] = [(2 gamma - beta) s r_dot - b1 s
    (r x r_dot) + (g1 s^2 + gamma |r_dot|^2) r; 0]`` with ``s = r . r_dot`` (seed 003 eqs.
    36-38, 40)."""
    x, y, z, a, b, g, b1, g1 = rate_coefficients(q, qs)
    u0, u1, u2 = v[qs], v[qs + 1], v[qs + 2]
    s = x * u0 + y * u1 + z * u2
    k0 = (2.0 * g - b) * s
    k1 = -b1 * s
    k2 = g1 * s * s + g * (u0 * u0 + u1 * u1 + u2 * u2)
    buf[oc] = k0 * u0 + k1 * (y * u2 - z * u1) + k2 * x
    buf[oc + 1] = k0 * u1 + k1 * (z * u0 - x * u2) + k2 * y
    buf[oc + 2] = k0 * u2 + k1 * (x * u1 - y * u0) + k2 * z
    buf[oc + 3] = 0.0
    buf[oc + 4] = 0.0
    buf[oc + 5] = 0.0


def large_joint(ints, kind, reals, po, pb, buf, o, sm, oc, q, v, qs, n, with_v):
    """A joint of a large kind (a family with ``kernel_large``; arguments as
    :func:`~core.compiled.kernels.custom.custom_joint`; other kinds: nothing): compiled as that
    where ``ints`` is read-only (the packer's mark of a model with such joints), else as
    nothing at all, so that the kernels of other models do not compile those joints."""


@overload(large_joint, jit_options=OPTIONS)
def _large_joint_impl(ints, kind, reals, po, pb, buf, o, sm, oc, q, v, qs, n, with_v):
    if ints.mutable:
        return lambda ints, kind, reals, po, pb, buf, o, sm, oc, q, v, qs, n, with_v: None

    def impl(ints, kind, reals, po, pb, buf, o, sm, oc, q, v, qs, n, with_v):
        if kind == KIND_CUSTOM:
            custom_joint(reals, po, pb, buf, o, sm, oc, q, v, qs, n, with_v)
        elif kind == KIND_SURFACE:
            surface_joint(reals, po, pb, buf, o, sm, oc, q, v, qs, n, with_v)
    return impl
