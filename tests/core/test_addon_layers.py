"""The add-on's operators are a leaf, read from the sources (no bpy needed).

Every import counts, lazy ones inside functions included, and so does a module named by a
string that is handed to a call (``addon_module("addon.operators.rig")``,
``importlib.import_module(MODULE + ".addon.operators.rig")``):
* only ``addon/__init__.py`` imports ``addon.operators``; no other module of ``addon/`` outside
  ``addon/operators/`` imports from it;
* the modules of ``addon/`` import one another without a circle;
* ``scripts/`` and ``tests/`` never import an operator module: they call the engine modules.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from _graph import circles

ROOT = Path(__file__).resolve().parents[2]
OPERATORS = "addon.operators"
#: a module path naming the operators package or one of its modules, as a whole dotted name
NAMES_OPERATORS = re.compile(r"(^|\.)addon\.operators(\.|$)")


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources(folder: str) -> dict[str, Path]:
    return {_module(p): p for p in sorted((ROOT / folder).rglob("*.py"))}


def _imports(path: Path) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in the file, relative ones resolved
    against its package (``from . import x`` gives ``package.x``)."""
    module = _module(path)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1]
                                + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            out.extend((node.lineno, f"{base}.{a.name}") for a in node.names)
    return out


def _named_in_calls(path: Path) -> list[tuple[int, str]]:
    """``(line, text)`` of every string constant inside a call's arguments (f-string and
    concatenated parts included): the module names handed to import helpers."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            for arg in (*node.args, *(k.value for k in node.keywords)):
                out.extend((c.lineno, c.value) for c in ast.walk(arg)
                           if isinstance(c, ast.Constant) and isinstance(c.value, str))
    return out


def _resolve(name: str, modules) -> str | None:
    """The module of ``modules`` that ``name`` (a module or a name in one) loads."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def test_only_the_addon_package_imports_the_operators():
    offenders = []
    for module, path in _sources("addon").items():
        if module == "addon" or module == OPERATORS or module.startswith(OPERATORS + "."):
            continue
        offenders += [f"{path.relative_to(ROOT)}:{line} imports {name}"
                      for line, name in _imports(path) if NAMES_OPERATORS.search(name)]
    assert not offenders, "only addon/__init__.py may import addon.operators:\n" + "\n".join(offenders)
    assert any(NAMES_OPERATORS.search(name) for _, name in _imports(ROOT / "addon" / "__init__.py"))


def test_addon_modules_import_without_a_circle():
    modules = _sources("addon")
    edges = {}
    for module, path in modules.items():
        targets = {_resolve(name, modules) for _, name in _imports(path)}
        # a module's own package (its __init__) runs first anyway: not an edge
        edges[module] = {t for t in targets if t and t != module
                         and not module.startswith(t + ".")}
    found = [sorted(c) for c in circles(edges)]
    assert not found, "import circles in addon/: " + "; ".join(" ".join(c) for c in found)


def test_scripts_and_tests_call_engine_modules_not_operators():
    offenders = []
    for folder in ("scripts", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            found = [(line, name) for line, name in _imports(path) + _named_in_calls(path)
                     if NAMES_OPERATORS.search(name.strip())]
            offenders += [f"{path.relative_to(ROOT)}:{line} names {name.strip()}"
                          for line, name in found]
    assert not offenders, ("scripts and tests call the add-on's engine modules, never an "
                           "operator module:\n" + "\n".join(offenders))
