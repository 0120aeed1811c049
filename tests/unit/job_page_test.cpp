// The job's report page (render_report_page on a "corenoise-job/1" JSON,
// as `corenoise job --html` writes it), drawn by headless Chromium: header,
// the waiting summary and its causes, the worst ranks and call sites tables,
// and the ranks × steps lateness heatmap with its colours and hover.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collector/report/report_page.h"
#include "tests/unit/chromium_dom.h"

namespace corenoise {
namespace {

using nlohmann::json;
using testing::attribute;
using testing::element;
using testing::probed_cells;
using testing::render_in_chromium;
using testing::rendered;
using testing::section;
using testing::table_rows;
using testing::text_of;

json causes(double own_threads, double interrupts, double page_faults) {
  return {{"own-threads", own_threads},
          {"other-processes", 0.0},
          {"interrupts", interrupts},
          {"steal", 0.0},
          {"page-faults", page_faults},
          {"slower-clock", 0.0},
          {"more-work", 0.0}};
}

json rank(int number, const char* host, const char* cpus, double caused, double excess,
          const char* cause, json rank_causes, json culprits, const char* advice, json daemon) {
  return {{"rank", number},           {"host", host},           {"cpus", cpus},
          {"wait_seconds", 0.3},      {"compute_seconds", 5.0}, {"wait_caused_seconds", caused},
          {"excess_seconds", excess}, {"cause", cause},         {"causes", rank_causes},
          {"advice", advice},         {"culprits", culprits},   {"daemon", daemon}};
}

// 4 ranks on two hosts × 6 columns: rank 2 is 250 ms late at column 3 (its
// interrupts), rank 1 a little late throughout (its own threads); rank 3
// has no figure for column 1.
json make_job() {
  json ranks = json::array({
      rank(0, "n01", "0", 0.01, 0.001, "none", causes(0, 0, 0), json::array(), "", nullptr),
      rank(1, "n01", "1", 0.1, 0.035, "own-threads", causes(0.05, 0, 0.01),
           json::array({{{"kind", "thread"}, {"name", "python3"}, {"seconds", 0.04}}}),
           "Pin the helper threads off cpu 1.",
           {{"state", "noisy"}, {"cause", "lost 3 % to detours"}, {"age_seconds", 12}}),
      rank(2, "n02", "0", 0.75, 0.375, "interrupts", causes(0, 0.25, 0),
           json::array({{{"kind", "process"},
                         {"name", "irq/45-mlx5"},
                         {"pid", 812},
                         {"cpu", 0},
                         {"seconds", 0.2}}}),
           "Steer irq 45 off cpu 0.", nullptr),
      rank(3, "n02", "1-3", 0.0, 0.0, "none", causes(0, 0, 0), json::array(), "",
           // corenoise job's own form: the daemon's verdict per CPU of the rank.
           {{"3", {{"state", "ok"}, {"cause", ""}}},
            {"1", {{"state", "noisy"}, {"cause", "irq 45"}, {"age_seconds", 30}}}}),
  });
  ranks[1]["unexplained_seconds"] = 0.002;
  ranks[2]["advice"] = nullptr;      // as corenoise job writes a rank without a cause
  ranks[2]["saving_seconds"] = 0.3;  // rank 1's has none: a report from before the field
  // When each late rank was late (lateness_pattern.h): rank 2 in one burst
  // at column 3, rank 1 throughout.
  ranks[2]["lateness_pattern"] = {
      {"kind", "bursts"},
      {"late_share", 1.0 / 6},
      {"late_share_interval", {0.03, 0.56}},
      {"onset_step", nullptr},
      {"onset_seconds", nullptr},
      {"stretches",
       {{{"first_step", 31}, {"last_step", 40}, {"start_seconds", 6.15}, {"end_seconds", 8.2}}}},
      {"stretches_unlisted", 0}};
  ranks[1]["lateness_pattern"] = {
      {"kind", "chronic"},      {"late_share", 0.6},    {"late_share_interval", {0.23, 0.88}},
      {"onset_step", 1},        {"onset_seconds", 0.0}, {"stretches", json::array()},
      {"stretches_unlisted", 0}};
  return {{"schema", "corenoise-job/1"},
          {"version", "9.9.9-test"},
          {"program", "python3 jax_mpi.py"},
          {"mpi_family", "openmpi"},
          {"started_unix_seconds", 1767261600},
          {"elapsed_seconds", 12.3},
          {"ranks_total", 4},
          {"ranks_reported", 4},
          {"nodes", 2},
          {"steps", 6},
          {"complete", true},
          {"incomplete_reason", nullptr},
          {"wait_seconds", 1.2},
          {"compute_seconds", 20.0},
          {"wait_caused_seconds", 0.86},
          {"causes", causes(0.05, 0.25, 0.01)},
          {"call_sites", json::array({{{"call", "MPI_Barrier"},
                                       {"site", "a.so+0x10"},
                                       {"calls", 6},
                                       {"wait_seconds", 0.3},
                                       {"wait_max_seconds", 0.25}},
                                      {{"call", "MPI_Allreduce"},
                                       {"site", "b.so+0x20"},
                                       {"calls", 6},
                                       {"wait_seconds", 0.9},
                                       {"wait_max_seconds", 0.2}}})},
          {"ranks", ranks},
          {"worst_ranks", json::array({2, 1})},
          {"lateness",
           {{"unit", "seconds"},
            {"steps_per_column", 1},
            {"columns", 6},
            {"rows", json::array({json::array({0, 0.001, 0, 0, 0, 0}),
                                  json::array({0.01, 0.02, 0, 0.005, 0, 0}),
                                  json::array({0, 0, 0, 0.25, 0, 0.125}),
                                  json::array({0, nullptr, 0, 0, 0, 0})})}}}};
}

TEST(JobPage, ChromiumDrawsHeaderWaitingAndTables) {
  const std::string dom = render_in_chromium(render_report_page(make_job()));
  ASSERT_EQ(rendered(dom), "ok") << dom.substr(0, 3000);
  EXPECT_NE(dom.find("<title>corenoise job — python3 jax_mpi.py, 4 ranks</title>"),
            std::string::npos);
  EXPECT_GE(std::stod(attribute(dom, "<body", "data-render-ms")), 0);

  const std::string header = text_of(element(dom, "<header id=\"summary\"", "header"));
  EXPECT_NE(header.find("corenoise job reportcomplete"), std::string::npos) << header;
  EXPECT_NE(header.find("Program python3 jax_mpi.py"), std::string::npos) << header;
  EXPECT_NE(header.find("MPI family openmpi; 4 of 4 ranks reported, on 2 nodes; 6 steps; elapsed "
                        "12.3 s; started 2026-01-01 10:00:00 UTC; corenoise 9.9.9-test"),
            std::string::npos)
      << header;
  EXPECT_EQ(dom.find("id=\"incomplete\""), std::string::npos);

  const std::string waiting = section(dom, "waiting");
  EXPECT_NE(
      text_of(waiting).find("waiting in MPI, summed over ranks\n1.200 s\n5.7 % of the ranks' time"),
      std::string::npos)
      << text_of(waiting);
  EXPECT_NE(text_of(waiting).find("wait caused by late ranks\n0.860 s\n71.7 % of the waiting"),
            std::string::npos);
  // Causes, most first (ties by name), each with its bar.
  std::vector<std::string> order;
  for (auto at = waiting.find("data-cause=\""); at != std::string::npos;
       at = waiting.find("data-cause=\"", at + 1))
    order.push_back(waiting.substr(at + 12, waiting.find('"', at + 12) - at - 12));
  EXPECT_EQ(order,
            (std::vector<std::string>{"interrupts", "own-threads", "page-faults", "more-work",
                                      "other-processes", "slower-clock", "steal"}));
  // Each cause's row: its bar's width against the largest, its seconds and share.
  auto cause_row = [&](const std::string& cause) {
    const auto at = waiting.find("data-cause=\"" + cause + "\"");
    if (at == std::string::npos) return std::string();
    return waiting.substr(at, waiting.find("data-cause=", at + 1) - at);
  };
  EXPECT_NE(cause_row("interrupts")
                .find("<i style=\"width: 100%;\"></i></div><span>0.250 s (80.6 %)</span>"),
            std::string::npos)
      << cause_row("interrupts");
  EXPECT_NE(cause_row("own-threads")
                .find("<i style=\"width: 20%;\"></i></div><span>0.050 s (16.1 %)</span>"),
            std::string::npos)
      << cause_row("own-threads");
  EXPECT_NE(cause_row("steal").find("class=\"zero\""), std::string::npos);
  EXPECT_EQ(cause_row("interrupts").find("class=\"zero\""), std::string::npos);

  const auto worst = table_rows(section(dom, "worst-ranks"));
  ASSERT_EQ(worst.size(), 2u);
  EXPECT_EQ(worst[0],
            (std::vector<std::string>{
                "1", "2", "n02", "0", "0.750 s", "0.300 s", "0.375 s", "interrupts",
                "bursts, late in 17 % of the steps\n"
                "steps 31-40 (6.150 s-8.200 s)",
                "interrupts 0.250 s", "process irq/45-mlx5 (pid 812, cpu 0) 0.200 s", "–", "–"}));
  EXPECT_EQ(worst[1], (std::vector<std::string>{
                          "2", "1", "n01", "1", "0.100 s", "–", "0.035 s", "own-threads",
                          "chronic from the start, late in 60 % of the steps",
                          "own-threads 0.050 s\npage-faults 0.010 s\n"
                          "unexplained 0.002 s",
                          "thread python3 0.040 s", "Pin the helper threads off cpu 1.",
                          "noisy: lost 3 % to detours (12 s old)"}));

  const auto sites = table_rows(section(dom, "call-sites"));
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0],
            (std::vector<std::string>{"MPI_Allreduce", "b.so+0x20", "6", "0.900 s", "0.200 s"}));
  EXPECT_EQ(sites[1][0], "MPI_Barrier");
}

