"""Inverse dynamics of a motion with external loads, as OpenSim's InverseDynamicsTool does.

The generalized forces ``tau(t)`` that drive an :class:`~core.io.osim.OsimModel` along the
coordinates of a motion file, given gravity and the external loads
(:mod:`core.io.external_loads`), by :func:`core.dynamics.rnea`. The steps and their order are
OpenSim 4.6's (``InverseDynamicsTool::run``), so the results agree with it to round-off:

1. **Filter** (when ``lowpass_cutoff_frequency_for_coordinates >= 0``): every column of the
   motion is padded by half its length at both ends, reflected about and negated around its
   end value (``Storage::pad``, which keeps the value and slope at the ends; the times are
   padded the same way). If the padded times are not uniform to within ``2**-52`` s the
   columns are resampled at the smallest time step (``Storage::resample``: a natural quintic
   spline, step 4 below, evaluated from the first time on, adding the step to the running
   time while it stays within the last). Each column then goes through a third-order
   Butterworth low-pass (bilinear transform with prewarping, ``Signal::LowpassIIR``) forwards
   and backwards, each pass started from the first three samples as they are; a cut-off at or
   above half the sampling rate is lowered to 0.49 times the rate, with a warning.
2. **Units**: rotational coordinates are converted from degrees when the file is in degrees.
3. **Times**: the frames of the (padded, resampled) motion from the last one at or before
   the setup's start time to the last one at or before its end time, the range clipped to the
   motion's. With the filter on, the padding lets the first frame precede the trial.
4. **Derivatives**: each coordinate is interpolated by GCVSPL (Woltring 1986) of degree 5
   with zero error variance (``GCVSplineSet(5, ...)``): the natural interpolating quintic
   spline (knots at the samples, third and fourth derivatives zero at both ends), up to the
   smoothing of relative size ``1e-15`` that GCVSPL's search ends at. Here that spline is
   :func:`scipy.interpolate.make_interp_spline` with those end conditions; the tests compare
   the two. Its first and second derivatives are the speeds and accelerations. A coordinate
   the motion lacks stays at its default value with zero speed and acceleration.
5. **Loads**: each external force's columns are interpolated by the natural cubic spline
   (GCVSPL degree 3; linear between 2 or 3 samples, constant for 1) and applied at its
   point on its body (:func:`body_wrench`).
6. **Dynamics**: ``tau = rnea(q, q_dot, q_ddot, fext)`` on ``model.to_core_model`` with no
   coordinate locked and couplers left out: OpenSim's solver
   (``calcResidualForceIgnoringConstraints``) ignores constraints, so a locked coordinate
   reports the force that would be needed to move it as the motion file says.

Only gravity and the external loads act: the model's other forces (its muscles, and the
springs and other forces :mod:`core.io.osim` does not import) are not applied; a warning
names those the setup's ``forces_to_exclude`` does not exclude. The output columns are OpenSim's: coordinates in the model's tree order
(level by level from ground), ``<coordinate>_moment`` for a rotational one, ``_force``
otherwise.

:func:`run_inverse_dynamics` runs a setup file (:func:`read_inverse_dynamics_setup`) and
writes its .sto; ``fits`` puts fitted spline joints (:func:`core.fitting.osim.model_with_fits`)
in place of the model's joints.
"""

import math
import os
from dataclasses import dataclass, replace

import numpy as np
from scipy.interpolate import make_interp_spline
from scipy.signal import lfilter

from ..dynamics import rnea
from ..errors import InvalidInputError
from ..io.external_loads import GROUND, check_external_loads, read_external_loads
from ..io.files import check_writable_path, read_input
from ..io.fields import parse_float
from ..io.motion import read_motion, write_motion
from ..io.osim import opensim_document, read_osim
from ..lie import se3

