"""Every Python code block of the documentation's guides and concepts runs against the core as
it is, so a changed API breaks the tests, not the reader.

A page's blocks run in order in one fresh interpreter (a reader follows a page top to
bottom), in a temporary folder that holds the OpenSim models of shared/data/osim and its
gait2392 pipeline folder, with the repository on the path. A block that needs Blender (it imports ``bpy``, ``mathutils`` or
``addon``) is skipped by that rule; there is no list of skipped blocks."""

import ast
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
OSIM = ROOT.parent / "shared" / "data" / "osim"
#: pages whose code blocks are examples for users (the API reference renders docstrings)
PAGES = sorted(p for p in DOCS.rglob("*.md") if p.parent.name in ("guides", "concepts")
               or p.name == "getting-started.md")
BLENDER_MODULES = {"bpy", "mathutils", "addon"}
FENCE = re.compile(r"^(?P<indent> *)```python\n(?P<code>.*?)^(?P=indent)```", re.M | re.S)


def python_blocks(text):
    """The ``python`` fenced blocks of a page, dedented."""
    out = []
    for m in FENCE.finditer(text):
        n = len(m["indent"])
        out.append("".join(line[n:] for line in m["code"].splitlines(keepends=True)))
    return out


def needs_blender(code):
    """True when the block imports a module that only Blender has."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        if any(n.split(".")[0] in BLENDER_MODULES for n in names):
            return True
    return False


def test_the_rule_sees_blender_blocks():
    assert needs_blender("import bpy\nbpy.ops.wm.save_mainfile()")
    assert needs_blender("from mathutils import Matrix")
    assert not needs_blender("import numpy as np\nfrom core.lie import se3")
    assert python_blocks("text\n   ```python\n   x = 1\n   ```\n") == ["x = 1\n"]


def test_the_guides_have_examples():
    """The pages hold core-only examples at all (a fence the pattern missed would skip them)."""
    runnable = [b for p in PAGES for b in python_blocks(p.read_text()) if not needs_blender(b)]
    assert len(runnable) >= 4, [p.name for p in PAGES]


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p.read_text())],
                         ids=lambda p: str(p.relative_to(DOCS)))
def test_page_examples_run(page, tmp_path):
    blocks = [b for b in python_blocks(page.read_text()) if not needs_blender(b)]
    if not blocks:
        pytest.skip("every block of this page needs Blender")
    if OSIM.is_dir():
        for model in [*OSIM.glob("*.osim"), OSIM / "gait2392_pipeline"]:
            (tmp_path / model.name).symlink_to(model)
    script = "\n".join(f"# --- block {i + 1}\n{b}" for i, b in enumerate(blocks))
    (tmp_path / "page.py").write_text(script)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = subprocess.run([sys.executable, "page.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"{page.relative_to(DOCS)}: an example failed\n{run.stderr[-3000:]}"
