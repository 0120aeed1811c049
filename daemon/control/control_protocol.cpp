#include "daemon/control/control_protocol.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <set>
#include <span>
#include <tuple>

#include "daemon/control/slurm_cgroup.h"

namespace corenoise {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxEchoedChars = 48;

// A value as it appears in an error message: its JSON text, cut short so a
// 64 KiB string does not come back in full. Cutting respects UTF-8 sequence
// boundaries, so the message stays valid text.
std::string echo(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() <= kMaxEchoedChars) return text;
  std::size_t cut = kMaxEchoedChars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

std::string type_word(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::binary:
      return "binary";
    case json::value_t::discarded:
      return "nothing";
    default:
      return "a number";
  }
}

[[noreturn]] void fail(std::string_view command, std::string_view field, std::string_view expected,
                       const json& got) {
  throw ProtocolError(std::string(command) + ": '" + std::string(field) + "' must be " +
                      std::string(expected) + ", got " + echo(got));
}

// Every field of `object` must be one of `allowed` (plus "command" at top
// level); `kind` names what a key is in the message ("field", "cause").
void check_fields(std::string_view command, const json& object,
                  std::span<const std::string_view> allowed, std::string_view where = "",
                  std::string_view kind = "field") {
  for (const auto& [key, value] : object.items()) {
    if (where.empty() && key == "command") continue;
    bool known = false;
    for (std::string_view a : allowed) known = known || key == a;
    if (known) continue;
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    throw ProtocolError(
        std::string(command) + ": unknown " + std::string(kind) + " '" + std::string(where) + key +
        "'" + (list.empty() ? std::string(" (it takes no fields)") : " (expected " + list + ")"));
  }
}

void check_fields(std::string_view command, const json& object,
                  std::initializer_list<std::string_view> allowed, std::string_view where = "") {
  check_fields(command, object, std::span(allowed.begin(), allowed.size()), where);
}

// Throws "COMMAND: missing field 'WHERE.NAME'" for the first of `required`
// that `object` lacks.
void check_required(std::string_view command, const json& object,
                    std::initializer_list<const char*> required, const std::string& where = "") {
  for (const char* name : required) {
    if (!object.contains(name)) {
      throw ProtocolError(std::string(command) + ": missing field '" + where + name + "'");
    }
  }
}

// An integer >= minimum that fits an unsigned. 3.0 is accepted as 3 (some
// encoders write every number as a double); 3.5 and -1 are not.
unsigned whole_number(std::string_view command, const std::string& field, const json& value,
                      unsigned minimum) {
  const bool integral =
      value.is_number_unsigned() ||
      (value.is_number_float() && std::isfinite(value.get<double>()) && value.get<double>() >= 0 &&
       std::floor(value.get<double>()) == value.get<double>());
  if (!integral || value.get<double>() > std::numeric_limits<unsigned>::max() ||
      value.get<double>() < minimum) {
    fail(command, field, "an integer >= " + std::to_string(minimum), value);
  }
  return static_cast<unsigned>(value.get<double>());
}

double finite_number(std::string_view command, std::string_view field, const json& value,
                     bool positive) {
  const char* expected = positive ? "a number > 0" : "a number >= 0";
  if (!value.is_number()) fail(command, field, expected, value);
  const double x = value.get<double>();
  if (!std::isfinite(x) || (positive ? !(x > 0) : !(x >= 0))) fail(command, field, expected, value);
  return x;
}

template <typename Enum, std::size_t N>
Enum enum_value(std::string_view command, std::string_view field, const json& value,
                const Enum (&all)[N]) {
  std::string expected = "one of";
  for (std::size_t i = 0; i < N; ++i) {
    expected += (i == 0 ? " \"" : ", \"") + std::string(to_string(all[i])) + "\"";
  }
  if (!value.is_string()) fail(command, field, expected, value);
  const auto& text = value.get_ref<const std::string&>();
  for (Enum e : all) {
    if (text == to_string(e)) return e;
  }
  fail(command, field, expected, value);
}

constexpr Mode kAllModes[] = {Mode::isolated, Mode::concurrent};

PauseRequest parse_pause(const json& r) {
  check_fields("pause", r, {"seconds"});
  PauseRequest pause;
  if (r.contains("seconds")) pause.seconds = finite_number("pause", "seconds", r["seconds"], true);
  return pause;
}

