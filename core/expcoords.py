"""Spherical joints in exponential coordinates (seed 003: Kim, Lee & Park 2014).

A rotation is ``R = exp([r])`` with ``r: (3,)`` the rotation vector, ``theta = |r|``
(Rodrigues, eq. 2). This module gives the first- and second-order differential relations
between ``(r, r_dot, r_ddot)`` and the body/spatial angular velocity and acceleration, the
reparametrization past ``theta = pi`` and the reach-cone joint limits. Every function is
batched over leading dimensions (``r: (..., 3)``; other vector arguments broadcast with it);
a single ``(3,)`` input takes a scalar fast path.

Exponential and logarithm are those of :mod:`core.lie.so3` (re-exported as :func:`exp`,
:func:`log`; log is robust at 0 and pi, eqs. 3-5).

Coefficients (eqs. 2, 7, 17) and their rates (eqs. 36-38 and the delta/zeta rates of eq. 39).
Every rate is written ``x_dot = x1 * <r, r_dot>`` with ``x1 = (1/theta) dx/dtheta``:

======  ================================  ====================================
name    value                             rate factor x1
======  ================================  ====================================
alpha   sin t / t                         gamma - beta                  (36)
beta    (1 - cos t) / t^2                 (alpha - 2 beta) / t^2        (37)
gamma   (t - sin t) / t^3                 (beta - 3 gamma) / t^2        (38)
delta   alpha / (2 beta) = (t/2)cot(t/2)  (alpha - 1) / (2 beta t^2)
zeta    (1 - delta) / t^2                 ((alpha + 1)/(2 beta) - 2) / t^4
======  ================================  ====================================

Numerical robustness. The seed switches from the closed forms to two-term series
(eqs. 30-34, 45-49) at theta = 1e-4, but the closed forms lose ``eps/theta^2`` (gamma, zeta,
beta_dot) to ``eps/theta^4`` (zeta_dot) to cancellation: just above 1e-4, evaluated as
printed, gamma is off by 6e-9 relative, zeta comes out as -0.58 instead of 1/12 and zeta_dot
as 1e8 instead of 1/360. Here each function that cancels is evaluated from its full Taylor
series below a threshold and from a closed form above it (:func:`coefficient_function`
evaluates each by name), and both branches are within a few ulp of the exact value at the
switch (checked against exact rational series in ``tests/core/test_expcoords.py``):

==========================  ==========  ===========  =================================
function (key)              threshold   terms        closed form used above
==========================  ==========  ===========  =================================
alpha, beta, sh=sin(t/2)/t  0.1 rad     6            sin t/t, 2 (sin(t/2)/t)^2, ...
gamma                       1.5 rad     10           (t - sin t)/t^3
b1 = (alpha-2 beta)/t^2     2.5 rad     13           (t sin t - 4 sin^2(t/2))/t^4
g1 = (beta-3 gamma)/t^2     3.0 rad     13           (2t sin^2(t/2) - 3t + 3 sin t)/t^5
q = (alpha+1-4 beta)/t^4    3.0 rad     13           (t sin t + t^2 - 8 sin^2(t/2))/t^6
sh1 = (d sh/dt) / t         2.0 rad     10           (t cos(t/2)/2 - sin(t/2))/t^3
==========================  ==========  ===========  =================================

delta, zeta and the delta/zeta rates are quotients of these by ``2 beta`` (no further
cancellation), e.g. ``zeta = -b1 / (2 beta)``. They, ``G_b``, ``G_s`` and the inverse maps are
singular where ``det J_b = 2 (1 - cos theta) / theta^2`` (eq. 65) vanishes, at
``theta = 2 pi k`` (k >= 1): there an InvalidInputError asks to :func:`reparametrize` first.

Seed corrections: eq. 29's denominator ``a`` is ``x``; eq. 40 is ``J_b_dot r_dot`` (printed
``J_b_dot r``); eq. 44 is rebuilt by differentiating eq. 16 (see :func:`G_s_dot`).
"""

import math
from collections import namedtuple
from fractions import Fraction

import numpy as np

from .errors import InvalidInputError, NonFiniteError
from .lie import so3
from .lie.so3 import exp, log

__all__ = [
    "exp", "log", "coefficients", "coefficient_rates", "Coefficients", "coefficient_function",
    "body_velocity", "spatial_velocity", "rdot_from_body", "rdot_from_spatial",
    "J_b", "J_s", "G_b", "G_s", "det_J_b", "dJ_b_dr", "dJ_s_dr", "exp_and_derivatives",
    "J_b_dot", "J_s_dot", "G_b_dot", "G_s_dot",
    "body_acceleration", "spatial_acceleration", "rddot_from_body", "rddot_from_spatial",
    "reparametrize", "Reparametrized",
    "reach_cone_value", "reach_cone_gradient", "reach_cone_impulse_direction",
    "elliptic_cone_value", "elliptic_cone_gradient", "ellipse_frame", "twist_angle",
    "twist_gradient",
    "SERIES_THRESHOLDS", "DET_TOL",
]

#: G_b, G_s and the inverse maps raise where det J_b = 2 beta < DET_TOL, i.e. within about
#: ``sqrt(DET_TOL) * theta`` (6e-6 rad at 2 pi) of theta = 2 pi k.
DET_TOL = 1e-12

Coefficients = namedtuple("Coefficients", "alpha beta gamma delta zeta")
Coefficients.__doc__ = """alpha, beta, gamma, delta, zeta (eqs. 2, 7, 17); or, from
:func:`coefficient_rates`, the factors x1 with x_dot = x1 <r, r_dot>."""


# --------------------------------------------------------------------------------------
# coefficient functions of theta: full Taylor series below a threshold, closed form above
# --------------------------------------------------------------------------------------
_Spec = namedtuple("_Spec", "theta_c coeffs closed")


def _series(term, n):
    """Float coefficients c_m (m = 0..n-1) of a series in t = theta^2 from exact rationals."""
    return tuple(float(term(m)) for m in range(n))


