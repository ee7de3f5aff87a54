"""The project's single benchmark entry point (never a timed test).

    python scripts/bench.py                      # every section
    python scripts/bench.py --only joints        # one section (repeat --only for more)
    python scripts/bench.py --quick              # fewer repeats and smaller batches

Prints the machine description and one markdown table per measurement (every section runs
in a process of its own, with :data:`SECTION_ENV`), each figure the median over timing runs
(:func:`median_us`: ``timeit`` runs of >= 0.1 s, 5 of them) in microseconds per call unless
the column says otherwise.

Adding a section: write ``bench_<name>(quick: bool) -> list[Table] | list[dict]`` in a
sibling script ``scripts/bench_<name>.py`` (build tables with :func:`table`, time with
:func:`median_us`, both imported with ``from bench import median_us, table``) and add one
line to :data:`SECTIONS`.
"""

import argparse
import importlib
import os
import platform
import subprocess
import sys
import time
import timeit

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (ROOT, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)

#: section name -> "module:function" (resolved when the section runs, so ``--only joints``
#: does not import the other sections' dependencies). A function takes ``quick`` and
#: returns a list of tables made by :func:`table`, or a list of flat row dicts with the
#: same keys (tabulated as one table, keys as columns, ``None`` as a blank cell).
SECTIONS = {
    "joints": "bench:bench_joints",
    "spline": "bench_spline:bench_spline",
    "expcoords": "bench_expcoords:bench_expcoords_tables",
    "fitting": "bench_fitting:bench_fitting_tables",
    "dynamics": "bench_dynamics:bench_dynamics",
    "mechanisms": "bench_mechanisms:bench_mechanisms",
    "realtime": "bench_realtime:bench_realtime",
    "maximal": "bench:bench_maximal_tables",
    "sweep": "bench_sweep:bench_sweep",
    "batch": "bench_batch:bench_batch",
    "osim": "bench_osim:bench_osim",
    "massprops": "bench_massprops:bench_massprops",
    "linkages": "bench_linkages:bench_linkages",
    "rigs": "bench_rigs:bench_rigs",
    "blender": "bench_blender_latency:bench_blender_latency",
    "playback": "bench_playback:bench_playback",
    "contacts": "bench_contacts:bench_contacts",
    "contact_demos": "bench_contact_demos:bench_contact_demos",
}

#: environment of a section's process where it differs from the caller's: the dynamics,
#: contacts, contact_demos, realtime and rigs sections time small products, which OpenBLAS
#: threads stall (see bench_dynamics)
SECTION_ENV = {"dynamics": {"OPENBLAS_NUM_THREADS": "1"},
               "contacts": {"OPENBLAS_NUM_THREADS": "1"},
               "contact_demos": {"OPENBLAS_NUM_THREADS": "1"},
               "realtime": {"OPENBLAS_NUM_THREADS": "1"},
               "rigs": {"OPENBLAS_NUM_THREADS": "1"}}


# -- helpers the sections share ------------------------------------------------------------
def median_us(fn, quick=False, repeat=None, cpu=False):
    """Median wall time of one call of ``fn()`` in microseconds.

    The number of calls per run grows until one run takes >= 0.1 s (>= 0.02 s with
    ``quick``); then ``repeat`` runs (default 5, quick 3) are timed and the median returned.
    ``cpu=True`` times process CPU time instead (``time.process_time``), which other
    processes on a shared machine inflate less than wall time.
    """
    timer = timeit.Timer(fn, timer=time.process_time) if cpu else timeit.Timer(fn)
    target = 0.02 if quick else 0.1
    number = 1
    while True:
        if timer.timeit(number) >= target:
            break
        number *= 2 if number < 8 else 4
    runs = timer.repeat(repeat=repeat or (3 if quick else 5), number=number)
    return float(np.median(runs)) / number * 1e6


def table(title, columns, rows, note=None):
    """A table for :func:`format_table`: ``rows`` is a list of lists matching ``columns``."""
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"table {title!r}: row {row!r} has {len(row)} cells, "
                             f"expected {len(columns)} ({columns})")
    return {"title": title, "columns": list(columns), "rows": [list(r) for r in rows],
            "note": note}


