"""Knee pendulum (seed 000 section 7, Fig. 1): the OpenSim gait2392 right knee as a fitted
spline curve joint, with a hip and an ankle, swinging under gravity.

The knee joint is :func:`core.fitting.curve.fit_spline_curve` fitted to the femur->tibia
poses of :class:`core.reference.KneeGait2392` (131 samples over the OpenSim range
[-120, 10] deg; the coordinate is the OpenSim knee angle, flexion negative). The hip is a
revolute about the pelvis z axis (flexion), held at ``hip_flexion`` by a prescribed drive
with zero rate (so it does no work: the pendulum is passive); the ankle is a revolute about
the gait2392 ankle axis with a linear spring. This is the seated "pendulum test" posture:
thigh horizontal, shank released from ``knee_start`` (rad).

Bodies and inertias are the gait2392 values (femur_r, tibia_r, and the foot as one body
lumping talus, calcaneus and toes), in OpenSim body frames (y up the bone, x forward); the
pelvis frame is turned so that OpenSim's y is the world's z. The bones are drawn with the
model's own meshes (:func:`leg_display`), the hip as a socket on the pelvis block.
"""

import numpy as np

from ..errors import InvalidInputError
from ..fitting.curve import fit_spline_curve
from ..fitting.ik import GAIT2392_ANKLE_AXIS, GAIT2392_ANKLE_OFFSET, leg_chain
from ..fitting.samples import JointSamples
from ..joints.lower_pairs import Fixed, Revolute
from ..model import Model
from ..reference import KneeGait2392, bone_mesh
from .base import BodyDisplay, Drive, Mechanism, check_timing
from .shapes import translation

__all__ = ["knee_joint", "knee_pendulum", "leg_display", "GAIT2392_BODIES", "FOOT_MESHES"]

#: gait2392 body parameters: mass (kg), centre of mass (m, body frame), principal inertia
GAIT2392_BODIES = {
    "pelvis": (11.777, (-0.0707, 0.0, 0.0), (0.1028, 0.0871, 0.0579)),
    "femur": (9.3014, (0.0, -0.17, 0.0), (0.1339, 0.0351, 0.1412)),
    "tibia": (3.7075, (0.0, -0.1867, 0.0), (0.0504, 0.0051, 0.0511)),
    "foot": (1.5666, (0.08, -0.03, 0.0), (0.0016, 0.0045, 0.0048)),
}
#: hip centre in the pelvis frame (gait2392 hip_r); the ankle centre and axis in the tibia
#: frame are :data:`core.fitting.ik.GAIT2392_ANKLE_OFFSET` / ``GAIT2392_ANKLE_AXIS``
HIP_IN_PELVIS = (-0.0707, -0.0661, 0.0835)
ANKLE_IN_TIBIA = GAIT2392_ANKLE_OFFSET
ANKLE_AXIS = GAIT2392_ANKLE_AXIS

#: the foot body's meshes: (part name, gait2392 mesh, its body's origin in the talus frame):
#: ``talus`` on talus_r, ``foot`` on calcn_r and ``bofoot`` on toes_r (the model's subtalar
#: and mtp joints at zero have no rotation)
FOOT_MESHES = (("talus", "talus", (0.0, 0.0, 0.0)),
               ("calcaneus", "foot", (-0.04877, -0.04195, 0.00792)),
               ("toes", "bofoot", (0.13003, -0.04395, 0.009)))
BONE_COLOUR = (0.93, 0.9, 0.82, 1.0)
_METAL = (0.25, 0.27, 0.32, 1.0)

_KNEE_CACHE = {}


def leg_display():
    """Displays of the femur, tibia and foot bodies with the gait2392 bone meshes
    (:func:`core.reference.bone_mesh`, CC BY 3.0: femur_r in the femur frame, tibia_r and the
    fibula in the tibia frame, the foot bones in the talus frame at :data:`FOOT_MESHES`), so
    that the tibia rolls and slides on the femoral condyles as the knee bends."""
    def mesh(name, file, colour=BONE_COLOUR, at=(0.0, 0.0, 0.0)):
        return BodyDisplay(name, "mesh", (1.0, 1.0, 1.0), colour, translation(at),
                           geometry=bone_mesh(file))

    fibula = mesh("fibula", "fibula", (0.88, 0.84, 0.74, 1.0))
    foot = [mesh(name, file, at=at) for name, file, at in FOOT_MESHES]
    return (BodyDisplay("femur", "mesh", (1.0, 1.0, 1.0), BONE_COLOUR,
                        geometry=bone_mesh("femur_r")),
            BodyDisplay("tibia", "mesh", (1.0, 1.0, 1.0), BONE_COLOUR,
                        geometry=bone_mesh("tibia_r"), parts=(fibula,)),
            BodyDisplay("foot", "mesh", (1.0, 1.0, 1.0), BONE_COLOUR,
                        geometry=foot[0].geometry, parts=tuple(foot[1:])))


