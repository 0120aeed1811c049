// The HTML page of a sweep (collector/report/html_report.*): structure checks on the
// rendered string, and the page as a real browser parses it (headless
// Chromium) — the cells an administrator looks at must survive parsing.
#include "collector/report/html_report.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace corenoise {
namespace {

constexpr const char* kNoisyCause = "lost 31 % to 2,410 detours: irq 45 (mlx5_comp3)";

// nodes × cores, all ok near 1 except node 1 cpu 2 (noisy, 1.48) and the
// last cpu of node 0 (skipped). Node names cnNNN.
ClusterReport make_report(unsigned nodes, unsigned cores, bool with_cells = true) {
  ClusterReport report;
  report.version = "9.9.9-test";
  report.started_unix_seconds = 1767261600;
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
        cell.cause = kNoisyCause;
      } else if (n == 0 && c + 1 == cores) {
        cell.state = CoreState::skipped;
        cell.expected_slowdown.reset();
        cell.cluster_slowdown.reset();
        cell.cause = "outside the process's affinity";
      }
      row.cores.push_back(cell);
    }
    report.cells.push_back(std::move(row));
  }
  if (nodes > 1)
    report.worst.push_back(
        {1, "cn101", 2, CoreState::noisy, Mode::isolated, 1.48, 1.48, kNoisyCause});
  report.quantiles.push_back({Metric::expected_slowdown, Mode::isolated, "", report.core_count,
                              0.99, 1.0, 1.01, 1.2, 1.48});
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

// (node, cpu) of every element with class "cell" (first class) and its data
// attributes, in the attribute order both render_html and Chromium's
// serializer use.
std::set<std::pair<int, int>> cells_of(const std::string& html, std::size_t* total) {
  static const std::regex cell(
      R"re(<td class="cell [^"]*" data-node="(\d+)" data-cpu="(\d+)" data-state="([a-z]+)" data-slowdown="([0-9.]*)")re");
  std::set<std::pair<int, int>> seen;
  *total = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), cell); it != std::sregex_iterator();
       ++it) {
    ++*total;
    seen.emplace(std::stoi((*it)[1]), std::stoi((*it)[2]));
  }
  return seen;
}

std::string section(const std::string& html, const std::string& id) {
  const auto begin = html.find("<section id=\"" + id + "\"");
  if (begin == std::string::npos) return {};
  const auto end = html.find("</section>", begin);
  return html.substr(begin, end == std::string::npos ? std::string::npos : end + 10 - begin);
}

// A minimal well-formedness check: every start tag (other than void
// elements) is closed by the matching end tag in order. Returns "" when
// balanced, otherwise what went wrong. Attribute values are quoted by
// render_html and contain no '>' (escaped), so tags end at the next '>'.
std::string balance_error(const std::string& html) {
  static const std::set<std::string> kVoid = {"meta", "br", "hr", "img", "input", "link", "wbr"};
  std::vector<std::string> stack;
  for (std::size_t at = html.find('<'); at != std::string::npos; at = html.find('<', at + 1)) {
    const auto end = html.find('>', at);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(at);
    std::string tag = html.substr(at + 1, end - at - 1);
    if (tag.starts_with("!")) continue;
    const bool closing = tag.starts_with("/");
    if (closing) tag.erase(0, 1);
    const std::string name = tag.substr(0, tag.find_first_of(" \t\n/"));
    if (name.empty() || kVoid.contains(name)) continue;
    if (!closing) {
      stack.push_back(name);
    } else if (stack.empty() || stack.back() != name) {
      return "</" + name + "> closes <" + (stack.empty() ? "nothing" : stack.back()) + "> at " +
             std::to_string(at);
    } else {
      stack.pop_back();
    }
  }
  return stack.empty() ? "" : "<" + stack.back() + "> never closed";
}

