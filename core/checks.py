"""Checks of scalar settings (fits, integrators, mechanisms, sweeps), run before any work:
each returns the value as a Python int or float or raises InvalidInputError saying what is
wrong and what to pass.

Booleans, strings, NaN and fractional counts are refused rather than converted (``int(8.7)``
would silently fit 8 control frames).
"""

import math
import numbers

from .errors import InvalidInputError

__all__ = ["whole_number", "real_number"]


def whole_number(value, name, minimum=1, advice=""):
    """``value`` as an int ``>= minimum``: an integer, or a float with no fractional part."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        n = int(value)
    elif isinstance(value, numbers.Real) and not isinstance(value, bool) \
            and math.isfinite(value) and float(value).is_integer():
        n = int(value)
    else:
        n = None
    if n is None or n < minimum:
        raise InvalidInputError(f"{name} must be an integer >= {minimum}, got {value!r}"
                                f"{'; ' + advice if advice else ''}")
    return n


def real_number(value, name, low=-math.inf, high=math.inf, *, low_open=False, high_open=False,
                advice=""):
    """``value`` as a finite float in the interval from ``low`` to ``high`` (each end closed
    unless ``low_open`` / ``high_open``)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    x = float(value) if ok else math.nan
    inside = math.isfinite(x) and (x > low if low_open else x >= low) \
        and (x < high if high_open else x <= high)
    if not inside:
        lower = f"{'>' if low_open else '>='} {low:g}"
        upper = f"{'<' if high_open else '<='} {high:g}"
        bounds = " and ".join(b for b, end in ((lower, low), (upper, high)) if math.isfinite(end))
        raise InvalidInputError(f"{name} must be a finite number{' ' + bounds if bounds else ''}"
                                f", got {value!r}{'; ' + advice if advice else ''}")
    return x
