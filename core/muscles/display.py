"""What a 3D view shows of a model's muscles, and the moment-arm plots of one muscle.

:class:`MuscleDisplay` evaluates every muscle of an OpenSim model (:class:`core.io.osim.
OsimModel`) at a pose with one shared :func:`~core.muscles.paths.path_kinematics`: each
path's world points (wrap arcs included), its length, and a colour: by the length's change
from the rest length (the length at the model's default pose; shorter blue, at rest red,
longer yellow, full colour at :data:`LENGTH_SPAN` relative change) or by the tension of a
rigid-tendon DeGroote-Fregly muscle (:func:`core.muscles.hill.rigid_tendon`) at the given
activations and zero lengthening speed, relative to the muscle's maximum isometric force
(pale at none, deep red at the maximum). :func:`muscle_colors` gives the same colours for any
paths' lengths (a rig's muscles, :mod:`core.rig`).

:func:`moment_arm_sweep` tabulates one muscle's length and moment arm about one coordinate
over its range on several models (the exact joint and a fitted spline joint side by side),
:func:`point_path_sweep` the same of a rig's straight-path muscle (:mod:`core.rig`);
:func:`write_sweep_csv` and :func:`write_sweep_png` write the table and its figure atomically.
"""

import io
import math

import numpy as np

from ..errors import InvalidInputError
from .paths import moment_arms, path_geometry, path_kinematics, spanned_coordinates

__all__ = ["MuscleDisplay", "MuscleSweep", "LENGTH_SPAN", "COLOR_MODES", "moment_arm_sweep",
           "write_sweep_csv", "write_sweep_png", "muscle_spans", "filter_muscles",
           "muscle_colors", "muscle_tensions", "point_path_sweep"]

#: relative length change shown in full colour (shorter: blue, longer: yellow)
LENGTH_SPAN = 0.2
#: what the colour shows
COLOR_MODES = ("LENGTH", "FORCE")
_REST = np.array([0.80, 0.20, 0.16, 1.0])
_SHORT = np.array([0.15, 0.35, 0.95, 1.0])
_LONG = np.array([0.98, 0.85, 0.15, 1.0])
_SLACK = np.array([0.93, 0.80, 0.76, 1.0])
_FULL = np.array([0.60, 0.00, 0.02, 1.0])


def _blend(a, b, t):
    t = np.clip(np.asarray(t, dtype=float), 0.0, 1.0)[:, None]
    return (1.0 - t) * a + t * b


class MuscleDisplay:
    """The muscles ``names`` (default: all) of ``model`` for drawing (module docstring).

    Attributes: model, names, rest_lengths (m,) at the default pose.
    """

    def __init__(self, model, names=None):
        self.model = model
        self.names = tuple(model.muscles) if names is None else tuple(names)
        missing = [n for n in self.names if n not in model.muscles]
        if missing:
            raise InvalidInputError(f"model {model.name!r} has no muscles {missing}")
        kin = path_kinematics(model, None)
        self.rest_lengths = np.array([self._geometry(kin, n).length for n in self.names])
        self._arrays = None

    def _geometry(self, kin, name):
        return path_geometry(kin, None, self.model.muscles[name].path, f"muscle {name!r}")

    def evaluate(self, q):
        """``(points, lengths)`` at coordinates ``q`` (what the model's ``q_from`` takes):
        a list of (K_i, 3) world point arrays and the lengths (m,) (m)."""
        kin = path_kinematics(self.model, q)
        states = [self._geometry(kin, n) for n in self.names]
        return [s.points for s in states], np.array([s.length for s in states])

    def tensions(self, lengths, activations):
        """Rigid-tendon tensions (m,) (N) at ``lengths`` (m,), zero speed and ``activations``
        (m,) (:func:`muscle_tensions`)."""
        return muscle_tensions(self._muscle_arrays(), lengths, activations)

    def _muscle_arrays(self):
        from .hill import HillParameters, MuscleArrays

        if self._arrays is None:
            self._arrays = MuscleArrays(HillParameters.from_muscle(self.model.muscles[n])
                                        for n in self.names)
        return self._arrays

    def colors(self, lengths, mode="LENGTH", activations=None):
        """RGBA (m, 4) of the muscles at ``lengths`` (m,) (:func:`muscle_colors`)."""
        arrays = self._muscle_arrays() if mode == "FORCE" else None
        return muscle_colors(lengths, self.rest_lengths, mode, arrays, activations)


