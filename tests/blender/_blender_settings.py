"""Settings of the Blender tests that their modules import by name (a test module cannot
import them from ``conftest``: pytest imports every test folder's conftest.py under that one
module name, so which one ``import conftest`` finds depends on the folders collected)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: seconds a Blender subprocess may take
TIMEOUT = 300
#: seconds building the extension zip may take (its linux-x64 zip ships the kernels, compiled
#: at build time in a Blender process of this line: minutes of CPU on a fresh build; another
#: build holds build/.lock meanwhile)
BUILD_TIMEOUT = 1800
#: the Python line of the Blender under test (the bpy module of this interpreter)
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
