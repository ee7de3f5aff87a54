"""The compiled twins of :mod:`core.dynamics` (reached through :data:`core.backend.twins`):
:func:`aba`, :func:`rnea`, :func:`nonlinear_effects`, :func:`crba`, :func:`crba_and_nle`,
:func:`kinetic_energy`, :func:`potential_energy`, :func:`mechanical_energy` and
:func:`compute_joint_jacobians`, compared with the reference in
``tests/core/test_backend_numba.py``; and the calls the compiled
integrator steps take (:func:`substep`, :func:`driven_substep`). Each takes the model's
packed arrays (built once per :meth:`core.model.Model.compile`), evaluates the joints of
families without a kernel in Python into ``data`` (:mod:`core.joints.family`), then makes
one kernel call."""

import numpy as np

from . import kernels
from ..errors import NonFiniteError
from ..kinematics import update_jacobian_columns
from .pack import pack

__all__ = ["packed", "python_joints", "aba", "rnea", "nonlinear_effects", "crba",
           "crba_and_nle", "energies", "kinetic_energy", "potential_energy",
           "mechanical_energy", "compute_joint_jacobians", "substep", "driven_substep",
           "NO_FEXT", "NO_ARMATURE"]

#: the kernels' "no external wrenches"
NO_FEXT = np.zeros((0, 6))
#: the kernels' "no armature"
NO_ARMATURE = np.zeros(0)
#: the kernels that compile only through :func:`_compiling`
_on_request = set()


def packed(model):
    """The model's :class:`~core.compiled.pack.Packed` arrays (model compiled), built on
    first use after each compile."""
    p = model.packed
    if p is None:
        p = model.packed = pack(model)
    return p


def python_joints(model, data, p, q, v):
    """Evaluate the joints of the families without a kernel into ``data`` (their ``calc``,
    and ``velocity_product`` when ``v`` is given)."""
    fams, work = model.families, data.family_work
    for f in p.python:
        fams[f].calc(q, data, work[f])
    if v is not None:
        for f in p.multi_python:
            fams[f].velocity_product(v, data, work[f])


def _failed(model, what):
    raise NonFiniteError(f"{what}: a joint's S^T IA S is singular at this configuration, "
                         "which only a diverged state (or bodies without mass and inertia) "
                         "gives; reduce the time step, or check the coordinates passed and "
                         "the bodies' inertias")


def aba(model, data, q, v, tau, fext, check, armature=None):
    """Forward dynamics ``data.ddq``; with ``check`` the arguments are validated as
    :func:`core.dynamics.aba` does, else they must be float arrays of shape ``(nv,)`` and
    ``fext`` None or ``(nb, 6)``; ``armature`` None or a checked ``(nv,)`` array (then one
    call of :func:`core.compiled.kernels.aba`). Without fext and armature the states are
    checked by the kernel itself: their types by its call
    (:func:`core.compiled.kernels.aba_free` runs only on float64 C-contiguous writable
    arrays and raises TypeError for anything else, which then takes the full checks and a
    contiguous copy), their lengths and NaN/inf in its first loop (a few flops; a
    non-finite state raises NonFiniteError as on the numpy path)."""
    p = model.packed or packed(model)
    if check:
        model.check_data(data)
        if fext is not None or armature is not None or p.python:  # aba_free checks them
            q, v, tau = _check_states(model, q, v, tau)
            fext = None if fext is None else _contiguous(model.check_fext(fext))
    if p.python:
        python_joints(model, data, p, q, v)
    arm = NO_ARMATURE if armature is None else _contiguous(armature)
    if fext is None and armature is None:
        kernel, status = kernels.aba_free, None
        if kernel in _on_request:
            try:
                status = kernel(p.ints, p.reals, data.buffer, q, v, tau)
            except TypeError:            # other types, or the first call for the ints' type
                pass
        if status is None:
            q, v, tau = _check_states(model, q, v, tau)
            status = _compiling(kernel, p.ints, p.reals, data.buffer, q, v, tau)
    else:
        status = kernels.aba(p.ints, p.reals, data.buffer, q, v, tau,
                             NO_FEXT if fext is None else fext, arm, True)
    if status == 2:                      # wrong length, not finite, or huge: the full checks
        q, v, tau = _check_states(model, q, v, tau)
        status = kernels.aba(p.ints, p.reals, data.buffer, q, v, tau,
                             NO_FEXT if fext is None else fext, arm, False)
    if status:
        _failed(model, "aba")
    return data.ddq


def _contiguous(x):
    """``x`` (a float array) as a C-contiguous writable float64 array (a copy if it is not):
    the one array type the kernels are compiled for."""
    return np.require(x, np.float64, "CW")


def _compiling(kernel, *args):
    """``kernel(*args)``, compiling (or loading from the cache) its version for these
    argument types if it has none, after which the kernel compiles only on request: it is
    in :data:`_on_request`, and a call with argument types it has no version for raises
    TypeError instead of compiling one (for :func:`core.compiled.kernels.aba_free`: one
    version per type of the model's ``ints``, all other arguments float64 C-contiguous
    and writable)."""
    kernel.disable_compile(False)
    try:
        return kernel(*args)
    finally:
        if kernel.signatures:
            kernel.disable_compile(True)
            _on_request.add(kernel)


