"""The project's single benchmark entry point (never a timed test).

    python scripts/bench.py                      # every section
    python scripts/bench.py --only joints        # one section (repeat --only for more)
    python scripts/bench.py --quick              # fewer repeats and smaller batches
    python scripts/bench.py --only dynamics --against fa9c04a9   # beside another commit

A run that is not ``--quick`` also writes its sections into the documentation site's
benchmarks page, docs/benchmarks.md (``--page PATH`` elsewhere, ``--no-page`` not at all;
:mod:`scripts.run_pages`), each with the command, the date and the machine.

Prints the machine description and one markdown table per measurement (every section runs
in a process of its own, with :data:`SECTION_ENV`), each figure the median over timing runs
(``median_us``: ``timeit`` runs of >= 0.1 s, 5 of them) in microseconds per call unless
the column says otherwise.

``--against REV`` runs each section also from a checkout of the commit REV (a temporary git
worktree; each tree's kernels are compiled into its own cache first), the two processes one
after the other in alternating order, and adds a table of
the ratios, this tree's figure over REV's, for every numeric cell the two tables share (rows
matched by their first cell); the section's tables on the page are this tree's, followed by
REV's and the ratios.

Adding a section: write ``bench_<name>(quick: bool) -> list[Table] | list[dict]`` in a
module ``scripts/benchmarks/<name>.py`` (build tables with ``table``, time with
``median_us``, both from ``scripts/benchmarks/common.py``) and add one line to
:data:`SECTIONS`. A section that measures in fresh Blender processes runs them as
``bench.py --section NAME --worker OUT``, which calls its module's ``worker(OUT, quick)``.
"""

import argparse
import contextlib
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from scripts import run_pages as page  # noqa: E402
from scripts.benchmarks.common import format_table, machine_description, table  # noqa: E402

#: section name -> "module:function" of scripts/benchmarks/ (resolved when the section runs,
#: so ``--only joints`` does not import the other sections' dependencies). A function takes ``quick`` and
#: returns a list of tables made by :func:`table`, or a list of flat row dicts with the
#: same keys (tabulated as one table, keys as columns, ``None`` as a blank cell).
SECTIONS = {
    "joints": "joints:bench_joints",
    "spline": "spline:bench_spline",
    "expcoords": "expcoords:bench_expcoords_tables",
    "fitting": "fitting:bench_fitting_tables",
    "dynamics": "dynamics:bench_dynamics",
    "mechanisms": "mechanisms:bench_mechanisms",
    "realtime": "realtime:bench_realtime",
    "maximal": "maximal:bench_maximal_tables",
    "sweep": "sweep:bench_sweep",
    "batch": "batch:bench_batch",
    "osim": "osim:bench_osim",
    "massprops": "massprops:bench_massprops",
    "linkages": "linkages:bench_linkages",
    "rigs": "rigs:bench_rigs",
    "blender": "blender_latency:bench_blender_latency",
    "first_use": "first_use:bench_first_use",
    "playback": "playback:bench_playback",
    "contacts": "contacts:bench_contacts",
    "contact_demos": "contact_demos:bench_contact_demos",
    "mocap": "mocap:bench_mocap",
    "muscles": "muscles:bench_muscles",
}

#: environment of a section's process where it differs from the caller's: the dynamics,
#: contacts, contact_demos, realtime, rigs and first_use (its Blender workers) sections time
#: small products, which OpenBLAS threads stall (see benchmarks/dynamics.py)
SECTION_ENV = {"dynamics": {"OPENBLAS_NUM_THREADS": "1"},
               "first_use": {"OPENBLAS_NUM_THREADS": "1"},
               "contacts": {"OPENBLAS_NUM_THREADS": "1"},
               "contact_demos": {"OPENBLAS_NUM_THREADS": "1"},
               "realtime": {"OPENBLAS_NUM_THREADS": "1"},
               "rigs": {"OPENBLAS_NUM_THREADS": "1"}}


# -- entry point ------------------------------------------------------------------------------
def _module(name):
    """The module of section ``name`` in scripts/benchmarks/."""
    return importlib.import_module("scripts.benchmarks." + SECTIONS[name].split(":")[0])


def run_section(name, quick=False):
    """Run one section of :data:`SECTIONS` and return its tables' markdown."""
    func = getattr(_module(name), SECTIONS[name].split(":")[1])
    return "\n".join(format_table(t) for t in _as_tables(name, func(quick)))


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
    raise TypeError(f"section {name!r} must return tables made by benchmarks.common.table() or a list of "
                    f"row dicts; got {type(result[0]).__name__ if result else 'nothing'}")


def _parse_tables(markdown):
    """The tables of a section's markdown: ``[(title, columns, {first cell: cells})]``."""
    tables, title, columns, rows = [], None, None, None
    for line in markdown.splitlines() + [""]:
        if line.startswith("### "):
            title, columns, rows = line[4:], None, {}
        elif line.startswith("| ") and title is not None:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if columns is None:
                columns = cells
            else:
                rows[cells[0]] = cells
        elif line.startswith("|--") or line.startswith("|---"):
            continue
        elif columns is not None:
            tables.append((title, columns, rows))
            title, columns, rows = None, None, None
    return tables


