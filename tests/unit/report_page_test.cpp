// The report page's embedding (collector/report/report_page.*,
// collector/report/web/embed.cmake): the JSON made safe inside a <script>
// element, the template's slots filled, a report the script cannot draw
// shown as an error rather than a blank page, and the build refusing web
// files that would break the page.
#include "collector/report/report_page.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "collector/report/web_assets.h"
#include "tests/shell_word.h"
#include "tests/unit/chromium_dom.h"

namespace corenoise {
namespace {

using nlohmann::json;
using testing::element;
using testing::render_in_chromium;
using testing::rendered;
using testing::text_of;

TEST(ReportPage, ScriptSafeJsonEscapesEveryLessThanAndLineSeparator) {
  const json report = {{"name", "</script><script>alert(1)</script>"},
                       {"comment", "<!-- <script>"},
                       {"separators", "a\u2028b\u2029c"},
                       {"fine", "> & ' \" é 漢"}};
  const std::string text = script_safe_json(report);
  EXPECT_EQ(text.find('<'), std::string::npos) << text;
  EXPECT_EQ(text.find("\u2028"), std::string::npos);
  EXPECT_EQ(text.find("\u2029"), std::string::npos);
  EXPECT_NE(text.find("\\u003c/script>\\u003cscript>alert(1)\\u003c/script>"), std::string::npos);
  EXPECT_NE(text.find("\\u003c!-- \\u003cscript>"), std::string::npos);
  EXPECT_NE(text.find("a\\u2028b\\u2029c"), std::string::npos);
  EXPECT_NE(text.find("> & ' \\\" é 漢"), std::string::npos);  // UTF-8 otherwise kept
  EXPECT_EQ(json::parse(text), report);
}

TEST(ReportPage, InvalidUtf8InAHostnameIsReplacedNotThrown) {
  const json report = {{"host", std::string("node\xff\xfe")}};
  std::string text;
  ASSERT_NO_THROW(text = script_safe_json(report));
  EXPECT_EQ(json::parse(text)["host"], "node\uFFFD\uFFFD");
}

TEST(ReportPage, FillsTheTemplatesSlotsWithStyleJsonAndScript) {
  const json report = {{"schema", "corenoise-job/1"}, {"program", "a<b"}};
  const std::string page = render_report_page(report);
  EXPECT_EQ(page.find("@@CORENOISE_"), std::string::npos);
  EXPECT_NE(page.find("<style>\n" + std::string(web_assets::kStyle) + "\n</style>"),
            std::string::npos);
  EXPECT_NE(page.find("<script>\n" + std::string(web_assets::kScript) + "\n</script>"),
            std::string::npos);
  EXPECT_NE(page.find("<script type=\"application/json\" id=\"corenoise-report\">" +
                      script_safe_json(report) + "</script>"),
            std::string::npos);
  EXPECT_EQ(page.size(), web_assets::kPage.size() + web_assets::kStyle.size() +
                             web_assets::kScript.size() + script_safe_json(report).size() -
                             std::string("@@CORENOISE_STYLE@@@@CORENOISE_SCRIPT@@"
                                         "@@CORENOISE_REPORT_JSON@@")
                                 .size());
}

// A page that cannot be drawn says so, visibly, instead of staying blank.
TEST(ReportPage, AReportThePageCannotReadShowsAnErrorInChromium) {
  const std::string unknown =
      render_in_chromium(render_report_page({{"schema", "corenoise-sweep/9"}}));
  EXPECT_EQ(testing::rendered(unknown),
            "error: this page cannot read a report of schema \"corenoise-sweep/9\"");
  EXPECT_EQ(text_of(element(unknown, "<div class=\"error-box\" role=\"alert\"", "div")),
            "This report could not be drawn: this page cannot read a report of schema "
            "\"corenoise-sweep/9\"");
  // An error part-way through a kind's drawing is caught the same way.
  const std::string furlongs = render_in_chromium(render_report_page(
      {{"schema", "corenoise-job/1"},
       {"program", "x"},
       {"lateness", {{"unit", "furlongs"}, {"rows", json::array({json::array({1})})}}}}));
  EXPECT_EQ(testing::rendered(furlongs),
            "error: lateness.unit \"furlongs\" is not seconds or milliseconds");
  EXPECT_NE(furlongs.find("<div class=\"error-box\" role=\"alert\">"), std::string::npos);
}

int run_embed(const std::filesystem::path& web, const std::filesystem::path& out,
              std::string* output) {
  using testing::shell_word;
  const std::string command = shell_word(CORENOISE_CMAKE) +
                              " -DWEB_DIR=" + shell_word(web.string()) +
                              " -DOUTPUT=" + shell_word(out.string()) + " -P " +
                              shell_word(std::string(CORENOISE_WEB_DIR) + "/embed.cmake") + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    output->append(buffer, n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string slurp(const std::filesystem::path& path) {
  std::ostringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

// The build's guard: a web file that would end its element (or its C++
// literal) early fails the build, naming the file, instead of shipping a
// page that breaks in a browser.
TEST(ReportPage, TheBuildRefusesWebFilesThatWouldBreakThePage) {
  char dir_template[] = "/tmp/corenoise-embed-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::filesystem::path dir = dir_template;
  for (const char* name : {"report.html", "report.css", "report.js"})
    std::filesystem::copy_file(std::filesystem::path(CORENOISE_WEB_DIR) / name, dir / name);
  std::string output;
  EXPECT_EQ(run_embed(dir, dir / "ok.cpp", &output), 0) << output;
  EXPECT_NE(slurp(dir / "ok.cpp").find("const std::string_view kScript = R\"corenoise_web("),
            std::string::npos);

  const std::string script = slurp(dir / "report.js");
  for (const std::string& bad :
       {std::string("// a comment with </SCRIPT> in it\n"), std::string("x = '<!--';\n"),
        std::string("x = ')corenoise_web\"';\n")}) {
    std::ofstream(dir / "report.js") << script << bad;
    output.clear();
    EXPECT_NE(run_embed(dir, dir / "bad.cpp", &output), 0) << bad;
    EXPECT_NE(output.find("report.js contains"), std::string::npos) << output;
    EXPECT_FALSE(std::filesystem::exists(dir / "bad.cpp"));
  }
  std::ofstream(dir / "report.js") << script;
  std::ofstream(dir / "report.html") << "<html>@@CORENOISE_STYLE@@ @@CORENOISE_SCRIPT@@</html>";
  output.clear();
  EXPECT_NE(run_embed(dir, dir / "bad.cpp", &output), 0);
  EXPECT_NE(output.find("must hold @@CORENOISE_REPORT_JSON@@"), std::string::npos) << output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace corenoise
