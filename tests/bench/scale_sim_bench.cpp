// The scale simulation, which backs the verdicts' false-alarm claims at a
// site's scale (docs/validation.md, "Scale simulation"): how often a sweep
// of a whole allocation raises at least one false alarm, and how often it
// finds a defect of known size on a known core, when every synthetic
// core's samples are drawn from rounds recorded on this machine
// (tests/fixtures/rounds/, recorded with tests/tools/record_rounds) and go
// through the real decision code:
// summarize + judge per node, plan_confirmation, confirmation_alpha over the
// sweep's suspects, apply_confirmation, and the sweep's node-outlier rule
// (summarize_node + node_outliers). A benchmark that prints figures, not a
// test: nothing here fails on a figure.
//
//   build/tests/bench/scale_sim_bench [SWEEPS_32x120] [SWEEPS_1000x128] [SEED] [SCREEN_ALPHA]
//
// SCREEN_ALPHA (default: --screen-alpha's) is the level the screen picks
// suspects at, to weigh other choices of it.
//
// What it assumes, and why each matters:
//  - Cores are exchangeable draws from the recorded pool (random round,
//    random CPU): this VM's two vCPUs stand for every core of every node.
//    A real node's cores may differ more (or less) than this VM's two.
//  - The confirmation round is a fresh, independent draw. That is what
//    confirmation_alpha's guarantee rests on; the "same round" variant
//    re-uses each core's screening draw for its re-measurement (perfectly
//    correlated, the worst case of a host slowdown that lasts longer than
//    the confirmation takes) to show what the guarantee is worth without it.
//  - "bare metal (assumed)": the same samples with every per-sample
//    deviation of the matmul, clock and stream timings from the pool's
//    median ×0.25 (within a round and between rounds and cores alike), and
//    every detour window's lost time ×0.25: 4× less spread and lost time,
//    as on pinned dedicated cores with no hypervisor.
//    Not measured: an assumption to bracket the VM's figures.
//  - The cost of confirmation is the sweep's slowest node's confirmation
//    time over an isolated round's time, both from the seconds one sample
//    of each probe takes here (the pool's matmul, stream and detour-window
//    means; the clock's 0.5 ms from `corenoise probe --probes clock --json -`:
//    duration / (2 CPUs × 7 samples)): a round is cores × samples × all
//    probes, a confirmation each planned CPU × confirm_samples × the plan's
//    probes, over every confirmation round. Nodes confirm at one instant and
//    the sweep waits for the slowest.
//  - summarize() is a pure function of a core's samples, so each pool entry
//    is summarized once per model and its figures copied for every
//    synthetic core that draws it (exactly what summarizing the copy would
//    give); a defect core's samples are modified and summarized anew.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "collector/cluster/cluster_stats.h"
#include "probe/analysis.h"
#include "probe/confirmation.h"
#include "probe/report.h"
#include "probe/samples_codec.h"
#include "probe/stats.h"

namespace {

using namespace corenoise;

// ---- the fixture pools ------------------------------------------------------

// Every measured CpuSamples of a record_rounds file (its format is in
// tests/tools/record_rounds.cpp), optionally only those of one CPU.
std::vector<CpuSamples> load_pool(const std::string& path, int only_cpu = -1,
                                  std::size_t* rounds_out = nullptr) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::exit(1);
  }
  std::vector<CpuSamples> pool;
  std::size_t rounds = 0;
  std::int64_t last_round = -1;
  for (;;) {
    std::uint32_t header[2];
    if (!in.read(reinterpret_cast<char*>(header), sizeof header)) break;
    std::vector<std::byte> bytes(header[1]);
    if (!in.read(reinterpret_cast<char*>(bytes.data()), header[1])) {
      std::fprintf(stderr, "%s: truncated record\n", path.c_str());
      std::exit(1);
    }
    if (header[0] != last_round) ++rounds, last_round = header[0];
    CpuSamples s = decode_samples(bytes);
    if (!s.error.empty()) continue;
    if (only_cpu >= 0 && s.cpu != static_cast<unsigned>(only_cpu)) continue;
    pool.push_back(std::move(s));
  }
  if (rounds_out) *rounds_out = rounds;
  return pool;
}

