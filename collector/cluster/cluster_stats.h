// Cross-node statistics in a form MPI can reduce. Pure: no MPI, no I/O, no
// clock. The MPI layer (collector/mpi/) moves these buffers; everything it needs to
// know is which MPI operation reduces which buffer:
//
//   buffer                                   type        MPI op
//   ClusterHistograms::counts()              uint64      MPI_SUM   (exact)
//   ClusterHistograms::sums()                double      MPI_SUM   (rounding only)
//   ClusterHistograms::minima()              double      MPI_MIN   (exact; empty = +inf)
//   ClusterHistograms::maxima()              double      MPI_MAX   (exact; empty = −inf)
//   KindTable                                bytes       user op merge_kind_table_buffers
//   TopK                                     bytes       user op merge_top_k_buffers
//   NodeSummary                              bytes       MPI_Allgather (one per node)
//
// Nothing here grows with the number of cores in the cluster: histograms
// have a fixed number of bins, the top-K list a fixed capacity, and the
// per-node summaries grow with nodes only.
//
// Thread-safety: plain values; concurrent const use is safe, mutation is not.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "probe/report.h"

namespace corenoise {

// ---------------------------------------------------------------------------
// LogHistogram: counts of positive values in geometric bins.
//
// Bin b (0-based) is centred on lowest·2^(b/kBinsPerOctave) and spans a
// factor r = 2^(1/kBinsPerOctave) (±half a bin in log2), so powers of two —
// in particular a ratio of exactly 1, the reference core — are bin centres
// and come back exactly. Values below the first bin's lower edge (including
// 0 and negatives) count in the underflow slot, values at or above the last
// bin's upper edge in the overflow slot. NaN and ±inf are not counted.
//
// Error bound: quantile(q) is within a relative kQuantileRelativeError
// (2^(1/(2·kBinsPerOctave)) − 1 ≈ 0.434 %) of the exact sample quantile
// stats::quantile(values, q) (type 7), provided the order statistics it
// interpolates between lie inside the binned range. A value is represented
// by its bin centre clamped to [min, max]; the clamp only moves it closer.
// Order statistics in the underflow (overflow) slot are represented by the
// exact min (max): exact for the extreme itself, otherwise unbounded.
// count, min and max are exact; sum is exact up to floating rounding.
// ---------------------------------------------------------------------------
struct HistogramRange {
  double lowest;  // centre of bin 0; a power of two so that 1 is a centre
};

inline constexpr int kBinsPerOctave = 80;
inline constexpr int kOctaves = 20;
inline constexpr std::size_t kHistogramBins = kBinsPerOctave * kOctaves;
// Slot layout of a histogram's counts: [underflow, bin 0 … bin n−1, overflow].
inline constexpr std::size_t kHistogramSlots = kHistogramBins + 2;
inline constexpr std::size_t kUnderflowSlot = 0;
inline constexpr std::size_t kOverflowSlot = kHistogramSlots - 1;
inline constexpr double kQuantileRelativeError = 0.00435;  // 2^(1/160) − 1 = 0.0043416…, rounded up

class LogHistogram {
 public:
  explicit LogHistogram(HistogramRange range = {1.0 / 1024}) : range_(range) {}

  // Counts `value`; false (not counted) if it is NaN or infinite.
  bool add(double value);
  // Element-wise sum of counts and sums, min of minima, max of maxima: the
  // same result as adding the other's values one by one (up to the rounding
  // of sum). Both must have the same range.
  void merge(const LogHistogram& other);

  std::uint64_t count() const;
  double sum() const { return sum_; }
  double min() const { return min_; }  // +inf when empty
  double max() const { return max_; }  // −inf when empty
  // The type-7 sample quantile, within kQuantileRelativeError (see above).
  // NaN when empty; q is clamped to [0, 1].
  double quantile(double q) const;
  // The value that stands for slot `slot`: the bin centre clamped to
  // [min, max]; min for underflow, max for overflow.
  double representative(std::size_t slot) const;

  HistogramRange range() const { return range_; }
  std::span<const std::uint64_t, kHistogramSlots> counts() const { return counts_; }
  // The slot a value falls in (for values add() accepts).
  static std::size_t slot_of(double value, HistogramRange range);
  // Builds a histogram from reduced raw parts (e.g. one key of a
  // ClusterHistograms after the allreduce).
  static LogHistogram from_parts(HistogramRange range, std::span<const std::uint64_t> counts,
                                 double sum, double min, double max);

