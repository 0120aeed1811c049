// Configuration findings (collector/job/model/rank_config.h, job_findings.h):
// XLA_FLAGS read as XLA's parser reads it, the thread-pool variables
// against the libraries mapped, and the findings over ranks.
#include "collector/job/model/job_findings.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "collector/job/model/rank_config.h"

namespace corenoise {
namespace {

TEST(XlaDroppedWords, TheStorysValueLosesItsSecondWord) {
  EXPECT_EQ(xla_dropped_words("--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"),
            "intra_op_parallelism_threads=1");
}

TEST(XlaDroppedWords, EverythingAfterTheFirstPlainWordIsDroppedToo) {
  EXPECT_EQ(xla_dropped_words("  --a=1 b=2 --c=3 \n"), "b=2 --c=3");
}

TEST(XlaDroppedWords, FlagsOnlyAndQuotedValuesLoseNothing) {
  EXPECT_EQ(xla_dropped_words("--xla_a=true --xla_b"), "");
  EXPECT_EQ(xla_dropped_words("--xla_dump_to=\"/tmp/a b\" --xla_c=1"), "");
  EXPECT_EQ(xla_dropped_words("--xla_x='it is' --y"), "");
  EXPECT_EQ(xla_dropped_words(""), "");
  EXPECT_EQ(xla_dropped_words("   "), "");
}

TEST(XlaDroppedWords, AValueNotBeginningWithADashIsAFileNameAndDroppedWhole) {
  EXPECT_EQ(xla_dropped_words("intra_op_parallelism_threads=1 --xla_a"),
            "intra_op_parallelism_threads=1 --xla_a");
}

// A lookup over a map, as getenv.
EnvironmentLookup environment(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const char* name) -> const char* {
    const auto it = values.find(name);
    return it != values.end() ? it->second.c_str() : nullptr;
  };
}

const char* const kMaps =
    "7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libopenblas.so.0\n"
    "7f01-7f02 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0\n"
    "7f02-7f03 r-xp 00000000 08:01 3 /opt/venv/lib/python3.11/site-packages/jaxlib/"
    "xla_extension.so\n"
    "7f03-7f04 r-xp 00000000 08:01 3 /opt/venv/lib/python3.11/site-packages/jaxlib/"
    "xla_extension.so\n"
    "7f04-7f05 rw-p 00000000 00:00 0 [heap]\n";

TEST(RankConfig, UnsetPoolVariablesAreNamedWithTheLibraryThatReadsThem) {
  const RankConfig c = read_rank_config(kMaps, environment({{"OMP_NUM_THREADS", "1"}}), 3, 8);
  EXPECT_EQ(c.busy_threads_peak, 3);
  EXPECT_EQ(c.node_cpus, 8);
  // OpenBLAS also reads OMP_NUM_THREADS; XLA's pool is unset.
  ASSERT_EQ(c.unset_pools.size(), 1u);
  EXPECT_EQ(c.unset_pools[0].variable, "PJRT_NPROC");
  EXPECT_EQ(c.unset_pools[0].library, "xla_extension.so");
}

TEST(RankConfig, NprocSizesXlasPoolsAsPjrtNprocDoes) {
  const RankConfig c = read_rank_config(kMaps,
                                        environment({{"OPENBLAS_NUM_THREADS", "1"},
                                                     {"OMP_NUM_THREADS", "1"},
                                                     {"NPROC", "1"},
                                                     {"XLA_FLAGS", "--xla_a b"}}),
                                        1, 8);
  EXPECT_TRUE(c.unset_pools.empty());
  EXPECT_EQ(c.xla_dropped, "b");
}

TEST(RankConfig, AnEmptyVariableIsUnset) {
  const RankConfig c = read_rank_config("1-2 r-xp 0 0:0 0 /usr/lib/libgomp.so.1\n",
                                        environment({{"OMP_NUM_THREADS", ""}}), 1, 2);
  ASSERT_EQ(c.unset_pools.size(), 1u);
  EXPECT_EQ(c.unset_pools[0].variable, "OMP_NUM_THREADS");
}

RankRecord rank(int number, std::string host, std::vector<unsigned> cpus, int node_cpus = 4) {
  RankRecord r;
  r.rank = number;
  r.host = std::move(host);
  r.cpus = std::move(cpus);
  r.config.busy_threads_peak = 1;
  r.config.node_cpus = node_cpus;
  return r;
}

const JobFinding* find(const std::vector<JobFinding>& findings, const std::string& kind) {
  for (const JobFinding& f : findings) {
    if (f.kind == kind) return &f;
  }
  return nullptr;
}

TEST(JobFindings, AWellConfiguredJobHasNone) {
  std::vector<RankRecord> records = {rank(0, "a", {0}), rank(1, "a", {1}), rank(2, "b", {0}),
                                     rank(3, "b", {1})};
  // One rank alone on a node may run unbound; bound to one CPU a library's
  // pool is one thread whatever its variable says.
  records.push_back(rank(4, "c", {0, 1, 2, 3}));
  records[0].config.unset_pools.push_back({"OMP_NUM_THREADS", "libgomp.so.1"});
  EXPECT_TRUE(job_findings(records).empty());
}

TEST(JobFindings, MoreBusyThreadsThanCpusNamesTheRankAndItsThreads) {
  std::vector<RankRecord> records = {rank(0, "a", {0}), rank(1, "a", {1})};
  records[1].config.busy_threads_peak = 3;
  records[1].threads = {{"python3", 2.5}, {"openblas", 1.0}, {"idle", 0}};
  const auto findings = job_findings(records);
  const JobFinding* f = find(findings, "threads-over-cpus");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ranks, std::vector<int>{1});
  EXPECT_EQ(f->nodes, std::vector<std::string>{"a"});
  EXPECT_NE(f->evidence.find("rank 1 on a ran 3 threads at once on 1 CPU (1)"), std::string::npos)
      << f->evidence;
  EXPECT_NE(f->evidence.find("python3, openblas"), std::string::npos) << f->evidence;
  EXPECT_EQ(f->evidence.find("idle"), std::string::npos) << f->evidence;
  EXPECT_EQ(findings.size(), 1u);
}

