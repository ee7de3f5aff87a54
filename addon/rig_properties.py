"""Simulation settings of the user's own rigs: a joint per bone or object, and the scene's.

``PoseBone.spline_joints_sim`` and ``Object.spline_joints_sim`` hold a
:class:`SPLINE_JOINTS_PG_sim_joint` (the joint to the parent, its limits, spring, kinematic
switch, mass and collision shape), ``Object.spline_joints_collider`` a
:class:`SPLINE_JOINTS_PG_collider` (the object as a collider the simulated bodies meet,
:mod:`.colliders`), ``Scene.spline_joints_sim`` a :class:`SPLINE_JOINTS_PG_sim_settings`
(steps, integrator, initial velocities, the ground, contact defaults, self-collision, the
shape overlay), ``Armature.spline_joints_muscles`` a :class:`SPLINE_JOINTS_PG_rig_muscles`
(the muscles on the armature's bones, :mod:`.rig_muscles`). Bones take their reach cone and twist limit from the reach-cone settings
(``PoseBone.spline_joints``, drawn in the Simulate panel) and a fitted joint from the Fit
panel.
"""

from __future__ import annotations

import math

import bpy
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty, FloatProperty,
                       FloatVectorProperty, IntProperty, PointerProperty, StringProperty)
from bpy.types import PropertyGroup

from .properties import MuscleListSettings, SPLINE_JOINTS_PG_osim_point, retag

JOINT_ITEMS = [
    ("HINGE", "Hinge", "Turns about one axis (a revolute joint), like an elbow or a door"),
    ("SLIDER", "Slider", "Slides along one axis (a prismatic joint), like a piston"),
    ("UNIVERSAL", "Universal", "Turns about two axes, first Axis then Second Axis (a Cardan joint)"),
    ("BALL", "Ball", "Turns freely about its centre (exponential coordinates); limit it with "
                     "the bone's reach cone and twist limit"),
    ("FREE", "Free", "Moves and turns freely: a free-floating body"),
    ("FIXED", "Fixed", "Welded to its parent: moves with it and never relative to it"),
    ("FITTED", "Fitted Joint", "The spline joint fitted in the Fit panel (a knee that rolls "
                               "and slides): the bone moves along the fitted path"),
    ("WIRE", "Bead on Wire", "Slides along the curve object picked in Wire (objects only)"),
]

SPRING_ITEMS = [
    ("RELATIVE", "Frequency and Ratio", "A natural frequency (Hz) and a damping ratio, scaled "
                                        "by the inertia the joint moves: one setting swings "
                                        "alike on any bone size"),
    ("ABSOLUTE", "Stiffness and Damping", "Newton metres per radian and newton metre seconds "
                                          "per radian: the same setting is stiff on a finger "
                                          "and soft on a thigh"),
]

MASS_ITEMS = [
    ("AUTO", "From Meshes", "Volume, centre and inertia of the meshes parented or skinned to "
                            "the bone (or the object's own mesh) at the density; a capsule "
                            "around the bone when it has no mesh"),
    ("CAPSULE", "Capsule", "A capsule of Capsule Radius around the bone at the density"),
    ("MANUAL", "Typed In", "The mass, centre of mass and principal inertias typed below"),
]

COLLISION_ITEMS = [
    ("AUTO", "Automatic", "A bone: a capsule along it; an object: the box of its bounds"),
    ("NONE", "None", "Passes through the ground"),
    ("CAPSULE", "Capsule", "A bone: a capsule along it of Collision Radius; an object: a "
                           "capsule along the longest side of its bounds"),
    ("SPHERE", "Sphere", "A sphere of Collision Radius about the bone's middle (the centre of "
                         "an object's bounds)"),
    ("BOX", "Box", "A bone: a box along it, twice Collision Radius wide; an object: the box of "
                   "its bounds"),
]


def _enabled_changed(self, context):
    """A joint switched on in this version of the add-on records its spring units, so that
    :func:`upgrade_file` can tell it from one saved before they existed."""
    if not self.is_property_set("spring_units"):
        self.spring_units = "RELATIVE"


