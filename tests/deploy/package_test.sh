#!/bin/bash
# Usage: package_test.sh CPACK CPACK_CONFIG CONFFILES VERSION
#
# Builds the Debian package from a finished build folder (CPACK_CONFIG is its
# CPackConfig.cmake), checks what it holds, installs it with dpkg, checks the
# installed system (user, units, binaries, sandbox score, the daemon as its
# service user), then removes and purges it and checks that nothing is left.
# CONFFILES is the conffile list cmake/Packaging.cmake wrote; VERSION is
# PROJECT_VERSION.
#
# Needs root (dpkg -i) and the packages dpkg-dev (dpkg-shlibdeps, run by
# cpack), systemd (systemd-analyze) and adduser. It changes this machine: a
# corenoise package already installed is purged first, and the system user
# corenoise, which the package keeps on purge, is deleted again at the end if
# this test created it.
set -euo pipefail

if (($# != 4)); then
  echo "usage: $0 CPACK CPACK_CONFIG CONFFILES VERSION" >&2
  exit 1
fi
cpack="$1"
cpack_config="$2"
expected_conffiles="$3"
version="$4"
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../tools/debian_root.sh
. "$(dirname "$0")/../tools/debian_root.sh"
max_exposure=2.0

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "--- $*"; }

((EUID == 0)) || fail "needs root (dpkg -i); CI runs as root"
for tool in dpkg dpkg-deb dpkg-shlibdeps systemd-analyze adduser deluser setpriv; do
  command -v "$tool" >/dev/null ||
    fail "$tool not found (apt-get install dpkg-dev systemd adduser util-linux)"
done

# dpkg's state of the package: installed, config-files, ...; not-installed
# or nothing when dpkg does not know it.
package_state() { dpkg-query -W -f='${db:Status-Status}' corenoise 2>/dev/null || true; }
is_installed() {
  local state
  state="$(package_state)"
  [[ -n "$state" && "$state" != not-installed ]]
}

user_existed=false
getent passwd corenoise >/dev/null && user_existed=true
# An admin's /etc/corenoise (e.g. a hostfile) outlives a purge, rightly.
etc_existed=false
[[ -e /etc/corenoise ]] && etc_existed=true
work="$(mktemp -d)"
daemon_pid=""
cleanup() {
  # Whatever failed, leave the machine as it was: no daemon, no package,
  # no user this test made.
  if [[ -n "$daemon_pid" ]]; then kill "$daemon_pid" 2>/dev/null || true; fi
  if is_installed; then dpkg --purge corenoise >/dev/null 2>&1 || true; fi
  if [[ "$user_existed" == false ]] && getent passwd corenoise >/dev/null; then
    deluser --quiet --system corenoise >/dev/null 2>&1 || true
  fi
  if [[ "$user_existed" == false ]] && getent group corenoise >/dev/null; then
    delgroup --quiet --system corenoise >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

if is_installed; then
  step "corenoise is installed (an earlier run?): purging it first"
  dpkg --purge corenoise >/dev/null
fi

# ---- build ---------------------------------------------------------------------
step "cpack -G DEB"
deb="$(build_deb "$cpack" "$cpack_config" "$work/out" "$version")" || fail "no package built"
echo "$(basename "$deb"): $(stat -c %s "$deb") bytes"

# ---- what the .deb holds -------------------------------------------------------------
step "contents (dpkg-deb -c)"
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$work/contents"
for path in /usr/bin/corenoise /usr/sbin/corenoised \
  /lib/systemd/system/corenoised.service \
  /lib/systemd/system/corenoise-collect.service \
  /lib/systemd/system/corenoise-collect.timer \
  /etc/default/corenoise-collect /etc/default/corenoise-slurm \
  /usr/libexec/corenoise/slurm/corenoise-healthcheck \
  /usr/libexec/corenoise/slurm/corenoise-drain-reason.jq \
  /usr/share/doc/corenoise/examples/prometheus/corenoise.rules.yml \
  /usr/share/doc/corenoise/examples/grafana/corenoise.json \
  /usr/share/corenoise/systemd/corenoised-trace.conf \
  /usr/share/man/man8/corenoised.8.gz /usr/share/man/man1/corenoise.1.gz \
  /usr/share/man/man5/corenoised.conf.5.gz \
  /usr/share/doc/corenoise/README.md /usr/share/doc/corenoise/operations.md \
  /usr/lib/corenoise/libcorenoise-mpi-mpich.so /usr/lib/corenoise/libcorenoise-mpi-openmpi.so; do
  grep -qxF "$path" "$work/contents" || fail "$path missing from the package"
done

# Conffiles: exactly what Packaging.cmake listed, and every file under /etc.
dpkg-deb -I "$deb" conffiles >"$work/conffiles" || fail "the package has no conffiles member"
diff -u "$expected_conffiles" "$work/conffiles" || fail "conffiles differ from the expected list"
while read -r path; do
  [[ "$path" == */ ]] && continue
  grep -qxF "$path" "$work/conffiles" || fail "$path is under /etc but not a conffile"
done < <(grep '^/etc/' "$work/contents")
echo "conffiles: $(tr '\n' ' ' <"$work/conffiles")"

for script in postinst prerm postrm; do
  dpkg-deb -I "$deb" "$script" >/dev/null || fail "maintainer script $script missing"
done
# dpkg-shlibdeps ran (library packages) and the fixed fields are there.
depends="$(dpkg-deb -f "$deb" Depends)"
for dependency in libc6 libhwloc libtracefs libtraceevent adduser procps; do
  [[ "$depends" == *"$dependency"* ]] || fail "Depends lacks $dependency: $depends"
done
# Either MPI family will do, or none: no libmpi among the dependencies.
[[ "$depends" != *libmpich* && "$depends" != *libopenmpi* ]] || fail "Depends names an MPI: $depends"
[[ "$(dpkg-deb -f "$deb" Recommends)" == *"mpich | openmpi-bin"* ]] ||
  fail "Recommends lacks 'mpich | openmpi-bin': $(dpkg-deb -f "$deb" Recommends)"
[[ "$(dpkg-deb -f "$deb" Section)" == admin ]] || fail "Section is not admin"
echo "Depends: $depends"

# Each unit's Documentation= must point into the package.
while read -r doc; do
  case "$doc" in
    file://*) doc_path="${doc#file://}" ;;
    # man:NAME(SECTION) -> /usr/share/man/manSECTION/NAME.SECTION.gz
    man:*) doc_path="$(sed -E 's|^man:([^()]+)\(([0-9a-z]+)\)$|/usr/share/man/man\2/\1.\2.gz|' <<<"$doc")" ;;
    *) continue ;;
  esac
  grep -qxF "$doc_path" "$work/contents" || fail "Documentation=$doc: $doc_path is not in the package"
