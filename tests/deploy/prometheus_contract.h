// Reads the metrics contract (docs/metrics.md) and the names that the
// Prometheus rules and the Grafana dashboard use, so that tests can check the
// two stay in step with the contract. Text in, sets out: no YAML parser, the
// rules files are scanned as text (every name in them counts, comments too).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace corenoise::deploy_test {

// The whole file; throws std::runtime_error naming the path if unreadable.
std::string read_text(const std::string& path);

// Metric names of docs/metrics.md: the first cell of table rows "| `name` |".
std::set<std::string> documented_metrics(const std::string& metrics_md);

// Names after "record:" in a Prometheus rules file.
std::set<std::string> recording_rules(const std::string& rules_yaml);

// Names after "alert:" in a rules file, in file order.
std::vector<std::string> alert_names(const std::string& rules_yaml);

// Each alert's text block, from its "- alert:" line to the next rule.
std::vector<std::string> alert_blocks(const std::string& rules_yaml);

// Every identifier ([A-Za-z_:][A-Za-z0-9_:]*, as PromQL's metric names) that
// contains "corenoise_": plain metric names and recording-rule names such as
// "instance_mode:corenoise_slowdown_ratio:max". Quoted strings are scanned
// too, so a name in a template or a label matcher counts. Trailing colons
// are dropped (prose: "corenoise_clock_hertz: the clock").
std::set<std::string> metric_names_in(const std::string& text);

// Labels of each documented metric: the backticked names of the table's
// `labels` column ("—": none), plus `instance` and `job`, which Prometheus adds.
std::map<std::string, std::set<std::string>> documented_labels(const std::string& metrics_md);

// "metric{label}" for every label matcher of a corenoise metric selector in
// `text` (e.g. corenoise_noise_ratio{cpu="1"} gives "corenoise_noise_ratio{cpu}").
std::set<std::string> label_uses(const std::string& text);

// The label uses of `used` whose metric is documented but does not carry the
// label, sorted. (Unknown metrics are unknown_metrics' business.)
std::vector<std::string> unknown_labels(const std::set<std::string>& uses,
                                        const std::map<std::string, std::set<std::string>>& labels);

// The names of `used` that are neither documented (names without a colon)
// nor recorded (names with one), sorted.
std::vector<std::string> unknown_metrics(const std::set<std::string>& used,
                                         const std::set<std::string>& documented,
                                         const std::set<std::string>& recorded);

}  // namespace corenoise::deploy_test
