"""The documentation's Getting started picture: the panel steps done by their operators on a pair of
legs built from scratch, rendered with Workbench.

    .venv/bin/python scripts/pictures/render_getting_started.py [--out docs/images]

An armature with a pelvis and, on each side, a femur (hip to knee) and a tibia (knee to ankle)
is built in Edit Mode, 1.1 times the gait2392 leg, every bone with roll 0 as Blender gives
it. *Apply Joint Preset* puts the gait2392 knee (right and left) on the tibias, scaled by the
femurs' lengths, with each knee's path drawn; *Drive from Joint* adds the sliders, which are
keyed for a stride; *Bake Joint* writes the right tibia's keys into a new action. Capsules
parented to the bones show them in the render. ``getting_started.png``: three frames of the
stride side by side and a close-up of the right knee (bones translucent) with the tibia's path
(red) drawn in the femur. ``getting_started_capture.png``: step 1 before them, *Capture Pose*
with the right tibia turned to four knee angles, a tile per sample. Prints the operators'
figures (samples captured, length ratio, rest-pose distance, baked keys).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from scripts import blender_kit as kit  # noqa: E402
from scripts.pictures.common import close_up, titled_sheet  # noqa: E402

#: the rig's size against the gait2392 leg
SIZE = 1.1
#: OpenSim x, y, z in a Blender character's armature space (-Y, +Z, -X), as core.transfer
M = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
#: the stride: (frame, right knee angle, left knee angle), radians (flexion negative)
STRIDE = [(1, -0.05, -1.1), (13, -0.6, -0.3), (25, -1.2, -0.05), (37, -0.3, -0.6), (49, -0.05, -1.1)]
FRAMES = (1, 13, 25)
#: the right tibia's X rotation (rad) at each sample of the capture picture (the knee flexing)
CAPTURE_ANGLES = (0.0, 0.4, 0.8, 1.2)
BONE = (0.93, 0.9, 0.82, 1.0)
#: the camera looks from the rig's left side, a little from the front and above; square tiles
VIEW = (1.0, -0.35, 0.25)
TILE = (360, 360)


def build_legs(bpy):
    """The armature 'Legs' (pelvis, femur_R/L, tibia_R/L) with a capsule on every bone."""
    ref = kit.addon_module("core.reference.opensim").KneeGait2392()
    display = kit.addon_module("core.display")
    hip = M @ np.array([-0.0707, -0.0661, 0.0835])
    knee = hip + M @ ref.pose(0.0)[:3, 3]
    ankle = knee + M @ np.array([0.0, -0.43, 0.0])
    pelvis_height = SIZE * (0.0 - ankle[2]) + 0.05  # feet just above the ground
    scene = kit.new_scene(24, STRIDE[-1][0], "getting_started")
    data = bpy.data.armatures.new("Legs")
    data.display_type = "STICK"
    obj = bpy.data.objects.new("Legs", data)
    scene.collection.objects.link(obj)
    obj.location = (0.0, 0.0, pelvis_height)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    pelvis = data.edit_bones.new("pelvis")
    pelvis.head, pelvis.tail = SIZE * hip * [-1.0, 1.0, 1.0], SIZE * hip  # left to right hip
    for side, flip in (("R", 1.0), ("L", -1.0)):
        m = np.array([flip, 1.0, 1.0])
        femur = data.edit_bones.new(f"femur_{side}")
        femur.head, femur.tail = SIZE * hip * m, SIZE * knee * m
        femur.parent = pelvis
        tibia = data.edit_bones.new(f"tibia_{side}")
        tibia.head, tibia.tail = SIZE * knee * m, SIZE * ankle * m
        tibia.parent, tibia.use_connect = femur, False
    bpy.ops.object.mode_set(mode="POSE")
    for bone in data.bones:
        radius = 0.05 if bone.name == "pelvis" else 0.03
        mesh = display.capsule(radius, bone.length, axis=1)
        offset = np.eye(4)
        offset[1, 3] = 0.5 * bone.length
        kit.bone_mesh(obj, bone.name, f"{bone.name}_mesh", mesh, BONE, offset)
    return scene, obj


def frame_legs(scene, obj) -> None:
    """Point the camera at the legs from :data:`VIEW`, room left for the swinging shins."""
    points = np.array([list(obj.matrix_world @ b.head_local) for b in obj.data.bones] +
                      [list(obj.matrix_world @ b.tail_local) for b in obj.data.bones])
    points = np.vstack([points, points + [0.0, -0.25, 0.0], points + [0.0, 0.12, 0.0]])
    kit.setup_render(scene, points, view=VIEW, resolution=TILE)


def capture_sheet(bpy, scene, obj) -> np.ndarray:
    """Step 1: *Capture Pose* on the right tibia turned about its X axis to each of
    :data:`CAPTURE_ANGLES` (the default source, this bone's X rotation, is the coordinate), a
    labelled tile per sample; the tibia goes back to rest and its samples are cleared."""
    tibia = obj.pose.bones["tibia_R"]
    obj.data.bones.active = obj.data.bones["tibia_R"]
    tibia.rotation_mode = "XYZ"
    frame_legs(scene, obj)
    tiles = []
    for angle in CAPTURE_ANGLES:
        tibia.rotation_euler = (angle, 0.0, 0.0)
        bpy.context.view_layer.update()
        kit.check(bpy.ops.spline_joints.capture_pose(), "capture_pose")
        tiles.append(kit.render_frame(scene, FRAMES[0]))
    print(f"captured {len(tibia.spline_joints.samples)} samples on tibia_R")
    tibia.rotation_euler = (0.0, 0.0, 0.0)
    tibia.rotation_mode = "QUATERNION"
    kit.check(bpy.ops.spline_joints.clear_samples(), "clear_samples")
    labels = [f"sample {i + 1}: q = {a:.1f} rad" for i, a in enumerate(CAPTURE_ANGLES)]
    return titled_sheet(tiles, len(tiles), "Capture Pose: tibia_R at four knee angles", labels)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(kit.ROOT / "docs" / "images"))
    args = parser.parse_args(argv)
    bpy = kit.start_blender()
    scene, obj = build_legs(bpy)
    kit.smooth_meshes(scene)
    target = Path(args.out) / "getting_started_capture.png"
    kit.save_png(capture_sheet(bpy, scene, obj), target)
    print(f"wrote {target} ({target.stat().st_size / 1024:.0f} kB)")
    core_io = kit.addon_module("core.io")
    for side in "RL":
        obj.data.bones.active = obj.data.bones[f"tibia_{side}"]
        kit.check(bpy.ops.spline_joints.apply_joint_preset(preset=f"KNEE_{side}"), "apply_joint_preset")
        kit.colour_path(obj, f"tibia_{side}")
        bpy.data.objects[f"SJ_JointPath_Legs_tibia_{side}"].data.bevel_depth = 0.006
        doc = core_io.loads(obj.pose.bones[f"tibia_{side}"].spline_joints.joint_json)
        femur = obj.data.bones[f"femur_{side}"].length
        print(f"tibia_{side}: gait2392 knee scaled by {doc.joint.scale:.3f} (femur {femur:.4f} m)")
        kit.check(bpy.ops.spline_joints.drive_joint(), "drive_joint")
    for frame, right, left in STRIDE:
        kit.key_sliders(obj.pose.bones["tibia_R"], [(frame, (right,))])
        kit.key_sliders(obj.pose.bones["tibia_L"], [(frame, (left,))])
    obj.data.bones.active = obj.data.bones["tibia_R"]
    kit.check(bpy.ops.spline_joints.bake_joint(), "bake_joint")
    print(f"baked into '{obj.animation_data.action.name}', previous action on NLA track "
          f"'{obj.animation_data.nla_tracks[0].name}'")
    kit.smooth_meshes(scene)
    frame_legs(scene, obj)
    tiles = [kit.render_frame(scene, f) for f in FRAMES]
    # a close-up of the right knee, bones translucent: the tibia's path in the femur (red)
    for name in ("femur_R_mesh", "tibia_R_mesh"):
        bpy.data.objects[name].data.materials[0] = kit.addon_module("addon.bridge").ensure_material(
            "SJ translucent bone", BONE[:3] + (0.3,))
    scene.frame_set(FRAMES[-1])
    knee = np.array(obj.matrix_world @ obj.pose.bones["tibia_R"].head)
    close_up(scene, knee, 0.16, (-VIEW[0], VIEW[1], VIEW[2]), TILE)  # from the right side
    tiles.append(kit.render_frame(scene, FRAMES[-1]))
    target = Path(args.out) / "getting_started.png"
    kit.save_png(kit.contact_sheet(tiles, columns=len(tiles)), target)
    print(f"wrote {target} ({target.stat().st_size / 1024:.0f} kB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
