// The control protocol's parser and encoders: every command, every malformed
// form with the message a user would read, and randomized inputs that must
// only ever produce a request or a ProtocolError.
#include "daemon/control/control_protocol.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "daemon/control/control_replies.h"

namespace corenoise {
namespace {

using nlohmann::json;

// The ProtocolError message for `line`, or "" if it parsed.
std::string error_of(std::string_view line) {
  try {
    parse_request(line);
  } catch (const ProtocolError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_REFUSED(line, fragment)                                                       \
  do {                                                                                       \
    const std::string message = error_of(line);                                              \
    EXPECT_NE(message.find(fragment), std::string::npos)                                     \
        << "line: " << (line) << "\nmessage: '" << message << "'\nexpected: " << (fragment); \
  } while (0)

TEST(ControlProtocol, ParsesFieldlessCommands) {
  EXPECT_TRUE(std::holds_alternative<StatusRequest>(parse_request(R"({"command":"status"})")));
  EXPECT_TRUE(std::holds_alternative<ResultsRequest>(parse_request(R"({"command":"results"})")));
  EXPECT_TRUE(std::holds_alternative<ResumeRequest>(parse_request(R"({"command":"resume"})")));
  EXPECT_TRUE(
      std::holds_alternative<CalibrateRequest>(parse_request(R"({"command":"calibrate"})")));
  // Whitespace and a CRLF line ending (a telnet-ish client) are fine.
  EXPECT_TRUE(
      std::holds_alternative<StatusRequest>(parse_request(" { \"command\" : \"status\" }\r")));
}

TEST(ControlProtocol, ParsesPause) {
  auto pause = std::get<PauseRequest>(parse_request(R"({"command":"pause"})"));
  EXPECT_FALSE(pause.seconds);
  pause = std::get<PauseRequest>(parse_request(R"({"command":"pause","seconds":300})"));
  EXPECT_EQ(pause.seconds, 300);
  pause = std::get<PauseRequest>(parse_request(R"({"command":"pause","seconds":0.5})"));
  EXPECT_EQ(pause.seconds, 0.5);
}

TEST(ControlProtocol, ParsesRun) {
  auto run = std::get<RunRequest>(parse_request(R"({"command":"run"})"));
  EXPECT_FALSE(run.at_unix_seconds);
  EXPECT_EQ(run.modes, std::vector<Mode>{Mode::isolated});
  EXPECT_TRUE(run.wait);
  run = std::get<RunRequest>(parse_request(
      R"({"command":"run","at_unix_seconds":1795963026.5,"mode":"both","wait":false})"));
  EXPECT_EQ(run.at_unix_seconds, 1795963026.5);
  EXPECT_EQ(run.modes, (std::vector<Mode>{Mode::isolated, Mode::concurrent}));
  EXPECT_FALSE(run.wait);
  run = std::get<RunRequest>(parse_request(R"({"command":"run","mode":"concurrent"})"));
  EXPECT_EQ(run.modes, std::vector<Mode>{Mode::concurrent});
}

TEST(ControlProtocol, ParsesPublish) {
  const auto publish = std::get<PublishRequest>(parse_request(
      R"({"command":"publish","published_unix_seconds":1795963000,"reference":{"nodes":32},)"
      R"("slowdowns":[{"cpu":0,"probe":"matmul","mode":"isolated","ratio":1.02},)"
      R"({"cpu":7,"probe":"stream","mode":"concurrent","ratio":0.98},)"
      R"({"cpu":7.0,"probe":"clock","mode":"concurrent","ratio":1},)"
      R"({"cpu":7,"probe":"expected","mode":"concurrent","ratio":1.3}]})"));
  EXPECT_EQ(publish.published_unix_seconds, 1795963000);
  EXPECT_EQ(publish.reference, json({{"nodes", 32}}));
  ASSERT_EQ(publish.slowdowns.size(), 4u);
  EXPECT_EQ(publish.slowdowns[0].cpu, 0u);
  EXPECT_EQ(publish.slowdowns[0].probe, ratio_probe(ProbeKind::matmul));
  EXPECT_EQ(publish.slowdowns[0].mode, Mode::isolated);
  EXPECT_DOUBLE_EQ(publish.slowdowns[0].ratio, 1.02);
  EXPECT_EQ(publish.slowdowns[1].cpu, 7u);
  EXPECT_EQ(publish.slowdowns[1].probe, ratio_probe(ProbeKind::stream));
  EXPECT_EQ(publish.slowdowns[1].mode, Mode::concurrent);
  EXPECT_EQ(publish.slowdowns[2].probe, ratio_probe(ProbeKind::clock));
  EXPECT_EQ(publish.slowdowns[3].probe, kExpectedRatio);
  // An empty publication is valid: it clears the cluster figures.
  EXPECT_TRUE(std::get<PublishRequest>(parse_request(R"({"command":"publish",)"
                                                     R"("published_unix_seconds":1,)"
                                                     R"("reference":{},"slowdowns":[]})"))
                  .slowdowns.empty());
}

// A valid job report with `cpus` as given.
std::string job_line(const std::string& cpus, const std::string& elapsed = "12.5") {
  return R"({"command":"job","job_id":"slurm-1234","ended_unix_seconds":1795963000.5,)"
         R"("elapsed_seconds":)" +
         elapsed + R"(,"ranks":4,"cpus":)" + cpus + "}";
}

TEST(ControlProtocol, ParsesJob) {
  const auto job = std::get<JobRequest>(parse_request(job_line(
      R"([{"cpu":3,"lost_seconds":{"own-threads":0.12,"other-processes":0.0,"interrupts":0.01,)"
      R"("steal":0.0,"page-faults":0.0,"slower-clock":0.0,"more-work":0.3}},)"
      R"({"cpu":5.0,"lost_seconds":{"steal":12.07}},)"
      R"({"cpu":0,"lost_seconds":{}}])")));
  EXPECT_EQ(job.job_id, "slurm-1234");
  EXPECT_EQ(job.ended_unix_seconds, 1795963000.5);
  EXPECT_EQ(job.elapsed_seconds, 12.5);
  EXPECT_EQ(job.ranks, 4u);
  ASSERT_EQ(job.cpus.size(), 3u);
  EXPECT_EQ(job.cpus[0].cpu, 3u);
  EXPECT_EQ(job.cpus[0].lost_seconds[index_of(JobCause::own_threads)], 0.12);
  EXPECT_EQ(job.cpus[0].lost_seconds[index_of(JobCause::interrupts)], 0.01);
  EXPECT_EQ(job.cpus[0].lost_seconds[index_of(JobCause::more_work)], 0.3);
  EXPECT_EQ(job.cpus[0].lost_seconds[index_of(JobCause::steal)], 0.0);
  // A cause may be omitted (0), and all of them, on all CPUs, may add up to
  // the whole wall time (0.43 + 12.07 = 12.5).
  EXPECT_EQ(job.cpus[1].cpu, 5u);
  EXPECT_EQ(job.cpus[1].lost_seconds[index_of(JobCause::steal)], 12.07);
  EXPECT_EQ(job.cpus[1].lost_seconds[index_of(JobCause::own_threads)], 0.0);
  EXPECT_EQ(job.cpus[2].lost_seconds, JobLostSeconds{});
  // No CPUs, the longest id, the longest job: all valid.
  EXPECT_TRUE(std::get<JobRequest>(parse_request(job_line("[]"))).cpus.empty());
  const std::string id(kMaxJobIdChars, '~');
  EXPECT_EQ(std::get<JobRequest>(
                parse_request(R"({"command":"job","job_id":")" + id +
                              R"(","ended_unix_seconds":0,"elapsed_seconds":1e7,"ranks":1,)"
                              R"("cpus":[]})"))
                .job_id,
            id);
  // The vocabulary, spelt once (job_causes.h).
  std::vector<std::string> names;
  for (JobCause cause : kJobCauses) names.emplace_back(to_string(cause));
  EXPECT_EQ(names, (std::vector<std::string>{"own-threads", "other-processes", "interrupts",
                                             "steal", "page-faults", "slower-clock", "more-work"}));
  for (JobCause cause : kJobCauses) EXPECT_EQ(job_cause_named(to_string(cause)), cause);
  EXPECT_FALSE(job_cause_named("Steal"));
}

// The server counts refused job reports by the command the error carries:
// the request's own, once the line is an object naming one.
TEST(ControlProtocol, AnErrorCarriesTheCommandItsLineNamed) {
  auto command_of = [](std::string_view line) {
    try {
      parse_request(line);
    } catch (const ProtocolError& e) {
      return e.command;
    }
    return std::string("(parsed)");
  };
  EXPECT_EQ(command_of(job_line("[]", "0")), "job");
  EXPECT_EQ(command_of(R"({"command":"job"})"), "job");
  EXPECT_EQ(command_of(R"({"command":"pause","seconds":-1})"), "pause");
  EXPECT_EQ(command_of(R"({"command":"nope"})"), "nope");
  EXPECT_EQ(command_of(R"({"command":7})"), "");
  EXPECT_EQ(command_of(R"({"seconds":1})"), "");
  EXPECT_EQ(command_of(R"({"command":"job",)"), "");
  EXPECT_EQ(command_of(job_line("[]")), "(parsed)");
}

TEST(ControlProtocol, RefusesBadJobsNamingTheField) {
  const std::string all =
      R"("job_id":"j","ended_unix_seconds":1,"elapsed_seconds":10,"ranks":1,"cpus":[])";
  EXPECT_REFUSED(R"({"command":"job",)" + all + R"(,"user":"alice"})",
                 "job: unknown field 'user' (expected job_id, ended_unix_seconds, "
                 "elapsed_seconds, ranks, cpus)");
  for (const char* field : {"job_id", "ended_unix_seconds", "elapsed_seconds", "ranks", "cpus"}) {
    json request = json::parse(R"({"command":"job",)" + all + "}");
    request.erase(field);
    EXPECT_REFUSED(request.dump(), std::string("job: missing field '") + field + "'");
  }
  auto with = [&](const std::string& field, const std::string& value) {
    json request = json::parse(R"({"command":"job",)" + all + "}");
    request[field] = json::parse(value);
    return request.dump();
  };
  const std::string id_expected = "job: 'job_id' must be a string of 1 to 128 printable ASCII";
  EXPECT_REFUSED(with("job_id", "1234"), id_expected + " characters, got 1234");
  EXPECT_REFUSED(with("job_id", R"("")"), id_expected);
  EXPECT_REFUSED(with("job_id", "\"" + std::string(kMaxJobIdChars + 1, 'x') + "\""), id_expected);
  EXPECT_REFUSED(with("job_id", R"("a\nb")"), id_expected);
  EXPECT_REFUSED(with("job_id", R"("a\u001b[2Jb")"), id_expected);
  EXPECT_REFUSED(with("job_id", R"("caf\u00e9")"), id_expected);
  EXPECT_REFUSED(with("ended_unix_seconds", "-1"),
                 "job: 'ended_unix_seconds' must be a number >= 0, got -1");
  EXPECT_REFUSED(with("ended_unix_seconds", R"("now")"), "'ended_unix_seconds' must be");
  EXPECT_REFUSED(with("elapsed_seconds", "0"),
                 "job: 'elapsed_seconds' must be a number > 0 and <= 10000000, got 0");
  EXPECT_REFUSED(with("elapsed_seconds", "-3"), "'elapsed_seconds' must be a number > 0");
  EXPECT_REFUSED(with("elapsed_seconds", "1.0000001e7"),
                 "'elapsed_seconds' must be a number > 0 and <= 10000000");
  EXPECT_REFUSED(with("elapsed_seconds", "null"), "'elapsed_seconds' must be");
  EXPECT_REFUSED(R"({"command":"job","job_id":"j","ended_unix_seconds":1,"elapsed_seconds":1e999,)"
                 R"("ranks":1,"cpus":[]})",
                 "number overflow");
  EXPECT_REFUSED(with("ranks", "0"), "job: 'ranks' must be an integer >= 1, got 0");
  EXPECT_REFUSED(with("ranks", "2.5"), "job: 'ranks' must be an integer >= 1, got 2.5");
  EXPECT_REFUSED(with("ranks", "-4"), "'ranks' must be an integer >= 1");
  EXPECT_REFUSED(with("ranks", "99999999999"), "'ranks' must be an integer >= 1");
  EXPECT_REFUSED(with("cpus", "{}"), "job: 'cpus' must be an array, got {}");
  json many = json::array();
  for (std::size_t cpu = 0; cpu <= kMaxJobCpus; ++cpu) {
    many.push_back({{"cpu", cpu}, {"lost_seconds", json::object()}});
  }
  EXPECT_REFUSED(with("cpus", many.dump()), "job: 'cpus' has 4097 entries (at most 4096)");
  many.erase(many.size() - 1);
  EXPECT_EQ(error_of(with("cpus", many.dump())), "");

  EXPECT_REFUSED(job_line("[7]"), "job: 'cpus[0]' must be an object, got 7");
  EXPECT_REFUSED(job_line(R"([{"cpu":1,"lost_seconds":{},"node":"n1"}])"),
                 "job: unknown field 'cpus[0].node' (expected cpu, lost_seconds)");
  EXPECT_REFUSED(job_line(R"([{"lost_seconds":{}}])"), "job: missing field 'cpus[0].cpu'");
  EXPECT_REFUSED(job_line(R"([{"cpu":1}])"), "job: missing field 'cpus[0].lost_seconds'");
  EXPECT_REFUSED(job_line(R"([{"cpu":-1,"lost_seconds":{}}])"),
                 "job: 'cpus[0].cpu' must be an integer >= 0, got -1");
  EXPECT_REFUSED(job_line(R"([{"cpu":1.5,"lost_seconds":{}}])"),
                 "job: 'cpus[0].cpu' must be an integer >= 0, got 1.5");
  EXPECT_REFUSED(job_line(R"([{"cpu":"3","lost_seconds":{}}])"),
                 "job: 'cpus[0].cpu' must be an integer >= 0, got \"3\"");
  EXPECT_REFUSED(job_line(R"([{"cpu":3,"lost_seconds":{}},{"cpu":3.0,"lost_seconds":{}}])"),
                 "job: 'cpus[1]' repeats cpu 3");
  EXPECT_REFUSED(job_line(R"([{"cpu":3,"lost_seconds":[0.1]}])"),
                 "job: 'cpus[0].lost_seconds' must be an object, got [0.1]");
  EXPECT_REFUSED(job_line(R"([{"cpu":3,"lost_seconds":{"gpu":0.1}}])"),
                 "job: unknown cause 'cpus[0].lost_seconds.gpu' (expected own-threads, "
                 "other-processes, interrupts, steal, page-faults, slower-clock, more-work)");
  EXPECT_REFUSED(job_line(R"([{"cpu":3,"lost_seconds":{"own_threads":0.1}}])"),
                 "job: unknown cause 'cpus[0].lost_seconds.own_threads'");
  EXPECT_REFUSED(job_line(R"([{"cpu":3,"lost_seconds":{"steal":-0.1}}])"),
                 "job: 'cpus[0].lost_seconds.steal' must be a number >= 0 and <= "
                 "elapsed_seconds (12.5), got -0.1");
  // A cause cannot have cost a CPU more than the job's wall time.
  EXPECT_REFUSED(
      job_line(R"([{"cpu":3,"lost_seconds":{}},{"cpu":4,"lost_seconds":{"more-work":13}}])"),
      "job: 'cpus[1].lost_seconds.more-work' must be a number >= 0 and <= "
      "elapsed_seconds (12.5), got 13");
  EXPECT_REFUSED(job_line(R"([{"cpu":3,"lost_seconds":{"interrupts":"0.1"}}])"),
                 "'cpus[0].lost_seconds.interrupts' must be a number >= 0");
  EXPECT_REFUSED(job_line(R"([{"cpu":3,"lost_seconds":{"interrupts":null}}])"),
                 "'cpus[0].lost_seconds.interrupts' must be a number >= 0");
}

// The largest report the protocol takes, as to_json writes it with times
// to the microsecond, fits corenoised's 1 MiB request line (docs/control.md).
TEST(ControlProtocol, TheLargestJobReportFitsTheDaemonsLine) {
  JobRequest job;
  job.job_id = std::string(kMaxJobIdChars, 'x');
  job.ended_unix_seconds = 1795963000.123456;
  job.elapsed_seconds = 9999999.5;
  job.ranks = 4096;
  for (unsigned cpu = 0; cpu < kMaxJobCpus; ++cpu) {
    JobCpuLoss loss;
    loss.cpu = cpu + 100000;
    // As many digits as any, and within the wall time in all (7 x 4096 of them).
    for (double& x : loss.lost_seconds) x = 348.567891;
    job.cpus.push_back(loss);
  }
  const std::string line = encode_line(to_json(job));
  EXPECT_LT(line.size(), std::size_t{1} << 20);
  EXPECT_EQ(std::get<JobRequest>(parse_request(line.substr(0, line.size() - 1))).cpus.size(),
            kMaxJobCpus);
}

TEST(ControlProtocol, RefusesMalformedLines) {
  EXPECT_REFUSED("", "malformed request");
  EXPECT_REFUSED("{bad", "malformed request");
  EXPECT_REFUSED("{\"command\":\"status\"} trailing", "malformed request");
  EXPECT_REFUSED("[1,2]", "must be a JSON object");
  EXPECT_REFUSED("\"status\"", "must be a JSON object");
  EXPECT_REFUSED("{}", "no \"command\"");
  EXPECT_REFUSED(R"({"command":7})", "'command' must be a string, got 7");
  EXPECT_REFUSED(R"({"command":"stats"})", "unknown command \"stats\" (expected status,");
  EXPECT_REFUSED(R"({"command":"STATUS"})", "unknown command");
  // Invalid UTF-8 inside a string.
  EXPECT_REFUSED("{\"command\":\"st\xff\"}", "malformed request");
  // Deep nesting stops at the limit instead of recursing.
  EXPECT_REFUSED(std::string(100000, '['), "nested deeper than");
  EXPECT_REFUSED(R"({"command":"publish","published_unix_seconds":1,"slowdowns":[],"reference":)" +
                     std::string(40, '[') + std::string(40, ']') + "}",
                 "nested deeper than");
}

TEST(ControlProtocol, RefusesBadFieldsNamingThem) {
  EXPECT_REFUSED(R"({"command":"status","verbose":true})",
                 "status: unknown field 'verbose' (it takes no fields)");
  EXPECT_REFUSED(R"({"command":"resume","x":1})", "resume: unknown field 'x'");
  EXPECT_REFUSED(R"({"command":"results","x":1})", "results: unknown field 'x'");
  EXPECT_REFUSED(R"({"command":"calibrate","x":1})", "calibrate: unknown field 'x'");
  EXPECT_REFUSED(R"({"command":"pause","seconds":"x"})",
                 R"(pause: 'seconds' must be a number > 0, got "x")");
  EXPECT_REFUSED(R"({"command":"pause","seconds":0})",
                 "pause: 'seconds' must be a number > 0, got 0");
  EXPECT_REFUSED(R"({"command":"pause","seconds":-5})", "got -5");
  EXPECT_REFUSED(R"({"command":"pause","seconds":null})", "got null");
  EXPECT_REFUSED(R"({"command":"pause","seconds":1e999})", "number overflow");
  EXPECT_REFUSED(R"({"command":"pause","second":5})",
                 "pause: unknown field 'second' (expected seconds)");
  EXPECT_REFUSED(R"({"command":"run","mode":"fast"})",
                 R"(run: 'mode' must be one of "isolated", "concurrent", "both", got "fast")");
  EXPECT_REFUSED(R"({"command":"run","mode":["isolated"]})", "run: 'mode' must be one of");
  EXPECT_REFUSED(R"({"command":"run","wait":"yes"})",
                 R"(run: 'wait' must be true or false, got "yes")");
  EXPECT_REFUSED(R"({"command":"run","wait":1})", "run: 'wait' must be true or false, got 1");
  EXPECT_REFUSED(R"({"command":"run","at_unix_seconds":-1})",
                 "run: 'at_unix_seconds' must be a number >= 0, got -1");
  EXPECT_REFUSED(R"({"command":"run","at_unix_seconds":"now"})", "'at_unix_seconds'");
  EXPECT_REFUSED(R"({"command":"run","at":5})",
                 "run: unknown field 'at' (expected at_unix_seconds, mode, wait)");
  // A long value is echoed cut short, not in full.
  const std::string long_mode = R"({"command":"run","mode":")" + std::string(10000, 'x') + "\"}";
  EXPECT_LT(error_of(long_mode).size(), 200u);
}

TEST(ControlProtocol, RefusesBadPublications) {
  const std::string head = R"({"command":"publish","published_unix_seconds":1,"reference":{},)";
  auto with = [&](const std::string& slowdowns) {
    return head + R"("slowdowns":)" + slowdowns + "}";
  };
  EXPECT_REFUSED(R"({"command":"publish","reference":{},"slowdowns":[]})",
                 "publish: missing field 'published_unix_seconds'");
  EXPECT_REFUSED(R"({"command":"publish","published_unix_seconds":1,"slowdowns":[]})",
                 "publish: missing field 'reference'");
  EXPECT_REFUSED(R"({"command":"publish","published_unix_seconds":1,"reference":{}})",
                 "publish: missing field 'slowdowns'");
  EXPECT_REFUSED(
      R"({"command":"publish","published_unix_seconds":"x","reference":{},"slowdowns":[]})",
      "publish: 'published_unix_seconds' must be a number >= 0");
  EXPECT_REFUSED(
      R"({"command":"publish","published_unix_seconds":1,"reference":[],"slowdowns":[]})",
      "publish: 'reference' must be an object, got []");
  EXPECT_REFUSED(with("{}"), "publish: 'slowdowns' must be an array");
  EXPECT_REFUSED(with("[5]"), "publish: 'slowdowns[0]' must be an object, got 5");
  EXPECT_REFUSED(with(R"([{"cpu":0,"probe":"matmul","mode":"isolated"}])"),
                 "publish: missing field 'slowdowns[0].ratio'");
  EXPECT_REFUSED(with(R"([{"cpu":0,"probe":"matmul","mode":"isolated","ratio":1,"x":2}])"),
                 "publish: unknown field 'slowdowns[0].x' (expected cpu, probe, mode, ratio)");
  EXPECT_REFUSED(with(R"([{"cpu":0,"probe":"matmul","mode":"isolated","ratio":1},)"
                      R"({"cpu":-1,"probe":"matmul","mode":"isolated","ratio":1}])"),
                 "publish: 'slowdowns[1].cpu' must be an integer >= 0, got -1");
  EXPECT_REFUSED(with(R"([{"cpu":1.5,"probe":"matmul","mode":"isolated","ratio":1}])"),
                 "'slowdowns[0].cpu' must be an integer >= 0, got 1.5");
  EXPECT_REFUSED(with(R"([{"cpu":99999999999,"probe":"matmul","mode":"isolated","ratio":1}])"),
                 "'slowdowns[0].cpu' must be an integer >= 0");
  EXPECT_REFUSED(with(R"([{"cpu":"0","probe":"matmul","mode":"isolated","ratio":1}])"),
                 "'slowdowns[0].cpu' must be an integer >= 0, got \"0\"");
  EXPECT_REFUSED(
      with(R"([{"cpu":0,"probe":"gemm","mode":"isolated","ratio":1}])"),
      R"('slowdowns[0].probe' must be one of "matmul", "clock", "stream", "expected", got "gemm")");
  // No detour ratio (docs/metrics.md: the noise factor is expected / matmul).
  EXPECT_REFUSED(
      with(R"([{"cpu":0,"probe":"detour","mode":"isolated","ratio":1}])"),
      R"('slowdowns[0].probe' must be one of "matmul", "clock", "stream", "expected", got "detour")");
  EXPECT_REFUSED(with(R"([{"cpu":0,"probe":"matmul","mode":"both","ratio":1}])"),
                 R"('slowdowns[0].mode' must be one of "isolated", "concurrent", got "both")");
  EXPECT_REFUSED(with(R"([{"cpu":0,"probe":"matmul","mode":"isolated","ratio":0}])"),
                 "'slowdowns[0].ratio' must be a number > 0, got 0");
  EXPECT_REFUSED(with(R"([{"cpu":3,"probe":"matmul","mode":"isolated","ratio":1},)"
                      R"({"cpu":3,"probe":"matmul","mode":"isolated","ratio":2}])"),
                 "publish: 'slowdowns[1]' repeats cpu 3 matmul isolated");
}

TEST(ControlProtocol, NamesAndPrivilege) {
  EXPECT_EQ(command_name(StatusRequest{}), "status");
  EXPECT_EQ(command_name(CalibrateRequest{}), "calibrate");
  EXPECT_EQ(command_name(PublishRequest{}), "publish");
  EXPECT_EQ(command_name(JobRequest{}), "job");
  EXPECT_FALSE(needs_privilege(StatusRequest{}));
  EXPECT_FALSE(needs_privilege(ResultsRequest{}));
  EXPECT_TRUE(needs_privilege(PauseRequest{}));
  EXPECT_TRUE(needs_privilege(ResumeRequest{}));
  EXPECT_TRUE(needs_privilege(RunRequest{}));
  EXPECT_TRUE(needs_privilege(PublishRequest{}));
  EXPECT_TRUE(needs_privilege(CalibrateRequest{}));
  // Sent by the job's own ranks, as the job's user.
  EXPECT_FALSE(needs_privilege(JobRequest{}));
}

TEST(ControlProtocol, Replies) {
  EXPECT_EQ(ok_reply(), json({{"ok", true}}));
  EXPECT_EQ(ok_reply(nullptr), json({{"ok", true}}));
  EXPECT_EQ(ok_reply({{"paused", true}}), json({{"ok", true}, {"paused", true}}));
  EXPECT_EQ(ok_reply(json::array({1})), json({{"ok", true}, {"result", {1}}}));
  // A handler's own refusal passes through.
  EXPECT_EQ(ok_reply(error_reply("busy")), json({{"ok", false}, {"error", "busy"}}));
  EXPECT_EQ(encode_line(error_reply("x")), "{\"error\":\"x\",\"ok\":false}\n");
  // Invalid UTF-8 from a handler is repaired, never thrown.
  const std::string line = encode_line(error_reply("bad \xff byte"));
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_NO_THROW(parse_reply(line.substr(0, line.size() - 1)));

  EXPECT_TRUE(parse_reply(R"({"ok":true,"paused":false})")["ok"].get<bool>());
  EXPECT_THROW(parse_reply("{}"), ProtocolError);
  EXPECT_THROW(parse_reply(R"({"ok":"yes"})"), ProtocolError);
  EXPECT_THROW(parse_reply(R"({"ok":false})"), ProtocolError);
  EXPECT_THROW(parse_reply("nope"), ProtocolError);
}

// Found while writing tests/fuzz/control_request_fuzzer.cpp (deeper than its
// 4 KiB inputs reach): a reply of 100,000 '[' crashed the client, whose
// error message dumps the value, recursively, off the end of the stack.
TEST(ControlProtocol, RefusesDeepRepliesInsteadOfOverflowingTheStack) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  try {
    parse_reply(deep);
    ADD_FAILURE() << "a reply nested 100,000 deep was accepted";
  } catch (const ProtocolError& e) {
    EXPECT_EQ(std::string(e.what()), "malformed reply: JSON nested deeper than 64 levels");
  }
  EXPECT_THROW(parse_reply(R"({"ok":true,"x":)" + deep + "}"), ProtocolError);
  // A status reply echoing the deepest reference a publish may carry passes.
  const std::string reference =
      std::string(kMaxRequestDepth - 2, '[') + std::string(kMaxRequestDepth - 2, ']');
  EXPECT_NO_THROW(
      parse_reply(R"({"ok":true,"publication":{"reference":{"r":)" + reference + "}}}"));
}

// A report's causes split one rank's lost time: together, over all its
// CPUs, no more than the job's wall time, as each alone; a rank's job-start
// names its job and nothing else.
TEST(ControlProtocol, AJobsCausesAddUpToAtMostItsWallTimeAndJobStartNamesAJob) {
  const std::string head =
      R"({"command":"job","job_id":"j","ended_unix_seconds":1,"elapsed_seconds":10,"ranks":1,)";
  EXPECT_NO_THROW(
      parse_request(head + R"("cpus":[{"cpu":0,"lost_seconds":{"steal":6,"interrupts":4}}]})"));
  // Over several CPUs as over one: a process may not claim its whole life on each.
  EXPECT_NO_THROW(parse_request(head + R"("cpus":[{"cpu":0,"lost_seconds":{"steal":5}},)"
                                       R"({"cpu":1,"lost_seconds":{"steal":5}}]})"));
  EXPECT_THROW(parse_request(head + R"("cpus":[{"cpu":0,"lost_seconds":{"steal":6}},)"
                                    R"({"cpu":1,"lost_seconds":{"steal":6}}]})"),
               ProtocolError);
  try {
    parse_request(head + R"("cpus":[{"cpu":0,"lost_seconds":{"steal":6,"interrupts":4.5}}]})");
    ADD_FAILURE() << "expected an error";
  } catch (const ProtocolError& e) {
    EXPECT_EQ(std::string(e.what()),
              "job: the causes of all 'cpus' add up to 10.5 s, more than elapsed_seconds (10.0): "
              "a rank's loss is split over its CPUs");
    EXPECT_EQ(e.command, "job");
  }
  EXPECT_EQ(
      std::get<JobStartRequest>(parse_request(R"({"command":"job-start","job_id":"s-1"})")).job_id,
      "s-1");
  EXPECT_FALSE(needs_privilege(JobStartRequest{"s-1", {}}));
  // With the Slurm cgroup the rank runs in: v2's line, or v1's.
  for (const std::string cgroup : {"0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_1",
                                   "4:cpuset:/slurm/uid_1000/job_42/step_0/task_1"}) {
    const auto start = std::get<JobStartRequest>(
        parse_request(R"({"command":"job-start","job_id":"42","cgroup":")" + cgroup + R"("})"));
    EXPECT_EQ(start.cgroup, cgroup);
  }
  for (
      const char* bad :
      {R"({"command":"job-start"})", R"({"command":"job-start","job_id":""})",
       R"({"command":"job-start","job_id":"j","cpus":[]})",
       // A cgroup that is not a Slurm job's, or a path that leaves its hierarchy.
       R"({"command":"job-start","job_id":"j","cgroup":"0::/user.slice/user-1000.slice"})",
       R"({"command":"job-start","job_id":"j","cgroup":"0::/system.slice/slurmstepd.scope/job_4/../../etc"})",
       R"({"command":"job-start","job_id":"j","cgroup":7})"}) {
    try {
      parse_request(bad);
      ADD_FAILURE() << bad;
    } catch (const ProtocolError& e) {
      EXPECT_EQ(e.command, "job-start") << bad;
      EXPECT_EQ(std::string(e.what()).rfind("job-start: ", 0), 0u) << e.what();
    }
  }
  EXPECT_EQ(user_socket_beside("/run/corenoise/ctl.sock"), "/run/corenoise/user.sock");
  EXPECT_EQ(user_socket_beside("ctl.sock"), "user.sock");
}

TEST(ControlProtocol, ToJsonRoundTrips) {
  const std::vector<ControlRequest> requests = {
      StatusRequest{},
      ResultsRequest{},
      PauseRequest{},
      PauseRequest{42.5},
      ResumeRequest{},
      RunRequest{},
      RunRequest{1795963026.25, {Mode::concurrent}, false},
      RunRequest{std::nullopt, {Mode::isolated, Mode::concurrent}, true},
      PublishRequest{10, json({{"nodes", 3}}), {{5, kExpectedRatio, Mode::concurrent, 1.5}}},
      CalibrateRequest{},
      JobRequest{"slurm-1234",
                 1795963000.5,
                 12.5,
                 4,
                 {{3, {0.12, 0, 0.01, 0, 0, 0, 0.3}}, {0, {}}, {7, {6, 2.5, 0, 1e-9, 0, 1, 1}}}},
      JobStartRequest{"slurm-1234", {}},
      JobStartRequest{"1234", "0::/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0"}};
  for (const auto& request : requests) {
    const std::string line = encode_line(to_json(request));
    const ControlRequest back = parse_request(std::string_view(line).substr(0, line.size() - 1));
    EXPECT_EQ(back.index(), request.index()) << line;
    EXPECT_EQ(to_json(back), to_json(request)) << line;
  }
  // A cause that cost nothing is left out of the line, and read back as 0.
  const json job = to_json(JobRequest{"j", 1, 2, 1, {{3, {0.5, 0, 0, 0, 0, 0, 0}}, {4, {}}}});
  EXPECT_EQ(job, json::parse(R"({"command":"job","job_id":"j","ended_unix_seconds":1.0,)"
                             R"("elapsed_seconds":2.0,"ranks":1,"cpus":[)"
                             R"({"cpu":3,"lost_seconds":{"own-threads":0.5}},)"
                             R"({"cpu":4,"lost_seconds":{}}]})"));
  JobRequest nan_job;
  nan_job.cpus = {{0, {}}};
  nan_job.cpus[0].lost_seconds[index_of(JobCause::steal)] = std::nan("");
  EXPECT_THROW(to_json(nan_job), std::invalid_argument);
  EXPECT_THROW(to_json(RunRequest{std::nullopt, {}, true}), std::invalid_argument);
  EXPECT_THROW(to_json(RunRequest{std::nullopt, {Mode::concurrent, Mode::isolated}, true}),
               std::invalid_argument);
}

// Random requests (valid and mutated) and random bytes: the parser returns a
// request or throws ProtocolError, nothing else, and a request it accepts
// encodes back to an equivalent one.
TEST(ControlProtocol, RandomizedInputsNeverCrash) {
  std::mt19937_64 rng(20240601);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  const std::vector<json> values = {nullptr,
                                    true,
                                    false,
                                    0,
                                    -1,
                                    1,
                                    0.5,
                                    1e308,
                                    -1e-308,
                                    "",
                                    "x",
                                    "isolated",
                                    "both",
                                    "matmul",
                                    json::array(),
                                    json::object(),
                                    json::array({1, "a"})};
  const std::vector<std::string> commands = {"status",  "results",   "pause", "resume", "run",
                                             "publish", "calibrate", "job",   "nope"};
  const std::vector<std::string> fields = {"seconds",   "at_unix_seconds",
                                           "mode",      "wait",
                                           "reference", "slowdowns",
                                           "cpu",       "x",
                                           "job_id",    "published_unix_seconds",
                                           "ranks",     "elapsed_seconds",
                                           "cpus",      "ended_unix_seconds"};
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string line;
    if (i % 3 == 0) {
      // Random bytes, biased towards JSON's own characters.
      const std::string alphabet =
          "{}[]\":,0123456789.-+eEtrufalsn \\\x01\xff\xc3\xa9"
          "abc";
      const std::size_t n = pick(64);
      for (std::size_t k = 0; k < n; ++k) line += alphabet[pick(alphabet.size())];
    } else {
      json request = json::object();
      if (pick(10) != 0) request["command"] = commands[pick(commands.size())];
      const std::size_t n = pick(4);
      for (std::size_t k = 0; k < n; ++k) {
        json value = values[pick(values.size())];
        if (pick(4) == 0) {
          json entry = {{"cpu", values[pick(values.size())]},
                        {"probe", pick(2) ? json("matmul") : values[pick(values.size())]},
                        {"mode", pick(2) ? json("isolated") : values[pick(values.size())]},
                        {"ratio", pick(2) ? json(1.1) : values[pick(values.size())]}};
          value = json::array({entry});
        }
        request[fields[pick(fields.size())]] = value;
      }
      // A job report that is whole, then broken in one place, half the time.
      if (request.value("command", "") == "job" && pick(2) == 0) {
        json lost = {
            {"steal", pick(2) ? json(0.5) : values[pick(values.size())]},
            {pick(2) ? "more-work" : "x", pick(2) ? json(1) : values[pick(values.size())]}};
        json job = {
            {"command", "job"},
            {"job_id", pick(4) ? json("j-1") : values[pick(values.size())]},
            {"ended_unix_seconds", pick(4) ? json(1e9) : values[pick(values.size())]},
            {"elapsed_seconds", pick(4) ? json(2) : values[pick(values.size())]},
            {"ranks", pick(4) ? json(4) : values[pick(values.size())]},
            {"cpus", json::array({{{"cpu", pick(2) ? json(pick(3)) : values[pick(values.size())]},
                                   {"lost_seconds", lost}},
                                  {{"cpu", pick(3)}, {"lost_seconds", json::object()}}})}};
        request = std::move(job);
      }
      line = request.dump();
      if (i % 7 == 0 && !line.empty()) line.erase(pick(line.size()), 1);  // break it
    }
    try {
      const ControlRequest request = parse_request(line);
      ++accepted;
      const std::string again = encode_line(to_json(request));
      const ControlRequest back =
          parse_request(std::string_view(again).substr(0, again.size() - 1));
      ASSERT_EQ(to_json(back), to_json(request)) << line;
    } catch (const ProtocolError& e) {
      ASSERT_GT(std::string(e.what()).size(), 0u);
    }
  }
  EXPECT_GT(accepted, 100);  // the generator reaches valid requests, not only errors
}

}  // namespace
// A rank's live line: every figure bounded by the others; wire form and
// parse agree.
TEST(ControlProtocol, JobLiveLinesAreBoundedAndRoundTrip) {
  JobLiveRequest live;
  live.job_id = "slurm-9";
  live.epoch = 3;
  live.elapsed_seconds = 90;
  live.interval_seconds = 30;
  live.ranks = 4;
  live.rank = 3;
  live.wait_caused_seconds = 12.5;
  live.cause = JobCause::more_work;
  live.window_seconds = 30;
  live.window_wait_caused_seconds = 6.25;
  live.window_cause = JobCause::other_processes;
  const json wire = to_json(ControlRequest{live});
  EXPECT_EQ(wire.at("window_cause"), "other-processes");
  const auto parsed = std::get<JobLiveRequest>(request_from_json(wire));
  EXPECT_EQ(to_json(ControlRequest{parsed}), wire);
  EXPECT_FALSE(needs_privilege(ControlRequest{live}));
  EXPECT_EQ(command_name(ControlRequest{live}), "job-live");
  const auto refused = [&](const char* field, const json& value, const std::string& fragment) {
    json bad = wire;
    bad[field] = value;
    try {
      parse_request(bad.dump());  // as the wire has it (a number as JSON text)
      ADD_FAILURE() << field << " = " << value << " was taken";
    } catch (const ProtocolError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
      EXPECT_EQ(e.command, "job-live");
    }
  };
  refused("rank", 4, "a rank below 'ranks'");
  refused("wait_caused_seconds", 271, "elapsed_seconds x (ranks - 1) (270)");
  refused("wait_caused_seconds", -1, ">= 0");
  refused("interval_seconds", 0.5, ">= 1");
  refused("elapsed_seconds", 0, "> 0");
  refused("epoch", 0, "an integer >= 1");
  refused("cause", "gpu", "a cause of the job's");
  refused("extra", 1, "unknown field 'extra'");
  // The window: no longer than the job, no more waiting caused than the
  // others can have waited in it.
  refused("window_seconds", 91, "<= 90");
  refused("window_seconds", 0, "> 0");
  refused("window_wait_caused_seconds", 90.5, "window_seconds x (ranks - 1) (90)");
  refused("window_cause", "gpu", "a cause of the job's");
  // Its figures come together, and a line without them (no window) is taken.
  json partial = wire;
  partial.erase("window_seconds");
  EXPECT_THROW(parse_request(partial.dump()), ProtocolError);
  json without = wire;
  for (const char* field : {"window_seconds", "window_wait_caused_seconds", "window_cause"})
    without.erase(field);
  const auto plain = std::get<JobLiveRequest>(parse_request(without.dump()));
  EXPECT_EQ(plain.window_seconds, 0);
  EXPECT_FALSE(plain.window_cause);
  EXPECT_EQ(to_json(ControlRequest{plain}), without);
}

