// corenoised's event loop: one Boost.Asio io_context thread owns all state
// (timers, signals, the control socket, the exporter's HTTP connections,
// systemd notification); rounds run on a separate thread, which posts its
// results back; the exporter's bcrypt thread checks new passwords only.
//
// Lifecycle: construct (validates and loads calibration), start() (binds the
// exporter and the socket — errors throw with the address or path — then
// READY=1), io_context::run() until SIGTERM/SIGINT (STOPPING=1, the round in
// progress is cancelled and joined, the socket removed, within a second).
#pragma once

#include <atomic>
#include <boost/asio.hpp>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "daemon/busy_cpus.h"
#include "daemon/calibration_store.h"
#include "daemon/config.h"
#include "daemon/control/control_replies.h"
#include "daemon/control_handler.h"
#include "daemon/job_admission.h"
#include "daemon/persistence.h"
#include "daemon/sd_notify.h"
#include "daemon/snapshot.h"
#include "probe/runner.h"

namespace corenoise {

class ControlServer;
class Exporter;

class Daemon : public ControlHandler {
 public:
  // `args` are the command-line options, kept so that SIGHUP can re-read the
  // config file and apply them again on top.
  Daemon(boost::asio::io_context& io, DaemonConfig config, std::vector<std::string> args);
  ~Daemon() override;

  void start();

  // ControlHandler: called on the event-loop thread.
  nlohmann::json status(bool everything) override;
  nlohmann::json results() override;
  nlohmann::json pause(const PauseRequest& request) override;
  nlohmann::json resume() override;
  void run(const RunRequest& request, Reply reply) override;
  nlohmann::json publish(const PublishRequest& request) override;
  void calibrate(Reply reply) override;
  nlohmann::json job_start(const JobStartRequest& request,
                           const std::optional<PeerCredentials>& peer) override;
  nlohmann::json job_culprits(const JobCulpritsRequest& request,
                              const std::optional<PeerCredentials>& peer) override;
  nlohmann::json job_live(const JobLiveRequest& request,
                          const std::optional<PeerCredentials>& peer) override;
  nlohmann::json job(const JobRequest& request,
                     const std::optional<PeerCredentials>& peer) override;
  void job_malformed(std::string_view error, const std::optional<PeerCredentials>& peer) override;

 private:
  // A round asked for by the schedule, `run` or `calibrate`.
  struct RoundRequest {
    std::vector<Mode> modes;
    bool calibrate = false;
    bool scheduled = false;  // by the timer (skipped while paused)
    std::vector<Reply> replies;
  };

  void schedule_next_round();
  void enqueue(RoundRequest request);
  void start_next_request();
  // The watched CPUs the next round probes; each one it cannot (offline,
  // outside the affinity, busy) goes to `skipped` with why.
  std::vector<unsigned> cpus_to_probe(std::map<unsigned, Cause>& skipped);
  // Starts running_'s round on its own thread; finish_round() takes it back.
  void launch_round(const std::vector<unsigned>& cpus, std::map<unsigned, Cause> skipped);
  void finish_round(std::vector<RoundSamples> rounds, std::map<unsigned, Cause> skipped,
                    std::map<unsigned, CpuSysInfo> sys_before);
  // A round's modes judged, counted, calibrated and kept as the latest;
  // what each mode's round was, for the reply.
  std::vector<RoundDone> take_rounds(const std::vector<RoundSamples>& rounds,
                                     const std::map<unsigned, Cause>& skipped,
                                     const std::map<unsigned, CpuSysInfo>& sys_before,
                                     const std::map<unsigned, CpuSysInfo>& sys_after,
                                     bool calibrate);
  // The round's count, times and (if it overran) the warning.
  void note_round_timing(const RoundSamples& round);
  void apply_sys_verdicts(ModeReport& mode, const std::map<unsigned, CpuSysInfo>& before,
                          const std::map<unsigned, CpuSysInfo>& after) const;
  void publish_snapshot();
  // publish_snapshot() now if the last was a second ago or more, else once
  // that second is up: taken job lines come in floods (a node's ranks at a
  // job's end), and each would otherwise rebuild the snapshot and the
  // exporter's rendered text. (Refused lines make no snapshot at all:
  // LiveCounters.)
  void publish_snapshot_soon();
  // Every 30 s (every second while the jobs are traced): drops the job
  // registrations of ranks that exited (and their pidfds), and has the
  // job tracer follow the jobs still running.
  void forget_exited_ranks();
  // Opens or closes the job tracer with the rounds' tracing (trace_).
  void rebuild_job_tracer();
  // The running jobs for the job tracer: admission's, with their ranks'
  // threads' commands where the trace's thread ids are not ours.
  std::vector<TracedJob> traced_jobs() const;
  void reload();
  void apply_config(DaemonConfig fresh);
  void update_calibration(const ModeReport& report, bool recalibrate);
  void wait_for_signal();
  void shut_down();
  void set_paused(bool paused, std::optional<double> seconds);
  void arm_watchdog();
  // `starting`: a trace that `trace = on` asks for and cannot have stops
  // the start; on a reload it is logged and the rounds go on untraced.
  void rebuild_runner(bool starting = false);
  // Adds each PU's overall verdict over `reports` (one round's modes) to
  // its history.
  void record_round(const std::vector<ModeReport>& reports);
  // PUs per persistent state, and those unhealthy or transient, for the
  // replies to `status` and `run`.
  CpuStates cpu_states() const;
  std::map<unsigned, CpuSysInfo> read_sys() const;
  // Why `cpu` cannot be probed this round (offline, outside the daemon's
  // affinity), or nullopt; checked before every round, so a CPU that leaves
  // is skipped with that cause and comes back when it returns.
  std::optional<std::string> unavailable(unsigned cpu, const std::vector<unsigned>& affinity) const;
  // Counts and logs a refused job report from `peer`; returns the reply
  // with `error`.
  nlohmann::json refuse_job(JobRefusal reason, const std::string& error,
                            const std::optional<PeerCredentials>& peer);
  // The deadline of a round of `mode` over `cpus` CPUs (config or auto).
  double round_deadline(Mode mode, std::size_t cpus) const;

