#include "probe/settings.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace corenoise {
namespace {

std::string single_quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

long long parse_integer(std::string_view text, long long lo, long long hi, std::string_view what) {
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < lo || value > hi) {
    throw std::invalid_argument("got " + single_quoted(text) + ", expected " + std::string(what) +
                                " from " + std::to_string(lo) + " to " + std::to_string(hi));
  }
  return value;
}

std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    parts.push_back(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) return parts;
    start = comma + 1;
  }
}

// "matmul, clock, detour, stream": every kind, in descriptor order.
std::string probe_names(std::string_view separator) {
  std::string names;
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    names += (names.empty() ? "" : std::string(separator)) + std::string(d.name);
  }
  return names;
}

// "all", or the kinds that run by default where some ship opt-in.
std::string default_probe_names() {
  if (kDefaultProbeKinds.size() == kProbeKinds) return "all";
  std::string names;
  for (ProbeKind kind : kDefaultProbeKinds) {
    names += (names.empty() ? "" : ",") + std::string(to_string(kind));
  }
  return names;
}

ProbeKind parse_probe(std::string_view name) {
  if (const auto kind = probe_kind_named(name)) return *kind;
  throw std::invalid_argument("unknown probe " + single_quoted(name) +
                              ", expected a comma-separated list of " + probe_names(", "));
}