__all__ = ["InverseDynamicsSetup", "InverseDynamicsResult", "read_inverse_dynamics_setup",
           "parse_inverse_dynamics_setup", "inverse_dynamics", "run_inverse_dynamics",
           "pad", "lowpass_iir", "butterworth3", "natural_spline", "filter_coordinates",
           "body_wrench", "load_wrenches", "SPLINE_DEGREE", "LOAD_SPLINE_DEGREE",
           "MAX_RESAMPLE_SIZE", "OUTPUT_TITLE"]

#: degree of the coordinates' splines (OpenSim's GCVSplineSet(5, ...))
SPLINE_DEGREE = 5
#: degree of the external loads' splines (ExternalForce's GCVSpline(3, ...))
LOAD_SPLINE_DEGREE = 3
#: the most rows a resampled motion may have (OpenSim's Storage::MAX_RESAMPLE_SIZE): the step
#: grows beyond it
MAX_RESAMPLE_SIZE = 100000
#: the first line of the .sto written (OpenSim's)
OUTPUT_TITLE = "Inverse Dynamics Generalized Forces"
#: non-uniform times (avg - min step) beyond this are resampled (SimTK::Eps)
_UNIFORM = np.finfo(float).eps


# ----------------------------------------------------------------------------- setup
@dataclass(frozen=True)
class InverseDynamicsSetup:
    """An InverseDynamicsTool setup file: paths resolved against the setup file's folder
    (OpenSim runs the tool from there); ``time_range`` (start, end) s;
    ``forces_to_exclude``: names or groups (``muscles``, ``actuators``, ``All``);
    ``lowpass_cutoff``: Hz, negative for no filter; ``output``: the .sto path
    (``results_directory`` joined with ``output_gen_force_file``)."""

    name: str
    model_file: str
    coordinates_file: str
    external_loads_file: str = ""
    time_range: tuple = (-math.inf, math.inf)
    forces_to_exclude: tuple = ()
    lowpass_cutoff: float = -1.0
    results_directory: str = ""
    output: str = ""
    source: str = ""


def _field(el, tag):
    child = el.find(tag)
    return "" if child is None or child.text is None else child.text.strip()


def _path(folder, text):
    if not text or text == "Unassigned":
        return ""
    return text if os.path.isabs(text) else os.path.normpath(os.path.join(folder, text))


def parse_inverse_dynamics_setup(data, source):
    """Parse the bytes or text of an InverseDynamicsTool setup (``source``: its path; the
    relative paths in it are taken from its folder). Returns :class:`InverseDynamicsSetup`."""
    root = opensim_document(data, source, "an OpenSim setup")
    el = root.find("InverseDynamicsTool")
    if el is None:
        raise InvalidInputError(f"{source}: no <InverseDynamicsTool> element: choose the "
                                "inverse dynamics setup file")
    folder = os.path.dirname(os.path.abspath(source))
    inputs = _path(folder, _field(el, "input_directory")) or folder
    where = f"{source}: <time_range>"
    span = _field(el, "time_range").split()
    if span and len(span) != 2:
        raise InvalidInputError(f"{where} must hold 2 times (start end), found {len(span)}")
    time_range = tuple(parse_float(s, where) for s in span) or (-math.inf, math.inf)
    if not time_range[0] <= time_range[1]:
        raise InvalidInputError(f"{where} starts at {time_range[0]} s after it ends at "
                                f"{time_range[1]} s: give the start first")
    cutoff = _field(el, "lowpass_cutoff_frequency_for_coordinates")
    cutoff = parse_float(cutoff, f"{source}: <lowpass_cutoff_frequency_for_coordinates>") \
        if cutoff else -1.0
    coordinates = _path(inputs, _field(el, "coordinates_file"))
    if not coordinates:
        raise InvalidInputError(f"{source}: <coordinates_file> is empty: name the motion "
                                "(.mot) of the coordinates, e.g. the inverse kinematics result")
    results = _path(folder, _field(el, "results_directory")) or folder
    output = _field(el, "output_gen_force_file") or "inverse_dynamics.sto"
    return InverseDynamicsSetup(
        name=el.get("name", ""), model_file=_path(folder, _field(el, "model_file")),
        coordinates_file=coordinates,
        external_loads_file=_path(inputs, _field(el, "external_loads_file")),
        time_range=time_range,
        forces_to_exclude=tuple(_field(el, "forces_to_exclude").split()),
        lowpass_cutoff=cutoff, results_directory=results,
        output=os.path.join(results, output), source=source)


