"""scripts/bake.py with the bpy module: bakes every mechanism of each file, atomically, in parallel."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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


def test_bake_script_parallel_and_failure(blender, sandbox, tmp_path):
    blender(scenario_make_file, name="a.blend", demo="hinge_chain")
    blender(scenario_make_file, name="b.blend", demo="globe")
    out = tmp_path / "out"
    script = [sys.executable, str(ROOT / "scripts" / "bake.py")]
    proc = subprocess.run([*script, str(tmp_path / "a.blend"), str(tmp_path / "b.blend"), "--out", str(out),
                           "--jobs", "2"], env=sandbox["env"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(os.listdir(out)) == ["a.blend", "b.blend"]  # no temporary files left
    res = blender(scenario_read_results, paths=[str(out / "a.blend"), str(out / "b.blend")])
    assert res == {name: {"frames": 7, "animated": True} for name in ("a.blend", "b.blend")}

    bad = subprocess.run([*script, str(tmp_path / "missing.blend"), "--out", str(tmp_path / "out2")],
                         env=sandbox["env"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and "missing.blend: no such file" in bad.stderr
    assert not (tmp_path / "out2").exists()