RunRequest parse_run(const json& r) {
  check_fields("run", r, {"at_unix_seconds", "mode", "wait"});
  RunRequest run;
  if (r.contains("at_unix_seconds")) {
    run.at_unix_seconds = finite_number("run", "at_unix_seconds", r["at_unix_seconds"], false);
  }
  if (r.contains("mode")) {
    const json& mode = r["mode"];
    const char* expected = "one of \"isolated\", \"concurrent\", \"both\"";
    if (!mode.is_string()) fail("run", "mode", expected, mode);
    const auto& text = mode.get_ref<const std::string&>();
    if (text == "isolated") {
      run.modes = {Mode::isolated};
    } else if (text == "concurrent") {
      run.modes = {Mode::concurrent};
    } else if (text == "both") {
      run.modes = {Mode::isolated, Mode::concurrent};
    } else {
      fail("run", "mode", expected, mode);
    }
  }
  if (r.contains("wait")) {
    if (!r["wait"].is_boolean()) fail("run", "wait", "true or false", r["wait"]);
    run.wait = r["wait"].get<bool>();
  }
  return run;
}

PublishRequest parse_publish(const json& r) {
  check_fields("publish", r, {"published_unix_seconds", "reference", "slowdowns"});
  PublishRequest publish;
  check_required("publish", r, {"published_unix_seconds", "reference", "slowdowns"});
  publish.published_unix_seconds =
      finite_number("publish", "published_unix_seconds", r["published_unix_seconds"], false);
  if (!r["reference"].is_object()) fail("publish", "reference", "an object", r["reference"]);
  publish.reference = r["reference"];
  const json& list = r["slowdowns"];
  if (!list.is_array()) fail("publish", "slowdowns", "an array", list);
  publish.slowdowns.reserve(list.size());
  std::set<std::tuple<unsigned, RatioProbe, Mode>> seen;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = "slowdowns[" + std::to_string(i) + "]";
    const json& entry = list[i];
    if (!entry.is_object()) fail("publish", at, "an object", entry);
    check_fields("publish", entry, {"cpu", "probe", "mode", "ratio"}, at + ".");
    check_required("publish", entry, {"cpu", "probe", "mode", "ratio"}, at + ".");
    ClusterSlowdown s;
    s.cpu = whole_number("publish", at + ".cpu", entry["cpu"], 0);
    s.probe = enum_value("publish", at + ".probe", entry["probe"], kAllRatioProbes);
    s.mode = enum_value("publish", at + ".mode", entry["mode"], kAllModes);
    s.ratio = finite_number("publish", at + ".ratio", entry["ratio"], true);
    if (!seen.emplace(s.cpu, s.probe, s.mode).second) {
      throw ProtocolError("publish: '" + at + "' repeats cpu " + std::to_string(s.cpu) + " " +
                          std::string(to_string(s.probe)) + " " + std::string(to_string(s.mode)));
    }
    publish.slowdowns.push_back(s);
  }
  return publish;
}

// The cause names, as check_fields takes them.
constexpr auto kJobCauseNames = [] {
  std::array<std::string_view, kJobCauseCount> names{};
  for (std::size_t i = 0; i < kJobCauseCount; ++i) names[i] = to_string(kJobCauses[i]);
  return names;
}();

// Printable ASCII only: the id goes into the daemon's log and `status`,
// where a control character or a terminal escape must not.
std::string parse_job_id(const std::string& command, const json& id) {
  const std::string id_expected =
      "a string of 1 to " + std::to_string(kMaxJobIdChars) + " printable ASCII characters";
  if (!id.is_string()) fail(command, "job_id", id_expected, id);
  const auto& text = id.get_ref<const std::string&>();
  const bool printable =
      std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
  if (text.empty() || text.size() > kMaxJobIdChars || !printable) {
    fail(command, "job_id", id_expected, id);
  }
  return text;
}

JobStartRequest parse_job_start(const json& r) {
  check_fields("job-start", r, {"job_id", "cgroup"});
  check_required("job-start", r, {"job_id"});
  JobStartRequest start{parse_job_id("job-start", r["job_id"]), {}};
  if (const auto it = r.find("cgroup"); it != r.end()) {
    if (!it->is_string() || !parse_slurm_cgroup(it->get_ref<const std::string&>())) {
      fail("job-start", "cgroup",
           "a line of /proc/PID/cgroup naming a Slurm job's cgroup (at most " +
               std::to_string(kMaxCgroupLineChars) + " printable ASCII characters)",
           *it);
    }
    start.cgroup = it->get<std::string>();
  }
  return start;
}

