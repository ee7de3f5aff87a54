#!/usr/bin/env bash
# Every test, on a fresh clone: installs the three pinned environments and the docs environment
# (with Debian's chromium), then runs
#   1. the whole suite (core + real Blender through the bpy module + the documentation site:
#      its strict build, its examples, a headless Chromium on its pages) on Blender 5.0.1
#      (Python 3.11, numpy 1.26: the line of Blender 4.2-5.0),
#   2. the whole suite but the site again on Blender 5.3.0 (Python 3.13, numpy 2.5: the line of
#      Blender 5.1 and later; OpenSim 4.6's comparisons run here),
#   3. the smoke stage (tests marked "smoke": install, register, bake a mechanism and a rig, fit
#      a knee, import an .osim) on Blender 4.2.23 LTS, whose environment has no core test tools.
# Extra arguments go to every pytest call (e.g. -m "not slow" locally).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh main
bash scripts/setup_env.sh py313
bash scripts/setup_env.sh blender42
bash scripts/setup_env.sh docs
jobs=${PYTEST_JOBS:-2}
echo "== Blender 5.0.1, Python 3.11, numpy 1.26: every test"
.venv/bin/python -m pytest -n "$jobs" tests "$@"
echo "== Blender 5.3.0, Python 3.13, numpy 2.5: every test but the documentation site's"
.venv-py313/bin/python -m pytest -n "$jobs" tests --ignore=tests/docs "$@"
echo "== Blender 4.2.23 LTS, Python 3.11: the smoke stage"
.venv-blender42/bin/python -m pytest -n "$jobs" -m smoke tests/blender "$@"
