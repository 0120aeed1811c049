// The in-job library's exchanges with the node's corenoised over its user
// socket (docs/control.md; the control socket where there is none): each
// rank's job-start at MPI_Init, the daemon's latest verdicts for the
// node's CPUs, joined into the report, and, at the job's end, each rank's
// own per-CPU loss by cause (the `job` command), which it exports as
// corenoise_job_lost_seconds_total. All are best effort: a node without a
// daemon, or one that does not answer in a second, costs the job nothing
// but that second.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "collector/job/model/rank_record.h"
#include "daemon/control/control_requests.h"

namespace corenoise {

// Where a job's ranks talk to the daemon whose control socket is
// `socket_path`: the user socket beside it where it exists (every user may
// connect), else the control socket itself; empty if neither exists.
std::string job_socket(const std::string& socket_path);

// The daemon's verdict on each of the node's CPUs, from its `results`
// reply (a ResultsReply): each CPU's overall state, its cause, and the age
// of the latest round; nullopt where no daemon answered, or its reply was
// not a results document.
std::optional<std::map<unsigned, DaemonVerdict>> daemon_verdicts(const std::string& socket_path);
// The same from a `results` reply already read (pure; for tests).
std::optional<std::map<unsigned, DaemonVerdict>> verdicts_from_results(
    const nlohmann::json& results, double now_unix_seconds);

// What else ran on this job's CPUs of the node since it began there, as
// its corenoised's tracer saw it (`job-culprits`, docs/control.md): each
// CPU's five largest culprits of at least 0.1 % of its recorded time, the
// tasks of one command as one; the node's 64 largest of those.
// Empty where no daemon answered, or it does not trace.
std::vector<RankRecord::TracedCulprit> daemon_traced_culprits(const std::string& socket_path,
                                                              const std::string& job_id);
// The same from a `job-culprits` reply already read (pure; for tests).
std::vector<RankRecord::TracedCulprit> traced_from_reply(const nlohmann::json& reply);

// The `job` request for one node's loss (the protocol's own encoding,
// daemon/control/control_protocol.h), each figure capped at elapsed_seconds and
// rounded down to the microsecond.
nlohmann::json job_request(const std::string& job_id, double ended_unix_seconds,
                           double elapsed_seconds, int ranks, const std::vector<JobCpuLoss>& loss);
// The `job-live` request for one rank's figures at a live epoch, each
// brought within the daemon's bounds (waiting caused capped at what the
// other ranks can have waited, rounded down to the microsecond).
nlohmann::json job_live_request(JobLiveRequest live);
// Sends `request` (a job-start, a job-live or a job) to job_socket(socket_path); the
// daemon's error or the reason it was not reached, empty when accepted. A
// connection the daemon turns away as one too many (a node's ranks all
// sending at once) is tried again, at random intervals, for up to a
// second, unless `retry` is false (a live epoch's line, sent inside the
// program's MPI call: the next epoch's replaces a line lost).
std::string send_job_line(const std::string& socket_path, const nlohmann::json& request,
                          bool retry = true);
// The job-start request for `job_id`, with the Slurm job cgroup this
// process runs in, if any (daemon/control/slurm_cgroup.h).
nlohmann::json job_start_request(const std::string& job_id);

// The launcher's id for this job (SLURM_JOB_ID, PMIX_NAMESPACE,
// OMPI_MCA_orte_ess_jobid, PMI_JOBID), Hydra's proxy under MPICH's
// mpiexec ("hydra-<its pid>", shared by the node's ranks of one job), else
// "pid-<pid>": a rank passes its own, the same at its job-start and at its
// report.
std::string job_id(long pid);

}  // namespace corenoise
