// Which CPU a rank probes with `sweep --rank-per-core`: bound ranks their
// core, unbound ranks the core of their node-local rank, and the refusals.
// Affinities are simulated on an SMT fixture (usable() = may run there).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "collector/cluster/sweep_rank_per_core.h"
#include "probe/topology.h"

namespace corenoise {
namespace {

// Sapphire Rapids, 2 × 60 cores × 2 PUs with Linux numbering (siblings 120 apart).
std::vector<ProcessingUnit> smt_node() {
  return Topology::load(std::string(CORENOISE_FIXTURES) + "/topology/spr-2s-120c-240t.xml").pus();
}

// The node's PUs with only `allowed` usable.
std::vector<ProcessingUnit> allowing(std::vector<ProcessingUnit> pus,
                                     const std::vector<unsigned>& allowed) {
  for (ProcessingUnit& pu : pus) {
    bool ok = false;
    for (unsigned cpu : allowed) ok = ok || cpu == pu.cpu;
    pu.skip_reason = ok ? "" : "outside process affinity";
  }
  return pus;
}

const ProcessingUnit& pu_of(const std::vector<ProcessingUnit>& pus, unsigned cpu) {
  for (const auto& pu : pus) {
    if (pu.cpu == cpu) return pu;
  }
  throw std::out_of_range("no CPU " + std::to_string(cpu));
}

TEST(ChooseRankCpu, ARankBoundToOneCoreProbesThatCoreWhateverItsRank) {
  const auto pus = smt_node();
  const unsigned sibling = [&] {
    for (const auto& pu : pus) {
      if (pu.cpu != 7 && pu.core == pu_of(pus, 7).core) return pu.cpu;
    }
    throw std::logic_error("fixture without SMT");
  }();
  // Bound to both hyperthreads of CPU 7's core: the lower-numbered first in
  // topology order is the one probed, whatever the node rank.
  const auto bound = allowing(pus, {7, sibling});
  const unsigned chosen = choose_rank_cpu(bound, 5);
  EXPECT_TRUE(chosen == 7 || chosen == sibling);
  EXPECT_EQ(pu_of(pus, chosen).core, pu_of(pus, 7).core);
  EXPECT_EQ(choose_rank_cpu(allowing(pus, {42}), 0), 42u);
  EXPECT_EQ(choose_rank_cpu(allowing(pus, {42}), 3), 42u);
}

TEST(ChooseRankCpu, UnboundRanksSpreadOnePerCoreInTopologyOrder) {
  const auto pus = smt_node();
  std::vector<unsigned> all;
  for (const auto& pu : pus) all.push_back(pu.cpu);
  const auto unbound = allowing(pus, all);
  std::vector<unsigned> cores_seen;
  for (int rank = 0; rank < 120; ++rank) {
    const unsigned cpu = choose_rank_cpu(unbound, rank);
    const unsigned core = pu_of(pus, cpu).core;
    for (unsigned seen : cores_seen) EXPECT_NE(seen, core) << "rank " << rank;
    cores_seen.push_back(core);
  }
  // The first rank gets the first core's first PU.
  EXPECT_EQ(choose_rank_cpu(unbound, 0), pus.front().cpu);
}

TEST(ChooseRankCpu, RefusesARankBeyondTheCoresAndAnEmptyAffinity) {
  const auto pus = smt_node();
  const auto two_cores = allowing(pus, {0, 1});
  EXPECT_NE(choose_rank_cpu(two_cores, 0), choose_rank_cpu(two_cores, 1));
  try {
    choose_rank_cpu(two_cores, 2);
    FAIL() << "rank 2 of 2 cores accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bind ranks"), std::string::npos) << e.what();
  }
  EXPECT_THROW(choose_rank_cpu(allowing(pus, {}), 0), std::invalid_argument);
}

}  // namespace
}  // namespace corenoise
