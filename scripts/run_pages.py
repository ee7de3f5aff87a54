"""Pages of the documentation site written by runs, not by hand: the benchmarks page
(docs/benchmarks.md, scripts/bench.py) and the main job's tables (docs/main-job.md,
scripts/main.py). A page is an intro and one block per section, each with the command, the
date, the machine and its load average at the start of the run, then the section's tables.

A run replaces the blocks of the sections it ran and keeps the others, so
``bench.py --only linkages`` refreshes one section and leaves the rest as their last runs
wrote them. Blocks are delimited by HTML comments (``<!-- bench:NAME -->`` ...
``<!-- /bench:NAME -->``), kept in the order the writer gives; the page is written
atomically (:func:`core.io.atomic_write`)."""

import datetime
import os
import re

from core.io import atomic_write

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "docs")
#: the page a default run of scripts/bench.py writes
PAGE = os.path.join(DOCS, "benchmarks.md")

INTRO = """# Benchmarks

Every figure on this page was written by `scripts/bench.py` from a run; nothing here is edited
by hand. Each section says the command that produced it, when, and on what machine with what
load. Refresh one section with `.venv/bin/python scripts/bench.py --only SECTION` (the others
stay as their last run left them); `--quick` runs are smoke runs and do not write this page.
Shared machines swing by up to 2x between runs, so compare the ratios against Pinocchio,
MuJoCo and OpenSim, which come from the same run, rather than absolute times across machines.
"""

_BLOCK = re.compile(r"<!-- bench:(?P<name>[a-z_]+) -->\n(?P<body>.*?)<!-- /bench:(?P=name) -->\n",
                    re.S)


def stamp(command, machine, when=None):
    """The line under a section's heading: the command, the UTC date and time, the machine."""
    when = when or datetime.datetime.now(datetime.timezone.utc)
    if isinstance(when, datetime.datetime):
        when = when.strftime("%Y-%m-%d %H:%M UTC")
    return f"Command: `{command}`; run {when}; {machine}."


def block(name, stamp_line, markdown):
    """One section's block: its heading (the anchor ``#NAME``), the stamp and its tables."""
    return (f"<!-- bench:{name} -->\n## {name}\n\n{stamp_line}\n\n{markdown.strip()}\n\n"
            f"<!-- /bench:{name} -->\n")


def read_blocks(text):
    """The blocks of a page, name -> block text, in page order."""
    return {m["name"]: m.group(0) for m in _BLOCK.finditer(text)}


def update_page(path, blocks, order, intro=INTRO):
    """Write ``path``: ``intro``, then ``blocks`` (name -> text of :func:`block`) replacing or
    adding those sections and every other block of the page as it was; sections in ``order``
    (names not in it last, in page order)."""
    old = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old = read_blocks(f.read())
    merged = {**old, **blocks}
    names = [n for n in order if n in merged] + [n for n in merged if n not in order]
    atomic_write(path, intro + "".join("\n" + merged[n] for n in names))
