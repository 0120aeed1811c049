#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# slurm_real_test.sh: deploy/slurm/ and `corenoise sweep` under a real Slurm
# -- munged, slurmctld and slurmd from Debian's packages, one node, started
# and stopped by each case (tests/tools/slurm_cluster.sh, 1-2 s here) --
# against a real corenoised. One case a run, registered with ctest by
# tests/deploy/slurm_real.cmake. Where tests/deploy/slurm_test.sh fakes
# scontrol to test every branch of the scripts, these test that slurmd really
# runs them, with the environment it really gives them, and that srun's two
# PMI flavours start the MPI family corenoise expects.
#
# Usage: slurm_real_test.sh CASE CORENOISE CORENOISED
#   CASE        one of the functions named case_* below, without the prefix
#   CORENOISE   the real corenoise binary; CORENOISED the real daemon
#
# Exit status: 0 passed, 1 failed, 2 skipped (Slurm is not installed; any
# other trouble with Slurm is a failure).
#
# slurmd runs HealthCheckProgram with SLURMD_NODENAME alone in its
# environment, and the prolog and epilog with the job's variables and
# SLURM_CONF but no PATH: neither can be told where this test's corenoised
# and slurm.conf are other than by /etc/default/corenoise-slurm, which a test
# must not write. So slurm.conf names a wrapper per script (in $tmp) that
# exports CORENOISE_SLURM_CONFIG (a settings file in $tmp) and SLURM_CONF,
# puts the fake logger first on PATH (syslog lines to a file, not the
# machine's journal), records each run, and runs the script from deploy/slurm
# unchanged. scontrol, srun and corenoise are the real ones.
set -Eeuo pipefail
[[ $# -eq 3 ]] || { echo "usage: $0 CASE CORENOISE CORENOISED" >&2; exit 1; }
case_name=$1
real_corenoise=$(readlink -f "$2")
real_corenoised=$(readlink -f "$3")
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
slurm=$(readlink -f "$here/../../deploy/slurm")
fixtures=$here/slurm_fixtures
tools=$(readlink -f "$here/../tools")
# shellcheck source=../tools/slurm_cluster.sh
. "$tools/slurm_cluster.sh"

# A command failing unforeseen is a failure (1), never a skip: under set -e
# its own status would be the script's, and corenoise's 2 ("unhealthy")
# would read to ctest as SKIP_RETURN_CODE.
trap 'echo "FAIL: line $LINENO: a command exited $?" >&2; exit 1' ERR
# ctest stops a case past its TIMEOUT with a signal: still clean up.
trap 'exit 1' TERM INT

tmp=$(mktemp -d)
# The wrappers run as root from slurmd, which may have another working
# directory and umask; nothing here is secret.
chmod 0755 "$tmp"
daemon_pid=''
injector_pid=''
# (The clean-up's own slips must not turn a pass into a failure.)
trap 'trap - ERR; stop_injector; stop_daemon; slurm_cluster_stop; rm -rf -- "$tmp"' EXIT

# The probe settings of slurm_test.sh: verdicts that come from thresholds.
quick=(--samples 3 --reps 4 --detour-window 0.005 --stream-bytes 8388608)
always_ok=(--throttled-clock-ratio 100 --noisy-excess-noise 1 --slow-ratio 100 --contended-stream-ratio 100)

fail() {
  trap - ERR
  echo "FAIL: $*" >&2
  local file
  for file in logger.log healthcheck.runs healthcheck.err prolog.err epilog.err corenoised.log job.out srun.err; do
    [[ -s $tmp/$file ]] && tail -n 40 "$tmp/$file" | sed "s/^/  $file: /" >&2
  done
  [[ -n $SLURM_CLUSTER_DIR ]] && scontrol -o show node "$SLURM_CLUSTER_NODE" 2>&1 | sed 's/^/  node: /' >&2
  slurm_cluster_logs
  exit 1
}

# A clean environment: nothing of the caller's Slurm or corenoise settings.
for name in $(compgen -v CORENOISE_ || true) $(compgen -v SLURM || true); do
  [[ $name == SLURM_CLUSTER_* ]] || unset "$name"
done
unset name
# Every case but shellcheck needs Slurm: skip before starting anything.
[[ $case_name == shellcheck ]] || slurm_cluster_require
export CORENOISE_SOCKET=$tmp/ctl.sock FAKE_LOGGER_LOG=$tmp/logger.log
: >"$FAKE_LOGGER_LOG"
mkdir -p "$tmp/bin" "$tmp/sys"
ln -s "$fixtures/bin/logger" "$tmp/bin/logger"
# Sourced by deploy/slurm: shell words, whatever the checkout's path.
printf 'CORENOISE_BIN=%q\nCORENOISE_SOCKET=%q\nCORENOISE_SLURM_JOBS_DIR=%q\n' \
  "$real_corenoise" "$CORENOISE_SOCKET" "$tmp/jobs" >"$tmp/corenoise-slurm"

# wrapper NAME: $tmp/NAME, which slurmd runs in place of deploy/slurm/NAME
# (see the top of this file); each run appends "rc=N" to $tmp/NAME.runs and
# its stderr to $tmp/NAME.err. Prints the wrapper's path.
wrapper() {
  local name=$1 short=${1#corenoise-}
  cat >"$tmp/$name" <<EOF
#!/usr/bin/env bash
export CORENOISE_SLURM_CONFIG=$tmp/corenoise-slurm SLURM_CONF=$SLURM_CLUSTER_DIR/slurm.conf
export FAKE_LOGGER_LOG=$FAKE_LOGGER_LOG PATH=$tmp/bin:\${PATH:-/usr/bin:/bin}
rc=0
"$slurm/$name" 2>>"$tmp/$short.err" || rc=\$?
echo "rc=\$rc" >>"$tmp/$short.runs"
exit "\$rc"
EOF
  chmod 0755 "$tmp/$name"
  echo "$tmp/$name"
}

# start_cluster [LINE]...: slurm_cluster_start, failing the case when it does.
start_cluster() {
  slurm_cluster_start "$@" || fail "the Slurm cluster did not start"
}

# start_cluster_with SCRIPT...: a cluster whose slurmd runs these scripts
# of deploy/slurm (through their wrappers): the health check every 2 s in
# every node state, the prolog at allocation.
start_cluster_with() {
  local -a lines=()
  local script
  slurm_cluster_init
  for script in "$@"; do
    case $script in
      corenoise-healthcheck)
        lines+=("HealthCheckProgram=$(wrapper "$script")" HealthCheckInterval=2 HealthCheckNodeState=ANY) ;;
      corenoise-prolog) lines+=("Prolog=$(wrapper "$script")" PrologFlags=Alloc) ;;
      corenoise-epilog) lines+=("Epilog=$(wrapper "$script")") ;;
      *) fail "no such script: $script" ;;
    esac
  done
  start_cluster "${lines[@]}"
}

