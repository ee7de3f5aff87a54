#!/usr/bin/env bash
# Create or update a local virtual environment from pinned requirements.
#   bash scripts/setup_env.sh          -> .venv      (requirements.txt: Blender 5.0 stack with bpy)
#   bash scripts/setup_env.sh numpy2   -> .venv-np2  (requirements-numpy2.txt: the core on numpy 2)
# Re-running is cheap: nothing is installed when the requirements file is unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-main}" in
  main) venv=.venv; req=requirements.txt ;;
  numpy2) venv=.venv-np2; req=requirements-numpy2.txt ;;
  *) echo "usage: $0 [main|numpy2]" >&2; exit 2 ;;
esac
py=${PYTHON:-python3.11}
if ! command -v "$py" >/dev/null 2>&1; then
  echo "error: $py not found; Blender 5.0's bpy module needs Python 3.11 (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi
stamp="$venv/.requirements.sha256"
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r "$req"
echo "$want" > "$stamp"
echo "installed $req into $venv"
