"""Beads on a wire (seed 000 section 7, Fig. 5a).

Three beads (configurable), each on its own closed flower-shaped wire (a rose curve
``r(theta) = R (1 + e cos(k theta))`` in a vertical plane), modelled as 1-DOF spline curve
joints (eqs. 21-24) whose control frames have x along the wire and z normal to the wire's
plane. The wire frame spins about the world z axis at a prescribed rate (a revolute
coordinate driven kinematically, see :mod:`.base`), so the beads gain and lose energy only
through the drive. With ``spin=True`` each bead also turns freely about the wire on a
revolute joint after the spline joint (the seed's "simple rotational joint"), carried by a
light carrier body.

Closed curves. Each wire is a :class:`core.joints.ClosedSplineCurveJoint`: its control
frames wrap periodically, so the cumulative spline has period n in q and is C2 across the
seam, and its :meth:`normalize` shifts q by whole periods, so a bead can go round any number
of times.
"""

import numpy as np

from ..errors import InvalidInputError
from ..joints.lower_pairs import Revolute
from ..joints.spline_curve import ClosedSplineCurveJoint
from ..model import Model
from .base import BodyDisplay, Drive, Mechanism, check_timing
from .shapes import frame, sphere_inertia, translation

__all__ = ["rose_frames", "beads_on_a_wire", "closest_point_distance", "spin_axis_scenery",
           "NEWTON_STEP"]

#: the finite-difference step of :func:`closest_point_distance`'s Newton iterations, as a
#: fraction of the curve's domain
NEWTON_STEP = 1e-4

_METAL = (0.25, 0.27, 0.32, 1.0)
_ARROW = (0.95, 0.55, 0.1, 1.0)


def spin_axis_scenery(height, reach, rate, arrow_radius=0.1):
    """The fixed spin axis of a frame turning about world z at ``height`` (m): a post from
    the floor to ``reach`` above ``height`` on a base, and an arrow (a 300-degree arc with a
    cone head) circling the post just above ``height`` in the sense of ``rate`` (rad/s)."""
    top = height + 0.6 * reach
    post = BodyDisplay("spin_axis", "pin", (0.01, top, 0.0), _METAL,
                       translation([0.0, 0.0, 0.5 * top]), axis=2)
    base = BodyDisplay("base", "box", (0.3, 0.3, 0.03), _METAL, translation([0.0, 0.0, 0.015]))
    sense = 1.0 if rate >= 0 else -1.0
    th = sense * np.linspace(0.0, np.radians(300.0), 60)
    z = height + 0.3 * reach
    arc = np.column_stack([arrow_radius * np.cos(th), arrow_radius * np.sin(th),
                           np.full_like(th, z)])
    tip = np.array([arrow_radius * np.cos(th[-1]), arrow_radius * np.sin(th[-1]), z])
    tangent = sense * np.array([-np.sin(th[-1]), np.cos(th[-1]), 0.0])
    head = frame(tip + 0.05 * tangent, -tangent, np.cross(tangent, [0.0, 0.0, 1.0]))  # apex ahead
    arrow = BodyDisplay("spin_arrow", "cone", (0.45, 0.05, 0.0), _ARROW, head, axis=0,
                        polylines=(arc,))
    return post, base, arrow


def rose_frames(n_frames=40, radius=0.3, amplitude=0.25, petals=5):
    """Control frames ``(n, 4, 4)`` on the rose ``r = radius (1 + amplitude cos(petals th))``
    in the x-z plane of the wire: x along the curve (theta increasing), z along -y (the
    plane's normal) and y = z x x in the plane."""
    if not (0.0 <= amplitude < 1.0 and radius > 0 and n_frames >= 8 and petals >= 1):
        raise InvalidInputError("rose_frames: need radius > 0, 0 <= amplitude < 1, "
                                "n_frames >= 8, petals >= 1")
    th = 2 * np.pi * np.arange(n_frames) / n_frames
    r = radius * (1 + amplitude * np.cos(petals * th))
    dr = -radius * amplitude * petals * np.sin(petals * th)
    p = np.stack([r * np.cos(th), np.zeros_like(th), r * np.sin(th)], axis=1)
    tangent = np.stack([dr * np.cos(th) - r * np.sin(th), np.zeros_like(th),
                        dr * np.sin(th) + r * np.cos(th)], axis=1)
    normal = np.broadcast_to([0.0, -1.0, 0.0], p.shape)
    return frame(p, tangent, normal)


