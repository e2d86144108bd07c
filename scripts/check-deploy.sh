#!/usr/bin/env bash
# Checks deploy/ (CI runs it):
# 1. the Kubernetes Indexed Job manifest validates against the Kubernetes
#    1.33 OpenAPI schemas in strict mode (unknown fields refused), with the
#    PyPI package kubernetes-validate, which bundles the schemas (installed
#    once into $EARTHVERSE_TOOLS_VENV, default ~/.cache/earthverse/deploy-check);
#    1.33 is the first release where backoffLimitPerIndex is GA;
# 2. the manifest's pods and the Slurm array run the same command line,
#    deploy/shard-run.sh (which the Slurm test submits through sbatch), with
#    every variable it requires set, and EARTHVERSE_SHARD_COUNT equal to
#    the Job's completions; the Containerfile installs that script where
#    the manifest calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${EARTHVERSE_TOOLS_VENV:-${HOME:?}/.cache/earthverse/deploy-check}"
if [ ! -x "$venv/bin/kubernetes-validate" ]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'kubernetes-validate==1.37.0' >&2
fi
manifest=deploy/k8s/earthverse-indexed-job.yaml
"$venv/bin/kubernetes-validate" --strict -k 1.33.0 "$manifest"
"$venv/bin/python" - "$manifest" <<'PY'
import re, sys, yaml
manifest = sys.argv[1]
job = yaml.safe_load(open(manifest))
spec = job["spec"]
def fail(msg):
    sys.exit(f"check-deploy: {manifest}: {msg}")
if spec.get("completionMode") != "Indexed":
    fail("spec.completionMode must be Indexed")
if "backoffLimitPerIndex" not in spec:
    fail("spec.backoffLimitPerIndex is missing")
pod = spec["template"]["spec"]
(container,) = pod["containers"]
if container.get("command") != ["/opt/earthverse/deploy/shard-run.sh"] or container.get("args"):
    fail("the container must run /opt/earthverse/deploy/shard-run.sh with no arguments")
env = {e["name"]: e.get("value") for e in container.get("env", [])}
required = re.findall(r'^: "\$\{(EARTHVERSE_[A-Z_]+):\?', open("deploy/shard-run.sh").read(), re.M)
if not required:
    fail("deploy/shard-run.sh declares no required variable")
missing = [v for v in required if v not in env]
if missing:
    fail(f"container env lacks {missing} (required by deploy/shard-run.sh)")
if str(spec["completions"]) != env["EARTHVERSE_SHARD_COUNT"]:
    fail(f"EARTHVERSE_SHARD_COUNT={env['EARTHVERSE_SHARD_COUNT']} but completions={spec['completions']}")
slurm = open("deploy/slurm/earthverse-array.sbatch").read()
if not re.search(r'^exec "\$deploy/shard-run.sh" "\$@"$', slurm, re.M):
    fail("deploy/slurm/earthverse-array.sbatch does not exec deploy/shard-run.sh")
if "COPY deploy/shard-run.sh /opt/earthverse/deploy/shard-run.sh" not in open("deploy/k8s/Containerfile").read():
    fail("deploy/k8s/Containerfile does not install deploy/shard-run.sh where the manifest calls it")
print(f"check-deploy: {manifest}: Indexed Job of {spec['completions']} runs deploy/shard-run.sh "
      f"(required {', '.join(required)}), as the Slurm array does")
PY
