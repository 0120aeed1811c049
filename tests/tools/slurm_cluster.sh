#!/usr/bin/env bash
# slurm_cluster.sh: a real one-node Slurm for tests -- munged, slurmctld and
# slurmd from Debian's packages (munge, slurmctld, slurmd, slurm-client), all
# run as root from a private directory, on ports of their own, with a
# slurm.conf generated from this machine's CPUs. No configuration is read
# from /etc, nothing is written to /etc, /run or /var: a test needs neither
# systemd nor a machine set up for Slurm, and leaves nothing behind.
#
# As a library (sourced; tests/deploy/slurm_real_test.sh):
#   slurm_cluster_require              exit 2 (a skip) when a program is missing
#   slurm_cluster_init                 make its temporary directory
#                                      ($SLURM_CLUSTER_DIR), export SLURM_CONF
#                                      (not written yet), set SLURM_CLUSTER_NODE
#                                      (the node's name); for a caller that
#                                      needs the paths before the start
#   slurm_cluster_start [LINE]...      (init and) start one, with LINEs added
#                                      to slurm.conf
#   slurm_cluster_stop                 stop it and remove the directory (call
#                                      it from the caller's EXIT trap)
#   slurm_cluster_logs                 the daemons' logs, to stderr
# As a program, for trying things by hand:
#   slurm_cluster.sh [--conf LINE]... [COMMAND [ARG]...]
#   starts one in a temporary directory, runs COMMAND with SLURM_CONF set
#   (default: sinfo and scontrol show node), stops it and exits with
#   COMMAND's status; 1 when the cluster did not start, 2 (before anything
#   ran) when Slurm is not installed.
#
# Start-up takes 1-2 s here (2 vCPUs), mostly slurmd registering with
# slurmctld; slurm_cluster_start returns once the node has registered (idle,
# or drained by a health check that ran as it registered).
# shellcheck shell=bash

SLURM_CLUSTER_DIR=''
slurm_cluster_programs=(munged mungekey slurmctld slurmd slurmstepd srun sinfo scontrol squeue scancel)

