"""Where the docs environment's mkdocs is, the strict build of the site, and what a test does
when a tool it needs is missing."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MKDOCS = ROOT / ".venv-docs" / "bin" / "mkdocs"


def build_site(site_dir, root=ROOT):
    """``mkdocs build --strict`` of the project at ``root`` into ``site_dir``; the completed
    process."""
    return subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(site_dir)],
                          cwd=root, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def missing(reason):
    """Skip a test whose tool is missing, or fail it in CI (``CI`` set), where
    scripts/test.sh installs it."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI: scripts/test.sh should have installed it)")
    pytest.skip(reason)
