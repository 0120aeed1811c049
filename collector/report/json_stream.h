// A JSON document written straight to a stream, never whole in memory as
// text: a job of 100,000 ranks has a 13 MB report, and its text, its
// script-safe copy and the page held at once were most of rank 0's memory
// at MPI_Finalize (docs/scaling.md). nlohmann's own serializer, with text
// that is not UTF-8 replaced by U+FFFD (report_outputs.h's policy).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

namespace corenoise {

// `document` as dump(indent) writes it (-1: on one line).
void write_json(std::ostream& out, const nlohmann::json& document, int indent);

// On one line, safe inside a <script> element: '<' and U+2028/U+2029,
// which occur only inside JSON strings, as \u escapes (same meaning).
void write_script_safe_json(std::ostream& out, const nlohmann::json& document);

}  // namespace corenoise
