// The Grafana dashboard (deploy/grafana/corenoise.json): it parses, its
// structure is what Grafana imports (unique ids, grid inside 24 columns, the
// data source a variable), every query is valid PromQL (promtool checks them
// as recording rules) and every metric it names exists in the contract
// (docs/metrics.md) or is a recording rule of deploy/prometheus/corenoise.rules.yml.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "../shell_word.h"
#include "prometheus_contract.h"

namespace corenoise::deploy_test {
namespace {

using nlohmann::json;

// Every panel, rows' nested panels (collapsed rows keep theirs inside) included.
void collect_panels(const json& panels, std::vector<json>& out) {
  for (const json& p : panels) {
    out.push_back(p);
    if (p.contains("panels")) collect_panels(p.at("panels"), out);
  }
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

class GrafanaDashboard : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_THROW(dashboard_ = json::parse(text_)) << CORENOISE_DASHBOARD;
    collect_panels(dashboard_.at("panels"), panels_);
    for (const json& p : panels_) {
      for (const json& t : p.value("targets", json::array())) exprs_.push_back(t.value("expr", ""));
    }
    for (const json& v : dashboard_.at("templating").at("list")) variables_[v.at("name")] = v;
  }

  // A variable query is a string or an object with "query".
  std::vector<std::string> variable_queries() const {
    std::vector<std::string> queries;
    for (const auto& [name, v] : variables_) {
      if (v.at("type") != "query") continue;
      const json& q = v.at("query");
      queries.push_back(q.is_string() ? q.get<std::string>() : q.at("query").get<std::string>());
    }
    return queries;
  }

  // What Grafana would put in place of $name: a custom variable's first
  // option, a query variable's "All" value, Grafana's own interval variables.
  std::string substitute_variables(std::string expr) const {
    std::map<std::string, std::string> values{
        {"__rate_interval", "5m"}, {"__interval", "1m"}, {"__range", "1h"}};
    for (const auto& [name, v] : variables_) {
      if (v.at("type") == "custom") values[name] = v.at("options").at(0).at("value");
      if (v.at("type") == "query") values[name] = v.value("allValue", ".+");
    }
    const std::regex ref(R"(\$\{(\w+)\}|\$(\w+))");
    std::string out;
    auto it = std::sregex_iterator(expr.begin(), expr.end(), ref);
    std::size_t last = 0;
    for (; it != std::sregex_iterator(); ++it) {
      const std::string name = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
      out += expr.substr(last, it->position() - last);
      out += values.count(name) ? values.at(name) : "$" + name;  // unknown: promtool fails
      last = it->position() + it->length();
    }
    return out + expr.substr(last);
  }

