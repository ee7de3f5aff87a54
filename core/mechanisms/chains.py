"""Falling chains (seed 000 section 7): (a) links on spherical joints with reach cones,
(b) links on hinges, (c) the sliding chain of Fig. 5(c) ("SIGGRAPH Joint 1"): each link
slides on its parent's surface through a 2-DOF spline surface joint, hanging from a fixed
top link.

Chains (a) and (b) are straight rods of ``length`` along their body x axis with the joint at
the body origin (the rod's proximal end); they start horizontal and fall under gravity. They
are drawn as capsules a tenth of their length thick (:func:`link_radius`) with a marker at
every joint (a pin along a hinge's axis, a socket at a ball joint: :func:`joint_marker`), the
reach cones of (a) on the parent links, and as scenery the fixed pivot's bracket and a ground
plane below the lowest point the chain can reach (:func:`anchor_scenery`).
"""

import numpy as np

from ..errors import InvalidInputError
from ..joints.lower_pairs import Fixed, Revolute
from ..joints.spherical import Spherical
from ..limits import ReachCone
from ..model import Model
from .base import BodyDisplay, Mechanism, check_timing
from .shapes import ellipsoid_inertia, frame, rod_inertia, surface_joint_from_map, translation

__all__ = ["hinge_chain", "spherical_chain", "sliding_chain", "chain_model", "link_radius",
           "joint_marker", "anchor_scenery"]

_COLOURS = ((0.85, 0.33, 0.10, 1.0), (0.93, 0.69, 0.13, 1.0), (0.47, 0.67, 0.19, 1.0),
            (0.30, 0.75, 0.93, 1.0), (0.49, 0.18, 0.56, 1.0), (0.64, 0.08, 0.18, 1.0))


def _check_links(n_links):
    if isinstance(n_links, bool) or int(n_links) != n_links or n_links < 1:
        raise InvalidInputError(f"n_links must be a positive integer, got {n_links!r}")
    return int(n_links)


def chain_model(n_links, joint_factory, length=0.3, radius=0.02, mass=0.5,
                gravity=(0.0, 0.0, -9.81), name="chain"):
    """A straight chain of rods along world x from the origin: body ``i``'s joint sits at
    ``x = i * length``. ``joint_factory(i)`` returns each link's joint. Returns the Model."""
    n = _check_links(n_links)
    model = Model(gravity=gravity, name=name)
    for i in range(n):
        model.add_body(f"link{i}", i - 1, joint_factory(i),
                       placement=None if i == 0 else translation([length, 0.0, 0.0]),
                       mass=mass, com=(0.5 * length, 0.0, 0.0),
                       inertia=rod_inertia(mass, length, radius, axis=0))
    return model


#: colours of joint markers and fixed scenery
METAL = (0.25, 0.27, 0.32, 1.0)
GROUND = (0.90, 0.91, 0.87, 1.0)
CONE = (0.15, 0.50, 1.00, 0.45)


def link_radius(length, radius=0.0):
    """Drawn radius of a rod link of ``length``: a tenth of its length (so a link reads as a
    solid rod in a small render), or its physical ``radius`` if larger."""
    return max(float(radius), 0.1 * float(length))


def joint_marker(name, kind, link_radius, at=(0.0, 0.0, 0.0), axis=1):
    """A joint marker drawn with a body: a hinge ``"pin"`` (a short cylinder along the hinge
    ``axis``, longer than the link is thick) or a ball ``"socket"`` (a sphere a little wider
    than the link), centred at ``at`` (3,) in the body frame."""
    if kind == "pin":
        return BodyDisplay(name, "pin", (0.45 * link_radius, 4.0 * link_radius, 0.0), METAL,
                           translation(at), axis=axis)
    return BodyDisplay(name, "socket", (1.35 * link_radius, 0.0, 0.0), METAL, translation(at))


def anchor_scenery(reach, link_radius, spread=None, axis=1, joint="pin"):
    """World-fixed scenery of a chain hanging from the origin: the fixed pivot (a bracket
    above the origin, holding a pin along ``axis`` when ``joint`` is "pin"; a ball joint's
    socket is drawn on the first link) and a ground plane three link radii below
    the lowest point the chain can reach (``reach`` metres under the origin), square, or
    ``2 spread`` wide across the chain's plane (``spread`` m) when the motion stays near it."""
    r = float(link_radius)
    bracket = BodyDisplay("pivot", "box", (5 * r, 5 * r, 3 * r), METAL,
                          translation([0.0, 0.0, 3.0 * r]),
                          parts=(joint_marker("pivot_pin", "pin", 1.3 * r, axis=axis),)
                          if joint == "pin" else ())
    half = reach + 3.0 * r
    depth = reach + 3.0 * r
    across = half if spread is None else float(spread)
    ground = BodyDisplay("ground", "plane", (2 * half, 2 * across, 0.01), GROUND,
                         translation([0.0, 0.0, -depth]))
    return bracket, ground


