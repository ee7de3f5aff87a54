"""Operators, one module per task. Each is thin: read through bridge, call one core function, write back."""

from . import capture, drive, fit, linkages, mechanisms, opensim, reach_cone, rig, transfer

classes = (*capture.classes, *fit.classes, *drive.classes, *reach_cone.classes, *mechanisms.classes,
           *opensim.classes, *rig.classes, *linkages.classes, *transfer.classes)
