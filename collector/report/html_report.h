// The HTML view of a ClusterReport (`corenoise sweep --html FILE`): one
// self-contained page an administrator can open from a login node or attach
// to a ticket. Self-contained means no external scripts, styles, fonts or
// images: compute nodes and their consoles often have no Internet access,
// and a report must look the same a year later.
//
// Sections, in order: header (version, time, size, settings, health), the
// imbalance prediction, the nodes × cores heatmap (only with --full: cells),
// its legend, the worst cores, the worst nodes, the cluster quantiles and the
// drain commands (printed for the operator, never run). docs/report.md says
// how to read it.
//
// Pure: no I/O, no clock. Thread-safety: a free function of its argument.
#pragma once

#include <string>
#include <string_view>

#include "collector/cluster/cluster_report.h"

namespace corenoise {

// The whole document, UTF-8. Every piece of text from the report (node
// names, causes, kinds, commands) is escaped, so a hostile node name cannot
// inject markup.
std::string render_html(const ClusterReport& report);

// `text` with & < > " ' replaced by entities: safe in element content and in
// double- or single-quoted attribute values.
std::string html_escape(std::string_view text);

// The heatmap colour of a slowdown ratio as "#rrggbb": white at 1.0, through
// oranges to dark red at ≥ 1.5; blue below 1 (darkest at ≤ 0.8). A
// sequential scale from white keeps "nothing wrong" quiet and lets a few bad
// cores stand out in 128 000 cells. Exposed for tests and the legend.
std::string slowdown_colour(double slowdown);

}  // namespace corenoise
