#!/usr/bin/env bash
# The test command of README.md: installs system packages, then runs every
# test of the workspace with all features (GDAL, NetCDF, dev-slice tests).
# Dev-slice tests read EARTHVERSE_DATA (default ../shared/earthverse-dev/data).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
export EARTHVERSE_DATA="${EARTHVERSE_DATA:-$(pwd)/../shared/earthverse-dev/data}"
# The one Python environment (crates/sandbox/python-requirements.txt: numpy,
# pandas, Pillow, pypdf, lxml, ...) for python_exec and --regenerate-gt tests.
export EARTHVERSE_PYTHON="${EARTHVERSE_PYTHON:-$(scripts/python-env.sh)}"
# Property tests draw from a fixed seed so a run is reproducible; set
# PROPTEST_RNG_SEED to explore other inputs.
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-2026}"
cargo test --workspace --all-features --no-fail-fast "$@"
