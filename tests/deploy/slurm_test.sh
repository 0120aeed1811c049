#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# slurm_test.sh: tests of deploy/slurm/ (health check, prolog, epilog), one
# case a run, registered with ctest by tests/deploy/slurm.cmake.
#
# Usage: slurm_test.sh CASE CORENOISE CORENOISED
#   CASE        one of the functions named case_* below, without the prefix
#   CORENOISE   the real corenoise binary; CORENOISED the real daemon
#
# scontrol and logger are fakes that record their arguments
# (slurm_fixtures/bin); corenoise is the real one, behind a wrapper that
# records its calls, except where a reply it cannot be made to give is needed
# (slurm_fixtures/fake-corenoise). Verdicts are forced with thresholds:
# --throttled-clock-ratio 1 with --suspect-alpha 0.5 (the point rule) makes
# at least the slowest core throttled (its
# clock is at most the median's), the largest thresholds make every core ok.
# Needs jq; nothing is written outside a temporary directory.
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: $0 CASE CORENOISE CORENOISED" >&2; exit 1; }
case_name=$1
real_corenoise=$(readlink -f "$2")
real_corenoised=$(readlink -f "$3")
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
slurm=$(readlink -f "$here/../../deploy/slurm")
fixtures=$here/slurm_fixtures
tmp=$(mktemp -d)
daemon_pid=''
trap 'stop_daemon; rm -rf -- "$tmp"' EXIT
# shellcheck source=slurm_fixtures/lib.sh
. "$fixtures/lib.sh"
# shellcheck source=slurm_fixtures/daemon.sh
. "$fixtures/daemon.sh"
setup_environment

always_ok=(--throttled-clock-ratio 100 --noisy-excess-noise 1 --slow-ratio 100 --contended-stream-ratio 100)

# --- health check -------------------------------------------------------------

# No daemon: a real quick probe finds throttled cores; the node is drained
# with a reason naming exactly the probe's unhealthy CPUs.
case_HealthCheckDrainsNamingCores() {
  export CORENOISE_PROBE_OPTIONS="${quick[*]} --throttled-clock-ratio 1 --suspect-alpha 0.5 --confirm no"
  run corenoise-healthcheck
  expect_rc 0 "the health check"
  grep -q '^probe ' "$RECORDED_CALLS" || fail "no probe ran"
  local -a expected
  mapfile -t expected < <(unhealthy_of "$RECORDED_PROBE")
  [[ "${expected[*]}" == *throttled* ]] || fail "the probe found no throttled core: ${expected[*]}"
  [[ $(drain_reasons | wc -l) -eq 1 ]] || fail "not drained exactly once"
  grep -q '^-o show node testnode$' "$FAKE_SCONTROL_LOG" || fail "the node's current reason was not read"
  expect_reason_names "$(drain_reasons)" "${expected[@]}"
  expect_logged "drained node testnode (from probe): corenoise: cpu"
}

# A real daemon whose last round found throttled cores: the health check
# drains from `corenoise status` and runs no probe of its own.
# (Each round judged alone: this case is about reading the status reply.)
case_HealthCheckDrainsFromDaemonStatus() {
  start_daemon --throttled-clock-ratio 1 --suspect-alpha 0.5 --busy-policy probe --persist-bad 1 --persist-rounds 1
  local rc_run=0
  "$real_corenoise" run >/dev/null || rc_run=$?
  [[ $rc_run -eq 2 ]] || fail "corenoise run: exit status $rc_run, expected 2 (throttled cores)"
  "$real_corenoise" status --json >"$tmp/status.json" || true
  local -a expected
  mapfile -t expected < <(unhealthy_of "$tmp/status.json")
  run corenoise-healthcheck
  expect_rc 0 "the health check"
  if grep -q '^probe' "$RECORDED_CALLS"; then fail "probed although corenoised answered"; fi
  expect_reason_names "$(drain_reasons)" "${expected[@]}"
  expect_logged "drained node testnode (from corenoised)"
}

