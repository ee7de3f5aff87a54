"""B-spline bases, cumulative bases and tensor-product bases, vectorized over parameter values.

Notation (seed 000 section 5, Kim et al. 1995). A knot vector ``t = (t_0, ..., t_{n+k-1})`` of
length ``n + k`` defines ``n`` B-spline basis functions ``B_{j,k}`` of order ``k`` (degree
``k - 1``); ``B_{j,k}`` is supported on ``[t_j, t_{j+k})``. The basis is a partition of unity on
the *domain* ``[t_{k-1}, t_n]``. Knots may repeat (at most ``k`` times); a knot of multiplicity
``r`` lowers the continuity there to ``C^{k-1-r}``.

The cumulative basis (seed 000 eq. 22) is ``Bc_j(x) = sum_{l >= j} B_{l,k}(x)``: it is 0 for
``x <= t_j``, 1 for ``x >= t_{j+k-1}`` and rises monotonically in between; its derivative is
``(k - 1) / (t_{j+k-1} - t_j) * B_{j,k-1}(x)`` (eq. 23).

Evaluation uses the triangular Cox-de Boor scheme with derivatives (the classical "ndu" table),
written on arrays so that one call handles many parameter values. Outside the domain every
function continues the polynomial of the nearest end span (callers that need another
extrapolation, such as the spline joints, clamp first).
"""

from __future__ import annotations

import numpy as np

from .errors import InvalidInputError, NonFiniteError

__all__ = [
    "check_knots",
    "uniform_knots",
    "clamped_knots",
    "domain",
    "find_span",
    "basis_funs",
    "basis_matrix",
    "cumulative_basis",
    "span_polynomials",
    "tensor_basis",
]


