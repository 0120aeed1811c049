#include "collector/cluster/cluster_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "probe/stats.h"

namespace corenoise {
namespace {

LogHistogram histogram_of(const std::vector<double>& values, HistogramRange range = {1.0 / 1024}) {
  LogHistogram h(range);
  for (const double v : values) h.add(v);
  return h;
}

std::vector<double> lognormal(std::mt19937_64& rng, std::size_t n, double mu, double sigma) {
  std::lognormal_distribution<double> dist(mu, sigma);
  std::vector<double> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// ---------------------------------------------------------------- LogHistogram

TEST(LogHistogram, PowersOfTwoAreBinCentresAndComeBackExactly) {
  for (const double v : {0.25, 0.5, 1.0, 2.0, 4.0}) {
    const LogHistogram h = histogram_of({v, v, v});
    EXPECT_EQ(h.count(), 3u);
    EXPECT_EQ(h.quantile(0.5), v);
    EXPECT_EQ(h.representative(LogHistogram::slot_of(v, h.range())), v);
  }
}

TEST(LogHistogram, OutOfRangeAndNonFiniteValues) {
  LogHistogram h({1.0});
  EXPECT_FALSE(h.add(std::nan("")));
  EXPECT_FALSE(h.add(std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(h.add(0));
  EXPECT_TRUE(h.add(-3));
  EXPECT_TRUE(h.add(1e12));  // above 2^20
  EXPECT_TRUE(h.add(3));
  EXPECT_EQ(h.count(), 4u);
  EXPECT_EQ(h.counts()[kUnderflowSlot], 2u);
  EXPECT_EQ(h.counts()[kOverflowSlot], 1u);
  EXPECT_EQ(h.min(), -3);
  EXPECT_EQ(h.max(), 1e12);
  EXPECT_EQ(h.quantile(0), -3);  // the extremes are exact
  EXPECT_EQ(h.quantile(1), 1e12);
  EXPECT_DOUBLE_EQ(h.sum(), 3 + 1e12 - 3);
  EXPECT_TRUE(std::isnan(LogHistogram().quantile(0.5)));
}

TEST(LogHistogram, MergeEqualsHistogramOfTheConcatenation) {
  std::mt19937_64 rng(1);
  for (int round = 0; round < 100; ++round) {
    const auto a = lognormal(rng, rng() % 500, 0, 0.6);
    const auto b = lognormal(rng, rng() % 500, 0.3, 0.2);
    std::vector<double> both = a;
    both.insert(both.end(), b.begin(), b.end());
    LogHistogram merged = histogram_of(a);
    merged.merge(histogram_of(b));
    const LogHistogram serial = histogram_of(both);
    ASSERT_TRUE(
        std::equal(merged.counts().begin(), merged.counts().end(), serial.counts().begin()));
    EXPECT_EQ(merged.min(), serial.min());
    EXPECT_EQ(merged.max(), serial.max());
    EXPECT_NEAR(merged.sum(), serial.sum(), 1e-9 * std::max(1.0, serial.sum()));
    EXPECT_EQ(merged.count(), both.size());
  }
}

TEST(LogHistogram, MergeRejectsAnotherRange) {
  LogHistogram a({1.0});
  EXPECT_THROW(a.merge(LogHistogram({2.0})), std::invalid_argument);
}

TEST(LogHistogram, QuantileIsWithinTheDocumentedBoundOfTheSampleQuantile) {
  EXPECT_LE(std::exp2(1.0 / (2 * kBinsPerOctave)) - 1, kQuantileRelativeError);
  EXPECT_LE(kQuantileRelativeError, 0.005);
  std::mt19937_64 rng(2);
  const double qs[] = {0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1};
  for (int round = 0; round < 300; ++round) {
    const std::size_t n = 1 + rng() % 3000;
    const double sigma = 0.05 + 0.02 * static_cast<double>(rng() % 50);
    // Slowdowns around 1, and seconds around 5 ms in the matmul range.
    const bool seconds = round % 2 == 1;
    const auto values = lognormal(rng, n, seconds ? std::log(0.005) : 0, sigma);
    const HistogramRange range =
        metric_range(seconds ? figure_metric(ProbeKind::matmul) : Metric::expected_slowdown);
    const LogHistogram h = histogram_of(values, range);
    for (const double q : qs) {
      const double exact = stats::quantile(values, q);
      const double estimate = h.quantile(q);
      ASSERT_LE(std::abs(estimate - exact), kQuantileRelativeError * exact * (1 + 1e-12))
          << "n=" << n << " sigma=" << sigma << " q=" << q;
    }
  }
}

// A report's p50 <= p90 <= p99 <= max, to the last bit: a sweep of two
// cores whose clocks fell in one bin printed p50 one ulp above p99.
TEST(LogHistogram, QuantilesNeverDecreaseInQ) {
  std::mt19937_64 rng(3);
  const HistogramRange range = metric_range(figure_metric(ProbeKind::clock));
  for (int round = 0; round < 200; ++round) {
    std::vector<double> values;
    const std::size_t n = 1 + rng() % 6;
    for (std::size_t i = 0; i < n; ++i)
      values.push_back(2.89196e9 * (1 + 1e-4 * static_cast<double>(rng() % 3)));
    const LogHistogram h = histogram_of(values, range);
    double previous = -1;
    for (int step = 0; step <= 1000; ++step) {
      const double estimate = h.quantile(step / 1000.0);
      ASSERT_GE(estimate, previous) << "n=" << n << " q=" << step / 1000.0;
      previous = estimate;
    }
  }
}

// ------------------------------------------------------------------- KindTable

TEST(KindTable, SortedUniqueUnionTruncatedInByteOrder) {
  KindTable a;
  a.insert("kindB");
  a.insert("kindA");
  a.insert("kindB");
  EXPECT_EQ(a.size, 2u);
  EXPECT_EQ(a.name(0), "kindA");
  EXPECT_EQ(*a.find("kindB"), 1u);
  EXPECT_FALSE(a.find("IntelAtom"));
  KindTable b;
  for (const char* k : {"kindE", "kindD", "kindC", "kindA"}) b.insert(k);
  const KindTable m = merge_kind_tables(a, b);
  EXPECT_EQ(m.size, kMaxKinds);
  EXPECT_EQ(m.overflowed, 1u);  // five distinct kinds
  EXPECT_EQ(m.name(0), "kindA");
  EXPECT_EQ(m.name(3), "kindD");
  EXPECT_EQ(merge_kind_tables(b, a), m);
  // A long name is truncated consistently on insert and find.
  KindTable t;
  const std::string long_name(100, 'x');
  t.insert(long_name);
  EXPECT_EQ(*t.find(long_name), 0u);
}

TEST(KindTable, MergeIsCommutativeAndAssociativeOnRandomTables) {
  std::mt19937_64 rng(3);
  const auto random_table = [&] {
    KindTable t;
    const int n = static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) t.insert("kind" + std::to_string(rng() % 7));
    return t;
  };
  for (int round = 0; round < 500; ++round) {
    const KindTable a = random_table(), b = random_table(), c = random_table();
    EXPECT_EQ(merge_kind_tables(a, b), merge_kind_tables(b, a));
    EXPECT_EQ(merge_kind_tables(merge_kind_tables(a, b), c),
              merge_kind_tables(a, merge_kind_tables(b, c)));
  }
}

TEST(KindTable, BufferFunctionMergesEachTable) {
  KindTable in[2];
  KindTable inout[2];
  in[0].insert("P");
  inout[0].insert("E");
  in[1].insert("default");
  const KindTable expected0 = merge_kind_tables(in[0], inout[0]);
  const KindTable expected1 = merge_kind_tables(in[1], inout[1]);
  merge_kind_table_buffers(in, inout, 2);
  EXPECT_EQ(inout[0], expected0);
  EXPECT_EQ(inout[1], expected1);
}

// ----------------------------------------------------------------------- Top-K

std::vector<WorstCore> random_cores(std::mt19937_64& rng, std::size_t n, std::uint32_t& next_id) {
  std::vector<WorstCore> cores;
  for (std::size_t i = 0; i < n; ++i) {
    WorstCore c;
    const std::uint32_t id = next_id++;  // distinct (node, cpu)
    c.node = id / 120;
    c.cpu = id % 120;
    c.state = static_cast<std::int32_t>(rng() % 5);
    c.mode = static_cast<std::int32_t>(rng() % 2);
    // Few distinct values: plenty of ties, broken by (node, cpu).
    c.expected_slowdown = 1 + 0.25 * static_cast<double>(rng() % 6);
    c.matmul_slowdown = c.expected_slowdown;
    cores.push_back(c);
  }
  return cores;
}

TopK top_of(const std::vector<WorstCore>& cores) {
  TopK t;
  for (const auto& c : cores) t.insert(c);
  return t;
}

std::vector<WorstCore> serial_top(std::vector<WorstCore> cores) {
  std::sort(cores.begin(), cores.end(), worse);
  if (cores.size() > kTopK) cores.resize(kTopK);
  return cores;
}

TEST(TopK, InsertKeepsTheKWorstSortedAndIgnoresNaN) {
  std::mt19937_64 rng(4);
  std::uint32_t id = 0;
  const auto cores = random_cores(rng, 300, id);
  const TopK t = top_of(cores);
  const auto expected = serial_top(cores);
  ASSERT_EQ(t.size, kTopK);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), t.cores().begin()));
  TopK u;
  WorstCore nan_core;
  nan_core.expected_slowdown = std::nan("");
  u.insert(nan_core);
  EXPECT_EQ(u.size, 0u);
}

TEST(TopK, MergeEqualsSerialSortOfTheUnionCommutativeAndAssociative) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 300; ++round) {
    std::uint32_t id = static_cast<std::uint32_t>(rng() % 1000);
    // Lists shorter and longer than K, and empty ones.
    const auto ca = random_cores(rng, rng() % (2 * kTopK), id);
    const auto cb = random_cores(rng, rng() % (2 * kTopK), id);
    const auto cc = random_cores(rng, rng() % 10, id);
    const TopK a = top_of(ca), b = top_of(cb), c = top_of(cc);
    std::vector<WorstCore> all = ca;
    all.insert(all.end(), cb.begin(), cb.end());
    all.insert(all.end(), cc.begin(), cc.end());
    const auto expected = serial_top(all);
    const TopK abc = merge_top_k(merge_top_k(a, b), c);
    ASSERT_EQ(abc.size, expected.size());
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), abc.cores().begin()));
    EXPECT_EQ(merge_top_k(a, b), merge_top_k(b, a));
    EXPECT_EQ(abc, merge_top_k(a, merge_top_k(b, c)));
    EXPECT_EQ(abc, merge_top_k(merge_top_k(c, a), b));
  }
}