  friend bool operator==(const LogHistogram&, const LogHistogram&) = default;

 private:
  HistogramRange range_;
  std::array<std::uint64_t, kHistogramSlots> counts_{};
  double sum_ = 0;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = -std::numeric_limits<double>::infinity();
};

inline bool operator==(HistogramRange a, HistogramRange b) { return a.lowest == b.lowest; }

// ---------------------------------------------------------------------------
// KindTable: the CPU kinds of the whole allocation, agreed before the
// histograms are reduced, so every node puts kind "IntelAtom" in the same
// slot. Each node fills a table with its own kinds; a user MPI_Op takes the
// sorted union (first kMaxKinds names in byte order). Hashing names into
// slots was rejected: a collision would silently merge P and E cores.
// Invariant: names sorted, unique, NUL-padded; `size` entries used.
// ---------------------------------------------------------------------------
inline constexpr std::size_t kMaxKinds = 4;
inline constexpr std::size_t kKindNameBytes = 32;  // longer names are truncated

struct KindTable {
  std::uint32_t size = 0;
  std::uint32_t overflowed = 0;  // 1 if the union held more than kMaxKinds kinds
  std::array<std::array<char, kKindNameBytes>, kMaxKinds> names{};

  // Adds one name (sorted insert; a no-op if present).
  void insert(std::string_view kind);
  // The slot of `kind`, or nullopt if it is not in the table.
  std::optional<std::size_t> find(std::string_view kind) const;
  std::string_view name(std::size_t slot) const;
  friend bool operator==(const KindTable&, const KindTable&) = default;
};
static_assert(std::is_trivially_copyable_v<KindTable>);

// The kinds of one node's report (every PU's kind).
KindTable kind_table(const NodeReport& report);
// Sorted union of a and b, truncated to kMaxKinds; commutative and associative.
KindTable merge_kind_tables(const KindTable& a, const KindTable& b);
// MPI_User_function body over `count` KindTables: inout[i] = merge(in[i], inout[i]).
// The MPI layer wraps it: void op(void* in, void* inout, int* len, MPI_Datatype*)
// { merge_kind_table_buffers(in, inout, *len); } with a datatype of
// sizeof(KindTable) bytes. Buffers need no alignment.
void merge_kind_table_buffers(const void* in, void* inout, int count);

// ---------------------------------------------------------------------------
// ClusterHistograms: one LogHistogram per (metric, mode, kind slot), stored
// as four flat arrays (struct of arrays) so that each is one MPI_Allreduce
// with a built-in op. Key index = (metric · kModes + mode) · kMaxKinds + kind;
// counts() holds kHistogramSlots per key in that order.
// ---------------------------------------------------------------------------
// The two slowdowns, then each probe kind's figure (figure_metric), in its
// descriptor's unit and under its figure_name (probe_kinds.h); a noise
// ratio of 0 counts as underflow (represented by min).
enum class Metric : std::uint8_t {
  expected_slowdown,  // node-relative (the verdict's figure), ratio
  cluster_slowdown,   // cluster-relative expected slowdown, ratio (pass 2)
};
inline constexpr std::size_t kSlowdownMetrics = 2;
inline constexpr std::size_t kMetrics = kSlowdownMetrics + kProbeKinds;
constexpr Metric figure_metric(ProbeKind kind) {
  return static_cast<Metric>(kSlowdownMetrics + index_of(kind));
}
// The kind whose figure `metric` is; nullopt for the slowdowns.
constexpr std::optional<ProbeKind> kind_of(Metric metric) {
  const auto i = static_cast<std::size_t>(metric);
  if (i < kSlowdownMetrics || i >= kMetrics) return std::nullopt;
  return static_cast<ProbeKind>(i - kSlowdownMetrics);
}
inline constexpr std::size_t kModes = 2;  // Mode::isolated, Mode::concurrent
inline constexpr std::size_t kHistogramKeys = kMetrics * kModes * kMaxKinds;
std::string_view to_string(Metric metric);
// The fixed range of each metric (the centre of bin 0).
HistogramRange metric_range(Metric metric);

class ClusterHistograms {
 public:
  ClusterHistograms();

