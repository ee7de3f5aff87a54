"""The demo linkages, as :class:`core.linkage.Linkage` descriptions (numpy only).

Each builder returns ``(linkage, sizes)``: ``sizes[body] = (length x, y, z)`` of the box that
draws the body, centred on its origin. Plane linkages lie in the world xz plane (hinge axes
along y, so a camera on -y sees them square on); the loops close with hinges along a spanning
tree and ``line`` joints (a point sliding along the hinge axis: the two in-plane constraints
of a pin), so no constraint is repeated in space (a plane loop of hinges only repeats three
per loop). Units: m, kg, s, rad.
"""

from __future__ import annotations

import numpy as np

from .lie import se3, so3
from .linkage import LinkBody, LinkJoint, Linkage, LinkSpring, LiveAssembly

__all__ = ["four_bar", "scissor_lift", "door", "four_bar_position", "DEMOS"]

#: a joint frame whose z axis is the world y axis (the hinge axis of the plane linkages)
_Y_AXIS = so3.exp(np.array([-np.pi / 2, 0.0, 0.0]))


def _bar(name, start, end, mass_per_m=2.0, thickness=0.05):
    """A bar from ``start`` to ``end`` (in the xz plane): its local x runs along it."""
    start, end = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    d = end - start
    L = float(np.linalg.norm(d))
    R = so3.exp(np.array([0.0, -np.arctan2(d[2], d[0]), 0.0]))
    m = mass_per_m * L
    t2 = thickness ** 2
    inertia = m / 12.0 * np.diag([2 * t2, L ** 2 + t2, L ** 2 + t2])
    return LinkBody(name, se3.from_rp(R, 0.5 * (start + end)), m, inertia), (L, thickness, thickness)


def _joint(name, kind, bodies, b1, b2, origin, R=_Y_AXIS, **kw):
    """A joint whose world frame at the described configuration is ``(R, origin)``."""
    F = se3.from_rp(R, np.asarray(origin, dtype=float))

    def local(b):
        return F if b == "" else se3.inv(bodies[b].T) @ F
    return LinkJoint(name, kind, b1, b2, local(b1), local(b2), **kw)


def four_bar_position(theta, a, b, c, d):
    """Closed-form position analysis of the plane four-bar (ground pivots O = 0 and
    D = (d, 0), crank a, coupler b, rocker c, the open branch: B left of the line A->D):
    ``theta: (F,)`` crank angles -> ``A: (F, 2)``, ``B: (F, 2)`` in the linkage's plane."""
    th = np.asarray(theta, dtype=float)
    A = np.stack([a * np.cos(th), a * np.sin(th)], axis=-1)
    AD = np.array([d, 0.0]) - A
    e = np.linalg.norm(AD, axis=-1)
    x = (b ** 2 - c ** 2 + e ** 2) / (2 * e)
    y = np.sqrt(np.maximum(b ** 2 - x ** 2, 0.0))
    ex = AD / e[..., None]
    ey = np.stack([-ex[..., 1], ex[..., 0]], axis=-1)
    return A, A + x[..., None] * ex + y[..., None] * ey


def four_bar(a=0.5, b=1.8, c=1.2, d=2.0, theta=0.6, driven=True):
    """Crank-rocker four-bar in the xz plane (Grashof: a + d <= b + c): crank ``a`` turning
    about the origin, coupler ``b``, rocker ``c`` about ``(d, 0, 0)``; crank angle ``theta``
    (from +x towards +z). Joints: hinges at the ground pivots and crank-coupler, a ``line``
    joint coupler-rocker. ``driven``: the crank is the driving body."""
    A2, B2 = four_bar_position(np.array([theta]), a, b, c, d)
    A, B = (np.array([p[0, 0], 0.0, p[0, 1]]) for p in (A2, B2))
    D = np.array([d, 0.0, 0.0])
    parts = [_bar("crank", np.zeros(3), A), _bar("coupler", A, B), _bar("rocker", D, B)]
    bodies = {p[0].name: p[0] for p in parts}
    joints = (_joint("ground crank", "hinge", bodies, "", "crank", np.zeros(3)),
              _joint("crank coupler", "hinge", bodies, "crank", "coupler", A),
              _joint("coupler rocker", "line", bodies, "coupler", "rocker", B),
              _joint("ground rocker", "hinge", bodies, "", "rocker", D))
    return (Linkage(tuple(bodies.values()), joints, driver="crank" if driven else ""),
            {p[0].name: p[1] for p in parts})


