"""A humanoid ragdoll from a rig's bone names and rest pose: which body segment each bone is,
its joint (type, hinge axis and bend direction, range, reach cone and twist), its mass
properties and a collision capsule, and the mirror image of one side's settings on the other.

Naming schemes (:data:`SCHEMES`; the one recognising most bones is used): Blender's human
meta-rig (``spine`` ... ``spine.006``, ``thigh.L``), Rigify's deforming bones (``DEF-`` and
the ``.001`` pieces of split limbs, each piece welded to the one before it), Mixamo
(``mixamorig:LeftUpLeg``), the Unreal mannequin (``pelvis``, ``spine_01``, ``thigh_l``,
``calf_l``) and generic names (``upperarm_l``, ``Thigh.R``, ``LeftForeArm``...) with the
sides ``.L/.R``, ``_l/_r``, ``_L/_R``, ``-L/-R``, ``Left/Right`` and ``L_/R_``. Bones of no
segment are *unknown*: listed by :func:`plan_ragdoll`, welded to their parent (``FIXED``) when
they carry a recognised bone, else left to ride on their parent (not simulated).

Character frame (:func:`character_frame`): up from the pelvis to the head, forward along the
feet (heel to toe), ``left = up x forward``; the mirror plane is the sagittal plane (normal
``left``).

Joints (:func:`plan_ragdoll`): the pelvis ``FREE``; knee, elbow and toe hinges; ball joints
with an elliptical reach cone and a twist limit elsewhere; ``FIXED`` for attachments
(breast, the meta-rig's pelvis and heel bones) and split-limb pieces. A hinge's axis is the
normal of the plane of the parent and child bones at rest (:func:`hinge_axis`), signed so
that a positive turn moves the child's tail along the anatomical bend direction: a knee
sends the foot backward, an elbow the hand forward, a toe curls down; a limb straight at rest
takes the axis across the bend direction. Hinge ranges count from the straight limb, so
the rest pose's bend is subtracted.

Ranges. Normal joint motion from the American Academy of Orthopaedic Surgeons, *Joint
Motion: Method of Measuring and Recording* (AAOS, Chicago, 1965; the "AAOS" column of
Norkin & White, *Measurement of Joint Motion*, 2016), :data:`AAOS_ROM`. The core's reach
cones and twist limits are symmetric about the rest pose, so a ball joint's half-angle in a
plane is the mean of the two opposite motions (hip flexion 120 and extension 30: 75 deg in
the sagittal plane), the elliptical half-angles capped at 90 deg (what the reach-cone settings
take), and the spine's and neck's motions are shared equally by their bones. Where the
table has no figure the value is a modelling choice and says so (:data:`MODELLING`).

Masses. Segment mass fractions, centre-of-mass positions and radii of gyration of
de Leva, P. (1996) "Adjustments to Zatsiorsky-Seluyanov's segment inertia parameters",
J Biomech 29(9):1223-1230, Table 4 (:data:`DE_LEVA`, male and female). A de Leva segment
spread over several bones (the middle trunk over two spine bones, the head over neck and
head) is shared in proportion to length times :data:`GIRTH` (a modelling choice), each
piece's centre of mass at its middle; a single bone takes de Leva's centre of mass and
inertia (radii times the bone's length). Welded bones (attachments, unknown carriers) are
capsules of soft tissue (:data:`TISSUE_DENSITY`) whose mass comes off the total first, so
the ragdoll weighs ``total_mass``; de Leva's fractions are normalised to sum to one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from .errors import InvalidInputError
from .massprops import capsule_mass_properties

__all__ = ["RestBone", "BoneSetup", "RagdollPlan", "SCHEMES", "AAOS_ROM", "DE_LEVA",
           "recognise", "character_frame", "hinge_axis", "cone_half_angles", "plan_ragdoll",
           "mirror_name", "mirror_setup", "capsule_radius"]

# -- sources ------------------------------------------------------------------------------

#: AAOS (1965) normal ranges of motion, degrees from the anatomical position
AAOS_ROM = {
    "hip": {"flexion": 120, "extension": 30, "abduction": 45, "adduction": 30,
            "internal_rotation": 45, "external_rotation": 45},
    "knee": {"flexion": 135},
    "ankle": {"dorsiflexion": 20, "plantarflexion": 50, "inversion": 35, "eversion": 15},
    "great_toe_mtp": {"flexion": 45, "extension": 70},
    "shoulder": {"flexion": 180, "extension": 60, "abduction": 180,
                 "internal_rotation": 70, "external_rotation": 90},
    "elbow": {"flexion": 150},
    "forearm": {"pronation": 80, "supination": 80},
    "wrist": {"flexion": 80, "extension": 70, "radial_deviation": 20, "ulnar_deviation": 30},
    "cervical_spine": {"flexion": 45, "extension": 45, "lateral_flexion": 45, "rotation": 60},
    "thoracolumbar_spine": {"flexion": 80, "extension": 25, "lateral_flexion": 35,
                            "rotation": 45},
}

#: values no normal-range table gives, chosen for a ragdoll (degrees): the shoulder's
#: adduction from the anatomical position (the trunk stops it), the sternoclavicular joint
#: (its motion follows the arm's), the forefoot's swing across the foot
MODELLING = {"shoulder_adduction": 0, "clavicle_cone": 15, "clavicle_twist": 15,
             "foot_abduction": 10}

#: de Leva (1996) Table 4: mass (% of body mass), centre of mass (% of the segment length
#: from its origin landmark), radii of gyration (% of the length) about the sagittal
#: (medio-lateral), transverse (antero-posterior) and longitudinal axes; ``origin``: the
#: landmark at the bone's "head" or at its "tail" (the trunk and head are measured from
#: their upper end: cervicale, xiphion, omphalion, vertex)
DE_LEVA = {
    "male": {
        "head": (6.94, 50.02, 30.3, 31.5, 26.1, "tail"),
        "upper_trunk": (15.96, 50.66, 50.5, 32.0, 46.5, "tail"),
        "middle_trunk": (16.33, 45.02, 48.2, 38.3, 46.8, "tail"),
        "lower_trunk": (11.17, 61.15, 61.5, 55.1, 58.7, "tail"),
        "upper_arm": (2.71, 57.72, 28.5, 26.9, 15.8, "head"),
        "forearm": (1.62, 45.74, 27.6, 26.5, 12.1, "head"),
        "hand": (0.61, 79.00, 62.8, 51.3, 40.1, "head"),
        "thigh": (14.16, 40.95, 32.9, 32.9, 14.9, "head"),
        "shank": (4.33, 44.59, 25.5, 24.9, 10.3, "head"),
        "foot": (1.37, 44.15, 25.7, 24.5, 12.4, "head"),
    },
    "female": {
        "head": (6.68, 48.41, 27.1, 29.5, 26.1, "tail"),
        "upper_trunk": (15.45, 50.50, 46.6, 31.4, 44.9, "tail"),
        "middle_trunk": (14.65, 45.12, 43.3, 35.4, 41.5, "tail"),
        "lower_trunk": (12.47, 49.20, 43.3, 40.2, 44.4, "tail"),
        "upper_arm": (2.55, 57.54, 27.8, 26.0, 14.8, "head"),
        "forearm": (1.38, 45.59, 26.1, 25.7, 9.4, "head"),
        "hand": (0.56, 74.74, 53.1, 45.4, 33.5, "head"),
        "thigh": (14.78, 36.12, 36.9, 36.4, 16.2, "head"),
        "shank": (4.81, 44.16, 27.1, 26.7, 9.3, "head"),
        "foot": (1.29, 40.14, 29.9, 27.9, 13.9, "head"),
    },
}

#: the de Leva segment each body segment belongs to (the clavicle to the upper trunk, the
#: neck to the head, the toes to the foot)
SEGMENT_MASS = {"pelvis": "lower_trunk", "abdomen": "middle_trunk", "thorax": "upper_trunk",
                "clavicle": "upper_trunk", "neck": "head", "head": "head",
                "upper_arm": "upper_arm", "forearm": "forearm", "hand": "hand",
                "thigh": "thigh", "shank": "shank", "foot": "foot", "toe": "foot"}
#: relative thickness of the bones that share a de Leva segment (modelling choice): a share
#: is length times this factor
GIRTH = {"clavicle": 0.25, "neck": 0.5, "toe": 0.5}
#: collision capsule radius over the segment's length when no mesh sizes it (modelling
#: choice: rough girths of an adult)
RADIUS_RATIO = {"pelvis": 0.8, "abdomen": 0.6, "thorax": 0.5, "neck": 0.4, "head": 0.45,
                "clavicle": 0.2, "upper_arm": 0.15, "forearm": 0.13, "hand": 0.3,
                "thigh": 0.13, "shank": 0.1, "foot": 0.25, "toe": 0.3, "attachment": 0.1,
                "unknown": 0.1}
#: attachments' and unknown bones' density (kg/m^3) for their capsule mass (soft tissue)
TISSUE_DENSITY = 1000.0
#: a limb bent less than this at rest (rad) takes its hinge axis from the bend direction
STRAIGHT = math.radians(2.0)
#: the largest elliptical half-angle the reach-cone settings take
ELLIPSE_MAX = 0.5 * math.pi

# -- naming schemes -----------------------------------------------------------------------

_META_TRUNK = {"spine": "pelvis", "spine.001": "abdomen", "spine.002": "abdomen",
               "spine.003": "thorax", "spine.004": "neck", "spine.005": "neck",
               "spine.006": "head"}
_META_LIMBS = {"shoulder": "clavicle", "upper_arm": "upper_arm", "forearm": "forearm",
               "hand": "hand", "thigh": "thigh", "shin": "shank", "foot": "foot", "toe": "toe",
               "breast": "attachment", "pelvis": "attachment", "heel.02": "attachment"}
_MIXAMO = {"hips": "pelvis", "spine": "spine", "spine1": "spine", "spine2": "spine",
           "neck": "neck", "neck1": "neck", "head": "head", "shoulder": "clavicle",
           "arm": "upper_arm",
           "forearm": "forearm", "hand": "hand", "upleg": "thigh", "leg": "shank",
           "foot": "foot", "toebase": "toe"}
_UNREAL = {"pelvis": "pelvis", "spine": "spine", "neck": "neck", "head": "head",
           "clavicle": "clavicle", "upperarm": "upper_arm", "lowerarm": "forearm",
           "hand": "hand", "thigh": "thigh", "calf": "shank", "foot": "foot", "ball": "toe"}
_GENERIC = {
    "pelvis": ("hips", "hip", "pelvis"),
    "spine": ("spine", "spine1", "spine2", "spine3", "abdomen", "lowerback", "lumbar",
              "waist", "chest", "upperchest", "thorax", "ribcage"),
    "neck": ("neck", "neck1", "neck2"),
    "head": ("head",),
    "clavicle": ("shoulder", "clavicle", "collar", "collarbone"),
    "upper_arm": ("upperarm", "arm", "humerus"),
    "forearm": ("forearm", "lowerarm", "elbow"),
    "hand": ("hand", "wrist"),
    "thigh": ("thigh", "upperleg", "upleg", "femur"),
    "shank": ("shin", "calf", "lowerleg", "leg", "knee", "tibia"),
    "foot": ("foot", "ankle"),
    "toe": ("toe", "toes", "ball", "toebase"),
}
_GENERIC_STEMS = {alias: seg for seg, aliases in _GENERIC.items() for alias in aliases}


def _metarig(name, prefix=""):
    """(segment, side, piece) of a meta-rig bone (``prefix``: Rigify's "DEF-"), or None."""
    if not name.startswith(prefix):
        return None
    base = name[len(prefix):]
    if base in _META_TRUNK:
        return _META_TRUNK[base], "", 0
    m = re.fullmatch(r"(?P<stem>.+?)\.(?P<side>[LR])(?:\.(?P<piece>\d{3}))?", base)
    if m is None or m["stem"] not in _META_LIMBS or (m["piece"] and not prefix):
        return None
    return _META_LIMBS[m["stem"]], m["side"], int(m["piece"] or 0)


def _rigify(name):
    return _metarig(name, "DEF-")


def _mixamo(name):
    m = re.fullmatch(r"mixamorig\d*:(?P<side>Left|Right)?(?P<stem>\w+)", name)
    if m is None:
        return None
    seg = _MIXAMO.get(m["stem"].lower())
    if seg is None or (seg in ("clavicle", "upper_arm", "forearm", "hand", "thigh", "shank",
                               "foot", "toe")) != bool(m["side"]):
        return None
    return seg, (m["side"] or "")[:1], 0


def _unreal(name):
    m = re.fullmatch(r"(?P<stem>[a-z]+)(?:_(?P<num>\d\d))?(?:_(?P<side>[lr]))?", name)
    if m is None:
        return None
    seg = _UNREAL.get(m["stem"])
    if seg is None or (m["num"] is not None) != (seg in ("spine", "neck")):
        return None
    if (seg in ("pelvis", "spine", "neck", "head")) == bool(m["side"]):
        return None
    return seg, (m["side"] or "").upper(), 0


_SIDE_PATTERNS = (r"(?P<stem>.+?)[._\- ](?P<side>[LRlr])", r"(?P<side>Left|Right|left|right)"
                  r"[_ ]?(?P<stem>.+)", r"(?P<side>[LR])[_.](?P<stem>.+)",
                  r"(?P<stem>.+?)[_ ]?(?P<side>Left|Right|left|right)")


def _generic(name):
    base = name.rpartition(":")[2]
    side, stem = "", base
    for pattern in _SIDE_PATTERNS:
        m = re.fullmatch(pattern, base)
        if m is not None:
            side, stem = m["side"][0].upper(), m["stem"]
            break
    seg = _GENERIC_STEMS.get(re.sub(r"[^a-z0-9]", "", stem.lower()))
    if seg is None:
        return None
    central = seg in ("pelvis", "spine", "neck", "head")
    if central == bool(side):
        return None
    return seg, side, 0


#: scheme name -> function of a bone name giving (segment, side "L"/"R"/"", piece) or None;
#: "spine" segments are told apart along the chain (the last before the neck is the thorax)
SCHEMES = {"Blender meta-rig": _metarig, "Rigify DEF": _rigify, "Mixamo": _mixamo,
           "Unreal mannequin": _unreal, "generic": _generic}


def recognise(names) -> tuple[str, dict]:
    """``(scheme, {bone name: (segment, side, piece)})`` for the scheme of :data:`SCHEMES`
    recognising most of ``names`` (the first listed on a tie); unknown names are absent."""
    best = ("generic", {})
    for scheme, read in SCHEMES.items():
        found = {n: r for n in names if (r := read(n)) is not None}
        if len(found) > len(best[1]):
            best = (scheme, found)
    return best


# -- geometry -------------------------------------------------------------------------------

@dataclass(frozen=True)
class RestBone:
    """A bone at rest in armature space (metres): ``head``, ``tail`` (3,), ``frame`` (3, 3)
    whose columns are the bone's X, Y, Z axes, ``parent`` a bone name or None."""

    name: str
    parent: str | None
    head: tuple
    tail: tuple
    frame: tuple

    @property
    def direction(self):
        d = np.subtract(self.tail, self.head)
        return d / np.linalg.norm(d)

    @property
    def length(self):
        return float(np.linalg.norm(np.subtract(self.tail, self.head)))

    @property
    def R(self):
        return np.asarray(self.frame, dtype=float).reshape(3, 3)


def _unit(v, what):
    v = np.asarray(v, dtype=float)
    n = float(np.linalg.norm(v))
    if not n > 1e-12 or not np.isfinite(n):
        raise InvalidInputError(f"{what} has no direction ({v.tolist()})")
    return v / n


def character_frame(bones: dict, roles: dict):
    """``(forward, up, left)`` unit vectors (3,) in armature space: up from the pelvis's head
    to the highest head/neck bone's tail (else +Z), forward along the feet (the mean of the
    foot bones' directions across up; else -Y, Blender's front view), ``left = up x
    forward``."""
    up = np.array([0.0, 0.0, 1.0])
    pelvis = [n for n, r in roles.items() if r[0] == "pelvis"]
    top = [n for n, r in roles.items() if r[0] in ("head", "neck")]
    if pelvis and top:
        crown = max(top, key=lambda n: np.dot(bones[n].tail, up))
        v = np.subtract(bones[crown].tail, bones[pelvis[0]].head)
        if np.linalg.norm(v) > 1e-9:
            up = v / np.linalg.norm(v)
    feet = [bones[n].direction for n, r in roles.items() if r[0] == "foot" and r[2] == 0]
    forward = np.sum(feet, axis=0) if feet else np.array([0.0, -1.0, 0.0])
    forward = forward - np.dot(forward, up) * up
    if np.linalg.norm(forward) < 1e-6:
        front = np.array([0.0, -1.0, 0.0])
        forward = front - np.dot(front, up) * up
    forward = _unit(forward, "the character's forward direction")
    return forward, up, np.cross(up, forward)


def hinge_axis(parent_dir, child_dir, child_frame, bend):
    """A hinge's axis in the child bone's rest frame and the rest bend (rad, the angle the
    child has already turned along the bend direction from the parent's line): the axis is
    the normal of the parent-child plane (across ``bend``, the direction the child's tail
    must move, when the two are within :data:`STRAIGHT` of a line), signed so that turning
    by a positive angle moves the child's tail along ``bend``."""
    p = _unit(parent_dir, "the parent bone")
    c = _unit(child_dir, "the child bone")
    b = np.asarray(bend, dtype=float)
    n = np.cross(p, c)
    if np.linalg.norm(n) > math.sin(STRAIGHT) and np.dot(p, c) > 0.0:
        axis = n / np.linalg.norm(n)
        if np.dot(np.cross(axis, c), b) < 0.0:
            axis = -axis
    else:
        axis = _unit(np.cross(c, b), "the bend direction along the child bone")
    bent = math.atan2(float(np.dot(np.cross(p, c), axis)), float(np.dot(p, c)))
    R = np.asarray(child_frame, dtype=float).reshape(3, 3)
    return R.T @ axis, bent


def cone_half_angles(child_frame, flexion_axis, flexion_half, other_half):
    """``(half-angle towards the bone's X, towards its Z)`` of an elliptical cone: the swing
    about ``flexion_axis`` (armature space; the tip moving across it) takes ``flexion_half``,
    the swing towards it ``other_half``; None when the axis runs along the bone (no plane
    to tell them apart: take a circular cone)."""
    R = np.asarray(child_frame, dtype=float).reshape(3, 3)
    f = R.T @ _unit(flexion_axis, "the flexion axis")
    if math.hypot(f[0], f[2]) < 0.5:
        return None
    # the tip swings towards X by a turn about Z: flexion when the axis is nearer Z
    if abs(f[2]) >= abs(f[0]):
        return flexion_half, other_half
    return other_half, flexion_half


# -- the plan -----------------------------------------------------------------------------

@dataclass
class BoneSetup:
    """What one bone's simulation settings become. ``kind``: FREE, BALL, HINGE or FIXED;
    ``axis`` (3,) a hinge's axis in the bone's rest frame and ``range`` (lo, hi) rad;
    ``cone`` (half-angle towards X, towards Z) rad or None, ``twist`` rad or None; mass (kg),
    ``com`` (3,) m and ``inertia`` (3,) kg m^2 along the bone's axes; ``radius`` the
    collision capsule's (m); ``segment`` and ``note`` (where the numbers came from)."""

    name: str
    segment: str
    kind: str
    axis: tuple = (1.0, 0.0, 0.0)
    range: tuple | None = None
    cone: tuple | None = None
    twist: float | None = None
    mass: float = 0.0
    com: tuple = (0.0, 0.0, 0.0)
    inertia: tuple = (0.0, 0.0, 0.0)
    radius: float = 0.0
    note: str = ""


@dataclass
class RagdollPlan:
    """:func:`plan_ragdoll`'s outcome: the scheme, one :class:`BoneSetup` per simulated bone
    (parents first), the unknown bones (welded ones are in ``setups`` too) and the
    character frame."""

    scheme: str
    setups: dict
    unknown: list
    left_alone: list
    forward: np.ndarray = field(default_factory=lambda: np.array([0.0, -1.0, 0.0]))
    up: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    left: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))


