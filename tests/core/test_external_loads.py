"""core.io.external_loads: OpenSim ExternalLoads files read, checked against a model, and
applied by the inverse dynamics (core.mocap.inverse_dynamics) as a hand computation says."""

from pathlib import Path

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.io.external_loads import check_external_loads, read_external_loads
from core.io.motion import Motion, write_motion
from core.io.osim import read_osim
from core.mocap.inverse_dynamics import inverse_dynamics

OSIM = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "osim"
GRF = OSIM / "gait2392_pipeline" / "subject01_walk1_grf.xml"
pytestmark = pytest.mark.skipif(not GRF.exists(), reason="shared/data is not beside this checkout")


@pytest.fixture(scope="module")
def gait():
    return read_osim(OSIM / "gait2392_thelen2003muscle.osim")


def _force(name, body, force="f_v", point="f_p", torque="", frame="ground", point_frame="ground",
           extra=""):
    return f"""<ExternalForce name="{name}">{extra}
        <applied_to_body>{body}</applied_to_body>
        <force_expressed_in_body>{frame}</force_expressed_in_body>
        <point_expressed_in_body>{point_frame}</point_expressed_in_body>
        <force_identifier>{force}</force_identifier>
        <point_identifier>{point}</point_identifier>
        <torque_identifier>{torque}</torque_identifier>
      </ExternalForce>"""


