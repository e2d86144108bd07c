#!/usr/bin/env bash
# Creates (once) the Python environment that `earthverse validate --regenerate-gt`
# and the benches use, and prints its interpreter path on stdout.
#
#   export EARTHVERSE_PYTHON="$(scripts/python-env.sh)"
#
# The release's compute_gt.py programs import numpy, Pillow and pypdf besides
# the standard library; the HTML-to-text bench compares against lxml.
# Location: $EARTHVERSE_VENV, default .venv-gt in the project (gitignored).
# Base interpreter: $PYTHON, default python3.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${EARTHVERSE_VENV:-$(pwd)/.venv-gt}"
base="${PYTHON:-python3}"
packages=(numpy Pillow pypdf lxml)
if [ ! -x "$venv/bin/python" ]; then
  echo "python-env: creating $venv with $($base --version 2>&1)" >&2
  "$base" -m venv "$venv" >&2
fi
if ! "$venv/bin/python" -c "import numpy, PIL, pypdf, lxml.html" 2>/dev/null; then
  echo "python-env: installing ${packages[*]} into $venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${packages[@]}" >&2
fi
echo "$venv/bin/python"