def _resolve_spines(bones, roles):
    """Name the "spine" bones of a chain: the last one below the neck (or the deepest) the
    thorax, the others the abdomen."""
    spines = [n for n, r in roles.items() if r[0] == "spine"]
    for n in spines:
        seg = "thorax" if not any(bones[c].parent == n and roles.get(c, ("",))[0] == "spine"
                                  for c in bones) else "abdomen"
        roles[n] = (seg,) + roles[n][1:]


def plan_ragdoll(bones, total_mass=75.0, sex="male", only=None) -> RagdollPlan:
    """The ragdoll of the rest bones ``bones`` (a list of :class:`RestBone`, parents first):
    see the module docstring. ``total_mass`` (kg) spread by de Leva's fractions of ``sex``
    ("male" or "female"); ``only``: the bone names to set up (default: all), the others left
    as they are. Raises InvalidInputError when nothing is recognised, for a bad mass, or
    when the recognised bones are not one tree (a limb without a parent chain to the
    pelvis)."""
    if not (isinstance(total_mass, (int, float)) and math.isfinite(total_mass)
            and total_mass > 0.0):
        raise InvalidInputError(f"the total mass must be a positive number of kilograms, got "
                                f"{total_mass!r}")
    if sex not in DE_LEVA:
        raise InvalidInputError(f"sex must be one of {sorted(DE_LEVA)}, got {sex!r}")
    by_name = {b.name: b for b in bones}
    chosen = set(by_name if only is None else only)
    scheme, roles = recognise([b.name for b in bones])
    roles = {n: r for n, r in roles.items() if n in chosen}
    if not roles:
        raise InvalidInputError(
            "no bone has a name of a known humanoid rig (Blender's meta-rig, Rigify DEF, "
            "Mixamo, the Unreal mannequin, or names like thigh.L, upperarm_l)")
    _resolve_spines(by_name, roles)
    roots = [n for n in roles if _recognised_ancestor(by_name, roles, n) is None]
    if len(roots) > 1:
        main = next((n for n in roots if roles[n][0] == "pelvis"), roots[0])
        loose = [n for n in roots if n != main]
        raise InvalidInputError(
            f"bone(s) {', '.join(repr(n) for n in loose)} have no parent chain to "
            f"'{main}': a ragdoll is one tree; parent them (Edit Mode: Bone Properties > "
            "Relations > Parent) or leave them out of the selection")
    forward, up, left = character_frame(by_name, roles)
    carriers = {a for n in roles for a in _ancestors(by_name, n)}
    unknown = [b.name for b in bones if b.name in chosen and b.name not in roles]
    welded = [n for n in unknown if n in carriers and _recognised_ancestor(by_name, roles, n)]
    left_alone = [n for n in unknown if n not in welded]
    setups = {}
    for b in bones:            # welded bones first: their tissue comes off the total
        seg = roles[b.name][0] if b.name in roles else "unknown" if b.name in welded else None
        if seg in ("attachment", "unknown"):
            radius = RADIUS_RATIO[seg] * b.length
            mp = capsule_mass_properties(radius, b.length, TISSUE_DENSITY)
            setups[b.name] = BoneSetup(b.name, seg, "FIXED", mass=mp.mass, com=tuple(mp.com),
                                       inertia=tuple(np.diag(mp.inertia)),
                                       radius=radius, note="an attachment: welded to its parent"
                                       if seg == "attachment" else "an unknown bone carrying "
                                       "recognised ones: welded to its parent")
    rest = total_mass - sum(s.mass for s in setups.values())
    if not rest > 0.0:
        raise InvalidInputError(f"the total mass {total_mass:g} kg is less than the welded "
                                "bones' own; give the body's mass in kilograms")
    shares = _mass_shares(by_name, roles, sex, rest)
    elbows = {}
    for b in bones:
        if b.name in roles and b.name not in setups:
            setups[b.name] = _setup(b, by_name, roles, shares, forward, up, left, elbows)
    setups = {b.name: setups[b.name] for b in bones if b.name in setups}
    return RagdollPlan(scheme, setups, unknown, left_alone, forward, up, left)


