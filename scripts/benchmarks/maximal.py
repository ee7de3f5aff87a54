"""Benchmarks of the maximal-coordinate solvers (seeds 001 and 004).

Rows (dicts), per backend, for

* the skeleton step (seed 001) on chains of 10, 100 and 1000 bodies (every third joint
  spherical, random consistent velocities): median time per step;
* the assembly of a 56-body structure with 264 scalar constraints (8 rows of 7 bars on
  pins, rows linked by ball joints, hung from the world; Faure's had 261): median time of a
  full correction from a perturbed configuration;
* the accuracy-for-speed table of seed 004 section 4.3: Stoermer steps of that structure
  under gravity at dt = 1/30 s with (geometric iterations x CG iterations) caps: median
  time per step and the largest constraint error after the step.

The skeleton step, the assembly and the Stoermer steps run on both backends of
:mod:`core.backend` in the same run (``backend_name``): on "numba" the skeleton step is one
compiled kernel call (:mod:`core.compiled.skeleton`, elimination over the tree) and the
projection's conjugate gradients are one compiled kernel call,
:func:`core.compiled.kernels.cg`.
:func:`bench_maximal_tables` is the section "maximal" of scripts/bench.py.
"""

import time

import numpy as np

from core import backend
from core.lie import se3, so3
from core.maximal.faure import Assembly, FaureJoint
from core.maximal.skeleton import chain

from .common import table

ROWS, COLS, BAR, GAP = 8, 7, 0.3, 0.35


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def skeleton_rows(sizes=(10, 100, 1000), repeats=7, backend_name="numpy"):
    return on_backend(backend_name, lambda: _skeleton_rows(sizes, repeats))


def _skeleton_rows(sizes, repeats):
    rows = []
    for n in sizes:
        skel, st = chain(n, spherical=tuple(range(0, n - 1, 3)))
        rng = np.random.default_rng(0)
        st.v = rng.normal(size=st.v.shape)
        st.w = rng.normal(size=st.w.shape)
        st, _ = skel.stabilize(st)
        box = [st]

        def step():
            box[0], _ = skel.step(box[0], 1e-3)

        step()                                   # compiles (or loads) the step kernel
        rows.append({"case": f"skeleton step, {n} bodies ({skel.n} joints, rank {skel.rank})",
                     "bodies": n, "seconds": _median_time(step, repeats)})
    return rows


def structure():
    """The 56-body structure: returns an assembled :class:`Assembly`."""
    p, R = [], []
    for r in range(ROWS):
        for c in range(COLS):
            p.append([c * BAR + BAR / 2, -r * GAP, 0.0])
            R.append(np.eye(3))
    Rz = so3.exp(np.array([0.0, -np.pi / 2, 0.0]))  # frame axis i = z
    joints = []
    for r in range(ROWS):
        for c in range(COLS - 1):
            a, b = r * COLS + c, r * COLS + c + 1
            joints.append(FaureJoint("pin", a, b, se3.from_rp(Rz, [BAR / 2, 0, 0]),
                                     se3.from_rp(Rz, [-BAR / 2, 0, 0])))
    for r in range(ROWS - 1):
        c = 0 if r % 2 == 0 else COLS - 1
        a, b = r * COLS + c, (r + 1) * COLS + c
        joints.append(FaureJoint("universal", a, b, se3.from_rp(np.eye(3), [0, -GAP / 2, 0]),
                                 se3.from_rp(np.eye(3), [0, GAP / 2, 0])))
    joints.append(FaureJoint("universal", -1, 0, se3.from_rp(np.eye(3), [BAR / 2, GAP / 2, 0]),
                             se3.from_rp(np.eye(3), [0, GAP / 2, 0])))
    n = ROWS * COLS
    inertia = np.broadcast_to(np.diag([1e-4, BAR ** 2 / 12, BAR ** 2 / 12]), (n, 3, 3))
    return Assembly(np.ones(n), inertia, joints, np.array(p), np.array(R))


def perturbed(seed=0, sigma_p=0.02, sigma_r=0.05):
    asm = structure()
    rng = np.random.default_rng(seed)
    asm.p += rng.normal(scale=sigma_p, size=asm.p.shape)
    asm.R = so3.exp(rng.normal(scale=sigma_r, size=(asm.nbodies, 3))) @ asm.R
    return asm