def _rod_display(n, length, radius, joint="pin", cones=()):
    """Capsule links of ``length`` along their x axis from the joint at the body origin,
    with a joint marker (:func:`joint_marker`) at each joint and ``cones``: ``(body, axis,
    half_angle)`` reach cones drawn on the parent link at the child's joint."""
    r = link_radius(length, radius)
    off = translation([0.5 * length, 0.0, 0.0])
    cone_parts = {}
    for body, axis, half in cones:
        cone_parts.setdefault(body - 1, []).append(BodyDisplay(
            f"link{body - 1}_cone", "cone", (half, 0.45 * length, 0.0), CONE,
            translation([length, 0.0, 0.0]) @ _turn_x_to(axis), axis=0))
    return tuple(BodyDisplay(f"link{i}", "capsule", (r, length, 0.0),
                             _COLOURS[i % len(_COLOURS)], off, axis=0,
                             parts=(joint_marker(f"link{i}_{joint}", joint, r),
                                    *cone_parts.get(i, ())))
                 for i in range(n))


def _turn_x_to(axis):
    """(4, 4) rotation taking the x axis to ``axis`` (3,)."""
    a = np.asarray(axis, dtype=float)
    ref = (0.0, 0.0, 1.0) if abs(a[2]) < 0.9 * np.linalg.norm(a) else (0.0, 1.0, 0.0)
    return frame(np.zeros(3), a, np.cross(a, ref))


def hinge_chain(*, fps=60.0, substeps=10, duration=3.0, n_links=8, length=0.3, radius=0.02,
                mass=0.5, integrator="rk4"):
    """(b) A chain of ``n_links`` rods on hinges about world y, released horizontal."""
    substeps = check_timing("hinge_chain", fps, substeps, duration)
    n = _check_links(n_links)
    model = chain_model(n, lambda i: Revolute((0.0, 1.0, 0.0)), length, radius, mass,
                        name="hinge_chain")
    return Mechanism("hinge_chain", f"Falling chain: {n} hinges", model, np.zeros(n),
                     np.zeros(n), fps, substeps, duration, integrator,
                     display=_rod_display(n, length, radius),
                     scenery=anchor_scenery(n * length, link_radius(length, radius),
                                            spread=0.4),
                     info={"length": length, "radius": radius, "mass": mass})


def spherical_chain(*, fps=60.0, substeps=10, duration=3.0, n_links=8, length=0.3,
                    radius=0.02, mass=0.5, cone_half_angle=0.6, integrator="rk4",
                    yaw_rate=1.0):
    """(a) A chain of rods on spherical joints (exponential coordinates, seed 003), released
    horizontal with the first link turning about the vertical at ``yaw_rate`` (rad/s) so the
    motion leaves the vertical plane.

    Each joint after the first carries a reach cone about its rest direction (the parent's
    x axis) of half-angle ``cone_half_angle`` (rad), enforced by :class:`core.limits.ReachCone`
    impulses (inelastic, so the chain is not passive) and listed in ``info["reach_cones"]``
    as ``(body, axis (3,), half_angle)`` for the reach-cone display.
    """
    substeps = check_timing("spherical_chain", fps, substeps, duration)
    n = _check_links(n_links)
    if not 0.0 < cone_half_angle < np.pi:
        raise InvalidInputError(f"cone_half_angle must be in (0, pi), got {cone_half_angle}")
    model = chain_model(n, lambda i: Spherical(), length, radius, mass,
                        name="spherical_chain")
    v0 = np.zeros(3 * n)
    v0[2] = yaw_rate                    # r_dot = angular velocity at r = 0
    cones = tuple((i, (1.0, 0.0, 0.0), float(cone_half_angle)) for i in range(1, n))
    return Mechanism("spherical_chain", f"Falling chain: {n} ball joints with reach cones",
                     model, np.zeros(3 * n), v0, fps, substeps, duration, integrator,
                     display=_rod_display(n, length, radius, "socket", cones),
                     scenery=anchor_scenery(n * length, link_radius(length, radius),
                                            joint="socket"),
                     passive=False,
                     limits=tuple(ReachCone(i, axis, half) for i, axis, half in cones),
                     info={"length": length, "radius": radius, "mass": mass,
                           "reach_cones": cones})


