#!/bin/bash
# Usage: packaged_node_test.sh CPACK CPACK_CONFIG VERSION BUILD_DIR
#
# The packaged node, end to end (issue 33, acceptance 1): the .deb built from
# this build folder (CPACK_CONFIG is its CPackConfig.cmake), installed with
# apt into a fresh Debian 12 root, a real systemd booted in that root, and
# corenoised.service started exactly as shipped (no drop-in, no edit). Then,
# as two ordinary users who are not in the group corenoise:
#   cnalice: a 2-rank `corenoise job` under mpiexec.mpich, bound to CPU 0,
#            with noise injected on CPU 0;
#   cnbob:   a 2-rank `corenoise job` under mpirun.openmpi, bound to CPU 1.
# Each rank's report must be taken (corenoise_job_reports_total), the loss
# exported for that job's CPU only, the job's JSON and HTML written in the
# user's home; forgeries from an ordinary user refused and counted by
# reason; a flood from one user (job lines and idle connections) must leave
# root's pause, status and resume working; `corenoise status` as an
# ordinary user says it is the user's view. Prints each phase's time and
# the figures at the end.
#
# The base root (debootstrap bookworm minbase plus systemd, both MPIs,
# procps, curl, python3) is cached as a tarball under
# /var/cache/corenoise-tests/, keyed by the mirror and the package list; the
# first run on a machine builds it. Each run unpacks a copy, installs the
# .deb into it with apt (Depends resolved from Debian's mirror, as a site's
# apt would) and removes it at the end.
#
# How systemd boots here (no systemd-nspawn needed): a cgroup of its own in
# the cgroup2 hierarchy, then `unshare --pid --fork --mount --cgroup
# --propagation private`; in it the root is bind-mounted onto itself, with a
# fresh proc, a read-only sysfs (so udev stays off, as in any container), a
# cgroup2 mount of the namespace's cgroup, /dev bound from the host with a
# file as /dev/console and a private /dev/shm; then /lib/systemd/systemd
# runs in a chroot as the namespace's PID 1. `nsenter -t PID -p -m -r -w`
# reaches it. Only units unrelated to corenoise that have no place in a
# container (gettys, udev) are masked.
#
# Needs root, debootstrap (deploy/dev-setup.sh --tests), zstd, nsenter and
# unshare (util-linux), Debian's mirror, and the TCP port 19847 free on this
# machine (the shipped `listen` is 0.0.0.0:19847 and the node shares this
# machine's network). Fails, never skips, when it cannot run.
set -euo pipefail
# shellcheck source=../tools/debian_root.sh
. "$(dirname "$0")/../tools/debian_root.sh"

