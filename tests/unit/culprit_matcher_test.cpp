// The matcher on recorded event streams: what each detour's time is
// charged to, where contexts nest and overlap, and what a buffer overrun
// leaves unknown.
#include "probe/trace/culprit_matcher.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace corenoise::trace {
namespace {

constexpr int kProbe = 4242;

Event to_task(std::uint64_t t, int pid, const char* comm, int prio = 120) {
  return {t, EventKind::task_switch, pid, prio, 0, comm};
}
Event back_to_probe(std::uint64_t t) { return to_task(t, kProbe, "corenoise"); }
Event event(std::uint64_t t, EventKind kind, int number = 0, const char* name = "") {
  return {t, kind, 0, 0, number, name};
}

const Culprit* find(const Attribution& a, CulpritKind kind, const std::string& name = "") {
  for (const Culprit& c : a.culprits)
    if (c.kind == kind && c.name == name) return &c;
  return nullptr;
}

std::uint64_t charged(const Attribution& a) {
  return std::accumulate(a.culprits.begin(), a.culprits.end(), std::uint64_t{0},
                         [](std::uint64_t sum, const Culprit& c) { return sum + c.ticks; });
}

TEST(CulpritMatcher, APreemptionIsChargedToTheTaskThatRanAndTheRestToTheKernelAroundIt) {
  const std::vector<Detour> detours = {{100, 200}};
  const std::vector<Event> events = {to_task(110, 77, "inj", 49), back_to_probe(190)};
  const Attribution a = match_detours(detours, events, kProbe);
  ASSERT_EQ(a.culprits.size(), 2u);
  EXPECT_EQ(a.culprits[0].kind, CulpritKind::task);
  EXPECT_EQ(a.culprits[0].name, "inj");
  EXPECT_EQ(a.culprits[0].id, 77);
  EXPECT_EQ(a.culprits[0].prio, 49);
  EXPECT_EQ(a.culprits[0].ticks, 80u);
  // The switches' own cost, which no tracepoint spans.
  EXPECT_EQ(a.culprits[1].kind, CulpritKind::kernel);
  EXPECT_EQ(a.culprits[1].ticks, 20u);
  EXPECT_EQ(a.detour_ticks, 100u);
  EXPECT_FALSE(a.overran);
}

TEST(CulpritMatcher, AnIrqInsideAPreemptionIsChargedToTheIrqNotTheTask) {
  const std::vector<Detour> detours = {{100, 200}};
  const std::vector<Event> events = {to_task(100, 77, "inj"),
                                     event(120, EventKind::irq_entry, 24, "eth0"),
                                     event(130, EventKind::irq_exit, 24), back_to_probe(200)};
  const Attribution a = match_detours(detours, events, kProbe);
  ASSERT_NE(find(a, CulpritKind::task, "inj"), nullptr);
  EXPECT_EQ(find(a, CulpritKind::task, "inj")->ticks, 90u);
  ASSERT_NE(find(a, CulpritKind::irq, "eth0"), nullptr);
  EXPECT_EQ(find(a, CulpritKind::irq, "eth0")->id, 24);
  EXPECT_EQ(find(a, CulpritKind::irq, "eth0")->ticks, 10u);
  EXPECT_EQ(find(a, CulpritKind::below_kernel), nullptr);
}

TEST(CulpritMatcher, ASoftirqUnderAnIrqIsChargedBothInTurn) {
  // NET_RX raised by its IRQ, itself interrupted by the timer tick.
  const std::vector<Detour> detours = {{295, 345}};
  const std::vector<Event> events = {
      event(300, EventKind::softirq_entry, 3), event(310, EventKind::irq_entry, -1, "local_timer"),
      event(315, EventKind::irq_exit, -1), event(340, EventKind::softirq_exit, 3)};
  const Attribution a = match_detours(detours, events, kProbe);
  ASSERT_NE(find(a, CulpritKind::softirq, "NET_RX"), nullptr);
  EXPECT_EQ(find(a, CulpritKind::softirq, "NET_RX")->ticks, 35u);
  EXPECT_EQ(find(a, CulpritKind::softirq, "NET_RX")->id, 3);
  ASSERT_NE(find(a, CulpritKind::irq, "local_timer"), nullptr);
  EXPECT_EQ(find(a, CulpritKind::irq, "local_timer")->ticks, 5u);
  EXPECT_EQ(find(a, CulpritKind::kernel)->ticks, 10u);
  EXPECT_EQ(find(a, CulpritKind::below_kernel), nullptr);
}

TEST(CulpritMatcher, OnlyADetourWithNoKernelEventIsBelowTheKernel) {
  const std::vector<Detour> detours = {{0, 10}, {20, 30}};
  const std::vector<Event> events = {event(2, EventKind::irq_entry, -1, "local_timer"),
                                     event(6, EventKind::irq_exit, -1)};
  const Attribution a = match_detours(detours, events, kProbe);
  EXPECT_EQ(find(a, CulpritKind::irq, "local_timer")->ticks, 4u);
  EXPECT_EQ(find(a, CulpritKind::kernel)->ticks, 6u);
  EXPECT_EQ(find(a, CulpritKind::kernel)->detours, 1u);
  EXPECT_EQ(find(a, CulpritKind::below_kernel)->ticks, 10u);
  EXPECT_EQ(find(a, CulpritKind::below_kernel)->detours, 1u);
}

TEST(CulpritMatcher, AWorkItemIsNamedByItsFunctionAndItsKworkerKeepsTheRest) {
  const std::vector<Detour> detours = {{500, 600}};
  const std::vector<Event> events = {to_task(500, 31, "kworker/1:2"),
                                     event(505, EventKind::work_start, 0, "vmstat_update"),
                                     event(590, EventKind::work_end), back_to_probe(600)};
  const Attribution a = match_detours(detours, events, kProbe);
  EXPECT_EQ(find(a, CulpritKind::work, "vmstat_update")->ticks, 85u);
  EXPECT_EQ(find(a, CulpritKind::task, "kworker/1:2")->ticks, 15u);
}

TEST(CulpritMatcher, AWorkItemResumesWithItsKworkerAfterAPreemption) {
  const std::vector<Detour> detours = {{0, 100}};
  const std::vector<Event> events = {
      to_task(0, 31, "kworker/1:2"),  event(10, EventKind::work_start, 0, "flush_to_ldisc"),
      to_task(40, 77, "inj", 49),     to_task(60, 31, "kworker/1:2"),
      event(90, EventKind::work_end), back_to_probe(100)};
  const Attribution a = match_detours(detours, events, kProbe);
  EXPECT_EQ(find(a, CulpritKind::work, "flush_to_ldisc")->ticks, 60u);
  EXPECT_EQ(find(a, CulpritKind::task, "inj")->ticks, 20u);
  EXPECT_EQ(find(a, CulpritKind::task, "kworker/1:2")->ticks, 20u);
}

TEST(CulpritMatcher, AfterABufferOverrunTheTimeIsLostUntilTheNextSwitchNeverGuessed) {
  const std::vector<Detour> detours = {{690, 800}};
  const std::vector<Event> events = {to_task(690, 77, "inj"), event(700, EventKind::lost, 12),
                                     event(720, EventKind::irq_entry, 5, "ata"),
                                     event(730, EventKind::irq_exit, 5), back_to_probe(780)};
  const Attribution a = match_detours(detours, events, kProbe);
  EXPECT_TRUE(a.overran);
  EXPECT_EQ(a.lost_events, 12u);
  EXPECT_EQ(find(a, CulpritKind::task, "inj")->ticks, 10u);
  EXPECT_EQ(find(a, CulpritKind::events_lost)->ticks, 80u);
  EXPECT_EQ(find(a, CulpritKind::irq, "ata"), nullptr);
  EXPECT_EQ(find(a, CulpritKind::kernel)->ticks, 20u);
}

TEST(CulpritMatcher, AWindowMarkInsideAnOverrunsGapIsNoEvidenceOfWhoRan) {
  // The gap's events are gone: the probe's own mark in it does not say
  // that nothing ran after it. Known again only at the next task switch.
  const std::vector<Detour> detours = {{0, 100}};
  const std::vector<Event> events = {event(0, EventKind::tracing_on),
                                     to_task(1, 77, "inj"),
                                     event(10, EventKind::lost, 3),
                                     event(20, EventKind::tracing_on),
                                     event(50, EventKind::irq_entry, 5, "ata"),
                                     event(55, EventKind::irq_exit, 5),
                                     back_to_probe(60)};
  const Attribution a = match_detours(detours, events, kProbe);
  ASSERT_NE(find(a, CulpritKind::task, "inj"), nullptr);
  ASSERT_NE(find(a, CulpritKind::events_lost), nullptr);
  ASSERT_NE(find(a, CulpritKind::kernel), nullptr);
  EXPECT_EQ(find(a, CulpritKind::task, "inj")->ticks, 9u);
  EXPECT_EQ(find(a, CulpritKind::events_lost)->ticks, 50u);
  EXPECT_EQ(find(a, CulpritKind::kernel)->ticks, 1u + 40u);
  EXPECT_EQ(charged(a), 100u);
}

TEST(CulpritMatcher, TheProbesPidAsTheTracerSeesItIsLearnedFromItsFirstSwitchAway) {
  // In a container gettid() says 4242; the tracer's pid namespace says
  // 9999. The probe thread must not be named as a task that preempted
  // itself.
  const std::vector<Detour> detours = {{5, 30}};
  Event away = to_task(10, 77, "inj");
  away.prev_pid = 9999;
  const std::vector<Event> events = {event(0, EventKind::tracing_on), away,
                                     to_task(20, 9999, "probe-cpu1")};
  const Attribution a = match_detours(detours, events, kProbe);
  EXPECT_EQ(find(a, CulpritKind::task, "probe-cpu1"), nullptr);
  EXPECT_EQ(find(a, CulpritKind::task, "inj")->ticks, 10u);
  EXPECT_EQ(find(a, CulpritKind::kernel)->ticks, 15u);
}

TEST(CulpritMatcher, AnOverrunOfUnknownSizeIsStillSaid) {
  const std::vector<Detour> detours = {{0, 10}};
  const std::vector<Event> events = {event(5, EventKind::lost, 0)};
  const Attribution a = match_detours(detours, events, kProbe);
  EXPECT_TRUE(a.overran);
  EXPECT_EQ(a.lost_events, 0u);
  EXPECT_EQ(find(a, CulpritKind::events_lost)->ticks, 5u);
}

TEST(CulpritMatcher, ACleanCoreLosesItsTimeBelowTheKernel) {
  const std::vector<Detour> detours = {{10, 12}, {50, 53}, {90, 91}};
  const Attribution a = match_detours(detours, {}, kProbe);
  ASSERT_EQ(a.culprits.size(), 1u);
  EXPECT_EQ(a.culprits[0].kind, CulpritKind::below_kernel);
  EXPECT_EQ(a.culprits[0].ticks, 6u);
  EXPECT_EQ(a.culprits[0].detours, 3u);
}

TEST(CulpritMatcher, EachDetourATaskTookPartInCountsOnceAndTimeOutsideDetoursIsNotCharged) {
  // The injector runs twice in the first detour and once in the second,
  // and once between them, where the probe measured no detour.
  const std::vector<Detour> detours = {{100, 200}, {300, 400}};
  const std::vector<Event> events = {to_task(100, 77, "inj", 49), back_to_probe(120),
                                     to_task(150, 77, "inj", 49), back_to_probe(200),
                                     to_task(250, 77, "inj", 49), back_to_probe(260),
                                     to_task(300, 77, "inj", 49), back_to_probe(400)};
  const Attribution a = match_detours(detours, events, kProbe);
  const Culprit* inj = find(a, CulpritKind::task, "inj");
  ASSERT_NE(inj, nullptr);
  EXPECT_EQ(inj->detours, 2u);
  EXPECT_EQ(inj->ticks, 20u + 50u + 100u);
  EXPECT_EQ(charged(a), a.detour_ticks);
  EXPECT_EQ(a.detour_ticks, 200u);
}

TEST(CulpritMatcher, AnExitWithoutItsEntryAndAnEntryWithoutItsExitEndAtTheNextSwitch) {
  // Tracing began inside an IRQ (its exit alone is seen); a softirq's exit
  // was never recorded before the task switched.
  const std::vector<Detour> detours = {{0, 100}};
  const std::vector<Event> events = {event(5, EventKind::irq_exit, 9),
                                     event(10, EventKind::softirq_entry, 1), to_task(30, 77, "inj"),
                                     back_to_probe(60)};
  const Attribution a = match_detours(detours, events, kProbe);
  EXPECT_EQ(find(a, CulpritKind::softirq, "TIMER")->ticks, 20u);
  EXPECT_EQ(find(a, CulpritKind::task, "inj")->ticks, 30u);
  EXPECT_EQ(find(a, CulpritKind::kernel)->ticks, 50u);
  EXPECT_EQ(charged(a), 100u);
}

TEST(CulpritMatcher, TimeWhileTracingWasOffIsUntracedNotBelowTheKernel) {
  // The window's first detour began while the probe thread waited for its
  // CPU, before it switched tracing on.
  const std::vector<Detour> detours = {{80, 110}, {150, 160}, {300, 310}};
  const std::vector<Event> events = {event(100, EventKind::tracing_on), to_task(150, 77, "inj"),
                                     back_to_probe(160), event(200, EventKind::tracing_off)};
  const Attribution a = match_detours(detours, events, kProbe);
  EXPECT_EQ(find(a, CulpritKind::untraced)->ticks, 20u + 10u);
  EXPECT_EQ(find(a, CulpritKind::untraced)->detours, 2u);
  EXPECT_EQ(find(a, CulpritKind::below_kernel)->ticks, 10u);
  EXPECT_EQ(find(a, CulpritKind::task, "inj")->ticks, 10u);
}

TEST(CulpritMatcher, CulpritsComeLargestFirstAndMergeAcrossWindows) {
  const std::vector<Detour> first = {{0, 100}};
  const std::vector<Event> first_events = {to_task(0, 77, "inj"), back_to_probe(30),
                                           to_task(30, 88, "sshd"), back_to_probe(100)};
  const std::vector<Detour> second = {{1000, 1100}};
  const std::vector<Event> second_events = {to_task(1000, 77, "inj"), back_to_probe(1100)};
  Attribution a = match_detours(first, first_events, kProbe);
  ASSERT_EQ(a.culprits[0].name, "sshd");
  merge(a, match_detours(second, second_events, kProbe));
  EXPECT_EQ(a.detour_ticks, 200u);
  ASSERT_EQ(a.culprits.size(), 2u);
  EXPECT_EQ(a.culprits[0].name, "inj");
  EXPECT_EQ(a.culprits[0].ticks, 130u);
  EXPECT_EQ(a.culprits[0].detours, 2u);
  EXPECT_EQ(a.culprits[1].name, "sshd");
}

TEST(CulpritMatcher, SoftirqVectorsAreNamedAsTheKernelNamesThem) {
  EXPECT_EQ(softirq_name(3), "NET_RX");
  EXPECT_EQ(softirq_name(9), "RCU");
  EXPECT_EQ(softirq_name(12), "vector 12");
}

}  // namespace
}  // namespace corenoise::trace
