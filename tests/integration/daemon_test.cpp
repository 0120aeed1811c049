// corenoised as a site runs it: a real daemon process, real HTTP scrapes,
// promtool, a real Prometheus server, the real `corenoise` client, signals,
// and the systemd notify protocol on a real datagram socket.
#include <gtest/gtest.h>
#include <sys/un.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "../tls_files.h"
#include "control_socket.h"
#include "daemon_process.h"
#include "host_draw.h"
#include "job_sender.h"
#include "probe/topology.h"
#include "probe/wall_clock.h"
#include "process.h"
#include "quick_daemon.h"
#include "reachable_binary.h"

namespace corenoise {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::BackgroundProcess;
using testing::ControlSocket;
using testing::DaemonProcess;
using testing::free_tcp_port;
using testing::http_get;
using testing::metric_value;
using testing::run_command;
using testing::TempDir;
using testing::url_encoded;

const std::string kCorenoise = testing::shell_word(CORENOISE_BIN);  // for run_command

// The hardening tests' quick rounds (quick_daemon.h), a round a second.
// `changes` as in merged_options().
std::vector<std::string> round_a_second_args(const TempDir& dir,
                                             std::vector<std::string> changes = {}) {
  changes.insert(changes.begin(), {"--interval", "1"});
  return testing::daemon_args(dir, changes);
}

std::size_t native_pus() { return Topology::load("native").pus().size(); }

// Scrapes until `predicate(text)` holds; returns the last scrape.
template <typename Predicate>
std::string scrape_until(int port, Predicate predicate, std::chrono::seconds timeout = 30s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  std::string text;
  while (std::chrono::steady_clock::now() < end) {
    text = http_get(port, "/metrics").second;
    if (predicate(text)) return text;
    std::this_thread::sleep_for(100ms);
  }
  return text;
}

bool has_rounds(const std::string& text) {
  const auto rounds = metric_value(text, "corenoise_rounds_total{mode=\"isolated\"}");
  return rounds && *rounds >= 1;
}

std::string ctl(const TempDir& dir, const std::string& args) {
  return kCorenoise + " " + args + " --socket " + dir.path() + "/ctl.sock";
}

TEST(Daemon, ExportsEveryCpuAndPassesPromtool) {
  TempDir dir;
  DaemonProcess daemon(round_a_second_args(dir));
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();
  const std::string text = scrape_until(port, has_rounds);
  ASSERT_TRUE(has_rounds(text)) << daemon.log();
  for (unsigned cpu = 0; cpu < native_pus(); ++cpu) {
    const std::string c = "cpu=\"" + std::to_string(cpu) + "\"";
    EXPECT_TRUE(metric_value(
        text, "corenoise_slowdown_ratio{" + c + ",probe=\"matmul\",mode=\"isolated\"}"))
        << c << "\n"
        << text;
    EXPECT_TRUE(metric_value(text, "corenoise_clock_hertz{" + c + ",mode=\"isolated\"}")) << c;
    double states = 0;
    for (const char* s :
         {"ok", "transient", "noisy", "throttled", "contended", "slow", "skipped"}) {
      states +=
          metric_value(text, "corenoise_core_state{" + c + ",state=\"" + s + "\"}").value_or(0);
    }
    EXPECT_EQ(states, 1) << c;
  }
  EXPECT_EQ(metric_value(text, "corenoise_build_info{version=\"" CORENOISE_VERSION "\"}"), 1.0);

  // promtool reads the scrape from stdin and says nothing when all is well.
  const std::string file = dir.path() + "/scrape.txt";
  std::ofstream(file) << text;
  const auto check = run_command("promtool check metrics < " + file);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_EQ(check.out + check.err, "") << "promtool found problems";

  // The landing page, and nothing but GET of / and /metrics.
  const auto landing = http_get(port, "/");
  EXPECT_EQ(landing.first, 200);
  EXPECT_NE(landing.second.find("href=\"metrics\""), std::string::npos) << landing.second;
  EXPECT_EQ(http_get(port, "/nope").first, 404);
  EXPECT_NE(http_get(port, "/metrics", "POST").first, 200);
}

// A real Prometheus server in `dir` scraping every second one job per
// (name, port) of `jobs`, on a port of its own.
class PrometheusServer {
 public:
  // `port`: where it listens (free_tcp_port(), chosen before any other
  // server of the test starts, so that none takes it meanwhile).
  PrometheusServer(const TempDir& dir, int port,
                   const std::vector<std::pair<std::string, int>>& jobs)
      : PrometheusServer(dir, port, plain_jobs(jobs)) {}

  // `scrape_configs`: the list under scrape_configs:, as YAML.
  PrometheusServer(const TempDir& dir, int port, const std::string& scrape_configs) : port_(port) {
    std::ofstream config(dir.path() + "/prometheus.yml");
    config << "global:\n  scrape_interval: 1s\nscrape_configs:\n" << scrape_configs;
    config.close();
    process_.emplace(std::vector<std::string>{
        "/usr/bin/prometheus", "--config.file=" + dir.path() + "/prometheus.yml",
        "--storage.tsdb.path=" + dir.path() + "/tsdb",
        "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=error"});
  }

  static std::string plain_jobs(const std::vector<std::pair<std::string, int>>& jobs) {
    std::string yaml;
    for (const auto& [name, port] : jobs) {
      yaml += "  - job_name: " + name + "\n    static_configs:\n" +
              "      - targets: ['127.0.0.1:" + std::to_string(port) + "']\n";
    }
    return yaml;
  }

