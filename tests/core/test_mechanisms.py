"""Behaviour checks of the demo mechanisms (seed 000 section 7): beads stay on their wires,
passive mechanisms conserve energy, drives change the energy only by their work, planes stay
on the globe and their coasts, chains fall, the knee follows OpenSim's path.

Runs are kept short (fractions of a second of simulated time) so the file stays well under a
minute; the demos' own durations are exercised by scripts/benchmarks/mechanisms.py.
"""


import numpy as np
import pytest

from core import expcoords
from core.errors import InvalidInputError
from core.mechanisms import (DEMOS, BodyDisplay, Drive, Mechanism, beads_on_a_wire,
                             energy_drift_warning, hinge_chain, knee_pendulum,
                             scapulothoracic_rig, simulate_mechanism, sliding_chain,
                             spherical_chain, spinning_globe)
from core.joints import ClosedSplineCurveJoint
from core.mechanisms.beads import closest_point_distance, rose_frames
from core.mechanisms.deforming import deforming_surface
from core.mechanisms.globe import coast_distance, coast_frames
from core.mechanisms.scapulothoracic import plate_contact_distance
from core.mechanisms.skeleton import out_of_plane, skeleton_chain

#: relative energy bounds (of the largest kinetic-energy scale seen): RK4 on cubic spline
#: joints is second order where q crosses a knot (dS/dq is only C0 there), so these bounds
#: are set for each run's step size, about 10x above the measured drift.
ENERGY_TOL = {"hinge": 1e-6, "knee": 1e-6, "sliding": 1e-5, "beads_work": 0.05,
              "deforming": 1e-5}


def kinetic_scale(r):
    assert r.energy_scale > 1e-3                              # something moves
    return r.energy_scale


# -- the closed curve joint (its own tests: test_closed_spline_curve.py) -----------------------

def test_closest_point_distance_measures_offsets_from_the_curve():
    j = ClosedSplineCurveJoint(rose_frames(24))
    G = j.transforms(np.array([1.3, 7.8, 15.2]))
    normal_offset = G[:, :3, 2] * 0.01          # z is the wire plane's normal
    d = closest_point_distance(j, G[:, :3, 3] + normal_offset)
    assert np.allclose(d, 0.01, atol=1e-9)
    assert np.all(closest_point_distance(j, G[:, :3, 3]) < 1e-12)


def test_the_default_constraint_error_measures_a_body_moved_off_its_joint():
    """Without a mechanism's own measure, the constraint error of a frame is the largest
    distance of a body's position from its parent pose x placement x G(q): rounding for
    poses from the kinematics, and the displacement of a body moved off its joint in one
    frame (its children, posed from it, then also miss theirs by as much)."""
    from core.mechanisms.base import _constraint_error

    mech = DEMOS["hinge_chain"](duration=0.2)
    assert mech.constraint_error is None
    r = simulate_mechanism(mech)
    err = _constraint_error(mech, r.times, r.q, r.poses)
    assert err.shape == r.times.shape and err.max() < 1e-12
    poses = r.poses.copy()
    poses[3, 2, :3, 3] += [0.0, 2e-3, -1e-3]
    moved = _constraint_error(mech, r.times, r.q, poses)
    assert abs(moved[3] - 2e-3) < 1e-12
    np.testing.assert_array_equal(np.delete(moved, 3), np.delete(err, 3))


# -- beads on a wire --------------------------------------------------------------------------

def test_beads_stay_on_their_wires_and_move():
    r = simulate_mechanism(beads_on_a_wire(duration=0.5))
    assert r.status == "completed" and r.poses.shape == (16, 4, 4, 4)
    assert r.constraint_error.max() <= 1e-9
    assert np.abs(r.q[-1, 1:] - r.q[0, 1:]).max() > 0.5     # the beads slide
    assert np.allclose(r.q[:, 0], 1.5 * r.times)             # the frame follows the drive


