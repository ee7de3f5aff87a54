"""OpenSim's functions and three of its joints (CustomJoint, ScapulothoracicJoint,
EllipsoidJoint) as core joints, evaluated by the rules OpenSim 4.6 and Simbody use.

Functions
---------
The scalar functions a ``TransformAxis`` of an OpenSim ``CustomJoint`` can hold, each with
``value(x)`` (also ``f(x)``), ``derivative(x, order)`` for ``order`` 1 or 2 (vectorised over
arrays of any shape), ``to_dict()`` and :func:`function_from_dict`:

* :class:`Constant` ``c``; :class:`LinearFunction` ``slope x + intercept``
  (``coefficients = [slope, intercept]``, OpenSim's order, ``SimTK::Function::Linear``);
* :class:`PolynomialFunction`: ``SimTK::Function::Polynomial``, coefficients from the highest
  power to the constant term, Horner's rule (``PolynomialFunction.h``);
* :class:`SimmSpline`: the Forsythe-Malcolm-Moler cubic spline of ``SimmSpline.cpp``, linear
  outside the knots;
* :class:`NaturalCubicSpline`: OpenSim registers the type name ``NaturalCubicSpline`` as an
  alias of ``SimmSpline`` (``RegisterTypes_osimCommon.cpp``: ``renameType("NaturalCubicSpline",
  "SimmSpline")``; the class was renamed in 2012 because it never had natural end
  conditions), so an ``.osim`` file's ``<NaturalCubicSpline>`` is evaluated as a SimmSpline;
  this class is that spline under its file name;
* :class:`PiecewiseLinearFunction` (``PiecewiseLinearFunction.cpp``): straight segments,
  extrapolated with the first / last segment's slope, second derivative 0;
* :class:`MultiplierFunction`: ``scale * f(x)`` and ``scale * f^(k)(x)``.

CustomJoint derivation
----------------------
Six axes ``a_1..a_6`` (unit), six functions, ``v_k = f_k(q[arg_k])`` (``f_k(0)`` for an axis
without a coordinate, which must be a Constant). Simbody's ``MobilizedBody::FunctionBased``
(``MobilizedBodyImpl.h``, ``calcMobilizerTransformFromQ``) builds

    ``R = R_1 R_2 R_3``, ``R_k = exp([a_k] v_k)`` (successive, body-fixed),
    ``p = v_4 a_4 + v_5 a_5 + v_6 a_6`` (in the parent joint frame F),

and ``G = [R, p; 0, 1]``. The body-frame twist ``(G^-1 dG)^vee = [R^T dR; R^T dp]``. With
``dR_k = [a_k] R_k dv_k``, ``R^T dR = [w_1] dv_1 + [w_2] dv_2 + [w_3] dv_3`` where

    ``w_3 = a_3``, ``w_2 = R_3^T a_2``, ``w_1 = R_3^T R_2^T a_1``.

Every joint in this module is such a rotation chain ``R(theta(q))`` with a translation
``p(q)`` in F, so with ``J_kj = d theta_k / d q_j`` the Jacobian is (:func:`_rotation_chain`,
:func:`_assemble`)

    ``S[:, j] = [W_j; R^T dp/dq_j]``, ``W_j = sum_k w_k J_kj``,

and, from ``d w_k / d theta_m = w_k x w_m`` for ``m > k`` (0 for ``m <= k``; differentiate
``R_m^T`` in ``w_k``) and ``d R^T / d q_i = -[W_i] R^T``,

    ``dW_j/dq_i = sum_k w_k d2theta_k/dq_i dq_j + sum_{k<m} (w_k x w_m) J_mi J_kj``,
    ``d(R^T dp/dq_j)/dq_i = R^T d2p/dq_i dq_j - W_i x (R^T dp/dq_j)``.

For the CustomJoint ``J_kj = f_k'(q_j) [arg_k = j]``, ``d2theta_k/dq_i dq_j =
f_k''(q_j) [arg_k = i = j]``, ``dp/dq_j = sum_{k >= 4, arg_k = j} f_k' a_k`` and
``d2p/dq_i dq_j = [i = j] sum_{k >= 4, arg_k = j} f_k'' a_k`` (chain rule through ``f'``,
``f''``). An axis whose function takes several coordinates (a
:class:`MultivariatePolynomialFunction`) contributes its gradient to ``J_k`` and its Hessian
to ``d2theta_k`` (or to ``dp``, ``d2p``) in the same sums.

EllipsoidJoint
--------------
Simbody's ``MobilizedBody::Ellipsoid`` (``RigidBodyNodeSpec_Ellipsoid.h``) with Euler angles,
which OpenSim uses for its coordinates: ``R = Rx(q0) Ry(q1) Rz(q2)`` (body-fixed X-Y-Z) and
``p = D n``, ``D = diag(a, b, c)``, ``n = R e_z`` (the child z axis, normal of the unit
sphere the ellipsoid is scaled from). Then ``dn/dq_j = R (W_j x e_z)`` and
``d2n/dq_i dq_j = R (W_i x (W_j x e_z) + dW_j/dq_i x e_z)``.

ScapulothoracicJoint
--------------------
OpenSim's ``ScapulothoracicJoint.cpp``: an Ellipsoid mobilizer turned by pi/2 about z (radii
swapped accordingly) followed by a pin about the winging axis. Closed form (as in
:class:`core.reference.opensim.ScapulothoracicSeth2019`): ``G = T1(q0, q1, q2) T2(q3)`` with

    ``T1 = [Ry(q0) Rx(-q1) Rz(q2), e]``, ``e = (rx sin q0 cos q1, ry sin q1, rz cos q0 cos q1)``,
    ``T2 = exp(xi q3)``, ``xi = [u; o x u]``, ``u = (-sin d, cos d, 0)``, ``o = (ox, oy, 0)``

(``T2`` rotates about ``u`` through ``o``). For such a product ``S = [Ad_{T2^-1} S1, xi]``,
``H[i][:, :3] = Ad_{T2^-1} H1[i]`` for ``i < 3``, ``H[3][:, j] = ad_{S_j} xi`` for ``j < 3``
and the last column of every ``H[i]`` is 0.

No source of OpenSim or Simbody is copied here; the formulas are rederived from the
mathematics those files implement.
"""

import math

import numpy as np

from ..checks import real_number, whole_number
from ..compiled import layout as L
from ..errors import InvalidInputError, NonFiniteError
from ..lie import se3, so3
from .family import GenericFamily
from .lower_pairs import ParamJoint, _limits, _limits_from_list, unit_axis

__all__ = ["Constant", "LinearFunction", "PolynomialFunction", "SimmSpline",
           "NaturalCubicSpline", "PiecewiseLinearFunction", "MultiplierFunction",
           "MultivariatePolynomialFunction",
           "function_from_dict", "finite_array", "CustomJoint", "CustomJointFamily",
           "ScapulothoracicJoint",
           "EllipsoidJoint", "TINY_NUMBER", "ROUNDOFF_ERROR", "COLLINEAR_TOL",
           "MAX_POLYNOMIAL_TERMS"]

