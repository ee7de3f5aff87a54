"""core.rig.LiveRun: a demo mechanism simulated frame by frame takes a drag (the viewport's
drag tool on the add-on's demo mechanisms): a restart that adds nothing continues the run
(a driven mechanism's drive shifted to the restart's time), a drag pulls the grabbed point
toward its target, and bodies that cannot be dragged are refused."""

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.mechanisms import DEMOS, MechanismRun
from core.rig import LiveRun

#: a restarted run against the uninterrupted one: the same steps, their times summed from
#: the restart instead of from 0 (a few ulps of t per step, times the motion's rates of a
#: few per second, over the run's ~100 steps after the restart); 1e-9 bounds that round-off
#: and stays far below the 1e-2 a drive read at the wrong time would move a driven body
RESTART_TOL = 1e-9


@pytest.mark.parametrize("demo", ["hinge_chain", "globe"])
def test_a_restart_without_a_pull_continues_the_run(demo):
    mech = DEMOS[demo](duration=0.5)
    whole = MechanismRun(mech)
    whole.advance_to(mech.n_frames - 1)
    live = LiveRun(mech)
    live.advance_to(10)
    # a restart at frame 10 whose spring (1e-300 N/m) adds nothing a double can hold
    live.set_drag(mech.model.names[-1], np.zeros(3), np.ones(3), stiffness=1e-300)
    live.advance_to(mech.n_frames - 1)
    assert live.ready == mech.n_frames
    np.testing.assert_allclose(live.poses, whole.poses, rtol=0, atol=RESTART_TOL)


def test_a_drag_pulls_the_last_link_of_a_chain_toward_its_target():
    mech = DEMOS["hinge_chain"](duration=1.0)
    free = MechanismRun(mech)
    free.advance_to(mech.n_frames - 1)
    live = LiveRun(mech)
    body = mech.model.names[-1]
    i = mech.model.names.index(body)
    target = live.poses[0, i, :3, 3] + np.array([0.0, 0.0, 0.3])
    live.set_drag(body, np.zeros(3), target)
    live.advance_to(mech.n_frames - 1)
    pulled = np.linalg.norm(live.poses[-1, i, :3, 3] - target)
    left = np.linalg.norm(free.poses[-1, i, :3, 3] - target)
    assert pulled < 0.2 * left, (pulled, left)


def test_bodies_that_take_no_drag_are_refused():
    chain = LiveRun(DEMOS["hinge_chain"](duration=0.2))
    with pytest.raises(InvalidInputError, match="cannot drag 'nowhere'"):
        chain.set_drag("nowhere", np.zeros(3), np.zeros(3))
    with pytest.raises(InvalidInputError, match="must be finite"):
        chain.set_drag(chain.mechanism.model.names[0], [np.nan, 0, 0], np.zeros(3))
    skeleton = LiveRun(DEMOS["skeleton_chain"](duration=0.2))
    with pytest.raises(InvalidInputError, match="skeleton's bodies take no drag"):
        skeleton.set_drag("anything", np.zeros(3), np.zeros(3))
