"""Operators, one module per task. Each is thin: read through bridge, call one core function, write back."""

from . import capture

classes = (*capture.classes,)
