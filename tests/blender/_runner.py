"""Runs one step of the Blender tests in a fresh process with the PyPI ``bpy`` module.

bpy is a process-wide singleton (one Main database, one set of registered classes), so every
test runs its scenario in its own process: ``python _runner.py install ZIP OUT`` once per
session, then ``python _runner.py run TEST_FILE FUNCTION KWARGS_JSON OUT`` per test.
BLENDER_USER_RESOURCES must point at the sandbox before this script starts: Blender reads it
when bpy is imported. The scenario's return value (JSON-serialisable) is written to OUT.
Scenarios import the tests' ``scenes`` helper, and the repository's ``scripts`` package.
"""

import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]
from scripts.blender_kit import MODULE, install_extension  # noqa: E402


def install(zip_path):
    """:func:`scripts.blender_kit.install_extension`, and what it left: the operator's result,
    whether the add-on is enabled and loaded, and the folders it unpacked into."""
    result = install_extension(zip_path)
    import bpy
    import addon_utils  # after bpy, which puts Blender's own script modules on sys.path

    user = os.environ["BLENDER_USER_RESOURCES"]
    loaded_default, loaded_state = addon_utils.check(MODULE)
    site = os.path.join(user, "extensions", ".local", "lib",
                        f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")
    return {
        "result": sorted(result),
        "enabled": MODULE in bpy.context.preferences.addons,
        "loaded": bool(loaded_state),
        "extension_dir": os.path.join(user, "extensions", "user_default", "spline_joints"),
        "site_packages": site,
        "unpacked": sorted(n for n in ("c3d", "scipy", "numba", "llvmlite")
                           if os.path.isdir(os.path.join(site, n))),
        "user_path": bpy.utils.resource_path("USER"),
    }


def run(test_file, function, kwargs):
    import bpy

    bpy.ops.preferences.addon_enable(module=MODULE)
    if MODULE not in bpy.context.preferences.addons:
        raise RuntimeError(f"{MODULE} could not be enabled")
    spec = importlib.util.spec_from_file_location("scenario_module", test_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, function)(**kwargs)


def main(argv):
    if argv[0] == "install":
        out, value = argv[2], install(argv[1])
    elif argv[0] == "run":
        out, value = argv[4], run(argv[1], argv[2], json.loads(argv[3]))
    else:
        raise SystemExit(f"unknown mode {argv[0]!r}: use 'install' or 'run'")
    with open(out, "w") as fh:
        json.dump(value, fh)


if __name__ == "__main__":
    main(sys.argv[1:])
