#include "collector/job/job_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "probe/cpu_list.h"

namespace corenoise {

using nlohmann::json;

namespace {

json causes_json(const std::array<double, kJobCauseCount>& seconds) {
  json out = json::object();
  for (std::size_t i = 0; i < kJobCauseCount; ++i)
    out[std::string(to_string(kJobCauses[i]))] = seconds[i];
  return out;
}

std::string seconds_text(double seconds) {
  char text[32];
  if (seconds >= 1.0)
    std::snprintf(text, sizeof(text), "%.2f s", seconds);
  else
    std::snprintf(text, sizeof(text), "%.1f ms", seconds * 1e3);
  return text;
}

}  // namespace

json to_wire(const RankRecord& r) {
  json wire = {{"rank", r.rank}, {"host", r.host}, {"cpus", r.cpus}, {"pid", r.pid}};
  wire["measures"] =
      std::vector<double>(as_array(r.measures), as_array(r.measures) + kRankMeasureCount);
  json threads = json::array();
  for (const auto& t : r.threads) threads.push_back({t.name, t.seconds});
  wire["threads"] = threads;
  json sites = json::array();
  for (const auto& s : r.sites)
    sites.push_back({s.call, s.site, s.calls, s.wait_seconds, s.wait_max_seconds});
  wire["sites"] = sites;
  if (!r.node_culprits.empty()) {
    json culprits = json::array();
    for (const auto& c : r.node_culprits) culprits.push_back({c.cpu, c.pid, c.command, c.seconds});
    wire["culprits"] = culprits;
  }
  if (!r.node_daemon.is_null()) wire["daemon"] = r.node_daemon;
  return wire;
}

RankRecord record_from_wire(const json& wire) {
  RankRecord r;
  r.rank = wire.at("rank").get<int>();
  r.host = wire.at("host").get<std::string>();
  r.cpus = wire.at("cpus").get<std::vector<unsigned>>();
  r.pid = wire.at("pid").get<long>();
  const auto measures = wire.at("measures").get<std::vector<double>>();
  std::copy_n(measures.begin(), std::min(measures.size(), kRankMeasureCount), as_array(r.measures));
  for (const auto& t : wire.at("threads"))
    r.threads.push_back({t.at(0).get<std::string>(), t.at(1).get<double>()});
  for (const auto& s : wire.at("sites")) {
    r.sites.push_back({s.at(0).get<std::string>(), s.at(1).get<std::string>(),
                       s.at(2).get<double>(), s.at(3).get<double>(), s.at(4).get<double>()});
  }
  if (wire.contains("culprits")) {
    for (const auto& c : wire.at("culprits")) {
      r.node_culprits.push_back({c.at(0).get<int>(), c.at(1).get<long>(),
                                 c.at(2).get<std::string>(), c.at(3).get<double>()});
    }
  }
  if (wire.contains("daemon")) r.node_daemon = wire.at("daemon");
  return r;
}

bool is_late(const RankAttribution& attribution, const RankMeasures& measures, double threshold) {
  // Only a late rank has a cause to name: one that made the others wait.
  return attribution.main_cause.has_value() && measures.wait_caused_seconds >= threshold;
}

json job_report(const JobFacts& facts, const std::vector<RankRecord>& records) {
  std::vector<RankMeasures> measures;
  for (const auto& r : records) measures.push_back(r.measures);
  const RankMeasures reference = reference_rank(measures);

  const double threshold = cause_threshold(measures, reference);

  // Other processes per (host, cpu), from each node's reporting rank.
  std::map<std::pair<std::string, int>, std::vector<RankRecord::Culprit>> culprits;
  std::map<std::string, json> daemons;
  std::set<std::string> hosts;
  for (const auto& r : records) {
    hosts.insert(r.host);
    for (const auto& c : r.node_culprits) culprits[{r.host, c.cpu}].push_back(c);
    if (!r.node_daemon.is_null()) daemons[r.host] = r.node_daemon;
  }

  json ranks = json::array();
  std::array<double, kJobCauseCount> job_causes{};
  double wait = 0, compute_total = 0, caused_total = 0, elapsed = 0;
  double exchange_wait = 0, exchange_caused = 0, uncharged = 0;
  for (const auto& r : records) {
    RankAttribution a = attribute(r.measures, reference, threshold);
    const double caused = r.measures.wait_caused_seconds;
    if (!is_late(a, r.measures, threshold)) a.main_cause.reset();
    double explained = 0;
    for (double s : a.causes) explained += s;
    // The waiting this rank caused, shared among its causes.
    if (explained > 0 && a.main_cause) {
      for (std::size_t i = 0; i < kJobCauseCount; ++i)
        job_causes[i] += caused * a.causes[i] / explained;
    }
    wait += r.measures.wait_seconds;
    compute_total += r.measures.compute_seconds;
    caused_total += caused;
    exchange_wait += r.measures.exchange_wait_seconds;
    exchange_caused += r.measures.exchange_wait_caused_seconds;
    uncharged += r.measures.exchange_uncharged_seconds;
    elapsed = std::max(elapsed, r.measures.elapsed_seconds);

    json culprit_list = json::array();
    // The culprits of the causes found: its threads for own-threads, the
    // node's other processes on its CPUs for other-processes.
    if (a.causes[index_of(JobCause::own_threads)] > 0) {
      for (std::size_t i = 0; i < std::min<std::size_t>(3, r.threads.size()); ++i) {
        if (r.threads[i].seconds <= 0) break;
        culprit_list.push_back(
            {{"kind", "thread"}, {"name", r.threads[i].name}, {"seconds", r.threads[i].seconds}});
      }
    }
    for (unsigned cpu : r.cpus) {
      if (a.causes[index_of(JobCause::other_processes)] <= 0) break;
      auto it = culprits.find({r.host, static_cast<int>(cpu)});
      if (it == culprits.end()) continue;
      for (const auto& c : it->second) {
        culprit_list.push_back({{"kind", "process"},
                                {"name", c.command},
                                {"pid", c.pid},
                                {"cpu", cpu},
                                {"seconds", c.seconds}});
      }
    }
    json daemon = nullptr;
    if (auto it = daemons.find(r.host); it != daemons.end()) {
      json cores = json::object();
      for (unsigned cpu : r.cpus) {
        if (it->second.contains(std::to_string(cpu)))
          cores[std::to_string(cpu)] = it->second[std::to_string(cpu)];
      }
      if (!cores.empty()) daemon = cores;
    }
    const std::string cause = a.main_cause ? std::string(to_string(*a.main_cause)) : "none";
    ranks.push_back({
        {"rank", r.rank},
        {"host", r.host},
        {"cpus", format_cpu_list(r.cpus)},
        {"pid", r.pid},
        {"compute_seconds", r.measures.compute_seconds},
        {"compute_cpu_seconds", r.measures.compute_cpu_seconds},
        {"wait_seconds", r.measures.wait_seconds},
        {"wait_cpu_seconds", r.measures.wait_cpu_seconds},
        {"wait_caused_seconds", caused},
        {"exchange_wait_seconds", r.measures.exchange_wait_seconds},
        {"exchange_wait_caused_seconds", r.measures.exchange_wait_caused_seconds},
        {"excess_seconds", a.excess_seconds},
        {"unexplained_seconds", a.unexplained_seconds},
        {"cause", cause},
        {"causes", causes_json(a.causes)},
        {"advice", a.main_cause ? json(std::string(cause_advice(*a.main_cause))) : json(nullptr)},
        {"culprits", culprit_list},
        {"counters",
         {{"own_threads_seconds", r.measures.own_threads_seconds},
          {"other_processes_seconds", r.measures.other_processes_seconds},
          {"interrupt_seconds", r.measures.interrupt_seconds},
          {"steal_seconds", r.measures.steal_seconds},
          {"run_queue_seconds", r.measures.run_queue_seconds},
          {"minor_faults", r.measures.minor_faults},
          {"major_faults", r.measures.major_faults},
          {"involuntary_switches", r.measures.involuntary_switches},
          {"clock_hz", r.measures.clock_hz},
          {"overhead_seconds", r.measures.overhead_seconds},
          {"samples", r.measures.samples}}},
        {"daemon", daemon},
    });
  }

  // Call sites merged over ranks, by call and site.
  std::map<std::pair<std::string, std::string>, std::array<double, 3>> sites;
  for (const auto& r : records) {
    for (const auto& s : r.sites) {
      auto& totals = sites[{s.call, s.site}];
      totals[0] = std::max(totals[0], s.calls);
      totals[1] += s.wait_seconds;
      totals[2] = std::max(totals[2], s.wait_max_seconds);
    }
  }
  json site_list = json::array();
  for (const auto& [key, totals] : sites) {
    site_list.push_back({{"call", key.first},
                         {"site", key.second},
                         {"calls", totals[0]},
                         {"wait_seconds", totals[1]},
                         {"wait_max_seconds", totals[2]}});
  }
  std::sort(site_list.begin(), site_list.end(), [](const json& a, const json& b) {
    return a["wait_seconds"].get<double>() > b["wait_seconds"].get<double>();
  });

  std::vector<std::size_t> order(records.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return records[a].measures.wait_caused_seconds > records[b].measures.wait_caused_seconds;
  });
  json worst = json::array();
  for (std::size_t i : order) {
    if (ranks[i]["cause"] == "none" || records[i].measures.wait_caused_seconds <= 0) continue;
    worst.push_back(records[i].rank);
    if (worst.size() == 20) break;
  }

