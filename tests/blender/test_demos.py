"""demo_blends/: the committed files match scripts/build_demos.py and the core's demo library,
and a short headless bake of one of them (scripts.blender_kit.bake_open_file, as scripts/bake.py
bakes) writes keyframes."""

import importlib.util
import os
from pathlib import Path

import numpy as np

from scripts.demos.common import BUILD_VERSION

ROOT = Path(__file__).resolve().parents[2]
DEMO_DIR = ROOT / "demo_blends"
#: largest file (bytes) per demo, 1 MB unless named: the gait2392 walks carry the model's 20
#: real bone meshes (19,000 vertices, about 0.85 MB compressed, shared by its two models), and
#: so does the motion-capture demo, with the walking trial's 41 markers keyed at 151 frames
SIZE_LIMITS = {"gait2392_walk": 1_300_000, "gait2392_mocap": 1_500_000,
               "gait2392_muscles": 1_300_000}


def _build_script():
    spec = importlib.util.spec_from_file_location("build_demos", ROOT / "scripts" / "build_demos.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # numpy and core at import time; bpy is imported by its builders
    return module


def scenario_check_files(tmp, demo_dir, version, rigs):
    import bpy

    from scenes import addon_module

    demos = addon_module("core.mechanisms").DEMOS
    files = sorted(p[:-6] for p in os.listdir(demo_dir) if p.endswith(".blend"))
    problems = []
    if files != sorted([*demos, *rigs]):
        problems.append(f"files {files} != demos {sorted(demos)} + rigs {sorted(rigs)}")
    for name in files:
        path = os.path.join(demo_dir, f"{name}.blend")
        bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
        scene = bpy.context.scene
        where = f"{name}.blend"
        if scene.get("spline_joints_demo_build") != version:
            problems.append(f"{where}: built by version {scene.get('spline_joints_demo_build')}, "
                            f"script is {version}")
        if scene.camera is None or scene.render.engine != "BLENDER_WORKBENCH":
            problems.append(f"{where}: no camera or not set up for Workbench")
        if not any(o.type == "LIGHT" for o in scene.objects):
            problems.append(f"{where}: no light")
        if any(img.packed_file is not None for img in bpy.data.images):
            problems.append(f"{where}: packed images")
        if any(o.type == "MESH" and not o.data.materials for o in scene.objects):
            problems.append(f"{where}: a mesh without material")
        limit = SIZE_LIMITS.get(name, 1_000_000)
        if os.path.getsize(path) > limit:
            problems.append(f"{where}: larger than {limit / 1e6:g} MB")
        items = scene.spline_joints_mechanisms
        if name in demos:
            if len(items) != 1 or items[0].demo != name:
                problems.append(f"{where}: expected one '{name}' mechanism, found "
                                f"{[i.demo for i in items]}")
                continue
            mech = demos[name](duration=0.1)
            for what, displays, refs in (("body", mech.display, items[0].bodies),
                                         ("scenery", mech.scenery, items[0].scenery)):
                want = [f"{items[0].name}.{d.name}" for d in displays]
                got = [ref.object.name if ref.object else None for ref in refs]
                if got != want:
                    problems.append(f"{where}: {what} objects {got} != core {what} {want}")
            if items[0].baked_frames or any(ref.object.animation_data for ref in items[0].bodies):
                problems.append(f"{where}: committed baked (demo files are stored unbaked)")
        elif len(items):
            problems.append(f"{where}: a rig with mechanisms")
    rig_facts = {}
    for rig, bone, nq in (("knee_fit_rig", "Knee/tibia", 1), ("scapulothoracic_fit_rig", "Shoulder/scapula", 2)):
        bpy.ops.wm.open_mainfile(filepath=os.path.join(demo_dir, f"{rig}.blend"), load_ui=False)
        arm, bname = bone.split("/")
        pb = bpy.data.objects[arm].pose.bones[bname]
        s = pb.spline_joints
        doc = addon_module("core.io").loads(s.joint_json)
        animated = bpy.data.objects[arm].animation_data.action is not None
        rig_facts[rig] = {"samples": len(s.samples), "status": s.fit_status, "nq": doc.joint.nq,
                          "rms_mm": s.fit_rms_mm, "drive": s.drive, "sliders": all(
                              f"sj_q{i}" in pb.keys() for i in range(nq)), "animated": animated}
    bpy.ops.wm.open_mainfile(filepath=os.path.join(demo_dir, "shoulder_reach_cone.blend"), load_ui=False)
    rig_facts["cone"] = bpy.data.objects.get("SJ_ReachCone_Arm_humerus") is not None
    # the humerus is driven onto its cone's boundary and held; the cone is red exactly there
    scene = bpy.context.scene
    bridge, bones = addon_module("addon.bridge"), addon_module("core.bones")
    hum = bpy.data.objects["Arm"].pose.bones["humerus"]
    cone = addon_module("addon.cones").cone_options(hum.spline_joints)
    rest = bridge.read_rest_T_parent_child(hum)
    mat = bpy.data.materials["SJ_ReachCone"]
    swing, red = [], []
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        swing.append(bones.cone_status(cone, rest, bridge.read_pose_T_parent_child(hum)).swing_value)
        red.append(mat.diffuse_color[0] > 0.5 and mat.diffuse_color[1] < 0.5)
    rig_facts["swing"], rig_facts["red"] = swing, red
    # the character: simulated tail on coned ball joints, shins on fitted spline knees
    bpy.ops.wm.open_mainfile(filepath=os.path.join(demo_dir, "character_rig.blend"), load_ui=False)
    arm = bpy.data.objects["Critter"]
    sim = {pb.name: (pb.spline_joints_sim.kind, pb.spline_joints_sim.use_cone,
                     type(addon_module("core.io").loads(pb.spline_joints.joint_json).joint).__name__
                     if pb.spline_joints.joint_json else "")
           for pb in arm.pose.bones if pb.spline_joints_sim.enabled}
    rig_facts["character"] = {"simulated": sim, "animated": arm.animation_data.action is not None,
                              "rigs": [o.name for o in addon_module("addon.rig_scene").simulated_armatures(
                                  bpy.context.scene)],
                              "ground": bpy.context.scene.spline_joints_sim.use_ground}
    # the contact demos: every bone simulated, box colliders, the ground on
    for rig, arm_name in (("ragdoll_steps", "Ragdoll"), ("chain_in_bowl", "Chain")):
        bpy.ops.wm.open_mainfile(filepath=os.path.join(demo_dir, f"{rig}.blend"), load_ui=False)
        scene = bpy.context.scene
        arm = bpy.data.objects[arm_name]
        rig_facts[rig] = {
            "kinds": sorted({(pb.spline_joints_sim.kind, pb.spline_joints_sim.use_cone or
                              pb.spline_joints_sim.use_range) for pb in arm.pose.bones
                             if pb.spline_joints_sim.enabled}),
            "bones": len(arm.pose.bones), "simulated": sum(pb.spline_joints_sim.enabled for pb in arm.pose.bones),
            "colliders": sorted(o.name for o in scene.objects if o.spline_joints_collider.enabled),
            "ground": scene.spline_joints_sim.use_ground,
            "self_collision": scene.spline_joints_sim.use_self_collision}
    return {"problems": problems, "rigs": rig_facts}


def test_demo_blends_are_up_to_date(blender):
    bd = _build_script()
    out = blender(scenario_check_files, demo_dir=str(DEMO_DIR), version=BUILD_VERSION,
                  rigs=list(bd.RIGS) + list(bd.LINKAGES))
    assert not out["problems"], "run scripts/build_demos.py:\n" + "\n".join(out["problems"])
    knee, scap = out["rigs"]["knee_fit_rig"], out["rigs"]["scapulothoracic_fit_rig"]
    assert knee["samples"] == 131 and knee["nq"] == 1 and knee["status"] == "converged", knee
    assert scap["samples"] == 17 * 11 and scap["nq"] == 2 and scap["status"] == "converged", scap
    for rig in (knee, scap):
        assert rig["rms_mm"] < 0.05 and rig["drive"] and rig["sliders"] and rig["animated"], rig
    assert out["rigs"]["cone"]
    swing, red = np.array(out["rigs"]["swing"]), np.array(out["rigs"]["red"])
    at_limit = np.abs(swing) <= 1e-3
    assert at_limit.sum() >= 10 and swing.min() > -1e-3, swing  # held at the limit, never past it
    np.testing.assert_array_equal(red, at_limit)                # red at the limit, green inside
    character = out["rigs"]["character"]
    assert character["rigs"] == ["Critter"] and character["animated"], character
    assert not character["ground"], character       # it sits on a ledge, no ground (demo_character.py)
    tail = {k: v for k, v in character["simulated"].items() if k.startswith("tail.")}
    assert len(tail) == 8 and all(v[:2] == ["BALL", True] for v in tail.values()), character
    for side in ("L", "R"):   # the knee: the preset captured and fitted with a spline curve joint
        assert character["simulated"][f"shin.{side}"] == ["FITTED", False, "SplineCurveJoint"], character
    ragdoll, bowl = out["rigs"]["ragdoll_steps"], out["rigs"]["chain_in_bowl"]
    # the hips free, the other bones on limited ball joints and hinges (knees, elbows)
    assert ragdoll["kinds"] == [["BALL", True], ["FREE", False], ["HINGE", True]], ragdoll
    assert ragdoll["simulated"] == ragdoll["bones"] == 15 and ragdoll["ground"], ragdoll
    assert ragdoll["colliders"] == [f"step.{k}" for k in range(4)] and not ragdoll["self_collision"], ragdoll
    assert bowl["kinds"] == [["BALL", True], ["FREE", False]] and bowl["self_collision"], bowl
    assert len(bowl["colliders"]) == 9 and bowl["ground"], bowl


def scenario_short_bake(tmp, demo):
    import bpy

    from scenes import addon_module
    from scripts.blender_kit import bake_open_file

    bpy.ops.wm.open_mainfile(filepath=str(DEMO_DIR / f"{demo}.blend"), load_ui=False)
    item = bpy.context.scene.spline_joints_mechanisms[0]
    item.duration = 0.1
    message = bake_open_file(tmp, f"{demo}.blend")
    bpy.ops.wm.open_mainfile(filepath=os.path.join(tmp, f"{demo}.blend"), load_ui=False)
    scene = bpy.context.scene
    item = scene.spline_joints_mechanisms[0]
    bridge = addon_module("addon.bridge")
    keys = [bridge.read_fcurve_keys(ref.object, "location", 2) for ref in item.bodies]
    return {"message": message, "frames": item.baked_frames, "steps": item.baked_steps,
            "constraint_error": item.constraint_error, "fps": scene.render.fps,
            "n_keys": [len(k) for k in keys], "moved": float(max(abs(k[-1, 1] - k[0, 1]) for k in keys))}


def test_short_headless_bake_of_a_demo(blender):
    out = blender(scenario_short_bake, demo="hinge_chain")
    frames = round(0.1 * out["fps"]) + 1
    assert out["frames"] == frames and out["n_keys"] == [frames] * 8, out
    assert out["steps"] == (frames - 1) * 10 and out["constraint_error"] < 1e-9, out
    assert out["moved"] > 1e-3, out  # the chain falls
    assert "baked 1 mechanism(s)" in out["message"]
