"""A spline joint fitted to an exact OpenSim joint of an imported model.

:func:`spline_joint_from_osim` samples an :class:`~core.io.osim.OsimJoint`'s motion ``X_FM``
over one coordinate (a spline curve joint) or two (a spline surface joint) with every other
coordinate of that joint held at the model's default value, fits the spline joint with
:func:`core.fitting.document.fit_joint_document` and measures it against the exact joint:
within the sampled range (on a grid twice as fine as the samples, so half the points lie
between them) and beyond it. OpenSim's SimmSplines continue linearly outside their knots while
a spline joint continues along its end screw (:mod:`core.joints.spline_curve`), so the two
drift apart past the range; :attr:`OsimSplineFit.beyond` says how far.

The fitted joint replaces ``X_FM``: the joint's offsets stay, and the errors are those of the
child body in the parent body (``P X_FM C^-1``), the pose OpenSim reports.

Sampled ranges. A coordinate's range is sampled as given unless it is wider than
``max_span`` or unbounded: then the span of that width centred on the coordinate's default
value (moved inside the range where the range ends nearer). The default spans
(:data:`MAX_SPAN`) are, for a rotational coordinate, a half turn for a curve (its control
frames stay less than a half turn apart) and a quarter turn for a surface (a spline surface
turns by X-Y-Z angles from its central pose, singular at a quarter turn: over the
thoracoscapular scapula's half-turn box a (10, 10) grid misses the exact joint by ~12 mm,
over the quarter-turn box by ~0.004 mm), and 1 m / 0.5 m for a translational one. A full
turn (``-pi..pi``, OpenSim's default range) is thus sampled around the default.
"""

import dataclasses
import math

import numpy as np

from ..checks import whole_number
from ..errors import InvalidInputError
from ..io.osim import OsimModel
from ..lie import se3
from ..muscles.paths import moment_arms, path_kinematics
from .document import JointFitOptions, fit_joint_document
from .metric import pose_errors
from .report import _rms_max

__all__ = ["spline_joint_from_osim", "with_joint", "fitted_osim_joint", "model_with_fits",
           "fitted_moment_arms", "OsimSplineFit", "MomentArmComparison", "MAX_SPAN", "BEYOND"]

#: widest sampled span (rad for a rotational coordinate, m for a translational one) by the
#: number of fitted coordinates (module docstring)
MAX_SPAN = {1: (math.pi, 1.0), 2: (math.pi / 2, 0.5)}
#: distances past each end of the range at which the divergence is reported: degrees for a
#: rotational coordinate, millimetres for a translational one
BEYOND = (5.0, 10.0, 17.0)
#: default samples per coordinate: curve, surface
_SAMPLES = {1: (121,), 2: (25, 25)}


