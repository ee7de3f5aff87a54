"""Inverse kinematics on a serial chain of joints by damped least squares with the joints'
analytic body Jacobians (seed 000 section 7, Fig. 3: the knee spline joint in a leg).

A :class:`Chain` is ``T(q) = P_1 G_1(q_1) P_2 G_2(q_2) ... P_n G_n(q_n) T_tip``: constant
placements ``P_i`` (joint frame of joint i in the previous child frame) and joint transforms
``G_i``. The end-effector body Jacobian stacks ``Ad_{X_i^-1} S_i(q_i)`` with
``X_i = P_{i+1} G_{i+1} ... T_tip`` (eq. 12 chained). :func:`solve_ik` minimizes the metric
norm of ``e = log(T(q)^-1 T_target)`` by Levenberg-Marquardt-damped least squares
(``(J^T J + lambda^2 I) dq = J^T Jl(e)^-1 e`` in the metric), projects onto the joint limits and
keeps a step only if the error decreases.
"""

from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidInputError
from ..joints.base import Joint
from ..lie import se3, so3
from ..checks import real_number, whole_number
from .metric import SE3Metric

__all__ = ["Chain", "IKResult", "solve_ik", "joint_coordinates", "leg_chain", "default_start", "IK_STATUSES",
           "IK_LENGTH_SCALE", "RESTART_FRACTIONS", "GAIT2392_ANKLE_OFFSET", "GAIT2392_ANKLE_AXIS",
           "GAIT2392_ANKLE_RANGE"]

#: possible IKResult.status values
IK_STATUSES = ("converged", "unreachable", "max_iterations")

#: ankle joint centre in the tibia frame (m), about the gait2392 ankle_r location
GAIT2392_ANKLE_OFFSET = (0.0, -0.43, 0.0)
#: ankle_r rotation axis (unit vector, tibia frame), as in gait2392
GAIT2392_ANKLE_AXIS = (-0.10501355, -0.17402245, 0.97912632)
#: ankle_angle_r range (rad): -40 .. +30 degrees
GAIT2392_ANKLE_RANGE = (-0.6981317, 0.5235988)


def _pose(value, name):
    """``value`` as a checked (4, 4) rigid transform, or InvalidInputError naming it."""
    try:
        value = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be one (4, 4) pose of numbers") from None
    value = se3.check_transform(value, name)
    if value.shape != (4, 4):
        raise InvalidInputError(f"{name} must be one (4, 4) pose, got {value.shape}")
    return value


