"""The table of compiled twins that :mod:`core.backend` hands to the reference modules on
the numba backend (:class:`core.backend.Twins` names each entry's operation):

=========================  ==========================================================
entry                      compiled twin
=========================  ==========================================================
aba ... mechanical_energy  :mod:`core.compiled.dynamics` (same names)
compute_joint_jacobians    :func:`core.compiled.dynamics.compute_joint_jacobians`
limit_constraints          :func:`core.compiled.limits.constraints`
limit_hold                 :func:`core.compiled.limits.hold`
limit_pgs                  :func:`core.compiled.limits.pgs`
integrator                 :func:`core.compiled.integrators.stepper`
contact_solver             :func:`core.compiled.contact_solver.stepper`
skeleton_accelerations     :func:`core.compiled.skeleton.accelerations`
skeleton_step              :func:`core.compiled.skeleton.step`
project_cg                 :func:`core.compiled.projection.cg`
point_path_forces          :func:`core.compiled.actuation.point_path_forces`
activation_steps           :func:`core.compiled.actuation.activation_steps`
=========================  ==========================================================
"""

from . import actuation, contact_solver, dynamics, integrators, limits, projection, skeleton

__all__ = ["TWINS"]

#: entry name -> compiled twin
TWINS = {
    "aba": dynamics.aba,
    "rnea": dynamics.rnea,
    "nonlinear_effects": dynamics.nonlinear_effects,
    "crba": dynamics.crba,
    "crba_and_nle": dynamics.crba_and_nle,
    "kinetic_energy": dynamics.kinetic_energy,
    "potential_energy": dynamics.potential_energy,
    "mechanical_energy": dynamics.mechanical_energy,
    "compute_joint_jacobians": dynamics.compute_joint_jacobians,
    "limit_constraints": limits.constraints,
    "limit_hold": limits.hold,
    "limit_pgs": limits.pgs,
    "integrator": integrators.stepper,
    "contact_solver": contact_solver.stepper,
    "skeleton_accelerations": skeleton.accelerations,
    "skeleton_step": skeleton.step,
    "project_cg": projection.cg,
    "point_path_forces": actuation.point_path_forces,
    "activation_steps": actuation.activation_steps,
}
