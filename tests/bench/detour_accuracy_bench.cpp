// Detour accuracy: a SCHED_FIFO thread busy 1 ms out of every 10 ms on one
// CPU must read as about 10 points more noise than that CPU's floor,
// measured just before, while the other CPU stays at its floor.
//
//   build/tests/bench/detour_accuracy_bench [NOISY_CPU] [ROUNDS] [BUSY_MS] [PERIOD_MS]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "bench_util.h"
#include "probe/stats.h"

namespace {

using namespace corenoise;

struct Figures {
  std::vector<double> noise;  // per round
  std::vector<double> max_seconds;
  std::vector<double> preempted;  // share of the window other threads took
};

void measure(const ProbeSettings& settings, const std::vector<unsigned>& cpus, int rounds,
             std::vector<Figures>& out) {
  for (int r = 0; r < rounds; ++r) {
    const RoundSamples round = bench::run_round(settings, cpus);
    for (std::size_t i = 0; i < cpus.size(); ++i) {
      DetourResult merged;
      for (const auto& d : round.cpus[i].detours) merged.merge(d);
      out[i].noise.push_back(merged.noise_ratio());
      out[i].max_seconds.push_back(merged.max_seconds);
      out[i].preempted.push_back(merged.preempted_seconds.value_or(0) / merged.window_seconds);
    }
  }
}

pid_t start_injector(unsigned cpu, const std::string& busy_ms, const std::string& period_ms) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    const std::string cpu_text = std::to_string(cpu);
    execl(NOISE_INJECTOR_BIN, NOISE_INJECTOR_BIN, "--cpu", cpu_text.c_str(), "--busy-ms",
          busy_ms.c_str(), "--period-ms", period_ms.c_str(), "--seconds", "600", nullptr);
    _exit(127);
  }
  close(fds[1]);
  char line[64] = {};
  const ssize_t n = read(fds[0], line, sizeof line - 1);
  std::printf("injector on cpu %u: %s", cpu, n > 0 ? line : "(no answer)\n");
  close(fds[0]);
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned noisy = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 1;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::string busy_ms = argc > 3 ? argv[3] : "1";
  const std::string period_ms = argc > 4 ? argv[4] : "10";
  const unsigned quiet = noisy == 0 ? 1 : 0;
  const std::vector<unsigned> cpus{quiet, noisy};
  const ProbeSettings settings = bench::settings_with({{"probes", "detour"}});
  const double duty = std::stod(busy_ms) / std::stod(period_ms);

  std::vector<Figures> floor(2), injected(2);
  measure(settings, cpus, rounds, floor);
  const pid_t injector = start_injector(noisy, busy_ms, period_ms);
  measure(settings, cpus, rounds, injected);
  kill(injector, SIGKILL);
  waitpid(injector, nullptr, 0);

  std::printf("detour probe, default settings (%d x %.3f s windows per round), %d rounds each\n",
              settings.samples, settings.detour_window_seconds, rounds);
  std::printf("%4s %10s %12s %14s %16s %10s %15s\n", "cpu", "floor%", "floor_max_us", "injected%",
              "injected_max_us", "delta_pts", "preempted_pts");
  for (std::size_t i = 0; i < 2; ++i) {
    const double f = stats::median(floor[i].noise), n = stats::median(injected[i].noise);
    std::printf("%4u %10.2f %12.0f %14.2f %16.0f %10.2f %15.2f\n", cpus[i], f * 100,
                stats::median(floor[i].max_seconds) * 1e6, n * 100,
                stats::median(injected[i].max_seconds) * 1e6, (n - f) * 100,
                (stats::median(injected[i].preempted) - stats::median(floor[i].preempted)) * 100);
  }
  std::printf(
      "injected duty cycle %.1f %%: goal delta on cpu %u within 1.5 points of it, "
      "cpu %u unchanged\n",
      duty * 100, noisy, quiet);
  return 0;
}
