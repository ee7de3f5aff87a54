"""The Blender toolkit that the scripts and the Blender tests share: a sandboxed Blender
session with the extension installed, scene building, rendering, and baking an open file.

* Session: :func:`host_platform`, :func:`build_zip` (scripts/build_extension.py's zip for
  this Blender),
  :func:`install_extension` (the one place that installs a zip into Blender's user folder),
  :func:`start_blender` (bpy with a sandboxed user folder and the extension enabled),
  :func:`addon_module`.
* Scenes: :func:`new_scene`, :func:`armature`, :func:`bone_mesh`, :func:`ground_quad`,
  :func:`colour_path`, :func:`key_sliders`, :func:`setup_render` (an orthographic camera
  framing given points at :data:`RESOLUTION`, a sun light and Workbench settings),
  :func:`smooth_meshes`.
* Pictures: :func:`render_frame`, :func:`contact_sheet`, :func:`save_png`,
  :func:`camera_pixels` (points projected through a scene's camera).
* Baking: :func:`bake_open_file`, :func:`bake_all` and :func:`bake_rigs` (what scripts/bake.py,
  the main job, the extension build and the tests bake with), :func:`remove_temporaries`.

bpy is imported inside the functions (import this module first, then start Blender), and the
repository's ``core`` only inside the functions that need it: scripts/bake.py sends this file
with itself to Dask workers.
"""

from __future__ import annotations

import importlib
import io
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MODULE = "bl_ext.user_default.spline_joints"
#: render size of every demo camera (16:9; the main job's tiles and the documentation's animations are
#: rendered at fractions of it)
RESOLUTION = (640, 360)
BACKGROUND = (0.93, 0.94, 0.96)
#: view direction (from the target towards the camera) of :func:`setup_render`: front-right, above
DEFAULT_VIEW = (0.55, -1.0, 0.35)
#: environment variable, a test hook: a complete temporary of :func:`bake_open_file` waits that
#: many seconds before it is renamed into place, so a test can kill the process at that point
PAUSE_ENV = "SPLINE_JOINTS_BAKE_PAUSE_BEFORE_RENAME"
# Temporaries of a .blend: core.io.atomic_path's .NAME.PID.TOKEN.tmp.blend (TOKEN: 8 hex digits),
# also without TOKEN (as bake.py 0.1.0 named them), each with or without the "@" Blender appends
# while it writes.
TEMPORARY = re.compile(r"\A\..+?\.blend\.(?P<pid>\d+)(?:\.[0-9a-f]{8})?\.tmp\.blend@?\Z")


# ------------------------------------------------------------------------------------------
# Session
# ------------------------------------------------------------------------------------------

#: (``sys.platform`` without its digits, ``platform.machine()``) -> Blender's name of the
#: platform, as the manifest's ``platforms`` list and the zips' names have it
PLATFORMS = {("linux", "x86_64"): "linux-x64", ("win32", "AMD64"): "windows-x64",
             ("darwin", "arm64"): "macos-arm64", ("darwin", "x86_64"): "macos-x64"}


def host_platform() -> str | None:
    """Blender's name of this machine's platform (:data:`PLATFORMS`), None for a platform
    the extension is not built for."""
    import platform

    return PLATFORMS.get((sys.platform.rstrip("0123456789"), platform.machine()))


def build_zip(platform: str | None = None) -> str:
    """Build (or reuse) the extension zip of ``platform`` (default :func:`host_platform`) for
    the Python line of this interpreter's Blender (the bpy module beside it); returns its
    path."""
    platform = platform or host_platform()
    if platform is None:
        raise SystemExit(f"error: the extension is built for {sorted(PLATFORMS.values())}, "
                         "not for this machine's platform")
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_extension.py"), "--platform",
                           platform, "--python", f"{sys.version_info.major}.{sys.version_info.minor}"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"error: building the extension failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout.strip().splitlines()[-1]


