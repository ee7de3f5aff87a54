"""Inverse kinematics of marker trials and the marker placement of scaling, as OpenSim 4.6's
``InverseKinematicsTool`` (with ``InverseKinematicsSolver``) and ``MarkerPlacer`` do them.

**The problem.** At each frame, the coordinates ``q`` minimize OpenSim's assembly goal
(Simbody's ``Markers`` and ``QValue`` conditions)

    F(q) = sum_i w_i |x_i(q) - o_i|^2 / (2 W)  +  sum_j w_j (q_j - v_j)^2 / 2

over the markers ``i`` observed at that frame (``W = sum_i w_i`` over them: a marker with NaN
in the trial at a frame is left out of the sum and of W, as Simbody does) and the coordinate
tasks ``j`` (target ``v_j``: the coordinate's default value, a manual value, or a value from a
coordinate file). ``x_i(q)`` are the model's markers in ground; all coordinates are solved at
once. Clamped coordinates stay in their ranges, locked ones at their default values (a task
on a locked coordinate is dropped, as OpenSim's ``AssemblySolver`` drops it).

**The solver.** ``F`` is a weighted least-squares problem with the residual
``r = [sqrt(w_i / W) (x_i - o_i); sqrt(w_j) (q_j - v_j)]`` (``F = |r|^2 / 2``), solved with
analytic first and second derivatives. A marker on body b moves with ``dx/dq_k = v_k + w_k x
x`` for every coordinate k that moves b, ``[w_k; v_k]`` the world-frame joint Jacobian column
(:func:`core.dynamics.compute_joint_jacobians` on :meth:`OsimModel.to_core_model`: one kernel
call on the numba backend); the residuals' curvature ``sum_i r_i d^2 r_i / dq dq`` follows
from the same columns and the joints' own ``dS/dq`` (:meth:`MarkerKinematics.curvature`).
Each frame takes Newton steps on ``J^T J`` plus that curvature (residuals of centimetres make
Gauss-Newton alone converge slowly, and not at all on a model far from the subject), damped
as Levenberg-Marquardt's when a step fails to lower F; coordinates at a range end whose
gradient points out of the range are held for the step, and steps are clipped to the ranges.
The first frame starts from the model's default pose, as OpenSim assembles it, every other
from the previous frame's answer moved on at its last rate. A frame stops when its largest
step is at most ``accuracy`` (radians or metres); the steps converge quadratically, so the
answer is then within about ``accuracy^2`` of the minimum (gait2392's walking trial: three
to four steps a frame).

OpenSim minimizes the same F with Simbody's L-BFGS (``Assembler``), which stops when the
gradient norm, relative to ``max(1, |q|)``, is below the setup's ``accuracy``: at its default
``1e-5`` that leaves gait2392's walking trial up to 0.14 degrees and 0.02 mm of marker RMS
from the minimum; at ``1e-9`` within 7e-4 degrees (``tests/core/test_mocap_ik.py`` says
which accuracy each side solves to).

**Reports.** Per frame, as ``InverseKinematicsTool`` reports them: the total squared marker
error, the RMS ``sqrt(total / n)`` over the ``n`` markers in use (a marker missing at that
frame counts as 0 but stays in ``n``, as OpenSim counts it) and the largest error with its
marker.

**Marker placement** (:func:`place_markers`, ``MarkerPlacer``): the static trial averaged over
the time range, one IK solve from the default pose, then every non-fixed model marker moved
onto its averaged experimental position, expressed in its body; model markers that the trial
does not have are removed, as ``Model::deleteUnusedMarkers`` does.
"""

import dataclasses
import math
import os

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

from ..dynamics import compute_joint_jacobians
from ..errors import InvalidInputError
from ..fitting.osim import model_with_fits
from ..io.files import read_input
from ..io.markers import UNITS, read_trc
from ..io.motion import read_motion, write_motion
from ..io.osim import opensim_document, read_osim
from ..lie import so3
from .inverse_dynamics import natural_spline

__all__ = ["IKMarkerTask", "IKCoordinateTask", "IKTaskSet", "IKSetup", "IKResult",
           "MarkerPlacement", "MarkerKinematics", "parse_task_set", "read_ik_setup",
           "parse_ik_setup", "solve_ik", "run_ik", "write_ik_result", "place_markers",
           "DEFAULT_ACCURACY", "MAX_ITERATIONS", "VALUE_TYPES"]

#: the step (radians or metres) below which a frame's solve stops when no accuracy is given:
#: OpenSim's default accuracy
DEFAULT_ACCURACY = 1e-5
#: Newton steps per frame at most (gait2392's walking trial: 3 to 5 a frame, 16 for the first
#: from the default pose)
MAX_ITERATIONS = 100
#: an IKCoordinateTask's value types, as OpenSim names them
VALUE_TYPES = ("default_value", "manual_value", "from_file")
#: how much larger than its diagonal's largest entry the step matrix may be made before the
#: frame is given up (the damping of a step that kept failing to lower F)
_MAX_DAMPING = 1e12
#: how far (radians or metres) the pose may move in a frame's solve before the joints' own
#: dS/dq (the curvature's within-joint term) are evaluated again: the Newton matrix is then
#: within about this fraction of that term, so the steps still shrink some hundred times each
_REFRESH = 0.05
#: regularization of the step matrix relative to its largest diagonal entry: a coordinate
#: that moves no marker and has no task keeps its value instead of making the matrix singular
_RIDGE = 1e-12