# slurm_cluster_require: a missing program skips the test (exit 2) with the
# reason; one that is there but does not work is the test's failure, later.
slurm_cluster_require() {
  local program
  local -a missing=()
  for program in "${slurm_cluster_programs[@]}"; do
    # The daemons are in /usr/sbin, which a non-login PATH may lack.
    command -v "$program" >/dev/null || [[ -x /usr/sbin/$program ]] || missing+=("$program")
  done
  if ((${#missing[@]} > 0)); then
    echo "SKIP: Slurm is not installed (missing: ${missing[*]}; apt-get install slurmd slurmctld slurm-client munge)" >&2
    exit 2
  fi
  export PATH="$PATH:/usr/sbin:/sbin"
}

# free_port: a TCP port nobody listens on, for slurmctld's and slurmd's
# fixed ports (slurm.conf has no "any port"). Taken at random from a range
# far from Slurm's 6817/6818, so that two clusters started at once rarely
# pick the same; the start retries if one is taken in the meantime.
slurm_cluster_free_port() {
  local port taken
  taken=$(ss -Htan 2>/dev/null | awk '{print $4}' | sed 's/.*://' | sort -u)
  while :; do
    port=$((30000 + RANDOM % 30000))
    grep -qx "$port" <<<"$taken" || { echo "$port" && return 0; }
  done
}

# wait_for SECONDS DESCRIPTION DAEMON COMMAND...: polls COMMAND every 0.1 s
# until it succeeds; fails, saying what did not happen, after SECONDS or as
# soon as DAEMON (a name as in $SLURM_CLUSTER_DIR/DAEMON.bgpid; - for none)
# has exited.
slurm_cluster_wait_for() {
  local seconds=$1 what=$2 daemon=$3 i pid=''
  shift 3
  [[ $daemon != - ]] && pid=$(<"$SLURM_CLUSTER_DIR/$daemon.bgpid")
  for ((i = 0; i < seconds * 10; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
      echo "slurm_cluster: $what: $daemon exited" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "slurm_cluster: $what within $seconds s" >&2
  return 1
}

slurm_cluster_node_state() {
  sinfo -h -N -n "$SLURM_CLUSTER_NODE" -o %T 2>/dev/null
}

# registered: slurmd has registered, and the node is in service or drained.
# Not only idle: slurmd runs HealthCheckProgram as it registers, so a health
# check that drains does so before the node is ever seen idle. sinfo marks a
# node that does not respond (yet) with '*', one never heard of is unknown.
slurm_cluster_node_registered() {
  [[ $(slurm_cluster_node_state) =~ ^(idle|drained|draining|mixed|allocated|completing)$ ]]
}

slurm_cluster_munge_works() {
  munge -S "$SLURM_CLUSTER_DIR/munge/munge.socket" -n | unmunge -S "$SLURM_CLUSTER_DIR/munge/munge.socket"
}

# conf_settings DIR SLURMD_DIR TASK_PLUGIN: the slurm.conf settings of a test
# cluster in DIR, whose slurmds keep their spool, pid and log in SLURMD_DIR
# (DIR/%n for a slurmd per node: %n is the node's name). Everything but the
# controller's address and ports, the nodes and the partition.
slurm_cluster_conf_settings() {
  local dir=$1 slurmd_dir=$2 task_plugin=$3
  cat <<EOF
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/ctld-state
SlurmdSpoolDir=$slurmd_dir/slurmd-spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$slurmd_dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$slurmd_dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No /etc/slurm/plugstack.conf (a site's SPANK plugins), no cgroups: the
# linuxproc tracker and sched_setaffinity need nothing set up on the machine.
PlugStackConfig=$dir/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=$task_plugin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
# A finished job is forgotten quickly, a dead slurmd noticed quickly.
MinJobAge=5
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MailProg=/bin/true
EOF
}

# write_conf DIR CTLD_PORT SLURMD_PORT LINE...: slurm.conf for this node.
slurm_cluster_write_conf() {
  local dir=$1 ctld_port=$2 slurmd_port=$3 node_line
  shift 3
  # The node as slurmd itself sees it (sockets, cores, threads from hwloc):
  # a slurm.conf promising more than slurmd finds drains the node at once
  # ("Low socket*core*thread count"). Memory is kept small instead of what
  # is installed: the tests' jobs ask for none.
  node_line=$(slurmd -C | head -n 1) || return 1
  [[ $node_line == NodeName=* ]] || {
    echo "slurm_cluster: slurmd -C printed '$node_line'" >&2
    return 1
  }
  node_line=$(sed -E "s/^NodeName=[^ ]+/NodeName=$SLURM_CLUSTER_NODE/; s/RealMemory=[0-9]+/RealMemory=256/" <<<"$node_line")
  cat >"$dir/slurm.conf" <<EOF
# Generated by tests/tools/slurm_cluster.sh; everything under $dir.
ClusterName=corenoise-test
SlurmctldHost=$SLURM_CLUSTER_NODE(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
$(slurm_cluster_conf_settings "$dir" "$dir" task/affinity)
$(printf '%s\n' "$@")
$node_line NodeAddr=127.0.0.1 NodeHostname=$SLURM_CLUSTER_NODE State=UNKNOWN
PartitionName=debug Default=YES Nodes=ALL MaxTime=INFINITE State=UP
EOF
  : >"$dir/plugstack.conf"
}

# start_daemons: munged, slurmctld, slurmd, each waited for. 0 up, 1 failed,
# 3 a port was taken (worth another try with other ports).
slurm_cluster_start_daemons() {
  slurm_cluster_start_controller || return
  local dir=$SLURM_CLUSTER_DIR
  slurmd -D -f "$SLURM_CONF" -N "$SLURM_CLUSTER_NODE" >>"$dir/slurmd.out" 2>&1 &
  echo $! >"$dir/slurmd.bgpid"
  if ! slurm_cluster_wait_for 20 "node $SLURM_CLUSTER_NODE did not register" slurmd slurm_cluster_node_registered; then
    grep -q 'Address already in use' "$dir/slurmd.log" "$dir/slurmd.out" 2>/dev/null && return 3
    echo "slurm_cluster: node state '$(slurm_cluster_node_state)'" >&2
    return 1
  fi
}

# start_controller: munged and slurmctld of $SLURM_CONF, each waited for;
# the slurmds are the caller's (one here, one per node in
# tests/tools/cluster.sh). Returns as start_daemons does.
slurm_cluster_start_controller() {
  local dir=$SLURM_CLUSTER_DIR
  mkdir -p "$dir/munge" "$dir/ctld-state" "$dir/slurmd-spool"
  chmod 0711 "$dir/munge"
  # The key of this cluster alone; munged refuses one others may read.
  if [[ ! -s $dir/munge/munge.key ]]; then
    mungekey --create --keyfile="$dir/munge/munge.key" || return 1
    chmod 0400 "$dir/munge/munge.key"
  fi
  # -F: in the foreground, so that $! is munged itself; the pid file is for
  # slurm_cluster_stop all the same.
  munged -F --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" >>"$dir/munged.out" 2>&1 &
  echo $! >"$dir/munged.bgpid"
  slurm_cluster_wait_for 10 "munged did not answer" munged slurm_cluster_munge_works || return 1

  # -D: foreground; -c: no saved state (there is none; say so). -i:
  # ignore a missing state file.
  slurmctld -D -c -i -f "$SLURM_CONF" >>"$dir/slurmctld.out" 2>&1 &
  echo $! >"$dir/slurmctld.bgpid"
  if ! slurm_cluster_wait_for 15 "slurmctld did not answer" slurmctld scontrol ping; then
    grep -q 'Address already in use' "$dir/slurmctld.log" "$dir/slurmctld.out" 2>/dev/null && return 3
    return 1
  fi
}

slurm_cluster_init() {
  [[ -z $SLURM_CLUSTER_DIR ]] || return 0
  slurm_cluster_require
  SLURM_CLUSTER_DIR=$(mktemp -d -t corenoise-slurm.XXXXXX) || return 1
  # munged serves its socket only where every directory above it may be
  # searched by all (any user may ask it for a credential); nothing in it
  # can be listed, and the key is root's alone.
  chmod 0711 "$SLURM_CLUSTER_DIR"
  SLURM_CLUSTER_NODE=$(hostname -s)
  export SLURM_CONF=$SLURM_CLUSTER_DIR/slurm.conf
}

slurm_cluster_start() {
  local attempt rc
  slurm_cluster_init || return 1
  # slurmd starts jobs as their users, so it runs as root; CI does.
  if ((EUID != 0)); then
    echo "slurm_cluster: slurmd needs root" >&2
    return 1
  fi
  for attempt in 1 2 3; do
    slurm_cluster_write_conf "$SLURM_CLUSTER_DIR" "$(slurm_cluster_free_port)" "$(slurm_cluster_free_port)" "$@" || return 1
    rc=0
    slurm_cluster_start_daemons || rc=$?
    [[ $rc -eq 0 ]] && return 0
    slurm_cluster_stop_daemons
    [[ $rc -eq 3 ]] || break
    echo "slurm_cluster: a port was taken (attempt $attempt); again with others" >&2
  done
  slurm_cluster_logs
  return 1
}

# stop_pid NAME: stops the daemon whose pid slurm_cluster_start recorded
# (the pid of the process it started, which -D and -F keep in the
# foreground), then the one in its own pid file if that differs; TERM, then
# KILL after 5 s. Only a process that is still that program: a daemon that
# died early may have left its pid to another.
slurm_cluster_stop_pid() {
  local name=$1 file pid i
  for file in "$SLURM_CLUSTER_DIR/$name.bgpid" "$SLURM_CLUSTER_DIR/$name.pid" "$SLURM_CLUSTER_DIR/munge/$name.pid"; do
    [[ -s $file ]] || continue
    pid=$(<"$file")
    rm -f -- "$file"
    # The name, not the executable: Debian's are alternatives (slurmd-wlm).
    [[ $pid =~ ^[0-9]+$ && $(cat "/proc/$pid/comm" 2>/dev/null) == "$name" ]] || continue
    kill -TERM "$pid" 2>/dev/null || continue
    for ((i = 0; i < 50; i++)); do
      # Gone, or a zombie: a daemon whose starter has exited (a cluster kept
      # by tests/tools/cluster.sh) is reaped by whoever adopted it, if anyone.
      [[ $(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null) =~ ^[^Z]$ ]] || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  done
}

# The job steps' slurmstepd processes are no children of ours (slurmd
# double-forks them). They inherit slurmd's environment, whose SLURM_CONF
# names this cluster alone; one still there once slurmd has gone is killed.
slurm_cluster_stop_steps() {
  local proc
  for proc in /proc/[0-9]*; do
    # (Any of them may be gone by now, hence the quiet reads.)
    [[ $(cat "$proc/comm" 2>/dev/null) == slurmstepd ]] || continue
    if { tr '\0' '\n' <"$proc/environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$SLURM_CONF"; then
      kill -KILL "${proc#/proc/}" 2>/dev/null || true
    fi
  done
}

slurm_cluster_stop_daemons() {
  [[ -n $SLURM_CLUSTER_DIR ]] || return 0
  # Jobs still running first, while slurmctld can still cancel them.
  if [[ -s $SLURM_CLUSTER_DIR/slurmctld.bgpid ]] && squeue -h -o %i 2>/dev/null | grep -q .; then
    scancel --full --quiet --partition=debug 2>/dev/null || true
    slurm_cluster_wait_for 5 "jobs were still there after scancel" - \
      bash -c '! squeue -h -o %i | grep -q .' || true
  fi
  slurm_cluster_stop_pid slurmd
  slurm_cluster_stop_steps
  slurm_cluster_stop_pid slurmctld
  slurm_cluster_stop_pid munged
}

slurm_cluster_stop() {
  slurm_cluster_stop_daemons
  [[ -n $SLURM_CLUSTER_DIR ]] && rm -rf -- "$SLURM_CLUSTER_DIR"
  SLURM_CLUSTER_DIR=''
}

slurm_cluster_logs() {
  [[ -n $SLURM_CLUSTER_DIR ]] || return 0
  local file
  for file in munged.out munge/munged.log slurmctld.out slurmctld.log slurmd.out slurmd.log; do
    [[ -s $SLURM_CLUSTER_DIR/$file ]] && tail -n 40 "$SLURM_CLUSTER_DIR/$file" | sed "s|^|  $file: |" >&2
  done
  return 0
}

# --- as a program -----------------------------------------------------------

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  conf_lines=()
  while [[ ${1:-} == --conf ]]; do
    conf_lines+=("$2")
    shift 2
  done
  slurm_cluster_require
  trap slurm_cluster_stop EXIT
  slurm_cluster_start "${conf_lines[@]}" || exit 1
  if (($# == 0)); then set -- sh -c 'sinfo && scontrol show node'; fi
  rc=0
  "$@" || rc=$?
  exit "$rc"
fi