# -- (c) sliding chain ----------------------------------------------------------------------

def _hanging_map(semi_axes):
    """Pose map of the lower half of an ellipsoid link (semi-axes a, b, c, centred at
    (0, 0, -c) in the link frame, so the link's origin is its top pole): the child's frame
    sits on the surface point below ``(u, v)`` with its z axis along the inward normal
    (so the child, which hangs along its own -z, points away from the parent)."""
    a, b, c = semi_axes

    def pose(q):
        u, v = q[:, 0], q[:, 1]
        s = np.sqrt(np.clip(1.0 - (u / a) ** 2 - (v / b) ** 2, 1e-12, None))
        p = np.stack([u, v, -c - c * s], axis=1)
        # outward normal ~ gradient of (x/a)^2 + (y/b)^2 + ((z + c)/c)^2
        n = np.stack([u / a ** 2, v / b ** 2, -(c * s) / c ** 2], axis=1)
        return frame(p, np.broadcast_to([1.0, 0.0, 0.0], p.shape), -n)
    return pose


def sliding_chain(*, fps=60.0, substeps=10, duration=3.0, n_links=5,
                  semi_axes=(0.09, 0.06, 0.12), mass=0.4, integrator="rk4", start=(0.35, 0.2)):
    """(c) The seed's sliding chain: ``n_links`` ellipsoidal links (the letters of Fig. 5c;
    the default 5 links give the 8 DOF of the seed's "SIGGRAPH Joint 1"); the first hangs
    fixed, each next one slides on the lower surface of its parent through a 2-DOF spline
    surface joint and falls under gravity from ``start`` (fractions of the parent's
    semi-axes a, b) towards the bottom pole.

    ``info["surface_map"]`` holds the exact surface (the pose map the joint was fitted
    to); the constraint error is the distance of each child's origin from its parent's
    ellipsoid surface (metres), measured from the body poses.
    """
    substeps = check_timing("sliding_chain", fps, substeps, duration)
    n = _check_links(n_links)
    if n < 2:
        raise InvalidInputError("sliding_chain needs at least 2 links (one fixed, one sliding)")
    a, b, c = (float(x) for x in semi_axes)
    pose_map = _hanging_map((a, b, c))
    joint, report = surface_joint_from_map(
        pose_map, ((-0.6 * a, 0.6 * a), (-0.6 * b, 0.6 * b)), n_ctrl=(9, 9))
    model = Model(name="sliding_chain")
    inertia = ellipsoid_inertia(mass, (a, b, c))
    model.add_body("link0", -1, Fixed(), placement=translation([0.0, 0.0, 1.0]), mass=mass,
                   com=(0.0, 0.0, -c), inertia=inertia)
    for i in range(1, n):
        model.add_body(f"link{i}", i - 1, joint, mass=mass, com=(0.0, 0.0, -c),
                       inertia=inertia)
    q0 = np.tile([start[0] * a, start[1] * b], n - 1)
    q0[2::2] *= -0.5                   # alternate the start so the links swing apart
    off = translation([0.0, 0.0, -c])
    display = tuple(BodyDisplay(f"link{i}", "ellipsoid", (a, b, c), _COLOURS[i % 6], off)
                    for i in range(n))

    def error(mech, times, q, poses):
        """Distance of each child's origin from its parent's ellipsoid (algebraic distance
        scaled to metres), max over links: (F,)."""
        T_rel = np.linalg.inv(poses[:, :-1]) @ poses[:, 1:]          # child in parent
        p = T_rel[..., :3, 3] - np.array([0.0, 0.0, -c])
        r = np.sqrt((p[..., 0] / a) ** 2 + (p[..., 1] / b) ** 2 + (p[..., 2] / c) ** 2)
        return np.abs(r - 1.0).max(axis=1) * min(a, b, c)

    return Mechanism("sliding_chain", f"Sliding chain: {n} links on spline surface joints",
                     model, q0, np.zeros(model.nv), fps, substeps, duration, integrator,
                     display=display, constraint_error=error,
                     info={"semi_axes": (a, b, c), "surface_map": pose_map, "fit_report": report})