# ----------------------------------------------------------------------------- tasks
@dataclasses.dataclass(frozen=True)
class IKMarkerTask:
    """An ``IKMarkerTask``: track marker ``name`` with ``weight`` if ``apply``."""

    name: str
    weight: float = 1.0
    apply: bool = True


@dataclasses.dataclass(frozen=True)
class IKCoordinateTask:
    """An ``IKCoordinateTask``: pull coordinate ``name`` towards a value with ``weight`` if
    ``apply``. ``value_type`` is one of :data:`VALUE_TYPES`; ``value`` (radians or metres) is
    the target of ``manual_value``."""

    name: str
    weight: float = 1.0
    apply: bool = True
    value_type: str = "default_value"
    value: float = 0.0


@dataclasses.dataclass(frozen=True)
class IKTaskSet:
    """An ``IKTaskSet``: marker tasks and coordinate tasks in file order."""

    markers: tuple = ()
    coordinates: tuple = ()

    def marker_weights(self):
        """``{name: weight}`` of the applied marker tasks, in file order."""
        return {t.name: t.weight for t in self.markers if t.apply}

    def applied_coordinates(self):
        """The applied coordinate tasks."""
        return tuple(t for t in self.coordinates if t.apply)


@dataclasses.dataclass(frozen=True)
class IKSetup:
    """An ``InverseKinematicsTool`` setup file.

    name: the tool's name (it names ``<name>_ik_marker_errors.sto``); model_file,
    marker_file, coordinate_file, output_motion_file: as written ("" where empty or
    ``Unassigned``); time_range: ``(start, end)`` s or None (the whole trial); accuracy;
    constraint_weight (``inf`` when absent or ``Infinity``; kept as written: OpenSim 4.6's
    tool hands its solver an infinite weight whatever it says, and :class:`MarkerKinematics`
    refuses the coupled coordinates it would weigh); report_errors; results_directory
    (default the setup's folder); tasks: :class:`IKTaskSet`; folder: the setup file's folder,
    against which relative paths are resolved (:meth:`path`).
    """

    name: str
    model_file: str
    marker_file: str
    coordinate_file: str
    output_motion_file: str
    time_range: tuple
    accuracy: float
    constraint_weight: float
    report_errors: bool
    results_directory: str
    tasks: IKTaskSet
    folder: str = ""

    def path(self, name):
        """``name`` (a file named in the setup) resolved against the setup's folder."""
        return name if os.path.isabs(name) else os.path.normpath(os.path.join(self.folder, name))


def _text(el, tag):
    child = el.find(tag)
    text = "" if child is None or child.text is None else child.text.strip()
    return "" if text == "Unassigned" else text


def _number(el, tag, where, default):
    text = _text(el, tag)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise InvalidInputError(f"{where}: <{tag}> is {text!r}, not a number: correct the "
                                "setup file") from None
    if math.isnan(value):
        raise InvalidInputError(f"{where}: <{tag}> is NaN: give it a number")
    return value


def _flag(el, tag, where, default):
    text = _text(el, tag).lower()
    if not text:
        return default
    if text not in ("true", "false"):
        raise InvalidInputError(f"{where}: <{tag}> is {text!r}; write true or false")
    return text == "true"


def parse_task_set(element, source):
    """The :class:`IKTaskSet` of an ``<IKTaskSet>`` element (``source`` names the file in
    messages). A weight must be a number >= 0, a value type one of :data:`VALUE_TYPES`."""
    objects = element.find("objects")
    markers, coordinates = [], []
    for el in (objects if objects is not None else ()):
        name = el.get("name", "")
        where = f"{source}: {el.tag} {name!r}"
        if el.tag not in ("IKMarkerTask", "IKCoordinateTask"):
            raise InvalidInputError(f"{source}: <{el.tag}> in the IKTaskSet is not a task; "
                                    "use IKMarkerTask or IKCoordinateTask")
        if not name:
            raise InvalidInputError(f"{source}: an {el.tag} has no name: name the marker or "
                                    "coordinate it is for")
        weight = _number(el, "weight", where, 0.0)
        if not (weight >= 0.0 and math.isfinite(weight)):
            raise InvalidInputError(f"{where}: weight {weight:g} must be a finite number >= 0")
        apply = _flag(el, "apply", where, True)
        if el.tag == "IKMarkerTask":
            markers.append(IKMarkerTask(name, weight, apply))
            continue
        value_type = _text(el, "value_type") or "default_value"
        if value_type not in VALUE_TYPES:
            raise InvalidInputError(f"{where}: value_type {value_type!r} is not one of "
                                    f"{', '.join(VALUE_TYPES)}")
        coordinates.append(IKCoordinateTask(name, weight, apply, value_type,
                                            _number(el, "value", where, 0.0)))
    return IKTaskSet(tuple(markers), tuple(coordinates))


def read_ik_setup(path):
    """The :class:`IKSetup` in the setup file ``path``."""
    path = os.fspath(path)
    return parse_ik_setup(read_input(path, "inverse kinematics setup"), path)


