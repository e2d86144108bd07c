#!/usr/bin/env bash
# The test command of README.md: installs system packages, then runs every
# test of the workspace with all features (GDAL, NetCDF, dev-slice tests).
# Dev-slice tests read EARTHVERSE_DATA (default ../shared/earthverse-dev/data).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
export EARTHVERSE_DATA="${EARTHVERSE_DATA:-$(pwd)/../shared/earthverse-dev/data}"
# Python with numpy, Pillow, pypdf (and lxml) for --regenerate-gt tests (venv .venv-gt).
export EARTHVERSE_PYTHON="${EARTHVERSE_PYTHON:-$(scripts/python-env.sh)}"
cargo test --workspace --all-features --no-fail-fast "$@"
