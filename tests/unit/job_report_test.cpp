// collector/job/model/job_report.h: the report built from records of four ranks
// on two nodes, seen through its JSON view (report/job_report_json.h) and
// its banner (report/job_banner.h), and the records' wire form
// (collector/job/model/rank_record.h).
#include "collector/job/model/job_report.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "collector/report/cause_advice.h"
#include "collector/report/job_banner.h"
#include "collector/report/job_report_json.h"
#include "probe/verdict_text.h"
#include "tests/tools/sample_causes.h"

namespace corenoise {
namespace {

using nlohmann::json;

// A clean rank: 8 s computing, 7.5 s of it on its CPU, 12 s waiting, on
// its CPU all that time (MPI polls).
RankMeasures clean_measures() {
  RankMeasures m;
  m.elapsed_seconds = 20;
  m.compute_seconds = 8;
  m.compute_cpu_seconds = 7.5;
  m.wait_seconds = 12;
  m.wait_cpu_seconds = 12;
  m.calls = 100;
  m.steps = 50;
  m.samples = 40;
  m.own_threads_seconds = 0.25;
  m.other_processes_seconds = 0.25;
  m.interrupt_seconds = 0.125;
  m.fault_seconds = 0.0625;
  m.minor_faults = 1000;
  m.clock_hz = 2e9;
  m.off_cpu_seconds = off_cpu(m);
  return m;
}

RankRecord record(int rank, const std::string& host, unsigned cpu) {
  RankRecord r;
  r.rank = rank;
  r.host = host;
  r.cpus = {cpu};
  r.pid = 1000 + rank;
  r.measures = clean_measures();
  return r;
}

// Ranks 0 and 1 on node-a (CPUs 0, 1), 2 and 3 on node-b (CPUs 2, 3).
// A node's corenoised verdict on a noisy CPU.
Cause preempted() { return sample_cause(CoreState::noisy); }

// Rank 2 computed 1 s longer behind its own threads and made the others
// wait 3 s; rank 3 lost 0.5 s to another process and caused 1 s.
std::vector<RankRecord> four_ranks() {
  std::vector<RankRecord> records = {record(0, "node-a", 0), record(1, "node-a", 1),
                                     record(2, "node-b", 2), record(3, "node-b", 3)};
  RankRecord& r0 = records[0];
  r0.node_daemon =
      std::map<unsigned, DaemonVerdict>{{0, {"ok", {}, 5.0}}, {1, {"noisy", preempted(), 5.0}}};
  r0.node_culprits = {{1, 700, "updatedb", 0.5}};
  r0.sites = {{"MPI_Allreduce", "solver.c:42", 50, 6, 0.5},
              {"MPI_Barrier", "main.c:10", 2, 0.25, 0.125}};
  records[1].sites = {{"MPI_Allreduce", "solver.c:42", 50, 5, 0.75}};
  records[1].threads = {{"progress", 0.5}};  // no own-threads cause: not a culprit

  RankRecord& r2 = records[2];
  r2.measures.compute_seconds = 9;
  r2.measures.own_threads_seconds = 2.25;
  r2.measures.wait_seconds = 11;
  r2.measures.wait_cpu_seconds = 11;
  r2.measures.wait_caused_seconds = 3;
  r2.threads = {{"omp-worker", 1.5}, {"omp-idle", 0}};
  r2.sites = {{"MPI_Allreduce", "solver.c:42", 50, 1, 0.25},
              {"MPI_Bcast", "solver.c:42", 1, 0.5, 0.5}};
  // node-b's view, from its reporting rank: a process on each of its CPUs
  // and one on a CPU no rank runs on.
  r2.node_culprits = {
      {2, 900, "backup", 0.4}, {3, 901, "stress-ng", 0.6}, {5, 902, "elsewhere", 1.0}};
  r2.node_daemon = std::map<unsigned, DaemonVerdict>{{2, {"noisy", preempted(), std::nullopt}},
                                                     {3, {"ok", {}, std::nullopt}}};

  RankRecord& r3 = records[3];
  r3.measures.compute_seconds = 8.5;
  r3.measures.other_processes_seconds = 0.75;
  r3.measures.wait_caused_seconds = 1;
  r3.threads = {{"helper", 0.25}};
  r3.sites = {{"MPI_Allreduce", "solver.c:42", 52, 2, 1.5},
              {"MPI_Allreduce", "other.c:7", 3, 0.125, 0.125}};
  return records;
}

JobFacts facts() {
  JobFacts f;
  f.version = "1.2.3";
  f.program = "./solver --steps 50";
  f.family = "mpich";
  f.started_unix_seconds = 1700000000;
  f.ranks_total = 4;
  f.steps = 50;
  f.lateness = {{0, 0}, {0, 0.5f}, {1.5f, 1.5f}, {0.5f, 0.5f}};
  f.steps_per_column = 25;
  f.clock_source = "perf_event";
  return f;
}

// The report as --json writes it.
json job_report(const JobFacts& f, const std::vector<RankRecord>& records) {
  return to_json(build_job_report(f, records));
}

// The banner of the same report.
std::string banner_of(const JobFacts& f, const std::vector<RankRecord>& records,
                      int worst_ranks = 5) {
  return job_banner(build_job_report(f, records), worst_ranks);
}

const json& rank_of(const json& report, int rank) {
  for (const json& r : report["ranks"]) {
    if (r["rank"] == rank) return r;
  }
  static const json none;
  ADD_FAILURE() << "no rank " << rank;
  return none;
}

TEST(JobReportTest, TopLevelFields) {
  const json report = job_report(facts(), four_ranks());
  EXPECT_EQ(report["schema"], "corenoise-job/1");
  EXPECT_EQ(report["version"], "1.2.3");
  EXPECT_EQ(report["program"], "./solver --steps 50");
  EXPECT_EQ(report["mpi_family"], "mpich");
  EXPECT_EQ(report["ranks_total"], 4);
  EXPECT_EQ(report["ranks_reported"], 4);
  EXPECT_EQ(report["nodes"], 2);
  EXPECT_EQ(report["steps"], 50);
  EXPECT_EQ(report["complete"], true);
  EXPECT_TRUE(report["incomplete_reason"].is_null());
  EXPECT_DOUBLE_EQ(report["elapsed_seconds"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(report["wait_seconds"].get<double>(), 12 + 12 + 11 + 12);
  EXPECT_DOUBLE_EQ(report["compute_seconds"].get<double>(), 8 + 8 + 9 + 8.5);
  EXPECT_DOUBLE_EQ(report["wait_caused_seconds"].get<double>(), 4);
  // 4 ranks: 5 % of the reference's 8 s.
  EXPECT_DOUBLE_EQ(report["cause_threshold_seconds"].get<double>(), 0.05 * 8);
  EXPECT_EQ(report["clock_source"], "perf_event");
  EXPECT_EQ(report["lateness"]["steps_per_column"], 25);
  EXPECT_EQ(report["lateness"]["columns"], 2);
  ASSERT_EQ(report["lateness"]["rows"].size(), 4u);
  EXPECT_DOUBLE_EQ(report["lateness"]["rows"][2][0].get<double>(), 1.5);
}

TEST(JobReportTest, CausesAreTheSevenOfTheVocabulary) {
  const json report = job_report(facts(), four_ranks());
  std::set<std::string> expected;
  for (JobCause c : kJobCauses) expected.insert(std::string(to_string(c)));
  ASSERT_EQ(expected.size(), 7u);
  std::set<std::string> keys;
  for (const auto& [key, value] : report["causes"].items()) keys.insert(key);
  EXPECT_EQ(keys, expected);
  // The waiting each late rank caused, on its causes: rank 2's 3 s on
  // own-threads, rank 3's 1 s on other-processes.
  EXPECT_DOUBLE_EQ(report["causes"]["own-threads"].get<double>(), 3);
  EXPECT_DOUBLE_EQ(report["causes"]["other-processes"].get<double>(), 1);
  for (const char* none : {"interrupts", "steal", "page-faults", "slower-clock", "more-work"}) {
    EXPECT_DOUBLE_EQ(report["causes"][none].get<double>(), 0) << none;
  }
  for (const json& r : report["ranks"]) {
    std::set<std::string> rank_keys;
    for (const auto& [key, value] : r["causes"].items()) rank_keys.insert(key);
    EXPECT_EQ(rank_keys, expected) << "rank " << r["rank"];
  }
}

TEST(JobReportTest, RanksCausesAndWorst) {
  const json report = job_report(facts(), four_ranks());
  ASSERT_EQ(report["ranks"].size(), 4u);
  for (int clean : {0, 1}) {
    const json& r = rank_of(report, clean);
    EXPECT_EQ(r["cause"], "none") << clean;
    EXPECT_TRUE(r["advice"].is_null());
    EXPECT_TRUE(r["culprits"].empty());
    EXPECT_DOUBLE_EQ(r["excess_seconds"].get<double>(), 0);
  }
  const json& r2 = rank_of(report, 2);
  EXPECT_EQ(r2["cause"], "own-threads");
  EXPECT_EQ(r2["host"], "node-b");
  EXPECT_EQ(r2["cpus"], "2");
  EXPECT_EQ(r2["pid"], 1002);
  EXPECT_DOUBLE_EQ(r2["causes"]["own-threads"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(r2["excess_seconds"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(r2["wait_caused_seconds"].get<double>(), 3.0);
  EXPECT_EQ(r2["advice"], std::string(cause_advice(JobCause::own_threads)));
  EXPECT_DOUBLE_EQ(r2["counters"]["own_threads_seconds"].get<double>(), 2.25);
  EXPECT_DOUBLE_EQ(r2["counters"]["clock_hz"].get<double>(), 2e9);
  const json& r3 = rank_of(report, 3);
  EXPECT_EQ(r3["cause"], "other-processes");
  EXPECT_DOUBLE_EQ(r3["causes"]["other-processes"].get<double>(), 0.5);

  EXPECT_EQ(report["worst_ranks"], json::array({2, 3}));
}

// The ranks that reported of a job of 2^31 - 1 (a spill file can claim
// one): the report is sized by them, not by their numbers, which once cost
// a 16 GB index and the fuzzer's out-of-memory.
TEST(JobReportTest, RanksNumberedNearTheLargestIntAreReportedByTheirNumbers) {
  std::vector<RankRecord> records = four_ranks();
  const int numbers[] = {5, 2'000'000'000, 7, 2'147'483'646};
  for (std::size_t i = 0; i < records.size(); ++i) records[i].rank = numbers[i];
  JobFacts f = facts();
  f.ranks_total = 2'147'483'647;
  const json report = job_report(f, records);
  ASSERT_EQ(report["ranks"].size(), 4u);
  EXPECT_EQ(rank_of(report, 7)["cause"], "own-threads");
  EXPECT_EQ(rank_of(report, 2'147'483'646)["cause"], "other-processes");
  EXPECT_EQ(report["worst_ranks"], json::array({7, 2'147'483'646}));
}

TEST(JobReportTest, CulpritsOfTheCausesFound) {
  const json report = job_report(facts(), four_ranks());
  // Rank 2: own-threads, so its busy threads (not the idle one); no
  // process although backup ran on its CPU, as other-processes is 0.
  const json& c2 = rank_of(report, 2)["culprits"];
  ASSERT_EQ(c2.size(), 1u) << c2.dump();
  EXPECT_EQ(c2[0]["kind"], "thread");
  EXPECT_EQ(c2[0]["name"], "omp-worker");
  EXPECT_DOUBLE_EQ(c2[0]["seconds"].get<double>(), 1.5);
  // Rank 3: other-processes, so the node's process on its CPU 3 only (not
  // backup on CPU 2, nor elsewhere on 5); no thread although helper ran.
  const json& c3 = rank_of(report, 3)["culprits"];
  ASSERT_EQ(c3.size(), 1u) << c3.dump();
  EXPECT_EQ(c3[0]["kind"], "process");
  EXPECT_EQ(c3[0]["name"], "stress-ng");
  EXPECT_EQ(c3[0]["pid"], 901);
  EXPECT_EQ(c3[0]["cpu"], 3);
  EXPECT_DOUBLE_EQ(c3[0]["seconds"].get<double>(), 0.6);
}

TEST(JobReportTest, DaemonVerdictsOfEachRanksCpus) {
  const json report = job_report(facts(), four_ranks());
  EXPECT_EQ(rank_of(report, 0)["daemon"],
            json({{"0", {{"state", "ok"}, {"cause", ""}, {"age_seconds", 5}}}}));
  EXPECT_EQ(rank_of(report, 1)["daemon"]["1"]["state"], "noisy");
  EXPECT_FALSE(rank_of(report, 1)["daemon"].contains("0"));
  EXPECT_EQ(rank_of(report, 2)["daemon"]["2"]["state"], "noisy");
  EXPECT_EQ(rank_of(report, 3)["daemon"]["3"]["state"], "ok");
  // A node without a daemon: null.
  auto records = four_ranks();
  records[2].node_daemon = std::nullopt;
  const json without = job_report(facts(), records);
  EXPECT_TRUE(rank_of(without, 2)["daemon"].is_null());
  EXPECT_TRUE(rank_of(without, 3)["daemon"].is_null());
  EXPECT_FALSE(rank_of(without, 0)["daemon"].is_null());
}

TEST(JobReportTest, CallSitesMergedAcrossRanks) {
  const json report = job_report(facts(), four_ranks());
  const json& sites = report["call_sites"];
  ASSERT_EQ(sites.size(), 4u) << sites.dump();
  // Most wait first; the same (call, site) on every rank is one entry,
  // calls the most any rank made, wait summed, the longest one kept.
  EXPECT_EQ(sites[0]["call"], "MPI_Allreduce");
  EXPECT_EQ(sites[0]["site"], "solver.c:42");
  EXPECT_DOUBLE_EQ(sites[0]["calls"].get<double>(), 52);
  EXPECT_DOUBLE_EQ(sites[0]["wait_seconds"].get<double>(), 6 + 5 + 1 + 2);
  EXPECT_DOUBLE_EQ(sites[0]["wait_max_seconds"].get<double>(), 1.5);
  // Another call from the same site, and the same call from another site,
  // are entries of their own.
  EXPECT_EQ(sites[1]["call"], "MPI_Bcast");
  EXPECT_EQ(sites[1]["site"], "solver.c:42");
  EXPECT_DOUBLE_EQ(sites[1]["wait_seconds"].get<double>(), 0.5);
  EXPECT_EQ(sites[2]["call"], "MPI_Barrier");
  EXPECT_DOUBLE_EQ(sites[2]["calls"].get<double>(), 2);
  EXPECT_EQ(sites[3]["call"], "MPI_Allreduce");
  EXPECT_EQ(sites[3]["site"], "other.c:7");
  EXPECT_DOUBLE_EQ(sites[3]["wait_seconds"].get<double>(), 0.125);
}

TEST(JobBannerTest, NamesTheWorstRankItsHostAndTheFix) {
  const std::string banner = banner_of(facts(), four_ranks());
  EXPECT_NE(banner.find("4 ranks on 2 nodes, 50 steps"), std::string::npos) << banner;
  EXPECT_EQ(banner.find("INCOMPLETE"), std::string::npos) << banner;
  const std::size_t rank2 = banner.find("rank 2 on node-b cpu 2");
  const std::size_t rank3 = banner.find("rank 3 on node-b cpu 3");
  ASSERT_NE(rank2, std::string::npos) << banner;
  ASSERT_NE(rank3, std::string::npos) << banner;
  EXPECT_LT(rank2, rank3);  // worst first
  EXPECT_EQ(banner.find("rank 0 on"), std::string::npos) << banner;
  EXPECT_EQ(banner.find("rank 1 on"), std::string::npos) << banner;
  EXPECT_NE(banner.find(std::string(cause_words(JobCause::own_threads))), std::string::npos)
      << banner;
  EXPECT_NE(banner.find("thread omp-worker"), std::string::npos) << banner;
  EXPECT_NE(banner.find("process stress-ng"), std::string::npos) << banner;
  EXPECT_NE(banner.find("fix: " + std::string(cause_advice(JobCause::own_threads))),
            std::string::npos)
      << banner;
  EXPECT_NE(banner.find("fix: " + std::string(cause_advice(JobCause::other_processes))),
            std::string::npos)
      << banner;
  EXPECT_NE(banner.find("corenoised on cpu 2: noisy (" + cause_text(preempted()) + ")"),
            std::string::npos)
      << banner;
  EXPECT_NE(banner.find("MPI_Allreduce from solver.c:42"), std::string::npos) << banner;
  // worst_ranks = 1 shows rank 2 alone.
  const std::string one = banner_of(facts(), four_ranks(), 1);
  EXPECT_NE(one.find("rank 2 on node-b"), std::string::npos) << one;
  EXPECT_EQ(one.find("rank 3 on node-b"), std::string::npos) << one;
}

// A stencil's job: rank 3's lateness was waited for in exchanges, and
// the report splits the waiting, and the waiting caused, between
// collectives and exchanges.
TEST(JobReportTest, WaitingIsSplitBetweenCollectivesAndExchanges) {
  auto records = four_ranks();
  for (auto& r : records) r.measures.exchange_wait_seconds = 4;
  records[3].measures.exchange_wait_seconds = 0.5;
  records[3].measures.exchange_wait_caused_seconds = 0.75;  // of its wait_caused_seconds, 1
  records[1].measures.exchange_uncharged_seconds = 0.25;
  const json report = job_report(facts(), records);
  const std::string banner = banner_of(facts(), records);
  EXPECT_DOUBLE_EQ(report["exchange_wait_seconds"].get<double>(), 12.5);
  EXPECT_DOUBLE_EQ(report["collective_wait_seconds"].get<double>(), 47 - 12.5);
  EXPECT_DOUBLE_EQ(report["exchange_wait_caused_seconds"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(report["collective_wait_caused_seconds"].get<double>(), 4 - 0.75);
  EXPECT_DOUBLE_EQ(report["exchange_uncharged_seconds"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(rank_of(report, 3)["exchange_wait_caused_seconds"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(rank_of(report, 3)["exchange_wait_seconds"].get<double>(), 0.5);
  EXPECT_NE(banner.find("the ranks waited 47.00 s in MPI (58 % of their time): 34.50 s at "
                        "collectives, 12.50 s in exchanges"),
            std::string::npos)
      << banner;
  EXPECT_NE(
      banner.find("4.00 s of it for late ranks: 3.25 s at collectives, 750.0 ms in exchanges"),
      std::string::npos)
      << banner;
}

TEST(JobBannerTest, AnIncompleteReportSaysSo) {
  JobFacts f = facts();
  f.incomplete_reason = "rank 3 did not reach MPI_Finalize within 30 s";
  auto records = four_ranks();
  records.pop_back();
  const json report = job_report(f, records);
  EXPECT_EQ(report["complete"], false);
  EXPECT_EQ(report["incomplete_reason"], f.incomplete_reason);
  EXPECT_EQ(report["ranks_reported"], 3);
  const std::string banner = banner_of(f, records);
  EXPECT_NE(banner.find("3 ranks of 4"), std::string::npos) << banner;
  EXPECT_NE(banner.find("INCOMPLETE: rank 3 did not reach MPI_Finalize within 30 s"),
            std::string::npos)
      << banner;
}

TEST(JobBannerTest, ACleanJobNamesNoCause) {
  std::vector<RankRecord> records = {record(0, "node-a", 0), record(1, "node-a", 1)};
  const json report = job_report(facts(), records);
  EXPECT_TRUE(report["worst_ranks"].empty());
  const std::string banner = banner_of(facts(), records);
  EXPECT_NE(banner.find("no cause to name"), std::string::npos) << banner;
  EXPECT_EQ(banner.find("worst ranks"), std::string::npos) << banner;
  EXPECT_EQ(banner.find("fix:"), std::string::npos) << banner;
}

TEST(RankRecordWireTest, RoundTrip) {
  RankRecord r = four_ranks()[2];
  for (std::size_t i = 0; i < kRankMeasureCount; ++i)
    as_array(r.measures)[i] = 0.5 + static_cast<double>(i);
  // Through the text, as it travels.
  const RankRecord back = record_from_wire(json::parse(to_wire(r).dump()));
  EXPECT_EQ(back.rank, 2);
  EXPECT_EQ(back.host, "node-b");
  EXPECT_EQ(back.cpus, r.cpus);
  EXPECT_EQ(back.pid, 1002);
  for (std::size_t i = 0; i < kRankMeasureCount; ++i) {
    EXPECT_EQ(as_array(back.measures)[i], as_array(r.measures)[i]) << "measure " << i;
  }
  ASSERT_EQ(back.threads.size(), 2u);
  EXPECT_EQ(back.threads[0].name, "omp-worker");
  EXPECT_EQ(back.threads[0].seconds, 1.5);
  ASSERT_EQ(back.sites.size(), 2u);
  EXPECT_EQ(back.sites[1].call, "MPI_Bcast");
  EXPECT_EQ(back.sites[1].site, "solver.c:42");
  EXPECT_EQ(back.sites[1].calls, 1);
  EXPECT_EQ(back.sites[1].wait_seconds, 0.5);
  EXPECT_EQ(back.sites[1].wait_max_seconds, 0.5);
  ASSERT_EQ(back.node_culprits.size(), 3u);
  EXPECT_EQ(back.node_culprits[1].cpu, 3);
  EXPECT_EQ(back.node_culprits[1].pid, 901);
  EXPECT_EQ(back.node_culprits[1].command, "stress-ng");
  EXPECT_EQ(back.node_culprits[1].seconds, 0.6);
  EXPECT_EQ(back.node_daemon, r.node_daemon);
  // A report from the round-tripped records is the same report.
  auto records = four_ranks();
  std::vector<RankRecord> travelled;
  for (const auto& record : records)
    travelled.push_back(record_from_wire(json::parse(to_wire(record).dump())));
  EXPECT_EQ(job_report(facts(), travelled), job_report(facts(), records));
}

TEST(RankRecordWireTest, OptionalPartsStayOptional) {
  const RankRecord plain = record(1, "node-a", 1);
  const json wire = to_wire(plain);
  EXPECT_FALSE(wire.contains("culprits"));
  EXPECT_FALSE(wire.contains("daemon"));
  const RankRecord back = record_from_wire(wire);
  EXPECT_TRUE(back.node_culprits.empty());
  EXPECT_FALSE(back.node_daemon.has_value());
  EXPECT_TRUE(back.threads.empty());
  EXPECT_TRUE(back.sites.empty());
  // A record missing a field is an error, not a rank of zeros.
  json broken = wire;
  broken.erase("measures");
  EXPECT_THROW(record_from_wire(broken), json::exception);
  EXPECT_THROW(record_from_wire(json::object()), json::exception);
}

}  // namespace
}  // namespace corenoise