def parse_ik_setup(data, source="<string>"):
    """Parse the bytes or text of an ``InverseKinematicsTool`` setup file; relative paths in
    it are resolved against ``source``'s folder."""
    tool = opensim_document(data, source, "an inverse kinematics setup").find(
        "InverseKinematicsTool")
    if tool is None:
        raise InvalidInputError(f"{source}: no <InverseKinematicsTool>: this is not an "
                                "inverse kinematics setup file")
    where = f"{source}: InverseKinematicsTool"
    task_el = tool.find("IKTaskSet")
    tasks = parse_task_set(task_el, source) if task_el is not None else IKTaskSet()
    time_range = None
    text = _text(tool, "time_range")
    if text:
        try:
            time_range = tuple(float(v) for v in text.split())
        except ValueError:
            time_range = ()
        if len(time_range) != 2 or not all(math.isfinite(v) for v in time_range):
            raise InvalidInputError(f"{where}: <time_range> is {text!r}; give two times in "
                                    "seconds, start and end")
    weight = _text(tool, "constraint_weight")
    folder = os.path.dirname(os.path.abspath(source)) if source != "<string>" else os.getcwd()
    results = _text(tool, "results_directory")
    return IKSetup(
        name=tool.get("name", "") or "ik", model_file=_text(tool, "model_file"),
        marker_file=_text(tool, "marker_file"), coordinate_file=_text(tool, "coordinate_file"),
        output_motion_file=_text(tool, "output_motion_file"), time_range=time_range,
        accuracy=_number(tool, "accuracy", where, DEFAULT_ACCURACY),
        constraint_weight=math.inf if weight in ("", "Infinity", "inf") else
        _number(tool, "constraint_weight", where, math.inf),
        report_errors=_flag(tool, "report_errors", where, True),
        results_directory=os.path.normpath(os.path.join(folder, results)) if results else folder,
        tasks=tasks, folder=folder)


# ----------------------------------------------------------------------------- kinematics
class MarkerKinematics:
    """The markers ``names`` of an :class:`~core.io.osim.OsimModel` in ground, their Jacobian
    with respect to the model's free coordinates and the curvature of a weighted sum of them.

    Built on :meth:`OsimModel.to_core_model` with the locked coordinates held at their
    default values; ``free`` (nf,) are the indices of the free coordinates in the model's q,
    ``lower``/``upper`` (nf,) their bounds (the ranges of clamped coordinates, else
    infinite). InvalidInputError when a name is not a marker of the model, or when the model
    has an enforced coordinate coupler whose dependent coordinate is free (inverse kinematics
    does not solve constraints).
    """

    def __init__(self, model, names):
        missing = [n for n in names if n not in model.markers]
        if missing:
            raise InvalidInputError(f"model {model.name!r} has no markers {_listed(missing)}; "
                                    "add them to the model's MarkerSet or leave them out")
        coupled = [c.name for c in model.couplers if c.enforced
                   and not model.coordinates[c.dependent].locked]
        if coupled:
            raise InvalidInputError(
                f"model {model.name!r}: coordinate couplers {_listed(coupled)} tie coordinates "
                "together, which this inverse kinematics does not solve; lock their dependent "
                "coordinates in the model")
        self.model = model
        self.names = tuple(names)
        core, free_names = model.to_core_model()
        self.core, self.data = core, core.create_data()
        index = {n: i for i, n in enumerate(model.coordinates)}
        self.free = np.array([index[n] for n in free_names], dtype=int)
        self.lower = np.full(len(self.free), -np.inf)
        self.upper = np.full(len(self.free), np.inf)
        for k, n in enumerate(free_names):
            c = model.coordinates[n]
            if c.clamped:
                self.lower[k], self.upper[k] = c.range
        bodies, local = [], []
        for n in self.names:
            marker = model.markers[n]
            p = np.append(np.asarray(marker.location, dtype=float), 1.0)
            if marker.body == "ground":
                bodies.append(-1)
                local.append(p[:3])
            else:
                bodies.append(core.body_index(marker.body))
                local.append((model.core_to_body(marker.body) @ p)[:3])
        self.bodies = np.array(bodies, dtype=int)
        self.local = np.array(local).reshape(-1, 3)
        on_body = self.bodies >= 0
        self._on_body = on_body
        self._mask = np.zeros((len(self.names), core.nq))
        self._mask[on_body] = core.ancestry[self.bodies[on_body]][:, core.dof_body]
        core.compile()
        # proximal[a, k]: coordinate a's body is k's or one of its ancestors
        self._proximal = core.ancestry[core.dof_body][:, core.dof_body].T > 0
        one = core.q_count[core.dof_body] == 1
        self._one_dof = np.nonzero(one)[0]
        self._multi = [(int(b), slice(int(core.q_start[b]), int(core.q_start[b] + core.q_count[b])))
                       for b in core.multi_bodies]

    def evaluate(self, q_free):
        """``(x (M, 3), J (M, 3, nf))``: marker positions in ground (m) and their derivatives
        with respect to the free coordinates ``q_free (nf,)``."""
        data = self.data
        S = compute_joint_jacobians(self.core, data, q_free)
        x = self.local.copy()
        T = data.oMi[self.bodies[self._on_body]]
        x[self._on_body] = (T[:, :3, :3] @ self.local[self._on_body, :, None])[:, :, 0] \
            + T[:, :3, 3]
        J = S[:, 3:].T - so3.hat(x) @ S[:, :3].T                          # v_a + w_a x x
        J *= self._mask[:, None, :]
        return x, J

    def joint_derivatives(self, q_free):
        """The body-frame ``dS/dq (n, 6, n)`` of each joint with several coordinates at
        ``q_free``, for :meth:`curvature`."""
        return [self.core.joints[b].evaluate(q_free[sl])[2] for b, sl in self._multi]

    def curvature(self, x, J, c, derivatives):
        """``(nf, nf)``: ``sum_m c_m . d^2 x_m / dq dq`` for weights ``c (M, 3)``, at the
        pose of the last :meth:`evaluate` (which gave ``x``, ``J``), with the joints' own
        ``derivatives`` (:meth:`joint_derivatives`).

        With the world Jacobian columns ``s_a = [w_a; v_a]`` and the marker columns ``j_a =
        v_a + w_a x x``: for coordinates a and k that both move the marker, a's body k's or
        an ancestor of it, ``d j_k / dq_a = w_a x j_k`` (the column ``s_k`` moves with a:
        ``ds_k/dq_a = ad_{s_a} s_k``; the Jacobi identity folds the terms), and when a and k
        are coordinates of one joint the joint's own ``dS_k/dq_a`` adds its twist ``h =
        Ad_T dS_k/dq_a`` acting on the marker: ``h_v + h_w x x``. Summed over the markers
        that term is ``h`` paired with the wrench ``[sum x_m x c_m; sum c_m]`` of the markers
        the joint moves.
        """
        data = self.data
        nf = J.shape[2]
        P = so3.hat(c) @ data.S_world[:, :3].T * self._mask[:, None, :]     # c_m x w_a
        A = P.reshape(-1, nf).T @ J.reshape(-1, nf)
        H = np.where(self._proximal, A, A.T)
        torque = (so3.hat(x) @ c[:, :, None])[:, :, 0]
        wrench = self._mask.T @ np.concatenate([torque, c], axis=1)             # (nf, 6)
        one = self._one_dof
        H[one, one] += np.einsum("ki,ki->k", data.W[self.core.dof_body[one], 1], wrench[one])
        for (b, sl), dS in zip(self._multi, derivatives):
            H[sl, sl] += np.einsum("ij,ajk,i->ak", data.Ad[b], dS, wrench[sl.start])
        return H

    def positions(self, q_free):
        """``(M, 3)`` marker positions in ground at ``q_free``."""
        return self.evaluate(q_free)[0]


