"""How the demos are seen in pictures: fading motion trails, titled and time-labelled frames,
contact sheets and animated images (bpy for rendering, Pillow for text and files).

Used by scripts/main.py (contact sheets) and the picture scripts beside this module (the documentation's
stills and animations); the demos' cameras are set by their builders
(:func:`scripts.blender_kit.setup_render`), and :func:`close_up` points one at a detail.

Trails. A still cannot show motion, so every rendered frame of the demos in :data:`TRAILS`
carries a trail: the path of a chosen point over the last :data:`TRAIL_SECONDS` before the
frame, a thin tube that fades from the background colour (oldest) to the body's colour and
widens towards the point (the newest end). The rule that picks the point is documented at
:data:`TRAILS`. Tubes are :data:`TRAIL_PX` pixels wide at their newest end in the rendered
frame whatever its size (the camera's ``ortho_scale`` sets metres per pixel). The trail
objects exist only while the frame renders (:func:`render`); the file is left as it was.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scripts import blender_kit as kit

#: the point whose recent path is drawn, per demo (mechanisms and demo linkages; none elsewhere):
#: ``"tip"`` = the far end of the chain: the mesh vertex of the last visible body farthest, at
#: the first frame, from the mean origin of the other bodies (a chain's free end);
#: ``"each:PREFIX"`` = the drawn centre (bounding-box centre) of every visible body whose
#: display name starts with PREFIX (every bead, every plane)
TRAILS = {"hinge_chain": "tip", "spherical_chain": "tip", "sliding_chain": "tip",
          "skeleton_chain": "tip", "beads_on_a_wire": "each:bead", "globe": "each:plane_",
          "four_bar": "each:coupler"}
#: seconds of motion a trail shows, its pieces (each one shade) and its newest width (pixels)
TRAIL_SECONDS = 1.0
TRAIL_PIECES = 8
TRAIL_PX = 3.0
#: text: size of the title and of the per-frame labels (pixels), colours
TITLE_PX = 16
LABEL_PX = 13
INK = (25, 30, 45)


@dataclass
class Trail:
    """One traced point: ``track`` (F, 3) world positions at the frames ``frames`` (F,) and the
    trail's RGB colour (3,) in [0, 1]."""

    frames: np.ndarray
    track: np.ndarray
    colour: np.ndarray


def _mechanism_bodies(scene):
    """(demo, [(display name, object)]) of every mechanism and demo linkage of the scene,
    render-visible bodies (a linkage's demo is its name up to a ".NNN" suffix)."""
    out = []
    for item in scene.spline_joints_linkages:
        prefix = f"{item.name}."
        bodies = {j.body2 for j in item.joints if j.body2 is not None and not j.body2.hide_render}
        out.append((item.name.split(".")[0], [(o.name[len(prefix):] if o.name.startswith(prefix) else o.name, o)
                                              for o in sorted(bodies, key=lambda o: o.name)]))
    for item in scene.spline_joints_mechanisms:
        prefix = f"{item.name}."
        bodies = [(ref.object.name[len(prefix):] if ref.object.name.startswith(prefix) else ref.object.name,
                   ref.object) for ref in item.bodies
                  if ref.object is not None and ref.object.type == "MESH" and not ref.object.hide_render]
        out.append((item.demo, bodies))
    return out


def _trail_points(scene) -> list:
    """[(object, local point (3,), RGB colour (3,))] of the scene's traced points (:data:`TRAILS`),
    chosen at the scene's first frame."""
    scene.frame_set(scene.frame_start)
    picks = []
    for demo, bodies in _mechanism_bodies(scene):
        rule = TRAILS.get(demo)
        if rule is None or not bodies:
            continue
        if rule == "tip":
            *others, (_, last) = bodies
            M = np.array(last.matrix_world)
            verts = np.array([tuple(v.co) for v in last.data.vertices])
            world = verts @ M[:3, :3].T + M[:3, 3]
            ref = (np.mean([np.array(o.matrix_world)[:3, 3] for _, o in others], axis=0) if others
                   else M[:3, 3])
            picks.append((last, verts[np.argmax(np.linalg.norm(world - ref, axis=1))]))
        else:
            prefix = rule.split(":", 1)[1]
            picks += [(o, kit.box_corners(o).mean(axis=0)) for name, o in bodies if name.startswith(prefix)]
    return [(o, p, np.array(o.active_material.diffuse_color[:3]) if o.active_material else np.full(3, 0.3))
            for o, p in picks]


