"""Data of linkages stored in the .blend: ``Scene.spline_joints_linkages`` (a collection of
:class:`SPLINE_JOINTS_PG_linkage`), ``Scene.spline_joints_active_linkage`` and the mass of a
body, ``Object.spline_joints_linkage_mass`` (``PoseBone.spline_joints_linkage_mass`` for a bone).

A linkage holds its joints (and springs) between pairs of objects or bones; each joint's two frames,
one fixed in each body, are double-precision ID properties of the joint item
(:data:`FRAME_KEYS`, written and read only by :mod:`.linkage_bridge`). Nothing here runs
code: saved with the file, restored by undo.
"""

from __future__ import annotations

import math

import bpy
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty, FloatProperty, IntProperty,
                       PointerProperty, StringProperty)
from bpy.types import PropertyGroup

#: ID-property keys of a joint's frame in body 1 and in body 2 (16 doubles, row-major 4x4, m)
FRAME_KEYS = ("frame1_f64", "frame2_f64")

#: joint types; files store an item's position in this list, so new types go at its end
KIND_ITEMS = [
    ("hinge", "Hinge", "Turns about the joint axis"),
    ("ball", "Ball", "Turns about any axis through the joint point (optional reach cone)"),
    ("slider", "Slider", "Slides along the joint axis, no turning"),
    ("cylinder", "Cylinder", "Slides along and turns about the joint axis"),
    ("fixed", "Fixed", "Holds the two bodies together"),
    ("line", "Point on Line", "The joint point of the second body slides along the axis of the "
                              "first, any rotation (a loose pin that closes a flat loop without "
                              "repeating constraints)"),
    ("plane", "Point on Plane", "The joint point of the second body stays on the plane normal "
                                "to the axis through the first's joint point"),
    ("slotted", "Slotted Hinge", "Slides along the joint's X axis and turns about its axis (Z); "
                                 "simulated with limits at the slot's ends"),
    ("spring", "Spring", "A linear spring between the joint points (no constraint)"),
    ("curve", "Spline Curve", "The second body rides a spline curve joint through the points "
                              "of a curve object (the path Blender draws for an order-4 "
                              "NURBS), keeping its turn relative to the first body"),
    ("curve_point", "Point on Curve", "The joint point of the second body stays on the path of a "
                                      "Spline Curve joint through a curve object's points, free "
                                      "to turn"),
    ("surface_point", "Point on Surface", "The joint point of the second body stays on the "
                                          "spline surface through the points of a NURBS "
                                          "surface object (the surface Blender draws at order "
                                          "4), free to turn"),
]

AXIS_ITEMS = [("WORLD_X", "World X", "The world X axis"),
              ("WORLD_Y", "World Y", "The world Y axis"),
              ("WORLD_Z", "World Z", "The world Z axis"),
              ("LOCAL_X", "Active X", "The active object's local X axis"),
              ("LOCAL_Y", "Active Y", "The active object's local Y axis"),
              ("LOCAL_Z", "Active Z", "The active object's local Z axis")]

MODE_ITEMS = [("DYNAMICS", "Dynamics", "Simulate the linkage under gravity and its springs "
                                       "from where it stands, the driver (if any) following "
                                       "its keys"),
              ("ASSEMBLY", "Live Assembly", "Key the live assembly's poses as the driver moves "
                                            "over the scene's frames")]


def _retag(self, context):
    """A setting of the live assembly changed: make the handler solve again."""
    scene = self.id_data
    if isinstance(scene, bpy.types.Scene):
        scene.update_tag()


class SPLINE_JOINTS_PG_link_joint(PropertyGroup):
    """One joint (or spring) between two objects of a linkage."""

    kind: EnumProperty(name="Type", items=KIND_ITEMS, default="hinge", update=_retag,
                       description="What the joint allows between the two bodies (a hinge "
                                   "turns, a slider slides, a spring pulls)")
    body1: PointerProperty(name="First Body", type=bpy.types.Object,
                           description="The body the joint is fixed in (empty: the world)")
    body2: PointerProperty(name="Second Body", type=bpy.types.Object,
                           description="The body that moves relative to the first")
    bone1: StringProperty(name="First Bone",
                          description="A bone of the first body (an armature) that is the body; "
                                      "empty: the object itself")
    bone2: StringProperty(name="Second Bone",
                          description="A bone of the second body (an armature) that is the body; "
                                      "empty: the object itself")
    to_world: BoolProperty(name="To the World",
                           description="The first body is the world (set when only one object "
                                       "was selected)")
    curve: PointerProperty(name="Curve", type=bpy.types.Object,
                           poll=lambda self, obj: obj.type == "CURVE",
                           description="Curve object whose points (at least 4, in its first "
                                       "spline) are the control points of a Spline Curve joint")
    surface: PointerProperty(name="Surface", type=bpy.types.Object,
                             poll=lambda self, obj: obj.type == "SURFACE",
                             description="NURBS surface object whose points (at least 4 x 4, in "
                                         "its first spline) are the control points of a Point "
                                         "on Surface joint")
    use_limits: BoolProperty(name="Limits", update=_retag,
                             description="Stop the joint at its limits in a dynamics bake "
                                         "(hinge, cylinder, slotted hinge, slider, point on "
                                         "line: its coordinates' ranges; ball: a reach cone "
                                         "about its axis)")
    lower_angle: FloatProperty(name="Lowest Angle", subtype="ANGLE", default=-math.pi / 2,
                               description="Lowest turn from where the joint was added")
    upper_angle: FloatProperty(name="Highest Angle", subtype="ANGLE", default=math.pi / 2,
                               description="Highest turn from where the joint was added")
    lower_slide: FloatProperty(name="Lowest Slide", unit="LENGTH", default=-0.5,
                               description="Lowest slide from where the joint was added (m)")
    upper_slide: FloatProperty(name="Highest Slide", unit="LENGTH", default=0.5,
                               description="Highest slide from where the joint was added (m)")
    cone: FloatProperty(name="Reach Cone", subtype="ANGLE", default=math.pi / 4, min=0.0,
                        max=math.pi, description="Half angle of the ball's reach cone about "
                                                 "its axis")
    stiffness: FloatProperty(name="Stiffness", default=100.0, min=0.0,
                             description="Spring force per metre of stretch (N/m)")
    rest_length: FloatProperty(name="Rest Length", default=0.0, min=0.0, unit="LENGTH",
                               description="Length at which the spring pulls with no force (m)")
    damping: FloatProperty(name="Damping", default=0.0, min=0.0,
                           description="Spring force per metre per second of stretch rate "
                                       "(N s/m)")


