// The Prometheus rules (deploy/prometheus/) against the metrics contract
// (docs/metrics.md): every name they use exists, every alert is unit-tested by
// corenoise.rules.test.yml and carries a severity, a summary and a
// description. promtool itself (check/test) runs as separate ctest tests
// (tests/deploy/prometheus.cmake).
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "prometheus_contract.h"

namespace corenoise::deploy_test {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// ---- the scanner itself ------------------------------------------------------

TEST(PrometheusContract, FindsMetricAndRecordingRuleNamesInPromQL) {
  const auto names = metric_names_in(
      R"(max by (instance) (corenoise_slowdown_ratio{probe="expected", mode="$mode"}) )"
      R"(/ on(instance) group_left instance_mode:corenoise_slowdown_ratio:max )"
      R"(and rate(corenoise_detours_total[5m:1m]) > 0 or up{job="corenoise"} == 0 )"
      R"(or node_cpu_seconds_total{cpu="1"} {{ $labels.instance }} `corenoise_noise_ratio{cpu="%s"}`)"
      R"( serves no corenoise_build_info: something else)");
  EXPECT_EQ(names,
            (std::set<std::string>{
                "corenoise_slowdown_ratio", "instance_mode:corenoise_slowdown_ratio:max",
                "corenoise_detours_total", "corenoise_noise_ratio", "corenoise_build_info"}));
}

TEST(PrometheusContract, ParsesTheDocumentedTables) {
  const auto documented = documented_metrics(
      "| metric | type |\n|---|---|\n| `corenoise_core_state` | gauge |\n"
      "text `corenoise_not_a_row` |\n|   `corenoise_clock_hertz`   | gauge |\n");
  EXPECT_EQ(documented, (std::set<std::string>{"corenoise_core_state", "corenoise_clock_hertz"}));
}

// A renamed metric (the contract says corenoise_clock_hertz, a rule still uses
// the old name) and an undefined recording rule are both reported.
TEST(PrometheusContract, ReportsRenamedMetricsAndUndefinedRecordingRules) {
  const std::set<std::string> documented{"corenoise_clock_hertz", "corenoise_core_state"};
  const std::set<std::string> recorded{"instance:corenoise_core_state:sum"};
  const auto used = metric_names_in(
      "corenoise_clock_hz > 1 and corenoise_core_state and instance:corenoise_core_state:sum "
      "and instance:corenoise_core_state:max");
  EXPECT_EQ(unknown_metrics(used, documented, recorded),
            (std::vector<std::string>{"corenoise_clock_hz", "instance:corenoise_core_state:max"}));
}

// corenoise_noise_ratio has no `mode` (docs/metrics.md); a rule selecting on
// it would match nothing.
TEST(PrometheusContract, ReportsLabelsAMetricDoesNotCarry) {
  const auto labels = documented_labels(
      "| `corenoise_noise_ratio` | gauge | ratio 0–1 | `cpu` | Share |\n"
      "| `corenoise_paused` | gauge | 0/1 | — | 1 while paused |\n");
  EXPECT_EQ(labels.at("corenoise_paused"), (std::set<std::string>{"instance", "job"}));
  const auto uses = label_uses(
      R"(corenoise_noise_ratio{cpu=~"1|2", mode="isolated"} and corenoise_paused{instance!="a=b"})"
      R"( and instance:corenoise_noise_ratio:max{mode="x"} and corenoise_clock_hz{cpu="1"})");
  EXPECT_EQ(uses,
            (std::set<std::string>{"corenoise_noise_ratio{cpu}", "corenoise_noise_ratio{mode}",
                                   "corenoise_paused{instance}", "corenoise_clock_hz{cpu}"}));
  EXPECT_EQ(unknown_labels(uses, labels),
            (std::vector<std::string>{"corenoise_noise_ratio{mode}"}));
}

// ---- the shipped files ---------------------------------------------------------

class PrometheusRules : public ::testing::Test {
 protected:
  const std::string rules_ = read_text(CORENOISE_RULES);
  const std::string rule_tests_ =
      read_text(CORENOISE_RULE_TESTS) + read_text(CORENOISE_RULE_LONG_TESTS);
  const std::set<std::string> documented_ = documented_metrics(read_text(CORENOISE_METRICS_MD));
  const std::set<std::string> recorded_ = recording_rules(rules_);
};

TEST_F(PrometheusRules, ContractAndRulesAreRead) {
  // A broken parser would make the checks below vacuous.
  EXPECT_GE(documented_.size(), 20u);
  EXPECT_TRUE(documented_.count("corenoise_core_state"));
  EXPECT_TRUE(documented_.count("corenoise_round_timestamp_seconds"));
  EXPECT_EQ(documented_labels(read_text(CORENOISE_METRICS_MD)).at("corenoise_core_state"),
            (std::set<std::string>{"cpu", "state", "instance", "job"}));
  EXPECT_GE(recorded_.size(), 6u);
  EXPECT_GE(alert_names(rules_).size(), 6u);
}

TEST_F(PrometheusRules, UseOnlyDocumentedMetrics) {
  const auto used = metric_names_in(rules_);
  EXPECT_GE(used.size(), 10u);
  EXPECT_EQ(join(unknown_metrics(used, documented_, recorded_)), "")
      << "names in corenoise.rules.yml that docs/metrics.md does not list "
         "(or recording rules it does not define)";
}

TEST_F(PrometheusRules, SelectOnlyDocumentedLabels) {
  const auto labels = documented_labels(read_text(CORENOISE_METRICS_MD));
  const auto uses = label_uses(rules_);
  EXPECT_GE(uses.size(), 10u);
  EXPECT_EQ(join(unknown_labels(uses, labels)), "")
      << "label matchers in corenoise.rules.yml on labels docs/metrics.md does not give the metric";
  EXPECT_EQ(join(unknown_labels(label_uses(rule_tests_), labels)), "")
      << "input series in corenoise.rules*.test.yml with labels the metric does not have";
}

TEST_F(PrometheusRules, RecordingRuleNamesFollowTheConvention) {
  // level:metric:operations, where the metric part names a contract metric
  // or says what is counted.
  const std::regex convention("[a-z_]+:corenoise_[a-z0-9_]+:[a-z0-9_]+");
  for (const auto& name : recorded_) {
    EXPECT_TRUE(std::regex_match(name, convention)) << name;
  }
}

TEST_F(PrometheusRules, RuleTestsUseOnlyDocumentedMetrics) {
  // The unit tests' input series must look like what corenoised serves.
  EXPECT_EQ(join(unknown_metrics(metric_names_in(rule_tests_), documented_, recorded_)), "")
      << "names in corenoise.rules*.test.yml that docs/metrics.md does not list";
}

TEST_F(PrometheusRules, EveryAlertIsUnitTested) {
  const auto tested = [this](const std::string& alert) {
    return std::regex_search(rule_tests_, std::regex("alertname:\\s*" + alert + "\\s*\n"));
  };
  for (const auto& alert : alert_names(rules_)) {
    EXPECT_TRUE(tested(alert)) << alert << " has no alert_rule_test in corenoise.rules*.test.yml";
  }
}

TEST_F(PrometheusRules, EveryAlertHasForSeverityAndAnnotations) {
  const auto blocks = alert_blocks(rules_);
  ASSERT_EQ(blocks.size(), alert_names(rules_).size());
  const std::regex severity("\n\\s+severity:\\s*(warning|info|critical)\\s*\n");
  for (const auto& block : blocks) {
    const std::string name = block.substr(0, block.find('\n'));
    EXPECT_TRUE(std::regex_search(block, severity)) << name;
    EXPECT_TRUE(std::regex_search(block, std::regex("\n\\s+for:\\s*[0-9]+[smhd]"))) << name;
    EXPECT_NE(block.find("summary:"), std::string::npos) << name;
    EXPECT_NE(block.find("description:"), std::string::npos) << name;
    // Per-node alerts name the node in their summary.
    if (block.find("absent(") == std::string::npos) {
      EXPECT_NE(block.find("{{ $labels.instance }}"), std::string::npos) << name;
    }
  }
}

}  // namespace
}  // namespace corenoise::deploy_test