def _number(cell):
    """The figure of a table cell (bold and a parenthesised note removed), or None."""
    m = re.fullmatch(r"\**(-?[0-9][0-9,]*(?:\.[0-9]*)?(?:e[-+]?[0-9]+)?)\**(?: \(.*\))?", cell)
    return float(m.group(1).replace(",", "")) if m else None


def ratio_tables(ours, theirs, rev):
    """Markdown of one table per table title both runs printed: this tree's figure over
    ``rev``'s for every numeric cell in a row (matched by its first cell) and column both
    have, blank where either is not a number; a table none of whose rows has as many cells
    as its header is left out."""
    out = []
    other = {title: (columns, rows) for title, columns, rows in _parse_tables(theirs)}
    for title, columns, rows in _parse_tables(ours):
        if title not in other:
            continue
        their_columns, their_rows = other[title]
        lines = [f"### {title}: this tree / {rev}", "", "| " + " | ".join(columns) + " |",
                 "|" + "|".join("---" if i == 0 else "--:" for i in range(len(columns))) + "|"]
        for key, cells in rows.items():
            if key not in their_rows or len(cells) != len(columns):
                continue
            row = [key]
            for column, cell in zip(columns[1:], cells[1:]):
                a = _number(cell)
                b = (_number(their_rows[key][their_columns.index(column)])
                     if column in their_columns else None)
                row.append(f"{a / b:.2f}" if a is not None and b else "")
            lines.append("| " + " | ".join(row) + " |")
        if len(lines) > 4:                  # a header with a "|" in a cell matches no row
            out.append("\n".join(lines) + "\n")
    return "\n".join(out)


class _Checkout:
    """A temporary detached git worktree of ``rev`` beside this repository, removed on exit."""

    def __init__(self, root, rev):
        self.root, self.rev = root, rev

    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix="bench-against-")
        os.rmdir(self.path)
        subprocess.run(["git", "-C", self.root, "worktree", "add", "--detach", "-q", self.path,
                        self.rev], check=True)
        return self.path

    def __exit__(self, *exc):
        subprocess.run(["git", "-C", self.root, "worktree", "remove", "--force", self.path],
                       check=False)
        shutil.rmtree(self.path, ignore_errors=True)


def _section_output(script, name, quick):
    """The markdown a fresh process of ``script`` (a bench.py) prints for section ``name``."""
    return subprocess.run([sys.executable, script, "--section", name]
                          + (["--quick"] if quick else []), stdout=subprocess.PIPE, text=True,
                          env={**os.environ, **SECTION_ENV.get(name, {})}, check=True).stdout


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=sorted(SECTIONS),
                        help="run only this section (may be repeated)")
    parser.add_argument("--quick", action="store_true",
                        help="3 repeats of >= 20 ms and small batches (a smoke run)")
    parser.add_argument("--page", metavar="PATH",
                        help=f"the benchmarks page to write the sections into (default {page.PAGE}; "
                             "a --quick run writes none unless given)")
    parser.add_argument("--no-page", action="store_true", help="print the tables only")
    parser.add_argument("--against", metavar="REV",
                        help="also run each section from the commit REV and add the ratios")
    parser.add_argument("--section", choices=sorted(SECTIONS), help=argparse.SUPPRESS)
    parser.add_argument("--worker", metavar="OUT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:                           # a fresh Blender process of a section
        _module(args.section).worker(args.worker, args.quick)
        return
    if args.section:                          # a child of the loop below: the tables only
        print(run_section(args.section, args.quick), flush=True)
        return
    machine = machine_description() + ("; --quick" if args.quick else "")
    target = None if args.no_page else args.page or (None if args.quick else page.PAGE)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    python = os.path.relpath(sys.executable, root)
    command = " ".join([python if not python.startswith("..") else "python", "scripts/bench.py"]
                       + (argv if argv is not None else sys.argv[1:]))
    print("# Spline Joints benchmarks\n")
    print(machine + "\n", flush=True)
    # every section in a fresh process (with SECTION_ENV): OpenBLAS threads busy-wait after
    # a threaded product, and left spinning by one section they doubled the CPU time of the
    # next one's small calls and slowed the dynamics section's N = 128 chain tenfold
    with _Checkout(root, args.against) if args.against else contextlib.nullcontext() as other:
        for tree in (root, other) if other else ():
            # each tree's kernels compiled into its own cache first: a process that compiles
            # them runs them slower than one that loads them (benchmarks/dynamics.py)
            subprocess.run([sys.executable, "-c", "from core.warm_up import warm_up; warm_up()"],
                           cwd=tree, check=True)
        for i, name in enumerate(args.only or list(SECTIONS)):
            ours = None
            if other and i % 2:             # alternate which tree runs first
                ours = _section_output(os.path.abspath(__file__), name, args.quick)
            theirs = other and _section_output(os.path.join(other, "scripts", "bench.py"), name,
                                               args.quick)
            ours = ours or _section_output(os.path.abspath(__file__), name, args.quick)
            tables = ours if not other else (
                f"{ours}\n#### The same run from {args.against}\n\n{theirs}\n"
                f"{ratio_tables(ours, theirs, args.against)}")
            print(f"## {name}\n\n{tables}", flush=True)
            if target:                        # after every section: a later failure keeps it
                page.update_page(target, {name: page.block(name, page.stamp(command, machine),
                                                           tables)}, list(SECTIONS))
    if target:
        print(f"wrote {target}")


if __name__ == "__main__":
    main()