def test_spinning_wire_changes_energy_only_through_the_drive():
    # 16 substeps: RK4 is second order where q crosses a knot; the wires' tight petals need
    # the step (measured 5.5e-2 of the work at 8 substeps, 4.5e-3 at 16)
    m = beads_on_a_wire(duration=0.6, substeps=16, amplitude=0.15)
    r = simulate_mechanism(m)
    W = r.drive_work
    assert np.abs(W).max() > 5e-3                             # the drive does real work
    dev = np.abs(r.energy - r.energy[0] - W).max()
    assert dev <= ENERGY_TOL["beads_work"] * np.abs(W).max()
    # a wire frame at rest does no work
    r0 = simulate_mechanism(beads_on_a_wire(duration=0.3, spin_rate=0.0, substeps=8,
                                            amplitude=0.15))
    assert np.all(r0.drive_work == 0.0)


def test_beads_with_free_spin_keep_spinning_and_stay_on_the_wire():
    m = beads_on_a_wire(n_beads=2, spin=True, duration=0.3)
    r = simulate_mechanism(m)
    assert r.constraint_error.max() <= 1e-9
    beads = m.info["bead_bodies"]
    spins = r.q[-1, [m.model.q_start[b] for b in beads]]
    assert np.all(spins > 0.3)                                # each bead turned about the wire


# -- chains -------------------------------------------------------------------------------

def test_hinge_chain_falls_and_conserves_energy():
    m = hinge_chain(n_links=4, duration=0.5)
    r = simulate_mechanism(m)
    tip = r.poses[:, -1] @ np.array([0.3, 0.0, 0.0, 1.0])
    assert tip[-1, 2] < tip[0, 2] - 0.3
    # early on the whole chain falls like a free rigid rod pinned at the origin
    assert np.all(np.diff(tip[:8, 2]) < 0)
    assert np.abs(r.energy - r.energy[0]).max() <= ENERGY_TOL["hinge"] * kinetic_scale(r)
    assert r.constraint_error.max() < 1e-12
    assert energy_drift_warning(m, r.energy_drift) is None


def test_spherical_chain_falls_out_of_plane_and_respects_its_reach_cones():
    m = spherical_chain(n_links=3, duration=0.6, cone_half_angle=0.4)
    r = simulate_mechanism(m)
    assert r.poses[-1, -1, 2, 3] < r.poses[0, -1, 2, 3] - 0.1
    assert np.abs(r.poses[:, -1, 1, 3]).max() > 0.1           # out of the x-z plane
    g = np.array([[expcoords.reach_cone_value(q[3 * i:3 * i + 3], axis, half)
                   for i, axis, half in m.info["reach_cones"]] for q in r.q])
    assert g.min() < 0.05 * (1 - np.cos(0.4))                 # the cones are reached ...
    angle = np.arccos(np.clip(g + np.cos(0.4), -1, 1))        # g = cos(angle) - cos(phi)
    # ... and hold: the limit solver's deadband of 1e-3 on g is 1e-3 / sin(0.4) = 2.6e-3 rad
    assert angle.max() <= 0.4 + 1e-3 / np.sin(0.4) + 1e-4
    # inelastic stops only remove energy (position corrections add at most round-off)
    assert np.diff(r.energy).max() <= 1e-6 * kinetic_scale(r)


def test_sliding_chain_stays_on_the_parent_surfaces_and_conserves_energy():
    m = sliding_chain(n_links=3, duration=0.3)
    r = simulate_mechanism(m)
    # the spline surface approximates each ellipsoid to 0.02 mm (fit report)
    assert m.info["fit_report"].max_position_mm < 0.05
    assert r.constraint_error.max() < 5e-5
    assert np.abs(r.energy - r.energy[0]).max() <= ENERGY_TOL["sliding"] * kinetic_scale(r)
    assert energy_drift_warning(m, r.energy_drift) is None
    assert np.abs(r.q[-1] - r.q[0]).max() > 1e-3               # the links slide