std::vector<OptionSpec> make_specs() {
  std::vector<OptionSpec> specs;
  specs.push_back({"probes", "LIST",
                   "probes to run, comma-separated: " + probe_names(",") +
                       " (default: " + default_probe_names() + ")",
                   [](ProbeSettings& s, std::string_view v) {
                     std::vector<ProbeKind> probes;
                     for (auto part : split_commas(v)) {
                       const auto probe = parse_probe(part);
                       if (std::find(probes.begin(), probes.end(), probe) == probes.end()) {
                         probes.push_back(probe);
                       }
                     }
                     s.probes = probes;
                   }});
  specs.push_back({"mode", "MODE",
                   "isolated (one core at a time), concurrent (all cores at once) or both "
                   "(default: isolated)",
                   [](ProbeSettings& s, std::string_view v) {
                     if (v == "isolated") {
                       s.modes = {Mode::isolated};
                     } else if (v == "concurrent") {
                       s.modes = {Mode::concurrent};
                     } else if (v == "both") {
                       s.modes = {Mode::isolated, Mode::concurrent};
                     } else {
                       throw std::invalid_argument("got " + single_quoted(v) +
                                                   ", expected isolated, concurrent or both");
                     }
                   }});
  specs.push_back({"samples", "N", "samples per probe per core (default: 7)",
                   [](ProbeSettings& s, std::string_view v) {
                     s.samples = static_cast<int>(parse_integer(v, 1, 10000, "a sample count"));
                   }});
  specs.push_back({"matmul-size", "N",
                   "matrix order n of the matmul probe; 64-256 keeps it in L2 (default: 128)",
                   [](ProbeSettings& s, std::string_view v) {
                     s.matmul_size = static_cast<int>(parse_integer(v, 1, 4096, "a matrix order"));
                   }});
  specs.push_back({"dtype", "TYPE", "matmul element type: f32 or f64 (default: f64)",
                   [](ProbeSettings& s, std::string_view v) {
                     const auto dtype = parse_dtype(v);
                     if (!dtype)
                       throw std::invalid_argument("got " + single_quoted(v) +
                                                   ", expected f32 or f64");
                     s.dtype = *dtype;
                   }});
  specs.push_back({"reps", "N", "matmul repetitions per sample (default: 32)",
                   [](ProbeSettings& s, std::string_view v) {
                     s.reps = static_cast<int>(parse_integer(v, 1, 1000000, "a repetition count"));
                   }});
  specs.push_back({"isa", "ISA",
                   "matmul instruction set: auto, avx512, avx2 or baseline (default: auto, the "
                   "widest supported)",
                   [](ProbeSettings& s, std::string_view v) {
                     if (v == "auto") {
                       s.isa.reset();
                       return;
                     }
                     const auto isa = parse_isa(v);
                     if (!isa) {
                       throw std::invalid_argument("got " + single_quoted(v) +
                                                   ", expected auto, avx512, avx2 or baseline");
                     }
                     s.isa = *isa;
                   }});
  specs.push_back({"detour-window", "SECONDS", "length of one detour-probe window (default: 0.025)",
                   [](ProbeSettings& s, std::string_view v) {
                     s.detour_window_seconds = parse_real_value(v, 1e-4, 60, "a window in seconds");
                   }});
  specs.push_back({"detour-threshold", "SECONDS",
                   "gap that counts as a detour; 0 derives it per core from the loop time, at "
                   "least 1 µs (default: 0)",
                   [](ProbeSettings& s, std::string_view v) {
                     s.detour_threshold_seconds =
                         parse_real_value(v, 0, 0.1, "a threshold in seconds");
                   }});
  specs.push_back({"stream-bytes", "BYTES",
                   "stream buffer per core; 0 sizes it from the LLC share (default: 0)",
                   [](ProbeSettings& s, std::string_view v) {
                     s.stream_bytes =
                         static_cast<std::uint64_t>(parse_integer(v, 0, 1LL << 36, "a byte count"));
                   }});
  specs.push_back({"proc-root", "DIR", "where /proc is mounted (default: /proc)",
                   [](ProbeSettings& s, std::string_view v) {
                     if (v.empty()) throw std::invalid_argument("got '', expected a directory");
                     s.proc_root = std::string(v);
                   }});
  specs.push_back({"trace", "MODE",
                   "name what took each detour's time (a task, an IRQ, a softirq, a work item, "
                   "or below the kernel) from the kernel's tracer: auto (when root and tracefs "
                   "is mounted or can be), on (an error where it cannot), off (default: auto; "
                   "docs/verdicts.md)",
                   [](ProbeSettings& s, std::string_view v) {
                     s.trace = trace::parse_trace_mode(std::string(v));
                   }});
  specs.push_back({"suspect-alpha", "P",
                   "a core is unhealthy in a round when its figure's one-sided lower "
                   "confidence bound at this level reaches the threshold; 0.5 judges the "
                   "point estimate alone (default: 0.01; docs/verdicts.md)",
                   [](ProbeSettings& s, std::string_view v) {
                     s.thresholds.alpha = parse_real_value(v, 1e-9, 0.5, "a probability");
                   }});
  specs.push_back({"throttled-clock-ratio", "RATIO",
                   "throttled when reference clock / core clock reaches this (default: 1.05)",
                   [](ProbeSettings& s, std::string_view v) {
                     s.thresholds.throttled_clock_ratio = parse_real_value(v, 1, 100, "a ratio");
                   }});
  specs.push_back({"noisy-excess-noise", "RATIO",
                   "noisy when this share of time more than the node's noise floor is lost to "
                   "detours (default: 0.05)",
                   [](ProbeSettings& s, std::string_view v) {
                     s.thresholds.noisy_excess_noise = parse_real_value(v, 0, 1, "a ratio");
                   }});
  specs.push_back({"slow-ratio", "RATIO",
                   "slow when matmul time / reference reaches this (default: 1.05)",
                   [](ProbeSettings& s, std::string_view v) {
                     s.thresholds.slow_ratio = parse_real_value(v, 1, 100, "a ratio");
                   }});
  specs.push_back(
      {"contended-stream-ratio", "RATIO",
       "contended when reference bandwidth / core bandwidth reaches this (default: 1.25)",
       [](ProbeSettings& s, std::string_view v) {
         s.thresholds.contended_stream_ratio = parse_real_value(v, 1, 100, "a ratio");
       }});
  return specs;
}

}  // namespace

std::string_view to_string(Mode mode) { return mode == Mode::isolated ? "isolated" : "concurrent"; }

