"""Simulate Muscles as a job (:mod:`.jobs`): an imported OpenSim armature moved by its muscles
(:func:`core.osim_rig.simulate_muscles`) over the scene's frame range, read on the main thread
when the job is made, simulated numpy only (a worker thread, Esc cancels), and the coordinates
keyed on the armature in ``finish``; a cancelled or refused run keys nothing.
"""

from __future__ import annotations

import numpy as np

from . import bridge
from .documents import osim_rig
from .jobs import ToolJob
from .muscles import activation_property
from .osim_scene import KEY_GROUP


def activation_curves(arm, names, frames) -> dict:
    """``{muscle: values (N,)}`` of the muscles whose activation property is keyed or not 0:
    the property's F-curve at ``frames``, or its value."""
    out = {}
    for name in names:
        prop = activation_property(name)
        fc = bridge.find_fcurve(arm, bridge.coordinate_path(prop), 0)
        if fc is not None:
            out[name] = np.array([fc.evaluate(float(f)) for f in frames])
        elif float(arm.get(prop, 0.0) or 0.0) != 0.0:
            out[name] = np.full(len(frames), float(arm[prop]))
    return out


class MuscleSimulationJob(ToolJob):
    """The model stored on the OpenSim armature ``arm`` (as imported, exact joints) simulated
    over the scene's frame range at the scene's rate from the pose at its first frame, at rest,
    with the activations keyed on the armature (:func:`activation_curves`); ``write`` keys
    every coordinate on every frame of the range and puts the scene back on its frame."""

    refused_text = "Simulate Muscles refused, nothing keyed"
    cancelled_text = "Simulate Muscles cancelled: nothing was keyed"

    def __init__(self, scene, arm):
        super().__init__()
        rig = osim_rig(arm.data, fitted=False)
        self.arm_name, self.model, self.names = arm.name, rig.model, rig.coordinate_names
        self.frames = np.arange(scene.frame_start, scene.frame_end + 1)
        self.times = (self.frames - self.frames[0]) / (scene.render.fps / scene.render.fps_base)
        self.controls = activation_curves(arm, self.model.muscles, self.frames)
        current = scene.frame_current
        scene.frame_set(int(self.frames[0]))
        self.q0 = rig.q(bridge.read_named_values(arm, self.names, self.model.default_q()))
        scene.frame_set(current)

    def _run(self):
        from ..core.osim_rig import simulate_muscles

        result = simulate_muscles(self.model, self.q0, self.times,
                                  {n: (self.times, v) for n, v in self.controls.items()},
                                  progress=self.progress)
        return result if result.status == "completed" else None

    def write(self, scene, result):
        arm = scene.objects.get(self.arm_name)
        if arm is None:
            raise ValueError(f"the armature '{self.arm_name}' is gone; run Simulate Muscles "
                             "again")
        for i, coordinate in enumerate(self.names):
            bridge.write_fcurve_keys(arm, bridge.coordinate_path(coordinate), 0, self.frames,
                                     result.q[:, i], group=KEY_GROUP)
        scene.frame_set(scene.frame_current)
        active = ", ".join(self.controls) or "none, passive forces only"
        return {"FINISHED"}, "INFO", (
            f"Simulated {self.times[-1]:.3g} s with {len(self.model.muscles)} muscles (active: "
            f"{active}) in {result.wall_time:.3g} s; coordinates keyed on frames "
            f"{self.frames[0]}..{self.frames[-1]}")
