#!/usr/bin/env bash
# The main job (README): pinned environment, extension zip, then every demo baked headless with
# Workbench contact sheets and a summary table in out/ (or the folder given as $1).
#   bash scripts/main.sh [OUT] [extra scripts/main.py options, e.g. --jobs 2 --duration 1]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out}
shift || true
echo "== environment (scripts/setup_env.sh)"
bash scripts/setup_env.sh
echo "== extension (scripts/build_extension.py --platform linux-x64)"
.venv/bin/python scripts/build_extension.py --platform linux-x64
echo "== demos (scripts/main.py --out $out)"
if ! .venv/bin/python scripts/main.py --out "$out" --jobs 2 "$@"; then
  echo "error: the main job failed; see the messages above and $out/.work/*.log" >&2
  exit 1
fi