class SPLINE_JOINTS_PG_sim_joint(PropertyGroup):
    """How one bone (or object) moves in a simulation of its rig."""

    enabled: BoolProperty(name="Simulate", default=False, update=_enabled_changed,
                          description="Simulate this bone (object) on its joint; bones that are "
                                      "not simulated follow their animation")
    kinematic: BoolProperty(name="Kinematic", default=False,
                            description="Follow the keyframed or constrained animation exactly "
                                        "and drive the simulated bones below (a swinging hip "
                                        "carrying a tail); key it off at a frame to simulate "
                                        "the bone from there, starting with the animation's "
                                        "velocities (a hit at frame 40)")
    strength: FloatProperty(name="Strength", default=0.0, min=0.0, soft_max=2.0,
                            description="How strongly the simulated bone follows its animation "
                                        "(keys, constraints, drivers), in its joint or in the "
                                        "world as Follow says: 1 follows "
                                        "it within about a millimetre, 0 is limp; key it to "
                                        "blend in and out")
    follow: EnumProperty(name="Follow", default="LOCAL",
                         items=[("LOCAL", "Local", "Follow the animated pose in the bone's "
                                 "joint: each joint's angles, so errors add up along a chain"),
                                ("GLOBAL", "Global", "Follow the animated pose in the world: "
                                 "the bone is held where the animation puts it, so a ragdoll "
                                 "whose root is free stays upright on a walk (needs the "
                                 "animation of every bone above it)")],
                         description="Where Strength pulls the bone toward its animation: in "
                                     "its joint (Local) or in the world (Global)")
    use_pin: BoolProperty(name="Pin", default=False,
                          description="Hold the bone's Pin At point to Pin Location (or to the "
                                      "Pin Target object) by a spring of Pin Strength, or "
                                      "exactly with Hard; key it on and off (a hand grabs a "
                                      "bar at frame 20 and lets go at frame 50)")
    pin_hard: BoolProperty(name="Hard", default=False,
                           description="Hold the pinned point exactly on its target (a "
                                       "constraint) instead of by a spring; Pin Strength is "
                                       "then unused")
    pin_target: PointerProperty(name="Pin Target", type=bpy.types.Object,
                                description="An object the pin holds the bone to, following "
                                            "its animation; Pin Location is then a point in "
                                            "the object's frame (0: its origin). Empty: Pin "
                                            "Location is a world point")
    pin_at: EnumProperty(name="Pin At", default="TAIL",
                         items=[("HEAD", "Head", "The bone's head (an object's origin)"),
                                ("TAIL", "Tail", "The bone's tail (an object's origin)")],
                         description="The point of the bone that is pinned")
    pin_location: FloatVectorProperty(name="Pin Location", size=3, default=(0.0, 0.0, 0.0),
                                      subtype="TRANSLATION", unit="LENGTH",
                                      description="The world point the pin holds the bone to")
    pin_strength: FloatProperty(name="Pin Strength", default=1.0, min=1e-3, soft_max=5.0,
                                description="How stiffly the pin holds: 1 lets the bone hang "
                                            "about 1 cm below the pin under its own weight "
                                            "(a 5 Hz spring), 4 a quarter of that")
    kind: EnumProperty(name="Joint", items=JOINT_ITEMS, default="BALL",
                       description="How the bone moves relative to its parent")
    axis: FloatVectorProperty(name="Axis", size=3, default=(1.0, 0.0, 0.0), subtype="DIRECTION",
                              description="Hinge or slider axis in the bone's rest frame "
                                          "(X: the bone's X axis, the usual bending axis)")
    axis2: FloatVectorProperty(name="Second Axis", size=3, default=(0.0, 0.0, 1.0),
                               subtype="DIRECTION",
                               description="A universal joint's second axis, in the frame after "
                                           "the first turn")
    use_range: BoolProperty(name="Range", default=False,
                            description="Stop the joint at the ends of a range (end-stops)")
    range_min: FloatProperty(name="Min", default=-math.radians(60.0),
                             description="Lower end-stop: radians for hinges (shown in degrees "
                                         "when the scene uses them), metres for sliders")
    range_max: FloatProperty(name="Max", default=math.radians(60.0),
                             description="Upper end-stop: radians for hinges, metres for sliders")
    use_cone: BoolProperty(name="Reach Cone", default=False,
                           description="Hold a ball joint inside the bone's reach cone and "
                                       "twist limit (the Reach Cone box below)")
    spring_units: EnumProperty(name="Spring", items=SPRING_ITEMS, default="RELATIVE",
                               description="How the spring and damper toward the rest pose "
                                           "are given")
    frequency: FloatProperty(name="Frequency", default=0.0, min=0.0, soft_max=20.0,
                             description="Hertz: how fast the bone swings back toward its rest "
                                         "pose on its own (the bones below it held), the same "
                                         "on a finger and on a thigh; 0: no spring, the bone "
                                         "is limp")
    damping_ratio: FloatProperty(name="Damping Ratio", default=0.1, min=0.0, soft_max=2.0,
                                 description="How quickly the swing dies out: 0 swings on, "
                                             "0.1 a few visible wobbles, 1 settles without "
                                             "overshoot (critical), above 1 creeps back; with "
                                             "Frequency 0, the ratio of a 1 Hz swing: the "
                                             "bone's speed decays as exp(-12.6 ratio t)")
    stiffness: FloatProperty(name="Stiffness", default=0.0, min=0.0,
                             description="Spring toward the rest pose, per coordinate: newton "
                                         "metres per radian (newtons per metre for sliders); 0: "
                                         "no spring")
    damping: FloatProperty(name="Damping", default=0.0, min=0.0,
                           description="Damper per coordinate: newton metre seconds per radian "
                                       "(newton seconds per metre for sliders), so the motion "
                                       "settles")
    wire: PointerProperty(name="Wire", type=bpy.types.Object,
                          poll=lambda self, obj: obj.type == "CURVE",
                          description="The curve object this bead slides along")
    parent: PointerProperty(name="Joint Parent", type=bpy.types.Object,
                            description="Object this object's joint connects to (empty: its "
                                        "Blender parent, or the world)")
    parent_bone: bpy.props.StringProperty(
        name="Joint Parent Bone",
        description="The bone this bone's joint connects to (empty: its parent in the "
                    "armature); Make Ragdoll sets it on a Rigify rig's deforming bones, whose "
                    "armature parents are ORG bones. Needs Keys On")
    key_bone: bpy.props.StringProperty(
        name="Keys On",
        description="The control bone a bake keys so that this bone shows the simulation "
                    "(empty: this bone itself), e.g. the FK control a Rigify DEF bone follows")
    rest: FloatVectorProperty(name="Rest Pose", size=16, default=(0.0,) * 16,
                              description="The object's rest pose in its joint parent, row-major "
                                          "4x4 (all zero: the pose at the start frame)")
    mass_source: EnumProperty(name="Mass", items=MASS_ITEMS, default="AUTO",
                              description="Where the mass properties come from")
    density: FloatProperty(name="Density", default=1000.0, min=1e-6,
                           description="Kilograms per cubic metre (water 1000, muscle 1060, "
                                       "bone 1900, steel 7850)")
    capsule_radius: FloatProperty(name="Capsule Radius", default=0.0, min=0.0, unit="LENGTH",
                                  description="Radius of the capsule around a bone without a "
                                              "mesh (0: a tenth of the bone's length)")
    mass: FloatProperty(name="Mass", default=1.0, min=0.0, unit="MASS",
                        description="Kilograms (typed-in mass)")
    com: FloatVectorProperty(name="Centre of Mass", size=3, default=(0.0, 0.0, 0.0), unit="LENGTH",
                             description="Centre of mass in the bone's rest frame (metres; Y "
                                         "along the bone)")
    inertia: FloatVectorProperty(name="Inertia", size=3, default=(0.01, 0.001, 0.01), min=0.0,
                                 description="Principal moments of inertia about the centre of "
                                             "mass along the bone's X, Y, Z axes (kg m^2)")
    collision: EnumProperty(name="Collision", items=COLLISION_ITEMS, default="AUTO",
                            description="The shape that meets the ground")
    collision_radius: FloatProperty(name="Collision Radius", default=0.0, min=0.0,
                                    unit="LENGTH",
                                    description="Radius of a capsule or sphere, half width "
                                                "of a bone's box (0: a tenth of the bone's "
                                                "length, a sphere half of it; objects: from "
                                                "their bounds)")
    shown_mass: FloatProperty(name="Mass", unit="MASS",
                              description="Mass the last simulation used (kg)")
    shown_source: bpy.props.StringProperty(name="Mass From",
                                           description="Where the last simulation's mass came "
                                                       "from")