if (($# != 4)); then
  echo "usage: $0 CPACK CPACK_CONFIG VERSION BUILD_DIR" >&2
  exit 1
fi
cpack="$1"
cpack_config="$2"
version="$3"
build_dir="$(cd "$4" && pwd)"
port=19847
cache_dir=/var/cache/corenoise-tests
# What the base root holds beyond minbase. Changing it changes the cache key.
base_packages=(systemd mpich openmpi-bin procps curl python3 iproute2)
# Units with no place in a container, masked in the base root: gettys would
# open the console, udev the host's devices. Never anything of corenoise's.
masked_units=(console-getty.service container-getty@.service getty@.service
  serial-getty@.service getty-static.service systemd-udevd.service
  systemd-udevd-control.socket systemd-udevd-kernel.socket
  systemd-udev-trigger.service systemd-udev-settle.service
  systemd-firstboot.service systemd-networkd-wait-online.service)

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "--- $*"; }

t_start=$SECONDS
declare -a phase_names=() phase_seconds=()
phase_name="" phase_t0=$SECONDS
phase() {
  if [[ -n "$phase_name" ]]; then
    phase_names+=("$phase_name")
    phase_seconds+=($((SECONDS - phase_t0)))
  fi
  phase_name="$1"
  phase_t0=$SECONDS
  [[ -z "$1" ]] || step "$1"
}

((EUID == 0)) || fail "needs root (debootstrap, mounts, namespaces); CI runs as root"
for tool in debootstrap zstd unshare nsenter chroot mount umount flock sha256sum ss; do
  command -v "$tool" >/dev/null || fail "$tool not found (deploy/dev-setup.sh --tests installs debootstrap and zstd)"
done
if ss -Hltn "sport = :$port" | grep -q .; then
  fail "TCP port $port is taken on this machine ($(ss -Hltnp "sport = :$port" | tr -s ' ' | head -n1)); the shipped corenoised listens on 0.0.0.0:$port in the node, which shares this machine's network: free the port (nothing is edited to avoid it)"
fi
cgroup2=""
for candidate in /sys/fs/cgroup /sys/fs/cgroup/unified; do
  if [[ "$(stat -f -c %T "$candidate" 2>/dev/null)" == cgroup2fs ]]; then
    cgroup2=$candidate
    break
  fi
done
[[ -n "$cgroup2" ]] || fail "no cgroup2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified: systemd cannot boot in the node"
work="$(mktemp -d /var/tmp/corenoise-node.XXXXXX)"
root="$work/root"
cgroup="$cgroup2/corenoise-node-${work##*.}"
unshare_pid="" init_pid=""

# Whatever failed: every process of the node killed (its PID 1 takes the
# namespace with it), its cgroups and mounts gone (they live in its mount
# namespace), the root removed.
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  local rc=$? p left t0=$SECONDS
  set +e
  if ((rc != 0)) && [[ -n "$init_pid" ]] && [[ -d /proc/$init_pid ]]; then
    echo "--- the node's failed units and corenoised's journal (test failed)" >&2
    in_node systemctl --no-pager --failed >&2 2>&1
    in_node journalctl --no-pager -u corenoised -n 60 >&2 2>&1
  fi
  [[ -n "$init_pid" ]] && kill -9 "$init_pid" 2>/dev/null
  [[ -n "$unshare_pid" ]] && kill -9 "$unshare_pid" 2>/dev/null
  # Anything else whose root is the node's (a process nsenter started).
  for _ in $(seq 20); do
    left=0
    for p in /proc/[0-9]*; do
      # A suffix: run inside a chroot (the fresh-machine check), the kernel
      # names a root in another mount namespace from the real root.
      if [[ "$(readlink "$p/root" 2>/dev/null)" == *"$root" ]]; then
        kill -9 "${p#/proc/}" 2>/dev/null
        left=1
      fi
    done
    ((left)) || break
    sleep 0.25
  done
  # The node's cgroups, deepest first, once empty.
  if [[ -d "$cgroup" ]]; then
    for _ in $(seq 20); do
      find "$cgroup" -depth -type d -exec rmdir {} + 2>/dev/null
      [[ -d "$cgroup" ]] || break
      sleep 0.25
    done
    [[ -d "$cgroup" ]] && echo "warning: $cgroup could not be removed" >&2
  fi
  if grep -qF " $work" /proc/self/mountinfo; then
    echo "warning: mounts under $work are left on this machine; not removing it" >&2
  else
    rm -rf --one-file-system "$work"
  fi
  echo "teardown (the node's processes, cgroups, mounts and root removed): $((SECONDS - t0)) s"
  return "$rc"
}
trap cleanup EXIT

# A command in the running node: its PID, mount and root namespaces.
in_node() {
  nsenter -t "$init_pid" -p -m -r -w -- /usr/bin/env -i \
    PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root "$@"
}
# A command in the node as USER (no supplementary group beyond its own),
# from its home.
as_user() {
  local user="$1"
  shift
  # shellcheck disable=SC2016  # expanded by sh
  in_node setpriv --reuid="$user" --regid="$user" --init-groups -- \
    /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 HOME="/home/$user" USER="$user" \
    LOGNAME="$user" sh -c 'cd "$HOME" && exec "$@"' as_user "$@"
}
metrics() { in_node curl -sS --max-time 10 "http://127.0.0.1:$port/metrics"; }
# The value of one exact series in a metrics text, or 0 when absent.
metric() { awk -v s="$2" '$1 == s { v = $2 } END { print v == "" ? 0 : v }' <<<"$1"; }
# Every corenoise_job_lost_seconds_total series "name value", sorted.
lost_series() { grep '^corenoise_job_lost_seconds_total{' <<<"$1" | sort || true; }
refused_series() { grep '^corenoise_job_reports_refused_total{' <<<"$1" | sort || true; }
# The exporter's view is rebuilt at most once a second: wait until
# SERIES reaches AT_LEAST, at most 10 s; prints the text.
metrics_when() {
  local series="$1" at_least="$2" text=""
  for _ in $(seq 50); do
    text="$(metrics)" || true
    if awk -v s="$series" -v n="$at_least" '$1 == s && $2 + 0 >= n + 0 { found = 1 } END { exit !found }' <<<"$text"; then
      break
    fi
    sleep 0.2
  done
  printf '%s\n' "$text"
}

