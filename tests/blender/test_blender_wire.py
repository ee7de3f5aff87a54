"""Wires from Blender curves: addon.curves.read_curve reads a spline, core.wire builds the
wire, and both agree with Blender's own evaluation of the curve (the depsgraph's to_mesh).

Bounds. Blender evaluates curves in float32 (Bezier points by forward differencing over
``resolution_u`` steps), so its points lie off the exact curve by round-off of float32
coordinates times the number of accumulated steps: ``EPS32 * extent * resolution_u``. The
fitted joint adds at most its own measured position error. The ribbon of ``extrude`` along
Blender's normal checks the frame: its direction is the wire frame's z (the tilt included)
to float32 round-off over the ribbon width.
"""

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)
RESOLUTION = 64


def _curve_object(kind, points, cyclic, *, handles=None, weights=None, tilt=None, order=4,
                  endpoint=False, extrude=0.0, interpolation="LINEAR"):
    """A curve object 'Wire' with one spline built from numbers; FREE handles (kept as
    given); returns the object."""
    import bpy

    cu = bpy.data.curves.new("Wire", "CURVE")
    cu.dimensions, cu.resolution_u, cu.extrude = "3D", RESOLUTION, extrude
    sp = cu.splines.new(kind)
    n = len(points)
    tilt = np.zeros(n) if tilt is None else tilt
    if kind == "BEZIER":
        sp.bezier_points.add(n - 1)
        sp.tilt_interpolation = interpolation
        for i, bp in enumerate(sp.bezier_points):
            bp.handle_left_type = bp.handle_right_type = "FREE"
            bp.co, bp.handle_left, bp.handle_right = points[i], handles[0][i], handles[1][i]
            bp.tilt = tilt[i]
    else:
        sp.points.add(n - 1)
        for i, p in enumerate(sp.points):
            p.co = (*points[i], 1.0 if weights is None else weights[i])
            p.tilt = tilt[i]
        if kind == "NURBS":
            sp.order_u, sp.use_endpoint_u = order, endpoint
    sp.use_cyclic_u = cyclic
    obj = bpy.data.objects.new("Wire", cu)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def _loop():
    """Five points round a saddle-shaped loop (1 m by 0.6 m, 0.2 m up and down) and smooth
    Bezier handle offsets along its tangents: ``(points (5, 3), offsets (5, 3))``."""
    th = 2 * np.pi * np.arange(5) / 5
    P = np.stack([np.cos(th), 0.6 * np.sin(th), 0.2 * np.sin(2 * th)], axis=1)
    D = np.stack([-np.sin(th), 0.6 * np.cos(th), 0.4 * np.cos(2 * th)], axis=1) * (
        2 * np.pi / 15)
    return P, D


def _evaluated_points(obj):
    """Blender's evaluated curve (its to_mesh vertices), (N, 3) in the object's frame."""
    import bpy

    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    co = np.array([v.co[:] for v in ev.to_mesh().vertices])
    ev.to_mesh_clear()
    return co


def scenario_wires_follow_blender_curves(tmp):
    import bpy

    from scenes import addon_module

    curves, wire = addon_module("addon.curves"), addon_module("core.wire")
    bpy.ops.wm.read_homefile(use_empty=True)
    P, D = _loop()
    tilt = np.array([0.0, 0.6, -0.4, 1.1, 0.2])
    cases = {
        "cyclic bezier": _curve_object("BEZIER", P, True, handles=(P - D, P + D), tilt=tilt),
        "open nurbs": _curve_object("NURBS", P, False, weights=[1.0, 2.0, 0.5, 1.0, 3.0],
                                    order=4, endpoint=True),
        "cyclic nurbs": _curve_object("NURBS", P, True, order=3),
        "poly": _curve_object("POLY", P, False, tilt=tilt),
    }
    # Blender's own Bezier circle (AUTO handles), on a moved and turned object: the wire is
    # read in the object's frame, as to_mesh gives its points
    bpy.ops.curve.primitive_bezier_circle_add(radius=0.7, location=(1.0, 2.0, 0.5),
                                              rotation=(0.3, 0.0, 0.8))
    circle = bpy.context.active_object
    circle.data.resolution_u = RESOLUTION
    cases["bezier circle"] = circle
    out = {}
    for name, obj in cases.items():
        data = curves.read_curve(obj)
        assert data.cyclic == obj.data.splines[0].use_cyclic_u
        np.testing.assert_allclose(data.tilt, tilt if name in ("cyclic bezier", "poly")
                                   else 0.0, atol=1e-6)
        if name == "bezier circle":
            assert np.abs(np.linalg.norm(data.points, axis=1) - 0.7).max() < 1e-6
        path = wire.WirePath(data)
        co = _evaluated_points(obj)
        bound = EPS32 * np.ptp(co, axis=0).max() * RESOLUTION
        _, d = path.closest(co)
        assert d.max() <= bound, (name, d.max(), bound)
        if not data.cyclic:        # same ends, so Blender's curve covers the wire's range
            assert np.linalg.norm(co[0] - path.points([0.0])[0]) <= bound
            assert np.linalg.norm(co[-1] - path.points([path.length])[0]) <= bound
        fit = wire.wire_joint(data, tolerance=1e-4)
        _, dj = path.closest(fit.joint.transforms(np.linspace(0.0, path.length, 400))[:, :3, 3])
        assert dj.max() <= fit.max_position_error * (1 + 1e-6) + bound, name
        out[name] = {"blender": float(d.max()), "bound": bound, "frames": fit.n_frames,
                     "length": fit.length,
                     "fit": fit.max_position_error, "within": fit.within_tolerance}
    # the smooth curves reach the tolerance; the poly curve's corners are rounded
    assert all(out[n]["within"] for n in ("cyclic bezier", "open nurbs", "cyclic nurbs",
                                          "bezier circle"))
    assert not out["poly"]["within"]
    return out


