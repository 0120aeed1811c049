// The report as one self-contained web page: collector/report/web/'s
// template with its style, its script and the report's JSON inlined. The
// script draws the page from the JSON in the browser, so the page shows
// exactly what `--json` writes. It renders the two kinds of report, told
// apart by the JSON's "schema": a sweep's (cluster_report_json.h,
// "corenoise-sweep/1") and a job's ("corenoise-job/1"). docs/report.md says
// how to read both.
//
// Self-contained means no external scripts, styles, fonts or images (the
// page's Content-Security-Policy forbids them): compute nodes and their
// consoles often have no Internet access, and a report must look the same a
// year later.
//
// Pure: no I/O, no clock. Thread-safety: free functions of their arguments.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace corenoise {

// The whole document, UTF-8.
std::string render_report_page(const nlohmann::json& report);
// The same page written to `out` as it is made, its JSON never whole in
// memory as text (json_stream.h): what the report files are written with.
void write_report_page(std::ostream& out, const nlohmann::json& report);

// `report` as JSON text that is safe inside <script type="application/json">:
// every '<' is written \u003c, so no string in it (a hostname
// "</script><script>…", a "<!--") can end the element or change how the
// browser parses it, and U+2028/U+2029 are written \u2028/\u2029 (older
// JavaScript parsers took them for line ends). Invalid UTF-8 in a string is
// replaced by U+FFFD rather than thrown on. Still valid JSON that parses
// back to `report` (with any invalid UTF-8 replaced).
std::string script_safe_json(const nlohmann::json& report);

}  // namespace corenoise
