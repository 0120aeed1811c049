#!/bin/sh
# How long headless Chromium takes to draw the report page at full size: a
# sweep of 1,000 nodes × 128 cores (--full cells) and a job of 3,840 ranks ×
# 1,000 lateness columns (3.84 M cells), both written by
# tests/tools/render_sample_report. Prints figures; never fails on a timing.
#
#   report_page_bench.sh RENDER_SAMPLE_REPORT [RUNS [JOB_REDUCTION_SIM]]
#                                                          (ninja report_page_bench)
#
# With JOB_REDUCTION_SIM (tests/bench/job_reduction_sim), also the pages
# `corenoise job` writes for simulated jobs of 3,840 and 100,000 ranks
# above --full: every node's row and the ranks named (docs/scaling.md).
#
# Per run: the page's own figures from its <body> (report.js): parse = the
# JSON.parse of the embedded report, script = the whole script (parse and
# drawing), render = from navigation start to the script's end (reading and
# parsing the HTML included); and the wall time of the whole Chromium
# process (start-up and --dump-dom of the page included), beside that of an
# empty page for the start-up alone. $CORENOISE_CHROMIUM names another
# browser binary.
set -eu

render=${1:?usage: report_page_bench.sh RENDER_SAMPLE_REPORT [RUNS [JOB_REDUCTION_SIM]]}
runs=${2:-3}
sim=${3:-}
chromium=${CORENOISE_CHROMIUM:-/usr/bin/chromium}
dir=$(mktemp -d /tmp/corenoise-page-bench-XXXXXX)
trap 'rm -rf "$dir"' EXIT

"$render" "$dir/sweep.html" 1000 128
"$render" --job "$dir/job.html" 3840 1000
printf '<!DOCTYPE html><title>empty</title><body></body>\n' >"$dir/empty.html"
pages="empty sweep job"
if [ -n "$sim" ]; then
  JOB_SIM_PAGES=$dir "$sim" 3840 100000 >/dev/null
  pages="$pages job-3840 job-100000"
fi

now() { date +%s.%N; }

# One run of Chromium on a page: prints "wall_s rendered parse_ms script_ms render_ms".
draw() {
  profile="$dir/profile"
  rm -rf "$profile"
  start=$(now)
  "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --dump-dom "file://$1" >"$dir/dom" 2>/dev/null || true
  end=$(now)
  body=$(grep -o -m1 '<body[^>]*>' "$dir/dom" || true)
  # One word per figure ("-" for none), so that the caller can split them.
  field() {
    value=$(printf '%s' "$body" | sed -n "s/.* $1=\"\\([^\"]*\\)\".*/\\1/p" | tr ' ' '_')
    printf '%s' "${value:--}"
  }
  printf '%s %s %s %s %s\n' "$(awk "BEGIN { printf \"%.2f\", $end - $start }")" \
    "$(field data-rendered)" "$(field data-parse-ms)" "$(field data-script-ms)" "$(field data-render-ms)"
}

echo "chromium: $("$chromium" --version 2>/dev/null | head -1)"
echo "cpus: $(nproc), load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-36s %4s %8s %10s %8s %9s %9s\n' page run wall_s rendered parse_ms script_ms render_ms
for page in $pages; do
  case $page in
    job-*) label="job ${page#job-} ranks (simulated), $(($(stat -c %s "$dir/$page.html") / 1000000)) MB" ;;
    empty) label="empty page (start-up only)" ;;
    sweep) label="sweep 1000 x 128, $(($(stat -c %s "$dir/sweep.html") / 1000000)) MB" ;;
    job) label="job 3840 x 1000, $(($(stat -c %s "$dir/job.html") / 1000000)) MB" ;;
  esac
  i=1
  while [ "$i" -le "$runs" ]; do
    set -- $(draw "$dir/$page.html")
    printf '%-36s %4s %8s %10s %8s %9s %9s\n' "$label" "$i" "$1" "$2" "$3" "$4" "$5"
    i=$((i + 1))
  done
done