TEST(TopK, BufferFunctionOverArraysEqualsMergingEachList) {
  std::mt19937_64 rng(6);
  std::uint32_t id = 0;
  constexpr int kLists = 5;
  std::vector<TopK> in(kLists), inout(kLists), expected(kLists);
  for (int i = 0; i < kLists; ++i) {
    in[i] = top_of(random_cores(rng, rng() % 100, id));
    inout[i] = top_of(random_cores(rng, rng() % 100, id));
    expected[i] = merge_top_k(in[i], inout[i]);
  }
  // MPI promises no alignment for a byte datatype: run it on an odd offset.
  std::vector<unsigned char> src(kLists * sizeof(TopK) + 1), dst(kLists * sizeof(TopK) + 1);
  std::memcpy(src.data() + 1, in.data(), kLists * sizeof(TopK));
  std::memcpy(dst.data() + 1, inout.data(), kLists * sizeof(TopK));
  merge_top_k_buffers(src.data() + 1, dst.data() + 1, kLists);
  for (int i = 0; i < kLists; ++i) {
    TopK got;
    std::memcpy(&got, dst.data() + 1 + i * sizeof(TopK), sizeof(TopK));
    EXPECT_EQ(got, expected[i]) << i;
  }
}

// ------------------------------------------------------- Reports by hand

