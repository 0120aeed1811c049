#include "collector/report/report_page.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "collector/report/page_kinds.h"
#include "collector/report/web_assets.h"

namespace corenoise {

std::string script_safe_json(const nlohmann::json& report) {
  const std::string text = report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 64);
  // '<' and the two separators occur only inside JSON strings, where a
  // \u escape means the same character.
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '\xE2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xA8' || text[i + 2] == '\xA9')) {
      out += text[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
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

std::string render_report_page(const nlohmann::json& report) {
  const std::string json = script_safe_json(report);
  const std::string script = script_for(report);
  struct Slot {
    std::string_view name;
    std::string_view content;
    std::size_t at;
  };
  // embed.cmake made sure each slot occurs exactly once in the template.
  std::array<Slot, 3> slots{{{"@@CORENOISE_STYLE@@", web_assets::kStyle, 0},
                             {"@@CORENOISE_REPORT_JSON@@", json, 0},
                             {"@@CORENOISE_SCRIPT@@", script, 0}}};
  const std::string_view page = web_assets::kPage;
  for (Slot& slot : slots) slot.at = page.find(slot.name);
  std::sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) { return a.at < b.at; });
  std::string out;
  out.reserve(page.size() + web_assets::kStyle.size() + script.size() + json.size());
  std::size_t from = 0;
  for (const Slot& slot : slots) {
    out.append(page.substr(from, slot.at - from));
    out.append(slot.content);
    from = slot.at + slot.name.size();
  }
  out.append(page.substr(from));
  return out;
}

}  // namespace corenoise
