"""Trigonometric coefficient functions of exp/log and their Jacobians, robust near zero.

Each function takes the squared angle ``t2 = theta**2`` (any shape) and returns the
coefficient with the same shape. Near zero the closed forms lose digits to cancellation
(``t - sin t`` keeps only about ``eps / t^2`` relative accuracy), so below ``SMALL`` a Taylor
series in ``t2`` is used instead. The series run through ``t^14``: at ``t = SMALL = 0.5`` the
first neglected term is below 1e-20 relative, and the closed forms are accurate to ~1e-13
relative there, so both branches agree to round-off at the switch (tested in
tests/core/test_lie.py).

========  ==========================================  ===================
name      closed form                                  value at 0
========  ==========================================  ===================
``a``     sin(t)/t                                     1
``b``     (1 - cos t)/t^2                              1/2
``c``     (t - sin t)/t^3                              1/6
``d``     (1 - (t/2) cot(t/2))/t^2                     1/12
========  ==========================================  ===================

plus the four coefficients of the SE(3) Jacobian in :func:`se3_coefficients`.
"""

import math
from fractions import Fraction as _F

import numpy as np

__all__ = ["SMALL", "SERIES", "series", "a", "b", "c", "d", "se3_coefficients"]

#: below this angle (radians) the Taylor branches are used
SMALL = 0.5

# Taylor coefficients in powers of t2 (t^0, t^2, ..., t^14), exact rationals from sympy.
_SERIES = {
    "a": ["1", "-1/6", "1/120", "-1/5040", "1/362880", "-1/39916800", "1/6227020800",
          "-1/1307674368000"],
    "b": ["1/2", "-1/24", "1/720", "-1/40320", "1/3628800", "-1/479001600", "1/87178291200",
          "-1/20922789888000"],
    "c": ["1/6", "-1/120", "1/5040", "-1/362880", "1/39916800", "-1/6227020800",
          "1/1307674368000", "-1/355687428096000"],
    "d": ["1/12", "1/720", "1/30240", "1/1209600", "1/47900160", "691/1307674368000",
          "1/74724249600", "3617/10670622842880000"],
    "c1": ["1/2", "0", "-1/720", "1/20160", "-1/1209600", "1/119750400", "-1/17435658240",
           "1/3487131648000"],
    "c2": ["1/6", "0", "-1/5040", "1/181440", "-1/13305600", "1/1556755200",
           "-1/261534873600", "1/59281238016000"],
    "c3": ["1/24", "-1/360", "1/13440", "-1/907200", "1/95800320", "-1/14529715200",
           "1/2988969984000", "-1/800296713216000"],
    "c4": ["1/120", "-1/2520", "1/120960", "-1/9979200", "1/1245404160", "-1/217945728000",
           "1/50812489728000", "-1/15205637551104000"],
}
#: {name: float Taylor coefficients of t2^0 .. t2^7}, from the exact rationals above
SERIES = {k: tuple(float(_F(c)) for c in v) for k, v in _SERIES.items()}


def series(name, t2):
    """Evaluate the Taylor polynomial of coefficient ``name`` at ``t2`` (Horner in t2)."""
    coeffs = SERIES[name]
    out = np.full(np.shape(t2), coeffs[-1])
    for c in coeffs[-2::-1]:
        out = out * t2 + c
    return out


def _scalar(name, t2):
    """Python-float fast path for one angle given as a Python or numpy scalar (no array
    overhead); ``None`` for arrays (0-d included), which take the vectorised path."""
    if isinstance(t2, np.ndarray):
        return None
    t2 = float(t2)
    if t2 < SMALL * SMALL:
        out = 0.0
        for c in reversed(SERIES[name]):
            out = out * t2 + c
        return out
    t = math.sqrt(t2)
    if name == "a":
        return math.sin(t) / t
    if name == "b":
        return (1.0 - math.cos(t)) / t2
    if name == "c":
        return (t - math.sin(t)) / (t2 * t)
    half = 0.5 * t
    return (1.0 - half / math.tan(half)) / t2


def _split(t2):
    t2 = np.asarray(t2, dtype=float)
    small = t2 < SMALL * SMALL
    # a safe angle for the closed-form branch (its value is discarded where small)
    t2s = np.where(small, 1.0, t2)
    return t2, small, t2s, np.sqrt(t2s)


def a(t2):
    """sin(t)/t."""
    one = _scalar("a", t2)
    if one is not None:
        return one
    t2, small, t2s, t = _split(t2)
    return np.where(small, series("a", t2), np.sin(t) / t)


def b(t2):
    """(1 - cos t)/t^2."""
    one = _scalar("b", t2)
    if one is not None:
        return one
    t2, small, t2s, t = _split(t2)
    return np.where(small, series("b", t2), (1.0 - np.cos(t)) / t2s)


def c(t2):
    """(t - sin t)/t^3."""
    one = _scalar("c", t2)
    if one is not None:
        return one
    t2, small, t2s, t = _split(t2)
    return np.where(small, series("c", t2), (t - np.sin(t)) / (t2s * t))


def d(t2):
    """(1 - (t/2) cot(t/2)) / t^2: the W^2 coefficient of the inverse SO(3) Jacobian.

    Singular at t = 2 pi (where the exponential map is not invertible)."""
    one = _scalar("d", t2)
    if one is not None:
        return one
    t2, small, t2s, t = _split(t2)
    half = 0.5 * t
    return np.where(small, series("d", t2), (1.0 - half * np.cos(half) / np.sin(half)) / t2s)


def se3_coefficients(t2):
    """Coefficients (c1, c2, c3, c4) of the SE(3) left Jacobian as a polynomial in ad_xi.

    ``Jl(xi) = I + c1 ad + c2 ad^2 + c3 ad^3 + c4 ad^4`` with theta the rotation angle of xi.
    This follows from the minimal polynomial x (x^2 + theta^2)^2 of ad_xi (Selig):

    c1 = (4 - t sin t - 4 cos t) / (2 t^2)
    c2 = (4 t - 5 sin t + t cos t) / (2 t^3)
    c3 = (2 - t sin t - 2 cos t) / (2 t^4)
    c4 = (2 t - 3 sin t + t cos t) / (2 t^5)
    """
    t2, small, t2s, t = _split(t2)
    s, co = np.sin(t), np.cos(t)
    c1 = np.where(small, series("c1", t2), (4.0 - t * s - 4.0 * co) / (2.0 * t2s))
    c2 = np.where(small, series("c2", t2), (4.0 * t - 5.0 * s + t * co) / (2.0 * t2s * t))
    c3 = np.where(small, series("c3", t2), (2.0 - t * s - 2.0 * co) / (2.0 * t2s * t2s))
    c4 = np.where(small, series("c4", t2),
                  (2.0 * t - 3.0 * s + t * co) / (2.0 * t2s * t2s * t))
    return c1, c2, c3, c4