# ----------------------------------------------------------------------------- the solver
class _Problem:
    """The weighted least-squares problem of one set of markers and coordinate tasks
    (module docstring), solved frame by frame."""

    def __init__(self, kin, weights, tasks, accuracy):
        self.kin = kin
        self.weights = np.asarray(weights, dtype=float)
        free = {int(i): k for k, i in enumerate(kin.free)}
        index = {n: i for i, n in enumerate(kin.model.coordinates)}
        self.task_rows = np.array([free[index[t.name]] for t in tasks], dtype=int)
        self.task_sqrt_w = np.sqrt(np.array([t.weight for t in tasks], dtype=float))
        self.accuracy = accuracy
        self.nf = len(kin.free)

    def residual(self, q, obs, seen, sw, targets, derivatives):
        """``(r, J, C)`` at ``q (nf,)`` for observations ``obs (M, 3)`` (``seen`` the finite
        ones), marker row weights ``sw (M,)`` and task targets: the residual, its Jacobian
        and its curvature ``sum_i r_i d^2 r_i / dq dq`` (the coordinate tasks are linear),
        with the joints' own ``derivatives`` (:meth:`MarkerKinematics.curvature`)."""
        x, Jx = self.kin.evaluate(q)
        e = np.where(seen[:, None], x - obs, 0.0)
        r = np.concatenate([(e * sw[:, None]).ravel(),
                            self.task_sqrt_w * (q[self.task_rows] - targets)])
        J = np.zeros((r.size, self.nf))
        J[:e.size] = (Jx * sw[:, None, None]).reshape(-1, self.nf)
        J[e.size + np.arange(len(self.task_rows)), self.task_rows] = self.task_sqrt_w
        return r, J, self.kin.curvature(x, Jx, e * (sw * sw)[:, None], derivatives)

    def solve(self, q, obs, targets):
        """Minimize F from ``q (nf,)`` (clipped into the bounds) for one frame by damped
        Newton steps (module docstring): returns ``(q, iterations, converged)``."""
        if self.nf == 0:                        # every coordinate locked: nothing to solve
            return q, 0, True
        lower, upper = self.kin.lower, self.kin.upper
        seen = np.all(np.isfinite(obs), axis=1)
        w = np.where(seen, self.weights, 0.0)
        total = w.sum()
        sw = np.sqrt(w / total) if total > 0 else w
        q = np.clip(q, lower, upper)
        taken, derivatives = q, self.kin.joint_derivatives(q)
        r, J, C = self.residual(q, obs, seen, sw, targets, derivatives)
        F = r @ r
        damping = 0.0
        for it in range(1, MAX_ITERATIONS + 1):
            g = J.T @ r
            H = J.T @ J + C
            scale = max(float(np.max(np.diag(H))), 1e-300)
            held = ((q <= lower) & (g > 0)) | ((q >= upper) & (g < 0))
            step = np.zeros(self.nf)
            free = ~held
            A = H[np.ix_(free, free)]
            A[np.diag_indices_from(A)] += (_RIDGE + damping) * scale
            try:
                step[free] = -cho_solve(cho_factor(A), g[free])
            except LinAlgError:
                damping = max(10 * damping, 1e-9)
                continue
            qn = np.clip(q + step, lower, upper)
            moved = float(np.max(np.abs(qn - q)))
            if np.max(np.abs(qn - taken)) > _REFRESH:
                taken, derivatives = qn, self.kin.joint_derivatives(qn)
            rn, Jn, Cn = self.residual(qn, obs, seen, sw, targets, derivatives)
            Fn = rn @ rn
            if Fn <= F:
                q, r, J, C, F = qn, rn, Jn, Cn, Fn
                damping *= 0.1
                if damping < 1e-12:
                    damping = 0.0
                if moved <= self.accuracy:
                    return q, it, True
            elif moved <= self.accuracy:               # rounding: F is at its minimum
                return q, it, True
            else:
                damping = max(10 * damping, 1e-9)
                if damping > _MAX_DAMPING:
                    return q, it, False
        return q, MAX_ITERATIONS, False


