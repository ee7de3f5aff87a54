"""Data stored in the .blend: samples, fitted joint and reach-cone settings, per pose bone.

Everything lives in ``PoseBone.spline_joints`` (a PointerProperty to
:class:`SPLINE_JOINTS_PG_bone_settings`), ``Scene.spline_joints_mechanisms`` and, for an
imported OpenSim model, ``Armature.spline_joints_osim`` (its fitted joints and fit settings,
:class:`SPLINE_JOINTS_PG_osim_settings`), so it is saved
with the file, restored by undo, and carries no executable code. The files store the data under
those attribute names, not under the class names.
"""

from __future__ import annotations

import math

import bpy
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty, FloatProperty,
                       FloatVectorProperty, IntProperty, IntVectorProperty, PointerProperty,
                       StringProperty)
from bpy.types import PropertyGroup

from .bridge import MAX_COORDINATES

AXIS_ITEMS = [("0", "X", "Rotation about the local X axis"),
              ("1", "Y", "Rotation about the local Y axis"),
              ("2", "Z", "Rotation about the local Z axis")]

SOURCE_ITEMS = [
    ("ROTATION", "Rotation Channel", "A rotation channel (radians) of the source bone"),
    ("PROPERTY", "Custom Property", "A numeric custom property of the source bone"),
    ("FRAME", "Frame Number", "The frame number mapped linearly to a coordinate range (1 coordinate)"),
]


class SPLINE_JOINTS_PG_sample(PropertyGroup):
    """One captured pose: coordinate value(s), child-in-parent pose and weight.

    The pose the fits use is the double-precision ID property ``bridge.SAMPLE_POSE_KEY``
    (written and read only through ``bridge.write_sample_pose`` / ``read_sample_poses``);
    ``pose`` is its single-precision copy, and the only pose of samples saved before it.
    """

    q: FloatVectorProperty(name="Coordinates", size=MAX_COORDINATES,
                           description="Driving coordinate values (first n_coordinates are used)")
    n_coordinates: IntProperty(name="Coordinates Used", min=0, max=MAX_COORDINATES,
                               description="How many entries of q are valid (0: no coordinate)")
    pose: FloatVectorProperty(name="Pose", size=16,
                              description="Child-in-parent pose T_parent_child, row-major 4x4, metres "
                                          "(single precision: a copy of the stored double pose)")
    weight: FloatProperty(name="Weight", default=1.0, min=0.0,
                          description="How much this sample counts in the fit (1: like the "
                                      "others, 0: ignored, 2: twice as much)")
    frame: IntProperty(name="Frame", description="Frame the sample was captured at")


def _hold_switched(self, context):
    """Hold Limits switched: the live handler holds the bone at once (:mod:`.holding`)."""
    from .holding import hold_switched

    hold_switched(self)


