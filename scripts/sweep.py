"""Parameter sweep of one demo mechanism, in this process or on a Dask cluster.

    python scripts/sweep.py knee_pendulum --param knee_start=-1.4,-1.2 \
        --param ankle_stiffness=2,5 --out sweeps/
    python scripts/sweep.py knee_pendulum --random knee_start=-1.5:-1.1 --samples 200 \
        --seed 0 --scheduler local --jobs 2 --out sweeps/
    python scripts/sweep.py knee_pendulum --param knee_start=-1.4,-1.2 \
        --scheduler tcp://HOST:8786 --out sweeps/

Each variant is built by ``core.mechanisms.DEMOS[MECHANISM]`` with the swept parameters (and
``--fps/--substeps/--duration`` when given) and simulated by :func:`core.sweep.run`, on a
cluster ``--batch`` variants per Dask task (by default sized from the variants' measured time,
:func:`core.sweep.batch_size`). Writes
``MECHANISM_sweep.csv`` (one row per variant, the columns of :func:`core.sweep.table`) and
``MECHANISM_sweep.png`` (``--plot`` metric against the first swept parameter, or a scatter of
the first two coloured by it; failed variants as red crosses) under ``--out``, and prints a
summary. Failed variants are rows of the table (status "failed", their error) and one
``failed: ...`` line each; the exit status is 0 when every variant completed, 1 when some
failed, 2 when the input was refused (one ``error: ...`` sentence) before any variant ran.

Before any variant runs, the variants and ``--out`` are checked (the folder is created and must
be writable) and ``--out`` is locked (:func:`core.io.lock_folder`): a second sweep into the
same folder is refused while one runs. The table and the plot are written to temporaries in
``--out`` and renamed into place only when both are complete, so the folder holds the previous
run's two files or this run's two files, never one of each.
"""

import argparse
import csv
import io
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from core import cluster, sweep  # noqa: E402
from core.checks import whole_number  # noqa: E402
from core.errors import InvalidInputError  # noqa: E402
from core.io import atomic_path, lock_folder  # noqa: E402
from core.mechanisms import DEMOS  # noqa: E402

#: metrics a plot can show (scalar metrics of core.sweep.METRICS)
PLOT_METRICS = ("energy_drift", "max_constraint_error", "max_limit_violation", "wall_time")


def parse_value(text):
    """A command-line value: an int, else a float, else the text itself (e.g. "rk4");
    InvalidInputError for an empty value."""
    text = text.strip()
    if not text:
        raise InvalidInputError("--param has an empty value (two commas in a row, or one at "
                                "an end): write NAME=V1,V2,...")
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _split(item, sep, flag):
    name, eq, rest = item.partition("=")
    if not eq or not name or not rest:
        raise InvalidInputError(f"{flag} {item!r}: write NAME=VALUES, e.g. {flag} "
                                f"knee_start={'-1.4,-1.2' if sep == ',' else '-1.5:-1.1'}")
    return name.strip(), rest.split(sep)


def variants_from_args(args):
    """The sweep's variants from ``--param`` (grid) or ``--random`` (sample)."""
    if bool(args.param) == bool(args.random):
        raise InvalidInputError("give either --param NAME=V1,V2,... (a grid) or --random "
                                "NAME=LOW:HIGH with --samples N (a random sample), not both "
                                "and not neither")
    if args.param:
        grid = {}
        for item in args.param:
            name, values = _split(item, ",", "--param")
            grid[name] = [parse_value(v) for v in values]
        return sweep.grid_variants(grid)
    ranges = {}
    for item in args.random:
        name, bounds = _split(item, ":", "--random")
        if len(bounds) != 2:
            raise InvalidInputError(f"--random {item!r}: give one range LOW:HIGH")
        try:
            ranges[name] = tuple(float(b) for b in bounds)
        except ValueError as err:
            raise InvalidInputError(f"--random {item!r}: LOW and HIGH must be numbers") from err
    return sweep.random_variants(ranges, args.samples, args.seed)


def csv_text(records):
    """The records as CSV text (header row, then one row per record; None as an empty cell)."""
    columns, rows = sweep.table(records)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([["" if x is None else x for x in row] for row in rows])
    return buffer.getvalue()


