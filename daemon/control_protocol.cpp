#include "daemon/control_protocol.h"

#include <cmath>
#include <initializer_list>
#include <limits>
#include <set>
#include <tuple>

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

// Every field of `object` must be one of `allowed` (plus "command" at top level).
void check_fields(std::string_view command, const json& object,
                  std::initializer_list<std::string_view> allowed, std::string_view where = "") {
  for (const auto& [key, value] : object.items()) {
    if (where.empty() && key == "command") continue;
    bool known = false;
    for (std::string_view a : allowed) known = known || key == a;
    if (known) continue;
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    throw ProtocolError(
        std::string(command) + ": unknown field '" + std::string(where) + key + "'" +
        (list.empty() ? std::string(" (it takes no fields)") : " (expected " + list + ")"));
  }
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
  for (const char* required : {"published_unix_seconds", "reference", "slowdowns"}) {
    if (!r.contains(required)) {
      throw ProtocolError(std::string("publish: missing field '") + required + "'");
    }
  }
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
    for (const char* required : {"cpu", "probe", "mode", "ratio"}) {
      if (!entry.contains(required)) {
        throw ProtocolError("publish: missing field '" + at + "." + required + "'");
      }
    }
    ClusterSlowdown s;
    const json& cpu = entry["cpu"];
    // A CPU index is an integer; 3.0 is accepted as 3 (some encoders write
    // every number as a double), 3.5 and -1 are not.
    const bool integral =
        (cpu.is_number_unsigned()) ||
        (cpu.is_number_float() && std::isfinite(cpu.get<double>()) && cpu.get<double>() >= 0 &&
         std::floor(cpu.get<double>()) == cpu.get<double>());
    if (!integral || cpu.get<double>() > std::numeric_limits<unsigned>::max()) {
      fail("publish", at + ".cpu", "an integer >= 0", cpu);
    }
    s.cpu = static_cast<unsigned>(cpu.get<double>());
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
  } catch (const ProtocolError&) {
    throw;
  } catch (const json::exception& e) {
    // Not expected (every access is type-checked first); kept so that a
    // slip here is an error reply, never an exception the server misreads.
    throw ProtocolError(command + ": " + plain_message(e));
  }
  throw ProtocolError("unknown command " + echo(*found) +
                      " (expected status, results, pause, resume, run, publish or calibrate)");
}

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
  }
  return out;
}

std::string_view command_name(const ControlRequest& request) {
  constexpr std::string_view kNames[] = {"status", "results", "pause",    "resume",
                                         "run",    "publish", "calibrate"};
  static_assert(std::size(kNames) == std::variant_size_v<ControlRequest>);
  return kNames[request.index()];
}

bool is_mutating(const ControlRequest& request) {
  return !std::holds_alternative<StatusRequest>(request) &&
         !std::holds_alternative<ResultsRequest>(request);
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