def _ancestors(by_name, name):
    out, p = [], by_name[name].parent
    while p is not None and p in by_name:
        out.append(p)
        p = by_name[p].parent
    return out


def _recognised_ancestor(by_name, roles, name):
    return next((a for a in _ancestors(by_name, name) if a in roles), None)


def _mass_shares(by_name, roles, sex, total):
    """{bone: (mass kg, de Leva row, single: whether it is its segment's only bone)}: each
    de Leva segment (per side for the limbs; the trunk's and head's across both sides, so
    the clavicles share the upper trunk with the thorax) shared by length times
    :data:`GIRTH`."""
    groups = {}
    for n, (seg, side, _) in roles.items():
        if seg in SEGMENT_MASS:
            deleva = SEGMENT_MASS[seg]
            central = deleva.endswith("trunk") or deleva == "head"
            groups.setdefault((deleva, "" if central else side), []).append(n)
    table = DE_LEVA[sex]
    whole = sum(row[0] * (1 if k.endswith("trunk") or k == "head" else 2)
                for k, row in table.items())           # 100 % within the table's rounding
    out = {}
    for (deleva, _), names in groups.items():
        row = table[deleva]
        weight = {n: by_name[n].length * GIRTH.get(roles[n][0], 1.0) for n in names}
        for n in names:
            out[n] = (row[0] / whole * total * weight[n] / sum(weight.values()), row,
                      len(names) == 1)
    return out


