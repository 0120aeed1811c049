// The HTML view of a ClusterReport (`corenoise sweep --html FILE`,
// `corenoise collect --html FILE`): the report page (report_page.h) drawn
// from the sweep's JSON, so that --json and --html share one schema
// (docs/sweep.md). Sections, in order: header (version, time, size,
// settings, health, state counts), the imbalance prediction, the nodes ×
// cores heatmap (only with --full: cells) and its legend, the worst cores,
// the worst nodes, the cluster quantiles and the drain commands (printed for
// the operator, never run). docs/report.md says how to read it.
//
// Pure: no I/O, no clock. Thread-safety: a free function of its argument.
#pragma once

#include <string>

#include "collector/cluster/cluster_report.h"

namespace corenoise {

// render_report_page(to_json(report)): the whole document, UTF-8.
std::string render_html(const ClusterReport& report);

}  // namespace corenoise
