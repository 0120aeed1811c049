// The in-job library's two exchanges with the node's corenoised over its
// control socket (docs/control.md): its latest verdicts for the node's
// CPUs, joined into the report, and, at the job's end, the node's per-CPU
// loss by cause (the `job` command), which it exports as
// corenoise_job_lost_seconds_total. Both are best effort: a node without a
// daemon, or one that does not answer in a second, costs the job nothing
// but that second.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/control/control_requests.h"

namespace corenoise {

// {"<cpu>": {"state": "noisy", "cause": "...", "age_seconds": 12}, ...}
// from the daemon's `results`; null where none answered.
nlohmann::json daemon_verdicts(const std::string& socket_path);
// The `results` document's verdicts as above (pure; for tests).
nlohmann::json verdicts_from_results(const nlohmann::json& results, double now_unix_seconds);

// The `job` request for one node's loss (the protocol's own encoding,
// daemon/control/control_protocol.h), each figure capped at elapsed_seconds and
// rounded down to the microsecond.
nlohmann::json job_request(const std::string& job_id, double ended_unix_seconds,
                           double elapsed_seconds, int ranks, const std::vector<JobCpuLoss>& loss);
// Sends it; the daemon's error or the reason it was not reached, empty
// when accepted.
std::string send_job_loss(const std::string& socket_path, const nlohmann::json& request);

// The launcher's id for this job (SLURM_JOB_ID, PMIX_NAMESPACE,
// OMPI_MCA_orte_ess_jobid, PMI_JOBID), else "pid-<pid of rank 0>".
std::string job_id(long rank0_pid);

}  // namespace corenoise