def test_skeleton_chain_holds_its_joints():
    m = skeleton_chain(n_links=3, spherical=(1,), duration=0.1, substeps=4)
    r = simulate_mechanism(m)
    assert r.status == "completed" and r.poses.shape == (7, 3, 4, 4)
    assert r.constraint_error.max() < 1e-8
    assert r.poses[-1, -1, 2, 3] < r.poses[0, -1, 2, 3]       # it falls
    assert m.ndof == 6 * 3 - (5 * 2 + 3)


def test_skeleton_demo_conserves_energy_at_its_step():
    """The demo's own chain and step (h = 1/600 s, heun + post-stabilization): the energy
    error stays below 1e-3 of the peak kinetic energy (measured 1.4e-5 over this half second,
    2.4e-3 over the demo's 3 s); the first-order "momentum" update gained 3.2 J of 47.8 J in
    1 s and diverged 2.3 s in. Half a second: the chain has fallen most of the way and no
    body has yet swung up past the pivot's height."""
    m = skeleton_chain(duration=0.5)
    assert m.skeleton_update == "heun"
    r = simulate_mechanism(m)
    assert r.kinetic.max() > 20.0                             # most of the fall
    assert r.energy_drift < 1e-3, r.energy_drift
    assert energy_drift_warning(m, r.energy_drift) is None
    assert r.constraint_error.max() < 1e-8
    # no body centre rises above the pivot height
    assert r.poses[:, :, 2, 3].max() < 1e-9


def test_skeleton_demo_falls_out_of_its_plane():
    """The demo's chain over its full 3 s: the ball joints' twist tilts the hinges after
    them, so rod ends leave the initial x-z plane by more than 10 cm (measured 0.26 m), with
    the energy within 3e-3 of the peak kinetic energy (measured 2.4e-3) and the joints held."""
    m = skeleton_chain()
    r = simulate_mechanism(m)
    assert out_of_plane(r.poses[:1], 0.3) < 1e-12          # it starts in the plane
    assert out_of_plane(r.poses, 0.3) > 0.1
    assert r.energy_drift < 3e-3 and energy_drift_warning(m, r.energy_drift) is None
    assert r.constraint_error.max() < 1e-8


# -- what the demos draw ------------------------------------------------------------------------

def test_chains_draw_thick_links_joint_markers_pivot_and_ground():
    """Links are capsules a tenth of their length thick; every link carries its joint's
    marker (a pin along the hinge axis, y, or a socket at a ball joint) at its origin; the
    spherical chain's reach cones sit on the parent link at the child's joint, along the
    cone's axis with its half-angle; the scenery is a bracket at the pivot and a ground plane
    below the lowest point any link end reaches."""
    for m, kind in ((hinge_chain(duration=0.1), "pin"), (spherical_chain(duration=0.1), "socket")):
        length = m.info["length"]
        for d in m.display:
            assert d.mesh == "capsule" and d.size[0] >= 0.1 * length and d.size[1] == length
            marker = d.parts[0]
            assert marker.mesh == kind and np.allclose(marker.offset[:3, 3], 0.0)
            if kind == "pin":
                assert marker.axis == 1 and marker.size[1] > 2 * d.size[0]
        pivot, ground = m.scenery
        assert pivot.mesh == "box" and np.allclose(pivot.offset[:2, 3], 0.0)
        top = ground.offset[2, 3] + 0.5 * ground.size[2]
        assert ground.mesh == "plane" and top < -len(m.display) * length
    m = spherical_chain(duration=0.1)
    for body, axis, half in m.info["reach_cones"]:
        (cone,) = [p for p in m.display[body - 1].parts if p.mesh == "cone"]
        assert cone.size[0] == half and cone.colour[3] < 1.0
        np.testing.assert_allclose(cone.offset[:3, 3], (m.info["length"], 0.0, 0.0))
        np.testing.assert_allclose(cone.offset[:3, :3] @ [1.0, 0.0, 0.0], axis, atol=1e-15)
    m = skeleton_chain(duration=0.1)
    kinds = [d.parts[0].mesh for d in m.display]
    assert kinds == ["socket" if i in m.info["spherical"] else "pin" for i in range(8)]


