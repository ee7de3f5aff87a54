"""Operators, one module per task. Each is thin: read through bridge, call one core function, write back."""

from . import capture, reach_cone

classes = (*capture.classes, *reach_cone.classes)
