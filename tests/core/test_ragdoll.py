"""core.ragdoll: the naming schemes, the AAOS ranges and de Leva masses a ragdoll gets, hinge
axes and bend directions from the rest pose (a knee sends the foot back, an elbow the hand
forward, on a rig turned any way and on a straight limb), mirroring, and the refusals."""

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from core.errors import InvalidInputError
from core.ragdoll import (AAOS_ROM, DE_LEVA, RestBone, capsule_radius, hinge_axis, mirror_name,
                          mirror_setup, plan_ragdoll, recognise)

#: Blender's human meta-rig (Rigify 0.6, Blender 5.0) body bones: name, parent, head, tail
#: (armature space, m) and the rest frame's X axis, read from ``armature_human_metarig_add``
METARIG = (
    ('spine', None, (0.0, 0.0552, 1.0099), (0.0, 0.0172, 1.1573), (1.0, -0.0, 0.0)),
    ('spine.001', 'spine', (0.0, 0.0172, 1.1573), (0.0, 0.0004, 1.2929), (1.0, 0.0, 0.0)),
    ('spine.002', 'spine.001', (0.0, 0.0004, 1.2929), (0.0, 0.0059, 1.4657), (1.0, 0.0, 0.0)),
    ('spine.003', 'spine.002', (0.0, 0.0059, 1.4657), (0.0, 0.0114, 1.6582), (1.0, 0.0, 0.0)),
    ('spine.004', 'spine.003', (0.0, 0.0114, 1.6582), (0.0, -0.013, 1.7197), (1.0, 0.0, 0.0)),
    ('spine.005', 'spine.004', (0.0, -0.013, 1.7197), (0.0, -0.0247, 1.7813), (1.0, 0.0, 0.0)),
    ('spine.006', 'spine.005', (0.0, -0.0247, 1.7813), (0.0, -0.0247, 1.9796), (1.0, 0.0, 0.0)),
    ('shoulder.L', 'spine.003', (0.0183, -0.0684, 1.6051), (0.1694, 0.0205, 1.605), (0.50709, -0.86189, -7e-05)),
    ('upper_arm.L', 'shoulder.L', (0.1953, 0.0267, 1.5846), (0.4424, 0.0885, 1.4491), (-0.48082, 2e-05, -0.87682)),
    ('forearm.L', 'upper_arm.L', (0.4424, 0.0885, 1.4491), (0.6594, 0.0492, 1.3061), (-0.55025, 4e-05, -0.835)),
    ('hand.L', 'forearm.L', (0.6594, 0.0492, 1.3061), (0.7234, 0.0412, 1.2585), (-0.59678, 1e-05, -0.8024)),
    ('shoulder.R', 'spine.003', (-0.0183, -0.0684, 1.6051), (-0.1694, 0.0205, 1.605), (0.50709, 0.86189, 7e-05)),
    ('upper_arm.R', 'shoulder.R', (-0.1953, 0.0267, 1.5846), (-0.4424, 0.0885, 1.4491), (-0.48082, -2e-05, 0.87682)),
    ('forearm.R', 'upper_arm.R', (-0.4424, 0.0885, 1.4491), (-0.6594, 0.0492, 1.3061), (-0.55025, -4e-05, 0.835)),
    ('hand.R', 'forearm.R', (-0.6594, 0.0492, 1.3061), (-0.7234, 0.0412, 1.2585), (-0.59678, -1e-05, 0.8024)),
    ('breast.L', 'spine.003', (0.1184, 0.0485, 1.4596), (0.1184, -0.0907, 1.4596), (-1.0, -0.0, 0.0)),
    ('breast.R', 'spine.003', (-0.1184, 0.0485, 1.4596), (-0.1184, -0.0907, 1.4596), (-1.0, -0.0, 0.0)),
    ('pelvis.L', 'spine', (0.0, 0.0552, 1.0099), (0.1112, -0.0451, 1.1533), (-0.42177, -0.86341, -0.27684)),
    ('pelvis.R', 'spine', (-0.0, 0.0552, 1.0099), (-0.1112, -0.0451, 1.1533), (-0.42177, 0.86341, 0.27684)),
    ('thigh.L', 'spine', (0.098, 0.0124, 1.072), (0.098, -0.0286, 0.5372), (1.0, 0.0, 0.0)),
    ('shin.L', 'thigh.L', (0.098, -0.0286, 0.5372), (0.098, 0.0162, 0.0852), (1.0, 0.0, 0.0)),
    ('foot.L', 'shin.L', (0.098, 0.0162, 0.0852), (0.098, -0.0934, 0.0167), (1.0, 0.0, 0.0)),
    ('toe.L', 'foot.L', (0.098, -0.0934, 0.0167), (0.098, -0.1606, 0.0167), (-1.0, -0.0, 0.0)),
    ('heel.02.L', 'foot.L', (0.06, 0.0459, 0.0), (0.14, 0.0459, 0.0), (0.0, -1.0, -0.0)),
    ('thigh.R', 'spine', (-0.098, 0.0124, 1.072), (-0.098, -0.0286, 0.5372), (1.0, 0.0, 0.0)),
    ('shin.R', 'thigh.R', (-0.098, -0.0286, 0.5372), (-0.098, 0.0162, 0.0852), (1.0, 0.0, 0.0)),
    ('foot.R', 'shin.R', (-0.098, 0.0162, 0.0852), (-0.098, -0.0934, 0.0167), (1.0, 0.0, 0.0)),
    ('toe.R', 'foot.R', (-0.098, -0.0934, 0.0167), (-0.098, -0.1606, 0.0167), (-1.0, -0.0, 0.0)),
    ('heel.02.R', 'foot.R', (-0.06, 0.0459, 0.0), (-0.14, 0.0459, 0.0), (0.0, 1.0, 0.0)),
)


