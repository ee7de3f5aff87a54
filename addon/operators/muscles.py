"""Muscles of an imported OpenSim armature: the moment-arm plot of the muscle chosen in the
OpenSim panel's list (PNG and CSV, shown in Blender), a simulation driven by the keyed
activations (:class:`..muscle_jobs.MuscleSimulationJob`, run in a worker thread with a progress
bar, the coordinates keyed with its result), and authoring: path points placed at
the 3D cursor or at selected vertices, a muscle made of them, and wrap objects on bones, all
written into the model stored on the armature (so the export writes them too).
"""

from __future__ import annotations

import dataclasses
import os

import bpy
import numpy as np
from bpy.props import (BoolProperty, EnumProperty, FloatProperty, FloatVectorProperty,
                       StringProperty)

from .. import bridge, muscles
from ..documents import enabled_osim_fits, osim_rig
from ..muscle_jobs import MuscleSimulationJob
from ._common import OsimArmatureOperator, ThreadedBake, reporting

#: the name of the image a moment-arm plot is loaded as
PLOT_IMAGE = "Moment Arm Plot"


def _active_muscle(data) -> str:
    settings = data.spline_joints_osim
    if not 0 <= settings.active_muscle < len(settings.muscles):
        raise ValueError("choose a muscle in the OpenSim panel's muscle list")
    return settings.muscles[settings.active_muscle].name


def plot_folder(settings) -> str:
    folder = bpy.path.abspath(settings.plot_folder or "//")
    if not folder or folder.startswith("//") or not os.path.isdir(folder):
        raise ValueError(f"the Plot Folder '{settings.plot_folder}' is not a folder: save the "
                         ".blend file first or choose an existing Plot Folder")
    return folder


def write_plot(context, folder, sweep) -> str:
    """Write a :class:`core.muscles.display.MuscleSweep` as a PNG and a CSV to ``folder`` and
    show the PNG (:func:`_show_image`); returns the report's text."""
    from ...core.muscles.display import write_sweep_csv, write_sweep_png

    stem = os.path.join(folder, bpy.path.clean_name(
        f"{sweep.muscle} {sweep.coordinate} moment arm"))
    try:
        import matplotlib  # noqa: F401  (the PNG needs it; say so before writing the CSV)
    except ImportError:
        raise ValueError("the plot needs the Python package matplotlib, which this "
                         "Blender does not have; install it into Blender's Python") from None
    try:
        write_sweep_csv(stem + ".csv", sweep)
        write_sweep_png(stem + ".png", sweep)
    except OSError as exc:
        raise ValueError(f"cannot write the plot to {folder}: {exc.strerror or exc}; choose "
                         "a Plot Folder you can write to") from None
    _show_image(context, stem + ".png")
    return f"Wrote {os.path.basename(stem)}.png and .csv"


def _show_image(context, path):
    """Load (or reload) the PNG as :data:`PLOT_IMAGE` and show it in every Image Editor."""
    image = bpy.data.images.get(PLOT_IMAGE)
    if image is None:
        image = bpy.data.images.load(path)
        image.name = PLOT_IMAGE
    else:
        image.filepath = path
        image.reload()
    for area in getattr(context.screen, "areas", ()):
        if area.type == "IMAGE_EDITOR":
            area.spaces.active.image = image
    return image


class SPLINE_JOINTS_OT_plot_moment_arm(OsimArmatureOperator, bpy.types.Operator):
    """Plot the chosen muscle's moment arm and length against the chosen coordinate over its
    range (with the fitted spline joint beside the exact joint when the coordinate's joint has
    a fit in use); writes a PNG and a CSV to the Plot Folder and shows the PNG in Blender"""

    bl_idname = "spline_joints.plot_moment_arm"
    bl_label = "Plot Moment Arm"
    bl_options = {"REGISTER", "UNDO"}

    @reporting
    def execute(self, context):
        from ...core.muscles.display import moment_arm_sweep

        arm = context.object
        data = arm.data
        settings = data.spline_joints_osim
        muscle = _active_muscle(data)
        coordinate = settings.plot_coordinate
        if not coordinate:
            raise ValueError(f"muscle '{muscle}' spans no coordinate to plot against")
        folder = plot_folder(settings)
        exact = osim_rig(data, fitted=False)
        models = {"exact joint": exact.model}
        joint = next((j.name for j in exact.model.joints if coordinate in j.coordinates), None)
        if joint in enabled_osim_fits(data):
            models["fitted spline joint"] = osim_rig(data).model
        values = bridge.read_named_values(arm, exact.coordinate_names, exact.model.default_q())
        q = dict(zip(exact.coordinate_names, values))
        sweep = moment_arm_sweep(models, muscle, coordinate, q)
        text = write_plot(context, folder, sweep)
        diffs = sweep.largest_difference_mm()
        if diffs:
            text += f"; fitted against exact joint: moment arms differ by at most {diffs[0]:.3g} mm"
        self.report({"INFO"}, text)
        return {"FINISHED"}