def check_knots(knots, order, name="knots"):
    """Validate a knot vector for B-splines of ``order`` and return it as float64 ``(n + k,)``.

    Raises InvalidInputError unless: ``order`` is an integer >= 1; ``knots`` is 1-D, finite and
    non-decreasing; it has at least ``2 * order`` entries (so there are at least ``order`` basis
    functions); no knot repeats more than ``order`` times; and the domain
    ``[t_{k-1}, t_n]`` has positive length.
    """
    k = _check_order(order)
    try:
        t = np.asarray(knots, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a 1-D array of numbers ({exc}).") from None
    if t.ndim != 1:
        raise InvalidInputError(
            f"{name} must be a 1-D array of numbers; got shape {t.shape}. Pass one knot vector."
        )
    if not np.all(np.isfinite(t)):
        raise NonFiniteError(f"{name} contains NaN or inf; pass finite knot values.")
    if t.size < 2 * k:
        raise InvalidInputError(
            f"{name} has {t.size} entries but order {k} needs at least {2 * k} "
            f"(n + {k} knots for n >= {k} basis functions / control points). "
            "Add knots (and control points) or lower the order."
        )
    steps = np.diff(t)
    if np.any(steps < 0):
        i = int(np.argmax(steps < 0))
        raise InvalidInputError(
            f"{name} must be non-decreasing, but {name}[{i + 1}] = {t[i + 1]!r} < "
            f"{name}[{i}] = {t[i]!r}. Sort the knots."
        )
    # multiplicity: a run of more than k equal knots makes a basis function vanish identically
    ends = np.concatenate([np.flatnonzero(steps != 0), [t.size - 1]])  # last index of each run
    runs = np.diff(np.concatenate([[-1], ends]))
    if runs.max() > k:
        i = int(np.argmax(runs))
        raise InvalidInputError(
            f"{name} repeats the value {t[ends[i]]!r} {int(runs[i])} times; order {k} allows at "
            f"most {k}. Remove the extra copies.")
    n = t.size - k
    if not t[n] > t[k - 1]:
        raise InvalidInputError(
            f"{name} gives an empty domain [t_{k - 1}, t_{n}] = [{t[k - 1]!r}, {t[n]!r}]; "
            "spread the knots so that the domain has positive length."
        )
    return t


def _check_order(order):
    if isinstance(order, (bool, np.bool_)) or not isinstance(order, (int, np.integer)):
        raise InvalidInputError(f"order must be an integer >= 1 (4 = cubic); got {order!r}.")
    if order < 1:
        raise InvalidInputError(f"order must be >= 1 (4 = cubic); got {order}.")
    return int(order)


def uniform_knots(n_ctrl, order, start=0.0, spacing=1.0):
    """Uniform knot vector ``(n_ctrl + order,)`` whose domain starts at ``start``.

    ``t_i = start + (i - (k - 1)) * spacing``; the domain is
    ``[start, start + (n_ctrl - k + 1) * spacing]``.
    """
    k = _check_order(order)
    if int(n_ctrl) < k:
        raise InvalidInputError(
            f"order {k} needs at least {k} control points; got n_ctrl = {n_ctrl}."
        )
    if not (np.isfinite(start) and np.isfinite(spacing) and spacing > 0):
        raise InvalidInputError(
            f"start must be finite and spacing finite and > 0; got start={start!r}, "
            f"spacing={spacing!r}."
        )
    return start + (np.arange(int(n_ctrl) + k, dtype=float) - (k - 1)) * float(spacing)


def clamped_knots(n_ctrl, order, start=0.0, stop=1.0):
    """Clamped (open uniform) knot vector ``(n_ctrl + order,)`` on the domain ``[start, stop]``.

    The end knots repeat ``order`` times so the spline interpolates its first and last control
    points; the ``n_ctrl - order`` interior knots are evenly spaced.
    """
    k = _check_order(order)
    n = int(n_ctrl)
    if n < k:
        raise InvalidInputError(f"order {k} needs at least {k} control points; got n_ctrl = {n}.")
    if not (np.isfinite(start) and np.isfinite(stop) and stop > start):
        raise InvalidInputError(
            f"clamped_knots needs finite start < stop; got start={start!r}, stop={stop!r}."
        )
    inner = np.linspace(start, stop, n - k + 2)
    return np.concatenate([np.full(k - 1, float(start)), inner, np.full(k - 1, float(stop))])


def domain(knots, order):
    """The domain ``(t_{k-1}, t_n)`` on which the basis is a partition of unity."""
    t = np.asarray(knots, dtype=float)
    return float(t[order - 1]), float(t[t.size - order])


def _span_table(t, k):
    """Indices ``mu`` of the non-empty spans ``[t_mu, t_{mu+1})`` inside the domain."""
    n = t.size - k
    mus = np.arange(k - 1, n)
    return mus[t[mus + 1] > t[mus]]


def find_span(knots, order, x):
    """Knot span index of each parameter value.

    knots: (n + k,) validated; x: scalar or (N,). Returns int array of x's shape: the ``mu`` with
    ``t_mu <= x < t_{mu+1}`` and ``t_mu < t_{mu+1}``, ``k - 1 <= mu <= n - 1``. Values left of the
    domain get the first non-empty span, values at or right of ``t_n`` the last one.
    """
    t = np.asarray(knots, dtype=float)
    mus = _span_table(t, order)
    starts = t[mus]
    idx = np.searchsorted(starts, x, side="right") - 1
    idx = np.clip(idx, 0, mus.size - 1)
    return mus[idx]


def basis_funs(knots, order, x, nderiv=0):
    """Non-zero basis functions and their derivatives at many parameter values.

    knots: (n + k,) (validated here); x: (N,) or scalar; nderiv: highest derivative wanted.
    Returns ``(span, ders)``: span (N,) int as :func:`find_span`; ders (nderiv + 1, N, k) with
    ``ders[d, s, i] = d^d/dx^d B_{span[s] - k + 1 + i, k}(x[s])``. Derivatives of order >= k are
    zero.
    """
    k = _check_order(order)
    t = check_knots(knots, k)
    xs = np.atleast_1d(np.asarray(x, dtype=float))
    if xs.ndim != 1:
        raise InvalidInputError(f"x must be a scalar or 1-D array; got shape {xs.shape}.")
    if not np.all(np.isfinite(xs)):
        raise NonFiniteError("x contains NaN or inf; pass finite parameter values.")
    nd = int(nderiv)
    if nd < 0:
        raise InvalidInputError(f"nderiv must be >= 0; got {nderiv}.")
    span = find_span(t, k, xs)
    return span, _ders_basis(t, k, span, xs, nd)


def _ders_basis(t, k, span, x, nd):
    """Cox-de Boor triangle with derivatives on arrays (no validation). Returns (nd+1, N, k)."""
    p = k - 1
    N = x.size
    ndu = np.empty((k, k, N))
    ndu[0, 0] = 1.0
    left = np.empty((k, N))
    right = np.empty((k, N))
    for j in range(1, k):
        left[j] = x - t[span + 1 - j]
        right[j] = t[span + j] - x
        saved = np.zeros(N)
        for r in range(j):
            ndu[j, r] = right[r + 1] + left[j - r]  # knot difference, > 0 on a non-empty span
            temp = ndu[r, j - 1] / ndu[j, r]
            ndu[r, j] = saved + right[r + 1] * temp
            saved = left[j - r] * temp
        ndu[j, j] = saved
    ders = np.zeros((nd + 1, N, k))
    ders[0] = ndu[:, p].T
    top = min(nd, p)
    if top > 0:
        a = np.empty((2, k, N))
        for r in range(k):
            s1, s2 = 0, 1
            a[0, 0] = 1.0
            for kk in range(1, top + 1):
                d = np.zeros(N)
                rk = r - kk
                pk = p - kk
                if r >= kk:
                    a[s2, 0] = a[s1, 0] / ndu[pk + 1, rk]
                    d = a[s2, 0] * ndu[rk, pk]
                j1 = 1 if rk >= -1 else -rk
                j2 = kk - 1 if r - 1 <= pk else p - r
                for j in range(j1, j2 + 1):
                    a[s2, j] = (a[s1, j] - a[s1, j - 1]) / ndu[pk + 1, rk + j]
                    d = d + a[s2, j] * ndu[rk + j, pk]
                if r <= pk:
                    a[s2, kk] = -a[s1, kk - 1] / ndu[pk + 1, r]
                    d = d + a[s2, kk] * ndu[r, pk]
                ders[kk, :, r] = d
                s1, s2 = s2, s1
        fac = float(p)
        for kk in range(1, top + 1):
            ders[kk] *= fac
            fac *= p - kk
    return ders


def basis_matrix(knots, order, x, nderiv=0):
    """Dense basis values: (nderiv + 1, N, n) with ``[d, s, j] = d^d B_{j,k}/dx^d (x[s])``."""
    span, ders = basis_funs(knots, order, x, nderiv)
    t = np.asarray(knots, dtype=float)
    n = t.size - order
    out = np.zeros((ders.shape[0], span.size, n))
    cols = span[:, None] - order + 1 + np.arange(order)[None, :]
    rows = np.arange(span.size)[:, None]
    out[:, rows, cols] = ders
    return out


def cumulative_basis(knots, order, x, nderiv=0):
    """Cumulative basis (seed 000 eq. 22) and derivatives (eq. 23), dense.

    Returns (nderiv + 1, N, n) with ``[d, s, j] = d^d/dx^d Bc_j(x[s])`` and
    ``Bc_j = sum_{l >= j} B_{l,k}``. ``Bc_0`` is 1 on the domain.
    """
    dense = basis_matrix(knots, order, x, nderiv)
    return np.cumsum(dense[..., ::-1], axis=-1)[..., ::-1]


def span_polynomials(knots, order):
    """Per-span polynomial coefficients of the non-zero basis functions.

    Returns ``(mus, coeffs)``: mus (S,) the non-empty span indices of the domain (ascending) and
    coeffs (S, k, k) with ``B_{mu-k+1+i}(x) = sum_p coeffs[s, i, p] * (x - t_mu)^p`` on span
    ``mus[s]`` (exact Taylor coefficients, from the derivatives at ``t_mu``).
    """
    k = _check_order(order)
    t = check_knots(knots, k)
    mus = _span_table(t, k)
    ders = _ders_basis(t, k, mus, t[mus], k - 1)  # (k, S, k) right-continuous at t_mu
    fact = np.cumprod(np.concatenate([[1.0], np.arange(1, k, dtype=float)]))
    coeffs = np.transpose(ders, (1, 2, 0)) / fact[None, None, :]
    return mus, coeffs


def tensor_basis(knots_list, orders, x, nderiv=0):
    """Tensor-product basis for ``n = len(knots_list)`` parameters (n = 1, 2, 3, ...).

    knots_list: n knot vectors; orders: int or n ints; x: (N, n) (or (n,) for one point).
    The basis weights are ``W_J(x) = prod_a B^{(a)}_{j_a}(x_a)`` for the multi-index
    ``J = (j_1, ..., j_n)`` flattened in C order (so a coefficient array ``c`` of shape
    ``(n_1, ..., n_n)`` gives ``f(x) = c.ravel() @ W(x)``).
    Returns a tuple of ``nderiv + 1`` arrays (nderiv <= 2): W (N, C); dW (N, n, C) with
    ``dW[s, a] = dW/dx_a``; d2W (N, n, n, C).
    """
    n = len(knots_list)
    if n < 1:
        raise InvalidInputError("tensor_basis needs at least one knot vector.")
    ks = [orders] * n if np.isscalar(orders) else list(orders)
    if len(ks) != n:
        raise InvalidInputError(f"got {len(ks)} orders for {n} knot vectors; pass one per axis.")
    xs = np.asarray(x, dtype=float)
    if xs.ndim == 1 and xs.size == n:
        xs = xs[None, :]
    if xs.ndim != 2 or xs.shape[1] != n:
        raise InvalidInputError(f"x must have shape (N, {n}); got {np.shape(x)}.")
    nd = int(nderiv)
    if not 0 <= nd <= 2:
        raise InvalidInputError(f"nderiv must be 0, 1 or 2; got {nderiv}.")
    per_axis = [basis_matrix(knots_list[a], ks[a], xs[:, a], nd) for a in range(n)]
    N = xs.shape[0]

    def product(orders_per_axis):
        w = per_axis[0][orders_per_axis[0]]
        for a in range(1, n):
            w = (w[:, :, None] * per_axis[a][orders_per_axis[a]][:, None, :]).reshape(N, -1)
        return w

    zero = [0] * n
    out = [product(zero)]
    if nd >= 1:
        grad = []
        for a in range(n):
            o = list(zero)
            o[a] = 1
            grad.append(product(o))
        out.append(np.stack(grad, axis=1))
    if nd >= 2:
        C = out[0].shape[1]
        hess = np.empty((N, n, n, C))
        for a in range(n):
            for b in range(a, n):
                o = list(zero)
                o[a] += 1
                o[b] += 1
                hess[:, a, b] = hess[:, b, a] = product(o)
        out.append(hess)
    return tuple(out)
