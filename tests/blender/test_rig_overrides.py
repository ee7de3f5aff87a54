"""Bakes whose keys the rig itself overrides: the report names the simulated bone, what
overrides it and what to do (a WARNING); an imported OpenSim model baked as a ragdoll shows
its bake in the viewport; a Rigify limb whose FK controls are simulated in IK mode is keyed to
FK on the simulation action."""

from pathlib import Path

import numpy as np
import pytest

OSIM = Path(__file__).resolve().parents[3] / "shared" / "data" / "osim"
GAIT = str(OSIM / "gait2392_thelen2003muscle.osim")
WALK = str(OSIM / "subject01_walk1_ik.mot")


def _simulate(pb, kind="BALL"):
    s = pb.spline_joints_sim
    s.enabled, s.kind = True, kind
    s.mass_source, s.mass, s.com, s.inertia = "MANUAL", 0.5, (0.0, 0.05, 0.0), (2e-3, 5e-4, 2e-3)
    s.damping = 1e-3


def _basis_keys(obj, pb, frame):
    """The matrix_basis the object's active action keys for a pose bone at ``frame``
    (location and quaternion F-curves evaluated), from mathutils only."""
    from mathutils import Matrix, Quaternion, Vector

    from scenes import action_fcurves

    fcurves = action_fcurves(obj.animation_data.action)
    loc = [fcurves.find(pb.path_from_id("location"), index=i).evaluate(frame) for i in range(3)]
    rot = [fcurves.find(pb.path_from_id("rotation_quaternion"), index=i).evaluate(frame)
           for i in range(4)]
    return np.array(Matrix.LocRotScale(Vector(loc), Quaternion(rot).normalized(), None))


def scenario_copy_transforms(tmp):
    import bpy

    from scenes import printed_reports, tail_armature

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 12
    scene.spline_joints_sim.use_ground = False
    obj = tail_armature("Tail", 3, 0.1, (0.0, 0.0, 1.0), ((1, 0.0), (12, 0.8)))
    for k in range(3):
        _simulate(obj.pose.bones[f"tail.{k:03d}"])
    con = obj.pose.bones["tail.001"].constraints.new("COPY_TRANSFORMS")
    con.name, con.target, con.subtarget = "Follow hips", obj, "hips"
    result, printed = printed_reports(lambda: bpy.ops.spline_joints.bake_rig())
    assert result == {"FINISHED"}
    (line,) = [ln for ln in printed.splitlines() if "Baked into" in ln]
    # an IK constraint at the tip poses the bones of its chain
    con.mute = True
    goal = bpy.data.objects.new("Goal", None)
    scene.collection.objects.link(goal)
    goal.location = (0.3, -0.1, 1.0)
    ik = obj.pose.bones["tail.002"].constraints.new("IK")
    ik.target, ik.chain_count = goal, 2
    result, printed = printed_reports(lambda: bpy.ops.spline_joints.bake_rig())
    (ik_line,) = [ln for ln in printed.splitlines() if "Baked into" in ln]
    # without the constraints, the same bake is honest
    ik.mute = True
    result, clean = printed_reports(lambda: bpy.ops.spline_joints.bake_rig())
    return {"line": line, "ik": ik_line,
            "clean": [ln for ln in clean.splitlines() if "Baked into" in ln]}


def test_copy_transforms_is_named(blender):
    out = blender(scenario_copy_transforms)
    line = out["line"]
    assert line.startswith("Warning:"), line
    assert "'tail.001' does not show the simulation" in line, line
    assert "Copy Transforms constraint 'Follow hips' overrides the keys" in line, line
    assert "simulate 'hips', which it follows, or mute the constraint" in line, line
    assert "deg off at frame 12; with it 'tail.002'): its Copy Transforms" in line, line
    assert "'tail.002' does not" not in line, line
    assert "'tail.000' does not" not in line, line
    ik = out["ik"]
    assert "'tail.001' does not show the simulation" in ik, ik
    assert "the IK constraint 'IK' of 'tail.002' poses its chain; switch the limb to FK or mute " \
           "the IK constraint" in ik, ik
    assert "'tail.002' does not show the simulation" in ik and "its IK constraint 'IK'" in ik
    (clean,) = out["clean"]
    assert clean.startswith("Info:") and "does not show" not in clean, clean


def _rigify_rig():
    """A generated Rigify human rig 'rig' (from Blender's human meta-rig), active, in Pose
    Mode, frames 1-10, no ground."""
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.preferences.addon_enable(module="rigify")
    bpy.ops.object.armature_human_metarig_add()
    bpy.ops.pose.rigify_generate()
    rig = bpy.data.objects["rig"]
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="POSE")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 10
    scene.spline_joints_sim.use_ground = False
    scene.frame_set(1)
    return rig