#: OpenSim/Common/SimmMacros.h: knot spacings are clamped below by TINY_NUMBER, and an
#: abscissa within ROUNDOFF_ERROR of an end knot takes the end value (EQUAL_WITHIN_ERROR)
TINY_NUMBER = 1e-7
ROUNDOFF_ERROR = 2e-13
#: CustomJoint.cpp / MobilizedBodyImpl.h: two axes of the rotation (or of the translation)
#: triple with ``|a_i x a_j| < COLLINEAR_TOL`` (the axes as written) are refused
COLLINEAR_TOL = 1e-5
#: the most terms of a MultivariatePolynomialFunction (dimension 6 passes it at order 17),
#: checked before its terms are enumerated
MAX_POLYNOMIAL_TERMS = 10 ** 5

#: the compiled joint kind of :class:`CustomJointFamily`
KIND_CUSTOM = 4


def finite_array(x, name, shape_hint):
    """``x`` as a float array, or NonFiniteError if it holds NaN or inf."""
    a = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(a)):
        raise NonFiniteError(f"{name} contains NaN or infinite values; pass finite numbers "
                             f"{shape_hint}.")
    return a


def _order(order, kind):
    if order not in (1, 2) or isinstance(order, bool):
        raise InvalidInputError(f"{kind} derivative order must be 1 or 2, got {order!r}.")
    return order


# ----------------------------------------------------------------------------- functions


class Function:
    """An OpenSim function of one argument. Subclasses implement :meth:`value`,
    :meth:`derivative` and :meth:`to_dict`; ``f(x)`` is ``f.value(x)``."""

    def value(self, x):
        """``f(x)``: ``(...) -> (...)``."""
        raise NotImplementedError

    def derivative(self, x, order=1):
        """``f'(x)`` (order 1) or ``f''(x)`` (order 2): ``(...) -> (...)``."""
        raise NotImplementedError

    #: number of arguments (a coordinate each, on a CustomJoint axis)
    nargs = 1

    def __call__(self, x):
        return self.value(x)

    def at(self, x):
        """``(f, f', f'')`` at one finite float ``x`` as Python floats: the joints' scalar
        path, the same arithmetic as :meth:`value` and :meth:`derivative`."""
        raise NotImplementedError

    def to_dict(self):
        raise NotImplementedError

    def _arg(self, x):
        return finite_array(x, f"{type(self).__name__} argument", "(any shape)")

    def __eq__(self, other):
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    __hash__ = None

    def __repr__(self):
        d = self.to_dict()
        d.pop("type")
        return f"{type(self).__name__}({', '.join(sorted(d))})"


class Constant(Function):
    """OpenSim ``Constant``: ``f(x) = value``, every derivative 0 (``Constant.cpp``)."""

    def __init__(self, value=0.0):
        self.c = real_number(value, "Constant value")

    def value(self, x):
        return np.full(np.shape(self._arg(x)), self.c)

    def derivative(self, x, order=1):
        _order(order, "Constant")
        return np.zeros(np.shape(self._arg(x)))

    def at(self, x):
        return self.c, 0.0, 0.0

    def to_dict(self):
        return {"type": "Constant", "value": self.c}


class LinearFunction(Function):
    """OpenSim ``LinearFunction``: ``f(x) = slope x + intercept`` (``SimTK::Function::Linear``
    with coefficients ``[slope, intercept]``); ``f' = slope``, ``f'' = 0``."""

    def __init__(self, slope=1.0, intercept=0.0):
        self.slope = real_number(slope, "LinearFunction slope")
        self.intercept = real_number(intercept, "LinearFunction intercept")

    def value(self, x):
        return self.slope * self._arg(x) + self.intercept

    def derivative(self, x, order=1):
        x = self._arg(x)
        return np.full(np.shape(x), self.slope if _order(order, "LinearFunction") == 1 else 0.0)

    def at(self, x):
        return self.slope * x + self.intercept, self.slope, 0.0

    def to_dict(self):
        return {"type": "LinearFunction", "coefficients": [self.slope, self.intercept]}


class PolynomialFunction(Function):
    """OpenSim ``PolynomialFunction`` (``SimTK::Function::Polynomial``): ``coefficients: (m,)``
    from the highest power down to the constant term, ``f(x) = c_0 x^(m-1) + ... + c_{m-1}``,
    evaluated by Horner's rule; the k-th derivative multiplies ``c_i`` by its falling
    factorial ``(m-1-i)(m-2-i)...`` (0 when ``k > m-1``)."""

    def __init__(self, coefficients=(1.0,)):
        c = finite_array(coefficients, "PolynomialFunction coefficients", "(highest power first)")
        if c.ndim != 1 or c.size < 1:
            raise InvalidInputError("PolynomialFunction needs a flat list of at least one "
                                    f"coefficient (highest power first), got shape {c.shape}.")
        self.coefficients = c.copy()

    def _horner(self, x, order):
        n = self.coefficients.size - 1
        out = np.zeros(np.shape(x))
        for i in range(n - order + 1):
            coeff = self.coefficients[i]
            for j in range(order):
                coeff *= n - i - j
            out = out * x + coeff
        return out

    def value(self, x):
        return self._horner(self._arg(x), 0)

    def derivative(self, x, order=1):
        return self._horner(self._arg(x), _order(order, "PolynomialFunction"))

    def at(self, x):
        return tuple(float(self._horner(np.float64(x), k)) for k in (0, 1, 2))

    def to_dict(self):
        return {"type": "PolynomialFunction", "coefficients": self.coefficients.tolist()}


def _knots(x, y, kind):
    x = finite_array(x, f"{kind} x", "of shape (n,)")
    y = finite_array(y, f"{kind} y", "of shape (n,)")
    if x.ndim != 1 or y.shape != x.shape or x.size < 2:
        raise InvalidInputError(
            f"{kind} needs 1-D x and y of equal length >= 2; got shapes {x.shape} and "
            f"{y.shape}. Pass the knots as two flat arrays."
        )
    if np.any(np.diff(x) <= 0.0):
        raise InvalidInputError(
            f"{kind} x must be strictly increasing; sort the knots and remove duplicates."
        )
    return x.copy(), y.copy()


