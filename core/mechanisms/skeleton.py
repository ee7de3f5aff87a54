"""A seed-001 skeleton for comparison: a grounded chain of rods joined by hinges and ball
joints, solved in maximal coordinates (:class:`core.maximal.skeleton.Skeleton`, Hakenberg's
constraint forces with post-stabilization), released horizontal under gravity. The same
chain with hinges only in reduced coordinates is :func:`.chains.hinge_chain`.
"""

from ..errors import InvalidInputError
from ..maximal.skeleton import chain
from .base import BodyDisplay, Mechanism

__all__ = ["skeleton_chain"]

def skeleton_chain(n_links=8, spherical=(2, 5), length=0.3, radius=0.02, mass=0.5,
                   fps=60.0, substeps=10, duration=3.0):
    """``n_links`` rods along world x, grounded at the origin by joint 0; the joints listed
    in ``spherical`` are ball joints, the others hinges about world y. Each body frame sits
    at the rod's centre of mass (seed 001's state). The constraint error is the largest
    joint gap (m) after post-stabilization."""
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
                     skeleton_state=state, passive=True,
                     info={"spherical": tuple(spherical), "length": length})
