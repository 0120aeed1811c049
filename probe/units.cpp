#include "probe/units.h"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace corenoise {

std::string fixed(double value, int decimals) {
  if (!std::isfinite(value)) return std::string(kMissing);
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string fixed(const std::optional<double>& value, double scale, int decimals) {
  return value ? fixed(*value * scale, decimals) : std::string(kMissing);
}

std::string seconds_text(double seconds) {
  if (!std::isfinite(seconds)) return std::string(kMissing);
  return seconds >= 1.0 ? fixed(seconds, 2) + " s" : fixed(seconds * 1e3, 1) + " ms";
}

std::string plain_seconds_text(double seconds) { return general_text(seconds) + " s"; }

std::string plain_duration_text(double seconds) {
  if (seconds >= 1) return general_text(seconds) + " s";
  if (seconds >= 1e-3) return general_text(seconds * 1e3) + " ms";
  return general_text(seconds * 1e6) + " µs";
}

std::string duration_text(double seconds) {
  const double s = std::abs(seconds);
  if (!std::isfinite(s)) return std::string(kMissing);
  if (s < 90) return fixed(s, s < 10 ? 1 : 0) + " s";
  if (s < 90 * 60) return fixed(s / 60, 1) + " min";
  if (s < 48 * 3600) return fixed(s / 3600, 1) + " h";
  return fixed(s / 86400, 1) + " d";
}

std::string percent_text(double ratio, int decimals) {
  if (!std::isfinite(ratio)) return std::string(kMissing);
  return fixed(ratio * 100, decimals) + " %";
}

std::string points_text(double ratio) {
  if (!std::isfinite(ratio)) return std::string(kMissing);
  return fixed(ratio * 100, 1) + " points";
}

std::string excess_percent_text(double ratio) { return compact_percent_text(ratio - 1, 1); }

// The daemon's log and replies' readers, the `corenoise` command's messages
// and the node-health reasons.

std::string compact_percent_text(double ratio, int decimals) {
  if (!std::isfinite(ratio)) return std::string(kMissing);
  return fixed(ratio * 100, decimals) + "%";
}

std::string short_seconds_text(double seconds) {
  return fixed(seconds, seconds == std::floor(seconds) ? 0 : 1) + " s";
}

std::string local_time_text(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  if (localtime_r(&t, &tm) == nullptr) return std::to_string(unix_seconds);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

std::string general_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string round_trip_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

}  // namespace corenoise
