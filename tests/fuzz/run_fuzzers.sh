#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (a build directory of
# their own, configured on first use) and runs each for N seconds on a copy
# of its seed corpus, tests/fuzz/corpus/TARGET: the committed corpus is never
# written to. Prints per target the executions, exec/s, coverage (libFuzzer's
# cov: edges and ft: features) and the corpus size at the end.
#
#   tests/fuzz/run_fuzzers.sh [--seconds N] [--build-dir DIR] [--jobs J] [TARGET...]
#
# N: seconds per target (default 60). DIR: the clang build (default
# build-fuzz in the source tree). J: compile jobs, and targets fuzzed at
# once (default: the number of CPUs). TARGET: a subset (default: every
# folder of tests/fuzz/corpus).
#
# Exit 0 when every target ran its time without a finding; 1 naming each
# target that crashed, leaked, timed out or broke an invariant (its input is
# kept and the path printed, to replay with `DIR/tests/fuzz/fuzz_TARGET FILE`);
# 2 for bad usage or a failed build.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=60
build_dir="$root/build-fuzz"
parallel=$(nproc)
targets=()

usage() { sed -n '8,13p' "$0" | sed 's/^# *//' >&2; exit 2; }
while (($#)); do
  case "$1" in
    --seconds) seconds=${2:?}; shift 2 ;;
    --build-dir) build_dir=${2:?}; shift 2 ;;
    --jobs) parallel=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "run_fuzzers.sh: unknown option $1" >&2; usage ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "run_fuzzers.sh: --seconds needs a whole number > 0" >&2; exit 2; }
if ((${#targets[@]} == 0)); then
  for dir in "$here"/corpus/*/; do targets+=("$(basename "$dir")"); done
fi

# ---- build ------------------------------------------------------------------
# Configure only when the directory is not already a fuzz build: configuring
# this project takes a while, and cmake --build re-runs it when a
# CMakeLists.txt changes anyway.
if ! grep -qs '^CORENOISE_FUZZ:BOOL=ON$' "$build_dir/CMakeCache.txt"; then
  mkdir -p "$build_dir"
  configure_log="$build_dir/configure-fuzz.log"
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  # ccache where it is installed, as deploy/dev-setup.sh does.
  command -v ccache >/dev/null &&
    generator+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # The fuzz targets pick their own sanitizers (tests/fuzz/CMakeLists.txt),
  # whatever the project-wide CORENOISE_SANITIZE of the calling build.
  cmake -S "$root" -B "$build_dir" "${generator[@]}" \
    -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DCORENOISE_SANITIZE= \
    -DCORENOISE_FUZZ=ON -DCORENOISE_BUILD_BENCHMARKS=OFF >"$configure_log" 2>&1 || {
    cat "$configure_log" >&2
    echo "run_fuzzers.sh: configuring $build_dir with clang failed" >&2
    exit 2
  }
fi
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
cmake --build "$build_dir" --target corenoise_fuzzers -j "$parallel" || {
  echo "run_fuzzers.sh: building the fuzzers in $build_dir failed" >&2
  exit 2
}

# ---- run --------------------------------------------------------------------
for target in "${targets[@]}"; do
  [[ -x "$build_dir/tests/fuzz/fuzz_$target" && -d "$here/corpus/$target" ]] || {
    echo "run_fuzzers.sh: no fuzzer or no seed corpus for '$target'" >&2
    exit 2
  }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/corenoise-fuzz.XXXXXX")

# Runs one target in $work/TARGET and writes its table row to row (and, on
# a finding, what happened to failure).
run_target() {
  local target=$1 dir="$work/$1" status=0
  local log="$dir/fuzz.log"
  mkdir -p "$dir/corpus" "$dir/findings"
  cp -R "$here/corpus/$target/." "$dir/corpus/"
  # -timeout: no input of these parsers should take a second; ten means stuck.
  # Sanitizer options inherited from ctest (cmake/Sanitizers.cmake sends
  # reports to files) are dropped: a finding belongs in this target's log,
  # which is printed, and fails this script by itself.
  env -u ASAN_OPTIONS -u UBSAN_OPTIONS -u LSAN_OPTIONS \
    "$build_dir/tests/fuzz/fuzz_$target" "$dir/corpus" -max_total_time="$seconds" \
    -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$dir/findings/" \
    >"$log" 2>&1 || status=$?

  final_stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -n 1; }
  # The last progress line ("#N DONE cov: C ft: F corp: ...") has the coverage.
  local last cov ft files bytes result=ok
  last=$(grep -E '^#[0-9]+.*cov: [0-9]+' "$log" | tail -n 1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  files=$(find "$dir/corpus" -type f | wc -l)
  bytes=$(find "$dir/corpus" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
  if ((status != 0)) || ! grep -q '^Done [0-9]* runs' "$log"; then
    result="FAILED (exit $status)"
    {
      grep -E 'ERROR|invariant failed|SUMMARY|Test unit written|runtime error' "$log" | head -n 20
      echo "  full log: $log; inputs that failed: $dir/findings/"
    } >"$dir/failure"
  fi
  printf '%-16s %12s %9s %7s %7s %8s %10s  %s\n' "$target" \
    "$(final_stat number_of_executed_units)" "$(final_stat average_exec_per_sec)" \
    "${cov:-?}" "${ft:-?}" "$files" "$bytes" "$result" >"$dir/row"
}

# --jobs targets at a time (each fuzzer is one process on one core).
for target in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  run_target "$target" &
done
wait

failed=()
printf '%-16s %12s %9s %7s %7s %8s %10s  %s\n' \
  target executions exec/s cov ft corpus bytes result
for target in "${targets[@]}"; do
  cat "$work/$target/row" 2>/dev/null || echo "$target: did not run" >"$work/$target/failure"
  if [[ -e "$work/$target/failure" ]]; then
    cat "$work/$target/failure" >&2
    failed+=("$target")
  fi
done

if ((${#failed[@]})); then
  echo "run_fuzzers.sh: FAILED: ${failed[*]} (logs and inputs under $work)" >&2
  exit 1
fi
rm -rf "$work"