// A live epoch's page (docs/job.md, "Live"): it says which epoch it shows
// and that the job runs, and reloads at the cadence; a killed job's last
// epoch says the job ended without MPI_Finalize, and stays; a final report
// says neither.
TEST(JobPage, ALiveEpochsPageSaysSoAndReloadsWhileTheJobRuns) {
  json job = make_job();
  job["live"] = {
      {"epoch", 7},
      {"reduced_unix_seconds", 1767261600.0},
      {"interval_seconds", 30.0},
      {"rebuilt_from_spill", false},
      {"ranks_finalized", nullptr},
      {"ended_without_finalize", false},
      {"window",
       {{"start_seconds", 180.25},
        {"end_seconds", 210.5},
        {"late_ranks",
         json::array(
             {{{"rank", 17}, {"cause", "other-processes"}, {"wait_caused_seconds", 4.125}}})}}}};
  std::string dom = render_in_chromium(render_report_page(job), "#noreload");
  ASSERT_EQ(rendered(dom), "ok") << dom.substr(0, 3000);
  std::string header = text_of(element(dom, "<header id=\"summary\"", "header"));
  EXPECT_NE(header.find("Live: the job so far, at live epoch 7, reduced 2026-01-01 10:00:00 UTC; "
                        "the job is running, and this page reloads every 30 s."),
            std::string::npos)
      << header;
  // Who was late in the epoch's own window.
  EXPECT_NE(header.find("In its window, 180.250 s to 210.500 s into the job: rank 17 made the "
                        "others wait 4.125 s (other-processes)."),
            std::string::npos)
      << header;
  // Kept still by #noreload; else the reload is armed at the cadence.
  EXPECT_EQ(dom.find("data-reload-seconds"), std::string::npos);
  job["live"]["interval_seconds"] = 3600.0;
  dom = render_in_chromium(render_report_page(job));
  EXPECT_EQ(attribute(dom, "<body", "data-reload-seconds"), "3600");

  job["live"]["ended_without_finalize"] = true;
  job["live"]["rebuilt_from_spill"] = true;
  job["live"]["ranks_finalized"] = 1;
  job["live"]["window"]["late_ranks"] = json::array();
  dom = render_in_chromium(render_report_page(job));
  header = text_of(element(dom, "<header id=\"summary\"", "header"));
  EXPECT_NE(header.find("210.500 s into the job: no rank was late."), std::string::npos) << header;
  EXPECT_NE(header.find("the job ended after it without MPI_Finalize"), std::string::npos)
      << header;
  EXPECT_EQ(dom.find("data-reload-seconds"), std::string::npos);

  job["live"] = nullptr;
  dom = render_in_chromium(render_report_page(job));
  EXPECT_EQ(dom.find("id=\"live\""), std::string::npos);
}

