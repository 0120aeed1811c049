#include "daemon/control/control_replies.h"

#include "probe/report_json.h"
#include "probe/verdict_text.h"

namespace corenoise {
namespace {

using nlohmann::json;

// An optional field: written only when present, read only when there.
template <typename T>
void put_optional(json& out, const char* key, const std::optional<T>& value) {
  if (value) out[key] = *value;
}

template <typename T>
void get_optional(const json& in, const char* key, std::optional<T>& value) {
  const auto it = in.find(key);
  if (it == in.end()) {
    value.reset();
  } else {
    value = it->template get<T>();
  }
}

void put_states(json& out, const CpuStates& in) {
  out["states"] = in.states;
  out["unhealthy"] = in.unhealthy;
  out["transient"] = in.transient;
  out["healthy"] = in.healthy;
}

void get_states(const json& in, CpuStates& out) {
  in.at("states").get_to(out.states);
  in.at("unhealthy").get_to(out.unhealthy);
  in.at("transient").get_to(out.transient);
  in.at("healthy").get_to(out.healthy);
}

}  // namespace

void to_json(json& out, const CpuVerdictEntry& in) {
  out = {{"cpu", in.cpu},
         {"state", in.state},
         {"cause", cause_text(in.cause)},
         {"why", to_json(in.cause)},
         {"round_state", in.round_state},
         {"unhealthy_rounds", in.unhealthy_rounds},
         {"rounds", in.rounds}};
}

void from_json(const json& in, CpuVerdictEntry& out) {
  in.at("cpu").get_to(out.cpu);
  in.at("state").get_to(out.state);
  out.cause = cause_in(in);
  in.at("round_state").get_to(out.round_state);
  in.at("unhealthy_rounds").get_to(out.unhealthy_rounds);
  in.at("rounds").get_to(out.rounds);
}

void to_json(json& out, const ModeRounds& in) {
  out = {{"count", in.count}};
  put_optional(out, "last_unix_seconds", in.last_unix_seconds);
  put_optional(out, "last_duration_seconds", in.last_duration_seconds);
}

void from_json(const json& in, ModeRounds& out) {
  in.at("count").get_to(out.count);
  get_optional(in, "last_unix_seconds", out.last_unix_seconds);
  get_optional(in, "last_duration_seconds", out.last_duration_seconds);
}

void to_json(json& out, const CulpritShare& in) {
  out = {{"text", in.text}, {"kind", in.kind}, {"share", in.share}};
}

void from_json(const json& in, CulpritShare& out) {
  in.at("text").get_to(out.text);
  in.at("kind").get_to(out.kind);
  in.at("share").get_to(out.share);
}

void to_json(json& out, const CpuCulprits& in) {
  out = {{"cpu", in.cpu}, {"mode", in.mode}, {"top", in.top}};
}

void from_json(const json& in, CpuCulprits& out) {
  in.at("cpu").get_to(out.cpu);
  in.at("mode").get_to(out.mode);
  in.at("top").get_to(out.top);
}

void to_json(json& out, const JobsSeen& in) {
  out = {{"reports", in.reports}, {"running_ranks", in.running_ranks}};
  put_optional(out, "last_job_id", in.last_job_id);
  put_optional(out, "last_ended_unix_seconds", in.last_ended_unix_seconds);
}

void from_json(const json& in, JobsSeen& out) {
  in.at("reports").get_to(out.reports);
  in.at("running_ranks").get_to(out.running_ranks);
  get_optional(in, "last_job_id", out.last_job_id);
  get_optional(in, "last_ended_unix_seconds", out.last_ended_unix_seconds);
}

void to_json(json& out, const ClusterPublication& in) {
  out = {{"published_unix_seconds", in.published_unix_seconds}, {"reference", in.reference}};
}

void from_json(const json& in, ClusterPublication& out) {
  in.at("published_unix_seconds").get_to(out.published_unix_seconds);
  out.reference = in.at("reference");
}

void to_json(json& out, const PersistenceReply& in) {
  out = {{"rounds", in.rounds}, {"bad", in.bad}};
}

void from_json(const json& in, PersistenceReply& out) {
  in.at("rounds").get_to(out.rounds);
  in.at("bad").get_to(out.bad);
}

void to_json(json& out, const RoundDone& in) {
  out = {{"mode", in.mode}, {"duration_seconds", in.duration_seconds}, {"cpus", in.cpus}};
}

void from_json(const json& in, RoundDone& out) {
  in.at("mode").get_to(out.mode);
  in.at("duration_seconds").get_to(out.duration_seconds);
  in.at("cpus").get_to(out.cpus);
}

void to_json(json& out, const StatusReply& in) {
  out = {{"ok", true},
         {"version", in.version},
         {"started_unix_seconds", in.started_unix_seconds},
         {"paused", in.paused},
         {"round_running", in.round_running},
         {"rounds", in.rounds},
         {"persistence", in.persistence},
         {"cpus", in.cpus},
         {"jobs", in.jobs},
         {"access", in.access},
         {"trace", in.trace}};
  put_states(out, in.cpu_states);
  put_optional(out, "paused_until_unix_seconds", in.paused_until_unix_seconds);
  put_optional(out, "next_round_unix_seconds", in.next_round_unix_seconds);
  put_optional(out, "not_yet_probed", in.not_yet_probed);
  put_optional(out, "cluster", in.cluster);
  put_optional(out, "culprits", in.culprits);
}

void from_json(const json& in, StatusReply& out) {
  in.at("version").get_to(out.version);
  in.at("started_unix_seconds").get_to(out.started_unix_seconds);
  in.at("paused").get_to(out.paused);
  in.at("round_running").get_to(out.round_running);
  in.at("rounds").get_to(out.rounds);
  in.at("persistence").get_to(out.persistence);
  in.at("cpus").get_to(out.cpus);
  in.at("jobs").get_to(out.jobs);
  in.at("access").get_to(out.access);
  in.at("trace").get_to(out.trace);
  get_states(in, out.cpu_states);
  get_optional(in, "paused_until_unix_seconds", out.paused_until_unix_seconds);
  get_optional(in, "next_round_unix_seconds", out.next_round_unix_seconds);
  get_optional(in, "not_yet_probed", out.not_yet_probed);
  get_optional(in, "cluster", out.cluster);
  get_optional(in, "culprits", out.culprits);
}

void to_json(json& out, const RunReply& in) {
  out = {{"ok", true}, {"rounds", in.rounds}};
  put_states(out, in.cpu_states);
}

void from_json(const json& in, RunReply& out) {
  in.at("rounds").get_to(out.rounds);
  get_states(in, out.cpu_states);
}

void to_json(json& out, const ResultsReply& in) {
  out = to_json(in.report);
  out["ok"] = true;
}

void from_json(const json& in, ResultsReply& out) { out.report = node_report_from_json(in); }

void to_json(json& out, const JobReply& in) { out = {{"ok", true}, {"cpus", in.cpus}}; }

void from_json(const json& in, JobReply& out) { in.at("cpus").get_to(out.cpus); }

void to_json(json& out, const JobCulpritsReply& in) {
  json cpus = json::array();
  for (const JobTracedCpu& c : in.cpus) {
    json culprits = json::array();
    for (const JobTracedCulprit& x : c.culprits) {
      culprits.push_back({{"kind", x.kind},
                          {"name", x.name},
                          {"id", x.id},
                          {"text", x.text},
                          {"seconds", x.seconds}});
    }
    cpus.push_back({{"cpu", c.cpu},
                    {"seconds", c.seconds},
                    {"culprits", std::move(culprits)},
                    {"other_seconds", c.other_seconds},
                    {"overran", c.overran}});
  }
  out = {{"ok", true}, {"trace", in.trace}, {"cpus", std::move(cpus)}};
}

void from_json(const json& in, JobCulpritsReply& out) {
  in.at("trace").get_to(out.trace);
  out.cpus.clear();
  for (const json& c : in.at("cpus")) {
    JobTracedCpu cpu;
    c.at("cpu").get_to(cpu.cpu);
    c.at("seconds").get_to(cpu.seconds);
    c.at("other_seconds").get_to(cpu.other_seconds);
    c.at("overran").get_to(cpu.overran);
    for (const json& x : c.at("culprits")) {
      cpu.culprits.push_back({x.at("kind").get<std::string>(), x.at("name").get<std::string>(),
                              x.at("id").get<int>(), x.at("text").get<std::string>(),
                              x.at("seconds").get<double>()});
    }
    out.cpus.push_back(std::move(cpu));
  }
}

void to_json(json& out, const PauseReply& in) {
  out = {{"ok", true}, {"paused", in.paused}};
  put_optional(out, "paused_until_unix_seconds", in.paused_until_unix_seconds);
}

void from_json(const json& in, PauseReply& out) {
  in.at("paused").get_to(out.paused);
  get_optional(in, "paused_until_unix_seconds", out.paused_until_unix_seconds);
}

void to_json(json& out, const ScheduledReply& in) {
  out = {{"ok", true}, {"scheduled_unix_seconds", in.scheduled_unix_seconds}};
}

void from_json(const json& in, ScheduledReply& out) {
  in.at("scheduled_unix_seconds").get_to(out.scheduled_unix_seconds);
}

void to_json(json& out, const PublishReply& in) {
  out = {{"ok", true}, {"slowdowns", in.slowdowns}};
}

void from_json(const json& in, PublishReply& out) { in.at("slowdowns").get_to(out.slowdowns); }

}  // namespace corenoise
