// The report page's METRIC_SCALE table (report.js): the unit each probe
// kind's figure is shown in, from the descriptor (probe/probe_kinds.h).
// The build embeds the table of the kinds that run by default
// (report/web/page_kinds.cpp, embed.cmake); a page whose report holds
// figures of an opt-in kind gets that kind's entry too
// (render_report_page), so that a new kind changes no page that lacks it.
#pragma once

#include <string>
#include <vector>

#include "probe/probe_kinds.h"

namespace corenoise {

// The JavaScript object literal, as report.js's source lays it out.
inline std::string metric_scale_js(const std::vector<ProbeKind>& kinds) {
  std::string text = "{\n";
  for (ProbeKind kind : kinds) {
    const ProbeDescriptor& d = descriptor(kind);
    text += "    " + std::string(d.figure_name) + ": [" + std::string(d.display.page_scale) +
            ", \"" + std::string(d.display.unit) + "\"],\n";
  }
  return text + "  }";
}

}  // namespace corenoise
