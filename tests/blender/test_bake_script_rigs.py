"""scripts/bake.py on a file with a user's own rig (built here from scratch, not a demo file)
and a demo mechanism: both are baked headless, the rig's keys go into a new action with the
user's action kept on the NLA, and the printed line reports the rig."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = [sys.executable, str(ROOT / "scripts" / "bake.py")]
FRAMES = (1, 9)
N_TAIL = 3
#: the hips' keyed swing about its bone axis (rad) at these frames
SWING = ((1, 0.0), (5, 0.8), (9, 0.0))


def scenario_make_rig_file(tmp, name):
    """An armature 'Critter': a keyed 'hips' bone and a tail of N_TAIL bones on ball joints
    in reach cones (mass from 3 cm capsules: no meshes), beside the hinge-chain demo mechanism."""
    import bpy

    from scenes import tail_armature

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = 24
    scene.frame_start, scene.frame_end = FRAMES
    assert bpy.ops.spline_joints.add_mechanism(demo="hinge_chain", duration=0.25) == {"FINISHED"}
    obj = tail_armature("Critter", N_TAIL, 0.1, (2.0, 0.0, 1.0), SWING)
    for k in range(N_TAIL):
        pb = obj.pose.bones[f"tail.{k:03d}"]
        s = pb.spline_joints_sim
        s.enabled, s.kind, s.use_cone, s.damping = True, "BALL", True, 1e-3
        s.spring_units = "ABSOLUTE"
        s.mass_source, s.capsule_radius = "CAPSULE", 0.03
        pb.spline_joints.cone_shape, pb.spline_joints.cone_half_angle = "CIRCULAR", 0.5
    bpy.ops.object.mode_set(mode="OBJECT")
    scene.frame_set(1)
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(tmp, name))
    return {"action": obj.animation_data.action.name}


def scenario_read_rig_file(tmp, path):
    import bpy

    from scenes import action_fcurves, addon_module

    bridge = addon_module("addon.bridge")
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Critter"]
    ad = obj.animation_data
    baked = {}
    for k in range(N_TAIL):
        keys = bridge.read_fcurve_keys(obj, f'pose.bones["tail.{k:03d}"].rotation_quaternion', 0)
        baked[f"tail.{k:03d}"] = keys[:, 0].tolist()
    hips = {}
    for strip in (s for t in ad.nla_tracks for s in t.strips):
        fc = action_fcurves(strip.action).find('pose.bones["hips"].rotation_euler', index=1)
        hips[strip.action.name] = [list(p.co) for p in fc.keyframe_points]
    tips = []
    for f in range(FRAMES[0], FRAMES[1] + 1):
        bpy.context.scene.frame_set(f)
        tips.append(list(obj.matrix_world @ obj.pose.bones[f"tail.{N_TAIL - 1:03d}"].tail))
    item = bpy.context.scene.spline_joints_mechanisms[0]
    return {"action": ad.action.name, "baked": baked, "nla": hips, "tips": tips,
            "mechanism_frames": item.baked_frames}


def test_bake_script_bakes_user_rig_and_mechanism(blender, sandbox, tmp_path):
    made = blender(scenario_make_rig_file, name="critter.blend")
    out = tmp_path / "out"
    proc = subprocess.run([*SCRIPT, str(tmp_path / "critter.blend"), "--out", str(out)], env=sandbox["env"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith(f"baked: {out / 'critter.blend'}: baked 1 mechanism(s)"), line
    frames = FRAMES[1] - FRAMES[0] + 1
    assert f"and 1 rig(s) (Scene/Critter: {frames} frames of {N_TAIL} simulated bodies in " in line, line
    assert "worst limit excess" in line, line
    assert sorted(os.listdir(out)) == ["critter.blend"]

    res = blender(scenario_read_rig_file, path=str(out / "critter.blend"))
    assert res["mechanism_frames"] == 7                 # the demo mechanism was baked too
    assert res["action"] != made["action"]              # the tail went into a new action
    assert all(keys == list(range(FRAMES[0], FRAMES[1] + 1)) for keys in res["baked"].values()), res["baked"]
    # the user's keys stay, untouched, on the NLA
    assert list(res["nla"]) == [made["action"]], res["nla"]
    np.testing.assert_allclose(res["nla"][made["action"]], SWING, rtol=0, atol=1e-7)   # float32 keys
    tips = np.array(res["tips"])
    assert np.ptp(tips, axis=0).max() > 0.02            # the baked tail moves
