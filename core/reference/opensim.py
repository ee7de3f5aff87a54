"""Exact re-implementations of OpenSim's evaluation rules for two reference joints.

These are *oracles*: they reproduce what OpenSim 4.6 computes for the gait2392 knee and the
Seth et al. (2019) scapulothoracic joint, from the numbers and rules recorded in
``core/data/knee_gait2392.json`` and ``core/data/scapulothoracic_seth2019.json``. The spline
and surface joints of this project are fitted to, and tested against, these poses.

Rotations about axes and the offset-frame Euler angles are built with
:class:`scipy.spatial.transform.Rotation` (independent of :mod:`core.lie`, so that the oracle
does not share code with what it checks); 4x4 assembly and inversion use :mod:`core.lie.se3`.
The TransformAxis functions (SimmSpline, Constant, LinearFunction, ...) are those of
:mod:`core.joints.opensim`, built by its ``function_from_dict`` and checked against OpenSim
itself in ``tests/core/test_opensim_joints.py``.

Frames (names as in OpenSim):

* parent body (femur_r / thorax) --``T_parent_pjoint``--> parent joint frame F (P)
* F --joint motion X_FM(q)--> child joint frame M (C)
* child body (tibia_r / scapula) --``T_child_cjoint``--> child joint frame M (C)

so the pose of the child body in the parent body is
``T_parent_child(q) = T_parent_pjoint @ X_FM(q) @ inv(T_child_cjoint)``
(the JSONs' ``custom_joint_semantics.formula`` and ``math.closed_form.body_pose``).
"""

import numpy as np
from scipy.spatial.transform import Rotation

from ..errors import InvalidInputError
from ..joints.opensim import SimmSpline, finite_array, function_from_dict
from ..lie import se3
from . import datasets as _data

__all__ = [
    "SimmSpline",
    "offset_frame",
    "CustomJoint",
    "KneeGait2392",
    "ScapulothoracicSeth2019",
]


def offset_frame(translation, orientation):
    """4x4 pose of an OpenSim offset frame in its body.

    translation: (3,) metres; orientation: (3,) body-fixed X-Y-Z angles (o1, o2, o3), i.e.
    ``R = Rx(o1) Ry(o2) Rz(o3)`` (scipy intrinsic ``'XYZ'``). Returns (4, 4).
    """
    t = finite_array(translation, "offset translation", "of shape (3,)").reshape(3)
    o = finite_array(orientation, "offset orientation", "of shape (3,)").reshape(3)
    return se3.from_rp(Rotation.from_euler("XYZ", o).as_matrix(), t)


def _axis_rotation(axis, angle):
    """Right-handed rotation by ``angle: (N,)`` about unit ``axis: (3,)`` -> (N, 3, 3)."""
    return Rotation.from_rotvec(angle[:, None] * axis[None, :]).as_matrix()


#: keys of a function record that function_from_dict reads
_FUNCTION_PARAMETERS = ("type", "value", "coefficients", "x", "y", "scale", "function")


def _make_function(spec, where):
    """The function of a TransformAxis record, built by
    :func:`core.joints.opensim.function_from_dict` from the record's parameters (the data
    files also record provenance such as ``xml_name``, ``*_raw`` strings and knot ranges);
    ``where`` names the axis in errors."""
    spec = {k: v for k, v in spec.items() if k in _FUNCTION_PARAMETERS}
    try:
        return function_from_dict(spec)
    except InvalidInputError as exc:
        raise type(exc)(f"{where}: {exc}") from None


