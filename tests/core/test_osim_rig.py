"""core.osim_rig: an OpenSim model laid out as an armature, without Blender.

Blender's own composition of a pose bone (``P_b = P_p R_p^-1 R_b M_b``) is written out here
once, independently of the module, and must reproduce the bone poses from the bases.
"""

import os
import shutil

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.io.osim import read_osim
from core.io.vtp import Mesh, write_vtp
from core.lie import se3
from core.osim_rig import (MIN_BONE_LENGTH, OsimRig, coordinate_property, geometry_transform,
                           keying_rate, motion_frames, motion_rate, pose_bases, primitive_mesh,
                           read_osim_import, summarize_skipped, trial_frames)

OSIM = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "osim")
GAIT = os.path.join(OSIM, "gait2392_thelen2003muscle.osim")
ARM26 = os.path.join(OSIM, "arm26.osim")
PENDULUM = os.path.join(OSIM, "double_pendulum.osim")
#: float64 products of ~6 rigid transforms of unit scale
TOL = 1e-12

pytestmark = pytest.mark.skipif(not os.path.isdir(OSIM), reason="OpenSim data not found")


def blender_compose(parents, rests, bases):
    """Armature-space pose bones from bases with Blender's default inheritance."""
    out = np.empty_like(bases)
    for b, p in enumerate(parents):
        local = rests[b] if p < 0 else out[p] @ se3.inv(rests[p]) @ rests[b]
        out[b] = local @ bases[b]
    return out


@pytest.fixture(scope="module")
def gait():
    return read_osim_import(GAIT)


def test_gait_layout(gait):
    rig = gait.rig
    assert len(rig.bodies) == 12 and "ground" not in rig.bodies
    assert np.all(gait.lengths >= MIN_BONE_LENGTH)
    for R, B in zip(gait.rests, rig.default_poses):
        np.testing.assert_allclose(R[:3, 3], B[:3, 3], atol=TOL)  # head at the body origin
        np.testing.assert_allclose(R[:3, :3].T @ R[:3, :3], np.eye(3), atol=TOL)
        assert np.linalg.det(R[:3, :3]) > 0.0
    femur = rig.bodies.index("femur_r")  # the knee's parent frame is the femur origin: the
    tibia = rig.default_poses[rig.bodies.index("tibia_r")][:3, 3]  # tail goes to the tibia
    tail = gait.rests[femur][:3, 3] + gait.lengths[femur] * gait.rests[femur][:3, 1]
    np.testing.assert_allclose(tail, tibia, atol=1e-12)
    toes = rig.bodies.index("toes_r")  # no child: along the body's y axis
    np.testing.assert_allclose(gait.rests[toes][:3, 1], rig.default_poses[toes][:3, 1], atol=TOL)
    assert len(gait.items) == 20 and gait.mesh_files == 20 and gait.missing == ()


def test_bases_reproduce_body_poses(gait):
    rig, rng = gait.rig, np.random.default_rng(7)
    for _ in range(5):
        q = rig.model.default_q() + rng.uniform(-0.4, 0.4, rig.model.nq)
        bases = rig.bases(gait.rests, rig.q(q))
        posed = blender_compose(rig.parents, gait.rests, bases)
        bodies = rig.model.body_poses(q)
        for b, name in enumerate(rig.bodies):  # the body frame rides on the bone
            body = posed[b] @ se3.inv(gait.rests[b]) @ rig.default_poses[b]
            np.testing.assert_allclose(body, bodies[name], atol=TOL)
    np.testing.assert_allclose(rig.bases(gait.rests, rig.model.default_q()),
                               np.tile(np.eye(4), (12, 1, 1)), atol=TOL)


def test_geometry_placement(gait):
    rig = gait.rig
    for item in gait.items:
        if item.body == "ground":
            np.testing.assert_allclose(item.placement, geometry_transform(item.geometry))
            continue
        b = rig.bodies.index(item.body)
        world = gait.rests[b] @ item.placement
        np.testing.assert_allclose(world, rig.default_poses[b] @ geometry_transform(item.geometry),
                                   atol=TOL)


def test_markers_ride_on_their_bones(tmp_path):
    """A marker sphere at its placement in the bone follows the posed bone to the marker's
    world position (OsimModel.marker_positions); point_in_body undoes point_in_bone."""
    from core.io.markers import read_marker_set
    from core.io.osim_export import write_osim

    markers = read_marker_set(os.path.join(OSIM, "gait2392_pipeline", "gait2392_Scale_MarkerSet.xml"))
    write_osim(tmp_path / "gait_markers.osim", read_osim(GAIT).with_markers(markers))
    plan = read_osim_import(tmp_path / "gait_markers.osim", search=(os.path.join(OSIM, "Geometry"),))
    rig = plan.rig
    assert [i.marker.name for i in plan.markers] == list(markers) and len(markers) == 39
    assert ", 39 markers" in plan.summary()
    q = rig.model.default_q() + np.random.default_rng(2).uniform(-0.4, 0.4, rig.model.nq)
    poses = rig.bone_poses(plan.rests, rig.q(q))
    want = rig.model.marker_positions(rig.q(q))
    for k, item in enumerate(plan.markers):
        b = rig.bodies.index(item.marker.body)
        np.testing.assert_allclose(poses[b][:3, :3] @ item.placement + poses[b][:3, 3], want[k],
                                   atol=TOL)
        back = rig.point_in_body(item.marker.body, plan.rests[b], item.placement)
        np.testing.assert_allclose(back, item.marker.location, atol=TOL)


