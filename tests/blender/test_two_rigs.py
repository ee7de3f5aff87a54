"""Two armatures baked together collide: a chain swinging down from a high root lands on a
chain lying on the ground (each its own armature), both keyed, the capsules never overlapping
by more than the contact tolerance; a live preview of both plays the same motion; baked alone
the high chain passes through the low one. A cancelled bake of both and a refused one leave
both rigs as they were; undo removes both bakes."""

import numpy as np

N_LINKS, LINK = 3, 0.2
#: the capsules' radius (the automatic shape: a tenth of the bone) and the low chain's height
R = 0.1 * LINK
LOW = R + 1e-3
HIGH = 0.3
FRAMES = (1, 37)
#: the deepest two capsules may overlap (m): the contact solver's slop (0.5 mm) with room
#: for the keys' single precision
DEPTH = 1e-3


def _two_chains():
    """Armatures 'Low' (its chain along -Y lying on the ground) and 'High' (the same chain
    HIGH up, above it), each a still root 'hips' and N_LINKS ball-jointed bones with capsule
    shapes; the ground on at 0."""
    import bpy

    from scenes import tail_armature

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    scene.render.fps = 24
    rigs = []
    for name, z in (("Low", LOW), ("High", HIGH)):
        if bpy.context.object is not None:
            bpy.ops.object.mode_set(mode="OBJECT")
            bpy.context.object.select_set(False)
        obj = tail_armature(name, N_LINKS, LINK, (0.0, 0.0, z), ())
        for k in range(N_LINKS):
            s = obj.pose.bones[f"tail.{k:03d}"].spline_joints_sim
            s.enabled, s.kind, s.spring_units = True, "BALL", "ABSOLUTE"
            s.mass_source, s.mass = "MANUAL", 0.3
            s.com, s.inertia = (0.0, 0.1, 0.0), (1e-3, 6e-5, 1e-3)
        rigs.append(obj)
    st = scene.spline_joints_sim
    st.substeps, st.use_velocities = 8, False
    st.use_ground, st.ground_height, st.ground_friction = True, 0.0, 0.8
    scene.frame_set(1)
    return rigs


def _capsules(obj):
    """``[(Capsule, world pose (4, 4))]`` of an armature's chain at the current frame."""
    from scenes import addon_module

    Capsule = addon_module("core.contacts").Capsule
    W = np.array(obj.matrix_world)
    return [(Capsule(R, (0.0, 0.0, 0.0), (0.0, LINK, 0.0)),
             W @ np.array(obj.pose.bones[f"tail.{k:03d}"].matrix)) for k in range(N_LINKS)]


def _closest(low, high):
    """The least separation (m; negative: overlap) of the two chains' capsules now."""
    from scenes import addon_module

    narrow = addon_module("core.contacts.narrow")
    return min([c[2] for a, Ta in _capsules(low) for b, Tb in _capsules(high)
                for c in narrow.collide(narrow.Posed(a, Ta), narrow.Posed(b, Tb), 0.05)],
               default=0.05)


def _chain_state(rigs):
    return [(o.animation_data is None, [tuple(map(tuple, pb.matrix_basis))
                                        for pb in o.pose.bones]) for o in rigs]


def scenario_two_rigs_collide(tmp):
    import bpy

    from scenes import addon_module, cancelling_at

    addon_module("core.backend").use("numpy")  # no kernel compile in this fresh user folder
    rig_jobs = addon_module("addon.rig_jobs")
    low, high = _two_chains()
    scene = bpy.context.scene
    before = _chain_state([low, high])
    n_actions = len(bpy.data.actions)

    # Esc halfway through the joined run: nothing written on either rig.
    EscAtHalf = cancelling_at(rig_jobs.RigBatch)
    batch = EscAtHalf([rig_jobs.RigJob(scene, o, True) for o in (low, high)], "Bake Simulation",
                      rig_jobs.bake_rigs)
    batch.simulate()
    status, level, message = batch.finish(scene)
    assert status == {"CANCELLED"} and "nothing written" in message, message
    assert _chain_state([low, high]) == before and len(bpy.data.actions) == n_actions
    assert 0.5 <= EscAtHalf.seen[-1] < 1.0, EscAtHalf.seen

    # A refused bake (a bone of High without mass) leaves both as they were.
    s = high.pose.bones["tail.001"].spline_joints_sim
    s.mass = 0.0
    try:
        bpy.ops.spline_joints.bake_rig(which="ALL")
    except RuntimeError as err:
        refused = str(err)
    else:
        raise AssertionError("a bone without mass was accepted")
    assert "tail.001" in refused and "no mass" in refused, refused
    assert _chain_state([low, high]) == before
    s.mass = 0.3

    # Both baked together: keys on both, the high chain resting on the low one.
    bpy.ops.ed.undo_push(message="before bake")
    assert bpy.ops.spline_joints.bake_rig("EXEC_DEFAULT", True, which="ALL") == {"FINISHED"}
    assert low.animation_data.action is not None and high.animation_data.action is not None
    gaps, heights = [], []
    for f in range(FRAMES[0], FRAMES[1] + 1):
        scene.frame_set(f)
        gaps.append(float(_closest(low, high)))
        heights.append(float(min(T[2, 3] for _, T in _capsules(high)[1:])))
    baked = [np.array(high.matrix_world) @ np.array(high.pose.bones["tail.002"].matrix)]
    bpy.ops.ed.undo()
    low, high = bpy.data.objects["Low"], bpy.data.objects["High"]
    undone = all(o.animation_data is None or o.animation_data.action is None
                 for o in (low, high))

    # A live preview of both plays the same run.
    scene = bpy.context.scene
    scene.spline_joints_sim.live = True
    assert bpy.ops.spline_joints.simulate_preview(which="ALL") == {"FINISHED"}
    scene.frame_set(FRAMES[1])
    live = np.array(high.matrix_world) @ np.array(high.pose.bones["tail.002"].matrix)
    bpy.ops.spline_joints.clear_preview()
    scene.spline_joints_sim.live = False

    # High alone: nothing of Low's in its run, so it passes through Low.
    bpy.context.view_layer.objects.active = high
    assert bpy.ops.spline_joints.bake_rig(which="ACTIVE") == {"FINISHED"}
    alone = []
    for f in range(FRAMES[0], FRAMES[1] + 1):
        scene.frame_set(f)
        alone.append(float(_closest(low, high)))
    return {"gaps": gaps, "heights": heights, "undone": undone, "alone": alone,
            "live": float(np.abs(live - baked[0]).max())}


def test_two_armatures_baked_together_collide(blender):
    out = blender(scenario_two_rigs_collide)
    gaps = np.array(out["gaps"])
    assert gaps.min() >= -DEPTH, gaps.min()
    assert gaps[-1] <= 2 * DEPTH                         # the high chain rests on the low one
    assert out["heights"][-1] >= LOW + R                  # above it, not on the ground
    assert out["undone"], "undo must remove both bakes"
    assert out["live"] <= 1e-4, out["live"]
    assert min(out["alone"]) < -R, min(out["alone"])     # alone, it passes through
