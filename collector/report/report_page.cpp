#include "collector/report/report_page.h"

#include <algorithm>
#include <array>
#include <functional>
#include <sstream>
#include <string_view>
#include <vector>

#include "collector/report/json_stream.h"
#include "collector/report/page_kinds.h"
#include "collector/report/web_assets.h"

namespace corenoise {

std::string script_safe_json(const nlohmann::json& report) {
  std::ostringstream out;
  write_script_safe_json(out, report);
  return out.str();
}

namespace {

// The embedded script, with the units of every opt-in kind whose figures
// the report's quantiles hold added to its METRIC_SCALE table (page_kinds.h).
std::string script_for(const nlohmann::json& report) {
  std::vector<ProbeKind> kinds = kDefaultProbeKinds;
  const nlohmann::json* quantiles = nullptr;
  if (report.contains("cluster") && report["cluster"].is_object() &&
      report["cluster"].contains("quantiles") && report["cluster"]["quantiles"].is_array())
    quantiles = &report["cluster"]["quantiles"];
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    if (d.by_default || quantiles == nullptr) continue;
    for (const nlohmann::json& q : *quantiles) {
      if (q.is_object() && q.value("metric", "") == d.figure_name) {
        kinds.push_back(d.kind);
        break;
      }
    }
  }
  std::string script(web_assets::kScript);
  if (kinds == kDefaultProbeKinds) return script;
  std::sort(kinds.begin(), kinds.end());
  const std::string embedded = metric_scale_js(kDefaultProbeKinds);
  if (const auto at = script.find(embedded); at != std::string::npos)
    script.replace(at, embedded.size(), metric_scale_js(kinds));
  return script;
}

}  // namespace

void write_report_page(std::ostream& out, const nlohmann::json& report) {
  const std::string script = script_for(report);
  struct Slot {
    std::string_view name;
    std::function<void()> write;
    std::size_t at;
  };
  // embed.cmake made sure each slot occurs exactly once in the template.
  std::array<Slot, 3> slots{
      {{"@@CORENOISE_STYLE@@", [&] { out << web_assets::kStyle; }, 0},
       {"@@CORENOISE_REPORT_JSON@@", [&] { write_script_safe_json(out, report); }, 0},
       {"@@CORENOISE_SCRIPT@@", [&] { out << script; }, 0}}};
  const std::string_view page = web_assets::kPage;
  for (Slot& slot : slots) slot.at = page.find(slot.name);
  std::sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) { return a.at < b.at; });
  std::size_t from = 0;
  for (const Slot& slot : slots) {
    out << page.substr(from, slot.at - from);
    slot.write();
    from = slot.at + slot.name.size();
  }
  out << page.substr(from);
}

std::string render_report_page(const nlohmann::json& report) {
  std::ostringstream out;
  write_report_page(out, report);
  return out.str();
}

}  // namespace corenoise
