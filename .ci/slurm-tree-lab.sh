#!/usr/bin/env bash
# A second slurmctld beside the CI cluster of .ci/slurm-up.sh, for the comparison of
# slurm-tree with Slurm's own topology/tree selection (tests/test_slurm_tree.py). It
# needs munged running (slurm-up.sh starts it) and the slurmctld package.
#
#   slurm-tree-lab.sh up     start it (idempotent), conf in /etc/slurm-treelab/slurm.conf
#   slurm-tree-lab.sh down   stop it and remove its configuration
#
# Its nodes are cloud nodes that never power up (ResumeProgram /bin/true, an hour's
# ResumeTimeout), so the controller allocates them to jobs, which then wait in CONFIGURING
# holding their nodes: no slurmd is needed. Power saving is off (SuspendTime INFINITE), so
# a cancelled job's nodes are idle again at once. The layout: CASES partitions c00, c01, ...,
# each its own tree of RACKS leaf switches of NODES nodes (node cCCrRnNN is node NN of
# rack R), switches over MID consecutive racks and one root; select/cons_tres, exclusive
# whole nodes, sched/builtin. Timeout override: SLURM_UP_TIMEOUT (s).
set -euo pipefail

CASES=16 RACKS=8 NODES=18 MID=4
DIR=/etc/slurm-treelab
STATE=/var/lib/slurm-treelab
RUN=/run/torus-sweep-slurm
PID=$RUN/treelab-slurmctld.pid
export SLURM_CONF=$DIR/slurm.conf
TIMEOUT=${SLURM_UP_TIMEOUT:-90}

alive() { [[ -n ${1:-} && $(cat "/proc/$1/comm" 2>/dev/null || true) == slurmctld ]]; }

down() {
    local pid
    pid=$(cat "$PID" 2>/dev/null || true)
    if alive "$pid"; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do alive "$pid" || break; sleep 0.2; done
        alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -rf "$DIR" "$PID"
    echo "slurm-tree-lab: stopped"
}

up() {
    alive "$(cat "$PID" 2>/dev/null || true)" && { echo "slurm-tree-lab: running"; return; }
    mkdir -p "$DIR" "$STATE" "$RUN" /var/log/slurm
    local last=$((CASES - 1)) r c
    cat >"$DIR/slurm.conf" <<EOF
# The tree lab written by .ci/slurm-tree-lab.sh (do not edit by hand).
ClusterName=treelab
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=6917
SlurmdPort=6918
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$STATE
SlurmctldPidFile=$PID
SlurmctldLogFile=/var/log/slurm/treelab-slurmctld.log
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
TopologyPlugin=topology/tree
SuspendProgram=/bin/true
ResumeProgram=/bin/true
SuspendTime=INFINITE
SuspendTimeout=2
ResumeTimeout=3600
MinJobAge=2
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
# an address for every node: without one, each cancelled job's nodes are looked up for
# seconds each
NodeName=c[00-$(printf %02d $last)]r[0-$((RACKS - 1))]n[00-$(printf %02d $((NODES - 1)))] NodeAddr=127.0.0.1 CPUs=1 State=CLOUD
EOF
    : >"$DIR/topology.conf"
    for ((c = 0; c < CASES; c++)); do
        local t mids=()
        t=c$(printf %02d "$c")
        echo "PartitionName=$t Nodes=${t}r[0-$((RACKS - 1))]n[00-$(printf %02d $((NODES - 1)))] MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE" >>"$DIR/slurm.conf"
        for ((r = 0; r < RACKS; r++)); do
            echo "SwitchName=${t}l$r Nodes=${t}r${r}n[00-$(printf %02d $((NODES - 1)))]" >>"$DIR/topology.conf"
        done
        for ((r = 0; r < RACKS; r += MID)); do
            echo "SwitchName=${t}m$((r / MID)) Switches=${t}l[$r-$((r + MID - 1))]" >>"$DIR/topology.conf"
            mids+=("${t}m$((r / MID))")
        done
        echo "SwitchName=${t}t Switches=$(IFS=,; echo "${mids[*]}")" >>"$DIR/topology.conf"
    done
    slurmctld -c -f "$DIR/slurm.conf" || { echo "slurm-tree-lab: slurmctld did not start" >&2; exit 1; }
    local deadline=$((SECONDS + TIMEOUT))
    until scontrol ping 2>/dev/null | grep -q UP; do
        ((SECONDS < deadline)) || { echo "slurm-tree-lab: no answer after ${TIMEOUT}s" >&2; exit 1; }
        sleep 0.5
    done
    echo "slurm-tree-lab: $CASES trees of $RACKS racks of $NODES nodes, conf $SLURM_CONF," \
        "pid $(cat "$PID")"
}

case ${1:-} in
    up) up ;;
    down) down ;;
    *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