def plot_figure(records, names, metric, title):
    """A matplotlib figure (Agg backend; close it with ``matplotlib.pyplot.close``):
    ``metric`` against the first swept parameter ``names[0]`` (log scale when every value is
    > 0), or with two or more parameters a scatter of the first two coloured by the metric;
    failed variants as red crosses at the metric axis' base."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [r for r in records if r["status"] == "completed" and r.get(metric) is not None]
    failed = [r for r in records if r not in done]
    fig, ax = plt.subplots(figsize=(7.0, 4.5), dpi=100)
    x = names[0]
    if len(names) == 1:
        points = sorted(done, key=lambda r: r[x])
        ys = [r[metric] for r in points]
        ax.plot([r[x] for r in points], ys, "o-", color="tab:blue", label="completed")
        if ys and min(ys) > 0:
            ax.set_yscale("log")
        base = min(ys) if ys else 0.0
        ax.plot([r[x] for r in failed], [base] * len(failed), "x", color="red", ms=9,
                label="failed")
        ax.set_ylabel(metric)
    else:
        y = names[1]
        scatter = ax.scatter([r[x] for r in done], [r[y] for r in done],
                             c=[r[metric] for r in done], cmap="viridis", s=30)
        if done:
            fig.colorbar(scatter, ax=ax, label=metric)
        ax.plot([r[x] for r in failed], [r[y] for r in failed], "x", color="red", ms=9,
                label="failed")
        ax.set_ylabel(y)
    ax.set_xlabel(x)
    ax.set_title(title)
    if failed:
        ax.legend(loc="best")
    fig.tight_layout()
    return fig


def open_out(out):
    """Create the folder ``out`` if needed and lock it for this process (the returned
    descriptor, None where locks do not exist); InvalidInputError when it cannot be created,
    is not writable, or another sweep holds it."""
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise InvalidInputError(f"--out {out} cannot be created ({exc.strerror or exc}): pass a "
                                "folder you can write to") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise InvalidInputError(f"--out {out} is a folder this user cannot write to (or on a "
                                "read-only disk): give a writable folder")
    return lock_folder(out, "sweep.py")


def write_outputs(csv_path, png_path, records, names, metric, title):
    """The table and the plot, each written to a temporary beside it; both are renamed into
    place only when both are complete (a failure leaves the previous files as they were)."""
    fig = plot_figure(records, names, metric, title)   # selects the Agg backend first
    import matplotlib.pyplot as plt

    try:
        with atomic_path(csv_path) as csv_tmp, atomic_path(png_path) as png_tmp:
            with open(csv_tmp, "w", encoding="utf-8", newline="") as fh:
                fh.write(csv_text(records))
            fig.savefig(png_tmp, format="png")
    finally:
        plt.close(fig)


def _client(args):
    """None (in this process), a LocalCluster's client, or a remote scheduler's client."""
    if args.scheduler == "none":
        return None
    if args.scheduler == "local":
        return cluster.local_client(args.jobs)
    return cluster.connect(args.scheduler, args.timeout)


def _where(args):
    """Where the variants ran, for the summary line."""
    if args.scheduler == "none":
        return "in this process"
    if args.scheduler == "local":
        return f"on a LocalCluster of {args.jobs} workers"
    return f"on the cluster at {args.scheduler}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mechanism", choices=sorted(DEMOS), help="demo mechanism to sweep")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2,...",
                        help="grid values of a builder parameter (repeat: full product)")
    parser.add_argument("--random", action="append", default=[], metavar="NAME=LOW:HIGH",
                        help="uniform range of a builder parameter (repeat; with --samples)")
    parser.add_argument("--samples", type=int, default=100, help="random variants (100)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (0)")
    parser.add_argument("--fps", type=float, help="output frames per second (demo default)")
    parser.add_argument("--substeps", type=int, help="steps per frame (demo default)")
    parser.add_argument("--duration", type=float, help="simulated seconds (demo default)")
    parser.add_argument("--scheduler", default="none",
                        help="none (this process, the default), local (a LocalCluster of "
                             "--jobs workers) or a scheduler address tcp://HOST:8786")
    parser.add_argument("--jobs", type=int, default=2, help="LocalCluster workers (2)")
    parser.add_argument("--batch", type=int,
                        help="variants per Dask task (automatic: about 0.5 s of work each, "
                             "from the variants' measured time)")
    parser.add_argument("--timeout", type=float, default=cluster.CONNECT_TIMEOUT,
                        help="seconds to wait for a scheduler and its first worker (10)")
    parser.add_argument("--plot", choices=PLOT_METRICS, default="energy_drift",
                        help="metric of the plot (energy_drift)")
    parser.add_argument("--out", required=True, help="folder of the table and the plot")
    args = parser.parse_args(argv)

    builder = DEMOS[args.mechanism]
    csv_path = os.path.join(args.out, f"{args.mechanism}_sweep.csv")
    png_path = os.path.join(args.out, f"{args.mechanism}_sweep.png")
    client = lock = None
    try:
        variants = variants_from_args(args)
        timing = dict(fps=args.fps, substeps=args.substeps, duration=args.duration)
        sweep.check_variants(builder, variants, timing)
        if args.batch is not None:
            whole_number(args.batch, "--batch", advice="give the variants per Dask task (1 or "
                         "more), or leave it out to size the tasks automatically")
        lock = open_out(args.out)
        client = _client(args)
        start = time.perf_counter()
        records = sweep.run(builder, variants, client=client, timeout=args.timeout,
                            batch=args.batch, **timing)
        wall = time.perf_counter() - start
        names = list(variants[0])
        write_outputs(csv_path, png_path, records, names, args.plot,
                      f"{args.mechanism}: {len(records)} variants")
    except InvalidInputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"error: cannot write the table and the plot in {args.out} "
              f"({err.strerror or err}); the folder keeps its previous files", file=sys.stderr)
        return 1
    finally:
        if client is not None:
            client.close()
        if lock is not None:
            os.close(lock)
    failed = [r for r in records if r["status"] != "completed"]
    for r in failed:
        params = ", ".join(f"{k}={r[k]!r}" for k in names)
        print(f"failed: variant {r['index']} ({params}): {r['error']}")
    print(f"{len(records)} variants, {len(failed)} failed, wall time {wall:.2f} s, "
          f"{len(records) / wall:.1f} variants per second "
          f"({_where(args)}); "
          f"wrote {csv_path} and {png_path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