# ---- the base root, cached ----------------------------------------------------------
mirror=$(debian_mirror)
key="$(printf '%s\n' "recipe 2" "$(hostname)" bookworm minbase "$mirror" "${base_packages[@]}" "${masked_units[@]}" |
  sha256sum | cut -c1-16)"
tarball="$cache_dir/packaged-node-bookworm-$key.tar.zst"
mkdir -p "$cache_dir"
exec {lock}>"$cache_dir/packaged-node.lock"
flock "$lock"
phase "base root: $tarball"
if [[ ! -s "$tarball" ]]; then
  phase "base root: debootstrap bookworm and ${base_packages[*]} (not cached yet: $tarball)"
  base="$work/base"
  debootstrap --variant=minbase bookworm "$base" "$mirror" >"$work/debootstrap.log" 2>&1 || {
    tail -n 20 "$work/debootstrap.log" >&2
    fail "debootstrap bookworm from $mirror failed"
  }
  debian_sources "$base" "$mirror"
  # shellcheck disable=SC2016  # expanded by the inner bash
  unshare --mount --propagation private -- bash -c '
    set -e
    base=$1; shift
    mount -t proc proc "$base/proc"
    mount --rbind /dev "$base/dev"
    mount -t tmpfs tmpfs "$base/dev/shm"
    chroot "$base" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
      DEBIAN_FRONTEND=noninteractive sh -c "apt-get update -qq &&
        apt-get install -y -qq --no-install-recommends \"\$@\" && apt-get clean" packages "$@"' \
    base_root "$base" "${base_packages[@]}" >"$work/base.log" 2>&1 || {
    tail -n 30 "$work/base.log" >&2
    fail "installing ${base_packages[*]} into the base root failed"
  }
  for unit in "${masked_units[@]}"; do
    ln -sfn /dev/null "$base/etc/systemd/system/$unit"
  done
  tar -C "$base" --numeric-owner -cf - . 2>/dev/null | zstd -q -T0 -3 -o "$tarball.part" ||
    fail "could not write $tarball"
  mv "$tarball.part" "$tarball"
  rm -rf --one-file-system "$base"
  echo "cached $tarball ($(stat -c %s "$tarball") bytes)"
fi
flock -u "$lock"

halo_mpich="$build_dir/tests/job/halo_app_mpich"
halo_openmpi="$build_dir/tests/job/halo_app_openmpi"
sender="$build_dir/tests/job_report_sender"
for program in "$halo_mpich" "$halo_openmpi" "$sender"; do
  [[ -x "$program" ]] || fail "$program is not built (build the tests first)"
done


# ---- the .deb ------------------------------------------------------------------------
phase "cpack -G DEB"
deb="$(build_deb "$cpack" "$cpack_config" "$work/out" "$version")" || fail "no package built"
echo "$(basename "$deb"): $(stat -c %s "$deb") bytes"

phase "unpack the base root"
mkdir "$root"
zstd -q -d -c "$tarball" | tar -C "$root" --numeric-owner -xpf - || fail "could not unpack $tarball"
cp "$deb" "$root/root/"
cp /etc/resolv.conf "$root/etc/resolv.conf"

# ---- boot -----------------------------------------------------------------------------
phase "boot systemd in the node"
mkdir "$cgroup" || fail "cannot make the cgroup $cgroup"
: >"$work/console"
# shellcheck disable=SC2016  # expanded by the inner bash
(
  echo "$BASHPID" >"$cgroup/cgroup.procs"
  exec unshare --pid --fork --mount --cgroup --propagation private -- bash -c '
    set -e
    root=$1 console=$2
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount -t sysfs -o ro sysfs "$root/sys"
    mount -t cgroup2 cgroup2 "$root/sys/fs/cgroup"
    mount --rbind /dev "$root/dev"
    mount --bind "$console" "$root/dev/console"
    mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
    exec chroot "$root" /usr/bin/env -i container=corenoise-test \
      PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
      /lib/systemd/systemd --system --unit=multi-user.target --log-target=console \
      --show-status=false' boot "$root" "$work/console"
) >"$work/boot.log" 2>&1 &
unshare_pid=$!
disown "$unshare_pid" # killed and awaited by cleanup, without a job notice
for _ in $(seq 100); do
  for child in $(cat "/proc/$unshare_pid/task/"*/children 2>/dev/null || true); do # SC2013: pids are words
    # A suffix, as for the roots above: inside a chroot the kernel names
    # the node's systemd from the real root.
    if [[ "$(readlink "/proc/$child/exe" 2>/dev/null)" == *"$root/usr/lib/systemd/systemd" ||
      "$(readlink "/proc/$child/exe" 2>/dev/null)" == *"$root/lib/systemd/systemd" ]]; then
      init_pid=$child
    fi
  done
  [[ -n "$init_pid" ]] && break
  kill -0 "$unshare_pid" 2>/dev/null || break
  sleep 0.1
