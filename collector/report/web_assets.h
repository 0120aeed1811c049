// The report page's three source files (collector/report/web/), embedded
// in the binary at build time by collector/report/web/embed.cmake, which
// generates their definitions. report_page.cpp fills the page's slots;
// nothing else should need these.
//
// kPage holds each of @@CORENOISE_STYLE@@, @@CORENOISE_REPORT_JSON@@ and
// @@CORENOISE_SCRIPT@@ exactly once; kStyle holds no "</style" and kScript
// no "</script" or "<!--" (the build refuses them).
#pragma once

#include <string_view>

namespace corenoise::web_assets {

extern const std::string_view kPage;    // report.html, the template
extern const std::string_view kStyle;   // report.css
extern const std::string_view kScript;  // report.js

}  // namespace corenoise::web_assets