  boost::asio::io_context& io_;
  DaemonConfig config_;
  std::optional<DaemonConfig> pending_config_;  // a reload accepted during a round
  std::vector<std::string> args_;
  Topology topology_;
  std::unique_ptr<Runner> runner_;
  std::shared_ptr<trace::TraceSource> trace_;   // kept across reloads of the same mode
  std::optional<trace::TraceMode> trace_mode_;  // what trace_ was opened for
  std::string trace_status_ = "off";            // NodeReport::trace's words, for status
  std::vector<unsigned> traced_cpus_;           // what trace_ was opened for
  // The running jobs' CPUs, recorded while trace_ is open (job_tracer.h).
  std::unique_ptr<JobTracer> job_tracer_;
  bool warned_blind_ = false;  // logged that a rank's /proc could not be read
  bool foreign_pids_ = false;  // in a PID namespace of its own (JobTracer's foreign_pids)
  bool started_ = false;       // start() ran: threads get the housekeeping affinity
  SnapshotStore store_;
  CalibrationStore calibration_store_;
  std::optional<Calibration> calibration_;
  SystemdNotifier notifier_;
  std::unique_ptr<Exporter> exporter_;
  std::unique_ptr<ControlServer> control_;
  std::unique_ptr<ControlServer> user_control_;  // the user socket; null with user-socket off

  boost::asio::steady_timer round_timer_;
  boost::asio::steady_timer pause_timer_;
  boost::asio::steady_timer watchdog_timer_;
  boost::asio::steady_timer snapshot_timer_;  // a publish_snapshot_soon() waiting
  boost::asio::steady_timer ranks_timer_;     // forget_exited_ranks()
  std::chrono::steady_clock::time_point last_snapshot_{};
  boost::asio::signal_set signals_;
  std::mt19937_64 random_;

  std::deque<RoundRequest> queue_;
  std::optional<RoundRequest> running_;
  std::thread round_thread_;
  std::atomic<bool> cancel_{false};
  std::uint64_t scheduled_rounds_ = 0;
  bool stopping_ = false;
  bool paused_ = false;
  std::optional<double> paused_until_;
  std::optional<double> next_round_unix_seconds_;
  std::map<unsigned, CpuTimes> idle_reference_;  // /proc/stat at the end of the last round
  std::map<unsigned, std::string> unavailable_;  // as of the last round, to log changes once
  // Per mode, the last round that kept its deadline: (seconds, CPUs probed).
  std::map<Mode, std::pair<double, std::size_t>> last_full_round_;
  // The calibration in memory differs from the file (a save failed: a full
  // or read-only state directory); every round tries again.
  bool calibration_unsaved_ = false;
  std::map<unsigned, CpuSysInfo> last_sys_;
  std::map<Mode, ModeReport> latest_;
  // By cpu: the overall verdicts of its last persist-rounds measured rounds.
  std::map<unsigned, VerdictHistory> history_;
  std::map<Mode, RoundStats> round_stats_;
  std::map<unsigned, CpuCounterTotals> totals_;
  std::map<ProbeKey, double> cluster_slowdown_;
  std::optional<double> cluster_published_;
  nlohmann::json cluster_reference_;
  JobTotals job_totals_;
  KernelProcessFacts process_facts_;
  JobAdmission job_admission_;  // which ranks are running, which may report, and who did
  std::string last_job_id_;     // of the latest job report, for `status`
  double started_unix_seconds_ = 0;
};

}  // namespace corenoise
