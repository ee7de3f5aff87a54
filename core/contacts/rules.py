"""Plain rules of the contact solver that both backends follow (the reference
:mod:`core.contacts.solver` and its compiled twin :mod:`core.compiled.contact_solver`); this
module imports neither: the Gauss-Seidel stopping tolerance and its rule for rows that no
joint moves, the contacts' warm-start keys, the friction impulse on the disc and the error
of a mass matrix that is not positive definite."""

import math

import numpy as np

from ..errors import NonFiniteError

__all__ = ["PGS_RTOL", "FREE_ROW_RTOL", "KEY_BITS", "contact_keys", "friction_disc", "disc",
           "not_positive_definite"]

#: Gauss-Seidel stops after a sweep that changes no impulse by more than this fraction of
#: the largest
PGS_RTOL = 1e-6

#: Gauss-Seidel leaves at 0 the impulse of a row (and of a friction direction: an eigenvalue
#: of a tangent pair's block) whose diagonal of ``W = J M^-1 J^T`` is at most this fraction
#: of W's largest diagonal: a contact whose normal or tangent no joint of the rig moves (a
#: contact point on the line through the joints between its two bodies, where a row of J
#: vanishes and W is singular). An impulse there changes no velocity, so leaving it out is
#: the least-norm solution of the singular problem. The fraction is where such an impulse
#: could no longer be computed to :data:`PGS_RTOL`: the update ``r_k / W_kk`` takes the
#: residual's rounding, ``eps W_max |lam|``, divided by ``W_kk``, which exceeds ``PGS_RTOL
#: |lam|`` below ``W_kk = eps / PGS_RTOL * W_max``.
FREE_ROW_RTOL = float(np.finfo(float).eps) / PGS_RTOL

#: a contact's warm-start key packs four numbers below 2**KEY_BITS: its kind (0 plane, 1
#: pair), then the plane and the shape and the vertex, or the two items and the feature
KEY_BITS = 16


def contact_keys(kind, x, y, z):
    """Warm-start keys ``(c,)`` int64 of contacts (:data:`KEY_BITS`)."""
    x, y, z = (np.asarray(a, dtype=np.int64) for a in (x, y, z))
    return (((np.int64(kind) << KEY_BITS | x) << KEY_BITS | y) << KEY_BITS) | z


def friction_disc(w, Q, g, cap):
    """The friction impulse ``l (2,)`` minimizing ``l^T A l / 2 + g^T l`` on the disc
    ``|l| <= cap``, for ``A = Q diag(w) Q^T`` (2x2 positive definite, ``w (2,)``, ``Q (2, 2)``)
    and the tangential velocity ``g (2,)`` without this contact's friction: the unconstrained
    ``-A^-1 g`` inside the disc, else ``-(A + nu I)^-1 g`` on its rim with ``nu > 0`` from
    Newton's method on the concave, increasing ``phi(nu) = 1/|l(nu)| - 1/cap`` from
    ``nu = 0`` (the trust-region secular equation; Moré and Sorensen 1983: the iterates
    increase to the root), stopped at ``|phi| <= 1e-12 / cap``. The final velocity
    ``g + A l = -nu l`` then opposes the friction."""
    (q00, q01), (q10, q11) = np.asarray(Q, dtype=float).tolist()
    w1, w2 = np.asarray(w, dtype=float).tolist()
    g1, g2 = np.asarray(g, dtype=float).tolist()
    return np.array(disc(w1, w2, q00, q01, q10, q11, g1, g2, float(cap)))


def disc(w1, w2, q00, q01, q10, q11, g1, g2, cap):
    """:func:`friction_disc` on floats (``Q = [[q00, q01], [q10, q11]]``): ``(l1, l2)``;
    compiled as it is for the numba backend (:data:`core.compiled.contacts.disc`)."""
    y1 = q00 * g1 + q10 * g2
    y2 = q01 * g1 + q11 * g2
    l1, l2 = -y1 / w1, -y2 / w2
    scale = 1.0
    if l1 * l1 + l2 * l2 > cap * cap:
        if cap <= 0.0:
            return 0.0, 0.0
        nu, size = 0.0, math.sqrt(l1 * l1 + l2 * l2)
        for _ in range(100):
            a1, a2 = w1 + nu, w2 + nu
            l1, l2 = -y1 / a1, -y2 / a2
            size = math.sqrt(l1 * l1 + l2 * l2)
            phi = 1.0 / size - 1.0 / cap
            if phi >= -1e-12 / cap:
                break
            nu -= phi * size ** 3 / (y1 * y1 / a1 ** 3 + y2 * y2 / a2 ** 3)
        scale = cap / size
    return (q00 * l1 + q01 * l2) * scale, (q10 * l1 + q11 * l2) * scale


def not_positive_definite():
    """The NonFiniteError of a contact step whose mass matrix is not positive definite."""
    return NonFiniteError("contacts: the mass matrix is not positive definite, which only a "
                          "diverged state gives; reduce the time step")