class CustomJoint:
    """OpenSim ``CustomJoint`` evaluated from a JSON ``joint`` record (the data files' layout).

    Six TransformAxis entries (rotation1..3, translation1..3), each ``v_i = f_i(q_c)`` of one
    coordinate (or a Constant with no coordinate) with unit axis ``a_i``:
    ``R_FM = Rot(v1, a1) Rot(v2, a2) Rot(v3, a3)`` (successive, body-fixed) and
    ``p_FM = v4 a4 + v5 a5 + v6 a6`` in F (not rotated).
    """

    def __init__(self, joint):
        self.name = joint["name"]
        self.coordinate_names = tuple(c["name"] for c in joint["coordinates"])
        self.ranges = np.array([c["range"] for c in joint["coordinates"]], dtype=float)
        self.defaults = np.array([c["default_value"] for c in joint["coordinates"]], dtype=float)
        frames = joint["frames"]
        pf = frames[joint["socket_parent_frame"]]
        cf = frames[joint["socket_child_frame"]]
        self.T_parent_pjoint = offset_frame(pf["translation"], pf["orientation"])
        self.T_child_cjoint = offset_frame(cf["translation"], cf["orientation"])
        self._T_cjoint_child = se3.inv(self.T_child_cjoint)
        axes = joint["spatial_transform"]
        if [a["name"] for a in axes] != [
            "rotation1", "rotation2", "rotation3",
            "translation1", "translation2", "translation3",
        ]:
            raise InvalidInputError(
                f"joint {self.name!r}: spatial_transform must list rotation1..3 then "
                "translation1..3."
            )
        self.axes = np.array([a["axis"] for a in axes], dtype=float)
        norms = np.linalg.norm(self.axes, axis=1)
        if np.any(norms == 0.0):
            raise InvalidInputError(f"joint {self.name!r}: a TransformAxis has a zero axis.")
        self.axes = self.axes / norms[:, None]
        self.functions = []
        self.arguments = []  # coordinate index per axis, or None for constants
        for a in axes:
            where = f"joint {self.name!r} {a['name']}"
            coords = a["coordinates"]
            if len(coords) > 1:
                raise InvalidInputError(f"{where}: only one coordinate per axis is supported.")
            if not coords and a["function"].get("type") != "Constant":
                raise InvalidInputError(f"{where}: an axis without a coordinate must be Constant.")
            self.functions.append(_make_function(a["function"], where))
            self.arguments.append(self.coordinate_names.index(coords[0]) if coords else None)

    def check_qs(self, qs):
        """Return ``qs`` as (N, nq) float, accepting (nq,) or (N, nq); raise if non-finite."""
        nq = len(self.coordinate_names)
        qs = finite_array(qs, f"{self.name} coordinates", f"of shape (N, {nq})")
        if nq == 1 and qs.ndim <= 1:
            qs = qs.reshape(-1, 1)
        if qs.ndim == 1:
            qs = qs[None, :]
        if qs.ndim != 2 or qs.shape[1] != nq:
            raise InvalidInputError(
                f"{self.name} coordinates must have shape (N, {nq}); got {qs.shape}."
            )
        return qs

    def axis_values(self, qs):
        """The six TransformAxis values ``v: (N, 6)`` for ``qs: (N, nq)``."""
        qs = self.check_qs(qs)
        zeros = np.zeros(qs.shape[0])
        cols = [
            f(zeros if i is None else qs[:, i]) for f, i in zip(self.functions, self.arguments)
        ]
        return np.stack(cols, axis=1)

    def joint_poses(self, qs):
        """X_FM: child joint frame in parent joint frame, ``qs: (N, nq) -> (N, 4, 4)``."""
        v = self.axis_values(qs)
        R = _axis_rotation(self.axes[0], v[:, 0])
        R = R @ _axis_rotation(self.axes[1], v[:, 1])
        R = R @ _axis_rotation(self.axes[2], v[:, 2])
        p = v[:, 3:] @ self.axes[3:]
        return se3.from_rp(R, p)

    def poses(self, qs):
        """Child body in parent body, ``qs: (N, nq) -> (N, 4, 4)``."""
        return self.T_parent_pjoint @ self.joint_poses(qs) @ self._T_cjoint_child


