#include "daemon/daemon.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>

#include "daemon/control/control_protocol.h"
#include "daemon/control/control_replies.h"
#include "daemon/control_server.h"
#include "daemon/exporter.h"
#include "daemon/log.h"
#include "daemon/sys_counters.h"
#include "probe/cpu_list.h"
#include "probe/pinning.h"
#include "probe/report_json.h"
#include "probe/trace/culprit_names.h"
#include "probe/units.h"
#include "probe/wall_clock.h"

namespace corenoise {
namespace {

// The running jobs' ranks the exporter names (corenoise_job_live_*): the
// few that caused the most waiting, so that a node of 128 ranks adds five
// series, not 128 (docs/metrics.md, "The running job").
constexpr std::size_t kLiveRanksExported = 5;

using nlohmann::json;
using Seconds = std::chrono::duration<double>;

// Each registered rank holds a pidfd: the registrations must leave the
// daemon room for its sockets, files and connections under RLIMIT_NOFILE
// (the unit raises it; a daemon started by hand may have 1024).
JobAdmissionLimits within_descriptors(JobAdmissionLimits limits, std::size_t pus) {
  // A node's ranks all start at once: one user's burst takes a job-start
  // and a report from one rank a PU, at least.
  limits.line_burst = std::max(limits.line_burst, 2.0 * static_cast<double>(pus));
  limits.lines_per_second = std::max(limits.lines_per_second, static_cast<double>(pus));
  constexpr rlim_t kKeptForTheRest = 1280;  // two servers' connections, files, the trace
  rlimit open_files{};
  if (::getrlimit(RLIMIT_NOFILE, &open_files) == 0 && open_files.rlim_cur != RLIM_INFINITY) {
    const rlim_t room =
        open_files.rlim_cur > kKeptForTheRest ? open_files.rlim_cur - kKeptForTheRest : 64;
    if (limits.ranks_total > room) {
      log_notice("job registrations capped at " + std::to_string(room) +
                 " running ranks by the open-file limit (" + std::to_string(open_files.rlim_cur) +
                 ")");
      limits.ranks_total = static_cast<std::size_t>(room);
    }
  }
  limits.ranks_per_user = std::min(limits.ranks_per_user, limits.ranks_total);
  return limits;
}

// The user socket's, from the control socket's: every local user's (their
// jobs' ranks, their `corenoise status`), beside the control socket, where
// the in-job library and `corenoise` look for it.
ControlServerOptions user_socket_options(ControlServerOptions control) {
  ControlServerOptions user = std::move(control);
  user.control_socket_path = user.socket_path;
  user.socket_path = user_socket_beside(user.socket_path);
  user.socket_mode = 0666;
  user.group.reset();  // the file keeps the daemon's group; the control group acts elsewhere
  user.privileged = false;
  // The ranks of a big node register at once at MPI_Init (and retry a
  // refused connection), and report at once at MPI_Finalize; a rank's
  // report names its own CPUs, far below a publish's 1 MiB.
  user.max_connections = 1024;
  user.reserved_connections = 0;
  user.max_connections_per_user = 64;
  user.max_line_bytes = 256 * 1024;
  user.max_lifetime = std::chrono::seconds(60);
  user.reads_per_second = 20;
  return user;
}

AdmissionTime admission_time() {
  return {
      unix_seconds_now(),
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count()};
}

std::vector<unsigned> watched_cpus(const DaemonConfig& config, const Topology& topology) {
  std::vector<unsigned> cpus;
  for (const auto& pu : topology.pus()) {
    if (!pu.usable()) continue;
    if (config.cpus &&
        std::find(config.cpus->begin(), config.cpus->end(), pu.cpu) == config.cpus->end()) {
      continue;
    }
    cpus.push_back(pu.cpu);
  }
  return cpus;
}

}  // namespace

Daemon::Daemon(boost::asio::io_context& io, DaemonConfig config, std::vector<std::string> args)
    : io_(io),
      config_(std::move(config)),
      args_(std::move(args)),
      topology_(Topology::load(config_.topology)),
      calibration_store_(config_.state_dir),
      round_timer_(io),
      pause_timer_(io),
      watchdog_timer_(io),
      snapshot_timer_(io),
      ranks_timer_(io),
      signals_(io, SIGTERM, SIGINT, SIGHUP),
      random_(std::random_device{}()),
      job_admission_(process_facts_,
                     within_descriptors(config_.job_limits, topology_.pus().size())) {
  set_log_level(config_.log_level);
  if (!topology_.is_this_system()) {
    throw ConfigError("topology '" + config_.topology + "' is not this machine: nothing to watch");
  }
  if (config_.cpus) {
    for (unsigned cpu : *config_.cpus) {
      if (topology_.find(cpu) == nullptr) {
        throw ConfigError("option 'cpus': CPU " + std::to_string(cpu) + " is not on this machine");
      }
    }
  }
  topology_.attach_top_perf(config_.sys_root);  // favoured cores are not faults
  rebuild_runner(true);
  for (const auto& pu : topology_.pus()) {
    if (!pu.usable())
      log_warning("cpu " + std::to_string(pu.cpu) + " cannot be probed: " + pu.skip_reason);
  }
  try {
    calibration_ = calibration_store_.load();
    if (calibration_) log_info("loaded calibration from " + calibration_store_.path());
  } catch (const std::exception& e) {
    log_warning(std::string(e.what()) + "; starting without a calibration");
  }
  started_unix_seconds_ = unix_seconds_now();
}

Daemon::~Daemon() {
  cancel_ = true;
  if (round_thread_.joinable()) round_thread_.join();
}

void Daemon::rebuild_runner(bool starting) {
  runner_ = std::make_unique<Runner>(config_.probe, topology_);
  const std::vector<unsigned> cpus = watched_cpus(config_, topology_);
  if (trace_mode_ != config_.probe.trace || traced_cpus_ != cpus) {
    job_tracer_.reset();            // its thread joined, its instance removed
    if (trace_) trace_->release();  // an abandoned round may hold it on
    trace_.reset();
    trace_mode_ = config_.probe.trace;
    traced_cpus_ = cpus;
    std::string why_not;
    try {
      trace_ = trace::open_trace_source(config_.probe.trace, cpus, &why_not, "trace = on");
    } catch (const std::exception& e) {
      if (starting) throw ConfigError(e.what());
      log_error(std::string(e.what()) + "; the rounds go on untraced");
      why_not = e.what();
    }
    if (trace_) log_info("tracing the detour windows: culprits are named (docs/verdicts.md)");
    if (!why_not.empty()) log_info("not tracing the detour windows: " + why_not);
    trace_status_ = trace::trace_status(config_.probe.trace, trace_ != nullptr, why_not);
    // The job tracer's thread is made with the housekeeping affinity, in start().
    if (started_) rebuild_job_tracer();
  }
  runner_->set_trace(trace_);
  if (calibration_ &&
      calibration_->fingerprint != calibration_fingerprint(config_.probe, runner_->isa())) {
    log_notice("probe settings changed: the calibration no longer applies and is redone");
    calibration_.reset();
  }
}

namespace {
constexpr unsigned kJobTraceBufferKib = 1024;
constexpr double kJobTraceReadSeconds = 0.25;
}  // namespace

std::vector<TracedJob> Daemon::traced_jobs() const {
  std::vector<TracedJob> jobs = job_admission_.running_jobs();
  if (foreign_pids_) {
    for (TracedJob& job : jobs) {
      for (pid_t pid : job.pids) job.commands.merge(thread_commands(config_.probe.proc_root, pid));
    }
  }
  return jobs;
}

void Daemon::rebuild_job_tracer() {
  job_tracer_.reset();
  if (!trace_) return;
  std::vector<unsigned> cpus;
  for (const auto& pu : topology_.pus()) cpus.push_back(pu.cpu);
  const std::string proc_root = config_.probe.proc_root;
  // The host's /proc, as users see it: PID 1's mount table, not the
  // daemon's sandbox (ProtectProc=). Unreadable: assumed hidden.
  std::ifstream mounts(proc_root + "/1/mountinfo");
  const bool hidden =
      !mounts.is_open() || proc_hides_pids({std::istreambuf_iterator<char>(mounts), {}});
  try {
    std::string why_not;
    // A job's CPU records continuously, unlike a probe's windows: a disk's
    // or a NIC's IRQs with their softirqs and switches make some 50,000
    // events a second (~2 MB). 1 MiB a CPU read four times a second holds
    // twice that.
    auto source = trace::open_trace_source(trace::TraceMode::automatic, cpus, &why_not,
                                           "trace = on", kJobTraceBufferKib);
    if (!source) throw std::runtime_error(why_not);
    foreign_pids_ = !in_initial_pid_namespace(proc_root);
    job_tracer_ = std::make_unique<JobTracer>(
        std::move(source), [proc_root](pid_t tid) { return task_owner(proc_root, tid); }, hidden,
        kJobTraceReadSeconds, foreign_pids_);
    log_info(std::string("tracing running jobs' CPUs for job-culprits") +
             (hidden ? " (/proc hides other users' processes: their tasks go unnamed)" : "") +
             (foreign_pids_ ? " (in a PID namespace of its own, whose thread ids the tracer's are "
                              "not: a job's own tasks are told by their commands)"
                            : ""));
    forget_exited_ranks();  // follows the jobs now, and every second from now
  } catch (const std::exception& e) {
    log_error(std::string("cannot trace running jobs' CPUs: ") + e.what());
  }
}

void Daemon::start() {
  // Threads created from here on (the exporter's, the round thread) inherit
  // this affinity; probe threads pin themselves.
  if (config_.housekeeping_cpus && !set_current_affinity(*config_.housekeeping_cpus)) {
    throw ConfigError("option 'housekeeping-cpus': cannot run on those CPUs");
  }
  // On the event loop: a scrape is served from the cached text (docs/
  // architecture.md); only new passwords' bcrypt runs on a thread, made
  // here with the housekeeping affinity.
  exporter_ = std::make_unique<Exporter>(io_, config_.listen, store_, config_.web_config);
  log_info("exporter listening on " + config_.listen.substr(0, config_.listen.rfind(':')) + ":" +
           std::to_string(exporter_->port()) +
           (config_.web_config ? " with " + config_.web_config_file : ""));
  ControlServerOptions options;
  options.socket_path = config_.socket_path;
  options.socket_mode = config_.socket_mode;
  if (!config_.control_group.empty()) options.group = config_.control_group;
  // A publish carries a ratio per CPU, probe and mode: ~180 KB for 512 PUs.
  options.max_line_bytes = 1 << 20;
  control_ = std::make_unique<ControlServer>(io_, *this, options);
  control_->start();
  log_info("control socket at " + config_.socket_path);
  if (config_.user_socket) {
    user_control_ = std::make_unique<ControlServer>(io_, *this, user_socket_options(options));
    user_control_->start();
    log_info("user socket at " + user_control_->options().socket_path);
  }
  started_ = true;
  rebuild_job_tracer();
  forget_exited_ranks();

  idle_reference_ = read_cpu_times(config_.probe.proc_root);
  publish_snapshot();
  wait_for_signal();
  arm_watchdog();
  schedule_next_round();
  std::string first_round;
  if (next_round_unix_seconds_) {
    first_round = "; the first round in " +
                  std::to_string(static_cast<long>(
                      std::ceil(std::max(0.0, *next_round_unix_seconds_ - unix_seconds_now())))) +
                  " s";
  }
  notifier_.notify("READY=1\nSTATUS=watching " +
                   std::to_string(watched_cpus(config_, topology_).size()) +
                   " CPUs, not yet probed" + first_round);
  log_info("corenoised " CORENOISE_VERSION " started; a round every ~" +
           std::to_string(static_cast<int>(config_.interval_seconds)) + " s");
}

void Daemon::wait_for_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    if (signal != SIGHUP) {
      shut_down();
      return;
    }
    reload();
    wait_for_signal();  // async_wait is one-shot
  });
}