# Only persistent verdicts drain. A real daemon (persist-bad 2 of 3, the
# defaults) after one round whose verdicts are throttled cores (or noisy
# ones, on a loaded machine): they are transient, `corenoise run` exits 0 and nothing is drained. Then a reply with
# one persistently noisy core and two transient ones, one of them throttled
# in the latest round: the reason names the persistent core alone.
case_HealthCheckTransientDoesNotDrain() {
  start_daemon --throttled-clock-ratio 1 --suspect-alpha 0.5 --busy-policy probe
  local rc_run=0
  "$real_corenoise" run >/dev/null || rc_run=$?
  [[ $rc_run -eq 0 ]] || fail "corenoise run: exit status $rc_run, expected 0 (one bad round is transient)"
  "$real_corenoise" status --json >"$tmp/status.json" || fail "corenoise status: not 0 with transient cores"
  jq -e '.states.transient >= 1 and (.unhealthy | length) == 0 and .healthy == true
         and all(.transient[]; (.round_state | IN("noisy", "throttled", "contended", "slow")) and .unhealthy_rounds == 1 and .rounds == 1)' \
    "$tmp/status.json" >/dev/null || fail "not transient after one throttled round: $(cat "$tmp/status.json")"
  run corenoise-healthcheck
  expect_rc 0 "the health check (transient cores)"
  expect_no_drain "transient cores"
  if grep -q '^probe' "$RECORDED_CALLS"; then fail "probed although corenoised answered"; fi
  expect_logged "no CPU persistently unhealthy (from corenoised); transient, not drained: cpu"

  stop_daemon
  export CORENOISE_BIN=$fixtures/fake-corenoise FAKE_STATUS_JSON=$fixtures/status-transient.json
  run corenoise-healthcheck
  expect_rc 0 "the health check (one persistent, two transient)"
  [[ $(drain_reasons | wc -l) -eq 1 ]] || fail "not drained exactly once"
  expect_reason_names "$(drain_reasons)" "cpu 3 noisy"
  [[ $(drain_reasons) != *"cpu 5"* && $(drain_reasons) != *"cpu 9"* ]] || fail "a transient core in the reason: $(drain_reasons)"
}

# Healthy, from a real daemon and from a real probe: no scontrol call at all.
case_HealthCheckHealthyDoesNothing() {
  start_daemon "${always_ok[@]}" --busy-policy probe
  "$real_corenoise" run >/dev/null || fail "corenoise run with the largest thresholds found unhealthy cores"
  run corenoise-healthcheck
  expect_rc 0 "the health check (daemon)"
  [[ ! -s $FAKE_SCONTROL_LOG ]] || fail "scontrol called for a healthy node"
  if grep -q '^probe' "$RECORDED_CALLS"; then fail "probed although corenoised answered"; fi
  expect_logged "every CPU ok (from corenoised)"

  stop_daemon
  export CORENOISE_PROBE_OPTIONS="${quick[*]} ${always_ok[*]}"
  run corenoise-healthcheck
  expect_rc 0 "the health check (probe)"
  grep -q '^probe ' "$RECORDED_CALLS" || fail "no probe ran without a daemon"
  [[ ! -s $FAKE_SCONTROL_LOG ]] || fail "scontrol called for a healthy node: $(cat "$FAKE_SCONTROL_LOG")"
  expect_logged "every CPU ok (from probe)"
}

# healthy_status STAMP [ROUNDS [TRANSIENT]]: a status reply with no CPU
# persistently unhealthy whose latest round ended at STAMP, after ROUNDS
# rounds (3: a full persistence window) with TRANSIENT transient CPUs (0),
# as $FAKE_STATUS_JSON.
healthy_status() {
  jq --argjson at "$1" --argjson rounds "${2:-3}" --argjson transient "${3:-0}" \
    '.unhealthy = [] | .healthy = true | .states = {ok: 16} | .persistence = {bad: 2, rounds: 3}
     | .rounds.isolated.last_unix_seconds = $at | .rounds.isolated.count = $rounds
     | .transient = [range($transient) | {cpu: 5, round_state: "noisy", unhealthy_rounds: 1, rounds: 3}]' \
    "$fixtures/status-unhealthy.json" >"$tmp/healthy-$1.json"
  export FAKE_STATUS_JSON=$tmp/healthy-$1.json FAKE_STATUS_RC=0
}

resumes() {
  grep -c '^update nodename=testnode state=resume$' "$FAKE_SCONTROL_LOG" || true
}

# drained_by_check: an unhealthy reply drains the node; the fake slurmctld
# then shows it drained with that reason.
drained_by_check() {
  echo 'NodeName=testnode State=IDLE ThreadsPerCore=1' >"$FAKE_SCONTROL_SHOW"
  export FAKE_STATUS_JSON=$fixtures/status-unhealthy.json FAKE_STATUS_RC=2
  : >"$FAKE_SCONTROL_LOG"
  run corenoise-healthcheck
  expect_rc 0 "the unhealthy check"
  ours=$(drain_reasons | tail -n 1)
  [[ -n $ours ]] || fail "not drained by an unhealthy reply"
  echo "NodeName=testnode State=IDLE+DRAIN Reason=$ours [root@2026-12-02T17:00:00]" >"$FAKE_SCONTROL_SHOW"
  : >"$FAKE_SCONTROL_LOG"
}

