// Repeatability of the matmul and clock probes on a quiet core: the spread
// (MAD / median) of their samples, at the default settings. A probe whose
// samples scatter by more than the effect it must detect is useless.
//
//   build/tests/bench/repeatability_bench [CPU] [SAMPLES] [ROUNDS]
#include <cstdlib>

#include "bench_util.h"
#include "probe/stats.h"

int main(int argc, char** argv) {
  using namespace corenoise;
  const unsigned cpu = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 1;
  const std::string samples = argc > 2 ? argv[2] : "31";
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
  const ProbeSettings settings = bench::settings_with({{"probes", "matmul,clock"}, {"samples", samples}});

  std::printf("repeatability on cpu %u: %s samples per round, %d rounds, f64 n=%d reps=%d\n", cpu,
              samples.c_str(), rounds, settings.matmul_size, settings.reps);
  std::printf("%5s %14s %12s %12s %12s\n", "round", "matmul_ms", "matmul_MAD%", "clock_GHz",
              "clock_MAD%");
  std::vector<double> matmul_spreads, clock_spreads, matmul_medians;
  for (int r = 0; r < rounds; ++r) {
    const RoundSamples round = bench::run_round(settings, {cpu});
    const CpuSamples& s = round.cpus.at(0);
    if (!s.error.empty()) {
      std::fprintf(stderr, "cpu %u: %s\n", cpu, s.error.c_str());
      return 1;
    }
    const double mm = stats::median(s.matmul_seconds), ck = stats::median(s.clock_hertz);
    const double mm_spread = stats::mad(s.matmul_seconds) / mm;
    const double ck_spread = stats::mad(s.clock_hertz) / ck;
    matmul_spreads.push_back(mm_spread);
    clock_spreads.push_back(ck_spread);
    matmul_medians.push_back(mm);
    std::printf("%5d %14.4f %12.3f %12.3f %12.3f\n", r, mm * 1e3, mm_spread * 100, ck / 1e9,
                ck_spread * 100);
  }
  std::printf("median over rounds: matmul MAD/median %.3f %%, clock MAD/median %.3f %%, "
              "round-to-round spread of matmul medians %.3f %% (goal: <= 0.5 %%)\n",
              stats::median(matmul_spreads) * 100, stats::median(clock_spreads) * 100,
              stats::mad(matmul_medians) / stats::median(matmul_medians) * 100);
  return 0;
}
