#include "collector/job/rank/job_daemon.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include "daemon/control/control_client.h"
#include "daemon/control/control_replies.h"
#include "daemon/control/slurm_cgroup.h"

namespace corenoise {

using nlohmann::json;

namespace {
constexpr std::chrono::milliseconds kTimeout{1000};
}

std::optional<std::map<unsigned, DaemonVerdict>> verdicts_from_results(const json& results,
                                                                       double now_unix_seconds) {
  NodeReport report;
  try {
    report = results.get<ResultsReply>().report;
  } catch (const std::exception&) {
    return std::nullopt;  // not a results document: no verdicts rather than guessed ones
  }
  if (report.pus.empty()) return std::nullopt;
  std::optional<double> age;
  if (!report.modes.empty()) {
    const ModeReport& last = report.modes.back();
    const double finished = last.started_unix_seconds + last.duration_seconds;
    if (finished > 0) age = std::max(0.0, now_unix_seconds - finished);
  }
  std::map<unsigned, DaemonVerdict> verdicts;
  for (std::size_t i = 0; i < report.pus.size(); ++i) {
    DaemonVerdict& v = verdicts[report.pus[i].cpu];
    v.state = to_string(report.state(i));
    v.cause =
        report.modes.empty() ? unprobed_cause(report.pus[i]) : report.overall(i).figures->cause;
    v.age_seconds = age;
  }
  return verdicts;
}

std::string job_socket(const std::string& socket_path) {
  if (socket_path.empty()) return {};
  std::error_code ignored;
  if (std::string user = user_socket_beside(socket_path); std::filesystem::exists(user, ignored)) {
    return user;
  }
  return std::filesystem::exists(socket_path, ignored) ? socket_path : std::string();
}

std::optional<std::map<unsigned, DaemonVerdict>> daemon_verdicts(const std::string& socket_path) {
  const std::string socket = job_socket(socket_path);
  if (socket.empty()) return std::nullopt;
  try {
    const json reply =
        ControlClient(socket, kTimeout).request(json{{"command", "results"}}, kTimeout);
    if (!reply.value("ok", false)) return std::nullopt;
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    // The reply is {"ok": true, ...the results document's fields}.
    return verdicts_from_results(reply.contains("result") ? reply["result"] : reply, now);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

namespace {

// One CPU's culprits with the tasks of one command merged (a shell loop's
// dd is a new process each pass, as are a cron job's): "dd (3 tasks)".
std::vector<JobTracedCulprit> merged_by_command(const std::vector<JobTracedCulprit>& culprits) {
  std::vector<JobTracedCulprit> merged;
  std::vector<int> tasks;
  for (const JobTracedCulprit& c : culprits) {
    const auto same = std::find_if(merged.begin(), merged.end(), [&](const JobTracedCulprit& m) {
      return c.kind == "task" && m.kind == "task" && m.name == c.name;
    });
    if (same == merged.end()) {
      merged.push_back(c);
      tasks.push_back(1);
      continue;
    }
    const auto at = static_cast<std::size_t>(same - merged.begin());
    same->seconds += c.seconds;
    same->id = -1;
    same->text = c.name + " (" + std::to_string(++tasks[at]) + " tasks)";
  }
  std::stable_sort(merged.begin(), merged.end(),
                   [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  return merged;
}

}  // namespace

std::vector<RankRecord::TracedCulprit> traced_from_reply(const json& reply) {
  constexpr std::size_t kPerCpu = 5;
  constexpr double kLeastShare = 0.001;
  JobCulpritsReply traced;
  try {
    traced = reply.get<JobCulpritsReply>();
  } catch (const std::exception&) {
    return {};  // not a job-culprits reply: none rather than guessed ones
  }
  std::vector<RankRecord::TracedCulprit> out;
  // A node's first rank sends them to rank 0 in its node's digest: on a
  // node of 128 CPUs, 640 entries, and at 800 nodes 40 MB. The node's 64
  // largest bound that at 6.4 KB a node (5 MB at 100,000 ranks), and a late
  // rank's CPU is among the busiest with others' work.
  constexpr std::size_t kPerNode = 64;
  for (const JobTracedCpu& cpu : traced.cpus) {
    if (!(cpu.seconds > 0)) continue;
    std::size_t kept = 0;
    for (const JobTracedCulprit& c : merged_by_command(cpu.culprits)) {  // most time first
      const double share = c.seconds / cpu.seconds;
      if (kept == kPerCpu || !(share >= kLeastShare)) break;
      out.push_back({static_cast<int>(cpu.cpu), c.kind, c.text, c.seconds, std::min(share, 1.0)});
      ++kept;
    }
  }
  if (out.size() > kPerNode) {
    std::partial_sort(out.begin(), out.begin() + kPerNode, out.end(),
                      [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
    out.resize(kPerNode);
  }
  return out;
}

std::vector<RankRecord::TracedCulprit> daemon_traced_culprits(const std::string& socket_path,
                                                              const std::string& job_id) {
  const std::string socket = job_socket(socket_path);
  if (socket.empty()) return {};
  try {
    const json reply = ControlClient(socket, kTimeout)
                           .request(to_json(ControlRequest{JobCulpritsRequest{job_id}}), kTimeout);
    if (!reply.value("ok", false)) return {};
    return traced_from_reply(reply);
  } catch (const std::exception&) {
    return {};
  }
}

json job_request(const std::string& job_id, double ended_unix_seconds, double elapsed_seconds,
                 int ranks, const std::vector<JobCpuLoss>& loss) {
  JobRequest request;
  request.job_id = job_id;
  request.ended_unix_seconds = ended_unix_seconds;
  request.elapsed_seconds = elapsed_seconds;
  request.ranks = static_cast<unsigned>(std::max(1, ranks));
  for (JobCpuLoss cpu : loss) {
    // Bounded by the job's wall time, as the daemon requires, and to the
    // microsecond, rounded down (up could pass elapsed_seconds, and the
    // daemon would refuse the whole report): full 17-digit numbers for
    // 4,096 CPUs would pass its 1 MiB line limit.
    for (double& seconds : cpu.lost_seconds) {
      seconds = std::floor(std::clamp(seconds, 0.0, elapsed_seconds) * 1e6) / 1e6;
    }
    request.cpus.push_back(cpu);
  }
  // All of it, too, no more than the wall time (the daemon refuses more):
  // one rank's loss split over its CPUs.
  double total = 0;
  for (const JobCpuLoss& cpu : request.cpus) {
    for (double seconds : cpu.lost_seconds) total += seconds;
  }
  if (total > elapsed_seconds) {
    for (JobCpuLoss& cpu : request.cpus) {
      for (double& seconds : cpu.lost_seconds) {
        seconds = std::floor(seconds * (elapsed_seconds / total) * 1e6) / 1e6;
      }
    }
  }
  return to_json(ControlRequest{request});
}

json job_live_request(JobLiveRequest live) {
  live.epoch = std::max(1L, live.epoch);
  live.elapsed_seconds = std::max(live.elapsed_seconds, 1e-3);
  live.interval_seconds =
      std::clamp(live.interval_seconds, kMinLiveIntervalSeconds, kMaxLiveIntervalSeconds);
  live.ranks = std::max(1u, live.ranks);
  live.rank = std::min(live.rank, live.ranks - 1);
  // Within what the other ranks can have waited, rounded down.
  const auto within = [&](double caused, double seconds) {
    const double most = seconds * static_cast<double>(live.ranks - 1);
    // floor(x * 1e6) / 1e6 may round up past x by an ulp.
    return std::min(std::floor(std::clamp(caused, 0.0, most) * 1e6) / 1e6, most);
  };
  live.wait_caused_seconds = within(live.wait_caused_seconds, live.elapsed_seconds);
  live.window_seconds = std::clamp(live.window_seconds, 0.0, live.elapsed_seconds);
  live.window_wait_caused_seconds = within(live.window_wait_caused_seconds, live.window_seconds);
  if (live.window_seconds <= 0) live.window_cause.reset();
  return to_json(ControlRequest{live});
}

json job_start_request(const std::string& job_id) {
  return to_json(ControlRequest{JobStartRequest{job_id, slurm_cgroup_of_this_process()}});
}

std::string send_job_line(const std::string& socket_path, const json& request, bool retry) {
  if (socket_path.empty()) return "no socket";
  const std::string socket = job_socket(socket_path);
  if (socket.empty()) return "no corenoised at " + socket_path;
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  std::minstd_rand random(static_cast<unsigned>(::getpid()));
  for (;;) {
    std::string error;
    try {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      const json reply = ControlClient(socket, std::max(left, std::chrono::milliseconds(1)))
                             .request(request, std::max(left, std::chrono::milliseconds(1)));
      if (reply.value("ok", false)) return "";
      error = reply.value("error", std::string("refused"));
    } catch (const std::exception& e) {
      return e.what();
    }
    // The daemon's own words for a connection it turned away at the door.
    if (!retry || error.rfind("too many connections", 0) != 0) return error;
    const auto pause = std::chrono::milliseconds(2 + random() % 20);
    if (std::chrono::steady_clock::now() + pause >= deadline) return error;
    std::this_thread::sleep_for(pause);
  }
}

std::string job_id(long pid) {
  for (const char* name :
       {"SLURM_JOB_ID", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid", "PMI_JOBID"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') {
      // The daemon takes 1 to 128 printable ASCII characters.
      std::string id;
      for (const char* c = value; *c != '\0' && id.size() < 128; ++c)
        id += (*c >= 0x20 && *c < 0x7f) ? *c : '_';
      return id;
    }
  }
  // MPICH's Hydra names no job in the ranks' environment, but starts a
  // node's ranks of one job from one proxy (hydra_pmi_proxy), their
  // parent: the daemon, one a node, needs no more.
  if (std::getenv("PMI_RANK") != nullptr && std::getenv("PMI_FD") != nullptr)
    return "hydra-" + std::to_string(::getppid());
  return "pid-" + std::to_string(pid);
}

}  // namespace corenoise