# NHC's convention: a node the check drained is resumed once every CPU was
# healthy in CORENOISE_HEALTHCHECK_RESUME_AFTER (2) checks in a row, each
# from a newer round of a daemon with a full persistence window and no
# transient CPU; only while the node still has the reason the check set;
# never when resuming is off; a check with no verdict (unknown) or an
# unhealthy one starts the count again; slurmctld is not asked about a node
# with no drain of the check's own.
case_HealthCheckResumesItsOwnDrain() {
  export CORENOISE_BIN=$fixtures/fake-corenoise FAKE_SCONTROL_SHOW=$tmp/show
  local ours stamp
  drained_by_check
  healthy_status 100
  run corenoise-healthcheck
  expect_rc 0 "the first healthy check"
  [[ ! -s $FAKE_SCONTROL_LOG ]] || fail "the first healthy check called scontrol: $(cat "$FAKE_SCONTROL_LOG")"
  # No new evidence: the same round again, a daemon just (re)started, a
  # transient CPU, a daemon with no round yet.
  run corenoise-healthcheck
  healthy_status 110 1
  run corenoise-healthcheck
  healthy_status 120 3 1
  run corenoise-healthcheck
  jq '.rounds = {}' "$fixtures/status-unhealthy.json" | jq '.unhealthy = [] | .transient = []' >"$tmp/no-round.json"
  FAKE_STATUS_JSON=$tmp/no-round.json FAKE_STATUS_RC=0 run corenoise-healthcheck
  [[ ! -s $FAKE_SCONTROL_LOG ]] || fail "a check without new evidence counted: $(cat "$FAKE_SCONTROL_LOG")"
  healthy_status 200
  run corenoise-healthcheck
  expect_rc 0 "the second healthy check"
  [[ $(resumes) -eq 1 ]] || fail "not resumed after 2 healthy rounds: $(cat "$FAKE_SCONTROL_LOG")"
  expect_logged "resumed node testnode after 2 healthy checks in a row (from corenoised); lifted: $ours"
  # Its drain lifted, slurmctld is not asked again.
  : >"$FAKE_SCONTROL_LOG"
  healthy_status 300
  run corenoise-healthcheck
  [[ ! -s $FAKE_SCONTROL_LOG ]] || fail "scontrol asked with no drain of its own: $(cat "$FAKE_SCONTROL_LOG")"

  # An unhealthy check drains and starts again; so does an unknown one.
  drained_by_check
  healthy_status 400
  run corenoise-healthcheck
  unset FAKE_STATUS_JSON
  echo 0-3 >"$tmp/sys/devices/system/cpu/online"
  mkdir -p "$CORENOISE_SLURM_JOBS_DIR" && touch "$CORENOISE_SLURM_JOBS_DIR/13"
  run corenoise-healthcheck
  expect_rc 0 "no daemon and no CPU to probe"
  expect_logged "node testnode: unknown (no verdict: corenoised did not answer and no CPU may be probed); left as it is"
  rm "$CORENOISE_SLURM_JOBS_DIR/13"
  healthy_status 500
  run corenoise-healthcheck
  [[ $(resumes) -eq 0 ]] || fail "resumed after 1 healthy check since an unknown one"
  # slurmctld not answering when the run is complete: exit 1, and the next
  # healthy check asks again.
  healthy_status 600
  export FAKE_SCONTROL_RC=1
  run corenoise-healthcheck
  expect_rc 1 "slurmctld not answering"
  expect_logged "cannot read node testnode from slurmctld"
  unset FAKE_SCONTROL_RC
  : >"$FAKE_SCONTROL_LOG"
  healthy_status 700
  run corenoise-healthcheck
  expect_rc 0 "the retry"
  [[ $(resumes) -eq 1 ]] || fail "not resumed at the check after slurmctld failed: $(cat "$FAKE_SCONTROL_LOG")"

  # Its reason replaced by an admin's while drained: never resumed.
  drained_by_check
  echo 'NodeName=testnode State=IDLE+DRAIN Reason=admin: new DIMM [admin@2026-12-01T10:00:00]' >"$FAKE_SCONTROL_SHOW"
  for stamp in 800 900 1000; do
    healthy_status "$stamp"
    run corenoise-healthcheck
    expect_rc 0 "a healthy check of a node an admin took over"
  done
  [[ $(resumes) -eq 0 ]] || fail "an admin's drain was resumed"
  expect_logged "node testnode no longer has the drain this check set"

  # Report only: said, not done.
  drained_by_check
  export CORENOISE_HEALTHCHECK_REPORT_ONLY=yes
  for stamp in 1100 1200; do
    healthy_status "$stamp"
    run corenoise-healthcheck
  done
  [[ $(resumes) -eq 0 ]] || fail "resumed in report-only mode"
  expect_logged "would resume node testnode (report only) after 2 healthy checks in a row"
  unset CORENOISE_HEALTHCHECK_REPORT_ONLY

  # Resuming off.
  drained_by_check
  export CORENOISE_HEALTHCHECK_RESUME_AFTER=0
  for stamp in 1300 1400 1500; do
    healthy_status "$stamp"
    run corenoise-healthcheck
  done
  [[ ! -s $FAKE_SCONTROL_LOG ]] || fail "scontrol called with resuming off: $(cat "$FAKE_SCONTROL_LOG")"
  export CORENOISE_HEALTHCHECK_RESUME_AFTER=several
  run corenoise-healthcheck
  expect_rc 1 "a resume count that is no number"
  expect_logged "CORENOISE_HEALTHCHECK_RESUME_AFTER is 'several'"

  # A damaged or empty state file is a run of none, never a failure.
  unset CORENOISE_HEALTHCHECK_RESUME_AFTER
  printf 'healthy_checks=08' >"$CORENOISE_HEALTHCHECK_STATE"
  healthy_status 1600
  run corenoise-healthcheck
  expect_rc 0 "a damaged state file"
  : >"$CORENOISE_HEALTHCHECK_STATE"
  healthy_status 1700
  run corenoise-healthcheck
  expect_rc 0 "an empty state file"
}

