"""Panels draw in every state without errors, and name only properties and operators that exist.

The sidebar cannot be drawn headless, so each panel's draw() runs against a recording layout
that checks every ``prop``/``operator``/``template_list`` argument against Blender's RNA.
"""

from pathlib import Path

#: a small OpenSim model for the OpenSim panel (its meshes are missing: placeholders)
PENDULUM = str(Path(__file__).resolve().parents[3] / "shared" / "data" / "osim" / "double_pendulum.osim")


def scenario_draw_panels(tmp, osim):
    import bpy

    from scenes import leg_armature

    problems, calls = [], []

    def has_prop(data, name):
        if name.startswith('["'):
            return name[2:-2] in data.keys()
        return name in data.bl_rna.properties

    class Layout:
        def __getattr__(self, attr):
            calls.append(attr)
            return lambda *a, **k: self

        def prop(self, data, name, **kw):
            calls.append("prop")
            if not has_prop(data, name):
                problems.append(f"prop {name!r} not on {data.bl_rna.identifier}")
            return self

        def prop_search(self, data, name, search_data, search_name, **kw):
            self.prop(data, name)
            self.prop(search_data, search_name)

        def operator(self, idname, **kw):
            calls.append("operator")
            module, op = idname.split(".")
            if op not in dir(getattr(bpy.ops, module)):
                problems.append(f"operator {idname!r} missing")
            return self

        def operator_menu_enum(self, idname, prop, **kw):
            return self.operator(idname)

        def template_list(self, ui_list, list_id, data, prop, active_data, active_prop, **kw):
            self.prop(data, prop)
            self.prop(active_data, active_prop)
            if not hasattr(bpy.types, ui_list):
                problems.append(f"UIList {ui_list!r} missing")

    panels = [getattr(bpy.types, n) for n in dir(bpy.types) if n.startswith("VIEW3D_PT_spline_joints")]

    def draw_all():
        for panel in panels:
            fake = type("P", (), {"layout": Layout()})()
            panel.draw(fake, bpy.context)

    bpy.ops.wm.read_homefile(use_empty=True)
    draw_all()  # nothing selected
    obj = leg_armature()
    draw_all()  # a bone, no samples
    for bone, where in (("thigh", (0.5, -0.2, 1.1)), ("shin", (0.45, -0.25, 0.6))):
        obj.data.bones.active = obj.data.bones[bone]
        bpy.context.scene.cursor.location = where
        bpy.ops.spline_joints.add_rig_muscle_point()
    bpy.ops.spline_joints.add_rig_muscle(name="quadriceps")
    draw_all()  # a muscle on the rig: its list, activation and parameters
    shin = obj.pose.bones["shin"]
    for a in (0.0, 0.3, 0.6, 0.9, 1.2):
        shin.rotation_euler = (a, 0.0, 0.0)
        shin.location = (0.0, 0.01 * a, 0.0)
        bpy.context.view_layer.update()
        bpy.ops.spline_joints.capture_pose()
    shin.spline_joints.fit_frames = 4
    bpy.ops.spline_joints.fit()
    bpy.ops.spline_joints.drive_joint()
    bpy.ops.spline_joints.add_mechanism(demo="hinge_chain", duration=0.1)
    bpy.context.view_layer.objects.active = obj
    for shape in ("CIRCULAR", "ELLIPTICAL"):
        for source in ("ROTATION", "PROPERTY", "FRAME"):
            shin.spline_joints.cone_shape, shin.spline_joints.source = shape, source
            draw_all()
    shin.spline_joints.fit_type = "SURFACE"
    draw_all()
    sim = shin.spline_joints_sim    # a simulated ball joint: its cone drawn with the joint
    sim.enabled, sim.kind, sim.use_cone = True, "BALL", True
    draw_all()
    sim.enabled = False
    bpy.ops.spline_joints.import_osim(filepath=osim)
    draw_all()  # an imported OpenSim armature: its coordinate sliders
    settings = bpy.context.object.data.spline_joints_osim
    assert bpy.ops.spline_joints.fit_osim_joint(joint=settings.joint) == {"FINISHED"}
    draw_all()  # with a fitted joint: its switch, errors and remove button
    settings.fits[0].use = False
    draw_all()
    for demo in ("four_bar", "door"):  # linkages: joints with and without limits, a driver
        bpy.ops.spline_joints.add_demo_linkage(demo=demo)
        draw_all()
    scene = bpy.context.scene
    item = scene.spline_joints_linkages[scene.spline_joints_active_linkage]
    bpy.ops.spline_joints.bake_linkage(index=-1)
    for kind in ("ball", "cylinder", "slotted", "slider", "line", "curve", "curve_point",
                 "surface_point", "spring", "fixed"):
        item.joints[0].kind = kind
        draw_all()
    item.drive_joint, item.mode = item.joints[0].name, "ASSEMBLY"
    bpy.context.view_layer.objects.active = item.joints[0].body2
    draw_all()
    return {"problems": problems, "panels": len(panels), "calls": len(calls)}


def test_panels_draw_with_existing_names(blender):
    out = blender(scenario_draw_panels, osim=PENDULUM)
    assert out["problems"] == []
    assert out["panels"] == 10 and out["calls"] > 100
