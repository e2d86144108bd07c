#!/usr/bin/env bash
# The main job of README.md on the bundled fixtures.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
cargo build --release -p earthverse-cli --features full
bin=target/release/earthverse
$bin validate fixtures/release