done
[[ -n "$init_pid" ]] || {
  cat "$work/boot.log" "$work/console" >&2
  fail "systemd did not start in the node"
}
state=""
for _ in $(seq 120); do
  state="$(in_node systemctl is-system-running 2>/dev/null)" || true
  [[ "$state" == running || "$state" == degraded ]] && break
  sleep 0.5
done
[[ "$state" == running || "$state" == degraded ]] || {
  tail -n 40 "$work/console" >&2
  fail "the node's systemd did not finish booting (state '$state')"
}
echo "systemd $(in_node systemctl --version | head -n1 | cut -d' ' -f2) is PID 1 of the node (pid $init_pid here): $state"
if [[ "$state" == degraded ]]; then
  echo "failed units (none is corenoise's): $(in_node systemctl --failed --plain --no-legend | cut -d' ' -f1 | tr '\n' ' ')"
fi

# ---- install as a site would -------------------------------------------------------------
phase "apt-get install ./$(basename "$deb") in the running node"
# The cached root's package lists may be old: on a failure, update and retry.
apt_install_deb() {
  in_node env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "/root/$(basename "$deb")"
}
apt_install_deb >"$work/install.log" 2>&1 || {
  in_node env DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"$work/install.log" 2>&1
  apt_install_deb >>"$work/install.log" 2>&1
} || {
  tail -n 30 "$work/install.log" >&2
  fail "apt-get install of the .deb failed in the node"
}
[[ "$(in_node dpkg-query -W -f="\${Status} \${Version}" corenoise)" == "install ok installed $version" ]] ||
  fail "dpkg in the node does not list corenoise $version as installed"
active=""
for _ in $(seq 60); do
  active="$(in_node systemctl is-active corenoised 2>/dev/null)" || true
  [[ "$active" == active ]] && break
  sleep 0.5
done
[[ "$active" == active ]] || fail "corenoised.service is '$active' in the node, not active"

# The unit as shipped: no drop-in, and the file is the package's.
in_node systemctl cat corenoised >"$work/unit" 2>&1
[[ "$(in_node systemctl show -P FragmentPath corenoised)" == /lib/systemd/system/corenoised.service ]] ||
  fail "corenoised.service is not the package's: $(in_node systemctl show -P FragmentPath corenoised)"
drop_ins="$(in_node systemctl show -P DropInPaths corenoised)"
[[ -z "$drop_ins" ]] || fail "corenoised has drop-ins: $drop_ins"
# What systemd runs is the file the package shipped, byte for byte.
[[ "$(head -n1 "$work/unit")" == "# /lib/systemd/system/corenoised.service" ]] ||
  fail "systemctl cat corenoised does not start with the shipped unit: $(head -n1 "$work/unit")"
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./lib/systemd/system/corenoised.service >"$work/unit.shipped"
diff <(tail -n +2 "$work/unit") "$work/unit.shipped" >&2 ||
  fail "systemctl cat corenoised differs from the unit in the .deb"
in_node sh -c 'cd / && dpkg --verify corenoise' >"$work/verify" 2>&1 ||
  fail "dpkg --verify corenoise: $(cat "$work/verify")"
[[ ! -s "$work/verify" ]] || fail "files of the package changed: $(cat "$work/verify")"
main_pid="$(in_node systemctl show -P MainPID corenoised)"
in_node grep -E '^(Uid|CapEff):' "/proc/$main_pid/status" >"$work/daemon_status"
grep -q "^CapEff:[[:space:]]*0000000000000000$" "$work/daemon_status" ||
  fail "corenoised has capabilities: $(cat "$work/daemon_status")"
daemon_uid="$(in_node id -u corenoise)"
grep -qE "^Uid:[[:space:]]+${daemon_uid}[[:space:]]" "$work/daemon_status" ||
  fail "corenoised does not run as corenoise ($daemon_uid): $(cat "$work/daemon_status")"