// ---- noise models and defects ------------------------------------------------

void shrink_towards(std::vector<double>& values, double centre, double factor) {
  for (double& v : values) v = centre + factor * (v - centre);
}

// The pool's median of each timing, the centre the bare-metal model shrinks
// towards: its samples' spread within a round and its rounds' (and cores')
// differences in level both shrink, as on dedicated cores without a
// hypervisor. (Shrinking each entry towards its own median would keep the
// VM's level shifts between rounds at full size behind 4× tighter errors,
// and so make suspects of them.)
struct PoolCentres {
  double matmul = 0, product = 0, clock = 0, stream = 0;
};
PoolCentres pool_centres(const std::vector<CpuSamples>& pool) {
  std::vector<double> matmul, product, clock, stream;
  for (const CpuSamples& s : pool) {
    matmul.insert(matmul.end(), s.matmul_seconds.begin(), s.matmul_seconds.end());
    product.insert(product.end(), s.matmul_product_seconds.begin(), s.matmul_product_seconds.end());
    clock.insert(clock.end(), s.samples[ProbeKind::clock].begin(),
                 s.samples[ProbeKind::clock].end());
    stream.insert(stream.end(), s.samples[ProbeKind::stream].begin(),
                  s.samples[ProbeKind::stream].end());
  }
  return {stats::median(matmul), stats::median(product), stats::median(clock),
          stats::median(stream)};
}

// The bare-metal assumption (see the top of the file). An increasing affine
// map commutes with the quantiles summarize() takes, so the per-sample fast
// deciles shrink by the same factor as the products.
CpuSamples bare_metal(CpuSamples s, const PoolCentres& centre, double factor) {
  shrink_towards(s.matmul_seconds, centre.matmul, factor);
  shrink_towards(s.matmul_product_seconds, centre.product, factor);
  shrink_towards(s.samples[ProbeKind::clock], centre.clock, factor);
  shrink_towards(s.samples[ProbeKind::stream], centre.stream, factor);
  for (DetourResult& d : s.detours) {
    d.total_seconds *= factor;
    d.max_seconds *= factor;
    if (d.steal_seconds) *d.steal_seconds *= factor;
    if (d.preempted_seconds) *d.preempted_seconds *= factor;
  }
  return s;
}

// A core whose arithmetic is d slower, nothing else (a bad part, a stuck
// low P-state that the clock probe's chain would not see is not this).
CpuSamples slow_defect(CpuSamples s, double d) {
  for (double& v : s.matmul_seconds) v *= 1 + d;
  for (double& v : s.matmul_product_seconds) v *= 1 + d;
  return s;
}

// A core that loses a further share d of every detour window, as 50 µs
// detours (a periodic interrupt or a co-scheduled daemon): the shares each
// rise by d, so their spread, and the excess's uncertainty, stay the same.
CpuSamples noisy_defect(CpuSamples s, double d) {
  constexpr double kDetour = 50e-6;
  int bucket = 0;
  while (bucket + 1 < kDetourBuckets && detour_bucket_upper_seconds(bucket) <= kDetour) ++bucket;
  for (DetourResult& w : s.detours) {
    const double lost = d * w.window_seconds;
    const auto n = static_cast<std::uint64_t>(std::max(1.0, std::round(lost / kDetour)));
    w.total_seconds += lost;
    w.count += n;
    w.histogram[bucket] += n;
    w.max_seconds = std::max(w.max_seconds, lost / static_cast<double>(n));
  }
  return s;
}

// ---- statistics of the counts ---------------------------------------------

struct Proportion {
  std::size_t hits = 0, trials = 0;
  void add(bool hit) { hits += hit, ++trials; }
  double p() const { return trials ? static_cast<double>(hits) / trials : NAN; }
};