_BALL_RANGES = {   # (flexion-plane half-angle, the other, twist), degrees, module docstring
    "thigh": (0.5 * (AAOS_ROM["hip"]["flexion"] + AAOS_ROM["hip"]["extension"]),
              0.5 * (AAOS_ROM["hip"]["abduction"] + AAOS_ROM["hip"]["adduction"]),
              0.5 * (AAOS_ROM["hip"]["internal_rotation"] + AAOS_ROM["hip"]["external_rotation"])),
    "upper_arm": (0.5 * (AAOS_ROM["shoulder"]["flexion"] + AAOS_ROM["shoulder"]["extension"]),
                  0.5 * (AAOS_ROM["shoulder"]["abduction"] + MODELLING["shoulder_adduction"]),
                  0.5 * (AAOS_ROM["shoulder"]["internal_rotation"]
                         + AAOS_ROM["shoulder"]["external_rotation"])),
    # the elbow is a hinge, so the wrist's twist takes the forearm's pronation/supination;
    # in a neutral forearm (palm to the body) the wrist flexes across the elbow's plane
    "hand": (0.5 * (AAOS_ROM["wrist"]["flexion"] + AAOS_ROM["wrist"]["extension"]),
             0.5 * (AAOS_ROM["wrist"]["radial_deviation"] + AAOS_ROM["wrist"]["ulnar_deviation"]),
             0.5 * (AAOS_ROM["forearm"]["pronation"] + AAOS_ROM["forearm"]["supination"])),
    # the foot's long axis turns with inversion/eversion
    "foot": (0.5 * (AAOS_ROM["ankle"]["dorsiflexion"] + AAOS_ROM["ankle"]["plantarflexion"]),
             MODELLING["foot_abduction"],
             0.5 * (AAOS_ROM["ankle"]["inversion"] + AAOS_ROM["ankle"]["eversion"])),
    "clavicle": (MODELLING["clavicle_cone"], MODELLING["clavicle_cone"],
                 MODELLING["clavicle_twist"]),
}
_SPINE_RANGES = {   # a region's whole motion, shared by its bones
    "trunk": (0.5 * (AAOS_ROM["thoracolumbar_spine"]["flexion"]
                     + AAOS_ROM["thoracolumbar_spine"]["extension"]),
              AAOS_ROM["thoracolumbar_spine"]["lateral_flexion"],
              AAOS_ROM["thoracolumbar_spine"]["rotation"]),
    "cervical": (0.5 * (AAOS_ROM["cervical_spine"]["flexion"]
                        + AAOS_ROM["cervical_spine"]["extension"]),
                 AAOS_ROM["cervical_spine"]["lateral_flexion"],
                 AAOS_ROM["cervical_spine"]["rotation"]),
}
_HINGES = {  # segment: (parent segment's joint, range from the straight limb, degrees)
    "shank": ("knee", (0.0, AAOS_ROM["knee"]["flexion"])),
    "forearm": ("elbow", (0.0, AAOS_ROM["elbow"]["flexion"])),
    "toe": ("great toe", (-AAOS_ROM["great_toe_mtp"]["extension"],
                          AAOS_ROM["great_toe_mtp"]["flexion"])),
}


