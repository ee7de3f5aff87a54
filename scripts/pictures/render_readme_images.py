"""Render every picture of the docs (docs/images/) from the demo files (Workbench): one command.

    .venv/bin/python scripts/pictures/render_readme_images.py [--out docs/images] [--baked out/blends]
                                                     [--only knee beads animations ...]
                                                     [--demos hinge_chain globe ...]

Mechanism and linkage demos are shown baked. By default each is opened from demo_blends/ and baked in
this process by ``scripts.blender_kit.bake_open_file`` (``spline_joints.bake_dynamics``, as
the main job does; the baked copy goes to a temporary folder); ``--baked DIR`` takes the
already baked files of a main-job run instead (``scripts/main.py --out out`` writes them to
``out/blends``). Files with simulated rigs (the character, the contact demos) are baked the same way; the fitting
rigs and the OpenSim walk play their own animation.

Stills (8-bit PNG, each well under 300 kB):
* ``knee_fit.png``: the gait2392 knee rig (knee_fit_rig.blend): the leg flexed by the fitted
  spline curve joint's slider, and a close-up of the knee with the fitted path of the tibia
  origin (red) over the OpenSim range.
* ``reach_cone.png``: the humerus inside its fitted elliptical reach cone (shoulder_reach_cone.blend).
* ``beads_on_a_wire.png``: titled contact sheet of the baked beads-on-a-wire demo, 8 frames
  over its 4 s, each with its time and the beads' one-second trails (scripts/pictures/common.py).
* ``scapulothoracic.png``: the scapula on its fitted spline surface joint over the thorax, with
  the surface's iso-coordinate lines (scapulothoracic_fit_rig.blend), at two slider settings.
* ``four_bar_linkage.png``, ``scissor_lift.png``, ``door_stop.png`` (``linkages``): titled
  contact sheets of the baked linkage demos, 8 frames each.
* ``character_rig.png`` (``character``): titled contact sheet of the baked character demo
  (its tail and shins simulated), 8 frames.
* ``ragdoll_steps.png``, ``chain_in_bowl.png`` (``contacts``): titled contact sheets of the
  baked contact demos (the ragdoll down the steps, the chain into the bowl), 8 frames each.
* ``metarig_ragdoll.png``, ``walk_hit.png`` (``ragdolls``): titled contact sheets of the
  baked ragdoll demos (the meta-rig made a ragdoll in one step and dropped; the walking
  meta-rig hit by a ball and falling), 8 frames each.
* ``gait2392_walk.png``: the two gait2392 models of gait2392_walk.blend (exact OpenSim knees,
  fitted spline knees) at mid-stride (:data:`GAIT_FRAME`), through the demo's own camera.
* ``gait2392_mocap.png`` (``mocap``): the scaled gait2392 subject of gait2392_mocap.blend
  solved through the walking trial's markers (blue; its own markers pink), with the ground
  reaction force arrows, at :data:`MOCAP_FRAME`, through the demo's own camera.

Animations (``animations``): ``<demo>.gif`` for every file of demo_blends/, through the file's
own camera at :data:`ANIMATION_SIZE`, about :data:`ANIMATION_FPS` frames per second over the
whole baked or animated range, each frame labelled with its time, with the fading trails of
scripts/pictures/common.py on the chains, beads and globe; each must stay under
:data:`ANIMATION_LIMIT` bytes (the script fails otherwise).

The extension is installed into a temporary Blender user folder
(:func:`scripts.blender_kit.start_blender`), as scripts/build_demos.py does.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from scripts import blender_kit as kit  # noqa: E402
from scripts.demos.common import OUT as DEMOS, VIEWS  # noqa: E402
from scripts.demos.linkages import FILES as LINKAGE_FILES  # noqa: E402
from scripts.pictures import common as pictures  # noqa: E402
#: animation frame size (half the demo cameras' 640 x 360), rate and largest file (bytes)
ANIMATION_SIZE = (320, 180)
ANIMATION_FPS = 15.0
ANIMATION_LIMIT = 2_000_000


def open_demo(bpy, name: str, baked: Path | None = None):
    """Open demo ``name``: from ``baked`` when given (a main-job run's baked files), else from
    demo_blends/, baking its mechanisms, linkages and simulated rigs with
    :func:`scripts.blender_kit.bake_open_file` (the baked copy is saved into a temporary
    folder; the open file is the baked one)."""
    source = baked / f"{name}.blend" if baked is not None else DEMOS / f"{name}.blend"
    if not source.is_file():
        raise SystemExit(f"error: {source} not found" + (" (run scripts/main.py --out DIR first)"
                                                         if baked is not None else ""))
    bpy.ops.wm.open_mainfile(filepath=str(source), load_ui=False)
    scene = bpy.context.scene
    rigs = kit.addon_module("addon.rig_scene")
    if baked is None and (len(scene.spline_joints_mechanisms) or len(scene.spline_joints_linkages)
                          or rigs.simulated_armatures(scene) or rigs.simulated_objects(scene)):
        with tempfile.TemporaryDirectory(prefix="sj_readme_bake_") as tmp:
            kit.bake_open_file(tmp, f"{name}.blend")
    return scene


def last_frame(scene) -> int:
    """The last frame with motion: the end of the first mechanism's bake, else the scene's end."""
    items = scene.spline_joints_mechanisms
    if len(items) and items[0].baked_frames:
        return scene.frame_start + items[0].baked_frames - 1
    return scene.frame_end


def knee(bpy, out: Path, baked=None) -> Path:
    scene = open_demo(bpy, "knee_fit_rig", baked)
    arm = bpy.data.objects["Knee"]
    tibia = arm.pose.bones["tibia"]
    arm.animation_data.action = None  # hold the slider where we put it
    tibia["sj_q0"] = -1.1
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    path = bpy.data.objects["SJ_JointPath_Knee_tibia"]
    path.data.bevel_depth = 0.002
    knee_centre = np.array(arm.matrix_world @ tibia.head)
    pictures.close_up(scene, knee_centre + [-0.12, 0.0, 0.12], 1.0, VIEWS["knee_fit_rig"], (400, 400))
    leg = kit.render_frame(scene, 1)
    for name in ("femur_r", "tibia_r"):  # translucent bones: the path shows through the joint
        colour = list(bpy.data.objects[name].data.materials[0].diffuse_color)
        bpy.data.objects[name].data.materials[0].diffuse_color = colour[:3] + [0.3]
        bpy.data.objects[name].data.materials[0].surface_render_method = "BLENDED"
    pictures.close_up(scene, knee_centre + [0.0, 0.0, 0.01], 0.2, (0.0, -1.0, 0.0), (400, 400))
    zoom = kit.render_frame(scene, 1)
    target = out / "knee_fit.png"
    kit.save_png(kit.contact_sheet([leg, zoom], columns=2), target)
    return target


def reach_cone(bpy, out: Path, baked=None) -> Path:
    scene = open_demo(bpy, "shoulder_reach_cone", baked)
    target = out / "reach_cone.png"
    kit.save_png(kit.render_frame(scene, 16, (560, 400)), target)
    return target


def beads(bpy, out: Path, baked=None) -> Path:
    return sheet(bpy, "beads_on_a_wire", out, baked)


def character(bpy, out: Path, baked=None) -> Path:
    return sheet(bpy, "character_rig", out, baked)


def contacts(bpy, out: Path, baked=None) -> list[Path]:
    """:func:`sheet` of the contact demos (scripts/demos/ragdoll_steps.py, scripts/demos/chain_in_bowl.py)."""
    return [sheet(bpy, name, out, baked) for name in ("ragdoll_steps", "chain_in_bowl")]


def ragdolls(bpy, out: Path, baked=None) -> list[Path]:
    """:func:`sheet` of the ragdoll demos (scripts/demos/metarig_ragdoll.py, scripts/demos/walk_hit.py)."""
    return [sheet(bpy, name, out, baked) for name in ("metarig_ragdoll", "walk_hit")]


def linkages(bpy, out: Path, baked=None) -> list[Path]:
    """:func:`sheet` of every linkage demo (scripts/demos/linkages.py's FILES)."""
    return [sheet(bpy, name, out, baked) for name in LINKAGE_FILES]


def sheet(bpy, name: str, out: Path, baked=None) -> Path:
    """``<name>.png``: titled contact sheet of a baked demo, 8 frames over its motion, each with
    its time (and the trails of scripts/pictures/common.py where the demo has them)."""
    scene = open_demo(bpy, name, baked)
    frames = np.linspace(scene.frame_start, last_frame(scene), 8).round().astype(int)
    trails = pictures.trails(scene, int(frames[0]), int(frames[-1]))
    tiles = [pictures.render(scene, f, (240, 135), trails) for f in frames]
    target = out / f"{name}.png"
    kit.save_png(pictures.titled_sheet(tiles, 4, pictures.title_line(scene, name),
                                       [pictures.time_label(scene, f) for f in frames]), target)
    return target


def scapula(bpy, out: Path, baked=None) -> Path:
    scene = open_demo(bpy, "scapulothoracic_fit_rig", baked)
    arm = bpy.data.objects["Shoulder"]
    scap = arm.pose.bones["scapula"]
    s = scap.spline_joints
    arm.animation_data.action = None
    thorax = bpy.data.objects["thorax"]
    centre = np.array(thorax.matrix_world.translation) + [-0.04, -0.04, 0.0]
    pictures.close_up(scene, centre, 0.5, (-0.8, -0.6, 0.25), (360, 400))
    tiles = []
    for u in ((0.3, 0.35), (0.7, 0.7)):  # fractions of the fitted (abduction, elevation) ranges
        for i in range(2):
            scap[f"sj_q{i}"] = s.range_min[i] + u[i] * (s.range_max[i] - s.range_min[i])
        bpy.context.view_layer.update()
        bpy.context.view_layer.update()
        tiles.append(kit.render_frame(scene, 1))
    target = out / "scapulothoracic.png"
    kit.save_png(kit.contact_sheet(tiles, columns=2), target)
    return target


#: the walk's frame shown: mid-stride, the right heel striking ahead and the left foot behind
GAIT_FRAME = 90


def still(bpy, name: str, frame: int, out: Path, baked=None) -> Path:
    """``<name>.png``: frame ``frame`` of demo ``name`` through its own camera, 720 x 450."""
    scene = open_demo(bpy, name, baked)
    target = out / f"{name}.png"
    kit.save_png(kit.render_frame(scene, frame, (720, 450)), target)
    return target


def gait(bpy, out: Path, baked=None) -> Path:
    return still(bpy, "gait2392_walk", GAIT_FRAME, out, baked)


#: the motion-capture demo's frame shown: double support, both feet on the force plates
MOCAP_FRAME = 80


def mocap(bpy, out: Path, baked=None) -> Path:
    return still(bpy, "gait2392_mocap", MOCAP_FRAME, out, baked)


def animation(bpy, name: str, out: Path, baked=None) -> Path:
    """``<name>.gif``: the demo through its own camera, every frame time-labelled, with trails."""
    scene = open_demo(bpy, name, baked)
    step = max(1, round(scene.render.fps / scene.render.fps_base / ANIMATION_FPS))
    frames = list(range(scene.frame_start, last_frame(scene) + 1, step))
    trails = pictures.trails(scene, frames[0], frames[-1])
    images = [pictures.label(pictures.render(scene, f, ANIMATION_SIZE, trails), pictures.time_label(scene, f))
              for f in frames]
    target = out / f"{name}.gif"
    size = pictures.save_animation(images, target, scene.render.fps / scene.render.fps_base / step)
    if size > ANIMATION_LIMIT:
        raise SystemExit(f"error: {target} is {size / 1e6:.2f} MB, more than {ANIMATION_LIMIT / 1e6:g} MB; "
                         "lower ANIMATION_SIZE or ANIMATION_FPS")
    return target


def animations(bpy, out: Path, baked=None, names=None) -> list[Path]:
    """:func:`animation` of every demo file (or of ``names``)."""
    return [animation(bpy, n, out, baked) for n in names or sorted(p.stem for p in DEMOS.glob("*.blend"))]


MAKERS = {"knee": knee, "reach_cone": reach_cone, "beads": beads, "character": character, "scapula": scapula,
          "gait": gait, "mocap": mocap, "linkages": linkages, "contacts": contacts, "ragdolls": ragdolls,
          "animations": animations}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(kit.ROOT / "docs" / "images"))
    parser.add_argument("--only", nargs="*", choices=sorted(MAKERS), help="images to make (default: all)")
    parser.add_argument("--baked", help="folder of baked demo files (a main-job run's OUT/blends); "
                                        "default: bake here")
    parser.add_argument("--demos", nargs="*", help="animations of these demos only (default: every file)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    baked = Path(args.baked) if args.baked else None
    bpy = kit.start_blender()
    for key in args.only or MAKERS:
        made = animations(bpy, out, baked, args.demos) if key == "animations" else MAKERS[key](bpy, out, baked)
        for path in made if isinstance(made, list) else [made]:
            print(f"wrote {path} ({path.stat().st_size / 1024:.0f} kB)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