class SPLINE_JOINTS_PG_bone_settings(PropertyGroup):
    """Spline Joints data of one pose bone (the joint's child; its parent is the joint's parent)."""

    samples: CollectionProperty(type=SPLINE_JOINTS_PG_sample,
                                description="The captured poses the joint is fitted to")
    active_sample: IntProperty(name="Active Sample", default=0,
                               description="The sample selected in the list (Delete Sample "
                                           "removes it)")

    # --- driving coordinate source ---------------------------------------------------------
    n_coordinates: IntProperty(name="Coordinates", default=1, min=1, max=MAX_COORDINATES,
                               description="How many numbers drive the joint: 1 for a hinge-like "
                                           "joint such as a knee (a spline curve), 2 for a joint "
                                           "such as the scapula on the ribcage (a spline surface)")
    source: EnumProperty(name="Source", items=SOURCE_ITEMS, default="ROTATION",
                         description="Where the driving coordinate of a captured sample comes from")
    source_bone: StringProperty(name="Source Bone",
                                description="Bone whose channel or property is read (empty: this bone)")
    rotation_axis_0: EnumProperty(name="Axis 1", items=AXIS_ITEMS, default="0",
                                  description="The source bone's rotation channel (radians) "
                                              "read as the first coordinate")
    rotation_axis_1: EnumProperty(name="Axis 2", items=AXIS_ITEMS, default="2",
                                  description="The source bone's rotation channel (radians) "
                                              "read as the second coordinate")
    property_0: StringProperty(name="Property 1", default="q",
                               description="Name of the source bone's custom property read as "
                                           "the first coordinate")
    property_1: StringProperty(name="Property 2", default="q2",
                               description="Name of the source bone's custom property read as "
                                           "the second coordinate")
    frame_start: IntProperty(name="Frame Start", default=1,
                             description="Frame whose coordinate is Coordinate at Start")
    frame_end: IntProperty(name="Frame End", default=100,
                           description="Frame whose coordinate is Coordinate at End")
    frame_q_start: FloatProperty(name="Coordinate at Start", default=0.0,
                                 description="Coordinate value (radians or metres) at Frame "
                                             "Start; frames in between get values in proportion")
    frame_q_end: FloatProperty(name="Coordinate at End", default=1.0,
                               description="Coordinate value (radians or metres) at Frame End")
    capture_step: IntProperty(name="Step", default=1, min=1,
                              description="Capture every n-th frame (1: every frame; more "
                                          "samples follow the motion more closely)")

    # --- fit settings -------------------------------------------------------------------------
    fit_type: EnumProperty(name="Joint Type", default="CURVE",
                           description="The kind of joint fitted to the samples", items=[
        ("CURVE", "Spline Curve (1-DOF)", "Cumulative B-spline on SE(3) through the samples"),
        ("SURFACE", "Spline Surface (2-DOF)", "Two-coordinate spline joint (needs 2 coordinates)"),
    ])
    fit_frames: IntProperty(name="Control Frames", default=8, min=2, max=64,
                            description="Poses the joint's path is built from: more frames follow "
                                        "the motion more closely (the gait2392 knee: 4 frames "
                                        "0.18 mm RMS, 8 frames 0.04 mm, 16 frames 0.001 mm); "
                                        "more frames than the samples support wander between them")
    fit_order: IntProperty(name="Order", default=4, min=2, max=6,
                           description="Smoothness of the path: 4 (cubic) bends smoothly, 2 goes "
                                       "straight from one control frame to the next")
    fit_smoothing: FloatProperty(name="Smoothing", default=0.0, min=0.0, max=0.99,
                                 description="How much to straighten the motion against following "
                                             "the samples (0: follow them exactly; 0.1 takes a "
                                             "16-frame knee from 0.002 mm to 2 mm): for noisy "
                                             "captures")
    fit_length_scale: FloatProperty(name="Length per Radian", default=0.1, min=1e-4, unit="LENGTH",
                                    description="How the fit weighs position against rotation: "
                                                "an error of this length counts as much as one "
                                                "radian (57 deg) of turn; 0.1 m suits a knee "
                                                "(1 mm counts like 0.57 deg)")
    fit_grid: IntVectorProperty(name="Grid", size=2, default=(6, 6), min=2, max=32,
                                description="Control points along each coordinate of the spline "
                                            "surface: more points follow the motion more closely")
    fit_method: EnumProperty(name="Method", default="se3",
                             description="What the surface fit minimizes", items=[
        ("se3", "SE(3) Metric", "Minimize the SE(3) pose error (Levenberg-Marquardt)"),
        ("coordinatewise", "Coordinate-wise", "Least squares of each coordinate function"),
    ])
    fit_status: StringProperty(name="Fit Status",
                               description="How the last fit ended: converged, stopped at its "
                                           "iteration cap, did not converge, or imported")
    fit_rms_mm: FloatProperty(name="RMS Position (mm)",
                              description="Typical distance (mm, root mean square) between the "
                                          "fitted joint and the captured samples")
    fit_max_mm: FloatProperty(name="Max Position (mm)",
                              description="Largest distance (mm) between the fitted joint and a "
                                          "captured sample")
    fit_rms_deg: FloatProperty(name="RMS Rotation (deg)",
                               description="Typical turn (degrees, root mean square) between the "
                                           "fitted joint and the captured samples")
    fit_max_deg: FloatProperty(name="Max Rotation (deg)",
                               description="Largest turn (degrees) between the fitted joint and "
                                           "a captured sample")

    # --- fitted joint and driving ------------------------------------------------------------
    joint_json: StringProperty(name="Joint", description="Fitted joint as the core's versioned JSON")
    range_min: FloatVectorProperty(name="Range Min", size=MAX_COORDINATES, default=(0.0, 0.0),
                                   description="Lowest value of each coordinate (radians or "
                                               "metres) the stored joint covers")
    range_max: FloatVectorProperty(name="Range Max", size=MAX_COORDINATES, default=(1.0, 1.0),
                                   description="Highest value of each coordinate (radians or "
                                               "metres) the stored joint covers")
    drive: BoolProperty(name="Drive", default=False,
                        description="Pose this bone from its coordinate slider through the stored joint")

    # --- reach cone ---------------------------------------------------------------------------
    hold_limits: BoolProperty(name="Hold Limits", default=False, update=_hold_switched,
                              description="Keep the bone inside its limits while posing and "
                                          "playing: a pose outside the reach cone or twist limit "
                                          "(or, for a driven bone, a coordinate outside the "
                                          "joint's range) moves to the closest pose inside. Keys "
                                          "are not changed")
    cone_shape: EnumProperty(name="Shape", default="CIRCULAR",
                             description="Circular: one limit all round; elliptical: separate "
                                         "limits towards the bone's X and Z axes", items=[
        ("CIRCULAR", "Circular", "One half-angle"),
        ("ELLIPTICAL", "Elliptical", "Two half-angles: swing towards the bone's X and Z axes"),
    ])
    cone_axis: FloatVectorProperty(name="Axis", size=3, default=(0.0, 1.0, 0.0), subtype="DIRECTION",
                                   description="Cone axis in the child bone's rest frame (Y: along the bone)")
    cone_half_angle: FloatProperty(name="Half-Angle", default=math.radians(45.0), min=1e-3, max=math.pi,
                                   subtype="ANGLE", description="Largest swing of the bone from the axis")
    cone_half_angle_x: FloatProperty(name="Half-Angle X", default=math.radians(45.0), min=1e-3,
                                     max=0.5 * math.pi, subtype="ANGLE",
                                     description="Largest swing of the bone towards its X axis")
    cone_half_angle_z: FloatProperty(name="Half-Angle Z", default=math.radians(30.0), min=1e-3,
                                     max=0.5 * math.pi, subtype="ANGLE",
                                     description="Largest swing of the bone towards its Z axis")
    twist_limit: FloatProperty(name="Twist Limit", default=math.pi, min=0.0, max=math.pi, subtype="ANGLE",
                               description="Largest twist about the bone axis")
    cone_margin: FloatProperty(name="Margin", default=math.radians(2.0), min=0.0, max=0.5 * math.pi,
                               subtype="ANGLE", description="Added to the fitted half-angles")
    cone_length: FloatProperty(name="Display Length", default=0.0, min=0.0, unit="LENGTH",
                               description="Length of the drawn cone (0: the bone's length)")