void Daemon::arm_watchdog() {
  const auto period = notifier_.watchdog_period();
  if (!period) return;
  // Sent from the event loop itself: if the loop hangs, systemd kills us.
  notifier_.notify("WATCHDOG=1");
  watchdog_timer_.expires_after(*period);
  watchdog_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !stopping_) arm_watchdog();
  });
}

void Daemon::schedule_next_round() {
  if (stopping_) return;
  std::uniform_real_distribution<double> spread(-config_.interval_spread, config_.interval_spread);
  // The first round comes at a random point of the first interval, so that
  // nodes booted together do not probe together.
  const double delay =
      scheduled_rounds_ == 0 && latest_.empty()
          ? std::uniform_real_distribution<double>(0, 1)(random_) * config_.interval_seconds
          : config_.interval_seconds * (1 + spread(random_));
  next_round_unix_seconds_ = unix_seconds_now() + delay;
  round_timer_.expires_after(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(Seconds(delay)));
  round_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    next_round_unix_seconds_.reset();
    if (paused_) return;  // resume() schedules again
    // `mode` says what every round runs; with isolated rounds, every Nth is
    // concurrent instead, for the all-core behaviour (power limits, bandwidth).
    const bool nth =
        config_.concurrent_every > 0 && (scheduled_rounds_ + 1) % config_.concurrent_every == 0;
    ++scheduled_rounds_;
    RoundRequest request;
    request.modes = config_.probe.modes;
    if (request.modes == std::vector<Mode>{Mode::isolated} && nth)
      request.modes = {Mode::concurrent};
    request.scheduled = true;
    enqueue(std::move(request));
  });
}

