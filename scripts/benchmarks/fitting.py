"""Benchmark of the fitting module (never a timed test).

:func:`bench_fitting` returns the rows as dicts (median wall time over repeats, plus the
accuracy each fit reaches); :func:`bench_fitting_tables` wraps them as a section for
``scripts/bench.py`` (``"fitting": "fitting:bench_fitting_tables"``). Cases:

* gait2392 knee: 131 samples (1-degree grid over -120..10 deg), 8, 9 and 10 control frames
  (adaptive knots) and 8 with uniform knots;
  target <= 50 ms for 8 frames;
* the same knee with 0.5 mm / 0.5 deg noise and smoothing w = 1e-3 (no target);
* Seth 2019 scapulothoracic 2-DOF grid (17 x 11 = 187 poses), 6 x 6 control grid, both
  methods; target <= 1 s; accuracy also on 27 held-out interior grid points (fit on 160);
* every fit's report also gives its held-out "between samples" error
  (:func:`core.fitting.report.midpoint_errors`), printed as the largest one;
* IK on the Fig. 3 leg (spherical hip, fitted knee, revolute ankle), one random reachable
  target per call.
"""

import time

import numpy as np

from core.fitting.curve import fit_spline_curve
from core.fitting.ik import leg_chain, solve_ik
from core.fitting.metric import pose_errors
from core.fitting.samples import JointSamples
from core.fitting.surface import fit_spline_surface
from core.lie import se3
from core.reference.opensim import KneeGait2392, ScapulothoracicSeth2019

from .common import table


def _median_ms(fn, repeat):
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times)), out


def _row(name, ms, target_ms, report, held=None, note=""):
    return {
        "case": name, "median_ms": ms, "target_ms": target_ms,
        "rms_position_mm": report.rms_position_mm, "rms_rotation_deg": report.rms_rotation_deg,
        "held_out_rms_position_mm": None if held is None else held[0],
        "held_out_rms_rotation_deg": None if held is None else held[1],
        "between_max_position_mm": report.heldout_max_position_mm,
        "between_max_rotation_deg": report.heldout_max_rotation_deg,
        "iterations": report.iterations, "status": report.status, "note": note,
    }


def bench_fitting(quick=False):
    """Rows (list of dicts) with median times (ms) and accuracies; see the module docstring."""
    repeat = 3 if quick else 7
    rows = []
    d = KneeGait2392().samples()
    knee = JointSamples(d["T_femur_tibia"], d["q"])
    for n, knots in ((8, "adaptive"), (9, "adaptive"), (10, "adaptive"), (8, "uniform")):
        ms, res = _median_ms(lambda: fit_spline_curve(knee, n_frames=n, knots=knots), repeat)
        label = "" if knots == "adaptive" else f", {knots} knots"
        rows.append(_row(f"knee gait2392, {knee.size} samples, {n} frames{label}", ms,
                         50.0 if (n, knots) == (8, "adaptive") else None, res.report))
    rng = np.random.default_rng(7)
    N = knee.size
    w = rng.normal(size=(N, 3)) * np.radians(0.5) / np.sqrt(3)
    p = rng.normal(size=(N, 3)) * 0.5e-3 / np.sqrt(3)
    Gn = d["T_femur_tibia"] @ se3.exp(np.concatenate([w, np.zeros((N, 3))], axis=1))
    Gn[:, :3, 3] += p
    noisy = JointSamples(Gn, d["q"])
    plain = fit_spline_curve(noisy, n_frames=10)
    ms, res = _median_ms(lambda: fit_spline_curve(noisy, n_frames=10, smoothing=1e-3),
                         max(1, repeat // 2))
    rows.append(_row("knee + noise 0.5 mm/0.5 deg, 10 frames, smoothing 1e-3", ms, None,
                     res.report, note=f"mean |h| {res.report.mean_hessian_norm:.4g} vs "
                                      f"{plain.report.mean_hessian_norm:.4g} unsmoothed"))
    g = ScapulothoracicSeth2019().grid()
    q = g["q"][..., :2].reshape(-1, 2)
    G = g["T_pjoint_cjoint"].reshape(-1, 4, 4)
    I, J = np.meshgrid(np.arange(17), np.arange(11), indexing="ij")
    hold = (((I + 2 * J) % 5 == 0) & (I > 0) & (I < 16) & (J > 0) & (J < 10)).ravel()
    full = JointSamples(G, q)
    train = JointSamples(G[~hold], q[~hold])
    for method in ("coordinatewise", "se3"):
        ms, res = _median_ms(lambda: fit_spline_surface(full, (6, 6), method=method), repeat)
        part = fit_spline_surface(train, (6, 6), method=method)
        pos, rot = pose_errors(part.joint.transforms(q[hold]), G[hold])
        held = (float(np.sqrt(np.mean(pos ** 2))), float(np.sqrt(np.mean(rot ** 2))))
        rows.append(_row(f"scapulothoracic Seth 2019, 187-point grid, 6x6, {method}", ms, 1000.0,
                         res.report, held,
                         note=f"SE(3) objective {res.report.objective_trace[-1]:.4g}"))
    chain = leg_chain()
    targets = []
    for _ in range(20):
        qt = rng.uniform(chain.lower.clip(-1, 1), chain.upper.clip(-1, 1))
        qt[:3] = rng.normal(size=3) * 0.6
        targets.append(chain.pose(qt))
    results, times = [], []
    for T in targets:
        t0 = time.perf_counter()
        results.append(solve_ik(chain, T))
        times.append(time.perf_counter() - t0)
    ms = 1e3 * float(np.median(times))
    its = [r.iterations for r in results]
    ok = sum(r.status == "converged" for r in results)
    rows.append({"case": "IK leg (hip ball, spline knee, ankle), random reachable target",
                 "median_ms": ms, "target_ms": None, "rms_position_mm": None,
                 "rms_rotation_deg": None, "held_out_rms_position_mm": None,
                 "held_out_rms_rotation_deg": None, "between_max_position_mm": None,
                 "between_max_rotation_deg": None, "iterations": int(np.median(its)),
                 "status": f"{ok}/{len(results)} converged",
                 "note": f"median over 20 targets, max {max(its)} iterations"})
    return rows


COLUMNS = ["case", "median ms", "target ms", "RMS pos mm", "RMS rot deg", "held-out pos mm",
           "held-out rot deg", "between max mm", "between max deg", "iterations", "status",
           "note"]


def bench_fitting_tables(quick=False):
    """The rows of :func:`bench_fitting` as one table for ``scripts/bench.py``."""
    def cell(x):
        return "" if x is None else x
    rows = [[r["case"], r["median_ms"], cell(r["target_ms"]), cell(r["rms_position_mm"]),
             cell(r["rms_rotation_deg"]), cell(r["held_out_rms_position_mm"]),
             cell(r["held_out_rms_rotation_deg"]), cell(r["between_max_position_mm"]),
             cell(r["between_max_rotation_deg"]), r["iterations"], r["status"], r["note"]]
            for r in bench_fitting(quick)]
    return [table("Fitting (median wall time per fit, ms)", COLUMNS, rows,
                  note="Held-out: fit on 160 grid points, evaluated on 27 interior ones. "
                       "Between: the report's held-out check, the largest error of the joint "
                       "at the midpoints of neighbouring samples against the samples' cubic "
                       "interpolation there (core.fitting.report.midpoint_errors).")]