def rest_bones(rows=METARIG, turn=None, rename=None):
    """RestBones of ``rows``, the whole rig turned by the rotation vector ``turn`` and
    renamed by ``rename`` (a dict) when given."""
    R0 = Rotation.from_rotvec(turn).as_matrix() if turn is not None else np.eye(3)
    rename = rename or {}
    out = []
    for name, parent, head, tail, x in rows:
        head, tail = R0 @ np.array(head), R0 @ np.array(tail)
        y = (tail - head) / np.linalg.norm(tail - head)
        x = R0 @ np.array(x)
        x = x - (x @ y) * y
        x /= np.linalg.norm(x)
        frame = np.column_stack([x, y, np.cross(x, y)])
        out.append(RestBone(rename.get(name, name), rename.get(parent, parent), tuple(head),
                            tuple(tail), tuple(frame.ravel())))
    return out


def tail_moves(bone, axis, angle=0.1):
    """How the tail of ``bone`` moves when it turns by ``angle`` about ``axis`` (its frame)."""
    R = bone.R
    turned = R @ Rotation.from_rotvec(angle * np.asarray(axis)).as_matrix()
    return bone.length * (turned[:, 1] - R[:, 1])


MIXAMO = {"spine": "mixamorig:Hips", "spine.001": "mixamorig:Spine",
          "spine.002": "mixamorig:Spine1", "spine.003": "mixamorig:Spine2",
          "spine.004": "mixamorig:Neck", "spine.005": "mixamorig:Neck1",
          "spine.006": "mixamorig:Head"}
UNREAL = {"spine": "pelvis", "spine.001": "spine_01", "spine.002": "spine_02",
          "spine.003": "spine_03", "spine.004": "neck_01", "spine.005": "neck_02",
          "spine.006": "head"}
for side, s in (("L", "l"), ("R", "r")):
    word = "Left" if side == "L" else "Right"
    for meta, mix, ue in (("shoulder", "Shoulder", "clavicle"), ("upper_arm", "Arm", "upperarm"),
                          ("forearm", "ForeArm", "lowerarm"), ("hand", "Hand", "hand"),
                          ("thigh", "UpLeg", "thigh"), ("shin", "Leg", "calf"),
                          ("foot", "Foot", "foot"), ("toe", "ToeBase", "ball")):
        MIXAMO[f"{meta}.{side}"] = f"mixamorig:{word}{mix}"
        UNREAL[f"{meta}.{side}"] = f"{ue}_{s}"
BODY = [r for r in METARIG if not r[0].startswith(("breast", "pelvis.", "heel"))]


