"""Globe (seed 000 section 7, Fig. 5b): toy planes slide along continental coastlines on a
spinning globe.

Each plane rides a closed cubic spline curve joint (:class:`core.joints.ClosedSplineCurveJoint`)
whose control frames are rotations about the globe's centre: frame ``j`` has its z axis
through the coast point ``j`` (the outward normal) and its x axis tangent to the coast, so two
axes lie in the sphere's tangent plane and one of them is tangent to the coastal curve, as
the seed describes. Because every control frame is a pure rotation about the centre, the
spline (a product of exponentials of rotation-only twists, eq. 21) is a pure rotation for
every q and the plane, carried at ``radius`` along the frame's z axis, stays on the sphere
exactly. The coastlines are Natural Earth 1:110m rings (:func:`core.reference.coastlines`),
resampled to equal arc length.

The globe spins about the world z axis at a prescribed rate (:class:`.base.Drive`); gravity
makes the planes slide. Each plane is drawn as a small aircraft (display ``"airplane"``) whose
nose points along its frame's x axis, the coast's tangent.
"""

import numpy as np

from ..errors import InvalidInputError
from ..joints.lower_pairs import Revolute
from ..joints.spline_curve import ClosedSplineCurveJoint
from ..model import Model
from ..reference.datasets import coastlines, load
from .base import BodyDisplay, Drive, Mechanism, check_timing
from .shapes import box_inertia, frame, sphere_inertia, translation

__all__ = ["spinning_globe", "coast_points", "coast_frames", "coast_distance", "CLOSED_COASTS"]

#: drawn size of a plane (length, span, height; m): an aircraft with its nose along the body's
#: x axis, the coast's tangent, flying just above the globe's surface
_PLANE = (0.13, 0.12, 0.04)
#: closed coast rings usable as closed curve joints
CLOSED_COASTS = ("africa", "south_america", "australia", "north_america")


def _unit_vectors(lonlat):
    lon, lat = np.radians(lonlat[:, 0]), np.radians(lonlat[:, 1])
    return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=1)


def coast_points(name):
    """Unit vectors ``(K, 3)`` of the closed coast ring ``name`` (Natural Earth 1:110m)."""
    rings = coastlines()
    closed = load("coastlines")["closed"]
    if name not in rings or not closed.get(name, False):
        raise InvalidInputError(f"coast {name!r} is not a closed ring; choose one of "
                                f"{CLOSED_COASTS}")
    p = _unit_vectors(rings[name])
    if np.allclose(p[0], p[-1]):
        p = p[:-1]
    return p


def coast_frames(name, n_frames=40, smoothing=0):
    """Control frames ``(n, 4, 4)``: rotations about the globe's centre with z through the
    coast (resampled to ``n_frames`` points of equal great-circle spacing) and x along the
    coast's tangent (central differences; ``smoothing`` > 0 averages them over that many
    neighbours each side, trading tangency for gentler turns). Raises if consecutive frames
    turn by more than 2.5 rad."""
    p = coast_points(name)
    seg = np.arccos(np.clip(np.sum(p * np.roll(p, -1, axis=0), axis=1), -1.0, 1.0))
    s = np.concatenate([[0.0], np.cumsum(seg)])
    target = np.linspace(0.0, s[-1], int(n_frames), endpoint=False)
    closed = np.concatenate([p, p[:1]])
    res = np.stack([np.interp(target, s, closed[:, k]) for k in range(3)], axis=1)
    res /= np.linalg.norm(res, axis=1, keepdims=True)
    tangent = np.roll(res, -1, axis=0) - np.roll(res, 1, axis=0)
    tangent = sum(np.roll(tangent, k, axis=0) for k in range(-smoothing, smoothing + 1))
    tangent -= np.sum(tangent * res, axis=1, keepdims=True) * res
    F = frame(np.zeros_like(res), tangent, res)
    turn = np.arccos(np.clip((np.einsum("nij,nij->n", F[:, :3, :3],
                                        np.roll(F[:, :3, :3], -1, axis=0)) - 1) / 2, -1, 1))
    if turn.max() > 2.5:
        raise InvalidInputError(f"coast {name!r}: consecutive frames turn by {turn.max():.2f} "
                                "rad; use more frames or more smoothing")
    return F