class _Knotted(Function):
    """A function of knots ``x: (n,)`` (strictly increasing, n >= 2) and values ``y: (n,)``.

    Its scalar :meth:`at` locates ``x`` as OpenSim does and asks the subclass for
    ``_inside(k, dx)`` (value and derivatives on segment ``k``) or ``_end(i)`` (value, slope
    and second derivative at end knot ``i``, continued linearly beyond it)."""

    def _segment(self, x):
        """Segment index ``k`` of each abscissa inside the knots by the bisection of
        SimmSpline::calcValue and PiecewiseLinearFunction::calcValue: from ``(i, j) = (0, n)``, ``k = (i + j) // 2``;
        ``x < x_k`` sets ``j = k``, ``x > x_{k+1}`` sets ``i = k``, else ``k`` is the answer
        (0 outside the knots, where the caller extrapolates)."""
        xk, n = self.x, self.x.size
        i = np.zeros(x.shape, dtype=int)
        j = np.full(x.shape, n)
        k = np.zeros(x.shape, dtype=int)
        todo = (x >= xk[0]) & (x <= xk[-1])
        while np.any(todo):
            m = (i + j) // 2
            left = x < xk[m]
            right = ~left & (x > xk[np.minimum(m + 1, n - 1)])
            j = np.where(todo & left, m, j)
            i = np.where(todo & right, m, i)
            found = todo & ~left & ~right
            k = np.where(found, m, k)
            todo &= ~found
        return np.minimum(k, n - 2)

    def _segment_at(self, x):
        """:meth:`_segment` for one float inside the knots (the same bisection)."""
        xk = self._xlist
        n = len(xk)
        i, j = 0, n
        while True:
            m = (i + j) // 2
            if x < xk[m]:
                j = m
            elif x > xk[min(m + 1, n - 1)]:
                i = m
            else:
                return min(m, n - 2)

    def _where(self, x):
        """``"below"``, ``"lo"`` (within ROUNDOFF_ERROR of the first knot), ``"hi"``,
        ``"above"`` or the segment index, for one float (as :meth:`_locate`)."""
        xk = self._xlist
        if x < xk[0]:
            return "below"
        if abs(x - xk[0]) <= ROUNDOFF_ERROR:
            return "lo"
        if x > xk[-1]:
            return "above"
        if abs(x - xk[-1]) <= ROUNDOFF_ERROR:
            return "hi"
        return self._segment_at(x)

    def at(self, x):
        k = self._where(x)
        if not isinstance(k, str):
            return self._inside(k, x - self._xlist[k])
        i = 0 if k in ("below", "lo") else -1
        y, b, d2 = self._end(i)
        if k in ("lo", "hi"):
            return y, b, d2
        return y + (x - self._xlist[i]) * b, b, 0.0     # linear beyond the end knot

    def _locate(self, x):
        """Interval index k (:meth:`_segment`) and masks below/above/at the ends (an
        abscissa within ROUNDOFF_ERROR of an end knot is 'at' it, as OpenSim's
        EQUAL_WITHIN_ERROR)."""
        xk = self.x
        k = self._segment(x)
        below = x < xk[0]
        above = x > xk[-1]
        at_lo = ~below & (np.abs(x - xk[0]) <= ROUNDOFF_ERROR)
        at_hi = ~above & ~at_lo & (np.abs(x - xk[-1]) <= ROUNDOFF_ERROR)
        return k, below, above, at_lo, at_hi

    def to_dict(self):
        return {"type": type(self).__name__, "x": self.x.tolist(), "y": self.y.tolist()}


class SimmSpline(_Knotted):
    """OpenSim's ``SimmSpline``: the Forsythe-Malcolm-Moler interpolating cubic spline.

    On ``[x_k, x_{k+1}]``: ``f(x) = y_k + b_k dx + c_k dx^2 + d_k dx^3`` with ``dx = x - x_k``.
    Interior knots are C2. End conditions (n > 3): the third derivative at each end equals that
    of the cubic through the four nearest knots (divided differences); n == 3 uses zero
    end rows, n == 2 is a straight line. Not a natural spline. Outside ``[x_0, x_{n-1}]`` the
    value is extrapolated *linearly* with the end slope ``b_0`` / ``b_{n-1}`` (so the second
    derivative is 0 there). Within ``ROUNDOFF_ERROR`` of an end knot the end value is returned.

    x: (n,) strictly increasing knot abscissae, n >= 2; y: (n,) ordinates.
    """

    def __init__(self, x, y):
        self.x, self.y = _knots(x, y, type(self).__name__)
        self.b, self.c, self.d = self._coefficients(self.x, self.y)
        self._xlist = self.x.tolist()
        self._table = list(zip(self.y.tolist(), self.b.tolist(), self.c.tolist(),
                               self.d.tolist()))

    @staticmethod
    def _coefficients(x, y):
        """FMM coefficients (b, c, d), each (n,), as in SimmSpline::calcCoefficients."""
        n = x.size
        h = np.maximum(TINY_NUMBER, np.diff(x))  # (n-1,) knot spacings
        if n == 2:
            slope = (y[1] - y[0]) / h[0]
            return np.full(2, slope), np.zeros(2), np.zeros(2)
        # Tridiagonal system A s = r for s_i = f''(x_i)/6 (FMM's sigma); A has diagonal
        # `diag`, symmetric off-diagonal h.
        delta = (y[1:] - y[:-1]) / h  # (n-1,) first divided differences
        diag = np.empty(n)
        rhs = np.zeros(n)
        diag[1:-1] = 2.0 * (h[:-1] + h[1:])
        rhs[1:-1] = delta[1:] - delta[:-1]
        diag[0] = -h[0]
        diag[-1] = -h[-1]
        if n > 3:
            # third divided differences from the first and last four knots
            d31 = max(TINY_NUMBER, x[3] - x[1])
            d20 = max(TINY_NUMBER, x[2] - x[0])
            d30 = max(TINY_NUMBER, x[3] - x[0])
            e1 = max(TINY_NUMBER, x[-1] - x[-3])
            e2 = max(TINY_NUMBER, x[-2] - x[-4])
            e3 = max(TINY_NUMBER, x[-1] - x[-4])
            rhs[0] = (rhs[2] / d31 - rhs[1] / d20) * h[0] * h[0] / d30
            rhs[-1] = -(rhs[-2] / e1 - rhs[-3] / e2) * h[-1] * h[-1] / e3
        # Thomas algorithm (no pivoting), in the same elimination order as OpenSim.
        for i in range(1, n):
            t = h[i - 1] / diag[i - 1]
            diag[i] -= t * h[i - 1]
            rhs[i] -= t * rhs[i - 1]
        s = np.empty(n)
        s[-1] = rhs[-1] / diag[-1]
        for i in range(n - 2, -1, -1):
            s[i] = (rhs[i] - h[i] * s[i + 1]) / diag[i]
        b = np.empty(n)
        c = 3.0 * s
        d = np.empty(n)
        b[:-1] = delta - h * (s[1:] + 2.0 * s[:-1])
        b[-1] = delta[-1] + h[-1] * (s[-2] + 2.0 * s[-1])
        d[:-1] = (s[1:] - s[:-1]) / h
        d[-1] = d[-2]
        return b, c, d

    def value(self, x):
        """Value f(x). ``x: (...) -> (...)``; linear extrapolation outside the knots."""
        x = self._arg(x)
        k, below, above, at_lo, at_hi = self._locate(x)
        dx = x - self.x[k]
        f = self.y[k] + dx * (self.b[k] + dx * (self.c[k] + dx * self.d[k]))
        f = np.where(below, self.y[0] + (x - self.x[0]) * self.b[0], f)
        f = np.where(above, self.y[-1] + (x - self.x[-1]) * self.b[-1], f)
        f = np.where(at_lo, self.y[0], f)
        f = np.where(at_hi, self.y[-1], f)
        return f

    def derivative(self, x, order=1):
        """df/dx (order 1) or d2f/dx2 (order 2), as SimmSpline::calcDerivative. ``(...) -> (...)``.

        Outside the knots: end slope (order 1) and 0 (order 2).
        """
        _order(order, type(self).__name__)
        x = self._arg(x)
        k, below, above, at_lo, at_hi = self._locate(x)
        dx = x - self.x[k]
        if order == 1:
            f = self.b[k] + dx * (2.0 * self.c[k] + 3.0 * dx * self.d[k])
            f = np.where(below | at_lo, self.b[0], f)
            f = np.where(above | at_hi, self.b[-1], f)
        else:
            f = 2.0 * self.c[k] + 6.0 * dx * self.d[k]
            f = np.where(at_lo, 2.0 * self.c[0], f)
            f = np.where(at_hi, 2.0 * self.c[-1], f)
            f = np.where(below | above, 0.0, f)
        return f

    def _end(self, i):
        y, b, c, _ = self._table[i]
        return y, b, 2.0 * c

    def _inside(self, k, dx):
        y, b, c, d = self._table[k]
        return (y + dx * (b + dx * (c + dx * d)), b + dx * (2.0 * c + 3.0 * dx * d),
                2.0 * c + 6.0 * dx * d)


