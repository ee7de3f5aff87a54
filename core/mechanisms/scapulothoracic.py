"""Scapulothoracic joint (seed 000 section 7, Fig. 4): the Seth 2019 scapula on a 2-DOF spline
surface joint over the thorax, held to the clavicle by damped springs.

The surface joint is :func:`core.fitting.surface.fit_spline_surface` fitted to the OpenSim
scapula poses ``T_thorax_scapula`` of :class:`core.reference.ScapulothoracicSeth2019` on its
17 x 11 grid over (abduction, elevation) with upward rotation and winging at zero, so the
joint's coordinates are OpenSim's abduction and elevation (rad) and the body frame is the
OpenSim scapula frame. The clavicle is fixed to the thorax; two damped springs of zero rest
length join points of the scapula to the clavicle where those points sit at the rest pose
(the OpenSim default abduction and elevation). Released away from rest, the scapula swings
over the thorax under gravity and the springs and settles.
"""

import numpy as np

from ..errors import InvalidInputError
from ..fitting.samples import JointSamples
from ..fitting.surface import fit_spline_surface
from ..joints.lower_pairs import Fixed
from ..model import Model
from ..reference import ScapulothoracicSeth2019
from .base import BodyDisplay, Mechanism, check_timing
from .shapes import frame, translation

__all__ = ["scapulothoracic_rig", "scapula_joint", "plate_contact_distance", "rib_bands",
           "SCAPULA_MASS", "SCAPULA_INERTIA", "PLATE", "SCAPULA_OUTLINE"]

#: Seth 2019 scapula mass (kg) and an approximate principal inertia (kg m^2)
SCAPULA_MASS = 0.7054
SCAPULA_INERTIA = (0.0012, 0.0012, 0.0005)
#: spring attachment points on the scapula (scapula frame, m)
SPRING_POINTS = ((0.0, 0.0, 0.0), (-0.03, -0.06, -0.06))
#: displayed scapula plate: full extents (m) in the OpenSim scapula joint frame ``cjoint``
#: (z along the thorax ellipsoid's outward normal at the contact point, thin along z)
PLATE = (0.09, 0.13, 0.01)
#: outline of the displayed scapula in the plate's x (lateral) - y (up) plane, counter-
#: clockwise, fitted to :data:`PLATE`: inferior angle, lateral border, glenoid, acromion,
#: superior border, superior angle, medial border
SCAPULA_OUTLINE = ((-0.2, -1.0), (0.35, 0.35), (0.5, 0.55), (0.5, 0.8), (0.15, 0.8),
                   (-0.5, 0.9), (-0.55, 0.3))


def rib_bands(radii, T_thorax_ellipsoid, n_ribs=6, n=64):
    """Rib-like bands on the thorax ellipsoid of semi-axes ``radii`` (its y axis up, centred
    at ``T_thorax_ellipsoid`` (4, 4) in the thorax frame): ``n_ribs`` closed horizontal rings
    of ``n`` points at evenly spaced heights between -0.75 and 0.6 of the y semi-axis, just
    outside the surface, in the thorax frame. Returns a tuple of (n, 3) arrays."""
    a, b, c = (float(r) for r in radii)
    th = np.linspace(0.0, 2.0 * np.pi, n)
    rings = []
    for h in np.linspace(-0.75, 0.6, int(n_ribs)):
        scale = np.sqrt(1.0 - h * h) * 1.02
        p = np.column_stack([a * scale * np.cos(th), np.full(n, b * h), c * scale * np.sin(th),
                             np.ones(n)])
        rings.append((p @ np.asarray(T_thorax_ellipsoid, dtype=float).T)[:, :3])
    return tuple(rings)

_CACHE = {}


def scapula_joint(grid=(8, 6)):
    """The scapulothoracic surface joint fitted to the OpenSim grid; ``(joint, report)``."""
    grid = tuple(int(g) for g in grid)
    if grid not in _CACHE:
        ref = ScapulothoracicSeth2019()
        g = ref.grid()
        q = g["q"][..., :2].reshape(-1, 2)
        T = g["T_thorax_scapula"].reshape(-1, 4, 4)
        fit = fit_spline_surface(JointSamples(T, q), grid=grid, method="coordinatewise")
        _CACHE[grid] = (fit.joint, fit.report)
    return _CACHE[grid]


