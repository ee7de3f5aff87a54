"""Write demo_blends/: one .blend per core demo mechanism, rig, linkage and the OpenSim walk, with bpy.

    .venv/bin/python scripts/build_demos.py                 # every file
    .venv/bin/python scripts/build_demos.py --only globe knee_fit_rig
    .venv/bin/python scripts/build_demos.py --out DIR --zip build/dist/spline_joints-...zip

The extension zip (built with scripts/build_extension.py --platform linux-x64 unless --zip is
given) is installed into a private, temporary Blender user folder (BLENDER_USER_RESOURCES) and
enabled, exactly as the tests do; the user's own Blender configuration is never touched.

Files written (each scene: low-poly meshes, solid-colour materials, an orthographic camera
at :data:`RESOLUTION` framing the whole motion of the bodies (ground planes may run out of
view), a sun light and Workbench render settings; the globe's camera faces where its planes
go, :func:`facing_view`; :func:`camera_pixels` projects points through a scene's camera):

* ``<demo>.blend`` for every key of ``core.mechanisms.DEMOS``: the mechanism placed with the
  add-on's ``spline_joints.add_mechanism`` at the demo's own frame rate and duration, unbaked
  (the operator also draws the mechanism's world-fixed ``scenery``, such as the deforming
  demo's sheet, in its shape at t = 0; ``spline_joints.bake_dynamics`` keys its motion).
  The camera frames the motion, which is simulated once here (core only, 2 processes).
* ``knee_fit_rig.blend``: femur/tibia armature; the tibia is posed over the OpenSim gait2392
  knee range (1-degree grid, ``core.reference.KneeGait2392``), the poses are recorded with
  ``spline_joints.capture_range`` (frame-number source), fitted with ``spline_joints.fit``
  (12-frame spline curve, path drawn) and driven by the ``sj_q0`` slider, which is animated.
* ``scapulothoracic_fit_rig.blend``: thorax ellipsoid and scapula; the 17 x 11 Seth 2019 grid
  (``core.reference.ScapulothoracicSeth2019``) captured with ``spline_joints.capture_pose``
  (custom-property source), a fitted 8 x 6 spline surface joint and animated sliders.
* ``shoulder_reach_cone.blend``: a humerus on a ball joint; swing samples captured, a reach
  cone fitted (``spline_joints.fit_reach_cone``) and drawn (``spline_joints.draw_reach_cone``).
* ``gait2392_walk.blend``: the OpenSim gait2392 model with its bone meshes
  (``spline_joints.import_osim``) imported twice, :data:`GAIT_SPACING` apart across the walk,
  both keyed with the walking motion (``spline_joints.import_osim_motion``); the second with
  knee_r and knee_l replaced by fitted spline joints (``spline_joints.fit_osim_joint``). A label
  follows each pelvis, a ground plane lies under the feet, the camera frames the whole walk,
  and the text ``CREDITS`` gives the model's authors and licence (CC BY 3.0). The model,
  meshes and motion are read from :data:`OSIM_DATA`.
* ``character_rig.blend``: a small character sitting on a ledge, swaying (keyed hips), whose
  tail (8 bones on ball joints in reach cones, damped) and shins (on spline knees fitted to the
  gait2392 knee preset) are simulated: the Simulate panel's settings, unbaked
  (scripts/demo_character.py; ``spline_joints.bake_rig`` and scripts/bake.py bake it).
* ``ragdoll_steps.blend``: the character's body (no tail) as a limp ragdoll, every bone simulated
  (free hips, ball joints in elliptical reach cones with twist limits, hinge knees and elbows
  with end-stops; capsules and spheres as collision shapes), tipped off the top of four box
  steps marked as colliders, the ground on (scripts/demo_ragdoll.py); unbaked.
* ``chain_in_bowl.blend``: a chain of 12 capsule links (free first link, ball joints in reach
  cones) dropped into a bowl of nine box colliders, with self-collision on
  (scripts/demo_bowl.py); unbaked.

Every scene carries ``scene["spline_joints_demo_build"] = BUILD_VERSION`` so the tests can
tell a stale file; bump it whenever this script changes what it writes.
"""

from __future__ import annotations

import argparse
import importlib
import io
import math
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "demo_blends"
MODULE = "bl_ext.user_default.spline_joints"
BUILD_VERSION = 7
RIGS = ("knee_fit_rig", "scapulothoracic_fit_rig", "shoulder_reach_cone", "gait2392_walk", "character_rig",
        "ragdoll_steps", "chain_in_bowl")
LINKAGES = ("four_bar_linkage", "scissor_lift", "door_stop")
#: the shipped OpenSim models, meshes and motions (see the README there)
OSIM_DATA = ROOT.parent / "shared" / "data" / "osim"
#: render size of every demo camera (16:9; the main job's tiles and the README animations are
#: rendered at fractions of it)
RESOLUTION = (640, 360)
BACKGROUND = (0.93, 0.94, 0.96)
#: VIEWS value of a demo whose bodies ride on the surface of its first body, a sphere (the
#: globe's planes): the view is derived from the simulated motion (:func:`facing_view`)
FACE_BODIES = "face the bodies"
#: view direction (from the target towards the camera) per file; default: front-right, above
VIEWS = {
    "beads_on_a_wire": (0.45, -1.0, 0.8),
    "globe": FACE_BODIES,
    "knee_pendulum": (0.15, -1.0, 0.25),
    "knee_fit_rig": (0.12, -1.0, 0.12),
    "scapulothoracic": (-0.9, -0.8, 0.45),
    "scapulothoracic_fit_rig": (-1.0, -0.45, 0.35),
    "shoulder_reach_cone": (1.0, -0.35, 0.3),
    "deforming_surface": (0.4, -1.0, 1.4),
    "hinge_chain": (0.2, -1.0, 0.25),
    "skeleton_chain": (0.9, -1.0, 0.55),
    "gait2392_walk": (0.75, -1.0, 0.2),
    "four_bar_linkage": (0.25, -1.0, 0.3),
    "scissor_lift": (0.35, -1.0, 0.3),
    "door_stop": (0.3, -0.6, 1.2),
    "character_rig": (1.0, 0.7, 0.45),
    "ragdoll_steps": (1.0, -0.35, 0.3),
    "chain_in_bowl": (0.5, -1.0, 0.7),
}
DEFAULT_VIEW = (0.55, -1.0, 0.35)


# ------------------------------------------------------------------------------------------
# Core side (no bpy): demo settings and the points the camera must see
# ------------------------------------------------------------------------------------------

