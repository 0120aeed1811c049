// Shared bits of the benchmarks: a probe round on chosen CPUs with chosen
// settings, straight from the library (no CLI parsing in the way).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "probe/runner.h"
#include "probe/settings.h"
#include "probe/topology.h"

namespace corenoise::bench {

inline ProbeSettings settings_with(
    const std::vector<std::pair<std::string, std::string>>& options) {
  ProbeSettings s;
  for (const auto& [name, value] : options) find_probe_option(name)->apply(s, value);
  return s;
}

inline RoundSamples run_round(const ProbeSettings& settings, const std::vector<unsigned>& cpus,
                              Mode mode = Mode::isolated) {
  const Runner runner(settings, Topology::load("native"));
  return runner.run(mode, cpus);
}

}  // namespace corenoise::bench
