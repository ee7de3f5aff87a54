"""Blender objects as colliders: a free crate falls onto a box collider object and rests on
its top (the bake equals the core run with a core StaticCollider, undo removes the bake); a
keyed collider pushes a crate along the ground; a concave mesh as a convex hull is noted in
the report; placements and shapes a collider cannot take are refused naming the object with
the scene unchanged; the Show Shapes overlay's line segments and its handler."""

import numpy as np

FRAMES = (1, 37)
#: the deepest a crate may go into a collider at any frame (m): the contact solver keeps a
#: resting contact within its slop (0.5 mm), the keys add their float32 rounding (1e-5 m)
DEPTH = 1e-3
#: the crate's half side and the step's top (m; binary fractions, exact in float32)
CRATE, STEP_TOP = 0.125, 0.5


def _cube(name, size, location, scale=(1.0, 1.0, 1.0)):
    """A cube mesh object of side ``size`` (its corners exact, unlike the primitive's), made
    active."""
    import bpy

    h = 0.5 * size
    verts = [(x, y, z) for x in (-h, h) for y in (-h, h) for z in (-h, h)]
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.location, obj.scale = location, scale
    bpy.context.view_layer.objects.active = obj
    return obj


def _crate(location):
    """A free simulated cube 'Crate' of side 2 CRATE (1 kg, typed in) with the automatic
    collision shape (the box of its bounds)."""
    crate = _cube("Crate", 2 * CRATE, location)
    s = crate.spline_joints_sim
    s.enabled, s.kind, s.mass_source, s.spring_units = True, "FREE", "MANUAL", "ABSOLUTE"
    s.mass, s.com, s.inertia = 1.0, (0.0, 0.0, 0.0), (0.0104, 0.0104, 0.0104)
    return crate


def _scene():
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    scene.render.fps = 24
    st = scene.spline_joints_sim
    st.substeps, st.use_velocities = 8, False
    return scene


def _step():
    """Collider 'Step': a unit cube scaled to half height, its top at STEP_TOP (a box of a
    non-uniform scale: the core takes the hull of its moved corners)."""
    step = _cube("Step", 1.0, (0.0, 0.0, 0.25), (1.0, 1.0, 0.5))
    step.spline_joints_collider.enabled = True
    return step


def _corners_z(world):
    """``(F,)`` the lowest corner height of the crate at the world poses ``(F, 4, 4)``."""
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * CRATE
    return (world[:, None, :3, :3] @ corners[None, :, :, None])[..., 2, 0].min(axis=1) + \
        world[:, 2, 3]


def scenario_crate_rests_on_a_step(tmp):
    import bpy

    from scenes import addon_module

    rig_jobs = addon_module("addon.rig_jobs")
    rig_scene = addon_module("addon.rig_scene")
    core_rig = addon_module("core.rig")
    contacts = addon_module("core.contacts")
    scene = _scene()
    step = _step()
    crate = _crate((0.1, -0.05, 1.0))
    crate.rotation_euler = (0.2, 0.1, 0.0)
    bpy.context.view_layer.update()
    st = scene.spline_joints_sim

    # The core run of the same model from the known geometry: a Box of the cube's half side
    # at the step's world matrix, the crate's box of half side CRATE times its world scale
    # (1 to float32 rounding: a bounce on a corner carries such a change into the motion).
    s = crate.spline_joints_sim
    pose, scale = rig_scene.normalized(crate.matrix_world)
    pose = addon_module("addon.bridge").rigid(pose)
    assert np.abs(scale - 1.0).max() < 1e-7
    body = core_rig.RigBody("Crate", -1, pose, core_rig.RigJoint("free"), mass=s.mass,
                            com=np.array(s.com), inertia=np.diag(np.array(s.inertia)), pose=pose,
                            shapes=(contacts.Box(CRATE * scale),))
    collider = contacts.StaticCollider(contacts.Box((0.5, 0.5, 0.5)), np.array(step.matrix_world))
    rig = core_rig.build_rig([body], gravity=np.array(scene.gravity), fps=24.0, substeps=8,
                             duration=(FRAMES[1] - FRAMES[0]) / 24.0, colliders=(collider,),
                             friction=st.friction, restitution=st.restitution)
    direct = core_rig.simulate_rig(rig)

    job = rig_jobs.RigJob(scene, None)
    job.simulate()
    via_reader = job.checked_result()
    assert via_reader is not None
    np.testing.assert_allclose(via_reader.world, direct.world, rtol=0, atol=1e-9)
    low = _corners_z(direct.world[:, 0])
    assert low.min() >= STEP_TOP - DEPTH, low.min()
    assert abs(low[-1] - STEP_TOP) <= DEPTH                 # it rests on the top
    assert direct.worst_penetration <= DEPTH and direct.contacts[-1] >= 1
    text = job.report(via_reader)
    assert "1 collider(s) (Step: box)" in text, text

    bpy.ops.ed.undo_push(message="before bake")
    assert bpy.ops.spline_joints.bake_rig("EXEC_DEFAULT", True) == {"FINISHED"}
    for f in (1, 12, 37):
        scene.frame_set(f)
        np.testing.assert_allclose(np.array(crate.matrix_world)[:3, 3],
                                   direct.world[f - 1, 0, :3, 3], atol=1e-5)
        assert _corners_z(np.array(crate.matrix_world)[None])[0] >= STEP_TOP - DEPTH - 1e-5
    bpy.ops.ed.undo()
    crate = bpy.data.objects["Crate"]
    undone = crate.animation_data is None or crate.animation_data.action is None
    return {"undone": undone, "worst_mm": 1000 * direct.worst_penetration}


