#include "collector/job/model/live_epoch.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <utility>

#include "collector/job/model/node_digest.h"
#include "daemon/control/job_causes.h"

namespace corenoise {
namespace {

using nlohmann::json;

json steps_to_wire(const std::vector<JobFacts::Step>& steps) {
  json out = json::array();
  for (const JobFacts::Step& s : steps) {
    out.push_back({{"first_step", s.first_step},
                   {"steps", s.steps},
                   {"wait_caused_seconds", s.wait_caused_seconds},
                   {"last_rank", s.last_rank},
                   {"call", s.call},
                   {"site", s.site}});
  }
  return out;
}

std::vector<JobFacts::Step> steps_from_wire(const json& wire) {
  std::vector<JobFacts::Step> steps;
  for (const json& s : wire) {
    steps.push_back({s.at("first_step").get<long>(), s.at("steps").get<long>(),
                     s.at("wait_caused_seconds").get<double>(), s.at("last_rank").get<int>(),
                     s.at("call").get<std::string>(), s.at("site").get<std::string>()});
  }
  return steps;
}

json live_to_wire(const JobFacts::Live& live) {
  json window = json::array();
  for (const JobFacts::Live::WindowRank& r : live.window) {
    window.push_back({{"rank", r.rank},
                      {"cause", std::string(to_string(r.cause))},
                      {"wait_caused_seconds", r.wait_caused_seconds}});
  }
  return {{"epoch", live.epoch},
          {"reduced_unix_seconds", live.reduced_unix_seconds},
          {"interval_seconds", live.interval_seconds},
          {"window_judged", live.window_judged},
          {"window_start_seconds", live.window_start_seconds},
          {"window_end_seconds", live.window_end_seconds},
          {"window", std::move(window)}};
}

JobFacts::Live live_from_wire(const json& w) {
  if (!w.is_object()) throw std::invalid_argument("no live epoch in a live epoch's file");
  JobFacts::Live live;
  live.epoch = w.at("epoch").get<long>();
  live.reduced_unix_seconds = w.at("reduced_unix_seconds").get<double>();
  live.interval_seconds = w.at("interval_seconds").get<double>();
  live.window_judged = w.at("window_judged").get<bool>();
  live.window_start_seconds = w.at("window_start_seconds").get<double>();
  live.window_end_seconds = w.at("window_end_seconds").get<double>();
  for (const json& r : w.at("window")) {
    const std::optional<JobCause> cause = job_cause_named(r.at("cause").get<std::string>());
    if (!cause) throw std::invalid_argument("a live window's rank with no known cause");
    live.window.push_back(
        {r.at("rank").get<int>(), *cause, r.at("wait_caused_seconds").get<double>()});
  }
  return live;
}

json facts_to_wire(const JobFacts& f) {
  json digests = json::object();
  for (const auto& [first, digest] : f.node_digests)
    digests[std::to_string(first)] = to_wire(digest);
  const json live = f.live ? live_to_wire(*f.live) : json(nullptr);
  return {{"version", f.version},
          {"program", f.program},
          {"family", f.family},
          {"started_unix_seconds", f.started_unix_seconds},
          {"ranks_total", f.ranks_total},
          {"steps", f.steps},
          {"lateness", f.lateness},
          {"node_digests", std::move(digests)},
          {"steps_per_column", f.steps_per_column},
          {"column_end_seconds", f.column_end_seconds},
          {"savings", f.savings},
          {"incomplete_reason", f.incomplete_reason},
          {"clock_source", f.clock_source},
          {"mpi_library", f.mpi_library},
          {"mpi_library_version", f.mpi_library_version},
          {"warmup_steps", f.warmup_steps},
          {"worst_steps", steps_to_wire(f.worst_steps)},
          {"live", live}};
}

JobFacts facts_from_wire(const json& w) {
  JobFacts f;
  f.version = w.at("version").get<std::string>();
  f.program = w.at("program").get<std::string>();
  f.family = w.at("family").get<std::string>();
  f.started_unix_seconds = w.at("started_unix_seconds").get<double>();
  f.ranks_total = w.at("ranks_total").get<int>();
  f.steps = w.at("steps").get<long>();
  f.lateness = w.at("lateness").get<std::vector<std::vector<float>>>();
  for (const auto& [first, digest] : w.at("node_digests").items())
    f.node_digests.emplace(std::stoi(first), digest_from_wire(digest));
  f.steps_per_column = w.at("steps_per_column").get<long>();
  f.column_end_seconds = w.at("column_end_seconds").get<std::vector<double>>();
  f.savings = w.at("savings").get<std::vector<std::pair<int, double>>>();
  f.incomplete_reason = w.at("incomplete_reason").get<std::string>();
  f.clock_source = w.at("clock_source").get<std::string>();
  f.mpi_library = w.at("mpi_library").get<std::string>();
  f.mpi_library_version = w.at("mpi_library_version").get<std::string>();
  f.warmup_steps = w.at("warmup_steps").get<long>();
  f.worst_steps = steps_from_wire(w.at("worst_steps"));
  f.live = live_from_wire(w.at("live"));
  if (f.ranks_total <= 0 || f.live->epoch <= 0)
    throw std::invalid_argument("a live epoch's file with no ranks or no epoch");
  return f;
}

}  // namespace

std::string live_epoch_text(const JobFacts& facts, const std::vector<RankRecord>& records) {
  json wire_records = json::array();
  for (const RankRecord& r : records) wire_records.push_back(to_wire(r));
  // A name cut at 15 bytes (the kernel's) may end inside a UTF-8 sequence:
  // replaced, as the wire does, never thrown on.
  return json{{"facts", facts_to_wire(facts)}, {"records", std::move(wire_records)}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

LiveEpoch live_epoch_from_text(const std::string& text) {
  const json wire = json::parse(text);
  LiveEpoch epoch{facts_from_wire(wire.at("facts")), {}};
  for (const json& r : wire.at("records")) epoch.records.push_back(record_from_wire(r));
  return epoch;
}

}  // namespace corenoise