in_node systemctl status --no-pager corenoised >"$work/systemctl_status" 2>&1 || true
status_line="$(sed -n 's/^ *Status: "\(.*\)"$/\1/p' "$work/systemctl_status")"
[[ -n "$status_line" ]] || {
  cat "$work/systemctl_status" >&2
  fail "systemctl status corenoised shows no Status line from the daemon"
}
echo "corenoised.service active as uid $daemon_uid, no capability, unit as shipped; Status: \"$status_line\""
for socket in ctl.sock user.sock; do
  echo "/run/corenoise/$socket: $(in_node stat -c '%U:%G %a' "/run/corenoise/$socket")"
done
[[ "$(in_node stat -c %a /run/corenoise/user.sock)" == 666 ]] || fail "user.sock is not mode 0666"
[[ "$(in_node stat -c %a /run/corenoise/ctl.sock)" == 660 ]] || fail "ctl.sock is not mode 0660"

# ---- users and programs ----------------------------------------------------------------
phase "two ordinary users; the programs copied into the node"
for user in cnalice cnbob; do
  in_node useradd --create-home --shell /bin/bash "$user"
  in_node id -nG "$user" | grep -qw corenoise && fail "$user is in the group corenoise"
done
install -m 0755 "$halo_mpich" "$halo_openmpi" "$sender" "$root/usr/local/bin/"
for program in halo_app_mpich halo_app_openmpi job_report_sender; do
  missing="$(in_node ldd "/usr/local/bin/$program" | grep 'not found' || true)"
  [[ -z "$missing" ]] || fail "$program lacks libraries in the node: $missing"
done

status_user="$(as_user cnalice corenoise status 2>&1)" ||
  fail "corenoise status as cnalice failed: $status_user"
grep -q "an ordinary user's view: the last job's id is left out" <<<"$status_user" ||
  fail "corenoise status as cnalice does not say it is an ordinary user's view: $status_user"
echo "corenoise status as cnalice: $(grep "ordinary user" <<<"$status_user")"
status_root="$(in_node corenoise status 2>&1)" || fail "corenoise status as root failed: $status_root"

# ---- the jobs ----------------------------------------------------------------------------
# run_job USER CPU LAUNCHER...: a 2-rank halo job under `corenoise job` as
# USER, every rank bound to CPU; checks its report was taken and its loss
# exported on CPU alone.
reports_taken=0
run_job() {
  local user="$1" cpu="$2" family="$3" noise="$4"
  shift 4
  local before after taken lost_before lost_after changed rc=0 injector=""
  before="$(metrics)"
  if [[ "$noise" == yes ]]; then
    in_node corenoise inject --cpus "$cpu" --seconds 30 --duty 0.3 --period 0.01 \
      >"$work/inject-$user.log" 2>&1 &
    injector=$!
    for _ in $(seq 50); do
      grep -q '^ready' "$work/inject-$user.log" && break
      sleep 0.1
    done
    grep -q '^ready' "$work/inject-$user.log" || fail "corenoise inject did not start: $(cat "$work/inject-$user.log")"
    echo "noise on CPU $cpu: $(head -n1 "$work/inject-$user.log")"
  fi
  as_user "$user" taskset -c "$cpu" "$@" corenoise job --json job.json --html job.html -- \
    "halo_app_$family" --steps 400 --step-ms 5 --larger 1:1.3 >"$work/job-$user.log" 2>&1 || rc=$?
  if [[ -n "$injector" ]]; then
    kill "$injector" 2>/dev/null || true
    wait "$injector" 2>/dev/null || true
  fi
  ((rc == 0)) || {
    cat "$work/job-$user.log" >&2
    fail "$user's job under $family exited $rc"
  }
  if grep -q "did not take" "$work/job-$user.log"; then
    cat "$work/job-$user.log" >&2
    fail "$user's job says corenoised did not take its loss"
  fi
  for file in job.json job.html; do
    [[ "$(in_node stat -c %U "/home/$user/$file" 2>/dev/null)" == "$user" ]] ||
      fail "$user's job wrote no /home/$user/$file of its own"
  done
  taken="$(metric "$before" corenoise_job_reports_total)"
  after="$(metrics_when corenoise_job_reports_total "$((${taken%.*} + 2))")"
  reports_taken=$(($(metric "$after" corenoise_job_reports_total | cut -d. -f1) - ${taken%.*}))
  ((reports_taken == 2)) || fail "$user's job: $reports_taken reports taken, expected 2 (one a rank)"
  [[ "$(refused_series "$before")" == "$(refused_series "$after")" ]] || {
    diff <(refused_series "$before") <(refused_series "$after") >&2
    fail "$user's genuine job made refusals"
  }
  lost_before="$(lost_series "$before")"
  lost_after="$(lost_series "$after")"
  changed="$(comm -13 <(printf '%s\n' "$lost_before") <(printf '%s\n' "$lost_after"))"
  [[ -n "$changed" ]] || {
    cat "$work/job-$user.log" >&2
    fail "$user's job added no corenoise_job_lost_seconds_total series or value"
  }
  if grep -v "{cpu=\"$cpu\"," <<<"$changed" | grep -q .; then
    printf '%s\n' "$changed" >&2
    fail "$user's job (CPU $cpu) changed loss on another CPU"
  fi
  echo "$user ($family, CPU $cpu, noise: $noise): 2 reports taken; loss exported:"
  printf '  %s\n' "${changed//$'\n'/$'\n'  }"
  echo "  the job's own words:"
  sed 's/^/    /' "$work/job-$user.log"
}