def _target_body(arm, body: str) -> str:
    """``body``, or the armature's active bone's body when empty."""
    if body:
        return body
    active = arm.data.bones.active
    if active is None:
        raise ValueError("make the bone of the body the point moves with active, or name its "
                         "body")
    return active.name


def picked_points(context, arm, source: str) -> np.ndarray:
    """Points (n, 3) in armature space: the 3D cursor, or the selected vertices of the
    selected mesh objects (in their order)."""
    to_arm = np.linalg.inv(np.array(arm.matrix_world))
    if source == "CURSOR":
        world = np.array([tuple(context.scene.cursor.location)])
    else:
        world = []
        for obj in context.selected_objects:
            if obj.type != "MESH" or obj == arm:
                continue
            obj.update_from_editmode()
            M = np.array(obj.matrix_world)
            co = np.array([v.co for v in obj.data.vertices if v.select]).reshape(-1, 3)
            world.extend(co @ M[:3, :3].T + M[:3, 3])
        if not world:
            raise ValueError("no vertex is selected: select vertices of a mesh (Edit Mode), "
                             "then the armature, or place the 3D cursor and use it instead")
        world = np.array(world)
    return world @ to_arm[:3, :3].T + to_arm[:3, 3]


#: where Add Path Point puts the points
PLACE_AT_ITEMS = (("CURSOR", "3D Cursor", "One point at the 3D cursor"),
                  ("VERTICES", "Selected Vertices", "One point at each selected vertex of the "
                                                    "selected meshes"))


class MuscleParameters:
    """Mixin of an operator making a muscle: the parameters every new muscle takes."""

    name: StringProperty(name="Name", default="muscle")
    max_isometric_force: FloatProperty(name="Max Isometric Force (N)", default=500.0,
                                       description="The fibres' force at optimal length, fully "
                                                   "active and not moving")
    optimal_fiber_length: FloatProperty(name="Optimal Fibre Length", default=0.1,
                                        subtype="DISTANCE", precision=4,
                                        description="The fibre length at which active force "
                                                    "peaks")
    tendon_slack_length: FloatProperty(name="Tendon Slack Length", default=0.1,
                                       subtype="DISTANCE", precision=4,
                                       description="The tendon's length (rigid): the path "
                                                   "length minus it is the fibres' along the "
                                                   "path")


def place_points(context, arm, source, body, B, draft) -> str:
    """Add the picked points (:func:`picked_points`) to ``draft`` (a collection of path
    points) on ``body``, whose pose in armature space is ``B`` (4, 4); returns the report."""
    local = (picked_points(context, arm, source) - B[:3, 3]) @ B[:3, :3]
    for p in local:
        item = draft.add()
        item.body, item.location = body, tuple(float(x) for x in p)
    return f"Added {len(local)} path points on {body}; the next muscle has {len(draft)}"


class SPLINE_JOINTS_OT_add_muscle_point(OsimArmatureOperator, bpy.types.Operator):
    """Add path points for the next muscle at the 3D cursor or at the selected vertices,
    moving with the active bone's body (or the body named)"""

    bl_idname = "spline_joints.add_muscle_point"
    bl_label = "Add Path Point"
    bl_options = {"REGISTER", "UNDO"}
    source: EnumProperty(name="Place At", description="Where the path points go",
                         items=PLACE_AT_ITEMS, default="CURSOR")
    body: StringProperty(name="Body", description="The body the points move with (empty: the "
                                                  "active bone's; 'ground' for the ground)")

    @reporting
    def execute(self, context):
        arm = context.object
        rig = osim_rig(arm.data)
        body = _target_body(arm, self.body)
        B = muscles.body_pose(arm, rig, body)
        self.report({"INFO"}, place_points(context, arm, self.source, body, B,
                                           arm.data.spline_joints_osim.draft_points))
        return {"FINISHED"}