# shellcheck source=slurm_fixtures/daemon.sh
. "$fixtures/daemon.sh"
start_daemon() { start_corenoised "$@"; }

stop_injector() {
  if [[ -n $injector_pid ]]; then
    kill "$injector_pid" 2>/dev/null || true
    wait "$injector_pid" 2>/dev/null || true
    injector_pid=''
  fi
}

# status: corenoised's status reply (exit status 2 only says "unhealthy").
status() {
  "$real_corenoise" status --json 2>/dev/null || true
}

# wait_until SECONDS DESCRIPTION COMMAND...: polls every 0.2 s; fails after SECONDS.
wait_until() {
  local seconds=$1 what=$2 i
  shift 2
  for ((i = 0; i < seconds * 5; i++)); do
    "$@" && return 0
    sleep 0.2
  done
  fail "$what within $seconds s"
}

node_line() {
  scontrol -o show node "$SLURM_CLUSTER_NODE"
}

node_drained() {
  [[ $(node_line) == *" State="*DRAIN* ]]
}

runs_ok() {
  [[ -s $tmp/healthcheck.runs ]] && (($(grep -c '^rc=0$' "$tmp/healthcheck.runs") >= $1))
}

cpu1_persistently_unhealthy() {
  status | jq -e 'any(.unhealthy[]; .cpu == 1 and (.state | IN("noisy", "throttled", "contended", "slow")))' >/dev/null
}