done < <(dpkg-deb --fsys-tarfile "$deb" |
  tar -xO --wildcards './lib/systemd/system/*' |
  sed -n 's/^Documentation=//p' | tr ' ' '\n' | sed '/^$/d' | sort -u)

# ---- install -------------------------------------------------------------------
step "dpkg -i"
dpkg -i "$deb" >"$work/install.log" 2>&1 || {
  cat "$work/install.log" >&2
  fail "dpkg -i failed"
}
[[ "$(dpkg-query -W -f='${Status} ${Version}' corenoise)" == "install ok installed $version" ]] ||
  fail "dpkg does not list corenoise $version as installed"

# postinst: a system user with its own group, no login, home the state dir.
IFS=: read -r _ _ uid gid _ home shell < <(getent passwd corenoise) || fail "no user corenoise"
((uid < 1000)) || fail "corenoise (uid $uid) is not a system user"
[[ "$(getent group corenoise | cut -d: -f3)" == "$gid" ]] || fail "corenoise's primary group is not corenoise"
[[ "$home" == /var/lib/corenoise ]] || fail "corenoise's home is $home"
[[ "$shell" == */nologin || "$shell" == /bin/false ]] || fail "corenoise has a login shell: $shell"
[[ "$(stat -c %U:%G /var/lib/corenoise)" == corenoise:corenoise ]] || fail "/var/lib/corenoise is not corenoise's"
# The daemon is enabled (it starts only where systemd runs), the timer not.
[[ -L /etc/systemd/system/multi-user.target.wants/corenoised.service ]] || fail "corenoised.service not enabled"
[[ ! -e /etc/systemd/system/timers.target.wants/corenoise-collect.timer ]] || fail "the collect timer got enabled"
echo "user corenoise uid $uid, corenoised.service enabled, timer not"

step "binaries from /usr"
[[ "$(/usr/sbin/corenoised --version)" == "corenoised $version" ]] || fail "corenoised --version: $(/usr/sbin/corenoised --version)"
/usr/bin/corenoise --help >"$work/help" || fail "corenoise --help failed"
grep -q collect "$work/help" || fail "corenoise --help does not mention collect"
if grep -qxF /etc/corenoise/corenoised.conf "$work/conffiles"; then
  /usr/sbin/corenoised --check-config --config /etc/corenoise/corenoised.conf ||
    fail "the shipped /etc/corenoise/corenoised.conf is rejected"
fi

# The installed command finds its MPI plugins beside it, under both
# families' launchers; a sweep of this node under each is one node.
step "corenoise sweep from /usr under mpiexec.mpich and mpirun.openmpi"
quick=(--samples 3 --reps 4 --detour-window 0.005 --stream-bytes 8388608 --quiet)
for launcher in "mpiexec.mpich -n 1" \
  "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun.openmpi -n 1"; do
  rc=0
  # shellcheck disable=SC2086 # the launcher's words
  timeout 120 $launcher env LD_DEBUG=files /usr/bin/corenoise sweep "${quick[@]}" \
    --json "$work/sweep.json" >"$work/sweep.log" 2>&1 || rc=$?
  [[ $rc == 0 || $rc == 2 ]] || {
    cat "$work/sweep.log" >&2
    fail "$launcher /usr/bin/corenoise sweep exited $rc"
  }
  grep -q '"node_count": *1' "$work/sweep.json" || fail "$launcher: the sweep's JSON is not one node"
  # The plugin the package installed, by the path the package gave it.
  grep -q 'file=/usr/lib/corenoise/libcorenoise-mpi-' "$work/sweep.log" ||
    fail "$launcher: no plugin loaded from /usr/lib/corenoise: $(grep -o 'file=[^ ]*corenoise-mpi[^ ]*' "$work/sweep.log" | sort -u)"
  echo "$launcher: sweep exit $rc"