class SPLINE_JOINTS_PG_body_ref(PropertyGroup):
    """One body (or scenery item) of a mechanism: the Blender object that shows it."""

    object: PointerProperty(name="Object", type=bpy.types.Object,
                            description="The Blender object that shows this body")


class SPLINE_JOINTS_PG_mechanism(PropertyGroup):
    """A core demo mechanism placed in the scene (rebuilt from its name and settings to bake)."""

    demo: StringProperty(name="Demo", description="Which demo mechanism this is (a key of "
                                                  "core.mechanisms.DEMOS)")
    title: StringProperty(name="Title", description="The mechanism's name in the list")
    duration: FloatProperty(name="Duration", default=2.0, min=0.01, unit="TIME_ABSOLUTE",
                            description="Seconds of motion to simulate and bake")
    substeps: IntProperty(name="Substeps", default=0, min=0,
                          description="Integration steps per frame (0: the demo's default)")
    bodies: CollectionProperty(type=SPLINE_JOINTS_PG_body_ref,
                               description="Objects that show the mechanism's moving bodies")
    scenery: CollectionProperty(type=SPLINE_JOINTS_PG_body_ref,
                                description="Objects of the mechanism's world-fixed scenery "
                                            "(core Mechanism.scenery), e.g. a deforming surface")
    baked_frames: IntProperty(name="Baked Frames", description="Frames keyed by the last bake")
    energy_drift: FloatProperty(name="Energy Drift",
                                description="Change of the total energy over the last bake, as a "
                                            "fraction of it (0.001: 0.1 %; a mechanism without "
                                            "friction should keep its energy)")
    bake_seconds: FloatProperty(name="Bake Time (s)",
                                description="Seconds the last bake took")
    baked_steps: IntProperty(name="Baked Steps", description="Integration steps of the last bake")
    constraint_error: FloatProperty(name="Constraint Error", unit="LENGTH",
                                    description="Largest constraint error of the last bake (m)")


