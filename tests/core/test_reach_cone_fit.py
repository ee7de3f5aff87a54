"""Reach-cone fitting (core.fitting.reach_cone) against the core's own limit functions."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import expcoords
from core.errors import InvalidInputError
from core.fitting.reach_cone import cone_boundary, cone_coordinates, fit_reach_cone, neutral_rotation
from core.lie import so3

P = np.array([0.0, 1.0, 0.0])
U = np.array([1.0, 0.0, 0.0])
W = np.cross(P, U)


def rotations(N, swings, psis, twists):
    """R = N exp(s (sin psi u - cos psi w)... ) exp(tau p): p swings by s towards cos psi u + sin psi w."""
    out = []
    for s, psi, tau in zip(swings, psis, twists):
        tilt = math.cos(psi) * U + math.sin(psi) * W
        axis = np.cross(P, tilt)  # rotating p about p x tilt moves it towards tilt
        out.append(N @ so3.exp(s * axis) @ so3.exp(tau * P))
    return np.array(out)


def unit(v):
    return np.asarray(v, float) / np.linalg.norm(v)


@pytest.mark.parametrize("c", [P, unit([0.3, 0.9, -0.2]), unit([1.0, 0.0, 0.0]), -P])
def test_neutral_rotation_takes_direction_to_axis(c):
    N = neutral_rotation(P, c)
    np.testing.assert_allclose(N @ N.T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(N @ P, c, atol=1e-12)


def test_cone_coordinates_round_trip():
    rng = np.random.default_rng(3)
    N = neutral_rotation(P, unit([0.2, 1.0, 0.4]))
    R = so3.exp(rng.uniform(-1, 1, (6, 3)))
    np.testing.assert_allclose(N @ so3.exp(cone_coordinates(R, N)), R, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.05, 1.4), st.floats(-0.8, 0.8), st.floats(-0.8, 0.8), st.integers(0, 10_000))
def test_circular_fit_recovers_cone(phi, cx, cz, seed):
    rng = np.random.default_rng(seed)
    c = unit([cx, 1.0, cz])
    N = neutral_rotation(P, c)
    boundary = np.array([0.0, 2.1, 4.2])  # three spread points on the boundary pin the cap
    psis = np.concatenate([boundary, rng.uniform(0, 2 * np.pi, 7)])
    swings = np.concatenate([np.full(3, phi), rng.uniform(0, phi, 7)])
    R = rotations(N, swings, psis, rng.uniform(-0.5, 0.5, 10))
    fit = fit_reach_cone(R)
    np.testing.assert_allclose(fit.axis, c, atol=1e-6)
    assert fit.half_angle == pytest.approx(phi, abs=1e-6)
    g = expcoords.reach_cone_value(cone_coordinates(R, fit.neutral), P, fit.half_angle)
    assert g.min() > -1e-9 and g.min() < 1e-6  # all inside, the boundary ones on it


def test_circular_fit_is_no_wider_than_any_other_centre():
    rng = np.random.default_rng(7)
    R = so3.exp(rng.normal(scale=0.5, size=(25, 3)))
    fit = fit_reach_cone(R)
    d = R @ P
    centres = rng.normal(size=(4000, 3))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    widest = np.arccos(np.clip((d @ centres.T).min(axis=0), -1, 1))
    assert fit.half_angle <= widest.min() + 1e-9
    assert np.arccos(np.clip(d @ fit.axis, -1, 1)).max() == pytest.approx(fit.half_angle, abs=1e-9)


@pytest.mark.parametrize("phi1, phi2", [(0.9, 0.3), (0.4, 0.4), (0.2, 1.2)])
def test_elliptic_fit_recovers_half_angles(phi1, phi2):
    # points on the ellipse sin^2(s/2) (cos^2 psi / A + sin^2 psi / B) = 1, symmetric about both axes
    A, B = math.sin(phi1 / 2) ** 2, math.sin(phi2 / 2) ** 2
    psis = np.linspace(0, 2 * np.pi, 16, endpoint=False)
    s = 2 * np.arcsin(np.sqrt(1.0 / (np.cos(psis) ** 2 / A + np.sin(psis) ** 2 / B)))
    R = rotations(np.eye(3), s, psis, np.zeros(16))
    fit = fit_reach_cone(R)
    np.testing.assert_allclose(fit.axis, P, atol=1e-9)
    assert fit.half_angle_1 == pytest.approx(phi1, abs=1e-6)
    assert fit.half_angle_2 == pytest.approx(phi2, abs=1e-6)
    g = expcoords.elliptic_cone_value(cone_coordinates(R, fit.neutral), P, U, fit.half_angle_1,
                                      fit.half_angle_2)
    assert g.min() == pytest.approx(0.0, abs=1e-6)


def test_twist_limit_and_margin():
    twists = np.array([0.1, -0.7, 0.3, 0.5])
    R = rotations(np.eye(3), [0.3] * 4, np.arange(4) * np.pi / 2, twists)  # cap centred on p
    bare, padded = fit_reach_cone(R), fit_reach_cone(R, margin=0.05)
    assert bare.twist_limit == pytest.approx(0.7, abs=1e-9)
    for name in ("half_angle", "half_angle_1", "half_angle_2", "twist_limit"):
        assert getattr(padded, name) == pytest.approx(getattr(bare, name) + 0.05, abs=1e-12)
    assert bare.n_samples == 4


def test_single_rotation_and_identity():
    fit = fit_reach_cone(np.eye(3)[None])
    np.testing.assert_allclose(fit.axis, P, atol=1e-12)
    assert fit.half_angle == pytest.approx(0.0, abs=1e-9) and fit.twist_limit == 0.0


def test_bad_input_is_rejected_with_advice():
    R = so3.exp(np.array([[0, 0, 0.0], [0, 0, np.pi], [0.5, 0, 0]]))  # p and -p: no open hemisphere
    with pytest.raises(InvalidInputError, match="hemisphere"):
        fit_reach_cone(R)
    with pytest.raises(InvalidInputError, match="N, 3, 3"):
        fit_reach_cone(np.eye(3))
    with pytest.raises(InvalidInputError, match="margin"):
        fit_reach_cone(np.eye(3)[None], margin=-0.1)
    with pytest.raises(InvalidInputError):
        fit_reach_cone(2 * np.eye(3)[None])
    with pytest.raises(InvalidInputError, match="parallel"):
        fit_reach_cone(np.eye(3)[None], ref_axis=P)


@pytest.mark.parametrize("phi1, phi2", [(0.6, None), (0.9, 0.3), (2.5, 1.0)])
def test_cone_boundary_lies_on_the_limit_functions_zero_set(phi1, phi2):
    N = neutral_rotation(P, unit([0.2, 1.0, -0.3]))
    d = cone_boundary(N, phi1, phi2, n=24)
    np.testing.assert_allclose(np.linalg.norm(d, axis=1), 1.0, atol=1e-12)
    # rotations carrying p to each boundary direction by the swing alone (no twist)
    swing = so3.exp(np.cross(N @ P, d) / np.linalg.norm(np.cross(N @ P, d), axis=1, keepdims=True)
                    * np.arccos(np.clip(d @ (N @ P), -1, 1))[:, None]) @ N
    r = cone_coordinates(swing, N)
    if phi2 is None:
        g = expcoords.reach_cone_value(r, P, phi1)
    else:
        g = expcoords.elliptic_cone_value(r, P, U, phi1, phi2)
    np.testing.assert_allclose(g, 0.0, atol=1e-9)
    with pytest.raises(InvalidInputError, match="n must"):
        cone_boundary(N, phi1, n=2)
