"""Blender tests: build the extension, install it in a sandboxed user folder, run scenarios.

The pytest process itself never imports bpy. A session fixture builds the linux-x64 zip of
this Python's line (Blender 4.2-5.0: 3.11, 5.1 and later: 3.13) with
scripts/build_extension.py (cached in build/, rebuilt when a source changes) and installs it
once into a temporary BLENDER_USER_RESOURCES with ``package_install_files``. Each test then
calls ``blender(scenario, **kwargs)``: the scenario function (defined in the test module, with
``import bpy`` inside it) runs in a fresh ``python`` process where the add-on is enabled from
the sandbox, and its return value comes back as JSON. A failed assertion inside the scenario
fails the test with the subprocess's traceback.
"""

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _blender_settings import BUILD_TIMEOUT, PYTHON, ROOT, TIMEOUT

RUNNER = Path(__file__).resolve().parent / "_runner.py"


def _call(args, env, out):
    proc = subprocess.run([sys.executable, str(RUNNER), *args, str(out)], env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-60:])
        raise AssertionError(f"Blender subprocess failed ({' '.join(args[:3])}):\n{tail}")
    return json.loads(Path(out).read_text())


@pytest.fixture(scope="session")
def extension_zip():
    pytest.importorskip("bpy")  # only checks that the module is installed; imported in subprocesses
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_extension.py"),
                           "--platform", "linux-x64", "--python", PYTHON],
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    zip_path = Path(proc.stdout.strip().splitlines()[-1])
    assert zip_path.is_file(), proc.stdout
    return zip_path


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory, extension_zip):
    """Environment with a private user folder where the extension is installed and enabled."""
    user = tmp_path_factory.mktemp("blender_user")
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(user), PYTHONDONTWRITEBYTECODE="1")
    info = _call(["install", str(extension_zip)], env, user / "install.json")
    return {"env": env, "user": user, "install": info, "zip": extension_zip}


@pytest.fixture
def blender(sandbox, tmp_path):
    """Run a scenario function in a fresh Blender process: ``blender(fn, **kwargs) -> result``.

    ``tmp`` (a fresh directory, as str) is passed to every scenario.
    """

    def run(function, **kwargs):
        kwargs = {"tmp": str(tmp_path), **kwargs}
        args = ["run", inspect.getfile(function), function.__name__, json.dumps(kwargs)]
        return _call(args, sandbox["env"], tmp_path / f"{function.__name__}.json")

    return run
