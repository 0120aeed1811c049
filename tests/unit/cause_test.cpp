// A verdict's cause as data (probe/cause.h) and its sentences
// (probe/verdict_text.h): the wire form gives back the same cause, a cause
// without the figures its state cites is refused, and what the
// confirmation, the thermal counters and the daemon's persistence add
// reads as it did when those layers wrote the words themselves.
#include "probe/cause.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <utility>

#include "probe/analysis.h"
#include "probe/verdict_text.h"

namespace corenoise {
namespace {

using nlohmann::json;

Cause throttled() {
  Cause c;
  c.state = CoreState::throttled;
  c.cpu_kind = "P";
  c.figure = 2.4e9;
  c.reference = 3.0e9;
  c.ratio = 1.25;
  c.interval = std::array<double, 2>{1.2, 1.3};
  return c;
}

Cause noisy(bool traced) {
  Cause c;
  c.state = CoreState::noisy;
  c.cpu_kind = "default";
  c.ratio = 0.11;
  c.interval = std::array<double, 2>{0.09, 0.13};
  LostTime lost;
  lost.noise_ratio = 0.12;
  lost.detours = 40;
  lost.max_seconds = 0.0031;
  lost.total_seconds = 0.2;
  lost.preempted_seconds = 0.1;
  lost.preemptions = 15;
  lost.interrupts = 7;
  if (traced) {
    trace::Culprit task;
    task.kind = trace::CulpritKind::task;
    task.name = "inj";
    task.id = 1234;
    task.scheduling = "FIFO 50";
    task.seconds = 0.12;
    task.detours = 15;
    trace::Culprit irq;
    irq.kind = trace::CulpritKind::irq;
    irq.name = "eth0";
    irq.id = 24;
    irq.seconds = 0.04;
    irq.detours = 40;
    lost.traced = LostTime::Traced{{task, irq}, 0.18, true};
  }
  c.lost = lost;
  c.clock_read_low = 1.25;
  return c;
}

TEST(Cause, EachStateTravelsWhole) {
  Cause contended;
  contended.state = CoreState::contended;
  contended.figure = 8e9;
  contended.ratio = 1.5;
  Cause slow;
  slow.state = CoreState::slow;
  slow.ratio = 1.07;
  Cause confirmed = throttled();
  confirmed.confirmation = Cause::Confirmation{true, 2, 1.22};
  confirmed.thermal = Cause::Thermal{3, 1};
  confirmed.recurrence = Cause::Recurrence{CoreState::throttled, 1, 3, 2};
  for (const Cause& c : {throttled(), noisy(false), noisy(true), contended, slow, confirmed,
                         skipped_cause(SkipReason::other, "offline"),
                         skipped_cause(SkipReason::not_selected), Cause{}}) {
    SCOPED_TRACE(to_json(c).dump());
    const json wire = json::parse(to_json(c).dump());
    EXPECT_EQ(cause_from_json(wire), c);
  }
}

TEST(Cause, ACauseWithoutTheFiguresItsStateCitesIsRefused) {
  json wire = to_json(throttled());
  wire.erase("reference");
  EXPECT_THROW(cause_from_json(wire), std::exception);
  wire = to_json(noisy(true));
  wire.erase("lost");
  EXPECT_THROW(cause_from_json(wire), std::exception);
  wire = to_json(noisy(true));
  wire["lost"]["traced"]["named"][0]["kind"] = "gremlin";
  EXPECT_THROW(cause_from_json(wire), std::exception);
  wire = to_json(throttled());
  wire["ratio"] = "fast";
  EXPECT_THROW(cause_from_json(wire), std::exception);
  wire = to_json(skipped_cause(SkipReason::not_probed));
  wire["skipped"] = "bored";
  EXPECT_THROW(cause_from_json(wire), std::exception);
  EXPECT_THROW(cause_from_json(json{{"state", "sleepy"}}), std::exception);
}

TEST(VerdictText, TheStatesSentenceCitesItsFigures) {
  EXPECT_EQ(cause_text(throttled()),
            "clock 2.40 GHz is 20.0% below the P reference 3.00 GHz (95% interval 16.7-23.1%)");
  EXPECT_EQ(cause_text(noisy(false)),
            "loses 12.0% of its time to 40 detours (max 3100 us), 11.0 points above the node's "
            "floor (95% interval 9.0-13.0 points): 50% preempted by other threads (15 times), "
            "50% in interrupts, softirqs or below the kernel [7 interrupts and softirqs]; its "
            "clock reads 20.0% low, as detours this large make it");
  // Traced: the culprits by name, the rest of the matched time, what was
  // not matched, and that the tracer lost events.
  EXPECT_EQ(lost_time_text(*noisy(true).lost),
            "60% preempted by inj[1234] (FIFO 50) (15 times), 20% in IRQ 24 (eth0) (40 times), "
            "10% others, 10% not matched (the tracer lost events)");
  EXPECT_EQ(cause_text(skipped_cause(SkipReason::no_samples)), "no samples (round cancelled)");
  EXPECT_EQ(cause_text(skipped_cause(SkipReason::other, "offline")), "offline");
  EXPECT_EQ(cause_text(Cause{}), "");
}

TEST(VerdictText, WhatLaterLayersAddWrapsTheRoundsSentence) {
  const std::string round = cause_text(throttled());
  Cause c = throttled();
  c.confirmation = Cause::Confirmation{true, 1, 1.22};
  EXPECT_EQ(cause_text(c), round + "; confirmed on re-measurement (22.0%)");
  EXPECT_EQ(suspected_cause_text(c), round);
  c.confirmation = Cause::Confirmation{false, 2, std::nullopt};
  EXPECT_EQ(cause_text(c), "transient: throttled in the round (" + round +
                               "), not borne out on re-measurement 2 (not measured)");
  c.thermal = Cause::Thermal{3, 0};
  EXPECT_EQ(cause_text(c),
            "3 core and 0 package thermal throttle events during the round; "
            "transient: throttled in the round (" +
                round + "), not borne out on re-measurement 2 (not measured)");
  c = throttled();
  c.recurrence = Cause::Recurrence{CoreState::throttled, 1, 3, 2};
  EXPECT_EQ(cause_text(c),
            "throttled in 1 of its last 3 measured rounds (2 make it persistent): " + round);
  // Thermal events on a core whose figures said nothing: the events alone.
  Cause events;
  events.thermal = Cause::Thermal{0, 2};
  EXPECT_EQ(cause_text(events), "0 core and 2 package thermal throttle events during the round");
  EXPECT_FALSE(events.says_nothing());
  EXPECT_TRUE(Cause{}.says_nothing());
}

// The daemon's order: the round's sentence, its confirmation, the thermal
// events of the round, then the persistence over rounds, outermost.
TEST(VerdictText, TheDaemonsLayersNestInTheirOrder) {
  Cause c = noisy(false);
  c.clock_read_low.reset();
  const std::string round = cause_text(c);
  c.confirmation = Cause::Confirmation{true, 1, 0.1};
  c.thermal = Cause::Thermal{0, 4};
  c.recurrence = Cause::Recurrence{CoreState::throttled, 1, 3, 2};
  EXPECT_EQ(cause_text(c),
            "throttled in 1 of its last 3 measured rounds (2 make it persistent): 0 core and 4 "
            "package thermal throttle events during the round; " +
                round + "; confirmed on re-measurement (10.0 points)");
  EXPECT_EQ(cause_from_json(to_json(c)), c);
}

TEST(VerdictText, ASkippedCpuSaysWhy) {
  Cause busy = skipped_cause(SkipReason::busy);
  busy.figure = 0.93;
  EXPECT_EQ(cause_text(busy), "busy (93% since the last round)");
  EXPECT_EQ(cause_from_json(to_json(busy)), busy);
  busy.figure.reset();  // a busy share is what it cites
  EXPECT_THROW(cause_from_json(to_json(busy)), std::exception);
  EXPECT_EQ(cause_text(skipped_cause(SkipReason::no_rank)), "no rank of the job on it");
  EXPECT_EQ(cause_text(skipped_cause(SkipReason::not_selected)), "not selected");
  EXPECT_EQ(cause_text(skipped_cause(SkipReason::not_probed)), "not probed");
}

// From a judged core: the tracer's culprits while each holds at least half
// a percent of the lost time (at most three), with only what a sentence
// cites, so that the cause comes back whole from its wire form.
TEST(Cause, AJudgedNoisyCoreNamesItsLargestCulpritsOnly) {
  CoreFigures core;
  core.kind = "default";
  core.state = CoreState::noisy;
  core.excess_noise = 0.1;
  DetourResult d;
  d.window_seconds = 1;
  d.count = 50;
  d.total_seconds = 0.2;
  d.max_seconds = 0.01;
  core.detour = d;
  trace::Attribution a;
  a.detour_seconds = 0.2;
  for (const auto& [name, seconds] : {std::pair{"big", 0.15}, {"tiny", 0.0009}, {"after", 0.04}}) {
    trace::Culprit c;
    c.kind = trace::CulpritKind::task;
    c.name = name;
    c.id = 7;
    c.prio = 120;
    c.ticks = 12345;
    c.seconds = seconds;
    c.detours = 3;
    a.culprits.push_back(c);
  }
  core.culprits = a;
  const Cause cause = cause_of(core);
  ASSERT_TRUE(cause.lost && cause.lost->traced);
  // "tiny" is under 0.5 % of 0.2 s: it and everything after it go to "others".
  ASSERT_EQ(cause.lost->traced->named.size(), 1u);
  EXPECT_EQ(cause.lost->traced->named[0].name, "big");
  EXPECT_EQ(cause_from_json(json::parse(to_json(cause).dump())), cause);
  EXPECT_NE(cause_text(cause).find("75% preempted by big[7] (3 times), 25% others"),
            std::string::npos)
      << cause_text(cause);
}

// Counts from another process are counts: a float, a negative number or one
// past the type is refused, never cast; an odd cause costs only itself.
TEST(Cause, HostileNumbersAreRefusedAndCostOnlyTheCause) {
  for (const json& detours : {json(-1), json(1e300), json(2.5), json("12")}) {
    json wire = to_json(noisy(true));
    wire["lost"]["detours"] = detours;
    EXPECT_THROW(cause_from_json(wire), std::exception) << detours;
    EXPECT_EQ(cause_in(json{{"why", wire}, {"state", "noisy"}}), Cause{});
  }
  json wire = to_json(noisy(true));
  wire["lost"]["traced"]["named"][0]["id"] = 1LL << 40;
  EXPECT_THROW(cause_from_json(wire), std::exception);
  wire = to_json(noisy(true));
  wire["lost"]["traced"]["named"] = json::array({json::object(), 1, 2, 3, 4});
  EXPECT_THROW(cause_from_json(wire), std::exception);
  wire = to_json(throttled());
  wire["ratio"] = nullptr;  // a NaN, as nlohmann writes one
  EXPECT_THROW(cause_from_json(wire), std::exception);
  // A document without a cause (an older corenoise) has none.
  EXPECT_EQ(cause_in(json{{"cause", "loses 9%"}}), Cause{});
  EXPECT_EQ(cause_in(json{{"why", to_json(throttled())}}), throttled());
}

}  // namespace
}  // namespace corenoise