  // To the microsecond: 3,840 ranks × 1,000 columns of 17-digit numbers
  // made an 87 MB page, rounded 23 MB.
  json lateness_rows = json::array();
  for (const auto& row : facts.lateness) {
    json rounded = json::array();
    for (float late : row) rounded.push_back(std::round(static_cast<double>(late) * 1e6) / 1e6);
    lateness_rows.push_back(std::move(rounded));
  }
  return {
      {"schema", "corenoise-job/1"},
      {"version", facts.version},
      {"program", facts.program},
      {"mpi_family", facts.family},
      {"started_unix_seconds", facts.started_unix_seconds},
      {"elapsed_seconds", elapsed},
      {"ranks_total", facts.ranks_total},
      {"ranks_reported", records.size()},
      {"nodes", hosts.size()},
      {"steps", facts.steps},
      {"complete", facts.incomplete_reason.empty()},
      {"incomplete_reason",
       facts.incomplete_reason.empty() ? json(nullptr) : json(facts.incomplete_reason)},
      {"wait_seconds", wait},
      {"compute_seconds", compute_total},
      {"wait_caused_seconds", caused_total},
      {"collective_wait_seconds", wait - exchange_wait},
      {"exchange_wait_seconds", exchange_wait},
      {"collective_wait_caused_seconds", caused_total - exchange_caused},
      {"exchange_wait_caused_seconds", exchange_caused},
      {"exchange_uncharged_seconds", uncharged},
      {"cause_threshold_seconds", threshold},
      {"clock_source", facts.clock_source},
      {"causes", causes_json(job_causes)},
      {"call_sites", site_list},
      {"ranks", ranks},
      {"worst_ranks", worst},
      {"lateness",
       {{"unit", "seconds"},
        {"steps_per_column", facts.steps_per_column},
        {"columns", facts.lateness.empty() ? 0 : facts.lateness.front().size()},
        {"rows", lateness_rows}}},
  };
}