TEST(JobFindings, RanksSharingACpuAreOneFindingPerJob) {
  std::vector<RankRecord> records = {rank(0, "a", {0}), rank(1, "a", {0}), rank(2, "b", {2}),
                                     rank(3, "b", {2}), rank(4, "b", {3})};
  const auto findings = job_findings(records);
  const JobFinding* f = find(findings, "shared-cpus");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(f->nodes, (std::vector<std::string>{"a", "b"}));
  EXPECT_NE(f->evidence.find("on a ranks 0-1 share 1 CPU 0"), std::string::npos) << f->evidence;
  EXPECT_NE(f->evidence.find("on b ranks 2-3 share 1 CPU 2"), std::string::npos) << f->evidence;
  EXPECT_NE(f->fix.find("--bind-to core"), std::string::npos);
}

TEST(JobFindings, RanksEachHoldingTheSameSeveralCpusAreSaidToBe) {
  std::vector<RankRecord> records = {rank(0, "a", {0, 1, 2, 3}, 8), rank(1, "a", {0, 1, 2, 3}, 8)};
  const auto findings = job_findings(records);
  const JobFinding* f = find(findings, "shared-cpus");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.find("share 4 CPUs 0-3 (each bound to all of them)"), std::string::npos)
      << f->evidence;
}

// Open MPI's default past two ranks per node: each rank bound to a whole
// NUMA node (or package) that its neighbours share. One finding, in place
// of shared-cpus.
TEST(JobFindings, RanksBoundToOneNumaNodeAreADomainBinding) {
  std::vector<RankRecord> records = {rank(0, "a", {0, 1, 2, 3}, 8), rank(1, "a", {0, 1, 2, 3}, 8),
                                     rank(2, "a", {4, 5, 6, 7}, 8), rank(3, "b", {0, 1, 2, 3}, 8)};
  for (int r : {0, 1, 3}) records[r].config.binding_domain = "NUMA node 0";
  records[2].config.binding_domain = "NUMA node 1";
  const auto findings = job_findings(records);
  const JobFinding* f = find(findings, "domain-binding");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ranks, (std::vector<int>{0, 1}));  // rank 2 and rank 3 are alone in theirs
  EXPECT_NE(f->evidence.find("on a ranks 0-1 are each bound to all of NUMA node 0 (4 CPUs 0-3)"),
            std::string::npos)
      << f->evidence;
  EXPECT_NE(f->fix.find("--bind-to core"), std::string::npos);
  EXPECT_EQ(find(findings, "shared-cpus"), nullptr);
  // A core-bound rank inside that domain still overlaps the two.
  records.push_back(rank(4, "a", {0}, 8));
  const auto with_core = job_findings(records);
  const JobFinding* overlap = find(with_core, "shared-cpus");
  ASSERT_NE(overlap, nullptr);
  EXPECT_EQ(overlap->ranks, (std::vector<int>{0, 1, 4}));
}

// The kernel's topology files of a node of 2 packages of 4 CPUs, each
// package two NUMA nodes of 2 CPUs (and a NUMA node of memory alone).
class BindingDomainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("corenoise-binding-" + std::to_string(::getpid()));
    for (int node = 0; node < 4; ++node) {
      write("devices/system/node/node" + std::to_string(node) + "/cpulist",
            std::to_string(2 * node) + "-" + std::to_string(2 * node + 1));
    }
    write("devices/system/node/node4/cpulist", "");  // memory alone
    write("devices/system/node/online", "0-4");
    for (int cpu = 0; cpu < 8; ++cpu) {
      write("devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/physical_package_id",
            std::to_string(cpu / 4));
    }
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text << "\n";
  }
  std::filesystem::path root_;
};

