#!/bin/bash
# Usage: install_prefix_test.sh BUILD_DIR
#
# Installs the build under a prefix other than the package's (DESTDIR, so
# nothing outside a temporary directory is touched) and checks that the
# installed corenoise finds the MPI plugins installed with it, by the path
# relative to itself, and no others: a sweep as a singleton loads one of
# <prefix>/lib*/corenoise/libcorenoise-mpi-*.so.
set -euo pipefail
(($# == 1)) || { echo "usage: $0 BUILD_DIR" >&2; exit 1; }
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

prefix=/opt/corenoise-prefix-test
DESTDIR=$work cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log" >&2; fail "cmake --install failed"; }
root=$work$prefix
[[ -x $root/bin/corenoise ]] || fail "no $root/bin/corenoise"
mapfile -t plugins < <(find "$root" -name 'libcorenoise-mpi-*.so' | sort)
((${#plugins[@]} > 0)) || fail "no MPI plugin installed under $root"
printf 'installed: %s\n' "${plugins[@]#"$work"}"

rc=0
env -u CORENOISE_MPI_PLUGIN_DIR LD_DEBUG=files "$root/bin/corenoise" sweep --samples 3 --reps 4 \
  --detour-window 0.005 --stream-bytes 8388608 --quiet >"$work/sweep.log" 2>&1 || rc=$?
[[ $rc == 0 || $rc == 2 ]] || { tail -20 "$work/sweep.log" >&2; fail "sweep exited $rc"; }
loaded=$(grep -o 'file=[^ ]*libcorenoise-mpi-[a-z]*\.so' "$work/sweep.log" | sort -u | sed 's/^file=//')
echo "loaded: ${loaded#"$work"}"
[[ -n $loaded ]] || fail "no plugin loaded"
while read -r path; do
  [[ $path == "$root"/* ]] || fail "loaded $path, not one installed under $root"
done <<<"$loaded"
echo "PASS: $prefix/bin/corenoise loads its own plugins"