// Wilson score interval at 95 %: honest at 0 hits, where a normal interval
// collapses to [0, 0].
std::pair<double, double> wilson(const Proportion& x) {
  if (x.trials == 0) return {NAN, NAN};
  const double z = 1.959964, n = static_cast<double>(x.trials), p = x.p();
  const double centre = (p + z * z / (2 * n)) / (1 + z * z / n);
  const double half = z / (1 + z * z / n) * std::sqrt(p * (1 - p) / n + z * z / (4 * n * n));
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

struct Mean {
  double sum = 0;
  std::size_t n = 0;
  void add(double v) { sum += v, ++n; }
  double value() const { return n ? sum / static_cast<double>(n) : NAN; }
};

// ---- one sweep ---------------------------------------------------------------

enum Rule { kOld, kScreen, kConfirmed, kSameRound, kRules };
constexpr const char* kRuleNames[kRules] = {
    "old point rule (alpha 0.5, no confirmation)", "new screen only",
    "new + confirmation (independent redraw)", "new + confirmation (same round redrawn)"};

// A model's pool: each entry's (transformed) samples and their figures.
struct ModelPool {
  std::vector<CpuSamples> samples;
  std::vector<CoreFigures> figures;
};

ModelPool make_model(const std::vector<CpuSamples>& raw, bool bare) {
  ModelPool m;
  const PoolCentres centre = pool_centres(raw);
  for (const CpuSamples& s : raw) {
    m.samples.push_back(bare ? bare_metal(s, centre, 0.25) : s);
    m.figures.push_back(summarize(m.samples.back(), "default"));
  }
  return m;
}

struct Defect {
  enum Kind { none, slow, noisy, injected } kind = none;
  double size = 0;
  CoreState expected() const { return kind == slow ? CoreState::slow : CoreState::noisy; }
};

// What one rule ended with on one sweep.
struct Outcome {
  std::size_t unhealthy_elsewhere = 0;  // cores other than the defect's
  bool detected = false;                // the defect core, in the right state
  bool outlier = false;                 // any node flagged by node_outliers
  // The confirmation's cost: the slowest node's confirmation time over the
  // round's, running the plan's probes only and (for comparison) every probe.
  double cost = 0, cost_every_probe = 0;
};

// Seconds one sample of each probe takes on this machine (ProbeKind order).
using ProbeSeconds = std::array<double, 4>;
constexpr double kClockSampleSeconds = 0.0005;

ProbeSeconds probe_seconds(const std::vector<CpuSamples>& pool) {
  Mean matmul, stream, window;
  for (const CpuSamples& s : pool) {
    for (double t : s.matmul_seconds) matmul.add(t);
    for (double t : s.samples[ProbeKind::stream]) stream.add(t);
    for (const auto& d : s.detours) window.add(d.window_seconds);
  }
  ProbeSeconds t{};
  t[static_cast<int>(ProbeKind::matmul)] = matmul.value();
  t[static_cast<int>(ProbeKind::clock)] = kClockSampleSeconds;
  t[static_cast<int>(ProbeKind::detour)] = window.value();
  t[static_cast<int>(ProbeKind::stream)] = stream.value();
  return t;
}

// One sample of each of `probes` on one CPU.
double sample_seconds(const ProbeSeconds& t, const std::vector<ProbeKind>& probes) {
  double sum = 0;
  for (ProbeKind p : probes) sum += t[static_cast<int>(p)];
  return sum;
}
const std::vector<ProbeKind> kEveryProbe = ProbeSettings{}.probes;

struct Allocation {
  const char* name;
  std::size_t nodes, cores;
  int sweeps;
};

class Simulation {
 public:
  Simulation(const ModelPool& pool, const ModelPool* injected, const Allocation& a,
             const ProbeSeconds& seconds, double screen_alpha)
      : pool_(pool), injected_(injected), a_(a), seconds_(seconds) {
    screen_.alpha = screen_alpha;
    old_.alpha = 0.5;
  }

  // Draws one sweep's screening and confirmation entries (common to every
  // defect scenario of the sweep, so that they differ only by the defect).
  void draw(std::mt19937_64& rng) {
    std::uniform_int_distribution<std::size_t> pick(0, pool_.figures.size() - 1);
    screen_draw_.assign(a_.nodes, std::vector<std::size_t>(a_.cores));
    confirm_draw_.assign(kMaxConfirmationRounds, screen_draw_);
    for (std::size_t n = 0; n < a_.nodes; ++n) {
      for (std::size_t c = 0; c < a_.cores; ++c) {
        screen_draw_[n][c] = pick(rng);
        for (auto& round : confirm_draw_) round[n][c] = pick(rng);
      }
    }
    if (injected_) {
      std::uniform_int_distribution<std::size_t> inj(0, injected_->figures.size() - 1);
      injected_screen_ = inj(rng);
      for (auto& r : injected_confirm_) r = inj(rng);
    }
    clean_.clear();
  }

  // Runs every rule on the sweep drawn last, with `defect` on core
  // kDefectCpu of node defect_node(). Clean nodes are judged once per sweep
  // and reused.
  std::array<Outcome, kRules> run(const Defect& defect) {
    if (clean_.empty()) {
      clean_.resize(a_.nodes);
      for (std::size_t n = 0; n < a_.nodes; ++n) {
        clean_[n] = screen_node(n, Defect{});
        for (const CoreFigures& c : clean_[n].screen.cores)
          clean_[n].screen_unhealthy += is_unhealthy(c.state);
        if (clean_[n].plan.empty()) clean_[n].summary = summary_of(clean_[n].screen, n);
      }
    }
    const std::size_t dn = defect_node();
    Screened defect_screen;
    if (defect.kind != Defect::none) defect_screen = screen_node(dn, defect);
    auto screened = [&](std::size_t n) -> const Screened& {
      return n == dn && defect.kind != Defect::none ? defect_screen : clean_[n];
    };
    std::size_t suspects = 0;
    for (std::size_t n = 0; n < a_.nodes; ++n) suspects += screened(n).plan.suspects.size();
    rounds_ = confirmation_rounds(0.05, suspects, a_.nodes * a_.cores);
    const double alpha = confirmation_alpha(0.05, suspects, rounds_);

    std::array<Outcome, kRules> out{};
    const ProbeSettings settings;
    const double round_seconds =
        static_cast<double>(a_.cores) * settings.samples * sample_seconds(seconds_, kEveryProbe);
    double slowest = 0, slowest_every_probe = 0;  // a node's confirmation, seconds
    std::vector<NodeSummary> summaries;
    summaries.reserve(a_.nodes);
    for (std::size_t n = 0; n < a_.nodes; ++n) {
      const Screened& s = screened(n);
      const bool has_defect = n == dn && defect.kind != Defect::none;
      tally(out[kOld], s.old, has_defect, defect);
      if (s.plan.empty() && !has_defect) {
        // No suspects: every rule but the old one ends as the screen did
        // (cached with the node's summary; nothing to re-measure).
        for (int r = kScreen; r < kRules; ++r) out[r].unhealthy_elsewhere += s.screen_unhealthy;
        summaries.push_back(s.summary);
        continue;
      }
      tally(out[kScreen], s.screen, has_defect, defect);
      ModeVerdicts confirmed = s.screen;
      ModeVerdicts same_round = s.screen;
      // As confirm_mode_report does: each round re-plans from the cores
      // still unhealthy.
      double node_seconds = 0, node_seconds_every_probe = 0;
      for (std::size_t r = 0; r < rounds_; ++r) {
        const ConfirmationPlan again = plan_confirmation(confirmed);
        if (!again.empty()) {
          apply_confirmation(confirmed, confirmation_round(n, again, defect, false, r), again,
                             screen_, alpha);
          const double looks = static_cast<double>(again.cpus.size()) * settings.confirm_samples;
          node_seconds += looks * sample_seconds(seconds_, again.probes);
          node_seconds_every_probe += looks * sample_seconds(seconds_, kEveryProbe);
        }
        const ConfirmationPlan same = plan_confirmation(same_round);
        if (!same.empty()) {
          apply_confirmation(same_round, confirmation_round(n, same, defect, true, r), same,
                             screen_, alpha);
        }
      }
      slowest = std::max(slowest, node_seconds);
      slowest_every_probe = std::max(slowest_every_probe, node_seconds_every_probe);
      tally(out[kConfirmed], confirmed, has_defect, defect);
      tally(out[kSameRound], same_round, has_defect, defect);
      // The sweep's node-outlier rule, on the confirmed report as the sweep
      // reduces it.
      summaries.push_back(summary_of(std::move(confirmed), n));
    }
    bool any_outlier = false;
    for (const NodeOutlier& o : node_outliers(summaries)) any_outlier |= o.flagged;
    for (Outcome& o : out) o.outlier = any_outlier;
    out[kConfirmed].cost = slowest / round_seconds;
    out[kConfirmed].cost_every_probe = slowest_every_probe / round_seconds;
    return out;
  }

  std::size_t rounds_last() const { return rounds_; }

  std::size_t suspects_last() const {
    std::size_t s = 0;
    for (const auto& n : clean_) s += n.plan.suspects.size();
    return s;
  }

  // The clean sweep's suspects by the state they were suspected of.
  std::array<std::size_t, kCoreStates> suspect_states_last() const {
    std::array<std::size_t, kCoreStates> by_state{};
    for (const auto& n : clean_) {
      for (const CoreFigures& c : n.screen.cores) {
        if (is_unhealthy(c.state)) ++by_state[static_cast<std::size_t>(c.state)];
      }
    }
    return by_state;
  }

  void prepare_report() {
    report_.pus.clear();
    for (unsigned c = 0; c < a_.cores; ++c) {
      ProcessingUnit pu;
      pu.cpu = c, pu.core = c, pu.kind = "default";
      report_.pus.push_back(pu);
    }
  }

  static constexpr unsigned kDefectCpu = 7;
  std::size_t defect_node() const { return a_.nodes / 2; }

 private:
  struct Screened {
    ModeVerdicts old, screen;
    ConfirmationPlan plan;
    std::size_t screen_unhealthy = 0;  // of a clean node
    NodeSummary summary;               // of a clean node without suspects
  };

  NodeSummary summary_of(ModeVerdicts verdicts, std::size_t n) {
    report_.modes.assign(1, ModeReport{});
    report_.modes[0].verdicts = std::move(verdicts);
    return summarize_node(report_, static_cast<std::uint32_t>(n));
  }

  // `round`: the confirmation round (0, 1, …), or kScreening.
  static constexpr std::size_t kScreening = ~std::size_t{0};
  // `probes`: what a confirmation round runs (its other figures stay empty).
  CoreFigures figures_of(std::size_t entry, unsigned cpu, const Defect& defect, std::size_t round,
                         std::size_t node,
                         const std::vector<ProbeKind>& probes = kEveryProbe) const {
    const bool hit = defect.kind != Defect::none && node == defect_node() && cpu == kDefectCpu;
    CoreFigures f;
    if (round != kScreening) {
      // A confirmation round's longer look (confirm_samples = 3 × samples):
      // three recorded rounds of 7 samples joined, so its samples also
      // differ by those rounds' levels (more spread than one long round:
      // conservative).
      const bool injected = hit && defect.kind == Defect::injected;
      const ModelPool& from = injected ? *injected_ : pool_;
      const std::size_t first = injected ? injected_confirm_[round] : entry;
      CpuSamples joined = from.samples[first];
      for (std::size_t j = 1; j < 3; ++j) {
        const CpuSamples& more = from.samples[(first * 2654435761u + j) % from.samples.size()];
        auto append = [](auto& to, const auto& add) {
          to.insert(to.end(), add.begin(), add.end());
        };
        append(joined.matmul_seconds, more.matmul_seconds);
        append(joined.matmul_product_seconds, more.matmul_product_seconds);
        append(joined.samples[ProbeKind::clock], more.samples[ProbeKind::clock]);
        append(joined.samples[ProbeKind::stream], more.samples[ProbeKind::stream]);
        append(joined.detours, more.detours);
      }
      if (hit && defect.kind == Defect::slow) joined = slow_defect(joined, defect.size);
      if (hit && defect.kind == Defect::noisy) joined = noisy_defect(joined, defect.size);
      auto runs = [&](ProbeKind p) {
        return std::find(probes.begin(), probes.end(), p) != probes.end();
      };
      if (!runs(ProbeKind::matmul))
        joined.matmul_seconds.clear(), joined.matmul_product_seconds.clear();
      if (!runs(ProbeKind::clock)) joined.samples[ProbeKind::clock].clear();
      if (!runs(ProbeKind::stream)) joined.samples[ProbeKind::stream].clear();
      if (!runs(ProbeKind::detour)) joined.detours.clear();
      f = summarize(joined, "default");
    } else if (!hit) {
      f = pool_.figures[entry];
    } else if (defect.kind == Defect::injected) {
      f = injected_->figures[round == kScreening ? injected_screen_ : injected_confirm_[round]];
    } else {
      const CpuSamples& s = pool_.samples[entry];
      f = summarize(
          defect.kind == Defect::slow ? slow_defect(s, defect.size) : noisy_defect(s, defect.size),
          "default");
    }
    f.cpu = cpu;
    return f;
  }

  Screened screen_node(std::size_t n, const Defect& defect) const {
    std::vector<CoreFigures> cores;
    cores.reserve(a_.cores);
    for (unsigned c = 0; c < a_.cores; ++c)
      cores.push_back(figures_of(screen_draw_[n][c], c, defect, kScreening, n));
    Screened s;
    s.old = judge(cores, old_);
    s.screen = judge(std::move(cores), screen_);
    s.plan = plan_confirmation(s.screen);
    return s;
  }

  // The plan's CPUs measured again: fresh draws, or (same_round) each
  // core's screening draw once more.
  std::vector<CoreFigures> confirmation_round(std::size_t n, const ConfirmationPlan& plan,
                                              const Defect& defect, bool same_round,
                                              std::size_t r) const {
    std::vector<CoreFigures> round;
    for (unsigned cpu : plan.cpus) {
      const std::size_t entry = same_round ? screen_draw_[n][cpu] : confirm_draw_[r][n][cpu];
      round.push_back(figures_of(entry, cpu, defect, same_round ? kScreening : r, n, plan.probes));
    }
    return round;
  }

  void tally(Outcome& o, const ModeVerdicts& v, bool has_defect, const Defect& defect) const {
    for (const CoreFigures& c : v.cores) {
      if (has_defect && c.cpu == kDefectCpu) {
        o.detected = c.state == defect.expected();
      } else if (is_unhealthy(c.state)) {
        ++o.unhealthy_elsewhere;
      }
    }
  }

  const ModelPool& pool_;
  const ModelPool* injected_;
  Allocation a_;
  ProbeSeconds seconds_;
  Thresholds screen_, old_;
  std::vector<std::vector<std::size_t>> screen_draw_;
  std::vector<std::vector<std::vector<std::size_t>>> confirm_draw_;  // [round][node][cpu]
  std::size_t injected_screen_ = 0;
  std::array<std::size_t, kMaxConfirmationRounds> injected_confirm_{};
  std::size_t rounds_ = 1;
  std::vector<Screened> clean_;
  NodeReport report_;
};

constexpr double kSizes[] = {0.02, 0.05, 0.10, 0.20};

struct RuleFigures {
  Proportion false_alarm, outlier;  // clean allocation
  Mean flagged;                     // unhealthy cores per clean sweep
  Proportion slow[4], noisy[4], injected;
  Proportion false_alarm_with_defect;  // cores other than the defect's, over defect sweeps
};

std::string percent(const Proportion& p) {
  if (p.trials == 0) return "n/a";
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%%", p.p() * 100);
  return text;
}

std::string with_interval(const Proportion& p) {
  const auto [lo, hi] = wilson(p);
  char text[64];
  std::snprintf(text, sizeof text, "%.3f [%.3f, %.3f]", p.p(), lo, hi);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const int sweeps_small = argc > 1 ? std::atoi(argv[1]) : 200;
  const int sweeps_large = argc > 2 ? std::atoi(argv[2]) : 20;
  const std::uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 13;
  const double screen_alpha = argc > 4 ? std::atof(argv[4]) : ProbeSettings{}.screen_alpha;
  std::printf("screen-alpha %.3g\n", screen_alpha);
  const std::string dir = ROUNDS_FIXTURE_DIR;
  std::size_t clean_rounds = 0, injected_rounds = 0;
  const std::vector<CpuSamples> clean = load_pool(dir + "/vm-clean.bin", -1, &clean_rounds);
  const std::vector<CpuSamples> injected = load_pool(dir + "/vm-injected.bin", 1, &injected_rounds);
  if (clean.empty() || injected.empty()) {
    std::fprintf(stderr, "empty fixture pool in %s\n", dir.c_str());
    return 1;
  }
  std::printf("pools: %zu clean samples (%zu rounds), %zu injected samples of cpu 1 (%zu rounds)\n",
              clean.size(), clean_rounds, injected.size(), injected_rounds);
  {
    std::vector<double> noise;
    for (const auto& s : injected) noise.push_back(summarize(s, "default").detour->noise_ratio());
    std::vector<double> clean_noise;
    for (const auto& s : clean)
      clean_noise.push_back(summarize(s, "default").detour->noise_ratio());
    std::printf("median lost time: clean %.2f %%, injected cpu 1 %.2f %%\n",
                stats::median(clean_noise) * 100, stats::median(noise) * 100);
  }

  const Allocation allocations[] = {{"32 x 120", 32, 120, sweeps_small},
                                    {"1000 x 128", 1000, 128, sweeps_large}};
  const char* model_names[] = {"this VM", "bare metal (assumed)"};
  const ModelPool vm = make_model(clean, false), bare = make_model(clean, true);
  const ModelPool vm_injected = make_model(injected, false);
  const ProbeSeconds seconds = probe_seconds(clean);
  std::printf("one sample: matmul %.2f ms, clock %.2f ms, detour window %.2f ms, stream %.2f ms\n",
              seconds[0] * 1e3, seconds[1] * 1e3, seconds[2] * 1e3, seconds[3] * 1e3);

  struct Row {
    std::string allocation, model;
    int sweeps;
    double mean_suspects, mean_rounds;
    std::array<RuleFigures, kRules> rules;
    std::vector<double> cost, cost_every_probe;        // per clean sweep
    std::array<double, kCoreStates> suspect_states{};  // summed over clean sweeps
  };
  std::vector<Row> rows;
  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(seed);
  for (const Allocation& a : allocations) {
    for (int m = 0; m < 2; ++m) {
      const auto t0 = std::chrono::steady_clock::now();
      Simulation sim(m == 0 ? vm : bare, m == 0 ? &vm_injected : nullptr, a, seconds, screen_alpha);
      sim.prepare_report();
      Row row{a.name, model_names[m], a.sweeps, 0, 0, {}, {}, {}};
      Mean suspects, rounds;
      for (int s = 0; s < a.sweeps; ++s) {
        sim.draw(rng);
        const auto clean_out = sim.run(Defect{});
        suspects.add(static_cast<double>(sim.suspects_last()));
        row.cost.push_back(clean_out[kConfirmed].cost);
        const auto states = sim.suspect_states_last();
        for (std::size_t i = 0; i < kCoreStates; ++i) row.suspect_states[i] += states[i];
        row.cost_every_probe.push_back(clean_out[kConfirmed].cost_every_probe);
        rounds.add(static_cast<double>(sim.rounds_last()));
        for (int r = 0; r < kRules; ++r) {
          row.rules[r].false_alarm.add(clean_out[r].unhealthy_elsewhere > 0);
          row.rules[r].outlier.add(clean_out[r].outlier);
          row.rules[r].flagged.add(static_cast<double>(clean_out[r].unhealthy_elsewhere));
        }
        for (int k = 0; k < 2; ++k) {
          for (int i = 0; i < 4; ++i) {
            const auto out = sim.run(Defect{k == 0 ? Defect::slow : Defect::noisy, kSizes[i]});
            for (int r = 0; r < kRules; ++r) {
              (k == 0 ? row.rules[r].slow : row.rules[r].noisy)[i].add(out[r].detected);
              row.rules[r].false_alarm_with_defect.add(out[r].unhealthy_elsewhere > 0);
            }
          }
        }
        if (m == 0) {
          const auto out = sim.run(Defect{Defect::injected, 0});
          for (int r = 0; r < kRules; ++r) row.rules[r].injected.add(out[r].detected);
        }
      }
      row.mean_suspects = suspects.value();
      row.mean_rounds = rounds.value();
      rows.push_back(row);
      std::fprintf(stderr, "%s, %s: %d sweeps in %.1f s\n", a.name, model_names[m], a.sweeps,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::printf("\nFalse alarms on a clean allocation (95 %% Wilson intervals), seed %llu\n\n",
              static_cast<unsigned long long>(seed));
  std::printf(
      "| allocation | model | rule | sweeps | P(>=1 false alarm / sweep) | unhealthy cores / "
      "sweep | suspects / sweep | confirmation rounds | P(>=1 outlier node) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& row : rows) {
    for (int r = 0; r < kRules; ++r) {
      const RuleFigures& f = row.rules[r];
      char suspects[32] = "-", rounds[32] = "-";
      if (r != kOld) std::snprintf(suspects, sizeof suspects, "%.2f", row.mean_suspects);
      if (r >= kConfirmed) std::snprintf(rounds, sizeof rounds, "%.2f", row.mean_rounds);
      std::printf("| %s | %s | %s | %d | %s | %.2f | %s | %s | %s |\n", row.allocation.c_str(),
                  row.model.c_str(), kRuleNames[r], row.sweeps,
                  with_interval(f.false_alarm).c_str(), f.flagged.value(), suspects, rounds,
                  r == kConfirmed ? with_interval(f.outlier).c_str() : "");
    }
  }
  std::printf(
      "\nDetection power: the defect core (cpu %u of node nodes/2) ends unhealthy in the right "
      "state\n\n",
      Simulation::kDefectCpu);
  std::printf(
      "| allocation | model | rule | slow 2%% | 5%% | 10%% | 20%% | noisy 2%% | 5%% | 10%% | 20%% "
      "| injected cpu 1 (noisy) | P(>=1 false alarm elsewhere) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& row : rows) {
    for (int r = 0; r < kRules; ++r) {
      const RuleFigures& f = row.rules[r];
      std::printf("| %s | %s | %s |", row.allocation.c_str(), row.model.c_str(), kRuleNames[r]);
      for (const auto& p : f.slow) std::printf(" %s |", percent(p).c_str());
      for (const auto& p : f.noisy) std::printf(" %s |", percent(p).c_str());
      std::printf(" %s | %s |\n", percent(f.injected).c_str(),
                  with_interval(f.false_alarm_with_defect).c_str());
    }
  }
  std::printf(
      "\nCost of confirmation on a clean allocation: the slowest node's confirmation time over "
      "an isolated round's (%d samples, confirm-samples %d), per sweep\n\n",
      ProbeSettings{}.samples, ProbeSettings{}.confirm_samples);
  std::printf(
      "| allocation | model | sweeps with a confirmation | median | 95th percentile | max | "
      "median, re-running every probe | suspects: throttled / noisy / contended / slow |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const Row& row : rows) {
    std::vector<double> c = row.cost, e = row.cost_every_probe;
    std::sort(c.begin(), c.end());
    std::sort(e.begin(), e.end());
    const auto at = [](const std::vector<double>& v, double q) {
      return v.empty() ? NAN : v[std::min(v.size() - 1, static_cast<std::size_t>(q * v.size()))];
    };
    const auto with = std::count_if(c.begin(), c.end(), [](double x) { return x > 0; });
    double all = 0;
    for (double n : row.suspect_states) all += n;
    const auto share = [&](CoreState s) {
      return all > 0 ? row.suspect_states[static_cast<std::size_t>(s)] / all * 100 : 0.0;
    };
    std::printf(
        "| %s | %s | %td of %zu | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.0f / %.0f / %.0f / %.0f %% "
        "|\n",
        row.allocation.c_str(), row.model.c_str(), with, c.size(), at(c, 0.5) * 100,
        at(c, 0.95) * 100, c.empty() ? NAN : c.back() * 100, at(e, 0.5) * 100,
        share(CoreState::throttled), share(CoreState::noisy), share(CoreState::contended),
        share(CoreState::slow));
  }
  std::printf("\nsimulated in %.1f s\n", elapsed);
  return 0;
}
