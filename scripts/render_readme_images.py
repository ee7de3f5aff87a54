"""Render the README images into docs/images/ from the committed demo_blends/ (Workbench).

    .venv/bin/python scripts/render_readme_images.py [--out docs/images]

Images (8-bit PNG, each well under 300 kB):
* ``knee_fit.png``: the gait2392 knee rig (knee_fit_rig.blend): the leg flexed by the fitted
  spline curve joint's slider, and a close-up of the knee with the fitted path of the tibia
  origin (red) over the OpenSim range.
* ``reach_cone.png``: the humerus inside its fitted elliptical reach cone (shoulder_reach_cone.blend).
* ``beads_on_a_wire.png``: contact sheet of the beads-on-a-wire demo baked with
  ``spline_joints.bake_dynamics`` (8 frames over its 4 s).
* ``scapulothoracic.png``: the scapula on its fitted spline surface joint over the thorax, with
  the surface's iso-coordinate lines (scapulothoracic_fit_rig.blend), at two slider settings.
* ``gait2392_walk.png``: the two gait2392 models of gait2392_walk.blend (exact OpenSim knees,
  fitted spline knees) at mid-stride (:data:`GAIT_FRAME`), through the demo's own camera.

The extension is installed into a temporary Blender user folder as in scripts/build_demos.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import build_demos as bd  # noqa: E402

DEMOS = bd.OUT


def open_demo(bpy, name: str):
    bpy.ops.wm.open_mainfile(filepath=str(DEMOS / f"{name}.blend"), load_ui=False)
    return bpy.context.scene


def close_up(scene, centre, width: float, view, resolution) -> None:
    """Point the scene's orthographic camera at ``centre`` (3,) along ``-view``, ``width`` metres wide."""
    from mathutils import Matrix, Vector

    d = np.asarray(view, dtype=float)
    d /= np.linalg.norm(d)
    rot = Vector(d.tolist()).to_track_quat("Z", "Y").to_matrix()
    cam = scene.camera
    cam.data.ortho_scale = width
    cam.matrix_world = Matrix.Translation(Vector((np.asarray(centre) + 3.0 * d).tolist())) @ rot.to_4x4()
    scene.render.resolution_x, scene.render.resolution_y = resolution


def knee(bpy, out: Path) -> Path:
    scene = open_demo(bpy, "knee_fit_rig")
    arm = bpy.data.objects["Knee"]
    tibia = arm.pose.bones["tibia"]
    arm.animation_data.action = None  # hold the slider where we put it
    tibia["sj_q0"] = -1.1
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    path = bpy.data.objects["SJ_JointPath_Knee_tibia"]
    path.data.bevel_depth = 0.002
    knee_centre = np.array(arm.matrix_world @ tibia.head)
    close_up(scene, knee_centre + [-0.12, 0.0, 0.12], 1.0, bd.VIEWS["knee_fit_rig"], (400, 400))
    leg = bd.render_frame(scene, 1)
    for name in ("femur condyles", "tibial plateau"):  # see the path through the joint surfaces
        colour = list(bpy.data.objects[name].data.materials[0].diffuse_color)
        bpy.data.objects[name].data.materials[0].diffuse_color = colour[:3] + [0.3]
        bpy.data.objects[name].data.materials[0].surface_render_method = "BLENDED"
    close_up(scene, knee_centre + [0.0, 0.0, 0.01], 0.2, (0.0, -1.0, 0.0), (400, 400))
    zoom = bd.render_frame(scene, 1)
    target = out / "knee_fit.png"
    bd.save_png(bd.contact_sheet([leg, zoom], columns=2), target)
    return target


def reach_cone(bpy, out: Path) -> Path:
    scene = open_demo(bpy, "shoulder_reach_cone")
    target = out / "reach_cone.png"
    bd.save_png(bd.render_frame(scene, 16, (560, 400)), target)
    return target


def beads(bpy, out: Path) -> Path:
    scene = open_demo(bpy, "beads_on_a_wire")
    if bpy.ops.spline_joints.bake_dynamics() != {"FINISHED"}:
        raise RuntimeError("baking beads_on_a_wire failed")
    item = scene.spline_joints_mechanisms[0]
    last = scene.frame_start + item.baked_frames - 1
    frames = np.linspace(scene.frame_start, last, 8).round().astype(int)
    tiles = [bd.render_frame(scene, f, (240, 170)) for f in frames]
    target = out / "beads_on_a_wire.png"
    bd.save_png(bd.contact_sheet(tiles, columns=4), target)
    return target


def scapula(bpy, out: Path) -> Path:
    scene = open_demo(bpy, "scapulothoracic_fit_rig")
    arm = bpy.data.objects["Shoulder"]
    scap = arm.pose.bones["scapula"]
    s = scap.spline_joints
    arm.animation_data.action = None
    thorax = bpy.data.objects["thorax"]
    centre = np.array(thorax.matrix_world.translation) + [-0.04, -0.04, 0.0]
    close_up(scene, centre, 0.5, (-0.8, -0.6, 0.25), (360, 400))
    tiles = []
    for u in ((0.3, 0.35), (0.7, 0.7)):  # fractions of the fitted (abduction, elevation) ranges
        for i in range(2):
            scap[f"sj_q{i}"] = s.range_min[i] + u[i] * (s.range_max[i] - s.range_min[i])
        bpy.context.view_layer.update()
        bpy.context.view_layer.update()
        tiles.append(bd.render_frame(scene, 1))
    target = out / "scapulothoracic.png"
    bd.save_png(bd.contact_sheet(tiles, columns=2), target)
    return target


#: the walk's frame shown: mid-stride, the right heel striking ahead and the left foot behind
GAIT_FRAME = 90


def gait(bpy, out: Path) -> Path:
    scene = open_demo(bpy, "gait2392_walk")
    target = out / "gait2392_walk.png"
    bd.save_png(bd.render_frame(scene, GAIT_FRAME, (720, 450)), target)
    return target


MAKERS = {"knee": knee, "reach_cone": reach_cone, "beads": beads, "scapula": scapula,
          "gait": gait}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(bd.ROOT / "docs" / "images"))
    parser.add_argument("--only", nargs="*", choices=sorted(MAKERS), help="images to make (default: all)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    bpy = bd.start_blender()
    for key in args.only or MAKERS:
        path = MAKERS[key](bpy, out)
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} kB)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
