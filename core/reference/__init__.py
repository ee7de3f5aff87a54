"""Reference models: exact re-implementations of other programs' joint definitions.

:mod:`.opensim` evaluates the OpenSim gait2392 knee and the Seth 2019 scapulothoracic joint
from the JSON files in ``core/data/``; they are the ground truth for fitting tests and demos.
:mod:`.datasets` loads those files (``load``, ``coastlines``, ``bone_mesh``).
"""

from .datasets import BONE_MESHES, available, bone_mesh, coastlines, load
from .opensim import CustomJoint, KneeGait2392, ScapulothoracicSeth2019, SimmSpline, offset_frame

__all__ = [
    "available", "coastlines", "load", "bone_mesh", "BONE_MESHES",
    "CustomJoint", "KneeGait2392", "ScapulothoracicSeth2019", "SimmSpline", "offset_frame",
]
