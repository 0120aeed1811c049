// Repeatability of the matmul and clock probes on one core, at the default
// settings: the spread (MAD / median) of the raw timings within a round, and
// how much the figure corenoise reports (matmul: the fast decile of product
// times; clock: the median of per-sample fastest chunks) moves from round
// to round. A probe whose figure moves by more than the effect it must
// detect is useless.
//
//   build/tests/bench/repeatability_bench [CPU] [ROUNDS]
#include <cstdlib>

#include "bench_util.h"
#include "probe/analysis.h"
#include "probe/stats.h"

int main(int argc, char** argv) {
  using namespace corenoise;
  const unsigned cpu = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 1;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 11;
  const ProbeSettings settings = bench::settings_with({{"probes", "matmul,clock,detour"}});

  std::printf("repeatability on cpu %u: %d rounds of %d samples, f64 n=%d reps=%d\n", cpu, rounds,
              settings.samples, settings.matmul_size, settings.reps);
  std::printf("%5s %11s %13s %14s %10s %11s %8s\n", "round", "matmul_ms", "products_MAD%",
              "samples_MAD%", "clock_GHz", "clock_MAD%", "noise%");
  std::vector<double> product_spreads, sample_spreads, clock_spreads, matmul, clock;
  for (int r = 0; r < rounds; ++r) {
    const RoundSamples round = bench::run_round(settings, {cpu});
    const CpuSamples& s = round.cpus.at(0);
    if (!s.error.empty()) {
      std::fprintf(stderr, "cpu %u: %s\n", cpu, s.error.c_str());
      return 1;
    }
    const CoreFigures f = summarize(s, "default");
    const double sample_spread = stats::mad(s.matmul_seconds) / stats::median(s.matmul_seconds);
    product_spreads.push_back(*f.spread[ProbeKind::matmul]);
    sample_spreads.push_back(sample_spread);
    clock_spreads.push_back(*f.spread[ProbeKind::clock]);
    matmul.push_back(*f.figure[ProbeKind::matmul]);
    clock.push_back(*f.figure[ProbeKind::clock]);
    std::printf("%5d %11.4f %13.3f %14.3f %10.3f %11.3f %8.2f\n", r,
                *f.figure[ProbeKind::matmul] * 1e3, *f.spread[ProbeKind::matmul] * 100,
                sample_spread * 100, *f.figure[ProbeKind::clock] / 1e9,
                *f.spread[ProbeKind::clock] * 100, f.detour->noise_ratio() * 100);
  }
  std::printf(
      "medians over rounds: products MAD/median %.3f %%, samples MAD/median %.3f %%, "
      "clock MAD/median %.3f %%\n",
      stats::median(product_spreads) * 100, stats::median(sample_spreads) * 100,
      stats::median(clock_spreads) * 100);
  std::printf(
      "round-to-round MAD/median of the reported figures: matmul %.3f %%, clock %.3f %% "
      "(goal: <= 0.5 %%)\n",
      stats::mad(matmul) / stats::median(matmul) * 100,
      stats::mad(clock) / stats::median(clock) * 100);
  return 0;
}