JobCulpritsRequest parse_job_culprits(const json& r) {
  check_fields("job-culprits", r, {"job_id"});
  check_required("job-culprits", r, {"job_id"});
  return JobCulpritsRequest{parse_job_id("job-culprits", r["job_id"])};
}

// A bound as the errors print it: 86400, 1e+07, 12.5.
std::string number_text(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

// A number of a job-live line, `low` < (or <=) x <= `high`.
double live_number(const json& r, const char* field, double low, double high, bool open_low) {
  const json& value = r[field];
  const double x = value.is_number() ? value.get<double>() : std::nan("");
  if (!value.is_number() || !(open_low ? x > low : x >= low) || !(x <= high)) {
    fail("job-live", field,
         std::string("a number ") + (open_low ? "> " : ">= ") + number_text(low) +
             " and <= " + number_text(high),
         value);
  }
  return x;
}

// Waiting caused over `seconds` of a job of `ranks`: no more than the
// other ranks can have waited then.
double live_wait_caused(const json& r, const char* field, double seconds, unsigned ranks,
                        const char* bound) {
  const json& caused = r[field];
  const double most = seconds * static_cast<double>(ranks - 1);
  if (!caused.is_number() || !(caused.get<double>() >= 0) || !(caused.get<double>() <= most)) {
    fail("job-live", field,
         "a number >= 0 and <= " + std::string(bound) + " (" + number_text(most) + ")", caused);
  }
  return caused.get<double>();
}

std::optional<JobCause> live_cause(const json& r, const char* field) {
  const auto it = r.find(field);
  if (it == r.end()) return std::nullopt;
  const auto cause = it->is_string() ? job_cause_named(it->get<std::string>()) : std::nullopt;
  if (!cause) fail("job-live", field, "a cause of the job's (own-threads, ...)", *it);
  return cause;
}

// A rank's live line: every figure bounded by the others (a rank of the
// job, a cadence `corenoise job` allows, no more waiting caused than the
// other ranks can have waited so far, or in the epoch's window, which is
// no longer than the job).
JobLiveRequest parse_job_live(const json& r) {
  check_fields("job-live", r,
               {"job_id", "epoch", "elapsed_seconds", "interval_seconds", "ranks", "rank",
                "wait_caused_seconds", "cause", "window_seconds", "window_wait_caused_seconds",
                "window_cause"});
  check_required("job-live", r,
                 {"job_id", "epoch", "elapsed_seconds", "interval_seconds", "ranks", "rank",
                  "wait_caused_seconds"});
  JobLiveRequest live;
  live.job_id = parse_job_id("job-live", r["job_id"]);
  live.epoch = static_cast<long>(whole_number("job-live", "epoch", r["epoch"], 1));
  live.elapsed_seconds = live_number(r, "elapsed_seconds", 0, kMaxJobElapsedSeconds, true);
  live.interval_seconds =
      live_number(r, "interval_seconds", kMinLiveIntervalSeconds, kMaxLiveIntervalSeconds, false);
  live.ranks = whole_number("job-live", "ranks", r["ranks"], 1);
  if (live.ranks > kMaxJobRanks) fail("job-live", "ranks", "at most 10000000", r["ranks"]);
  live.rank = whole_number("job-live", "rank", r["rank"], 0);
  if (live.rank >= live.ranks) fail("job-live", "rank", "a rank below 'ranks'", r["rank"]);
  live.wait_caused_seconds = live_wait_caused(r, "wait_caused_seconds", live.elapsed_seconds,
                                              live.ranks, "elapsed_seconds x (ranks - 1)");
  live.cause = live_cause(r, "cause");
  // The window's figures come together, or not at all.
  if (r.contains("window_seconds") || r.contains("window_wait_caused_seconds") ||
      r.contains("window_cause")) {
    check_required("job-live", r, {"window_seconds", "window_wait_caused_seconds"});
    live.window_seconds = live_number(r, "window_seconds", 0, live.elapsed_seconds, true);
    live.window_wait_caused_seconds =
        live_wait_caused(r, "window_wait_caused_seconds", live.window_seconds, live.ranks,
                         "window_seconds x (ranks - 1)");
    live.window_cause = live_cause(r, "window_cause");
  }
  return live;
}

// One entry of a job report's "cpus", at `at` ("cpus[3]"): each cause's
// seconds within the job's `elapsed` ones.
JobCpuLoss parse_cpu_loss(const json& entry, const std::string& at, const json& elapsed) {
  if (!entry.is_object()) fail("job", at, "an object", entry);
  check_fields("job", entry, {"cpu", "lost_seconds"}, at + ".");
  check_required("job", entry, {"cpu", "lost_seconds"}, at + ".");
  JobCpuLoss loss;
  loss.cpu = whole_number("job", at + ".cpu", entry["cpu"], 0);
  const json& lost = entry["lost_seconds"];
  if (!lost.is_object()) fail("job", at + ".lost_seconds", "an object", lost);
  check_fields("job", lost, kJobCauseNames, at + ".lost_seconds.", "cause");
  const double elapsed_seconds = elapsed.get<double>();
  for (const auto& [name, value] : lost.items()) {
    const double x = value.is_number() ? value.get<double>() : -1;
    if (!value.is_number() || !(x >= 0) || !(x <= elapsed_seconds)) {
      fail("job", at + ".lost_seconds." + name,
           "a number >= 0 and <= elapsed_seconds (" + echo(elapsed) + ")", value);
    }
    loss.lost_seconds[index_of(*job_cause_named(name))] = x;  // named: check_fields passed
  }
  return loss;
}

// Any local user may send a job report (docs/control.md, Permissions), so
// this is where what one report can add is bounded: every amount finite,
// no cause costing a CPU more than the job's wall time, a bounded wall time
// and a bounded number of CPUs, each once.
JobRequest parse_job(const json& r) {
  check_fields("job", r, {"job_id", "ended_unix_seconds", "elapsed_seconds", "ranks", "cpus"});
  check_required("job", r, {"job_id", "ended_unix_seconds", "elapsed_seconds", "ranks", "cpus"});
  JobRequest job;

  job.job_id = parse_job_id("job", r["job_id"]);

  job.ended_unix_seconds =
      finite_number("job", "ended_unix_seconds", r["ended_unix_seconds"], false);
  const json& elapsed = r["elapsed_seconds"];
  if (!elapsed.is_number() || !(elapsed.get<double>() > 0) ||
      !(elapsed.get<double>() <= kMaxJobElapsedSeconds)) {
    fail("job", "elapsed_seconds",
         "a number > 0 and <= " + std::to_string(static_cast<long long>(kMaxJobElapsedSeconds)),
         elapsed);
  }
  job.elapsed_seconds = elapsed.get<double>();
  job.ranks = whole_number("job", "ranks", r["ranks"], 1);

  const json& list = r["cpus"];
  if (!list.is_array()) fail("job", "cpus", "an array", list);
  if (list.size() > kMaxJobCpus) {
    throw ProtocolError("job: 'cpus' has " + std::to_string(list.size()) + " entries (at most " +
                        std::to_string(kMaxJobCpus) + ")");
  }
  double report_total = 0;  // seconds, over every CPU and cause
  job.cpus.reserve(list.size());
  std::set<unsigned> seen;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = "cpus[" + std::to_string(i) + "]";
    const JobCpuLoss loss = parse_cpu_loss(list[i], at, elapsed);
    if (!seen.insert(loss.cpu).second) {
      throw ProtocolError("job: '" + at + "' repeats cpu " + std::to_string(loss.cpu));
    }
    for (double x : loss.lost_seconds) report_total += x;
    job.cpus.push_back(loss);
  }
  // A report is one rank's: what it lost, split over the CPUs it ran on, is
  // no more than its wall time in all, however many CPUs it names (a
  // microsecond of rounding allowed).
  if (report_total > job.elapsed_seconds + 1e-6) {
    throw ProtocolError("job: the causes of all 'cpus' add up to " + echo(report_total) +
                        " s, more than elapsed_seconds (" + echo(job.elapsed_seconds) +
                        "): a rank's loss is split over its CPUs");
  }
  return job;
}

