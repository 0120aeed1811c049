// The sweep's HTML page (report_page.h drawing cluster_report_json.h's
// JSON): what it embeds, and the page as headless Chromium draws it — every
// section, its rows, the heatmap's cells and colours, the hover, and
// hostile text kept as text (tests/unit/chromium_dom.h).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collector/report/cluster_report_json.h"
#include "collector/report/report_page.h"
#include "probe/verdict_text.h"
#include "tests/unit/chromium_dom.h"

namespace corenoise {
namespace {

using testing::attribute;
using testing::probed_cells;
using testing::render_in_chromium;
using testing::rendered;
using testing::section;
using testing::table_rows;
using testing::text_of;

// The page of a sweep, as --html writes it.
std::string render_html(const ClusterReport& report) { return render_report_page(to_json(report)); }

// A noisy core whose detours the tracer charged to the task `name`: a
// process's command name, the part of a cause that a local user controls.
Cause preempted_by(const std::string& name) {
  Cause c;
  c.state = CoreState::noisy;
  c.cpu_kind = "IntelCore";
  c.ratio = 0.29;
  LostTime lost;
  lost.noise_ratio = 0.31;
  lost.detours = 2410;
  lost.max_seconds = 412e-6;
  lost.total_seconds = 0.62;
  trace::Culprit task;
  task.kind = trace::CulpritKind::task;
  task.name = name;
  task.id = 4242;
  task.detours = 2400;
  task.seconds = 0.6;
  lost.traced = LostTime::Traced{{task}, 0.61, false};
  c.lost = lost;
  return c;
}

Cause noisy_cause() { return preempted_by("stress-ng"); }

// nodes × cores, all ok near 1 except node 1 cpu 2 (noisy, 1.48) and the
// last cpu of node 0 (skipped). Node names cnNNN.
ClusterReport make_report(unsigned nodes, unsigned cores, bool with_cells = true) {
  ClusterReport report;
  report.version = "9.9.9-test";
  report.started_unix_seconds = 1767261600;
  report.duration_seconds = 12.4;
  report.layout = "rank-per-node";
  report.node_count = nodes;
  report.core_count = std::uint64_t{nodes} * cores;
  for (unsigned n = 0; n < nodes; ++n) {
    ClusterNode node;
    node.index = n;
    node.name = "cn" + std::to_string(100 + n);
    node.summary.node = n;
    node.summary.probed_cores = cores;
    node.summary.states[0] = cores;
    node.summary.median_expected_slowdown = 1.0 + 0.001 * n;
    node.summary.max_expected_slowdown = 1.01;
    node.summary.median_clock_hertz = 3e9;
    node.summary.median_noise_ratio = 0.01;
    report.nodes.push_back(node);
    if (!with_cells) continue;
    NodeCells row;
    row.node = n;
    for (unsigned c = 0; c < cores; ++c) {
      CoreCell cell;
      cell.cpu = c;
      cell.state = CoreState::ok;
      cell.expected_slowdown = 1.0 + 0.01 * std::sin(n + c);
      cell.cluster_slowdown = cell.expected_slowdown;
      if (n == 1 && c == 2) {
        cell.state = CoreState::noisy;
        cell.expected_slowdown = cell.cluster_slowdown = 1.48;
        cell.cause = noisy_cause();
      } else if (n == 0 && c + 1 == cores) {
        cell.state = CoreState::skipped;
        cell.expected_slowdown.reset();
        cell.cluster_slowdown.reset();
        cell.cause = skipped_cause(SkipReason::other, "outside the process's affinity");
      }
      row.cores.push_back(cell);
    }
    report.cells.push_back(std::move(row));
  }
  if (nodes > 1) {
    report.nodes[1].summary.states[0] = cores - 1;
    report.nodes[1].summary.states[static_cast<std::size_t>(CoreState::noisy)] = 1;
    report.worst.push_back(
        {1, "cn101", 2, CoreState::noisy, Mode::isolated, 1.48, 1.48, noisy_cause()});
  }
  report.quantiles.push_back({Metric::expected_slowdown, Mode::isolated, "", report.core_count,
                              0.99, 1.0, 1.01, 1.2, 1.48});
  report.quantiles.push_back({figure_metric(ProbeKind::clock), Mode::isolated, "IntelCore",
                              report.core_count, 2.41e9, 3e9, 3e9, 3.01e9, 3.02e9});
  report.prediction =
      ImbalancePrediction{0.03, report.core_count, 1.0, 1.48, 0.0144, 3840, 1.47, 0.0141, 1.46};
  report.drain_commands = {
      "scontrol update NodeName=cn101 State=DRAIN Reason=\"corenoise: noisy cpu 2\""};
  report.healthy = false;
  return report;
}

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size()))
    ++n;
  return n;
}