class KneeGait2392:
    """The gait2392 right knee ``knee_r`` (femur_r -> tibia_r), Delp et al. 1990 /
    Yamaguchi & Zajac 1989, from ``knee_gait2392.json``.

    One coordinate ``knee_angle_r`` (rad; flexion is negative): rotation about femur z equal to
    the angle, tibia origin ``(s1(q), s2(q), 0)`` with SimmSplines s1, s2. Both offset frames
    are identities, so the joint frames coincide with the body frames and
    :meth:`pose` (T_femur_tibia) equals the joint-frame pose X_FM.
    """

    def __init__(self):
        self.document = _data.load("knee_gait2392")
        self.joint = CustomJoint(self.document["joint"])
        self.coordinate_name = self.joint.coordinate_names[0]
        lo, hi = self.joint.ranges[0]
        self.range = (float(lo), float(hi))  # radians, (-2.0943951, 0.17453293)
        self.default = float(self.joint.defaults[0])
        self.spline_x = self.joint.functions[3]  # translation1 (femur x)
        self.spline_y = self.joint.functions[4]  # translation2 (femur y)

    def poses(self, angles):
        """T_femur_tibia for ``angles: (N,)`` rad -> (N, 4, 4). Extrapolates like OpenSim."""
        angles = finite_array(angles, "knee angles", "of shape (N,)")
        if angles.ndim > 1:
            raise InvalidInputError(f"knee angles must be 1-D (N,); got shape {angles.shape}.")
        return self.joint.poses(angles.reshape(-1, 1))

    def joint_poses(self, angles):
        """X_FM (tibia_r_offset in femur_r_offset), ``angles: (N,) -> (N, 4, 4)``; equal to
        :meth:`poses` here because both offset frames are identities."""
        angles = finite_array(angles, "knee angles", "of shape (N,)")
        if angles.ndim > 1:
            raise InvalidInputError(f"knee angles must be 1-D (N,); got shape {angles.shape}.")
        return self.joint.joint_poses(angles.reshape(-1, 1))

    def pose(self, angle):
        """T_femur_tibia: pose of the tibia_r body frame in the femur_r body frame, (4, 4)."""
        a = finite_array(angle, "knee angle", "(a scalar)")
        if a.size != 1:
            raise InvalidInputError(f"knee angle must be a scalar; got shape {a.shape}.")
        return self.poses(a.reshape(1))[0]

    def samples(self):
        """The JSON's ``derived_samples`` table (131 rows, 1-degree grid over the range).

        Returns a dict: ``q: (N,)``, ``spatial_transform_values: (N, 6)``,
        ``child_origin_in_parent: (N, 3)``, ``R_parent_child: (N, 3, 3)`` and
        ``T_femur_tibia: (N, 4, 4)`` assembled from the last two.
        """
        rows = self.document["derived_samples"]["rows"]
        q = np.array([r["q"] for r in rows], dtype=float)
        values = np.array([r["spatial_transform_values"] for r in rows], dtype=float)
        origin = np.array([r["child_origin_in_parent"] for r in rows], dtype=float)
        R = np.array([r["R_parent_child_rowmajor"] for r in rows], dtype=float).reshape(-1, 3, 3)
        return {
            "q": q,
            "spatial_transform_values": values,
            "child_origin_in_parent": origin,
            "R_parent_child": R,
            "T_femur_tibia": se3.from_rp(R, origin),
        }