@dataclasses.dataclass(frozen=True)
class OsimSplineFit:
    """The result of :func:`spline_joint_from_osim`.

    document: the :class:`core.io.JointDocument` (joint, ranges, metric, fit report);
    osim_joint: the model's :class:`~core.io.osim.OsimJoint` with the fitted joint as
    ``X_FM`` and only the fitted coordinates (for :func:`with_joint`); coordinates: their
    names; held: ``{name: value}`` of the joint's other coordinates;
    ranges: (n, 2) the sampled box; max_position_mm, rms_position_mm, max_angle_deg,
    rms_angle_deg: the child-in-parent pose error within the box (on the check grid);
    beyond: tuple of ``(coordinate, end ("lower"/"upper"), distance (deg or mm past the end),
    position_mm, angle_deg)``, the other fitted coordinate (if any) at its default clipped
    into the box.
    """

    document: object
    osim_joint: object
    coordinates: tuple
    held: dict
    ranges: np.ndarray
    max_position_mm: float
    rms_position_mm: float
    max_angle_deg: float
    rms_angle_deg: float
    beyond: tuple

    @property
    def joint(self):
        """The fitted spline joint."""
        return self.document.joint

    def summary(self, model) -> str:
        """The fit in plain words, for people: the sampled range, the largest and RMS error
        within it, and how far the fitted joint drifts from the exact one past the ends of the
        range (the largest distance of :attr:`beyond` at each end). ``model``: the
        :class:`~core.io.osim.OsimModel` fitted (for the coordinates' units)."""
        def shown(name, value):
            return (f"{math.degrees(value):.4g} deg" if model.is_rotational(name)
                    else f"{1e3 * value:.4g} mm")

        span = ", ".join(f"{n} {shown(n, lo).split()[0]}..{shown(n, hi)}"
                         for n, (lo, hi) in zip(self.coordinates, self.ranges))
        report = self.document.report
        frames = getattr(self.joint, "control_frames", None)
        size = (f"{len(frames)} control frames" if frames is not None
                else f"a {self.joint.nq}-coordinate spline joint")
        text = (f"Fitted {self.osim_joint.name} ({span}) with {size}"
                f"{f', fit {report.status}' if report is not None else ''}: within the range the "
                f"fitted joint is at most {self.max_position_mm:.3g} mm and "
                f"{self.max_angle_deg:.3g} deg from the exact joint (RMS "
                f"{self.rms_position_mm:.3g} mm, {self.rms_angle_deg:.3g} deg)")
        if self.held:
            text += "; other coordinates held at " + ", ".join(
                f"{n} = {shown(n, v)}" for n, v in self.held.items())
        far = {}
        for name, end, d, pos, ang in self.beyond:
            if (name, end) not in far or d > far[name, end][0]:
                far[name, end] = (d, pos, ang)
        if far:
            text += (". Past the ends of the range OpenSim's splines go on in a straight line "
                     "while the fitted joint goes on along a screw, so the two drift apart: ")
            text += ", ".join(
                f"{pos:.3g} mm / {ang:.3g} deg at {d:g} "
                f"{'deg' if model.is_rotational(name) else 'mm'} "
                f"{'below' if end == 'lower' else 'above'} {name}'s range"
                for (name, end), (d, pos, ang) in far.items())
        return text


def _box(model, names, max_span):
    """The sampled (lo, hi) of each coordinate (module docstring)."""
    box = []
    for n in names:
        c = model.coordinates[n]
        span = max_span[0] if model.is_rotational(n) else max_span[1]
        lo, hi = c.range
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo > span:
            a = min(max(c.default - span / 2, lo), hi - span) if math.isfinite(hi) \
                else max(c.default - span / 2, lo)
            lo, hi = a, a + span
        if not hi > lo:
            raise InvalidInputError(f"coordinate {n!r} has the empty range [{lo}, {hi}]; give "
                                    "it a range to fit over")
        box.append((float(lo), float(hi)))
    return np.array(box)


