#include "probe/units.h"

#include <cmath>
#include <cstdio>

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

std::string plain_seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

std::string plain_duration_text(double seconds) {
  char text[32];
  if (seconds >= 1) {
    std::snprintf(text, sizeof text, "%g s", seconds);
  } else if (seconds >= 1e-3) {
    std::snprintf(text, sizeof text, "%g ms", seconds * 1e3);
  } else {
    std::snprintf(text, sizeof text, "%g µs", seconds * 1e6);
  }
  return text;
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

std::string excess_percent_text(double ratio) { return fixed((ratio - 1) * 100, 1) + "%"; }

}  // namespace corenoise