class ScapulothoracicSeth2019:
    """OpenSim ``ScapulothoracicJoint`` of the Seth et al. 2019 thoracoscapular model, from
    ``scapulothoracic_seth2019.json`` (closed form of the Simbody Ellipsoid + Pin chain).

    Coordinates ``q = (abduction, elevation, upward_rot, winging)`` (rad). In the parent joint
    frame P (thorax_offset):
    ``R_P_C = Ry(q1) Rx(-q2) Rz(q3) Rot(u, q4)``, ``u = (-sin delta, cos delta, 0)``,
    ``p_P_C = (rx sin q1 cos q2, ry sin q2, rz cos q1 cos q2) + Rb (o - Rot(u, q4) o)``
    with ``Rb = Ry(q1) Rx(-q2) Rz(q3)``, ellipsoid radii (rx, ry, rz) and winging-axis origin
    ``o = (ox, oy, 0)``, direction delta.
    """

    COORDINATES = ("scapula_abduction", "scapula_elevation", "scapula_upward_rot",
                   "scapula_winging")

    def __init__(self):
        self.document = _data.load("scapulothoracic_seth2019")
        j = self.document["joint"]
        names = tuple(c["name"] for c in j["coordinates"])
        if names != self.COORDINATES:
            raise InvalidInputError(
                f"scapulothoracic coordinates in the data file are {names}; expected "
                f"{self.COORDINATES}."
            )
        self.coordinate_names = names
        self.ranges = np.array([c["range"] for c in j["coordinates"]], dtype=float)  # (4, 2)
        self.defaults = np.array([c["default_value"] for c in j["coordinates"]], dtype=float)
        self.radii = np.array(j["thoracic_ellipsoid_radii_x_y_z"], dtype=float)  # (3,)
        ox, oy = (float(v) for v in j["scapula_winging_axis_origin"])
        self.winging_origin = np.array([ox, oy, 0.0])
        delta = float(j["scapula_winging_axis_direction"])
        self.winging_axis = np.array([-np.sin(delta), np.cos(delta), 0.0])
        pf = j["frames"][j["socket_parent_frame"]]
        cf = j["frames"][j["socket_child_frame"]]
        self.T_thorax_pjoint = offset_frame(pf["translation"], pf["orientation"])
        self.T_scapula_cjoint = offset_frame(cf["translation"], cf["orientation"])
        self._T_cjoint_scapula = se3.inv(self.T_scapula_cjoint)

    def check_qs(self, qs):
        """Return ``qs`` as (N, 4) float from (4,) or (N, 4); raise if non-finite or mis-shaped."""
        qs = finite_array(qs, "scapulothoracic coordinates", "of shape (N, 4)")
        if qs.ndim == 1:
            qs = qs[None, :]
        if qs.ndim != 2 or qs.shape[1] != 4:
            raise InvalidInputError(
                "scapulothoracic coordinates must have shape (4,) or (N, 4) ordered "
                f"(abduction, elevation, upward_rot, winging); got {qs.shape}."
            )
        return qs

    def joint_poses(self, qs):
        """X_P_C: scapula joint frame in thorax joint frame, ``qs: (N, 4) -> (N, 4, 4)``."""
        qs = self.check_qs(qs)
        q1, q2, q3, q4 = qs.T
        Rb = Rotation.from_euler(
            "YXZ", np.stack([q1, -q2, q3], axis=1)
        ).as_matrix()  # intrinsic: Ry(q1) Rx(-q2) Rz(q3)
        Rw = _axis_rotation(self.winging_axis, q4)
        rx, ry, rz = self.radii
        p = np.stack([rx * np.sin(q1) * np.cos(q2), ry * np.sin(q2),
                      rz * np.cos(q1) * np.cos(q2)], axis=1)
        o = self.winging_origin
        p = p + np.einsum("nij,nj->ni", Rb, o[None, :] - Rw @ o)
        return se3.from_rp(Rb @ Rw, p)

    def joint_pose(self, q):
        """X_P_C for one ``q: (4,)`` -> (4, 4)."""
        return self.joint_poses(self._one(q))[0]

    def poses(self, qs):
        """T_thorax_scapula (scapula body in thorax body), ``qs: (N, 4) -> (N, 4, 4)``."""
        return self.T_thorax_pjoint @ self.joint_poses(qs) @ self._T_cjoint_scapula

    def pose(self, q):
        """T_thorax_scapula for one ``q: (4,)`` -> (4, 4)."""
        return self.poses(self._one(q))[0]

    def _one(self, q):
        q = self.check_qs(q)
        if q.shape[0] != 1:
            raise InvalidInputError(f"expected one coordinate vector (4,); got {q.shape[0]}.")
        return q

    def grid(self):
        """The JSON's 17 x 11 derived grid over (abduction, elevation), upward_rot = winging = 0.

        Returns a dict: ``abduction: (17,)``, ``elevation: (11,)``, ``q: (17, 11, 4)``,
        ``T_pjoint_cjoint: (17, 11, 4, 4)`` (X_P_C) and ``T_thorax_scapula: (17, 11, 4, 4)``.
        Rows in the file run elevation fastest.
        """
        rows = self.document["derived_samples_tsm_grid"]["rows"]
        ab = np.array([r["scapula_abduction"] for r in rows], dtype=float)
        el = np.array([r["scapula_elevation"] for r in rows], dtype=float)
        abduction = np.unique(ab)
        elevation = np.unique(el)
        shape = (abduction.size, elevation.size)
        if ab.size != shape[0] * shape[1] or not (
            np.array_equal(ab.reshape(shape)[:, 0], abduction)
            and np.array_equal(el.reshape(shape)[0], elevation)
        ):
            raise InvalidInputError(
                "scapulothoracic grid rows are not a full abduction-major grid; check the "
                "data file against the shared copy."
            )

        def transforms(rkey, pkey):
            R = np.array([r[rkey] for r in rows], dtype=float).reshape(-1, 3, 3)
            p = np.array([r[pkey] for r in rows], dtype=float)
            return se3.from_rp(R, p).reshape(shape + (4, 4))

        q = np.zeros(shape + (4,))
        q[..., 0] = ab.reshape(shape)
        q[..., 1] = el.reshape(shape)
        return {
            "abduction": abduction,
            "elevation": elevation,
            "q": q,
            "T_pjoint_cjoint": transforms("R_parentjoint_childjoint_rowmajor",
                                          "child_joint_frame_origin_in_parent_joint_frame"),
            "T_thorax_scapula": transforms("R_thorax_scapula_rowmajor",
                                           "scapula_origin_in_thorax"),
        }