# A broken tool is not a broken node: exit 1, a syslog error, no drain.
case_HealthCheckToolFailureDoesNotDrain() {
  # The real probe refusing its options.
  export CORENOISE_PROBE_OPTIONS="--samples 0"
  run corenoise-healthcheck
  expect_rc 1 "a probe with bad options"
  expect_no_drain "a probe with bad options"
  grep -q -- '-p daemon.err -- corenoise failed (corenoise probe: --samples' "$FAKE_LOGGER_LOG" ||
    fail "the probe's error was not logged as an error"
  # No corenoise at all.
  export CORENOISE_BIN=$tmp/no-such-corenoise CORENOISE_PROBE_OPTIONS="${quick[*]}"
  run corenoise-healthcheck
  expect_rc 1 "a missing corenoise"
  expect_no_drain "a missing corenoise"
  # Only the daemon is to be asked, and none answers.
  export CORENOISE_BIN=$fixtures/recording-corenoise CORENOISE_HEALTHCHECK_SOURCE=daemon
  : >"$RECORDED_CALLS"
  run corenoise-healthcheck
  expect_rc 1 "no daemon with source=daemon"
  expect_no_drain "no daemon with source=daemon"
  if grep -q '^probe' "$RECORDED_CALLS"; then fail "probed with source=daemon"; fi
  expect_logged "corenoised did not answer"
  # A probe that says "unhealthy" but prints no report.
  unset CORENOISE_HEALTHCHECK_SOURCE
  export CORENOISE_BIN=$fixtures/fake-corenoise FAKE_PROBE_ARGS=$tmp/probe-args
  export FAKE_PROBE_JSON=$tmp/not-json
  echo 'not JSON' >"$FAKE_PROBE_JSON"
  run corenoise-healthcheck
  expect_rc 1 "a probe without a report"
  expect_no_drain "a probe without a report"
  expect_logged "printed no JSON report"
  # A probe that does not end in time.
  export FAKE_PROBE_SLEEP=30 CORENOISE_HEALTHCHECK_TIMEOUT=1
  run corenoise-healthcheck
  expect_rc 1 "a probe that hangs"
  expect_no_drain "a probe that hangs"
  expect_logged "corenoise probe took more than 1 s"
  unset FAKE_PROBE_SLEEP CORENOISE_HEALTHCHECK_TIMEOUT
  # A setting that makes no sense.
  export FAKE_STATUS_JSON=$fixtures/status-unhealthy.json CORENOISE_DRAIN_REASON_MAX=short
  run corenoise-healthcheck
  expect_rc 1 "a reason length that is no number"
  expect_no_drain "a reason length that is no number"
  expect_logged "CORENOISE_DRAIN_REASON_MAX is 'short'"
  # A controller that cannot be reached: logged with the reason, exit 1.
  unset CORENOISE_DRAIN_REASON_MAX
  export FAKE_SCONTROL_RC=1
  run corenoise-healthcheck
  expect_rc 1 "scontrol failing"
  expect_logged "cannot read node testnode from slurmctld"
}