def test_schemes_are_recognised_by_names():
    names = [r[0] for r in METARIG]
    scheme, roles = recognise(names)
    assert scheme == "Blender meta-rig" and len(roles) == len(names)
    assert roles["shin.L"] == ("shank", "L", 0) and roles["spine"] == ("pelvis", "", 0)
    scheme, roles = recognise(["DEF-spine", "DEF-thigh.L", "DEF-thigh.L.001", "DEF-shin.L",
                               "ORG-thigh.L", "thigh_fk.L", "MCH-foo"])
    assert scheme == "Rigify DEF"
    assert roles["DEF-thigh.L.001"] == ("thigh", "L", 1) and "thigh_fk.L" not in roles
    scheme, roles = recognise(list(MIXAMO.values()) + ["mixamorig:LeftHandIndex1"])
    assert scheme == "Mixamo" and "mixamorig:LeftHandIndex1" not in roles
    assert roles["mixamorig:RightUpLeg"] == ("thigh", "R", 0)
    scheme, roles = recognise(list(UNREAL.values()) + ["root", "upperarm_twist_01_l", "ik_foot_l"])
    assert scheme == "Unreal mannequin"
    assert roles["calf_r"] == ("shank", "R", 0) and roles["ball_l"] == ("toe", "L", 0)
    assert not {"root", "upperarm_twist_01_l", "ik_foot_l"} & set(roles)
    scheme, roles = recognise(["Hips", "Spine", "Chest", "Neck", "Head", "UpperArm_L",
                               "LowerArm_L", "Hand-L", "Left Thigh", "Calf.R", "R_Foot", "Tail"])
    assert scheme == "generic"
    assert roles["UpperArm_L"] == ("upper_arm", "L", 0) and roles["Left Thigh"][:2] == ("thigh", "L")
    assert roles["Calf.R"][:2] == ("shank", "R") and roles["R_Foot"][:2] == ("foot", "R")
    assert "Tail" not in roles


@pytest.mark.parametrize("names", [None, MIXAMO, UNREAL], ids=["metarig", "mixamo", "unreal"])
def test_every_scheme_gives_the_same_body(names):
    plan = plan_ragdoll(rest_bones(BODY, rename=names))
    meta = plan_ragdoll(rest_bones(BODY))
    rename = names or {}
    for name, setup in meta.setups.items():
        other = plan.setups[rename.get(name, name)]
        assert (other.segment, other.kind) == (setup.segment, setup.kind), name
        np.testing.assert_allclose(other.mass, setup.mass, rtol=1e-12)
    assert plan.unknown == []


@pytest.mark.parametrize("turn", [None, (0.0, 0.0, math.pi / 2), (0.4, -1.1, 2.0)])
def test_hinges_bend_the_anatomical_way_on_a_rig_turned_any_way(turn):
    """A positive turn of the knee sends the ankle back, of the elbow the hand forward, of
    the toe its tip down: the rest geometry decides the sign, whichever way the rig stands."""
    bones = {b.name: b for b in rest_bones(turn=turn)}
    plan = plan_ragdoll(list(bones.values()))
    forward = Rotation.from_rotvec(turn).as_matrix() @ [0, -1, 0] if turn else np.array([0, -1, 0])
    up = Rotation.from_rotvec(turn).as_matrix() @ [0, 0, 1] if turn else np.array([0, 0, 1])
    for side in "LR":
        knee, elbow, toe = (plan.setups[f"{n}.{side}"] for n in ("shin", "forearm", "toe"))
        assert knee.kind == elbow.kind == toe.kind == "HINGE"
        assert tail_moves(bones[f"shin.{side}"], knee.axis) @ forward < -0.01
        assert tail_moves(bones[f"forearm.{side}"], elbow.axis) @ forward > 0.01
        assert tail_moves(bones[f"toe.{side}"], toe.axis) @ up < -0.001
        # the axis is the thigh/shin plane's normal: across both bones
        axis = bones[f"shin.{side}"].R @ knee.axis
        assert abs(axis @ bones[f"thigh.{side}"].direction) < 1e-9
        assert abs(axis @ bones[f"shin.{side}"].direction) < 1e-9


