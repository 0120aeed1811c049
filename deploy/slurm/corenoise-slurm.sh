# corenoise-slurm.sh: settings and logging shared by the Slurm scripts
# (corenoise-healthcheck, corenoise-prolog, corenoise-epilog). Sourced, never
# run; it lives next to them and they find it through their own path.
#
# Settings come from the environment first, then from
# /etc/default/corenoise-slurm (or $CORENOISE_SLURM_CONFIG), then the
# defaults below. The environment wins so that a test or an operator trying
# something by hand need not edit the file. Every setting is described in
# corenoise-slurm.default, the file's template.
# shellcheck shell=bash

# slurmd runs its scripts without a search path (Slurm's Prolog and Epilog
# Guide); the usual directories go after whatever PATH there is, so that a
# PATH set on purpose (tests, a site's wrapper) still comes first.
export PATH="${PATH:+$PATH:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

corenoise_slurm_settings=(
  CORENOISE_BIN CORENOISE_SOCKET CORENOISE_TIMEOUT
  CORENOISE_HEALTHCHECK_SOURCE CORENOISE_PROBE_OPTIONS CORENOISE_HEALTHCHECK_TIMEOUT
  CORENOISE_HEALTHCHECK_REPORT_ONLY CORENOISE_DRAIN_REASON_MAX
  CORENOISE_HEALTHCHECK_RESUME_AFTER CORENOISE_HEALTHCHECK_STATE
  CORENOISE_SLURM_JOBS_DIR CORENOISE_SLURM_PAUSE_SECONDS CORENOISE_SLURM_SYS_ROOT
)

# Remember what the environment set, read the file, put the environment back.
declare -A corenoise_slurm_from_env=()
for name in "${corenoise_slurm_settings[@]}"; do
  if [[ -v $name ]]; then corenoise_slurm_from_env[$name]=${!name}; fi
done
corenoise_slurm_config=${CORENOISE_SLURM_CONFIG:-/etc/default/corenoise-slurm}
if [[ -r $corenoise_slurm_config ]]; then
  # shellcheck source=/dev/null
  . "$corenoise_slurm_config"
elif [[ -n ${CORENOISE_SLURM_CONFIG:-} ]]; then
  # Asked for by name, so its absence is worth a word; the default file is optional.
  echo "${0##*/}: warning: settings file '$corenoise_slurm_config' cannot be read; using defaults" >&2
fi
for name in "${!corenoise_slurm_from_env[@]}"; do
  printf -v "$name" '%s' "${corenoise_slurm_from_env[$name]}"
done
unset name

: "${CORENOISE_BIN:=corenoise}"
: "${CORENOISE_TIMEOUT:=5}"
: "${CORENOISE_HEALTHCHECK_SOURCE:=auto}"
# Quick enough for slurmd, which kills a health check after 60 s: about 0.15 s
# a CPU on the development VM, so ~20 s for 128 CPUs.
: "${CORENOISE_PROBE_OPTIONS:=--samples 3 --reps 8 --detour-window 0.01}"
: "${CORENOISE_HEALTHCHECK_TIMEOUT:=45}"
: "${CORENOISE_HEALTHCHECK_REPORT_ONLY:=no}"
: "${CORENOISE_DRAIN_REASON_MAX:=200}"
# NHC's convention: a node the health check drained is resumed after this
# many healthy checks in a row; 0 never resumes.
: "${CORENOISE_HEALTHCHECK_RESUME_AFTER:=2}"
# The healthy checks in a row, kept between checks (a reboot starts again).
: "${CORENOISE_HEALTHCHECK_STATE:=/run/corenoise-slurm/healthcheck}"
# Not under /run/corenoise: systemd removes corenoised's RuntimeDirectory
# whenever the daemon stops, and the markers of running jobs must outlive a
# restart of the daemon.
: "${CORENOISE_SLURM_JOBS_DIR:=/run/corenoise-slurm/jobs}"
: "${CORENOISE_SLURM_PAUSE_SECONDS:=}"
: "${CORENOISE_SLURM_SYS_ROOT:=/sys}"
# The corenoise command reads the socket from the environment itself.
if [[ -n ${CORENOISE_SOCKET:-} ]]; then export CORENOISE_SOCKET; fi

# log LEVEL MESSAGE: to syslog (facility daemon, tagged with the script's
# name) and to stderr. slurmd keeps nothing of what a prolog or epilog prints
# and a health check's output only when it fails, so syslog is where an
# operator looks; stderr is for whoever runs the script by hand.
log() {
  local level=$1
  shift
  echo "${0##*/}: $level: $*" >&2
  logger -t "${0##*/}" -p "daemon.$level" -- "$*" 2>/dev/null || true
}

# is_yes VALUE: true for yes/true/1/on, in any case.
is_yes() {
  case ${1,,} in
    yes | true | 1 | on) return 0 ;;
    *) return 1 ;;
  esac
}

# valid_job_id ID: a Slurm job id is a decimal number; anything else must not
# become a file name under the jobs directory.
valid_job_id() {
  [[ $1 =~ ^[0-9]+$ ]]
}

# lock_jobs_dir: create the jobs directory and hold its lock (on the file
# descriptor in $jobs_lock_fd) until the script exits. Prologs and epilogs of
# different jobs run at once; the lock makes "add/remove my marker, then
# pause/resume" one step, so that the last epilog never resumes after a new
# job's prolog has paused.
lock_jobs_dir() {
  if ! mkdir -p -- "$CORENOISE_SLURM_JOBS_DIR"; then
    log err "cannot create $CORENOISE_SLURM_JOBS_DIR"
    return 1
  fi
  if ! exec {jobs_lock_fd}>>"$CORENOISE_SLURM_JOBS_DIR/.lock"; then
    log err "cannot open the lock $CORENOISE_SLURM_JOBS_DIR/.lock"
    return 1
  fi
  # Each holder talks to corenoised for at most $CORENOISE_TIMEOUT seconds,
  # so a minute is many holders; past it something is stuck and the job must
  # not wait for it.
  if ! flock -w 60 "$jobs_lock_fd"; then
    log err "waited 60 s for the lock $CORENOISE_SLURM_JOBS_DIR/.lock"
    return 1
  fi
}

# job_markers: the job ids with a marker in the jobs directory, one a line.
job_markers() {
  local marker
  for marker in "$CORENOISE_SLURM_JOBS_DIR"/*; do
    [[ -f $marker ]] && valid_job_id "${marker##*/}" && echo "${marker##*/}"
  done
  return 0
}