def scenario_moving_collider_pushes(tmp):
    """A keyed paddle (a box collider) sweeps along x at 1 m/s over the ground and pushes a
    crate resting on it; the crate never enters the paddle and ends ahead of it."""
    import bpy

    from scenes import addon_module

    rig_jobs = addon_module("addon.rig_jobs")
    scene = _scene()
    st = scene.spline_joints_sim
    st.use_ground = True
    crate = _crate((0.0, 0.0, CRATE))
    paddle = _cube("Paddle", 2 * CRATE, (-0.5, 0.0, CRATE + 0.01))
    paddle.spline_joints_collider.enabled = True
    paddle.spline_joints_collider.shape = "BOX"
    for frame, x in ((1, -0.5), (25, 0.5)):
        paddle.location.x = x
        paddle.keyframe_insert("location", index=0, frame=frame)
    for key in addon_module("addon.bridge").find_fcurve(paddle, "location", 0).keyframe_points:
        key.interpolation = "LINEAR"
    scene.frame_set(1)
    job = rig_jobs.RigJob(scene, None)
    job.simulate()
    res = job.checked_result()
    text = job.report(res)
    assert "Paddle: box, moving" in text, text
    x = res.world[:, 0, 0, 3]
    # the collider follows the keys: at the frames it is where they put it (float32 keys)
    mover = job.rig.mechanism.colliders[-1]
    paddle_x = np.array([mover.pose(t)[0, 3] for t in res.times])
    np.testing.assert_allclose(paddle_x, np.clip(-0.5 + np.arange(len(x)) / 24.0, -0.5, 0.5),
                               rtol=0, atol=1e-6)
    # apart: the crate's left face stays right of the paddle's right face
    gap = (x - CRATE) - (paddle_x + CRATE)
    assert gap.min() >= -DEPTH, gap.min()
    assert abs(x[0]) < 1e-9 and x[-1] > 0.5 + 2 * CRATE - DEPTH, x[-1]
    return {"pushed": float(x[-1])}


def _concave(name):
    """A cube of side 2 whose top has a dimple: its centre vertex lies 0.5 below the top,
    inside the cube (the mesh's hull)."""
    import bpy

    verts = [(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)] + [(0, 0, 0.5)]
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4),
             (1, 5, 8), (5, 7, 8), (7, 3, 8), (3, 1, 8)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def scenario_concave_hull_is_noted(tmp):
    import bpy

    from scenes import addon_module

    rig_jobs = addon_module("addon.rig_jobs")
    scene = _scene()
    scene.frame_end = 3
    scene.spline_joints_sim.integrator = "semi_implicit"      # no warning: the note is none
    bowl = _concave("Bowl")
    bowl.location.z = -2.0
    bowl.spline_joints_collider.enabled = True
    bowl.spline_joints_collider.shape = "CONVEX_HULL"
    _crate((0.0, 0.0, 1.0))
    bpy.context.view_layer.update()
    job = rig_jobs.RigJob(scene, None)
    job.simulate()
    text = job.report(job.checked_result())
    assert "Bowl: convex hull" in text, text
    assert "note: 'Bowl': the point set is not convex: 1 of its 9 points lie inside" in text, text
    assert "warning" not in text, text
    # the scene's Self-Collision reaches the contact solver
    assert not job.rig.mechanism.contact_solver(None).self_collision
    scene.spline_joints_sim.use_self_collision = True
    job = rig_jobs.RigJob(scene, None)
    assert job.rig.mechanism.contact_solver(None).self_collision
    return {}


