"""numba twins of the scalar coefficient functions of exponential coordinates
(:mod:`core.expcoords`, seed 003) and of the limit functions built on them: the same series
below the same switch angles (``expcoords.SPECS``) and the same closed forms above.

Mirrors (reference -> twin; parity test):

* ``expcoords.coefficients`` (alpha, beta, gamma) -> :func:`abg`;
  ``expcoords.coefficient_rates`` (b1, g1) -> :func:`rate_coefficients`: through the
  spherical and free joints in ``tests/core/test_backend_numba.py::test_backends_agree``
  and directly in ``tests/core/test_compiled_twins.py::test_coefficients_agree``;
* ``joints.poe.exp_factors`` -> :data:`exp_factors` (the same function, compiled);
* ``expcoords.reach_cone_value``/``reach_cone_gradient`` -> :func:`cone`,
  ``expcoords.twist_angle``/``twist_gradient`` -> :func:`twist`,
  ``expcoords.elliptic_cone_value``/``elliptic_cone_gradient`` -> :func:`ellipse`:
  ``tests/core/test_backend_numba.py::test_limit_evaluation_agrees``.
"""

import math

import numpy as np

from ... import expcoords
from ...joints import poe
from .options import jit

__all__ = ["exp_factors", "abg", "rate_coefficients", "cone", "twist", "ellipse"]

#: the exp(z b) factors of a spline's extrapolation (:func:`core.joints.poe.exp_factors`), compiled
exp_factors = jit(poe.exp_factors)


def _spec(name):
    s = expcoords.SPECS[name]
    return float(s.theta_c), np.array(s.coeffs)


_TH_A, _S_A = _spec("alpha")
_TH_B, _S_B = _spec("beta")
_TH_G, _S_G = _spec("gamma")
_TH_B1, _S_B1 = _spec("b1")
_TH_G1, _S_G1 = _spec("g1")
_TH_SH, _S_SH = _spec("sh")
_TH_SH1, _S_SH1 = _spec("sh1")


@jit
def _horner(c, t):
    acc = c[c.size - 1]
    for i in range(c.size - 2, -1, -1):
        acc = acc * t + c[i]
    return acc


@jit
def abg(th, t):
    """alpha, beta, gamma of seed 003 at the angle th (t = th^2)."""
    a = _horner(_S_A, t) if th < _TH_A else math.sin(th) / th
    if th < _TH_B:
        b = _horner(_S_B, t)
    else:
        h = math.sin(0.5 * th) / th
        b = 2.0 * h * h
    g = _horner(_S_G, t) if th < _TH_G else (th - math.sin(th)) / (th * th * th)
    return a, b, g


@jit
def _b1g1(th, t):
    """The rate factors b1 = (alpha - 2 beta)/t and g1 = (beta - 3 gamma)/t."""
    if th < _TH_B1:
        b1 = _horner(_S_B1, t)
    else:
        s2 = math.sin(0.5 * th)
        b1 = (th * math.sin(th) - 4.0 * s2 * s2) / (t * t)
    if th < _TH_G1:
        g1 = _horner(_S_G1, t)
    else:
        s2 = math.sin(0.5 * th)
        g1 = (2.0 * th * s2 * s2 - 3.0 * th + 3.0 * math.sin(th)) / (t * t * th)
    return b1, g1


@jit
def rate_coefficients(q, qs):
    """``r = q[qs:qs + 3]`` and alpha, beta, gamma, b1, g1 at it: ``(x, y, z, a, b, g, b1,
    g1)``."""
    x, y, z = q[qs], q[qs + 1], q[qs + 2]
    t = x * x + y * y + z * z
    th = math.sqrt(t)
    a, b, g = abg(th, t)
    b1, g1 = _b1g1(th, t)
    return x, y, z, a, b, g, b1, g1


@jit
def cone(q, qs, p0, p1, p2, cphi):
    """Reach cone ``g(r) = cos theta + beta <r, p>^2 - cos phi`` and its gradient ``2 beta
    <r, p> p + (beta1 <r, p>^2 - alpha) r`` (seed 003 eqs. 52, 60)."""
    x, y, z, a, b, _, b1, _ = rate_coefficients(q, qs)
    th = math.sqrt(x * x + y * y + z * z)
    rp = x * p0 + y * p1 + z * p2
    k = b1 * rp * rp - a
    return (math.cos(th) + b * rp * rp - cphi, 2.0 * b * rp * p0 + k * x,
            2.0 * b * rp * p1 + k * y, 2.0 * b * rp * p2 + k * z)


