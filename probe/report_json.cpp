#include "probe/report_json.h"

#include <cmath>
#include <string>

namespace corenoise {
namespace {

using nlohmann::json;

void put(json& j, const char* key, const std::optional<double>& value) {
  if (value) j[key] = *value;
}

json detour_json(const DetourResult& d) {
  json j = {{"noise_ratio", d.noise_ratio()},     {"count", d.count},
            {"total_seconds", d.total_seconds},   {"max_seconds", d.max_seconds},
            {"window_seconds", d.window_seconds}, {"threshold_seconds", d.threshold_seconds},
            {"preemptions", d.preemptions}};
  if (d.interrupts) j["interrupts"] = *d.interrupts;
  if (d.softirqs) j["softirqs"] = *d.softirqs;
  if (d.steal_seconds) j["steal_seconds"] = *d.steal_seconds;
  if (d.preempted_seconds) j["preempted_seconds"] = *d.preempted_seconds;
  json histogram = json::array();
  for (int i = 0; i < kDetourBuckets; ++i) {
    const double upper = detour_bucket_upper_seconds(i);
    histogram.push_back({{"le_seconds", std::isinf(upper) ? json("+Inf") : json(upper)},
                         {"count", d.histogram[i]}});
  }
  j["histogram"] = std::move(histogram);
  return j;
}

// The figures of one mode for one CPU: the probe objects and the verdict.
void put_figures(json& j, const CoreFigures& c) {
  j["state"] = to_string(c.state);
  j["cause"] = c.cause;
  if (c.state == CoreState::skipped) return;
  put(j, "expected_slowdown", c.expected_slowdown);
  put(j, "excess_noise", c.excess_noise);
  put(j, "noise_factor", c.noise_factor);
  put(j, "residual", c.residual);
  if (c.matmul_seconds) {
    json m = {{"seconds", *c.matmul_seconds}};
    put(m, "flops_per_second", c.matmul_flops_per_second);
    put(m, "slowdown", c.matmul_slowdown);
    put(m, "spread", c.matmul_spread);
    put(m, "sample_seconds", c.matmul_sample_seconds);
    j["matmul"] = std::move(m);
  }
  if (c.clock_hertz) {
    json m = {{"hertz", *c.clock_hertz}};
    put(m, "ratio", c.clock_ratio);
    put(m, "spread", c.clock_spread);
    j["clock"] = std::move(m);
  }
  if (c.detour) j["detour"] = detour_json(*c.detour);
  if (c.stream_bytes_per_second) {
    json m = {{"bytes_per_second", *c.stream_bytes_per_second}};
    put(m, "slowdown", c.stream_slowdown);
    j["stream"] = std::move(m);
  }
}

json settings_json(const NodeReport& r) {
  const ProbeSettings& s = r.settings;
  json probes = json::array();
  for (auto p : s.probes) probes.push_back(to_string(p));
  json modes = json::array();
  for (auto m : s.modes) modes.push_back(to_string(m));
  return {{"probes", probes},
          {"mode", s.modes.size() > 1 ? "both" : std::string(to_string(s.modes.front()))},
          {"modes", modes},
          {"samples", s.samples},
          {"matmul_size", s.matmul_size},
          {"dtype", to_string(s.dtype)},
          {"reps", s.reps},
          {"isa", to_string(r.isa)},
          {"detour_window_seconds", s.detour_window_seconds},
          {"detour_threshold_seconds", s.detour_threshold_seconds},
          {"stream_bytes", s.stream_bytes},
          {"thresholds",
           {{"throttled_clock_ratio", s.thresholds.throttled_clock_ratio},
            {"noisy_excess_noise", s.thresholds.noisy_excess_noise},
            {"slow_ratio", s.thresholds.slow_ratio},
            {"contended_stream_ratio", s.thresholds.contended_stream_ratio}}}};
}

json round_json(const ModeReport& m) {
  json refs = json::array();
  for (const auto& ref : m.verdicts.references) {
    json r = {{"kind", ref.kind}, {"cores", ref.cores}};
    put(r, "matmul_seconds", ref.matmul_seconds);
    put(r, "clock_hertz", ref.clock_hertz);
    put(r, "noise_ratio", ref.noise_ratio);
    put(r, "noise_floor", ref.noise_floor);
    put(r, "stream_bytes_per_second", ref.stream_bytes_per_second);
    refs.push_back(std::move(r));
  }
  return {{"mode", to_string(m.mode)},
          {"started_unix_seconds", m.started_unix_seconds},
          {"duration_seconds", m.duration_seconds},
          {"cancelled", m.cancelled},
          {"references", refs}};
}

}  // namespace

json to_json(const NodeReport& r) {
  json rounds = json::array();
  for (const auto& m : r.modes) rounds.push_back(round_json(m));

  json states = json::object();
  for (CoreState s : kAllCoreStates) states[std::string(to_string(s))] = r.count(s);

  json cpus = json::array();
  for (std::size_t i = 0; i < r.pus.size(); ++i) {
    const ProcessingUnit& pu = r.pus[i];
    json c = {{"cpu", pu.cpu},
              {"core", pu.core},
              {"package", pu.package},
              {"numa_node", pu.numa_node},
              {"kind", pu.kind}};
    if (!r.modes.empty()) {
      // The first mode's figures at top level; each later mode under its
      // own name. The overall state is the worst verdict of any mode.
      c["mode"] = to_string(r.modes.front().mode);
      put_figures(c, r.modes.front().verdicts.cores[i]);
      for (std::size_t m = 1; m < r.modes.size(); ++m) {
        json extra;
        put_figures(extra, r.modes[m].verdicts.cores[i]);
        c[std::string(to_string(r.modes[m].mode))] = std::move(extra);
      }
      const auto& deciding = r.modes[r.deciding_mode(i)].verdicts.cores[i];
      c["state"] = to_string(deciding.state);
      c["cause"] = deciding.cause;
    } else {
      c["state"] = to_string(CoreState::skipped);
      c["cause"] = pu.usable() ? "not probed" : pu.skip_reason;
    }
    cpus.push_back(std::move(c));
  }

  return {{"version", r.version},
          {"hostname", r.hostname},
          {"topology",
           {{"source", r.topology_source}, {"this_system", r.this_system}, {"pus", r.pus.size()}}},
          {"settings", settings_json(r)},
          {"rounds", rounds},
          {"summary", {{"pus", r.pus.size()}, {"states", states}, {"healthy", r.healthy()}}},
          {"cpus", cpus}};
}

}  // namespace corenoise
