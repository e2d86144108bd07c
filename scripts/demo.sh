#!/usr/bin/env bash
# The main job of README.md on the bundled mini release (fixtures/release):
# validate the release, run the deterministic baseline agent over every task,
# run a scripted agent whose plan computes with pandas and numpy in the
# python_exec sandbox (the scientific Python environment is made once by
# scripts/python-env.sh), score the runs and the release's recorded runs with
# the deterministic judge, print the leaderboard and write the HTML report.
# Output goes to $1 (default out/demo). No network, no model API.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-out/demo}"
scripts/bootstrap.sh
scripts/python-env.sh >/dev/null
# EARTHVERSE_DEMO_PROFILE=debug reuses the debug build of the test command
# (all features), as CI does right after the tests; the default is a
# release build.
if [ "${EARTHVERSE_DEMO_PROFILE:-release}" = debug ]; then
  cargo build -p earthverse-cli --all-features
  bin=target/debug/earthverse
else
  cargo build --release -p earthverse-cli --features full
  bin=target/release/earthverse
fi
release=fixtures/release
mkdir -p "$out"

echo "== 1. validate the release (App. C.7 gates)"
$bin validate "$release"

echo "== 2. run the baseline agent on every task (App. C.2 budgets)"
$bin run "$release" --agent baseline --out "$out/runs"

echo "== 2b. python_exec: a scripted agent computes the FIX-001_Q1 ledger with pandas in the sandbox"
$bin run "$release" --agent scripted:fixtures/agents/python-demo.json --out "$out/runs"
python3 - "$out/runs/scripted-python-demo/FIX-001_Q1/trajectory.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
call = next(c for c in run["tool_calls"] if c["tool"] == "python_exec")
env = run["environment"]["python"]
print(f"interpreter {env['interpreter']} (Python {env['python_version']}, numpy {env['packages']['numpy']}, pandas {env['packages']['pandas']})")
print(f"python_exec ok={call['ok']} returncode={call['returncode']}; it printed:")
print(call["stdout"]["text"])
sys.exit(0 if call["ok"] and env["packages"]["pandas"] else 1)
PY

echo "== 3. score the new runs and the recorded runs (deterministic judge, §4.1)"
$bin score "$release" --runs "$out/runs" --out "$out/baseline-scores.jsonl" --restart
$bin score "$release" --runs "$release/exploration/trajectories" --out "$out/recorded-scores.jsonl" --restart --compare-published

echo "== 4. leaderboard (Table 2) and report"
$bin leaderboard "$out/baseline-scores.jsonl" "$out/recorded-scores.jsonl"
$bin report "$out/baseline-scores.jsonl" "$out/recorded-scores.jsonl" --html "$out/report.html"
echo "report: $out/report.html"
