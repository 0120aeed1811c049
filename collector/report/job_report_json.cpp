#include "collector/report/job_report_json.h"

#include <cmath>
#include <string>

#include "collector/report/call_site_text.h"
#include "collector/report/cause_advice.h"
#include "collector/report/rank_advice.h"
#include "probe/cpu_list.h"
#include "probe/verdict_text.h"

namespace corenoise {

using nlohmann::json;

namespace {

json causes_json(const std::array<double, kJobCauseCount>& seconds) {
  json out = json::object();
  for (std::size_t i = 0; i < kJobCauseCount; ++i)
    out[std::string(to_string(kJobCauses[i]))] = seconds[i];
  return out;
}

json culprit_json(const JobCulprit& c) {
  if (c.kind == JobCulprit::Kind::traced) {
    return {{"kind", "traced"}, {"traced_kind", c.line}, {"name", c.name},
            {"cpu", c.cpu},     {"seconds", c.seconds},  {"share_of_cpu", c.share}};
  }
  if (c.kind == JobCulprit::Kind::thread)
    return {{"kind", "thread"}, {"name", c.name}, {"seconds", c.seconds}};
  if (c.kind == JobCulprit::Kind::irq || c.kind == JobCulprit::Kind::softirq) {
    return {{"kind", c.kind == JobCulprit::Kind::irq ? "irq" : "softirq"},
            {"line", c.line},
            {"name", c.name},
            {"cpu", c.cpu},
            {"count", c.count},
            {"more_than_other_cpus", c.excess}};
  }
  return {{"kind", "process"},
          {"name", c.name},
          {"pid", c.pid},
          {"cpu", c.cpu},
          {"seconds", c.seconds}};
}

json counters_json(const RankMeasures& m) {
  return {{"own_threads_seconds", m.own_threads_seconds},
          {"other_processes_seconds", m.other_processes_seconds},
          {"interrupt_seconds", m.interrupt_seconds},
          {"steal_seconds", m.steal_seconds},
          {"run_queue_seconds", m.run_queue_seconds},
          {"minor_faults", m.minor_faults},
          {"major_faults", m.major_faults},
          {"involuntary_switches", m.involuntary_switches},
          {"clock_hz", m.clock_hz},
          {"overhead_seconds", m.overhead_seconds},
          {"samples", m.samples}};
}

// The node's corenoised verdicts as the report shows them: the state, its
// cause's sentence and the age of the round that gave it.
json daemon_json(const std::map<unsigned, DaemonVerdict>& verdicts) {
  json out = json::object();
  for (const auto& [cpu, v] : verdicts) {
    json verdict = {{"state", v.state}, {"cause", cause_text(v.cause)}};
    if (v.age_seconds) verdict["age_seconds"] = *v.age_seconds;
    out[std::to_string(cpu)] = std::move(verdict);
  }
  return out;
}

json pattern_json(const LatenessPattern& p) {
  json stretches = json::array();
  for (const LateStretch& s : p.stretches) {
    stretches.push_back({{"first_step", s.first_step},
                         {"last_step", s.last_step},
                         {"start_seconds", s.start_seconds},
                         {"end_seconds", s.end_seconds}});
  }
  const bool chronic = p.kind == LatenessPattern::Kind::chronic;
  return {{"kind", chronic ? "chronic" : "bursts"},
          {"late_share", p.late_share},
          {"late_share_interval", {p.late_share_low, p.late_share_high}},
          {"onset_step", chronic ? json(p.onset_step) : json(nullptr)},
          {"onset_seconds", chronic ? json(p.onset_seconds) : json(nullptr)},
          {"stretches", stretches},
          {"stretches_unlisted", p.stretches_unlisted}};
}

json rank_json(const JobRank& r) {
  const RankMeasures& m = r.measures;
  const RankAttribution& a = r.attribution;
  json culprits = json::array();
  for (const JobCulprit& c : r.culprits) culprits.push_back(culprit_json(c));
  return {
      {"rank", r.rank},
      {"host", r.host},
      {"cpus", format_cpu_list(r.cpus)},
      {"pid", r.pid},
      {"compute_seconds", m.compute_seconds},
      {"compute_cpu_seconds", m.compute_cpu_seconds},
      {"wait_seconds", m.wait_seconds},
      {"wait_cpu_seconds", m.wait_cpu_seconds},
      {"wait_caused_seconds", m.wait_caused_seconds},
      {"saving_seconds", r.saving_seconds},
      {"exchange_wait_seconds", m.exchange_wait_seconds},
      {"exchange_wait_caused_seconds", m.exchange_wait_caused_seconds},
      {"excess_seconds", a.excess_seconds},
      {"unexplained_seconds", a.unexplained_seconds},
      {"cause", a.main_cause ? std::string(to_string(*a.main_cause)) : "none"},
      {"causes", causes_json(a.causes)},
      {"advice", a.main_cause ? json(rank_advice(r)) : json(nullptr)},
      {"culprits", culprits},
      {"busy_threads", r.busy_threads_peak > 0 ? json(r.busy_threads_peak) : json(nullptr)},
      {"counters", counters_json(m)},
      {"daemon", r.daemon ? daemon_json(*r.daemon) : json(nullptr)},
      {"lateness_pattern", r.pattern ? pattern_json(*r.pattern) : json(nullptr)},
  };
}

json call_site_json(const JobCallSite& s) {
  return {{"call", s.call},
          {"site", readable_site(s.site)},
          {"calls", s.calls},
          {"wait_seconds", s.wait_seconds},
          {"wait_max_seconds", s.wait_max_seconds}};
}

// To the microsecond: 3,840 ranks × 1,000 columns of 17-digit numbers
// made an 87 MB page, rounded 23 MB.
json lateness_json(const JobFacts& facts) {
  json rows = json::array();
  for (const auto& row : facts.lateness) {
    json rounded = json::array();
    for (float late : row) rounded.push_back(std::round(static_cast<double>(late) * 1e6) / 1e6);
    rows.push_back(std::move(rounded));
  }
  return {{"unit", "seconds"},
          {"steps_per_column", facts.steps_per_column},
          {"columns", facts.lateness.empty() ? 0 : facts.lateness.front().size()},
          {"rows", rows}};
}

json by_node_json(const std::vector<JobNode>& nodes) {
  json out = json::array();
  for (const JobNode& n : nodes) {
    json lateness = json::array();
    for (float late : n.lateness)
      lateness.push_back(std::round(static_cast<double>(late) * 1e6) / 1e6);
    out.push_back({{"host", n.host.empty() ? json(nullptr) : json(n.host)},
                   {"first_rank", n.first_rank},
                   {"ranks", n.ranks},
                   {"wait_seconds", n.wait_seconds},
                   {"wait_caused_seconds", n.wait_caused_seconds},
                   {"late_ranks", n.late_ranks},
                   {"worst_rank", n.worst_rank < 0 ? json(nullptr) : json(n.worst_rank)},
                   {"lateness", lateness}});
  }
  return out;
}

json findings_json(const std::vector<JobFinding>& findings) {
  json out = json::array();
  for (const JobFinding& f : findings) {
    out.push_back({{"kind", f.kind},
                   {"ranks", f.ranks},
                   {"nodes", f.nodes},
                   {"evidence", f.evidence},
                   {"fix", f.fix}});
  }
  return out;
}

json cause_or_none(const std::optional<JobCause>& cause) {
  return cause ? json(std::string(to_string(*cause))) : json("none");
}

json phases_json(const std::vector<JobPhase>& phases) {
  json out = json::array();
  for (const JobPhase& p : phases) {
    json late = json::array();
    for (const JobPhaseRank& r : p.late_ranks) {
      late.push_back({{"rank", r.rank},
                      {"cause", std::string(to_string(r.cause))},
                      {"cause_seconds", r.cause_seconds},
                      {"wait_caused_seconds", r.wait_caused_seconds}});
    }
    out.push_back({{"name", p.name},
                   {"first_step", p.first_step},
                   {"last_step", p.last_step},
                   {"wait_seconds", p.wait_seconds},
                   {"wait_caused_seconds", p.wait_caused_seconds},
                   {"cause_threshold_seconds", p.cause_threshold_seconds},
                   {"cause_threshold_on_cpu_seconds", p.cause_threshold_on_cpu_seconds},
                   {"causes", causes_json(p.causes)},
                   {"late_ranks", late}});
  }
  return out;
}

// A live epoch's report says which epoch, when, and at what cadence
// (docs/job.md, "Live"); a final report has null.
json live_json(const std::optional<JobFacts::Live>& live, int ranks_total) {
  if (!live) return nullptr;
  json window = json::array();
  for (const JobFacts::Live::WindowRank& r : live->window) {
    window.push_back({{"rank", r.rank},
                      {"cause", std::string(to_string(r.cause))},
                      {"wait_caused_seconds", r.wait_caused_seconds},
                      {"lateness_pattern", r.pattern ? pattern_json(*r.pattern) : json(nullptr)}});
  }
  return {{"epoch", live->epoch},
          {"reduced_unix_seconds", live->reduced_unix_seconds},
          {"interval_seconds", live->interval_seconds},
          {"rebuilt_from_spill", live->rebuilt},
          {"ranks_finalized", live->rebuilt ? json(live->ranks_finalized) : json(nullptr)},
          {"ended_without_finalize", live->ended_without_finalize(ranks_total)},
          {"window", live->window_judged ? json{{"start_seconds", live->window_start_seconds},
                                                {"end_seconds", live->window_end_seconds},
                                                {"late_ranks", std::move(window)}}
                                         : json(nullptr)}};
}

json worst_steps_json(const std::vector<JobStep>& steps) {
  json out = json::array();
  for (const JobStep& s : steps) {
    out.push_back({{"first_step", s.first_step},
                   {"steps", s.steps},
                   {"wait_caused_seconds", s.wait_caused_seconds},
                   {"last_rank", s.last_rank},
                   {"call", s.call.empty() ? json(nullptr) : json(s.call)},
                   {"site", s.site.empty() ? json(nullptr) : json(readable_site(s.site))},
                   {"phase", s.phase.empty() ? json(nullptr) : json(s.phase)},
                   {"cause", cause_or_none(s.cause)}});
  }
  return out;
}

}  // namespace

json to_json(const JobReport& report) {
  const JobFacts& facts = report.facts;
  json ranks = json::array();
  for (const JobRank& r : report.ranks) ranks.push_back(rank_json(r));
  json sites = json::array();
  for (const JobCallSite& s : report.call_sites) sites.push_back(call_site_json(s));
  return {
      {"schema", "corenoise-job/1"},
      {"version", facts.version},
      {"program", facts.program},
      {"mpi_family", facts.family},
      {"mpi_library", facts.mpi_library.empty() ? json(nullptr) : json(facts.mpi_library)},
      {"mpi_library_version",
       facts.mpi_library_version.empty() ? json(nullptr) : json(facts.mpi_library_version)},
      {"started_unix_seconds", facts.started_unix_seconds},
      {"elapsed_seconds", report.elapsed_seconds},
      {"ranks_total", facts.ranks_total},
      {"ranks_reported", report.ranks_reported},
      {"nodes", report.nodes},
      {"steps", facts.steps},
      {"complete", report.complete()},
      {"incomplete_reason", report.complete() ? json(nullptr) : json(facts.incomplete_reason)},
      {"wait_seconds", report.wait_seconds},
      {"compute_seconds", report.compute_seconds},
      {"wait_caused_seconds", report.wait_caused_seconds},
      {"collective_wait_seconds", report.collective_wait_seconds()},
      {"exchange_wait_seconds", report.exchange_wait_seconds},
      {"collective_wait_caused_seconds", report.collective_wait_caused_seconds()},
      {"exchange_wait_caused_seconds", report.exchange_wait_caused_seconds},
      {"exchange_uncharged_seconds", report.exchange_uncharged_seconds},
      {"cause_threshold_seconds", report.cause_threshold_seconds},
      {"cause_threshold_on_cpu_seconds", report.cause_threshold_on_cpu_seconds},
      {"clock_source", facts.clock_source},
      {"live", live_json(facts.live, facts.ranks_total)},
      {"causes", causes_json(report.causes)},
      {"saving_seconds", causes_json(report.savings)},
      {"call_sites", sites},
      {"ranks_in_full", report.ranks.size()},
      {"ranks", ranks},
      {"worst_ranks", report.worst_ranks},
      {"by_node", by_node_json(report.by_node)},
      {"findings", findings_json(report.findings)},
      {"warmup_steps", facts.warmup_steps},
      {"phases", phases_json(report.phases)},
      {"worst_steps", worst_steps_json(report.worst_steps)},
      {"lateness", lateness_json(facts)},
  };
}

}  // namespace corenoise