def trails(scene, first: int, last: int) -> list[Trail]:
    """The :class:`Trail` of every traced point of the scene (:data:`TRAILS`) over frames
    ``first - fps * TRAIL_SECONDS`` (not before the scene's start) to ``last``, each frame
    evaluated once (``frame_set``)."""
    points = _trail_points(scene)
    if not points:
        return []
    fps = scene.render.fps / scene.render.fps_base
    frames = np.arange(max(scene.frame_start, first - round(fps * TRAIL_SECONDS)), last + 1)
    track = np.empty((len(frames), len(points), 3))
    for i, f in enumerate(frames):
        scene.frame_set(int(f))
        for j, (obj, p, _) in enumerate(points):
            M = np.array(obj.matrix_world)
            track[i, j] = M[:3, :3] @ p + M[:3, 3]
    return [Trail(frames, track[:, j], colour) for j, (_, _, colour) in enumerate(points)]


def _pixel_metres(scene) -> float:
    """Metres per pixel at the scene camera's target in the current render size."""
    cam = scene.camera.data
    width = max(scene.render.resolution_x, scene.render.resolution_y)
    if cam.type == "ORTHO":
        return cam.ortho_scale / width
    return 2e-3  # perspective cameras: about a pixel at a few metres


def _trail_material(colour, shade: float):
    """The opaque material of a trail piece: ``colour`` mixed into the background by ``shade``
    in (0, 1] (1: the full colour)."""
    import bpy

    rgb = np.asarray(kit.BACKGROUND) + shade * (np.asarray(colour) - np.asarray(kit.BACKGROUND))
    name = "SJ trail " + "".join(f"{round(255 * c):02x}" for c in rgb)
    mat = bpy.data.materials.get(name) or bpy.data.materials.new(name)
    mat.diffuse_color = (*rgb, 1.0)
    return mat


def draw_trails(scene, trail_list: list[Trail], frame: int) -> list:
    """Curve objects showing each trail's last :data:`TRAIL_SECONDS` up to ``frame`` (call
    :func:`remove_trails` on the result when the frame is rendered)."""
    import bpy

    fps = scene.render.fps / scene.render.fps_base
    radius = 0.5 * TRAIL_PX * _pixel_metres(scene)
    objects = []
    for k, trail in enumerate(trail_list):
        keep = (trail.frames <= frame) & (trail.frames >= frame - fps * TRAIL_SECONDS)
        pts = trail.track[keep]
        if len(pts) < 2:
            continue
        curve = bpy.data.curves.new(f"SJ trail {k}", "CURVE")
        curve.dimensions, curve.bevel_depth, curve.bevel_resolution = "3D", radius, 2
        curve.use_fill_caps = True
        bounds = np.linspace(0, len(pts) - 1, TRAIL_PIECES + 1).round().astype(int)
        # oldest piece first; a piece shorter than two points is skipped
        for piece, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
            if b <= a:
                continue
            shade = (piece + 1) / TRAIL_PIECES
            curve.materials.append(_trail_material(trail.colour, shade))
            spline = curve.splines.new("POLY")
            spline.points.add(b - a)
            spline.points.foreach_set("co", np.column_stack([pts[a:b + 1], np.ones(b - a + 1)]).ravel())
            spline.points.foreach_set("radius", np.linspace(0.35 + 0.65 * piece / TRAIL_PIECES,
                                                            0.35 + 0.65 * shade, b - a + 1))
            spline.material_index = len(curve.materials) - 1
        obj = bpy.data.objects.new(curve.name, curve)
        scene.collection.objects.link(obj)
        objects.append(obj)
    return objects


def remove_trails(objects: list) -> None:
    """Delete the curve objects of :func:`draw_trails` and their data."""
    import bpy

    for obj in objects:
        curve = obj.data
        bpy.data.objects.remove(obj)
        bpy.data.curves.remove(curve)


def render(scene, frame: int, resolution, trail_list: list[Trail] = ()) -> np.ndarray:
    """Workbench render (H, W, 4) float of ``frame`` at ``resolution`` with the trails of
    ``trail_list`` drawn up to that frame (:func:`scripts.blender_kit.render_frame`)."""
    scene.render.resolution_x, scene.render.resolution_y = resolution
    objects = draw_trails(scene, list(trail_list), frame)   # render_frame sets the frame
    try:
        return kit.render_frame(scene, frame)
    finally:
        remove_trails(objects)


def time_label(scene, frame: int) -> str:
    """``"t = 0.40 s"``: the scene time of ``frame`` (seconds since the first frame)."""
    return f"t = {(frame - scene.frame_start) * scene.render.fps_base / scene.render.fps:.2f} s"