def _cell(x):
    if isinstance(x, (float, np.floating)):
        ax = abs(x)
        if ax >= 1e4:
            return f"{x:,.0f}"
        if ax >= 10:
            return f"{x:.1f}"
        if ax >= 0.1 or ax == 0:
            return f"{x:.2f}"
        return f"{x:.3g}"
    return str(x)


def format_table(t):
    """Markdown for one table made by :func:`table`."""
    lines = [f"### {t['title']}", "", "| " + " | ".join(t["columns"]) + " |",
             "|" + "|".join("---" if i == 0 else "--:" for i in range(len(t["columns"]))) + "|"]
    lines += ["| " + " | ".join(_cell(x) for x in row) + " |" for row in t["rows"]]
    if t.get("note"):
        lines += ["", t["note"]]
    return "\n".join(lines) + "\n"


def machine_description():
    """One line: CPU model, logical cores, load average (other work skews the medians),
    Python, numpy and scipy versions, OS."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        if names:
            cpu = names[0]
    except OSError:
        pass
    import scipy
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (f"CPU: {cpu} ({os.cpu_count()} logical cores, load average {load} at start); "
            f"Python {platform.python_version()}; numpy {np.__version__}; "
            f"scipy {scipy.__version__}; {platform.system()} {platform.release()}")


# -- joints ---------------------------------------------------------------------------------
def _joint_cases():
    """(label, joint) for every joint family, with representative parameters."""
    from core.joints import (Cylindrical, Elliptic, Free, Helical, Planar, Prismatic, Revolute,
                             Spherical, SplineCurveJoint, SplineJoint, Universal)
    from core.lie import se3
    rng = np.random.default_rng(1)
    frames = se3.exp(np.cumsum(rng.normal(size=(8, 6)) * 0.3, axis=0))
    knots = np.linspace(-1.5, 1.5, 10)
    surface = SplineJoint([knots, knots], rng.normal(size=(6, 6, 6)) * 0.2)
    return [
        ("Revolute", Revolute((0.0, 0.6, 0.8))),
        ("Prismatic", Prismatic((0.0, 0.6, 0.8))),
        ("Helical", Helical((0.0, 0.6, 0.8), 0.05)),
        ("Cylindrical", Cylindrical((0.0, 0.6, 0.8))),
        ("Universal", Universal((1.0, 0.0, 0.0), (0.0, 1.0, 0.0))),
        ("Planar", Planar()),
        ("Elliptic(2, 1)", Elliptic(2.0, 1.0)),
        ("Spherical", Spherical()),
        ("Free", Free()),
        ("SplineCurveJoint (cubic, 8 frames)", SplineCurveJoint(frames)),
        ("SplineJoint (n = 2, cubic, 6 twists)", surface),
    ]


def joint_tables(title, cases, quick, rng, q_at, notes=(None, None)):
    """Two tables for ``cases`` (``[(label, joint)]``): per-call medians of transform,
    jacobian, hessian and evaluate (and evaluate in CPU time) at ``q_at(lo, hi) -> (nq,)``,
    and batched ``transforms`` throughput at N uniform coordinates from ``rng`` in the
    joint's limits (in [-1, 1] where a coordinate is unlimited)."""
    n_batch = 1_000 if quick else 10_000
    single, batch = [], []
    for label, joint in cases:
        lo = np.where(np.isfinite(joint.lower), joint.lower, -1.0)
        hi = np.where(np.isfinite(joint.upper), joint.upper, 1.0)
        q = q_at(lo, hi)
        qs = rng.uniform(lo, hi, (n_batch, joint.nq))
        times = [median_us(lambda f=f: f(q), quick) for f in
                 (joint.transform, joint.jacobian, joint.hessian, joint.evaluate)]
        single.append([label, joint.nq] + times
                      + [median_us(lambda: joint.evaluate(q), quick, cpu=True)])
        t = median_us(lambda: joint.transforms(qs), quick)
        tc = median_us(lambda: joint.transforms(qs), quick, cpu=True)
        batch.append([label, n_batch, t / 1e3, t / n_batch, n_batch / t * 1e6,
                      n_batch / tc * 1e6])
    return [
        table(f"{title}: one configuration (us per call, median)",
              ["joint", "nq", "transform", "jacobian", "hessian", "evaluate (G,S,H)",
               "evaluate, CPU time"], single, note=notes[0]),
        table(f"{title}: batched transforms(qs) at N = {n_batch:,}",
              ["joint", "N", "ms per batch", "us per q", "q per second",
               "q per CPU second"], batch, note=notes[1]),
    ]


