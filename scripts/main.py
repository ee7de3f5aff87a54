"""The main job: bake every demo in demo_blends/ headless, render contact sheets, print a table.

    .venv/bin/python scripts/main.py --out out/ [--jobs 2] [--only globe knee_fit_rig]
                                     [--duration SECONDS] [--frames 8]

(``bash scripts/main.sh`` sets up the environment and builds the extension first.)

1. The linux-x64 extension zip (scripts/build_extension.py, cached) is installed into a private
   Blender user folder ``OUT/.blender_user`` (BLENDER_USER_RESOURCES): nothing outside OUT is
   touched.
2. Each demo file is handled in its own process (bpy is a process-wide singleton), ``--jobs`` at
   a time: the file is opened, every mechanism, linkage and simulated rig is baked
   (``spline_joints.bake_dynamics``, ``bake_linkage``, the ``bake_rig`` job) by
   ``scripts.blender_kit.bake_open_file``, as scripts/bake.py bakes (atomic save to
   ``OUT/blends/<file>``), and
   ``--frames`` Workbench frames spread over the scene's range are tiled into
   ``OUT/sheets/<file>.png`` through the file's own camera: a title line (file, mechanism,
   bodies, DOF; for a rig its bones and fitted joints), each tile labelled with its time
   ("t = 0.40 s"), and on the chains, beads and globe a fading trail of the last second of
   motion (scripts/pictures/common.py). Fitting rigs and the OpenSim walk have no mechanism: they are saved and rendered
   as their sliders and coordinates play (the add-on's live drive poses the bones); their
   fitted joints (bones' and OpenSim joints' spline fits) are listed in a second table.
3. A table is printed: mechanism, bodies, DOF, steps, wall time (the core simulation), energy
   drift (``max |E - E0 - W_drive| / energy in motion``; for damped mechanisms this is the
   dissipation, not an error; "(!)" marks a passive mechanism whose drift exceeds what its
   integrator allows, explained under the table: core.mechanisms.energy_drift_warning) and
   constraint error (m); for the linkages a second table gives the bake (live assembly or
   dynamics), solver, the constraint error per frame (largest and median) and the limits'
   engagements and deepest violation; for the simulated rigs (the character's tail and shins,
   baked by ``bake_open_file`` as ``spline_joints.bake_rig`` does) a third gives the simulated
   bodies, frames, wall time, worst limit excess, for a passive rig the energy drift and for
   a rig with contacts the most contacts in a frame and the worst penetration. They
   are also written to OUT/summary.json and, when every file baked, into the documentation
   site's page docs/main-job.md (``--page PATH`` elsewhere, ``--no-page`` not at all;
   :mod:`scripts.run_pages`: each table replaced by the run that printed it, stamped with
   the command, the date and the machine).

Exit status 0 when every file baked and rendered, 1 otherwise (``error: FILE: reason`` lines).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from core.io import atomic_write  # noqa: E402
from scripts import blender_kit as kit  # noqa: E402
from scripts import run_pages  # noqa: E402
from scripts.benchmarks.common import machine_description  # noqa: E402

DEMOS_DIR = ROOT / "demo_blends"
TILE = (320, 180)  # half of blender_kit.RESOLUTION
#: the page a run writes its tables into
PAGE = Path(run_pages.DOCS) / "main-job.md"
#: the page's sections, in page order
SECTIONS = ("mechanisms", "linkages", "simulated_rigs", "fitted_joints")
PAGE_INTRO = """# Main job