def on_backend(name, fn):
    """``fn()`` with backend ``name`` active (None where numba does not import)."""
    if name == "numba" and not backend.available():
        return None
    previous = backend.use(name)
    try:
        return fn()
    finally:
        backend.use(previous)


def assembly_rows(repeats=5, backend_name="numpy"):
    return on_backend(backend_name, lambda: _assembly_rows(repeats))


def _assembly_rows(repeats):
    base = perturbed()
    p0, R0 = base.p.copy(), base.R.copy()
    infos = []

    def run():
        base.p, base.R = p0.copy(), R0.copy()
        infos.append(base.correction(geometric_iterations=10, cg_iterations=300, tol=1e-10)[1])

    run()                                        # compiles (or loads) the CG kernel
    sec = _median_time(run, repeats)
    info = infos[-1]
    return [{"case": f"assembly, {base.nbodies} bodies / {base.nconstraints} constraints "
                     f"({info.geometric_iterations} geometric iterations, "
                     f"CG {list(info.cg_iterations)}, error {info.error:.1e})",
             "bodies": base.nbodies, "seconds": sec}]


def accuracy_for_speed(geometric=(1, 2, 3), cg=(5, 15, 50), steps=8, dt=1.0 / 30.0,
                       backend_name="numpy"):
    return on_backend(backend_name, lambda: _accuracy_for_speed(geometric, cg, steps, dt))


def _accuracy_for_speed(geometric, cg, steps, dt):
    table = []
    for gi in geometric:
        for ci in cg:
            asm = structure()
            f = asm.gravity_forces((0.0, -9.81, 0.0))
            asm.set_velocity(np.zeros((asm.nbodies, 6)), dt, asm.free_acceleration(f))
            times, errs = [], []
            for _ in range(steps):
                t = time.perf_counter()
                info = asm.step(dt, f, geometric_iterations=gi, cg_iterations=ci, tol=0.0)
                times.append(time.perf_counter() - t)
                errs.append(np.abs(asm.errors()).max())
            table.append({"geometric": gi, "cg": ci, "seconds": float(np.median(times)),
                          "error": float(np.max(errs)), "last_error": info.error})
    return table


def bench_maximal_tables(quick=False):
    """The section of scripts/bench.py: the rows above as tables (quick: fewer bodies and
    repeats); the skeleton step, the assembly and the Stoermer steps on both backends side by
    side."""
    both = ("numpy", "numba")
    skeleton = {b: skeleton_rows(sizes=(10, 100) if quick else (10, 100, 1000),
                                 repeats=3 if quick else 7, backend_name=b) for b in both}
    assembly = {b: assembly_rows(repeats=2 if quick else 5, backend_name=b) for b in both}
    accuracy = {b: accuracy_for_speed(steps=3 if quick else 8, backend_name=b)
                for b in both}
    fast = accuracy["numba"] or [{"seconds": "", "error": ""}] * len(accuracy["numpy"])
    rows = [[r["case"], r["bodies"], r["seconds"] * 1e3,
             skeleton["numba"][k]["seconds"] * 1e3 if skeleton["numba"] else ""]
            for k, r in enumerate(skeleton["numpy"])]
    for k, r in enumerate(assembly["numpy"]):
        rows.append([r["case"], r["bodies"], r["seconds"] * 1e3,
                     assembly["numba"][k]["seconds"] * 1e3 if assembly["numba"] else ""])
    return [
        table("Maximal coordinates: skeleton step (seed 001) and assembly (seed 004)",
              ["case", "bodies", "numpy median ms per call", "numba median ms per call"],
              rows, note="on numba the skeleton step is one kernel call (elimination over the "
                         "tree, update and stabilization) and the assembly's conjugate "
                         "gradients are compiled"),
        table("Maximal coordinates: Stoermer step of the 56-body structure, dt = 1/30 s "
              "(seed 004 section 4.3)",
              ["geometric iterations", "CG iterations", "numpy median ms per step",
               "numba median ms per step", "numpy max constraint error",
               "numba max constraint error"],
              [[r["geometric"], r["cg"], r["seconds"] * 1e3,
                f["seconds"] * 1e3 if f["seconds"] != "" else "", r["error"], f["error"]]
               for r, f in zip(accuracy["numpy"], fast)]),
    ]