# ----------------------------------------------------------------------------- results
@dataclasses.dataclass(frozen=True, eq=False)
class IKResult:
    """The outcome of :func:`solve_ik`.

    time: ``(N,)`` s, the trial's frames solved; frames: ``(N,)`` their rows in the trial;
    names: the model's coordinate names (q order); rotational: ``(nq,)`` bool, which are
    angles; q: ``(N, nq)`` radians or metres; errors: ``(N, 3)`` per frame the total squared
    marker error (m^2), the RMS and the largest marker error (m) (module docstring); worst:
    the marker with the largest error at each frame; markers: the markers tracked;
    iterations: ``(N,)`` solver steps per frame; warnings: what was skipped or clipped, in
    words; status: ``"solved"`` or ``"cancelled"`` (then no frames).
    """

    time: np.ndarray
    frames: np.ndarray
    names: tuple
    rotational: np.ndarray
    q: np.ndarray
    errors: np.ndarray
    worst: tuple
    markers: tuple
    iterations: np.ndarray
    warnings: tuple
    status: str

    def degrees(self):
        """``q (N, nq)`` with the angles in degrees, as OpenSim writes motions."""
        out = self.q.copy()
        out[:, self.rotational] = np.rad2deg(out[:, self.rotational])
        return out


@dataclasses.dataclass(frozen=True, eq=False)
class MarkerPlacement:
    """The outcome of :func:`place_markers`.

    model: a copy of the model whose non-fixed markers sit on the averaged experimental
    markers at the static pose, without the markers the trial lacks; q: ``(nq,)`` the static
    pose (the model's coordinates' order); errors: ``(3,)`` total squared, RMS and largest
    marker error of the solve (before the markers moved); worst: the marker with the largest
    error; markers: the markers the solve tracked; moved: the markers moved; time_range: the
    averaged span (s) after clipping to the trial; warnings.
    """

    model: object
    q: np.ndarray
    errors: np.ndarray
    worst: str
    markers: tuple
    moved: tuple
    time_range: tuple
    warnings: tuple


def _marker_errors(x, obs, names):
    """``([total squared, RMS, max], worst name)`` of one frame as OpenSim reports them: a
    marker not seen counts 0 and stays in the RMS's count."""
    with np.errstate(invalid="ignore"):
        d2 = np.where(np.all(np.isfinite(obs), axis=1), np.sum((x - obs) ** 2, axis=1), 0.0)
    total = float(d2.sum())
    worst = int(np.argmax(d2)) if len(d2) else -1
    rms = math.sqrt(total / len(d2)) if len(d2) else 0.0
    return [total, rms, math.sqrt(float(d2[worst])) if len(d2) else 0.0], \
        (names[worst] if worst >= 0 and d2[worst] > 0 else "")


def _nearest_row(time, t):
    """OpenSim's ``TimeSeriesTable::getNearestRowIndexForTime``: the row nearest ``t``, the
    later one on a tie."""
    i = int(np.searchsorted(time, t, side="left"))
    if i >= len(time):
        return len(time) - 1
    if i == 0:
        return 0
    return i if time[i] - t <= t - time[i - 1] else i - 1


def _listed(names):
    """Names as a reader would list them: ``A, B, C``."""
    return ", ".join(names)


def _times(times):
    """``t = a, b, c...``: the first five of ``times`` (s)."""
    return f"t = {', '.join(f'{t:g}' for t in times[:5])}{'...' if len(times) > 5 else ''}"


def _named(trial):
    """`` NAME`` of the trial's file, or "" for a trial not read from a file."""
    return f" {os.path.basename(trial.source)}" if trial.source else ""