class NaturalCubicSpline(SimmSpline):
    """The ``NaturalCubicSpline`` of ``.osim`` files: OpenSim 4.6 reads it as a
    :class:`SimmSpline` (type alias in ``RegisterTypes_osimCommon.cpp``), so it is the same
    FMM spline with FMM end conditions and linear extrapolation, not a spline with zero end
    curvature. ``to_dict`` keeps the file's type name."""


class PiecewiseLinearFunction(_Knotted):
    """OpenSim ``PiecewiseLinearFunction``: straight segments through ``(x_k, y_k)``.

    Slopes ``b_k = (y_{k+1} - y_k) / max(TINY_NUMBER, x_{k+1} - x_k)`` and
    ``b_{n-1} = b_{n-2}``. Below ``x_0``: ``y_0 + (x - x_0) b_0``; above ``x_{n-1}``:
    ``y_{n-1} + (x - x_{n-1}) b_{n-1}`` (linear extrapolation with the end segments' slopes);
    within ROUNDOFF_ERROR of an end knot the end value. ``f'`` is the segment's slope, ``f'' = 0``
    everywhere (OpenSim returns 0 for any derivative order > 1). The segment of an abscissa
    inside the knots is found by OpenSim's bisection (``_segment``), so at an interior knot
    the slope is the one OpenSim picks there.
    """

    def __init__(self, x, y):
        self.x, self.y = _knots(x, y, "PiecewiseLinearFunction")
        b = np.diff(self.y) / np.maximum(TINY_NUMBER, np.diff(self.x))
        self.b = np.append(b, b[-1])
        self._xlist = self.x.tolist()
        self._yb = list(zip(self.y.tolist(), self.b.tolist()))

    def _end(self, i):
        y, b = self._yb[i]
        return y, b, 0.0

    def _inside(self, k, dx):
        y, b = self._yb[k]
        return y + dx * b, b, 0.0

    def value(self, x):
        x = self._arg(x)
        k, below, above, at_lo, at_hi = self._locate(x)
        f = self.y[k] + (x - self.x[k]) * self.b[k]
        f = np.where(below, self.y[0] + (x - self.x[0]) * self.b[0], f)
        f = np.where(above, self.y[-1] + (x - self.x[-1]) * self.b[-1], f)
        f = np.where(at_lo, self.y[0], f)
        return np.where(at_hi, self.y[-1], f)

    def derivative(self, x, order=1):
        _order(order, "PiecewiseLinearFunction")
        x = self._arg(x)
        if order == 2:
            return np.zeros(np.shape(x))
        k, below, above, at_lo, at_hi = self._locate(x)
        f = np.where(below | at_lo, self.b[0], self.b[k])
        return np.where(above | at_hi, self.b[-1], f)


class MultiplierFunction(Function):
    """OpenSim ``MultiplierFunction``: ``scale * f(x)``, derivatives ``scale * f^(k)(x)``.

    ``function``: a function of this module or its dict (:func:`function_from_dict`).
    """

    def __init__(self, function, scale=1.0):
        self.function = function_from_dict(function) if isinstance(function, dict) else function
        if not isinstance(self.function, Function):
            raise InvalidInputError(f"MultiplierFunction function must be a function of "
                                    f"core.joints.opensim or its dict, got "
                                    f"{type(function).__name__}.")
        self.scale = real_number(scale, "MultiplierFunction scale")

    def value(self, x):
        return self.function.value(x) * self.scale

    def derivative(self, x, order=1):
        return self.function.derivative(x, _order(order, "MultiplierFunction")) * self.scale

    def at(self, x):
        f, d1, d2 = self.function.at(x)
        return f * self.scale, d1 * self.scale, d2 * self.scale

    def to_dict(self):
        return {"type": "MultiplierFunction", "scale": self.scale,
                "function": self.function.to_dict()}


def _monomials(X, exponents):
    """``prod_d X_d^(e_td)``: ``(..., dimension)`` with ``exponents (terms, dimension)`` ->
    ``(..., terms)``."""
    X = np.asarray(X, dtype=float)
    return np.prod(X[..., None, :] ** exponents, axis=-1)


