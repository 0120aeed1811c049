// The control socket's replies, decoded: what `status`, `results`, `run`
// (waited for or not, and `calibrate`), `pause`, `resume`, `publish` and
// `job` answer (docs/control.md is the
// contract). The daemon fills these and sends to_json(); the `corenoise`
// command reads them back with from_json(), so a field is named once, here,
// and not by string keys on each side.
//
// to_json writes each reply whole, "ok": true included; the wire is nlohmann's
// default object (keys sorted), so the order of the fields here does not show.
// from_json requires what the daemon always sends and leaves optional what
// the contract says may be absent; a reply that lacks a required field, or
// has one of the wrong type, throws nlohmann::json::exception.
//
// Pure: no I/O. Thread-safety: plain data and free functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "probe/report.h"

namespace corenoise {

// One CPU of the `unhealthy` or `transient` list: its persistent state, the
// cause of its deciding round, its latest round's own verdict, and how many
// of its remembered measured rounds were unhealthy.
struct CpuVerdictEntry {
  unsigned cpu = 0;
  std::string state;  // "noisy", "transient", ...
  Cause cause;        // on the wire as its sentence ("cause") and its data ("why")
  std::string round_state;
  std::size_t unhealthy_rounds = 0;
  std::size_t rounds = 0;
};

// What `status` and a waited-for `run` share: each CPU's persistent state,
// counted (every state, 0 included, by its wire name) and listed where it
// is unhealthy or transient, and whether none is persistently unhealthy.
struct CpuStates {
  std::map<std::string, std::size_t> states;
  std::vector<CpuVerdictEntry> unhealthy;
  std::vector<CpuVerdictEntry> transient;
  bool healthy = true;
};

// The rounds of one mode since the daemon started.
struct ModeRounds {
  std::uint64_t count = 0;
  std::optional<double> last_unix_seconds;  // start of the latest
  std::optional<double> last_duration_seconds;
};

// A culprit's share of one traced CPU's detour windows in its last round.
struct CulpritShare {
  std::string text;  // as trace::describe() names it
  std::string kind;  // trace::kind_name()
  double share = 0;
};

struct CpuCulprits {
  unsigned cpu = 0;
  std::string mode;
  std::vector<CulpritShare> top;  // largest first, at most three
};

struct JobsSeen {
  std::uint64_t reports = 0;      // ranks' reports accepted since the start
  std::size_t running_ranks = 0;  // ranks whose job-start is held
  // Once a report came; last_job_id on the control socket only.
  std::optional<std::string> last_job_id;
  std::optional<double> last_ended_unix_seconds;
};

struct ClusterPublication {
  double published_unix_seconds = 0;
  nlohmann::json reference;  // as the collector published it
};

struct PersistenceReply {
  std::size_t rounds = 0;  // persist-rounds N
  std::size_t bad = 0;     // persist-bad K
};

// `status`.
struct StatusReply {
  std::string version;
  double started_unix_seconds = 0;
  bool paused = false;
  std::optional<double> paused_until_unix_seconds;  // paused with a deadline
  bool round_running = false;
  std::optional<double> next_round_unix_seconds;  // absent while paused
  std::optional<std::size_t> not_yet_probed;      // before the first round: CPUs watched
  std::map<std::string, ModeRounds> rounds;       // by mode
  std::size_t cpus = 0;                           // PUs of the node
  CpuStates cpu_states;
  PersistenceReply persistence;
  JobsSeen jobs;
  std::string access;  // "control" or "user"
  std::optional<ClusterPublication> cluster;
  std::string trace;                                 // on, off or "unavailable: WHY"
  std::optional<std::vector<CpuCulprits>> culprits;  // traced only
};

// One round of a waited-for `run` or of `calibrate`.
struct RoundDone {
  std::string mode;
  double duration_seconds = 0;
  std::size_t cpus = 0;
};

// A waited-for `run`, and `calibrate`: the rounds done and every CPU's
// persistent state after them.
struct RunReply {
  std::vector<RoundDone> rounds;
  CpuStates cpu_states;
};

// `results`: the latest rounds as the `corenoise probe --json` document.
struct ResultsReply {
  NodeReport report;
};

// `job`: the entries counted.
struct JobReply {
  std::size_t cpus = 0;
};

// `job-culprits`: what else ran on the asking rank's job's CPUs of this
// node since the job began there (daemon/job_tracer.h).
struct JobTracedCulprit {
  std::string kind;  // trace::kind_name(): task, irq, softirq, work, events_lost
  std::string name;  // a command, an IRQ's device, a softirq, a work function
  int id = -1;       // a thread id, an IRQ's number, a softirq vector; -1 where none
  std::string text;  // trace::describe(): "inj[1234]", "IRQ 36 (virtio1-req.0)"
  double seconds = 0;
};
struct JobTracedCpu {
  unsigned cpu = 0;
  double seconds = 0;                      // recorded for the job on this CPU
  std::vector<JobTracedCulprit> culprits;  // most time first
  double other_seconds = 0;                // beyond the named, summed
  bool overran = false;                    // the ring buffer dropped events
};
struct JobCulpritsReply {
  // "on"; "off" or "unavailable: WHY" where the daemon does not trace;
  // "busy" where it traces as many jobs as it may, not this one.
  std::string trace;
  std::vector<JobTracedCpu> cpus;
};

// `pause` and `resume`.
struct PauseReply {
  bool paused = false;
  std::optional<double> paused_until_unix_seconds;  // paused with a deadline
};

// A `run` not waited for: when it starts.
struct ScheduledReply {
  double scheduled_unix_seconds = 0;
};

// `publish`: the slowdowns kept.
struct PublishReply {
  std::size_t slowdowns = 0;
};

// nlohmann's conversions (found by ADL): `nlohmann::json j = reply;` and
// `j.get<StatusReply>()`. The replies' to_json (StatusReply to PublishReply) write "ok": true too.
void to_json(nlohmann::json& out, const CpuVerdictEntry& in);
void from_json(const nlohmann::json& in, CpuVerdictEntry& out);
void to_json(nlohmann::json& out, const ModeRounds& in);
void from_json(const nlohmann::json& in, ModeRounds& out);
void to_json(nlohmann::json& out, const CulpritShare& in);
void from_json(const nlohmann::json& in, CulpritShare& out);
void to_json(nlohmann::json& out, const CpuCulprits& in);
void from_json(const nlohmann::json& in, CpuCulprits& out);
void to_json(nlohmann::json& out, const JobsSeen& in);
void from_json(const nlohmann::json& in, JobsSeen& out);
void to_json(nlohmann::json& out, const ClusterPublication& in);
void from_json(const nlohmann::json& in, ClusterPublication& out);
void to_json(nlohmann::json& out, const PersistenceReply& in);
void from_json(const nlohmann::json& in, PersistenceReply& out);
void to_json(nlohmann::json& out, const RoundDone& in);
void from_json(const nlohmann::json& in, RoundDone& out);
void to_json(nlohmann::json& out, const StatusReply& in);
void from_json(const nlohmann::json& in, StatusReply& out);
void to_json(nlohmann::json& out, const RunReply& in);
void from_json(const nlohmann::json& in, RunReply& out);
void to_json(nlohmann::json& out, const ResultsReply& in);
void from_json(const nlohmann::json& in, ResultsReply& out);
void to_json(nlohmann::json& out, const JobReply& in);
void from_json(const nlohmann::json& in, JobReply& out);
void to_json(nlohmann::json& out, const JobCulpritsReply& in);
void from_json(const nlohmann::json& in, JobCulpritsReply& out);
void to_json(nlohmann::json& out, const PauseReply& in);
void from_json(const nlohmann::json& in, PauseReply& out);
void to_json(nlohmann::json& out, const ScheduledReply& in);
void from_json(const nlohmann::json& in, ScheduledReply& out);
void to_json(nlohmann::json& out, const PublishReply& in);
void from_json(const nlohmann::json& in, PublishReply& out);

}  // namespace corenoise