_F = math.factorial
#: each coefficient function's switch angle, series coefficients (in t) and closed form; the
#: compiled twins (:mod:`core.compiled.kernels.expcoords`) take theirs from here
SPECS = {
    # alpha = sum (-1)^m t^m / (2m+1)!
    "alpha": _Spec(0.1, _series(lambda m: Fraction((-1) ** m, _F(2 * m + 1)), 6),
                   lambda th, M: M.sin(th) / th),
    # beta = sum (-1)^m t^m / (2m+2)!;  closed form 2 sin^2(t/2)/t^2 has no cancellation
    "beta": _Spec(0.1, _series(lambda m: Fraction((-1) ** m, _F(2 * m + 2)), 6),
                  lambda th, M: 2.0 * (M.sin(0.5 * th) / th) ** 2),
    # gamma = sum (-1)^m t^m / (2m+3)!
    "gamma": _Spec(1.5, _series(lambda m: Fraction((-1) ** m, _F(2 * m + 3)), 10),
                   lambda th, M: (th - M.sin(th)) / th ** 3),
    # b1 = (alpha - 2 beta)/t^2 = sum (-1)^(m+1) 2(m+1) t^m / (2m+4)!
    "b1": _Spec(2.5, _series(lambda m: Fraction((-1) ** (m + 1) * 2 * (m + 1), _F(2 * m + 4)), 13),
                lambda th, M: (th * M.sin(th) - 4.0 * M.sin(0.5 * th) ** 2) / th ** 4),
    # g1 = (beta - 3 gamma)/t^2 = sum (-1)^(m+1) 2(m+1) t^m / (2m+5)!
    "g1": _Spec(3.0, _series(lambda m: Fraction((-1) ** (m + 1) * 2 * (m + 1), _F(2 * m + 5)), 13),
                lambda th, M: (2.0 * th * M.sin(0.5 * th) ** 2 - 3.0 * th + 3.0 * M.sin(th))
                / th ** 5),
    # q = (alpha + 1 - 4 beta)/t^4 = sum (-1)^m (2m+2) t^m / (2m+6)!
    "q": _Spec(3.0, _series(lambda m: Fraction((-1) ** m * (2 * m + 2), _F(2 * m + 6)), 13),
               lambda th, M: (th * M.sin(th) + th * th - 8.0 * M.sin(0.5 * th) ** 2) / th ** 6),
    # sh = sin(t/2)/t = sum (-1)^m t^m / (2^(2m+1) (2m+1)!)
    "sh": _Spec(0.1, _series(lambda m: Fraction((-1) ** m, 2 ** (2 * m + 1) * _F(2 * m + 1)), 6),
                lambda th, M: M.sin(0.5 * th) / th),
    # sh1 = (1/t) d(sh)/dt = sum (-1)^(m+1) 2(m+1) t^m / (2^(2m+3) (2m+3)!)
    "sh1": _Spec(2.0, _series(lambda m: Fraction((-1) ** (m + 1) * 2 * (m + 1),
                                                 2 ** (2 * m + 3) * _F(2 * m + 3)), 10),
                 lambda th, M: (0.5 * th * M.cos(0.5 * th) - M.sin(0.5 * th)) / th ** 3),
}

#: {function name: (threshold in rad, number of series terms)}; see the module docstring.
SERIES_THRESHOLDS = {k: (s.theta_c, len(s.coeffs)) for k, s in SPECS.items()}


def _horner(coeffs, t):
    acc = coeffs[-1]
    for c in coeffs[-2::-1]:
        acc = acc * t + c
    return acc


def _f(name, theta, t):
    """Coefficient function ``name`` at angle theta (float or array), t = theta^2."""
    spec = SPECS[name]
    if isinstance(theta, float):
        if theta < spec.theta_c:
            return _horner(spec.coeffs, t)
        return spec.closed(theta, math)
    small = theta < spec.theta_c
    if small.all():
        return _horner(spec.coeffs, t)
    out = spec.closed(np.where(small, 1.0, theta), np)
    if small.any():
        out = np.where(small, _horner(spec.coeffs, t), out)
    return out


def _check_det(beta, theta, what):
    if isinstance(beta, float) and 2.0 * beta >= DET_TOL:
        return
    bad = 2.0 * beta < DET_TOL
    if np.any(bad):
        th = float(np.max(np.where(bad, theta, 0.0)))
        raise InvalidInputError(
            f"{what} is singular at |r| = {th:.9g}: det J_b = 2(1 - cos|r|)/|r|^2 (seed 003 "
            f"eq. 65) vanishes at |r| = 2 pi k; call core.expcoords.reparametrize(r, ...) first "
            f"to move r to |r| <= pi")


def _abg(theta, t):
    return _f("alpha", theta, t), _f("beta", theta, t), _f("gamma", theta, t)


def _angle(r):
    """(theta, t) as Python floats for r: (3,), arrays (...) otherwise."""
    if r.ndim == 1:
        x, y, z = r.tolist()
        t = x * x + y * y + z * z
        return math.sqrt(t), t
    t = np.einsum("...i,...i->...", r, r)
    return np.sqrt(t), t


def _abs_angle(theta):
    """``(|theta|, theta^2)`` for a finite ``theta`` (float or array (...))."""
    scalar = np.ndim(theta) == 0
    th = float(theta) if scalar else np.asarray(theta, dtype=float)
    if not np.all(np.isfinite(th)):
        raise NonFiniteError("theta contains NaN or inf; pass finite angles")
    th = abs(th) if scalar else np.abs(th)
    return th, th * th


def _abs_angle_abg(theta, what):
    """``(|theta|, theta^2, alpha, beta, gamma)`` for ``theta`` (float or array (...)) after
    checking it is finite and that ``what`` (the delta/zeta terms, which divide by beta) exist
    there (InvalidInputError at theta = 2 pi k)."""
    th, t = _abs_angle(theta)
    a, b, g = _abg(th, t)
    _check_det(b, th, what)
    return th, t, a, b, g


