"""scripts/bake.py with the bpy module: bakes every mechanism of each file, atomically, in
parallel, and refuses a run it cannot do before any work (one sentence per problem)."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = [sys.executable, str(ROOT / "scripts" / "bake.py")]
DEMO = ROOT / "demo_blends" / "hinge_chain.blend"


def scenario_make_file(tmp, name, demo):
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.context.scene.render.fps = 24
    assert bpy.ops.spline_joints.add_mechanism(demo=demo, duration=0.25) == {"FINISHED"}
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(tmp, name))
    return {}


def scenario_read_results(tmp, paths):
    import bpy

    out = {}
    for path in paths:
        bpy.ops.wm.open_mainfile(filepath=path)
        item = bpy.context.scene.spline_joints_mechanisms[0]
        obj = item.bodies[0].object
        out[os.path.basename(path)] = {
            "frames": item.baked_frames,
            "animated": obj.animation_data is not None and obj.animation_data.action is not None}
    return out


def test_bake_script_parallel(blender, sandbox, tmp_path):
    blender(scenario_make_file, name="a.blend", demo="hinge_chain")
    blender(scenario_make_file, name="b.blend", demo="globe")
    out = tmp_path / "out"
    proc = subprocess.run([*SCRIPT, str(tmp_path / "a.blend"), str(tmp_path / "b.blend"), "--out", str(out),
                           "--jobs", "2"], env=sandbox["env"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(ln.split(":")[0] for ln in proc.stdout.splitlines()) == ["baked", "baked"], proc.stdout
    assert sorted(os.listdir(out)) == ["a.blend", "b.blend"]  # no temporary files left
    res = blender(scenario_read_results, paths=[str(out / "a.blend"), str(out / "b.blend")])
    assert res == {name: {"frames": 7, "animated": True} for name in ("a.blend", "b.blend")}


def _make_inputs(tmp_path, case):
    """Inputs and extra arguments of one refused run, and the sentence expected for it."""
    good = tmp_path / "good.blend"
    shutil.copy(DEMO, good)
    if case == "missing":
        return [tmp_path / "missing.blend"], [], "missing.blend: no such file; check the path"
    if case == "folder":
        (tmp_path / "scenes.blend").mkdir()
        return [good, tmp_path / "scenes.blend"], [], "scenes.blend: is a folder, not a .blend file"
    if case == "suffix":
        (tmp_path / "notes.txt").write_text("notes")
        return [good, tmp_path / "notes.txt"], [], "notes.txt: is not a .blend file (its name does not end in .blend)"
    if case == "content":
        (tmp_path / "archive.blend").write_bytes(b"PK\x03\x04" + bytes(64))
        return [tmp_path / "archive.blend"], [], "archive.blend: is not a .blend file (it does not start with"
    if case == "collision":
        for sub in ("x", "y"):
            (tmp_path / sub).mkdir()
            shutil.copy(DEMO, tmp_path / sub / "a.blend")
        return ([good, tmp_path / "x" / "a.blend", tmp_path / "y" / "a.blend"], [],
                f"several inputs would be saved under one name in {tmp_path / 'out'} "
                f"(a.blend from {tmp_path / 'x' / 'a.blend'}, {tmp_path / 'y' / 'a.blend'}); "
                "rename them or bake them into different --out folders")
    if case == "jobs":
        return [good], ["--jobs", "0"], "--jobs must be at least 1 (got 0)"
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["missing", "folder", "suffix", "content", "collision", "jobs"])
def test_refused_before_any_work(tmp_path, case):
    files, extra, message = _make_inputs(tmp_path, case)
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "user"))
    proc = subprocess.run([*SCRIPT, *map(str, files), "--out", str(tmp_path / "out"), *extra], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and message in proc.stderr, proc.stdout + proc.stderr
    assert "baked:" not in proc.stdout
    assert not (tmp_path / "out").exists() and not (tmp_path / "user").exists()  # no work started


def test_out_that_is_a_file_is_refused(tmp_path):
    shutil.copy(DEMO, tmp_path / "a.blend")
    (tmp_path / "out").write_text("keep")
    proc = subprocess.run([*SCRIPT, str(tmp_path / "a.blend"), "--out", str(tmp_path / "out")],
                          env=dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "user")),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (f"error: --out {tmp_path / 'out'} is a file, not a folder; pass a folder (it is created if missing)"
            in proc.stderr.splitlines())
    assert (tmp_path / "out").read_text() == "keep" and not (tmp_path / "user").exists()


@pytest.mark.skipif(os.name != "posix", reason="file permissions as POSIX has them")
def test_unreadable_input_and_unwritable_out_are_refused():
    """Run as an ordinary user (root reads everything: then as nobody through setpriv)."""
    prefix = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv to drop privileges")
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        probe = subprocess.run([*prefix, sys.executable, "-c", ""], capture_output=True, text=True)
        if probe.returncode != 0:       # e.g. its shared library lies in root's private home
            pytest.skip(f"this Python cannot run as nobody: {probe.stderr.strip()}")
    folder = Path(tempfile.mkdtemp())  # under the system temporary folder, which every user can reach
    try:
        shutil.copy(DEMO, folder / "private.blend")
        (folder / "private.blend").chmod(0o200)
        (folder / "locked").mkdir()
        folder.chmod(0o755)
        (folder / "locked").chmod(0o555)
        proc = subprocess.run([*prefix, *SCRIPT, str(folder / "private.blend"), "--out", str(folder / "locked" / "out")],
                              env=dict(os.environ, BLENDER_USER_RESOURCES=str(folder / "user")),
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert (f"{folder / 'private.blend'}: cannot be read (Permission denied); give this user read access "
                "to it or leave it out") in proc.stderr, proc.stderr
        assert f"--out {folder / 'locked' / 'out'} is not writable" in proc.stderr, proc.stderr
        assert sorted(os.listdir(folder)) == ["locked", "private.blend"] and not os.listdir(folder / "locked")
    finally:
        (folder / "locked").chmod(0o755)
        shutil.rmtree(folder)


def scenario_bake_inside_blender(tmp, bake_script, demo):
    """bake.py's main as a Blender binary runs it (``blender -b FILE --python bake.py -- ARGS``):
    bpy is imported and the file is open. Once with --out naming a file, once with a folder."""
    import contextlib
    import importlib.util
    import io

    import bpy

    spec = importlib.util.spec_from_file_location("bake", bake_script)
    bake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bake)
    path = os.path.join(tmp, "scene.blend")
    shutil.copy(demo, path)
    bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
    bpy.context.scene.spline_joints_mechanisms[0].duration = 0.1
    out = {}
    for case, target in (("file", os.path.join(tmp, "out.txt")), ("folder", os.path.join(tmp, "out"))):
        Path(os.path.join(tmp, "out.txt")).write_text("keep")
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            status = bake.main(["--out", target])
        out[case] = {"status": status, "stderr": stderr.getvalue(),
                     "frames": bpy.context.scene.spline_joints_mechanisms[0].baked_frames}
    out["files"] = sorted(os.listdir(os.path.join(tmp, "out")))
    return out


def test_inside_blender_out_checked_before_the_bake(blender, tmp_path):
    res = blender(scenario_bake_inside_blender, bake_script=str(ROOT / "scripts" / "bake.py"), demo=str(DEMO))
    assert res["file"] == {"status": 1, "frames": 0, "stderr": (
        f"error: --out {tmp_path / 'out.txt'} is a file, not a folder; pass a folder (it is created if missing)\n")}
    assert res["folder"]["status"] == 0 and res["folder"]["frames"] > 0, res
    assert res["files"] == ["scene.blend"]
