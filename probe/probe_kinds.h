// The probe kinds as data: one descriptor per kind, as the MPI families
// (collector/mpi/mpi_family.h) and the matmul ISAs (probe/matmul_isa.h)
// have. Each kind's figure, unit and direction, its kernel and work, the
// reference it is judged against and the state and threshold it drives, its
// uncertainty's scale, and its JSON, metric and column names are here, once;
// the analysis, the exporter, the cluster histograms, the JSON, the tables,
// the page and the calibration store loop over kAllProbeKinds and read the
// descriptor instead of naming kinds. A kind's figures travel in arrays
// indexed by kind (PerKind). Adding a kind: its kernel (ProbeKernel, with
// its KernelWork), its enumerator and its entry below.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "probe/uncertainty.h"
#include "probe/work.h"

namespace corenoise {

struct ProbeSettings;
struct ProcessingUnit;

enum class ProbeKind : std::uint8_t { matmul, clock, detour, stream };
inline constexpr std::size_t kProbeKinds = 4;

constexpr std::size_t index_of(ProbeKind kind) { return static_cast<std::size_t>(kind); }

inline constexpr std::array<ProbeKind, kProbeKinds> kAllProbeKinds = [] {
  std::array<ProbeKind, kProbeKinds> all{};
  for (std::size_t i = 0; i < kProbeKinds; ++i) all[i] = static_cast<ProbeKind>(i);
  return all;
}();

// One value per probe kind.
template <typename T>
struct PerKind {
  std::array<T, kProbeKinds> items{};
  constexpr T& operator[](ProbeKind kind) { return items[index_of(kind)]; }
  constexpr const T& operator[](ProbeKind kind) const { return items[index_of(kind)]; }
  friend bool operator==(const PerKind&, const PerKind&) = default;
};

// Ordered from healthy to worst cause; `skipped` means not measured.
// `transient`: looked unhealthy once, but the re-measurement (probe, sweep)
// or the core's recent rounds (daemon) did not bear it out; its figures are
// kept, and it is not unhealthy (docs/verdicts.md).
enum class CoreState { ok, transient, noisy, throttled, contended, slow, skipped };
std::string_view to_string(CoreState state);
inline constexpr CoreState kAllCoreStates[] = {
    CoreState::ok,        CoreState::transient, CoreState::noisy,  CoreState::throttled,
    CoreState::contended, CoreState::slow,      CoreState::skipped};
// The state whose to_string() is `name`; nullopt for none.
inline std::optional<CoreState> core_state_named(std::string_view name) {
  for (CoreState s : kAllCoreStates) {
    if (to_string(s) == name) return s;
  }
  return std::nullopt;
}
// noisy, throttled, contended or slow: what sets exit 2, drains and alerts.
constexpr bool is_unhealthy(CoreState state) {
  return state != CoreState::ok && state != CoreState::transient && state != CoreState::skipped;
}

// Verdict thresholds (see docs/verdicts.md): the size of effect that
// matters, and the confidence it must be shown with. Ratios compare a core
// with the reference core of its kind: 1.05 means 5 % worse.
struct Thresholds {
  // One-sided level of each test on each core in a round: unhealthy when the
  // lower confidence bound of the figure at alpha reaches its threshold;
  // 0.5 decides on the point estimate alone (ignoring the sampling error,
  // as verdicts did before they carried confidence; for comparison).
  double alpha = 0.01;
  double throttled_clock_ratio = 1.05;   // reference clock / core clock
  double noisy_excess_noise = 0.05;      // share of time lost beyond the node's noise floor
  double slow_ratio = 1.05;              // matmul time / reference (and expected slowdown)
  double contended_stream_ratio = 1.25;  // reference bandwidth / core bandwidth
};

// Which way a figure points, and so how a core's figure compares with a
// reference's (slowdown > 1: the core is slower).
enum class Direction {
  time,   // larger is slower: figure / reference
  rate,   // smaller is slower: reference / figure
  share,  // a share of time lost, 0-1: (1 − reference) / (1 − figure), the noise factor
};

// A reference figure of one kind: the node's median core (analysis.h), the
// cluster's (cluster_stats.h) or the core's own past (calibration_store.h).
// One slowdown() for all three, so the direction is written once.
struct Reference {
  std::optional<double> value;
  Direction direction = Direction::time;
  Uncertainty error{};  // unknown for a reference without one (the cluster's, a calibration)

