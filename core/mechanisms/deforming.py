"""Deforming spline surface joint (seed 000 section 7, Fig. 5d): a ball slides on a surface
whose shape changes kinematically.

The seed deforms the surface by moving its control coefficients; here the coefficients are
themselves a cubic B-spline in time, i.e. the joint is a 3-coordinate tensor-product
:class:`core.joints.spline_surface.SplineJoint` ``G(u, v, t)`` (eqs. 25-26) whose third
coordinate is time, prescribed by a :class:`.base.Drive` (``t``, rate 1, acceleration 0).
The rheonomic joint thereby becomes a scleronomic one with one driven coordinate, the
dynamics need nothing new, and the work the deformation does on the ball is the drive's
work. ``G`` puts the ball's centre one ball radius above the surface
``z = bowl (x^2 + y^2) + amplitude sin(2 pi t / period) cos(pi x / size) cos(pi y / size)``
with the ball's z axis along the surface normal; it is fitted to that map with
:func:`core.fitting.surface.fit_spline_surface` (coordinatewise).
"""

import numpy as np

from ..errors import InvalidInputError
from ..model import Model
from .base import BodyDisplay, Drive, Mechanism, check_timing
from .shapes import frame, sphere_inertia, surface_joint_from_map

__all__ = ["deforming_surface", "MAX_TIME_CONTROL_POINTS"]

#: the most control points of the surface joint along time (the fit of the default 9 x 9
#: grid with 32 of them takes about 20 s and 2.5 GB)
MAX_TIME_CONTROL_POINTS = 32


def deforming_surface(*, fps=60.0, substeps=4, duration=4.0, size=0.6, bowl=0.8,
                      amplitude=0.08, period=2.0, ball_radius=0.05, ball_mass=0.2,
                      start=(0.35, -0.2), integrator="rk4", n_ctrl=None, sheet_grid=25):
    """A ball on a bowl-shaped sheet over ``[-size, size]^2`` that ripples with
    ``amplitude`` (m) and ``period`` (s); released at ``start`` (fractions of size).
    n_ctrl: control points along (u, v, t); default 9 x 9 and about 4 per period in time;
    sheet_grid: vertices per side of the drawn sheet.

    The sheet is the mechanism's ``scenery``: one :class:`.base.BodyDisplay` "surface" whose
    ``vertices(t)`` is the ``(sheet_grid, sheet_grid, 3)`` grid of world points of the exact
    surface at time t. The constraint error is the distance of the ball's centre from the
    exact surface offset by the ball radius, along the surface normal through the ball's
    contact point (m).
    """
    substeps = check_timing("deforming_surface", fps, substeps, duration)
    if not (size > 0 and period > 0 and ball_radius > 0 and duration > 0):
        raise InvalidInputError("deforming_surface: size, period, ball_radius and duration "
                                "must be > 0")
    if int(sheet_grid) < 2:
        raise InvalidInputError(f"deforming_surface: sheet_grid must be >= 2 vertices per "
                                f"side, got {sheet_grid}")
    k = np.pi / size
    w = 2 * np.pi / period

    def height(x, y, t):
        return bowl * (x * x + y * y) + amplitude * np.sin(w * t) * np.cos(k * x) * np.cos(k * y)

    def normal(x, y, t):
        s = amplitude * np.sin(w * t)
        hx = 2 * bowl * x - s * k * np.sin(k * x) * np.cos(k * y)
        hy = 2 * bowl * y - s * k * np.cos(k * x) * np.sin(k * y)
        n = np.stack([-hx, -hy, np.ones_like(x)], axis=-1)
        return n / np.linalg.norm(n, axis=-1, keepdims=True)

    def pose_map(q):
        x, y, t = q[:, 0], q[:, 1], q[:, 2]
        n = normal(x, y, t)
        p = np.stack([x, y, height(x, y, t)], axis=1) + ball_radius * n
        return frame(p, np.broadcast_to([1.0, 0.0, 0.0], p.shape), n)

    t_end = float(duration) + 0.1
    if n_ctrl is None:
        n_ctrl = (9, 9, int(np.ceil(4 * t_end / period)) + 3)
    if n_ctrl[2] > MAX_TIME_CONTROL_POINTS:
        longest = (MAX_TIME_CONTROL_POINTS - 3) * period / 4 - 0.1
        raise InvalidInputError(
            f"deforming_surface: {duration:g} s of a surface rippling every {period:g} s needs "
            f"{n_ctrl[2]} spline control points in time, more than "
            f"{MAX_TIME_CONTROL_POINTS} (fitting the surface would take minutes and gigabytes);"
            f" make the duration at most {longest:.3g} s or the period longer")
    samples = (2 * n_ctrl[0] + 1, 2 * n_ctrl[1] + 1, 2 * n_ctrl[2] + 1)
    joint, report = surface_joint_from_map(
        pose_map, ((-size, size), (-size, size), (0.0, t_end)), n_ctrl=n_ctrl,
        samples=samples)
    model = Model(name="deforming_surface")
    model.add_body("ball", -1, joint, mass=ball_mass, inertia=sphere_inertia(ball_mass,
                                                                              ball_radius))
    q0 = np.array([start[0] * size, start[1] * size, 0.0])
    drive = Drive((2,), lambda t: ([t], [1.0], [0.0]), "the surface deforms with time")
    display = (BodyDisplay("ball", "sphere", (ball_radius, 0, 0), (0.1, 0.85, 0.9, 1.0)),)

    g = np.linspace(-size, size, int(sheet_grid))
    X, Y = np.meshgrid(g, g, indexing="ij")

    def sheet(t):
        """World points ``(sheet_grid, sheet_grid, 3)`` of the surface at time t (s)."""
        return np.stack([X, Y, height(X, Y, t)], axis=-1)

    scenery = (BodyDisplay("sheet", "surface", colour=(0.95, 0.7, 0.3, 1.0), vertices=sheet),)

    def error(mech, times, q, poses):
        """|ball centre - (contact point + radius * normal)|, contact point found by fixed-
        point iteration on the exact surface (m): (F,)."""
        c = poses[:, 0, :3, 3]
        x, y = c[:, 0].copy(), c[:, 1].copy()
        for _ in range(30):
            n = normal(x, y, times)
            x, y = c[:, 0] - ball_radius * n[:, 0], c[:, 1] - ball_radius * n[:, 1]
        n = normal(x, y, times)
        target = np.stack([x, y, height(x, y, times)], axis=1) + ball_radius * n
        return np.linalg.norm(c - target, axis=1)

    return Mechanism("deforming_surface", "Deforming spline surface joint", model, q0,
                     np.array([0.0, 0.0, 1.0]), fps, substeps, duration, integrator,
                     drive=drive, display=display, constraint_error=error, passive=False,
                     scenery=scenery, info={"fit_report": report, "size": size})