def install_extension(zip_path) -> set:
    """Install the extension zip ``zip_path`` into the ``user_default`` repository of the
    Blender user folder (BLENDER_USER_RESOURCES, read when bpy is imported) and enable it:
    ``bpy.ops.extensions.package_install_files(..., enable_on_install=True)``. Returns the
    operator's result set."""
    import bpy

    return bpy.ops.extensions.package_install_files(filepath=os.path.abspath(zip_path), repo="user_default",
                                                    enable_on_install=True)


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
        install_extension(zip_path or build_zip())
    if not addon_utils.check(MODULE)[1]:
        bpy.ops.preferences.addon_enable(module=MODULE)
    if MODULE not in bpy.context.preferences.addons:
        raise RuntimeError(f"{MODULE} could not be enabled from {ext_dir}")
    return bpy


def addon_module(name: str):
    """A module of the installed extension, e.g. ``addon_module("addon.bridge")``."""
    return importlib.import_module(f"{MODULE}.{name}")


# ------------------------------------------------------------------------------------------
# Scenes
# ------------------------------------------------------------------------------------------

def new_scene(fps: int, frame_end: int, name: str):
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.name = name
    scene.render.fps, scene.render.fps_base = int(fps), 1.0
    scene.frame_start, scene.frame_end, scene.frame_current = 1, int(frame_end), 1
    scene.unit_settings.system, scene.unit_settings.scale_length = "METRIC", 1.0
    return scene


def matrix(a):
    from mathutils import Matrix

    return Matrix(np.asarray(a, dtype=float).tolist())


def translation(p):
    T = np.eye(4)
    T[:3, 3] = p
    return T


def armature(name: str, bones):
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
        eb.matrix = matrix(T)
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


def bone_mesh(arm, bone: str, name: str, mesh, colour, T_bone_obj=None):
    """A mesh (vertices, faces) parented to a bone at ``T_bone_obj`` (bone head frame)."""
    import bpy

    bridge = addon_module("addon.bridge")
    obj = bridge.write_mesh_object(name, mesh[0], mesh[1], bpy.context.scene.collection)
    obj.data.materials.append(bridge.ensure_material(f"SJ {name}", colour))
    bridge.parent_to_bone(obj, arm, bone, np.eye(4) if T_bone_obj is None else T_bone_obj)
    return obj


def colour_path(arm, child: str, colour=(0.85, 0.15, 0.1, 1.0)) -> None:
    """Give the fitted-path curve drawn by spline_joints.fit a solid colour."""
    import bpy

    bridge = addon_module("addon.bridge")
    path = bpy.data.objects[addon_module("addon.paths").path_object_name(arm, arm.pose.bones[child])]
    path.data.materials.append(bridge.ensure_material("SJ joint path", colour))


def fit_curve_to_keys(arm, pose_bone, basis, lo: float, hi: float) -> None:
    """Key the bone's ``basis (n, 4, 4)`` on frames 1..n, capture them as one coordinate from
    ``lo`` to ``hi``, clear the keys and fit a spline curve joint to the samples (12 frames,
    order 4, length scale 0.1), its path drawn in the path colour (:func:`colour_path`)."""
    import bpy

    n = len(basis)
    addon_module("addon.bridge").write_bone_keyframes(arm, pose_bone, np.arange(1, n + 1), basis)
    s = pose_bone.spline_joints
    s.source, s.n_coordinates = "FRAME", 1
    s.frame_start, s.frame_end, s.frame_q_start, s.frame_q_end = 1, n, lo, hi
    check(bpy.ops.spline_joints.capture_range(frame_start=1, frame_end=n, step=1), "capture_range")
    arm.animation_data_clear()
    s.fit_type, s.fit_frames, s.fit_order, s.fit_length_scale = "CURVE", 12, 4, 0.1
    check(bpy.ops.spline_joints.fit(), "fit")
    colour_path(arm, pose_bone.name)


def key_sliders(pose_bone, keys) -> None:
    """Key the coordinate sliders: keys = [(frame, (q0, q1, ...)), ...] (linear in between)."""
    for frame, values in keys:
        for i, v in enumerate(values):
            pose_bone[f"sj_q{i}"] = float(v)
            pose_bone.keyframe_insert(f'["sj_q{i}"]', frame=frame)


def check(result, what: str) -> None:
    if result != {"FINISHED"}:
        raise RuntimeError(f"{what} returned {result}")