CoreFigures figures(unsigned cpu, const std::string& kind, double slowdown, double matmul = 0.010,
                    double hz = 3e9, double noise = 0.01) {
  CoreFigures c;
  c.cpu = cpu;
  c.kind = kind;
  c.figure[ProbeKind::matmul] = matmul;
  c.figure[ProbeKind::clock] = hz;
  DetourResult d;
  d.window_seconds = 1;
  d.total_seconds = noise;
  c.detour = d;
  c.figure[ProbeKind::detour] = d.noise_ratio();
  c.figure[ProbeKind::stream] = 1e10;
  c.slowdown[ProbeKind::matmul] = slowdown;
  c.expected_slowdown = slowdown;
  c.state = slowdown >= 1.05 ? CoreState::slow : CoreState::ok;
  return c;
}

CoreFigures skipped(unsigned cpu, const std::string& kind) {
  CoreFigures c;
  c.cpu = cpu;
  c.kind = kind;
  c.state = CoreState::skipped;
  c.cause = skipped_cause(SkipReason::not_selected);
  return c;
}

// A node of `n` PUs of one kind; slowdowns per mode (empty → skipped).
NodeReport node(const std::vector<std::vector<std::optional<double>>>& modes,
                const std::string& kind = "default", double matmul = 0.010) {
  NodeReport r;
  const std::size_t n = modes.front().size();
  for (unsigned cpu = 0; cpu < n; ++cpu) {
    ProcessingUnit pu;
    pu.cpu = cpu;
    pu.kind = kind;
    r.pus.push_back(pu);
  }
  for (std::size_t m = 0; m < modes.size(); ++m) {
    ModeReport mr;
    mr.mode = m == 0 ? Mode::isolated : Mode::concurrent;
    for (unsigned cpu = 0; cpu < n; ++cpu) {
      const auto s = modes[m][cpu];
      mr.verdicts.cores.push_back(
          s ? figures(cpu, kind, *s, matmul * *s, m == 0 ? 3e9 : 2.5e9, m == 0 ? 0.01 : 0.02)
            : skipped(cpu, kind));
    }
    r.modes.push_back(mr);
  }
  return r;
}