  // Polls /api/v1/targets for up to 60 s until the target of `job` has
  // been scraped (health up or down); that target's entry, or null.
  json target_until_scraped(const std::string& job) const {
    json found;
    const auto end = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < end) {
      const auto reply = http_get(port_, "/api/v1/targets");
      const json answer = json::parse(reply.second, nullptr, false);
      if (reply.first == 200 && answer.is_object() && answer.contains("data")) {
        for (const json& target : answer["data"]["activeTargets"]) {
          if (target["labels"].value("job", "") != job) continue;
          found = target;
          if (target.value("health", "unknown") != "unknown") return found;
        }
      }
      std::this_thread::sleep_for(500ms);
    }
    return found;
  }

  // Polls the query API for up to 60 s until `query` returns `series`
  // series; the last successful answer (null if none came).
  json query_until(const std::string& query, std::size_t series) const {
    json result;
    const auto end = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < end) {
      const auto reply = http_get(port_, "/api/v1/query?query=" + url_encoded(query));
      if (reply.first == 200) {
        json answer = json::parse(reply.second, nullptr, false);
        if (answer.is_object() && answer.value("status", "") == "success" &&
            answer.contains("data") && answer["data"].contains("result")) {
          result = std::move(answer);
          if (result["data"]["result"].size() == series) break;
        }
      }
      std::this_thread::sleep_for(500ms);
    }
    return result;
  }

 private:
  int port_;
  std::optional<BackgroundProcess> process_;
};

TEST(Daemon, ARealPrometheusServerScrapesEveryCpu) {
  TempDir dir;
  DaemonProcess daemon(round_a_second_args(dir));
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();
  ASSERT_TRUE(has_rounds(scrape_until(port, has_rounds))) << daemon.log();

  const PrometheusServer prometheus(dir, free_tcp_port(), {{"corenoise", port}});
  const json result =
      prometheus.query_until("corenoise_slowdown_ratio{probe=\"matmul\"}", native_pus());
  ASSERT_TRUE(result.is_object()) << "Prometheus never answered the query";
  ASSERT_EQ(result["data"]["result"].size(), native_pus()) << result.dump();
  for (const auto& series : result["data"]["result"]) {
    EXPECT_GT(std::stod(series["value"][1].get<std::string>()), 0) << series.dump();
    EXPECT_EQ(series["metric"]["job"], "corenoise");
  }
}

// As a site turns TLS and basic auth on (docs/operations.md): a real
// Prometheus scrapes over https, trusting a CA of the test's own, with the
// right password (up, with corenoise_* series) and a wrong one (down, with
// the 401 in the target's lastError). The daemon gets node_exporter's flag.
TEST(Daemon, ARealPrometheusScrapesOverTlsWithBasicAuth) {
  TempDir dir;
  const testing::TlsFiles tls;
  const std::string web = tls.write("web.yml",
                                    "tls_server_config:\n"
                                    "  cert_file: server.crt\n"
                                    "  key_file: server.key\n"
                                    "basic_auth_users:\n"
                                    "  prometheus: " +
                                        testing::bcrypt_hash("s3cret", 10) + "\n");
  DaemonProcess daemon(round_a_second_args(dir, {"--web.config.file", web}));
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();
  EXPECT_EQ(http_get(port, "/metrics").first, 0) << "plain HTTP is not served";

  const auto job = [&](const std::string& name, const std::string& password) {
    return "  - job_name: " + name +
           "\n"
           "    scheme: https\n"
           "    tls_config:\n"
           "      ca_file: " +
           tls.path("ca.crt") +
           "\n"
           "    basic_auth:\n"
           "      username: prometheus\n"
           "      password: " +
           password +
           "\n"
           "    static_configs:\n"
           "      - targets: ['127.0.0.1:" +
           std::to_string(port) + "']\n";
  };
  const PrometheusServer prometheus(dir, free_tcp_port(),
                                    job("corenoise", "s3cret") + job("intruder", "guess"));
  const json up = prometheus.target_until_scraped("corenoise");
  ASSERT_TRUE(up.is_object()) << "Prometheus never listed the target\n" << daemon.log();
  EXPECT_EQ(up["health"], "up") << up.dump();
  EXPECT_EQ(up["scrapeUrl"], "https://127.0.0.1:" + std::to_string(port) + "/metrics");
  const json result = prometheus.query_until("corenoise_build_info{job=\"corenoise\"}", 1);
  ASSERT_TRUE(result.is_object()) << "Prometheus never answered the query";
  EXPECT_EQ(result["data"]["result"].size(), 1u) << result.dump();

  const json down = prometheus.target_until_scraped("intruder");
  ASSERT_TRUE(down.is_object());
  EXPECT_EQ(down["health"], "down") << down.dump();
  // Refused: 401 for its password, or 429 where its scrape came while the
  // other job's password, from the same address (127.0.0.1), was being
  // checked (exporter_server.cpp: one check in flight per peer); CI met
  // the 429 once.
  const std::string error = down.value("lastError", "");
  EXPECT_TRUE(error.find("401") != std::string::npos || error.find("429") != std::string::npos)
      << down.dump();
  const json none = prometheus.query_until("corenoise_build_info{job=\"intruder\"}", 0);
  EXPECT_EQ(none["data"]["result"].size(), 0u) << none.dump();
}

