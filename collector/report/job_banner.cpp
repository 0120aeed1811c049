#include "collector/report/job_banner.h"

#include <algorithm>
#include <array>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "collector/report/call_site_text.h"
#include "collector/report/cause_advice.h"
#include "collector/report/rank_advice.h"
#include "probe/cpu_list.h"
#include "probe/units.h"
#include "probe/verdict_text.h"

namespace corenoise {

namespace {

std::string plural(std::size_t count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

// "thread omp-worker 1.2 s", "IRQ 36 (virtio1-req.0) on cpu 1: 52000
// times, 50000 more than the node's other CPUs".
std::string culprit_text(const JobCulprit& c) {
  std::ostringstream out;
  switch (c.kind) {
    case JobCulprit::Kind::thread:
    case JobCulprit::Kind::process:
      out << (c.kind == JobCulprit::Kind::thread ? "thread " : "process ") << c.name << " "
          << seconds_text(c.seconds);
      break;
    case JobCulprit::Kind::irq:
    case JobCulprit::Kind::softirq:
      out << (c.kind == JobCulprit::Kind::irq ? "IRQ " : "softirq ") << c.line
          << (c.name.empty() ? "" : " (" + c.name + ")") << " on cpu " << c.cpu << ": "
          << static_cast<long long>(c.count) << " times, " << static_cast<long long>(c.excess)
          << " more than the node's other CPUs";
      break;
    case JobCulprit::Kind::traced:
      out << c.name << " on cpu " << c.cpu << " (traced): " << seconds_text(c.seconds) << ", "
          << percent_text(c.share) << " of the CPU";
      break;
  }
  return out.str();
}

std::string pattern_text(const LatenessPattern& p);

// A live epoch's report: which epoch, how the job ended if it did, and
// who was late in the epoch's own window (live_window.h).
void print_live(std::ostringstream& out, const JobFacts::Live& live, int ranks) {
  constexpr std::size_t kShown = 3;
  out << "  LIVE: the job so far, epoch " << live.epoch << " (every "
      << seconds_text(live.interval_seconds) << ")";
  if (live.ended_without_finalize(ranks)) {
    out << "; the job ended after it without MPI_Finalize (" << live.ranks_finalized << " of "
        << ranks << " ranks reached it)";
  } else if (live.rebuilt) {
    out << "; every rank reached MPI_Finalize after it, but the final reduction did not "
           "complete";
  }
  if (!live.window_judged) {
    out << "\n  LIVE: its window is not judged (the step bins merged since the last epoch)\n";
    return;
  }
  out << "\n  LIVE: in its window, " << seconds_text(live.window_start_seconds) << " to "
      << seconds_text(live.window_end_seconds) << " into the job: ";
  if (live.window.empty()) out << "no rank late";
  for (std::size_t i = 0; i < live.window.size() && i < kShown; ++i) {
    const JobFacts::Live::WindowRank& r = live.window[i];
    out << (i ? "; " : "") << "rank " << r.rank << " made the others wait "
        << seconds_text(r.wait_caused_seconds) << " (" << to_string(r.cause)
        << (r.pattern ? ", " + pattern_text(*r.pattern) : "") << ")";
  }
  if (live.window.size() > kShown) out << "; " << live.window.size() - kShown << " more";
  out << "\n";
}

void print_totals(std::ostringstream& out, const JobReport& report) {
  out << "corenoise job: " << plural(report.ranks_reported, "rank", "ranks");
  if (report.facts.ranks_total != static_cast<int>(report.ranks_reported))
    out << " of " << report.facts.ranks_total;
  out << " on " << plural(report.nodes, "node", "nodes") << ", " << report.facts.steps << " steps, "
      << seconds_text(report.elapsed_seconds) << "\n";
  if (report.facts.live) print_live(out, *report.facts.live, report.facts.ranks_total);
  if (!report.complete()) out << "  INCOMPLETE: " << report.facts.incomplete_reason << "\n";
  if (!report.facts.mpi_library.empty()) {
    out << "  MPI: " << report.facts.mpi_library;
    if (!report.facts.mpi_library_version.empty())
      out << " (" << report.facts.mpi_library_version << ")";
    out << "\n";
  }
  const double busy = report.wait_seconds + report.compute_seconds;
  const double share = busy > 0 ? report.wait_seconds / busy : 0;
  out << "  the ranks waited " << seconds_text(report.wait_seconds) << " in MPI ("
      << percent_text(share, 0)
      << " of their time): " << seconds_text(report.collective_wait_seconds())
      << " at collectives, " << seconds_text(report.exchange_wait_seconds) << " in exchanges\n";
  if (report.wait_caused_seconds > 0) {
    out << "  " << seconds_text(report.wait_caused_seconds)
        << " of it for late ranks: " << seconds_text(report.collective_wait_caused_seconds())
        << " at collectives, " << seconds_text(report.exchange_wait_caused_seconds)
        << " in exchanges\n";
  }
}

// The causes with more than `least` seconds in `seconds`, the most first.
std::vector<std::pair<double, std::string>> ranked_causes(
    const std::array<double, kJobCauseCount>& seconds, double least) {
  std::vector<std::pair<double, std::string>> causes;
  for (std::size_t i = 0; i < kJobCauseCount; ++i) {
    if (seconds[i] > least) causes.push_back({seconds[i], std::string(to_string(kJobCauses[i]))});
  }
  std::sort(causes.rbegin(), causes.rend());
  return causes;
}

// The first three of `causes` with their seconds and their share of
// `whole` to `decimals`, after a colon.
void print_ranked(std::ostringstream& out,
                  const std::vector<std::pair<double, std::string>>& causes, double whole,
                  int decimals) {
  out << ":";
  for (std::size_t i = 0; i < std::min<std::size_t>(3, causes.size()); ++i) {
    out << (i == 0 ? " " : ", ") << causes[i].second << " " << seconds_text(causes[i].first) << " ("
        << percent_text(whole > 0 ? causes[i].first / whole : 0.0, decimals) << ")";
  }
  out << "\n";
}

void print_causes(std::ostringstream& out, const JobReport& report) {
  const auto causes = ranked_causes(report.causes, 0);
  if (causes.empty()) {
    out << "  no rank was late by more than the ranks' own spread: no cause to name\n";
    return;
  }
  out << "  the waiting, by cause of the lateness";
  print_ranked(out, causes, report.wait_caused_seconds, 0);
  // What fixing each cause would save of the job's time (job_report.h's
  // savings): what would not show as 0.1 % of the job is not worth a word.
  const double elapsed = report.elapsed_seconds;
  const auto savings = ranked_causes(report.savings, std::max(0.0, 0.001 * elapsed));
  if (savings.empty()) return;
  out << "  fixing each cause would save, of the job's " << seconds_text(elapsed);
  print_ranked(out, savings, elapsed, 1);
}

std::string steps_text(long first, long last) {
  return first == last ? "step " + std::to_string(first)
                       : "steps " + std::to_string(first) + "-" + std::to_string(last);
}

// When a late rank was late: "chronic since step 1201 (180.0 s in), late
// in 70% of the job's steps" or "late in 1 burst: steps 1201-2400
// (180.0 s-360.0 s in), late in 30% of the job's steps".
std::string pattern_text(const LatenessPattern& p) {
  std::ostringstream out;
  const std::string share = ", late in " + percent_text(p.late_share, 0) + " of the job's steps";
  const auto stretch = [](const LateStretch& s) {
    return steps_text(s.first_step, s.last_step) + " (" + seconds_text(s.start_seconds) + "-" +
           seconds_text(s.end_seconds) + " in)";
  };
  if (p.kind == LatenessPattern::Kind::chronic) {
    if (p.onset_step <= 1) {
      out << "chronic from the start" << share;
    } else {
      out << "chronic since step " << p.onset_step << " (" << seconds_text(p.onset_seconds)
          << " in)" << share;
    }
    const std::size_t total = p.stretches.size() + p.stretches_unlisted;
    if (total > 1) out << "; " << plural(total - 1, "burst", "bursts") << " before";
    return out.str();
  }
  const std::size_t count = p.stretches.size() + p.stretches_unlisted;
  out << "late in " << plural(count, "burst", "bursts");
  if (!p.stretches.empty()) out << ": " << stretch(p.stretches.back());
  if (count > 1) out << " (the latest)";
  out << share;
  return out.str();
}

// What fixing a rank or a cause would save: ", fixing it would save 41 s
// of the job's 610 s (6.7%)"; nothing where it would save nothing.
std::string saving_text(double saving, double elapsed) {
  if (!(saving > 0)) return "";
  return ", fixing it would save " + seconds_text(saving) + " of the job's " +
         seconds_text(elapsed) + " (" + percent_text(elapsed > 0 ? saving / elapsed : 0.0, 1) + ")";
}

// A rank's line, its daemon's verdicts and the fix, each fix once (the
// same cause may read differently where a rank names a process).
void print_rank(std::ostringstream& out, const JobRank& r, double elapsed,
                std::set<std::string>& advised) {
  const JobCause cause = *r.attribution.main_cause;
  out << "    rank " << r.rank << " on " << r.host << " cpu " << format_cpu_list(r.cpus)
      << ": caused " << seconds_text(r.measures.wait_caused_seconds) << " of waiting"
      << saving_text(r.saving_seconds, elapsed) << "; " << cause_words(cause) << " ("
      << seconds_text(r.attribution.causes[index_of(cause)]) << " over the job";
  for (const JobCulprit& c : r.culprits) out << "; " << culprit_text(c);
  out << ")\n";
  if (r.pattern) out << "      " << pattern_text(*r.pattern) << "\n";
  if (r.daemon) {
    for (const auto& [cpu, verdict] : *r.daemon) {
      out << "      corenoised on cpu " << cpu << ": " << verdict.state;
      if (const std::string cause = cause_text(verdict.cause); !cause.empty())
        out << " (" << cause << ")";
      out << "\n";
    }
  }
  if (std::string fix = rank_advice(r); advised.insert(fix).second) {
    out << "      fix: " << fix << "\n";
  }
}

void print_call_sites(std::ostringstream& out, const JobReport& report) {
  const auto& sites = report.call_sites;
  for (std::size_t i = 0; i < std::min<std::size_t>(3, sites.size()); ++i) {
    if (i == 0) out << "  wait per call site:\n";
    out << "    " << sites[i].call << " from " << readable_site(sites[i].site) << ": "
        << seconds_text(sites[i].wait_seconds) << " over all ranks, "
        << static_cast<long>(sites[i].calls) << " calls per rank, longest "
        << seconds_text(sites[i].wait_max_seconds) << "\n";
  }
}

void print_findings(std::ostringstream& out, const JobReport& report) {
  if (report.findings.empty()) return;
  out << "  configuration findings:\n";
  for (const JobFinding& f : report.findings) {
    out << "    " << f.kind << ": " << f.evidence << "\n";
    out << "      fix: " << f.fix << "\n";
  }
}

// Each phase in a line: its waiting, and its late ranks or none.
void print_phases(std::ostringstream& out, const JobReport& report) {
  for (const JobPhase& p : report.phases) {
    out << "  " << p.name << " (" << steps_text(p.first_step, p.last_step) << "): the ranks waited "
        << seconds_text(p.wait_seconds);
    if (p.late_ranks.empty()) {
      out << "; no rank late beyond the ranks' own spread\n";
      continue;
    }
    out << ", " << seconds_text(p.wait_caused_seconds) << " of it for ";
    for (std::size_t i = 0; i < std::min<std::size_t>(3, p.late_ranks.size()); ++i) {
      const JobPhaseRank& r = p.late_ranks[i];
      out << (i == 0 ? "" : ", ") << "rank " << r.rank << " (" << to_string(r.cause) << " "
          << seconds_text(r.cause_seconds) << ")";
    }
    if (p.late_ranks.size() > 3) out << " and " << p.late_ranks.size() - 3 << " more";
    out << "\n";
  }
}

void print_worst_steps(std::ostringstream& out, const JobReport& report) {
  for (std::size_t i = 0; i < std::min<std::size_t>(3, report.worst_steps.size()); ++i) {
    const JobStep& s = report.worst_steps[i];
    if (i == 0) out << "  worst steps:\n";
    out << "    " << steps_text(s.first_step, s.first_step + s.steps - 1) << ": "
        << seconds_text(s.wait_caused_seconds) << " of waiting for rank " << s.last_rank;
    if (s.cause)
      out << " (" << to_string(*s.cause) << (s.phase.empty() ? "" : " in the " + s.phase) << ")";
    if (!s.call.empty()) out << ", at " << s.call << " from " << readable_site(s.site);
    out << "\n";
  }
}

}  // namespace

std::string job_banner(const JobReport& report, int worst_ranks) {
  std::ostringstream out;
  print_totals(out, report);
  print_causes(out, report);
  std::set<std::string> advised;
  int shown = 0;
  for (int number : report.worst_ranks) {
    if (shown++ == worst_ranks) break;
    if (shown == 1) out << "  worst ranks:\n";
    if (const JobRank* r = report.rank(number))
      print_rank(out, *r, report.elapsed_seconds, advised);
  }
  print_phases(out, report);
  print_worst_steps(out, report);
  print_findings(out, report);
  print_call_sites(out, report);
  return out.str();
}

}  // namespace corenoise