void Daemon::enqueue(RoundRequest request) {
  queue_.push_back(std::move(request));
  if (!running_) start_next_request();
}

void Daemon::start_next_request() {
  while (!running_ && !queue_.empty() && !stopping_) {
    RoundRequest request = std::move(queue_.front());
    queue_.pop_front();
    if (request.scheduled && paused_) continue;
    running_ = std::move(request);
  }
  if (!running_) return;
  std::map<unsigned, Cause> skipped;
  const std::vector<unsigned> cpus = cpus_to_probe(skipped);
  launch_round(cpus, std::move(skipped));
}

std::vector<unsigned> Daemon::cpus_to_probe(std::map<unsigned, Cause>& skipped) {
  // Busy CPUs since the last round (our own probes are not in this window).
  const auto now_times = read_cpu_times(config_.probe.proc_root);
  std::vector<unsigned> cpus;
  // Read here, on the event-loop thread, between rounds: no round has it
  // moved off a CPU now (see ProcessOffCpus).
  const std::vector<unsigned> affinity = current_affinity();
  std::map<unsigned, std::string> unavailable_now;
  for (unsigned cpu : watched_cpus(config_, topology_)) {
    if (auto why = unavailable(cpu, affinity)) {
      const auto before = unavailable_.find(cpu);
      if (before == unavailable_.end() || before->second != *why)
        log_warning("cpu " + std::to_string(cpu) + " skipped: " + *why);
      unavailable_now[cpu] = *why;
      skipped[cpu] = skipped_cause(SkipReason::other, *why);
      continue;
    }
    if (unavailable_.contains(cpu)) log_notice("cpu " + std::to_string(cpu) + " is back");
    const auto busy = busy_fraction(idle_reference_, now_times, cpu);
    if (busy && *busy > config_.busy_threshold && config_.busy_policy == BusyPolicy::skip &&
        !running_->calibrate) {
      skipped[cpu] = skipped_cause(SkipReason::busy);
      skipped[cpu].figure = *busy;
      continue;
    }
    cpus.push_back(cpu);
  }
  unavailable_ = std::move(unavailable_now);
  return cpus;
}

