// How often `corenoise job` names a clean rank, and how large an effect it
// finds, at the story's scale (3,840 ranks on 32 nodes of 120 cores) and at
// the CI's two ranks: simulated jobs whose ranks are drawn from clean jobs
// measured on this machine, put through the report's own code
// (wait_caused() of step_math.h, then build_job_report(), which runs
// reference_rank, cause_threshold and attribute). A benchmark that prints
// figures, not a test: nothing here fails on a figure.
//
//   job_naming_sim [--ranks R] [--steps S] [--jobs N] [--seed K]
//       [--ranks-per-node P] [--steps-model rank|pooled] [--per-job] [--coupled]
//       [--effects 1,2,5,10,20] [--alt-fraction F] [--alt-sd K] FILE...
//
// FILEs: `corenoise job --json` reports of clean jobs (the pool of rank
// records) and `bsp_step_app --json F --per-step` files of clean jobs (the
// pool of step times); each is told apart by its content.
// tests/bench/job_naming_sim.sh records both and runs the figures.
//
// The model, and why each choice:
//  - A step's compute time: every measured step over the pool's median step
//    (with --per-job, over its own job's median: the machine's state at the
//    time of a job, one node's rather than one core's, taken out), times the
//    pool's median step. With --steps-model rank (the default) each
//    simulated rank draws one measured (job, rank) series and bootstraps its
//    S steps from it, so a core that was slow stays slow, as a real core
//    does; with pooled every step comes from the union (iid steps: the
//    ranks' totals spread least, the optimistic bound).
//  - A step's waits: step_math.h's, one blocking collective per step, rank
//    i waiting max_k c_k - c_i plus the collective's own latency (the
//    measured last arriver's barrier time, the median over steps).
//  - A rank's record: a clean rank record drawn from the pool, scaled to the
//    simulated compute time: its CPU share of compute, its off-CPU time in
//    calls and its counters per compute second are kept, its clock as is;
//    the wait from the steps, its CPU time the wait less the off-CPU part.
//    Record and series are drawn apart, so a record's off-CPU share does not
//    slow its steps as it would in a real job; --coupled stretches the
//    rank's steps by the pool's median CPU share over the record's.
//  - The JSON reports have no fault_seconds; minor faults are priced at a
//    first-touch cost measured here the way JobSession measures it.
//  - Effects go on rank 0, every one of its steps longer by X % (spread
//    evenly: a share of its core for other-processes, a bigger problem for
//    more-work); its counters stay the clean ones, plus for other-processes
//    the time taken. Each simulated job is evaluated clean and with every
//    effect on the same draws (common random numbers).
//  - The clean ranks named are broken down by the measured series and
//    record they drew: a few whole-run slow vCPUs in the pool (this VM's
//    host) are findings in their own right, not the threshold's false
//    positives, and the breakdown tells the two apart.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "collector/job/model/attribution.h"
#include "collector/job/model/job_report.h"
#include "collector/job/model/step_math.h"