phase "cnalice: mpiexec.mpich -n 2 on CPU 0, noise on CPU 0"
run_job cnalice 0 mpich yes mpiexec.mpich -n 2 -bind-to none
phase "cnbob: mpirun.openmpi -n 2 on CPU 1"
run_job cnbob 1 openmpi no mpirun.openmpi -n 2 --oversubscribe --bind-to none
final="$(metrics)"
total_reports="$(metric "$final" corenoise_job_reports_total)"
[[ "${total_reports%.*}" == 4 ]] || fail "corenoise_job_reports_total is $total_reports after both jobs, expected 4"

# ---- forgeries ---------------------------------------------------------------------------
phase "forgeries from an ordinary user"
# The job lines as the library sends them (tests/integration/job_sender.h);
# job_report_sender puts the time for @now.
start_line='{"command":"job-start","job_id":"forged"}'
report_line() { # CPU [JOB [ELAPSED [ENDED]]]
  printf '{"command":"job","job_id":"%s","ended_unix_seconds":%s,"elapsed_seconds":%s,"ranks":2,"cpus":[{"cpu":%s,"lost_seconds":{"other-processes":0.1}}]}' \
    "${2:-forged}" "${4:-@now}" "${3:-0.5}" "$1"
}
# forge SENDER-OPTIONS EXPECTED... -- LINE...: cnbob's process bound to CPU 1
# sends the lines on one connection to the user socket; reply i must hold
# EXPECTED i.
declare -A forged=()
forge() {
  local options="$1" expected=() lines=() replies i
  shift
  while [[ "$1" != -- ]]; do
    expected+=("$1")
    shift
  done
  shift
  lines=("$@")
  # shellcheck disable=SC2086 # the sender's options, words
  mapfile -t replies < <(as_user cnbob taskset -c 1 job_report_sender $options \
    /run/corenoise/user.sock "${lines[@]}" 2>&1 || true)
  for i in "${!expected[@]}"; do
    [[ "${replies[i]:-}" == *"${expected[i]}"* ]] ||
      fail "forgery: to ${lines[i]} expected '${expected[i]}', got: ${replies[i]:-nothing} (all: ${replies[*]})"
    echo "  ${lines[i]:0:70}... -> ${replies[i]:0:150}"
    if [[ "${expected[i]}" =~ refused\ \(([a-z_]+)\) ]]; then
      forged[${BASH_REMATCH[1]}]=$((${forged[${BASH_REMATCH[1]}]:-0} + 1))
    fi
  done
}
forge "" "refused (unregistered)" '"ok":true' "refused (duplicate)" "refused (wrong_job)" \
  "refused (cpu_outside_affinity)" "is not a CPU of this node" "refused (too_long)" \
  "refused (bad_time)" -- \
  "$(report_line 1)" "$start_line" "$start_line" "$(report_line 1 another-job)" \
  "$(report_line 0)" "$(report_line 4095)" "$(report_line 1 forged 3600)" \
  "$(report_line 1 forged 0.5 4102444800)"
forged[invalid]=1
# A connection handed to a child once the process that connected exited.
forge --hand-to-child "refused (no_credentials)" -- "$start_line"
after_forgeries="$(metrics_when 'corenoise_job_reports_refused_total{reason="no_credentials"}' 1)"
for reason in "${!forged[@]}"; do
  series="corenoise_job_reports_refused_total{reason=\"$reason\"}"
  counted=$(($(metric "$after_forgeries" "$series" | cut -d. -f1) - $(metric "$final" "$series" | cut -d. -f1)))
  ((counted == forged[$reason])) || fail "$reason: $counted refusals counted, ${forged[$reason]} sent"