class SPLINE_JOINTS_PG_linkage(PropertyGroup):
    """A linkage: its joints, its driver, the live assembly's settings and the last bake."""

    joints: CollectionProperty(type=SPLINE_JOINTS_PG_link_joint,
                               description="The joints and springs between the linkage's bodies")
    active_joint: IntProperty(name="Active Joint",
                              description="The joint selected in the linkage's list")
    driver: PointerProperty(name="Driving Body", type=bpy.types.Object, update=_retag,
                            description="The body you move or key; the others follow it")
    driver_bone: StringProperty(name="Driving Bone", update=_retag,
                                description="A bone of the driving armature that is the driving "
                                            "body; empty: the object itself")
    drive_joint: StringProperty(name="Driving Joint", update=_retag,
                                description="Name of a hinge or slider to the world whose "
                                            "coordinate (Drive Value) moves its body")
    drive_value: FloatProperty(name="Drive Value", update=_retag,
                               description="Coordinate of the driving joint: angle (rad) of a "
                                           "hinge, travel (m) of a slider; key it to animate")
    live: BoolProperty(name="Live Assembly", default=True, update=_retag,
                       description="Follow the driver on every frame change and edit")
    cg_iterations: IntProperty(name="CG Iterations", default=50, min=1, max=1000, update=_retag,
                               description="Cap on conjugate-gradient iterations per "
                                           "correction: fewer is faster, less accurate")
    geometric_iterations: IntProperty(name="Corrections", default=10, min=1, max=100,
                                      update=_retag,
                                      description="Cap on linearize-and-correct rounds per "
                                                  "assembly")
    tolerance: FloatProperty(name="Tolerance", default=1e-10, min=1e-15, max=1.0, precision=12,
                             update=_retag,
                             description="Stop correcting below this constraint error "
                                         "(m, or rad for rotations)")
    error: FloatProperty(name="Constraint Error", precision=12,
                         description="Largest constraint error of the last live assembly "
                                     "(m, or rad for rotations)")
    status: StringProperty(name="Status", description="What the last live assembly said")
    mode: EnumProperty(name="Bake", items=MODE_ITEMS, default="DYNAMICS",
                       description="What Bake keys: a dynamics simulation, or the live "
                                   "assembly over the frames")
    duration: FloatProperty(name="Duration", default=2.0, min=0.01, unit="TIME_ABSOLUTE",
                            description="Simulated time of a dynamics bake (s)")
    substeps: IntProperty(name="Substeps", default=10, min=1, max=1000,
                          description="Integration steps per frame of a dynamics bake")
    baked_frames: IntProperty(name="Baked Frames", description="Frames keyed by the last bake")
    bake_seconds: FloatProperty(name="Bake Time (s)", description="Seconds the last bake took")
    solver: StringProperty(name="Solver", description="Solver of the last bake")
    constraint_error: FloatProperty(name="Constraint Error", precision=12,
                                    description="Largest constraint error over the baked "
                                                "frames (m, or rad for rotations)")
    limit_violation: FloatProperty(name="Limit Violation", precision=6,
                                   description="Deepest violation of a limit over the baked "
                                               "frames (m or rad)")
    violation_tolerance: FloatProperty(name="Violation Tolerance", precision=6,
                                       description="What the couplings solver allows past a "
                                                   "limit: its deadband plus one step's travel")
    engagements: IntProperty(name="Engagements",
                             description="How many times a limit engaged in the last bake")


classes = (SPLINE_JOINTS_PG_link_joint, SPLINE_JOINTS_PG_linkage)


def register_properties():
    bpy.types.Scene.spline_joints_linkages = CollectionProperty(type=SPLINE_JOINTS_PG_linkage)
    bpy.types.Scene.spline_joints_active_linkage = IntProperty(name="Active Linkage")
    bpy.types.Object.spline_joints_linkage_mass = FloatProperty(
        name="Mass", default=1.0, min=1e-6, unit="MASS",
        description="Mass of this body in a linkage (kg); its inertia is that of a solid box "
                    "of its bounding box, about its origin")
    bpy.types.PoseBone.spline_joints_linkage_mass = FloatProperty(
        name="Mass", default=1.0, min=1e-6, unit="MASS",
        description="Mass of this bone as a linkage body (kg); its inertia is that of a solid "
                    "box along the bone, a fifth of its length wide, about its head")


def unregister_properties():
    del bpy.types.PoseBone.spline_joints_linkage_mass
    del bpy.types.Object.spline_joints_linkage_mass
    del bpy.types.Scene.spline_joints_active_linkage
    del bpy.types.Scene.spline_joints_linkages