namespace {

using namespace corenoise;
using nlohmann::json;

// ---- inputs ------------------------------------------------------------------

// A clean rank as measured, per second of compute where it scales.
struct CleanRank {
  std::string source;       // "FILE rank N"
  double cpu_share = 0;     // compute_cpu / compute
  double off_in_calls = 0;  // (wait - wait_cpu) / compute
  double own_threads = 0, other_processes = 0, interrupts = 0, steal = 0, run_queue = 0;
  double minor_faults = 0, major_faults = 0, involuntary_switches = 0;
  double clock_hz = 0;
};

struct Series {
  std::string source;
  std::vector<double> relative;  // each step over the normalising median
  double level = 0;              // its median
};

struct Pool {
  std::vector<CleanRank> ranks;
  std::vector<Series> series;
  std::vector<double> all_steps;  // the union, for --steps-model pooled
  double median_step = 0;         // seconds: the pool's median step
  double latency = 0;             // seconds: a collective's own, at the last arriver
  double median_cpu_share = 0;
  int reports = 0, reports_naming = 0, step_files = 0;
};

double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void load_report(const json& doc, const std::string& path, Pool& pool) {
  ++pool.reports;
  bool named = false;
  for (const auto& r : doc.at("ranks")) {
    const double compute = r.at("compute_seconds").get<double>();
    named = named || r.at("cause").get<std::string>() != "none";
    if (compute <= 0) continue;
    const auto& k = r.at("counters");
    CleanRank c;
    c.source = path + " rank " + std::to_string(r.at("rank").get<int>());
    c.cpu_share = r.at("compute_cpu_seconds").get<double>() / compute;
    c.off_in_calls =
        std::max(0.0, r.at("wait_seconds").get<double>() - r.at("wait_cpu_seconds").get<double>()) /
        compute;
    c.own_threads = k.at("own_threads_seconds").get<double>() / compute;
    c.other_processes = k.at("other_processes_seconds").get<double>() / compute;
    c.interrupts = k.at("interrupt_seconds").get<double>() / compute;
    c.steal = k.at("steal_seconds").get<double>() / compute;
    c.run_queue = k.at("run_queue_seconds").get<double>() / compute;
    c.minor_faults = k.at("minor_faults").get<double>() / compute;
    c.major_faults = k.at("major_faults").get<double>() / compute;
    c.involuntary_switches = k.value("involuntary_switches", 0.0) / compute;
    c.clock_hz = k.at("clock_hz").get<double>();
    pool.ranks.push_back(c);
  }
  pool.reports_naming += named ? 1 : 0;
}

struct RawSeries {
  std::string source;
  std::vector<double> steps;
  std::size_t job = 0;
};

// One --per-step file: its ranks' series, its median step, and at each step
// the last arriver's barrier time (the collective's own latency).
void load_steps(const json& doc, const std::string& path, std::vector<RawSeries>& raw,
                std::vector<double>& job_medians, std::vector<double>& latencies, Pool& pool) {
  ++pool.step_files;
  const auto& ranks = doc.at("per_rank");
  std::vector<double> job_steps;
  const std::size_t first = raw.size();
  for (const auto& r : ranks) {
    raw.push_back({path + " rank " + std::to_string(r.at("rank").get<int>()),
                   r.at("compute_seconds").get<std::vector<double>>(), job_medians.size()});
    job_steps.insert(job_steps.end(), raw.back().steps.begin(), raw.back().steps.end());
  }
  const std::size_t steps = raw.size() > first ? raw[first].steps.size() : 0;
  for (std::size_t s = 0; s < steps; ++s) {
    std::size_t last = first;
    for (std::size_t i = first + 1; i < raw.size(); ++i) {
      if (raw[i].steps[s] > raw[last].steps[s]) last = i;
    }
    latencies.push_back(ranks[last - first].at("barrier_seconds").at(s).get<double>());
  }
  job_medians.push_back(median_of(job_steps));
}

Pool load_pool(const std::vector<std::string>& paths, bool per_job) {
  Pool pool;
  std::vector<RawSeries> raw;
  std::vector<double> job_medians, latencies;
  for (const auto& path : paths) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    const json doc = json::parse(in);
    if (doc.value("schema", std::string()) == "corenoise-job/1") {
      load_report(doc, path, pool);
    } else if (doc.contains("per_rank") && !doc["per_rank"].empty() &&
               doc["per_rank"][0].contains("compute_seconds")) {
      load_steps(doc, path, raw, job_medians, latencies, pool);
    } else {
      throw std::runtime_error(
          path + ": neither a corenoise job report nor a bsp_step_app --per-step file");
    }
  }
  if (pool.ranks.empty() || raw.empty()) {
    throw std::runtime_error("need at least one job report and one --per-step file");
  }
  pool.latency = median_of(latencies);
  std::vector<double> union_steps, shares;
  for (const auto& s : raw) union_steps.insert(union_steps.end(), s.steps.begin(), s.steps.end());
  pool.median_step = median_of(union_steps);
  for (const auto& s : raw) {
    Series series{s.source, {}, 0};
    const double scale = per_job ? job_medians[s.job] : pool.median_step;
    for (double c : s.steps) series.relative.push_back(c / scale);
    series.level = median_of(series.relative);
    pool.all_steps.insert(pool.all_steps.end(), series.relative.begin(), series.relative.end());
    pool.series.push_back(std::move(series));
  }
  for (const auto& c : pool.ranks) shares.push_back(c.cpu_share);
  pool.median_cpu_share = median_of(shares);
  return pool;
}

// A minor fault's cost, as JobSession prices faults (job_session.cpp):
// first touches of fresh anonymous pages, the median of five batches of 64.
double measure_fault_cost() {
  constexpr std::size_t kPages = 64;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<double> batches;
  for (int batch = 0; batch < 5; ++batch) {
    void* memory =
        ::mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return 0;
    auto* bytes = static_cast<volatile char*>(memory);
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < kPages; ++i) bytes[i * page] = 1;
    batches.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                      kPages);
    ::munmap(memory, kPages * page);
  }
  return median_of(batches);
}