def closest_point_distance(joint, points, samples=2000, iterations=4):
    """Distance of ``points: (N, 3)`` (in the joint's parent frame) from the curve traced by
    the origin of ``joint`` over its domain: dense sampling, then Newton steps on
    ``|p(s) - x|^2`` for all points at once, with ``dp/ds`` and ``d2p/ds2`` from central
    differences of the batched transforms (step h = :data:`NEWTON_STEP` of the domain:
    their O(h^2) error, about 1e-8 relative, moves the foot point along the curve, which
    changes the distance only at second order). Returns (N,)."""
    lo, hi = joint.lower[0], joint.upper[0]
    s = np.linspace(lo, hi, samples)
    curve = joint.transforms(s)[:, :3, 3]
    pts = np.asarray(points, dtype=float)
    d2 = ((pts[:, None, :] - curve[None, :, :]) ** 2).sum(-1)
    best = s[np.argmin(d2, axis=1)]
    h = NEWTON_STEP * (hi - lo)
    for _ in range(iterations):
        P = joint.transforms(np.concatenate([best - h, best, best + h]))[:, :3, 3]
        before, at, after = P.reshape(3, len(pts), 3)
        e = at - pts
        dp = (after - before) / (2.0 * h)
        dp2 = (after - 2.0 * at + before) / (h * h)
        g1 = np.einsum("ni,ni->n", e, dp)
        g2 = np.einsum("ni,ni->n", dp, dp) + np.einsum("ni,ni->n", e, dp2)
        best = np.clip(np.where(g2 > 0, best - g1 / np.where(g2 > 0, g2, 1.0), best), lo, hi)
    return np.linalg.norm(joint.transforms(best)[:, :3, 3] - pts, axis=1)


