"""Atomic file writes (core.io.files): a file holds its old or its complete new content."""

import ast
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import InvalidInputError
from core.io import atomic_path, atomic_write, check_writable_path, read_input

ROOT = Path(__file__).resolve().parents[2]


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@settings(max_examples=30, deadline=None)
@given(old=st.binary(max_size=300), new=st.one_of(st.binary(max_size=300), st.text(max_size=100)))
def test_atomic_write_replaces_the_content_and_leaves_no_temporary(tmp_path_factory, old, new):
    folder = tmp_path_factory.mktemp("w")
    path = folder / "out.bin"
    path.write_bytes(old)
    atomic_write(path, new)
    assert path.read_bytes() == (new.encode("utf-8") if isinstance(new, str) else new)
    assert os.listdir(folder) == ["out.bin"]


def test_atomic_write_text_encoding_and_permissions(tmp_path):
    path = tmp_path / "a.txt"
    atomic_write(str(path), "é", encoding="latin-1")
    assert path.read_bytes() == b"\xe9"
    assert path.stat().st_mode & 0o777 == 0o666 & ~_umask()  # those of open(path, "w")


@pytest.mark.parametrize("write", [
    lambda p: atomic_write(p, b"x"),
    lambda p: atomic_path(p).__enter__(),
    check_writable_path,
])
def test_missing_folder_and_folder_paths_are_refused_before_any_work(tmp_path, write):
    with pytest.raises(InvalidInputError, match=r"folder .*nowhere does not exist: create it or "
                                                r"choose another"):
        write(tmp_path / "nowhere" / "out.json")
    assert not (tmp_path / "nowhere").exists()
    (tmp_path / "sub").mkdir()
    with pytest.raises(InvalidInputError, match=r"sub is a folder, not a file: choose a file "
                                                r"name inside it"):
        write(tmp_path / "sub")
    assert os.listdir(tmp_path / "sub") == [] and sorted(os.listdir(tmp_path)) == ["sub"]


def test_atomic_write_refuses_other_data_types(tmp_path):
    with pytest.raises(InvalidInputError, match="bytes or str, got dict"):
        atomic_write(tmp_path / "a.json", {"a": 1})
    assert os.listdir(tmp_path) == []


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "scene.blend"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_path(path) as tmp:
            assert Path(tmp).parent == tmp_path and tmp.endswith(".tmp.blend")
            Path(tmp).write_bytes(b"half")
            raise RuntimeError("disk full")
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["scene.blend"]


def test_a_writer_that_writes_nothing_is_an_error(tmp_path):
    path = tmp_path / "render.png"
    path.write_bytes(b"old")
    with pytest.raises(InvalidInputError, match="nothing was written for .*render.png"):
        with atomic_path(path):
            pass
    assert path.read_bytes() == b"old"


def test_atomic_path_renames_what_the_writer_wrote(tmp_path):
    path = tmp_path / "figure.svg"
    with atomic_path(path) as tmp:
        Path(tmp).write_text("<svg/>")
        assert not path.exists()
    assert path.read_text() == "<svg/>" and os.listdir(tmp_path) == ["figure.svg"]


def test_a_process_killed_while_writing_leaves_the_old_file(tmp_path):
    """SIGKILL between the write and the rename: the destination keeps its content; the only
    trace is a hidden temporary that names the killed process."""
    path = tmp_path / "summary.json"
    path.write_text('{"old": true}')
    code = ("import os, signal, sys\n"
            "from core.io import atomic_path\n"
            "with atomic_path(sys.argv[1]) as tmp:\n"
            "    open(tmp, 'w').write('{\"new\": ')\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.wait(timeout=60) == -signal.SIGKILL
    assert path.read_text() == '{"old": true}'
    leftovers = sorted(set(os.listdir(tmp_path)) - {"summary.json"})
    assert len(leftovers) == 1 and leftovers[0].startswith(f".summary.json.{proc.pid}.")


def test_read_input_names_the_file_it_cannot_read(tmp_path):
    (tmp_path / "a.mot").write_bytes(b"m\x00")
    assert read_input(tmp_path / "a.mot", "motion") == b"m\x00"
    with pytest.raises(InvalidInputError, match=r"cannot read mesh .*b.vtp: No such file or "
                                                r"directory; check the path"):
        read_input(tmp_path / "b.vtp", "mesh")
    with pytest.raises(InvalidInputError, match="cannot read motion .*: is a folder, not a file"):
        read_input(tmp_path, "motion")


# -- every write of the project goes through core.io.files ------------------------------------

#: calls that create or overwrite a file: attribute or function names
WRITE_CALLS = {"write_text", "write_bytes", "dump", "save_as_mainfile", "save_render", "savefig",
               "tofile"}
#: writes that are not outputs, with the reason
NOT_OUTPUTS = {
    ("scripts/blender_kit.py", "render_frame"): "a scratch render in the system temp folder, "
                                                "read back and deleted",
    ("scripts/build_extension.py", "__enter__"): "build/.lock, a lock whose content is unused",
}


def _call_name(call):
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def _is_write(call):
    name = _call_name(call)
    if name in WRITE_CALLS:
        return True
    if name == "render":
        return any(k.arg == "write_still" for k in call.keywords)
    if name == "open":
        mode = call.args[1] if len(call.args) > 1 else next(
            (k.value for k in call.keywords if k.arg == "mode"), None)
        return isinstance(mode, ast.Constant) and any(c in str(mode.value) for c in "wax+")
    return False


def _unprotected_writes(tree, rel):
    """(function, line) of write calls outside a ``with ... atomic_path(...)`` block."""
    found = []

    def visit(node, function, protected):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if isinstance(node, ast.With) and any(
                isinstance(item.context_expr, ast.Call)
                and _call_name(item.context_expr) == "atomic_path" for item in node.items):
            protected = True
        if isinstance(node, ast.Call) and _is_write(node) and not protected \
                and (rel, function) not in NOT_OUTPUTS:
            found.append((rel, function, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, function, protected)

    visit(tree, "<module>", False)
    return found


def test_every_file_the_project_writes_goes_through_an_atomic_write():
    sources = [ROOT / "__init__.py"] + sorted(
        p for d in ("core", "addon", "scripts") for p in (ROOT / d).rglob("*.py"))
    found = []
    for path in sources:
        rel = path.relative_to(ROOT).as_posix()
        found += _unprotected_writes(ast.parse(path.read_text(), str(path)), rel)
    assert found == [], ("write these with core.io.atomic_write, or inside "
                         "core.io.atomic_path(...): " + ", ".join(map(str, found)))
