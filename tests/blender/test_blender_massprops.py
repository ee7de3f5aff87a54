"""Mass properties read from the scene: a box parented to a bone, a UV sphere object (scaled,
also mirrored), a cylinder skinned to two bones, a bone without a mesh (capsule), and an open
mesh whose message names the mesh and the fix."""

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)
#: Blender stores vertices and matrices in single precision: positions carry ~eps32 relative
#: error, and the integrals (sums over a few hundred triangles, O(1)-conditioned) keep it
#: within a few dozen eps32
SINGLE_TOL = 64 * EPS32


def box_mesh(name, extents):
    """Mesh data-block of a box centred at its origin (6 quads)."""
    from scenes import addon_module

    v = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return addon_module("addon.bridge").write_mesh_data(name, v * 0.5 * np.asarray(extents),
                                                        quads)


def box_inertia(mass, extents):
    x, y, z = extents
    return mass / 12 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])


def scenario_parented_box(tmp):
    import bpy
    from mathutils import Euler, Matrix

    from scenes import addon_module, leg_armature, pose_leg

    bridge = addon_module("addon.bridge")
    massprops = addon_module("addon.massprops")
    arm = leg_armature()
    extents, density = np.array([0.12, 0.4, 0.09]), 1070.0
    cube = bpy.data.objects.new("Thighbox", box_mesh("Thighbox", extents))
    bpy.context.scene.collection.objects.link(cube)
    T_bone_box = Matrix.Translation((0.01, 0.22, -0.02)) @ Euler((0.3, -0.2, 0.5)).to_matrix().to_4x4()
    bridge.parent_to_bone(cube, arm, "thigh", np.array(T_bone_box))
    bpy.context.view_layer.update()
    # the bone-parented box's rest placement as Blender computes it, before posing
    rest = massprops._rest_T_armature_object(cube, arm)
    world = np.array(arm.matrix_world.inverted() @ cube.matrix_world)
    np.testing.assert_allclose(rest, world, atol=SINGLE_TOL)
    pose_leg(arm)                                   # the rest pose is used, not this pose
    out = {}
    for scale in (1.0, 1.5):
        arm.scale = (scale,) * 3
        bpy.context.view_layer.update()
        mp, source = massprops.bone_mass_properties(arm, "thigh", density, 0.0)
        assert source == "1 mesh: Thighbox (parented)", source
        size = scale * extents
        mass = density * size.prod()
        R = np.array(T_bone_box.to_3x3())
        assert abs(mp.mass / mass - 1) < SINGLE_TOL
        np.testing.assert_allclose(mp.com, scale * np.array(T_bone_box.translation),
                                   atol=SINGLE_TOL * scale)
        np.testing.assert_allclose(mp.inertia, R @ box_inertia(mass, size) @ R.T,
                                   atol=SINGLE_TOL * np.abs(mp.inertia).max())
        out[scale] = mp.mass
    arm.scale = (1.0, 2.0, 1.0)
    bpy.context.view_layer.update()
    for mode, message in (("POSE", "uniform positive scale"), ("EDIT", "is in Edit Mode")):
        bpy.ops.object.mode_set(mode=mode)
        try:
            massprops.bone_mass_properties(arm, "thigh", density, 0.0)
        except ValueError as exc:
            assert message in str(exc) and "'Leg'" in str(exc), exc
        else:
            raise AssertionError(f"expected a refusal: {message}")
    return out


def test_parented_box(blender):
    out = blender(scenario_parented_box)
    assert abs(out["1.5"] / out["1.0"] - 1.5 ** 3) < 1e-5


