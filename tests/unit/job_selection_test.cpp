// What rank 0 judges from every rank's summary and which records it asks
// for (collector/job/model/rank_summary.h, job_selection.h), the nodes'
// digests that stand for the records it did not ask for (node_digest.h),
// and the report built from those (job_report.h): the same job, whether
// every record came or only the ranks it names.
#include "collector/job/model/job_selection.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "collector/job/model/job_report.h"
#include "collector/job/model/node_digest.h"
#include "collector/report/job_report_json.h"

namespace corenoise {
namespace {

using nlohmann::json;

// A clean rank of a bulk-synchronous job: 8 s computing on its CPU, 12 s
// waiting, with a spread of a few ms between ranks (`jitter`, in [0, 1)).
RankMeasures clean(double jitter) {
  RankMeasures m;
  m.elapsed_seconds = 20;
  m.compute_seconds = 8 + 0.004 * jitter;
  m.compute_cpu_seconds = 7.9 + 0.004 * jitter;
  m.wait_seconds = 12;
  m.wait_cpu_seconds = 12;
  m.calls = 100;
  m.steps = 50;
  m.clock_hz = 2e9;
  m.off_cpu_seconds = off_cpu(m);
  m.wait_caused_seconds = 0.001 * jitter;
  return m;
}

// `ranks` ranks, `per_node` to a host "nN", each with its configuration
// (one busy thread, one CPU of 8) and a call site; rank `late` with
// 1 s more work, having caused 3 s of waiting, and rank `noisy` kept off
// its CPU 0.5 s by another process, having caused 1 s. Every rank's
// threads over its CPUs where `threads_over` (a finding on every rank).
std::vector<RankRecord> job(int ranks, int per_node, int late, int noisy,
                            bool threads_over = false) {
  std::vector<RankRecord> records;
  for (int r = 0; r < ranks; ++r) {
    RankRecord rec;
    rec.rank = r;
    rec.host = "n" + std::to_string(r / per_node);
    rec.cpus = {static_cast<unsigned>(r % per_node)};
    rec.pid = 1000 + r;
    rec.measures = clean(std::fmod(r * 0.618, 1.0));
    rec.config.busy_threads_peak = threads_over ? 3 : 1;
    rec.config.node_cpus = 8;
    rec.sites = {{"MPI_Allreduce", "solver.c:42", 50, 12, 0.5}};
    rec.warmup = rec.measures;
    for (std::size_t i = 0; i < kRankMeasureCount; ++i) as_array(*rec.warmup)[i] /= 10;
    rec.warmup->steps = 5;
    rec.warmup->clock_hz = rec.measures.clock_hz;
    records.push_back(rec);
  }
  RankMeasures& l = records[static_cast<std::size_t>(late)].measures;
  l.compute_seconds += 1;
  l.compute_cpu_seconds += 1;
  l.wait_seconds -= 1;
  l.wait_cpu_seconds -= 1;
  l.wait_caused_seconds = 3;
  RankMeasures& n = records[static_cast<std::size_t>(noisy)].measures;
  n.compute_seconds += 0.5;
  n.other_processes_seconds += 0.5;
  n.wait_seconds -= 0.5;
  n.wait_cpu_seconds -= 0.5;
  n.wait_caused_seconds = 1;
  records[static_cast<std::size_t>(noisy)].node_culprits = {};
  return records;
}

TEST(RankSummary, ANodeIsTheLowestRankOfItsHost) {
  std::vector<RankRecord> records = job(6, 3, 1, 4);
  std::swap(records[0], records[2]);  // order of arrival is not rank order
  const std::vector<RankSummary> summaries = summaries_of(records);
  std::map<int, int> node_of;
  for (const RankSummary& s : summaries) node_of[s.number()] = s.node_rank();
  EXPECT_EQ(node_of, (std::map<int, int>{{0, 0}, {1, 0}, {2, 0}, {3, 3}, {4, 3}, {5, 3}}));
  EXPECT_EQ(summaries[0].has_warmup, 1.0);
  EXPECT_EQ(summaries[0].warmup.steps, 5.0);
}

TEST(RankSummary, WhatCannotBeJudgedIsNotSound) {
  const RankSummary good = summaries_of(job(4, 2, 1, 2))[3];
  EXPECT_TRUE(sound(good, 4));
  const auto broken = [&](auto change) {
    RankSummary s = good;
    change(s);
    return !sound(s, 4);
  };
  EXPECT_TRUE(broken([](RankSummary& s) { s.rank = 4; }));
  EXPECT_TRUE(broken([](RankSummary& s) { s.rank = -1; }));
  EXPECT_TRUE(broken([](RankSummary& s) { s.rank = 2.5; }));
  EXPECT_TRUE(broken([](RankSummary& s) { s.node = 7; }));
  EXPECT_TRUE(broken([](RankSummary& s) { s.has_warmup = 2; }));
  EXPECT_TRUE(broken([](RankSummary& s) {
    s.measures.compute_seconds = std::numeric_limits<double>::quiet_NaN();
  }));
  EXPECT_TRUE(broken(
      [](RankSummary& s) { s.warmup.wait_seconds = std::numeric_limits<double>::infinity(); }));
}

TEST(JobSelection, EveryRankIsInFullUpToTheLimit) {
  const std::vector<RankSummary> all = summaries_of(job(64, 16, 5, 40));
  const JobJudgement judged = judge_ranks(all);
  std::vector<int> every(64);
  for (int r = 0; r < 64; ++r) every[static_cast<std::size_t>(r)] = r;
  EXPECT_EQ(ranks_in_full(all, judged, 64), every);
}

TEST(JobSelection, AboveItTheWorstRanksAndEachNodesFirstAndWorst) {
  const std::vector<RankSummary> all = summaries_of(job(400, 100, 130, 250));
  const JobJudgement judged = judge_ranks(all);
  ASSERT_TRUE(judged.late[130]);
  EXPECT_EQ(*judged.late[130], JobCause::more_work);
  ASSERT_TRUE(judged.late[250]);
  EXPECT_EQ(*judged.late[250], JobCause::other_processes);
  std::vector<int> worst;
  for (std::size_t i : worst_ranks(all, judged)) worst.push_back(all[i].number());
  EXPECT_EQ(worst, (std::vector<int>{130, 250}));
  // The late ranks, each node's rank that caused the most waiting (the
  // late ones on nodes 1 and 2, the clean ranks' jitter picks one on the
  // others), and the rank asked for: 4 nodes, 2 worst, 1 asked.
  const std::vector<int> wanted = ranks_in_full(all, judged, 64, std::vector<int>{77, 9999});
  for (int rank : {130, 250, 77}) {
    EXPECT_TRUE(std::binary_search(wanted.begin(), wanted.end(), rank)) << rank;
  }
  EXPECT_FALSE(std::binary_search(wanted.begin(), wanted.end(), 9999));
  EXPECT_EQ(wanted.size(), 5u);
  EXPECT_TRUE(std::is_sorted(wanted.begin(), wanted.end()));
}

TEST(JobSelection, ARankThatSentNothingIsNotAskedFor) {
  std::vector<RankSummary> all = summaries_of(job(200, 50, 60, 120));
  all.erase(all.begin() + 60);  // the late rank's summary did not come
  const std::vector<int> wanted = ranks_in_full(all, judge_ranks(all), 64, std::vector<int>{60});
  EXPECT_FALSE(std::binary_search(wanted.begin(), wanted.end(), 60));
  EXPECT_TRUE(std::binary_search(wanted.begin(), wanted.end(), 120));
}

// The report from every rank's summary, the named ranks' records and the
// nodes' digests is the report from every record, less the records.
TEST(JobSelection, TheReportFromSummariesIsTheReportFromEveryRecord) {
  std::vector<RankRecord> records = job(400, 100, 130, 250, /*threads_over=*/true);
  // Node n2's first rank saw another process on rank 250's CPU.
  records[200].node_culprits = {{50, 4242, "backup", 0.5}};
  JobFacts facts;
  facts.ranks_total = 400;
  facts.steps = 50;
  facts.warmup_steps = 5;
  for (int r = 0; r < 400; ++r)
    facts.lateness.push_back({0.001f * static_cast<float>(r % 7), r == 130 ? 0.5f : 0.0f});
  const json whole = to_json(build_job_report(facts, records));

  const std::vector<RankSummary> all = summaries_of(records);
  const std::vector<int> wanted = ranks_in_full(all, judge_ranks(all), 64);
  std::vector<RankRecord> full;
  JobFacts reduced = facts;
  reduced.lateness.clear();
  for (int rank : wanted) {
    full.push_back(records[static_cast<std::size_t>(rank)]);
    reduced.lateness.push_back(facts.lateness[static_cast<std::size_t>(rank)]);
  }
  for (int node = 0; node < 400; node += 100) {
    const std::vector<RankRecord> of_node(records.begin() + node, records.begin() + node + 100);
    std::vector<float> latest(2, 0.0f);
    for (int r = node; r < node + 100; ++r) {
      for (std::size_t c = 0; c < 2; ++c)
        latest[c] = std::max(latest[c], facts.lateness[static_cast<std::size_t>(r)][c]);
    }
    reduced.node_digests[node] = node_digest(of_node.front(), of_node, latest);
  }
  const json part = to_json(build_job_report(reduced, all, full));
  // The nodes' lateness, hosts and first ranks' views, from the digests.
  ASSERT_EQ(part["by_node"].size(), 4u);
  EXPECT_EQ(part["by_node"][1]["host"], "n1");
  EXPECT_EQ(part["by_node"][1]["worst_rank"], 130);
  EXPECT_FLOAT_EQ(part["by_node"][1]["lateness"][1].get<float>(), 0.5f);
  ASSERT_EQ(whole["ranks"][250]["culprits"].size(), 1u) << whole["ranks"][250].dump(1);

  EXPECT_EQ(part["ranks_in_full"], wanted.size());
  EXPECT_EQ(whole["ranks_in_full"], 400);
  for (const char* same :
       {"ranks_reported", "nodes", "wait_seconds", "compute_seconds", "wait_caused_seconds",
        "cause_threshold_seconds", "cause_threshold_on_cpu_seconds", "causes", "worst_ranks",
        "phases", "by_node", "call_sites"}) {
    EXPECT_EQ(part[same], whole[same]) << same;
  }
  ASSERT_EQ(part["findings"].size(), 1u) << part["findings"].dump(1);
  ASSERT_EQ(whole["findings"].size(), 1u);
  EXPECT_EQ(part["findings"][0]["ranks"].size(), 400u);
  EXPECT_EQ(part["findings"][0]["ranks"], whole["findings"][0]["ranks"]);
  EXPECT_EQ(part["findings"][0]["nodes"], whole["findings"][0]["nodes"]);
  EXPECT_EQ(part["findings"][0]["evidence"], whole["findings"][0]["evidence"]);
  // The ranks shown in full are those the report names, as they were.
  for (const json& r : part["ranks"]) {
    const int number = r["rank"].get<int>();
    EXPECT_EQ(r, whole["ranks"][static_cast<std::size_t>(number)]) << number;
  }
}

TEST(NodeDigest, ComesBackFromItsWireAsItWent) {
  std::vector<RankRecord> records = job(8, 8, 3, 5, /*threads_over=*/true);
  records[2].sites.push_back({"MPI_Bcast", "main.c:9", 1, 0.25, 0.25});
  records[0].node_culprits = {{2, 4242, "backup", 0.5}};
  records[0].node_daemon = std::map<unsigned, DaemonVerdict>{{2, {"noisy", {}, 5.0}}};
  const NodeDigest digest = node_digest(records[0], records, {0.25f, 0.5f});
  ASSERT_EQ(digest.findings.size(), 1u);
  ASSERT_EQ(digest.sites.size(), 2u);
  EXPECT_EQ(digest.sites[0].wait_seconds, 8 * 12.0);
  const NodeDigest back = digest_from_wire(json::parse(to_wire(digest).dump()));
  EXPECT_EQ(to_wire(back), to_wire(digest));
  EXPECT_EQ(back.host, "n0");
  ASSERT_EQ(back.culprits.size(), 1u);
  EXPECT_EQ(back.culprits[0].command, "backup");
  ASSERT_TRUE(back.daemon);
  EXPECT_EQ(back.daemon->at(2).state, "noisy");
  EXPECT_EQ(back.lateness, (std::vector<float>{0.25f, 0.5f}));
  EXPECT_EQ(merge_findings({back.findings})[0].evidence, digest.findings[0].evidence);
  EXPECT_THROW(digest_from_wire(json::parse(R"({"findings": [{"kind": 3}], "sites": []})")),
               json::exception);
}

TEST(JobFindings, NodesFindingsMergeIntoOnePerKindOverEveryRank) {
  std::vector<RankRecord> records = job(30, 10, 3, 25, /*threads_over=*/true);
  records[12].config.xla_dropped = "intra_op_parallelism_threads=1";
  std::vector<std::vector<JobFinding>> per_node;
  for (int node = 0; node < 30; node += 10)
    per_node.push_back(
        job_findings(std::vector<RankRecord>(records.begin() + node, records.begin() + node + 10)));
  const std::vector<JobFinding> merged = merge_findings(per_node);
  const std::vector<JobFinding> whole = job_findings(records);
  ASSERT_EQ(merged.size(), whole.size());
  for (std::size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(merged[i].kind, whole[i].kind);
    EXPECT_EQ(merged[i].ranks, whole[i].ranks);
    EXPECT_EQ(merged[i].nodes, whole[i].nodes);
    EXPECT_EQ(merged[i].examples_total, whole[i].examples_total);
    EXPECT_EQ(merged[i].evidence, whole[i].evidence);
  }
}

}  // namespace
}  // namespace corenoise