// The warm-up apart from the steady state, each with its late ranks, and
// the worst steps with the last rank, its cause and the call site.
TEST(JobPage, WarmUpAndSteadyStateWithTheirLateRanksAndTheWorstSteps) {
  json job = make_job();
  EXPECT_NE(
      text_of(section(render_in_chromium(render_report_page(job)), "phases")).find("Not split"),
      std::string::npos);
  job["phases"] = json::array({{{"name", "warm-up"},
                                {"first_step", 1},
                                {"last_step", 2},
                                {"wait_seconds", 0.084},
                                {"wait_caused_seconds", 0.069},
                                {"late_ranks", json::array({{{"rank", 1},
                                                             {"cause", "more-work"},
                                                             {"cause_seconds", 0.071},
                                                             {"wait_caused_seconds", 0.069}}})}},
                               {{"name", "steady state"},
                                {"first_step", 3},
                                {"last_step", 121},
                                {"wait_seconds", 0.529},
                                {"wait_caused_seconds", 0.0},
                                {"late_ranks", json::array()}}});
  job["worst_steps"] = json::array({{{"first_step", 2},
                                     {"steps", 1},
                                     {"wait_caused_seconds", 0.069},
                                     {"last_rank", 1},
                                     {"call", "MPI_Barrier"},
                                     {"site", "story_numpy.py:79 in main"},
                                     {"phase", "warm-up"},
                                     {"cause", "more-work"}}});
  const std::string dom = render_in_chromium(render_report_page(job));
  ASSERT_EQ(rendered(dom), "ok") << dom.substr(0, 3000);
  // Two tables: the phases, then the worst steps.
  const std::string phases = section(dom, "phases");
  const auto split = phases.find("</table>");
  ASSERT_NE(split, std::string::npos);
  const auto rows = table_rows(phases.substr(0, split));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"warm-up", "steps 1–2", "0.084 s", "0.069 s",
                                               "rank 1: more-work 0.071 s, caused 0.069 s"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"steady state", "steps 3–121", "0.529 s", "0.000 s",
                                               "none late beyond the ranks' own spread"}));
  const auto steps = table_rows(phases.substr(split));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0],
            (std::vector<std::string>{"step 2", "0.069 s", "rank 1", "more-work (warm-up)",
                                      "MPI_Barrier from story_numpy.py:79 in main"}));
}

