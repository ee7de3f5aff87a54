"""Draw what a bone's spring settings mean: the same setting on a 1 cm and a 1 m bone.

    .venv/bin/python scripts/pictures/spring_settings.py [--out docs/images/spring_settings.png]

Two bones shaped alike (solid capsules of radius a tenth of their length, water's density,
:func:`core.massprops.capsule_mass_properties`), each on a hinge
at the world origin with no gravity, start at their rest pose swinging at 1.5 rad/s and are
simulated by the core (:func:`core.rig.simulate_rig`, the add-on's defaults: Implicit Euler,
24 fps, 16 substeps). Left: Frequency 2 Hz and Damping Ratio 0.1 (the add-on's Frequency and
Ratio units): the two curves lie on each other, a damped oscillation at 2 Hz. Right: the
Stiffness and Damping (Stiffness and Damping units) that give the 1 m bone that same
motion, typed in for both: the 1 cm bone, 10^10 times lighter to turn, is held at its rest
pose at once (the implicit method keeps it stable). The plot is written through
``core.io.atomic_path``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from core.io import atomic_path  # noqa: E402
from core.lie import so3  # noqa: E402
from core.massprops import capsule_mass_properties  # noqa: E402
from core.rig import (RigBody, RigJoint, build_rig, simulate_rig,  # noqa: E402
                      spring_from_frequency)

FPS, SUBSTEPS, DURATION, RATE = 24.0, 16, 3.0, 1.5
FREQUENCY, RATIO = 2.0, 0.1
LENGTHS = (0.01, 1.0)


def bone(length, joint):
    """A capsule bone of ``length`` on a hinge about X at the origin, starting at its rest
    pose turning at :data:`RATE` rad/s (central differences of the frames around it)."""
    capsule = capsule_mass_properties(0.1 * length, length, 1000.0)
    turn = np.eye(4)
    turn[:3, :3] = so3.exp(np.array([RATE / FPS, 0.0, 0.0]))
    return RigBody("bone", -1, np.eye(4), joint, mass=capsule.mass, com=capsule.com,
                   inertia=capsule.inertia, pose=np.eye(4), pose_before=turn.T,
                   pose_after=turn)


def swing(length, joint):
    """Times (F,) and the hinge angle (F,) in degrees of one bone."""
    rig = build_rig([bone(length, joint)], gravity=(0.0, 0.0, 0.0), fps=FPS,
                    substeps=SUBSTEPS, duration=DURATION, integrator="implicit")
    result = simulate_rig(rig)
    return result.times, np.degrees(result.q[:, 0])


def draw(out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    big = bone(LENGTHS[1], RigJoint("hinge"))
    hinge_inertia = big.inertia[0, 0] + big.mass * big.com[1] ** 2
    k, c = (float(x[0]) for x in spring_from_frequency([hinge_inertia], FREQUENCY, RATIO))
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.2), sharey=True, constrained_layout=True)
    panels = ((RigJoint("hinge", frequency=FREQUENCY, damping_ratio=RATIO),
               f"Frequency {FREQUENCY:g} Hz, Damping Ratio {RATIO:g}"),
              (RigJoint("hinge", stiffness=k, damping=c),
               f"Stiffness {k:.4g} N m/rad, Damping {c:.3g} N m s/rad"))
    for ax, (joint, title) in zip(axes, panels):
        for length, style in zip(LENGTHS, ("-", "--")):
            t, angle = swing(length, joint)
            ax.plot(t, angle, style, lw=1.6, label=f"{100 * length:g} cm bone")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper right")
    axes[0].set_ylabel("swing (deg)")
    with atomic_path(out) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parents[2] / "docs" / "images" /
                        "spring_settings.png")
    args = parser.parse_args(argv)
    draw(args.out)
    print(args.out)


if __name__ == "__main__":
    main()
