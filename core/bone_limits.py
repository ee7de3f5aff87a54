"""A bone held inside its limits, and the limits Blender's own constraints can keep.

* :func:`hold_rotation`: a bone's joint rotation (its basis rotation, :mod:`core.bones`)
  projected into its reach cone and twist limit (:func:`core.limit_projection.project_to_limits`
  in the cone coordinates of :func:`core.fitting.reach_cone.cone_coordinates`);
* :func:`hold_coordinates`: a driven joint's coordinates clamped to their ranges;
* :func:`hinge_limit`: a 1-coordinate joint that turns its bone about one of the bone's own
  axes (X, Y or Z of the rest frame) about its head, and nothing else, over its range: then
  a Blender Limit Rotation constraint in local space holds exactly the joint's range.
  A reach cone never is such a box (its swing is a two-dimensional region), so only hinges
  are offered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from .bones import BONE_AXIS, REF_AXIS, BoneCone, joint_basis
from .checks import real_number
from .errors import InvalidInputError
from .fitting import reach_cone
from .lie import so3
from .limit_projection import LimitProjection, project_to_limits

__all__ = ["hold_rotation", "hold_coordinates", "HingeLimit", "hinge_limit", "HINGE_TOL",
           "HINGE_SAMPLES"]

#: how far (radians off the axis, metres of slide) a joint may stray from a pure hinge and
#: still count as one: a hundred times the single-precision resolution of a Blender pose
#: (~1e-7), so hinges captured from a rig and fitted qualify, any real swing or slide does not
HINGE_TOL = 1e-5

#: coordinate samples over the range at which :func:`hinge_limit` checks the joint
HINGE_SAMPLES = 257

_AXES = "XYZ"


def hold_rotation(cone: BoneCone, R) -> tuple[np.ndarray, LimitProjection]:
    """The joint rotation closest to ``R`` (3, 3) inside the bone's reach cone and twist limit.

    The cone coordinates ``r = log(N^T R)`` (N: the cone's neutral rotation, bone Y axis to
    the cone axis) are projected by :func:`core.limit_projection.project_to_limits` about the
    bone's Y axis (elliptical half-angles towards X and Z, twist within +-twist_limit).
    Returns ``(N R*, projection)``: the held rotation (3, 3) and the projection's result (its
    distances in radians; ``inside`` when R was admissible, then the rotation returned is R's
    own ``N exp(r)``).
    """
    N = reach_cone.neutral_rotation(BONE_AXIS, cone.axis)
    r = reach_cone.cone_coordinates(R, N)
    phi1, phi2 = cone.half_angles
    # a circular half-angle or twist limit of pi or more limits nothing (Blender's single
    # precision stores its maximum, pi, as 3.1415927 > pi)
    twist = min(real_number(cone.twist_limit, "twist limit", 0.0, advice="an angle in radians"),
                math.pi)
    if cone.shape == "circular":
        phi1, phi2 = min(real_number(phi1, "half-angle", 0.0, low_open=True,
                                     advice="an angle in radians"), math.pi), None
    proj = project_to_limits(r, BONE_AXIS, phi1, phi2, REF_AXIS, -twist, twist)
    return N @ proj.R, proj


def hold_coordinates(q, ranges) -> np.ndarray:
    """Coordinates q (nq,) clamped to ``ranges`` (nq, 2) of [lower, upper] (infinite ends
    allowed)."""
    q = np.asarray(q, dtype=float)
    ranges = np.asarray(ranges, dtype=float)
    if ranges.shape != (q.size, 2) or np.any(np.isnan(ranges)) \
            or np.any(ranges[:, 0] > ranges[:, 1]):
        raise InvalidInputError(f"ranges must be ({q.size}, 2) pairs lower <= upper for {q.size} "
                                f"coordinates, got {ranges.tolist()}")
    return np.clip(q, ranges[:, 0], ranges[:, 1])


@dataclass(frozen=True)
class HingeLimit:
    """A joint range as a Blender Limit Rotation in the bone's local space: the bone turns
    about its rest-frame axis ``axis`` (0, 1, 2: X, Y, Z) by angles in [lower, upper]
    (radians, right-handed), the other two Euler angles stay 0."""

    axis: int
    lower: float
    upper: float


def _hinge_angles(joint, T_rest, qs):
    """Basis rotation vectors (N, 3) and translations (N, 3) of the bone at coordinates qs."""
    B = joint_basis(joint, T_rest, qs.reshape(-1, 1))
    return so3.log(B[:, :3, :3]), B[:, :3, 3]


def hinge_limit(joint, T_rest, ranges, tol=HINGE_TOL) -> HingeLimit:
    """The :class:`HingeLimit` of a 1-coordinate joint over its range, or InvalidInputError
    saying why Blender's Limit Rotation cannot hold it exactly.

    joint: a core joint with nq = 1; T_rest: (4, 4) the bone's rest pose in its parent;
    ranges: (1, 2) the coordinate's finite [lower, upper]. The bone's basis
    (:func:`core.bones.joint_basis`) is checked at :data:`HINGE_SAMPLES` coordinates: its
    translation must stay within ``tol`` metres of 0 and its rotation vector within ``tol``
    radians of one rest-frame axis; the angle's extremes between samples are refined with
    scipy's bounded Brent. Angles must stay inside (-pi, pi) (Euler angles of one turn).
    """
    if joint.nq != 1:
        raise InvalidInputError(f"the joint has {joint.nq} coordinates; only a 1-coordinate "
                                "hinge is a Blender Limit Rotation range")
    tol = real_number(tol, "tol", 0.0, low_open=True, advice="radians and metres")
    ranges = np.asarray(ranges, dtype=float).reshape(-1)
    if ranges.shape != (2,) or not np.all(np.isfinite(ranges)) or ranges[0] > ranges[1]:
        raise InvalidInputError(f"the coordinate's range must be finite [lower, upper], got "
                                f"{ranges.tolist()}; store finite ranges on the joint")
    qs = np.linspace(ranges[0], ranges[1], HINGE_SAMPLES)
    rv, loc = _hinge_angles(joint, T_rest, qs)
    slide = float(np.max(np.linalg.norm(loc, axis=1)))
    axis = int(np.argmax(np.max(np.abs(rv), axis=0)))
    off = float(np.max(np.linalg.norm(np.delete(rv, axis, axis=1), axis=1)))
    problems = []
    if slide > tol:
        problems.append(f"the bone's head moves up to {slide * 1e3:.3g} mm")
    if off > tol:
        problems.append(f"it turns up to {math.degrees(off):.3g} deg off its {_AXES[axis]} axis")
    angles = rv[:, axis]
    if np.any(np.abs(angles) > math.pi - tol) or np.any(np.abs(np.diff(angles)) > math.pi):
        problems.append("it turns half a turn or more (an Euler range cannot wrap)")
    if problems:
        raise InvalidInputError("this joint is not a hinge about one of the bone's axes: "
                                + "; ".join(problems) + ", so a Limit Rotation constraint would "
                                "not hold its range exactly; keep Hold Limits on instead")

    def extreme(sign):
        k = int(np.argmax(sign * angles))
        if k in (0, len(qs) - 1):
            return float(angles[k])
        res = minimize_scalar(lambda q: -sign * _hinge_angles(joint, T_rest, np.array([q]))[0][0, axis],
                              bounds=(qs[k - 1], qs[k + 1]), method="bounded",
                              options={"xatol": 1e-12})
        return max(float(angles[k]), -sign * float(res.fun), key=lambda a: sign * a)

    return HingeLimit(axis, extreme(-1.0), extreme(1.0))