def _repo_core(name: str = "mechanisms"):
    """The repository's ``core.<name>`` module (numpy only, no bpy)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module(f"core.{name}")


def facing_view(directions: np.ndarray, default=DEFAULT_VIEW, n_candidates: int = 4000) -> np.ndarray:
    """The view direction (3,), unit, from which bodies riding on a sphere look largest on
    average: ``directions`` (N, 3) are unit vectors from the sphere's centre to the bodies,
    sampled over their motion; a body flat on the sphere at direction d shows
    ``max(0, d . view)`` of its area (0: behind the sphere), and the view maximizing the mean
    of that over the samples wins. The candidates are ``n_candidates`` directions spread
    evenly over the sphere (a Fibonacci lattice, about 3 degrees apart); of equally good ones
    the one closest to ``default`` wins."""
    i = np.arange(n_candidates) + 0.5
    polar, azimuth = np.arccos(1.0 - 2.0 * i / n_candidates), math.pi * (1.0 + 5.0 ** 0.5) * i
    candidates = np.stack([np.cos(azimuth) * np.sin(polar), np.sin(azimuth) * np.sin(polar),
                           np.cos(polar)], axis=1)
    d = np.asarray(directions, dtype=float).reshape(-1, 3)
    shown = np.clip(d @ candidates.T, 0.0, None).mean(axis=0)
    default = np.asarray(default, dtype=float) / np.linalg.norm(default)
    return candidates[np.argmax(shown + 1e-9 * (candidates @ default))]  # ties: nearest default


def demo_view(demo: str, result, mech) -> np.ndarray:
    """The camera's view direction (3,) for a demo: ``VIEWS[demo]`` (default
    :data:`DEFAULT_VIEW`), or for :data:`FACE_BODIES` the :func:`facing_view` of the directions
    from the first body's origin (the sphere's centre) to the drawn centres of the other
    visible bodies over every frame of ``result`` (a BakeResult of ``mech``)."""
    view = VIEWS.get(demo, DEFAULT_VIEW)
    if not isinstance(view, str):
        return np.asarray(view, dtype=float)
    centre = result.poses[:, 0, :3, 3]
    dirs = [result.poses[:, k] @ np.asarray(disp.offset, dtype=float)[:, 3]
            for k, disp in enumerate(mech.display) if k and disp.visible]
    dirs = np.stack([p[:, :3] - centre for p in dirs], axis=1).reshape(-1, 3)
    return facing_view(dirs / np.linalg.norm(dirs, axis=1, keepdims=True))


def motion_points(demo: str) -> tuple[np.ndarray, dict]:
    """The demo built with its own defaults and simulated once (core only): world points
    (M, 3) of every visible mesh vertex and polyline of the bodies and the scenery over the
    motion (every 4th frame; not ground planes, which may run out of view), for framing the
    camera, and the demo's frame rate, duration and
    camera view direction (:func:`demo_view`) for its scene,
    ``{"fps": int, "duration": float, "view": (3,)}``."""
    mechs = _repo_core()
    display = _repo_core("display")
    mech = mechs.DEMOS[demo]()
    if float(mech.fps) != int(mech.fps):
        raise SystemExit(f"error: demo {demo!r} runs at {mech.fps} fps; a scene needs a whole number")
    settings = {"fps": int(mech.fps), "duration": float(mech.duration)}
    result = mechs.simulate_mechanism(mech)
    settings["view"] = demo_view(demo, result, mech)
    poses = result.poses[::4]
    pts = []
    for k, body in enumerate(mech.display):
        if not body.visible:
            continue
        local = []
        for disp in (body, *body.parts):  # the body's own display and the parts drawn with it
            local += [np.asarray(p, dtype=float).reshape(-1, 3) for p in disp.polylines]
            mesh = display.body_mesh(disp.mesh, disp.size, disp.axis, disp.offset, disp.geometry)
            if mesh is not None:
                local.append(np.asarray(mesh[0]))
        if not local:
            continue
        local = np.vstack(local)
        pts.append(np.einsum("fij,vj->fvi", poses[:, k, :3, :3], local).reshape(-1, 3)
                   + np.repeat(poses[:, k, :3, 3], len(local), axis=0))
    for disp in mech.scenery:  # fixed to the world; a deforming surface over the same frames
        if not disp.visible:
            continue
        pts.extend(np.asarray(p, dtype=float).reshape(-1, 3) for p in disp.polylines)
        if disp.mesh == "surface":
            pts.extend(disp.surface_mesh(t)[0] for t in result.times[::4])
        elif disp.mesh == "helix":  # a spring between bodies: its ends are the bodies' points
            continue
        elif disp.mesh == "plane":  # a ground plane: framing the motion, it may run out of view
            continue
        elif (mesh := display.body_mesh(disp.mesh, disp.size, disp.axis, disp.offset,
                                        disp.geometry)) is not None:
            pts.append(np.asarray(mesh[0], dtype=float))
    return np.vstack(pts), settings


# ------------------------------------------------------------------------------------------
# Blender side
# ------------------------------------------------------------------------------------------

def build_zip() -> str:
    """Build (or reuse) the linux-x64 extension zip; returns its path."""
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_extension.py"), "--platform",
                           "linux-x64"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"error: building the extension failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout.strip().splitlines()[-1]


def start_blender(zip_path: str | None = None, user_dir: str | None = None):
    """Import bpy with a sandboxed user folder and enable the extension (installing the zip
    when it is not installed there yet). Returns the bpy module."""
    if "bpy" in sys.modules:
        raise RuntimeError("start_blender must run before bpy is imported (it sets the user folder)")
    if user_dir:
        os.environ["BLENDER_USER_RESOURCES"] = user_dir
    elif not os.environ.get("BLENDER_USER_RESOURCES"):
        os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="spline_joints_user_")
    import bpy  # noqa: E402 (the environment above must be set first)
    import addon_utils

    ext_dir = Path(os.environ["BLENDER_USER_RESOURCES"]) / "extensions" / "user_default" / "spline_joints"
    if not ext_dir.is_dir():
        bpy.ops.extensions.package_install_files(filepath=os.path.abspath(zip_path or build_zip()),
                                                 repo="user_default", enable_on_install=True)
    if not addon_utils.check(MODULE)[1]:
        bpy.ops.preferences.addon_enable(module=MODULE)
    if MODULE not in bpy.context.preferences.addons:
        raise RuntimeError(f"{MODULE} could not be enabled from {ext_dir}")
    return bpy


def addon_module(name: str):
    """A module of the installed extension, e.g. ``addon_module("addon.bridge")``."""
    return importlib.import_module(f"{MODULE}.{name}")


def setup_render(scene, points: np.ndarray, view=DEFAULT_VIEW, margin: float = 1.12,
                 resolution=RESOLUTION) -> None:
    """Orthographic camera looking along ``-view`` that frames ``points`` (M, 3), a sun light,
    a light background and Workbench settings (studio light, material colours, cavity, outline)."""
    import bpy
    from mathutils import Matrix, Vector

    d = np.asarray(view, dtype=float)
    d /= np.linalg.norm(d)
    rot = Vector(d.tolist()).to_track_quat("Z", "Y").to_matrix()  # camera looks along its -Z
    R = np.array(rot)
    local = points @ R  # coordinates in the camera's axes
    lo, hi = local.min(axis=0), local.max(axis=0)
    centre = R @ (0.5 * (lo + hi))
    aspect = resolution[0] / resolution[1]
    width = max(hi[0] - lo[0], (hi[1] - lo[1]) * aspect, 1e-3) * margin
    depth = hi[2] - lo[2]
    cam_data = bpy.data.cameras.new("Camera")
    cam_data.type = "ORTHO"
    cam_data.ortho_scale = float(width)
    cam_data.clip_start = 0.01
    cam_data.clip_end = float(depth + 2.0 * width + 10.0)
    cam = bpy.data.objects.new("Camera", cam_data)
    scene.collection.objects.link(cam)
    T = Matrix.Translation(Vector((centre + d * (0.5 * depth + width + 1.0)).tolist())) @ rot.to_4x4()
    cam.matrix_world = T
    scene.camera = cam
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    scene.collection.objects.link(sun)
    sun.matrix_world = Matrix.Translation(Vector((centre + np.array([0.0, 0.0, width])).tolist())) @ \
        Vector((0.4, -0.6, 1.0)).to_track_quat("Z", "Y").to_matrix().to_4x4()
    sun.data.energy = 3.0
    world = bpy.data.worlds.new("World")
    world.color = BACKGROUND
    scene.world = world
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.render.resolution_x, scene.render.resolution_y = resolution
    scene.render.resolution_percentage = 100
    scene.render.film_transparent = False
    scene.render.image_settings.file_format = "PNG"
    shading = scene.display.shading
    shading.light = "STUDIO"
    shading.color_type = "MATERIAL"
    shading.show_cavity = True
    shading.cavity_type = "WORLD"
    shading.show_object_outline = True
    shading.show_specular_highlight = True
    scene.view_settings.view_transform = "Standard"


def render_frame(scene, frame: int, resolution=None) -> np.ndarray:
    """Workbench render of one frame as an (H, W, 4) float32 RGBA array (top row first)."""
    import bpy

    if resolution is not None:
        scene.render.resolution_x, scene.render.resolution_y = resolution
    scene.frame_set(int(frame))
    bpy.context.view_layer.update()  # let the add-on's live drive pose driven bones
    fd, path = tempfile.mkstemp(suffix=".png", prefix="sj_frame_")
    os.close(fd)
    try:
        scene.render.filepath = path
        with bpy.context.temp_override(scene=scene):
            bpy.ops.render.render(write_still=True, scene=scene.name)
        img = bpy.data.images.load(path)
        w, h = img.size
        px = np.empty(w * h * 4, dtype=np.float32)
        img.pixels.foreach_get(px)
        bpy.data.images.remove(img)
    finally:
        os.remove(path)
    return px.reshape(h, w, 4)[::-1]


def contact_sheet(tiles: list, columns: int, gap: int = 4) -> np.ndarray:
    """Tile equally sized (H, W, C) float images row by row with white gaps; returns (H', W', C)."""
    h, w, c = tiles[0].shape
    rows = -(-len(tiles) // columns)
    sheet = np.ones((rows * h + (rows - 1) * gap, columns * w + (columns - 1) * gap, c), dtype=np.float32)
    for k, tile in enumerate(tiles):
        r, c = divmod(k, columns)
        sheet[r * (h + gap):r * (h + gap) + h, c * (w + gap):c * (w + gap) + w] = tile
    return sheet


def save_png(image: np.ndarray, path: Path) -> None:
    """Write an image as an 8-bit RGB PNG (Pillow, through ``core.io.atomic_write``): an (H, W,
    3 or 4) float array in [0, 1] or uint8 array, top row first; alpha is dropped."""
    from PIL import Image

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    Image.fromarray(to_rgb8(image)).save(buffer, format="PNG", optimize=True)
    _repo_core("io").atomic_write(path, buffer.getvalue())


def to_rgb8(image: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8 of an (H, W, 3 or 4) float image in [0, 1] or uint8 image."""
    image = np.asarray(image)
    if image.dtype != np.uint8:
        image = np.round(np.clip(image[..., :3], 0.0, 1.0) * 255.0).astype(np.uint8)
    return np.ascontiguousarray(image[..., :3])


