#!/usr/bin/env bash
# Build the documentation site into build/site, strict: a broken link, a page missing from the
# navigation or a docstring that does not render fails the build. Creates .venv-docs
# (requirements-docs.txt) on first use. Extra arguments go to `mkdocs build`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh docs
NO_MKDOCS_2_WARNING=1 .venv-docs/bin/mkdocs build --strict --site-dir build/site "$@"
echo "site: build/site/index.html"
