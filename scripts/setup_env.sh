#!/usr/bin/env bash
# Create or update a local virtual environment from pinned requirements.
#   bash scripts/setup_env.sh            -> .venv            (requirements.txt: Blender 5.0.1, Python 3.11, numpy 1.26)
#   bash scripts/setup_env.sh py313      -> .venv-py313      (requirements-py313.txt: Blender 5.3.0, Python 3.13, numpy 2.5, OpenSim 4.6)
#   bash scripts/setup_env.sh blender42  -> .venv-blender42  (requirements-blender42.txt: Blender 4.2.23 LTS, the smoke stage)
#   bash scripts/setup_env.sh docs       -> .venv-docs       (requirements-docs.txt: MkDocs, Material, mkdocstrings; Python 3.11)
#                                           and Debian's chromium, for the docs' browser check, when missing
# The interpreter is $PYTHON if set, else pythonX.Y on PATH, else pyenv's newest X.Y.
# Re-running is cheap: nothing is installed when the requirements file is unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-main}" in
  main) venv=.venv; req=requirements.txt; version=3.11 ;;
  py313) venv=.venv-py313; req=requirements-py313.txt; version=3.13 ;;
  blender42) venv=.venv-blender42; req=requirements-blender42.txt; version=3.11 ;;
  docs) venv=.venv-docs; req=requirements-docs.txt; version=3.11 ;;
  *) echo "usage: $0 [main|py313|blender42|docs]" >&2; exit 2 ;;
esac
if [ "$venv" = .venv-docs ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's chromium (tests/docs/test_docs_browser.py opens the built site in it)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "warning: no chromium on PATH: install Debian's chromium package for the docs' browser check" >&2
  fi
fi
stamp="$venv/.requirements.sha256"
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
find_python() {
  if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"; return; fi
  if "python$version" -c '' >/dev/null 2>&1; then echo "python$version"; return; fi
  local root found
  for root in "$(pyenv root 2>/dev/null)" "${PYENV_ROOT:-}" "$HOME/.pyenv"; do
    [ -n "$root" ] || continue
    found=$(ls -d "$root/versions/$version".*/bin/"python$version" 2>/dev/null | sort -V | tail -1)
    if [ -n "$found" ]; then echo "$found"; return; fi
  done
  echo "error: Python $version not found for $venv ($req); install it, or set PYTHON=/path/to/python$version" >&2
  exit 1
}
py=$(find_python)
if [ -x "$venv/bin/python" ] && ! "$venv/bin/python" -c "import sys; assert sys.version.startswith('$version.')" 2>/dev/null; then
  rm -rf "$venv"                          # made with another Python: start over
fi
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r "$req"
echo "$want" > "$stamp"
echo "installed $req into $venv"
