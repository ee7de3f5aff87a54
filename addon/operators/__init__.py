"""Operators, one module per task, the leaf of the add-on: each reads through the bridge, calls
one engine function (the core's, or an add-on engine module's for scene-level work such as a
bake job) and writes the result back. Only ``addon/__init__.py`` imports this package."""

from . import (capture, drag, drive, fit, guides, linkages, mechanisms, mocap, muscles, opensim,
               ragdoll, reach_cone, rig, rig_muscles, transfer)

classes = (*capture.classes, *fit.classes, *drive.classes, *reach_cone.classes, *mechanisms.classes,
           *opensim.classes, *mocap.classes, *muscles.classes, *rig.classes, *rig_muscles.classes,
           *ragdoll.classes,
           *linkages.classes, *transfer.classes, *guides.classes, *drag.classes)
