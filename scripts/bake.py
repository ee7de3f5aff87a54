"""Bake every Spline Joints mechanism of .blend files headless, and save the results.

With the PyPI bpy module (the extension installed in Blender's user folder, or pass --install):
    python scripts/bake.py A.blend B.blend --out DIR [--jobs N] [--install ZIP]
Inside a Blender binary (the file is the one Blender opened):
    blender -b A.blend --python scripts/bake.py -- --out DIR

Each input is opened, every mechanism of every scene is baked with
``spline_joints.bake_dynamics``, and the file is saved as DIR/<same name>. The output is
written to a temporary file in DIR and renamed into place, so a failed or interrupted bake
never leaves a half-written file. With several files and --jobs N > 1, each file is baked in
its own process (bpy is a process-wide singleton). Exit status: 0 when every file baked, 1
otherwise, with one ``error: FILE: reason`` line per failure on stderr.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

MODULE = "bl_ext.user_default.spline_joints"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help=".blend files (none inside a Blender binary: its own file)")
    parser.add_argument("--out", required=True, help="output directory (created if missing)")
    parser.add_argument("--jobs", type=int, default=1, help="files baked in parallel processes")
    parser.add_argument("--install", help="extension zip to install into the user folder first")
    return parser.parse_args(argv)


def enable_addon(install_zip: str | None) -> None:
    import addon_utils
    import bpy

    if install_zip:
        bpy.ops.extensions.package_install_files(filepath=os.path.abspath(install_zip), repo="user_default",
                                                 enable_on_install=True)
    if not addon_utils.check(MODULE)[1]:
        try:
            bpy.ops.preferences.addon_enable(module=MODULE)
        except Exception:  # reported below with what to do
            pass
    if MODULE not in bpy.context.preferences.addons:
        raise RuntimeError("the Spline Joints extension is not installed in this Blender's user folder; "
                           "install it (Preferences > Get Extensions > Install from Disk) or pass --install ZIP")


def bake_open_file(out_dir: str, name: str) -> str:
    """Bake all mechanisms of the open file and save it atomically as out_dir/name."""
    import bpy

    window = bpy.context.window
    counts = []
    for scene in bpy.data.scenes:
        if window is not None:
            window.scene = scene
        for i in range(len(scene.spline_joints_mechanisms)):
            with bpy.context.temp_override(scene=scene):
                bpy.ops.spline_joints.bake_dynamics(index=i)
            counts.append(f"{scene.name}/{scene.spline_joints_mechanisms[i].name}")
    os.makedirs(out_dir, exist_ok=True)
    final = os.path.join(out_dir, name)
    tmp = os.path.join(out_dir, f".{name}.{os.getpid()}.tmp.blend")
    try:
        bpy.ops.wm.save_as_mainfile(filepath=tmp, copy=True, compress=False)
        os.replace(tmp, final)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return f"{final}: baked {len(counts)} mechanism(s)" + (f" ({', '.join(counts)})" if counts else "")


def bake_one(path: str, out_dir: str, install_zip: str | None) -> str:
    import bpy

    if not os.path.isfile(path):
        raise RuntimeError("no such file")
    enable_addon(install_zip)
    bpy.ops.wm.open_mainfile(filepath=os.path.abspath(path), load_ui=False)
    return bake_open_file(out_dir, os.path.basename(path))


def run_parallel(args: argparse.Namespace) -> int:
    """One child process per file, at most --jobs at once."""

    def child(path):
        cmd = [sys.executable, os.path.abspath(__file__), path, "--out", args.out]
        if args.install:
            cmd += ["--install", args.install]
        return path, subprocess.run(cmd, capture_output=True, text=True)

    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for path, proc in pool.map(child, args.files):
            lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith(("error:", "baked:"))]
            print("\n".join(lines) or f"{path}: exit status {proc.returncode}",
                  file=sys.stderr if proc.returncode else sys.stdout)
            failed += proc.returncode != 0
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    in_blender = "bpy" in sys.modules  # a Blender binary has imported it; `python bake.py` has not
    args = parse(argv)
    if in_blender:
        import bpy

        try:
            enable_addon(args.install)
            print("baked:", bake_open_file(args.out, os.path.basename(bpy.data.filepath) or "untitled.blend"))
        except Exception as exc:
            print(f"error: {bpy.data.filepath}: {exc}", file=sys.stderr)
            return 1
        return 0
    if not args.files:
        print("error: no .blend files given", file=sys.stderr)
        return 1
    if len(args.files) > 1:
        return run_parallel(args)
    try:
        print("baked:", bake_one(args.files[0], args.out, args.install))
    except Exception as exc:
        print(f"error: {args.files[0]}: {str(exc).strip()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    sys.exit(main(argv))