  // The figure against the reference, > 1 slower; nullopt where either is
  // missing or the quotient would not be a positive finite ratio
  // (a reference time or a rate of 0, a share of 1).
  std::optional<double> slowdown(std::optional<double> figure) const;
  // Its uncertainty (log scale), from the figure's and the reference's:
  // in quadrature; for a share by the delta method,
  // se(log(1 − r)) = se(r) / (1 − r). Unknown if either is.
  Uncertainty slowdown_error(double figure, const Uncertainty& figure_error) const;
};

// A kernel the round runner drives without knowing it: built on the pinned
// probe thread (first touch), run once to warm up, then once per sample.
class ProbeKernel {
 public:
  virtual ~ProbeKernel() = default;
  // One sample: the seconds of one timed run (Summary::median,
  // Summary::work_per_median_time), or the figure itself where the kernel
  // times itself (the clock: hertz).
  virtual double sample() = 0;
  virtual KernelWork work() const = 0;
};
using MakeKernel = std::unique_ptr<ProbeKernel> (*)(const ProbeSettings&, const ProcessingUnit&);

// Declared here, defined beside each kernel.
std::unique_ptr<ProbeKernel> make_clock_kernel(const ProbeSettings&, const ProcessingUnit&);
std::unique_ptr<ProbeKernel> make_stream_kernel(const ProbeSettings&, const ProcessingUnit&);

// How a kind's samples become its figure.
enum class Summary {
  own,                   // the runner's and summarize()'s own code (matmul, detour)
  median,                // the median sample; its error from the samples' spread
  work_per_median_time,  // KernelWork::*work / the median sample time
};

// Which figure of a judged core a kind's test bounds.
enum class Tested {
  none,               // the kind drives no state
  slowdown,           // its own slowdown against the node's reference
  excess_over_floor,  // its figure less the kind's floor (the detour's noise)
  expected_slowdown,  // the expected slowdown it sets (matmul × noise factor)
};

// What a column of the text table shows of a core.
enum class Shown { figure, work_rate, expected_slowdown, detour_count, detour_max_seconds };

struct TableColumn {
  std::string_view header;  // empty: no column
  int width = 0;            // right-aligned, header included
  Shown shown = Shown::figure;
  double scale = 1;  // from base units
  int decimals = 0;
};

// How a person reads a figure (sweep summary, page): value × multiply /
// divide, then the unit.
struct Display {
  double multiply = 1;
  double divide = 1;
  int decimals = 3;
  std::string_view unit;
  std::string_view page_scale;  // the same factor as report.js writes it
};

struct ProbeDescriptor {
  ProbeKind kind;
  std::string_view name;         // --probes, the `probe` label, the JSON object of its figures
  std::string_view figure_name;  // the reference's JSON key, the cluster metric, the calibration's
  std::string_view unit;         // base unit of the figure
  Direction direction;
  Scale scale;  // of the figure's uncertainty
  // The kernel.
  Summary summary;
  MakeKernel make_kernel;              // for Summary::median and work_per_median_time
  double KernelWork::*work = nullptr;  // Summary::work_per_median_time; the sample's duration
  bool reports_spread = false;         // MAD / median of the samples, in the JSON
  bool by_default = true;              // run without --probes (a new kind may ship opt-in)
  // Its JSON object: {json_figure: figure, interval, json_ratio: slowdown, …}.
  std::string_view json_figure;
  std::string_view json_ratio;  // empty: no slowdown there (the detour's is the noise factor)
  // Its slowdown is a `probe` of corenoise_slowdown_ratio (and of the
  // cluster's and the calibration's): docs/metrics.md.
  bool slowdown_metric = true;
  bool calibrated = true;       // kept in the core's own calibration
  double histogram_lowest = 1;  // the centre of the cluster histogram's bin 0 (20 octaves)
  // The verdict it drives.
  Tested tested = Tested::none;
  CoreState drives = CoreState::ok;
  double Thresholds::*threshold = nullptr;
  int test_order = 0;              // tests decide in this order
  bool excused_by_design = false;  // a core slower by design is not accused
  std::string_view tested_name;    // the tested figure's name (peer spread)
  std::array<TableColumn, 3> columns{};
  Display display;
};

inline constexpr ProbeDescriptor kProbeDescriptors[kProbeKinds] = {
    {.kind = ProbeKind::matmul,
     .name = "matmul",
     .figure_name = "matmul_seconds",
     .unit = "seconds",
     .direction = Direction::time,
     .scale = Scale::log,
     .summary = Summary::own,
     .make_kernel = nullptr,
     .reports_spread = true,
     .json_figure = "seconds",
     .json_ratio = "slowdown",
     .histogram_lowest = 0x1p-20,  // 1 µs … 1 s
     .tested = Tested::expected_slowdown,
     .drives = CoreState::slow,
     .threshold = &Thresholds::slow_ratio,
     .test_order = 4,
     .excused_by_design = true,
     .tested_name = "expected_slowdown",
     .columns = {{{"matmul_ms", 11, Shown::figure, 1e3, 3},
                  {"GFLOP/s", 9, Shown::work_rate, 1e-9, 1},
                  {"slowdn", 8, Shown::expected_slowdown, 1, 3}}},
     .display = {1e3, 1, 3, "ms", "1e3"}},
    {.kind = ProbeKind::clock,
     .name = "clock",
     .figure_name = "clock_hertz",
     .unit = "hertz",
     .direction = Direction::rate,
     .scale = Scale::log,
     .summary = Summary::median,
     .make_kernel = &make_clock_kernel,
     .reports_spread = true,
     .json_figure = "hertz",
     .json_ratio = "ratio",
     .histogram_lowest = 0x1p24,  // 17 MHz … 17 THz
     .tested = Tested::slowdown,
     .drives = CoreState::throttled,
     .threshold = &Thresholds::throttled_clock_ratio,
     .test_order = 1,
     .excused_by_design = true,
     .tested_name = "clock_ratio",
     .columns = {{{"GHz", 7, Shown::figure, 1e-9, 2}}},
     .display = {1, 1e9, 2, "GHz", "1e-9"}},
    {.kind = ProbeKind::detour,
     .name = "detour",
     .figure_name = "noise_ratio",
     .unit = "ratio",
     .direction = Direction::share,
     .scale = Scale::linear,
     .summary = Summary::own,
     .make_kernel = nullptr,
     .json_figure = "noise_ratio",
     .json_ratio = {},
     .slowdown_metric = false,  // the noise factor is expected / matmul
     .calibrated = false,
     .histogram_lowest = 0x1p-19,  // 2e-6 … 1 (0 is underflow)
     .tested = Tested::excess_over_floor,
     .drives = CoreState::noisy,
     .threshold = &Thresholds::noisy_excess_noise,
     .test_order = 2,
     .tested_name = "excess_noise",
     .columns = {{{"noise%", 8, Shown::figure, 100, 2},
                  {"detours", 9, Shown::detour_count, 1, 0},
                  {"max_us", 8, Shown::detour_max_seconds, 1e6, 0}}},
     .display = {100, 1, 3, "%", "100"}},
    {.kind = ProbeKind::stream,
     .name = "stream",
     .figure_name = "stream_bytes_per_second",
     .unit = "bytes per second",
     .direction = Direction::rate,
     .scale = Scale::log,
     .summary = Summary::work_per_median_time,
     .make_kernel = &make_stream_kernel,
     .work = &KernelWork::bytes,
     .json_figure = "bytes_per_second",
     .json_ratio = "slowdown",
     .histogram_lowest = 0x1p24,  // 17 MB/s … 17 TB/s
     .tested = Tested::slowdown,
     .drives = CoreState::contended,
     .threshold = &Thresholds::contended_stream_ratio,
     .test_order = 3,
     .tested_name = "stream_slowdown",
     .columns = {{{"stream_GB/s", 13, Shown::figure, 1e-9, 1}}},
     .display = {1, 1e9, 2, "GB/s", "1e-9"}},
};

constexpr const ProbeDescriptor& descriptor(ProbeKind kind) {
  return kProbeDescriptors[index_of(kind)];
}
static_assert(
    [] {
      for (std::size_t i = 0; i < kProbeKinds; ++i) {
        if (index_of(kProbeDescriptors[i].kind) != i) return false;
      }
      return true;
    }(),
    "kProbeDescriptors is in ProbeKind order");

constexpr std::string_view to_string(ProbeKind kind) { return descriptor(kind).name; }

// The kinds a round runs without --probes.
inline const std::vector<ProbeKind> kDefaultProbeKinds = [] {
  std::vector<ProbeKind> kinds;
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    if (d.by_default) kinds.push_back(d.kind);
  }
  return kinds;
}();