The tables of the main job (`bash scripts/main.sh`, which runs `scripts/main.py`): every demo of
`demo_blends/` baked headless. Each section was written by the run that printed it, with its
command, date and machine; nothing here is edited by hand. What the columns mean:
[Batch baking and sweeps](guides/batch.md#the-main-job). A run with `--only` rewrites the
tables it printed, with its files only.
"""


# ------------------------------------------------------------------------------------------
# Worker (one process per file, with bpy)
# ------------------------------------------------------------------------------------------

def worker(path: str, out: str, frames: int, duration: float | None, result_file: str) -> None:
    bpy = kit.start_blender()  # BLENDER_USER_RESOURCES is set by the parent: already installed

    name = Path(path).stem
    bpy.ops.wm.open_mainfile(filepath=os.path.abspath(path), load_ui=False)
    if duration is not None:
        for scene in bpy.data.scenes:
            for item in scene.spline_joints_mechanisms:
                item.duration = min(item.duration, duration)
    t0 = time.perf_counter()
    rig_bakes = []
    kit.bake_open_file(os.path.join(out, "blends"), Path(path).name, rig_bakes)
    bake_wall = time.perf_counter() - t0
    build_mechanism = kit.addon_module("addon.mechanism_bake").build_mechanism
    drift_warning = kit.addon_module("core.mechanisms").energy_drift_warning
    rows, rigs, links = [], [], []
    scene = bpy.context.scene
    lb = kit.addon_module("addon.linkage_bridge")
    for sc in bpy.data.scenes:
        for item in sc.spline_joints_linkages:
            links.append({"file": name, "linkage": item.name, "mode": item.mode, "solver": item.solver,
                          "bodies": len(lb.linkage_objects(sc, item)), "joints": len(item.joints),
                          "frames": item.baked_frames, "wall": item.bake_seconds, "cg": item.cg_iterations,
                          "errors": list(item.get(lb.ERRORS_KEY, [])), "engagements": item.engagements,
                          "violation": item.limit_violation, "violation_tol": item.violation_tolerance})
        for item in sc.spline_joints_mechanisms:
            mech = build_mechanism(item.demo, item.duration, item.substeps, sc)
            rows.append({"file": name, "mechanism": item.name, "title": item.title,
                         "bodies": len(item.bodies), "dof": int(mech.ndof), "steps": item.baked_steps,
                         "frames": item.baked_frames, "dt": mech.dt, "duration": item.duration,
                         "wall": item.bake_seconds, "energy_drift": item.energy_drift,
                         "passive": bool(mech.passive), "constraint_error": item.constraint_error,
                         "drift_warning": drift_warning(mech, item.energy_drift)})
        for obj in sc.objects:
            if obj.type == "ARMATURE":
                for fit in obj.data.spline_joints_osim.fits:  # spline joints fitted to OpenSim's
                    report = kit.addon_module("core.io").loads(fit.joint_json).report
                    rigs.append({"file": name, "bone": fit.name,
                                 "joint": "OpenSim joint, fitted",
                                 "samples": len(report.position_residuals_mm), "fit": report.status,
                                 "rms_mm": report.rms_position_mm, "rms_deg": report.rms_rotation_deg,
                                 "max_mm": fit.max_mm, "max_deg": fit.max_deg})
                for pb in obj.pose.bones:
                    s = pb.spline_joints
                    if s.joint_json:
                        joint = type(kit.addon_module("core.io").loads(s.joint_json).joint).__name__
                        rigs.append({"file": name, "bone": f"{obj.name}/{pb.name}", "joint": joint,
                                     "samples": len(s.samples), "fit": s.fit_status,
                                     "rms_mm": s.fit_rms_mm, "rms_deg": s.fit_rms_deg,
                                     "max_mm": s.fit_max_mm, "max_deg": s.fit_max_deg})
                    elif len(s.samples):  # a reach cone fitted from swing samples
                        cone = (f"reach cone {math.degrees(s.cone_half_angle_x):.1f} x "
                                f"{math.degrees(s.cone_half_angle_z):.1f} deg")
                        rigs.append({"file": name, "bone": f"{obj.name}/{pb.name}", "joint": cone,
                                     "samples": len(s.samples), "fit": "-"})
    last = scene.frame_end
    if rows and scene.spline_joints_mechanisms:
        last = scene.frame_start + max(1, scene.spline_joints_mechanisms[0].baked_frames) - 1
    first = scene.frame_start
    picks = [round(first + k * (last - first) / max(frames - 1, 1)) for k in range(frames)]
    t0 = time.perf_counter()
    from scripts.pictures import common as pictures

    trails = pictures.trails(scene, picks[0], picks[-1])
    tiles = [pictures.render(scene, f, TILE, trails) for f in picks]
    sheet = Path(out) / "sheets" / f"{name}.png"
    kit.save_png(pictures.titled_sheet(tiles, min(4, frames), pictures.title_line(scene, name),
                                       [pictures.time_label(scene, f) for f in picks]), sheet)
    mean = float(sum(float(t[..., :3].std()) for t in tiles) / len(tiles))
    rig_bakes = [{"file": name, **{k: v for k, v in r.items() if k != "report"}} for r in rig_bakes]
    atomic_write(result_file, json.dumps({"rows": rows, "rigs": rigs, "linkages": links, "rig_bakes": rig_bakes,
                                          "sheet": str(sheet),
                                          "frames": picks, "bake_wall": bake_wall,
                                          "render_wall": time.perf_counter() - t0,
                                          "tile_std": mean}))


# ------------------------------------------------------------------------------------------
# Parent
# ------------------------------------------------------------------------------------------

def run_file(path: Path, args, env) -> tuple[Path, dict | None, str]:
    result_file = Path(args.out) / ".work" / f"{path.stem}.json"
    cmd = [sys.executable, __file__, "--worker", str(path), "--out", args.out, "--frames", str(args.frames),
           "--result", str(result_file)]
    if args.duration is not None:
        cmd += ["--duration", str(args.duration)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    atomic_write(Path(args.out) / ".work" / f"{path.stem}.log", log)
    if proc.returncode != 0 or not result_file.is_file():
        reason = [ln for ln in log.splitlines() if ln.strip()][-1:] or [f"exit status {proc.returncode}"]
        return path, None, reason[0]
    return path, json.loads(result_file.read_text()), ""


def table(rows: list[dict]) -> str:
    head = ("mechanism", "bodies", "DOF", "steps", "dt (ms)", "wall (s)", "energy drift", "constraint err (m)")
    lines = []
    for r in rows:
        drift = (f"{r['energy_drift']:.2e}" + ("" if r["passive"] else " (not passive)")
                 + (" (!)" if r["drift_warning"] else ""))
        lines.append((r["mechanism"], str(r["bodies"]), str(r["dof"]), str(r["steps"]), f"{1e3 * r['dt']:.3g}",
                      f"{r['wall']:.2f}", drift, f"{r['constraint_error']:.1e}"))
    widths = [max(len(h), *(len(ln[i]) for ln in lines)) if lines else len(h) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*ln) for ln in lines]
    out += [f"(!) {r['mechanism']}: {r['drift_warning']}" for r in rows if r["drift_warning"]]
    return "\n".join(out)


def linkage_table(links: list[dict]) -> str:
    """Linkages: bake mode and solver, bodies, joints, frames, wall time, the constraint error
    per frame (largest and median, m or rad) and the limits (engagements, deepest violation
    and what the solver allows)."""
    out = [f"{'linkage':<34} {'bake':<9} {'solver':<9} {'bodies':>6} {'joints':>6} {'frames':>6} "
           f"{'wall (s)':>8} {'err/frame max':>13} {'median':>8}  limits"]
    for r in links:
        e = sorted(r["errors"]) or [0.0]
        limits = (f"engaged {r['engagements']}x, deepest {r['violation']:.1e} <= {r['violation_tol']:.1e}"
                  if r["engagements"] else "-")
        out.append(f"{r['file'] + '/' + r['linkage']:<34} {r['mode'].lower():<9} {r['solver']:<9} "
                   f"{r['bodies']:>6} {r['joints']:>6} {r['frames']:>6} {r['wall']:>8.2f} {e[-1]:>13.1e} "
                   f"{e[len(e) // 2]:>8.1e}  {limits}")
    return "\n".join(out)


def rig_bake_table(bakes: list[dict]) -> str:
    """Simulated rigs (scripts.blender_kit.bake_rigs): simulated bodies, frames, the
    simulation's wall time, the worst excess over any joint limit (deg), the energy drift
    (only for a passive rig: no limits, damping or animated bodies) and, for a rig with
    contacts, the most contacts in a frame and the worst penetration (mm)."""
    out = [f"{'simulated rig':<34} {'bodies':>6} {'frames':>6} {'wall (s)':>8} {'worst limit excess':>18} "
           f"{'energy drift':>13} {'contacts/frame':>14} {'worst pen. (mm)':>15}"]
    for r in bakes:
        excess = "-" if r["worst_excess_deg"] is None else f"{r['worst_excess_deg']:.3g} deg"
        drift = "(not passive)" if r["energy_drift"] is None else f"{r['energy_drift']:.2e}"
        touch = "-" if r["contacts"] is None else str(r["contacts"])
        depth = "-" if r["worst_penetration_mm"] is None else f"{r['worst_penetration_mm']:.3g}"
        out.append(f"{r['file'] + '/' + r['rig'].split('/', 1)[-1]:<34} {r['bodies']:>6} {r['frames']:>6} "
                   f"{r['wall']:>8.2f} {excess:>18} {drift:>13} {touch:>14} {depth:>15}")
    return "\n".join(out)


def rig_table(rigs: list[dict]) -> str:
    out = [f"{'rig':<24} {'bone':<17} {'joint':<28} {'samples':>7}  {'fit':<10} {'RMS mm':>7} "
           f"{'RMS deg':>8} {'max mm':>7} {'max deg':>8}"]
    for r in rigs:
        line = f"{r['file']:<24} {r['bone']:<17} {r['joint']:<28} {r['samples']:>7}  {r['fit']:<10}"
        if "rms_mm" in r:
            line += (f" {r['rms_mm']:>7.3f} {r['rms_deg']:>8.3f} {r['max_mm']:>7.3f} "
                     f"{r['max_deg']:>8.3f}")
        out.append(line)
    return "\n".join(out)


def write_page(path, argv: list[str], machine: str, tables: dict) -> None:
    """Write the run's tables (section -> text, None for a table the run did not print) into
    the page ``path``; the other sections keep their last run's."""
    command = " ".join(["python", "scripts/main.py", *argv])
    stamp = run_pages.stamp(command, machine)
    blocks = {name: run_pages.block(name, stamp, f"```text\n{text}\n```")
              for name, text in tables.items() if text is not None}
    run_pages.update_page(str(path), blocks, SECTIONS, intro=PAGE_INTRO)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "out"), help="output folder (created)")
    parser.add_argument("--jobs", type=int, default=2, help="files processed in parallel")
    parser.add_argument("--only", nargs="*", help="demo file names (without .blend)")
    parser.add_argument("--demos", default=str(DEMOS_DIR), help="folder of demo .blend files")
    parser.add_argument("--frames", type=int, default=8, help="frames per contact sheet")
    parser.add_argument("--duration", type=float, help="cap every mechanism's duration (s)")
    parser.add_argument("--zip", help="extension zip (default: scripts/build_extension.py --platform linux-x64)")
    parser.add_argument("--page", default=str(PAGE), help="documentation page the tables are written into")
    parser.add_argument("--no-page", action="store_true", help="print the tables only")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.out, args.frames, args.duration, args.result)
        return 0
    if args.frames < 1 or args.jobs < 1:
        print("error: --frames and --jobs must be at least 1", file=sys.stderr)
        return 1
    t_start = time.perf_counter()
    machine = machine_description()
    demos_dir = Path(args.demos)
    files = sorted(demos_dir.glob("*.blend"))
    if args.only:
        files = [f for f in files if f.stem in set(args.only)]
        missing = sorted(set(args.only) - {f.stem for f in files})
        if missing:
            print(f"error: no demo file(s) {missing} in {demos_dir}", file=sys.stderr)
            return 1
    if not files:
        print(f"error: no .blend files in {demos_dir}; run scripts/build_demos.py", file=sys.stderr)
        return 1
    out = Path(args.out).resolve()
    args.out = str(out)
    (out / ".work").mkdir(parents=True, exist_ok=True)
    zip_path = args.zip or kit.build_zip()
    user = out / ".blender_user"
    shutil.rmtree(user, ignore_errors=True)
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(user), PYTHONDONTWRITEBYTECODE="1")
    install = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                              "from scripts import blender_kit; blender_kit.start_blender(sys.argv[2])",
                              str(ROOT), zip_path], env=env, capture_output=True, text=True)
    if install.returncode != 0:
        print(f"error: installing {zip_path} failed:\n{install.stdout[-2000:]}{install.stderr[-2000:]}",
              file=sys.stderr)
        return 1
    print(f"extension {Path(zip_path).name} installed in {user}; baking {len(files)} files, "
          f"{args.jobs} at a time" + (f", durations capped at {args.duration} s" if args.duration else ""),
          flush=True)
    rows, rigs, links, rig_bakes, failed = [], [], [], [], []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for path, res, reason in pool.map(lambda p: run_file(p, args, env), files):
            if res is None:
                failed.append((path, reason))
                print(f"error: {path.name}: {reason} (log: {out / '.work' / (path.stem + '.log')})",
                      file=sys.stderr, flush=True)
                continue
            if res["tile_std"] < 0.01:
                failed.append((path, "the rendered frames are blank"))
                print(f"error: {path.name}: the rendered frames are blank", file=sys.stderr, flush=True)
            rows += res["rows"]
            rigs += res["rigs"]
            links += res["linkages"]
            rig_bakes += res["rig_bakes"]
            print(f"  {path.name}: baked {len(res['rows'])} mechanism(s), {len(res['linkages'])} linkage(s) "
                  f"and {len(res['rig_bakes'])} simulated rig(s) "
                  f"in {res['bake_wall']:.1f} s, "
                  f"sheet {Path(res['sheet']).relative_to(out)} ({res['render_wall']:.1f} s)", flush=True)
    total = time.perf_counter() - t_start
    print()
    print(table(rows))
    if links:
        print()
        print(linkage_table(links))
    if rig_bakes:
        print()
        print(rig_bake_table(rig_bakes))
    if rigs:
        print()
        print(rig_table(rigs))
    print(f"\nbaked files: {out / 'blends'}   contact sheets: {out / 'sheets'}   "
          f"total wall time {total:.0f} s")
    atomic_write(out / "summary.json", json.dumps({"mechanisms": rows, "rigs": rigs, "linkages": links,
                                                  "simulated_rigs": rig_bakes,
                                                  "wall": total,
                                                  "failed": [[str(p), r] for p, r in failed]},
                                                 indent=1))
    if not failed and not args.no_page:
        write_page(args.page, argv, machine, {"mechanisms": table(rows) if rows else None,
                                              "linkages": linkage_table(links) if links else None,
                                              "simulated_rigs": rig_bake_table(rig_bakes) if rig_bakes else None,
                                              "fitted_joints": rig_table(rigs) if rigs else None})
        print(f"wrote {args.page}")
    if failed:
        print(f"error: {len(failed)} of {len(files)} file(s) failed: "
              f"{', '.join(p.name for p, _ in failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception:  # a worker's traceback ends up in its log; the parent says what failed
        traceback.print_exc()
        sys.exit(1)