void Daemon::launch_round(const std::vector<unsigned>& cpus, std::map<unsigned, Cause> skipped) {
  auto sys_before = read_sys();
  cancel_ = false;
  const std::vector<Mode> modes = running_->modes;
  std::map<Mode, double> deadlines;
  for (Mode mode : modes) deadlines[mode] = round_deadline(mode, cpus.size());
  round_thread_ = std::thread([this, modes, cpus, deadlines, skipped = std::move(skipped),
                               sys_before = std::move(sys_before)]() mutable {
    std::vector<RoundSamples> rounds;
    for (Mode mode : modes) {
      if (cancel_) break;
      if (cpus.empty()) {
        // Every CPU busy (a job holds the node): still a round, one that
        // measured nothing, so that its time and the `skipped` states with
        // their cause say why there are no figures, instead of a round
        // timestamp that stops as if the daemon were stuck.
        RoundSamples nothing;
        nothing.mode = mode;
        nothing.isa = runner_->isa();
        nothing.started_unix_seconds = unix_seconds_now();
        rounds.push_back(std::move(nothing));
        continue;
      }
      rounds.push_back(runner_->run(mode, cpus, {}, &cancel_, nullptr, deadlines.at(mode)));
    }
    boost::asio::post(io_, [this, rounds = std::move(rounds), skipped = std::move(skipped),
                            sys_before = std::move(sys_before)]() mutable {
      finish_round(std::move(rounds), std::move(skipped), std::move(sys_before));
    });
  });
}

std::optional<std::string> Daemon::unavailable(unsigned cpu,
                                               const std::vector<unsigned>& affinity) const {
  // Hot-unplugged: the kernel's own flag (cpu0 often has no such file).
  const std::string online =
      config_.sys_root + "/devices/system/cpu/cpu" + std::to_string(cpu) + "/online";
  if (std::ifstream file(online); file && file.peek() == '0')
    return "offline (" + online + " is 0)";
  // `taskset -p` on the daemon, or its cgroup's cpuset (which the kernel
  // applies to every thread's affinity): the event loop's affinity is the
  // daemon's own unless housekeeping-cpus pinned it, in which case only the
  // cpuset (a failed pin, reported by the probe thread) and hot-unplug
  // narrow it.
  if (!config_.housekeeping_cpus && !affinity.empty() &&
      std::find(affinity.begin(), affinity.end(), cpu) == affinity.end()) {
    return std::string(
        "outside the daemon's CPU affinity (taskset, sched_setaffinity or the cgroup's cpuset)");
  }
  return std::nullopt;
}

double Daemon::round_deadline(Mode mode, std::size_t cpus) const {
  if (config_.round_deadline_seconds) return *config_.round_deadline_seconds;
  // Ten times what the last full round took, per CPU in isolated mode (the
  // CPUs take turns) and as a whole in concurrent mode (all at once); a
  // round of a node that is merely slower today never comes close.
  const auto last = last_full_round_.find(mode);
  const double n = static_cast<double>(std::max<std::size_t>(cpus, 1));
  if (last == last_full_round_.end()) return 60 * (mode == Mode::isolated ? n : 1);
  const double seconds = last->second.first;
  const double per_cpu =
      seconds / static_cast<double>(std::max<std::size_t>(last->second.second, 1));
  return std::max(60.0, 10 * (mode == Mode::isolated ? per_cpu * n : seconds));
}

std::map<unsigned, CpuSysInfo> Daemon::read_sys() const {
  std::map<unsigned, CpuSysInfo> result;
  for (const auto& pu : topology_.pus()) {
    CpuSysInfo info = read_sys_info(config_.sys_root, pu.cpu);
    if (info.core_throttle_count || info.package_throttle_count || info.cur_hertz ||
        info.max_hertz) {
      result[pu.cpu] = info;
    }
  }
  return result;
}

void Daemon::apply_sys_verdicts(ModeReport& mode, const std::map<unsigned, CpuSysInfo>& before,
                                const std::map<unsigned, CpuSysInfo>& after) const {
  auto increase = [](const std::optional<std::uint64_t>& b, const std::optional<std::uint64_t>& a) {
    return (a && b && *a > *b) ? *a - *b : 0;
  };
  for (CoreFigures& c : mode.verdicts.cores) {
    if (c.state == CoreState::skipped) continue;
    const auto b = before.find(c.cpu), a = after.find(c.cpu);
    if (b == before.end() || a == after.end()) continue;
    const auto core_events = increase(b->second.core_throttle_count, a->second.core_throttle_count);
    const auto package_events =
        increase(b->second.package_throttle_count, a->second.package_throttle_count);
    if (core_events + package_events == 0) continue;
    // The kernel saw the CPU throttle while we measured it: that is the cause,
    // whatever the ratios said.
    c.state = CoreState::throttled;
    c.cause.thermal = Cause::Thermal{core_events, package_events};
  }
}

void Daemon::finish_round(std::vector<RoundSamples> rounds, std::map<unsigned, Cause> skipped,
                          std::map<unsigned, CpuSysInfo> sys_before) {
  if (round_thread_.joinable()) round_thread_.join();
  RoundRequest request = std::move(*running_);
  running_.reset();
  idle_reference_ = read_cpu_times(config_.probe.proc_root);
  const auto sys_after = read_sys();
  last_sys_ = sys_after;
  const bool cancelled =
      cancel_.load() ||
      std::any_of(rounds.begin(), rounds.end(), [](const RoundSamples& r) { return r.cancelled; });
  RunReply done;
  if (!cancelled) {
    done.rounds = take_rounds(rounds, skipped, sys_before, sys_after, request.calibrate);
    done.cpu_states = cpu_states();
  }
  const nlohmann::json reply =
      cancelled ? json{{"ok", false}, {"error", "the round was cancelled (paused or stopping)"}}
                : json(done);
  for (auto& r : request.replies) r(reply);
  if (!cancelled) {
    notifier_.notify("STATUS=" + std::string(done.cpu_states.healthy ? "healthy" : "unhealthy") +
                     " after " +
                     std::to_string(round_stats_[Mode::isolated].rounds +
                                    round_stats_[Mode::concurrent].rounds) +
                     " rounds");
  }
  if (pending_config_) {
    apply_config(std::move(*pending_config_));
    pending_config_.reset();
  } else if (request.scheduled) {
    schedule_next_round();
  }
  start_next_request();
}

