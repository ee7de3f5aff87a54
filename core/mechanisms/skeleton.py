"""A seed-001 skeleton for comparison: a grounded chain of rods joined by hinges and ball
joints, solved in maximal coordinates (:class:`core.maximal.skeleton.Skeleton`, Hakenberg's
constraint forces with post-stabilization), released horizontal under gravity. The same
chain with hinges only in reduced coordinates is :func:`.chains.hinge_chain`.

Step and energy. Seed 001 conserves kinetic plus potential energy of passive joints only as
h -> 0. Its first-order updates ("momentum", "paper") gain energy in proportion to h: at the
demo's h = 1/600 s the default chain gains 2.2 J in its first second (peak kinetic energy
47.6 J) and, 3 s in, curls up above its pivot. The demo therefore uses the second-order
"heun" update with post-stabilization, whose drift falls as h^2: over the demo's 3 s the
energy stays within 0.04 J (8.7e-4 of the peak kinetic energy of 46.6 J; bounded in
tests/core/test_mechanisms.py and tests/core/test_skeleton.py).
"""

from ..errors import InvalidInputError
from ..maximal.skeleton import chain
from .base import BodyDisplay, Mechanism, check_timing

__all__ = ["skeleton_chain"]

def skeleton_chain(*, fps=60.0, substeps=10, duration=3.0, n_links=8, spherical=(2, 5),
                   length=0.3, radius=0.02, mass=0.5, update="heun"):
    """``n_links`` rods along world x, grounded at the origin by joint 0; the joints listed
    in ``spherical`` are ball joints, the others hinges about world y. Each body frame sits
    at the rod's centre of mass (seed 001's state). The constraint error is the largest
    joint gap (m) after post-stabilization. update: the skeleton update of every step
    ("heun", "momentum" or "paper"; see the module docstring)."""
    substeps = check_timing("skeleton_chain", fps, substeps, duration)
    n = int(n_links)
    if n < 1 or any(not 0 <= j < n for j in spherical):
        raise InvalidInputError(f"skeleton_chain: need n_links >= 1 and spherical joint "
                                f"indices in [0, {n}), got {n_links}, {spherical}")
    skel, state = chain(n, length=length, mass=mass, radius=radius,
                        hinge_axis=(0.0, 1.0, 0.0), spherical=tuple(spherical), grounded=True)
    colours = ((0.85, 0.33, 0.10, 1.0), (0.30, 0.75, 0.93, 1.0))
    display = tuple(BodyDisplay(f"link{i}", "capsule", (radius, length, 0.0),
                                colours[int(i in spherical)], axis=0) for i in range(n))
    return Mechanism("skeleton_chain", f"Seed-001 skeleton: {n} links, "
                     f"{len(spherical)} ball joints", None, None, None, fps, substeps,
                     duration, "semi_implicit", display=display, skeleton=skel,
                     skeleton_state=state, skeleton_update=update, passive=True,
                     info={"spherical": tuple(spherical), "length": length})
