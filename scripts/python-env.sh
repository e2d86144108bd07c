#!/usr/bin/env bash
# Creates (once) the project's one Python environment and prints its
# interpreter path on stdout:
#
#   export EARTHVERSE_PYTHON="$(scripts/python-env.sh)"
#
# It holds the scientific packages agents' python_exec code imports in the
# release's recorded runs (numpy, pandas, scipy, Pillow, bs4, OpenCV, ...),
# pinned in crates/sandbox/python-requirements.txt, which also serve the
# release's compute_gt.py programs (numpy, Pillow, pypdf) and the benches
# (lxml), and the seven Python libraries of the scientific environments
# (crates/environments: MetPy, xclim, thermofeel, PyET, climate-indices,
# xskillscore, pyextremes). `earthverse run` and `earthverse tools` use this environment by
# default when it exists (and record every version in each run).
#
# Location: $EARTHVERSE_VENV, else $XDG_DATA_HOME/earthverse/python, else
# ~/.local/share/earthverse/python (the same rule as
# earthverse_sandbox::default_environment_dir). Base interpreter: $PYTHON,
# default python3.
set -euo pipefail
cd "$(dirname "$0")/.."
data="${XDG_DATA_HOME:-${HOME:?}/.local/share}"
venv="${EARTHVERSE_VENV:-$data/earthverse/python}"
requirements="$(pwd)/crates/sandbox/python-requirements.txt"
base="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  echo "python-env: creating $venv with $($base --version 2>&1)" >&2
  mkdir -p "$(dirname "$venv")"
  "$base" -m venv "$venv" >&2
fi
# Installed once per version of the pins: the stamp holds their hash.
stamp="$venv/.earthverse-requirements.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "python-env: installing the pinned packages of $requirements into $venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
  "$venv/bin/python" -I -W ignore -c "import numpy, pandas, scipy, PIL, bs4, cv2, imageio, matplotlib, skimage, tifffile, pypdf, PyPDF2, fitz, pdfplumber, lxml.html, xarray, metpy.calc, xclim, thermofeel, pyet, climate_indices, xskillscore, pyextremes" >&2
  echo "$want" > "$stamp"
fi
echo "$venv/bin/python"
