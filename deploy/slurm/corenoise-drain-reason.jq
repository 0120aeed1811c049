# corenoise-drain-reason.jq: the unhealthy CPUs of a `corenoise status --json`
# reply (its "unhealthy" list: persistent states) or of a `corenoise probe
# --json -` document (its "cpus" whose state is unhealthy), as one line for a Slurm drain
# reason, at most $max characters:
#
#   corenoise: cpu 3 noisy (12% lost, preempted), cpu 7 throttled (clock -9%) (+2 more)
#
#   jq -r --argjson max 200 -f corenoise-drain-reason.jq < report.json
#
# The figures come from the cause lines (docs/verdicts.md; probe/analysis.cpp
# writes them); a cause this filter does not recognise leaves the state alone,
# never a wrong figure. CPUs keep the report's order (by CPU id), and those
# that do not fit are counted in "(+N more)".

# The first number matched by $re's group "p" in $text, rounded; null if none
# or not above zero (a figure of 0% says nothing).
def percent($text; $re):
  ([$text | capture($re) | .p | tonumber | round] | first) as $p
  | if $p != null and $p > 0 then $p else null end;

# Where a noisy core's time went: the largest share of the attribution.
def noise_source($cause):
  [$cause | scan("([0-9]+)% (preempted|steal|in interrupts|below the kernel)")
   | {share: (.[0] | tonumber), what: .[1]}]
  | if length == 0 then null
    else max_by(.share).what
         | {"preempted": "preempted", "steal": "steal", "in interrupts": "irqs",
            "below the kernel": "below kernel"}[.]
    end;

def detail:
  (.cause // "") as $c
  | if .state == "noisy" then
      [(percent($c; "loses (?<p>[0-9.]+)%") | if . then "\(.)% lost" else empty end),
       (noise_source($c) // empty)]
      | if length > 0 then join(", ") else null end
    elif .state == "throttled" then
      percent($c; "is (?<p>-?[0-9.]+)% below") | if . then "clock -\(.)%" else null end
    elif .state == "contended" then
      percent($c; "is (?<p>-?[0-9.]+)% below") | if . then "memory -\(.)%" else null end
    elif .state == "slow" then
      percent($c; "matmul (?<p>-?[0-9.]+)% slower") | if . then "matmul +\(.)%" else null end
    else null
    end;

# noisy, throttled, contended or slow (probe/analysis.h is_unhealthy()):
# never ok, transient (one bad round, or a suspect the re-measurement did
# not bear out) or skipped.
def is_unhealthy: IN("noisy", "throttled", "contended", "slow");

# A status reply's "unhealthy" list holds corenoised's persistent states;
# its "transient" list, and each entry's round_state, are never drained on.
def unhealthy:
  if has("unhealthy") then [.unhealthy[] | select(.state | is_unhealthy)]
  else [.cpus[]? | select(.state | is_unhealthy)]
  end;

def line($items; $k):
  "corenoise: " + ($items[:$k] | join(", "))
  + (if $k < ($items | length) then " (+\(($items | length) - $k) more)" else "" end);

[unhealthy[] | "cpu \(.cpu) \(.state)" + (detail | if . then " (\(.))" else "" end)] as $items
| if ($items | length) == 0 then "corenoise: unhealthy CPUs (no details in the report)"
  else
    # As many CPUs as fit, the rest counted; if not even one fits, cut it.
    ([range($items | length; 0; -1) | line($items; .) | select(length <= $max)] | first)
    // (line($items; 1) | .[:$max])
  end