// Strips nlohmann's "[json.exception.parse_error.101] " prefix: the client
// wants to know where its JSON broke, not the library's error numbering.
std::string plain_message(const std::exception& e) {
  std::string text = e.what();
  if (text.rfind("[json.exception.", 0) == 0) {
    if (const auto end = text.find("] "); end != std::string::npos) text.erase(0, end + 2);
  }
  return text;
}

// One line of JSON (a trailing '\r' tolerated); `what` ("request", "reply")
// names it in errors.
json parse_line(std::string_view line, int max_depth, const std::string& what) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  try {
    // The callback sees each value's depth as the parser enters it, so a
    // line of 60,000 '[' stops at the limit instead of building a value that
    // later recursion (copy, dump, compare) could not handle.
    return json::parse(line.begin(), line.end(), [&](int depth, json::parse_event_t, json&) {
      if (depth > max_depth) {
        throw ProtocolError("malformed " + what + ": JSON nested deeper than " +
                            std::to_string(max_depth) + " levels");
      }
      return true;
    });
  } catch (const json::exception& e) {
    throw ProtocolError("malformed " + what + ": " + plain_message(e));
  }
}

// The request `command` names, from its object. Throws ProtocolError.
ControlRequest request_named(const std::string& command, const json& request) {
  if (command == "status") {
    check_fields("status", request, {});
    return StatusRequest{};
  }
  if (command == "results") {
    check_fields("results", request, {});
    return ResultsRequest{};
  }
  if (command == "pause") return parse_pause(request);
  if (command == "resume") {
    check_fields("resume", request, {});
    return ResumeRequest{};
  }
  if (command == "run") return parse_run(request);
  if (command == "publish") return parse_publish(request);
  if (command == "calibrate") {
    check_fields("calibrate", request, {});
    return CalibrateRequest{};
  }
  if (command == "job") return parse_job(request);
  if (command == "job-start") return parse_job_start(request);
  if (command == "job-live") return parse_job_live(request);
  if (command == "job-culprits") return parse_job_culprits(request);
  throw ProtocolError("unknown command " + echo(command) +
                      " (expected status, results, pause, resume, run, publish, calibrate, "
                      "job-start, job-live, job-culprits or job)");
}

}  // namespace

