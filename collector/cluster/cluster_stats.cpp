#include "collector/cluster/cluster_stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "probe/stats.h"

namespace corenoise {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double bin_centre(std::size_t bin, HistogramRange range) {
  // exp2 of an exact multiple of 1/80 octaves: powers of two come out exact.
  return range.lowest * std::exp2(static_cast<double>(bin) / kBinsPerOctave);
}

std::size_t mode_index(Mode mode) { return mode == Mode::concurrent ? 1 : 0; }

std::vector<double> finite_only(std::vector<double> values) {
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  return values;
}

}  // namespace

// ---------------------------------------------------------------- LogHistogram

std::size_t LogHistogram::slot_of(double value, HistogramRange range) {
  if (!(value > 0)) return kUnderflowSlot;
  // Bins are centred on lowest·2^(b/k): round, not floor, in log space.
  const double position = std::log2(value / range.lowest) * kBinsPerOctave;
  const double bin = std::floor(position + 0.5);
  if (bin < 0) return kUnderflowSlot;
  if (bin >= static_cast<double>(kHistogramBins)) return kOverflowSlot;
  return static_cast<std::size_t>(bin) + 1;
}

bool LogHistogram::add(double value) {
  if (!std::isfinite(value)) return false;
  ++counts_[slot_of(value, range_)];
  sum_ += value;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
  return true;
}

