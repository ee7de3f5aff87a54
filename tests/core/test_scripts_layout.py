"""scripts/ by role (parsed with ast, nothing imported): only entry scripts (a module with an
``if __name__ == "__main__":`` block, run as ``python scripts/...``) put anything on
``sys.path``, at most once each; no module of scripts/ imports an entry script; and modules
of scripts/ import each other as ``scripts.<module>`` or relatively, never by a bare name that
only resolves while scripts/ itself is on ``sys.path``."""

import ast
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _modules(root=SCRIPTS):
    """{dotted name under ``scripts``: (path, tree)} of every .py file under ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = (path, ast.parse(path.read_text(), str(path)))
    return out


def _is_entry(tree):
    """Whether the module has a top-level ``if __name__ == "__main__":`` block."""
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) \
                and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__" \
                and any(isinstance(c, ast.Constant) and c.value == "__main__"
                        for c in node.test.comparators):
            return True
    return False


def _is_sys_path(node):
    return isinstance(node, ast.Attribute) and node.attr == "path" \
        and isinstance(node.value, ast.Name) and node.value.id == "sys"


def _sys_path_edits(tree):
    """Line numbers of the statements that change ``sys.path``: a call of one of its methods
    (insert, append, extend, ...), an assignment to it or to a slice of it, ``+=``, or
    ``site.addsitedir``."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if _is_sys_path(node.func.value) or node.func.attr == "addsitedir":
                lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if _is_sys_path(t) or isinstance(t, ast.Subscript) and _is_sys_path(t.value):
                    lines.append(node.lineno)
    return lines


def _imports(name, path, tree):
    """``(line, module, first part or None)`` for every import in the module ``name``: the
    dotted module an import may name (relative imports resolved; ``from X import Y`` gives both
    X.Y, in case Y is a module, and X) and, for an absolute import, its first part."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.append((node.lineno, alias.name, alias.name.split(".")[0]))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module, first = ".".join(base + ([node.module] if node.module else [])), None
            else:
                module, first = node.module, node.module.split(".")[0]
            out.append((node.lineno, module, first))
            out += [(node.lineno, f"{module}.{alias.name}", first) for alias in node.names]
    return out


def _problems(modules, root=SCRIPTS):
    entries = {name for name, (_, tree) in modules.items() if _is_entry(tree)}
    bare_names = {name.split(".")[1] for name in modules if "." in name}
    problems = []
    for name, (path, tree) in modules.items():
        rel = path.relative_to(root.parent).as_posix()
        edits = _sys_path_edits(tree)
        if name in entries and len(edits) > 1:
            problems.append(f"{rel}: an entry script that changes sys.path {len(edits)} times "
                            f"(lines {edits}); once is enough")
        elif name not in entries and edits:
            problems.append(f"{rel}: a module (not an entry script) that changes sys.path "
                            f"(lines {edits}); its entry script does that")
        for line, module, first in _imports(name, path, tree):
            if first in bare_names:  # resolves while scripts/ is on sys.path
                module = f"scripts.{module}"
            if module in entries:
                problems.append(f"{rel}:{line}: imports the entry script {module}; move what it "
                                "needs into a module both import")
            if first in bare_names and module == f"scripts.{first}":
                problems.append(f"{rel}:{line}: imports {first} by its bare name; import it as "
                                f"scripts.{first}")
    return problems


def test_only_entry_scripts_edit_sys_path_and_none_is_imported():
    modules = _modules()
    assert "scripts.bench" in modules and "scripts.blender_kit" in modules
    assert _problems(modules) == []


def test_the_check_finds_a_flat_folder_of_scripts_importing_each_other(tmp_path):
    """The checks above on the shape scripts/ had as one flat folder: bench sections that put
    scripts/ on sys.path and import the entry script for its helpers, a helper module that
    edits sys.path, an entry script with two edits."""
    root = tmp_path / "scripts"
    root.mkdir()
    main = '\n\nif __name__ == "__main__":\n    main()\n'
    (root / "bench.py").write_text("import sys\nsys.path.insert(0, '..')\n\ndef table(): pass\n" + main)
    (root / "bench_spline.py").write_text("import sys\nsys.path.insert(0, '..')\nsys.path.insert(0, '.')\n"
                                          "from bench import table\n" + main)
    (root / "pictures.py").write_text("import sys\nsys.path.insert(0, '.')\nimport build_demos as bd\n")
    (root / "build_demos.py").write_text("def start(): pass\n" + main)
    found = _problems(_modules(root), root)
    assert any("bench_spline.py: an entry script that changes sys.path 2 times" in p for p in found), found
    assert any("bench_spline.py:4: imports the entry script scripts.bench" in p for p in found), found
    assert any("pictures.py: a module (not an entry script) that changes sys.path" in p for p in found), found
    assert any("pictures.py:3: imports the entry script scripts.build_demos" in p for p in found), found
