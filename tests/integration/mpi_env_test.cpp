// MpiEnvironment under a real process manager, for each MPI family of the
// build: tests/tools/mpi_env_check run as a singleton and with 1, 2 and 4
// ranks, under mpiexec.mpich and mpirun.openmpi. MPIR_CVAR_NUM_CLIQUES=2
// makes MPICH's MPI_Comm_split_type(SHARED) see two "nodes" on this one
// host, which is how multi-node grouping is tested without a cluster (and
// why no test keys anything on the hostname). No timing assertions: the machine may be
// small and loaded; `timeout` only stops a hung job from hanging the suite. (One test
// relies on the second by which leader 0's watchdog precedes the others': that is
// the product's ordering, not a measurement.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mpi_launchers.h"
#include "process.h"

namespace corenoise {
namespace {

using nlohmann::json;
using testing::MpiLauncher;
using testing::run_command;

const std::string kCheck = testing::shell_word(MPI_ENV_CHECK_BIN);  // for run_command
// Generous: 4 busy-polling ranks on 2 loaded cores start slowly.
const std::string kTimeout = "timeout -k 10 180 ";

struct Job {
  int exit_code;
  std::string err;
  std::vector<json> ranks;  // indexed by world rank
};

Job run_job(const std::string& command) {
  const auto r = run_command(kTimeout + command);
  Job job{r.exit_code, r.err, {}};
  std::map<int, json> by_rank;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;
    const json j = json::parse(line);
    by_rank[j["world_rank"].get<int>()] = j;
  }
  for (auto& [rank, j] : by_rank) job.ranks.push_back(j);
  return job;
}

// Checks one job's lines against the layout and every helper's result.
void expect_consistent(const Job& job, int world_size, int node_count,
                       const std::string& library_prefix) {
  ASSERT_EQ(job.exit_code, 0) << job.err;
  ASSERT_EQ(static_cast<int>(job.ranks.size()), world_size) << job.err;
  std::map<int, int> ranks_per_node;
  std::map<int, int> leader_of_node;
  for (int r = 0; r < world_size; ++r) {
    const json& j = job.ranks[r];
    SCOPED_TRACE(j.dump());
    EXPECT_EQ(j["world_rank"], r);
    EXPECT_EQ(j["world_size"], world_size);
    EXPECT_EQ(j["node_count"], node_count);
    const int node = j["node_index"];
    EXPECT_GE(node, 0);
    EXPECT_LT(node, node_count);
    ++ranks_per_node[node];
    EXPECT_EQ(j["is_leader"], j["node_rank"] == 0);
    EXPECT_GE(j["thread_level"].get<int>(), 1);  // MPI_THREAD_FUNNELED in both
    // The launcher's family is the library that answered.
    EXPECT_EQ(j["library_version"].get<std::string>().rfind(library_prefix, 0), 0U);
    if (j["is_leader"]) {
      EXPECT_EQ(leader_of_node.count(node), 0U) << "two leaders on node " << node;
      leader_of_node[node] = r;
      EXPECT_GT(j["bytes_sent"].get<std::uint64_t>(), 0U);
    } else {
      EXPECT_EQ(j["non_leader_rejected"], true);
    }
  }
  ASSERT_EQ(static_cast<int>(leader_of_node.size()), node_count);
  // Leaders are numbered in world-rank order: rank 0 leads node 0.
  EXPECT_EQ(leader_of_node[0], 0);
  for (int n = 1; n < node_count; ++n) EXPECT_GT(leader_of_node[n], leader_of_node[n - 1]);
  for (int r = 0; r < world_size; ++r) {
    const json& j = job.ranks[r];
    const int size = ranks_per_node[j["node_index"]];
    EXPECT_EQ(j["node_size"], size);
    // Node collectives: the leader's message, every rank's blob on the
    // leader in node-rank order, and one zeroed segment all ranks share.
    const json& node = j["node"];
    SCOPED_TRACE(node.dump());
    EXPECT_EQ(node["broadcast"], "node " + std::to_string(j["node_index"].get<int>()));
    if (j["is_leader"]) {
      ASSERT_EQ(static_cast<int>(node["blobs"].size()), size);
      for (int i = 0; i < size; ++i) EXPECT_EQ(node["blobs"][i], json(std::vector<int>(i + 1, i)));
    } else {
      EXPECT_TRUE(node["blobs"].empty());
    }
    EXPECT_EQ(node["shared_zeroed"], true);
    std::vector<int> expected;
    for (int i = 0; i < size; ++i) expected.push_back(100 + i);
    EXPECT_EQ(node["shared"], json(expected));
  }

  const double n = node_count;
  const double index_sum = n * (n - 1) / 2;
  bool merge_threw = false;
  std::set<double> start_times;
  for (const auto& [node, rank] : leader_of_node) {
    const json& l = job.ranks[rank]["leader"];
    SCOPED_TRACE(l.dump());
    start_times.insert(l["start_time"].get<double>());
    EXPECT_EQ(l["sum_double"], json({index_sum, n}));
    EXPECT_EQ(l["min_double"], 0.5);
    EXPECT_EQ(l["max_double"], n - 0.5);
    EXPECT_EQ(l["sum_u64"], json({static_cast<std::uint64_t>(index_sum), node_count}));
    EXPECT_EQ(l["min_u64"], 7);
    EXPECT_EQ(l["max_u64"], node_count - 1 + 7);
    // Max-value merge: even records from the last node, odd from node 0.
    ASSERT_EQ(l["max_records"].size(), 3U);
    EXPECT_EQ(l["max_records"][0], json({{"node", node_count - 1}, {"value", n}}));
    EXPECT_EQ(l["max_records"][1], json({{"node", 0}, {"value", -1.0}}));
    EXPECT_EQ(l["max_records"][2], json({{"node", node_count - 1}, {"value", n}}));
    EXPECT_EQ(l["first_record_node"], 0);
    merge_threw = merge_threw || l["merge_threw"].get<bool>();
    EXPECT_EQ(l["broadcast"], "hello from node 0");
    if (node == 0) {
      ASSERT_EQ(static_cast<int>(l["gathered"].size()), node_count);
      ASSERT_EQ(static_cast<int>(l["blobs"].size()), node_count);
      for (int i = 0; i < node_count; ++i) {
        EXPECT_EQ(l["gathered"][i], json({i, leader_of_node[i]}));
        EXPECT_EQ(l["blobs"][i], json(std::vector<int>(i + 1, i)));
      }
    } else {
      EXPECT_TRUE(l["gathered"].empty());
      EXPECT_TRUE(l["blobs"].empty());
    }
  }
  EXPECT_EQ(start_times.size(), 1U) << "leaders disagree on the start instant";
  // With one node nothing is ever merged; with more, someone ran the merge.
  EXPECT_EQ(merge_threw, node_count > 1);
}

class MpiEnv : public ::testing::TestWithParam<MpiLauncher> {
 protected:
  const MpiLauncher& launcher() const { return GetParam(); }
  Job run(int ranks) const { return run_job(launcher().job(ranks) + kCheck); }
  void expect(const Job& job, int world_size, int node_count) const {
    expect_consistent(job, world_size, node_count, launcher().library_prefix);
  }
};

// No launcher: the family CORENOISE_MPI names, else MPICH, the first loader's choice.
TEST_P(MpiEnv, SingletonWithoutALauncherIsOneRankOnOneNode) {
  expect(run_job("env CORENOISE_MPI=" + launcher().family + " " + kCheck), 1, 1);
}

// No launcher and no CORENOISE_MPI: the loader's first choice, MPICH.
TEST(MpiEnvDefault, ASingletonWithNoChoiceRunsOnMpich) {
  expect_consistent(run_job("env -u CORENOISE_MPI " + kCheck), 1, 1, "MPICH Version:");
}

TEST_P(MpiEnv, OneRank) { expect(run(1), 1, 1); }

TEST_P(MpiEnv, TwoRanksOnOneHostAreOneNode) { expect(run(2), 2, 1); }

TEST_P(MpiEnv, FourRanksOnOneHostAreOneNode) { expect(run(4), 4, 1); }

// The families that can split one host into nodes (MPICH).
class MpiEnvFakeNodes : public MpiEnv {};

TEST_P(MpiEnvFakeNodes, TwoRanksOnTwoFakeNodes) {
  expect(run_job(launcher().two_node_job(2) + kCheck), 2, 2);
}

TEST_P(MpiEnvFakeNodes, FourRanksOnTwoFakeNodes) {
  const Job job = run_job(launcher().two_node_job(4) + kCheck);
  expect(job, 4, 2);
  if (job.ranks.size() == 4) {
    for (const auto& j : job.ranks) EXPECT_EQ(j["node_size"], 2) << j.dump();
  }
}

TEST_P(MpiEnv, WatchdogAbortsAJobWithAHungRank) {
  const auto r = run_command(kTimeout + launcher().job(2) + kCheck + " --hang-rank 1 --timeout 2");
  // 124/137 would be `timeout` killing the job: the watchdog did not work.
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 124) << r.err;
  EXPECT_NE(r.exit_code, 137) << r.err;
  EXPECT_NE(r.err.find("corenoise: mpi_env_check did not finish within 2 s on rank "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("aborting the job"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find('{'), std::string::npos) << "no rank should have finished: " << r.out;
}

TEST_P(MpiEnv, WatchdogAbortsASingleton) {
  const auto r = run_command(kTimeout + "env CORENOISE_MPI=" + launcher().family + " " + kCheck +
                             " --hang-rank 0 --timeout 1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 124) << r.err;
  EXPECT_NE(r.exit_code, 137) << r.err;
  EXPECT_NE(r.err.find("did not finish within 1 s on rank 0 (node 0)"), std::string::npos) << r.err;
}

#ifdef MPIRUN_OPENMPI_BIN  // both families built
// The other family's library under this family's launcher sees N singletons;
// every rank must say so instead of running alone.
TEST_P(MpiEnv, ALibraryOfTheOtherFamilyIsCaughtDisagreeing) {
  const std::string other = launcher().family == "mpich" ? "openmpi" : "mpich";
  const auto r = run_command(kTimeout + launcher().job(2, {"CORENOISE_MPI=" + other}) + kCheck);
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find('{'), std::string::npos) << "a rank ran alone: " << r.out;
  EXPECT_NE(r.err.find("the launcher started 2 ranks"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sees a job of 1: the launcher and the MPI library disagree"),
            std::string::npos)
      << r.err;
}
#endif

// A rank hung on one node ends the job on every node.
TEST_P(MpiEnvFakeNodes, WatchdogAbortsAJobWithAHungRankOnAnotherNode) {
  const auto r =
      run_command(kTimeout + launcher().two_node_job(2) + kCheck + " --hang-rank 1 --timeout 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 124) << r.err;
  EXPECT_NE(r.exit_code, 137) << r.err;
  EXPECT_NE(r.err.find("did not finish within 2 s on rank "), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find('{'), std::string::npos) << "no rank should have finished: " << r.out;
}

// A leader that never reaches the leaders' roll call is named by node and
// host (MPI_Get_processor_name) in leader 0's watchdog message, which comes
// before the other ranks' (theirs are a second later).
TEST_P(MpiEnvFakeNodes, WatchdogNamesTheNodeTheLeadersWaitFor) {
  const auto r = run_command(kTimeout + launcher().two_node_job(2) + kCheck +
                             " --hang-rank 1 --hang-at leaders --timeout 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 124) << r.err;
  EXPECT_NE(r.exit_code, 137) << r.err;
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  EXPECT_NE(r.err.find("did not finish within 2 s on rank 0 (node 0), waiting for node 1 (" +
                       std::string(host) + "); aborting the job"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find('{'), std::string::npos) << "no rank should have finished: " << r.out;
}

// MPICH's finalize deadlock on UCX (collector/mpi/mpich_ucx_finalize.h) is
// avoided only if libmpich binds ucp_disconnect_nb to the plugin's, not
// libucp's: the dynamic linker says which it chose.
TEST(MpiEnvMpich, LibmpichBindsThePluginsUcxDisconnect) {
  const auto r = run_command(kTimeout + "env LD_DEBUG=bindings CORENOISE_MPI=mpich " + kCheck);
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
  bool bound_to_plugin = false;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("`ucp_disconnect_nb'") == std::string::npos) continue;
    if (line.find("binding file") == std::string::npos) continue;
    if (line.find("libmpich.so") == std::string::npos) continue;
    EXPECT_NE(line.find("libcorenoise-mpi-mpich.so"), std::string::npos) << line;
    bound_to_plugin =
        bound_to_plugin || line.find("libcorenoise-mpi-mpich.so") != std::string::npos;
  }
  EXPECT_TRUE(bound_to_plugin) << "libmpich never bound ucp_disconnect_nb";
}

INSTANTIATE_TEST_SUITE_P(Family, MpiEnv, ::testing::ValuesIn(testing::mpi_launchers()),
                         testing::launcher_name);
INSTANTIATE_TEST_SUITE_P(Family, MpiEnvFakeNodes,
                         ::testing::ValuesIn(testing::mpi_launchers_that_fake_nodes()),
                         testing::launcher_name);

}  // namespace
}  // namespace corenoise