void LogHistogram::merge(const LogHistogram& other) {
  if (!(other.range_ == range_)) {
    throw std::invalid_argument("LogHistogram::merge: ranges differ (lowest " +
                                std::to_string(range_.lowest) + " vs " +
                                std::to_string(other.range_.lowest) + ")");
  }
  for (std::size_t i = 0; i < kHistogramSlots; ++i) counts_[i] += other.counts_[i];
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

std::uint64_t LogHistogram::count() const {
  std::uint64_t n = 0;
  for (const auto c : counts_) n += c;
  return n;
}

double LogHistogram::representative(std::size_t slot) const {
  if (slot == kUnderflowSlot) return min_;
  if (slot == kOverflowSlot) return max_;
  // Clamping to the exact extremes only moves the estimate towards the
  // values in the bin, since they all lie in [min, max].
  return std::clamp(bin_centre(slot - 1, range_), min_, max_);
}

double LogHistogram::quantile(double q) const {
  const std::uint64_t n = count();
  if (n == 0) return kNaN;
  q = std::clamp(q, 0.0, 1.0);
  // Type 7: interpolate between order statistics k and k+1 (0-based).
  const double h = q * static_cast<double>(n - 1);
  const auto k = static_cast<std::uint64_t>(std::floor(h));
  const double f = h - static_cast<double>(k);
  // Representatives of order statistics k and k+1, found in one walk.
  double at_k = kNaN;
  double at_next = kNaN;
  std::uint64_t below = 0;  // values in slots before `slot`
  for (std::size_t slot = 0; slot < kHistogramSlots; ++slot) {
    const std::uint64_t c = counts_[slot];
    if (c == 0) continue;
    if (std::isnan(at_k) && k < below + c) at_k = representative(slot);
    if (k + 1 < below + c) {
      at_next = representative(slot);
      break;
    }
    below += c;
  }
  if (f == 0 || std::isnan(at_next)) return at_k;
  // Non-decreasing in q, as a report's p50 <= p90 <= p99 must be: the
  // weighted mean (1 - f)·a + f·b of two equal values is off by an ulp
  // either way depending on f (a sweep printed p50 one ulp above p99).
  return std::clamp(at_k + f * (at_next - at_k), at_k, at_next);
}

LogHistogram LogHistogram::from_parts(HistogramRange range, std::span<const std::uint64_t> counts,
                                      double sum, double min, double max) {
  if (counts.size() != kHistogramSlots) {
    throw std::invalid_argument("LogHistogram::from_parts: " + std::to_string(counts.size()) +
                                " counts, expected " + std::to_string(kHistogramSlots));
  }
  LogHistogram h(range);
  std::copy(counts.begin(), counts.end(), h.counts_.begin());
  h.sum_ = sum;
  h.min_ = min;
  h.max_ = max;
  return h;
}

// ------------------------------------------------------------------- KindTable

void KindTable::insert(std::string_view kind) {
  std::array<char, kKindNameBytes> entry{};  // NUL-padded: tables compare bytewise
  const std::size_t length = std::min(kind.size(), kKindNameBytes - 1);
  std::memcpy(entry.data(), kind.data(), length);
  const std::string_view key(entry.data(), length);
  std::size_t at = 0;
  while (at < size && name(at) < key) ++at;
  if (at < size && name(at) == key) return;
  if (size == kMaxKinds) {
    overflowed = 1;
    // Keep the first kMaxKinds names in byte order, so that truncation
    // commutes with union and the merge stays associative.
    if (at == kMaxKinds) return;
    --size;
  }
  for (std::size_t i = size; i > at; --i) names[i] = names[i - 1];
  names[at] = entry;
  ++size;
  for (std::size_t i = size; i < kMaxKinds; ++i) names[i] = {};
}

std::optional<std::size_t> KindTable::find(std::string_view kind) const {
  const std::string_view key = kind.substr(0, kKindNameBytes - 1);
  for (std::size_t i = 0; i < size; ++i) {
    if (name(i) == key) return i;
  }
  return std::nullopt;
}

std::string_view KindTable::name(std::size_t slot) const {
  const auto& n = names[slot];
  return {n.data(), strnlen(n.data(), kKindNameBytes)};
}

KindTable kind_table(const NodeReport& report) {
  KindTable table;
  for (const auto& pu : report.pus) table.insert(pu.kind);
  return table;
}

KindTable merge_kind_tables(const KindTable& a, const KindTable& b) {
  KindTable merged = a;
  merged.size = std::min<std::uint32_t>(merged.size, kMaxKinds);  // never trust a buffer
  for (std::size_t i = 0; i < std::min<std::size_t>(b.size, kMaxKinds); ++i) {
    merged.insert(b.name(i));
  }
  merged.overflowed = (a.overflowed | b.overflowed | merged.overflowed) != 0 ? 1 : 0;
  return merged;
}

void merge_kind_table_buffers(const void* in, void* inout, int count) {
  // memcpy: MPI buffers carry no alignment promise for a byte datatype.
  const auto* src = static_cast<const unsigned char*>(in);
  auto* dst = static_cast<unsigned char*>(inout);
  for (int i = 0; i < count; ++i) {
    KindTable a;
    KindTable b;
    std::memcpy(&a, src + i * sizeof(KindTable), sizeof(KindTable));
    std::memcpy(&b, dst + i * sizeof(KindTable), sizeof(KindTable));
    const KindTable merged = merge_kind_tables(a, b);
    std::memcpy(dst + i * sizeof(KindTable), &merged, sizeof(KindTable));
  }
}

// ----------------------------------------------------------- ClusterHistograms

std::string_view to_string(Metric metric) {
  if (const auto kind = kind_of(metric)) return descriptor(*kind).figure_name;
  switch (metric) {
    case Metric::expected_slowdown:
      return "expected_slowdown";
    case Metric::cluster_slowdown:
      return "cluster_slowdown";
  }
  return "unknown";
}

HistogramRange metric_range(Metric metric) {
  // 20 octaves each, chosen so that every plausible value is binned.
  if (const auto kind = kind_of(metric)) return {descriptor(*kind).histogram_lowest};
  return {std::exp2(-10)};  // ratios 1/1024 … 1024
}

ClusterHistograms::ClusterHistograms()
    : counts_(kHistogramKeys * kHistogramSlots, 0),
      sums_(kHistogramKeys, 0),
      minima_(kHistogramKeys, kInf),
      maxima_(kHistogramKeys, -kInf) {}

std::size_t ClusterHistograms::key(Metric metric, Mode mode, std::size_t kind_slot) {
  return (static_cast<std::size_t>(metric) * kModes + mode_index(mode)) * kMaxKinds + kind_slot;
}

bool ClusterHistograms::add(Metric metric, Mode mode, std::size_t kind_slot, double value) {
  if (!std::isfinite(value) || kind_slot >= kMaxKinds) return false;
  const std::size_t k = key(metric, mode, kind_slot);
  ++counts_[k * kHistogramSlots + LogHistogram::slot_of(value, metric_range(metric))];
  sums_[k] += value;
  minima_[k] = std::min(minima_[k], value);
  maxima_[k] = std::max(maxima_[k], value);
  return true;
}

LogHistogram ClusterHistograms::histogram(Metric metric, Mode mode, std::size_t kind_slot) const {
  const std::size_t k = key(metric, mode, kind_slot);
  return LogHistogram::from_parts(
      metric_range(metric),
      std::span<const std::uint64_t>(counts_).subspan(k * kHistogramSlots, kHistogramSlots),
      sums_[k], minima_[k], maxima_[k]);
}

LogHistogram ClusterHistograms::all_kinds(Metric metric, Mode mode) const {
  LogHistogram merged(metric_range(metric));
  for (std::size_t kind = 0; kind < kMaxKinds; ++kind) merged.merge(histogram(metric, mode, kind));
  return merged;
}

void ClusterHistograms::merge(const ClusterHistograms& other) {
  for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  for (std::size_t k = 0; k < kHistogramKeys; ++k) {
    sums_[k] += other.sums_[k];
    minima_[k] = std::min(minima_[k], other.minima_[k]);
    maxima_[k] = std::max(maxima_[k], other.maxima_[k]);
  }
}

namespace {

// Calls fn(mode, core, kind slot) for every measured (core, mode) of the
// report whose kind is in the agreed table; returns how many were left out
// because it is not, plus what fn itself reports as left out (true).
template <typename Fn>
std::size_t for_each_measured_core(const NodeReport& report, const KindTable& kinds, Fn&& fn) {
  std::size_t left_out = 0;
  for (const auto& mode : report.modes) {
    for (const auto& c : mode.verdicts.cores) {
      if (c.state == CoreState::skipped) continue;
      const auto slot = kinds.find(c.kind);
      if (!slot || fn(mode.mode, c, *slot)) ++left_out;
    }
  }
  return left_out;
}

}  // namespace

std::size_t add_node_figures(ClusterHistograms& histograms, const NodeReport& report,
                             const KindTable& kinds) {
  return for_each_measured_core(
      report, kinds, [&](Mode mode, const CoreFigures& c, std::size_t slot) {
        const auto add = [&](Metric metric, const std::optional<double>& value) {
          if (value) histograms.add(metric, mode, slot, *value);
        };
        add(Metric::expected_slowdown, c.expected_slowdown);
        for (ProbeKind probe : kAllProbeKinds) add(figure_metric(probe), c.figure[probe]);
        return false;
      });
}

ClusterReference cluster_reference(const ClusterHistograms& reduced, Mode mode,
                                   std::size_t kind_slot) {
  ClusterReference ref;
  for (ProbeKind probe : kAllProbeKinds) {
    const LogHistogram h = reduced.histogram(figure_metric(probe), mode, kind_slot);
    if (h.count() > 0) ref.figure[probe] = h.quantile(0.5);
  }
  return ref;
}

std::vector<std::pair<RatioProbe, double>> cluster_ratios(const CoreFigures& core,
                                                          const ClusterReference& reference) {
  std::vector<std::pair<RatioProbe, double>> ratios;
  const auto add = [&](RatioProbe probe, std::optional<double> ratio) {
    if (ratio && std::isfinite(*ratio) && *ratio > 0) ratios.emplace_back(probe, *ratio);
  };
  for (const ProbeDescriptor& d : kProbeDescriptors) {
    if (d.slowdown_metric)
      add(ratio_probe(d.kind), reference.reference(d.kind).slowdown(core.figure[d.kind]));
  }
  add(kExpectedRatio, cluster_expected_slowdown(core, reference));
  return ratios;
}

std::optional<double> cluster_expected_slowdown(const CoreFigures& core,
                                                const ClusterReference& reference) {
  const auto matmul =
      reference.reference(ProbeKind::matmul).slowdown(core.figure[ProbeKind::matmul]);
  if (!matmul) return std::nullopt;
  double factor = 1;
  // As judge() does against the node reference: no detour figures, no
  // noise factor.
  const auto& noise = core.figure[ProbeKind::detour];
  if (noise && reference.figure[ProbeKind::detour]) {
    const auto noise_factor = reference.reference(ProbeKind::detour).slowdown(noise);
    if (!noise_factor) return std::nullopt;
    factor = *noise_factor;
  }
  return *matmul * factor;
}

std::size_t add_cluster_slowdowns(ClusterHistograms& histograms, const NodeReport& report,
                                  const KindTable& kinds, const ClusterHistograms& reduced) {
  std::array<std::optional<ClusterReference>, kModes * kMaxKinds> references;
  return for_each_measured_core(
      report, kinds, [&](Mode mode, const CoreFigures& c, std::size_t slot) {
        auto& ref = references[mode_index(mode) * kMaxKinds + slot];
        if (!ref) ref = cluster_reference(reduced, mode, slot);
        const auto slowdown = cluster_expected_slowdown(c, *ref);
        return !slowdown || !histograms.add(Metric::cluster_slowdown, mode, slot, *slowdown);
      });
}

// ------------------------------------------------------------------------ TopK

bool worse(const WorstCore& a, const WorstCore& b) {
  // A core the round and its confirmation both found unhealthy ranks above
  // one that looked worse once and was not borne out (transient): seen
  // across nodes, a one-CPU node's own sweep rank took 56 % of its CPU in
  // a concurrent round, ranking a healthy core above the noisy one.
  const bool a_bad = is_unhealthy(static_cast<CoreState>(a.state));
  const bool b_bad = is_unhealthy(static_cast<CoreState>(b.state));
  if (a_bad != b_bad) return a_bad;
  if (a.expected_slowdown != b.expected_slowdown) return a.expected_slowdown > b.expected_slowdown;
  // A total order on every field but matmul_slowdown, so that the merge's
  // result does not depend on which list an equal-slowdown core came from.
  if (a.node != b.node) return a.node < b.node;
  if (a.cpu != b.cpu) return a.cpu < b.cpu;
  if (a.mode != b.mode) return a.mode < b.mode;
  return a.state < b.state;
}

void TopK::insert(const WorstCore& core) {
  if (std::isnan(core.expected_slowdown)) return;
  const auto end = items.begin() + size;
  const auto at = std::upper_bound(items.begin(), end, core, worse);
  const auto pos = static_cast<std::size_t>(at - items.begin());
  if (pos >= kTopK) return;
  if (size < kTopK) ++size;
  for (std::size_t i = size - 1; i > pos; --i) items[i] = items[i - 1];
  items[pos] = core;
}

TopK merge_top_k(const TopK& a, const TopK& b) {
  TopK merged;
  const std::size_t na = std::min<std::size_t>(a.size, kTopK);  // never trust a buffer
  const std::size_t nb = std::min<std::size_t>(b.size, kTopK);
  std::size_t i = 0;
  std::size_t j = 0;
  while (merged.size < kTopK && (i < na || j < nb)) {
    // Take from b only when it is strictly worse: with a total order that
    // leaves only bitwise-equal records, so the result is symmetric.
    const bool take_b = i == na || (j < nb && worse(b.items[j], a.items[i]));
    merged.items[merged.size++] = take_b ? b.items[j++] : a.items[i++];
  }
  return merged;
}

void merge_top_k_buffers(const void* in, void* inout, int count) {
  // TopK is 2 KiB; the copies cost nothing next to the network transfer,
  // and spare us any alignment assumption about MPI's buffers.
  const auto* src = static_cast<const unsigned char*>(in);
  auto* dst = static_cast<unsigned char*>(inout);
  TopK a;
  TopK b;
  for (int i = 0; i < count; ++i) {
    std::memcpy(&a, src + i * sizeof(TopK), sizeof(TopK));
    std::memcpy(&b, dst + i * sizeof(TopK), sizeof(TopK));
    const TopK merged = merge_top_k(a, b);
    std::memcpy(dst + i * sizeof(TopK), &merged, sizeof(TopK));
  }
}

namespace {

// The worst expected slowdown of PU `index` over the modes, with its mode
// index in report.modes; nullopt when no mode measured it.
std::optional<std::pair<double, std::size_t>> worst_over_modes(const NodeReport& report,
                                                               std::size_t index) {
  std::optional<std::pair<double, std::size_t>> worst;
  for (std::size_t m = 0; m < report.modes.size(); ++m) {
    const auto& cores = report.modes[m].verdicts.cores;
    if (index >= cores.size()) continue;
    const CoreFigures& c = cores[index];
    if (c.state == CoreState::skipped || !c.expected_slowdown) continue;
    if (!std::isfinite(*c.expected_slowdown)) continue;
    if (!worst || *c.expected_slowdown > worst->first) worst = {{*c.expected_slowdown, m}};
  }
  return worst;
}

}  // namespace

TopK node_top_k(const NodeReport& report, std::uint32_t node) {
  TopK top;
  for (std::size_t i = 0; i < report.pus.size(); ++i) {
    const auto worst = worst_over_modes(report, i);
    if (!worst) continue;
    const ModeReport& mode = report.modes[worst->second];
    const CoreFigures& c = mode.verdicts.cores[i];
    WorstCore w;
    w.node = node;
    w.cpu = report.pus[i].cpu;
    w.state = static_cast<std::int32_t>(report.state(i));
    w.mode = static_cast<std::int32_t>(mode.mode);
    w.expected_slowdown = worst->first;
    w.matmul_slowdown = c.slowdown[ProbeKind::matmul].value_or(kNaN);
    top.insert(w);
  }
  return top;
}

// ----------------------------------------------------------------- NodeSummary

NodeSummary summarize_node(const NodeReport& report, std::uint32_t node) {
  NodeSummary s;
  s.node = node;
  std::vector<double> slowdowns;
  for (std::size_t i = 0; i < report.pus.size(); ++i) {
    const CoreState state = report.state(i);
    ++s.states[static_cast<std::size_t>(state)];
    if (state != CoreState::skipped) ++s.probed_cores;
    if (const auto worst = worst_over_modes(report, i)) slowdowns.push_back(worst->first);
  }
  s.median_expected_slowdown = stats::median(slowdowns);
  s.max_expected_slowdown = stats::max(slowdowns);
  s.trace = report.trace == "on"    ? NodeSummary::Trace::on
            : report.trace == "off" ? NodeSummary::Trace::off
                                    : NodeSummary::Trace::unavailable;
  // Clock and noise of the mode a full MPI job resembles: all cores busy.
  const ModeReport* chosen = nullptr;
  for (const auto& m : report.modes) {
    if (m.mode == Mode::concurrent || chosen == nullptr) chosen = &m;
  }
  std::vector<double> clocks;
  std::vector<double> noise;
  if (chosen != nullptr) {
    for (const auto& c : chosen->verdicts.cores) {
      if (c.state == CoreState::skipped) continue;
      if (const auto& clock = c.figure[ProbeKind::clock]) clocks.push_back(*clock);
      if (const auto& lost = c.figure[ProbeKind::detour]) noise.push_back(*lost);
    }
  }
  s.median_clock_hertz = stats::median(finite_only(std::move(clocks)));
  s.median_noise_ratio = stats::median(finite_only(std::move(noise)));
  return s;
}

std::vector<NodeOutlier> node_outliers(std::span<const NodeSummary> nodes, double z_threshold,
                                       double min_excess) {
  std::vector<double> medians;
  for (const auto& n : nodes) {
    if (std::isfinite(n.median_expected_slowdown)) medians.push_back(n.median_expected_slowdown);
  }
  const double centre = stats::median(medians);
  const double spread = stats::mad(medians);
  std::vector<NodeOutlier> out;
  out.reserve(nodes.size());
  for (const auto& n : nodes) {
    NodeOutlier o;
    o.node = n.node;
    const double x = n.median_expected_slowdown;
    if (std::isfinite(x) && !std::isnan(centre)) {
      o.robust_z = stats::robust_z(x, centre, spread);
      o.flagged = o.robust_z > z_threshold && x - centre >= min_excess;
    }
    out.push_back(o);
  }
  return out;
}

// ------------------------------------------------------------------- Imbalance

double expected_max(const LogHistogram& histogram, std::uint64_t n) {
  const std::uint64_t total = histogram.count();
  if (total == 0) return kNaN;
  const double draws = static_cast<double>(std::max<std::uint64_t>(n, 1));
  const auto counts = histogram.counts();
  std::size_t top = 0;
  for (std::size_t slot = 0; slot < kHistogramSlots; ++slot) {
    if (counts[slot] > 0) top = slot;
  }
  // P(max of n ≤ slot i) = F_i^n, so slot i is the maximum's slot with
  // probability F_i^n − F_{i−1}^n.
  double expected = 0;
  double previous = 0;  // F_{i−1}^n
  std::uint64_t cumulative = 0;
  for (std::size_t slot = 0; slot <= top; ++slot) {
    if (counts[slot] == 0) continue;
    cumulative += counts[slot];
    const double f = static_cast<double>(cumulative) / static_cast<double>(total);
    const double fn = slot == top ? 1.0 : std::pow(f, draws);
    const double value = slot == top ? histogram.max() : histogram.representative(slot);
    expected += value * (fn - previous);
    previous = fn;
  }
  return expected;
}

ImbalancePrediction predict_imbalance(const LogHistogram& slowdowns, double step_seconds,
                                      std::uint64_t ranks) {
  ImbalancePrediction p;
  p.step_seconds = step_seconds;
  p.cores = slowdowns.count();
  p.ranks = ranks;
  if (p.cores == 0) {
    p.median_slowdown = p.max_slowdown = p.wait_seconds = kNaN;
    p.expected_max_slowdown = p.predicted_wait_seconds = p.quantile_max_slowdown = kNaN;
    return p;
  }
  p.median_slowdown = slowdowns.quantile(0.5);
  p.max_slowdown = slowdowns.max();
  p.wait_seconds = step_seconds * (p.max_slowdown - p.median_slowdown);
  p.expected_max_slowdown = expected_max(slowdowns, ranks);
  p.predicted_wait_seconds = step_seconds * (p.expected_max_slowdown - p.median_slowdown);
  p.quantile_max_slowdown =
      slowdowns.quantile(1 - 1 / (static_cast<double>(std::max<std::uint64_t>(ranks, 1)) + 1));
  return p;
}

}  // namespace corenoise
