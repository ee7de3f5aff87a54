"""What the fitted spline knee changes in a biomechanist's results: joint moments and moment arms.

    .venv/bin/python scripts/pictures/fitted_knee.py [--page docs/guides/fitted-knee.md]

Two comparisons of gait2392 with its exact knees (OpenSim's CustomJoints whose translations
are splines of the knee angle) and with spline curve joints fitted to them
(:func:`core.fitting.osim.spline_joint_from_osim`, its default 8 control frames):

1. **Joint moments.** OpenSim's gait2392 example pipeline for subject01 (the data in
   shared/data/osim/gait2392_pipeline) run by the core's tools: the Scale tool
   (:func:`core.mocap.scale.scale_tool`) makes the subject's model; both knees of that model are
   fitted; the walking trial's inverse kinematics (:func:`core.mocap.ik.solve_ik`) and inverse
   dynamics (:func:`core.mocap.inverse_dynamics.inverse_dynamics`, the setup's ground reaction
   forces and 6 Hz filter) are run once with the exact knees and once with the fitted ones.
2. **Moment arms.** The quadriceps of the generic gait2392 (rect_fem_r, vas_int_r, vas_lat_r,
   vas_med_r; their patellar path points move with the knee angle) about knee_angle_r over the
   knee's range, with the exact and the fitted knee
   (:func:`core.fitting.osim.fitted_moment_arms`).

Writes docs/images/fitted_knee_moments.png and docs/images/fitted_knee_moment_arms.png and
the page (intro and one generated block with the figures' numbers, stamped with the command,
date and machine: :mod:`scripts.run_pages`), all atomically.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from core.fitting.osim import fitted_moment_arms, spline_joint_from_osim  # noqa: E402
from core.io import atomic_path  # noqa: E402
from core.io.external_loads import read_external_loads  # noqa: E402
from core.io.markers import read_trc  # noqa: E402
from core.io.motion import Motion  # noqa: E402
from core.io.osim import read_osim  # noqa: E402
from core.mocap.ik import read_ik_setup, solve_ik  # noqa: E402
from core.mocap.inverse_dynamics import (inverse_dynamics,  # noqa: E402
                                         read_inverse_dynamics_setup)
from core.mocap.scale import read_scale_setup, scale_tool  # noqa: E402
from scripts import run_pages  # noqa: E402
from scripts.benchmarks.common import machine_description  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "osim"
PIPELINE = DATA / "gait2392_pipeline"
GENERIC = DATA / "gait2392_thelen2003muscle.osim"
IMAGES = ROOT / "docs" / "images"
PAGE = ROOT / "docs" / "guides" / "fitted-knee.md"
KNEES = ("knee_r", "knee_l")
QUADRICEPS = ("rect_fem_r", "vas_int_r", "vas_lat_r", "vas_med_r")
#: coordinates whose moments the page tabulates
TABLED = ("knee_angle_r", "knee_angle_l", "hip_flexion_r", "hip_flexion_l",
          "ankle_angle_r", "ankle_angle_l")

INTRO = """# The fitted knee in biomechanics

A spline joint fitted to gait2392's knee moves the tibia to within a tenth of a millimetre of
OpenSim's knee (see [fitting and driving a knee](knee.md)). What does that change in the
numbers a biomechanist reports? This page answers with two comparisons, both written by
`scripts/pictures/fitted_knee.py` from a run (nothing here is edited by hand):

- **Joint moments** of OpenSim's gait2392 walking example (subject01): the core's Scale tool
  makes the subject's model, both knees are fitted, and inverse kinematics and inverse dynamics
  ([motion capture](motion-capture.md)) run once with the exact knees and once with the fitted ones.
- **Moment arms** of the quadriceps about the knee over its range, exact against fitted
  ([muscle paths](../reference/biomechanics.md)).

![Knee and hip moments over the walking trial, exact and fitted knees, and their difference](../images/fitted_knee_moments.png)

![Quadriceps moment arms about the right knee, exact and fitted, and their difference](../images/fitted_knee_moment_arms.png)

