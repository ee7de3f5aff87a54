#!/usr/bin/env bash
# The main job (README): pinned environment of the newest supported Blender (5.3.0, Python
# 3.13), its extension zip, then every demo baked headless with Workbench contact sheets and a
# summary table in out/ (or the folder given as $1).
#   bash scripts/main.sh [OUT] [extra scripts/main.py options, e.g. --jobs 2 --duration 1]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out}
shift || true
echo "== environment (scripts/setup_env.sh py313)"
bash scripts/setup_env.sh py313
echo "== extension (scripts/build_extension.py --platform linux-x64 --python 3.13)"
.venv-py313/bin/python scripts/build_extension.py --platform linux-x64 --python 3.13
echo "== demos (scripts/main.py --out $out)"
if ! .venv-py313/bin/python scripts/main.py --out "$out" --jobs 2 "$@"; then
  echo "error: the main job failed; see the messages above and $out/.work/*.log" >&2
  exit 1
fi