def scenario_automatic_fit(tmp):
    """Automatic picks the primitive of the bounds closest in volume to the mesh's hull: a
    sphere for a UV sphere, a capsule for a long cylinder, a box for a cube."""
    import bpy

    from scenes import addon_module

    colliders = addon_module("addon.colliders")
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5)
    bpy.ops.mesh.primitive_cylinder_add(radius=0.1, depth=1.0)
    bpy.ops.mesh.primitive_cube_add(size=1.0)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    return {obj.name: colliders.fit_primitive(colliders.mesh_points(obj, depsgraph))
            for obj in bpy.context.scene.objects}


def scenario_bad_colliders_are_refused(tmp):
    """Each collider the core cannot take is refused naming it; nothing is written."""
    import bpy

    cases = {}
    mirror = _cube("Mirror", 1.0, (0.0, 0.0, -2.0), (-1.0, 1.0, 1.0))
    cases["Mirror"] = (mirror, "BOX", "negative (mirroring)")
    ball = _cube("Ball", 1.0, (3.0, 0.0, -2.0), (1.0, 2.0, 1.0))
    cases["Ball"] = (ball, "SPHERE", "non-uniform scale")
    bpy.ops.mesh.primitive_plane_add(location=(6.0, 0.0, -2.0))
    sheet = bpy.context.active_object
    sheet.name = "Sheet"
    cases["Sheet"] = (sheet, "CONVEX_HULL", "one plane")
    mesh = bpy.data.meshes.new("Rod")
    mesh.from_pydata([(0.0, 0.0, 0.0), (0.3, 0.0, 0.0)], [(0, 1)], [])
    rod = bpy.data.objects.new("Rod", mesh)
    bpy.context.scene.collection.objects.link(rod)
    cases["Rod"] = (rod, "CAPSULE", "radius > 0")
    crate = _crate((0.0, 0.0, 1.0))
    grown = _cube("Grown", 1.0, (9.0, 0.0, -2.0))
    grown.keyframe_insert("scale", frame=1)
    grown.scale = (2.0, 2.0, 2.0)
    grown.keyframe_insert("scale", frame=20)
    cases["Grown"] = (grown, "BOX", "scale changes")
    for obj, _, _ in cases.values():
        obj.spline_joints_collider.enabled = False
    messages = {}
    for name, (obj, shape, words) in cases.items():
        obj.spline_joints_collider.enabled, obj.spline_joints_collider.shape = True, shape
        bpy.context.view_layer.objects.active = crate
        try:
            bpy.ops.spline_joints.bake_rig()
        except RuntimeError as err:
            messages[name] = str(err)
            assert f"'{name}'" in str(err) and words in str(err), str(err)
        else:
            raise AssertionError(f"collider {name} was accepted")
        obj.spline_joints_collider.enabled = False
        assert crate.animation_data is None
        assert obj.animation_data is None or not obj.animation_data.nla_tracks
    # simulated and a collider at once
    crate.spline_joints_collider.enabled = True
    try:
        bpy.ops.spline_joints.bake_rig()
    except RuntimeError as err:
        assert "'Crate' is simulated and a collider" in str(err), str(err)
    else:
        raise AssertionError("a simulated collider was accepted")
    assert crate.animation_data is None
    return messages