class SPLINE_JOINTS_OT_clear_muscle_points(OsimArmatureOperator, bpy.types.Operator):
    """Remove the path points placed for the next muscle"""

    bl_idname = "spline_joints.clear_muscle_points"
    bl_label = "Clear Path Points"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        context.object.data.spline_joints_osim.draft_points.clear()
        return {"FINISHED"}


#: the muscle classes a new muscle can be written as
NEW_MUSCLE_KINDS = (("DeGrooteFregly2016Muscle", "DeGroote-Fregly 2016", ""),
                    ("Thelen2003Muscle", "Thelen 2003", ""),
                    ("Millard2012EquilibriumMuscle", "Millard 2012 Equilibrium", ""))


class SPLINE_JOINTS_OT_add_muscle(OsimArmatureOperator, MuscleParameters, bpy.types.Operator):
    """Make a muscle through the placed path points, with its parameters, in the armature's
    model (drawn at once, listed, and written by the OpenSim export)"""

    bl_idname = "spline_joints.add_muscle"
    bl_label = "Add Muscle"
    bl_options = {"REGISTER", "UNDO"}
    kind: EnumProperty(name="Type", items=NEW_MUSCLE_KINDS, default="DeGrooteFregly2016Muscle",
                       description="The OpenSim muscle class the export writes (simulations use "
                                   "DeGroote-Fregly 2016's rigid-tendon forces for every class)")
    pennation_angle_at_optimal: FloatProperty(name="Pennation Angle", default=0.0,
                                              subtype="ANGLE",
                                              description="The fibres' angle to the tendon at "
                                                          "optimal fibre length")
    max_contraction_velocity: FloatProperty(name="Max Contraction Velocity (lengths/s)",
                                            default=10.0,
                                            description="The fastest shortening, in optimal "
                                                        "fibre lengths per second")

    @reporting
    def execute(self, context):
        from ...core.muscles.hill import HillParameters
        from ...core.muscles.paths import GeometryPath, Muscle, PathPoint

        arm = context.object
        settings = arm.data.spline_joints_osim
        model = osim_rig(arm.data, fitted=False).model
        name = self.name.strip()
        if not name or name in model.muscles:
            raise ValueError(f"muscle name '{name}' is empty or taken; give the muscle a new "
                             "name")
        draft = settings.draft_points
        if len(draft) < 2:
            raise ValueError(f"a muscle needs at least two path points, {len(draft)} are "
                             "placed: add points (Add Path Point) first")
        missing = sorted({p.body for p in draft if p.body not in model.bodies})
        if missing:
            raise ValueError(f"path points are on bodies the model does not have: "
                             f"{', '.join(missing)}; clear the points and place them again")
        values = dict(max_isometric_force=self.max_isometric_force,
                      optimal_fiber_length=self.optimal_fiber_length,
                      tendon_slack_length=self.tendon_slack_length,
                      pennation_angle_at_optimal=self.pennation_angle_at_optimal,
                      max_contraction_velocity=self.max_contraction_velocity)
        HillParameters(name, **values)  # refuses a bad number, by name
        path = GeometryPath([PathPoint(p.body, tuple(p.location), f"{name}-P{k + 1}")
                             for k, p in enumerate(draft)])
        muscle = Muscle(name, self.kind, path, **values)
        edited = dataclasses.replace(model, muscles={**model.muscles, name: muscle})
        muscles.store_edited_model(arm, edited)
        draft.clear()
        settings.active_muscle = [m.name for m in settings.muscles].index(name)
        self.report({"INFO"}, f"Added muscle {name} ({self.kind}) through {len(path.points)} "
                              "points")
        return {"FINISHED"}