def knee_joint(n_frames=12):
    """The gait2392 knee as a cubic spline curve joint fitted to the OpenSim poses.

    Returns ``(joint, report)`` (a :class:`SplineCurveJoint` and its fit report); cached
    per ``n_frames``. 12 control frames keep the tibia within 0.01 mm of the OpenSim path.
    """
    if n_frames not in _KNEE_CACHE:
        ref = KneeGait2392()
        s = ref.samples()
        fit = fit_spline_curve(JointSamples(s["T_femur_tibia"], q=s["q"]), n_frames=n_frames)
        _KNEE_CACHE[n_frames] = (fit.joint, fit.report)
    return _KNEE_CACHE[n_frames]


def knee_pendulum(*, fps=60.0, substeps=4, duration=3.0, knee_start=-1.3,
                  hip_flexion=np.pi / 2, ankle_stiffness=5.0, n_frames=12, integrator="rk4"):
    """The seated knee pendulum: pelvis fixed 0.9 m up, hip held at ``hip_flexion`` (rad),
    shank released at rest from ``knee_start`` (rad, within the OpenSim range and such that
    the swing stays inside it), foot on a spring-loaded ankle.

    The constraint error is the largest distance (m) between the simulated tibia (its
    origin and its ankle centre) in the femur frame and the OpenSim knee's tibia at the same
    knee angle (:meth:`KneeGait2392.poses`). ``info["ik_chain"]`` is the Fig. 3 leg
    (:func:`core.fitting.ik.leg_chain`: spherical hip, this knee, ankle) for the IK demo.
    """
    substeps = check_timing("knee_pendulum", fps, substeps, duration)
    ref = KneeGait2392()
    lo, hi = ref.range
    if not lo < knee_start < hi:
        raise InvalidInputError(f"knee_start must lie in the OpenSim range ({lo:.4f}, "
                                f"{hi:.4f}) rad, got {knee_start}")
    joint, report = knee_joint(n_frames)
    model = Model(name="knee_pendulum")
    T_world_pelvis = np.eye(4)
    T_world_pelvis[:3, :3] = [[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]
    T_world_pelvis[:3, 3] = [0.0, 0.0, 0.9]

    def add(name, parent, j, placement):
        m, c, d = GAIT2392_BODIES[name]
        return model.add_body(name, parent, j, placement, mass=m, com=c, inertia=np.diag(d))

    add("pelvis", -1, Fixed(), T_world_pelvis)
    add("femur", 0, Revolute((0.0, 0.0, 1.0)), translation(HIP_IN_PELVIS))
    add("tibia", 1, joint, None)
    add("foot", 2, Revolute(ANKLE_AXIS), translation(ANKLE_IN_TIBIA))
    model.add_joint_spring("foot", ankle_stiffness, 0.0, rest=0.0)
    q0 = np.array([hip_flexion, knee_start, 0.0])
    h = float(hip_flexion)
    drive = Drive((0,), lambda t: ([h], [0.0], [0.0]), "hip held at a fixed flexion")

    display = (BodyDisplay("pelvis", "box", (0.2, 0.15, 0.25), (0.85, 0.8, 0.7, 1.0),
                           parts=(BodyDisplay("hip", "socket", (0.03, 0.0, 0.0), _METAL,
                                              translation(HIP_IN_PELVIS)),)),
               *leg_display())
    ankle = np.array([*ANKLE_IN_TIBIA, 1.0])

    def error(mech, times, q, poses):
        """Largest distance (m) of the tibia origin and ankle centre from OpenSim's: (F,)."""
        T_sim = np.linalg.inv(poses[:, 1]) @ poses[:, 2]
        T_ref = ref.poses(q[:, 1])
        d0 = np.linalg.norm(T_sim[:, :3, 3] - T_ref[:, :3, 3], axis=1)
        d1 = np.linalg.norm((T_sim - T_ref)[:, :3] @ ankle, axis=1)
        return np.maximum(d0, d1)

    return Mechanism("knee_pendulum", "Knee pendulum: gait2392 knee as a spline curve joint",
                     model, q0, np.zeros(3), fps, substeps, duration, integrator, drive=drive,
                     display=display, constraint_error=error, passive=True,
                     info={"fit_report": report, "knee_dof": 1, "knee_range": (lo, hi),
                           "ik_chain": leg_chain(knee=joint)})
