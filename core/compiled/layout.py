"""Memory layout shared by the packer (:mod:`core.compiled.pack`), :class:`core.data.Data`,
the joint families' ``kernel_params`` and the kernels (:mod:`core.compiled`): plain
integers, importing neither the reference nor the compiled side.

A compiled call gets three flat arrays besides its vectors: the model's ``ints`` (int64)
and ``reals`` (float64), packed once per :meth:`core.model.Model.compile`, and the Data's
``buffer`` (float64), which holds the fields the kernels read and write (the joint rows
``LSH``, ``S_body``, ``c_body``, the results ``ddq``, ``tau``, ``nle``, ``M``) and their
scratch, all at offsets stored in the ``ints`` header.

``ints``: a header of :data:`HEADER` entries (indices ``H_*``), then :data:`NI` entries per
body (``I_*``: parent, joint kind (the family's ``kernel_kind``, declared in its joint's
module; ``core.joints.family.KIND_PYTHON`` for none), first coordinate, number of
coordinates, offset of its parameters in ``reals``, for a spline its span count and
polynomial degree, and 1 if the family has ``kernel_charts``), then the point springs' body
pairs ``(a, b)``.

``reals``: gravity (3), then :data:`BODY_REALS` per body (placement: the top 3x4 block of
``H_i`` row-major; then the 6x6 inertia J_i of seed 000 eq. 8 row-major), then the joints'
parameters, the joint springs ``(k, c, rest)`` per coordinate and the point springs
``(p_a (3), p_b (3), k, c, rest)``.

Scratch per body (:data:`B_SIZE` floats at ``ints[H_BODY] + B_SIZE b``): the local
transform ``P G`` as ``R (9), p (3)``; body velocity V, bias acceleration c, acceleration
A, bias wrench pA (or the body force of rnea), external wrench (fext plus point springs,
all body frame); the 6x6 articulated (or composite) inertia. Per coordinate
(:data:`D_SIZE` at ``ints[H_DOF] + D_SIZE j``): ``U = IA S`` (6), the coordinate's row of
``D^-1`` (6) and ``u`` (1).
"""

__all__ = ["HEADER", "NI", "BODY_REALS", "B_SIZE", "D_SIZE", "TMP_SIZE", "buffer_offsets",
           "SJ_HEAD", "SJ_PER_AXIS", "S_SIZE", "CJ_AXES", "CJ_HEAD", "CJ_PER", "FN_CONSTANT",
           "FN_LINEAR", "FN_POLYNOMIAL", "FN_SPLINE", "limit_offsets", "LIMIT_LOWER",
           "LIMIT_UPPER", "LIMIT_CONE", "LIMIT_TWIST_LOWER", "LIMIT_TWIST_UPPER",
           "LIMIT_ELLIPSE"]

# header of ints
H_NB, H_NV, H_NPS, H_SPRINGS = 0, 1, 2, 3
H_LSH, H_SM, H_CB, H_DDQ, H_TAU, H_NLE, H_M, H_BODY, H_DOF, H_TMP = range(4, 14)
H_RSPRING, H_RPOINT, H_IPOINT = 14, 15, 16
HEADER = 20

# per-body ints
I_PARENT, I_KIND, I_Q, I_N, I_PAR, I_NS, I_DEG, I_CHART = range(8)
NI = 8

#: an n-DOF spline joint's parameters (:mod:`core.compiled.kernels.surface`): a header of n, m and
#: :data:`SJ_PER_AXIS` numbers per axis (three axes), :data:`SJ_HEAD` floats in all
SJ_PER_AXIS = 6
SJ_HEAD = 2 + 3 * SJ_PER_AXIS

#: a CustomJoint's parameters: its six unit axes (18 reals from ``CJ_AXES``), then from
#: ``CJ_HEAD`` :data:`CJ_PER` reals per axis: the coordinate (its index in the joint, -1 for
#: none), the scale (the product of the MultiplierFunctions around the function), the
#: function's kind ``FN_*``, its count (polynomial coefficients or spline knots) and the
#: offset of its data from the parameters' start; then the functions' data: a Constant
#: ``c``; a LinearFunction ``slope, intercept``; a PolynomialFunction the coefficients of f,
#: f' and f'' (``m, m - 1, m - 2`` of them, highest power first); a spline (SimmSpline, and
#: PiecewiseLinearFunction with ``c = d = 0``) ``x, y, b, c, d`` (``m`` each)
CJ_AXES, CJ_HEAD, CJ_PER = 0, 18, 5
FN_CONSTANT, FN_LINEAR, FN_POLYNOMIAL, FN_SPLINE = 0, 1, 2, 3

#: reals per body: placement (12), inertia (36)
BODY_REALS = 48
R_BODIES = 3

# per-body scratch
B_LOCAL, B_V, B_C, B_A, B_P, B_F, B_I = 0, 12, 18, 24, 30, 36, 42
B_SIZE = 78
# per-coordinate scratch
D_U, D_DINV, D_USMALL = 0, 6, 12
D_SIZE = 13
#: shared temporaries of one kernel call: the base acceleration (6), a vector (6), the
#: rotated inertia blocks (36), the Gauss-Jordan tableau of a joint's D (6 x 12)
T_BASE, T_VEC, T_ROT, T_GJ = 0, 6, 16, 64
TMP_SIZE = 144