std::vector<RoundDone> Daemon::take_rounds(const std::vector<RoundSamples>& rounds,
                                           const std::map<unsigned, Cause>& skipped,
                                           const std::map<unsigned, CpuSysInfo>& sys_before,
                                           const std::map<unsigned, CpuSysInfo>& sys_after,
                                           bool calibrate) {
  std::vector<RoundDone> done;
  std::vector<ModeReport> reports;
  for (const RoundSamples& round : rounds) {
    ModeReport report = make_mode_report(round, topology_.pus(), config_.probe.thresholds, skipped);
    apply_sys_verdicts(report, sys_before, sys_after);
    for (const CoreFigures& c : report.verdicts.cores) {
      if (c.detour) {
        totals_[c.cpu].detours += c.detour->count;
        totals_[c.cpu].detour_seconds += c.detour->total_seconds;
      }
    }
    note_round_timing(round);
    update_calibration(report, calibrate);
    done.push_back({std::string(to_string(round.mode)), round.duration_seconds, round.cpus.size()});
    reports.push_back(report);
    latest_[round.mode] = std::move(report);
  }
  record_round(reports);
  publish_snapshot();
  return done;
}

void Daemon::note_round_timing(const RoundSamples& round) {
  if (round.overran) {
    std::string abandoned;
    for (const CpuSamples& c : round.cpus) {
      if (c.abandoned) abandoned += (abandoned.empty() ? "" : ",") + std::to_string(c.cpu);
    }
    log_warning(std::string(to_string(round.mode)) + " round cut short at its deadline" +
                (abandoned.empty() ? "" : "; abandoned the probe thread of cpu " + abandoned));
  } else if (!round.cpus.empty()) {
    last_full_round_[round.mode] = {round.duration_seconds, round.cpus.size()};
  }
  RoundStats& stats = round_stats_[round.mode];
  ++stats.rounds;
  stats.last_unix_seconds = round.started_unix_seconds;
  stats.last_duration_seconds = round.duration_seconds;
}

void Daemon::update_calibration(const ModeReport& report, bool recalibrate) {
  // Each (cpu, mode) is calibrated by its first round, and all of them again
  // on `calibrate`.
  Calibration updated = calibration_.value_or(
      Calibration{calibration_fingerprint(config_.probe, runner_->isa()), 0, {}});
  Calibration fresh;
  calibrate_from(fresh, report);
  bool changed = false;
  for (const auto& [key, figures] : fresh.cores) {
    if (recalibrate || !updated.cores.contains(key)) {
      updated.cores[key] = figures;
      changed = true;
    }
  }
  if (changed) updated.calibrated_unix_seconds = report.started_unix_seconds;
  // A failed save (a full or read-only state directory) is tried again
  // every round, so that the file catches up once there is room.
  if (changed || calibration_unsaved_) {
    try {
      calibration_store_.save(updated);
      log_info("calibration saved to " + calibration_store_.path());
      calibration_unsaved_ = false;
    } catch (const std::exception& e) {
      log_error(
          std::string(e.what()) +
          " (probing goes on; the calibration lives in memory and is saved again next round)");
      calibration_unsaved_ = true;
    }
  }
  calibration_ = std::move(updated);
}

void Daemon::record_round(const std::vector<ModeReport>& reports) {
  if (reports.empty()) return;
  // The round's own overall verdict: the same rule as NodeReport::state,
  // over this round's modes only (report.modes also holds the latest round
  // of a mode this round did not run, which must not count twice).
  NodeReport round;
  round.pus = topology_.pus();
  round.modes = reports;
  for (const ModeReport& m : round.modes) {
    if (m.verdicts.cores.size() != round.pus.size()) return;  // cannot happen: make_mode_report
  }
  for (std::size_t i = 0; i < round.pus.size(); ++i) {
    const unsigned cpu = round.pus[i].cpu;
    auto it = history_.try_emplace(cpu, config_.persistence.rounds).first;
    it->second.record(round.state(i), round.modes[round.deciding_mode(i)].verdicts.cores[i].cause);
  }
}

CpuStates Daemon::cpu_states() const {
  const SnapshotPtr snapshot = store_.get();
  CpuStates out;
  std::map<CoreState, std::size_t> counts;
  // Before the first round no CPU has a state: not even skipped.
  for (std::size_t i = 0; !latest_.empty() && i < snapshot->report.pus.size(); ++i)
    ++counts[verdict_of(*snapshot, i).state];
  for (CoreState s : kAllCoreStates) out.states[std::string(to_string(s))] = counts[s];
  for (std::size_t i = 0; i < snapshot->report.pus.size(); ++i) {
    const PersistentVerdict v = verdict_of(*snapshot, i);
    auto* list = is_unhealthy(v.state)             ? &out.unhealthy
                 : v.state == CoreState::transient ? &out.transient
                                                   : nullptr;
    if (list == nullptr) continue;
    list->push_back({snapshot->report.pus[i].cpu, std::string(to_string(v.state)), v.cause,
                     std::string(to_string(v.round_state)), v.unhealthy_rounds, v.rounds});
  }
  out.healthy = persistently_healthy(*snapshot);
  return out;
}

