#!/usr/bin/env bash
# Any MPICH-ABI library, found at run time (collector/job/rank/program_mpi.h):
# the MPICH-family in-job library measures a program of Intel MPI, MVAPICH
# or Cray MPICH (libmpi.so.12) where Debian's libmpich.so.12 is absent, and
# loads no second MPI into it.
#
#   mpich_abi_test.sh CORENOISE JOB_LIBRARY MAPS_APP MPIEXEC
#
# 1. The library names no MPI library, and leaves nothing undefined but
#    the MPI_ and PMPI_ functions (what -z defs checks for the others).
# 2. A copy of Debian's MPICH renamed libmpi.so.12 (its soname too) in a
#    folder of its own stands in for Intel MPI's, and a copy of MAPS_APP is
#    made its program. In a mount namespace where Debian's libmpich.so.12
#    is an empty file, the unchanged MAPS_APP cannot start (the hiding
#    works); under `corenoise job` the copy runs, the report names the
#    renamed library and its version, and each rank mapped that library
#    and no other MPI; `corenoise sweep` runs with it on LD_LIBRARY_PATH.
# Needs root (unshare, mount) and patchelf.
set -euo pipefail
corenoise=$1 job_library=$2 app=$3 mpiexec=$4
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

needed=$(readelf -d "$job_library" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
if grep -E '^lib(mpi|mpich)[._]' <<<"$needed"; then fail "$job_library names an MPI library"; fi
# Undefined, not weak, and without a version: no library it names defines them.
stray=$(nm -D --undefined-only "$job_library" | awk '$1 == "U" && $2 !~ /@/ && $2 !~ /^P?MPI_/ { print $2 }')
[ -z "$stray" ] || fail "$job_library leaves undefined: $stray"
# MPI bound at a call only (a PLT slot), never at load: a variable or a
# function's address taken would stop a process without MPI from starting.
at_load=$(readelf -rW "$job_library" | awk '$3 != "R_X86_64_JUMP_SLOT" && $5 ~ /^P?MPI_/ { print $5 }')
[ -z "$at_load" ] || fail "$job_library binds at load: $at_load"
# By name from its folder, as `corenoise job` preloads it where its path
# holds a space (LD_PRELOAD splits at spaces and has no escape).
LD_PRELOAD="${job_library##*/}" LD_LIBRARY_PATH="${job_library%/*}" /bin/true ||
  fail "a program without MPI does not start with $job_library"
echo "ok: $job_library names no MPI library; undefined: $(nm -D --undefined-only "$job_library" | grep -cE ' P?MPI_') MPI_ and PMPI_ functions only"

work=$(mktemp -d "${TMPDIR:-/tmp}/corenoise-abi.XXXXXX")
trap 'rm -rf "$work"' EXIT
debian=$(ldd "$app" | awk '$1 == "libmpich.so.12" { print $3 }')
[ -n "$debian" ] || fail "$app is not linked against libmpich.so.12"
debian=$(readlink -f "$debian")
mkdir "$work/impi"
cp "$debian" "$work/impi/libmpi.so.12"
patchelf --set-soname libmpi.so.12 "$work/impi/libmpi.so.12"
cp "$app" "$work/app"
# Two calls: Debian 12's patchelf (0.14) misreads the two options in one.
patchelf --replace-needed libmpich.so.12 libmpi.so.12 "$work/app"
patchelf --set-rpath "$work/impi" "$work/app"
: >"$work/empty"

# In the namespace: hide Debian's MPICH, then the three runs.
export work corenoise mpiexec app debian
# shellcheck disable=SC2016 # expanded by the inner shell, from the exports
unshare --mount --propagation private bash -euo pipefail -c '
  mount --bind "$work/empty" "$debian"
  if "$app" >"$work/unchanged.out" 2>&1; then
    echo "FAIL: the unchanged program started with $debian hidden" >&2; exit 1
  fi
  grep -q "libmpich.so.12" "$work/unchanged.out" || { cat "$work/unchanged.out" >&2; exit 1; }
  echo "ok: with $debian hidden, the unchanged program does not start: $(head -n 1 "$work/unchanged.out")"
  timeout -k 5 120 "$mpiexec" -n 2 "$corenoise" job --json "$work/job.json" -- "$work/app" \
    >"$work/job.out" 2>"$work/job.err" || { cat "$work/job.out" "$work/job.err" >&2; exit 1; }
  # The sweep finds the library as a `module load` would show it.
  status=0
  LD_LIBRARY_PATH="$work/impi" timeout -k 5 120 "$mpiexec" -n 2 "$corenoise" sweep \
    --samples 3 --reps 4 --detour-window 0.005 --stream-bytes 8388608 \
    --json "$work/sweep.json" >"$work/sweep.out" 2>&1 || status=$?
  if [ "$status" != 0 ] && [ "$status" != 2 ]; then
    cat "$work/sweep.out" >&2; echo "FAIL: the sweep exited $status" >&2; exit 1
  fi
'
cat "$work/job.out" "$work/job.err"
library=$(jq -r .mpi_library "$work/job.json")
version=$(jq -r .mpi_library_version "$work/job.json")
[ "$library" = "$work/impi/libmpi.so.12" ] || fail "the report names $library, not $work/impi/libmpi.so.12"
[[ "$version" == MPICH\ Version:* ]] || fail "the report gives the version as '$version'"
[ "$(jq -r .ranks_reported "$work/job.json")" = 2 ] || fail "not both ranks reported"
grep -q "MPI: $work/impi/libmpi.so.12 (MPICH Version:" "$work/job.err" ||
  fail "the banner does not name the library"
for rank in 0 1; do
  maps=$(grep "^rank $rank maps: " "$work/job.out" | grep -E '/libmpi(ch)?\.so' || true)
  [ "$maps" = "rank $rank maps: $work/impi/libmpi.so.12" ] ||
    fail "rank $rank mapped: ${maps:-no MPI library}"
done
echo "ok: corenoise job measured $library ($version); each rank mapped it and no other MPI"
[ "$(jq -r .core_count "$work/sweep.json")" = 2 ] || fail "the sweep did not probe both cores"
echo "ok: corenoise sweep ran on it: $(tail -n 1 "$work/sweep.out")"