class Chain:
    """Serial chain of joints.

    joints: list of :class:`core.joints.Joint`; placements: list of (4, 4) ``P_i`` (default
    identities); tip: (4, 4) end-effector frame in the last joint's child frame.
    Attributes: ``nq`` (total), ``lower``/``upper`` (nq,), ``slices`` per joint.
    """

    def __init__(self, joints, placements=None, tip=None):
        self.joints = list(joints)
        if not self.joints:
            raise InvalidInputError("a chain needs at least one joint")
        for i, joint in enumerate(self.joints):
            if not isinstance(joint, Joint):
                raise InvalidInputError(f"joint {i} of the chain is a {type(joint).__name__}, not "
                                        "a core.joints joint; build the chain from joints")
        if placements is None:
            placements = [np.eye(4)] * len(self.joints)
        if len(placements) != len(self.joints):
            raise InvalidInputError(f"got {len(placements)} placements for {len(self.joints)} "
                                    "joints; pass one (4, 4) placement per joint")
        self.placements = [_pose(P, f"placement {i}") for i, P in enumerate(placements)]
        self.tip = np.eye(4) if tip is None else _pose(tip, "tip")
        sizes = [j.nq for j in self.joints]
        ends = np.cumsum(sizes)
        self.slices = [slice(int(e - s), int(e)) for s, e in zip(sizes, ends)]
        self.nq = int(ends[-1])
        self.lower = np.concatenate([j.lower for j in self.joints])
        self.upper = np.concatenate([j.upper for j in self.joints])

    def check_q(self, q):
        """``q`` as a finite float array ``(nq,)``, or InvalidInputError."""
        try:
            q = np.asarray(q, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise InvalidInputError(f"chain coordinates must be {self.nq} numbers") from None
        if q.shape != (self.nq,) or not np.all(np.isfinite(q)):
            raise InvalidInputError(f"chain coordinates must be {self.nq} finite numbers, got "
                                    f"shape {q.shape}")
        return q

    def forward(self, q):
        """End-effector pose ``T (4, 4)`` and body Jacobian ``J (6, nq)`` at ``q: (nq,)``."""
        q = self.check_q(q)
        Gs, Ss = [], []
        for joint, sl in zip(self.joints, self.slices):
            G, S, _ = joint.evaluate(q[sl])
            Gs.append(G)
            Ss.append(S)
        J = np.zeros((6, self.nq))
        X = self.tip.copy()  # X_i = transform from joint i's child frame to the tip
        for i in range(len(self.joints) - 1, -1, -1):
            J[:, self.slices[i]] = se3.Ad_inv(X) @ Ss[i]
            X = self.placements[i] @ Gs[i] @ X
        return X, J

    def pose(self, q):
        """End-effector pose ``(4, 4)``."""
        return self.forward(q)[0]

    def normalize(self, q):
        """Apply each joint's chart change (spherical joints past pi) to ``q``."""
        q = q.copy()
        for joint, sl in zip(self.joints, self.slices):
            q[sl] = joint.normalize(q[sl], np.zeros(joint.nq))[0]
        return q


@dataclass
class IKResult:
    """Outcome of :func:`solve_ik`.

    q (nq,): the best coordinates found (within the limits); pose (4, 4): T(q);
    status: "converged" (both tolerances met), "unreachable" (the error stopped decreasing
    above tolerance: q is the closest pose found) or "max_iterations";
    position_error (m), rotation_error (rad): of the returned pose; iterations;
    error_trace: metric error norm after each accepted step of the returned run, starting
    with its initial one; runs: how many runs (1 + restarts) were made.
    """

    q: np.ndarray
    pose: np.ndarray
    status: str
    iterations: int
    position_error: float
    rotation_error: float
    error_trace: list = field(default_factory=list)
    runs: int = 1

    @property
    def converged(self):
        return self.status == "converged"


def _errors(T, target):
    e = se3.log(se3.inv(T) @ target)
    return e, float(np.linalg.norm(T[:3, 3] - target[:3, 3])), float(np.linalg.norm(e[:3]))


def default_start(chain):
    """Middle of each finite coordinate range, 0 for unlimited coordinates: ``(nq,)``."""
    finite = np.isfinite(chain.lower) & np.isfinite(chain.upper)
    return np.where(finite, 0.5 * (np.where(finite, chain.lower, 0.0)
                                   + np.where(finite, chain.upper, 0.0)), 0.0)


def _align_root(chain, q, target):
    """If the chain's first joint is spherical, set its coordinates so that the end
    orientation equals the target's for the other coordinates as they are (a start that
    leaves only the position to the solver)."""
    from ..joints.spherical import Spherical
    if not isinstance(chain.joints[0], Spherical):
        return q
    q = q.copy()
    q[chain.slices[0]] = 0.0
    P = chain.placements[0]
    X = se3.inv(P) @ chain.pose(q)  # root joint child frame -> tip, with G_1 = I
    R1 = P[:3, :3].T @ target[:3, :3] @ X[:3, :3].T
    q[chain.slices[0]] = so3.log(R1)
    return q


def _project(chain, q):
    return np.clip(q, chain.lower, chain.upper)


#: IK metric length scale (m per rad): weighing orientation this strongly keeps the 5-DOF leg
#: out of the mirrored-knee local minimum near full extension (measured: 200/200 random
#: reachable targets in <= 12 iterations, versus 181/200 with 0.1)
IK_LENGTH_SCALE = 1.0

#: fractions of the finite coordinate ranges tried as restarts after a stalled run
RESTART_FRACTIONS = (1.0, 0.75, 0.25, 0.0)


def solve_ik(chain, target, q0=None, max_iterations=20, position_tol=1e-6, rotation_tol=1e-4,
             length_scale=IK_LENGTH_SCALE, damping=1e-3, restarts=True):
    """Damped least squares IK for ``chain`` to reach the pose ``target: (4, 4)``.

    q0: (nq,) start (default: the middle of each coordinate's range where both limits are
    finite, else 0, with a spherical root joint turned so that the end orientation matches
    the target's); the limits hold at every iterate. A chain with fewer than six
    coordinates (the leg has five) has local minima; if a run stalls above tolerance and
    ``restarts`` is true, it is repeated with the limited coordinates at the fractions
    :data:`RESTART_FRACTIONS` of their ranges (each run capped at ``max_iterations``) and the
    best run is returned. Returns :class:`IKResult`; unreachable targets are a status (the
    closest pose found), not an exception.
    """
    target = _pose(target, "target")
    max_iterations = whole_number(max_iterations, "max_iterations", 1)
    position_tol = real_number(position_tol, "position_tol", 0.0, low_open=True,
                               advice="metres, e.g. 1e-6")
    rotation_tol = real_number(rotation_tol, "rotation_tol", 0.0, low_open=True,
                               advice="radians, e.g. 1e-4")
    damping = real_number(damping, "damping", 0.0, low_open=True,
                          advice="the starting Levenberg-Marquardt damping, e.g. 1e-3")
    if q0 is None:
        start = _align_root(chain, default_start(chain), target)
    else:
        start = _project(chain, chain.check_q(q0))
    sw = SE3Metric(length_scale).sqrt_weights
    with np.errstate(over="ignore", invalid="ignore"):
        error = np.sum((sw * se3.log(se3.inv(chain.pose(start)) @ target)) ** 2)
    if not np.isfinite(error):
        raise InvalidInputError(f"the target, {np.abs(target[:3, 3]).max():g} m out along an "
                                "axis, is too far from the chain for its error to be computed; "
                                "pass a target near the chain, in metres")
    args = (chain, target, max_iterations, position_tol, rotation_tol, sw, damping)
    best = _run(start, *args)
    runs = 1
    finite = np.isfinite(chain.lower) & np.isfinite(chain.upper)
    if restarts and best.status != "converged" and np.any(finite):
        for frac in RESTART_FRACTIONS:
            q = start.copy()
            q[finite] = chain.lower[finite] + frac * (chain.upper[finite] - chain.lower[finite])
            res = _run(_align_root(chain, q, target), *args)
            runs += 1
            if res.error_trace[-1] < best.error_trace[-1]:
                best = res
            if best.status == "converged":
                break
    best.runs = runs
    return best


def joint_coordinates(joint, poses, q0=None, **options):
    """For each pose, the coordinates of ``joint`` whose ``G(q)`` reproduces it best: one
    :func:`solve_ik` per pose on the one-joint chain, each started from the previous pose's
    answer (the first from ``q0``, default :func:`default_start`), so a motion keyed frame by
    frame stays on one branch of the joint.

    joint: a core joint; poses: (N, 4, 4) child-in-parent poses; options: keywords of
    :func:`solve_ik` (tolerances, length_scale, ...). Returns ``(q (N, nq), results)``, the
    list of the N :class:`IKResult` (each with its position and rotation error: a pose the
    joint cannot reach comes back as the closest one, status "unreachable").
    """
    poses = np.asarray(poses, dtype=float)
    if poses.ndim != 3 or poses.shape[1:] != (4, 4) or len(poses) == 0:
        raise InvalidInputError(f"poses must be (N, 4, 4) with N >= 1, got {poses.shape}")
    chain = Chain([joint])
    start = q0
    results = []
    for k, T in enumerate(poses):
        res = solve_ik(chain, _pose(T, f"pose {k}"), q0=start, **options)
        results.append(res)
        start = res.q
    return np.stack([r.q for r in results]), results


def _run(q, chain, target, max_iterations, position_tol, rotation_tol, sw, lam):
    """One damped least squares run from ``q: (nq,)``; returns IKResult."""
    T, J = chain.forward(q)
    e, perr, rerr = _errors(T, target)
    F = float(np.sum((e * sw) ** 2))
    trace = [np.sqrt(F)]
    status = "max_iterations"
    it = 0
    if perr <= position_tol and rerr <= rotation_tol:
        status = "converged"
    while status == "max_iterations" and it < max_iterations:
        it += 1
        Jw = sw[:, None] * (se3.left_jacobian_inv(e) @ J)
        ew = e * sw
        free = np.ones(chain.nq, dtype=bool)
        for _ in range(2):  # drop coordinates held at a limit that the step pushes outward
            A = Jw[:, free].T @ Jw[:, free]
            dq = np.zeros(chain.nq)
            dq[free] = np.linalg.solve(A + lam ** 2 * np.eye(int(free.sum())),
                                       Jw[:, free].T @ ew)
            blocked = ((q <= chain.lower) & (dq < 0)) | ((q >= chain.upper) & (dq > 0))
            if not np.any(blocked & free):
                break
            free &= ~blocked
        qn = chain.normalize(_project(chain, q + dq))
        Tn, Jn = chain.forward(qn)
        en, pn, rn = _errors(Tn, target)
        Fn = float(np.sum((en * sw) ** 2))
        if Fn < F:
            small = (F - Fn) <= 1e-12 * F
            q, T, J, e, perr, rerr, F = qn, Tn, Jn, en, pn, rn, Fn
            trace.append(np.sqrt(F))
            lam = max(lam / 4.0, 1e-9)
            if perr <= position_tol and rerr <= rotation_tol:
                status = "converged"
            elif small:
                status = "unreachable"
        else:
            lam *= 4.0
            if lam > 1e6:
                status = "unreachable"
    return IKResult(q=q, pose=T, status=status, iterations=it, position_error=perr,
                    rotation_error=rerr, error_trace=trace)


def leg_chain(knee=None, n_frames=8):
    """The Fig. 3 leg: spherical hip, the gait2392 knee as a fitted spline curve joint, and a
    revolute ankle with the gait2392 axis and range (:data:`GAIT2392_ANKLE_AXIS`).

    knee: a :class:`SplineCurveJoint` (femur -> tibia); default: fitted here to the gait2392
    knee samples with ``n_frames`` control frames. Hip at the femur origin, the tip is the
    ankle joint frame. Coordinates: hip r (3), knee angle (1), ankle angle (1).
    """
    from ..joints.lower_pairs import Revolute
    from ..joints.spherical import Spherical
    if knee is None:
        from ..reference.opensim import KneeGait2392
        from .curve import fit_spline_curve
        from .samples import JointSamples
        d = KneeGait2392().samples()
        knee = fit_spline_curve(JointSamples(d["T_femur_tibia"], d["q"]), n_frames=n_frames).joint
    ankle = Revolute(GAIT2392_ANKLE_AXIS, lower=GAIT2392_ANKLE_RANGE[0],
                     upper=GAIT2392_ANKLE_RANGE[1])
    P_ankle = np.eye(4)
    P_ankle[:3, 3] = GAIT2392_ANKLE_OFFSET
    return Chain([Spherical(), knee, ankle], [np.eye(4), np.eye(4), P_ankle])