def scapulothoracic_rig(*, fps=60.0, substeps=4, duration=3.0, start_offset=(0.25, 0.15),
                        stiffness=150.0, damping=1.5, integrator="rk4"):
    """The scapula released ``start_offset`` (abduction, elevation; rad) away from the
    OpenSim default pose, with damped springs (``stiffness`` N/m, ``damping`` N s/m).

    The scapula is drawn as a plate of the scapula's outline (:data:`SCAPULA_OUTLINE`)
    within :data:`PLATE`, whose inner face's centre is the OpenSim scapula joint frame's
    origin (``T_scapula_cjoint``), the point of the scapula that OpenSim's joint keeps on
    the thorax ellipsoid (at zero upward rotation and winging, as fitted); the thorax
    ellipsoid is drawn translucent in its joint frame ``T_thorax_pjoint`` with rib bands
    (:func:`rib_bands`), and each spring as a helix (scenery) stretched between its two
    attachment points at every frame.

    The constraint error is the largest distance (m) between the simulated scapula origin
    (in the thorax frame) and OpenSim's at the same (abduction, elevation).
    """
    substeps = check_timing("scapulothoracic", fps, substeps, duration)
    ref = ScapulothoracicSeth2019()
    joint, report = scapula_joint()
    rest = ref.defaults[:2]
    q0 = rest + np.asarray(start_offset, dtype=float)
    if np.any(q0 < joint.lower) or np.any(q0 > joint.upper):
        raise InvalidInputError(f"start pose {q0} leaves the fitted range "
                                f"{joint.lower}..{joint.upper}; use a smaller start_offset")
    model = Model(name="scapulothoracic")
    T_world_thorax = np.eye(4)
    T_world_thorax[:3, :3] = [[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]
    T_world_thorax[:3, 3] = [0.0, 0.0, 1.3]
    model.add_body("thorax", -1, Fixed(), T_world_thorax, mass=20.0,
                   com=(0.0, -0.15, 0.0), inertia=np.diag([1.0, 0.4, 0.9]))
    model.add_body("clavicle", 0, Fixed(), None, mass=0.16, inertia=np.diag([3e-4, 3e-4, 6e-5]))
    model.add_body("scapula", 0, joint, None, mass=SCAPULA_MASS,
                   inertia=np.diag(SCAPULA_INERTIA))
    T_rest = joint.transform(rest)
    anchors = []
    for p in SPRING_POINTS:
        anchor = T_rest[:3, :3] @ np.asarray(p) + T_rest[:3, 3]     # in the clavicle frame
        anchors.append(anchor)
        model.add_point_spring("scapula", p, "clavicle", anchor, stiffness, damping, 0.0)
    # the clavicle is drawn from the thorax midline to the acromial anchor, at its height
    acromion = anchors[0]
    medial = np.array([0.0, acromion[1], 0.0])
    length = float(np.linalg.norm(acromion - medial))
    clavicle_pose = frame(0.5 * (acromion + medial), [0.0, 1.0, 0.0], acromion - medial)
    ribs = BodyDisplay("ribs", "wire", (0.004, 0.0, 0.0), (0.93, 0.88, 0.8, 1.0),
                       polylines=rib_bands(ref.radii, ref.T_thorax_pjoint))
    display = (BodyDisplay("thorax", "ellipsoid", tuple(ref.radii), (0.85, 0.72, 0.66, 0.35),
                           ref.T_thorax_pjoint, parts=(ribs,)),
               BodyDisplay("clavicle", "bone", (0.008, length, 0.0), (0.95, 0.92, 0.85, 1.0),
                           clavicle_pose, axis=2),
               BodyDisplay("scapula", "plate", PLATE, (0.95, 0.92, 0.85, 1.0),
                           ref.T_scapula_cjoint @ translation([0.0, 0.0, 0.5 * PLATE[2]]),
                           geometry=SCAPULA_OUTLINE))
    springs = tuple(BodyDisplay(f"spring{k}", "helix", (0.01, 0.002, 8.0),
                                (0.95, 0.45, 0.05, 1.0), ends=((2, p), (1, tuple(anchor))))
                    for k, (p, anchor) in enumerate(zip(SPRING_POINTS, anchors)))

    def error(mech, times, q, poses):
        """Distance (m) of the scapula origin from OpenSim's at the same coordinates."""
        T_sim = np.linalg.inv(poses[:, 0]) @ poses[:, 2]
        qs = np.zeros((len(q), 4))
        qs[:, :2] = q
        T_ref = ref.poses(qs)
        return np.linalg.norm(T_sim[:, :3, 3] - T_ref[:, :3, 3], axis=1)

    return Mechanism("scapulothoracic", "Scapulothoracic: Seth 2019 scapula on a spline "
                     "surface joint", model, q0, np.zeros(2), fps, substeps, duration,
                     integrator, display=display, constraint_error=error, passive=False,
                     scenery=springs, info={"fit_report": report, "rest": rest, "springs": SPRING_POINTS})


def plate_contact_distance(poses, display):
    """Distance (m) of the displayed scapula plate's contact point (the centre of its inner
    face) from the drawn thorax ellipsoid, per frame.

    poses: ``(F, 3, 4, 4)`` world poses of thorax, clavicle and scapula (a simulation's
    ``poses``); display: the mechanism's three :class:`BodyDisplay` entries (thorax
    ellipsoid with its semi-axes as size, clavicle, scapula plate). The distance is measured along the ray from the
    ellipsoid's centre (an upper bound of the distance to the nearest ellipsoid point).
    Returns ``(F,)``.
    """
    thorax, _, scapula = display
    inner = scapula.offset @ np.array([0.0, 0.0, -0.5 * scapula.size[2], 1.0])
    world = np.einsum("fij,j->fi", np.asarray(poses, dtype=float)[:, 2], inner)
    T_ell = np.asarray(poses, dtype=float)[:, 0] @ thorax.offset     # ellipsoid centre frame
    local = np.einsum("fij,fi->fj", T_ell[:, :3, :3], world[:, :3] - T_ell[:, :3, 3])
    scale = np.linalg.norm(local / np.asarray(thorax.size, dtype=float), axis=1)
    return np.linalg.norm(local, axis=1) * np.abs(1.0 - 1.0 / scale)