TEST_F(BindingDomainTest, ANumaNodeOrAPackageOrNothing) {
  const std::vector<CpuDomain> domains = read_cpu_domains(root_.string());
  ASSERT_EQ(domains.size(), 6u);  // 4 NUMA nodes with CPUs, 2 packages
  EXPECT_EQ(domains[0].name, "NUMA node 0");
  EXPECT_EQ(domains[5].name, "package 1");
  EXPECT_EQ(domains[5].cpus, (std::vector<unsigned>{4, 5, 6, 7}));
  EXPECT_EQ(binding_domain(domains, {0, 1}), "NUMA node 0");
  EXPECT_EQ(binding_domain(domains, {6, 7}), "NUMA node 3");
  EXPECT_EQ(binding_domain(domains, {4, 5, 6, 7}), "package 1");
  EXPECT_EQ(binding_domain(domains, {1, 2}), "");
  EXPECT_EQ(binding_domain(domains, {0}), "");  // a core: bound as it should be
  EXPECT_EQ(binding_domain(domains, {0, 1, 2, 3, 4, 5, 6, 7}), "");  // the node: unbound-ranks
  EXPECT_TRUE(read_cpu_domains(root_.string() + "/missing").empty());
}

TEST(JobFindings, UnboundRanksSharingANodeAreNamed) {
  std::vector<RankRecord> records = {rank(0, "a", {0, 1, 2, 3}), rank(1, "a", {0, 1, 2, 3})};
  const auto findings = job_findings(records);
  const JobFinding* f = find(findings, "unbound-ranks");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ranks, (std::vector<int>{0, 1}));
  EXPECT_NE(f->evidence.find("on a 2 ranks (0-1) of 2 may run on all 4 CPUs"), std::string::npos)
      << f->evidence;
  EXPECT_EQ(find(findings, "shared-cpus"), nullptr);
}

TEST(JobFindings, UnsetPoolsCountOnlyWhereARankHasSeveralCpus) {
  std::vector<RankRecord> records = {rank(0, "a", {0, 1}, 4), rank(1, "a", {2}, 4)};
  records[0].config.unset_pools.push_back({"OPENBLAS_NUM_THREADS", "libopenblas.so.0"});
  records[1].config.unset_pools.push_back({"OPENBLAS_NUM_THREADS", "libopenblas.so.0"});
  const auto findings = job_findings(records);
  const JobFinding* f = find(findings, "pool-size-unset");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ranks, std::vector<int>{0});
  EXPECT_NE(f->evidence.find("rank 0 on a, on 2 CPUs: OPENBLAS_NUM_THREADS (libopenblas.so.0)"),
            std::string::npos)
      << f->evidence;
}

TEST(JobFindings, XlaFlagsWordsAreQuotedOncePerValue) {
  std::vector<RankRecord> records;
  for (int r = 0; r < 6; ++r) {
    records.push_back(rank(r, "a", {static_cast<unsigned>(r)}, 8));
    records.back().config.xla_dropped = "intra_op_parallelism_threads=1";
  }
  const auto findings = job_findings(records);
  const JobFinding* f = find(findings, "xla-flags-dropped");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ranks.size(), 6u);
  EXPECT_NE(f->evidence.find("XLA ignores 'intra_op_parallelism_threads=1' on 6 ranks (0-5)"),
            std::string::npos)
      << f->evidence;
  EXPECT_NE(f->fix.find("PJRT_NPROC"), std::string::npos);
}

TEST(JobFindings, AThousandRanksWithOneMistakeAreOneFindingWithAFewExamples) {
  std::vector<RankRecord> records;
  for (int r = 0; r < 1000; ++r) {
    records.push_back(rank(r, "n" + std::to_string(r / 10), {static_cast<unsigned>(r % 10)}, 10));
    records.back().config.busy_threads_peak = 2;
  }
  const auto findings = job_findings(records);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks.size(), 1000u);
  EXPECT_EQ(findings[0].nodes.size(), 100u);
  EXPECT_NE(findings[0].evidence.find("; and 997 more"), std::string::npos);
}

TEST(JobFindings, RecordsWithoutAConfigurationGiveNone) {
  RankRecord a = rank(0, "a", {0});
  RankRecord b = rank(1, "a", {0});
  a.config = RankConfig{};
  b.config = RankConfig{};
  EXPECT_TRUE(job_findings({a, b}).empty());
}

}  // namespace
}  // namespace corenoise
