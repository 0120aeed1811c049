// The tracefs backend of TraceSource (probe/trace/trace_source.h).
#pragma once

#include <memory>
#include <span>
#include <string>

#include "probe/trace/trace_source.h"

namespace corenoise::trace {

// An instance of our own recording `cpus`; throws std::runtime_error
// saying what is missing (tracefs, the x86-tsc clock, an event).
std::unique_ptr<TraceSource> open_tracefs_source(std::span<const unsigned> cpus,
                                                 unsigned buffer_kib);
// Another process's instance, by name, for `cpu` (attach_trace_source).
std::unique_ptr<TraceSource> attach_tracefs_source(const std::string& instance, unsigned cpu);

}  // namespace corenoise::trace