TEST(NodeSummary, FromASyntheticReport) {
  // isolated: 1, 1, 1.2, skipped; concurrent: 1, 1.5, 1, skipped.
  const NodeReport r = node({{1.0, 1.0, 1.2, std::nullopt}, {1.0, 1.5, 1.0, std::nullopt}});
  const NodeSummary s = summarize_node(r, 7);
  EXPECT_EQ(s.node, 7u);
  EXPECT_EQ(s.probed_cores, 3u);
  EXPECT_EQ(s.states[static_cast<int>(CoreState::ok)], 1u);
  EXPECT_EQ(s.states[static_cast<int>(CoreState::slow)], 2u);
  EXPECT_EQ(s.states[static_cast<int>(CoreState::skipped)], 1u);
  // Each core's worst mode: 1.0, 1.5, 1.2.
  EXPECT_DOUBLE_EQ(s.median_expected_slowdown, 1.2);
  EXPECT_DOUBLE_EQ(s.max_expected_slowdown, 1.5);
  EXPECT_DOUBLE_EQ(s.median_clock_hertz, 2.5e9);  // the concurrent mode's
  EXPECT_DOUBLE_EQ(s.median_noise_ratio, 0.02);
  EXPECT_EQ(s.trace, NodeSummary::Trace::off);
  // Whether its culprits were named travels with it; why not stays on the node.
  NodeReport traced = r;
  traced.trace = "on";
  EXPECT_EQ(summarize_node(traced, 7).trace, NodeSummary::Trace::on);
  traced.trace = "unavailable: tracing needs root (tracefs)";
  EXPECT_EQ(summarize_node(traced, 7).trace, NodeSummary::Trace::unavailable);

  const TopK t = node_top_k(r, 7);
  ASSERT_EQ(t.size, 3u);
  EXPECT_EQ(t.items[0].cpu, 1u);
  EXPECT_EQ(t.items[0].mode, static_cast<int>(Mode::concurrent));
  EXPECT_EQ(t.items[0].state, static_cast<int>(CoreState::slow));
  EXPECT_EQ(t.items[1].cpu, 2u);
  EXPECT_EQ(t.items[2].expected_slowdown, 1.0);
}

