"""Build the Spline Joints extension zips with Blender's own extension CLI: one zip per
platform and Python line (:data:`PYTHON_LINES`: Blender 4.2-5.0 run CPython 3.11, Blender 5.1
and later CPython 3.13).

    python scripts/build_extension.py                       # every platform and line (8 zips)
    python scripts/build_extension.py --platform linux-x64 --python 3.13   # one zip
    python scripts/build_extension.py --offline             # use only build/wheels/ (no network)
    python scripts/build_extension.py --kernel-python .venv-py313/bin/python  # both lines' kernels

Steps, for each Python line:
1. The line's wheels listed in blender_manifest.toml (scipy, numba, llvmlite; pinned, one set
   per CPython version; and pure-Python wheels such as c3d's, ``py3-none-any``, which every
   line and platform ships) are downloaded once with ``pip download --only-binary=:all:
   --no-deps`` for each wheel's own platform and Python tags into the cache build/wheels/.
2. The runtime files (manifest, __init__.py, addon/, core/, README/LICENSE when present) and the
   line's wheels of the requested platforms are copied into build/stage/<line>/; the staged
   manifest lists only those platforms and wheels, and its ``blender_version_min`` and
   ``blender_version_max`` are the line's Blender range, so a Blender of the other line refuses
   the zip with a message naming the versions it supports.
3. ``blender_ext.py build --split-platforms`` writes one zip per platform, renamed to
   ``build/dist/spline_joints-<version>-<blender range>-<platform>.zip``, then
   ``blender_ext.py validate`` checks each zip.
4. The zip of the platform the build runs on (:data:`KERNEL_PLATFORM`) gets the compiled
   kernels (:func:`add_kernel_cache`): the zip is installed
   into a temporary Blender user folder with the line's Python and its ``bpy``, where the
   add-on compiles the kernels of every algorithm (:func:`core.warm_up.warm_up`, for
   ``core.backend.portable_cpu()``, as the add-on always does) and bakes every demo (the
   variants their models need) and numba caches them; that cache
   is added to the zip as ``kernel_cache/<source digest>/``, which the add-on copies into its
   user folder on first use (addon/jit.py), so a first simulation loads the kernels instead of
   compiling them for a minute or more. That Python is this interpreter for its own line and
   ``--kernel-python PATH`` for another (without one, and with ``--no-kernel-cache``, that
   line's zip ships no kernels and compiles them on first use, as the zips of the other
   platforms do: numba compiles only for the platform it runs on, so each platform's zip
   gets its kernels from a build on that platform, e.g. ``--platform windows-x64`` on
   Windows with a Python that has ``bpy``).

One zip per line rather than one zip with both lines' wheels: Blender 4.2.0's extension manager
picks a zip's wheels by platform only (4.2.23 and 5.x also by Python version), so it would
install both lines' scipy into one folder; and a user downloads half the size.

A build is skipped when the sources, manifest and wheels have not changed since the last one
(fingerprint stored in build/dist/, written last: an interrupted build is redone), and, when
kernels are to be compiled, neither have the Python compiling them and the demos; a zip with
kernels also serves a build without (``--force`` rebuilds). Everything under build/ is ignored by git (build/.gitignore is written by this
script). The script's own files are written atomically (core.io.atomic_write). Exit status is
non-zero on any failure.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from core.io import atomic_write  # noqa: E402
from scripts.blender_kit import host_platform  # noqa: E402

BUILD = ROOT / "build"
WHEEL_CACHE = BUILD / "wheels"
STAGE = BUILD / "stage"
DIST = BUILD / "dist"
RUNTIME_FILES = ("blender_manifest.toml", "__init__.py", "README.md", "LICENSE")
RUNTIME_DIRS = ("addon", "core")
#: the platform whose zips ship the compiled kernels (this machine's, where this script runs
#: Blender; None on a platform the extension is not built for), and their folder in the zip
#: (addon/jit.py reads it there)
KERNEL_PLATFORM = host_platform()
KERNEL_CACHE = "kernel_cache"
DEMOS = ROOT / "demo_blends"
#: the simulated seconds of each demo mechanism and linkage baked for the kernel cache
DEMO_SECONDS = 0.5

#: Blender's Python lines: CPython tag of the wheels -> (Python version, the first Blender
#: version of the line, the first Blender version not of the line or "" for none, the Blender
#: range as the zip names it)
PYTHON_LINES = {
    "cp311": ("3.11", "4.2.0", "5.1.0", "blender_4.2_to_5.0"),
    "cp313": ("3.13", "5.1.0", "", "blender_5.1_and_later"),
}

# Blender platform -> test on one platform tag of a wheel file name (PEP 425).
PLATFORM_TAGS = {
    "linux-x64": lambda tag: tag.startswith("manylinux") and tag.endswith("_x86_64"),
    "windows-x64": lambda tag: tag == "win_amd64",
    "macos-arm64": lambda tag: tag.startswith("macosx_") and tag.endswith("_arm64"),
    "macos-x64": lambda tag: tag.startswith("macosx_") and tag.endswith("_x86_64"),
}


class BuildError(RuntimeError):
    """A build step failed; the message says which and what to do."""


def find_blender_ext() -> Path:
    """Locate Blender's ``blender_ext.py`` inside the installed ``bpy`` module without importing it."""
    spec = importlib.util.find_spec("bpy")
    if spec is None or spec.origin is None:
        raise BuildError("the 'bpy' module is not installed: pip install bpy==5.0.1, or pass --blender-ext")
    bpy_dir = Path(spec.origin).parent
    hits = sorted(bpy_dir.glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
    if not hits:
        raise BuildError(f"blender_ext.py not found under {bpy_dir}; pass --blender-ext PATH")
    return hits[-1]


def wheel_tags(wheel_name: str) -> list[str]:
    """The platform tags of a wheel file name, e.g. ['manylinux_2_27_x86_64',
    'manylinux_2_28_x86_64'] (PEP 427: ``name-version-python-abi-platform.whl``)."""
    return wheel_name.removesuffix(".whl").split("-")[-1].split(".")


def is_pure(wheel_name: str) -> bool:
    """Whether a wheel is pure Python (ABI ``none``, platform ``any``): one file that every
    platform and Python line ships."""
    return wheel_name.removesuffix(".whl").split("-")[-2:] == ["none", "any"]


def wheel_platform(wheel_name: str) -> str:
    """Blender platform of a wheel named in the manifest, e.g. 'linux-x64' (a pure wheel
    has none: :func:`is_pure`)."""
    for platform, matches in PLATFORM_TAGS.items():
        if any(matches(tag) for tag in wheel_tags(wheel_name)):
            return platform
    raise BuildError(f"wheel {wheel_name!r} matches no known platform {sorted(PLATFORM_TAGS)}")


def wheel_line(wheel_name: str) -> str:
    """The Python line (a key of :data:`PYTHON_LINES`) of a wheel named in the manifest, from
    its ABI tag, e.g. 'cp311' (a pure wheel has none: :func:`is_pure`)."""
    abi = wheel_name.removesuffix(".whl").split("-")[-2]
    if abi not in PYTHON_LINES:
        raise BuildError(f"wheel {wheel_name!r} is built for {abi!r}, which is no Python line of "
                         f"Blender's ({sorted(PYTHON_LINES)}); list wheels of those lines only")
    return abi


def line_of_python(version: str) -> str:
    """The Python line of a version 'X.Y' (e.g. '3.13' -> 'cp313'); BuildError for a version
    no supported Blender runs."""
    for line, (python, *_rest) in PYTHON_LINES.items():
        if python == version:
            return line
    known = ", ".join(v[0] for v in PYTHON_LINES.values())
    raise BuildError(f"no supported Blender runs Python {version}; choose one of {known}")


def wheel_requirement(wheel_name: str) -> str:
    """``name==version`` from a wheel file name (PEP 427)."""
    name, version = wheel_name.split("-")[:2]
    return f"{name}=={version}"


def ensure_wheels(wheels: list[str], offline: bool) -> None:
    """Download each wheel into the cache unless it is already there."""
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    for wheel in wheels:
        name = Path(wheel).name
        if (WHEEL_CACHE / name).is_file():
            continue
        if offline:
            raise BuildError(f"{name} is not in the cache {WHEEL_CACHE}; run once without --offline")
        target = [] if is_pure(name) else [
            *[arg for tag in wheel_tags(name) for arg in ("--platform", tag)],
            "--python-version", PYTHON_LINES[wheel_line(name)][0], "--implementation", "cp",
            "--abi", wheel_line(name)]
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
               "--no-deps", *target, "--dest", str(WHEEL_CACHE), wheel_requirement(name)]
        print("downloading", name, flush=True)
        if subprocess.run(cmd).returncode != 0:
            raise BuildError(f"pip could not download {name}; check the network or use --offline")
        if not (WHEEL_CACHE / name).is_file():
            got = sorted(p.name for p in WHEEL_CACHE.glob("*.whl"))
            raise BuildError(f"pip downloaded a different file than {name} (cache holds {got}); "
                             "update the wheels list in blender_manifest.toml")


