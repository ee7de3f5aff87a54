"""The demo files of the core's demo mechanisms: ``<demo>.blend`` for every key of
``core.mechanisms.DEMOS``, each framed by a camera that sees its whole motion (simulated
once here with the repository's core, before bpy is imported)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from scripts import blender_kit as kit
from scripts.demos.common import VIEWS, save


def facing_view(directions: np.ndarray, default=kit.DEFAULT_VIEW, n_candidates: int = 4000) -> np.ndarray:
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
    :data:`scripts.blender_kit.DEFAULT_VIEW`), or for ``FACE_BODIES`` the :func:`facing_view`
    of the directions from the first body's origin (the sphere's centre) to the drawn centres
    of the other visible bodies over every frame of ``result`` (a BakeResult of ``mech``)."""
    view = VIEWS.get(demo, kit.DEFAULT_VIEW)
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
    from core import display
    from core import mechanisms as mechs

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


def build_mechanism_file(demo: str, points: np.ndarray, settings: dict, out: Path) -> None:
    """``<demo>.blend``: the demo placed at its own frame rate and duration ``settings`` (from
    :func:`motion_points`), its camera looking along ``-settings["view"]`` and framing
    ``points``."""
    import bpy

    scene = kit.new_scene(settings["fps"], 1 + round(settings["duration"] * settings["fps"]), demo)
    if bpy.ops.spline_joints.add_mechanism(demo=demo, duration=settings["duration"]) != {"FINISHED"}:
        raise RuntimeError(f"add_mechanism failed for {demo}")
    for obj in scene.objects:  # wires and coastlines thick enough to read in a small render
        if obj.type == "CURVE":
            obj.data.bevel_depth = max(obj.data.bevel_depth, 0.005)
    kit.setup_render(scene, points, settings["view"])
    save(scene, out / f"{demo}.blend")