// SIGHUP re-reads the web config file: a new password applies to the next
// connection; a broken file is refused and the old one stays in force.
TEST(Daemon, SighupRereadsTheWebConfig) {
  TempDir dir;
  const testing::TlsFiles tls;
  const auto users = [&](const std::string& password) {
    return tls.write("web.yml",
                     "tls_server_config:\n  cert_file: server.crt\n"
                     "  key_file: server.key\nbasic_auth_users:\n  p: " +
                         testing::bcrypt_hash(password) + "\n");
  };
  const std::string web = users("old");
  DaemonProcess daemon(
      testing::daemon_args(dir, {"--interval", "86400", "--web-config-file", web}));
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();
  const auto status = [&](const std::string& password) {
    return run_command("curl -sS --max-time 20 -o /dev/null -w '%{http_code}' --cacert " +
                       tls.path("ca.crt") + " -u p:" + password +
                       " https://127.0.0.1:" + std::to_string(port) + "/metrics")
        .out;
  };
  EXPECT_EQ(status("old"), "200");
  users("new");
  daemon.signal(SIGHUP);
  ASSERT_TRUE(daemon.wait_for_log("configuration reloaded")) << daemon.log();
  EXPECT_EQ(status("new"), "200");
  EXPECT_EQ(status("old"), "401");
  tls.write("web.yml", "tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n");
  daemon.signal(SIGHUP);
  ASSERT_TRUE(daemon.wait_for_log("reload rejected")) << daemon.log();
  EXPECT_NE(daemon.log().find("tls_server_config.cert_file: cannot read"), std::string::npos)
      << daemon.log();
  EXPECT_EQ(status("new"), "200");
}

// The metric contract against the ecosystem: a real Prometheus scraping a
// real node_exporter beside corenoised joins the two on the host and `cpu`
// with docs/metrics.md's query, and every CPU comes back with both.
TEST(Daemon, PrometheusJoinsTheSlowdownWithNodeExportersCpuTime) {
  const std::string node_exporter = "/usr/bin/prometheus-node-exporter";
  ASSERT_EQ(access(node_exporter.c_str(), X_OK), 0)
      << node_exporter << " missing: apt-get install prometheus-node-exporter "
      << "(deploy/dev-setup.sh --tests)";
  TempDir dir;
  DaemonProcess daemon(round_a_second_args(dir));
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();
  const int node_port = free_tcp_port();
  int prometheus_port = free_tcp_port();
  while (prometheus_port == node_port) prometheus_port = free_tcp_port();
  BackgroundProcess exporter({node_exporter, "--collector.disable-defaults", "--collector.cpu",
                              "--log.level=error",
                              "--web.listen-address=127.0.0.1:" + std::to_string(node_port)});
  const PrometheusServer prometheus(dir, prometheus_port,
                                    {{"corenoise", port}, {"node", node_port}});
  // docs/metrics.md, "Joining node_exporter", word for word.
  const std::string query =
      "sort_desc(label_replace(corenoise_slowdown_ratio{probe=\"expected\",mode=\"isolated\"}, "
      "\"host\", \"$1\", \"instance\", \"(.*):[0-9]+\")\n"
      "  * on (host, cpu) group_left ()\n"
      "label_replace(sum by (instance, cpu) (rate(node_cpu_seconds_total{mode!=\"idle\"}[10s])), "
      "\"host\", \"$1\", \"instance\", \"(.*):[0-9]+\"))";
  std::ifstream doc(std::string(CORENOISE_SOURCE_DIR) + "/docs/metrics.md");
  const std::string doc_text((std::istreambuf_iterator<char>(doc)), {});
  EXPECT_NE(doc_text.find(query), std::string::npos) << "docs/metrics.md lacks the query:\n"
                                                     << query;

  const json result = prometheus.query_until(query, native_pus());
  ASSERT_TRUE(result.is_object()) << "Prometheus never answered the query";
  ASSERT_EQ(result["data"]["result"].size(), native_pus()) << result.dump();
  std::set<std::string> cpus;
  for (const auto& series : result["data"]["result"]) {
    cpus.insert(series["metric"]["cpu"].get<std::string>());
    EXPECT_EQ(series["metric"]["host"], "127.0.0.1") << series.dump();
    EXPECT_GE(std::stod(series["value"][1].get<std::string>()), 0) << series.dump();
  }
  EXPECT_EQ(cpus.size(), native_pus());
}