done

step "systemd-analyze verify"
units=(/lib/systemd/system/corenoised.service /lib/systemd/system/corenoise-collect.service
  /lib/systemd/system/corenoise-collect.timer)
# Any output is a warning (unknown key, bad value); exit status alone misses it.
verify_output="$(systemd-analyze verify "${units[@]}" 2>&1)" || {
  printf '%s\n' "$verify_output" >&2
  fail "systemd-analyze verify failed"
}
[[ -z "$verify_output" ]] || {
  printf '%s\n' "$verify_output" >&2
  fail "systemd-analyze verify warned"
}

step "systemd-analyze security"
"$here/package_exposure.sh" /lib/systemd/system/corenoised.service "$max_exposure"

# The unit's user, without systemd: no capabilities, no new privileges. It must
# read /proc and /sys, make its socket and give it to its own group, which is
# what `control-group = corenoise` needs of an unprivileged process.
step "corenoised as user corenoise"
install -d -o corenoise -g corenoise -m 0755 "$work/run" "$work/state"
chmod 0755 "$work"
setpriv --reuid=corenoise --regid=corenoise --init-groups --inh-caps=-all \
  --bounding-set=-all --no-new-privs -- /usr/sbin/corenoised \
  --listen 127.0.0.1:0 --socket "$work/run/ctl.sock" --state-dir "$work/state" \
  --control-group corenoise --interval 3600 >"$work/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do
  [[ -S "$work/run/ctl.sock" ]] && break
  kill -0 "$daemon_pid" 2>/dev/null || break
  sleep 0.2
done
[[ -S "$work/run/ctl.sock" ]] || {
  cat "$work/daemon.log" >&2
  fail "corenoised as corenoise made no control socket"
}
[[ "$(stat -c %U:%G:%a "$work/run/ctl.sock")" == corenoise:corenoise:660 ]] ||
  fail "socket is $(stat -c %U:%G:%a "$work/run/ctl.sock"), expected corenoise:corenoise:660"
/usr/bin/corenoise status --socket "$work/run/ctl.sock" >"$work/status" || {
  cat "$work/status" "$work/daemon.log" >&2
  fail "corenoise status against the daemon failed"
}
grep -q "corenoised $version" "$work/status" || fail "status does not name corenoised $version"
kill "$daemon_pid"
wait "$daemon_pid" || fail "corenoised did not stop cleanly on SIGTERM"
daemon_pid=""
[[ ! -e "$work/run/ctl.sock" ]] || fail "corenoised left its socket behind"

# ---- remove, then purge ---------------------------------------------------------------
step "dpkg -r"
dpkg -r corenoise >"$work/remove.log" 2>&1 || {
  cat "$work/remove.log" >&2
  fail "dpkg -r failed"
}
[[ "$(package_state)" == config-files ]] || fail "state $(package_state) after dpkg -r, expected config-files"
for path in /usr/bin/corenoise /usr/sbin/corenoised /lib/systemd/system/corenoised.service; do
  [[ ! -e "$path" ]] || fail "$path left after dpkg -r"
done
[[ -e /etc/default/corenoise-collect ]] || fail "dpkg -r removed a conffile (only purge should)"

step "dpkg -P"
dpkg -P corenoise >"$work/purge.log" 2>&1 || {
  cat "$work/purge.log" >&2
  fail "dpkg -P failed"
}
is_installed && fail "dpkg still knows corenoise after purge (state $(package_state))"
# dpkg -l prints nothing for it, or "un" (unknown, not installed).
if dpkg -l corenoise 2>/dev/null | grep -E '^[a-z]{2}[ A-Z] +corenoise ' | grep -qv '^un'; then
  dpkg -l corenoise >&2
  fail "dpkg -l still lists corenoise after purge"
fi
while read -r path; do
  [[ "$path" == */ ]] && continue
  [[ ! -e "$path" ]] || fail "$path left after purge"
done <"$work/contents"
gone=(/var/lib/corenoise /run/corenoise /usr/share/doc/corenoise)
[[ "$etc_existed" == true ]] || gone+=(/etc/corenoise)
for path in "${gone[@]}"; do
  [[ ! -e "$path" ]] || fail "$path left after purge"
done
leftovers="$(find /etc/systemd /var/lib/systemd -name '*corenoise*' 2>/dev/null || true)"
[[ -z "$leftovers" ]] || fail "systemd links or state left after purge: $leftovers"
# Debian keeps system users on purge (a reused uid would own stale files).
getent passwd corenoise >/dev/null || fail "purge deleted the user corenoise"

echo "PASS: built, installed, verified and purged corenoise $version"
