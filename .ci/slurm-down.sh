#!/usr/bin/env bash
# Stop the single-node CI Slurm started by .ci/slurm-up.sh and its tree lab: cancel leftover
# jobs, then SIGTERM each recorded daemon and SIGKILL it after a bounded wait.
# Never fails when the daemons are already gone. Wait override: SLURM_DOWN_TIMEOUT (s).
set -euo pipefail

RUN_DIR=/run/torus-sweep-slurm
PIDS=$RUN_DIR/pids
WAIT=${SLURM_DOWN_TIMEOUT:-15}

# Leave no configuration naming a stopped controller: Slurm's clients (and so the
# Snakemake plugin, at every snakemake call) would wait ~9 s for it. Put back what
# slurm-up.sh replaced, else remove what it wrote.
restore_conf() {
    local conf=/etc/slurm/slurm.conf
    if [[ -f $RUN_DIR/slurm.conf.before ]]; then
        mv -f "$RUN_DIR/slurm.conf.before" "$conf"
    elif [[ -f $conf ]] && grep -q 'written by .ci/slurm-up.sh' "$conf"; then
        rm -f "$conf"
    fi
}

bash "$(dirname "$0")/slurm-tree-lab.sh" down || true

[[ -f $PIDS ]] || { restore_conf; echo "slurm-down: nothing recorded in $PIDS"; exit 0; }

# True if $1 still runs the recorded program $2 (pids may be reused).
alive() { [[ -n ${1:-} && $(cat "/proc/$1/comm" 2>/dev/null || true) == "$2" ]]; }

# Cancel remaining jobs so their slurmstepd processes exit with them
# (only if the controller still runs: squeue would otherwise retry for seconds).
jobs=()
ctld_pid=$(awk '$1 == "slurmctld" {print $2}' "$PIDS")
alive "$ctld_pid" slurmctld && mapfile -t jobs < <(timeout 10 squeue -h -o %A 2>/dev/null || true)
if ((${#jobs[@]})); then
    timeout 10 scancel "${jobs[@]}" 2>/dev/null || true
    deadline=$((SECONDS + WAIT))
    while [[ -n $(timeout 10 squeue -h -t R,CG,S -o %A 2>/dev/null || true) ]] && ((SECONDS < deadline)); do
        sleep 0.5
    done
fi

# Stop slurmd, then slurmctld, then munged (reverse start order).
stopped=()
while read -r name pid; do
    [[ -n ${name:-} ]] || continue
    if alive "$pid" "$name"; then
        kill -TERM "$pid" 2>/dev/null || true
        deadline=$((SECONDS + WAIT))
        while alive "$pid" "$name" && ((SECONDS < deadline)); do sleep 0.2; done
        if alive "$pid" "$name"; then
            echo "slurm-down: $name ($pid) ignored SIGTERM for ${WAIT}s, sending SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
        stopped+=("$name=$pid")
    fi
done < <(tac "$PIDS")

rm -f "$PIDS"
restore_conf
echo "slurm-down: stopped ${stopped[*]:-nothing (already gone)}"
