"""Write the documentation's troubleshooting page (docs/troubleshooting.md) from the places that
raise the messages a user can get from an operator, found by reading the sources (ast; nothing
is imported).

    python scripts/troubleshooting.py           # write the page
    python scripts/troubleshooting.py --check   # exit 1 when the page is not what it would write

An operator reports a ValueError as an ERROR and cancels (addon/operators/_common.py,
``reporting``); the core's errors (core.errors) derive from ValueError. So a user can read:

* every ``raise ValueError(...)`` (or a core error) of the add-on's modules and every
  ``self.report({"ERROR" | "WARNING"}, ...)`` of its operators, grouped by the panel they
  belong to (:data:`PANELS`);
* every core error raised by a core module the add-on imports, directly or through other core
  modules, grouped by module.

A message is shown as written, an f-string's fields as ``‹expression›``.
"""

import argparse
import ast
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "troubleshooting.md"
ERRORS = {"ValueError", "InvalidInputError", "SimulationError", "NonFiniteError", "SplineJointsError"}

#: add-on module (path under addon/) -> (panel or place in Blender, guide page under docs/)
PANELS = {
    "operators/_common.py": ("Every panel", "getting-started.md"),
    "guides.py": ("Every panel (the help button)", "getting-started.md"),
    "operators/capture.py": ("Capture panel", "guides/knee.md"),
    "bridge.py": ("Capture, Fit and Drive panels (the active bone and its samples)", "guides/knee.md"),
    "operators/fit.py": ("Fit panel", "guides/knee.md"),
    "documents.py": ("Fit and Drive panels (the joint stored on the bone)", "guides/knee.md"),
    "paths.py": ("Fit panel (Draw Joint Path)", "guides/knee.md"),
    "operators/transfer.py": ("Fit panel (Preset, Transfer, Export)", "guides/knee.md"),
    "operators/drive.py": ("Drive panel", "guides/knee.md"),
    "operators/reach_cone.py": ("Reach Cone panel", "guides/reach-cones.md"),
    "operators/rig.py": ("Simulate panel", "guides/rig.md"),
    "rig_scene.py": ("Simulate panel (reading the rig)", "guides/rig.md"),
    "rig_jobs.py": ("Simulate panel (Bake Simulation, Simulate Preview)", "guides/rig.md"),
    "massprops.py": ("Simulate panel (Mass: From Meshes)", "guides/rig.md"),
    "colliders.py": ("Simulate panel, Collider subpanel", "guides/rig.md"),
    "operators/rig_muscles.py": ("Simulate panel, Muscles subpanel", "guides/rig.md"),
    "rig_muscles.py": ("Simulate panel, Muscles subpanel (a muscle, its drawing and its bake)",
                       "guides/rig.md"),
    "mechanism_bake.py": ("Mechanisms panel", "guides/mechanisms.md"),
    "operators/linkages.py": ("Linkages panel", "guides/linkages.md"),
    "linkage_bake.py": ("Linkages panel (Bake)", "guides/linkages.md"),
    "operators/opensim.py": ("OpenSim panel and File > Import/Export", "guides/opensim.md"),
    "osim_scene.py": ("OpenSim panel (the imported model and its markers)", "guides/opensim.md"),
    "operators/mocap.py": ("Motion Capture panel and File > Import > Marker Trial",
                           "guides/motion-capture.md"),
    "mocap.py": ("Motion Capture panel (markers, Scale, IK, ID, forces)",
                 "guides/motion-capture.md"),
}


#: a guide page -> its title, for the links under each panel
GUIDES = {"getting-started.md": "Getting started", "guides/knee.md": "Fitting and driving a knee",
          "guides/reach-cones.md": "Reach cones and holding limits",
          "guides/rig.md": "Simulating your own rig",
          "guides/mechanisms.md": "Mechanisms and dynamics bakes",
          "guides/linkages.md": "Linkages", "guides/opensim.md": "OpenSim import and export",
          "guides/motion-capture.md": "Motion capture"}