# An admin's drain reason is never overwritten; our own is refreshed.
case_HealthCheckKeepsAnotherDrainReason() {
  export CORENOISE_BIN=$fixtures/fake-corenoise FAKE_STATUS_JSON=$fixtures/status-unhealthy.json
  export FAKE_SCONTROL_SHOW=$tmp/show
  echo 'NodeName=testnode State=IDLE+DRAIN Reason=bad DIMM [admin@2025-11-01T10:00:00]' >"$FAKE_SCONTROL_SHOW"
  run corenoise-healthcheck
  expect_rc 0 "a node drained by an admin"
  expect_no_drain "a node drained by an admin"
  expect_logged "already has a reason (bad DIMM"
  echo 'NodeName=testnode State=IDLE+DRAIN Reason=corenoise: cpu 1 noisy [root@2025-11-01T10:00:00]' >"$FAKE_SCONTROL_SHOW"
  run corenoise-healthcheck
  expect_rc 0 "a node drained by corenoise before"
  [[ $(drain_reasons) == "corenoise: cpu 3 noisy"* ]] || fail "corenoise's own reason was not refreshed"
}

# Report only: logged, not drained; from the settings file, which the
# environment overrides.
case_HealthCheckReportOnly() {
  export CORENOISE_BIN=$fixtures/fake-corenoise FAKE_STATUS_JSON=$fixtures/status-unhealthy.json
  echo 'CORENOISE_HEALTHCHECK_REPORT_ONLY=yes' >"$CORENOISE_SLURM_CONFIG"
  run corenoise-healthcheck
  expect_rc 0 "report only"
  [[ ! -s $FAKE_SCONTROL_LOG ]] || fail "scontrol called in report-only mode"
  expect_logged "would drain node testnode (report only, from corenoised): corenoise: cpu 3 noisy"
  export CORENOISE_HEALTHCHECK_REPORT_ONLY=no
  run corenoise-healthcheck
  expect_rc 0 "report only overridden by the environment"
  [[ -n $(drain_reasons) ]] || fail "the environment's REPORT_ONLY=no did not win over the file"
}

# Without a daemon, the probe leaves the CPUs of running jobs alone (their
# cgroup cpusets), and does not run when it cannot tell which they are.
case_HealthCheckSkipsJobCpus() {
  export CORENOISE_BIN=$fixtures/fake-corenoise FAKE_PROBE_ARGS=$tmp/probe-args
  export FAKE_PROBE_JSON=$fixtures/probe-unhealthy.json
  local cg=$tmp/sys/fs/cgroup
  echo 0-3 >"$tmp/sys/devices/system/cpu/online"
  mkdir -p "$cg/system.slice/slurmstepd.scope/job_11" "$cg/cpuset/slurm/uid_1000/job_12"
  echo 1-2 >"$cg/system.slice/slurmstepd.scope/job_11/cpuset.cpus.effective"
  run corenoise-healthcheck
  expect_rc 0 "one job on CPUs 1-2 (cgroup v1 job without cpuset)"
  [[ ! -s $FAKE_PROBE_ARGS ]] || fail "probed while job 12's CPUs are unknown: $(cat "$FAKE_PROBE_ARGS")"
  expect_logged "not probing: 2 job(s) run here and job 12 has no readable cpuset"

  echo 3 >"$cg/cpuset/slurm/uid_1000/job_12/cpuset.cpus"
  run corenoise-healthcheck
  expect_rc 0 "jobs on CPUs 1-3"
  grep -q -- '--cpus 0$' "$FAKE_PROBE_ARGS" || fail "not probed on CPU 0 only: $(cat "$FAKE_PROBE_ARGS")"
  expect_reason_names "$(drain_reasons)" "cpu 2 noisy" "cpu 3 throttled"
  [[ $(drain_reasons) == "corenoise: cpu 2 noisy (16% lost, preempted), cpu 3 throttled (clock -16%)" ]] ||
    fail "reason from the probe's report: '$(drain_reasons)'"

  rm -r "$cg/cpuset"
  run corenoise-healthcheck
  grep -q -- '--cpus 0,3$' "$FAKE_PROBE_ARGS" || fail "not probed on CPUs 0,3: $(tail -1 "$FAKE_PROBE_ARGS")"

  echo 0-3 >"$cg/system.slice/slurmstepd.scope/job_11/cpuset.cpus.effective"
  : >"$FAKE_PROBE_ARGS"
  run corenoise-healthcheck
  expect_rc 0 "a job on every CPU"
  [[ ! -s $FAKE_PROBE_ARGS ]] || fail "probed although a job holds every CPU"
  expect_logged "hold every CPU (0-3)"

  rm -r "$cg/system.slice"
  mkdir -p "$CORENOISE_SLURM_JOBS_DIR" && touch "$CORENOISE_SLURM_JOBS_DIR/13"
  run corenoise-healthcheck
  expect_rc 0 "a job known only by its marker"
  [[ ! -s $FAKE_PROBE_ARGS ]] || fail "probed although job 13's CPUs are unknown"
  expect_logged "job 13 has a marker"

  rm "$CORENOISE_SLURM_JOBS_DIR/13"
  run corenoise-healthcheck
  grep -q -- "^probe --json - ${quick[*]}$" "$FAKE_PROBE_ARGS" || fail "not probed on every CPU without jobs"
}