TEST(NodeOutliers, FlagsAPlantedSlowNode) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> jitter(1.0, 0.005);
  std::vector<NodeSummary> nodes(32);
  for (std::uint32_t i = 0; i < nodes.size(); ++i) {
    nodes[i].node = i;
    nodes[i].median_expected_slowdown = jitter(rng);
  }
  nodes[13].median_expected_slowdown = 1.3;
  nodes[20].median_expected_slowdown = std::nan("");  // a node that measured nothing
  const auto out = node_outliers(nodes);
  ASSERT_EQ(out.size(), nodes.size());
  for (const auto& o : out) EXPECT_EQ(o.flagged, o.node == 13) << o.node << " z=" << o.robust_z;
  EXPECT_EQ(out[20].robust_z, 0);
}

TEST(NodeOutliers, IdenticalNodesFlagNothingEvenWithZeroMad) {
  std::vector<NodeSummary> nodes(8);
  for (std::uint32_t i = 0; i < 8; ++i) {
    nodes[i].node = i;
    nodes[i].median_expected_slowdown = 1.0;
  }
  nodes[3].median_expected_slowdown = 1.0 + 1e-9;  // z = inf, but not materially slower
  for (const auto& o : node_outliers(nodes)) EXPECT_FALSE(o.flagged);
}

// ----------------------------------------------------------- ClusterHistograms

TEST(ClusterHistograms, NodesFilledApartAndMergedEqualOneSerialFill) {
  const NodeReport a = node({{1.0, 1.1, 1.0}, {1.0, 1.0, 1.3}}, "IntelCore");
  const NodeReport b = node({{1.0, 1.0}}, "IntelAtom");
  // The kind tables are agreed first: both nodes then use the same slots.
  const KindTable kinds = merge_kind_tables(kind_table(a), kind_table(b));
  ASSERT_EQ(kinds.size, 2u);
  ClusterHistograms ha, hb, serial;
  EXPECT_EQ(add_node_figures(ha, a, kinds), 0u);
  EXPECT_EQ(add_node_figures(hb, b, kinds), 0u);
  add_node_figures(serial, a, kinds);
  add_node_figures(serial, b, kinds);
  ha.merge(hb);
  EXPECT_EQ(ha, serial);
  EXPECT_EQ(ha.counts().size(), kHistogramKeys * kHistogramSlots);
  const std::size_t core = *kinds.find("IntelCore");
  const std::size_t atom = *kinds.find("IntelAtom");
  EXPECT_EQ(ha.histogram(Metric::expected_slowdown, Mode::isolated, core).count(), 3u);
  EXPECT_EQ(ha.histogram(Metric::expected_slowdown, Mode::concurrent, core).max(), 1.3);
  EXPECT_EQ(ha.histogram(figure_metric(ProbeKind::clock), Mode::isolated, atom).count(), 2u);
  EXPECT_EQ(ha.histogram(figure_metric(ProbeKind::clock), Mode::concurrent, atom).count(), 0u);
  EXPECT_EQ(ha.all_kinds(Metric::expected_slowdown, Mode::isolated).count(), 5u);
  // A kind outside the table is counted as left out, not put elsewhere.
  KindTable only_atom;
  only_atom.insert("IntelAtom");
  ClusterHistograms h;
  EXPECT_EQ(add_node_figures(h, a, only_atom), 6u);
}