def line_manifest(text: str, line: str, platforms: list[str], wheels: list[str]) -> str:
    """The manifest text of one Python line's zips: the ``platforms`` and ``wheels`` arrays
    narrowed to the given subset, ``blender_version_min`` set and ``blender_version_max``
    added from :data:`PYTHON_LINES`."""
    def array(key: str, values: list[str]) -> str:
        body = "".join(f'  "{v}",\n' for v in values)
        return f"{key} = [\n{body}]"

    for key, values in (("platforms", platforms), ("wheels", wheels)):
        text, n = re.subn(rf"(?ms)^{key}\s*=\s*\[.*?\]", array(key, values), text, count=1)
        if n != 1:
            raise BuildError(f"blender_manifest.toml has no top-level '{key} = [...]' array to narrow")
    if re.search(r"(?m)^blender_version_max\s*=", text):
        raise BuildError("blender_manifest.toml sets blender_version_max; the build sets each "
                         "Python line's range (PYTHON_LINES in scripts/build_extension.py)")
    _python, first, stop, _name = PYTHON_LINES[line]
    versions = f'blender_version_min = "{first}"\n'
    if stop:
        versions += f'blender_version_max = "{stop}"\n'
    text, n = re.subn(r"(?m)^blender_version_min\s*=.*\n", versions, text, count=1)
    if n != 1:
        raise BuildError("blender_manifest.toml has no top-level 'blender_version_min' to set")
    return text


