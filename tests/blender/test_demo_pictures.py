"""How the built demo files are seen: every demo's camera keeps its moving bodies in view, the
bodies are large enough to read, the skeleton moves in 3D and the reach cone is reached.

The motion is the core's simulation of each mechanism at the file's own settings (the
simulation a bake keys; baking every demo in Blender would be too slow here), placed on the
file's own body objects; a rig's motion is its animation, played frame by frame, a
linkage's its bake (seconds), played likewise, and a simulated rig's (the character, the
contact demos) its bake by scripts.blender_kit.bake_rigs (tens of seconds each). The points
that outline each body (a mesh's vertices, a curve's points) are projected through the scene
camera with scripts.blender_kit.camera_pixels at its RESOLUTION (640 x 360); a body is in
view in a frame when the bounding box of its projection lies inside the frame.
"""

from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO_DIR = ROOT / "demo_blends"
DEMOS = sorted(p.stem for p in DEMO_DIR.glob("*.blend"))
#: a body must be fully in the camera's view in at least this fraction of the frames
IN_VIEW = 0.9
#: a rod ROD_PX pixels thick covers ROD_PX x its projected length; a body's silhouette (the
#: convex hull of its projected vertices) must cover ROD_FACTOR times that for its own
#: projected length (its widest extent) in the median frame: on average at least
#: ROD_FACTOR x ROD_PX = 4 pixels wide
ROD_PX, ROD_FACTOR = 2.0, 2.0
#: the skeleton's bodies must leave the plane they start in by more than this (m)
OFF_PLANE = 0.10
#: the reach-cone arm is on the cone's boundary when |swing value| <= this, in >= CONE_FRAMES
CONE_TOL, CONE_FRAMES = 1e-3, 10


def _hull_area(xy):
    """Area of the convex hull of 2D points (N, 2); 0 when they are collinear."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        return float(ConvexHull(xy).volume)  # a 2D hull's "volume" is its area
    except (QhullError, ValueError):
        return 0.0


def _local_points(obj):
    """Points (N, 3) in an object's frame that outline what it draws: a mesh's vertices, a
    curve's control points, else the corners of its bounding box."""
    if obj.type == "MESH" and len(obj.data.vertices):
        co = np.empty(3 * len(obj.data.vertices))
        obj.data.vertices.foreach_get("co", co)
        return co.reshape(-1, 3)
    if obj.type == "CURVE":
        pts = [tuple(p.co)[:3] for sp in obj.data.splines for p in (*sp.points, *sp.bezier_points)]
        if pts:
            return np.array(pts, dtype=float)
    return np.array([tuple(c) for c in obj.bound_box], dtype=float)


def _parts(ref_object):
    """The render-visible objects that draw one mechanism body: the body's mesh, or (for an
    empty) its visible children such as a wire's curve."""
    obj = ref_object
    if obj.type == "MESH" and not obj.hide_render:
        return [obj]
    return [c for c in obj.children if not c.hide_render and c.type in ("MESH", "CURVE")]