TEST(ClusterHistograms, KeysAreDistinctAndCoverTheLayout) {
  std::vector<bool> seen(kHistogramKeys, false);
  for (std::size_t m = 0; m < kMetrics; ++m) {
    for (const Mode mode : {Mode::isolated, Mode::concurrent}) {
      for (std::size_t k = 0; k < kMaxKinds; ++k) {
        const std::size_t key = ClusterHistograms::key(static_cast<Metric>(m), mode, k);
        ASSERT_LT(key, kHistogramKeys);
        EXPECT_FALSE(seen[key]);
        seen[key] = true;
      }
    }
  }
}

TEST(ClusterHistograms, ClusterSlowdownSeesAWholeSlowNode) {
  // Node b is 10 % slower on every core: its own verdicts read 1.0.
  NodeReport a = node({{1.0, 1.0, 1.0, 1.0}});
  NodeReport b = node({{1.0, 1.0}}, "default", 0.011);
  const KindTable kinds = merge_kind_tables(kind_table(a), kind_table(b));
  ClusterHistograms pass1;
  add_node_figures(pass1, a, kinds);
  add_node_figures(pass1, b, kinds);
  const ClusterReference ref = cluster_reference(pass1, Mode::isolated, 0);
  EXPECT_NEAR(*ref.figure[ProbeKind::matmul], 0.010, 0.010 * kQuantileRelativeError);
  ClusterHistograms pass2;
  EXPECT_EQ(add_cluster_slowdowns(pass2, a, kinds, pass1), 0u);
  EXPECT_EQ(add_cluster_slowdowns(pass2, b, kinds, pass1), 0u);
  const LogHistogram h = pass2.histogram(Metric::cluster_slowdown, Mode::isolated, 0);
  EXPECT_EQ(h.count(), 6u);
  EXPECT_NEAR(h.max(), 1.1, 1.1 * 2 * kQuantileRelativeError);
  EXPECT_NEAR(h.min(), 1.0, 2 * kQuantileRelativeError);
}

// ------------------------------------------------------------------- Imbalance

TEST(Imbalance, OneSlowCoreGivesTheExactBarrierWait) {
  // The story: 3,840 ranks, the median step 30 ms, the worst core 2.6×.
  std::vector<double> slowdowns(3839, 1.0);
  slowdowns.push_back(2.6);
  const LogHistogram h = histogram_of(slowdowns, metric_range(Metric::expected_slowdown));
  const ImbalancePrediction p = predict_imbalance(h, 0.030, 3840);
  EXPECT_EQ(p.cores, 3840u);
  EXPECT_EQ(p.median_slowdown, 1.0);
  EXPECT_EQ(p.max_slowdown, 2.6);
  EXPECT_NEAR(p.wait_seconds, 0.048, 1e-15);
  // Resampling 3,840 ranks from this allocation hits the slow core with
  // probability 1 − (1 − 1/3840)^3840 ≈ 0.632.
  const double hit = 1 - std::pow(1 - 1.0 / 3840, 3840);
  EXPECT_NEAR(p.expected_max_slowdown, 1.0 + 1.6 * hit, 1e-12);
  EXPECT_NEAR(p.predicted_wait_seconds, 0.030 * 1.6 * hit, 1e-12);
  EXPECT_EQ(p.ranks, 3840u);
}