def test_beads_wires_sit_apart_on_a_hub_with_the_spin_axis():
    """One wire per bead, each in its bead's colour, in its own vertical plane through the
    axis and clear of the axis (no tangle); a hub with a spoke per wire; the fixed spin axis
    and an arrow as scenery."""
    m = beads_on_a_wire(duration=0.1)
    hub = m.display[0]
    wires = [p for p in hub.parts if p.mesh == "wire"]
    assert hub.mesh == "pin" and len(wires) == 3
    assert len([p for p in hub.parts if p.name.startswith("spoke")]) == 3
    for i, w in enumerate(wires):
        (line,) = w.polylines
        assert w.colour == m.display[1 + i].colour
        az = 2 * np.pi * i / 3
        normal = np.array([-np.sin(az), np.cos(az), 0.0])
        assert np.abs(line @ normal).max() < 1e-12            # in its plane through the axis
        assert np.hypot(line[:, 0], line[:, 1]).min() > 0.05  # clear of the axis
    assert [d.name for d in m.scenery] == ["spin_axis", "base", "spin_arrow"]


def test_globe_planes_are_aircraft_and_knee_bones_are_the_gait2392_meshes():
    m = spinning_globe(duration=0.1)
    assert all(d.mesh == "airplane" for d in m.display[1:])
    m = knee_pendulum(duration=0.1)
    femur, tibia, foot = m.display[1:]
    assert femur.mesh == tibia.mesh == foot.mesh == "mesh"
    assert femur.geometry[0].shape == (456, 3) and tibia.geometry[0].shape == (145, 3)
    assert [p.name for p in tibia.parts] == ["fibula"]
    # the tibia mesh hangs below its frame's origin (the knee) by the tibia's length
    assert -0.43 < tibia.geometry[0][:, 1].min() < -0.40 and tibia.geometry[0][:, 1].max() < 0.0


def test_scapulothoracic_springs_are_helices_between_their_attachments():
    m = scapulothoracic_rig(duration=0.3)
    r = simulate_mechanism(m)
    assert m.display[0].colour[3] < 1.0 and m.display[0].parts[0].name == "ribs"
    assert m.display[2].mesh == "plate"
    for k, spring in enumerate(m.scenery):
        assert spring.mesh == "helix"
        T, length = spring.spring_frames(r.poses)
        (b0, p0), (b1, p1) = spring.ends
        a = np.einsum("fij,j->fi", r.poses[:, b0], [*p0, 1.0])[:, :3]
        b = np.einsum("fij,j->fi", r.poses[:, b1], [*p1, 1.0])[:, :3]
        np.testing.assert_allclose(T[:, :3, 3], a, atol=1e-15)
        np.testing.assert_allclose(length, np.linalg.norm(b - a, axis=1), rtol=1e-14)
        assert np.ptp(length) > 0.01                          # it stretches
    with pytest.raises(InvalidInputError, match="helix"):
        BodyDisplay("s", "helix")
    with pytest.raises(InvalidInputError, match="plate"):
        BodyDisplay("s", "plate")
    with pytest.raises(InvalidInputError, match="parts"):
        BodyDisplay("s", "box", parts=(m.scenery[0],))


# -- globe ------------------------------------------------------------------------------------

def test_globe_planes_stay_on_the_sphere_and_their_coasts():
    m = spinning_globe(coasts=("africa", "australia"), duration=0.4, substeps=8)
    r = simulate_mechanism(m)
    R = m.info["radius"]
    assert r.constraint_error.max() <= 1e-9                   # on the sphere
    T_globe_inv = np.linalg.inv(r.poses[:, 0])
    for i, name in enumerate(m.info["coasts"]):
        d = np.einsum("fij,fj->fi", T_globe_inv[:, :3, :3], r.poses[:, 1 + i, :3, 2])
        # the spline smooths the 1:110m coast: within 3% of the radius (15 mm on 0.5 m)
        assert coast_distance(d, name).max() * R < 0.03 * R
    assert np.abs(r.q[-1, 1:] - r.q[0, 1:]).min() > 0.05     # the planes slide
    dev = np.abs(r.energy - r.energy[0] - r.drive_work).max()
    assert dev <= 0.01 * kinetic_scale(r)