def muscle_tensions(arrays, lengths, activations):
    """Rigid-tendon tensions (m,) (N) of the :class:`core.muscles.hill.MuscleArrays` ``arrays``
    at ``lengths`` (m,), zero speed and ``activations`` (m,) in [0, 1] (InvalidInputError
    names a muscle whose activation is outside)."""
    from .hill import check_activation, rigid_tendon

    a = np.asarray(activations, dtype=float)
    for name, value in zip(arrays.names, a):
        check_activation(name, value)
    return rigid_tendon(arrays, lengths, np.zeros(len(arrays.names)), a).tendon_force


def muscle_colors(lengths, rest_lengths, mode="LENGTH", arrays=None, activations=None):
    """RGBA (m, 4) of m muscles at path ``lengths`` (m,) (module docstring): ``mode``
    "LENGTH" (the change from ``rest_lengths`` (m,)) or "FORCE" (the tension of the
    :class:`core.muscles.hill.MuscleArrays` ``arrays`` at ``activations`` (m,), default zero:
    passive tension only, over each maximum isometric force)."""
    if mode == "LENGTH":
        change = np.asarray(lengths, dtype=float) / rest_lengths - 1.0
        t = change / LENGTH_SPAN
        return np.where((t < 0.0)[:, None], _blend(_REST, _SHORT, -t), _blend(_REST, _LONG, t))
    if mode == "FORCE":
        a = np.zeros(len(arrays.names)) if activations is None else activations
        force = muscle_tensions(arrays, lengths, a)
        return _blend(_SLACK, _FULL, force / arrays.max_isometric_force)
    raise InvalidInputError(f"colour mode {mode!r} is not one of {COLOR_MODES}")


def muscle_spans(model):
    """``{muscle: (coordinates, joints)}``: the coordinates each muscle's length can depend on
    (:func:`~core.muscles.paths.spanned_coordinates`) and the joints they belong to."""
    joint_of = {c: j.name for j in model.joints for c in j.coordinates}
    out = {}
    for name, muscle in model.muscles.items():
        coordinates = spanned_coordinates(model, muscle.path)
        joints = tuple(dict.fromkeys(joint_of[c] for c in coordinates if c in joint_of))
        out[name] = (coordinates, joints)
    return out


def filter_muscles(names, spans, name_filter="", span_filter=""):
    """``(m,)`` bool: muscles whose name contains ``name_filter`` and which span a coordinate
    or joint whose name contains ``span_filter`` (case-insensitive; empty: all).
    ``spans``: ``(coordinates, joints)`` per muscle, as :func:`muscle_spans` gives."""
    name_filter, span_filter = name_filter.strip().lower(), span_filter.strip().lower()
    keep = []
    for name, (coordinates, joints) in zip(names, spans):
        ok = name_filter in name.lower()
        if ok and span_filter:
            ok = any(span_filter in s.lower() for s in (*coordinates, *joints))
        keep.append(ok)
    return np.array(keep, dtype=bool)


class MuscleSweep:
    """One muscle's length and moment arm about ``coordinate`` at ``values`` (N,) on several
    models: ``labels`` (one per model), ``lengths`` and ``moment_arms`` (len(labels), N) (m;
    OpenSim's sign, -dL/dq)."""

    def __init__(self, muscle, coordinate, rotational, values, labels, lengths, arms):
        self.muscle, self.coordinate, self.rotational = muscle, coordinate, rotational
        self.values, self.labels = values, tuple(labels)
        self.lengths, self.moment_arms = lengths, arms

    def csv_text(self):
        """The table as CSV: the coordinate, then length and moment arm per model (m)."""
        unit = "rad" if self.rotational else "m"
        head = [f"{self.coordinate} ({unit})"]
        for label in self.labels:
            head += [f"length {label} (m)", f"moment arm {label} (m)"]
        out = io.StringIO()
        out.write(",".join(head) + "\n")
        for j, x in enumerate(self.values):
            row = [x]
            for k in range(len(self.labels)):
                row += [self.lengths[k, j], self.moment_arms[k, j]]
            out.write(",".join(repr(float(v)) for v in row) + "\n")
        return out.getvalue()

    def largest_difference_mm(self):
        """Largest |moment arm difference| (mm) between the first model and each other."""
        return [1e3 * float(np.abs(a - self.moment_arms[0]).max()) for a in self.moment_arms[1:]]