class MultivariatePolynomialFunction(Function):
    """OpenSim ``MultivariatePolynomialFunction`` of ``dimension`` arguments (1..6): the
    polynomial ``sum_t c_t prod_d x_d^(e_td)`` over every monomial of total degree
    ``<= order``, in OpenSim's term order (``getTermValues``): the first argument's power
    outermost, ascending, the last argument's fastest (two arguments, order 2:
    ``1, y, y^2, x, x y, x^2``).

    A function of several arguments: :meth:`value` takes ``X: (..., dimension)``, and
    :meth:`at` one point ``(dimension,)`` giving ``(f, gradient (dimension,), Hessian
    (dimension, dimension))``. OpenSim 4.6 evaluates only its first derivatives; the Hessian
    here is exact.
    """

    def __init__(self, coefficients, dimension, order):
        self.dimension = whole_number(dimension, "MultivariatePolynomialFunction dimension",
                                      minimum=1, advice="pass the number of arguments (1..6)")
        self.order = whole_number(order, "MultivariatePolynomialFunction order", minimum=0,
                                  advice="pass the total degree of the polynomial")
        if self.dimension > 6:
            raise InvalidInputError(f"MultivariatePolynomialFunction takes at most 6 arguments "
                                    f"(OpenSim's limit), got dimension {self.dimension}.")
        c = finite_array(coefficients, "MultivariatePolynomialFunction coefficients",
                         "(one per term)")
        n_terms = math.comb(self.order + self.dimension, self.dimension)
        if n_terms > MAX_POLYNOMIAL_TERMS:
            raise InvalidInputError(
                f"MultivariatePolynomialFunction of dimension {self.dimension} and order "
                f"{self.order} has {n_terms} terms, more than the {MAX_POLYNOMIAL_TERMS} the "
                "reader evaluates: lower the order (a fit of order 6 or less is usual)")
        if c.shape != (n_terms,):
            raise InvalidInputError(
                f"MultivariatePolynomialFunction of dimension {self.dimension} and order "
                f"{self.order} has {n_terms} terms; got {c.size} coefficients.")
        self.exponents = np.array(self.terms(self.dimension, self.order), dtype=int).reshape(
            -1, self.dimension)
        self.coefficients = c.copy()

    @property
    def nargs(self):
        return self.dimension

    @staticmethod
    def terms(dimension, order):
        """The exponent tuples of the terms, in OpenSim's order."""
        if dimension == 0:
            return [()]
        return [(i, *rest) for i in range(order + 1)
                for rest in MultivariatePolynomialFunction.terms(dimension - 1, order - i)]

    def monomials(self, X):
        """Term values ``(..., dimension) -> (..., terms)``."""
        return _monomials(X, self.exponents)

    @classmethod
    def terms_of(cls, X, order):
        """Term values of the polynomials of total degree ``<= order`` in the arguments
        ``X: (..., dimension)`` (the least-squares basis of a fit), OpenSim's order."""
        X = np.asarray(X, dtype=float)
        d = X.shape[-1]
        return _monomials(X, np.array(cls.terms(d, order), dtype=int).reshape(-1, d))

    def value(self, X):
        X = finite_array(X, "MultivariatePolynomialFunction argument", "(..., dimension)")
        if X.shape[-1:] != (self.dimension,):
            raise InvalidInputError(f"MultivariatePolynomialFunction arguments must end in "
                                    f"{self.dimension} values, got shape {X.shape}.")
        return self.monomials(X) @ self.coefficients

    def derivative(self, x, order=1):
        raise InvalidInputError("MultivariatePolynomialFunction has several arguments: use "
                                "at(x) for its gradient and Hessian.")

    def at(self, x):
        x = np.asarray(x, dtype=float)
        e, c = self.exponents, self.coefficients
        f = float(np.prod(x ** e, axis=1) @ c)
        grad = np.empty(self.dimension)
        hess = np.empty((self.dimension, self.dimension))
        for a in range(self.dimension):
            ea = e.copy()
            ka = ea[:, a].astype(float)
            ea[:, a] = np.maximum(ea[:, a] - 1, 0)
            grad[a] = (ka * np.prod(x ** ea, axis=1)) @ c
            for b in range(a, self.dimension):
                eb = ea.copy()
                kb = eb[:, b].astype(float) if b != a else (ka - 1.0)
                eb[:, b] = np.maximum(eb[:, b] - 1, 0)
                hess[a, b] = hess[b, a] = (ka * kb * np.prod(x ** eb, axis=1)) @ c
        return f, grad, hess

    def to_dict(self):
        return {"type": "MultivariatePolynomialFunction",
                "coefficients": self.coefficients.tolist(), "dimension": self.dimension,
                "order": self.order}


#: dict ``"type"`` -> (class, constructor arguments from the dict)
_FUNCTIONS = {
    "Constant": (Constant, lambda d: (d["value"],)),
    "LinearFunction": (LinearFunction, lambda d: _pair(d["coefficients"])),
    "PolynomialFunction": (PolynomialFunction, lambda d: (d["coefficients"],)),
    "SimmSpline": (SimmSpline, lambda d: (d["x"], d["y"])),
    "NaturalCubicSpline": (NaturalCubicSpline, lambda d: (d["x"], d["y"])),
    "PiecewiseLinearFunction": (PiecewiseLinearFunction, lambda d: (d["x"], d["y"])),
    "MultiplierFunction": (MultiplierFunction, lambda d: (d["function"], d["scale"])),
    "MultivariatePolynomialFunction": (
        MultivariatePolynomialFunction, lambda d: (d["coefficients"], d["dimension"], d["order"])),
}
_KEYS = {"Constant": {"value"}, "LinearFunction": {"coefficients"},
         "PolynomialFunction": {"coefficients"}, "SimmSpline": {"x", "y"},
         "NaturalCubicSpline": {"x", "y"}, "PiecewiseLinearFunction": {"x", "y"},
         "MultiplierFunction": {"function", "scale"},
         "MultivariatePolynomialFunction": {"coefficients", "dimension", "order"}}


def _pair(coefficients):
    c = finite_array(coefficients, "LinearFunction coefficients", "[slope, intercept]")
    if c.shape != (2,):
        raise InvalidInputError(f"LinearFunction coefficients must be [slope, intercept], got "
                                f"{np.asarray(coefficients).tolist()!r}.")
    return float(c[0]), float(c[1])


def function_from_dict(d):
    """Rebuild a function from ``{"type": <OpenSim class name>, ...}`` (its ``to_dict()``).

    Raises InvalidInputError for a non-dict, an unknown type, or missing / unexpected keys.
    """
    kind = d.get("type") if isinstance(d, dict) else None
    if kind not in _FUNCTIONS:
        what = (f"unknown OpenSim function type {kind!r}" if isinstance(d, dict)
                else f"expected a dict, got a {type(d).__name__}")
        raise InvalidInputError(f"{what}; function_from_dict takes a dict with 'type' one of "
                                f"{sorted(_FUNCTIONS)} (a to_dict() output).")
    keys = set(d) - {"type"}
    if keys != _KEYS[kind]:
        raise InvalidInputError(f"{kind} dict has keys {sorted(keys)}; expected exactly "
                                f"{sorted(_KEYS[kind])} besides 'type'.")
    cls, args = _FUNCTIONS[kind]
    return cls(*args(d))


# ----------------------------------------------------------------------------- kinematics


def _axis_rotation(K, K2, angle):
    """``exp([a] angle) = I + sin [a] + (1 - cos) [a]^2`` for a unit axis with ``K = [a]``,
    ``K2 = [a]^2``."""
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * K2


def _rotation_chain(axes, theta, J, d2theta):
    """``R = exp([a_0] t_0) exp([a_1] t_1) exp([a_2] t_2)`` and its body-frame angular
    Jacobian (module docstring).

    axes: (3, 3) unit rows; theta: (3,); J: (3, nq) ``d theta_k/d q_j``;
    d2theta: (3, nq, nq) ``d2 theta_k / d q_i d q_j``.
    Returns ``R (3, 3)``, ``W (3, nq)`` and ``dW (nq, 3, nq)`` with ``dW[i][:, j] = dW_j/dq_i``.
    """
    R1, R2, R3 = (so3.exp(a * t) for a, t in zip(axes, theta))
    w = np.array([(R2 @ R3).T @ axes[0], R3.T @ axes[1], axes[2]])   # unit-rate columns
    cross = np.zeros((3, 3, 3))
    for k, m in ((0, 1), (0, 2), (1, 2)):
        cross[k, m] = np.cross(w[k], w[m])
    W = w.T @ J
    dW = np.einsum("kc,kij->icj", w, d2theta) + np.einsum("kmc,mi,kj->icj", cross, J, J)
    return R1 @ R2 @ R3, W, dW


def _assemble(R, p, W, dW, dp, d2p):
    """``(G, S, H)`` from the rotation chain (``R``, ``W``, ``dW``) and the translation
    ``p: (3,)`` in F with ``dp: (3, nq)``, ``d2p: (nq, 3, nq)`` (``d2p[i][:, j]``)."""
    nq = W.shape[1]
    G = np.eye(4)
    G[:3, :3] = R
    G[:3, 3] = p
    V = R.T @ dp
    S = np.concatenate([W, V])
    H = np.empty((nq, 6, nq))
    H[:, :3] = dW
    Wx = np.zeros((nq, 3, 3))                      # [W_i], so Wx @ V = W_i x V_j
    Wx[:, 0, 1], Wx[:, 0, 2], Wx[:, 1, 2] = -W[2], W[1], -W[0]
    Wx[:, 1, 0], Wx[:, 2, 0], Wx[:, 2, 1] = W[2], -W[1], W[0]
    H[:, 3:] = R.T @ d2p - Wx @ V
    return G, S, H


