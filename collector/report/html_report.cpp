#include "collector/report/html_report.h"

#include "collector/report/cluster_report_json.h"
#include "collector/report/report_page.h"

namespace corenoise {

std::string render_html(const ClusterReport& report) { return render_report_page(to_json(report)); }

}  // namespace corenoise
