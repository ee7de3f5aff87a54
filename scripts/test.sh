#!/usr/bin/env bash
# Every test, on a fresh clone: installs both pinned environments, then runs
#   1. the whole suite (core + real Blender through the bpy module) on Blender's numpy 1.26,
#   2. the core suite again on numpy 2.x.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh main
bash scripts/setup_env.sh numpy2
jobs=${PYTEST_JOBS:-2}
.venv/bin/python -m pytest -n "$jobs" tests "$@"
.venv-np2/bin/python -m pytest -n "$jobs" tests/core "$@"
