// matmul_bench: our MatmulKernel against single-thread OpenBLAS at the same
// size on the same core, interleaved trial by trial so that clock drift and
// noise hit both alike. Prints figures; never fails on a timing.
//
// usage: matmul_bench [--cpu N] [--trials T] [--ms M]
//   --cpu     core to pin to (default 1)
//   --trials  timed trials per case; medians are reported (default 15)
//   --ms      target milliseconds per trial (default 20)
// OpenBLAS picks its kernels from OPENBLAS_CORETYPE (e.g. Haswell, SkylakeX)
// or, when unset, from CPUID; run it under each to compare with its best.
#include <cblas.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "probe/matmul.h"

extern "C" {
// Declared here: Debian's cblas.h does not always declare them.
void openblas_set_num_threads(int num_threads);
char* openblas_get_config(void);
char* openblas_get_corename(void);
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_of(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// OpenBLAS on inputs like MatmulKernel's: small values, no denormals (the
// values themselves do not change the timing of a dense GEMM).
template <class T>
struct Reference {
  int n;
  int reps;
  std::vector<T> a, b, c;
  Reference(int n_in, int reps_in)
      : n(n_in), reps(reps_in), a(std::size_t(n) * n), b(a.size()), c(a.size()) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i] = static_cast<T>(int(i * 7 % 17) - 8) / 8;
      b[i] = static_cast<T>(int(i * 5 % 13) - 6) / 8;
    }
  }
  void run() {
    for (int r = 0; r < reps; ++r) {
      if constexpr (sizeof(T) == 4) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(),
                    n, 0.0f, c.data(), n);
      } else {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(),
                    n, 0.0, c.data(), n);
      }
    }
  }
};

template <class F>
double time_once(F& f) {
  const auto t0 = Clock::now();
  f.run();
  return seconds_of(Clock::now() - t0);
}

template <class T>
void bench_case(corenoise::Isa isa, corenoise::Dtype dtype, int n, int trials, double ms) {
  // Calibrate reps so one trial lasts about `ms` at ~50 GFLOP/s.
  const double flops_per_run = 2.0 * n * n * n;
  const int reps = std::max(1, int(ms * 1e-3 * 50e9 / flops_per_run));
  corenoise::MatmulKernel ours(n, dtype, reps, isa);
  Reference<T> ref(n, reps);
  time_once(ours);  // warm caches, pages and clocks
  time_once(ref);
  std::vector<double> g_ours, g_ref;
  for (int t = 0; t < trials; ++t) {
    g_ours.push_back(flops_per_run * reps / time_once(ours) * 1e-9);
    g_ref.push_back(flops_per_run * reps / time_once(ref) * 1e-9);
  }
  const double mo = median(g_ours), mr = median(g_ref);
  std::printf("%-8s %-4s %5d %6d %10.1f %10.1f %7.2f\n",
              std::string(corenoise::to_string(isa)).c_str(),
              std::string(corenoise::to_string(dtype)).c_str(), n, reps, mo, mr, mo / mr);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int cpu = 1, trials = 15;
  double ms = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--cpu")) {
      cpu = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--trials")) {
      trials = std::max(1, std::atoi(argv[i + 1]));
    } else if (!std::strcmp(argv[i], "--ms")) {
      ms = std::atof(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: %s [--cpu N] [--trials T] [--ms M]\n", argv[0]);
      return 1;
    }
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    std::perror("sched_setaffinity");
    return 1;
  }
  openblas_set_num_threads(1);
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::printf("cpu %d, trials %d, ~%g ms each; OPENBLAS_CORETYPE=%s\n", cpu, trials, ms,
              coretype ? coretype : "(unset)");
  std::printf("openblas: %s; core %s\n", openblas_get_config(), openblas_get_corename());
  std::printf("%-8s %-4s %5s %6s %10s %10s %7s\n", "isa", "type", "n", "reps", "ours GF/s",
              "oblas GF/s", "ratio");
  const corenoise::Isa isas[] = {corenoise::Isa::avx512, corenoise::Isa::avx2,
                                 corenoise::Isa::baseline};
  for (corenoise::Isa isa : isas) {
    if (!corenoise::isa_supported(isa)) continue;
    for (int n : {64, 128, 192, 256}) {
      bench_case<float>(isa, corenoise::Dtype::f32, n, trials, ms);
      bench_case<double>(isa, corenoise::Dtype::f64, n, trials, ms);
    }
  }
  return 0;
}