def _tracked_markers(model, trial, tasks, warnings):
    """The trial's markers (file order) that an applied marker task names (every trial
    marker, weight 1, when there are no marker tasks) and the model has, with their weights,
    as OpenSim's MarkersReference and InverseKinematicsSolver pick them; warnings name the
    tasks' markers left out."""
    weights = tasks.marker_weights()
    missing = [n for n in weights if n not in trial.names]
    if missing:
        warnings.append(f"markers {_listed(missing)} have tasks but are not in the trial"
                        f"{_named(trial)}; they are skipped")
    names = [n for n in trial.names if not weights or n in weights]
    absent = [n for n in names if n not in model.markers]
    if absent and weights:
        warnings.append(f"markers {_listed(absent)} have tasks but the model {model.name!r} "
                        "has no such markers; they are skipped")
    names = [n for n in names if n in model.markers]
    if not names:
        raise InvalidInputError(
            f"no marker of the trial{_named(trial)} is both in the task set and on the "
            f"model {model.name!r}: name the model's markers in the marker tasks, or use a "
            "trial with the model's markers")
    if len(names) < 4:
        warnings.append(f"only {len(names)} markers are tracked ({_listed(names)}); the pose "
                        "is poorly determined with fewer than 4")
    return names, np.array([weights.get(n, 1.0) for n in names], dtype=float)


def _coordinate_tasks(model, tasks, coordinate_values, warnings):
    """The applied coordinate tasks on free coordinates, and a function of time giving their
    targets ``(nc,)``. InvalidInputError for a task on a coordinate the model lacks, or a
    ``from_file`` task without values for it."""
    applied = tasks.applied_coordinates()
    unknown = [t.name for t in applied if t.name not in model.coordinates]
    if unknown:
        raise InvalidInputError(f"coordinate tasks name {_listed(unknown)}, which the model "
                                f"{model.name!r} does not have: correct the task set")
    locked = [t.name for t in applied if model.coordinates[t.name].locked]
    if locked:
        warnings.append(f"coordinates {_listed(locked)} are locked: they stay at their default "
                        "values and their tasks are dropped")
    kept = [t for t in applied if not model.coordinates[t.name].locked]
    constant = np.array([model.coordinates[t.name].default if t.value_type == "default_value"
                         else t.value for t in kept], dtype=float)
    splines = {}
    from_file = [t.name for t in kept if t.value_type == "from_file"]
    if from_file:
        if coordinate_values is None:
            raise InvalidInputError(f"coordinate tasks {_listed(from_file)} take their values "
                                    "from a coordinate file, and none was given: name the file "
                                    "in the setup or change the tasks' value_type")
        lacking = [n for n in from_file if n not in coordinate_values.names]
        if lacking:
            raise InvalidInputError(f"the coordinate file has no columns {_listed(lacking)} that "
                                    "from_file tasks ask for: add them or change the tasks")
        rotational = {n: n in model.coordinates and model.is_rotational(n)
                      for n in coordinate_values.names}
        values = coordinate_values.values_in_radians(rotational)
        for i, task in enumerate(kept):
            if task.value_type == "from_file":
                column = values[:, coordinate_values.names.index(task.name)]
                splines[i] = natural_spline(coordinate_values.time, column, 5)

    def targets(time):
        out = constant.copy()
        for i, spline in splines.items():
            out[i] = float(spline(time))
        return out

    return kept, targets