def coefficient_function(name, theta):
    """Coefficient function ``name`` (a key of :data:`SERIES_THRESHOLDS`) at angle ``theta``
    (float or array (...); the functions are even, so ``|theta|`` is used): its Taylor series
    below the threshold, its closed form from there on (module docstring). alpha, beta,
    gamma, b1, g1 and q make up :func:`coefficients` and :func:`coefficient_rates`; sh and
    sh1 are the twist limit's (:func:`twist_angle`, :func:`twist_gradient`)."""
    if name not in SPECS:
        raise InvalidInputError(f"unknown coefficient function {name!r}; use one of "
                                f"{sorted(SPECS)}")
    th, t = _abs_angle(theta)
    return _f(name, th, t)


def coefficients(theta):
    """alpha, beta, gamma, delta, zeta at angle ``theta`` (float or array (...)).

    Eqs. 2, 7, 17 with robust series near 0 (eqs. 30-34 extended, see the module docstring).
    delta and zeta raise InvalidInputError at theta = 2 pi k.
    """
    th, t, a, b, g = _abs_angle_abg(theta, "delta, zeta")
    return Coefficients(a, b, g, a / (2.0 * b), -_f("b1", th, t) / (2.0 * b))


def coefficient_rates(theta):
    """Rate factors x1 (x_dot = x1 <r, r_dot>) of alpha..zeta at ``theta`` (float or (...)).

    Eqs. 36-38, delta_dot and zeta_dot below eq. 39, series 45-49 (extended). The delta and
    zeta rates raise InvalidInputError at theta = 2 pi k.
    """
    th, t, a, b, g = _abs_angle_abg(theta, "delta_dot, zeta_dot")
    return Coefficients(g - b, _f("b1", th, t), _f("g1", th, t), -g / (2.0 * b),
                        _f("q", th, t) / (2.0 * b))


# --------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------
def _vec(x, name):
    """x as a finite float array (..., 3), else InvalidInputError (fast path for one (3,))."""
    if type(x) is np.ndarray and x.shape == (3,) and x.dtype == np.float64 \
            and math.isfinite(sum(x.tolist())):
        return x
    return so3.check_vector(x, name)


def _dot(a, b):
    if a.ndim == 1 and b.ndim == 1:
        return float(a @ b)
    return np.einsum("...i,...i->...", a, b)


def _bcast(*arrays):
    """np.broadcast_arrays, skipped when the shapes already agree (the common case)."""
    shape = arrays[0].shape
    if all(a.shape == shape for a in arrays[1:]):
        return arrays
    return np.broadcast_arrays(*arrays)


def _col(k):
    """Scalar or (...) coefficient -> broadcastable against (..., 3)."""
    return k if isinstance(k, float) else k[..., None]


def _mat(r, k0, k1, k2):
    """k0 I + k1 [r] + k2 r r^T: r (..., 3), k* float or (...) -> (..., 3, 3)."""
    if r.ndim == 1:
        x, y, z = r.tolist()
        return np.array([[k0 + k2 * x * x, -k1 * z + k2 * x * y, k1 * y + k2 * x * z],
                         [k1 * z + k2 * x * y, k0 + k2 * y * y, -k1 * x + k2 * y * z],
                         [-k1 * y + k2 * x * z, k1 * x + k2 * y * z, k0 + k2 * z * z]])
    k0, k1, k2 = (np.asarray(k, dtype=float)[..., None, None] for k in (k0, k1, k2))
    out = k2 * (r[..., :, None] * r[..., None, :]) + k1 * so3.hat(r)
    return out + k0 * np.eye(3)


# --------------------------------------------------------------------------------------
# first order: angular velocity and Jacobians (eqs. 6, 14-25)
# --------------------------------------------------------------------------------------
def J_b(r):
    """Body Jacobian ``J_b = alpha I - beta [r] + gamma r r^T`` (eq. 20): ``w_b = J_b r_dot``.

    Equals the right Jacobian of SO(3) and ``R^T dR/dr_i = [J_b e_i]``. ``r: (..., 3) ->
    (..., 3, 3)``. Defined for every r; singular at |r| = 2 pi k (eq. 65).
    """
    r = _vec(r, "r")
    th, t = _angle(r)
    a, b, g = _abg(th, t)
    return _mat(r, a, -b, g)


def J_s(r):
    """Spatial Jacobian ``J_s = alpha I + beta [r] + gamma r r^T`` (eq. 23): ``w_s = J_s r_dot``.

    ``J_s = R J_b`` (the left Jacobian of SO(3)). ``r: (..., 3) -> (..., 3, 3)``.
    """
    r = _vec(r, "r")
    th, t = _angle(r)
    a, b, g = _abg(th, t)
    return _mat(r, a, b, g)


def _delta_zeta(r, what):
    th, t = _angle(r)
    b = _f("beta", th, t)
    _check_det(b, th, what)
    return _f("alpha", th, t) / (2.0 * b), -_f("b1", th, t) / (2.0 * b)


def G_b(r):
    """``G_b = J_b^-1 = delta I + [r]/2 + zeta r r^T`` (eq. 22): ``r_dot = G_b w_b``.

    ``r: (..., 3) -> (..., 3, 3)``. Raises InvalidInputError near |r| = 2 pi k.
    """
    r = _vec(r, "r")
    d, z = _delta_zeta(r, "G_b(r)")
    return _mat(r, d, 0.5, z)


def G_s(r):
    """``G_s = J_s^-1 = delta I - [r]/2 + zeta r r^T`` (eq. 25): ``r_dot = G_s w_s``.

    ``r: (..., 3) -> (..., 3, 3)``. Raises InvalidInputError near |r| = 2 pi k.
    """
    r = _vec(r, "r")
    d, z = _delta_zeta(r, "G_s(r)")
    return _mat(r, d, -0.5, z)


def det_J_b(r):
    """``det J_b = det J_s = 2 (1 - cos theta) / theta^2 = 2 beta`` (eqs. 63-65).

    Zero exactly at theta = 2 pi k, k >= 1 (1 at theta = 0). ``r: (..., 3) -> (...)``.
    """
    r = _vec(r, "r")
    th, t = _angle(r)
    return 2.0 * _f("beta", th, t)


