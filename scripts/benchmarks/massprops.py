"""Mass-properties benchmark: the core on UV spheres of growing resolution (whole mesh, and
split into ten labelled bands), and the add-on reading a skinned tube on a ten-bone chain in
real Blender (the PyPI ``bpy`` module; the table is left out where it is not installed).

    python scripts/bench.py --only massprops [--quick]

Figures are median wall times (:func:`scripts.benchmarks.common.median_us`) in milliseconds per call.
"""

import importlib.util
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from core.massprops import mesh_mass_properties, split_mass_properties

from .common import median_us, table

#: bones of the benchmark chain, vertices around the tube and tube rings per bone
BONES, AROUND, RINGS_PER_BONE = 10, (32, 64, 128), 8


def uv_sphere(n):
    """A closed UV sphere with ``n`` segments and ``n / 2`` rings: about ``n^2`` triangles."""
    phi = np.linspace(-np.pi / 2, np.pi / 2, n // 2 + 1)[1:-1]
    t = 2 * np.pi * np.arange(n) / n
    rings = np.stack([np.cos(phi)[:, None] * np.cos(t), np.cos(phi)[:, None] * np.sin(t),
                      np.repeat(np.sin(phi)[:, None], n, axis=1)], axis=-1).reshape(-1, 3)
    v = np.concatenate([[[0, 0, -1.0]], rings, [[0, 0, 1.0]]])
    j, k = np.arange(n), (np.arange(n) + 1) % n
    starts = 1 + n * np.arange(len(phi))
    faces = [np.stack([np.zeros(n, int), 1 + k, 1 + j], 1)]
    for lo in starts[:-1]:
        faces += [np.stack([lo + j, lo + k, lo + n + k], 1),
                  np.stack([lo + j, lo + n + k, lo + n + j], 1)]
    top, last = len(v) - 1, starts[-1]
    faces.append(np.stack([np.full(n, top), last + j, last + k], 1))
    return v, np.concatenate(faces)


def core_table(quick):
    rows = []
    for n in (32, 96) if quick else (32, 96, 320):
        v, f = uv_sphere(n)
        bands = np.minimum((v[f].mean(axis=1)[:, 2] + 1) * 5, 9).astype(int)
        rows.append([len(f),
                     1e-3 * median_us(lambda: mesh_mass_properties(v, f, 1000.0), quick),
                     1e-3 * median_us(lambda: split_mass_properties(v, f, bands, 1000.0),
                                      quick)])
    return table("core: closed UV sphere (ms per call)",
                 ["triangles", "mesh_mass_properties", "split into 10 bands"], rows,
                 "Includes the closedness and orientation checks (sorting the edges).")


def _extension():
    """The working tree imported as the package ``spline_joints`` (as Blender would)."""
    spec = importlib.util.spec_from_file_location(
        "spline_joints", os.path.join(ROOT, "__init__.py"), submodule_search_locations=[ROOT])
    package = importlib.util.module_from_spec(spec)
    sys.modules["spline_joints"] = package
    spec.loader.exec_module(package)
    return importlib.import_module("spline_joints.addon.massprops")


def _skinned_tube(bpy, around):
    """A ten-bone chain along z (0.1 m bones) and a closed tube (radius 0.03 m) skinned to it
    with linear weights between neighbouring bones; returns the armature object."""
    bpy.ops.wm.read_homefile(use_empty=True)
    data = bpy.data.armatures.new("Chain")
    arm = bpy.data.objects.new("Chain", data)
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    for i in range(BONES):
        b = data.edit_bones.new(f"b{i}")
        b.head, b.tail = (0.0, 0.0, 0.1 * i), (0.0, 0.0, 0.1 * (i + 1))
    bpy.ops.object.mode_set(mode="OBJECT")
    rings = BONES * RINGS_PER_BONE + 1
    z = np.linspace(0.0, 0.1 * BONES, rings)
    t = 2 * np.pi * np.arange(around) / around
    v = np.concatenate([np.stack([0.03 * np.cos(t), 0.03 * np.sin(t), np.full(around, zi)], 1)
                        for zi in z])
    j, k = np.arange(around), (np.arange(around) + 1) % around
    polygons = [list(j[::-1]), list((rings - 1) * around + j)]
    polygons += [[lo + a, lo + b, lo + around + b, lo + around + a]
                 for lo in range(0, (rings - 1) * around, around) for a, b in zip(j, k)]
    mesh = bpy.data.meshes.new("Tube")
    mesh.from_pydata(v.tolist(), [], polygons)
    tube = bpy.data.objects.new("Tube", mesh)
    bpy.context.scene.collection.objects.link(tube)
    tube.parent = arm
    tube.modifiers.new("Armature", "ARMATURE").object = arm
    centre = (z / 0.1 - 0.5)
    for i in range(BONES):
        w = np.clip(1 - np.abs(centre - i), 0, 1)
        group = tube.vertex_groups.new(name=f"b{i}")
        for r in np.flatnonzero(w > 0):
            group.add(list(range(r * around, (r + 1) * around)), float(w[r]), "REPLACE")
    bpy.context.view_layer.update()
    return arm


def addon_table(quick):
    import bpy

    massprops = _extension()
    rows = []
    for around in AROUND[:2] if quick else AROUND:
        arm = _skinned_tube(bpy, around)
        mesh = bpy.data.objects["Tube"].data
        rows.append([len(mesh.vertices), len(mesh.loop_triangles),
                     1e-3 * median_us(lambda: massprops.armature_mass_properties(arm, 1000.0),
                                      quick),
                     1e-3 * median_us(lambda: massprops.bone_mass_properties(arm, "b4", 1000.0),
                                      quick)])
    return table("add-on: tube skinned to a 10-bone chain, in Blender (ms per call)",
                 ["vertices", "triangles", "armature_mass_properties (10 bones)",
                  "bone_mass_properties (1 bone)"], rows,
                 "Both read the mesh and every vertex's group weights (a Python loop over "
                 "the vertices, the only per-vertex Python in the path) once per call.")


def bench_massprops(quick=False):
    tables = [core_table(quick)]
    if importlib.util.find_spec("bpy") is not None:
        tables.append(addon_table(quick))
    return tables