def scissor_lift(width=1.0, height=0.6, stages=2, spring=3000.0, lift_travel=0.06,
                 damping=30.0):
    """A scissor lift of ``stages`` crossed pairs of bars ``width`` wide and ``height`` tall
    per stage in the xz plane, a platform on top and a block sliding along x under the right
    foot (the driving joint ``"drive"``, coordinate = the block's travel in m). The left feet
    are hinged to the ground and to the stage below; the crossing pivots are ``line`` joints,
    the platform rests on the top right bar end by a ``plane`` joint. A spring of ``spring``
    N/m and ``damping`` N s/m pulls the block to the left; its rest length puts the
    equilibrium ``lift_travel`` m left of the start, so a dynamics bake lifts the platform
    and lets it settle."""
    bodies, sizes, joints = {}, {}, []

    def add(part):
        bodies[part[0].name], sizes[part[0].name] = part

    add(_bar("block", [width - 0.1, 0.0, 0.0], [width + 0.1, 0.0, 0.0], mass_per_m=5.0))
    joints.append(_joint("drive", "slider", bodies, "", "block", [width, 0.0, 0.0],
                         R=so3.exp(np.array([0.0, np.pi / 2, 0.0]))))
    below_left, below_right = "", "block"
    for s in range(stages):
        z0, z1 = s * height, (s + 1) * height
        up, down = f"bar {s + 1}a", f"bar {s + 1}b"
        add(_bar(up, [0.0, 0.0, z0], [width, 0.0, z1]))
        add(_bar(down, [width, 0.0, z0], [0.0, 0.0, z1]))
        joints.append(_joint(f"foot {s + 1}a", "hinge", bodies, below_left, up, [0.0, 0.0, z0]))
        joints.append(_joint(f"foot {s + 1}b", "hinge", bodies, below_right, down,
                             [width, 0.0, z0]))
        joints.append(_joint(f"pivot {s + 1}", "line", bodies, up, down,
                             [0.5 * width, 0.0, 0.5 * (z0 + z1)]))
        below_left, below_right = down, up
    top = stages * height
    add(_bar("platform", [-0.1, 0.0, top + 0.05], [width + 0.2, 0.0, top + 0.05],
             mass_per_m=4.0, thickness=0.1))
    joints.append(_joint("platform hinge", "hinge", bodies, below_left, "platform",
                         [0.0, 0.0, top]))
    joints.append(_joint("platform rest", "plane", bodies, "platform", below_right,
                         [width, 0.0, top], R=np.eye(3)))
    lift = Linkage(tuple(bodies.values()), tuple(joints), drive_joint="drive")
    # the spring's rest length: the block's equilibrium lies `lift_travel` m to the left of
    # where it starts, from the virtual work of gravity (heights' slope from two assemblies)
    live = LiveAssembly(lift)
    h = 1e-5
    dz = (live.solve(live.driver_pose(h)).poses[:, 2, 3]
          - live.solve(live.driver_pose(-h)).poses[:, 2, 3]) / (2 * h)
    push = -float(np.sum(np.array([b.mass for b in lift.bodies]) * 9.81 * dz))  # N along +x
    anchor = np.array([-0.5, 0.0, 0.0])
    stretch = width + 0.5 - push / spring - lift_travel
    springs = (LinkSpring("lift spring", "", "block", anchor, np.zeros(3), spring, stretch,
                          damping=damping),)
    return Linkage(lift.bodies, lift.joints, springs, drive_joint="drive"), sizes


def door(width=0.9, height=2.0, thickness=0.04, mass=20.0, opened=1.2, closer=60.0,
         upper=2.0):
    """A door on a vertical hinge (world z) at the origin with a stop: the hinge angle is
    limited to ``[0, upper]`` rad, 0 being shut against the stop. The door starts ``opened``
    rad open and at rest; a closer spring (``closer`` N/m, rest length 0) from the frame to
    the door's free edge swings it shut into the stop."""
    centre = np.array([0.5 * width, 0.0, 0.5 * height])
    inertia = mass / 12.0 * np.diag([thickness ** 2 + height ** 2, width ** 2 + height ** 2,
                                     width ** 2 + thickness ** 2])
    shut = LinkBody("door", se3.from_rp(np.eye(3), centre), mass, inertia)
    hinge = _joint("hinge", "hinge", {"door": shut}, "", "door", [0.0, 0.0, 0.5 * height],
                   R=np.eye(3), lower=(0.0,), upper=(upper,))
    turn = se3.from_rp(so3.exp(np.array([0.0, 0.0, opened])), np.zeros(3))
    opened_door = LinkBody("door", turn @ shut.T, mass, inertia)
    spring = LinkSpring("closer", "", "door", np.array([1.2 * width, -0.3, 0.5 * height]),
                        np.array([0.5 * width, 0.0, 0.0]), closer, 0.0, damping=2.0)
    return (Linkage((opened_door,), (hinge,), (spring,)),
            {"door": (width, thickness, height)})


DEMOS = {"four_bar": four_bar, "scissor_lift": scissor_lift, "door": door}
