// Known noise on a known CPU, for tests and benchmarks: a thread pinned to
// --cpu that is busy for --busy-ms out of every --period-ms, for --seconds,
// then exits by itself. With --fifo (the default when permitted) it runs
// SCHED_FIFO, so it preempts a normal-priority probe the moment it wakes,
// the way an interrupt thread or a real-time daemon would.
//
// Prints "ready <policy>" on stdout once running, so a caller can wait for it.
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "probe/pinning.h"

namespace {

long long now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

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
  if (busy_ms < 0 || period_ms <= 0 || busy_ms > period_ms || seconds <= 0) {
    usage("need 0 <= busy-ms <= period-ms and seconds > 0");
  }

  corenoise::pin_current_thread(static_cast<unsigned>(cpu));
  const char* policy = "normal";
  if (fifo) {
    sched_param param{};
    param.sched_priority = 50;
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0) policy = "fifo";
  }
  std::printf("ready %s\n", policy);
  std::fflush(stdout);

  const long long period = static_cast<long long>(period_ms * 1e6);
  const long long busy = static_cast<long long>(busy_ms * 1e6);
  const long long end = now_ns() + static_cast<long long>(seconds * 1e9);
  long long next = now_ns();
  volatile unsigned long long sink = 0;
  while (next < end) {
    const long long stop_busy = next + busy;
    while (now_ns() < stop_busy) sink = sink + 1;
    next += period;
    const timespec wake{static_cast<time_t>(next / 1000000000LL),
                        static_cast<long>(next % 1000000000LL)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nullptr);
  }
  return 0;
}