def _loads(folder, forces, columns, time, values, datafile="forces.mot"):
    """Write an ExternalLoads file with ``forces`` (XML of ExternalForces) and its data."""
    write_motion(folder / "forces.mot", columns, time, values)
    path = folder / "loads.xml"
    path.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000"><ExternalLoads name="loads"><objects>
{''.join(forces)}
</objects><datafile>{datafile}</datafile></ExternalLoads></OpenSimDocument>""")
    return path


FORCE_COLUMNS = ["f_vx", "f_vy", "f_vz", "f_px", "f_py", "f_pz", "t_x", "t_y", "t_z"]


def test_the_walking_trials_loads_are_read_as_opensim_reads_them():
    loads = read_external_loads(GRF)
    assert [f.name for f in loads.forces] == ["ExternalForce_1", "ExternalForce_2"]
    right, left = loads.forces
    assert (right.body, left.body) == ("calcn_r", "calcn_l")
    assert right.force_frame == right.point_frame == "ground"
    names = loads.data.names
    assert [names[j] for j in right.force_columns] == ["ground_force_vx", "ground_force_vy",
                                                       "ground_force_vz"]
    assert [names[j] for j in left.point_columns] == ["1_ground_force_px", "1_ground_force_py",
                                                      "1_ground_force_pz"]
    assert [names[j] for j in left.torque_columns] == ["1_ground_torque_x", "1_ground_torque_y",
                                                       "1_ground_torque_z"]
    assert loads.data.values.shape == (1501, 18) and loads.datafile.endswith("grf.mot")


def test_a_static_load_shifts_the_pelvis_forces_by_its_moment_about_the_pelvis(gait, tmp_path):
    """At the default pose (pelvis rotations zero: its axes are ground's) a force F at point p
    and a torque T change the pelvis' generalized forces by -F (translations) and by
    -(T + (p - o) x F) (rotations about z, x, y: tilt, list, rotation)."""
    time = np.linspace(0.0, 1.0, 11)
    F, p, T = np.array([20.0, 100.0, -30.0]), np.array([0.3, 0.05, 0.1]), np.array([1, 2, 3.0])
    values = np.tile(np.r_[F, p, T], (11, 1))
    path = _loads(tmp_path, [_force("push", "calcn_r", torque="t_")], FORCE_COLUMNS, time,
                  values)
    motion = Motion(names=("pelvis_ty",), time=time, values=np.full((11, 1), 0.0))
    free = inverse_dynamics(gait, motion)
    loaded = inverse_dynamics(gait, motion, read_external_loads(path))
    d = dict(zip(free.coordinates, (loaded.forces - free.forces).T))
    origin = gait.body_poses(gait.q_from({"pelvis_ty": 0.0}))["pelvis"][:3, 3]
    moment = T + np.cross(p - origin, F)
    for name, expected in (("pelvis_tx", -F[0]), ("pelvis_ty", -F[1]), ("pelvis_tz", -F[2]),
                           ("pelvis_tilt", -moment[2]), ("pelvis_list", -moment[0]),
                           ("pelvis_rotation", -moment[1])):
        assert np.allclose(d[name], expected, rtol=0, atol=1e-9), name


def test_a_force_expressed_in_a_body_is_turned_into_ground(gait, tmp_path):
    """The same load written in calcn_r's frame (force) and in pelvis' frame (point) gives
    the same generalized forces as written in ground."""
    time = np.linspace(0.0, 1.0, 11)
    q = gait.q_from({"pelvis_ty": 0.0, "pelvis_tilt": 0.3, "ankle_angle_r": -0.2})
    poses = gait.body_poses(q)
    Rc, Tp = poses["calcn_r"][:3, :3], poses["pelvis"]
    F, p = np.array([20.0, 100.0, -30.0]), np.array([0.3, 0.05, 0.1])
    local = np.r_[Rc.T @ F, Tp[:3, :3].T @ (p - Tp[:3, 3]), 0, 0, 0]
    motion = Motion(names=tuple(gait.coordinate_names), time=time, values=np.tile(q, (11, 1)))
    a = inverse_dynamics(gait, motion, read_external_loads(_loads(
        tmp_path, [_force("push", "calcn_r")], FORCE_COLUMNS, time,
        np.tile(np.r_[F, p, 0, 0, 0], (11, 1)))))
    b = inverse_dynamics(gait, motion, read_external_loads(_loads(
        tmp_path, [_force("push", "calcn_r", frame="calcn_r", point_frame="pelvis")],
        FORCE_COLUMNS, time, np.tile(local, (11, 1)))))
    assert np.abs(a.forces - b.forces).max() < 1e-9


def test_a_force_on_a_body_the_model_lacks_is_refused(gait, tmp_path):
    path = _loads(tmp_path, [_force("ExternalForce_1", "calcn_right")], FORCE_COLUMNS,
                  np.linspace(0, 1, 5), np.zeros((5, 9)))
    with pytest.raises(InvalidInputError, match=r"ExternalForce 'ExternalForce_1' acts on body "
                                                 r"'calcn_right', which model .* does not have "
                                                 r"\(its bodies: pelvis, femur_r"):
        check_external_loads(read_external_loads(path), gait)


def test_frames_the_model_lacks_are_taken_as_ground_with_a_warning(gait, tmp_path):
    path = _loads(tmp_path, [_force("f", "calcn_r", frame="plate", point_frame="lab")],
                  FORCE_COLUMNS, np.linspace(0, 1, 5), np.zeros((5, 9)))
    loads, warnings = check_external_loads(read_external_loads(path), gait)
    assert loads.forces[0].force_frame == loads.forces[0].point_frame == "ground"
    assert len(warnings) == 2 and "'plate'" in warnings[0] and "'lab'" in warnings[1]


@pytest.mark.parametrize("columns, identifier, found", [
    (["f_vx", "f_vy", "f_px", "f_py", "f_pz", "a", "b", "c", "d"], "f_v", r"found 2 \(f_vx, f_vy\)"),
    (FORCE_COLUMNS, "f_", r"found 6 \(f_vx, f_vy, f_vz, f_px, f_py, f_pz\)"),
    (FORCE_COLUMNS, "force_v", r"found 0 \(none\)"),
])
def test_identifiers_must_name_three_columns(tmp_path, columns, identifier, found):
    path = _loads(tmp_path, [_force("grf", "calcn_r", force=identifier)], columns,
                  np.linspace(0, 1, 5), np.zeros((5, 9)))
    with pytest.raises(InvalidInputError, match=rf"ExternalForce 'grf': its force_identifier "
                                                rf"'{identifier}' must start the labels of "
                                                rf"exactly 3 columns .* {found}"):
        read_external_loads(path)


def test_disabled_forces_are_left_out_and_a_torque_alone_is_applied(tmp_path):
    path = _loads(tmp_path, [_force("off", "calcn_r", extra="<isDisabled>true</isDisabled>"),
                             _force("off4", "calcn_r", extra="<appliesForce>false</appliesForce>"),
                             _force("twist", "calcn_l", force="", point="", torque="t_")],
                  FORCE_COLUMNS, np.linspace(0, 1, 5), np.zeros((5, 9)))
    loads = read_external_loads(path)
    assert [f.name for f in loads.forces] == ["twist"] and len(loads.notes) == 2
    assert loads.forces[0].force_columns is None and loads.forces[0].torque_columns == (6, 7, 8)


@pytest.mark.parametrize("force, match", [
    (_force("none", "calcn_r", force="", point="", torque=""), "identifies neither a force"),
    (_force("pt", "calcn_r", force="", point="f_p", torque="t_"), "gives a point but no force"),
    (_force("nobody", ""), "has no applied_to_body"),
])
def test_incomplete_forces_are_refused(tmp_path, force, match):
    path = _loads(tmp_path, [force], FORCE_COLUMNS, np.linspace(0, 1, 5), np.zeros((5, 9)))
    with pytest.raises(InvalidInputError, match=match):
        read_external_loads(path)


def test_a_missing_or_unnamed_datafile_is_refused(tmp_path):
    path = _loads(tmp_path, [_force("f", "calcn_r")], FORCE_COLUMNS, np.linspace(0, 1, 5),
                  np.zeros((5, 9)), datafile="elsewhere.mot")
    with pytest.raises(InvalidInputError, match="elsewhere.mot"):
        read_external_loads(path)
    path = _loads(tmp_path, [_force("f", "calcn_r")], FORCE_COLUMNS, np.linspace(0, 1, 5),
                  np.zeros((5, 9)), datafile="")
    with pytest.raises(InvalidInputError, match="<datafile> is empty"):
        read_external_loads(path)


def test_a_file_that_is_not_external_loads_is_refused(tmp_path):
    path = tmp_path / "model.xml"
    path.write_text('<OpenSimDocument Version="40000"><Model name="m"/></OpenSimDocument>')
    with pytest.raises(InvalidInputError, match="no <ExternalLoads> element"):
        read_external_loads(path)
    path.write_text("<OpenSimDocument><ExternalLoads")
    with pytest.raises(InvalidInputError, match="not a complete XML file"):
        read_external_loads(path)