def test_pose_bases_root_and_child():
    rests = np.stack([se3.exp(np.array([0.1, 0.2, 0.3, 1.0, 2.0, 3.0])),
                      se3.exp(np.array([-0.3, 0.1, 0.2, 0.5, 0.0, -1.0]))])
    poses = np.stack([se3.exp(np.array([0.4, 0.0, 0.1, 0.0, 1.0, 0.0])),
                      se3.exp(np.array([0.0, -0.2, 0.3, 0.2, 0.1, 0.0]))])
    bases = pose_bases([-1, 0], rests, poses)
    np.testing.assert_allclose(blender_compose([-1, 0], rests, bases), poses, atol=TOL)


def test_coordinate_property_words():
    m = read_osim(GAIT)
    knee = coordinate_property(m.coordinates["knee_angle_r"])
    assert knee["description"] == "knee_angle_r: OpenSim coordinate (rad), range -120..10 deg"
    assert knee["subtype"] == "ANGLE" and "min" not in knee
    assert knee["soft_min"] == pytest.approx(-2.0943951)
    ty = coordinate_property(m.coordinates["pelvis_ty"])
    assert ty["subtype"] == "DISTANCE" and ty["default"] == 0.95
    assert ty["description"] == "pelvis_ty: OpenSim coordinate (m), range -1..2 m"


def test_missing_and_unreadable_meshes(tmp_path):
    arm = read_osim_import(ARM26)
    assert len(arm.missing) == 36 and all(i.status == "missing" for i in arm.items)
    assert "36 mesh files not found (placeholders): ground_ribs.vtp" in arm.summary()
    assert "and 28 more" in arm.summary()
    assert summarize_skipped(arm.rig.model.skipped) == ""
    shutil.copy(PENDULUM, tmp_path / "p.osim")
    (tmp_path / "Geometry").mkdir()
    (tmp_path / "Geometry" / "sphere.vtp").write_text("<VTKFile")
    with pytest.raises(InvalidInputError, match="sphere.vtp"):
        read_osim_import(tmp_path / "p.osim")
    (tmp_path / "Geometry" / "sphere.vtp").unlink()
    (tmp_path / "more").mkdir()
    write_vtp(tmp_path / "more" / "sphere.vtp", Mesh(np.eye(3), [[0, 1, 2]]))
    found = read_osim_import(tmp_path / "p.osim", search=(str(tmp_path / "more"),))
    assert found.missing == ("cylinder.vtp",) and found.mesh_files == 1


def test_primitives_and_motion_timing():
    from core.io.osim import OsimGeometry

    g = OsimGeometry("c", "Cylinder", np.eye(4), np.ones(3), dimensions={"radius": [0.1],
                                                                          "half_height": [0.3]})
    v, _ = primitive_mesh(g)
    np.testing.assert_allclose(v.max(axis=0), [0.1, 0.3, 0.1], atol=1e-12)
    b = OsimGeometry("b", "Brick", np.eye(4), np.ones(3), dimensions={"half_lengths": [1, 2, 3]})
    np.testing.assert_allclose(primitive_mesh(b)[0].max(axis=0), [1, 2, 3])
    t = 0.5 + np.arange(211) / 60.0
    assert motion_rate(t) == pytest.approx(60.0)
    assert motion_frames(t, 60.0, 1)[[0, -1]].tolist() == [1, 211]      # t = 0.5 .. 4.0 s
    assert motion_frames(t, 60.0, 7)[[0, -1]].tolist() == [7, 217]
    with pytest.raises(InvalidInputError, match="two rows"):
        motion_rate([0.0])


def test_trial_frames_keep_every_row():
    numbers = np.arange(5, 12)
    np.testing.assert_array_equal(trial_frames(numbers, 60.0, 60.0, 1), np.arange(1, 8))
    between = trial_frames(numbers, 60.0, 24.0, 1)   # 60 Hz rows at 24 fps: 0.4 frames apart
    np.testing.assert_allclose(between, 1 + np.arange(7) * 0.4, rtol=0, atol=1e-12)
    assert between[5] == 3.0 and between[1] != np.rint(between[1])


def test_keying_rate_of_a_recording():
    assert keying_rate(24, 1.0, None) == (24, 1.0, 24.0)
    assert keying_rate(24, 1.0, 60.0 * (1 + 1e-8)) == (60, 1.0, 60.0)   # round-off of the steps
    fps, base, rate = keying_rate(24, 1.0, 29.97)
    assert (fps, rate) == (30, 29.97) and fps / base == pytest.approx(29.97, rel=1e-15)
