// Writes the report page's METRIC_SCALE table for the kinds that run by
// default (report/page_kinds.h), which embed.cmake puts where report.js
// holds @@CORENOISE_METRIC_SCALE@@. Run at build time.
#include "collector/report/page_kinds.h"

#include <cstdio>
#include <fstream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT\n", argv[0]);
    return 2;
  }
  std::ofstream out(argv[1], std::ios::binary);
  out << corenoise::metric_scale_js(corenoise::kDefaultProbeKinds);
  return out ? 0 : 1;
}
