"""The contact demos baked in real Blender (the PyPI ``bpy`` module), both backends: simulated
seconds per wall second of ``ragdoll_steps`` and ``chain_in_bowl`` (demo_blends/).

    python scripts/bench.py --only contact_demos              # as a section of the benchmark

The extension is installed from its zip into a sandboxed user folder with no JIT cache yet
(as :mod:`scripts.benchmarks.blender_latency`; a zip that ships compiled kernels has them
copied in on first use). One fresh Blender process per backend (``SPLINE_JOINTS_BACKEND``)
opens each demo and simulates its armature's rig as ``spline_joints.bake_rig`` does
(``addon.rig_jobs.RigJob.simulate``: the scene's frames, substeps and integrator): once
untimed on the numba backend, where that first bake loads the zip's kernels or, from a zip
without them, compiles them (its wall time is reported), then ``repeat`` timed bakes (3; 1
with ``--quick`` and on the numpy backend, whose bakes take tens of seconds). Target:
every demo simulates at least 20 times faster than real time on numba.
"""

import json
import os
import shutil
import tempfile
import time

import numpy as np

from scripts.blender_kit import MODULE, ROOT

from .common import ENTRY
#: (file in demo_blends/, armature)
DEMOS = (("ragdoll_steps", "Ragdoll"), ("chain_in_bowl", "Chain"))


def worker(out, quick):
    """In a fresh process: bake each demo's rig (the first bake untimed on numba), time
    ``repeat`` bakes."""
    import importlib

    import bpy

    bpy.ops.preferences.addon_enable(module=MODULE)
    backend = importlib.import_module(MODULE + ".core.backend").active()
    rig_jobs = importlib.import_module(MODULE + ".addon.rig_jobs")
    repeat = 1 if quick or backend == "numpy" else 3
    rows = []
    for blend, armature in DEMOS:
        bpy.ops.wm.open_mainfile(filepath=os.path.join(str(ROOT), "demo_blends", blend + ".blend"),
                                 load_ui=False)
        scene = bpy.context.scene
        first, walls = None, []
        for k in range(repeat + (backend == "numba")):
            job = rig_jobs.RigJob(scene, bpy.data.objects[armature])
            t0 = time.perf_counter()
            job.simulate()
            wall = time.perf_counter() - t0
            if backend == "numba" and k == 0:
                first = wall
            else:
                walls.append(wall)
        result = job.checked_result()
        rows.append({"demo": blend, "bodies": len(job.bodies), "walls": walls, "first": first,
                     "seconds": (scene.frame_end - scene.frame_start) / scene.render.fps,
                     "fps": scene.render.fps,
                     "substeps": scene.spline_joints_sim.substeps,
                     "contacts": int(result.contacts.max()),
                     "penetration_mm": 1e3 * result.worst_penetration})
    atomic_write = importlib.import_module(MODULE + ".core.io").atomic_write
    atomic_write(out, json.dumps({"backend": backend, "rows": rows}))


def bench_contact_demos(quick=False):
    """The section of scripts/bench.py: one table."""
    from .common import table
    from .blender_latency import _run, sandbox
    tmp = tempfile.mkdtemp(prefix="spline_joints_contact_demos_")
    try:
        env = sandbox(tmp)
        runs = {}
        for name in ("numba", "numpy"):
            runs[name] = _run([ENTRY, "--section", "contact_demos"] + (["--quick"] if quick else []) + ["--worker"],
                              dict(env, SPLINE_JOINTS_BACKEND=name), tmp, name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = []
    for fast, slow in zip(runs["numba"]["rows"], runs["numpy"]["rows"]):
        sim = fast["seconds"]
        nb, np_ = float(np.median(fast["walls"])), float(np.median(slow["walls"]))
        rows.append([fast["demo"], fast["bodies"], fast["fps"], fast["substeps"], sim,
                     fast["contacts"], sim / np_, sim / nb, np_ / nb, fast["first"],
                     fast["penetration_mm"]])
    note = ("Each backend in its own fresh Blender process with the extension installed from "
            "its zip; a bake is RigJob.simulate, as Bake Rig runs it (the scene's frames, "
            "substeps and integrator); numba: median of "
            f"{1 if quick else 3} bakes after the first one of the fresh install, which loads "
            "the kernels the zip ships (its wall time in the last but one column), numpy: 1 "
            "bake. Target (numba): at least 20 simulated seconds per wall second.")
    return [table("Contact demos baked in Blender, both backends",
                  ["demo", "bodies", "fps", "substeps", "simulated (s)", "contacts (max)",
                   "numpy sim s / wall s", "numba sim s / wall s", "numba / numpy",
                   "first numba bake, fresh install (s)", "worst penetration (mm)"],
                  rows, note=note)]