def retag(self, context):
    """A setting the live drive uses changed (a fitted joint switched, the muscles' colour):
    tag the armature so the live drive poses and draws it again."""
    self.id_data.update_tag()


class SPLINE_JOINTS_PG_osim_fit(PropertyGroup):
    """A spline joint fitted to one joint of the imported OpenSim model (``name``: the joint's
    name). ``joint_json`` is the fitted core.io JointDocument; while ``use`` is on, the live
    drive and the export use it in place of the model's exact joint."""

    joint_json: StringProperty(name="Fitted Joint", description="The fitted joint as JSON (core.io)")
    use: BoolProperty(name="Use Fitted Joint", default=True, update=retag,
                      description="Pose the bones through the fitted spline joint (on) or through "
                                  "the model's exact OpenSim joint (off); the export writes the "
                                  "one in use")
    report: StringProperty(name="Fit Report", description="The fit's errors in plain words")
    max_mm: FloatProperty(name="Largest Distance (mm)",
                          description="Largest distance (mm) between the fitted and the exact "
                                      "joint's child body within the coordinate's range")
    max_deg: FloatProperty(name="Largest Rotation (deg)",
                           description="Largest rotation (degrees) between the fitted and the "
                                       "exact joint's child body within the coordinate's range")
    beyond_mm: FloatProperty(name="Past the Range (mm)",
                             description="Largest distance (mm) between the fitted and the exact "
                                         "joint at the farthest checked point past the range's ends "
                                         "(OpenSim's splines go on straight, the fitted joint along a "
                                         "screw)")


#: the joint picker's items, kept alive while Blender shows them (Blender does not copy them)
_JOINT_ITEMS: list = []


def _fit_joint_items(self, context):
    """Joints of the armature's OpenSim model with 1 or 2 coordinates (those a spline joint fits)."""
    from .documents import osim_rig

    try:
        model = osim_rig(self.id_data, fitted=False).model
    except ValueError:
        model = None
    items = [] if model is None else [
        (j.name, j.name, f"{j.name}: {j.kind} of {', '.join(j.coordinates)}")
        for j in model.joints if len(j.coordinates) in (1, 2)]
    _JOINT_ITEMS[:] = items or [("", "(no joint of 1 or 2 coordinates)", "")]
    return _JOINT_ITEMS


#: what a muscle's colour shows (the OpenSim panel's and a rig's Colour setting)
MUSCLE_COLOR_ITEMS = (
    ("LENGTH", "Length Change", "Colour by the length's change from the rest length: shorter "
                                "blue, at rest red, longer yellow"),
    ("FORCE", "Force", "Colour by the muscle's tension (rigid tendon, at the activations of the "
                       "armature's '<muscle> activation' properties, 0 when missing) relative "
                       "to its maximum isometric force"))


class SPLINE_JOINTS_PG_osim_muscle(PropertyGroup):
    """A muscle of the imported OpenSim model (``name``) with the coordinates and joints it
    spans (space-separated names), for the OpenSim panel's muscle list."""

    coordinates: StringProperty(name="Coordinates", description="The coordinates the muscle's "
                                                                "length depends on")
    joints: StringProperty(name="Joints", description="The joints the muscle spans")


class SPLINE_JOINTS_PG_osim_point(PropertyGroup):
    """A path point placed for the next muscle: ``body`` and ``location`` in its frame (m)."""

    body: StringProperty(name="Body", description="The body the point moves with")
    location: FloatVectorProperty(name="Location", size=3, subtype="TRANSLATION",
                                  description="The point in the body's frame (m)")


#: the plot's coordinate items, kept alive while Blender shows them
_PLOT_ITEMS: list = []


def _plot_coordinate_items(self, context):
    """The coordinates the active muscle spans (those its moment arm can be plotted about)."""
    muscles = self.muscles
    item = muscles[self.active_muscle] if 0 <= self.active_muscle < len(muscles) else None
    names = item.coordinates.split() if item is not None else []
    _PLOT_ITEMS[:] = [(n, n, f"Plot the muscle's moment arm and length against {n}")
                      for n in names] or [("", "(the muscle spans no coordinate)", "")]
    return _PLOT_ITEMS


