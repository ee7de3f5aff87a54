"""Settings of the Blender tests that their modules import by name (a test module cannot
import them from ``conftest``: pytest imports every test folder's conftest.py under that one
module name, so which one ``import conftest`` finds depends on the folders collected)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: seconds a Blender subprocess may take
TIMEOUT = 300
#: the Python line of the Blender under test (the bpy module of this interpreter)
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