def scenario_ribbon_follows_the_wire_frame(tmp):
    import bpy

    from scenes import addon_module

    curves, wire = addon_module("addon.curves"), addon_module("core.wire")
    out = {}
    r, c = 0.5, 0.5523 * 0.5                       # a circle of 4 Bezier arcs in the XY plane
    P = np.array([[r, 0, 0], [0, r, 0], [-r, 0, 0], [0, -r, 0]], dtype=float)
    T = c * np.array([[0, 1, 0], [-1, 0, 0], [0, -1, 0], [1, 0, 0]], dtype=float)
    width = 0.1
    for interpolation in ("LINEAR", "CARDINAL", "EASE"):
        for cyclic in (True, False):
            bpy.ops.wm.read_homefile(use_empty=True)
            obj = _curve_object("BEZIER", P, cyclic, handles=(P - T, P + T),
                                tilt=[0.0, 0.5, 1.2, -0.3], extrude=width,
                                interpolation=interpolation)
            path = wire.WirePath(curves.read_curve(obj))
            co = _evaluated_points(obj)
            q, d = path.closest(co)
            F = path.frames(q)
            u = (co - F[:, :3, 3]) / d[:, None]
            # the ribbon's direction is +-z of the frame: its angle from the z line
            ang = np.arctan2(np.einsum("ij,ij->i", u, F[:, :3, 1]),
                             np.einsum("ij,ij->i", u, F[:, :3, 2]))
            ang = np.abs(np.mod(ang + np.pi / 2, np.pi) - np.pi / 2)
            bound = EPS32 * RESOLUTION * 2 * r / width
            assert np.abs(d - width).max() <= EPS32 * RESOLUTION * 2 * r
            assert ang.max() <= bound, (interpolation, cyclic, ang.max(), bound)
            out[f"{interpolation} {cyclic}"] = float(ang.max())
    # a 2D curve: Blender ignores the tilt, its ribbon stands along +-Z, as read_curve's
    # frames (tilt read as 0) have z
    bpy.ops.wm.read_homefile(use_empty=True)
    obj = _curve_object("BEZIER", P, True, handles=(P - T, P + T), tilt=[0.0, 0.5, 1.2, -0.3],
                        extrude=width)
    obj.data.dimensions = "2D"
    data = curves.read_curve(obj)
    assert np.all(data.tilt == 0.0)
    path = wire.WirePath(data)
    co = _evaluated_points(obj)
    q, d = path.closest(co)
    assert np.allclose(path.frames(q)[:, :3, 2], [0.0, 0.0, 1.0], atol=1e-12)
    assert np.abs(np.abs(co[:, 2]) - width).max() <= EPS32 * RESOLUTION * 2 * r
    return out


def scenario_bad_curves_raise(tmp):
    import bpy

    from scenes import addon_module

    curves = addon_module("addon.curves")
    bridge = addon_module("addon.bridge")
    bpy.ops.wm.read_homefile(use_empty=True)
    messages = {}
    bpy.ops.surface.primitive_nurbs_surface_surface_add()
    surface = bpy.context.active_object
    mesh = bpy.data.objects.new("Mesh", bpy.data.meshes.new("Mesh"))
    empty_curve = bpy.data.objects.new("Empty", bpy.data.curves.new("Empty", "CURVE"))
    one_point = _curve_object("POLY", np.zeros((1, 3)), False)
    for name, obj in (("surface", surface), ("mesh", mesh), ("no spline", empty_curve)):
        try:
            curves.read_curve(obj)
        except bridge.BridgeError as exc:
            messages[name] = str(exc)
    try:
        curves.read_curve(one_point)
    except ValueError as exc:
        messages["one point"] = str(exc)
    return messages


def test_wires_follow_blender_curves(blender):
    out = blender(scenario_wires_follow_blender_curves)
    assert set(out) == {"cyclic bezier", "open nurbs", "cyclic nurbs", "poly", "bezier circle"}
    assert abs(out["bezier circle"]["length"] - 2 * np.pi * 0.7) < 2e-4 * 2 * np.pi * 0.7


def test_ribbon_follows_the_wire_frame(blender):
    assert len(blender(scenario_ribbon_follows_the_wire_frame)) == 6


def test_bad_curves_raise(blender):
    messages = blender(scenario_bad_curves_raise)
    assert "surfaces are not wires" in messages["surface"]
    assert "mesh object" in messages["mesh"]
    assert "0 spline(s)" in messages["no spline"]
    assert "at least 2 points" in messages["one point"]

