// A timing test's measurement is one draw of the host it runs on, and a
// draw in which the host itself made the two vCPUs unequal says nothing
// about the noise the test injected.
//
// Seen on the 2-vCPU development VM (docs/validation.md, "The host"): the
// host runs a vCPU's matmul at one of two speeds 1.55x apart (1.56 or
// 2.3-2.5 ms for the probe's sample) and switches every few seconds, with
// nothing visible to the guest; for minutes at a time it also takes 20-35 %
// of both vCPUs' time. Against a 10-30 % injection either effect decides the
// ranking on its own, and CI's run then fails on the host, not on corenoise.
//
// So a test measures again while the host was unfair: up to kHostDraws
// draws, each rejected one printed with its figures. The judge reads only
// what the host did to the clean vCPU and to both vCPUs' intrinsic speed,
// never the verdicts the test asserts, and the test's assertions run on the
// last draw whatever the judge said of it: a product that misjudges a fair
// draw still fails, and so does one whose intrinsic speeds never agree.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "process.h"

namespace corenoise::testing {

// Twelve draws, and as many more as fit in 90 s: on 2026-12-02 two draws
// in three were unfair for minutes at a time, five in a row were seen
// (0.67^12 ≈ 0.8 %), and a full ctest run met a spell of 16-24 % on both
// vCPUs that outlasted twelve draws of 1.4 s. At most 60 draws.
inline constexpr int kHostDraws = 12;
inline constexpr double kHostSeconds = 90;
inline constexpr int kMostHostDraws = 60;
// Both vCPUs' intrinsic matmul within 10 % of each other: fair draws here
// measure 0.96-1.04 against their mean, unfair ones 0.78 and 1.22.
inline constexpr double kFairMatmulRatio = 1.10;
// The quieter vCPU losing at most 15 % of its time to the host: 3-13 % on
// this VM's ordinary days, 23-30 % on its noisy ones.
inline constexpr double kQuietNoiseRatio = 0.15;

// Why the host was unfair in a draw, or nothing when it was fair.
inline std::optional<std::string> unfair_host(double matmul_min, double matmul_max,
                                              double quieter_noise_ratio) {
  char text[200];
  if (matmul_min > 0 && matmul_max / matmul_min > kFairMatmulRatio) {
    std::snprintf(text, sizeof text, "the vCPUs' intrinsic matmul differed %.2fx (%.3f, %.3f ms)",
                  matmul_max / matmul_min, matmul_min * 1e3, matmul_max * 1e3);
    return text;
  }
  if (quieter_noise_ratio > kQuietNoiseRatio) {
    std::snprintf(text, sizeof text, "the host took %.1f %% of the quieter vCPU's time",
                  quieter_noise_ratio * 100);
    return text;
  }
  return std::nullopt;
}

// A `corenoise probe --json` document of the probed CPUs.
inline std::optional<std::string> unfair_host_in_probe(const nlohmann::json& doc) {
  double lo = 0, hi = 0, quieter = 1;
  bool first = true;
  for (const nlohmann::json& cpu : doc.at("cpus")) {
    if (!cpu.contains("matmul") || !cpu.contains("detour")) continue;
    const double m = cpu["matmul"]["seconds"].get<double>();
    lo = first ? m : std::min(lo, m);
    hi = first ? m : std::max(hi, m);
    quieter = std::min(quieter, cpu["detour"]["noise_ratio"].get<double>());
    first = false;
  }
  return unfair_host(lo, hi, quieter);
}

// The noise ratios alone, beside an injection of `share` of a vCPU's time:
// unfair where the host (or the VM's own services: its agent's threads and
// kdamond, named by --trace, land on the clean vCPU while the injector
// holds the other) took more than kHostMargin more of a clean
// vCPU (the most of any) than of the injected one, less what was injected.
// The noisy verdict needs the excess's lower bound to clear 5 points, and
// that bound sits 3-4 points under the figure here ("11.0 points above the
// node's floor (95% interval 7.7-14.2 points)"): a 10 % injection is found
// reliably only where the host took about as much of both vCPUs, and is
// expected to be missed once it took 2.5 points more of the clean one. The
// draws in between are kept, and a test takes several rounds of them.
// Seen: clean CPU 0 at 15.0 % beside CPU 1 at 14.8 % with 10 % injected;
// and CI's run of 2026-12-02, in which three tests missed 10 % in every
// round of a spell that a 5-point margin called fair.
inline constexpr double kHostMargin = 0.025;
inline std::optional<std::string> unfair_noise_beside_injection(double clean_most,
                                                                double injected_noise,
                                                                double share) {
  const double host_on_injected = injected_noise - share;
  if (host_on_injected < 0 || clean_most - host_on_injected <= kHostMargin) return std::nullopt;
  char text[200];
  std::snprintf(text, sizeof text,
                "the host took %.1f %% of a clean vCPU and about %.1f %% of the injected one",
                clean_most * 100, host_on_injected * 100);
  return text;
}

// The same from a `corenoise probe --json` document, after
// unfair_host_in_probe's judgement (the quieter vCPU, the intrinsic
// speeds).
inline std::optional<std::string> unfair_host_beside_injection(const nlohmann::json& doc,
                                                               unsigned injected, double share) {
  if (auto why = unfair_host_in_probe(doc)) return why;
  double injected_noise = -1, clean_most = 0;
  for (const nlohmann::json& cpu : doc.at("cpus")) {
    if (!cpu.contains("detour")) continue;
    const double noise = cpu["detour"]["noise_ratio"].get<double>();
    if (cpu["cpu"].get<unsigned>() == injected)
      injected_noise = noise;
    else
      clean_most = std::max(clean_most, noise);
  }
  if (injected_noise < 0) return std::nullopt;
  return unfair_noise_beside_injection(clean_most, injected_noise, share);
}

// One round of a daemon, from its noise ratios of the clean CPU and of the
// one beside an injection of `share`: as a probe's draw is judged.
inline std::optional<std::string> unfair_round(double clean, double injected, double share) {
  // No matmul figures in a round's noise ratios: the quieter vCPU alone.
  if (auto why = unfair_host(0, 0, std::min(clean, injected))) return why;
  return unfair_noise_beside_injection(clean, injected, share);
}

// A `corenoise sweep --json` report: the cluster's quantiles over its
// cores, whose min and max are the two vCPUs' figures on a 2-core node.
inline std::optional<std::string> unfair_host_in_sweep(const nlohmann::json& report) {
  double lo = 0, hi = 0, quieter = 0;
  for (const nlohmann::json& q : report.at("cluster").at("quantiles")) {
    if (q["metric"] == "matmul_seconds") lo = q["min"], hi = q["max"];
    if (q["metric"] == "noise_ratio") quieter = q["min"];
  }
  return unfair_host(lo, hi, quieter);
}

// A `corenoise job --json` report of ranks that were given known work:
// `work(rank)` is its multiple of the others' (0 where it is not
// comparable, as when a script's overhead does not scale with it). The
// vCPUs' speeds are their ranks' on-CPU compute seconds per unit of work.
// The hypervisor's steal is unfair where its spread over the ranks reaches
// the job's 5 % floor (docs/job.md): steal alone could then name a rank.
// A test that asserts that no rank is named passes `max_ratio`
// kJobFloorRatio: the host alone then stays under the job's 5 % floor; one
// whose own imbalance takes part of that floor passes less
// (kJobWarmUpRatio).
inline constexpr double kJobFloorRatio = 1.04;
// The story's warm-up test: its extra step is about 1.4 % of the job, so
// the host may take at most the rest of the whole job's 5 % floor, with a
// margin (at 4 % a fair draw named rank 1 with 180 ms of more-work over the
// job: 55 ms of warm-up and 125 ms of the host's).
inline constexpr double kJobWarmUpRatio = 1.03;
template <class Work>
std::optional<std::string> unfair_host_in_job(const nlohmann::json& report, Work work,
                                              double max_ratio = kFairMatmulRatio) {
  std::map<std::string, std::pair<double, double>> per_cpus;  // cpus: seconds, work
  std::vector<double> steal, compute;
  for (const nlohmann::json& rank : report.at("ranks")) {
    steal.push_back(rank["counters"]["steal_seconds"].get<double>());
    compute.push_back(rank["compute_seconds"].get<double>());
    const double units = work(rank["rank"].get<int>());
    if (units <= 0) continue;
    auto& [seconds, total] = per_cpus[rank["cpus"].get<std::string>()];
    seconds += rank["compute_cpu_seconds"].get<double>();
    total += units;
  }
  if (steal.empty()) return std::nullopt;
  std::sort(compute.begin(), compute.end());
  const double floor = 0.05 * compute[(compute.size() - 1) / 2];
  const auto [least, most] = std::minmax_element(steal.begin(), steal.end());
  if (*most - *least > floor) {
    char text[200];
    std::snprintf(
        text, sizeof text,
        "the hypervisor stole %.3f s from one rank and %.3f s from another (floor %.3f s)", *most,
        *least, floor);
    return text;
  }
  double lo = 0, hi = 0;
  for (const auto& [cpus, figures] : per_cpus) {
    const double per_unit = figures.first / figures.second;
    lo = lo == 0 ? per_unit : std::min(lo, per_unit);
    hi = std::max(hi, per_unit);
  }
  if (lo > 0 && hi / lo > max_ratio) {
    char text[200];
    std::snprintf(text, sizeof text,
                  "the vCPUs ran the same work %.2fx apart (%.3f, %.3f s of CPU per unit)", hi / lo,
                  lo, hi);
    return text;
  }
  return std::nullopt;
}

// Draws `measure()` until `judge` finds the host fair in one, at least
// kHostDraws times and for kHostSeconds (at most kMostHostDraws), and
// returns the last draw.
template <class Measure, class Judge>
auto draw_on_a_fair_host(const char* what, Measure measure, Judge judge) {
  const auto start = std::chrono::steady_clock::now();
  for (int n = 1;; ++n) {
    auto draw = measure();
    const std::optional<std::string> why = judge(draw);
    if (!why) return draw;
    const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
    const bool last = n >= kMostHostDraws || (n >= kHostDraws && spent.count() >= kHostSeconds);
    std::fprintf(stderr, "%s: draw %d (%.0f s): %s; %s\n", what, n, spent.count(), why->c_str(),
                 last ? "judging this one" : "measuring again");
    if (last) return draw;
  }
}

// Before a test whose measurement cannot be drawn again (a daemon's
// rounds over time, asserted round by round): probes CPUs 0 and 1 with
// `corenoise` (a shell_word) until a round finds the host fair, the clean
// vCPU losing at most kHostMargin more than the other, as
// draw_on_a_fair_host does, and then lets the test run whatever the last
// round found.
inline void wait_for_a_fair_host(const std::string& corenoise) {
  draw_on_a_fair_host(
      "host before the test", [&] { return run_command(corenoise + " probe --cpus 0,1 --json -"); },
      [](const CommandResult& r) -> std::optional<std::string> {
        if (r.exit_code != 0 && r.exit_code != 2) return std::nullopt;  // the test will say
        return unfair_host_beside_injection(nlohmann::json::parse(r.out), 1, 0.0);
      });
}

}  // namespace corenoise::testing
