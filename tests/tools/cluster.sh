#!/usr/bin/env bash
# cluster.sh: a cluster of N compute nodes on this one machine, for the
# tests that must cross nodes and for a site that wants to try the whole
# stack before it touches real nodes (docs/operations.md, "A test cluster on
# one machine").
#
# Each node cn-nodeI has
#   - its own network namespace (cn-nodeI, address 10.78.0.(10+I) on eth0),
#     joined to the others and to this machine by a bridge (cnc-br0,
#     10.78.0.1): the nodes talk TCP between distinct addresses;
#   - its own host name (a UTS namespace), its own /run and its own /tmp (a
#     mount namespace whose /run and /tmp are $CLUSTER_DIR/cn-nodeI/run and
#     tmp): each node's corenoised answers on the usual
#     /run/corenoise/ctl.sock, the Slurm scripts keep their state in the
#     node's own /run/corenoise-slurm, and what Slurm's PMIx plugin or an MPI
#     library makes in /tmp is the node's, as on real nodes. $CLUSTER_DIR
#     itself is seen at the same path on every node, and its shared/ is
#     where files that every node must see go (a parallel file system's
#     part);
#   - its own CPUs (a cpuset cgroup): with 2 CPUs and 2 nodes, node 1 is CPU 0
#     and node 2 CPU 1, so noise on one node is invisible to the other; more
#     nodes than CPUs share them;
#   - a real corenoised (the build tree's, or the one given), a real slurmd
#     and a real prometheus-node-exporter.
# One munged, one slurmctld (tests/tools/slurm_cluster.sh) and one Prometheus
# (the shipped deploy/prometheus rules, their durations scaled from minutes
# to seconds as the rules' own header says to do for a short `interval`,
# scraping every node's corenoised and node_exporter) run on this machine.
# slurmd runs deploy/slurm's health check, prolog and epilog, unchanged,
# through wrappers that give them this cluster's settings and log to
# $CLUSTER_DIR/cn-nodeI/syslog instead of the machine's journal.
# Everything else is under $CLUSTER_DIR (a temporary directory); nothing is
# written to /etc. One cluster at a time: the names above are fixed, and a
# start first removes what a killed run left behind.
#
# As a library (sourced; tests/cluster/):
#   cluster_require                    exit 2 (a skip) when a program is missing
#   cluster_start [OPTION]...          start one (options as below); its
#                                      variables: CLUSTER_DIR, CLUSTER_NODES
#                                      (names, index 1..N), CLUSTER_ADDRS,
#                                      CLUSTER_CPUS, CLUSTER_PROMETHEUS (URL),
#                                      SLURM_CONF (exported)
#   cluster_exec NODE COMMAND...       run COMMAND on node NODE (1..N or its
#                                      name): its namespaces and its cpuset
#   cluster_spawn NODE COMMAND...      the same in the background; its pid in
#                                      $cluster_spawned
#   cluster_stop                       stop everything, leaving nothing behind
#   cluster_load DIR                   the variables of a cluster started by
#                                      another process
# As a program:
#   cluster.sh [OPTION]... [COMMAND [ARG]...]
#       starts one, runs COMMAND (default: sinfo, and each node's corenoise
#       status) with CLUSTER_DIR, SLURM_CONF and CLUSTER_PROMETHEUS set, stops
#       it and exits with COMMAND's status; --keep leaves it running and
#       prints how to enter a node and how to stop it
#   cluster.sh --dir DIR exec NODE COMMAND...   run on a node of a kept cluster
#   cluster.sh --dir DIR ssh [-OPTION]... NODE COMMAND-LINE...
#       what a launcher that starts its daemons by ssh (hydra's mpiexec.mpich,
#       Open MPI's mpirun) is given instead of ssh: $CLUSTER_DIR/bin/ssh
#       runs this; NODE is a name or an address, the options are dropped
#   cluster.sh --dir DIR stop                   stop a kept cluster
# Options:
#   --nodes N                 nodes (default 2)
#   --corenoise BIN           the corenoise command (default: build/collector/corenoise)
#   --corenoised BIN          the daemon (default: build/daemon/corenoised)
#   --daemon-arg ARG          an option for every node's corenoised (repeatable;
#                             default --interval 2 --stream-bytes 8388608)
#   --node-daemon-arg I:ARG   an option for node I's corenoised alone, after
#                             the others (repeatable)
#   --healthcheck-interval S  slurmd's HealthCheckInterval (default 5)
#   --slurm-conf LINE         a line added to slurm.conf (repeatable)
# Exit status: 1 when the cluster did not start, 2 (before anything ran)
# when a program is missing or this is not root.
# shellcheck shell=bash source-path=SCRIPTDIR