def solve_ik(model, trial, tasks, *, time_range=None, coordinate_values=None,
             accuracy=DEFAULT_ACCURACY, fits=None, progress=None):
    """Inverse kinematics of ``trial`` (a :class:`~core.io.markers.MarkerTrial`) on ``model``
    (an :class:`~core.io.osim.OsimModel` with markers) with ``tasks`` (:class:`IKTaskSet`),
    frame by frame as ``InverseKinematicsTool`` (module docstring).

    time_range: ``(start, end)`` s, clipped to the trial as OpenSim clips it (a warning says
    so); a range that misses the trial raises. The frames solved run from the row nearest
    ``start`` to the row nearest ``end``. coordinate_values: a :class:`~core.io.motion.Motion`
    for ``from_file`` coordinate tasks, interpolated at the frames' times by the natural
    quintic spline through its rows (OpenSim's ``GCVSplineSet(5, ...)`` with zero error
    variance, :func:`core.mocap.inverse_dynamics.natural_spline`; at least 6 rows).
    accuracy: the step, in radians or metres, below which a frame's solve stops. fits:
    ``{joint name: JointDocument}`` of fitted spline joints that replace the model's exact
    joints (:func:`core.fitting.osim.model_with_fits`). progress: ``progress(fraction) ->
    bool`` after each frame; False cancels (status ``"cancelled"``, no frames).
    Returns :class:`IKResult`.
    """
    if fits:
        model = model_with_fits(model, fits)
    accuracy = float(accuracy)
    if not (accuracy > 0 and math.isfinite(accuracy)):
        raise InvalidInputError(f"accuracy must be a positive number of radians or metres, got "
                                f"{accuracy!r}")
    warnings = []
    names, weights = _tracked_markers(model, trial, tasks, warnings)
    kept, targets = _coordinate_tasks(model, tasks, coordinate_values, warnings)
    time = np.asarray(trial.time, dtype=float)
    start, end = (time[0], time[-1]) if time_range is None else map(float, time_range)
    if not end >= start:
        raise InvalidInputError(f"the time range {start:g}..{end:g} s ends before it starts: "
                                "give the start time first")
    lo, hi = max(time[0], start), min(time[-1], end)
    if not hi >= lo:
        raise InvalidInputError(
            f"the time range {start:g}..{end:g} s misses the trial{_named(trial)}, which "
            f"spans {time[0]:g}..{time[-1]:g} s: choose a range inside it")
    if (lo, hi) != (start, end):
        warnings.append(f"the time range {start:g}..{end:g} s is clipped to the trial's "
                        f"{lo:g}..{hi:g} s")
    rows = np.arange(_nearest_row(time, lo), _nearest_row(time, hi) + 1)
    columns = [trial.names.index(n) for n in names]
    obs = trial.positions[rows][:, columns]
    gaps = {n: int(k) for n, k in zip(names, np.sum(~np.all(np.isfinite(obs), axis=2), axis=0))
            if k}
    if gaps:
        warnings.append("markers missing at some frames are skipped there: " + ", ".join(
            f"{n} ({k} of {len(rows)} frames)" for n, k in gaps.items()))
    kin = MarkerKinematics(model, names)
    problem = _Problem(kin, weights, kept, accuracy)
    q_all = model.default_q()
    q = q_all[kin.free].copy()
    Q = np.tile(q_all, (len(rows), 1))
    errors = np.zeros((len(rows), 3))
    worst, steps, failed, blind = [], np.zeros(len(rows), dtype=int), [], []
    for k, row in enumerate(rows):
        if np.all(~np.isfinite(obs[k])) and not kept:
            blind.append(time[row])
        else:
            # the previous frame's pose moved on at its last rate (a start within the
            # second difference of the motion, where Newton's steps converge quadratically)
            start = q if k < 2 else 2 * q - Q[k - 2, kin.free]
            q, steps[k], converged = problem.solve(start, obs[k], targets(time[row]))
            if not converged:
                failed.append(time[row])
        Q[k, kin.free] = q
        e, w = _marker_errors(kin.positions(q), obs[k], names)
        errors[k], worst = e, worst + [w]
        if progress is not None and not progress((k + 1) / len(rows)):
            return IKResult(time=np.zeros(0), frames=np.zeros(0, dtype=int),
                            names=model.coordinate_names,
                            rotational=np.array([model.is_rotational(n)
                                                 for n in model.coordinates]),
                            q=np.zeros((0, model.nq)), errors=np.zeros((0, 3)), worst=(),
                            markers=tuple(names), iterations=np.zeros(0, dtype=int),
                            warnings=tuple(warnings), status="cancelled")
    if blind:
        warnings.append(f"no tracked marker is seen at {len(blind)} frames ({_times(blind)}); "
                        "they keep the pose of the frame before")
    if failed:
        warnings.append(f"the solve did not settle to the accuracy {accuracy:g} at "
                        f"{len(failed)} frames ({_times(failed)}); their poses are the best "
                        "found")
    return IKResult(time=time[rows].copy(), frames=rows, names=model.coordinate_names,
                    rotational=np.array([model.is_rotational(n) for n in model.coordinates]),
                    q=Q, errors=errors, worst=tuple(worst), markers=tuple(names),
                    iterations=steps, warnings=tuple(warnings), status="solved")


def write_ik_result(result, motion_path=None, errors_path=None):
    """Write ``result`` as OpenSim's InverseKinematicsTool does: if ``motion_path``, the
    coordinates (angles in degrees, first line ``Coordinates``); if ``errors_path``, the
    marker errors (``total_squared_error``, ``marker_error_RMS``, ``marker_error_max``, first
    line ``Model Marker Errors from IK``). A cancelled result raises: it has no rows to
    write."""
    if result.status != "solved":
        raise InvalidInputError("the inverse kinematics was cancelled: there is nothing to "
                                "write; run it to the end first")
    if errors_path is not None:
        write_motion(errors_path, ("total_squared_error", "marker_error_RMS",
                                   "marker_error_max"), result.time, result.errors,
                     in_degrees=False, name="Model Marker Errors from IK")
    if motion_path is not None:
        write_motion(motion_path, result.names, result.time, result.degrees(),
                     in_degrees=True, name="Coordinates")


def run_ik(setup, *, model=None, trial=None, fits=None, progress=None):
    """Run an :class:`IKSetup` as ``InverseKinematicsTool.run`` does: read its model (unless
    ``model`` is given), marker file (unless ``trial``) and coordinate file, solve
    (:func:`solve_ik` with the setup's time range, tasks and accuracy, and ``fits``) and write
    the motion to ``output_motion_file`` (if named) and, with ``report_errors``, the marker
    errors to ``<results_directory>/<name>_ik_marker_errors.sto`` (the folder made if
    missing). Files are written only when every frame is solved (a cancel or an error writes
    nothing). Returns the :class:`IKResult`."""
    for what, value, given in (("model_file", setup.model_file, model),
                               ("marker_file", setup.marker_file, trial)):
        if given is None and not value:
            raise InvalidInputError(f"the setup names no {what}: name one in the setup file")
    if model is None:
        model = read_osim(setup.path(setup.model_file))
    if trial is None:
        trial = read_trc(setup.path(setup.marker_file))
    values = read_motion(setup.path(setup.coordinate_file)) if setup.coordinate_file else None
    result = solve_ik(model, trial, setup.tasks, time_range=setup.time_range,
                      coordinate_values=values, accuracy=setup.accuracy, fits=fits,
                      progress=progress)
    if result.status == "solved":
        errors = None
        if setup.report_errors:
            os.makedirs(setup.results_directory, exist_ok=True)    # as OpenSim makes it
            errors = os.path.join(setup.results_directory, f"{setup.name}_ik_marker_errors.sto")
        write_ik_result(result, setup.path(setup.output_motion_file)
                        if setup.output_motion_file else None, errors)
    return result


