"""Motion capture to joint moments: OpenSim's pipeline tools beside ours on the gait2392
walking trial (opensim-models' Gait2392_Simbody pipeline), each timed in the same run as
OpenSim's where ``opensim`` imports (``.venv-py313/bin/python scripts/bench.py --only
mocap``).

Inverse kinematics (:func:`_ik_tables`): the IK setup's 121 frames (0.5 to 2.5 s, 31
markers, 4 coordinate tasks) on the subject's scaled model. Where OpenSim imports its
ScaleTool makes that model in a temporary folder first, and its InverseKinematicsTool is
timed at the setup's accuracy (1e-5) and at 1e-9 (where its answer comes within 1e-3 degrees
of ours, see tests/core/test_mocap_ik.py); elsewhere ours runs on the generic model with the
scale marker set. Ours: the whole tool (:func:`core.mocap.ik.run_ik`: read the model and the
trial, solve, write the motion and the errors) and the solve alone, on both backends (numba
after one warm-up run that compiles or loads its kernels), and the same problem solved by
scipy's ``least_squares`` with the same analytic Jacobian (:func:`_scipy_ik`), which
converges linearly where our Newton steps converge quadratically. CPU time, median of 3 or 5
runs.

Inverse dynamics (:func:`_id_tables`): OpenSim's gait2392 pipeline setup
(subject01_Setup_InverseDynamics.xml: 0.4..1.6 s, coordinates low-pass filtered at 6 Hz, both
feet's ground reaction forces) run in a temporary folder on the generic gait2392 model and
the shipped IK result (subject01_walk1_ik.mot): our
:func:`core.mocap.inverse_dynamics.run_inverse_dynamics` from the setup file (reading the
model, the motion and the loads, writing the .sto), the solve alone on inputs already read
(:func:`core.mocap.inverse_dynamics.inverse_dynamics`, numpy and numba backends), and OpenSim
4.6's InverseDynamicsTool on the same setup. Wall-time medians.
"""

import contextlib
import os
import shutil
import sys
import tempfile

import numpy as np

from core import backend
from core.io.external_loads import read_external_loads
from core.io.markers import read_marker_set, read_trc
from core.io.motion import read_motion
from core.io.osim import read_osim
from core.io.osim_export import write_osim
from core.mocap.ik import MarkerKinematics, read_ik_setup, run_ik, solve_ik
from core.mocap.inverse_dynamics import (inverse_dynamics, read_inverse_dynamics_setup,
                                         run_inverse_dynamics)

from .common import median_us, table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OSIM = os.path.join(ROOT, "..", "shared", "data", "osim")
PIPELINE = os.path.join(OSIM, "gait2392_pipeline")
SETUP = "subject01_Setup_InverseDynamics.xml"


def _id_folder():
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
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _id_tables(quick):
    """One table: inverse dynamics of the walking trial, ours and OpenSim's."""
    folder = _id_folder()
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


def _ik_folder():
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
    with contextlib.chdir(folder), _quiet_stdout():
        opensim.ScaleTool("subject01_Setup_Scale.xml").run()
    return folder, opensim


def _scipy_ik(model, trial, tasks, result):
    """The frames of ``result`` solved again by :func:`scipy.optimize.least_squares` (trf,
    the same residuals with their analytic Jacobian, the same bounds), each started from the
    previous frame's answer and stopped at ``xtol`` 1e-10: ``(q_free (N, nf), evaluations)``.
    The setup's coordinate tasks hold their coordinates at the default values."""
    from scipy.optimize import least_squares

    kin = MarkerKinematics(model, result.markers)
    weights = tasks.marker_weights()
    w = np.array([weights[n] for n in result.markers])
    columns = [trial.names.index(n) for n in result.markers]
    free = list(kin.free)
    rows = [free.index(model.coordinate_names.index(t.name))
            for t in tasks.applied_coordinates()]
    root = np.sqrt([t.weight for t in tasks.applied_coordinates()])
    target = model.default_q()[kin.free][rows]
    bounds = (np.where(np.isfinite(kin.lower), kin.lower, -np.inf),
              np.where(np.isfinite(kin.upper), kin.upper, np.inf))
    q = model.default_q()[kin.free]
    out, evaluations = [], 0
    for frame in result.frames:
        obs = trial.positions[frame, columns]
        seen = np.all(np.isfinite(obs), axis=1)
        sw = np.sqrt(np.where(seen, w, 0.0) / w[seen].sum())

        def residual(p):
            x = kin.positions(p)
            e = np.where(seen[:, None], x - np.nan_to_num(obs), 0.0) * sw[:, None]
            return np.concatenate([e.ravel(), root * (p[rows] - target)])

        def jacobian(p):
            J = kin.evaluate(p)[1] * sw[:, None, None]
            extra = np.zeros((len(rows), len(p)))
            extra[np.arange(len(rows)), rows] = root
            return np.vstack([J.reshape(-1, len(p)), extra])

        fit = least_squares(residual, q, jac=jacobian, bounds=bounds, method="trf",
                            xtol=1e-10, ftol=None, gtol=None)
        q = fit.x
        out.append(q)
        evaluations += fit.nfev
    return np.array(out), evaluations


def _ik_tables(quick):
    folder, opensim = _ik_folder()
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
                rows.append([f"ours, whole tool, {name} backend (Newton steps)", f"{tool:.4g}",
                             f"{tool / frames:.3g}", f"{steps / frames:.2f}"])
                rows.append([f"ours, solve only, {name} backend", f"{solve:.4g}",
                             f"{solve / frames:.3g}", f"{steps / frames:.2f}"])
            answer = []
            ms = median_us(lambda: answer.append(_scipy_ik(model, trial, setup.tasks, result)),
                           quick, repeat=3, cpu=True) / 1e3
            q, evaluations = answer[-1]
            off = np.abs(q - result.q[:, MarkerKinematics(model, result.markers).free])
            rows.append([f"scipy least_squares (trf, analytic Jacobian, xtol 1e-10), "
                         f"{backend.active()} backend: {np.rad2deg(off.max()):.2g} degrees "
                         "from ours at most", f"{ms:.4g}", f"{ms / frames:.3g}",
                         f"{evaluations / frames:.2f} (evaluations)"])
        finally:
            backend.use(previous)
        if opensim is not None:
            for accuracy in (setup.accuracy, 1e-9):
                def run(accuracy=accuracy):
                    with contextlib.chdir(folder), _quiet_stdout():
                        tool = opensim.InverseKinematicsTool("subject01_Setup_IK.xml")
                        tool.set_accuracy(accuracy)
                        tool.run()
                ms = median_us(run, quick, repeat=3, cpu=True) / 1e3
                rows.append([f"OpenSim 4.6 InverseKinematicsTool, accuracy {accuracy:g}",
                             f"{ms:.4g}", f"{ms / frames:.3g}", ""])
        return [table(f"Inverse kinematics of the gait2392 walking trial ({frames} frames, "
                      f"{len(result.markers)} markers)",
                      ["what", "total, ms", "per frame, ms", "steps per frame"], rows,
                      note=f"on {which}; ours stops at the setup's accuracy "
                           f"{setup.accuracy:g} (largest step, radians or metres); CPU time")]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench_mocap(quick=False):
    """Tables of the pipeline's tools beside OpenSim's: inverse kinematics, inverse
    dynamics."""
    return _ik_tables(quick) + _id_tables(quick)
