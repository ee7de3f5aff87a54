"""Motion capture to joint moments: OpenSim's pipeline tools beside ours on the gait2392
walking trial (opensim-models' Gait2392_Simbody pipeline).

Inverse kinematics (:func:`_ik_tables`): the setup's 121 frames (0.5 to 2.5 s, 31 markers, 4
coordinate tasks) on the subject's scaled model. Where ``opensim`` imports (the Python 3.13
environment: ``.venv-py313/bin/python scripts/bench.py --only mocap``) its ScaleTool makes
that model in a temporary folder first, and its InverseKinematicsTool is timed in the same
run, at the setup's accuracy (1e-5) and at 1e-9 (where its answer comes within 1e-3 degrees
of ours, see tests/core/test_mocap_ik.py); elsewhere ours runs on the generic model with the
scale marker set. Ours: the whole tool (:func:`core.mocap.ik.run_ik`: read the model and
the trial, solve, write the motion and the errors) and the solve alone, on both backends
(numba after one warm-up run that compiles or loads its kernels). CPU time, median of 3 or 5
runs.
"""

import contextlib
import os
import shutil
import tempfile

from core import backend
from core.io.markers import read_marker_set, read_trc
from core.io.osim import read_osim
from core.io.osim_export import write_osim
from core.mocap.ik import read_ik_setup, run_ik, solve_ik

from .common import median_us, table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OSIM = os.path.join(ROOT, "..", "shared", "data", "osim")
PIPELINE = os.path.join(OSIM, "gait2392_pipeline")


def _folder():
    """A temporary copy of the pipeline with the generic model as the scale setup names it
    (``gait2392_simbody.osim``) and its meshes; the subject's scaled model made there by
    OpenSim's ScaleTool where OpenSim imports. Returns ``(folder, opensim module or None)``."""
    folder = tempfile.mkdtemp(prefix="bench_mocap_")
    for name in os.listdir(PIPELINE):
        shutil.copy(os.path.join(PIPELINE, name), os.path.join(folder, name))
    shutil.copy(os.path.join(OSIM, "gait2392_thelen2003muscle.osim"),
                os.path.join(folder, "gait2392_simbody.osim"))
    shutil.copytree(os.path.join(OSIM, "Geometry"), os.path.join(folder, "Geometry"))
    try:
        import opensim
    except ImportError:
        return folder, None
    opensim.Logger.removeFileSink()
    opensim.Logger.setLevelString("error")
    with contextlib.chdir(folder):
        opensim.ScaleTool("subject01_Setup_Scale.xml").run()
    return folder, opensim


def _ik_tables(quick):
    folder, opensim = _folder()
    try:
        setup = read_ik_setup(os.path.join(folder, "subject01_Setup_IK.xml"))
        trial = read_trc(setup.path(setup.marker_file))
        if opensim is not None:
            which = "the subject's model scaled by OpenSim's ScaleTool"
        else:
            generic = read_osim(os.path.join(folder, "gait2392_simbody.osim"))
            write_osim(setup.path(setup.model_file), generic.with_markers(read_marker_set(
                os.path.join(folder, "gait2392_Scale_MarkerSet.xml"))))
            which = "the generic model with the scale marker set (OpenSim not importable)"
        model = read_osim(setup.path(setup.model_file))
        rows = []
        previous = backend.active()
        try:
            for name in ("numpy", "numba"):
                if name == "numba" and not backend.available():
                    continue
                backend.use(name)
                result = solve_ik(model, trial, setup.tasks, time_range=setup.time_range,
                                  accuracy=setup.accuracy)              # warm-up
                steps = int(result.iterations.sum())
                tool = median_us(lambda: run_ik(setup), quick, repeat=3,
                                 cpu=True) / 1e3
                solve = median_us(lambda: solve_ik(model, trial, setup.tasks,
                                                   time_range=setup.time_range,
                                                   accuracy=setup.accuracy),
                                  quick, repeat=3, cpu=True) / 1e3
                frames = len(result.time)
                rows.append([f"ours, whole tool, {name} backend", f"{tool:.4g}",
                             f"{tool / frames:.3g}", f"{steps / frames:.2f}"])
                rows.append([f"ours, solve only, {name} backend", f"{solve:.4g}",
                             f"{solve / frames:.3g}", f"{steps / frames:.2f}"])
        finally:
            backend.use(previous)
        if opensim is not None:
            for accuracy in (setup.accuracy, 1e-9):
                def run(accuracy=accuracy):
                    with contextlib.chdir(folder):
                        tool = opensim.InverseKinematicsTool("subject01_Setup_IK.xml")
                        tool.set_accuracy(accuracy)
                        tool.run()
                ms = median_us(run, quick, repeat=3, cpu=True) / 1e3
                rows.append([f"OpenSim 4.6 InverseKinematicsTool, accuracy {accuracy:g}",
                             f"{ms:.4g}", f"{ms / frames:.3g}", ""])
        return [table(f"Inverse kinematics of the gait2392 walking trial ({frames} frames, "
                      f"{len(result.markers)} markers)",
                      ["what", "total, ms", "per frame, ms", "Newton steps per frame"], rows,
                      note=f"on {which}; ours stops at the setup's accuracy "
                           f"{setup.accuracy:g} (largest step, radians or metres); CPU time")]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench_mocap(quick=False):
    """Tables of the pipeline's tools beside OpenSim's."""
    return _ik_tables(quick)