# ----------------------------------------------------------------------------- marker placer
def _static_rows(trial, start, end):
    """The two averages of a static trial over ``start..end`` that MarkerPlacer takes:
    ``TimeSeriesTable::averageRow`` (rows with ``start <= t <= end``; a gap in any makes the
    marker NaN), solved for the pose, and ``MarkerData::averageFrames`` (from the last row at
    or before ``start`` to the first at or after ``end``, gaps left out), onto which the
    markers move. Returns ``(solve (M, 3), move (M, 3), rows (indices of the second))``."""
    time = trial.time
    inside = (time >= start) & (time <= end)
    solve = trial.positions[inside].mean(axis=0)
    first, last = trial.frame_range(start, end)
    rows = np.arange(first, last + 1)
    block = trial.positions[rows]
    seen = np.all(np.isfinite(block), axis=2)
    count = seen.sum(axis=0)
    total = np.where(seen[:, :, None], block, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        move = np.where(count[:, None] > 0, total / np.maximum(count, 1)[:, None], np.nan)
    return solve, move, rows


def place_markers(model, trial, tasks, *, time_range, coordinate_values=None,
                  max_marker_movement=-1.0, accuracy=1e-9):
    """OpenSim's ``MarkerPlacer`` (the third step of the Scale tool): pose ``model`` to a
    static ``trial`` and move its markers onto the trial's.

    time_range: ``(start, end)`` s, clipped to the trial; the trial is averaged over it
    (:func:`_static_rows`' two averages, as MarkerPlacer takes them). The model's markers that
    the trial does not have are removed (``Model::deleteUnusedMarkers``). One IK solve of the
    averaged frame from the model's default pose with ``tasks`` (:class:`IKTaskSet`: marker
    weights and coordinate tasks; ``default_value`` targets are the default values;
    ``from_file`` ones come from ``coordinate_values``, a Motion, at ``start``) gives the
    static pose; then each marker not ``fixed`` is placed at its averaged position expressed
    in its body (a marker never seen in the range stays, with a warning).
    max_marker_movement: when positive, a warning names each marker that moved more than this
    along an axis within the range, in the trial file's units as OpenSim compares it.
    accuracy: the solve's step tolerance (radians or metres). The model's coordinate default
    values are kept, as OpenSim writes them; the static pose is :attr:`MarkerPlacement.q`.

    OpenSim solves the static pose at its AssemblySolver's default accuracy (1e-4, which
    MarkerPlacer does not change), where L-BFGS stops short of the minimum: on gait2392's
    static trial its pose is up to 0.6 degrees from the one found here (whose goal is lower),
    which puts its placed markers up to 9 mm from these.
    Returns :class:`MarkerPlacement`.
    """
    if time_range is None or len(time_range) != 2:
        raise InvalidInputError("place_markers needs a time_range (start, end) in seconds over "
                                "which to average the static trial")
    time = trial.time
    start, end = max(float(time_range[0]), time[0]), min(float(time_range[1]), time[-1])
    if not end > start:
        raise InvalidInputError(
            f"the time range {time_range[0]:g}..{time_range[1]:g} s leaves no span of the "
            f"static trial{_named(trial)}, which spans "
            f"{time[0]:g}..{time[-1]:g} s: choose a range inside it with end after start")
    warnings = []
    kept_markers = {n: m for n, m in model.markers.items() if n in trial.names}
    removed = [n for n in model.markers if n not in kept_markers]
    if removed:
        warnings.append(f"model markers {_listed(removed)} are not in the static trial and are "
                        "removed, as OpenSim's marker placer removes them")
    placed = dataclasses.replace(model, markers={n: dataclasses.replace(m) for n, m in
                                                 kept_markers.items()})
    solve_row, move_row, rows = _static_rows(trial, start, end)
    if max_marker_movement > 0:
        factor = UNITS.get(str(trial.units).lower(), 1.0)
        block = trial.positions[rows] / factor
        with np.errstate(invalid="ignore"):
            spread = np.nanmax(block, axis=0) - np.nanmin(block, axis=0)
        for n, s in zip(trial.names, np.nanmax(np.nan_to_num(spread, nan=-np.inf), axis=1)):
            if s > max_marker_movement:
                warnings.append(f"marker {n} moves {s:g} {trial.units} within "
                                f"{start:g}..{end:g} s, more than max_marker_movement "
                                f"{max_marker_movement:g}")
    static = dataclasses.replace(trial, time=np.array([start]),
                                 positions=solve_row[None], frames=trial.frames[rows[:1]])
    result = solve_ik(placed, static, tasks, coordinate_values=coordinate_values,
                      accuracy=accuracy)
    warnings.extend(result.warnings)
    q = result.q[0]
    poses = placed.body_poses(q)
    moved = []
    for name, marker in placed.markers.items():
        if marker.fixed:
            continue
        x = move_row[trial.names.index(name)]
        if not np.all(np.isfinite(x)):
            warnings.append(f"marker {name} has no position in {start:g}..{end:g} s of the "
                            "static trial; it stays where it was")
            continue
        T = poses[marker.body]
        marker.location = T[:3, :3].T @ (x - T[:3, 3])
        moved.append(name)
    return MarkerPlacement(model=placed, q=q, errors=result.errors[0], worst=result.worst[0],
                           markers=result.markers, moved=tuple(moved),
                           time_range=(start, end), warnings=tuple(warnings))