class SPLINE_JOINTS_OT_add_wrap_object(OsimArmatureOperator, bpy.types.Operator):
    """Add a wrap surface at the 3D cursor on the active bone's body (or the body named), and
    let the muscle chosen in the list wrap over it"""

    bl_idname = "spline_joints.add_wrap_object"
    bl_label = "Add Wrap Object"
    bl_options = {"REGISTER", "UNDO"}
    name: StringProperty(name="Name", default="wrap")
    kind: EnumProperty(name="Shape", default="WrapCylinder",
                       description="The wrap surface's shape", items=(
        ("WrapCylinder", "Cylinder", "Radius and length, axis along the body's z"),
        ("WrapSphere", "Sphere", "Radius"),
        ("WrapEllipsoid", "Ellipsoid", "Three radii")))
    body: StringProperty(name="Body", description="The body the surface moves with (empty: the "
                                                  "active bone's)")
    radius: FloatProperty(name="Radius", default=0.02, subtype="DISTANCE", precision=4,
                          description="Radius of the cylinder or sphere")
    length: FloatProperty(name="Length", default=0.1, subtype="DISTANCE", precision=4,
                          description="Length of the cylinder along its axis")
    radii: FloatVectorProperty(name="Radii", size=3, default=(0.03, 0.03, 0.03),
                               subtype="XYZ_LENGTH", precision=4,
                               description="The ellipsoid's radii along its x, y and z")
    quadrant: EnumProperty(name="Quadrant", default="all",
                           description="The side of the surface the path may wrap on", items=[
        (q, q, f"The path wraps on the {q} side" if q != "all" else "Either side")
        for q in ("all", "x", "-x", "y", "-y", "z", "-z")])
    use_active_muscle: BoolProperty(name="Wrap the Chosen Muscle", default=True,
                                    description="The muscle chosen in the list wraps over it")

    @reporting
    def execute(self, context):
        from ...core.muscles.paths import PathWrap
        from ...core.muscles.wrap import WrapObject

        arm = context.object
        data = arm.data
        model = osim_rig(data, fitted=False).model
        name = self.name.strip()
        if not name or name in model.wrap_objects:
            raise ValueError(f"wrap object name '{name}' is empty or taken; give it a new name")
        body = _target_body(arm, self.body)
        B = muscles.body_pose(arm, osim_rig(data), body)
        T = np.eye(4)
        T[:3, 3] = picked_points(context, arm, "CURSOR")[0]
        pose = np.linalg.solve(B, T)
        w = WrapObject(name, self.kind, body, pose, quadrant=self.quadrant, radius=self.radius,
                       length=self.length, radii=np.array(self.radii))
        edited_muscles = dict(model.muscles)
        text = f"Added wrap object {name} ({self.kind}) on {body}"
        if self.use_active_muscle and data.spline_joints_osim.muscles:
            muscle = edited_muscles[_active_muscle(data)]
            path = dataclasses.replace(muscle.path, wraps=[
                *muscle.path.wraps, PathWrap(name, name=f"{muscle.name}-{name}")])
            edited_muscles[muscle.name] = dataclasses.replace(muscle, path=path)
            text += f"; {muscle.name} wraps over it"
        edited = dataclasses.replace(model, muscles=edited_muscles,
                                     wrap_objects={**model.wrap_objects, name: w})
        muscles.store_edited_model(arm, edited)
        self.report({"INFO"}, text)
        return {"FINISHED"}


class SPLINE_JOINTS_OT_simulate_muscles(OsimArmatureOperator, ThreadedBake, bpy.types.Operator):
    """Simulate the model over the scene's frame range, moved by its muscles (activations from
    the armature's keyed '<muscle> activation' properties) and gravity from the pose at the
    first frame, at rest, and key the coordinates with the result (a progress bar; Esc
    cancels and keys nothing)"""

    bl_idname = "spline_joints.simulate_muscles"
    bl_label = "Simulate Muscles"
    bl_options = {"REGISTER", "UNDO"}

    def make_job(self, context):
        return MuscleSimulationJob(context.scene, context.object)


classes = (SPLINE_JOINTS_OT_plot_moment_arm, SPLINE_JOINTS_OT_simulate_muscles, SPLINE_JOINTS_OT_add_muscle_point,
           SPLINE_JOINTS_OT_clear_muscle_points, SPLINE_JOINTS_OT_add_muscle,
           SPLINE_JOINTS_OT_add_wrap_object)
