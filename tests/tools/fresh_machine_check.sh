#!/usr/bin/env bash
# fresh_machine_check.sh - the README's two quick-start commands on a fresh
# Debian 12 machine: a minimal root made by debootstrap from Debian's
# packages, a clean clone of the committed tree put in it, and each command
# run there in a chroot, as a new user would on a new machine. Machines that
# have run the project before keep what earlier runs installed, which is how
# a missing step hides; this is the check that it does not.
#
# Usage: sudo tests/tools/fresh_machine_check.sh [--keep] [--work DIR]
#                                               [--into PATH] [REPO]
#   REPO        a git repository whose HEAD is checked (default: this one)
#   --work DIR  where the root is made (default: a new folder under /var/tmp);
#               removed at the end unless --keep
#   --into PATH where in the root the clone goes (default: /src). Users clone
#               anywhere: /root/corenoise (root's home, mode 0700: programs
#               the tests run as other users must still reach theirs),
#               /tmp/corenoise (the test cluster gives each node its own
#               /tmp), a path with a space
#   --keep      leave the root in place (to look at build/ or rerun by hand:
#               chroot DIR/root)
#
# The commands are read from README.md's "Quick start" (its first two sh
# blocks), so they cannot drift from what the README tells users. Prints
# each command's exit status and time and, for the test command, the tests
# that failed. Exit: 0 both passed (the first may end in the sweep's exit
# 2, unhealthy cores, when it wrote its report), 1 one failed, 2 cannot run
# here (not root, no debootstrap and none installable).
set -euo pipefail

KEEP=0 WORK='' REPO='' INTO=/src
while (($#)); do
  case $1 in
    --keep) KEEP=1 ;;
    --work) WORK=$2; shift ;;
    --into) INTO=$2; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) REPO=$1 ;;
  esac
  shift
done
say() { echo "fresh_machine_check: $*"; }
skip() { echo "fresh_machine_check: SKIP: $*" >&2; exit 2; }

[[ $EUID -eq 0 ]] || skip "needs root (debootstrap, chroot, mounts)"
REPO=$(cd "${REPO:-$(dirname "$0")/../..}" && git rev-parse --show-toplevel)
if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
    skip "debootstrap is missing and could not be installed"
fi

# shellcheck source=debian_root.sh
. "$(dirname "$0")/debian_root.sh"
mirror=$(debian_mirror)

WORK=${WORK:-$(mktemp -d /var/tmp/corenoise-fresh.XXXXXX)}
mkdir -p "$WORK"
WORK=$(realpath "$WORK")    # /proc/PID/root reads as the resolved path
ROOT=$WORK/root

# Every process still running inside the root (a daemon a test left) is
# killed before the mounts go, then the root is removed unless --keep.
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  set +e
  local p left
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/root" 2>/dev/null) == "$ROOT" ]] && kill -9 "${p#/proc/}" 2>/dev/null
  done
  for _ in 1 2 3 4 5 6 7 8 9 10; do    # until they are gone, for at most 5 s
    left=0
    for p in /proc/[0-9]*; do [[ $(readlink "$p/root" 2>/dev/null) == "$ROOT" ]] && left=1; done
    ((left)) || break
    sleep 0.5
  done
  if ((KEEP)); then say "kept $ROOT"; else rm -rf --one-file-system "$WORK"; fi
}
trap cleanup EXIT

start=$SECONDS
say "debootstrap bookworm from $mirror into $ROOT"
debootstrap --variant=minbase bookworm "$ROOT" "$mirror" >"$WORK/debootstrap.log" 2>&1 || {
  tail -n 20 "$WORK/debootstrap.log" >&2
  echo "fresh_machine_check: FAIL: debootstrap failed" >&2
  exit 1
}
# What a fresh machine has (Debian's sources, name resolution); the clone
# is made from outside.
debian_sources "$ROOT" "$mirror"
[[ $INTO == /* && $INTO != / ]] || { echo "fresh_machine_check: FAIL: --into needs an absolute path" >&2; exit 1; }
say "debootstrap done in $((SECONDS - start)) s; cloning $(git -C "$REPO" rev-parse --short HEAD) into $INTO"
git clone -q --no-local "$REPO" "$ROOT$INTO"

# README.md's first two ```sh blocks after "## Quick start".
mapfile -t commands < <(awk '
  /^## Quick start/ { in_start = 1; next }
  in_start && /^## / { exit }
  in_start && /^```sh/ { block = 1; text = ""; next }
  block && /^```/ { block = 0; print text; if (++n == 2) exit; next }
  block { text = text (text == "" ? "" : " ") $0 }' "$REPO/README.md")
((${#commands[@]} == 2)) || { echo "fresh_machine_check: FAIL: README.md's quick start has not two sh blocks" >&2; exit 1; }

# One command in the root, with /proc, /sys, /dev and a private /run
# mounted in a mount namespace of its own (they vanish with it).
in_root() {
  # shellcheck disable=SC2016  # expanded by the inner bash
  unshare --mount --propagation private -- bash -c '
    set -e
    root=$1; shift
    # The root a mount point, as on a machine (ip netns needs it).
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs tmpfs "$root/run"
    # A fresh /tmp for each command, but not over a clone that lives there.
    [[ $2 == /tmp/* ]] || mount -t tmpfs tmpfs "$root/tmp"
    exec chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
      LANG=C.UTF-8 TERM=dumb bash -c "cd \"\$0\" && $1" "$2"' in_root "$ROOT" "$1" "$INTO"
}

status=0
for i in 0 1; do
  log=$WORK/command$((i + 1)).log
  say "command $((i + 1)): ${commands[i]}"
  t0=$SECONDS rc=0
  in_root "${commands[i]}" >"$log" 2>&1 || rc=$?
  say "command $((i + 1)) exited $rc after $((SECONDS - t0)) s (log: $log)"
  # The quick start ends in a sweep of this machine, whose exit 2 is its
  # verdict (unhealthy cores: a VM's host can make one vCPU slow for
  # minutes), not a failed set-up -- when it wrote its report.
  if ((i == 0 && rc == 2)) && [[ -s $ROOT$INTO/corenoise-report.html ]]; then
    say "command 1: exit 2 is the sweep's verdict on this machine (unhealthy cores); its report was written"
    rc=0
  fi
  if ((rc != 0)); then
    status=1
    tail -n 40 "$log"
  fi
  # ctest's own summary, and the failed tests with the reason each gave.
  if grep -q "tests passed" "$log"; then
    grep -E "tests passed|^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Not Run|Subprocess)" "$log" || true
  fi
done
say "total $((SECONDS - start)) s: $([[ $status == 0 ]] && echo PASS || echo FAIL)"
((KEEP)) || say "(run with --keep to keep the root and its logs)"
exit "$status"
