"""What the benchmark sections share: timing (:func:`median_us`), tables (:func:`table`,
:func:`format_table`), the machine description, and :data:`ENTRY`, the command line that
runs one of them (scripts/bench.py, where the sections are listed)."""

import os
import platform
import time
import timeit

import numpy as np

#: scripts/bench.py, run in a fresh process for each section and for the Blender workers
ENTRY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench.py")


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