# The reason: each state's figure from its cause, CPUs in order, at most
# CORENOISE_DRAIN_REASON_MAX characters with the rest counted.
case_DrainReasonSummarizesCauses() {
  export CORENOISE_BIN=$fixtures/fake-corenoise FAKE_STATUS_JSON=$fixtures/status-unhealthy.json
  run corenoise-healthcheck
  local want="corenoise: cpu 3 noisy (12% lost, preempted), cpu 7 throttled (clock -12%),"
  want+=" cpu 9 contended (memory -39%), cpu 11 slow (matmul +7%), cpu 12 noisy (6% lost, below kernel)"
  [[ $(drain_reasons) == "$want" ]] || fail "reason '$(drain_reasons)', expected '$want'"

  : >"$FAKE_SCONTROL_LOG"
  export CORENOISE_DRAIN_REASON_MAX=84
  run corenoise-healthcheck
  want="corenoise: cpu 3 noisy (12% lost, preempted), cpu 7 throttled (clock -12%) (+3 more)"
  [[ $(drain_reasons) == "$want" ]] || fail "reason '$(drain_reasons)', expected '$want'"

  # 40 noisy CPUs: as many as fit in 200 characters, the others counted.
  : >"$FAKE_SCONTROL_LOG"
  unset CORENOISE_DRAIN_REASON_MAX
  jq '.unhealthy = [range(40) as $c | .unhealthy[0] | .cpu = $c]' \
    "$fixtures/status-unhealthy.json" >"$tmp/forty.json"
  export FAKE_STATUS_JSON=$tmp/forty.json
  run corenoise-healthcheck
  local -a forty
  mapfile -t forty < <(unhealthy_of "$tmp/forty.json")
  expect_reason_names "$(drain_reasons)" "${forty[@]}"
  [[ $(drain_reasons) == *"(+"*" more)" ]] || fail "40 CPUs fit in 200 characters?"
}

# --- prolog and epilog ------------------------------------------------------------

case_PrologEpilogPauseAndResume() {
  start_daemon
  [[ $(paused) == false ]] || fail "corenoised paused before any job"
  export SLURM_JOB_ID=101 SLURM_JOB_UID=1000
  run corenoise-prolog
  expect_rc 0 "the prolog"
  [[ $(paused) == true ]] || fail "corenoised not paused by the prolog"
  grep -q '^uid=1000 ' "$CORENOISE_SLURM_JOBS_DIR/101" || fail "no marker for job 101"
  expect_logged "job 101 starts: corenoise: probing paused until resumed"
  run corenoise-epilog
  expect_rc 0 "the epilog"
  [[ $(paused) == false ]] || fail "corenoised not resumed by the epilog"
  [[ -z $(markers) ]] || fail "markers left: $(markers)"
}