void Daemon::publish_snapshot_soon() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_snapshot_ >= std::chrono::seconds(1)) return publish_snapshot();
  if (snapshot_timer_.expiry() > now) return;  // one is waiting already
  snapshot_timer_.expires_at(last_snapshot_ + std::chrono::seconds(1));
  snapshot_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !stopping_) publish_snapshot();
  });
}

void Daemon::forget_exited_ranks() {
  const std::size_t forgotten = job_admission_.forget_exited();
  if (forgotten > 0) {
    log_debug("forgot " + std::to_string(forgotten) + " exited ranks' job-start");
  }
  if (job_tracer_ && job_tracer_->follow(traced_jobs()) > 0 && !warned_blind_) {
    log_warning(
        "cannot read /proc of a registered rank: its job's own threads will be named as "
        "culprits of its CPUs (tracing needs other users' /proc: the packaged drop-in's "
        "ProtectProc=default; docs/daemon.md)");
    warned_blind_ = true;
  }
  ranks_timer_.expires_after(std::chrono::seconds(job_tracer_ ? 1 : 30));
  ranks_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !stopping_) forget_exited_ranks();
  });
}

void Daemon::publish_snapshot() {
  last_snapshot_ = std::chrono::steady_clock::now();
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->version = CORENOISE_VERSION;
  NodeReport& report = snapshot->report;
  report.version = CORENOISE_VERSION;
  report.topology_source = topology_.source();
  report.this_system = true;
  // So that `corenoise collect` names the node its results came from.
  report.hostname = local_hostname();
  report.settings = config_.probe;
  report.isa = runner_->isa();
  report.pus = topology_.pus();
  for (Mode mode : {Mode::isolated, Mode::concurrent}) {
    if (const auto it = latest_.find(mode); it != latest_.end()) report.modes.push_back(it->second);
  }
  for (const auto& [cpu, history] : history_) {
    snapshot->persistence[cpu] = history.verdict(config_.persistence);
  }
  snapshot->rounds = round_stats_;
  snapshot->totals = totals_;
  if (calibration_) snapshot->baseline_slowdown = baseline_slowdowns(*calibration_, report);
  snapshot->cluster_slowdown = cluster_slowdown_;
  snapshot->cluster_published_unix_seconds = cluster_published_;
  snapshot->sys = last_sys_;
  snapshot->jobs = job_totals_;
  snapshot->jobs_live = job_admission_.live_view(kLiveRanksExported);
  snapshot->paused = paused_;
  snapshot->paused_until_unix_seconds = paused_until_;
  snapshot->started_unix_seconds = started_unix_seconds_;
  store_.set(std::move(snapshot));
}

void Daemon::set_paused(bool paused, std::optional<double> seconds) {
  paused_ = paused;
  paused_until_.reset();
  pause_timer_.cancel();
  if (paused) {
    cancel_ = true;  // a job is starting: stop probing now, not at the end of the round
    round_timer_.cancel();
    next_round_unix_seconds_.reset();
    if (seconds) {
      paused_until_ = unix_seconds_now() + *seconds;
      pause_timer_.expires_after(
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(Seconds(*seconds)));
      pause_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec && paused_) resume();
      });
    }
  } else {
    round_timer_.cancel();
    schedule_next_round();
  }
  publish_snapshot();
}

namespace {

// Each traced CPU's largest culprits in the last round that measured it
// (isolated first), as shares of its detour windows.
std::vector<CpuCulprits> last_culprits(const NodeReport& report) {
  constexpr std::size_t kShown = 3;
  std::vector<CpuCulprits> cpus;
  for (std::size_t i = 0; i < report.pus.size(); ++i) {
    for (const ModeReport& m : report.modes) {
      if (i >= m.verdicts.cores.size()) continue;
      const CoreFigures& c = m.verdicts.cores[i];
      if (!c.culprits || !c.detour || c.detour->window_seconds <= 0) continue;
      CpuCulprits traced{report.pus[i].cpu, std::string(to_string(m.mode)), {}};
      for (std::size_t k = 0; k < c.culprits->culprits.size() && k < kShown; ++k) {
        const trace::Culprit& x = c.culprits->culprits[k];
        traced.top.push_back({trace::describe(x), std::string(trace::kind_name(x.kind)),
                              x.seconds / c.detour->window_seconds});
      }
      cpus.push_back(std::move(traced));
      break;
    }
  }
  return cpus;
}

}  // namespace

json Daemon::status(bool everything) {
  const SnapshotPtr snapshot = store_.get();
  StatusReply reply;
  reply.version = CORENOISE_VERSION;
  reply.started_unix_seconds = started_unix_seconds_;
  reply.paused = paused_;
  reply.paused_until_unix_seconds = paused_until_;
  reply.round_running = running_.has_value();
  reply.next_round_unix_seconds = next_round_unix_seconds_;
  for (const auto& [mode, stats] : round_stats_) {
    reply.rounds[std::string(to_string(mode))] = {stats.rounds, stats.last_unix_seconds,
                                                  stats.last_duration_seconds};
  }
  reply.cpu_states = cpu_states();
  reply.persistence = {config_.persistence.rounds, config_.persistence.bad};
  reply.cpus = snapshot->report.pus.size();
  if (latest_.empty()) reply.not_yet_probed = watched_cpus(config_, topology_).size();
  reply.jobs.reports = job_totals_.reports;
  reply.jobs.running_ranks = job_admission_.registered();
  if (job_totals_.last_ended_unix_seconds) {
    if (everything) reply.jobs.last_job_id = last_job_id_;
    reply.jobs.last_ended_unix_seconds = job_totals_.last_ended_unix_seconds;
  }
  reply.access = everything ? "control" : "user";
  if (cluster_published_)
    reply.cluster = ClusterPublication{*cluster_published_, cluster_reference_};
  reply.trace = trace_status_;
  if (trace_) reply.culprits = last_culprits(snapshot->report);
  return reply;
}

