// The node's corenoised's traced culprits in the job's report: the
// daemon's reply read into a record (each CPU's largest, the trivial
// dropped), a late rank's own CPUs' named, and nothing for a rank not late.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collector/job/model/job_report.h"
#include "collector/job/rank/job_daemon.h"
#include "collector/report/job_banner.h"
#include "collector/report/job_report_json.h"
#include "daemon/control/control_replies.h"

namespace corenoise {
namespace {

using nlohmann::json;

TEST(TracedCulprits, TheDaemonsReplyKeepsEachCpusLargestAndDropsTheTrivial) {
  JobCulpritsReply reply{"on", {}};
  reply.cpus.push_back({1,
                        20.0,
                        {{"task", "inj", 99, "inj[99]", 6.0},
                         {"irq", "virtio1-req.0", 36, "IRQ 36 (virtio1-req.0)", 0.8},
                         {"task", "dd", 98, "dd[98]", 0.5},
                         {"task", "dd", 97, "dd[97]", 0.4},
                         {"work", "vmstat_update", -1, "work vmstat_update", 0.1}},
                        0,
                        false});
  reply.cpus.push_back({0, 20.0, {{"task", "sshd", 5, "sshd[5]", 0.01}}, 0, false});
  const auto traced = traced_from_reply(json(reply));
  ASSERT_EQ(traced.size(), 4u) << "0.05 % of CPU 0 is below the floor";
  EXPECT_EQ(traced[0].cpu, 1);
  EXPECT_EQ(traced[0].text, "inj[99]");
  EXPECT_DOUBLE_EQ(traced[0].share, 0.3);
  EXPECT_EQ(traced[1].text, "dd (2 tasks)");
  EXPECT_DOUBLE_EQ(traced[1].seconds, 0.9);
  EXPECT_EQ(traced[2].kind, "irq");
  EXPECT_TRUE(
      traced_from_reply(json{{"ok", true}, {"trace", "off"}, {"cpus", json::array()}}).empty());
  EXPECT_TRUE(traced_from_reply(json{{"ok", true}}).empty()) << "not a job-culprits reply";
  // A big node's: its 64 largest, whatever the CPU.
  JobCulpritsReply big{"on", {}};
  std::vector<double> all;
  for (unsigned cpu = 0; cpu < 128; ++cpu) {
    big.cpus.push_back({cpu, 10.0, {}, 0, false});
    for (int i = 0; i < 5; ++i) {
      all.push_back(1.0 + cpu * 0.01 - i * 0.1);
      big.cpus.back().culprits.push_back({"task", "t" + std::to_string(i), i, "t", all.back()});
    }
  }
  std::sort(all.rbegin(), all.rend());
  const auto kept = traced_from_reply(json(big));
  ASSERT_EQ(kept.size(), 64u);
  for (const auto& c : kept) EXPECT_GE(c.seconds, all[63]) << "one of the node's 64 largest";
}

TEST(TracedCulprits, ALateRanksReportNamesWhatRanOnItsOwnCpusAndARankNotLateNothing) {
  std::vector<RankRecord> records(2);
  for (int r = 0; r < 2; ++r) {
    RankRecord& rec = records[static_cast<std::size_t>(r)];
    rec.rank = r;
    rec.host = "n1";
    rec.cpus = {static_cast<unsigned>(r)};
    rec.measures.elapsed_seconds = 20;
    rec.measures.compute_seconds = rec.measures.compute_cpu_seconds = 8;
    rec.measures.wait_seconds = rec.measures.wait_cpu_seconds = 12;
    rec.measures.steps = 100;
    rec.measures.clock_hz = 2e9;
  }
  RankMeasures& late = records[1].measures;
  late.compute_seconds = 11;
  late.compute_cpu_seconds = 8;
  late.other_processes_seconds = 3;
  late.wait_seconds = late.wait_cpu_seconds = 9;
  late.wait_caused_seconds = 3;
  records[0].node_traced = {{1, "task", "inj[99]", 3.0, 0.15},
                            {1, "irq", "IRQ 36 (virtio1-req.0)", 0.8, 0.04},
                            {0, "task", "dd[98]", 2.0, 0.1}};
  const JobReport report = build_job_report(JobFacts{}, records);
  ASSERT_EQ(report.ranks.size(), 2u);
  std::vector<std::string> named;
  for (const JobCulprit& c : report.ranks[1].culprits) {
    if (c.kind == JobCulprit::Kind::traced) named.push_back(c.name);
  }
  EXPECT_EQ(named, (std::vector<std::string>{"inj[99]", "IRQ 36 (virtio1-req.0)"}));
  EXPECT_TRUE(report.ranks[0].culprits.empty()) << "rank 0 was not late: dd is not named";
  const json out = to_json(report);
  const json& culprits = out.at("ranks").at(1).at("culprits");
  bool irq = false;
  for (const json& c : culprits) {
    if (c.at("kind") == "traced" && c.at("traced_kind") == "irq") {
      irq = true;
      EXPECT_EQ(c.at("cpu"), 1);
      EXPECT_DOUBLE_EQ(c.at("share_of_cpu").get<double>(), 0.04);
    }
  }
  EXPECT_TRUE(irq) << culprits;
  const std::string banner = job_banner(report);
  EXPECT_NE(banner.find("inj[99] on cpu 1 (traced): 3.00 s, 15.0 % of the CPU"), std::string::npos)
      << banner;
}

}  // namespace
}  // namespace corenoise
