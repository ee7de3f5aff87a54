"""The rig settings as a user meets them: new joints take Frequency and Ratio and the scene
Implicit Euler; files saved before keep their Stiffness, Damping and Runge-Kutta 4; a start
pose outside a limit is reported before the simulation runs."""

import math
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def scenario_old_file_keeps_its_motion(tmp):
    """The committed character demo was saved before spring units existed: on loading, its
    tail keeps its typed Stiffness and Damping and its scene Runge-Kutta 4, so its bake is
    what it was; a joint switched on now takes Frequency and Ratio, a new scene Implicit
    Euler."""
    import bpy

    bpy.ops.wm.open_mainfile(filepath=str(ROOT / "demo_blends" / "character_rig.blend"))
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    tail = [pb.spline_joints_sim for pb in arm.pose.bones if pb.spline_joints_sim.enabled]
    units = sorted({s.spring_units for s in tail})
    stiffness = [s.stiffness for s in tail]
    integrator = bpy.context.scene.spline_joints_sim.integrator
    hips = arm.pose.bones["hips"].spline_joints_sim
    assert not hips.enabled
    hips.enabled = True
    new_units = hips.spring_units
    bpy.ops.wm.read_homefile(use_empty=True)
    return {"units": units, "stiffness": stiffness, "integrator": integrator,
            "new_units": new_units,
            "new_integrator": bpy.context.scene.spline_joints_sim.integrator}


def test_old_file_keeps_its_motion(blender):
    out = blender(scenario_old_file_keeps_its_motion)
    assert out["units"] == ["ABSOLUTE"], out
    assert max(out["stiffness"]) > 0.0                   # the tail's springs, kept
    assert out["integrator"] == "rk4"
    assert out["new_units"] == "RELATIVE" and out["new_integrator"] == "implicit"


def scenario_start_outside_cone_reported_first(tmp):
    """A tail bone posed 40 deg past its 20 deg cone at the start frame: the Bake operator
    reports it, with its excess, before it reports the bake."""
    import bpy

    from scenes import printed_reports, tail_armature

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 9
    obj = tail_armature("Tail", 3, 0.1, (0.0, 0.0, 1.0), ((1, 0.0), (9, 0.3)))
    for k in range(3):
        pb = obj.pose.bones[f"tail.{k:03d}"]
        s = pb.spline_joints_sim
        s.enabled, s.kind, s.use_cone, s.mass_source = True, "BALL", True, "CAPSULE"
        pb.spline_joints.cone_shape = "CIRCULAR"
        pb.spline_joints.cone_half_angle = math.radians(20.0)
    bent = obj.pose.bones["tail.001"]
    bent.rotation_mode = "XYZ"
    bent.rotation_euler = (math.radians(60.0), 0.0, 0.0)
    scene.spline_joints_sim.use_ground = False
    scene.frame_set(1)
    result, printed = printed_reports(lambda: bpy.ops.spline_joints.bake_rig())
    return {"result": sorted(result), "printed": printed}


def test_start_outside_cone_is_reported_before_the_bake(blender):
    out = blender(scenario_start_outside_cone_reported_first)
    assert out["result"] == ["FINISHED"]
    text = out["printed"]
    first = text.index("tail.001 starts 40 deg outside its reach cone")
    assert first < text.index("Baked into"), text


def scenario_spring_units_reach_the_core(tmp):
    """The panel's Frequency and Damping Ratio reach the core rig as the spring of the
    inertia the joint moves: a one-bone hinge at 3 Hz has k / M_ii = (2 pi 3)^2."""
    import bpy

    from scenes import addon_module, tail_armature

    rig_jobs = addon_module("addon.rig_jobs")
    core_dynamics = addon_module("core.dynamics")
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 5
    obj = tail_armature("Tail", 1, 0.2, (0.0, 0.0, 1.0), ((1, 0.0), (5, 0.0)))
    s = obj.pose.bones["tail.000"].spline_joints_sim
    s.enabled, s.kind, s.mass_source = True, "HINGE", "CAPSULE"
    s.frequency, s.damping_ratio = 3.0, 0.5
    scene.spline_joints_sim.use_ground = False
    scene.frame_set(1)
    job = rig_jobs.RigJob(scene, obj)
    model = job.rig.mechanism.model
    q = np.concatenate([j.neutral() for j in model.joints])
    M = core_dynamics.crba(model, model.create_data(), q)
    i = int(np.nonzero(model.spring_k)[0][0])
    return {"k_over_I": float(model.spring_k[i] / M[i, i]),
            "ratio": float(model.spring_c[i] / (2.0 * np.sqrt(model.spring_k[i] * M[i, i])))}


def test_spring_units_reach_the_core(blender):
    out = blender(scenario_spring_units_reach_the_core)
    np.testing.assert_allclose(out["k_over_I"], (2 * math.pi * 3.0) ** 2, rtol=1e-12)
    np.testing.assert_allclose(out["ratio"], 0.5, rtol=1e-12)