def _rotations(axes, thetas):
    """Batched chain ``thetas: (N, 3) -> (N, 3, 3)``."""
    R = so3.exp(thetas[:, 0, None] * axes[0])
    for k in (1, 2):
        R = R @ so3.exp(thetas[:, k, None] * axes[k])
    return R


class _OpenSimJoint(ParamJoint):
    """Limits as ParamJoint, plus an optional ``neutral`` configuration (OpenSim's
    coordinate default values)."""

    def _init_neutral(self, neutral):
        if neutral is None:
            self._neutral = np.zeros(self.nq)
        else:
            v = finite_array(neutral, f"{type(self).__name__} neutral", f"of shape ({self.nq},)")
            self._neutral = _limits(v, self.nq, "neutral", 0.0)

    def neutral(self):
        """The coordinates' default values ``(nq,)``."""
        return self._neutral.copy()

    def _params(self):
        return {"neutral": self._neutral.tolist()}

    def __repr__(self):
        return f"{type(self).__name__}(nq={self.nq})"


class CustomJoint(_OpenSimJoint):
    """OpenSim ``CustomJoint``: a SpatialTransform of six TransformAxis entries.

    ``G(q) = [R_1 R_2 R_3, v_4 a_4 + v_5 a_5 + v_6 a_6]`` with ``R_k = exp([a_k] v_k)``,
    ``v_k = f_k(q[arguments[k]])`` (derivation of S and H in the module docstring). In a
    model the joints are evaluated by :class:`CustomJointFamily` (compiled on the numba
    backend when every function has one argument).

    Args:
        axes: (6, 3) rotation1..3 then translation1..3 directions (normalized here). As in
            OpenSim (``CustomJoint::extendFinalizeFromProperties``), each triple must be
            pairwise non-collinear, ``|a_i x a_j| >= COLLINEAR_TOL`` for the axes as given;
            a zero axis therefore is refused too.
        functions: 6 functions of this module (or their dicts).
        arguments: 6 entries, each None (no coordinate; the function must be a Constant),
            the index in ``[0, nq)`` of the coordinate the function is applied to, or for a
            :class:`MultivariatePolynomialFunction` a list of ``dimension`` distinct indices
            (its arguments in order).
        nq: number of coordinates (>= 1).
        lower, upper: coordinate limits (number or ``(nq,)``; None for none).
        neutral: ``(nq,)`` default coordinate values (zeros if None).
    """

    def __init__(self, axes, functions, arguments, nq, lower=None, upper=None, neutral=None):
        self.nq = whole_number(nq, "CustomJoint nq", minimum=1,
                               advice="pass the number of the joint's coordinates")
        raw = finite_array(axes, "CustomJoint axes", "of shape (6, 3)")
        if raw.shape != (6, 3):
            raise InvalidInputError(f"CustomJoint axes must have shape (6, 3) (rotation1..3, "
                                    f"translation1..3), got {raw.shape}.")
        names = ("rotation", "translation")
        for start, name in zip((0, 3), names):
            for i, j in ((0, 1), (0, 2), (1, 2)):
                if np.linalg.norm(np.cross(raw[start + i], raw[start + j])) < COLLINEAR_TOL:
                    raise InvalidInputError(
                        f"CustomJoint {name}{i + 1} axis {raw[start + i].tolist()} and "
                        f"{name}{j + 1} axis {raw[start + j].tolist()} are zero or collinear "
                        f"(|a x b| < {COLLINEAR_TOL:g}), which OpenSim refuses; give the three "
                        f"{name} axes independent directions (an unused axis still needs one).")
        self.raw_axes = raw.copy()
        self.axes = np.array([unit_axis(a, f"CustomJoint axis {k}") for k, a in enumerate(raw)])
        if not isinstance(functions, (list, tuple)) or len(functions) != 6:
            raise InvalidInputError("CustomJoint functions must be a list of 6 functions (or "
                                    "their dicts), one per TransformAxis.")
        self.functions = [function_from_dict(f) if isinstance(f, dict) else f for f in functions]
        for k, f in enumerate(self.functions):
            if not isinstance(f, Function):
                raise InvalidInputError(f"CustomJoint function {k} is a {type(f).__name__}; "
                                        "pass a function of core.joints.opensim or its dict.")
        if not isinstance(arguments, (list, tuple)) or len(arguments) != 6:
            raise InvalidInputError("CustomJoint arguments must be a list of 6 entries, each "
                                    "None, a coordinate index or (for a function of several "
                                    "arguments) a list of indices.")
        self.arguments = [self._argument(k, a, f)
                          for k, (a, f) in enumerate(zip(arguments, self.functions))]
        self._init_limits(lower, upper)
        self._init_neutral(neutral)
        self._K = [so3.hat(a) for a in self.axes[:3]]
        self._K2 = [K @ K for K in self._K]

    def _argument(self, k, a, f):
        """Axis ``k``'s coordinates: None, an index, or a tuple of ``f.nargs`` indices."""
        if a is None:
            if not isinstance(f, Constant):
                raise InvalidInputError(
                    f"CustomJoint axis {k} has no coordinate but a {type(f).__name__}; "
                    "only a Constant can go without a coordinate: give the axis a "
                    "coordinate index or make its function a Constant.")
            return None
        many = isinstance(a, (list, tuple, np.ndarray))
        idx = [whole_number(i, f"CustomJoint argument {k}", minimum=0,
                            advice=f"pass None or coordinate indices below nq = {self.nq}")
               for i in (a if many else [a])]
        if any(i >= self.nq for i in idx) or len(set(idx)) != len(idx):
            raise InvalidInputError(f"CustomJoint argument {k} = {a} is not a coordinate "
                                    f"index in [0, {self.nq}) (or repeats one); raise nq or "
                                    "fix the index.")
        if len(idx) != f.nargs or (many and f.nargs == 1):
            raise InvalidInputError(
                f"CustomJoint axis {k}: its {type(f).__name__} takes {f.nargs} argument(s) "
                f"but the axis names {a!r}; give one index for a function of one argument, a "
                "list of as many indices as the function's dimension otherwise.")
        return tuple(idx) if many else idx[0]

    def _params(self):
        d = {"axes": self.raw_axes.tolist(), "functions": [f.to_dict() for f in self.functions],
             "arguments": [list(a) if isinstance(a, tuple) else a for a in self.arguments],
             "nq": self.nq}
        d.update(super()._params())
        return d

    @classmethod
    def from_dict(cls, d):
        """Inverse of :meth:`to_dict`."""
        if isinstance(d, dict) and d.get("type", cls.__name__) == cls.__name__:
            d = dict(d)
            d["lower"] = _limits_from_list(d.get("lower"), -np.inf)
            d["upper"] = _limits_from_list(d.get("upper"), np.inf)
            kw = {k: v for k, v in d.items() if k != "type"}
            try:
                return cls(**kw)
            except TypeError as exc:
                raise InvalidInputError(f"{cls.__name__}.from_dict: bad keys in {sorted(d)} "
                                        f"({exc}); write the dict with to_dict()") from None
        return super().from_dict(d)

    def _derivatives(self, q):
        """Per axis ``(value, {j: dv/dq_j}, {(i, j): d2v/dq_i dq_j})`` at ``q`` (a list)."""
        out = []
        for fn, a in zip(self.functions, self.arguments):
            if a is None:
                out.append((fn.at(0.0)[0], {}, {}))
            elif isinstance(a, tuple):
                f, g, h = fn.at([q[i] for i in a])
                out.append((f, {i: g[r] for r, i in enumerate(a)},
                            {(i, j): h[r, c] for r, i in enumerate(a) for c, j in enumerate(a)}))
            else:
                f, d1, d2 = fn.at(q[a])
                out.append((f, {a: d1}, {(a, a): d2}))
        return out

    def evaluate(self, q):
        """``(G (4, 4), S (6, nq), H (nq, 6, nq))`` at ``q: (nq,)``.

        The module docstring's sums, term by term over the six axes (each moves one
        coordinate, or a few for a function of several): scalar function values from
        :meth:`Function.at`, 3-vectors as small arrays.
        """
        return _assemble(*self._sums(q, True))

    def motion(self, q):
        """``(G, S)`` of :meth:`evaluate` without its Hessian, by the same sums."""
        R, p, W, _, dp, _ = self._sums(q, False)
        G = np.eye(4)
        G[:3, :3] = R
        G[:3, 3] = p
        return G, np.concatenate([W, R.T @ dp])

    def _sums(self, q, second):
        """``(R, p, W, dW, dp, d2p)`` for :func:`_assemble` (``dW``, ``d2p`` None unless
        ``second``)."""
        q = self.check_q(q).tolist()
        nq = self.nq
        axis = self._derivatives(q)
        R1, R2, R3 = (_axis_rotation(K, K2, v[0])
                      for K, K2, v in zip(self._K, self._K2, axis[:3]))
        R23 = R2 @ R3
        R = R1 @ R23
        a = self.axes
        w = (R23.T @ a[0], R3.T @ a[1], a[2])          # the unit-rate angular columns
        W = np.zeros((3, nq))
        dp = np.zeros((3, nq))
        dW = np.zeros((nq, 3, nq)) if second else None
        d2p = np.zeros((nq, 3, nq)) if second else None
        p = np.zeros(3)
        for k in range(3):
            _, J, D = axis[k]
            for j, d1 in J.items():
                W[:, j] += d1 * w[k]
            if not second:
                continue
            for (i, j), d2 in D.items():
                dW[i, :, j] += d2 * w[k]
            for m in range(k + 1, 3):
                Jm = axis[m][1]
                if J and Jm:
                    c = so3.cross(w[k], w[m])
                    for i, dm in Jm.items():
                        for j, dk in J.items():
                            dW[i, :, j] += (dm * dk) * c
        for k in range(3, 6):
            v, J, D = axis[k]
            p += v * a[k]
            for j, d1 in J.items():
                dp[:, j] += d1 * a[k]
            if second:
                for (i, j), d2 in D.items():
                    d2p[i, :, j] += d2 * a[k]
        return R, p, W, dW, dp, d2p

    def transform(self, q):
        """``G(q)`` alone (the axis values, no derivatives): ``(4, 4)``."""
        q = self.check_q(q).tolist()
        v = [fn.at(0.0 if a is None else
                   [q[i] for i in a] if isinstance(a, tuple) else q[a])[0]
             for fn, a in zip(self.functions, self.arguments)]
        R1, R2, R3 = (_axis_rotation(K, K2, t) for K, K2, t in zip(self._K, self._K2, v[:3]))
        G = np.eye(4)
        G[:3, :3] = R1 @ (R2 @ R3)                   # as evaluate() groups it
        G[:3, 3] = v[3] * self.axes[3] + v[4] * self.axes[4] + v[5] * self.axes[5]
        return G

    def transforms(self, qs):
        """Batched ``G``: ``qs: (N, nq) -> (N, 4, 4)``."""
        qs = self.check_qs(qs)
        cols = []
        for fn, a in zip(self.functions, self.arguments):
            if a is None:
                cols.append(np.full(len(qs), fn.at(0.0)[0]))
            elif isinstance(a, tuple):
                cols.append(fn.value(qs[:, list(a)]))
            else:
                cols.append(fn.value(qs[:, a]))
        v = np.stack(cols, axis=-1)
        return se3.from_rp(_rotations(self.axes[:3], v[:, :3]), v[:, 3:] @ self.axes[3:])


