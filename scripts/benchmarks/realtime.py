"""Real-time benchmark: simulated seconds per wall second of every demo bake at its own
defaults (the builder's ``fps``, ``substeps`` and ``duration``) and of the character demo's
rig (scripts/demos/character_rig.py built in the core, :func:`scripts.benchmarks.rigs.character_rig`, at its
frame rate and frame range with the Simulate panel's 16 RK4 substeps), on both backends of
:mod:`core.backend` in the same run, against the target of 20 (a bake at least twenty times
faster than the motion it records).

    python scripts/bench.py --only realtime [--quick]

Each figure is the median of ``repeat`` bakes (3, quick 1) of
:func:`core.mechanisms.simulate_mechanism` (its ``wall_time``: the stepping and the
per-frame records, poses and energies; the constraint-error measure after the run is not in
it); the numba backend bakes each demo once before timing (compiling or loading the
kernels). Run it with ``OPENBLAS_NUM_THREADS=1`` (``SECTION_ENV`` of scripts/bench.py): the small
products of the numpy path stall on OpenBLAS threads.
"""

import numpy as np

from core.mechanisms import DEMOS

from .common import table
from .mechanisms import _run

#: simulated seconds per wall second a default bake should reach on the numba backend
TARGET = 20.0


def _character_row(repeat):
    """The row of the character demo's rig (:func:`scripts.benchmarks.rigs.character_rig`, core only):
    the median ``wall_time`` of ``repeat`` runs of :func:`core.rig.simulate_rig` per
    backend (the numba backend runs it once first)."""
    from core.rig import simulate_rig

    from .maximal import on_backend
    from .rigs import character_rig

    def walls():
        rig = character_rig()
        simulate_rig(rig)
        return rig.mechanism, float(np.median([simulate_rig(rig).wall_time
                                               for _ in range(repeat)]))
    runs = {b: on_backend(b, walls) for b in ("numpy", "numba")}
    mech, wall = runs["numpy"]
    rate = None if runs["numba"] is None else mech.duration / runs["numba"][1]
    return ["character_rig (rig, core)", mech.fps, mech.substeps, mech.duration, mech.dt * 1e3,
            (mech.n_frames - 1) * mech.substeps, mech.duration / wall,
            "" if rate is None else rate, "" if rate is None else rate * wall / mech.duration,
            "" if rate is None else ("yes" if rate >= TARGET else "no")]


def bench_realtime(quick=False):
    """One table: per demo its defaults and simulated seconds per wall second on numpy and
    numba."""
    repeat = 1 if quick else 3
    rows = []
    for name in DEMOS:
        runs = {b: _run(name, None, repeat, b) for b in ("numpy", "numba")}
        mech, res, wall, _ = runs["numpy"]
        fast = runs["numba"]
        rate = None if fast is None else mech.duration / fast[2]
        rows.append([name, mech.fps, mech.substeps, mech.duration, mech.dt * 1e3, res.steps,
                     mech.duration / wall, "" if rate is None else rate,
                     "" if rate is None else rate * wall / mech.duration,
                     "" if rate is None else ("yes" if rate >= TARGET else "no")])
    rows.append(_character_row(repeat))
    return [table(f"Real time: simulated s per wall s of each demo bake at its defaults "
                  f"(median of {repeat}), both backends in the same run",
                  ["demo", "fps", "substeps", "duration (s)", "dt (ms)", "steps",
                   "numpy sim s / wall s", "numba sim s / wall s", "numba / numpy",
                   f"numba >= {TARGET:g}"], rows,
                  note="wall time of simulate_mechanism's loop: the steps and every frame's "
                       "record (poses, energies); on a shared machine other work lowers "
                       "these figures (see the load average above)")]