case_TwoJobsResumeAfterTheLast() {
  start_daemon
  SLURM_JOB_ID=201 run corenoise-prolog
  SLURM_JOB_ID=202 run corenoise-prolog
  [[ $(markers) == "201 202" ]] || fail "markers '$(markers)', expected '201 202'"
  SLURM_JOB_ID=201 run corenoise-epilog
  expect_rc 0 "the first epilog"
  [[ $(paused) == true ]] || fail "resumed while job 202 runs"
  expect_logged "job 201 ends; corenoised stays paused for job(s) 202"
  SLURM_JOB_ID=202 run corenoise-epilog
  [[ $(paused) == false ]] || fail "not resumed after the last job"

  # Four jobs starting at once, then ending at once.
  # (Waiting for the scripts by pid: a bare `wait` would wait for corenoised.)
  local job
  local -a pids=()
  for job in {301..304}; do SLURM_JOB_ID=$job "$slurm/corenoise-prolog" 2>/dev/null & pids+=($!); done
  wait "${pids[@]}"
  [[ $(markers) == "$(echo {301..304})" ]] || fail "markers '$(markers)' after 4 prologs at once"
  [[ $(paused) == true ]] || fail "not paused after 4 prologs at once"
  pids=()
  for job in {301..304}; do SLURM_JOB_ID=$job "$slurm/corenoise-epilog" 2>/dev/null & pids+=($!); done
  wait "${pids[@]}"
  [[ -z $(markers) ]] || fail "markers '$(markers)' left after 4 epilogs at once"
  [[ $(paused) == false ]] || fail "not resumed after 4 epilogs at once"

  # A job ending while another starts: the epilog has found no other marker
  # and its resume is on the way (slowed down) when the prolog comes. The
  # prolog must wait for it, so that the new job finds corenoised paused.
  export CORENOISE_BIN=$fixtures/slow-resume-corenoise SLOW_RESUME_SECONDS=0.5
  SLURM_JOB_ID=400 run corenoise-prolog
  SLURM_JOB_ID=400 "$slurm/corenoise-epilog" 2>/dev/null &
  pids=($!)
  sleep 0.2
  SLURM_JOB_ID=401 run corenoise-prolog
  wait "${pids[@]}"
  [[ $(markers) == 401 ]] || fail "markers '$(markers)', expected 401"
  [[ $(paused) == true ]] || fail "job 401 runs with corenoised resumed: the epilog of job 400 resumed it after 401's prolog"
  SLURM_JOB_ID=401 run corenoise-epilog
  [[ $(paused) == false ]] || fail "not resumed after the last job"
}

# No daemon, or no job id: exit 0 (the job runs) with a log line.
case_PrologEpilogWithoutDaemon() {
  export SLURM_JOB_ID=501
  run corenoise-prolog
  expect_rc 0 "the prolog without a daemon"
  expect_logged "job 501 starts; could not pause corenoised: corenoise pause: cannot reach corenoised"
  [[ $(markers) == 501 ]] || fail "no marker for job 501 without a daemon"
  run corenoise-epilog
  expect_rc 0 "the epilog without a daemon"
  expect_logged "could not resume corenoised"
  [[ -z $(markers) ]] || fail "marker left: $(markers)"

  export CORENOISE_BIN=$tmp/no-such-corenoise
  run corenoise-prolog
  expect_rc 0 "the prolog without corenoise"
  run corenoise-epilog
  expect_rc 0 "the epilog without corenoise"

  export SLURM_JOB_ID=../../escape
  run corenoise-prolog
  expect_rc 0 "the prolog with a bad job id"
  expect_logged "SLURM_JOB_ID is '../../escape', not a job id"
  [[ ! -e $tmp/escape ]] || fail "a marker was written outside the jobs directory"
  unset SLURM_JOB_ID
  run corenoise-epilog
  expect_rc 0 "the epilog without a job id"

  export SLURM_JOB_ID=502 CORENOISE_SLURM_JOBS_DIR=/proc/corenoise-cannot-be-here
  run corenoise-prolog
  expect_rc 0 "the prolog with a jobs directory it cannot make"
  expect_logged "cannot create /proc/corenoise-cannot-be-here"
}

# run_by_slurmd SCRIPT: as run, with a process named slurmd above it (bash
# under that name), as slurmd runs its HealthCheckProgram.
run_by_slurmd() {
  rc=0
  ln -sf "$(command -v bash)" "$tmp/slurmd"
  # shellcheck disable=SC2016 # the inner shell's own $0; two commands, so it forks
  "$tmp/slurmd" -c '"$0"; exit $?' "$slurm/$1" 2>"$tmp/script.err" || rc=$?
}

