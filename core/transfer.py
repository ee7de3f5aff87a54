"""Joints that transfer between rigs: a joint made on one pair of bones applied to another pair
of another size and rest pose, and the OpenSim joints offered as presets for a user's bones.

Mapping. A joint document's transform ``G(q)`` is the child bone's frame in the parent bone's
frame (:mod:`core.bones`: head at the joint, Y along the bone, X and Z by its roll), and its
:class:`~core.io.RestFrames` say which bones it was made on. Bones correspond frame to frame:
the joint's axes stay where they are in the parent bone's frame and the child bone is carried
as its frame was, so the joint is the same whichever way the rig stands in its armature space
(a rotated copy of a rig gets the same bone-frame poses). Translations are scaled by one
bone-length ratio ``s`` (OpenSim's segment scaling: its ``CustomJoint`` scales the joint's
translation functions by the *parent* body's scale factor, here the parent bones' length
ratio ``L'_parent / L_parent``; ``"child"`` uses the child bones' ratio):

    ``G'(q) = phi_s(G(q))``, ``phi_s([R, p]) = [R, s p]`` (:class:`~core.joints.MappedJoint`),

rotations unchanged. The target rig's rest pose is compared with the joint's scaled rest pose
``phi_s(T_rest)``: how far the child bone's head sits from where the joint expects it (mm) and
how far it is turned (deg); beyond :data:`REST_WARN_MM` or :data:`REST_WARN_DEG` the result
carries a warning saying both figures.

Presets (:data:`PRESETS`, :func:`preset_document`): the gait2392 knee (Delp et al. 1990,
``knee_r``; the left knee its mirror image) and the Seth et al. 2019 scapulothoracic joint
(right; the left its mirror image), exactly as OpenSim evaluates them
(:class:`~core.joints.CustomJoint`, :class:`~core.joints.ScapulothoracicJoint`), placed between
two bones laid out in armature space by the convention of a Blender character (facing -Y, Z
up, its right side at -X: OpenSim's x, y, z become -Y, +Z, -X), each with Blender's roll-0
frame (:func:`core.bones.bone_frame`):

* knee: femur from the hip centre (femur origin) to the tibia origin at knee angle 0 (the
  knee), length 0.396 m; tibia from there to the ankle centre (gait2392's
  ``ankle`` location, 0.43 m down the tibia's y axis), length 0.43 m;
* scapulothoracic: thorax from the thorax origin up its y axis by the thoracic ellipsoid's y
  radius (0.200 m); scapula from the scapula origin to its joint frame (the point that rides
  on the ellipsoid) at the model's default coordinates.

Applying a preset is :func:`transfer_document` of its document: with the default
``scale_by="parent"`` the knee's translations are scaled by the user's femur length over
0.396 m, the scapula's ellipsoid by the thorax bone's length over 0.200 m.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .bones import bone_frame
from .errors import InvalidInputError
from .io.joints import JointDocument, RestFrames
from .joints.mapped import MappedJoint
from .lie import se3, so3

__all__ = ["SCALE_BY", "REST_WARN_MM", "REST_WARN_DEG", "Transfer", "length_ratio",
           "transfer_document", "rest_difference", "PRESETS", "preset_document",
           "OSIM_TO_ARMATURE"]

#: which bone-length ratio scales a transferred joint's translations
SCALE_BY = ("parent", "child", "none")
#: a target rest pose this far (mm of the child's head, deg of its turn) from the joint's scaled
#: rest pose is reported: below a millimetre or a degree a rig built by hand does not differ
#: visibly, at 5 mm / 5 deg the joint visibly pulls the bone off its modelled rest
REST_WARN_MM = 5.0
REST_WARN_DEG = 5.0

#: OpenSim's axes in a Blender character's armature space: columns are the images of x
#: (forward -> -Y), y (up -> +Z) and z (the model's right -> -X)
OSIM_TO_ARMATURE = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
#: the mirror of armature space across its X = 0 plane (right <-> left) and the mirror of
#: OpenSim's body frames across their z = 0 plane (the same mirror seen from the bodies)
_MIRROR_ARMATURE = np.diag([-1.0, 1.0, 1.0, 1.0])
_MIRROR_OSIM = np.diag([1.0, 1.0, -1.0, 1.0])
_OSIM_MIRROR_AXIS = 2

#: gait2392's hip_r location in the pelvis (m): where the right femur's origin is laid out
_HIP_R = (-0.0707, -0.0661, 0.0835)
#: gait2392's ankle_r location in the tibia (m)
_ANKLE_IN_TIBIA = (0.0, -0.43, 0.0)


@dataclass(frozen=True)
class Transfer:
    """The outcome of :func:`transfer_document`.

    document: the transferred :class:`~core.io.JointDocument` (its rest frames the target's);
    ratio: the scale of its translations; rest_offset_mm, rest_angle_deg: the target's rest
    pose against the joint's scaled one (:func:`rest_difference`).
    """

    document: JointDocument
    ratio: float
    rest_offset_mm: float
    rest_angle_deg: float

    @property
    def warning(self) -> str:
        """A sentence when the rest poses differ by :data:`REST_WARN_MM` or
        :data:`REST_WARN_DEG` or more, else ''."""
        if self.rest_offset_mm < REST_WARN_MM and self.rest_angle_deg < REST_WARN_DEG:
            return ""
        return (f"this rig's rest pose is {self.rest_offset_mm:.1f} mm and "
                f"{self.rest_angle_deg:.1f} deg from the joint's (scaled by {self.ratio:.3f}): "
                "the joint moves the child bone from where the joint puts it, not from its "
                "modelled rest; line the bones up like the joint's (Edit Mode: head on the "
                "joint, same direction and roll) or accept the offset")


def length_ratio(source: RestFrames, target: RestFrames, scale_by: str = "parent") -> float:
    """The bone-length ratio ``target / source`` of the parent bones ("parent", OpenSim's
    choice for a joint's translations), of the child bones ("child") or 1 ("none")."""
    if scale_by not in SCALE_BY:
        raise InvalidInputError(f"scale_by must be one of {SCALE_BY}, got {scale_by!r}")
    if scale_by == "none":
        return 1.0
    if scale_by == "parent":
        return target.parent_length / source.parent_length
    return target.child_length / source.child_length


def rest_difference(expected, actual) -> tuple[float, float]:
    """(mm, deg) between two child-in-parent rest poses (4, 4): the distance of their origins
    and the angle of ``R_expected^T R_actual``."""
    R = np.asarray(expected)[:3, :3].T @ np.asarray(actual)[:3, :3]
    offset = float(np.linalg.norm(np.asarray(actual)[:3, 3] - np.asarray(expected)[:3, 3]))
    return 1000.0 * offset, math.degrees(float(np.linalg.norm(so3.log(R))))


def _scaled(T, s):
    T = np.array(T, dtype=float)
    T[..., :3, 3] *= s
    return T


def transfer_document(doc: JointDocument, target: RestFrames, scale_by: str = "parent",
                      ratio: float | None = None, name: str | None = None) -> Transfer:
    """The joint of ``doc`` moved onto the bones ``target`` (module docstring).

    doc: a JointDocument with rest frames (``doc.rest``); target: the target bones'
    :class:`~core.io.RestFrames`; scale_by: :data:`SCALE_BY`, or ``ratio`` (> 0) given
    directly; name: the new document's label (default: the old one's). The new document has
    the joint ``MappedJoint(doc.joint, scale=ratio)`` (flattened when it is one already), the
    same coordinates and ranges, no fit report (the fit was of other samples) and the target's
    rest frames, so it transfers again. InvalidInputError when ``doc`` has no rest frames.
    """
    if not isinstance(doc, JointDocument):
        raise InvalidInputError(f"transfer_document takes a JointDocument, got {type(doc).__name__}")
    if not isinstance(target, RestFrames):
        raise InvalidInputError(f"the target must be RestFrames, got {type(target).__name__}")
    if doc.rest is None:
        raise InvalidInputError("this joint document does not say which bones it was made on (no "
                                "rest frames: written by hand or by an older version); store it "
                                "as it is (Import) or fit the joint again on this rig")
    if ratio is None:
        ratio = length_ratio(doc.rest, target, scale_by)
    joint = MappedJoint(doc.joint, scale=ratio)  # validates ratio > 0
    transferred = JointDocument(joint, doc.coordinate_names, doc.ranges, metric=doc.metric,
                                name=doc.name if name is None else name, rest=target)
    offset_mm, angle_deg = rest_difference(_scaled(doc.rest.T_parent_child, joint.scale),
                                           target.T_parent_child)
    return Transfer(transferred, joint.scale, offset_mm, angle_deg)


# ------------------------------------------------------------------------------------------
# Presets
# ------------------------------------------------------------------------------------------

def _frame(R, p):
    return se3.from_rp(np.asarray(R, dtype=float), np.asarray(p, dtype=float))


def _placed(joint, J_P, J_C, heads_tails, left):
    """(MappedJoint, RestFrames) of ``joint`` (its parent joint frame at ``J_P``, its child
    joint frame at ``J_C`` at the default coordinates, both (4, 4) in armature space) between
    bones with ``heads_tails = ((head, tail) parent, (head, tail) child)``; ``left``: mirrored
    across armature X = 0 (the joint mirrored across its bodies' z = 0)."""
    if left:
        J_P = _MIRROR_ARMATURE @ J_P @ _MIRROR_OSIM
        J_C = _MIRROR_ARMATURE @ J_C @ _MIRROR_OSIM
        heads_tails = [[_MIRROR_ARMATURE[:3, :3] @ np.asarray(p, dtype=float) for p in ht]
                       for ht in heads_tails]
    (hp, tp), (hc, tc) = heads_tails
    W_P, W_C = bone_frame(hp, tp), bone_frame(hc, tc)
    mapped = MappedJoint(joint, se3.inv(W_P) @ J_P, se3.inv(W_C) @ J_C,
                         mirror_axis=_OSIM_MIRROR_AXIS if left else None)
    rest = RestFrames(W_P, W_C, float(np.linalg.norm(np.subtract(tp, hp))),
                      float(np.linalg.norm(np.subtract(tc, hc))))
    return mapped, rest


def _knee(left: bool) -> JointDocument:
    from .joints.opensim import CustomJoint
    from .reference.opensim import KneeGait2392

    ref = KneeGait2392()
    cj = ref.joint
    joint = CustomJoint(cj.axes, cj.functions, cj.arguments, 1, lower=ref.range[0],
                        upper=ref.range[1], neutral=[ref.default])
    femur = _frame(OSIM_TO_ARMATURE, OSIM_TO_ARMATURE @ np.array(_HIP_R))
    J_P = femur @ cj.T_parent_pjoint
    J_C = J_P @ cj.joint_poses(np.array([[ref.default]]))[0]
    tibia = J_C @ se3.inv(cj.T_child_cjoint)
    knee, ankle = tibia[:3, 3], (tibia @ np.array([*_ANKLE_IN_TIBIA, 1.0]))[:3]
    mapped, rest = _placed(joint, J_P, J_C, ((femur[:3, 3], knee), (knee, ankle)), left)
    side = "l" if left else "r"
    return JointDocument(mapped, (f"knee_angle_{side}",), np.array([ref.range]),
                         name=f"gait2392 knee_{side} (Delp et al. 1990)", rest=rest)


def _scapulothoracic(left: bool) -> JointDocument:
    from .joints.opensim import ScapulothoracicJoint
    from .reference.opensim import ScapulothoracicSeth2019

    ref = ScapulothoracicSeth2019()
    direction = float(ref.document["joint"]["scapula_winging_axis_direction"])
    joint = ScapulothoracicJoint(ref.radii, ref.winging_origin[:2], direction,
                                 lower=ref.ranges[:, 0], upper=ref.ranges[:, 1],
                                 neutral=ref.defaults)
    thorax = _frame(OSIM_TO_ARMATURE, np.zeros(3))
    J_P = thorax @ ref.T_thorax_pjoint
    J_C = J_P @ ref.joint_pose(ref.defaults)
    scapula = J_C @ se3.inv(ref.T_scapula_cjoint)
    top = thorax[:3, 3] + ref.radii[1] * thorax[:3, 1]
    mapped, rest = _placed(joint, J_P, J_C, ((thorax[:3, 3], top), (scapula[:3, 3], J_C[:3, 3])),
                           left)
    side = "left" if left else "right"
    return JointDocument(mapped, ref.coordinate_names, ref.ranges,
                         name=f"Seth 2019 scapulothoracic ({side})", rest=rest)


#: preset key -> (label, description, builder); each builder returns the preset's document
PRESETS = {
    "KNEE_R": ("gait2392 Knee (Right)", "OpenSim gait2392 knee_r between a right femur and "
               "tibia bone (femur: hip to knee, tibia: knee to ankle)", lambda: _knee(False)),
    "KNEE_L": ("gait2392 Knee (Left)", "The gait2392 knee mirrored for a left femur and tibia "
               "bone", lambda: _knee(True)),
    "SCAPULA_R": ("Seth 2019 Scapula (Right)", "OpenSim scapulothoracic joint (Seth et al. "
                  "2019) between a thorax bone pointing up and a right scapula bone",
                  lambda: _scapulothoracic(False)),
    "SCAPULA_L": ("Seth 2019 Scapula (Left)", "The Seth 2019 scapulothoracic joint mirrored "
                  "for a left scapula bone", lambda: _scapulothoracic(True)),
}

def preset_document(key: str) -> JointDocument:
    """The preset ``key`` of :data:`PRESETS` as a joint document with its rest frames (module
    docstring); InvalidInputError names the presets for another key."""
    if key not in PRESETS:
        raise InvalidInputError(f"unknown joint preset {key!r}; the presets are {sorted(PRESETS)}")
    return PRESETS[key][2]()