def body_velocity(r, r_dot):
    """``w_b = alpha r_dot + beta r_dot x r + gamma <r, r_dot> r`` (eq. 6).

    ``r, r_dot: (..., 3) -> (..., 3)`` (body-frame angular velocity, ``[w_b] = R^T R_dot``).
    """
    r, rd = _bcast(_vec(r, "r"), _vec(r_dot, "r_dot"))
    th, t = _angle(r)
    a, b, g = _abg(th, t)
    return _col(a) * rd + _col(b) * so3.cross(rd, r) + _col(g * _dot(r, rd)) * r


def spatial_velocity(r, r_dot):
    """``w_s = alpha r_dot - beta r_dot x r + gamma <r, r_dot> r`` (eq. 14), ``w_s = R w_b``.

    ``r, r_dot: (..., 3) -> (..., 3)``.
    """
    r, rd = _bcast(_vec(r, "r"), _vec(r_dot, "r_dot"))
    th, t = _angle(r)
    a, b, g = _abg(th, t)
    return _col(a) * rd - _col(b) * so3.cross(rd, r) + _col(g * _dot(r, rd)) * r


def rdot_from_body(r, w_b):
    """``r_dot = delta w_b + (1/2) r x w_b + zeta <r, w_b> r`` (eq. 15).

    ``r, w_b: (..., 3) -> (..., 3)``. Raises InvalidInputError near |r| = 2 pi k.
    """
    r, w = _bcast(_vec(r, "r"), _vec(w_b, "w_b"))
    d, z = _delta_zeta(r, "rdot_from_body")
    return _col(d) * w + 0.5 * so3.cross(r, w) + _col(z * _dot(r, w)) * r


def rdot_from_spatial(r, w_s):
    """``r_dot = delta w_s - (1/2) r x w_s + zeta <r, w_s> r`` (eq. 16).

    ``r, w_s: (..., 3) -> (..., 3)``. Raises InvalidInputError near |r| = 2 pi k.
    """
    r, w = _bcast(_vec(r, "r"), _vec(w_s, "w_s"))
    d, z = _delta_zeta(r, "rdot_from_spatial")
    return _col(d) * w - 0.5 * so3.cross(r, w) + _col(z * _dot(r, w)) * r


# --------------------------------------------------------------------------------------
# derivatives of the Jacobians
# --------------------------------------------------------------------------------------
_E = so3.hat(np.eye(3))  # _E[j] = [e_j]
# _T[j, a, b, c] r_c = (e_j r^T + r e_j^T)[a, b]
_T = np.einsum("ja,bc->jabc", np.eye(3), np.eye(3)) + np.einsum("ac,jb->jabc", np.eye(3),
                                                                  np.eye(3))


def _dJ_one(r, k0, k1, k2, sb, g):
    """_dJ for one r (3,) in Python floats: r_j (k0 I + k1 [r] + k2 r r^T) + sb [e_j]
    + g (e_j r^T + r e_j^T), built with a single array allocation."""
    x, y, z = r.tolist()
    xx, yy, zz, xy, xz, yz = k2 * x * x, k2 * y * y, k2 * z * z, k2 * x * y, k2 * x * z, k2 * y * z
    m = (k0 + xx, -k1 * z + xy, k1 * y + xz,
         k1 * z + xy, k0 + yy, -k1 * x + yz,
         -k1 * y + xz, k1 * x + yz, k0 + zz)
    gx, gy, gz = g * x, g * y, g * z
    d0 = [x * v for v in m]
    d1 = [y * v for v in m]
    d2 = [z * v for v in m]
    # j = 0: sb [e_x] = sb (e_z e_y^T - e_y e_z^T); g (e_x r^T + r e_x^T)
    d0[0] += 2.0 * gx
    d0[1] += gy
    d0[2] += gz
    d0[3] += gy
    d0[6] += gz
    d0[5] -= sb
    d0[7] += sb
    # j = 1: sb [e_y] = sb (e_x e_z^T - e_z e_x^T)
    d1[4] += 2.0 * gy
    d1[3] += gx
    d1[5] += gz
    d1[1] += gx
    d1[7] += gz
    d1[2] += sb
    d1[6] -= sb
    # j = 2: sb [e_z] = sb (e_y e_x^T - e_x e_y^T)
    d2[8] += 2.0 * gz
    d2[6] += gx
    d2[7] += gy
    d2[2] += gx
    d2[5] += gy
    d2[1] -= sb
    d2[3] += sb
    return np.array(d0 + d1 + d2).reshape(3, 3, 3)


def _dJ(r, th, t, a, b, g, sign):
    """d/dr_j of alpha I + sign*beta [r] + gamma r r^T, stacked over j: (..., 3, 3, 3)."""
    if r.ndim == 1:
        return _dJ_one(r, g - b, sign * _f("b1", th, t), _f("g1", th, t), sign * b, g)
    M = _mat(r, g - b, sign * _f("b1", th, t), _f("g1", th, t))  # the part proportional to r_j
    return (r[..., :, None, None] * M[..., None, :, :] + (sign * b)[..., None, None, None] * _E
            + g[..., None, None, None] * np.einsum("jabc,...c->...jab", _T, r))


def dJ_b_dr(r):
    """Partial derivatives of J_b: ``out[..., j, :, :] = dJ_b/dr_j``, ``(..., 3) -> (..., 3, 3, 3)``.

    ``dJ_b/dr_j = r_j (alpha1 I - beta1 [r] + gamma1 r r^T) - beta [e_j]
    + gamma (e_j r^T + r e_j^T)`` with the rate factors of eqs. 36-38. The spherical joint's
    Hessian is ``H[j] = [dJ_b/dr_j; 0]``.
    """
    r = _vec(r, "r")
    th, t = _angle(r)
    a, b, g = _abg(th, t)
    return _dJ(r, th, t, a, b, g, -1.0)


def dJ_s_dr(r):
    """``out[..., j, :, :] = dJ_s/dr_j`` (as :func:`dJ_b_dr` with the sign of beta flipped)."""
    r = _vec(r, "r")
    th, t = _angle(r)
    a, b, g = _abg(th, t)
    return _dJ(r, th, t, a, b, g, 1.0)