daemon_measured() {
  status | jq -e '.rounds.isolated.count >= 1' >/dev/null
}

# --- health check -------------------------------------------------------------

# A real corenoised sees real noise: a SCHED_FIFO thread busy 40 % of every
# 10 ms on CPU 1 (`corenoise inject`). With the daemon's default probe
# settings (the quick ones are too short to catch it reliably on a 2-vCPU
# VM) and persistence (2 of 3 rounds), CPU 1 turns persistently unhealthy
# within a few 1-s rounds. slurmd's health check then drains the node with a
# reason naming CPU 1, from the daemon's status.
case_healthcheck_drains_noisy_node() {
  local line reason
  "$real_corenoise" inject --cpus 1 --seconds 90 --duty 0.4 >"$tmp/inject.out" 2>&1 &
  injector_pid=$!
  wait_until 10 "corenoise inject was not ready" grep -q '^ready' "$tmp/inject.out"
  start_daemon --interval 1 --busy-policy probe --stream-bytes 8388608
  wait_until 30 "corenoised did not find CPU 1 persistently unhealthy" cpu1_persistently_unhealthy
  status >"$tmp/status.json"
  start_cluster_with corenoise-healthcheck
  wait_until 20 "slurmd's health check did not drain the node" node_drained
  line=$(node_line)
  [[ $line == *" Reason=corenoise: "* ]] || fail "drained with another reason: $line"
  reason=${line#* Reason=}
  reason=${reason% \[*}
  # "corenoise: cpu 1 noisy (47% lost, preempted)", CPU 1 anywhere in the list.
  local named='(: |, )cpu 1 (noisy|throttled|contended|slow)( |,|$)'
  [[ $reason =~ $named ]] ||
    fail "the reason does not name CPU 1 unhealthy: '$reason' (daemon: $(jq -c .unhealthy "$tmp/status.json"))"
  grep -qF -- "drained node $SLURM_CLUSTER_NODE (from corenoised): $reason" "$FAKE_LOGGER_LOG" ||
    fail "the health check did not log the drain from corenoised"
  if grep -q 'probing instead' "$FAKE_LOGGER_LOG"; then fail "the health check did not reach corenoised"; fi
  echo "drained: $reason"
}

# No noise and thresholds no core can reach: the node stays idle with no
# reason through at least two checks, each of which read the daemon's
# verdicts and found every CPU ok.
case_healthcheck_leaves_healthy_node() {
  start_daemon --interval 1 --busy-policy probe "${quick[@]}" "${always_ok[@]}"
  wait_until 20 "corenoised did not finish a round" daemon_measured
  status | jq -e '.healthy == true' >/dev/null || fail "corenoised is not healthy: $(status)"
  start_cluster_with corenoise-healthcheck
  wait_until 20 "slurmd did not run the health check twice" runs_ok 2
  local line
  line=$(node_line)
  [[ $line == *" State=IDLE "* ]] || fail "the node is not idle: $line"
  [[ $line != *" Reason="* ]] || fail "the node has a reason: $line"
  if grep -v '^rc=0$' "$tmp/healthcheck.runs"; then fail "a health check failed"; fi
  (($(grep -c 'every CPU ok (from corenoised)' "$FAKE_LOGGER_LOG") >= 2)) ||
    fail "the health checks did not find every CPU ok from corenoised"
  if grep -q 'drain' "$FAKE_LOGGER_LOG"; then fail "the health check drained"; fi
}

# --- prolog and epilog ----------------------------------------------------------

paused() {
  status | jq -r .paused
}

resumed_without_markers() {
  [[ $(paused) == false && -z $(find "$tmp/jobs" -maxdepth 1 -type f -name '[0-9]*' 2>/dev/null) ]]
}

# slurmd runs the prolog at allocation (PrologFlags=Alloc), so the job's own
# task finds corenoised paused and its marker in place; once the job ends,
# the epilog resumes it and removes the marker (slurmd runs the epilog after
# srun has returned, hence the wait).
case_prolog_epilog_pause_resume_around_srun() {
  start_daemon --interval 3600 "${quick[@]}"
  [[ $(paused) == false ]] || fail "corenoised paused before any job"
  start_cluster_with corenoise-prolog corenoise-epilog
  local job
  # The job's shell expands its variables, not this one.
  # shellcheck disable=SC2016
  timeout 60 srun -N1 -n1 sh -c 'echo "job=$SLURM_JOB_ID"; ls "$1"; "$2" status --json || true' \
    sh "$tmp/jobs" "$real_corenoise" >"$tmp/job.out" 2>"$tmp/srun.err" || fail "srun failed"
  job=$(sed -n 's/^job=//p' "$tmp/job.out")
  [[ $job =~ ^[0-9]+$ ]] || fail "the job printed no job id"
  grep -qx "$job" "$tmp/job.out" || fail "no marker for job $job while it ran"
  [[ $(sed -n '/^{/,$p' "$tmp/job.out" | jq -r .paused) == true ]] || fail "corenoised was not paused while the job ran"
  grep -qF "job $job starts: " "$FAKE_LOGGER_LOG" || fail "the prolog did not pause for job $job"
  wait_until 15 "corenoised was not resumed after the job" resumed_without_markers
  grep -qF "job $job ends, the last on this node: " "$FAKE_LOGGER_LOG" || fail "the epilog did not resume"
  [[ $(cat "$tmp/prolog.runs") == rc=0 && $(cat "$tmp/epilog.runs") == rc=0 ]] ||
    fail "the prolog and epilog did not run once each with exit status 0"
  if grep -q 'unexpected failure' "$FAKE_LOGGER_LOG"; then fail "a script failed unforeseen"; fi
}

# --- srun and the two PMI flavours ----------------------------------------------

# srun_sweep FLAVOUR FAMILY LIBRARY OTHER: a rank-per-core sweep of both
# CPUs under `srun --mpi=FLAVOUR`, checked for its report and for the MPI it
# ran: every rank loaded libcorenoise-mpi-FAMILY.so and LIBRARY (the dynamic
# linker's account, LD_DEBUG=files), none libcorenoise-mpi-OTHER.so.
srun_sweep() {
  local flavour=$1 family=$2 library=$3 other=$4 rc=0 file
  start_cluster
  # The launcher's variables the family is picked from (collector/mpi/mpi_launcher.h).
  timeout 60 srun --mpi="$flavour" -n 2 sh -c 'env | grep -E "^(PMI|PMIX|OMPI|SLURM_STEP_NUM_TASKS|SLURM_PROCID)" | sort' \
    >"$tmp/env.out" 2>"$tmp/srun.err" || fail "srun --mpi=$flavour env failed"
  sed 's/^/  task: /' "$tmp/env.out"
  if [[ $flavour == pmi2 ]]; then
    if ! { (($(grep -c '^PMI_FD=' "$tmp/env.out") == 2)) && grep -qx 'PMI_SIZE=2' "$tmp/env.out"; }; then
      fail "srun --mpi=pmi2 gave its tasks no PMI_FD and PMI_SIZE=2"
    fi
    if grep -q '^PMIX_\|^OMPI_' "$tmp/env.out"; then fail "srun --mpi=pmi2 set PMIx or Open MPI variables"; fi
  else
    (($(grep -c '^PMIX_RANK=' "$tmp/env.out") == 2)) || fail "srun --mpi=pmix gave its tasks no PMIX_RANK"
    if grep -q '^PMI_FD=\|^PMI_PORT=\|^PMI_RANK=\|^OMPI_COMM_WORLD' "$tmp/env.out"; then
      fail "srun --mpi=pmix set MPICH's or mpirun's variables"
    fi
  fi

  mkdir "$tmp/ld"
  # No corenoised is paused but one on $CORENOISE_SOCKET (there is none).
  LD_DEBUG=files LD_DEBUG_OUTPUT=$tmp/ld/rank timeout 90 \
    srun --mpi="$flavour" -n 2 --cpu-bind=cores "$real_corenoise" sweep --rank-per-core --json "$tmp/sweep.json" \
    "${quick[@]}" --timeout 60 >"$tmp/job.out" 2>"$tmp/srun.err" || rc=$?
  [[ $rc -eq 0 || $rc -eq 2 ]] || fail "srun --mpi=$flavour corenoise sweep: exit status $rc"
  jq -e '.node_count == 1 and .layout == "rank-per-core" and .nodes[0].probed_cores == 2' "$tmp/sweep.json" >/dev/null ||
    fail "the sweep's report: $(jq -c '{node_count, layout, probed: [.nodes[].probed_cores]}' "$tmp/sweep.json")"
  # LD_DEBUG_OUTPUT writes one file per process: srun's, and the ranks'.
  local -a ranks
  # A file's name is what stands between "file=" and " [" (it may hold spaces).
  mapfile -t ranks < <(grep -l 'file=[^[]*libcorenoise-mpi-' "$tmp"/ld/rank.* || true)
  ((${#ranks[@]} == 2)) || fail "${#ranks[@]} processes loaded a corenoise MPI plugin, expected 2 ranks"
  for file in "${ranks[@]}"; do
    grep -q "file=[^[]*libcorenoise-mpi-$family\.so" "$file" || fail "a rank did not load libcorenoise-mpi-$family.so"
    grep -q "file=[^[]*$library" "$file" || fail "a rank did not load $library"
    if grep -q "file=[^[]*libcorenoise-mpi-$other\.so" "$file"; then fail "a rank loaded libcorenoise-mpi-$other.so"; fi
  done
  echo "srun --mpi=$flavour: exit status $rc, both ranks ran libcorenoise-mpi-$family.so with $library"
}

case_srun_rank_per_core_pmi2() {
  srun_sweep pmi2 mpich libmpich.so.12 openmpi
}

case_srun_rank_per_core_pmix() {
  srun_sweep pmix openmpi libmpi.so.40 mpich
}

# --- the ranks' Slurm job, in the kernel's words -----------------------------------

# write_line_sender: $tmp/sender.py, a program that sends job-start (naming
# CGROUP, if not empty) and a small report for JOB_ID on SOCKET from one
# process, and prints both replies: python3 sender.py JOB_ID CGROUP SOCKET.
write_line_sender() {
  cat >"$tmp/sender.py" <<'EOF'
import json, os, socket, sys, time
job_id, cgroup, path = sys.argv[1], sys.argv[2], sys.argv[3]
start = {"command": "job-start", "job_id": job_id}
if cgroup:
    start["cgroup"] = cgroup
cpu = min(os.sched_getaffinity(0))
report = {"command": "job", "job_id": job_id, "ended_unix_seconds": time.time(),
          "elapsed_seconds": 0.01, "ranks": 1,
          "cpus": [{"cpu": cpu, "lost_seconds": {"more-work": 0.001}}]}
s = socket.socket(socket.AF_UNIX)
s.connect(path)
f = s.makefile("rw")
for line in (start, report):
    f.write(json.dumps(line) + "\n")
    f.flush()
    print(f.readline().strip())
EOF
}

# last_job_id: what corenoised's status names as the last job.
last_job_id() { "$real_corenoise" status --json | jq -r .jobs.last_job_id; }

# Ranks under Slurm's cgroup plugin (cgroup/v1: proctrack/cgroup and
# task/cgroup), with corenoised at debug: a real `corenoise job` of an mpi4py
# program under srun --mpi=pmix names its job's cgroup at job-start, and the
# daemon takes the job id from Slurm; a process inside a job that calls its
# job something else is still Slurm's job; a process outside every job that
# names a running job's cgroup is not believed.
case_job_ranks_in_slurm_cgroups() {
  if [[ ! -e /sys/fs/cgroup/cpuset/cpuset.cpus || ! -d /sys/fs/cgroup/freezer ]]; then
    # Slurm's cgroup/v2 plugin needs slurmd under systemd (a delegated scope).
    echo "SKIP: needs the cgroup v1 cpuset and freezer hierarchies for Slurm's cgroup/v1 plugin" >&2
    exit 2
  fi
  start_daemon --interval 3600 --log-level debug "${quick[@]}"
  slurm_cluster_init
  printf 'CgroupPlugin=cgroup/v1\nConstrainCores=yes\n' >"$SLURM_CLUSTER_DIR/cgroup.conf"
  start_cluster ProctrackType=proctrack/cgroup TaskPlugin=task/cgroup,task/affinity
  local user_socket=$tmp/user.sock job
  cat >"$tmp/app.py" <<'EOF'
from mpi4py import MPI
import time
comm = MPI.COMM_WORLD
for step in range(20):
    begin = time.time()
    while time.time() - begin < 0.01 * (3 if comm.rank == 1 else 1):
        pass
    comm.Barrier()
EOF
  # The job's shell expands its variables, not this one.
  # shellcheck disable=SC2016
  timeout 60 srun --mpi=pmix -n 2 --cpu-bind=cores sh -c 'echo "job=$SLURM_JOB_ID"; exec "$@"' sh \
    "$real_corenoise" job --quiet --json "$tmp/job.json" -- /usr/bin/python3 "$tmp/app.py" \
    >"$tmp/job.out" 2>"$tmp/srun.err" || fail "srun corenoise job failed"
  job=$(sed -n 's/^job=//p' "$tmp/job.out" | head -n 1)
  [[ $job =~ ^[0-9]+$ ]] || fail "the job printed no job id"
  (($(grep -cF "job '$job' (Slurm's, from the rank's cgroup)" "$tmp/corenoised.log") == 2)) ||
    fail "corenoised did not take both ranks' reports as Slurm job $job's"
  [[ $(last_job_id) == "$job" ]] || fail "status names another job than $job"

  write_line_sender
  # Inside a job, calling it "mine": the kernel says it is Slurm's.
  # shellcheck disable=SC2016
  timeout 30 srun -n 1 sh -c 'echo "job=$SLURM_JOB_ID"; exec /usr/bin/python3 "$1" mine "$(grep -E "^[0-9]+:cpuset:" /proc/self/cgroup)" "$2"' \
    sh "$tmp/sender.py" "$user_socket" >"$tmp/inside.out" 2>"$tmp/srun.err" || fail "srun of the sender failed"
  job=$(sed -n 's/^job=//p' "$tmp/inside.out")
  (($(grep -c '"ok": *true' "$tmp/inside.out") == 2)) || fail "the sender inside job $job was refused: $(cat "$tmp/inside.out")"
  [[ $(last_job_id) == "$job" ]] || fail "a rank of Slurm job $job that called it 'mine' was taken at its word"

  # Outside every job, naming a running job's cgroup: not believed.
  timeout 60 srun -n 1 sleep 30 >/dev/null 2>&1 &
  local sleeper=$! cgroup='' i
  for ((i = 0; i < 100 && ${#cgroup} == 0; i++)); do
    cgroup=$(find /sys/fs/cgroup/cpuset/slurm*/uid_0 -mindepth 2 -maxdepth 2 -name step_0 2>/dev/null | head -n 1 || true)
    [[ -n $cgroup ]] || sleep 0.1
  done
  [[ -n $cgroup ]] || fail "no cgroup of the sleeping job"
  local claim="3:cpuset:${cgroup#/sys/fs/cgroup/cpuset}"
  /usr/bin/python3 "$tmp/sender.py" outsider "$claim" "$user_socket" >"$tmp/outside.out" || fail "the outside sender failed"
  kill "$sleeper" 2>/dev/null || true
  wait "$sleeper" 2>/dev/null || true
  (($(grep -c '"ok": *true' "$tmp/outside.out") == 2)) || fail "the outside sender was refused: $(cat "$tmp/outside.out")"
  [[ $(last_job_id) == outsider ]] || fail "a process outside every job was believed in $claim"
  echo "Slurm job cgroups: job $job's ranks taken as Slurm's; a claim from outside ($claim) passed over"
}

# --- the scripts themselves -------------------------------------------------------

case_shellcheck() {
  command -v shellcheck >/dev/null || fail "shellcheck is missing (apt-get install shellcheck)"
  shellcheck -x "$here/slurm_real_test.sh" "$tools/slurm_cluster.sh" || fail "shellcheck found problems"
}

declare -F "case_$case_name" >/dev/null || { echo "no such case: $case_name" >&2; exit 1; }
"case_$case_name"
echo "PASS: $case_name"
