"""Motion capture to joint moments: OpenSim's pipeline (scale, inverse kinematics, inverse
dynamics) on :class:`core.io.osim.OsimModel` models, one module per tool, each with the
reader of its setup file."""

from .inverse_dynamics import (InverseDynamicsResult, InverseDynamicsSetup, inverse_dynamics,
                               read_inverse_dynamics_setup, run_inverse_dynamics)

__all__ = ["InverseDynamicsResult", "InverseDynamicsSetup", "inverse_dynamics",
           "read_inverse_dynamics_setup", "run_inverse_dynamics"]