class MuscleListSettings:
    """Mixin of the muscle settings on an armature's data (an imported OpenSim model's, a
    rig's, :mod:`.rig_properties`), whose ``muscles`` items name the coordinates (on a rig:
    the bones) and the joints each muscle spans: the list's choice and Spans filter, the
    colour setting, the path points placed for the next muscle, and the moment-arm plot's
    coordinate and folder."""

    active_muscle: IntProperty(name="Active Muscle", default=0,
                               description="The muscle chosen in the muscle list")
    muscle_span_filter: StringProperty(
        name="Spans", description="List only the muscles spanning a coordinate or joint (on a "
                                  "rig: a bone's joint) whose name contains this text (e.g. "
                                  "knee)")
    muscle_color: EnumProperty(name="Colour", update=retag, default="LENGTH",
                               items=MUSCLE_COLOR_ITEMS,
                               description="What the muscles' colour shows")
    plot_coordinate: EnumProperty(name="Coordinate", items=_plot_coordinate_items,
                                  description="The coordinate (on a rig: the bone whose Hinge "
                                              "or Slider) the moment-arm plot sweeps over its "
                                              "range, the other coordinates as posed (on a rig: "
                                              "as at the scene's start)")
    draft_points: CollectionProperty(type=SPLINE_JOINTS_PG_osim_point,
                                     description="The path points of the next muscle, in order")
    plot_folder: StringProperty(name="Plot Folder", subtype="DIR_PATH", default="//",
                                description="Folder the moment-arm plot (PNG) and its table "
                                            "(CSV) are written to")


class SPLINE_JOINTS_PG_osim_settings(MuscleListSettings, PropertyGroup):
    """On an imported OpenSim armature's data: the spline joints fitted to its joints, the
    settings of the next fit, and the model's muscles (:class:`MuscleListSettings`)."""

    fits: CollectionProperty(type=SPLINE_JOINTS_PG_osim_fit,
                             description="Spline joints fitted to the model's joints")
    joint: EnumProperty(name="Joint", items=_fit_joint_items,
                        description="The model's joint to fit a spline joint to (joints of 1 or 2 "
                                    "coordinates; other coordinates stay at the model's defaults)")
    n_frames: IntProperty(name="Control Frames", default=8, min=4, max=64,
                          description="Control frames of a 1-coordinate joint: more frames follow "
                                      "the joint more closely; 8 fit the gait2392 knee to 0.08 mm")
    grid: IntVectorProperty(name="Control Grid", size=2, default=(8, 6), min=4, max=24,
                            description="Control points along each coordinate of a 2-coordinate "
                                        "joint: more points follow the joint more closely")
    muscles: CollectionProperty(type=SPLINE_JOINTS_PG_osim_muscle,
                                description="The model's muscles")


classes = (SPLINE_JOINTS_PG_sample, SPLINE_JOINTS_PG_bone_settings, SPLINE_JOINTS_PG_body_ref,
           SPLINE_JOINTS_PG_mechanism, SPLINE_JOINTS_PG_osim_fit, SPLINE_JOINTS_PG_osim_muscle,
           SPLINE_JOINTS_PG_osim_point, SPLINE_JOINTS_PG_osim_settings)


def register_properties():
    bpy.types.PoseBone.spline_joints = PointerProperty(
        type=SPLINE_JOINTS_PG_bone_settings,
        description="Spline Joints data of this bone: samples, fit settings, stored joint")
    bpy.types.Scene.spline_joints_mechanisms = CollectionProperty(
        type=SPLINE_JOINTS_PG_mechanism, description="Demo mechanisms placed in this scene")
    bpy.types.Scene.spline_joints_active_mechanism = IntProperty(
        name="Active Mechanism", description="The mechanism selected in the Mechanisms list")
    bpy.types.Armature.spline_joints_osim = PointerProperty(
        type=SPLINE_JOINTS_PG_osim_settings,
        description="The imported OpenSim model's fitted joints and fit settings")


def unregister_properties():
    del bpy.types.Armature.spline_joints_osim
    del bpy.types.Scene.spline_joints_active_mechanism
    del bpy.types.Scene.spline_joints_mechanisms
    del bpy.types.PoseBone.spline_joints
