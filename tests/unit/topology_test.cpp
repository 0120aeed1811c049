#include "probe/topology.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace corenoise {
namespace {

// gmock's HasSubstr without linking gmock: the target links only gtest.
::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

const std::string kTopologyDir = std::string(CORENOISE_FIXTURES) + "/topology/";
const std::string kSpr = kTopologyDir + "spr-2s-120c-240t.xml";
const std::string kHybrid = kTopologyDir + "hybrid-8p-16e.xml";

// The message of the std::runtime_error thrown by Topology::load(spec).
std::string load_error(const std::string& spec) {
  try {
    Topology::load(spec);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception for spec " << spec;
  return "";
}

TEST(TopologyTest, SapphireRapidsFixtureShape) {
  Topology t = Topology::load(kSpr);
  EXPECT_FALSE(t.is_this_system());
  EXPECT_EQ(t.source(), kSpr);
  ASSERT_EQ(t.pus().size(), 240u);

  std::set<unsigned> cores, packages;
  std::set<int> numa_nodes;
  for (std::size_t i = 0; i < t.pus().size(); ++i) {
    const ProcessingUnit& p = t.pus()[i];
    EXPECT_EQ(p.cpu, i) << "sorted by OS index, no holes";
    EXPECT_FALSE(p.usable());
    EXPECT_EQ(p.skip_reason, "not this machine");
    EXPECT_EQ(p.kind, "default");
    EXPECT_EQ(p.kind_efficiency, 0);
    EXPECT_EQ(p.l2_bytes, 2u * 1024 * 1024);
    EXPECT_EQ(p.llc_share_bytes, 117964800u / 60);  // 112.5 MB L3 over 60 cores
    EXPECT_EQ(static_cast<int>(p.package), p.numa_node) << "one NUMA node per package";
    cores.insert(p.core);
    packages.insert(p.package);
    numa_nodes.insert(p.numa_node);
  }
  EXPECT_EQ(cores.size(), 120u);
  EXPECT_EQ(packages, (std::set<unsigned>{0, 1}));
  EXPECT_EQ(numa_nodes, (std::set<int>{0, 1}));
}

TEST(TopologyTest, SapphireRapidsFixtureHasLinuxNumbering) {
  Topology t = Topology::load(kSpr);
  // 0-59: first threads of package 0, 60-119: of package 1, then siblings.
  for (unsigned c = 0; c < 60; ++c) {
    for (unsigned pkg = 0; pkg < 2; ++pkg) {
      const ProcessingUnit* first = t.find(pkg * 60 + c);
      const ProcessingUnit* sibling = t.find(120 + pkg * 60 + c);
      ASSERT_NE(first, nullptr);
      ASSERT_NE(sibling, nullptr);
      EXPECT_EQ(first->package, pkg);
      EXPECT_EQ(first->core, pkg * 60 + c);
      EXPECT_EQ(sibling->core, first->core) << "SMT siblings share a core";
      EXPECT_EQ(sibling->package, pkg);
    }
  }
  EXPECT_EQ(t.find(240), nullptr);
}

TEST(TopologyTest, HybridFixtureKinds) {
  Topology t = Topology::load(kHybrid);
  ASSERT_EQ(t.pus().size(), 24u);
  std::map<std::string, std::set<unsigned>> by_kind;
  std::map<std::string, int> efficiency;
  std::set<unsigned> cores;
  for (const ProcessingUnit& p : t.pus()) {
    by_kind[p.kind].insert(p.cpu);
    efficiency[p.kind] = p.kind_efficiency;
    cores.insert(p.core);
    EXPECT_EQ(p.package, 0u);
    EXPECT_EQ(p.numa_node, 0);
    EXPECT_EQ(p.skip_reason, "not this machine");
    EXPECT_EQ(p.llc_share_bytes, 36u * 1024 * 1024 / 24);
  }
  EXPECT_EQ(cores.size(), 24u) << "no SMT";
  ASSERT_EQ(by_kind.size(), 2u);
  std::set<unsigned> p_cores, e_cores;
  for (unsigned c = 0; c < 8; ++c) p_cores.insert(c);
  for (unsigned c = 8; c < 24; ++c) e_cores.insert(c);
  EXPECT_EQ(by_kind["IntelCore"], p_cores);
  EXPECT_EQ(by_kind["IntelAtom"], e_cores);
  EXPECT_GT(efficiency["IntelCore"], efficiency["IntelAtom"]);
  EXPECT_EQ(t.find(0)->l2_bytes, 3u * 1024 * 1024);
  EXPECT_EQ(t.find(23)->l2_bytes, 2u * 1024 * 1024);
}

TEST(TopologyTest, SyntheticSpec) {
  Topology t = Topology::load("synthetic:package:2 core:4 pu:2");
  EXPECT_FALSE(t.is_this_system());
  EXPECT_EQ(t.source(), "synthetic:package:2 core:4 pu:2");
  ASSERT_EQ(t.pus().size(), 16u);
  std::set<unsigned> cores, packages;
  for (const ProcessingUnit& p : t.pus()) {
    cores.insert(p.core);
    packages.insert(p.package);
    EXPECT_EQ(p.skip_reason, "not this machine");
    EXPECT_EQ(p.l2_bytes, 0u) << "no caches in the description";
    EXPECT_EQ(p.llc_share_bytes, 0u);
    EXPECT_EQ(p.kind, "default");
  }
  EXPECT_EQ(cores.size(), 8u);
  EXPECT_EQ(packages.size(), 2u);
  // Default synthetic numbering is depth-first: PUs 0 and 1 share core 0.
  EXPECT_EQ(t.find(0)->core, t.find(1)->core);
  EXPECT_EQ(t.find(15)->package, 1u);
}

TEST(TopologyTest, SyntheticWithoutCoresGivesEachPuItsOwnCore) {
  Topology t = Topology::load("synthetic:package:2 pu:3");
  ASSERT_EQ(t.pus().size(), 6u);
  std::set<unsigned> cores;
  for (const ProcessingUnit& p : t.pus()) cores.insert(p.core);
  EXPECT_EQ(cores.size(), 6u);
}

// Whether `cpu` is in this (single-threaded) test process's affinity.
bool in_affinity(const cpu_set_t& set, unsigned cpu) {
  return cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set);
}

TEST(TopologyTest, NativeMatchesSchedAffinity) {
  for (const std::string spec : {"", "native"}) {
    Topology t = Topology::load(spec);
    EXPECT_TRUE(t.is_this_system());
    EXPECT_EQ(t.source(), "native");
    ASSERT_FALSE(t.pus().empty());
    cpu_set_t set;
    ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
    std::size_t usable = 0;
    for (std::size_t i = 0; i < t.pus().size(); ++i) {
      const ProcessingUnit& p = t.pus()[i];
      if (i > 0) {
        EXPECT_LT(t.pus()[i - 1].cpu, p.cpu);
      }
      EXPECT_EQ(t.find(p.cpu), &p);
      EXPECT_EQ(p.usable(), in_affinity(set, p.cpu)) << "cpu " << p.cpu << ": " << p.skip_reason;
      if (p.usable()) ++usable;
    }
    EXPECT_GE(usable, 1u);
  }
}

// The affinity of every thread of this process (Topology reads the process's,
// the union over its threads): a sanitizer runtime may run a thread of its own.
static void set_process_affinity(const cpu_set_t& set) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    const pid_t tid = std::stoi(task.path().filename().string());
    ASSERT_EQ(sched_setaffinity(tid, sizeof(set), &set), 0) << "thread " << tid;
  }
}

