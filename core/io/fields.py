"""Numbers and counts written in the text of a file (.osim elements and attributes, .vtp
attributes, .mot/.sto headers and cells).

Only ASCII decimal syntax is a number: an optional sign, digits with an optional decimal point,
an optional exponent, or ``inf``/``nan`` (which the readers then refuse as not finite, with
their own advice). Python's ``float`` and ``int`` would also take other scripts' digits
(``"٣"``), underscores (``"1_0"``) and surrounding whitespace; :func:`parse_float` and
:func:`parse_count` do not, and their :class:`~core.errors.InvalidInputError` names the field
(``what``) and quotes the text.
"""

import re

from ..errors import InvalidInputError

__all__ = ["parse_float", "parse_count", "NUMBER", "MAX_COUNT_DIGITS"]

#: the most digits of a count (a quintillion less one)
MAX_COUNT_DIGITS = 18

#: the text of a number the readers take (ASCII only)
NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)",
                    re.ASCII | re.IGNORECASE)
_COUNT = re.compile(r"\d+", re.ASCII)


def parse_float(text, what):
    """The float written as ``text`` (ASCII decimal syntax, see the module docstring).
    InvalidInputError naming ``what`` for anything else."""
    if NUMBER.fullmatch(text) is None:
        raise InvalidInputError(f"{what} {text[:60]!r} is not a number (write it with the "
                                "ASCII digits 0-9, e.g. 1.5 or -2e-3): correct the file")
    return float(text)


def parse_count(text, what):
    """The whole number >= 0 written as ``text`` (ASCII digits 0-9 only; surrounding
    whitespace ignored). InvalidInputError naming ``what`` for anything else."""
    text = text.strip()
    if _COUNT.fullmatch(text) is None:
        raise InvalidInputError(f"{what} {text[:60]!r} is not a count (write it with the ASCII "
                                "digits 0-9): correct the file")
    if len(text) > MAX_COUNT_DIGITS:
        raise InvalidInputError(f"{what} {text[:60]!r} has more than {MAX_COUNT_DIGITS} digits, "
                                "more than any count a file holds: correct the file")
    return int(text)