def moment_arm_sweep(models, muscle, coordinate, q=None, samples=61):
    """:class:`MuscleSweep` of ``muscle`` (a name of the first model's muscles; its path is
    used on every model) about ``coordinate`` over its range (``samples`` values), the other
    coordinates at ``q`` (``{name: value}``, names a model lacks are left out; default: the
    defaults). ``models``: ``{label: OsimModel}``, e.g. the exact and the fitted model."""
    models = dict(models)
    first = next(iter(models.values()))
    if muscle not in first.muscles:
        raise InvalidInputError(f"model {first.name!r} has no muscle {muscle!r}; choose one of "
                                "its muscles")
    if coordinate not in first.coordinates:
        raise InvalidInputError(f"model {first.name!r} has no coordinate {coordinate!r}")
    samples = int(samples)
    if samples < 2:
        raise InvalidInputError("a sweep needs at least 2 samples")
    c = first.coordinates[coordinate]
    lo, hi = c.range
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        raise InvalidInputError(f"coordinate {coordinate!r} has no finite range to sweep; "
                                "choose another coordinate")
    values = np.linspace(lo, hi, samples)
    path = first.muscles[muscle].path
    lengths = np.empty((len(models), samples))
    arms = np.empty((len(models), samples))
    for k, model in enumerate(models.values()):
        if coordinate not in model.coordinates:
            raise InvalidInputError(f"model {model.name!r} has no coordinate {coordinate!r}")
        base = {n: v for n, v in dict(q or {}).items() if n in model.coordinates}
        i = model.coordinate_names.index(coordinate)
        for j, x in enumerate(values):
            kin = path_kinematics(model, model.q_from({**base, coordinate: x}))
            where = f"muscle {muscle!r}"
            lengths[k, j] = path_geometry(kin, None, path, where).length
            arms[k, j] = moment_arms(kin, None, path, where=where)[i]
    return MuscleSweep(muscle, coordinate, c.motion_type == "rotational", values,
                       tuple(models), lengths, arms)


def point_path_sweep(geometry, names, muscle, coordinate, index, q, values, rotational=True,
                     label="rig"):
    """:class:`MuscleSweep` of the straight-path muscle ``muscle`` (one of ``names``, the
    muscles of ``geometry``, a :class:`core.muscles.actuation.PointPaths`) about coordinate
    ``index`` of its model (named ``coordinate``; one whose rate is its velocity, as a hinge's
    or a slider's) at ``values`` (N,), the other coordinates at ``q``: the path's length and
    its moment arm from the path's geometry, the generalized force of a unit tension
    (``-dL/dq``), under the one ``label``."""
    names = list(names)
    if muscle not in names:
        raise InvalidInputError(f"there is no muscle {muscle!r}; choose one of {names}")
    unit = np.zeros(len(names))
    unit[names.index(muscle)] = 1.0
    q = np.array(q, dtype=float)
    v = np.zeros(geometry.model.nv)
    values = np.asarray(values, dtype=float)
    lengths, arms = np.empty((1, len(values))), np.empty((1, len(values)))
    for j, x in enumerate(values):
        q[index] = x
        lengths[0, j] = geometry.lengths_and_speeds(q, v)[0][names.index(muscle)]
        arms[0, j] = geometry.generalized_forces(unit)[index]
    return MuscleSweep(muscle, coordinate, rotational, values, (label,), lengths, arms)


def write_sweep_csv(path, sweep):
    """Write :meth:`MuscleSweep.csv_text` to ``path`` atomically."""
    from ..io.files import atomic_write

    atomic_write(path, sweep.csv_text())


def write_sweep_png(path, sweep, dpi=100):
    """Write the sweep's figure (moment arm above, length below, in mm against the coordinate,
    in degrees for an angle) to ``path`` as PNG, atomically (matplotlib, Agg backend)."""
    from ..io.files import atomic_path

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.degrees(sweep.values) if sweep.rotational else sweep.values
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(6.4, 5.6), dpi=dpi)
    try:
        for k, label in enumerate(sweep.labels):
            style = "-" if k == 0 else "--"
            top.plot(x, 1e3 * sweep.moment_arms[k], style, label=label)
            bottom.plot(x, 1e3 * sweep.lengths[k], style, label=label)
        title = f"{sweep.muscle} about {sweep.coordinate}"
        diffs = sweep.largest_difference_mm()
        if diffs:
            title += f" (largest moment arm difference {max(diffs):.3g} mm)"
        top.set_title(title, fontsize=10)
        top.set_ylabel("moment arm (mm)")
        bottom.set_ylabel("length (mm)")
        bottom.set_xlabel(f"{sweep.coordinate} ({'deg' if sweep.rotational else 'm'})")
        for ax in (top, bottom):
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png")
    finally:
        plt.close(fig)