def buffer_offsets(nb, nv, one_dof_each):
    """``{section: offset}`` of a Data buffer for ``nb`` bodies and ``nv`` coordinates, and
    ``"size"``: LSH ``(nb, 28)``, S_body ``(nv, 6)`` (only when some body has not exactly one
    coordinate; else it is a view of LSH), c_body ``(nb, 6)``, ddq, tau, nle ``(nv,)``,
    M ``(nv, nv)``, then the kernels' scratch (bodies, coordinates, temporaries)."""
    sizes = [("LSH", 28 * nb), ("S_body", 0 if one_dof_each else 6 * nv), ("c_body", 6 * nb),
             ("ddq", nv), ("tau", nv), ("nle", nv), ("M", nv * nv), ("bodies", B_SIZE * nb),
             ("dofs", D_SIZE * nv), ("tmp", TMP_SIZE)]
    out, at = {}, 0
    for name, n in sizes:
        out[name] = at
        at += n
    out["size"] = at
    return out


# -- the integrator step (one kernel call per step of substeps) ----------------------------
#: the header of the step kernels' one float64 array ``sd``: method (0 euler, 1
#: semi-implicit, 2 rk4, 3 implicit), substeps per step, number of fext rows (0 or nb), 1 if
#: the state is normalized (spherical joints' charts), 1 if the rates are limited (these five
#: are whole numbers, exact as floats), the substep h; then tau ``(nv,)``, fext ``(nfext, 6)``,
#: the work rows ``(10, nv)`` and, with the rates limited, each coordinate's largest rate
#: ``(nv,)`` (:class:`core.integrators.Integrator`'s ``rate_limit``)
S_METHOD, S_NSUB, S_NFEXT, S_CHARTS, S_CLAMP, S_H = range(6)
S_SIZE = 6


# -- the limit solver (core.limits.LimitSolver) -----------------------------------------------
#: constraint kinds: ``q[dof] - bound >= 0``, ``bound - q[dof] >= 0``, a reach cone on the
#: rotation coordinates starting at dof (axis p, cos of the half-angle), the twist angle
#: about the axis p of those coordinates ``twist - bound >= 0`` and ``bound - twist >= 0``,
#: and an elliptic cone on them (:func:`core.expcoords.elliptic_cone_value`)
LIMIT_LOWER, LIMIT_UPPER, LIMIT_CONE, LIMIT_TWIST_LOWER, LIMIT_TWIST_UPPER = 1, 2, 3, 4, 5
LIMIT_ELLIPSE = 6
#: ``li`` header: constraints c, min_engaged_steps, Gauss-Seidel sweeps
LI_C, LI_MIN, LI_ITER = 0, 1, 2
LI_HEADER = 4
#: projected Gauss-Seidel stops after a sweep that changes no impulse by more than this times
#: the largest impulse (or after the sweep cap ``LI_ITER``)
PGS_RTOL = 1e-10
#: the limit solver's position projection is repeated (re-linearized at the projected pose) at
#: most this many times, until every constraint is within its deadband less this slack
POSITION_PASSES = 8
POSITION_SLACK = 1e-12
#: reals per constraint in ``lr``: bound, deadband tolerance, axis p (3), cos(half-angle);
#: an elliptic cone's: ``sin^2`` of its first half half-angle, the tolerance, p (3), ``sin^2``
#: of the second, its reference axis u (3, orthogonal to p)
LR_PER = 9
LR_HEADER = 1         # restitution


def limit_offsets(c, nv):
    """Offsets of a limit solver's ``li`` (int64) and ``lr`` (float64) for ``c``
    constraints and ``nv`` coordinates, as two tuples (plain arithmetic, so the kernels
    compile this function too). ``li``: ``(engaged (c, 0/1), steps (c, substeps engaged),
    their copies at the start of a kernel step (restored when it fails), the engaged
    constraints' indices (c), the coupled constraints of each (row starts (c + 1), then the
    indices, increasing in each row, of the constraints whose coordinates overlap the row's,
    itself included: at most c * c), size)`` after the header and ``(kind, dof)`` per
    constraint.
    ``lr``: ``(distances (c), d_dot (c), N (c, nv), the Cholesky factor of M (nv, nv),
    M^-1 N_e^T (c, nv), W (c, c), lambda (c), b (c), size)`` after the header and
    :data:`LR_PER` reals per constraint."""
    e = LI_HEADER + 2 * c
    d = LR_HEADER + LR_PER * c
    n = d + 2 * c
    ch = n + c * nv
    y = ch + nv * nv
    w = y + c * nv
    cp = e + 5 * c
    return ((e, e + c, e + 2 * c, e + 3 * c, e + 4 * c, cp, cp + c + 1, cp + c + 1 + c * c),
            (d, d + c, n, ch, y, w, w + c * c, w + c * c + c, w + c * c + 2 * c))