std::string job_banner(const json& report, int worst_ranks) {
  std::ostringstream out;
  const double elapsed = report.value("elapsed_seconds", 0.0);
  const double wait = report.value("wait_seconds", 0.0);
  const double compute = report.value("compute_seconds", 0.0);
  const double caused = report.value("wait_caused_seconds", 0.0);
  const int ranks = report.value("ranks_reported", 0);
  out << "corenoise job: " << ranks << (ranks == 1 ? " rank" : " ranks");
  if (report.value("ranks_total", 0) != ranks) out << " of " << report.value("ranks_total", 0);
  const int nodes = report.value("nodes", 0);
  out << " on " << nodes << (nodes == 1 ? " node" : " nodes") << ", " << report.value("steps", 0)
      << " steps, " << seconds_text(elapsed) << "\n";
  if (!report.value("complete", true)) {
    out << "  INCOMPLETE: " << report.value("incomplete_reason", std::string()) << "\n";
  }
  const double share = wait + compute > 0 ? 100.0 * wait / (wait + compute) : 0;
  char line[256];
  const double exchange_wait = report.value("exchange_wait_seconds", 0.0);
  std::snprintf(
      line, sizeof(line),
      "  the ranks waited %s in MPI (%.0f %% of their time): %s at collectives, %s in exchanges\n",
      seconds_text(wait).c_str(), share, seconds_text(wait - exchange_wait).c_str(),
      seconds_text(exchange_wait).c_str());
  out << line;
  if (caused > 0) {
    const double exchange_caused = report.value("exchange_wait_caused_seconds", 0.0);
    out << "  " << seconds_text(caused)
        << " of it for late ranks: " << seconds_text(caused - exchange_caused)
        << " at collectives, " << seconds_text(exchange_caused) << " in exchanges\n";
  }

  std::vector<std::pair<double, std::string>> causes;
  for (const auto& [name, seconds] : report["causes"].items()) {
    if (seconds.get<double>() > 0) causes.push_back({seconds.get<double>(), name});
  }
  std::sort(causes.rbegin(), causes.rend());
  if (!causes.empty()) {
    out << "  the waiting, by cause of the lateness:";
    for (std::size_t i = 0; i < std::min<std::size_t>(3, causes.size()); ++i) {
      std::snprintf(line, sizeof(line), "%s %s %s (%.0f %%)", i == 0 ? "" : ",",
                    causes[i].second.c_str(), seconds_text(causes[i].first).c_str(),
                    caused > 0 ? 100.0 * causes[i].first / caused : 0.0);
      out << line;
    }
    out << "\n";
  } else {
    out << "  no rank was late by more than the ranks' own spread: no cause to name\n";
  }

  std::map<int, const json*> by_rank;
  for (const auto& r : report["ranks"]) by_rank[r["rank"].get<int>()] = &r;
  std::set<std::string> advised;
  int shown = 0;
  for (const auto& rank_number : report["worst_ranks"]) {
    if (shown++ == worst_ranks) break;
    if (shown == 1) out << "  worst ranks:\n";
    const json& r = *by_rank.at(rank_number.get<int>());
    const std::string cause = r["cause"].get<std::string>();
    const auto named = job_cause_named(cause);
    out << "    rank " << r["rank"].get<int>() << " on " << r["host"].get<std::string>() << " cpu "
        << r["cpus"].get<std::string>() << ": caused "
        << seconds_text(r["wait_caused_seconds"].get<double>()) << " of waiting; "
        << (named ? cause_words(*named) : std::string_view(cause)) << " ("
        << seconds_text(r["causes"][cause].get<double>()) << " over the job";
    for (const auto& c : r["culprits"]) {
      out << "; " << c["kind"].get<std::string>() << " " << c["name"].get<std::string>() << " "
          << seconds_text(c["seconds"].get<double>());
    }
    out << ")\n";
    if (!r["daemon"].is_null()) {
      for (const auto& [cpu, verdict] : r["daemon"].items()) {
        out << "      corenoised on cpu " << cpu << ": "
            << verdict.value("state", std::string("?"));
        if (verdict.contains("cause") && verdict["cause"].is_string() &&
            !verdict["cause"].get<std::string>().empty()) {
          out << " (" << verdict["cause"].get<std::string>() << ")";
        }
        out << "\n";
      }
    }
    if (advised.insert(cause).second)
      out << "      fix: " << r["advice"].get<std::string>() << "\n";
  }
  const auto& sites = report["call_sites"];
  for (std::size_t i = 0; i < std::min<std::size_t>(3, sites.size()); ++i) {
    if (i == 0) out << "  wait per call site:\n";
    out << "    " << sites[i]["call"].get<std::string>() << " from "
        << sites[i]["site"].get<std::string>() << ": "
        << seconds_text(sites[i]["wait_seconds"].get<double>()) << " over all ranks, "
        << static_cast<long>(sites[i]["calls"].get<double>()) << " calls per rank, longest "
        << seconds_text(sites[i]["wait_max_seconds"].get<double>()) << "\n";
  }
  return out.str();
}

}  // namespace corenoise