// The JSON between the page's <script type="application/json"> tags.
nlohmann::json embedded_json(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"corenoise-report\">";
  const auto begin = page.find(open);
  if (begin == std::string::npos) return nullptr;
  const auto from = begin + open.size();
  return nlohmann::json::parse(page.substr(from, page.find("</script>", from) - from));
}

// ------------------------------------------------------- the embedded page

TEST(HtmlReport, EmbedsTheSweepJsonInOneHtml5Document) {
  const ClusterReport report = make_report(3, 4);
  const std::string html = render_html(report);
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(html.find("<meta charset=\"utf-8\">"), std::string::npos);
  EXPECT_EQ(count(html, "<style>"), 1u);
  EXPECT_EQ(count(html, "<script"), 2u);  // the JSON, the code
  EXPECT_TRUE(html.ends_with("</html>\n"));
  // --json and --html share one schema: the page holds exactly to_json().
  const nlohmann::json embedded = embedded_json(html);
  EXPECT_EQ(embedded, to_json(report));
  EXPECT_EQ(embedded["schema"], "corenoise-sweep/1");
  EXPECT_EQ(embedded["cells"].size(), 3u);
}

TEST(HtmlReport, LoadsNothingFromAnywhere) {
  const std::string html = render_html(make_report(3, 4));
  for (const char* bad : {"http:", "https:", "src=", "href=", "<link", "<img", "<iframe", "@import",
                          "url(", "@font-face", "fetch(", "XMLHttpRequest", "WebSocket"})
    EXPECT_EQ(html.find(bad), std::string::npos) << bad;
  // And the browser is told to refuse anything it might still reach for.
  EXPECT_NE(html.find("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';"),
            std::string::npos);
}

TEST(HtmlReport, ThousandNodesBy128CoresIsAPageAMailGatewayTakes) {
  const ClusterReport report = make_report(1000, 128);
  const auto start = std::chrono::steady_clock::now();
  const std::string html = render_html(report);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Printed, not asserted: a timing assertion would be flaky on a busy CI.
  // The browser's side: tests/bench/report_page_bench.sh.
  std::cout << "1000 x 128: " << html.size() / 1e6 << " MB in " << seconds * 1e3 << " ms\n";
  EXPECT_EQ(embedded_json(html)["cells"].size(), 1000u);
  EXPECT_LT(html.size(), 40'000'000u);
}

// ------------------------------------------------- the page in Chromium

