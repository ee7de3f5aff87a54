"""Motion capture to joint moments: OpenSim's Scale, Inverse Kinematics and Inverse Dynamics
tools, each in a module with the reader of its setup file (:mod:`core.mocap.scale`,
:mod:`core.mocap.ik`)."""

from .ik import (IKCoordinateTask, IKMarkerTask, IKResult, IKSetup, IKTaskSet, MarkerPlacement,
                 parse_task_set, place_markers, read_ik_setup, run_ik, solve_ik, write_ik_result)
from .scale import (ScaleResult, ScaleSetup, read_scale_setup, scale_factors, scale_model,
                    scale_tool, write_scale_set)

__all__ = ["IKMarkerTask", "IKCoordinateTask", "IKTaskSet", "IKSetup", "IKResult",
           "MarkerPlacement", "parse_task_set", "read_ik_setup", "run_ik", "solve_ik",
           "write_ik_result", "place_markers", "ScaleResult", "ScaleSetup", "read_scale_setup",
           "scale_factors", "scale_model", "scale_tool", "write_scale_set"]
