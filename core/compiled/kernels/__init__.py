"""The compiled backend's entry kernels: the numba functions the rest of the core calls as
``backend.kernels.NAME`` (:data:`core.backend.kernels` is this module when the numba backend
is active). Each is defined in the file that mirrors its reference module:

* :mod:`core.compiled.dynamics` (:mod:`core.dynamics`): :func:`aba`, :func:`aba_free`,
  :func:`rnea`, :func:`crba`, :func:`energies`;
* :mod:`core.compiled.kernels.kinematics` (:mod:`core.kinematics`): :func:`kinematics` (the
  joints and world poses of :func:`core.dynamics.compute_joint_jacobians`);
* :mod:`core.compiled.integrators` (:mod:`core.integrators`): :func:`step`,
  :func:`driven_step`, :func:`advance`, :func:`advance_unconstrained`, :func:`normalize`;
* :mod:`core.compiled.limits` (:class:`core.limits.LimitSolver`): :func:`limit_hold`,
  :func:`limit_constraints`, :func:`pgs`;
* :mod:`core.compiled.kernels.cg` (:func:`core.maximal.solver.project`): :func:`cg`;
* :mod:`core.compiled.kernels.actuation` (:mod:`core.muscles.actuation`):
  :func:`point_path_forces`, :func:`activation_steps`.

The other compiled files (:mod:`core.compiled.kernels.options` for the numba options,
:mod:`core.compiled.kernels.expcoords`, :mod:`core.compiled.kernels.spatial`, :mod:`core.compiled.kernels.joints`,
:mod:`core.compiled.kernels.kinematics`' other functions, the joints in
:mod:`core.compiled.kernels.custom` and :mod:`core.compiled.kernels.surface`) hold what these call.
"""

from .actuation import activation_steps, point_path_forces
from .cg import cg
from .dynamics import aba, aba_free, crba, energies, rnea
from .kinematics import kinematics
from .integrators import advance, advance_unconstrained, driven_step, normalize, step
from .limits import limit_constraints, limit_hold, pgs

__all__ = ["aba", "aba_free", "rnea", "crba", "energies", "kinematics", "step", "driven_step",
           "advance", "advance_unconstrained", "normalize", "limit_hold", "limit_constraints",
           "pgs", "cg", "point_path_forces", "activation_steps"]