Thresholds ProbeSettings::round_thresholds() const {
  Thresholds t = thresholds;
  if (confirm) t.alpha = screen_alpha;
  return t;
}

ProbeSettings ProbeSettings::for_confirmation(const std::vector<ProbeKind>& needed) const {
  ProbeSettings s = *this;
  s.samples = confirm_samples;
  std::erase_if(s.probes, [&](ProbeKind probe) {
    return std::find(needed.begin(), needed.end(), probe) == needed.end();
  });
  return s;
}

bool ProbeSettings::runs(ProbeKind probe) const {
  return std::find(probes.begin(), probes.end(), probe) != probes.end();
}

double parse_real_value(std::string_view text, double lo, double hi, std::string_view what) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
      value < lo || value > hi) {
    std::ostringstream message;
    message << "got " << single_quoted(text) << ", expected " << what << " from " << lo << " to "
            << hi;
    throw std::invalid_argument(message.str());
  }
  return value;
}

std::string format_option_help(const std::string& name, const std::string& value_name,
                               const std::string& help) {
  constexpr std::size_t kIndent = 28, kWidth = 79;
  std::string text = "  --" + name + (value_name.empty() ? "" : " " + value_name);
  text += text.size() + 2 <= kIndent ? std::string(kIndent - text.size(), ' ')
                                     : "\n" + std::string(kIndent, ' ');
  std::size_t column = kIndent;
  std::size_t start = 0;
  while (start < help.size()) {
    std::size_t end = help.find(' ', start);
    if (end == std::string::npos) end = help.size();
    const std::string word = help.substr(start, end - start);
    if (column > kIndent && column + 1 + word.size() > kWidth) {
      text += "\n" + std::string(kIndent, ' ');
      column = kIndent;
    } else if (column > kIndent) {
      text += ' ';
      ++column;
    }
    text += word;
    column += word.size();
    start = end + 1;
  }
  return text + "\n";
}

const std::vector<OptionSpec>& probe_option_specs() {
  static const std::vector<OptionSpec> specs = make_specs();
  return specs;
}

const OptionSpec* find_probe_option(std::string_view name) {
  for (const auto& spec : probe_option_specs()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const std::vector<OptionSpec>& confirmation_option_specs() {
  static const std::vector<OptionSpec> specs{
      {"confirm", "yes|no",
       "re-measure the cores a round calls unhealthy, each beside a reference core, and count "
       "only those bad again; the others read transient (default: yes)",
       [](ProbeSettings& s, std::string_view v) {
         if (v != "yes" && v != "no") {
           throw std::invalid_argument("got " + std::string(single_quoted(v)) +
                                       ", expected yes or no");
         }
         s.confirm = v == "yes";
       }},
      {"screen-alpha", "P",
       "with confirmation, a core is a suspect when its bound at this level clears the "
       "threshold (instead of --suspect-alpha); the re-test keeps the false-alarm rate "
       "(default: 0.1)",
       [](ProbeSettings& s, std::string_view v) {
         s.screen_alpha = parse_real_value(v, 1e-9, 0.5, "a probability");
       }},
      {"confirm-samples", "N",
       "samples of each re-measured core (and its reference): a suspect gets a longer look "
       "than the round gave it (default: 21, three times --samples' default)",
       [](ProbeSettings& s, std::string_view v) {
         s.confirm_samples = static_cast<int>(parse_integer(v, 2, 10000, "a sample count"));
       }},
      {"false-alarm-rate", "P",
       "the chance that a probe or sweep of healthy cores confirms any core unhealthy: each "
       "suspect is re-tested at P / suspects (default: 0.05)",
       [](ProbeSettings& s, std::string_view v) {
         s.false_alarm_rate = parse_real_value(v, 1e-9, 0.5, "a probability");
       }}};
  return specs;
}

const OptionSpec* find_confirmation_option(std::string_view name) {
  for (const auto& spec : confirmation_option_specs()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

}  // namespace corenoise