ControlRequest parse_request(std::string_view line) {
  return request_from_json(parse_line(line, kMaxRequestDepth, "request"));
}

ControlRequest request_from_json(const json& request) {
  if (!request.is_object()) {
    throw ProtocolError("a request must be a JSON object with a \"command\", got " +
                        type_word(request));
  }
  const auto found = request.find("command");
  if (found == request.end()) throw ProtocolError("request has no \"command\" field");
  if (!found->is_string()) {
    throw ProtocolError("'command' must be a string, got " + echo(*found));
  }
  const auto& command = found->get_ref<const std::string&>();
  try {
    return request_named(command, request);
  } catch (ProtocolError& e) {
    e.command = command;
    throw;
  } catch (const json::exception& e) {
    // Not expected (every access is type-checked first); kept so that a
    // slip here is an error reply, never an exception the server misreads.
    ProtocolError error(command + ": " + plain_message(e));
    error.command = command;
    throw error;
  }
}

namespace {

// A job-live line's fields, into `out`.
void add_job_live(const JobLiveRequest& live, json& out) {
  for (double x : {live.elapsed_seconds, live.interval_seconds, live.wait_caused_seconds,
                   live.window_seconds, live.window_wait_caused_seconds}) {
    if (!std::isfinite(x)) throw std::invalid_argument("job-live: every figure must be finite");
  }
  out["job_id"] = live.job_id;
  out["epoch"] = static_cast<std::uint64_t>(live.epoch);
  out["elapsed_seconds"] = live.elapsed_seconds;
  out["interval_seconds"] = live.interval_seconds;
  out["ranks"] = live.ranks;
  out["rank"] = live.rank;
  out["wait_caused_seconds"] = live.wait_caused_seconds;
  if (live.cause) out["cause"] = std::string(to_string(*live.cause));
  if (live.window_seconds > 0) {
    out["window_seconds"] = live.window_seconds;
    out["window_wait_caused_seconds"] = live.window_wait_caused_seconds;
    if (live.window_cause) out["window_cause"] = std::string(to_string(*live.window_cause));
  }
}

}  // namespace

