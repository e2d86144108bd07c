#!/bin/sh
# The one command line every member of a cluster array runs: Slurm
# (deploy/slurm/earthverse-array.sbatch) and Kubernetes
# (deploy/k8s/earthverse-indexed-job.yaml) both call this script, and the
# Slurm test (crates/cli/tests/slurm_cli.rs) runs it through sbatch.
#
# The shard comes from the engine (earthverse run --shard-from-env):
# SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX; N from EARTHVERSE_SHARD_COUNT.
# Every shard writes to the same EARTHVERSE_OUT: finished tasks are
# skipped, per-task locks keep two shards off one task, and a shard that
# is killed and started again resumes where it stopped.
#
#   EARTHVERSE_RELEASE      release root (tasks/, packages/)         required
#   EARTHVERSE_AGENT        --agent value (baseline, openai:MODEL, ...) required
#   EARTHVERSE_OUT          shared output directory                  required
#   EARTHVERSE_SHARD_COUNT  N, the number of array members           required
#   EARTHVERSE_BIN          the earthverse binary (default: earthverse on PATH)
#   EARTHVERSE_CONCURRENCY  tasks at once per shard (default 1)
# Further arguments are passed to `earthverse run` as they are (e.g.
# --prices prices.json --max-batch-cost 50 --max-request-rate 120/min).
set -eu
: "${EARTHVERSE_RELEASE:?set EARTHVERSE_RELEASE to the release root}"
: "${EARTHVERSE_AGENT:?set EARTHVERSE_AGENT to the --agent value}"
: "${EARTHVERSE_OUT:?set EARTHVERSE_OUT to the shared output directory}"
: "${EARTHVERSE_SHARD_COUNT:?set EARTHVERSE_SHARD_COUNT to the number of shards}"
export EARTHVERSE_SHARD_COUNT
exec "${EARTHVERSE_BIN:-earthverse}" run "$EARTHVERSE_RELEASE" \
  --agent "$EARTHVERSE_AGENT" --out "$EARTHVERSE_OUT" \
  --shard-from-env --concurrency "${EARTHVERSE_CONCURRENCY:-1}" --quiet "$@"
