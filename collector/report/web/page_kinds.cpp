// Writes the report page's METRIC_SCALE table (report.js) from the probe
// descriptor, so that the page shows every kind's figure in its unit
// without naming kinds: embed.cmake puts this text where report.js holds
// @@CORENOISE_METRIC_SCALE@@. Run at build time.
#include <cstdio>
#include <fstream>
#include <string>

#include "probe/probe_kinds.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT\n", argv[0]);
    return 2;
  }
  std::string text = "{\n";
  for (const corenoise::ProbeDescriptor& d : corenoise::kProbeDescriptors) {
    text += "    " + std::string(d.figure_name) + ": [" + std::string(d.display.page_scale) +
            ", \"" + std::string(d.display.unit) + "\"],\n";
  }
  text += "  }";
  std::ofstream out(argv[1], std::ios::binary);
  out << text;
  return out ? 0 : 1;
}