json to_json(const ControlRequest& request) {
  auto finite = [](double x, const char* field) {
    if (!std::isfinite(x)) throw std::invalid_argument(std::string(field) + " must be finite");
    return x;
  };
  json out{{"command", command_name(request)}};
  if (const auto* pause = std::get_if<PauseRequest>(&request)) {
    if (pause->seconds) out["seconds"] = finite(*pause->seconds, "seconds");
  } else if (const auto* run = std::get_if<RunRequest>(&request)) {
    if (run->at_unix_seconds) out["at_unix_seconds"] = finite(*run->at_unix_seconds, "at");
    if (run->modes == std::vector<Mode>{Mode::isolated}) {
      out["mode"] = "isolated";
    } else if (run->modes == std::vector<Mode>{Mode::concurrent}) {
      out["mode"] = "concurrent";
    } else if (run->modes == std::vector<Mode>{Mode::isolated, Mode::concurrent}) {
      out["mode"] = "both";
    } else {
      throw std::invalid_argument(
          "run: modes must be isolated, concurrent or both (in that order)");
    }
    out["wait"] = run->wait;
  } else if (const auto* publish = std::get_if<PublishRequest>(&request)) {
    out["published_unix_seconds"] = finite(publish->published_unix_seconds, "published");
    out["reference"] = publish->reference.is_null() ? json::object() : publish->reference;
    json list = json::array();
    for (const auto& s : publish->slowdowns) {
      list.push_back({{"cpu", s.cpu},
                      {"probe", to_string(s.probe)},
                      {"mode", to_string(s.mode)},
                      {"ratio", finite(s.ratio, "ratio")}});
    }
    out["slowdowns"] = std::move(list);
  } else if (const auto* job = std::get_if<JobRequest>(&request)) {
    out["job_id"] = job->job_id;
    out["ended_unix_seconds"] = finite(job->ended_unix_seconds, "ended");
    out["elapsed_seconds"] = finite(job->elapsed_seconds, "elapsed");
    out["ranks"] = job->ranks;
    json cpus = json::array();
    for (const JobCpuLoss& c : job->cpus) {
      // A cause that cost nothing is left out (the parser reads it as 0):
      // most CPUs lose to one or two causes, and a report for a big node
      // must stay within the daemon's 1 MiB line.
      json lost = json::object();
      for (JobCause cause : kJobCauses) {
        const double x = c.lost_seconds[index_of(cause)];
        if (x != 0) lost[std::string(to_string(cause))] = finite(x, "lost_seconds");
      }
      cpus.push_back({{"cpu", c.cpu}, {"lost_seconds", std::move(lost)}});
    }
    out["cpus"] = std::move(cpus);
  } else if (const auto* start = std::get_if<JobStartRequest>(&request)) {
    out["job_id"] = start->job_id;
    if (!start->cgroup.empty()) out["cgroup"] = start->cgroup;
  } else if (const auto* live = std::get_if<JobLiveRequest>(&request)) {
    add_job_live(*live, out);
  } else if (const auto* question = std::get_if<JobCulpritsRequest>(&request)) {
    out["job_id"] = question->job_id;
  }
  return out;
}

std::string_view command_name(const ControlRequest& request) {
  constexpr std::string_view kNames[] = {"status",    "results",  "pause",       "resume",
                                         "run",       "publish",  "calibrate",   "job",
                                         "job-start", "job-live", "job-culprits"};
  static_assert(std::size(kNames) == std::variant_size_v<ControlRequest>);
  return kNames[request.index()];
}

bool needs_privilege(const ControlRequest& request) {
  return !std::holds_alternative<StatusRequest>(request) &&
         !std::holds_alternative<ResultsRequest>(request) &&
         !std::holds_alternative<JobRequest>(request) &&
         !std::holds_alternative<JobStartRequest>(request) &&
         !std::holds_alternative<JobLiveRequest>(request) &&
         !std::holds_alternative<JobCulpritsRequest>(request);
}

std::string user_socket_beside(std::string_view control_socket) {
  const std::size_t slash = control_socket.rfind('/');
  if (slash == std::string_view::npos) return kUserSocketName;
  return std::string(control_socket.substr(0, slash + 1)) + kUserSocketName;
}

json ok_reply(json fields) {
  if (fields.is_null()) fields = json::object();
  if (!fields.is_object()) return {{"ok", true}, {"result", std::move(fields)}};
  if (!fields.contains("ok")) fields["ok"] = true;
  return fields;
}

json error_reply(std::string_view message) { return {{"ok", false}, {"error", message}}; }

std::string encode_line(const json& value) {
  std::string line = value.dump(-1, ' ', false, json::error_handler_t::replace);
  line += '\n';
  return line;
}

json parse_reply(std::string_view line) {
  json reply = parse_line(line, kMaxReplyDepth, "reply");
  if (!reply.is_object() || !reply.contains("ok") || !reply["ok"].is_boolean()) {
    throw ProtocolError("malformed reply: expected an object with a boolean \"ok\", got " +
                        echo(reply));
  }
  if (!reply["ok"].get<bool>() && !(reply.contains("error") && reply["error"].is_string())) {
    throw ProtocolError("malformed reply: \"ok\" is false but there is no \"error\" string");
  }
  return reply;
}

}  // namespace corenoise