def scenario_views(tmp, demo):
    import bpy

    from scenes import addon_module
    from scripts import blender_kit as kit

    bpy.ops.wm.open_mainfile(filepath=str(DEMO_DIR / f"{demo}.blend"), load_ui=False)
    scene = bpy.context.scene
    out = {"camera": scene.camera is not None, "bodies": {}, "extra": {}}
    if scene.camera is None:
        return out
    W, H = kit.RESOLUTION
    tracks = {}  # part name -> world points outlining it (F, N, 3)
    for i in range(len(scene.spline_joints_linkages)):  # seconds each: their keys play below
        assert bpy.ops.spline_joints.bake_linkage(index=i) == {"FINISHED"}
    rig_scene = addon_module("addon.rig_scene")
    if rig_scene.simulated_armatures(scene) or rig_scene.simulated_objects(scene):  # keys play below
        kit.bake_rigs(scene)
    items = scene.spline_joints_mechanisms
    if len(items):
        item = items[0]
        mech = addon_module("addon.mechanism_bake").build_mechanism(item.demo, item.duration,
                                                                          item.substeps, scene)
        addon_module("core.backend").use("numpy")  # no kernel compile in this fresh user folder
        result = addon_module("core.mechanisms").simulate_mechanism(mech)
        for k, ref in enumerate(item.bodies):
            T0_inv = np.linalg.inv(np.array(ref.object.matrix_world))
            for part in _parts(ref.object):  # a child keeps its pose in the body's frame
                T_body_part = np.eye(4) if part is ref.object else T0_inv @ np.array(part.matrix_world)
                corners = _local_points(part)
                T = result.poses[:, k] @ T_body_part
                tracks[part.name] = np.einsum("fij,vj->fvi", T[:, :3, :3], corners) + T[:, None, :3, 3]
        if demo == "skeleton_chain":
            origins = result.poses[:, :, :3, 3]
            p0 = origins[0] - origins[0].mean(axis=0)
            _, s, vt = np.linalg.svd(p0)
            normal = vt[2]
            if s[1] < 1e-6 * max(s[0], 1e-12):  # collinear start: the plane holding the line and gravity
                normal = np.cross(vt[0], mech.skeleton_gravity)
                normal /= np.linalg.norm(normal)
            out["extra"]["off_plane"] = float(np.abs((origins - origins[0].mean(axis=0)) @ normal).max())
    else:
        frames = range(scene.frame_start, scene.frame_end + 1)
        linked = {o for lk in scene.spline_joints_linkages for j in lk.joints for o in (j.body1, j.body2)}
        parts = [o for o in scene.objects if o.type == "MESH" and not o.hide_render
                 and (o in linked or o.parent is not None and o.parent.type == "ARMATURE"
                      and o.parent_type == "BONE")]
        boxes = {p.name: _local_points(p) for p in parts}
        world = {p.name: [] for p in parts}
        cone_values = []
        cone_bones = [(a, pb) for a in scene.objects if a.type == "ARMATURE" for pb in a.pose.bones
                      if not pb.spline_joints.joint_json and len(pb.spline_joints.samples)]
        bridge = addon_module("addon.bridge")
        cone_options = addon_module("addon.cones").cone_options
        cone_status = addon_module("core.bones").cone_status
        for f in frames:
            scene.frame_set(f)
            bpy.context.view_layer.update()
            for p in parts:
                M = np.array(p.matrix_world)
                world[p.name].append(boxes[p.name] @ M[:3, :3].T + M[:3, 3])
            for arm, pb in cone_bones:
                status = cone_status(cone_options(pb.spline_joints), bridge.read_rest_T_parent_child(pb),
                                     bridge.read_pose_T_parent_child(pb))
                cone_values.append(float(status.swing_value))
        for name, w in world.items():
            w = np.array(w)
            if np.ptp(w, axis=0).max() > 1e-4:  # moving parts only (the rest is scenery)
                tracks[name] = w
        if cone_bones:
            out["extra"]["cone_values"] = cone_values
    for name, corners in tracks.items():
        px = kit.camera_pixels(scene, corners, (W, H))  # (F, 8, 2)
        inside = ((px[..., 0] >= 0) & (px[..., 0] <= W) & (px[..., 1] >= 0) & (px[..., 1] <= H)).all(axis=1)
        ratio = []
        for frame_px in px[:: max(1, len(px) // 30)]:
            length = float(np.linalg.norm(frame_px[:, None] - frame_px[None], axis=-1).max()) \
                if len(frame_px) <= 400 else float(np.linalg.norm(np.ptp(frame_px, axis=0)))
            ratio.append(_hull_area(frame_px) / max(ROD_PX * length, 1e-9))
        out["bodies"][name] = {"in_view": float(inside.mean()), "area_ratio": float(np.median(ratio))}
    out["mechanism"] = bool(len(items))
    return out


@pytest.mark.parametrize("demo", DEMOS)
def test_demo_camera_sees_its_moving_bodies(blender, demo):
    out = blender(scenario_views, demo=demo)
    assert out["camera"], f"{demo}.blend has no camera"
    assert out["bodies"], f"{demo}.blend: no moving body found"
    hidden = {n: b["in_view"] for n, b in out["bodies"].items() if b["in_view"] < IN_VIEW}
    assert not hidden, f"{demo}: bodies out of the camera's view too often (fraction of frames in view): {hidden}"
    if out["mechanism"]:
        thin = {n: round(b["area_ratio"], 2) for n, b in out["bodies"].items()
                if b["area_ratio"] < ROD_FACTOR}
        assert not thin, (f"{demo}: bodies drawn thinner than {ROD_FACTOR} x a {ROD_PX:g}-pixel rod in a "
                          f"640 x 360 frame (area / ({ROD_PX:g} px x length)): {thin}")
    if demo == "skeleton_chain":
        assert out["extra"]["off_plane"] > OFF_PLANE, (
            f"the skeleton stays within {out['extra']['off_plane']:.3f} m of its initial plane")
    if demo == "shoulder_reach_cone":
        values = np.array(out["extra"]["cone_values"])
        on = int((np.abs(values) <= CONE_TOL).sum())
        assert on >= CONE_FRAMES, (f"the arm is on its reach cone's boundary in {on} frames "
                                   f"(swing values from {values.min():.3g} to {values.max():.3g})")


def test_hull_area_of_a_square_and_a_rod():
    sq = np.array([[0, 0], [2, 0], [2, 2], [0, 2], [1, 1]], dtype=float)
    assert _hull_area(sq) == pytest.approx(4.0)
    rod = np.array([[0, 0], [100, 0], [100, 2], [0, 2]], dtype=float)
    length = float(np.hypot(100, 2))
    assert _hull_area(rod) / (ROD_PX * length) < ROD_FACTOR  # a 2-pixel rod fails the threshold
