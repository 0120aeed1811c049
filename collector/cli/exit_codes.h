// Exit codes of every corenoise command (rtla's scheme; usable as a health check).
#pragma once

namespace corenoise {

inline constexpr int kExitHealthy = 0;
inline constexpr int kExitFailure = 1;    // the tool failed, or the input was bad
inline constexpr int kExitUnhealthy = 2;  // it ran and found unhealthy cores or nodes

}  // namespace corenoise
