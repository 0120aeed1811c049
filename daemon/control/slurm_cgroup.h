// Where Slurm keeps a job's processes, as a line of /proc/PID/cgroup names
// it. Slurm puts every task of job N in a cgroup of its own, created and
// owned by root, that the job's user cannot leave:
//   cgroup v2 (Slurm's cgroup/v2 plugin, Debian 12's default hierarchy):
//     0::/system.slice/slurmstepd.scope/job_N/step_S/user/task_T
//   cgroup v1 (cgroup/v1, its cpuset and freezer hierarchies):
//     K:cpuset:/slurm/uid_U/job_N/step_S/task_T, or /slurm_NODE/uid_U/...
//     where slurmd was built for several on a host (Debian 12's Slurm
//     22.05: K:cpuset:/slurm_HOST/uid_U/job_N/step_S, tasks in the step)
// A rank names its line in `job-start`; corenoised believes it only once
// the kernel's cgroup.procs of that cgroup lists the sender (daemon/
// slurm_job.h), and then the job id is the scheduler's, not the rank's word.
//
// Shared by the in-job library (which finds its line) and the daemon
// (which parses what a rank sent); pure text, no file is read here but in
// slurm_cgroup_of_this_process().
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace corenoise {

// The longest line a rank may send: the kernel's PATH_MAX.
inline constexpr std::size_t kMaxCgroupLineChars = 4096;

struct SlurmCgroup {
  // The hierarchy: empty for cgroup v2's unified line ("0::"), else v1's
  // controllers as the kernel lists them ("cpuset", "freezer").
  std::string hierarchy;
  std::string path;          // from the hierarchy's root: "/system.slice/.../task_0"
  std::string job_path;      // its ancestor that is the job's: "/system.slice/.../job_42"
  std::string job_id;        // "42"
  std::optional<uid_t> uid;  // v1's uid_U; v2 names no user
};

// The Slurm job cgroup a /proc/PID/cgroup line names; nullopt if the line
// is malformed (not "ID:CONTROLLERS:/PATH", a path component empty, "." or
// "..", a character outside printable ASCII, longer than
// kMaxCgroupLineChars) or names no cgroup of Slurm's layouts above.
std::optional<SlurmCgroup> parse_slurm_cgroup(std::string_view line);

// This process's line of /proc/self/cgroup that names a Slurm job (the v2
// line first), or "" where none does (not under Slurm, or Slurm without a
// cgroup plugin).
std::string slurm_cgroup_of_this_process();

}  // namespace corenoise