def test_coast_frames_have_two_axes_in_the_tangent_plane_one_along_the_coast():
    F = coast_frames("africa")
    z = F[:, :3, 2]
    assert np.allclose(np.linalg.norm(z, axis=1), 1.0)
    assert np.allclose(F[:, :3, 3], 0.0)                      # rotations about the centre
    step = np.roll(z, -1, axis=0) - np.roll(z, 1, axis=0)
    step /= np.linalg.norm(step, axis=1, keepdims=True)
    assert np.sum(step * F[:, :3, 0], axis=1).min() > 0.99


def test_coast_distance_of_points_on_and_off_the_coast():
    F = coast_frames("australia")
    on = coast_distance(F[:, :3, 2], "australia")
    assert on.max() < 0.03
    assert np.all(coast_distance(np.array([[0.0, 0.0, 1.0]]), "australia") > 1.0)


# -- knee, scapula, deforming surface ---------------------------------------------------------

def test_knee_pendulum_follows_the_opensim_knee_path_and_conserves_energy():
    m = knee_pendulum(duration=0.8)
    r = simulate_mechanism(m)
    assert r.constraint_error.max() <= 1e-4                   # 0.1 mm
    lo, hi = m.info["knee_range"]
    assert lo <= r.q[:, 1].min() and r.q[:, 1].max() <= hi
    assert np.ptp(r.q[:, 1]) > 0.3                            # it swings
    assert np.all(r.drive_work == 0.0)                        # the held hip does no work
    assert np.abs(r.energy - r.energy[0]).max() <= ENERGY_TOL["knee"] * kinetic_scale(r)
    assert energy_drift_warning(m, r.energy_drift) is None


def test_scapula_stays_on_the_opensim_surface_and_springs_dissipate():
    m = scapulothoracic_rig(duration=0.8)
    r = simulate_mechanism(m)
    assert r.constraint_error.max() < 1e-5
    assert np.diff(r.energy).max() <= 1e-9 * np.abs(r.energy).max()
    assert r.energy[-1] < r.energy[0] - 1e-3


def test_scapula_plate_touches_the_drawn_thorax_ellipsoid():
    """The displayed plate's contact point (the centre of its inner face, OpenSim's scapula
    joint frame) stays on the drawn ellipsoid within 0.05 mm while the scapula swings
    (measured 2e-3 mm: the surface fit); the old offset missed it by 48 mm."""
    m = scapulothoracic_rig(duration=1.5)
    r = simulate_mechanism(m)
    assert np.ptp(r.q, axis=0).min() > 0.2                   # it swings over the thorax
    d = plate_contact_distance(r.poses, m.display)
    assert d.shape == (m.n_frames,) and d.max() < 5e-5, d.max()


def test_deforming_sheet_is_described_by_the_core_and_carries_the_ball():
    """The sheet is world scenery whose vertices follow time: at every output frame the
    ball's centre is one ball radius from the drawn sheet (fit and grid error: 2.5 mm)."""
    m = deforming_surface(duration=0.5, sheet_grid=161)
    (sheet,) = m.scenery
    assert sheet.mesh == "surface"
    verts, quads = sheet.surface_mesh(0.0)
    assert verts.shape == (161 * 161, 3) and quads.shape == (160 * 160, 4)
    # the quads join grid neighbours: each is a small square in x, y
    edges = np.linalg.norm(np.diff(verts[quads][:, [0, 1, 2, 3, 0], :2], axis=1), axis=2)
    assert np.allclose(edges, 1.2 / 160)
    period = 2.0
    moved = np.abs(sheet.surface_mesh(period / 4)[0] - verts)[:, 2].max()
    assert abs(moved - 0.08) < 1e-9                           # the ripple's amplitude
    r = simulate_mechanism(m)
    radius = m.display[0].size[0]
    for t, pose in zip(r.times, r.poses[:, 0]):
        v = sheet.surface_mesh(t)[0]
        gap = np.linalg.norm(v - pose[:3, 3], axis=1).min() - radius
        assert abs(gap) < 2.5e-3, (t, gap)


