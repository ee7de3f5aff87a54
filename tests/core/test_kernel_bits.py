"""A bake gives the same bits whether its compiled kernels were compiled in the process or
loaded from a cache that another call history filled (core.compiled.kernels.options,
*Private copies*): a rig's tail of ball joints in reach cones with twist limits and springs,
on a keyed hip, baked by one process on an empty cache (compiling its kernels, then aba's)
and by another on that cache after aba (loading everything, compiling nothing)."""

import json
import os
import subprocess
import sys

import pytest

from core import backend

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_BAKE = """
import json, math, sys
sys.path.insert(0, ROOT)
from core import backend
cpu = backend.portable_cpu()
if cpu is not None:
    backend.set_cpu(cpu)
backend.set_cache_dir(CACHE)
compiled = []
backend.watch_compiles(lambda kernel, seconds: seconds is None or compiled.append(kernel))
import numpy as np
from core import dynamics
from core.lie import se3, so3
from core.rig import RigBody, RigJoint, build_rig, simulate_rig

def pose(axis, angle, p=(0.0, 0.0, 0.0)):
    return se3.from_rp(so3.exp(angle * np.asarray(axis, dtype=float)), np.asarray(p, dtype=float))

times = np.arange(25) / 24.0
hips = np.stack([pose((1, 0, 0), math.pi / 2, (0, 0, 1)) @ pose((0, 1, 0), 0.9 * math.sin(6.0 * t))
                 for t in times])
length, radius = 0.03, 0.003
mass = 1000.0 * math.pi * radius ** 2 * length
inertia = np.diag([mass * length ** 2 / 12, mass * radius ** 2 / 2, mass * length ** 2 / 12])
bodies = [RigBody("hips", -1, np.eye(4), RigJoint("kinematic"), motion_times=times, motion=hips)]
for k in range(3):
    rest = pose((1, 0, 0), math.pi / 2) if k == 0 else pose((1, 0, 0), 0.0, (0, length, 0))
    joint = RigJoint("ball", cone="circular", half_angle=math.radians(30.0),
                     twist=math.radians(10.0), frequency=2.0)
    bodies.append(RigBody(f"tail.{k}", k, rest, joint, mass=mass, com=(0, length / 2, 0),
                          inertia=inertia, pose=rest))
rig = build_rig(bodies, fps=24.0, substeps=16, duration=1.0)

def aba():
    model = rig.mechanism.model
    dynamics.aba(model, model.create_data(), model.neutral(), np.full(model.nv, 0.1),
                 np.zeros(model.nv))

if FIRST:
    q = simulate_rig(rig).q
    aba()
else:
    aba()
    q = simulate_rig(rig).q
print(json.dumps({"compiled": compiled,
                  "q": [[x.hex() for x in row] for row in q]}))
"""


def _bake(cache, first):
    environ = {k: v for k, v in os.environ.items()
               if k not in ("NUMBA_CACHE_DIR", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES",
                            backend.ENV_VAR)}
    code = (_BAKE.replace("ROOT", repr(ROOT)).replace("CACHE", repr(str(cache)))
            .replace("FIRST", repr(first)))
    out = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_bake_has_the_same_bits_compiled_or_loaded_after_other_calls(tmp_path):
    compiling = _bake(tmp_path / "cache", first=True)
    loading = _bake(tmp_path / "cache", first=False)
    assert "advance" in compiling["compiled"], compiling["compiled"]
    assert loading["compiled"] == []                 # every kernel came from the cache
    frames = [i for i, (a, b) in enumerate(zip(compiling["q"], loading["q"])) if a != b]
    assert not frames, f"frames {frames} differ, from {compiling['q'][frames[0]]} to " \
                       f"{loading['q'][frames[0]]}"
    assert len(compiling["q"]) == 25
