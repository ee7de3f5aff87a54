"""Motion capture to joint moments: OpenSim's pipeline (scale, inverse kinematics, inverse
dynamics) on :class:`core.io.osim.OsimModel` models, one module per tool, each with the
reader of its setup file (:mod:`core.mocap.scale`, :mod:`core.mocap.ik`,
:mod:`core.mocap.inverse_dynamics`)."""

from .ik import (IKCoordinateTask, IKMarkerTask, IKResult, IKSetup, IKTaskSet, MarkerKinematics,
                 MarkerPlacement, parse_ik_setup, parse_task_set, place_markers, read_ik_setup,
                 run_ik, solve_ik, write_ik_result)
from .inverse_dynamics import (InverseDynamicsResult, InverseDynamicsSetup, inverse_dynamics,
                               read_inverse_dynamics_setup, run_inverse_dynamics)
from .scale import (ScaleResult, ScaleSetup, read_scale_setup, scale_factors, scale_model,
                    scale_tool, write_scale_set)

__all__ = ["IKMarkerTask", "IKCoordinateTask", "IKTaskSet", "IKSetup", "IKResult",
           "MarkerKinematics", "MarkerPlacement", "parse_task_set", "parse_ik_setup",
           "read_ik_setup", "run_ik", "solve_ik", "write_ik_result", "place_markers",
           "InverseDynamicsResult", "InverseDynamicsSetup", "inverse_dynamics",
           "read_inverse_dynamics_setup", "run_inverse_dynamics", "ScaleResult", "ScaleSetup",
           "read_scale_setup", "scale_factors", "scale_model", "scale_tool", "write_scale_set"]