def scenario_rigify(tmp):
    import bpy

    from scenes import addon_module, printed_reports

    bridge = addon_module("addon.bridge")
    rig = _rigify_rig()
    scene = bpy.context.scene
    switch = 'pose.bones["upper_arm_parent.L"]["IK_FK"]'
    assert rig.pose.bones["upper_arm_parent.L"]["IK_FK"] == 0.0      # the arm in IK mode
    out = {}
    # DEF and ORG bones: overridden by their Copy Transforms constraints (one bake each, so
    # that each report fits in the line Blender prints)
    for group, copies in (("def", ("DEF-upper_arm.L", "DEF-forearm.L")), ("org", ("ORG-thigh.R",))):
        for name in copies:
            _simulate(rig.pose.bones[name])
        result, printed = printed_reports(lambda: bpy.ops.spline_joints.bake_rig())
        assert result == {"FINISHED"}
        out[group] = [ln for ln in printed.splitlines() if "Baked into" in ln]
        for name in copies:
            rig.pose.bones[name].spline_joints_sim.enabled = False

    # FK controls while the arm is in IK mode: the bake keys the arm to FK
    fk = ("upper_arm_fk.L", "forearm_fk.L", "hand_fk.L")
    for name in fk:
        _simulate(rig.pose.bones[name])
    result, printed = printed_reports(lambda: bpy.ops.spline_joints.bake_rig())
    assert result == {"FINISHED"}
    out["fk"] = [ln for ln in printed.splitlines() if "Baked into" in ln]
    assert bridge.read_fcurve_keys(rig, switch, 0)[:, 1].tolist() == [1.0, 1.0]
    moved = 0.0
    for f in (1, 5, 10):
        scene.frame_set(f)
        assert rig.pose.bones["upper_arm_parent.L"]["IK_FK"] == 1.0
        for name in fk:    # the arm's ORG and DEF bones follow the simulated controls
            org = rig.pose.bones["ORG-" + name.replace("_fk", "")]
            np.testing.assert_allclose(np.array(org.matrix), np.array(rig.pose.bones[name].matrix),
                                       rtol=0, atol=1e-5)
        hand = np.array(rig.pose.bones["DEF-hand.L"].matrix)[:3, 3]
        if f == 1:
            start = hand
        moved = max(moved, float(np.linalg.norm(hand - start)))
    out["hand_moved"] = moved

    # A re-bake without the FK controls gives the switch its value back, unkeyed.
    for name in fk:
        rig.pose.bones[name].spline_joints_sim.enabled = False
    _simulate(rig.pose.bones["DEF-upper_arm.L"])
    assert bpy.ops.spline_joints.bake_rig() == {"FINISHED"}
    assert bridge.read_fcurve_keys(rig, switch, 0).size == 0
    scene.frame_set(5)
    assert rig.pose.bones["upper_arm_parent.L"]["IK_FK"] == 0.0
    return out


@pytest.mark.slow
def test_rigify_def_bones_and_fk_in_ik(blender):
    out = blender(scenario_rigify)
    (line,) = out["def"]
    assert line.startswith("Warning:"), line
    for name in ("DEF-upper_arm.L", "DEF-forearm.L"):
        assert f"'{name}' does not show the simulation" in line, line
    assert "Copy Transforms constraint 'Copy Transforms'" in line, line
    assert "simulate the FK control 'upper_arm_fk.L' instead" in line, line
    assert "simulate the FK control 'forearm_fk.L' instead" in line, line
    (line,) = out["org"]
    assert "'ORG-thigh.R' does not show the simulation" in line, line
    assert "Copy Transforms constraint 'Copy Transforms', Copy Transforms constraint " \
           "'Copy Transforms.001' override the keys" in line, line
    assert "a Rigify ORG bone follows its controls: untick Simulate on it and simulate the FK " \
           "control 'thigh_fk.R' instead" in line, line
    assert "IK_FK" not in line, line
    (line,) = out["fk"]
    assert "'upper_arm_fk.L' is an FK control of a limb in IK mode: the bake keys IK_FK of " \
           "'upper_arm_parent.L' to 1 (FK) in the simulation action" in line, line
    assert "does not show" not in line, line
    assert out["hand_moved"] > 0.01          # the arm falls and the skin's bones show it


def scenario_osim_ragdoll(tmp, gait, walk):
    import bpy

    from scenes import addon_module, printed_reports

    handlers = addon_module("addon.handlers")
    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.ops.spline_joints.import_osim(filepath=gait) == {"FINISHED"}
    arm = bpy.context.object
    assert bpy.ops.spline_joints.import_osim_motion(filepath=walk) == {"FINISHED"}
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 16
    scene.spline_joints_sim.use_ground = False
    scene.spline_joints_sim.substeps = 32
    for pb in arm.pose.bones:
        _simulate(pb, "FREE" if pb.parent is None else "BALL")
    scene.frame_set(1)
    result, printed = printed_reports(lambda: bpy.ops.spline_joints.bake_rig())
    assert result == {"FINISHED"}
    line = next(ln for ln in printed.splitlines() if "Baked into" in ln)
    worst = 0.0
    pelvis = arm.pose.bones["pelvis"]
    for f in (1, 6, 16):
        scene.frame_set(f)
        bpy.context.view_layer.update()   # what the coordinate drive writes is evaluated
        for pb in arm.pose.bones:
            worst = max(worst, float(np.abs(np.array(pb.matrix_basis) - _basis_keys(arm, pb, f)).max()))
        height = (np.array(arm.matrix_world) @ np.array(pelvis.matrix))[2, 3]
        start = height if f == 1 else start
    fell = float(start - height)
    # outside the baked range the coordinates pose the bones again (the walk)
    scene.frame_set(40)
    bpy.context.view_layer.update()
    off_range = float(np.abs(np.array(pelvis.matrix_basis) - _basis_keys(arm, pelvis, 40)).max())
    assert handlers.update_scene(scene) == 0
    return {"line": line, "worst": worst, "fell": fell, "off_range": off_range}


@pytest.mark.slow
def test_osim_ragdoll_shows_its_bake(blender):
    out = blender(scenario_osim_ragdoll, gait=GAIT, walk=WALK)
    line = out["line"]
    assert "Baked into 3DGaitModel2392 Simulation" in line and "does not show" not in line, line
    assert "the OpenSim coordinates leave the 12 simulated bone(s) to their keys from frame 1 " \
        "to 16 while '3DGaitModel2392 Simulation' is the armature's action" in line, line
    assert out["worst"] < 1e-6, out        # the viewport plays the keys (float32 channels)
    assert out["fell"] > 0.05, out          # a ragdoll under gravity, not the walk
    assert out["off_range"] > 1e-3, out     # past the bake, the walk again
