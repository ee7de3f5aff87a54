"""Muscles: OpenSim's geometry paths (points, conditional and moving points, wrapping) with
their lengths, lengthening speeds and moment arms (:mod:`core.muscles.paths`,
:mod:`core.muscles.wrap`)."""