def exp_and_derivatives(r, order=2):
    """``(R, J_b, dJ_b/dr)`` from one evaluation of the coefficients (the spherical joint's
    ``evaluate``). ``r: (3,) -> (3, 3), (3, 3), (3, 3, 3)``; batched ``(..., 3)`` also works.
    ``order`` 0, 1 or 2 returns the first 1, 2 or 3 of them (always a tuple).

    R is Rodrigues' ``cos(theta) I + alpha [r] + beta r r^T`` (eq. 2) written with the
    coefficients shared with J_b: for a single r this costs a few microseconds where
    :func:`core.lie.so3.exp` costs about 70; it agrees with so3.exp to round-off (tested).
    """
    if order not in (0, 1, 2):
        raise InvalidInputError(f"order must be 0, 1 or 2, got {order!r}")
    r = _vec(r, "r")
    th, t = _angle(r)
    a, b = _f("alpha", th, t), _f("beta", th, t)
    c = math.cos(th) if isinstance(th, float) else np.cos(th)
    out = (_mat(r, c, a, b),)
    if order >= 1:
        g = _f("gamma", th, t)
        out += (_mat(r, a, -b, g),)
        if order == 2:
            out += (_dJ(r, th, t, a, b, g, -1.0),)
    return out


def _jdot(r, rd, sign):
    th, t = _angle(r)
    a, b, g = _abg(th, t)
    s = _dot(r, rd)
    b1, g1 = _f("b1", th, t), _f("g1", th, t)
    # alpha_dot I + sign (beta_dot [r] + beta [r_dot]) + gamma_dot r r^T + gamma (rd r^T + r rd^T)
    out = _mat(r, (g - b) * s, sign * b1 * s, g1 * s)
    out = out + (sign * b if isinstance(b, float) else sign * b[..., None, None]) * so3.hat(rd)
    gg = g if isinstance(g, float) else g[..., None, None]
    return out + gg * (rd[..., :, None] * r[..., None, :] + r[..., :, None] * rd[..., None, :])


def J_b_dot(r, r_dot):
    """Time derivative of J_b along ``r_dot``: ``sum_j dJ_b/dr_j r_dot_j``: ``(..., 3, 3)``.

    ``J_b_dot = alpha_dot I - beta_dot [r] - beta [r_dot] + gamma_dot r r^T
    + gamma (r_dot r^T + r r_dot^T)``; ``J_b_dot r_dot`` is eq. 40.
    """
    r, rd = _bcast(_vec(r, "r"), _vec(r_dot, "r_dot"))
    return _jdot(r, rd, -1.0)


def J_s_dot(r, r_dot):
    """Time derivative of J_s along ``r_dot`` (``J_s_dot r_dot`` is eq. 43): ``(..., 3, 3)``."""
    r, rd = _bcast(_vec(r, "r"), _vec(r_dot, "r_dot"))
    return _jdot(r, rd, 1.0)


def _gdot(r, rd, sign, what):
    th, t = _angle(r)
    b = _f("beta", th, t)
    _check_det(b, th, what)
    g = _f("gamma", th, t)
    s = _dot(r, rd)
    d1, z1 = -g / (2.0 * b), _f("q", th, t) / (2.0 * b)
    zeta = -_f("b1", th, t) / (2.0 * b)
    # delta_dot I + sign [r_dot]/2 + zeta_dot r r^T + zeta (r_dot r^T + r r_dot^T)
    out = _mat(r, d1 * s, 0.0, z1 * s) + (0.5 * sign) * so3.hat(rd)
    zz = zeta if isinstance(zeta, float) else zeta[..., None, None]
    return out + zz * (rd[..., :, None] * r[..., None, :] + r[..., :, None] * rd[..., None, :])


def G_b_dot(r, r_dot):
    """Time derivative of G_b along ``r_dot``: ``(..., 3, 3)``.

    ``G_b_dot = delta_dot I + [r_dot]/2 + zeta_dot r r^T + zeta (r_dot r^T + r r_dot^T)``;
    ``G_b_dot w_b`` is eq. 41. Raises InvalidInputError near |r| = 2 pi k.
    """
    r, rd = _bcast(_vec(r, "r"), _vec(r_dot, "r_dot"))
    return _gdot(r, rd, 1.0, "G_b_dot")


def G_s_dot(r, r_dot):
    """Time derivative of G_s along ``r_dot``: ``(..., 3, 3)``.

    Eq. 44 rebuilt from eq. 16 (its printed brackets are garbled):
    ``G_s_dot w_s = delta_dot w_s - (1/2) r_dot x w_s + (zeta_dot <r, w_s> + zeta <r_dot, w_s>) r
    + zeta <r, w_s> r_dot``. Raises InvalidInputError near |r| = 2 pi k.
    """
    r, rd = _bcast(_vec(r, "r"), _vec(r_dot, "r_dot"))
    return _gdot(r, rd, -1.0, "G_s_dot")


# --------------------------------------------------------------------------------------
# second order: angular accelerations (eqs. 35, 39-44)
# --------------------------------------------------------------------------------------
def _acc(r, rd, rdd, sign):
    th, t = _angle(r)
    a, b, g = _abg(th, t)
    b1, g1 = _f("b1", th, t), _f("g1", th, t)
    s = _dot(r, rd)
    a_dot, b_dot, g_dot = (g - b) * s, b1 * s, g1 * s
    # eq. 35 (sign = -1 for the spatial form, eqs. 42-43)
    return (_col(a) * rdd + _col(g * s + a_dot) * rd
            - sign * so3.cross(_col(b_dot) * rd + _col(b) * rdd, r)
            + _col(g_dot * s + g * (_dot(rd, rd) + _dot(r, rdd))) * r)


def body_acceleration(r, r_dot, r_ddot):
    """``w_b_dot = J_b r_ddot + J_b_dot r_dot`` (eq. 35 with eqs. 36-38, 40).

    ``r, r_dot, r_ddot: (..., 3) -> (..., 3)``.
    """
    r, rd, rdd = _bcast(_vec(r, "r"), _vec(r_dot, "r_dot"), _vec(r_ddot, "r_ddot"))
    return _acc(r, rd, rdd, -1.0)