def camera_pixels(scene, points: np.ndarray, resolution=RESOLUTION) -> np.ndarray:
    """Pixel coordinates (..., 2) of world points (..., 3) in a ``resolution`` (width, height)
    render through the scene's camera: x to the right and y down from the top-left corner of
    the frame, so a point is in view when ``0 <= x <= width`` and ``0 <= y <= height``. The
    camera's projection matrix (``Object.calc_matrix_camera``, any camera type and sensor fit)
    applied in numpy."""
    import bpy

    cam = scene.camera
    P = np.array(cam.calc_matrix_camera(bpy.context.evaluated_depsgraph_get(), x=resolution[0],
                                        y=resolution[1], scale_x=scene.render.pixel_aspect_x,
                                        scale_y=scene.render.pixel_aspect_y))
    M = P @ np.linalg.inv(np.array(cam.matrix_world))
    pts = np.asarray(points, dtype=float)
    h = pts @ M[:, :3].T + M[:, 3]
    ndc = h[..., :2] / h[..., 3:4]
    return np.stack([0.5 * (ndc[..., 0] + 1.0) * resolution[0],
                     0.5 * (1.0 - ndc[..., 1]) * resolution[1]], axis=-1)


def box_corners(obj) -> np.ndarray:
    """The 8 corners (8, 3) of an object's bounding box in its own frame (``bound_box``)."""
    return np.array([tuple(c) for c in obj.bound_box], dtype=float)