def beads_on_a_wire(*, fps=30.0, substeps=4, duration=4.0, n_beads=3, spin_rate=1.5,
                    spin=False, radius=0.16, amplitude=0.25, petals=5, offset=0.3,
                    bead_radius=0.03, bead_mass=0.05, n_frames=40, integrator="rk4"):
    """Beads on closed rose-curve wires on a frame spinning about world z at ``spin_rate``
    (rad/s, prescribed). Wire ``i`` lies in the vertical plane through the axis at azimuth
    ``2 pi i / n``, its centre ``offset`` metres from the axis and 1 m up (``offset`` larger
    than the wire's outer radius ``radius (1 + amplitude)`` keeps the wires apart).

    Bodies: ``frame`` (revolute about z, driven), then per bead either the bead on its
    curve joint, or (``spin=True``) a 1 g carrier on the curve joint plus the bead on a
    revolute about the wire tangent. The constraint error is each bead's distance from its
    wire (:func:`closest_point_distance`), measured from the body poses.

    Drawn: the frame as a hub on the spin axis with a spoke to each wire's centre and each
    wire in its bead's colour; as scenery the fixed spin axis (a post on a base) and an
    arrow circling it in the direction of the spin.
    """
    substeps = check_timing("beads_on_a_wire", fps, substeps, duration)
    n = int(n_beads)
    if n < 1:
        raise InvalidInputError(f"n_beads must be >= 1, got {n_beads}")
    frames = rose_frames(n_frames, radius, amplitude, petals)
    wire = ClosedSplineCurveJoint(frames)
    model = Model(name="beads_on_a_wire")
    frame_mass = 0.5
    model.add_body("frame", -1, Revolute((0.0, 0.0, 1.0)), mass=frame_mass,
                   com=(0.0, 0.0, 1.0), inertia=frame_mass * (radius + offset) ** 2
                   * np.diag([0.5, 0.5, 1.0]))
    s = np.linspace(wire.lower[0], wire.upper[0], 401)
    curve = wire.transforms(s)[:, :3, 3]
    placements, parts, display = [], [], []
    bead_bodies = []
    colours = ((0.9, 0.2, 0.2, 1.0), (0.2, 0.7, 0.3, 1.0), (0.2, 0.4, 0.9, 1.0),
               (0.9, 0.7, 0.1, 1.0))
    for i in range(n):
        az = 2 * np.pi * i / n
        c, sn = np.cos(az), np.sin(az)
        H = np.eye(4)
        H[:3, :3] = [[c, -sn, 0.0], [sn, c, 0.0], [0.0, 0.0, 1.0]]
        H[:3, 3] = [offset * c, offset * sn, 1.0]
        placements.append(H)
        col = colours[i % len(colours)]
        parts.append(BodyDisplay(f"wire{i}", "wire", (0.004, 0.0, 0.0), col,
                                 polylines=(curve @ H[:3, :3].T + H[:3, 3],)))
        spoke = H @ translation([-0.5 * offset, 0.0, 0.0])
        parts.append(BodyDisplay(f"spoke{i}", "capsule", (0.008, offset, 0.0), _METAL, spoke,
                                 axis=0))
    display.append(BodyDisplay("frame", "pin", (0.045, 0.08, 0.0), _METAL,
                               translation([0.0, 0.0, 1.0]), parts=tuple(parts)))
    inertia = sphere_inertia(bead_mass, bead_radius)
    for i in range(n):
        col = colours[i % len(colours)]
        if spin:
            carrier = model.add_body(f"carrier{i}", 0, wire, placements[i], mass=1e-3,
                                     inertia=1e-8 * np.eye(3))
            display.append(BodyDisplay(f"carrier{i}", "sphere", (0.002, 0, 0), col,
                                       visible=False))
            b = model.add_body(f"bead{i}", carrier, Revolute((1.0, 0.0, 0.0)), mass=bead_mass,
                               inertia=inertia)
        else:
            b = model.add_body(f"bead{i}", 0, wire, placements[i], mass=bead_mass,
                               inertia=inertia)
        display.append(BodyDisplay(f"bead{i}", "bead", (bead_radius, 0, 0), col))
        bead_bodies.append(b)
    period = wire.period
    model.compile()
    q0 = np.zeros(model.nq)
    v0 = np.zeros(model.nv)
    for i, b in enumerate(bead_bodies):
        dof = model.q_start[b - 1] if spin else model.q_start[b]
        q0[dof] = wire.lower[0] + period * (0.1 + 0.8 * i / max(n, 1))
        if spin:
            v0[model.q_start[b]] = 3.0          # each bead turns about the wire
    w = float(spin_rate)
    drive = Drive((0,), lambda t: ([w * t], [w], [0.0]),
                  f"wire frame spins about z at {w} rad/s")
    H_all = np.array(placements)

    def error(mech, times, q, poses):
        """Max over beads of the bead centre's distance from its wire (m): (F,)."""
        out = np.zeros(len(times))
        Tf_inv = np.linalg.inv(poses[:, 0])
        for i, b in enumerate(bead_bodies):
            x = np.einsum("fij,fj->fi", Tf_inv, poses[:, b, :, 3])[:, :3]
            x_plane = (x - H_all[i, :3, 3]) @ H_all[i, :3, :3]
            out = np.maximum(out, closest_point_distance(wire, x_plane))
        return out

    return Mechanism("beads_on_a_wire", f"Beads on a wire: {n} beads, frame at {w} rad/s",
                     model, q0, v0, fps, substeps, duration, integrator, drive=drive,
                     display=tuple(display), constraint_error=error, passive=False,
                     scenery=spin_axis_scenery(1.0, 0.5 + radius * (1 + amplitude), w),
                     info={"wire_joint": wire, "bead_bodies": tuple(bead_bodies),
                           "spin_rate": w})
