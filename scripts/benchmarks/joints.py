"""Benchmark section "joints": per-call medians of every joint family, and the joint tables
the spline section shares (:func:`joint_tables`)."""

import numpy as np

from .common import median_us, table


def _joint_cases():
    """(label, joint) for every joint family, with representative parameters."""
    from core.joints import (Cylindrical, Elliptic, Free, Helical, Planar, Prismatic, Revolute,
                             Spherical, SplineCurveJoint, SplineJoint, Universal)
    from core.lie import se3
    rng = np.random.default_rng(1)
    frames = se3.exp(np.cumsum(rng.normal(size=(8, 6)) * 0.3, axis=0))
    knots = np.linspace(-1.5, 1.5, 10)
    surface = SplineJoint([knots, knots], rng.normal(size=(6, 6, 6)) * 0.2)
    return [
        ("Revolute", Revolute((0.0, 0.6, 0.8))),
        ("Prismatic", Prismatic((0.0, 0.6, 0.8))),
        ("Helical", Helical((0.0, 0.6, 0.8), 0.05)),
        ("Cylindrical", Cylindrical((0.0, 0.6, 0.8))),
        ("Universal", Universal((1.0, 0.0, 0.0), (0.0, 1.0, 0.0))),
        ("Planar", Planar()),
        ("Elliptic(2, 1)", Elliptic(2.0, 1.0)),
        ("Spherical", Spherical()),
        ("Free", Free()),
        ("SplineCurveJoint (cubic, 8 frames)", SplineCurveJoint(frames)),
        ("SplineJoint (n = 2, cubic, 6 twists)", surface),
    ]


def joint_tables(title, cases, quick, rng, q_at, notes=(None, None)):
    """Two tables for ``cases`` (``[(label, joint)]``): per-call medians of transform,
    jacobian, hessian and evaluate (and evaluate in CPU time) at ``q_at(lo, hi) -> (nq,)``,
    and batched ``transforms`` throughput at N uniform coordinates from ``rng`` in the
    joint's limits (in [-1, 1] where a coordinate is unlimited)."""
    n_batch = 1_000 if quick else 10_000
    single, batch = [], []
    for label, joint in cases:
        lo = np.where(np.isfinite(joint.lower), joint.lower, -1.0)
        hi = np.where(np.isfinite(joint.upper), joint.upper, 1.0)
        q = q_at(lo, hi)
        qs = rng.uniform(lo, hi, (n_batch, joint.nq))
        times = [median_us(lambda f=f: f(q), quick) for f in
                 (joint.transform, joint.jacobian, joint.hessian, joint.evaluate)]
        single.append([label, joint.nq] + times
                      + [median_us(lambda: joint.evaluate(q), quick, cpu=True)])
        t = median_us(lambda: joint.transforms(qs), quick)
        tc = median_us(lambda: joint.transforms(qs), quick, cpu=True)
        batch.append([label, n_batch, t / 1e3, t / n_batch, n_batch / t * 1e6,
                      n_batch / tc * 1e6])
    return [
        table(f"{title}: one configuration (us per call, median)",
              ["joint", "nq", "transform", "jacobian", "hessian", "evaluate (G,S,H)",
               "evaluate, CPU time"], single, note=notes[0]),
        table(f"{title}: batched transforms(qs) at N = {n_batch:,}",
              ["joint", "N", "ms per batch", "us per q", "q per second",
               "q per CPU second"], batch, note=notes[1]),
    ]


def bench_joints(quick=False):
    """Per-call medians of transform, jacobian, hessian, evaluate for every joint family, and
    batched ``transforms`` throughput. Coordinates are uniform in the joint's limits, or in
    [-1, 1] where a coordinate is unlimited."""
    rng = np.random.default_rng(0)
    return joint_tables("Joints", _joint_cases(), quick, rng, rng.uniform)