def test_surface_displays_need_a_vertex_function():
    with pytest.raises(InvalidInputError, match="surface"):
        BodyDisplay("s", "surface")
    with pytest.raises(InvalidInputError, match="surface"):
        BodyDisplay("s", "box", vertices=lambda t: np.zeros((2, 2, 3)))
    with pytest.raises(InvalidInputError, match="grid"):
        BodyDisplay("s", "surface", vertices=lambda t: np.zeros((4, 3))).surface_mesh(0.0)
    with pytest.raises(InvalidInputError, match="not a deforming"):
        BodyDisplay("s", "box").surface_mesh(0.0)


def test_deforming_surface_energy_changes_by_the_drive_work():
    m = deforming_surface(duration=0.5)
    r = simulate_mechanism(m)
    assert np.allclose(r.q[:, 2], r.times)
    assert np.abs(r.drive_work).max() > 1e-3
    dev = np.abs(r.energy - r.energy[0] - r.drive_work).max()
    assert dev <= ENERGY_TOL["deforming"] * kinetic_scale(r)
    assert r.constraint_error.max() < 2e-3                    # the fitted sheet, 1 mm class


# -- the simulate_mechanism() contract -------------------------------------------------------

def test_progress_reports_fractions_and_cancels_without_partial_output():
    m = hinge_chain(n_links=2, duration=0.2, substeps=2)
    seen = []
    r = simulate_mechanism(m, progress=lambda f: seen.append(f) is None)
    assert r.status == "completed" and seen[-1] == 1.0 and np.all(np.diff(seen) > 0)
    r = simulate_mechanism(m, progress=lambda f: f < 0.5)
    assert r.status == "cancelled" and r.q.shape[0] == 0 and r.poses.shape[0] == 0


def test_invalid_descriptions_raise_with_advice():
    m = hinge_chain(n_links=2)
    with pytest.raises(InvalidInputError, match="integrator"):
        Mechanism("x", "x", m.model, m.q0, m.v0, integrator="leapfrog", display=m.display)
    with pytest.raises(InvalidInputError, match="display"):
        Mechanism("x", "x", m.model, m.q0, m.v0, display=m.display[:1])
    with pytest.raises(InvalidInputError, match="Mechanism"):
        simulate_mechanism("hinge_chain")
    with pytest.raises(InvalidInputError, match="skeleton_update"):
        Mechanism("x", "x", m.model, m.q0, m.v0, display=m.display, skeleton_update="rk4")
    with pytest.raises(InvalidInputError, match="scenery"):
        Mechanism("x", "x", m.model, m.q0, m.v0, display=m.display, scenery=("sheet",))
    bad = Mechanism("x", "x", m.model, m.q0, m.v0, display=m.display, duration=0.1,
                    drive=Drive((5,), lambda t: ([0.0], [0.0], [0.0])))
    with pytest.raises(InvalidInputError, match="drive dofs"):
        simulate_mechanism(bad)


# -- every demo, and the hinge chain against MuJoCo -------------------------------------------

@pytest.mark.parametrize("name", sorted(DEMOS))
def test_every_demo_builds_and_runs_a_few_frames(name):
    m = DEMOS[name](duration=0.05)
    assert len(m.display) == m.nbodies and m.ndof >= 1 and m.dt > 0
    r = simulate_mechanism(m)
    assert r.status == "completed" and r.poses.shape == (m.n_frames, m.nbodies, 4, 4)
    assert np.all(np.isfinite(r.poses)) and np.all(np.isfinite(r.energy))
    assert np.allclose(r.poses[:, :, 3], [0.0, 0.0, 0.0, 1.0])
    R = r.poses[:, :, :3, :3]
    assert np.allclose(R @ np.swapaxes(R, -1, -2), np.eye(3), atol=1e-9)