def _kernel_function(f):
    """``(kind FN_*, count, data, scale)`` of ``f`` for the compiled CustomJoint (layout in
    :mod:`core.compiled.layout`), MultiplierFunctions folded into ``scale``; None for a
    function the kernel does not evaluate (a MultivariatePolynomialFunction)."""
    scale = 1.0
    while isinstance(f, MultiplierFunction):
        scale *= f.scale
        f = f.function
    if isinstance(f, Constant):
        return L.FN_CONSTANT, 1, [f.c], scale
    if isinstance(f, LinearFunction):
        return L.FN_LINEAR, 2, [f.slope, f.intercept], scale
    if isinstance(f, PolynomialFunction):
        m = f.coefficients.size
        orders = [f.coefficients.tolist()]
        for order in (1, 2):               # the factors PolynomialFunction._horner applies
            cs = []
            for i in range(m - order):
                c = float(f.coefficients[i])
                for j in range(order):
                    c *= m - 1 - i - j
                cs.append(c)
            orders.append(cs)
        return L.FN_POLYNOMIAL, m, orders[0] + orders[1] + orders[2], scale
    if isinstance(f, SimmSpline):
        return L.FN_SPLINE, f.x.size, np.concatenate([f.x, f.y, f.b, f.c, f.d]), scale
    if isinstance(f, PiecewiseLinearFunction):         # a spline with c = d = 0
        z = np.zeros(f.x.size)
        return L.FN_SPLINE, f.x.size, np.concatenate([f.x, f.y, f.b, z, z]), scale
    return None


class CustomJointFamily(GenericFamily):
    """The :class:`CustomJoint` objects of a model whose functions all have one argument:
    in Python one at a time through :meth:`CustomJoint.evaluate` (as
    :class:`~core.joints.family.GenericFamily`), in the compiled kernels from each joint's
    axis and function tables (:meth:`kernel_params`, :mod:`core.compiled.kernels.custom`). A joint
    with a :class:`MultivariatePolynomialFunction` (or more than 6 coordinates) goes to
    GenericFamily."""

    kernel_kind = KIND_CUSTOM
    kernel_large = True

    @classmethod
    def accepts(cls, joint):
        return joint.nq <= 6 and all(_kernel_function(f) is not None for f in joint.functions)

    def kernel_params(self, k):
        """The ``k``-th joint's tables: axes, per-axis headers and the functions' data
        (``CJ_*``, ``FN_*`` in :mod:`core.compiled.layout`)."""
        joint = self.joints[k]
        head = np.zeros((6, L.CJ_PER))
        data = []
        at = L.CJ_HEAD + 6 * L.CJ_PER
        for a, (fn, arg) in enumerate(zip(joint.functions, joint.arguments)):
            kind, count, values, scale = _kernel_function(fn)
            head[a] = -1.0 if arg is None else arg, scale, kind, count, at
            data.append(np.asarray(values, dtype=float))
            at += data[-1].size
        return np.concatenate([joint.axes.ravel(), head.ravel()] + data), (0, 0)