TEST(JobPage, LatenessHeatmapHoldsEveryCell) {
  const std::string dom =
      render_in_chromium(render_report_page(make_job()), "#cell=2,3;2,5;0,0;1,1;3,1;3,5;7,0;0,6");
  ASSERT_EQ(rendered(dom), "ok") << dom.substr(0, 3000);
  const std::string map = "<canvas class=\"map\"";
  EXPECT_EQ(attribute(dom, map, "data-rows"), "4");
  EXPECT_EQ(attribute(dom, map, "data-columns"), "6");
  EXPECT_EQ(attribute(dom, map, "data-cells"), "23");  // one null
  // 23 values: the 99th percentile (nearest rank) is the largest, 250 ms.
  EXPECT_EQ(attribute(dom, map, "data-scale-ms"), "250.000");
  const auto cells = probed_cells(dom);
  ASSERT_EQ(cells.size(), 8u);
  EXPECT_EQ(cells.at("2,3").text, "rank 2 (n02, cpu 0) column 3: 250.000 ms late");
  EXPECT_EQ(cells.at("2,3").colour, "#67000d");
  EXPECT_EQ(cells.at("2,5").text, "rank 2 (n02, cpu 0) column 5: 125.000 ms late");
  EXPECT_EQ(cells.at("2,5").colour, "#ec4b38");  // the Reds ramp half way
  EXPECT_EQ(cells.at("0,0").text, "rank 0 (n01, cpu 0) column 0: 0.000 ms late");
  EXPECT_EQ(cells.at("0,0").colour, "#ffffff");
  EXPECT_EQ(cells.at("1,1").text, "rank 1 (n01, cpu 1) column 1: 20.000 ms late");
  EXPECT_EQ(cells.at("3,1").text, "rank 3 (n02, cpus 1-3) column 1: no figure");
  EXPECT_EQ(cells.at("3,1").colour, "#e6e6e6");
  EXPECT_EQ(cells.at("3,5").text, "rank 3 (n02, cpus 1-3) column 5: 0.000 ms late");
  EXPECT_EQ(cells.at("7,0").text, "no such cell");
  EXPECT_EQ(cells.at("0,6").text, "no such cell");
  const std::string legend = text_of(section(dom, "lateness"));
  EXPECT_NE(
      legend.find("(1 step per column), from white (on time) to dark red (the 99th percentile)"),
      std::string::npos)
      << legend;
  EXPECT_NE(legend.find("0 ms  ≥250.000 ms"), std::string::npos) << legend;
}

