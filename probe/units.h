// Numbers in words for people, one way everywhere: the terminal views of
// every command (sweep and collect summaries, the probe table, the job's
// banner, `status`, the self-test) and the daemon's log format through
// these (here, at the bottom of the layers, so that the daemon can), so that a figure
// reads the same in each and a missing one is always kMissing. JSON keeps
// base units (seconds, hertz, ratios) and never passes through here.
//
// Pure. Thread-safety: free functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace corenoise {

// What a view shows for a figure it does not have (not measured, not
// finite).
inline constexpr std::string_view kMissing = "-";

// `value` with `decimals` digits after the point ("1.234"); kMissing when
// not finite.
std::string fixed(double value, int decimals = 3);
// `value` × `scale` as above; kMissing when absent or not finite.
std::string fixed(const std::optional<double>& value, double scale, int decimals);

// A span of time at a precision that fits it: "1.23 s" from a second up,
// "12.3 ms" below.
std::string seconds_text(double seconds);
// A span of time in the fewest digits that give it back ("%g s": "30 s",
// "0.5 s", "2.5e-05 s"): a deadline or a setting as it was written.
std::string plain_seconds_text(double seconds);
// A short span in its plainest unit, "%g" digits: "1.5 s", "10 ms",
// "100 µs" (an injection's period, as the user wrote it).
std::string plain_duration_text(double seconds);
// A longer span, as a person says it: "40 s", "3.5 min", "2.1 h", "3.0 d"
// (its magnitude: a time ago and a time to come read alike).
std::string duration_text(double seconds);

// A ratio as a percentage, "12.5 %", and a difference of two ratios in
// percentage points, "1.5 points".
std::string percent_text(double ratio, int decimals = 1);
std::string points_text(double ratio);
// How much a slowdown ratio exceeds 1, in percent, as a verdict's cause
// writes it: 1.123 → "12.3%".
std::string excess_percent_text(double ratio);

// The daemon's log and replies' readers, the `corenoise` command's messages
// and the node-health reasons (issue 34: one formatting module).

// A ratio as a percentage without a space, "12.5%" (a share in a list).
std::string compact_percent_text(double ratio, int decimals = 1);
// A short wait as a person sets it: "10 s" when whole, else "2.5 s".
std::string short_seconds_text(double seconds);
// A date and time of this machine's zone, "2026-12-05 04:45:33".
std::string local_time_text(double unix_seconds);
// As printf's %g, "0.35" or "1e-05": an option's value echoed in a message.
std::string general_text(double value);
// The shortest text that reads back as the same double (%.17g), for a
// figure handed on to another program rather than read.
std::string round_trip_text(double value);

}  // namespace corenoise
