"""bridge.write_fcurve_keys keys any animatable data-block, not only objects (here: shape keys)."""

import numpy as np


def scenario_shape_key_keys(tmp):
    import bpy

    from scenes import addon_module

    bridge = addon_module("addon.bridge")
    bpy.ops.wm.read_homefile(use_empty=True)
    mesh = bpy.data.meshes.new("Face")
    mesh.from_pydata([(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)], [], [(0, 1, 2)])
    obj = bpy.data.objects.new("Face", mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.shape_key_add(name="Basis")
    smile = obj.shape_key_add(name="Smile", from_mix=False)
    smile.data[1].co = (1.0, 0.0, 0.5)  # vertex 1 rises by 0.5 at value 1
    key = mesh.shape_keys
    path = 'key_blocks["Smile"].value'

    bridge.write_fcurve_keys(key, path, 0, np.array([1.0, 5.0, 9.0]), np.array([0.0, 0.8, 0.3]))
    slot = key.animation_data.action_slot
    assert slot is not None and slot.target_id_type == "KEY", slot and slot.target_id_type
    assert obj.animation_data is None, "the object itself must not be animated"
    np.testing.assert_allclose(bridge.read_fcurve_keys(key, path, 0), [[1, 0.0], [5, 0.8], [9, 0.3]],
                               atol=1e-6)
    values = {}
    for f in (1, 3, 5, 9):
        bpy.context.scene.frame_set(f)
        values[f] = key.key_blocks["Smile"].value
    np.testing.assert_allclose([values[f] for f in (1, 3, 5, 9)], [0.0, 0.4, 0.8, 0.3], atol=1e-6)
    bpy.context.scene.frame_set(5)
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    assert abs(evaluated.vertices[1].co.z - 0.4) < 1e-6, evaluated.vertices[1].co.z

    # Rewriting frames 5..9 keeps the key at frame 1 and replaces the others.
    bridge.write_fcurve_keys(key, path, 0, np.array([5.0, 7.0, 9.0]), np.array([1.0, 0.5, 0.0]))
    np.testing.assert_allclose(bridge.read_fcurve_keys(key, path, 0),
                               [[1, 0.0], [5, 1.0], [7, 0.5], [9, 0.0]], atol=1e-6)
    return {"slot": slot.target_id_type}


def test_write_fcurve_keys_on_shape_keys(blender):
    assert blender(scenario_shape_key_keys) == {"slot": "KEY"}