def new_scene(fps: int, frame_end: int, name: str):
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.name = name
    scene.render.fps, scene.render.fps_base = int(fps), 1.0
    scene.frame_start, scene.frame_end, scene.frame_current = 1, int(frame_end), 1
    scene.unit_settings.system, scene.unit_settings.scale_length = "METRIC", 1.0
    return scene


def smooth_meshes(scene, angle: float = math.radians(35.0)) -> None:
    """Smooth shading with sharp edges above ``angle`` (round bodies look round, boxes and
    cylinder caps stay crisp) on every mesh of the scene."""
    for obj in scene.objects:
        if obj.type == "MESH":
            obj.data.shade_smooth()
            obj.data.set_sharp_from_angle(angle=angle)


def save(scene, path: Path) -> None:
    import bpy

    smooth_meshes(scene)
    scene["spline_joints_demo_build"] = BUILD_VERSION
    scene.frame_set(scene.frame_start)
    path.parent.mkdir(parents=True, exist_ok=True)
    with addon_module("core.io").atomic_path(path) as tmp:  # renamed into place when saved
        bpy.ops.wm.save_as_mainfile(filepath=tmp, compress=True, relative_remap=False)
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} kB)", flush=True)


def build_mechanism_file(demo: str, points: np.ndarray, settings: dict, out: Path) -> None:
    """``<demo>.blend``: the demo placed at its own frame rate and duration ``settings`` (from
    :func:`motion_points`), its camera looking along ``-settings["view"]`` and framing
    ``points``."""
    import bpy

    scene = new_scene(settings["fps"], 1 + round(settings["duration"] * settings["fps"]), demo)
    if bpy.ops.spline_joints.add_mechanism(demo=demo, duration=settings["duration"]) != {"FINISHED"}:
        raise RuntimeError(f"add_mechanism failed for {demo}")
    for obj in scene.objects:  # wires and coastlines thick enough to read in a small render
        if obj.type == "CURVE":
            obj.data.bevel_depth = max(obj.data.bevel_depth, 0.005)
    setup_render(scene, points, settings["view"])
    save(scene, out / f"{demo}.blend")


# --- rigs ---------------------------------------------------------------------------------

def _matrix(a):
    from mathutils import Matrix

    return Matrix(np.asarray(a, dtype=float).tolist())


def _armature(name: str, bones):
    """Armature object at the origin with bones ``(name, parent, T_arm_bone (4, 4), length)``,
    left in Pose Mode with the last bone active."""
    import bpy

    data = bpy.data.armatures.new(name)
    data.display_type = "STICK"
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    for bname, parent, T, length in bones:
        eb = data.edit_bones.new(bname)
        eb.head, eb.tail = (0.0, 0.0, 0.0), (0.0, float(length), 0.0)
        eb.matrix = _matrix(T)
        if parent:
            eb.parent = data.edit_bones[parent]
            eb.use_connect = False
    bpy.ops.object.mode_set(mode="POSE")
    data.bones.active = data.bones[bones[-1][0]]
    for pb in obj.pose.bones:
        pb.rotation_mode = "QUATERNION"
    obj.show_in_front = True
    obj.hide_render = True
    return obj


def _bone_mesh(arm, bone: str, name: str, mesh, colour, T_bone_obj=None):
    """A mesh (vertices, faces) parented to a bone at ``T_bone_obj`` (bone head frame)."""
    import bpy

    bridge = addon_module("addon.bridge")
    obj = bridge.write_mesh_object(name, mesh[0], mesh[1], bpy.context.scene.collection)
    obj.data.materials.append(bridge.ensure_material(f"SJ {name}", colour))
    bridge.parent_to_bone(obj, arm, bone, np.eye(4) if T_bone_obj is None else T_bone_obj)
    return obj


def _translation(p):
    T = np.eye(4)
    T[:3, 3] = p
    return T


def _colour_path(arm, child: str, colour=(0.85, 0.15, 0.1, 1.0)) -> None:
    """Give the fitted-path curve drawn by spline_joints.fit a solid colour."""
    import bpy

    bridge = addon_module("addon.bridge")
    path = bpy.data.objects[addon_module("addon.paths").path_object_name(arm, arm.pose.bones[child])]
    path.data.materials.append(bridge.ensure_material("SJ joint path", colour))


def _key_sliders(pose_bone, keys) -> None:
    """Key the coordinate sliders: keys = [(frame, (q0, q1, ...)), ...] (linear in between)."""
    for frame, values in keys:
        for i, v in enumerate(values):
            pose_bone[f"sj_q{i}"] = float(v)
            pose_bone.keyframe_insert(f'["sj_q{i}"]', frame=frame)


def _check(result, what: str) -> None:
    if result != {"FINISHED"}:
        raise RuntimeError(f"{what} returned {result}")


#: OpenSim body frame (y up the bone, x forward) -> Blender bone frame (Y head -> tail down the
#: leg): a half turn about z
C_LEG = np.diag([-1.0, -1.0, 1.0, 1.0])
#: OpenSim pelvis/thorax frame in the world (OpenSim y up = world z)
T_WORLD_OPENSIM = np.array([[1.0, 0, 0, 0], [0, 0, -1.0, 0], [0, 1.0, 0, 0], [0, 0, 0, 1.0]])
BONE = (0.93, 0.9, 0.82, 1.0)


