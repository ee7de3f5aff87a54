"""Where the docs environment's mkdocs is, and the strict build of the site."""

import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
MKDOCS = ROOT / ".venv-docs" / "bin" / "mkdocs"


def build_site(site_dir, root=ROOT):
    """``mkdocs build --strict`` of the project at ``root`` into ``site_dir``; the completed
    process."""
    return subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(site_dir)],
                          cwd=root, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