def spatial_acceleration(r, r_dot, r_ddot):
    """``w_s_dot = J_s r_ddot + J_s_dot r_dot`` (eq. 43). ``(..., 3) -> (..., 3)``."""
    r, rd, rdd = _bcast(_vec(r, "r"), _vec(r_dot, "r_dot"), _vec(r_ddot, "r_ddot"))
    return _acc(r, rd, rdd, 1.0)


def _racc(r, w, wd, sign, what):
    th, t = _angle(r)
    a, b = _f("alpha", th, t), _f("beta", th, t)
    _check_det(b, th, what)
    g = _f("gamma", th, t)
    d, z = a / (2.0 * b), -_f("b1", th, t) / (2.0 * b)
    d1, z1 = -g / (2.0 * b), _f("q", th, t) / (2.0 * b)
    rw = _dot(r, w)
    rd = _col(d) * w + (0.5 * sign) * so3.cross(r, w) + _col(z * rw) * r  # eqs. 15/16
    s = _dot(r, rd)  # = <r, w> (eq. 18)
    return (_col(d1 * s) * w + _col(d) * wd
            + (0.5 * sign) * (so3.cross(rd, w) + so3.cross(r, wd))
            + _col(z1 * s * rw + z * (_dot(rd, w) + _dot(r, wd))) * r + _col(z * rw) * rd)


def rddot_from_body(r, w_b, w_b_dot):
    """``r_ddot = G_b w_b_dot + G_b_dot w_b`` (eq. 39; r_dot from eq. 15).

    ``r, w_b, w_b_dot: (..., 3) -> (..., 3)``. Raises InvalidInputError near |r| = 2 pi k.
    """
    r, w, wd = _bcast(_vec(r, "r"), _vec(w_b, "w_b"), _vec(w_b_dot, "w_b_dot"))
    return _racc(r, w, wd, 1.0, "rddot_from_body")


def rddot_from_spatial(r, w_s, w_s_dot):
    """``r_ddot = G_s w_s_dot + G_s_dot w_s`` (eq. 42; r_dot from eq. 16).

    ``r, w_s, w_s_dot: (..., 3) -> (..., 3)``. Raises InvalidInputError near |r| = 2 pi k.
    """
    r, w, wd = _bcast(_vec(r, "r"), _vec(w_s, "w_s"), _vec(w_s_dot, "w_s_dot"))
    return _racc(r, w, wd, -1.0, "rddot_from_spatial")


# --------------------------------------------------------------------------------------
# reparametrization (eqs. 66-78)
# --------------------------------------------------------------------------------------
Reparametrized = namedtuple("Reparametrized", "r r_dot r_ddot torque n")
Reparametrized.__doc__ = """Result of :func:`reparametrize`: the new r, r_dot, r_ddot and
torque (None where not given) and the integer chart shift n (theta' = theta + 2 pi n)."""

_TWO_PI = 2.0 * math.pi


def reparametrize(r, r_dot=None, r_ddot=None, torque=None):
    """Move r to the equivalent chart with |r'| <= pi, with its rates and torque.

    ``r' = eta r`` with ``eta = 1 + 2 pi n / theta`` and ``n = -ceil((theta/pi - 1)/2)``
    (eqs. 66-68; n = -1, eta = 1 - 2 pi/theta for pi < theta <= 3 pi; n = 0 and nothing
    changes for theta <= pi, so applying it twice changes nothing more). With
    ``c = 2 pi n``:

    * ``r_dot' = eta r_dot - c <r, r_dot>/theta^3 r`` (eq. 69),
    * ``r_ddot' = eta r_ddot - 2c <r, r_dot>/theta^3 r_dot
      - c ((|r_dot|^2 + <r, r_ddot>)/theta^3 - 3 <r, r_dot>^2/theta^5) r`` (eq. 70),
    * ``torque' = (torque + c <r, torque>/theta^3 r) / eta`` (eqs. 71-78; for n = -1 this is
      eq. 78: the generalized force dual to r_dot, so <torque', r_dot'> = <torque, r_dot>).

    The rotation exp(r) and the angular velocities are unchanged. Args are (..., 3) arrays
    (rates and torque broadcast with r) or None. The torque map is singular at theta = 2 pi k
    (eta = 0): InvalidInputError there.

    Returns: :class:`Reparametrized` (r, r_dot, r_ddot, torque, n) with n an int array (...).
    """
    r = _vec(r, "r")
    th = np.sqrt(_dot(r, r))
    n = -np.ceil((th / math.pi - 1.0) / 2.0)
    n = np.where(th > math.pi, n, 0.0)
    c = _TWO_PI * n
    moved = n != 0.0
    ths = np.where(moved, th, 1.0)
    eta = np.where(moved, (ths + c) / ths, 1.0)
    k3 = np.where(moved, c / ths ** 3, 0.0)  # c / theta^3 (0 where unchanged)
    out_r = eta[..., None] * r
    out_rd = out_rdd = out_tau = None
    if r_ddot is not None and r_dot is None:
        raise InvalidInputError("reparametrize: r_ddot needs r_dot too (eq. 70 uses both)")
    if r_dot is not None:
        rd = _vec(r_dot, "r_dot")
        s = _dot(r, rd)
        out_rd = eta[..., None] * rd - (k3 * s)[..., None] * r
        if r_ddot is not None:
            rdd = _vec(r_ddot, "r_ddot")
            k5 = np.where(moved, c / ths ** 5, 0.0)
            out_rdd = (eta[..., None] * rdd - (2.0 * k3 * s)[..., None] * rd
                       - (k3 * (_dot(rd, rd) + _dot(r, rdd)) - 3.0 * k5 * s * s)[..., None] * r)
    if torque is not None:
        tau = _vec(torque, "torque")
        if np.any(np.abs(eta) < 1e-9):
            raise InvalidInputError(
                f"reparametrize: the torque map is singular at |r| = 2 pi k (|r| = "
                f"{float(np.max(th)):.9g}); reparametrize before |r| gets this close to 2 pi")
        out_tau = (tau + (k3 * _dot(r, tau))[..., None] * r) / eta[..., None]
    nn = n.astype(int)
    return Reparametrized(out_r, out_rd, out_rdd, out_tau, int(nn) if nn.ndim == 0 else nn)


