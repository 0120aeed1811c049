// A job's CPU recorded whole and read in spans: each span's time charged
// to whoever had the CPU, and who ran at a span's end carried to the next.
#include "probe/trace/span_charges.h"

#include <gtest/gtest.h>

#include <vector>

namespace corenoise::trace {
namespace {

Event to_task(std::uint64_t t, int pid, const char* comm) {
  return {t, EventKind::task_switch, pid, 120, 0, comm};
}
Event event(std::uint64_t t, EventKind kind, int number = 0, const char* name = "") {
  return {t, kind, 0, 0, number, name};
}

std::uint64_t ticks_of(const Attribution& a, CulpritKind kind, int id) {
  for (const Culprit& c : a.culprits)
    if (c.kind == kind && c.id == id) return c.ticks;
  return 0;
}

TEST(SpanCharges, EachContextIsChargedItsTimeAndTheTimeBeforeAnySwitchToNobody) {
  SpanCarry carry;
  const std::vector<Event> events = {
      to_task(100, 7, "rank"), event(150, EventKind::irq_entry, 36, "virtio1-req.0"),
      event(160, EventKind::irq_exit, 36), to_task(200, 99, "inj"), to_task(260, 7, "rank")};
  const Attribution a = charge_span(events, 0, 300, carry);
  EXPECT_EQ(ticks_of(a, CulpritKind::task, 7), 50u + 40u + 40u);
  EXPECT_EQ(ticks_of(a, CulpritKind::irq, 36), 10u);
  EXPECT_EQ(ticks_of(a, CulpritKind::task, 99), 60u);
  std::uint64_t charged = 0;
  for (const Culprit& c : a.culprits) charged += c.ticks;
  EXPECT_EQ(charged, 200u);  // 0-100: before any switch, unknown
  EXPECT_TRUE(carry.known);
  EXPECT_EQ(carry.running.pid, 7);
}

TEST(SpanCharges, TheTaskRunningAtASpansEndRunsOnIntoTheNext) {
  SpanCarry carry;
  charge_span(std::vector<Event>{to_task(10, 99, "inj")}, 0, 100, carry);
  // Nothing happened in the next span: inj had all of it.
  const Attribution next = charge_span({}, 100, 300, carry);
  ASSERT_EQ(next.culprits.size(), 1u);
  EXPECT_EQ(next.culprits[0].name, "inj");
  EXPECT_EQ(next.culprits[0].ticks, 200u);
}

TEST(SpanCharges, EventsReadPastTheSpansEndWaitForTheNextSpan) {
  SpanCarry carry;
  const std::vector<Event> events = {to_task(10, 7, "rank"), to_task(120, 99, "inj")};
  const Attribution a = charge_span(events, 0, 100, carry);
  EXPECT_EQ(ticks_of(a, CulpritKind::task, 99), 0u);
  EXPECT_EQ(ticks_of(a, CulpritKind::task, 7), 90u);
  ASSERT_EQ(carry.later.size(), 1u);
  const Attribution next = charge_span({}, 100, 200, carry);
  EXPECT_EQ(ticks_of(next, CulpritKind::task, 7), 20u);
  EXPECT_EQ(ticks_of(next, CulpritKind::task, 99), 80u);
  EXPECT_TRUE(carry.later.empty());
}

TEST(SpanCharges, EventsFromBeforeTheSpanAndTasksBeforeAGapSayNothingOfWhoRuns) {
  SpanCarry carry;
  // A CPU recorded again: its buffer still holds a switch from before.
  const Attribution a = charge_span(std::vector<Event>{to_task(50, 99, "gone")}, 100, 200, carry);
  EXPECT_TRUE(a.culprits.empty());
  EXPECT_FALSE(carry.known);
  // An overrun after the last switch: the next span is not the task's.
  charge_span(std::vector<Event>{to_task(210, 7, "rank"), event(250, EventKind::lost, 10)}, 200,
              300, carry);
  EXPECT_FALSE(carry.known);
  EXPECT_TRUE(charge_span({}, 300, 400, carry).culprits.empty());
  // A gap the reader found before any record is stamped 0: it opens the
  // span, and who ran is unknown until the next switch.
  charge_span(std::vector<Event>{to_task(410, 7, "rank")}, 400, 500, carry);
  ASSERT_TRUE(carry.known);
  const Attribution gap = charge_span(
      std::vector<Event>{event(0, EventKind::lost, 0), to_task(550, 8, "other")}, 500, 600, carry);
  EXPECT_EQ(ticks_of(gap, CulpritKind::task, 7), 0u);
  EXPECT_EQ(ticks_of(gap, CulpritKind::events_lost, -1), 50u);
  EXPECT_EQ(ticks_of(gap, CulpritKind::task, 8), 50u);
}

}  // namespace
}  // namespace corenoise::trace
