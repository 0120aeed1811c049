// Logging to stderr with sd-daemon priority prefixes ("<6>message"), which
// journald turns into priorities and a terminal shows as they are.
// Thread-safe: each line is one write(2).
#pragma once

#include <string_view>

#include "daemon/config.h"

namespace corenoise {

void set_log_level(LogLevel level);
void log(LogLevel level, std::string_view message);

inline void log_error(std::string_view m) { log(LogLevel::error, m); }
inline void log_warning(std::string_view m) { log(LogLevel::warning, m); }
inline void log_notice(std::string_view m) { log(LogLevel::notice, m); }
inline void log_info(std::string_view m) { log(LogLevel::info, m); }
inline void log_debug(std::string_view m) { log(LogLevel::debug, m); }

}  // namespace corenoise