json Daemon::results() { return ResultsReply{store_.get()->report}; }

json Daemon::pause(const PauseRequest& request) {
  set_paused(true, request.seconds);
  log_info(request.seconds ? "paused for " + fixed(*request.seconds, 6) + " s"
                           : std::string("paused until resumed"));
  return PauseReply{true, paused_until_};
}

json Daemon::resume() {
  if (paused_) log_info("resumed");
  set_paused(false, std::nullopt);
  return PauseReply{false, std::nullopt};
}

void Daemon::run(const RunRequest& request, Reply reply) {
  RoundRequest round;
  round.modes = request.modes;
  if (request.wait) round.replies.push_back(std::move(reply));
  const double delay = request.at_unix_seconds ? *request.at_unix_seconds - unix_seconds_now() : 0;
  if (!request.wait) {
    reply(ScheduledReply{unix_seconds_now() + std::max(delay, 0.0)});
  }
  if (delay <= 0) {
    enqueue(std::move(round));
    return;
  }
  // A synchronized trigger: all nodes start at the same wall-clock instant.
  auto timer = std::make_shared<boost::asio::steady_timer>(io_);
  timer->expires_after(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(Seconds(delay)));
  timer->async_wait(
      [this, timer, round = std::move(round)](const boost::system::error_code& ec) mutable {
        if (ec || stopping_) {
          for (auto& r : round.replies) r({{"ok", false}, {"error", "the daemon is stopping"}});
          return;
        }
        enqueue(std::move(round));
      });
}

json Daemon::publish(const PublishRequest& request) {
  cluster_slowdown_.clear();
  for (const ClusterSlowdown& s : request.slowdowns) {
    cluster_slowdown_[{s.cpu, s.probe, s.mode}] = s.ratio;
  }
  cluster_published_ = request.published_unix_seconds;
  cluster_reference_ = request.reference;
  publish_snapshot();
  return PublishReply{request.slowdowns.size()};
}

json Daemon::job(const JobRequest& request, const std::optional<PeerCredentials>& peer) {
  // All or nothing: a report naming a CPU this node lacks was meant for
  // another node, and none of it counts. This also bounds the series a
  // report can create to the node's own CPUs.
  for (const JobCpuLoss& loss : request.cpus) {
    if (topology_.find(loss.cpu) == nullptr) {
      std::vector<unsigned> cpus;
      for (const auto& pu : topology_.pus()) cpus.push_back(pu.cpu);
      return refuse_job(JobRefusal::invalid,
                        "job: cpu " + std::to_string(loss.cpu) +
                            " is not a CPU of this node (it has " + format_cpu_list(cpus) + ")",
                        peer);
    }
  }
  const JobAdmissionVerdict verdict = job_admission_.admit(peer, request, admission_time());
  if (verdict.refusal) return refuse_job(*verdict.refusal, verdict.error, peer);
  const double lost = job_totals_.add(request);
  // The scheduler's id where the kernel's cgroups said which Slurm job
  // the rank ran in; else the rank's own word.
  last_job_id_ = verdict.scheduler_job_id.value_or(request.job_id);
  publish_snapshot_soon();
  // Debug, not info: one line per job on every node is the metrics' job,
  // not the log's.
  log_debug("job '" + last_job_id_ + "'" +
            (verdict.scheduler_job_id ? " (Slurm's, from the rank's cgroup)" : "") + " (" +
            std::to_string(request.ranks) + " ranks, " + fixed(request.elapsed_seconds, 6) +
            " s) from process " + std::to_string(peer->pid) + " (uid " + std::to_string(peer->uid) +
            ") lost " + fixed(lost, 6) + " CPU-seconds on " + std::to_string(request.cpus.size()) +
            " CPUs of this node");
  return JobReply{request.cpus.size()};
}

json Daemon::job_live(const JobLiveRequest& request, const std::optional<PeerCredentials>& peer) {
  const JobAdmissionVerdict verdict = job_admission_.admit_live(peer, request, admission_time());
  if (verdict.refusal) return refuse_job(*verdict.refusal, verdict.error, peer);
  publish_snapshot_soon();
  return {{"ok", true}};
}

json Daemon::job_start(const JobStartRequest& request, const std::optional<PeerCredentials>& peer) {
  const JobAdmissionVerdict verdict = job_admission_.start(peer, request, admission_time());
  if (verdict.refusal) return refuse_job(*verdict.refusal, verdict.error, peer);
  // Recorded from its job-start; the timer's walk follows the exits.
  if (job_tracer_) {
    TracedJob rank = job_admission_.registered_rank(peer->pid);
    if (foreign_pids_) rank.commands = thread_commands(config_.probe.proc_root, peer->pid);
    job_tracer_->watch(rank);
  }
  return {{"ok", true}};
}

