"""Motion capture to joint moments: inverse dynamics of the gait2392 walking trial.

OpenSim's gait2392 pipeline setup (subject01_Setup_InverseDynamics.xml: 0.4..1.6 s, coordinates
low-pass filtered at 6 Hz, both feet's ground reaction forces) run in a temporary folder on
the generic gait2392 model and the shipped IK result (subject01_walk1_ik.mot): our
:func:`core.mocap.inverse_dynamics.run_inverse_dynamics` from the setup file (reading the
model, the motion and the loads, writing the .sto), the solve alone on inputs already read
(:func:`core.mocap.inverse_dynamics.inverse_dynamics`, numpy and numba backends), and, where
``opensim`` imports (``.venv-py313/bin/python scripts/bench.py --only mocap``), OpenSim 4.6's
InverseDynamicsTool on the same setup in the same run. Wall-time medians.
"""

import contextlib
import os
import shutil
import sys
import tempfile

from core import backend
from core.io.external_loads import read_external_loads
from core.io.motion import read_motion
from core.io.osim import read_osim
from core.mocap.inverse_dynamics import (inverse_dynamics, read_inverse_dynamics_setup,
                                         run_inverse_dynamics)

from .common import median_us, table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OSIM = os.path.join(ROOT, "..", "shared", "data", "osim")
PIPELINE = os.path.join(OSIM, "gait2392_pipeline")
SETUP = "subject01_Setup_InverseDynamics.xml"


def _folder():
    """A temporary folder with the ID setup, its model (the generic gait2392 under the name
    the setup gives), the shipped IK motion and the ground reaction forces."""
    folder = tempfile.mkdtemp(prefix="bench_mocap_")
    for name in (SETUP, "subject01_walk1_grf.xml", "subject01_walk1_grf.mot"):
        shutil.copy(os.path.join(PIPELINE, name), folder)
    shutil.copy(os.path.join(OSIM, "gait2392_thelen2003muscle.osim"),
                os.path.join(folder, "subject01_simbody.osim"))
    shutil.copy(os.path.join(OSIM, "subject01_walk1_ik.mot"), folder)
    return folder


def _opensim_tool(folder):
    """A callable running OpenSim's InverseDynamicsTool on the setup in ``folder`` (from that
    folder, as the GUI does), or None where OpenSim does not import."""
    try:
        import opensim
    except ImportError:
        return None
    opensim.Logger.removeFileSink()
    opensim.Logger.setLevelString("error")
    setup = os.path.join(folder, SETUP)

    def run():
        cwd = os.getcwd()
        os.chdir(folder)
        try:
            opensim.InverseDynamicsTool(setup).run()
        finally:
            os.chdir(cwd)
    return run


@contextlib.contextmanager
def _quiet_stdout():
    """Standard output (file descriptor 1) sent to the null device: OpenSim prints the model's
    summary there whatever its log level, and the section's output is its tables."""
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
        try:
            yield
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def bench_mocap(quick=False):
    """One table: inverse dynamics of the walking trial, ours and OpenSim's."""
    folder = _folder()
    try:
        setup = read_inverse_dynamics_setup(os.path.join(folder, SETUP))
        model = read_osim(setup.model_file)
        motion = read_motion(setup.coordinates_file)
        loads = read_external_loads(setup.external_loads_file)
        frames = len(run_inverse_dynamics(setup).time)
        rows = [[f"run_inverse_dynamics from the setup file (read, solve, write .sto), "
                 f"{backend.active()} backend",
                 median_us(lambda: run_inverse_dynamics(setup), quick) / 1e3]]
        for name in ("numpy", "numba"):
            if name == "numba" and not backend.available():
                continue
            previous = backend.use(name)
            try:
                def solve():
                    return inverse_dynamics(model, motion, loads, time_range=setup.time_range,
                                            lowpass_cutoff=setup.lowpass_cutoff,
                                            forces_to_exclude=setup.forces_to_exclude)
                solve()
                rows.append([f"inverse_dynamics on inputs already read, {name} backend",
                             median_us(solve, quick) / 1e3])
            finally:
                backend.use(previous)
        tool = _opensim_tool(folder)
        if tool is not None:
            with _quiet_stdout():
                tool()
                opensim_ms = median_us(tool, quick) / 1e3
            rows.append(["OpenSim 4.6 InverseDynamicsTool.run() from the setup file",
                         opensim_ms])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return [table(f"Inverse dynamics, gait2392 walking trial ({frames} frames, 23 "
                  "coordinates, 2 ground reaction forces)", ["what", "ms"], rows,
                  note="wall-time medians; OpenSim only where it imports")]