The differences come from the fitted joint's slope rather than its position: a fit within
0.1 mm of the exact knee can differ by about a millimetre per radian in how fast the tibia
slides, which the accelerations near heel strike and the patellar path points amplify.
"""


def pipeline(work: Path):
    """Run the example's Scale tool in ``work``; return the subject's model, the fitted knees'
    documents, the IK setup and trial, and the ID setup and loads."""
    for f in PIPELINE.iterdir():
        shutil.copy(f, work / f.name)
    shutil.copy(GENERIC, work / "gait2392_simbody.osim")
    scaled = scale_tool(read_scale_setup(work / "subject01_Setup_Scale.xml")).model
    fits = {j: spline_joint_from_osim(scaled, j) for j in KNEES}
    ik = read_ik_setup(work / "subject01_Setup_IK.xml")
    trial = read_trc(ik.path(ik.marker_file))
    id_setup = read_inverse_dynamics_setup(work / "subject01_Setup_InverseDynamics.xml")
    return scaled, fits, ik, trial, id_setup, read_external_loads(id_setup.external_loads_file)


def moments(model, ik, trial, id_setup, loads, documents=None):
    """IK of the trial, then ID of its coordinates: ``(IKResult, InverseDynamicsResult)``."""
    solved = solve_ik(model, trial, ik.tasks, time_range=ik.time_range, accuracy=ik.accuracy,
                      fits=documents)
    motion = Motion(names=solved.names, time=solved.time, values=solved.degrees(),
                    in_degrees=True)
    forces = inverse_dynamics(model, motion, loads, time_range=id_setup.time_range,
                              lowpass_cutoff=id_setup.lowpass_cutoff,
                              forces_to_exclude=id_setup.forces_to_exclude, fits=documents)
    return solved, forces


def _plot_moments(out: Path, exact, fitted) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 6), sharex=True)
    for col, side in enumerate(("r", "l")):
        for row, joint in enumerate(("knee_angle", "hip_flexion")):
            name = f"{joint}_{side}"
            ax = axes[row, col]
            a, b = exact.column(name), fitted.column(name)
            ax.plot(exact.time, a, label="exact knee", color="0.2")
            ax.plot(fitted.time, b, label="fitted spline knee", color="tab:red", ls="--")
            twin = ax.twinx()
            twin.plot(exact.time, b - a, color="tab:blue", lw=0.8)
            twin.set_ylabel("difference (N m)", color="tab:blue")
            ax.set_title(f"{name}: largest difference {np.abs(b - a).max():.2f} N m")
            ax.set_ylabel("moment (N m)")
            if row == 1:
                ax.set_xlabel("time (s)")
    axes[0, 0].legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    with atomic_path(out) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)


def _plot_arms(out: Path, comparison) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    angles = np.degrees(comparison.values)
    fig, (ax, dx) = plt.subplots(1, 2, figsize=(10, 4))
    for k, name in enumerate(comparison.muscles):
        line, = ax.plot(angles, 1e3 * comparison.exact[k], label=name)
        ax.plot(angles, 1e3 * comparison.fitted[k], color=line.get_color(), ls="--")
        dx.plot(angles, 1e3 * (comparison.fitted[k] - comparison.exact[k]), label=name)
    ax.set_xlabel("knee_angle_r (degrees)")
    ax.set_ylabel("moment arm (mm): exact solid, fitted dashed")
    dx.set_xlabel("knee_angle_r (degrees)")
    dx.set_ylabel("fitted - exact (mm)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(out) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)


def tables(scaled, fits, exact, fitted, comparison) -> str:
    """The page's block: the fits, the moments' differences and the moment arms'."""
    (ik_e, id_e), (ik_f, id_f) = exact, fitted
    rows = ["| knee | largest pose error of the fit (mm) | control frames |", "|---|--:|--:|"]
    rows += [f"| {j} | {f.max_position_mm:.3f} | {len(f.document.joint.control_frames)} |"
             for j, f in fits.items()]
    k = [ik_e.names.index(n) for n in ("knee_angle_r", "knee_angle_l")]
    dq = np.degrees(np.abs(ik_f.q[:, k] - ik_e.q[:, k])).max()
    rms = 1e3 * np.abs(ik_f.errors[:, 1] - ik_e.errors[:, 1]).max()
    rows += ["", f"Inverse kinematics, {len(ik_e.time)} frames: the knee angles differ by at most "
             f"{dq:.3f} degrees and the marker RMS errors by at most {rms:.3f} mm.", "",
             "| coordinate | peak moment, exact (N m) | largest difference (N m) | "
             "RMS difference (N m) |", "|---|--:|--:|--:|"]
    for name in TABLED:
        a, b = id_e.column(name), id_f.column(name)
        rows.append(f"| {name} | {np.abs(a).max():.1f} | {np.abs(b - a).max():.2f} | "
                    f"{np.sqrt(np.mean((b - a) ** 2)):.2f} |")
    rows += ["", "| muscle | moment arm, exact (mm) | largest difference (mm) | at knee angle "
             "(degrees) |", "|---|--:|--:|--:|"]
    for i, name in enumerate(comparison.muscles):
        d = np.abs(comparison.fitted[i] - comparison.exact[i])
        j = int(d.argmax())
        rows.append(f"| {name} | {1e3 * comparison.exact[i].min():.1f} .. "
                    f"{1e3 * comparison.exact[i].max():.1f} | {1e3 * d[j]:.2f} | "
                    f"{np.degrees(comparison.values[j]):.0f} |")
    return "\n".join(rows)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--page", default=str(PAGE), help="the page to write (default %(default)s)")
    parser.add_argument("--images", default=str(IMAGES), help="folder of the two PNGs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        scaled, fits, ik, trial, id_setup, loads = pipeline(Path(work))
        documents = {j: f.document for j, f in fits.items()}
        exact = moments(scaled, ik, trial, id_setup, loads)
        fitted = moments(scaled, ik, trial, id_setup, loads, documents)
    generic = read_osim(GENERIC)
    comparison = fitted_moment_arms(generic, spline_joint_from_osim(generic, "knee_r"),
                                    QUADRICEPS, "knee_angle_r")
    images = Path(args.images)
    _plot_moments(images / "fitted_knee_moments.png", exact[1], fitted[1])
    _plot_arms(images / "fitted_knee_moment_arms.png", comparison)
    command = "python scripts/pictures/fitted_knee.py" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    stamp = run_pages.stamp(command, machine_description())
    block = run_pages.block("figures", stamp, tables(scaled, fits, exact, fitted, comparison))
    run_pages.update_page(args.page, {"figures": block}, ["figures"], intro=INTRO)
    print(f"wrote {args.page} and {images / 'fitted_knee_moments.png'}, "
          f"{images / 'fitted_knee_moment_arms.png'}")


if __name__ == "__main__":
    main()
