"""The demo files of the linkages (``spline_joints.add_demo_linkage``), :data:`FILES`; see
:func:`build_linkage_file`."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from scripts import blender_kit as kit
from scripts.demos.common import VIEWS, save

#: the files this module builds
FILES = ("four_bar_linkage", "scissor_lift", "door_stop")
#: offset (m) of a demo's released copy (the dynamics bake) from its driven copy: beside it
#: along x, as the cameras of the plane linkages look from -y
RELEASED_OFFSET = {"four_bar_linkage": (3.2, 0.0, 0.0), "scissor_lift": (2.0, 0.0, 0.0)}


def _linkage_motion_points(scene, item) -> np.ndarray:
    """World corners of a released linkage's bodies over its core simulation (its dynamics
    bake, not run here), (M, 3)."""
    lb = kit.addon_module("addon.linkage_bridge")
    linkage, objects = lb.read_linkage(scene, item, driven=False)
    motion = kit.addon_module("core.linkage").simulate_linkage(
        linkage, item.duration, scene.render.fps / scene.render.fps_base, item.substeps)
    pts = [kit.box_corners(o)[None] @ np.swapaxes(motion.poses[:, k, :3, :3], 1, 2) + motion.poses[:, k, None, :3, 3]
           for k, o in enumerate(objects)]
    return np.concatenate([p.reshape(-1, 3) for p in pts])


def build_linkage_file(name: str, out: Path) -> None:
    """``<name>.blend`` for the linkages (``spline_joints.add_demo_linkage``):

    * ``four_bar_linkage``: a crank-rocker four-bar whose crank is keyed through one turn (a key
      per frame), assembled live (bake: the live assembly), and a released copy beside it that
      swings under gravity (bake: dynamics);
    * ``scissor_lift``: a two-stage scissor lift driven by its foot slider's Drive Value, keyed
      in and out, and a released copy lifted by its spring (dynamics);
    * ``door_stop``: a door swung shut by its closer spring into the stop of its hinge (a
      unilateral limit; dynamics with the couplings solver), drawn with the wall beside it and
      the stop block the shut door rests on.
    """
    import bpy

    fps, frames = 24, {"four_bar_linkage": 73, "scissor_lift": 73, "door_stop": 37}[name]
    scene = kit.new_scene(fps, frames, name)
    demo = {"four_bar_linkage": "four_bar", "scissor_lift": "scissor_lift", "door_stop": "door"}[name]
    kit.check(bpy.ops.spline_joints.add_demo_linkage(demo=demo, driven=demo != "door"), "add_demo_linkage")
    items = scene.spline_joints_linkages
    items[0].duration = (frames - 1) / fps
    if demo == "four_bar":
        crank = items[0].driver
        crank.rotation_mode = "XYZ"
        T0 = kit.addon_module("addon.linkage_bridge").object_pose(crank)
        for f in range(1, frames + 1):
            turn = 2 * math.pi * (f - 1) / (frames - 1)
            R = kit.addon_module("core.lie").so3.exp(np.array([0.0, -turn, 0.0]))
            crank.matrix_world = kit.matrix(kit.addon_module("core.lie").se3.from_rp(R @ T0[:3, :3], R @ T0[:3, 3]))
            crank.keyframe_insert("location", frame=f)
            crank.keyframe_insert("rotation_euler", frame=f)
    elif demo == "scissor_lift":
        item = items[0]
        for f, x in ((1, 0.0), (25, -0.35), (49, 0.15), (73, 0.0)):
            item.drive_value = x
            scene.keyframe_insert('spline_joints_linkages[0].drive_value', frame=f)
    if demo == "door":  # the wall beside the opening and the stop the shut door rests on
        bridge, display = kit.addon_module("addon.bridge"), kit.addon_module("core.display")
        for label, size, centre in (("wall left", (0.6, 0.1, 2.2), (-0.32, -0.05, 1.1)),
                                    ("wall right", (0.6, 0.1, 2.2), (1.22, -0.05, 1.1)),
                                    ("stop", (0.06, 0.05, 0.3), (0.8, -0.045, 1.0))):
            obj = bridge.write_display_object(label, display.box(size), f"SJ {label.split()[0]}",
                                              (0.8, 0.8, 0.78, 1.0) if label != "stop" else (0.75, 0.2, 0.15, 1.0),
                                              scene.collection)
            obj.location = centre
    if name in RELEASED_OFFSET:
        kit.check(bpy.ops.spline_joints.add_demo_linkage(demo=demo, driven=False, offset=RELEASED_OFFSET[name]),
                  "add_demo_linkage")
        items[1].duration = (frames - 1) / fps
    for item in items:
        item.mode = "ASSEMBLY" if item.live else "DYNAMICS"
    pts = [kit.visible_points(scene, range(1, frames + 1, 4))]
    pts += [_linkage_motion_points(scene, item) for item in items if item.mode == "DYNAMICS"]
    kit.setup_render(scene, np.vstack(pts), VIEWS.get(name, kit.DEFAULT_VIEW))
    save(scene, out / f"{name}.blend")