def runtime_paths() -> list[Path]:
    paths = [ROOT / f for f in RUNTIME_FILES if (ROOT / f).is_file()]
    for d in RUNTIME_DIRS:
        paths += sorted(p for p in (ROOT / d).rglob("*")
                        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")
    return paths


def fingerprint(paths: list[Path], manifest_text: str, wheels: list[str]) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([manifest_text, wheels]).encode())
    for p in paths:
        st = p.stat()
        h.update(f"{p.relative_to(ROOT)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def stage(folder: Path, paths: list[Path], manifest_text: str, wheels: list[str]) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    for p in paths:
        dst = folder / p.relative_to(ROOT)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, dst)
    atomic_write(folder / "blender_manifest.toml", manifest_text)
    for wheel in wheels:
        dst = folder / wheel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(WHEEL_CACHE / Path(wheel).name, dst)


def run_cli(blender_ext: Path, *args: str) -> str:
    proc = subprocess.run([sys.executable, str(blender_ext), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"blender_ext {args[0]} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def zip_path(manifest: dict, line: str, platform: str) -> Path:
    """``build/dist/<id>-<version>-<Blender range>-<platform>.zip``, e.g.
    ``spline_joints-0.1.0-blender_5.1_and_later-linux_x64.zip``."""
    return DIST / (f"{manifest['id']}-{manifest['version']}-{PYTHON_LINES[line][3]}-"
                   f"{platform.replace('-', '_')}.zip")


def demo_files() -> list[Path]:
    """The demos' .blend files (scripts/build_demos.py writes them)."""
    return sorted(DEMOS.glob("*.blend"))


def kernel_cache_worker(zip_path: str, out: str) -> None:
    """In a fresh process of the zip's Python line with ``bpy`` (BLENDER_USER_RESOURCES a
    temporary folder): install and enable the zip, compile every kernel
    (:func:`core.warm_up.warm_up`), bake every demo (:func:`demo_files`, mechanisms and
    linkages cut to :data:`DEMO_SECONDS`: the kernels compile at the first steps) for the
    kernels' variants the demos' models need beyond the warm-up's (a Blender older than the
    one that saved a demo cannot open it and skips it, saying so), and copy numba's cache
    folder (named by the installed core's source digest) to ``out/<digest>``."""
    from scripts import blender_kit as kit

    import time

    bpy = kit.start_blender(zip_path)
    backend, jit = kit.addon_module("core.backend"), kit.addon_module("addon.jit")
    compiles = []
    backend.watch_compiles(lambda kernel, seconds: seconds is None or compiles.append(seconds))
    t0 = time.perf_counter()
    kit.addon_module("core.warm_up").warm_up()
    if backend.active() != "numba":
        raise SystemExit("numba does not import in the installed extension; no kernels to ship")
    warm_up = len(compiles)
    unread = []
    for demo in demo_files():
        try:
            bpy.ops.wm.open_mainfile(filepath=str(demo))
        except RuntimeError as exc:     # saved by a newer Blender: 4.2 reads no 5.x file
            if "not a blend file" not in str(exc):
                raise
            unread.append(demo.name)
            continue
        for scene in bpy.data.scenes:
            for item in (*scene.spline_joints_mechanisms, *scene.spline_joints_linkages):
                item.duration = min(item.duration, DEMO_SECONDS)
        kit.bake_all()
    digest = backend.source_digest()
    shutil.copytree(os.path.join(jit.cache_dir(), digest), os.path.join(out, digest))
    from numba.core import config

    print(f"compiled {len(compiles)} kernels for {config.CPU_NAME} ({warm_up} in the "
          f"warm-up, the rest for the demos) in {time.perf_counter() - t0:.0f} s")
    if unread:
        print(f"Blender {bpy.app.version_string} cannot open {len(unread)} demo file(s) saved "
              f"by a newer Blender ({', '.join(unread)}): their extra kernels are not shipped "
              "and compile on their first bake")


def add_kernel_cache(zip_file: Path, python: str) -> None:
    """Add the compiled kernels to ``zip_file`` (step 4 of the module docstring), compiled by
    :func:`kernel_cache_worker` run in ``python``; the zip is rewritten atomically."""
    with tempfile.TemporaryDirectory(prefix="kernels-", dir=BUILD) as tmp:
        out = Path(tmp) / "cache"
        env = dict(os.environ, BLENDER_USER_RESOURCES=str(Path(tmp) / "user"),
                   PYTHONDONTWRITEBYTECODE="1", OPENBLAS_NUM_THREADS="1")
        for var in ("NUMBA_CACHE_DIR", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES",
                    "SPLINE_JOINTS_BACKEND"):
            env.pop(var, None)
        proc = subprocess.run([python, str(Path(__file__).resolve()), "--kernel-cache-worker",
                               str(zip_file), str(out)], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildError(f"compiling the kernels for {zip_file.name} with {python} failed "
                             f"(--no-kernel-cache builds without them):\n"
                             f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        print(proc.stdout.strip().splitlines()[-1], f"({zip_file.name})")
        files = sorted(p for p in out.rglob("*") if p.is_file())
        tmp_zip = zip_file.with_name(f".{zip_file.name}.tmp")
        shutil.copy2(zip_file, tmp_zip)
        with zipfile.ZipFile(tmp_zip, "a", compression=zipfile.ZIP_DEFLATED) as zf:
            for p in files:
                zf.write(p, f"{KERNEL_CACHE}/{p.relative_to(out).as_posix()}")
        os.replace(tmp_zip, zip_file)


def python_line(python: str) -> str:
    """The Python line (a key of :data:`PYTHON_LINES`) of the interpreter ``python``."""
    proc = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"could not run {python}: {proc.stderr.strip()}")
    return line_of_python(proc.stdout.strip())


def kernel_pythons_of(others: list[str]) -> dict:
    """Python line -> the Python compiling its kernels: this interpreter for its own line when
    it is a Blender line's and has ``bpy``, and each of ``others`` for its line."""
    found = {}
    own = "%d.%d" % sys.version_info[:2]
    if importlib.util.find_spec("bpy") and own in [v[0] for v in PYTHON_LINES.values()]:
        found[line_of_python(own)] = sys.executable
    found.update((python_line(p), p) for p in others)
    return found


def build_line(line: str, manifest_text: str, platforms: list[str], offline: bool, force: bool,
               blender_ext: Path | None, kernel_python: str | None = None) -> list[Path]:
    """Build (or reuse) one Python line's zip for each platform; return their paths. The
    :data:`KERNEL_PLATFORM`'s zip ships the kernels compiled by ``kernel_python`` (a Python of
    this line with ``bpy``) when one is given."""
    manifest = tomllib.loads(manifest_text)
    wheels = [w for w in manifest.get("wheels", []) if is_pure(Path(w).name) or (
        wheel_line(Path(w).name) == line and wheel_platform(Path(w).name) in platforms)]
    text = line_manifest(manifest_text, line, platforms, wheels)
    zips = [zip_path(manifest, line, p) for p in platforms]
    paths = runtime_paths()
    stamp = fingerprint(paths, text, wheels)
    kernels = fingerprint(demo_files(), kernel_python, []) if kernel_python else ""
    stamp_file = DIST / f".fingerprint-{line}-{'+'.join(platforms)}"
    old = stamp_file.read_text().split("\n") if stamp_file.is_file() else []
    if (not force and old[:1] == [stamp] and (not kernels or old[1:] == [kernels])
            and all(z.is_file() for z in zips)):
        print("up to date:", *[z.name for z in zips])
        return zips

    ensure_wheels(wheels, offline)
    folder, out = STAGE / line, DIST / f".{line}"
    stage(folder, paths, text, wheels)
    blender_ext = blender_ext or find_blender_ext()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for z in zips:
        z.unlink(missing_ok=True)
    print(run_cli(blender_ext, "build", "--source-dir", str(folder), "--output-dir", str(out),
                  "--split-platforms"), end="")
    for platform, z in zip(platforms, zips):
        built = out / f"{manifest['id']}-{manifest['version']}-{platform.replace('-', '_')}.zip"
        if not built.is_file():
            raise BuildError(f"the build did not write {built}; see the output above")
        os.replace(built, z)
        if platform == KERNEL_PLATFORM and kernel_python:
            add_kernel_cache(z, kernel_python)
        elif platform == KERNEL_PLATFORM:
            print(f"note: {z.name} ships no compiled kernels (no Python {PYTHON_LINES[line][0]} "
                  "given: --kernel-python PATH)")
        print(run_cli(blender_ext, "validate", str(z)), end="")
    shutil.rmtree(out)
    atomic_write(stamp_file, f"{stamp}\n{kernels}")
    return zips


def build(platforms: list[str] | None, offline: bool, force: bool, blender_ext: Path | None,
          pythons: list[str] | None = None, kernel_pythons: dict | None = None) -> list[Path]:
    """Build (or reuse) one zip per platform and Python line (``pythons``: versions 'X.Y',
    default every line of :data:`PYTHON_LINES`); return their paths. ``kernel_pythons``: line
    -> the Python that compiles the kernels its :data:`KERNEL_PLATFORM` zip ships (none for a
    line not in it)."""
    BUILD.mkdir(exist_ok=True)
    atomic_write(BUILD / ".gitignore", "*\n")
    manifest_text = (ROOT / "blender_manifest.toml").read_text()
    all_platforms = list(tomllib.loads(manifest_text)["platforms"])
    platforms = all_platforms if not platforms else platforms
    unknown = sorted(set(platforms) - set(all_platforms))
    if unknown:
        raise BuildError(f"unknown platform(s) {unknown}; the manifest declares {all_platforms}")
    lines = list(PYTHON_LINES) if not pythons else [line_of_python(v) for v in pythons]
    DIST.mkdir(exist_ok=True)
    return [z for line in dict.fromkeys(lines)
            for z in build_line(line, manifest_text, platforms, offline, force, blender_ext,
                                (kernel_pythons or {}).get(line))]


class build_lock:
    """Exclusive lock on build/.lock so parallel test workers never build over each other."""

    def __enter__(self):
        BUILD.mkdir(exist_ok=True)
        self.fh = open(BUILD / ".lock", "w")
        try:
            import fcntl
        except ImportError:  # Windows: builds are run one at a time there
            return self
        fcntl.flock(self.fh, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        self.fh.close()  # closing releases the lock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", action="append", dest="platforms",
                        help="platform to build (repeatable); default: every platform in the manifest")
    parser.add_argument("--python", action="append", dest="pythons", metavar="X.Y",
                        help="Python line to build for (repeatable): 3.11 for Blender 4.2-5.0, "
                             "3.13 for Blender 5.1 and later; default: both")
    parser.add_argument("--offline", action="store_true", help="never download; use build/wheels/ only")
    parser.add_argument("--force", action="store_true", help="rebuild even if nothing changed")
    parser.add_argument("--blender-ext", type=Path, help="path to Blender's blender_ext.py")
    parser.add_argument("--kernel-python", action="append", default=[], metavar="PATH",
                        help="a Python of another line than this one's, with bpy, to compile "
                             "the kernels its zip for this platform ships (repeatable)")
    parser.add_argument("--no-kernel-cache", action="store_true",
                        help="build this platform's zips without compiled kernels")
    parser.add_argument("--kernel-cache-worker", nargs=2, metavar=("ZIP", "OUT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.kernel_cache_worker:
        kernel_cache_worker(*args.kernel_cache_worker)
        return 0
    try:
        kernel_pythons = {} if args.no_kernel_cache else kernel_pythons_of(args.kernel_python)
        with build_lock():
            zips = build(args.platforms, args.offline, args.force, args.blender_ext, args.pythons,
                         kernel_pythons)
    except BuildError as exc:
        print("error:", exc, file=sys.stderr)
        return 1
    for z in zips:
        print(z)
    return 0


if __name__ == "__main__":
    sys.exit(main())