TEST(HtmlReport, ChromiumDrawsEverySectionFromTheJson) {
  ClusterReport report = make_report(3, 4);
  report.nodes[0].error = "no daemon at /run/corenoise/ctl.sock";  // as collect reports it
  const std::string dom = render_in_chromium(render_html(report));
  ASSERT_EQ(rendered(dom), "ok") << dom.substr(0, 3000);
  EXPECT_NE(
      dom.find("<title>corenoise report — 3 nodes, 12 cores, 2026-01-01 10:00:00 UTC</title>"),
      std::string::npos);

  const std::string header = text_of(testing::element(dom, "<header id=\"summary\"", "header"));
  EXPECT_NE(header.find("corenoise reportunhealthy"), std::string::npos) << header;
  EXPECT_NE(header.find("3 nodes, 12 cores probed, started 2026-01-01 10:00:00 UTC, took 12.4 s, "
                        "layout rank-per-node, corenoise 9.9.9-test"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("11 ok 0 transient 1 noisy 0 throttled 0 contended 0 slow 0 skipped ; "
                        "0 outlier nodes"),
            std::string::npos)
      << header;
  EXPECT_NE(
      header.find("1 node contributed nothing:cn100 (0): no daemon at /run/corenoise/ctl.sock"),
      std::string::npos)
      << header;

  const std::string prediction = text_of(section(dom, "prediction"));
  EXPECT_NE(
      prediction.find("wait per step on this allocation\n14.40 ms\nstep 30.00 ms × (max 1.480 "
                      "− median 1.000)"),
      std::string::npos)
      << prediction;
  EXPECT_NE(
      prediction.find("extrapolated wait at 3840 ranks\n14.10 ms\nE[max of N] 1.470 (quantile "
                      "estimate 1.460)"),
      std::string::npos);
  EXPECT_NE(prediction.find("share of each step spent waiting\n32.4 %"), std::string::npos);

  const auto worst = table_rows(section(dom, "worst-cores"));
  ASSERT_EQ(worst.size(), 1u);
  EXPECT_EQ(worst[0], (std::vector<std::string>{"1", "cn101 (1)", "2", "noisy", "isolated", "1.480",
                                                "1.480", cause_text(noisy_cause())}));
  // The slowdown cells carry the scale's colour, with white figures on dark red.
  EXPECT_NE(section(dom, "worst-cores")
                .find("style=\"background: rgb(115, 5, 16); color: rgb(255, 255, 255);\">1.480<"),
            std::string::npos);

  const auto nodes = table_rows(section(dom, "worst-nodes"));
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0], (std::vector<std::string>{"1", "cn102 (2)", "1.002", "1.010", "0.00", "", "4",
                                                "0", "3.00 GHz", "1.00 %"}));
  EXPECT_EQ(nodes[1][1], "cn101 (1)");
  EXPECT_EQ(nodes[1][7], "1");  // its noisy core: not ok

  const auto quantiles = table_rows(section(dom, "quantiles"));
  ASSERT_EQ(quantiles.size(), 2u);
  EXPECT_EQ(quantiles[0], (std::vector<std::string>{"expected_slowdown", "isolated", "all", "12",
                                                    "×", "0.99", "1", "1.01", "1.2", "1.48"}));
  EXPECT_EQ(quantiles[1], (std::vector<std::string>{"clock_hertz", "isolated", "IntelCore", "12",
                                                    "GHz", "2.41", "3", "3", "3.01", "3.02"}));

  const std::string drain = section(dom, "drain");
  EXPECT_NE(drain.find("<pre>scontrol update NodeName=cn101 State=DRAIN Reason=\"corenoise: noisy "
                       "cpu 2\"\n</pre>"),
            std::string::npos)
      << drain;
  EXPECT_NE(dom.find("<footer>Generated by corenoise 9.9.9-test."), std::string::npos);
}

