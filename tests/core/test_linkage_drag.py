"""core.linkage.LinkageDrag: a closed loop dragged by a point of any body stays closed and
brings the point to a reachable target, stays closed however far the target, and refuses
bad input."""

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.linkage import LinkageDrag
from core.linkage_demos import four_bar, four_bar_position

#: the assembly's convergence tolerance (m / rad), as in test_linkage.py
TOL = 1e-10
#: the coupler point's distance to a reachable target after the drag's solves: each solve
#: closes the loop to TOL, and the point's error is that times the four-bar's condition (bar
#: length ratios, ~4); 100 TOL bounds it with margin
REACH_TOL = 100 * TOL
#: the grabbed point, 0.2 m along the coupler from its centre
POINT = [0.2, 0.0, 0.0]


@pytest.mark.parametrize("body", ["crank", "coupler", "rocker"])
def test_any_body_of_the_loop_drags_it_to_a_reachable_target(body):
    lk, _ = four_bar(theta=0.6)
    drag = LinkageDrag(lk, body, POINT, tol=TOL)
    target = drag.grabbed(four_bar(theta=1.2)[0].poses)    # where the point is at 1.2 rad
    poses = lk.poses
    start = np.linalg.norm(drag.grabbed(poses) - target)
    for _ in range(20):
        res = drag.solve(target, poses)
        assert res.converged and res.error <= TOL, (res.error, res.worst)
        poses = res.poses
    assert start > 0.05
    assert np.linalg.norm(drag.grabbed(poses) - target) < REACH_TOL
    # the crank's centre is halfway to its tip: the closed form's at 1.2 rad
    A, _ = four_bar_position(np.array([1.2]), 0.5, 1.8, 1.2, 2.0)
    assert np.allclose(2 * poses[0, [0, 2], 3], A[0], atol=REACH_TOL)


def test_an_unreachable_target_leaves_the_loop_closed():
    lk, _ = four_bar(theta=0.6)
    drag = LinkageDrag(lk, "coupler", POINT, tol=TOL)
    far = drag.grabbed(lk.poses) + np.array([10.0, 0.0, 10.0])
    poses = lk.poses
    for _ in range(20):
        res = drag.solve(far, poses)
        assert res.error <= TOL, (res.error, res.worst)
        poses = res.poses
    assert np.all(np.isfinite(poses))
    assert not np.allclose(poses, lk.poses)


def test_bad_drags_are_refused():
    lk, _ = four_bar()
    with pytest.raises(InvalidInputError, match="not the world"):
        LinkageDrag(lk, "", POINT)
    with pytest.raises(InvalidInputError, match="no body named"):
        LinkageDrag(lk, "handle", POINT)
    with pytest.raises(InvalidInputError, match="grabbed point"):
        LinkageDrag(lk, "coupler", [0.0, np.nan, 0.0])
    drag = LinkageDrag(lk, "coupler", POINT)
    with pytest.raises(InvalidInputError, match="drag target"):
        drag.solve([np.inf, 0.0, 0.0], lk.poses)