COLLIDER_ITEMS = [
    ("AUTO", "Automatic", "The sphere, capsule or box of the mesh's bounds whose volume is "
                          "closest to the mesh's convex hull's"),
    ("SPHERE", "Sphere", "A sphere about the centre of the mesh's bounds, radius its largest "
                         "half side"),
    ("CAPSULE", "Capsule", "A capsule along the longest side of the mesh's bounds"),
    ("BOX", "Box", "The box of the mesh's bounds"),
    ("CONVEX_HULL", "Convex Hull", "The convex hull of the evaluated mesh's vertices (a "
                                   "concave mesh is filled in; the bake report says so)"),
]


class SPLINE_JOINTS_PG_collider(PropertyGroup):
    """An object as a collider of the simulated rigs (it pushes, it is not pushed)."""

    enabled: BoolProperty(name="Collider", default=False,
                          description="The simulated bones and objects of this scene land on "
                                      "and are pushed by this object; an animated object "
                                      "moves them along (its scale must not change)")
    shape: EnumProperty(name="Shape", items=COLLIDER_ITEMS, default="AUTO",
                        description="The collision shape taken from the object's mesh at the "
                                    "start frame (modifiers applied)")
    use_friction: BoolProperty(name="Own Friction", default=False,
                               description="Give this collider its own friction; off: the "
                                           "simulated body's, else the scene's Contact Friction")
    friction: FloatProperty(name="Friction", default=0.5, min=0.0,
                            description="Coulomb friction coefficient of this collider")
    use_restitution: BoolProperty(name="Own Bounce", default=False,
                                  description="Give this collider its own restitution; off: "
                                              "the scene's Bounce")
    restitution: FloatProperty(name="Bounce", default=0.0, min=0.0, max=1.0,
                               description="Restitution of this collider: 0 lands dead, 1 "
                                           "bounces back at full speed")