done
echo "refused and counted: $(for r in "${!forged[@]}"; do printf '%s %s, ' "$r" "${forged[$r]}"; done)"
[[ "$(lost_series "$after_forgeries")" == "$(lost_series "$final")" ]] || fail "a forgery changed the exported loss"
[[ "$(metric "$after_forgeries" corenoise_job_reports_total)" == "$total_reports" ]] || fail "a forgery was taken"

# ---- flood --------------------------------------------------------------------------------
phase "flood from cnbob: 2000 job lines and 200 idle connections; root's pause, status, resume"
cat >"$root/usr/local/bin/flood.py" <<'EOF'
import socket, sys, time
lines, idle, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_UNIX)
s.connect("/run/corenoise/user.sock")
held, refused_connect = [], 0
for _ in range(idle):
    c = socket.socket(socket.AF_UNIX)
    try:
        c.connect("/run/corenoise/user.sock")
        held.append(c)
    except OSError:
        refused_connect += 1
line = (b'{"command":"job","job_id":"flood","ended_unix_seconds":%d,"elapsed_seconds":0.1,'
        b'"ranks":2,"cpus":[{"cpu":1,"lost_seconds":{"other-processes":0.01}}]}\n' % int(time.time()))
s.sendall(line * lines)
s.settimeout(20)
replies, buf = 0, b""
try:
    while replies < lines:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
        replies = buf.count(b"\n")
except OSError:
    pass
# The daemon answers a connection over the user's cap with one error line
# and closes it; the others stay open (until its 10 s idle timer).
capped, still_open = 0, 0
for c in held:
    c.settimeout(0.05)
    try:
        data = c.recv(4096)
        if b"too many connections" in data:
            capped += 1
    except socket.timeout:
        still_open += 1
    except OSError:
        pass
print(f"{len(held) + 1} connections: {still_open + 1} served, {capped} refused at the cap, "
      f"{refused_connect} not connected; {replies} replies to {lines} lines", flush=True)
time.sleep(hold)
EOF
as_user cnbob python3 /usr/local/bin/flood.py 2000 200 12 >"$work/flood.log" 2>&1 &
flood_pid=$!
sleep 3
declare -a root_commands=()
for command in pause status resume status; do
  t0=$(date +%s.%N)
  out="$(in_node timeout 10 corenoise "$command" 2>&1)" || fail "root's corenoise $command failed under the flood: $out"
  root_commands+=("$command $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f s", b - a }')")
  case "$command" in
    status) grep -q "corenoised $version" <<<"$out" || fail "root's status under the flood: $out" ;;
  esac
done
kill -0 "$flood_pid" 2>/dev/null || fail "the flood ended before root's commands ran: $(cat "$work/flood.log")"
wait "$flood_pid" || fail "the flood failed: $(cat "$work/flood.log")"
echo "flood: $(cat "$work/flood.log")"
echo "root under the flood: ${root_commands[*]}"
# Every flood line refused and counted: rate_limited past the user's
# budget, unregistered within it (cnbob's flooding process sent no job-start).
refusals() { refused_series "$1" | awk '{ sum += $2 } END { print sum + 0 }'; }
for _ in $(seq 50); do
  after_flood="$(metrics)"
  (($(refusals "$after_flood") - $(refusals "$after_forgeries") >= 2000)) && break
  sleep 0.2
done
flood_refused=$(($(refusals "$after_flood") - $(refusals "$after_forgeries")))
((flood_refused == 2000)) || fail "the flood's 2000 lines made $flood_refused refusals, expected 2000"
[[ "$(metric "$after_flood" 'corenoise_job_reports_refused_total{reason="rate_limited"}')" != 0 ]] ||
  fail "the flood was not rate-limited"
read -r served capped < <(sed -n 's/^[0-9]* connections: \([0-9]*\) served, \([0-9]*\) refused at the cap.*/\1 \2/p' "$work/flood.log")
[[ -n "${served:-}" ]] || fail "the flood's report is unreadable: $(cat "$work/flood.log")"
# The user socket's cap a user (daemon/daemon.cpp: max_connections_per_user).
max_user_connections=64
((served <= max_user_connections && capped >= 201 - max_user_connections)) ||
  fail "cnbob held $served connections ($capped refused at the cap), expected at most $max_user_connections"
[[ "$(lost_series "$after_flood")" == "$(lost_series "$final")" ]] || fail "the flood changed the exported loss"
[[ "$(metric "$after_flood" corenoise_job_reports_total)" == "$total_reports" ]] || fail "the flood's reports were taken"
in_node systemctl is-active --quiet corenoised || fail "corenoised is not active after the flood"

