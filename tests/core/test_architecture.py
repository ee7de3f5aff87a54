"""The core's import rules, read from its sources (every import statement, those inside
functions included, resolved to the core's modules):

* no import circle, except the joint wrappers that deserialize their inner joint
  (:mod:`core.joints.mapped` and :mod:`core.joints.registry`);
* the core never imports Blender (``bpy``, ``mathutils``) or the add-on;
* the backend boundary: outside :mod:`core.compiled` only :mod:`core.backend` imports
  compiled code, and only the plain-data layout (:mod:`core.compiled.layout`: integers,
  no numba) is shared with the rest of the core;
* :mod:`core.compiled` never imports :mod:`core.backend`, nor a module that imports it.
"""

import ast
from pathlib import Path

from _graph import circles

CORE = Path(__file__).resolve().parents[2] / "core"
#: the one import circle allowed
JOINT_WRAPPERS = {"core.joints.mapped", "core.joints.registry"}
#: the compiled modules the rest of the core may import: plain data
SHARED_LAYOUT = {"core.compiled.layout"}


def _modules(root=CORE):
    """module name -> path of every ``.py`` file under ``root``."""
    out = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name, path, modules):
    """``(core modules imported, other top-level names imported)`` by one module: relative
    imports resolved, ``from package import module`` counted as that module."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    inside, outside = set(), set()

    def resolve(target):
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            prefix = ".".join(base + ([node.module] if node.module else []))
            targets = [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in modules
                       else prefix for alias in node.names]
        else:
            continue
        for target in targets:
            if target.split(".")[0] == "core":
                found = resolve(target)
                if found and found != name:
                    inside.add(found)
            else:
                outside.add(target.split(".")[0])
    return inside, outside


def _graph(root=CORE):
    modules = _modules(root)
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _is_compiled(name):
    return name == "core.compiled" or name.startswith("core.compiled.")


def test_the_core_has_no_import_circle_but_the_joint_wrappers():
    edges = {name: inside for name, (inside, _) in _graph().items()}
    found = [sorted(c) for c in circles(edges) if c != JOINT_WRAPPERS]
    assert not found, f"import circles in core: {found}"


def test_the_core_never_imports_blender_or_the_addon():
    bad = {name: sorted(outside & {"bpy", "mathutils", "addon"})
           for name, (_, outside) in _graph().items() if outside & {"bpy", "mathutils", "addon"}}
    assert not bad, bad


def test_only_the_backend_imports_compiled_code():
    bad = {name: sorted(x for x in inside if _is_compiled(x) and x not in SHARED_LAYOUT)
           for name, (inside, _) in _graph().items()
           if name != "core.backend" and not _is_compiled(name)}
    bad = {name: found for name, found in bad.items() if found}
    assert not bad, f"modules reaching core.compiled around core.backend: {bad}"


def test_compiled_code_never_imports_the_backend():
    graph = _graph()
    reaches_backend = {"core.backend"}
    changed = True
    while changed:                      # every module from which core.backend is reachable
        changed = False
        for name, (inside, _) in graph.items():
            if name not in reaches_backend and inside & reaches_backend:
                reaches_backend.add(name)
                changed = True
    bad = sorted(name for name in graph if _is_compiled(name) and name in reaches_backend)
    assert not bad, f"compiled modules importing core.backend (or a module that does): {bad}"


def test_the_rules_see_a_lazy_import_and_a_circle(tmp_path):
    """The checks above on a made-up core: an import inside a function counts, and a circle
    through it is found."""
    pkg = tmp_path / "core"
    (pkg / "compiled").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "compiled" / "__init__.py").write_text("")
    (pkg / "backend.py").write_text("def load():\n    from .compiled import kernels\n")
    (pkg / "compiled" / "kernels.py").write_text("from .. import backend\nimport bpy\n")
    (pkg / "dynamics.py").write_text("def aba():\n    from .compiled.kernels import aba\n")
    graph = _graph(pkg)
    assert graph["core.backend"][0] == {"core.compiled.kernels"}
    assert graph["core.compiled.kernels"] == ({"core.backend"}, {"bpy"})
    assert graph["core.dynamics"][0] == {"core.compiled.kernels"}
    edges = {name: inside for name, (inside, _) in graph.items()}
    assert circles(edges) == [{"core.backend", "core.compiled.kernels"}]