def read_inverse_dynamics_setup(path):
    """The :class:`InverseDynamicsSetup` in the file ``path``."""
    path = os.fspath(path)
    return parse_inverse_dynamics_setup(read_input(path, "inverse dynamics setup"), path)


# ----------------------------------------------------------------------------- signals
def pad(time, values, n):
    """``(time, values)`` with ``n`` rows added before and after, each column reflected about
    its end value and negated (``2 x_0 - x_k``, as OpenSim's ``Signal::Pad``): ``(N + 2n,)``
    and ``(N + 2n, C)``."""
    if n <= 0:
        return np.asarray(time, float), np.asarray(values, float)
    if n >= len(time):
        raise InvalidInputError(f"pad: {n} rows cannot be reflected from {len(time)}")
    t = np.pad(np.asarray(time, float), n, mode="reflect", reflect_type="odd")
    v = np.pad(np.asarray(values, float), ((n, n), (0, 0)), mode="reflect",
               reflect_type="odd")
    return t, v


def butterworth3(dt, cutoff):
    """``(numerator (4,), denominator (4,), cutoff used)`` of OpenSim's third-order low-pass
    Butterworth filter for sampling step ``dt`` (bilinear transform with the cut-off
    prewarped); a cut-off at or above half the sampling rate is lowered to 0.49 times the
    rate."""
    fs = 1.0 / dt
    if cutoff >= 0.5 * fs:
        cutoff = 0.49 * fs
    wc = 2 * math.pi * cutoff
    wa = math.tan(wc * dt / 2.0)
    wa2, wa3 = wa * wa, wa * wa * wa
    denom = (wa + 1) * (wa * wa + wa + 1.0)
    numerator = np.array([wa3, 3 * wa3, 3 * wa3, wa3]) / denom
    denominator = np.array([1.0, (3 * wa3 + 2 * wa2 - 2 * wa - 3) / denom,
                            (3 * wa3 - 2 * wa2 - 2 * wa + 3) / denom,
                            (wa - 1) * (wa2 - wa + 1) / denom])
    return numerator, denominator, cutoff


def _one_pass(b, a, x):
    """The recursion ``y[i] = b . x[i-3..i] - a[1:] . y[i-3..i-1]`` for ``i >= 3`` with
    ``y[:3] = x[:3]``, down the rows of ``x (N, C)``: a transposed direct-form filter whose
    state is set from those first three rows."""
    y = np.empty_like(x)
    y[:3] = x[:3]
    d = b - a                          # the first outputs equal the first inputs
    zi = np.stack([d[1] * x[2] + d[2] * x[1] + d[3] * x[0], d[2] * x[2] + d[3] * x[1],
                   d[3] * x[2]])
    y[3:] = lfilter(b, a, x[3:], axis=0, zi=zi)[0]
    return y


def lowpass_iir(values, dt, cutoff):
    """OpenSim's ``Signal::LowpassIIR`` of every column of ``values (N, C)`` sampled every
    ``dt`` s: :func:`butterworth3` forwards, then backwards, each pass started from its first
    three samples. Returns ``(filtered (N, C), cutoff used)``."""
    values = np.asarray(values, dtype=float)
    if len(values) < 4:
        raise InvalidInputError(f"low-pass filter: {len(values)} samples are too few to "
                                "filter; record at least 4")
    b, a, used = butterworth3(dt, cutoff)
    forward = _one_pass(b, a, values)
    return _one_pass(b, a, forward[::-1])[::-1].copy(), used