// ---- one simulated job -------------------------------------------------------

enum class Effect { none, other_processes, more_work };

struct Draws {
  std::vector<std::vector<double>> steps;  // per rank, seconds
  std::vector<std::size_t> record;         // index into pool.ranks
  std::vector<long> series;                // index into pool.series; -1 when pooled
};

Draws draw_job(const Pool& pool, int ranks, int steps, bool pooled, bool coupled,
               std::mt19937_64& rng) {
  Draws d;
  std::uniform_int_distribution<std::size_t> pick_record(0, pool.ranks.size() - 1);
  std::uniform_int_distribution<std::size_t> pick_series(0, pool.series.size() - 1);
  d.steps.resize(static_cast<std::size_t>(ranks));
  for (int i = 0; i < ranks; ++i) {
    const std::size_t series = pick_series(rng);
    const std::vector<double>& from = pooled ? pool.all_steps : pool.series[series].relative;
    const std::size_t record = pick_record(rng);
    const double stretch = coupled ? pool.median_cpu_share / pool.ranks[record].cpu_share : 1.0;
    std::uniform_int_distribution<std::size_t> pick_step(0, from.size() - 1);
    auto& mine = d.steps[static_cast<std::size_t>(i)];
    mine.resize(static_cast<std::size_t>(steps));
    for (double& c : mine) c = pool.median_step * stretch * from[pick_step(rng)];
    d.record.push_back(record);
    d.series.push_back(pooled ? -1 : static_cast<long>(series));
  }
  return d;
}

// What became of rank 0 under an effect.
enum Outcome { kDetected, kNotFirst, kWrongCause, kCauseUnder, kCausedUnder, kOutcomes };
constexpr const char* kOutcomeNames[kOutcomes] = {
    "detected", "named, not first", "another cause", "unnamed: cause or excess under the threshold",
    "unnamed: the waiting it caused under the threshold"};

struct JobResult {
  int named = 0;                               // ranks with cause != none
  int worst = 0;                               // entries in worst_ranks
  std::array<int, kJobCauseCount> by_cause{};  // named ranks per cause
  int named_others = 0;                        // named, rank 0 aside
  Outcome outcome = kCauseUnder;               // rank 0's
  std::vector<std::size_t> named_ranks;        // which ranks job_report named
  // Why: the threshold's terms and the clean ranks' distance from it.
  double threshold = 0, reference_compute = 0, five_sd = 0;
  double max_excess = 0, max_cause = 0;  // over the ranks, rank 0 aside
  double caused_share = 0;               // of the ranks, rank 0 aside, whose wait caused reaches it
  int named_alt = 0, named_alt_others = 0;  // under --alt-fraction / --alt-sd
  Outcome outcome_alt = kCauseUnder;
  int mismatches = 0;  // this file's naming rule against job_report's
};

struct Alternative {
  double fraction = -1, sd = -1;  // < 0: the library's own
  bool active() const { return fraction >= 0 || sd >= 0; }
};

// cause_threshold's floor as a share of the reference compute, asked of the
// library itself (two equal ranks of 1,000 s: no spread term, 1 ms far
// below), so that the figures say what the code under test uses.
double library_fraction() {
  RankMeasures m;
  m.compute_seconds = m.compute_cpu_seconds = 1000;
  const std::vector<RankMeasures> two = {m, m};
  return cause_threshold(two, reference_rank(two)).seconds / 1000;
}

// cause_threshold's third term, recomputed so that it prints when it does
// not bind (the same median and MAD as attribution.cpp's).
double five_sd_term(const std::vector<RankMeasures>& measures) {
  std::vector<double> busy;
  for (const auto& m : measures) busy.push_back(m.compute_seconds);
  const auto mid = busy.begin() + static_cast<std::ptrdiff_t>(busy.size() / 2);
  std::nth_element(busy.begin(), mid, busy.end());
  const double median = *mid;
  for (double& v : busy) v = std::abs(v - median);
  std::nth_element(busy.begin(), mid, busy.end());
  return 5 * 1.4826 * *mid;
}

