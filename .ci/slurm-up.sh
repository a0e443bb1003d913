#!/usr/bin/env bash
# Start a throw-away single-node Slurm cluster (munged + slurmctld + slurmd) on
# 127.0.0.1 for CI tests, and the tree lab beside it (.ci/slurm-tree-lab.sh).
# Debian/Ubuntu, run as root, no systemd needed.
# Idempotent: daemons still running from an earlier call are reused.
# Stop it with .ci/slurm-down.sh, which also removes the slurm.conf written here (or puts
# back the one it replaced). Timeout override: SLURM_UP_TIMEOUT (s).
set -euo pipefail

RUN_DIR=/run/torus-sweep-slurm       # pid file read by slurm-down.sh
PIDS=$RUN_DIR/pids
# Compiled-in default path: slurm-jobstep strips SLURM_CONF inside jobs.
CONF=/etc/slurm/slurm.conf
LOG_DIR=/var/log/slurm
STATE_DIR=/var/lib/slurm
TIMEOUT=${SLURM_UP_TIMEOUT:-90}
PKGS=(slurmctld slurmd slurm-client munge)
start=$SECONDS

# True if $1 is a live process whose command name is $2 (guards against pid reuse).
alive() { [[ -n ${1:-} && -r /proc/$1/comm && $(cat "/proc/$1/comm" 2>/dev/null) == "$2" ]]; }
pid_of() { cat "$1" 2>/dev/null || true; }

# Record the running daemons ("name pid" per line) for slurm-down.sh.
record_pids() {
    local name pid
    : >"$PIDS"
    for name in munged slurmctld slurmd; do
        case $name in munged) pid=$(pid_of /run/munge/munged.pid) ;; *) pid=$(pid_of "$RUN_DIR/$name.pid") ;; esac
        if alive "$pid" "$name"; then echo "$name $pid" >>"$PIDS"; fi
    done
}

fail() {
    echo "slurm-up: FAILED: $*" >&2
    [[ -d $RUN_DIR ]] && record_pids   # so that slurm-down.sh can still clean up
    for f in /var/log/munge/munged.log "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log"; do
        [[ -f $f ]] && { echo "--- tail $f" >&2; tail -n 25 "$f" >&2; }
    done
    exit 1
}

# --- 1. packages (apt-get update only if the plain install fails) ------------
missing=0
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing=1
done
if ((missing)); then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "${PKGS[@]}" >/dev/null ||
        { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${PKGS[@]}" >/dev/null; } ||
        fail "apt-get install ${PKGS[*]}"
fi

# --- 2. directories and munge key ---------------------------------------------
mkdir -p "$RUN_DIR" "$LOG_DIR" "$STATE_DIR/slurmctld" "$STATE_DIR/slurmd" /etc/slurm
install -d -o munge -g munge -m 0755 /run/munge
install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
[[ -s /etc/munge/munge.key ]] || mungekey --create --keyfile=/etc/munge/munge.key
chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key

# --- 3. slurm.conf for this host -------------------------------------------------
node=$(hostname -s)
cpus=$(nproc)
mem_mb=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))
cg=/sys/fs/cgroup/memory.max           # a container memory limit, if any, is lower
if [[ -r $cg && $(cat $cg) =~ ^[0-9]+$ ]] && (($(cat $cg) / 1048576 < mem_mb)); then
    mem_mb=$(($(cat $cg) / 1048576))
fi
headroom=$((mem_mb / 10 > 512 ? mem_mb / 10 : 512))   # keep 10 % (>= 512 MB) for the OS
real_mb=$((mem_mb - headroom))
tmp_conf=$(mktemp)
cat >"$tmp_conf" <<EOF
# Single-node CI cluster written by .ci/slurm-up.sh (do not edit by hand).
ClusterName=ci
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$STATE_DIR/slurmctld
SlurmdSpoolDir=$STATE_DIR/slurmd
SlurmctldPidFile=$RUN_DIR/slurmctld.pid
SlurmdPidFile=$RUN_DIR/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
# no cgroups/systemd: track processes via /proc, no task binding
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
PropagateResourceLimits=NONE
# no slurmdbd: sacct is unavailable, poll squeue; keep finished jobs visible 30 min
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=1800
ReturnToService=2
# allocate single CPUs and memory; jobs without --mem get an even share per CPU
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=$((real_mb / cpus))
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$real_mb State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
if ! cmp -s "$tmp_conf" "$CONF"; then
    # keep a configuration found here (slurm-down.sh puts it back); none is left behind
    # otherwise: with a configuration naming a stopped controller, every Slurm client call
    # (the Snakemake plugin's `scontrol show config` at import) waits ~9 s
    if [[ -f $CONF && ! -f $RUN_DIR/slurm.conf.before ]] && ! grep -q 'written by .ci/slurm-up.sh' "$CONF"; then
        cp -p "$CONF" "$RUN_DIR/slurm.conf.before"
    fi
    install -m 0644 "$tmp_conf" "$CONF"
    # a running controller must re-read it (node size changes need a restart)
    alive "$(pid_of "$RUN_DIR/slurmctld.pid")" slurmctld && { scontrol reconfigure || true; }
fi
rm -f "$tmp_conf"

# --- 4. daemons (each daemonizes and writes its own pid file) -----------------
# munged may already run (e.g. started by the package's init script): reuse it.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged ||
        fail "munged did not start"
fi
alive "$(pid_of "$RUN_DIR/slurmctld.pid")" slurmctld || slurmctld || fail "slurmctld did not start"
alive "$(pid_of "$RUN_DIR/slurmd.pid")" slurmd || slurmd || fail "slurmd did not start"

# --- 5. wait until the node is idle and a job step runs -----------------------
deadline=$((SECONDS + TIMEOUT))
until [[ $(sinfo -h -n "$node" -o %T 2>/dev/null) =~ ^(idle|mixed)$ ]]; do
    ((SECONDS < deadline)) || fail "node $node not idle after ${TIMEOUT}s: $(sinfo -h -N -o '%N %T %E' 2>&1 || true)"
    sleep 0.5
done
timeout $((deadline > SECONDS ? deadline - SECONDS : 1)) srun -N1 -t 1 true ||
    fail "srun -N1 true did not succeed"

record_pids
(($(wc -l <"$PIDS") == 3)) || fail "not all daemons are running: $(paste -sd' ' "$PIDS")"

# --- 6. the tree lab beside it: Slurm's topology/tree for tests/test_slurm_tree.py ----
bash "$(dirname "$0")/slurm-tree-lab.sh" up || fail "the tree lab did not start"

echo "slurm-up: node $node idle (CPUs=$cpus RealMemory=${real_mb}MB, partition debug)," \
    "$(sinfo -V), conf $CONF, pids $(paste -sd' ' "$PIDS"), ready in $((SECONDS - start))s"