def test_hinge_ranges_count_from_the_straight_limb():
    bones = {b.name: b for b in rest_bones()}
    plan = plan_ragdoll(list(bones.values()))
    thigh, shin = bones["thigh.L"], bones["shin.L"]
    bent = math.acos(thigh.direction @ shin.direction)          # 10 deg at rest
    lo, hi = plan.setups["shin.L"].range
    assert lo == pytest.approx(-bent, abs=1e-12)
    assert hi - lo == pytest.approx(math.radians(AAOS_ROM["knee"]["flexion"]), abs=1e-12)
    # turning the shin to its lower end lines it up with the thigh: the straight knee
    turned = shin.R @ Rotation.from_rotvec(lo * np.asarray(plan.setups["shin.L"].axis)).as_matrix()
    assert turned[:, 1] @ thigh.direction == pytest.approx(1.0, abs=1e-12)
    lo, hi = plan.setups["forearm.R"].range
    assert hi - lo == pytest.approx(math.radians(AAOS_ROM["elbow"]["flexion"]), abs=1e-12)


def test_a_straight_limb_takes_the_axis_across_its_bend_direction():
    axis, bent = hinge_axis((0, 0, -1), (0, 0, -1), np.eye(3)[[0, 2, 1]].T * [1, -1, 1],
                            (0, 1, 0))
    assert bent == 0.0
    frame = np.eye(3)[[0, 2, 1]].T * [1, -1, 1]    # Y down, X along +X
    moved = np.cross(frame @ axis, frame[:, 1])
    assert moved @ [0, 1, 0] > 0.99


def test_cones_follow_the_aaos_means_in_their_planes():
    plan = plan_ragdoll(rest_bones())
    hip = AAOS_ROM["hip"]
    hx, hz = plan.setups["thigh.L"].cone     # the thigh's X is lateral: Z is the sagittal swing
    assert math.degrees(hz) == pytest.approx((hip["flexion"] + hip["extension"]) / 2)
    assert math.degrees(hx) == pytest.approx((hip["abduction"] + hip["adduction"]) / 2)
    assert math.degrees(plan.setups["thigh.L"].twist) == pytest.approx(
        (hip["internal_rotation"] + hip["external_rotation"]) / 2)
    spine = AAOS_ROM["thoracolumbar_spine"]
    trunk = [plan.setups[n] for n in ("spine.001", "spine.002", "spine.003")]
    assert sum(math.degrees(s.twist) for s in trunk) == pytest.approx(spine["rotation"])
    assert sum(math.degrees(s.cone[0]) for s in trunk) == pytest.approx(spine["lateral_flexion"])
    for s in plan.setups.values():
        if s.cone is not None:
            assert all(0.0 < h <= math.pi / 2 for h in s.cone)


@pytest.mark.parametrize("sex", ["male", "female"])
def test_masses_follow_de_leva(sex):
    bones = rest_bones()
    plan = plan_ragdoll(bones, 80.0, sex)
    setups = plan.setups
    assert sum(s.mass for s in setups.values()) == pytest.approx(80.0, rel=1e-12)
    welded = sum(s.mass for s in setups.values() if s.segment == "attachment")
    table = DE_LEVA[sex]
    whole = sum(table[k][0] * (1 if k.endswith("trunk") or k == "head" else 2) for k in table)
    scale = (80.0 - welded) / whole     # the table's fractions sum to 100 % within rounding
    assert setups["thigh.L"].mass == pytest.approx(table["thigh"][0] * scale, rel=1e-12)
    assert setups["forearm.R"].mass == pytest.approx(table["forearm"][0] * scale, rel=1e-12)
    assert setups["spine"].mass == pytest.approx(table["lower_trunk"][0] * scale, rel=1e-12)
    trunk = sum(setups[n].mass for n in ("spine.001", "spine.002"))
    assert trunk == pytest.approx(table["middle_trunk"][0] * scale, rel=1e-12)
    # a single bone: its centre of mass at de Leva's position, from the proper end
    thigh = {b.name: b for b in bones}["thigh.L"]
    assert setups["thigh.L"].com[1] == pytest.approx(table["thigh"][1] / 100 * thigh.length)
    pelvis = {b.name: b for b in bones}["spine"]
    assert setups["spine"].com[1] == pytest.approx((1 - table["lower_trunk"][1] / 100)
                                                   * pelvis.length)
    ix, iy, iz = setups["thigh.L"].inertia
    assert iy == pytest.approx(setups["thigh.L"].mass * (table["thigh"][4] / 100 * thigh.length) ** 2)


