"""Muscle forces: OpenSim's DeGrooteFregly2016Muscle with a rigid tendon, and its first-order
activation dynamics.

The force model is De Groote, Kinney, Rao and Fregly (2016, Ann. Biomed. Eng. 44(10),
supplement) with the constants OpenSim 4.6 uses, for every muscle kind: a muscle read as a
``Thelen2003Muscle``, ``Millard2012EquilibriumMuscle``, ``DeGrooteFregly2016Muscle`` or an
older type (``Schutte1993Muscle_Deprecated``, ``Delp1990Muscle_Deprecated``,
``RigidTendonMuscle``, ...) keeps its parameters as read (:attr:`core.muscles.paths.Muscle.extra`)
and is simulated with DeGroote's curves, its parameters mapped as OpenSim's
``DeGrooteFregly2016Muscle::replaceMuscles`` maps Thelen and Millard muscles
(:meth:`HillParameters.from_muscle`).

Curves (normalized fibre length ``l = l_M / l_opt``, normalized fibre velocity ``v = v_M /
(v_max l_opt)``, ``v_max`` the max contraction velocity in optimal lengths per second):

* active force-length: ``f_L(l) = sum_i b1i exp(-(x - b2i)^2 / (2 (b3i + b4i x)^2))`` with
  ``x = (l - 1) / s + 1`` (``s`` the active force width scale), three Gaussian-like terms
  (:data:`ACTIVE_FL`);
* force-velocity: ``f_V(v) = d1 ln(d2 v + d3 + sqrt((d2 v + d3)^2 + 1)) + d4`` (evaluated as
  ``d1 asinh(d2 v + d3) + d4``, which keeps its digits at fast lengthening) and its
  inverse ``v = (sinh((f - d4) / d1) - d3) / d2`` (:data:`FORCE_VELOCITY`; ``f_V(-1) = 0``,
  ``f_V(0) = 1``);
* passive force-length: ``f_PE(l) = (exp(kPE (l - 1) / e0) - o) / (exp(kPE) - o)`` with
  ``o = exp(kPE (0.2 - 1) / e0)`` (zero at ``l = 0.2``), ``e0`` the passive fibre strain at one
  normalized force; its integral is the fibre's elastic energy.

Rigid tendon (OpenSim's ``ignore_tendon_compliance``): the tendon keeps its slack length
``l_Ts``, the fibre has the constant width ``w = l_opt sin(alpha_opt)``, so with the path
length ``L`` and lengthening speed ``L_dot``

    l_M = sqrt((L - l_Ts)^2 + w^2),   cos(alpha) = (L - l_Ts) / l_M,   v_M = L_dot cos(alpha)

and the tension along the path is ``F_T = Fmax (a f_L(l) f_V(v) + f_PE(l) + beta v)
cos(alpha)`` (``beta`` the fibre damping). Since ``d(l_M cos alpha) = dL`` and ``dl_M = cos
alpha dL``, ``F_T dL = F_M dl_M``: the passive elastic part is conservative with the energy
``Fmax l_opt int f_PE dl`` (:func:`elastic_energy`). Where ``L <= l_Ts`` (the tendon is slack)
the muscle pulls with no force; OpenSim instead goes on with a negative ``cos(alpha)`` (it logs
the muscle as buckling), which pushes.

Activation dynamics (OpenSim's form of De Groote's smooth switch): with excitation u and
activation a,

    f = 0.5 tanh(b (u - a)),   z = 0.5 + 1.5 a,
    da/dt = [(f + 0.5) / (tau_a z) + (0.5 - f) z / tau_d] (u - a)

with the activation and deactivation time constants ``tau_a, tau_d`` and the smoothing b
(:func:`activation_rate`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from .paths import MUSCLE_KINDS

__all__ = ["ACTIVE_FL", "FORCE_VELOCITY", "KPE", "MIN_NORM_FIBER_LENGTH",
           "active_force_length", "active_force_length_derivative", "force_velocity",
           "force_velocity_derivative", "force_velocity_inverse", "passive_force_length",
           "passive_force_length_derivative", "passive_force_length_integral",
           "activation_rate", "HillParameters", "MuscleArrays", "RigidTendonState",
           "rigid_tendon", "elastic_energy", "check_activation"]

#: ``(3, 4)`` rows ``(b1i, b2i, b3i, b4i)`` of the active force-length curve's three terms
#: (OpenSim's values, b11 set so that ``f_L(1) = 1``)
ACTIVE_FL = np.array([[0.8150671134243542, 1.055033428970575, 0.162384573599574,
                       0.063303448465465],
                      [0.433004984392647, 0.716775413397760, -0.029947116970696,
                       0.200356847296188],
                      [0.1, 1.0, 0.353553390593274, 0.0]])
#: ``(d1, d2, d3, d4)`` of the force-velocity curve (d1, d4 solved so that it passes through
#: (-1, 0) and (0, 1), as OpenSim does)
FORCE_VELOCITY = (-0.3211346127989808, -8.149, -0.374, 0.8825327733249912)
#: the passive curve's exponential shape factor
KPE = 4.0
#: the normalized fibre length where the passive curve is zero
MIN_NORM_FIBER_LENGTH = 0.2


# ---------------------------------------------------------------------------------- curves
def _gaussian_like(x, b1, b2, b3, b4):
    return b1 * np.exp(-0.5 * (x - b2) ** 2 / (b3 + b4 * x) ** 2)


def active_force_length(l, scale=1.0):
    """``f_L(l)`` of normalized fibre lengths ``l`` (any shape), width ``scale`` >= 1."""
    x = ((np.asarray(l, dtype=float) - 1.0) / scale + 1.0)[..., None]
    return _gaussian_like(x, *ACTIVE_FL.T).sum(axis=-1)


def active_force_length_derivative(l, scale=1.0):
    """``d f_L / d l``: each term's ``b1 e (b2 - x)(b3 + b2 b4) / (b3 + b4 x)^3``, over
    ``scale``."""
    x = (np.asarray(l, dtype=float) - 1.0) / scale + 1.0
    out = 0.0
    for b1, b2, b3, b4 in ACTIVE_FL:
        out = out + _gaussian_like(x, b1, b2, b3, b4) * (b2 - x) * (b3 + b2 * b4) \
            / (b3 + b4 * x) ** 3
    return out / scale


def force_velocity(v):
    """``f_V(v)`` of normalized fibre velocities ``v`` (lengthening positive)."""
    d1, d2, d3, d4 = FORCE_VELOCITY
    return d1 * np.arcsinh(d2 * np.asarray(v, dtype=float) + d3) + d4


def force_velocity_derivative(v):
    """``d f_V / d v = d1 d2 / sqrt((d2 v + d3)^2 + 1)``."""
    d1, d2, d3, _ = FORCE_VELOCITY
    s = d2 * np.asarray(v, dtype=float) + d3
    return d1 * d2 / np.sqrt(s * s + 1.0)


def force_velocity_inverse(f):
    """The normalized fibre velocity whose ``f_V`` is ``f``."""
    d1, d2, d3, d4 = FORCE_VELOCITY
    return (np.sinh((np.asarray(f, dtype=float) - d4) / d1) - d3) / d2


def _passive_offset(e0):
    return np.exp(KPE * (MIN_NORM_FIBER_LENGTH - 1.0) / np.asarray(e0, dtype=float))


def passive_force_length(l, e0=0.6):
    """``f_PE(l)`` with the passive fibre strain ``e0`` at one normalized force."""
    o = _passive_offset(e0)
    return (np.exp(KPE * (np.asarray(l, dtype=float) - 1.0) / e0) - o) / (np.exp(KPE) - o)


def passive_force_length_derivative(l, e0=0.6):
    """``d f_PE / d l = kPE exp(kPE (l - 1) / e0) / (e0 (exp(kPE) - o))``."""
    o = _passive_offset(e0)
    return KPE * np.exp(KPE * (np.asarray(l, dtype=float) - 1.0) / e0) \
        / (e0 * (np.exp(KPE) - o))


def passive_force_length_integral(l, e0=0.6):
    """``int_0.2^l f_PE``: ``(e0 (exp(kPE (l - 1) / e0) - o) / kPE - o (l - 0.2)) /
    (exp(kPE) - o)``, zero at ``l = 0.2``."""
    o = _passive_offset(e0)
    l = np.asarray(l, dtype=float)
    return (e0 / KPE * (np.exp(KPE * (l - 1.0) / e0) - o) - o * (l - MIN_NORM_FIBER_LENGTH)) \
        / (np.exp(KPE) - o)


def activation_rate(a, u, tau_a, tau_d, smoothing):
    """``da/dt`` (module docstring) of activations ``a`` under excitations ``u`` (arrays of
    one shape, or scalars), time constants ``tau_a, tau_d`` (s) and tanh ``smoothing``."""
    f = 0.5 * np.tanh(smoothing * (u - a))
    z = 0.5 + 1.5 * a
    return ((f + 0.5) / (tau_a * z) + (0.5 - f) * z / tau_d) * (u - a)


# ---------------------------------------------------------------------------------- parameters
def _positive(name, what, x, low=0.0, open_low=True, high=math.inf):
    try:
        x = float(x)
    except (TypeError, ValueError):
        x = math.nan
    ok = math.isfinite(x) and (x > low if open_low else x >= low) and x < high
    if not ok:
        bound = f"{'above' if open_low else 'at least'} {low:g}" + \
            (f" and below {high:g}" if math.isfinite(high) else "")
        raise InvalidInputError(f"muscle {name!r}: {what} is {x!r}; it must be a number "
                                f"{bound}: correct it in the muscle's parameters")
    return x


@dataclass(frozen=True)
class HillParameters:
    """One muscle's parameters as the rigid-tendon DeGroote-Fregly model uses them (SI units,
    angles in rad): ``max_isometric_force`` (N), ``optimal_fiber_length`` and
    ``tendon_slack_length`` (m), ``pennation_angle_at_optimal`` (rad, in ``[0, pi/2)``),
    ``max_contraction_velocity`` (optimal fibre lengths per second), the activation and
    deactivation time constants (s), ``activation_smoothing`` (the tanh steepness b),
    ``fiber_damping`` (normalized), ``passive_fiber_strain`` (e0), ``active_force_width_scale``
    (>= 1). ``kind`` is the OpenSim class the parameters were read
    from. Constructing one checks every number and raises InvalidInputError naming the muscle
    (a NaN, a non-positive length or force, a pennation outside ``[0, pi/2)``)."""

    name: str
    max_isometric_force: float
    optimal_fiber_length: float
    tendon_slack_length: float
    pennation_angle_at_optimal: float = 0.0
    max_contraction_velocity: float = 10.0
    activation_time_constant: float = 0.015
    deactivation_time_constant: float = 0.060
    activation_smoothing: float = 0.1
    fiber_damping: float = 0.0
    passive_fiber_strain: float = 0.6
    active_force_width_scale: float = 1.0
    kind: str = "DeGrooteFregly2016Muscle"

    def __post_init__(self):
        n = self.name
        for what, low, open_low, high in (
                ("max_isometric_force", 0.0, True, math.inf),
                ("optimal_fiber_length", 0.0, True, math.inf),
                ("tendon_slack_length", 0.0, False, math.inf),
                ("pennation_angle_at_optimal", 0.0, False, 0.5 * math.pi),
                ("max_contraction_velocity", 0.0, True, math.inf),
                ("activation_time_constant", 0.0, True, math.inf),
                ("deactivation_time_constant", 0.0, True, math.inf),
                ("activation_smoothing", 0.0, True, math.inf),
                ("fiber_damping", 0.0, False, math.inf),
                ("passive_fiber_strain", 0.0, True, math.inf),
                ("active_force_width_scale", 1.0, False, math.inf)):
            object.__setattr__(self, what, _positive(n, what, getattr(self, what), low,
                                                     open_low, high))

    @classmethod
    def from_muscle(cls, muscle):
        """The parameters of a muscle read from a .osim file (:class:`core.muscles.paths.
        Muscle`: ``name``, ``kind``, the five common parameters and ``extra``, the other
        properties as read), mapped as ``DeGrooteFregly2016Muscle::replaceMuscles`` maps them:
        a DeGroote muscle's own properties; a Thelen2003 muscle's time constants and
        ``FmaxMuscleStrain`` as e0 (no damping); a Millard2012 muscle's time constants, fibre
        damping and its fibre force-length curve's ``strain_at_one_norm_force``; DeGroote's
        defaults for what another kind does not have."""
        extra = dict(getattr(muscle, "extra", None) or {})
        kind = muscle.kind
        if kind not in MUSCLE_KINDS:
            raise InvalidInputError(f"muscle {muscle.name!r} is a {kind}, which is not a muscle "
                                    f"this simulation knows ({', '.join(MUSCLE_KINDS)})")

        def number(key, default):
            value = extra.get(key, default)
            try:
                return float(value)
            except (TypeError, ValueError):
                raise InvalidInputError(f"muscle {muscle.name!r}: {key} is {value!r}, not a "
                                        "number: correct it in the model file") from None

        values = {k: number(k, d) for k, d in _DEFAULTS.get(kind, _DEFAULTS["Muscle"]).items()}
        if kind == "DeGrooteFregly2016Muscle":
            values.update(activation_smoothing=number("activation_dynamics_smoothing", 0.1),
                          fiber_damping=number("fiber_damping", 0.0),
                          passive_fiber_strain=number("passive_fiber_strain_at_one_norm_force",
                                                      0.6),
                          active_force_width_scale=number("active_force_width_scale", 1.0))
        elif kind == "Thelen2003Muscle":
            values.update(passive_fiber_strain=number("FmaxMuscleStrain", 0.6))
        elif kind.startswith("Millard2012"):
            curve = extra.get("FiberForceLengthCurve", "")
            found = re.search(r"<strain_at_one_norm_force>([^<]*)<", curve)
            values.update(fiber_damping=number("fiber_damping", 0.1),
                          passive_fiber_strain=float(found.group(1)) if found else 0.7)
        return cls(muscle.name, muscle.max_isometric_force, muscle.optimal_fiber_length,
                   muscle.tendon_slack_length, muscle.pennation_angle_at_optimal,
                   muscle.max_contraction_velocity, kind=kind, **values)


#: kind -> OpenSim's default time constants (s), for a file that leaves them out
_DEFAULTS = {
    "Muscle": {"activation_time_constant": 0.015, "deactivation_time_constant": 0.060},
    "Thelen2003Muscle": {"activation_time_constant": 0.015, "deactivation_time_constant": 0.050},
    "Millard2012EquilibriumMuscle": {"activation_time_constant": 0.010,
                                     "deactivation_time_constant": 0.040},
}


def check_activation(name, values, what="activation"):
    """Raise InvalidInputError naming muscle ``name`` unless every value of ``values`` (a
    number or an array) is a number in ``[0, 1]``."""
    a = np.asarray(values, dtype=float)
    bad = ~((a >= 0.0) & (a <= 1.0))
    if np.any(bad):
        x = float(a.ravel()[np.argmax(bad.ravel())])
        raise InvalidInputError(f"muscle {name!r}: {what} {x!r} is outside [0, 1]; give "
                                f"values from 0 (relaxed) to 1 (fully active)")


class MuscleArrays:
    """The parameters of m muscles (a sequence of :class:`HillParameters`) as ``(m,)`` arrays,
    for :func:`rigid_tendon` on all of them at once: ``names`` and one array per field."""

    FIELDS = ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length",
              "pennation_angle_at_optimal", "max_contraction_velocity",
              "activation_time_constant", "deactivation_time_constant",
              "activation_smoothing", "fiber_damping", "passive_fiber_strain",
              "active_force_width_scale")

    def __init__(self, params):
        params = tuple(params)
        if not all(isinstance(p, HillParameters) for p in params):
            raise InvalidInputError("muscle parameters must be HillParameters")
        self.params = params
        self.names = tuple(p.name for p in params)
        for f in self.FIELDS:
            setattr(self, f, np.array([getattr(p, f) for p in params], dtype=float))
        #: ``(m,)`` constant fibre widths ``l_opt sin(alpha_opt)`` (m)
        self.width = self.optimal_fiber_length * np.sin(self.pennation_angle_at_optimal)
        #: ``(m,)`` max contraction velocities in m/s
        self.speed_scale = self.max_contraction_velocity * self.optimal_fiber_length
        #: the compiled backend's parameter rows (:mod:`core.compiled.actuation`), built on
        #: first use
        self.packed = None

    def __len__(self):
        return len(self.params)


@dataclass(frozen=True)
class RigidTendonState:
    """What :func:`rigid_tendon` computes per muscle (``(m,)`` arrays): ``fiber_length`` (m),
    ``norm_fiber_length``, ``cos_pennation``, ``fiber_velocity`` (m/s, lengthening
    positive), ``norm_fiber_velocity``, the multipliers ``active_fl``, ``force_velocity``,
    ``passive_fl``, the fibre forces (N) ``active_fiber_force`` (``Fmax a f_L f_V``),
    ``passive_fiber_force`` (``Fmax f_PE``), ``damping_force`` (``Fmax beta v``),
    ``fiber_force`` (their sum) and ``tendon_force`` (the tension along the path, ``fiber
    force cos(alpha)``; zero where the tendon is slack)."""

    fiber_length: np.ndarray
    norm_fiber_length: np.ndarray
    cos_pennation: np.ndarray
    fiber_velocity: np.ndarray
    norm_fiber_velocity: np.ndarray
    active_fl: np.ndarray
    force_velocity: np.ndarray
    passive_fl: np.ndarray
    active_fiber_force: np.ndarray
    passive_fiber_force: np.ndarray
    damping_force: np.ndarray
    fiber_force: np.ndarray
    tendon_force: np.ndarray


def rigid_tendon(muscles, length, speed, activation):
    """The rigid-tendon DeGroote-Fregly state of the :class:`MuscleArrays` ``muscles`` at path
    lengths ``length (m,)`` (m), lengthening speeds ``speed (m,)`` (m/s) and activations
    ``activation (m,)`` (module docstring; OpenSim's ``calcMuscleLengthInfo``,
    ``calcFiberVelocityInfo`` and ``calcMuscleDynamicsInfo`` with ``ignore_tendon_compliance``).
    Returns a :class:`RigidTendonState`."""
    m = muscles
    along = np.asarray(length, dtype=float) - m.tendon_slack_length
    taut = along > 0.0
    fiber = np.sqrt(along * along + m.width * m.width)
    lf = fiber / m.optimal_fiber_length
    cos_a = np.where(taut, along / np.where(fiber > 0.0, fiber, 1.0), 0.0)
    fiber_v = np.asarray(speed, dtype=float) * cos_a
    vn = fiber_v / m.speed_scale
    fl = active_force_length(lf, m.active_force_width_scale)
    fv = force_velocity(vn)
    fpe = passive_force_length(lf, m.passive_fiber_strain)
    fmax = m.max_isometric_force
    active = fmax * (np.asarray(activation, dtype=float) * fl * fv)
    passive = fmax * fpe
    damping = fmax * m.fiber_damping * vn
    total = active + passive + damping
    return RigidTendonState(fiber, lf, cos_a, fiber_v, vn, fl, fv, fpe, active, passive, damping,
                            total, np.where(taut, total * cos_a, 0.0))


def elastic_energy(muscles, length):
    """``(m,)`` the passive fibres' elastic energy (J) at path lengths ``length (m,)``:
    ``Fmax l_opt int_0.2^l f_PE`` (module docstring), the potential whose negative gradient
    along the path is the passive tension of a rigid-tendon muscle (zero where the tendon is
    slack: the energy there is that of the shortest taut fibre, ``l_M = w``)."""
    m = muscles
    along = np.maximum(np.asarray(length, dtype=float) - m.tendon_slack_length, 0.0)
    lf = np.sqrt(along * along + m.width * m.width) / m.optimal_fiber_length
    return m.max_isometric_force * m.optimal_fiber_length * \
        passive_force_length_integral(lf, m.passive_fiber_strain)