// Unknown uncertainties, each on its kind's scale.
constexpr PerKind<Uncertainty> unknown_errors() {
  PerKind<Uncertainty> errors;
  for (const ProbeDescriptor& d : kProbeDescriptors) errors[d.kind].scale = d.scale;
  return errors;
}
// The kind named `name` (--probes), or nullopt.
std::optional<ProbeKind> probe_kind_named(std::string_view name);

// The `probe` label of the slowdown-ratio metrics (docs/metrics.md): a
// kind's own slowdown (slowdown_metric), or `expected`, the matmul ratio
// times the noise factor. Ordered as the kinds, `expected` last.
enum class RatioProbe : std::uint8_t {};
inline constexpr RatioProbe kExpectedRatio{static_cast<std::uint8_t>(kProbeKinds)};
constexpr RatioProbe ratio_probe(ProbeKind kind) {
  return RatioProbe{static_cast<std::uint8_t>(kind)};
}
constexpr std::string_view to_string(RatioProbe probe) {
  if (probe == kExpectedRatio) return "expected";
  const auto i = static_cast<std::size_t>(probe);
  return i < kProbeKinds ? kProbeDescriptors[i].name : "?";
}
inline constexpr std::size_t kRatioProbes = [] {
  std::size_t n = 1;
  for (const auto& d : kProbeDescriptors) n += d.slowdown_metric ? 1 : 0;
  return n;
}();
struct RatioProbeList {
  RatioProbe items[kRatioProbes];
};
inline constexpr RatioProbeList kRatioProbeList = [] {
  RatioProbeList list{};
  std::size_t n = 0;
  for (const auto& d : kProbeDescriptors) {
    if (d.slowdown_metric) list.items[n++] = ratio_probe(d.kind);
  }
  list.items[n] = kExpectedRatio;
  return list;
}();
inline constexpr const auto& kAllRatioProbes = kRatioProbeList.items;

// The duration of one sample of a kind from its figure and work: the
// figure itself for a time, work / rate for Summary::work_per_median_time;
// nullopt for the others.
std::optional<double> sample_seconds(ProbeKind kind, std::optional<double> figure,
                                     const KernelWork& work);

}  // namespace corenoise
