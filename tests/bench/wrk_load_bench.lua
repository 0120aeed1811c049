-- wrk script for wrk_load_bench.sh: a paced scrape of /metrics. wrk has no
-- rate option; each connection waits WRK_DELAY_MS before every request, so
-- C connections make at most C * 1000 / WRK_DELAY_MS requests a second.
local delay_ms = tonumber(os.getenv("WRK_DELAY_MS") or "12")
local non2xx = 0

function delay()
  return delay_ms
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
  end
end

-- One line the shell script parses: requests, seconds, the rate, non-2xx
-- responses (counted by this thread: wrk -t1) and socket errors.
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRK requests=%d seconds=%.3f rate=%.1f non2xx=%d connect=%d read=%d write=%d timeout=%d status=%d p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    non2xx, e.connect, e.read, e.write, e.timeout, e.status,
    latency:percentile(50) / 1e3, latency:percentile(99) / 1e3, latency.max / 1e3))
end
