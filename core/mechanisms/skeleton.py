"""A seed-001 skeleton for comparison: a grounded chain of rods joined by hinges and ball
joints, solved in maximal coordinates (:class:`core.maximal.skeleton.Skeleton`, Hakenberg's
constraint forces with post-stabilization), released horizontal under gravity. Each ball
joint turns the links after it about the chain's line, tilting their hinges, so the chain
falls in 3D (its rod ends leave the initial vertical plane by 0.26 m over the demo's 3 s).
The planar chain with hinges only in reduced coordinates is :func:`.chains.hinge_chain`.

Step and energy. Seed 001 conserves kinetic plus potential energy of passive joints only as
h -> 0. Its first-order updates ("momentum", "paper") gain energy in proportion to h: at the
demo's h = 1/600 s the default chain gains 3.2 J in its first second (peak kinetic energy
47.8 J) and diverges 2.3 s in. The demo therefore uses the second-order "heun" update with
post-stabilization, whose drift falls as h^2: over the demo's 3 s the energy stays within
0.11 J (2.4e-3 of the peak kinetic energy of 46.4 J; bounded in
tests/core/test_mechanisms.py and tests/core/test_skeleton.py).
"""

import numpy as np

from ..errors import InvalidInputError
from ..maximal.skeleton import chain
from ..lie import so3
from .base import BodyDisplay, Mechanism, check_timing
from .chains import anchor_scenery, joint_marker, link_radius

__all__ = ["skeleton_chain", "out_of_plane"]

_COLOURS = ((0.85, 0.33, 0.10, 1.0), (0.30, 0.75, 0.93, 1.0))


def skeleton_chain(*, fps=60.0, substeps=10, duration=3.0, n_links=8, spherical=(2, 5),
                   length=0.3, radius=0.02, mass=0.5, twist=0.8, update="heun"):
    """``n_links`` rods along world x, grounded at the origin by joint 0; the joints listed
    in ``spherical`` are ball joints, the others hinges about world y. Each ball joint turns
    the rest of the chain by ``twist`` (rad) about the chain's line (the x axis, so no rod
    moves), which tilts the hinges after it: the chain, released at rest, falls out of its
    initial x-z plane (:func:`out_of_plane`). Each body frame sits at the rod's centre of
    mass (seed 001's state). The constraint error is the largest joint gap (m) after
    post-stabilization. update: the skeleton update of every step ("heun", "momentum" or
    "paper"; see the module docstring).

    Drawn as capsules with a pin (along the tilted hinge axis) or a socket at each joint,
    a bracket at the grounded pivot and a ground plane below the reach.
    """
    substeps = check_timing("skeleton_chain", fps, substeps, duration)
    n = int(n_links)
    if n < 1 or any(not 0 <= j < n for j in spherical):
        raise InvalidInputError(f"skeleton_chain: need n_links >= 1 and spherical joint "
                                f"indices in [0, {n}), got {n_links}, {spherical}")
    skel, state = chain(n, length=length, mass=mass, radius=radius,
                        hinge_axis=(0.0, 1.0, 0.0), spherical=tuple(spherical), grounded=True)
    for j in sorted(spherical):          # body frames turn; hinge axes stay body-fixed
        state.R[j:] = so3.exp(np.array([float(twist), 0.0, 0.0])) @ state.R[j:]
    r = link_radius(length, radius)
    half = (-0.5 * length, 0.0, 0.0)         # the joint at the rod's proximal end
    display = tuple(BodyDisplay(
        f"link{i}", "capsule", (r, length, 0.0), _COLOURS[int(i in spherical)], axis=0,
        parts=(joint_marker(f"link{i}_{kind}", kind, r, at=half),))
        for i, kind in ((i, "socket" if i in spherical else "pin") for i in range(n)))
    return Mechanism("skeleton_chain", f"Seed-001 skeleton: {n} links, "
                     f"{len(spherical)} ball joints", None, None, None, fps, substeps,
                     duration, "semi_implicit", display=display, skeleton=skel,
                     skeleton_state=state, skeleton_update=update, passive=True,
                     scenery=anchor_scenery(n * length, r, spread=0.6,
                                            joint="socket" if 0 in spherical else "pin"),
                     info={"spherical": tuple(spherical), "length": length, "twist": twist})


def out_of_plane(poses, length):
    """Largest distance (m) of a rod end from the initial x-z plane over a motion: ``poses
    (F, nb, 4, 4)`` world poses of rods of ``length`` along their body x axis, centred on
    their frames."""
    ends = np.array([[-0.5 * length, 0.0, 0.0, 1.0], [0.5 * length, 0.0, 0.0, 1.0]])
    return float(np.abs(np.einsum("fbij,ej->fbei", np.asarray(poses, dtype=float), ends)
                        [..., 1]).max())