def _region(seg):
    return "trunk" if seg in ("abdomen", "thorax") else "cervical"


def _setup(b, by_name, roles, shares, forward, up, left, elbows):
    seg, side, piece = roles[b.name]
    setup = BoneSetup(b.name, seg, "BALL")
    parent = by_name.get(b.parent) if b.parent is not None else None
    if seg == "pelvis":
        setup.kind, setup.note = "FREE", "the root: moves and turns freely"
    elif piece > 0:
        setup.kind, setup.note = "FIXED", "a piece of a split limb: welded to the one before"
    elif seg in _HINGES and parent is not None:
        bend = {"shank": -forward, "forearm": forward, "toe": -up}[seg]
        axis, bent = hinge_axis(parent.direction, b.direction, b.R, bend)
        joint, (lo, hi) = _HINGES[seg]
        straight = bent if seg != "toe" else 0.0
        setup.kind, setup.axis = "HINGE", tuple(axis)
        setup.range = (math.radians(lo) - straight, math.radians(hi) - straight)
        setup.note = (f"{joint} hinge, AAOS {lo:g} to {hi:g} deg"
                      + (f" from the straight limb (bent {math.degrees(bent):.1f} deg at rest)"
                         if seg != "toe" else ""))
        if seg == "forearm":
            elbows[side] = b.R @ axis
    else:
        if seg in ("abdomen", "thorax", "neck", "head"):
            region = _region(seg)
            count = sum(1 for r in roles.values() if r[0] in ("abdomen", "thorax", "neck", "head")
                        and _region(r[0]) == region and r[2] == 0)
            flex, other, twist = (v / count for v in _SPINE_RANGES[region])
            flexion_axis = left
            setup.note = f"{region} spine (AAOS), shared by {count} bones"
        else:
            flex, other, twist = _BALL_RANGES.get(seg, _BALL_RANGES["clavicle"])
            flexion_axis = left
            if seg == "hand":
                elbow = elbows.get(side)
                flexion_axis = np.cross(elbow, parent.direction) if elbow is not None and \
                    parent is not None else None
            setup.note = f"{seg.replace('_', ' ')} ball joint (AAOS)" if seg != "clavicle" \
                else "clavicle ball joint (modelling choice)"
        halves = None
        if flexion_axis is not None and np.linalg.norm(flexion_axis) > 1e-9:
            halves = cone_half_angles(b.R, flexion_axis, math.radians(flex), math.radians(other))
        if halves is None:
            mean = math.radians(0.5 * (flex + other))
            halves = (mean, mean)
        setup.cone = tuple(min(h, ELLIPSE_MAX) for h in halves)
        setup.twist = math.radians(twist)
    setup.mass, setup.com, setup.inertia = _mass(b, seg, shares, left)
    same = [n for n, r in roles.items() if r[:2] == (seg, side)]
    split = any(roles[n][2] > 0 for n in same)    # a limb split into pieces: its whole length
    setup.radius = RADIUS_RATIO[seg] * (sum(by_name[n].length for n in same) if split
                                        else b.length)
    return setup


