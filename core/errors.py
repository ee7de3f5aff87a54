"""Exceptions raised by the core. All derive from ValueError so callers can catch one type."""


class SplineJointsError(ValueError):
    """Base class: a message that says what was wrong and what to do."""


class InvalidInputError(SplineJointsError):
    """An argument has the wrong shape, non-finite numbers, or is otherwise unusable."""


class NonFiniteError(InvalidInputError):
    """Numbers are NaN or inf, or so large that they can only come from a diverged computation.

    Integrators catch this type to report a divergence as a :class:`SimulationError`."""


class SimulationError(SplineJointsError):
    """A simulation produced NaN or blew up; the message names the time and the body.

    ``time`` (s), ``body`` (its name) and ``reason`` (what went wrong, in words) repeat
    them for a caller that words its own message (None where unknown)."""

    def __init__(self, message, time=None, body=None, reason=None):
        super().__init__(message)
        self.time, self.body, self.reason = time, body, reason