TEST(Imbalance, ExpectedMaxMatchesABruteForceOnADiscreteDistribution) {
  // Three cores at 1, one at 2: E[max of 2] = 1 + P(some draw is 2) = 1 + 7/16.
  const LogHistogram h = histogram_of({1, 1, 1, 2});
  EXPECT_DOUBLE_EQ(expected_max(h, 1), 1.25);  // the mean
  EXPECT_DOUBLE_EQ(expected_max(h, 2), 1 + 7.0 / 16);
  EXPECT_DOUBLE_EQ(expected_max(h, 3), 1 + (1 - 27.0 / 64));
  EXPECT_TRUE(std::isnan(expected_max(LogHistogram(), 3)));
}

TEST(Imbalance, ExpectedMaxIsMonotonicInNAndConvergesToTheMax) {
  std::mt19937_64 rng(8);
  for (int round = 0; round < 20; ++round) {
    const auto values = lognormal(rng, 100 + rng() % 3000, 0, 0.1);
    const LogHistogram h = histogram_of(values, metric_range(Metric::expected_slowdown));
    double previous = 0;
    for (std::uint64_t n = 1; n <= (1ull << 40); n *= 2) {
      const double e = expected_max(h, n);
      ASSERT_GE(e, previous - 1e-12) << n;
      ASSERT_LE(e, h.max() * (1 + 1e-12));  // weights sum to 1 up to rounding
      previous = e;
    }
    EXPECT_NEAR(expected_max(h, 1ull << 40), h.max(), 1e-9);
    // The quantile approximation agrees roughly for N within the sample.
    const ImbalancePrediction p = predict_imbalance(h, 0.030, 64);
    EXPECT_NEAR(p.quantile_max_slowdown, p.expected_max_slowdown, 0.1);
  }
}

}  // namespace
}  // namespace corenoise

namespace corenoise {
namespace {

// Each ratio against the cluster reference, as corenoise_slowdown_ratio
// defines it against the node's; a missing figure on either side leaves
// that ratio out.
TEST(ClusterRatios, EveryProbesRatioAgainstTheClusterReference) {
  CoreFigures core;
  core.figure[ProbeKind::matmul] = 1.1e-3;
  core.figure[ProbeKind::clock] = 3.0e9;
  core.figure[ProbeKind::stream] = 40e9;
  DetourResult d;
  d.window_seconds = 1;
  d.total_seconds = 0.2;
  core.detour = d;
  core.figure[ProbeKind::detour] = d.noise_ratio();
  ClusterReference ref;
  ref.figure[ProbeKind::matmul] = 1.0e-3;
  ref.figure[ProbeKind::clock] = 3.3e9;
  ref.figure[ProbeKind::stream] = 80e9;
  ref.figure[ProbeKind::detour] = 0.0;

  std::map<RatioProbe, double> ratios;
  for (const auto& [probe, ratio] : cluster_ratios(core, ref)) ratios[probe] = ratio;
  ASSERT_EQ(ratios.size(), 4u);
  EXPECT_DOUBLE_EQ(ratios[ratio_probe(ProbeKind::matmul)], 1.1);
  EXPECT_DOUBLE_EQ(ratios[ratio_probe(ProbeKind::clock)], 1.1);
  EXPECT_DOUBLE_EQ(ratios[ratio_probe(ProbeKind::stream)], 2.0);
  EXPECT_DOUBLE_EQ(ratios[kExpectedRatio], 1.1 / 0.8);  // matmul × 1 / (1 − 0.2)

  core.figure[ProbeKind::clock].reset();
  ref.figure[ProbeKind::stream].reset();
  ratios.clear();
  for (const auto& [probe, ratio] : cluster_ratios(core, ref)) ratios[probe] = ratio;
  EXPECT_EQ(ratios.count(ratio_probe(ProbeKind::clock)), 0u);
  EXPECT_EQ(ratios.count(ratio_probe(ProbeKind::stream)), 0u);
  EXPECT_EQ(ratios.size(), 2u);
}

}  // namespace
}  // namespace corenoise
