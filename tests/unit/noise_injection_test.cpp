// The pure parts of `corenoise inject`: its options, the two spellings of
// one busy pattern, the busy schedule's arithmetic and the ready line.
#include "probe/noise_injection.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collector/cli/command_line.h"
#include "collector/cli/inject_command.h"

namespace corenoise {
namespace {

InjectionPlan parse(const std::string& line) {
  std::vector<std::string> args;
  std::string word;
  for (char c : line + " ") {
    if (c == ' ') {
      if (!word.empty()) args.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  return parse_inject_options(args);
}

std::string error_of(const std::string& line) {
  try {
    parse(line);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(InjectOptions, DefaultsToTenPercentEveryTenMillisecondsAtFifo) {
  const InjectionPlan plan = parse("--cpus 1 --seconds 5");
  EXPECT_EQ(plan.kind, InjectionKind::busy);
  EXPECT_EQ(plan.cpus, std::vector<unsigned>{1});
  EXPECT_DOUBLE_EQ(plan.seconds, 5);
  EXPECT_DOUBLE_EQ(plan.pattern.period_seconds, 0.01);
  EXPECT_DOUBLE_EQ(plan.pattern.busy_seconds, 0.001);
  EXPECT_TRUE(plan.fifo);
  EXPECT_EQ(plan.fifo_priority, 50);
}

TEST(InjectOptions, BurstsAreTheSamePatternSpeltByFrequency) {
  const InjectionPlan plan =
      parse("--cpus 0-1,3 --seconds 2 --burst-hz 1000 --burst-length 0.0001");
  EXPECT_EQ(plan.cpus, (std::vector<unsigned>{0, 1, 3}));
  EXPECT_DOUBLE_EQ(plan.pattern.period_seconds, 0.001);
  EXPECT_DOUBLE_EQ(plan.pattern.busy_seconds, 0.0001);
  EXPECT_NEAR(plan.pattern.duty(), 0.1, 1e-12);
  const InjectionPlan duty = parse("--cpus 2 --seconds 2 --duty 0.25 --period 0.004 --normal");
  EXPECT_DOUBLE_EQ(duty.pattern.busy_seconds, 0.001);
  EXPECT_FALSE(duty.fifo);
}

TEST(InjectOptions, MemoryHogTakesNoPattern) {
  const InjectionPlan plan = parse("--cpus 0 --seconds 1 --memory-hog");
  EXPECT_EQ(plan.kind, InjectionKind::memory_hog);
  EXPECT_GE(plan.hog_bytes, std::size_t{256} << 20);
  EXPECT_NE(error_of("--cpus 0 --seconds 1 --memory-hog --duty 0.5").find("--memory-hog"),
            std::string::npos);
}

TEST(InjectOptions, BadInputNamesTheOption) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--seconds 1", "--cpus is required"},
      {"--cpus 1", "--seconds is required"},
      {"--cpus 1-0 --seconds 1", "--cpus"},
      {"--cpus 1 --seconds 0", "--seconds"},
      {"--cpus 1 --seconds x", "--seconds: got 'x'"},
      {"--cpus 1 --seconds 1 --duty 0", "--duty"},
      {"--cpus 1 --seconds 1 --duty 1.5", "--duty"},
      {"--cpus 1 --seconds 1 --period 0", "--period"},
      {"--cpus 1 --seconds 1 --period 11", "--period"},
      {"--cpus 1 --seconds 1 --burst-hz 1000", "--burst-hz needs --burst-length"},
      {"--cpus 1 --seconds 1 --burst-length 0.001", "--burst-length needs --burst-hz"},
      {"--cpus 1 --seconds 1 --burst-hz 1000 --burst-length 0.002", "--burst-length"},
      {"--cpus 1 --seconds 1 --burst-hz 0 --burst-length 0.001", "--burst-hz"},
      {"--cpus 1 --seconds 1 --duty 0.1 --burst-hz 10 --burst-length 0.01", "two spellings"},
      {"--cpus 1 --seconds 1 --frequency 3", "unknown option '--frequency'"},
      {"--cpus 1 --seconds 1 extra", "unexpected argument 'extra'"},
  };
  for (const auto& [line, message] : cases) {
    const std::string error = error_of(line);
    EXPECT_NE(error.find(message), std::string::npos) << line << " -> " << error;
  }
}

TEST(BusySchedule, WindowsAreWholePeriodsFromTheStart) {
  const BusySchedule s = BusySchedule::from({0.001, 0.01}, 5'000'000'000);
  EXPECT_EQ(s.period_ns, 10'000'000);
  EXPECT_EQ(s.busy_ns, 1'000'000);
  EXPECT_EQ(s.window_start(0), 5'000'000'000);
  EXPECT_EQ(s.window_end(0), 5'001'000'000);
  // A million periods later there is no drift: integer arithmetic.
  EXPECT_EQ(s.window_start(1'000'000), 5'000'000'000 + 10'000'000'000'000);
}

TEST(BusySchedule, NextWindowSkipsWhatWasMissed) {
  const BusySchedule s = BusySchedule::from({0.001, 0.01}, 1'000'000);
  EXPECT_EQ(s.next_window(0), 0);           // before the start
  EXPECT_EQ(s.next_window(1'500'000), 0);   // inside window 0: finish it
  EXPECT_EQ(s.next_window(2'000'000), 1);   // window 0 just ended
  EXPECT_EQ(s.next_window(10'999'999), 1);  // asleep before window 1
  EXPECT_EQ(s.next_window(11'500'000), 1);  // inside window 1
  // Overslept by 3.5 periods: the missed windows are skipped, not run late.
  EXPECT_EQ(s.next_window(36'000'000), 4);
  // Busy all the time: each window ends where the next begins.
  const BusySchedule full = BusySchedule::from({0.01, 0.01}, 0);
  EXPECT_EQ(full.next_window(10'000'000), 1);
  EXPECT_EQ(full.window_end(0), full.window_start(1));
}

TEST(BusySchedule, ALateWakeUpShiftsTheBurstButKeepsItsLength) {
  const BusySchedule s = BusySchedule::from({0.0001, 0.001}, 0);  // 100 µs every 1 ms
  EXPECT_EQ(s.busy_until(3, 3'000'000), 3'100'000);               // on time
  EXPECT_EQ(s.busy_until(3, 3'040'000), 3'140'000);               // 40 µs late: still 100 µs
  EXPECT_EQ(s.busy_until(3, 2'990'000), 3'100'000);  // early (spurious wake-up): from the start
  // Later than period − busy: cut at the next window, never run into it.
  EXPECT_EQ(s.busy_until(3, 3'950'000), 4'000'000);
}

TEST(BusySchedule, PatternChecksItsRanges) {
  EXPECT_THROW(pattern_from_duty(0, 0.01), std::invalid_argument);
  EXPECT_THROW(pattern_from_duty(0.1, 1e-6), std::invalid_argument);
  EXPECT_NO_THROW(pattern_from_duty(1, 0.01));
  EXPECT_THROW(pattern_from_burst(1000, 0.0011), std::invalid_argument);
  EXPECT_THROW(pattern_from_burst(1000, 1e-7), std::invalid_argument);
  EXPECT_DOUBLE_EQ(pattern_from_burst(50, 0.002).period_seconds, 0.02);
}

TEST(InjectReadyLine, NamesPatternCpusAndPolicy) {
  InjectionPlan plan;
  plan.cpus = {1};
  plan.pattern = {0.001, 0.01};
  EXPECT_EQ(describe(plan, SchedPolicy::fifo),
            "duty 10.0 % (1 ms busy) every 10 ms on CPU 1 (SCHED_FIFO)");
  plan.cpus = {0, 1, 2, 5};
  plan.pattern = {0.0001, 0.001};
  EXPECT_EQ(describe(plan, SchedPolicy::normal),
            "duty 10.0 % (100 µs busy) every 1 ms on CPUs 0-2,5 (normal priority)");
  plan.kind = InjectionKind::memory_hog;
  plan.cpus = {0};
  EXPECT_EQ(describe(plan, SchedPolicy::fifo),
            "memory hog, 256 MiB streamed read+write on CPU 0 (normal priority)");
}

}  // namespace
}  // namespace corenoise