def ground_quad(scene, quad: np.ndarray):
    """A mesh object "Ground": the quad of corners ``quad (4, 3)`` (counter-clockwise seen
    from above) in the ground's colour; only drawn (the scene's ground collider is a setting)."""
    bridge = addon_module("addon.bridge")
    ground = bridge.write_mesh_object("Ground", quad, np.array([[0, 1, 2, 3]]), scene.collection)
    ground.data.materials.append(bridge.ensure_material("SJ ground", (0.86, 0.87, 0.84, 1.0)))
    return ground


def ground_under(scene, points: np.ndarray, margin: float):
    """:func:`ground_quad` under ``points (M, 3)``: level with the lowest point, reaching
    ``margin`` (m) beyond them in x and y; returns its corners (4, 3)."""
    lo, hi = points.min(axis=0), points.max(axis=0)
    quad = np.array([[lo[0] - margin, lo[1] - margin, lo[2]], [hi[0] + margin, lo[1] - margin, lo[2]],
                     [hi[0] + margin, hi[1] + margin, lo[2]], [lo[0] - margin, hi[1] + margin, lo[2]]])
    ground_quad(scene, quad)
    return quad


def box_corners(obj) -> np.ndarray:
    """The 8 corners (8, 3) of an object's bounding box in its own frame (``bound_box``)."""
    return np.array([tuple(c) for c in obj.bound_box], dtype=float)


def visible_points(scene, frames) -> np.ndarray:
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


def smooth_meshes(scene, angle: float = math.radians(35.0)) -> None:
    """Smooth shading with sharp edges above ``angle`` (round bodies look round, boxes and
    cylinder caps stay crisp) on every mesh of the scene."""
    for obj in scene.objects:
        if obj.type == "MESH":
            obj.data.shade_smooth()
            obj.data.set_sharp_from_angle(angle=angle)


# ------------------------------------------------------------------------------------------
# Pictures
# ------------------------------------------------------------------------------------------

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

    from core.io import atomic_write

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    Image.fromarray(to_rgb8(image)).save(buffer, format="PNG", optimize=True)
    atomic_write(path, buffer.getvalue())


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


# ------------------------------------------------------------------------------------------
# Baking an open file (in a process with bpy)
# ------------------------------------------------------------------------------------------

def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_temporaries(out_dir: str, pid: int | None = None) -> list[str]:
    """Remove the .blend temporaries in ``out_dir`` written by process ``pid``, or with None those
    of every process that no longer runs; returns the removed names."""
    removed = []
    for name in os.listdir(out_dir):
        match = TEMPORARY.match(name)
        if match and (int(match["pid"]) == pid if pid is not None else not pid_alive(int(match["pid"]))):
            try:
                os.remove(os.path.join(out_dir, name))
            except FileNotFoundError:  # another process cleaned it meanwhile
                continue
            removed.append(name)
    return removed