// Above --full ranks (issue 35) the report holds the named ranks' records
// and every node's row: the page says so and draws the nodes × steps map
// beside the ranks' (here 400 ranks on 2 nodes, 4 in full).
TEST(JobPage, ABigJobShowsEveryNodeAndTheRanksNamed) {
  json job = make_job();
  job["ranks_total"] = 400;
  job["ranks_reported"] = 400;
  job["ranks_in_full"] = 4;
  job["by_node"] = json::array({{{"host", "n01"},
                                 {"first_rank", 0},
                                 {"ranks", 200},
                                 {"wait_seconds", 0.6},
                                 {"wait_caused_seconds", 0.11},
                                 {"late_ranks", 1},
                                 {"worst_rank", 1},
                                 {"lateness", json::array({0.01, 0.02, 0, 0.005, 0, 0})}},
                                {{"host", nullptr},
                                 {"first_rank", 200},
                                 {"ranks", 200},
                                 {"wait_seconds", 0.6},
                                 {"wait_caused_seconds", 0.75},
                                 {"late_ranks", 1},
                                 {"worst_rank", 2},
                                 {"lateness", json::array({0, 0, 0, 0.25, 0, 0.125})}}});
  const std::string dom = render_in_chromium(render_report_page(job), "#cell=2,3");
  ASSERT_EQ(rendered(dom), "ok") << dom.substr(0, 3000);
  const std::string note = text_of(element(dom, "<p class=\"meta\" id=\"in-full\"", "p"));
  EXPECT_NE(note.find("show the 4 ranks named"), std::string::npos) << note;
  const std::string nodes = text_of(section(dom, "node-lateness"));
  EXPECT_NE(nodes.find("Lateness: nodes × steps"), std::string::npos) << nodes;
  EXPECT_NE(nodes.find("each node's latest rank reached the collectives"), std::string::npos)
      << nodes;
  // The nodes' map first, then the ranks'.
  const std::string map = "<canvas class=\"map\"";
  EXPECT_EQ(attribute(dom, map, "data-rows"), "2");
  EXPECT_EQ(attribute(dom, map, "data-scale-ms"), "250.000");
  EXPECT_NE(text_of(section(dom, "lateness")).find("Lateness: ranks × steps"), std::string::npos);
  EXPECT_EQ(probed_cells(dom).at("2,3").text, "rank 2 (n02, cpu 0) column 3: 250.000 ms late");
}