def natural_spline(x, y, degree):
    """The natural interpolating spline of odd ``degree`` through ``(x (N,), y (N, ...))``
    (derivatives of order (degree+1)/2 to degree-1 zero at both ends), as a
    :class:`scipy.interpolate.BSpline`: OpenSim's GCVSpline with zero error variance."""
    m = (degree + 1) // 2
    if len(x) < 2 * m:
        raise InvalidInputError(f"a spline of degree {degree} needs at least {2 * m} samples, "
                                f"got {len(x)}: record more frames")
    y = np.asarray(y, dtype=float)
    ends = [(order, np.zeros(y.shape[1:])) for order in range(m, degree)]
    return make_interp_spline(x, y, k=degree, bc_type=(ends, ends))


def _resample(time, values, dt):
    """OpenSim's ``Storage::resample(dt, 5)``: the natural quintic spline of each column at
    ``t0, t0 + dt, ...`` (the step added to the running time) while within the last time."""
    grid, t = [], float(time[0])
    while t <= time[-1]:
        grid.append(t)
        t += dt
    grid = np.array(grid)
    return grid, natural_spline(time, values, SPLINE_DEGREE)(grid)


def filter_coordinates(time, values, cutoff):
    """Step 1 of the module docstring: ``(time, values, dt, cutoff used, warnings)`` of the
    padded, resampled (when not uniform) and low-pass filtered columns of ``values (N, C)``."""
    time, values = pad(time, values, len(time) // 2)
    steps = np.diff(time)
    dt = float(steps.min())
    if not dt >= _UNIFORM:
        raise InvalidInputError("the coordinates' times must increase from row to row; "
                                "remove repeated or out-of-order rows")
    warnings = []
    if (time[-1] - time[0]) / (len(time) - 1) - dt > _UNIFORM:
        if (time[-1] - time[0]) / dt > MAX_RESAMPLE_SIZE:
            wider = (time[-1] - time[0]) / MAX_RESAMPLE_SIZE
            warnings.append(f"the coordinates are resampled every {wider:g} s instead of at "
                            f"their smallest step {dt:g} s, to stay within "
                            f"{MAX_RESAMPLE_SIZE} rows")
            dt = wider
        time, values = _resample(time, values, dt)
    filtered, used = lowpass_iir(values, dt, cutoff)
    if used != cutoff:
        warnings.append(f"the low-pass cut-off {cutoff:g} Hz is not below half the sampling "
                        f"rate {0.5 / dt:g} Hz: {used:g} Hz is used")
    return time, filtered, dt, used, warnings


# ----------------------------------------------------------------------------- loads
def body_wrench(pose, point, force, torque):
    """The wrench ``[moment; force] (6,)`` in the frame of a body at ``pose (4, 4)`` (in
    ground) of a force ``(3,)`` acting at ``point (3,)`` plus a free ``torque (3,)``, all
    given in ground: ``R^T [torque + (point - origin) x force; force]``. Leading batch axes
    are allowed."""
    R, o = pose[..., :3, :3], pose[..., :3, 3]
    moment = torque + np.cross(point - o, force)
    RT = np.swapaxes(R, -1, -2)
    return np.concatenate([(RT @ moment[..., None])[..., 0],
                           (RT @ force[..., None])[..., 0]], axis=-1)


def _load_functions(loads):
    """A function of times ``(T,)`` giving every data column of ``loads`` ``(T, C)``."""
    data = loads.data
    t, y = data.time, data.values
    if len(t) >= 2 * ((LOAD_SPLINE_DEGREE + 1) // 2):
        return natural_spline(t, y, LOAD_SPLINE_DEGREE)
    if len(t) >= 2:
        return lambda x: np.stack([np.interp(x, t, y[:, j]) for j in range(y.shape[1])], 1)
    return lambda x: np.repeat(y[:1], len(np.atleast_1d(x)), axis=0)


def load_wrenches(osim_model, core_model, loads, qs, values):
    """The external wrenches ``fext (N, nb, 6)`` of ``loads`` on the bodies of
    ``core_model`` (:meth:`~core.io.osim.OsimModel.to_core_model` of ``osim_model``, whose
    body frames are the joints' child frames) at N frames: ``qs (N, nq)`` the coordinates of
    ``osim_model`` and ``values (N, C)`` the loads' data columns at the frames' times."""
    frames = {n for f in loads.forces for n in (f.body, f.force_frame, f.point_frame)}
    poses = osim_model.body_poses_along(qs, frames - {GROUND})
    poses[GROUND] = np.broadcast_to(np.eye(4), (len(qs), 4, 4))
    fext = np.zeros((len(qs), core_model.nbodies, 6))
    zero = np.zeros((len(qs), 3))

    def turned(R, columns):
        return zero if not columns else (R @ values[:, list(columns), None])[..., 0]

    for f in loads.forces:
        R = poses[f.force_frame][:, :3, :3]
        force, torque = turned(R, f.force_columns), turned(R, f.torque_columns)
        if f.point_columns:
            P = poses[f.point_frame]
            point = turned(P[:, :3, :3], f.point_columns) + P[:, :3, 3]
        else:
            point = poses[f.body][:, :3, 3]
        M = poses[f.body] @ se3.inv(osim_model.core_to_body(f.body))
        fext[:, core_model.body_index(f.body)] += body_wrench(M, point, force, torque)
    return fext


# ----------------------------------------------------------------------------- solve
@dataclass(frozen=True, eq=False)
class InverseDynamicsResult:
    """Generalized forces: ``time (N,)``; ``coordinates``: the C coordinate names in
    OpenSim's output order; ``names``: the output column labels (``<coordinate>_moment`` /
    ``_force``); ``forces (N, C)`` N m or N; ``warnings``: what was assumed or skipped;
    ``status``: ``"done"`` or ``"cancelled"`` (then no rows); ``output``: the file written,
    if any; ``cutoff``: the low-pass cut-off used (Hz, negative for none)."""

    time: np.ndarray
    coordinates: tuple
    names: tuple
    forces: np.ndarray
    warnings: tuple = ()
    status: str = "done"
    output: str = ""
    cutoff: float = -1.0

    def column(self, coordinate):
        """The generalized force of ``coordinate`` over time, ``(N,)``."""
        if coordinate not in self.coordinates:
            raise InvalidInputError(f"inverse dynamics has no coordinate {coordinate!r}; it "
                                    f"has {', '.join(self.coordinates)}")
        return self.forces[:, self.coordinates.index(coordinate)]


def _columns(model):
    """``(coordinates, labels)`` of the output: the model's coordinates level by level from
    ground (OpenSim's multibody tree order; joints of one level in the model's order) and
    their labels ``<coordinate>_moment`` (rotational) or ``_force``."""
    depth = {GROUND: 0}
    for j in model.joints:
        depth[j.child] = depth[j.parent] + 1
    joints = sorted(enumerate(model.joints), key=lambda ij: (depth[ij[1].child], ij[0]))
    coordinates = tuple(c for _, j in joints for c in j.coordinates)
    return coordinates, tuple(f"{c}_moment" if model.is_rotational(c) else f"{c}_force"
                              for c in coordinates)


#: force classes of the model (a muscle's kind, or the tag :attr:`OsimModel.skipped` names a
#: force by) that only ``forces_to_exclude`` ``All`` excludes, by the word their class name
#: ends with
_FORCE_WORDS = ("Force", "Actuator", "Spring", "Damper", "Ligament", "Bushing", "Muscle")


def _unapplied_forces(model, excluded):
    """Warnings for the model's forces that OpenSim would apply and this solver does not."""
    groups = {e.lower() for e in excluded}
    if "all" in groups:
        return []
    names = set(excluded)
    left = []
    forces = [(m.kind, m.name) for m in model.muscles.values()]
    forces += [item.partition(" ")[::2] for item in model.skipped]
    for tag, name in forces:
        if not tag.endswith(_FORCE_WORDS) or name in names:
            continue
        if tag.endswith("Muscle") and groups & {"muscles", "actuators"}:
            continue
        if tag.endswith("Actuator") and "actuators" in groups:
            continue
        left.append(name or tag)
    if not left:
        return []
    return [f"the model's forces {', '.join(left[:6])}{' ...' if len(left) > 6 else ''} "
            f"({len(left)}) are not applied: inverse dynamics here applies gravity and the "
            "external loads only (list them in forces_to_exclude, or 'All', to match OpenSim)"]


def inverse_dynamics(model, motion, loads=None, *, time_range=(-math.inf, math.inf),
                     lowpass_cutoff=-1.0, forces_to_exclude=("All",), fits=None,
                     progress=None):
    """The generalized forces along ``motion`` (a :class:`~core.io.motion.Motion` of
    ``model``'s coordinates) with ``loads`` (:class:`~core.io.external_loads.ExternalLoads`
    or None), over ``time_range`` (s), the coordinates low-pass filtered at
    ``lowpass_cutoff`` Hz (negative: not filtered), as the module docstring says.

    model: an :class:`~core.io.osim.OsimModel`; ``fits``: ``{joint name: JointDocument}`` of
    fitted spline joints to use in place of those joints
    (:func:`core.fitting.osim.model_with_fits`). ``forces_to_exclude``: the setup's list,
    for the warning about the model's forces that are not applied. ``progress(fraction) ->
    bool`` is called once per frame; False cancels (status ``"cancelled"``, no rows).
    Returns :class:`InverseDynamicsResult`. InvalidInputError when the time range misses the
    motion, the motion has too few frames or no coordinate of the model, a load acts on a
    body the model lacks, or the loads' data do not cover the frames solved.
    """
    if fits:
        from ..fitting.osim import model_with_fits
        model = model_with_fits(model, fits)
    warnings = list(_unapplied_forces(model, forces_to_exclude))
    columns = [j for j, n in enumerate(motion.names) if n in model.coordinates]
    if not columns:
        raise InvalidInputError(
            f"motion {motion.name!r}: none of its columns ({', '.join(motion.names[:6])}...) is "
            f"a coordinate of model {model.name!r}: load the motion of this model's coordinates")
    present = [motion.names[j] for j in columns]
    missing = [c for c in model.coordinates if c not in present]
    if missing:
        warnings.append(f"the motion does not hold coordinates {', '.join(missing)}: they "
                        "stay at their default values")
    start, end = (float(time_range[0]), float(time_range[1]))
    t0, t1 = float(motion.time[0]), float(motion.time[-1])
    if not (start <= end and start <= t1 and end >= t0):
        raise InvalidInputError(
            f"the time range {start:g}..{end:g} s misses the motion's {t0:g}..{t1:g} s: choose "
            "a time range within the trial")
    time, values = np.asarray(motion.time, float), motion.values[:, columns]
    if np.any(np.diff(time) <= 0):
        raise InvalidInputError(f"motion {motion.name!r}: its times must increase from row to "
                                "row; remove repeated or out-of-order rows")
    used = -1.0
    if lowpass_cutoff >= 0:
        time, values, _, used, notes = filter_coordinates(time, values, lowpass_cutoff)
        warnings += notes
    if motion.in_degrees:
        rotational = [model.is_rotational(n) for n in present]
        values[:, rotational] = np.deg2rad(values[:, rotational])
    spline = natural_spline(time, values, SPLINE_DEGREE)
    first = max(time[0], start)
    last = min(time[-1], end)
    i0 = max(int(np.searchsorted(time, first, side="right")) - 1, 0)
    i1 = max(int(np.searchsorted(time, last, side="right")) - 1, 0)
    times = time[i0:i1 + 1]

    core, order = model.to_core_model(lock=(), ignore_couplers=True)
    index = {n: i for i, n in enumerate(order)}
    cols = [index[n] for n in present]
    n_frames = len(times)
    Q = np.tile(model.default_q()[[model.coordinate_names.index(n) for n in order]],
                (n_frames, 1))
    V, A = np.zeros_like(Q), np.zeros_like(Q)
    Q[:, cols], V[:, cols], A[:, cols] = spline(times), spline(times, 1), spline(times, 2)
    fext = [None] * n_frames
    if loads is not None:
        loads, notes = check_external_loads(loads, model)
        warnings += list(loads.notes) + notes
        lt = loads.data.time
        if times[0] < lt[0] or times[-1] > lt[-1]:
            raise InvalidInputError(
                f"the external loads in {loads.datafile or loads.source} cover "
                f"{lt[0]:g}..{lt[-1]:g} s but inverse dynamics runs over "
                f"{times[0]:g}..{times[-1]:g} s: choose a time range the forces cover")
        in_model_order = Q[:, [index[n] for n in model.coordinate_names]]
        fext = load_wrenches(model, core, loads, in_model_order,
                             _load_functions(loads)(times))
    data = core.create_data()
    out = np.empty((n_frames, len(order)))
    for k in range(n_frames):
        if progress is not None and not progress(k / n_frames):
            return _cancelled(model, warnings, used)
        out[k] = rnea(core, data, Q[k], V[k], A[k], fext[k])
    if progress is not None and not progress(1.0):
        return _cancelled(model, warnings, used)
    coordinates, names = _columns(model)
    forces = out[:, [index[c] for c in coordinates]]
    return InverseDynamicsResult(time=times.copy(), coordinates=coordinates, names=names,
                                 forces=forces, warnings=tuple(warnings), cutoff=used)


def _cancelled(model, warnings, used):
    coordinates, names = _columns(model)
    return InverseDynamicsResult(
        time=np.zeros(0), coordinates=coordinates, names=names,
        forces=np.zeros((0, len(coordinates))), warnings=tuple(warnings),
        status="cancelled", cutoff=used)


def run_inverse_dynamics(setup, *, model=None, fits=None, output=None, progress=None):
    """Run an inverse dynamics setup (a path or an :class:`InverseDynamicsSetup`): read its
    model (or use ``model``), coordinates and external loads, solve
    (:func:`inverse_dynamics`, with ``fits``) and write the generalized forces to ``output``
    (default: the setup's results file) as OpenSim's .sto, atomically; nothing is written
    when cancelled. Returns the :class:`InverseDynamicsResult` with ``output`` set."""
    if not isinstance(setup, InverseDynamicsSetup):
        setup = read_inverse_dynamics_setup(setup)
    if model is None:
        if not setup.model_file:
            raise InvalidInputError(f"{setup.source}: <model_file> is empty: name the model "
                                    "or pass one")
        model = read_osim(setup.model_file)
    motion = read_motion(setup.coordinates_file)
    loads = read_external_loads(setup.external_loads_file) \
        if setup.external_loads_file else None
    result = inverse_dynamics(model, motion, loads, time_range=setup.time_range,
                              lowpass_cutoff=setup.lowpass_cutoff,
                              forces_to_exclude=setup.forces_to_exclude, fits=fits,
                              progress=progress)
    if result.status != "done":
        return result
    if output is None:
        output = setup.output
        os.makedirs(setup.results_directory, exist_ok=True)
    output = check_writable_path(output)
    write_motion(output, result.names, result.time, result.forces, in_degrees=False,
                 name=OUTPUT_TITLE)
    return replace(result, output=output)