JobResult evaluate(const Pool& pool, const Draws& draws, int ranks_per_node, double fault_cost,
                   Effect effect, double x, const Alternative& alt) {
  const auto ranks = draws.steps.size();
  const auto steps = draws.steps.front().size();
  const double grow = effect == Effect::none ? 1.0 : 1.0 + x;
  auto step = [&](std::size_t i, std::size_t s) {
    return draws.steps[i][s] * (i == 0 ? grow : 1.0);
  };

  // step_math.h's reduction: per step the minimum wait (the last arriver's,
  // the latency), its rank, and the sum of the waits.
  std::vector<double> minimum(steps, pool.latency), sum(steps), maximum(steps, 0);
  std::vector<int> last_rank(steps, 0);
  for (std::size_t s = 0; s < steps; ++s) {
    double total = 0;
    for (std::size_t i = 0; i < ranks; ++i) {
      const double c = step(i, s);
      total += c;
      if (c > maximum[s]) maximum[s] = c, last_rank[s] = static_cast<int>(i);
    }
    sum[s] = static_cast<double>(ranks) * (maximum[s] + pool.latency) - total;
  }

  std::vector<RankRecord> records(ranks);
  std::vector<RankMeasures> measures(ranks);
  for (std::size_t i = 0; i < ranks; ++i) {
    const CleanRank& c = pool.ranks[draws.record[i]];
    double clean = 0, wait = 0;
    for (std::size_t s = 0; s < steps; ++s) {
      clean += draws.steps[i][s];
      wait += maximum[s] + pool.latency - step(i, s);
    }
    RankMeasures m;
    m.compute_seconds = clean;
    m.compute_cpu_seconds = clean * c.cpu_share;
    m.wait_seconds = wait;
    m.wait_cpu_seconds = wait - std::min(wait, clean * c.off_in_calls);
    m.own_threads_seconds = clean * c.own_threads;
    m.other_processes_seconds = clean * c.other_processes;
    m.interrupt_seconds = clean * c.interrupts;
    m.steal_seconds = clean * c.steal;
    m.run_queue_seconds = clean * c.run_queue;
    m.minor_faults = clean * c.minor_faults;
    m.major_faults = clean * c.major_faults;
    m.involuntary_switches = clean * c.involuntary_switches;
    m.fault_seconds = m.minor_faults * fault_cost;
    m.clock_hz = c.clock_hz;
    if (i == 0 && effect == Effect::other_processes) {
      m.compute_seconds += x * clean;  // off its CPU: compute_cpu unchanged
      m.other_processes_seconds += x * clean;
    } else if (i == 0 && effect == Effect::more_work) {
      m.compute_seconds *= grow;
      m.compute_cpu_seconds *= grow;
    }
    m.off_cpu_seconds = off_cpu(m);
    m.steps = static_cast<double>(steps);
    m.calls = static_cast<double>(steps);
    m.elapsed_seconds = m.compute_seconds + m.wait_seconds;
    m.wait_caused_seconds =
        wait_caused(static_cast<int>(i), static_cast<int>(ranks), minimum, last_rank, sum);
    measures[i] = m;
    RankRecord& r = records[i];
    r.rank = static_cast<int>(i);
    r.host = "node" + std::to_string(i / static_cast<std::size_t>(ranks_per_node));
    r.cpus = {static_cast<unsigned>(i % static_cast<std::size_t>(ranks_per_node))};
    r.pid = 1000 + static_cast<long>(i);
    r.measures = m;
  }

  JobFacts facts;
  facts.version = "sim";
  facts.program = "job_naming_sim";
  facts.family = "sim";
  facts.ranks_total = static_cast<int>(ranks);
  facts.steps = static_cast<int>(steps);
  const JobReport report = build_job_report(facts, records);

  JobResult result;
  const std::string target = effect == Effect::other_processes ? "other-processes"
                             : effect == Effect::more_work     ? "more-work"
                                                               : "";
  for (const JobRank& r : report.ranks) {
    if (!r.attribution.main_cause) continue;
    ++result.named;
    result.named_ranks.push_back(static_cast<std::size_t>(r.rank));
    if (r.rank != 0) ++result.named_others;
    ++result.by_cause[index_of(*r.attribution.main_cause)];
  }
  result.worst = static_cast<int>(report.worst_ranks.size());

  const RankMeasures reference = reference_rank(measures);
  result.threshold = report.cause_threshold_seconds;
  result.reference_compute = reference.compute_seconds;
  result.five_sd = ranks >= 8 ? five_sd_term(measures) : 0;

  // job_report's naming rule, at a threshold of our choosing: attribute()
  // at it, no cause without that much waiting caused, and worst_ranks
  // ordered by the waiting caused (ties: the lower rank).
  auto name_at = [&](const CauseThresholds& threshold, bool diagnose, int* named, int* others,
                     Outcome* outcome) {
    double first_caused = -1;
    std::size_t first = ranks;
    *outcome = kCauseUnder;
    for (std::size_t i = 0; i < ranks; ++i) {
      RankAttribution a = attribute(measures[i], reference, threshold);
      const bool cause_found = a.main_cause.has_value();
      if (measures[i].wait_caused_seconds < threshold.seconds) a.main_cause.reset();
      if (diagnose && i != 0) {
        result.max_excess = std::max(result.max_excess, a.excess_seconds);
        result.max_cause =
            std::max(result.max_cause, *std::max_element(a.causes.begin(), a.causes.end()));
        result.caused_share += measures[i].wait_caused_seconds >= threshold.seconds ? 1.0 : 0.0;
      }
      if (i == 0) {
        *outcome = !cause_found                         ? kCauseUnder
                   : !a.main_cause                      ? kCausedUnder
                   : to_string(*a.main_cause) != target ? kWrongCause
                                                        : kNotFirst;
      }
      if (!a.main_cause) continue;
      ++*named;
      if (i != 0) ++*others;
      if (measures[i].wait_caused_seconds > first_caused && measures[i].wait_caused_seconds > 0) {
        first_caused = measures[i].wait_caused_seconds;
        first = i;
      }
    }
    if (first == 0 && *outcome == kNotFirst) *outcome = kDetected;
  };
  int own_named = 0, own_others = 0;
  name_at({report.cause_threshold_seconds, report.cause_threshold_on_cpu_seconds}, true, &own_named,
          &own_others, &result.outcome);
  result.caused_share /= static_cast<double>(ranks > 1 ? ranks - 1 : 1);
  const auto& first = report.ranks[0].attribution.main_cause;
  const bool report_detected = !report.worst_ranks.empty() && report.worst_ranks[0] == 0 && first &&
                               to_string(*first) == target;
  result.mismatches =
      own_named != result.named || (result.outcome == kDetected) != report_detected ? 1 : 0;
  if (alt.active()) {
    double threshold = std::max(
        1e-3, (alt.fraction >= 0 ? alt.fraction : library_fraction()) * reference.compute_seconds);
    if (ranks >= 8)
      threshold = std::max(threshold, result.five_sd / 5 * (alt.sd >= 0 ? alt.sd : 5));
    // One threshold for every cause, as before issue 35.
    name_at(CauseThresholds::same(threshold), false, &result.named_alt, &result.named_alt_others,
            &result.outcome_alt);
  }
  return result;
}