// One rank 100 ms late once among 200 cells 1 ms late: the 99th percentile
// is the 1 ms, which turns the on-time cells dark red; the maximum (the
// legend's other choice, or #scale=max) shows the one late cell alone.
TEST(JobPage, LatenessScaleIsThe99thPercentileOrTheMaximum) {
  json job = make_job();
  json rows = json::array();
  for (int r = 0; r < 4; ++r) {
    json row = json::array();
    for (int c = 0; c < 50; ++c) row.push_back(r == 2 && c == 7 ? 0.1 : 0.001);
    rows.push_back(row);
  }
  job["lateness"]["columns"] = 50;
  job["lateness"]["rows"] = rows;
  const std::string page = render_report_page(job);
  const std::string map = "<canvas class=\"map\"";

  const std::string p99 = render_in_chromium(page, "#cell=2,7;0,0");
  ASSERT_EQ(rendered(p99), "ok") << p99.substr(0, 3000);
  EXPECT_EQ(attribute(p99, map, "data-scale-ms"), "1.000");
  EXPECT_EQ(probed_cells(p99).at("0,0").colour, "#67000d");
  EXPECT_EQ(probed_cells(p99).at("2,7").colour, "#67000d");
  EXPECT_NE(p99.find("<input type=\"radio\" name=\"lateness-scale\" value=\"p99\" checked=\"\">"),
            std::string::npos);

  const std::string max = render_in_chromium(page, "#cell=2,7;0,0&scale=max");
  ASSERT_EQ(rendered(max), "ok") << max.substr(0, 3000);
  EXPECT_EQ(attribute(max, map, "data-scale-ms"), "100.000");
  EXPECT_EQ(probed_cells(max).at("2,7").colour, "#67000d");
  EXPECT_EQ(probed_cells(max).at("2,7").text, "rank 2 (n02, cpu 0) column 7: 100.000 ms late");
  EXPECT_EQ(probed_cells(max).at("0,0").colour, "#fffbfa");  // 1 % of the way from white
  EXPECT_NE(text_of(section(max, "lateness")).find("to dark red (the maximum)"), std::string::npos);
}

TEST(JobPage, IncompleteJobSaysWhyAndRanksWithoutAnOrder) {
  json job = make_job();
  job["complete"] = false;
  job["ranks_reported"] = 2;
  job["incomplete_reason"] = "2 ranks did not report: node n03 lost";
  job.erase("worst_ranks");
  job.erase("lateness");
  const std::string dom = render_in_chromium(render_report_page(job));
  ASSERT_EQ(rendered(dom), "ok") << dom.substr(0, 3000);
  const std::string header = element(dom, "<header id=\"summary\"", "header");
  EXPECT_NE(header.find("<span class=\"status unhealthy\">incomplete</span>"), std::string::npos);
  EXPECT_EQ(text_of(element(header, "<p class=\"warning\" id=\"incomplete\"", "p")),
            "Incomplete: 2 ranks did not report: node n03 lost (2 of 4 ranks reported). The "
            "figures below cover the ranks that did.");
  // No worst_ranks: by wait caused, worst first.
  const auto worst = table_rows(section(dom, "worst-ranks"));
  ASSERT_EQ(worst.size(), 4u);
  EXPECT_EQ(worst[0][1], "2");
  EXPECT_EQ(worst[1][1], "1");
  EXPECT_EQ(worst[2][1], "0");
  EXPECT_EQ(worst[3][1], "3");
  EXPECT_EQ(worst[3][12], "cpu 1 noisy: irq 45 (30 s old)\ncpu 3 ok");
  EXPECT_NE(section(dom, "lateness").find("No lateness figures"), std::string::npos);
}