# --------------------------------------------------------------------------------------
# joint limits: reach cone (eqs. 50-61), elliptic cone, twist
# --------------------------------------------------------------------------------------
def _unit(axis, name):
    a = np.asarray(axis, dtype=float)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise InvalidInputError(f"{name} must be 3 finite numbers (x, y, z), got {a!r}")
    n = float(np.linalg.norm(a))
    if n < 1e-12:
        raise InvalidInputError(f"{name} has zero length; pass a direction such as (0, 0, 1)")
    return a / n


def _half_angle(phi, name, lo_open=False):
    phi = float(phi)
    if not math.isfinite(phi) or phi > math.pi or phi < 0.0 or (lo_open and phi == 0.0):
        rng = "(0, pi]" if lo_open else "[0, pi]"
        raise InvalidInputError(f"{name} must be an angle in {rng} radians, got {phi!r}")
    return phi


def reach_cone_value(r, axis, half_angle):
    """Reach-cone limit ``g(r) = <p, exp(r) p> - cos(phi)``, >= 0 inside (eqs. 50-52).

    Args:
        r: (..., 3) exponential coordinates of the joint rotation (child in parent).
        axis: (3,) cone axis p (normalized here), the direction that exp(r) carries.
        half_angle: phi in [0, pi] radians: the angle between p and exp(r) p may not exceed it.
    Returns:
        (...) ``cos(theta) + beta <r, p>^2 - cos(phi)`` (eq. 52).
    """
    r = _vec(r, "r")
    p = _unit(axis, "axis")
    phi = _half_angle(half_angle, "half_angle")
    th = np.sqrt(_dot(r, r))
    b = _f("beta", th, th * th)
    return np.cos(th) + b * _dot(r, p) ** 2 - math.cos(phi)


def reach_cone_gradient(r, axis, half_angle):
    """Gradient of :func:`reach_cone_value` with respect to r: (..., 3) (eqs. 58-60).

    ``grad g = 2 beta <r, p> p - ((beta^2 - alpha gamma) <r, p>^2 + alpha) r`` (eq. 60),
    evaluated as ``2 beta <r,p> p + (beta1 <r,p>^2 - alpha) r`` since
    ``beta^2 - alpha gamma = -(alpha - 2 beta)/theta^2``. ``half_angle`` is validated but
    does not enter.
    """
    r = _vec(r, "r")
    p = _unit(axis, "axis")
    _half_angle(half_angle, "half_angle")
    th = np.sqrt(_dot(r, r))
    t = th * th
    rp = _dot(r, p)
    b = _f("beta", th, t)
    return _col(2.0 * b * rp) * p + _col(_f("b1", th, t) * rp * rp - _f("alpha", th, t)) * r


def reach_cone_impulse_direction(r, axis, half_angle):
    """Direction of the repulsive limit impulse in r-space at the cone boundary (eq. 61).

    ``2 beta <r, p> p - (2 zeta (cos phi - cos theta) + alpha) r``: equal to
    :func:`reach_cone_gradient` where ``g(r) = 0`` (uses ``<r,p>^2 = (cos phi - cos theta)/beta``),
    pointing into the cone. Not normalized; the generalized impulse on the joint coordinates
    is a multiple of it. ``r: (..., 3) -> (..., 3)``. Raises near |r| = 2 pi k (zeta).
    """
    r = _vec(r, "r")
    p = _unit(axis, "axis")
    phi = _half_angle(half_angle, "half_angle")
    th = np.sqrt(_dot(r, r))
    t = th * th
    a, b = _f("alpha", th, t), _f("beta", th, t)
    _check_det(b, th, "reach_cone_impulse_direction (zeta)")
    z = -_f("b1", th, t) / (2.0 * b)
    return (_col(2.0 * b * _dot(r, p)) * p
            - _col(2.0 * z * (math.cos(phi) - np.cos(th)) + a) * r)


def _pprime_and_chain(r, p):
    """p' = R p and the map c -> grad_r <c, p'> = J_b^T (p x (R^T c)) (cf. eqs. 53-58)."""
    R = so3.exp(r)
    Jb = J_b(r)
    pp = R @ p

    def chain(c):
        v = so3.cross(p, np.einsum("...ji,...j->...i", R, c))
        return np.einsum("...ji,...j->...i", Jb, v)
    return pp, chain


def ellipse_frame(axis, ref_axis):
    """Unit frame ``(p, u, w)`` (three (3,) arrays) of an elliptic cone: p the normalized
    axis, u ``ref_axis`` made orthogonal to p and normalized, ``w = p x u``."""
    p = _unit(axis, "axis")
    u = _unit(ref_axis, "ref_axis")
    u = u - np.dot(u, p) * p
    nu = float(np.linalg.norm(u))
    if nu < 1e-9:
        raise InvalidInputError("ref_axis is parallel to axis; pass a direction orthogonal to "
                                "the cone axis (it is projected onto the plane normal to axis)")
    u = u / nu
    return p, u, so3.cross(p, u)


#: below this x^2 + y^2 the swing is treated as exactly pi (p' = -p) by the elliptic cone
_ANTIPODE_RHO2 = 1e-28


def _elliptic_parts(r, axis, ref_axis, half_angle_1, half_angle_2):
    r = _vec(r, "r")
    p, u, w = ellipse_frame(axis, ref_axis)
    A = math.sin(0.5 * _half_angle(half_angle_1, "half_angle_1", lo_open=True)) ** 2
    B = math.sin(0.5 * _half_angle(half_angle_2, "half_angle_2", lo_open=True)) ** 2
    pp, chain = _pprime_and_chain(r, p)
    x, y, z = pp @ u, pp @ w, pp @ p
    return x, y, z, A, B, u, w, p, chain