TEST(HtmlReport, ChromiumSeesEveryHeatmapCell) {
  constexpr unsigned kNodes = 8, kCores = 16;
  ClusterReport report = make_report(kNodes, kCores);
  // Cells at the scale's fixed points, and a node without one CPU.
  report.cells[3].cores[4].cluster_slowdown = 1.2;
  report.cells[3].cores[5].cluster_slowdown = 1.0;
  report.cells[3].cores[6].cluster_slowdown = 0.8;
  report.cells[3].cores[7].cluster_slowdown.reset();   // falls back on the node's figure
  report.cells[3].cores[7].expected_slowdown.reset();  // ... and there is none
  report.cells[4].cores.erase(report.cells[4].cores.begin() + 7);
  const std::string dom =
      render_in_chromium(render_html(report), "#cell=1,2;0,15;3,4;3,5;3,6;3,7;4,7;2,0;9,0");
  ASSERT_EQ(rendered(dom), "ok") << dom.substr(0, 3000);

  const std::string map = "<canvas class=\"map\"";
  EXPECT_EQ(attribute(dom, map, "data-rows"), "8");
  EXPECT_EQ(attribute(dom, map, "data-columns"), "16");
  EXPECT_EQ(attribute(dom, map, "data-cells"), std::to_string(kNodes * kCores - 1));
  const auto cells = probed_cells(dom);
  ASSERT_EQ(cells.size(), 9u) << dom.substr(dom.rfind("</script>"));
  EXPECT_EQ(cells.at("1,2").text, "node 1 cpu 2: noisy, expected slowdown 1.480, cluster 1.480: " +
                                      cause_text(noisy_cause()));
  EXPECT_EQ(cells.at("1,2").colour, "#730510");
  EXPECT_EQ(cells.at("0,15").text, "node 0 cpu 15: skipped: outside the process's affinity");
  EXPECT_EQ(cells.at("0,15").colour, "#bdbdbd");
  EXPECT_EQ(cells.at("3,4").colour, "#fb6a4a");
  EXPECT_EQ(cells.at("3,4").text, "node 3 cpu 4: ok, expected slowdown 1.007, cluster 1.200");
  EXPECT_EQ(cells.at("3,5").colour, "#ffffff");
  EXPECT_EQ(cells.at("3,6").colour, "#2171b5");
  EXPECT_EQ(cells.at("3,7").colour, "#e6e6e6");  // measured, no figure
  EXPECT_EQ(cells.at("3,7").text, "node 3 cpu 7: ok, expected slowdown –");
  EXPECT_EQ(cells.at("4,7").text, "node 4 (cn104) has no cpu 7");
  EXPECT_EQ(cells.at("2,0").text, "node 2 cpu 0: ok, expected slowdown 1.009, cluster 1.009");
  EXPECT_EQ(cells.at("9,0").text, "no such cell");

  // The legend's swatches come from the same scale as the cells.
  const std::string heatmap = section(dom, "heatmap");
  for (const auto& [at, rgb] :
       std::vector<std::pair<std::string, std::string>>{{"0.80", "rgb(33, 113, 181)"},
                                                        {"1.00", "rgb(255, 255, 255)"},
                                                        {"1.05", "rgb(254, 224, 210)"},
                                                        {"1.20", "rgb(251, 106, 74)"},
                                                        {"1.50", "rgb(103, 0, 13)"}})
    EXPECT_NE(
        heatmap.find("<span data-slowdown=\"" + at + "\"><i style=\"background: " + rgb + ";\">"),
        std::string::npos)
        << at << " " << heatmap.substr(0, 2000);
  EXPECT_NE(text_of(heatmap).find("against the cluster's reference core"), std::string::npos);
}

TEST(HtmlReport, HostileNamesStayTextInChromium) {
  ClusterReport report = make_report(3, 4);
  const std::string alert = "</script><script>alert(1)</script>";
  const std::string mark = "</script><script>document.documentElement.dataset.pwned=1</script>";
  report.nodes[2].name = alert;
  report.worst[0].node_name = mark;
  report.worst[0].cause =
      preempted_by("<!--<script>document.documentElement.dataset.pwned=2</script>");
  report.cells[1].cores[2].cause = preempted_by("a<b & \"c\" 'd' \u2028 e");
  report.drain_commands.push_back("echo '</script><script>document.title=1</script>' && true");
  const std::string page = render_html(report);
  EXPECT_EQ(page.find("</script><script>"), std::string::npos);
  EXPECT_EQ(count(page, "<script"), 2u);
  EXPECT_EQ(page.find("\u2028"), std::string::npos);

  const std::string dom = render_in_chromium(page, "#cell=1,2");
  ASSERT_EQ(rendered(dom), "ok") << dom.substr(0, 3000);
  EXPECT_EQ(dom.find("data-pwned"), std::string::npos);
  EXPECT_NE(dom.find("<title>corenoise report — 3 nodes"), std::string::npos);
  EXPECT_EQ(count(dom, "<script type=\"application/json\""), 1u);
  const auto worst = table_rows(section(dom, "worst-cores"));
  ASSERT_EQ(worst.size(), 1u);
  EXPECT_EQ(worst[0][1], mark + " (1)");
  EXPECT_EQ(worst[0][7], cause_text(report.worst[0].cause));
  EXPECT_NE(worst[0][7].find("<!--<script>document.documentElement.dataset.pwned=2</script>"),
            std::string::npos);
  EXPECT_EQ(table_rows(section(dom, "worst-nodes"))[0][1], alert + " (2)");
  EXPECT_NE(
      text_of(section(dom, "drain")).find("echo '</script><script>document.title=1</script>'"),
      std::string::npos);
  EXPECT_EQ(probed_cells(dom).at("1,2").text,
            "node 1 cpu 2: noisy, expected slowdown 1.480, cluster 1.480: " +
                cause_text(report.cells[1].cores[2].cause));
  EXPECT_NE(probed_cells(dom).at("1,2").text.find("a<b & \"c\" 'd' \u2028 e"), std::string::npos);

  // The check can fail: a page with the JSON's '<' left raw (what a plain
  // dump() would embed) lets a name end the element and run. (Without the
  // alert, which would hold headless Chromium until its timeout, and without
  // the "<!--", which would hide the rest of the page in a comment.)
  report.nodes[2].name = "cn102";
  report.worst[0].cause = preempted_by("plain");
  std::string naive = render_html(report);
  for (auto at = naive.find("\\u003c"); at != std::string::npos; at = naive.find("\\u003c", at))
    naive.replace(at, 6, "<");
  const std::string broken = render_in_chromium(naive);
  EXPECT_NE(broken.find("data-pwned=\"1\""), std::string::npos) << broken.substr(0, 2000);
  EXPECT_NE(broken.find("<title>1</title>"), std::string::npos);
  EXPECT_NE(rendered(broken), "ok");
}