// More ranks than a canvas has pixels: the map says it cannot be drawn, and
// the rest of the page is still there.
TEST(JobPage, AMapTooLargeForACanvasFailsAloneWithItsReason) {
  json job = make_job();
  job["lateness"]["columns"] = 1;
  job["lateness"]["rows"] = json::array();
  for (int r = 0; r < 40000; ++r) job["lateness"]["rows"].push_back(json::array({0.001}));
  const std::string dom = render_in_chromium(render_report_page(job));
  const std::string reason =
      "a map of 40000 × 1 cells is larger than a canvas can be (32767 pixels a side)";
  EXPECT_EQ(rendered(dom), "error: " + reason);
  EXPECT_EQ(text_of(element(section(dom, "lateness"), "<div class=\"error-box\"", "div")),
            "This section could not be drawn: " + reason);
  EXPECT_EQ(table_rows(section(dom, "worst-ranks")).size(), 2u);
  EXPECT_EQ(table_rows(section(dom, "call-sites")).size(), 2u);
}

TEST(JobPage, HostileHostAndProgramStayText) {
  json job = make_job();
  const std::string mark = "</script><script>document.documentElement.dataset.pwned=1</script>";
  job["ranks"][2]["host"] = mark;
  job["program"] = "<!--<script>document.documentElement.dataset.pwned=2</script>";
  job["ranks"][1]["culprits"][0]["name"] = "<img src=x onerror=\"document.title=3\">";
  const std::string dom = render_in_chromium(render_report_page(job), "#cell=2,3");
  ASSERT_EQ(rendered(dom), "ok") << dom.substr(0, 3000);
  EXPECT_EQ(dom.find("data-pwned"), std::string::npos);
  EXPECT_EQ(dom.find("<img"), std::string::npos);
  const auto worst = table_rows(section(dom, "worst-ranks"));
  ASSERT_EQ(worst.size(), 2u);
  EXPECT_EQ(worst[0][2], mark);
  EXPECT_EQ(worst[1][10], "thread <img src=x onerror=\"document.title=3\"> 0.040 s");
  EXPECT_EQ(text_of(element(dom, "<code id=\"program\"", "code")),
            "<!--<script>document.documentElement.dataset.pwned=2</script>");
  EXPECT_EQ(probed_cells(dom).at("2,3").text,
            "rank 2 (" + mark + ", cpu 0) column 3: 250.000 ms late");
}

// A C++ program's call site, demangled, can run to hundreds of characters
// with few spaces: the call-site table wraps it within the window (800
// pixels, headless Chromium's) and keeps the whole name in the cell's title.
TEST(JobPage, ALongCallSiteStaysWithinThePageWidth) {
  json job = make_job();
  const std::string site =
      "liblammps.so.0+0x2b0cab (void LAMMPS_NS::FixNeighHistory::pre_exchange_newton<std::vector<"
      "std::pair<LAMMPS_NS::NeighList*,std::map<std::__cxx11::basic_string<char,std::char_traits<"
      "char>,std::allocator<char>>,double,std::less<std::__cxx11::basic_string<char,std::char_"
      "traits<char>,std::allocator<char>>>>>>>(std::vector<std::pair<LAMMPS_NS::NeighList*,"
      "double>>&,int,int))";
  job["call_sites"][1]["site"] = site;
  // After the page has drawn: whether the table ends within the window.
  std::string page = render_report_page(job);
  page.insert(page.rfind("</body>"),
              "<script>addEventListener('load', () => setTimeout(() => {"
              "const table = document.querySelector('#call-sites table');"
              "document.body.dataset.fits = String(table.getBoundingClientRect().right <= "
              "innerWidth);"
              "}, 100));</script>");
  const std::string dom = render_in_chromium(page);
  ASSERT_EQ(rendered(dom), "ok") << dom.substr(0, 3000);
  EXPECT_EQ(attribute(dom, "<body", "data-fits"), "true");
  const std::string sites = section(dom, "call-sites");
  EXPECT_EQ(table_rows(sites).at(0).at(1), site);
  EXPECT_NE(sites.find("<td class=\"site\"><code title=\""), std::string::npos) << sites;
}

}  // namespace
}  // namespace corenoise