def render(node):
    """A message expression as text: string constants as written, an f-string's fields and any
    other expression as ``‹source›``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else f"‹{ast.unparse(v.value)}›"
                       for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return render(node.left) + render(node.right)
    return f"‹{ast.unparse(node)}›"


def messages(path):
    """``(line, level, function, text)`` of every error raised and every ERROR or WARNING
    report in a source file, in line order."""
    tree = ast.parse(path.read_text(), str(path))
    out = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Raise) and isinstance(child.exc, ast.Call) \
                    and isinstance(child.exc.func, ast.Name) and child.exc.func.id in ERRORS \
                    and child.exc.args:
                out.append((child.lineno, "ERROR", function, render(child.exc.args[0])))
            elif isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) \
                    and child.func.attr == "report" and len(child.args) == 2 \
                    and isinstance(child.args[0], ast.Set):
                levels = {e.value for e in child.args[0].elts if isinstance(e, ast.Constant)}
                for level in ("ERROR", "WARNING"):
                    if level in levels:
                        out.append((child.lineno, level, function, render(child.args[1])))
            visit(child, name)

    visit(tree, "")
    return sorted(out)


def _core_imports(path, package):
    """The core modules a source file imports (``package``: its dotted package)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names = [module] + [f"{module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            name = name.removeprefix("addon.")
            if name == "core" or name.startswith("core."):
                found.add(name)
    return found


def _module_path(name):
    """The source file of a dotted core module, or None when ``name`` is not a module."""
    base = ROOT / Path(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def core_modules_reached():
    """Every core module the add-on imports, directly or through other core modules."""
    todo = set()
    for path in (ROOT / "addon").rglob("*.py"):
        package = ".".join(("addon",) + path.relative_to(ROOT / "addon").parent.parts)
        todo |= {n for n in _core_imports(path, package) if _module_path(n)}
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _module_path(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        todo |= {n for n in _core_imports(path, package) if _module_path(n)} - seen
    return sorted(seen)


def _code(text):
    """``text`` as an inline code span (longer fences where it holds backticks)."""
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def page():
    """The page's Markdown."""
    lines = ["# Troubleshooting", "",
             "Every message an operator of the add-on can show, with where it comes from. An "
             "operator that meets an error reports it in the status bar and the Info editor, "
             "cancels, and leaves the scene as it was (undo is not needed). Each message says "
             "what is wrong and what to do; the guide linked under each panel explains the "
             "settings it names. Fields in ‹angle quotes› are filled in when the message is "
             "shown (a bone's name, a number, a file).", "",
             "This page is written by `python scripts/troubleshooting.py` from the sources; a test "
             "fails when it is out of date.", "",
             "## Messages of the add-on, by panel", ""]
    groups = {}
    for path in sorted((ROOT / "addon").rglob("*.py")):
        rel = path.relative_to(ROOT / "addon").as_posix()
        found = messages(path)
        if found:
            groups.setdefault(PANELS.get(rel, ("Other add-on modules", "getting-started.md")),
                              []).append((rel, found))
    order = list(dict.fromkeys(PANELS.values())) + [("Other add-on modules", "getting-started.md")]
    for key in [k for k in order if k in groups]:
        panel, guide = key
        lines += [f"### {panel}", "", f"Guide: [{GUIDES[guide]}]({guide}).", ""]
        for rel, found in groups[key]:
            for line, level, function, text in found:
                where = f"`addon/{rel}`" + (f", `{function}`" if function else "")
                lines.append(f"- {'**Warning:** ' if level == 'WARNING' else ''}{_code(text)}"
                             f" ({where})")
        lines.append("")
    lines += ["## Messages forwarded from the core", "",
              "Raised by the core modules the add-on calls (directly or through other core "
              "modules) when an input cannot be used or a simulation fails, and reported by the "
              "operator as they are. The module's page in the API reference describes the "
              "function named.", ""]
    for name in core_modules_reached():
        path = _module_path(name)
        found = [m for m in messages(path) if m[1] == "ERROR"]
        if not found:
            continue
        rel = path.relative_to(ROOT).as_posix()
        lines += [f"### {name}", ""]
        for line, _, function, text in found:
            lines.append(f"- {_code(text)} (`{rel}`" + (f", `{function}`)" if function else ")"))
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when docs/troubleshooting.md is not what this would write")
    args = parser.parse_args(argv)
    text = page()
    if args.check:
        if PAGE.read_text() != text:
            print(f"{PAGE} is out of date: run python scripts/troubleshooting.py", file=sys.stderr)
            return 1
        return 0
    sys.path.insert(0, str(ROOT))
    from core.io import atomic_write
    atomic_write(os.fspath(PAGE), text)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