def scenario_uv_sphere_object(tmp):
    import bmesh
    import bpy
    from scipy.spatial import ConvexHull

    from scenes import addon_module

    massprops = addon_module("addon.massprops")
    bpy.ops.wm.read_homefile(use_empty=True)
    mesh = bpy.data.meshes.new("Ball")
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=32, v_segments=16, radius=0.3)
    bm.to_mesh(mesh)
    bm.free()
    obj = bpy.data.objects.new("Ball", mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = (1.0, -2.0, 0.5)
    obj.rotation_euler = (0.4, 0.1, -0.7)
    out = {}
    for scale in ((1.0, 2.0, 0.5), (-1.0, 2.0, 0.5)):
        obj.scale = scale
        bpy.context.view_layer.update()
        mp = massprops.object_mass_properties(obj, 1000.0)
        # the polyhedron the vertices span (convex), in world coordinates
        v = np.empty(3 * len(mesh.vertices), np.float32)
        mesh.vertices.foreach_get("co", v)
        W = np.array(obj.matrix_world)
        world = v.reshape(-1, 3) @ W[:3, :3].T + W[:3, 3]
        hull = ConvexHull(world)
        assert abs(mp.volume / hull.volume - 1) < SINGLE_TOL, (mp.volume, hull.volume)
        # a symmetric solid: its centre of mass is the object's origin
        np.testing.assert_allclose(mp.com, 0.0, atol=SINGLE_TOL)
        # frame = object's unscaled frame: principal axes along it, moments of an ellipsoid
        # with semi-axes 0.3 |scale| within the UV sphere's resolution (32 x 16: ~2%)
        a, b, c = 0.3 * np.abs(scale)
        expected = mp.mass / 5 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
        np.testing.assert_allclose(np.diag(mp.inertia), expected, rtol=0.03)
        off = mp.inertia - np.diag(np.diag(mp.inertia))
        assert np.abs(off).max() < SINGLE_TOL * mp.inertia.max()
        out[str(scale[0])] = mp.mass
    try:
        massprops.object_mass_properties(obj, -1.0)
    except ValueError as exc:
        assert "density" in str(exc)
    else:
        raise AssertionError("a negative density was accepted")
    return out


def test_uv_sphere_object(blender):
    out = blender(scenario_uv_sphere_object)
    assert abs(out["-1.0"] / out["1.0"] - 1) < 1e-6


def chain_armature():
    """Armature 'Chain' along +z: 'thigh' 0 -> 0.4, 'shin' 0.4 -> 0.8 (connected, rolled),
    'foot' 0.8 -> 0.95 (no mesh), moved and rotated; left in Object Mode."""
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    data = bpy.data.armatures.new("Chain")
    arm = bpy.data.objects.new("Chain", data)
    bpy.context.scene.collection.objects.link(arm)
    arm.location = (0.3, 0.1, -0.2)
    arm.rotation_euler = (0.2, -0.1, 0.4)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    parent = None
    for name, z0, z1, roll in (("thigh", 0.0, 0.4, 0.3), ("shin", 0.4, 0.8, -0.5),
                               ("foot", 0.8, 0.95, 0.0)):
        b = data.edit_bones.new(name)
        b.head, b.tail, b.roll = (0.0, 0.0, z0), (0.0, 0.0, z1), roll
        b.parent, b.use_connect = parent, parent is not None
        parent = b
    bpy.ops.object.mode_set(mode="OBJECT")
    return arm


def scenario_skinned_cylinder(tmp):
    import bpy

    from scenes import addon_module

    bridge = addon_module("addon.bridge")
    massprops = addon_module("addon.massprops")
    core = addon_module("core.massprops")
    arm = chain_armature()
    n, r, h, density = 24, 0.06, 0.8, 1060.0
    t = 2 * np.pi * np.arange(n) / n
    rings = [np.stack([r * np.cos(t), r * np.sin(t), np.full(n, z)], 1) for z in (0, h / 2, h)]
    j, k = np.arange(n), (np.arange(n) + 1) % n
    quads = [(lo + a, lo + b, lo + n + b, lo + n + a) for lo in (0, n) for a, b in zip(j, k)]
    polygons = [tuple(j[::-1]), tuple(2 * n + j)] + quads      # n-gon caps, outward
    mesh = bridge.write_mesh_data("Leg", np.concatenate(rings), polygons)
    leg = bpy.data.objects.new("Leg", mesh)
    bpy.context.scene.collection.objects.link(leg)
    leg.parent = arm                        # in armature space, where the bones run along z
    mod = leg.modifiers.new("Armature", "ARMATURE")
    mod.object = arm
    z = np.concatenate(rings)[:, 2]
    for name, weight in (("thigh", np.clip((h / 2 - z) / (h / 2) + 0.5, 0, 1)),
                         ("shin", np.clip((z - h / 2) / (h / 2) + 0.5, 0, 1))):
        group = leg.vertex_groups.new(name=name)
        for i, w in enumerate(weight):
            group.add([i], float(w), "REPLACE")
    leg.vertex_groups.new(name="not_a_bone").add(list(range(len(z))), 1.0, "REPLACE")
    # a group that dominates no triangle: the foot keeps its capsule
    leg.vertex_groups.new(name="foot").add(list(range(2 * n, 3 * n)), 0.05, "REPLACE")
    arm.pose.bones["shin"].rotation_mode = "XYZ"
    arm.pose.bones["shin"].rotation_euler = (1.0, 0.0, 0.3)      # bent: rest pose is used
    bpy.context.view_layer.update()

    result = massprops.armature_mass_properties(arm, density, 0.0)
    # half a prism on a regular n-gon: A = n r^2 sin(2 pi/n) / 2, J = n r^4 sin (2 + cos) / 12;
    # in each bone's frame Y is the cylinder's axis and the in-plane moments are isotropic
    s, c = np.sin(2 * np.pi / n), np.cos(2 * np.pi / n)
    A, J, half = n * r * r * s / 2, n * r ** 4 * s * (2 + c) / 12, h / 2
    mass = density * A * half
    transverse = density * (half * J / 2 + A * half ** 3 / 12)
    expected = np.diag([transverse, density * half * J, transverse])
    for bone in ("thigh", "shin"):
        mp, source = result[bone]
        assert source == "1 mesh: Leg (skinned)", source
        assert abs(mp.mass / mass - 1) < SINGLE_TOL, (bone, mp.mass, mass)
        np.testing.assert_allclose(mp.com, [0.0, half / 2, 0.0], atol=SINGLE_TOL * h)
        np.testing.assert_allclose(mp.inertia, expected, atol=SINGLE_TOL * transverse)
    # the halves, moved to armature space, add up to the whole mesh
    frames = {b: np.array(arm.data.bones[b].matrix_local) for b in ("thigh", "shin")}
    halves = [result[b][0].transformed(bridge.rigid(frames[b])) for b in frames]
    whole = massprops.object_mass_properties(leg, density)
    W = np.array(arm.matrix_world.inverted() @ leg.matrix_world)
    whole = whole.transformed(bridge.rigid(W))
    both = core.combine(halves)
    assert abs(both.mass / whole.mass - 1) < SINGLE_TOL
    np.testing.assert_allclose(both.com, whole.com, atol=SINGLE_TOL)
    np.testing.assert_allclose(both.inertia, whole.inertia,
                               atol=SINGLE_TOL * np.abs(whole.inertia).max())

    foot, source = result["foot"]
    length = 0.15
    assert source == f"capsule r={1000 * 0.1 * length:.3g} mm" == "capsule r=15 mm", source
    capsule = core.capsule_mass_properties(0.1 * length, length, density)
    np.testing.assert_allclose(foot.inertia, capsule.inertia, rtol=SINGLE_TOL)
    given, source = massprops.bone_mass_properties(arm, "foot", density, 0.012)
    assert source == "capsule r=12 mm", source
    assert abs(given.com[1] - length / 2) < SINGLE_TOL
    try:
        massprops.bone_mass_properties(arm, "toe", density, 0.0)
    except ValueError as exc:
        assert "no bone named 'toe'" in str(exc), exc
    else:
        raise AssertionError("a missing bone was accepted")
    return {"thigh": result["thigh"][0].mass}


def test_skinned_cylinder(blender):
    out = blender(scenario_skinned_cylinder)
    assert out["thigh"] > 0


def scenario_open_mesh(tmp):
    import bmesh
    import bpy

    from scenes import addon_module, leg_armature

    bridge = addon_module("addon.bridge")
    massprops = addon_module("addon.massprops")
    arm = leg_armature()
    mesh = box_mesh("Shinpad", [0.1, 0.3, 0.1])
    bm = bmesh.new()
    bm.from_mesh(mesh)
    bm.faces.ensure_lookup_table()
    bm.faces.remove(bm.faces[0])
    bm.to_mesh(mesh)
    bm.free()
    pad = bpy.data.objects.new("Shinpad", mesh)
    bpy.context.scene.collection.objects.link(pad)
    bridge.parent_to_bone(pad, arm, "shin", np.eye(4))
    messages = []
    for mirrored in (False, True):
        if mirrored:
            pad.modifiers.new("Mirror", "MIRROR")
        try:
            massprops.bone_mass_properties(arm, "shin", 1000.0, 0.0)
        except ValueError as exc:
            messages.append(str(exc))
        else:
            raise AssertionError("an open mesh was accepted")
    return messages


def test_open_mesh_names_the_mesh_and_the_fix(blender):
    plain, mirrored = blender(scenario_open_mesh)
    assert plain.startswith("mesh 'Shinpad' is not closed: 4 edges border only one face"), plain
    assert "Fill Holes" in plain and "capsule" in plain
    assert mirrored.startswith(plain) and "without its modifiers (Mirror)" in mirrored, mirrored
