"""Muscles: OpenSim's geometry paths (points, conditional and moving points, wrapping) with
their lengths, lengthening speeds and moment arms (:mod:`core.muscles.paths`,
:mod:`core.muscles.wrap`); DeGroote-Fregly 2016 rigid-tendon forces and activation dynamics
(:mod:`core.muscles.hill`) and their generalized forces in the dynamics of imported models
and rigs (:mod:`core.muscles.actuation`)."""
