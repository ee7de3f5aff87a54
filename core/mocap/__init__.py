"""Motion capture to joint moments: OpenSim's Scale, Inverse Kinematics and Inverse Dynamics
tools, each in a module with the reader of its setup file (:mod:`core.mocap.ik`)."""

from .ik import (IKCoordinateTask, IKMarkerTask, IKResult, IKSetup, IKTaskSet, MarkerKinematics,
                 MarkerPlacement, parse_ik_setup, parse_task_set, place_markers, read_ik_setup,
                 run_ik, solve_ik, write_ik_result)

__all__ = ["IKMarkerTask", "IKCoordinateTask", "IKTaskSet", "IKSetup", "IKResult",
           "MarkerKinematics", "MarkerPlacement", "parse_task_set", "parse_ik_setup",
           "read_ik_setup", "run_ik", "solve_ik", "write_ik_result", "place_markers"]