@jit
def twist(q, qs, p0, p1, p2):
    """Twist angle about p of the rotation coordinates ``r = q[qs:qs + 3]`` and its gradient,
    as :func:`core.expcoords.twist_angle` and :func:`core.expcoords.twist_gradient`; NaN
    where they raise (a swing of pi, ``W^2 + Y^2 < 1e-24``)."""
    x, y, z = q[qs], q[qs + 1], q[qs + 2]
    t = x * x + y * y + z * z
    th = math.sqrt(t)
    sh = _horner(_S_SH, t) if th < _TH_SH else math.sin(0.5 * th) / th
    sh1 = _horner(_S_SH1, t) if th < _TH_SH1 else \
        (0.5 * th * math.cos(0.5 * th) - math.sin(0.5 * th)) / th ** 3
    W = math.cos(0.5 * th)
    rp = x * p0 + y * p1 + z * p2
    Y = sh * rp
    den = W * W + Y * Y
    if den < 1e-24:
        return math.nan, 0.0, 0.0, 0.0
    sgn = -1.0 if W < 0.0 else 1.0
    k, a, c = 2.0 / den, sh1 * rp, -0.5 * sh
    return (2.0 * math.atan2(sgn * Y, sgn * W),
            k * (W * (a * x + sh * p0) - Y * (c * x)), k * (W * (a * y + sh * p1) - Y * (c * y)),
            k * (W * (a * z + sh * p2) - Y * (c * z)))


@jit
def ellipse(q, qs, lr, o):
    """Elliptic cone value and gradient on ``r = q[qs:qs + 3]`` (as
    :func:`core.expcoords.elliptic_cone_value` and :func:`core.expcoords.
    elliptic_cone_gradient`), constants at ``lr[o:]`` (:data:`core.compiled.layout.LR_PER`):
    ``p' = exp(r) p`` on ``(u, w = p x u, p)``, the value's derivative ``c`` in ``p'`` and the
    gradient ``J_b^T (p x R^T c)``."""
    x, y, z, a, b, g, _, _ = rate_coefficients(q, qs)
    cth = math.cos(math.sqrt(x * x + y * y + z * z))
    R = (cth + b * x * x, -a * z + b * x * y, a * y + b * x * z,
         a * z + b * x * y, cth + b * y * y, -a * x + b * y * z,
         -a * y + b * x * z, a * x + b * y * z, cth + b * z * z)
    A, B = lr[o], lr[o + 5]
    p0, p1, p2, u0, u1, u2 = lr[o + 2], lr[o + 3], lr[o + 4], lr[o + 6], lr[o + 7], lr[o + 8]
    w0, w1, w2 = p1 * u2 - p2 * u1, p2 * u0 - p0 * u2, p0 * u1 - p1 * u0
    e0 = R[0] * p0 + R[1] * p1 + R[2] * p2
    e1 = R[3] * p0 + R[4] * p1 + R[5] * p2
    e2 = R[6] * p0 + R[7] * p1 + R[8] * p2
    X, Y, Z = e0 * u0 + e1 * u1 + e2 * u2, e0 * w0 + e1 * w1 + e2 * w2, e0 * p0 + e1 * p1 + e2 * p2
    n = X * X / A + Y * Y / B
    rho2 = X * X + Y * Y
    if Z >= 0.0:
        D = 2.0 * (1.0 + Z)
        val = 1.0 - n / D
        gx, gy, gz = -2.0 * X / (A * D), -2.0 * Y / (B * D), 2.0 * n / (D * D)
    elif rho2 > 1e-28:                                 # expcoords._ANTIPODE_RHO2
        val = 1.0 - (1.0 - Z) * n / (2.0 * rho2)
        k = (1.0 - Z) / rho2
        gx, gy, gz = -k * X * (1.0 / A - n / rho2), -k * Y * (1.0 / B - n / rho2), \
            n / (2.0 * rho2)
    else:
        val, gx, gy, gz = 1.0 - 1.0 / min(A, B), 0.0, 0.0, 0.0
    c0, c1, c2 = gx * u0 + gy * w0 + gz * p0, gx * u1 + gy * w1 + gz * p1, \
        gx * u2 + gy * w2 + gz * p2
    t0 = R[0] * c0 + R[3] * c1 + R[6] * c2              # R^T c
    t1 = R[1] * c0 + R[4] * c1 + R[7] * c2
    t2 = R[2] * c0 + R[5] * c1 + R[8] * c2
    v0, v1, v2 = p1 * t2 - p2 * t1, p2 * t0 - p0 * t2, p0 * t1 - p1 * t0
    # J_b = a I - b [r] + g r r^T; J_b^T v
    rv = g * (x * v0 + y * v1 + z * v2)
    return (val, a * v0 - b * (z * v1 - y * v2) + rv * x, a * v1 - b * (x * v2 - z * v0) + rv * y,
            a * v2 - b * (y * v0 - x * v1) + rv * z)
