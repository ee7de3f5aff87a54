"""Per-call cost of the exponential-coordinate maps (seed 003) and the Spherical/Free joints.

:func:`bench_expcoords` returns rows ``(name, median_us)``: the median over timing runs of
one call, in microseconds (batched rows give the cost per rotation vector). Timing uses
:func:`scripts.benchmarks.common.median_us`; :func:`bench_expcoords_tables` wraps the rows as a section for
``scripts/bench.py``.
"""

import numpy as np

from core import expcoords as ec
from core.bone_limits import hold_rotation
from core.bones import BoneCone
from core.joints.spherical import Free, Spherical
from core.lie import so3
from core.limit_projection import project_to_limits

from .common import median_us, table


def bench_expcoords(quick=False):
    """Rows ``(name, median_us)`` for single calls and batched calls (per r) at random r."""
    rng = np.random.default_rng(0)
    r = np.array([0.4, -1.1, 0.7])
    rd = np.array([0.3, 0.2, -0.5])
    rdd = np.array([1.0, -0.4, 0.2])
    n = 1_000
    rs = rng.normal(size=(n, 3))
    rds = rng.normal(size=(n, 3))
    sph, free = Spherical(), Free()
    q6 = np.concatenate([r, [0.1, 0.2, 0.3]])
    axis = np.array([0.0, 0.0, 1.0])
    cone = BoneCone(shape="elliptical", half_angle_x=0.6, half_angle_z=0.3, twist_limit=0.4)
    R_bone = so3.exp(r)
    single = [
        ("J_b(r)", lambda: ec.J_b(r)),
        ("G_b(r)", lambda: ec.G_b(r)),
        ("dJ_b_dr(r)", lambda: ec.dJ_b_dr(r)),
        ("body_velocity(r, r_dot)", lambda: ec.body_velocity(r, rd)),
        ("body_acceleration(r, r_dot, r_ddot)", lambda: ec.body_acceleration(r, rd, rdd)),
        ("reparametrize(r, r_dot) past pi", lambda: ec.reparametrize(4.0 * r, rd)),
        ("reach_cone_gradient(r)", lambda: ec.reach_cone_gradient(r, axis, 0.8)),
        ("Spherical.evaluate (G, S, H)", lambda: sph.evaluate(r)),
        ("Spherical.transform", lambda: sph.transform(r)),
        ("Free.evaluate (G, S, H)", lambda: free.evaluate(q6)),
        ("so3.exp(r) (for comparison)", lambda: so3.exp(r)),
        ("project_to_limits circular, outside", lambda: project_to_limits(r, axis, 0.5)),
        ("project_to_limits elliptical, outside",
         lambda: project_to_limits(r, axis, 0.5, 0.3, (1.0, 0.0, 0.0), -0.4, 0.4)),
        ("project_to_limits elliptical, inside (its margin)",
         lambda: project_to_limits(0.1 * r, axis, 0.5, 0.3, (1.0, 0.0, 0.0), -0.4, 0.4)),
        ("hold_rotation (Hold Limits, per bone and update)",
         lambda: hold_rotation(cone, R_bone)),
    ]
    rows = [(name, median_us(fn, quick)) for name, fn in single]
    batched = [
        (f"J_b batched, per r ({n})", lambda: ec.J_b(rs)),
        (f"G_b batched, per r ({n})", lambda: ec.G_b(rs)),
        (f"body_velocity batched, per r ({n})", lambda: ec.body_velocity(rs, rds)),
        (f"Spherical.transforms, per q ({n})", lambda: sph.transforms(rs)),
    ]
    rows += [(name, median_us(fn, quick) / n) for name, fn in batched]
    return rows


def bench_expcoords_tables(quick=False):
    """The rows as one table, in the section format of ``scripts/bench.py``."""
    rows = bench_expcoords(quick)
    return [table("Exponential coordinates (seed 003) and Spherical/Free joints",
                  ["call", "median us"], [[name, us] for name, us in rows])]