TEST(ControlProtocol, JobCulpritsQuestionsAndRepliesRoundTrip) {
  const json wire = to_json(ControlRequest{JobCulpritsRequest{"slurm-9"}});
  EXPECT_EQ(wire, (json{{"command", "job-culprits"}, {"job_id", "slurm-9"}}));
  EXPECT_EQ(std::get<JobCulpritsRequest>(parse_request(wire.dump())).job_id, "slurm-9");
  EXPECT_FALSE(needs_privilege(ControlRequest{JobCulpritsRequest{}}));
  for (const json& bad :
       {json{{"command", "job-culprits"}}, json{{"command", "job-culprits"}, {"job_id", ""}},
        json{{"command", "job-culprits"}, {"job_id", "j"}, {"cpus", 1}}}) {
    try {
      parse_request(bad.dump());
      ADD_FAILURE() << bad << " was taken";
    } catch (const ProtocolError& e) {
      EXPECT_EQ(e.command, "job-culprits");
    }
  }
  JobCulpritsReply reply{"on", {{1, 12.5, {{"task", "inj", 4242, "inj[4242]", 3.25}}, 0.5, false}}};
  const json sent = reply;
  const auto got = sent.get<JobCulpritsReply>();
  EXPECT_EQ(json(got), sent);
  EXPECT_EQ(sent.at("cpus").at(0).at("culprits").at(0).at("text"), "inj[4242]");
}

}  // namespace corenoise
