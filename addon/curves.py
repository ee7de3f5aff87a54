"""Reading Blender curve objects into :class:`core.wire.CurveData` (numbers only).

:func:`read_curve` reads one spline of a curve object in the object's local frame with
``foreach_get``: Bezier points (co, handle_left, handle_right, tilt) and the spline's
``tilt_interpolation``; NURBS points (co as (x, y, z, w): w is the rational weight), tilt,
``order_u``, ``use_endpoint_u``, ``use_bezier_u``; poly points (co, tilt); and
``use_cyclic_u``. A 2D curve's tilt is read as 0: Blender ignores it there (the normal stays
the curve plane's +Z, as the wire's frame has it). The core builds the wire from it
(:func:`core.wire.wire_joint`).
"""

import numpy as np

from .bridge import BridgeError


def _get(collection, attribute, width):
    """``collection``'s ``attribute`` of every element as ``(len, width)`` (or ``(len,)``)."""
    out = np.zeros(len(collection) * width)
    collection.foreach_get(attribute, out)
    return out.reshape(-1, width) if width > 1 else out


def read_curve(curve_obj, spline_index=0):
    """Spline ``spline_index`` of the curve object ``curve_obj`` as a
    :class:`core.wire.CurveData`, in the object's local frame (the object's own transform,
    animated or not, is left to the caller).

    Raises BridgeError when the object is not a curve object (a NURBS surface says: "use a
    curve object; surfaces are not wires"), has no such spline, the spline has no points or
    is of a type Blender no longer draws; and the core's InvalidInputError (a ValueError) for
    numbers it cannot use (fewer than 2 points, an order above the point count, ...).
    """
    from ..core import wire

    if curve_obj is None:
        raise BridgeError("no object given: select a curve object (Bezier, NURBS or poly)")
    if curve_obj.type == "SURFACE":
        raise BridgeError(f"'{curve_obj.name}' is a NURBS surface: use a curve object; "
                          "surfaces are not wires")
    if curve_obj.type != "CURVE":
        raise BridgeError(f"'{curve_obj.name}' is a {curve_obj.type.lower()} object: select a "
                          "curve object (Bezier, NURBS or poly) to make a wire")
    splines = curve_obj.data.splines
    if not 0 <= spline_index < len(splines):
        raise BridgeError(f"curve '{curve_obj.name}' has {len(splines)} spline(s); there is no "
                          f"spline {spline_index}" + ("" if splines else ": draw one first"))
    sp = splines[spline_index]
    cyclic = bool(sp.use_cyclic_u)
    flat = curve_obj.data.dimensions == "2D"
    if sp.type == "BEZIER":
        pts = sp.bezier_points
        if len(pts) == 0:
            raise BridgeError(f"spline {spline_index} of '{curve_obj.name}' has no points")
        tilt = np.zeros(len(pts)) if flat else _get(pts, "tilt", 1)
        return wire.bezier_curve(_get(pts, "co", 3), _get(pts, "handle_left", 3),
                                 _get(pts, "handle_right", 3), tilt,
                                 cyclic=cyclic, tilt_interpolation=sp.tilt_interpolation)
    if sp.type not in ("NURBS", "POLY"):
        raise BridgeError(f"spline {spline_index} of '{curve_obj.name}' is of type {sp.type}, "
                          "which Blender no longer evaluates: set it to Bezier, NURBS or Poly")
    pts = sp.points
    if len(pts) == 0:
        raise BridgeError(f"spline {spline_index} of '{curve_obj.name}' has no points")
    co = _get(pts, "co", 4)
    tilt = np.zeros(len(pts)) if flat else _get(pts, "tilt", 1)
    if sp.type == "POLY":
        return wire.poly_curve(co[:, :3], tilt, cyclic=cyclic)
    return wire.nurbs_curve(co[:, :3], co[:, 3], order=sp.order_u, tilt=tilt, cyclic=cyclic,
                            use_endpoint=bool(sp.use_endpoint_u),
                            use_bezier=bool(sp.use_bezier_u))