class EllipsoidJoint(_OpenSimJoint):
    """OpenSim ``EllipsoidJoint`` (Simbody ``MobilizedBody::Ellipsoid`` with Euler angles):
    ``R = Rx(q0) Ry(q1) Rz(q2)``, ``p = diag(radii) R e_z`` (module docstring).

    radii: (3,) positive semi-axes ``(a, b, c)`` along the parent joint frame's x, y, z.
    """

    nq = 3
    _AXES = np.eye(3)

    def __init__(self, radii=(1.0, 1.0, 1.0), lower=None, upper=None, neutral=None):
        r = finite_array(radii, "EllipsoidJoint radii", "of shape (3,)")
        if r.shape != (3,) or np.any(r <= 0.0):
            raise InvalidInputError(f"EllipsoidJoint radii must be 3 positive numbers (a, b, c) "
                                    f"in metres, got {r.tolist()!r}.")
        self.radii = r.copy()
        self._init_limits(lower, upper)
        self._init_neutral(neutral)

    def _params(self):
        d = {"radii": self.radii.tolist()}
        d.update(super()._params())
        return d

    def evaluate(self, q):
        q = self.check_q(q)
        R, W, dW = _rotation_chain(self._AXES, q, np.eye(3), np.zeros((3, 3, 3)))
        ez = np.array([0.0, 0.0, 1.0])
        Wxz = np.cross(W.T, ez)                                  # (nq, 3): W_j x e_z
        dn = R @ Wxz.T                                           # (3, nq)
        inner = np.cross(W.T[:, None, :], Wxz[None, :, :]) + np.cross(
            np.swapaxes(dW, 1, 2), ez)                           # (i, j, 3)
        d2n = np.einsum("ab,ijb->iaj", R, inner)
        return _assemble(R, self.radii * R[:, 2], W, dW, self.radii[:, None] * dn,
                         self.radii[None, :, None] * d2n)

    def transforms(self, qs):
        R = _rotations(self._AXES, self.check_qs(qs))
        return se3.from_rp(R, self.radii * R[:, :, 2])


class ScapulothoracicJoint(_OpenSimJoint):
    """OpenSim ``ScapulothoracicJoint``: ``q = (abduction, elevation, upward_rotation,
    winging)`` (rad); ``G = T1(q0, q1, q2) T2(q3)`` (module docstring).

    Args:
        radii: (3,) positive thoracic ellipsoid radii ``(rx, ry, rz)`` in the parent joint
            frame (OpenSim's ``thoracic_ellipsoid_radii_x_y_z``).
        winging_origin: (2,) ``(ox, oy)`` of the winging axis (``scapula_winging_axis_origin``).
        winging_direction: angle ``d`` (rad) of the winging axis ``u = (-sin d, cos d, 0)``.
    """

    nq = 4
    _AXES = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])

    def __init__(self, radii, winging_origin=(0.0, 0.0), winging_direction=0.0, lower=None,
                 upper=None, neutral=None):
        r = finite_array(radii, "ScapulothoracicJoint radii", "of shape (3,)")
        if r.shape != (3,) or np.any(r <= 0.0):
            raise InvalidInputError(f"ScapulothoracicJoint radii must be 3 positive numbers "
                                    f"(rx, ry, rz) in metres, got {r.tolist()!r}.")
        o = finite_array(winging_origin, "ScapulothoracicJoint winging_origin", "of shape (2,)")
        if o.shape != (2,):
            raise InvalidInputError(f"ScapulothoracicJoint winging_origin must be 2 numbers "
                                    f"(ox, oy), got shape {o.shape}.")
        self.radii = r.copy()
        self.winging_origin = o.copy()
        self.winging_direction = real_number(winging_direction,
                                             "ScapulothoracicJoint winging_direction")
        d = self.winging_direction
        self._u = np.array([-math.sin(d), math.cos(d), 0.0])
        self._o = np.array([o[0], o[1], 0.0])
        #: the winging screw: rotation about u through o
        self.screw = np.concatenate([self._u, np.cross(self._o, self._u)])
        self._init_limits(lower, upper)
        self._init_neutral(neutral)

    def _params(self):
        d = {"radii": self.radii.tolist(), "winging_origin": self.winging_origin.tolist(),
             "winging_direction": self.winging_direction}
        d.update(super()._params())
        return d

    def _T2(self, q3):
        Rw = so3.exp(self._u * q3)
        return se3.from_rp(Rw, self._o - Rw @ self._o)

    def evaluate(self, q):
        q = self.check_q(q)
        rx, ry, rz = self.radii
        s0, c0, s1, c1 = math.sin(q[0]), math.cos(q[0]), math.sin(q[1]), math.cos(q[1])
        R, W, dW = _rotation_chain(self._AXES, q[:3], np.eye(3), np.zeros((3, 3, 3)))
        e = np.array([rx * s0 * c1, ry * s1, rz * c0 * c1])
        de = np.array([[rx * c0 * c1, -rx * s0 * s1, 0.0],
                       [0.0, ry * c1, 0.0],
                       [-rz * s0 * c1, -rz * c0 * s1, 0.0]])
        d2e = np.zeros((3, 3, 3))                                # d2e[i][:, j]
        d2e[0, :, 0] = [-rx * s0 * c1, 0.0, -rz * c0 * c1]
        d2e[0, :, 1] = d2e[1, :, 0] = [-rx * c0 * s1, 0.0, rz * s0 * s1]
        d2e[1, :, 1] = [-rx * s0 * c1, -ry * s1, -rz * c0 * c1]
        G1, S1, H1 = _assemble(R, e, W, dW, de, d2e)
        T2 = self._T2(q[3])
        A = se3.Ad_inv(T2)
        S = np.empty((6, 4))
        S[:, :3] = A @ S1
        S[:, 3] = self.screw
        H = np.zeros((4, 6, 4))
        H[:3, :, :3] = A @ H1
        H[3, :, :3] = (se3.ad(S[:, :3].T) @ self.screw).T
        return G1 @ T2, S, H

    def transforms(self, qs):
        qs = self.check_qs(qs)
        rx, ry, rz = self.radii
        q0, q1 = qs[:, 0], qs[:, 1]
        e = np.stack([rx * np.sin(q0) * np.cos(q1), ry * np.sin(q1),
                      rz * np.cos(q0) * np.cos(q1)], axis=1)
        Rw = so3.exp(qs[:, 3, None] * self._u)
        T2 = se3.from_rp(Rw, self._o - Rw @ self._o)
        return se3.from_rp(_rotations(self._AXES, qs[:, :3]), e) @ T2


CustomJoint.family = CustomJointFamily