  static std::size_t key(Metric metric, Mode mode, std::size_t kind_slot);
  // Counts a value into one key (see LogHistogram::add).
  bool add(Metric metric, Mode mode, std::size_t kind_slot, double value);
  // The histogram of one key (copied out of the flat buffers).
  LogHistogram histogram(Metric metric, Mode mode, std::size_t kind_slot) const;
  // All kinds of one (metric, mode) merged: for ratios, which are already
  // relative to their kind.
  LogHistogram all_kinds(Metric metric, Mode mode) const;
  // What an allreduce does, serially (for tests and a single node).
  void merge(const ClusterHistograms& other);

  // The buffers the MPI layer reduces in place (see the table at the top).
  std::span<std::uint64_t> counts() { return counts_; }
  std::span<double> sums() { return sums_; }
  std::span<double> minima() { return minima_; }
  std::span<double> maxima() { return maxima_; }
  std::span<const std::uint64_t> counts() const { return counts_; }

  friend bool operator==(const ClusterHistograms&, const ClusterHistograms&) = default;

 private:
  std::vector<std::uint64_t> counts_;  // kHistogramKeys × kHistogramSlots
  std::vector<double> sums_;           // kHistogramKeys
  std::vector<double> minima_;         // kHistogramKeys
  std::vector<double> maxima_;         // kHistogramKeys
};

// Pass 1: counts every measured core's figures of every mode of `report`
// (expected_slowdown and every kind's figure) under its kind's slot in `kinds` (the agreed
// table). Returns how many (core, mode) entries were left out because their
// kind is not in the table (only after KindTable overflow).
std::size_t add_node_figures(ClusterHistograms& histograms, const NodeReport& report,
                             const KindTable& kinds);

// The cluster's reference core of one (mode, kind): medians from the
// reduced pass-1 histograms. Empty optionals where nothing was measured.
struct ClusterReference {
  PerKind<std::optional<double>> figure;
  Reference reference(ProbeKind probe) const {
    return {figure[probe], descriptor(probe).direction};
  }
};
ClusterReference cluster_reference(const ClusterHistograms& reduced, Mode mode,
                                   std::size_t kind_slot);
// A core's expected slowdown against the cluster reference instead of its
// node's: (matmul / cluster matmul) × (1 − cluster noise) / (1 − noise).
// Nullopt when either side lacks the figures or noise ≥ 1.
std::optional<double> cluster_expected_slowdown(const CoreFigures& core,
                                                const ClusterReference& reference);
// Every ratio of a core against the cluster reference that both sides have
// figures for, as corenoise_slowdown_ratio defines them against the node's
// (> 1 slower): each kind's with a slowdown metric (Reference::slowdown),
// and the expected slowdown. Only finite positive ratios.
std::vector<std::pair<RatioProbe, double>> cluster_ratios(const CoreFigures& core,
                                                          const ClusterReference& reference);
// Pass 2: counts every measured core's cluster_expected_slowdown into
// Metric::cluster_slowdown (reduce `histograms` again afterwards). Returns
// the number of (core, mode) entries left out (kind not in the table or no
// figures).
std::size_t add_cluster_slowdowns(ClusterHistograms& histograms, const NodeReport& report,
                                  const KindTable& kinds, const ClusterHistograms& reduced);

// ---------------------------------------------------------------------------
// Top-K worst cores. A WorstCore is 32 bytes, trivially copyable. Order:
// unhealthy cores (overall state) before the others, then larger
// expected_slowdown first; ties by (node, cpu) ascending — a strict total
// order on distinct cores, so the merge is deterministic.
// ---------------------------------------------------------------------------
struct WorstCore {
  std::uint32_t node = 0;  // the node's index in the job (its rank)
  std::uint32_t cpu = 0;   // OS index of the PU
  std::int32_t state = 0;  // CoreState as an int (overall state)
  std::int32_t mode = 0;   // Mode whose expected_slowdown this is
  double expected_slowdown = 0;
  double matmul_slowdown = 0;  // NaN when not measured
  friend bool operator==(const WorstCore&, const WorstCore&) = default;
};
static_assert(std::is_trivially_copyable_v<WorstCore> && sizeof(WorstCore) == 32);

// True if a ranks before b (a is worse).
bool worse(const WorstCore& a, const WorstCore& b);

inline constexpr std::size_t kTopK = 64;

// The K worst cores, worst first. Invariant: items[0, size) sorted by worse().
struct TopK {
  std::uint32_t size = 0;
  std::uint32_t reserved = 0;  // keeps items 8-byte aligned; always 0
  std::array<WorstCore, kTopK> items{};