def _show_shapes_changed(self, context):
    from . import shape_overlay

    shape_overlay.sync()


class SPLINE_JOINTS_PG_sim_settings(PropertyGroup):
    """The scene's simulation settings for its rigs."""

    substeps: IntProperty(name="Substeps", default=16, min=1, max=1000,
                          description="Integration steps per frame: more steps follow fast "
                                      "motion and stiff limits more faithfully, at more cost")
    integrator: EnumProperty(name="Integrator", default="implicit", items=[
        ("implicit", "Implicit Euler", "First order, one evaluation per step, springs and "
                                       "dampers taken implicitly: stable at any stiffness "
                                       "and damping"),
        ("rk4", "Runge-Kutta 4", "Fourth order: accurate, four evaluations per step; stiff "
                                 "springs and dampers need more substeps"),
        ("semi_implicit", "Semi-Implicit Euler", "First order, one evaluation per step: fast "
                                                 "and stable for stiff springs"),
    ], description="Time stepping method")
    use_velocities: BoolProperty(name="Start Moving", default=True,
                                 description="Start the simulated bones with the velocity of "
                                             "their animation at the start frame (central "
                                             "differences of the frames around it); off: start "
                                             "at rest")
    live: BoolProperty(name="Live", default=False,
                       description="Simulate Preview computes each frame when the playhead "
                                   "reaches it (and a little ahead), so playback starts at "
                                   "once; off: the whole range first, with a progress bar")
    restitution: FloatProperty(name="Bounce", default=0.0, min=0.0, max=1.0,
                               description="Restitution at end-stops and cone limits, and of "
                                           "contacts where neither side has its own: 0 stops "
                                           "dead, 1 bounces back at full speed")
    friction: FloatProperty(name="Contact Friction", default=0.5, min=0.0,
                            description="Coulomb friction of contacts with colliders that have "
                                        "no friction of their own")
    use_self_collision: BoolProperty(name="Self-Collision", default=False,
                                     description="The collision shapes of the simulated bodies "
                                                 "of a rig also meet each other (bodies that "
                                                 "are not parent and child)")
    show_shapes: BoolProperty(name="Show Shapes", default=False, update=_show_shapes_changed,
                              description="Draw the collision shapes of the simulated bodies "
                                          "and of the colliders as wireframes in the viewport")
    use_ground: BoolProperty(name="Ground", default=True,
                             description="A ground plane the simulated bodies land on (their "
                                         "Collision shapes); off: they fall through")
    ground_height: FloatProperty(name="Height", default=0.0, unit="LENGTH",
                                 description="Height of the ground plane (world Z)")
    ground_friction: FloatProperty(name="Friction", default=0.5, min=0.0,
                                   description="Coulomb friction coefficient of the ground")
    ground_restitution: FloatProperty(name="Ground Bounce", default=0.0, min=0.0, max=1.0,
                                      description="Restitution of the ground: 0 lands dead, 1 "
                                                  "bounces back at full speed")