  const std::string text_ = read_text(CORENOISE_DASHBOARD);
  const std::set<std::string> documented_ = documented_metrics(read_text(CORENOISE_METRICS_MD));
  const std::set<std::string> recorded_ = recording_rules(read_text(CORENOISE_RULES));
  json dashboard_;
  std::vector<json> panels_;
  std::vector<std::string> exprs_;
  std::map<std::string, json> variables_;
};

TEST_F(GrafanaDashboard, IsAGrafanaDashboard) {
  EXPECT_EQ(dashboard_.at("uid"), "corenoise");
  EXPECT_FALSE(dashboard_.at("title").get<std::string>().empty());
  EXPECT_GE(dashboard_.at("schemaVersion").get<int>(), 36);
  EXPECT_FALSE(dashboard_.contains("id") && !dashboard_.at("id").is_null())
      << "a fixed id would clash with the importing Grafana's own";
}

TEST_F(GrafanaDashboard, HasDataSourceInstanceModeAndCpuVariables) {
  ASSERT_TRUE(variables_.count("datasource"));
  EXPECT_EQ(variables_.at("datasource").at("type"), "datasource");
  EXPECT_EQ(variables_.at("datasource").at("query"), "prometheus");
  for (const char* name : {"instance", "cpu"}) {
    ASSERT_TRUE(variables_.count(name)) << name;
    EXPECT_EQ(variables_.at(name).at("type"), "query") << name;
    EXPECT_EQ(variables_.at(name).at("datasource").at("uid"), "${datasource}") << name;
  }
  ASSERT_TRUE(variables_.count("mode"));
  std::set<std::string> modes;
  for (const json& o : variables_.at("mode").at("options")) modes.insert(o.at("value"));
  EXPECT_EQ(modes, (std::set<std::string>{"isolated", "concurrent"}));
}

TEST_F(GrafanaDashboard, PanelsHaveUniqueIdsAndFitTheGrid) {
  ASSERT_GE(panels_.size(), 15u);
  std::set<int> ids;
  for (const json& p : panels_) {
    const std::string title = p.value("title", "?");
    EXPECT_TRUE(ids.insert(p.at("id").get<int>()).second) << "duplicate id in " << title;
    const json& g = p.at("gridPos");
    EXPECT_GT(g.at("w").get<int>(), 0) << title;
    EXPECT_GT(g.at("h").get<int>(), 0) << title;
    EXPECT_LE(g.at("x").get<int>() + g.at("w").get<int>(), 24) << title;
  }
}

TEST_F(GrafanaDashboard, ShowsHeatmapTimelinesStatesAndStats) {
  std::multiset<std::string> types;
  for (const json& p : panels_) types.insert(p.at("type"));
  for (const char* type : {"stat", "table", "timeseries", "state-timeline", "heatmap", "row"}) {
    EXPECT_TRUE(types.count(type)) << "no " << type << " panel";
  }
  // The figures the dashboard exists for.
  const auto used = metric_names_in(join(exprs_));
  for (const char* metric :
       {"corenoise_slowdown_ratio", "corenoise_core_state", "corenoise_clock_hertz",
        "corenoise_noise_ratio", "corenoise_round_timestamp_seconds",
        "corenoise_cluster_slowdown_ratio", "corenoise_baseline_slowdown_ratio"}) {
    EXPECT_TRUE(used.count(metric)) << metric;
  }
  EXPECT_NE(join(exprs_).find("up{job=\"corenoise\""), std::string::npos) << "no daemon-up stat";
}

TEST_F(GrafanaDashboard, EveryTargetQueriesTheDataSourceVariable) {
  std::size_t targets = 0;
  for (const json& p : panels_) {
    if (p.at("type") == "row") continue;
    const std::string title = p.value("title", "?");
    EXPECT_EQ(p.at("datasource").at("uid"), "${datasource}") << title;
    std::set<std::string> refs;
    for (const json& t : p.at("targets")) {
      ++targets;
      EXPECT_EQ(t.at("datasource").at("uid"), "${datasource}") << title;
      EXPECT_FALSE(t.at("expr").get<std::string>().empty()) << title;
      EXPECT_TRUE(refs.insert(t.at("refId")).second) << "duplicate refId in " << title;
    }
  }
  EXPECT_EQ(targets, exprs_.size());
}

TEST_F(GrafanaDashboard, QueriesUseOnlyDefinedVariables) {
  std::set<std::string> known{"__rate_interval", "__interval", "__range"};
  for (const auto& [name, v] : variables_) known.insert(name);
  const std::regex ref(R"(\$\{(\w+)\}|\$(\w+))");
  auto queries = exprs_;
  for (const auto& q : variable_queries()) queries.push_back(q);
  for (const auto& q : queries) {
    for (auto it = std::sregex_iterator(q.begin(), q.end(), ref); it != std::sregex_iterator();
         ++it) {
      const std::string name = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
      EXPECT_TRUE(known.count(name)) << "$" << name << " in " << q;
    }
  }
}

TEST_F(GrafanaDashboard, EveryMetricIsDocumentedOrRecorded) {
  std::string queries = join(exprs_);
  for (const auto& q : variable_queries()) queries += "\n" + q;
  const auto used = metric_names_in(queries);
  EXPECT_GE(used.size(), 15u);
  EXPECT_EQ(join(unknown_metrics(used, documented_, recorded_)), "")
      << "metrics the dashboard queries that docs/metrics.md does not list "
         "(or recording rules corenoise.rules.yml does not define)";
  // Descriptions and legends name metrics too: they must not go stale either.
  EXPECT_EQ(join(unknown_metrics(metric_names_in(text_), documented_, recorded_)), "");
}

TEST_F(GrafanaDashboard, SelectsOnlyDocumentedLabels) {
  std::string queries = join(exprs_);
  for (const auto& q : variable_queries()) queries += "\n" + q;
  const auto uses = label_uses(queries);
  EXPECT_GE(uses.size(), 20u);
  EXPECT_EQ(join(unknown_labels(uses, documented_labels(read_text(CORENOISE_METRICS_MD)))), "")
      << "label matchers the dashboard uses on labels docs/metrics.md does not give the metric";
}

TEST_F(GrafanaDashboard, QueriesAreValidPromQL) {
  // promtool has no "check query"; as recording rules, it parses them all.
  json rules = json::array();
  for (std::size_t i = 0; i < exprs_.size(); ++i) {
    rules.push_back({{"record", "dashboard:query_" + std::to_string(i) + ":check"},
                     {"expr", substitute_variables(exprs_[i])}});
  }
  const json file = {{"groups", json::array({{{"name", "dashboard"}, {"rules", rules}}})}};
  const auto path = std::filesystem::temp_directory_path() /
                    ("corenoise_dashboard_rules_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << file.dump(2);  // JSON is YAML: promtool reads it.
  const std::string command =
      testing::shell_word(PROMTOOL_BIN) + " check rules " + path.string() + " 2>&1";
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr) << command;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
  const int status = ::pclose(pipe);
  std::filesystem::remove(path);
  EXPECT_EQ(status, 0) << command << "\n" << output;
  EXPECT_NE(output.find("SUCCESS: " + std::to_string(exprs_.size()) + " rules found"),
            std::string::npos)
      << output;
}

}  // namespace
}  // namespace corenoise::deploy_test