TEST(HtmlReport, IsOneHtml5DocumentInUtf8) {
  const std::string html = render_html(make_report(3, 4));
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(html.find("<meta charset=\"utf-8\">"), std::string::npos);
  EXPECT_EQ(count(html, "<style>"), 1u);
  EXPECT_TRUE(html.ends_with("</html>\n"));
  EXPECT_EQ(balance_error(html), "");
  for (const char* id :
       {"prediction", "heatmap", "worst-cores", "worst-nodes", "quantiles", "drain"})
    EXPECT_NE(html.find(std::string("<section id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_NE(html.find("9.9.9-test"), std::string::npos);
  EXPECT_NE(html.find("2026-01-01 10:00:00 UTC"), std::string::npos);
  EXPECT_NE(html.find("unhealthy"), std::string::npos);
}

TEST(HtmlReport, HasOneCellPerNodeAndCpuWithItsData) {
  const std::string html = render_html(make_report(3, 4));
  std::size_t total = 0;
  const auto seen = cells_of(html, &total);
  EXPECT_EQ(total, 12u);
  EXPECT_EQ(count(html, "class=\"cell "), 12u);  // nothing else is a cell
  for (int n = 0; n < 3; ++n)
    for (int c = 0; c < 4; ++c) EXPECT_TRUE(seen.contains({n, c})) << n << " " << c;
  EXPECT_NE(html.find("data-node=\"1\" data-cpu=\"2\" data-state=\"noisy\" "
                      "data-slowdown=\"1.480\""),
            std::string::npos);
  // Skipped: grey, no slowdown.
  EXPECT_NE(html.find("<td class=\"cell kx\" data-node=\"0\" data-cpu=\"3\" "
                      "data-state=\"skipped\" data-slowdown=\"\""),
            std::string::npos);
  // Rows carry the node names.
  EXPECT_NE(html.find(">cn102</th>"), std::string::npos);
}

TEST(HtmlReport, CellTitlesCarryStateSlowdownAndCause) {
  const std::string html = render_html(make_report(3, 4));
  EXPECT_NE(html.find("title=\"node 1 cpu 2: noisy, expected slowdown 1.480, cluster 1.480: " +
                      std::string(kNoisyCause) + "\""),
            std::string::npos);
  EXPECT_NE(html.find("title=\"node 0 cpu 3: skipped: outside the process&#39;s affinity\""),
            std::string::npos);
}

TEST(HtmlReport, EscapesNodeNamesCausesAndCommands) {
  ClusterReport report = make_report(3, 4);
  report.nodes[2].name = "<script>alert(\"x\")</script>";
  report.cells[1].cores[2].cause = "a<b & \"c\" 'd'";
  report.worst[0].node_name = "<script>";
  report.worst[0].cause = "</td><script>";
  report.drain_commands.push_back("echo '<script>' && true");
  const std::string html = render_html(report);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("a&lt;b &amp; &quot;c&quot; &#39;d&#39;"), std::string::npos);
  EXPECT_NE(html.find("echo &#39;&lt;script&gt;&#39; &amp;&amp; true"), std::string::npos);
  EXPECT_EQ(balance_error(html), "");
  EXPECT_EQ(html_escape("<&>\"'x"), "&lt;&amp;&gt;&quot;&#39;x");
}

TEST(HtmlReport, LoadsNothingFromAnywhere) {
  const std::string html = render_html(make_report(3, 4));
  for (const char* bad : {"http://", "https://", "src=", "href=", "<link", "<script", "@import",
                          "url(", "@font-face", "//"})
    EXPECT_EQ(html.find(bad), std::string::npos) << bad;
}

TEST(HtmlReport, PrintsTheDrainCommandsInAPre) {
  const std::string html = render_html(make_report(3, 4));
  const std::string drain = section(html, "drain");
  EXPECT_NE(drain.find("<pre>scontrol update NodeName=cn101 State=DRAIN "
                       "Reason=&quot;corenoise: noisy cpu 2&quot;\n</pre>"),
            std::string::npos)
      << drain;
  ClusterReport none = make_report(3, 4);
  none.drain_commands.clear();
  EXPECT_NE(section(render_html(none), "drain").find("Nothing to drain"), std::string::npos);
}

TEST(HtmlReport, WithoutCellsSaysSoAndStillRanks) {
  const std::string html = render_html(make_report(3, 4, /*with_cells=*/false));
  const std::string heatmap = section(html, "heatmap");
  EXPECT_NE(heatmap.find("No heatmap"), std::string::npos);
  EXPECT_NE(heatmap.find("--full"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"cell"), 0u);
  EXPECT_NE(section(html, "worst-cores").find(kNoisyCause), std::string::npos);
  EXPECT_NE(section(html, "worst-nodes").find("cn102"), std::string::npos);
  EXPECT_EQ(balance_error(html), "");
}

TEST(HtmlReport, WorstNodesAreOrderedByMedianAndFlagOutliers) {
  ClusterReport report = make_report(4, 2, false);
  report.nodes[1].summary.median_expected_slowdown = 1.3;
  report.nodes[1].robust_z = 12.5;
  report.nodes[1].outlier = true;
  report.nodes[3].summary.median_expected_slowdown = NAN;
  const std::string nodes = section(render_html(report), "worst-nodes");
  const auto a = nodes.find("cn101"), b = nodes.find("cn102"), c = nodes.find("cn100"),
             d = nodes.find("cn103");
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_LT(c, d);  // NaN last
  EXPECT_NE(nodes.find("12.50"), std::string::npos);
  EXPECT_EQ(count(nodes, "outlier</span>"), 1u);
}

TEST(HtmlReport, ColourScaleIsWhiteAtOneRedAboveBlueBelow) {
  EXPECT_EQ(slowdown_colour(1.0), "#ffffff");
  EXPECT_EQ(slowdown_colour(1.5), "#67000d");
  EXPECT_EQ(slowdown_colour(4.0), "#67000d");
  EXPECT_EQ(slowdown_colour(0.5), "#2171b5");
  EXPECT_EQ(slowdown_colour(NAN), "#ffffff");
  // Darker (lower r+g+b) as the slowdown grows.
  auto lightness = [](const std::string& c) {
    return std::stoi(c.substr(1, 2), nullptr, 16) + std::stoi(c.substr(3, 2), nullptr, 16) +
           std::stoi(c.substr(5, 2), nullptr, 16);
  };
  int previous = lightness(slowdown_colour(1.0));
  for (double s = 1.01; s <= 1.5; s += 0.01) {
    const int now = lightness(slowdown_colour(s));
    EXPECT_LE(now, previous) << s;
    previous = now;
  }
}

TEST(HtmlReport, ThousandNodesBy128CoresRendersQuickly) {
  const ClusterReport report = make_report(1000, 128);
  const auto start = std::chrono::steady_clock::now();
  const std::string html = render_html(report);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Printed, not asserted: a timing assertion would be flaky on a busy CI.
  std::cout << "1000 x 128: " << html.size() / 1e6 << " MB in " << seconds * 1e3 << " ms\n";
  EXPECT_EQ(count(html, "class=\"cell "), 128000u);
  EXPECT_NE(html.find("class=\"heatmap compact\""), std::string::npos);
  EXPECT_LT(html.size(), 40'000'000u);  // a browser opens it; a mail gateway might not
}

std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[65536];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

// The page as a browser builds it, in headless Chromium (deploy/dev-setup.sh
// --tests installs it; the test fails without it).
TEST(HtmlReport, ChromiumSeesEveryHeatmapCell) {
  constexpr unsigned kNodes = 8, kCores = 16;
  const std::string html = render_html(make_report(kNodes, kCores));
  // A parser recovers from unbalanced tags by moving cells around, so
  // balance is what keeps the grid a grid.
  EXPECT_EQ(balance_error(section(html, "heatmap")), "");
  EXPECT_EQ(balance_error(html), "");
  std::size_t written = 0;
  EXPECT_EQ(cells_of(html, &written).size(), kNodes * kCores);
  EXPECT_EQ(written, kNodes * kCores);

  // CORENOISE_CHROMIUM names another browser binary.
  const char* chromium = std::getenv("CORENOISE_CHROMIUM");
  if (chromium == nullptr || *chromium == '\0') chromium = "/usr/bin/chromium";
  ASSERT_EQ(::access(chromium, X_OK), 0)
      << chromium << " is missing: install chromium (deploy/dev-setup.sh --tests does)";
  char dir_template[] = "/tmp/corenoise-html-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::filesystem::path dir = dir_template;
  const std::filesystem::path page = dir / "report.html";
  std::ofstream(page, std::ios::binary) << html;
  const std::string dom =
      run("timeout 120 " + std::string(chromium) +
          " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
          " --disable-background-networking --disable-component-update --disable-sync"
          " --user-data-dir=" +
          (dir / "profile").string() + " --dump-dom 'file://" + page.string() + "' 2>/dev/null");
  std::filesystem::remove_all(dir);
  ASSERT_NE(dom.find("<table class=\"heatmap\">"), std::string::npos) << dom.substr(0, 2000);
  std::size_t total = 0;
  const auto seen = cells_of(dom, &total);
  EXPECT_EQ(total, kNodes * kCores);
  EXPECT_EQ(seen.size(), kNodes * kCores);
  // The cells stayed in the heatmap table (a parser moves misplaced cells out).
  const std::string table = dom.substr(dom.find("<table class=\"heatmap\">"));
  EXPECT_EQ(count(table.substr(0, table.find("</table>")), "class=\"cell "), kNodes * kCores);
  EXPECT_NE(dom.find(kNoisyCause), std::string::npos);
}

}  // namespace
}  // namespace corenoise