json Daemon::job_culprits(const JobCulpritsRequest& request,
                          const std::optional<PeerCredentials>& peer) {
  const JobAdmissionVerdict verdict =
      job_admission_.admit_question(peer, request.job_id, admission_time());
  if (verdict.refusal) return refuse_job(*verdict.refusal, verdict.error, peer);
  JobCulpritsReply reply{trace_status_, {}};
  if (!job_tracer_) {
    if (trace_) reply.trace = "unavailable: the running jobs' CPUs could not be traced";
    return reply;
  }
  const auto charges = job_tracer_->charges(peer->uid, request.job_id);
  if (!charges) {
    reply.trace = "busy";
    return reply;
  }
  // Each CPU's largest: a reply for every CPU of a big node stays small.
  constexpr std::size_t kRepliedPerCpu = 16;
  for (const TracedCpu& c : *charges) {
    JobTracedCpu cpu{c.cpu, c.seconds, {}, c.other_seconds, c.overran};
    for (const trace::Culprit& x : c.culprits) {
      if (cpu.culprits.size() == kRepliedPerCpu) {
        cpu.other_seconds += x.seconds;
        continue;
      }
      cpu.culprits.push_back(
          {trace::kind_name(x.kind), x.name, x.id, trace::describe(x), x.seconds});
    }
    reply.cpus.push_back(std::move(cpu));
  }
  return reply;
}

void Daemon::job_malformed(std::string_view error, const std::optional<PeerCredentials>& peer) {
  refuse_job(JobRefusal::invalid, std::string(error), peer);
}

json Daemon::refuse_job(JobRefusal reason, const std::string& error,
                        const std::optional<PeerCredentials>& peer) {
  store_.live().count_job_refusal(reason);
  // At debug, as the exporter logs the clients it turns away: any local
  // user who can connect may send refused reports, as many as they like,
  // and corenoise_job_reports_refused_total is where they show. The reason
  // once: admission's errors already start with it.
  const std::string label(to_string(reason));
  std::string_view detail = error;
  if (const std::string prefix = "job: refused (" + label + "): "; detail.starts_with(prefix)) {
    detail.remove_prefix(prefix.size());
  }
  log_debug(
      "refused a job report (" + label + ") from " +
      (peer ? "process " + std::to_string(peer->pid) + " (uid " + std::to_string(peer->uid) + ")"
            : std::string("a sender without credentials")) +
      ": " + std::string(detail));
  return {{"ok", false}, {"error", error}};
}

void Daemon::calibrate(Reply reply) {
  RoundRequest round;
  round.modes = {Mode::isolated, Mode::concurrent};
  round.calibrate = true;
  round.replies.push_back(std::move(reply));
  enqueue(std::move(round));
}

void Daemon::reload() {
  notifier_.notify("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(monotonic_microseconds()));
  try {
    DaemonConfig fresh = load_config(args_);
    if (fresh.listen != config_.listen || fresh.socket_path != config_.socket_path ||
        fresh.user_socket != config_.user_socket ||
        fresh.job_limits.ranks_per_user != config_.job_limits.ranks_per_user ||
        fresh.topology != config_.topology) {
      log_warning(
          "listen, socket, user-socket, max-job-ranks-per-user and topology changes take effect "
          "on restart");
      fresh.listen = config_.listen;
      fresh.socket_path = config_.socket_path;
      fresh.user_socket = config_.user_socket;
      fresh.job_limits = config_.job_limits;
      fresh.topology = config_.topology;
    }
    Runner(fresh.probe, topology_);  // validates the settings against this CPU
    if (running_) {
      // The round thread uses the current runner until it posts back.
      log_info("configuration accepted; it applies after the round in progress");
      pending_config_ = std::move(fresh);
    } else {
      apply_config(std::move(fresh));
    }
  } catch (const std::exception& e) {
    log_error(std::string("reload rejected, the old configuration stays in force: ") + e.what());
  }
  notifier_.notify("READY=1");
}

void Daemon::apply_config(DaemonConfig fresh) {
  config_ = std::move(fresh);
  set_log_level(config_.log_level);
  if (exporter_) exporter_->set_web_config(config_.web_config);  // for connections from now on
  rebuild_runner();
  // The verdicts so far stay: a reload is no evidence about any core.
  for (auto& [cpu, history] : history_) history.resize(config_.persistence.rounds);
  publish_snapshot();  // a new persist-bad applies to the verdicts shown now
  if (!paused_) {
    round_timer_.cancel();
    schedule_next_round();
  }
  log_info("configuration reloaded from " + config_.config_path);
}

void Daemon::shut_down() {
  if (stopping_) return;
  stopping_ = true;
  notifier_.notify("STOPPING=1");
  log_info("stopping");
  cancel_ = true;
  round_timer_.cancel();
  pause_timer_.cancel();
  watchdog_timer_.cancel();
  signals_.cancel();
  if (control_) control_->stop();
  if (user_control_) user_control_->stop();
  snapshot_timer_.cancel();
  ranks_timer_.cancel();
  const auto t0 = std::chrono::steady_clock::now();
  if (round_thread_.joinable()) round_thread_.join();
  log_debug("round thread joined in " +
            std::to_string(Seconds(std::chrono::steady_clock::now() - t0).count()) + " s");
  for (auto& request : queue_) {
    for (auto& r : request.replies) r({{"ok", false}, {"error", "the daemon is stopping"}});
  }
  queue_.clear();
  // main() ends with _exit: the traces' destructors would not run.
  job_tracer_.reset();  // its thread joined, its instance removed
  if (trace_) trace_->release();
  // Scrapes in flight are dropped with the loop. main() leaves with
  // _exit() once the loop returns; everything that must outlive us (the
  // calibration file, the socket's removal) is already done.
  io_.stop();
}

}  // namespace corenoise