def coast_distance(directions, name):
    """Great-circle distance (radians) of unit vectors ``(N, 3)`` from the coast ring
    ``name`` (its polyline of great-circle arcs between the data points): ``(N,)``."""
    p = coast_points(name)
    a, b = p, np.roll(p, -1, axis=0)
    d = np.asarray(directions, dtype=float)
    d = d / np.linalg.norm(d, axis=1, keepdims=True)
    n = np.cross(a, b)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    # distance to each arc's great circle where the projection falls inside the arc
    sin_off = d @ n.T                                          # (N, K)
    proj = d[:, None, :] - sin_off[..., None] * n[None]
    inside = (np.einsum("nkj,kj->nk", np.cross(a[None], proj), n) >= 0) & \
             (np.einsum("nkj,kj->nk", np.cross(proj, b[None]), n) >= 0)
    arc = np.where(inside, np.arcsin(np.clip(np.abs(sin_off), 0, 1)), np.inf)
    ends = np.arccos(np.clip(d @ p.T, -1.0, 1.0))
    return np.minimum(arc.min(axis=1), ends.min(axis=1))


def spinning_globe(*, fps=30.0, substeps=16, duration=6.0,
                   coasts=("africa", "south_america", "australia"), radius=0.5, spin_rate=0.5,
                   n_frames=40, plane_mass=0.05, integrator="rk4"):
    """A globe of ``radius`` spinning at ``spin_rate`` rad/s about world z (prescribed),
    centre 1 m up, with one plane per coast in ``coasts`` sliding along it under gravity.

    The constraint error is the largest distance of a plane's origin from the sphere (m);
    :func:`coast_distance` measures how far each plane is from its coastline.
    """
    substeps = check_timing("globe", fps, substeps, duration)
    if not coasts:
        raise InvalidInputError("globe needs at least one coast")
    model = Model(name="globe")
    gm = 2.0
    model.add_body("globe", -1, Revolute((0.0, 0.0, 1.0)), placement=translation([0, 0, 1.0]),
                   mass=gm, inertia=sphere_inertia(gm, radius))
    lonlat = coastlines()
    polylines = tuple(_unit_vectors(lonlat[name]) * radius * 1.002 for name in lonlat)
    display = [BodyDisplay("globe", "sphere", (radius, 0, 0), (0.25, 0.45, 0.8, 1.0),
                           polylines=polylines)]
    colours = ((0.95, 0.3, 0.2, 1.0), (0.95, 0.85, 0.2, 1.0), (0.3, 0.9, 0.4, 1.0),
               (0.9, 0.5, 0.9, 1.0))
    joints = []
    extent = (0.08, 0.07, 0.02)
    for i, name in enumerate(coasts):
        joint = ClosedSplineCurveJoint(coast_frames(name, n_frames))
        joints.append(joint)
        model.add_body(f"plane_{name}", 0, joint, mass=plane_mass,
                       com=(0.0, 0.0, radius + 0.5 * extent[2]),
                       inertia=box_inertia(plane_mass, extent))
        display.append(BodyDisplay(f"plane_{name}", "airplane", _PLANE, colours[i % 4],
                                   translation([0.0, 0.0, radius + 0.1 * _PLANE[0]])))
    model.compile()
    q0 = np.zeros(model.nq)
    for i, j in enumerate(joints):
        q0[1 + i] = j.lower[0] + j.period * (0.2 + 0.25 * i)
    w = float(spin_rate)
    drive = Drive((0,), lambda t: ([w * t], [w], [0.0]), f"globe spins about z at {w} rad/s")
    centre = np.array([0.0, 0.0, 1.0])

    def error(mech, times, q, poses):
        """Largest | |plane position - centre| - radius | over the planes (m): (F,)."""
        x = poses[:, 1:] @ np.array([0.0, 0.0, radius, 1.0])
        return np.abs(np.linalg.norm(x[..., :3] - centre, axis=-1) - radius).max(axis=1)

    return Mechanism("globe", f"Globe: {len(coasts)} planes on coastlines", model, q0,
                     np.zeros(model.nv), fps, substeps, duration, integrator, drive=drive,
                     display=tuple(display), constraint_error=error, passive=False,
                     info={"coasts": tuple(coasts), "radius": radius, "centre": centre,
                           "joints": tuple(joints),
                           "attribution": load("coastlines").get("attribution", "")})
