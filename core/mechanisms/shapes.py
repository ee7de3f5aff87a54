"""Small geometric helpers shared by the mechanism modules: rigid-body inertias of simple
shapes, frames from tangent/normal vectors, and spline surface joints (seed 000 section 5.2,
eqs. 25-26) fitted to an analytic pose map with the project's surface fitter.
"""

import numpy as np

from ..errors import InvalidInputError
from ..fitting.samples import JointSamples
from ..fitting.surface import fit_spline_surface

__all__ = ["rod_inertia", "sphere_inertia", "ellipsoid_inertia", "box_inertia", "frame",
           "translation", "surface_joint_from_map"]


def rod_inertia(mass, length, radius, axis=0):
    """Rotational inertia ``(3, 3)`` about the centre of a solid cylinder along ``axis``."""
    Ia = 0.5 * mass * radius ** 2
    It = mass * (3 * radius ** 2 + length ** 2) / 12.0
    d = np.full(3, It)
    d[axis] = Ia
    return np.diag(d)


def sphere_inertia(mass, radius):
    """Solid sphere about its centre: ``(3, 3)``."""
    return 0.4 * mass * radius ** 2 * np.eye(3)


def ellipsoid_inertia(mass, semi_axes):
    """Solid ellipsoid with semi-axes ``(a, b, c)`` about its centre: ``(3, 3)``."""
    a, b, c = semi_axes
    return 0.2 * mass * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])


def box_inertia(mass, extents):
    """Solid box with full extents ``(x, y, z)`` about its centre: ``(3, 3)``."""
    x, y, z = extents
    return mass / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])


def translation(p):
    """``(4, 4)`` pure translation by ``p: (3,)``."""
    T = np.eye(4)
    T[:3, 3] = p
    return T


def frame(origin, x_axis, z_axis):
    """Transforms ``(..., 4, 4)`` with origin ``(..., 3)``, z along ``z_axis`` and x along the
    part of ``x_axis`` orthogonal to z (both normalized; y = z x x)."""
    z = np.asarray(z_axis, dtype=float)
    z = z / np.linalg.norm(z, axis=-1, keepdims=True)
    x = np.asarray(x_axis, dtype=float)
    x = x - np.sum(x * z, axis=-1, keepdims=True) * z
    nx = np.linalg.norm(x, axis=-1, keepdims=True)
    if np.any(nx < 1e-12):
        raise InvalidInputError("frame: x_axis is parallel to z_axis; pick another reference")
    x = x / nx
    y = np.cross(z, x)
    shape = np.broadcast_shapes(np.shape(origin), x.shape)[:-1]
    T = np.zeros(shape + (4, 4))
    T[..., :3, 0], T[..., :3, 1], T[..., :3, 2] = x, y, z
    T[..., :3, 3] = origin
    T[..., 3, 3] = 1.0
    return T


def surface_joint_from_map(pose_map, ranges, n_ctrl=(8, 8), samples=(25, 25),
                           method="coordinatewise"):
    """An n-DOF :class:`SplineJoint` (n = len(ranges)) fitted to an analytic pose map with
    :func:`core.fitting.surface.fit_spline_surface` on a regular sample grid.

    pose_map: ``(q (N, n)) -> (N, 4, 4)`` transforms; ranges: n ``(lo, hi)`` coordinate
    intervals (the joint's domain); n_ctrl: control points per axis; samples: grid points
    per axis; method: "coordinatewise" (linear, the seed's "naive" fit of section 8) or
    "se3". Returns ``(joint, report)``.
    """
    axes = [np.linspace(lo, hi, m) for (lo, hi), m in zip(ranges, samples)]
    q = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(ranges))
    poses = np.asarray(pose_map(q), dtype=float)
    fit = fit_spline_surface(JointSamples(poses, q), grid=tuple(n_ctrl), method=method)
    return fit.joint, fit.report
