#include "prometheus_contract.h"

#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace corenoise::deploy_test {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == ':';
}

// Values of "KEY: value" lines (optionally list items), in file order.
std::vector<std::string> yaml_values(const std::string& text, const std::string& key) {
  static const std::string kName = "([A-Za-z_:][A-Za-z0-9_:]*)";
  const std::regex line("^\\s*(?:-\\s+)?" + key + ":\\s*['\"]?" + kName);
  std::vector<std::string> values;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, line)) values.push_back(m[1]);
  }
  return values;
}

}  // namespace

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::set<std::string> documented_metrics(const std::string& metrics_md) {
  const std::regex row("^\\|\\s*`([a-zA-Z_:][a-zA-Z0-9_:]*)`\\s*\\|");
  std::set<std::string> names;
  std::istringstream in(metrics_md);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, row)) names.insert(m[1]);
  }
  return names;
}

std::set<std::string> recording_rules(const std::string& rules_yaml) {
  const auto v = yaml_values(rules_yaml, "record");
  return {v.begin(), v.end()};
}

std::vector<std::string> alert_names(const std::string& rules_yaml) {
  return yaml_values(rules_yaml, "alert");
}

std::vector<std::string> alert_blocks(const std::string& rules_yaml) {
  const std::regex rule_start("^\\s*-\\s+(alert|record):");
  std::vector<std::string> blocks;
  bool in_alert = false;
  std::istringstream in(rules_yaml);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    const bool starts = std::regex_search(l, m, rule_start);
    // A new group ends the last rule of the previous one.
    const bool new_group = l.find("- name:") != std::string::npos;
    if (starts || new_group) in_alert = starts && m[1] == "alert";
    if (starts && in_alert) blocks.emplace_back();
    if (in_alert) blocks.back() += l + "\n";
  }
  return blocks;
}

std::set<std::string> metric_names_in(const std::string& text) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < text.size();) {
    // A name starts where the previous character cannot be part of one, so
    // "5m:1m" in a subquery or the tail of "abc1" never starts a name.
    const bool starts = (i == 0 || !is_name_char(text[i - 1])) &&
                        !(text[i] >= '0' && text[i] <= '9') && is_name_char(text[i]);
    if (!starts) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && is_name_char(text[end])) ++end;
    std::string name = text.substr(i, end - i);
    // Prose puts a colon after a name ("corenoise_clock_hertz: ..."); no
    // metric or recording-rule name ends with one.
    while (!name.empty() && name.back() == ':') name.pop_back();
    if (name.find("corenoise_") != std::string::npos) names.insert(std::move(name));
    i = end;
  }
  return names;
}

std::map<std::string, std::set<std::string>> documented_labels(const std::string& metrics_md) {
  // | `name` | type | unit | labels | meaning |
  const std::regex row(R"(^\|\s*`([a-zA-Z_:][a-zA-Z0-9_:]*)`\s*\|[^|]*\|[^|]*\|([^|]*)\|)");
  const std::regex label("`([a-zA-Z_][a-zA-Z0-9_]*)`");
  std::map<std::string, std::set<std::string>> labels;
  std::istringstream in(metrics_md);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_search(l, m, row)) continue;
    std::set<std::string>& set = labels[m[1]];
    set = {"instance", "job"};
    const std::string cell = m[2];
    for (auto it = std::sregex_iterator(cell.begin(), cell.end(), label);
         it != std::sregex_iterator(); ++it) {
      set.insert((*it)[1]);
    }
  }
  return labels;
}

std::set<std::string> label_uses(const std::string& text) {
  // A selector: a plain metric name (not the tail of a recording-rule name,
  // hence no ':' before it) and its braces; in them, each `label op`.
  const std::regex selector(R"((^|[^A-Za-z0-9_:])(corenoise_[a-z0-9_]+)\s*\{([^}]*)\})");
  const std::regex matcher(R"(([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=))");
  std::set<std::string> uses;
  for (auto s = std::sregex_iterator(text.begin(), text.end(), selector);
       s != std::sregex_iterator(); ++s) {
    const std::string metric = (*s)[2], body = (*s)[3];
    // Skip quoted values, so that "=" inside a regex value is no matcher.
    const std::string unquoted = std::regex_replace(body, std::regex(R"("(\\.|[^"\\])*")"), "\"\"");
    for (auto m = std::sregex_iterator(unquoted.begin(), unquoted.end(), matcher);
         m != std::sregex_iterator(); ++m) {
      uses.insert(metric + "{" + (*m)[1].str() + "}");
    }
  }
  return uses;
}

std::vector<std::string> unknown_labels(
    const std::set<std::string>& uses, const std::map<std::string, std::set<std::string>>& labels) {
  std::vector<std::string> unknown;
  for (const std::string& use : uses) {
    const auto brace = use.find('{');
    const auto it = labels.find(use.substr(0, brace));
    if (it == labels.end()) continue;
    if (!it->second.count(use.substr(brace + 1, use.size() - brace - 2))) unknown.push_back(use);
  }
  return unknown;
}

std::vector<std::string> unknown_metrics(const std::set<std::string>& used,
                                         const std::set<std::string>& documented,
                                         const std::set<std::string>& recorded) {
  std::vector<std::string> unknown;
  for (const std::string& name : used) {
    const bool recording = name.find(':') != std::string::npos;
    if (!(recording ? recorded.count(name) : documented.count(name))) unknown.push_back(name);
  }
  return unknown;
}

}  // namespace corenoise::deploy_test
