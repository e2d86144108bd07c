#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the Slurm array test
# (crates/cli/tests/slurm_cli.rs) and for trying deploy/slurm/ by hand.
#
#   scripts/slurm-local.sh start DIR   # writes DIR/slurm.conf, starts munged, slurmctld, slurmd
#   scripts/slurm-local.sh stop DIR    # stops the three daemons started in DIR
#
# After `start`, use the cluster with SLURM_CONF=DIR/slurm.conf (sbatch,
# squeue, scancel, sacct are Debian's slurm-wlm). Needs root (slurmd runs
# jobs as their submitter) and the packages slurm-wlm and munge, which
# scripts/bootstrap.sh installs. Everything lives in DIR: config, state,
# spool, logs, pid files, its own munge key and socket, and two free TCP
# ports, so it never touches a system Slurm or munge. Minimal settings:
# proctrack/linuxproc, task/none, no cgroups, no accounting.
set -euo pipefail
cmd="${1:-}"
dir="${2:-}"
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: $0 start|stop DIR" >&2
  exit 64
fi
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

stop_pidfile() {
  local file="$1"
  [ -s "$file" ] || return 0
  local pid
  pid="$(cat "$file")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

if [ "$cmd" = stop ]; then
  stop_pidfile "$dir/slurmd.pid"
  stop_pidfile "$dir/slurmctld.pid"
  stop_pidfile "$dir/munged.pid"
  exit 0
fi
[ "$cmd" = start ] || { echo "$0: unknown command $cmd" >&2; exit 64; }

for bin in munged mungekey slurmctld slurmd sbatch; do
  command -v "$bin" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin"
  command -v "$bin" >/dev/null 2>&1 || { echo "slurm-local: $bin not found (install slurm-wlm and munge: scripts/bootstrap.sh)" >&2; exit 69; }
done
[ "$(id -u)" = 0 ] || { echo "slurm-local: needs root (slurmd)" >&2; exit 77; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
host="$(hostname -s)"
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir/munge"
[ -s "$dir/munge/munge.key" ] || mungekey --create --keyfile="$dir/munge/munge.key" --force
chmod 600 "$dir/munge/munge.key"
socket="$dir/munge/munge.socket"
munged --force --key-file="$dir/munge/munge.key" --socket="$socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/munged.seed"
ctld_port="$(free_port)"
slurmd_port="$(free_port)"
while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port="$(free_port)"; done
cpus="$(nproc)"
cat >"$dir/slurm.conf" <<EOF
ClusterName=earthverse-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF" -i
slurmd -f "$SLURM_CONF"
for _ in $(seq 100); do
  if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
    echo "slurm-local: up (SLURM_CONF=$SLURM_CONF, node $host, $cpus CPUs)"
    exit 0
  fi
  sleep 0.2
done
echo "slurm-local: the node did not come up; logs in $dir" >&2
tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
exit 1
