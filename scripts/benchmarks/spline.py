"""Spline-joint benchmarks (a section for scripts/bench.py; never a timed test).

    python scripts/bench.py --only spline        # the same, as a section of bench.py

Targets: cubic SplineCurveJoint transform + jacobian + hessian at one q within 40 us
(``evaluate`` gives all three), batched ``transforms`` at least 500,000 q per second at
N = 10,000.
"""

import numpy as np

from .joints import joint_tables


def _curve(m=12, order=4):
    from core.joints.spline_curve import SplineCurveJoint, natural_knots
    from core.lie import se3
    rng = np.random.default_rng(0)
    z0 = np.array([0.4, -0.2, 0.3, 0.1, 0.05, 0.3])
    F = [np.eye(4)]
    for _ in range(m):
        F.append(F[-1] @ se3.exp(z0 + 0.2 * rng.normal(size=6)))
    F = np.array(F)
    return SplineCurveJoint(F, natural_knots(F, 0.5, order), order)


def _surface(n):
    from core import bspline
    from core.joints.spline_surface import SplineJoint
    rng = np.random.default_rng(n)
    knots = [bspline.uniform_knots(8, 4, start=-1.0, spacing=0.4) for _ in range(n)]
    C = 0.3 * rng.normal(size=(6,) + (8,) * n)
    return SplineJoint(knots, C, 4)


def bench_spline(quick=False):
    """Tables: one-q medians (transform, jacobian, hessian, evaluate) and batched
    ``transforms`` throughput for the spline curve joint (orders 4 and 5) and the n-DOF spline
    joint (n = 1, 2, 3, six basis twists)."""
    cases = [("SplineCurveJoint cubic (13 frames)", _curve()),
             ("SplineCurveJoint order 5 (13 frames)", _curve(order=5))]
    cases += [(f"SplineJoint n={n}, 6 twists, 8^{n} coefs", _surface(n)) for n in (1, 2, 3)]
    return joint_tables(
        "Spline joints", cases, quick, np.random.default_rng(1),
        lambda lo, hi: lo + 0.37 * (hi - lo),
        notes=("Target: cubic curve joint G, S and H at one q within 40 us (evaluate).",
               "Target: cubic curve joint >= 500,000 q per second."))