def _mass(b, seg, shares, left):
    """(mass, com, inertia) of a bone from its de Leva share."""
    mass, row, single = shares[b.name]
    L = b.length
    if not single:          # a rod of the bone's length, thin about its axis
        I = mass * (L ** 2 / 12.0)
        return mass, (0.0, 0.5 * L, 0.0), (I, 0.1 * I, I)
    _, cm, r_sag, r_trans, r_long, origin = row
    frac = cm / 100.0 if origin == "head" else 1.0 - cm / 100.0
    I_sag, I_trans, I_long = (mass * (r / 100.0 * L) ** 2 for r in (r_sag, r_trans, r_long))
    f = b.R.T @ left           # the sagittal radius is about the medio-lateral axis
    ix, iz = (I_sag, I_trans) if abs(f[0]) >= abs(f[2]) else (I_trans, I_sag)
    return mass, (0.0, frac * L, 0.0), (ix, I_long, iz)



# -- mirroring ----------------------------------------------------------------------------

_MIRROR_PATTERNS = ((r"\.L(?=$|\.)", ".R"), (r"\.R(?=$|\.)", ".L"), (r"_l$", "_r"),
                    (r"_r$", "_l"), (r"_L$", "_R"), (r"_R$", "_L"), (r"_l_", "_r_"),
                    (r"_r_", "_l_"), (r"-L$", "-R"), (r"-R$", "-L"), (r"Left", "Right"),
                    (r"Right", "Left"), (r"left", "right"), (r"right", "left"),
                    (r"^L_", "R_"), (r"^R_", "L_"))