def spline_joint_from_osim(model, joint_name, coordinates=None, *, n_frames=8, grid=(8, 6),
                           samples=None, held=None, max_span=None, beyond=BEYOND):
    """Fit a spline joint to the exact joint ``joint_name`` of ``model`` (an
    :class:`~core.io.osim.OsimModel`).

    Args:
        coordinates: the 1 or 2 coordinates of the joint that the spline joint keeps (default:
            all of the joint's, which must then be 1 or 2); the joint's others are held at
            ``held`` (``{name: value}``; the model's default values for those not given).
        n_frames: control frames of a spline curve (1 coordinate); grid: control points per
            coordinate of a spline surface (2 coordinates).
        samples: samples per coordinate (default 121 for a curve, (25, 25) for a surface),
            uniform over the sampled box (module docstring).
        max_span: (rad, m) widest sampled span of a rotational / translational coordinate
            (default ``MAX_SPAN[number of coordinates]``).
        beyond: distances past each end of the box (deg or mm) for :attr:`OsimSplineFit.beyond`.
    Returns :class:`OsimSplineFit`. InvalidInputError for an unknown joint or coordinate, a
    wrong number of coordinates or bad settings (from the fit, before it starts).
    """
    if not isinstance(model, OsimModel):
        raise InvalidInputError(f"spline_joint_from_osim takes an OsimModel (read_osim), got "
                                f"{type(model).__name__}")
    j = model.joint(joint_name)
    names = tuple(j.coordinates if coordinates is None else
                  ([coordinates] if isinstance(coordinates, str) else coordinates))
    wrong = [n for n in names if n not in j.coordinates]
    if wrong or len(set(names)) != len(names) or len(names) not in (1, 2):
        raise InvalidInputError(
            f"joint {j.name!r}: fit 1 or 2 distinct coordinates of its own "
            f"{list(j.coordinates)}, got {list(names)}"
            f"{f' ({wrong} are not its coordinates)' if wrong else ''}")
    n = len(names)
    counts = _SAMPLES[n] if samples is None else \
        ((samples,) if np.ndim(samples) == 0 else tuple(samples))
    if len(counts) != n:
        raise InvalidInputError(f"samples must give {n} whole counts >= 4 (one per coordinate), "
                                f"got {samples!r}")
    counts = tuple(whole_number(c, "samples", minimum=4,
                                advice=f"give {n} whole counts >= 4, one per coordinate")
                   for c in counts)
    box = _box(model, names, MAX_SPAN[n] if max_span is None else max_span)
    given = dict(held or {})
    stray = [c for c in given if c not in j.coordinates or c in names]
    if stray:
        raise InvalidInputError(f"joint {j.name!r}: held coordinates {stray} are not among its "
                                f"other coordinates {[c for c in j.coordinates if c not in names]}")
    held = {c: float(given.get(c, model.coordinates[c].default)) for c in j.coordinates
            if c not in names}
    index = [j.coordinates.index(c) for c in names]
    base = np.array([held.get(c, model.coordinates[c].default) for c in j.coordinates])

    def full(qs):
        q = np.tile(base, (len(qs), 1))
        q[:, index] = qs
        return q

    def exact(qs):                               # X_FM of the exact joint, (N, 4, 4)
        return j.joint.transforms(full(qs))

    axes = [np.linspace(lo, hi, int(c)) for (lo, hi), c in zip(box, counts)]
    q = _grid(axes)
    options = JointFitOptions(kind="curve" if n == 1 else "surface", n_frames=n_frames,
                              grid=tuple(grid) if n == 2 else JointFitOptions.grid)
    document = fit_joint_document(exact(q), q, options, coordinate_names=names, name=j.name)
    fitted = document.joint
    P, Cinv = j.parent_offset, se3.inv(j.child_offset)

    def errors(qs):
        return pose_errors(P @ fitted.transforms(qs) @ Cinv, P @ exact(qs) @ Cinv)

    check = _grid([np.linspace(lo, hi, 2 * int(c) - 1) for (lo, hi), c in zip(box, counts)])
    pos, ang = errors(check)
    rows = []
    mid = np.clip(base[index], box[:, 0], box[:, 1])
    for a, name in enumerate(names):
        unit = math.radians(1.0) if model.is_rotational(name) else 1e-3
        for end, sign in (("lower", -1.0), ("upper", 1.0)):
            for d in beyond:
                qb = mid.copy()
                qb[a] = box[a, 0 if sign < 0 else 1] + sign * d * unit
                p_err, a_err = errors(qb[None])
                rows.append((name, end, float(d), float(p_err[0]), float(a_err[0])))
    osim_joint = fitted_osim_joint(model, j.name, document)
    (rms_pos, max_pos), (rms_ang, max_ang) = _rms_max(pos), _rms_max(ang)
    return OsimSplineFit(document=document, osim_joint=osim_joint, coordinates=names,
                         held=held, ranges=box, max_position_mm=max_pos,
                         rms_position_mm=rms_pos, max_angle_deg=max_ang,
                         rms_angle_deg=rms_ang, beyond=tuple(rows))


def _grid(axes):
    """All combinations of the axes' values, ``(N, n)``, the last axis fastest."""
    return np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")], axis=1)


def with_joint(model, osim_joint):
    """A copy of ``model`` whose joint of the same name is ``osim_joint`` (e.g.
    :attr:`OsimSplineFit.osim_joint`); the replaced joint's coordinates that ``osim_joint``
    no longer has are removed. InvalidInputError when a coupler names a removed coordinate.
    """
    old = model.joint(osim_joint.name)
    unknown = [c for c in osim_joint.coordinates if c not in old.coordinates]
    if unknown:
        raise InvalidInputError(f"joint {osim_joint.name!r}: coordinates {unknown} are not the "
                                f"model's joint's {list(old.coordinates)}; keep a subset of them")
    dropped = [c for c in old.coordinates if c not in osim_joint.coordinates]
    for c in model.couplers:
        used = set(c.independent) | {c.dependent}
        if used & set(dropped):
            raise InvalidInputError(
                f"coupler {c.name!r} uses coordinates {sorted(used & set(dropped))} that the "
                f"new joint {osim_joint.name!r} no longer has; remove the coupler first")
    joints = [osim_joint if j.name == osim_joint.name else j for j in model.joints]
    coords = {n: c for n, c in model.coordinates.items() if n not in dropped}
    return dataclasses.replace(model, joints=joints, coordinates=coords)