# ---- tracing, as a site opts in ----------------------------------------------------------
phase "tracing: the packaged drop-in and trace = on; cnalice's job names what ran on its CPU"
example=/usr/share/corenoise/systemd/corenoised-trace.conf
in_node mkdir -p /etc/systemd/system/corenoised.service.d
in_node cp "$example" /etc/systemd/system/corenoised.service.d/trace.conf ||
  fail "the package has no $example"
in_node sh -c 'echo "trace = on" >>/etc/corenoise/corenoised.conf'
# The kernel's tracing instances are the host's: what is there before.
instances() {
  local path
  for path in /sys/kernel/tracing/instances/corenoise-*; do
    [[ -e "$path" ]] || continue
    basename "$path"
  done | sort
}
instances_before="$(instances)"
in_node systemctl daemon-reload
in_node systemctl restart corenoised || {
  in_node journalctl --no-pager -u corenoised | tail -n 30 >&2
  fail "corenoised did not restart with the tracing drop-in"
}
# The restarted daemon's journal, read whole (grep -q closing the pipe
# early would end journalctl by SIGPIPE, which pipefail reports).
main_pid="$(in_node systemctl show -P MainPID corenoised)"
journal=""
for _ in $(seq 100); do
  journal="$(in_node journalctl --no-pager -u corenoised "_PID=$main_pid")"
  grep -q "tracing running jobs' CPUs" <<<"$journal" && break
  sleep 0.1
done
grep -q "tracing running jobs' CPUs" <<<"$journal" || {
  tail -n 30 <<<"$journal" >&2
  fail "corenoised with the drop-in does not trace running jobs' CPUs"
}
echo "corenoised traced as: $(in_node grep -E '^(Uid|CapEff):' "/proc/$main_pid/status" | tr -s '\t\n' '  ')"
# Exactly the drop-in's: CAP_CHOWN (0), CAP_SYS_ADMIN (21), CAP_SYSLOG (34).
in_node grep -q "^CapEff:[[:space:]]*0000000400200001$" "/proc/$main_pid/status" ||
  fail "the traced corenoised's capabilities are not the drop-in's: $(in_node grep CapEff "/proc/$main_pid/status")"
run_job cnalice 0 mpich yes mpiexec.mpich -n 2 -bind-to none
traced="$(in_node python3 -c '
import json, sys
report = json.load(open("/home/cnalice/job.json"))
for r in report["ranks"]:
    for c in r["culprits"]:
        if c["kind"] == "traced":
            print("rank %d: %s (%s) %.3f s, %.1f %%" % (r["rank"], c["name"], c["traced_kind"],
                                                      c["seconds"], 100 * c["share_of_cpu"]))
')"
[[ -n "$traced" ]] || fail "cnalice's traced job names no traced culprit: $(cat "$work/job-cnalice.log")"
# The node is a PID namespace of its own: the trace's thread ids are the
# host's, so the job's own tasks are told by their commands, and no id is
# shown.
grep -q "^rank [0-9]*: corenoise (task)" <<<"$traced" ||
  fail "cnalice's traced job does not name the injector: $traced"
if grep -q "halo_app_mpich" <<<"$traced"; then
  fail "cnalice's traced job names its own ranks: $traced"
fi
echo "traced culprits in cnalice's report:"
printf '  %s\n' "${traced//$'\n'/$'\n'  }"
# Stopped, the daemon removes its instances (the probes' and the jobs').
in_node systemctl stop corenoised
left="$(comm -13 <(printf '%s\n' "$instances_before") <(instances))"
[[ -z "$left" ]] || fail "the traced corenoised left its tracing instances at its stop: $left"

# ---- what it measured ---------------------------------------------------------------------
phase ""
in_node systemctl status --no-pager corenoised >"$work/systemctl_status" 2>&1 || true
echo
echo "=== packaged node: what was measured"
for i in "${!phase_names[@]}"; do
  printf '  %4d s  %s\n' "${phase_seconds[i]}" "${phase_names[i]}"
done
echo "  total $((SECONDS - t_start)) s"
echo "corenoise_job_reports_total: $(metric "$after_flood" corenoise_job_reports_total) (2 ranks x 2 jobs)"
echo "corenoise_job_lost_seconds_total:"
lost_series "$after_flood" | sed 's/^/  /'
echo "refusals by reason:"
refused_series "$after_flood" | sed 's/^/  /'
echo "systemctl status corenoised: $(sed -n 's/^ *Status: //p' "$work/systemctl_status")"
echo "PASS: corenoise $version as shipped served both users' jobs under both MPI families"