@pytest.mark.parametrize("name", sorted(DEMOS))
def test_every_demo_builder_takes_fps_substeps_and_duration_as_keywords(name):
    m = DEMOS[name](fps=24.0, substeps=3, duration=0.125)
    assert (m.fps, m.substeps, m.duration, m.n_frames) == (24.0, 3, 0.125, 4)
    assert m.dt == pytest.approx(1.0 / 72.0)
    with pytest.raises(TypeError):
        DEMOS[name](24.0)                                     # keywords only


def test_hinge_chain_matches_mujoco_on_the_same_chain():
    mujoco = pytest.importorskip("mujoco")
    from scripts.benchmarks.mechanisms import mujoco_hinge_chain
    m = hinge_chain(n_links=4, duration=0.3)
    r = simulate_mechanism(m)
    mj = mujoco_hinge_chain(m)
    data = mujoco.MjData(mj)
    per_frame = m.substeps
    for k in range(1, m.n_frames):
        for _ in range(per_frame):
            mujoco.mj_step(mj, data)
        assert np.allclose(data.qpos, r.q[k], atol=1e-9)


def test_builders_reject_bad_settings_with_advice():
    with pytest.raises(InvalidInputError, match="n_links"):
        hinge_chain(n_links=0)
    with pytest.raises(InvalidInputError, match="cone_half_angle"):
        spherical_chain(cone_half_angle=4.0)
    with pytest.raises(InvalidInputError, match="closed ring"):
        spinning_globe(coasts=("eurasia",))
    with pytest.raises(InvalidInputError, match="OpenSim range"):
        knee_pendulum(knee_start=0.5)
    with pytest.raises(InvalidInputError, match="fitted range"):
        scapulothoracic_rig(start_offset=(2.0, 0.0))
    with pytest.raises(InvalidInputError, match="n_beads"):
        beads_on_a_wire(n_beads=0)
    with pytest.raises(InvalidInputError, match="spherical joint"):
        skeleton_chain(n_links=3, spherical=(5,))


@pytest.mark.parametrize("integrator,bound", [("euler", 0.05), ("semi_implicit", 0.02),
                                              ("rk4", 1e-8)])
def test_drive_work_accounting_converges_as_the_step_shrinks(integrator, bound):
    """E - E0 - W_drive -> 0 as the step shrinks 4x (the work uses the method's own
    quadrature weights over its dynamics evaluations): by 4x for the first-order methods;
    RK4 gains at least as much (its fourth order is capped where q crosses a knot of the
    cubic spline, whose dS/dq is only C0 there)."""
    errs = []
    for sub in (4, 16):
        r = simulate_mechanism(deforming_surface(duration=0.2, integrator=integrator,
                                                 substeps=sub))
        errs.append(np.abs(r.energy - r.energy[0] - r.drive_work).max() / r.energy_scale)
    assert errs[0] < bound
    assert errs[1] < errs[0] / 3.0


@pytest.mark.parametrize("name", ["hinge_chain", "knee_pendulum", "skeleton_chain"])
def test_mechanism_run_frames_equal_the_bake(name):
    from core.mechanisms import MechanismRun

    baked = simulate_mechanism(DEMOS[name](duration=0.25))
    run = MechanismRun(DEMOS[name](duration=0.25))
    assert run.ready == 1
    assert run.advance_to(3) == 4                   # computes only as far as asked
    assert run.advance_to(10 ** 6) == run.n_frames == len(baked.times)   # clipped to the last
    np.testing.assert_array_equal(run.poses, baked.poses)
    if run.q.shape[1]:
        np.testing.assert_array_equal(run.q, baked.q)