def bench_joints(quick=False):
    """Per-call medians of transform, jacobian, hessian, evaluate for every joint family, and
    batched ``transforms`` throughput. Coordinates are uniform in the joint's limits, or in
    [-1, 1] where a coordinate is unlimited."""
    rng = np.random.default_rng(0)
    return joint_tables("Joints", _joint_cases(), quick, rng, rng.uniform)


# -- maximal coordinates (scripts/bench_maximal.py returns its own row dicts) -----------------
def bench_maximal_tables(quick=False):
    """The rows of ``scripts/bench_maximal.py`` as tables (quick: fewer bodies and repeats);
    the skeleton step, the assembly and the Stoermer steps on both backends side by side."""
    import bench_maximal as bm
    both = ("numpy", "numba")
    skeleton = {b: bm.skeleton_rows(sizes=(10, 100) if quick else (10, 100, 1000),
                                    repeats=3 if quick else 7, backend_name=b) for b in both}
    assembly = {b: bm.assembly_rows(repeats=2 if quick else 5, backend_name=b) for b in both}
    accuracy = {b: bm.accuracy_for_speed(steps=3 if quick else 8, backend_name=b)
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


# -- entry point ------------------------------------------------------------------------------
def run_section(name, quick=False):
    """Run one section of :data:`SECTIONS` and return its markdown."""
    module_name, func_name = SECTIONS[name].split(":")
    if module_name == "bench":
        func = globals()[func_name]
    else:
        func = getattr(importlib.import_module(module_name), func_name)
    return f"## {name}\n\n" + "\n".join(format_table(t) for t in _as_tables(name, func(quick)))


def _as_tables(name, result):
    """A section's result as tables: tables pass through, row dicts become one table."""
    result = list(result)
    if all(isinstance(t, dict) and {"title", "columns", "rows"} <= set(t) for t in result):
        return result
    if all(isinstance(r, dict) for r in result) and result:
        columns = list(result[0])
        if any(list(r) != columns for r in result):
            raise ValueError(f"section {name!r}: row dicts must all have the keys {columns}")
        rows = [["" if r[c] is None else r[c] for c in columns] for r in result]
        return [table(f"{name} (median wall times)", columns, rows)]
    raise TypeError(f"section {name!r} must return tables made by bench.table() or a list of "
                    f"row dicts; got {type(result[0]).__name__ if result else 'nothing'}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=sorted(SECTIONS),
                        help="run only this section (may be repeated)")
    parser.add_argument("--quick", action="store_true",
                        help="3 repeats of >= 20 ms and small batches (a smoke run)")
    parser.add_argument("--section", choices=sorted(SECTIONS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.section:                          # a child of the loop below: the tables only
        print(run_section(args.section, args.quick), flush=True)
        return
    print("# Spline Joints benchmarks\n")
    print(machine_description() + ("; --quick" if args.quick else "") + "\n", flush=True)
    # every section in a fresh process (with SECTION_ENV): OpenBLAS threads busy-wait after
    # a threaded product, and left spinning by one section they doubled the CPU time of the
    # next one's small calls and slowed the dynamics section's N = 128 chain tenfold
    for name in args.only or list(SECTIONS):
        subprocess.run([sys.executable, os.path.abspath(__file__), "--section", name]
                       + (["--quick"] if args.quick else []),
                       env={**os.environ, **SECTION_ENV.get(name, {})}, check=True)


if __name__ == "__main__":
    main()