  // Inserts one core, keeping the K worst. NaN slowdowns are ignored.
  void insert(const WorstCore& core);
  std::span<const WorstCore> cores() const { return {items.data(), size}; }
  friend bool operator==(const TopK&, const TopK&) = default;
};
static_assert(std::is_trivially_copyable_v<TopK>);

// The K worst of the union of a and b (a merge of two sorted lists).
// Commutative and associative; equals sorting the union and keeping K.
TopK merge_top_k(const TopK& a, const TopK& b);
// MPI_User_function body over `count` TopK lists: inout[i] = merge(in[i],
// inout[i]). The MPI layer wraps it (see merge_kind_table_buffers) with a
// datatype of sizeof(TopK) bytes and MPI_Op_create(…, commute = 1).
void merge_top_k_buffers(const void* in, void* inout, int count);
// One node's list: each measured core once, with its worst expected
// slowdown over the modes.
TopK node_top_k(const NodeReport& report, std::uint32_t node);

// ---------------------------------------------------------------------------
// Per-node summaries, gathered (one per node) for node outliers.
// ---------------------------------------------------------------------------
inline constexpr std::size_t kCoreStates = std::size(kAllCoreStates);

struct NodeSummary {
  std::uint32_t node = 0;
  std::uint32_t probed_cores = 0;                   // PUs not skipped
  std::array<std::uint32_t, kCoreStates> states{};  // by CoreState
  double median_expected_slowdown = 0;  // over probed cores (each core's worst mode); NaN if none
  double max_expected_slowdown = 0;     // NaN if none
  double median_clock_hertz = 0;        // concurrent mode if it ran, else isolated; NaN if none
  double median_noise_ratio = 0;        // same mode as the clock; NaN if none
  // Whether its culprits are named (NodeReport::trace): why not is the
  // node's to print, where its leader says it.
  enum class Trace : std::uint8_t { off, on, unavailable } trace = Trace::off;
  friend bool operator==(const NodeSummary&, const NodeSummary&) = default;
};
static_assert(std::is_trivially_copyable_v<NodeSummary>);

NodeSummary summarize_node(const NodeReport& report, std::uint32_t node);

struct NodeOutlier {
  std::uint32_t node = 0;
  double robust_z = 0;  // of its median expected slowdown across nodes
  bool flagged = false;
};
// Robust z (stats::robust_z) of each node's median expected slowdown against
// the median and MAD over nodes; a node is flagged when z > z_threshold and
// it is at least min_excess above the median (so that a MAD of 0 — all
// nodes alike — does not flag a node 1e-9 slower). Nodes with NaN medians
// get z = 0, never flagged. One entry per summary, same order.
std::vector<NodeOutlier> node_outliers(std::span<const NodeSummary> nodes, double z_threshold = 3.5,
                                       double min_excess = 0.02);

// ---------------------------------------------------------------------------
// Imbalance of a bulk-synchronous step (docs/scaling.md).
// ---------------------------------------------------------------------------
struct ImbalancePrediction {
  double step_seconds = 0;  // the fixed-work step on the reference core (slowdown 1)
  std::uint64_t cores = 0;  // measured cores in the distribution
  double median_slowdown = 0;
  double max_slowdown = 0;            // exact
  double wait_seconds = 0;            // step × (max − median): this allocation
  std::uint64_t ranks = 0;            // N of the extrapolation
  double expected_max_slowdown = 0;   // E[max of N draws], exact over the bins
  double predicted_wait_seconds = 0;  // step × (E[max of N] − median)
  double quantile_max_slowdown = 0;   // quantile(1 − 1/(N+1)): the cheap approximation
};

// E[max of n independent draws] from the histogram's distribution:
// Σ_i v_i (F_i^n − F_{i−1}^n) over slots, v_i = representative(i) except the
// top occupied slot, which is represented by the exact max (so the limit for
// n → ∞ is the max). NaN when empty; n = 0 is treated as 1.
double expected_max(const LogHistogram& histogram, std::uint64_t n);
ImbalancePrediction predict_imbalance(const LogHistogram& slowdowns, double step_seconds,
                                      std::uint64_t ranks);

}  // namespace corenoise
