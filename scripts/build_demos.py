"""Write demo_blends/: one .blend per core demo mechanism, rig, linkage and the OpenSim walk,
with bpy.

    .venv/bin/python scripts/build_demos.py                 # every file
    .venv/bin/python scripts/build_demos.py --only globe knee_fit_rig
    .venv/bin/python scripts/build_demos.py --out DIR --zip build/dist/spline_joints-...zip

The extension zip (built with scripts/build_extension.py --platform linux-x64 unless --zip is
given) is installed into a private, temporary Blender user folder (BLENDER_USER_RESOURCES) and
enabled, exactly as the tests do; the user's own Blender configuration is never touched.

Files written, each by its builder in scripts/demos/ (each scene: low-poly meshes,
solid-colour materials, an orthographic camera at ``blender_kit.RESOLUTION`` framing the whole
motion of the bodies (ground planes may run out of view), a sun light and Workbench render
settings; the globe's camera faces where its planes go, ``mechanisms.facing_view``):

* ``<demo>.blend`` for every key of ``core.mechanisms.DEMOS`` (mechanisms.py): the mechanism
  placed with the add-on's ``spline_joints.add_mechanism`` at the demo's own frame rate and
  duration, unbaked (the operator also draws the mechanism's world-fixed ``scenery``, such as
  the deforming demo's sheet, in its shape at t = 0; ``spline_joints.bake_dynamics`` keys its
  motion). The camera frames the motion, which is simulated once here (core only, 2
  processes).
* ``knee_fit_rig.blend`` (knee_fit_rig.py): femur/tibia armature; the tibia is posed over the
  OpenSim gait2392 knee range (1-degree grid, ``core.reference.KneeGait2392``), the poses are
  recorded with ``spline_joints.capture_range`` (frame-number source), fitted with
  ``spline_joints.fit`` (12-frame spline curve, path drawn) and driven by the ``sj_q0``
  slider, which is animated.
* ``scapulothoracic_fit_rig.blend`` (scapulothoracic_fit_rig.py): thorax ellipsoid and scapula;
  the 17 x 11 Seth 2019 grid (``core.reference.ScapulothoracicSeth2019``) captured with
  ``spline_joints.capture_pose`` (custom-property source), a fitted 8 x 6 spline surface joint
  and animated sliders.
* ``shoulder_reach_cone.blend`` (shoulder_reach_cone.py): a humerus on a ball joint; swing
  samples captured, a reach cone fitted (``spline_joints.fit_reach_cone``) and drawn
  (``spline_joints.draw_reach_cone``).
* ``gait2392_walk.blend`` (gait2392_walk.py): the OpenSim gait2392 model with its bone meshes
  (``spline_joints.import_osim``) imported twice, ``GAIT_SPACING`` apart across the walk,
  both keyed with the walking motion (``spline_joints.import_osim_motion``); the second with
  knee_r and knee_l replaced by fitted spline joints (``spline_joints.fit_osim_joint``). A label
  follows each pelvis, a ground plane lies under the feet, the camera frames the whole walk,
  and the text ``CREDITS`` gives the model's authors and licence (CC BY 3.0). The model,
  meshes and motion are read from ``OSIM_DATA``.
* ``gait2392_mocap.blend`` (gait2392_mocap.py): OpenSim's gait2392 motion-capture example
  run with the Motion Capture panel's operators: the subject scaled from the static trial
  (``spline_joints.scale_model``), the walking trial's markers (``spline_joints.import_markers``,
  each also showing an instanced sphere so that it renders), the scaled model solved through
  them (``spline_joints.inverse_kinematics``) and the ground reaction forces as arrows
  (``spline_joints.draw_forces``); ground plane, camera framing the walk, ``CREDITS``.
* ``gait2392_muscles.blend`` (muscles.py): gait2392 with its 92 muscles drawn (curves through
  their paths, coloured by length change) while it walks the same motion.
* ``arm26_biceps.blend`` (muscles.py): arm26 with its six muscles wrapping over its wrap
  surfaces, the biceps activated (keyed activation properties) and one second of the forward
  simulation keyed by ``spline_joints.simulate_muscles``: the biceps flexes the elbow.
* ``four_bar_linkage.blend``, ``scissor_lift.blend``, ``door_stop.blend`` (linkages.py): the
  demo linkages (``spline_joints.add_demo_linkage``), driven and released.
* ``character_rig.blend``: a small character sitting on a ledge, swaying (keyed hips), whose
  tail (8 bones on ball joints in reach cones, damped) and shins (on spline knees fitted to the
  gait2392 knee preset) are simulated: the Simulate panel's settings, unbaked
  (character_rig.py; ``spline_joints.bake_rig`` and scripts/bake.py bake it).
* ``ragdoll_steps.blend``: the character's body (no tail) as a limp ragdoll, every bone simulated
  (free hips, ball joints in elliptical reach cones with twist limits, hinge knees and elbows
  with end-stops; capsules and spheres as collision shapes), tipped off the top of four box
  steps marked as colliders, the ground on (ragdoll_steps.py); unbaked.
* ``chain_in_bowl.blend``: a chain of 12 capsule links (free first link, ball joints in reach
  cones) dropped into a bowl of nine box colliders, with self-collision on
  (chain_in_bowl.py); unbaked.
* ``metarig_ragdoll.blend``: Blender's human meta-rig made a ragdoll by one call of Make
  Ragdoll (joints, ranges, masses and capsules from the bones' names and rest pose), lifted
  and tipped over the ground, a capsule mesh on each simulated bone (metarig_ragdoll.py);
  unbaked.
* ``walk_hit.blend``: the meta-rig made a ragdoll in one step and keyed to walk; its bones
  follow the walk by pose matching (Strength 1) until a ball collider hits its chest, when
  the hips' keyed Kinematic turns off and the Strength is keyed down, and it falls
  (walk_hit.py); unbaked.

Every scene carries ``scene["spline_joints_demo_build"] = BUILD_VERSION``
(scripts/demos/common.py) so the tests can tell a stale file.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from core.mechanisms import DEMOS  # noqa: E402
from scripts import blender_kit as kit  # noqa: E402
from scripts.demos import (chain_in_bowl, character_rig, gait2392_mocap, gait2392_walk,  # noqa: E402
                           knee_fit_rig, linkages, mechanisms, metarig_ragdoll, muscles,
                           ragdoll_steps,
                           scapulothoracic_fit_rig, shoulder_reach_cone, walk_hit)
from scripts.demos.common import OUT  # noqa: E402

#: the builder of each file that is not a core demo mechanism: ``build(out)``, or for the
#: linkages ``build(name, out)``
RIGS = {"knee_fit_rig": knee_fit_rig.build_knee_rig,
        "scapulothoracic_fit_rig": scapulothoracic_fit_rig.build_scapula_rig,
        "shoulder_reach_cone": shoulder_reach_cone.build_shoulder_rig,
        "gait2392_walk": gait2392_walk.build_gait_walk,
        "gait2392_mocap": gait2392_mocap.build_gait_mocap,
        "character_rig": character_rig.build_character_rig,
        "ragdoll_steps": ragdoll_steps.build_ragdoll_steps,
        "chain_in_bowl": chain_in_bowl.build_chain_in_bowl,
        "metarig_ragdoll": metarig_ragdoll.build_metarig_ragdoll,
        "walk_hit": walk_hit.build_walk_hit,
        "gait2392_muscles": muscles.build_gait_muscles,
        "arm26_biceps": muscles.build_arm26_biceps}
LINKAGES = linkages.FILES


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(OUT), help="output folder (default demo_blends/)")
    parser.add_argument("--only", nargs="*", help="file names (without .blend) to write")
    parser.add_argument("--zip", help="extension zip to install (default: build it)")
    parser.add_argument("--jobs", type=int, default=2, help="processes for the framing simulations")
    args = parser.parse_args(argv)
    demos = list(DEMOS)
    names = args.only or demos + list(RIGS) + list(LINKAGES)
    unknown = sorted(set(names) - set(demos) - set(RIGS) - set(LINKAGES))
    if unknown:
        print(f"error: unknown demo(s) {unknown}; choose from {demos + list(RIGS) + list(LINKAGES)}",
              file=sys.stderr)
        return 1
    out = Path(args.out)
    todo = [n for n in names if n in demos]
    zip_path = args.zip or kit.build_zip()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:  # before bpy: spawn-free fork
        framing = dict(zip(todo, pool.map(mechanisms.motion_points, todo)))
    kit.start_blender(zip_path)
    for name in names:
        if name in RIGS:
            RIGS[name](out)
        elif name in LINKAGES:
            linkages.build_linkage_file(name, out)
        else:
            mechanisms.build_mechanism_file(name, *framing[name], out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