def _check_states(model, q, v, tau):
    return (_contiguous(model.check_state(q)), _contiguous(model.check_state(v, "v")),
            _contiguous(model.check_state(tau, "tau")))


def rnea(model, data, q, v, a, fext):
    """Inverse dynamics ``data.tau`` (checked arguments)."""
    p = model.packed or packed(model)
    if p.python:
        python_joints(model, data, p, q, v)
    kernels.rnea(p.ints, p.reals, data.buffer, q, v, a,
                         NO_FEXT if fext is None else fext, False)
    return data.tau


def nonlinear_effects(model, data, q, v, fext):
    """``rnea(q, v, 0)`` into ``data.nle`` (checked arguments)."""
    p = model.packed or packed(model)
    if p.python:
        python_joints(model, data, p, q, v)
    kernels.rnea(p.ints, p.reals, data.buffer, q, v, p.zeros,
                         NO_FEXT if fext is None else fext, True)
    return data.nle


def crba(model, data, q):
    """The mass matrix ``data.M`` (checked arguments)."""
    p = model.packed or packed(model)
    if p.python:
        python_joints(model, data, p, q, None)
    kernels.crba(p.ints, p.reals, data.buffer, q)
    return data.M


def crba_and_nle(model, data, q, v, fext):
    """``(M, h)``: :func:`crba` and :func:`nonlinear_effects` at one state (checked
    arguments), two kernel calls."""
    return crba(model, data, q), nonlinear_effects(model, data, q, v, fext)


def energies(model, data, q, v):
    """``(kinetic, potential)`` energies (checked arguments; ``v`` None: the kinetic energy
    is 0 and not computed), the world poses left in ``data.oMi``."""
    p = model.packed or packed(model)
    if p.python:
        python_joints(model, data, p, q, v)
    return kernels.energies(p.ints, p.reals, data.buffer, q, q if v is None else v,
                                    p.mass_com, v is not None)


def kinetic_energy(model, data, q, v):
    """The kinetic energy (checked arguments), one kernel call."""
    return energies(model, data, q, v)[0]


def potential_energy(model, data, q):
    """The potential energy (checked arguments), one kernel call that leaves the world
    poses in ``data.oMi``."""
    return energies(model, data, q, None)[1]


def mechanical_energy(model, data, q, v):
    """Kinetic plus potential energy (checked arguments), one kernel call."""
    return sum(energies(model, data, q, v))


def compute_joint_jacobians(model, data, q):
    """World poses and Jacobian columns (checked arguments): the joints and poses in one
    kernel call (:func:`core.compiled.kernels.kinematics`), the adjoints and columns as the
    reference computes them (:func:`core.kinematics.update_jacobian_columns`)."""
    p = model.packed or packed(model)
    if p.python:
        python_joints(model, data, p, q, None)
    kernels.kinematics(p.ints, p.reals, data.buffer, q, q, False)
    update_jacobian_columns(model, data)
    return data.S_world


def substep(model, data, q, v, tau, fext, h, method, rows, track=None, world=None):
    """One integrator substep ``(q, v) -> (qn, vn)`` in one kernel call, for models whose
    joints all have kernels; ``method`` 0 euler, 1 semi-implicit, 2 rk4, 3 implicit;
    ``rows`` a pair of ``(5, nv)`` work arrays; ``track`` None or the implicit step's
    tracking rows ``(3, nv)``, ``world`` None or its world tracking rows ``(nb, 22)``
    (:func:`core.compiled.kernels.step`). Returns fresh arrays ``(qn, vn)``."""
    p = model.packed or packed(model)
    qn, vn = rows
    if kernels.step(p.ints, p.reals, data.buffer, q, v, tau,
                    NO_FEXT if fext is None else fext, h, method, qn, vn, track, world):
        _failed(model, "the integrator step")
    return qn[0].copy(), vn[0].copy()


def driven_substep(model, data, q, v, tau, fext, h, method, rows, dofs, nf, drive, powers,
                   chol, track=None):
    """:func:`substep` of a model with prescribed coordinates
    (:func:`core.compiled.kernels.driven_step`: ``dofs (nv,)`` free then prescribed,
    ``nf`` free ones, ``drive (3, 2, k)`` their ``(v_p, a_p)`` at ``t, t + h/2, t + h``,
    the stages' drive powers into ``powers (4,)``, ``chol (nf, nf + 1)`` scratch, ``track``
    as :func:`substep`'s). Returns
    fresh arrays ``(qn, vn)``, or None when the kernel reports a failure (a mass matrix
    ``M_ff`` that is not positive definite: the caller takes the substep on the Python path,
    which raises the error naming the cause)."""
    p = model.packed or packed(model)
    qn, vn = rows
    if kernels.driven_step(p.ints, p.reals, data.buffer, q, v, tau,
                           NO_FEXT if fext is None else fext, h, method, qn, vn, dofs,
                           nf, drive, powers, chol, track):
        return None
    return qn[0].copy(), vn[0].copy()
