#!/bin/bash
# Usage: package_exposure.sh UNIT_FILE MAX
# Prints systemd-analyze's overall exposure of UNIT_FILE (offline, so no
# running systemd is needed) and fails if it is above MAX (0.0 to 10.0).
set -euo pipefail

if (($# != 2)); then
  echo "usage: $0 UNIT_FILE MAX" >&2
  exit 1
fi
unit="$1"
max="$2"
command -v systemd-analyze >/dev/null || {
  echo "FAIL: systemd-analyze not found (apt-get install systemd)" >&2
  exit 1
}

report="$(systemd-analyze security --offline=yes "$unit" 2>&1)" || {
  printf '%s\n' "$report" >&2
  echo "FAIL: systemd-analyze security could not assess $unit" >&2
  exit 1
}
# The last line reads "→ Overall exposure level for NAME: 1.5 OK 🙂".
exposure="$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9][0-9.]*\).*/\1/p' <<<"$report")"
if [[ -z "$exposure" ]]; then
  printf '%s\n' "$report" >&2
  echo "FAIL: no overall exposure level in systemd-analyze's output for $unit" >&2
  exit 1
fi
echo "exposure of $(basename "$unit"): $exposure (at most $max)"
if ! awk -v e="$exposure" -v m="$max" 'BEGIN { exit !(e <= m) }'; then
  # Show what costs exposure, so the failure says what to fix.
  grep '✗' <<<"$report" >&2 || true
  echo "FAIL: exposure $exposure of $unit is above $max" >&2
  exit 1
fi
