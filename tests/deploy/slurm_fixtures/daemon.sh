# daemon.sh: a real corenoised for the Slurm scripts' tests (slurm_test.sh
# through lib.sh, slurm_real_test.sh). Sourced, never run. Needs
# $real_corenoised, $real_corenoise, $CORENOISE_SOCKET, $tmp and a fail
# function; sets daemon_pid.
# shellcheck shell=bash

# start_corenoised OPTIONS...: a real corenoised on $CORENOISE_SOCKET, waited
# for until it answers. An empty --sys-root keeps bare metal's thermal
# throttle counters out of the verdicts the tests force or inject.
start_corenoised() {
  "$real_corenoised" --config /dev/null --listen 127.0.0.1:0 --socket "$CORENOISE_SOCKET" \
    --state-dir "$tmp" --sys-root "$tmp/sys" "$@" 2>"$tmp/corenoised.log" &
  daemon_pid=$!
  local i rc
  for ((i = 0; i < 100; i++)); do
    rc=0
    "$real_corenoise" status >/dev/null 2>&1 || rc=$?
    [[ $rc -ne 1 ]] && return 0
    kill -0 "$daemon_pid" 2>/dev/null || fail "corenoised exited at start-up"
    sleep 0.1
  done
  fail "corenoised did not answer within 10 s"
}

stop_daemon() {
  if [[ -n ${daemon_pid:-} ]]; then
    kill "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
    daemon_pid=''
  fi
}