def test_unknown_bones_are_listed_and_welded_where_they_carry_the_body():
    rows = list(BODY)
    # a tail on the pelvis (a leaf: left alone) and an extra bone between chest and neck
    rows.append(("tail", "spine", (0, 0.06, 1.0), (0, 0.3, 0.9), (1, 0, 0)))
    rows = [(n, "gorget" if n == "spine.004" else p, h, t, x) for n, p, h, t, x in rows]
    rows.insert(4, ("gorget", "spine.003", (0, 0.0114, 1.6582), (0, 0.0114, 1.66), (1, 0, 0)))
    plan = plan_ragdoll(rest_bones(rows))
    assert plan.unknown == ["gorget", "tail"]
    assert plan.left_alone == ["tail"] and "tail" not in plan.setups
    assert plan.setups["gorget"].kind == "FIXED"
    assert list(plan.setups).index("gorget") < list(plan.setups).index("spine.004")


def test_refusals():
    rows = [(n, None if n == "thigh.L" else p, h, t, x) for n, p, h, t, x in BODY]
    with pytest.raises(InvalidInputError, match="'thigh.L' have no parent chain to 'spine'"):
        plan_ragdoll(rest_bones(rows))
    with pytest.raises(InvalidInputError, match="no bone has a name of a known humanoid rig"):
        plan_ragdoll(rest_bones(BODY, rename={r[0]: f"b{k}" for k, r in enumerate(BODY)}))
    for mass in (0.0, -3.0, float("nan"), 0.5):
        with pytest.raises(InvalidInputError, match="mass"):
            plan_ragdoll(rest_bones(), mass)
    # a part of the rig: the selected arm hangs on the rest (its parent chain not simulated)
    part = plan_ragdoll(rest_bones(), only=["upper_arm.L", "forearm.L", "hand.L"])
    assert list(part.setups) == ["upper_arm.L", "forearm.L", "hand.L"]


def test_mirror_names():
    pairs = [("thigh.L", "thigh.R"), ("DEF-thigh.L.001", "DEF-thigh.R.001"), ("calf_l", "calf_r"),
             ("upperarm_twist_01_l", "upperarm_twist_01_r"), ("UpperArm_L", "UpperArm_R"),
             ("mixamorig:LeftArm", "mixamorig:RightArm"), ("L_Foot", "R_Foot"),
             ("hand-L", "hand-R")]
    for a, b in pairs:
        assert mirror_name(a) == b and mirror_name(b) == a
    assert mirror_name("spine.003") is None and mirror_name("Head") is None


def test_mirroring_one_side_gives_the_other_sides_plan():
    """The left side's hinge axes, centres of mass, inertias and cones mirrored across the
    sagittal plane are what the plan gives the right side by itself."""
    bones = {b.name: b for b in rest_bones()}
    plan = plan_ragdoll(list(bones.values()))
    for name in ("shin.L", "forearm.L", "toe.L", "thigh.L", "hand.L", "foot.L", "upper_arm.L"):
        src, dst = plan.setups[name], plan.setups[mirror_name(name)]
        got = mirror_setup(bones[name].R, bones[mirror_name(name)].R, plan.left,
                           axis=src.axis, com=src.com, inertia=src.inertia, halves=src.cone)
        if src.kind == "HINGE":
            np.testing.assert_allclose(got["axis"], dst.axis, atol=1e-4)
        np.testing.assert_allclose(got["com"], dst.com, atol=1e-4)
        np.testing.assert_allclose(got["inertia"], dst.inertia, rtol=1e-6)
        if src.cone is not None:
            np.testing.assert_allclose(got["halves"], dst.cone, atol=1e-12)


def test_capsule_radius_of_a_cylinder_of_points():
    rng = np.random.default_rng(3)
    t, a = rng.uniform(0, 0.4, 500), rng.uniform(0, 2 * np.pi, 500)
    points = np.column_stack([0.05 * np.cos(a), t, 0.05 * np.sin(a)])
    assert capsule_radius(points, (0, 0, 0), (0, 0.4, 0)) == pytest.approx(0.05, rel=1e-12)
    with pytest.raises(InvalidInputError):
        capsule_radius(np.zeros((0, 3)), (0, 0, 0), (0, 1, 0))
