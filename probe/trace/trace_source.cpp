#include "probe/trace/trace_source.h"

#include <unistd.h>

#include <stdexcept>

#include "probe/trace/tracefs_source.h"

namespace corenoise::trace {

std::unique_ptr<TraceSource> open_trace_source(TraceMode mode, std::span<const unsigned> cpus,
                                               std::string* why_not, const std::string& asked_as,
                                               unsigned buffer_kib) {
  if (mode == TraceMode::off) return nullptr;
  std::string why;
  if (geteuid() != 0) {
    why = "tracing needs root (tracefs)";
  } else {
    try {
      return open_tracefs_source(cpus, buffer_kib);
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  if (mode == TraceMode::on) throw std::runtime_error(asked_as + ": " + why);
  if (why_not != nullptr) *why_not = why;
  return nullptr;
}

std::unique_ptr<TraceSource> attach_trace_source(const std::string& instance, unsigned cpu) {
  return attach_tracefs_source(instance, cpu);
}

}  // namespace corenoise::trace