// ---- figures -------------------------------------------------------------------

// The one-sided 95 % upper bound of a proportion, k of n (Clopper-Pearson):
// the p at which k or fewer hits has probability 5 %; 3/n at k = 0.
double upper_bound(int k, int n) {
  if (n == 0) return NAN;
  if (k >= n) return 1.0;
  auto cdf = [&](double p) {
    double total = 0;
    for (int i = 0; i <= k; ++i) {
      total += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) +
                        i * std::log(p) + (n - i) * std::log1p(-p));
    }
    return total;
  };
  double lo = static_cast<double>(k) / n, hi = 1.0;
  for (int i = 0; i < 80; ++i) {
    const double mid = (lo + hi) / 2;
    (cdf(mid) > 0.05 ? lo : hi) = mid;
  }
  return hi;
}

std::string share_text(int k, int n) {
  char text[96];
  std::snprintf(text, sizeof(text), "%d/%d = %.1f %% (<= %.1f %%)", k, n, 100.0 * k / n,
                100.0 * upper_bound(k, n));
  return text;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(
      std::min<double>(static_cast<double>(v.size() - 1), std::floor(q * v.size())))];
}

struct Options {
  int ranks = 3840, steps = 200, jobs = 200, ranks_per_node = 120;
  std::uint64_t seed = 1;
  bool pooled = false, per_job = false, coupled = false;
  std::vector<double> effects = {0.01, 0.02, 0.05, 0.10, 0.20};
  Alternative alt;
  std::vector<std::string> files;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(
      stderr,
      "job_naming_sim: %s\nusage: job_naming_sim [--ranks R] [--steps S] [--jobs N] [--seed K]\n"
      "    [--ranks-per-node P] [--steps-model rank|pooled] [--per-job] [--coupled]\n"
      "    [--effects 1,2,5,10,20] [--alt-fraction F] [--alt-sd K] FILE...\n",
      why.c_str());
  std::exit(1);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value for " + arg);
      return argv[++i];
    };
    if (arg == "--ranks")
      o.ranks = std::atoi(value().c_str());
    else if (arg == "--steps")
      o.steps = std::atoi(value().c_str());
    else if (arg == "--jobs")
      o.jobs = std::atoi(value().c_str());
    else if (arg == "--seed")
      o.seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (arg == "--ranks-per-node")
      o.ranks_per_node = std::atoi(value().c_str());
    else if (arg == "--per-job")
      o.per_job = true;
    else if (arg == "--coupled")
      o.coupled = true;
    else if (arg == "--alt-fraction")
      o.alt.fraction = std::atof(value().c_str());
    else if (arg == "--alt-sd")
      o.alt.sd = std::atof(value().c_str());
    else if (arg == "--steps-model") {
      const std::string v = value();
      if (v != "rank" && v != "pooled") usage("--steps-model: rank or pooled");
      o.pooled = v == "pooled";
    } else if (arg == "--effects") {
      o.effects.clear();
      std::stringstream list(value());
      for (std::string item; std::getline(list, item, ',');)
        o.effects.push_back(std::atof(item.c_str()) / 100);
    } else if (!arg.empty() && arg[0] == '-') {
      usage("unknown option " + arg);
    } else {
      o.files.push_back(arg);
    }
  }
  if (o.ranks < 2 || o.steps < 1 || o.jobs < 1 || o.ranks_per_node < 1) usage("bad sizes");
  if (o.files.empty()) usage("no input files");
  return o;
}