def scenario_shape_segments(tmp):
    """The overlay's segments lie on the shapes' surfaces; the scene's segments hold the
    step's box edges at its world matrix and the crate's; the draw handler is installed only
    while Show Shapes is on, follows the files loaded and goes with unregister."""
    import bpy

    from scenes import addon_module

    overlay = addon_module("addon.shape_overlay")
    contacts = addon_module("core.contacts")
    pose = np.eye(4)
    c, s = np.cos(0.7), np.sin(0.7)
    pose[:3, :3] = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
    pose[:3, 3] = (0.3, -0.2, 1.1)
    # sphere: every end point at the radius from the moved centre
    seg = overlay.shape_segments(contacts.Sphere(0.2, (0.1, 0.0, 0.0)), pose)
    centre = pose[:3, :3] @ (0.1, 0.0, 0.0) + pose[:3, 3]
    np.testing.assert_allclose(np.linalg.norm(seg - centre, axis=2), 0.2, rtol=0, atol=1e-12)
    assert seg.shape == (3 * overlay.CIRCLE, 2, 3)
    # capsule: every end point at the radius from the moved axis segment
    cap = contacts.Capsule(0.05, (0.0, 0.0, 0.0), (0.0, 0.4, 0.0))
    seg = overlay.shape_segments(cap, pose).reshape(-1, 3)
    a, b = pose[:3, 3], pose[:3, :3] @ (0.0, 0.4, 0.0) + pose[:3, 3]
    t = np.clip((seg - a) @ (b - a) / ((b - a) @ (b - a)), 0.0, 1.0)
    dist = np.linalg.norm(seg - (a + t[:, None] * (b - a)), axis=1)
    np.testing.assert_allclose(dist, 0.05, rtol=0, atol=1e-12)
    # box: its 12 edges between moved corners, each one side long
    seg = overlay.shape_segments(contacts.Box((0.1, 0.2, 0.3)), pose)
    lengths = np.sort(np.linalg.norm(seg[:, 1] - seg[:, 0], axis=1))
    np.testing.assert_allclose(lengths, np.repeat([0.2, 0.4, 0.6], 4), rtol=0, atol=1e-12)

    scene = _scene()
    step = _step()
    _crate((0.0, 0.0, 1.0))
    bpy.context.view_layer.update()
    seg = overlay.scene_segments(scene, bpy.context.evaluated_depsgraph_get())
    corners = np.array([[x, y, z, 1.0] for x in (-.5, .5) for y in (-.5, .5) for z in (-.5, .5)])
    step_corners = (corners @ np.array(step.matrix_world).T)[:, :3]
    crate_corners = corners[:, :3] * 2 * CRATE + (0.0, 0.0, 1.0)
    ends = seg.reshape(-1, 3)
    near = np.linalg.norm(ends[:, None] - np.concatenate([step_corners, crate_corners])[None],
                          axis=2).min(axis=1)
    assert near.max() < 1e-6 and len(seg) == 24, (near.max(), len(seg))

    assert not overlay.installed()
    scene.spline_joints_sim.show_shapes = True
    assert overlay.installed()
    scene.spline_joints_sim.show_shapes = False
    assert not overlay.installed()
    scene.spline_joints_sim.show_shapes = True
    path = f"{tmp}/shapes.blend"
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_homefile(use_empty=True)
    assert not overlay.installed()
    bpy.ops.wm.open_mainfile(filepath=path)
    assert overlay.installed() and len(overlay._state["segments"]["Scene"]) == 24
    overlay.unregister()
    assert not overlay.installed() and overlay._on_load not in bpy.app.handlers.load_post
    assert overlay._on_update not in bpy.app.handlers.depsgraph_update_post
    overlay.register()
    assert overlay.installed()
    return {}


def test_crate_rests_on_a_step_collider(blender):
    out = blender(scenario_crate_rests_on_a_step)
    assert out["undone"], "undo must remove the bake"
    assert out["worst_mm"] <= 1000 * DEPTH


def test_moving_collider_pushes_a_crate(blender):
    assert blender(scenario_moving_collider_pushes)["pushed"] > 0.5


def test_concave_mesh_hull_is_noted(blender):
    blender(scenario_concave_hull_is_noted)


def test_automatic_collider_shapes(blender):
    assert blender(scenario_automatic_fit) == {"Sphere": "SPHERE", "Cylinder": "CAPSULE",
                                               "Cube": "BOX"}


def test_bad_colliders_are_refused(blender):
    assert set(blender(scenario_bad_colliders_are_refused)) == {"Mirror", "Ball", "Sheet", "Rod",
                                                                "Grown"}


def test_shape_overlay_segments_and_handler(blender):
    blender(scenario_shape_segments)