class SPLINE_JOINTS_PG_rig_muscle(PropertyGroup):
    """A muscle on an armature's bones (``name``): its path ``points`` (``body``: the bone,
    ``location``: in the bone's frame, m), its parameters (DeGroote-Fregly 2016, rigid tendon)
    and ``coordinates`` and ``joints``, both the bones whose joints it spans (a rig's
    coordinates are named by their bones; the list's Spans filter and the plot read them)."""

    points: CollectionProperty(type=SPLINE_JOINTS_PG_osim_point,
                               description="The path points, in order")
    max_isometric_force: FloatProperty(name="Max Isometric Force (N)", default=500.0, min=0.0,
                                       update=retag,
                                       description="The fibres' force at optimal length, fully "
                                                   "active and not moving")
    optimal_fiber_length: FloatProperty(name="Optimal Fibre Length", default=0.1, min=0.0,
                                        subtype="DISTANCE", precision=4, update=retag,
                                        description="The fibre length at which active force "
                                                    "peaks")
    tendon_slack_length: FloatProperty(name="Tendon Slack Length", default=0.1, min=0.0,
                                       subtype="DISTANCE", precision=4, update=retag,
                                       description="The tendon's length (rigid): the path "
                                                   "length minus it is the fibres' along the "
                                                   "path")
    pennation_angle: FloatProperty(name="Pennation Angle", default=0.0, min=0.0,
                                   max=0.5 * math.pi - 1e-3, subtype="ANGLE", update=retag,
                                   description="The fibres' angle to the tendon at optimal "
                                               "fibre length")
    coordinates: StringProperty(name="Coordinates", description="The bones whose joints the "
                                                                "muscle spans")
    joints: StringProperty(name="Joints", description="The bones whose joints the muscle spans")


class SPLINE_JOINTS_PG_rig_muscles(MuscleListSettings, PropertyGroup):
    """On an armature's data: its muscles, and the list's and plot's settings
    (:class:`.properties.MuscleListSettings`)."""

    muscles: CollectionProperty(type=SPLINE_JOINTS_PG_rig_muscle,
                                description="The muscles on the armature's bones")


classes = (SPLINE_JOINTS_PG_sim_joint, SPLINE_JOINTS_PG_collider, SPLINE_JOINTS_PG_sim_settings,
           SPLINE_JOINTS_PG_rig_muscle, SPLINE_JOINTS_PG_rig_muscles)


def _sim_joints():
    for obj in bpy.data.objects:
        yield obj, obj.spline_joints_sim
        if obj.pose is not None:
            for pb in obj.pose.bones:
                yield obj, pb.spline_joints_sim


def upgrade_file():
    """Keep the motion of rigs saved before spring units and the implicit integrator: a
    simulated joint without recorded spring units keeps its Stiffness and Damping
    (``ABSOLUTE``), and the scenes showing such a rig keep Runge-Kutta 4 when they never
    chose an integrator. Returns the number of joints upgraded."""
    old = [(obj, s) for obj, s in _sim_joints()
           if s.is_property_set("enabled") and not s.is_property_set("spring_units")]
    for _, s in old:
        s.spring_units = "ABSOLUTE"
    owners = {obj.name for obj, _ in old}
    for scene in bpy.data.scenes:
        st = scene.spline_joints_sim
        if not st.is_property_set("integrator") and any(o.name in owners for o in scene.objects):
            st.integrator = "rk4"
    return len(old)


@bpy.app.handlers.persistent
def _on_load(*_args):
    upgrade_file()


def register_properties():
    """Register the property groups and :func:`upgrade_file` on every file load."""
    if _on_load not in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.append(_on_load)
    bpy.types.PoseBone.spline_joints_sim = PointerProperty(type=SPLINE_JOINTS_PG_sim_joint)
    bpy.types.Object.spline_joints_sim = PointerProperty(type=SPLINE_JOINTS_PG_sim_joint)
    bpy.types.Object.spline_joints_collider = PointerProperty(type=SPLINE_JOINTS_PG_collider)
    bpy.types.Scene.spline_joints_sim = PointerProperty(type=SPLINE_JOINTS_PG_sim_settings)
    bpy.types.Armature.spline_joints_muscles = PointerProperty(type=SPLINE_JOINTS_PG_rig_muscles)


def unregister_properties():
    while _on_load in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.remove(_on_load)
    del bpy.types.Armature.spline_joints_muscles
    del bpy.types.Scene.spline_joints_sim
    del bpy.types.Object.spline_joints_collider
    del bpy.types.Object.spline_joints_sim
    del bpy.types.PoseBone.spline_joints_sim
