// The control socket's typed replies (daemon/control/control_replies.h):
// what the daemon writes is the wire of docs/control.md, key for key and
// number type for number type, and what the `corenoise` command reads back
// is what was written.
#include "daemon/control/control_replies.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "probe/verdict_text.h"
#include "tests/tools/sample_causes.h"

namespace corenoise {
namespace {

using nlohmann::json;

// CPU 17's cause.
Cause noisy_cause() { return sample_cause(CoreState::noisy); }

// CPU 40's: the same, in 1 of its last 3 rounds.
Cause transient_cause() {
  Cause c = noisy_cause();
  c.recurrence = Cause::Recurrence{CoreState::noisy, 1, 3, 2};
  return c;
}

// A status reply as the daemon sends one (docs/control.md's example, with
// every optional field present): integers stay integers, so `--json`
// prints "12", not "12.0". Each listed CPU's cause is there twice, as its
// sentence ("cause") and as data ("why"), put in for the @ marks.
constexpr const char* kStatusTemplate =
    R"({"access":"control","cluster":{"published_unix_seconds":1795962000.0,)"
    R"("reference":{"kinds":[]}},"cpus":120,"culprits":[{"cpu":17,"mode":"isolated",)"
    R"("top":[{"kind":"task","share":0.074,"text":"inj[1234] FIFO 50"}]}],"healthy":false,)"
    R"("jobs":{"last_ended_unix_seconds":1795962900.0,"last_job_id":"slurm-1234","reports":12,)"
    R"("running_ranks":4},"next_round_unix_seconds":1795963290.5,"ok":true,"paused":false,)"
    R"("paused_until_unix_seconds":1795963300.0,"persistence":{"bad":2,"rounds":3},)"
    R"("round_running":false,"rounds":{"concurrent":{"count":1},"isolated":{"count":12,)"
    R"("last_duration_seconds":0.61,"last_unix_seconds":1795963026.2}},)"
    R"("started_unix_seconds":1795963000.1,"states":{"noisy":1,"ok":117,"transient":1},)"
    R"("trace":"on","transient":[{"cause":@40,)"
    R"("cpu":40,"round_state":"noisy","rounds":3,"state":"transient","unhealthy_rounds":1,)"
    R"("why":@@40}],)"
    R"("unhealthy":[{"cause":@17,"cpu":17,"round_state":"noisy",)"
    R"("rounds":3,"state":"noisy","unhealthy_rounds":3,"why":@@17}],"version":"0.1.0"})";

std::string fill(std::string line, const std::string& mark, const std::string& value) {
  line.replace(line.find(mark), mark.size(), value);
  return line;
}

const std::string kStatusLine = [] {
  std::string line = kStatusTemplate;
  line = fill(line, "@@40", to_json(transient_cause()).dump());
  line = fill(line, "@@17", to_json(noisy_cause()).dump());
  line = fill(line, "@40", json(cause_text(transient_cause())).dump());
  return fill(line, "@17", json(cause_text(noisy_cause())).dump());
}();

TEST(ControlReplies, StatusReadsBackAndWritesTheSameLine) {
  const StatusReply reply = json::parse(kStatusLine).get<StatusReply>();
  EXPECT_EQ(reply.cpus, 120u);
  EXPECT_FALSE(reply.cpu_states.healthy);
  ASSERT_EQ(reply.cpu_states.unhealthy.size(), 1u);
  EXPECT_EQ(reply.cpu_states.unhealthy[0].cpu, 17u);
  EXPECT_EQ(reply.cpu_states.unhealthy[0].unhealthy_rounds, 3u);
  EXPECT_EQ(reply.cpu_states.unhealthy[0].cause, noisy_cause());
  EXPECT_EQ(reply.cpu_states.transient.at(0).cause, transient_cause());
  EXPECT_EQ(cause_text(reply.cpu_states.transient.at(0).cause).substr(0, 45),
            "noisy in 1 of its last 3 measured rounds (2 m");
  EXPECT_EQ(reply.rounds.at("isolated").count, 12u);
  EXPECT_FALSE(reply.rounds.at("concurrent").last_unix_seconds);
  EXPECT_EQ(reply.jobs.last_job_id, "slurm-1234");
  ASSERT_TRUE(reply.culprits);
  EXPECT_DOUBLE_EQ(reply.culprits->at(0).top.at(0).share, 0.074);
  EXPECT_EQ(json(reply).dump(), kStatusLine);
}

// An older daemon's reply has sentences and no causes as data: it reads,
// with no cause to word again.
TEST(ControlReplies, AReplyWithoutCausesAsDataReadsWithNone) {
  json line = json::parse(kStatusLine);
  line["unhealthy"][0].erase("why");
  const StatusReply reply = line.get<StatusReply>();
  EXPECT_EQ(reply.cpu_states.unhealthy.at(0).state, "noisy");
  EXPECT_EQ(reply.cpu_states.unhealthy.at(0).cause, Cause{});
  EXPECT_EQ(reply.cpu_states.transient.at(0).cause, transient_cause());
}

TEST(ControlReplies, StatusLeavesOutWhatItDoesNotHave) {
  StatusReply reply;
  reply.version = "0.1.0";
  reply.started_unix_seconds = 5;
  reply.not_yet_probed = 2;
  reply.cpus = 2;
  reply.access = "user";
  reply.trace = "off";
  reply.persistence = {3, 2};
  reply.cpu_states.states = {{"ok", 0}};
  EXPECT_EQ(json(reply).dump(),
            R"({"access":"user","cpus":2,"healthy":true,"jobs":{"reports":0,"running_ranks":0},)"
            R"("not_yet_probed":2,"ok":true,"paused":false,"persistence":{"bad":2,"rounds":3},)"
            R"("round_running":false,"rounds":{},"started_unix_seconds":5.0,"states":{"ok":0},)"
            R"("trace":"off","transient":[],"unhealthy":[],"version":"0.1.0"})");
  const StatusReply back = json(reply).get<StatusReply>();
  EXPECT_EQ(back.not_yet_probed, 2u);
  EXPECT_FALSE(back.cluster);
  EXPECT_FALSE(back.culprits);
  EXPECT_FALSE(back.jobs.last_job_id);
}

TEST(ControlReplies, AReplyWithoutARequiredFieldIsRefused) {
  json line = json::parse(kStatusLine);
  line.erase("healthy");
  EXPECT_THROW(line.get<StatusReply>(), json::exception);
  EXPECT_THROW(json::parse(R"({"ok":true,"cpus":"two"})").get<JobReply>(), json::exception);
}

TEST(ControlReplies, RunPauseScheduledPublishAndJob) {
  RunReply run;
  run.rounds = {{"isolated", 0.5, 4}};
  run.cpu_states.states = {{"noisy", 1}, {"ok", 3}};
  run.cpu_states.healthy = true;
  const std::string line = json(run).dump();
  EXPECT_EQ(line,
            R"({"healthy":true,"ok":true,"rounds":[{"cpus":4,"duration_seconds":0.5,)"
            R"("mode":"isolated"}],"states":{"noisy":1,"ok":3},"transient":[],"unhealthy":[]})");
  EXPECT_EQ(json(json::parse(line).get<RunReply>()).dump(), line);

  EXPECT_EQ(json(PauseReply{true, 12.5}).dump(),
            R"({"ok":true,"paused":true,"paused_until_unix_seconds":12.5})");
  EXPECT_EQ(json(PauseReply{false, std::nullopt}).dump(), R"({"ok":true,"paused":false})");
  EXPECT_EQ(json::parse(R"({"ok":true,"paused":true})").get<PauseReply>().paused_until_unix_seconds,
            std::nullopt);
  EXPECT_EQ(json(ScheduledReply{7.25}).dump(), R"({"ok":true,"scheduled_unix_seconds":7.25})");
  EXPECT_EQ(json(PublishReply{480}).dump(), R"({"ok":true,"slowdowns":480})");
  EXPECT_EQ(json(JobReply{3}).dump(), R"({"cpus":3,"ok":true})");
  EXPECT_EQ(json::parse(R"({"ok":true,"cpus":3})").get<JobReply>().cpus, 3u);
}

TEST(ControlReplies, ResultsAreTheProbeDocumentWithOk) {
  NodeReport report;
  report.version = "0.1.0";
  report.hostname = "node7";
  const json line = ResultsReply{report};
  EXPECT_EQ(line.at("ok"), true);
  EXPECT_EQ(line.at("hostname"), "node7");
  EXPECT_EQ(line.get<ResultsReply>().report.hostname, "node7");
}

}  // namespace
}  // namespace corenoise