TEST(HtmlReport, WithoutCellsSaysSoAndStillRanks) {
  const std::string dom = render_in_chromium(render_html(make_report(3, 4, /*with_cells=*/false)));
  ASSERT_EQ(rendered(dom), "ok") << dom.substr(0, 3000);
  const std::string heatmap = section(dom, "heatmap");
  EXPECT_NE(heatmap.find("<p class=\"note no-heatmap\">No heatmap"), std::string::npos) << heatmap;
  EXPECT_NE(heatmap.find("--full"), std::string::npos);
  EXPECT_EQ(dom.find("<canvas class=\"map\""), std::string::npos);
  EXPECT_EQ(table_rows(section(dom, "worst-cores")).at(0).at(7), cause_text(noisy_cause()));
  EXPECT_EQ(table_rows(section(dom, "worst-nodes")).at(0).at(1), "cn102 (2)");
}

TEST(HtmlReport, WorstNodesAreOrderedByMedianListTwentyAndEveryOutlier) {
  ClusterReport report = make_report(25, 2, false);
  report.nodes[1].summary.median_expected_slowdown = 1.3;
  report.nodes[1].robust_z = 12.5;
  report.nodes[1].outlier = true;
  report.nodes[3].summary.median_expected_slowdown = NAN;  // nothing measured: last
  // An outlier by z whose median ranks below the twentieth: listed anyway.
  report.nodes[5].summary.median_expected_slowdown = 0.9;
  report.nodes[5].robust_z = -8;
  report.nodes[5].outlier = true;
  const std::string dom = render_in_chromium(render_html(report));
  ASSERT_EQ(rendered(dom), "ok") << dom.substr(0, 3000);
  const auto rows = table_rows(section(dom, "worst-nodes"));
  ASSERT_EQ(rows.size(), 21u);
  EXPECT_EQ(rows[0][1], "cn101 (1)");
  EXPECT_EQ(rows[0][4], "12.50");
  EXPECT_EQ(rows[0][5], "outlier");
  EXPECT_EQ(rows[1][1], "cn124 (24)");  // then by median, worst first
  EXPECT_EQ(rows[2][1], "cn123 (23)");
  EXPECT_EQ(rows[19][1], "cn106 (6)");
  EXPECT_EQ(rows[20][0], "24");  // its rank among all 25
  EXPECT_EQ(rows[20][1], "cn105 (5)");
  EXPECT_EQ(rows[20][5], "outlier");
  for (std::size_t i = 1; i < 20; ++i) EXPECT_EQ(rows[i][5], "") << i;
  EXPECT_NE(text_of(section(dom, "worst-nodes")).find("4 more nodes not listed."),
            std::string::npos);
}

}  // namespace
}  // namespace corenoise
