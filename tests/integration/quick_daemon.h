// The daemon set-up shared by the daemon tests (behaviour, bad input,
// privileges):
// quick rounds back to back in a temporary directory, so that a stalled
// daemon shows as a round count that stops.
#pragma once

#include <string>
#include <vector>

#include "daemon_process.h"

namespace corenoise::testing {

inline std::string socket_path(const TempDir& dir) { return dir.path() + "/ctl.sock"; }

// `changes` as in merged_options().
inline std::vector<std::string> daemon_args(const TempDir& dir,
                                            const std::vector<std::string>& changes = {}) {
  return merged_options({{"--config", "/dev/null"},
                         {"--listen", "127.0.0.1:0"},
                         {"--socket", socket_path(dir)},
                         {"--state-dir", dir.path()},
                         {"--interval", "0.5"},
                         {"--busy-policy", "probe"},
                         {"--samples", "3"},
                         {"--reps", "8"},
                         {"--detour-window", "0.01"},
                         {"--stream-bytes", "8388608"}},
                        changes);
}

// Isolated rounds done (0 before the first); -1 if /metrics does not answer.
inline double rounds(int port) {
  const auto [status, text] = http_get(port, "/metrics");
  if (status != 200) return -1;
  return metric_value(text, "corenoise_rounds_total{mode=\"isolated\"}").value_or(0);
}

}  // namespace corenoise::testing