def title_line(scene, name: str) -> str:
    """One line saying what a demo file shows: for a mechanism its title, bodies (drawn, of
    the model) and degrees of freedom; for a linkage its joints and what its bake is; for a
    rig its armatures' bones and fitted joints."""
    parts = []
    build = kit.addon_module("addon.mechanism_bake").build_mechanism
    for item in scene.spline_joints_mechanisms:
        mech = build(item.demo, item.duration, item.substeps, scene)
        parts.append(f"{item.title}: {len(item.bodies)} bodies, {int(mech.ndof)} DOF")
    for item in scene.spline_joints_linkages:
        what = "live assembly" if item.mode == "ASSEMBLY" else "dynamics"
        parts.append(f"{item.name}: {len(item.joints)} joints, {what}")
    arms = [o for o in scene.objects if o.type == "ARMATURE"]
    if arms:
        fitted = sum(1 for a in arms for pb in a.pose.bones if pb.spline_joints.joint_json)
        fitted += sum(len(a.data.spline_joints_osim.fits) for a in arms)
        cones = sum(1 for a in arms for pb in a.pose.bones
                    if not pb.spline_joints.joint_json and len(pb.spline_joints.samples))
        rig = f"{len(arms)} armature{'s' * (len(arms) > 1)}, {sum(len(a.pose.bones) for a in arms)} bones"
        rig += f", {fitted} fitted spline joint{'s' * (fitted != 1)}" if fitted else ""
        rig += f", {cones} fitted reach cone{'s' * (cones != 1)}" if cones else ""
        parts.append(rig)
    return f"{name}  |  " + "; ".join(parts)


def _font(px: int):
    from PIL import ImageFont

    return ImageFont.load_default(size=px)


def label(image: np.ndarray, text: str, corner: str = "bottom-left", px: int = LABEL_PX) -> np.ndarray:
    """A copy (H, W, 3) uint8 of ``image`` with ``text`` on a light box in a corner
    ("bottom-left" or "top-left")."""
    from PIL import Image, ImageDraw

    img = Image.fromarray(kit.to_rgb8(image))
    draw = ImageDraw.Draw(img, "RGBA")
    font = _font(px)
    x0, y0, x1, y1 = draw.textbbox((0, 0), text, font=font)
    pad = 3
    x = pad + 1
    y = (img.height - (y1 - y0) - 2 * pad - 1) if corner == "bottom-left" else pad + 1
    draw.rectangle((x - pad, y - pad, x + x1 - x0 + pad, y + y1 - y0 + pad), fill=(255, 255, 255, 190))
    draw.text((x - x0, y - y0), text, font=font, fill=INK)
    return np.asarray(img)


def titled_sheet(tiles: list, columns: int, title: str, labels: list[str], gap: int = 4) -> np.ndarray:
    """Contact sheet (H, W, 3) uint8: ``title`` on a white band above the tiles
    (:func:`scripts.blender_kit.contact_sheet`), each tile labelled (e.g. its time) in its lower-left corner."""
    from PIL import Image, ImageDraw

    tiles = [label(t, text) for t, text in zip(tiles, labels)]
    sheet = kit.to_rgb8(kit.contact_sheet([t.astype(np.float32) / 255.0 for t in tiles], columns, gap))
    font = _font(TITLE_PX)
    band = TITLE_PX + 14
    img = Image.new("RGB", (sheet.shape[1], sheet.shape[0] + band), (255, 255, 255))
    img.paste(Image.fromarray(sheet), (0, band))
    draw = ImageDraw.Draw(img)
    x0, y0, _, y1 = draw.textbbox((0, 0), title, font=font)
    draw.text((8 - x0, (band - (y1 - y0)) // 2 - y0), title, font=font, fill=INK)
    return np.asarray(img)


def save_animation(frames: list, path: Path, fps: float, colours: int = 96) -> int:
    """Write (H, W, 3 or 4) frames (float in [0, 1] or uint8) as a looping GIF at ``fps``
    (Pillow; each frame on its own adaptive palette of ``colours``, no dithering, so flat
    shaded areas compress), through ``core.io.atomic_write``. Returns the file's size in bytes."""
    from PIL import Image

    from core.io import atomic_write

    images = [Image.fromarray(kit.to_rgb8(f)).quantize(colors=colours, method=Image.Quantize.MEDIANCUT,
                                                       dither=Image.Dither.NONE) for f in frames]
    buffer = io.BytesIO()
    images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:], loop=0,
                   duration=10 * round(100.0 / fps), optimize=True, disposal=1)  # GIF counts 1/100 s
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    data = buffer.getvalue()
    atomic_write(path, data)
    return len(data)


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