TEST(Daemon, ControlSocketCommandsAndPermissions) {
  TempDir dir;
  // The sockets as shipped: the control socket 0660, the user socket beside it.
  DaemonProcess daemon(round_a_second_args(dir, {"--interval", "3600"}));
  ASSERT_TRUE(daemon.wait_for_log("user socket at")) << daemon.log();

  // The first minutes: no verdict, not "skipped", and when the first round comes.
  auto r = run_command(ctl(dir, "status"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("CPUs, not yet probed: the first round comes in "), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("skipped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("corenoise: no verdict yet"), std::string::npos) << r.out;
  json status = json::parse(run_command(ctl(dir, "status --json")).out);
  EXPECT_EQ(status["not_yet_probed"], native_pus()) << status.dump();
  EXPECT_EQ(status["states"]["skipped"], 0) << status.dump();

  r = run_command(ctl(dir, "run"));  // a round now, reply when done
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.out << r.err;
  r = run_command(ctl(dir, "status --json"));
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  status = json::parse(r.out);
  EXPECT_EQ(status["paused"], false);
  EXPECT_GE(status["rounds"]["isolated"]["count"].get<int>(), 1) << status.dump();
  EXPECT_FALSE(status.contains("not_yet_probed")) << status.dump();

  EXPECT_EQ(run_command(ctl(dir, "pause --seconds 60")).exit_code, 0);
  status = json::parse(run_command(ctl(dir, "status --json")).out);
  EXPECT_EQ(status["paused"], true);
  EXPECT_TRUE(status.contains("paused_until_unix_seconds"));
  EXPECT_EQ(run_command(ctl(dir, "resume")).exit_code, 0);
  status = json::parse(run_command(ctl(dir, "status --json")).out);
  EXPECT_EQ(status["paused"], false);

  // An ordinary user reads through the user socket, told it is their view;
  // only root (or the control group) may change anything.
  const std::string as_nobody = "runuser -u nobody -- " +
                                testing::shell_word(testing::reachable_by_everyone(CORENOISE_BIN)) +
                                " ";
  const std::string socket = " --socket " + dir.path() + "/ctl.sock";
  r = run_command(as_nobody + "status" + socket);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.out << r.err;
  EXPECT_NE(r.out.find("an ordinary user's view: the last job's id is left out"), std::string::npos)
      << r.out;
  r = run_command(as_nobody + "pause" + socket);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("permission denied"), std::string::npos) << r.err;
  status = json::parse(run_command(ctl(dir, "status --json")).out);
  EXPECT_EQ(status["paused"], false);
}

// What jobs report becomes counters on /metrics: two ranks' reports summed
// by CPU and cause, a report naming a CPU the node lacks refused whole,
// `status` counting them, and promtool content with the result. Two ranks
// of root here, each its own process (a rank reports once); the admission
// tests (DaemonJobAdmission) have an ordinary user's ranks, and the
// forgeries.
TEST(Daemon, JobReportsBecomeCountersOnMetrics) {
  TempDir dir;
  DaemonProcess daemon(round_a_second_args(dir, {"--interval", "3600"}));
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();
  ASSERT_TRUE(daemon.wait_for_log("control socket at")) << daemon.log();
  std::string text = http_get(port, "/metrics").second;
  EXPECT_EQ(metric_value(text, "corenoise_job_reports_total"), 0.0) << text;
  EXPECT_EQ(text.find("corenoise_job_lost_seconds_total{"), std::string::npos) << text;
  EXPECT_EQ(text.find("corenoise_job_last_report_timestamp_seconds "), std::string::npos) << text;

  // The last CPU of the node as well as the first, where it has two.
  const std::string last = std::to_string(native_pus() - 1);
  // Within 0.9 s in all: a rank's loss split over its CPUs.
  json first_cpus = {{{"cpu", 0}, {"lost_seconds", {{"own-threads", 0.5}, {"more-work", 0.125}}}}};
  if (native_pus() > 1) {
    first_cpus.push_back({{"cpu", native_pus() - 1}, {"lost_seconds", {{"steal", 0.25}}}});
  }
  const json second_cpus = {
      {{"cpu", 0}, {"lost_seconds", {{"own-threads", 0.25}, {"interrupts", 0.125}}}}};
  const unsigned absent = static_cast<unsigned>(native_pus()) + 1000;
  const double before = unix_seconds_now();
  // One rank, one connection: what is refused leaves the connection usable.
  const std::string socket = testing::socket_path(dir);
  std::vector<json> replies = testing::send_lines(
      socket,
      {testing::job_start_line("slurm-1"),
       testing::job_report_line("slurm-1", 0.9,
                                {{{"cpu", 0}, {"lost_seconds", {{"steal", 0.5}}}},
                                 {{"cpu", absent}, {"lost_seconds", json::object()}}}),
       testing::job_report_line("slurm-1", 0.5, {{{"cpu", 0}, {"lost_seconds", {{"steal", 2}}}}}),
       testing::job_report_line("slurm-1", 0.9, first_cpus)});
  EXPECT_EQ(replies[0], json({{"ok", true}}));
  // Not this node's CPU: refused, naming it, and none of the report counted.
  EXPECT_EQ(replies[1]["ok"], false) << replies[1].dump();
  EXPECT_NE(replies[1]
                .value("error", "")
                .find("job: cpu " + std::to_string(absent) + " is not a CPU of this node"),
            std::string::npos)
      << replies[1].dump();
  // And one the protocol refuses.
  EXPECT_EQ(replies[2].value("error", ""),
            "job: 'cpus[0].lost_seconds.steal' must be a number >= 0 and <= elapsed_seconds "
            "(0.5), got 2");
  EXPECT_EQ(replies[3], json({{"ok", true}, {"cpus", first_cpus.size()}}));
  replies = testing::send_lines(socket, {testing::job_start_line("slurm-2"),
                                         testing::job_report_line("slurm-2", 0.9, second_cpus)});
  EXPECT_EQ(replies[1], json({{"ok", true}, {"cpus", 1}}));
  const double after = unix_seconds_now();

  // The exporter's view follows within a second (rebuilt at most that often).
  for (const auto end = std::chrono::steady_clock::now() + 5s;
       std::chrono::steady_clock::now() < end; std::this_thread::sleep_for(100ms)) {
    text = http_get(port, "/metrics").second;
    if (metric_value(text, "corenoise_job_reports_total") == 2.0) break;
  }
  const auto lost = [&](const std::string& cpu, const std::string& cause) {
    return metric_value(
        text, "corenoise_job_lost_seconds_total{cpu=\"" + cpu + "\",cause=\"" + cause + "\"}");
  };
  EXPECT_EQ(metric_value(text, "corenoise_job_reports_total"), 2.0) << text;
  const double ended =
      metric_value(text, "corenoise_job_last_report_timestamp_seconds").value_or(0);
  EXPECT_GE(ended, std::floor(before * 10) / 10) << text;
  EXPECT_LE(ended, after) << text;
  EXPECT_EQ(lost("0", "own-threads"), 0.75) << text;
  EXPECT_EQ(lost("0", "interrupts"), 0.125);
  EXPECT_EQ(lost("0", "more-work"), 0.125);
  EXPECT_EQ(lost("0", "steal"), 0.0) << "the refused report counted";
  EXPECT_EQ(lost("0", "page-faults"), 0.0);
  if (native_pus() > 1) {
    EXPECT_EQ(lost(last, "steal"), 0.25);
    EXPECT_EQ(lost(last, "own-threads"), 0.0);
  }
  if (native_pus() > 2) EXPECT_FALSE(lost("1", "steal")) << "cpu 1 was in no report";
  EXPECT_EQ(metric_value(text, "corenoise_job_reports_refused_total{reason=\"invalid\"}"), 2.0);

  ControlSocket client(testing::socket_path(dir));
  const json status = client.request(R"({"command":"status"})");
  EXPECT_EQ(status["jobs"]["reports"], 2) << status.dump();
  EXPECT_EQ(status["jobs"]["last_job_id"], "slurm-2") << status.dump();
  EXPECT_EQ(status["jobs"]["last_ended_unix_seconds"], ended) << status.dump();
  EXPECT_EQ(status["access"], "control") << status.dump();

  const std::string file = dir.path() + "/scrape.txt";
  std::ofstream(file) << text;
  const auto check = run_command("promtool check metrics < " + file);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_EQ(check.out + check.err, "") << "promtool found problems";
}

TEST(Daemon, BadConfigurationStopsStartupNamingFileAndLine) {
  TempDir dir;
  const std::string conf = dir.path() + "/corenoised.conf";
  std::ofstream(conf) << "interval = 60\nsamples = many\n";
  DaemonProcess daemon({"--config", conf});
  const auto code = daemon.wait_exit(10s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 1);
  EXPECT_NE(daemon.log().find(conf + ":2: option 'samples': got 'many'"), std::string::npos)
      << daemon.log();
}

TEST(Daemon, SighupWithABadConfigKeepsTheOldOne) {
  TempDir dir;
  const std::string conf = dir.path() + "/corenoised.conf";
  std::ofstream(conf) << "interval = 3600\n";
  // No --interval on the command line: the file's counts.
  DaemonProcess daemon(round_a_second_args(dir, {"--config", conf, "--interval", ""}));
  ASSERT_TRUE(daemon.wait_for_log("started")) << daemon.log();

  std::ofstream(conf) << "interval = 3600\nintervall = 5\n";
  daemon.signal(SIGHUP);
  ASSERT_TRUE(daemon.wait_for_log("reload rejected")) << daemon.log();
  EXPECT_NE(daemon.log().find(conf + ":2: unknown option 'intervall' (did you mean 'interval'?)"),
            std::string::npos)
      << daemon.log();
  EXPECT_FALSE(daemon.wait_exit(200ms).has_value()) << "the daemon died on a bad reload";
  auto status = run_command(ctl(dir, "status --json"));
  EXPECT_TRUE(status.exit_code == 0 || status.exit_code == 2) << status.err;

  std::ofstream(conf) << "interval = 3600\nsamples = 4\n";
  daemon.signal(SIGHUP);
  EXPECT_TRUE(daemon.wait_for_log("configuration reloaded")) << daemon.log();
}

TEST(Daemon, SigtermStopsWithinASecondEvenMidRound) {
  TempDir dir;
  // Long rounds: ~2 s of detour windows per CPU.
  DaemonProcess daemon(round_a_second_args(dir, {"--interval", "0.1", "--detour-window", "0.2",
                                                 "--samples", "10", "--interval-spread", "0"}));
  ASSERT_TRUE(daemon.wait_for_log("started")) << daemon.log();
  std::this_thread::sleep_for(800ms);  // inside the first round
  const auto t0 = std::chrono::steady_clock::now();
  daemon.signal(SIGTERM);
  const auto code = daemon.wait_exit(5s);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(code.has_value()) << daemon.log();
  EXPECT_EQ(*code, 0) << daemon.log();
  EXPECT_LT(seconds, 1.0) << daemon.log();
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/ctl.sock")) << "socket left behind";
}

// The notify protocol, read on a datagram socket standing in for systemd.
TEST(Daemon, NotifiesReadyWatchdogAndStopping) {
  TempDir dir;
  const std::string path = dir.path() + "/notify.sock";
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  timeval tv{0, 100000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

  const std::string notify = "NOTIFY_SOCKET=" + path;
  DaemonProcess daemon(round_a_second_args(dir, {"--interval", "3600"}),
                       {notify, "WATCHDOG_USEC=200000"});
  std::vector<std::string> messages;
  auto collect = [&](std::chrono::milliseconds how_long) {
    const auto end = std::chrono::steady_clock::now() + how_long;
    char buffer[512];
    while (std::chrono::steady_clock::now() < end) {
      const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
      if (n > 0) messages.emplace_back(buffer, static_cast<std::size_t>(n));
    }
  };
  collect(1500ms);
  daemon.signal(SIGTERM);
  collect(500ms);
  close(fd);
  auto count = [&](const std::string& what) {
    return std::count_if(messages.begin(), messages.end(),
                         [&](const std::string& m) { return m.find(what) != std::string::npos; });
  };
  ASSERT_GE(count("READY=1"), 1) << daemon.log();
  // WATCHDOG_USEC=200000: one every 100 ms from the event loop.
  EXPECT_GE(count("WATCHDOG=1"), 5);
  EXPECT_EQ(count("STOPPING=1"), 1);
  const auto ready = std::find_if(messages.begin(), messages.end(), [](const std::string& m) {
    return m.find("READY=1") != std::string::npos;
  });
  EXPECT_NE(ready->find("STATUS="), std::string::npos) << *ready;
}

TEST(Daemon, CalibrationSurvivesARestart) {
  TempDir dir;
  const std::string file = dir.path() + "/calibration.json";
  std::string first;
  {
    DaemonProcess daemon(round_a_second_args(dir));
    ASSERT_TRUE(daemon.wait_for_log("calibration saved")) << daemon.log();
    std::ifstream in(file);
    first.assign(std::istreambuf_iterator<char>(in), {});
    daemon.signal(SIGTERM);
    ASSERT_TRUE(daemon.wait_exit(5s).has_value());
  }
  const json saved = json::parse(first);
  EXPECT_EQ(saved["cores"].size(), native_pus()) << first;
  DaemonProcess daemon(round_a_second_args(dir));
  ASSERT_TRUE(daemon.wait_for_log("loaded calibration from " + file)) << daemon.log();
  const int port = daemon.port();
  const std::string text = scrape_until(port, has_rounds);
  // Drift is measured against the calibration of the first run...
  EXPECT_TRUE(metric_value(
      text, "corenoise_baseline_slowdown_ratio{cpu=\"0\",probe=\"matmul\",mode=\"isolated\"}"))
      << text;
  // ...which the new run kept as it was.
  std::ifstream in(file);
  const std::string now(std::istreambuf_iterator<char>(in), {});
  EXPECT_EQ(now, first);
  EXPECT_EQ(daemon.log().find("calibration saved"), std::string::npos) << daemon.log();

  // `calibrate` re-baselines on request.
  const auto r = run_command(ctl(dir, "calibrate"));
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.out << r.err;
  std::ifstream again(file);
  EXPECT_NE(std::string(std::istreambuf_iterator<char>(again), {}), first);
}

// Bare metal's thermal throttle counters (a fixture /sys tree, written to
// while the daemon runs) join the verdict and the metrics.
TEST(Daemon, ThermalThrottleEventsMakeACoreThrottled) {
  TempDir dir;
  const std::string sys = dir.path() + "/sys";
  std::filesystem::copy(std::string(CORENOISE_FIXTURES) + "/sys/xeon-throttled", sys,
                        std::filesystem::copy_options::recursive);
  const std::string counter = sys + "/devices/system/cpu/cpu0/thermal_throttle/core_throttle_count";
  std::atomic<bool> stop{false};
  std::thread heat([&] {  // the core keeps hitting its thermal limit
    for (int events = 13; !stop; ++events) {
      std::ofstream(counter) << events << "\n";
      std::this_thread::sleep_for(20ms);
    }
  });
  DaemonProcess daemon(round_a_second_args(dir, {"--sys-root", sys}));
  const int port = daemon.port();
  const std::string text = scrape_until(port, [](const std::string& t) {
    return metric_value(t, "corenoise_core_state{cpu=\"0\",state=\"throttled\"}") == 1.0;
  });
  stop = true;
  heat.join();
  EXPECT_EQ(metric_value(text, "corenoise_core_state{cpu=\"0\",state=\"throttled\"}"), 1.0)
      << text << daemon.log();
  EXPECT_GT(metric_value(text, "corenoise_thermal_throttle_events_total{cpu=\"0\",scope=\"core\"}")
                .value_or(0),
            12);
  EXPECT_EQ(metric_value(text, "corenoise_cpufreq_hertz{cpu=\"0\",type=\"max\"}"), 3.5e9);
  const auto results = run_command(ctl(dir, "status --json"));
  EXPECT_EQ(results.exit_code, 2) << results.out << results.err;  // unhealthy
}

// 1 ms busy of every 10 on CPU 1 (SCHED_FIFO), for `seconds`.
std::vector<std::string> noise_on_cpu1(int seconds) {
  return {NOISE_INJECTOR_BIN,     "--cpu", "1", "--busy-ms", "1", "--period-ms", "10", "--seconds",
          std::to_string(seconds)};
}

// Default probe and persistence settings (the quick ones are too short to
// see 1 ms of 10), a round every `interval` seconds. Busy CPUs are probed
// too: on a shared machine other work would have them skipped as busy.
std::vector<std::string> default_probe_args(const TempDir& dir, const std::string& interval) {
  return {"--config",    "/dev/null",     "--listen",
          "127.0.0.1:0", "--socket",      dir.path() + "/ctl.sock",
          "--state-dir", dir.path(),      "--interval",
          interval,      "--busy-policy", "probe"};
}

// The acceptance test: injected noise on CPU 1 shows up as
// corenoise_core_state{cpu="1",state="noisy"} 1 within a few rounds while
// CPU 0 stays ok.
TEST(Daemon, InjectedNoiseOnCpu1ShowsAsNoisyWithinAFewRounds) {
  if (native_pus() < 2) GTEST_FAIL() << "this test needs two CPUs";
  // Its rounds are one draw of the host, which a spell of 16-24 % on both
  // vCPUs (seen in a full ctest run) decides alone: start in a fair one.
  testing::wait_for_a_fair_host(kCorenoise);
  TempDir dir;
  BackgroundProcess injector(noise_on_cpu1(240));  // outlives the wait
  ASSERT_EQ(injector.wait_line().rfind("ready", 0), 0u);
  DaemonProcess daemon(default_probe_args(dir, "1"));
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();
  // "A few rounds" counts the rounds in which the host was fair, judged
  // from each round's noise ratios as host_draw.h judges a draw: the
  // fresh-machine check met a spell in which it took 22 rounds (the host
  // took 15 % of clean CPU 0 beside 6 % of CPU 1 the round before), and CI
  // one of more than a minute. The wait ends at the verdict, after more
  // than 10 fair rounds, or at 3 minutes.
  double seen_rounds = 0;
  int unfair_rounds = 0;
  const std::string text = scrape_until(
      port,
      [&](const std::string& t) {
        const double rounds =
            metric_value(t, "corenoise_rounds_total{mode=\"isolated\"}").value_or(0);
        if (rounds > seen_rounds) {
          seen_rounds = rounds;
          const double clean = metric_value(t, "corenoise_noise_ratio{cpu=\"0\"}").value_or(0);
          const double injected = metric_value(t, "corenoise_noise_ratio{cpu=\"1\"}").value_or(0);
          if (testing::unfair_round(clean, injected, 0.10)) ++unfair_rounds;
        }
        return (metric_value(t, "corenoise_core_state{cpu=\"1\",state=\"noisy\"}") == 1.0 &&
                metric_value(t, "corenoise_core_state{cpu=\"0\",state=\"ok\"}") == 1.0) ||
               seen_rounds - unfair_rounds > 10;
      },
      180s);
  EXPECT_EQ(metric_value(text, "corenoise_core_state{cpu=\"1\",state=\"noisy\"}"), 1.0)
      << text << daemon.log();
  EXPECT_EQ(metric_value(text, "corenoise_core_state{cpu=\"0\",state=\"ok\"}"), 1.0) << text;
  EXPECT_LE(
      metric_value(text, "corenoise_rounds_total{mode=\"isolated\"}").value_or(99) - unfair_rounds,
      10)
      << unfair_rounds << " rounds set aside as the host's; not within a few fair rounds";
}

// Persistence with the defaults (2 of 3), rounds on request: injected noise
// on CPU 1 shows in corenoise_round_core_state from its first bad round,
// while corenoise_core_state says transient; corenoise_core_state turns
// unhealthy (noisy, or slow where other load on the machine blurs it) at the
// round where the second of its last three measured rounds was bad, and
// status and `corenoise run` (exit 2) list it as unhealthy only then.
TEST(Daemon, InjectedNoiseBecomesPersistentAtTheSecondBadRound) {
  if (native_pus() < 2) GTEST_FAIL() << "this test needs two CPUs";
  testing::wait_for_a_fair_host(kCorenoise);  // as above
  TempDir dir;
  BackgroundProcess injector(noise_on_cpu1(300));  // outlives 40 rounds
  ASSERT_EQ(injector.wait_line().rfind("ready", 0), 0u);
  // No scheduled round for an hour: rounds come from `corenoise run` alone.
  DaemonProcess daemon(default_probe_args(dir, "3600"));
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();
  const auto state = [](const std::string& text, const std::string& family) {
    for (const char* s :
         {"ok", "transient", "noisy", "throttled", "contended", "slow", "skipped"}) {
      if (metric_value(text, family + "{cpu=\"1\",state=\"" + s + "\"}") == 1.0)
        return std::string(s);
    }
    return std::string("none");
  };
  const auto listed = [](const json& reply, const char* list) -> const json* {
    if (!reply.contains(list)) return nullptr;
    for (const json& core : reply.at(list)) {
      if (core.value("cpu", -1) == 1) return &core;
    }
    return nullptr;
  };
  const auto unhealthy = [](const std::string& s) {
    return s == "noisy" || s == "throttled" || s == "contended" || s == "slow";
  };
  std::vector<bool> bad;         // cpu 1's rounds: unhealthy or not
  const auto window_bad = [&] {  // unhealthy among its last 3
    return static_cast<int>(
        std::count(bad.end() - std::min<std::ptrdiff_t>(3, bad.size()), bad.end(), true));
  };
  bool saw_transient = false;  // a bad round that left it transient
  int noisy_rounds = 0;
  // Up to 12 rounds in which the host was fair (judged as the test above
  // judges them), of at most 40: an unfair round still enters the daemon's
  // window, and the test's, but is no evidence that 10 % went unseen.
  int fair_rounds = 0;
  for (int round = 1; round <= 40 && fair_rounds < 12 && (bad.empty() || window_bad() < 2);
       ++round) {
    const auto run = run_command(ctl(dir, "run --json"));
    ASSERT_TRUE(run.exit_code == 0 || run.exit_code == 2) << run.out << run.err;
    const json reply = json::parse(run.out);
    const std::string text = http_get(port, "/metrics").second;
    const std::string round_state = state(text, "corenoise_round_core_state");
    if (round_state == "skipped") continue;  // not a measured round: no evidence
    const auto unfair = testing::unfair_round(
        metric_value(text, "corenoise_noise_ratio{cpu=\"0\"}").value_or(0),
        metric_value(text, "corenoise_noise_ratio{cpu=\"1\"}").value_or(0), 0.10);
    if (unfair) {
      std::cerr << "round " << round << ": " << *unfair << "\n";
    } else {
      ++fair_rounds;
    }
    bad.push_back(unhealthy(round_state));
    noisy_rounds += round_state == "noisy" ? 1 : 0;
    const int k = window_bad();
    const int n = std::min<int>(bad.size(), 3);
    SCOPED_TRACE("round " + std::to_string(round) + " (" + round_state + "), " + std::to_string(k) +
                 " of the last " + std::to_string(n) + " unhealthy\n" + run.out);
    EXPECT_EQ(metric_value(text, "corenoise_core_unhealthy_rounds{cpu=\"1\"}"),
              static_cast<double>(k));
    if (k == 0) {
      EXPECT_EQ(state(text, "corenoise_core_state"), "ok");
    } else if (k == 1) {
      // Shown from its first bad round, but not (yet) unhealthy.
      EXPECT_EQ(state(text, "corenoise_core_state"), "transient");
      saw_transient = saw_transient || bad.back();
      EXPECT_EQ(listed(reply, "unhealthy"), nullptr);
      ASSERT_NE(listed(reply, "transient"), nullptr);
      EXPECT_EQ(listed(reply, "transient")->value("unhealthy_rounds", 0), 1);
      EXPECT_EQ(listed(reply, "transient")->value("round_state", ""), round_state);
    } else {
      // The K-th bad round: persistent from this round on, in this round's
      // state (on a loaded machine the injected noise may also read as slow).
      ASSERT_TRUE(unhealthy(round_state));
      EXPECT_EQ(state(text, "corenoise_core_state"), round_state) << text;
      EXPECT_EQ(run.exit_code, 2);
      const json* core = listed(reply, "unhealthy");
      ASSERT_NE(core, nullptr);
      EXPECT_EQ(core->value("state", ""), round_state);
      EXPECT_EQ(core->value("round_state", ""), round_state);
      EXPECT_EQ(core->value("unhealthy_rounds", 0), 2);
      EXPECT_EQ(core->value("rounds", 0), n);
      // `corenoise status` prints the k of n.
      const auto status = run_command(ctl(dir, "status"));
      EXPECT_EQ(status.exit_code, 2);
      EXPECT_NE(status.out.find("cpu 1  " + round_state + " (round: " + round_state + ", 2 of " +
                                std::to_string(n) + " rounds unhealthy)"),
                std::string::npos)
          << status.out;
    }
  }
  EXPECT_TRUE(saw_transient) << daemon.log();
  EXPECT_GE(noisy_rounds, 1) << "the injected noise never read as noisy\n" << daemon.log();
  EXPECT_GE(window_bad(), 2) << "the injected noise was not seen in 2 of 3 rounds within "
                             << bad.size() << " measured rounds, " << fair_rounds
                             << " of them fair\n"
                             << daemon.log();
}

}  // namespace
}  // namespace corenoise

namespace corenoise {
namespace {

// A node whose every CPU a job keeps busy: with the default busy policy the
// daemon leaves them alone, but its rounds still happen and say so, so that
// the round timestamp does not stop as if the daemon were stuck.
TEST(Daemon, EveryCpuBusyStillCountsRoundsThatSayWhy) {
  const std::size_t cpus = native_pus();
  std::vector<std::unique_ptr<BackgroundProcess>> job;
  for (std::size_t cpu = 0; cpu < cpus; ++cpu) {
    job.push_back(std::make_unique<BackgroundProcess>(
        std::vector<std::string>{NOISE_INJECTOR_BIN, "--cpu", std::to_string(cpu), "--busy-ms",
                                 "10", "--period-ms", "10", "--seconds", "60", "--normal"}));
    ASSERT_EQ(job.back()->wait_line().rfind("ready", 0), 0u);
  }
  TempDir dir;
  DaemonProcess daemon(round_a_second_args(dir, {"--busy-policy", "skip"}));
  const int port = daemon.port();
  ASSERT_GT(port, 0) << daemon.log();
  const std::string text = scrape_until(port, [](const std::string& t) {
    return metric_value(t, "corenoise_rounds_total{mode=\"isolated\"}").value_or(0) >= 2;
  });
  // The first round has no earlier window to judge busyness by; from the
  // second on every CPU is skipped as busy.
  EXPECT_GE(metric_value(text, "corenoise_rounds_total{mode=\"isolated\"}").value_or(0), 2)
      << text << daemon.log();
  const std::string later = scrape_until(port, [&](const std::string& t) {
    for (std::size_t cpu = 0; cpu < cpus; ++cpu) {
      const std::string c = "cpu=\"" + std::to_string(cpu) + "\"";
      if (metric_value(t, "corenoise_core_state{" + c + ",state=\"skipped\"}") != 1.0) return false;
    }
    return true;
  });
  for (std::size_t cpu = 0; cpu < cpus; ++cpu) {
    const std::string c = "cpu=\"" + std::to_string(cpu) + "\"";
    EXPECT_EQ(metric_value(later, "corenoise_core_state{" + c + ",state=\"skipped\"}"), 1.0)
        << later;
  }
  const auto status =
      testing::run_command(kCorenoise + " status --socket " + dir.path() + "/ctl.sock");
  EXPECT_NE(status.out.find("skipped"), std::string::npos) << status.out;
}

}  // namespace
}  // namespace corenoise