struct Tally {
  int named_jobs = 0, named = 0, worst = 0, others = 0, false_jobs = 0;
  std::array<int, kJobCauseCount> by_cause{}, cause_jobs{};
  std::array<int, kOutcomes> outcomes{}, outcomes_alt{};
  int alt_named_jobs = 0, alt_named = 0, alt_others = 0, mismatches = 0;
  std::vector<double> threshold, five_sd, max_excess, max_cause, caused_share;
  std::map<long, int> named_by_series;
  std::map<std::size_t, int> named_by_record;
};

void print_sources(const Pool& pool, const Tally& clean, int jobs) {
  std::vector<std::pair<int, long>> by_series;
  for (const auto& [series, count] : clean.named_by_series) by_series.push_back({count, series});
  std::sort(by_series.rbegin(), by_series.rend());
  std::vector<std::pair<int, std::size_t>> by_record;
  for (const auto& [record, count] : clean.named_by_record) by_record.push_back({count, record});
  std::sort(by_record.rbegin(), by_record.rend());
  if (by_series.empty() && by_record.empty()) return;
  std::printf(
      "\nthe clean ranks named, by the measured step series they drew (level: its median step over "
      "the pool's):\n");
  for (std::size_t i = 0; i < std::min<std::size_t>(4, by_series.size()); ++i) {
    const auto [count, series] = by_series[i];
    if (series < 0) {
      std::printf("  pooled steps: %.2f per job\n", static_cast<double>(count) / jobs);
      continue;
    }
    const Series& s = pool.series[static_cast<std::size_t>(series)];
    std::printf("  %s (level %.3f): %.2f per job (%.0f %% of those named)\n", s.source.c_str(),
                s.level, static_cast<double>(count) / jobs,
                100.0 * count / std::max(1, clean.named));
  }
  std::printf("and by the record they drew:\n");
  for (std::size_t i = 0; i < std::min<std::size_t>(4, by_record.size()); ++i) {
    const auto [count, record] = by_record[i];
    const CleanRank& c = pool.ranks[record];
    std::printf("  %s (CPU share %.1f %%, other processes %.2f %%, clock %.3f GHz): %.2f per job\n",
                c.source.c_str(), 100 * c.cpu_share, 100 * c.other_processes, c.clock_hz * 1e-9,
                static_cast<double>(count) / jobs);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  Pool pool;
  try {
    pool = load_pool(o.files, o.per_job);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "job_naming_sim: %s\n", e.what());
    return 1;
  }
  const double fault_cost = measure_fault_cost();

  // The inputs, so that a reader can judge the pool.
  std::vector<double> cpu_share, off_share, other_share, clock, levels, step_sd;
  for (const auto& c : pool.ranks) {
    cpu_share.push_back(c.cpu_share);
    off_share.push_back(c.off_in_calls);
    other_share.push_back(c.other_processes);
    clock.push_back(c.clock_hz);
  }
  for (const auto& s : pool.series) {
    levels.push_back(s.level);
    std::vector<double> dev;
    for (double c : s.relative) dev.push_back(std::abs(c - s.level));
    step_sd.push_back(1.4826 * median_of(dev) / s.level);
  }
  auto range = [](const std::vector<double>& v, double scale, const char* unit) {
    char text[128];
    std::snprintf(text, sizeof(text), "median %.3g%s [%.3g, %.3g]", median_of(v) * scale, unit,
                  *std::min_element(v.begin(), v.end()) * scale,
                  *std::max_element(v.begin(), v.end()) * scale);
    return std::string(text);
  };
  std::printf("## job_naming_sim: %d ranks (%d per node) x %d steps, %d jobs, seed %llu\n", o.ranks,
              o.ranks_per_node, o.steps, o.jobs, static_cast<unsigned long long>(o.seed));
  std::printf(
      "steps: %s, normalised to %s%s\n\n",
      o.pooled ? "pooled (iid from the union)" : "one measured series per rank, bootstrapped",
      o.per_job ? "each job's median" : "the pool's median",
      o.coupled ? "; coupled to the record's CPU share" : "");
  std::printf(
      "inputs: %zu clean rank records from %d reports (%d of those reports named a rank); "
      "%zu step series from %d --per-step files\n",
      pool.ranks.size(), pool.reports, pool.reports_naming, pool.series.size(), pool.step_files);
  std::printf("  step: pool median %.3f ms; robust sd within a series %s; series levels %s\n",
              pool.median_step * 1e3, range(step_sd, 100, " %").c_str(),
              range(levels, 1, "").c_str());
  std::printf("  collective latency at the last arriver %.1f us; minor fault %.0f ns\n",
              pool.latency * 1e6, fault_cost * 1e9);
  std::printf(
      "  records: CPU share of compute %s; off-CPU in calls per compute s %s;\n"
      "    other processes per compute s %s; clock %s\n\n",
      range(cpu_share, 100, " %").c_str(), range(off_share, 100, " %").c_str(),
      range(other_share, 100, " %").c_str(), range(clock, 1e-9, " GHz").c_str());

  std::mt19937_64 rng(o.seed);
  std::vector<Tally> tallies(1 + 2 * o.effects.size());
  const auto t0 = std::chrono::steady_clock::now();
  for (int job = 0; job < o.jobs; ++job) {
    const Draws draws = draw_job(pool, o.ranks, o.steps, o.pooled, o.coupled, rng);
    for (std::size_t e = 0; e < tallies.size(); ++e) {
      const Effect effect = e == 0             ? Effect::none
                            : (e - 1) % 2 == 0 ? Effect::other_processes
                                               : Effect::more_work;
      const double x = e == 0 ? 0 : o.effects[(e - 1) / 2];
      const JobResult r = evaluate(pool, draws, o.ranks_per_node, fault_cost, effect, x, o.alt);
      Tally& t = tallies[e];
      t.named_jobs += r.named > 0 ? 1 : 0;
      t.named += r.named;
      t.worst += r.worst;
      t.others += r.named_others;
      t.false_jobs += r.named_others > 0 ? 1 : 0;
      for (std::size_t c = 0; c < kJobCauseCount; ++c) {
        t.by_cause[c] += r.by_cause[c];
        t.cause_jobs[c] += r.by_cause[c] > 0 ? 1 : 0;
      }
      ++t.outcomes[r.outcome];
      ++t.outcomes_alt[r.outcome_alt];
      t.alt_named_jobs += r.named_alt > 0 ? 1 : 0;
      t.alt_named += r.named_alt;
      t.alt_others += r.named_alt_others;
      t.mismatches += r.mismatches;
      t.threshold.push_back(r.threshold / r.reference_compute);
      t.five_sd.push_back(r.five_sd / r.reference_compute);
      t.max_excess.push_back(r.max_excess / r.threshold);
      t.max_cause.push_back(r.max_cause / r.threshold);
      t.caused_share.push_back(r.caused_share);
      if (e == 0) {
        for (std::size_t i : r.named_ranks) {
          ++t.named_by_series[draws.series[i]];
          ++t.named_by_record[draws.record[i]];
        }
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int n = o.jobs;

  const Tally& clean = tallies[0];
  std::printf("### clean jobs (no effect); shares with their one-sided 95 %% upper bound\n\n");
  std::printf("named ranks per job: mean %.3f; worst_ranks entries per job: mean %.3f\n",
              static_cast<double>(clean.named) / n, static_cast<double>(clean.worst) / n);
  std::printf("jobs naming any rank: %s\n\n", share_text(clean.named_jobs, n).c_str());
  std::printf("| cause | named ranks per job | jobs naming one |\n|---|---|---|\n");
  for (std::size_t c = 0; c < kJobCauseCount; ++c) {
    std::printf("| %s | %.3f | %s |\n", std::string(to_string(kJobCauses[c])).c_str(),
                static_cast<double>(clean.by_cause[c]) / n,
                share_text(clean.cause_jobs[c], n).c_str());
  }
  std::printf("\nthe threshold's terms, over the jobs (median [5th, 95th percentile]):\n");
  std::printf(
      "  threshold / reference compute: %.2f %% [%.2f, %.2f]  (the floor %.3g %%; 1 ms is %.2f "
      "%%)\n",
      100 * quantile(clean.threshold, 0.5), 100 * quantile(clean.threshold, 0.05),
      100 * quantile(clean.threshold, 0.95), 100 * library_fraction(),
      100 * 1e-3 / (pool.median_step * o.steps));
  if (o.ranks >= 8) {
    std::printf("  5 robust sd / reference compute: %.2f %% [%.2f, %.2f]\n",
                100 * quantile(clean.five_sd, 0.5), 100 * quantile(clean.five_sd, 0.05),
                100 * quantile(clean.five_sd, 0.95));
  }
  std::printf("  largest clean excess / threshold: %.2f [%.2f, %.2f]\n",
              quantile(clean.max_excess, 0.5), quantile(clean.max_excess, 0.05),
              quantile(clean.max_excess, 0.95));
  std::printf("  largest clean cause / threshold: %.2f [%.2f, %.2f]\n",
              quantile(clean.max_cause, 0.5), quantile(clean.max_cause, 0.05),
              quantile(clean.max_cause, 0.95));
  std::printf("  clean ranks whose wait caused reaches the threshold: %.2f %% [%.2f, %.2f]\n",
              100 * quantile(clean.caused_share, 0.5), 100 * quantile(clean.caused_share, 0.05),
              100 * quantile(clean.caused_share, 0.95));
  print_sources(pool, clean, n);

  auto outcome_text = [n](const std::array<int, kOutcomes>& outcomes) {
    std::string text;
    for (int k = 1; k < kOutcomes; ++k) {
      if (outcomes[k] == 0) continue;
      char part[128];
      std::snprintf(part, sizeof(part), "%s%s %.0f %%", text.empty() ? "" : "; ", kOutcomeNames[k],
                    100.0 * outcomes[k] / n);
      text += part;
    }
    return text.empty() ? std::string("-") : text;
  };
  std::printf(
      "\n### rank 0 given an effect: detected = first in worst_ranks with the right cause\n\n");
  std::printf(
      "| effect | X | detected | otherwise | false named others per job | jobs with a false one "
      "|\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (std::size_t e = 1; e < tallies.size(); ++e) {
    const Tally& t = tallies[e];
    std::printf("| %s | %.0f %% | %s | %s | %.3f | %s |\n",
                (e - 1) % 2 == 0 ? "other-processes" : "more-work", 100 * o.effects[(e - 1) / 2],
                share_text(t.outcomes[kDetected], n).c_str(), outcome_text(t.outcomes).c_str(),
                static_cast<double>(t.others) / n, share_text(t.false_jobs, n).c_str());
  }
  if (o.alt.active()) {
    char sd_term[48] = "";
    if (o.ranks >= 8)
      std::snprintf(sd_term, sizeof(sd_term), ", %.3g robust sd", o.alt.sd >= 0 ? o.alt.sd : 5.0);
    std::printf(
        "\n### the same at the alternative threshold: max(1 ms, %.3g x reference compute%s)\n\n",
        o.alt.fraction >= 0 ? o.alt.fraction : library_fraction(), sd_term);
    std::printf("clean jobs naming any rank: %s; named per job %.3f\n\n",
                share_text(clean.alt_named_jobs, n).c_str(),
                static_cast<double>(clean.alt_named) / n);
    std::printf(
        "| effect | X | detected | otherwise | false named others per job "
        "|\n|---|---|---|---|---|\n");
    for (std::size_t e = 1; e < tallies.size(); ++e) {
      const Tally& t = tallies[e];
      std::printf("| %s | %.0f %% | %s | %s | %.3f |\n",
                  (e - 1) % 2 == 0 ? "other-processes" : "more-work", 100 * o.effects[(e - 1) / 2],
                  share_text(t.outcomes_alt[kDetected], n).c_str(),
                  outcome_text(t.outcomes_alt).c_str(), static_cast<double>(t.alt_others) / n);
    }
  }
  int mismatches = 0;
  for (const auto& t : tallies) mismatches += t.mismatches;
  std::printf(
      "\n(%d simulated reports in %.1f s; this file's naming rule disagreed with job_report's in "
      "%d)\n",
      n * static_cast<int>(tallies.size()), seconds, mismatches);
  return 0;
}