def mirror_name(name: str) -> str | None:
    """The other side's bone name (``thigh.L`` <-> ``thigh.R``, ``calf_l`` <-> ``calf_r``,
    ``mixamorig:LeftArm`` <-> ``mixamorig:RightArm``), or None for a name without a side."""
    for pattern, other in _MIRROR_PATTERNS:
        if re.search(pattern, name):
            return re.sub(pattern, other, name, count=1)
    return None


def mirror_setup(source_frame, target_frame, normal, axis=None, com=None, inertia=None,
                 halves=None):
    """One side's bone settings on the mirrored bone across the plane of ``normal``
    (armature space): a hinge ``axis`` (in the source bone's frame; an axial vector, so it
    turns the other way and keeps the range), the centre of mass ``com`` (a point from the
    head), the principal ``inertia`` along the bone's X, Y, Z and the cone's ``halves``
    (towards X, towards Z), each in the target bone's frame (swapped where the mirror sends
    the source's X nearer the target's Z). Returns a dict of the ones given."""
    Rs = np.asarray(source_frame, dtype=float).reshape(3, 3)
    Rt = np.asarray(target_frame, dtype=float).reshape(3, 3)
    n = _unit(normal, "the mirror plane's normal")
    M = np.eye(3) - 2.0 * np.outer(n, n)
    A = Rt.T @ M @ Rs                    # source bone axes -> target bone axes
    out = {}
    if axis is not None:
        out["axis"] = tuple(-(A @ np.asarray(axis, dtype=float)))
    if com is not None:
        out["com"] = tuple(A @ np.asarray(com, dtype=float))
    swap = abs(A[2, 0]) > abs(A[0, 0])
    if inertia is not None:
        ix, iy, iz = inertia
        out["inertia"] = (iz, iy, ix) if swap else (ix, iy, iz)
    if halves is not None:
        out["halves"] = tuple(reversed(halves)) if swap else tuple(halves)
    return out


def capsule_radius(points, head, tail):
    """The radius of a capsule from ``head`` to ``tail`` (3,) around a limb's skin
    ``points`` (N, 3): the median distance of the points from the segment (half the skin
    outside, half inside, as a limb's cross-section is not round); InvalidInputError with
    no points."""
    P = np.asarray(points, dtype=float).reshape(-1, 3)
    if len(P) == 0:
        raise InvalidInputError("no skin points to size the capsule from")
    a, b = np.asarray(head, dtype=float), np.asarray(tail, dtype=float)
    d = b - a
    t = np.clip((P - a) @ d / max(float(d @ d), 1e-300), 0.0, 1.0)
    return float(np.median(np.linalg.norm(P - (a + t[:, None] * d), axis=1)))