TEST(TopologyTest, NativeMarksCpusOutsideProcessAffinity) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  ASSERT_GE(CPU_COUNT(&saved), 2) << "this test needs two usable CPUs";
  unsigned first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  set_process_affinity(one);
  Topology t = Topology::load("native");
  set_process_affinity(saved);

  for (const ProcessingUnit& p : t.pus()) {
    if (p.cpu == first) {
      EXPECT_TRUE(p.usable()) << p.skip_reason;
    } else if (CPU_ISSET(p.cpu, &saved)) {
      EXPECT_EQ(p.skip_reason, "outside process affinity") << "cpu " << p.cpu;
    }
  }
}

// HWLOC_THISSYSTEM=1 makes hwloc treat the XML as this machine, so its
// allowed cpuset (PU 1 left out) stands in for a cgroup cpuset; the real
// process affinity still applies to the other PUs.
TEST(TopologyTest, DisallowedPusAreKeptWithAReason) {
  ASSERT_EQ(setenv("HWLOC_THISSYSTEM", "1", 1), 0);
  Topology t = Topology::load(kTopologyDir + "disallowed-4pu.xml");
  unsetenv("HWLOC_THISSYSTEM");
  EXPECT_TRUE(t.is_this_system());
  ASSERT_EQ(t.pus().size(), 4u);
  EXPECT_EQ(t.find(1)->skip_reason, "disallowed by cgroup/cpuset");
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  for (unsigned cpu : {0u, 2u, 3u}) {
    EXPECT_EQ(t.find(cpu)->skip_reason, in_affinity(set, cpu) ? "" : "outside process affinity")
        << "cpu " << cpu;
  }
}

TEST(TopologyTest, BadSyntheticSpecThrowsNamingIt) {
  std::string msg = load_error("synthetic:bogus:7");
  EXPECT_TRUE(Contains(msg, "synthetic:bogus:7"));
  EXPECT_TRUE(Contains(msg, "expected 'native', 'synthetic:DESC' or a readable hwloc XML file"));
  EXPECT_TRUE(Contains(load_error("synthetic:"), "synthetic description"));
}

TEST(TopologyTest, MissingFileThrowsWithPathAndReason) {
  const std::string path = "/nonexistent/corenoise/topology.xml";
  std::string msg = load_error(path);
  EXPECT_TRUE(Contains(msg, "cannot read topology file " + path + ": No such file or directory"));
  EXPECT_TRUE(Contains(msg, "expected"));
}

TEST(TopologyTest, DirectoryThrowsWithPath) {
  EXPECT_TRUE(Contains(load_error(kTopologyDir), "cannot read topology file " + kTopologyDir));
}

TEST(TopologyTest, GarbageXmlThrowsWithPath) {
  const std::string path = ::testing::TempDir() + "corenoise_garbage_topology.xml";
  {
    std::ofstream out(path);
    out << "<?xml version=\"1.0\"?>\n<topology><object type=\"Banana\"></topology>\n";
  }
  std::string msg = load_error(path);
  EXPECT_TRUE(Contains(msg, path));
  EXPECT_TRUE(Contains(msg, "expected"));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace corenoise
