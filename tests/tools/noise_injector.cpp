// Known noise on a known CPU, for tests and benchmarks: a thread pinned to
// --cpu that is busy for --busy-ms out of every --period-ms, for --seconds,
// then exits by itself. With --fifo (the default when permitted) it runs
// SCHED_FIFO, so it preempts a normal-priority probe the moment it wakes,
// the way an interrupt thread or a real-time daemon would.
//
// Prints "ready <policy>" on stdout once running, so a caller can wait for it.
// A thin wrapper over probe/noise_injection.h, the mechanism of
// `corenoise inject`, kept for its command line.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "probe/noise_injection.h"

namespace {

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "noise_injector: %s\nusage: noise_injector --cpu N [--busy-ms X] [--period-ms Y] "
               "[--seconds S] [--normal]\n",
               why);
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  int cpu = -1;
  double busy_ms = 1, period_ms = 10, seconds = 5;
  bool fifo = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> double {
      if (i + 1 >= argc) usage(("missing value for " + arg).c_str());
      char* end = nullptr;
      const double v = std::strtod(argv[++i], &end);
      if (*end != '\0') usage(("bad value for " + arg).c_str());
      return v;
    };
    if (arg == "--cpu")
      cpu = static_cast<int>(value());
    else if (arg == "--busy-ms")
      busy_ms = value();
    else if (arg == "--period-ms")
      period_ms = value();
    else if (arg == "--seconds")
      seconds = value();
    else if (arg == "--normal")
      fifo = false;
    else
      usage(("unknown option " + arg).c_str());
  }
  if (cpu < 0) usage("--cpu is required");
  if (busy_ms <= 0 || period_ms <= 0 || busy_ms > period_ms || seconds <= 0) {
    usage("need 0 < busy-ms <= period-ms and seconds > 0");
  }
  try {
    corenoise::InjectionPlan plan;
    plan.cpus = {static_cast<unsigned>(cpu)};
    plan.seconds = seconds;
    plan.pattern = corenoise::pattern_from_duty(busy_ms / period_ms, period_ms / 1e3);
    plan.fifo = fifo;
    corenoise::NoiseInjection injection(plan);
    std::printf("ready %s\n",
                injection.policy() == corenoise::SchedPolicy::fifo ? "fifo" : "normal");
    std::fflush(stdout);
    injection.join();
  } catch (const std::exception& e) {
    usage(e.what());
  }
  return 0;
}