# Jobs whose epilog never ran (they ended while slurmd was down): for the
# markers older than the slurmd that runs the check, the health check asks
# squeue which jobs still run here, removes the others' markers and resumes
# corenoised once none is left; keeps it paused for a job that still runs;
# only logs in report-only mode; and changes nothing, asking nothing, when
# slurmd did not run it, the markers are newer than slurmd, no marker
# explains the pause, or squeue cannot answer.
case_HealthCheckResumesAPauseWhoseEpilogNeverRan() {
  start_daemon
  export SLURM_JOB_ID=701
  run corenoise-prolog
  export SLURM_JOB_ID=702
  run corenoise-prolog
  unset SLURM_JOB_ID
  [[ $(paused) == true ]] || fail "corenoised not paused by the prologs"
  run corenoise-healthcheck
  expect_rc 0 "the check run by hand"
  [[ ! -s $FAKE_SQUEUE_LOG ]] || fail "squeue asked by a check that slurmd did not run"
  touch -d '+1 minute' "$CORENOISE_SLURM_JOBS_DIR"/70[12]
  run_by_slurmd corenoise-healthcheck
  expect_rc 0 "the check beside markers newer than slurmd"
  [[ ! -s $FAKE_SQUEUE_LOG ]] || fail "squeue asked about markers newer than slurmd (their epilogs will come)"
  touch -d '1 minute ago' "$CORENOISE_SLURM_JOBS_DIR"/70[12]
  FAKE_SQUEUE_RC=1 run_by_slurmd corenoise-healthcheck
  expect_rc 0 "the check with squeue failing"
  expect_logged "corenoised is paused for job(s) 701 702, older than slurmd; squeue could not say whether they still run here"
  [[ $(paused) == true && $(markers) == "701 702" ]] || fail "changed with no answer from squeue: $(markers)"
  FAKE_SQUEUE_JOBS="702 900" CORENOISE_HEALTHCHECK_REPORT_ONLY=yes run_by_slurmd corenoise-healthcheck
  expect_logged "job(s) 701 ended here without an epilog; would resume corenoised (report only)"
  [[ $(paused) == true && $(markers) == "701 702" ]] || fail "changed in report-only mode: $(markers)"
  FAKE_SQUEUE_JOBS="702 900" run_by_slurmd corenoise-healthcheck
  grep -q -- '-w testnode' "$FAKE_SQUEUE_LOG" || fail "squeue not asked about this node: $(cat "$FAKE_SQUEUE_LOG")"
  expect_logged "job(s) 701 ended here without an epilog; corenoised stays paused for job(s) 702"
  [[ $(paused) == true && $(markers) == 702 ]] || fail "701's marker kept or 702's pause lifted: $(markers)"
  FAKE_SQUEUE_JOBS="900" run_by_slurmd corenoise-healthcheck
  expect_rc 0 "the check that resumes"
  expect_logged "job(s) 702 ended here without an epilog (slurmd down when they ended?): corenoise: probing resumed"
  [[ $(paused) == false && -z $(markers) ]] || fail "not resumed, or markers left: $(markers)"
  # A pause no marker explains is someone else's: squeue is not even asked.
  "$real_corenoise" pause >/dev/null
  : >"$FAKE_SQUEUE_LOG"
  run_by_slurmd corenoise-healthcheck
  [[ $(paused) == true ]] || fail "an admin's pause was lifted"
  [[ ! -s $FAKE_SQUEUE_LOG ]] || fail "squeue asked about a pause with no marker"
  "$real_corenoise" resume >/dev/null
}

# With CORENOISE_SLURM_PAUSE_SECONDS, the pause also ends by itself.
case_PrologPauseExpiry() {
  start_daemon
  export SLURM_JOB_ID=601 CORENOISE_SLURM_PAUSE_SECONDS=3600
  local before deadline
  before=$(date +%s)
  run corenoise-prolog
  expect_rc 0 "the prolog"
  deadline=$("$real_corenoise" status --json | jq -r '.paused_until_unix_seconds // 0 | floor') || true
  ((deadline >= before + 3599 && deadline <= $(date +%s) + 3601)) ||
    fail "paused until $deadline, expected about $before + 3600"
}

# --- the scripts themselves -------------------------------------------------------

case_ScriptsPassShellcheck() {
  command -v shellcheck >/dev/null || fail "shellcheck is missing (apt-get install shellcheck)"
  local -a files=("$slurm"/corenoise-{healthcheck,prolog,epilog,slurm.sh,slurm-cpus.sh,slurm.default}
    "$here/slurm_test.sh" "$fixtures/lib.sh" "$fixtures"/*-corenoise
    "$fixtures"/bin/*)
  shellcheck -x "${files[@]}" || fail "shellcheck found problems"
}

declare -F "case_$case_name" >/dev/null || { echo "no such case: $case_name" >&2; exit 1; }
"case_$case_name"
# The prolog and epilog log this when a command of theirs fails unforeseen.
if grep -q 'unexpected failure' "$FAKE_LOGGER_LOG"; then fail "a script failed unforeseen"; fi
echo "PASS: $case_name"