cluster_here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
# shellcheck source=slurm_cluster.sh
. "$cluster_here/slurm_cluster.sh"

CLUSTER_DIR=''
CLUSTER_NODES=()
CLUSTER_ADDRS=()
CLUSTER_CPUS=()
CLUSTER_PROMETHEUS=''
cluster_bridge=cnc-br0
cluster_subnet=10.78.0
cluster_cgroup=''
cluster_programs=(ip nsenter unshare curl prometheus prometheus-node-exporter)

cluster_say() { echo "cluster: $*" >&2; }

cluster_require() {
  if ((EUID != 0)); then
    echo "SKIP: the cluster needs root (network namespaces, cgroups, slurmd)" >&2
    exit 2
  fi
  local program
  local -a missing=()
  for program in "${cluster_programs[@]}"; do
    command -v "$program" >/dev/null || missing+=("$program")
  done
  if ((${#missing[@]} > 0)); then
    echo "SKIP: missing ${missing[*]} (apt-get install iproute2 util-linux curl prometheus prometheus-node-exporter)" >&2
    exit 2
  fi
  slurm_cluster_require
}

# cgroup_root: the cpuset hierarchy, v1's where it is mounted, else v2 with
# the cpuset controller handed down from the root.
cluster_cgroup_root() {
  if [[ -e /sys/fs/cgroup/cpuset/cpuset.cpus ]]; then
    echo /sys/fs/cgroup/cpuset/corenoise-cluster
  elif grep -qw cpuset /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    echo /sys/fs/cgroup/corenoise-cluster
  else
    return 1
  fi
}

# plan N: names, addresses and CPUs of N nodes. The online CPUs are shared
# out in equal blocks (the last block takes what is left); with more nodes
# than CPUs, node I takes CPU (I-1) mod CPUs.
cluster_plan() {
  local n=$1 i k
  local -a online=()
  local range first last
  IFS=, read -ra ranges <"/sys/devices/system/cpu/online"
  for range in "${ranges[@]}"; do
    first=${range%-*} last=${range#*-}
    for ((k = first; k <= last; k++)); do online+=("$k"); done
  done
  local per=$((${#online[@]} / n))
  for ((i = 1; i <= n; i++)); do
    CLUSTER_NODES[i]=cn-node$i
    CLUSTER_ADDRS[i]=$cluster_subnet.$((10 + i))
    if ((per == 0)); then
      CLUSTER_CPUS[i]=${online[(i - 1) % ${#online[@]}]}
    else
      local end=$((i == n ? ${#online[@]} : i * per))
      local -a mine=("${online[@]:(i - 1) * per:end - (i - 1) * per}")
      CLUSTER_CPUS[i]=$(
        IFS=,
        echo "${mine[*]}"
      )
    fi
  done
}

# node_index NODE: 1..N from a number or a name.
cluster_node_index() {
  local i
  if [[ $1 =~ ^[0-9]+$ && -n ${CLUSTER_NODES[$1]:-} ]]; then
    echo "$1" && return 0
  fi
  for i in "${!CLUSTER_NODES[@]}"; do
    [[ ${CLUSTER_NODES[i]} == "$1" || ${CLUSTER_ADDRS[i]} == "$1" ]] && echo "$i" && return 0
  done
  echo "cluster: no node '$1' (nodes: ${CLUSTER_NODES[*]})" >&2
  return 1
}

cluster_make_cgroups() {
  cluster_cgroup=$(cluster_cgroup_root) || {
    cluster_say "no cpuset controller (cgroup v1 cpuset or v2 with cpuset)"
    return 1
  }
  local parent=${cluster_cgroup%/*} i
  mkdir -p "$cluster_cgroup" || return 1
  if [[ $parent == /sys/fs/cgroup ]]; then
    echo +cpuset >"$parent/cgroup.subtree_control" && echo +cpuset >"$cluster_cgroup/cgroup.subtree_control" || return 1
  else
    # v1 starts a group with no CPUs and no memory nodes.
    cat "$parent/cpuset.mems" >"$cluster_cgroup/cpuset.mems" &&
      cat "$parent/cpuset.cpus" >"$cluster_cgroup/cpuset.cpus" || return 1
  fi
  for i in "${!CLUSTER_NODES[@]}"; do
    mkdir -p "$cluster_cgroup/${CLUSTER_NODES[i]}" || return 1
    if [[ $parent != /sys/fs/cgroup ]]; then
      cat "$cluster_cgroup/cpuset.mems" >"$cluster_cgroup/${CLUSTER_NODES[i]}/cpuset.mems" || return 1
    fi
    echo "${CLUSTER_CPUS[i]}" >"$cluster_cgroup/${CLUSTER_NODES[i]}/cpuset.cpus" || return 1
  done
}

cluster_make_network() {
  local i name
  ip link add "$cluster_bridge" type bridge || return 1
  ip addr add "$cluster_subnet.1/24" dev "$cluster_bridge" && ip link set "$cluster_bridge" up || return 1
  for i in "${!CLUSTER_NODES[@]}"; do
    name=${CLUSTER_NODES[i]}
    ip netns add "$name" &&
      ip link add "cnc-veth$i" type veth peer name eth0 netns "$name" &&
      ip link set "cnc-veth$i" master "$cluster_bridge" up &&
      ip -n "$name" addr add "${CLUSTER_ADDRS[i]}/24" dev eth0 &&
      ip -n "$name" link set eth0 up &&
      ip -n "$name" link set lo up || return 1
  done
}

# join_cpuset I: moves the calling (sub)shell into node I's cpuset.
cluster_join_cpuset() {
  echo "$BASHPID" >"$cluster_cgroup/${CLUSTER_NODES[$1]}/cgroup.procs"
}

# start_holder I: the process whose namespaces are node I: its network
# namespace, a host name and a /run of its own. Everything run on the node
# enters them (cluster_exec); it sleeps until the cluster stops.
cluster_start_holder() {
  local i=$1 name=${CLUSTER_NODES[$1]} k
  local dir=$CLUSTER_DIR/$name
  local inner=$dir/tmp/${CLUSTER_DIR##*/} tree binds=''
  mkdir -p "$dir/run/corenoise" "$dir/state" "$dir/slurmd-spool" "$inner" || return 1
  # A checkout (and so the programs the node runs) under /tmp stays where it
  # is in the node's own /tmp, as the cluster's directory does.
  for tree in "${cluster_tmp_trees[@]}"; do
    mkdir -p "$dir/tmp${tree#/tmp}" || return 1
    binds+=" && mount --bind '$tree' '$dir/tmp${tree#/tmp}'"
  done
  (
    cluster_join_cpuset "$i" || exit 1
    # The node's /tmp holds the cluster's directory at its usual path, so
    # that slurm.conf, the munge socket and the logs are where they are
    # everywhere else.
    # shellcheck disable=SC2016 # the inner shell's own arguments
    exec nsenter --net="/run/netns/$name" unshare --uts --mount --propagation private \
      sh -c 'hostname "$1" && mount --bind "$2" /run && mount --bind "$5" "$4"'"$binds"' &&
             mount --rbind "$3" /tmp && touch /run/.node-ready && exec sleep infinity' \
      holder "$name" "$dir/run" "$dir/tmp" "$inner" "$CLUSTER_DIR"
  ) </dev/null >>"$dir/holder.log" 2>&1 &
  echo $! >"$dir/holder.pid"
  for ((k = 0; k < 50; k++)); do
    [[ -e $dir/run/.node-ready ]] && return 0
    sleep 0.1
  done
  cluster_say "node $name did not come up"
  return 1
}

# enter I COMMAND...: becomes COMMAND on node I (called in a subshell).
cluster_enter() {
  local i=$1
  shift
  cluster_join_cpuset "$i" || exit 1
  # The caller's directory, where the node sees it too (not its own /tmp, /run).
  local wd=$PWD tree inside=0
  for tree in "${cluster_tmp_trees[@]}"; do
    [[ $wd == "$tree" || $wd == "$tree"/* ]] && inside=1
  done
  [[ ($wd == /tmp* && $inside == 0) || $wd == /run* ]] && wd=/
  # --root: entering a mount namespace moves the root to the namespace's
  # own; inside a chroot (a fresh-machine check, a build root) that is the
  # host's file system, not the one the holder's mounts were made in.
  exec nsenter -t "$(<"$CLUSTER_DIR/${CLUSTER_NODES[i]}/holder.pid")" -n -u -m --root --wd="$wd" -- "$@"
}

cluster_exec() {
  local i
  i=$(cluster_node_index "$1") || return 1
  shift
  (cluster_enter "$i" "$@")
}

# spawn NODE COMMAND...: COMMAND on the node in the background, its pid (the
# command's own, to signal or wait for) in $cluster_spawned. (`cluster_exec
# ... &` would leave a shell between the two.)
cluster_spawn() {
  local i
  i=$(cluster_node_index "$1") || return 1
  shift
  (cluster_enter "$i" "$@") &
  cluster_spawned=$!
}

# write_slurm_conf CTLD_PORT LINE...
cluster_write_slurm_conf() {
  local dir=$CLUSTER_DIR port=$1 i cpus
  shift
  {
    cat <<EOF
# Generated by tests/tools/cluster.sh; everything under $dir.
ClusterName=corenoise-cluster
SlurmctldHost=$(hostname -s)($cluster_subnet.1)
SlurmctldPort=$port
SlurmdPort=6818
EOF
    # No binding by Slurm: a node's tasks keep to the node's cpuset, which
    # task/affinity's abstract CPU 0 would leave on a node of CPU 1.
    slurm_cluster_conf_settings "$dir" "$dir/%n" task/none
    cat <<EOF
HealthCheckProgram=$dir/bin/corenoise-healthcheck
HealthCheckInterval=$cluster_healthcheck_interval
HealthCheckNodeState=ANY
Prolog=$dir/bin/corenoise-prolog
Epilog=$dir/bin/corenoise-epilog
PrologFlags=Alloc
EOF
    printf '%s\n' "$@"
    for i in "${!CLUSTER_NODES[@]}"; do
      cpus=$(tr ',' '\n' <<<"${CLUSTER_CPUS[i]}" | wc -l)
      echo "NodeName=${CLUSTER_NODES[i]} NodeAddr=${CLUSTER_ADDRS[i]} NodeHostname=${CLUSTER_NODES[i]} CPUs=$cpus RealMemory=256 State=UNKNOWN"
    done
    echo "PartitionName=debug Default=YES Nodes=ALL MaxTime=INFINITE State=UP"
  } >"$dir/slurm.conf"
  : >"$dir/plugstack.conf"
}

# write_slurm_scripts: the wrappers slurmd runs in place of deploy/slurm's
# scripts (it gives them no PATH and no way to find this cluster's settings).
cluster_write_slurm_scripts() {
  local dir=$CLUSTER_DIR script deploy
  deploy=$(readlink -f "$cluster_here/../../deploy/slurm")
  mkdir -p "$dir/bin" "$dir/logbin"
  ln -sf "$(readlink -f "$cluster_here/../deploy/slurm_fixtures/bin/logger")" "$dir/logbin/logger"
  # Sourced by deploy/slurm: a shell word, whatever the checkout's path.
  printf 'CORENOISE_BIN=%q\n' "$cluster_corenoise" >"$dir/corenoise-slurm"
  # ssh for the launchers, into the nodes of this cluster.
  printf '#!/bin/sh\nexec %q --dir %q ssh "$@"\n' "$cluster_here/cluster.sh" "$dir" >"$dir/bin/ssh"
  chmod 0755 "$dir/bin/ssh"
  for script in corenoise-healthcheck corenoise-prolog corenoise-epilog; do
    cat >"$dir/bin/$script" <<EOF
#!/bin/sh
# slurmd runs this on a node of the cluster in $dir.
export CORENOISE_SLURM_CONFIG='$dir/corenoise-slurm' SLURM_CONF='$dir/slurm.conf'
export FAKE_LOGGER_LOG="$dir/\$(hostname)/syslog" PATH="$dir/logbin:\${PATH:-/usr/bin:/bin}"
exec '$deploy/$script' "\$@"
EOF
    chmod 0755 "$dir/bin/$script"
  done
}

# start_corenoised I: node I's corenoised (again, after a test stopped it).
cluster_start_corenoised() {
  local dir=$CLUSTER_DIR/${CLUSTER_NODES[$1]}
  local -a args=("${cluster_daemon_args[@]}")
  local node_arg
  for node_arg in "${cluster_node_daemon_args[@]}"; do
    [[ ${node_arg%%:*} == "$1" ]] && args+=("${node_arg#*:}")
  done
  cluster_spawn "$1" "$cluster_corenoised" --config /dev/null --state-dir "$dir/state" \
    "${args[@]}" </dev/null >>"$dir/corenoised.log" 2>&1
  echo "$cluster_spawned" >"$dir/corenoised.bgpid"
}

cluster_start_slurmd() {
  local dir=$CLUSTER_DIR/${CLUSTER_NODES[$1]}
  cluster_spawn "$1" slurmd -D -f "$SLURM_CONF" </dev/null >>"$dir/slurmd.out" 2>&1
  echo "$cluster_spawned" >"$dir/slurmd.bgpid"
}

cluster_start_node_daemons() {
  local i=$1 name=${CLUSTER_NODES[$1]}
  local dir=$CLUSTER_DIR/$name
  cluster_start_slurmd "$i"
  cluster_start_corenoised "$i"
  # (No systemd collector: a node's /run has no systemd to ask.)
  cluster_spawn "$i" prometheus-node-exporter --web.listen-address=:9100 --log.level=warn --no-collector.systemd \
    </dev/null >>"$dir/node_exporter.log" 2>&1
  echo "$cluster_spawned" >"$dir/node_exporter.bgpid"
}

# The shipped rules with every duration scaled from minutes to seconds (and
# hours to minutes): the rules' header says to scale the windows and `for:`
# with the daemon's interval, here 2 s instead of 300 s.
cluster_start_prometheus() {
  local dir=$CLUSTER_DIR/prometheus port i
  local rules
  rules=$(readlink -f "$cluster_here/../../deploy/prometheus/corenoise.rules.yml")
  mkdir -p "$dir"
  sed -E 's/(for: *[0-9]+)m\b/\1s/; s/(for: *[0-9]+)h\b/\1m/; s/\[([0-9]+)m\]/[\1s]/g; s/\[([0-9]+)h\]/[\1m]/g' \
    "$rules" >"$dir/corenoise.rules.yml"
  {
    printf 'global:\n  scrape_interval: 2s\n  evaluation_interval: 2s\n'
    printf 'rule_files:\n  - corenoise.rules.yml\nscrape_configs:\n'
    printf '  - job_name: corenoise\n    static_configs:\n'
    for i in "${!CLUSTER_NODES[@]}"; do
      printf "      - targets: ['%s:19847']\n        labels: {instance: %s}\n" "${CLUSTER_ADDRS[i]}" "${CLUSTER_NODES[i]}"
    done
    printf '  - job_name: node\n    static_configs:\n'
    for i in "${!CLUSTER_NODES[@]}"; do
      printf "      - targets: ['%s:9100']\n        labels: {instance: %s}\n" "${CLUSTER_ADDRS[i]}" "${CLUSTER_NODES[i]}"
    done
  } >"$dir/prometheus.yml"
  port=$(slurm_cluster_free_port)
  prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
    --web.listen-address="127.0.0.1:$port" --log.level=warn >>"$dir/prometheus.log" 2>&1 &
  echo $! >"$CLUSTER_DIR/prometheus.bgpid"
  CLUSTER_PROMETHEUS=http://127.0.0.1:$port
}

# --- waiting ------------------------------------------------------------------

cluster_nodes_registered() {
  local states
  states=$(sinfo -h -N -o '%T' 2>/dev/null | grep -cE '^(idle|drained|draining|mixed|allocated|completing)$')
  [[ $states -eq ${#CLUSTER_NODES[@]} ]]
}

cluster_daemons_answer() {
  local i rc
  for i in "${!CLUSTER_NODES[@]}"; do
    rc=0
    cluster_exec "$i" "$cluster_corenoise" status >/dev/null 2>&1 || rc=$?
    ((rc != 1)) || return 1
  done
}

cluster_targets_up() {
  curl -sf "$CLUSTER_PROMETHEUS/api/v1/query" --data-urlencode 'query=count(up == 1)' |
    grep -q "\"value\":\[[0-9.]*,\"$((2 * ${#CLUSTER_NODES[@]}))\"\]"
}

# --- start, stop ----------------------------------------------------------------

cluster_save() {
  {
    declare -p CLUSTER_DIR CLUSTER_NODES CLUSTER_ADDRS CLUSTER_CPUS CLUSTER_PROMETHEUS
    declare -p cluster_cgroup cluster_corenoise cluster_corenoised cluster_daemon_args \
      cluster_node_daemon_args cluster_tmp_trees
  } | sed -E 's/^declare -[-a-zA-Z]* /declare -g /' >"$CLUSTER_DIR/cluster.env"
}

cluster_load() {
  [[ -r $1/cluster.env ]] || {
    cluster_say "no cluster in '$1'"
    return 1
  }
  # shellcheck source=/dev/null
  . "$1/cluster.env"
  SLURM_CLUSTER_DIR=$CLUSTER_DIR
  export SLURM_CONF=$CLUSTER_DIR/slurm.conf CLUSTER_DIR CLUSTER_PROMETHEUS
}

cluster_start() {
  local nodes=2 attempt rc started=$SECONDS
  local -a conf_lines=()
  cluster_corenoise=$cluster_here/../../build/collector/corenoise
  cluster_corenoised=$cluster_here/../../build/daemon/corenoised
  cluster_daemon_args=()
  cluster_node_daemon_args=()
  cluster_healthcheck_interval=5
  while (($#)); do
    case $1 in
      --nodes) nodes=$2 ;;
      --corenoise) cluster_corenoise=$2 ;;
      --corenoised) cluster_corenoised=$2 ;;
      --daemon-arg) cluster_daemon_args+=("$2") ;;
      --node-daemon-arg)
        [[ $2 =~ ^[1-9][0-9]?:. ]] || {
          cluster_say "--node-daemon-arg: expected NODE:ARGUMENT (a node number, 1..N), got '$2'"
          return 1
        }
        cluster_node_daemon_args+=("$2")
        ;;
      --healthcheck-interval) cluster_healthcheck_interval=$2 ;;
      --slurm-conf) conf_lines+=("$2") ;;
      *) cluster_say "unknown option '$1'" && return 1 ;;
    esac
    shift 2
  done
  ((${#cluster_daemon_args[@]} > 0)) || cluster_daemon_args=(--interval 2 --stream-bytes 8388608)
  [[ $nodes =~ ^[1-9][0-9]?$ ]] || {
    cluster_say "--nodes: expected 1 to 99, got '$nodes'"
    return 1
  }
  cluster_corenoise=$(readlink -f "$cluster_corenoise")
  cluster_corenoised=$(readlink -f "$cluster_corenoised")
  if [[ ! -x $cluster_corenoise || ! -x $cluster_corenoised ]]; then
    cluster_say "corenoise or corenoised not found (build first, or give --corenoise and --corenoised)"
    return 1
  fi
  # What the nodes run from under /tmp: the checkout, the binaries' folders.
  cluster_tmp_trees=()
  local tree listed seen
  for tree in "$(readlink -f "$cluster_here/../..")" "${cluster_corenoise%/*}" \
    "${cluster_corenoised%/*}"; do
    [[ $tree == /tmp/* ]] || continue
    seen=0
    for listed in "${cluster_tmp_trees[@]}"; do
      [[ $tree == "$listed" || $tree == "$listed"/* ]] && seen=1
    done
    ((seen)) || cluster_tmp_trees+=("$tree")
  done
  cluster_require
  cluster_remove_leftovers
  CLUSTER_DIR=$(mktemp -d -t corenoise-cluster.XXXXXX) || return 1
  # munged serves its socket only where every directory above may be searched.
  chmod 0711 "$CLUSTER_DIR"
  SLURM_CLUSTER_DIR=$CLUSTER_DIR
  export SLURM_CONF=$CLUSTER_DIR/slurm.conf CLUSTER_DIR
  cluster_plan "$nodes"
  mkdir -p "$CLUSTER_DIR/shared" && chmod 1777 "$CLUSTER_DIR/shared"
  cluster_make_cgroups || return 1
  cluster_save
  cluster_make_network || return 1
  local i
  for i in "${!CLUSTER_NODES[@]}"; do cluster_start_holder "$i" || return 1; done
  cluster_write_slurm_scripts
  for attempt in 1 2 3; do
    cluster_write_slurm_conf "$(slurm_cluster_free_port)" "${conf_lines[@]}"
    rc=0
    slurm_cluster_start_controller || rc=$?
    ((rc == 0)) && break
    slurm_cluster_stop_pid slurmctld
    slurm_cluster_stop_pid munged
    ((rc == 3)) || return 1
  done
  ((rc == 0)) || return 1
  for i in "${!CLUSTER_NODES[@]}"; do cluster_start_node_daemons "$i"; done
  cluster_start_prometheus
  export CLUSTER_PROMETHEUS
  cluster_save
  # (slurm_cluster_wait_for's "-": no one daemon whose exit ends the wait.)
  if ! slurm_cluster_wait_for 20 "the nodes did not all register with slurmctld" - cluster_nodes_registered ||
    ! slurm_cluster_wait_for 20 "a node's corenoised did not answer" - cluster_daemons_answer ||
    ! slurm_cluster_wait_for 20 "Prometheus did not find every target up" - cluster_targets_up; then
    cluster_logs
    return 1
  fi
  cluster_say "${#CLUSTER_NODES[@]} nodes up in $((SECONDS - started)) s in $CLUSTER_DIR"
}

# kill_cgroups DIR...: TERM to every process in these cgroups, then KILL to
# what is left after 3 s; returns once they are empty (or 3 s more).
cluster_kill_cgroups() {
  local dir k signal
  for signal in TERM KILL; do
    for dir in "$@"; do
      [[ -r $dir/cgroup.procs ]] && xargs -r kill "-$signal" <"$dir/cgroup.procs" 2>/dev/null
    done
    for ((k = 0; k < 30; k++)); do
      [[ -z $(cat "${@/%//cgroup.procs}" 2>/dev/null) ]] && return 0
      sleep 0.1
    done
  done
}

# remove_leftovers: what a cluster killed before its clean-up left: the
# processes of its nodes (all in their cpusets) and of its controller (their
# command lines name its directory), its namespaces, links and cgroups.
cluster_remove_leftovers() {
  local root proc node dir
  root=$(cluster_cgroup_root) || root=''
  if [[ -n $root && -d $root ]]; then
    cluster_kill_cgroups "$root"/cn-node*
    for node in "$root"/cn-node*; do
      [[ -d $node ]] && rmdir "$node" 2>/dev/null
    done
    rmdir "$root" 2>/dev/null
  fi
  for proc in /proc/[0-9]*; do
    [[ ${proc#/proc/} == "$$" ]] && continue
    if tr '\0' ' ' <"$proc/cmdline" 2>/dev/null | grep -q "/corenoise-cluster\.[A-Za-z0-9]\{6\}/" &&
      [[ -z $CLUSTER_DIR || $(tr '\0' ' ' <"$proc/cmdline" 2>/dev/null) != *"$CLUSTER_DIR/"* ]]; then
      kill -KILL "${proc#/proc/}" 2>/dev/null
    fi
  done
  for node in $(ip netns list 2>/dev/null | awk '$1 ~ /^cn-node[0-9]+$/ {print $1}'); do
    ip netns pids "$node" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
    ip netns del "$node" 2>/dev/null
  done
  ip link del "$cluster_bridge" 2>/dev/null
  for dir in /sys/class/net/cnc-veth*; do
    [[ -e $dir ]] && ip link del "${dir##*/}" 2>/dev/null
  done
  for dir in "${TMPDIR:-/tmp}"/corenoise-cluster.*; do
    [[ -d $dir && $dir != "$CLUSTER_DIR" ]] && rm -rf -- "$dir"
  done
  return 0
}

cluster_stop() {
  [[ -n $CLUSTER_DIR ]] || return 0
  # Each step does what it can; a caller's `set -e` or ERR trap must not
  # stop the clean-up half way.
  (
    set +eE
    trap - ERR
    cluster_stop_all
  )
  CLUSTER_DIR='' SLURM_CLUSTER_DIR=''
  return 0
}

cluster_stop_all() {
  local i
  if [[ -s $CLUSTER_DIR/slurmctld.bgpid ]] && squeue -h -o %i 2>/dev/null | grep -q .; then
    scancel --full --quiet 2>/dev/null
    slurm_cluster_wait_for 5 "jobs were still there after scancel" - \
      bash -c '! squeue -h -o %i | grep -q .' 2>/dev/null
  fi
  # Everything a node ran is in its cpuset: the daemons, the holder, job
  # steps (slurmstepd is slurmd's), the ranks a launcher started there.
  [[ -n $cluster_cgroup ]] && cluster_kill_cgroups "${CLUSTER_NODES[@]/#/$cluster_cgroup/}"
  slurm_cluster_stop_pid prometheus
  slurm_cluster_stop_pid slurmctld
  slurm_cluster_stop_pid munged
  for i in "${!CLUSTER_NODES[@]}"; do
    ip netns del "${CLUSTER_NODES[i]}" 2>/dev/null
    ip link del "cnc-veth$i" 2>/dev/null
    [[ -n $cluster_cgroup ]] && rmdir "$cluster_cgroup/${CLUSTER_NODES[i]}" 2>/dev/null
  done
  ip link del "$cluster_bridge" 2>/dev/null
  [[ -n $cluster_cgroup ]] && rmdir "$cluster_cgroup" 2>/dev/null
  rm -rf -- "$CLUSTER_DIR"
}

# leftovers DIR PORT: what of a stopped cluster in DIR (its Prometheus on
# PORT) is still there, one thing a line: processes, mounts, network
# namespaces, links, cgroups, the directory, the port.
cluster_leftovers() {
  local dir=$1 port=$2 proc
  for proc in /proc/[0-9]*; do
    if [[ $(tr '\0' ' ' <"$proc/cmdline" 2>/dev/null) == *"$dir"* ]]; then
      echo "process ${proc#/proc/}: $(tr '\0' ' ' <"$proc/cmdline" 2>/dev/null)"
    fi
  done
  grep -- "$dir" /proc/mounts | sed 's/^/mount /' || true
  ip netns list | grep -E '^cn-node[0-9]+' | sed 's/^/network namespace /' || true
  ip -o link | grep -oE 'cnc-[a-z0-9]+' | sed 's/^/link /' || true
  if [[ -e $(cluster_cgroup_root) ]]; then echo "cgroup $(cluster_cgroup_root)"; fi
  if [[ -e $dir ]]; then echo "directory $dir"; fi
  ss -Htln "sport = :$port" | sed 's/^/listening /' || true
  return 0
}

# logs: the last lines of every daemon's log, to stderr.
cluster_logs() {
  [[ -n $CLUSTER_DIR ]] || return 0
  local file
  for file in "$CLUSTER_DIR"/*.log "$CLUSTER_DIR"/*.out "$CLUSTER_DIR"/cn-node*/*.log \
    "$CLUSTER_DIR"/cn-node*/*.out "$CLUSTER_DIR"/cn-node*/syslog "$CLUSTER_DIR"/prometheus/*.log; do
    if [[ -s $file ]]; then tail -n 20 "$file" | sed "s|^|  ${file#"$CLUSTER_DIR"/}: |" >&2; fi
  done
  return 0
}

# --- as a program -------------------------------------------------------------

# show: what the program runs by default: Slurm's view and each node's daemon.
cluster_show() {
  sinfo -N -l
  local i
  for i in "${!CLUSTER_NODES[@]}"; do
    echo "--- ${CLUSTER_NODES[i]}: corenoise status"
    cluster_exec "$i" "$cluster_corenoise" status || true
  done
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -uo pipefail
  if [[ ${1:-} == --dir ]]; then
    cluster_load "$2" || exit 1
    case ${3:-} in
      exec)
        [[ $# -ge 5 ]] || { echo "usage: $0 --dir DIR exec NODE COMMAND..." >&2; exit 1; }
        cluster_exec "$4" "${@:5}"
        exit
        ;;
      ssh)
        shift 3
        while [[ ${1:-} == -* ]]; do shift; done
        [[ $# -ge 2 ]] || { echo "usage: $0 --dir DIR ssh [-OPTION]... NODE COMMAND-LINE..." >&2; exit 255; }
        node=$1
        shift
        # ssh hands its words to the remote shell as one command line.
        cluster_exec "$node" sh -c "$*"
        exit
        ;;
      stop) cluster_stop && exit 0 ;;
      *) echo "usage: $0 --dir DIR exec NODE COMMAND... | ssh NODE COMMAND-LINE... | stop" >&2 && exit 1 ;;
    esac
  fi
  keep=no
  options=()
  while (($#)); do
    case $1 in
      --keep) keep=yes && shift ;;
      -h | --help) sed -n '2,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
      --nodes | --corenoise | --corenoised | --daemon-arg | --node-daemon-arg | --healthcheck-interval | --slurm-conf)
        options+=("$1" "$2") && shift 2 ;;
      --*) echo "cluster: unknown option '$1' (see --help)" >&2 && exit 1 ;;
      *) break ;;
    esac
  done
  cluster_require
  [[ $keep == yes ]] || trap cluster_stop EXIT
  trap 'exit 1' INT TERM
  cluster_start "${options[@]}" || {
    cluster_stop
    exit 1
  }
  if [[ $keep == yes ]]; then
    me=$(readlink -f "$0")
    echo "cluster: kept in $CLUSTER_DIR"
    for i in "${!CLUSTER_NODES[@]}"; do
      echo "  ${CLUSTER_NODES[i]}: ${CLUSTER_ADDRS[i]}, CPU ${CLUSTER_CPUS[i]}; enter it: $me --dir $CLUSTER_DIR exec ${CLUSTER_NODES[i]} bash"
    done
    echo "  Slurm:      export SLURM_CONF=$SLURM_CONF; sinfo"
    echo "  Prometheus: $CLUSTER_PROMETHEUS (alerts: $CLUSTER_PROMETHEUS/api/v1/alerts)"
    echo "  stop it:    $me --dir $CLUSTER_DIR stop"
    exit 0
  fi
  (($# > 0)) || set -- cluster_show
  rc=0
  "$@" || rc=$?
  exit "$rc"
fi