def bake_rigs(scene) -> list[dict]:
    """Bake every simulated rig of ``scene``: each armature with simulated bones, and the
    scene's simulated objects as one rig, with the add-on's ``RigJob``, ``RigBatch`` (several
    rigs simulated together, colliding) and ``write_keys`` as
    ``spline_joints.bake_rig(which='ALL')`` does (over the scene's frame range). Every rig is
    read and simulated before any is written, so when one fails (RuntimeError naming it and
    saying why) the scene is unchanged.

    Returns one record per rig: ``rig`` (scene/armature, or scene/objects), ``frames``,
    ``bodies`` (simulated), ``wall`` (s, the simulation), ``worst_excess_deg`` (the largest
    excess over any joint limit at any frame, deg; None without limits), ``energy_drift``
    (relative; None unless the rig is passive), ``contacts`` (the most contacts in a frame)
    and ``worst_penetration_mm`` (the deepest overlap of any substep, mm), both None without
    contacts, ``actions`` (the new actions' names) and ``report`` (the operator's report
    sentence)."""
    rig_scene = importlib.import_module(f"{MODULE}.addon.rig_scene")
    rig_jobs = importlib.import_module(f"{MODULE}.addon.rig_jobs")
    targets = rig_scene.simulated_armatures(scene) + ([None] if rig_scene.simulated_objects(scene) else [])
    labels, jobs = [], []
    for target in targets:
        labels.append(f"{scene.name}/{target.name if target is not None else 'objects'}")
        try:
            jobs.append(rig_jobs.RigJob(scene, target, len(targets) > 1))
        except ValueError as exc:
            raise RuntimeError(f"rig {labels[-1]}: {exc}") from None
    if not jobs:
        return []
    try:
        batch = rig_jobs.RigBatch(jobs, "Bake", None)
    except ValueError as exc:
        raise RuntimeError(f"rigs {', '.join(labels)}: {exc}") from None
    batch.simulate()
    done = []
    for label, job in zip(labels, jobs):
        try:
            result = job.checked_result()
        except ValueError as exc:
            raise RuntimeError(f"rig {label}: {exc}") from None
        if result is None:
            raise RuntimeError(f"rig {label}: the simulation was cancelled; nothing written")
        done.append((label, job, result))
    records = []
    for label, job, result in done:
        actions, notes = rig_jobs.write_keys(job, result)
        records.append({"rig": label, "frames": len(result.times),
                        "bodies": sum(not b.kinematic for b in job.bodies), "wall": result.wall_time,
                        "worst_excess_deg": (math.degrees(result.worst_violation)
                                             if any(job.rig.limits) else None),
                        "energy_drift": result.energy_drift, "actions": actions,
                        "contacts": (None if result.contacts is None
                                     else int(result.contacts.max(initial=0))),
                        "worst_penetration_mm": (None if result.contacts is None
                                                 else 1000.0 * result.worst_penetration),
                        "report": "; ".join([job.report(result), *notes])})
    return records


def bake_all() -> tuple[list[str], list[dict]]:
    """Bake every mechanism and linkage of every scene of the open file with its Bake operator,
    and the scene's simulated rigs (:func:`bake_rigs`). Returns the mechanisms' and linkages'
    ``scene/name`` and the rigs' records. RuntimeError when one does not bake."""
    import bpy

    window = bpy.context.window
    counts, rigs = [], []
    for scene in bpy.data.scenes:
        if window is not None:
            window.scene = scene
        for what, items, bake in (("", scene.spline_joints_mechanisms, bpy.ops.spline_joints.bake_dynamics),
                                  ("linkage ", scene.spline_joints_linkages,
                                   bpy.ops.spline_joints.bake_linkage)):
            for i, item in enumerate(items):
                with bpy.context.temp_override(scene=scene):
                    status = bake(index=i)
                if status != {"FINISHED"}:
                    raise RuntimeError(f"baking {what}{scene.name}/{item.name} ended {sorted(status)} without "
                                       "a message; open the file in Blender and bake it there to see why")
                counts.append(f"{scene.name}/{item.name}")
        with bpy.context.temp_override(scene=scene):
            rigs += bake_rigs(scene)
    return counts, rigs


def bake_open_file(out_dir: str, name: str, rig_records: list | None = None) -> str:
    """Bake all mechanisms, linkages and simulated rigs (:func:`bake_rigs`) of the open file
    and save it atomically as out_dir/name; the rigs' records are appended to ``rig_records``
    when given.

    Temporaries left in out_dir by processes that no longer run are removed first. RuntimeError
    when a mechanism or rig does not bake; then nothing is written.
    """
    import bpy

    files = importlib.import_module(f"{MODULE}.core.io")
    counts, rigs = bake_all()
    if rig_records is not None:
        rig_records.extend(rigs)
    os.makedirs(out_dir, exist_ok=True)
    remove_temporaries(out_dir)
    final = os.path.join(out_dir, name)
    with files.atomic_path(final) as tmp:
        bpy.ops.wm.save_as_mainfile(filepath=tmp, copy=True, compress=False)
        time.sleep(float(os.environ.get(PAUSE_ENV, "0")))
    text = f"{final}: baked {len(counts)} mechanism(s)" + (f" ({', '.join(counts)})" if counts else "")
    if rigs:
        text += f" and {len(rigs)} rig(s) (" + "; ".join(f"{r['rig']}: {r['report']}" for r in rigs) + ")"
    return text
