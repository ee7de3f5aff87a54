"""The numeric core must import and run with Blender absent (house rule 1)."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

SCRIPT = r"""
import importlib, pkgutil, sys
for name in ("bpy", "mathutils", "bmesh", "addon"):
    sys.modules[name] = None          # any import of them now raises ImportError
import core
names = [m.name for m in pkgutil.walk_packages(core.__path__, "core.")]
for name in names:
    importlib.import_module(name)
print(len(names))
"""


def test_every_core_module_imports_without_blender():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) >= 4


def test_core_sources_never_name_blender_modules():
    bad = []
    for path in (ROOT / "core").rglob("*.py"):
        for line in path.read_text().splitlines():
            words = line.strip().split()
            if len(words) >= 2 and words[0] in ("import", "from") and \
                    words[1].split(".")[0] in ("bpy", "mathutils", "bmesh", "addon"):
                bad.append(f"{path}: {line.strip()}")
    assert not bad, bad