def fitted_osim_joint(model, joint_name, document):
    """The model's joint ``joint_name`` with ``document``'s joint (a :class:`core.io.JointDocument`
    whose coordinate names are some of the joint's) as ``X_FM`` and only those coordinates:
    the offsets stay (:attr:`OsimSplineFit.osim_joint`). InvalidInputError when the document's
    coordinates are not the joint's."""
    j = model.joint(joint_name)
    names = tuple(document.coordinate_names)
    wrong = [n for n in names if n not in j.coordinates]
    if wrong or len(set(names)) != len(names):
        raise InvalidInputError(
            f"joint {j.name!r}: the fitted joint's coordinates {list(names)} are not distinct "
            f"coordinates of the model's joint {list(j.coordinates)}; fit the joint again")
    return dataclasses.replace(j, coordinates=names, joint=document.joint, spec={})


def model_with_fits(model, documents):
    """A copy of ``model`` with each joint named in ``documents`` (``{joint name:
    JointDocument}``) replaced by its fitted joint (:func:`fitted_osim_joint`,
    :func:`with_joint`); ``model`` itself when ``documents`` is empty."""
    for name, document in documents.items():
        model = with_joint(model, fitted_osim_joint(model, name, document))
    return model


@dataclasses.dataclass(frozen=True)
class MomentArmComparison:
    """Moment arms of muscles about one coordinate with the exact joint and the fitted one.

    coordinate: its name; values (N,): the coordinate's values (rad or m); muscles: names;
    exact, fitted (M, N): moment arms (m, OpenSim's sign) of each muscle at each value, the
    model's other coordinates at their defaults; max_difference_mm: the largest
    ``|fitted - exact|`` in millimetres, per muscle (M,).
    """

    coordinate: str
    values: np.ndarray
    muscles: tuple
    exact: np.ndarray
    fitted: np.ndarray
    max_difference_mm: np.ndarray


def fitted_moment_arms(model, fit, muscles, coordinate, samples=201):
    """Moment arms of ``muscles`` (names of ``model.muscles``) about ``coordinate`` over its
    range (``samples`` values; the model's other coordinates at their defaults), with the
    model's exact joint and with the spline joint of ``fit`` (:class:`OsimSplineFit`, e.g.
    gait2392's knee_r fitted over knee_angle_r, which its quadriceps' moving points follow).
    ``coordinate`` must be one the fitted joint keeps. Returns :class:`MomentArmComparison`.
    """
    if coordinate not in fit.coordinates:
        raise InvalidInputError(f"the fitted joint {fit.osim_joint.name!r} keeps "
                                f"{list(fit.coordinates)}, not {coordinate!r}; compare moment "
                                "arms about one of those")
    missing = [m for m in muscles if m not in model.muscles]
    if missing:
        raise InvalidInputError(f"model {model.name!r} has no muscles {missing}")
    samples = whole_number(samples, "samples", minimum=2, advice="give a whole count >= 2")
    fitted_model = with_joint(model, fit.osim_joint)
    lo, hi = model.coordinates[coordinate].range
    values = np.linspace(lo, hi, samples)
    out = []
    for m in (model, fitted_model):
        k = m.coordinate_names.index(coordinate)
        table = np.empty((len(muscles), samples))
        for j, value in enumerate(values):
            kin = path_kinematics(m, m.q_from({coordinate: value}))
            for i, name in enumerate(muscles):
                table[i, j] = moment_arms(kin, None, model.muscles[name].path)[k]
        out.append(table)
    exact, fitted = out
    return MomentArmComparison(coordinate, values, tuple(muscles), exact, fitted,
                               1e3 * np.abs(fitted - exact).max(axis=1))