def build_knee_rig(out: Path) -> None:
    """Femur/tibia armature; gait2392 knee captured, fitted (spline curve) and driven."""
    import bpy

    ref = addon_module("core.reference").KneeGait2392()
    bridge = addon_module("addon.bridge")
    display = addon_module("core.display")
    lo, hi = ref.range
    n = int(round(math.degrees(hi - lo))) + 1  # the reference's 1-degree grid (131 poses)
    scene = new_scene(30, n, "knee_fit_rig")
    T_hip = T_WORLD_OPENSIM @ _translation((0.0, 0.95, 0.0))  # OpenSim femur frame in the world
    T_rest = ref.pose(0.0)
    femur_len = float(np.linalg.norm(T_rest[:3, 3]))
    bones = [("femur", None, T_hip @ C_LEG, femur_len),
             ("tibia", "femur", T_hip @ T_rest @ C_LEG, 0.43)]
    arm = _armature("Knee", bones)
    tibia = arm.pose.bones["tibia"]

    # Pose the tibia over the OpenSim range, one reference pose per frame, and capture it.
    qs = np.linspace(lo, hi, n)
    T_pc = np.linalg.inv(C_LEG) @ ref.poses(qs) @ C_LEG  # tibia bone in femur bone
    basis = np.linalg.solve(bridge.read_rest_T_parent_child(tibia)[None], T_pc)
    bridge.write_bone_keyframes(arm, tibia, np.arange(1, n + 1), basis)
    s = tibia.spline_joints
    s.source, s.n_coordinates = "FRAME", 1
    s.frame_start, s.frame_end, s.frame_q_start, s.frame_q_end = 1, n, lo, hi
    _check(bpy.ops.spline_joints.capture_range(frame_start=1, frame_end=n, step=1), "capture_range")
    arm.animation_data_clear()
    s.fit_type, s.fit_frames, s.fit_order, s.fit_length_scale = "CURVE", 12, 4, 0.1
    _check(bpy.ops.spline_joints.fit(), "fit")
    _colour_path(arm, "tibia")
    _check(bpy.ops.spline_joints.drive_joint(), "drive_joint")
    frames = 96
    scene.frame_end = frames
    _key_sliders(tibia, [(1, (hi,)), (frames // 2, (lo,)), (frames, (hi,))])

    # The gait2392 bone meshes (CC BY 3.0) in their OpenSim body frames: the femur's and the
    # tibia's are the bones' frames turned by C_LEG (the knee's offset frames are identities),
    # the foot's hang from the tibia at the ankle (the ankle is not a joint of this rig).
    knee = addon_module("core.mechanisms.knee")
    bone_mesh = addon_module("core.reference").bone_mesh
    _bone_mesh(arm, "femur", "femur_r", bone_mesh("femur_r"), BONE, C_LEG)
    _bone_mesh(arm, "tibia", "tibia_r", bone_mesh("tibia_r"), BONE, C_LEG)
    _bone_mesh(arm, "tibia", "fibula", bone_mesh("fibula"), (0.88, 0.84, 0.74, 1.0), C_LEG)
    for name, file, at in knee.FOOT_MESHES:
        _bone_mesh(arm, "tibia", name, bone_mesh(file), BONE,
                   C_LEG @ _translation(np.add(knee.ANKLE_IN_TIBIA, at)))
    pelvis = bridge.write_mesh_object("pelvis", *display.box((0.16, 0.12, 0.24)), scene.collection)
    pelvis.data.materials.append(bridge.ensure_material("SJ pelvis", (0.85, 0.8, 0.7, 1.0)))
    pelvis.location = (0.0, 0.08, 1.02)

    # Frame the whole swing: knee and foot over the range.
    ankle = np.array([[0.0, -0.43, 0.0, 1.0], [0.2, -0.48, 0.0, 1.0], [-0.1, -0.48, 0.0, 1.0]])
    pts = [(T_hip @ T @ ankle.T).T[:, :3] for T in ref.poses(qs[::5])]
    pts += [np.array([[x, y, z] for x in (-0.08, 0.08) for y in (0.02, 0.14) for z in (0.9, 1.16)])]
    setup_render(scene, np.vstack(pts), VIEWS["knee_fit_rig"])
    save(scene, out / "knee_fit_rig.blend")


def build_scapula_rig(out: Path) -> None:
    """Thorax/scapula armature; the Seth 2019 grid captured, fitted (spline surface), driven."""
    import bpy

    ref = addon_module("core.reference").ScapulothoracicSeth2019()
    bridge = addon_module("addon.bridge")
    display = addon_module("core.display")
    scene = new_scene(30, 96, "scapulothoracic_fit_rig")
    T_thorax = T_WORLD_OPENSIM.copy()
    T_thorax[:3, 3] = (0.0, 0.0, 1.3)
    rest = ref.defaults.copy()
    bones = [("thorax", None, T_thorax, 0.12), ("scapula", "thorax", T_thorax @ ref.pose(rest), 0.08)]
    arm = _armature("Shoulder", bones)
    scap = arm.pose.bones["scapula"]
    s = scap.spline_joints
    s.n_coordinates, s.source, s.property_0, s.property_1 = 2, "PROPERTY", "abduction", "elevation"
    grid = ref.grid()
    rest_rel = bridge.read_rest_T_parent_child(scap)
    for q, T in zip(grid["q"].reshape(-1, 4), grid["T_thorax_scapula"].reshape(-1, 4, 4)):
        scap["abduction"], scap["elevation"] = float(q[0]), float(q[1])
        scap.matrix_basis = _matrix(np.linalg.solve(rest_rel, T))
        bpy.context.view_layer.update()
        _check(bpy.ops.spline_joints.capture_pose(), "capture_pose")
    scap.matrix_basis = _matrix(np.eye(4))
    s.fit_type, s.fit_grid, s.fit_method, s.fit_order, s.fit_length_scale = \
        "SURFACE", (8, 6), "coordinatewise", 4, 0.1
    _check(bpy.ops.spline_joints.fit(), "fit")
    _colour_path(arm, "scapula", (0.2, 0.35, 0.8, 1.0))
    _check(bpy.ops.spline_joints.drive_joint(), "drive_joint")
    lo, hi = np.array(s.range_min), np.array(s.range_max)
    mid, amp = 0.5 * (lo + hi), 0.35 * (hi - lo)
    keys = [(1 + 12 * k, mid + amp * np.array([math.cos(k * math.pi / 4), math.sin(k * math.pi / 4)]))
            for k in range(9)]
    _key_sliders(scap, keys)

    scap_mod = addon_module("core.mechanisms.scapulothoracic")
    _bone_mesh(arm, "thorax", "thorax", display.uv_sphere(ref.radii, 32, 16), (0.85, 0.72, 0.66, 0.35),
               ref.T_thorax_pjoint)
    ribs = bridge.write_poly_curve_object("ribs", scap_mod.rib_bands(ref.radii, ref.T_thorax_pjoint),
                                          scene.collection, bevel=0.004)
    ribs.data.materials.append(bridge.ensure_material("SJ ribs", (0.93, 0.88, 0.8, 1.0)))
    bridge.parent_to_bone(ribs, arm, "thorax", np.eye(4))
    # the blade lies in the tangent plane of the ellipsoid at the joint's contact frame
    _bone_mesh(arm, "scapula", "scapula blade", display.plate(scap_mod.SCAPULA_OUTLINE, scap_mod.PLATE),
               (0.95, 0.92, 0.85, 1.0), ref.T_scapula_cjoint @ _translation((0.0, 0.0, 0.006)))
    _bone_mesh(arm, "thorax", "clavicle", display.cylinder(0.009, 0.15, axis=2), BONE,
               _translation((0.0, 0.0, 0.08)))
    centre = T_thorax @ ref.T_thorax_pjoint
    box = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float) * ref.radii
    pts = box @ centre[:3, :3].T + centre[:3, 3]
    scap_pts = (T_thorax @ grid["T_thorax_scapula"].reshape(-1, 4, 4))[:, :3, 3]
    setup_render(scene, np.vstack([pts, scap_pts]), VIEWS["scapulothoracic_fit_rig"], margin=1.05)
    save(scene, out / "scapulothoracic_fit_rig.blend")


#: humerus swings captured for the reach cone: XYZ Euler angles (rad) relative to the rest pose
#: (hanging down), around an abducted, slightly flexed centre; X < 0 swings laterally, Z forward
SHOULDER_CENTRE = (-0.6, 0.0, 0.15)
SHOULDER_SWINGS = [(SHOULDER_CENTRE[0] + a * math.cos(t), 0.0, SHOULDER_CENTRE[2] + b * math.sin(t))
                   for t in np.linspace(0, 2 * math.pi, 12, endpoint=False)
                   for a, b in ((0.45, 0.6), (0.22, 0.3))] + [SHOULDER_CENTRE]


#: frames between which the humerus is held at its reach cone's limit
SHOULDER_HOLD = (22, 36)
#: the swing (exponential coordinates about the cone's centre, direction only) that drives the
#: humerus into its cone's boundary
SHOULDER_LIMIT_SWING = (0.0, 0.0, 1.0)
#: reach cone colours: the bone inside its cone, at the limit (|swing value| <= 1e-3)
CONE_INSIDE, CONE_AT_LIMIT = (0.1, 0.75, 0.25, 0.4), (0.95, 0.1, 0.05, 0.6)
LIMIT_TOL = 1e-3


def cone_limit_rotation(cone, swing, tol=1e-12):
    """XYZ Euler angles (3,) of the bone's basis rotation that swings it from the cone's centre
    in the direction ``swing`` (3,, orthogonal to the bone's Y axis) onto the cone's boundary:
    the swing angle at which the swing value (:func:`core.bones.cone_status`) is 0, found by
    bisection."""
    from mathutils import Matrix

    bones, so3 = addon_module("core.bones"), addon_module("core.lie.so3")
    reach = addon_module("core.fitting.reach_cone")
    N = reach.neutral_rotation(bones.BONE_AXIS, cone.axis)
    k = np.asarray(swing, dtype=float) / np.linalg.norm(swing)

    def value(t):
        T = np.eye(4)
        T[:3, :3] = N @ so3.exp(t * k)
        return bones.cone_status(cone, np.eye(4), T).swing_value

    lo, hi = 0.0, math.pi - 1e-6
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if value(mid) > 0.0 else (lo, mid)
    return tuple(Matrix((N @ so3.exp(lo * k)).tolist()).to_euler("XYZ"))


def _key_cone_colour(scene, pose_bone, cone, rest) -> None:
    """Key the reach cone's material colour at every frame: :data:`CONE_AT_LIMIT` where the
    bone's swing value is within :data:`LIMIT_TOL` of the limit, else :data:`CONE_INSIDE`
    (constant between keys)."""
    import bpy

    bridge, bones = addon_module("addon.bridge"), addon_module("core.bones")
    frames = np.arange(scene.frame_start, scene.frame_end + 1)
    colours = []
    for f in frames:
        scene.frame_set(int(f))
        g = bones.cone_status(cone, rest, bridge.read_pose_T_parent_child(pose_bone)).swing_value
        colours.append(CONE_AT_LIMIT if abs(g) <= LIMIT_TOL else CONE_INSIDE)
    mat = bpy.data.materials["SJ_ReachCone"]
    for i in range(4):
        bridge.write_fcurve_keys(mat, "diffuse_color", i, frames, np.array(colours)[:, i],
                                 interpolation="CONSTANT")
    scene.frame_set(scene.frame_start)


def build_shoulder_rig(out: Path) -> None:
    """A humerus on a ball joint with a fitted, drawn elliptical reach cone."""
    import bpy

    bridge = addon_module("addon.bridge")
    display = addon_module("core.display")
    scene = new_scene(30, 48, "shoulder_reach_cone")
    # Shoulder girdle bone pointing laterally (world -y), humerus hanging down and forward.
    T_sh = np.eye(4)
    T_sh[:3, :3] = np.diag([1.0, -1.0, -1.0])  # Y along world -y (the right shoulder)
    T_sh[:3, 3] = (0.0, 0.0, 1.4)
    T_hu = np.eye(4)
    T_hu[:3, :3] = [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]]  # Y down (-z world)
    T_hu[:3, 3] = (0.0, -0.18, 1.4)
    arm = _armature("Arm", [("girdle", None, T_sh, 0.18), ("humerus", "girdle", T_hu, 0.3)])
    hum = arm.pose.bones["humerus"]
    hum.rotation_mode = "XYZ"
    s = hum.spline_joints
    s.source, s.property_0 = "PROPERTY", "sample"  # a counter: the cone needs no coordinate
    for k, rot in enumerate(SHOULDER_SWINGS):
        hum["sample"] = float(k)
        hum.rotation_euler = rot
        bpy.context.view_layer.update()
        _check(bpy.ops.spline_joints.capture_pose(), "capture_pose")
    s.cone_margin = math.radians(3.0)
    _check(bpy.ops.spline_joints.fit_reach_cone(), "fit_reach_cone")
    s.cone_shape, s.cone_length = "ELLIPTICAL", 0.26
    _check(bpy.ops.spline_joints.draw_reach_cone(), "draw_reach_cone")
    rest = bridge.read_rest_T_parent_child(hum)
    cone = addon_module("addon.cones").cone_options(s)
    to_limit = cone_limit_rotation(cone, SHOULDER_LIMIT_SWING)
    inside = [(SHOULDER_CENTRE[0] + 0.36 * math.cos(t), 0.0, SHOULDER_CENTRE[2] + 0.48 * math.sin(t))
              for t in (0.0, math.pi / 2)]
    keys = [(1, inside[0]), (12, inside[1]), (SHOULDER_HOLD[0], to_limit), (SHOULDER_HOLD[1], to_limit),
            (48, inside[0])]  # sweep inside, swing out to the limit, hold it, come back
    frames = np.array([f for f, _ in keys], dtype=float)
    for i in range(3):  # linear: straight to the limit and exactly on it while held
        bridge.write_fcurve_keys(arm, hum.path_from_id("rotation_euler"), i, frames,
                                 np.array([rot[i] for _, rot in keys]))
    _key_cone_colour(scene, hum, cone, rest)
    _bone_mesh(arm, "humerus", "humerus shaft", display.cylinder(0.02, 0.26, axis=1), BONE,
               _translation((0.0, 0.15, 0.0)))
    _bone_mesh(arm, "humerus", "humeral head", display.uv_sphere((0.028,) * 3, 12, 6), BONE)
    _bone_mesh(arm, "humerus", "elbow", display.uv_sphere((0.03, 0.02, 0.022), 12, 6), BONE,
               _translation((0.0, 0.29, 0.0)))
    _bone_mesh(arm, "girdle", "girdle", display.cylinder(0.014, 0.16, axis=1), (0.85, 0.8, 0.7, 1.0),
               _translation((0.0, 0.08, 0.0)))
    torso = bridge.write_mesh_object("torso", *display.uv_sphere((0.1, 0.13, 0.26), 20, 10), scene.collection)
    torso.data.materials.append(bridge.ensure_material("SJ torso", (0.85, 0.72, 0.66, 1.0)))
    torso.location = (0.0, 0.02, 1.2)
    pts = [np.array([[x, y, z] for x in (-0.2, 0.2) for y in (-0.5, 0.16) for z in (0.95, 1.48)])]
    setup_render(scene, np.vstack(pts), VIEWS["shoulder_reach_cone"], margin=1.0)
    save(scene, out / "shoulder_reach_cone.blend")


#: distance (m) between the two walking models, across the direction of the walk (world y)
GAIT_SPACING = 0.8
GAIT_CREDITS = """gait2392_walk.blend: the OpenSim gait2392 model walking, twice.

Model, bone meshes and walking motion: gait2392 (opensim-org/opensim-models,
Models/Gait2392_Simbody/gait2392_thelen2003muscle.osim, its Geometry folder, and
Pipelines/Gait2392_Simbody/subject01_walk1_ik.mot) by Delp, Loan, Hoy, Zajac, Topp, Rosen,
Thelen, Anderson and Seth; joints after Delp et al. (1990, IEEE TBME 37:757-767); planar knee
after Yamaguchi & Zajac (1989, J. Biomech. 21:1-10). Licensed CC BY 3.0
(https://creativecommons.org/licenses/by/3.0/). Imported unmodified by Spline Joints; the
second model's knees are spline joints fitted to the model's own knees.
"""


def _label(text: str, arm, collection, rotation, offset=(0.12, 0.0, 0.87)):
    """A text object ``text`` that follows the armature's pelvis bone at ``offset`` (world m;
    the pelvis origin is at the sacrum, behind the hips, so forward and up over the head),
    turned by ``rotation`` (3, 3) to face the camera."""
    import bpy
    from mathutils import Matrix

    bridge = addon_module("addon.bridge")
    curve = bpy.data.curves.new(text, "FONT")
    curve.body = text
    curve.align_x, curve.align_y = "CENTER", "BOTTOM"
    curve.size = 0.11
    curve.materials.append(bridge.ensure_material("SJ label", (0.08, 0.1, 0.16, 1.0)))
    obj = bpy.data.objects.new(text, curve)
    collection.objects.link(obj)
    obj.matrix_world = Matrix(np.asarray(rotation, dtype=float).tolist()).to_4x4()
    follow = obj.constraints.new("COPY_LOCATION")
    follow.target, follow.subtarget = arm, "pelvis"
    follow.use_offset = True
    obj.location = offset
    return obj


def _visible_points(scene, frames) -> np.ndarray:
    """World corners of the bounding boxes of the scene's rendered meshes and texts at
    ``frames``, (M, 3)."""
    import bpy

    pts = []
    for f in frames:
        scene.frame_set(int(f))
        bpy.context.view_layer.update()
        for obj in scene.objects:
            if obj.type in ("MESH", "FONT") and not obj.hide_render:
                M = np.array(obj.matrix_world)
                pts.append(box_corners(obj) @ M[:3, :3].T + M[:3, 3])
    return np.vstack(pts)


def ground_quad(scene, quad: np.ndarray):
    """A mesh object "Ground": the quad of corners ``quad (4, 3)`` (counter-clockwise seen
    from above) in the ground's colour; only drawn (the scene's ground collider is a setting)."""
    bridge = addon_module("addon.bridge")
    ground = bridge.write_mesh_object("Ground", quad, np.array([[0, 1, 2, 3]]), scene.collection)
    ground.data.materials.append(bridge.ensure_material("SJ ground", (0.86, 0.87, 0.84, 1.0)))
    return ground


def _share_meshes(first, second) -> None:
    """Let the objects of collection ``second`` show the mesh data of the same file in
    ``first`` (the two imports read the same files), and remove the copies."""
    import bpy

    by_object = {o.name.split(".")[0]: o.data for o in first.objects if o.type == "MESH"}
    for obj in second.objects:
        if obj.type == "MESH" and obj.name.split(".")[0] in by_object:
            copy, obj.data = obj.data, by_object[obj.name.split(".")[0]]
            if copy.users == 0:
                bpy.data.meshes.remove(copy)


def build_gait_walk(out: Path) -> None:
    """gait2392 imported twice and walking, the second on fitted spline knees."""
    import bpy

    bridge = addon_module("addon.bridge")
    model, motion = OSIM_DATA / "gait2392_thelen2003muscle.osim", OSIM_DATA / "subject01_walk1_ik.mot"
    for f in (model, motion):
        if not f.is_file():
            raise SystemExit(f"error: {f} not found: gait2392_walk needs the shipped OpenSim data")
    scene = new_scene(60, 211, "gait2392_walk")
    view = np.asarray(VIEWS["gait2392_walk"], dtype=float)
    from mathutils import Vector

    facing = np.array(Vector((view / np.linalg.norm(view)).tolist()).to_track_quat("Z", "Y").to_matrix())
    arms = []
    for name, label, y, knees in (("gait2392 exact knee", "exact OpenSim knee", 0.0, ()),
                                  ("gait2392 fitted knee", "fitted spline knee", GAIT_SPACING,
                                   ("knee_r", "knee_l"))):
        _check(bpy.ops.spline_joints.import_osim(filepath=str(model)), "import_osim")
        arm = bpy.context.object
        arm.name = name
        arm.location = (0.0, y, 0.0)
        collection = arm.users_collection[0]
        collection.name = name
        _check(bpy.ops.spline_joints.import_osim_motion(filepath=str(motion)), "import_osim_motion")
        for joint in knees:
            _check(bpy.ops.spline_joints.fit_osim_joint(joint=joint), f"fit_osim_joint {joint}")
        _label(label, arm, collection, facing)
        arms.append(arm)
    _share_meshes(arms[0].users_collection[0], arms[1].users_collection[0])
    pts = _visible_points(scene, range(scene.frame_start, scene.frame_end + 1, 10))
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    m = 0.2  # the ground reaches this far (m) beyond the feet
    quad = np.array([[lo[0] - m, lo[1] - m, lo[2]], [hi[0] + m, lo[1] - m, lo[2]],
                     [hi[0] + m, hi[1] + m, lo[2]], [lo[0] - m, hi[1] + m, lo[2]]])
    ground_quad(scene, quad)
    setup_render(scene, np.vstack([pts, quad]), view, margin=1.04)
    credits = bpy.data.texts.new("CREDITS")
    credits.write(GAIT_CREDITS)
    save(scene, out / "gait2392_walk.blend")


# --- linkages -------------------------------------------------------------------------------

#: offset (m) of a demo's released copy (the dynamics bake) from its driven copy: beside it
#: along x, as the cameras of the plane linkages look from -y
RELEASED_OFFSET = {"four_bar_linkage": (3.2, 0.0, 0.0), "scissor_lift": (2.0, 0.0, 0.0)}


def _linkage_motion_points(scene, item) -> np.ndarray:
    """World corners of a released linkage's bodies over its core simulation (its dynamics
    bake, not run here), (M, 3)."""
    lb = addon_module("addon.linkage_bridge")
    linkage, objects = lb.read_linkage(scene, item, driven=False)
    motion = addon_module("core.linkage").simulate_linkage(
        linkage, item.duration, scene.render.fps / scene.render.fps_base, item.substeps)
    pts = [box_corners(o)[None] @ np.swapaxes(motion.poses[:, k, :3, :3], 1, 2) + motion.poses[:, k, None, :3, 3]
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
    scene = new_scene(fps, frames, name)
    demo = {"four_bar_linkage": "four_bar", "scissor_lift": "scissor_lift", "door_stop": "door"}[name]
    _check(bpy.ops.spline_joints.add_demo_linkage(demo=demo, driven=demo != "door"), "add_demo_linkage")
    items = scene.spline_joints_linkages
    items[0].duration = (frames - 1) / fps
    if demo == "four_bar":
        crank = items[0].driver
        crank.rotation_mode = "XYZ"
        T0 = addon_module("addon.linkage_bridge").object_pose(crank)
        for f in range(1, frames + 1):
            turn = 2 * math.pi * (f - 1) / (frames - 1)
            R = addon_module("core.lie").so3.exp(np.array([0.0, -turn, 0.0]))
            crank.matrix_world = _matrix(addon_module("core.lie").se3.from_rp(R @ T0[:3, :3], R @ T0[:3, 3]))
            crank.keyframe_insert("location", frame=f)
            crank.keyframe_insert("rotation_euler", frame=f)
    elif demo == "scissor_lift":
        item = items[0]
        for f, x in ((1, 0.0), (25, -0.35), (49, 0.15), (73, 0.0)):
            item.drive_value = x
            scene.keyframe_insert('spline_joints_linkages[0].drive_value', frame=f)
    if demo == "door":  # the wall beside the opening and the stop the shut door rests on
        bridge, display = addon_module("addon.bridge"), addon_module("core.display")
        for label, size, centre in (("wall left", (0.6, 0.1, 2.2), (-0.32, -0.05, 1.1)),
                                    ("wall right", (0.6, 0.1, 2.2), (1.22, -0.05, 1.1)),
                                    ("stop", (0.06, 0.05, 0.3), (0.8, -0.045, 1.0))):
            obj = bridge.write_display_object(label, display.box(size), f"SJ {label.split()[0]}",
                                              (0.8, 0.8, 0.78, 1.0) if label != "stop" else (0.75, 0.2, 0.15, 1.0),
                                              scene.collection)
            obj.location = centre
    if name in RELEASED_OFFSET:
        _check(bpy.ops.spline_joints.add_demo_linkage(demo=demo, driven=False, offset=RELEASED_OFFSET[name]),
               "add_demo_linkage")
        items[1].duration = (frames - 1) / fps
    for item in items:
        item.mode = "ASSEMBLY" if item.live else "DYNAMICS"
    pts = [_visible_points(scene, range(1, frames + 1, 4))]
    pts += [_linkage_motion_points(scene, item) for item in items if item.mode == "DYNAMICS"]
    setup_render(scene, np.vstack(pts), VIEWS.get(name, DEFAULT_VIEW))
    save(scene, out / f"{name}.blend")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(OUT), help="output folder (default demo_blends/)")
    parser.add_argument("--only", nargs="*", help="file names (without .blend) to write")
    parser.add_argument("--zip", help="extension zip to install (default: build it)")
    parser.add_argument("--jobs", type=int, default=2, help="processes for the framing simulations")
    args = parser.parse_args(argv)
    demos = list(_repo_core().DEMOS)
    names = args.only or demos + list(RIGS) + list(LINKAGES)
    unknown = sorted(set(names) - set(demos) - set(RIGS) - set(LINKAGES))
    if unknown:
        print(f"error: unknown demo(s) {unknown}; choose from {demos + list(RIGS) + list(LINKAGES)}",
              file=sys.stderr)
        return 1
    out = Path(args.out)
    todo = [n for n in names if n in demos]
    zip_path = args.zip or build_zip()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:  # before bpy: spawn-free fork
        framing = dict(zip(todo, pool.map(motion_points, todo)))
    start_blender(zip_path)
    builders = {"knee_fit_rig": build_knee_rig, "scapulothoracic_fit_rig": build_scapula_rig,
                "shoulder_reach_cone": build_shoulder_rig, "gait2392_walk": build_gait_walk}
    if "character_rig" in names:
        from demo_character import build_character_rig  # it imports this module

        builders["character_rig"] = build_character_rig
    if "ragdoll_steps" in names:
        from demo_ragdoll import build_ragdoll_steps  # it imports this module

        builders["ragdoll_steps"] = build_ragdoll_steps
    if "chain_in_bowl" in names:
        from demo_bowl import build_chain_in_bowl  # it imports this module

        builders["chain_in_bowl"] = build_chain_in_bowl
    for name in names:
        if name in builders:
            builders[name](out)
        elif name in LINKAGES:
            build_linkage_file(name, out)
        else:
            build_mechanism_file(name, *framing[name], out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
