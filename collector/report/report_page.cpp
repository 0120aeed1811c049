#include "collector/report/report_page.h"

#include <algorithm>
#include <array>
#include <string_view>

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

std::string render_report_page(const nlohmann::json& report) {
  const std::string json = script_safe_json(report);
  struct Slot {
    std::string_view name;
    std::string_view content;
    std::size_t at;
  };
  // embed.cmake made sure each slot occurs exactly once in the template.
  std::array<Slot, 3> slots{{{"@@CORENOISE_STYLE@@", web_assets::kStyle, 0},
                             {"@@CORENOISE_REPORT_JSON@@", json, 0},
                             {"@@CORENOISE_SCRIPT@@", web_assets::kScript, 0}}};
  const std::string_view page = web_assets::kPage;
  for (Slot& slot : slots) slot.at = page.find(slot.name);
  std::sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) { return a.at < b.at; });
  std::string out;
  out.reserve(page.size() + web_assets::kStyle.size() + web_assets::kScript.size() + json.size());
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
