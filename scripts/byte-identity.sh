#!/usr/bin/env bash
# Byte-identity of the recorded outputs of unchanged commands between two
# builds of `earthverse` (a refactor proves itself this way):
#
#   scripts/byte-identity.sh BEFORE_BIN AFTER_BIN [OUT]
#
# Runs score (deterministic judge), units, leaderboard (text, slices, JSON,
# JSONL and Parquet tables), compare (a pair and all pairs), report (HTML),
# evidence, validate, tools replay and oracle on the bundled fixtures and the development slice
# ($EARTHVERSE_DATA, default ../shared/earthverse-dev/data) with both
# binaries and compares every output with cmp. Replays carry wall-clock
# seconds, so they are also compared with those fields removed; outputs
# that name their own input file (leaderboard of a score file) are compared
# with that path replaced.
set -u
before="${1:?before binary}"; after="${2:?after binary}"
cd "$(dirname "$0")/.."
data="${EARTHVERSE_DATA:-$(pwd)/../shared/earthverse-dev/data}"
fixtures="$(pwd)/fixtures/release"
out="${3:-$(mktemp -d)}"
mkdir -p "$out/before" "$out/after"
for side in before after; do
  bin="$before"; [ "$side" = after ] && bin="$after"
  o="$out/$side"
  "$bin" score "$data" --runs "$data/exploration/trajectories" --judge deterministic --restart --out "$o/dev-score.jsonl" >/dev/null 2>&1
  "$bin" score "$fixtures" --runs "$fixtures/exploration/trajectories" --judge deterministic --restart --out "$o/fx-score.jsonl" >/dev/null 2>&1
  "$bin" units "$data" --json >"$o/dev-units.json" 2>/dev/null
  "$bin" units "$data" --runs "$data/exploration/trajectories" --json >"$o/dev-units-runs.json" 2>/dev/null
  "$bin" leaderboard --from-recorded "$data/exploration/trajectories" >"$o/dev-leaderboard.txt" 2>/dev/null
  "$bin" leaderboard "$o/dev-score.jsonl" --json 2>/dev/null | sed "s#$o/##g" >"$o/dev-leaderboard-scores.json"
  "$bin" leaderboard --from-recorded "$data/exploration/trajectories" --by capability >"$o/dev-leaderboard-capability.txt" 2>/dev/null
  "$bin" leaderboard --from-recorded "$data/exploration/trajectories" --by difficulty --json >"$o/dev-leaderboard-difficulty.json" 2>/dev/null
  "$bin" leaderboard --from-recorded "$data/exploration/trajectories" --out "$o/dev-leaderboard-rows.parquet" --tasks-out "$o/dev-leaderboard-tasks.jsonl" >/dev/null 2>&1
  "$bin" leaderboard "$o/fx-score.jsonl" --fill-missing --tasks-out "$o/fx-leaderboard-tasks.parquet" | sed "s#$o/##g" >"$o/fx-leaderboard.txt" 2>/dev/null
  "$bin" compare claude-haiku-4-5 claude-sonnet-4-6 --from-recorded "$data/exploration/trajectories" >"$o/dev-compare.txt" 2>/dev/null
  "$bin" compare --all-pairs --from-recorded "$data/exploration/trajectories" --zero-fill --metric unit-accuracy --json --out "$o/dev-compare-pairs.jsonl" >"$o/dev-compare-pairs.json" 2>/dev/null
  "$bin" report --from-recorded "$data/exploration/trajectories" --html "$o/dev-report.html" >/dev/null 2>&1
  "$bin" report "$o/fx-score.jsonl" --runs "$fixtures/exploration/trajectories" --html "$o/fx-report.html" >/dev/null 2>&1
  sed -i "s#$o/##g" "$o/fx-report.html" 2>/dev/null
  "$bin" validate "$fixtures" --json >"$o/fx-validate.json" 2>/dev/null
  "$bin" validate "$data" --json >"$o/dev-validate.json" 2>/dev/null
  "$bin" evidence "$data" --runs "$data/exploration/trajectories" --json >"$o/dev-evidence.json" 2>/dev/null
  "$bin" tools replay "$fixtures" --json >"$o/fx-replay.json" 2>/dev/null
  "$bin" tools replay "$data" --json >"$o/dev-replay.json" 2>/dev/null
done
strip='import json, sys
def w(v):
    if isinstance(v, dict): return {k: w(x) for k, x in v.items() if k != "seconds"}
    if isinstance(v, list): return [w(x) for x in v]
    return v
print(json.dumps(w(json.load(open(sys.argv[1]))), sort_keys=True))'
status=0
for f in $(ls "$out/before"); do
  if cmp -s "$out/before/$f" "$out/after/$f"; then
    echo "identical $f ($(wc -c <"$out/before/$f") bytes)"
  elif [[ $f == *replay.json ]] && cmp -s <(python3 -c "$strip" "$out/before/$f") <(python3 -c "$strip" "$out/after/$f"); then
    echo "identical but for wall-clock seconds $f"
  else
    echo "DIFFERS $f"; status=1
  fi
done
exit $status
