"""Trigonometric coefficient functions of exp/log and their Jacobians, robust near zero.

Each function takes the squared angle ``t2 = theta**2`` (any shape) and returns the
coefficient with the same shape. Below ``SMALL`` the closed form loses digits to
cancellation, so a Taylor series is used instead. The series are written out to an order
whose first neglected term is below 1e-17 relative at the threshold, so both branches
agree to round-off at the switch (tested in tests/core/test_lie.py).

Names (theta = sqrt(t2)):

=========  ======================================  =====================
name       closed form                              series at 0
=========  ======================================  =====================
``a``      sin(t)/t                                 1 - t2/6 + t2^2/120
``b``      (1 - cos t)/t^2                          1/2 - t2/24 + ...
``c``      (t - sin t)/t^3                          1/6 - t2/120 + ...
``d``      (1 - t/2 cot(t/2))/t^2                   1/12 + t2/720 + ...
=========  ======================================  =====================

plus the four coefficients of the SE(3) Jacobian in :func:`se3_coefficients`.
"""

import numpy as np

#: below this angle (radians) the Taylor branches are used
SMALL = 1e-3
#: the SE(3) Jacobian coefficients cancel to t^5, so their series run up to this angle
SE3_SMALL = 0.1


def _split(t2):
    t2 = np.asarray(t2, dtype=float)
    small = t2 < SMALL * SMALL
    # a safe angle for the closed-form branch (its value is discarded where small)
    t2s = np.where(small, 1.0, t2)
    return t2, small, t2s, np.sqrt(t2s)


def a(t2):
    """sin(t)/t."""
    t2, small, t2s, t = _split(t2)
    return np.where(small, 1.0 - t2 / 6.0 + t2 * t2 / 120.0, np.sin(t) / t)


def b(t2):
    """(1 - cos t)/t^2."""
    t2, small, t2s, t = _split(t2)
    return np.where(small, 0.5 - t2 / 24.0 + t2 * t2 / 720.0, (1.0 - np.cos(t)) / t2s)


def c(t2):
    """(t - sin t)/t^3."""
    t2, small, t2s, t = _split(t2)
    return np.where(small, 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0,
                    (t - np.sin(t)) / (t2s * t))


def d(t2):
    """(1 - (t/2) cot(t/2)) / t^2: the W^2 coefficient of the inverse SO(3) Jacobian.

    Singular at t = 2 pi (where the exponential map is not invertible)."""
    t2, small, t2s, t = _split(t2)
    half = 0.5 * t
    return np.where(small, 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0,
                    (1.0 - half * np.cos(half) / np.sin(half)) / t2s)


def se3_coefficients(t2):
    """Coefficients (c1, c2, c3, c4) of the SE(3) left Jacobian as a polynomial in ad_xi.

    ``Jl(xi) = I + c1 ad + c2 ad^2 + c3 ad^3 + c4 ad^4`` with theta the rotation angle of xi.
    This follows from the minimal polynomial x (x^2 + theta^2)^2 of ad_xi (Selig):

    c1 = (4 - t sin t - 4 cos t) / (2 t^2)
    c2 = (4 t - 5 sin t + t cos t) / (2 t^3)
    c3 = (2 - t sin t - 2 cos t) / (2 t^4)
    c4 = (2 t - 3 sin t + t cos t) / (2 t^5)
    """
    t2 = np.asarray(t2, dtype=float)
    small = t2 < SE3_SMALL * SE3_SMALL
    t2s = np.where(small, 1.0, t2)
    t = np.sqrt(t2s)
    s, co = np.sin(t), np.cos(t)
    u = t2
    c1 = np.where(small, 0.5 - u * u / 720.0 + u ** 3 / 20160.0 - u ** 4 / 1209600.0,
                  (4.0 - t * s - 4.0 * co) / (2.0 * t2s))
    c2 = np.where(small, 1.0 / 6.0 - u * u / 5040.0 + u ** 3 / 181440.0 - u ** 4 / 13305600.0,
                  (4.0 * t - 5.0 * s + t * co) / (2.0 * t2s * t))
    c3 = np.where(small, 1.0 / 24.0 - u / 360.0 + u * u / 13440.0 - u ** 3 / 907200.0
                  + u ** 4 / 95800320.0,
                  (2.0 - t * s - 2.0 * co) / (2.0 * t2s * t2s))
    c4 = np.where(small, 1.0 / 120.0 - u / 2520.0 + u * u / 120960.0 - u ** 3 / 9979200.0
                  + u ** 4 / 1245404160.0,
                  (2.0 * t - 3.0 * s + t * co) / (2.0 * t2s * t2s * t))
    return c1, c2, c3, c4
