#include "collector/cli/inject_command.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <iostream>
#include <optional>

#include "collector/cli/command_line.h"
#include "collector/cli/exit_codes.h"
#include "probe/cpu_list.h"
#include "probe/pinning.h"
#include "probe/settings.h"

namespace corenoise {
namespace {

constexpr const char* kUsage = R"(Usage: corenoise inject --cpus LIST --seconds S [OPTIONS]

Runs known interference on the given CPUs for S seconds, then stops by
itself (or at once on SIGTERM or SIGINT), for self-tests and demonstrations
(see also corenoise selftest). Prints one line starting with "ready" on
stdout once every thread runs.

By default each listed CPU gets one pinned thread that is busy for a duty
cycle of every period and asleep in between: noise of a known size and
structure. It runs SCHED_FIFO (priority 50) where permitted, so it preempts
normal-priority work the moment it wakes, as an interrupt thread or a
real-time daemon would; otherwise normal priority, and the ready line says
which.

Exit status: 0 ran and stopped, 1 error or bad input.

Options:
  --cpus LIST               CPUs to inject on, e.g. 1 or 0-3,8 (required)
  --seconds S               how long to run (required)
  --duty RATIO              busy share of each period, above 0, at most 1
                            (default: 0.1)
  --period SECONDS          length of one period, 0.00001 to 10 (default: 0.01)
  --burst-hz HZ             the same pattern spelt as bursts: HZ per second ...
  --burst-length SECONDS    ... each this long (both or neither; not with
                            --duty or --period)
  --memory-hog              instead of busy loops, stream read+write over
                            256 MiB per CPU at normal priority: memory
                            contention for the other cores, not preemption
  --normal                  busy threads at normal priority even where
                            SCHED_FIFO is permitted
  --help                    this text
)";

double real_option(const std::string& name, const std::string& value, double lo, double hi,
                   const char* what) {
  try {
    return parse_real_value(value, lo, hi, what);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--" + name + ": " + e.what());
  }
}

// Waits for SIGTERM or SIGINT (blocked in every thread) until `seconds`
// have passed; true if a signal came.
bool wait_for_signal(const sigset_t& signals, double seconds) {
  timespec end{};
  clock_gettime(CLOCK_MONOTONIC, &end);
  end.tv_sec += static_cast<time_t>(seconds);
  end.tv_nsec +=
      static_cast<long>((seconds - static_cast<double>(static_cast<time_t>(seconds))) * 1e9);
  if (end.tv_nsec >= 1000000000) {
    end.tv_sec += 1;
    end.tv_nsec -= 1000000000;
  }
  for (;;) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long left_ns = (end.tv_sec - now.tv_sec) * 1000000000LL + (end.tv_nsec - now.tv_nsec);
    if (left_ns <= 0) return false;
    const timespec timeout{static_cast<time_t>(left_ns / 1000000000LL),
                           static_cast<long>(left_ns % 1000000000LL)};
    if (sigtimedwait(&signals, nullptr, &timeout) > 0) return true;
    // EAGAIN: timed out (the loop re-checks); EINTR: another signal.
  }
}

int run(const InjectionPlan& plan) {
  const std::vector<unsigned> allowed = current_affinity();
  for (unsigned cpu : plan.cpus) {
    if (!std::binary_search(allowed.begin(), allowed.end(), cpu)) {
      throw UsageError("--cpus: CPU " + std::to_string(cpu) +
                       " is not usable by this process (it may use " + format_cpu_list(allowed) +
                       ")");
    }
  }
  // Block the stop signals before the threads start, so that they inherit
  // the mask and only the main thread's sigtimedwait receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  NoiseInjection injection(plan);
  std::cout << "ready: " << describe(plan, injection.policy()) << std::endl;
  if (wait_for_signal(signals, plan.seconds)) injection.stop();
  injection.join();
  return kExitHealthy;
}

// The pattern's two spellings, as given.
struct PatternOptions {
  std::optional<double> duty, period, burst_hz, burst_length;
};

// The plan's on/off pattern from one spelling or the other (or the
// defaults), and none for a memory hog.
void set_pattern(InjectionPlan& plan, const PatternOptions& given) {
  const bool duty_spelling = given.duty || given.period;
  const bool burst_spelling = given.burst_hz || given.burst_length;
  if (plan.kind == InjectionKind::memory_hog && (duty_spelling || burst_spelling)) {
    throw UsageError(
        std::string("--memory-hog streams all the time; ") +
        (duty_spelling ? "--duty and --period do" : "--burst-hz and --burst-length do") +
        " not apply");
  }
  if (duty_spelling && burst_spelling) {
    throw UsageError(
        "--duty/--period and --burst-hz/--burst-length are two spellings of one pattern; give "
        "one of them");
  }
  try {
    if (burst_spelling) {
      if (!given.burst_hz) throw UsageError("--burst-length needs --burst-hz");
      if (!given.burst_length) throw UsageError("--burst-hz needs --burst-length");
      plan.pattern = pattern_from_burst(*given.burst_hz, *given.burst_length);
    } else {
      plan.pattern = pattern_from_duty(given.duty.value_or(0.1), given.period.value_or(0.01));
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

InjectionPlan parse_inject_options(const std::vector<std::string>& args) {
  const ParsedArgs parsed =
      parse_args(args, {"cpus", "seconds", "duty", "period", "burst-hz", "burst-length"},
                 {"memory-hog", "normal", "help"});
  if (!parsed.positional.empty()) {
    throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  InjectionPlan plan;
  PatternOptions pattern;
  std::optional<double> seconds;
  bool have_cpus = false;
  for (const auto& [name, value] : parsed.options) {
    if (name == "cpus") {
      try {
        plan.cpus = parse_cpu_list(value);
      } catch (const std::invalid_argument& e) {
        throw UsageError("--cpus: " + std::string(e.what()));
      }
      have_cpus = true;
    } else if (name == "seconds") {
      seconds = real_option(name, value, 0.001, 1e6, "seconds");
    } else if (name == "duty") {
      pattern.duty = real_option(name, value, 0, 1, "a share of time");
    } else if (name == "period") {
      pattern.period = real_option(name, value, 1e-5, 10, "seconds");
    } else if (name == "burst-hz") {
      pattern.burst_hz = real_option(name, value, 0.1, 1e5, "a frequency in Hz");
    } else if (name == "burst-length") {
      pattern.burst_length = real_option(name, value, 1e-6, 10, "seconds");
    } else if (name == "memory-hog") {
      plan.kind = InjectionKind::memory_hog;
    } else if (name == "normal") {
      plan.fifo = false;
    }
  }
  if (!have_cpus) throw UsageError("--cpus is required");
  if (!seconds) throw UsageError("--seconds is required");
  plan.seconds = *seconds;
  set_pattern(plan, pattern);
  return plan;
}

int run_inject_command(const std::vector<std::string>& args) {
  return run_local_command(
      "inject", args, [](std::ostream& out) { out << kUsage; },
      [&] { return run(parse_inject_options(args)); });
}

}  // namespace corenoise
