# lib.sh: the set-up and checks shared by tests/deploy/slurm_test.sh's cases.
# Sourced, never run. Expects $tmp (a fresh directory), $fixtures,
# $real_corenoise and $real_corenoised to be set.
# shellcheck shell=bash
# The variables named above are slurm_test.sh's.
# shellcheck disable=SC2154

# Fast probe settings: the verdicts the tests force come from thresholds,
# not from how long the probes run.
quick=(--samples 3 --reps 4 --detour-window 0.005 --stream-bytes 8388608)

# A clean environment for the scripts: every setting of theirs that the
# caller's environment might carry is dropped, the fakes of scontrol and
# logger come first on PATH, and every path is under $tmp, never /run or /etc.
setup_environment() {
  local name
  for name in $(compgen -v CORENOISE_) $(compgen -v SLURM); do unset "$name"; done
  export PATH="$fixtures/bin:$PATH"
  export FAKE_SCONTROL_LOG=$tmp/scontrol.log FAKE_LOGGER_LOG=$tmp/logger.log FAKE_SQUEUE_LOG=$tmp/squeue.log
  : >"$FAKE_SCONTROL_LOG"
  : >"$FAKE_SQUEUE_LOG"
  : >"$FAKE_LOGGER_LOG"
  : >"$tmp/corenoise-slurm"
  export CORENOISE_SLURM_CONFIG=$tmp/corenoise-slurm
  export CORENOISE_SLURM_JOBS_DIR=$tmp/jobs
  export CORENOISE_HEALTHCHECK_STATE=$tmp/healthcheck
  export CORENOISE_SOCKET=$tmp/ctl.sock
  export CORENOISE_SLURM_SYS_ROOT=$tmp/sys
  mkdir -p "$tmp/sys/devices/system/cpu"
  export SLURMD_NODENAME=testnode
  export CORENOISE_BIN=$fixtures/recording-corenoise
  export REAL_CORENOISE=$real_corenoise
  export RECORDED_CALLS=$tmp/calls RECORDED_PROBE=$tmp/probe.json
  : >"$RECORDED_CALLS"
  export CORENOISE_PROBE_OPTIONS="${quick[*]}"
}

fail() {
  echo "FAIL: $*" >&2
  local file
  for file in scontrol.log logger.log calls script.err corenoised.log; do
    [[ -s $tmp/$file ]] && sed "s/^/  $file: /" "$tmp/$file" >&2
  done
  exit 1
}

# run SCRIPT: runs deploy/slurm/SCRIPT with the environment as it is; its
# exit status goes to $rc, its stderr to $tmp/script.err.
run() {
  rc=0
  "$slurm/$1" 2>"$tmp/script.err" || rc=$?
}

expect_rc() {
  [[ $rc -eq $1 ]] || fail "$2: exit status $rc, expected $1"
}

# The drain reasons the fake scontrol was given, one a line.
drain_reasons() {
  sed -n 's/^update nodename=testnode state=drain reason=//p' "$FAKE_SCONTROL_LOG"
}

expect_no_drain() {
  if grep -q '^update' "$FAKE_SCONTROL_LOG"; then fail "$1: drained: $(grep '^update' "$FAKE_SCONTROL_LOG")"; fi
}

expect_logged() {
  grep -qF -- "$1" "$FAKE_LOGGER_LOG" || fail "nothing logged to syslog with '$1'"
}

# expect_reason_names REASON EXPECTED...: the "cpu N STATE" items of the
# reason are the expected ones, in order; those left out are counted in its
# "(+N more)".
expect_reason_names() {
  local reason=$1 more=0
  shift
  local -a named
  mapfile -t named < <(grep -oE 'cpu [0-9]+ [a-z]+' <<<"$reason")
  [[ $reason =~ \(\+([0-9]+)\ more\)$ ]] && more=${BASH_REMATCH[1]}
  ((${#named[@]} > 0)) || fail "the reason names no CPU: '$reason'"
  ((${#named[@]} + more == $#)) || fail "the reason names ${#named[@]} CPUs (+$more more), the report $#: '$reason'"
  [[ "${named[*]}" == "${*:1:${#named[@]}}" ]] || fail "the reason names '${named[*]}', expected '${*:1:${#named[@]}}'"
  ((${#reason} <= 200)) || fail "the reason is ${#reason} characters long: '$reason'"
  [[ $reason == "corenoise: "* ]] || fail "the reason does not start with 'corenoise: ': '$reason'"
}

# The unhealthy CPUs of a probe document or a status reply, "cpu N STATE" a line.
unhealthy_of() {
  jq -r '(.unhealthy // .cpus)[] | select(.state | IN("noisy", "throttled", "contended", "slow"))
         | "cpu \(.cpu) \(.state)"' "$1"
}

# start_daemon OPTIONS...: the test's corenoised (daemon.sh, which the test
# sources beside this file), quick; no round comes by itself for an hour.
start_daemon() { start_corenoised --interval 3600 "${quick[@]}" "$@"; }

# paused: corenoised's "paused" field, true or false.
paused() {
  local reply
  # Exit status 2 only says that cores are unhealthy; the reply is what counts.
  reply=$("$real_corenoise" status --json) || true
  jq -r .paused <<<"$reply"
}

markers() {
  find "$CORENOISE_SLURM_JOBS_DIR" -maxdepth 1 -type f -name '[0-9]*' -printf '%f\n' 2>/dev/null | sort -n | paste -sd' ' -
}