def elliptic_cone_value(r, axis, ref_axis, half_angle_1, half_angle_2):
    """Elliptic reach cone: >= 0 inside, 1 at the rest pose, 0 on the boundary.

    The swing of the cone axis p to ``p' = exp(r) p`` (angle s, tilted towards direction
    ``cos(psi) u + sin(psi) w`` with ``w = p x u``) is limited to the ellipse
    ``sin^2(s/2) (cos^2 psi / sin^2(phi1/2) + sin^2 psi / sin^2(phi2/2)) <= 1``: at most phi1
    towards +-u (a rotation about w) and phi2 towards +-w (a rotation about u). The value is
    ``1 - (x^2/A + y^2/B) / (2 (1 + z))`` with ``(x, y, z)`` the components of p' on
    ``(u, w, p)``, ``A = sin^2(phi1/2)``, ``B = sin^2(phi2/2)``. With phi1 = phi2 = phi it is
    ``reach_cone_value / (1 - cos phi)``. The twist about p does not enter.

    Args:
        r: (..., 3) exponential coordinates.
        axis: (3,) cone axis p. ref_axis: (3,) the direction u of half_angle_1 (projected
            orthogonal to p and normalized).
        half_angle_1, half_angle_2: in (0, pi] radians.
    Returns: (...).
    At the antipode (p' = -p to within 1e-14, i.e. ``x^2 + y^2 <= 1e-28``) the tilt direction
    is undefined and the value returned is the most negative one, ``1 - 1/min(A, B)``.
    """
    x, y, z, A, B, *_ = _elliptic_parts(r, axis, ref_axis, half_angle_1, half_angle_2)
    N = x * x / A + y * y / B
    rho2 = x * x + y * y
    front = z >= 0.0
    g_front = 1.0 - N / (2.0 * (1.0 + np.where(front, z, 0.0)))
    ok = rho2 > _ANTIPODE_RHO2
    safe = np.where(ok, rho2, 1.0)
    g_back = np.where(ok, 1.0 - (1.0 - z) * N / (2.0 * safe), 1.0 - 1.0 / min(A, B))
    return np.where(front, g_front, g_back)


def elliptic_cone_gradient(r, axis, ref_axis, half_angle_1, half_angle_2):
    """Gradient of :func:`elliptic_cone_value` with respect to r: ``(..., 3)``.

    ``grad = J_b^T (p x (R^T dg/dp'))`` (the chain rule of eqs. 53-58). Zero at the antipode (where the value has its minimum over the tilt circle, as eq. 58 is for the
    circular cone).
    """
    x, y, z, A, B, u, w, p, chain = _elliptic_parts(r, axis, ref_axis, half_angle_1,
                                                     half_angle_2)
    N = x * x / A + y * y / B
    rho2 = x * x + y * y
    front = z >= 0.0
    D = 2.0 * (1.0 + np.where(front, z, 0.0))
    gx_f, gy_f, gz_f = -2.0 * x / (A * D), -2.0 * y / (B * D), 2.0 * N / (D * D)
    ok = rho2 > _ANTIPODE_RHO2
    safe = np.where(ok, rho2, 1.0)
    k = np.where(ok, (1.0 - z) / safe, 0.0)
    gx_b = -k * x * (1.0 / A - N / safe)
    gy_b = -k * y * (1.0 / B - N / safe)
    gz_b = np.where(ok, N / (2.0 * safe), 0.0)
    gx, gy, gz = (np.where(front, f, b_) for f, b_ in ((gx_f, gx_b), (gy_f, gy_b), (gz_f, gz_b)))
    c = gx[..., None] * u + gy[..., None] * w + gz[..., None] * p
    return chain(c)


def _twist_parts(r, axis):
    r = _vec(r, "r")
    p = _unit(axis, "axis")
    th, t = _angle(r)
    sh = _f("sh", th, t)
    W = np.cos(0.5 * th)
    rp = _dot(r, p)
    Y = sh * rp
    den = W * W + Y * Y  # = cos^2(swing / 2)
    if np.any(den < 1e-24):
        raise InvalidInputError(
            "twist_angle: the twist about the axis is undefined when the swing is exactly pi "
            "(rotation by pi about an axis orthogonal to the cone axis); limit the swing first")
    return r, p, th, t, sh, W, Y, rp, den


def twist_angle(r, axis):
    """Twist angle about the cone axis p in [-pi, pi] (swing-twist decomposition).

    ``exp(r) = R_swing R_twist`` with ``R_twist = exp(tau p)`` applied first and R_swing about
    an axis orthogonal to p. From the unit quaternion ``(cos(theta/2), sin(theta/2)/theta r)``
    (sign chosen with non-negative scalar part): ``tau = 2 atan2(sin(theta/2)/theta <r, p>,
    cos(theta/2))``. ``r: (..., 3), axis: (3,) -> (...)``.
    Raises InvalidInputError where the swing is pi to within 2e-12 rad (tau undefined; the
    gradient grows like 1/cos(swing/2)).
    """
    r, p, th, t, sh, W, Y, rp, den = _twist_parts(r, axis)
    sgn = np.where(W < 0.0, -1.0, 1.0)
    return 2.0 * np.arctan2(sgn * Y, sgn * W)


def twist_gradient(r, axis):
    """Gradient of :func:`twist_angle` with respect to r: ``(..., 3)``.

    ``grad tau = 2 (W grad Y - Y grad W) / (W^2 + Y^2)`` with ``W = cos(theta/2)``,
    ``Y = sh <r, p>``, ``sh = sin(theta/2)/theta``, ``grad W = -(sh/2) r`` and
    ``grad Y = sh1 <r, p> r + sh p`` (``sh1 = (1/theta) d sh/d theta``, series near 0).
    """
    r, p, th, t, sh, W, Y, rp, den = _twist_parts(r, axis)
    sh1 = _f("sh1", th, t)
    gY = _col(sh1 * rp) * r + _col(sh) * p
    gW = _col(-0.5 * sh) * r
    return _col(2.0 / den) * (_col(W) * gY - _col(Y) * gW)
